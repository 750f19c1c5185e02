"""Chapter 4's engine: replay recorded SO-101 episodes open loop on MuJoCo and fit the servo model.

Open-loop replay
    Reset the simulated arm (``physai.engine.so101.load_so101()``) to an episode's first ``observation.state``,
    then feed the recorded ``action`` stream tick for tick: each frame's target is held in ``d.ctrl`` for
    the physics steps of one frame (``substeps = round(1 / (fps * timestep))``, and the timestep is
    adjusted to ``1 / (fps * substeps)`` so a whole number of steps fills a frame). The simulated joints
    at the end of frame t are compared with ``observation.state[t+1]``.

    Contacts are off: Menagerie's simple collision boxes overlap each other in the folded rest pose
    (:func:`overlap_depth`), in which most of the recorded episodes start and end, so with contacts on
    the arm is pushed apart, wherever the boxes overlap, by contact forces the real arm never feels.
    Joint limits and the actuators' ctrlrange stay as the model ships them (``ReplayConfig.limits``);
    note that the model's elbow range, ±1.69 rad (±96.8°), is a few degrees narrower than the ≈99.6°
    this real elbow reaches when folded.

Joint convention
    radians = deg2rad(degrees), sign +1, offset 0 for the five arm joints: the gripper tip then comes
    down to the table plane and never far below it (:func:`tip_height`; a flipped shoulder lift sends it
    through the table, a flipped elbow or wrist flex never lets it reach the table). The gripper's 0..100
    is mapped linearly onto its joint range; it is simulated but never scored.

Score
    Mean absolute error in degrees of ``sim[t] - state[t]`` over frames 1..n-1 and the five arm joints
    (``mae_deg``), and per joint.

The servo model
    Every one of the six joints gets the same :class:`ArmServo`: MuJoCo's ``<position>`` actuator,
    ``force = clip(kp*(u - q) - kv*q̇, -forcerange, forcerange)`` (``actuator_gainprm[0] = kp``,
    ``actuator_biasprm[:3] = (0, -kp, -kv)``, ``actuator_forcerange``), on a joint with ``dof_damping``,
    ``dof_frictionloss`` and ``dof_armature``. kv acts inside the clamp and the joint damping outside it,
    so a saturated joint moves no faster than forcerange/damping (less what gravity takes), whatever kv.

The fit
    Six shared parameters in log10 space with bounds, fitted with MuJoCo's bounded Levenberg-Marquardt
    least squares (``mujoco.minimize.least_squares``, with Marquardt's scaling and the schedule ``SOLVER``) on
    per-frame residuals (sim - real, degrees) of the fit episodes, from two starts, each run until the solver's
    own tolerances stop it or an iteration gains less than ``FTOL`` of the cost (``max_iter`` is only a cap;
    :func:`least_squares`). ``least_squares`` asks for the residuals of several candidates at once (all six
    finite-difference probes of a Jacobian in one call), but a trial step is one candidate, three
    simulations for all the CPUs; so the starts, and leave-one-out's folds, run side by side
    (:func:`fit_servos`), and whatever they ask for at one time, every candidate on its episodes, is
    replayed as one ``mujoco.batch.Batch`` with one model per simulation. A replay gives the same bits
    whatever it is batched with, so each start takes the path it takes alone. The models are copies of the
    arm without its meshes, geoms and sites (contacts are off), since copying the mesh data cost more than
    simulating and placing the geoms a tenth of it.
    The starts end in one flat valley at nearly equal costs; the softest of those within ``COST_TIE`` is
    kept, since its path does not depend on the last bits of the arithmetic, and its servo is rounded to
    ``FIT_DIGITS`` significant digits, so everything computed from it is the same on any processor.

Also here: the teleport scale (:func:`teleport_errors`, :func:`best_shift`), the sag in held poses,
the kp × damping map, leave-one-out, a synthetic stand-in recording for when no real one is at hand
(:func:`find_dataset`), the ``sysid`` experiment (``python -m physai sysid``), and chapter 4's live panel
and static twin (:func:`sysid_panel`, :func:`sysid_twin`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import pathlib
import sys
import threading
import time
from collections.abc import Sequence

import mujoco
import mujoco.batch
import mujoco.minimize
import numpy as np

from physai.engine import mj, perturb, so101
from physai.laws import checks, robust
from physai.engine.datasets import Episode, LeRobotDataset
from physai.engine.so101 import ARM_JOINTS, JOINTS, freeze_inertia, load_so101


TIP_SITE = 'gripperframe'


# --------------------------------------------------------------------------------------------------
# The servo model
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class ArmServo:
    """One servo model shared by all SO-101 joints (MuJoCo's names and units)."""

    kp: float
    """Stiffness, N·m/rad; ``<position kp>``, ``actuator_gainprm[0]``, ``-actuator_biasprm[1]``."""
    kv: float
    """Actuator damping, N·m·s/rad; ``<position kv>``, ``-actuator_biasprm[2]``."""
    forcerange: float
    """Symmetric torque clamp ±forcerange, N·m; ``<position forcerange>``, ``actuator_forcerange``."""
    damping: float
    """Joint viscous damping, N·m·s/rad; ``<joint damping>``, ``dof_damping``."""
    frictionloss: float
    """Joint dry friction, N·m; ``<joint frictionloss>``, ``dof_frictionloss``."""
    armature: float
    """Reflected rotor inertia, kg·m²; ``<joint armature>``, ``dof_armature``."""

    def __post_init__(self):
        checks.positive('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.positive('forcerange', self.forcerange, 'N·m')
        checks.nonnegative('damping', self.damping, 'N·m·s/rad')
        checks.nonnegative('frictionloss', self.frictionloss, 'N·m')
        checks.nonnegative('armature', self.armature, 'kg·m²')

    @property
    def lag_ms(self) -> float:
        """Effective lag of servo and loop, (kv + damping) / kp, ms.

        For a stiff, overdamped servo (armature small against the damping), ``I q̈ ≈ 0`` leaves
        ``(kv + damping) q̇ = kp (u - q)``: a first-order lag with this time constant.
        """
        return 1e3 * (self.kv + self.damping) / self.kp

    @property
    def saturation_deg(self) -> float:
        """The error at which the spring alone reaches the clamp, forcerange / kp, degrees."""
        return math.degrees(self.forcerange / self.kp)

    def as_dict(self) -> dict[str, float]:
        """The six parameters by name."""
        return {name: float(getattr(self, name)) for name in PARAMS}

    def rounded(self, digits: int) -> 'ArmServo':
        """The same servo with every parameter rounded to ``digits`` significant digits."""
        return ArmServo(**{name: robust.round_sig(v, digits) for name, v in self.as_dict().items()})


PARAMS = ('kp', 'kv', 'forcerange', 'damping', 'frictionloss', 'armature')

MENAGERIE = ArmServo(kp=so101.MENAGERIE_KP, kv=so101.MENAGERIE_KV, forcerange=so101.MENAGERIE_FORCERANGE,
                     damping=so101.MENAGERIE_DAMPING, frictionloss=so101.MENAGERIE_FRICTIONLOSS,
                     armature=so101.MENAGERIE_ARMATURE)
"""MuJoCo Menagerie's ``sts3215`` class in ``robotstudio_so101/so101.xml``."""

THEROBOTSTUDIO = ArmServo(kp=17.8, kv=0.0, forcerange=3.35, damping=so101.MENAGERIE_DAMPING,
                          frictionloss=so101.MENAGERIE_FRICTIONLOSS, armature=so101.MENAGERIE_ARMATURE)
"""TheRobotStudio's own ``sts3215`` class (its joints carry the same damping, frictionloss, armature)."""

PUBLISHED_FIT = ArmServo(kp=108.18, kv=13.377, forcerange=3.478, damping=0.722, frictionloss=0.0183,
                         armature=0.2045)
"""A fit from another SO-101 rig."""

BASELINES = {'menagerie': MENAGERIE, 'therobotstudio': THEROBOTSTUDIO, 'published-fit': PUBLISHED_FIT}

# log10 bounds of the fit, in PARAMS order: wide enough to hold every baseline but kv = 0
LOG_BOUNDS = (np.array([0.0, -3.0, -0.5, -3.0, -4.0, -3.0]),
              np.array([3.5, 1.5, 1.0, 1.0, 0.0, 0.0]))


def to_log(servo: ArmServo) -> np.ndarray:
    """(6,) log10 of the parameters in ``PARAMS`` order, clipped into ``LOG_BOUNDS``."""
    values = np.array([getattr(servo, name) for name in PARAMS], dtype=float)
    with np.errstate(divide='ignore'):
        return np.clip(np.log10(values), *LOG_BOUNDS)


def from_log(x: np.ndarray) -> ArmServo:
    """The servo whose log10 parameters (``PARAMS`` order) are ``x``, shape (6,)."""
    if np.shape(x) != (len(PARAMS),):
        raise ValueError(f'x must be {len(PARAMS)} log10 parameters ({", ".join(PARAMS)}), got shape {np.shape(x)}')
    return ArmServo(**{name: float(10.0 ** v) for name, v in zip(PARAMS, np.ravel(x))})


# --------------------------------------------------------------------------------------------------
# The replay
# --------------------------------------------------------------------------------------------------

INTEGRATORS = checks.INTEGRATORS


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplayConfig:
    """How the arm is simulated during a replay."""

    timestep: float = 0.005
    """Requested physics step, s, in (0, 0.1]; rounded so a whole number of steps fills a frame."""
    integrator: str = 'implicitfast'
    """One of ``INTEGRATORS``; ``<option integrator>``."""
    contacts: bool = False
    """Collisions (off: the collision boxes overlap in the folded rest pose)."""
    limits: bool = True
    """Joint limits and ctrlrange clamping as in the model (False turns both off)."""

    def __post_init__(self):
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)
        for name in ('contacts', 'limits'):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f'{name} must be True or False, got {getattr(self, name)!r}')

    def substeps(self, fps: float) -> int:
        """Physics steps per frame, round(1 / (fps * timestep)), at least 1 (fps > 0)."""
        checks.positive('fps', fps, 'frames/s')
        if fps * self.timestep * mj.MAX_STEPS < 1:
            raise ValueError(f'fps must be >= {1.0 / (mj.MAX_STEPS * self.timestep):.6g} frames/s at timestep '
                             f'{self.timestep:g} s (at most {mj.MAX_STEPS:,} physics steps per frame), got {fps!r}')
        return max(1, round(1.0 / (fps * self.timestep)))


@functools.cache
def slim_arm() -> mujoco.MjModel:
    """``load_so101()`` without its meshes: the same dynamics at a fraction of the copy cost.

    The mesh data make up most of the compiled model, so copying it (once per candidate) and handing it
    to a Batch would dominate the fit. Every body's mass and inertia are frozen from the full model
    first (a visual mesh gives the camera mount its mass), then the mesh geoms and meshes are dropped;
    the primitive geoms left are the collision boxes, which a replay or hold with contacts on needs (with
    contacts off the replay runs the same arm without any geom).
    ``tests/test_replay.py`` checks the mass matrix and gravity against ``load_so101()``.
    """
    return _frozen_arm(primitives=True)


@functools.cache
def _bare_arm(history: int = 0) -> mujoco.MjModel:
    """:func:`slim_arm` without any geom or site: what a replay with contacts off simulates.

    With contacts off no geom takes part in the physics (every body's inertia is explicit), yet every
    ``mj_step`` still places each geom and site; without them a replay costs about a tenth less and
    gives the same bits (``tests/test_sysid.py`` compares them). ``history > 0`` gives every actuator a ring
    buffer of that many ``ctrl`` samples (``<general nsample interp="linear">``), which a command delay
    (``actuator_delay``, :mod:`physai.engine.servo_models`) reads from.
    """
    return _frozen_arm(primitives=False, history=history)


def _frozen_arm(*, primitives: bool, history: int = 0) -> mujoco.MjModel:
    import mujoco_menagerie

    full = load_so101()  # also points mujoco_menagerie at the offline copy when there is one
    spec = mujoco_menagerie.get('robotstudio_so101').spec('so101')
    freeze_inertia(spec, full, [body for body in spec.bodies if body.name != 'world'])
    for geom in list(spec.geoms):
        if geom.type == mujoco.mjtGeom.mjGEOM_MESH or not primitives:
            spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    if not primitives:
        for site in list(spec.sites):
            spec.delete(site)
    for actuator in spec.actuators if history else ():
        actuator.nsample = history
        actuator.interp = INTERP_LINEAR
    return spec.compile()


INTERP_LINEAR = 1
"""``mj_readCtrl``'s linear interpolation (0: zero-order hold, 2: cubic): a delayed command read between two samples
of the history buffer, so that the replay is a continuous function of the delay."""


def arm_model(servo: ArmServo, config: ReplayConfig = ReplayConfig(), *, fps: float = 30.0
              ) -> mujoco.MjModel:
    """The SO-101 with ``servo`` on every joint, set up for replay at ``fps`` frames per second."""
    return _servo_arm(slim_arm(), servo, config, fps)


def _servo_arm(arm: mujoco.MjModel, servo: ArmServo, config: ReplayConfig, fps: float) -> mujoco.MjModel:
    """A copy of ``arm`` set up as :func:`arm_model` says."""
    m = copy.copy(arm)
    mj.set_position_servo(m, servo.kp, servo.kv, servo.forcerange)
    m.dof_damping[:] = servo.damping
    m.dof_frictionloss[:] = servo.frictionloss
    m.opt.timestep = 1.0 / (fps * config.substeps(fps))
    m.opt.integrator = mj.INTEGRATOR_ENUM[config.integrator]
    if not config.contacts:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    if not config.limits:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT
        m.actuator_ctrllimited[:] = 0
    mj.set_armature(m, servo.armature)
    return m


def arm_columns(joints: Sequence[str]) -> list[int]:
    """The column of each of the five arm joints (``ARM_JOINTS`` order) in a dataset's ``joints``."""
    return [list(joints).index(j) for j in ARM_JOINTS]


def to_radians(values: np.ndarray, joints: Sequence[str]) -> np.ndarray:
    """Dataset joint values as model qpos, (nframe, 6) in ``JOINTS`` order.

    Arm joints: ``deg2rad(degrees)``, sign +1, offset 0. Gripper: 0..100 mapped linearly onto the model's
    gripper range; held at the bottom of the range if the dataset has no gripper column. A NaN value stays NaN.

    Args:
      values: (nframe, njoint) or one frame (njoint,), the dataset's units.
      joints: (njoint,) the joint name of each column, each at most once.

    Raises:
      ValueError: ``joints`` not distinct joint names, an arm joint missing, or ``values`` not numbers of shape
        (nframe, len(joints)).
    """
    if (isinstance(joints, (str, bytes)) or not isinstance(joints, Sequence | np.ndarray)
            or not all(isinstance(j, str) for j in joints)):
        raise ValueError(f'joints must be a sequence of joint names, got {joints!r}')
    if len(set(joints)) != len(joints):
        raise ValueError(f'joints must name each joint once, got {list(joints)!r}')
    try:
        values = np.atleast_2d(np.asarray(values, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f'values must be numbers, (nframe, {len(joints)}), got {values!r}') from None
    if values.ndim != 2 or values.shape[1] != len(joints):
        raise ValueError(f'values must have one column per joint, (nframe, {len(joints)}), got shape '
                         f'{np.shape(values)}')
    missing = [j for j in ARM_JOINTS if j not in joints]
    if missing:
        raise ValueError(f'the episode lacks the arm joints {missing}; it has {", ".join(joints)}')
    lo, hi = slim_arm().jnt_range[JOINTS.index('gripper')]
    q = np.full((len(values), len(JOINTS)), lo)
    for i, name in enumerate(JOINTS):
        if name in joints:
            column = values[:, list(joints).index(name)]
            q[:, i] = np.deg2rad(column) if name != 'gripper' else lo + column / 100.0 * (hi - lo)
    return q


CHATTER_DEG = 1.0
"""deg: a replay whose median frame-to-frame second difference exceeds this on any joint chatters (the real arm's
is 0.0°, a replay that tracks it stays below 0.1°)."""


@dataclasses.dataclass(frozen=True)
class Replay:
    """One episode replayed open loop with one servo model; angles in degrees."""

    servo: ArmServo
    episode: int
    """``episode_index`` of the recording."""
    t: np.ndarray
    """(nframe,) time, s."""
    real_deg: np.ndarray
    """(nframe, 5) measured arm joints, ``observation.state``."""
    sim_deg: np.ndarray
    """(nframe, 5) simulated arm joints; frame 0 is the shared start."""
    action_deg: np.ndarray
    """(nframe, 5) the commands fed to the servo."""
    diverged: bool
    """MuJoCo raised a warning (a bad acceleration, say) and the simulation stopped there."""

    @property
    def error_deg(self) -> np.ndarray:
        """(nframe - 1, 5) |sim - real| over frames 1..n-1."""
        return np.abs(self.sim_deg[1:] - self.real_deg[1:])

    @property
    def mae_deg(self) -> float:
        """Mean absolute error over frames 1..n-1 and the five arm joints, degrees."""
        return float(self.error_deg.mean())

    @property
    def joint_mae_deg(self) -> np.ndarray:
        """(5,) mean absolute error per arm joint, degrees."""
        return self.error_deg.mean(axis=0)

    @property
    def chatter_deg(self) -> float:
        """How hard the simulated joints rattle: the largest, over the arm joints, of the median |second
        difference| of the simulated angle from frame to frame, degrees (0 for a smooth replay).

        A servo tracking the recording moves smoothly at 30 fps (the fitted one: 0.00°); one that flips sides
        every frame has a second difference of twice its swing (kp 30000 at armature 0, 20 ms, Euler: about 6°).
        """
        if len(self.sim_deg) < 3 or not np.all(np.isfinite(self.sim_deg)):
            return math.nan
        return float(np.max(np.median(np.abs(np.diff(self.sim_deg, 2, axis=0)), axis=0)))

    @property
    def chatters(self) -> bool:
        """Not diverged, but the simulated joints rattle: :attr:`chatter_deg` above ``CHATTER_DEG``."""
        return not self.diverged and self.chatter_deg > CHATTER_DEG


def replay(servos: Sequence[ArmServo], episodes: Sequence[Episode], *,
           config: ReplayConfig = ReplayConfig(), nthread: int = 0,
           offsets: Sequence[float] | None = None) -> list[list[Replay]]:
    """Replay every episode with every servo model, all at once on ``mujoco.batch.Batch``.

    Episodes of different lengths share one rollout: the shorter ones hold their last action, and the
    extra frames are dropped.

    Args:
      servos: the servo models, (nservo,).
      episodes: the recordings, (nepisode,); all at one fps.
      config: timestep, integrator, contacts, limits.
      nthread: Batch threads (0: all CPUs).
      offsets: (nservo,) rad added to every joint of servo i's starts (default none): an ensemble of runs
        from slightly different starts, for a replay whose motion is chaotic (:func:`replay_ensemble`).

    Returns:
      ``result[i][j]``: servo i on episode j.

    Raises:
      TypeError: ``servos``, ``episodes`` or ``config`` of the wrong type.
      ValueError: an episode with fewer than 2 frames or a non-finite action or state, episodes at different fps,
        more than ``mj.MAX_STEPS`` physics steps per run or ``mj.MAX_TOTAL_STEPS`` in all, ``nthread`` not a whole
        number >= 0, or bad ``offsets``.
    """
    servos, episodes = _items('servos', servos, ArmServo), _items('episodes', episodes, Episode)
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    if not (isinstance(nthread, numbers.Integral) and not isinstance(nthread, bool) and nthread >= 0):
        raise ValueError(f'nthread must be a whole number >= 0 (0: all CPUs), got {nthread!r}')
    if not servos or not episodes:
        return [[] for _ in servos]
    steps = _replay_steps(episodes, config)
    if steps * len(servos) * len(episodes) > mj.MAX_TOTAL_STEPS:
        raise ValueError(f'servos x episodes must take at most {mj.MAX_TOTAL_STEPS:,} physics steps in all, got '
                         f'{len(servos)} x {len(episodes)} runs of {steps:,} steps')
    if offsets is not None:
        offsets = np.asarray(offsets, dtype=float)
        if offsets.shape != (len(servos),) or not np.all(np.isfinite(offsets)):
            raise ValueError(f'offsets must be {len(servos)} finite numbers (one per servo), got {offsets!r}')
        offsets = np.repeat(offsets, len(episodes))
    runs = _replay_runs([s for s in servos for _ in episodes], episodes * len(servos), config, nthread, offsets)
    return [runs[i * len(episodes):(i + 1) * len(episodes)] for i in range(len(servos))]


def _replay_steps(episodes: Sequence[Episode], config: ReplayConfig) -> int:
    """The physics steps of one replay of ``episodes`` (the longest), after checking they can be replayed together.

    Raises:
      ValueError: an episode with fewer than 2 frames or a non-finite action or state, episodes at different fps,
        or more than ``mj.MAX_STEPS`` steps.
    """
    short = [e.index for e in episodes if e.nframe < 2]
    if short:
        raise ValueError(f'episodes must have at least 2 frames to replay, got episodes {short}')
    for e in episodes:  # MuJoCo would zero a NaN ctrl and carry on: a replay of something else
        for name in ('action', 'state'):
            if not np.all(np.isfinite(getattr(e, name))):
                raise ValueError(f'episode {e.index} {name} must be finite, got a non-finite value in frame '
                                 f'{int(np.argmin(np.all(np.isfinite(getattr(e, name)), axis=1)))}')
    fps = episodes[0].fps
    if any(e.fps != fps for e in episodes):
        raise ValueError(f'episodes must share one fps, got {sorted({e.fps for e in episodes})}')
    sub = config.substeps(fps)
    steps = (max(e.nframe for e in episodes) - 1) * sub
    if steps > mj.MAX_STEPS:
        raise ValueError(f'a replay must take at most {mj.MAX_STEPS:,} physics steps, got {steps:,} '
                         f'({sub} per frame at timestep {config.timestep:g} s): use a longer timestep or shorter '
                         f'episodes')
    return steps


@mj.captured_warnings()
def _replay_runs(servos: Sequence[ArmServo], episodes: Sequence[Episode], config: ReplayConfig, nthread: int,
                 offsets: np.ndarray | None = None) -> list[Replay]:
    """Simulation k replays ``episodes[k]`` with ``servos[k]`` (starts moved by ``offsets[k]`` rad), all in one Batch.

    The runs need not form a grid: :func:`fit_servos` batches the candidates of several fits, each on its own
    episodes. ``mujoco.batch`` repeats ``mj_step`` bit for bit at any thread count, so a run gives the same bits
    whatever it is batched with. The arguments are checked by the callers (:func:`_replay_steps`).
    """
    fps = episodes[0].fps
    models = {}
    base = slim_arm() if config.contacts else _bare_arm()
    for s in servos:  # equal servos share one model
        if s not in models:
            models[s] = _servo_arm(base, s, config, fps)
    qpos, warned = rollout([models[s] for s in servos], episodes, config.substeps(fps), nthread=nthread,
                           offsets=offsets)
    return replays(servos, episodes, qpos, warned)


def replays(models: Sequence, episodes: Sequence[Episode], qpos: np.ndarray, warned: np.ndarray) -> list[Replay]:
    """:class:`Replay` k of ``models[k]`` on ``episodes[k]`` from :func:`rollout`'s ``qpos`` and ``warned``."""
    fps = episodes[0].fps
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    runs = []
    for k, (s, e) in enumerate(zip(models, episodes)):
        cols = arm_columns(e.joints)
        runs.append(Replay(servo=s, episode=e.index, t=np.arange(e.nframe) / fps, real_deg=e.state[:, cols],
                           sim_deg=np.rad2deg(qpos[k, :e.nframe][:, arm]), action_deg=e.action[:, cols],
                           diverged=mj.diverged(qpos[k, :e.nframe], warned=bool(warned[k]))))
    return runs


def rollout(models: Sequence[mujoco.MjModel], episodes: Sequence[Episode], substeps: int, *, nthread: int = 0,
            offsets: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Simulation k runs ``models[k]`` open loop on ``episodes[k]``'s commands, all in one ``mujoco.batch.Batch``.

    Each starts at its episode's first ``observation.state`` (moved by ``offsets[k]`` rad, then nudged by
    ``perturb``), and holds frame t's action for ``substeps`` physics steps; a shorter episode holds its last action
    to the end of the longest. The models must share one MjData layout (``Batch.set_models``). A model with a ``ctrl``
    history (``nhistory > 0``, a command delay) starts with every sample of its buffer at the first command, as if
    the arm had been told to stay where it starts for as long as the buffer reaches back.

    Returns:
      ``qpos`` (nsim, nframe_max, nq) at frame 0 (the start) and at the end of every frame, and ``warned`` (nsim,),
      True where MuJoCo raised a warning (the run stopped there).
    """
    nframe = max(e.nframe for e in episodes)
    commands, starts = {}, []
    for e in episodes:
        if id(e) not in commands:
            u = to_radians(e.action, e.joints)
            # frame t's action is held for the substeps physics steps that lead to frame t+1
            u = np.concatenate([u, np.repeat(u[-1:], nframe - e.nframe, axis=0)])[:nframe - 1]
            commands[id(e)] = (np.repeat(u, substeps, axis=0), to_radians(e.state[:1], e.joints)[0])
        starts.append(commands[id(e)][1])
    batch = mujoco.batch.Batch(models[0], len(models), nthread=nthread)
    batch.set_models(list(models))
    batch.reset()
    starts = np.stack(starts)
    if offsets is not None:
        starts = starts + np.asarray(offsets, dtype=float)[:, None]
    batch.qpos[:] = starts
    perturb.nudge(batch.qpos)
    starts = batch.qpos.copy()  # frame 0 is the state the simulation started from
    control = np.stack([commands[id(e)][0] for e in episodes])
    if models[0].nhistory:
        _fill_history(batch, models[0], control[:, 0])
    batch.forward()
    out = batch.rollout((nframe - 1) * substeps, control=control, record=('qpos',))
    qpos = np.concatenate([starts[:, None], out['qpos'][:, substeps - 1::substeps]], axis=1)
    return qpos, mj.warned(batch)


def _fill_history(batch: mujoco.batch.Batch, m: mujoco.MjModel, first: np.ndarray) -> None:
    """Set every sample of every actuator's ``ctrl`` history to ``first[k, actuator]`` in simulation k.

    Each actuator's slice of ``mjData.history`` is two header numbers, then its ``nsample`` timestamps, then the
    samples (``actuator_history[a] = (nsample, dimension)``, one dimension for a scalar ``ctrl``); ``Batch.reset``
    has already written the timestamps of a buffer that reaches back before time 0.
    """
    history = batch.bind('history')
    for a in range(m.nu):
        nsample, dim = m.actuator_history[a]
        if nsample:
            start = m.actuator_historyadr[a] + 2 + nsample
            history[:, start:start + nsample * dim] = np.repeat(first[:, a:a + 1], nsample * dim, axis=1)


def _items(name: str, values, kind: type) -> list:
    """``values`` as a list whose every item is a ``kind``, or a TypeError naming the first that is not."""
    if isinstance(values, kind) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f'{name} must be a sequence of {kind.__name__}, got {type(values).__name__}')
    values = list(values)
    for i, v in enumerate(values):
        if not isinstance(v, kind):
            raise TypeError(f'{name}[{i}] must be {"an" if kind.__name__[0] in "AEIOU" else "a"} {kind.__name__}, '
                            f'got {type(v).__name__}')
    return values


ENSEMBLE_OFFSETS = tuple(k * 1e-9 for k in range(8))
"""rad: the starts of :func:`replay_ensemble`, 0 to 7e-9 rad from the recorded one."""


def replay_ensemble(servo: ArmServo, episodes: Sequence[Episode], *, config: ReplayConfig = ReplayConfig(),
                    offsets: Sequence[float] = ENSEMBLE_OFFSETS) -> list[list[Replay]]:
    """``servo`` replayed from each start in ``offsets`` (rad added to every joint), all in one batch.

    A replay whose motion is chaotic (a stiff, force-clamped servo at one physics step per frame, say) grows a
    difference in the last bits into a visible one, so any one run is one draw from a distribution: report a
    summary over the ensemble (``robust.ensemble``), never one run.

    Returns:
      ``result[k][j]``: the run from ``offsets[k]`` on episode j.
    """
    return replay([servo] * len(offsets), episodes, config=config, offsets=offsets)


def mae_deg(replays: Sequence[Replay]) -> float:
    """Mean absolute error over several replays, every frame weighted alike, degrees."""
    return float(np.concatenate([r.error_deg for r in replays]).mean())


def joint_mae_deg(replays: Sequence[Replay]) -> np.ndarray:
    """(5,) per-joint mean absolute error over several replays, degrees."""
    return np.concatenate([r.error_deg for r in replays]).mean(axis=0)


# --------------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FitStart:
    """One start of the fit and where it ended."""

    name: str
    start: ArmServo
    servo: ArmServo
    """The fitted servo."""
    cost: float
    """Final ½·mean squared residual, deg²."""
    iterations: int
    objectives: np.ndarray
    """(iterations + 1,) the cost at each iterate."""
    max_iter: int
    """The cap on iterations this start ran under."""

    @property
    def converged(self) -> bool:
        """The solver's own tolerances, or the ``FTOL`` stop, ended it before the ``max_iter`` cap."""
        return self.iterations < self.max_iter


@dataclasses.dataclass(frozen=True)
class FitResult:
    """The outcome of :func:`fit_servo`."""

    servo: ArmServo
    """The kept start's fitted servo, rounded to ``FIT_DIGITS`` significant digits: the book's fitted servo."""
    starts: tuple[FitStart, ...]
    evaluations: int
    """Candidate replays run (each candidate on every fit episode); depends on the solver's path, so it is
    never printed in checked outputs."""
    seconds: float
    """Wall time of the fit, s (varies from run to run; never printed in checked outputs)."""
    kept: str = ''
    """The name of the kept start (see :func:`fit_servo`)."""


def residuals(x: np.ndarray, episodes: Sequence[Episode], *, config: ReplayConfig = ReplayConfig(),
              decimate: int = 1) -> np.ndarray:
    """Per-frame residuals of candidates, the function ``least_squares`` minimises.

    Args:
      x: (6,) or (6, ncand) log10 parameters in ``PARAMS`` order.
      episodes: the fit episodes.
      config: replay settings.
      decimate: use every ``decimate``-th frame (1: all).

    Returns:
      (nres, ncand) ``(sim - real) / sqrt(nres)`` in degrees over frames 1, 1 + decimate, ... and the
      five arm joints, so ``0.5 * sum(r**2)`` is half the mean squared error.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim not in (1, 2) or x.shape[0] != len(PARAMS) or x.size == 0:
        raise ValueError(f'x must be (6,) or (6, ncand) log10 parameters, got shape {x.shape}')
    if not (isinstance(decimate, numbers.Integral) and not isinstance(decimate, bool) and decimate >= 1):
        raise ValueError(f'decimate must be a whole number >= 1, got {decimate!r}')
    x = x.reshape(len(PARAMS), -1)
    runs = replay([from_log(c) for c in x.T], episodes, config=config)
    cols = []
    for row in runs:
        r = np.concatenate([(rep.sim_deg[1::decimate] - rep.real_deg[1::decimate]).ravel()
                            for rep in row])
        cols.append(r)
    r = np.stack(cols, axis=1)
    return r / math.sqrt(r.shape[0])


def _progress(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=True, ncols=80)


FIT_DIGITS = 3
"""Significant digits of the fitted servo the book uses (:attr:`FitResult.servo`).

The kept start's end point moves by less than 1e-6 (relative) when the last bits of the replays change
(``tests/test_sysid.py`` nudges it), so three digits are fixed on any processor, and every replay, table
and figure made with the rounded servo is a smooth function of fixed inputs. More would claim more than the
data hold: the leave-one-out fits differ in the third digit of the lag and in the first or second of every
parameter."""

COST_TIE = 0.01
"""Starts whose final costs lie within this fraction of the lowest are a tie (see :func:`fit_servo`)."""

SOLVER = dict(x_scale='jac', mu_min=1e-3, mu_max=1e4, mu_factor=10.0 ** 0.5)
"""The Levenberg-Marquardt schedule of every fit (``mujoco.minimize.least_squares`` keywords).

``x_scale='jac'`` is Marquardt's scaling: each parameter is measured in units of its own column of the Jacobian,
so the regulariser mu is relative to that parameter's curvature, 1 meaning a step about half the Gauss-Newton
one, whatever the units of the residuals. That lets one range serve every problem: mu never below 1e-3 (below
that the step is Gauss-Newton's anyway, and the solver then uses mu = 0), at most 1e4 (a step 10^-4 of the
gradient's, below what the finite differences resolve), raised by 10^0.5 per rejected trial step. The solver's
own defaults (mu from 1e-6 to 1e8 on the raw Hessian, raised by 10^0.1) spent about half of the 747 replays of
chapter 4's fit on rejected trial steps, creeping up to the mu the problem needs, up to 58 in a row; with this
schedule and ``FTOL`` the fit takes 265."""

FTOL = 1e-3
"""A start stops when an iteration lowers the cost by less than this fraction of it (0.1 %, a change of 0.05 % in
the root-mean-square error): the flat valley of the fit (the kv/damping split) otherwise takes tens of iterations
that each lower the cost by parts in 10^4 or 10^5 and move the servo along the valley. Chosen on the fit episodes'
cost alone: chapter 4's fit stops after 10 iterations at a cost of 0.6100 deg²; with no such stop it takes 25, and
its 91 evaluations of the residuals become 207, to reach 0.6094 (0.1 % lower), kp from 7.96 to 7.97, kv and the
joint damping moved along the valley (0.733 and 0.135 to 0.781 and 0.087)."""


class _Flat(Exception):
    """Raised from the iteration callback to stop a solver whose last iteration lowered the cost by < ``FTOL``."""


def least_squares(x0: np.ndarray, residual, *, bounds: tuple[np.ndarray, np.ndarray], eps: float, max_iter: int,
                  ftol: float = FTOL, on_iter=None) -> tuple[np.ndarray, list]:
    """``mujoco.minimize.least_squares`` with the fit's schedule (``SOLVER``) and its relative-decrease stop.

    Runs until the solver's own tolerances stop it, or until an iteration lowers the cost by less than ``ftol``
    of it; that iteration's step is then not taken (it gained less than ``ftol``). ``ftol = 0`` leaves only the
    solver's tolerances.

    Args:
      x0: (n,) start; residual: (n,) or (n, ncand) -> (nres, ncand); bounds, eps, max_iter: as
        ``least_squares``; ftol: the relative-decrease stop (default ``FTOL``); on_iter: called with the trace
        after each iteration, before the stop is checked.

    Returns:
      The end point, (n,), and the trace, whose last entry is the end point and its cost; ``len(trace) - 1``
      iterations were taken.
    """
    trace = []

    def callback(logs):
        trace[:] = logs
        if on_iter is not None:
            on_iter(logs)
        if logs[-1].reduction < ftol * logs[-1].objective:  # also the solver's own last entry (reduction 0)
            raise _Flat

    try:
        x, trace = mujoco.minimize.least_squares(x0, residual, bounds=bounds, eps=eps, max_iter=max_iter,
                                                 verbose=mujoco.minimize.Verbosity.SILENT, iter_callback=callback,
                                                 **SOLVER)
    except _Flat:
        x = np.ravel(trace[-1].candidate).copy()
    return np.ravel(x), list(trace)


def fit_servo(episodes: Sequence[Episode], *, starts: dict[str, ArmServo] | None = None,
              config: ReplayConfig = ReplayConfig(), max_iter: int = 50, decimate: int = 1,
              eps: float = 1e-3, ftol: float = FTOL, digits: int = FIT_DIGITS, progress: bool = True) -> FitResult:
    """Fit one :class:`ArmServo` to recorded episodes with ``mujoco.minimize.least_squares``.

    The six parameters are fitted as log10 values inside ``LOG_BOUNDS``. Each start runs
    Levenberg-Marquardt iterations (:func:`least_squares`: the schedule ``SOLVER``) until ``least_squares``'s
    own tolerances stop it (its default ``xtol`` on the step and ``gtol`` on the free gradient, or no step that
    lowers the cost) or an iteration lowers the cost by less than ``FTOL`` of it, at most ``max_iter`` of them.
    The fit is deterministic however many iterations it takes: every replay is (``mujoco.batch`` repeats
    ``mj_step`` bit for bit) and so is the solver. A start that hits the cap is reported
    (``FitStart.converged``), not hidden. The starts run side by side (:func:`fit_servos`): whatever each asks
    for at a time, the six probes of a Jacobian or one trial step, is replayed in one batch with what the others
    ask for, and each start takes exactly the path it would take alone.

    Which start is kept: the one with the lowest cost, except that costs within ``COST_TIE`` (1 %) of the
    lowest are a tie, which goes to the softest start (the lowest start kp). On the book's recording the two
    default starts end within 0.2 % of each other in cost, in one flat valley along the kv/damping split, so
    which is lower is no finding. Nor is it reproducible: from Menagerie's stiff, force-clamped gains the
    first iterations amplify a difference in the last bits about tenfold per iteration, so where that start
    stops along the valley changes with the processor (``PHYSAI_PERTURB`` shows it), while TheRobotStudio's
    soft start lands on the same point to better than 1e-6. The kept servo is rounded to ``digits``
    significant digits.

    Args:
      episodes: the fit episodes.
      starts: named initial servos; default the two disputed models, Menagerie's and TheRobotStudio's
        gains, a factor 56 apart in kp (kv = 0 starts at the lower bound of kv).
      config: replay settings.
      max_iter: the most iterations per start; a cap, not a target. On the book's recording both
        default starts stop by themselves well before 50.
      decimate: residuals at every ``decimate``-th frame. The simulation still runs every step (the
        replay is open loop), so this only shrinks the least-squares algebra, which is cheap anyway.
      eps: finite-difference step in log10 units (0.1 % of a decade); far above the constraint
        solver's tolerance, which MuJoCo's default (√machine-ε) is not.
      ftol: stop a start at an iteration that lowers the cost by less than this fraction of it (``FTOL``;
        0: only the solver's own tolerances stop it, which a fit started at another fit's end needs, so that it
        travels along a flat valley as far as its own data pull it, see :func:`least_squares`).
      digits: significant digits of the returned servo (``FitStart.servo`` keeps every digit).
      progress: a tqdm bar on stderr.

    Returns:
      The kept start's servo, rounded, and every start's outcome.
    """
    return fit_servos([episodes], starts=starts, config=config, max_iter=max_iter, decimate=decimate, eps=eps,
                      ftol=ftol, digits=digits, progress=progress)[0]


def fit_servos(problems: Sequence[Sequence[Episode]], *, starts: dict[str, ArmServo] | None = None,
               config: ReplayConfig = ReplayConfig(), max_iter: int = 50, decimate: int = 1,
               eps: float = 1e-3, ftol: float = FTOL, digits: int = FIT_DIGITS, progress: bool = True
               ) -> list[FitResult]:
    """:func:`fit_servo` on several sets of episodes at once (leave-one-out's folds, say), every start of each.

    Each start of each set is one ``least_squares`` solver in a thread of its own; whenever every solver still
    running waits for residuals, all their candidates (each on its own set's episodes) are replayed in one
    ``mujoco.batch`` call (:class:`_Lockstep`). A replay gives the same bits whatever it is batched with, so each
    result equals :func:`fit_servo` on that set alone, bit for bit; batching only keeps every thread busy (a
    trial step alone is three simulations for all the CPUs).

    Args:
      problems: the episode sets, one fit each.
      starts, config, max_iter, decimate, eps, ftol, digits, progress: as :func:`fit_servo`, for every set; the bar
        counts the iterations of all the solvers.

    Returns:
      One :class:`FitResult` per set, in order (``seconds`` is the wall time of the whole batched run).
    """
    if starts is None:
        starts = {'menagerie': MENAGERIE, 'therobotstudio': THEROBOTSTUDIO}
    if not isinstance(starts, dict) or not starts or not all(isinstance(v, ArmServo) for v in starts.values()):
        raise ValueError(f'starts must map at least one name to an ArmServo, got {starts!r}')
    if isinstance(problems, Episode) or not isinstance(problems, Sequence) or not problems:
        raise ValueError(f'problems must be one or more sequences of episodes, got {problems!r}')
    problems = [_items('episodes', episodes, Episode) for episodes in problems]
    if not all(problems):
        raise ValueError('episodes must hold at least one episode to fit, got none')
    if not isinstance(max_iter, int) or isinstance(max_iter, bool) or max_iter < 1:
        raise ValueError(f'max_iter must be an integer >= 1, got {max_iter!r}')
    if not (isinstance(digits, int) and not isinstance(digits, bool) and digits >= 1):
        raise ValueError(f'digits must be an integer >= 1, got {digits!r}')
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    if not (isinstance(decimate, numbers.Integral) and not isinstance(decimate, bool) and decimate >= 1):
        raise ValueError(f'decimate must be a whole number >= 1, got {decimate!r}')
    checks.positive('eps', eps, 'log10 units')
    checks.nonnegative('ftol', ftol, '(a fraction of the cost)')
    rates = sorted({e.fps for episodes in problems for e in episodes})
    if len(rates) > 1:
        raise ValueError(f'episodes must share one fps, got {rates}')
    for episodes in problems:
        if _replay_steps(episodes, config) * len(PARAMS) * len(starts) * len(episodes) * len(problems) \
                > mj.MAX_TOTAL_STEPS:
            raise ValueError(f'a fit of {len(problems)} x {len(episodes)} episodes from {len(starts)} starts would '
                             f'batch more than {mj.MAX_TOTAL_STEPS:,} physics steps at once')
    lockstep = _Lockstep(config, decimate)
    bar = _progress(len(problems) * len(starts) * max_iter, 'fitting', progress)
    if bar is not None and len(problems) * len(starts) > 1:
        bar.set_postfix_str(f'{len(problems) * len(starts)} starts side by side')
    bar_lock = threading.Lock()

    def solve(problem: int, name: str, start: ArmServo) -> FitStart:
        counted = 0

        def on_iter(trace):
            nonlocal counted
            if bar is not None and len(trace) <= max_iter:
                with bar_lock:
                    bar.update(1)
                counted += 1

        x, trace = least_squares(to_log(start), lockstep.residual(problem, problems[problem]), bounds=LOG_BOUNDS,
                                 eps=eps, max_iter=max_iter, ftol=ftol, on_iter=on_iter)
        if bar is not None:  # a start that stopped early still fills its share of the bar
            with bar_lock:
                bar.update(max_iter - counted)
        objectives = np.array([float(log.objective) for log in trace])
        return FitStart(name=name, start=start, servo=from_log(x), cost=float(objectives[-1]),
                        iterations=len(trace) - 1, objectives=objectives, max_iter=max_iter)

    t0 = time.perf_counter()
    try:
        outcomes = lockstep.run([functools.partial(solve, p, name, start)
                                 for p in range(len(problems)) for name, start in starts.items()])
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    results = []
    for p in range(len(problems)):
        mine = outcomes[p * len(starts):(p + 1) * len(starts)]
        kept = kept_start(mine)
        results.append(FitResult(servo=kept.servo.rounded(digits), starts=tuple(mine),
                                 evaluations=lockstep.evaluations[p], seconds=seconds, kept=kept.name))
    return results


class _Lockstep:
    """Several ``least_squares`` solvers, each in a thread of its own, whose residuals are replayed together.

    A solver's residual call waits until every solver still running waits on one too (or has finished); then the
    candidates of all of them, each on its own episodes, are replayed in one batch (:func:`_replay_runs`) and
    every solver gets its columns, computed as :func:`residuals` computes them. What a solver gets does not depend
    on what it was batched with, so its path is the one it takes alone, however the threads are scheduled.
    """

    def __init__(self, config: ReplayConfig, decimate: int, nthread: int = 0, *, run=None):
        self.config, self.decimate, self.nthread = config, decimate, nthread
        self.run_models = run if run is not None else (
            lambda models, episodes: _replay_runs(models, episodes, config, nthread))
        """``run(models, episodes)``: run k replays ``episodes[k]`` with ``models[k]``, all in one batch (default
        :func:`_replay_runs` for :class:`ArmServo` models; :mod:`physai.engine.servo_models` passes its own)."""
        self.evaluations: dict[int, int] = {}
        """Candidates replayed per problem (each on every episode of the problem)."""
        self._cond = threading.Condition()
        self._asked: dict[object, tuple[np.ndarray, list[Episode]]] = {}
        self._answers: dict[object, np.ndarray | BaseException] = {}
        self._running = 0
        self._stopped = False

    def residual(self, problem: int, episodes: list[Episode], *, decode=from_log, nparam: int = len(PARAMS)):
        """The residual function of one solver of ``problem`` on ``episodes``: (nparam,) or (nparam, ncand) ->
        (nres, ncand), each candidate column turned into the model ``run`` replays by ``decode`` (default
        :func:`from_log`: six log10 parameters to an :class:`ArmServo`)."""
        token = object()
        self.evaluations.setdefault(problem, 0)

        def evaluate(x: np.ndarray) -> np.ndarray:
            x = np.asarray(x, dtype=float)
            if x.ndim not in (1, 2) or x.shape[0] != nparam or x.size == 0:
                raise ValueError(f'x must be ({nparam},) or ({nparam}, ncand) parameters, got shape {x.shape}')
            x = x.reshape(nparam, -1)
            with self._cond:
                if self._stopped:
                    raise RuntimeError('the fit was stopped')
                self.evaluations[problem] += x.shape[1]
                self._asked[token] = (x, episodes, decode)
                self._cond.notify_all()
                while token not in self._answers:
                    self._cond.wait()
                answer = self._answers.pop(token)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return evaluate

    def run(self, jobs: Sequence) -> list:
        """Run every job (a function of no arguments that calls residual functions of this object) in a thread of
        its own, replaying what they ask for together; their return values in order, or the first job's error."""
        results, errors = [None] * len(jobs), [None] * len(jobs)

        def work(i):
            try:
                results[i] = jobs[i]()
            except BaseException as err:  # handed to the caller below
                errors[i] = err
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

        self._running = len(jobs)
        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(jobs))]
        for thread in threads:
            thread.start()
        try:
            while True:
                with self._cond:
                    while self._running and len(self._asked) < self._running:
                        self._cond.wait()
                    if not self._running:
                        break
                    asked, self._asked = self._asked, {}
                try:
                    answers = self._replay(asked)
                except Exception as err:  # bad input: every solver that asked raises it
                    answers = dict.fromkeys(asked, err)
                with self._cond:
                    self._answers.update(answers)
                    self._cond.notify_all()
        except BaseException:  # an interrupt: release the solvers, which then stop at their next call
            with self._cond:
                self._stopped = True
                self._answers.update(dict.fromkeys(self._asked, RuntimeError('the fit was stopped')))
                self._asked = {}
                self._cond.notify_all()
            raise
        for thread in threads:
            thread.join()
        for err in errors:
            if err is not None:
                raise err
        return results

    def _replay(self, asked: dict) -> dict:
        servos, episodes, spans = [], [], []
        for token, (x, eps, decode) in asked.items():
            spans.append((token, len(servos), x.shape[1], len(eps)))
            for column in x.T:
                servo = decode(column)
                servos += [servo] * len(eps)
                episodes += eps
        runs = self.run_models(servos, episodes)
        answers = {}
        for token, first, ncand, nep in spans:
            rows = [runs[first + i * nep:first + (i + 1) * nep] for i in range(ncand)]
            answers[token] = _residual_columns(rows, self.decimate)
        return answers


def _residual_columns(rows: Sequence[Sequence[Replay]], decimate: int) -> np.ndarray:
    """:func:`residuals` of replays already run: ``rows[i]`` candidate i on every fit episode; (nres, ncand)."""
    cols = [np.concatenate([(rep.sim_deg[1::decimate] - rep.real_deg[1::decimate]).ravel() for rep in row])
            for row in rows]
    r = np.stack(cols, axis=1)
    return r / math.sqrt(r.shape[0])


def kept_start(starts: Sequence[FitStart], *, tie: float = COST_TIE) -> FitStart:
    """The start :func:`fit_servo` keeps: the lowest cost, a tie within ``tie`` going to the lowest start kp."""
    lowest = min(s.cost for s in starts)
    return min((s for s in starts if s.cost <= lowest * (1 + tie)), key=lambda s: s.start.kp)


HIDDEN_SERVO = ArmServo(kp=12.0, kv=0.5, forcerange=2.5, damping=0.6, frictionloss=0.25, armature=0.05)
"""The servo behind :func:`synthetic_dataset` (a stand-in recording, used only when asked for)."""

REST_DEG = np.array([0.0, -98.0, 98.0, 75.0, -60.0, 2.0])
"""A folded rest pose like the recording's, degrees (gripper 0..100)."""

_POSE_LOW = np.array([-35.0, -95.0, 10.0, 30.0, -75.0, 0.0])
_POSE_HIGH = np.array([5.0, 10.0, 95.0, 85.0, -45.0, 40.0])

RESOLUTION_DEG = 360.0 / 4096
"""An STS3215 encoder count, degrees: the synthetic states are rounded to it."""


def synthetic_dataset(*, nepisode: int = 4, seconds: float = 12.0, fps: float = 30.0, seed: int = 0,
                      servo: ArmServo = HIDDEN_SERVO) -> LeRobotDataset:
    """A stand-in recording made by the simulated arm itself, for when no real one is at hand.

    Each episode starts folded at ``REST_DEG``, visits four random poses along minimum-jerk paths and
    folds up again; ``observation.state`` is the replay of those commands with ``servo``, rounded to
    encoder counts. A fit on it should find ``servo``'s lag again.
    """
    rng = np.random.default_rng(seed)
    n = round(seconds * fps)
    episodes = []
    for index in range(nepisode):
        poses = [REST_DEG] + [rng.uniform(_POSE_LOW, _POSE_HIGH) for _ in range(4)] + [REST_DEG]
        knots = np.linspace(0.0, 0.85, len(poses)) * n
        t = np.arange(n)
        action = np.empty((n, len(JOINTS)))
        for k in range(n):
            i = min(int(np.searchsorted(knots, t[k], side='right')) - 1, len(poses) - 2)
            s = np.clip((t[k] - knots[i]) / (knots[i + 1] - knots[i]), 0.0, 1.0)
            blend = 10 * s**3 - 15 * s**4 + 6 * s**5  # minimum jerk
            action[k] = poses[i] + blend * (poses[i + 1] - poses[i])
        episode = Episode(index=index, fps=fps, joints=JOINTS, action=action, state=action.copy(),
                          timestamp=t / fps)
        sim = replay([servo], [episode])[0][0].sim_deg
        state = action.copy()
        state[:, :len(ARM_JOINTS)] = np.round(sim / RESOLUTION_DEG) * RESOLUTION_DEG
        episodes.append(dataclasses.replace(episode, state=state))
    return LeRobotDataset(root=pathlib.Path('synthetic'), version='v3.0', fps=fps,
                          robot_type='so101_follower (simulated)', joints=JOINTS,
                          episodes=tuple(episodes))


# --------------------------------------------------------------------------------------------------
# Holding one recorded pose
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class PoseHold:
    """The arm commanded to stay at one pose, started there; angles in degrees, torques in N·m."""

    servo: ArmServo
    config: ReplayConfig
    pose_deg: np.ndarray
    """(5,) the arm joints' start and command, degrees."""
    final_deg: np.ndarray
    """(5,) the arm joints after ``seconds``, degrees."""
    actuator_force: np.ndarray
    """(5,) the arm actuators' force at the end, N·m (``d.actuator_force``)."""
    ncon: int
    """Contacts active at the end (``d.ncon``)."""

    @property
    def moved_deg(self) -> np.ndarray:
        """(5,) final minus start, degrees."""
        return self.final_deg - self.pose_deg


def hold_pose(servo: ArmServo, pose: np.ndarray, *, config: ReplayConfig = ReplayConfig(), seconds: float = 2.0,
              fps: float = 30.0) -> PoseHold:
    """Start the arm at ``pose`` with ``servo`` on every joint, command that same pose, and let it settle.

    Args:
      servo: the servo model.
      pose: (6,) qpos in ``JOINTS`` order, rad (``to_radians`` of a recorded frame); the start and the command.
      config: the replay settings (``contacts=True`` lets the collision geoms push).
      seconds: how long to simulate, s, in (0, 60].
      fps: frame rate whose substeps set the timestep, as in :func:`replay`.

    Raises:
      ValueError: ``pose`` not 6 finite numbers, ``seconds`` outside (0, 60], or what :func:`arm_model` refuses.
    """
    if not isinstance(servo, ArmServo):
        raise TypeError(f'servo must be an ArmServo, got {type(servo).__name__}')
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    try:
        q0 = np.asarray(pose, dtype=float)
    except (TypeError, ValueError):
        q0 = np.array([])
    if q0.shape != (len(JOINTS),) or not np.all(np.isfinite(q0)):
        raise ValueError(f'pose must be {len(JOINTS)} finite joint angles in rad ({", ".join(JOINTS)}), got {pose!r}')
    checks.positive('seconds', seconds, 's')
    if seconds > 60:
        raise ValueError(f'seconds must be in (0, 60] s, got {seconds!r}')
    m = arm_model(servo, config, fps=fps)
    d = mujoco.MjData(m)
    d.qpos[:] = q0
    perturb.nudge(d.qpos)
    d.ctrl[:] = q0
    mujoco.mj_forward(m, d)
    for _ in range(max(1, round(seconds / m.opt.timestep))):
        mujoco.mj_step(m, d)
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    return PoseHold(servo=servo, config=config, pose_deg=np.degrees(q0[arm]), final_deg=np.degrees(d.qpos[arm]),
                    actuator_force=d.actuator_force[arm].copy(), ncon=int(d.ncon))
