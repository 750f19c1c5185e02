// The chapters' runs on MuJoCo in the browser, mirrored from physai's runners (the tests compare their
// trajectories with Python MuJoCo's on the same settings, in Node):
//   stepResponse   physai.engine.link.step_responses, one run: the link from rest at q0, command 0
//   pendulumRun    physai.engine.pendulum.simulate, one run: the pendulum under one actuator model
//   holdRun        physai.engine.hold.hold_responses, one run: the SO-101 moving to its standby pose and holding it
//   replayRun      physai.engine.arm_replay.replay, one run: an episode's commands replayed open loop
// Each writes its model's fields as the Python runner does (engine.js's Model), steps MuJoCo and records what the
// Python record holds. MuJoCo's warning counters are read every WARNING_EVERY steps; a chunk in which one rose is
// replayed one step at a time to end the record where Python's ends. holdRun and replayRun are generators that
// yield every few milliseconds, so a page stays responsive during a long run. No DOM, no words.
import {WARNING_EVERY, diverged} from './engine.js';
import {heldCommands, reference, round, summarizeStep, tickMask, torqueLaw, unstable} from './laws.js';

// ---------------------------------------------------------------------------------------------------------------
// Chapter 1: the link

// physai.engine.link.ServoParams' kv for a damping ratio: 2 ζ sqrt(kp) sqrt(I) (physai.laws.sim.kv_from_dampratio)
export const kvFromDampratio = (kp, dampratio, inertia) => 2.0 * dampratio * Math.sqrt(kp) * Math.sqrt(inertia);

// The step response of the link (engine Model on physai.engine.link.LINK_XML) from rest at q0 to the command 0:
// params {kp, armature, timestep, integrator, dampratio}; link: the module's constants (linkInertia, settle window,
// ...). Returns physai.engine.link.summarize's figures with q (rad per step).
export function stepResponse(model, params, {q0, duration, link}) {
  const {kp, armature, timestep: h, integrator, dampratio} = params;
  const steps = Math.max(1, round(duration / h));
  if (steps > model.rule.maxSteps) throw new Error(`duration / timestep must be at most ${model.rule.maxSteps} steps, got ${steps}`);
  // link_model: the servo (no clamp), no joint damping or friction; contacts and constraints skipped, as physai's
  // batch does (the link has nothing to touch and, without friction loss, no constraint)
  model.setOptions({timestep: h, integrator, contacts: false, constraints: false});
  model.setPositionServo([0], kp, kvFromDampratio(kp, dampratio, link.inertia + armature), null);
  model.setArmature(armature);
  model.reset([q0]);
  model.forward();
  const q = new Float64Array(steps + 1);
  q[0] = model.d.qpos[0];
  let k = 0, warned = false;
  while (k < steps && !warned) {
    const chunk = Math.min(WARNING_EVERY, steps - k), start = model.save();
    for (let i = 1; i <= chunk; i++) { model.step(); q[k + i] = model.d.qpos[0]; }
    if (model.warned()) {   // the record ends before the step MuJoCo warned at, as physai's batch record does
      model.restore(start);
      let i = 1;
      for (; i <= chunk; i++) { model.step(); if (model.warned()) break; q[k + i] = model.d.qpos[0]; }
      k += i - 1;
      warned = true;
    } else {
      k += chunk;
    }
  }
  const record = q.slice(0, k + 1);
  return summarizeStep(h, record, diverged({q: record, warned}, model.rule), link);
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 2: the pendulum under one actuator model

// One run from rest at q0 (physai.engine.pendulum.simulate for one actuator): actuator {kind, explicit, kp, kv,
// forcerange, delay, ...} (physai.interface.actuator_models_panels.panel_actuator's), pendulum {armature, timestep,
// integrator}, the command a Step {at, low, high} sent at controlRate and held. An implicit actuator is MuJoCo's
// <position kp kv forcerange>; an explicit one a <motor> whose ctrl is its law's torque from the state at the start
// of every step, with its commands delayed by `delay` steps. Returns {t, q, v, torque, command, diverged}: q, v
// (n + 1), torque (n), as physai's Run. A run ends before a step MuJoCo warned at, or after the step whose speed
// the engine's rule calls diverged.
export function pendulumRun(model, actuator, pendulum, {duration, step, controlRate, q0 = 0.0}) {
  const h = pendulum.timestep, nstep = Math.max(1, round(duration / h));
  if (nstep > model.rule.maxSteps) throw new Error(`duration / timestep must be at most ${model.rule.maxSteps} steps`);
  model.setOptions({timestep: h, integrator: pendulum.integrator});
  if (actuator.explicit) {
    model.setMotor([0]);
  } else {
    model.setPositionServo([0], actuator.kp, actuator.kv, Number.isFinite(actuator.forcerange) ? actuator.forcerange : null);
  }
  model.model.dof_damping[0] = 0.0;
  model.model.dof_frictionloss[0] = 0.0;
  model.setArmature(pendulum.armature);
  const commands = heldCommands(step, controlRate, h, nstep);
  const law = actuator.explicit ? torqueLaw(actuator) : null, delay = actuator.delay || 0;
  const q = new Float64Array(nstep + 1), v = new Float64Array(nstep + 1), tau = new Float64Array(nstep);
  model.reset([q0], [0.0]);
  model.forward();
  q[0] = model.d.qpos[0];
  v[0] = model.d.qvel[0];
  const runaway = (x) => diverged({v: [x]}, model.rule);
  const advance = (k) => {   // physics step k; false when the speed ran away
    let d = model.d;
    if (law) {
      tau[k] = law(q[k], v[k], commands[Math.max(k - delay, 0)]);
      d.ctrl[0] = tau[k];
    } else {
      d.ctrl[0] = commands[k];
    }
    model.step();
    d = model.d;
    q[k + 1] = d.qpos[0];
    v[k + 1] = d.qvel[0];
    if (!law) tau[k] = d.actuator_force[0];
    return !runaway(v[k + 1]);
  };
  const cut = (n, isDiverged) => ({t: Float64Array.from({length: n}, (_, i) => h * i), q: q.slice(0, n), v: v.slice(0, n),
                                   torque: tau.slice(0, n - 1), command: commands, diverged: isDiverged});
  for (let k = 0; k < nstep;) {
    const chunk = Math.min(WARNING_EVERY, nstep - k), start = model.save();
    let end = k + chunk, ran = false;
    for (let i = k; i < k + chunk; i++) if (!advance(i)) { end = i + 1; ran = true; break; }
    if (model.warned()) {
      model.restore(start);
      for (let i = k; i < k + chunk; i++) {
        const ok = advance(i);
        if (model.warned()) return cut(i + 1, true);
        if (!ok) return cut(i + 2, true);
      }
      return cut(k + chunk + 1, true);
    }
    if (ran) return cut(end + 1, true);
    k = end;
  }
  return cut(nstep + 1, false);
}

// ---------------------------------------------------------------------------------------------------------------
// Chapters 3 and 4: the SO-101 (physai.interface.web_arm.arm_xml: its bodies, joints and actuators)

// physai.engine.hold.shared_hold_model: the step (contacts on, as physai's), every actuator silenced
// (physai.engine.hold.PDController); in-step then <position kp kv forcerange=±forcerange> without its ctrl range;
// the armature on every dof.
function configureHold(model, {backend, kp, kv, armature, timestep, integrator, forcerange}) {
  const m = model.model, nu = m.nu;
  model.setOptions({timestep, integrator});
  const gain = m.actuator_gainprm, bias = m.actuator_biasprm, ngain = gain.length / nu, nbias = bias.length / nu;
  for (let a = 0; a < nu; a++) {
    gain.fill(0, a * ngain, (a + 1) * ngain);
    bias.fill(0, a * nbias, (a + 1) * nbias);
  }
  for (let a = 0; a < nu; a++) model.setLimited(a, model.compiledLimits[a]);
  if (backend === 'in-step') {
    model.setPositionServo([...Array(nu).keys()], kp, kv, forcerange);
    for (let a = 0; a < nu; a++) model.setLimited(a, {ctrl: false});
  }
  model.setArmature(armature);
}

// One hold run (physai.engine.hold.hold_responses for one HoldParams) as a generator: each next() steps MuJoCo for
// about `sliceMs` milliseconds (the first `firstSliceMs`; at least one tick) and yields {done, nstep, run}. The
// record run.q ((nstep * nq), row k: the joints after step k, at time (k + 1) h) holds run.steps rows, run.target the
// command in force. In-step a tick writes ctrl = position + kv velocity / kp (the in-clamp feed-forward); in-loop
// the clamped PD torque into qfrc_applied; both held until the next tick. A run MuJoCo warned in ends at that chunk,
// flagged `warned`. hold: the chapter's constants (standby, moveTime, duration); params as HoldParams'.
export function* holdRun(model, params, hold, {sliceMs = 30, firstSliceMs = sliceMs, now = () => performance.now()} = {}) {
  const {backend, kp, kv, timestep: h, forcerange: limit, rateHz} = params;
  const nstep = Math.max(2, round(hold.duration / h));
  configureHold(model, params);
  const nq = model.model.nq, nu = model.model.nu;
  const {position, velocity} = reference(Float64Array.from({length: nstep}, (_, k) => h * k), hold.standby,
                                         hold.moveTime);
  const mask = tickMask(rateHz, h, nstep);
  const run = {params, nstep, h, q: new Float64Array(nstep * nq), target: new Float64Array(nstep * nq), steps: 0,
               warned: false};
  model.reset();
  let tick = 0, k = 0, sinceCheck = 0;
  while (k < nstep) {
    const started = now();
    do {
      if (mask[k]) {
        tick = k;
        const d = model.d;
        if (backend === 'in-step') {
          for (let a = 0; a < nu; a++) { d.ctrl[a] = position[k * nq + a] + kv * velocity[k * nq + a] / kp; d.qfrc_applied[a] = 0.0; }
        } else {
          for (let j = 0; j < nq; j++) {
            const tau = kp * (position[k * nq + j] - d.qpos[j]) + kv * (velocity[k * nq + j] - d.qvel[j]) + 0.0;
            d.qfrc_applied[j] = Math.min(Math.max(tau, -limit), limit);
          }
        }
      }
      model.step();
      const qpos = model.d.qpos;
      for (let j = 0; j < nq; j++) { run.q[k * nq + j] = qpos[j]; run.target[k * nq + j] = position[tick * nq + j]; }
      k += 1;
      sinceCheck += 1;
      if (sinceCheck >= WARNING_EVERY || k === nstep) {
        sinceCheck = 0;
        if (model.warned()) { run.warned = true; run.steps = k; return run; }
      }
    } while (k < nstep && (!mask[k] || now() - started < (run.steps === 0 ? firstSliceMs : sliceMs)));
    run.steps = k;
    if (k < nstep) yield {done: k, nstep, run};
  }
  run.steps = nstep;
  return run;
}

// physai.engine.arm_replay._servo_arm: <position kp kv forcerange> on every actuator, the joints' damping and friction
// loss, the timestep that fits a whole number of steps in a frame, contacts off, the armature. Returns the physics
// steps per frame.
function configureReplay(model, {kp, kv, forcerange, damping, frictionloss, armature, timestep, integrator}, fps) {
  const m = model.model, sub = Math.max(1, round(1.0 / (fps * timestep)));
  model.setOptions({timestep: 1.0 / (fps * sub), integrator, contacts: false});
  for (let a = 0; a < m.nu; a++) model.setLimited(a, model.compiledLimits[a]);
  model.setPositionServo([...Array(m.nu).keys()], kp, kv, forcerange);
  m.dof_damping.fill(damping);
  m.dof_frictionloss.fill(frictionloss);
  model.setArmature(armature);
  return sub;
}

// One replay (physai.engine.arm_replay.replay for one servo and episode) as a generator, sliced like holdRun: frame t's
// command u[t] (rad, every joint) is held for the `sub` steps that lead to frame t + 1; the record run.q
// ((nframe * nq) rad, frame 0 the start) holds run.frames frames. episode: {fps, nframe, u, start}.
export function* replayRun(model, servo, episode, options = {}) {
  const sub = configureReplay(model, servo, episode.fps), nu = model.model.nu;
  return yield* framesRun(model, sub, episode, (t) => {
    const ctrl = model.d.ctrl;
    for (let a = 0; a < nu; a++) ctrl[a] = episode.u[t * nu + a];
    for (let s = 0; s < sub; s++) model.step();
  }, options);
}

// The frame loop of a replay (replayRun's, and firmware_runs.js's firmwareRun with its slew limit) on a model set up
// for `sub` steps a frame: from episode.start, advanceFrame(t) takes the model from frame t to frame t + 1; each frame's
// qpos is recorded, MuJoCo's warnings are read every WARNING_EVERY steps (a warned run ends there, run.warned), and the
// generator yields about every sliceMs (firstSliceMs for the first slice) with {done, nframe, run}. Returns the record
// {q ((nframe * nq) rad), frames, warned, sub}.
export function* framesRun(model, sub, episode, advanceFrame,
                           {sliceMs = 30, firstSliceMs = sliceMs, now = () => performance.now()} = {}) {
  const n = episode.nframe, nq = model.model.nq;
  const run = {q: new Float64Array(n * nq), frames: 1, warned: false, sub};
  model.reset(episode.start);
  for (let j = 0; j < nq; j++) run.q[j] = episode.start[j];
  model.forward();
  let t = 0, sinceCheck = 0;
  while (t < n - 1) {
    const started = now();
    do {
      advanceFrame(t);
      t += 1;
      const qpos = model.d.qpos;
      for (let j = 0; j < nq; j++) run.q[t * nq + j] = qpos[j];
      sinceCheck += sub;
      if (sinceCheck >= WARNING_EVERY || t === n - 1) {
        sinceCheck = 0;
        if (model.warned()) { run.warned = true; run.frames = t + 1; return run; }
      }
    } while (t < n - 1 && now() - started < (run.frames === 1 ? firstSliceMs : sliceMs));
    run.frames = t + 1;
    if (t < n - 1) yield {done: t, nframe: n, run};
  }
  run.frames = n;
  return run;
}

// A sliced run (holdRun, replayRun) to its end at once: its record.
export function runToEnd(generator) {
  let step = generator.next();
  while (!step.done) step = generator.next();
  return step.value;
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 1's background runs (the panel's worker runs them, worker.js)

// physai.experiments.servo_panel.servo_kp_curve as a generator: one step response per kp of kpGrid at the
// other values (yields after each); returns {kp, sagDeg, riseMs, bad} (NaN where the run did not settle).
export function* kpCurve(model, values, {kpGrid, q0, duration, link}) {
  const out = {kp: kpGrid, sagDeg: [], riseMs: [], bad: []};
  for (const kp of kpGrid) {
    const r = stepResponse(model, {...values, kp}, {q0, duration, link});
    out.sagDeg.push(r.settled ? r.sagDeg : NaN);
    out.riseMs.push(r.settled ? r.riseMs : NaN);
    out.bad.push(!r.settled);
    yield out;
  }
  return out;
}

// physai.experiments.servo_panel.servo_stability one kp row at a time: yields [row, cells] (true where the
// short run is unstable, laws.unstable) for each kp of stabilityKp over stabilityArmature.
export function* stabilityRows(model, values, {stabilityKp, stabilityArmature, stabilitySteps, q0, link}) {
  for (let i = 0; i < stabilityKp.length; i++) {
    yield [i, stabilityArmature.map((armature) => unstable(stepResponse(
      model, {...values, kp: stabilityKp[i], armature}, {q0, duration: stabilitySteps * values.timestep, link}), q0))];
  }
}
