"""Chapters 4, 5 and 6's panels as Jupyter widgets (physai.interface.widget): the page's own modules drawing the
replay, the grasp and the settings' runs that Python MuJoCo makes at the controls' exact values.

Each chapter's widget is built from the arguments its notebook gives its panel (chapter 4: the held-out episode and a
servo; chapter 6: the fitted spring, the held-out episode and the load), here with cheap stand-ins for the fits
(chapter 4's published fit, tests/test_web_firmware.py's spring). The kernel half is tested without a front end (a
request set on the widget as the front end sets it); the three widgets together in the session's local JupyterLab,
opened in headless Chromium (tests/conftest.py's ``jupyter_lab``).
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

pytest.importorskip('anywidget')

from physai.engine.arm_replay import PUBLISHED_FIT, arm_columns  # noqa: E402
from physai.interface import gripper_panels as ch5  # noqa: E402
from physai.interface import servo_firmware_panels as sfp  # noqa: E402
from physai.interface import servo_sysid_panels as ch4  # noqa: E402
from physai.interface import web, web_firmware  # noqa: E402
from physai.engine.servo_models import JointModel  # noqa: E402
from physai.engine.so101 import ARM_JOINTS  # noqa: E402
from test_web_firmware import LOAD, held_out, spring  # noqa: E402
from test_widget import bundle, wait_reply  # noqa: E402,F401  (bundle: the module's front end, built once)
from test_widget_models_pd import arm3d, sent  # noqa: E402,F401  (arm3d: the 3D view's files, built once)


def sysid_widget():
    return ch4.sysid_widget(held_out(), PUBLISHED_FIT)


def settings_widget():
    return sfp.settings_widget(spring(), held_out(), LOAD)


OFF_GRID = {
    'sysid': {'kp': 57.3, 'armature': 0.0137, 'timestep': 0.004, 'integrator': 'RK4', 'kv': 5.1, 'forcerange': 2.2},
    'gripper': {'torque_limit': 0.8, 'kp': 312.0, 'armature': 0.011, 'timestep': 0.003, 'integrator': 'implicit',
                'command': 'just inside the cube', 'mass': 0.12, 'mu': 0.6, 'condim': 4},
    'firmware': {'p_register': 23.0, 'supply_voltage': 9.1, 'torque_limit': 700.0, 'goal_speed': 850.0,
                 'backlash_deg': 1.3, 'timestep': 0.004, 'integrator': 'Euler'},
}
"""A setting per chapter on none of the first view's grid values, every control off its default (the firmware's
backlash, which the page leaves out, too)."""


def ask(w, values, generation=1) -> tuple[dict, dict]:
    """The widget's first and complete replies to ``values`` (every reply seen as it is set, however fast the worker
    follows the first)."""
    replies = []
    record = lambda change: replies.append(change['new'])  # noqa: E731
    w.observe(record, names='reply')
    try:
        w.request = {'generation': generation, 'values': values}
        complete = wait_reply(w, generation)
    finally:
        w.unobserve(record, names='reply')
    return next(r for r in replies if r.get('generation') == generation), complete


def test_sysid_reply_is_mujocos_replay_at_the_exact_values():
    """Chapter 4: the first reply says the replay is running (null: the page keeps its picture), the second is the
    first view's part at exactly the values, whose traces and words are a plain replay's (physai's panel_replay, one
    thread, no batch of nudged starts) to the stored 0.01°."""
    w = sysid_widget()
    values = OFF_GRID['sysid']
    first, reply = ask(w, values)
    assert first['frame']['replay'] is None and not first['complete']
    part = reply['frame']['replay']
    rep = ch4.panel_replay(held_out(), PUBLISHED_FIT, values)
    assert part['status'] == ch4.replay_status(rep)
    for packed, joint in zip(part['sim'], ch4.PANEL_JOINTS):
        sim = np.array(web.unpack(packed, ch4.STORED_STEP_DEG), dtype=float)
        assert np.max(np.abs(sim - rep.sim_deg[:, ARM_JOINTS.index(joint)])) <= ch4.STORED_STEP_DEG / 2 + 1e-9
    assert part == ch4.replay_part(ch4.panel_draws(held_out(), PUBLISHED_FIT, values), ch4.PANEL_JOINTS)


def test_replay_poses_are_mujocos_bodies_at_the_replay_and_the_recording():
    """Chapter 4's 3D view plays the replay the overlay draws (its arm joints those of panel_draws' first draw, bit for
    bit) and the recording as a ghost: at every frame, the bodies' poses MuJoCo's forward pass gives on the SO-101
    (Menagerie's, meshes and all: the bodies the view's meshes hang on) at the replay's qpos, and at the recording's
    five arm joints (observation.state in radians) with the replay's gripper; checked at a few frames."""
    import mujoco
    from physai.engine.so101 import JOINTS, load_so101
    values, episode = OFF_GRID['sysid'], held_out()
    qpos, warned = ch4.replay_qpos(episode, PUBLISHED_FIT, values)
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    draw = ch4.panel_draws(episode, PUBLISHED_FIT, values)[0]
    assert not warned and np.array_equal(np.rad2deg(qpos[:, arm]), draw.sim_deg)
    poses = ch4.replay_poses(episode, PUBLISHED_FIT, values)
    m = load_so101()
    n = episode.nframe
    assert poses['xpos'].shape == poses['ghost_xpos'].shape == (n, m.nbody, 3)
    np.testing.assert_array_equal(poses['time'], np.arange(n) / episode.fps)
    d = mujoco.MjData(m)
    for i in (0, n // 2, n - 1):
        real = qpos[i].copy()
        real[arm] = np.deg2rad(episode.state[i, arm_columns(episode.joints)])
        for prefix, pose in (('', qpos[i]), ('ghost_', real)):
            d.qpos[:] = pose
            mujoco.mj_forward(m, d)
            np.testing.assert_allclose(poses[f'{prefix}xpos'][i], d.xpos, atol=1e-12)
            np.testing.assert_allclose(poses[f'{prefix}xquat'][i], d.xquat, atol=1e-12)


def test_a_diverged_replay_is_posed_to_its_end_without_a_warning_printed(capfd):
    """A replay that blows up (kp 30000 with no armature at 20 ms) stops where MuJoCo warned and its last frame
    repeats: the 3D view still gets a finite pose for every frame, and MuJoCo's warning is not printed (the panel's
    verdict says diverged)."""
    values = {'kp': 30000.0, 'armature': 0.0, 'timestep': 0.02, 'integrator': 'RK4', 'kv': 30.0, 'forcerange': 5.0}
    qpos, warned = ch4.replay_qpos(held_out(), PUBLISHED_FIT, values)
    poses = ch4.replay_poses(held_out(), PUBLISHED_FIT, values)
    assert warned and len(poses['time']) == held_out().nframe
    assert all(np.all(np.isfinite(a)) for a in poses.values())
    assert 'WARNING' not in capfd.readouterr().err


def test_the_sysid_3d_view_comes_from_the_kernel():
    """Chapter 4's widget answers its 3D view's request with the replay's and the recording's poses at the values it
    names (five float64 buffers: time, then the solid arm's and the ghost's xpos and xquat); a value out of range is
    an error reply naming it."""
    w = sysid_widget()
    values = OFF_GRID['sysid']
    [(content, buffers)] = sent(w, {'kind': 'arm3d-poses', 'id': 4, 'values': values})
    expected = ch4.replay_poses(held_out(), PUBLISHED_FIT, values)
    assert content == {'kind': 'arm3d-poses', 'id': 4, 'frames': held_out().nframe, 'nbody': 9}
    for buffer, name in zip(buffers, ('time', 'xpos', 'xquat', 'ghost_xpos', 'ghost_xquat'), strict=True):
        np.testing.assert_array_equal(np.frombuffer(buffer, dtype=np.float64), expected[name].ravel())
    [(content, _)] = sent(w, {'kind': 'arm3d-poses', 'id': 5, 'values': {**values, 'kv': 100.0}})
    assert 'kv must be in [0.001, 30]' in content['error']


def test_gripper_reply_is_mujocos_grasp_at_the_exact_values():
    """Chapter 5: the second reply is the grasp physai runs at exactly the values (panel_run), its words and slide."""
    w = ch5.gripper_widget()
    values = OFF_GRID['gripper']
    first, reply = ask(w, values)
    assert first['frame']['grasp'] is None
    part = reply['frame']['grasp']
    run, result = ch5.panel_run(values)
    assert part['gripWords'] == ch5.status(result) and part['verdict'] == result['verdict']
    assert part['h'] == values['timestep']
    slide = np.array(web.unpack(part['gripSlide'], ch5.SLIDE_STEP), dtype=float)
    assert len(slide) == len(run.slide)
    assert np.nanmax(np.abs(slide - np.clip(1e3 * run.slide, -1.0, ch5.SLIDE_TOP_MM))) <= ch5.SLIDE_STEP / 2 + 1e-9


def test_firmware_reply_is_mujocos_runs_at_the_exact_values_backlash_too():
    """Chapter 6: the second reply is the step and the segment physai runs at exactly the values, the backlash's play
    hinge included (the page has no backlash control; the kernel's widget has), with the readouts' lines."""
    w = settings_widget()
    assert 'backlash_deg' in [c.name for c in w.spec.controls]
    values = OFF_GRID['firmware']
    first, reply = ask(w, values)
    assert first['frame']['runs'] is None
    part = reply['frame']['runs']
    segment = sfp.segment_of(held_out())
    step, seg = sfp.settings_runs(spring(), segment, values)
    r = sfp.readouts(spring(), sfp.settings_of(values), LOAD, step, seg, segment.fps)
    assert part['lines'] == sfp.readout_lines(r)
    j = ARM_JOINTS.index(sfp.STEP_JOINT)
    trace = np.array(web.unpack(part['step'], web_firmware.STORED_STEP_DEG), dtype=float)
    assert np.max(np.abs(trace - step.sim_deg[:, j])) <= web_firmware.STORED_STEP_DEG / 2 + 1e-9
    no_play = web_firmware.runs_part(spring(), segment, LOAD, {**values, 'backlash_deg': 0.0})
    assert no_play['step'] != part['step']  # the backlash reached the runs (0.04° on the step at 1.3°)


def test_the_first_reply_is_at_once_and_a_setting_seen_answers_from_the_cache():
    """The slow part never holds up the first reply; a setting asked before is answered whole in the first."""
    w = ch5.gripper_widget()
    values = w.spec.defaults
    first, _ = ask(w, values, 1)
    assert first['ms'] < 20.0, first['ms']
    again, _ = ask(w, values, 2)
    assert again['complete'] and again['frame']['grasp'] is not None


@pytest.mark.parametrize('chapter, name, value, words', [
    ('sysid', 'kv', 100.0, 'kv must be in [0.001, 30]'),
    ('gripper', 'mass', 10.0, 'mass must be in [0.01, 5]'),
    ('firmware', 'backlash_deg', 5.0, 'backlash_deg must be in [0, 3]'),
])
def test_a_value_out_of_range_is_an_error_reply_naming_it(chapter, name, value, words):
    """A value no slider can give gets a reply naming the control and its range; the widget answers the next one."""
    w = {'sysid': sysid_widget, 'gripper': ch5.gripper_widget, 'firmware': settings_widget}[chapter]()
    w.request = {'generation': 1, 'values': {**OFF_GRID[chapter], name: value}}
    reply = wait_reply(w, 1)
    assert words in reply['error'] and repr(value) in reply['error'], reply
    w.request = {'generation': 2, 'values': OFF_GRID[chapter]}
    assert 'frame' in wait_reply(w, 2, complete=False)


def test_the_cells_stored_text_is_stable():
    """What nbval compares of a panel cell, its text/plain, is the same words for every widget made."""
    for make, names in ((sysid_widget, 'kp, armature, timestep, integrator, kv, forcerange'),
                        (ch5.gripper_widget, 'torque_limit, kp, armature, timestep, integrator, command, mass, mu'),
                        (settings_widget, 'p_register, supply_voltage, torque_limit, goal_speed, backlash_deg')):
        a, b = make(), make()
        texts = [w._repr_mimebundle_()[0]['text/plain'] for w in (a, b)]
        assert texts[0] == texts[1] == repr(a)
        assert names in texts[0]


# ---------------------------------------------------------------------------------------------------------------
# In JupyterLab, in a browser


MOVES = {
    'sysid': {'kp': 20.0, 'armature': 0.01, 'timestep': 0.01, 'integrator': 'Euler', 'kv': 2.0, 'forcerange': 1.0},
    'gripper': {'torque_limit': 0.5, 'kp': 100.0, 'armature': 0.01, 'timestep': 0.004, 'integrator': 'RK4',
                'command': 'just inside the cube', 'mass': 0.3, 'mu': 0.3, 'condim': 3},
    'firmware': {'p_register': 32.0, 'supply_voltage': 12.0, 'torque_limit': 500.0, 'goal_speed': 1000.0,
                 'backlash_deg': 1.0, 'timestep': 0.01, 'integrator': 'RK4'},
}
"""Each control of each panel moved once, in this order, to a value its plot shows differently."""

PICTURE = {'sysid': 'svg.pl-overlay', 'gripper': 'svg.pl-force', 'firmware': 'svg.pl-step'}
"""The plot of each panel whose drawing every control changes."""

CELL = f"""from physai.engine.arm_replay import PUBLISHED_FIT
from physai.engine.servo_models import JointModel
from physai.experiments import servo_sysid
from physai.interface import gripper_panels, servo_firmware_panels, servo_sysid_panels
held = servo_sysid.split(servo_sysid.find_dataset(None, download=False)[0])[1][0]
display(servo_sysid_panels.sysid_widget(held, PUBLISHED_FIT))
display(gripper_panels.gripper_widget())
display(servo_firmware_panels.settings_widget(JointModel.uniform(PUBLISHED_FIT), held, {LOAD!r}))
"""
"""The three widgets in one cell, from the arguments the chapters' notebooks give their panels (the published fit
standing in for chapter 4's fit and chapter 6's spring, the same on every joint)."""


def page_verdict(chapter: str, values: dict) -> str:
    """The page panel's verdict for ``values``, as its first view computes it in Python (the part its decode reads)."""
    if chapter == 'sysid':
        return ch4.replay_part(ch4.panel_draws(held_out(), PUBLISHED_FIT, values), ch4.PANEL_JOINTS)['status']
    if chapter == 'gripper':
        return ch5.grasp_part(values)['gripWords']
    return ' · '.join(web_firmware.runs_part(JointModel.uniform(PUBLISHED_FIT), sfp.segment_of(held_out()), LOAD,
                                             values)['lines'])


def move(page, key: str, name: str, value) -> None:
    """Move control ``name`` of panel ``key`` as a reader does (tests/test_widget.py's move, for any panel)."""
    page.eval_on_selector(f'#physai-panel-{key}-{name}', """(input, [key, name, value]) => {
        const c = window.physaiPanels[key].byName[name];
        input.value = input.tagName === 'SELECT' ? String(value) : c.position(value);
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new Event('change', {bubbles: true})); }""", [key, name, value])


def settled(page, key: str, drawn: int) -> None:
    """Wait until panel ``key`` has drawn a complete reply after its ``drawn``-th and is idle."""
    page.wait_for_function(f"""() => {{ const r = document.querySelector('#physai-panel-{key}');
        return r && Number(r.dataset.drawn || 0) > {drawn} && r.dataset.state === 'idle'; }}""", timeout=120000)


def open_replay_view(page, values: dict) -> None:
    """Open chapter 4's 3D view and check that it plays the panel's latest replay at ``values``: every frame, a ghost,
    its last frame's bodies where replay_poses puts them (the kernel's float64, unchanged on the way)."""
    arm = 'window.physaiPanels.sysid.arm3d'
    page.click('#physai-panel-sysid .pl-arm3d-head button')
    page.wait_for_function(f"() => {arm}.root.dataset.arm3d !== 'loading' && {arm}.shown === {arm}.record",
                           timeout=60000)
    state, generation, nbody, nframe, ghost, last = page.evaluate(f"""() => {{ const a = {arm}, c = a.view._clip;
        return [a.root.dataset.arm3d, a.shown.generation, a.view.nbody, c.time.length, !!c.ghost,
                Array.from(c.xpos.slice(-a.view.nbody * 3))]; }}""")
    assert state == 'open', page.inner_text('#physai-panel-sysid .pl-arm3d-why')
    assert generation == page.evaluate('() => window.physaiPanels.sysid.generation')
    expected = ch4.replay_poses(held_out(), PUBLISHED_FIT, values)
    assert (nbody, nframe, ghost) == (9, held_out().nframe, True)
    np.testing.assert_array_equal(last, expected['xpos'][-1].ravel())


@pytest.mark.slow
def test_widgets_in_jupyterlab_redraw_at_every_control(jupyter_lab, arm3d):
    """In a local JupyterLab one cell draws chapters 4, 5 and 6's page panels from the kernel's runs; moving each
    control redraws the plot with the kernel's run at the new values and the verdict changes, and the last verdict is
    the page panel's for that setting, computed in Python as its first view is. Chapter 4's 3D view then opens on the
    panel's last replay and its recording, their poses sent by the kernel."""
    from jupyter import notebook, run_notebook
    (jupyter_lab.root / 'arm_widgets.ipynb').write_text(json.dumps(notebook([CELL])))
    t0 = time.perf_counter()
    page, errors = run_notebook(jupyter_lab.browser, jupyter_lab.base, jupyter_lab.token, 'arm_widgets.ipynb')
    timings, latencies = {}, {}
    try:
        for key in MOVES:
            settled(page, key, 0)
        timings['three panels'] = time.perf_counter() - t0
        for key, moves in MOVES.items():
            root = f'#physai-panel-{key}'
            picture, verdicts = page.inner_html(f'{root} {PICTURE[key]}'), [page.inner_text(f'{root} .pl-readout')]
            for name, value in moves.items():
                drawn = int(page.get_attribute(root, 'data-drawn'))
                move(page, key, name, value)
                settled(page, key, drawn)
                new = page.inner_html(f'{root} {PICTURE[key]}')
                assert new != picture, f'{key}: the plot did not change when {name} moved'
                picture = new
                verdicts.append(page.inner_text(f'{root} .pl-readout'))
            assert len(set(verdicts)) > 1, f'{key}: the verdict never changed: {verdicts}'
            values = page.evaluate(f'() => window.physaiPanels.{key}.values')
            for name, value in moves.items():
                assert values[name] == value if isinstance(value, str) else abs(values[name] / value - 1) < 0.05, name
            expected = page_verdict(key, values)
            assert verdicts[-1].replace('\u2212', '-') == expected.replace('\u2212', '-'), (key, verdicts[-1], expected)
            timings[key] = time.perf_counter() - t0
            latencies[key] = page.evaluate(f'() => window.physaiPanels.{key}.completeLatencies')
            if key == 'sysid':
                open_replay_view(page, values)
                timings['sysid 3D'] = time.perf_counter() - t0
        assert not errors, errors
    finally:
        page.close()
    print('timings (s from start):', {k: round(v, 1) for k, v in timings.items()},
          'move to whole picture, ms:', {k: [round(x) for x in v] for k, v in latencies.items()})
