// Chapter 6's runs on MuJoCo in the browser (physai.interface.web_firmware), mirrored from physai's runner
// physai.engine.firmware.replay without play hinges, and the readouts of
// physai.interface.servo_firmware_panels.readouts. tests/test_web_firmware.py compares them with Python MuJoCo's.
//   firmwareServo   the settings on the fitted spring (servo_firmware_panels.settings_model, backlash 0)
//   firmwareRun     one replay as a generator: the <position> servo per joint, each physics step's command
//                   clipped to within slewmax*dt of the step before (physai.laws.sts3215.slew_limited)
//   timeToTarget    servo_firmware_panels.time_to_target
//   firmwareReadouts servo_firmware_panels.readouts (the page's: no backlash)
// No DOM, no words.
import {degrees, round} from './laws.js';
import {framesRun} from './runs.js';

// physai.laws.sts3215.Settings on the fitted spring (k: the constants of web_firmware.settings_constants):
// kp from the table of every P register and supply position, forcerange from the supply and the torque limit,
// kv = max(lag kp - damping, 0) per joint (servo_firmware.on_lag), slewmax in rad/s (Infinity: Goal_Speed 0).
export function firmwareServo(values, k) {
  const p = round(values.p_register), limit = round(values.torque_limit), speed = round(values.goal_speed);
  const vi = round((values.supply_voltage - k.voltages[0]) / (k.voltages[1] - k.voltages[0]));
  const pi = k.pRegisters.indexOf(p);
  if (vi < 0 || vi >= k.voltages.length || pi < 0) throw new Error('a setting outside the table');
  const kp = k.kp[vi][pi], forcerange = k.forcerange[vi] * limit / k.fullTorque;
  const kv = k.lag.map((lag, j) => Math.max(lag * kp - k.damping[j], 0.0));
  const slewmax = speed === 0 ? Infinity : speed * k.radPerStep + 0.0;
  return {kp, forcerange, kv, slewmax, timestep: values.timestep, integrator: values.integrator};
}

// physai.engine.firmware.mj_model: <position kp kv forcerange> per actuator, the spring's damping, friction loss and
// armature per dof, the timestep that fits a whole number of steps in a frame, contacts off, the model's limits.
function configure(model, servo, k, fps) {
  const m = model.model, sub = Math.max(1, round(1.0 / (fps * servo.timestep)));
  model.setOptions({timestep: 1.0 / (fps * sub), integrator: servo.integrator, contacts: false});
  for (let a = 0; a < m.nu; a++) {
    model.setLimited(a, model.compiledLimits[a]);
    model.setPositionServo([a], servo.kp, servo.kv[a], servo.forcerange);
    m.dof_damping[a] = k.damping[a];
    m.dof_frictionloss[a] = k.frictionloss[a];
    m.dof_armature[a] = k.armature[a];
  }
  model.mujoco.mj_setConst(model.model, model.data);
  return sub;
}

// One replay as a generator (runs.js's replayRun, with the slew limit): frame t's command u[t] (rad, every joint)
// is the command of the `sub` steps that lead to frame t + 1, each step's clipped to within slewmax*dt of the step
// before (the first as it is). Yields after about sliceMs; returns the record {q (nframe*nq rad), frames, warned}.
// episode: {fps, nframe, u, start}.
export function* firmwareRun(model, servo, k, episode, options = {}) {
  const sub = configure(model, servo, k, episode.fps), nu = model.model.nu;
  const step = servo.slewmax * model.model.opt.timestep, limited = Number.isFinite(servo.slewmax);
  const last = new Float64Array(nu);
  let first = true;
  return yield* framesRun(model, sub, episode, (t) => {
    for (let s = 0; s < sub; s++) {
      const ctrl = model.d.ctrl;
      for (let a = 0; a < nu; a++) {
        let u = episode.u[t * nu + a];
        if (limited && !first) u = Math.min(Math.max(u, last[a] - step), last[a] + step);
        last[a] = u;
        ctrl[a] = u;
      }
      first = false;
      model.step();
    }
  }, options);
}

// physai.interface.servo_firmware_panels.time_to_target: s from the step's command to `rise` of the step on the
// step joint, interpolated between frames; Infinity if it never gets there (or diverged). simDeg: (nframe * na).
export function timeToTarget(simDeg, diverged, k, fps) {
  const na = k.armJoints.length, j = k.stepJoint;
  const q = [];
  for (let t = k.stepAt - 1; t < simDeg.length / na; t++) q.push(simDeg[t * na + j]);
  if (diverged || !q.every(Number.isFinite)) return Infinity;
  const frac = q.map((x) => (x - q[0]) / k.stepDeg);
  const i = frac.findIndex((x) => x >= k.rise);
  if (i < 0) return Infinity;
  if (i === 0) return 0.0;
  const t = i - 1 + (k.rise - frac[i - 1]) / (frac[i] - frac[i - 1]);
  return (t - 1) / fps;
}

// physai.interface.servo_firmware_panels.readouts without backlash, from the step's and the segment's summaries
// (laws.summarizeReplay) and the servo (firmwareServo).
export function firmwareReadouts(servo, step, segment, k) {
  const {kp, forcerange: force} = servo, load = k.load, j = k.stepJoint;
  const sag = load <= force ? degrees(load / kp) : NaN;
  const band = degrees(k.frictionloss[j] / kp + 0.0 / 2);
  const chatter = segment.chatter;
  let verdict;
  if (segment.diverged) verdict = 'diverged';
  else if (segment.chatters) verdict = 'chatters';
  else if (chatter === 0) verdict = 'still';
  else verdict = 'quiet';
  return {kp, forcerange: force, load, sag, band, rise: timeToTarget(step.simDeg, step.diverged, k, k.step.fps),
          chatter, margin: chatter > 0 ? k.chatterDeg / chatter : Infinity, verdict, mae: segment.mae,
          limit: k.chatterDeg};
}
