"""physai.laws.drives: chapter 2's torque laws (PD, DC-motor envelope, remotized limit, command delay) at
every clipping corner, the configs' input checks, and the implicit PD's law against MuJoCo's <position> force."""

import dataclasses
import math
import re

import mujoco
import numpy as np
import pytest

from physai.engine import pendulum
from physai.experiments import actuator_models
from physai.laws import drives
from physai.engine.pendulum import PendulumParams
from physai.laws.drives import DCMotor, DelayedPD, IdealPD, ImplicitPD, RemotizedPD


@pytest.mark.parametrize('table, message', [
    (((1.0, 2.0), (-1.0, 1.0)), r'table angles must be strictly increasing, got \[1.0, -1.0\]'),
    (((0.0, -1.0),), r'table torques must be >= 0 N·m, got \[-1.0\]'),
    ((), 'table must be one or more finite'),
    (None, 'table must be one or more finite'),
    (((0.0, math.nan),), 'table must be one or more finite'),
    ([[0.0, 1.0], [0.0, 2.0]], 'table angles must be strictly increasing'),
])
def test_remotized_limit_refuses_a_table_it_cannot_interpolate(table, message):
    """An unsorted table gave np.interp's nonsense (a limit of 2 N·m where the table said 1); an empty one a
    bare unpacking error."""
    with pytest.raises(ValueError, match=message):
        drives.remotized_limit(0.0, table)
    with pytest.raises(ValueError, match=message):
        RemotizedPD(kp=1.0, table=table)


def test_remotized_limit_reads_a_sound_table_as_before():
    table = ((-1.0, 1.0), (1.0, 3.0))
    assert drives.remotized_limit(0.0, table) == 2.0
    assert drives.remotized_limit(0.0, [list(p) for p in table]) == 2.0  # a list (unhashable) is checked each time
    np.testing.assert_array_equal(drives.remotized_limit(np.array([-2.0, 2.0]), table), [1.0, 3.0])


@pytest.mark.parametrize('kp, kv, message', [
    (-1.0, 0.0, 'kp must be a finite number >= 0 N·m/rad, got -1.0'),
    (math.nan, 0.0, 'kp must be a finite number >= 0'),
    (1.0, math.inf, 'kv must be a finite number >= 0 N·m·s/rad, got inf'),  # inf*0 was NaN with a warning
    (None, 0.0, 'kp must be a number or an array of numbers'),
    (np.array([1.0, -1.0]), 0.0, 'kp must be a finite number >= 0'),
])
def test_pd_torque_names_a_gain_out_of_range(kp, kv, message):
    with pytest.raises(ValueError, match=message):
        drives.pd_torque(0.1, 0.0, 0.0, 0.0, kp, kv)

S, E, V = 12.0, 6.0, 8.0  # stall torque, cap, no-load speed of the test motor


def _envelope(v):
    return drives.dc_motor_envelope(v, saturation_effort=S, forcerange=E, velocity_limit=V)


# ---------------------------------------------------------------------------------------------
# the torque laws


def test_dc_motor_at_rest_allows_the_full_cap_both_ways():
    assert _envelope(0.0) == (-E, E)
    # a cap above the stall torque: the stall torque limits
    low, high = drives.dc_motor_envelope(0.0, saturation_effort=4.0, forcerange=E, velocity_limit=V)
    assert (low, high) == (-4.0, 4.0)


def test_dc_motor_at_no_load_speed_cannot_push_forward():
    """At +V the back-EMF eats the whole supply: no forward torque, full braking torque."""
    assert _envelope(V) == (-E, 0.0)
    assert _envelope(-V) == (0.0, E)


def test_dc_motor_beyond_no_load_speed_must_brake():
    """Above V the allowed band excludes zero: the motor can only brake."""
    low, high = _envelope(1.25 * V)
    assert high == pytest.approx(S * (1 - 1.25)) and high < 0
    assert low == -E
    low, high = _envelope(-1.25 * V)
    assert low == pytest.approx(-S * (1 - 1.25)) and low > 0 and high == E


def test_dc_motor_band_closes_to_minus_cap_at_v_times_one_plus_e_over_s():
    vmax = V * (1 + E / S)
    for v in (vmax, 2 * vmax, 1e6):
        assert _envelope(v) == pytest.approx((-E, -E))
        assert _envelope(-v) == pytest.approx((E, E))


def test_dc_motor_envelope_is_linear_in_speed_between_its_corners():
    v = np.linspace(-V * (1 + E / S), V * (1 + E / S), 41)
    low, high = _envelope(v)
    np.testing.assert_allclose(high, np.minimum(S * (1 - v / V), E))
    np.testing.assert_allclose(low, np.maximum(S * (-1 - v / V), -E))


def test_dc_motor_clips_the_pd_torque_to_the_band():
    motor = DCMotor(kp=100.0, kv=5.0, forcerange=E, saturation_effort=S, velocity_limit=V)
    assert motor.torque(0.0, 0.0, 1.0) == E  # 100 N·m asked at rest: the cap
    assert motor.torque(0.0, 0.0, -1.0) == -E
    assert motor.torque(0.0, 0.0, 0.01) == pytest.approx(1.0)  # inside the band: the PD torque
    assert motor.torque(0.0, V, 10.0) == 0.0  # at +V forward torque is gone
    # beyond V even a zero PD torque becomes a brake
    q_target_zero_torque = 5.0 * 1.25 * V / 100.0
    assert motor.torque(0.0, 1.25 * V, q_target_zero_torque) == pytest.approx(S * (1 - 1.25))


def test_ideal_pd_is_the_clipped_pd_law():
    pd = IdealPD(kp=400.0, kv=20.0, forcerange=2.0)
    assert pd.torque(0.0, 0.0, 0.001) == pytest.approx(0.4)
    assert pd.torque(0.0, 0.0, 1.0) == 2.0
    assert pd.torque(0.0, 1.0, 0.0) == -2.0
    assert pd.torque(0.2, -0.5, 0.3, v_target=0.1, tau_ff=-0.7) == pytest.approx(
        400 * 0.1 + 20 * 0.6 - 0.7 if abs(400 * 0.1 + 20 * 0.6 - 0.7) < 2 else 2.0)
    unclipped = IdealPD(kp=400.0, kv=20.0)
    assert unclipped.torque(0.0, 0.0, 1.0) == 400.0


TABLE = ((-1.0, 2.0), (0.0, 4.0), (1.0, 1.0))


@pytest.mark.parametrize('q, limit', [(-1.0, 2.0), (-0.5, 3.0), (0.0, 4.0), (0.25, 3.25), (1.0, 1.0),
                                      (-3.0, 2.0), (7.0, 1.0)])
def test_remotized_limit_interpolates_between_points_and_holds_beyond_ends(q, limit):
    assert drives.remotized_limit(q, TABLE) == pytest.approx(limit)
    pd = RemotizedPD(kp=1000.0, kv=0.0, table=TABLE)
    assert pd.torque(q, 0.0, q + 10.0) == pytest.approx(limit)
    assert pd.torque(q, 0.0, q - 10.0) == pytest.approx(-limit)
    assert pd.torque(q, 0.0, q + 1e-4) == pytest.approx(0.1)  # inside the limit: plain PD


def test_delay_holds_the_first_command_never_zeros():
    commands = np.array([[0.7, 0.1, 0.2], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    out = drives.delay_commands(commands, 2)
    np.testing.assert_array_equal(out, commands[[0, 0, 0, 1]])
    np.testing.assert_array_equal(drives.delay_commands(commands, 0), commands)
    np.testing.assert_array_equal(drives.delay_commands(commands, 10), commands[[0, 0, 0, 0]])


def test_implicit_pd_law_is_mujocos_position_actuator_force():
    pd = ImplicitPD(kp=40.0, kv=2.0, forcerange=5.0)
    m = pendulum.pendulum_model(PendulumParams(), pd)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    for _ in range(50):
        d.qpos[0], d.qvel[0], d.ctrl[0] = rng.uniform(-3, 3), rng.uniform(-10, 10), rng.uniform(-3, 3)
        mujoco.mj_forward(m, d)
        assert pd.torque(d.qpos[0], d.qvel[0], d.ctrl[0]) == pytest.approx(d.actuator_force[0], abs=1e-12)


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize('make, message', [
    (lambda: IdealPD(kp=-1.0), 'kp must be a finite number >= 0 N·m/rad, got -1.0'),
    (lambda: IdealPD(kp=1.0, kv=math.nan), 'kv must be a finite number >= 0'),
    (lambda: IdealPD(kp=1.0, forcerange=0.0), 'forcerange must be > 0 N·m'),
    (lambda: ImplicitPD(kp=math.inf), 'kp must be a finite number'),
    (lambda: DCMotor(kp=1.0, forcerange=1.0, saturation_effort=0.0, velocity_limit=1.0),
     'saturation_effort must be a finite number > 0'),
    (lambda: DCMotor(kp=1.0, forcerange=1.0, saturation_effort=1.0, velocity_limit=-2.0),
     'velocity_limit must be a finite number > 0 rad/s, got -2.0'),
    (lambda: DelayedPD(kp=1.0, delay=-1), 'delay must be a whole number in [0, 1,000,000] physics steps, got -1'),
    (lambda: DelayedPD(kp=1.0, delay=1.5), 'delay must be a whole number'),
    (lambda: RemotizedPD(kp=1.0, table=((1.0, 1.0), (0.0, 2.0))), 'table angles must be strictly'),
    (lambda: RemotizedPD(kp=1.0, table=((0.0, -1.0),)), 'table torques must be >= 0'),
    (lambda: PendulumParams(timestep=0.0), 'timestep must be in (0, 0.1] s, got 0.0'),
    (lambda: PendulumParams(integrator='rk4'), 'integrator must be one of Euler, RK4'),
    (lambda: PendulumParams(armature=-0.1), 'armature must be a finite number >= 0'),
    (lambda: actuator_models.sweep('stifness'), 'param must be one of stiffness'),
])
def test_bad_input_names_the_parameter_the_value_and_what_is_allowed(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_configs_are_frozen_and_keyword_only():
    pd = IdealPD(kp=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pd.kp = 2.0
    with pytest.raises(TypeError):
        IdealPD(1.0)


@pytest.mark.parametrize('kwargs, words', [
    (dict(saturation_effort=0.0, forcerange=0.0, velocity_limit=0.0), 'saturation_effort must be a finite number > 0'),
    (dict(saturation_effort=2.0, forcerange=0.0, velocity_limit=1.0), 'forcerange must be > 0'),
    (dict(saturation_effort=2.0, forcerange=-1.0, velocity_limit=1.0),
     'forcerange must be > 0 N·m (inf for no limit), got -1.0'),
    (dict(saturation_effort=2.0, forcerange=1.0, velocity_limit=0.0), 'velocity_limit must be a finite number > 0'),
])
def test_the_dc_motor_envelope_refuses_limits_it_cannot_draw(kwargs, words):
    """Zero limits once divided by zero; a negative forcerange gave a band whose lower edge sat above its upper."""
    with pytest.raises(ValueError, match=re.escape(words)):
        drives.dc_motor_envelope(1.0, **kwargs)
    low, high = drives.dc_motor_envelope(1.0, saturation_effort=2.0, forcerange=math.inf, velocity_limit=1.0)
    assert low <= high


@pytest.mark.parametrize('commands, delay, words', [
    ([None, 1.0], 1, 'commands must be a number or an array of numbers'),
    ([0.0, 1.0], 10**30, 'delay must be a whole number in [0, 1,000,000] physics steps, got 10000000'),
    ([0.0, 1.0], True, 'delay must be a whole number'),
])
def test_delay_commands_refuses_none_and_a_delay_beyond_any_run(commands, delay, words):
    """None once became NaN silently and 10**30 an OverflowError."""
    with pytest.raises(ValueError, match=re.escape(words)):
        drives.delay_commands(commands, delay)
    assert drives.delay_commands([0.0, 1.0, 2.0], drives.MAX_DELAY_STEPS).tolist() == [0.0, 0.0, 0.0]


def test_the_longest_delay_is_as_many_steps_as_one_run_may_take():
    assert drives.MAX_DELAY_STEPS == pendulum.mj.MAX_STEPS
