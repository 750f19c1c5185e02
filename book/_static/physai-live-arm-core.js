// Chapter 3's physics in the reader's browser: the SO-101 holding a pose, its PD in the control loop or in MuJoCo's
// step, on MuJoCo's WebAssembly build (mujoco-js, MuJoCo 3.3.8) and the geom-free arm physai wrote
// (physai.interface.web_arm.arm_xml). Ported line by line from Python:
//   Arm.configure    physai.engine.hold.shared_hold_model (PDController, set_position_servo, set_armature)
//   reference        physai.engine.hold.reference          (the minimum-jerk move to STANDBY, then hold)
//   tickMask         physai.laws.loop.tick_mask
//   holdRun          physai.engine.hold._hold_batch for one run (in-step: ctrl = position + kv*velocity/kp held
//                    per tick; in-loop: the clamped PD torque in qfrc_applied, held per tick)
//   summarizeHold    physai.engine.hold._summarize, chatterFrequency: chatter_frequency
//   tickPattern      physai.laws.loop.tick_pattern         (Fraction.limit_denominator(50), in BigInt)
//   growthCurve      physai.experiments.where_pd_runs.growth_curve (analytic growth per controller tick)
//   holdNote         physai.interface.where_pd_runs_panels.pd_note (the note pd_panel writes)
// MuJoCo 3.3.8 compiles the arm to Python 3.17.0's model bit for bit, but the runs agree only within a tolerance
// (the joints' friction loss is a constraint whose solvers differ between the versions): tests/test_web_arm.py.
// No DOM here: the page (physai-live-arm.js) and Node (tests/test_web_arm.py) share it.
import {DIVERGED_BOUND, npSum, pyFormat, pyRound, resetWarnings, wasReset} from './physai-live-core.js';

export const BACKENDS = ['in-loop', 'in-step'];
export const INTEGRATORS = ['Euler', 'RK4', 'implicit', 'implicitfast'];   // MuJoCo 3.3.8's (no 'discrete')
export const MAX_PATTERN_TICKS = 50;       // Fraction.limit_denominator(50) in tick_pattern
export const WARNING_EVERY = 100;          // steps between two reads of MuJoCo's warning counters
const NGAIN = 10, NBIAS = 10;              // mjNGAIN, mjNBIAS

// ---------------------------------------------------------------------------------------------------------------
// The arm and one hold run

export class Arm {
  // `hold` carries the experiment's constants from physai (physai.interface.web_arm.pd_config): standby, moveTime,
  // duration, settleWindow, quietP2P, joints.
  constructor(mujoco, xml, hold, name = 'physai-arm') {
    this.mujoco = mujoco;
    this.hold = hold;
    const path = `/${name}.xml`;
    mujoco.FS.writeFile(path, xml);
    this.model = mujoco.MjModel.loadFromXML(path);
    this.data = new mujoco.MjData(this.model);
    this.nq = this.model.nq;
    this.nu = this.model.nu;
    this.resetWarnings = resetWarnings(mujoco);
    this.integrators = Object.fromEntries(INTEGRATORS.map(
      (i) => [i, mujoco.mjtIntegrator[`mjINT_${i.toUpperCase()}`].value]));
    this.gainFixed = mujoco.mjtGain.mjGAIN_FIXED.value;
    this.biasAffine = mujoco.mjtBias.mjBIAS_AFFINE.value;
    this.ctrllimited0 = Array.from(this.model.actuator_ctrllimited);
    this.forcelimited0 = Array.from(this.model.actuator_forcelimited);
    this.forcerange0 = Array.from(this.model.actuator_forcerange);
  }

  // the physics step: its timestep (s), integrator (one of INTEGRATORS) and whether contacts are on
  setStep(timestep, integrator, {contacts = true} = {}) {
    if (!(integrator in this.integrators)) {
      throw new Error(`integrator must be one of ${INTEGRATORS.join(', ')}, got ${integrator}`);
    }
    const opt = this.model.opt;
    opt.timestep = timestep;
    opt.integrator = this.integrators[integrator];
    const off = this.mujoco.mjtDisableBit.mjDSBL_CONTACT.value;
    opt.disableflags = contacts ? opt.disableflags & ~off : opt.disableflags | off;
    opt.delete?.();
  }

  // physai.engine.mj.set_position_servo on every actuator: <position kp kv forcerange=±forcerange>
  setServos(kp, kv, forcerange) {
    const m = this.model;
    const gaintype = m.actuator_gaintype, biastype = m.actuator_biastype, gain = m.actuator_gainprm;
    const bias = m.actuator_biasprm, forcelimited = m.actuator_forcelimited, range = m.actuator_forcerange;
    for (let a = 0; a < this.nu; a++) {
      gaintype[a] = this.gainFixed;
      biastype[a] = this.biasAffine;
      gain[a * NGAIN] = kp;
      bias[a * NBIAS] = 0.0;
      bias[a * NBIAS + 1] = -kp;
      bias[a * NBIAS + 2] = -kv;
      forcelimited[a] = 1;
      range[2 * a] = -forcerange;
      range[2 * a + 1] = forcerange;
    }
  }

  // shared_hold_model: timestep and integrator; every actuator silenced (PDController), in-step then a
  // <position kp kv forcerange=±forcerange> servo without its ctrl range; armature on every dof; mj_setConst.
  configure({backend, kp, kv, armature, timestep, integrator, forcerange}) {
    const m = this.model;
    if (!BACKENDS.includes(backend)) throw new Error(`backend must be one of ${BACKENDS.join(', ')}, got ${backend}`);
    this.setStep(timestep, integrator);
    const gaintype = m.actuator_gaintype, biastype = m.actuator_biastype, gain = m.actuator_gainprm;
    const bias = m.actuator_biasprm, ctrllimited = m.actuator_ctrllimited;
    const forcelimited = m.actuator_forcelimited, range = m.actuator_forcerange;
    for (let a = 0; a < this.nu; a++) {
      gaintype[a] = this.gainFixed;
      biastype[a] = this.biasAffine;
      gain.fill(0, a * NGAIN, (a + 1) * NGAIN);
      bias.fill(0, a * NBIAS, (a + 1) * NBIAS);
      ctrllimited[a] = backend === 'in-step' ? 0 : this.ctrllimited0[a];
      forcelimited[a] = this.forcelimited0[a];
      range[2 * a] = this.forcerange0[2 * a];
      range[2 * a + 1] = this.forcerange0[2 * a + 1];
    }
    if (backend === 'in-step') this.setServos(kp, kv, forcerange);
    m.dof_armature.fill(armature);
    this.mujoco.mj_setConst(m, this.data);
  }

  warned() {
    return wasReset(this.data, this.resetWarnings);
  }

  delete() {
    this.data.delete?.();
    this.model.delete?.();
  }
}

// x**k of numpy for k = 3, 4, 5: numpy calls the C library's pow(), which rounds the exact power correctly (glibc);
// JavaScript's Math.pow does not always, so the power is carried in double-double (Dekker's exact product) and
// rounded once.
const SPLIT = 134217729;   // 2^27 + 1
function twoProduct(a, b) {
  const p = a * b;
  const ca = SPLIT * a, ah = ca - (ca - a), al = a - ah;
  const cb = SPLIT * b, bh = cb - (cb - b), bl = b - bh;
  return [p, ((ah * bh - p) + ah * bl + al * bh) + al * bl];
}

export function powInt(x, k) {
  let hi = x, lo = 0.0;
  for (let i = 1; i < k; i++) {
    const [p, e] = twoProduct(hi, x);
    const err = e + lo * x;
    hi = p + err;
    lo = err - (hi - p);
  }
  return hi;
}

// physai.engine.hold.reference at t (s): the position and velocity commands, each (n*6) row-major.
export function reference(t, standby, moveTime) {
  const n = t.length, nj = standby.length;
  const position = new Float64Array(n * nj), velocity = new Float64Array(n * nj);
  for (let k = 0; k < n; k++) {
    const s = Math.min(Math.max(t[k] / moveTime, 0.0), 1.0);
    const s2 = s * s, s3 = powInt(s, 3), s4 = powInt(s, 4), s5 = powInt(s, 5);   // numpy squares x**2
    const p = 10 * s3 - 15 * s4 + 6 * s5;
    const v = 30 * s2 - 60 * s3 + 30 * s4;
    for (let j = 0; j < nj; j++) {
      position[k * nj + j] = standby[j] * p;
      velocity[k * nj + j] = standby[j] * v / moveTime;
    }
  }
  return {position, velocity};
}

// physai.laws.loop.tick_mask: which of nstep physics steps start a controller tick.
export function tickMask(rateHz, timestep, nstep) {
  const mask = new Uint8Array(nstep);
  const per = timestep * rateHz;
  let before = 0;
  for (let k = 0; k < nstep; k++) {
    const count = Math.floor(k * per + 1e-9);
    mask[k] = k === 0 || count > before ? 1 : 0;
    before = count;
  }
  return mask;
}

// One hold run as a generator: each next() steps MuJoCo for about `sliceMs` milliseconds (the first `firstSliceMs`,
// so that a slider's first picture comes quickly; at least one tick each) and yields the progress {done: steps so
// far, nstep, run}. The record is in run.q ((nstep*nq), row k: the state after step k, as physai records it) up to
// run.steps, with the command in force in run.target. A run MuJoCo resets (bad position, velocity or acceleration)
// ends at the warning's chunk, flagged `warned`.
export function* holdRun(arm, params, {sliceMs = 30, firstSliceMs = sliceMs, now = () => performance.now()} = {}) {
  const {mujoco, model: m, data: d, hold} = arm;
  const {backend, kp, kv, timestep: h, forcerange: limit, rateHz} = params;
  const nstep = Math.max(2, pyRound(hold.duration / h));
  arm.configure(params);
  const nq = arm.nq, nu = arm.nu;
  const t = new Float64Array(nstep);
  for (let k = 0; k < nstep; k++) t[k] = h * k;
  const {position, velocity} = reference(t, hold.standby, hold.moveTime);
  const mask = tickMask(rateHz, h, nstep);
  const run = {params, nstep, h, q: new Float64Array(nstep * nq), target: new Float64Array(nstep * nq),
               steps: 0, warned: false};
  mujoco.mj_resetData(m, d);   // as a fresh MjData: the state at qpos0, warm start and warning counters zero
  let views = null;
  const fresh = () => {
    if (!views || views.qpos.length === 0) {
      views = {qpos: d.qpos, qvel: d.qvel, ctrl: d.ctrl, applied: d.qfrc_applied};
    }
    return views;
  };
  let tick = 0;   // the step of the latest tick: its command is held until the next
  let k = 0, sinceCheck = 0;
  while (k < nstep) {
    const started = now();
    do {
      if (mask[k]) {
        tick = k;
        const v = fresh();
        if (backend === 'in-step') {
          for (let a = 0; a < nu; a++) {
            v.ctrl[a] = position[k * nq + a] + kv * velocity[k * nq + a] / kp;
            v.applied[a] = 0.0;
          }
        } else {
          for (let j = 0; j < nq; j++) {
            const tau = kp * (position[k * nq + j] - v.qpos[j]) + kv * (velocity[k * nq + j] - v.qvel[j]) + 0.0;
            v.applied[j] = Math.min(Math.max(tau, -limit), limit);
          }
        }
      }
      mujoco.mj_step(m, d);
      const v = fresh();
      for (let j = 0; j < nq; j++) {
        run.q[k * nq + j] = v.qpos[j];
        run.target[k * nq + j] = position[tick * nq + j];
      }
      k += 1;
      sinceCheck += 1;
      if (sinceCheck >= WARNING_EVERY || k === nstep) {
        sinceCheck = 0;
        if (arm.warned()) {
          run.warned = true;
          run.steps = k;
          return run;
        }
      }
    } while (k < nstep && (!mask[k] || now() - started < (run.steps === 0 ? firstSliceMs : sliceMs)));
    run.steps = k;
    if (k < nstep) yield {done: k, nstep, run};
  }
  run.steps = nstep;
  return run;
}

// Drain a hold run at once (tests, Node).
export function holdAtOnce(arm, params) {
  const it = holdRun(arm, params, {sliceMs: Infinity});
  let r = it.next();
  while (!r.done) r = it.next();
  return r.value;
}

// ---------------------------------------------------------------------------------------------------------------
// What the chapter reads off a run

// physai.engine.hold.chatter_frequency: the dominant frequency of x sampled every dt, Hz, or null (broadband, or
// a peak below minHz). A plain DFT (numpy's FFT sums in another order: the power agrees to rounding).
export function chatterFrequency(dt, x, {minHz = 3.0, tonePower = 2 / 3} = {}) {
  const n = x.length;
  const mean = npSum(x) / n;
  const nf = Math.floor(n / 2) + 1;
  const cos = new Float64Array(n), sin = new Float64Array(n);
  for (let i = 0; i < n; i++) { cos[i] = Math.cos(2 * Math.PI * i / n); sin[i] = Math.sin(2 * Math.PI * i / n); }
  const power = new Float64Array(nf);
  for (let f = 0; f < nf; f++) {
    let re = 0, im = 0, idx = 0;
    for (let i = 0; i < n; i++) {
      const y = x[i] - mean;
      re += y * cos[idx];
      im -= y * sin[idx];
      idx += f;
      if (idx >= n) idx -= n;
    }
    power[f] = re * re + im * im;
  }
  const val = 1.0 / (n * dt);
  let k = 1;
  for (let f = 2; f < nf; f++) if (power[f] > power[k]) k = f;
  const fk = k * val;
  const peak = Number(fk.toFixed(6));
  let total = 0, band = 0;
  for (let f = 1; f < nf; f++) total += power[f];
  for (let f = 0; f < nf; f++) {
    const ff = f * val;
    if (ff >= fk / Math.SQRT2 && ff <= fk * Math.SQRT2) band += power[f];
  }
  if (peak < minHz || total <= 0 || band < tonePower * total) return null;
  return peak;
}

// physai.engine.hold._summarize on the record's first `steps` steps: per joint peak-to-peak over the last
// settleWindow s (rad), the worst joint, its chatter tone (Hz or null), and whether the run diverged.
export function summarizeHold(run, hold) {
  const {q, target, h, steps: n} = run;
  const nq = hold.standby.length;
  let diverged = run.warned;
  for (let i = 0; i < n * nq && !diverged; i++) {
    if (!Number.isFinite(q[i]) || Math.abs(q[i]) > DIVERGED_BOUND) diverged = true;
  }
  const out = {diverged, p2p: new Array(nq).fill(NaN), worst: 0, chatterHz: null, chatters: false, worstP2p: NaN};
  if (diverged) return out;
  const tEnd = h * n;                                    // sample k is at (k + 1) h
  const from = tEnd - hold.settleWindow + 0.5 * h;
  let first = 0;
  while (h * (first + 1) < from) first++;
  for (let j = 0; j < nq; j++) {
    let lo = Infinity, hi = -Infinity;
    for (let k = first; k < n; k++) { lo = Math.min(lo, q[k * nq + j]); hi = Math.max(hi, q[k * nq + j]); }
    out.p2p[j] = hi - lo;
  }
  let worst = 0;
  for (let j = 1; j < nq; j++) if (out.p2p[j] > out.p2p[worst]) worst = j;
  if (out.p2p[worst] < hold.quietP2P) {
    let far = -1;
    for (let j = 0; j < nq; j++) {
      let e = 0;
      for (let k = 0; k < n; k++) e = Math.max(e, Math.abs(q[k * nq + j] - target[k * nq + j]));
      if (e > far) { far = e; worst = j; }
    }
  }
  out.worst = worst;
  out.worstP2p = out.p2p[worst];
  out.chatters = out.worstP2p >= hold.quietP2P;
  if (out.chatters) {
    const x = new Float64Array(n - first);
    for (let k = first; k < n; k++) x[k - first] = q[k * nq + worst];
    out.chatterHz = chatterFrequency(h * (first + 2) - h * (first + 1), x);   // t[1] - t[0] of the window
  }
  return out;
}

// format(x, '.2e') of Python.
export function formatE(x, digits) {
  if (!Number.isFinite(x)) return Number.isNaN(x) ? 'nan' : (x > 0 ? 'inf' : '-inf');
  const [mant, e] = x.toExponential(digits).split('e');
  const sign = e[0] === '-' ? '-' : '+';
  return `${mant}e${sign}${e.replace(/^[+-]/, '').padStart(2, '0')}`;
}

// The note of pd_panel: where the PD runs and how often, the worst joint's p2p over the last second and its tone,
// and the verdict with the growth per tick.
export function holdNote(summary, growth, {backend, rateHz}) {
  const where = `${backend} at ${pyFormat(rateHz, '.0f')} Hz`;
  if (summary.diverged) return `${where}: diverged\ngrowth per tick ${pyFormat(growth, '.3g')}`;
  let chatter = '';
  if (summary.chatters) {
    chatter = summary.chatterHz === null ? ', broadband chatter' : `, chatter ${pyFormat(summary.chatterHz, '.0f')} Hz`;
  }
  const state = summary.chatters ? 'chatters' : 'quiet';
  return `${where}: p2p over the last second ${formatE(summary.worstP2p, 2)} rad${chatter}\n` +
         `${state}, growth per tick ${pyFormat(growth, '.3f')}`;
}

// ---------------------------------------------------------------------------------------------------------------
// The growth per controller tick (analytic)

// A double as an exact fraction [numerator, denominator] of BigInts in lowest terms, as Python's Fraction(x).
export function exactFraction(x) {
  if (!Number.isFinite(x)) throw new Error(`cannot make a fraction of ${x}`);
  if (x === 0) return [0n, 1n];
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0), lo = view.getUint32(4);
  const sign = hi >>> 31 ? -1n : 1n;
  const biased = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exponent;
  if (biased === 0) { exponent = -1074; } else { mantissa |= 1n << 52n; exponent = biased - 1075; }
  while (mantissa % 2n === 0n && exponent < 0) { mantissa /= 2n; exponent += 1; }
  return exponent >= 0 ? [sign * (mantissa << BigInt(exponent)), 1n] : [sign * mantissa, 1n << BigInt(-exponent)];
}

const babs = (v) => (v < 0n ? -v : v);

// Fraction.limit_denominator of Python for a positive fraction [n, d].
export function limitDenominator([num, den], maxDen) {
  const maxD = BigInt(maxDen);
  if (den <= maxD) return [num, den];
  let p0 = 0n, q0 = 1n, p1 = 1n, q1 = 0n, n = num, d = den;
  for (;;) {
    const a = n / d;
    const q2 = q0 + a * q1;
    if (q2 > maxD) break;
    [p0, q0, p1, q1] = [p1, q1, p0 + a * p1, q2];
    [n, d] = [d, n - a * d];
  }
  const k = (maxD - q0) / q1;
  const b1 = [p0 + k * p1, q0 + k * q1], b2 = [p1, q1];
  // |b2 - x| <= |b1 - x|, cross-multiplied
  const e2 = babs(b2[0] * den - num * b2[1]) * b1[1];
  const e1 = babs(b1[0] * den - num * b1[1]) * b2[1];
  return e2 <= e1 ? b2 : b1;
}

// physai.laws.loop.tick_pattern: physics steps per controller tick over one repeating pattern.
export function tickPattern(rateHz, timestep) {
  const [p0, q0] = limitDenominator(exactFraction(1.0 / (timestep * rateHz)), MAX_PATTERN_TICKS);
  if (p0 <= q0) return [1];
  const g = gcd(p0, q0), p = p0 / g, q = q0 / g;
  const starts = [];
  for (let j = 0n; j <= q; j++) starts.push((j * p + q - 1n) / q);   // ceil(j p / q)
  const out = [];
  for (let j = 1; j < starts.length; j++) out.push(Number(starts[j] - starts[j - 1]));
  return out;
}

function gcd(a, b) {
  while (b) [a, b] = [b, a % b];
  return a;
}

// The spectral radius of a 2x2 matrix [[a, b], [c, d]].
export function radius2([a, b, c, d]) {
  const half = (a + d) / 2, det = a * d - b * c;
  const disc = half * half - det;
  if (disc >= 0) {
    const s = Math.sqrt(disc);
    return Math.max(Math.abs(half + s), Math.abs(half - s));
  }
  return Math.sqrt(Math.max(det, 0));
}

// physai.laws.sim.semi_implicit_euler and physai.laws.stability._rk4_step on a = -w2 q - c v, as 2x2 matrices.
function integratorMatrix(integrator, h, w2, c, cJoint) {
  const accel = (q, v) => -w2 * q - c * v;
  let step;
  if (integrator === 'RK4') {
    step = (q, v) => {
      const k1q = v, k1v = accel(q, v);
      const k2q = v + h / 2 * k1v, k2v = accel(q + h / 2 * k1q, v + h / 2 * k1v);
      const k3q = v + h / 2 * k2v, k3v = accel(q + h / 2 * k2q, v + h / 2 * k2v);
      const k4q = v + h * k3v, k4v = accel(q + h * k3q, v + h * k3v);
      return [q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q), v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)];
    };
  } else {
    const cImplicit = {Euler: cJoint, implicit: c, implicitfast: c, discrete: c + h * w2}[integrator];
    if (cImplicit === undefined) throw new Error(`no growth model for integrator ${integrator}`);
    step = (q, v) => {
      const vNext = v + h * accel(q, v) / (1.0 + h * cImplicit);
      return [q + h * vNext, vNext];
    };
  }
  const [a, c2] = step(1.0, 0.0), [b, d] = step(0.0, 1.0);
  return [a, b, c2, d];
}

// physai.laws.stability.integrator_growth.
export function integratorGrowth(integrator, h, w2, c, cJoint = 0.0) {
  const m = integratorMatrix(integrator, h, w2, c, cJoint);
  if (!m.every(Number.isFinite)) return Infinity;
  return radius2(m);
}

const mul3 = (A, B) => {
  const C = new Array(9).fill(0);
  for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) {
    C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
  }
  return C;
};

// S^n of a physics step S (3x3, row-major), by squaring; kept per (h, joint damping) and n, since a slider move of
// kp, kv or the rate needs the same ones again (S holds only h and the joint's damping per unit inertia).
const POWERS = new Map();

function stepPower(S, n, key) {
  let byN = POWERS.get(key);
  if (!byN) {
    if (POWERS.size > 64) POWERS.clear();
    byN = new Map();
    POWERS.set(key, byN);
  }
  let out = byN.get(n);
  if (!out) {
    out = [1, 0, 0, 0, 1, 0, 0, 0, 1];
    let base = S;
    for (let e = n; e > 0; e >>= 1) {
      if (e & 1) out = mul3(base, out);
      base = mul3(base, base);
    }
    byN.set(n, out);
  }
  return out;
}

// physai.experiments.where_pd_runs.growth_curve: the worst joint's growth per controller tick at each rate.
// `inertia` is each joint's diagonal of the mass matrix at STANDBY without armature, kg·m²; damping the joints'
// dof_damping, N·m·s/rad.
export function growthCurve(ratesHz, {backend, kp, kv, armature, timestep: h, integrator, inertia, damping}) {
  const joints = inertia.map((I0) => {
    const I = I0 + armature;
    return {w2: kp / I, c: kv / I, cJoint: damping / I};
  });
  const patterns = ratesHz.map((r) => cachedTickPattern(r, h));
  if (backend === 'in-step') {
    const perStep = Math.max(...joints.map((j) => integratorGrowth(integrator, h, j.w2, j.c + j.cJoint, j.cJoint)));
    return patterns.map((p) => perStep ** (p.reduce((s, n) => s + n, 0) / p.length));
  }
  const steps = joints.map((j) => {
    const damp = 1.0 / (1.0 + h * j.cJoint);
    return {S: [1.0, h * damp, h * h * damp, 0, damp, h * damp, 0, 0, 1.0], key: `${h}|${j.cJoint}`};
  });
  return patterns.map((pattern) => {
    let worst = 0;
    joints.forEach(({w2, c}, i) => {
      const {S, key} = steps[i];
      // the product of (S^n @ hold)[:2, :] over the pattern, rescaled each tick; hold: (q, v) -> (q, v, -w2 q - c v)
      let a0 = 1, a1 = 0, a2 = 0, a3 = 1, logScale = 0;
      for (const n of pattern) {
        const Sn = stepPower(S, n, key);
        const t0 = Sn[0] - Sn[2] * w2, t1 = Sn[1] - Sn[2] * c, t2 = Sn[3] - Sn[5] * w2, t3 = Sn[4] - Sn[5] * c;
        const p0 = t0 * a0 + t1 * a2, p1 = t0 * a1 + t1 * a3, p2 = t2 * a0 + t3 * a2, p3 = t2 * a1 + t3 * a3;
        let scale = Math.max(Math.abs(p0), Math.abs(p1), Math.abs(p2), Math.abs(p3));
        if (!(scale > 0)) scale = 1.0;
        a0 = p0 / scale; a1 = p1 / scale; a2 = p2 / scale; a3 = p3 / scale;
        logScale += Math.log(scale);
      }
      const product = [a0, a1, a2, a3];
      const g = !product.every(Number.isFinite) || !Number.isFinite(logScale) ? Infinity
        : Math.exp((logScale + Math.log(radius2(product))) / pattern.length);
      worst = Math.max(worst, g);
    });
    return worst;
  });
}

// tickPattern per (rate, timestep), kept: its exact fractions are BigInt arithmetic, and a slider move of kp, kv or
// the armature asks for the same hundred patterns again
const PATTERNS = new Map();

function cachedTickPattern(rateHz, timestep) {
  const key = `${rateHz}|${timestep}`;
  let pattern = PATTERNS.get(key);
  if (!pattern) {
    if (PATTERNS.size > 4096) PATTERNS.clear();
    pattern = tickPattern(rateHz, timestep);
    PATTERNS.set(key, pattern);
  }
  return pattern;
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 4: an episode replayed open loop under a servo (physai.engine.sysid.replay for one servo and episode)

// physai.engine.sysid._servo_arm: <position kp kv forcerange> on every actuator, the joints' damping and friction
// loss, the timestep that fits a whole number of steps in a frame, the integrator, contacts off, armature. Returns
// the physics steps per frame.
export function configureReplay(arm, {kp, kv, forcerange, damping, frictionloss, armature, timestep, integrator},
                                fps) {
  const m = arm.model;
  const sub = Math.max(1, pyRound(1.0 / (fps * timestep)));
  arm.setStep(1.0 / (fps * sub), integrator, {contacts: false});
  arm.setServos(kp, kv, forcerange);
  m.dof_damping.fill(damping);
  m.dof_frictionloss.fill(frictionloss);
  m.dof_armature.fill(armature);
  arm.mujoco.mj_setConst(m, arm.data);
  return sub;
}

// One replay as a generator, sliced like holdRun: frame t's command u[t] (rad, every joint) is held for the `sub`
// steps that lead to frame t + 1; the record is the joints after every frame, run.q ((nframe*nq) rad, frame 0 the
// start), up to run.frames.
export function* replayRun(arm, servo, episode, {sliceMs = 30, firstSliceMs = sliceMs,
                                                 now = () => performance.now()} = {}) {
  const {mujoco, model: m, data: d, nq} = arm;
  const sub = configureReplay(arm, servo, episode.fps);
  const n = episode.nframe;
  const run = {q: new Float64Array(n * nq), frames: 1, warned: false, sub};
  mujoco.mj_resetData(m, d);
  let views = {qpos: d.qpos, ctrl: d.ctrl};
  for (let j = 0; j < nq; j++) { views.qpos[j] = episode.start[j]; run.q[j] = episode.start[j]; }
  mujoco.mj_forward(m, d);
  const fresh = () => {
    if (views.qpos.length === 0) views = {qpos: d.qpos, ctrl: d.ctrl};
    return views;
  };
  let t = 0, sinceCheck = 0;
  while (t < n - 1) {
    const started = now();
    do {
      let v = fresh();
      for (let a = 0; a < arm.nu; a++) v.ctrl[a] = episode.u[t * arm.nu + a];
      for (let s = 0; s < sub; s++) mujoco.mj_step(m, d);
      t += 1;
      v = fresh();
      for (let j = 0; j < nq; j++) run.q[t * nq + j] = v.qpos[j];
      sinceCheck += sub;
      if (sinceCheck >= WARNING_EVERY || t === n - 1) {
        sinceCheck = 0;
        if (arm.warned()) {
          run.warned = true;
          run.frames = t + 1;
          return run;
        }
      }
    } while (t < n - 1 && now() - started < (run.frames === 1 ? firstSliceMs : sliceMs));
    run.frames = t + 1;
    if (t < n - 1) yield {done: t, nframe: n, run};
  }
  run.frames = n;
  return run;
}

export function replayAtOnce(arm, servo, episode) {
  const it = replayRun(arm, servo, episode, {sliceMs: Infinity});
  let r = it.next();
  while (!r.done) r = it.next();
  return r.value;
}

const RAD_TO_DEG = 180 / Math.PI;

function median(values) {
  const v = Float64Array.from(values).sort();
  const n = v.length, h = n >> 1;
  return n % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// physai.engine.sysid.Replay's figures and physai.experiments.servo_sysid.hold_sag_deg, for the arm joints
// (`armIndex`: their qpos addresses) of a replay: simDeg (nframe*5), MAE and per joint (deg), chatter (deg per
// frame), whether it diverged or chatters, and the sag in held poses, simulated and real (deg, NaN without one).
export function summarizeReplay(run, episode, {armIndex, chatterDeg, window = 6, tolDeg = 1.0, ctrlLowDeg,
                                               ctrlHighDeg}) {
  const n = episode.nframe, na = armIndex.length, nq = run.q.length / n;
  const simDeg = new Float64Array(n * na).fill(NaN);
  for (let t = 0; t < run.frames; t++) {
    for (let j = 0; j < na; j++) simDeg[t * na + j] = run.q[t * nq + armIndex[j]] * RAD_TO_DEG;
  }
  let diverged = run.warned || run.frames < n;
  for (let i = 0; i < run.frames * nq && !diverged; i++) {
    if (!Number.isFinite(run.q[i]) || Math.abs(run.q[i]) > DIVERGED_BOUND) diverged = true;
  }
  const real = episode.stateDeg, action = episode.actionDeg;
  const error = new Float64Array((n - 1) * na);
  for (let t = 1; t < n; t++) {
    for (let j = 0; j < na; j++) error[(t - 1) * na + j] = Math.abs(simDeg[t * na + j] - real[t * na + j]);
  }
  const mae = npSum(error) / error.length;
  const jointMae = Array.from({length: na}, (_, j) => {
    let s = 0;
    for (let t = 0; t < n - 1; t++) s += error[t * na + j];
    return s / (n - 1);
  });
  let chatter = NaN;
  if (n >= 3 && simDeg.every(Number.isFinite)) {
    chatter = 0;
    for (let j = 0; j < na; j++) {
      const second = [];
      for (let t = 0; t < n - 2; t++) {
        second.push(Math.abs(simDeg[(t + 2) * na + j] - 2 * simDeg[(t + 1) * na + j] + simDeg[t * na + j]));
      }
      chatter = Math.max(chatter, median(second));
    }
  }
  // held poses inside the ctrlrange: every command within tolDeg of the current one for `window` frames
  const sim = new Array(na).fill(0), realSag = new Array(na).fill(0);
  let count = 0;
  for (let t = window; t < n; t++) {
    let held = true;
    for (let k = t - window; k <= t && held; k++) {
      for (let j = 0; j < na; j++) {
        if (!(Math.abs(action[k * na + j] - action[t * na + j]) <= tolDeg)) { held = false; break; }
      }
    }
    for (let j = 0; j < na && held; j++) {
      if (!(action[t * na + j] >= ctrlLowDeg[j] && action[t * na + j] <= ctrlHighDeg[j])) held = false;
    }
    if (!held) continue;
    count += 1;
    for (let j = 0; j < na; j++) {
      sim[j] += action[t * na + j] - simDeg[t * na + j];
      realSag[j] += action[t * na + j] - real[t * na + j];
    }
  }
  const sag = count ? sim.map((x) => x / count) : sim.map(() => NaN);
  const sagReal = count ? realSag.map((x) => x / count) : realSag.map(() => NaN);
  return {simDeg, mae, jointMae, chatter, diverged, chatters: !diverged && chatter > chatterDeg, sag, sagReal};
}

// The status words of physai.interface.servo_sysid_panels.replay_status (what sysid_panel writes).
export function replayStatus(s) {
  if (s.diverged || !s.simDeg.every(Number.isFinite)) return 'diverged';
  if (s.chatters) return `chatters (${pyFormat(s.chatter, '.0f')}° per frame) · MAE ${pyFormat(s.mae, '.3f')}°`;
  return `stable · MAE ${pyFormat(s.mae, '.3f')}°`;
}
