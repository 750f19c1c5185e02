// Chapter 3's live panel: the SO-101 holding its standby pose, the PD in the control loop or in MuJoCo's step
// (physai.interface.web_arm writes its block; physai-live.js imports this module when a reader first touches the
// chapter's twin). The same controls, plots and words as the kernel's panel
// (physai.interface.where_pd_runs_panels.pd_panel).
//
// A hold is 3 s of a six-joint arm with friction loss: thousands of MuJoCo steps, tens of milliseconds in
// WebAssembly at 1 ms (hundreds with RK4 or a fine timestep). So a slider redraws the growth per tick (an equation)
// at once and the trajectory's first 5 ms of computing; the rest of the run goes in slices of about 20 ms, the page
// free between two, its partial trace redrawn at most every 100 ms (a redraw costs what a slice of MuJoCo does, and
// a short run is better finished than shown growing); the next slider move drops the run in progress. The discrete
// integrator (not in MuJoCo 3.3.8) shows what physai precomputed, labelled as such: chapter 3 an ensemble's verdict
// per rate and backend, chapter 4 the replay at the nearest kp.
import {LivePanel, Plot, el, nearestIndex} from './physai-live.js';
import * as arm from './physai-live-arm-core.js';
import {pyFormat, unpack} from './physai-live-core.js';

const KP_STEPS = 1000;
const RATE_STEPS = 400;
const SLICE_MS = 20;
const FIRST_SLICE_MS = 5;
const PROGRESS_MS = 100;

const CSS = `
.physai-live-panel.pl-arm .pl-plots svg.pl-step{flex:1.4 1 420px;max-width:600px}
.physai-live-panel.pl-arm .pl-plots svg.pl-bars{flex:0.8 1 260px;max-width:320px}
.physai-live-panel.pl-arm .pl-readout{white-space:pre-wrap}
.physai-live-present.pl-arm .pl-plots{grid-template-columns:60% 40%;grid-template-rows:1fr;height:calc(100vh - 11em)}
.physai-live-present.pl-arm .pl-plots svg.pl-step{grid-row:auto;max-width:none}
.physai-live-present.pl-sysid .pl-plots{grid-template-columns:50% 25% 25%}
.physai-live-present.pl-arm .pl-plots svg.pl-bars{max-width:none}
.physai-live-panel.pl-arm .pl-shade{fill:#eeeeee}
html[data-theme=dark] .physai-live-panel.pl-arm .pl-shade,
html[data-theme=dark] .physai-live-panel.pl-arm [fill="#eeeeee"]{fill:#2a2e33}
`;

function addArmStyle() {
  if (document.getElementById('physai-live-arm-style')) return;
  const style = document.createElement('style');
  style.id = 'physai-live-arm-style';
  style.textContent = CSS;
  document.head.appendChild(style);
}

// a task boundary: the page handles input and paints between two slices of a run
const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => resolve();
  channel.port2.postMessage(0);
});

const logSlider = ([lo, hi], steps) => ({
  toValue: (s) => lo * (hi / lo) ** (Number(s) / steps),
  fromValue: (v) => Math.round(Math.log(v / lo) / Math.log(hi / lo) * steps),
});

// The part both chapters' panels share: controls described once (a spec per control: its URL name, slider or
// choice, range), the page's address, reset, the present view, and a run that goes slice by slice.
class ArmLivePanel extends LivePanel {
  constructor(block, config, mujoco) {
    super();
    addArmStyle();
    this.block = block;
    this.config = config;
    this.colors = config.colors;
    this.mujoco = mujoco;
    this.version = mujoco.mj_versionString();
    this.latencies = [];           // slider input to the first redrawn picture, ms
    this.completeLatencies = [];   // slider input to the whole run drawn with its verdict, ms
    this.drawn = 0;
    this.generation = 0;
    this.specs = this.controlSpecs();
  }

  start() {
    this.values = {...this.fromDefaults(), ...this.fromTwin(), ...this.fromUrl()};
    this.build();
    this.update();
  }

  fromDefaults() {
    return {...this.config.defaults};
  }

  fromTwin() {
    return {};
  }

  // the page's address: ?KEY-NAME=VALUE for every control (timesteps in ms), KEY-present=1 for the present view
  fromUrl() {
    const q = new URLSearchParams(location.search);
    const k = this.config.key;
    const out = {};
    for (const spec of this.specs) {
      const text = q.get(`${k}-${spec.url}`);
      if (text === null) continue;
      if (spec.kind === 'choice') {
        if (spec.options.includes(text)) out[spec.name] = text;
        continue;
      }
      const v = parseFloat(text);
      if (Number.isFinite(v) && v >= spec.range[0] && v <= spec.range[1]) {
        out[spec.name] = spec.kind === 'ms' ? v / 1e3 : v;
      }
    }
    this.presentAtStart = q.get(`${k}-present`) === '1';
    return out;
  }

  writeUrl() {
    clearTimeout(this.urlTimer);
    const q = new URLSearchParams(location.search);
    const k = this.config.key;
    for (const spec of this.specs) q.set(`${k}-${spec.url}`, spec.urlText(this.values[spec.name]));
    if (this.present) q.set(`${k}-present`, '1'); else q.delete(`${k}-present`);
    history.replaceState(history.state, '', `${location.pathname}?${q.toString()}${location.hash}`);
  }

  build() {
    const cfg = this.config, id = `physai-live-${cfg.key}`;
    const {root, controls} = this.frame(`physai-live-panel pl-arm pl-${cfg.key}`);
    for (const spec of this.specs) {
      const lab = document.createElement('label');
      lab.textContent = `${spec.label} `;
      let input, out = null, toValue, fromValue;
      if (spec.kind === 'choice') {
        input = document.createElement('select');
        for (const o of spec.options) {
          const opt = document.createElement('option');
          opt.value = o;
          opt.textContent = spec.optionText ? spec.optionText(o) : o;
          input.appendChild(opt);
        }
        lab.appendChild(input);
        toValue = String;
        fromValue = String;
      } else {
        input = document.createElement('input');
        out = document.createElement('span');
        out.className = 'pl-value';
        out.id = `${id}-${spec.name}-value`;
        if (spec.kind === 'log') {
          const [lo, hi] = spec.range, n = spec.steps;
          Object.assign(input, {type: 'range', min: 0, max: n, step: 1});
          toValue = (x) => spec.round(lo * (hi / lo) ** (Number(x) / n));
          fromValue = (v) => Math.round(Math.log(v / lo) / Math.log(hi / lo) * n);
        } else if (spec.kind === 'ms') {
          Object.assign(input, {type: 'range', min: spec.range[0], max: spec.range[1], step: spec.step});
          toValue = (x) => Number(x) / 1e3;
          fromValue = (v) => (v * 1e3).toFixed(1);
        } else {
          Object.assign(input, {type: 'range', min: spec.range[0], max: spec.range[1], step: spec.step});
          toValue = Number;
          fromValue = (v) => v;
        }
        lab.append(input, ' ', out);
      }
      input.id = `${id}-${spec.name}`;
      controls.appendChild(lab);
      this.inputs[spec.name] = {input, toValue, fromValue, show: spec.show, out};
      input.addEventListener('input', (event) => this.onInput(spec.name, event));
    }
    this.endControls(root, controls);
    const plots = document.createElement('div');
    plots.className = 'pl-plots';
    this.buildPlots(plots);
    this.endBuild(root, plots);
  }

  onInput(name, event) {
    this.update(this.takeInput(name, event));
  }

  reset() {
    this.values = this.fromDefaults();
    this.syncInputs();
    this.update();
  }

  // the controls both arm panels have: kp, armature, timestep and integrator
  sharedSpecs() {
    const cfg = this.config, r = cfg.ranges;
    return {
      kp: {name: 'kp', url: 'kp', label: 'kp', kind: 'log', range: r.kp, steps: KP_STEPS, round: round(4),
           show: (v) => `${Number(v.toPrecision(4))} N·m/rad`, urlText: (v) => String(round(5)(v))},
      armature: {name: 'armature', url: 'armature', label: 'armature', kind: 'linear', range: r.armature,
                 step: 0.0005, show: (v) => `${v.toFixed(4)} kg·m²`, urlText: fixed(4)},
      timestep: {name: 'timestep', url: 'h', label: 'timestep', kind: 'ms', range: r.timestepMs, step: 0.1,
                 show: (v) => `${(v * 1e3).toFixed(1)} ms`, urlText: (v) => fixed(1)(v * 1e3)},
      integrator: {name: 'integrator', url: 'integrator', label: 'integrator', kind: 'choice',
                   options: cfg.integrators, urlText: String,
                   optionText: (o) => (cfg.browserIntegrators.includes(o) ? o : `${o} (precomputed)`)},
    };
  }

  // the drawing width of the trace plot: `wide`, or 400 where the page has less room than that (a phone), so that
  // its text stays about the size of the other plots' instead of shrinking with the whole drawing
  traceWidth(wide) {
    const room = Math.min(window.innerWidth, this.block.parentElement?.clientWidth || Infinity);
    return room < wide ? Math.min(wide, 400) : wide;
  }

  // Drain a sliced run (a generator of holdRun's or replayRun's kind): onSlice(progress) after the first slice and
  // then at most every PROGRESS_MS, onDone(record) at the end; a newer input (generation) drops it. Records the
  // latencies.
  async drive(run, generation, start, onSlice, onDone) {
    let first = true, shownAt = 0;
    for (;;) {
      const step = run.next();
      if (step.done) {
        onDone(step.value);
        if (first) this.latencies.push(performance.now() - start);
        this.finish(start);
        return;
      }
      if (first || performance.now() - shownAt >= PROGRESS_MS) {
        onSlice(step.value);
        shownAt = performance.now();
      }
      if (first) {
        this.latencies.push(performance.now() - start);
        first = false;
      }
      await nextTask();
      if (generation !== this.generation) return;   // a newer input took over: drop this run
    }
  }

  finish(start) {
    this.completeLatencies.push(performance.now() - start);
    for (const list of [this.latencies, this.completeLatencies]) if (list.length > 500) list.shift();
    this.drawn += 1;
    this.root.dataset.drawn = String(this.drawn);
    this.root.dataset.state = 'idle';
  }
}

const round = (digits) => (v) => Number(v.toPrecision(digits));
const fixed = (digits) => (v) => String(Number(v.toFixed(digits)));

export class PdPanel extends ArmLivePanel {
  constructor(block, config, mujoco) {
    super(block, config, mujoco);
    this.arm = new arm.Arm(mujoco, config.xml, config.hold, 'pd-arm');
    this.start();
  }

  controlSpecs() {
    const cfg = this.config, r = cfg.ranges, shared = this.sharedSpecs();
    return [
      {name: 'rateHz', url: 'rate', label: 'controller rate', kind: 'log', range: r.rateHz, steps: RATE_STEPS,
       round: round(3), show: (v) => `${v.toFixed(0)} Hz`, urlText: (v) => String(round(4)(v))},
      {name: 'backend', url: 'backend', label: 'PD runs', kind: 'choice', options: cfg.backends,
       urlText: String},
      shared.kp,
      {name: 'kv', url: 'kv', label: 'damping kv', kind: 'linear', range: r.kv, step: 0.01,
       show: (v) => `${v.toFixed(3)} N·m·s/rad`, urlText: fixed(3)},
      shared.armature, shared.timestep, shared.integrator,
    ];
  }

  // the twin's setting when the reader touched it: controller rate, backend and armature
  fromTwin() {
    const id = this.config.twin;
    const out = {};
    if (!id) return out;
    const rate = document.getElementById(`${id}-rate_hz-value`);
    if (rate && Number.isFinite(parseFloat(rate.textContent))) out.rateHz = parseFloat(rate.textContent);
    const selected = (name) => {
      const select = document.getElementById(`${id}-${name}`);
      return select && select.selectedOptions && select.selectedOptions[0]
        ? select.selectedOptions[0].textContent.trim() : null;
    };
    const backend = selected('backend');
    if (backend && this.config.backends.includes(backend)) out.backend = backend;
    const armature = parseFloat(selected('armature'));
    if (Number.isFinite(armature)) out.armature = armature;
    return out;
  }

  buildPlots(plots) {
    const cfg = this.config, r = cfg.ranges;
    const duration = cfg.hold.duration;
    // two ranges, as the kernel's panel: ±80° holds every joint's move, ±180° every joint's range
    this.holdPlots = cfg.ylimDeg.map((half, i) => {
      const p = new Plot(plots, {width: this.traceWidth(560), height: 290, title: 'worst joint', xlabel: 'time (s)',
                                 ylabel: 'joint angle (deg)', xlim: [0, duration], ylim: [-half, half],
                                 className: 'pl-step'});
      el('rect', {x: p.x(duration - cfg.hold.settleWindow), y: p.m.t, width: p.x(duration) - p.x(duration - 1),
                  height: p.h - p.m.t - p.m.b, class: 'pl-shade'}, p.layer('shade'));
      p.legend([['command', this.colors.command, 'dash'], ['joint angle q', this.colors.response, 'line'],
                ['last second', '#eeeeee', 'box']]);
      if (i > 0) p.svg.style.display = 'none';
      return p;
    });
    // the rate axis a little wider than the slider's, so that its last tick label fits
    this.growthPlot = new Plot(plots, {title: 'growth per controller tick', xlabel: 'controller rate (Hz)',
                                       ylabel: 'growth per tick (worst joint)',
                                       xlim: [r.rateHz[0] / 1.1, r.rateHz[1] * 1.15], ylim: [0, 2],
                                       xlog: true, className: 'pl-growth'});
    this.growthPlot.legend([['in-loop', this.colors.diverged, 'line'], ['in-step', this.colors.response, 'line'],
                            ['growth = 1', this.colors.bound, 'dash'], ['current', this.colors.current, 'o']]);
  }

  // both backends' curves over the rates (kept for the latest 16 settings: a move of the rate or the backend
  // redraws them without recomputing, as the kernel's panel keeps them) and the growth at the current rate
  growth() {
    const v = this.values, g = this.config.growth;
    const common = {kp: v.kp, kv: v.kv, armature: v.armature, timestep: v.timestep, integrator: v.integrator,
                    inertia: g.inertia, damping: g.damping};
    const key = JSON.stringify([v.kp, v.kv, v.armature, v.timestep, v.integrator]);
    this.curveCache = this.curveCache || new Map();
    let curves = this.curveCache.get(key);
    if (!curves) {
      curves = Object.fromEntries(this.config.backends.map(
        (backend) => [backend, arm.growthCurve(g.rates, {...common, backend})]));
      if (this.curveCache.size >= 16) this.curveCache.delete(this.curveCache.keys().next().value);
      this.curveCache.set(key, curves);
    }
    const current = arm.growthCurve([v.rateHz], {...common, backend: v.backend})[0];
    return {curves, current};
  }

  async update(start = performance.now()) {
    const generation = ++this.generation;
    const v = {...this.values};
    this.scheduleUrl();
    this.growthNow = this.growth();
    this.drawGrowth();
    this.root.dataset.state = 'running';
    if (!this.isLive()) {
      this.result = null;
      this.drawHold(null, null);
      this.latencies.push(performance.now() - start);
      this.finish(start);
      return;
    }
    const params = {...v, forcerange: this.config.hold.forcerange};
    const run = arm.holdRun(this.arm, params, {sliceMs: SLICE_MS, firstSliceMs: FIRST_SLICE_MS});
    await this.drive(run, generation, start, (progress) => this.drawHold({...progress.run, progress}, null),
                     (record) => {
                       const summary = arm.summarizeHold(record, this.config.hold);
                       this.result = {run: record, summary, note: arm.holdNote(summary, this.growthNow.current, v),
                                      values: v};
                       this.drawHold(record, this.result);
                     });
  }

  drawGrowth() {
    const p = this.growthPlot, c = this.colors, v = this.values, g = this.growthNow;
    const layer = p.layer('curves');
    const rates = this.config.growth.rates;
    p.path(layer, [rates[0], rates[rates.length - 1]], [1, 1], {stroke: c.bound, 'stroke-width': 1,
                                                                 'stroke-dasharray': '5 3'});
    const colorOf = {'in-loop': c.diverged, 'in-step': c.response};
    for (const backend of this.config.backends) {
      p.path(layer, rates, g.curves[backend].map((x) => Math.min(x, 2.0)), {stroke: colorOf[backend],
                                                                             'stroke-width': 1.6});
    }
    const top = p.layer('top-point');
    el('circle', {cx: p.x(v.rateHz), cy: p.y(Math.min(g.current, 2.0)), r: 5, fill: 'none', stroke: c.current,
                  'stroke-width': 2}, top);
    const value = pyFormat(g.current, g.current < 1000 ? '.3f' : '.3g');
    p.titleNode.textContent = `growth per tick ${value} (${v.backend}, ${pyFormat(v.rateHz, '.0f')} Hz)`;
  }

  drawHold(record, result) {
    const cfg = this.config, c = this.colors, v = this.values;
    const nq = cfg.hold.standby.length;
    const worst = result ? result.summary.worst : (this.lastWorst ?? 0);
    let wide = false;
    const q = record && record.q, steps = record ? (record.steps ?? 0) : 0;
    if (q) {
      for (let k = 0; k < steps && !wide; k++) {
        if (Math.abs(q[k * nq + worst]) * 180 / Math.PI > cfg.ylimDeg[0]) wide = true;
      }
    }
    if (result) this.lastWorst = worst;
    this.holdPlots.forEach((p, i) => { p.svg.style.display = (i === 1) === wide ? '' : 'none'; });
    const p = this.holdPlots[wide ? 1 : 0];
    this.holdPlots[wide ? 0 : 1].layer('trace');
    this.holdPlots[wide ? 0 : 1].layer('top-marks');
    const g = p.layer('trace');
    const marks = p.layer('top-marks');
    const joint = cfg.hold.joints[worst];
    if (!this.isLive()) {
      this.drawPrecomputed(p, marks);
      return;
    }
    if (q && steps > 0) {
      const h = record.h ?? v.timestep;
      const t = (k) => h * (k + 1);
      const deg = (source) => (k) => Math.max(-1e4, Math.min(1e4, source[k * nq + worst] * 180 / Math.PI));
      const [cx, cy] = p.columns(steps, t, deg(record.target));   // the worst joint's command and angle
      p.path(g, cx, cy, {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
      const [xs, ys] = p.columns(steps, t, deg(q));
      p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.4});
    }
    if (!result) {
      const shown = record && record.progress ? record.progress.done * v.timestep : 0;
      p.text(marks, `running… ${shown.toFixed(1)} / ${cfg.hold.duration.toFixed(1)} s`, p.x(cfg.hold.duration / 2),
             p.m.t + 14, {'text-anchor': 'middle', class: 'pl-muted', 'font-size': 11});
      p.titleNode.textContent = `worst joint: ${joint}`;
      this.status.textContent = `MuJoCo ${this.version} (WebAssembly) in this page: running`;
      return;
    }
    const s = result.summary;
    p.titleNode.textContent = `worst joint: ${joint}`;
    // the kernel panel's two lines, the first broken after its "where": clear of the legend at the top right
    const [head, ...rest] = result.note.split('\n');
    const cut = head.indexOf(': ');
    const lines = [head.slice(0, cut + 1), head.slice(cut + 2), ...rest];
    const down = cfg.hold.standby[worst] < 0;   // the note goes where the move leaves room, as the kernel's panel
    const y0 = down ? p.m.t + 16 : p.h - p.m.b - 8 - 14 * (lines.length - 1);
    lines.forEach((line, i) => {
      p.text(marks, line, p.m.l + 6, y0 + 14 * i, {'font-size': 11, fill: s.diverged ? c.diverged : 'currentColor',
                                                   class: 'pl-halo', 'paint-order': 'stroke'});
    });
    if (s.diverged) {
      p.text(marks, 'diverged', p.x(cfg.hold.duration / 2), p.y(0), {fill: c.diverged, 'font-size': 24,
             'font-weight': 'bold', 'text-anchor': 'middle'});
    }
    this.readoutNode.textContent = result.note.replace('\n', ' · ');
    this.readoutNode.classList.toggle('pl-bad', s.diverged || s.chatters);
    this.status.textContent = `MuJoCo ${this.version} (WebAssembly) in this page`;
    this.note.textContent = this.noteText();
    this.note.classList.remove('pl-fallback');
  }

  // discrete (not in this page's MuJoCo): the ensembles physai precomputed at the panel's starting kp, kv,
  // armature and timestep (physai.interface.web_arm.pd_discrete), one line per rate and backend, in the twin's
  // words: below the critical rate the hold is a chaotic limit cycle, so no single trace of it is stored
  drawPrecomputed(p, marks) {
    const cfg = this.config, d = cfg.discrete, v = this.values, c = this.colors;
    const ir = nearestIndex(d.rates, v.rateHz, true), ib = d.backends.indexOf(v.backend);
    const current = d.words[ir * d.backends.length + ib];
    const label = `precomputed (MuJoCo ${d.pythonMujoco}, discrete, ensemble at the nearest rate ` +
      `${pyFormat(d.rates[ir], '.0f')} Hz)`;
    p.titleNode.textContent = 'discrete: precomputed ensembles (no single trace)';
    const x0 = p.m.l + 6;
    let y = p.m.t + 16;
    p.text(marks, `${d.rates.length} rates × ${d.backends.length} backends,`, x0, y, {'font-size': 11,
                                                                                    class: 'pl-muted'});
    p.text(marks, 'each an ensemble of runs from nearby starts:', x0, y + 14, {'font-size': 11, class: 'pl-muted'});
    y += 32;  // below the legend at the top right
    d.rates.forEach((rate, i) => {
      d.backends.forEach((backend, j) => {
        y += 13;
        const w = d.words[i * d.backends.length + j], here = i === ir && j === ib;
        p.text(marks, `${pyFormat(rate, '.0f').padStart(4)} Hz ${backend} ${w.text}`, x0, y,
               {'font-size': 10, 'font-family': 'monospace', 'font-weight': here ? 'bold' : 'normal',
                fill: w.state === 'still' ? 'currentColor' : c.diverged, class: 'pl-halo', 'paint-order': 'stroke'});
      });
    });
    const bad = current.state !== 'still';
    this.readoutNode.textContent = `${v.backend} at ${pyFormat(d.rates[ir], '.0f')} Hz: ${current.text} · ${label}`;
    this.readoutNode.classList.toggle('pl-bad', bad);
    this.status.textContent = `discrete: precomputed (not in MuJoCo ${this.version})`;
    const s = d.settings;
    this.note.textContent = `Precomputed by physai (MuJoCo ${d.pythonMujoco}): the browser's MuJoCo ` +
      `${this.version} has no discrete integrator. Each line is an ensemble of holds from nearby starts (a hold ` +
      `below the critical rate is a chaotic limit cycle: one run's trace would change with the last bits), at ` +
      `the panel's starting kp ${s.kp} N·m/rad, kv ${s.kv} N·m·s/rad, armature ${s.armature} kg·m², timestep ` +
      `${(s.timestep * 1e3).toFixed(1)} ms (the rate picks the nearest line; the other sliders move the growth ` +
      `per tick only).`;
    this.note.classList.add('pl-fallback');
  }

  noteText() {
    const cfg = this.config;
    return `The SO-101 (its bodies and joints: nothing touches) moves from its home pose to the standby pose in ` +
      `${cfg.hold.moveTime} s and holds it; the controller ticks at the chosen rate and holds its command (or ` +
      `torque) between ticks. The trace is the joint that moves most over the last second (grey). Growth per tick ` +
      `above 1: the PD cannot hold still. Simulated by MuJoCo ${this.version} in this page (physai's figures use ` +
      `MuJoCo ${cfg.pythonMujoco}).`;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 4's panel: a recorded episode replayed open loop under the servo on the sliders
// (physai.interface.servo_sysid_panels.sysid_panel)

const JOINT_SHORT = ['pan', 'lift', 'elbow', 'w.flex', 'w.roll'];
const SIM_COLORS = ['#1f6fb4', '#2a9d4b'];
const REAL_COLOR = '#888888', SAG_COLOR = '#d08b00';

export class SysidPanel extends ArmLivePanel {
  constructor(block, config, mujoco) {
    super(block, config, mujoco);
    this.arm = new arm.Arm(mujoco, config.xml, null, 'sysid-arm');
    this.start();
  }

  controlSpecs() {
    const cfg = this.config, r = cfg.ranges, shared = this.sharedSpecs();
    return [
      shared.kp, shared.armature, shared.timestep, shared.integrator,
      {name: 'kv', url: 'kv', label: 'kv', kind: 'log', range: r.kv, steps: KP_STEPS, round: round(3),
       show: (v) => `${pyFormat(v, '.3g')} N·m·s/rad`, urlText: (v) => String(round(4)(v))},
      {name: 'forcerange', url: 'forcerange', label: 'forcerange ±', kind: 'linear', range: r.forcerange, step: 0.01,
       show: (v) => `${v.toFixed(2)} N·m`, urlText: fixed(2)},
    ];
  }

  // the twin's kp when the reader touched it
  fromTwin() {
    const id = this.config.twin;
    const kp = id ? document.getElementById(`${id}-kp-value`) : null;
    const v = kp ? parseFloat(kp.textContent) : NaN;
    return Number.isFinite(v) && v >= this.config.ranges.kp[0] && v <= this.config.ranges.kp[1] ? {kp: v} : {};
  }

  buildPlots(plots) {
    const cfg = this.config, e = cfg.episode, na = cfg.armJoints.length;
    this.jointIndex = cfg.joints.map((j) => cfg.armJoints.indexOf(j));
    let lo = Infinity, hi = -Infinity;
    for (let t = 0; t < e.nframe; t++) {
      for (const j of this.jointIndex) {
        lo = Math.min(lo, e.stateDeg[t * na + j]);
        hi = Math.max(hi, e.stateDeg[t * na + j]);
      }
    }
    const duration = (e.nframe - 1) / e.fps;
    this.overlay = new Plot(plots, {width: this.traceWidth(480), height: 290, title: `held-out episode ${e.index}`,
                                    xlabel: 'time (s)', ylabel: 'joint angle (deg)', xlim: [0, duration],
                                    ylim: [lo - 0.15 * (hi - lo), hi + 0.15 * (hi - lo)], className: 'pl-step'});
    const real = this.overlay.layer('real');
    const t = Array.from({length: e.nframe}, (_, k) => k / e.fps);
    for (const j of this.jointIndex) {
      this.overlay.path(real, t, t.map((_, k) => e.stateDeg[k * na + j]), {stroke: REAL_COLOR, 'stroke-width': 2.4,
                                                                          'stroke-opacity': 0.7});
    }
    // down to the middle of the left edge, where the episode starts at rest between its two joints
    const o = this.overlay;
    o.legend([['real', REAL_COLOR, 'line'], ...cfg.joints.map((j, i) => [`sim ${j}`, SIM_COLORS[i], 'line'])], 'ul',
             (o.h - o.m.b - o.m.t) / 2 - 30);
    const bars = (title, ylabel, ylim) => {
      return new Plot(plots, {width: 280, height: 290, title, xlabel: 'joint', ylabel, xlim: [-0.6, na - 0.4], ylim,
                              xticks: JOINT_SHORT.map((name, j) => [j, name]), className: 'pl-bars'});
    };
    this.errors = bars('error per joint', 'mean |sim − real| (deg)', [0, 6]);
    this.sags = bars('sag in held poses', 'command − joint (deg)', [-4, 4]);
    this.sags.path(this.sags.layer('zero'), [-0.6, na - 0.4], [0, 0], {stroke: '#555555', 'stroke-width': 0.8});
    this.sags.legend([['real', REAL_COLOR, 'box'], ['sim', SAG_COLOR, 'box']], 'lr');
  }

  servo() {
    const v = this.values, b = this.config.base;
    return {kp: v.kp, kv: v.kv, forcerange: v.forcerange, damping: b.damping, frictionloss: b.frictionloss,
            armature: v.armature, timestep: v.timestep, integrator: v.integrator};
  }

  async update(start = performance.now()) {
    const generation = ++this.generation;
    const cfg = this.config;
    this.scheduleUrl();
    this.root.dataset.state = 'running';
    if (!this.isLive()) {
      this.result = null;
      this.drawPrecomputed(this.precomputed());
      this.latencies.push(performance.now() - start);
      this.finish(start);
      return;
    }
    const run = arm.replayRun(this.arm, this.servo(), cfg.episode, {sliceMs: SLICE_MS, firstSliceMs: FIRST_SLICE_MS});
    await this.drive(run, generation, start, (progress) => this.drawReplay(progress.run, null),
                     (record) => {
                       const summary = arm.summarizeReplay(record, cfg.episode, cfg);
                       this.result = {run: record, summary, status: arm.replayStatus(summary)};
                       this.drawReplay(record, this.result);
                     });
  }

  // discrete (not in this page's MuJoCo): the replay physai precomputed at the nearest kp, the other controls at
  // the panel's defaults (physai.interface.web_arm.sysid_discrete); a chaotic one is stored as its verdict alone
  precomputed() {
    const d = this.config.discrete, ik = nearestIndex(d.kp, this.values.kp, true), stored = d.runs[ik];
    return {kp: d.kp[ik], stored, sim: stored.chaotic ? null : stored.sim.map((x) => unpack(x, d.steps.sim))};
  }

  drawPrecomputed({kp, stored, sim}) {
    const cfg = this.config, d = cfg.discrete, e = cfg.episode, p = this.overlay, na = cfg.armJoints.length;
    const g = p.layer('sim'), marks = p.layer('top-marks');
    const eb = this.errors.layer('bars'), sb = this.sags.layer('bars');
    const bad = Boolean(stored.diverged || stored.chatters || stored.chaotic);
    const label = `precomputed (MuJoCo ${d.pythonMujoco}, discrete, nearest kp ${kp})`;
    if (sim) {
      sim.forEach((trace, i) => {
        p.path(g, trace.map((_, k) => k / e.fps), trace.map((v) => (v === null ? NaN : v)),
               {stroke: SIM_COLORS[i], 'stroke-width': 1.3, 'stroke-dasharray': '5 2'});
      });
      for (let j = 0; j < na; j++) {
        this.bar(this.errors, j, 0.8, stored.jointMae[j], SIM_COLORS[0], eb);
        this.bar(this.sags, j - 0.2, 0.4, d.sagReal[j], REAL_COLOR, sb);
        this.bar(this.sags, j + 0.2, 0.4, stored.sag[j] === null ? NaN : stored.sag[j], SAG_COLOR, sb);
      }
    } else {
      p.text(marks, 'chaotic: no single replay is stored', (p.m.l + p.w - p.m.r) / 2, p.m.t + 40,
             {'text-anchor': 'middle', 'font-size': 13, fill: 'currentColor', class: 'pl-halo',
              'paint-order': 'stroke'});
    }
    p.text(marks, stored.status, p.w - p.m.r - 6, p.m.t + 14, {'text-anchor': 'end', 'font-size': 12,
           fill: bad ? this.colors.diverged : 'currentColor', class: 'pl-halo', 'paint-order': 'stroke'});
    p.text(marks, label, p.w - p.m.r - 6, p.m.t + 30, {'text-anchor': 'end', 'font-size': 11,
                                                    class: 'pl-muted pl-halo', 'paint-order': 'stroke'});
    this.readoutNode.textContent = `${stored.status} · ${label}`;
    this.readoutNode.classList.toggle('pl-bad', bad);
    this.status.textContent = `discrete: precomputed (not in MuJoCo ${this.version})`;
    const s = d.settings;
    this.note.textContent = `Precomputed by physai (MuJoCo ${d.pythonMujoco}): the browser's MuJoCo ${this.version} ` +
      `has no discrete integrator. Episode ${e.index} replayed open loop with the discrete integrator at the ` +
      `nearest kp, ${kp} N·m/rad, and the panel's starting kv ${s.kv}, forcerange ${s.forcerange} N·m, armature ` +
      `${s.armature} kg·m², timestep ${(s.timestep * 1e3).toFixed(1)} ms (the other sliders do not move it).`;
    this.note.classList.add('pl-fallback');
  }

  bar(plot, x, width, height, color, layer) {
    if (!Number.isFinite(height)) return;
    const y0 = plot.y(0), y1 = plot.y(Math.max(plot.y.lim[0], Math.min(plot.y.lim[1], height)));
    el('rect', {x: plot.x(x - width / 2), y: Math.min(y0, y1), width: plot.x(x + width / 2) - plot.x(x - width / 2),
                height: Math.abs(y1 - y0), fill: color}, layer);
  }

  drawReplay(record, result) {
    const cfg = this.config, e = cfg.episode, p = this.overlay, na = cfg.armJoints.length;
    const g = p.layer('sim'), marks = p.layer('top-marks');
    if (record) {
      const nq = record.q.length / e.nframe;
      const t = Array.from({length: record.frames}, (_, k) => k / e.fps);
      this.jointIndex.forEach((j, i) => {
        const address = cfg.armIndex[j];
        p.path(g, t, t.map((_, k) => record.q[k * nq + address] * 180 / Math.PI),
               {stroke: SIM_COLORS[i], 'stroke-width': 1.3});
      });
    }
    if (!result) {
      p.text(marks, `running… ${((record ? record.frames - 1 : 0) / e.fps).toFixed(1)} s`, p.w - p.m.r - 6,
             p.m.t + 14, {'text-anchor': 'end', class: 'pl-muted', 'font-size': 11});
      this.status.textContent = `MuJoCo ${this.version} (WebAssembly) in this page: running`;
      return;
    }
    const s = result.summary, bad = s.diverged || s.chatters;
    p.text(marks, result.status, p.w - p.m.r - 6, p.m.t + 14, {'text-anchor': 'end', 'font-size': 12,
           fill: bad ? this.colors.diverged : 'currentColor', class: 'pl-halo', 'paint-order': 'stroke'});
    const bar = (...args) => this.bar(...args);
    const eb = this.errors.layer('bars'), sb = this.sags.layer('bars');
    for (let j = 0; j < na; j++) {
      bar(this.errors, j, 0.8, s.jointMae[j], SIM_COLORS[0], eb);
      bar(this.sags, j - 0.2, 0.4, s.sagReal[j], REAL_COLOR, sb);
      bar(this.sags, j + 0.2, 0.4, s.sag[j], SAG_COLOR, sb);
    }
    this.readoutNode.textContent = result.status;
    this.readoutNode.classList.toggle('pl-bad', bad);
    this.status.textContent = `MuJoCo ${this.version} (WebAssembly) in this page`;
    this.note.classList.remove('pl-fallback');
    const stepMs = (1e3 / (e.fps * result.run.sub)).toFixed(2);
    this.note.textContent = `Episode ${e.index} (${e.nframe} frames at ${e.fps} fps) replayed open loop: every ` +
      `frame's recorded command held for ${result.run.sub} physics steps of ${stepMs} ms (the timestep that fits ` +
      `a frame), joint damping ${cfg.base.damping} and friction loss ${cfg.base.frictionloss} as fitted. ` +
      `Simulated by MuJoCo ${this.version} in this page (physai's figures use MuJoCo ${cfg.pythonMujoco}).`;
  }
}
