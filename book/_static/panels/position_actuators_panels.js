// Chapter 1's page panel (physai.interface.position_actuators_panels: servo_spec, servo_twin; web.servo_live): the
// link on a <position> servo. The step response runs on the page at every input; the sag / rise curve over kp and
// the stability map run in a Web Worker (worker.js) when armature, timestep, integrator or damping change, and
// arrive when ready, the map row by row, so a control never waits for them. The analytic bound is drawn at once.
import {Model, engineParts} from './engine.js';
import {Plot, edges, el} from './figures.js';
import {degrees, unpack} from './laws.js';
import {kpCurve, stabilityRows, stepResponse} from './runs.js';
import {Panel, nextTask} from './ui.js';

const fix = (x) => (x === null ? NaN : x);

// the rise plot's time spans, ms: the shortest that holds 2.5 times the 90 % time (or the first 0.5 s without one)
const ZOOM_MS = [5, 10, 20, 50, 100, 200, 500, 1000, 3000];

export default class ServoPanel extends Panel {
  buildPlots(container) {
    super.buildPlots(container);
    // the rise, zoomed: the step plot's trace over its first milliseconds, beside it, so that the 10-90 % rise the
    // readout reports is as wide as the plot rather than a few pixels of a 3 s axis
    this.zoom = null;
    this.zoomPlot(500);
    const c = this.constants, map = this.plots.map;
    const kpEdges = edges(c.stabilityKp, true), armEdges = edges(c.stabilityArmature, false);
    const cells = map.layer('cells');   // one rectangle per cell, made once; a redraw sets the fills that changed
    this.cellRects = c.stabilityKp.map((_, i) => c.stabilityArmature.map((__, j) => {
      const x = map.x(armEdges[j]), y = map.y(kpEdges[i + 1]);
      return el('rect', {x, y, width: map.x(armEdges[j + 1]) - x, height: map.y(kpEdges[i]) - y, fill: c.mapFills[0]},
                cells);
    }));
  }

  zoomSpec(ms) {
    const step = this.spec.plots.find((p) => p.key === 'step');
    return {...step, key: 'rise', title: `the rise: first ${ms} ms`, xlabel: 'time (ms)', xlim: [0, ms], legend: [],
            notes: 0};
  }

  // the rise plot spanning `ms`, made again only when the span changes
  zoomPlot(ms) {
    if (this.zoom && this.zoom.spec.xlim[1] === ms) return this.zoom;
    const fresh = new Plot(null, this.zoomSpec(ms), this.plotOptions(this.zoomSpec(ms)));
    if (this.zoom) {
      if (this.zoom.svg.style.cssText) fresh.svg.style.cssText = this.zoom.svg.style.cssText;
      this.zoom.svg.replaceWith(fresh.svg);
    } else {
      this.plots.step.svg.after(fresh.svg);
    }
    this.zoom = fresh;
    return fresh;
  }

  extraPlots() {
    return [this.zoomSpec(500)];
  }

  allPlots() {
    return {...this.plots, rise: this.zoom};
  }

  // ---- the two sources of results

  // the stored first view (step response, kp curve and stability map at the grid's values), or the kernel's reply
  // at the controls' own values, whose curve and map are null until Python has run them
  decode(frame) {
    const s = frame.step, c = this.constants;
    return {step: {h: s.h, qDeg: unpack(s.q, c.traceStep), diverged: s.diverged, settled: s.settled, bad: s.bad,
                   tEnd: s.tEnd, sagDeg: fix(s.sagDeg), riseMs: fix(s.riseMs), riseWindow: s.riseWindow.map(fix),
                   readout: s.readout},
            curve: frame.curve && {kp: c.kpGrid, sagDeg: frame.curve.sagDeg.map(fix), riseMs: frame.curve.riseMs.map(fix),
                                   bad: frame.curve.bad},
            map: frame.map ?? c.stabilityKp.map(() => c.stabilityArmature.map(() => null)),
            mapSource: frame.map ? 'precomputed' : 'running'};
  }

  async start(mujoco, live) {
    this.model = new Model(mujoco, live.xml, live.engine);
    this.background = {curveKey: null, mapKey: null, curve: null, map: null, mapDone: false};
    try {
      // the worker's address computed here, not at load: the notebook widget's bundle is loaded from a blob: address
      this.worker = new Worker(new URL('worker.js', import.meta.url), {type: 'module'});
      this.worker.onmessage = (event) => this.onWorker(event.data);
      this.worker.onerror = () => { this.worker = null; };
      this.worker.postMessage({kind: 'start', live, constants: this.constants, parts: await engineParts()});
    } catch (error) {
      this.worker = null;   // without module workers the same runs go on the page, one at a time between tasks
    }
  }

  // the step response now, the curve and the map in the background when what they depend on changed
  update(start = performance.now()) {
    const v = {...this.values}, c = this.constants, b = this.background;
    const r = stepResponse(this.model, v, {q0: c.q0, duration: c.duration, link: c.link});
    const step = {...r, qDeg: Float64Array.from(r.q, degrees), readout: this.words(r),
                  bad: r.diverged || (!r.settled && r.swinging)};
    const curveKey = JSON.stringify([v.armature, v.timestep, v.integrator, v.dampratio]);
    const mapKey = JSON.stringify([v.timestep, v.integrator, v.dampratio]);
    const job = {generation: ++this.generation, values: v, curve: curveKey !== b.curveKey, map: mapKey !== b.mapKey};
    if (job.curve) { b.curveKey = curveKey; b.curve = null; }
    if (job.map) {
      b.mapKey = mapKey;
      b.map = c.stabilityKp.map(() => c.stabilityArmature.map(() => null));
      b.mapDone = false;
    }
    this.draw({step, curve: b.curve, map: b.map, mapSource: b.mapDone ? null : 'running'}, v);
    this.done(start, start);
    if (job.curve || job.map) {
      if (this.worker) this.worker.postMessage(job); else this.onPage(job);
    }
  }

  async onPage(job) {
    const c = this.constants;
    if (job.curve) {
      const runs = kpCurve(this.model, job.values, c);
      let step = runs.next();
      while (!step.done) { await nextTask(); if (job.generation !== this.generation) return; step = runs.next(); }
      this.onWorker({kind: 'curve', generation: job.generation, curve: step.value});
    }
    if (job.map) {
      for (const [row, cells] of stabilityRows(this.model, job.values, c)) {
        if (job.generation !== this.generation) return;
        this.onWorker({kind: 'map', generation: job.generation, row, cells});
        await nextTask();
      }
      this.onWorker({kind: 'map-done', generation: job.generation});
    }
  }

  onWorker(message) {
    const b = this.background;
    if (message.kind === 'error') {
      this.status.textContent = this.liveStatus(` (background runs failed: ${message.message})`);
      return;
    }
    if (message.generation < this.generation && message.kind !== 'map') return;
    if (message.kind === 'curve') {
      b.curve = message.curve;
      this.drawCurve(b.curve, this.current, this.values);
    } else if (message.kind === 'map' && b.map) {
      b.map[message.row] = message.cells.map(Number);
      this.drawMap(b.map, this.values, 'running');
    } else if (message.kind === 'map-done') {
      b.mapDone = true;
      this.root.dataset.mapDone = String(this.generation);
      this.drawMap(b.map, this.values, null);
    }
  }

  // ---- words and pictures

  // physai.interface.plots.readout: what a step response measured, in the description's words (a run not settled
  // swings or creeps; physai.interface.plots.readout_bad: only a diverged or swinging one reads as a failure)
  words(r) {
    if (r.diverged) return this.say('diverged', {});
    if (!r.settled) {
      return r.swinging ? this.say('swinging', {p2p: r.p2pDeg})
        : this.say('creeping', {p2p: r.p2pDeg, tail: this.constants.link.settleWindow});
    }
    const rise = Number.isFinite(r.riseMs) ? this.say('rise', {rise_ms: r.riseMs}) : this.say('no_rise', {});
    return this.say('settled', {sag: r.sagDeg, rise});
  }

  draw(results, values) {
    this.current = results.step;
    this.drawStep(results.step, values);
    this.drawCurve(results.curve, results.step, values);
    this.drawMap(results.map, values, results.mapSource);
  }

  drawStep(r, values) {
    const p = this.plots.step, c = this.colors, k = this.constants, [lo, hi] = p.spec.ylim;
    const g = p.layer('trace');
    p.path(g, [0, k.duration], [0, 0], {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    const [xs, ys] = p.columns(r.qDeg.length, (i) => r.h * i, (i) => Math.max(lo - 5, Math.min(hi + 5, r.qDeg[i])));
    p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
    const marks = p.layer('top-marks'), q0 = degrees(k.q0), avoid = [];
    if (!r.diverged && r.settled) {
      const qf = -r.sagDeg;
      p.path(marks, [0, k.duration], [qf, qf], {stroke: c.sag, 'stroke-width': 1, 'stroke-dasharray': '2 2'});
      const [t10, t90] = r.riseWindow;
      if (Number.isFinite(t10) && Number.isFinite(t90)) {
        const q10 = q0 + 0.1 * (qf - q0), q90 = q0 + 0.9 * (qf - q0);
        p.path(marks, [t10, t10], [q10 - 2, q10 + 2], {stroke: c.rise, 'stroke-width': 1.5});
        p.path(marks, [t90, t90], [q90 - 2, q90 + 2], {stroke: c.rise, 'stroke-width': 1.5});
        p.path(marks, [t10, t90], [q90, q90], {stroke: c.rise, 'stroke-width': 3});
      }
    }
    // the verdict where it covers the least of the trace: a diverged run's flag (and when), then the readout's words
    if (r.diverged) {
      const flag = this.verdictText(p, marks, this.say('flag', {}), true, {places: ['c', 'uc', 'lc'], attrs: {'font-size': 24}});
      if (flag) avoid.push(flag.box);
      const after = this.verdictText(p, marks, this.say('after', {t: r.tEnd}), true, {places: ['c', 'lc', 'uc'], avoid});
      if (after) avoid.push(after.box);
    }
    this.verdictText(p, marks, r.readout, r.bad, {places: ['lr', 'ur', 'll', 'ul'], avoid});
    p.title(this.say('step_title', {integrator: values.integrator, h_ms: values.timestep * 1e3}));
    this.setReadout(r.readout, r.bad);
    this.drawZoom(r);
  }

  // the rise plot: the trace over its first milliseconds, the settled line and the 10-90 % rise marked
  drawZoom(r) {
    const c = this.colors, k = this.constants, [t10, t90] = r.riseWindow ?? [NaN, NaN];
    const rises = r.settled && Number.isFinite(t90);
    const ms = rises ? ZOOM_MS.find((x) => x >= 2500 * t90) ?? ZOOM_MS[ZOOM_MS.length - 1] : 500;
    const z = this.zoomPlot(ms), [lo, hi] = z.spec.ylim, g = z.layer('trace'), marks = z.layer('top-marks');
    z.path(g, [0, ms], [0, 0], {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    const n = Math.min(r.qDeg.length, Math.ceil(ms / 1e3 / r.h) + 2);
    const [xs, ys] = z.columns(n, (i) => 1e3 * r.h * i, (i) => Math.max(lo - 5, Math.min(hi + 5, r.qDeg[i])));
    z.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
    if (!rises) {   // where it covers the least of the trace (a diverged one crosses the whole box); in the present
      // view left out rather than cross it, as a verdict (the readout line says it)
      z.placeText(marks, this.say('no_rise', {}), {class: 'pl-muted pl-halo'},
                  {places: ['uc', 'lc', 'ur', 'ul', 'lr', 'll', 'c'], strict: Boolean(this.present)});
      return;
    }
    const q0 = degrees(k.q0), qf = -r.sagDeg, q10 = q0 + 0.1 * (qf - q0), q90 = q0 + 0.9 * (qf - q0);
    z.path(marks, [0, ms], [qf, qf], {stroke: c.sag, 'stroke-width': 1, 'stroke-dasharray': '2 2'});
    z.path(marks, [1e3 * t10, 1e3 * t10], [q10 - 2, q10 + 2], {stroke: c.rise, 'stroke-width': 1.5});
    z.path(marks, [1e3 * t90, 1e3 * t90], [q90 - 2, q90 + 2], {stroke: c.rise, 'stroke-width': 1.5});
    z.path(marks, [1e3 * t10, 1e3 * t90], [q90, q90], {stroke: c.rise, 'stroke-width': 3});
    z.say(marks, this.say('rise', {rise_ms: r.riseMs}), z.x(1e3 * t90) + 6 * z.fs, z.y(q90) + 16 * z.fs, {fill: c.rise});
  }

  drawCurve(curve, r, values) {
    const p = this.plots.curve, c = this.colors;
    const g = p.layer('curve');
    // the current kp first: its marks, and its line once there are curves for it to mark a place on (while they run,
    // the plot is too narrow in the present view for the words beside it); the pending words then go where they
    // cross the least of them, over them
    const marks = p.layer('top-kp'), pending = p.layer('top-pending'), drawn = Boolean(curve && curve.sagDeg.length);
    if (drawn) p.path(marks, [values.kp, values.kp], p.spec.ylim, {stroke: c.current, 'stroke-width': 1.2, 'stroke-dasharray': '5 3'});
    if (r && r.settled && r.sagDeg > 0) p.mark(marks, values.kp, r.sagDeg, 'o', c.current);
    if (r && r.settled && Number.isFinite(r.riseMs)) p.mark(marks, values.kp, r.riseMs, 'o', c.current, 5, p.x, p.y2);
    if (drawn) {
      const n = curve.sagDeg.length, kps = curve.kp.slice(0, n);
      p.path(g, kps, curve.sagDeg.map((x) => (x > 0 ? x : NaN)), {stroke: c.sag_curve, 'stroke-width': 1.5});
      p.path(g, kps, curve.riseMs, {stroke: c.rise_curve, 'stroke-width': 1.5}, p.x, p.y2);
      kps.forEach((kp, i) => {
        if (curve.sagDeg[i] > 0) p.mark(g, kp, curve.sagDeg[i], 'dot', c.sag_curve, 5);
        p.mark(g, kp, curve.riseMs[i], 's', c.rise_curve, 5, p.x, p.y2);
        if (curve.bad[i]) p.mark(g, kp, 1.6e-3, 'x', c.diverged, 4);
      });
    } else {
      p.placeText(pending, this.say('curve_pending', {}), {class: 'pl-muted pl-halo', 'font-size': 11},
                  {places: ['c', 'uc', 'lc', 'ul', 'ur', 'll', 'lr']});
    }
  }

  drawMap(cells, values, source) {
    const p = this.plots.map, c = this.colors, k = this.constants;
    if (cells) {
      cells.forEach((row, i) => row.forEach((cell, j) => {
        const fill = k.mapFills[cell === null ? 0 : 1 + cell], rect = this.cellRects[i][j];
        if (rect.getAttribute('fill') !== fill) rect.setAttribute('fill', fill);
      }));
    }
    // the analytic bound, at once: kp = (hω*/h)² (I_link + armature), and hω = 2
    const bound = p.layer('bound');
    const star = k.criticalHOmega[values.integrator][String(values.dampratio)];
    const armature = Array.from({length: 101}, (_, i) => 0.1 * i / 100);
    const inertia = armature.map((a) => k.link.inertia + a);
    if (star !== null) {
      p.path(bound, armature, inertia.map((I) => (star / values.timestep) ** 2 * I), {stroke: c.bound, 'stroke-width': 2});
    }
    p.path(bound, armature, inertia.map((I) => (2.0 / values.timestep) ** 2 * I),
           {stroke: c.bound, 'stroke-width': 1, 'stroke-dasharray': '5 3'});
    const top = p.layer('top-point');
    p.mark(top, values.armature, values.kp, 'o', c.current);
    const hOmega = values.timestep * Math.sqrt(values.kp / (k.link.inertia + values.armature));
    const boundText = star !== null ? this.say('bound', {star}) : this.say('no_bound', {});
    p.text(top, `${boundText}, ${this.say('h_omega', {h_omega: hOmega})}`, p.m.l, p.noteY(0));
    if (source === 'running' && cells) {
      const rows = cells.filter((row) => row.every((x) => x !== null)).length;
      p.text(top, this.say('map_progress', {rows, total: cells.length}), p.m.l, p.noteY(1), {class: 'pl-muted'});
    }
    p.title(this.say('map_title', {integrator: values.integrator, h_ms: values.timestep * 1e3}));
  }
}
