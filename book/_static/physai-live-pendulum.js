// Chapter 2's live panel: the pendulum under each actuator model, MuJoCo in the reader's browser.
//
// The page's script (physai-live.js) imports this module when the reader first touches chapter 2's twin, and builds
// PendulumPanel in the block physai.interface.web.pendulum_live wrote. It is the panel of
// physai.interface.actuator_models_panels.actuator_panel: the model (implicit, ideal PD, DC motor, delayed PD,
// remotized PD), kp, armature, timestep, integrator, kv, the effort limit E, the velocity limit V and the delay;
// three plots (the step response 0 -> 90 deg with its readout, the applied torque with the limits that clip it, the
// path in the torque-speed plane with the allowed band); a reset, the setting in the page's address and a present
// view. A run (3 s, 150 to 6000 physics steps) takes a few milliseconds, so every input reruns MuJoCo on the page.
// The discrete integrator (not in MuJoCo 3.3.8) shows runs physai precomputed, labelled as such.
import {LivePanel, Plot, addStyle, nearestIndex} from './physai-live.js';
import {degrees, pyFormat, unpack} from './physai-live-core.js';
import * as pc from './physai-live-pendulum-core.js';

const LOG_STEPS = 1000;        // positions of a log slider
const Q_CLIP = [-30, 160];     // deg: the angle drawn (the axes show -20 .. 150)
const SPEED_AXIS = 30;         // rad/s: the torque-speed plane's half-width
// 340 units wide: two plots side by side in the book's column (688 px at a 1280 px window) show at about 330 px,
// so their 11 and 12 unit text stays above 10 px
const SIZE = {width: 340, height: 260};

// nine controls take more rows than chapter 1's five: in the present view they are narrower and the plots shorter
const CSS = `
.physai-live-present.pl-pendulum .pl-status{display:none}
.physai-live-present.pl-pendulum input[type=range]{width:90px}
.physai-live-present.pl-pendulum .pl-controls{gap:2px 12px;margin-bottom:2px}
.physai-live-present.pl-pendulum .pl-plots{height:calc(100vh - 11em)}
`;

// the controls that only some models use
const ONLY_FOR = {velocity_limit: ['DC motor'], delay: ['delayed PD', 'remotized PD']};

export class PendulumPanel extends LivePanel {
  constructor(block, config, mujoco) {
    super();
    addStyle();
    if (!document.getElementById('physai-live-pendulum-style')) {
      const style = document.createElement('style');
      style.id = 'physai-live-pendulum-style';
      style.textContent = CSS;
      document.head.appendChild(style);
    }
    this.block = block;
    this.config = config;
    this.colors = config.colors;
    this.pendulum = new pc.Pendulum(mujoco, config.xml, 'pendulum');
    this.version = mujoco.mj_versionString();
    this.controls = Object.fromEntries(config.controls.map((c) => [c.name, c]));
    this.latencies = [];
    this.drawn = 0;
    this.values = {...config.defaults, ...this.fromTwin(), ...this.fromUrl()};
    this.build();
    this.update();
  }

  // ---- the setting: defaults, the twin the reader touched, the page's address

  // the twin's effort limit and model where the reader moved them, so the live panel opens where the reader was
  // (a twin control still at its own default leaves the chapter's default: the twin shows kp 400, kv 20)
  fromTwin() {
    const id = this.config.twin, out = {};
    if (!id) return out;
    const slider = document.getElementById(`${id}-forcerange`);
    const shown = document.getElementById(`${id}-forcerange-value`);
    const model = document.getElementById(`${id}-model`);
    if (slider && shown && slider.value !== slider.defaultValue) {
      const e = parseFloat(shown.textContent);
      if (this.inRange('forcerange', e)) out.forcerange = e;
    }
    const option = model && model.selectedOptions && model.selectedOptions[0];
    if (option && !option.defaultSelected) {
      const name = option.textContent.trim();
      if (this.controls.model.options.includes(name)) out.model = name;
    }
    return out;
  }

  inRange(name, value) {
    const c = this.controls[name], scale = c.scale || 1;
    return Number.isFinite(value) && value >= c.min * scale && value <= c.max * scale;
  }

  // the address names each control pendulum-NAME (the timestep pendulum-h, in ms), as the sliders show them
  urlName(name) {
    return `${this.config.key}-${name === 'timestep' ? 'h' : name}`;
  }

  fromUrl() {
    const q = new URLSearchParams(location.search);
    const out = {};
    for (const c of this.config.controls) {
      const text = q.get(this.urlName(c.name));
      if (text === null) continue;
      if (c.kind === 'choice') {
        if (c.options.includes(text)) out[c.name] = text;
        continue;
      }
      let value = parseFloat(text) * (c.scale || 1);
      const d = this.config.defaults[c.name];
      if (Math.abs(value - d) <= 1e-9 * Math.abs(d)) value = d;  // the default timestep, 1/360 s, in full
      if (this.inRange(c.name, value)) out[c.name] = value;
    }
    this.presentAtStart = q.get(`${this.config.key}-present`) === '1';
    return out;
  }

  writeUrl() {
    clearTimeout(this.urlTimer);
    const q = new URLSearchParams(location.search);
    for (const c of this.config.controls) {
      const v = this.values[c.name];
      q.set(this.urlName(c.name), c.kind === 'choice' ? v : String(Number((v / (c.scale || 1)).toPrecision(12))));
    }
    if (this.present) q.set(`${this.config.key}-present`, '1'); else q.delete(`${this.config.key}-present`);
    history.replaceState(history.state, '', `${location.pathname}?${q.toString()}${location.hash}`);
  }

  // ---- DOM

  build() {
    const cfg = this.config, id = `physai-live-${cfg.key}`;
    const {root, controls} = this.frame('physai-live-panel pl-pendulum');
    for (const c of cfg.controls) controls.appendChild(this.control(c, id));
    this.endControls(root, controls);

    this.plotsNode = document.createElement('div');
    this.plotsNode.className = 'pl-plots';
    const at = cfg.step.at;
    this.step = new Plot(this.plotsNode, {...SIZE, title: 'step response', xlabel: 'time (s)',
                                          ylabel: 'joint angle q (deg)', xlim: [0, cfg.duration], ylim: [-20, 150],
                                          className: 'pl-step'});
    this.step.legend([['command q*', this.colors.command, 'dash'], ['q(t)', this.colors.response, 'line']], 'ul');
    const command = this.step.layer('command');
    this.step.path(command, [0, at, at, cfg.duration], [degrees(cfg.step.low), degrees(cfg.step.low),
                   degrees(cfg.step.high), degrees(cfg.step.high)],
                   {stroke: this.colors.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    this.torqueAxes(pc.panelTorqueTop(6, cfg.tauG, cfg.torqueSteps));
    this.endBuild(root, this.plotsNode);
  }

  // one control of config.controls: a select, or a slider (linear, or log over LOG_STEPS positions)
  control(c, id) {
    const lab = document.createElement('label');
    lab.textContent = `${c.label} `;
    lab.dataset.control = c.name;
    let input, toValue, fromValue, show = null, out = null;
    if (c.kind === 'choice') {
      input = document.createElement('select');
      for (const o of c.options) {
        const opt = document.createElement('option');
        opt.value = o;
        opt.textContent = c.name === 'integrator' && !this.config.browserIntegrators.includes(o)
          ? `${o} (precomputed)` : o;
        input.appendChild(opt);
      }
      toValue = (s) => s;
      fromValue = (v) => v;
    } else {
      input = document.createElement('input');
      const scale = c.scale || 1;
      const digits = Number(/\.(\d+)g/.exec(c.format)?.[1] || 0);
      if (c.kind === 'log') {
        Object.assign(input, {type: 'range', min: 0, max: LOG_STEPS, step: 1});
        const ratio = c.max / c.min;
        toValue = (s) => Number((c.min * ratio ** (Number(s) / LOG_STEPS)).toPrecision(digits)) * scale;
        fromValue = (v) => Math.round(Math.log(v / scale / c.min) / Math.log(ratio) * LOG_STEPS);
      } else {
        Object.assign(input, {type: 'range', min: c.min, max: c.max, step: c.step});
        toValue = (s) => Number(s) * scale;
        fromValue = (v) => String(v / scale);
      }
      show = (v) => {
        const text = `${pyFormat(v / scale, c.format)} ${c.unit}`;
        return c.name === 'forcerange' && v >= this.config.constants.noLimit ? `${text} (none)` : text;
      };
      out = document.createElement('span');
      out.className = 'pl-value';
      out.id = `${id}-${c.name}-value`;
    }
    input.id = `${id}-${c.name}`;
    lab.appendChild(input);
    if (out) lab.append(' ', out);
    this.inputs[c.name] = {input, toValue, fromValue, show, out, label: lab};
    input.addEventListener('input', (event) => this.onInput(c.name, event));
    return lab;
  }

  onInput(name, event) {
    this.update(this.takeInput(name, event));
  }

  reset() {
    this.values = {...this.config.defaults};
    this.syncInputs();
    this.update();
  }

  // the torque plots' axes, ±top N·m: made again only when the effort limit moves the scale to another step
  torqueAxes(top) {
    if (this.top === top) return;
    this.top = top;
    const cfg = this.config;
    const torque = new Plot(null, {...SIZE, title: 'applied torque', xlabel: 'time (s)', ylabel: 'torque (N·m)',
                                   xlim: [0, cfg.duration], ylim: [-top, top], className: 'pl-torque'});
    torque.legend([['applied torque', this.colors.response, 'line'], ['limits', this.colors.bound, 'dot'],
                   ['hold torque τg', this.colors.sag, 'dash']], 'lr');
    torque.path(torque.layer('tau-g'), [0, cfg.duration], [cfg.tauG, cfg.tauG],
                {stroke: this.colors.sag, 'stroke-width': 1, 'stroke-dasharray': '5 4'});
    const plane = new Plot(null, {...SIZE, title: 'torque-speed plane', xlabel: 'joint velocity qd (rad/s)',
                                  ylabel: 'torque (N·m)', xlim: [-SPEED_AXIS, SPEED_AXIS], ylim: [-top, top],
                                  className: 'pl-plane'});
    plane.legend([['allowed band', this.colors.bound, 'line'], ['run', this.colors.response, 'line']]);
    for (const [old, fresh] of [[this.torque, torque], [this.plane, plane]]) {
      if (old) old.svg.replaceWith(fresh.svg); else this.plotsNode.appendChild(fresh.svg);
    }
    this.torque = torque;
    this.plane = plane;
  }

  // ---- computing and drawing

  actuator() {
    const v = this.values;
    return pc.panelActuator({model: v.model, kp: v.kp, kv: v.kv, forcerange: v.forcerange,
                             velocityLimit: v.velocity_limit, delay: v.delay}, this.config.constants);
  }

  // the run at the current setting: MuJoCo on the page, or (discrete) the nearest precomputed run
  compute() {
    const v = this.values, cfg = this.config;
    if (cfg.browserIntegrators.includes(v.integrator)) {
      const actuator = this.actuator();
      const run = this.pendulum.run(actuator, {armature: v.armature, timestep: v.timestep, integrator: v.integrator},
                                    {duration: cfg.duration, step: cfg.step, controlRate: cfg.controlRate});
      return {run, actuator, readout: pc.panelReadout(run, pc.stepMetrics(run, cfg.step.at)), precomputed: null};
    }
    const d = cfg.discrete;
    const im = d.models.indexOf(v.model), ik = nearestIndex(d.kp, v.kp, true);
    const ih = nearestIndex(d.timestep, v.timestep, true);
    const stored = d.runs[(im * d.timestep.length + ih) * d.kp.length + ik];
    const s = d.settings;
    const actuator = pc.panelActuator({model: v.model, kp: d.kp[ik], kv: s.kv, forcerange: s.forcerange,
                                       velocityLimit: s.velocity_limit, delay: s.delay}, cfg.constants);
    const precomputed = {kp: d.kp[ik], timestep: d.timestep[ih], ...s};
    // a chaotic run (its trace moves with the last bits) is stored as its verdict alone
    if (stored.chaotic) return {run: stored, actuator, readout: stored.readout, precomputed};
    const run = {...stored, q: stored.q.map((x) => unpack(x, d.steps.q)),
                 torque: stored.torque.map((x) => unpack(x, d.steps.torque)),
                 path: [unpack(stored.path[0], d.steps.speed), unpack(stored.path[1], d.steps.torque)]};
    return {run, actuator, readout: run.readout, precomputed};
  }

  update(start = performance.now()) {
    const result = this.compute();
    this.result = result;
    this.draw(result);
    this.latencies.push(performance.now() - start);
    if (this.latencies.length > 500) this.latencies.shift();
    this.drawn += 1;
    this.root.dataset.drawn = String(this.drawn);
    this.scheduleUrl();
  }

  draw({run, actuator, readout, precomputed}) {
    const cfg = this.config, c = this.colors, v = this.values;
    const e = actuator.kind === 'remotized PD' ? actuator.table[0][1] : actuator.forcerange;
    this.torqueAxes(pc.panelTorqueTop(e, cfg.tauG, cfg.torqueSteps));
    const top = this.top;
    for (const [name, label] of Object.entries(this.inputs).map(([n, x]) => [n, x.label])) {
      const only = ONLY_FOR[name];
      label.classList.toggle('pl-off', Boolean(only) && !only.includes(v.model));
      if (only) label.title = `used by ${only.join(' and ')} only`;
    }

    // the step response
    const p = this.step, g = p.layer('trace');
    if (run.chaotic) {
      const say = p.text(g, 'chaotic limit cycle: no single trace is stored', p.x(cfg.duration / 2), p.y(45),
                         {'text-anchor': 'middle', 'font-size': 13, fill: 'currentColor'});
      halo(say);
    } else if (precomputed) {
      p.band(g, run.q, cfg.duration, c.response);
    } else {
      const [xs, ys] = p.columns(run.q.length, (i) => run.t[i],
                                 (i) => Math.max(Q_CLIP[0], Math.min(Q_CLIP[1], degrees(run.q[i]))));
      p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
    }
    const marks = p.layer('top-marks');
    const diverged = run.diverged;
    if (diverged) {
      const flag = p.text(marks, 'diverged', p.x(cfg.duration / 2), p.y(65), {fill: c.diverged, 'font-size': 24,
                          'font-weight': 'bold', 'text-anchor': 'middle'});
      halo(flag);
    }
    const words = p.text(marks, readout, p.w - p.m.r - 6, p.h - p.m.b - 8, {'text-anchor': 'end', 'font-size': 12,
                         fill: diverged ? c.diverged : 'currentColor'});
    halo(words);
    p.titleNode.textContent = precomputed ? 'step response (precomputed)' : 'step response';
    this.readoutNode.textContent = readout;
    this.readoutNode.classList.toggle('pl-bad', diverged);

    // the applied torque and the limits that clip it; the path in the torque-speed plane and the allowed band
    const clipTau = (x) => Math.max(-2 * top, Math.min(2 * top, Number.isFinite(x) ? x : 0));
    const tg = this.torque.layer('trace'), limits = this.torque.layer('limits');
    const pg = this.plane.layer('path'), bandLayer = this.plane.layer('band');
    const dot = {stroke: c.bound, 'stroke-width': 1, 'stroke-dasharray': '2 3'};
    let tLim = [], qLim = [], vLim = [], qEnd = 0;
    if (run.chaotic) {
      // nothing stored to draw: the limits and the band alone
    } else if (precomputed) {
      this.torque.band(tg, run.torque, cfg.duration, c.response);
      this.plane.path(pg, run.path[0].map((x) => Math.max(-40, Math.min(40, x))), run.path[1].map(clipTau),
                      {stroke: c.response, 'stroke-width': 1});
      tLim = run.path[0].map((_, i) => i * run.pathDt);
      vLim = run.path[0];
      qLim = tLim.map(() => NaN);  // not stored: a precomputed remotized PD shows its band, not its limit in time
      qEnd = run.qEndDeg * Math.PI / 180;
    } else {
      const n = run.torque.length;
      const [xs, ys] = this.torque.columns(n, (i) => run.t[i], (i) => clipTau(run.torque[i]));
      this.torque.path(tg, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
      const stride = Math.max(1, Math.ceil(n / 1500));  // a few points per pixel are enough for a scatter of a path
      const vs = [], ts = [];
      for (let i = 0; i < n; i += stride) {
        vs.push(Math.max(-40, Math.min(40, run.v[i])));
        ts.push(clipTau(run.torque[i]));
      }
      this.plane.path(pg, vs, ts, {stroke: c.response, 'stroke-width': 1});
      tLim = []; qLim = []; vLim = [];
      for (let i = 0; i < n; i += stride) { tLim.push(run.t[i]); qLim.push(run.q[i]); vLim.push(run.v[i]); }
      qEnd = run.q[n];
    }
    if (actuator.kind === 'DC motor' || actuator.kind === 'remotized PD') {
      // the limit follows the speed (DC motor) or the angle (remotized PD); the band at the run's last angle
      const lo = [], hi = [];
      tLim.forEach((_, i) => { const [a, b] = pc.limits(actuator, qLim[i], vLim[i]); lo.push(a); hi.push(b); });
      if (!(precomputed && actuator.kind === 'remotized PD')) {
        this.torque.path(limits, tLim, hi, dot);
        this.torque.path(limits, tLim, lo, dot);
      }
      const speeds = Array.from({length: 241}, (_, i) => -SPEED_AXIS + i * (2 * SPEED_AXIS / 240));
      const at = actuator.kind === 'remotized PD' ? qEnd : 0.0;
      const bands = speeds.map((s) => pc.limits(actuator, at, s));
      this.plane.path(bandLayer, [...speeds, ...speeds.slice().reverse(), speeds[0]],
                      [...bands.map((b) => b[1]), ...bands.map((b) => b[0]).reverse(), bands[0][1]],
                      {stroke: c.bound, 'stroke-width': 1.5});
    } else if (Number.isFinite(e)) {
      this.torque.path(limits, [0, cfg.duration], [e, e], dot);
      this.torque.path(limits, [0, cfg.duration], [-e, -e], dot);
      this.plane.path(bandLayer, [-SPEED_AXIS, SPEED_AXIS, SPEED_AXIS, -SPEED_AXIS, -SPEED_AXIS], [e, e, -e, -e, e],
                      {stroke: c.bound, 'stroke-width': 1.5});
    }

    const model = `${v.model}, ${v.integrator}, h = ${(v.timestep * 1e3).toFixed(2)} ms`;
    this.status.textContent = precomputed
      ? `discrete: precomputed (not in MuJoCo ${this.version})`
      : `MuJoCo ${this.version} (WebAssembly) in this page: ${model}`;
    const s = cfg.step;
    let note = `Command ${degrees(s.low).toFixed(0)}° → ${degrees(s.high).toFixed(0)}° at ${s.at} s, sent at ` +
      `${cfg.controlRate} Hz and held between ticks; the explicit models compute their torque every physics step. ` +
      `DC motor: stall torque ${cfg.constants.dcSaturation} N·m. Remotized PD: limit E hanging, ` +
      `${cfg.constants.remotizedShare}·E at horizontal. `;
    if (precomputed) {
      note += `Precomputed by physai (MuJoCo ${cfg.pythonMujoco}): the browser's MuJoCo ${this.version} has no ` +
        `discrete integrator; nearest run ${v.model}, kp ${precomputed.kp}, ` +
        `h ${(precomputed.timestep * 1e3).toFixed(2)} ms, kv ${precomputed.kv}, E ${precomputed.forcerange} N·m, ` +
        `V ${precomputed.velocity_limit} rad/s, delay ${precomputed.delay} steps, armature ${precomputed.armature}.`;
    } else {
      note += `Everything is simulated by MuJoCo ${this.version} in this page.`;
    }
    this.note.textContent = note;
    this.note.classList.toggle('pl-fallback', Boolean(precomputed));
  }
}

// a white (dark in dark mode) outline behind a text drawn over data
function halo(node) {
  node.setAttribute('paint-order', 'stroke');
  node.setAttribute('class', 'pl-halo');
  return node;
}

