"""The Build-it checks' cases: for every Build-it function, fixed inputs and what they must give, by MuJoCo.

Each entry of ``CHECKS`` builds a function's cases (inputs that include the regimes where a plausible bug shows) and
the comparison that judges an answer (:func:`close`: to a tolerance, NaN equal to NaN, the first differing entry
named). The expected values come from MuJoCo on inline MJCF (``qfrc_actuator``, ``actuator_force``, ``mj_step``'s
``qpos``, the kv a ``<position dampratio>`` compiles to), or, where MuJoCo has no single field for the quantity
(``AGAINST_REFERENCE``), from physai's reference, itself tested against MuJoCo in ``tests/``. ``ORACLE`` says in
one line what each function is checked against. :mod:`physai.book.buildit` runs the checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import mujoco
import numpy as np

from physai.engine import arm_replay, gripper, pd_controller, so101, sysid
from physai.laws import drives, loop, servo_gain, sim
from physai.engine.datasets import Episode
from physai.engine.link import LINK_INERTIA, LINK_XML, TAU_G


@dataclasses.dataclass(frozen=True)
class Case:
    args: tuple
    kwargs: dict
    expected: object


def case(expected, *args, **kwargs) -> Case:
    return Case(args, kwargs, expected)


def close(tol: float, unit: str = '', what: str = 'the result', where: Callable | None = None
           ) -> Callable[[Case, object], str | None]:
    """Compare with ``case.expected`` to ``tol`` (relative to 1 + |expected|), NaN equal to NaN.

    ``what`` names the returned quantity in the message (``q``, ``tau_min``); ``where(case, index)`` says what an
    entry of an array result is (``after step 12``), or the message gives its index.
    """
    def compare(case: Case, got) -> str | None:
        expected = np.asarray(case.expected, dtype=float)
        try:
            value = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return f'expected {what} = {_show(expected)}{unit}, got {got!r}'
        if value.shape != expected.shape:
            return f'expected {what} of shape {expected.shape}, got shape {value.shape} ({_show(value)})'
        both_nan = np.isnan(expected) & np.isnan(value)
        bad = ~both_nan & ~(np.abs(value - expected) <= tol * (1 + np.abs(expected)))
        if np.any(bad):
            if expected.ndim:
                i = int(np.flatnonzero(bad)[0])
                index = i if expected.ndim == 1 else tuple(int(k) for k in np.unravel_index(i, expected.shape))
                entry = f'{what}[{index if expected.ndim == 1 else ", ".join(map(str, index))}]'
                context = f' ({where(case, index)})' if where else ''
                return (f'{entry}{context}: expected {expected.flat[i]:.10g}{unit}, got {value.flat[i]:.10g}'
                        f'{_beyond(tol, expected.flat[i], value.flat[i])} '
                        f'({int(bad.sum())} of {bad.size} values differ)')
            return (f'expected {what} = {float(expected):.10g}{unit}, got {float(value):.10g}'
                    f'{_beyond(tol, float(expected), float(value))}')
        return None
    return compare


def _beyond(tol: float, expected: float, got: float) -> str:
    """What the check allows, when the two are numbers that differ by a little (:data:`NEAR_MISS`): ``(off by 1.5e-08,
    beyond the check's tolerance of 1e-09 × (1 + |expected|))``."""
    if not (math.isfinite(expected) and math.isfinite(got)):
        return ''
    off = abs(got - expected)
    if off > NEAR_MISS * (1 + abs(expected)):  # plainly wrong: the tolerance would only be noise
        return ''
    if tol == 0:
        return ' (the check wants it exactly)'
    return f' (off by {off:.2g}, beyond the check\'s tolerance of {tol:g} × (1 + |expected|))'


NEAR_MISS = 1e-4
"""A difference below this (relative to 1 + |expected|) is a near miss, rounding rather than a wrong formula (float32
arithmetic, say): the message then states the check's tolerance."""


def described(function: Callable, text: str) -> Callable:
    """``function`` with the text a check's message shows for it (``lambda q, v: -400*q - 3*v``), so that a message
    describes the case instead of naming a function the learner never saw."""
    function.shown = text
    return function


def _show(value: np.ndarray) -> str:
    if not np.ndim(value):
        return f'{float(value):.10g}'
    return np.array2string(np.asarray(value), precision=6, threshold=12, edgeitems=3).replace('\n', '')


# --- the cases and their oracles ---------------------------------------------------------------------------------

_ACTUATORS_XML = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body><joint name="a" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
    <body pos="1 0 0"><joint name="b" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
    <body pos="2 0 0"><joint name="c" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
    <body pos="3 0 0"><joint name="d" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
  </worldbody>
  <actuator>
    <motor joint="a" gear="3"/>
    <position joint="b" kp="40" kv="2" forcerange="-5 5" gear="2"/>
    <velocity joint="c" kv="0.7"/>
    <general joint="d" gaintype="fixed" gainprm="6" biastype="affine" biasprm="1.5 -8 -0.4" forcerange="-4 3"/>
  </actuator>
</mujoco>
"""


def _actuator_force_cases():
    m = mujoco.MjModel.from_xml_string(_ACTUATORS_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(8):
        d.qpos[:] = rng.uniform(-1, 1, m.nq)
        d.qvel[:] = rng.uniform(-3, 3, m.nv)
        d.ctrl[:] = rng.uniform(-1, 1, m.nu)
        mujoco.mj_forward(m, d)
        for i in range(m.nu):
            gear = m.actuator_gear[i, 0]
            forcerange = list(m.actuator_forcerange[i]) if m.actuator_forcelimited[i] else None
            # MuJoCo's joint torque is gear × force: the expected force is qfrc_actuator / gear
            cases.append(case(d.qfrc_actuator[i] / gear, float(d.ctrl[i]), float(gear * d.qpos[i]),
                               float(gear * d.qvel[i]), [float(x) for x in m.actuator_gainprm[i, :3]],
                               [float(x) for x in m.actuator_biasprm[i, :3]],
                               None if forcerange is None else [float(x) for x in forcerange]))
    return cases, close(1e-9, ' N·m', 'force')


def _kv_cases():
    cases = []
    for kp, zeta, armature in [(10.0, 1.0, 0.0), (100.0, 0.5, 0.01), (998.22, 1.0, 0.028), (3.0, 2.0, 0.2)]:
        xml = LINK_XML.replace('armature="0.028"', f'armature="{armature}"').replace(
            'kp="1" kv="0"', f'kp="{kp}" dampratio="{zeta}"')
        m = mujoco.MjModel.from_xml_string(xml)
        # MuJoCo's resolved kv, and the inertia it used: the joint's diagonal of the mass matrix at qpos0
        cases.append(case(-m.actuator_biasprm[0, 2], kp, zeta, float(m.dof_M0[0])))
    # the docstring promises arrays: all four at once (math.sqrt takes one number only)
    cases.append(case(np.array([c.expected for c in cases]), *(np.array([c.args[k] for c in cases]) for k in range(3))))
    return cases, close(1e-9, ' N·m·s/rad', 'kv', lambda case, i: f'at kp = {case.args[0][i]:.6g}')


def _euler_cases():
    spring = described(lambda q, v: -400.0 * q - 3.0 * v, 'lambda q, v: -400*q - 3*v')
    gravity = described(lambda q, v: -9.81 * math.cos(q), 'lambda q, v: -9.81*cos(q)')
    cases = []
    for q, v, accel, h, c in [(0.1, 0.0, spring, 0.005, 0.0), (-0.3, 1.5, spring, 0.002, 20.0),
                              (0.5, -2.0, gravity, 0.01, 0.0), (1.0, 0.25, gravity, 0.001, 5.0)]:
        cases.append(case(sim.semi_implicit_euler(q, v, accel, h, c), q, v, accel, h, c))
    return cases, _pair(("q'", "v'"), 1e-12, (' rad', ' rad/s'))


def _loop_cases():
    cases = []
    # (kp, ζ, armature, tau_g, h, nstep, q0, u, damping): a soft and a stiff servo, a short step, a command and joint
    # damping (both in the law, both easy to leave out), a heavier link (a tau_g that is not the chapter's TAU_G),
    # and an undamped servo too stiff for its step, which diverges: NaN from the step |q| passes DIVERGED_BOUND on
    for kp, zeta, armature, tau_g, h, nstep, q0, u, damping in [
            (30.0, 1.0, 0.028, TAU_G, 0.005, 200, -0.5, 0.0, 0.0),
            (1000.0, 1.0, 0.028, TAU_G, 0.005, 100, -0.5, 0.0, 0.0),
            (100.0, 1.0, 0.002, TAU_G, 0.002, 300, 0.3, 0.0, 0.0),
            (50.0, 1.0, 0.028, TAU_G, 0.005, 200, -0.5, 0.4, 0.3),
            (20.0, 1.0, 0.028, 1.5, 0.005, 200, -0.5, 0.0, 0.0),
            (DIVERGING_KP, 0.0, 0.0, TAU_G, 0.005, 60, -0.5, 0.0, 0.0)]:
        inertia = LINK_INERTIA + armature
        kv = 2 * zeta * math.sqrt(kp * inertia)
        m = mujoco.MjModel.from_xml_string(LINK_XML.replace('armature="0.028"', f'armature="{armature}"')
                                           .replace('timestep="0.005"', f'timestep="{h}"'))
        m.opt.gravity[2] *= tau_g / TAU_G  # the horizontal link's gravity torque is then tau_g
        m.actuator_gainprm[0, 0] = kp
        m.actuator_biasprm[0, :3] = (0.0, -kp, -kv)
        m.dof_damping[0] = damping
        d = mujoco.MjData(m)
        d.qpos[0], d.ctrl[0] = q0, u
        q = np.full(nstep + 1, np.nan)
        q[0] = q0
        for k in range(nstep):
            mujoco.mj_step(m, d)
            if not abs(d.qpos[0]) <= sim.DIVERGED_BOUND:  # diverged: NaN from here on (and before MuJoCo resets)
                break
            q[k + 1] = d.qpos[0]
        extra = dict(u=u, damping=damping) if u or damping else {}
        cases.append(case(q, kp, kv, inertia, tau_g, h, nstep, q0=q0, **extra))
    return cases, close(1e-9, ' rad', 'q', _loop_where)


DIVERGING_KP = 800.0
"""N·m/rad: the loop check's undamped servo on the bare link (no armature) at 5 ms, hω = 2.2: it diverges."""


def _loop_where(case: Case, i: int) -> str:
    if np.isnan(case.expected[i]):
        first = int(np.flatnonzero(np.isnan(case.expected))[0])
        return (f'after step {i}: this run diverges, |q| passes DIVERGED_BOUND = 20π rad at step {first}, and the '
                'docstring asks for NaN from there on')
    return f'after step {i}'


def _sag_cases():
    # kp below tau_g first: there the sag is tens of degrees and Newton's step from tau_g/kp leaves (0, π/2)
    # unless it is kept in the bracket; then stiffer servos, and another link (another tau_g)
    cases = [case(None, kp, TAU_G) for kp in (0.05, 0.1, 0.2, 0.3, 1.0, 10.0, 100.0, 998.22)]
    cases += [case(None, 0.5, 1.2), case(None, 40.0, 3.0)]

    def compare(case, got):
        kp, tau_g = case.args
        expected = sim.servo_sag(kp, tau_g)
        try:
            e = float(got)
        except (TypeError, ValueError):
            return f'expected e = {expected:.10g} rad, got {got!r}'
        if not 0 < e < math.pi / 2:
            return f'expected e = {expected:.10g} rad, the one root in (0, π/2), got {e:.10g}'
        # MuJoCo's static balance: the link held at q = -e with ctrl 0 and at rest must not accelerate (gravity
        # scaled so that the horizontal link's torque is tau_g)
        m = mujoco.MjModel.from_xml_string(LINK_XML)
        m.opt.gravity[2] *= tau_g / TAU_G
        m.actuator_gainprm[0, 0] = kp
        m.actuator_biasprm[0, :3] = (0.0, -kp, 0.0)
        d = mujoco.MjData(m)
        d.qpos[0] = -e
        mujoco.mj_forward(m, d)
        residual = float(d.qfrc_actuator[0] - d.qfrc_bias[0])
        if abs(residual) > 1e-9 * max(1.0, kp, tau_g):
            return (f'expected e = {expected:.10g} rad, got {e:.10g}: there MuJoCo still has a net torque of '
                    f'{residual:.3g} N·m on the link (spring minus gravity)')
        return None
    return cases, compare


def _growth_cases():
    cases = []
    # not at a double eigenvalue (hω = 2 exactly with no damping, say): there any correct construction of the matrix
    # is only good to about √ε ≈ 1e-8, and the check's tolerance is 1e-9. The last two straddle hω = 2.
    for h, w2, c, c_implicit in [(0.005, 400.0, 3.0, 0.0), (0.005, 4e4, 60.0, 60.0), (0.005, 4e4, 60.0, 0.0),
                                 (0.002, 9e5, 0.0, 0.0), (0.002, 1.1e6, 0.0, 0.0)]:
        cases.append(case(sim.step_growth(sim.semi_implicit_euler, h, w2, c, c_implicit=c_implicit),
                           sim.semi_implicit_euler, h, w2, c, c_implicit=c_implicit))
    return cases, close(1e-9, '', 'growth')


# chapter 2 ------------------------------------------------------------------------------------------------------

_PD_XML = """
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="j" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
  </worldbody>
  <actuator><general joint="j" gaintype="fixed" biastype="affine"/></actuator>
</mujoco>
"""


def _mujoco_pd(q_target, q, v_target, v, kp, kv, tau_ff=0.0, max_effort=math.inf) -> float:
    """MuJoCo's actuator_force of a <general> PD: gain kp on ctrl = q*, bias (kv·qd* + τ_ff, −kp, −kv)."""
    m = mujoco.MjModel.from_xml_string(_PD_XML)
    m.actuator_gainprm[0, 0] = kp
    m.actuator_biasprm[0, :3] = (kv * v_target + tau_ff, -kp, -kv)
    if math.isfinite(max_effort):
        m.actuator_forcelimited[0] = 1
        m.actuator_forcerange[0] = (-max_effort, max_effort)
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0], d.ctrl[0] = q, v, q_target
    mujoco.mj_forward(m, d)
    return float(d.actuator_force[0])


def _pd_torque_cases():
    cases = []
    for q_target, q, v_target, v, kp, kv, tau_ff in [(0.3, -0.5, 0.0, 0.0, 40.0, 0.8, 0.0),
                                                      (0.3, 0.2, 0.0, 0.5, 40.0, 0.8, 0.1),
                                                      (-1.0, 0.4, 2.0, -1.5, 998.22, 2.5, -0.7),
                                                      (0.0, 0.0, 1.0, 0.0, 10.0, 3.0, 0.0)]:
        cases.append(case(_mujoco_pd(q_target, q, v_target, v, kp, kv, tau_ff), q_target, q, v_target, v, kp, kv,
                           tau_ff=tau_ff))
    # the law broadcasts: the same target against three states at once
    q, v = np.array([-0.5, 0.0, 0.5]), np.array([1.0, 0.0, -2.0])
    cases.append(case(np.array([_mujoco_pd(0.25, qi, 0.0, vi, 40.0, 0.8) for qi, vi in zip(q, v)]),
                       0.25, q, 0.0, v, 40.0, 0.8))
    return cases, close(1e-9, ' N·m', 'torque',
                         lambda case, i: f'at q = {case.args[1][i]:.6g}, v = {case.args[3][i]:.6g}')


def _pair(what: tuple[str, str], tol: float, unit: str | tuple[str, str], where: Callable | None = None):
    """Compare a pair of results (numbers or arrays), naming which of the two differs (``unit``: one for both, or
    one each)."""
    units = (unit, unit) if isinstance(unit, str) else unit
    def compare(case, got):
        try:
            first, second = got
        except (TypeError, ValueError):
            return f'expected a pair ({what[0]}, {what[1]}), got {got!r}'
        for label, each, expected, value in zip(what, units, case.expected, (first, second)):
            problem = close(tol, each, label, where)(Case(case.args, case.kwargs, expected), value)
            if problem:
                return problem
        return None
    return compare


def _envelope_cases():
    cases = []
    v = np.array([-40.0, -10.0, -5.0, 0.0, 2.5, 5.0, 7.5, 10.0, 40.0])
    for s, e, vmax in [(10.0, 6.0, 5.0), (3.0, 4.0, 8.0), (2.94, 2.94, 6.28)]:
        kwargs = dict(saturation_effort=s, forcerange=e, velocity_limit=vmax)
        cases.append(case(drives.dc_motor_envelope(v, **kwargs), v, **kwargs))
    cases.append(case(drives.dc_motor_envelope(0.0, saturation_effort=10.0, forcerange=6.0, velocity_limit=5.0),
                       0.0, saturation_effort=10.0, forcerange=6.0, velocity_limit=5.0))
    return cases, _pair(('tau_min', 'tau_max'), 1e-12, ' N·m', lambda case, i: f'at v = {case.args[0][i]:.6g} rad/s')


def _remotized_cases():
    cases = []
    q = np.array([-0.5, 0.0, math.pi / 4, math.pi / 2, 3.0])
    for table in [((0.0, 6.0), (math.pi / 2, 3.5)), ((-1.0, 2.0), (0.0, 5.0), (1.0, 3.0))]:
        table = tuple((float(a), float(b)) for a, b in table)
        cases.append(case(drives.remotized_limit(q, table), q, table))
        cases.append(case(float(drives.remotized_limit(2.0, table)), 2.0, table))
    return cases, close(1e-12, ' N·m', 'limit', lambda case, i: f'at q = {case.args[0][i]:.6g} rad')


def _delay_cases():
    commands = np.array([[1.0, 0.1, 0.5], [2.0, 0.2, 0.6], [3.0, 0.3, 0.7], [4.0, 0.4, 0.8], [5.0, 0.5, 0.9]])
    cases = []
    for delay in (0, 2, 1, 7):
        expected = commands[[max(k - delay, 0) for k in range(len(commands))]]  # out[k] = commands[max(k - d, 0)]
        cases.append(case(expected, commands, delay))
    cases.append(case(np.array([1.0, 1.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0, 4.0]), 2))
    return cases, close(0.0, '', 'out', lambda case, i: f'the command of tick {i if np.ndim(i) == 0 else i[0]}')


# chapter 3 ------------------------------------------------------------------------------------------------------

def _mit_cases():
    cases = []
    for kwargs, q, qd in [(dict(position=0.3, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0), 0.2, 0.5),
                          (dict(position=0.3, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0), -0.5, 0.0),
                          (dict(position=-1.0, velocity=2.0, stiffness=10.0, damping=1.5, effort=-0.2,
                                max_effort=3.0), 1.0, -4.0),
                          (dict(position=0.5, velocity=-1.0, stiffness=100.0, damping=2.0), -0.5, 3.0)]:
        command = loop.JointCommand(**kwargs)
        expected = _mujoco_pd(command.position, q, command.velocity, qd, command.stiffness, command.damping,
                              command.effort, command.max_effort)
        cases.append(case(expected, command, q, qd))
    command = loop.JointCommand(position=0.3, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0)
    q, qd = np.array([-0.5, 0.0, 0.2, 0.3]), np.array([0.0, 1.0, 0.5, -20.0])
    cases.append(case(np.array([_mujoco_pd(0.3, qi, 0.0, vi, 40.0, 0.8, 0.1, 5.0) for qi, vi in zip(q, qd)]),
                       command, q, qd))
    return cases, close(1e-9, ' N·m', 'torque',
                         lambda case, i: f'at q = {case.args[1][i]:.6g}, qd = {case.args[2][i]:.6g}')


_ZOH_XML = """
<mujoco>
  <option timestep="{h}" integrator="Euler" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="j" type="hinge" axis="0 1 0" damping="{damping}"/>
      <geom type="sphere" size="0.01" mass="1"/><inertial pos="0 0 0" mass="1" diaginertia="2 2 2"/></body>
  </worldbody>
</mujoco>
"""


def _mujoco_zoh(q, v, accel, h, substeps, c_joint) -> tuple[float, float]:
    """MuJoCo's Euler (joint damping implicit) with I·accel(q, v) applied and held over each tick's steps."""
    m = mujoco.MjModel.from_xml_string(_ZOH_XML.format(h=h, damping=c_joint * 2.0))
    inertia = float(m.dof_M0[0])
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0] = q, v
    for n in substeps:
        d.qfrc_applied[0] = inertia * accel(float(d.qpos[0]), float(d.qvel[0]))
        for _ in range(n):
            mujoco.mj_step(m, d)
    return float(d.qpos[0]), float(d.qvel[0])


def _zoh_cases():
    pd_40 = described(lambda q, v: -40.0 * q - 0.8 * v, 'lambda q, v: -40*q - 0.8*v')
    pd_stiff = described(lambda q, v: -2.5e4 * q - 20.0 * v, 'lambda q, v: -2.5e4*q - 20*v')
    cases = []
    for q, v, accel, h, substeps, c_joint in [(0.5, 0.0, pd_40, 0.001, (1,), 0.0),
                                              (0.5, 0.0, pd_40, 0.001, (5,), 0.0),
                                              (0.1, -1.0, pd_stiff, 0.001, (3, 2), 0.0),
                                              (-0.2, 0.4, pd_stiff, 0.001, (3, 2), 15.0),
                                              (0.3, 2.0, pd_40, 0.005, (2, 2, 2), 4.0)]:
        expected = _mujoco_zoh(q, v, accel, h, substeps, c_joint)
        cases.append(case(expected, q, v, accel, h, substeps=substeps, c_joint=c_joint))
    return cases, _pair(("q'", "v'"), 1e-9, (' rad', ' rad/s'))


_WRITE_STEPS = 300


def _mujoco_servo(backend, integrator, gear, feedforward, command, motor_forcerange=math.inf) -> np.ndarray:
    """qpos of every step of MuJoCo's own servo: a <general> PD (gain kp/g², bias (ff/g, −kp/g², −kv/g²), gear g,
    forcerange ±min(max_effort, |g|·motor_forcerange)/|g| in-step, ctrl g·q*), the feed-forward in qfrc_applied when
    it is not in the clamp (the motor's own forcerange does not clamp qfrc_applied, so in-loop it plays no part)."""
    g, c = gear, command
    kp, kv, ff = c.stiffness / g**2, c.damping / g**2, c.damping * c.velocity + c.effort
    in_clamp = backend == 'in-loop' or feedforward == 'in-clamp'
    effort = min(c.max_effort, abs(g) * motor_forcerange) if backend == 'in-step' else c.max_effort
    limit = (f'forcelimited="true" forcerange="{-effort / abs(g)!r} {effort / abs(g)!r}"'
             if math.isfinite(effort) else '')
    actuator = (f'<general joint="hinge" gear="{g!r}" gaintype="fixed" biastype="affine" gainprm="{kp!r}" '
                f'biasprm="{(ff / g if in_clamp else 0.0)!r} {-kp!r} {-kv!r}" {limit}/>')
    m = mujoco.MjModel.from_xml_string(pd_controller.HINGE_XML.format(integrator=integrator, actuator=actuator))
    d = mujoco.MjData(m)
    d.qpos[0] = -0.5
    d.ctrl[0] = g * c.position
    d.qfrc_applied[0] = 0.0 if in_clamp else ff
    q = []
    for _ in range(_WRITE_STEPS):
        mujoco.mj_step(m, d)
        q.append(float(d.qpos[0]))
    return np.array(q)


def _run_write(write, case) -> np.ndarray:
    """The learner's write on a PDController driving a plain <motor> (with its own forcerange when the case gives
    one), one tick per physics step: qpos per step."""
    backend, integrator, gear, feedforward, command = case.args
    cls = write if isinstance(write, type) else type('PDControllerWithYourWrite', (pd_controller.PDController,),
                                                         {'write': write})
    limit = case.kwargs.get('motor_forcerange')
    clamp = f' forcelimited="true" forcerange="{-limit!r} {limit!r}"' if limit is not None else ''
    m = mujoco.MjModel.from_xml_string(pd_controller.HINGE_XML.format(
        integrator=integrator, actuator=f'<motor name="drive" joint="hinge" gear="{gear!r}"{clamp}/>'))
    d = mujoco.MjData(m)
    d.qpos[0] = -0.5
    pd = cls(m, ['hinge'], backend=backend, feedforward=feedforward)
    q = []
    for _ in range(_WRITE_STEPS):
        pd.write(d, [command])
        mujoco.mj_step(m, d)
        q.append(float(d.qpos[0]))
    return np.array(q)


def _write_cases():
    """The core's write: gear 1 (the joint's own units, as in the chapter's table) and the velocity target and
    feed-forward inside the clamp (``feedforward='in-clamp'``, the default); in-loop under Euler (where MuJoCo's own
    servo takes kv explicitly too), in-step under implicitfast and RK4, and a motor whose own forcerange is narrower
    than max_effort."""
    JointCommand = loop.JointCommand
    cases = []
    for args in [('in-loop', 'Euler', 1.0, 'in-clamp', JointCommand(position=0.3, stiffness=40.0, damping=0.8,
                                                                     effort=0.05, max_effort=5.0)),
                 ('in-loop', 'Euler', 1.0, 'in-clamp', JointCommand(position=0.3, velocity=0.5, stiffness=40.0,
                                                                     damping=0.8, max_effort=2.0)),
                 ('in-step', 'implicitfast', 1.0, 'in-clamp', JointCommand(position=0.3, stiffness=40.0, damping=0.8)),
                 ('in-step', 'RK4', 1.0, 'in-clamp', JointCommand(position=0.3, velocity=0.5, stiffness=40.0,
                                                                   damping=0.8, effort=0.1, max_effort=2.0)),
                 ('in-step', 'implicitfast', 1.0, 'in-clamp', JointCommand(position=-0.2, velocity=0.2,
                                                                            stiffness=100.0, damping=2.0, effort=0.3,
                                                                            max_effort=3.0))]:
        cases.append(case(_mujoco_servo(*args), *args))
    # the motor's own forcerange (1 N·m) is narrower than max_effort: it must win
    args = ('in-step', 'implicitfast', 1.0, 'in-clamp', JointCommand(position=0.3, stiffness=40.0, damping=0.8,
                                                                     effort=0.1, max_effort=5.0))
    cases.append(case(_mujoco_servo(*args, motor_forcerange=1.0), *args, motor_forcerange=1.0))
    return cases, close(1e-9, ' rad', 'qpos', lambda case, i: f'after step {i + 1}')


# chapter 4 ------------------------------------------------------------------------------------------------------

def _to_radians_cases():
    joints = list(so101.JOINTS)
    values = np.array([[0.0, 90.0, -45.0, 10.0, 180.0, 0.0], [12.5, -30.0, 60.0, -90.0, 5.0, 50.0],
                       [-170.0, 1.0, 2.0, 3.0, 4.0, 100.0]])
    shuffled = [joints[k] for k in (5, 2, 0, 4, 1, 3)]
    cases = [case(arm_replay.to_radians(values, joints), values, joints),
             case(arm_replay.to_radians(values[:, [joints.index(j) for j in shuffled]], shuffled),
                   values[:, [joints.index(j) for j in shuffled]], shuffled),
             case(arm_replay.to_radians(values[:, :5], joints[:5]), values[:, :5], joints[:5]),
             case(arm_replay.to_radians(values[0], joints), values[0], joints)]
    return cases, close(1e-12, ' rad', 'q', lambda case, i: f'frame {i[0]}, joint {so101.JOINTS[i[1]]}')


def _episode(index: int, nframe: int, seed: int):
    """A short recording in the dataset's units: smooth commands, a state that trails them (degrees, 0..100)."""
    rng = np.random.default_rng(seed)
    t = np.arange(nframe) / 30.0
    action = np.stack([a * np.sin(2 * np.pi * f * t + p) for a, f, p in rng.uniform((5, 0.3, 0), (30, 1.5, 6), (6, 3))],
                      axis=1)
    action[:, 5] = 50 + 0.5 * action[:, 5]  # the gripper's 0..100
    state = np.vstack([action[:1], action[:-1]]) + rng.normal(0, 0.2, action.shape)
    return Episode(index=index, fps=30.0, joints=tuple(so101.JOINTS), action=action, state=state, timestamp=t)


def _residuals_cases():
    x = sysid.to_log(arm_replay.MENAGERIE)
    two = np.stack([x, x + np.array([0.3, -0.2, 0.1, 0.0, 0.2, -0.1])], axis=1)
    one, other = [_episode(0, 24, 0)], [_episode(0, 24, 0), _episode(1, 31, 1)]
    cases = []
    for args, kwargs in [((x, one), {}), ((two, one), {}), ((x, other), {'decimate': 3}), ((two, other), {})]:
        cases.append(case(sysid.residuals(*args, **kwargs), *args, **kwargs))
    return cases, close(1e-9, ' deg/√nres', 'r', lambda case, i: f'residual {i[0]} of candidate {i[1]}')


# chapter 5 ------------------------------------------------------------------------------------------------------

def _squeeze_cases():
    """Menagerie's SO-101 shut on a 24 mm cube at three torque limits: the servo's torque (actuator_force, negative:
    closing) and the moving jaw's lever, read off the run, and the jaw's normal force mj_contactForce measured."""
    cases = []
    for limit in (2.94, 1.47, 0.955):
        run = gripper.grip(gripper.GripSetup(torque_limit=limit), hold=0.5)
        tail = slice(-40, None)
        torque, lever = float(np.mean(run.torque[tail])), float(np.mean(run.lever[tail]))
        cases.append(case(float(np.mean(run.jaw_force[tail])), torque, lever))
    return cases, close(0.01, ' N', 'F_n')


def _hold_load_cases():
    """Two flat jaws squeezing a cube (gripper.FLAT_JAWS_XML): the moving jaw's normal force (mj_contactForce) and
    the load at which MuJoCo's cube slipped."""
    cases = []
    for mu, squeeze in ((0.3, 22.0), (1.0, 22.0), (0.5, 10.0)):
        load, normal = gripper.flat_jaws_slip(mu=mu, squeeze=squeeze)
        cases.append(case(load, normal, mu))
    return cases, close(0.02, ' N', 'F_hold')


# chapter 6 ------------------------------------------------------------------------------------------------------

def _register_kp_cases():
    cases = []
    for p, v in ((16, 7.4), (32, 7.4), (16, 5.0), (16, 12.0), (0, 7.4), (np.array([8.0, 16.0, 24.0]), 7.4)):
        law = dataclasses.replace(servo_gain.BAM_STS3215, supply_voltage=v)  # chapter 4's duty-gain law at V
        cases.append(case(law.kp(p), p, v))
    return cases, close(1e-12, ' N·m/rad', 'kp')


PID_XML = """<mujoco><option timestep="{dt!r}"/><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
  <geom type="sphere" size="0.05" mass="1"/></body></worldbody>
  <actuator><pid joint="j" kp="20" slewmax="{slewmax!r}" input="pos"/></actuator></mujoco>"""


def _mujoco_set_points(commands: np.ndarray, slewmax: float, dt: float) -> np.ndarray:
    """The set point MuJoCo's pid actuator holds after each step (its activation, 0 after a reset), fed
    ``commands``."""
    m = mujoco.MjModel.from_xml_string(PID_XML.format(slewmax=slewmax, dt=dt))
    d = mujoco.MjData(m)
    out = []
    for u in commands:
        d.ctrl[0] = u
        mujoco.mj_step(m, d)
        out.append(d.act[0])
    return np.array(out)


def _slew_cases():
    ramp = np.concatenate([np.zeros(3), np.full(40, 0.5), np.full(30, -0.2)])
    wiggle = 0.3 * np.sin(np.arange(80) * 0.4)
    cases = [case(_mujoco_set_points(u, rate, dt), u, rate, dt, previous=0.0)  # the set point starts at 0
             for u, rate, dt in ((ramp, 2.0, 0.01), (ramp, 100.0, 0.01), (wiggle, 1.5, 0.005), (wiggle[:1], 1.0, 0.01),
                                 (ramp + 0.3, 5.0, 0.01))]
    return cases, close(1e-12, ' rad', 'set point', lambda case, i: f'after step {i + 1}')


CHECKS = {
    'actuator_force': _actuator_force_cases,
    'kv_from_dampratio': _kv_cases,
    'semi_implicit_euler': _euler_cases,
    'servo_loop': _loop_cases,
    'servo_sag': _sag_cases,
    'step_growth': _growth_cases,
    'pd_torque': _pd_torque_cases,
    'dc_motor_envelope': _envelope_cases,
    'remotized_limit': _remotized_cases,
    'delay_commands': _delay_cases,
    'mit_torque': _mit_cases,
    'zoh_step': _zoh_cases,
    'write': _write_cases,
    'to_radians': _to_radians_cases,
    'residuals': _residuals_cases,
    'squeeze_force': _squeeze_cases,
    'hold_load': _hold_load_cases,
    'register_kp': _register_kp_cases,
    'slew_limited': _slew_cases,
}

CALLS = {'write': _run_write}
"""How a check calls a learner's function when it is not ``function(*args, **kwargs)``."""

AGAINST_REFERENCE = ('semi_implicit_euler', 'step_growth', 'dc_motor_envelope', 'remotized_limit', 'delay_commands',
                      'to_radians', 'residuals', 'register_kp')
"""Checked against physai's reference (or the docstring's formula), where MuJoCo has no single field for it."""

ORACLE = {
    'actuator_force': "MuJoCo's qfrc_actuator / gear for a motor, a position and a velocity actuator",
    'kv_from_dampratio': "the kv MuJoCo resolves from <position dampratio> when the model compiles",
    'semi_implicit_euler': 'the reference step (physai.laws.sim, checked against mj_step in tests/test_sim.py)',
    'servo_loop': "MuJoCo's mj_step on the book's link (implicitfast), every step",
    'servo_sag': "MuJoCo's static balance: no net torque on the link held at the sag",
    'step_growth': 'the reference growth (physai.laws.sim, checked against MuJoCo runs in the growth table)',
    'pd_torque': "MuJoCo's actuator_force of a <general> PD (gain kp, bias kv·qd* + τ_ff, −kp, −kv)",
    'dc_motor_envelope': 'the reference band (physai.laws.drives, tested in tests/test_drives.py)',
    'remotized_limit': "the reference lookup (physai.laws.drives: np.interp, held at the table's ends)",
    'delay_commands': 'out[k] = commands[max(k - delay, 0)], row by row',
    'mit_torque': "MuJoCo's actuator_force of a <general> PD clamped by forcerange ±max_effort",
    'zoh_step': "MuJoCo's Euler step (joint damping implicit) with the PD force held over each tick",
    'write': "MuJoCo's own <general> PD servo (and <motor> in-loop under Euler), qpos at every step",
    'to_radians': "the reference (physai.engine.arm_replay, the gripper's range read from the SO-101 model)",
    'residuals': 'the reference (physai.engine.sysid.residuals on the same arm_replay.replay, a batch of MuJoCo runs)',
    'squeeze_force': "MuJoCo's mj_contactForce on the SO-101's moving jaw, shut on a cube at three torque limits",
    'hold_load': "MuJoCo's load at which a cube squeezed between two flat jaws slips (mj_contactForce for F_n)",
    'register_kp': "chapter 4's duty-gain law (physai.laws.servo_gain, BAM's STS3215) at the supply voltage",
    'slew_limited': "MuJoCo's pid actuator: its set point (mjData.act) after every step",
}
