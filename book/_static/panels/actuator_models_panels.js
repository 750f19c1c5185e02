// Chapter 2's page panel (physai.interface.actuator_models_panels: actuator_spec, forcerange_twin; web.pendulum_live):
// the pendulum under each actuator model, its step response, the applied torque with the limits that clip it, and
// its path in the torque-speed plane. A run takes a few milliseconds, so every input reruns it on the page.
import {Model} from './engine.js';
import {degrees, forceLimits, reverses, stepMetrics, unpack} from './laws.js';
import {pendulumRun} from './runs.js';
import {Panel} from './ui.js';

// physai.interface.actuator_models_panels.panel_actuator: the config the controls describe. An effort limit of
// noLimit or more means none (the DC motor keeps it as its cap, the remotized PD as its table's first value); the
// remotized PD's table is ((0, E), (π/2, share·E)), and it takes the delay too.
export function panelActuator({model, kp, kv, forcerange, velocity_limit: velocityLimit, delay}, constants) {
  const d = Math.round(delay);
  if (model === 'remotized PD') {
    return {kind: model, explicit: true, kp, kv, forcerange: Infinity, delay: d,
            table: [[0.0, forcerange], [Math.PI / 2, constants.remotizedShare * forcerange]]};
  }
  const e = forcerange >= constants.noLimit && model !== 'DC motor' ? Infinity : forcerange;
  if (model === 'implicit') return {kind: model, explicit: false, kp, kv, forcerange: e, delay: 0};
  if (model === 'ideal PD') return {kind: model, explicit: true, kp, kv, forcerange: e, delay: 0};
  if (model === 'delayed PD') return {kind: model, explicit: true, kp, kv, forcerange: e, delay: d};
  if (model === 'DC motor') {
    return {kind: model, explicit: true, kp, kv, forcerange: e, delay: 0, saturationEffort: constants.dcSaturation,
            velocityLimit};
  }
  throw new Error(`model must be a model of physai.laws.drives, got ${model}`);
}

// physai.interface.actuator_models_panels.panel_torque_top: the torque axes' half-range for an effort limit
// (Infinity for none), a step of torqueSteps, 64 N·m without a limit.
export function panelTorqueTop(limit, {tauG, torqueSteps}) {
  if (!Number.isFinite(limit)) return 64.0;
  const need = 1.25 * Math.max(limit, tauG);
  return torqueSteps.find((top) => top >= need) ?? torqueSteps[torqueSteps.length - 1];
}

const effortOf = (actuator) => (actuator.kind === 'remotized PD' ? actuator.table[0][1] : actuator.forcerange);

// physai.interface.actuator_models_panels.panel_verdict: diverged, swinging, creeping or settled (k: the panel's
// constants)
export function panelVerdict(run, k) {
  const m = stepMetrics(run, k.step.at, {tail: k.tail, riseStart: k.riseStart});
  if (run.diverged || m.diverged) return 'diverged';
  if (m.p2pDeg > k.swingingP2pDeg) return reverses(run, k.tail) ? 'swinging' : 'creeping';
  return 'settled';
}

export default class PendulumPanel extends Panel {
  buildPlots(container) {
    this.container = container;
    super.buildPlots(container);
    this.top = this.spec.plots.find((p) => p.key === 'torque').ylim[1];
    this.drawFixed();
  }

  // the torque plots' axes, ±top N·m: made again only when the effort limit moves the scale to another step
  torqueAxes(top) {
    if (top === this.top) return;
    this.top = top;
    for (const key of ['torque', 'plane']) {
      const old = this.plots[key], fresh = old.remake({...old.spec, ylim: [-top, top]});
      if (old.svg.style.cssText) fresh.svg.style.cssText = old.svg.style.cssText;
      old.svg.replaceWith(fresh.svg);
      this.plots[key] = fresh;
    }
    this.drawFixed();
  }

  // what does not move: the command and the hold torque
  drawFixed() {
    const k = this.constants, c = this.colors, s = k.step;
    const step = this.plots.step;
    step.path(step.layer('command'), [0, s.at, s.at, k.duration], [s.low, s.low, s.high, s.high].map(degrees),
              {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    const torque = this.plots.torque;
    torque.path(torque.layer('tau-g'), [0, k.duration], [k.tauG, k.tauG],
                {stroke: c.sag, 'stroke-width': 1, 'stroke-dasharray': '5 4'});
  }

  // ---- the two sources of results

  decode(frame, values) {
    const stored = frame.run, k = this.constants;
    const actuator = panelActuator(values, k);
    if (stored.chaotic) return {chaotic: true, diverged: stored.diverged, readout: stored.readout, bad: true, actuator};
    const q = unpack(stored.q, k.steps.q).map((x) => x * Math.PI / 180);
    const run = {t: Float64Array.from(q, (_, i) => values.timestep * i), q: Float64Array.from(q),
                 v: Float64Array.from(unpack(stored.v, k.steps.v)), torque: Float64Array.from(unpack(stored.torque, k.steps.torque)),
                 diverged: stored.diverged};
    return {run, actuator, readout: stored.readout, diverged: stored.diverged, bad: stored.bad};
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
  }

  update(start = performance.now()) {
    const v = this.values, k = this.constants;
    const actuator = panelActuator(v, k);
    const run = pendulumRun(this.model, actuator, {armature: v.armature, timestep: v.timestep, integrator: v.integrator},
                            {duration: k.duration, step: k.step, controlRate: k.controlRate});
    const verdict = this.verdict(run);
    this.draw({run, actuator, readout: this.words(run, verdict), diverged: run.diverged,
               bad: verdict === 'diverged' || verdict === 'swinging'}, v);
    this.done(start, start);
  }

  verdict(run) {
    return panelVerdict(run, this.constants);
  }

  // physai.interface.actuator_models_panels.panel_readout: the verdict, in the description's words
  words(run, verdict = panelVerdict(run, this.constants)) {
    const k = this.constants, m = stepMetrics(run, k.step.at, {tail: k.tail, riseStart: k.riseStart});
    if (verdict === 'diverged') return this.say('diverged', {t: run.t[run.t.length - 1]});
    if (verdict === 'swinging') return this.say('swinging', {p2p: m.p2pDeg});
    if (verdict === 'creeping') return this.say('creeping', {p2p: m.p2pDeg, tail: k.tail});
    const rise = Number.isFinite(m.riseMs) ? this.say('rise', {rise_ms: m.riseMs}) : this.say('no_rise', {});
    return this.say('settled', {error: m.errorDeg, rise});
  }

  // ---- the picture

  // `bad` (physai.interface.actuator_models_panels.BAD_VERDICTS): the run diverged, swings, or is a stored chaotic one
  draw({run, actuator, readout, diverged, bad, chaotic = false}, values) {
    const k = this.constants, c = this.colors, e = effortOf(actuator);
    this.torqueAxes(panelTorqueTop(e, k));
    const top = this.top, clipTau = (x) => Math.max(-2 * top, Math.min(2 * top, Number.isFinite(x) ? x : 0));
    for (const [name, only] of Object.entries(k.onlyFor)) {
      const label = this.inputs[name].label;
      label.classList.toggle('pl-off', !only.includes(values.model));
      label.title = this.say('used_by', {models: only.join(' and ')});
    }
    // the step response
    const p = this.plots.step, g = p.layer('trace'), marks = p.layer('top-marks');
    if (chaotic) {
      p.say(g, this.say('chaotic', {}), p.x(k.duration / 2), p.y(45), {'text-anchor': 'middle', 'font-size': 13});
    } else {
      const [xs, ys] = p.columns(run.q.length, (i) => run.t[i], (i) => Math.max(-30, Math.min(160, degrees(run.q[i]))));
      p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
    }
    // the verdict where it covers the least of the trace: a diverged run's flag, then the readout's words
    const avoid = [];
    if (diverged) {
      const flag = this.verdictText(p, marks, this.say('flag', {}), true, {places: ['c', 'uc', 'lc'], attrs: {'font-size': 24}});
      if (flag) avoid.push(flag.box);
    }
    this.verdictText(p, marks, readout, bad, {places: ['lr', 'ur', 'll', 'ul'], avoid});
    this.setReadout(readout, bad);
    // the applied torque and the limits that clip it; the path in the torque-speed plane and the allowed band
    const torque = this.plots.torque, plane = this.plots.plane;
    const tg = torque.layer('trace'), limits = torque.layer('limits'), pg = plane.layer('path'), band = plane.layer('band');
    const dot = {stroke: c.bound, 'stroke-width': 1, 'stroke-dasharray': '2 3'};
    let qEnd = 0;
    const tLim = [], qLim = [], vLim = [];
    if (!chaotic) {
      const n = run.torque.length;
      const [xs, ys] = torque.columns(n, (i) => run.t[i], (i) => clipTau(run.torque[i]));
      torque.path(tg, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
      const stride = Math.max(1, Math.ceil(n / 1500));   // a few points per pixel are enough for a path
      const vs = [], ts = [];
      for (let i = 0; i < n; i += stride) {
        vs.push(Math.max(-40, Math.min(40, run.v[i])));
        ts.push(clipTau(run.torque[i]));
        tLim.push(run.t[i]); qLim.push(run.q[i]); vLim.push(run.v[i]);
      }
      plane.path(pg, vs, ts, {stroke: c.response, 'stroke-width': 1});
      qEnd = run.q[n];
    }
    const w = k.speedAxis;
    if (actuator.kind === 'DC motor' || actuator.kind === 'remotized PD') {
      // the limit follows the speed (DC motor) or the angle (remotized PD); the band at the run's last angle
      const lo = [], hi = [];
      tLim.forEach((_, i) => { const [a, b] = forceLimits(actuator, qLim[i], vLim[i]); lo.push(a); hi.push(b); });
      torque.path(limits, tLim, hi, dot);
      torque.path(limits, tLim, lo, dot);
      const speeds = Array.from({length: 241}, (_, i) => -w + i * (2 * w / 240));
      const at = actuator.kind === 'remotized PD' ? qEnd : 0.0;
      const bands = speeds.map((s) => forceLimits(actuator, at, s));
      plane.path(band, [...speeds, ...speeds.slice().reverse(), speeds[0]],
                 [...bands.map((b) => b[1]), ...bands.map((b) => b[0]).reverse(), bands[0][1]],
                 {stroke: c.bound, 'stroke-width': 1.5});
    } else if (Number.isFinite(e)) {
      torque.path(limits, [0, k.duration], [e, e], dot);
      torque.path(limits, [0, k.duration], [-e, -e], dot);
      plane.path(band, [-w, w, w, -w, -w], [e, e, -e, -e, e], {stroke: c.bound, 'stroke-width': 1.5});
    }
    if (this.mode === 'live') {
      this.status.textContent = this.liveStatus(`: ${this.say('status', {model: values.model, integrator: values.integrator,
                                                                        h_ms: values.timestep * 1e3})}`);
    }
  }
}
