// MuJoCo in the reader's browser: MuJoCo's own WebAssembly build (npm @mujoco/mujoco, its single-threaded build)
// served from the site (_static/mujoco/, copied there by book/_ext/physai_engine.py), loaded once, when a reader
// asks a live panel to run (ui.js). One wrapper class, Model, in the style of MuJoCo's wasm/demo_app: a model and its data
// from MJCF text, the fields physai's runners write, the warning counters, and delete() for what it made.
//
// The divergence rule is physai.engine.mj.diverged's, with Python's constants: the page's engine block
// (physai.interface.web.engine_block) carries the MuJoCo warnings that count (physai.engine.mj.BLOWUP_WARNINGS,
// by name), the angle bound and the speed bound. No DOM here: the page, its worker and Node (the tests) share it.

// The site's engine files, next to this module. Computed when first needed, not at load: a module loaded from a blob:
// address (the notebook widget's bundle, widget.js) has no base a relative address resolves against; the widget
// never loads the engine.
const siteFile = (name) => new URL(`../mujoco/${name}`, import.meta.url).href;

let loading = null;
let parts = null;   // {wasm: the compiled WebAssembly.Module, glue: a blob URL of mujoco.js}, once loaded from the site

// The engine's module, loaded once (url: where mujoco.js is; Node passes the package's own, which the package loads
// its own way). From the site it comes in three steps, each a task of its own, so that the page paints and takes input
// between them: the WebAssembly compiled while it downloads (compileStreaming, off the page's thread), the glue script
// imported, then the two instantiated (MuJoCo's module factory with instantiateWasm, the hook Emscripten provides).
// Run in one go they make one long task (about twice the longest of the three: tests/test_web.py prints it).
//
// Each file is fetched once per page: the glue's text goes into a blob URL, and a worker of the page (chapter 1's
// background runs) gets the compiled module and that URL (engineParts) instead of fetching both again (a browser
// without a disk cache would: 10.6 MB twice).
export function load(url = null, given = null) {
  if (!loading) {
    const inSteps = url === null && typeof fetch === 'function' && typeof WebAssembly.compile === 'function';
    loading = inSteps ? loadInSteps(siteFile('mujoco.js'), given) : import(url ?? siteFile('mujoco.js'))
      .then((module) => module.default());
  }
  return loading;
}

// what a worker of this page needs to start the engine without fetching it: {wasm, glue}, or null before load()
// (or where the engine came from Node's package)
export async function engineParts() {
  await loading;
  return parts;
}

async function fetchGlue(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return URL.createObjectURL(new Blob([await response.text()], {type: 'text/javascript'}));
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

async function compileEngine() {
  const url = siteFile('mujoco.wasm');
  if (typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(fetch(url));
    } catch (error) {
      // a server that does not send application/wasm: compile the bytes instead
    }
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return WebAssembly.compile(await response.arrayBuffer());
}

async function loadInSteps(url, given) {
  const wasm = given?.wasm ?? await compileEngine();
  await pause();
  const glue = given?.glue ?? await fetchGlue(url);
  const {default: factory} = await import(glue);
  parts = {wasm, glue};
  await pause();
  return factory({
    instantiateWasm(imports, done) {
      WebAssembly.instantiate(wasm, imports).then((instance) => done(instance, wasm));
      return {};
    },
  });
}

// physai.engine.mj.diverged: MuJoCo warned that the run blew up, or an angle is not finite or past the bound, or a
// speed is not finite or past the speed bound. q, v: arrays (or null); rule: the engine block's.
export function diverged({q = null, v = null, warned = false}, rule) {
  if (warned) return true;
  if (q) for (let i = 0; i < q.length; i++) if (!(Math.abs(q[i]) <= rule.angleBound)) return true;
  if (v) for (let i = 0; i < v.length; i++) if (!(Math.abs(v[i]) <= rule.speedBound)) return true;
  return false;
}

export const WARNING_EVERY = 100;
// Steps between two reads of MuJoCo's warning counters: reading them every step makes a run several times slower.
// A runner that finds a counter risen replays the chunk from its saved start one step at a time (Model.chunk).

export class Model {
  // mujoco: the loaded engine; xml: MJCF text (physai's own, from the engine block); rule: the engine block's
  constructor(mujoco, xml, rule) {
    this.mujoco = mujoco;
    this.rule = rule;
    this.model = mujoco.MjModel.from_xml_string(xml);
    this.data = new mujoco.MjData(this.model);
    this.warnings = rule.warnings.map((name) => mujoco.mjtWarning[name].value);
    this.views = null;
    this.compiledLimits = Array.from({length: this.model.nu}, (_, i) => {   // each actuator's, as compiled
      const a = this.model.actuator(i), limits = {ctrl: a.ctrllimited, force: a.forcelimited};
      a.delete?.();
      return limits;
    });
  }

  get version() {
    return this.mujoco.mj_versionString();
  }

  // Live views onto MuJoCo's memory (qpos, qvel, ctrl, qfrc_applied, actuator_force), made again when the heap has
  // grown under them (a view then has length 0).
  get d() {
    const v = this.views;
    if (!v || v.qpos.length === 0 || v.ctrl.length === 0 && this.model.nu > 0) {
      const d = this.data;
      this.views = {qpos: d.qpos, qvel: d.qvel, ctrl: d.ctrl, qfrc_applied: d.qfrc_applied,
                    actuator_force: d.actuator_force};
    }
    return this.views;
  }

  // <option timestep integrator>; contacts off sets mjDSBL_CONTACT, constraints off mjDSBL_CONSTRAINT
  setOptions({timestep, integrator, contacts = true, constraints = true, clampctrl = true}) {
    const m = this.mujoco, opt = this.model.opt;
    const key = `mjINT_${String(integrator).toUpperCase()}`;
    if (!(key in m.mjtIntegrator)) throw new Error(`integrator must be a MuJoCo integrator, got ${integrator}`);
    opt.timestep = timestep;
    opt.integrator = m.mjtIntegrator[key].value;
    let flags = opt.disableflags;
    for (const [bit, on] of [['mjDSBL_CONTACT', contacts], ['mjDSBL_CONSTRAINT', constraints],
                             ['mjDSBL_CLAMPCTRL', clampctrl]]) {
      const value = m.mjtDisableBit[bit].value;
      flags = on ? flags & ~value : flags | value;
    }
    opt.disableflags = flags;
    opt.delete?.();
  }

  // physai.engine.mj.set_position_servo on actuators (indices): <position kp kv forcerange>, forcerange a number F
  // for ±F N·m or null for no clamp
  setPositionServo(actuators, kp, kv, forcerange) {
    const m = this.model, gain = m.actuator_gainprm, bias = m.actuator_biasprm, range = m.actuator_forcerange;
    const fixed = this.mujoco.mjtGain.mjGAIN_FIXED.value, affine = this.mujoco.mjtBias.mjBIAS_AFFINE.value;
    const gaintype = m.actuator_gaintype, biastype = m.actuator_biastype;
    const ngain = gain.length / m.nu, nbias = bias.length / m.nu;
    for (const a of actuators) {
      gaintype[a] = fixed;
      biastype[a] = affine;
      gain[a * ngain] = kp;
      bias[a * nbias] = 0.0;
      bias[a * nbias + 1] = -kp;
      bias[a * nbias + 2] = -kv;
      this.setLimited(a, {force: forcerange !== null});
      if (forcerange !== null) { range[2 * a] = -forcerange; range[2 * a + 1] = forcerange; }
    }
  }

  // Actuators as <motor>s: gain 1, no bias, no clamp (their ctrl is the force).
  setMotor(actuators) {
    this.setPositionServo(actuators, 0.0, 0.0, null);
    const m = this.model, gain = m.actuator_gainprm, bias = m.actuator_biasprm;
    const ngain = gain.length / m.nu, nbias = bias.length / m.nu;
    for (const a of actuators) {
      gain[a * ngain] = 1.0;
      bias.fill(0.0, a * nbias, a * nbias + 3);
    }
  }

  // an actuator's ctrllimited / forcelimited flags (byte arrays, written through MuJoCo's named access)
  setLimited(actuator, {ctrl, force}) {
    const a = this.model.actuator(actuator);
    if (ctrl !== undefined) a.ctrllimited = Boolean(ctrl);
    if (force !== undefined) a.forcelimited = Boolean(force);
    a.delete?.();
  }

  // physai.engine.mj.set_armature: dof_armature (one value, every dof), then the constants that follow it
  setArmature(armature) {
    this.model.dof_armature.fill(armature);
    this.mujoco.mj_setConst(this.model, this.data);
  }

  // a fresh start: MuJoCo's mj_resetData (state at qpos0, warning counters zero), then qpos (and qvel) as given
  reset(qpos = null, qvel = null) {
    this.mujoco.mj_resetData(this.model, this.data);
    const d = this.d;
    if (qpos) for (let i = 0; i < qpos.length; i++) d.qpos[i] = qpos[i];
    if (qvel) for (let i = 0; i < qvel.length; i++) d.qvel[i] = qvel[i];
  }

  forward() {
    this.mujoco.mj_forward(this.model, this.data);
  }

  step() {
    this.mujoco.mj_step(this.model, this.data);
  }

  // whether one of the rule's warnings has counted since the last reset (data.warning is the data's own vector,
  // never deleted; each get() is a copy, deleted)
  warned() {
    const stats = this.data.warning;
    let count = 0;
    for (const index of this.warnings) {
      const stat = stats.get(index);
      count += stat.number;
      stat.delete();
    }
    return count > 0;
  }

  // The state to replay a chunk from (qpos, qvel, time) and put it back: a runner that found a warning risen.
  save() {
    const d = this.d;
    return {qpos: Float64Array.from(d.qpos), qvel: Float64Array.from(d.qvel), time: this.data.time};
  }

  restore(saved) {
    this.reset(saved.qpos, saved.qvel);
    this.data.time = saved.time;
  }

  delete() {
    this.data.delete();
    this.model.delete();
  }
}
