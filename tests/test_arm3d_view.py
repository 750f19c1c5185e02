"""book/_static/physai-arm3d.js, the SO-101's 3D view: its three.js objects are posed exactly as MuJoCo poses the arm
(in Node), and on a scratch page in headless Chromium it draws, changes with the pose, plays a clip, magnifies,
says why when there is no WebGL, and frees itself.

The scratch site is laid out as the book's: ``_static/physai-arm3d*.js``, three.js in ``_static/three/`` and the
arm in ``_static/arm3d/``, put there by ``book/_ext/physai_arm3d.py`` exactly as the site build does. Headless
Chromium here (Debian's, with the flags of ``tests/browser.py``) draws WebGL 2 with SwiftShader, on the CPU.
Screenshots (desktop, phone, dark page) go to ``_build/screenshots/arm3d-*.png``.
"""

import base64
import importlib.util
import io
import json
import pathlib
import shutil

import mujoco
import numpy as np
import pytest

from physai.engine import bodies, so101
from physai.interface import arm_frames
from browser import node, screenshot, serve

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / '_build' / 'screenshots'
PAGE = """<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>arm3d</title><style>body{font-family:sans-serif;margin:0;padding:1em} body.dark{background:#14181e;color:#ced6dd}
</style></head><body><main style="max-width:%dpx;margin:auto"><h3>The SO-101, posed by MuJoCo</h3>
<div id="view"></div><p id="status">loading</p></main>
<script type="module">
const module = await import('./_static/physai-arm3d.js');
window.arm3d = module;
const view = await module.Arm3D.create(document.getElementById('view'),
    { assetsUrl: '_static/arm3d/so101.json', ghost: true, label: 'MuJoCo run' });
window.view = view;
document.getElementById('status').textContent = view.available ? 'ready' : view.reason;
</script></body></html>"""


def load_extension():
    spec = importlib.util.spec_from_file_location('physai_arm3d', ROOT / 'book' / '_ext' / 'physai_arm3d.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VIEW_MODULES = sorted((ROOT / 'book' / '_static').glob('physai-arm3d*.js'))
"""The view's modules: physai-arm3d.js (the view, which re-exports the others), -arm.js (the arm as three.js objects)
and -poses.js (poses magnified)."""


def copy_view(static: pathlib.Path) -> None:
    """Copy the view's modules into a scratch site's ``_static``, where the book puts them."""
    for path in VIEW_MODULES:
        shutil.copyfile(path, static / path.name)


def scratch_site(directory: pathlib.Path) -> pathlib.Path:
    """The view's module, three.js and the arm where the book serves them, and a page with one view."""
    if not (ROOT / 'node_modules' / 'three').is_dir() or not (ROOT / 'node_modules' / 'meshoptimizer').is_dir():
        pytest.skip('node_modules is missing three or meshoptimizer: run npm ci')
    static = directory / '_static'
    static.mkdir(parents=True)
    copy_view(static)
    load_extension().install(static)
    from physai.interface.plots import COLUMN_PX
    (directory / 'index.html').write_text(PAGE % COLUMN_PX, encoding='utf-8')
    return directory


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    return scratch_site(tmp_path_factory.mktemp('arm3d-site'))


@pytest.fixture(scope='module')
def model():
    return so101.load_so101()


@pytest.fixture(scope='module')
def frames(model):
    """30 frames per second of a 1 s MuJoCo run: the arm's servos driving it from its home pose to a target."""
    data = mujoco.MjData(model)
    data.ctrl[:] = [0.5, -0.7, 0.6, 0.4, -0.9, 0.3]
    time, qpos = [], []
    while data.time < 1.0:
        time.append(data.time)
        qpos.append(data.qpos.copy())
        mujoco.mj_step(model, data)
    return np.array(qpos)[bodies.sample_frames(time, 30)]


NODE_POSES = """
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const arm3d = await import(pathToFileURL(input.static + '/physai-arm3d.js').href);
const description = JSON.parse(fs.readFileSync(input.static + '/arm3d/so101.json', 'utf8'));
const bin = fs.readFileSync(input.static + '/arm3d/so101.bin');
const arm = arm3d.decodeArm(description, bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
const built = arm3d.buildArm(arm, { ghost: Boolean(input.ghost) });
const parents = description.bodies.map((b) => b.parent);
const out = [];
for (const frame of input.frames) {
    let { xpos, xquat } = frame;
    if (input.factor) ({ xpos, xquat } = arm3d.magnifyPoses(parents, xpos, xquat, input.reference, input.factor));
    arm3d.setBodyPoses(built.bodies, xpos, xquat);
    built.root.updateMatrixWorld(true);
    out.push(built.geoms.map((mesh) => Array.from(mesh.matrixWorld.elements)));  // a copy: three reuses it
}
console.log(JSON.stringify({ geoms: built.geoms.map((mesh) => Number(mesh.name.split(' ')[1])), world: out }));
"""


def three_geom_poses(site, xpos, xquat, **magnified):
    """Each visible geom's world matrix as three.js composes it (body group, then mesh), for each frame."""
    frames = [{'xpos': p.ravel().tolist(), 'xquat': q.ravel().tolist()} for p, q in zip(xpos, xquat)]
    answer = node(NODE_POSES, {'static': str(site / '_static'), 'frames': frames, **magnified})
    world = np.array(answer['world']).reshape(len(frames), len(answer['geoms']), 4, 4).transpose(0, 1, 3, 2)
    return answer['geoms'], world  # elements are column-major


def mujoco_geom_poses(model, qpos, geoms):
    data = mujoco.MjData(model)
    pos, mat = [], []
    for frame in qpos:
        data.qpos[:] = frame
        mujoco.mj_kinematics(model, data)
        pos.append(data.geom_xpos[geoms].copy())
        mat.append(data.geom_xmat[geoms].reshape(-1, 3, 3).copy())
    return np.array(pos), np.array(mat)


def test_three_js_places_every_geom_where_mujoco_does_for_sampled_frames_of_a_run(site, model, frames):
    """The view is handed only xpos/xquat; each mesh's world matrix then equals MuJoCo's geom_xpos/geom_xmat."""
    xpos, xquat = bodies.body_poses(model, frames)
    geoms, world = three_geom_poses(site, xpos, xquat)
    assert geoms == [g.geom for g in bodies.visual_geoms(model)]
    pos, mat = mujoco_geom_poses(model, frames, geoms)
    np.testing.assert_allclose(world[..., :3, 3], pos, rtol=0, atol=1e-15)
    np.testing.assert_allclose(world[..., :3, :3], mat, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(world[..., 3, :], np.broadcast_to([0, 0, 0, 1], world[..., 3, :].shape))
    assert np.ptp(pos[:, :, 2]) > 0.01  # the run moves the arm by centimetres: the frames differ


def test_the_ghost_arm_places_its_geoms_where_mujoco_does_and_leaves_out_only_the_fixed_base(site, model, frames):
    """The translucent ghost draws coarser meshes on the same frames; the base, fixed to the world, is the solid arm's."""
    xpos, xquat = bodies.body_poses(model, frames)
    geoms, world = three_geom_poses(site, xpos, xquat, ghost=True)
    moving = [g.geom for g in bodies.visual_geoms(model) if model.body_weldid[g.body] != 0]
    assert geoms == moving and len(moving) == len(bodies.visual_geoms(model)) - 4   # the base's four geoms
    pos, mat = mujoco_geom_poses(model, frames, geoms)
    np.testing.assert_allclose(world[..., :3, 3], pos, rtol=0, atol=1e-15)
    np.testing.assert_allclose(world[..., :3, :3], mat, rtol=0, atol=1e-14)


def test_magnified_view_is_mujoco_s_pose_at_the_magnified_joint_positions(site, model, frames):
    """Magnifying each body's motion relative to its parent, in the view, equals MuJoCo's pose at
    qpos_ref + 20 (qpos - qpos_ref): the SO-101's hinges sit at their bodies' origins."""
    assert np.all(model.jnt_pos == 0) and np.all(model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
    reference = frames[-1]
    small = reference + 0.02 * (frames[-6:] - reference)  # the last fifth of a second, scaled down to hold-like motion
    xpos, xquat = bodies.body_poses(model, small)
    ref_xpos, ref_xquat = bodies.body_poses(model, reference)
    geoms, world = three_geom_poses(site, xpos, xquat, factor=20,
                                    reference={'xpos': ref_xpos[0].ravel().tolist(),
                                               'xquat': ref_xquat[0].ravel().tolist()})
    pos, mat = mujoco_geom_poses(model, bodies.magnify(model, small, reference, 20), geoms)
    np.testing.assert_allclose(world[..., :3, 3], pos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(world[..., :3, :3], mat, rtol=0, atol=1e-12)


# --- in headless Chromium ---------------------------------------------------------------------------------------

def open_view(chromium, url, *, viewport=(1280, 800), dark=False, init=None):
    page = chromium.new_page(viewport={'width': viewport[0], 'height': viewport[1]})
    errors = []
    page.on('pageerror', lambda e: errors.append(str(e)))
    if init:
        page.add_init_script(init)
    page.goto(url + '/index.html')
    if dark:
        page.evaluate("document.body.classList.add('dark')")
    page.wait_for_function("document.getElementById('status').textContent !== 'loading'", timeout=120000)
    return page, errors


def pixels(data_url):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data_url.split(',', 1)[1]))).convert('RGBA'))


def pose_args(xpos, xquat, i):
    return {'xpos': xpos[i].ravel().tolist(), 'xquat': xquat[i].ravel().tolist()}


@pytest.fixture(scope='module')
def served(site):
    with serve(site) as url:
        yield url


def test_the_view_draws_the_arm_and_the_picture_follows_the_pose(browser, served, model, frames):
    page, errors = open_view(browser, served)
    assert page.inner_text('#status') == 'ready'
    first = pixels(page.evaluate('view.snapshot()'))
    drawn = first[..., 3] > 0
    assert 0.02 < drawn.mean() < 0.9  # the arm (and its floor grid) cover part of the picture, not none or all of it
    xpos, xquat = bodies.body_poses(model, frames)
    page.evaluate('p => view.setPose(p.xpos, p.xquat)', pose_args(xpos, xquat, len(frames) - 1))
    moved = pixels(page.evaluate('view.snapshot()'))
    assert (np.abs(moved.astype(int) - first.astype(int)).max(axis=2) > 32).mean() > 0.005
    page.evaluate('p => view.setPose(p.xpos, p.xquat, {ghost: true})', pose_args(xpos, xquat, 0))
    ghosted = pixels(page.evaluate('view.snapshot()'))
    assert (np.abs(ghosted.astype(int) - moved.astype(int)).max(axis=2) > 16).mean() > 0.002
    with pytest.raises(Exception, match='xpos must hold 27 numbers, got 3'):
        page.evaluate('view.setPose([0, 0, 0], new Float64Array(36))')
    assert errors == []
    page.close()


@pytest.mark.slow
def test_magnification_is_stated_on_the_view_and_moves_the_picture(browser, served, model, frames):
    page, errors = open_view(browser, served)
    xpos, xquat = bodies.body_poses(model, frames)
    page.evaluate('p => view.setPose(p.xpos, p.xquat)', pose_args(xpos, xquat, 5))
    plain = pixels(page.evaluate('view.snapshot()'))
    page.evaluate('p => view.setMagnification(20, p)', pose_args(xpos, xquat, 6))  # 1/30 s later in the run
    assert page.inner_text('.physai-arm3d-magnified') == 'motion \u00d720'
    magnified = pixels(page.evaluate('view.snapshot()'))
    assert (np.abs(magnified.astype(int) - plain.astype(int)).max(axis=2) > 32).mean() > 0.002
    page.evaluate('view.setMagnification(1)')
    assert not page.is_visible('.physai-arm3d-magnified')
    assert errors == []
    page.close()


FRAMED_JS = """clip => {
    view.setClip(clip);
    const v = new view.camera.position.constructor();   // a THREE.Vector3
    const lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    for (let i = 0; i < clip.time.length; i += 3) {   // every vertex of the solid and the ghost arm, projected
        view.seek(clip.time[i]);
        for (const arm of [view.solid, view.ghost]) {
            arm.root.updateMatrixWorld(true);
            arm.root.traverse((mesh) => {
                if (!mesh.isMesh) return;
                const position = mesh.geometry.attributes.position;
                for (let k = 0; k < position.count; k++) {
                    v.fromBufferAttribute(position, k).applyMatrix4(mesh.matrixWorld).project(view.camera);
                    lo[0] = Math.min(lo[0], v.x); lo[1] = Math.min(lo[1], v.y);
                    hi[0] = Math.max(hi[0], v.x); hi[1] = Math.max(hi[1], v.y);
                }
            });
        }
    }
    return [lo, hi];   // in the view's normalized coordinates, -1 ... 1 across
}"""


@pytest.mark.slow
def test_a_clip_is_framed_whole_and_large(browser, served, model, frames):
    """The camera aims at the clip: every vertex of every frame's arm and ghost inside the view, the motion's envelope
    taking at least half of its height."""
    page, errors = open_view(browser, served)
    clip = arm_frames.view_clip(np.arange(len(frames)) / 30, frames, fps=30, ghost_qpos=frames[::-1], model=model)
    lo, hi = np.array(page.evaluate(FRAMED_JS, clip))
    assert np.all(lo >= -1) and np.all(hi <= 1), f'part of the arm is outside the view: {lo}, {hi}'
    assert hi[1] - lo[1] >= 1.0   # the view is 2 high in these units: half its height or more
    assert errors == []
    page.close()


@pytest.mark.slow
def test_a_clip_plays_scrubs_and_tells_the_panel_its_time(browser, served, model, frames):
    page, errors = open_view(browser, served)
    clip = arm_frames.view_clip(np.arange(len(frames)) / 30, frames, fps=30, ghost_qpos=frames[::-1], model=model)
    page.evaluate("""clip => { window.told = []; view.onTime = (t, frame) => told.push([t, frame]);
                               view.setClip(clip, {rate: 1, loop: false}); }""", clip)
    assert page.evaluate('view.time') == 0 and page.evaluate('told.length') == 0
    page.click('.physai-arm3d-bar button:has-text("Play")')
    page.wait_for_function('!view.playing', timeout=20000)  # 1 s of clip, played once
    told = page.evaluate('told')
    assert len(told) >= 2 and told[-1] == [clip['time'][-1], len(frames) - 1]  # ticks: as many as the machine draws
    assert all(b[0] >= a[0] for a, b in zip(told, told[1:]))
    page.evaluate('view.seek(0.5)')  # the panel's cursor: shown, not told back
    assert page.evaluate('told.length') == len(told) and page.evaluate('view.time') == 0.5
    assert page.input_value('.physai-arm3d-bar input[type=range]') == '0.5'
    page.eval_on_selector('.physai-arm3d-bar input[type=range]',
                          "s => { s.value = '0.25'; s.dispatchEvent(new Event('input')); }")
    assert page.evaluate('told.at(-1)') == [0.25, 7]  # the reader's scrubber: told
    page.click('.physai-arm3d-bar button:has-text("Reset view")')
    assert errors == []
    page.close()


def test_without_webgl_the_view_says_why_and_raises_nothing(browser, served):
    no_webgl = """{ const original = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (type, ...rest) {
            return /webgl/.test(type) ? null : original.call(this, type, ...rest); }; }"""
    page, errors = open_view(browser, served, init=no_webgl)
    assert page.inner_text('#status') == '3D view unavailable: this browser has no WebGL 2'
    assert page.inner_text('#view') == '3D view unavailable: this browser has no WebGL 2'
    assert page.evaluate('view.available') is False
    page.evaluate('view.setPose([], []); view.play(); view.dispose()')  # nothing to do, nothing thrown
    assert errors == []
    page.close()


@pytest.mark.slow
def test_dispose_frees_the_view_and_its_webgl_context(browser, served):
    page, errors = open_view(browser, served)
    page.evaluate("""() => { window.lost = false;
        view.renderer.domElement.addEventListener('webglcontextlost', () => { window.lost = true; });
        view.dispose(); }""")
    page.wait_for_function('window.lost', timeout=10000)
    assert page.evaluate("document.getElementById('view').children.length") == 0
    assert page.evaluate('view.renderer') is None
    page.evaluate('view.dispose()')
    assert errors == []
    page.close()


@pytest.mark.slow
@pytest.mark.parametrize('name, viewport, dark', [('desktop', (1280, 800), False), ('phone', (390, 844), False),
                                                  ('dark', (1280, 800), True)])
def test_screenshots_of_the_view(browser, served, model, frames, name, viewport, dark):
    page, errors = open_view(browser, served, viewport=viewport, dark=dark)
    xpos, xquat = bodies.body_poses(model, frames)
    page.evaluate('p => view.setPose(p.xpos, p.xquat)', pose_args(xpos, xquat, len(frames) - 1))
    page.evaluate('p => view.setPose(p.xpos, p.xquat, {ghost: true})', pose_args(xpos, xquat, 0))
    page.evaluate('view.setMagnification(3, arm3d && {xpos: view.description.home.xpos, '
                  'xquat: view.description.home.xquat})')
    page.evaluate('view.snapshot()')
    box = page.eval_on_selector('.physai-arm3d', 'e => e.getBoundingClientRect().toJSON()')
    assert box['width'] <= viewport[0] and box['height'] > 150
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    screenshot(page.locator('main'), path=str(SCREENSHOTS / f'arm3d-{name}.png'))   # the view and its caption
    assert errors == []
    page.close()
