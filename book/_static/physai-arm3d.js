/**
 * physai-arm3d.js: the SO-101 in 3D, posed body by body from MuJoCo's own numbers (three.js, WebGL 2).
 *
 * A page imports this module only when the reader opens the 3D view; it then fetches three.js from
 * `_static/three/` and the arm from `_static/arm3d/` (both put into the site by book/_ext/physai_arm3d.py; the
 * arm's description and meshes are written by `python -m physai.book.arm_meshes`). It imports nothing of the live
 * panels: a panel hands it poses.
 *
 * It is three modules, by what each does: this one is the view (WebGL, the scene, the camera, playing a clip);
 * `physai-arm3d-arm.js` reads the arm's description and meshes and builds its three.js bodies (no renderer, so it
 * runs in Node too); `physai-arm3d-poses.js` is the quaternion arithmetic that magnifies a motion (plain numbers).
 * This module re-exports what the other two export, so a page or a test imports this one alone.
 *
 * The pose is MuJoCo's, with no kinematics here: each body is placed at its `xpos` (m) and `xquat` (w, x, y, z),
 * each visible geom sits on its body at its compiled `geom_pos`/`geom_quat`, and each mesh's vertices are the ones
 * MuJoCo compiled (`mesh_vert`, in the mesh's own frame), simplified and quantized. So a geom's world placement is
 * MuJoCo's `geom_xpos = xpos + xmat geom_pos`, `geom_xmat = xmat mat(geom_quat)` (tests/test_arm3d_view.py checks
 * the three.js objects against `d.geom_xpos`/`d.geom_xmat`). Coordinates are MuJoCo's, z up.
 *
 * Use:
 *
 *     const { Arm3D } = await import('./physai-arm3d.js');
 *     const view = await Arm3D.create(container, { assetsUrl: '_static/arm3d/so101.json', ghost: true });
 *     if (!view.available) ...;              // view.reason says why (e.g. no WebGL 2); the container shows it
 *     view.setPose(data.xpos, data.xquat);   // Float64Array nbody*3 and nbody*4, MuJoCo's MjData fields
 *     view.setPose(xposRec, xquatRec, { ghost: true });
 *     view.setMagnification(20, { xpos: xposTarget, xquat: xquatTarget });   // "motion x20" on the view
 *     view.setClip({ time, xpos, xquat, ghost: { xpos, xquat } });            // then play/pause/scrub
 *     view.onTime = (t) => { ... };          // the view's own playing (or its stop) or scrubbing moved to t (s)
 *     view.seek(t);                          // the panel's cursor moved (does not call onTime)
 *     view.dispose();                        // frees the GPU objects and the WebGL context
 */
import * as THREE from './three/three.module.js';
import { OrbitControls } from './three/OrbitControls.js';
import { buildArm, loadArm, setBodyPoses } from './physai-arm3d-arm.js';
import { magnifyPoses } from './physai-arm3d-poses.js';

export { CREASE_ANGLE, FORMAT, GHOST, buildArm, decodeArm, loadArm, setBodyPoses } from './physai-arm3d-arm.js';
export { magnifyPoses } from './physai-arm3d-poses.js';

export const UNAVAILABLE = '3D view unavailable: ';
/** How much of the view's width or height (whichever binds) the framed box's outline takes. */
export const FRAMING = 0.92;
/** How many of a clip's frames (spread evenly) the camera's framing takes the arm's box over. */
export const FRAMING_SAMPLES = 24;
/** ms: while a clip plays, the scrubber and the time shown move at most this often (the picture at every frame). */
export const BAR_MS = 250;

/**
 * Why this browser cannot show the view, or null if it can: three.js draws with WebGL 2.
 * @returns {string|null}
 */
export function webglUnavailable() {
    return probeWebGL().reason;
}

/**
 * Whether this browser has WebGL 2 and whether it draws on the CPU (SwiftShader, llvmpipe: a browser without a
 * GPU, or headless). A software renderer pays for every pixel on the CPU, so the view then draws without
 * multisampling (4 samples a pixel), which costs it most of its frame time there.
 * @returns {{reason: string|null, software: boolean, renderer: string}}
 */
export function probeWebGL() {
    if (typeof document === 'undefined') return { reason: `${UNAVAILABLE}no document to draw in`, software: false, renderer: '' };
    try {
        const canvas = document.createElement('canvas');
        const gl = canvas.getContext('webgl2');
        if (!gl) return { reason: `${UNAVAILABLE}this browser has no WebGL 2`, software: false, renderer: '' };
        const info = gl.getExtension('WEBGL_debug_renderer_info');
        const renderer = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
        gl.getExtension('WEBGL_lose_context')?.loseContext();
        return { reason: null, software: /swiftshader|llvmpipe|software/i.test(renderer), renderer };
    } catch (error) {
        return { reason: `${UNAVAILABLE}this browser has no WebGL 2 (${error.message})`, software: false, renderer: '' };
    }
}

const STYLE = `
.physai-arm3d { position: relative; margin: 0.5em 0; color: inherit; font-size: 0.85em; }
.physai-arm3d-stage { position: relative; width: 100%; touch-action: none; }
.physai-arm3d-stage canvas { display: block; width: 100%; border-radius: 6px; outline: none; }
.physai-arm3d-tag { position: absolute; top: 0.4em; padding: 0.1em 0.45em; border-radius: 4px; pointer-events: none;
  background: color-mix(in srgb, currentColor 10%, transparent); }
.physai-arm3d-label { left: 0.4em; }
.physai-arm3d-magnified { right: 0.4em; font-weight: 600; }
.physai-arm3d-bar { display: flex; align-items: center; gap: 0.5em; margin-top: 0.3em; }
.physai-arm3d-bar button { font: inherit; color: inherit; background: transparent; border: 1px solid currentColor;
  border-radius: 4px; padding: 0.1em 0.6em; cursor: pointer; opacity: 0.85; }
.physai-arm3d-bar input[type=range] { flex: 1; min-width: 4em; }
.physai-arm3d-time { font-variant-numeric: tabular-nums; min-width: 4.5em; text-align: right; }
.physai-arm3d-unavailable { margin: 0.5em 0; font-style: italic; }
`;

function injectStyle() {
    if (document.getElementById('physai-arm3d-style')) return;
    const style = document.createElement('style');
    style.id = 'physai-arm3d-style';
    style.textContent = STYLE;
    document.head.append(style);
}

function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
}

function checkLength(name, array, length) {
    if (!array || array.length !== length) {
        throw new Error(`${name} must hold ${length} numbers, got ${array ? array.length : array}`);
    }
}

/** One 3D view of the arm in a container (a solid arm and, if asked, a ghost arm). */
export class Arm3D {
    /**
     * Make a view in `container` (its content is replaced). Resolves to a view; without WebGL 2 (or if the
     * context cannot be made) the view has `available` false and `reason` set, shows the reason in the
     * container, and its methods do nothing.
     * @param {HTMLElement} container
     * @param {object} options
     * @param {string|URL} options.assetsUrl the arm's description, `_static/arm3d/so101.json`
     * @param {object} [options.arm] the arm already decoded (decodeArm), instead of assetsUrl (a Jupyter widget's,
     *     sent by its kernel)
     * @param {boolean} [options.ghost=false] also draw a translucent ghost arm (setPose(..., {ghost: true}))
     * @param {string} [options.label] a short label drawn on the view (e.g. "PD in the step")
     * @param {number|(() => number|undefined)} [options.height] CSS px (or a function giving it, asked at every
     *     resize; undefined for the default); by default 0.62 x the width, within [200, 520]
     * @param {{azimuth?: number, elevation?: number}} [options.camera] degrees; the view looks at the arm's box
     * @param {(t: number, frame: number) => void} [options.onTime] see the onTime property
     * @param {boolean} [options.antialias] multisampling; by default on, except on a software renderer (probeWebGL)
     * @param {number} [options.maxFps] the most frames a second playback draws; by default 30 on a software renderer
     *     (each frame costs it tens of ms of CPU, which a live panel's MuJoCo run needs), else the screen's rate
     * @param {number} [options.pixelRatio] drawing-buffer pixels per CSS px; by default the screen's, at most 2, and
     *     1 on a software renderer (its time per frame falls with it: benchmarks/bench_arm3d.py)
     */
    static async create(container, options = {}) {
        const view = new Arm3D(container, options);
        const probe = probeWebGL();
        if (probe.reason) return view._unavailable(probe.reason);
        view.webgl = probe;
        const arm = options.arm ?? await loadArm(options.assetsUrl);
        try {
            view._start(arm);
        } catch (error) {
            return view._unavailable(`${UNAVAILABLE}${error.message}`);
        }
        return view;
    }

    constructor(container, options) {
        this.container = container;
        this.options = options;
        this.available = false;
        this.reason = null;
        /** Called with (t, frame) when the view's own playback or scrubber moves the clip's time. */
        this.onTime = options.onTime || null;
        /** Frames drawn so far, and the last draw's duration in ms (for measurements). */
        this.frames = 0;
        this.renderMs = 0;
        this.magnification = 1;
        this._reference = null;
        this._clip = null;
        this._playing = false;
        this._pending = 0;
        this._poses = { solid: null, ghost: null };
    }

    _unavailable(reason) {
        this.reason = reason;
        injectStyle();
        this.container.replaceChildren(element('p', 'physai-arm3d-unavailable', reason));
        return this;
    }

    _start(arm) {
        injectStyle();
        const { description } = arm;
        this.description = description;
        this.nbody = description.nbody;
        this.parents = description.bodies.map((b) => b.parent);

        const antialias = this.options.antialias ?? !this.webgl.software;
        const renderer = new THREE.WebGLRenderer({ antialias, alpha: true });
        // A software renderer pays for every pixel: one per CSS px there (benchmarks/bench_arm3d.py); else the screen's.
        renderer.setPixelRatio(this.options.pixelRatio ?? (this.webgl.software ? 1 : Math.min(window.devicePixelRatio || 1, 2)));
        renderer.outputColorSpace = THREE.SRGBColorSpace;
        renderer.toneMapping = THREE.NeutralToneMapping;  // lit faces keep their hue instead of clipping to white
        this.renderer = renderer;
        const canvas = renderer.domElement;
        canvas.setAttribute('role', 'img');
        canvas.setAttribute('aria-label', 'The SO-101 arm in 3D: drag to turn, scroll or pinch to zoom');
        canvas.addEventListener('webglcontextlost', (event) => {
            if (this._disposed) return;
            event.preventDefault();
            this._stopPlaying();
            this._unavailable(`${UNAVAILABLE}the browser took its WebGL context back`);
        });

        const scene = new THREE.Scene();
        this.scene = scene;
        const sky = new THREE.HemisphereLight(0xffffff, 0x303030, 1.2);
        sky.position.set(0, 0, 1);  // MuJoCo's z is up
        scene.add(sky);
        const grid = new THREE.GridHelper(0.4, 8, 0x888888, 0x888888);  // 5 cm squares
        grid.rotation.x = Math.PI / 2;  // three's grid lies in x-z; MuJoCo's floor is x-y
        grid.material.transparent = true;
        grid.material.opacity = 0.35;
        grid.material.depthWrite = false;
        scene.add(grid);
        this._grid = grid;

        this.solid = buildArm(arm);
        scene.add(this.solid.root);
        if (this.options.ghost) {
            this.ghost = buildArm(arm, { ghost: true });
            this.ghost.root.visible = false;
            scene.add(this.ghost.root);
        }
        const home = description.home;
        this._apply('solid', Float64Array.from(home.xpos), Float64Array.from(home.xquat));

        const camera = new THREE.PerspectiveCamera(30, 1, 0.01, 20);
        camera.up.set(0, 0, 1);
        this.camera = camera;
        // A headlight, as MuJoCo's viewer has: it turns with the camera, so every side the reader turns to is lit.
        const headlight = new THREE.DirectionalLight(0xffffff, 2.0);
        headlight.position.set(-0.5, 1, 1);  // above and left of the eye, in the camera's frame
        headlight.target.position.set(0, 0, -1);
        camera.add(headlight, headlight.target);
        scene.add(camera);

        const root = element('div', 'physai-arm3d');
        const stage = element('div', 'physai-arm3d-stage');
        stage.append(canvas);
        this._label = element('span', 'physai-arm3d-tag physai-arm3d-label', this.options.label || '');
        this._label.hidden = !this.options.label;
        stage.append(this._label);
        this._magnifiedTag = element('span', 'physai-arm3d-tag physai-arm3d-magnified');
        this._magnifiedTag.hidden = true;
        stage.append(this._magnifiedTag);
        const bar = element('div', 'physai-arm3d-bar');
        this._playButton = element('button', '', 'Play');
        this._playButton.type = 'button';
        this._playButton.addEventListener('click', () => (this._playing ? this.pause() : this.play()));
        this._scrubber = element('input');
        Object.assign(this._scrubber, { type: 'range', min: '0', max: '1', step: 'any', value: '0' });
        this._scrubber.setAttribute('aria-label', 'time');
        this._scrubber.addEventListener('input', () => {
            this.pause();
            this._moveTo(Number(this._scrubber.value), true);
        });
        this._timeText = element('span', 'physai-arm3d-time');
        const reset = element('button', '', 'Reset view');
        reset.type = 'button';
        reset.addEventListener('click', () => this.resetView());
        this._clipControls = [this._playButton, this._scrubber, this._timeText];
        this._clipControls.forEach((c) => { c.hidden = true; });
        bar.append(this._playButton, this._scrubber, this._timeText, reset);
        root.append(stage, bar);
        this.container.replaceChildren(root);
        this.element = root;

        const controls = new OrbitControls(camera, canvas);
        controls.enableDamping = false;
        controls.addEventListener('change', () => this.requestRender());
        controls.addEventListener('start', () => { this._turned = true; });   // the reader's own view: kept
        this.controls = controls;

        this._resize = () => {
            const width = Math.max(1, stage.clientWidth);
            const asked = typeof this.options.height === 'function' ? this.options.height() : this.options.height;
            const height = asked || Math.round(Math.min(520, Math.max(200, 0.62 * width)));
            // setSize clears the picture even at the same size (and a resize observer runs after the frame's draw)
            if (this._size && this._size[0] === width && this._size[1] === height) return;
            this._size = [width, height];
            renderer.setSize(width, height, false);
            canvas.style.height = `${height}px`;
            camera.aspect = width / height;
            camera.updateProjectionMatrix();
            if (this._framedBox && !this._turned) this._frameCamera(this._framedBox);   // the new shape, framed again
            this.requestRender();
        };
        this._observer = new ResizeObserver(this._resize);
        this._observer.observe(stage);
        this._resize();
        this._frameCamera();
        this.available = true;
        this.renderNow();
    }

    // Aim the camera at `box` (default: the arm as it is posed) from the options' azimuth and elevation, near enough
    // that the box, seen in perspective, fills FRAMING of the view's width or height and no more; "Reset view" comes
    // back here. A box is larger than the arm in it, so the arm is inside the view whatever its pose in the box.
    _frameCamera(box = new THREE.Box3().setFromObject(this.solid.root)) {
        this._framedBox = box.clone();
        const camera = this.camera, target = box.getCenter(new THREE.Vector3());
        const { azimuth = 150, elevation = 20 } = this.options.camera || {};
        const az = THREE.MathUtils.degToRad(azimuth), el = THREE.MathUtils.degToRad(elevation);
        const back = new THREE.Vector3(Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el));
        const tan = Math.tan(THREE.MathUtils.degToRad(camera.fov) / 2);
        let distance = box.getBoundingSphere(new THREE.Sphere()).radius / Math.sin(Math.atan(tan * Math.min(1, camera.aspect)));
        const corners = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => new THREE.Vector3(
            i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y, i & 4 ? box.max.z : box.min.z));
        const point = new THREE.Vector3(), right = new THREE.Vector3(), up = new THREE.Vector3();
        for (let pass = 0; pass < 4; pass++) {   // the sphere's distance first (the box inside), then the box's outline
            camera.position.copy(target).addScaledVector(back, distance);
            camera.lookAt(target);
            camera.updateMatrixWorld();
            let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
            for (const corner of corners) {
                point.copy(corner).project(camera);
                x0 = Math.min(x0, point.x); x1 = Math.max(x1, point.x); y0 = Math.min(y0, point.y); y1 = Math.max(y1, point.y);
            }
            // centre the outline (a shift in the camera's plane), then scale the distance to its larger half-extent
            right.setFromMatrixColumn(camera.matrixWorld, 0);
            up.setFromMatrixColumn(camera.matrixWorld, 1);
            target.addScaledVector(right, ((x0 + x1) / 2) * distance * tan * camera.aspect)
                .addScaledVector(up, ((y0 + y1) / 2) * distance * tan);
            distance *= Math.max((x1 - x0) / 2, (y1 - y0) / 2) / FRAMING;
        }
        camera.position.copy(target).addScaledVector(back, distance);
        this.controls.target.copy(target);
        this.controls.update();
        this.controls.saveState();
    }

    /** The label drawn on the view (empty: none). */
    setLabel(text) {
        if (!this.available) return;
        this._label.textContent = text || '';
        this._label.hidden = !text;
    }

    /** The clip's rate: clip seconds per wall-clock second (> 0). */
    setRate(rate) {
        if (!(rate > 0 && Number.isFinite(rate))) throw new Error(`rate must be a number > 0, got ${rate}`);
        if (this._clip) this._clip.rate = rate;
    }

    /** Back to the view the camera started with. */
    resetView() {
        if (!this.available) return;
        this._turned = false;
        if (this._framedBox) this._frameCamera(this._framedBox);   // framed for the view's shape now
        else this.controls.reset();
        this.requestRender();
    }

    _apply(which, xpos, xquat) {
        this._poses[which] = { xpos, xquat };
        const arm = which === 'ghost' ? this.ghost : this.solid;
        if (!arm) return;
        let pos = xpos, quat = xquat;
        if (this.magnification !== 1 && this._reference) {
            ({ xpos: pos, xquat: quat } = magnifyPoses(this.parents, xpos, xquat, this._reference, this.magnification));
        }
        setBodyPoses(arm.bodies, pos, quat);
        if (which === 'ghost') arm.root.visible = true;
    }

    /**
     * Pose the arm (or its ghost): MuJoCo's `xpos` (nbody*3, m) and `xquat` (nbody*4, w, x, y, z) of the same
     * model (MjData's fields, or one frame of body_poses). The numbers are copied; the picture is redrawn at the next
     * animation frame.
     */
    setPose(xpos, xquat, { ghost = false } = {}) {
        if (!this.available) return;
        checkLength('xpos', xpos, this.nbody * 3);
        checkLength('xquat', xquat, this.nbody * 4);
        if (ghost && !this.ghost) throw new Error('setPose(..., {ghost: true}) needs a view created with ghost: true');
        this._apply(ghost ? 'ghost' : 'solid', Float64Array.from(xpos), Float64Array.from(xquat));
        this.requestRender();
    }

    /**
     * Magnify motion about a reference pose by `factor` (1 turns it off); the view says "motion x<factor>".
     * @param {number} factor > 0
     * @param {{xpos, xquat}} [reference] default: the clip's first frame if there is a clip, else the current pose
     */
    setMagnification(factor, reference) {
        if (!this.available) return;
        if (!(factor > 0 && Number.isFinite(factor))) throw new Error(`factor must be a number > 0, got ${factor}`);
        if (reference) {
            checkLength('reference.xpos', reference.xpos, this.nbody * 3);
            checkLength('reference.xquat', reference.xquat, this.nbody * 4);
            this._reference = { xpos: Float64Array.from(reference.xpos), xquat: Float64Array.from(reference.xquat) };
        } else if (this._clip) {
            this._reference = { xpos: this._clip.xpos.slice(0, this.nbody * 3),
                                xquat: this._clip.xquat.slice(0, this.nbody * 4) };
        } else {
            this._reference = { xpos: this._poses.solid.xpos.slice(), xquat: this._poses.solid.xquat.slice() };
        }
        this.magnification = factor;
        this._magnifiedTag.hidden = factor === 1;
        this._magnifiedTag.textContent = `motion \u00d7${Number(factor.toPrecision(3))}`;
        for (const which of ['solid', 'ghost']) {
            const pose = this._poses[which];
            if (pose) this._apply(which, pose.xpos, pose.xquat);
        }
        this.requestRender();
    }

    /**
     * A clip of frames to play and scrub: `time` (n, s, nondecreasing), `xpos` (n*nbody*3), `xquat` (n*nbody*4)
     * frame after frame, and optionally `ghost: {xpos, xquat}` of the same frames. Shows the first frame.
     * @param {{time: ArrayLike<number>, xpos: ArrayLike<number>, xquat: ArrayLike<number>, ghost?: object}} clip
     * @param {{rate?: number, loop?: boolean}} [options] rate: clip seconds per wall-clock second (default 1)
     */
    setClip(clip, { rate = 1, loop = true } = {}) {
        if (!this.available) return;
        const n = clip.time.length;
        if (!(n > 0)) throw new Error('clip.time must hold at least one time');
        checkLength('clip.xpos', clip.xpos, n * this.nbody * 3);
        checkLength('clip.xquat', clip.xquat, n * this.nbody * 4);
        if (clip.ghost) {
            if (!this.ghost) throw new Error('a clip with a ghost needs a view created with ghost: true');
            checkLength('clip.ghost.xpos', clip.ghost.xpos, n * this.nbody * 3);
            checkLength('clip.ghost.xquat', clip.ghost.xquat, n * this.nbody * 4);
        }
        const time = Float64Array.from(clip.time);
        for (let i = 1; i < n; i++) {
            if (!(time[i] >= time[i - 1])) throw new Error(`clip.time must be nondecreasing, got ${time[i - 1]} then ${time[i]}`);
        }
        this.pause();
        this._clip = {
            time, xpos: Float64Array.from(clip.xpos), xquat: Float64Array.from(clip.xquat),
            ghost: clip.ghost && { xpos: Float64Array.from(clip.ghost.xpos), xquat: Float64Array.from(clip.ghost.xquat) },
            rate, loop, frame: -1, t: time[0],
        };
        this._scrubber.min = String(time[0]);
        this._scrubber.max = String(time[n - 1]);
        this._clipControls.forEach((c) => { c.hidden = false; });
        if (!this._turned && !this._framedOnClip) {   // once: a later clip (a rerun, a magnification) keeps the camera
            this._frameCamera(this._clipBox());
            this._framedOnClip = true;
        }
        this._moveTo(time[0], false);
    }

    // The box that holds the arm (and its ghost) over the clip, as drawn (magnified if it is), from FRAMING_SAMPLES
    // of its frames; the arms are left posed as the clip's last sample (the caller moves them to a frame).
    _clipBox() {
        const clip = this._clip, n = clip.time.length, n3 = this.nbody * 3, n4 = this.nbody * 4;
        const box = new THREE.Box3(), part = new THREE.Box3();
        const count = Math.min(n, FRAMING_SAMPLES);
        for (let k = 0; k < count; k++) {
            const i = count === 1 ? 0 : Math.round((k * (n - 1)) / (count - 1));
            for (const [which, source] of [['solid', clip], ['ghost', clip.ghost]]) {
                if (!source) continue;
                this._apply(which, source.xpos.subarray(i * n3, i * n3 + n3), source.xquat.subarray(i * n4, i * n4 + n4));
                const arm = which === 'ghost' ? this.ghost : this.solid;
                arm.root.updateMatrixWorld(true);
                box.union(part.setFromObject(arm.root));
            }
        }
        clip.frame = -1;   // the arms are not at the clip's frame any more
        return box;
    }

    /** The clip's time, s (NaN without a clip). */
    get time() { return this._clip ? this._clip.t : NaN; }

    /** Show the clip at time `t` (s), as a panel's cursor moves; does not call onTime. */
    seek(t) {
        if (!this.available || !this._clip) return;
        this._moveTo(t, false);
    }

    _moveTo(t, fromView, playing = false) {
        const clip = this._clip;
        const { time } = clip;
        t = Math.min(Math.max(t, time[0]), time[time.length - 1]);
        clip.t = t;
        let lo = 0, hi = time.length - 1;  // the last frame at or before t
        while (lo < hi) {
            const mid = (lo + hi + 1) >> 1;
            if (time[mid] <= t) lo = mid; else hi = mid - 1;
        }
        const moved = lo !== clip.frame;
        if (moved) {
            clip.frame = lo;
            const n3 = this.nbody * 3, n4 = this.nbody * 4;
            this._apply('solid', clip.xpos.subarray(lo * n3, lo * n3 + n3), clip.xquat.subarray(lo * n4, lo * n4 + n4));
            if (clip.ghost) {
                this._apply('ghost', clip.ghost.xpos.subarray(lo * n3, lo * n3 + n3),
                            clip.ghost.xquat.subarray(lo * n4, lo * n4 + n4));
            }
            this.requestRender();
        }
        // While playing, the scrubber and the time follow at most every BAR_MS: repainting them every frame costs a
        // software renderer about a quarter of its frame (benchmarks/bench_arm3d.py); the picture moves every frame.
        const now = performance.now();
        if (!playing || !(now - this._barAt < BAR_MS)) {
            this._barAt = now;
            this._showTime(t);
        }
        // the panel's cursor moves with the picture: while playing, only when the pose does (a clip of 30 frames a
        // second leaves some animation frames without a new pose)
        if (fromView && this.onTime && (moved || !playing)) this.onTime(t, lo);
        return moved;
    }

    /** Play the clip from its current time, at its rate, looping if asked. */
    play() {
        if (!this.available || !this._clip || this._playing) return;
        const clip = this._clip;
        const { time } = clip;
        if (!clip.loop && clip.t >= time[time.length - 1]) this._moveTo(time[0], true);
        this._playing = true;
        this._playButton.textContent = 'Pause';
        let last = performance.now();
        // At most maxFps frames drawn a second, on average: after a frame with a new pose the next is due `period` ms
        // later, or sooner if this one came late (the browser skipped an animation frame), so the rate holds. An
        // animation frame with no new pose yet (a clip of 30 frames a second) draws nothing and waits for none.
        const period = 1000 / (this.options.maxFps ?? (this.webgl.software ? 30 : Infinity));
        let due = -Infinity;
        const tick = (now) => {
            if (!this._playing) return;
            if (now < due - 2) { this._raf = requestAnimationFrame(tick); return; }   // 2 ms: animation frames jitter
            const end = time[time.length - 1], span = end - time[0];
            let t = clip.t + ((now - last) / 1000) * clip.rate;
            last = now;
            if (t > end) {
                if (clip.loop && span > 0) t = time[0] + ((t - time[0]) % span);
                else { t = end; this._stopPlaying(); }
            }
            if (this._moveTo(t, true, this._playing)) due = Math.max(due, now - period) + period;
            if (this._playing) this._raf = requestAnimationFrame(tick);
        };
        this._raf = requestAnimationFrame(tick);
    }

    /** Drop a redraw that is asked for and not yet drawn (a panel about to compute wants the processor). */
    cancelRender() {
        if (this._pending) cancelAnimationFrame(this._pending);
        this._pending = 0;
    }

    /** Stop playing (the clip stays where it is). */
    pause() {
        if (this._playing) this._stopPlaying();
    }

    get playing() { return this._playing; }

    _stopPlaying() {
        this._playing = false;
        cancelAnimationFrame(this._raf);
        if (this._playButton) this._playButton.textContent = 'Play';
        if (this._clip && this._scrubber) {   // the bar and the panel's cursor show where the clip stopped
            this._showTime(this._clip.t);
            if (!this._disposed && this.onTime) this.onTime(this._clip.t, this._clip.frame);
        }
    }

    // the bar's scrubber and time at `t`, s
    _showTime(t) {
        this._scrubber.value = String(t);
        this._timeText.textContent = `${t.toFixed(2)} s`;
    }

    /** Redraw at the next animation frame (once, however often it is asked before then). */
    requestRender() {
        if (!this.available && !this.renderer) return;
        if (this._pending) return;
        this._pending = requestAnimationFrame(() => {
            this._pending = 0;
            this.renderNow();
        });
    }

    /** Draw now. */
    renderNow() {
        if (!this.renderer) return;
        const start = performance.now();
        this.renderer.render(this.scene, this.camera);
        this.renderMs = performance.now() - start;
        this.frames += 1;
    }

    /** The picture as a PNG data URL (drawn now, so it is the current pose). */
    snapshot() {
        if (!this.available) return null;
        this.renderNow();
        return this.renderer.domElement.toDataURL('image/png');
    }

    /** Free the GPU objects and the WebGL context, and empty the container. Safe to call twice. */
    dispose() {
        this._disposed = true;
        this._stopPlaying();
        if (this._pending) cancelAnimationFrame(this._pending);
        this._pending = 0;
        this._observer?.disconnect();
        this.controls?.dispose();
        this.solid?.dispose();
        this.ghost?.dispose();
        this._grid?.geometry.dispose();
        this._grid?.material.dispose();
        if (this.renderer) {
            this.renderer.dispose();
            this.renderer.forceContextLoss();
            this.renderer = null;
        }
        this.available = false;
        this.container.replaceChildren();
    }
}
