"""physai.laws.sim against MuJoCo: each hand-written law or step is compared with what mj_step computes."""

import math

import mujoco
import numpy as np
import pytest

from physai.laws import sim
from physai.engine.link import LINK_INERTIA, LINK_XML, ServoParams, TAU_G, link_model, step_response

SHORTCUTS = {
    'motor': '<motor joint="j" gear="3"/>',
    'position': '<position joint="j" kp="40" kv="2" forcerange="-5 5"/>',
    'position-gear': '<position joint="j" kp="25" kv="1.5" gear="2"/>',
    'velocity': '<velocity joint="j" kv="0.7"/>',
}


def _one_hinge(actuator: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(f"""
    <mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/></body></worldbody>
      <actuator>{actuator}</actuator></mujoco>""")


@pytest.mark.parametrize('shortcut', SHORTCUTS)
def test_affine_force_law_matches_qfrc_actuator(shortcut):
    """Every shortcut is the same affine law; the joint feels gear × force at gear × the joint's length."""
    m = _one_hinge(SHORTCUTS[shortcut])
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    gear = m.actuator_gear[0, 0]
    forcerange = m.actuator_forcerange[0] if m.actuator_forcelimited[0] else None
    for _ in range(100):
        d.qpos[0], d.qvel[0], d.ctrl[0] = rng.uniform(-3, 3), rng.uniform(-10, 10), rng.uniform(-3, 3)
        mujoco.mj_forward(m, d)
        force = sim.actuator_force(d.ctrl[0], gear * d.qpos[0], gear * d.qvel[0],
                                   m.actuator_gainprm[0], m.actuator_biasprm[0], forcerange)
        assert abs(force - d.actuator_force[0]) < 1e-12
        assert abs(gear * force - d.qfrc_actuator[0]) < 1e-12


def test_forcerange_clips_and_rejects_inverted_range():
    """The clamp bounds the force; a range whose low exceeds its high is an error."""
    assert sim.actuator_force(10.0, 0.0, 0.0, [1.0], [0, 0, 0], (-2, 2)) == 2.0
    with pytest.raises(ValueError, match=r'forcerange must be \(low, high\) with low <= high, got \(3, -3\)'):
        sim.actuator_force(1.0, 0.0, 0.0, [1.0], [0, 0, 0], (3, -3))


@pytest.mark.parametrize('kp', [1, 30, 998.22])
@pytest.mark.parametrize('armature', [0.0, 0.028, 0.1])
def test_kv_from_dampratio_matches_compiled_position(kp, armature):
    """MuJoCo resolves dampratio at compile time from the joint's inertia, armature included."""
    xml = LINK_XML.replace('kp="1" kv="0"', f'kp="{kp}" dampratio="0.7"').replace(
        'armature="0.028"', f'armature="{armature}"')
    compiled = mujoco.MjModel.from_xml_string(xml)
    ours = sim.kv_from_dampratio(kp, 0.7, LINK_INERTIA + armature)
    assert ours == pytest.approx(-compiled.actuator_biasprm[0, 2], rel=1e-12)


@pytest.mark.parametrize('kp', [0.5, 1, 10, 1000, 1e6])
def test_servo_sag_balances_spring_and_gravity(kp):
    """At the returned error the spring torque equals the gravity torque, kp*e = tau_g*cos(e)."""
    e = sim.servo_sag(kp, TAU_G)
    assert kp * e == pytest.approx(TAU_G * math.cos(e), rel=1e-12, abs=1e-15)
    assert 0 < e <= TAU_G / kp  # cos(e) <= 1 makes the exact sag the smaller one


@pytest.mark.parametrize('kp', [0.05, 0.1, 0.3])
def test_soft_servo_sag_is_where_mujoco_comes_to_rest(kp):
    """Below kp = tau_g the sag is tens of degrees; the root must still be the physical one in (0, π/2)."""

    e = sim.servo_sag(kp, TAU_G)
    assert 0 < e < math.pi / 2
    rest = step_response(kp, duration=30.0)
    assert rest.sag_deg == pytest.approx(math.degrees(e), abs=1e-3)


@pytest.mark.parametrize('kp', [0, -1, math.nan, math.inf])
def test_servo_sag_rejects_bad_kp(kp):
    with pytest.raises(ValueError, match='kp must be a finite number > 0'):
        sim.servo_sag(kp, TAU_G)


@pytest.mark.parametrize('call, message', [
    (lambda: sim.servo_sag(10.0, 0.0), 'tau_g must be a finite number > 0 N·m, got 0.0'),
    (lambda: sim.kv_from_dampratio(-1.0, 1.0, 0.1), 'kp must be a finite number > 0 N·m/rad, got -1.0'),
    (lambda: sim.kv_from_dampratio(1.0, 1.0, -0.1), 'inertia must be a finite number > 0 kg·m², got -0.1'),
    (lambda: sim.kv_from_dampratio(1.0, -1.0, 0.1), 'dampratio must be a finite number >= 0, got -1.0'),
    (lambda: sim.kv_from_dampratio(np.array([1.0, 0.0]), 1.0, 0.1), 'kp must be finite numbers > 0'),
    (lambda: sim.step_growth(sim.semi_implicit_euler, 0.0, 1.0, 0.0), 'h must be a finite number > 0 s, got 0.0'),
    (lambda: sim.semi_implicit_euler(0.0, 0.0, lambda q, v: 0.0, -0.1), 'h must be a finite number > 0 s, got -0.1'),
])
def test_bad_input_to_the_hand_written_functions(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _accel(q, v):
    return -q - v


@pytest.mark.parametrize('call, message', [
    # a negative implicit damping divided by zero at h*c_implicit = -1 (ZeroDivisionError), NaN gave a NaN step
    (lambda: sim.semi_implicit_euler(0.1, 0.0, _accel, 0.01, -100.0), r'c_implicit must be a number >= 0 1/s '
                                                                       r'\(inf: beyond floating point\), got -100.0'),
    (lambda: sim.semi_implicit_euler(0.1, 0.0, _accel, 0.01, math.nan), 'c_implicit must be a number >= 0'),
    (lambda: sim.semi_implicit_euler(0.1, 0.0, _accel, math.inf), 'h must be a finite number > 0 s, got inf'),
    (lambda: sim.semi_implicit_euler(0.1, 0.0, _accel, None), 'h must be a finite number > 0 s, got None'),
    # a NaN ω² or damping gave growth inf, "diverged"; a negative ω² is no oscillator
    (lambda: sim.step_growth(sim.semi_implicit_euler, 0.01, math.nan, 0.1), 'w2 must be a number >= 0 1/s²'),
    (lambda: sim.step_growth(sim.semi_implicit_euler, 0.01, -1.0, 0.1), 'w2 must be a number >= 0 1/s².*got -1.0'),
    (lambda: sim.step_growth(sim.semi_implicit_euler, 0.01, 1.0, math.nan), 'c must be a number >= 0 1/s'),
    # tol 0, negative or NaN never converged (RuntimeError); max_iter 0 or a float failed inside range()
    (lambda: sim.servo_sag(10.0, 1.0, tol=0.0), 'tol must be a finite number > 0 rad, got 0.0'),
    (lambda: sim.servo_sag(10.0, 1.0, tol=math.nan), 'tol must be a finite number > 0 rad, got nan'),
    (lambda: sim.servo_sag(10.0, 1.0, max_iter=0), r'max_iter must be a whole number >= 1, got 0'),
    (lambda: sim.servo_sag(10.0, 1.0, max_iter=2.5), r'max_iter must be a whole number >= 1, got 2.5'),
    # text was numpy's "could not convert string to float", naming nothing
    (lambda: sim.kv_from_dampratio('abc', 1.0, 0.1), "kp must be a number or an array of numbers N·m/rad, got 'abc'"),
    (lambda: sim.kv_from_dampratio(1.0, 'abc', 0.1), "dampratio must be a number or an array of numbers, got 'abc'"),
    (lambda: sim.kv_from_dampratio(1.0, None, 0.1), 'dampratio must be a number or an array of numbers, got None'),
    (lambda: sim.kv_from_dampratio(1.0, np.array([1.0, -1.0]), 0.1), 'dampratio must be finite numbers >= 0'),
])
def test_each_bad_argument_of_chapter_1s_functions_is_named_with_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_checks_leave_the_hand_stepped_loop_as_it_was():
    """servo_loop checks its arguments once and each step's again: the same trajectory, bit for bit, as the step
    written out by hand."""
    kp, kv, inertia, h = 100.0, 1.0, 0.01, 0.001
    q = sim.servo_loop(kp, kv, inertia, TAU_G, h, 500)
    qk, v = -0.5, 0.0
    for k in range(500):
        a = (kp * (0.0 - qk) - kv * v - TAU_G * math.cos(qk)) / inertia
        v = v + h * a / (1.0 + h * kv / inertia)
        qk = qk + h * v
        assert q[k + 1] == qk


def _mujoco_trajectory(params: ServoParams, q0: float, nstep: int) -> np.ndarray:
    """The obviously correct reference: a plain mj_step loop."""
    m = link_model(params)
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    q = [q0]
    for _ in range(nstep):
        mujoco.mj_step(m, d)
        q.append(d.qpos[0])
    return np.array(q)


def test_servo_loop_is_the_hand_trajectory_under_implicitfast():
    params = ServoParams(kp=30.0, damping=0.2)
    ours = sim.servo_loop(params.kp, params.kv_effective, params.inertia, TAU_G, params.timestep, 600,
                          damping=params.damping)
    assert np.max(np.abs(ours - _mujoco_trajectory(params, -0.5, 600))) < 1e-12


def _hand_trajectory(params: ServoParams, q0: float, nstep: int, c_implicit: float) -> np.ndarray:
    kv, inertia = params.kv_effective, params.inertia

    def accel(q, v):
        return (-params.kp * q - (kv + params.damping) * v - TAU_G * math.cos(q)) / inertia

    q, v, out = q0, 0.0, [q0]
    for _ in range(nstep):
        q, v = sim.semi_implicit_euler(q, v, accel, params.timestep, c_implicit=c_implicit)
        out.append(q)
    return np.array(out)


@pytest.mark.parametrize('kp', [1, 30, 1000])
@pytest.mark.parametrize('damping', [0.0, 0.6])
def test_semi_implicit_euler_is_mujoco_implicitfast(kp, damping):
    """With kv and damping implicit, the hand step is MuJoCo's implicitfast step to 1e-12 rad over 3 s."""
    params = ServoParams(kp=kp, damping=damping, integrator='implicitfast')
    c = (params.kv_effective + damping) / params.inertia
    ours = _hand_trajectory(params, -0.5, 600, c)
    assert np.max(np.abs(ours - _mujoco_trajectory(params, -0.5, 600))) < 1e-12


@pytest.mark.parametrize('kp', [1, 30, 300])
def test_semi_implicit_euler_with_only_damping_implicit_is_mujoco_euler(kp):
    """MuJoCo's Euler integrates the joint damping implicitly but the actuator's kv explicitly.

    (At kp 1000 with dampratio 1 the explicit kv alone makes Euler diverge; both blow up alike.)
    """
    params = ServoParams(kp=kp, damping=0.6, integrator='Euler')
    ours = _hand_trajectory(params, -0.5, 600, params.damping / params.inertia)
    assert np.max(np.abs(ours - _mujoco_trajectory(params, -0.5, 600))) < 1e-12


@pytest.mark.parametrize('h_omega', [0.5, 1.5, 1.9, 2.1, 3.0])
@pytest.mark.parametrize('hc', [0.0, 0.2, 1.0])
def test_step_growth_bounds(h_omega, hc):
    """Growth exceeds 1 exactly beyond h²ω² = 4 + 2hc (damping implicit) or 4 − 2hc (explicit)."""
    h = 0.005
    w2, c = (h_omega / h) ** 2, hc / h
    implicit = sim.step_growth(sim.semi_implicit_euler, h, w2, c, c_implicit=c)
    explicit = sim.step_growth(sim.semi_implicit_euler, h, w2, c)
    tol = 1e-9  # undamped and below the limit the growth is exactly 1, up to rounding
    assert (implicit > 1 + tol) == (h_omega**2 > 4 + 2 * hc)
    assert (explicit > 1 + tol) == (h_omega**2 > 4 - 2 * hc)


def test_step_growth_is_one_without_damping_below_the_limit():
    """An undamped oscillator stepped semi-implicitly neither grows nor decays while hω < 2."""
    assert sim.step_growth(sim.semi_implicit_euler, 0.01, 100.0**2, 0.0) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize('call, message', [
    (lambda: sim.servo_loop(100, 1, 0.0, 0.3, 0.005, 10), 'inertia must be a finite number > 0 kg·m², got 0.0'),
    (lambda: sim.servo_loop(100, 1, 0.03, 0.3, 0.005, -1), 'nstep must be a whole number in [0, 1,000,000], got -1'),
    (lambda: sim.servo_loop(100, 1, 0.03, 0.3, 0.0, 10), 'h must be in (0, 0.1] s, got 0.0'),
    (lambda: sim.actuator_force(0, 0, 0, [], [0, 0, 0]), 'gainprm must hold at least 1 finite number, got []'),
    (lambda: sim.actuator_force(0, 0, 0, [1], [0, 0]), 'biasprm must hold at least 3 finite numbers, got [0, 0]'),
    (lambda: sim.actuator_force(0, 0, 0, [1], [0, 0, 0], 5), 'forcerange must hold 2 finite numbers, got 5'),
])
def test_bad_input_to_the_hand_written_functions_is_named(call, message):
    """Once a ZeroDivisionError or an IndexError, now an error that names the parameter and its range."""
    with pytest.raises(ValueError) as err:
        call()
    assert str(err.value) == message


def test_servo_loop_marks_a_diverged_run_with_nan_instead_of_overflowing():
    """kp 1e7 at h = 10 ms is far past the explicit bound: the loop stops at 20π rad and says so with NaN."""
    q = sim.servo_loop(1e7, 0.0, 0.001, 0.3, 0.01, 50)
    assert len(q) == 51 and np.isnan(q[-1])
    assert np.all(np.abs(q[np.isfinite(q)]) <= sim.DIVERGED_BOUND)


@pytest.mark.parametrize('name', ['ctrl', 'length', 'velocity'])
@pytest.mark.parametrize('bad', [None, [0.1, None], 'abc', [[1.0], [1.0, 2.0]]])
def test_actuator_force_refuses_what_is_not_numbers_instead_of_reading_none_as_nan(name, bad):
    args = dict(ctrl=0.3, length=0.1, velocity=0.0)
    args[name] = bad
    with pytest.raises(ValueError, match=f'{name} must be a number or an array of numbers'):
        sim.actuator_force(**args, gainprm=[10.0], biasprm=[0.0, -10.0, -1.0])
    assert np.isnan(sim.actuator_force(math.nan, 0.1, 0.0, [10.0], [0.0, -10.0, -1.0]))  # a NaN stays a NaN
