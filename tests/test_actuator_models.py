"""physai.experiments.actuator_models: chapter 2's sweeps and divergence map, against MuJoCo runs and the
stability bounds the map draws, and MuJoCo's own <dcmotor> and actuator delay."""

import math

import numpy as np
import pytest

from physai.engine import pendulum
from physai.experiments import actuator_models
from physai.laws.drives import IdealPD, ImplicitPD
from physai.laws.sim import servo_sag

I = pendulum.LINK_INERTIA
H = pendulum.TIMESTEP
IMPLICIT = ('implicitfast', 'implicit')


def _explicit_kv(kp, h):
    """The explicit PD's bound solved by hand: h²kp/I = 4 - 2h·kv/I."""
    return 2 * I / h - h * kp / 2


def _implicit_kv(kp, h):
    """The implicit damper's bound solved by hand: h²kp/I = 4 + 2h·kv/I."""
    return h * kp / 2 - 2 * I / h


@pytest.mark.parametrize('kp', [0.0, 100.0, 1000.0, 10000.0])
@pytest.mark.parametrize('h', [0.0005, H, 0.02])
def test_kv_bound_solves_the_oscillation_bound_for_kv(kp, h):
    """Euler (the explicit PD) has its bound at kv = 2I/h - h·kp/2, implicitfast and implicit at its mirror."""
    assert actuator_models.kv_bound(kp, h) == pytest.approx(_explicit_kv(kp, h), rel=1e-12, abs=1e-9)
    for integrator in IMPLICIT:
        assert actuator_models.kv_bound(kp, h, integrator=integrator) == pytest.approx(
            _implicit_kv(kp, h), rel=1e-12, abs=1e-9)


def test_kv_bound_keeps_the_shape_of_the_timesteps_and_takes_another_inertia():
    h = np.geomspace(3e-4, 3e-2, 7).reshape(7, 1)
    kv = actuator_models.kv_bound(1000.0, h, integrator='implicitfast', inertia=0.5)
    assert kv.shape == (7, 1)
    np.testing.assert_allclose(kv, h * 1000.0 / 2 - 2 * 0.5 / h, rtol=1e-12)
    assert isinstance(actuator_models.kv_bound(1000.0, H), float)


@pytest.mark.parametrize('kp, h', [(100.0, H), (1000.0, 0.001), (10.0, 0.02)])
def test_growth_per_step_crosses_one_at_the_explicit_bound(kp, h):
    """The explicit PD is stable just below the kv on its bound and diverges just above (chapter 1's growth)."""
    kv = actuator_models.kv_bound(kp, h)
    assert kv > 0
    below, _ = actuator_models.explicit_implicit_growth(kp, 0.99 * kv, h)
    above, _ = actuator_models.explicit_implicit_growth(kp, 1.01 * kv, h)
    assert below < 1 < above


@pytest.mark.parametrize('kp, h', [(10000.0, 0.01), (10000.0, 0.02), (3000.0, 0.02)])
def test_growth_per_step_crosses_one_at_the_implicit_bound(kp, h):
    """The implicit damper holds just above the kv on its bound and fails just below: a spring too stiff."""
    kv = actuator_models.kv_bound(kp, h, integrator='implicitfast')
    assert kv > 0
    _, below = actuator_models.explicit_implicit_growth(kp, 0.99 * kv, h)
    _, above = actuator_models.explicit_implicit_growth(kp, 1.01 * kv, h)
    assert above < 1 < below


def test_mujoco_holds_the_explicit_pd_just_below_the_kv_limit_and_not_just_above():
    """The chapter's kv_limit (kp 100 at 1/360 s) is where MuJoCo's explicit PD starts to diverge; the implicit
    PD holds on both sides."""
    kv_limit = actuator_models.kv_bound(100.0, H)
    runs = pendulum.simulate([IdealPD(kp=100.0, kv=0.97 * kv_limit), IdealPD(kp=100.0, kv=1.03 * kv_limit),
                              ImplicitPD(kp=100.0, kv=1.03 * kv_limit)], command=pendulum.HORIZONTAL, duration=3.0)
    assert [r.diverged for r in runs] == [False, True, False]


def test_kv_limit_lies_between_the_kds_the_chapter_contrasts():
    """"The explicit PD diverges at kd 100 but not at kd 50": the boundary, printed to one decimal, lies between,
    and far enough from a rounding edge that no processor prints another digit."""
    kv_limit = actuator_models.kv_bound(100.0, H)
    assert 50 < kv_limit < 100
    assert kv_limit == pytest.approx(2 * I / H - H * 100 / 2, rel=1e-12)
    tenths = 10 * kv_limit
    assert abs(tenths - math.floor(tenths) - 0.5) < 0.5 - 1e-6


def test_the_map_cells_lie_on_the_side_of_the_bounds_the_figure_draws():
    """Every map cell where the explicit PD diverges lies above its bound (solid line, or everywhere where no kv > 0
    is on it), every stable one below; implicitfast diverges exactly below its bound (the dashed line), only at
    kp 10000, and never where the explicit PD holds."""
    rows = actuator_models.divergence_map()
    for r in rows:
        explicit_kv = actuator_models.kv_bound(r['kp'], r['timestep'])
        implicit_kv = actuator_models.kv_bound(r['kp'], r['timestep'], integrator='implicitfast')
        assert (r['explicit'] == 'diverged') == (r['kv'] > explicit_kv), r
        assert (r['implicit'] == 'diverged') == (r['kv'] < implicit_kv), r
        # no cell sits so near a bound that a last-bit change could move it across
        for bound in (explicit_kv, implicit_kv):
            assert bound <= 0 or abs(r['kv'] / bound - 1) > 0.01, r
    both = [r for r in rows if r['implicit'] == 'diverged']
    assert both and {r['kp'] for r in both} == {10000}
    assert all(r['explicit'] == 'diverged' for r in both)
    assert any(r['explicit'] == 'diverged' and r['implicit'] == 'stable' for r in rows)


@pytest.mark.parametrize('kwargs, message', [
    (dict(kp=-1.0, timestep=H), 'kp must be a finite number >= 0 N·m/rad, got -1.0'),
    (dict(kp=100.0, timestep=0.0), r'timestep must be in \(0, 0.1\] s, got 0.0'),
    (dict(kp=100.0, timestep=np.array([0.001, 0.2])), r'timestep must be in \(0, 0.1\] s'),
    (dict(kp=100.0, timestep=H, integrator='RK4'), "integrator must be one of Euler, implicit, implicitfast, got 'RK4'"),
    (dict(kp=100.0, timestep=H, inertia=0.0), 'inertia must be a finite number > 0 kg·m², got 0.0'),
])
def test_kv_bound_rejects_bad_input_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        actuator_models.kv_bound(**kwargs)


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


def test_armature_leaves_the_steady_error_at_the_sag_and_only_slows_the_settling():
    """Armature adds inertia, not weight: run long enough, every armature of the sweep settles at the sag. The
    sweep's heaviest row reads a little less only because its lightly damped swing has not died out in 4 s."""
    rows = actuator_models.sweep('armature').rows
    sag = math.degrees(servo_sag(100.0, pendulum.TAU_G))
    assert rows[0]['error_deg'] == pytest.approx(sag, abs=1e-3)
    assert abs(rows[-1]['error_deg'] - sag) > 0.01  # the 4 s run's tail is still swinging
    long = pendulum.simulate([ImplicitPD(kp=100.0, kv=5.0)],
                             pendulum=[pendulum.PendulumParams(armature=1.0)], command=pendulum.Step(),
                             duration=12.0)[0]
    tail = long.t > long.t[-1] - 0.5
    assert math.degrees(math.pi / 2 - float(np.mean(long.q[tail]))) == pytest.approx(sag, abs=1e-3)


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
# what Isaac Lab's documentation adds, and the SO-101's elbow under three models


def test_the_joints_lower_limit_wins_over_the_explicit_models_own():
    """An explicit PD limited to 6 N·m through a motor clamped at 2 N·m is, to rounding, the PD limited to 2 N·m,
    while the model's own torque still reaches 6 N·m."""
    free, clamped = actuator_models.double_clip()
    assert free['applied_peak'] == pytest.approx(6.0) and free['p2p_rad'] < 1e-3
    assert clamped['model_peak'] == pytest.approx(6.0) and clamped['applied_peak'] == pytest.approx(2.0)
    assert float(clamped['vs_model_limit_2']) <= 1e-12
    assert clamped['p2p_rad'] > 1.0  # below the hold torque: it swings, as the sweep's E = 2 N·m run


def test_explicit_through_clamped_motor_rejects_an_implicit_model():
    with pytest.raises(ValueError, match='explicit'):
        actuator_models.explicit_through_clamped_motor(ImplicitPD(kp=1.0), 2.0)


def test_solver_gains_are_zero_for_every_explicit_model():
    rows = {r['model']: r for r in actuator_models.solver_gains()}
    assert (rows['implicit']['solver_kp'], rows['implicit']['solver_kv']) == (100.0, 5.0)
    for name, row in rows.items():
        if name != 'implicit':
            assert (row['solver_kp'], row['solver_kv'], row['forcelimited']) == (0.0, 0.0, 'no'), name


def test_randomized_delay_adds_each_episodes_own_delay_to_the_lag():
    rows = actuator_models.randomized_delays()
    assert all(0 <= r['delay_steps'] <= 12 for r in rows) and len({r['delay_steps'] for r in rows}) > 1
    base = actuator_models.randomized_delays(0, 0, episodes=1)[0]['lag_ms']
    for r in rows:
        assert r['lag_ms'] == pytest.approx(base + r['delay_ms'], abs=0.05)


@pytest.mark.parametrize('kwargs, message', [({'min_delay': -1}, 'min_delay'), ({'max_delay': 1.5}, 'max_delay'),
                                             ({'min_delay': 5, 'max_delay': 2}, 'max_delay'),
                                             ({'episodes': 0}, 'episodes')])
def test_randomized_delays_reject_bad_input_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        actuator_models.randomized_delays(**kwargs)


def test_viscous_friction_takes_more_of_a_fast_swing_than_the_same_number_of_dry_friction():
    """At 4π rad/s, damping 0.05 N·m·s/rad pulls with 0.63 N·m, more than frictionloss 0.05 N·m: fewer turns. The
    swing then decays exponentially: at damping 0.2 the link still moves after 6 s, at 1 it has all but stopped."""
    viscous = actuator_models.sweep('viscous-friction').rows
    dry = actuator_models.sweep('friction').rows
    assert viscous[1]['turns'] < dry[1]['turns'] / 2
    assert [r['turns'] for r in viscous] == sorted((r['turns'] for r in viscous), reverse=True)
    assert viscous[2]['final_speed'] > 0.05 and viscous[4]['final_speed'] < 1e-3


@pytest.mark.slow
def test_so101_elbow_as_a_dc_motor_is_slower_than_menageries_servo():
    """The explicit ideal PD stays within a fraction of a degree of Menagerie's implicit servo (the torque is
    mostly clamped); the DC-motor model caps the speed, rises later and parts from it by degrees, less with a
    faster motor."""
    rows = {r['model']: r for r in actuator_models.so101_elbow_table()}
    base, ideal = rows['Menagerie (implicit)'], rows['ideal PD (explicit)']
    slow, fast = [r for name, r in rows.items() if name.startswith('DC motor')]
    assert ideal['max_diff_deg'] < 0.5
    assert slow['peak_speed'] < fast['peak_speed'] < base['peak_speed']
    assert slow['rise_ms'] > fast['rise_ms'] > base['rise_ms']
    assert slow['max_diff_deg'] > fast['max_diff_deg'] > 1.0
