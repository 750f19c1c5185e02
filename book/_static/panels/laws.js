// The physics and the readouts that do not need MuJoCo, mirrored from physai (each function names the Python it
// mirrors; tests/test_web*.py compare each with it in Node, on the same inputs):
//   round                         Python's round() (ties to even): a run's step count, round(duration / h)
//   summarizeStep, crossingTime,  physai.engine.link.summarize, crossing_time, rise_window (chapter 1's figures)
//   riseWindow, unstable          physai.experiments.servo_panel.unstable (the stability map's verdict)
//   torqueLaw, forceLimits        physai.laws.drives (the explicit models' force laws and their limits)
//   heldCommands                  physai.engine.pendulum.held_commands for a Step (chapter 2)
//   stepMetrics                   physai.experiments.actuator_models.step_metrics
//   reference, tickMask,          physai.engine.hold.reference, physai.laws.loop.tick_mask, tick_pattern
//   tickPattern
//   growthCurve                   physai.experiments.where_pd_runs.growth_curve (the growth per controller tick)
//   summarizeHold, chatterFrequency  physai.engine.hold._summarize, chatter_frequency (chapter 3)
//   reversals                     physai.laws.motion.reversals (chapters 1 and 3: a run that turns back and forth)
//   summarizeReplay               physai.engine.arm_replay.Replay's figures, physai.experiments.servo_sysid.hold_sag_deg
//   unpack                        physai.interface.web.unpack (the precomputed first view's packed traces)
// Sums are plain left-to-right sums (numpy sums pairwise): a mean may differ from numpy's in its last bits, which
// the figures, printed to a few digits, do not show (the tests state the tolerance). No words here (the chapters'
// words are in their panel descriptions), no DOM, no MuJoCo.

export const degrees = (x) => x * (180 / Math.PI);   // math.degrees: x * (180 / pi)

// round(x) of Python: to the nearest whole number, ties to even.
export function round(x) {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function mean(a, lo = 0, hi = a.length) {
  let s = 0;
  for (let i = lo; i < hi; i++) s += a[i];
  return s / (hi - lo);
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 1: a step response's figures (physai.engine.link), `link` the module's constants from Python

// physai.engine.link.crossing_time: when x first reaches level, linear between samples; time(i) is sample i's.
export function crossingTime(time, x, level) {
  let k = -1;
  for (let i = 0; i < x.length; i++) if (x[i] >= level) { k = i; break; }
  if (k < 0) return NaN;
  if (k === 0) return time(0);
  const frac = (level - x[k - 1]) / (x[k] - x[k - 1]), t0 = time(k - 1);
  return t0 + frac * (time(k) - t0);
}

// physai.engine.link.rise_window: (t10, t90), s, of q going from q[0] to qFinal.
export function riseWindow(time, q, qFinal) {
  const span = qFinal - q[0];
  if (span === 0 || !Number.isFinite(span)) return [NaN, NaN];
  const progress = Float64Array.from(q, (x) => (x - q[0]) / span);
  return [crossingTime(time, progress, 0.1), crossingTime(time, progress, 0.9)];
}

// physai.engine.link.summarize for t = h * arange(n) and command u: sag (deg), 10-90 % rise (ms) and its window,
// peak-to-peak over the settle window (deg), whether it diverged (isDiverged: the engine's rule), settled, or (not
// settled) still swinging: it turns back at least once over the window.
export function summarizeStep(h, q, isDiverged, link, u = 0.0) {
  const n = q.length, tEnd = h * (n - 1);
  const out = {h, q, sagDeg: NaN, riseMs: NaN, p2pDeg: NaN, diverged: isDiverged, riseWindow: [NaN, NaN],
               settled: false, swinging: false, tEnd};
  if (isDiverged || tEnd <= link.settleWindow) return out;
  const from = tEnd - link.settleWindow + 1e-12;
  let first = 0;
  while (h * first < from) first++;
  const qFinal = mean(q, first, n);
  let lo = Infinity, hi = -Infinity, travel = 0;
  for (let i = first; i < n; i++) { lo = Math.min(lo, q[i]); hi = Math.max(hi, q[i]); }
  for (let i = 0; i < n; i++) travel = Math.max(travel, Math.abs(q[i] - q[0]));
  const p2p = hi - lo;
  out.p2pDeg = degrees(p2p);
  if (!(degrees(p2p) <= link.settledP2pDeg && (p2p <= link.stillRad || p2p <= link.creepShare * travel))) {
    out.swinging = reversals((i) => q[first + i], n - first, 0.0) >= 1;   // not settled: back and forth, or one way
    return out;
  }
  let way = 0;
  if (u !== q[0]) { way = -Infinity; for (let i = 0; i < n; i++) way = Math.max(way, (q[i] - q[0]) / (u - q[0])); }
  const window = way >= link.riseStart ? riseWindow((i) => h * i, q, qFinal) : [NaN, NaN];
  return {...out, sagDeg: degrees(u - qFinal), riseMs: 1e3 * (window[1] - window[0]), riseWindow: window,
          settled: true};
}

// physai.experiments.servo_panel.unstable: diverged, or still wider than 1.5 |q0| over the last sixth.
export function unstable(r, q0) {
  if (r.diverged) return true;
  const n = r.q.length;
  let top = 0;
  for (let i = Math.max(n + Math.floor(-n / 6), 0); i < n; i++) top = Math.max(top, Math.abs(r.q[i]));
  return top > 1.5 * Math.abs(q0);
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 2: the explicit force laws (physai.laws.drives) and a step response's figures

// np.interp(q, angles, limits) for one value: held ends, slope * (q - x0) + y0 between points (numpy's arithmetic,
// and its retry from the right end when that gives NaN).
export function remotizedLimit(q, table) {
  const n = table.length;
  if (Number.isNaN(q)) return NaN;
  if (q < table[0][0]) return table[0][1];
  if (q > table[n - 1][0]) return table[n - 1][1];
  let j = 0;
  while (j < n - 1 && table[j + 1][0] <= q) j++;
  const [x0, y0] = table[j];
  if (j === n - 1 || x0 === q) return y0;
  const [x1, y1] = table[j + 1], slope = (y1 - y0) / (x1 - x0);
  let y = slope * (q - x0) + y0;
  if (Number.isNaN(y)) {
    y = slope * (q - x1) + y1;
    if (Number.isNaN(y) && y0 === y1) y = y0;
  }
  return y;
}

// The torque band an actuator allows at angle q and velocity v, [low, high], N·m (each config's limits()).
export function forceLimits(actuator, q, v) {
  if (actuator.kind === 'DC motor') {   // physai.laws.drives.dc_motor_envelope
    const {saturationEffort: s, forcerange: e, velocityLimit: vmax} = actuator;
    const bound = vmax * (1.0 + e / s), vc = Math.min(Math.max(v, -bound), bound);
    return [Math.max(s * (-1.0 - vc / vmax), -e), Math.min(s * (1.0 - vc / vmax), e)];
  }
  const limit = actuator.kind === 'remotized PD' ? remotizedLimit(q, actuator.table) : actuator.forcerange;
  return [-limit, limit];
}

// The clipped torque law of an explicit actuator (physai.engine.pendulum._scalar_law): law(q, qd, q*), N·m, with
// qd* = tau_ff = 0 (the panel's step commands a position only).
export function torqueLaw(actuator) {
  const {kp, kv} = actuator;
  return (q, v, qTarget) => {
    const [low, high] = forceLimits(actuator, q, v);
    return Math.min(Math.max(kp * (qTarget - q) + kv * (0.0 - v) + 0.0, low), high);
  };
}

// physai.engine.pendulum.held_commands for a Step(at, low, high): the position command of each of nstep physics
// steps, sampled at the control ticks (every round(1 / (control_rate * h)) steps) and held in between.
export function heldCommands({at, low, high}, controlRate, h, nstep) {
  const decimation = Math.max(1, round(1.0 / (controlRate * h))), hd = h * decimation;
  return Float64Array.from({length: nstep}, (_, k) => (hd * Math.floor(k / decimation) >= at - 1e-12 ? high : low));
}

// physai.experiments.actuator_models.step_metrics, the figures the panel writes: errorDeg, riseMs, p2pDeg (over
// the last `tail` s), whether it diverged, the rise window (s) and the final angle (rad).
export function stepMetrics(run, at, {tail, riseStart}) {
  const {t, q} = run, n = q.length;
  const bad = {errorDeg: NaN, riseMs: NaN, p2pDeg: NaN, diverged: true, riseWindow: [NaN, NaN], finalRad: NaN};
  if (run.diverged || t[n - 1] <= at) return bad;
  let first = 0;
  while (t[first] < at - 1e-9) first++;
  const ta = t.subarray(first), qa = q.subarray(first), start = qa[0];
  let from = 0;
  while (t[from] < t[n - 1] - tail + 1e-9) from++;
  const final = mean(q, from, n), move = final - start, wanted = run.command[run.command.length - 1] - start;
  let window = [NaN, NaN];
  if (!(Math.abs(move) < riseStart * Math.abs(wanted) || move === 0)) window = riseWindow((i) => ta[i], qa, final);
  let lo = Infinity, hi = -Infinity;
  for (let i = from; i < n; i++) { lo = Math.min(lo, q[i]); hi = Math.max(hi, q[i]); }
  return {errorDeg: degrees(run.command[run.command.length - 1] - final), riseMs: 1e3 * (window[1] - window[0]),
          p2pDeg: degrees(hi - lo), diverged: false, riseWindow: window, finalRad: final};
}

// Whether a run's velocity reverses over its last `tail` s (the panel's "still swinging" against "creeping").
export function reverses(run, tail) {
  const {t, v} = run, n = t.length;
  let sign = 0;
  for (let i = 0; i < n; i++) {
    if (t[i] < t[n - 1] - tail + 1e-9 || v[i] === 0) continue;
    const s = Math.sign(v[i]);
    if (sign !== 0 && s !== sign) return true;
    sign = s;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 3: the move and hold, the controller's ticks, the growth per tick

// physai.engine.hold.reference at t (s): position and velocity commands, each (n * joints) row-major.
export function reference(t, standby, moveTime) {
  const n = t.length, nj = standby.length;
  const position = new Float64Array(n * nj), velocity = new Float64Array(n * nj);
  for (let k = 0; k < n; k++) {
    const s = Math.min(Math.max(t[k] / moveTime, 0.0), 1.0);
    const p = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5, v = 30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4;
    for (let j = 0; j < nj; j++) {
      position[k * nj + j] = standby[j] * p;
      velocity[k * nj + j] = standby[j] * v / moveTime;
    }
  }
  return {position, velocity};
}

// physai.laws.loop.tick_mask: which of nstep physics steps start a controller tick.
export function tickMask(rateHz, h, nstep) {
  const mask = new Uint8Array(nstep), per = h * rateHz;
  let before = 0;
  for (let k = 0; k < nstep; k++) {
    const count = Math.floor(k * per + 1e-9);
    mask[k] = k === 0 || count > before ? 1 : 0;
    before = count;
  }
  return mask;
}

const gcd = (a, b) => (b ? gcd(b, a % b) : a);

// physai.laws.loop.tick_pattern: physics steps per tick over one repeating pattern. Python takes the steps per tick,
// tick_pattern of a rate up to the physics rate; a faster rate ticks at every step ([1]), as growth_curve draws it.
// 1 / (h * rate), as Fraction(...).limit_denominator(maxTicks): the closest fraction p/q with q <= maxTicks. Here the
// same fraction by trying every q (lowest terms, the smaller q when two are as close; two distinct fractions exactly
// as close to a double do not occur at the panel's rates).
export function tickPattern(rateHz, h, maxTicks = 50) {
  const x = 1.0 / (h * rateHz);
  let best = [Math.round(x), 1], gap = Math.abs(Math.round(x) - x);
  for (let q = 2; q <= maxTicks; q++) {
    const p = Math.round(x * q);
    if (gcd(p, q) !== 1) continue;
    const d = Math.abs(p - x * q) / q;
    if (d < gap) { best = [p, q]; gap = d; }
  }
  const [p, q] = best;
  if (p <= q) return [1];
  const out = [];
  for (let j = 1; j <= q; j++) out.push(Math.ceil(j * p / q) - Math.ceil((j - 1) * p / q));
  return out;
}

// The spectral radius of a 2x2 matrix [a, b, c, d] (row-major).
function radius2([a, b, c, d]) {
  const half = (a + d) / 2, det = a * d - b * c, disc = half * half - det;
  if (disc >= 0) {
    const s = Math.sqrt(disc);
    return Math.max(Math.abs(half + s), Math.abs(half - s));
  }
  return Math.sqrt(Math.max(det, 0));
}

// One physics step of a = -w2 q - c v under an integrator as a 2x2 matrix (physai.laws.sim.semi_implicit_euler,
// physai.laws.stability._rk4_step; discrete folds the position term into the implicit damping).
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
  return m.every(Number.isFinite) ? radius2(m) : Infinity;
}

const mul3 = (A, B) => Array.from({length: 9}, (_, k) => {
  const i = Math.floor(k / 3), j = k % 3;
  return A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
});

function power3(S, n) {
  let out = [1, 0, 0, 0, 1, 0, 0, 0, 1], base = S;
  for (let e = n; e > 0; e >>= 1) {
    if (e & 1) out = mul3(base, out);
    base = mul3(base, base);
  }
  return out;
}

// physai.experiments.where_pd_runs.growth_curve: the worst joint's growth per controller tick at each rate.
// inertia: each joint's diagonal of the mass matrix at the standby pose without armature, kg·m²; damping: the
// joints' dof_damping, N·m·s/rad.
export function growthCurve(ratesHz, {backend, kp, kv, armature, timestep: h, integrator, inertia, damping}) {
  const joints = inertia.map((I0) => {
    const I = I0 + armature;
    return {w2: kp / I, c: kv / I, cJoint: damping / I};
  });
  const patterns = ratesHz.map((r) => tickPattern(r, h));
  if (backend === 'in-step') {
    const perStep = Math.max(...joints.map((j) => integratorGrowth(integrator, h, j.w2, j.c + j.cJoint, j.cJoint)));
    return patterns.map((p) => perStep ** (p.reduce((s, n) => s + n, 0) / p.length));
  }
  const powers = joints.map(({cJoint}) => {
    const damp = 1.0 / (1.0 + h * cJoint), S = [1.0, h * damp, h * h * damp, 0, damp, h * damp, 0, 0, 1.0];
    const byN = new Map();
    return (n) => { if (!byN.has(n)) byN.set(n, power3(S, n)); return byN.get(n); };
  });
  return patterns.map((pattern) => {
    let worst = 0;
    joints.forEach(({w2, c}, i) => {
      // the product of (S^n @ hold)[:2, :] over the pattern, rescaled each tick; hold: (q, v) -> (q, v, -w2 q - c v)
      let a0 = 1, a1 = 0, a2 = 0, a3 = 1, logScale = 0;
      for (const n of pattern) {
        const Sn = powers[i](n);
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

// physai.engine.hold.chatter_frequency: the dominant frequency of x sampled every dt, Hz, or null (broadband, or a
// peak below minHz). A plain DFT (numpy's FFT sums in another order: the powers agree to rounding).
export function chatterFrequency(dt, x, {minHz = 3.0, tonePower = 2 / 3} = {}) {
  const n = x.length, m = mean(x), nf = Math.floor(n / 2) + 1;
  const cos = Float64Array.from({length: n}, (_, i) => Math.cos(2 * Math.PI * i / n));
  const sin = Float64Array.from({length: n}, (_, i) => Math.sin(2 * Math.PI * i / n));
  const power = new Float64Array(nf);
  for (let f = 0; f < nf; f++) {
    let re = 0, im = 0, idx = 0;
    for (let i = 0; i < n; i++) {
      re += (x[i] - m) * cos[idx];
      im -= (x[i] - m) * sin[idx];
      idx += f;
      if (idx >= n) idx -= n;
    }
    power[f] = re * re + im * im;
  }
  const step = 1.0 / (n * dt);
  let k = 1;
  for (let f = 2; f < nf; f++) if (power[f] > power[k]) k = f;
  const peak = Number((k * step).toFixed(6));
  let total = 0, band = 0;
  for (let f = 1; f < nf; f++) total += power[f];
  for (let f = 0; f < nf; f++) if (f * step >= k * step / Math.SQRT2 && f * step <= k * step * Math.SQRT2) band += power[f];
  if (peak < minHz || total <= 0 || band < tonePower * total) return null;
  return peak;
}

// physai.laws.motion.reversals: how many times x(i), i = 0 .. n - 1, turns back by more than size (a zigzag count
// with hysteresis; equal neighbours are no turn).
export function reversals(x, n, size = 0.0) {
  if (n === 0) return 0;
  let count = 0, direction = 0, high = x(0), low = x(0);
  for (let i = 1; i < n; i++) {
    const v = x(i);
    if (direction === 0) {
      high = Math.max(high, v); low = Math.min(low, v);
      if (v - low > size) { direction = 1; high = v; } else if (high - v > size) { direction = -1; low = v; }
    } else if (direction > 0) {
      if (v > high) high = v; else if (high - v > size) { count++; direction = -1; low = v; }
    } else if (v < low) {
      low = v;
    } else if (v - low > size) {
      count++; direction = 1; high = v;
    }
  }
  return count;
}

// physai.engine.hold._summarize on a hold record's first run.steps steps (row k: the joints after step k, at time
// (k + 1) h): per joint peak-to-peak over the last settleWindow s (rad), turns (reversals by more than turnSize) and
// mean offset from the command (rad), the largest offset (deg); whether a joint chatters (at least quietP2P and chatterTurns turns), the joint
// shown (the loudest that chatters, else the one that moves most, else the one that strayed furthest), its tone (Hz or
// null), and the state: diverged, chatters, moves or still; isDiverged: the engine's rule on the record.
export function summarizeHold(run, hold, isDiverged) {
  const {q, target, h, steps: n} = run, nq = hold.standby.length;
  const out = {diverged: isDiverged, p2p: new Array(nq).fill(NaN), turns: new Array(nq).fill(0),
               offset: new Array(nq).fill(NaN), worst: 0, chatterHz: null, chatters: false, moves: false,
               worstP2p: NaN, offsetDeg: NaN, state: 'diverged'};
  if (isDiverged) return out;
  const from = h * n - hold.settleWindow + 0.5 * h;
  let first = 0;
  while (h * (first + 1) < from) first++;
  const loud = [];
  for (let j = 0; j < nq; j++) {
    let lo = Infinity, hi = -Infinity, sum = 0;
    for (let k = first; k < n; k++) {
      lo = Math.min(lo, q[k * nq + j]); hi = Math.max(hi, q[k * nq + j]);
      sum += q[k * nq + j] - target[k * nq + j];
    }
    out.p2p[j] = hi - lo;
    out.offset[j] = sum / (n - first);
    out.turns[j] = reversals((i) => q[(first + i) * nq + j], n - first, hold.turnSize);
    if (out.p2p[j] >= hold.quietP2P && out.turns[j] >= hold.chatterTurns) loud.push(j);
  }
  let worst = 0;
  if (loud.length) {
    worst = loud[0];
    for (const j of loud) if (out.p2p[j] > out.p2p[worst]) worst = j;
  } else {
    for (let j = 1; j < nq; j++) if (out.p2p[j] > out.p2p[worst]) worst = j;
    if (out.p2p[worst] < hold.quietP2P) {   // all still: the joint that strayed furthest from its command
      let far = -1;
      for (let j = 0; j < nq; j++) {
        let e = 0;
        for (let k = 0; k < n; k++) e = Math.max(e, Math.abs(q[k * nq + j] - target[k * nq + j]));
        if (e > far) { far = e; worst = j; }
      }
    }
  }
  out.worst = worst;
  out.worstP2p = out.p2p[worst];
  out.offsetDeg = Math.max(...out.offset.map((x) => Math.abs(degrees(x))));   // the joint furthest from its command
  out.chatters = loud.length > 0;
  out.moves = !out.chatters && out.worstP2p >= hold.quietP2P;
  out.state = out.chatters ? 'chatters' : out.moves ? 'moves' : 'still';
  if (out.chatters) {
    const x = Float64Array.from({length: n - first}, (_, k) => q[(first + k) * nq + worst]);
    out.chatterHz = chatterFrequency(h * (first + 2) - h * (first + 1), x);   // t[1] - t[0] of the window
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 4: a replay's figures

function median(values) {
  const v = Float64Array.from(values).sort(), n = v.length, h = n >> 1;
  return n % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// physai.engine.arm_replay.Replay (sim_deg, mae_deg, joint_mae_deg, chatter_deg, chatters) and
// physai.experiments.servo_sysid.hold_sag_deg for a replay's arm joints (armIndex: their qpos addresses):
// simDeg (nframe * 5, NaN after a divergence), MAE overall and per joint, chatter (deg per frame), whether it
// chatters, the sag in held poses simulated and real (deg, NaN without one). isDiverged: the engine's rule.
export function summarizeReplay(run, episode, isDiverged, {armIndex, chatterDeg, window = 6, tolDeg = 1.0,
                                                          ctrlLowDeg, ctrlHighDeg}) {
  const n = episode.nframe, na = armIndex.length, nq = run.q.length / n;
  const simDeg = new Float64Array(n * na).fill(NaN);
  for (let t = 0; t < run.frames; t++) for (let j = 0; j < na; j++) simDeg[t * na + j] = degrees(run.q[t * nq + armIndex[j]]);
  const real = episode.stateDeg, action = episode.actionDeg;
  const error = Float64Array.from({length: (n - 1) * na}, (_, i) => Math.abs(simDeg[na + i] - real[na + i]));
  const jointMae = Array.from({length: na}, (_, j) => {
    let s = 0;
    for (let t = 0; t < n - 1; t++) s += error[t * na + j];
    return s / (n - 1);
  });
  let chatter = NaN;
  if (n >= 3 && simDeg.every(Number.isFinite)) {
    chatter = 0;
    for (let j = 0; j < na; j++) {
      chatter = Math.max(chatter, median(Array.from({length: n - 2}, (_, t) => Math.abs(
        simDeg[(t + 2) * na + j] - 2 * simDeg[(t + 1) * na + j] + simDeg[t * na + j]))));
    }
  }
  // held poses inside the ctrlrange: every command within tolDeg of the current one for `window` frames
  const sim = new Array(na).fill(0), realSag = new Array(na).fill(0);
  let count = 0;
  for (let t = window; t < n; t++) {
    let held = true;
    for (let k = t - window; k <= t && held; k++) {
      for (let j = 0; j < na; j++) if (!(Math.abs(action[k * na + j] - action[t * na + j]) <= tolDeg)) { held = false; break; }
    }
    for (let j = 0; j < na && held; j++) if (!(action[t * na + j] >= ctrlLowDeg[j] && action[t * na + j] <= ctrlHighDeg[j])) held = false;
    if (!held) continue;
    count += 1;
    for (let j = 0; j < na; j++) {
      sim[j] += action[t * na + j] - simDeg[t * na + j];
      realSag[j] += action[t * na + j] - real[t * na + j];
    }
  }
  const diverged = isDiverged || !simDeg.every(Number.isFinite);
  return {simDeg, mae: mean(error), jointMae, chatter, diverged, chatters: !diverged && chatter > chatterDeg,
          sag: sim.map((x) => (count ? x / count : NaN)), sagReal: realSag.map((x) => (count ? x / count : NaN))};
}

// ---------------------------------------------------------------------------------------------------------------
// The precomputed first view's traces, packed by physai.interface.web.pack

const PACK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// physai.interface.web.unpack: the values (NaN where missing) in whole steps.
export function unpack(text, step) {
  const out = [];
  let k = 0, i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '-') { out.push(NaN); i += 1; continue; }
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
