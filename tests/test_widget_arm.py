"""Chapters 4, 5 and 6's panels as Jupyter widgets (physai.interface.widget): the page's own modules drawing the
replay, the grasp and the settings' runs that Python MuJoCo makes at the controls' exact values.

Each chapter's widget is built from the arguments its notebook gives its panel (chapter 4: the held-out episode and a
servo; chapter 6: the fitted spring, the held-out episode and the load), here with cheap stand-ins for the fits
(chapter 4's published fit, tests/test_web_firmware.py's spring). The kernel half is tested without a front end (a
request set on the widget as the front end sets it); the three widgets together in the session's local JupyterLab,
opened in headless Chromium (tests/conftest.py's ``jupyter_lab``).
"""

from __future__ import annotations

import itertools
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


def test_a_diverged_replay_is_posed_to_where_it_stopped_without_a_warning_printed(capfd):
    """A replay that blows up (kp 30000 with no armature at 20 ms) stops where MuJoCo warned, its later frames
    repeating that one: the 3D view's poses end on the frame it stopped on, every one finite, and MuJoCo's warning is
    not printed (the panel's verdict says diverged). The widget's 3D view gets those poses and a note saying where the
    replay ends."""
    values = {'kp': 30000.0, 'armature': 0.0, 'timestep': 0.02, 'integrator': 'RK4', 'kv': 30.0, 'forcerange': 5.0}
    qpos, warned = ch4.replay_qpos(held_out(), PUBLISHED_FIT, values)
    n = ch4.replay_end(qpos, warned)
    assert warned and 1 <= n < held_out().nframe
    assert n == 1 or not np.array_equal(qpos[n - 1], qpos[n - 2])   # its last frame moved
    assert all(np.array_equal(row, qpos[n - 1]) for row in qpos[n:])   # stopped: the rest repeats it
    poses = ch4.replay_poses(held_out(), PUBLISHED_FIT, values)
    assert len(poses['time']) == n and all(np.all(np.isfinite(a)) for a in poses.values())
    assert 'WARNING' not in capfd.readouterr().err
    w = sysid_widget()
    [(content, buffers)] = sent(w, {'kind': 'arm3d-poses', 'id': 1, 'values': values})
    assert content['frames'] == n and len(buffers) == 5
    assert content['note'] == w.spec.say('arm3d_stopped', t=(n - 1) / held_out().fps)
    assert ch4.replay_part(ch4.panel_draws(held_out(), PUBLISHED_FIT, values), ch4.PANEL_JOINTS)['diverged']


def test_replay_end_cuts_a_stopped_or_non_finite_run_and_keeps_a_whole_one():
    """Frames played: all of a run that was not stopped (frames repeating by chance or not); a stopped run up to the
    last frame that moved; a run with non-finite angles before the first such frame."""
    q = np.arange(12.0).reshape(6, 2)
    assert ch4.replay_end(q, False) == 6
    stopped = q.copy()
    stopped[3:] = stopped[2]
    assert ch4.replay_end(stopped, True) == 3 and ch4.replay_end(stopped, False) == 6
    broken = q.copy()
    broken[4, 1] = np.nan
    assert ch4.replay_end(broken, False) == 4 and ch4.replay_end(broken, True) == 4
    assert ch4.replay_end(np.repeat(q[:1], 6, axis=0), True) == 1


def test_a_chaotic_setting_gives_the_3d_view_no_replay(real):
    """Where the overlay draws no replay (a chaotic setting: its nudged starts part by degrees, the verdict alone),
    the 3D view gets none to play either, but a note saying why; at the next setting it plays again."""
    from physai.engine import arm_replay
    from physai.experiments import servo_sysid
    held = servo_sysid.split(real)[1][0]
    w = ch4.sysid_widget(held, arm_replay.MENAGERIE)
    values = {**w.spec.defaults, 'kp': 30000.0, 'armature': 0.0, 'timestep': 0.02, 'integrator': 'Euler'}
    assert complete(w, values)['frame']['replay']['chaotic']
    [(content, buffers)] = sent(w, {'kind': 'arm3d-poses', 'id': 1, 'values': values})
    assert content == {'kind': 'arm3d-poses', 'id': 1, 'frames': 0, 'nbody': 9,
                       'note': 'chaotic: no single replay to play, as the plot draws none'}
    assert not buffers
    [(content, buffers)] = sent(w, {'kind': 'arm3d-poses', 'id': 2, 'values': w.spec.defaults})
    assert content['frames'] == held.nframe and content['note'] == '' and len(buffers) == 5


def test_the_sysid_3d_view_comes_from_the_kernel():
    """Chapter 4's widget answers its 3D view's request with the replay's and the recording's poses at the values it
    names (five float64 buffers: time, then the solid arm's and the ghost's xpos and xquat); a value out of range is
    an error reply naming it."""
    w = sysid_widget()
    values = OFF_GRID['sysid']
    [(content, buffers)] = sent(w, {'kind': 'arm3d-poses', 'id': 4, 'values': values})
    expected = ch4.replay_poses(held_out(), PUBLISHED_FIT, values)
    assert content == {'kind': 'arm3d-poses', 'id': 4, 'frames': held_out().nframe, 'nbody': 9, 'note': ''}
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
# What the retired matplotlib panels (sysid_panel, gripper_panel, settings_panel) were tested for, on the widgets


def complete(w, values, generation=1) -> dict:
    """The widget's complete reply to ``values`` (an error reply fails the test, naming the values)."""
    w.request = {'generation': generation, 'values': values}
    reply = wait_reply(w, generation, timeout=120.0)
    assert 'error' not in reply, (values, reply.get('error'))
    return reply


def test_sysid_widget_survives_extreme_controls(synthetic_episode, soft):
    """Every control at its ends (alone, from the start) replays without an error and the words are one of the four
    verdicts or the chaotic one; the start is the spec's defaults (the servo's own kp)."""
    w = ch4.sysid_widget(synthetic_episode(30), soft)
    start = w.spec.defaults
    assert start['kp'] == soft.kp and start == ch4.sysid_spec(synthetic_episode(30), soft).defaults
    changes = (dict(kp=30000.0), dict(kp=1.0), dict(armature=0.0), dict(timestep=0.02), dict(integrator='Euler'),
               dict(kv=0.001), dict(forcerange=0.2), dict(timestep=0.0005))
    for generation, change in enumerate(changes, 1):
        part = complete(w, {**start, **change}, generation)['frame']['replay']
        words = (w.spec.say('chaotic', mae=part['mae']) if part.get('chaotic') else part['status'])
        assert words.startswith(('stable', 'chatters', 'far off', 'diverged', 'chaotic')), (change, words)


def test_sysid_widget_calls_a_rattling_replay_bad(real):
    """At kp 30000, armature 0, 20 ms and Euler the matplotlib panel once said 'stable' while the joints chattered
    ±20°. The replay from the recorded start chatters; its nudged starts part by degrees, so the widget stores no
    single replay and says so (chaotic, drawn as a bad run), never 'stable'."""
    from physai.engine import arm_replay
    from physai.experiments import servo_sysid
    held = servo_sysid.split(real)[1][0]
    w = ch4.sysid_widget(held, arm_replay.MENAGERIE)
    values = {**w.spec.defaults, 'kp': 30000.0, 'armature': 0.0, 'timestep': 0.02, 'integrator': 'Euler'}
    assert ch4.replay_status(ch4.panel_replay(held, arm_replay.MENAGERIE, values)).startswith('chatters')
    part = complete(w, values)['frame']['replay']
    assert part == {'chaotic': True, 'mae': part['mae'], 'diverged': False}
    assert w.spec.say('chaotic', mae=part['mae']).startswith('chaotic: nudged replays part')


def test_sysid_widget_calls_a_replay_far_off_the_recording_so(real):
    """The held-out episode at kp 1, the rest as fitted: a smooth, bounded replay 11° off, six times the teleport's
    error. The matplotlib panel once wrote 'stable' over it in plain black; the widget's reply says far off and marks
    it (farOff: the page module draws it as a bad run), while the fitted kp is stable and not marked."""
    from physai.engine import arm_replay
    from physai.experiments import servo_sysid
    held = servo_sysid.split(real)[1][0]
    fitted = arm_replay.ArmServo(kp=8.31, kv=0.713, forcerange=1.29, damping=0.181, frictionloss=0.178,
                                 armature=0.0375)
    w = ch4.sysid_widget(held, fitted)
    start = complete(w, w.spec.defaults, 1)['frame']['replay']
    assert start['status'].startswith('stable') and not (start['farOff'] or start['chatters'] or start['diverged'])
    soft = complete(w, {**w.spec.defaults, 'kp': 1.0}, 2)['frame']['replay']
    assert soft['status'].startswith('far off') and soft['farOff']
    rep = ch4.panel_replay(held, fitted, {**w.spec.defaults, 'kp': 1.0})
    assert soft['status'] == ch4.replay_status(rep) and 10 < rep.mae_deg < 15


@pytest.fixture(scope='module')
def gripper():
    return ch5.gripper_widget()


GENERATIONS = itertools.count(1)
"""Request numbers for the module's one gripper widget (each request a new one, as the front end numbers them)."""


@pytest.mark.parametrize('change, verdict', [
    ({}, 'held'),
    ({'torque_limit': 2.94}, 'crushed'),
    ({'mu': 0.01}, 'slips'),
    ({'condim': 1}, 'slips'),
    ({'command': 'just inside the cube', 'torque_limit': 2.94, 'kp': 20000.0}, 'jitters'),
])
def test_gripper_widget_verdict_is_the_grasp_tables_on_the_same_run(gripper, change, verdict):
    """The chapter's four suggestions and its start: the widget starts at the spec's defaults, and its words are the
    verdict of chapter 5's table, computed from the run it draws."""
    from physai.experiments import gripper as grasp
    assert gripper.spec.defaults == ch5.gripper_spec().defaults
    values = {**gripper.spec.defaults, **change}
    part = complete(gripper, values, next(GENERATIONS))['frame']['grasp']
    run, result = ch5.panel_run(values)
    assert part['verdict'] == result['verdict'] == verdict == grasp.verdict(run)['verdict']
    assert part['gripWords'] == ch5.status(result) and part['gripWords'].startswith(verdict)


def test_gripper_widget_survives_the_ends_of_every_control(gripper):
    """Every control at either end of its range, one at a time: the widget replies with the grasp physai runs there,
    its verdict and words."""
    for control in gripper.spec.controls:
        ends = control.options if hasattr(control, 'options') else (control.min * control.scale,
                                                                    control.max * control.scale)
        for value in ends:
            values = {**gripper.spec.defaults, control.name: value}
            part = complete(gripper, values, next(GENERATIONS))['frame']['grasp']
            _, result = ch5.panel_run(values)
            assert (part['verdict'], part['gripWords']) == (result['verdict'], ch5.status(result)), (control.name,
                                                                                                     value)


def test_settings_widget_survives_extreme_controls(synthetic_episode):
    """Every control of chapter 6's widget at its ends replays the step and the segment without an error, the
    readouts' six lines written; the backlash too (the kernel's alone)."""
    from physai.engine.arm_replay import ArmServo
    spring_ = JointModel.uniform(ArmServo(kp=8.9, kv=0.2, forcerange=3.0, damping=0.2, frictionloss=0.15,
                                          armature=0.03))
    w = sfp.settings_widget(spring_, synthetic_episode(200), 0.5)
    changes = (dict(p_register=64.0), dict(p_register=1.0), dict(supply_voltage=12.6), dict(supply_voltage=5.0),
               dict(torque_limit=100.0), dict(goal_speed=50.0), dict(goal_speed=4000.0), dict(backlash_deg=3.0),
               dict(timestep=0.02), dict(integrator='Euler'), dict(timestep=0.0005))
    segment = sfp.segment_of(synthetic_episode(200))
    for generation, change in enumerate(changes, 1):
        values = {**w.spec.defaults, **change}
        part = complete(w, values, generation)['frame']['runs']
        step, seg = sfp.settings_runs(spring_, segment, values)
        assert part['lines'] == sfp.readout_lines(sfp.readouts(spring_, sfp.settings_of(values), 0.5, step, seg,
                                                               segment.fps)), change


def test_settings_widget_refuses_bad_input_by_name(synthetic_episode):
    from physai.engine.arm_replay import ArmServo
    spring_ = JointModel.uniform(ArmServo(kp=8.9, kv=0.2, forcerange=3.0, damping=0.2, frictionloss=0.15,
                                          armature=0.03))
    with pytest.raises(ValueError, match='load'):
        sfp.settings_widget(spring_, synthetic_episode(200), -1.0)
    with pytest.raises(TypeError, match='spring must be'):
        sfp.settings_widget('spring', synthetic_episode(200), 0.5)
    with pytest.raises(TypeError, match='episode must be'):
        sfp.settings_widget(spring_, 'episode', 0.5)
    with pytest.raises(ValueError, match='seconds must be at most'):
        sfp.settings_widget(spring_, synthetic_episode(30), 0.5)
    import dataclasses
    ep = synthetic_episode(200)
    no_arm = dataclasses.replace(ep, joints=('a', 'b', 'c', 'd', 'e', 'f'))
    with pytest.raises(ValueError, match='episode must hold the arm joints'):
        sfp.settings_widget(spring_, no_arm, 0.5)


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


CHAOTIC = {'kp': 30000.0, 'armature': 0.0, 'timestep': 0.02}
"""Chapter 4's moves after MOVES to a chaotic setting (with MOVES' Euler, kv 2 and forcerange 1: the nudged replays
part by degrees on the held-out episode, and the overlay draws no replay)."""


def chaotic_then_back(page, values: dict) -> None:
    """With chapter 4's 3D view open, move to :data:`CHAOTIC`: the view plays nothing (its stage hidden) and says why,
    as the overlay draws no replay; back to ``values`` it plays that replay again."""
    arm, root = 'window.physaiPanels.sysid.arm3d', '#physai-panel-sysid'
    shown = f"() => {arm}.shown === {arm}.record && {arm}.shown.generation === window.physaiPanels.sysid.generation"
    for name, value in CHAOTIC.items():
        drawn = int(page.get_attribute(root, 'data-drawn'))
        move(page, 'sysid', name, value)
        settled(page, 'sysid', drawn)
    at = page.evaluate('() => window.physaiPanels.sysid.values')
    assert ch4.replay_part(ch4.panel_draws(held_out(), PUBLISHED_FIT, at), ch4.PANEL_JOINTS).get('chaotic'), at
    page.wait_for_function(shown, timeout=60000)
    why, hidden = page.evaluate(f"() => [{arm}.why.textContent, {arm}.stage.style.visibility]")
    assert (why, hidden) == ('chaotic: no single replay to play, as the plot draws none', 'hidden')
    for name in CHAOTIC:
        drawn = int(page.get_attribute(root, 'data-drawn'))
        move(page, 'sysid', name, values[name])
        settled(page, 'sysid', drawn)
    page.wait_for_function(shown, timeout=60000)
    why, hidden, nframe = page.evaluate(f"() => [{arm}.why.textContent, {arm}.stage.style.visibility, "
                                        f"{arm}.view._clip.time.length]")
    assert (why, hidden, nframe) == ('', '', held_out().nframe)


@pytest.mark.slow
def test_widgets_in_jupyterlab_redraw_at_every_control(jupyter_lab, arm3d):
    """In a local JupyterLab one cell draws chapters 4, 5 and 6's page panels from the kernel's runs; moving each
    control redraws the plot with the kernel's run at the new values and the verdict changes, and the last verdict is
    the page panel's for that setting, computed in Python as its first view is. Chapter 4's 3D view then opens on the
    panel's last replay and its recording, their poses sent by the kernel; at a chaotic setting it plays nothing and
    says why, as the overlay draws no replay, and plays again when the setting is back."""
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
                chaotic_then_back(page, values)
                timings['sysid 3D chaotic and back'] = time.perf_counter() - t0
        assert not errors, errors
    finally:
        page.close()
    print('timings (s from start):', {k: round(v, 1) for k, v in timings.items()},
          'move to whole picture, ms:', {k: [round(x) for x in v] for k, v in latencies.items()})
