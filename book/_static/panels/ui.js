// What every chapter's page panel shares: its frame (a head with the title and the engine's status, a row of
// controls ending in reset and present, the readout line, the plots, the note), the controls made from the panel's
// description (physai.interface.panel), the page's address that follows them, the present view for a projector,
// and the two sources of what it draws:
//
// - the precomputed first view (physai.interface.web.first_view: the panel's results computed by Python MuJoCo on a
//   grid of some controls, the others fixed), drawn at once, with no engine: a control of the grid snaps to its
//   nearest precomputed position;
// - MuJoCo itself (engine.js), loaded when the reader first touches the panel (or its address carries a setting,
//   or the reader presses "Run MuJoCo live"), after which every control reruns the physics in the page.
//
// A chapter's panel (one module per chapter, named like the Python panels) extends Panel with buildPlots(plots),
// decode(frame) (the stored first view as results), start(mujoco, live) (its models), update(start) (the physics,
// then draw) and draw(results). Both sources go through the same draw.
import {load} from './engine.js';
import {Plot} from './figures.js';
import {Control, format} from './spec.js';

// a task boundary: the page handles input and paints between two slices of a run
export const nextTask = () => new Promise((resolve) => {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => resolve();
  channel.port2.postMessage(0);
});

const ENGINE_TEXT = (live) => `MuJoCo ${live.engine.version} (${live.engine.megabytes} MB, about ` +
  `${live.engine.compressedMegabytes} MB compressed) loads into this page and every control reruns it.`;

export class Panel {
  // root: the panel's element (physai.interface.web.first_view's block); data: its JSON; live: the live block's
  // JSON (the models and the engine's constants), or null when the page has none
  constructor(root, data, live) {
    this.root = root;
    this.data = data;
    this.spec = data.spec;
    this.constants = data.constants;
    this.live = live;
    this.colors = data.constants.colors;
    this.controls = this.spec.controls.map((c) => new Control(c, this.spec.logPositions));
    this.byName = Object.fromEntries(this.controls.map((c) => [c.name, c]));
    this.mode = 'first-view';   // then 'loading', 'live'
    this.latencies = [];        // input to the first redrawn picture, ms
    this.completeLatencies = [];  // input to the whole run drawn with its verdict, ms
    this.drawn = 0;
    this.generation = 0;
    this.engineVersion = null;
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
    this.readout = this.element('div', 'pl-readout', this.root);
    this.readout.setAttribute('aria-live', 'polite');
    const plots = this.element('div', 'pl-plots', this.root);
    this.plots = {};
    this.buildPlots(plots);
    this.note = this.element('div', 'pl-note', this.root);
    this.note.textContent = this.say('note', this.constants.note ?? {});
    this.root.dataset.mode = this.mode;
    document.addEventListener('keydown', (event) => { if (event.key === 'Escape' && this.present) this.togglePresent(); });
    this.offerEngine();
    this.firstView();
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
      label.append(input, ' ', out);
    }
    input.id = `${id}-${c.name}`;
    this.inputs[c.name] = {input, out, label};
    input.addEventListener('input', (event) => this.onInput(c.name, event));
    this.showValue(c.name);
    return label;
  }

  // the plots of the description (chapters may add to them); returns {key: Plot}
  buildPlots(container, widths = {}) {
    for (const spec of this.spec.plots) {
      this.plots[spec.key] = new Plot(container, spec, {width: widths[spec.key] ?? this.plotWidth(spec)});
    }
    return this.plots;
  }

  // a plot's drawing width: its own, or at most 400 where the page has less room than that (a phone), so that its
  // text stays about the size of the other plots' instead of shrinking with the whole drawing
  plotWidth(spec) {
    const room = Math.min(window.innerWidth, this.root.parentElement?.clientWidth || Infinity);
    return room < spec.width ? Math.min(spec.width, 400) : spec.width;
  }

  // ---- values: defaults, the address, the inputs

  defaults() {
    return Object.fromEntries(this.controls.map((c) => [c.name, c.defaultValue]));
  }

  // the page's address: ?KEY-URL=VALUE for every control, KEY-present=1 for the present view
  fromUrl() {
    const q = new URLSearchParams(location.search), k = this.spec.key, out = {};
    for (const c of this.controls) {
      const text = q.get(`${k}-${c.url}`);
      if (text === null) continue;
      const value = c.fromUrl(text);
      if (value !== undefined) out[c.name] = value;
    }
    this.presentAtStart = q.get(`${k}-present`) === '1';
    this.fromAddress = [...q.keys()].some((name) => name.startsWith(`${k}-`));
    return out;
  }

  writeUrl() {
    clearTimeout(this.urlTimer);
    const q = new URLSearchParams(location.search), k = this.spec.key;
    for (const c of this.controls) q.set(`${k}-${c.url}`, c.urlText(this.values[c.name]));
    if (this.present) q.set(`${k}-present`, '1'); else q.delete(`${k}-present`);
    history.replaceState(history.state, '', `${location.pathname}?${q.toString()}${location.hash}`);
  }

  // the address follows the controls a quarter second after the last move (browsers throttle replaceState)
  scheduleUrl() {
    clearTimeout(this.urlTimer);
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
    if (this.mode === 'live') {
      this.showValue(name);
      this.update(start);
      return;
    }
    this.firstView(start);
    if (this.canGoLive()) this.goLive();
  }

  reset() {
    this.values = this.defaults();
    this.syncInputs();
    this.scheduleUrl();
    if (this.mode === 'live') this.update(); else this.firstView();
  }

  togglePresent() {
    this.present = !this.present;
    this.root.classList.toggle('physai-panel-present', this.present);
    this.presentButton.textContent = this.present ? 'leave present' : 'present';
    this.writeUrl();
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

  // ---- MuJoCo in the page

  canGoLive() {
    return Boolean(this.live) && typeof WebAssembly === 'object' && typeof WebAssembly.instantiate === 'function';
  }

  // "Run MuJoCo live" in the head; where MuJoCo cannot come (no WebAssembly, or no engine block on the page), the
  // controls the first view's grid does not hold are off, and the head says why when it is WebAssembly
  offerEngine() {
    if (this.canGoLive()) {
      this.offerButton = this.button(this.offer, '▶ Run MuJoCo live', 'load MuJoCo into this page', () => this.goLive());
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
      await this.start(mujoco, this.live);
      this.engineVersion = mujoco.mj_versionString();
      this.mode = this.root.dataset.mode = 'live';
      this.root.dataset.engine = 'live';
      this.offer.replaceChildren();
      this.status.textContent = this.liveStatus();
      this.update();
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
    return format(word === 'note' ? this.spec.note : this.spec.words[word], values);
  }

  setReadout(text, bad) {
    this.readout.textContent = text;
    this.readout.classList.toggle('pl-bad', Boolean(bad));
  }
}
