"""Chapter 3's arm holding a pose: the PD in the control loop or in the physics step, batched on MuJoCo.

The PD runs in one of two places (``BACKENDS``, :class:`physai.engine.pd_controller.PDController`): in the
controller, its torque held between ticks (``'in-loop'``), or in MuJoCo's step as the joint's position servo
(``'in-step'``).

One what-if sits beside the two backends: ``HoldParams(implicit_kv=True)`` runs the in-loop PD with its kv moved
into the joints' ``dof_damping``, so that MuJoCo integrates it implicitly at every step while the spring stays held
between ticks. It tells which of the in-loop PD's two differences from the servo, the hold or the explicit kv, makes
it chatter.

The rest of the module runs the chapter's experiment on Menagerie's SO-101: hold a standby pose after a move,
physics at 1 kHz, a controller at 50 ... 1000 Hz, either backend (:func:`hold_responses`, batched on
``mujoco.batch.Batch``), and ensembles of runs from starts a nanoradian apart (:func:`hold_ensembles`), since below
the critical rate the in-loop chatter is a chaotic limit cycle. Symbols as in :mod:`physai.laws.loop`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import threading
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import link, mj, perturb, so101
from physai.laws import checks, motion, robust
from physai.engine.mj import INTEGRATOR_ENUM
from physai.laws.drives import pd_torque
from physai.engine.pd_controller import PDController
from physai.laws.loop import BACKENDS, FEEDFORWARD, tick_mask


# ---------------------------------------------------------------------------------------------------------
# The experiment: the SO-101 holding a standby pose after a move

# Menagerie's servo (class sts3215 in so101.xml), the gains the chapter keeps
SO101_KP = so101.MENAGERIE_KP  # N·m/rad

SO101_KV = so101.MENAGERIE_KV  # N·m·s/rad
SO101_ARMATURE = so101.MENAGERIE_ARMATURE  # kg·m²
SO101_FORCERANGE = so101.MENAGERIE_FORCERANGE  # N·m, the actuators' forcerange (±)
PHYSICS_TIMESTEP = 0.001  # s: physics at 1 kHz

STANDBY = (0.0, -1.0, 1.0, 0.5, 0.0, 0.0)
"""Standby pose, rad per joint (shoulder_pan ... gripper): upper arm tilted back, forearm level, wrist tilted down."""

MOVE_TIME = 0.5  # s, the move from the home pose (qpos0) to STANDBY
DURATION = 3.0  # s simulated
SETTLE_WINDOW = 1.0  # s, the last second, where the hold is judged
QUIET_P2P = 1e-4  # rad: below this peak-to-peak a joint counts as still and has no chatter frequency


@dataclasses.dataclass(frozen=True, kw_only=True)
class HoldParams:
    """One run of the hold experiment: the SO-101, its PD gains, where the PD runs and how often."""

    rate_hz: float = 100.0
    """Controller rate, Hz, > 0 (ticks at most once per physics step)."""
    backend: str = 'in-step'
    """One of ``BACKENDS``."""
    kp: float = SO101_KP
    """Stiffness command for every joint, N·m/rad, > 0."""
    kv: float = SO101_KV
    """Damping command for every joint, N·m·s/rad, >= 0 (the MIT command's damping, not ``dof_damping``)."""
    armature: float = SO101_ARMATURE
    """``dof_armature`` of every joint, kg·m², >= 0 (Menagerie: 0.028)."""
    timestep: float = PHYSICS_TIMESTEP
    """Physics step, s, in (0, 0.1]; ``<option timestep>``."""
    integrator: str = 'implicitfast'
    """One of ``INTEGRATORS``; ``<option integrator>``."""
    forcerange: float = SO101_FORCERANGE
    """Clamp on |tau|, N·m, > 0: the in-loop clamp and the in-step actuator's forcerange."""
    feedforward: str = 'in-clamp'
    """In-step only: the velocity target's ``kv*velocity`` inside the clamp or as ``qfrc_applied``."""
    start_offset: float = 0.0
    """rad, |offset| <= 1e-6: added to every joint's initial ``qpos`` (the home pose): an ensemble member's start."""
    implicit_kv: bool = False
    """In-loop only, a what-if: kv leaves the held torque and acts at every physics step as joint damping
    (``dof_damping + kv``, which MuJoCo integrates implicitly), while the spring ``kp*(target - q)`` stays held
    between ticks. The in-loop PD with its implicit damping given back and its hold kept. (kv then damps toward rest,
    not toward the velocity target: the same once the target holds still.)"""

    def __post_init__(self):
        checks.positive('rate_hz', self.rate_hz, 'Hz')
        checks.one_of('backend', self.backend, BACKENDS)
        checks.positive('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.nonnegative('armature', self.armature, 'kg·m²')
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)
        checks.positive('forcerange', self.forcerange, 'N·m')
        checks.one_of('feedforward', self.feedforward, FEEDFORWARD)
        if not isinstance(self.implicit_kv, bool):
            raise ValueError(f'implicit_kv must be True or False, got {self.implicit_kv!r}')
        if self.implicit_kv and self.backend != 'in-loop':
            raise ValueError(f"implicit_kv applies to backend 'in-loop' only (in-step kv is implicit already), "
                             f"got backend {self.backend!r}")
        if not (checks.is_real(self.start_offset) and math.isfinite(self.start_offset)
                and abs(self.start_offset) <= perturb.MAX_SIZE):
            raise ValueError(f'start_offset must be a number in [-{perturb.MAX_SIZE:g}, {perturb.MAX_SIZE:g}] rad, '
                             f'got {self.start_offset!r}')


@dataclasses.dataclass(frozen=True)
class HoldResponse:
    """One hold run and what the chapter reads off it."""

    params: HoldParams
    t: np.ndarray
    """(n,) time, s, one sample per physics step (a diverged run ends where MuJoCo flagged it)."""
    q: np.ndarray
    """(n, 6) joint angles, rad."""
    target: np.ndarray
    """(n, 6) position command in force at each sample, rad."""
    p2p_rad: np.ndarray
    """(6,) peak-to-peak of each joint over the last ``SETTLE_WINDOW`` s, rad (NaN if diverged)."""
    worst: int
    """Index of the joint with the largest peak-to-peak (all still: the largest tracking error)."""
    chatter_hz: float | None
    """Dominant frequency of the worst joint's motion in the window, Hz (:func:`chatter_frequency`); None
    when it does not chatter or its chatter is broadband (no single tone)."""
    diverged: bool
    """MuJoCo's bad-acceleration warning or a non-finite state."""
    turns: np.ndarray
    """(6,) how often each joint turns back in the window by more than ``TURN_SIZE`` (:func:`physai.laws.motion.
    reversals`); zeros if diverged."""
    offset_rad: np.ndarray
    """(6,) each joint's mean angle over the window minus its command there, rad (NaN if diverged)."""

    @property
    def worst_p2p_rad(self) -> float:
        """Peak-to-peak of the worst joint, rad."""
        return float(self.p2p_rad[self.worst])

    @property
    def chatters(self) -> bool:
        """Whether a joint chatters in the window: it moves at least ``QUIET_P2P`` peak to peak and turns back and forth
        at least ``CHATTER_TURNS`` times (:func:`chattering_joints`). A joint that moves as much one way, a soft servo
        drifting toward its pose, does not chatter: that run :attr:`moves`."""
        return not self.diverged and bool(chattering_joints(self.p2p_rad, self.turns).any())

    @property
    def moves(self) -> bool:
        """Whether the run still moves at the end without chattering (a joint's peak-to-peak at least ``QUIET_P2P``):
        it drifts or creeps and has not settled within the run."""
        return not self.diverged and not self.chatters and self.worst_p2p_rad >= QUIET_P2P

    @property
    def state(self) -> str:
        """``'diverged'``, ``'chatters'``, ``'moves'`` (no chatter, not yet still) or ``'still'``: the run's verdict."""
        if self.diverged:
            return 'diverged'
        return 'chatters' if self.chatters else 'moves' if self.moves else 'still'

    @property
    def offset_deg(self) -> float:
        """How far the joint furthest from its command sits, its mean angle over the window, degrees (NaN if
        diverged): a soft servo that cannot hold the arm up is still, or drifting, far from its pose."""
        return math.degrees(float(np.max(np.abs(self.offset_rad))))


@functools.cache
def so101_base() -> mujoco.MjModel:
    """Menagerie's SO-101 without its visual meshes (:func:`physai.engine.so101.load_mesh_free`), loaded once;
    shared, never edit it (copy it first).

    The same bodies, inertias, joints, actuators and collision geoms as the shipped model, so the same
    trajectories to the last bit (``tests/test_so101.py``), but a copy takes ~1 ms and 1.7 MB instead of ~100 ms
    and 63 MB: every setting of the chapter's runs and panel gets its own model.
    """
    return so101.load_mesh_free()


def so101_joints() -> tuple[str, ...]:
    """The SO-101's joint names in dof order."""
    m = so101_base()
    return tuple(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt))


def hold_model(params: HoldParams) -> mujoco.MjModel:
    """The SO-101 set up for one hold run: timestep, integrator, armature, and each actuator per backend.

    In-step the actuators are Menagerie's ``<position>`` servos with kp, kv from ``params`` and forcerange
    ±forcerange; in-loop they are silenced (the PD writes ``qfrc_applied``). Contacts stay on: no contact
    occurs during the move or the hold (``tests/test_hold.py`` checks it), so they do not touch the result.
    Returns a fresh copy the caller may edit.
    """
    return copy.copy(_model_of(params))


def _model_of(params: HoldParams) -> mujoco.MjModel:
    """The shared model of a run. In-loop the gains live in the controller, not the model, so runs that
    differ only in kp, kv or forcerange share one model."""
    if params.backend == 'in-loop':
        if params.implicit_kv:
            return _implicit_kv_model(params.kv, params.armature, params.timestep, params.integrator)
        return shared_hold_model('in-loop', SO101_KP, SO101_KV, params.armature, params.timestep,
                           params.integrator, SO101_FORCERANGE)
    return shared_hold_model(params.backend, params.kp, params.kv, params.armature, params.timestep,
                       params.integrator, params.forcerange)


@functools.lru_cache(maxsize=16)
def shared_hold_model(backend: str, kp: float, kv: float, armature: float, timestep: float, integrator: str,
                      forcerange: float) -> mujoco.MjModel:
    """:func:`hold_model`'s model, shared (never edit it)."""
    params = HoldParams(backend=backend, kp=kp, kv=kv, armature=armature, timestep=timestep,
                        integrator=integrator, forcerange=forcerange)
    m = copy.copy(so101_base())
    m.opt.timestep = params.timestep
    m.opt.integrator = INTEGRATOR_ENUM[params.integrator]
    controller = PDController(m, range(m.njnt), backend=params.backend)
    if params.backend == 'in-step':
        # the commands are constant gains, so the servo is set once; ctrl follows the target per tick
        assert list(controller.actuators) == list(range(m.nu)), 'one actuator per joint, in joint order'
        mj.set_position_servo(m, params.kp, params.kv, params.forcerange)
    mj.set_armature(m, params.armature)
    return m


@functools.lru_cache(maxsize=8)
def _implicit_kv_model(kv: float, armature: float, timestep: float, integrator: str) -> mujoco.MjModel:
    """The in-loop model of ``HoldParams(implicit_kv=True)``, shared (never edit it): every joint's ``dof_damping``
    raised by kv, N·m·s/rad (damping does not enter ``mj_setConst``'s constants)."""
    m = copy.copy(shared_hold_model('in-loop', SO101_KP, SO101_KV, armature, timestep, integrator, SO101_FORCERANGE))
    m.dof_damping[:] += kv
    return m


@functools.lru_cache(maxsize=32)
def _servo_pool(armature: float, timestep: float, integrator: str, thread: int) -> list:
    """Private in-step models of one set-up, whose gains :func:`_batch_models` rewrites for each batch: one pool per
    thread (``threading.get_ident()``), since two threads running holds at once (a panel widget's worker and a
    notebook cell, or two widgets) would otherwise write their gains into each other's models mid-run."""
    return []


def _batch_models(params: Sequence[HoldParams]) -> list[mujoco.MjModel]:
    """One model per run for the batch. In-step runs take a model from a pool per (armature, timestep,
    integrator) and get their gains written into it, one model per distinct (kp, kv, forcerange) in the
    batch: a slider move of kp then edits a model instead of copying one and recomputing its constants. The
    result is :func:`hold_model`'s model for the same params (``mj_setConst`` does not read the gains)."""
    models = []
    gains_in_use: dict[tuple, dict[tuple, mujoco.MjModel]] = {}
    for p in params:
        if p.backend != 'in-step':
            models.append(_model_of(p))
            continue
        setup, gains = (p.armature, p.timestep, p.integrator), (p.kp, p.kv, p.forcerange)
        in_use = gains_in_use.setdefault(setup, {})
        if gains not in in_use:
            pool = _servo_pool(*setup, threading.get_ident())
            if len(pool) <= len(in_use):
                pool.append(copy.copy(shared_hold_model('in-step', SO101_KP, SO101_KV, *setup, SO101_FORCERANGE)))
            m = pool[len(in_use)]
            mj.set_position_servo(m, p.kp, p.kv, p.forcerange)
            in_use[gains] = m
        models.append(in_use[gains])
    return models


def reference(t) -> tuple[np.ndarray, np.ndarray]:
    """The move and hold: a minimum-jerk move from qpos0 = 0 to ``STANDBY`` over ``MOVE_TIME``, then hold.

    Args:
      t: times, s, (n,).

    Returns:
      ``(position, velocity)``, each (n, 6), rad and rad/s.
    """
    s = np.clip(np.asarray(t, dtype=float) / MOVE_TIME, 0.0, 1.0)[:, None]
    goal = np.asarray(STANDBY)[None, :]
    position = goal * (10 * s**3 - 15 * s**4 + 6 * s**5)
    velocity = goal * (30 * s**2 - 60 * s**3 + 30 * s**4) / MOVE_TIME
    return position, velocity


CHATTER_MIN_HZ = 3.0
"""Hz: a spectral peak below this is drift over the 1 s window (a few bins), not a tone."""

TONE_POWER = 2 / 3
"""Share of the motion's power (DC left out) that must lie within a half-octave of the peak for a tone."""


def chatter_frequency(t: np.ndarray, x: np.ndarray) -> float | None:
    """Dominant frequency of x(t), Hz, or None when the motion has no single tone (broadband).

    The peak is the largest bin of the FFT of x minus its mean (uniform samples). It counts as the chatter
    frequency only when it is at least ``CHATTER_MIN_HZ`` and the band from f/√2 to f·√2 around it holds at
    least ``TONE_POWER`` of the power. A limit cycle whose period wanders a little still passes (its power
    spreads over neighbouring bins of the band); motion spread over several decades, or a slow drift
    whose lowest bin wins, does not.

    Args:
      t: sample times, s, (n,), uniform.
      x: the signal, (n,).

    Returns:
      The frequency, Hz (a bin of the FFT: 1/window resolution), or None.
    """
    power = np.abs(np.fft.rfft(x - np.mean(x))) ** 2
    freqs = np.fft.rfftfreq(len(x), d=float(t[1] - t[0]))
    k = 1 + int(np.argmax(power[1:]))
    peak = round(float(freqs[k]), 6)  # bins are exact; drop float dust
    total = float(np.sum(power[1:]))
    band = (freqs >= freqs[k] / math.sqrt(2)) & (freqs <= freqs[k] * math.sqrt(2))
    if peak < CHATTER_MIN_HZ or total <= 0 or float(np.sum(power[band])) < TONE_POWER * total:
        return None
    return peak


CHATTER_TURNS = 2
"""A joint chatters when it turns back at least this often in the last second: once there and once back, a full
swing. One that moves one way, however far (a soft servo drifting toward its pose), or turns back once (an overshoot
coming to rest), does not chatter."""

TURN_SIZE = QUIET_P2P / 2
"""rad: a turn counts when the joint comes back by more than this (:func:`physai.laws.motion.reversals`): half the
peak-to-peak below which a joint is still, so a swing of ``QUIET_P2P`` turns at each end."""


def chattering_joints(p2p_rad: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """Which joints chatter: at least ``QUIET_P2P`` peak to peak over the window and at least ``CHATTER_TURNS`` turns.

    Args:
      p2p_rad: (..., 6) peak-to-peak, rad (NaN: a diverged run, which does not chatter).
      turns: (..., 6) turns of each joint in the window.

    Returns:
      (..., 6) bool.
    """
    p2p = np.asarray(p2p_rad, dtype=float)
    return (np.nan_to_num(p2p, nan=0.0) >= QUIET_P2P) & (np.asarray(turns) >= CHATTER_TURNS)


def _summarize(params: HoldParams, t, q, target, warned: bool) -> HoldResponse:
    njoint = q.shape[1]
    if mj.diverged(q, warned=warned):
        nan = np.full(njoint, math.nan)
        return HoldResponse(params, t, q, target, nan, 0, None, True, np.zeros(njoint, dtype=int), nan.copy())
    window = t >= t[-1] - SETTLE_WINDOW + 0.5 * params.timestep
    p2p = np.ptp(q[window], axis=0)
    turns = np.array([motion.reversals(q[window, j], TURN_SIZE) for j in range(njoint)])
    offset = np.mean(q[window] - target[window], axis=0)
    loud = chattering_joints(p2p, turns)
    if loud.any():  # the loudest joint that chatters
        worst = int(np.flatnonzero(loud)[np.argmax(p2p[loud])])
    else:
        worst = int(np.argmax(p2p))
        if p2p[worst] < QUIET_P2P:  # all still: show the joint that strayed furthest from its command
            worst = int(np.argmax(np.max(np.abs(q - target), axis=0)))
    chatter = chatter_frequency(t[window], q[window, worst]) if loud.any() else None
    return HoldResponse(params, t, q, target, p2p, worst, chatter, False, turns, offset)


def read_at(response: HoldResponse, length: float) -> HoldResponse:
    """``response`` as a run of ``length`` s would have it: the same samples up to ``length`` (a run is the start of
    any longer one), read over the last ``SETTLE_WINDOW`` before it. A run that diverged reads as diverged at every
    length (its record does not say when MuJoCo flagged it).

    Raises:
      ValueError: ``length`` not longer than the window or beyond the run.
    """
    checks.positive('length', length, 's')
    if not SETTLE_WINDOW < length <= response.t[-1] + 1e-9:
        raise ValueError(f'length must be in ({SETTLE_WINDOW}, {response.t[-1]:g}] s, the run\'s, got {length!r}')
    keep = response.t <= length + 1e-9
    return _summarize(response.params, response.t[keep], response.q[keep], response.target[keep],
                      response.diverged)


def hold_responses(params: Sequence[HoldParams], *, duration: float = DURATION,
                   nthread: int = 0) -> list[HoldResponse]:
    """Run many hold experiments together on ``mujoco.batch.Batch``, one model per simulation.

    All runs share one physics clock per timestep: the batch steps to the next step at which any run's
    controller ticks (``Batch.rollout``, recording ``qpos``), then the ticking runs read their state and
    write ``ctrl`` (in-step) or the clamped PD torque (in-loop) to ``qfrc_applied``, which holds until
    their next tick. In-step with ``feedforward='in-clamp'`` the velocity target's ``kv*velocity`` rides in
    ``ctrl`` as ``position + kv*velocity/kp`` (the same force as :class:`PDController`'s ``biasprm[0]``,
    without editing the batch's models every tick). A lone in-loop run (the live panel's) is stepped on its own
    ``MjData`` instead, a ``Batch`` call per tick costing more than the tick's physics; its result is the
    batch's, to the last bit.

    Args:
      params: the runs, (nsim,).
      duration: simulated time, s.
      nthread: Batch threads (0: all CPUs).

    Returns:
      One :class:`HoldResponse` per run, in order.

    Raises:
      TypeError: ``params`` is not a sequence of :class:`HoldParams`.
      ValueError: ``duration`` not > 0 s, more than ``mj.MAX_STEPS`` physics steps in one run or
        ``mj.MAX_TOTAL_STEPS`` in all, or ``nthread`` not a whole number >= 0.
    """
    checks.positive('duration', duration, 's')
    if isinstance(params, HoldParams) or not isinstance(params, Sequence):
        raise TypeError(f'params must be a sequence of HoldParams, got {type(params).__name__}')
    params = list(params)
    for i, p in enumerate(params):
        if not isinstance(p, HoldParams):
            raise TypeError(f'params[{i}] must be a HoldParams, got {type(p).__name__}')
    if not (isinstance(nthread, numbers.Integral) and not isinstance(nthread, bool) and nthread >= 0):
        raise ValueError(f'nthread must be a whole number >= 0 (0: all CPUs), got {nthread!r}')
    steps = [max(2, round(duration / p.timestep)) for p in params]
    if steps and max(steps) > mj.MAX_STEPS:
        raise ValueError(f'duration must be at most {mj.MAX_STEPS:,} physics steps per run, got {duration!r} s '
                         f'= {max(steps):,} steps at timestep {params[steps.index(max(steps))].timestep:g} s')
    if sum(steps) > mj.MAX_TOTAL_STEPS:
        raise ValueError(f'duration times the number of runs must be at most {mj.MAX_TOTAL_STEPS:,} physics steps, '
                         f'got {sum(steps):,} ({len(params)} runs of {duration!r} s)')
    results: dict[int, HoldResponse] = {}
    for timestep in sorted({p.timestep for p in params}):
        ids = [i for i, p in enumerate(params) if p.timestep == timestep]
        for i, r in zip(ids, _hold_batch([params[i] for i in ids], duration, nthread)):
            results[i] = r
    return [results[i] for i in range(len(params))]


def _batch(nsim: int, nthread: int) -> mujoco.batch.Batch:
    """A reusable batch of ``nsim`` SO-101 simulations (its models are set per call), this thread's own: a batch
    set, reset and rolled out by two threads at once mixes their runs (:func:`_servo_pool`)."""
    return _thread_batch(nsim, nthread, threading.get_ident())


@functools.lru_cache(maxsize=16)
def _thread_batch(nsim: int, nthread: int, thread: int) -> mujoco.batch.Batch:
    return mujoco.batch.Batch(so101_base(), nsim, nthread=nthread)


@mj.captured_warnings()
def _hold_batch(params: list[HoldParams], duration: float, nthread: int) -> list[HoldResponse]:
    timestep = params[0].timestep
    nstep = max(2, round(duration / timestep))
    models = _batch_models(params)
    nsim, nq, nu = len(models), models[0].nq, models[0].nu
    batch = _batch(nsim, nthread)
    batch.set_models(models)
    batch.reset()
    batch.qpos[:] += np.array([p.start_offset for p in params])[:, None]
    perturb.nudge(batch.qpos)
    t = timestep * np.arange(nstep)
    pos_ref, vel_ref = reference(t)
    masks = np.array([tick_mask(p.rate_hz, timestep, nstep) for p in params])
    # held[i, k]: the step of run i's latest tick at or before step k (its command is held until the next)
    held = np.maximum.accumulate(np.where(masks, np.arange(nstep)[None, :], 0), axis=1)
    kp = np.array([p.kp for p in params])[:, None]
    kv = np.array([0.0 if p.implicit_kv else p.kv for p in params])[:, None]  # implicit_kv: in the model's damping
    limit = np.array([p.forcerange for p in params])[:, None]
    q = np.empty((nsim, nstep, nq))

    # In-step: what a tick writes does not depend on the state, so the whole schedule of ctrl and
    # qfrc_applied is known ahead and runs as one rollout with those inputs.
    step_ids = np.array([i for i, p in enumerate(params) if p.backend == 'in-step'], dtype=int)
    if step_ids.size:
        spec = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_QFRC_APPLIED
        control = np.zeros((step_ids.size, nstep, nu + models[0].nv))
        for row, i in enumerate(step_ids):
            pos, vel = pos_ref[held[i]], vel_ref[held[i]]
            feedforward = kv[i] * vel
            if params[i].feedforward == 'in-clamp':
                control[row, :, :nu] = pos + feedforward / kp[i]  # kp*ctrl carries kv*velocity
            else:
                control[row, :, :nu] = pos
                control[row, :, nu:] = feedforward
        out = mj.rollout(batch, nstep, control=control, control_spec=int(spec), record=('qpos',), ids=step_ids)
        q[step_ids] = out['qpos']

    # In-loop: the torque depends on the state at each tick; step to the next tick of any run.
    loop_ids = np.array([i for i, p in enumerate(params) if p.backend == 'in-loop'], dtype=int)
    lone = None
    if loop_ids.size == 1:  # the live panel's run: a Batch call per tick costs more than the tick's physics
        lone = int(loop_ids[0])
        q[lone], lone_warned = _lone_loop(models[lone], batch.qpos[lone], pos_ref, vel_ref, masks[lone],
                                          kp[lone, 0], kv[lone, 0], limit[lone, 0])
    elif loop_ids.size:
        qpos, qvel, qfrc_applied = batch.qpos, batch.qvel, batch.qfrc_applied  # live views, bound once
        loop_masks = masks[loop_ids]
        ticks = np.flatnonzero(loop_masks.any(axis=0))
        ends = np.append(ticks[1:], nstep)
        together = bool(loop_masks[:, ticks].all())  # every in-loop run ticks at the same steps
        kp_loop, kv_loop, limit_loop = kp[loop_ids], kv[loop_ids], limit[loop_ids]
        rows = slice(None)
        for k, end in zip(ticks.tolist(), ends.tolist()):
            if not together:
                rows = loop_masks[:, k]
            now = loop_ids[rows]
            tau = pd_torque(pos_ref[k], qpos[now], vel_ref[k], qvel[now], kp_loop[rows], kv_loop[rows])
            qfrc_applied[now] = np.clip(tau, -limit_loop[rows], limit_loop[rows])
            q[loop_ids, k:end] = mj.rollout(batch, end - k, record=('qpos',), ids=loop_ids)['qpos']
    bad = mj.warned(batch)
    if lone is not None:
        bad[lone] = lone_warned
    # sample k is the state after step k, i.e. at time (k+1)*timestep
    t_out = timestep * np.arange(1, nstep + 1)
    return [_summarize(p, t_out, q[i], pos_ref[held[i]], bool(bad[i])) for i, p in enumerate(params)]


def _lone_loop(m: mujoco.MjModel, qpos0: np.ndarray, pos_ref: np.ndarray, vel_ref: np.ndarray, mask: np.ndarray,
               kp: float, kv: float, limit: float) -> tuple[np.ndarray, bool]:
    """One in-loop run on its own ``MjData``, bit for bit what :func:`_hold_batch` gives it in a batch.

    The same ticks, the same torque (:func:`pd_torque`, clipped), the same ``mj_step``s, recorded after each
    step. ``Batch.rollout`` stops a simulation whose warning counters rise during a call (here a tick) and
    repeats its last record to the end of the call. A run in which MuJoCo never warns (every run that does not
    diverge) needs no check per step; one that warns is run again from its start, checking after every step.

    Args:
      m: the run's model (in-loop: actuators silenced).
      qpos0: (nq,) the start, rad (offset and nudged as the batch's).
      pos_ref, vel_ref: (nstep, nq) the command, rad and rad/s.
      mask: (nstep,) the steps a tick starts.
      kp, kv, limit: N·m/rad, N·m·s/rad, N·m.

    Returns:
      ``(q, warned)``: (nstep, nq) joint angles after each step, rad, and whether MuJoCo warned that the run blew
      up (``mj.warned``).
    """
    ticks = np.flatnonzero(mask).tolist()
    spans = list(zip(ticks, ticks[1:] + [len(mask)]))
    error, rate_error = np.empty(m.nv), np.empty(m.nv)

    def run(careful: bool) -> tuple[np.ndarray, np.ndarray] | None:
        """(q, warning counters) at the end, or None when MuJoCo warned in a pass that was not careful."""
        d = mujoco.MjData(m)
        d.qpos[:] = qpos0
        q = np.empty((len(mask), m.nq))
        qpos, qvel, applied, counters = d.qpos, d.qvel, d.qfrc_applied, d.warning.number  # live views
        for k, end in spans:
            # pd_torque's arithmetic, then the clip, in place: a tick at every step makes this the hot line
            np.multiply(kp, np.subtract(pos_ref[k], qpos, out=error), out=error)
            np.multiply(kv, np.subtract(vel_ref[k], qvel, out=rate_error), out=rate_error)
            np.add(np.add(error, rate_error, out=error), 0.0, out=error)
            np.minimum(np.maximum(error, -limit, out=error), limit, out=applied)
            seen = counters.copy() if careful else None
            for j in range(k, end):
                mujoco.mj_step(m, d)
                q[j] = qpos
                if careful and (counters > seen).any():
                    q[j + 1:end] = qpos  # the batch stops this run for the rest of the tick
                    break
            if not careful and counters.any():
                return None
        return q, counters

    q, counters = run(careful=False) or run(careful=True)
    return q, mj.blew_up(counters)


# ---------------------------------------------------------------------------------------------------------
# Ensembles: the chatter is a chaotic limit cycle, so one run is one draw from a distribution

ENSEMBLE_SIZE = 64
"""Runs per configuration that moves in :func:`hold_ensembles`: enough for a median and range that stay put."""

ENSEMBLE_PROBE = 8
"""Runs per configuration that holds still in every one of them (a still run is not chaotic)."""

ENSEMBLE_SPACING = 1e-9
"""rad: run k of an ensemble starts ``k * ENSEMBLE_SPACING`` away from the home pose in every joint."""

STILL_P2P = 1e-9
"""rad: below this peak-to-peak the worst joint holds still (a table shows the bound ``< 1e-09``)."""

ENSEMBLE_RANGE = (2.5, 97.5)
"""Percentiles of the runs' peak-to-peak that a table's range spans: the middle 95%. The very smallest and largest
of 64 runs move too much from one ensemble to the next to print even on the 1-2-5 series."""


@dataclasses.dataclass(frozen=True)
class HoldEnsemble:
    """One configuration run from ``n`` starts ``ENSEMBLE_SPACING`` apart, and what the chapter reads off them."""

    params: HoldParams
    """The configuration (run 0's params: ``start_offset`` 0)."""
    p2p_rad: np.ndarray
    """(n, 6) each run's peak-to-peak per joint over the last ``SETTLE_WINDOW`` s, rad (NaN if diverged)."""
    chatter_hz: np.ndarray
    """(n,) each run's chatter tone (:func:`chatter_frequency`), Hz; NaN where it has none."""
    diverged: np.ndarray
    """(n,) bool, each run's :attr:`HoldResponse.diverged`."""
    sample: HoldResponse
    """Run 0 in full, for a plot: one draw of the ensemble, not its summary."""
    chatters: np.ndarray
    """(n,) bool, each run's :attr:`HoldResponse.chatters`."""
    turns: np.ndarray
    """(n, 6) each run's :attr:`HoldResponse.turns`."""

    @property
    def n(self) -> int:
        """The number of runs."""
        return len(self.diverged)

    @property
    def worst_p2p_rad(self) -> np.ndarray:
        """(n,) each run's largest peak-to-peak over the joints, rad."""
        return np.max(self.p2p_rad, axis=1)

    @property
    def chattering(self) -> int:
        """How many runs chatter (:attr:`HoldResponse.chatters`: a joint back and forth, at least ``QUIET_P2P``)."""
        return int(np.sum(self.chatters))

    @property
    def still(self) -> int:
        """How many runs hold still (worst joint's peak-to-peak below ``STILL_P2P``)."""
        return int(np.sum(~self.diverged & (self.worst_p2p_rad < STILL_P2P)))

    @property
    def state(self) -> str:
        """``'chatters'`` or ``'still'`` when every run agrees (``'diverged'`` too), ``'mixed'`` otherwise."""
        if self.chattering == self.n:
            return 'chatters'
        if self.still == self.n:
            return 'still'
        return 'diverged' if self.diverged.all() else 'mixed'

    @property
    def p2p(self) -> robust.Ensemble:
        """Median, smallest and largest of the runs' worst peak-to-peak, rad (diverged runs left out)."""
        return robust.ensemble(self.worst_p2p_rad[~self.diverged])

    @property
    def p2p_range(self) -> tuple[float, float]:
        """The runs' worst peak-to-peak at the ``ENSEMBLE_RANGE`` percentiles, rad: the middle 95% of the runs."""
        low, high = np.percentile(self.worst_p2p_rad[~self.diverged], ENSEMBLE_RANGE)
        return float(low), float(high)

    @property
    def tone(self) -> str | None:
        """The chatter tone as the ensemble supports it: ``'5-10'`` (Hz), ``'500'``, ``'broadband'`` or None.

        Where at least half the chattering runs have a tone, the band from their lower to their upper quartile,
        widened to the 1-2-5 series (:func:`physai.laws.robust.series_125`); a band of one value prints as that value. Where fewer
        do, ``'broadband'``; a still ensemble has none.
        """
        if self.state != 'chatters':
            return None
        tones = self.chatter_hz[np.isfinite(self.chatter_hz)]
        if 2 * tones.size < self.n:
            return 'broadband'
        q1, q3 = np.percentile(tones, [25, 75])
        low, high = robust.series_125(float(q1), 'down'), robust.series_125(float(q3), 'up')
        return f'{low:g}' if low == high else f'{low:g}-{high:g}'

    @property
    def joint(self) -> int:
        """The joint a plot shows: the first (in joint order) that chatters in every run; when none does,
        the one that strays furthest from its command in run 0 (a still run does not depend on its start)."""
        loud = np.flatnonzero(np.all(chattering_joints(self.p2p_rad, self.turns), axis=0))
        return int(loud[0]) if loud.size else self.sample.worst

    def row(self) -> dict:
        """The ensemble's figures in radians, as the runs measure them: ``p2p_rad``, ``p2p_low`` and ``p2p_high`` on
        the 1-2-5 series (a still ensemble: the bound ``< 1e-09``), the other keys as :meth:`row_deg`'s."""
        row = {'rate_hz': self.params.rate_hz, 'backend': self.params.backend, 'runs': self.n,
               'chattering': self.chattering, 'p2p_rad': None, 'p2p_low': None, 'p2p_high': None,
               'chatter_hz': self.tone}
        if self.state == 'still':
            row['p2p_rad'] = robust.Below(STILL_P2P)
        elif self.state == 'chatters':
            low, high = self.p2p_range
            row.update(p2p_rad=robust.series_125(self.p2p.median), p2p_low=robust.series_125(low, 'down'),
                       p2p_high=robust.series_125(high, 'up'))
        return row

    def row_deg(self) -> dict:
        """The ensemble as one row of the chapter's tables (see :func:`physai.experiments.where_pd_runs.rate_rows`),
        in degrees as the rest of the book: :meth:`row`'s peak-to-peak figures converted by :func:`p2p_deg`, under
        ``p2p_deg``, ``p2p_low`` and ``p2p_high``."""
        row = self.row()
        return {('p2p_deg' if key == 'p2p_rad' else key): (p2p_deg(value) if key in P2P_KEYS else value)
                for key, value in row.items()}


P2P_KEYS = ('p2p_rad', 'p2p_low', 'p2p_high')
"""The keys of :meth:`HoldEnsemble.row` that hold a peak-to-peak, rad."""

P2P_DEG_DIGITS = 2
"""Significant digits of a table's peak-to-peak in degrees (:func:`p2p_deg`)."""


def p2p_deg(p2p_rad: float | None) -> float | None:
    """A table's peak-to-peak figure, rad on the 1-2-5 series (:func:`physai.laws.robust.series_125`), in degrees.

    The figure is rounded in radians, where the ensembles make it robust, and converted to ``P2P_DEG_DIGITS``
    significant digits (0.2 rad: 11°, 0.05 rad: 2.9°); a bound (:class:`physai.laws.robust.Below`, a still
    ensemble's ``< 1e-09`` rad) becomes the bound up the series in degrees (``< 1e-07``); None (no figure) stays None.
    """
    if p2p_rad is None:
        return None
    if isinstance(p2p_rad, robust.Below):
        return robust.Below(robust.series_125(math.degrees(p2p_rad), 'up'))
    return robust.round_sig(math.degrees(p2p_rad), P2P_DEG_DIGITS)


def ensemble_members(params: HoldParams, n: int = ENSEMBLE_SIZE) -> list[HoldParams]:
    """The ``n`` runs of ``params``' ensemble: run k starts ``k * ENSEMBLE_SPACING`` rad from the home pose."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f'n must be an integer >= 1, got {n!r}')
    return [dataclasses.replace(params, start_offset=k * ENSEMBLE_SPACING) for k in range(n)]


def hold_ensembles(params: Sequence[HoldParams], *, n: int = ENSEMBLE_SIZE, probe: int = ENSEMBLE_PROBE,
                   nthread: int = 0) -> list[HoldEnsemble]:
    """Every configuration of ``params`` as an ensemble of runs from nearby starts (:func:`ensemble_members`).

    Why: below the critical rate the in-loop PD settles on a chaotic limit cycle. Its amplitude and tone on one
    run depend on the last bits of the start (and so on the processor), while their distribution does not.
    Every configuration first gets ``probe`` runs, all in one batch; a configuration in which every one of them
    holds still (peak-to-peak below ``STILL_P2P``: nothing chaotic to sample) keeps those, and the others get
    their remaining ``n - probe`` runs in a second batch.

    Args:
      params: the configurations, (nconfig,).
      n: runs per configuration that moves, >= ``probe``.
      probe: runs per configuration that holds still, >= 1.
      nthread: Batch threads (0: all CPUs).

    Returns:
      One :class:`HoldEnsemble` per configuration, in order.
    """
    params = list(params)
    if not (isinstance(probe, int) and probe >= 1):
        raise ValueError(f'probe must be an integer >= 1, got {probe!r}')
    if not (isinstance(n, int) and n >= probe):
        raise ValueError(f'n must be an integer >= probe ({probe}), got {n!r}')
    first = hold_responses([m for p in params for m in ensemble_members(p, probe)], nthread=nthread)
    members = [first[i * probe:(i + 1) * probe] for i in range(len(params))]
    moving = [i for i, runs in enumerate(members)
              if not all(not r.diverged and r.worst_p2p_rad < STILL_P2P for r in runs)]
    if moving and n > probe:
        more = hold_responses([m for i in moving for m in ensemble_members(params[i], n)[probe:]],
                              nthread=nthread)
        for j, i in enumerate(moving):
            members[i] = members[i] + more[j * (n - probe):(j + 1) * (n - probe)]
    # the sample gets its own angles: a view would keep the whole batch's (nsim, nstep, 6) record alive as long
    # as the ensemble is kept
    return [HoldEnsemble(params=p, p2p_rad=np.array([r.p2p_rad for r in runs]),
                         chatter_hz=np.array([math.nan if r.chatter_hz is None else r.chatter_hz for r in runs]),
                         diverged=np.array([r.diverged for r in runs]),
                         sample=dataclasses.replace(runs[0], q=runs[0].q.copy()),
                         chatters=np.array([r.chatters for r in runs]), turns=np.array([r.turns for r in runs]))
            for p, runs in zip(params, members)]


# ---------------------------------------------------------------------------------------------------------
# What implicitfast takes implicitly: the actuator's velocity derivative, on and off the force limit

def clamped_servo_link(*, kp: float = SO101_KP, kv: float = SO101_KV, damping: float = 0.6,
                       forcerange: float = SO101_FORCERANGE, armature: float = SO101_ARMATURE,
                       timestep: float = PHYSICS_TIMESTEP) -> mujoco.MjModel:
    """Chapter 1's link (:func:`physai.engine.link.link_spec`) on a ``<position kp kv forcerange=±forcerange>``
    servo with joint ``damping`` (N·m·s/rad), ``armature`` (kg·m²), ``implicitfast`` at ``timestep`` (s): by
    default Menagerie's SO-101 servo at chapter 3's 1 kHz physics. Built with ``MjSpec``, then compiled."""
    spec = link.link_spec(armature=armature, timestep=timestep, integrator='implicitfast')
    spec.joint('hinge').damping = [damping, 0.0, 0.0]  # a 3-vector in MjSpec; its first entry is dof_damping
    servo = spec.actuator('servo')
    servo.set_to_position(kp=kp, kv=kv)
    servo.forcelimited = 1
    servo.forcerange = [-forcerange, forcerange]
    return spec.compile()


def implicit_damping(error: float, *, kp: float = SO101_KP, kv: float = SO101_KV, damping: float = 0.6,
                     forcerange: float = SO101_FORCERANGE, armature: float = SO101_ARMATURE,
                     timestep: float = PHYSICS_TIMESTEP) -> tuple[float, float]:
    """The damping ``implicitfast`` folds into its velocity update, with the servo ``error`` rad off its target.

    Chapter 1's link (:func:`physai.engine.link.link_spec`) on a ``<position>`` servo, at rest ``error`` rad
    from ``ctrl``, takes one ``implicitfast`` step.
    MuJoCo's ``qDeriv`` (the velocity derivative of the passive and actuator forces it integrates implicitly)
    then reads ``-(kv + damping)`` while ``kp*error`` is inside ``±forcerange``, and ``-damping`` alone once the
    force sits at its limit: a clamped force does not change with the velocity, so kv drops out.

    Args:
      error: ``ctrl - q``, rad, finite.
      kp, kv: the servo's gains, N·m/rad (> 0) and N·m·s/rad (>= 0).
      damping: the joint's ``dof_damping``, N·m·s/rad, >= 0.
      forcerange: the servo's clamp, N·m, > 0.
      armature: ``dof_armature``, kg·m², >= 0.
      timestep: the physics step, s, in (0, 0.1].

    Returns:
      ``(actuator_force, -qDeriv)``: the servo's force (N·m) and the damping taken implicitly (N·m·s/rad).
    """
    if not (checks.is_real(error) and math.isfinite(error)):
        raise ValueError(f'error must be a finite number of rad, got {error!r}')
    checks.positive('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.nonnegative('damping', damping, 'N·m·s/rad')
    checks.positive('forcerange', forcerange, 'N·m')
    checks.nonnegative('armature', armature, 'kg·m²')
    checks.timestep(timestep)
    m = clamped_servo_link(kp=kp, kv=kv, damping=damping, forcerange=forcerange, armature=armature,
                           timestep=timestep)
    d = mujoco.MjData(m)
    d.ctrl[0] = error
    mujoco.mj_step(m, d)
    return float(d.actuator_force[0]), float(-d.qDeriv[0])
