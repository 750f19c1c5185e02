// What every chapter's page panel shares: its frame (a head with the title and the engine's status, a row of
// controls ending in reset and present, the readout line, the plots, the note), the controls made from the panel's
// description (physai.interface.panel), the page's address that follows them, the present view for a projector,
// and the two sources of what it draws:
//
// - the precomputed first view (physai.interface.web.first_view: the panel's results computed by Python MuJoCo on a
//   grid of some controls, the others fixed), drawn at once, with no engine: a control of the grid snaps to its
//   nearest precomputed position;
// - MuJoCo itself (engine.js), loaded only on the reader's intent: the "Run MuJoCo live" button (which states the
//   download's size, measured from the engine's files when the site was built), a control's value really changed
//   (a change event: not a focus, a tab, a scroll or a touch that moves nothing), or an address that carries a
//   setting; after that every control reruns the physics in the page.
//
// The present view (for a projector) draws the plots again at the size they are shown, in rows that fit the screen
// (one column on a phone), with every text at least 13 CSS px; in a notebook too (liftForPresent).
//
// A third source serves the panel as a Jupyter widget (physai.interface.widget, through anywidget): the kernel. The
// widget's front end (widget.js) hands the panel a `kernel` ({ask(request)}); every control then asks Python for
// the run at its exact values, and the reply (a frame in the first view's form, fromKernel) is drawn by decode and
// draw as a stored frame is. In the kernel there is no page address and no engine to offer.
//
// A chapter's panel (one module per chapter, named like the Python panels) extends Panel with buildPlots(plots),
// decode(frame) (the stored first view as results), start(mujoco, live) (its models), update(start) (the physics,
// then draw) and draw(results). All sources go through the same draw.
import {load} from './engine.js';
import {Plot} from './figures.js';
import {Control, format, plainNumbers} from './spec.js';

// a task boundary: the page handles input and paints between two slices of a run
export const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => resolve();
  channel.port2.postMessage(0);
});

// The engine's size: measured from its files when the site was built (book/_ext/physai_engine.py writes
// window.physaiEngineSize into the page), else the engine block's own figures.
export function engineSize(live) {
  const built = typeof window === 'object' ? window.physaiEngineSize : undefined;
  return built ?? {megabytes: live.engine.megabytes, compressedMegabytes: live.engine.compressedMegabytes};
}

const ENGINE_TEXT = (live) => `MuJoCo ${live.engine.version} loads into this page (${engineSize(live).megabytes} MB, ` +
  `about ${engineSize(live).compressedMegabytes} MB compressed) and every control reruns it.`;

// the present view: the least width of a plot in a row (else the plots go in more rows; times presentScale), and its
// text scale, so that the smallest text of a plot (11 units) reads at 13 CSS px or more
const PRESENT_MIN_WIDTH = 260;
const TOUCH_DRAG = 10;   // px a finger must drag along a slider for its touch to count as a change
const PRESENT_FONT = 1.2;
// The present view's text grows with the screen, for the back row: at a 720p projector at 150 % (853x480 CSS px) its
// smallest text is 13 CSS px; on a larger screen everything (text, controls, the plots' text and least width) is scaled
// by PRESENT_GROWTH of the ratio of the screen to that one (a 1920x1080 screen: x1.8, the smallest text 23 px, 2.2 % of
// its height).
const PRESENT_BASE = [853, 480];
const PRESENT_GROWTH = 0.8;
export function presentScale(width, height) {
  return Math.max(1, PRESENT_GROWTH * Math.min(width / PRESENT_BASE[0], height / PRESENT_BASE[1]));
}
const PRESENT_ASIDE = 0.45;   // the present view: the share of the width an aside (the 3D view) takes on a wide screen

// the most characters a range control's value text takes, over its range (sampled: ends and at most 200 between)
export function widestValue(c) {
  const [lo, hi, step] = c.kind === 'log' ? [0, c.positions, 1] : [Number(c.min), Number(c.max), Number(c.step) || 1];
  const n = Math.min(200, Math.max(1, Math.round((hi - lo) / step)));
  let widest = 0;
  for (let i = 0; i <= n; i++) {
    const position = i === n ? hi : lo + Math.round(i * (hi - lo) / n / step) * step;
    widest = Math.max(widest, [...c.show(c.value(String(position)))].length);
  }
  return widest;
}

export class Panel {
  // root: the panel's element (physai.interface.web.first_view's block); data: its JSON; live: the live block's
  // JSON (the models and the engine's constants), or null when the page has none
  constructor(root, data, live, kernel = null) {
    this.root = root;
    this.kernel = kernel;
    this.data = data;
    this.spec = data.spec;
    this.constants = data.constants;
    this.live = live;
    this.colors = data.constants.colors;
    this.controls = this.spec.controls.map((c) => new Control(c, this.spec.logPositions));
    this.byName = Object.fromEntries(this.controls.map((c) => [c.name, c]));
    this.mode = kernel ? 'kernel' : 'first-view';   // then 'loading', 'live'; or 'kernel' throughout
    this.latencies = [];        // input to the first redrawn picture, ms
    this.completeLatencies = [];  // input to the whole run drawn with its verdict, ms
    this.drawn = 0;
    this.generation = 0;
    this.engineVersion = null;
    this.urlProblems = [];
    this.values = {...this.defaults(), ...this.fromUrl()};
  }

  // ---- building

  // the panel in its root, drawing the first view; the engine starts at once if the address carries a setting
  build() {
    const id = `physai-panel-${this.spec.key}`;
    this.root.querySelector('.physai-panel-fallback')?.remove();
    const head = this.element('div', 'pl-head', this.root);
    this.element('span', 'pl-title', head).textContent = this.spec.title;
    this.status = this.element('span', 'pl-status', head);
    this.offer = this.element('span', 'pl-offer', head);
    const row = this.element('div', 'pl-controls', this.root);
    this.inputs = {};
    for (const c of this.controls) row.appendChild(this.control(c, id));
    this.button(row, 'reset', 'back to the chapter\'s setting', () => this.reset());
    this.presentButton = this.button(row, 'present', 'full screen for a projector (Esc to leave)', () => this.togglePresent());
    this.addressNote = this.element('div', 'pl-address', this.root);
    if (this.urlProblems.length) this.addressNote.textContent = `From the address: ${this.urlProblems.join('; ')}.`;
    else this.addressNote.hidden = true;
    this.readout = this.element('div', 'pl-readout', this.root);
    this.readout.setAttribute('aria-live', 'polite');
    this.plotsBox = this.element('div', 'pl-plots', this.root);
    this.plots = {};
    this.buildPlots(this.plotsBox);
    this.note = this.element('div', 'pl-note', this.root);
    this.note.textContent = this.say('note', this.constants.note ?? {});
    this.root.dataset.mode = this.mode;
    document.addEventListener('keydown', (event) => {
      if (!this.present) return;
      if (event.key === 'Escape') this.togglePresent();
      else if (event.key === 'Tab') this.trapFocus(event);
    });
    // a focus that lands outside the present view (a click on the hidden page behind it, a script) comes back to it
    document.addEventListener('focusin', (event) => {
      if (this.present && !this.root.contains(event.target)) this.root.focus({preventScroll: true});
    });
    // the screen left by the browser's own key (Esc in full screen never reaches the page): the present view ends too
    document.addEventListener('fullscreenchange', () => {
      if (this.present && this.screenFilled && document.fullscreenElement !== this.root) this.togglePresent();
      this.screenFilled = document.fullscreenElement === this.root;
    });
    window.addEventListener('resize', () => {
      if (!this.present) return;
      clearTimeout(this.resizeTimer);
      this.resizeTimer = setTimeout(() => { this.presentScaleSet(); this.redrawPlots(); }, 150);
    });
    if (this.kernel) {
      this.status.textContent = `computed by physai (MuJoCo ${this.constants.pythonMujoco}) in the kernel`;
      this.askKernel();
    } else {
      this.offerEngine();
      this.firstView();
    }
    this.committed = Object.fromEntries(this.controls.map((c) => [c.name, this.inputs[c.name].input.value]));
    if (this.presentAtStart) this.togglePresent();
    if (this.fromAddress && this.canGoLive()) this.goLive();
  }

  element(tag, className, parent) {
    const node = document.createElement(tag);
    node.className = className;
    parent.appendChild(node);
    return node;
  }

  button(parent, label, title, onClick) {
    const b = this.element('button', '', parent);
    b.type = 'button';
    b.textContent = label;
    b.title = title;
    b.addEventListener('click', onClick);
    return b;
  }

  // one control of the description: a select, or a range input with its value beside it
  control(c, id) {
    const label = document.createElement('label');
    label.dataset.control = c.name;
    label.append(`${c.label} `);
    let input, out = null;
    if (c.kind === 'choice') {
      input = document.createElement('select');
      c.options.forEach((o, i) => {
        const option = document.createElement('option');
        option.value = String(o);
        option.textContent = c.labels[i];
        input.appendChild(option);
      });
      label.appendChild(input);
    } else {
      input = document.createElement('input');
      Object.assign(input, c.inputAttributes());
      out = document.createElement('span');
      out.className = 'pl-value';
      out.id = `${id}-${c.name}-value`;
      out.style.minWidth = `${widestValue(c)}ch`;   // the row keeps its layout whatever the value (monospace)
      label.append(input, ' ', out);
    }
    input.id = `${id}-${c.name}`;
    this.inputs[c.name] = {input, out, label};
    input.addEventListener('input', (event) => this.onInput(c.name, event));
    input.addEventListener('change', () => this.onChange(c.name));
    if (c.kind !== 'choice') {
      // A finger that lands on a slider moves its thumb at once, before the browser knows the finger means to scroll
      // the page: a touch counts as a change only when it drags along the slider (at least TOUCH_DRAG px, more across
      // than down); else the slider goes back to where it was: its value as it was (a log slider's position rounds it,
      // so the value is kept, not read back from the position) and the page's address as it was.
      input.addEventListener('pointerdown', (event) => {
        if (event.pointerType === 'touch') {
          this.touch = {name: c.name, x: event.clientX, y: event.clientY, position: input.value, value: this.values[c.name],
                        address: location.href, urlPending: this.urlPending};
        }
      });
      const end = (event, cancelled) => {
        const touch = this.touch;
        if (!touch || touch.name !== c.name) return;
        this.touch = null;
        const dx = Math.abs(event.clientX - touch.x), dy = Math.abs(event.clientY - touch.y);
        if (cancelled || dx < TOUCH_DRAG || dy > dx) this.revert(c.name, touch);
        else if (touch.changed) this.onChange(c.name);
      };
      input.addEventListener('pointerup', (event) => end(event, false));
      input.addEventListener('pointercancel', (event) => end(event, true));
    }
    this.showValue(c.name);
    return label;
  }

  // the plots of the description (chapters may add to them, with plotOptions); returns {key: Plot}
  buildPlots(container) {
    for (const spec of this.spec.plots) this.plots[spec.key] = new Plot(container, spec, this.plotOptions(spec));
    return this.plots;
  }

  // how a plot is drawn: in the page, at its description's size, or at the room's width where the page has less
  // (a phone: one unit a CSS px, so its text keeps its size instead of shrinking with the drawing); in the present
  // view, at the size the layout gives it, its text scaled up
  plotOptions(spec) {
    if (this.present && this.presentSizes?.[spec.key]) {
      return {...this.presentSizes[spec.key], font: PRESENT_FONT * (this.presentScaleValue ?? 1)};
    }
    const room = Math.floor(Math.min(window.innerWidth, this.root.clientWidth || Infinity) - 20);
    return {width: room < spec.width ? Math.max(room, 240) : spec.width, height: spec.height, font: 1};
  }

  // The present view's sizes: the plots (the description's and any a chapter adds, `extraPlots`) in rows as wide
  // as the screen, each plot's width in proportion to its description's, as many to a row as keep each at least
  // PRESENT_MIN_WIDTH px (times the present scale) wide; the rows share the height left under the controls (one plot a row on a phone, each
  // then about as tall as it is wide, the view scrolling).
  presentLayout() {
    const specs = [...this.spec.plots, ...this.extraPlots()];
    const order = [...this.plotsBox.children].map((svg) => specs.find((p) => svg.classList.contains(`pl-${p.key}`)));
    const scale = this.presentScaleValue ?? 1, minPlot = PRESENT_MIN_WIDTH * scale;
    // a chapter's aside (the 3D view) on a wide screen: a column on the right, PRESENT_ASIDE of the width, as tall as
    // the plots' room; the plots it keeps beside it (all if it names none) share the rest, the others are hidden. With
    // it the readout keeps room for one line only (the view needs the height); if it wraps, the layout is made again
    const full = Math.floor(this.root.clientWidth - 24);
    const aside = full >= 2 * minPlot ? this.presentAside() : null;
    this.root.classList.toggle('pl-present-with-aside', Boolean(aside));
    this.readoutHeight = this.readout.getBoundingClientRect().height;
    const box = this.plotsBox.getBoundingClientRect();
    // what the plots' box holds beside the plots, in a row under them (chapter 3 and 4's closed 3D view: its button)
    const under = [...this.plotsBox.children].filter((c) => c.tagName.toLowerCase() !== 'svg'
      && c !== aside?.element && !c.classList.contains('pl-present-aside') && getComputedStyle(c).position !== 'absolute')
      .reduce((sum, c) => sum + c.getBoundingClientRect().height + 4, 0);
    const height = Math.floor(window.innerHeight - box.top - 10 - under);
    this.presentAsideSize = aside ? {width: Math.round(PRESENT_ASIDE * full), height} : null;
    const width = aside ? full - this.presentAsideSize.width - 8 : full;
    const shown = order.filter((p, i) => p && order.indexOf(p) === i && (!aside?.plots || aside.plots.includes(p.key)));
    // a phone: one plot a row, the view scrolling; a wider screen: every plot on it, as many to a row as keep each at
    // least PRESENT_MIN_WIDTH (times the present scale) wide, the count whose plots come nearest a 16:10 box, then the one leaving fewer gaps
    let best = {perRow: 1, rows: shown.length};
    if (full >= 2 * minPlot) {
      best = null;
      for (let perRow = shown.length; perRow >= 1; perRow--) {
        if (perRow > 1 && width / perRow < minPlot) continue;
        const rows = Math.ceil(shown.length / perRow), score = Math.min(width / perRow, 1.6 * height / rows);
        const gaps = rows * perRow - shown.length;
        if (!best || score > best.score + 1 || (Math.abs(score - best.score) <= 1 && gaps < best.gaps)) {
          best = {perRow, rows, score, gaps};
        }
      }
    }
    const {perRow, rows} = best, sizes = {};
    for (let r = 0; r < rows; r++) {
      const row = shown.slice(r * perRow, (r + 1) * perRow), total = row.reduce((sum, p) => sum + p.width, 0);
      const h = full < 2 * minPlot ? Math.max(Math.min(height, Math.round(0.8 * width)), 200)
        : Math.floor((height - 4 * (rows - 1)) / rows);
      let used = 0;
      row.forEach((p, i) => {
        const w = i === row.length - 1 ? width - used : Math.floor((width - 4 * (row.length - 1)) * p.width / total);
        sizes[p.key] = {width: Math.max(w, 120), height: Math.max(h, 120)};
        used += w + 4;
      });
    }
    return sizes;
  }

  // what a chapter shows beside its plots in the present view on a wide screen, or null: {element, plots}, an element
  // of the plots' box (redrawPlots places it in a column on the right) and the keys of the plots kept beside it (null:
  // all; the others are hidden while it is there)
  presentAside() {
    return null;
  }

  // plots a chapter adds to its description's (the present view sizes them too): [{key, width, height}]
  extraPlots() {
    return [];
  }

  // draw every plot again at the current sizes, then what it showed
  redrawPlots() {
    this.presentSizes = this.present ? this.presentLayout() : null;
    this.plotsBox.replaceChildren();
    this.plots = {};
    this.buildPlots(this.plotsBox);
    const aside = this.present && this.presentAsideSize ? this.presentAside()?.element : null, room = this.presentAsideSize;
    for (const [key, plot] of Object.entries(this.allPlots())) {
      const size = this.presentSizes?.[key];
      if (size) Object.assign(plot.svg.style, {width: `${size.width}px`, height: `${size.height}px`});
      else if (aside) plot.svg.style.display = 'none';   // a plot the aside does not keep beside it
    }
    Object.assign(this.plotsBox.style, aside ? {position: 'relative', paddingRight: `${room.width + 8}px`}
      : {position: '', paddingRight: ''});
    for (const child of this.plotsBox.children) {
      if (child !== aside && !child.classList.contains('pl-present-aside')) continue;
      child.classList.toggle('pl-present-aside', child === aside);
      Object.assign(child.style, child === aside
        ? {position: 'absolute', top: '0', right: '0', width: `${room.width}px`, height: `${room.height}px`}
        : {position: '', top: '', right: '', width: '', height: ''});
    }
    this.refresh();
  }

  // draw the current values again from the panel's source
  refresh() {
    if (this.mode === 'kernel') this.askKernel();
    else if (this.mode === 'live') this.update();
    else this.firstView();
  }

  // every plot drawn, by key (a chapter with more than its description's says so)
  allPlots() {
    return this.plots;
  }

  // ---- values: defaults, the address, the inputs

  defaults() {
    return Object.fromEntries(this.controls.map((c) => [c.name, c.defaultValue]));
  }

  // the page's address: ?KEY-URL=VALUE for every control, KEY-present=1 for the present view
  fromUrl() {
    if (this.kernel) return {};   // a notebook's address is not the panel's
    const q = new URLSearchParams(location.search), k = this.spec.key, out = {};
    for (const c of this.controls) {
      const text = q.get(`${k}-${c.url}`);
      if (text === null) continue;
      const {value, problem} = c.fromUrl(text);
      if (problem) this.urlProblems.push(problem);
      if (value !== undefined) out[c.name] = value;
    }
    this.presentAtStart = q.get(`${k}-present`) === '1';
    this.fromAddress = [...q.keys()].some((name) => name.startsWith(`${k}-`));
    return out;
  }

  writeUrl() {
    if (this.kernel) return;
    clearTimeout(this.urlTimer);
    this.urlPending = false;
    const q = new URLSearchParams(location.search), k = this.spec.key;
    for (const c of this.controls) q.set(`${k}-${c.url}`, c.urlText(this.values[c.name]));
    if (this.present) q.set(`${k}-present`, '1'); else q.delete(`${k}-present`);
    history.replaceState(history.state, '', `${location.pathname}?${q.toString()}${location.hash}`);
  }

  // the address follows the controls a quarter second after the last move (browsers throttle replaceState)
  scheduleUrl() {
    if (this.kernel) return;
    clearTimeout(this.urlTimer);
    this.urlPending = true;
    this.urlTimer = setTimeout(() => this.writeUrl(), 250);
  }

  showValue(name) {
    const c = this.byName[name], {input, out} = this.inputs[name], value = this.values[name];
    input.value = c.position(value);
    if (!out) return;
    const text = c.show(value);
    out.textContent = text;
    input.setAttribute('aria-valuetext', text);
  }

  syncInputs() {
    for (const c of this.controls) this.showValue(c.name);
  }

  // a control moved: its new value; live, the physics reruns; before, the first view answers and MuJoCo loads
  onInput(name, event) {
    const start = event && event.timeStamp ? event.timeStamp : performance.now();
    this.values[name] = this.byName[name].value(this.inputs[name].input.value);
    this.scheduleUrl();
    if (this.mode === 'kernel') {
      this.showValue(name);
      this.askKernel(start);
      return;
    }
    if (this.mode === 'live') {
      this.showValue(name);
      this.update(start);
      return;
    }
    this.firstView(start);
  }

  // a control's value committed (a change event: a slider let go, a choice made, a key that moved it): MuJoCo
  // starts if the value differs from the one the panel last ran or showed, never on a focus, a tab or a scroll
  onChange(name) {
    if (this.touch?.name === name) { this.touch.changed = true; return; }   // decided when the finger lifts
    const position = this.inputs[name].input.value, before = this.committed[name];
    this.committed[name] = position;
    if (position !== before && this.mode === 'first-view' && this.canGoLive()) this.goLive();
  }

  // a slider back where a touch found it (a touch that was a scroll or a tap, not a drag): its position, its value
  // and the page's address as they were
  revert(name, {position, value, address, urlPending}) {
    const input = this.inputs[name].input, moved = this.values[name] !== value;
    if (!urlPending) clearTimeout(this.urlTimer);   // the address the touch would have written
    this.urlPending = urlPending;
    if (location.href !== address) history.replaceState(history.state, '', address);
    input.value = position;
    this.values[name] = value;
    this.showValue(name);
    if (!moved) return;
    this.refresh();
  }

  reset() {
    this.values = this.defaults();
    this.syncInputs();
    this.scheduleUrl();
    this.refresh();
  }

  togglePresent() {
    this.present = !this.present;
    if (this.kernel) this.liftForPresent();
    this.fillScreen();
    this.root.classList.toggle('physai-panel-present', this.present);
    this.root.setAttribute('role', this.present ? 'dialog' : 'group');
    if (this.present) this.root.setAttribute('aria-modal', 'true'); else this.root.removeAttribute('aria-modal');
    this.presentScaleSet();
    if (!this.present) this.root.classList.remove('pl-present-with-aside');
    this.presentButton.textContent = this.present ? 'leave present (Esc)' : 'present';
    this.redrawPlots();
    this.writeUrl();
    // the keyboard stays in the present view while it is on (trapFocus): the view itself takes the focus (no ring on
    // the projector), and the button gets it back after it
    if (this.present && !this.root.contains(document.activeElement)) {
      this.root.tabIndex = -1;
      this.root.focus({preventScroll: true});
    } else if (!this.present) {
      this.presentButton.focus({preventScroll: false});
    }
  }

  // In a notebook the present view fills the browser window as on the page: JupyterLab's panels contain their fixed
  // boxes (CSS containment), so the panel moves to the document's body while it presents, a placeholder of its height
  // keeping its place in the notebook, and goes back there when it closes.
  liftForPresent() {
    if (this.present) {
      this.placeholder = document.createElement('div');
      this.placeholder.className = 'pl-present-placeholder';
      this.placeholder.style.height = `${this.root.offsetHeight}px`;
      this.root.replaceWith(this.placeholder);
      document.body.appendChild(this.root);
    } else if (this.placeholder) {
      this.placeholder.replaceWith(this.root);
      this.placeholder = null;
    }
  }

  // In a frame (Colab shows a widget's output in an iframe; a host page may embed a chapter) the present view fills
  // only the frame, so it asks for the whole screen too (the Fullscreen API; a host that does not allow it in the
  // frame refuses, and the view fills the frame); leaving the view leaves the screen
  fillScreen() {
    if (this.present && window.self !== window.top && document.fullscreenEnabled && !document.fullscreenElement) {
      this.root.requestFullscreen().catch(() => {});
    } else if (!this.present && document.fullscreenElement === this.root) {
      this.screenFilled = false;
      document.exitFullscreen().catch(() => {});
    }
  }

  // the present view's scale for the window's size (presentScale), as a CSS variable its style sheet multiplies by
  presentScaleSet() {
    this.presentScaleValue = this.present ? presentScale(window.innerWidth, window.innerHeight) : 1;
    this.root.style.setProperty('--pl-scale', String(this.presentScaleValue));
  }

  // Tab and Shift+Tab go round the present view's own controls, never into the page hidden behind it
  trapFocus(event) {
    const focusable = [...this.root.querySelectorAll('button, select, input, a[href], [tabindex]:not([tabindex="-1"])')]
      .filter((e) => !e.disabled && e.offsetParent !== null && e.tabIndex >= 0);
    if (!focusable.length) return;
    const first = focusable[0], last = focusable[focusable.length - 1], at = document.activeElement;
    const inside = this.root.contains(at) && at !== this.root;
    if (event.shiftKey && (!inside || at === first)) { event.preventDefault(); last.focus(); }
    else if (!event.shiftKey && (!inside || at === last)) { event.preventDefault(); first.focus(); }
  }

  // ---- the precomputed first view

  // The stored frame nearest the current values: each control of the grid at its nearest precomputed value, the
  // others at the view's own. Returns {values, frame}: the values it was computed at and its parts, by name.
  nearestFrame() {
    const view = this.data.firstView, at = {...view.at};
    for (const [name, grid] of Object.entries(view.grid)) {
      const c = this.byName[name], v = this.values[name];
      const distance = (x) => (c.kind === 'choice' ? (x === v ? 0 : 1)
        : c.kind === 'log' ? Math.abs(Math.log(x) - Math.log(v)) : Math.abs(x - v));
      at[name] = grid.reduce((best, x) => (distance(x) < distance(best) ? x : best), grid[0]);
    }
    const frame = {};
    for (const [part, {on, data}] of Object.entries(view.parts)) {
      let index = 0;
      for (const name of on) index = index * view.grid[name].length + view.grid[name].indexOf(at[name]);
      frame[part] = data[index];
    }
    return {values: at, frame};
  }

  // draw the first view's frame nearest the current values; where MuJoCo cannot come (no WebAssembly, no engine
  // block) the grid's controls move to where the frame was computed, else they keep the reader's values, which
  // MuJoCo will run
  firstView(start = performance.now()) {
    const {values, frame} = this.nearestFrame();
    if (!this.canGoLive()) {
      for (const name of Object.keys(this.data.firstView.grid)) this.values[name] = values[name];
    }
    this.syncInputs();
    this.draw(this.decode(frame, values), values);
    this.done(start, start);
    const grid = this.controls.filter((c) => c.name in this.data.firstView.grid).map((c) => c.label).join(', ');
    this.status.textContent = `precomputed by physai (MuJoCo ${this.constants.pythonMujoco}) on a grid of ${grid}`;
    this.root.dataset.frame = JSON.stringify(values);
  }

  // ---- the kernel (a Jupyter widget)

  // ask Python for the run at the current values; its reply comes to fromKernel
  askKernel(start = performance.now()) {
    this.generation += 1;
    this.asked = {generation: this.generation, start, first: true};
    this.root.dataset.state = 'running';
    this.kernel.ask({generation: this.generation, values: {...this.values}});
  }

  // Python's reply: {generation, values, frame, complete}, a frame in the first view's form at exactly these values
  // (its slow parts null until they are computed: a second reply completes it); an older generation's is dropped
  fromKernel(reply) {
    if (reply.error) {
      this.setReadout(`could not run this setting: ${reply.error}`, true);
      this.root.dataset.state = 'idle';
      return;
    }
    if (!this.asked || reply.generation !== this.asked.generation) return;
    this.draw(this.decode(reply.frame, reply.values), reply.values);
    const {start, first} = this.asked;
    this.asked.first = false;
    if (first) this.lastReplyMs = reply.ms;   // Python's part of it (benchmarks/bench_widget.py)
    if (reply.complete) this.done(start, first ? start : null);
    else if (first) this.latencies.push(performance.now() - start);
  }

  // ---- MuJoCo in the page

  canGoLive() {
    return Boolean(this.live) && typeof WebAssembly === 'object' && typeof WebAssembly.instantiate === 'function';
  }

  // "Run MuJoCo live" in the head; where MuJoCo cannot come (no WebAssembly, or no engine block on the page), the
  // controls the first view's grid does not hold are off, and the head says why when it is WebAssembly
  offerEngine() {
    if (this.canGoLive()) {
      const size = engineSize(this.live);
      this.offerButton = this.button(this.offer, `▶ Run MuJoCo live (${size.compressedMegabytes} MB download)`,
                                     'load MuJoCo into this page', () => this.goLive());
      this.offerButton.classList.add('pl-run');
      this.element('span', 'pl-offer-text', this.offer).textContent = ` ${ENGINE_TEXT(this.live)}`;
      this.root.dataset.engine = 'offered';
      return;
    }
    this.root.dataset.engine = this.live ? 'no-wasm' : 'none';
    if (this.live) this.offer.textContent = 'The live MuJoCo version needs WebAssembly, which this browser has off.';
    for (const name of Object.keys(this.inputs)) {
      if (!(name in this.data.firstView.grid)) this.inputs[name].input.disabled = true;
    }
  }

  async goLive() {
    if (this.mode !== 'first-view') return;
    this.mode = this.root.dataset.mode = 'loading';
    this.root.dataset.engine = 'loading';
    if (this.offerButton) this.offerButton.disabled = true;
    this.status.textContent = `loading MuJoCo ${this.live.engine.version}…`;
    try {
      const mujoco = await load();
      await nextTask();   // the page paints and takes input between instantiating the engine and compiling the model
      await this.start(mujoco, this.live);
      await nextTask();
      this.engineVersion = mujoco.mj_versionString();
      this.mode = this.root.dataset.mode = 'live';
      this.root.dataset.engine = 'live';
      this.offer.replaceChildren();
      this.status.textContent = this.liveStatus();
      if (this.present) this.redrawPlots(); else this.update();   // the head lost its button: the plots have more room
    } catch (error) {
      this.mode = this.root.dataset.mode = 'first-view';
      this.root.dataset.engine = 'failed';
      if (this.offerButton) this.offerButton.disabled = false;
      this.status.textContent = `MuJoCo could not load here (${error?.message || error}); the view stays precomputed.`;
    }
  }

  // the head's status when live: the engine it runs and how it relates to the Python version of the book's numbers
  liveStatus(extra = '') {
    return `MuJoCo ${this.engineVersion} (WebAssembly) in this page${extra}; the book's numbers: Python MuJoCo ` +
      `${this.constants.pythonMujoco}`;
  }

  // ---- bookkeeping shared by the chapters

  // a picture is drawn: the latency from the input (first picture), the count the tests wait for
  done(start, first = null) {
    if (first !== null) this.latencies.push(performance.now() - start);
    this.completeLatencies.push(performance.now() - start);
    for (const list of [this.latencies, this.completeLatencies]) if (list.length > 500) list.shift();
    this.drawn += 1;
    this.root.dataset.drawn = String(this.drawn);
    this.root.dataset.state = 'idle';
  }

  // Drain a sliced run (a generator of runs.js's holdRun or replayRun): onSlice(progress) after the first slice and
  // then at most every progressMs, onDone(record) at the end; a newer input (generation) drops it.
  async drive(run, generation, start, onSlice, onDone, progressMs = 100) {
    let first = true, shownAt = 0;
    this.root.dataset.state = 'running';
    for (;;) {
      const step = run.next();
      if (step.done) {
        onDone(step.value);
        this.done(start, first ? start : null);
        return;
      }
      if (first || performance.now() - shownAt >= progressMs) {
        onSlice(step.value);
        shownAt = performance.now();
      }
      if (first) {
        this.latencies.push(performance.now() - start);
        first = false;
      }
      await nextTask();
      if (generation !== this.generation) return;   // a newer input took over
    }
  }

  // the panel's words (its description's templates)
  say(word, values) {
    return plainNumbers(format(word === 'note' ? this.spec.note : this.spec.words[word], values));
  }

  // The verdict, in one style in every chapter: a bad run (diverged, still swinging, chatters) reads in the diverged
  // colour, bold, in the readout line and on its plot (verdictAttrs); any other (settled, still, or still creeping or
  // drifting toward rest, which is slow, not unstable) in the text colour. Each chapter's verdict rule decides which.
  setReadout(text, bad) {
    this.readout.textContent = plainNumbers(text);
    this.readout.classList.toggle('pl-bad', Boolean(bad));
    if (this.present && this.root.classList.contains('pl-present-with-aside')
        && Math.abs(this.readout.getBoundingClientRect().height - this.readoutHeight) > 1) {
      clearTimeout(this.refitTimer);   // the readout took another number of lines beside the 3D view: lay out again
      this.refitTimer = setTimeout(() => this.redrawPlots(), 0);
    }
  }

  // the verdict over a plot, where it covers the least of the data (Plot.placeText: `places` in order of preference,
  // `avoid` boxes already taken); in the present view it is left out rather than cross the data (the readout line
  // says it); returns {nodes, box} or null
  verdictText(plot, g, text, bad, {places, avoid = [], attrs = {}} = {}) {
    return plot.placeText(g, plainNumbers(text), this.verdictAttrs(bad, attrs), {places, avoid, strict: Boolean(this.present)});
  }

  verdictAttrs(bad, attrs = {}) {
    return bad ? {...attrs, fill: this.colors.diverged, 'font-weight': 'bold', class: 'pl-halo pl-verdict pl-bad'}
      : {...attrs, fill: 'currentColor', class: 'pl-halo pl-verdict'};
  }
}
