"""Chapter 4's replay: recorded SO-101 episodes played open loop on MuJoCo, with one servo model on every joint.

Open-loop replay
    Reset the simulated arm (``physai.engine.so101.load_so101()``) to an episode's first ``observation.state``,
    then feed the recorded ``action`` stream tick for tick: each frame's target is held in ``d.ctrl`` for
    the physics steps of one frame (``substeps = round(1 / (fps * timestep))``, and the timestep is
    adjusted to ``1 / (fps * substeps)`` so a whole number of steps fills a frame). The simulated joints
    at the end of frame t are compared with ``observation.state[t+1]``.

    Contacts are off: Menagerie's simple collision boxes overlap each other in the folded rest pose
    (``physai.experiments.servo_sysid.overlap_depth``), in which most of the recorded episodes start and end, so
    with contacts on the arm is pushed, wherever the boxes overlap, by contact forces the real arm never
    feels. Joint limits and the actuators' ctrlrange stay as the model ships them (``ReplayConfig.limits``);
    note that the model's elbow range, ±1.69 rad (±96.8°), ends where the shipped recording's folded elbow does:
    the follower folds to 96.5°, and the leader commands 96.9°.

Joint convention
    The episodes are in LeRobot's degrees (a recording in its -100..100 normalisation converted first:
    :mod:`physai.engine.lerobot_units`), each joint's zero in the middle of its calibrated range.
    radians = deg2rad(degrees), sign +1, offset 0 for the five arm joints: the gripper tip then comes
    down to the table plane and never far below it (``physai.experiments.servo_sysid.tip_height``; a flipped
    shoulder lift sends it through the table, a flipped elbow or wrist flex never lets it reach the table). The
    gripper's 0..100 is mapped linearly onto its joint range; it is simulated but never scored.

Score
    Mean absolute error in degrees of ``sim[t] - state[t]`` over frames 1..n-1 and the five arm joints
    (``mae_deg``), and per joint.

The servo model
    Every one of the six joints gets the same :class:`ArmServo`: MuJoCo's ``<position>`` actuator,
    ``force = clip(kp*(u - q) - kv*q̇, -forcerange, forcerange)`` (``actuator_gainprm[0] = kp``,
    ``actuator_biasprm[:3] = (0, -kp, -kv)``, ``actuator_forcerange``), on a joint with ``dof_damping``,
    ``dof_frictionloss`` and ``dof_armature``. kv acts inside the clamp and the joint damping outside it,
    so a saturated joint moves no faster than forcerange/damping (less what gravity takes), whatever kv.

Also here: ensembles of replays from nudged starts (:func:`replay_ensemble`), a synthetic stand-in recording for
when no real one is at hand (:func:`synthetic_dataset`), and the arm holding one recorded pose (:func:`hold_pose`).
The fit of the servo model to the replays is :mod:`physai.engine.sysid`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import numbers
import pathlib
from collections.abc import Sequence

import mujoco
import mujoco.batch
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
    return frozen_spec(primitives=primitives, history=history).compile()


def frozen_spec(*, primitives: bool, history: int = 0) -> mujoco.MjSpec:
    """The spec that :func:`slim_arm` (``primitives=True``) and :func:`_bare_arm` compile: every body's inertia
    frozen from the full model, the meshes (and, without primitives, every geom and site) removed; a fresh spec at
    every call, to edit (chapter 6 adds elements to it: :mod:`physai.engine.firmware`)."""
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
    return spec


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
    set_replay_options(m, config, fps)
    mj.set_armature(m, servo.armature)
    return m


def set_replay_options(m: mujoco.MjModel, config: ReplayConfig, fps: float) -> None:
    """Set ``m`` (in place) up for a replay at ``fps`` frames per second as ``config`` says: its timestep (the
    substeps per frame), its integrator, contacts and joint limits on or off (limits off also unclamps the controls)."""
    m.opt.timestep = 1.0 / (fps * config.substeps(fps))
    m.opt.integrator = mj.INTEGRATOR_ENUM[config.integrator]
    if not config.contacts:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    if not config.limits:
        m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT
        m.actuator_ctrllimited[:] = 0


def arm_columns(joints: Sequence[str]) -> list[int]:
    """The column of each of the five arm joints (``ARM_JOINTS`` order) in a dataset's ``joints``."""
    return [list(joints).index(j) for j in ARM_JOINTS]


def to_radians(values: np.ndarray, joints: Sequence[str]) -> np.ndarray:
    """Dataset joint values as model qpos, (nframe, 6) in ``JOINTS`` order.

    Arm joints: ``deg2rad(degrees)``, sign +1, offset 0 (LeRobot's degrees: a recording in its -100..100
    normalisation is converted first, :func:`physai.engine.lerobot_units.to_degrees`). Gripper: 0..100 mapped linearly onto the model's
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

    @property
    def teleport_deg(self) -> float:
        """The scale to read :attr:`mae_deg` against: the mean absolute error, over the same frames and joints, of a
        teleport that puts each joint exactly on the previous frame's command, |action[t-1] - real[t]|, degrees."""
        return float(np.abs(self.action_deg[:-1] - self.real_deg[1:]).mean())


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
    servos, episodes = checked_items('servos', servos, ArmServo), checked_items('episodes', episodes, Episode)
    if not isinstance(config, ReplayConfig):
        raise TypeError(f'config must be a ReplayConfig, got {type(config).__name__}')
    if not (isinstance(nthread, numbers.Integral) and not isinstance(nthread, bool) and nthread >= 0):
        raise ValueError(f'nthread must be a whole number >= 0 (0: all CPUs), got {nthread!r}')
    if not servos or not episodes:
        return [[] for _ in servos]
    steps = replay_steps(episodes, config)
    if steps * len(servos) * len(episodes) > mj.MAX_TOTAL_STEPS:
        raise ValueError(f'servos x episodes must take at most {mj.MAX_TOTAL_STEPS:,} physics steps in all, got '
                         f'{len(servos)} x {len(episodes)} runs of {steps:,} steps')
    if offsets is not None:
        offsets = np.asarray(offsets, dtype=float)
        if offsets.shape != (len(servos),) or not np.all(np.isfinite(offsets)):
            raise ValueError(f'offsets must be {len(servos)} finite numbers (one per servo), got {offsets!r}')
        offsets = np.repeat(offsets, len(episodes))
    runs = replay_runs([s for s in servos for _ in episodes], episodes * len(servos), config, nthread, offsets)
    return [runs[i * len(episodes):(i + 1) * len(episodes)] for i in range(len(servos))]


def check_run_budget(models: Sequence, episodes: Sequence[Episode], config: ReplayConfig) -> None:
    """Raise a ValueError when replaying every one of ``models`` on every one of ``episodes`` would take more than
    :data:`mj.MAX_TOTAL_STEPS` physics steps in all (after :func:`replay_steps`' own checks)."""
    steps = replay_steps(episodes, config)
    if steps * len(models) * len(episodes) > mj.MAX_TOTAL_STEPS:
        raise ValueError(f'models x episodes must take at most {mj.MAX_TOTAL_STEPS:,} physics steps in all, got '
                         f'{len(models)} x {len(episodes)} runs of {steps:,} steps')


def replay_steps(episodes: Sequence[Episode], config: ReplayConfig) -> int:
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
def replay_runs(servos: Sequence[ArmServo], episodes: Sequence[Episode], config: ReplayConfig, nthread: int,
                 offsets: np.ndarray | None = None) -> list[Replay]:
    """Simulation k replays ``episodes[k]`` with ``servos[k]`` (starts moved by ``offsets[k]`` rad), all in one Batch.

    The runs need not form a grid: :func:`physai.engine.sysid.fit_servos` batches the candidates of several fits, each on its own
    episodes. ``mujoco.batch`` repeats ``mj_step`` bit for bit at any thread count, so a run gives the same bits
    whatever it is batched with. The arguments are checked by the callers (:func:`replay_steps`).
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
    out = mj.rollout(batch, (nframe - 1) * substeps, control=control, record=('qpos',))
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


def checked_items(name: str, values, kind: type) -> list:
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


HIDDEN_SERVO = ArmServo(kp=12.0, kv=0.5, forcerange=2.5, damping=0.6, frictionloss=0.25, armature=0.05)
"""The servo behind :func:`synthetic_dataset` (a stand-in recording, used only when asked for)."""

REST_DEG = np.array([0.0, -98.0, 98.0, 75.0, -60.0, 2.0])
"""A folded rest pose like the recording's, degrees (gripper 0..100)."""

_POSE_LOW = np.array([-35.0, -95.0, 10.0, 30.0, -75.0, 0.0])
_POSE_HIGH = np.array([5.0, 10.0, 95.0, 85.0, -45.0, 40.0])

RESOLUTION_DEG = 360.0 / 4096
"""An STS3215 encoder count, degrees: the synthetic states are rounded to it."""


MAX_SYNTHETIC_EPISODES = 1000
"""The most episodes :func:`synthetic_dataset` makes."""

MAX_SYNTHETIC_FRAMES = 1_000_000
"""The most frames :func:`synthetic_dataset` makes in all (about a minute of work: each frame is built in Python and
replayed for a frame's physics steps); a request of huge sizes once ran on after its caller had gone, up to 0.97 GB."""


def synthetic_dataset(*, nepisode: int = 4, seconds: float = 12.0, fps: float = 30.0, seed: int = 0,
                      servo: ArmServo = HIDDEN_SERVO) -> LeRobotDataset:
    """A stand-in recording made by the simulated arm itself, for when no real one is at hand.

    Each episode starts folded at ``REST_DEG``, visits four random poses along minimum-jerk paths and
    folds up again; ``observation.state`` is the replay of those commands with ``servo``, rounded to
    encoder counts. A fit on it should find ``servo``'s lag again.

    Raises:
      ValueError: ``nepisode`` not a whole number in [1, ``MAX_SYNTHETIC_EPISODES``], ``fps`` not a number > 0,
        ``seconds`` not a finite number that gives at least 2 frames, an episode longer than one replay may run
        (``mj.MAX_STEPS`` physics steps), more than ``MAX_SYNTHETIC_FRAMES`` frames in all, ``seed`` not a whole
        number >= 0, or ``servo`` not an :class:`ArmServo`; all checked before any frame is made.
    """
    checks.whole('nepisode', nepisode, 1, MAX_SYNTHETIC_EPISODES, 'episodes')
    sub = ReplayConfig().substeps(checks.positive('fps', fps, 'frames/s'))
    checks.positive('seconds', seconds, 's')
    checks.whole('seed', seed, 0)
    if not isinstance(servo, ArmServo):
        raise ValueError(f'servo must be an ArmServo, got {type(servo).__name__}')
    n = round(seconds * fps)
    longest = mj.MAX_STEPS // sub + 1
    if not 2 <= n <= longest:
        raise ValueError(f'seconds must give 2 to {longest:,} frames at {fps:g} fps (a replay runs at most '
                         f'{mj.MAX_STEPS:,} physics steps, {sub} a frame), got {seconds!r} s: {n:,} frames')
    if nepisode * n > MAX_SYNTHETIC_FRAMES:
        raise ValueError(f'nepisode x seconds x fps must be at most {MAX_SYNTHETIC_FRAMES:,} frames in all, got '
                         f'{nepisode} episodes of {n:,} frames: ask for fewer or shorter episodes')
    rng = np.random.default_rng(seed)
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
    diverged: bool
    """MuJoCo warned that the hold blew up (:func:`physai.engine.mj.diverged`): it then resets the arm to its model
    pose, so ``final_deg`` looks finite but means nothing."""

    @property
    def moved_deg(self) -> np.ndarray:
        """(5,) final minus start, degrees."""
        return self.final_deg - self.pose_deg


@mj.captured_warnings()
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
                    actuator_force=d.actuator_force[arm].copy(), ncon=int(d.ncon),
                    diverged=mj.diverged(d.qpos[arm], warned=mj.warned(d)))


def holding_torque(qpos: np.ndarray) -> np.ndarray:
    """(n, 6) the torque each joint must exert to hold the SO-101 still at each pose of ``qpos``, N·m.

    MuJoCo's ``qfrc_bias`` at zero velocity (``mj_forward`` on :func:`slim_arm`): gravity on the links, which at rest
    the actuators balance (``qfrc_actuator = qfrc_bias``). A position servo holding a pose so sits off its command
    by ``qfrc_bias / kp``: the sag, which leans with this torque.

    Args:
      qpos: (n, 6) poses in ``JOINTS`` order, rad (:func:`to_radians` of recorded frames).
    """
    q = np.atleast_2d(np.asarray(qpos, dtype=float))
    if q.ndim != 2 or q.shape[1] != len(JOINTS) or not np.all(np.isfinite(q)):
        raise ValueError(f'qpos must be (n, {len(JOINTS)}) finite joint angles in rad, got shape {np.shape(qpos)}')
    m = slim_arm()
    d = mujoco.MjData(m)
    out = np.empty((len(q), m.nv))
    for k, pose in enumerate(q):
        d.qpos[:] = pose
        mujoco.mj_forward(m, d)
        out[k] = d.qfrc_bias
    return out
