"""physai.experiments.position_actuators: chapter 1's tables and physical claims, asserted on the same
experiments the notebook prints; MuJoCo runs (through the registered experiments) are the oracle."""

import json
import math

import numpy as np
import pytest

from physai.engine import link
from physai.experiments import position_actuators, position_actuators_further, registry
from physai.laws import stability
from physai.engine.link import LINK_INERTIA, TAU_G
from physai.engine.so101 import STS3215_STEPS_PER_TURN
from physai.experiments.position_actuators import (SO101_FORCERANGE, SO101_KP, clamped_chatter, growth_pair,
                                                   so101_servo, so101_servos)
from physai.laws.sim import servo_sag


@pytest.fixture(scope='module')
def kp_sweep():
    return registry.run('kp-sweep')


@pytest.fixture(scope='module')
def so101_rows():
    return registry.run('so101')


def test_sag_equals_servo_sag_to_a_thousandth_of_a_degree(kp_sweep):
    """At rest the spring balances gravity, kp*e = tau_g*cos(e): MuJoCo's sag is that root."""
    for row in kp_sweep:
        assert abs(row['sag_deg'] - row['sag_exact_deg']) < 1e-3, row


def test_sag_falls_as_one_over_kp(kp_sweep):
    """Once the sag is small, cos(e) ≈ 1 and e = tau_g/kp: ten times kp, a tenth of the sag."""
    stiff = [r for r in kp_sweep if r['kp'] >= 10]
    for row in stiff:
        assert row['sag_deg'] * row['kp'] == pytest.approx(math.degrees(TAU_G), rel=1e-3)
    slope = stability.loglog_slope([r['kp'] for r in stiff], [r['sag_deg'] for r in stiff])
    assert slope == pytest.approx(-1.0, abs=1e-3)


def test_rise_time_falls_as_one_over_sqrt_kp(kp_sweep):
    """At a fixed damping ratio the time scale is 1/ω = sqrt(I/kp): the log-log slope is -1/2."""
    slope = stability.loglog_slope([r['kp'] for r in kp_sweep], [r['rise_ms'] for r in kp_sweep])
    assert slope == pytest.approx(-0.5, abs=0.05)
    guide = 1e3 * stability.critical_rise_time(np.array([r['kp'] for r in kp_sweep]),
                                               LINK_INERTIA + 0.028)
    ratio = np.array([r['rise_ms'] for r in kp_sweep]) / guide
    assert np.all((ratio > 0.8) & (ratio < 1.0))  # the 5 ms step makes it a bit faster (gravity too at kp 1)


def test_growth_above_one_exactly_where_mujoco_diverges():
    """The spectral radius of one linearized step predicts every Euler and implicitfast run."""
    for row in registry.run('growth'):
        assert (row['euler_growth'] > 1) == (row['mujoco_euler'] == 'diverged'), row
        assert (row['implicitfast_growth'] > 1) == (row['mujoco_implicitfast'] == 'diverged'), row


def test_armature_sweep_euler_diverges_below_the_bound_implicit_schemes_hold():
    """Dropping armature raises ω; explicit kv under Euler fails first, implicitfast and discrete hold."""
    rows = registry.run('armature-sweep')
    verdicts = {r['armature']: (r['euler'], r['implicitfast'], r['discrete']) for r in rows}
    for armature, (euler, implicitfast, discrete) in verdicts.items():
        predicted, _ = growth_pair(so101_servo(armature, integrator='Euler'))
        assert (euler == 'diverged') == (predicted > 1), armature
        assert (euler == 'diverged') == (armature <= 0.005), armature
        assert implicitfast == 'stable' and discrete == 'stable', armature


def test_kp_limit_implicitfast_diverges_at_high_kp_discrete_never():
    """Implicit damping does not save a too-stiff spring; discrete treats kp implicitly too."""
    rows = registry.run('kp-limit')
    for row in rows:
        params = so101_servo(kp=row['kp'])
        _, implicitfast = growth_pair(params)
        assert (row['implicitfast'] == 'diverged') == (implicitfast > 1), row
        assert (row['implicitfast'] == 'diverged') == (row['kp'] >= 10000), row
        assert row['discrete'] == 'stable', row


def test_growth_is_root_det_and_blind_to_kp_while_the_step_eigenvalues_are_complex():
    """Step 4's rows kp 998.22 and 3000 (armature 0.028) share their growth: while the step's eigenvalues are
    complex both have magnitude √det A, and det A = (1 − h·c_e)/(1 + h·c_i) does not contain kp. At kp 10000 the
    eigenvalues are real and the growth leaves √det A (it diverges)."""
    rows = {(r['kp'], r['armature']): r for r in registry.run('growth')}
    h, inertia = 0.005, LINK_INERTIA + position_actuators.SO101_ARMATURE
    c = (position_actuators.SO101_KV + position_actuators.SO101_DAMPING) / inertia
    for integrator, c_implicit in (('euler', position_actuators.SO101_DAMPING / inertia), ('implicitfast', c)):
        roots = []
        for kp in (SO101_KP, 3000):
            eig = np.linalg.eigvals(position_actuators_further.step_matrix(h, kp / inertia, c, c_implicit))
            det = float(np.prod(eig).real)
            assert np.all(np.abs(eig.imag) > 0), (integrator, kp, eig)
            assert np.max(np.abs(eig)) == pytest.approx(math.sqrt(det), rel=1e-12)
            assert rows[(kp, position_actuators.SO101_ARMATURE)][f'{integrator}_growth'] == pytest.approx(
                math.sqrt(det), rel=1e-9)
            roots.append(math.sqrt(det))
        assert roots[0] == pytest.approx(roots[1], rel=1e-12)
        eig = np.linalg.eigvals(position_actuators_further.step_matrix(h, 10000 / inertia, c, c_implicit))
        assert np.all(eig.imag == 0) and np.max(np.abs(eig)) > 1 > roots[0]


def test_implicitfast_holds_the_so101_servo_at_any_armature_but_not_at_any_kp():
    """Check yourself: lowering I raises ω² and c = (kv + damping)/I together, so implicitfast's bound
    h²kp/I < 4 + 2h(kv + damping)/I holds for every I once h·kp < 2(kv + damping), as it does for the SO-101 servo
    at 5 ms. Raising kp at fixed kv breaks it."""
    h, kv, damping = 0.005, position_actuators.SO101_KV, position_actuators.SO101_DAMPING
    assert h * SO101_KP < 2 * (kv + damping)
    for inertia in (LINK_INERTIA + 0.028, LINK_INERTIA, 1e-4, 1e-7):
        growth = stability.integrator_growth('implicitfast', h, SO101_KP / inertia, (kv + damping) / inertia)
        assert growth < 1, inertia
    inertia = LINK_INERTIA + 0.028
    assert stability.integrator_growth('implicitfast', h, 10000 / inertia, (kv + damping) / inertia) > 1


def test_the_measured_rise_is_fast_because_of_the_timestep_except_where_gravity_bends_it():
    """Going further, "Why the measured rise is a little fast": at kp 100 the rise over the continuous formula
    climbs toward 1 as the timestep shrinks (the integrator's lag); at kp 1 gravity's cos(q) holds it near 0.89
    however small the step."""
    def ratio(kp, h):
        return link.step_response(kp, timestep=h).rise_ms / (1e3 * stability.critical_rise_time(
            kp, LINK_INERTIA + position_actuators.SO101_ARMATURE))
    stiff = [ratio(100.0, h) for h in (0.005, 0.001, 0.0002)]
    assert stiff[0] < stiff[1] < stiff[2] and stiff[0] < 0.95 and abs(stiff[2] - 1) < 0.005
    soft = [ratio(1.0, h) for h in (0.005, 0.0002)]
    assert abs(soft[1] - soft[0]) < 0.01 and 0.87 < soft[1] < 0.9


def test_clamped_euler_chatters_instead_of_exploding():
    """With forcerange ±2.94 N·m the unstable Euler servo cannot run away: it stays bounded.

    With the friction loss (0.052 N·m) whether a run keeps chattering is decided by its last bits, so the table
    reports an ensemble: the stable armatures never chatter; below 0.005 some runs chatter (the less armature, the
    more of them, and the wider, about 0.8° at armature 0) and friction catches the others.
    """
    rows = {row['armature']: row for row in registry.run('armature-sweep')}
    for row in rows.values():
        if row['euler'] == 'stable':
            assert row['euler_clamped_at_3s'] == 'never' and row['euler_clamped_p2p_deg'] == 0.0, row
    for armature in (0.002, 0.001, 0.0):
        assert rows[armature]['euler_clamped_at_3s'] == 'sometimes', rows[armature]
    assert 0.5 <= rows[0.0]['euler_clamped_p2p_deg'] <= 1.0
    assert 0.3 <= rows[0.002]['euler_clamped_p2p_deg'] <= rows[0.0]['euler_clamped_p2p_deg']
    shares = [clamped_chatter(a, n=64)[2] for a in (0.002, 0.001, 0.0)]
    assert 0.1 < shares[0] < shares[2] and shares[2] > 0.8, shares


def test_clamped_euler_chatter_is_a_long_transient_that_friction_ends():
    """The clamped Euler chatter on the link is not a limit cycle for ever: friction loss catches the runs one by one,
    at random times. The share still chattering falls with the run's length; at armature 0.002 half the runs are
    caught between 2 and 5 s and none chatters at 30 s; at armature 0 half are caught between 20 and 50 s and a few
    still chatter at 100 s. Until it is caught a run keeps its swing: the runs chattering at 30 s swing as wide as
    those at 3 s."""
    rows = {row['armature']: row for row in registry.run('chatter-survival')}
    assert (rows[0.002]['at_3s'], rows[0.002]['at_30s'], rows[0.002]['at_100s']) == ('25-75%', '0', '0')
    assert (rows[0.0]['at_3s'], rows[0.0]['at_30s'], rows[0.0]['at_100s']) == ('>75%', '25-75%', '<25%')
    assert (rows[0.002]['half_caught_s'], rows[0.0]['half_caught_s']) == ('2-5', '20-50')
    for armature in position_actuators.SURVIVAL_ARMATURES:
        counts = position_actuators.chatter_survival(armature).count()
        assert np.all(np.diff(counts) <= 0) and counts[0] > counts[-1], (armature, counts)
    zero = position_actuators.chatter_survival(0.0)
    at = {length: k for k, length in enumerate(zero.lengths)}
    swing = [np.degrees(np.median(zero.p2p_rad[zero.moving[:, at[t]], at[t]])) for t in (3.0, 30.0, 100.0)]
    assert all(0.7 < p < 0.9 for p in swing), swing


@pytest.mark.slow
def test_chatter_survival_table_holds_on_ten_draws_of_its_ensemble(monkeypatch):
    """The table prints bins and 1-2-5 brackets, not counts: on ten draws of the ensemble (the starts nudged by up to
    1e-10 rad, as another processor's last bits would move them) every cell stays put."""
    plain = registry.run('chatter-survival')
    for nudge in ('1e-12', '2e-12', '3e-12', '5e-12', '7e-12', '1e-11', '2e-11', '5e-11', '1e-10'):
        monkeypatch.setenv('PHYSAI_PERTURB', nudge)
        position_actuators.chatter_survival.cache_clear()
        assert registry.run('chatter-survival') == plain, nudge
    position_actuators.chatter_survival.cache_clear()


def test_share_bins_and_half_caught_read_counts_as_the_table_prints_them():
    share = position_actuators.share_bin
    assert [share(k, 64) for k in (0, 1, 15, 16, 48, 49, 64)] == ['0', '<25%', '<25%', '25-75%', '25-75%', '>75%',
                                                                  '>75%']
    for count, n in ((-1, 64), (65, 64), (1, 0), (0.5, 2)):
        with pytest.raises(ValueError, match='count'):
            share(count, n)
    lengths = position_actuators.SURVIVAL_LENGTHS
    moving = np.zeros((4, len(lengths)), dtype=bool)
    moving[:3, :lengths.index(2.0) + 1] = True  # 3 of 4 moving up to 2 s, then 0
    survival = link.Survival(lengths, moving, np.zeros(moving.shape), np.zeros(4, dtype=bool))
    assert position_actuators.half_caught(survival) == '2-5'
    survival = link.Survival(lengths, np.ones_like(moving), np.zeros(moving.shape), np.zeros(4, dtype=bool))
    assert position_actuators.half_caught(survival) == '>100'


def test_clamped_euler_chatter_is_decided_by_the_last_bits():
    """At armature 0.002 two starts 1e-9 rad apart can end differently: one chattering, one caught by friction."""
    params = [so101_servo(0.002, integrator='Euler', forcerange=SO101_FORCERANGE)] * 16
    p2p = [r.p2p_deg for r in link.step_responses(params, q0=-0.5 + 1e-9 * np.arange(16))]
    assert min(p2p) < 1e-6 < 0.3 < max(p2p)


def test_clamped_euler_without_friction_chatters_wherever_unclamped_explodes():
    """Without friction loss to catch it, every clamped run whose unclamped twin explodes keeps chattering."""
    armatures = (0.028, 0.010, 0.005, 0.002, 0.001, 0.0)
    params = []
    for a in armatures:
        params.append(so101_servo(a, integrator='Euler', frictionloss=0.0))
        params.append(so101_servo(a, integrator='Euler', frictionloss=0.0,
                                  forcerange=SO101_FORCERANGE))
    responses = link.step_responses(params)
    for k, a in enumerate(armatures):
        free, clamped = responses[2 * k], responses[2 * k + 1]
        assert not clamped.diverged, a
        if free.diverged:
            assert clamped.p2p_deg > 0.1, a
        else:
            assert clamped.p2p_deg < 1e-6, a


def test_critical_armature_separates_mujoco_runs():
    """Euler with kv 0 and damping 0.6: the bound sits between the last diverging and first stable grid point,
    well below the armature that the damping-free rule hω = 2 asks for."""
    runs = position_actuators.armature_limit_runs()
    for row in runs:
        assert (row['mujoco'] == 'diverged') == (not row['bound_stable']), row
        assert (row['mujoco'] == 'diverged') == (row['growth'] > 1), row
    table = {r['quantity']: r['armature'] for r in registry.run('armature-limit')}
    last_diverged, first_stable, bound, rule = table.values()
    assert last_diverged < bound < first_stable < rule


def test_so101_armature_is_most_of_the_wrist_and_gripper_inertia(so101_rows):
    """Beyond the wrist little link is left, so armature dominates M_ii there: it is what keeps hω < 2."""
    share = {r['joint']: r['armature'] / r['M_ii'] for r in so101_rows}
    ranked = sorted(share, key=share.get, reverse=True)
    assert set(ranked[:2]) == {'wrist_roll', 'gripper'}
    assert ranked[2] == 'wrist_flex'
    assert min(share['wrist_roll'], share['gripper']) > 0.99
    for row in so101_rows:
        assert row['h_omega'] < 1.0, row
        assert (row['h_omega_no_armature'] > 2) == (row['joint'] in ('wrist_flex', 'wrist_roll',
                                                                     'gripper')), row


def test_so101_whole_arm_modes_are_no_slower_than_the_per_joint_figures(so101_rows):
    """With every servo acting at once the arm's fastest mode is at least as fast as the fastest joint alone
    (the largest eigenvalue of M⁻¹K bounds kp/M_ii from above); without armature it is faster still."""
    with_armature = position_actuators.so101_mode_h_omega()
    without = position_actuators.so101_mode_h_omega(armature=0.0)
    assert with_armature[-1] >= max(r['h_omega'] for r in so101_rows) - 1e-12
    assert with_armature[-1] < 1.0
    assert without[-1] > max(r['h_omega_no_armature'] for r in so101_rows) > 2


def test_so101_table_matches_mujoco_fields(so101_rows):
    """link_inertia + armature = M_ii and hω = h·sqrt(kp/M_ii) at 5 ms, with Menagerie's sts3215 gains."""
    for row in so101_rows:
        assert row['link_inertia'] + row['armature'] == pytest.approx(row['M_ii'], rel=1e-12)
        assert row['h_omega'] == pytest.approx(0.005 * math.sqrt(row['kp'] / row['M_ii']), rel=1e-12)
        assert (row['kp'], row['kv'], row['forcerange'], row['armature']) == (
            pytest.approx(998.22), pytest.approx(2.731), [-2.94, 2.94], pytest.approx(0.028))


def test_so101_json_has_exactly_its_keys():
    """The command line's --json rows carry the documented keys and nothing else."""
    rows = json.loads(registry.to_json(registry.run('so101')))
    assert [r['joint'] for r in rows] == ['shoulder_pan', 'shoulder_lift', 'elbow_flex',
                                          'wrist_flex', 'wrist_roll', 'gripper']
    for row in rows:
        assert set(row) == {'joint', 'kp', 'kv', 'forcerange', 'armature', 'M_ii', 'link_inertia',
                            'h_omega', 'h_omega_no_armature'}
        assert len(row['forcerange']) == 2


def test_motor_needs_ctrl_equal_to_gravity_torque():
    """A motor has no spring: holding the link takes ctrl = tau_g/gear, and 1 % less lets it fall."""
    for gear in (1.0, 2.0):
        rows = {r['quantity'].split(' (')[0]: r['value'] for r in position_actuators.motor_hold(gear)}
        assert rows['ctrl that holds q = 0'] * gear == pytest.approx(TAU_G, rel=1e-12)
        assert rows['drift after 1 s with that ctrl'] < 1e-9
        assert rows['drop after 1 s with 1 % less ctrl'] > 1.0


def test_gear_two_quarters_the_sag():
    """Gear g makes the joint stiffness g²·kp: gear 2 divides the sag by four, not two."""
    rows = registry.run('gear-sag')
    assert rows[1]['sag_ratio'] == pytest.approx(4.0, rel=1e-3)
    for row in rows:
        assert abs(row['sag_deg'] - row['servo_sag_deg']) < 1e-3


def test_bad_timestep_for_so101_table_is_rejected():
    """The table's timestep must be a physics step MuJoCo accepts."""
    with pytest.raises(ValueError, match=r'timestep must be in \(0, 0.1\] s, got 0'):
        so101_servos(0)


def test_so101_without_armature_chatters_because_of_the_clamp():
    """Menagerie's SO-101 settles as shipped; with armature 0 every run of the ensemble chatters under
    implicitfast, by degrees at the elbow and wrist flex, because a saturated force takes kv out of the implicit
    damping. Unclamped, or at 1 ms, every run settles. The printed range holds every run of the ensemble. Unlike the
    link's clamped Euler chatter, which friction ends, the arm's is sustained: every run still chatters at 30 s."""
    rows = {r['joint']: r for r in registry.run('so101-no-armature')}
    for joint, row in rows.items():
        assert row['shipped'] == 'never', row
        assert row['no_armature'] == 'always' and row['no_armature_at_30s'] == 'always', row
        assert row['no_armature_unclamped'] == 'never' and row['no_armature_1ms'] == 'never', row
        assert 0 < row['no_armature_p2p_low'] < row['no_armature_p2p_high'], row
    for joint in ('elbow_flex', 'wrist_flex'):
        assert (rows[joint]['no_armature_p2p_low'], rows[joint]['no_armature_p2p_high']) == (2, 5), joint
    for joint in ('shoulder_lift', 'wrist_roll', 'gripper'):
        assert rows[joint]['no_armature_p2p_low'] >= 1, joint


def test_chatter_range_rounds_outward_on_the_1_2_5_series():
    """The range of the chattering runs: its ends go down and up to the series, runs below the threshold drop out."""
    assert position_actuators.chatter_range(np.array([1.46, 1.62, 0.0])) == (1.0, 2.0)
    assert position_actuators.chatter_range(np.array([2.25, 2.59])) == (2.0, 5.0)
    assert position_actuators.chatter_range(np.zeros(4)) == (0.0, 0.0)
    assert position_actuators.chatter_verdict(np.array([0.0, 1.0])) == 'sometimes'


def test_so101_sag_on_the_link_is_below_one_encoder_step():
    """At Menagerie's kp the link sags less than one 12-bit step of the STS3215's sensor: stiff enough."""
    assert math.degrees(servo_sag(SO101_KP, TAU_G)) < 360 / STS3215_STEPS_PER_TURN


def test_gear_sag_flags_a_diverged_run_instead_of_reporting_a_sag():
    """kp 1e6 diverges at 5 ms with gear 1 and 30: once reported as a sag of 14578°, now flagged with no sag."""
    rows = position_actuators.gear_sag(kp=1e6, gears=(1.0, 30.0))
    assert [row['mujoco'] for row in rows] == ['diverged', 'diverged']
    assert all(math.isnan(row['sag_deg']) and math.isnan(row['sag_ratio']) for row in rows)
    with pytest.raises(ValueError, match=r'gears must be one or more gear ratios in \[0.001, 10000\], got \(1.0, -2.0\)'):
        position_actuators.gear_sag(gears=(1.0, -2.0))


def test_hand_laws_agree_with_mujoco_to_1e_12():
    """The round-off columns report the bound 1e-12 (printed '< 1e-12'), never a raw last-bit difference."""
    assert all(row['max_error'] == 1e-12 for row in registry.run('actuator-laws'))
    assert all(row['max_abs_diff_rad'] == 1e-12 for row in registry.run('servo-loop'))
    assert '< 1e-12' in registry.get('servo-loop').table(registry.run('servo-loop'))
    for row in registry.run('link'):
        assert row['ours'] == pytest.approx(row['mujoco'], rel=1e-12)


def test_kp_sweep_sag_is_the_exact_static_sag():
    for row in registry.run('kp-sweep'):
        assert row['sag_deg'] == pytest.approx(row['sag_exact_deg'], abs=1e-3)
        assert row['sag_linear_deg'] == pytest.approx(math.degrees(0.2943 / row['kp']))
