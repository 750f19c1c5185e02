"""Where the PD runs (physai.engine.hold): both backends against MuJoCo's own <position> servo and a plain loop."""

import math
import warnings

import mujoco
import numpy as np
import pytest

from physai.engine import hold, perturb
from physai.experiments import registry, where_pd_runs
from physai.interface import where_pd_runs_panels
from physai.laws import loop, robust
from physai.engine.hold import HoldParams, PDController
from physai.laws.drives import pd_torque
from physai.laws.loop import BACKENDS, JointCommand

INTEGRATORS = ('Euler', 'implicitfast', 'implicit', 'RK4')

# One link on a hinge, driven by a plain motor (gain 1, no bias): the in-step backend must turn it into
# exactly the servo that the second model writes with <position>.
LINK_XML = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 -1 0" damping="0.05" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="0.3"/>
    </body>
  </worldbody>
  <actuator>
    ACTUATOR
  </actuator>
</mujoco>
"""
MOTOR_XML = LINK_XML.replace('ACTUATOR', '<motor name="drive" joint="hinge" gear="{gear}" {limits}/>')
POSITION_XML = LINK_XML.replace(
    'ACTUATOR', '<position name="drive" joint="hinge" gear="{gear}" kp="{kp}" kv="{kv}" {limits}/>')

# A second, unactuated hinge for the fall-back.
TWO_JOINT_XML = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body>
      <joint name="driven" type="hinge" axis="0 1 0" armature="0.01"/>
      <geom type="sphere" size="0.05" mass="1" pos="0.1 0 0"/>
      <body pos="0.2 0 0">
        <joint name="free_hinge" type="hinge" axis="0 1 0" armature="0.01"/>
        <geom type="sphere" size="0.05" mass="1" pos="0.1 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="driven"/>
  </actuator>
</mujoco>
"""


@pytest.mark.parametrize('integrator', INTEGRATORS)
@pytest.mark.parametrize('gear, forcerange', [(1.0, None), (1.0, 0.5), (2.0, None)])
def test_in_step_servo_is_mujocos_position_actuator_step_for_step(integrator, gear, forcerange):
    """A fixed command in-step turns the motor into <position kp kv>: same qpos at every step, to 1e-12 rad."""
    stiffness, damping, target = 40.0, 0.8, 0.3
    limits = '' if forcerange is None else f'forcerange="{-forcerange} {forcerange}"'
    ours = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator=integrator, gear=gear, limits=limits))
    # the <position> model in actuator units: kp*gear² is the joint stiffness, ctrl/gear the joint target
    theirs = mujoco.MjModel.from_xml_string(POSITION_XML.format(
        integrator=integrator, gear=gear, kp=stiffness / gear**2, kv=damping / gear**2, limits=limits))
    d_ours, d_theirs = mujoco.MjData(ours), mujoco.MjData(theirs)
    d_ours.qpos[0] = d_theirs.qpos[0] = -0.5
    controller = PDController(ours, ['hinge'], backend='in-step')
    command = JointCommand(position=target, stiffness=stiffness, damping=damping)
    d_theirs.ctrl[0] = gear * target
    for _ in range(1000):
        controller.write(d_ours, [command])
        mujoco.mj_step(ours, d_ours)
        mujoco.mj_step(theirs, d_theirs)
        assert abs(d_ours.qpos[0] - d_theirs.qpos[0]) <= 1e-12
    np.testing.assert_allclose(controller.effort(d_ours), d_theirs.qfrc_actuator, atol=1e-9)


def test_mit_torque_is_chapter_2s_pd_law_clipped_to_max_effort():
    """mit_torque = physai.laws.drives.pd_torque(stiffness, damping, effort), then clip to ±max_effort."""
    command = JointCommand(position=0.3, velocity=0.2, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0)
    q, qd = np.linspace(-1.0, 1.0, 9), np.linspace(2.0, -2.0, 9)
    expected = np.clip(pd_torque(0.3, q, 0.2, qd, 40.0, 0.8, 0.1), -5.0, 5.0)
    np.testing.assert_array_equal(loop.mit_torque(command, q, qd), expected)
    assert np.max(np.abs(expected)) == 5.0  # the clamp is exercised


def test_in_loop_torque_is_the_mit_law_clamped_and_held_between_ticks():
    """In-loop writes clip(kp*(p-q) + kv*(v-qd) + effort) to qfrc_applied, and it stays there while q moves."""
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='implicitfast', gear=1, limits=''))
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0] = -0.2, 0.7
    controller = PDController(m, ['hinge'], backend='in-loop')
    command = JointCommand(position=0.1, velocity=0.5, stiffness=4.0, damping=0.4, effort=0.05,
                           max_effort=2.0)
    controller.write(d, [command])
    expected = 4.0 * (0.1 + 0.2) + 0.4 * (0.5 - 0.7) + 0.05
    assert d.qfrc_applied[0] == pytest.approx(expected, abs=1e-15)
    for _ in range(5):
        mujoco.mj_step(m, d)
    assert d.qfrc_applied[0] == pytest.approx(expected, abs=1e-15)
    assert d.qpos[0] != pytest.approx(-0.2)
    # the silenced actuator adds nothing, so the effort read back is the held torque
    assert controller.effort(d)[0] == pytest.approx(expected, abs=1e-12)
    strong = JointCommand(position=3.0, stiffness=10.0, max_effort=2.0)
    controller.write(d, [strong])
    assert d.qfrc_applied[0] == 2.0


def test_in_step_velocity_and_effort_stay_inside_the_clamp_by_default():
    """Default in-step: damping*velocity + effort ride in biasprm[0], so forcerange clamps the whole torque."""
    m = mujoco.MjModel.from_xml_string(
        MOTOR_XML.format(integrator='implicitfast', gear=1, limits='forcerange="-1 1"'))
    d = mujoco.MjData(m)
    controller = PDController(m, ['hinge'], backend='in-step')
    controller.write(d, [JointCommand(velocity=10.0, damping=1.0, effort=0.5)])
    mujoco.mj_forward(m, d)
    assert controller.effort(d)[0] == pytest.approx(1.0)
    # the plain recipe puts them in qfrc_applied, outside the clamp
    m2 = mujoco.MjModel.from_xml_string(
        MOTOR_XML.format(integrator='implicitfast', gear=1, limits='forcerange="-1 1"'))
    d2 = mujoco.MjData(m2)
    applied = PDController(m2, ['hinge'], backend='in-step', feedforward='applied')
    applied.write(d2, [JointCommand(velocity=10.0, damping=1.0, effort=0.5)])
    mujoco.mj_forward(m2, d2)
    assert applied.effort(d2)[0] == pytest.approx(10.5)


def test_unactuated_joint_falls_back_to_in_loop_with_a_warning():
    """In-step needs an actuator; a joint without one gets the in-loop PD and a warning naming it."""
    m = mujoco.MjModel.from_xml_string(TWO_JOINT_XML)
    d = mujoco.MjData(m)
    with pytest.warns(UserWarning, match='free_hinge'):
        controller = PDController(m, ['driven', 'free_hinge'], backend='in-step')
    assert list(controller.in_step) == [True, False]
    d.qpos[1] = 0.2
    controller.write(d, [JointCommand(stiffness=5.0), JointCommand(stiffness=5.0)])
    assert d.qfrc_applied[1] == pytest.approx(-1.0)
    assert d.ctrl[0] == 0.0 and m.actuator_gainprm[0, 0] == 5.0


def test_max_effort_narrows_the_actuator_forcerange_never_widens_it():
    m = mujoco.MjModel.from_xml_string(
        MOTOR_XML.format(integrator='implicitfast', gear=1, limits='forcerange="-1 1"'))
    d = mujoco.MjData(m)
    controller = PDController(m, ['hinge'], backend='in-step')
    controller.write(d, [JointCommand(position=1.0, stiffness=100.0, max_effort=0.3)])
    np.testing.assert_allclose(m.actuator_forcerange[0], (-0.3, 0.3))
    controller.write(d, [JointCommand(position=1.0, stiffness=100.0, max_effort=5.0)])
    np.testing.assert_allclose(m.actuator_forcerange[0], (-1.0, 1.0))


def test_tick_mask_is_even_where_the_rates_divide_and_alternates_at_400_hz():
    assert np.flatnonzero(loop.tick_mask(50, 0.001, 100)).tolist() == [0, 20, 40, 60, 80]
    assert loop.tick_mask(1000, 0.001, 7).all()
    assert np.diff(np.flatnonzero(loop.tick_mask(400, 0.001, 40))).tolist() == [3, 2] * 7 + [3]
    assert loop.tick_pattern(400, 0.001) == (3, 2)


@pytest.mark.parametrize('rate_hz, pattern', [(129, (8, 8, 8, 7)), (400 / 3, (8, 7)), (125, (8,)), (2000, (1,))])
def test_tick_pattern_has_the_mean_tick_of_the_rate(rate_hz, pattern):
    """The pattern's ticks cover the steps of the rate's nearest fraction (129 Hz: 31 steps in 4 ticks)."""
    assert loop.tick_pattern(rate_hz, 0.001) == pattern
    for rate in (13.3, 77.0, 129.0, 134.0, 415.0):
        got = loop.tick_pattern(rate, 0.001)
        assert sum(got) / len(got) == pytest.approx(1000.0 / rate, rel=2e-3)
        assert max(got) - min(got) <= 1  # as even as the rate allows


# ------------------------------------------------------------------------------------------------------
# The SO-101 experiment


def hold_by_loop(params: HoldParams, duration: float = 1.0):
    """The slow, obvious reference: one MjData, PDController.write at every tick, mj_step in between."""
    m = hold.hold_model(params)
    controller = PDController(m, hold.so101_joints(), backend=params.backend)
    d = mujoco.MjData(m)
    d.qpos[:] += params.start_offset
    perturb.nudge(d.qpos)  # the same start as the batched run, nudged or not (PHYSAI_PERTURB)
    nstep = round(duration / params.timestep)
    t = params.timestep * np.arange(nstep)
    position, velocity = hold.reference(t)
    mask = loop.tick_mask(params.rate_hz, params.timestep, nstep)
    q = np.empty((nstep, m.nq))
    max_contacts = 0
    for k in range(nstep):
        if mask[k]:
            controller.write(d, [JointCommand(position=p, velocity=v, stiffness=params.kp,
                                              damping=params.kv, max_effort=params.max_effort)
                                 for p, v in zip(position[k], velocity[k])])
        mujoco.mj_step(m, d)
        q[k] = d.qpos
        max_contacts = max(max_contacts, d.ncon)
    return q, max_contacts


@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('rate_hz', [50, 400])
def test_batched_hold_matches_a_plain_loop_and_touches_nothing(backend, rate_hz):
    """The batched runner is the PDController loop (1e-9 rad), and no contact ever forms: contacts stay on."""
    params = HoldParams(rate_hz=rate_hz, backend=backend)
    q_loop, max_contacts = hold_by_loop(params)
    (batched,) = hold.hold_responses([params], duration=1.0)
    np.testing.assert_allclose(batched.q, q_loop, atol=1e-9, rtol=0)
    assert max_contacts == 0


@pytest.fixture(scope='module')
def table():
    return {(row['rate_hz'], row['backend']): row for row in registry.run('pd-rate')}


@pytest.fixture(scope='module')
def ensembles():
    return {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles()}


@pytest.fixture(scope='module')
def bare_ensembles():
    return {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles(armature=0.0)}


def chatters(row) -> bool:
    """A row chatters when its worst joint still moves in the last second, with a clear tone or not."""
    return row['p2p_rad'] is not None and row['p2p_rad'] >= hold.QUIET_P2P


def test_pd_rate_rows_have_the_documented_keys(table):
    for row in table.values():
        assert set(row) == {'rate_hz', 'backend', 'runs', 'chattering', 'p2p_rad', 'p2p_low', 'p2p_high',
                            'chatter_hz'}
    assert sorted(table) == sorted((r, b) for r in where_pd_runs.RATES_HZ for b in BACKENDS)


def test_in_loop_chatters_in_every_run_below_the_critical_rate_and_in_step_never_moves(ensembles):
    """The robust claims of the chapter: at 50 and 100 Hz every run of the in-loop ensemble chatters, by far
    (p2p > 0.01 rad, a hundred times QUIET_P2P); from 200 Hz on every run holds still, and in-step every run
    holds still at every rate (p2p < STILL_P2P)."""
    for rate in where_pd_runs.RATES_HZ:
        loop, step = ensembles[rate, 'in-loop'], ensembles[rate, 'in-step']
        assert step.state == 'still' and step.still == step.n >= hold.ENSEMBLE_PROBE
        if rate in (50, 100):
            assert loop.state == 'chatters' and loop.n == hold.ENSEMBLE_SIZE
            assert np.all(loop.worst_p2p_rad > 0.01) and not loop.diverged.any()
        else:
            assert loop.state == 'still' and loop.n == hold.ENSEMBLE_PROBE


def test_main_table_prints_what_the_ensemble_supports(table, ensembles):
    """Median and the middle 95% on the 1-2-5 series, the tone as the band of the middle half of the runs' tones: the
    50 Hz chatter is about 0.2 rad (9°) at 5-10 Hz (median 7 Hz), the 100 Hz one about 0.05 rad (3°) at 10-20 Hz."""
    assert (table[50, 'in-loop']['p2p_rad'], table[50, 'in-loop']['p2p_low'], table[50, 'in-loop']['p2p_high'],
            table[50, 'in-loop']['chatter_hz']) == (0.2, 0.1, 0.2, '5-10')
    assert (table[100, 'in-loop']['p2p_rad'], table[100, 'in-loop']['p2p_low'],
            table[100, 'in-loop']['p2p_high'], table[100, 'in-loop']['chatter_hz']) == (0.05, 0.02, 0.1, '10-20')
    a50, a100 = ensembles[50, 'in-loop'], ensembles[100, 'in-loop']
    assert robust.round_sig(math.degrees(a50.p2p.median), 1) == 9
    assert robust.round_sig(math.degrees(a100.p2p.median), 1) == 3
    assert np.nanmedian(a50.chatter_hz) == 7.0
    for rate in (200, 400, 1000):
        assert f"{table[rate, 'in-loop']['p2p_rad']:.2e}" == '< 1e-09'


def test_pd_rate_table_survives_a_last_bit_change(monkeypatch, table):
    """Every run nudged by 3e-11 rad (physai.engine.perturb): each chaotic run changes, the printed table does not."""
    exp = registry.get('pd-rate')
    plain = exp.table(list(table.values()))
    plain_sample = {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles()}[50, 'in-loop']
    monkeypatch.setenv('PHYSAI_PERTURB', '3e-11')
    where_pd_runs._rate_ensembles.cache_clear()
    try:
        nudged = exp.table(exp.run())
        moved = where_pd_runs.rate_ensembles()
    finally:
        where_pd_runs._rate_ensembles.cache_clear()
    assert nudged == plain
    # ... although the runs themselves did move: the chatter is chaotic
    sample = {(e.params.rate_hz, e.params.backend): e for e in moved}[50, 'in-loop']
    assert abs(sample.sample.worst_p2p_rad - plain_sample.sample.worst_p2p_rad) > 1e-6


def test_ensemble_runs_start_a_nanoradian_apart():
    """Run k of an ensemble is the configuration with every joint's start moved by k * ENSEMBLE_SPACING."""
    members = hold.ensemble_members(HoldParams(rate_hz=50, backend='in-loop'), 4)
    assert [m.start_offset for m in members] == [k * hold.ENSEMBLE_SPACING for k in range(4)]
    base, run = hold.hold_responses([members[0], members[3]], duration=0.002)
    assert 0 < np.max(np.abs(run.q - base.q)) < 1e-8  # 3e-9 rad at the start, a few steps later


def test_a_still_configuration_stops_at_the_probe_and_a_moving_one_gets_the_full_ensemble():
    e_still, e_loud = hold.hold_ensembles([HoldParams(rate_hz=400, backend='in-step'),
                                              HoldParams(rate_hz=50, backend='in-loop')], n=12, probe=4)
    assert (e_still.n, e_still.state, e_still.tone) == (4, 'still', None)
    assert (e_loud.n, e_loud.state, e_loud.chattering) == (12, 'chatters', 12)


def test_plotted_joint_chatters_in_every_run(ensembles, bare_ensembles):
    """The joint a figure shows does not depend on one run: the first joint that chatters in every run."""
    for e in list(ensembles.values()) + list(bare_ensembles.values()):
        if e.state == 'chatters':
            assert np.all(e.p2p_rad[:, e.joint] >= hold.QUIET_P2P)
            assert not np.all(e.p2p_rad[:, :e.joint] >= hold.QUIET_P2P, axis=0).any()
    assert hold.so101_joints()[ensembles[50, 'in-loop'].joint] == 'shoulder_lift'


def test_without_armature_most_chatter_is_broadband(bare_ensembles):
    """Armature 0: the in-loop joints chatter at every rate in every run, but only 1 kHz (a step-by-step flip at
    500 Hz) has a clear tone; at 50 ... 400 Hz most runs have no dominant frequency. In-step stays still."""
    for rate in where_pd_runs.RATES_HZ:
        loop = bare_ensembles[rate, 'in-loop']
        assert loop.state == 'chatters' and np.all(loop.worst_p2p_rad > 1e-3)
        assert bare_ensembles[rate, 'in-step'].state == 'still'
    assert [bare_ensembles[rate, 'in-loop'].tone for rate in (50, 100, 200, 400)] == ['broadband'] * 4
    assert bare_ensembles[1000, 'in-loop'].tone == '500'


def _twin_data(html: str) -> dict:
    import json
    import re
    return json.loads(re.search(r'<script[^>]*id="physai-twin-ch3-pd-rate-data"[^>]*>(.*?)</script>', html,
                                re.S).group(1))


def test_twin_says_what_the_table_says_and_its_traces_show_it(ensembles, bare_ensembles):
    """nbval leaves the twin's traces out (a chaotic run's draw); their robust features are checked here: each
    frame's text is its ensemble's summary, and its trace moves (p2p >= QUIET_P2P over the last second) exactly
    where the ensemble chatters and is flat (to the twin's 4 digits) where it holds still."""
    data = _twin_data(where_pd_runs_panels.pd_twin().data)
    arrays, items, frames = data['arrays'], data['items'], data['frames']
    combos = [(rate, backend, armature) for rate in where_pd_runs.RATES_HZ for backend in BACKENDS
              for armature in where_pd_runs_panels.TWIN_ARMATURES]
    assert len(frames) == len(combos)
    names = hold.so101_joints()
    for (rate, backend, armature), frame in zip(combos, frames):
        e = (ensembles if armature else bare_ensembles)[rate, backend]
        trace = [items[i] for i in frame[0] if items[i]['k'] == 'l' and items[i]['n'].startswith('q (')]
        texts = [items[i]['s'] for i in frame[0] if items[i]['k'] == 't']
        assert texts == [where_pd_runs_panels.ensemble_text(e)]
        assert trace[0]['n'] == f'q ({names[e.joint]}, run 1 of {e.n})'
        t, q_deg = np.array(arrays[trace[0]['x']], dtype=float), np.array(arrays[trace[0]['y']], dtype=float)
        last = t >= t[-1] - hold.SETTLE_WINDOW + 0.5 * hold.PHYSICS_TIMESTEP
        p2p = math.radians(np.ptp(q_deg[last]))
        if e.state == 'chatters':
            assert p2p >= hold.QUIET_P2P
        else:  # flat to the twin's 4 significant digits
            assert np.ptp(q_deg[last]) <= 10.0 ** (math.floor(math.log10(np.max(np.abs(q_deg)))) - 3)


def test_chatter_frequency_finds_a_tone_and_refuses_broadband_motion():
    """A tone (even one that wanders by a hertz) is found; noise, two far-apart tones and drift are None."""
    t = np.arange(1000) * 1e-3
    rng = np.random.default_rng(0)
    assert hold.chatter_frequency(t, np.sin(2 * np.pi * 7 * t)) == 7.0
    wandering = np.sin(2 * np.pi * (7 * t + 0.15 * np.sin(2 * np.pi * t)))  # 7 ± 0.9 Hz over the second
    assert hold.chatter_frequency(t, wandering) == 7.0
    assert hold.chatter_frequency(t, rng.standard_normal(t.size)) is None
    assert hold.chatter_frequency(t, np.sin(2 * np.pi * 8 * t) + 0.9 * np.sin(2 * np.pi * 98 * t)) is None
    assert hold.chatter_frequency(t, t + 0.01 * np.sin(2 * np.pi * 20 * t)) is None  # drift: 1 Hz bin


def test_in_loop_chatters_at_low_rates_and_in_step_is_quiet_wherever_it_does(table):
    """The PD sampled at 50 and 100 Hz chatters (p2p > 0.01 rad); the same gains in the step stay still."""
    loud = [rate for rate in where_pd_runs.RATES_HZ if chatters(table[rate, 'in-loop'])]
    assert loud == [50, 100]
    for rate in where_pd_runs.RATES_HZ:
        quiet = table[rate, 'in-step']
        assert not chatters(quiet) and quiet['p2p_rad'] < 1e-6
        if rate in loud:
            assert table[rate, 'in-loop']['p2p_rad'] > 0.01


def test_chatter_is_where_the_tick_growth_exceeds_one(table):
    """Chapter 1's bound with the tick as the step: growth > 1 exactly at the rates that chatter."""
    m = hold.hold_model(HoldParams())
    d = mujoco.MjData(m)
    d.qpos[:] = hold.STANDBY
    mujoco.mj_forward(m, d)
    inertia = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, inertia)
    for rate in where_pd_runs.RATES_HZ:
        growth = max(loop.tick_growth(rate_hz=rate, kp=hold.SO101_KP, kv=hold.SO101_KV,
                                         inertia=i, damping=0.6) for i in np.diag(inertia))
        assert (growth > 1) == chatters(table[rate, 'in-loop'])


@pytest.mark.parametrize('integrator, tol', [('Euler', 1e-12), ('implicitfast', 1e-4)])
def test_backends_agree_at_1khz(integrator, tol):
    """At 1 kHz the tick is the physics step: identical under Euler (kv explicit in both), within 1e-4 rad
    over the whole move and hold under implicitfast (only the step treats kv implicitly)."""
    a, b = hold.hold_responses([HoldParams(rate_hz=1000, backend=backend, integrator=integrator)
                                   for backend in BACKENDS])
    assert np.max(np.abs(a.q - b.q)) < tol


def test_without_armature_in_loop_chatters_even_at_1khz_and_in_step_does_not():
    a, b = hold.hold_responses([HoldParams(rate_hz=1000, backend=backend, armature=0.0)
                                   for backend in BACKENDS])
    assert a.chatters and a.chatter_hz == 500.0 and a.worst_p2p_rad > 1e-3  # one step up, one down
    assert not b.chatters and b.chatter_hz is None and not b.diverged


def test_feedforward_outside_the_clamp_overshoots_the_move():
    """kv*velocity as qfrc_applied escapes the forcerange while moving: the arm overshoots by far."""
    clamped, applied = hold.hold_responses(
        [HoldParams(rate_hz=1000, feedforward=f) for f in loop.FEEDFORWARD], duration=1.0)
    assert np.max(np.abs(clamped.q - clamped.target)) < 0.05
    assert np.max(np.abs(applied.q - applied.target)) > 0.3


# ------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize('kwargs, message', [
    ({'position': math.nan}, 'position must be a finite number rad'),
    ({'stiffness': -1.0}, 'stiffness must be a finite number >= 0'),
    ({'damping': math.inf}, 'damping must be a finite number >= 0'),
    ({'max_effort': 0.0}, 'max_effort must be > 0'),
    ({'effort': '1'}, 'effort must be a finite number'),
])
def test_bad_joint_command_raises_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JointCommand(**kwargs)


@pytest.mark.parametrize('kwargs, message', [
    ({'rate_hz': 0}, 'rate_hz must be a finite number > 0 Hz, got 0'),
    ({'backend': 'firmware'}, 'backend must be one of in-loop, in-step'),
    ({'timestep': 0.2}, r'timestep must be in \(0, 0.1\] s'),
    ({'integrator': 'leapfrog'}, 'integrator must be one of'),
    ({'armature': -0.1}, 'armature must be a finite number >= 0'),
    ({'kp': 0.0}, 'kp must be a finite number > 0 N·m/rad, got 0.0'),
    ({'feedforward': 'nowhere'}, 'feedforward must be one of in-clamp, applied'),
    ({'start_offset': 1e-3}, r'start_offset must be a number in \[-1e-06, 1e-06\] rad, got 0.001'),
])
def test_bad_hold_params_raise_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HoldParams(**kwargs)


def test_bad_controller_setup_and_commands_raise():
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='Euler', gear=1, limits=''))
    d = mujoco.MjData(m)
    with pytest.raises(ValueError, match="joint must name a joint of the model, got 'elbow'"):
        PDController(m, ['elbow'])
    with pytest.raises(ValueError, match='backend must be one of'):
        PDController(m, ['hinge'], backend='firmware')
    controller = PDController(m, ['hinge'])
    with pytest.raises(ValueError, match=r'one JointCommand per joint \(1\), got 2'):
        controller.write(d, [JointCommand(), JointCommand()])
    with pytest.raises(ValueError, match='commands\\[0\\] must be a JointCommand'):
        controller.write(d, [0.3])
    with pytest.raises(ValueError, match='integrator must be one of'):
        loop.tick_growth(rate_hz=100, kp=1, kv=0, inertia=1, integrator='leapfrog')


def test_quiet_controller_setup_with_actuators_warns_nothing():
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='Euler', gear=1, limits=''))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        PDController(m, ['hinge'], backend='in-step')


@pytest.mark.parametrize('n', [1, 2, 5, 20])
def test_held_pd_tick_is_the_zero_order_hold_map(n):
    """One held tick of n steps: v' = v + T*a, q' = q + T*v + (n+1)/(2n)*T²*a, T = n*h (no joint damping)."""
    h, w2, c = 1e-3, 3.0e4, 90.0
    q, v = 0.3, -1.2
    a = -w2 * q - c * v
    T, beta = n * h, (n + 1) / (2 * n)
    q1, v1 = loop.zoh_step(q, v, lambda q_, v_: -w2 * q_ - c * v_, h, substeps=(n,))
    assert v1 == pytest.approx(v + T * a, rel=1e-12)
    assert q1 == pytest.approx(q + T * v + beta * T**2 * a, rel=1e-12)


def test_in_step_growth_per_second_does_not_depend_on_the_controller_rate():
    """In-step the tick only refreshes the setpoint: growth per tick ** rate is the same at every rate."""
    per_second = [where_pd_runs.worst_growth(rate_hz=r, backend='in-step') ** r for r in (50, 100, 200, 1000)]
    np.testing.assert_allclose(per_second, per_second[-1], rtol=1e-9)


@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('armature', [hold.SO101_ARMATURE, 0.0])
def test_growth_curve_is_tick_growth_for_the_worst_joint(backend, armature):
    """The panel's vectorized curve is max over joints of tick_growth, to rounding, even or uneven ticks."""
    rates = list(where_pd_runs_panels.PANEL_RATES_HZ) + [129.0, 133.0, 134.0]
    curve = where_pd_runs.growth_curve(rates, backend=backend, armature=armature)
    damping = float(hold.hold_model(HoldParams()).dof_damping[0])
    expected = [max(loop.tick_growth(rate_hz=r, kp=hold.SO101_KP, kv=hold.SO101_KV, inertia=i,
                                        damping=damping, backend=backend)
                    for i in where_pd_runs.standby_inertia(armature)) for r in rates]
    np.testing.assert_allclose(curve, expected, rtol=1e-12)


def test_panel_slider_moves_redraw_only_the_animated_artists():
    """Rate, kp and backend moves keep the axes (no full redraw): the live panel stays under 100 ms."""
    panel = where_pd_runs_panels.pd_panel()
    before = panel.full_redraws
    for change in ({'rate_hz': 120.0}, {'kp': 1500.0}, {'backend': 'in-step'}, {'rate_hz': 400.0},
                   {'kp': 700.0}, {'backend': 'in-loop'}):
        panel.update(**change)
        assert panel.error is None, panel.error
    assert panel.full_redraws == before


def test_panel_survives_extreme_settings_without_errors():
    panel = where_pd_runs_panels.pd_panel()
    for change in ({'backend': 'in-step'}, {'armature': 0.0, 'rate_hz': 1000.0}, {'kp': 30000.0},
                   {'timestep': 0.02, 'integrator': 'Euler'}, {'kv': 0.0, 'backend': 'in-loop'}):
        panel.update(**change)
        assert panel.error is None, panel.error
    panel.reset()
    assert panel.values['rate_hz'] == 50.0 and panel.error is None


def test_growth_saturates_to_inf_instead_of_overflowing():
    """kp 30000 without armature under RK4 at 0.5 ms grows past any float per tick: that is 'diverged', shown as
    inf, not an OverflowError in red on the panel."""
    for backend in BACKENDS:
        growth = where_pd_runs.growth_curve([10.0, 50.0, 1000.0], backend=backend, kp=30000.0, armature=0.0,
                                      timestep=0.0005, integrator='RK4')
        assert np.all(growth > 1)
    assert np.isinf(where_pd_runs.growth_curve([10.0], backend='in-step', kp=30000.0, armature=0.0, timestep=0.0005,
                                         integrator='RK4')[0])
    panel = where_pd_runs_panels.pd_panel()
    panel.update(kp=30000.0, armature=0.0, timestep=0.0005, integrator='RK4')
    assert panel.error is None
