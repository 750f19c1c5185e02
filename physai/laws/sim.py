"""The functions the reader writes in chapter 1's "Build it", each checked against MuJoCo in tests/test_sim.py.

Symbols and their MuJoCo fields:

=========  ==========================================  ======
symbol     MuJoCo                                      unit
=========  ==========================================  ======
u          ``d.ctrl``                                  rad (position) / N·m (motor)
l, l̇       ``d.actuator_length``, ``d.actuator_velocity``  rad, rad/s
gainprm    ``m.actuator_gainprm`` (first entry used)   -
biasprm    ``m.actuator_biasprm`` (first three used)   -
kp, kv     ``gainprm[0]``, ``-biasprm[2]``             N·m/rad, N·m·s/rad
I          ``d.M`` on the joint's diagonal, incl. ``m.dof_armature``  kg·m²
h          ``m.opt.timestep``                          s
=========  ==========================================  ======
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np

from physai.laws import checks


DIVERGED_BOUND = 20 * math.pi
"""rad: a hand-stepped run beyond this has diverged (the bound :func:`physai.engine.mj.diverged` applies to MuJoCo's
runs too)."""

MAX_LOOP_STEPS = 1_000_000
"""Steps :func:`servo_loop` takes at most (a pure-Python loop: about a second per 10⁵ steps)."""


def _positive_array(name: str, value, unit: str):
    """A number or array whose entries are all finite and > 0 (ValueError otherwise)."""
    array = checks.real_array(name, value, unit)
    if array.ndim == 0:
        return checks.positive(name, value, unit)
    if not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f'{name} must be finite numbers > 0 {unit}, got {value!r}')
    return array


def _nonnegative_array(name: str, value, unit: str):
    """A number or array whose entries are all finite and >= 0 (ValueError otherwise)."""
    array = checks.real_array(name, value, unit)
    if array.ndim == 0:
        return checks.nonnegative(name, value, unit)
    if not np.all(np.isfinite(array) & (array >= 0)):
        raise ValueError(f'{name} must be finite numbers >= 0 {unit}, got {value!r}')
    return array


def _numbers(name: str, value, count: int, *, exactly: bool = False) -> np.ndarray:
    """At least (or exactly) ``count`` finite numbers, as a float array (ValueError otherwise)."""
    try:
        array = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        array = None
    wrong_size = array is None or (array.size != count if exactly else array.size < count)
    if wrong_size or not np.all(np.isfinite(array[:count])):
        need = f'{count}' if exactly else f'at least {count}'
        raise ValueError(f'{name} must hold {need} finite number{"s" if count > 1 else ""}, got {value!r}')
    return array


def actuator_force(ctrl, length, velocity, gainprm: Sequence[float], biasprm: Sequence[float],
                   forcerange: Sequence[float] | None = None):
    """MuJoCo's affine actuator force.

    ``force = gainprm[0]*ctrl + biasprm[0] + biasprm[1]*length + biasprm[2]*velocity``,
    then clipped to ``forcerange`` when given. The shortcuts are choices of the numbers:
    ``<motor>`` gain 1 and no bias; ``<position kp kv>`` gain kp, bias (0, -kp, -kv);
    ``<velocity kv>`` gain kv, bias (0, 0, -kv). The joint torque is ``gear * force`` and
    ``length``, ``velocity`` are ``gear`` times the joint's.

    Args:
      ctrl: control ``u``, scalar or array.
      length: actuator length ``l`` (rad for a hinge with gear 1), broadcastable with ``ctrl``.
      velocity: actuator velocity (rad/s), broadcastable with ``ctrl``.
      gainprm: at least one number, ``m.actuator_gainprm``.
      biasprm: at least three numbers, ``m.actuator_biasprm``.
      forcerange: ``(low, high)``, ``m.actuator_forcerange``, or None for no clamp.

    Returns:
      The actuator force, the broadcast shape of the inputs.

    Raises:
      ValueError: ``ctrl``, ``length`` or ``velocity`` not numbers (None is refused, not read as NaN), too few
        finite ``gainprm`` / ``biasprm``, or a ``forcerange`` that is not (low, high) with low <= high.
    """
    gainprm, biasprm = _numbers('gainprm', gainprm, 1), _numbers('biasprm', biasprm, 3)
    if forcerange is not None:
        _numbers('forcerange', forcerange, 2, exactly=True)
    force = (gainprm[0] * checks.real_array('ctrl', ctrl) + biasprm[0]
             + biasprm[1] * checks.real_array('length', length)
             + biasprm[2] * checks.real_array('velocity', velocity, 'rad/s'))
    if forcerange is not None:
        low, high = forcerange
        if low > high:
            raise ValueError(f'forcerange must be (low, high) with low <= high, got ({low}, {high})')
        force = np.clip(force, low, high)
    return force


def kv_from_dampratio(kp, dampratio, inertia):
    """Damping gain for a damping ratio: ``kv = 2 * dampratio * sqrt(kp * inertia)``.

    This is what MuJoCo's ``<position dampratio=...>`` resolves to when the model compiles, with ``inertia`` the
    inertia the actuator drives at ``qpos0``, armature included. For one joint alone, as on the book's link, that is
    its diagonal of the mass matrix, M_ii. On a chain MuJoCo 3.15 and later take the operational-space inertia
    1/(M⁻¹)_jj of the joint instead (its changelog, 3.15.0), which is smaller than M_ii when the joint is coupled to
    others.

    Args:
      kp: stiffness, N·m/rad (> 0).
      dampratio: damping ratio ζ (1 is critical).
      inertia: I, kg·m² (> 0).

    Returns:
      kv in N·m·s/rad (an array when any input is one).
    """
    kp = _positive_array('kp', kp, 'N·m/rad')
    inertia = _positive_array('inertia', inertia, 'kg·m²')
    dampratio = _nonnegative_array('dampratio', dampratio, '')
    return 2.0 * dampratio * np.sqrt(kp) * np.sqrt(inertia)  # two roots: kp*inertia may overflow


def servo_sag(kp: float, tau_g: float, *, tol: float = 1e-14, max_iter: int = 100) -> float:
    """Steady error ``e`` of a PD servo holding a horizontal link against gravity.

    At rest the spring balances gravity: ``kp * e = tau_g * cos(e)``. For ``tau_g > 0`` the left side
    rises from 0 and the right side falls to 0 on [0, π/2], so exactly one root lies there. Newton's
    method finds it from ``e = tau_g / kp`` (the small-angle answer), kept inside that bracket: a step
    that would leave it is replaced by bisection, so even a soft servo (kp below tau_g, a sag of tens
    of degrees) converges to the physical root.

    Args:
      kp: stiffness, N·m/rad (> 0).
      tau_g: gravity torque of the horizontal link, N·m (> 0).
      tol: stop when a step moves e by less than this, rad (> 0).
      max_iter: the most Newton steps, a whole number >= 1.

    Returns:
      e in rad, in (0, π/2) (positive: the link hangs below the command).
    """
    checks.positive('kp', kp, 'N·m/rad')
    checks.positive('tau_g', tau_g, 'N·m')
    checks.positive('tol', tol, 'rad')
    checks.whole('max_iter', max_iter, 1)
    low, high = 0.0, math.pi / 2
    e = min(tau_g / kp, 1.0)
    for _ in range(max_iter):
        residual = kp * e - tau_g * math.cos(e)
        if residual > 0:
            high = e
        else:
            low = e
        step = residual / (kp + tau_g * math.sin(e))
        e_next = e - step
        if not low < e_next < high:
            e_next = 0.5 * (low + high)
        if abs(e_next - e) < tol:
            return float(e_next)
        e = e_next
    raise RuntimeError(f'servo_sag did not converge for kp={kp}, tau_g={tau_g}')


def semi_implicit_euler(q, v, accel: Callable, h: float, c_implicit: float = 0.0):
    """One semi-implicit Euler step.

    ``v' = v + h * accel(q, v) / (1 + h * c_implicit)``, then ``q' = q + h * v'``.

    ``c_implicit`` is the velocity damping (per unit inertia, 1/s) that the step treats implicitly. ``accel``
    includes it at the old velocity, so the damping is not counted twice: the implicit step swaps ``-c*v`` for
    ``-c*v'``, ``v' = v + h * (accel(q, v) + c*v - c*v')``, and solving for ``v'`` gives the line above.
    With ``c_implicit = (kv + damping) / I`` this is MuJoCo's ``implicitfast`` step for a link driven
    by a ``<position>`` servo; with ``c_implicit = damping / I`` it is MuJoCo's ``Euler`` (which
    integrates only the joint damping implicitly).

    Args:
      q: position, rad (a number or an array; NaN passes through, as a diverged state does).
      v: velocity, rad/s (the same).
      accel: ``accel(q, v)``, the acceleration with every force explicit, rad/s².
      h: timestep, s (a finite number > 0).
      c_implicit: implicit damping per unit inertia, 1/s (>= 0; inf, beyond floating point, holds the velocity).

    Returns:
      ``(q', v')``.

    Raises:
      ValueError: ``h`` not a finite number > 0, or ``c_implicit`` negative or NaN (at ``h*c_implicit = -1`` the
        step would divide by zero).
    """
    checks.positive('h', h, 's')
    checks.rate('c_implicit', c_implicit)
    v_next = v + h * accel(q, v) / (1.0 + h * c_implicit)
    return q + h * v_next, v_next


def step_growth(step: Callable, h: float, w2: float, c: float, **step_kwargs) -> float:
    """Growth per step of ``step`` on the linear oscillator ``a = -w2*q - c*v``.

    The step is linear in (q, v) for this acceleration, so it is a 2×2 matrix ``A`` whose columns are
    the images of (1, 0) and (0, 1); the growth is its spectral radius ``max |eig(A)|``. Above 1 the
    discrete motion grows without bound.

    Args:
      step: a step like :func:`semi_implicit_euler`, called as ``step(q, v, accel, h, **step_kwargs)``.
      h: timestep, s.
      w2: ω² = kp / I, 1/s², >= 0 (inf: beyond floating point, which diverges).
      c: damping per unit inertia, (kv + damping) / I, 1/s, >= 0 (inf as for w2).
      **step_kwargs: passed on to ``step`` (e.g. ``c_implicit``).

    Returns:
      The spectral radius (``inf`` for a step that overflows: it diverges).

    Raises:
      ValueError: ``h`` not a finite number > 0, ``w2`` or ``c`` negative or NaN.
    """
    checks.positive('h', h, 's')
    checks.rate('w2', w2, '1/s²')
    checks.rate('c', c, '1/s')

    def accel(q, v):
        return -w2 * q - c * v

    with np.errstate(over='ignore', invalid='ignore'):
        columns = [step(1.0, 0.0, accel, h, **step_kwargs), step(0.0, 1.0, accel, h, **step_kwargs)]
        matrix = np.array(columns, dtype=float).T
    if not np.all(np.isfinite(matrix)):  # a step so large it overflows: it diverges, say so
        return math.inf
    return float(np.max(np.abs(np.linalg.eigvals(matrix))))


def _check_loop(*, kp, kv, inertia, tau_g, h, nstep, q0, u, damping) -> None:
    """:func:`servo_loop`'s inputs, each with its range (ValueError naming the first one outside it)."""
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    checks.finite('tau_g', tau_g, 'N·m')
    checks.timestep(h, 'h')
    if not (isinstance(nstep, numbers.Integral) and 0 <= nstep <= MAX_LOOP_STEPS):
        raise ValueError(f'nstep must be a whole number in [0, {MAX_LOOP_STEPS:,}], got {nstep!r}')
    checks.finite('q0', q0, 'rad')
    checks.finite('u', u, 'rad')
    checks.nonnegative('damping', damping, 'N·m·s/rad')


def servo_loop(kp: float, kv: float, inertia: float, tau_g: float, h: float, nstep: int, *,
               q0: float = -0.5, u: float = 0.0, damping: float = 0.0) -> np.ndarray:
    """The Experiment's link and its ``<position>`` servo, stepped by hand.

    ``I*a = kp*(u - q) - (kv + damping)*v - tau_g*cos(q)``, from rest at ``q0``, each step a
    :func:`semi_implicit_euler` step with the damping taken implicitly (``c_implicit = (kv + damping)/I``):
    MuJoCo's ``implicitfast``.

    Args:
      kp, kv: the servo's gains, N·m/rad and N·m·s/rad.
      inertia: I, the joint's inertia with armature, kg·m².
      tau_g: gravity torque of the horizontal link, N·m.
      h: timestep, s.
      nstep: number of steps.
      q0: start angle, rad; u: the command, rad; damping: joint damping, N·m·s/rad.

    Returns:
      q, (nstep + 1,), rad, starting with q0. A run that diverges (``|q|`` beyond ``DIVERGED_BOUND``, 20π
      rad, as in :mod:`physai.engine.link`) is NaN from there on.

    Raises:
      ValueError: a parameter outside its range (named in the message); ``nstep`` above ``MAX_LOOP_STEPS``
        (1,000,000).
    """
    _check_loop(kp=kp, kv=kv, inertia=inertia, tau_g=tau_g, h=h, nstep=nstep, q0=q0, u=u, damping=damping)
    c = (kv + damping) / inertia

    def accel(q, v):
        return (kp * (u - q) - (kv + damping) * v - tau_g * math.cos(q)) / inertia

    q = np.full(nstep + 1, np.nan)
    q[0], v = q0, 0.0
    for k in range(nstep):
        q[k + 1], v = semi_implicit_euler(q[k], v, accel, h, c_implicit=c)
        if not abs(q[k + 1]) <= DIVERGED_BOUND:  # diverged (or NaN): the rest stays NaN
            q[k + 1] = np.nan
            break
    return q
