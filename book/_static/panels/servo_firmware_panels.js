// Chapter 6's page panel (physai.interface.servo_firmware_panels: settings_spec; web_firmware: settings_twin,
// settings_live): the STS3215's settings on the chapter's fitted arm, a 20° step of the shoulder lift and a 6 s
// segment of the held-out teleoperation replayed at 30 Hz, with the readouts of the notebook's panel. The backlash is
// the notebook panel's only (its play is a second hinge on every joint, another model than the page's).
// Both runs are a few thousand MuJoCo steps, run in slices (ui.js's drive); the next input drops the run in progress.
import {Model, diverged} from './engine.js';
import {summarizeReplay, unpack} from './laws.js';
import {firmwareReadouts, firmwareRun, firmwareServo} from './firmware_runs.js';
import {Panel} from './ui.js';

const SLICE_MS = 20;

// physai.interface.servo_firmware_panels.readout_lines: the readouts in the words of the description
export function readoutLines(r, say) {
  const pct = 100 * r.riseFraction;
  return [say('kp', {kp: r.kp, forcerange: r.forcerange}),
          Number.isFinite(r.sag) ? say('sag', r) : say('cannot_hold', r),
          say('band', r),
          Number.isFinite(r.rise) ? say('rise', {rise: pct, t: r.rise}) : say('no_rise', {rise: pct}),
          say(r.verdict, r), say('segment', r)];
}

export default class FirmwarePanel extends Panel {
  buildPlots(container) {
    super.buildPlots(container);
    const k = this.constants, na = k.armJoints.length, j = k.stepJoint, c = this.colors;
    const s = this.plots.step, g = this.plots.segment;
    const ts = Array.from({length: k.step.nframe}, (_, i) => i / k.step.fps);
    const command = ts.map((_, i) => k.step.actionDeg[i * na + j]);
    // the command as a staircase (held from frame to frame), dashed
    const xs = [], ys = [];
    ts.forEach((t, i) => { if (i) { xs.push(t); ys.push(command[i - 1]); } xs.push(t); ys.push(command[i]); });
    s.path(s.layer('command'), xs, ys, {stroke: c.real, 'stroke-width': 1.5, 'stroke-dasharray': '4 3'});
    const tg = Array.from({length: k.segment.nframe}, (_, i) => i / k.segment.fps);
    g.path(g.layer('real'), tg, tg.map((_, i) => k.segment.stateDeg[i * na + j]),
           {stroke: c.real, 'stroke-width': 2.4, 'stroke-opacity': 0.7});
  }

  // a stored setting: the two traces of the step joint and the readouts' lines; the kernel's first reply has none
  // yet (null: the runs follow in its second), the picture then keeps its traces
  decode(frame) {
    const r = frame.runs, k = this.constants;
    if (!r) return {pending: true};
    return {step: unpack(r.step, k.steps), segment: unpack(r.segment, k.steps), lines: r.lines, bad: r.bad};
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
    const k = this.constants;
    this.episodes = {step: {...k.step, ...live.episodes.step}, segment: {...k.segment, ...live.episodes.segment}};
    this.summaryConstants = {armIndex: k.armJoints.map((_, i) => i), chatterDeg: k.chatterDeg, ctrlLowDeg: [],
                             ctrlHighDeg: []};
  }

  // both runs of one setting as one sliced run
  * runs(servo) {
    const k = this.constants, opts = {sliceMs: SLICE_MS};
    const step = yield* firmwareRun(this.model, servo, k, this.episodes.step, opts);
    const segment = yield* firmwareRun(this.model, servo, k, this.episodes.segment, opts);
    return {step, segment};
  }

  summarize(record, episode) {
    const nq = this.model.model.nq;
    const isDiverged = diverged({q: record.q.subarray(0, record.frames * nq), warned: record.warned}, this.model.rule);
    return summarizeReplay(record, episode, isDiverged, this.summaryConstants);
  }

  async update(start = performance.now()) {
    const generation = ++this.generation, v = {...this.values}, k = this.constants;
    const servo = firmwareServo(v, k);
    await this.drive(this.runs(servo), generation, start, () => this.setReadout(this.say('running', {}), false),
                     ({step, segment}) => {
                       const a = this.summarize(step, this.episodes.step);
                       const b = this.summarize(segment, this.episodes.segment);
                       const r = firmwareReadouts(servo, a, b, k);
                       const j = k.stepJoint, na = k.armJoints.length;
                       const trace = (s) => Array.from({length: s.simDeg.length / na}, (_, i) => s.simDeg[i * na + j]);
                       this.draw({step: trace(a), segment: trace(b),
                                  lines: readoutLines({...r, riseFraction: k.rise}, (w, x) => this.say(w, x)),
                                  bad: r.verdict !== 'quiet' && r.verdict !== 'still'});
                     });
  }

  // ---- the picture

  draw(r) {
    const k = this.constants, s = this.plots.step, g = this.plots.segment;
    if (r.pending) {
      g.layer('top-marks');   // not the verdict of the setting before
      this.setReadout(this.say('running', {}), false);
      return;
    }
    const simStep = s.spec.legend[1][1], simSeg = g.spec.legend[1][1];
    s.path(s.layer('sim'), r.step.map((_, i) => i / k.step.fps), r.step, {stroke: simStep, 'stroke-width': 1.6});
    g.path(g.layer('sim'), r.segment.map((_, i) => i / k.segment.fps), r.segment,
           {stroke: simSeg, 'stroke-width': 1.3});
    const marks = g.layer('top-marks');
    g.say(marks, r.lines[4], g.w - g.m.r - 6, g.h - g.m.b - 8 * g.fs,
          this.verdictAttrs(r.bad, {'text-anchor': 'end'}));
    this.setReadout(r.lines.join(' · '), r.bad);
  }
}
