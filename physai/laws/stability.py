"""When does a stiff servo blow up? The linear stability of one semi-implicit Euler step.

Linearize the servo-driven joint around its rest point: ``a = -w2*q - c*v`` with ``w2 = ω² = kp/I`` and
``c = (kv + damping)/I``, ``I = M_ii`` (armature included). One step of
:func:`physai.laws.sim.semi_implicit_euler` that treats the part ``c_implicit`` of the damping implicitly is the
linear map

    v' = α v - (h ω²/β) q,   q' = q + h v',   β = 1 + h c_implicit,   α = 1 - h c/β.

Its trace is ``1 + α - h²ω²/β`` and its determinant ``α``. The map is stable (growth per step below 1,
Jury's test) exactly when

    h²ω² < 4 + 4 h c_implicit - 2 h c        (the oscillation bound)
    h c  < 2 (1 + h c_implicit)              (the damping bound).

Which damping is implicit depends on MuJoCo's integrator:

============  =================  ============================
integrator    c_implicit         oscillation bound
============  =================  ============================
implicitfast  (kv + damping)/I   h²ω² < 4 + 2hc
implicit      (kv + damping)/I   h²ω² < 4 + 2hc
Euler         damping/I          h²ω² < 4 + 2h(damping - kv)/I
fully explicit 0                 h²ω² < 4 - 2hc
============  =================  ============================

Without damping both reduce to the rule of thumb hω < 2. (``RK4`` and ``discrete`` are other schemes:
RK4 is explicit with a larger region, and ``discrete`` also treats the stiffness kp implicitly.)

Symbols: h ``m.opt.timestep`` (s); kp ``actuator_gainprm[0]`` (N·m/rad); kv ``-actuator_biasprm[2]``
(N·m·s/rad); damping ``dof_damping`` (N·m·s/rad); I the joint's ``M_ii`` incl. ``dof_armature`` (kg·m²).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from physai.laws import checks
from physai.laws.sim import semi_implicit_euler, step_growth


IMPLICIT_DAMPING = ('Euler', 'implicit', 'implicitfast')


def c_implicit_for(integrator: str, kv: float, damping: float, inertia: float) -> float:
    """The damping per unit inertia (1/s) that MuJoCo's ``integrator`` treats implicitly.

    Euler integrates only the joint's ``damping`` implicitly; implicit and implicitfast also the
    actuator's kv (its velocity derivative). Other integrators do not fit the one-step model.

    Args:
      integrator: one of ``IMPLICIT_DAMPING``.
      kv, damping: N·m·s/rad, finite numbers (or arrays) >= 0.
      inertia: I, kg·m², a finite number > 0.
    """
    _gain('kv', kv, 'N·m·s/rad')
    _gain('damping', damping, 'N·m·s/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    if integrator == 'Euler':
        return damping / inertia
    if integrator in ('implicit', 'implicitfast'):
        return (kv + damping) / inertia
    raise ValueError(f'integrator must be one of {", ".join(IMPLICIT_DAMPING)}, got {integrator!r}')


def _gain(name: str, value, unit: str):
    """A finite number >= 0, or an array of them (ValueError naming ``name`` otherwise), returned as given."""
    array = checks.real_array(name, value, unit)
    if not np.all(np.isfinite(array) & (array >= 0)):
        raise ValueError(f'{name} must be a finite number >= 0 {unit}, got {value!r}')
    return value


def _timesteps(name: str, value):
    """A finite number > 0 s, or an array of them, returned as given."""
    array = checks.real_array(name, value, 's')
    if array.size == 0 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f'{name} must be a finite number > 0 s, got {value!r}')
    return value


def oscillation_bound(h: float, c: float, c_implicit: float = 0.0) -> float:
    """The largest stable h²ω²: ``4 + 4*h*c_implicit - 2*h*c`` (dimensionless).

    Args:
      h: timestep, s (> 0; a number or an array).
      c: total damping per unit inertia, (kv + damping)/I, 1/s (finite, >= 0).
      c_implicit: the part of ``c`` the step treats implicitly, 1/s (finite, >= 0).
    """
    _timesteps('h', h)
    _gain('c', c, '1/s')
    _gain('c_implicit', c_implicit, '1/s')
    return 4.0 + 4.0 * h * c_implicit - 2.0 * h * c


def is_stable_linear(h: float, w2: float, c: float, c_implicit: float = 0.0) -> bool:
    """True when both bounds hold: ``h²ω² < 4 + 4h·c_implicit - 2hc`` and ``hc < 2(1 + h·c_implicit)``.

    ``h`` > 0 s, ``w2`` = ω² >= 0 (1/s²), ``c`` and ``c_implicit`` >= 0 (1/s), all finite numbers.
    """
    checks.positive('h', h, 's')
    checks.nonnegative('w2', w2, '1/s²')
    checks.nonnegative('c', c, '1/s')
    checks.nonnegative('c_implicit', c_implicit, '1/s')
    return bool(h * h * w2 < oscillation_bound(h, c, c_implicit)
                and h * c < 2.0 * (1.0 + h * c_implicit))


def critical_inertia(kp: float, *, kv: float, damping: float, timestep: float,
                     integrator: str = 'Euler') -> float:
    """The joint inertia (kg·m²) below which the linearized servo step is unstable.

    With ``c = (kv + damping)/I`` and ``c_implicit = e_i/I`` both bounds are linear in I:
    ``I > (h²kp - 4h·e_i + 2h(kv + damping))/4`` and ``I > h((kv + damping) - 2e_i)/2``.

    Args:
      kp: N·m/rad; kv, damping: N·m·s/rad; finite numbers >= 0.
      timestep: h, s, in (0, 0.1].
      integrator: one of ``IMPLICIT_DAMPING``.
    """
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.nonnegative('damping', damping, 'N·m·s/rad')
    checks.timestep(timestep)
    e = kv + damping
    e_i = c_implicit_for(integrator, kv, damping, 1.0)
    h = timestep
    return max((h * h * kp - 4.0 * h * e_i + 2.0 * h * e) / 4.0, h * (e - 2.0 * e_i) / 2.0, 0.0)


def critical_armature(kp: float, *, kv: float, damping: float, timestep: float,
                      integrator: str = 'Euler', link_inertia: float) -> float:
    """The armature (kg·m²) below which the step is unstable: critical inertia minus the link's part
    (``link_inertia``, kg·m², a finite number >= 0; the other arguments as :func:`critical_inertia`)."""
    checks.nonnegative('link_inertia', link_inertia, 'kg·m²')
    return critical_inertia(kp, kv=kv, damping=damping, timestep=timestep,
                            integrator=integrator) - link_inertia


def armature_at_h_omega(h_omega: float, kp: float, timestep: float, *, link_inertia: float) -> float:
    """The armature (kg·m²) at which ``h*sqrt(kp/(link_inertia + armature))`` equals ``h_omega``.

    Negative when even no armature keeps hω below ``h_omega`` (the link alone is heavy enough).

    Args:
      h_omega: hω, a finite number > 0.
      kp: N·m/rad, a finite number > 0.
      timestep: h, s, in (0, 0.1].
      link_inertia: kg·m², a finite number >= 0.
    """
    checks.positive('h_omega', h_omega)
    checks.positive('kp', kp, 'N·m/rad')
    checks.timestep(timestep)
    checks.nonnegative('link_inertia', link_inertia, 'kg·m²')
    if h_omega > 1e150:  # its square overflows: the inertia it asks for is zero, less the link's
        return -float(link_inertia)
    return timestep**2 * kp / h_omega**2 - link_inertia


def e_folding_time(growth: float, h: float) -> float:
    """Time (s) over which a motion that changes by ``growth`` per step changes by a factor e: ``h/|ln growth|``.

    A run with growth 1.001 per step at h = 5 ms is not a steady swing: it grows e-fold every 5 s, a slow
    divergence. Growth below 1 gives the decay time instead; growth exactly 1 gives ``inf`` (a swing that neither
    grows nor dies out).

    Args:
      growth: growth per step, the spectral radius of the step (> 0).
      h: timestep, s (> 0).
    """
    checks.positive('growth', growth)
    checks.positive('h', h, 's')
    rate = abs(math.log(growth))
    return math.inf if rate == 0 else h / rate


def loglog_slope(x, y) -> float:
    """Least-squares slope of log(y) against log(x): the exponent p of a power law y ∝ x^p.

    Args:
      x, y: positive numbers, (n,) each, n >= 2.
    """
    x, y = checks.real_array('x', x), checks.real_array('y', y)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f'x and y must be arrays of one shape (n,), n >= 2, got {x.shape}, {y.shape}')
    for name, values in (('x', x), ('y', y)):
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f'{name} must hold finite numbers > 0 (a log is taken), got {values.tolist()!r}')
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _critical_progress_time(level: float) -> float:
    """ωt at which a critically damped step ``1 - (1 + ωt) e^(-ωt)`` reaches ``level`` (Newton)."""
    x = 1.0
    for _ in range(60):
        f = 1.0 - (1.0 + x) * math.exp(-x) - level
        x -= f / (x * math.exp(-x))
    return x


def critical_rise_time(kp, inertia):
    """10-90 % rise time (s) of a critically damped servo: ``(x90 - x10)/ω``, ω = sqrt(kp/I).

    x10 ≈ 0.532 and x90 ≈ 3.890 solve ``1 - (1 + x)e^(-x) = 0.1, 0.9``. The continuous-time answer,
    without gravity's cos(q) or the integrator's lag: a guide ∝ 1/sqrt(kp).

    Args:
      kp: stiffness, N·m/rad, scalar or array, finite and > 0.
      inertia: I = link inertia + armature, kg·m², finite and > 0 (scalar or array).
    """
    kp, inertia = checks.real_array('kp', kp, 'N·m/rad'), checks.real_array('inertia', inertia, 'kg·m²')
    for name, values, unit in (('kp', kp, 'N·m/rad'), ('inertia', inertia, 'kg·m²')):
        if not np.all(np.isfinite(values) & (values > 0)):
            raise ValueError(f'{name} must be finite numbers > 0 {unit}, got {values.tolist()!r}')
    span = _critical_progress_time(0.9) - _critical_progress_time(0.1)
    return span / np.sqrt(kp / inertia)


# ---------------------------------------------------------------------------------------------
# Growth of the linearized servo under each of MuJoCo's integrators


def _rk4_step(q, v, accel, h):
    k1q, k1v = v, accel(q, v)
    k2q, k2v = v + h / 2 * k1v, accel(q + h / 2 * k1q, v + h / 2 * k1v)
    k3q, k3v = v + h / 2 * k2v, accel(q + h / 2 * k2q, v + h / 2 * k2v)
    k4q, k4v = v + h * k3v, accel(q + h * k3q, v + h * k3v)
    return (q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q),
            v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v))


def integrator_growth(integrator: str, h: float, w2: float, c: float, *,
                      c_joint: float = 0.0) -> float:
    """Growth per step of MuJoCo's ``integrator`` on the linearized servo ``a = -w2*q - c*v``.

    Built on :func:`physai.laws.sim.step_growth`. What each integrator treats implicitly, per unit inertia:
    Euler only the joint damping (``c_joint``); implicitfast and implicit all velocity damping ``c``
    (for one hinge without Coriolis forces they coincide); discrete the damping and the actuator
    stiffness (its metric M + hD + h²K, so ``c_implicit = c + h*w2``); RK4 nothing (classical RK4).

    Args:
      integrator: one of :data:`physai.laws.checks.INTEGRATORS`.
      h: timestep, s.
      w2: ω² = kp / I, 1/s², >= 0 (inf: beyond floating point, which diverges).
      c: (kv + damping) / I, 1/s, >= 0 (inf as for w2).
      c_joint: damping / I, 1/s (the part Euler takes implicitly), >= 0.

    Returns:
      The spectral radius of the step; above 1 the run diverges.
    """
    checks.integrator(integrator)
    checks.rate('w2', w2, '1/s²')
    checks.rate('c', c, '1/s')
    checks.rate('c_joint', c_joint, '1/s')
    if integrator == 'Euler':
        return step_growth(semi_implicit_euler, h, w2, c, c_implicit=c_joint)
    if integrator in ('implicitfast', 'implicit'):
        return step_growth(semi_implicit_euler, h, w2, c, c_implicit=c)
    if integrator == 'discrete':
        return step_growth(semi_implicit_euler, h, w2, c, c_implicit=c + h * w2)
    if integrator == 'RK4':
        return step_growth(_rk4_step, h, w2, c)
    raise AssertionError(f'no growth model for integrator {integrator!r}')


H_OMEGA_SCAN = (1e-3, 1e3)
"""The hω that :func:`critical_h_omega` scans, from the first to the last."""


def critical_h_omega(integrator: str, dampratio: float = 1.0) -> float:
    """The largest hω at which ``integrator`` keeps a servo with this damping ratio stable.

    With kv = 2ζ sqrt(kp·I) the linear step depends on hω only (h²ω² and hc = 2ζhω), so one number
    per integrator gives the bound kp < (hω*/h)²·I. Found by scanning hω over ``H_OMEGA_SCAN`` and bisecting the
    first crossing of growth 1 (:func:`integrator_growth`). Returns ``inf`` when no hω up to 1000
    diverges (discrete).

    Raises:
      ValueError: an unknown integrator, ``dampratio`` not a finite number >= 0, or a step already unstable at the
        scan's first hω (a damping ratio so large that Euler's explicit kv diverges from the start): no crossing to
        find.
    """
    checks.integrator(integrator)
    return _critical_h_omega(integrator, checks.nonnegative('dampratio', dampratio))


@functools.cache
def _critical_h_omega(integrator: str, dampratio: float) -> float:
    def unstable(x: float) -> bool:
        return integrator_growth(integrator, x, 1.0, 2 * dampratio) > 1 + 1e-9

    grid = np.geomspace(*H_OMEGA_SCAN, 241)
    if unstable(grid[0]):
        raise ValueError(f'dampratio must leave {integrator} stable at the smallest hω scanned ({grid[0]:g}), got '
                         f'{dampratio!r}, unstable there already: no crossing to find (Euler takes kv explicitly, '
                         f'so a large enough ratio diverges at any step)')
    bad = [x for x in grid if unstable(x)]
    if not bad:
        return math.inf
    hi = bad[0]
    lo = grid[max(np.searchsorted(grid, hi) - 1, 0)]
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if unstable(mid) else (mid, hi)
    return lo
