"""physai.laws.loop: chapter 3's MIT-form command and its checks, controller ticks, the zero-order hold, and the
in-loop PD's two flaws taken one at a time (MuJoCo as the oracle)."""

import math

import mujoco
import numpy as np
import pytest

from physai.laws import loop
from physai.laws.drives import pd_torque
from physai.laws.loop import JointCommand


def test_a_rate_above_the_physics_rate_is_refused_where_a_pattern_of_ticks_is_asked_for():
    """tick_pattern(2000, 0.001) answered (1,): growth per tick of a 1 kHz controller under a 2 kHz name. The physics
    rate itself (1/timestep, rounding included) is one step per tick; tick_mask, which runs a controller, still ticks
    at every step."""
    with pytest.raises(ValueError, match=r'rate_hz must be at most the physics rate 1/timestep = 1000 Hz \(a '
                                         r'controller cannot tick between physics steps\), got 2000'):
        loop.tick_pattern(2000, 0.001)
    with pytest.raises(ValueError, match='rate_hz must be at most the physics rate'):
        loop.tick_growth(rate_hz=1001.0, kp=1.0, kv=0.1, inertia=0.01)
    assert loop.tick_pattern(1 / 0.0013, 0.0013) == (1,)
    assert loop.tick_mask(2000, 0.001, 5).all()


@pytest.mark.parametrize('call, message', [
    (lambda: loop.zoh_step(1.0, 0.0, lambda q, v: -q, 0.001, substeps=()),
     r'substeps must hold at least one tick of physics steps, e.g. \(3, 2\), got none'),  # was growth 1, "stable"
    (lambda: loop.zoh_step(1.0, 0.0, lambda q, v: -q, -0.001), 'h must be a finite number > 0 s, got -0.001'),
    (lambda: loop.tick_mask(100.0, 1e308, 10), r'timestep must be in \(0, 0.1\] s, got 1e\+308'),
    (lambda: loop.tick_pattern(100.0, 0.5), r'timestep must be in \(0, 0.1\] s, got 0.5'),
])
def test_each_bad_argument_of_the_loop_laws_is_named_with_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_empty_pattern_of_ticks_gives_no_growth_of_one():
    with pytest.raises(ValueError, match='substeps must hold at least one tick'):
        sim_growth = __import__('physai.laws.sim', fromlist=['step_growth']).step_growth
        sim_growth(loop.zoh_step, 0.001, 1e6, 0.0, substeps=[])


def test_mit_torque_is_chapter_2s_pd_law_clipped_to_max_effort():
    """mit_torque = physai.laws.drives.pd_torque(stiffness, damping, effort), then clip to ±max_effort."""
    command = JointCommand(position=0.3, velocity=0.2, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0)
    q, qd = np.linspace(-1.0, 1.0, 9), np.linspace(2.0, -2.0, 9)
    expected = np.clip(pd_torque(0.3, q, 0.2, qd, 40.0, 0.8, 0.1), -5.0, 5.0)
    np.testing.assert_array_equal(loop.mit_torque(command, q, qd), expected)
    assert np.max(np.abs(expected)) == 5.0  # the clamp is exercised


def test_tick_mask_is_even_where_the_rates_divide_and_alternates_at_400_hz():
    assert np.flatnonzero(loop.tick_mask(50, 0.001, 100)).tolist() == [0, 20, 40, 60, 80]
    assert loop.tick_mask(1000, 0.001, 7).all()
    assert np.diff(np.flatnonzero(loop.tick_mask(400, 0.001, 40))).tolist() == [3, 2] * 7 + [3]
    assert loop.tick_pattern(400, 0.001) == (3, 2)


def test_tick_pattern_is_kept_per_rate_and_still_refuses_bad_input():
    """Patterns are kept (a panel asks for the same 41 rates at every move), and an int, a float or a NumPy rate
    give the same one; input that is not a number still gets the ValueError naming it, not a hashing error."""
    assert loop.tick_pattern(400, 0.001) is loop.tick_pattern(400.0, np.float64(0.001))
    with pytest.raises(ValueError, match=r'rate_hz must be a finite number > 0 Hz, got \[400\]'):
        loop.tick_pattern([400], 0.001)
    with pytest.raises(ValueError, match=r'timestep must be in \(0, 0.1\] s'):
        loop.tick_pattern(400, {'h': 0.001})


@pytest.mark.parametrize('rate_hz, pattern', [(129, (8, 8, 8, 7)), (400 / 3, (8, 7)), (125, (8,)), (1000, (1,))])
def test_tick_pattern_has_the_mean_tick_of_the_rate(rate_hz, pattern):
    """The pattern's ticks cover the steps of the rate's nearest fraction (129 Hz: 31 steps in 4 ticks)."""
    assert loop.tick_pattern(rate_hz, 0.001) == pattern
    for rate in (13.3, 77.0, 129.0, 134.0, 415.0):
        got = loop.tick_pattern(rate, 0.001)
        assert sum(got) / len(got) == pytest.approx(1000.0 / rate, rel=2e-3)
        assert max(got) - min(got) <= 1  # as even as the rate allows


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


@pytest.mark.parametrize('n', [1, 2, 5, 20])
@pytest.mark.parametrize('c', [0.0, 90.0, 400.0])
def test_held_tick_map_has_the_trace_and_determinant_of_jurys_test(n, c):
    """The core idea's Jury test: one held tick of n steps (no joint damping) is a 2×2 map with trace 2 - beta*x - c*T
    and determinant 1 - c*T + (1 - beta)*x, x = (T*w)²; both eigenvalues inside the unit circle exactly when
    (1 - beta)*x < c*T and (2*beta - 1)*x < 4 - 2*c*T."""
    h, w2 = 1e-3, 3.0e4
    T, beta = n * h, (n + 1) / (2 * n)
    x = T * T * w2
    columns = [loop.zoh_step(q, v, lambda q_, v_: -w2 * q_ - c * v_, h, substeps=(n,)) for q, v in ((1.0, 0.0),
                                                                                                   (0.0, 1.0))]
    A = np.array(columns).T
    assert np.trace(A) == pytest.approx(2 - beta * x - c * T, rel=1e-12, abs=1e-12)
    assert np.linalg.det(A) == pytest.approx(1 - c * T + (1 - beta) * x, rel=1e-12, abs=1e-12)
    if n == 1 and c == 0:  # on the boundary: determinant 1, both eigenvalues on the unit circle
        assert np.abs(np.linalg.eigvals(A)) == pytest.approx([1.0, 1.0], abs=1e-12)
        return
    stable = (1 - beta) * x < c * T and (2 * beta - 1) * x < 4 - 2 * c * T
    assert stable == (np.max(np.abs(np.linalg.eigvals(A))) < 1)


# ---------------------------------------------------------------------------------------------------------
# The in-loop PD's two flaws, one at a time


@pytest.mark.parametrize('rate_hz', [50, 100, 129, 400, 1000])
@pytest.mark.parametrize('inertia, damping', [(0.03, 0.6), (0.003, 0.0)])
def test_flaw_growth_with_both_flaws_is_the_in_loop_pd_and_with_neither_the_in_step_servo(rate_hz, inertia, damping):
    """hold and explicit kv: tick_growth in-loop, bit for bit (the same map); neither: the in-step servo under
    implicitfast (integrator_growth to the n-th power), to rounding."""
    gains = dict(rate_hz=rate_hz, kp=998.0, kv=2.7, inertia=inertia, damping=damping)
    assert loop.flaw_growth(**gains, hold=True, explicit_kv=True) == loop.tick_growth(**gains)
    assert loop.flaw_growth(**gains, hold=False, explicit_kv=False) == pytest.approx(
        loop.tick_growth(**gains, backend='in-step', integrator='implicitfast'), rel=1e-12)


def test_without_the_hold_the_growth_per_tick_is_the_growth_per_step_to_the_steps_per_tick():
    """No hold, kv explicit: the PD at every physics step, so a tick of n steps grows as one step to the n (the
    in-loop PD at one tick per step)."""
    gains = dict(kp=998.0, kv=2.7, inertia=0.03, damping=0.6)
    per_step = loop.tick_growth(rate_hz=1000, **gains)
    assert loop.flaw_growth(rate_hz=1000, **gains, hold=False, explicit_kv=True) == pytest.approx(per_step, rel=1e-14)
    assert loop.flaw_growth(rate_hz=100, **gains, hold=False, explicit_kv=True) == pytest.approx(per_step**10,
                                                                                                   rel=1e-12)
    assert loop.flaw_growth(rate_hz=400, **gains, hold=False, explicit_kv=True) == pytest.approx(per_step**2.5,
                                                                                                   rel=1e-12)


HELD_SPRING_XML = """
<mujoco>
  <option timestep="0.001" integrator="implicitfast" gravity="0 0 0"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 -1 0" damping="{damping}" armature="0.028"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="0.3"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize('rate_hz', [50, 100, 400])
def test_held_spring_with_implicit_damping_is_mujocos_step(rate_hz):
    """MuJoCo as the oracle of flaw_growth(hold=True, explicit_kv=False): a link (no gravity, so the joint is linear)
    whose spring -kp*q is computed at each tick and held in qfrc_applied, its kv moved into the joint's damping,
    which implicitfast integrates implicitly. zoh_step with the held spring and c_joint = (kv + d)/I retraces
    MuJoCo's q and qd tick by tick, to rounding."""
    kp, kv, d_joint = 998.0, 2.7, 0.6
    m = mujoco.MjModel.from_xml_string(HELD_SPRING_XML.format(damping=kv + d_joint))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = np.zeros((1, 1))
    mujoco.mj_fullM(m, d, full)
    inertia = float(full[0, 0])
    d.qpos[0], d.qvel[0] = 0.01, -0.3
    q, v = float(d.qpos[0]), float(d.qvel[0])
    pattern = loop.tick_pattern(rate_hz, m.opt.timestep)
    for n in pattern * 10:
        d.qfrc_applied[0] = -kp * d.qpos[0]  # the spring, held for the tick
        for _ in range(n):
            mujoco.mj_step(m, d)
        q, v = loop.zoh_step(q, v, lambda q_, v_: -kp / inertia * q_, m.opt.timestep, substeps=(n,),
                             c_joint=(kv + d_joint) / inertia)
        assert d.qpos[0] == pytest.approx(q, rel=1e-9, abs=1e-13)
        assert d.qvel[0] == pytest.approx(v, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize('kwargs, message', [
    ({'hold': 1, 'explicit_kv': True}, 'hold must be True or False, got 1'),
    ({'hold': True, 'explicit_kv': None}, 'explicit_kv must be True or False, got None'),
    ({'hold': True, 'explicit_kv': True, 'kv': -1.0}, 'kv must be a finite number >= 0'),
    ({'hold': True, 'explicit_kv': True, 'inertia': 0.0}, 'inertia must be a finite number > 0'),
])
def test_flaw_growth_refuses_bad_input_naming_it(kwargs, message):
    args = dict(rate_hz=100, kp=998.0, kv=2.7, inertia=0.03) | kwargs
    with pytest.raises(ValueError, match=message):
        loop.flaw_growth(**args)


@pytest.mark.parametrize('q, qd', [(None, 0.0), (0.0, None), ([0.0, None], 0.0), ('0.1', 0.0)])
def test_mit_torque_refuses_a_state_that_is_not_numbers_instead_of_reading_none_as_nan(q, qd):
    with pytest.raises(ValueError, match='must be a number or an array of numbers'):
        loop.mit_torque(JointCommand(stiffness=10.0), q, qd)
