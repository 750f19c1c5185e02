// Chapter 3's page panel (physai.interface.where_pd_runs_panels: pd_spec, pd_twin; web_arm.pd_live): the SO-101
// holding its standby pose, the PD in the control loop or in MuJoCo's step.
//
// A hold is 3 s of a six-joint arm with friction loss: thousands of MuJoCo steps, tens of milliseconds in
// WebAssembly at 1 ms (hundreds with RK4 or a fine timestep). So an input redraws the growth per tick (an equation,
// laws.js) at once, and the trajectory after its first few milliseconds of computing; the rest of the run goes in
// slices of about 20 ms, the page free between two, its partial trace redrawn at most every 100 ms; the next input
// drops the run in progress.
import {ArmView} from './arm3d_view.js';
import {Model, diverged} from './engine.js';
import {el} from './figures.js';
import {degrees, growthCurve, summarizeHold, unpack} from './laws.js';
import {holdRun} from './runs.js';
import {formatValue, plainNumbers} from './spec.js';
import {Panel} from './ui.js';

const SLICE_MS = 20;
const FIRST_SLICE_MS = 5;

export default class PdPanel extends Panel {
  buildPlots(container) {
    super.buildPlots(container);
    const k = this.constants, p = this.plots.hold, h = k.hold;
    // the trace has two ranges, as the kernel's panel: ±80° holds every joint's move, ±180° every joint's range
    const wide = p.remake({...p.spec, ylim: [-k.ylimDeg[1], k.ylimDeg[1]]}, container);
    container.insertBefore(wide.svg, p.svg.nextSibling);
    wide.svg.style.display = 'none';
    this.holdPlots = [p, wide];
    for (const plot of this.holdPlots) {   // the last second, where the hold is judged
      plot.svg.classList.add('pl-wide');
      const x0 = plot.x(h.duration - h.settleWindow);
      el('rect', {x: x0, y: plot.m.t, width: plot.x(h.duration) - x0, height: plot.h - plot.m.t - plot.m.b,
                  class: 'pl-shade'}, plot.layer('shade'));
    }
    this.curves = new Map();
    // the SO-101 in 3D, on demand (kept, open or not, when the plots are drawn again)
    this.arm3d = this.arm3d ? this.arm3d.attach(container, this.holdPlots) : new ArmView(this, container, 'hold', this.holdPlots);
  }

  presentAside() {
    return this.arm3d?.presentAside(['hold']) ?? null;   // the trace the view plays, its cursor the view's time
  }

  // ---- the two sources of results

  // a stored configuration: its ensemble's words and one draw of its worst joint (the growth is computed here); or
  // the kernel's reply, whose ensemble (hold) is null until Python has run it: its one run (run) and that run's note,
  // or at first the run's start (its steps so far, done, and no note unless it diverged), drawn as a run on its way
  decode(frame, values) {
    const s = frame.hold ?? frame.run, k = this.constants;
    const target = unpack(s.target, k.traceStep), sample = unpack(s.sample, k.traceStep);
    return {joint: s.joint, h: s.h, steps: sample.length, targetDeg: target, qDeg: sample, diverged: s.state === 'diverged',
            bad: s.bad, note: frame.hold ? this.say('ensemble', {words: s.words, n: s.n}) : s.words,
            done: frame.hold ? null : s.done ?? null, growth: this.growth(values)};
  }

  // a widget's reply, drawn as a stored frame; its run (at the reply's values, posed by the kernel) to the 3D view
  fromKernel(reply) {
    super.fromKernel(reply);
    if (!reply.frame || reply.generation !== this.asked?.generation) return;
    if (this.arm3d.record?.generation === reply.generation) return;   // a further reply: the same run
    if (reply.frame.run.done != null) return;   // the run's start: the view waits for the whole run
    const v = reply.values;
    this.arm3d.setRun({generation: reply.generation, values: v, params: {backend: v.backend, rateHz: v.rate_hz},
                       warned: reply.frame.run.state === 'diverged'});
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
  }

  // both backends' curves over the rates (kept for the latest 16 settings: a move of the rate or the backend redraws
  // them without recomputing, as the kernel's panel keeps them) and the growth at the current rate
  growth(v) {
    const k = this.constants;
    const common = {kp: v.kp, kv: v.kv, armature: v.armature, timestep: v.timestep, integrator: v.integrator,
                    inertia: k.inertia, damping: k.damping};
    const key = JSON.stringify([v.kp, v.kv, v.armature, v.timestep, v.integrator]);
    let curves = this.curves.get(key);
    if (!curves) {
      curves = {'in-loop': growthCurve(k.rates, {...common, backend: 'in-loop'}),
                'in-step': growthCurve(k.rates, {...common, backend: 'in-step'})};
      if (this.curves.size >= 16) this.curves.delete(this.curves.keys().next().value);
      this.curves.set(key, curves);
    }
    return {curves, current: growthCurve([v.rate_hz], {...common, backend: v.backend})[0]};
  }

  async update(start = performance.now()) {
    const generation = ++this.generation, v = {...this.values}, k = this.constants;
    const growth = this.growth(v);
    this.drawGrowth(growth, v);
    const params = {backend: v.backend, kp: v.kp, kv: v.kv, armature: v.armature, timestep: v.timestep,
                    integrator: v.integrator, forcerange: k.hold.forcerange, rateHz: v.rate_hz};
    const run = holdRun(this.model, params, k.hold, {sliceMs: SLICE_MS, firstSliceMs: FIRST_SLICE_MS});
    await this.drive(run, generation, start, ({run: record, done}) => this.drawHold(this.fromRecord(record, null, growth), v, done),
                     (record) => {
                       const summary = summarizeHold(record, k.hold, diverged({q: record.q.subarray(0, record.steps * this.model.model.nq),
                                                               warned: record.warned}, this.model.rule));
                       this.drawHold(this.fromRecord(record, summary, growth), v, null);
                       this.arm3d.setRun(record);
                     });
  }

  // a run's record as the picture's results: the worst joint's command and angle, the note
  fromRecord(record, summary, growth) {
    const nq = this.constants.hold.standby.length;
    const joint = summary ? summary.worst : (this.lastJoint ?? 0);
    if (summary) this.lastJoint = joint;
    const column = (a) => Float64Array.from({length: record.steps}, (_, i) => degrees(a[i * nq + joint]));
    return {joint, h: record.h, steps: record.steps, targetDeg: column(record.target), qDeg: column(record.q),
            diverged: summary?.diverged ?? false, bad: summary ? summary.state === 'diverged' || summary.chatters : false,
            note: summary ? this.words(summary, growth.current) : null, growth};
  }

  // physai.interface.where_pd_runs_panels.pd_note: the note, in the description's words (the run's state: chatters,
  // moves or still, each in the words STATE_WORDS names)
  words(s, growth) {
    const v = this.values, where = this.say('where', {backend: v.backend, rate: v.rate_hz});
    if (s.diverged) return this.say('diverged', {where, growth});
    const chatter = !s.chatters ? '' : s.chatterHz === null ? this.say('broadband', {}) : this.say('tone', {hz: s.chatterHz});
    const state = this.say({chatters: 'chatters', moves: 'moves', still: 'quiet'}[s.state], {});
    return this.say('held', {where, p2p: degrees(s.worstP2p), chatter, off: s.offsetDeg, state, growth});
  }

  // ---- the picture

  draw(results, values) {
    this.drawGrowth(results.growth, values);
    this.drawHold(results, values, results.done ?? null);
  }

  drawGrowth(g, v) {
    const p = this.plots.growth, c = this.colors, rates = this.constants.rates;
    const layer = p.layer('curves');
    p.path(layer, [rates[0], rates[rates.length - 1]], [1, 1], {stroke: c.bound, 'stroke-width': 1, 'stroke-dasharray': '5 3'});
    // growth above the axis' top runs along it, with clip marks; the current point, clipped, gives its value
    const top = p.spec.ylim[1];
    p.clippedPath(layer, rates, g.curves['in-loop'], {stroke: c.diverged, 'stroke-width': 1.6});
    p.clippedPath(layer, rates, g.curves['in-step'], {stroke: c.response, 'stroke-width': 1.6});
    const point = p.layer('top-point');
    p.mark(point, v.rate_hz, Math.min(g.current, top), 'o', c.current);
    // its clip mark (pointing up, with the growth) just under the circle, which sits on the edge
    if (g.current > top) {
      p.clipMark(point, p.x(v.rate_hz), p.y(top) + 7 * p.fs, -1, c.current, plainNumbers(formatValue(g.current, '.4g')));
    }
    p.title(this.say('growth_title', {growth: g.current, backend: v.backend, rate: v.rate_hz}));
  }

  // the worst joint's move and hold: its command and its angle (on the wide range once it leaves ±80°), the note on
  // the side the move leaves free; `done` (steps so far) while the run is on its way
  drawHold(r, values, done) {
    const k = this.constants, c = this.colors, wide = Array.prototype.some.call(r.qDeg, (x) => Math.abs(x) > k.ylimDeg[0]);
    const [narrow, wider] = this.holdPlots;   // the wide range's plot at the size the layout gave the other (present)
    Object.assign(wider.svg.style, {width: narrow.svg.style.width, height: narrow.svg.style.height});
    this.holdPlots.forEach((plot, i) => { plot.svg.style.display = (i === 1) === wide ? '' : 'none'; });
    const other = this.holdPlots[wide ? 0 : 1];
    other.layer('trace');
    other.layer('top-marks');
    const p = this.holdPlots[wide ? 1 : 0], g = p.layer('trace'), marks = p.layer('top-marks');
    const t = (i) => r.h * (i + 1), clip = (a) => (i) => Math.max(-1e4, Math.min(1e4, a[i]));
    const [cx, cy] = p.columns(r.steps, t, clip(r.targetDeg));
    p.path(g, cx, cy, {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    const [xs, ys] = p.columns(r.steps, t, clip(r.qDeg));
    p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.4});
    p.title(this.say('title', {joint: k.joints[r.joint]}));
    if (!r.note) {
      const running = this.say('running', {done: (done ?? 0) * values.timestep, total: k.hold.duration});
      // placed as the verdicts are, clear of the trace drawn so far (the top middle while the move leaves it free)
      p.placeText(marks, running, {class: 'pl-muted pl-halo', 'font-size': 11}, {places: ['uc', 'ur', 'ul']});
      this.setReadout(running, false);   // not the verdict of the setting before
      return;
    }
    // the note where the move leaves room (as the kernel's panel: above a move down), else where it covers the least
    // of the traces; a diverged run's flag first
    const down = k.hold.standby[r.joint] < 0, avoid = [];
    if (r.diverged) {
      const flag = this.verdictText(p, marks, this.say('flag', {}), true, {places: ['c', 'uc', 'lc'], attrs: {'font-size': 24}});
      if (flag) avoid.push(flag.box);
    }
    this.verdictText(p, marks, r.note, r.bad, {places: down ? ['ul', 'ur', 'll', 'lr'] : ['ll', 'lr', 'ul', 'ur'], avoid});
    this.setReadout(r.note.replaceAll('\n', ' · '), r.bad);
  }
}
