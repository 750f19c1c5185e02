// Chapter 2's pendulum in the reader's browser: MuJoCo's WebAssembly build (mujoco-js, MuJoCo 3.3.8) running the
// pendulum physai wrote, under each actuator model, with the force laws and figures ported line by line from Python:
//   pdTorque, dcMotorEnvelope, remotizedLimit, delayCommands   physai.laws.drives
//   torqueLaw                                                  physai.engine.pendulum._scalar_law
//   decimation, heldCommands, Pendulum.run                     physai.engine.pendulum (simulate, one run)
//   panelActuator, panelTorqueTop, panelReadout                physai.interface.actuator_models_panels
//   stepMetrics                                                physai.experiments.actuator_models.step_metrics
// The laws use no transcendental function (only +, -, *, /, min, max), so they agree with Python bit for bit.
// No DOM here: the page (physai-live-pendulum.js) and Node (the tests) share it.
import {degrees, npSum, pyFormat, pyRound, riseWindow} from './physai-live-core.js';

export const SPEED_BOUND = 1e3;        // rad/s, physai.engine.mj.SPEED_BOUND
export const MAX_STEPS = 1000000;      // physai.engine.mj.MAX_STEPS
export const TAIL = 0.5;               // s, physai.experiments.actuator_models.TAIL
export const RISE_START = 0.1;         // physai.engine.link.RISE_START
export const SWINGING_P2P_DEG = 0.05;  // degrees, physai.interface.plots.SWINGING_P2P_DEG
export const WARNING_EVERY = 100;      // steps between two reads of the bad-acceleration counter
export const MODELS = ['implicit', 'ideal PD', 'DC motor', 'delayed PD', 'remotized PD'];

// Python's min(a, b) and max(a, b): the first argument unless the second is strictly smaller (larger), which is
// not what Math.min and Math.max do with -0 and +0.
export const pyMin = (a, b) => (b < a ? b : a);
export const pyMax = (a, b) => (b > a ? b : a);
// numpy's minimum and maximum: NaN wins.
const npMinimum = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.min(a, b));
const npMaximum = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? NaN : Math.max(a, b));
const npClip = (x, lo, hi) => npMinimum(npMaximum(x, lo), hi);

// ---------------------------------------------------------------------------------------------------------------
// The force laws (physai.laws.drives), for one value; the tests run them on a grid against Python's

// kp*(q* - q) + kv*(qd* - qd) + tau_ff, N·m, unclipped.
export function pdTorque(qTarget, q, vTarget, v, kp, kv, tauFf = 0.0) {
  return kp * (qTarget - q) + kv * (vTarget - v) + tauFf;
}

// The DC motor's band at joint velocity v: [tau_min, tau_max], N·m (v clipped to ±V(1 + E/S) first).
export function dcMotorEnvelope(v, {saturationEffort: s, forcerange: e, velocityLimit: vmax}) {
  const bound = vmax * (1.0 + e / s);
  const vc = npClip(v, -bound, bound);
  return [npMaximum(s * (-1.0 - vc / vmax), -e), npMinimum(s * (1.0 - vc / vmax), e)];
}

// np.interp(q, angles, limits): linear between the table's points, its end values beyond them (numpy's own
// arithmetic, slope first, and its retry from the right end of the interval when the first try gives NaN).
export function remotizedLimit(q, table) {
  const n = table.length;
  if (Number.isNaN(q)) return NaN;
  if (q < table[0][0]) return table[0][1];
  if (q > table[n - 1][0]) return table[n - 1][1];
  let j = 0;
  while (j < n - 1 && table[j + 1][0] <= q) j++;
  const [x0, y0] = table[j];
  if (j === n - 1 || x0 === q) return y0;
  const [x1, y1] = table[j + 1];
  const slope = (y1 - y0) / (x1 - x0);
  let y = slope * (q - x0) + y0;
  if (Number.isNaN(y)) {
    y = slope * (q - x1) + y1;
    if (Number.isNaN(y) && y0 === y1) y = y0;
  }
  return y;
}

// The command a delayed actuator sees at step k: the command of step max(k - delay, 0).
export const delayedIndex = (k, delay) => Math.max(k - delay, 0);

// The clipped torque law of one actuator (physai.engine.pendulum._scalar_law): law(q, qd, q*, qd*, tau_ff), N·m.
export function torqueLaw(actuator) {
  const {kp, kv, forcerange: e} = actuator;
  if (actuator.kind === 'remotized PD') {
    const table = actuator.table;
    return (q, v, qT, vT, ff) => {
      const limit = remotizedLimit(q, table);
      return pyMin(pyMax(kp * (qT - q) + kv * (vT - v) + ff, -limit), limit);
    };
  }
  if (actuator.kind === 'DC motor') {
    const s = actuator.saturationEffort, vmax = actuator.velocityLimit;
    const bound = vmax * (1.0 + e / s);
    return (q, v, qT, vT, ff) => {
      const vc = pyMin(pyMax(v, -bound), bound);
      const high = pyMin(s * (1.0 - vc / vmax), e);
      const low = pyMax(s * (-1.0 - vc / vmax), -e);
      return pyMin(pyMax(kp * (qT - q) + kv * (vT - v) + ff, low), high);
    };
  }
  return (q, v, qT, vT, ff) => pyMin(pyMax(kp * (qT - q) + kv * (vT - v) + ff, -e), e);
}

// The torque band an actuator allows at angle q and velocity v, [low, high], N·m (the limits() of each config).
export function limits(actuator, q, v) {
  if (actuator.kind === 'DC motor') return dcMotorEnvelope(v, actuator);
  if (actuator.kind === 'remotized PD') {
    const limit = remotizedLimit(q, actuator.table);
    return [-limit, limit];
  }
  return [-actuator.forcerange, actuator.forcerange];
}

// ---------------------------------------------------------------------------------------------------------------
// The panel's controls as an actuator (physai.interface.actuator_models_panels.panel_actuator)

// constants: {noLimit, remotizedShare, dcSaturation} from the page's configuration (physai's values).
export function panelActuator({model, kp, kv, forcerange, velocityLimit, delay}, constants) {
  const d = pyRound(delay);
  if (model === 'remotized PD') {
    return {kind: model, explicit: true, kp, kv, forcerange: Infinity, delay: d,
            table: [[0.0, forcerange], [Math.PI / 2, constants.remotizedShare * forcerange]]};
  }
  let e = forcerange;
  if (e >= constants.noLimit && model !== 'DC motor') e = Infinity;
  if (model === 'implicit') return {kind: model, explicit: false, kp, kv, forcerange: e, delay: 0};
  if (model === 'ideal PD') return {kind: model, explicit: true, kp, kv, forcerange: e, delay: 0};
  if (model === 'DC motor') {
    return {kind: model, explicit: true, kp, kv, forcerange: e, delay: 0,
            saturationEffort: constants.dcSaturation, velocityLimit};
  }
  if (model === 'delayed PD') return {kind: model, explicit: true, kp, kv, forcerange: e, delay: d};
  throw new Error(`model must be one of ${MODELS.join(', ')}, got ${model}`);
}

// The torque axes' half-range for an effort limit (Infinity for none): the smallest step that shows
// 1.25 max(E, tau_g), 64 N·m without a limit.
export function panelTorqueTop(limit, tauG, steps) {
  if (!Number.isFinite(limit)) return 64.0;
  const need = 1.25 * Math.max(limit, tauG);
  return steps.find((top) => top >= need) ?? steps[steps.length - 1];
}

// ---------------------------------------------------------------------------------------------------------------
// The commands: a step sampled at the control ticks and held in between

// max(1, round(1 / (control_rate * timestep))) physics steps per control tick.
export const decimation = (controlRate, timestep) => Math.max(1, pyRound(1.0 / (controlRate * timestep)));

// The position command of each of nstep physics steps: step(t_tick), t_tick = h*decimation*floor(k/decimation).
export function heldCommands({at, low, high}, controlRate, timestep, nstep) {
  const dec = decimation(controlRate, timestep);
  const hd = timestep * dec;
  const out = new Float64Array(nstep);
  for (let k = 0; k < nstep; k++) out[k] = hd * Math.floor(k / dec) >= at - 1e-12 ? high : low;
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The pendulum on MuJoCo

export const INTEGRATORS = ['Euler', 'RK4', 'implicit', 'implicitfast'];   // MuJoCo 3.3.8's (no 'discrete')

export class Pendulum {
  constructor(mujoco, xml, name = 'physai-pendulum') {
    this.mujoco = mujoco;
    const path = `/${name}.xml`;
    mujoco.FS.writeFile(path, xml);
    this.model = mujoco.MjModel.loadFromXML(path);
    this.data = new mujoco.MjData(this.model);
    this.badQacc = mujoco.mjtWarning.mjWARN_BADQACC.value;
    this.integrators = Object.fromEntries(INTEGRATORS.map(
      (n) => [n, mujoco.mjtIntegrator[`mjINT_${n.toUpperCase()}`].value]));
  }

  // physai.engine.pendulum.pendulum_model: an implicit actuator becomes <position kp kv forcerange>, an explicit
  // one a <motor> (gain 1, no bias, no clamp) whose ctrl is the torque; then armature, timestep, integrator and
  // the constants that follow armature (mj_setConst).
  configure(actuator, {armature, timestep, integrator}) {
    const m = this.model;
    if (!(integrator in this.integrators)) {
      throw new Error(`integrator must be one of ${INTEGRATORS.join(', ')}, got ${integrator}`);
    }
    const gain = m.actuator_gainprm, bias = m.actuator_biasprm;
    const limited = m.actuator_forcelimited, range = m.actuator_forcerange;
    if (!actuator.explicit) {
      gain[0] = actuator.kp;
      bias[0] = 0.0; bias[1] = -actuator.kp; bias[2] = -actuator.kv;
      if (Number.isFinite(actuator.forcerange)) {
        limited[0] = 1;
        range[0] = -actuator.forcerange; range[1] = actuator.forcerange;
      } else {
        limited[0] = 0;
      }
    } else {
      gain[0] = 1.0;
      bias[0] = 0.0; bias[1] = 0.0; bias[2] = 0.0;
      limited[0] = 0;
    }
    m.dof_damping[0] = 0.0;
    m.dof_frictionloss[0] = 0.0;
    const opt = m.opt;
    opt.timestep = timestep;
    opt.integrator = this.integrators[integrator];
    opt.delete?.();
    m.dof_armature[0] = armature;
    this.mujoco.mj_setConst(m, this.data);
  }

  warned() {
    const warnings = this.data.warning;
    const stat = warnings.get(this.badQacc);
    const n = stat.number;
    stat.delete?.();
    warnings.delete?.();
    return n > 0;
  }

  // One run from rest at q = 0 (physai.engine.pendulum.simulate for one actuator): the command held per physics
  // step, delayed for a delayed actuator; an explicit actuator's torque from the state at the start of every step.
  // Returns {t, q, v, torque, command, diverged}: q, v (n + 1), torque (n), as physai's Run. A run ends where
  // MuJoCo's bad-acceleration warning rose (before that step) or where |qd| passed SPEED_BOUND (after it).
  run(actuator, pendulum, {duration, step, controlRate}) {
    const nstep = Math.max(1, pyRound(duration / pendulum.timestep));
    if (nstep > MAX_STEPS) throw new Error(`duration / timestep must be at most ${MAX_STEPS} steps, got ${nstep}`);
    this.configure(actuator, pendulum);
    const commands = heldCommands(step, controlRate, pendulum.timestep, nstep);
    const law = actuator.explicit ? torqueLaw(actuator) : null;
    const delay = actuator.delay || 0;
    // MuJoCo 3.17's implicit integrators leave a clamped actuator out of the velocity derivative (its force is
    // then ±E whatever the velocity); 3.3.8 keeps kv in it. To run 3.17's physics, a step whose <position> force
    // will be clamped gets a constant actuator instead: gain 0, bias ±E, the same force with no derivative.
    const {kp, kv, forcerange: e} = actuator;
    const clampAsConstant = !law && Number.isFinite(e) && ['implicit', 'implicitfast'].includes(pendulum.integrator);
    const {mujoco, model: m, data: d} = this;
    const q = new Float64Array(nstep + 1), v = new Float64Array(nstep + 1), tau = new Float64Array(nstep);
    mujoco.mj_resetData(m, d);
    d.qpos[0] = 0.0;
    d.qvel[0] = 0.0;
    mujoco.mj_forward(m, d);
    q[0] = d.qpos[0];
    v[0] = d.qvel[0];
    let views = null;
    const fresh = () => {  // typed views onto MuJoCo's memory go stale when its heap grows
      if (!views || views.qpos.length === 0 || views.ctrl.length === 0 || views.force.length === 0
          || views.gain.length === 0) {
        views = {qpos: d.qpos, qvel: d.qvel, ctrl: d.ctrl, force: d.actuator_force, gain: m.actuator_gainprm,
                 bias: m.actuator_biasprm};
      }
      return views;
    };
    // step k; returns false when the speed ran away
    const advance = (k) => {
      let w = fresh();
      if (law) {
        tau[k] = law(q[k], v[k], commands[delayedIndex(k, delay)], 0.0, 0.0);
        w.ctrl[0] = tau[k];
      } else {
        w.ctrl[0] = commands[k];
        if (clampAsConstant) {
          // MuJoCo's force: gain*ctrl + (bias0 + bias1*q + bias2*qd), clamped to ±E
          const f = kp * commands[k] + (0.0 + -kp * q[k] + -kv * v[k]);
          const clamped = f > e || f < -e;
          w.gain[0] = clamped ? 0.0 : kp;
          w.bias[0] = clamped ? (f > 0 ? e : -e) : 0.0;
          w.bias[1] = clamped ? 0.0 : -kp;
          w.bias[2] = clamped ? 0.0 : -kv;
        }
      }
      mujoco.mj_step(m, d);
      w = fresh();
      q[k + 1] = w.qpos[0];
      v[k + 1] = w.qvel[0];
      if (!law) tau[k] = w.force[0];
      return Number.isFinite(v[k + 1]) && Math.abs(v[k + 1]) <= SPEED_BOUND;
    };
    const cut = (n, diverged) => ({t: times(pendulum.timestep, n), q: q.slice(0, n), v: v.slice(0, n),
                                   torque: tau.slice(0, n - 1), command: commands, diverged});
    let k = 0;
    while (k < nstep) {
      const chunk = Math.min(WARNING_EVERY, nstep - k);
      const start = {qpos: q[k], qvel: v[k], time: d.time};
      let end = k + chunk, runaway = false;
      for (let i = k; i < k + chunk; i++) {
        if (!advance(i)) { end = i + 1; runaway = true; break; }
      }
      if (this.warned()) {
        // replay the chunk from its start one step at a time to find the step that raised the warning
        mujoco.mj_resetData(m, d);
        d.qpos[0] = start.qpos;
        d.qvel[0] = start.qvel;
        d.time = start.time;
        for (let i = k; i < k + chunk; i++) {
          const ok = advance(i);
          if (this.warned()) return cut(i + 1, true);
          if (!ok) return cut(i + 2, true);
        }
        return cut(k + chunk + 1, true);
      }
      if (runaway) return cut(end + 1, true);
      k = end;
    }
    return cut(nstep + 1, false);
  }

  delete() {
    this.data.delete?.();
    this.model.delete?.();
  }
}

export function times(h, n) {
  const t = new Float64Array(n);
  for (let i = 0; i < n; i++) t[i] = h * i;
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// What a run measured

// physai.experiments.actuator_models.step_metrics (the figures the panel shows): errorDeg, riseMs, p2pDeg,
// diverged, and the rise window in s.
export function stepMetrics(run, at) {
  const {t, q} = run;
  const n = q.length;
  const bad = {errorDeg: NaN, riseMs: NaN, p2pDeg: NaN, diverged: true, riseWindow: [NaN, NaN], finalRad: NaN};
  if (run.diverged || t[n - 1] <= at) return bad;
  let first = 0;
  while (t[first] < at - 1e-9) first++;
  const ta = t.subarray(first), qa = q.subarray(first);
  const start = qa[0];
  let tail = 0;
  while (t[tail] < t[n - 1] - TAIL + 1e-9) tail++;
  const final = npSum(q, tail, n) / (n - tail);
  const move = final - start;
  const wanted = run.command[run.command.length - 1] - start;
  let window = [NaN, NaN];
  if (!(Math.abs(move) < RISE_START * Math.abs(wanted) || move === 0)) window = riseWindow((i) => ta[i], qa, final);
  let lo = Infinity, hi = -Infinity;
  for (let i = tail; i < n; i++) { lo = Math.min(lo, q[i]); hi = Math.max(hi, q[i]); }
  return {errorDeg: degrees(run.command[run.command.length - 1] - final), riseMs: 1e3 * (window[1] - window[0]),
          p2pDeg: degrees(hi - lo), diverged: false, riseWindow: window, finalRad: final};
}

// physai.interface.actuator_models_panels.panel_readout: the panel's one-line verdict.
export function panelReadout(run, metrics) {
  const {t, v} = run;
  const n = t.length;
  if (run.diverged || metrics.diverged) return `diverged after ${pyFormat(t[n - 1], '.3f')} s`;
  const p2p = metrics.p2pDeg;
  if (p2p > SWINGING_P2P_DEG) {
    const signs = [];
    for (let i = 0; i < n; i++) {
      if (t[i] >= t[n - 1] - TAIL + 1e-9 && v[i] !== 0) signs.push(Math.sign(v[i]));
    }
    let reverses = false;
    for (let i = 1; i < signs.length; i++) if (signs[i] !== signs[i - 1]) { reverses = true; break; }
    if (reverses) return `still swinging: ${pyFormat(p2p, '.3g')}° peak to peak   rise n/a`;
    return `still creeping: ${pyFormat(p2p, '.3g')}° in the last ${pyFormat(TAIL, '.1g')} s   rise n/a`;
  }
  const rise = metrics.riseMs;
  const riseText = Number.isFinite(rise) ? `${pyFormat(rise, '.0f')} ms` : 'n/a';
  return `settling error ${pyFormat(metrics.errorDeg, '.2f')}°   rise ${riseText}`;
}
