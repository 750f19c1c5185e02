"""The SO-101's 3D view in chapters 3 and 4's page panels (book/_static/panels/arm3d_view.js).

In Node: the poses the view draws are the page's one engine's (MuJoCo 3.14.0's ``mj_kinematics`` on the panel's own
model, at the run's joint angles), and they equal Python MuJoCo's ``xpos``/``xquat`` of the full Menagerie SO-101 (the
model the meshes come from) at the same angles, for sampled frames of a real hold. In headless Chromium (slow): each
page's panel opens the view from its button (MuJoCo, three.js and the arm load only then), without a console error;
the picture changes when the pose changes (ch3: a move of the view's time and the placement switch; ch4: a scrub on
the trace); without WebGL the plots stay and the view says why. Screenshots go to ``_build/screenshots/``.
"""

import pathlib

import mujoco
import numpy as np
import pytest

from physai.engine import so101
from physai.interface import web, web_arm
from browser import (engine_url, module, next_frames, node, open_page, scratch_site, screenshot, serve,
                     wait_arm3d_settled, wait_live)
from test_arm3d_view import copy_view, load_extension

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / '_build' / 'screenshots'

POSE_TOL = 1e-12
"""m and unit quaternion: MuJoCo 3.14.0 in Node against Python MuJoCo 3.17.0, the same joint angles through the same
kinematic chain (arm_xml writes every frame as compiled, to the last bit); the sums may differ in the last bits."""

POSES_SCRIPT = """
import fs from 'fs';
import {{Model, load}} from '{engine}';
import {{holdRun, runToEnd}} from '{runs}';
import {{bodyPoses}} from '{view}';
const {{xml, rule, hold, params, frames}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const mujoco = await load('{url}');
const model = new Model(mujoco, xml, rule);
const run = runToEnd(holdRun(model, params, hold));
const nq = model.model.nq;
const poses = bodyPoses(model, frames.length, (i) => run.q.subarray(frames[i] * nq, frames[i] * nq + nq));
const qpos = frames.map((k) => Array.from(run.q.subarray(k * nq, k * nq + nq)));
console.log(JSON.stringify({{qpos, xpos: Array.from(poses.xpos), xquat: Array.from(poses.xquat), nbody: poses.nbody}}));
"""


def test_view_poses_are_the_engine_s_xpos_and_xquat_of_the_full_arm_at_the_run_s_angles():
    from physai.interface.where_pd_runs_panels import pd_spec  # noqa: F401  (the panel's module imports cleanly)
    from test_web_arm import pd_constants
    k = pd_constants()
    params = dict(backend='in-loop', kp=998.22, kv=2.731, armature=0.028, timestep=0.001,
                  integrator='implicitfast', forcerange=k['hold']['forcerange'], rateHz=50.0)
    frames = [0, 250, 499, 1200, 2999]   # the move, the hold, the last step
    js = node(POSES_SCRIPT.format(engine=module('engine.js'), runs=module('runs.js'), view=module('arm3d_view.js'),
                                  url=engine_url()),
              {'xml': web_arm.arm_xml(), 'rule': web.engine_rule(), 'hold': k['hold'], 'params': params,
               'frames': frames})
    full = so101.load_so101()
    data = mujoco.MjData(full)
    assert js['nbody'] == full.nbody
    xpos = np.reshape(js['xpos'], (len(frames), full.nbody, 3))
    xquat = np.reshape(js['xquat'], (len(frames), full.nbody, 4))
    qpos = np.array(js['qpos'])
    assert np.ptp(qpos, axis=0).max() > 0.5   # the sampled frames span the move, not one pose
    for i in range(len(frames)):
        data.qpos[:] = qpos[i]
        mujoco.mj_kinematics(full, data)
        np.testing.assert_allclose(xpos[i], data.xpos, rtol=0, atol=POSE_TOL)
        np.testing.assert_allclose(xquat[i], data.xquat, rtol=0, atol=POSE_TOL)


# ---------------------------------------------------------------------------------------------------------------
# In the browser

def panel_site(directory: pathlib.Path, blocks: str | None = None, max_width: int | None = None) -> pathlib.Path:
    """Chapters 3 and 4's page panels as test_web_arm serves them (or ``blocks``; in a column ``max_width`` CSS px wide,
    by default test_web_arm's), with the 3D view's module, three.js and the arm where the book puts them."""
    from test_web_arm import ARM_COLUMN_PX, pd_blocks, sysid_blocks
    directory = scratch_site(directory, pd_blocks() + sysid_blocks() if blocks is None else blocks,
                             max_width=ARM_COLUMN_PX if max_width is None else max_width)
    static = directory / '_static'
    copy_view(static)
    load_extension().install(static)
    return directory


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    with serve(panel_site(tmp_path_factory.mktemp('arm3d_panel'))) as url:
        yield url


def open_view(page, key):
    """Press the panel's "show the arm in 3D" and wait until the view shows MuJoCo's run."""
    page.wait_for_selector(f'#physai-panel-{key} .pl-arm3d button', timeout=60_000)
    page.click(f'#physai-panel-{key} .pl-arm3d button')
    page.wait_for_selector(f'#physai-panel-{key} .pl-arm3d[data-arm3d=open]', state='attached', timeout=180_000)
    wait_live(page, key)
    page.wait_for_function(f"""() => {{ const v = window.physaiPanels['{key}'].arm3d;
        return v.view && v.view._clip && v.view.frames > 0; }}""", timeout=180_000)


def snapshot(page, key) -> str:
    return page.evaluate(f"() => window.physaiPanels['{key}'].arm3d.view.snapshot()")


def console_errors(page) -> list:
    errors = []
    page.on('console', lambda m: errors.append(f"{m.text} {m.location.get('url', '')}") if m.type == 'error' else None)
    return errors


@pytest.mark.slow
@pytest.mark.parametrize('key', ['pd', 'sysid'])
def test_the_view_loads_on_demand_opens_without_errors_and_its_picture_follows_the_pose(site, browser, key):
    page, requests, errors = open_page(browser, site + '/')
    console = console_errors(page)
    page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=60_000)
    page.wait_for_load_state('networkidle')   # what the page fetches by itself has come: no request for 500 ms
    assert not any('three' in r or 'arm3d/' in r or 'physai-arm3d' in r for r in requests)   # nothing before asked
    open_view(page, key)
    assert any(r.endswith('three.module.js') for r in requests) and any('so101' in r for r in requests)
    page.evaluate(f"() => window.physaiPanels['{key}'].arm3d.view.pause()")
    view = f"window.physaiPanels['{key}'].arm3d.view"
    page.evaluate(f"() => {view}.seek(0)")
    first = snapshot(page, key)
    end = page.evaluate(f"() => {view}._clip.time.at(-1)")
    page.evaluate(f"() => {view}.seek({0.3 * end})")
    moved = snapshot(page, key)
    assert moved != first
    # playing, the view moves the cursor on the trace to its time (a line moved by its transform)
    page.evaluate(f"() => {view}.play()")
    page.wait_for_function(f"() => {view}.time !== {0.3 * end}", timeout=60_000)   # it played on
    drawn, expected = page.evaluate(f"""() => {{
        {view}.pause();
        const a = window.physaiPanels['{key}'].arm3d, p = a.plots[0];
        const line = p.svg.querySelector('.pl-arm3d-cursor').getBoundingClientRect(), box = p.svg.getBoundingClientRect();
        return [(line.left + line.right) / 2 - box.left, p.x({view}.time) * box.width / p.w];
    }}""")
    assert expected > 0 and abs(drawn - expected) < 1.0
    if key == 'pd':   # magnified, the same moment is drawn elsewhere, and the view says by how much
        page.select_option('#physai-panel-pd .pl-arm3d select >> nth=0', '100')
        page.wait_for_function("() => document.querySelector('#physai-panel-pd .physai-arm3d-label').textContent"
                               ".includes('×100')", timeout=60_000)
        page.evaluate(f"() => {{ {view}.pause(); {view}.seek({0.3 * end}); }}")
        assert snapshot(page, key) != moved
        # the placement switch reruns the panel; the view follows its run
        label = page.inner_text('#physai-panel-pd .physai-arm3d-label')
        page.click('#physai-panel-pd .pl-arm3d .pl-arm3d-head button:has-text("switch")')
        page.wait_for_function(f"() => document.querySelector('#physai-panel-pd .physai-arm3d-label').textContent "
                               f"!== {label!r}", timeout=180_000)
        assert page.eval_on_selector('#physai-panel-pd-backend', 'i => i.value') == 'in-step'
    else:   # a drag on the trace scrubs the view
        box = page.locator('#physai-panel-sysid svg.pl-wide').bounding_box()
        page.mouse.click(box['x'] + 0.8 * box['width'], box['y'] + 0.5 * box['height'])
        assert page.evaluate(f"() => {view}.time") > 0.5 * end
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    screenshot(page.locator(f'#physai-panel-{key}'), path=str(SCREENSHOTS / f'arm3d-panel-{key}.png'))
    assert errors == []
    assert [c for c in console if not c.endswith('/favicon.ico')] == []   # the scratch page has no icon


@pytest.mark.slow
def test_without_webgl_the_panel_keeps_its_plots_and_says_why(site, browser):
    page = browser.new_page(viewport={'width': 1280, 'height': 800})
    page.add_init_script('delete globalThis.WebGL2RenderingContext')
    page.goto(site + '/')
    page.wait_for_selector('#physai-panel-pd[data-drawn]', state='attached', timeout=60_000)
    assert page.eval_on_selector('#physai-panel-pd .pl-arm3d', 'n => n.dataset.arm3d') == 'unavailable'
    assert 'no WebGL 2' in page.inner_text('#physai-panel-pd .pl-arm3d')
    assert page.locator('#physai-panel-pd .pl-plots svg').count() >= 2


def canvas_picture(page, key) -> np.ndarray:
    """The view's canvas as the page shows it (a screenshot of the element, not a fresh draw): grey levels."""
    import io
    from PIL import Image
    png = screenshot(page.locator(f'#physai-panel-{key} .pl-arm3d canvas'))
    return np.asarray(Image.open(io.BytesIO(png)).convert('L'), dtype=float)


PRESENT_FIT_JS = """key => {
    const root = document.getElementById('physai-panel-' + key), view = root.querySelector('.pl-arm3d');
    const c = view.querySelector('canvas').getBoundingClientRect(), r = view.getBoundingClientRect();
    return {canvas: [c.left, c.top, c.right, c.bottom], aside: [r.left, r.top, r.right, r.bottom],
            overflowX: root.scrollWidth - root.clientWidth, overflowY: root.scrollHeight - root.clientHeight,
            width: innerWidth, height: innerHeight,
            plots: Array.from(root.querySelectorAll('.pl-plots svg')).filter((s) => getComputedStyle(s).display !== 'none')
                .map((s) => { const b = s.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })};
}"""


@pytest.mark.slow
@pytest.mark.parametrize('key', ['pd', 'sysid'])
def test_in_the_present_view_the_open_arm_takes_a_column_beside_the_plots_and_draws_after_entering_and_resizing(
        site, browser, key):
    """A projector at 1280x720 and 150 % (853x480 CSS px): the open view stays open into the present view, beside the
    plots (a column of the screen's height under the controls, the canvas at least a third of the screen tall), nothing
    overlaps or scrolls, and the canvas shows the arm (its grey levels vary) after entering and after a resize."""
    page = browser.new_page(viewport={'width': 853, 'height': 480}, device_scale_factor=1.5)
    errors = []
    page.on('pageerror', lambda e: errors.append(str(e)))
    page.goto(site + '/')
    open_view(page, key)
    page.click(f'#physai-panel-{key} button:text("present")')
    for size in ((853, 480), (1000, 560)):
        if size != (page.viewport_size['width'], page.viewport_size['height']):
            plot = page.locator(f'#physai-panel-{key} .pl-plots svg').first.element_handle()
            page.set_viewport_size({'width': size[0], 'height': size[1]})
            page.wait_for_function('svg => !svg.isConnected', arg=plot, timeout=60_000)   # the plots drawn again
        page.wait_for_function(f"""() => {{ const v = window.physaiPanels['{key}'].arm3d;
            return v.view && v.root.classList.contains('pl-present-aside') && v.view._clip; }}""", timeout=60_000)
        wait_arm3d_settled(page, key)   # the view took the panel's last run (QUIET_MS after it) and drew it
        fit = page.evaluate(PRESENT_FIT_JS, key)
        assert page.eval_on_selector(f'#physai-panel-{key} .pl-arm3d', 'n => n.dataset.arm3d') == 'open'
        assert fit['overflowX'] <= 1 and fit['overflowY'] <= 1, fit
        left, top, right, bottom = fit['canvas']
        assert right <= fit['width'] + 1 and bottom <= fit['height'] + 1, fit
        assert bottom - top >= fit['height'] / 3 and right - left >= 0.3 * fit['width'], fit
        assert all(r <= fit['aside'][0] + 1 for _, _, r, _ in fit['plots']), fit   # the plots left of the column
        picture = canvas_picture(page, key)
        assert picture.std() > 5, f'the canvas is blank at {size}: grey level spread {picture.std():.2f}'
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        screenshot(page, path=str(SCREENSHOTS / f'arm3d-panel-{key}-present-{size[0]}x{size[1]}.png'))
    page.keyboard.press('Escape')
    page.wait_for_function(f"() => !document.getElementById('physai-panel-{key}').classList.contains('physai-panel-present')",
                           timeout=60_000)
    next_frames(page)
    assert page.eval_on_selector(f'#physai-panel-{key} .pl-arm3d', 'n => n.dataset.arm3d') == 'open'
    assert not page.eval_on_selector(f'#physai-panel-{key} .pl-arm3d', 'n => n.classList.contains("pl-present-aside")')
    assert errors == []
    page.close()
