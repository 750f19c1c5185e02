// The book's live panels: MuJoCo in the reader's browser (physai.interface.web writes each panel's block).
//
// A block `<div class="physai-live" hidden>` holds its configuration as JSON and names the static twin it upgrades.
// On the first view nothing heavy loads: this script only offers "Run MuJoCo live" beside the twin and waits for the
// reader to touch the twin (or for the page's address to carry a setting of the panel). Then it imports MuJoCo's
// WebAssembly build (_static/mujoco/mujoco_wasm.js), builds the panel in the block, shows it where the twin was
// and hides the twin. Without WebAssembly it says so in one line and leaves the twin.
//
// The step response runs on the page at every slider input (a few milliseconds); the sag / rise curve over kp and
// the stability map run in a Web Worker (physai-live-worker.js) and arrive when ready, the map row by row, so a
// slider never waits for them. The analytic bound of the map is drawn at once.
import * as core from './physai-live-core.js';

const ENGINE_URL = new URL('mujoco/mujoco_wasm.js', import.meta.url).href;
const WORKER_URL = new URL('physai-live-worker.js', import.meta.url).href;
const SVG = 'http://www.w3.org/2000/svg';

let enginePromise = null;
export function loadEngine() {
  if (!enginePromise) {
    enginePromise = import(ENGINE_URL).then((module) => module.default());
  }
  return enginePromise;
}

// ---------------------------------------------------------------------------------------------------------------
// Styles (one <style> per page)

const CSS = `
.physai-live-panel{background:#fff;color:#222;border:1px solid #ccc;border-radius:4px;padding:8px;
  font-family:sans-serif;font-size:13px;max-width:100%;box-sizing:border-box}
.physai-live-panel .pl-head{display:flex;flex-wrap:wrap;align-items:center;gap:6px 12px;margin-bottom:4px}
.physai-live-panel .pl-title{font-weight:bold}
.physai-live-panel .pl-status{color:#555;font-size:12px}
.physai-live-panel .pl-controls{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:center;margin-bottom:6px}
.physai-live-panel label{white-space:nowrap}
.physai-live-panel input[type=range]{width:150px;vertical-align:middle}
.physai-live-panel .pl-value{display:inline-block;min-width:5.5em;font-family:monospace}
.physai-live-panel button{font-size:13px;padding:2px 8px;cursor:pointer}
.physai-live-panel .pl-plots{display:flex;flex-wrap:wrap;gap:4px}
.physai-live-panel .pl-plots svg{flex:1 1 300px;max-width:420px;min-width:0;height:auto;background:#fff}
.physai-live-panel .pl-readout{font-family:monospace;font-size:14px;margin:2px 0 4px}
.physai-live-panel .pl-readout.pl-bad{color:#d62728;font-weight:bold}
.physai-live-panel .pl-note{font-size:12px;color:#444;margin-top:4px}
.physai-live-panel .pl-fallback{color:#8a5a00}
.physai-live-offer{margin:4px 0;font-size:13px}
.physai-live-offer button{font-size:13px;padding:2px 10px;cursor:pointer}
.physai-live-present{position:fixed;inset:0;z-index:10000;overflow:auto;border:none;border-radius:0;padding:6px 10px;
  font-size:14px}
.physai-live-present .pl-plots{display:grid;grid-template-columns:62% 38%;grid-template-rows:1fr 1fr;
  height:calc(100vh - 9.5em);min-height:260px}
.physai-live-present .pl-plots svg{max-width:none;width:100%;height:100%}
.physai-live-present .pl-plots svg.pl-step{grid-row:1 / span 2}
.physai-live-present .pl-note{display:none}
.physai-live-present input[type=range]{width:120px}
.physai-live-panel .pl-readout,.physai-live-panel svg text{white-space:pre}
.physai-live-panel label.pl-off{opacity:.55}
.physai-live-panel svg{color:#222}
.physai-live-panel .pl-grid{stroke:#e6e6e6}
.physai-live-panel .pl-frame{stroke:#888}
.physai-live-panel .pl-legend-bg{fill:#fff}
.physai-live-panel .pl-halo{stroke:#fff;stroke-width:3px}
.physai-live-panel .pl-muted{fill:#555}
html[data-theme=dark] .physai-live-panel{background:#1c1f23;color:#e2e2e2;border-color:#4a4f55;color-scheme:dark}
html[data-theme=dark] .physai-live-panel .pl-plots svg{background:#15181b;color:#e2e2e2}
html[data-theme=dark] .physai-live-panel .pl-status,html[data-theme=dark] .physai-live-panel .pl-note{color:#b9b9b9}
html[data-theme=dark] .physai-live-panel .pl-fallback{color:#e7b85a}
html[data-theme=dark] .physai-live-panel .pl-readout.pl-bad{color:#ff7070}
html[data-theme=dark] .physai-live-panel .pl-grid{stroke:#30353a}
html[data-theme=dark] .physai-live-panel .pl-frame{stroke:#8a9096}
html[data-theme=dark] .physai-live-panel .pl-legend-bg{fill:#15181b}
html[data-theme=dark] .physai-live-panel .pl-halo{stroke:#15181b}
html[data-theme=dark] .physai-live-panel .pl-muted{fill:#aaa}
html[data-theme=dark] .physai-live-panel [stroke="#222222"]{stroke:#e2e2e2}
html[data-theme=dark] .physai-live-panel [fill="#222222"]{fill:#e2e2e2}
html[data-theme=dark] .physai-live-panel [stroke="#555555"]{stroke:#b0b0b0}
html[data-theme=dark] .physai-live-panel [fill="#e6e6e6"]{fill:#3a3f44}
html[data-theme=dark] .physai-live-panel [fill="#f7c6c6"]{fill:#7a3030}
html[data-theme=dark] .physai-live-panel [fill="#e8f1fa"]{fill:#1d3447}
html[data-theme=dark] .physai-live-offer button{color-scheme:dark}
`;
// Dark mode: the book's dark theme sets html[data-theme=dark]. The plots' neutral parts carry classes (pl-grid,
// pl-frame, pl-legend-bg, pl-halo, pl-muted) and their text follows the SVG's color; the palette's ink, dark grey
// and the stability map's pale fills are drawn as presentation attributes, which a CSS rule overrides, so the rules
// above repaint exactly those colors.

export function addStyle() {
  if (document.getElementById('physai-live-style')) return;
  const style = document.createElement('style');
  style.id = 'physai-live-style';
  style.textContent = CSS;
  document.head.appendChild(style);
}

// ---------------------------------------------------------------------------------------------------------------
// A small SVG plot: axes with linear or log scales, ticks, labels, and layers redrawn in place

export function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

export const fmtTick = (v) => {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-2) return `1e${Math.round(Math.log10(a))}`;
  return String(Number(v.toPrecision(3)));
};

export class Plot {
  // notes: lines of text between the title and the plot box (drawn with noteY(i)), so they never cover data
  // xticks: [[value, label], ...] for a categorical x axis (its labels, no vertical grid), instead of numbers
  constructor(parent, {width = 400, height = 290, title, xlabel, ylabel, xlim, ylim, xlog = false, ylog = false,
                       y2 = null, className = '', notes = 0, xticks = null}) {
    this.w = width; this.h = height;
    this.m = {l: 54, r: y2 ? 52 : 12, t: 24 + 15 * notes, b: 42};
    this.svg = el('svg', {viewBox: `0 0 ${width} ${height}`, role: 'img', class: className,
                          'aria-label': `${title}: ${ylabel} against ${xlabel}`,
                          preserveAspectRatio: 'xMidYMid meet'}, parent);
    this.x = this.scale(xlim, xlog, this.m.l, width - this.m.r);
    this.y = this.scale(ylim, ylog, height - this.m.b, this.m.t);
    this.y2 = y2 ? this.scale(y2.lim, y2.log, height - this.m.b, this.m.t) : null;
    const id = `pl-clip-${Math.random().toString(36).slice(2)}`;
    const clip = el('clipPath', {id}, el('defs', {}, this.svg));
    el('rect', {x: this.m.l, y: this.m.t, width: width - this.m.l - this.m.r, height: height - this.m.t - this.m.b},
       clip);
    this.axes(title, xlabel, ylabel, xlim, ylim, xlog, ylog, y2, xticks);
    this.body = el('g', {'clip-path': `url(#${id})`}, this.svg);
    this.top = el('g', {}, this.svg);
  }

  scale([lo, hi], log, a, b) {
    const f = log ? Math.log10 : (v) => v;
    const flo = f(lo), fhi = f(hi);
    const s = (v) => a + (f(v) - flo) / (fhi - flo) * (b - a);
    s.log = log; s.lim = [lo, hi];
    return s;
  }

  ticks([lo, hi], log) {
    if (log) {
      const out = [];
      for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) out.push(10 ** e);
      return out;
    }
    const span = hi - lo;
    const step0 = 10 ** Math.floor(Math.log10(span / 5));
    const step = [1, 2, 5, 10].map((k) => k * step0).find((s) => span / s <= 6);
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(Math.abs(v) < 1e-12 ? 0 : v);
    return out;
  }

  axes(title, xlabel, ylabel, xlim, ylim, xlog, ylog, y2, xticks) {
    const {l, r, t, b} = this.m, W = this.w, H = this.h;
    const g = el('g', {'font-size': 12, fill: 'currentColor'}, this.svg);
    el('rect', {x: l, y: t, width: W - l - r, height: H - t - b, fill: 'none', stroke: '#888', class: 'pl-frame'}, g);
    for (const [v, label] of xticks ?? this.ticks(xlim, xlog).map((v) => [v, fmtTick(v)])) {
      const x = this.x(v);
      if (!xticks) el('line', {x1: x, x2: x, y1: t, y2: H - b, stroke: '#eee', class: 'pl-grid'}, g);
      el('text', {x, y: H - b + 14, 'text-anchor': 'middle'}, g).textContent = label;
    }
    for (const v of this.ticks(ylim, ylog)) {
      const y = this.y(v);
      el('line', {x1: l, x2: W - r, y1: y, y2: y, stroke: '#eee', class: 'pl-grid'}, g);
      el('text', {x: l - 4, y: y + 4, 'text-anchor': 'end'}, g).textContent = fmtTick(v);
    }
    if (y2) {
      for (const v of this.ticks(y2.lim, y2.log)) {
        el('text', {x: W - r + 4, y: this.y2(v) + 4, fill: y2.color}, g).textContent = fmtTick(v);
      }
      const yl = el('text', {x: W - 10, y: (t + H - b) / 2, 'text-anchor': 'middle', fill: y2.color,
                             transform: `rotate(90 ${W - 10} ${(t + H - b) / 2})`}, g);
      yl.textContent = y2.label;
    }
    el('text', {x: (l + W - r) / 2, y: H - 8, 'text-anchor': 'middle'}, g).textContent = xlabel;
    const yl = el('text', {x: 12, y: (t + H - b) / 2, 'text-anchor': 'middle',
                           transform: `rotate(-90 12 ${(t + H - b) / 2})`}, g);
    yl.textContent = ylabel;
    this.titleNode = el('text', {x: (l + W - r) / 2, y: 16, 'text-anchor': 'middle', 'font-weight': 'bold'}, g);
    this.titleNode.textContent = title;
  }

  layer(name) {
    this.layers = this.layers || {};
    if (!this.layers[name]) this.layers[name] = el('g', {}, name.startsWith('top') ? this.top : this.body);
    this.layers[name].replaceChildren();
    return this.layers[name];
  }

  // a polyline through finite points (a non-finite value breaks it), in pixels from data via sx, sy
  path(g, xs, ys, attrs, sx = this.x, sy = this.y) {
    let d = '', pen = false;
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i], y = ys[i];
      if (!Number.isFinite(x) || !Number.isFinite(y) || (sy.log && y <= 0) || (sx.log && x <= 0)) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${sx(x).toFixed(1)} ${sy(y).toFixed(1)}`;
      pen = true;
    }
    return el('path', {d, fill: 'none', ...attrs}, g);
  }

  text(g, s, x, y, attrs = {}) {
    const node = el('text', {x, y, 'font-size': 12, fill: 'currentColor', ...attrs}, g);
    node.textContent = s;
    return node;
  }

  // the baseline of note line i (0, 1, ...) between the title and the plot box (the constructor's notes)
  noteY(i) {
    return 24 + 15 * i + 10;
  }

  // n samples (time(i), value(i)) as a trace's points: all of them where there are few, else the lowest and the
  // highest value in every pixel column, in time order, so that a swing that flips sides every step keeps its
  // full width. Returns [xs, ys].
  columns(n, time, value) {
    const cols = Math.round(this.w - this.m.l - this.m.r), [t0, t1] = this.x.lim;
    const xs = [], ys = [];
    if (n <= 2 * cols) {
      for (let i = 0; i < n; i++) { xs.push(time(i)); ys.push(value(i)); }
      return [xs, ys];
    }
    let col = -1, lo = 0, hi = 0, tlo = 0, thi = 0;
    const flush = () => {
      if (col < 0) return;
      const [a, b] = tlo <= thi ? [[tlo, lo], [thi, hi]] : [[thi, hi], [tlo, lo]];
      xs.push(a[0], b[0]); ys.push(a[1], b[1]);
    };
    for (let i = 0; i < n; i++) {
      const t = time(i), y = value(i), c = Math.floor((t - t0) / (t1 - t0) * cols);
      if (c !== col) { flush(); col = c; lo = hi = y; tlo = thi = t; continue; }
      if (y < lo) { lo = y; tlo = t; }
      if (y > hi) { hi = y; thi = t; }
    }
    flush();
    return [xs, ys];
  }

  // a precomputed envelope [low, high] per time bin over `duration` (null where there is none), drawn as a band
  band(g, [low, high], duration, color) {
    const bins = low.length, dt = duration / bins;
    const xs = [], ys = [];
    for (let i = 0; i < bins; i++) if (low[i] !== null) { xs.push((i + 0.5) * dt); ys.push(high[i]); }
    for (let i = bins - 1; i >= 0; i--) if (low[i] !== null) { xs.push((i + 0.5) * dt); ys.push(low[i]); }
    this.path(g, xs, ys, {stroke: color, 'stroke-width': 1.6, fill: color, 'fill-opacity': 0.25});
  }

  // corner: ur, ul, lr or ll; dy moves it down (user units) from there
  legend(entries, corner = 'ur', dy = 0) {
    const g = this.layer('top-legend');
    const {l, r, t, b} = this.m;
    const rowH = 15, width = 30 + 6.2 * Math.max(...entries.map(([label]) => label.length));
    const x0 = corner.endsWith('r') ? this.w - r - width - 4 : l + 4;
    const y0 = (corner.startsWith('u') ? t + 4 : this.h - b - 4 - rowH * entries.length) + dy;
    el('rect', {x: x0, y: y0, width, height: rowH * entries.length + 4, fill: '#fff', 'fill-opacity': 0.85,
                class: 'pl-legend-bg'}, g);
    entries.forEach(([label, color, kind], i) => {
      const y = y0 + 12 + rowH * i;
      if (kind === 'box') el('rect', {x: x0 + 4, y: y - 8, width: 14, height: 9, fill: color}, g);
      else if (kind === 'x') this.text(g, '×', x0 + 6, y + 1, {fill: color, 'font-size': 13});
      else if (kind === 'o') el('circle', {cx: x0 + 11, cy: y - 4, r: 4, fill: 'none', stroke: color, 'stroke-width': 2}, g);
      else el('line', {x1: x0 + 4, x2: x0 + 18, y1: y - 4, y2: y - 4, stroke: color, 'stroke-width': 2,
                       'stroke-dasharray': {dash: '4 3', dot: '2 3'}[kind] || 'none'}, g);
      this.text(g, label, x0 + 22, y, {'font-size': 11});
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// What every chapter's panel shares: its frame (a head with the title and the engine's status, a row of controls
// ending in reset and present, the readout line), the address that follows the controls, the present view. A panel
// keeps this.config, this.block, this.values and writeUrl() of its own.

export class LivePanel {
  // The panel's root with its head, and its row of controls (not yet in the root): {root, controls}.
  frame(className) {
    const id = `physai-live-${this.config.key}`;
    const root = document.createElement('div');
    root.className = className;
    root.id = `${id}-panel`;
    const head = document.createElement('div');
    head.className = 'pl-head';
    const title = document.createElement('span');
    title.className = 'pl-title';
    title.textContent = this.block.dataset.title || 'Live panel';
    this.status = document.createElement('span');
    this.status.className = 'pl-status';
    head.append(title, this.status);
    root.appendChild(head);

    const controls = document.createElement('div');
    controls.className = 'pl-controls';
    this.inputs = {};
    return {root, controls};
  }

  // reset and present at the end of the row of controls, the row into the root, then the readout line
  endControls(root, controls) {
    const button = (label, title, onClick) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.title = title;
      b.addEventListener('click', onClick);
      controls.appendChild(b);
      return b;
    };
    this.resetButton = button('reset', 'back to the chapter\'s setting', () => this.reset());
    this.presentButton = button('present', 'full screen for a projector (Esc to leave)', () => this.togglePresent());
    root.appendChild(controls);

    this.readoutNode = document.createElement('div');
    this.readoutNode.className = 'pl-readout';
    this.readoutNode.setAttribute('aria-live', 'polite');
    root.appendChild(this.readoutNode);
  }

  // the plots and the note under them into the root, the root into the block; the inputs at the values; Esc
  // leaves the present view
  endBuild(root, plots) {
    root.appendChild(plots);
    this.note = document.createElement('div');
    this.note.className = 'pl-note';
    root.appendChild(this.note);
    this.block.appendChild(root);
    this.root = root;
    this.syncInputs();
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.present) this.togglePresent();
    });
    if (this.presentAtStart) this.togglePresent();
  }

  syncInputs() {
    for (const [name, c] of Object.entries(this.inputs)) {
      c.input.value = c.fromValue(this.values[name]);
      this.showValue(name);
    }
  }

  // a slider's value as text beside it and for screen readers
  showValue(name) {
    const c = this.inputs[name];
    if (!c.out) return;
    const text = c.show(this.values[name]);
    c.out.textContent = text;
    c.input.setAttribute('aria-valuetext', text);
  }

  // a control moved: its new value, shown; returns when the input happened (where a latency starts)
  takeInput(name, event) {
    const c = this.inputs[name];
    this.values[name] = c.toValue(c.input.value);
    this.showValue(name);
    return event && event.timeStamp ? event.timeStamp : performance.now();
  }

  // the address follows the controls a quarter second after the last move (browsers throttle replaceState)
  scheduleUrl() {
    clearTimeout(this.urlTimer);
    this.urlTimer = setTimeout(() => this.writeUrl(), 250);
  }

  togglePresent() {
    this.present = !this.present;
    this.root.classList.toggle('physai-live-present', this.present);
    this.presentButton.textContent = this.present ? 'leave present' : 'present';
    this.writeUrl();
  }

  isLive() {
    return this.config.browserIntegrators.includes(this.values.integrator);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Chapter 1's panel: the link on a <position> servo

export const nearestIndex = (values, v, log) => {
  let best = 0;
  values.forEach((x, i) => {
    const d = log ? Math.abs(Math.log(x + 1e-9) - Math.log(v + 1e-9)) : Math.abs(x - v);
    const db = log ? Math.abs(Math.log(values[best] + 1e-9) - Math.log(v + 1e-9)) : Math.abs(values[best] - v);
    if (d < db) best = i;
  });
  return best;
};

const KP_RANGE = [1, 30000];
const KP_STEPS = 1000;
const PLOT_WIDTH = 340;
const PLOT_HEIGHT = 260;

class ServoPanel extends LivePanel {
  constructor(block, config, mujoco) {
    super();
    this.block = block;
    this.config = config;
    this.colors = config.colors;
    this.link = new core.Link(mujoco, config.xml, 'servo-link');
    this.version = mujoco.mj_versionString();
    this.latencies = [];
    this.drawn = 0;
    this.generation = 0;
    this.mapCells = null;
    this.values = {...this.fromDefaults(), ...this.fromTwin(), ...this.fromUrl()};
    this.build();
    this.startWorker();
    this.update('all');
  }

  fromDefaults() {
    const d = this.config.defaults;
    return {kp: d.kp, armature: d.armature, timestep: d.timestep, integrator: d.integrator, dampratio: d.dampratio};
  }

  // the twin's setting when the reader touched it, so the live panel opens where the reader was
  fromTwin() {
    const id = this.config.twin;
    const out = {};
    if (!id) return out;
    const kp = document.getElementById(`${id}-kp-value`);
    const armature = document.getElementById(`${id}-armature-value`);
    const integrator = document.getElementById(`${id}-integrator`);
    if (kp && Number.isFinite(parseFloat(kp.textContent))) out.kp = parseFloat(kp.textContent);
    if (armature && Number.isFinite(parseFloat(armature.textContent))) out.armature = parseFloat(armature.textContent);
    if (integrator && integrator.selectedOptions && integrator.selectedOptions[0]) {
      const name = integrator.selectedOptions[0].textContent.trim();
      if (this.config.integrators.includes(name)) out.integrator = name;
    }
    return out;
  }

  // the page's address: ?servo-kp=3000&servo-armature=0.028&servo-h=5&servo-integrator=Euler&servo-zeta=1
  fromUrl() {
    const q = new URLSearchParams(location.search);
    const k = this.config.key;
    const out = {};
    const num = (name, lo, hi) => {
      const v = parseFloat(q.get(`${k}-${name}`));
      return Number.isFinite(v) && v >= lo && v <= hi ? v : undefined;
    };
    const kp = num('kp', ...KP_RANGE);
    const armature = num('armature', 0, 0.1);
    const h = num('h', ...this.config.timestepRangeMs);
    const zeta = num('zeta', 0, 10);
    if (kp !== undefined) out.kp = kp;
    if (armature !== undefined) out.armature = armature;
    if (h !== undefined) out.timestep = h / 1e3;
    if (zeta !== undefined && this.config.dampratios.includes(zeta)) out.dampratio = zeta;
    const integrator = q.get(`${k}-integrator`);
    if (integrator && this.config.integrators.includes(integrator)) out.integrator = integrator;
    this.presentAtStart = q.get(`${k}-present`) === '1';
    return out;
  }

  writeUrl() {
    clearTimeout(this.urlTimer);
    const q = new URLSearchParams(location.search);
    const k = this.config.key, v = this.values;
    q.set(`${k}-kp`, String(Number(v.kp.toPrecision(4))));
    q.set(`${k}-armature`, String(Number(v.armature.toFixed(4))));
    q.set(`${k}-h`, String(Number((v.timestep * 1e3).toFixed(1))));
    q.set(`${k}-integrator`, v.integrator);
    q.set(`${k}-zeta`, String(v.dampratio));
    if (this.present) q.set(`${k}-present`, '1'); else q.delete(`${k}-present`);
    history.replaceState(history.state, '', `${location.pathname}?${q.toString()}${location.hash}`);
  }

  // ---- DOM

  build() {
    const cfg = this.config, id = `physai-live-${cfg.key}`;
    const {root, controls} = this.frame('physai-live-panel');
    this.status.textContent = `MuJoCo ${this.version} (WebAssembly) in this page`;
    this.readouts = {};
    const slider = (name, label, min, max, step, toValue, fromValue, show) => {
      const lab = document.createElement('label');
      lab.textContent = `${label} `;
      const input = document.createElement('input');
      Object.assign(input, {type: 'range', min, max, step, id: `${id}-${name}`});
      const out = document.createElement('span');
      out.className = 'pl-value';
      out.id = `${id}-${name}-value`;
      lab.append(input, ' ', out);
      controls.appendChild(lab);
      this.inputs[name] = {input, toValue, fromValue, show, out};
      input.addEventListener('input', (event) => this.onInput(name, event));
    };
    const logKp = (p) => KP_RANGE[0] * (KP_RANGE[1] / KP_RANGE[0]) ** (p / KP_STEPS);
    slider('kp', 'kp', 0, KP_STEPS, 1, (s) => Number(logKp(Number(s)).toPrecision(4)),
           (v) => Math.round(Math.log(v / KP_RANGE[0]) / Math.log(KP_RANGE[1] / KP_RANGE[0]) * KP_STEPS),
           (v) => `${Number(v.toPrecision(4))} N·m/rad`);
    slider('armature', 'armature', 0, 0.1, 0.0005, Number, (v) => v, (v) => `${v.toFixed(4)} kg·m²`);
    slider('timestep', 'timestep', cfg.timestepRangeMs[0], cfg.timestepRangeMs[1], 0.1,
           (s) => Number(s) / 1e3, (v) => (v * 1e3).toFixed(1), (v) => `${(v * 1e3).toFixed(1)} ms`);
    const choice = (name, label, options, show) => {
      const lab = document.createElement('label');
      lab.textContent = `${label} `;
      const select = document.createElement('select');
      select.id = `${id}-${name}`;
      for (const o of options) {
        const opt = document.createElement('option');
        opt.value = String(o);
        opt.textContent = show(o);
        select.appendChild(opt);
      }
      lab.appendChild(select);
      controls.appendChild(lab);
      this.inputs[name] = {input: select, toValue: (s) => (typeof options[0] === 'number' ? Number(s) : s),
                           fromValue: String, show: null, out: null};
      select.addEventListener('input', (event) => this.onInput(name, event));
    };
    choice('integrator', 'integrator', cfg.integrators,
           (o) => (cfg.browserIntegrators.includes(o) ? o : `${o} (precomputed)`));
    choice('dampratio', 'damping ζ', cfg.dampratios, (z) => `dampratio ${z}`);
    this.endControls(root, controls);

    const plots = document.createElement('div');
    plots.className = 'pl-plots';
    const q0deg = core.degrees(cfg.q0);
    // 340 units wide: two plots side by side in the book's column (688 px at a 1280 px window) show at about 330 px,
    // so 11 and 12 unit text stays above 10 px
    const size = {width: PLOT_WIDTH, height: PLOT_HEIGHT};
    this.step = new Plot(plots, {...size, title: 'step response', xlabel: 'time (s)', ylabel: 'joint angle q (deg)',
                                 xlim: [0, cfg.duration], ylim: [1.25 * q0deg, -0.5 * q0deg], className: 'pl-step'});
    this.curve = new Plot(plots, {...size, title: 'sag and rise time vs kp', xlabel: 'kp (N·m/rad)',
                                  ylabel: 'sag (deg)',
                                  xlim: [cfg.kpGrid[0] / 1.3, cfg.kpGrid[cfg.kpGrid.length - 1] * 1.3],
                                  ylim: [1e-3, 1e2], xlog: true, ylog: true, className: 'pl-curve',
                                  y2: {lim: [1, 1e4], log: true, label: 'rise time (ms)',
                                       color: this.colors.rise_curve}});
    const kpEdges = edges(cfg.stabilityKp, true), armEdges = edges(cfg.stabilityArmature, false);
    this.kpEdges = kpEdges; this.armEdges = armEdges;
    this.map = new Plot(plots, {...size, height: PLOT_HEIGHT + 30, title: 'stability', xlabel: 'armature (kg·m²)',
                                ylabel: 'kp (N·m/rad)', xlim: [armEdges[0], armEdges[armEdges.length - 1]],
                                ylim: [kpEdges[0], kpEdges[kpEdges.length - 1]], ylog: true, className: 'pl-map',
                                notes: 2});
    this.step.legend([['command', this.colors.command, 'dash'], ['q(t)', this.colors.response, 'line'],
                      ['settled', this.colors.sag, 'dash'], ['10-90 % rise', this.colors.rise, 'line']]);
    this.curve.legend([['sag', this.colors.sag_curve, 'line'], ['rise time', this.colors.rise_curve, 'line'],
                       ['never settles', this.colors.diverged, 'x'], ['current kp', this.colors.current, 'o']]);
    this.map.legend([['MuJoCo diverges', '#f7c6c6', 'box'], ['not run yet', '#e6e6e6', 'box'],
                     ['growth = 1', this.colors.bound, 'line'], ['hω = 2', this.colors.bound, 'dash'],
                     ['current', this.colors.current, 'o']], 'lr');
    this.endBuild(root, plots);
  }

  onInput(name, event) {
    const start = this.takeInput(name, event);
    this.update(name === 'kp' ? 'kp' : 'all', start);
  }

  reset() {
    this.values = this.fromDefaults();
    this.syncInputs();
    this.update('all');
  }

  // ---- computing and drawing

  update(what, start = performance.now()) {
    const v = this.values, cfg = this.config;
    let response, fallback = null;
    if (this.isLive()) {
      const params = core.servoParams(v, cfg.linkInertia);
      response = core.stepResponse(this.link, params, {q0: cfg.q0, duration: cfg.duration});
    } else {
      fallback = this.precomputed();
      response = fallback.run;
    }
    this.response = response;
    this.drawStep(response, fallback);
    const drawnAt = performance.now();
    this.latencies.push(drawnAt - start);
    if (this.latencies.length > 500) this.latencies.shift();
    this.drawn += 1;
    this.root.dataset.drawn = String(this.drawn);
    this.scheduleUrl();
    if (what === 'all') this.background(fallback);
    this.drawCurve();
    this.drawMap();
  }

  // discrete: the nearest run physai precomputed (MuJoCo 3.3.8 has no discrete integrator), at the chosen damping
  precomputed() {
    const d = this.config.discrete, v = this.values;
    const ik = nearestIndex(d.kp, v.kp, true), ia = nearestIndex(d.armature, v.armature, false);
    const ih = nearestIndex(d.timestep, v.timestep, true), iz = d.dampratio.indexOf(v.dampratio);
    const at = (k) => d.runs[((iz * d.timestep.length + ih) * d.armature.length + ia) * d.kp.length + k];
    const run = at(ik);
    const fix = (x) => (x === null ? NaN : x);
    return {ik, ia, ih, iz, grid: d,
            run: {precomputed: true, trace: run.trace.map((x) => core.unpack(x, d.traceStep)), text: run.readout,
                  diverged: run.diverged, tEnd: run.tEnd, sagDeg: fix(run.sagDeg), riseMs: fix(run.riseMs),
                  riseWindow: run.riseWindow.map(fix), settled: run.settled},
            row: d.kp.map((_, k) => at(k))};
  }

  drawStep(r, fallback) {
    const p = this.step, c = this.colors, cfg = this.config, v = this.values;
    const g = p.layer('trace');
    p.path(g, [0, cfg.duration], [0, 0], {stroke: c.command, 'stroke-width': 1, 'stroke-dasharray': '4 3'});
    const q0deg = core.degrees(cfg.q0);
    const settledRun = fallback ? r.settled : core.settled(r);
    if (fallback) {
      p.band(g, r.trace, cfg.duration, c.response);   // the stored envelope: lowest and highest angle per time bin
    } else {
      const deg = (i) => Math.max(-1e4, Math.min(1e4, core.degrees(r.q[i])));
      const [xs, ys] = p.columns(r.q.length, (i) => r.h * i, deg);
      p.path(g, xs, ys, {stroke: c.response, 'stroke-width': 1.6});
    }
    const marks = p.layer('top-marks');
    let text, bad = false;
    if (r.diverged) {
      const tEnd = fallback ? r.tEnd : r.h * (r.q.length - 1);
      p.text(marks, 'diverged', p.x(cfg.duration / 2), p.y(0.45 * q0deg), {fill: c.diverged, 'font-size': 24,
             'font-weight': 'bold', 'text-anchor': 'middle'});
      p.text(marks, `after ${tEnd.toFixed(3)} s`, p.x(cfg.duration / 2), p.y(0.45 * q0deg) + 18,
             {fill: c.diverged, 'text-anchor': 'middle'});
      text = 'diverged';
      bad = true;
    } else {
      text = fallback ? r.text : core.readout(r);
      bad = !settledRun;
      if (settledRun) {
        const qf = -r.sagDeg;
        p.path(marks, [0, cfg.duration], [qf, qf], {stroke: c.sag, 'stroke-width': 1, 'stroke-dasharray': '2 2'});
        const [t10, t90] = r.riseWindow;
        if (Number.isFinite(t10) && Number.isFinite(t90)) {
          const span = qf - q0deg;
          const q10 = q0deg + 0.1 * span, q90 = q0deg + 0.9 * span;
          p.path(marks, [t10, t10], [q10 - 2, q10 + 2], {stroke: c.rise, 'stroke-width': 1.5});
          p.path(marks, [t90, t90], [q90 - 2, q90 + 2], {stroke: c.rise, 'stroke-width': 1.5});
          p.path(marks, [t10, t90], [q90, q90], {stroke: c.rise, 'stroke-width': 3});
        }
      }
      p.text(marks, text, p.w - p.m.r - 6, p.h - p.m.b - 8, {'text-anchor': 'end', 'font-size': 12});
    }
    const how = fallback
      ? `precomputed by physai (MuJoCo ${cfg.pythonMujoco}): the browser's MuJoCo ${this.version} has no ` +
        `discrete integrator; nearest run kp ${fallback.grid.kp[fallback.ik]}, armature ` +
        `${fallback.grid.armature[fallback.ia]}, h ${fallback.grid.timestep[fallback.ih] * 1e3} ms, dampratio ` +
        `${fallback.grid.dampratio[fallback.iz]}`
      : `${v.integrator}, h = ${(v.timestep * 1e3).toFixed(1)} ms`;
    p.titleNode.textContent = fallback ? 'step response (precomputed)' : `step response, ${how}`;
    this.readoutNode.textContent = text;
    this.readoutNode.classList.toggle('pl-bad', bad);
    this.note.innerHTML = '';
    const noteText = `Start at ${core.degrees(cfg.q0).toFixed(1)}° with command 0°; dampratio ζ sets ` +
      `kv = 2ζ√(kp·I) for every armature. Stability cells run ${cfg.stabilitySteps} steps each in the ` +
      `background. ${fallback ? 'Step response ' + how + '.' : 'Everything is simulated by MuJoCo ' +
      this.version + ' in this page.'}`;
    this.note.textContent = noteText;
    this.note.classList.toggle('pl-fallback', Boolean(fallback));
    this.status.textContent = fallback ? `discrete: precomputed (not in MuJoCo ${this.version})`
                                       : `MuJoCo ${this.version} (WebAssembly) in this page`;
  }

  // ---- the background runs: curve over kp and the stability map

  startWorker() {
    try {
      this.worker = new Worker(WORKER_URL, {type: 'module'});
    } catch (error) {
      this.worker = null;
      return;
    }
    this.worker.onmessage = (event) => this.onWorker(event.data);
    this.worker.onerror = () => { this.worker = null; };
    const {discrete, ...config} = this.config;
    this.workerConfig = config;
    this.worker.postMessage({kind: 'start', config});
  }

  background(fallback) {
    const v = this.values;
    this.generation += 1;
    const nk = this.config.stabilityKp.length, na = this.config.stabilityArmature.length;
    if (fallback) {
      const d = fallback.grid;
      this.curveRows = fallback.row.map((run, k) => ({kp: d.kp[k], sagDeg: run.settled ? run.sagDeg : NaN,
                                                      riseMs: run.settled ? run.riseMs : NaN, bad: !run.settled}));
      this.curveSource = 'precomputed';
      this.mapCells = d.stability[fallback.iz][fallback.ih];
      this.mapDone = true;
      this.mapSource = `precomputed at h = ${d.timestep[fallback.ih] * 1e3} ms, dampratio ${d.dampratio[fallback.iz]}`;
      return;
    }
    this.curveRows = null;
    this.mapCells = Array.from({length: nk}, () => new Array(na).fill(null));
    this.mapDone = false;
    this.mapSource = 'MuJoCo in a worker';
    this.curveSource = 'MuJoCo in a worker';
    const job = {generation: this.generation, values: {...v}, config: this.workerConfig, curve: true, map: true};
    if (this.worker) {
      this.worker.postMessage(job);
    } else {
      this.mainThreadJob(job);
    }
  }

  // without module workers: the same runs on the page, one at a time between frames
  async mainThreadJob(job) {
    const cfg = this.config;
    const rows = [];
    for (const kp of cfg.kpGrid) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (job.generation !== this.generation) return;
      const r = core.stepResponse(this.link, core.servoParams({...job.values, kp}, cfg.linkInertia),
                                  {q0: cfg.q0, duration: cfg.duration});
      const ok = core.settled(r);
      rows.push({kp, sagDeg: ok ? r.sagDeg : NaN, riseMs: ok ? r.riseMs : NaN, bad: !ok});
    }
    this.onWorker({kind: 'curve', generation: job.generation, rows});
    for (let i = 0; i < cfg.stabilityKp.length; i++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (job.generation !== this.generation) return;
      const cells = cfg.stabilityArmature.map((armature) => core.unstable(core.stepResponse(
        this.link, core.servoParams({...job.values, kp: cfg.stabilityKp[i], armature}, cfg.linkInertia),
        {q0: cfg.q0, duration: cfg.stabilitySteps * job.values.timestep}), cfg.q0));
      this.onWorker({kind: 'map', generation: job.generation, row: i, cells});
    }
    this.onWorker({kind: 'map-done', generation: job.generation});
  }

  onWorker(message) {
    if (message.kind === 'error') {
      this.status.textContent += ` (background runs failed: ${message.message})`;
      return;
    }
    if (message.generation !== this.generation) return;
    if (message.kind === 'curve') {
      this.curveRows = message.rows;
      this.drawCurve();
    } else if (message.kind === 'map') {
      this.mapCells[message.row] = message.cells;
      this.drawMap();
    } else if (message.kind === 'map-done') {
      this.mapDone = true;
      this.root.dataset.mapDone = String(this.generation);
      this.drawMap();
    }
  }

  drawCurve() {
    const p = this.curve, c = this.colors, v = this.values, r = this.response;
    const g = p.layer('curve');
    const rows = this.curveRows;
    if (rows) {
      const kps = rows.map((x) => x.kp);
      p.path(g, kps, rows.map((x) => (x.sagDeg > 0 ? x.sagDeg : NaN)), {stroke: c.sag_curve, 'stroke-width': 1.5});
      p.path(g, kps, rows.map((x) => x.riseMs), {stroke: c.rise_curve, 'stroke-width': 1.5}, p.x, p.y2);
      for (const x of rows) {
        if (Number.isFinite(x.sagDeg) && x.sagDeg > 0) {
          el('circle', {cx: p.x(x.kp), cy: p.y(x.sagDeg), r: 2.5, fill: c.sag_curve}, g);
        }
        if (Number.isFinite(x.riseMs)) {
          el('rect', {x: p.x(x.kp) - 2.5, y: p.y2(x.riseMs) - 2.5, width: 5, height: 5, fill: c.rise_curve}, g);
        }
        if (x.bad) p.text(g, '×', p.x(x.kp) - 4, p.y(1.6e-3), {fill: c.diverged, 'font-size': 14});
      }
    } else {
      p.text(g, 'running…', p.x(30), p.y(1), {class: 'pl-muted'});
    }
    const marks = p.layer('top-kp');
    p.path(marks, [v.kp, v.kp], [1e-3, 1e2], {stroke: c.current, 'stroke-width': 1.2, 'stroke-dasharray': '5 3'});
    const ok = r && (r.precomputed ? r.settled : core.settled(r));
    if (ok && r.sagDeg > 0) el('circle', {cx: p.x(v.kp), cy: p.y(r.sagDeg), r: 5, fill: 'none', stroke: c.current,
                                          'stroke-width': 2}, marks);
    if (ok && Number.isFinite(r.riseMs)) el('circle', {cx: p.x(v.kp), cy: p.y2(r.riseMs), r: 5, fill: 'none',
                                                       stroke: c.current, 'stroke-width': 2}, marks);
    p.titleNode.textContent = this.curveSource === 'precomputed' ? 'sag and rise vs kp (precomputed)'
                                                                 : 'sag and rise time vs kp';
  }

  drawMap() {
    const p = this.map, c = this.colors, v = this.values, cfg = this.config;
    if (!this.cellRects) {  // one rectangle per cell, made once; a redraw only sets the fills that changed
      const cells = p.layer('cells'), ke = this.kpEdges, ae = this.armEdges;
      this.cellRects = cfg.stabilityKp.map((_, i) => cfg.stabilityArmature.map((__, j) => {
        const x = p.x(ae[j]), y = p.y(ke[i + 1]);
        return el('rect', {x, y, width: p.x(ae[j + 1]) - x, height: p.y(ke[i]) - y, fill: '#e6e6e6'}, cells);
      }));
    }
    if (this.mapCells) {
      this.mapCells.forEach((row, i) => row.forEach((cell, j) => {
        const fill = cell === null ? '#e6e6e6' : (cell ? '#f7c6c6' : '#e8f1fa');
        const rect = this.cellRects[i][j];
        if (rect.getAttribute('fill') !== fill) rect.setAttribute('fill', fill);
      }));
    }
    // the analytic bound, at once: kp = (hω*/h)² (I_link + armature) and hω = 2
    const bound = p.layer('bound');
    const star = cfg.criticalHOmega[v.integrator][String(v.dampratio)];
    const arm = Array.from({length: 101}, (_, i) => 0.1 * i / 100);
    const inertia = arm.map((a) => cfg.linkInertia + a);
    if (star !== null) {
      p.path(bound, arm, inertia.map((I) => (star / v.timestep) ** 2 * I), {stroke: c.bound, 'stroke-width': 2});
    }
    p.path(bound, arm, inertia.map((I) => (2.0 / v.timestep) ** 2 * I),
           {stroke: c.bound, 'stroke-width': 1, 'stroke-dasharray': '5 3'});
    const top = p.layer('top-point');
    el('circle', {cx: p.x(v.armature), cy: p.y(v.kp), r: 5, fill: 'none', stroke: c.current, 'stroke-width': 2}, top);
    const hOmega = v.timestep * Math.sqrt(v.kp / (cfg.linkInertia + v.armature));
    const boundText = star !== null ? `bound hω* = ${star.toFixed(2)}` : 'no bound (stable)';
    const rows = this.mapCells ? this.mapCells.filter((row) => row.every((x) => x !== null)).length : 0;
    const progress = this.mapDone ? '' : ` · MuJoCo ${rows}/${cfg.stabilityKp.length} rows`;
    // above the plot box (the plot's notes), where no curve or cell can be
    p.text(top, `${boundText}, current hω = ${hOmega.toFixed(2)}`, p.m.l, p.noteY(0));
    if (progress || this.mapSource.startsWith('precomputed')) {
      p.text(top, this.mapSource.startsWith('precomputed') ? this.mapSource : progress.slice(3), p.m.l, p.noteY(1),
             {class: 'pl-muted'});
    }
    p.titleNode.textContent = `stability, ${v.integrator}, h = ${(v.timestep * 1e3).toFixed(1)} ms`;
  }
}

export function edges(centers, log) {
  const x = centers.map((c) => (log ? Math.log10(c) : c));
  const out = [x[0] - (x[1] - x[0]) / 2];
  for (let i = 1; i < x.length; i++) out.push((x[i] + x[i - 1]) / 2);
  out.push(x[x.length - 1] + (x[x.length - 1] - x[x.length - 2]) / 2);
  return out.map((e) => (log ? 10 ** e : e));
}

// ---------------------------------------------------------------------------------------------------------------
// Boot: offer the live panel beside its twin, start it at the first touch

// Each kind of block names the class that builds its panel; a chapter's own module is imported only when its panel
// first starts (it imports this module's Plot and helpers back), so a page loads the code of its own panels alone.
// Another chapter's panel adds one line here: kind: () => import('./physai-live-KIND.js').then((m) => m.KindPanel).
const PANELS = {
  servo: async () => ServoPanel,
  pd: () => import('./physai-live-arm.js').then((m) => m.PdPanel),
  sysid: () => import('./physai-live-arm.js').then((m) => m.SysidPanel),
  pendulum: () => import('./physai-live-pendulum.js').then((m) => m.PendulumPanel),
};

function offer(block) {
  const readConfig = () => JSON.parse(block.querySelector('script.physai-live-config').textContent);
  const key = block.dataset.physaiLive;
  const twinId = 'twin' in block.dataset ? block.dataset.twin : readConfig().twin;
  const twin = twinId ? document.getElementById(twinId) : null;
  const bar = document.createElement('div');
  bar.className = 'physai-live-offer';
  (twin || block).before(bar);
  if (typeof WebAssembly !== 'object' || typeof WebAssembly.instantiate !== 'function') {
    bar.textContent = 'This figure is precomputed: the live MuJoCo version needs WebAssembly, which this browser has off.';
    bar.dataset.state = 'no-wasm';
    return;
  }
  const button = document.createElement('button');
  button.type = 'button';
  button.textContent = '▶ Run MuJoCo live';
  const text = document.createElement('span');
  text.textContent = twin
    ? ' or touch the figure: MuJoCo (11 MB, about 3 MB compressed) loads into this page and every slider reruns it.'
    : ' MuJoCo (11 MB, about 3 MB compressed) loads into this page and every slider reruns it.';
  bar.append(button, text);
  bar.dataset.state = 'offered';
  let started = false;
  const start = async () => {
    if (started) return;
    started = true;
    bar.dataset.state = 'loading';
    button.disabled = true;
    text.textContent = ' loading MuJoCo…';
    try {
      const mujoco = await loadEngine();
      block.hidden = false;
      const kind = block.dataset.physaiLive;
      if (!PANELS[kind]) throw new Error(`no live panel of kind ${kind}`);
      const Panel = await PANELS[kind]();
      const panel = new Panel(block, readConfig(), mujoco);
      (window.physaiLive = window.physaiLive || {})[key] = panel;
      if (twin) {
        twin.before(block);
        twin.hidden = true;
        twin.dataset.upgraded = 'live';
      }
      bar.remove();
      block.dataset.state = 'live';
    } catch (error) {
      started = false;
      bar.dataset.state = 'failed';
      button.disabled = false;
      text.textContent = ` MuJoCo could not load here (${error && error.message || error}); the figure stays precomputed.`;
    }
  };
  button.addEventListener('click', start);
  if (twin) {
    for (const kind of ['pointerdown', 'keydown', 'focusin']) twin.addEventListener(kind, start, {once: true});
  }
  const q = new URLSearchParams(location.search);
  if ([...q.keys()].some((k) => k.startsWith(`${key}-`))) start();
}

// The page loads this module as _static/physai-live.js?v=<digest> (Sphinx's cache key) and a chapter's panel module
// imports it back as ./physai-live.js: two URLs, so two instances of this module. Only the first one boots; the
// second serves the chapter module its Plot and helpers. Each block is offered once.
function boot() {
  if (window.physaiLiveBooted) return;
  window.physaiLiveBooted = true;
  addStyle();
  document.querySelectorAll('div.physai-live[data-physai-live]').forEach((block) => {
    if (block.dataset.offered) return;
    block.dataset.offered = '1';
    try {
      offer(block);
    } catch (error) {
      console.error('physai-live:', error);
    }
  });
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
else boot();
