// The panels' figures: one SVG plot per physai.interface.panel.Plot (its title, axis labels, limits, log scales,
// second y axis, categorical ticks, legend), with layers the chapters redraw in place. The precomputed first view
// and the live panel draw through the same plots. No MuJoCo here.
//
// Dark mode: the book's dark theme sets html[data-theme=dark]; the plots' neutral parts carry classes (pl-grid,
// pl-frame, pl-legend-bg, pl-halo, pl-muted) and their text follows the SVG's color (physai.css repaints them).

const SVG = 'http://www.w3.org/2000/svg';

export function el(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

// A tick label: plain decimals, decades of log axes as 1e4 beyond 1000s.
export const tickText = (v) => {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e4 || a < 1e-2) return `1e${Math.round(Math.log10(a))}`;
  return String(Number(v.toPrecision(3)));
};

const ROW = 15;   // px per line of a legend or a note

export class Plot {
  // spec: a Plot of the panel's description (PanelSpec.to_json()['plots'][i]); width overrides spec.width (a phone)
  constructor(parent, spec, {width = spec.width, className = ''} = {}) {
    this.spec = spec;
    this.w = width;
    this.h = spec.height;
    const row = (corner) => (spec.corner === corner && spec.legend.length ? ROW + 2 : 0);
    this.below = row('below');
    this.m = {l: 54, r: spec.y2 ? 52 : 12, t: 24 + ROW * spec.notes + row('above'), b: 42 + this.below};
    this.svg = el('svg', {viewBox: `0 0 ${this.w} ${this.h}`, role: 'img', class: `pl-${spec.key} ${className}`.trim(),
                          'aria-label': `${spec.title || spec.key}: ${spec.ylabel} against ${spec.xlabel}`,
                          preserveAspectRatio: 'xMidYMid meet'}, parent);
    this.x = this.scale(spec.xlim, spec.xlog, this.m.l, this.w - this.m.r);
    this.y = this.scale(spec.ylim, spec.ylog, this.h - this.m.b, this.m.t);
    this.y2 = spec.y2 ? this.scale(spec.y2.lim, spec.y2.log, this.h - this.m.b, this.m.t) : null;
    const id = `pl-clip-${Math.random().toString(36).slice(2)}`;
    const clip = el('clipPath', {id}, el('defs', {}, this.svg));
    el('rect', {x: this.m.l, y: this.m.t, width: this.w - this.m.l - this.m.r, height: this.h - this.m.t - this.m.b},
       clip);
    this.axes();
    this.body = el('g', {'clip-path': `url(#${id})`}, this.svg);
    this.top = el('g', {}, this.svg);
    this.layers = {};
    if (spec.legend.length) this.legend(spec.legend, spec.corner);
  }

  scale([lo, hi], log, a, b) {
    const f = log ? Math.log10 : (v) => v;
    const flo = f(lo), fhi = f(hi);
    const s = (v) => a + (f(v) - flo) / (fhi - flo) * (b - a);
    s.log = log;
    s.lim = [lo, hi];
    return s;
  }

  ticks([lo, hi], log) {
    const out = [];
    if (log) {
      for (let e = Math.ceil(Math.log10(lo) - 1e-9); e <= Math.floor(Math.log10(hi) + 1e-9); e++) out.push(10 ** e);
      return out;
    }
    const span = hi - lo, step0 = 10 ** Math.floor(Math.log10(span / 5));
    const step = [1, 2, 5, 10].map((k) => k * step0).find((s) => span / s <= 6);
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * span; v += step) out.push(Math.abs(v) < 1e-12 ? 0 : v);
    return out;
  }

  axes() {
    const s = this.spec, {l, r, t, b} = this.m, W = this.w, H = this.h;
    const g = el('g', {'font-size': 12, fill: 'currentColor'}, this.svg);
    el('rect', {x: l, y: t, width: W - l - r, height: H - t - b, fill: 'none', stroke: '#888', class: 'pl-frame'}, g);
    const xticks = s.xticks ?? this.ticks(s.xlim, s.xlog).map((v) => [v, tickText(v)]);
    for (const [v, text] of xticks) {
      const x = this.x(v);
      if (!s.xticks) el('line', {x1: x, x2: x, y1: t, y2: H - b, stroke: '#eee', class: 'pl-grid'}, g);
      el('text', {x, y: H - b + 14, 'text-anchor': 'middle'}, g).textContent = text;
    }
    for (const v of this.ticks(s.ylim, s.ylog)) {
      const y = this.y(v);
      el('line', {x1: l, x2: W - r, y1: y, y2: y, stroke: '#eee', class: 'pl-grid'}, g);
      el('text', {x: l - 4, y: y + 4, 'text-anchor': 'end'}, g).textContent = tickText(v);
    }
    if (s.y2) {
      for (const v of this.ticks(s.y2.lim, s.y2.log)) {
        el('text', {x: W - r + 4, y: this.y2(v) + 4, fill: s.y2.color}, g).textContent = tickText(v);
      }
      const mid = (t + H - b) / 2;
      el('text', {x: W - 10, y: mid, 'text-anchor': 'middle', fill: s.y2.color, transform: `rotate(90 ${W - 10} ${mid})`},
         g).textContent = s.y2.label;
    }
    el('text', {x: (l + W - r) / 2, y: H - 8 - this.below, 'text-anchor': 'middle'}, g).textContent = s.xlabel;
    const mid = (t + H - b) / 2;
    el('text', {x: 12, y: mid, 'text-anchor': 'middle', transform: `rotate(-90 12 ${mid})`}, g).textContent = s.ylabel;
    this.titleNode = el('text', {x: (l + W - r) / 2, y: 16, 'text-anchor': 'middle', 'font-weight': 'bold'}, g);
    this.titleNode.textContent = s.title;
  }

  title(text) {
    if (this.titleNode.textContent !== text) this.titleNode.textContent = text;
  }

  // an emptied group to draw into (names starting 'top' go over the plot box, unclipped)
  layer(name) {
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

  // a mark at (x, y): 'o' a hollow circle, 's' a filled square, 'x' a cross, 'dot' a filled circle
  mark(g, x, y, kind, color, size = 5, sx = this.x, sy = this.y) {
    if (!Number.isFinite(x) || !Number.isFinite(y) || (sy.log && y <= 0) || (sx.log && x <= 0)) return null;
    const px = sx(x), py = sy(y);
    if (kind === 's') return el('rect', {x: px - size / 2, y: py - size / 2, width: size, height: size, fill: color}, g);
    if (kind === 'x') {
      return el('path', {d: `M${px - size} ${py - size}L${px + size} ${py + size}M${px - size} ${py + size}L${px + size} ${py - size}`,
                         stroke: color, 'stroke-width': 2}, g);
    }
    if (kind === 'dot') return el('circle', {cx: px, cy: py, r: size / 2, fill: color}, g);
    return el('circle', {cx: px, cy: py, r: size, fill: 'none', stroke: color, 'stroke-width': 2}, g);
  }

  // a bar from 0 to height, centred on x, `width` wide (data units), clipped to the y limits
  bar(g, x, width, height, color) {
    if (!Number.isFinite(height)) return null;
    const y0 = this.y(0), y1 = this.y(Math.max(this.y.lim[0], Math.min(this.y.lim[1], height)));
    return el('rect', {x: this.x(x - width / 2), y: Math.min(y0, y1), width: this.x(x + width / 2) - this.x(x - width / 2),
                       height: Math.abs(y1 - y0), fill: color}, g);
  }

  text(g, s, x, y, attrs = {}) {
    const node = el('text', {x, y, 'font-size': 12, fill: 'currentColor', ...attrs}, g);
    node.textContent = s;
    return node;
  }

  // text over data: with a halo in the background's colour behind it
  say(g, s, x, y, attrs = {}) {
    return this.text(g, s, x, y, {class: 'pl-halo', 'paint-order': 'stroke', ...attrs});
  }

  // the baseline of note line i between the title and the plot box (the description's notes)
  noteY(i) {
    return 24 + ROW * i + 10;
  }

  // n samples (time(i), value(i)) as a trace's points: all of them where there are few, else the lowest and the
  // highest value in every pixel column, in time order, so a swing that flips sides every step keeps its full width.
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
      xs.push(a[0], b[0]);
      ys.push(a[1], b[1]);
    };
    for (let i = 0; i < n; i++) {
      const t = time(i), y = value(i), c = Math.floor((t - t0) / (t1 - t0) * cols);
      if (c !== col || !Number.isFinite(y)) { flush(); col = Number.isFinite(y) ? c : -1; lo = hi = y; tlo = thi = t; continue; }
      if (y < lo) { lo = y; tlo = t; }
      if (y > hi) { hi = y; thi = t; }
    }
    flush();
    return [xs, ys];
  }

  // entries [label, color, mark] in a corner (ur, ul, lr, ll), or in a row above or below the plot ('above',
  // 'below': right-aligned over the plot box, centred under the axis label)
  legend(entries, corner = 'ur') {
    const g = this.layer('top-legend');
    const {l, r, t, b} = this.m;
    const width = (label) => 30 + 6.2 * label.length;
    let place = null;
    if (corner === 'above' || corner === 'below') {
      const total = entries.reduce((sum, [label]) => sum + width(label), 0);
      let x = corner === 'above' ? this.w - r - total : (l + this.w - r - total) / 2;
      const y = corner === 'above' ? t - 4 : this.h - 4;
      place = entries.map(([label]) => { const at = [x, y]; x += width(label); return at; });
    }
    const rows = place ? 1 : entries.length;
    const boxW = Math.max(...entries.map(([label]) => width(label)));
    const x0 = corner.endsWith('r') ? this.w - r - boxW - 4 : l + 4;
    const y0 = corner.startsWith('u') ? t + 4 : this.h - b - 4 - ROW * rows;
    if (!place) el('rect', {x: x0, y: y0, width: boxW, height: ROW * rows + 4, fill: '#fff', 'fill-opacity': 0.85,
                            class: 'pl-legend-bg'}, g);
    entries.forEach(([label, color, mark], i) => {
      const [x, y] = place ? place[i] : [x0, y0 + 12 + ROW * i];
      if (mark === 'box') el('rect', {x: x + 4, y: y - 8, width: 14, height: 9, fill: color}, g);
      else if (mark === 'x' || mark === 'o' || mark === 's') {
        this.mark(g, x + 11, y - 4, mark, color, mark === 's' ? 6 : 4, (v) => v, (v) => v);
      } else {
        el('line', {x1: x + 4, x2: x + 18, y1: y - 4, y2: y - 4, stroke: color, 'stroke-width': 2,
                    'stroke-dasharray': {dash: '4 3', dot: '2 3'}[mark] || 'none'}, g);
      }
      this.text(g, label, x + 22, y, {'font-size': 11});
    });
  }
}

// The cell edges of a grid of centres (log: in log10), as a map's rectangles need them.
export function edges(centers, log) {
  const x = centers.map((c) => (log ? Math.log10(c) : c));
  const out = [x[0] - (x[1] - x[0]) / 2];
  for (let i = 1; i < x.length; i++) out.push((x[i] + x[i - 1]) / 2);
  out.push(x[x.length - 1] + (x[x.length - 1] - x[x.length - 2]) / 2);
  return out.map((e) => (log ? 10 ** e : e));
}
