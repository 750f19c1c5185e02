// The live panels' physics in the reader's browser: MuJoCo's WebAssembly build (mujoco-js, MuJoCo 3.3.8) running
// the model physai wrote, and the figures physai reads off a run, ported line by line from Python:
//   diverged        physai.engine.mj.diverged        (MuJoCo's blow-up warnings, non-finite or |q| > 20π)
//   summarize       physai.engine.link.summarize     (sag, 10-90 % rise, peak-to-peak, settled)
//   unstable        physai.experiments.position_actuators.unstable   (the stability map's verdict)
//   readout         physai.interface.plots.readout   (diverged / never settles / sag / rise)
// No DOM here: the page (physai-live.js), its worker (physai-live-worker.js) and Node (the tests) share it.

export const DIVERGED_BOUND = 20 * Math.PI;   // rad, physai.laws.sim.DIVERGED_BOUND
export const SETTLE_WINDOW = 0.5;             // s
export const SETTLED_P2P_DEG = 0.05;          // degrees
export const STILL_RAD = 1e-9;                // rad
export const CREEP_SHARE = 0.01;
export const RISE_START = 0.1;
export const MAX_STEPS = 1000000;             // physai.engine.mj.MAX_STEPS
export const WARNING_EVERY = 100;             // steps between two reads of the bad-acceleration counter

const RAD_TO_DEG = 180 / Math.PI;             // math.degrees(x) is x * (180 / pi)
export const degrees = (x) => x * RAD_TO_DEG;

// ---------------------------------------------------------------------------------------------------------------
// Python's arithmetic where JavaScript's differs

// round() of Python: halves to even.
export function pyRound(x) {
  const r = Math.round(x);
  return (Math.abs(x % 1) === 0.5 && r % 2 !== 0) ? r - 1 : r;
}

// numpy's float64 sum of a contiguous array (pairwise summation, blocks of 128 unrolled by 8), so means agree bit
// for bit with np.mean.
export function npSum(a, lo = 0, hi = a.length) {
  const n = hi - lo;
  if (n < 8) {
    let s = -0;
    for (let i = lo; i < hi; i++) s += a[i];
    return s;
  }
  if (n <= 128) {
    const r = [a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]];
    let i = lo + 8;
    for (; i < hi - (n % 8); i += 8) {
      for (let j = 0; j < 8; j++) r[j] += a[i + j];
    }
    let s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < hi; i++) s += a[i];
    return s;
  }
  let n2 = Math.floor(n / 2);
  n2 -= n2 % 8;
  return npSum(a, lo, lo + n2) + npSum(a, lo + n2, hi);
}

// format(x, '.Ng') and format(x, '.Nf') of Python (ties, which are rare, may round the other way).
export function pyFormat(x, spec) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : (x > 0 ? 'inf' : '-inf');
  const m = /^\.(\d+)([fg])$/.exec(spec);
  if (!m) throw new Error(`pyFormat: unsupported spec ${spec}`);
  const p = Number(m[1]);
  if (m[2] === 'f') return x.toFixed(p);
  const digits = Math.max(p, 1);
  if (x === 0) return (Object.is(x, -0) ? '-' : '') + '0';
  const exp = Number(x.toExponential(digits - 1).split('e')[1]);
  if (exp >= -4 && exp < digits) {
    return stripZeros(x.toFixed(digits - 1 - exp));
  }
  const [mant, e] = x.toExponential(digits - 1).split('e');
  const sign = e[0] === '-' ? '-' : '+';
  const mag = e.replace(/^[+-]/, '').padStart(2, '0');
  return `${stripZeros(mant)}e${sign}${mag}`;
}

function stripZeros(s) {
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

// ---------------------------------------------------------------------------------------------------------------
// The model

export const INTEGRATORS = ['Euler', 'RK4', 'implicit', 'implicitfast'];   // MuJoCo 3.3.8's (no 'discrete')

// physai.laws.sim.kv_from_dampratio: kv = 2 ζ sqrt(kp) sqrt(I) (two roots, as there).
export function kvFromDampratio(kp, dampratio, inertia) {
  return 2.0 * dampratio * Math.sqrt(kp) * Math.sqrt(inertia);
}

// One compiled model and its data, from the XML physai wrote (physai.interface.web).
// MuJoCo resets a run whose position, velocity or acceleration went bad, and zeroes the controls of a step whose
// control went bad, counting one of these warnings (physai.engine.mj.BLOWUP_WARNINGS): their indices in
// data.warning (resetWarnings), and whether any counter of `data` is above zero (wasReset).
export const resetWarnings = (mujoco) => ['BADQPOS', 'BADQVEL', 'BADQACC', 'BADCTRL'].map(
  (w) => mujoco.mjtWarning[`mjWARN_${w}`].value);

export function wasReset(data, indices) {
  const warnings = data.warning;
  let count = 0;
  for (const index of indices) {
    const stat = warnings.get(index);
    count += stat.number;
    stat.delete?.();
  }
  warnings.delete?.();
  return count > 0;
}

export class Link {
  constructor(mujoco, xml, name = 'physai-link') {
    this.mujoco = mujoco;
    const path = `/${name}.xml`;
    mujoco.FS.writeFile(path, xml);
    this.model = mujoco.MjModel.loadFromXML(path);
    this.data = new mujoco.MjData(this.model);
    this.resetWarnings = resetWarnings(mujoco);
    this.integrators = Object.fromEntries(INTEGRATORS.map(
      (name) => [name, mujoco.mjtIntegrator[`mjINT_${name.toUpperCase()}`].value]));
  }

  // physai.engine.link.link_model / step_responses: <position kp kv>, armature, timestep, integrator; then the
  // constants that follow armature (mj_setConst). Typed views are re-read on every call: they go stale when
  // MuJoCo's heap grows.
  configure({kp, kv, armature, timestep, integrator}) {
    const m = this.model;
    if (!(integrator in this.integrators)) {
      throw new Error(`integrator must be one of ${INTEGRATORS.join(', ')}, got ${integrator}`);
    }
    m.actuator_gainprm[0] = kp;
    const bias = m.actuator_biasprm;
    bias[0] = 0.0;
    bias[1] = -kp;
    bias[2] = -kv;
    m.dof_armature[0] = armature;
    const opt = m.opt;
    opt.timestep = timestep;
    opt.integrator = this.integrators[integrator];
    opt.delete?.();
    this.mujoco.mj_setConst(m, this.data);
  }

  // Whether MuJoCo has reset the run since mj_resetData: any of its bad-position, -velocity or -acceleration
  // counters above zero.
  wasReset() {
    return wasReset(this.data, this.resetWarnings);
  }

  // The run from rest at q0 (command 0), `steps` steps: q (steps + 1 angles, rad) and whether MuJoCo reset it.
  // The warning counters are read every WARNING_EVERY steps (reading them every step makes a run several times
  // slower); when one has risen, the chunk is replayed from its saved start one step at a time to find the step
  // that raised it, and the record ends just before that step, like physai's batch record (valid_length).
  run(q0, steps) {
    const {mujoco, model: m, data: d} = this;
    mujoco.mj_resetData(m, d);
    d.qpos[0] = q0;
    mujoco.mj_forward(m, d);
    const q = new Float64Array(steps + 1);
    q[0] = d.qpos[0];
    let k = 0;
    while (k < steps) {
      const chunk = Math.min(WARNING_EVERY, steps - k);
      const start = {qpos: d.qpos[0], qvel: d.qvel[0], time: d.time, act: null};
      let qpos = d.qpos;
      for (let i = 1; i <= chunk; i++) {
        mujoco.mj_step(m, d);
        if (qpos.length === 0) qpos = d.qpos;   // the heap grew: a fresh view
        q[k + i] = qpos[0];
      }
      if (this.wasReset()) {
        mujoco.mj_resetData(m, d);
        d.qpos[0] = start.qpos;
        d.qvel[0] = start.qvel;
        d.time = start.time;
        for (let i = 1; i <= chunk; i++) {
          mujoco.mj_step(m, d);
          if (this.wasReset()) return {q: q.slice(0, k + i), badQacc: true};
          q[k + i] = d.qpos[0];
        }
        // replayed without the warning: the state is what the first pass reached; keep the first pass's flag
        return {q: q.slice(0, k + chunk + 1), badQacc: true};
      }
      k += chunk;
    }
    return {q, badQacc: false};
  }

  delete() {
    this.data.delete?.();
    this.model.delete?.();
  }
}

// The panel's servo: ServoParams(kp, armature, timestep, integrator, dampratio) with kv resolved from dampratio.
export function servoParams({kp, armature, timestep, integrator, dampratio}, linkInertia) {
  return {kp, armature, timestep, integrator, dampratio,
          kv: kvFromDampratio(kp, dampratio, linkInertia + armature)};
}

// physai.engine.link.step_responses for one run: steps = max(1, round(duration / h)).
export function stepResponse(link, params, {q0 = -0.5, duration = 3.0} = {}) {
  const steps = Math.max(1, pyRound(duration / params.timestep));
  if (steps > MAX_STEPS) {
    throw new Error(`duration / timestep must be at most ${MAX_STEPS} steps, got ${steps}`);
  }
  link.configure(params);
  const {q, badQacc} = link.run(q0, steps);
  return summarize(params.timestep, q, badQacc);
}

// ---------------------------------------------------------------------------------------------------------------
// What a run measured

// physai.engine.mj.diverged for joint angles.
export function diverged(q, warned) {
  if (warned) return true;
  for (let i = 0; i < q.length; i++) {
    if (!Number.isFinite(q[i]) || Math.abs(q[i]) > DIVERGED_BOUND) return true;
  }
  return false;
}

// physai.engine.link.crossing_time: when x first reaches level, linear between samples; time(i) is sample i's.
export function crossingTime(time, x, level) {
  let k = -1;
  for (let i = 0; i < x.length; i++) {
    if (x[i] >= level) { k = i; break; }
  }
  if (k < 0) return NaN;
  if (k === 0) return time(0);
  const frac = (level - x[k - 1]) / (x[k] - x[k - 1]);
  const t0 = time(k - 1);
  return t0 + frac * (time(k) - t0);
}

// physai.engine.link.rise_window: (t10, t90), s, of q going from q[0] to qFinal; time(i) is sample i's.
export function riseWindow(time, q, qFinal) {
  const span = qFinal - q[0];
  if (span === 0 || !Number.isFinite(span)) return [NaN, NaN];
  const progress = new Float64Array(q.length);
  for (let i = 0; i < q.length; i++) progress[i] = (q[i] - q[0]) / span;
  return [crossingTime(time, progress, 0.1), crossingTime(time, progress, 0.9)];
}

// physai.engine.link.summarize: t = h * arange(n), command u.
export function summarize(h, q, badQacc, u = 0.0) {
  const n = q.length;
  const tEnd = h * (n - 1);
  const isDiverged = diverged(q, badQacc);
  const result = {h, q, sagDeg: NaN, riseMs: NaN, p2pDeg: NaN, diverged: isDiverged, riseWindow: [NaN, NaN]};
  if (isDiverged || tEnd <= SETTLE_WINDOW) return result;
  const from = tEnd - SETTLE_WINDOW + 1e-12;
  let first = 0;
  while (h * first < from) first++;
  const qFinal = npSum(q, first, n) / (n - first);
  let lo = Infinity, hi = -Infinity;
  for (let i = first; i < n; i++) { lo = Math.min(lo, q[i]); hi = Math.max(hi, q[i]); }
  const p2p = hi - lo;
  let travel = 0;
  for (let i = 0; i < n; i++) travel = Math.max(travel, Math.abs(q[i] - q[0]));
  const atRest = degrees(p2p) <= SETTLED_P2P_DEG && (p2p <= STILL_RAD || p2p <= CREEP_SHARE * travel);
  result.p2pDeg = degrees(p2p);
  if (!atRest) return result;
  let way = -Infinity;
  if (u !== q[0]) {
    for (let i = 0; i < n; i++) way = Math.max(way, (q[i] - q[0]) / (u - q[0]));
  } else {
    way = 0;
  }
  const window = way >= RISE_START ? riseWindow((i) => h * i, q, qFinal) : [NaN, NaN];
  result.sagDeg = degrees(u - qFinal);
  result.riseMs = 1e3 * (window[1] - window[0]);
  result.riseWindow = window;
  result.qFinal = qFinal;
  return result;
}

export const settled = (r) => !r.diverged && Number.isFinite(r.sagDeg);

// physai.experiments.position_actuators.unstable: diverged, or still wider than 1.5 |q0| over the last sixth.
export function unstable(r, q0) {
  if (r.diverged) return true;
  const n = r.q.length;
  const start = n + Math.floor(-n / 6);
  let top = 0;
  for (let i = Math.max(start, 0); i < n; i++) top = Math.max(top, Math.abs(r.q[i]));
  return top > 1.5 * Math.abs(q0);
}

// physai.interface.plots.readout.
export function readout(r) {
  if (r.diverged) return 'diverged';
  if (!settled(r)) return `never settles, swing ${pyFormat(r.p2pDeg, '.2g')}° p2p`;
  const rise = Number.isFinite(r.riseMs) ? `${pyFormat(r.riseMs, '.1f')} ms` : 'n/a';
  return `sag ${pyFormat(r.sagDeg, '.3f')}°   rise ${rise}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Precomputed traces, packed by physai.interface.web.pack

const PACK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// physai.interface.web.unpack: the values (null where missing) in whole steps.
export function unpack(text, step) {
  const out = [];
  let k = 0, i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '-') { out.push(null); i += 1; continue; }
    let z = 0;
    if (c === '_') {
      const end = text.indexOf('.', i);
      for (const ch of text.slice(i + 1, end)) z = 62 * z + PACK_DIGITS.indexOf(ch);
      i = end + 1;
    } else {
      z = PACK_DIGITS.indexOf(c);
      i += 1;
    }
    k += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    out.push(k * step);
  }
  return out;
}
