"""The Experiment's link: one capsule on a hinge, driven by a MuJoCo ``<position>`` servo.

The link is a 20 cm, 0.3 kg capsule of radius 1 cm on a hinge at the origin with axis ``0 -1 0``; it is
horizontal at q = 0 and positive q lifts it, so gravity pulls it down with torque ``tau_g*cos(q)``,
``tau_g = 0.3*9.81*0.1`` N·m. A step response starts at rest at ``q0`` with the command ``u = 0``.

Every run goes through :func:`step_responses`, which simulates any number of parameter sets at once on
``mujoco.batch.Batch`` (per-simulation model fields, so gains, integrators and timesteps may differ) and reads
MuJoCo's bad-acceleration warning, so a diverged run is a result, never an exception.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import threading
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import perturb
from physai.laws import checks, motion
from physai.engine import mj
from physai.engine.mj import INTEGRATOR_ENUM, MAX_STEPS, MAX_TOTAL_STEPS, diverged
from physai.laws.sim import kv_from_dampratio


LINK_MASS = 0.3  # kg
LINK_LENGTH = 0.2  # m, the capsule's axis from the hinge to its far end
LINK_RADIUS = 0.01  # m
GRAVITY = 9.81  # m/s²
TAU_G = LINK_MASS * GRAVITY * LINK_LENGTH / 2  # N·m, gravity torque of the horizontal link
SETTLE_WINDOW = 0.5  # s, the tail over which sag and peak-to-peak are measured
SETTLED_P2P_DEG = 0.05  # degrees: a stable run still swinging more than this over the window never settled
STILL_RAD = 1e-9  # rad: a tail whose peak-to-peak is below this holds still, however little the run moved
CREEP_SHARE = 0.01  # a tail still moving by more than this share of the run's whole travel has not settled
RISE_START = 0.1  # a run that never got this share of the way from q0 to the command has no rise time




LINK_XML = f"""
<mujoco model="servo-link">
  <option timestep="0.005" integrator="implicitfast" gravity="0 0 -{GRAVITY}"/>
  <worldbody>
    <body name="link">
      <joint name="hinge" type="hinge" axis="0 -1 0" armature="0.028"/>
      <geom name="rod" type="capsule" fromto="0 0 0 {LINK_LENGTH} 0 0" size="{LINK_RADIUS}"
            mass="{LINK_MASS}"/>
    </body>
  </worldbody>
  <actuator>
    <position name="servo" joint="hinge" kp="1" kv="0"/>
  </actuator>
</mujoco>
"""


def link_spec(*, armature: float = 0.028, timestep: float = 0.005, integrator: str = 'implicitfast'
              ) -> mujoco.MjSpec:
    """The link as a ``mujoco.MjSpec`` to edit before compiling: its joint ``hinge``, its actuator ``servo``
    (``<position kp="1" kv="0">``; make it another with ``spec.actuator('servo').set_to_motor()`` or
    ``set_to_position(kp=..., dampratio=...)``), and the given armature (kg·m²), timestep (s) and integrator."""
    checks.nonnegative('armature', armature, 'kg·m²')
    checks.timestep(timestep)
    checks.integrator(integrator)
    spec = mujoco.MjSpec.from_string(LINK_XML)
    spec.joint('hinge').armature = armature
    spec.option.timestep = timestep
    spec.option.integrator = INTEGRATOR_ENUM[integrator]
    return spec


def capsule_inertia_about_hinge(mass: float = LINK_MASS, length: float = LINK_LENGTH,
                                radius: float = LINK_RADIUS) -> float:
    """Moment of inertia of a uniform capsule about a hinge through one end of its axis, kg·m².

    The capsule is a cylinder of length L and two hemispherical caps of radius r, all of one density.
    About the centre, perpendicular to the axis (caps by the parallel-axis theorem from their flat faces):
    ``I_c = m_cyl*(3r² + L²)/12 + m_caps*(2r²/5 + L²/4 + 3Lr/8)``; about the hinge at the cylinder's end,
    ``I = I_c + m*(L/2)²``.
    """
    v_cyl = math.pi * radius**2 * length
    v_caps = 4.0 / 3.0 * math.pi * radius**3
    m_cyl = mass * v_cyl / (v_cyl + v_caps)
    m_caps = mass - m_cyl
    i_centre = (m_cyl * (3 * radius**2 + length**2) / 12
                + m_caps * (2 * radius**2 / 5 + length**2 / 4 + 3 * length * radius / 8))
    return i_centre + mass * (length / 2) ** 2


LINK_INERTIA = capsule_inertia_about_hinge()  # kg·m², without armature


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServoParams:
    """One configuration of the link and its ``<position>`` servo (MuJoCo's names)."""

    kp: float
    """Stiffness, N·m/rad; ``<position kp>``, ``actuator_gainprm[0]`` and ``-actuator_biasprm[1]``."""
    kv: float | None = None
    """Damping gain, N·m·s/rad; ``<position kv>``, ``-actuator_biasprm[2]``. None: from ``dampratio``."""
    dampratio: float = 1.0
    """Damping ratio used when ``kv`` is None; ``<position dampratio>``, resolved with the current armature."""
    armature: float = 0.028
    """Reflected rotor inertia added to the joint, kg·m²; ``<joint armature>``, ``dof_armature``."""
    timestep: float = 0.005
    """Physics step h, s, in (0, 0.1]; ``<option timestep>``."""
    integrator: str = 'implicitfast'
    """One of ``INTEGRATORS``; ``<option integrator>``."""
    damping: float = 0.0
    """Joint viscous damping, N·m·s/rad; ``<joint damping>``, ``dof_damping``."""
    frictionloss: float = 0.0
    """Joint dry friction, N·m; ``<joint frictionloss>``, ``dof_frictionloss``."""
    forcerange: float | tuple[float, float] | None = None
    """Actuator force clamp, N·m; ``<position forcerange>``: a number F for (-F, F), or (low, high). None:
    unclamped. Stored as the (low, high) pair."""

    def __post_init__(self):
        checks.positive('kp', self.kp, 'N·m/rad')
        if self.kv is not None:
            checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.nonnegative('dampratio', self.dampratio)
        checks.nonnegative('armature', self.armature, 'kg·m²')
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)
        checks.nonnegative('damping', self.damping, 'N·m·s/rad')
        checks.nonnegative('frictionloss', self.frictionloss, 'N·m')
        if checks.is_real(self.forcerange):
            limit = checks.positive('forcerange', self.forcerange, 'N·m')
            object.__setattr__(self, 'forcerange', (-limit, limit))
        elif self.forcerange is not None:
            if (not isinstance(self.forcerange, Sequence) or isinstance(self.forcerange, str)
                    or len(self.forcerange) != 2
                    or not all(checks.is_real(f) and math.isfinite(f) for f in self.forcerange)):
                raise ValueError(f'forcerange must be two finite numbers (low, high) N·m, '
                                 f'got {self.forcerange!r}')
            low, high = self.forcerange
            if low > high:
                raise ValueError(
                    f'forcerange must be (low, high) N·m with low <= high, got ({low}, {high})')

    @property
    def inertia(self) -> float:
        """I = link inertia about the hinge + armature, kg·m²."""
        return LINK_INERTIA + self.armature

    @property
    def kv_effective(self) -> float:
        """kv as given, or ``2*dampratio*sqrt(kp*I)`` with the current armature."""
        if self.kv is not None:
            return float(self.kv)
        return float(kv_from_dampratio(self.kp, self.dampratio, self.inertia))

    @property
    def h_omega(self) -> float:
        """h·ω with ω = sqrt(kp / I): the explicit limit is about 2."""
        return self.timestep * math.sqrt(self.kp / self.inertia)


@functools.cache
def _base_model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(LINK_XML)


def _scratch_data() -> mujoco.MjData:
    """This thread's scratch data for ``mj_setConst`` (a panel widget's worker and its first reply build models at
    the same time)."""
    return _thread_scratch_data(threading.get_ident())


@functools.lru_cache(maxsize=16)
def _thread_scratch_data(thread: int) -> mujoco.MjData:
    return mujoco.MjData(_base_model())


def link_model(params: ServoParams) -> mujoco.MjModel:
    """A compiled link model with ``params`` written into its fields (no recompilation).

    kv is resolved here from ``dampratio`` and the current armature, since MuJoCo resolves
    ``dampratio`` only when a model compiles.
    """
    m = copy.copy(_base_model())
    kv = params.kv_effective
    mj.set_position_servo(m, params.kp, kv, params.forcerange)
    m.dof_damping[0] = params.damping
    m.dof_frictionloss[0] = params.frictionloss
    m.opt.timestep = params.timestep
    m.opt.integrator = INTEGRATOR_ENUM[params.integrator]
    mj.set_armature(m, params.armature, data=_scratch_data())
    return m


@dataclasses.dataclass(frozen=True)
class StepResponse:
    """A step response of the link and the figures the book reads off it."""

    params: ServoParams
    t: np.ndarray
    """(n,) time, s; starts at 0. A diverged run ends where MuJoCo flagged it."""
    q: np.ndarray
    """(n,) joint angle, rad."""
    sag_deg: float
    """Mean error u - q over the last 0.5 s, degrees; NaN unless the run settled (see :attr:`settled`)."""
    rise_ms: float
    """10 % to 90 % rise time towards the settled value, ms; NaN unless the run settled and got at least
    ``RISE_START`` of the way from q0 to the command."""
    p2p_deg: float
    """Peak-to-peak of q over the last 0.5 s, degrees (NaN if diverged)."""
    diverged: bool
    """Non-finite state, MuJoCo's bad-acceleration warning, or |q| beyond ``DIVERGED_BOUND``."""
    rise_window: tuple[float, float] = (math.nan, math.nan)
    """(t10, t90), s: when the run crossed 10 % and 90 % of the way from q0 to its settled value; NaN where
    :attr:`rise_ms` is (the figures draw the rise from here instead of measuring it again)."""
    swinging: bool = False
    """Not settled, and still turning back and forth over the last 0.5 s (:func:`physai.laws.motion.reversals`: at
    least one turn). A run that has not settled without turning is creeping toward rest (an overdamped or soft servo):
    slow, not unstable."""

    @property
    def settled(self) -> bool:
        """Stable and at rest over the last 0.5 s; the sag is measured only then (NaN otherwise).

        At rest means a peak-to-peak of at most ``SETTLED_P2P_DEG`` that is also small next to how far the run
        travelled (at most ``CREEP_SHARE`` of it) or below ``STILL_RAD``. A run right on a stability bound
        swings for ever; a heavily overdamped one still creeps at the end: neither has settled.
        """
        return not self.diverged and math.isfinite(self.sag_deg)


def crossing_time(t: np.ndarray, x: np.ndarray, level: float) -> float:
    """First time ``x`` reaches ``level`` from below, interpolating linearly between samples; NaN if never.

    Args:
      t: (n,) times, s.
      x: (n,) values.
      level: the level to reach.
    """
    above = np.nonzero(np.asarray(x) >= level)[0]
    if above.size == 0:
        return math.nan
    k = above[0]
    if k == 0:
        return float(t[0])
    frac = (level - x[k - 1]) / (x[k] - x[k - 1])
    return float(t[k - 1] + frac * (t[k] - t[k - 1]))


def rise_window(t: np.ndarray, q: np.ndarray, q_final: float) -> tuple[float, float]:
    """(t10, t90), s: when q first gets 10 % and 90 % of the way from q[0] to q_final (linear interpolation)."""
    span = q_final - q[0]
    if span == 0 or not math.isfinite(span):
        return math.nan, math.nan
    progress = (q - q[0]) / span
    return crossing_time(t, progress, 0.1), crossing_time(t, progress, 0.9)


def rise_time(t: np.ndarray, q: np.ndarray, q_final: float) -> float:
    """Time from 10 % to 90 % of the way from q[0] to q_final, s (linear interpolation)."""
    t10, t90 = rise_window(t, q, q_final)
    return t90 - t10


def summarize(params: ServoParams, t: np.ndarray, q: np.ndarray, warned: bool,
              u: float = 0.0) -> StepResponse:
    """Sag, rise time, peak-to-peak and divergence of one trajectory, each only where the run measured it."""
    if diverged(q, warned=warned) or t[-1] <= SETTLE_WINDOW:  # a run shorter than the window has no settled figures
        return StepResponse(params, t, q, math.nan, math.nan, math.nan, diverged(q, warned=warned))
    tail = q[t >= t[-1] - SETTLE_WINDOW + 1e-12]
    q_final = float(np.mean(tail))
    p2p = float(np.ptp(tail))
    travel = float(np.max(np.abs(q - q[0])))
    at_rest = math.degrees(p2p) <= SETTLED_P2P_DEG and (p2p <= STILL_RAD or p2p <= CREEP_SHARE * travel)
    if not at_rest:
        return StepResponse(params, t, q, math.nan, math.nan, math.degrees(p2p), False,
                            swinging=motion.reversals(tail) >= 1)
    way = (q - q[0]) / (u - q[0]) if u != q[0] else np.zeros_like(q)
    window = rise_window(t, q, q_final) if np.max(way) >= RISE_START else (math.nan, math.nan)
    return StepResponse(params, t, q, sag_deg=math.degrees(u - q_final), rise_ms=1e3 * (window[1] - window[0]),
                        p2p_deg=math.degrees(p2p), diverged=False, rise_window=window)


def valid_length(q: np.ndarray) -> int:
    """Length of a diverged batch record before MuJoCo's reset.

    A rollout stops stepping a simulation once its warnings rise and repeats the state MuJoCo restarted
    it from, so the record ends in a constant run; everything before that run is the real trajectory.
    """
    same = q == q[-1]
    k = len(q)
    while k > 0 and same[k - 1]:
        k -= 1
    return max(k, 1)


def _unused_stages(params: ServoParams) -> int:
    """``opt.disableflags`` for stages of MuJoCo's step the link never needs: its one geom has nothing to touch
    (contacts), and without friction loss it has no constraint at all. Skipping them changes no number (a test
    compares every sample with ``mj_step`` on :func:`link_model`) and takes about a fifth off each step."""
    flags = _base_model().opt.disableflags | mujoco.mjtDisableBit.mjDSBL_CONTACT
    if params.frictionloss == 0:
        flags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    return int(flags)


def _params(params: Sequence[ServoParams]) -> list[ServoParams]:
    params = list(params)
    for k, p in enumerate(params):
        if not isinstance(p, ServoParams):
            raise TypeError(f'params[{k}] must be a ServoParams, got {type(p).__name__} {p!r}')
    return params


def _starts(q0: float | Sequence[float], n: int) -> np.ndarray:
    """The start angles of ``n`` runs, (n,) rad: one angle for all, or one per run, each in [-π, π]."""
    starts = np.asarray(q0, dtype=float) if np.ndim(q0) else None
    if starts is None:
        if not (isinstance(q0, (int, float, np.floating)) and abs(q0) <= math.pi):
            raise ValueError(f'q0 must be an angle in [-pi, pi] rad, got {q0!r}')
        return np.full(n, float(q0))
    if starts.shape != (n,) or not np.all(np.abs(starts) <= math.pi):
        raise ValueError(f'q0 must be one angle or one per run ({n}) in [-pi, pi] rad, got {q0!r}')
    return starts


def _batch(params: Sequence[ServoParams], starts: np.ndarray, nthread: int) -> tuple[mujoco.batch.Batch, np.ndarray]:
    """The link's runs on one ``mujoco.batch.Batch``, each at rest at its start (nudged, :mod:`physai.engine.perturb`),
    forward-evaluated and ready to step; and the starts as the simulations got them, (nsim,) rad."""
    batch = mujoco.batch.Batch(_base_model(), len(params), nthread=nthread)
    # Per-simulation model fields instead of one model copy each: the parameters are plain fields.
    batch.expand('actuator_gainprm')[:, 0, 0] = [p.kp for p in params]
    biasprm = batch.expand('actuator_biasprm')
    biasprm[:, 0, 1] = [-p.kp for p in params]
    biasprm[:, 0, 2] = [-p.kv_effective for p in params]
    batch.expand('dof_armature')[:, 0] = [p.armature for p in params]
    batch.expand('dof_damping')[:, 0] = [p.damping for p in params]
    batch.expand('dof_frictionloss')[:, 0] = [p.frictionloss for p in params]
    batch.expand('actuator_forcelimited')[:, 0] = [p.forcerange is not None for p in params]
    batch.expand('actuator_forcerange')[:, 0] = [p.forcerange or (0.0, 0.0) for p in params]
    batch.expand('opt.timestep')[:] = [p.timestep for p in params]
    batch.expand('opt.integrator')[:] = [INTEGRATOR_ENUM[p.integrator] for p in params]
    batch.expand('opt.disableflags')[:] = [_unused_stages(p) for p in params]
    batch.set_const()  # armature changes dof_invweight0, which the friction-loss constraint reads
    batch.reset()
    batch.qpos[:, 0] = starts
    perturb.nudge(batch.qpos)
    starts = batch.qpos[:, 0].copy()  # the record starts where the simulation did
    batch.forward()
    return batch, starts


def step_responses(params: Sequence[ServoParams], *, q0: float | Sequence[float] = -0.5,
                   duration: float = 3.0, nthread: int = 0) -> list[StepResponse]:
    """Step responses for many parameter sets, simulated together on ``mujoco.batch.Batch``.

    Args:
      params: the configurations, (nsim,).
      q0: start angle, rad, at rest, one for every run or one per run, (nsim,); the command is 0.
      duration: simulated time, s; sag, rise and peak-to-peak need more than the 0.5 s window (NaN otherwise).
      nthread: Batch threads (0: all CPUs).

    Returns:
      One :class:`StepResponse` per configuration, in order.
    """
    if not (isinstance(duration, (int, float, np.floating)) and 0 < duration <= 600):
        raise ValueError(f'duration must be in (0, 600] s, got {duration!r}')
    params = _params(params)
    steps = [max(1, round(duration / p.timestep)) for p in params]
    if steps and max(steps) > MAX_STEPS:
        k = int(np.argmax(steps))
        raise ValueError(f'duration / timestep must be at most MAX_STEPS = {MAX_STEPS:,} steps per run, got '
                         f'{duration!r} s / {params[k].timestep!r} s = {steps[k]:,}')
    if sum(steps) > MAX_TOTAL_STEPS:
        raise ValueError(f'the batch must take at most MAX_TOTAL_STEPS = {MAX_TOTAL_STEPS:,} steps in all, got '
                         f'{sum(steps):,} ({len(params)} runs)')
    starts = _starts(q0, len(params))
    if not params:
        return []
    batch, starts = _batch(params, starts, nthread)
    nsteps = np.array(steps)
    records: dict[int, np.ndarray] = {}
    with mj.captured_warnings():
        for nstep in np.unique(nsteps):
            ids = np.nonzero(nsteps == nstep)[0]
            out = mj.rollout(batch, int(nstep), record=('qpos',), ids=ids)
            for i, row in zip(ids, out['qpos'][:, :, 0]):
                records[int(i)] = row
    bad = mj.warned(batch)
    results = []
    for i, p in enumerate(params):
        q = np.concatenate([[starts[i]], records[i]])
        if bad[i]:
            q = q[:valid_length(q)]
        t = p.timestep * np.arange(len(q))
        results.append(summarize(p, t, q, bool(bad[i])))
    return results


@dataclasses.dataclass(frozen=True)
class Survival:
    """Which runs of an ensemble still move at each of several run lengths (:func:`moving_at`)."""

    lengths: tuple[float, ...]
    """The run lengths, s, increasing, (nlength,)."""
    moving: np.ndarray
    """(nsim, nlength) bool: the run's peak-to-peak over the window ending at that length is above the threshold."""
    p2p_rad: np.ndarray
    """(nsim, nlength) that peak-to-peak, rad; NaN once the run was found still (it is no longer stepped)."""
    diverged: np.ndarray
    """(nsim,) bool: MuJoCo warned that the run blew up (it counts as moving from then on)."""

    def count(self) -> np.ndarray:
        """(nlength,) how many runs still move at each length."""
        return self.moving.sum(axis=0)


def moving_at(params: Sequence[ServoParams], lengths: Sequence[float], *, p2p_rad: float,
              q0: float | Sequence[float] = -0.5, window: float = SETTLE_WINDOW, nthread: int = 0) -> Survival:
    """Whether each step response still moves at each run length: its peak-to-peak over the ``window`` that ends
    there is above ``p2p_rad``.

    The runs are the ones :func:`step_responses` would make (the same batch, the same arithmetic: a run of length T
    here is sample for sample the first T s of a longer one), stepped from one length to the next. A run found still
    at a length is taken to stay still and is not stepped further: true of a joint that its friction loss holds at
    rest under a constant command, as a clamped servo's chatter ends (a test compares every length with whole runs).
    So an ensemble whose runs stop one by one costs only what its moving runs take.

    Args:
      params: the configurations, (nsim,).
      lengths: run lengths, s, increasing, each at least ``window`` longer than the one before (the first at least
        ``window``).
      p2p_rad: rad, the peak-to-peak above which a run still moves.
      q0: start angle, rad, one for all runs or one per run, (nsim,); the command is 0.
      window: s, the window over which the peak-to-peak is read.
      nthread: Batch threads (0: all CPUs).

    Returns:
      A :class:`Survival`.
    """
    params = _params(params)
    lengths = tuple(float(x) for x in lengths)
    checks.positive('window', window, 's')
    checks.positive('p2p_rad', p2p_rad, 'rad')
    if not lengths or lengths[0] < window or any(b - a < window for a, b in zip(lengths, lengths[1:])):
        raise ValueError(f'lengths must increase, the first at least the window ({window} s) and each at least the '
                         f'window longer than the one before, got {lengths!r}')
    if lengths[-1] > 600:
        raise ValueError(f'lengths must be at most 600 s, got {lengths[-1]!r}')
    if len({p.timestep for p in params}) > 1:
        raise ValueError('params must share one timestep (the runs are stepped together from length to length), got '
                         f'{sorted({p.timestep for p in params})}')
    n = len(params)
    moving = np.zeros((n, len(lengths)), dtype=bool)
    p2p = np.full((n, len(lengths)), np.nan)
    if not params:
        return Survival(lengths, moving, p2p, np.zeros(0, dtype=bool))
    h = params[0].timestep
    total = sum(round(lengths[-1] / h) for _ in params)
    if round(lengths[-1] / h) > MAX_STEPS or total > MAX_TOTAL_STEPS:
        raise ValueError(f'the runs must take at most MAX_STEPS = {MAX_STEPS:,} steps each and MAX_TOTAL_STEPS = '
                         f'{MAX_TOTAL_STEPS:,} in all, got {round(lengths[-1] / h):,} each, {total:,} in all')
    batch, _ = _batch(params, _starts(q0, n), nthread)
    active = np.arange(n)
    done = 0  # steps taken so far
    last = round(window / h)  # samples in a window
    with mj.captured_warnings():
        for k, length in enumerate(lengths):
            nstep = round(length / h) - done
            out = batch.rollout(nstep, record=('qpos',), ids=active)
            done += nstep
            p2p[active, k] = np.ptp(out['qpos'][:, -last:, 0], axis=1)
            bad = mj.warned(batch)[active]
            moving[active, k] = bad | ~(p2p[active, k] <= p2p_rad)
            active = active[moving[active, k] & ~bad]
            if not active.size:
                break
    diverged = np.asarray(mj.warned(batch), dtype=bool)
    moving[diverged] = moving[diverged] | (np.cumsum(moving[diverged], axis=1) > 0)
    return Survival(lengths, moving, p2p, diverged)


def step_response(kp: float, *, kv: float | None = None, dampratio: float = 1.0,
                  armature: float = 0.028, timestep: float = 0.005,
                  integrator: str = 'implicitfast', damping: float = 0.0,
                  frictionloss: float = 0.0, forcerange: tuple[float, float] | None = None,
                  q0: float = -0.5, duration: float = 3.0) -> StepResponse:
    """Step response of the link from rest at ``q0`` to the command ``u = 0``.

    Returns the trajectory (``t``, ``q``) and ``sag_deg``, ``rise_ms``, ``p2p_deg``, ``diverged``
    (see :class:`StepResponse`). Bad parameters raise ValueError naming the parameter.
    """
    params = ServoParams(kp=kp, kv=kv, dampratio=dampratio, armature=armature,
                         timestep=timestep, integrator=integrator, damping=damping,
                         frictionloss=frictionloss, forcerange=forcerange)
    if not (isinstance(duration, (int, float, np.floating)) and SETTLE_WINDOW < duration <= 600):
        raise ValueError(f'duration must be in ({SETTLE_WINDOW}, 600] s (longer than the settle window), '
                         f'got {duration!r}')
    return step_responses([params], q0=q0, duration=duration, nthread=1)[0]
