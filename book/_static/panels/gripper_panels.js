// Chapter 5's page panel (physai.interface.gripper_panels: gripper_spec, gripper_twin; web_arm.gripper_live): the
// SO-101's gripper closing on a cube, the moving jaw's force beside |τ|/lever and the cube's slide along the jaws,
// with the grasp table's verdict. A grasp is a few hundred MuJoCo steps with contacts (thousands at a fine timestep),
// so it goes in slices (ui.js's drive), the page free between two; the next input drops the grasp in progress.
// No 3D view here: physai-arm3d draws the arm without the cube (the plots and the verdict say what the grasp did).
import {Model} from './engine.js';
import {gripRun, gripVerdict} from './gripper_runs.js';
import {unpack} from './laws.js';
import {formatValue} from './spec.js';
import {Panel} from './ui.js';

const SLICE_MS = 20;
const FIRST_SLICE_MS = 5;

export default class GripperPanel extends Panel {
  buildPlots(container) {
    super.buildPlots(container);
    const k = this.constants, s = this.plots.slide;
    s.path(s.layer('slip'), s.spec.xlim, [k.slipMm, k.slipMm], {stroke: '#999999', 'stroke-width': 0.8,
                                                                 'stroke-dasharray': '2 3'});
    for (const p of [this.plots.force, s]) {
      const x = p.x(k.close);
      p.path(p.layer('weight'), [k.close, k.close], p.spec.ylim, {stroke: '#bbbbbb', 'stroke-width': 0.8});
      p.say(p.layer('weight-label'), 'weight on', x + 4, p.m.t + 12 * p.fs, {'font-size': 11, class: 'pl-muted'});
    }
  }

  // the panel's setup (physai.interface.gripper_panels.panel_setup)
  setup(v) {
    const k = this.constants;
    return {torqueLimit: v.torque_limit, kp: v.kp, kv: k.kv, armature: v.armature, command: k.commands[v.command],
            mass: v.mass, mu: v.mu, condim: Number(v.condim), timestep: v.timestep, integrator: v.integrator};
  }

  // ---- the two sources of results

  // a stored grasp; the kernel's first reply has none yet (null: the grasp follows in its second), the picture then
  // keeps its traces
  decode(frame) {
    const s = frame.grasp, k = this.constants;
    if (!s) return {pending: true};
    const jaw = unpack(s.gripJaw, k.forceStep), law = unpack(s.gripLaw, k.forceStep);
    const slide = unpack(s.gripSlide, k.slideStep);
    const time = jaw.map((_, i) => s.h * (i + 1));
    const fix = (a) => a.map((x) => (x === null ? NaN : x));
    return {time, jaw: fix(jaw), law: fix(law), slide: fix(slide), words: s.gripWords, bad: s.verdict !== 'held'};
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
    this.grasp = live.grasp;
  }

  async update(start = performance.now()) {
    const generation = ++this.generation, v = {...this.values}, k = this.constants, setup = this.setup(v);
    const run = gripRun(this.model, setup, this.grasp, k, {sliceMs: SLICE_MS, firstSliceMs: FIRST_SLICE_MS});
    await this.drive(run, generation, start, ({run: record}) => this.draw(this.fromRecord(record, null, setup), v),
                     (record) => this.draw(this.fromRecord(record, gripVerdict(record, setup, k), setup), v));
  }

  // a run's record as the picture's results (the words once it is done)
  fromRecord(r, verdict, setup) {
    const k = this.constants, n = r.steps;
    const time = Array.from(r.time.subarray(0, n)), clip = (x, lo, hi) => Math.max(lo, Math.min(hi, x));
    const jaw = Array.from(r.jaw.subarray(0, n), (x) => clip(x, 0, k.forceTop));
    const law = Array.from({length: n}, (_, i) => clip(Math.abs(r.torque[i]) / r.lever[i], 0, k.forceTop));
    const slide = Array.from(r.slide.subarray(0, n), (x) => clip(1e3 * x, -1, k.slideTop));
    if (!verdict) return {time, jaw, law, slide, running: n * r.h};
    return {time, jaw, law, slide, words: this.words(verdict), bad: verdict.verdict !== 'held', diverged: r.diverged};
  }

  // physai.interface.gripper_panels.status
  words(r) {
    return this.say(r.verdict, {squeeze: r.squeeze, margin: r.margin, slide: r.slideMm, depth: r.penetrationMm,
                                jitter: r.jitter});
  }

  // ---- the picture

  draw(r, values) {
    const c = this.colors, f = this.plots.force, s = this.plots.slide, k = this.constants;
    // every text over the slide plot keeps clear of the weight's label, a text and not a drawn point
    const label = [s.x(k.close), s.m.t, s.x(k.close) + 4 + 60 * s.fs, s.m.t + 16 * s.fs];
    // a transient text ('pending', 'running…') placed as the verdict is, clear of the traces drawn (the last
    // setting's while the kernel's grasp is pending, this one's so far while it runs), at its corners first
    const transient = (text) => {
      s.placeText(s.layer('top-marks'), text, {class: 'pl-muted pl-halo', 'font-size': 11},
                  {places: ['ul', 'ur', 'll', 'lr'], avoid: [label]});
      this.setReadout(text, false);   // not the verdict of the setting before
    };
    if (r.pending) {
      transient(this.say('pending', {}));
      return;
    }
    const legend = f.spec.legend;
    const fl = f.layer('traces');
    f.path(fl, r.time, r.law, {stroke: legend[1][1], 'stroke-width': 1.2, 'stroke-dasharray': '5 3'});
    f.path(fl, r.time, r.jaw, {stroke: legend[0][1], 'stroke-width': 1.4});
    s.path(s.layer('traces'), r.time, r.slide, {stroke: k.slideColor, 'stroke-width': 1.4});
    // the limit as a percentage of Menagerie's, and what kp asks of it when the gripper starts closing (kp times
    // the open gripper's error): far above the limit, the clamp decides the squeeze and kp only the approach
    const percent = 100 * values.torque_limit / k.rated;
    const asked = values.kp * Math.abs(k.open - k.commands[values.command]);
    f.title(`limit ±${formatValue(values.torque_limit, '.2f')} N·m = ${formatValue(percent, '.0f')} % of ` +
            `${formatValue(k.rated, '.2f')} · kp asks ${formatValue(asked, '.3g')} N·m`);
    if (r.running !== undefined) {
      transient(this.say('running', {t: r.running}));
      return;
    }
    // where the words cross the least of the data (in the present view, nowhere or not at all)
    this.verdictText(s, s.layer('top-marks'), r.words, r.bad, {places: ['ul', 'ur', 'll', 'lr'], avoid: [label]});
    this.setReadout(r.words, r.bad);
  }
}
