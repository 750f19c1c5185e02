"""physai.experiments.position_actuators_further: chapter 1's "Going further" tables (the actuator from Python, the
traps, the sag cures, a soft joint limit, the trace and determinant of the step, the elbow step test), asserted on the
experiments the notebook prints; MuJoCo runs are the oracle."""

import math

import numpy as np
import pytest

from physai.experiments import position_actuators_further, registry
from physai.engine.link import LINK_INERTIA, TAU_G
from physai.engine.so101 import STS3215_STEPS_PER_TURN
from physai.experiments.position_actuators import SO101_FORCERANGE, SO101_KP
from physai.laws.sim import servo_sag


def test_sag_cures_remove_the_sag_and_cost_a_load_model_or_an_overshoot():
    """Gravity feed-forward removes the sag exactly while its load model is right and leaves the model's error
    share of it otherwise; integral action removes it too, but winds up and overshoots; imax cuts the overshoot."""
    rows = registry.run('sag-cures')
    p, ff, ff_wrong, pi, pi_clamped = rows
    assert p['error_deg'] == pytest.approx(math.degrees(servo_sag(position_actuators_further.SAG_CURE_KP, TAU_G)), abs=1e-3)
    assert abs(ff['error_deg']) < 1e-3 and abs(pi['error_deg']) < 1e-3 and abs(pi_clamped['error_deg']) < 1e-3
    share = position_actuators_further.SAG_CURE_MODEL_ERROR
    assert ff_wrong['error_deg'] == pytest.approx(share * p['error_deg'], rel=0.02)
    assert p['overshoot_pct'] < 0.1 and ff['overshoot_pct'] < 0.1
    assert pi['overshoot_pct'] > 5 and 0.1 < pi_clamped['overshoot_pct'] < pi['overshoot_pct'] / 2


def test_a_joint_limit_is_soft_and_refsafe_stops_stiffening_it_at_twice_the_timestep():
    """Pressed by the clamped servo, the link goes past its range; a stiffer solreflimit helps down to 2h only.
    The limit carries the servo's 2.94 N·m less gravity's pull at the limit."""
    rows = registry.run('joint-limit')
    default, two_h, stiffer = rows
    assert default['past_limit_deg'] > two_h['past_limit_deg'] > 0
    assert stiffer['past_limit_deg'] == pytest.approx(two_h['past_limit_deg'], abs=1e-9)
    for row in rows:
        assert row['limit_torque'] == pytest.approx(
            SO101_FORCERANGE[1] - TAU_G * math.cos(position_actuators_further.LIMIT_RANGE), abs=1e-3)




def test_use_it_reads_the_pd_law_until_the_clamp_and_the_gains_back_from_the_model():
    """actuator_force and qfrc_actuator are kp(u - q) - kv qd (gear 1) until forcerange clamps them; kp is
    gainprm[0] and kv is -biasprm[2]."""
    hold, step = position_actuators_further.use_it()
    for row in (hold, step):
        assert row['kp_read'] == SO101_KP and row['kv_read'] == pytest.approx(2.731)
        assert row['actuator_force'] == row['qfrc_actuator']
    assert hold['actuator_force'] == pytest.approx(hold['pd_law'], abs=1e-12)
    assert step['pd_law'] > 100 and step['actuator_force'] == SO101_FORCERANGE[1]


def test_general_without_affine_bias_has_no_spring_and_ctrlrange_is_not_a_torque_limit():
    rows = position_actuators_further.actuator_traps()
    none, affine, ctrl_angle, ctrl_force, force_angle, force_force = (r['value'] for r in rows)
    assert none == 0.0
    assert affine == pytest.approx(-SO101_KP * position_actuators_further.TRAP_Q, rel=1e-12)
    assert ctrl_angle == pytest.approx(position_actuators_further.TRAP_LIMIT, abs=1e-3)   # the command was cut
    assert ctrl_force > 50 * SO101_FORCERANGE[1]                                   # the force was not
    assert force_angle == pytest.approx(position_actuators_further.TRAP_CTRL, abs=1e-3)
    assert force_force == pytest.approx(SO101_FORCERANGE[1])


def test_velocity_actuator_diverges_under_euler_past_the_damper_bound_and_holds_implicitly():
    euler, implicitfast = position_actuators_further.velocity_trap()
    assert euler['h_kv_over_I'] > 2 and euler['mujoco'] == 'diverged'
    assert implicitfast['mujoco'] == 'stable'
    assert implicitfast['mean_speed'] == pytest.approx(position_actuators_further.VELOCITY_TRAP_CTRL, abs=0.02)
    # just under the damper's bound Euler holds
    kv_ok = 0.95 * 2 * (LINK_INERTIA + 0.028) / 0.005
    assert position_actuators_further.velocity_trap(kv_ok, ('Euler',))[0]['mujoco'] == 'stable'


@pytest.mark.parametrize('h, w2, c, ci', [(0.005, 3e4, 100.0, 0.0), (0.005, 3e4, 100.0, 100.0),
                                          (0.005, 1e5, 80.0, 20.0), (0.02, 1e3, 5.0, 2.5)])
def test_trace_and_determinant_of_the_step_are_the_hand_formulas(h, w2, c, ci):
    a = position_actuators_further.step_matrix(h, w2, c, ci)
    tr, det = position_actuators_further.trace_det_formula(h, w2, c, ci)
    assert np.trace(a) == pytest.approx(tr, abs=1e-12) and np.linalg.det(a) == pytest.approx(det, abs=1e-12)
    # 1 + tr + det has the sign of the bound 4 + 2h(c_i - c_e) minus h²ω²
    bound = 4 + 2 * h * (ci - (c - ci))
    assert (1 + tr + det) * (1 + h * ci) == pytest.approx(bound - h * h * w2, rel=1e-9, abs=1e-12)


def test_jury_conditions_hold_exactly_where_the_growth_is_below_one():
    rows = position_actuators_further.trace_determinant()
    assert len(rows) == 8
    for r in rows:
        assert ((r['one_plus_tr_plus_det'] > 0 and abs(r['det']) < 1) == (r['growth'] < 1)), r
        assert (r['one_plus_tr_plus_det'] > 0) == (r['h2w2'] < r['bound']), r
        assert float(r['formula_error']) <= 1e-12


def test_step_matrix_rejects_an_implicit_part_larger_than_the_damping():
    with pytest.raises(ValueError, match='c_implicit must be in'):
        position_actuators_further.step_matrix(0.005, 100.0, 1.0, 2.0)


@pytest.mark.slow
def test_elbow_step_in_the_model_is_too_fast_for_a_30_fps_recording():
    """The model's elbow rises in about 50-70 ms: two frames or fewer at 30 fps, so the real step test needs a
    faster read-out; the settled error is below one encoder step."""
    rows = position_actuators_further.elbow_step_test()
    for row in rows:
        assert 40 < row['rise_ms'] < 80 and row['rise_frames'] < 2.5
        assert abs(row['error_deg']) < 360 / STS3215_STEPS_PER_TURN
        assert row['peak_force'] == pytest.approx(SO101_FORCERANGE[1])  # the step saturates the servo
    assert rows[0]['rise_ms'] != rows[1]['rise_ms']  # gravity makes up and down differ


def test_joint_step_rejects_an_unknown_joint():
    with pytest.raises(ValueError, match='joint'):
        position_actuators_further.so101_joint_step('knee')
