"""Build it, for real: the learner writes chapter 1's functions, and each is checked against MuJoCo.

Every "Build it" step of chapter 1 names one function of :mod:`physai.sim`. For each, this module gives

- :func:`stub`: the source of a cell to complete, the reference's signature and docstring (the equation is in it)
  with a body that raises ``NotImplementedError``;
- :func:`check`: runs the learner's function on a fixed set of inputs and compares it with MuJoCo (or, where MuJoCo
  has no single field for it, with the reference in :mod:`physai.sim`, itself tested against MuJoCo), and prints
  either that it passes or the first input where it differs, with what was expected and what it gave.

A check of a function that still raises ``NotImplementedError`` says so and passes nothing, without raising, so a
notebook that has not been completed still runs top to bottom (its stored output is that message). With
``strict=True`` a failure raises :class:`BuildItError`.

    from physai import buildit
    print(buildit.stub('actuator_force'))      # the cell to complete
    buildit.check(actuator_force)              # after writing it
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import textwrap
from collections.abc import Callable

import mujoco
import numpy as np

from physai import sim
from physai.servo import LINK_INERTIA, LINK_XML, TAU_G

FUNCTIONS = ('actuator_force', 'kv_from_dampratio', 'semi_implicit_euler', 'servo_loop', 'servo_sag', 'step_growth')
"""The functions chapter 1's Build it has the reader write, in the order of its steps."""


class BuildItError(AssertionError):
    """A learner's function disagrees with MuJoCo (raised by :func:`check` with ``strict=True``)."""


@dataclasses.dataclass(frozen=True)
class Result:
    """What :func:`check` found."""

    name: str
    """The function checked."""
    passed: bool
    """True when every case agreed."""
    cases: int
    """How many cases ran (up to the first that failed)."""
    message: str
    """The sentence :func:`check` printed."""


STUB_IMPORTS = 'import math\nfrom collections.abc import Callable, Sequence\n\nimport numpy as np\n\n\n'
"""What a stub's signature and a body may use, imported at the top of the cell."""


def stub(name: str) -> str:
    """The source of a cell to complete: ``name``'s signature and docstring, and a body to write.

    Raises:
        ValueError: ``name`` is not one of ``FUNCTIONS``.
    """
    function = _reference(name)
    source = inspect.getsource(function)
    header = source[:source.index('"""')]  # the def line(s), up to the docstring
    doc = textwrap.indent('"""' + (inspect.getdoc(function) or '') + '\n"""', '    ')
    return (f'{STUB_IMPORTS}{header.rstrip()}\n{doc}\n'
            f'    # Your code here: replace the next line by the body, then run the check below.\n'
            f'    raise NotImplementedError(\'{name}: not written yet\')\n')


def solution(name: str) -> str:
    """The worked solution: the source of ``physai.sim.<name>``."""
    return inspect.getsource(_reference(name))


def check(function: Callable, name: str | None = None, *, strict: bool = False, say=print) -> Result:
    """Check a learner's ``function`` against MuJoCo; print one sentence saying what was found.

    Args:
        function: the learner's function (same signature as ``physai.sim.<name>``).
        name: which function of ``FUNCTIONS`` it is; default ``function.__name__``.
        strict: raise :class:`BuildItError` on a disagreement instead of only printing it.
        say: prints the sentence.
    """
    name = name or function.__name__
    cases, compare = _CHECKS[_known(name)]()
    for k, case in enumerate(cases, 1):
        try:
            got = function(*case.args, **case.kwargs)
        except NotImplementedError:
            return _report(Result(name, False, k - 1, f'{name} is not written yet: complete its cell above, run '
                                  'it, then run this check again.'), say, strict=False, mark='… ')
        except Exception as error:  # the learner's code failed: say on which input
            return _report(Result(name, False, k, f'{name}{case.shown} raised {type(error).__name__}: {error}'),
                           say, strict)
        problem = compare(case, got)
        if problem:
            return _report(Result(name, False, k, f'{name}{case.shown}: {problem}'), say, strict)
    return _report(Result(name, True, len(cases), f'{name} passes: all {len(cases)} cases agree with '
                          f'{_ORACLE[name]}.'), say, strict)


def _report(result: Result, say, strict: bool, mark: str | None = None) -> Result:
    say((mark or ('✓ ' if result.passed else '✗ ')) + result.message)
    if strict and not result.passed:
        raise BuildItError(result.message)
    return result


def _known(name: str) -> str:
    if name not in FUNCTIONS:
        raise ValueError(f'name must be one of {", ".join(FUNCTIONS)}, got {name!r}')
    return name


def _reference(name: str) -> Callable:
    return getattr(sim, _known(name))


@dataclasses.dataclass(frozen=True)
class _Case:
    args: tuple
    kwargs: dict
    expected: object
    shown: str


def _case(expected, *args, **kwargs) -> _Case:
    def fmt(value):
        if callable(value):
            return getattr(value, '__name__', 'a function')
        if isinstance(value, np.ndarray):
            return np.array2string(value, precision=4)
        if isinstance(value, float):
            return f'{value:.6g}'
        return repr(value)
    shown = ', '.join([fmt(a) for a in args] + [f'{k}={fmt(v)}' for k, v in kwargs.items()])
    return _Case(args, kwargs, expected, f'({shown})')


def _close(tol: float, unit: str = '') -> Callable[[_Case, object], str | None]:
    def compare(case: _Case, got) -> str | None:
        expected = np.asarray(case.expected, dtype=float)
        try:
            value = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            return f'expected {_show(expected)}{unit}, got {got!r}'
        if value.shape != expected.shape:
            return f'expected shape {expected.shape}, got {value.shape} ({_show(value)})'
        both_nan = np.isnan(expected) & np.isnan(value)
        bad = ~both_nan & ~(np.abs(value - expected) <= tol * (1 + np.abs(expected)))
        if np.any(bad):
            if expected.ndim:
                i = int(np.flatnonzero(bad)[0])
                return (f'at index {i} expected {expected.flat[i]:.10g}{unit}, got {value.flat[i]:.10g} '
                        f'({int(bad.sum())} of {bad.size} values differ)')
            return f'expected {float(expected):.10g}{unit}, got {float(value):.10g}'
        return None
    return compare


def _show(value: np.ndarray) -> str:
    return np.array2string(np.asarray(value), precision=6) if np.ndim(value) else f'{float(value):.10g}'


# --- the cases and their oracles ---------------------------------------------------------------------------------

_ACTUATORS_XML = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body><joint name="a" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
    <body pos="1 0 0"><joint name="b" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
    <body pos="2 0 0"><joint name="c" type="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>
  </worldbody>
  <actuator>
    <motor joint="a" gear="3"/>
    <position joint="b" kp="40" kv="2" forcerange="-5 5" gear="2"/>
    <velocity joint="c" kv="0.7"/>
  </actuator>
</mujoco>
"""


def _actuator_force_cases():
    m = mujoco.MjModel.from_xml_string(_ACTUATORS_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    cases = []
    for _ in range(8):
        d.qpos[:] = rng.uniform(-1, 1, 3)
        d.qvel[:] = rng.uniform(-3, 3, 3)
        d.ctrl[:] = rng.uniform(-1, 1, 3)
        mujoco.mj_forward(m, d)
        for i in range(3):
            gear = m.actuator_gear[i, 0]
            forcerange = list(m.actuator_forcerange[i]) if m.actuator_forcelimited[i] else None
            # MuJoCo's joint torque is gear × force: the expected force is qfrc_actuator / gear
            cases.append(_case(d.qfrc_actuator[i] / gear, float(d.ctrl[i]), float(gear * d.qpos[i]),
                               float(gear * d.qvel[i]), [float(x) for x in m.actuator_gainprm[i, :3]],
                               [float(x) for x in m.actuator_biasprm[i, :3]],
                               None if forcerange is None else [float(x) for x in forcerange]))
    return cases, _close(1e-9, ' N·m')


def _kv_cases():
    cases = []
    for kp, zeta, armature in [(10.0, 1.0, 0.0), (100.0, 0.5, 0.01), (998.22, 1.0, 0.028), (3.0, 2.0, 0.2)]:
        xml = LINK_XML.replace('armature="0.028"', f'armature="{armature}"').replace(
            'kp="1" kv="0"', f'kp="{kp}" dampratio="{zeta}"')
        m = mujoco.MjModel.from_xml_string(xml)
        # MuJoCo's resolved kv, and the inertia it used: the joint's diagonal of the mass matrix at qpos0
        cases.append(_case(-m.actuator_biasprm[0, 2], kp, zeta, float(m.dof_M0[0])))
    return cases, _close(1e-9, ' N·m·s/rad')


def _euler_cases():
    def spring(q, v):
        return -400.0 * q - 3.0 * v

    def gravity(q, v):
        return -9.81 * math.cos(q)
    cases = []
    for q, v, accel, h, c in [(0.1, 0.0, spring, 0.005, 0.0), (-0.3, 1.5, spring, 0.002, 20.0),
                              (0.5, -2.0, gravity, 0.01, 0.0), (1.0, 0.25, gravity, 0.001, 5.0)]:
        cases.append(_case(np.array(sim.semi_implicit_euler(q, v, accel, h, c)), q, v, accel, h, c))

    def compare(case, got):
        try:
            q, v = got
        except (TypeError, ValueError):
            return f'expected a pair (q, v), got {got!r}'
        return _close(1e-12)(case, np.array([q, v], dtype=float))
    return cases, compare


def _loop_cases():
    cases = []
    for kp, armature, h, nstep, q0 in [(30.0, 0.028, 0.005, 200, -0.5), (1000.0, 0.028, 0.005, 100, -0.5),
                                       (100.0, 0.002, 0.002, 300, 0.3)]:
        inertia = LINK_INERTIA + armature
        kv = 2 * math.sqrt(kp * inertia)
        m = mujoco.MjModel.from_xml_string(LINK_XML.replace('armature="0.028"', f'armature="{armature}"')
                                           .replace('timestep="0.005"', f'timestep="{h}"'))
        m.actuator_gainprm[0, 0] = kp
        m.actuator_biasprm[0, :3] = (0.0, -kp, -kv)
        d = mujoco.MjData(m)
        d.qpos[0] = q0
        q = [q0]
        for _ in range(nstep):
            mujoco.mj_step(m, d)
            q.append(float(d.qpos[0]))
        cases.append(_case(np.array(q), kp, kv, inertia, TAU_G, h, nstep, q0=q0))
    return cases, _close(1e-9, ' rad')


def _sag_cases():
    cases = []
    for kp in (0.3, 1.0, 10.0, 100.0, 998.22):
        cases.append(_case(kp, kp, TAU_G))

    def compare(case, got):
        kp, tau_g = case.args
        try:
            e = float(got)
        except (TypeError, ValueError):
            return f'expected a number (the sag e, rad), got {got!r}'
        if not 0 < e < math.pi / 2:
            return f'expected the root in (0, π/2) rad, got {e:.10g}'
        # MuJoCo's static balance: the link held at q = -e with ctrl 0 and at rest must not accelerate
        m = mujoco.MjModel.from_xml_string(LINK_XML)
        m.actuator_gainprm[0, 0] = kp
        m.actuator_biasprm[0, :3] = (0.0, -kp, 0.0)
        d = mujoco.MjData(m)
        d.qpos[0] = -e
        mujoco.mj_forward(m, d)
        residual = float(d.qfrc_actuator[0] - d.qfrc_bias[0])
        if abs(residual) > 1e-9 * max(1.0, kp):
            expected = sim.servo_sag(kp, tau_g)
            return (f'expected {expected:.10g} rad, got {e:.10g}: there MuJoCo still has a net torque of '
                    f'{residual:.3g} N·m on the link (spring minus gravity)')
        return None
    return cases, compare


def _growth_cases():
    cases = []
    for h, w2, c, c_implicit in [(0.005, 400.0, 3.0, 0.0), (0.005, 4e4, 60.0, 60.0), (0.005, 4e4, 60.0, 0.0),
                                 (0.002, 1e6, 0.0, 0.0)]:
        cases.append(_case(sim.step_growth(sim.semi_implicit_euler, h, w2, c, c_implicit=c_implicit),
                           sim.semi_implicit_euler, h, w2, c, c_implicit=c_implicit))
    return cases, _close(1e-9)


_CHECKS = {
    'actuator_force': _actuator_force_cases,
    'kv_from_dampratio': _kv_cases,
    'semi_implicit_euler': _euler_cases,
    'servo_loop': _loop_cases,
    'servo_sag': _sag_cases,
    'step_growth': _growth_cases,
}
_ORACLE = {
    'actuator_force': "MuJoCo's qfrc_actuator / gear for a motor, a position and a velocity actuator",
    'kv_from_dampratio': "the kv MuJoCo resolves from <position dampratio> when the model compiles",
    'semi_implicit_euler': 'the reference step (physai.sim, checked against mj_step in tests/test_sim.py)',
    'servo_loop': "MuJoCo's mj_step on the book's link (implicitfast), every step",
    'servo_sag': "MuJoCo's static balance: no net torque on the link held at the sag",
    'step_growth': 'the reference growth (physai.sim, checked against MuJoCo runs in the growth table)',
}
