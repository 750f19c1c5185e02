// Chapter 5's runs in the page: physai.engine.gripper.grip (one grasp: the gripper closes on the floating cube, then
// the cube's weight comes on and the jaws hold it) on the engine block's model (physai.interface.web_arm.gripper_xml),
// and physai.experiments.gripper.verdict with the panel's words' figures (physai.interface.gripper_panels.panel_run).
// No DOM: the page and Node (tests/test_web_gripper.py) share it.

// physai.engine.gripper.build's fields for one setup on the compiled model: the cube's mass and inertia (a uniform
// box's m·edge²/6), its friction and condim, the options, the gripper's servo, its armature, then mj_setConst
function configure(model, s, g) {
  const m = model.model, mj = model.mujoco;
  m.body_mass[g.cube] = s.mass;
  m.body_inertia.fill(s.mass * g.edge * g.edge / 6, 3 * g.cube, 3 * g.cube + 3);
  m.geom_friction[3 * g.cubeGeom] = s.mu;
  m.geom_condim[g.cubeGeom] = s.condim;
  model.setOptions({timestep: s.timestep, integrator: s.integrator});
  model.setPositionServo([g.actuator], s.kp, s.kv, s.torqueLimit);
  m.dof_armature[g.gripperDof] = s.armature;
  m.body_gravcomp[g.cube] = 1.0;   // before mj_setConst, which counts the bodies with gravity compensation
  mj.mj_setConst(m, model.data);
}

// physai.engine.gripper._cube_contacts: the moving jaw's and the fixed jaw's normal force (the contact's first
// constraint force row: the elliptic cone's mj_contactForce), the moving jaw's moment about the gripper's axis, the
// deepest overlap
function cubeContacts(model, g, bodyOf) {
  const d = model.data, n = d.ncon;
  if (n === 0) return [0, 0, 0, 0];
  // the contacts copied out first: each get() allocates, which can grow the heap and empty the typed views taken
  // before it (efc_force, xanchor, xaxis are taken after; bodyOf is a copy of geom_bodyid)
  const contacts = d.contact, found = [];
  for (let i = 0; i < n; i++) {
    const c = contacts.get(i);
    const b1 = bodyOf[c.geom1], b2 = bodyOf[c.geom2];
    if (b1 === g.cube || b2 === g.cube) {
      const frame = c.frame, pos = c.pos;
      found.push({b1, b2, address: c.efc_address, dist: c.dist, normal: [frame[0], frame[1], frame[2]],
                  pos: [pos[0], pos[1], pos[2]]});
    }
    c.delete();
  }
  if (found.length === 0) return [0, 0, 0, 0];
  const efc = d.efc_force, anchor = d.xanchor, axis = d.xaxis;
  const [ax, ay, az] = [axis[3 * g.joint], axis[3 * g.joint + 1], axis[3 * g.joint + 2]];
  const [px, py, pz] = [anchor[3 * g.joint], anchor[3 * g.joint + 1], anchor[3 * g.joint + 2]];
  let jaw = 0, fixed = 0, moment = 0, depth = -Infinity;
  for (const {b1, b2, address, dist, normal, pos} of found) {
    const other = b1 === g.cube ? b2 : b1, f = address >= 0 ? efc[address] : 0;
    depth = Math.max(depth, -dist);
    if (other === g.jaw) {
      jaw += f;
      // the normal points from geom1 to geom2: the push on the jaw is along it when the jaw is geom2
      const sign = b2 === g.jaw ? f : -f;
      const fx = normal[0] * sign, fy = normal[1] * sign, fz = normal[2] * sign;
      const rx = pos[0] - px, ry = pos[1] - py, rz = pos[2] - pz;
      moment += ax * (ry * fz - rz * fy) + ay * (rz * fx - rx * fz) + az * (rx * fy - ry * fx);
    } else if (other === g.palm) {
      fixed += f;
    }
  }
  return [jaw, fixed, moment, Math.max(depth, 0)];
}

// One grasp, sliced: a generator that yields {done, nstep, run} every sliceMs of computing and returns the run
// {h, steps, time, q, torque, jaw, fixed, lever, pen, slide, diverged} (Float64Arrays of nstep, the first `steps`
// filled), as physai's GripRun. s: {torqueLimit, kp, kv, armature, command, mass, mu, condim, timestep,
// integrator}; g: the engine block's grasp; k: the panel's constants (close, hold).
export function* gripRun(model, s, g, k, {sliceMs = 20, firstSliceMs = sliceMs, now = () => performance.now()} = {}) {
  configure(model, s, g);
  const m = model.model, h = s.timestep, nclose = Math.round(k.close / h), nstep = nclose + Math.round(k.hold / h);
  if (nstep > model.rule.maxSteps) throw new Error(`a grasp of ${nstep} steps is more than ${model.rule.maxSteps}`);
  model.reset();
  const qpos = model.data.qpos;
  for (const [adr, angle] of Object.entries(g.pose)) qpos[Number(adr)] = angle;
  qpos[g.gripperQpos] = g.open;
  const ctrl = model.data.ctrl;
  g.armQpos.forEach((adr, a) => { ctrl[a] = qpos[adr]; });
  ctrl[g.actuator] = s.command;
  model.forward();
  const run = {h, steps: 0, diverged: false}, bodyOf = Int32Array.from(m.geom_bodyid);
  for (const key of ['time', 'q', 'torque', 'jaw', 'fixed', 'lever', 'pen', 'slide']) {
    run[key] = new Float64Array(nstep).fill(NaN);
  }
  let start = null;
  const cubeRel = () => {
    const x = model.data.xpos;
    return x[3 * g.cube + 2] - x[3 * g.palm + 2];
  };
  let k0 = 0;
  while (k0 < nstep) {
    const started = now();
    do {
      if (k0 === nclose) { m.body_gravcomp[g.cube] = 0.0; start = cubeRel(); }
      model.step();
      // fresh views each step: reading the contacts allocates, and a grown heap leaves engine.js's views empty
      const d = model.data, qpos = d.qpos, q = qpos[g.gripperQpos], v = d.qvel[g.gripperDof];
      let finite = true;
      for (let i = 0; i < qpos.length; i++) if (!Number.isFinite(qpos[i])) { finite = false; break; }
      if (model.warned() || !finite || !(Math.abs(v) <= model.rule.speedBound)) {
        run.diverged = true;
        return run;
      }
      const [jaw, fixed, moment, depth] = cubeContacts(model, g, bodyOf);
      run.time[k0] = model.data.time;
      run.q[k0] = q;
      run.torque[k0] = d.actuator_force[g.actuator];
      run.jaw[k0] = jaw;
      run.fixed[k0] = fixed;
      run.lever[k0] = jaw > 0 ? Math.abs(moment) / jaw : NaN;
      run.pen[k0] = depth;
      run.slide[k0] = start === null ? 0 : start - cubeRel();
      k0 += 1;
      run.steps = k0;
    } while (k0 < nstep && now() - started < (run.steps <= nclose / 4 ? firstSliceMs : sliceMs));
    if (k0 < nstep) yield {done: k0, nstep, run};
  }
  return run;
}

// physai.experiments.gripper.verdict on a run, with physai.interface.gripper_panels.panel_run's margin
// (physai.laws.grip.slip_margin): {squeeze, penetrationMm, slideMm, jitter, margin, verdict}
export function gripVerdict(run, s, k) {
  if (run.diverged) {
    return {squeeze: NaN, penetrationMm: NaN, slideMm: NaN, jitter: NaN, margin: 0, verdict: 'diverged'};
  }
  const n = run.steps, end = run.time[n - 1];
  let sum = 0, count = 0, lo = Infinity, hi = -Infinity, depth = -Infinity;
  for (let i = 0; i < n; i++) {
    if (!(run.time[i] > end - k.tail)) continue;
    const f = run.jaw[i];
    sum += f;
    count += 1;
    lo = Math.min(lo, f);
    hi = Math.max(hi, f);
    depth = Math.max(depth, run.pen[i]);
  }
  const squeeze = sum / count, jitter = hi - lo, slide = run.slide[n - 1];
  let verdict = 'held';
  if (slide * 1e3 > k.slipMm) verdict = 'slips';
  else if (jitter > k.jitterFraction * Math.max(squeeze, 1e-9)) verdict = 'jitters';
  else if (depth * 1e3 > k.crushMm) verdict = 'crushed';
  const margin = Number.isFinite(squeeze) && squeeze > 0 ? 2 * s.mu * squeeze / (s.mass * k.gravity) : 0;
  return {squeeze, penetrationMm: depth * 1e3, slideMm: slide * 1e3, jitter, margin, verdict};
}
