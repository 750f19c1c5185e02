"""Actuator models: implicit versus explicit PD, effort and velocity limits, a DC-motor envelope, delay.

An *implicit* actuator hands its gains to the solver: MuJoCo's ``<position kp kv>`` is evaluated inside
the physics step, and the ``implicitfast`` integrator treats its ``kv`` term implicitly. An *explicit*
actuator computes a torque outside the solver from the state at the start of each physics step and
submits it through a ``<motor>``; the solver sees a constant torque for the step.

The torque laws (one frozen keyword-only config per model, each with a pure ``torque`` method):

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

Symbols and their MuJoCo fields: q, qd are ``d.qpos[0]``, ``d.qvel[0]`` (rad, rad/s); q* is the
position command (rad), ``d.ctrl`` for the implicit model; kp is ``actuator_gainprm[0]`` =
``-actuator_biasprm[1]`` (N·m/rad) and kv is ``-actuator_biasprm[2]`` (N·m·s/rad) for ``<position>``
(the PD law's "kd"); E is ``effort_limit`` (N·m), ``actuator_forcerange`` = (-E, E) for ``<position>``;
S is ``saturation_effort`` (stall torque, N·m), V is ``velocity_limit`` (no-load speed, rad/s).

The pendulum of the chapter's Experiment (as in Isaac Lab's actuator documentation): a hinge about the
world y axis, q = 0 hanging down and π/2 horizontal, a 1 kg capsule of length 0.6 m and radius 0.05 m
with its centre 0.3 m from the pivot, so gravity pulls with ``-tau_g*sin(q)``, ``tau_g = 1*9.81*0.3``
N·m. Physics runs at ``timestep`` = 1/360 s with ``implicitfast``; the commands change at 60 Hz (every
6 physics steps) and are held in between, while an explicit model recomputes its torque every physics
step from the current state. A command is the triple (q*, qd*, tau_ff) (:class:`Command`); a plain
``command(t)`` or angle is a position command with ``qd* = tau_ff = 0``, the only kind ``<position>``
accepts. :func:`simulate` runs any number of configurations: the implicit ones
together on ``mujoco.batch.Batch`` (the command sequence is known in advance), the explicit ones in a
per-step loop over ``mj_step`` (their torque depends on the state of each step).

A diverged run (MuJoCo's bad-acceleration warning, a non-finite state or a runaway speed) is a result,
flagged in :class:`Run`, never an exception.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai import checks, perturb, robust, servo  # servo also installs the book's MuJoCo warning handler
from physai.checks import INTEGRATOR_ENUM, INTEGRATORS
from physai.registry import experiment
from physai.sim import semi_implicit_euler, servo_sag, step_growth

MASS = 1.0  # kg
LENGTH = 0.6  # m, the capsule's axis from the pivot
RADIUS = 0.05  # m
GRAVITY = 9.81  # m/s²
TAU_G = MASS * GRAVITY * LENGTH / 2  # N·m, gravity torque of the horizontal link (2.943)
TIMESTEP = 1.0 / 360.0  # s, physics step of the Experiment
CONTROL_RATE = 60.0  # Hz, how often a new command arrives
HORIZONTAL = math.pi / 2  # rad
SPEED_BOUND = 1e3  # rad/s, a faster joint counts as diverged

PENDULUM_XML = f"""
<mujoco model="pendulum">
  <option timestep="{TIMESTEP!r}" integrator="implicitfast" gravity="0 0 -{GRAVITY}"/>
  <worldbody>
    <body name="link">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <geom name="rod" type="capsule" fromto="0 0 0 0 0 -{LENGTH}" size="{RADIUS}" mass="{MASS}"/>
    </body>
  </worldbody>
  <actuator>
    <general name="actuator" joint="hinge" gaintype="fixed" biastype="affine" gainprm="1"
             biasprm="0 0 0"/>
  </actuator>
</mujoco>
"""


# ------------------------------------------------------------------------------------------------
# the torque laws


def pd_torque(q_target, q, v_target, v, kp: float, kv: float, tau_ff=0.0):
    """The PD law ``kp*(q* - q) + kv*(qd* - qd) + tau_ff`` (N·m), unclipped; broadcasts over arrays."""
    return kp * (np.asarray(q_target) - q) + kv * (np.asarray(v_target) - v) + tau_ff


def dc_motor_envelope(v, *, saturation_effort: float, effort_limit: float, velocity_limit: float):
    """The four-quadrant torque-speed band of a DC motor at joint velocity ``v``.

    ``tau_max = min(S*(1 - v/V), E)`` and ``tau_min = max(S*(-1 - v/V), -E)`` with ``v`` first clipped
    to ``±V*(1 + E/S)``, where the band closes to a single torque ``∓E``. At v = 0 the band is
    ``±min(S, E)``; at v = +V it is ``[-E, 0]``: the motor can no longer push forward; beyond +V it
    excludes zero, so the motor must brake.

    Args:
      v: joint velocity (rad/s), scalar or array.
      saturation_effort: S, stall torque, N·m.
      effort_limit: E, torque cap, N·m.
      velocity_limit: V, no-load speed, rad/s.

    Returns:
      ``(tau_min, tau_max)``, each the shape of ``v``, N·m.
    """
    s, e, vmax = saturation_effort, effort_limit, velocity_limit
    bound = vmax * (1.0 + e / s)
    v = np.clip(v, -bound, bound)
    tau_max = np.minimum(s * (1.0 - v / vmax), e)
    tau_min = np.maximum(s * (-1.0 - v / vmax), -e)
    return tau_min, tau_max


def remotized_limit(q, table: Sequence[tuple[float, float]]):
    """Torque limit at joint angle ``q`` from a table of (angle rad, max torque N·m).

    Linear interpolation between the table's points, held constant beyond its ends (``np.interp``).
    """
    angles, limits = np.asarray(table, dtype=float).T
    return np.interp(q, angles, limits)


def delay_commands(commands, delay: int) -> np.ndarray:
    """The commands as a delayed actuator sees them: ``out[k] = commands[max(k - delay, 0)]``.

    Right after a reset the buffer is filled with the first command, so a delayed actuator holds the
    first command for ``delay`` steps instead of reading zeros.

    Args:
      commands: (nstep, ...) one command per physics step (position, velocity, effort together).
      delay: whole number of physics steps, >= 0.

    Returns:
      (nstep, ...) the delayed commands.
    """
    if not (isinstance(delay, (int, np.integer)) and delay >= 0):
        raise ValueError(f'delay must be a whole number of physics steps >= 0, got {delay!r}')
    commands = np.asarray(commands, dtype=float)
    index = np.maximum(np.arange(len(commands)) - delay, 0)
    return commands[index]


# ------------------------------------------------------------------------------------------------
# the configs


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImplicitPD:
    """MuJoCo's ``<position kp kv forcerange>``: the solver applies the PD law inside every step."""

    kp: float
    """Stiffness, N·m/rad; ``actuator_gainprm[0]``, ``-actuator_biasprm[1]``."""
    kv: float = 0.0
    """Damping gain, N·m·s/rad; ``-actuator_biasprm[2]``; integrated implicitly by implicitfast."""
    effort_limit: float = math.inf
    """E, N·m; ``forcerange = (-E, E)``, ``inf`` for no clamp."""

    explicit = False
    delay = 0

    def __post_init__(self):
        checks.nonnegative('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.limit('effort_limit', self.effort_limit, 'N·m')

    def torque(self, q, v, q_target, v_target=0.0, tau_ff=0.0):
        """MuJoCo's force at the start of a step: ``clip(kp*(q* - q) - kv*qd, -E, E)``, N·m.

        (``<position>`` has no velocity or effort command; ``v_target``, ``tau_ff`` must be 0.)
        """
        return np.clip(pd_torque(q_target, q, v_target, v, self.kp, self.kv, tau_ff),
                       -self.effort_limit, self.effort_limit)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IdealPD:
    """Explicit PD: ``clip(kp*(q* - q) + kv*(qd* - qd) + tau_ff, -E, E)`` through a ``<motor>``."""

    kp: float
    """Stiffness, N·m/rad."""
    kv: float = 0.0
    """Damping gain (the law's kd), N·m·s/rad."""
    effort_limit: float = math.inf
    """E, N·m; the torque is clipped to ±E (``inf`` for no clip)."""

    explicit = True
    delay = 0

    def __post_init__(self):
        checks.nonnegative('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.limit('effort_limit', self.effort_limit, 'N·m')

    def limits(self, q, v):
        """``(tau_min, tau_max)`` allowed at angle q (rad) and velocity v (rad/s), N·m."""
        return -self.effort_limit, self.effort_limit

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
                                 effort_limit=self.effort_limit, velocity_limit=self.velocity_limit)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DelayedPD(IdealPD):
    """Ideal PD on commands delayed by ``delay`` physics steps (fixed per run, first command held).

    The whole command (q*, qd*, tau_ff) is delayed together (:func:`delay_commands`); the measured q
    and qd are not.
    """

    delay: int = 0
    """Whole number of physics steps, >= 0."""

    def __post_init__(self):
        super().__post_init__()
        if not (isinstance(self.delay, (int, np.integer)) and not isinstance(self.delay, bool)
                and self.delay >= 0):
            raise ValueError(f'delay must be a whole number of physics steps >= 0, got {self.delay!r}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class RemotizedPD(DelayedPD):
    """Delayed PD whose torque limit depends on the joint angle through a lookup table.

    The limit ``E(q)`` interpolates ``table`` linearly and holds its end values beyond it; the torque
    is clipped to ``±E(q)``. ``effort_limit`` is not used (leave it at inf).
    """

    table: tuple[tuple[float, float], ...]
    """((angle rad, max torque N·m), ...), angles strictly increasing, torques >= 0."""

    def __post_init__(self):
        super().__post_init__()
        table = np.asarray(self.table, dtype=float)
        if table.ndim != 2 or table.shape[1] != 2 or len(table) < 1 or not np.all(np.isfinite(table)):
            raise ValueError(f'table must be finite (angle rad, max torque N·m) pairs, got {self.table!r}')
        if np.any(np.diff(table[:, 0]) <= 0):
            raise ValueError(f'table angles must be strictly increasing, got {table[:, 0].tolist()}')
        if np.any(table[:, 1] < 0):
            raise ValueError(f'table torques must be >= 0 N·m, got {table[:, 1].tolist()}')

    def limits(self, q, v):
        limit = remotized_limit(q, self.table)
        return -limit, limit


Actuator = ImplicitPD | IdealPD | DCMotor | DelayedPD | RemotizedPD
MODELS = ('implicit', 'ideal PD', 'DC motor', 'delayed PD')


# ------------------------------------------------------------------------------------------------
# the pendulum and its runner


@dataclasses.dataclass(frozen=True, kw_only=True)
class PendulumParams:
    """The pendulum's joint and the simulation settings (MuJoCo's names)."""

    armature: float = 0.0
    """Reflected rotor inertia, kg·m²; ``<joint armature>``, ``dof_armature``."""
    damping: float = 0.0
    """Joint viscous damping, N·m·s/rad; ``dof_damping``."""
    frictionloss: float = 0.0
    """Joint dry friction, N·m; ``dof_frictionloss``."""
    timestep: float = TIMESTEP
    """Physics step, s, in (0, 0.1]; ``<option timestep>``."""
    integrator: str = 'implicitfast'
    """One of ``INTEGRATORS``; ``<option integrator>``."""
    control_rate: float = CONTROL_RATE
    """Hz; a new command every ``decimation`` physics steps, held in between."""

    def __post_init__(self):
        checks.nonnegative('armature', self.armature, 'kg·m²')
        checks.nonnegative('damping', self.damping, 'N·m·s/rad')
        checks.nonnegative('frictionloss', self.frictionloss, 'N·m')
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)
        checks.positive('control_rate', self.control_rate, 'Hz')

    @property
    def decimation(self) -> int:
        """Physics steps per control tick, ``max(1, round(1 / (control_rate * timestep)))``."""
        return max(1, round(1.0 / (self.control_rate * self.timestep)))

    @property
    def inertia(self) -> float:
        """I = the link's inertia about the pivot + armature, kg·m²."""
        return LINK_INERTIA + self.armature


LINK_INERTIA = servo.capsule_inertia_about_hinge(MASS, LENGTH, RADIUS)  # kg·m², 0.12779


@dataclasses.dataclass(frozen=True, kw_only=True)
class Step:
    """A step command: ``low`` before ``at`` seconds, ``high`` from then on (rad)."""

    at: float = 0.5
    low: float = 0.0
    high: float = HORIZONTAL

    def __call__(self, t):
        return np.where(np.asarray(t) >= self.at - 1e-12, self.high, self.low)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Square:
    """A square wave: ``high`` for the first half of every period, ``low`` for the second (rad)."""

    period: float = 2.0
    low: float = 0.0
    high: float = HORIZONTAL

    def __call__(self, t):
        phase = np.mod(np.asarray(t) + 1e-12, self.period)
        return np.where(phase < self.period / 2, self.high, self.low)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Command:
    """The full command of an explicit PD: position q*, velocity qd* and feed-forward effort tau_ff.

    Each part is a constant or a function of an array of tick times, e.g. :class:`Step`. The three are
    sampled together at the control ticks, held together in between and delayed together by a
    :class:`DelayedPD`.
    """

    position: Callable | float = 0.0
    """q*, rad."""
    velocity: Callable | float = 0.0
    """qd*, rad/s."""
    effort: Callable | float = 0.0
    """tau_ff, N·m, added to the PD torque before the clip."""

    def __post_init__(self):
        for name, unit in (('position', 'rad'), ('velocity', 'rad/s'), ('effort', 'N·m')):
            if not callable(getattr(self, name)):
                checks.finite(name, getattr(self, name), unit + ' or a function of time')

    def __call__(self, t) -> np.ndarray:
        """``(q*, qd*, tau_ff)`` at the times ``t`` (n,), as an (n, 3) array."""
        t = np.asarray(t, dtype=float)
        parts = [part(t) if callable(part) else part
                 for part in (self.position, self.velocity, self.effort)]
        return np.stack([np.asarray(x, dtype=float) * np.ones(t.shape) for x in parts], axis=-1)

    @property
    def position_only(self) -> bool:
        """True when qd* and tau_ff are the constant 0 (what ``<position>`` can take)."""
        return all(not callable(x) and x == 0 for x in (self.velocity, self.effort))


@dataclasses.dataclass(frozen=True)
class Run:
    """One simulated run of the pendulum."""

    actuator: Actuator
    pendulum: PendulumParams
    t: np.ndarray
    """(n + 1,) time, s. A diverged run ends where it was flagged."""
    q: np.ndarray
    """(n + 1,) joint angle, rad (0 hanging, π/2 horizontal)."""
    v: np.ndarray
    """(n + 1,) joint velocity, rad/s."""
    command: np.ndarray
    """(n + 1,) the position command q* held at time t (before any delay), rad."""
    torque: np.ndarray
    """(n,) the actuator torque applied during step k, from t[k] to t[k + 1], N·m."""
    diverged: bool
    """MuJoCo's bad-acceleration warning, a non-finite state or |qd| > ``SPEED_BOUND``."""
    commands: np.ndarray
    """(n + 1, 3) the full command (q* rad, qd* rad/s, tau_ff N·m) held at time t (before any delay);
    ``commands[:, 0]`` is ``command``."""


@functools.cache
def _base_model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(PENDULUM_XML)


def pendulum_model(pendulum: PendulumParams, actuator: Actuator | None = None) -> mujoco.MjModel:
    """The compiled pendulum with ``pendulum`` and the actuator written into its fields.

    An implicit actuator becomes ``<position kp kv forcerange>`` (gain kp, bias (0, -kp, -kv)); an
    explicit one (or None) becomes ``<motor>`` (gain 1, no bias, no clamp): its ``ctrl`` is the torque.
    """
    m = copy.copy(_base_model())
    if actuator is not None and not actuator.explicit:
        m.actuator_gainprm[0, 0] = actuator.kp
        m.actuator_biasprm[0, :3] = (0.0, -actuator.kp, -actuator.kv)
        limited = math.isfinite(actuator.effort_limit)
        m.actuator_forcelimited[0] = limited
        if limited:
            m.actuator_forcerange[0] = (-actuator.effort_limit, actuator.effort_limit)
    else:
        m.actuator_gainprm[0, 0] = 1.0
        m.actuator_biasprm[0, :3] = 0.0
        m.actuator_forcelimited[0] = False
    return _with_pendulum(m, pendulum)


def _with_pendulum(m: mujoco.MjModel, pendulum: PendulumParams) -> mujoco.MjModel:
    """Write the pendulum's joint and option fields into ``m``, then the constants that follow them."""
    m.dof_armature[0] = pendulum.armature
    m.dof_damping[0] = pendulum.damping
    m.dof_frictionloss[0] = pendulum.frictionloss
    m.opt.timestep = pendulum.timestep
    m.opt.integrator = INTEGRATOR_ENUM[pendulum.integrator]
    mujoco.mj_setConst(m, mujoco.MjData(m))  # armature changes dof_invweight0 (friction loss)
    return m


def as_command(command: Command | Callable | float) -> Command:
    """A :class:`Command` as is; a function of time or an angle as the position command q*."""
    return command if isinstance(command, Command) else Command(position=command)


def held_commands(command: Command | Callable | float, pendulum: PendulumParams,
                  nstep: int) -> np.ndarray:
    """The command each physics step sees, sampled at the control ticks and held in between.

    Step k uses ``command(t_tick)`` with ``t_tick = h * decimation * floor(k / decimation)``; all three
    parts are sampled at the same ticks.

    Args:
      command: a :class:`Command`, or ``command(t)`` → q* (rad), or a constant angle (rad); the last two
        command ``qd* = tau_ff = 0``.
      pendulum: its ``timestep`` and ``decimation``.
      nstep: number of physics steps.

    Returns:
      (nstep, 3) commands (q* rad, qd* rad/s, tau_ff N·m).
    """
    k = np.arange(nstep)
    tick = pendulum.timestep * pendulum.decimation * (k // pendulum.decimation)
    return as_command(command)(tick)


def _bad(v: float) -> bool:
    return not math.isfinite(v) or abs(v) > SPEED_BOUND


def _scalar_law(actuator: Actuator) -> Callable[[float, float, float, float, float], float]:
    """``actuator.torque(q, v, q_target, v_target, tau_ff)`` for Python floats, without numpy's
    per-call overhead.

    The same arithmetic in the same order as :func:`pd_torque` (tests compare the runner with
    ``torque`` itself). With ``v_target = tau_ff = 0`` it is bit for bit ``kp*(q* - q) - kv*qd``:
    ``kv*(0 - qd)`` is exactly ``-(kv*qd)`` and adding 0 changes nothing.
    """
    kp, kv, e = float(actuator.kp), float(actuator.kv), float(actuator.effort_limit)
    if isinstance(actuator, RemotizedPD):
        table = actuator.table

        def law(q, v, q_target, v_target, tau_ff):
            limit = float(remotized_limit(q, table))
            return min(max(kp * (q_target - q) + kv * (v_target - v) + tau_ff, -limit), limit)
    elif isinstance(actuator, DCMotor):
        s, vmax = float(actuator.saturation_effort), float(actuator.velocity_limit)
        bound = vmax * (1.0 + e / s)

        def law(q, v, q_target, v_target, tau_ff):
            vc = min(max(v, -bound), bound)
            high = min(s * (1.0 - vc / vmax), e)
            low = max(s * (-1.0 - vc / vmax), -e)
            return min(max(kp * (q_target - q) + kv * (v_target - v) + tau_ff, low), high)
    else:
        def law(q, v, q_target, v_target, tau_ff):
            return min(max(kp * (q_target - q) + kv * (v_target - v) + tau_ff, -e), e)
    return law


def _run_explicit(actuator: Actuator, pendulum: PendulumParams, commands: np.ndarray,
                  q0: float, v0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Step one explicit run: torque from the current state, through the motor, every physics step.

    ``commands`` is (nstep, 3): (q*, qd*, tau_ff) per physics step, delayed together.
    """
    m = pendulum_model(pendulum, actuator)
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0] = q0, v0
    mujoco.mj_forward(m, d)
    nstep = len(commands)
    seen = delay_commands(commands, actuator.delay)
    q = np.empty(nstep + 1)
    v = np.empty(nstep + 1)
    tau = np.empty(nstep)
    q[0], v[0] = q0, v0
    law = _scalar_law(actuator)
    badqacc = mujoco.mjtWarning.mjWARN_BADQACC
    seen = seen.tolist()
    for k in range(nstep):
        q_target, v_target, tau_ff = seen[k]
        tau[k] = law(q[k], v[k], q_target, v_target, tau_ff)
        d.ctrl[0] = tau[k]
        mujoco.mj_step(m, d)
        q[k + 1], v[k + 1] = d.qpos[0], d.qvel[0]
        if d.warning[badqacc].number > 0 or _bad(v[k + 1]):
            # MuJoCo resets a run whose acceleration blew up: keep what came before the reset
            end = k + 1 if d.warning[badqacc].number == 0 else k
            return q[:end + 1], v[:end + 1], tau[:end], True
    return q, v, tau, False


def _run_implicit(actuators: Sequence[Actuator], pendulums: Sequence[PendulumParams],
                  commands: Sequence[np.ndarray], q0: float, v0: float) -> list:
    """Implicit runs together on ``mujoco.batch.Batch``: the command sequences are known in advance."""
    models = [pendulum_model(p, a) for a, p in zip(actuators, pendulums)]
    batch = mujoco.batch.Batch(models[0], len(models), nthread=1)
    batch.set_models(models)
    batch.reset()
    batch.qpos[:, 0] = q0
    batch.qvel[:, 0] = v0
    batch.forward()
    nsteps = np.array([len(c) for c in commands])
    out: dict[int, tuple] = {}
    for nstep in np.unique(nsteps):
        ids = np.nonzero(nsteps == nstep)[0]
        control = np.stack([commands[i] for i in ids])[:, :, None]
        rec = batch.rollout(int(nstep), control=control, record=('qpos', 'qvel', 'actuator_force'),
                            ids=ids)
        for j, i in enumerate(ids):
            out[int(i)] = (rec['qpos'][j, :, 0], rec['qvel'][j, :, 0], rec['actuator_force'][j, :, 0])
    bad = batch.warning[:, mujoco.mjtWarning.mjWARN_BADQACC, 1] > 0
    results = []
    for i in range(len(models)):
        q = np.concatenate([[q0], out[i][0]])
        v = np.concatenate([[v0], out[i][1]])
        tau = out[i][2].copy()
        diverged = bool(bad[i])
        fast = np.nonzero(~np.isfinite(v) | (np.abs(v) > SPEED_BOUND))[0]
        if diverged:
            end = servo.valid_length(q)
            q, v, tau = q[:end], v[:end], tau[:end - 1]
        if fast.size:
            end = min(int(fast[0]) + 1, len(q))
            q, v, tau = q[:end], v[:end], tau[:end - 1]
            diverged = True
        results.append((q, v, tau, diverged))
    return results


def simulate(actuators: Sequence[Actuator], *,
             pendulum: PendulumParams | Sequence[PendulumParams] = PendulumParams(),
             command: Command | Callable | float = Step(), duration: float = 4.0, q0: float = 0.0,
             v0: float = 0.0) -> list[Run]:
    """Run the pendulum once per actuator config.

    Implicit configs run together on ``mujoco.batch.Batch``; explicit ones step ``mj_step`` one physics
    step at a time, recomputing the torque from the current state while the command (q*, qd*,
    tau_ff) is held between control ticks (and delayed, all three together, for :class:`DelayedPD` and
    :class:`RemotizedPD`).

    Args:
      actuators: the configs, (nrun,).
      pendulum: one :class:`PendulumParams` for every run, or one per run.
      command: a :class:`Command` (q*, qd*, tau_ff), or ``command(t)`` → q* (rad) for an array of
        tick times, e.g. :class:`Step`, :class:`Square`, or a constant angle (then qd* = tau_ff = 0).
        Implicit configs take a position command only.
      duration: simulated time, s.
      q0, v0: initial angle (rad) and velocity (rad/s).

    Returns:
      One :class:`Run` per config, in order.
    """
    checks.positive('duration', duration, 's')
    if not (math.isfinite(q0) and math.isfinite(v0)):
        raise ValueError(f'q0 and v0 must be finite (rad, rad/s), got {q0!r}, {v0!r}')
    q0 = q0 + perturb.size()  # a last-bit nudge when PHYSAI_PERTURB asks for one (physai.perturb)
    actuators = list(actuators)
    pendulums = (list(pendulum) if isinstance(pendulum, (list, tuple))
                 else [pendulum] * len(actuators))
    if len(pendulums) != len(actuators):
        raise ValueError(f'pendulum must be one PendulumParams or one per actuator '
                         f'({len(actuators)}), got {len(pendulums)}')
    command = as_command(command)
    implicit = [i for i, a in enumerate(actuators) if not a.explicit]
    if implicit and not command.position_only:
        raise ValueError('command must be a position command (velocity = effort = 0) for an implicit '
                         f'PD (<position>), got velocity={command.velocity!r}, effort={command.effort!r}')
    steps = [max(1, round(duration / p.timestep)) for p in pendulums]
    if steps and max(steps) > servo.MAX_STEPS:  # the same cap as the link's runs: an error, not a hang
        k = int(np.argmax(steps))
        raise ValueError(f'duration / timestep must be at most MAX_STEPS = {servo.MAX_STEPS:,} steps per run, '
                         f'got {duration!r} s / {pendulums[k].timestep!r} s = {steps[k]:,}')
    commands = [held_commands(command, p, n) for p, n in zip(pendulums, steps)]
    results: list = [None] * len(actuators)
    if implicit:
        for i, res in zip(implicit, _run_implicit([actuators[i] for i in implicit],
                                                  [pendulums[i] for i in implicit],
                                                  [commands[i][:, 0] for i in implicit], q0, v0)):
            results[i] = res
    for i, a in enumerate(actuators):
        if a.explicit:
            results[i] = _run_explicit(a, pendulums[i], commands[i], q0, v0)
    runs = []
    for a, p, c, (q, v, tau, diverged) in zip(actuators, pendulums, commands, results):
        n = len(q)
        cmd = np.concatenate([c, c[-1:]])[:n]
        runs.append(Run(a, p, p.timestep * np.arange(n), q, v, cmd[:, 0].copy(), tau, diverged, cmd))
    return runs


# ------------------------------------------------------------------------------------------------
# what the book reads off a run


SETTLE_BAND = 0.02  # settling: within 2 % of the step size
TAIL = 0.5  # s, the window of the settled value


def _tail(run: Run, window: float) -> np.ndarray:
    return run.q[run.t >= run.t[-1] - window + 1e-9]


def step_metrics(run: Run, *, at: float = 0.5) -> dict:
    """Figures of a step response whose command jumps at ``at`` seconds.

    Returns a dict with ``final_rad`` (mean over the last 0.5 s), ``error_deg`` (command minus final),
    ``overshoot_pct`` (beyond the final value, % of the move), ``rise_ms`` (10 % to 90 % of the move,
    linear interpolation), ``settling_s`` (from the step until q stays within 2 % of the move),
    ``peak_speed`` (max |qd|, rad/s), ``p2p_deg`` (peak-to-peak of q over the last 0.5 s, degrees: a
    run above ``plots.SWINGING_P2P_DEG`` has not settled) and ``diverged``; NaN figures for a diverged
    run.
    """
    nan = math.nan
    if run.diverged or run.t[-1] <= at:
        return {'final_rad': nan, 'error_deg': nan, 'overshoot_pct': nan, 'rise_ms': nan,
                'settling_s': nan, 'peak_speed': nan, 'p2p_deg': nan, 'diverged': True}
    after = run.t >= at - 1e-9
    t, q = run.t[after], run.q[after]
    start = q[0]
    tail = _tail(run, TAIL)
    final = float(np.mean(tail))
    move = final - start
    wanted = float(run.command[-1]) - start
    if abs(move) < servo.RISE_START * abs(wanted) or move == 0:
        # it never got a tenth of its way: there is no rise, overshoot or settling of a move to report
        rise = overshoot = settling = nan
    else:
        progress = (q - start) / move
        rise = servo.rise_time(t, q, final)
        overshoot = max(0.0, float(np.max(progress)) - 1.0) * 100
        outside = np.nonzero(np.abs(q - final) > SETTLE_BAND * abs(move))[0]
        settling = 0.0 if outside.size == 0 else float(t[min(outside[-1] + 1, len(t) - 1)] - at)
    return {'final_rad': final, 'error_deg': math.degrees(float(run.command[-1]) - final),
            'overshoot_pct': overshoot, 'rise_ms': 1e3 * rise, 'settling_s': settling,
            'peak_speed': float(np.max(np.abs(run.v))), 'p2p_deg': math.degrees(float(np.ptp(tail))),
            'diverged': False}


def panel_readout(run: Run, metrics: dict) -> str:
    """The live panel's one-line verdict on a step response (``metrics`` from :func:`step_metrics`).

    A settled run reads ``'settling error 1.69°   rise 75 ms'``. A run whose angle still moves more than
    ``plots.SWINGING_P2P_DEG`` peak to peak over the last 0.5 s has no settling error or rise time to
    speak of (both are measured against the mean of that window): it reads ``'still swinging: 15.2°
    peak to peak   rise n/a'`` if its velocity reverses in the window, ``'still creeping: 6.92° in the
    last 0.5 s   rise n/a'`` if it only drifts one way. A diverged run reads ``'diverged after 0.611 s'``.
    """
    from physai.plots import SWINGING_P2P_DEG

    if run.diverged or metrics['diverged']:
        return f'diverged after {float(run.t[-1]):.3f} s'
    p2p = metrics['p2p_deg']
    if p2p > SWINGING_P2P_DEG:
        v = run.v[run.t >= run.t[-1] - TAIL + 1e-9]
        signs = np.sign(v[v != 0])
        if np.any(signs[1:] != signs[:-1]):
            return f'still swinging: {p2p:.3g}° peak to peak   rise n/a'
        return f'still creeping: {p2p:.3g}° in the last {TAIL:g} s   rise n/a'
    rise = metrics['rise_ms']
    rise_text = f'{rise:.0f} ms' if math.isfinite(rise) else 'n/a'
    return f"settling error {metrics['error_deg']:.2f}°   rise {rise_text}"


def lag_ms(run: Run) -> float:
    """Mean delay from each rising command edge to q crossing halfway between its two levels, ms."""
    if run.diverged:
        return math.nan
    cmd = run.command
    edges = np.nonzero(np.diff(cmd) > 0)[0] + 1
    lags = []
    for k in edges:
        crossed = servo.crossing_time(run.t[k - 1:], run.q[k - 1:], 0.5 * (cmd[k - 1] + cmd[k]))
        if math.isfinite(crossed):
            lags.append(crossed - run.t[k])
    return 1e3 * float(np.mean(lags)) if lags else math.nan


def decay_time(run: Run, *, fraction: float = 0.1) -> float:
    """Time after which |qd| stays below ``fraction`` of its initial value, s (NaN if it never does)."""
    if run.diverged:
        return math.nan
    level = fraction * abs(run.v[0])
    above = np.nonzero(np.abs(run.v) >= level)[0]
    if above.size == 0:
        return 0.0
    if above[-1] == len(run.v) - 1:
        return math.nan
    return float(run.t[above[-1] + 1])


def swing_angle(effort_limit: float, tau_g: float = TAU_G) -> float:
    """The angle where gravity equals the limit, ``tau_g*sin(q) = E`` (rad); NaN when E >= tau_g."""
    return math.asin(effort_limit / tau_g) if effort_limit < tau_g else math.nan


# ------------------------------------------------------------------------------------------------
# the sweeps


SWEEPS = {
    'stiffness': (10, 40, 100, 400, 1000),
    'damping': (0.5, 2, 10, 40, 100),
    'armature': (0, 0.01, 0.05, 0.2, 1),
    'friction': (0, 0.05, 0.2, 0.5, 1),
    'effort-limit': (1, 2, 3, 4, 6),
    'velocity-limit': (2, 4, 8, 16, 32),
    'delay': (0, 6, 12, 24, 48),
}
SWEEP_KEY = {'stiffness': 'kp', 'damping': 'kv', 'armature': 'armature', 'friction': 'frictionloss',
             'effort-limit': 'effort_limit', 'velocity-limit': 'velocity_limit', 'delay': 'delay_steps'}
DC_SATURATION = 12.0  # N·m
DC_EFFORT = 6.0  # N·m
FREE_SWING_SPEED = 4 * math.pi  # rad/s


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One sweep of the Experiment: its runs, the command and the rows the book prints."""

    param: str
    values: tuple
    runs: list[Run]
    command: Callable
    rows: list[dict]


def sweep(param: str) -> Sweep:
    """Run one of the chapter's sweeps (five runs each) and compute its rows.

    ``param`` is one of ``SWEEPS``: stiffness, damping, armature (implicit PD, step 0 → π/2 at 0.5 s,
    4 s), friction (kp = kv = 0, free swing from 4π rad/s, 6 s), effort-limit (ideal PD kp 400 kv 20
    from hanging towards horizontal, 6 s), velocity-limit (DC motor S 12, E 6, kp 100, kv 5, the step,
    4 s), delay (delayed PD kp 100 kv 5, square wave 0 ↔ π/2 of period 2 s, 6 s).
    """
    if param not in SWEEPS:
        raise ValueError(f'param must be one of {", ".join(SWEEPS)}, got {param!r}')
    values = SWEEPS[param]
    key = SWEEP_KEY[param]
    step = Step()
    if param == 'stiffness':
        runs = simulate([ImplicitPD(kp=x, kv=5.0) for x in values], command=step, duration=4.0)
    elif param == 'damping':
        runs = simulate([ImplicitPD(kp=100.0, kv=x) for x in values], command=step, duration=4.0)
    elif param == 'armature':
        runs = simulate([ImplicitPD(kp=100.0, kv=5.0)] * len(values),
                        pendulum=[PendulumParams(armature=x) for x in values], command=step,
                        duration=4.0)
    elif param == 'friction':
        runs = simulate([IdealPD(kp=0.0, kv=0.0)] * len(values),
                        pendulum=[PendulumParams(frictionloss=x) for x in values], command=0.0,
                        duration=6.0, v0=FREE_SWING_SPEED)
        step = None
    elif param == 'effort-limit':
        step = Step(at=0.0)
        runs = simulate([IdealPD(kp=400.0, kv=20.0, effort_limit=x) for x in values], command=step,
                        duration=6.0)
    elif param == 'velocity-limit':
        runs = simulate([DCMotor(kp=100.0, kv=5.0, effort_limit=DC_EFFORT,
                                 saturation_effort=DC_SATURATION, velocity_limit=x) for x in values],
                        command=step, duration=4.0)
    else:
        step = Square()
        runs = simulate([DelayedPD(kp=100.0, kv=5.0, delay=x) for x in values], command=step,
                        duration=6.0)
    rows = []
    for x, run in zip(values, runs):
        if param in ('stiffness', 'damping', 'armature', 'velocity-limit'):
            s = step_metrics(run, at=step.at)
            row = {key: x, 'error_deg': s['error_deg'], 'overshoot_pct': s['overshoot_pct'],
                   'rise_ms': s['rise_ms'], 'settling_s': s['settling_s']}
            if param == 'stiffness':
                row['servo_sag_deg'] = math.degrees(servo_sag(x, TAU_G))
            if param == 'damping':
                inertia = run.pendulum.inertia
                row['dampratio'] = x / (2 * math.sqrt(100.0 * inertia))
            if param == 'velocity-limit':
                row['peak_speed'] = s['peak_speed']
        elif param == 'friction':
            turns = float(np.max(run.q)) / (2 * math.pi) if not run.diverged else math.nan
            decay = decay_time(run)  # None (printed '-', JSON null): not below 10 % within the run
            row = {key: x, 'decay_s': decay if math.isfinite(decay) else None, 'turns': turns,
                   'final_speed': float(abs(run.v[-1]))}
        elif param == 'effort-limit':
            tail = _tail(run, 2.0)
            row = {key: x, 'mean_angle_rad': float(np.mean(tail)), 'p2p_rad': float(np.ptp(tail))}
        else:
            row = {key: x, 'delay_ms': 1e3 * x * run.pendulum.timestep, 'lag_ms': lag_ms(run),
                   'overshoot_pct': _square_overshoot(run)}
        rows.append({k: row[k] for k, _ in SWEEP_COLUMNS[param]})
    return Sweep(param, values, runs, step, rows)


def _square_overshoot(run: Run) -> float:
    """Largest excursion beyond the command range (0 … π/2) as % of the step, NaN if diverged."""
    if run.diverged:
        return math.nan
    high, low = float(np.max(run.command)), float(np.min(run.command))
    beyond = max(float(np.max(run.q)) - high, low - float(np.min(run.q)), 0.0)
    return 100 * beyond / (high - low)


SWEEP_COLUMNS = {
    'stiffness': (('kp', '.0f'), ('error_deg', '.3f'), ('servo_sag_deg', '.3f'),
                  ('overshoot_pct', '.2f'), ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'damping': (('kv', '.1f'), ('dampratio', '.3f'), ('error_deg', '.3f'), ('overshoot_pct', '.2f'),
                ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'armature': (('armature', '.2f'), ('error_deg', '.3f'), ('overshoot_pct', '.2f'),
                 ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'friction': (('frictionloss', '.2f'), ('decay_s', '.3f'), ('turns', '.2f'),
                 ('final_speed', '.4f')),
    'effort-limit': (('effort_limit', '.1f'), ('mean_angle_rad', '.4f'), ('p2p_rad', '.4f')),
    'velocity-limit': (('velocity_limit', '.0f'), ('peak_speed', '.3f'), ('error_deg', '.3f'),
                       ('overshoot_pct', '.2f'), ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'delay': (('delay_steps', '.0f'), ('delay_ms', '.1f'), ('lag_ms', '.1f'),
              ('overshoot_pct', '.2f')),
}


@experiment('actuator-sweep', summary='the pendulum under one actuator parameter swept over five values',
            columns=SWEEP_COLUMNS, choices=tuple(SWEEPS))
def actuator_sweep(param: str) -> list[dict]:
    return sweep(param).rows


# ------------------------------------------------------------------------------------------------
# where implicit and explicit part ways


MAP_TIMESTEPS = (0.0005, 0.001, 0.002, TIMESTEP, 0.005, 0.01, 0.02)  # s
MAP_KVS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200)  # N·m·s/rad
MAP_KPS = (100, 1000, 10000)  # N·m/rad


def explicit_implicit_growth(kp: float, kv: float, timestep: float, inertia: float = LINK_INERTIA
                ) -> tuple[float, float]:
    """Growth per step of the PD-held pendulum near horizontal, explicit and implicit.

    Near q = π/2 gravity adds no stiffness (``d(tau_g*sin q)/dq = 0`` there), so the motion is the
    linear oscillator ``a = -w2*q - c*v`` with ``w2 = kp/I`` and ``c = kv/I``. The explicit PD submits
    ``kv*qd`` from the start of the step (chapter 1's step with ``c_implicit = 0``); implicitfast folds
    ``kv`` into the step (``c_implicit = c``). Growth above 1 means the run diverges; the explicit
    bound is ``h²ω² < 4 - 2hc``, the implicit one ``h²ω² < 4 + 2hc``.

    Returns:
      ``(explicit_growth, implicit_growth)``.
    """
    w2, c = kp / inertia, kv / inertia
    explicit = step_growth(semi_implicit_euler, timestep, w2, c, c_implicit=0.0)
    implicit = step_growth(semi_implicit_euler, timestep, w2, c, c_implicit=c)
    return explicit, implicit


def divergence_map(*, timesteps: Sequence[float] = MAP_TIMESTEPS, kvs: Sequence[float] = MAP_KVS,
                   kps: Sequence[float] = MAP_KPS, duration: float = 3.0) -> list[dict]:
    """Which (timestep, kv, kp) cells diverge with the explicit PD and with the implicit one, per integrator.

    Every cell holds the pendulum at horizontal from hanging (command π/2 from t = 0) for ``duration``
    seconds: with the explicit :class:`IdealPD` (no clamp), with :class:`ImplicitPD` under implicitfast (kv
    implicit, kp explicit) and with :class:`ImplicitPD` under MuJoCo's ``discrete`` integrator, which solves the
    step in the metric ``M + hD + h²K`` and so takes the spring kp implicitly as well. The explicit PD through a
    ``<motor>`` is the same step as ``<position>`` under MuJoCo's Euler integrator (which takes ``kv``
    explicitly), so all cells run together on ``mujoco.batch.Batch`` as ``<position>`` models under the three
    integrators; ``tests/test_actuators.py`` checks that equality against the per-step loop of :func:`simulate`.

    Returns:
      Rows ``kp``, ``kv``, ``timestep``, ``h_omega``, ``h_c``, ``explicit_growth``, ``implicit_growth``,
      ``explicit``, ``implicit`` (implicitfast), ``discrete`` (``stable`` / ``diverged`` from MuJoCo).
    """
    cells = [(kp, kv, h) for kp in kps for kv in kvs for h in timesteps]
    integrators = ('Euler', 'implicitfast', 'discrete')
    actuators, pendulums = [], []
    for kp, kv, h in cells:
        for integrator in integrators:
            actuators.append(ImplicitPD(kp=kp, kv=kv))
            pendulums.append(PendulumParams(timestep=h, integrator=integrator))
    commands = [np.full(max(1, round(duration / p.timestep)), HORIZONTAL) for p in pendulums]
    results = _run_implicit(actuators, pendulums, commands, 0.0, 0.0)
    verdicts = ['diverged' if r[3] else 'stable' for r in results]
    rows = []
    for k, (kp, kv, h) in enumerate(cells):
        explicit_growth, implicit_growth = explicit_implicit_growth(kp, kv, h)
        explicit, implicit, discrete = verdicts[3 * k:3 * k + 3]
        rows.append({'kp': kp, 'kv': kv, 'timestep': h, 'h_omega': h * math.sqrt(kp / LINK_INERTIA),
                     'h_c': h * kv / LINK_INERTIA, 'explicit_growth': explicit_growth,
                     'implicit_growth': implicit_growth, 'explicit': explicit, 'implicit': implicit,
                     'discrete': discrete})
    return rows


# ------------------------------------------------------------------------------------------------
# MuJoCo 3.17's own counterparts: <dcmotor> and actuator delay


def native_dc_motor_constants(saturation_effort: float, velocity_limit: float, *,
                              resistance: float = 1.0) -> tuple[float, float]:
    """Motor constant K and supply voltage U of a ``<dcmotor>`` with stall torque S and no-load speed V.

    MuJoCo's quasi-static DC motor (voltage input u, ``motorconst`` K for both torque and back-EMF,
    ``resistance`` R) gives ``tau = (K/R)*(u - K*qd)``. With u clamped to ±U (``ctrlrange``) its stall
    torque is ``S = K*U/R`` and its no-load speed ``V = U/K``, so ``K = sqrt(S*R/V)``, ``U = K*V``.

    Returns:
      ``(motorconst, voltage)`` in N·m/A and V.
    """
    k = math.sqrt(saturation_effort * resistance / velocity_limit)
    return k, k * velocity_limit


def native_dc_motor_xml(cfg: DCMotor, *, resistance: float = 1.0) -> str:
    """The ``<dcmotor>`` element whose torque-speed band equals ``cfg``'s envelope.

    ``saturation="E 0 0"`` caps the torque at ±E (``actuator_forcerange``), ``ctrlrange="-U U"`` clamps
    the voltage, which bounds the torque to ``S*(±1 - qd/V)``.
    """
    k, u = native_dc_motor_constants(cfg.saturation_effort, cfg.velocity_limit, resistance=resistance)
    return (f'<dcmotor name="actuator" joint="hinge" motorconst="{k!r}" resistance="{resistance!r}" '
            f'saturation="{cfg.effort_limit!r} 0 0" ctrlrange="{-u!r} {u!r}"/>')


_START = PENDULUM_XML.index('<general')
_GENERAL = PENDULUM_XML[_START:PENDULUM_XML.index('/>', _START) + 2]  # the actuator element to replace


def _native_model(actuator_xml: str, pendulum: PendulumParams) -> mujoco.MjModel:
    return _with_pendulum(mujoco.MjModel.from_xml_string(PENDULUM_XML.replace(_GENERAL, actuator_xml)),
                          pendulum)


def _loop(m: mujoco.MjModel, d: mujoco.MjData, nstep: int, ctrl: Callable) -> np.ndarray:
    perturb.nudge(d.qpos)
    q = np.empty(nstep + 1)
    q[0] = d.qpos[0]
    for k in range(nstep):
        d.ctrl[0] = ctrl(k, d.qpos[0], d.qvel[0])
        mujoco.mj_step(m, d)
        q[k + 1] = d.qpos[0]
    return q


def native_dc_motor_run(cfg: DCMotor, *, pendulum: PendulumParams = PendulumParams(),
                        command: Callable | float = Step(), duration: float = 4.0,
                        compensate: bool = True, resistance: float = 1.0) -> np.ndarray:
    """The pendulum on MuJoCo's ``<dcmotor>`` driven by a voltage from the same PD law.

    Each physics step the voltage is ``u = (R/K)*tau_PD + K*qd`` (``compensate``: the controller cancels
    the back-EMF, so inside the band the torque is the PD torque, as in :class:`DCMotor`) or
    ``u = (R/K)*tau_PD`` (a plain voltage drive: the back-EMF adds damping ``K²/R = S/V``).

    Returns:
      q, (nstep + 1,) rad.
    """
    k, _ = native_dc_motor_constants(cfg.saturation_effort, cfg.velocity_limit, resistance=resistance)
    m = _native_model(native_dc_motor_xml(cfg, resistance=resistance), pendulum)
    d = mujoco.MjData(m)
    nstep = max(1, round(duration / pendulum.timestep))
    cmd = held_commands(command, pendulum, nstep)[:, 0]

    def voltage(i, q, v):
        tau = cfg.kp * (cmd[i] - q) - cfg.kv * v
        return resistance / k * tau + (k * v if compensate else 0.0)

    return _loop(m, d, nstep, voltage)


def native_delay_run(cfg: DelayedPD, *, pendulum: PendulumParams = PendulumParams(),
                     command: Callable | float = Square(), duration: float = 6.0,
                     hold_first: bool = True) -> np.ndarray:
    """The pendulum on ``<position kp kv delay nsample>``: MuJoCo delays ``ctrl`` itself.

    The delay is ``cfg.delay`` physics steps (``delay = steps*timestep`` s, ``nsample = steps + 1``,
    zero-order hold). MuJoCo fills the history with zeros after a reset; ``hold_first`` refills it
    with the first command through ``mj_initCtrlHistory``, which is what :func:`delay_commands` does.

    Returns:
      q, (nstep + 1,) rad.
    """
    steps = cfg.delay
    extra = (f' delay="{steps * pendulum.timestep!r}" nsample="{steps + 1}"' if steps else '')
    m = _native_model(f'<position name="actuator" joint="hinge" kp="{cfg.kp!r}" kv="{cfg.kv!r}"{extra}/>',
                      pendulum)
    d = mujoco.MjData(m)
    nstep = max(1, round(duration / pendulum.timestep))
    cmd = held_commands(command, pendulum, nstep)[:, 0]
    if steps and hold_first:
        mujoco.mj_initCtrlHistory(m, d, 0, None, np.full((steps + 1, 1), cmd[0]))
    return _loop(m, d, nstep, lambda i, q, v: cmd[i])


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference over the common length; a round-off bound when it is rounding."""
    n = min(len(a), len(b))
    return robust.difference(np.max(np.abs(a[:n] - b[:n])))


@experiment('actuator-native', summary="our DC motor and delay against MuJoCo 3.17's <dcmotor> and delay",
            columns=(('case', 's'), ('integrator', 's'), ('max_abs_diff', '.2e'), ('unit', 's')))
def native_comparison() -> list[dict]:
    """Where our explicit models and MuJoCo's native counterparts agree, and where they part."""
    cfg = DCMotor(kp=100.0, kv=5.0, effort_limit=DC_EFFORT, saturation_effort=DC_SATURATION,
                  velocity_limit=8.0)
    rows = []
    # the envelope itself: full positive and negative voltage at every speed
    m = _native_model(native_dc_motor_xml(cfg), PendulumParams())
    d = mujoco.MjData(m)
    worst = 0.0
    for v in np.linspace(-3 * cfg.velocity_limit, 3 * cfg.velocity_limit, 121):
        low, high = cfg.limits(0.0, v)
        for u, want in ((1e6, high), (-1e6, low)):
            mujoco.mj_resetData(m, d)
            d.qvel[0], d.ctrl[0] = v, u
            mujoco.mj_forward(m, d)
            worst = max(worst, abs(float(d.actuator_force[0]) - float(want)))
    rows.append({'case': 'dcmotor torque at full voltage vs dc_motor_envelope', 'integrator': '-',
                 'max_abs_diff': robust.difference(worst), 'unit': 'N m'})
    for integrator in ('Euler', 'implicitfast'):
        p = PendulumParams(integrator=integrator)
        ours = simulate([cfg], pendulum=p, command=Step(), duration=4.0)[0].q
        rows.append({'case': 'dcmotor, back-EMF compensated vs DCMotor', 'integrator': integrator,
                     'max_abs_diff': _max_diff(native_dc_motor_run(cfg, pendulum=p), ours),
                     'unit': 'rad'})
    ours = simulate([cfg], command=Step(), duration=4.0)[0].q
    rows.append({'case': 'dcmotor, plain voltage (back-EMF damping) vs DCMotor',
                 'integrator': 'implicitfast',
                 'max_abs_diff': _max_diff(native_dc_motor_run(cfg, compensate=False), ours),
                 'unit': 'rad'})
    delayed = DelayedPD(kp=100.0, kv=5.0, delay=24)
    p = PendulumParams()
    nstep = round(6.0 / p.timestep)
    seen = delay_commands(held_commands(Square(), p, nstep)[:, 0], delayed.delay)
    m = pendulum_model(p, ImplicitPD(kp=100.0, kv=5.0))
    implicit_on_delayed = _loop(m, mujoco.MjData(m), nstep, lambda i, q, v: seen[i])
    native = native_delay_run(delayed)
    rows.append({'case': 'position delay, history = first command vs delay_commands',
                 'integrator': 'implicitfast', 'max_abs_diff': _max_diff(native, implicit_on_delayed),
                 'unit': 'rad'})
    rows.append({'case': 'position delay, history = zeros (default) vs first command',
                 'integrator': 'implicitfast',
                 'max_abs_diff': _max_diff(native_delay_run(delayed, hold_first=False), native),
                 'unit': 'rad'})
    explicit = simulate([delayed], command=Square(), duration=6.0)[0].q
    rows.append({'case': 'position delay (implicit) vs DelayedPD (explicit)',
                 'integrator': 'implicitfast', 'max_abs_diff': _max_diff(native, explicit), 'unit': 'rad'})
    return rows


@experiment('actuator-map',
            summary='timestep x kv x kp: where the explicit PD diverges and the implicit (implicitfast, discrete) holds',
            columns=(('kp', '.0f'), ('kv', '.1f'), ('timestep', '.5f'), ('h_omega', '.3f'), ('h_c', '.3f'),
                     ('explicit_growth', '.4f'), ('implicit_growth', '.4f'), ('explicit', 's'),
                     ('implicit', 's'), ('discrete', 's')))
def actuator_map() -> list[dict]:
    return divergence_map()


# ------------------------------------------------------------------------------------------------
# figures, the live panel and its static twin


def plot_runs(ax, runs: Sequence[Run], labels: Sequence[str], *, title: str = '',
              command: bool = True) -> None:
    """Position against time for several runs (degrees), with the (first run's) command drawn.

    Args:
      ax: matplotlib axes.
      runs: the runs, (nrun,).
      labels: one legend label per run.
      title: the axes title.
      command: draw the command q*(t) as a dashed step line.
    """
    import matplotlib as mpl

    colors = mpl.colormaps['viridis'](np.linspace(0.0, 0.85, len(runs)))
    if command and len(runs):
        ax.step(runs[0].t, np.degrees(runs[0].command), where='post', color='#555555', lw=1.2,
                ls='--', label='command q*')
    for run, lab, color in zip(runs, labels, colors):
        ax.plot(run.t, np.degrees(run.q), color=color, lw=1.4,
                label=lab + (' (diverged)' if run.diverged else ''))
    ax.set_xlabel('time (s)')
    ax.set_ylabel('joint angle q (deg)')
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7.5, loc='best')


PANEL_STEP = Step()
PANEL_DURATION = 3.0  # s


PANEL_NO_LIMIT = 100.0  # N·m: the effort slider's top position means "no limit"


def panel_actuator(model: str, kp: float, kv: float, effort_limit: float, velocity_limit: float,
                   delay: int) -> Actuator:
    """The config the live panel's controls describe (``model`` one of ``MODELS``).

    An ``effort_limit`` of ``PANEL_NO_LIMIT`` or more means no limit (the DC motor keeps it as its cap).
    """
    if effort_limit >= PANEL_NO_LIMIT and model != 'DC motor':
        effort_limit = math.inf
    if model == 'implicit':
        return ImplicitPD(kp=kp, kv=kv, effort_limit=effort_limit)
    if model == 'ideal PD':
        return IdealPD(kp=kp, kv=kv, effort_limit=effort_limit)
    if model == 'DC motor':
        return DCMotor(kp=kp, kv=kv, effort_limit=effort_limit, saturation_effort=DC_SATURATION,
                       velocity_limit=velocity_limit)
    if model == 'delayed PD':
        return DelayedPD(kp=kp, kv=kv, effort_limit=effort_limit, delay=int(round(delay)))
    raise ValueError(f'model must be one of {", ".join(MODELS)}, got {model!r}')


def panel_run(model: str, kp: float, kv: float, armature: float, timestep: float, integrator: str,
              effort_limit: float, velocity_limit: float, delay: int) -> tuple[Run, dict]:
    """One step response (0 → π/2 at 0.5 s, 3 s) for the panel, with :func:`step_metrics`."""
    actuator = panel_actuator(model, kp, kv, effort_limit, velocity_limit, delay)
    pendulum = PendulumParams(armature=armature, timestep=timestep, integrator=integrator)
    run = simulate([actuator], pendulum=pendulum, command=PANEL_STEP, duration=PANEL_DURATION)[0]
    return run, step_metrics(run, at=PANEL_STEP.at)


def actuator_panel(*, model: str = 'ideal PD', kp: float = 100.0, kv: float = 5.0,
                   armature: float = 0.0, timestep: float = TIMESTEP,
                   integrator: str = 'implicitfast', effort_limit: float = 6.0,
                   velocity_limit: float = 8.0, delay: int = 12):
    """Chapter 2's live panel: one actuator model on the pendulum, redrawn on every change.

    Controls: the model (implicit, ideal PD, DC motor, delayed PD), the book's common four (kp,
    armature, timestep, integrator) and the models' own kv, effort limit, velocity limit (DC motor,
    stall torque 12 N·m) and delay (delayed PD, physics steps). Plots: (1) the step response 0 → 90°
    with the command, its settling error and rise time, a diverged run flagged; (2) the applied
    torque with the limits that clip it; (3) the path in the torque-speed plane with the allowed band.

    Returns:
      A :class:`physai.widgets.Panel`.
    """
    from physai import plots
    from physai import widgets as W

    run_cached = W.cached(panel_run, maxsize=16)

    def compute(values: dict) -> dict:
        run, metrics = run_cached(**values)
        return {'run': run, 'metrics': metrics, 'actuator': run.actuator}

    def setup(fig) -> dict:
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={'width_ratios': [1.2, 1, 1]})
        t_end = PANEL_DURATION
        ax1.step([0, PANEL_STEP.at, t_end], [0, 90, 90], where='post', color=plots.COLORS['command'],
                 lw=1, ls='--', label='command q*')
        (q_line,) = ax1.plot([], [], color=plots.COLORS['response'], label='q(t)', animated=True)
        readout = ax1.text(0.98, 0.05, '', transform=ax1.transAxes, ha='right', va='bottom',
                           fontsize=9, animated=True,
                           bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        flag = ax1.text(0.5, 0.55, 'diverged', transform=ax1.transAxes, ha='center', va='center',
                        color=plots.COLORS['diverged'], fontsize=16, fontweight='bold',
                        visible=False, animated=True,
                        bbox=dict(facecolor='white', edgecolor=plots.COLORS['diverged'], pad=3))
        ax1.set_xlim(0, t_end)
        ax1.set_ylim(-20, 150)
        plots.label(ax1, 'time (s)', 'joint angle q (deg)', 'step response')
        ax1.legend(loc='upper left', fontsize=7.5)
        (tau_line,) = ax2.plot([], [], color=plots.COLORS['response'], label='applied torque',
                               animated=True)
        (limit_line,) = ax2.plot([], [], color=plots.COLORS['bound'], lw=1, ls=':',
                                 label='limits', animated=True)
        ax2.axhline(TAU_G, color=plots.COLORS['sag'], lw=1, ls='--', label='hold torque tau_g')
        ax2.set_xlim(0, t_end)
        plots.label(ax2, 'time (s)', 'torque (N·m)', 'applied torque')
        ax2.legend(loc='upper right', fontsize=7.5)
        (band,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=1.5, label='allowed band',
                           animated=True)
        (path,) = ax3.plot([], [], color=plots.COLORS['response'], lw=1, label='run', animated=True)
        ax3.set_xlim(-30, 30)
        plots.label(ax3, 'joint velocity qd (rad/s)', 'torque (N·m)', 'torque-speed plane')
        ax3.legend(loc='upper right', fontsize=7.5)
        fig.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.9, wspace=0.35)
        return {'ax2': ax2, 'ax3': ax3, 'q': q_line, 'readout': readout, 'flag': flag,
                'tau': tau_line, 'limit': limit_line, 'band': band, 'path': path, 'ylim': None}

    def draw(state: dict, results: dict, values: dict) -> None:
        run, metrics, actuator = results['run'], results['metrics'], results['actuator']
        state['q'].set_data(run.t, np.clip(np.degrees(np.nan_to_num(run.q)), -30, 160))
        state['flag'].set_visible(run.diverged)
        state['readout'].set_color(plots.COLORS['diverged'] if run.diverged else '#222222')
        state['readout'].set_text(panel_readout(run, metrics))
        e = float(actuator.effort_limit)
        top = 1.25 * max(e, TAU_G) if math.isfinite(e) else 50.0
        if top != state['ylim']:  # static artists change only when the scale does
            for ax in (state['ax2'], state['ax3']):
                ax.set_ylim(-top, top)
            state['ylim'] = top
        n = len(run.torque)
        state['tau'].set_data(run.t[:n], np.clip(np.nan_to_num(run.torque), -2 * top, 2 * top))
        if isinstance(actuator, (IdealPD, ImplicitPD)) and not isinstance(actuator, DCMotor):
            state['limit'].set_data([0, PANEL_DURATION, np.nan, 0, PANEL_DURATION],
                                    [e, e, np.nan, -e, -e])
            state['band'].set_data([-30, 30, 30, -30, -30], [e, e, -e, -e, e])
        else:
            low, high = actuator.limits(0.0, run.v[:n])
            state['limit'].set_data(np.concatenate([run.t[:n], [np.nan], run.t[:n]]),
                                    np.concatenate([high, [np.nan], low]))
            speeds = np.linspace(-30, 30, 241)
            low, high = actuator.limits(0.0, speeds)
            state['band'].set_data(np.concatenate([speeds, speeds[::-1], speeds[:1]]),
                                   np.concatenate([high, low[::-1], high[:1]]))
        state['path'].set_data(np.clip(run.v[:n], -40, 40), np.clip(run.torque, -2 * top, 2 * top))

    controls = [W.Choice('model', 'model', MODELS, model)]
    controls += W.common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator)
    controls += [
        W.LogSlider('kv', 'kv', 0.1, 300.0, kv, unit='N·m·s/rad', readout_format='.3g'),
        W.Slider('effort_limit', 'effort limit E (100: none)', 0.5, PANEL_NO_LIMIT, effort_limit,
                 step=0.5, unit='N·m', readout_format='.1f'),
        W.Slider('velocity_limit', 'velocity limit V', 1.0, 40.0, velocity_limit, step=1.0,
                 unit='rad/s', readout_format='.0f'),
        W.Slider('delay', 'delay', 0, 60, delay, step=1, unit='steps', readout_format='.0f'),
    ]
    return W.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.9), dpi=80)


def effort_limit_twin():
    """Static twin of the effort-limit sweep: a slider over the five limits, a choice of model.

    Frames come from the sweep itself (ideal PD kp 400, kv 20) and from the implicit ``<position>``
    with the same gains and ``forcerange = ±E``. Plots: the angle with the command and the balance
    angle ``asin(E/tau_g)``; the applied torque with ±E and tau_g.
    """
    from physai import plots
    from physai import widgets as W

    values = SWEEPS['effort-limit']
    explicit = sweep('effort-limit').runs
    implicit = simulate([ImplicitPD(kp=400.0, kv=20.0, effort_limit=x) for x in values],
                        command=Step(at=0.0), duration=6.0)
    runs = {'ideal PD': dict(zip(values, explicit)), 'implicit': dict(zip(values, implicit))}
    every = 3  # keep every third sample (120 per second) to keep the page small

    def frame(effort_limit, model):
        run = runs[model][effort_limit]
        t = run.t[::every]
        items_q = [W.twin_line([0, 6], [90, 90], label='command q*', color=plots.COLORS['command'],
                               width=1.0, dash='5,4'),
                   W.twin_line(t, np.degrees(run.q[::every]), label='q(t)')]
        balance = swing_angle(effort_limit)
        if math.isfinite(balance):
            items_q.append(W.twin_line([0, 6], [math.degrees(balance)] * 2, label='asin(E/tau_g)',
                                       color=plots.COLORS['sag'], width=1.0, dash='2,3'))
        items_tau = [W.twin_line(run.t[:-1][::every], run.torque[::every], label='torque'),
                     W.twin_line([0, 6], [TAU_G, TAU_G], label='tau_g', color=plots.COLORS['sag'],
                                 width=1.0, dash='5,4'),
                     W.twin_line([0, 6, np.nan, 0, 6], [effort_limit, effort_limit, np.nan,
                                                        -effort_limit, -effort_limit],
                                 label='±E', color=plots.COLORS['bound'], width=1.0, dash='2,3')]
        return [items_q, items_tau]

    sliders = [W.TwinSlider('effort_limit', 'effort limit E (N·m)', values, default=1),
               W.TwinSlider('model', 'model', ('ideal PD', 'implicit'), kind='select')]
    axes = [W.TwinAxes(title='angle', xlabel='time (s)', ylabel='joint angle q (deg)',
                       xlim=(0, 6), ylim=(-10, 110), legend='lr'),
            W.TwinAxes(title='applied torque', xlabel='time (s)', ylabel='torque (N·m)',
                       xlim=(0, 6), ylim=(-8, 8), legend='lr')]
    return W.static_twin('ch2-effort-limit', sliders, axes, frame,
                         title='Effort limit: kp 400, kv 20, from hanging to horizontal',
                         caption=f'Below tau_g = {TAU_G:.2f} N·m the torque sits at the limit and '
                                 'the link swings about asin(E/tau_g).')
