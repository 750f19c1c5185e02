"""Chapter 3's laws of a PD loop: the MIT-form joint command, the controller's ticks and its zero-order hold.

A joint command in the "MIT" form that hobby and quadruped motor drivers accept, :class:`JointCommand` (position,
velocity, stiffness, damping, effort, max effort), asks for the torque

    tau = stiffness * (position - q) + damping * (velocity - qd) + effort,   |tau| <= max_effort

(:func:`mit_torque`). Where that law runs, in the controller (``'in-loop'``) or in MuJoCo's step (``'in-step'``),
is :class:`physai.engine.pd_controller.PDController`'s business; this module holds what does not need MuJoCo: which physics
steps a controller at ``rate_hz`` ticks on (:func:`tick_mask`, :func:`tick_pattern`), one step of the joint under a
torque held between ticks (:func:`zoh_step`), and the growth per tick that says when the in-loop PD is unstable
(:func:`tick_growth`, built on :func:`physai.laws.sim.step_growth`: the tick is the step that integrates the PD
explicitly), and the same growth with the in-loop PD's two flaws, the hold and the explicit kv, taken away one at a
time (:func:`flaw_growth`: which of them makes it unstable).

======  ========================================================  =========
symbol  MuJoCo                                                    unit
======  ========================================================  =========
q, qd   ``d.qpos[jnt_qposadr]``, ``d.qvel[jnt_dofadr]``           rad, rad/s
kp      ``actuator_gainprm[0]`` = ``-actuator_biasprm[1]``        N·m/rad
kv      ``-actuator_biasprm[2]``                                  N·m·s/rad
I       the joint's diagonal of ``d.M`` (with ``dof_armature``)   kg·m²
h       ``m.opt.timestep``, the physics step                      s
T       1 / rate_hz, the controller tick                          s
======  ========================================================  =========
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from physai.laws import checks
from physai.laws.drives import pd_torque
from physai.laws.sim import semi_implicit_euler, step_growth
from physai.laws.stability import integrator_growth


BACKENDS = ('in-loop', 'in-step')
"""Where the PD runs: ``'in-loop'`` (A, in the controller) or ``'in-step'`` (B, in MuJoCo's step)."""

FEEDFORWARD = ('in-clamp', 'applied')
"""Where in-step puts ``damping*velocity + effort``: the servo's ``biasprm[0]`` or ``qfrc_applied``."""

MAX_STEPS_PER_TICK = 10_000
"""Physics steps one controller tick may span (0.1 Hz on 1 kHz physics): a slower rate is an error, not a hang of
:func:`tick_growth`, which steps every one of them."""

RATE_TOLERANCE = 1e-9
"""A controller rate counts as the physics rate when ``rate_hz * timestep`` exceeds 1 by no more than this (the
rounding of ``1 / timestep``)."""

MAX_MASK_STEPS = 10_000_000
"""Physics steps one :func:`tick_mask` may cover (10 MB of flags)."""


# ---------------------------------------------------------------------------------------------------------
# The command and the PD law


@dataclasses.dataclass(frozen=True, kw_only=True)
class JointCommand:
    """One joint's command in the MIT form: a PD target plus a feed-forward torque."""

    position: float = 0.0
    """Position target, rad (``ctrl`` of the in-step servo)."""
    velocity: float = 0.0
    """Velocity target, rad/s."""
    stiffness: float = 0.0
    """Stiffness, N·m/rad, >= 0 (kp, ``actuator_gainprm[0]`` in-step)."""
    damping: float = 0.0
    """Damping, N·m·s/rad, >= 0 (kv, ``-actuator_biasprm[2]`` in-step). Not the joint's ``dof_damping``."""
    effort: float = 0.0
    """Feed-forward torque, N·m. In-loop: part of the clamped torque written to ``qfrc_applied``; in-step:
    the servo's ``biasprm[0]`` inside its clamp (``feedforward='in-clamp'``) or ``qfrc_applied``
    (``feedforward='applied'``)."""
    max_effort: float = math.inf
    """Largest |tau|, N·m, > 0; in-step it can only narrow the actuator's ``forcerange``."""

    def __post_init__(self):
        checks.finite('position', self.position, 'rad')
        checks.finite('velocity', self.velocity, 'rad/s')
        checks.nonnegative('stiffness', self.stiffness, 'N·m/rad')
        checks.nonnegative('damping', self.damping, 'N·m·s/rad')
        checks.finite('effort', self.effort, 'N·m')
        checks.limit('max_effort', self.max_effort, 'N·m')


def mit_torque(command: JointCommand, q, qd):
    """The MIT-form torque of backend A: chapter 2's PD law, then the motor's clamp.

    ``tau = clip(stiffness*(position - q) + damping*(velocity - qd) + effort, -max_effort, max_effort)``,
    i.e. :func:`physai.laws.drives.pd_torque` with ``kp = stiffness``, ``kv = damping``,
    ``tau_ff = effort``, clipped to ±``max_effort``.

    Args:
      command: the joint's command.
      q: joint angle, rad (``d.qpos``), scalar or array.
      qd: joint velocity, rad/s (``d.qvel``), broadcastable with ``q``.

    Returns:
      tau, N·m, the broadcast shape of ``q`` and ``qd`` (NaN where the state is NaN; an overflow saturates to
      ±``max_effort``).

    Raises:
      TypeError: ``command`` is not a :class:`JointCommand`.
      ValueError: ``q`` or ``qd`` is not made of numbers (None is refused, not read as NaN).
    """
    if not isinstance(command, JointCommand):
        raise TypeError(f'command must be a JointCommand, got {type(command).__name__}')
    q, qd = checks.real_array('q', q, 'rad'), checks.real_array('qd', qd, 'rad/s')
    with np.errstate(over='ignore', invalid='ignore'):  # inf torque is clipped below; inf - inf stays NaN
        tau = pd_torque(command.position, q, command.velocity, qd, command.stiffness, command.damping,
                        command.effort)
    return np.clip(tau, -command.max_effort, command.max_effort)


def tick_mask(rate_hz: float, timestep: float, nstep: int) -> np.ndarray:
    """Which physics steps start with a controller tick, (nstep,) bool.

    Step k (time ``k*timestep``) starts a tick when ``floor(k*timestep*rate_hz)`` moves on, so a 400 Hz
    controller on 1 kHz physics ticks every 3, 2, 3, 2, ... steps; step 0 always ticks. A rate at or above
    the physics rate ticks at every step.

    Raises:
      ValueError: ``rate_hz`` not a number > 0, ``timestep`` not in (0, 0.1] s, or ``nstep`` not a whole number in
        [0, ``MAX_MASK_STEPS``].
    """
    checks.positive('rate_hz', rate_hz, 'Hz')
    checks.timestep(timestep)
    if not (isinstance(nstep, numbers.Integral) and not isinstance(nstep, bool) and 0 <= nstep <= MAX_MASK_STEPS):
        raise ValueError(f'nstep must be a whole number in [0, {MAX_MASK_STEPS:,}], got {nstep!r}')
    nstep = int(nstep)
    counts = np.floor(np.arange(nstep) * (timestep * rate_hz) + 1e-9)
    mask = np.ones(nstep, dtype=bool)
    mask[1:] = counts[1:] > counts[:-1]
    return mask


# ---------------------------------------------------------------------------------------------------------
# Stability: chapter 1's growth per step, with the controller tick as the step


def zoh_step(q, v, accel, h, *, substeps: Sequence[int] = (1,), c_joint: float = 0.0):
    """Backend A over one or more controller ticks, as a linear step for :func:`physai.laws.sim.step_growth`.

    At the start of each tick the PD acceleration ``a = accel(q, v)`` is computed once and held
    (zero-order hold); the physics then takes the tick's ``n`` steps of length ``h``, each MuJoCo's
    semi-implicit Euler with only the joint damping implicit (an applied force is explicit):
    ``v' = v + h*(a - c_joint*v)/(1 + h*c_joint)``, ``q' = q + h*v'``. Without joint damping one tick is
    ``v' = v + T*a``, ``q' = q + T*v + beta*T²*a`` with ``T = n*h`` and ``beta = (n + 1)/(2n)``.

    Args:
      q, v: state, rad and rad/s.
      accel: the PD's acceleration ``-w2*q - c*v``, 1/s² and 1/s per unit inertia.
      h: the physics timestep, s.
      substeps: physics steps per tick, one entry per tick (a 400 Hz controller on 1 kHz physics: (3, 2)).
      c_joint: joint damping per unit inertia, ``dof_damping / I``, 1/s.

    Returns:
      ``(q', v')`` after ``len(substeps)`` ticks.

    Raises:
      ValueError: no tick in ``substeps`` (no step: the state unchanged, a growth of 1 whatever the gains), a tick
        not a whole number in [1, ``MAX_STEPS_PER_TICK``], or ``c_joint`` not a finite number >= 0 (``h`` is
        checked by :func:`physai.laws.sim.semi_implicit_euler`).
    """
    substeps = tuple(substeps)
    if not substeps:
        raise ValueError('substeps must hold at least one tick of physics steps, e.g. (3, 2), got none')
    for k, n in enumerate(substeps):
        if not (isinstance(n, numbers.Integral) and not isinstance(n, bool) and 1 <= n <= MAX_STEPS_PER_TICK):
            raise ValueError(f'substeps[{k}] must be a whole number of physics steps in [1, {MAX_STEPS_PER_TICK:,}], '
                             f'got {n!r}')
    checks.nonnegative('c_joint', c_joint, '1/s')
    for n in substeps:
        a_held = accel(q, v)
        for _ in range(n):
            q, v = semi_implicit_euler(q, v, lambda _q, _v: a_held - c_joint * _v, h, c_implicit=c_joint)
    return q, v


def tick_pattern(rate_hz: float, timestep: float) -> tuple[int, ...]:
    """Physics steps per controller tick over one repeating pattern (400 Hz on 1 kHz: (3, 2)).

    The steps per tick ``1/(rate_hz*timestep)`` are taken as the nearest fraction ``p/q`` with at most 50
    ticks per pattern (``Fraction.limit_denominator(50)``), and the pattern is the one :func:`tick_mask`
    makes at that exact ratio: tick j starts at step ``ceil(j*p/q)``, so the q ticks cover p steps and
    the mean tick is ``p/q`` steps (129 Hz on 1 kHz: 31/4, (8, 8, 8, 7)).

    A rate above the physics rate is refused: a controller cannot tick between physics steps, and a pattern of one
    step per tick would give the growth of a controller at the physics rate under the faster one's name.
    (:func:`tick_mask`, which runs a controller, ticks at every step then; the growth curve of chapter 3's panel
    draws such rates at the physics rate, ``physai.experiments.where_pd_runs.growth_curve``.)

    Raises:
      ValueError: ``rate_hz`` not a number > 0, ``timestep`` not in (0, 0.1] s, a rate above the physics rate
        ``1/timestep``, or a tick longer than ``MAX_STEPS_PER_TICK`` physics steps
        (``rate_hz < 1 / (MAX_STEPS_PER_TICK * timestep)``).
    """
    rate_hz = checks.positive('rate_hz', rate_hz, 'Hz')
    timestep = checks.timestep(timestep)
    if rate_hz * timestep > 1 + RATE_TOLERANCE:
        raise ValueError(f'rate_hz must be at most the physics rate 1/timestep = {1 / timestep:.6g} Hz (a controller '
                         f'cannot tick between physics steps), got {rate_hz!r}')
    if timestep * rate_hz * MAX_STEPS_PER_TICK < 1:
        raise ValueError(f'rate_hz must be >= {1 / (MAX_STEPS_PER_TICK * timestep):.6g} Hz at timestep {timestep:g} s '
                         f'(at most {MAX_STEPS_PER_TICK:,} physics steps per tick), got {rate_hz!r}')
    return _tick_pattern(rate_hz, timestep)


@functools.lru_cache(maxsize=4096)
def _tick_pattern(rate_hz: float, timestep: float) -> tuple[int, ...]:
    """:func:`tick_pattern` on checked numbers, kept: ``limit_denominator`` costs ~0.5 ms, and a panel asks for the
    same 41 rates at every kp move."""
    per_tick = Fraction(1.0 / (timestep * rate_hz)).limit_denominator(50)
    if per_tick <= 1:
        return (1,)
    p, q = per_tick.numerator, per_tick.denominator
    starts = [-(-j * p // q) for j in range(q + 1)]  # ceil(j*p/q) in integers
    return tuple(int(b - a) for a, b in zip(starts[:-1], starts[1:]))


def tick_growth(*, rate_hz: float, kp: float, kv: float, inertia: float, timestep: float = 0.001,
                damping: float = 0.0, backend: str = 'in-loop', integrator: str = 'implicitfast') -> float:
    """Growth per controller tick of one linearized joint held by the PD (above 1: it cannot settle).

    The joint is ``I*qdd = -kp*q - kv*qd - damping*qd`` (gravity and friction loss left out), ``w² = kp/I``,
    ``c = kv/I``. In-loop the PD torque is held over each tick of ``n`` physics steps (:func:`zoh_step`),
    so the tick ``T = n*h`` is the step that integrates the PD explicitly. Without joint damping it is
    stable when ``(1 - beta)*(T*w)² < c*T`` (the hold's half-tick delay against kv) and
    ``(2*beta - 1)*(T*w)² < 4 - 2*c*T`` (chapter 1's explicit bound), ``beta = (n + 1)/(2n)``.
    In-step the growth is the physics step's under ``integrator``
    (:func:`physai.laws.stability.integrator_growth`) to the power of the steps per tick.

    Args:
      rate_hz: controller rate, Hz.
      kp, kv: PD gains, N·m/rad and N·m·s/rad.
      inertia: I, the joint's diagonal of the mass matrix, kg·m² (armature included).
      timestep: physics step h, s.
      damping: joint damping ``dof_damping``, N·m·s/rad.
      backend: one of ``BACKENDS``.
      integrator: one of ``INTEGRATORS`` (in-loop: the joint damping is implicit under every one).

    Returns:
      The spectral radius per tick (the average per tick over an uneven pattern such as 400 Hz on 1 kHz);
      ``inf`` when it is beyond floating point (diverged), never an OverflowError.

    Raises:
      ValueError: kp, kv or damping not a finite number >= 0, inertia not > 0, a rate or timestep out of range
        (:func:`tick_pattern`), or an unknown backend or integrator.
    """
    checks.one_of('backend', backend, BACKENDS)
    checks.integrator(integrator)
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.nonnegative('damping', damping, 'N·m·s/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    pattern = tick_pattern(rate_hz, timestep)
    with np.errstate(over='ignore'):  # kp/inertia beyond floating point is inf: step_growth says diverged
        w2, c_pd, c_joint = np.float64(kp) / inertia, np.float64(kv) / inertia, np.float64(damping) / inertia
    if backend == 'in-loop':
        growth = step_growth(zoh_step, timestep, w2, c_pd, substeps=pattern, c_joint=c_joint)
        exponent = 1.0 / len(pattern)
    else:
        growth = integrator_growth(integrator, timestep, w2, c_pd + c_joint, c_joint=c_joint)
        exponent = sum(pattern) / len(pattern)
    try:
        return float(growth ** exponent)
    except OverflowError:  # a growth per step above 1 over many steps: beyond floating point, diverged
        return math.inf


def flaw_growth(*, rate_hz: float, kp: float, kv: float, inertia: float, timestep: float = 0.001,
                damping: float = 0.0, hold: bool, explicit_kv: bool) -> float:
    """Growth per controller tick of one linearized joint with the in-loop PD's two flaws taken one at a time.

    The PD in the controller differs from MuJoCo's position servo in two ways: its torque is sampled at the tick and
    held until the next (``hold``), and its kv is a number the integrator cannot see, so kv is integrated explicitly
    (``explicit_kv``). Each can be kept or taken away; the joint is ``I*qdd = -kp*q - kv*qd - damping*qd``, the
    joint damping implicit as MuJoCo integrates it, ``w² = kp/I``:

    ======  ===========  =========================================================================================
    hold    explicit_kv  the joint
    ======  ===========  =========================================================================================
    True    True         the in-loop PD, :func:`tick_growth` with ``backend='in-loop'``
    True    False        the spring held over each tick, kv acting at every physics step and implicitly, as joint
                         damping does: the in-loop PD with only its implicit damping given back
    False   True         the PD computed afresh at every physics step, kv explicit: the hold alone taken away
    False   False        MuJoCo's position servo under ``implicitfast`` (in-step)
    ======  ===========  =========================================================================================

    With the hold each tick is :func:`zoh_step` over the tick's physics steps (the held acceleration
    ``-w2*q - c_explicit*v``, the implicit damping ``c_implicit`` in every step); without it every physics step is
    its own tick of one step, and the growth per tick is the growth per step to the power of the mean steps per tick.

    Args:
      rate_hz: controller rate, Hz.
      kp, kv: PD gains, N·m/rad and N·m·s/rad.
      inertia: I, the joint's diagonal of the mass matrix, kg·m² (armature included).
      timestep: physics step h, s.
      damping: joint damping ``dof_damping``, N·m·s/rad (always implicit).
      hold: whether the PD's torque is sampled at the tick and held.
      explicit_kv: whether kv is integrated explicitly (False: implicitly, with the joint damping).

    Returns:
      The spectral radius per tick (the average per tick over an uneven pattern); ``inf`` when it is beyond floating
      point.

    Raises:
      ValueError: kp, kv or damping not a finite number >= 0, inertia not > 0, a rate or timestep out of range
        (:func:`tick_pattern`), or ``hold`` or ``explicit_kv`` not a bool.
    """
    for name, flag in (('hold', hold), ('explicit_kv', explicit_kv)):
        if not isinstance(flag, bool):
            raise ValueError(f'{name} must be True or False, got {flag!r}')
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.nonnegative('damping', damping, 'N·m·s/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    pattern = tick_pattern(rate_hz, timestep)
    with np.errstate(over='ignore'):  # kp/inertia beyond floating point is inf: step_growth says diverged
        w2, c_pd, c_joint = np.float64(kp) / inertia, np.float64(kv) / inertia, np.float64(damping) / inertia
    c_explicit, c_implicit = (c_pd, c_joint) if explicit_kv else (0.0, c_joint + c_pd)
    if hold:
        growth = step_growth(zoh_step, timestep, w2, c_explicit, substeps=pattern, c_joint=c_implicit)
        exponent = 1.0 / len(pattern)
    else:
        growth = step_growth(zoh_step, timestep, w2, c_explicit, substeps=(1,), c_joint=c_implicit)
        exponent = sum(pattern) / len(pattern)
    try:
        return float(growth ** exponent)
    except OverflowError:  # beyond floating point: diverged
        return math.inf
