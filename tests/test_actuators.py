"""Chapter 2's actuator models: the torque laws at every clipping corner, the pendulum runner against a
plain mj_step loop, the sweeps' physics, the implicit/explicit divergence map and MuJoCo's own
<dcmotor> and actuator delay."""

import dataclasses
import json
import math

import mujoco
import numpy as np
import pytest

from physai.engine import pendulum
from physai.experiments import actuator_models
from physai.interface import actuator_models_panels, plots
from physai.laws import drives
from physai.__main__ import main
from physai.engine.pendulum import Command, PendulumParams, Square, Step
from physai.laws.drives import DCMotor, DelayedPD, IdealPD, ImplicitPD, RemotizedPD
from physai.laws.sim import servo_sag

S, E, V = 12.0, 6.0, 8.0  # stall torque, cap, no-load speed of the test motor

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


def _envelope(v):
    return drives.dc_motor_envelope(v, saturation_effort=S, effort_limit=E, velocity_limit=V)


# ---------------------------------------------------------------------------------------------
# the torque laws


def test_dc_motor_at_rest_allows_the_full_cap_both_ways():
    assert _envelope(0.0) == (-E, E)
    # a cap above the stall torque: the stall torque limits
    low, high = drives.dc_motor_envelope(0.0, saturation_effort=4.0, effort_limit=E, velocity_limit=V)
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
    motor = DCMotor(kp=100.0, kv=5.0, effort_limit=E, saturation_effort=S, velocity_limit=V)
    assert motor.torque(0.0, 0.0, 1.0) == E  # 100 N·m asked at rest: the cap
    assert motor.torque(0.0, 0.0, -1.0) == -E
    assert motor.torque(0.0, 0.0, 0.01) == pytest.approx(1.0)  # inside the band: the PD torque
    assert motor.torque(0.0, V, 10.0) == 0.0  # at +V forward torque is gone
    # beyond V even a zero PD torque becomes a brake
    q_target_zero_torque = 5.0 * 1.25 * V / 100.0
    assert motor.torque(0.0, 1.25 * V, q_target_zero_torque) == pytest.approx(S * (1 - 1.25))


def test_ideal_pd_is_the_clipped_pd_law():
    pd = IdealPD(kp=400.0, kv=20.0, effort_limit=2.0)
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
    IdealPD(kp=400.0, kv=20.0, effort_limit=2.0),
    DCMotor(kp=100.0, kv=5.0, effort_limit=E, saturation_effort=S, velocity_limit=4.0),
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
    IdealPD(kp=100.0, kv=5.0, effort_limit=4.0),
    DCMotor(kp=100.0, kv=5.0, effort_limit=E, saturation_effort=S, velocity_limit=4.0),
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
                     DCMotor(kp=100.0, kv=5.0, effort_limit=E, saturation_effort=S, velocity_limit=4.0)):
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


def test_implicit_pd_law_is_mujocos_position_actuator_force():
    pd = ImplicitPD(kp=40.0, kv=2.0, effort_limit=5.0)
    m = pendulum.pendulum_model(PendulumParams(), pd)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    for _ in range(50):
        d.qpos[0], d.qvel[0], d.ctrl[0] = rng.uniform(-3, 3), rng.uniform(-10, 10), rng.uniform(-3, 3)
        mujoco.mj_forward(m, d)
        assert pd.torque(d.qpos[0], d.qvel[0], d.ctrl[0]) == pytest.approx(d.actuator_force[0], abs=1e-12)


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


# ---------------------------------------------------------------------------------------------
# the sweeps


def _turning_angle(effort):
    """Root of tau_g*(1 - cos q) = E*q between the balance angle and π, by bisection."""
    low, high = actuator_models.swing_angle(effort), math.pi
    for _ in range(60):
        mid = 0.5 * (low + high)
        if pendulum.TAU_G * (1 - math.cos(mid)) - effort * mid < 0:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def test_effort_limits_below_hold_torque_swing_about_where_gravity_equals_the_limit():
    """With E < tau_g the torque sits at +E, the damping term is gone, and the link swings
    undamped through the balance angle asin(E/tau_g), fastest there, between q = 0 and the
    turning angle where tau_g*(1 - cos q) = E*q (energy)."""
    sweep = actuator_models.sweep('effort-limit')
    for value, run, row in zip(sweep.values, sweep.runs, sweep.rows):
        tail = run.t >= run.t[-1] - 2.0
        if value < pendulum.TAU_G:
            balance = actuator_models.swing_angle(value)
            clipped = run.torque[tail[:-1]] == value
            lo, hi = run.q[tail].min(), run.q[tail].max()
            assert lo < balance < hi
            fastest = run.q[tail][np.argmax(np.abs(run.v[tail]))]
            assert fastest == pytest.approx(balance, abs=0.01)
            if _turning_angle(value) < math.pi / 2 - 0.1:
                assert np.all(clipped)  # never leaves the limit: no damping at all
                assert lo == pytest.approx(0.0, abs=0.01)
                assert row['p2p_rad'] == pytest.approx(_turning_angle(value), abs=0.01)
            else:
                # energy would carry it past horizontal, where the PD leaves the limit for an instant
                # and damps a little each swing
                assert np.mean(clipped) > 0.95 and row['p2p_rad'] > 1.0
        else:
            assert row['p2p_rad'] < 1e-3
            assert row['mean_angle_rad'] == pytest.approx(math.pi / 2 - servo_sag(400.0, pendulum.TAU_G), abs=1e-4)


def test_stiffness_sweep_error_is_chapter_one_sag():
    """At horizontal gravity pulls with tau_g*cos(e) at error e: the same balance as chapter 1."""
    for row in actuator_models.sweep('stiffness').rows:
        assert row['error_deg'] == pytest.approx(row['servo_sag_deg'], rel=3e-3)  # kp 10 is still creeping


def test_damping_sweep_overshoot_falls_as_damping_rises():
    rows = actuator_models.sweep('damping').rows
    overshoot = [row['overshoot_pct'] for row in rows]
    assert overshoot[0] > 50 and overshoot[2] < 0.1
    assert overshoot[:3] == sorted(overshoot[:3], reverse=True)


def test_velocity_limit_caps_the_speed_of_the_dc_motor():
    sweep = actuator_models.sweep('velocity-limit')
    for value, row in zip(sweep.values, sweep.rows):
        assert row['peak_speed'] < value
    rise = [row['rise_ms'] for row in sweep.rows]
    assert rise == sorted(rise, reverse=True)


def test_delay_adds_exactly_its_own_time_to_the_lag():
    rows = actuator_models.sweep('delay').rows
    for row in rows:
        assert row['lag_ms'] - rows[0]['lag_ms'] == pytest.approx(row['delay_ms'], abs=1e-6)
        assert row['overshoot_pct'] == pytest.approx(rows[0]['overshoot_pct'], abs=1e-6)


def test_joint_friction_stops_the_free_swing_sooner_the_larger_it_is():
    rows = actuator_models.sweep('friction').rows
    turns = [row['turns'] for row in rows]
    assert turns == sorted(turns, reverse=True)
    assert rows[0]['decay_s'] is None  # no friction: it never slows down for good (printed '-')
    assert rows[-1]['decay_s'] < rows[-2]['decay_s']


SWEEP_KEYS = {
    'stiffness': ['kp', 'error_deg', 'servo_sag_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'damping': ['kv', 'dampratio', 'error_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'armature': ['armature', 'error_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'friction': ['frictionloss', 'decay_s', 'turns', 'final_speed'],
    'effort-limit': ['effort_limit', 'mean_angle_rad', 'p2p_rad'],
    'velocity-limit': ['velocity_limit', 'peak_speed', 'error_deg', 'overshoot_pct', 'rise_ms',
                       'settling_s'],
    'delay': ['delay_steps', 'delay_ms', 'lag_ms', 'overshoot_pct'],
}


@pytest.mark.parametrize('param', sorted(SWEEP_KEYS))
def test_actuator_sweep_json_has_its_keys_and_five_rows(capsys, param):
    assert main(['actuator-sweep', param, '--json']) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and all(list(row) == SWEEP_KEYS[param] for row in rows)
    assert [row[SWEEP_KEYS[param][0]] for row in rows] == list(actuator_models.SWEEPS[param])
    assert main(['actuator-sweep', param]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == SWEEP_KEYS[param] and len(table) == 6


def test_actuator_sweep_rejects_an_unknown_parameter(capsys):
    assert main(['actuator-sweep', 'stifness']) == 2
    assert 'stiffness' in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# where implicit and explicit part ways


def test_growth_above_one_exactly_where_mujoco_diverges_on_the_map():
    """Chapter 1's growth per step, with kv explicit or implicit, predicts every cell of the map."""
    rows = actuator_models.divergence_map()
    for row in rows:
        assert (row['explicit_growth'] > 1) == (row['explicit'] == 'diverged'), row
        assert (row['implicit_growth'] > 1) == (row['implicit'] == 'diverged'), row
    parted = [r for r in rows if r['explicit'] == 'diverged' and r['implicit'] == 'stable']
    # chapter 1's bounds: explicit kv needs h²ω² < 4 - 2hc, implicit kv only h²ω² < 4 + 2hc
    assert parted and all(4 - 2 * r['h_c'] < r['h_omega'] ** 2 < 4 + 2 * r['h_c'] for r in parted)


def test_discrete_takes_the_spring_implicitly_and_holds_every_cell_of_the_map():
    """"Implicit damping cannot rescue a spring too stiff for the step" is a rule about implicitfast: MuJoCo's
    discrete integrator solves the step in M + hD + h²K, so it holds the cells where both other models diverge."""
    rows = actuator_models.divergence_map()
    both = [r for r in rows if r['explicit'] == 'diverged' and r['implicit'] == 'diverged']
    assert both and all(r['h_omega'] ** 2 > 4 for r in both)  # too stiff for the step under implicitfast
    assert all(r['discrete'] == 'stable' for r in rows)


def test_the_damping_sweeps_largest_kv_would_blow_up_the_explicit_pd():
    """kv = 100 at 1/360 s gives h*kv/I = 2.2 > 2: fine implicitly, divergent explicitly."""
    explicit, implicit = pendulum.simulate([IdealPD(kp=100.0, kv=100.0), ImplicitPD(kp=100.0, kv=100.0)])
    assert explicit.diverged and not implicit.diverged
    assert pendulum.TIMESTEP * 100.0 / pendulum.LINK_INERTIA > 2


# ---------------------------------------------------------------------------------------------
# MuJoCo 3.17's own <dcmotor> and actuator delay


def test_native_dcmotor_has_our_envelope_and_matches_our_motor_under_euler():
    rows = {(r['case'], r['integrator']): r['max_abs_diff'] for r in actuator_models.native_comparison()}
    assert rows[('dcmotor torque at full voltage vs dc_motor_envelope', '-')] <= 1e-12
    assert rows[('dcmotor, back-EMF compensated vs DCMotor', 'Euler')] <= 1e-12
    assert rows[('dcmotor, back-EMF compensated vs DCMotor', 'implicitfast')] < 1e-2
    assert rows[('dcmotor, plain voltage (back-EMF damping) vs DCMotor', 'implicitfast')] > 1e-2
    assert rows[('position delay, history = first command vs delay_commands', 'implicitfast')] <= 1e-12
    assert rows[('position delay, history = zeros (default) vs first command', 'implicitfast')] > 0.1


# ---------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize('make, message', [
    (lambda: IdealPD(kp=-1.0), 'kp must be a finite number >= 0 N·m/rad, got -1.0'),
    (lambda: IdealPD(kp=1.0, kv=math.nan), 'kv must be a finite number >= 0'),
    (lambda: IdealPD(kp=1.0, effort_limit=0.0), 'effort_limit must be > 0 N·m'),
    (lambda: ImplicitPD(kp=math.inf), 'kp must be a finite number'),
    (lambda: DCMotor(kp=1.0, effort_limit=1.0, saturation_effort=0.0, velocity_limit=1.0),
     'saturation_effort must be a finite number > 0'),
    (lambda: DCMotor(kp=1.0, effort_limit=1.0, saturation_effort=1.0, velocity_limit=-2.0),
     'velocity_limit must be a finite number > 0 rad/s, got -2.0'),
    (lambda: DelayedPD(kp=1.0, delay=-1), 'delay must be a whole number of physics steps >= 0, got -1'),
    (lambda: DelayedPD(kp=1.0, delay=1.5), 'delay must be a whole number'),
    (lambda: RemotizedPD(kp=1.0, table=((1.0, 1.0), (0.0, 2.0))), 'table angles must be strictly'),
    (lambda: RemotizedPD(kp=1.0, table=((0.0, -1.0),)), 'table torques must be >= 0'),
    (lambda: PendulumParams(timestep=0.0), 'timestep must be in (0, 0.1] s, got 0.0'),
    (lambda: PendulumParams(integrator='rk4'), 'integrator must be one of Euler, RK4'),
    (lambda: PendulumParams(armature=-0.1), 'armature must be a finite number >= 0'),
    (lambda: actuator_models.sweep('stifness'), 'param must be one of stiffness'),
])
def test_bad_input_names_the_parameter_the_value_and_what_is_allowed(make, message):
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace(')', r'\)')):
        make()


def test_configs_are_frozen_and_keyword_only():
    pd = IdealPD(kp=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pd.kp = 2.0
    with pytest.raises(TypeError):
        IdealPD(1.0)


# ---------------------------------------------------------------------------------------------
# the live panel and its static twin


def test_panel_survives_every_model_at_extreme_settings():
    """No slider position raises or blanks the panel: a diverged run is drawn and flagged."""
    panel = actuator_models_panels.actuator_panel()
    for model in drives.MODELS:
        for change in ({'kp': 30000.0, 'timestep': 0.02}, {'kv': 300.0, 'effort_limit': 100.0},
                       {'kp': 1.0, 'kv': 0.1, 'armature': 0.1}, {'effort_limit': 0.5, 'delay': 60},
                       {'velocity_limit': 1.0, 'integrator': 'RK4'}):
            png = panel.update(model=model, **change)
            assert panel.error is None, (model, change, panel.error)
            assert png[:4] == b'\x89PNG'
        panel.reset()


def test_panel_readout_says_a_run_that_never_settles_is_still_swinging():
    """A DC motor with V 1 rad/s and kv 100 at a 20 ms step chatters along its band by ±8°: it has
    no settling error or rise time, and the readout says so instead of printing them."""
    run, metrics = actuator_models_panels.panel_run('DC motor', 100.0, 100.0, 0.0, 0.02, 'implicitfast', 100.0, 1.0, 0)
    assert not run.diverged and metrics['p2p_deg'] > 10 > plots.SWINGING_P2P_DEG
    text = actuator_models_panels.panel_readout(run, metrics)
    assert text.startswith('still swinging:') and text.endswith('rise n/a')
    assert f"{metrics['p2p_deg']:.3g}° peak to peak" in text and 'settling error' not in text
    # a heavily overdamped PD is still on its way: it creeps, it does not swing
    run, metrics = actuator_models_panels.panel_run('implicit', 100.0, 300.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert actuator_models_panels.panel_readout(run, metrics).startswith('still creeping:')
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 5.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 6.0, 8.0, 0)
    assert metrics['p2p_deg'] < plots.SWINGING_P2P_DEG
    assert actuator_models_panels.panel_readout(run, metrics) == f"settling error {metrics['error_deg']:.2f}°   rise 182 ms"
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert actuator_models_panels.panel_readout(run, metrics) == f'diverged after {run.t[-1]:.3f} s'


def test_panel_flags_the_explicit_pd_that_explodes():
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert run.diverged and metrics['diverged']
    run, metrics = actuator_models_panels.panel_run('implicit', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert not run.diverged


def test_effort_limit_twin_is_byte_stable_small_and_changes_with_the_limit():
    first, second = actuator_models_panels.effort_limit_twin().data, actuator_models_panels.effort_limit_twin().data
    assert first == second
    assert len(first) < 500_000
    start = first.index('"frames":') + len('"frames":')
    frames = json.loads(first[start:first.index('}</script>', start)])
    assert len(frames) == 10  # (effort limit, model): model varies fastest
    for model in (0, 1):
        assert len({json.dumps(frames[2 * k + model]) for k in range(5)}) == 5


def test_an_implicit_pd_held_at_its_forcerange_is_the_explicit_one():
    """While the force is clamped it does not depend on velocity, so implicitfast has no kv to fold
    into the step: with E = 1 N·m (clamped throughout) implicit and explicit agree to the bit."""
    implicit, explicit = pendulum.simulate([ImplicitPD(kp=400.0, kv=20.0, effort_limit=1.0),
                                     IdealPD(kp=400.0, kv=20.0, effort_limit=1.0)],
                                    command=Step(at=0.0), duration=6.0)
    np.testing.assert_array_equal(implicit.q, explicit.q)


def test_effort_limit_twin_redraws_in_a_browser_without_a_kernel(twin_page):
    open_page, errors = twin_page
    root = 'physai-twin-ch2-effort-limit'
    page = open_page(actuator_models_panels.effort_limit_twin().data)
    before = page.inner_html(f'#{root}-plot-0')
    assert '<path' in before
    page.eval_on_selector(f'#{root}-effort_limit',
                          "e => { e.value = 4; e.dispatchEvent(new Event('input')); }")
    assert page.inner_html(f'#{root}-plot-0') != before
    assert page.inner_text(f'#{root}-effort_limit-value') == '6'
    page.select_option(f'#{root}-model', label='implicit')
    assert page.inner_html(f'#{root}-plot-1') != ''
    assert errors == []
