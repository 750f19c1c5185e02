"""Chapter 2's pendulum on MuJoCo under each actuator model of :mod:`physai.laws.drives`, and MuJoCo's own DC motor
and delay.

The pendulum of the chapter's Experiment (like the one of Isaac Lab's actuator documentation, whose sweeps use the same
1/360 s step, 60 Hz commands and a hold torque near 2.94 N·m): a hinge about the world y axis,
q = 0 hanging down and π/2 horizontal, a 1 kg capsule of length 0.6 m and radius 0.05 m with its centre 0.3 m from
the pivot, so gravity pulls with ``-tau_g*sin(q)``, ``tau_g = 1*9.81*0.3`` N·m. Physics runs at ``timestep`` =
1/360 s with ``implicitfast``; the commands change at 60 Hz (every 6 physics steps) and are held in between, while an
explicit model recomputes its torque every physics step from the current state. A command is the triple
(q*, qd*, tau_ff) (:class:`Command`); a plain ``command(t)`` or angle is a position command with
``qd* = tau_ff = 0``, the only kind ``<position>`` accepts.

:func:`simulate` runs any number of configurations: the implicit ones together on ``mujoco.batch.Batch`` (the
command sequence is known in advance), the explicit ones in a per-step loop over ``mj_step`` (their torque depends
on the state of each step): :func:`run_explicit_fast`, the chapter's worked solution ``_run_explicit`` with less Python
per step and the same numbers to the last bit. :func:`native_dc_motor_run` and :func:`native_delay_run` run MuJoCo 3.17's own
``<dcmotor>`` and actuator delay for comparison. A diverged run (:func:`physai.engine.mj.diverged` on its speeds: the
pendulum may turn freely) is a result, flagged in :class:`Run`, never an exception.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import functools
import math
import typing
from collections.abc import Callable, Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import link, mj, perturb
from physai.laws import checks
from physai.engine.mj import INTEGRATOR_ENUM
from physai.laws.drives import Actuator, DCMotor, DelayedPD, RemotizedPD, delay_commands, remotized_limit


MASS = 1.0  # kg
LENGTH = 0.6  # m, the capsule's axis from the pivot
RADIUS = 0.05  # m
GRAVITY = 9.81  # m/s²
TAU_G = MASS * GRAVITY * LENGTH / 2  # N·m, gravity torque of the horizontal link (2.943)
TIMESTEP = 1.0 / 360.0  # s, physics step of the Experiment
CONTROL_RATE = 60.0  # Hz, how often a new command arrives
HORIZONTAL = math.pi / 2  # rad
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
    """Hz, at least one command per ``mj.MAX_STEPS`` physics steps; a new command every ``decimation`` physics steps,
    held in between."""

    def __post_init__(self):
        checks.nonnegative('armature', self.armature, 'kg·m²')
        checks.nonnegative('damping', self.damping, 'N·m·s/rad')
        checks.nonnegative('frictionloss', self.frictionloss, 'N·m')
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)
        checks.positive('control_rate', self.control_rate, 'Hz')
        slowest = 1.0 / (mj.MAX_STEPS * self.timestep)
        if self.control_rate < slowest:  # one tick in more steps than a run may take: a decimation beyond int64
            raise ValueError(f'control_rate must be at least one command per MAX_STEPS = {mj.MAX_STEPS:,} physics '
                             f'steps, {slowest:.3g} Hz at timestep {self.timestep:g} s, got {self.control_rate!r}')

    @property
    def decimation(self) -> int:
        """Physics steps per control tick, ``max(1, round(1 / (control_rate * timestep)))``."""
        return max(1, round(1.0 / (self.control_rate * self.timestep)))

    @property
    def inertia(self) -> float:
        """I = the link's inertia about the pivot + armature, kg·m²."""
        return LINK_INERTIA + self.armature


ACTUATORS = typing.get_args(Actuator)
"""The actuator configs :func:`simulate` runs: every model of :mod:`physai.laws.drives`."""

LINK_INERTIA = link.capsule_inertia_about_hinge(MASS, LENGTH, RADIUS)  # kg·m², 0.12779


@dataclasses.dataclass(frozen=True, kw_only=True)
class Step:
    """A step command: ``low`` before ``at`` seconds, ``high`` from then on (rad)."""

    at: float = 0.5
    low: float = 0.0
    high: float = HORIZONTAL

    def __post_init__(self):
        checks.finite('at', self.at, 's')
        checks.finite('low', self.low, 'rad')
        checks.finite('high', self.high, 'rad')

    def __call__(self, t):
        return np.where(np.asarray(t) >= self.at - 1e-12, self.high, self.low)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Square:
    """A square wave: ``high`` for the first half of every period, ``low`` for the second (rad)."""

    period: float = 2.0
    low: float = 0.0
    high: float = HORIZONTAL

    def __post_init__(self):
        checks.positive('period', self.period, 's')
        checks.finite('low', self.low, 'rad')
        checks.finite('high', self.high, 'rad')

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
        parts = [checks.real_array(f'{name}(t)', part(t), unit) if callable(part) else part
                 for name, unit, part in (('position', 'rad', self.position), ('velocity', 'rad/s', self.velocity),
                                          ('effort', 'N·m', self.effort))]
        try:
            return np.stack([np.asarray(x, dtype=float) * np.ones(t.shape) for x in parts], axis=-1)
        except ValueError:  # a function that answers an array of another shape
            raise ValueError(f'a command function must return one value per tick time, {t.shape}, got shapes '
                             f'{[np.shape(x) for x in parts]}') from None

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
    """By :func:`physai.engine.mj.diverged` on the speeds: MuJoCo's warning that the run blew up (``mj.warned``: a bad
    position, velocity, acceleration or control, NaN, infinite or above 1e10), a non-finite state or
    |qd| > ``mj.SPEED_BOUND`` (the pendulum may turn freely, so its angle is not bounded)."""
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
        limit = actuator.forcerange if math.isfinite(actuator.forcerange) else None
        mj.set_position_servo(m, actuator.kp, actuator.kv, limit)
    else:
        m.actuator_gainprm[0, 0] = 1.0
        m.actuator_biasprm[0, :3] = 0.0
        m.actuator_forcelimited[0] = False
    return _with_pendulum(m, pendulum)


def _with_pendulum(m: mujoco.MjModel, pendulum: PendulumParams) -> mujoco.MjModel:
    """Write the pendulum's joint and option fields into ``m``, then the constants that follow them."""
    m.dof_damping[0] = pendulum.damping
    m.dof_frictionloss[0] = pendulum.frictionloss
    m.opt.timestep = pendulum.timestep
    m.opt.integrator = INTEGRATOR_ENUM[pendulum.integrator]
    mj.set_armature(m, pendulum.armature)
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


def _scalar_law(actuator: Actuator) -> Callable[[float, float, float, float, float], float]:
    """``actuator.torque(q, v, q_target, v_target, tau_ff)`` for Python floats, without numpy's
    per-call overhead.

    The same arithmetic in the same order as :func:`pd_torque` (tests compare the runner with
    ``torque`` itself). With ``v_target = tau_ff = 0`` it is bit for bit ``kp*(q* - q) - kv*qd``:
    ``kv*(0 - qd)`` is exactly ``-(kv*qd)`` and adding 0 changes nothing.
    """
    kp, kv, e = float(actuator.kp), float(actuator.kv), float(actuator.forcerange)
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
    nstep = len(commands)
    seen = delay_commands(commands, actuator.delay)
    q = np.empty(nstep + 1)
    v = np.empty(nstep + 1)
    tau = np.empty(nstep)
    q[0], v[0] = q0, v0
    law = _scalar_law(actuator)
    seen = seen.tolist()
    with mj.captured_warnings():
        mujoco.mj_forward(m, d)
        for k in range(nstep):
            q_target, v_target, tau_ff = seen[k]
            tau[k] = law(q[k], v[k], q_target, v_target, tau_ff)
            d.ctrl[0] = tau[k]
            mujoco.mj_step(m, d)
            q[k + 1], v[k + 1] = d.qpos[0], d.qvel[0]
            if mj.warned(d) or mj.runaway(v[k + 1]):
                # MuJoCo resets a run that blew up (or zeroes a bad control): keep what came before
                end = k if mj.warned(d) else k + 1
                return q[:end + 1], v[:end + 1], tau[:end], True
    return q, v, tau, False


def interp_limit(x: float, angles: Sequence[float], limits: Sequence[float]) -> float:
    """``np.interp(x, angles, limits)`` for one float, in plain Python: the same arithmetic as numpy's compiled loop
    (held ends, ``slope*(x - angles[j]) + limits[j]`` between points), bit for bit (tested), without the
    microseconds each ``np.interp`` call spends on its arguments. ``angles`` strictly increasing."""
    if x != x:  # NaN in, NaN out
        return x
    if x < angles[0]:
        return limits[0]
    if x > angles[-1]:
        return limits[-1]
    j = bisect.bisect_right(angles, x) - 1  # angles[j] <= x < angles[j + 1], or j the last point
    if j == len(angles) - 1 or angles[j] == x:
        return limits[j]
    slope = (limits[j + 1] - limits[j]) / (angles[j + 1] - angles[j])
    value = slope * (x - angles[j]) + limits[j]
    if value != value:  # numpy tries from the other end, then a flat segment's value
        value = slope * (x - angles[j + 1]) + limits[j + 1]
        if value != value and limits[j] == limits[j + 1]:
            value = limits[j]
    return value


def _fast_law(actuator: Actuator) -> Callable[[float, float, float, float, float], float]:
    """:func:`_scalar_law` with the remotized PD's table lookup in plain Python (:func:`interp_limit`); every
    other model's law is :func:`_scalar_law`'s own."""
    if not isinstance(actuator, RemotizedPD):
        return _scalar_law(actuator)
    kp, kv = float(actuator.kp), float(actuator.kv)
    angles, limits = (list(map(float, column)) for column in zip(*actuator.table))

    def law(q, v, q_target, v_target, tau_ff):
        limit = interp_limit(q, angles, limits)
        return min(max(kp * (q_target - q) + kv * (v_target - v) + tau_ff, -limit), limit)
    return law


def run_explicit_fast(actuator: Actuator, pendulum: PendulumParams, commands: np.ndarray,
                      q0: float, v0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """:func:`_run_explicit` with less Python per physics step, the same numbers to the last bit (tested).

    :func:`_run_explicit` is the chapter's worked solution, written to be read; this is the loop
    :func:`simulate` runs. It does the same arithmetic in the same order: the state is read as Python floats
    (``item``, not a numpy scalar per read), ``qpos``, ``qvel``, ``ctrl`` and MuJoCo's blow-up counters are
    looked up once, the record grows as lists, and the remotized PD's table lookup is :func:`interp_limit`. At a
    0.5 ms step (6000 steps a run) that is about a third of the time.
    """
    m = pendulum_model(pendulum, actuator)
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0] = q0, v0
    seen = delay_commands(commands, actuator.delay).tolist()
    law = _fast_law(actuator)
    qpos, qvel, ctrl = d.qpos, d.qvel, d.ctrl
    bad_qpos, bad_qvel, bad_qacc, bad_ctrl = (d.warning[w] for w in mj.BLOWUP_WARNINGS)  # live views (mj.warned)
    step = mujoco.mj_step
    q, v, tau = [float(q0)], [float(v0)], []
    qk, vk = q[0], v[0]
    diverged = False
    with mj.captured_warnings():
        mujoco.mj_forward(m, d)
        for q_target, v_target, tau_ff in seen:
            torque = law(qk, vk, q_target, v_target, tau_ff)
            tau.append(torque)
            ctrl[0] = torque
            step(m, d)
            if bad_qacc.number or bad_qvel.number or bad_qpos.number or bad_ctrl.number:
                # MuJoCo reset the run or zeroed its control (mj.warned): keep what came before
                tau.pop()
                diverged = True
                break
            qk, vk = qpos.item(0), qvel.item(0)
            q.append(qk)
            v.append(vk)
            if not -mj.SPEED_BOUND <= vk <= mj.SPEED_BOUND:  # mj.runaway: not finite, or too fast
                diverged = True
                break
    return np.array(q), np.array(v), np.array(tau), diverged


def run_implicit(actuators: Sequence[Actuator], pendulums: Sequence[PendulumParams],
                  commands: Sequence[np.ndarray], q0: float, v0: float) -> list:
    """Implicit runs together on ``mujoco.batch.Batch``: the command sequences are known in advance."""
    models = [pendulum_model(p, a) for a, p in zip(actuators, pendulums)]
    batch = mujoco.batch.Batch(models[0], len(models), nthread=1)
    batch.set_models(models)
    batch.reset()
    batch.qpos[:, 0] = q0
    batch.qvel[:, 0] = v0
    nsteps = np.array([len(c) for c in commands])
    out: dict[int, tuple] = {}
    with mj.captured_warnings():
        batch.forward()  # a start MuJoCo finds bad (v0 = 1e308, say) is reset here, with its warning counted
        for nstep in np.unique(nsteps):
            ids = np.nonzero(nsteps == nstep)[0]
            control = np.stack([commands[i] for i in ids])[:, :, None]
            rec = mj.rollout(batch, int(nstep), control=control, record=('qpos', 'qvel', 'actuator_force'), ids=ids)
            for j, i in enumerate(ids):
                out[int(i)] = (rec['qpos'][j, :, 0], rec['qvel'][j, :, 0], rec['actuator_force'][j, :, 0])
    bad = mj.warned(batch)
    results = []
    for i in range(len(models)):
        q = np.concatenate([[q0], out[i][0]])
        v = np.concatenate([[v0], out[i][1]])
        tau = out[i][2].copy()
        diverged = bool(bad[i])
        fast = np.nonzero([mj.runaway(x) for x in v])[0]
        if diverged:
            end = link.valid_length(q)
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
      One :class:`Run` per config, in order; a run that blew up is flagged ``diverged`` (MuJoCo's warnings included:
      a NaN or huge command, gain or start speed), never an exception.

    Raises:
      TypeError: ``actuators`` not a sequence of :mod:`physai.laws.drives` configs.
      ValueError: ``duration``, ``q0`` or ``v0`` not finite, a ``pendulum`` per run that does not match, a
        velocity or effort command for an implicit PD, or a run longer than ``mj.MAX_STEPS`` steps.
    """
    checks.positive('duration', duration, 's')
    checks.finite('q0', q0, 'rad')
    checks.finite('v0', v0, 'rad/s')
    q0 = q0 + perturb.size()  # a last-bit nudge when PHYSAI_PERTURB asks for one (physai.engine.perturb)
    if isinstance(actuators, (str, bytes, *ACTUATORS)) or not isinstance(actuators, (Sequence, np.ndarray)):
        names = ', '.join(a.__name__ for a in ACTUATORS)
        raise TypeError(f'actuators must be a sequence of actuator configs ({names}), got {actuators!r}')
    actuators = list(actuators)
    for i, a in enumerate(actuators):
        if not isinstance(a, ACTUATORS):
            raise TypeError(f'actuators[{i}] must be an actuator config ({", ".join(c.__name__ for c in ACTUATORS)}), '
                            f'got {a!r}')
    pendulums = (list(pendulum) if isinstance(pendulum, (list, tuple))
                 else [pendulum] * len(actuators))
    if len(pendulums) != len(actuators):
        raise ValueError(f'pendulum must be one PendulumParams or one per actuator '
                         f'({len(actuators)}), got {len(pendulums)}')
    for p in pendulums:
        if not isinstance(p, PendulumParams):
            raise TypeError(f'pendulum must be a PendulumParams or a list of them, got {p!r}')
    command = as_command(command)
    implicit = [i for i, a in enumerate(actuators) if not a.explicit]
    if implicit and not command.position_only:
        raise ValueError('command must be a position command (velocity = effort = 0) for an implicit '
                         f'PD (<position>), got velocity={command.velocity!r}, effort={command.effort!r}')
    ratios = [duration / p.timestep for p in pendulums]  # a float: duration 1e308 gives inf, no int to round to
    if ratios and max(ratios) > mj.MAX_STEPS + 0.5:  # the same cap as the link's runs: an error, not a hang
        k = int(np.argmax(ratios))
        raise ValueError(f'duration / timestep must be at most MAX_STEPS = {mj.MAX_STEPS:,} steps per run, '
                         f'got {duration!r} s / {pendulums[k].timestep!r} s = {ratios[k]:,.0f}')
    steps = [max(1, round(r)) for r in ratios]
    commands = [held_commands(command, p, n) for p, n in zip(pendulums, steps)]
    results: list = [None] * len(actuators)
    if implicit:
        for i, res in zip(implicit, run_implicit([actuators[i] for i in implicit],
                                                  [pendulums[i] for i in implicit],
                                                  [commands[i][:, 0] for i in implicit], q0, v0)):
            results[i] = res
    for i, a in enumerate(actuators):
        if a.explicit:
            results[i] = run_explicit_fast(a, pendulums[i], commands[i], q0, v0)
    runs = []
    for a, p, c, (q, v, tau, diverged) in zip(actuators, pendulums, commands, results):
        n = len(q)
        cmd = np.concatenate([c, c[-1:]])[:n]
        runs.append(Run(a, p, p.timestep * np.arange(n), q, v, cmd[:, 0].copy(), tau, diverged, cmd))
    return runs


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
    """The ``<dcmotor>`` element whose torque-speed band equals ``cfg``'s envelope, as MJCF to read (the model is
    built from :func:`native_dc_motor_spec`; a test checks that this element compiles to the same fields).

    ``saturation="E 0 0"`` caps the torque at ±E (``actuator_forcerange``), ``ctrlrange="-U U"`` clamps
    the voltage, which bounds the torque to ``S*(±1 - qd/V)``.
    """
    k, u = native_dc_motor_constants(cfg.saturation_effort, cfg.velocity_limit, resistance=resistance)
    return (f'<dcmotor name="actuator" joint="hinge" motorconst="{k!r}" resistance="{resistance!r}" '
            f'saturation="{cfg.forcerange!r} 0 0" ctrlrange="{-u!r} {u!r}"/>')


def pendulum_spec() -> mujoco.MjSpec:
    """The pendulum as a ``mujoco.MjSpec`` to edit before compiling; its one actuator is named ``actuator``."""
    return mujoco.MjSpec.from_string(PENDULUM_XML)


def native_dc_motor_spec(cfg: DCMotor, *, resistance: float = 1.0) -> mujoco.MjSpec:
    """The pendulum with the ``<dcmotor>`` of :func:`native_dc_motor_xml`, built with ``MjSpec``."""
    k, u = native_dc_motor_constants(cfg.saturation_effort, cfg.velocity_limit, resistance=resistance)
    spec = pendulum_spec()
    motor = spec.actuator('actuator')
    motor.set_to_dcmotor(motorconst=[k, k], resistance=resistance, saturation=[cfg.forcerange, 0.0, 0.0])
    motor.ctrlrange = [-u, u]
    motor.ctrllimited = 1
    return spec


def native_delay_spec(cfg: DelayedPD, timestep: float) -> mujoco.MjSpec:
    """The pendulum on ``<position kp kv delay nsample>``: ``cfg.delay`` physics steps of ``timestep`` s,
    ``nsample = steps + 1`` samples of history, zero-order hold."""
    spec = pendulum_spec()
    servo = spec.actuator('actuator')
    servo.set_to_position(kp=cfg.kp, kv=cfg.kv)
    if cfg.delay:
        servo.nsample = cfg.delay + 1
        servo.delay = cfg.delay * timestep
    return spec


def native_model(spec: mujoco.MjSpec, pendulum: PendulumParams) -> mujoco.MjModel:
    """Compile ``spec`` (a :func:`pendulum_spec` with its actuator edited) with ``pendulum``'s joint and options."""
    return _with_pendulum(spec.compile(), pendulum)


def run_with_ctrl(m: mujoco.MjModel, d: mujoco.MjData, nstep: int, ctrl: Callable) -> np.ndarray:
    """Step ``nstep`` times from ``d`` (nudged by :mod:`physai.engine.perturb`) with ``d.ctrl[0] = ctrl(k, q, qd)``
    before step k; MuJoCo's warnings are captured. Returns q, (nstep + 1,) rad."""
    perturb.nudge(d.qpos)
    q = np.empty(nstep + 1)
    q[0] = d.qpos[0]
    with mj.captured_warnings():
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
    m = native_model(native_dc_motor_spec(cfg, resistance=resistance), pendulum)
    d = mujoco.MjData(m)
    nstep = max(1, round(duration / pendulum.timestep))
    cmd = held_commands(command, pendulum, nstep)[:, 0]

    def voltage(i, q, v):
        tau = cfg.kp * (cmd[i] - q) - cfg.kv * v
        return resistance / k * tau + (k * v if compensate else 0.0)

    return run_with_ctrl(m, d, nstep, voltage)


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
    m = native_model(native_delay_spec(cfg, pendulum.timestep), pendulum)
    d = mujoco.MjData(m)
    nstep = max(1, round(duration / pendulum.timestep))
    cmd = held_commands(command, pendulum, nstep)[:, 0]
    if steps and hold_first:
        mujoco.mj_initCtrlHistory(m, d, 0, None, np.full((steps + 1, 1), cmd[0]))
    return run_with_ctrl(m, d, nstep, lambda i, q, v: cmd[i])
