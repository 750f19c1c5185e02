"""Chapter 2's actuator models as force laws: implicit versus explicit PD, effort and velocity limits, delay.

An *implicit* actuator hands its gains to the solver: MuJoCo's ``<position kp kv>`` is evaluated inside the physics
step, and ``implicitfast`` treats its ``kv`` term implicitly. An *explicit* actuator computes a torque outside the
solver from the state at the start of each physics step and submits it through a ``<motor>``. Each model is a frozen
keyword-only config with a pure ``torque`` method (the runner is :mod:`physai.engine.pendulum`):

=================  ====================================================================================
model              torque on the joint, N·m
=================  ====================================================================================
:class:`ImplicitPD`  ``clip(kp*(q* - q) - kv*qd, -E, E)`` inside MuJoCo (``<position kp kv forcerange>``)
:class:`IdealPD`     ``clip(kp*(q* - q) + kv*(qd* - qd) + tau_ff, -E, E)``
:class:`DCMotor`     the same PD torque clipped to ``[tau_min(v), tau_max(v)]``::

                       tau_max = min(S*(1 - v/V), E),  tau_min = max(S*(-1 - v/V), -E),
                       v = clip(qd, -V*(1 + E/S), V*(1 + E/S))

:class:`DelayedPD`   ideal PD on the commands (q*, qd*, tau_ff) of ``delay`` physics steps ago
:class:`RemotizedPD` delayed PD clipped to ``±E(q)``, E(q) interpolated in a table of (angle, max torque)
=================  ====================================================================================

Symbols and their MuJoCo fields: q, qd are ``d.qpos[0]``, ``d.qvel[0]`` (rad, rad/s); q* is the position command
(rad); kp is ``actuator_gainprm[0]`` = ``-actuator_biasprm[1]`` (N·m/rad) and kv is ``-actuator_biasprm[2]``
(N·m·s/rad, Isaac Lab's and mjlab's ``damping``, "kd" in many texts); E is ``forcerange`` (N·m, a symmetric
clamp: MuJoCo's ``forcerange`` = (-E, E)); S is ``saturation_effort`` (stall torque, N·m, the name Isaac Lab and mjlab
use), V is ``velocity_limit`` (no-load speed, rad/s: mjlab's ``velocity_limit``, Isaac Lab's
``actuator_velocity_limit``).

Which side owns a limit: in these explicit models E and V belong to the actuator model (Isaac Lab 3.0's
``actuator_effort_limit`` and ``actuator_velocity_limit``); the physics engine's own clamp on the joint is another
limit (Isaac Lab's ``joint_effort_limit``, MuJoCo's ``forcerange`` on the ``<motor>`` that carries the torque, or
the joint's ``actuatorfrcrange``). Isaac Lab's older ``effort_limit``, ``velocity_limit``, ``effort_limit_sim`` and
``velocity_limit_sim`` are deprecated aliases since its 3.0 (``isaaclab/actuators/actuator_base_cfg.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np

from physai.laws import checks


MAX_DELAY_STEPS = 1_000_000
"""The longest delay, physics steps: as many as one run may take (``physai.engine.mj.MAX_STEPS``); a longer delay
holds the first command for the whole run, as this one does."""


# ------------------------------------------------------------------------------------------------
# the torque laws


def pd_torque(q_target, q, v_target, v, kp: float, kv: float, tau_ff=0.0):
    """The PD law ``kp*(q* - q) + kv*(qd* - qd) + tau_ff`` (N·m), unclipped; broadcasts over arrays.

    Args:
      q_target, q: rad; v_target, v: rad/s; tau_ff: N·m: numbers or arrays (NaN passes through, as a diverged state
        does).
      kp: N·m/rad, kv: N·m·s/rad: finite numbers (or arrays) >= 0.

    Raises:
      ValueError: a gain negative or not finite (an infinite gain times a zero error is NaN).
    """
    checks.gain('kp', kp, 'N·m/rad')
    checks.gain('kv', kv, 'N·m·s/rad')
    return kp * (np.asarray(q_target) - q) + kv * (np.asarray(v_target) - v) + tau_ff


def dc_motor_envelope(v, *, saturation_effort: float, forcerange: float, velocity_limit: float):
    """The four-quadrant torque-speed band of a DC motor at joint velocity ``v``.

    ``tau_max = min(S*(1 - v/V), E)`` and ``tau_min = max(S*(-1 - v/V), -E)`` with ``v`` first clipped
    to ``±V*(1 + E/S)``, where the band closes to a single torque ``∓E``. At v = 0 the band is
    ``±min(S, E)``; at v = +V it is ``[-E, 0]``: the motor can no longer push forward; beyond +V it
    excludes zero, so the motor must brake.

    This is the clip of Isaac Lab's ``DCMotor`` from 2.1.1 on ("Fixes DCMotor clipping for negative power",
    isaac-sim/IsaacLab pull request 2300) and of mjlab's ``DcMotorActuator``. Up to Isaac Lab 2.1.0 ``tau_max`` was
    clipped to [0, E] and ``tau_min`` to [-E, 0], so the band always held zero and the motor never had to brake.

    Args:
      v: joint velocity (rad/s), scalar or array.
      saturation_effort: S, stall torque, N·m.
      forcerange: E, torque cap, N·m.
      velocity_limit: V, no-load speed, rad/s.

    Returns:
      ``(tau_min, tau_max)``, each the shape of ``v``, N·m.

    Raises:
      ValueError: S or V not a finite number > 0, E not > 0 (inf for no cap), or ``v`` not numbers.
    """
    s = checks.positive('saturation_effort', saturation_effort, 'N·m')
    e = checks.limit('forcerange', forcerange, 'N·m')
    vmax = checks.positive('velocity_limit', velocity_limit, 'rad/s')
    bound = vmax * (1.0 + e / s)
    v = np.clip(checks.real_array('v', v, 'rad/s'), -bound, bound)
    tau_max = np.minimum(s * (1.0 - v / vmax), e)
    tau_min = np.maximum(s * (-1.0 - v / vmax), -e)
    return tau_min, tau_max


def remotized_limit(q, table: Sequence[tuple[float, float]]):
    """Torque limit at joint angle ``q`` from a table of (angle rad, max torque N·m).

    Linear interpolation between the table's points, held constant beyond its ends (``np.interp``).

    Raises:
      ValueError: ``q`` not numbers (None is refused, not read as NaN), or ``table`` not one or more finite (angle,
        torque) pairs with the angles strictly increasing and the torques >= 0 (``np.interp`` would answer an
        unsorted table with nonsense).
    """
    angles, limits = _table(table)
    return np.interp(checks.real_array('q', q, 'rad'), angles, limits)


def _table(table) -> tuple[np.ndarray, np.ndarray]:
    """A remotized table's angles and torques, checked (kept per table: a run looks its table up every step)."""
    try:
        return _checked_table(table)
    except TypeError:  # unhashable (a list): check it every time
        return _checked_table.__wrapped__(table)


@functools.lru_cache(maxsize=64)
def _checked_table(table) -> tuple[np.ndarray, np.ndarray]:
    try:
        array = np.asarray(table, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim != 2 or array.shape[1] != 2 or len(array) < 1 or not np.all(np.isfinite(array)):
        raise ValueError(f'table must be one or more finite (angle rad, max torque N·m) pairs, got {table!r}')
    if np.any(np.diff(array[:, 0]) <= 0):
        raise ValueError(f'table angles must be strictly increasing, got {array[:, 0].tolist()}')
    if np.any(array[:, 1] < 0):
        raise ValueError(f'table torques must be >= 0 N·m, got {array[:, 1].tolist()}')
    angles, limits = array.T.copy()
    angles.flags.writeable = limits.flags.writeable = False  # shared by every call with this table
    return angles, limits


def delay_commands(commands, delay: int) -> np.ndarray:
    """The commands as a delayed actuator sees them: ``out[k] = commands[max(k - delay, 0)]``.

    Right after a reset the buffer is filled with the first command, so a delayed actuator holds the
    first command for ``delay`` steps instead of reading zeros.

    Args:
      commands: (nstep, ...) one command per physics step (position, velocity, effort together).
      delay: whole number of physics steps, 0 ... ``MAX_DELAY_STEPS``.

    Returns:
      (nstep, ...) the delayed commands.

    Raises:
      ValueError: ``delay`` out of range, or ``commands`` not numbers (None is refused, not read as NaN).
    """
    delay = checks.whole('delay', delay, 0, MAX_DELAY_STEPS, 'physics steps')
    commands = checks.real_array('commands', commands)
    index = np.maximum(np.arange(len(commands)) - delay, 0)
    return commands[index]


# ------------------------------------------------------------------------------------------------
# the configs


@dataclasses.dataclass(frozen=True, kw_only=True)
class _PD:
    """The gains and clamp every PD model has, with MuJoCo's names."""

    kp: float
    """Stiffness, N·m/rad; for ``<position>`` ``actuator_gainprm[0]`` = ``-actuator_biasprm[1]``."""
    kv: float = 0.0
    """Damping gain, N·m·s/rad (the law's kd); for ``<position>`` ``-actuator_biasprm[2]``."""
    forcerange: float = math.inf
    """E, N·m: the torque is clamped to ±E (``inf`` for no clamp); MuJoCo's ``forcerange = (-E, E)``."""

    delay = 0

    def __post_init__(self):
        checks.nonnegative('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.limit('forcerange', self.forcerange, 'N·m')


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImplicitPD(_PD):
    """MuJoCo's ``<position kp kv forcerange>``: the solver applies the PD law inside every step (implicitfast
    integrates its kv term implicitly)."""

    explicit = False

    def torque(self, q, v, q_target, v_target=0.0, tau_ff=0.0):
        """MuJoCo's force at the start of a step: ``clip(kp*(q* - q) - kv*qd, -E, E)``, N·m.

        (``<position>`` has no velocity or effort command; ``v_target``, ``tau_ff`` must be 0.)
        """
        return np.clip(pd_torque(q_target, q, v_target, v, self.kp, self.kv, tau_ff),
                       -self.forcerange, self.forcerange)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IdealPD(_PD):
    """Explicit PD: ``clip(kp*(q* - q) + kv*(qd* - qd) + tau_ff, -E, E)`` through a ``<motor>``."""

    explicit = True

    def limits(self, q, v):
        """``(tau_min, tau_max)`` allowed at angle q (rad) and velocity v (rad/s), N·m."""
        return -self.forcerange, self.forcerange

    def torque(self, q, v, q_target, v_target=0.0, tau_ff=0.0):
        """The applied torque, N·m: the PD law clipped to :meth:`limits`."""
        low, high = self.limits(q, v)
        return np.clip(pd_torque(q_target, q, v_target, v, self.kp, self.kv, tau_ff), low, high)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DCMotor(IdealPD):
    """Ideal PD clipped to a DC motor's torque-speed envelope (see :func:`dc_motor_envelope`)."""

    saturation_effort: float
    """S, stall torque at zero speed, N·m."""
    velocity_limit: float
    """V, no-load speed, rad/s."""

    def __post_init__(self):
        super().__post_init__()
        checks.positive('saturation_effort', self.saturation_effort, 'N·m')
        checks.positive('velocity_limit', self.velocity_limit, 'rad/s')

    def limits(self, q, v):
        return dc_motor_envelope(v, saturation_effort=self.saturation_effort,
                                 forcerange=self.forcerange, velocity_limit=self.velocity_limit)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DelayedPD(IdealPD):
    """Ideal PD on commands delayed by ``delay`` physics steps (fixed per run, first command held).

    The whole command (q*, qd*, tau_ff) is delayed together (:func:`delay_commands`); the measured q
    and qd are not.
    """

    delay: int = 0
    """Whole number of physics steps, 0 ... ``MAX_DELAY_STEPS``."""

    def __post_init__(self):
        super().__post_init__()
        checks.whole('delay', self.delay, 0, MAX_DELAY_STEPS, 'physics steps')


@dataclasses.dataclass(frozen=True, kw_only=True)
class RemotizedPD(DelayedPD):
    """Delayed PD whose torque limit depends on the joint angle through a lookup table.

    The limit ``E(q)`` interpolates ``table`` linearly and holds its end values beyond it; the torque
    is clipped to ``±E(q)``. ``forcerange`` is not used (leave it at inf).
    """

    table: tuple[tuple[float, float], ...]
    """((angle rad, max torque N·m), ...), angles strictly increasing, torques >= 0."""

    def __post_init__(self):
        super().__post_init__()
        _table(self.table)

    def limits(self, q, v):
        limit = remotized_limit(q, self.table)
        return -limit, limit


Actuator = ImplicitPD | IdealPD | DCMotor | DelayedPD | RemotizedPD
MODELS = ('implicit', 'ideal PD', 'DC motor', 'delayed PD', 'remotized PD')
