// The SO-101 in 3D inside chapters 3 and 4's page panels, posed by the run that draws the panel's plots.
//
// A chapter's panel makes one ArmView under its plots (a button) and hands it every finished run (setRun). Nothing
// heavy comes before the reader asks: the button alone is here; pressing it brings MuJoCo if the panel is not live yet
// (the poses are MuJoCo's), then three.js and the arm's meshes (../physai-arm3d.js, which fetches ../three/ and
// ../arm3d/). No second simulation: the view takes the run's joint angles (run.q) and asks the page's one engine for
// the bodies' poses at them (MuJoCo's mj_kinematics on the panel's own model, into an MjData of the view's own, so a
// run in progress keeps its state), then poses three.js's bodies at MuJoCo's xpos and xquat (physai-arm3d.js).
//
//   hold    chapter 3: the move and hold of the PD placement the panel runs, the placement switchable from the view,
//           the error from the command magnifiable (qpos = command + factor (q - command), posed by MuJoCo), slowed
//           down if asked; a cursor on the hold's trace follows the view's time
//   replay  chapter 4: the replay (solid) against the recording (a translucent ghost), scrubbable; the overlay's
//           cursor and the view's time follow each other (drag on the trace to scrub). The ghost's gripper is the
//           simulated one: the page carries the recording's five arm joints, which the traces compare.
//
// In a Jupyter widget (the panel's `kernel`, widget.js) there is no engine in the page: the kernel sends the view's
// module (three.js and physai-arm3d.js, bundled: physai.book.widget_bundle) and the arm's meshes when the reader
// opens the view, and the poses of each run (Python MuJoCo's mj_kinematics), with its `call`: chapter 3's hold
// (where_pd_runs_panels.hold_poses), chapter 4's replay and its recording (servo_sysid_panels.replay_poses).

import {el} from './figures.js';
import {engineSize} from './ui.js';

// the view's module and the arm's meshes, next to this module: computed when the view opens (not at load, when a module
// loaded from a blob: address, the notebook widget's bundle, has no base to resolve them against)
const siteFile = (path) => new URL(path, import.meta.url).href;
const QUIET_MS = 250;   // the panel quiet this long after a run: the view takes it (setRun)
const MAX_FRAMES = 750;   // a hold is 3 s at 1 ms or finer: the clip keeps every stride-th step (4 ms at 1 ms)
const MAGNIFY = [1, 10, 30, 100];
const SPEEDS = [[1, 'real time'], [0.25, '¼ speed'], [0.1, '1/10 speed']];
export const NO_WEBGL = '3D view unavailable: this browser has no WebGL 2; the plots above are the whole panel.';
export const NO_ENGINE = '3D view unavailable: it is posed by MuJoCo in this page, which needs WebAssembly.';

const STYLE = `
.physai-panel .pl-arm3d{flex:1 1 100%;min-width:0;font-size:13px}
.physai-panel .pl-arm3d-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px}
.physai-panel .pl-arm3d-head select{font:inherit}
.physai-panel .pl-arm3d-why{font-style:italic}
.physai-panel-present .pl-plots .pl-arm3d.pl-present-aside{display:flex;flex-direction:column;min-height:0;overflow:hidden}
.physai-panel-present .pl-plots .pl-arm3d:not([data-arm3d=open]){flex:1 1 100%;font-size:calc(13px * var(--pl-scale, 1))}
.physai-panel-present .pl-arm3d.pl-present-aside .pl-arm3d-stage{flex:1 1 0;min-height:0}
.physai-panel-present .pl-arm3d.pl-present-aside .physai-arm3d{flex:1 1 0;min-height:0;display:flex;flex-direction:column;margin:0}
.physai-panel-present .pl-arm3d .physai-arm3d{font-size:calc(13px * var(--pl-scale, 1))}
.physai-panel-present .pl-arm3d.pl-present-aside .physai-arm3d-bar,.physai-panel-present .pl-present-aside .pl-arm3d-head{gap:2px 6px;margin-top:2px}
.physai-panel-present .pl-present-aside button,.physai-panel-present .pl-present-aside select{padding:1px 6px;min-height:calc(26px * var(--pl-scale, 1))}
`;

function injectStyle() {
  if (document.getElementById('physai-arm3d-panel-style')) return;
  const style = document.createElement('style');
  style.id = 'physai-arm3d-panel-style';
  style.textContent = STYLE;
  document.head.append(style);
}

function node(tag, className, parent, text) {
  const n = document.createElement(tag);
  if (className) n.className = className;
  if (text !== undefined) n.textContent = text;
  if (parent) parent.appendChild(n);
  return n;
}

function select(parent, label, options, value, onChange) {
  const wrap = node('label', '', parent, `${label} `);
  const s = node('select', '', wrap);
  for (const [v, text] of options) {
    const o = node('option', '', s, text);
    o.value = String(v);
  }
  s.value = String(value);
  s.addEventListener('change', () => onChange(Number(s.value)));
  return s;
}

// MuJoCo's body poses at each of `nframe` joint vectors (qpos(i) -> nq numbers): mj_kinematics on the engine's model
// (engine.js Model) into a data of the view's own. Returns {xpos: nframe*nbody*3, xquat: nframe*nbody*4}.
const scratch = new WeakMap();
export function bodyPoses(engine, nframe, qpos) {
  const {mujoco, model} = engine;
  if (!scratch.has(engine)) scratch.set(engine, new mujoco.MjData(model));
  const data = scratch.get(engine), nq = model.nq, nbody = model.nbody;
  const xpos = new Float64Array(nframe * nbody * 3), xquat = new Float64Array(nframe * nbody * 4);
  for (let i = 0; i < nframe; i++) {
    const q = qpos(i), target = data.qpos;
    for (let j = 0; j < nq; j++) target[j] = q[j];
    mujoco.mj_kinematics(model, data);
    xpos.set(data.xpos, i * nbody * 3);
    xquat.set(data.xquat, i * nbody * 4);
  }
  return {xpos, xquat, nbody};
}

const cursors = new WeakMap();   // plot -> its cursor line (ArmView.cursor)

// The view's module and the decoded arm, from a widget's kernel (once per kernel): the module's text imported from a
// blob: address (anywidget's own way of loading a module), the meshes decoded from the buffer the kernel sent.
const kernelArms = new WeakMap();
function kernelArm(kernel) {
  if (!kernelArms.has(kernel)) {
    const load = (async () => {
      const {content, buffers} = await kernel.call({kind: 'arm3d-assets'});
      if (content.error) throw new Error(content.error);
      const url = URL.createObjectURL(new Blob([buffers[0]], {type: 'text/javascript'}));
      try {
        const module = await import(url);
        return {Arm3D: module.Arm3D, arm: module.decodeArm(content.description, arrayBuffer(buffers[1]))};
      } finally {
        URL.revokeObjectURL(url);
      }
    })();
    load.catch(() => kernelArms.delete(kernel));   // a failed load may be tried again
    kernelArms.set(kernel, load);
  }
  return kernelArms.get(kernel);
}

// a buffer of a kernel's message (a DataView) as an ArrayBuffer of its own: typed arrays over it start aligned
const arrayBuffer = (view) => view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength);

export class ArmView {
  // panel: the chapter's Panel (ui.js); container: where the view goes (the panel's plots); kind: 'hold' or 'replay';
  // plots: the plots whose time axis is the view's (a cursor is drawn on them)
  constructor(panel, container, kind, plots = []) {
    injectStyle();
    this.panel = panel;
    this.kind = kind;
    this.plots = plots;
    this.magnify = 1;
    this.speed = kind === 'hold' ? 0.25 : 1;
    this.record = null;
    this.view = null;
    this.root = node('div', 'pl-arm3d', container);
    this.root.dataset.arm3d = 'closed';
    this.head = node('div', 'pl-arm3d-head', this.root);
    this.openButton = node('button', '', this.head);
    this.openButton.type = 'button';
    this.label();
    this.openButton.title = 'three.js and the arm\'s meshes load when you press this';
    this.openButton.addEventListener('click', () => (this.view ? this.close() : this.open()));
    this.why = node('span', 'pl-arm3d-why', this.head);
    this.stage = node('div', 'pl-arm3d-stage', this.root);
    const reason = this.unavailable();
    if (reason) this.say(reason);
    for (const plot of plots) this.scrubOn(plot);
  }

  // the button, with what pressing it downloads: three.js and the arm (measured when the site was built,
  // window.physaiArm3dSize), and MuJoCo too while the panel is not live yet
  label() {
    if (this.view) return;
    const size = typeof window === 'object' ? window.physaiArm3dSize : undefined;
    let text = '▶ show the arm in 3D';
    if (size) {
      const engine = this.panel.mode === 'live' || !this.panel.live ? null : engineSize(this.panel.live);
      const mb = size.compressedMegabytes + (engine ? engine.compressedMegabytes : 0);
      text += ` (${mb.toFixed(1)} MB download${engine ? ', with MuJoCo' : ''})`;
    }
    this.openButton.textContent = text;
  }

  // the panel drew its plots again (the present view, a resize): the view goes under the new plots, as it was (open
  // or not), its cursor on the new plots
  attach(container, plots) {
    container.appendChild(this.root);
    this.plots = plots;
    for (const plot of plots) this.scrubOn(plot);
    if (this.view) {
      this.view._resize();
      this.view.requestRender();
      this.cursor(this.view.time);
    }
    return this;
  }

  // what the panel shows beside its plots in the present view: the open view, with the plots it names (null: all)
  presentAside(plots = null) {
    return this.view ? {element: this.root, plots} : null;
  }

  // the panel lays out again around the view (opened or closed in the present view)
  relayout() {
    if (this.panel.present) this.panel.redrawPlots();
  }

  // why the view cannot open here, or null
  unavailable() {
    if (typeof WebGL2RenderingContext === 'undefined') return NO_WEBGL;
    if (this.panel.kernel) return null;
    if (!this.panel.canGoLive()) return NO_ENGINE;
    return null;
  }

  say(reason) {
    this.openButton.disabled = true;
    this.why.textContent = reason;
    this.root.dataset.arm3d = 'unavailable';
  }

  // the panel's hook: a run finished (holdRun's or replayRun's record). The view takes it once the panel has been
  // quiet for QUIET_MS (no run since): while a reader drags a slider, runs follow each other and the view holds
  // still, so it takes no processor time from them; when the reader lets go it poses the last run and plays on.
  setRun(record) {
    this.record = record;
    this.label();   // the panel is live: MuJoCo is no longer part of the download
    this.settle();
  }

  // (in a widget the physics runs in the kernel: the page's processor is the view's while it runs)
  settle() {
    clearTimeout(this.showing);
    if (!this.view) return;
    this.showing = setTimeout(() => {
      if (!this.view || (!this.panel.kernel && this.panel.root.dataset.state === 'running')) return;
      const resume = this.resumeAfterRun;
      this.resumeAfterRun = false;
      this.show(resume);
    }, QUIET_MS);
  }

  // While the panel reruns MuJoCo (its data-state "running") the view holds still and draws nothing, so the run has
  // the processor (a browser that draws WebGL on the CPU spends tens of ms a frame); see setRun for when it goes on.
  followState() {
    if (this.stateWatch || this.panel.kernel) return;
    this.stateWatch = new MutationObserver(() => {
      const view = this.view;
      if (!view || this.panel.root.dataset.state !== 'running') return;
      clearTimeout(this.showing);
      if (view.playing) { this.resumeAfterRun = true; view.pause(); }
      view.cancelRender();
    });
    this.stateWatch.observe(this.panel.root, {attributes: true, attributeFilter: ['data-state']});
  }

  async open() {
    const reason = this.unavailable();
    if (reason) return this.say(reason);
    this.openButton.disabled = true;
    this.root.dataset.arm3d = 'loading';
    this.why.textContent = 'loading three.js and the arm…';
    try {
      let Arm3D, arm;
      if (this.panel.kernel) {
        ({Arm3D, arm} = await kernelArm(this.panel.kernel));
      } else {
        [{Arm3D}] = await Promise.all([import(siteFile('../physai-arm3d.js')), this.live()]);
        if (this.panel.mode !== 'live') throw new Error(this.panel.status.textContent);
      }
      const label = this.kind === 'replay' ? 'simulated (solid) and recorded (ghost)' : '';
      const view = await Arm3D.create(this.stage, {assetsUrl: arm ? null : siteFile('../arm3d/so101.json'), arm,
                                                   ghost: this.kind === 'replay', label,
                                                   height: () => this.height(),
                                                   onTime: (t) => this.cursor(t)});
      if (!view.available) { this.say(view.reason); return; }
      if (!this.panel.kernel && view.nbody !== this.panel.model.model.nbody) {
        throw new Error(`the arm's meshes have ${view.nbody} bodies, the page's model ${this.panel.model.model.nbody}`);
      }
      this.view = view;
      this.buildControls();
      this.followState();
      if (!this.resizing) {   // the present view changes the room without changing the stage's width
        this.resizing = new ResizeObserver(() => this.view?._resize());
        this.resizing.observe(this.root);
      }
      this.openButton.textContent = '✕ hide the 3D view';
      this.why.textContent = '';
      this.root.dataset.arm3d = 'open';
      if (this.record) this.show(); else this.why.textContent = 'waiting for MuJoCo\'s run…';
      this.relayout();
    } catch (error) {
      this.root.dataset.arm3d = 'failed';
      this.why.textContent = `3D view unavailable: ${error?.message || error}`;
      console.warn('physai 3D view:', error);
    } finally {
      this.openButton.disabled = false;
    }
  }

  // the panel running MuJoCo: started if it is not, waited for if it is starting
  async live() {
    if (this.panel.mode === 'first-view') await this.panel.goLive();
    while (this.panel.mode === 'loading') await new Promise((resolve) => setTimeout(resolve, 100));
  }

  // the canvas's height: beside the plots in the present view, the column's height less the view's bars; else 0.45 x
  // the width, in [220, 420]
  height() {
    if (!this.root.classList.contains('pl-present-aside')) {
      return Math.round(Math.min(420, Math.max(220, 0.45 * this.root.clientWidth)));
    }
    // the head, the view's bars under its stage, and their margins
    const bars = [this.head, ...(this.view?.element?.children ?? [])].filter((n) => !n.classList.contains('physai-arm3d-stage'));
    const others = bars.reduce((sum, n) => sum + n.offsetHeight + 4, 0);
    return Math.max(140, this.root.clientHeight - others - 4);
  }

  buildControls() {
    const bar = node('div', 'pl-arm3d-head', null);
    if (this.kind === 'hold') {
      const backend = this.panel.inputs.backend;
      if (backend) {
        this.switchButton = node('button', '', bar);
        this.switchButton.type = 'button';
        this.switchButton.addEventListener('click', () => {
          const input = backend.input, options = [...input.options].map((o) => o.value);
          input.value = options[(options.indexOf(input.value) + 1) % options.length];
          this.panel.onInput('backend');
        });
      }
      select(bar, 'error from the command ×', MAGNIFY.map((f) => [f, String(f)]), this.magnify,
             (f) => { this.magnify = f; this.show(); });
    }
    select(bar, 'play at', SPEEDS, this.speed, (s) => { this.speed = s; this.view.setRate(s); });
    this.view.element.append(bar);
    this.controlBar = bar;
  }

  // the run's clip, posed by MuJoCo, into the view (playing on if it was)
  show(resume = false) {
    if (this.panel.kernel) { this.showKernel(resume); return; }
    const r = this.record, view = this.view, engine = this.panel.model;
    const playing = !this.started || view.playing || resume, t = view.time;
    let clip;
    if (this.kind === 'hold') {
      const nq = engine.model.nq, stride = Math.ceil(r.steps / MAX_FRAMES), n = Math.floor((r.steps - 1) / stride) + 1;
      const f = this.magnify, q = new Float64Array(nq);
      const qpos = (i) => {
        const k = i * stride;
        for (let j = 0; j < nq; j++) {   // a diverged run's non-finite angles are drawn at the command
          const c = r.target[k * nq + j], x = r.q[k * nq + j];
          q[j] = Number.isFinite(x) ? c + f * (x - c) : c;
        }
        return q;
      };
      clip = {time: Float64Array.from({length: n}, (_, i) => r.h * (i * stride + 1)), ...bodyPoses(engine, n, qpos)};
      this.holdLabel(r);
    } else {
      const k = this.panel.constants, e = k.episode, nq = engine.model.nq, na = k.armJoints.length, n = r.frames;
      const q = new Float64Array(nq);
      const sim = (i) => r.q.subarray(i * nq, i * nq + nq);
      const real = (i) => {
        q.set(sim(i));
        for (let j = 0; j < na; j++) q[k.armIndex[j]] = e.stateDeg[i * na + j] * Math.PI / 180;
        return q;
      };
      const time = Float64Array.from({length: n}, (_, i) => i / e.fps);
      const solid = bodyPoses(engine, n, sim), ghost = bodyPoses(engine, n, real);
      clip = {time, xpos: solid.xpos, xquat: solid.xquat, ghost: {xpos: ghost.xpos, xquat: ghost.xquat}};
    }
    this.play(clip, r, playing, t);
  }

  // the hold's label on the view and the switch button's, for run `r` (its params: backend, rateHz; warned)
  holdLabel(r) {
    const f = this.magnify, where = this.panel.say('where', {backend: r.params.backend, rate: r.params.rateHz});
    const other = this.panel.inputs.backend && [...this.panel.inputs.backend.input.options]
      .find((o) => o.value !== r.params.backend);
    if (this.switchButton && other) this.switchButton.textContent = `switch to ${other.textContent}`;
    this.view.setLabel(`${where}${f === 1 ? '' : ` · error from the command ×${f}`}${r.warned ? ' · diverged' : ''}`);
  }

  // a clip into the view, at time t, playing if asked
  play(clip, r, playing, t) {
    const view = this.view;
    this.why.textContent = '';
    this.stage.style.visibility = '';
    view.setClip(clip, {rate: this.speed});
    this.shown = r;   // the run the view shows (a test waits until it is the panel's last, this.record)
    this.started = true;
    if (Number.isFinite(t)) view.seek(t);
    this.cursor(view.time);
    if (playing) view.play();
  }

  // In a widget: the run's poses from the kernel (the run at the record's values): a hold's magnified there, a
  // replay's with the recording's (the ghost's) after them; a newer run, a closed view or another magnification by
  // the time they come drops them
  async showKernel(resume) {
    const r = this.record, view = this.view, f = this.magnify;
    const playing = !this.started || view.playing || resume, t = view.time;
    const {content, buffers} = await this.panel.kernel.call({kind: 'arm3d-poses', values: r.values, magnify: f});
    if (this.record !== r || this.view !== view || this.magnify !== f) return;
    if (content.error) { this.why.textContent = `3D view: ${content.error}`; return; }
    if (content.nbody !== view.nbody) {
      this.why.textContent = `3D view: the arm's meshes have ${view.nbody} bodies, the kernel's model ${content.nbody}`;
      return;
    }
    if (!content.frames) {   // no run to play where the plot draws none (a chaotic replay): the note says why
      view.pause();
      this.stage.style.visibility = 'hidden';
      this.shown = r;
      this.cursor(NaN);
      this.why.textContent = content.note || '';
      return;
    }
    const [time, xpos, xquat, ghostXpos, ghostXquat] = buffers.map((b) => new Float64Array(arrayBuffer(b)));
    if (this.kind === 'hold') {
      this.holdLabel(r);
      this.play({time, xpos, xquat}, r, playing, t);
    } else {
      this.play({time, xpos, xquat, ghost: {xpos: ghostXpos, xquat: ghostXquat}}, r, playing, t);
    }
    if (content.note) this.why.textContent = content.note;   // e.g. where a replay that diverged ends
  }

  // the view's time on the plots: a thin vertical line, made once per plot and then only moved (its transform), so
  // that a browser repaints the line, not the plot's traces, at each of the view's frames (benchmarks/bench_arm3d.py)
  cursor(t) {
    for (const p of this.plots) {
      if (!this.view || !Number.isFinite(t)) {
        if (cursors.has(p)) p.layer('top-arm3d-cursor');
        cursors.delete(p);
        continue;
      }
      if (!cursors.has(p)) {
        cursors.set(p, el('line', {x1: 0, x2: 0, y1: p.m.t, y2: p.h - p.m.b, stroke: '#e377c2', 'stroke-width': 1.5,
                                   class: 'pl-arm3d-cursor'}, p.layer('top-arm3d-cursor')));
      }
      cursors.get(p).setAttribute('transform', `translate(${p.x(t)} 0)`);
    }
  }

  // drag on a plot's time axis to move the view there
  scrubOn(p) {
    const at = (event) => {
      const box = p.svg.getBoundingClientRect(), x = (event.clientX - box.left) / box.width * p.w;
      const [t0, t1] = p.x.lim;
      return t0 + (x - p.m.l) / (p.w - p.m.l - p.m.r) * (t1 - t0);
    };
    let dragging = false;
    const move = (event) => {
      if (!this.view || !this.record) return;
      this.view.pause();
      this.view.seek(at(event));
      this.cursor(this.view.time);
    };
    p.svg.addEventListener('pointerdown', (event) => {
      if (!this.view) return;
      dragging = true;
      p.svg.setPointerCapture?.(event.pointerId);
      move(event);
    });
    p.svg.addEventListener('pointermove', (event) => { if (dragging) move(event); });
    p.svg.addEventListener('pointerup', () => { dragging = false; });
  }

  close() {
    this.view?.dispose();
    this.view = null;
    this.controlBar = null;
    this.switchButton = null;
    this.started = false;
    this.resumeAfterRun = false;
    clearTimeout(this.showing);
    this.cursor(NaN);
    this.label();
    this.root.dataset.arm3d = 'closed';
    this.relayout();
  }
}
