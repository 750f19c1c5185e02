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

// A tick label: plain decimals as the readouts write them (kp 10000, not 1e4), powers of ten as 1e5 beyond.
export const tickText = (v) => {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e5 || a < 1e-3) return `1e${Math.round(Math.log10(a))}`;
  return String(Number(v.toPrecision(3)));
};

const ROW = 15;   // px per line of a legend or a note, at font scale 1
const FONT = 'sans-serif';   // the panel's font (physai.css), which the plots' text inherits
// where Plot.placeText tries a text after its caller's places: the corners, the edges' midpoints, the middle; and the
// widths it wraps to there, as shares of the plot box's width
const TEXT_SPOTS = ['ur', 'ul', 'lr', 'll', 'uc', 'lc', 'cl', 'cr', 'c'];
const TEXT_SHARES = [1, 0.75, 0.55, 0.4];

let measure = null;
// the width in px of a text at a size in the panel's font: measured by the browser (a canvas), not guessed
export function textWidth(text, size, weight = 'normal') {
  if (!measure) measure = document.createElement('canvas').getContext('2d');
  measure.font = `${weight} ${size}px ${FONT}`;
  return measure.measureText(text).width;
}

// The legend's entries laid out in rows across `room` px: [[x offset, row] per entry, rows, widest row]. Each entry
// is its mark (22 px at scale 1) and its label, measured, then a gap.
export function legendRows(entries, size, room, scale = 1) {
  const widths = entries.map(([label]) => 22 * scale + textWidth(label, size) + 12 * scale);
  const place = [], rowWidths = [0];
  widths.forEach((w) => {
    let row = rowWidths.length - 1;
    if (rowWidths[row] > 0 && rowWidths[row] + w > room) { rowWidths.push(0); row += 1; }
    place.push([rowWidths[row], row]);
    rowWidths[row] += w;
  });
  return {place, widths, rowWidths, rows: entries.length ? rowWidths.length : 0};
}

export class Plot {
  // spec: a Plot of the panel's description (PanelSpec.to_json()['plots'][i]); width and height override the
  // description's (a phone, the present view: the plot then draws at the size it is shown, one unit a CSS px); font
  // scales every text and the margins that hold them (the present view reads from the back of a room).
  //
  // The legend never sits on the data: it goes in rows outside the plot box, above it (below for corner 'below'),
  // on the side its corner names, each entry measured.
  constructor(parent, spec, {width = spec.width, height = spec.height, font = 1, className = ''} = {}) {
    this.spec = spec;
    this.options = {width, height, font, className};
    this.w = width;
    this.h = height;
    this.fs = font;
    this.size = {tick: 12 * font, label: 12 * font, legend: 11 * font, text: 12 * font};
    const yTicks = this.ticks(spec.ylim, spec.ylog).map(tickText);
    const left = Math.max(...yTicks.map((t) => textWidth(t, this.size.tick)), 0);
    const right = spec.y2 ? Math.max(...this.ticks(spec.y2.lim, spec.y2.log).map((v) => textWidth(tickText(v), this.size.tick))) : 0;
    const l = Math.ceil(left + 10 + this.size.label + 8);
    let r = spec.y2 ? Math.ceil(right + 8 + this.size.label + 8) : 12 * font;
    // a plot much wider than tall (the present view) keeps its height for data: its legend goes in a column on the right
    this.side = spec.legend.length > 0 && width > 1.8 * height;
    const rowH = ROW * font;
    if (this.side) {
      this.legendLayout = legendRows(spec.legend, this.size.legend, 0, font);
      this.legendWidth = Math.max(...this.legendLayout.widths);
      r += this.legendWidth + 4 * font;
    } else {
      this.legendLayout = legendRows(spec.legend, this.size.legend, width - l - r, font);
    }
    this.y2LabelX = width - r + right + 8 + this.size.label / 2;   // beside the second axis' ticks
    const legendH = this.side ? 0 : this.legendLayout.rows * rowH;
    this.below = spec.corner === 'below' ? legendH + 2 : 0;
    this.above = spec.corner === 'below' ? 0 : legendH + (legendH ? 2 : 0);
    this.m = {l, r, t: 24 * font + rowH * spec.notes + this.above, b: 42 * font + this.below};
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
    this.body = el('g', {'clip-path': `url(#${id})`, class: 'pl-body'}, this.svg);
    this.top = el('g', {}, this.svg);
    this.layers = {};
    if (spec.legend.length) this.legend(spec.legend, spec.corner);
  }

  // the same plot again, with a changed description (e.g. other limits), at the same size and font
  remake(spec, parent = null) {
    return new Plot(parent, spec, this.options);
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
    const g = el('g', {'font-size': this.size.tick, fill: 'currentColor'}, this.svg);
    const fs = this.fs;
    el('rect', {x: l, y: t, width: W - l - r, height: H - t - b, fill: 'none', stroke: '#888', class: 'pl-frame'}, g);
    // tick labels never collide: where they would, every second (third, ...) label is kept, the grid lines all
    const every = (positions, sizes) => {
      for (let k = 1; k < positions.length; k++) {
        if (positions.every((p, i) => i < k || (i % k) || Math.abs(p - positions[i - k]) >= sizes[i] / 2 + sizes[i - k] / 2 + 4)) return k;
      }
      return positions.length || 1;
    };
    const xticks = s.xticks ?? this.ticks(s.xlim, s.xlog).map((v) => [v, tickText(v)]);
    const xk = every(xticks.map(([v]) => this.x(v)), xticks.map(([, text]) => textWidth(text, this.size.tick)));
    xticks.forEach(([v, text], i) => {
      const x = this.x(v);
      if (!s.xticks) el('line', {x1: x, x2: x, y1: t, y2: H - b, stroke: '#eee', class: 'pl-grid'}, g);
      if (i % xk === 0) el('text', {x, y: H - b + 14 * fs, 'text-anchor': 'middle'}, g).textContent = text;
    });
    const yticks = this.ticks(s.ylim, s.ylog), lineH = 1.1 * this.size.tick;
    const yk = every(yticks.map((v) => this.y(v)), yticks.map(() => lineH));
    yticks.forEach((v, i) => {
      const y = this.y(v);
      el('line', {x1: l, x2: W - r, y1: y, y2: y, stroke: '#eee', class: 'pl-grid'}, g);
      if (i % yk === 0) el('text', {x: l - 4, y: y + 4 * fs, 'text-anchor': 'end'}, g).textContent = tickText(v);
    });
    if (s.y2) {
      const y2ticks = this.ticks(s.y2.lim, s.y2.log), y2k = every(y2ticks.map((v) => this.y2(v)), y2ticks.map(() => lineH));
      y2ticks.forEach((v, i) => {
        if (i % y2k === 0) el('text', {x: W - r + 4, y: this.y2(v) + 4 * fs, fill: s.y2.color}, g).textContent = tickText(v);
      });
      const mid = (t + H - b) / 2;
      const x2 = this.y2LabelX;
      el('text', {x: x2, y: mid, 'text-anchor': 'middle', 'dominant-baseline': 'central', fill: s.y2.color,
                  transform: `rotate(90 ${x2} ${mid})`}, g).textContent = s.y2.label;
    }
    el('text', {x: (l + W - r) / 2, y: H - 8 * fs - this.below, 'text-anchor': 'middle'}, g).textContent = s.xlabel;
    const mid = (t + H - b) / 2;
    const x1 = 4 + this.size.label / 2;
    el('text', {x: x1, y: mid, 'text-anchor': 'middle', 'dominant-baseline': 'central',
                transform: `rotate(-90 ${x1} ${mid})`}, g).textContent = s.ylabel;
    this.titleNode = el('text', {x: (l + W - r) / 2, y: 16 * fs, 'text-anchor': 'middle', 'font-weight': 'bold'}, g);
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
    size *= this.fs;
    if (kind === 's') return el('rect', {x: px - size / 2, y: py - size / 2, width: size, height: size, fill: color}, g);
    if (kind === 'x') {
      return el('path', {d: `M${px - size} ${py - size}L${px + size} ${py + size}M${px - size} ${py + size}L${px + size} ${py - size}`,
                         stroke: color, 'stroke-width': 2}, g);
    }
    if (kind === 'dot') return el('circle', {cx: px, cy: py, r: size / 2, fill: color}, g);
    return el('circle', {cx: px, cy: py, r: size, fill: 'none', stroke: color, 'stroke-width': 2}, g);
  }

  // a bar from 0 to height, centred on x, `width` wide (data units), clipped to the y limits; a clipped bar gets a
  // clip mark at its end (a triangle pointing on) and its value, so its height is not read as the limit's
  bar(g, x, width, height, color, digits = 2) {
    if (!Number.isFinite(height)) return null;
    const [lo, hi] = this.y.lim, shown = Math.max(lo, Math.min(hi, height));
    const y0 = this.y(0), y1 = this.y(shown);
    const rect = el('rect', {x: this.x(x - width / 2), y: Math.min(y0, y1), width: this.x(x + width / 2) - this.x(x - width / 2),
                             height: Math.abs(y1 - y0), fill: color}, g);
    // the clip mark in the text's colour: a bar's own colour would hide it on the bar
    if (shown !== height) this.clipMark(g, this.x(x), y1, height > hi ? -1 : 1, 'currentColor', height.toFixed(digits));
    return rect;
  }

  // The clip mark, one style in every chapter: a triangle at (px, py) (pixels, on the plot box's edge) pointing out
  // of the box (dir -1 up, +1 down), and the true value beside it, in the mark's colour over a halo.
  clipMark(g, px, py, dir, color, value = null) {
    const s = 5 * this.fs, tip = py + dir * 1, base = py - dir * 2 * s;
    const mark = el('path', {d: `M${px - s} ${base}L${px + s} ${base}L${px} ${tip}Z`, fill: color, class: 'pl-clip'}, g);
    if (value !== null) {
      this.say(g, value, px, dir < 0 ? base + 12 * this.fs : base - 4 * this.fs,
               {'text-anchor': 'middle', 'font-size': 11, fill: color, class: 'pl-halo pl-clip-value'});
    }
    return mark;
  }

  // a polyline of values clipped to the y limits (at most `limit`): the clipped runs drawn along the edge, each with
  // a clip mark in its middle
  clippedPath(g, xs, ys, attrs, limit = this.y.lim[1]) {
    this.path(g, xs, ys.map((v) => (Number.isFinite(v) ? Math.min(v, limit) : v)), attrs);
    let first = -1;
    const flush = (end) => {
      if (first < 0) return;
      const mid = Math.floor((first + end) / 2);
      this.clipMark(g, this.x(xs[mid]), this.y(limit), -1, attrs.stroke);
      first = -1;
    };
    ys.forEach((v, i) => {
      if (v > limit) { if (first < 0) first = i; } else flush(i - 1);
    });
    flush(ys.length - 1);
  }

  text(g, s, x, y, attrs = {}) {
    const size = (attrs['font-size'] ?? 12) * this.fs;
    const node = el('text', {x, y, fill: 'currentColor', ...attrs, 'font-size': size}, g);
    node.textContent = s;
    return node;
  }

  // text over data: with a halo in the background's colour behind it
  say(g, s, x, y, attrs = {}) {
    return this.text(g, s, x, y, {class: 'pl-halo', 'paint-order': 'stroke', ...attrs});
  }

  // a text over data in as many lines as the plot box's width needs, its last line's baseline at y (or its first's,
  // with from: 'top')
  sayLines(g, text, x, y, attrs = {}, from = 'bottom') {
    const lines = this.wrap(text, attrs['font-size'] ?? 12), step = this.line(attrs['font-size'] ?? 12);
    const y0 = from === 'top' ? y : y - step * (lines.length - 1);
    return lines.map((line, i) => this.say(g, line, x, y0 + step * i, attrs));
  }

  // the baseline of note line i between the title and the plot box (the description's notes)
  noteY(i) {
    return (24 + ROW * i + 10) * this.fs;
  }

  // a text in lines that fit `room` px at font-size `size` (scale 1): broken between its phrases (after a colon, a
  // comma, a semicolon, a '·' or at a run of spaces) where they fit, inside a phrase only when one alone is too wide,
  // so that "32.1° peak to peak" stays on one line
  wrap(text, size = 12, room = this.w - this.m.l - this.m.r - 12, weight = 'normal') {
    if (text.includes('\n')) return text.split('\n').flatMap((part) => this.wrap(part, size, room, weight));
    const fits = (line) => textWidth(line, size * this.fs, weight) <= room;
    const phrases = this.phrases(text);
    const lines = [];
    for (const phrase of phrases) {
      const last = lines.length ? `${lines[lines.length - 1]} ${phrase}` : null;
      if (last !== null && fits(last)) { lines[lines.length - 1] = last; continue; }
      if (fits(phrase)) { lines.push(phrase); continue; }
      let first = true;
      for (const word of phrase.split(' ')) {   // a phrase too wide alone: broken at its spaces
        const joined = lines.length && !first ? `${lines[lines.length - 1]} ${word}` : null;
        if (joined !== null && fits(joined)) lines[lines.length - 1] = joined;
        else lines.push(word);
        first = false;
      }
    }
    return lines;
  }

  // the phrases of a line of text, which wrap keeps whole where it can: split after ':', ',' and ';', around '·',
  // before a parenthesis and at runs of spaces
  phrases(text) {
    return text.split(/(?<=[:,;]) +|(?<=·) +| +(?=·)| +(?=\()| {2,}/).filter((p) => p.length);
  }

  // What the plot draws, as points every `step` px along its paths (traces, lines, marks; not the legend, not text)
  // and its circles' centres and edges, in the SVG's units: what a text over the plot must not cover.
  drawnPoints(step = 2) {
    const points = [], groups = [this.body, ...[...this.top.children].filter((g) => !g.classList.contains('pl-legend'))];
    for (const g of groups) {
      for (const path of g.querySelectorAll('path')) {
        let last = null;
        for (const m of (path.getAttribute('d') || '').matchAll(/([MLZ])\s*(?:(-?[\d.]+)[ ,](-?[\d.]+))?/g)) {
          if (m[1] === 'Z') continue;
          const x = Number(m[2]), y = Number(m[3]);
          if (m[1] === 'L' && last) {
            const n = Math.max(1, Math.ceil(Math.hypot(x - last[0], y - last[1]) / step));
            for (let i = 1; i <= n; i++) points.push([last[0] + (x - last[0]) * i / n, last[1] + (y - last[1]) * i / n]);
          } else {
            points.push([x, y]);
          }
          last = [x, y];
        }
      }
      for (const c of g.querySelectorAll('circle')) {
        const x = Number(c.getAttribute('cx')), y = Number(c.getAttribute('cy')), r = Number(c.getAttribute('r'));
        points.push([x, y], [x - r, y], [x + r, y], [x, y - r], [x, y + r]);
      }
    }
    return points;
  }

  // A text over the data (a verdict), in lines, at the first spot where it crosses nothing the plot draws, else where
  // it covers the least: first each of `places` ('ur' upper right, 'ul', 'lr', 'll', 'uc', 'lc', 'cl' middle left,
  // 'cr', 'c'; in order of preference) with the text wrapped to the plot box's width and to about half of it, then
  // every corner and edge midpoint (the `places` first) at those widths and narrower ones (TEXT_SPOTS, TEXT_SHARES);
  // a spot where the wrap keeps every phrase whole before one where it breaks one; boxes in `avoid` ([x0, y0, x1, y1])
  // count as drawn. With `strict` (the present view, where the readout line above the plots says the same), a text
  // that would cover anything is left out. Returns {nodes, box}, or null when left out.
  placeText(g, text, attrs = {}, {places = ['ur', 'ul', 'lr', 'll'], strict = false, avoid = []} = {}) {
    const size = attrs['font-size'] ?? 12, weight = attrs['font-weight'] ?? 'normal', fs = this.fs;
    const x0 = this.m.l + 6 * fs, x1 = this.w - this.m.r - 6 * fs, y0 = this.m.t + 3 * fs, y1 = this.h - this.m.b - 3 * fs;
    const points = this.drawnPoints(), step = this.line(size), pad = 2 * fs;
    const spots = [...places, ...TEXT_SPOTS.filter((place) => !places.includes(place))];
    const tries = [...places.flatMap((place) => [[place, 1], [place, 0.55]]),
                   ...spots.flatMap((place) => TEXT_SHARES.map((share) => [place, share]))];
    const phrases = text.split('\n').flatMap((part) => this.phrases(part));
    let best = null;
    for (const [place, share] of tries) {
      const lines = this.wrap(text, size, share * (x1 - x0), weight);
      const broken = phrases.some((phrase) => !lines.some((line) => line.includes(phrase)));
      const width = Math.max(...lines.map((line) => textWidth(line, size * fs, weight))), height = step * lines.length;
      if (width > x1 - x0 || height > y1 - y0) continue;
      const left = place.endsWith('l') ? x0 : place.endsWith('r') ? x1 - width : (x0 + x1 - width) / 2;
      const top = place.startsWith('u') ? y0 : place.startsWith('l') ? y1 - height : (y0 + y1 - height) / 2;
      const box = [left - pad, top - pad, left + width + pad, top + height + pad];
      const inside = ([x, y]) => x >= box[0] && x <= box[2] && y >= box[1] && y <= box[3];
      const overlaps = (b) => b[0] < box[2] && b[2] > box[0] && b[1] < box[3] && b[3] > box[1];
      const covered = points.filter(inside).length + 1000 * avoid.filter(overlaps).length;
      if (!best || covered < best.covered || (covered === best.covered && best.broken && !broken)) {
        best = {covered, broken, lines, left, top, box};
      }
      if (covered === 0 && !broken) break;
    }
    if (!best || (strict && best.covered > 0)) return null;
    const nodes = best.lines.map((line, i) => this.say(g, line, best.left, best.top + step * i + 0.95 * size * fs,
                                                       {...attrs, 'text-anchor': 'start'}));
    return {nodes, box: best.box};
  }

  // the height of a line of text at font-size `size` (scale 1), px
  line(size = 12) {
    return 1.2 * size * this.fs;
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

  // the legend's entries [label, color, mark] outside the plot box (laid out by legendRows when the plot was made): in
  // rows above it, right-aligned (corners ur, lr, above) or left-aligned (ul, ll), or centred below the axis label
  // (below); in a column on its right in a plot much wider than tall
  legend(entries, corner = 'ur') {
    const g = this.layer('top-legend');
    g.setAttribute('class', 'pl-legend');
    const {l, r, t} = this.m, fs = this.fs, rowH = ROW * fs, {place, rowWidths} = this.legendLayout;
    const room = this.w - l - r;
    const top = corner === 'below' ? this.h - this.below : t - this.above;
    entries.forEach(([label, color, mark], i) => {
      const [offset, row] = place[i], rowWidth = rowWidths[row];
      const start = corner === 'below' ? l + (room - rowWidth) / 2 : corner.endsWith('l') ? l : this.w - r - rowWidth;
      const [x, y] = this.side ? [this.w - this.legendWidth, t + rowH * i + 11 * fs]
        : [start + offset, top + rowH * row + 11 * fs];
      const item = el('g', {class: 'pl-legend-entry'}, g);
      if (mark === 'box') el('rect', {x: x + 4 * fs, y: y - 8 * fs, width: 14 * fs, height: 9 * fs, fill: color}, item);
      else if (mark === 'x' || mark === 'o' || mark === 's') {
        this.mark(item, x + 11 * fs, y - 4 * fs, mark, color, mark === 's' ? 6 : 4, (v) => v, (v) => v);
      } else {
        el('line', {x1: x + 4 * fs, x2: x + 18 * fs, y1: y - 4 * fs, y2: y - 4 * fs, stroke: color, 'stroke-width': 2,
                    'stroke-dasharray': {dash: '4 3', dot: '2 3'}[mark] || 'none'}, item);
      }
      this.text(item, label, x + 22 * fs, y, {'font-size': 11});
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
