"""physai.engine.pendulum: chapter 2's pendulum runner against a plain mj_step loop (a hand-written MJCF), the
command held at 60 Hz and delayed whole, and the explicit and implicit PD compared in MuJoCo."""

import math
import re

import mujoco
import numpy as np
import pytest

from physai.engine import pendulum
from physai.engine.pendulum import Command, PendulumParams, Square, Step
from physai.laws.drives import DCMotor, DelayedPD, IdealPD, ImplicitPD, RemotizedPD


@pytest.mark.parametrize('make, message', [
    (lambda: Square(period=0.0), 'period must be a finite number > 0 s, got 0.0'),  # np.mod by 0: NaN, then low
    (lambda: Square(period=-2.0), 'period must be a finite number > 0 s, got -2.0'),
    (lambda: Square(high=math.nan), 'high must be a finite number rad, got nan'),
    (lambda: Step(at=math.inf), 'at must be a finite number s, got inf'),
    (lambda: Step(low=None), 'low must be a finite number rad, got None'),
])
def test_a_command_shape_that_is_no_command_is_refused_by_name(make, message):
    with pytest.raises(ValueError, match=message):
        make()

S, E = 12.0, 6.0  # stall torque and cap of the test motor (test_drives.py's)

# A pendulum written out by hand: hinge about y, hanging at q = 0, a 1 kg capsule 0.6 m long.
MOTOR_XML = """
<mujoco>
  <option timestep="0.002777777777777778" integrator="implicitfast"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.6" size="0.05" mass="1"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge"/></actuator>
</mujoco>
"""


def test_delayed_actuator_on_a_constant_command_is_not_delayed_at_all():
    """The buffer starts full of the first command, so a run that starts commanded is not delayed."""
    runs = pendulum.simulate([DelayedPD(kp=100.0, kv=5.0, delay=d) for d in (0, 48)], command=pendulum.HORIZONTAL,
                      duration=1.0)
    np.testing.assert_array_equal(runs[0].q, runs[1].q)


def test_command_delay_only_shifts_the_response_of_a_pendulum_at_rest():
    """The feedback is not delayed, so the delayed run is the undelayed one, d steps later."""
    d = 12
    base, late = pendulum.simulate([DelayedPD(kp=100.0, kv=5.0, delay=k) for k in (0, d)], duration=2.0)
    np.testing.assert_allclose(late.q[d:], base.q[:-d], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# the runner against MuJoCo


def _motor_loop(actuator, command, nstep, *, decimation=6, velocity=None, effort=None,
                delay_position_only=False):
    """The reference: a hand-written MJCF, one mj_step at a time, torque from the current state.

    ``command``, ``velocity``, ``effort`` are functions of time (the last two 0 when None), sampled at
    the 60 Hz ticks and delayed together (or, with ``delay_position_only``, only the position).
    """
    m = mujoco.MjModel.from_xml_string(MOTOR_XML)
    d = mujoco.MjData(m)
    h = m.opt.timestep
    q, tau = [0.0], []
    ticks = [h * decimation * (k // decimation) for k in range(nstep)]
    cmds = [(float(command(t)), float(velocity(t)) if velocity else 0.0, float(effort(t)) if effort else 0.0)
            for t in ticks]
    for k in range(nstep):
        late = cmds[max(k - actuator.delay, 0)]
        seen = (late[0], *cmds[k][1:]) if delay_position_only else late
        tau.append(float(actuator.torque(d.qpos[0], d.qvel[0], *seen)))
        d.ctrl[0] = tau[-1]
        mujoco.mj_step(m, d)
        q.append(d.qpos[0])
    return np.array(q), np.array(tau)


@pytest.mark.parametrize('actuator', [
    IdealPD(kp=100.0, kv=5.0),
    IdealPD(kp=400.0, kv=20.0, forcerange=2.0),
    DCMotor(kp=100.0, kv=5.0, forcerange=E, saturation_effort=S, velocity_limit=4.0),
    DelayedPD(kp=100.0, kv=5.0, delay=12),
    RemotizedPD(kp=100.0, kv=5.0, delay=6, table=((0.0, 6.0), (math.pi / 2, 3.5))),
], ids=['ideal', 'effort-limited', 'dc-motor', 'delayed', 'remotized'])
def test_explicit_runner_equals_a_plain_mj_step_loop(actuator):
    run = pendulum.simulate([actuator], command=Square(period=1.0), duration=2.0)[0]
    ref, _ = _motor_loop(actuator, Square(period=1.0), len(run.q) - 1)
    np.testing.assert_allclose(run.q, ref, rtol=0, atol=1e-12)


def _velocity(t):
    return 2.0 * np.cos(2 * np.pi * np.asarray(t))


def _effort(t):
    return 1.5 * np.sin(3.0 * np.asarray(t)) + 0.5


@pytest.mark.parametrize('actuator', [
    IdealPD(kp=100.0, kv=5.0, forcerange=4.0),
    DCMotor(kp=100.0, kv=5.0, forcerange=E, saturation_effort=S, velocity_limit=4.0),
    DelayedPD(kp=100.0, kv=5.0, delay=12),
    RemotizedPD(kp=100.0, kv=5.0, delay=18, table=((0.0, 6.0), (math.pi / 2, 3.5))),
], ids=['ideal', 'dc-motor', 'delayed', 'remotized'])
def test_velocity_and_effort_commands_are_held_and_delayed_together_with_the_position(actuator):
    """A delayed PD sees the whole command (q*, qd*, tau_ff) of d steps ago, not just a late q*."""
    command = Command(position=Square(period=1.0), velocity=_velocity, effort=_effort)
    run = pendulum.simulate([actuator], command=command, duration=2.0)[0]
    ref, tau = _motor_loop(actuator, Square(period=1.0), len(run.q) - 1, velocity=_velocity,
                           effort=_effort)
    np.testing.assert_allclose(run.q, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.torque, tau, rtol=0, atol=1e-9)
    ticks = run.pendulum.timestep * 6 * (np.arange(len(tau)) // 6)
    np.testing.assert_array_equal(run.commands[:-1], np.stack([Square(period=1.0)(ticks), _velocity(ticks),
                                                               _effort(ticks)], axis=1))
    np.testing.assert_array_equal(run.command, run.commands[:, 0])
    if actuator.delay:
        # delaying the position alone is a different run: the velocity and effort arrive early
        position_only, _ = _motor_loop(actuator, Square(period=1.0), len(run.q) - 1, velocity=_velocity,
                                       effort=_effort, delay_position_only=True)
        assert np.max(np.abs(position_only - run.q)) > 1e-3


@pytest.mark.parametrize('delay', [1, 5, 24])
def test_delayed_pd_holds_the_whole_first_command_right_after_a_reset(delay):
    """For its first delay steps (plus the 6 steps the first tick is held anyway) the actuator applies
    the first command (q*, qd*, tau_ff), all three parts, never zeros."""
    pd = DelayedPD(kp=100.0, kv=5.0, delay=delay)
    command = Command(position=lambda t: 0.3 + 2 * t, velocity=lambda t: 1.0 - 5 * t,
                      effort=lambda t: 0.8 + 9 * t)
    run = pendulum.simulate([pd], command=command, duration=0.5)[0]
    first = (0.3, 1.0, 0.8)
    held = delay + run.pendulum.decimation
    for k in range(held):
        assert run.torque[k] == pd.torque(run.q[k], run.v[k], *first)
    second = tuple(run.commands[run.pendulum.decimation])  # the 60 Hz tick at 1/60 s
    assert second != pytest.approx(first)
    assert run.torque[held] == pd.torque(run.q[held], run.v[held], *second)
    assert pd.torque(0.0, 0.0, *first) != pd.torque(0.0, 0.0, 0.0, 0.0, 0.0)
    for part in range(3):  # each part alone is held too
        only = [0.0, 0.0, 0.0]
        only[part] = first[part]
        parts = dict(zip(('position', 'velocity', 'effort'), only))
        run = pendulum.simulate([pd], command=Command(**{k: (lambda t, x=x: x + 3 * t) for k, x in parts.items()}),
                         duration=0.2)[0]
        for k in range(held):
            assert run.torque[k] == pd.torque(run.q[k], run.v[k], *only)


def test_a_zero_velocity_and_effort_command_is_the_position_command_to_the_bit():
    for actuator in (IdealPD(kp=100.0, kv=5.0), DelayedPD(kp=100.0, kv=5.0, delay=24),
                     DCMotor(kp=100.0, kv=5.0, forcerange=E, saturation_effort=S, velocity_limit=4.0)):
        plain = pendulum.simulate([actuator], command=Square(), duration=3.0)[0]
        full = pendulum.simulate([actuator], command=Command(position=Square(), velocity=0.0, effort=0.0),
                          duration=3.0)[0]
        np.testing.assert_array_equal(plain.q, full.q)
        np.testing.assert_array_equal(plain.torque, full.torque)


def test_an_implicit_pd_takes_a_position_command_only():
    with pytest.raises(ValueError, match='command must be a position command'):
        pendulum.simulate([ImplicitPD(kp=100.0, kv=5.0)], command=Command(position=1.0, velocity=0.5))
    with pytest.raises(ValueError, match='effort must be a finite number'):
        Command(effort=math.nan)


def test_command_is_held_between_60_hz_ticks():
    p = PendulumParams()
    cmds = pendulum.held_commands(lambda t: t, p, 20)
    assert p.decimation == 6
    assert cmds.shape == (20, 3)
    np.testing.assert_allclose(cmds[:, 0], np.repeat([0.0, 1 / 60, 2 / 60, 3 / 60], 6)[:20])
    np.testing.assert_array_equal(cmds[:, 1:], 0.0)  # a plain function is a position command
    full = pendulum.held_commands(Command(position=1.0, velocity=lambda t: -t, effort=lambda t: 2 * t), p, 20)
    np.testing.assert_allclose(full, np.stack([np.ones(20), -cmds[:, 0], 2 * cmds[:, 0]], axis=1))


def test_implicit_runs_are_bit_identical_to_a_loop_over_mj_step():
    pd = ImplicitPD(kp=100.0, kv=5.0)
    run = pendulum.simulate([pd], command=Step(), duration=2.0)[0]
    m = pendulum.pendulum_model(PendulumParams(), pd)
    d = mujoco.MjData(m)
    q = [0.0]
    for k in range(len(run.q) - 1):
        d.ctrl[0] = Step()(m.opt.timestep * 6 * (k // 6))
        mujoco.mj_step(m, d)
        q.append(d.qpos[0])
    np.testing.assert_array_equal(run.q, q)


def test_pendulum_holds_horizontal_with_tau_g():
    assert pendulum.TAU_G == pytest.approx(2.943)
    m = pendulum.pendulum_model(PendulumParams())
    d = mujoco.MjData(m)
    d.qpos[0] = math.pi / 2
    mujoco.mj_forward(m, d)
    assert d.qfrc_bias[0] == pytest.approx(pendulum.TAU_G, rel=1e-12)
    assert d.M[0] == pytest.approx(pendulum.LINK_INERTIA, rel=1e-12)


def test_implicit_equals_ideal_pd_to_first_order_in_the_timestep():
    """Same gains, same law: only kv's treatment differs, a gap of order h. At h = 0.1 ms the two
    step responses stay within 2 mrad (0.12°) over 4 s, and shrinking h tenfold shrinks the gap
    tenfold."""
    gaps = []
    for h in (1e-3, 1e-4):
        explicit, implicit = pendulum.simulate([IdealPD(kp=100.0, kv=5.0), ImplicitPD(kp=100.0, kv=5.0)],
                                        pendulum=PendulumParams(timestep=h), duration=4.0)
        gaps.append(np.max(np.abs(explicit.q - implicit.q)))
    assert gaps[1] < 2e-3
    assert gaps[0] / gaps[1] == pytest.approx(10, rel=0.1)
    explicit, implicit = pendulum.simulate([IdealPD(kp=100.0, kv=5.0), ImplicitPD(kp=100.0, kv=5.0)])
    assert np.max(np.abs(explicit.q - implicit.q)) < 0.05  # at the Experiment's 1/360 s: 2° at most


def test_explicit_pd_is_mujocos_position_actuator_under_euler():
    """Euler takes kv explicitly, exactly what a torque computed from the step's start does."""
    for h in (pendulum.TIMESTEP, 0.01):
        for kv in (5.0, 50.0):
            explicit = pendulum.simulate([IdealPD(kp=100.0, kv=kv)], pendulum=PendulumParams(timestep=h))[0]
            euler = pendulum.simulate([ImplicitPD(kp=100.0, kv=kv)],
                               pendulum=PendulumParams(timestep=h, integrator='Euler'))[0]
            assert explicit.diverged == euler.diverged
            np.testing.assert_allclose(explicit.q, euler.q, rtol=0, atol=1e-12)


def test_the_damping_sweeps_largest_kv_would_blow_up_the_explicit_pd():
    """kv = 100 at 1/360 s gives h*kv/I = 2.2 > 2: fine implicitly, divergent explicitly."""
    explicit, implicit = pendulum.simulate([IdealPD(kp=100.0, kv=100.0), ImplicitPD(kp=100.0, kv=100.0)])
    assert explicit.diverged and not implicit.diverged
    assert pendulum.TIMESTEP * 100.0 / pendulum.LINK_INERTIA > 2


def test_an_implicit_pd_held_at_its_forcerange_is_the_explicit_one():
    """While the force is clamped it does not depend on velocity, so implicitfast has no kv to fold
    into the step: with E = 1 N·m (clamped throughout) implicit and explicit agree to the bit."""
    implicit, explicit = pendulum.simulate([ImplicitPD(kp=400.0, kv=20.0, forcerange=1.0),
                                     IdealPD(kp=400.0, kv=20.0, forcerange=1.0)],
                                    command=Step(at=0.0), duration=6.0)
    np.testing.assert_array_equal(implicit.q, explicit.q)


# ---------------------------------------------------------------------------------------------
# the fast explicit loop against the chapter's worked solution


def test_interp_limit_is_numpys_interp_to_the_bit():
    """The remotized PD's table lookup in plain Python returns np.interp's own float, at the table's points,
    between them, beyond both ends and for one-point and many-point tables."""
    rng = np.random.default_rng(7)
    tables = [((0.0, 6.0), (math.pi / 2, 3.5)), ((0.3, 2.0),), ((-1.0, 0.0), (0.0, 5.0), (0.7, 5.0), (2.5, 1.25)),
              tuple(zip(np.sort(rng.uniform(-3, 3, 9)), rng.uniform(0, 10, 9)))]
    for table in tables:
        angles, limits = (list(map(float, column)) for column in zip(*table))
        xs = np.concatenate([angles, np.nextafter(angles, np.inf), np.nextafter(angles, -np.inf),
                             rng.uniform(-4, 4, 20_000), [-1e300, 1e300]])
        for x in xs.tolist():
            expected = float(np.interp(x, angles, limits))
            got = pendulum.interp_limit(x, angles, limits)
            assert got == expected or (math.isnan(got) and math.isnan(expected)), (table, x, got, expected)


FAST_GRID = [IdealPD(kp=100.0, kv=5.0), IdealPD(kp=400.0, kv=20.0, forcerange=2.0), IdealPD(kp=3000.0, kv=100.0),
             DCMotor(kp=100.0, kv=5.0, forcerange=E, saturation_effort=S, velocity_limit=4.0),
             DCMotor(kp=1000.0, kv=1.0, forcerange=100.0, saturation_effort=S, velocity_limit=40.0),
             DelayedPD(kp=100.0, kv=5.0, delay=12), DelayedPD(kp=1000.0, kv=30.0, delay=60),
             RemotizedPD(kp=100.0, kv=5.0, delay=6, table=((0.0, 6.0), (math.pi / 2, 3.5))),
             RemotizedPD(kp=300.0, kv=0.1, delay=0, table=((0.0, 100.0), (math.pi / 2, 50.0))),
             IdealPD(kp=1e11, kv=0.0)]  # the first torque is past MuJoCo's bad acceleration: it resets the run


@pytest.mark.parametrize('integrator', ['Euler', 'implicitfast', 'RK4'])
@pytest.mark.parametrize('timestep', [0.0005, 1 / 360, 0.02])
def test_the_fast_explicit_loop_is_the_worked_solution_to_the_bit(integrator, timestep):
    """simulate's loop gives the chapter's printed _run_explicit's q, qd, torque and verdict exactly, settled,
    limited, delayed, swinging and diverging runs alike (running away past mj.SPEED_BOUND, or reset by MuJoCo)."""
    pend = PendulumParams(timestep=timestep, integrator=integrator, armature=0.01)
    nstep = round(2.0 / timestep)
    for command in (Step(), Command(position=Square(period=1.0), velocity=_velocity, effort=_effort)):
        commands = pendulum.held_commands(command, pend, nstep)
        for actuator in FAST_GRID:
            slow = pendulum._run_explicit(actuator, pend, commands, 0.1, -0.2)
            fast = pendulum.run_explicit_fast(actuator, pend, commands, 0.1, -0.2)
            for a, b in zip(slow[:3], fast[:3]):
                np.testing.assert_array_equal(a, b)
            assert slow[3] == fast[3], actuator


@pytest.mark.parametrize('actuator', [ImplicitPD(kp=10.0, kv=1.0), IdealPD(kp=10.0, kv=1.0)],
                         ids=['implicit', 'explicit'])
@pytest.mark.parametrize('case', ['nan command', '1e308 command', 'v0 1e308'])
def test_a_command_or_start_mujoco_rejects_is_a_diverged_run_not_a_calm_one(actuator, case):
    """MuJoCo zeroes a NaN or huge control and resets a huge speed, then carries on: the record stayed finite and
    was reported normal before its warnings counted as divergence."""
    kwargs = {'nan command': dict(command=lambda t: np.full_like(t, np.nan)),
              '1e308 command': dict(command=lambda t: np.full_like(t, 1e308)),
              'v0 1e308': dict(v0=1e308)}[case]
    run = pendulum.simulate([actuator], duration=0.5, **kwargs)[0]
    assert run.diverged and len(run.q) == 1  # flagged where MuJoCo flagged it: at the first step


@pytest.mark.parametrize('actuator', [ImplicitPD(kp=1e308, kv=1.0), IdealPD(kp=1e308, kv=1.0)],
                         ids=['implicit', 'explicit'])
def test_a_gain_of_1e308_diverges_when_the_step_command_arrives(actuator):
    run = pendulum.simulate([actuator], duration=1.0, command=Step(at=0.5))[0]
    assert run.diverged and run.t[-1] <= 0.5 + 1e-9


def test_the_same_gain_that_never_meets_a_command_change_is_an_honest_calm_run():
    run = pendulum.simulate([IdealPD(kp=1e308, kv=1.0)], duration=0.4, command=Step(at=0.5))[0]
    assert not run.diverged and np.all(run.q == run.q[0])


@pytest.mark.parametrize('call, error, words', [
    (lambda: pendulum.simulate(['ideal']), TypeError, ["actuators[0] must be an actuator config", "'ideal'"]),
    (lambda: pendulum.simulate(IdealPD(kp=1.0)), TypeError, ['actuators must be a sequence']),
    (lambda: pendulum.simulate([IdealPD(kp=1.0)], pendulum='x'), TypeError, ['pendulum must be a PendulumParams']),
    (lambda: pendulum.simulate([IdealPD(kp=1.0)], q0=None), ValueError, ['q0 must be a finite number', 'None']),
    (lambda: pendulum.simulate([IdealPD(kp=1.0)], v0=math.inf), ValueError, ['v0 must be a finite number']),
    (lambda: PendulumParams(control_rate=1e-300), ValueError, ['control_rate must be at least one command per',
                                                               'MAX_STEPS', 'got 1e-300']),
    (lambda: pendulum.simulate([DelayedPD(kp=1.0, delay=10**30)]), ValueError, ['delay must be a whole number in']),
])
def test_entry_points_refuse_wrong_types_and_ranges_by_name(call, error, words):
    """Each once ended in an AttributeError or an OverflowError deep inside the runner."""
    with pytest.raises(error) as err:
        call()
    assert all(w in str(err.value) for w in words), err.value


def test_the_slowest_control_rate_allowed_still_runs():
    p = PendulumParams(control_rate=1.0 / (0.5 * pendulum.mj.MAX_STEPS * pendulum.TIMESTEP))
    run = pendulum.simulate([IdealPD(kp=10.0)], pendulum=p, duration=0.1)[0]
    assert not run.diverged and p.decimation > len(run.q)


@pytest.mark.parametrize('answer, words', [('abc', 'position(t) must be a number or an array of numbers rad'),
                                           (None, 'position(t) must be a number'),
                                           ([1.0, 2.0], 'one value per tick time')])
def test_a_command_function_answering_no_numbers_is_named(answer, words):
    """A function answering text once ended in numpy's own 'could not convert string to float'."""
    with pytest.raises(ValueError, match=re.escape(words)):
        pendulum.simulate([IdealPD(kp=10.0)], command=lambda t: answer, duration=0.1)


def test_a_duration_beyond_any_float_step_count_is_refused_not_an_overflow():
    with pytest.raises(ValueError, match='duration / timestep must be at most MAX_STEPS'):
        pendulum.simulate([IdealPD(kp=10.0)], duration=1e308)
