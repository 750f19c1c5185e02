"""Chapter 4's competing servo models of the SO-101: per-joint servos, a command delay, calibration offsets.

:mod:`physai.engine.sysid` replays and fits one :class:`~physai.engine.arm_replay.ArmServo` shared by every joint. This
module holds the more general servo the book compares it with, replayed on the same arm in the same way, and fitted
with the same solver:

:class:`JointModel`
    Per joint (``JOINTS`` order) MuJoCo's ``<position>`` servo and joint: ``kp``, ``kv``, ``forcerange``
    (``actuator_gainprm[0]``, ``-actuator_biasprm[1:3]``, ``actuator_forcerange``) and the joint's ``damping``,
    ``frictionloss``, ``armature`` (``dof_damping``, ``dof_frictionloss``, ``dof_armature``); one command ``delay``
    for all actuators; and per arm joint a command offset ``c`` (a calibration difference between leader and
    follower). Actuator i applies::

        force = clip(kp*(u(t - delay) - c - q) - kv*q̇, ±forcerange),   gainprm[0] = kp, biasprm = (-kp*c, -kp, -kv)

    with ``u(t - delay)`` read from MuJoCo's own actuator history (``<general delay nsample interp>``, new in MuJoCo
    3.5.0; ``actuator_delay``), linearly interpolated between the samples of the physics steps, so the replay is a
    continuous function of the delay. MuJoCo reads the history before it writes the current command, so any delay
    above zero is at least one physics step. The ctrlrange moves with ``c``, so the clamp acts on ``u - c``.

:class:`Structure`
    Which parameters a fit frees, and how: the six of ``arm_replay.PARAMS`` shared by every joint in log10 (as the
    chapter's fit), the delay in seconds, the offsets in degrees; the rest stay at the start's values. The chapter's
    spring is ``Structure(free=arm_replay.PARAMS)``.

:func:`replay` runs models on episodes in one ``mujoco.batch.Batch`` as ``arm_replay.replay`` does (the same start, the
same substeps, the same score); with no delay, no offsets and one servo on every joint it gives ``arm_replay.replay``'s
bits (``tests/test_sysid.py``). :func:`fit` fits several structures on several sets of episodes side by side, each
candidate replayed in the batch of the solvers' round (``sysid._Lockstep``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import mujoco
import numpy as np

from physai.engine import arm_replay, mj, sysid
from physai.engine.datasets import Episode
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.engine.arm_replay import ArmServo, Replay, ReplayConfig
from physai.laws import checks, robust


JOINT_PARAMS = arm_replay.PARAMS
"""The six per-joint parameters, ``arm_replay.PARAMS`` order: kp, kv, forcerange, damping, frictionloss, armature."""

MAX_DELAY = 0.25
"""s: the longest command delay the replay holds (a fit's upper bound). The recording's teleport error is smallest at
a shift of 4 frames (0.133 s); twice that would be a servo slower than anything the recording shows."""

OFFSET_BOUND_DEG = 15.0
"""deg: the largest calibration offset a fit may give a joint: several times the held-pose offsets of the
recording (about 3 degrees), and far below a calibration mistake anyone would miss (a spline off by a tooth)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class JointModel:
    """A servo per joint, a command delay and calibration offsets (MuJoCo's names and units)."""

    kp: tuple[float, ...]
    """(6,) stiffness per joint, N·m/rad, ``JOINTS`` order; ``actuator_gainprm[0]``."""
    kv: tuple[float, ...]
    """(6,) actuator damping, N·m·s/rad; ``-actuator_biasprm[2]``."""
    forcerange: tuple[float, ...]
    """(6,) symmetric torque clamp, N·m; ``actuator_forcerange``."""
    damping: tuple[float, ...]
    """(6,) joint viscous damping, N·m·s/rad; ``dof_damping``."""
    frictionloss: tuple[float, ...]
    """(6,) joint dry friction, N·m; ``dof_frictionloss``."""
    armature: tuple[float, ...]
    """(6,) reflected rotor inertia, kg·m²; ``dof_armature``."""
    delay: float = 0.0
    """Command delay of every actuator, s, in [0, ``MAX_DELAY``]; ``actuator_delay`` (0: none)."""
    offsets_deg: tuple[float, ...] = (0.0,) * len(ARM_JOINTS)
    """(5,) per arm joint the offset c, degrees: the actuator drives the joint towards ``ctrl - c``."""

    def __post_init__(self):
        for name in JOINT_PARAMS:
            values = getattr(self, name)
            if not isinstance(values, tuple) or len(values) != len(JOINTS):
                raise ValueError(f'{name} must be a tuple of {len(JOINTS)} values ({", ".join(JOINTS)}), got {values!r}')
            for j, v in zip(JOINTS, values):
                check = checks.positive if name in ('kp', 'forcerange') else checks.nonnegative
                check(f'{name} of {j}', v)
        delay = checks.nonnegative('delay', self.delay, 's')
        if delay > MAX_DELAY:
            raise ValueError(f'delay must be in [0, {MAX_DELAY:g}] s, got {self.delay!r}')
        if not isinstance(self.offsets_deg, tuple) or len(self.offsets_deg) != len(ARM_JOINTS):
            raise ValueError(f'offsets_deg must be a tuple of {len(ARM_JOINTS)} values ({", ".join(ARM_JOINTS)}), '
                             f'got {self.offsets_deg!r}')
        for j, c in zip(ARM_JOINTS, self.offsets_deg):
            checks.finite(f'offset of {j}', c, 'deg')

    @classmethod
    def uniform(cls, servo: ArmServo, *, delay: float = 0.0,
                offsets_deg: Sequence[float] | None = None) -> 'JointModel':
        """``servo`` on every joint, with a delay and offsets (default none)."""
        offsets = (0.0,) * len(ARM_JOINTS) if offsets_deg is None else tuple(float(c) for c in offsets_deg)
        return cls(**{name: (float(getattr(servo, name)),) * len(JOINTS) for name in JOINT_PARAMS},
                   delay=float(delay), offsets_deg=offsets)

    def joint(self, name: str) -> ArmServo:
        """The servo of one joint as an :class:`ArmServo`."""
        i = JOINTS.index(name)
        return ArmServo(**{p: getattr(self, p)[i] for p in JOINT_PARAMS})

    def lag_ms(self) -> np.ndarray:
        """(5,) per arm joint (kv + damping)/kp, ms: the first-order lag of :attr:`ArmServo.lag_ms`."""
        return np.array([self.joint(j).lag_ms for j in ARM_JOINTS])

    def replace(self, **changes) -> 'JointModel':
        """A copy with ``changes``; a number for a per-joint parameter sets it on every joint."""
        for name in JOINT_PARAMS:
            if name in changes and np.ndim(changes[name]) == 0:
                changes[name] = (float(changes[name]),) * len(JOINTS)
        return dataclasses.replace(self, **changes)

    def rounded(self, digits: int) -> 'JointModel':
        """Every number rounded to ``digits`` significant digits (an offset to ``digits`` digits after the point of a
        degree's tenth, since an offset may be zero)."""
        out = {name: tuple(robust.round_sig(v, digits) for v in getattr(self, name)) for name in JOINT_PARAMS}
        return dataclasses.replace(self, **out, delay=robust.round_sig(self.delay, digits) if self.delay else 0.0,
                                   offsets_deg=tuple(round(c, digits - 1) + 0.0 for c in self.offsets_deg))


# --------------------------------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------------------------------

HISTORY_SAMPLES = 64
"""ctrl samples each actuator's history holds: ``MAX_DELAY`` at the replay's 1/210 s step needs 53, plus the two that
the linear interpolation reads on either side."""


def needs_history(models: Sequence[JointModel]) -> bool:
    """Some model has a delay, so every model of the batch must carry the history buffer (one MjData layout)."""
    return any(m.delay > 0 for m in models)


def mj_model(model: JointModel, config: ReplayConfig = ReplayConfig(), *, fps: float = 30.0,
             history: bool | None = None) -> mujoco.MjModel:
    """The slim SO-101 (``arm_replay.arm_model``'s arm) with ``model`` on its joints, set up for replay at ``fps``.

    Args:
      history: give the actuators a ``ctrl`` history (default: when ``model`` has a delay). A model without a delay
        but with a history replays exactly as without one: nothing reads the buffer.
    """
    if not isinstance(model, JointModel):
        raise TypeError(f'model must be a JointModel, got {type(model).__name__}')
    history = model.delay > 0 if history is None else history
    if model.delay > 0 and not history:
        raise ValueError(f'a delay of {model.delay:g} s needs the history buffer, got history={history!r}')
    samples = HISTORY_SAMPLES if history else 0
    substeps = config.substeps(fps)
    if history and model.delay * fps * substeps > HISTORY_SAMPLES - 2:
        raise ValueError(f'delay must be at most {(HISTORY_SAMPLES - 2) / (fps * substeps):g} s at {substeps} '
                         f'physics steps per frame (the history holds {HISTORY_SAMPLES} samples), got {model.delay!r}')
    base = _arm(config.contacts, samples)
    m = arm_replay._servo_arm(base, model.joint(JOINTS[0]), config, fps)  # options, contacts, limits; a copy of base
    for i, name in enumerate(JOINTS):
        a, dof = m.actuator(name).id, m.joint(name).dofadr[0]
        c = math.radians(model.offsets_deg[ARM_JOINTS.index(name)]) if name in ARM_JOINTS else 0.0
        mj.set_position_servo(m, model.kp[i], model.kv[i], model.forcerange[i], actuators=a)
        m.actuator_biasprm[a, 0] = -model.kp[i] * c
        m.actuator_ctrlrange[a] = base.actuator_ctrlrange[a] + c
        m.dof_damping[dof] = model.damping[i]
        m.dof_frictionloss[dof] = model.frictionloss[i]
        m.dof_armature[dof] = model.armature[i]
    m.actuator_delay[:] = model.delay
    if len(set(model.armature)) > 1:  # the armature enters dof_invweight0, which scales friction loss
        mujoco.mj_setConst(m, mujoco.MjData(m))
    return m


@functools.cache
def _arm(contacts: bool, history: int) -> mujoco.MjModel:
    if contacts and history:
        raise ValueError('a delay with contacts on is not needed by the book and not supported here')
    return arm_replay.slim_arm() if contacts else arm_replay._bare_arm(history)


def replay(models: Sequence[JointModel], episodes: Sequence[Episode], *, config: ReplayConfig = ReplayConfig(),
           nthread: int = 0) -> list[list[Replay]]:
    """Replay every episode with every model in one ``mujoco.batch.Batch``, as ``arm_replay.replay`` does for servos.

    Returns:
      ``result[i][j]``: model i on episode j (``Replay.servo`` holds the :class:`JointModel`).
    """
    models = arm_replay.checked_items('models', models, JointModel)
    episodes = arm_replay.checked_items('episodes', episodes, Episode)
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    if not models or not episodes:
        return [[] for _ in models]
    arm_replay.check_run_budget(models, episodes, config)
    runs = _runs([m for m in models for _ in episodes], episodes * len(models), config, nthread)
    return [runs[i * len(episodes):(i + 1) * len(episodes)] for i in range(len(models))]


@mj.captured_warnings()
def _runs(models: Sequence[JointModel], episodes: Sequence[Episode], config: ReplayConfig, nthread: int = 0,
          history: bool = False) -> list[Replay]:
    """Run k replays ``episodes[k]`` with ``models[k]``; all in one batch (checked by the callers). Every model carries
    the history buffer if ``history`` or some model has a delay (one MjData layout for the batch)."""
    fps = episodes[0].fps
    history = history or needs_history(models)
    compiled = {}
    for m in models:
        if m not in compiled:
            compiled[m] = mj_model(m, config, fps=fps, history=history)
    qpos, warned = arm_replay.rollout([compiled[m] for m in models], episodes, config.substeps(fps), nthread=nthread)
    return arm_replay.replays(models, episodes, qpos, warned)


# --------------------------------------------------------------------------------------------------
# Structures and their fit
# --------------------------------------------------------------------------------------------------

OFFSET_NAMES = tuple(f'offset_{j}' for j in ARM_JOINTS)
"""The free-parameter names of the five command offsets, degrees."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Structure:
    """A model structure: which parameters a fit frees (the rest stay at the start's)."""

    name: str
    """How the book calls it."""
    free: tuple[str, ...]
    """Free parameters: names of ``arm_replay.PARAMS`` (shared by every joint, fitted in log10 inside
    ``sysid.LOG_BOUNDS``), ``'delay'`` (s, in [1 physics step, ``MAX_DELAY``]) and ``OFFSET_NAMES`` (deg, within
    ±``OFFSET_BOUND_DEG``)."""

    def __post_init__(self):
        allowed = JOINT_PARAMS + ('delay',) + OFFSET_NAMES
        if not isinstance(self.free, tuple) or not self.free or len(set(self.free)) != len(self.free) \
                or not all(p in allowed for p in self.free):
            raise ValueError(f'free must be distinct names from {", ".join(allowed)}, got {self.free!r}')

    def bounds(self, step: float) -> tuple[np.ndarray, np.ndarray]:
        """(n,) lower and upper bounds of the free parameters in the fit's units; ``step`` the physics step, s."""
        low, high = [], []
        for p in self.free:
            if p in JOINT_PARAMS:
                k = JOINT_PARAMS.index(p)
                low.append(sysid.LOG_BOUNDS[0][k])
                high.append(sysid.LOG_BOUNDS[1][k])
            elif p == 'delay':
                low.append(step)
                high.append(MAX_DELAY)
            else:
                low.append(-OFFSET_BOUND_DEG)
                high.append(OFFSET_BOUND_DEG)
        return np.array(low), np.array(high)

    def to_x(self, model: JointModel, step: float) -> np.ndarray:
        """(n,) the free parameters of ``model`` (its first joint's for the shared ones), clipped into the bounds."""
        x = []
        for p in self.free:
            if p in JOINT_PARAMS:
                with np.errstate(divide='ignore'):
                    x.append(np.log10(getattr(model, p)[0]))
            elif p == 'delay':
                x.append(model.delay)
            else:
                x.append(model.offsets_deg[OFFSET_NAMES.index(p)])
        return np.clip(np.array(x, dtype=float), *self.bounds(step))

    def from_x(self, x: np.ndarray, start: JointModel) -> JointModel:
        """``start`` with the free parameters set from ``x`` (n,); a shared parameter goes on every joint."""
        x = np.ravel(x)
        changes, offsets = {}, list(start.offsets_deg)
        for p, v in zip(self.free, x):
            if p in JOINT_PARAMS:
                changes[p] = float(10.0 ** v)
            elif p == 'delay':
                changes['delay'] = float(v)
            else:
                offsets[OFFSET_NAMES.index(p)] = float(v)
        return start.replace(**changes, offsets_deg=tuple(offsets))


SPRING = Structure(name='spring', free=JOINT_PARAMS)
"""The chapter's fit: one soft servo on every joint, no delay, no offsets."""
LAG_PARAMS = ('kp', 'kv', 'damping')
"""The servo parameters a rival structure frees beside what it adds: the ones that set the lag (kv + damping)/kp and,
through kp, the sag, which a delay or an offset could take over. The force limit, the friction and the armature stay
at the start's (in the book, each fold's spring)."""
SPRING_DELAY = Structure(name='spring + delay', free=LAG_PARAMS + ('delay',))
"""A servo plus a command delay: the lag may come from the delay, the servo may be as stiff as the data let it."""
SPRING_OFFSETS = Structure(name='spring + offsets', free=LAG_PARAMS + OFFSET_NAMES)
"""A servo plus a calibration offset per arm joint."""
SPRING_DELAY_OFFSETS = Structure(name='spring + delay + offsets', free=LAG_PARAMS + ('delay',) + OFFSET_NAMES)
"""Both."""
STRUCTURES = (SPRING, SPRING_DELAY, SPRING_OFFSETS, SPRING_DELAY_OFFSETS)


@dataclasses.dataclass(frozen=True)
class StructureFit:
    """One structure fitted to one set of episodes."""

    structure: Structure
    episodes: tuple[int, ...]
    """The ``episode_index`` of every episode fitted."""
    start: JointModel
    model: JointModel
    """The fitted model (every digit)."""
    cost: float
    """½·mean squared residual at the end, deg²."""
    iterations: int
    max_iter: int

    @property
    def converged(self) -> bool:
        """Stopped by its tolerances before the ``max_iter`` cap."""
        return self.iterations < self.max_iter


def fit(problems: Sequence[tuple[Structure, Sequence[Episode], JointModel]], *,
        config: ReplayConfig = ReplayConfig(), max_iter: int = 50, eps: float = 1e-3, ftol: float = sysid.FTOL
        ) -> list[StructureFit]:
    """Fit each ``(structure, episodes, start)`` with ``sysid.least_squares``, all side by side.

    Every solver runs in a thread of its own; whenever all of them wait for residuals, all their candidates (each on
    its own episodes) are replayed in one batch (``sysid._Lockstep``), so each fit takes the path it takes alone. The
    residuals are ``sysid.residuals``': per frame and arm joint, (sim - real)/sqrt(n) in degrees. Finite differences
    step ``eps`` in the fit's units (log10 for the servo, and the same ``eps`` in seconds for the delay and in degrees
    for an offset, scaled by Marquardt's scaling like every other parameter).

    Returns:
      One :class:`StructureFit` per problem, in order.
    """
    problems = list(problems)
    if not problems:
        raise ValueError('problems must hold at least one (structure, episodes, start), got none')
    checked = []
    for structure, episodes, start in problems:
        if not isinstance(structure, Structure) or not isinstance(start, JointModel):
            raise TypeError(f'each problem must be (Structure, episodes, JointModel), got '
                            f'({type(structure).__name__}, ..., {type(start).__name__})')
        episodes = arm_replay.checked_items('episodes', episodes, Episode)
        if not episodes:
            raise ValueError('episodes must hold at least one episode to fit, got none')
        arm_replay.replay_steps(episodes, config)
        checked.append((structure, episodes, start))
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f'max_iter must be an integer >= 1, got {max_iter!r}')
    rates = sorted({e.fps for _, episodes, _ in checked for e in episodes})
    if len(rates) > 1:
        raise ValueError(f'episodes must share one fps, got {rates}')
    fps = rates[0]
    step = 1.0 / (fps * config.substeps(fps))
    history = any(start.delay > 0 or 'delay' in structure.free for structure, _, start in checked)

    def run(models, episodes):
        return _runs(models, episodes, config, history=history)

    lockstep = sysid._Lockstep(config, 1, run=run)

    def solve(p: int) -> StructureFit:
        structure, episodes, start = checked[p]
        decode = functools.partial(structure.from_x, start=start)
        bounds = structure.bounds(step)
        x, trace = sysid.least_squares(structure.to_x(start, step), lockstep.residual(p, episodes, decode=decode,
                                                                                        nparam=len(structure.free)),
                                       bounds=bounds, eps=eps, max_iter=max_iter, ftol=ftol)
        return StructureFit(structure=structure, episodes=tuple(e.index for e in episodes), start=start,
                            model=structure.from_x(x, start), cost=float(trace[-1].objective),
                            iterations=len(trace) - 1, max_iter=max_iter)

    return lockstep.run([functools.partial(solve, p) for p in range(len(checked))])


def cost(replays: Sequence[Replay]) -> float:
    """½·mean squared error over frames 1..n-1 and the arm joints of several replays, deg² (the fit's objective)."""
    err = np.concatenate([(r.sim_deg[1:] - r.real_deg[1:]).ravel() for r in replays])
    return 0.5 * float(np.mean(err ** 2)) if np.all(np.isfinite(err)) else math.inf
