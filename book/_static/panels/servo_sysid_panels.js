// Chapter 4's page panel (physai.interface.servo_sysid_panels: sysid_spec, sysid_twin; web_arm.sysid_live): a
// recorded episode replayed open loop under the servo on the controls, drawn against the recording, with the error
// per joint and the sag in held poses. A replay is thousands of MuJoCo steps, so it goes in slices (ui.js's drive),
// the page free between two; the next input drops the replay in progress.
import {ArmView} from './arm3d_view.js';
import {Model, diverged} from './engine.js';
import {unpack, summarizeReplay} from './laws.js';
import {replayRun} from './runs.js';
import {Panel} from './ui.js';

const SLICE_MS = 20;
const FIRST_SLICE_MS = 5;

export default class SysidPanel extends Panel {
  buildPlots(container) {
    super.buildPlots(container);
    const k = this.constants, e = k.episode, na = k.armJoints.length, o = this.plots.overlay;
    o.svg.classList.add('pl-wide');
    this.plots.errors.svg.classList.add('pl-bars');
    this.plots.sags.svg.classList.add('pl-bars');
    this.jointIndex = k.joints.map((j) => k.armJoints.indexOf(j));
    const real = o.layer('real'), t = Array.from({length: e.nframe}, (_, i) => i / e.fps);
    for (const j of this.jointIndex) {
      o.path(real, t, t.map((_, i) => e.stateDeg[i * na + j]), {stroke: this.colors.real, 'stroke-width': 2.4,
                                                                'stroke-opacity': 0.7});
    }
    const s = this.plots.sags;
    s.path(s.layer('zero'), s.spec.xlim, [0, 0], {stroke: '#555555', 'stroke-width': 0.8});
    // the SO-101 in 3D, on demand (kept, open or not, when the plots are drawn again)
    this.arm3d = this.arm3d ? this.arm3d.attach(container, [o]) : new ArmView(this, container, 'replay', [o]);
  }

  presentAside() {
    return this.arm3d?.presentAside(['overlay']) ?? null;   // the trace the view replays, its cursor the view's time
  }

  // ---- the two sources of results

  // a stored replay: the plotted joints' traces, the bars, the words (a chaotic one: its verdict alone); the
  // kernel's first reply has none yet (null: the replay follows in its second), the picture then keeps its traces
  decode(frame) {
    const s = frame.replay, k = this.constants;
    if (!s) return {pending: true};
    if (s.chaotic) {
      return {chaotic: true, status: this.say('chaotic', {mae: s.mae}), bad: true, sagReal: k.sagReal};
    }
    const fix = (x) => (x === null ? NaN : x);
    return {traces: s.sim.map((x) => unpack(x, k.steps)), jointMae: s.jointMae.map(fix), sag: s.sag.map(fix),
            sagReal: k.sagReal.map(fix), status: s.status, bad: s.diverged || s.chatters || s.farOff};
  }

  // a widget's complete reply, drawn as a stored frame; its replay (at the reply's values, posed with the recording by
  // the kernel: servo_sysid_panels.replay_poses) to the 3D view
  fromKernel(reply) {
    super.fromKernel(reply);
    if (!reply.frame?.replay || reply.generation !== this.asked?.generation) return;
    if (this.arm3d.record?.generation === reply.generation) return;
    this.arm3d.setRun({generation: reply.generation, values: reply.values});
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
    this.episode = {...this.constants.episode, u: live.episode.u, start: live.episode.start};
  }

  async update(start = performance.now()) {
    const generation = ++this.generation, v = this.values, k = this.constants;
    const servo = {...k.servo, ...v};   // the fitted servo, changed by the controls named like its fields
    const run = replayRun(this.model, servo, this.episode, {sliceMs: SLICE_MS, firstSliceMs: FIRST_SLICE_MS});
    await this.drive(run, generation, start, ({run: record}) => this.draw(this.fromRecord(record, null), v),
                     (record) => {
                       const s = summarizeReplay(record, this.episode, diverged({q: record.q.subarray(0, record.frames * this.model.model.nq),
                                                                                  warned: record.warned}, this.model.rule), k);
                       this.draw(this.fromRecord(record, s), v);
                       this.arm3d.setRun(record);
                     });
  }

  // a replay's record as the picture's results: the plotted joints' traces so far; once done, its figures and words
  fromRecord(record, s) {
    const k = this.constants, nq = record.q.length / k.episode.nframe;
    const traces = this.jointIndex.map((j) => Array.from({length: record.frames},
                                                         (_, i) => record.q[i * nq + k.armIndex[j]] * 180 / Math.PI));
    if (!s) return {traces, running: (record.frames - 1) / k.episode.fps};
    return {traces, jointMae: s.jointMae, sag: s.sag, sagReal: s.sagReal, status: this.words(s),
            bad: this.verdict(s) !== 'stable'};
  }

  // physai.interface.servo_sysid_panels.replay_status: which words a replay gets, the first that applies; only
  // 'stable' is a good run ('far_off': smooth, but over farOffRatio times the teleport's error on the episode)
  verdict(s) {
    const k = this.constants;
    if (s.diverged || !s.simDeg.every(Number.isFinite)) return 'diverged';
    if (s.chatters) return 'chatters';
    if (s.mae > k.farOffRatio * k.teleportDeg) return 'far_off';
    return 'stable';
  }

  words(s) {
    return this.say(this.verdict(s), {chatter: s.chatter, mae: s.mae, ratio: s.mae / this.constants.teleportDeg});
  }

  // ---- the picture

  draw(r) {
    const k = this.constants, c = this.colors, e = k.episode, p = this.plots.overlay, na = k.armJoints.length;
    const marks = p.layer('top-marks'), x = p.w - p.m.r - 6, y = p.m.t + 14 * p.fs;
    if (r.pending) {
      const pending = this.say('pending', {});
      p.say(marks, pending, x, y, {'text-anchor': 'end', class: 'pl-muted pl-halo', 'font-size': 11});
      this.setReadout(pending, false);   // not the verdict of the setting before
      return;
    }
    const g = p.layer('sim');
    const eb = this.plots.errors.layer('bars'), sb = this.plots.sags.layer('bars');
    const legend = p.spec.legend;   // real, then each simulated joint in its colour
    (r.traces || []).forEach((trace, i) => {
      p.path(g, trace.map((_, t) => t / e.fps), trace, {stroke: legend[i + 1][1], 'stroke-width': 1.3});
    });
    if (r.running !== undefined) {
      const running = this.say('running', {t: r.running});
      p.say(marks, running, x, y, {'text-anchor': 'end', class: 'pl-muted pl-halo', 'font-size': 11});
      this.setReadout(running, false);   // not the verdict of the setting before
      return;
    }
    this.verdictText(p, marks, r.status, r.chaotic || r.bad, {places: r.chaotic ? ['uc', 'c', 'ur', 'ul'] : ['ur', 'ul', 'lr', 'll']});
    const sim = legend[1][1], sag = this.plots.sags.spec.legend[1][1];
    for (let j = 0; j < na; j++) {
      if (r.jointMae) this.plots.errors.bar(eb, j, 0.8, r.jointMae[j], sim);
      this.plots.sags.bar(sb, j - 0.2, 0.4, r.sagReal[j], c.real);
      if (r.sag) this.plots.sags.bar(sb, j + 0.2, 0.4, r.sag[j], sag);
    }
    this.setReadout(r.status, r.bad);
  }
}
