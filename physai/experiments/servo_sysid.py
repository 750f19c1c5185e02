"""Chapter 4's experiments: the recorded SO-101 episodes replayed open loop, the baselines, and the fitted servo.

The replay and the fit are :mod:`physai.engine.sysid`; this module holds what the chapter reads off them. The
``sysid`` table (:func:`sysid_rows`: teleport, Menagerie's servo, two published servos and the fitted one, on the
fitting and the held-out episodes, split by :func:`split`), leave-one-out (:func:`leave_one_out`), the teleport scale
(:func:`teleport_errors`, :func:`best_shift`), the sag in held poses (:func:`hold_sag_deg`), the kp × damping map and
its valley (:func:`damping_valley`), joint speeds and the top speed of a saturated joint, the Break-it replays as
ensembles (:func:`break_it`), and where the recording comes from (:func:`find_dataset`: the one shipped in
``physai/data``, a local LeRobot dataset, or a synthetic stand-in only when asked).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import os
import pathlib
import sys
from collections.abc import Sequence

import mujoco
import mujoco.batch
import mujoco.minimize
import numpy as np

from physai.engine.datasets import Episode, LeRobotDataset, load_lerobot, shipped_recording
from physai.engine import lerobot_units
from physai.engine.sysid import fit_servo, fit_servos
from physai.engine.arm_replay import ArmServo, BASELINES, MENAGERIE, PoseHold, Replay, ReplayConfig, TIP_SITE, slim_arm, arm_columns, hold_pose, joint_mae_deg, mae_deg, replay, replay_ensemble, synthetic_dataset, to_radians
from physai.engine.so101 import ARM_JOINTS, load_so101
from physai.experiments.registry import experiment
from physai.laws import checks, robust


FIT_EPISODES = (0, 1, 2)
HELDOUT_EPISODE = 3


def held_frames(action_deg: np.ndarray, *, window: int = 6, tol_deg: float = 1.0) -> np.ndarray:
    """(nframe,) True where every arm command has stayed within ``tol_deg`` for ``window`` frames.

    In such a held pose the servo has (nearly) settled, so joint minus command is the sag: the steady
    error it needs to hold the arm against gravity and friction.

    Args:
      action_deg: (nframe, njoint) or (nframe,) commands, degrees (a NaN frame is never held).
      window: frames the commands must have stayed put, a whole number >= 1.
      tol_deg: how far they may wander, degrees, >= 0.
    """
    if not (isinstance(window, numbers.Integral) and not isinstance(window, bool) and window >= 1):
        raise ValueError(f'window must be a whole number of frames >= 1, got {window!r}')
    checks.nonnegative('tol_deg', tol_deg, 'deg')
    try:
        a = np.asarray(action_deg, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f'action_deg must be numbers, (nframe, njoint), got {action_deg!r}') from None
    if a.ndim not in (1, 2):
        raise ValueError(f'action_deg must be (nframe, njoint) or (nframe,), got shape {a.shape}')
    held = np.zeros(len(a), dtype=bool)
    for t in range(window, len(a)):
        held[t] = np.all(np.abs(a[t - window:t + 1] - a[t]) <= tol_deg)
    return held


def sag_frames(rep: Replay, **kwargs) -> np.ndarray:
    """(nframe,) held frames whose commands all lie inside the model's ctrlrange.

    Outside the ctrlrange the simulated joint stops at its limit, which would be measured instead of
    the sag (the folded rest pose commands the elbow past the model's range).

    Args:
      rep: a replay.
      **kwargs: ``window`` and ``tol_deg`` of :func:`held_frames`.
    """
    low, high = np.degrees(slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    inside = np.all((rep.action_deg >= low) & (rep.action_deg <= high), axis=1)
    return held_frames(rep.action_deg, **kwargs) & inside


def hold_sag_deg(rep: Replay, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """Mean command minus joint over :func:`sag_frames`, simulated and real, degrees.

    Returns:
      ``(sim, real)``, each (5,) per arm joint; NaN when the episode holds no such pose.
    """
    held = sag_frames(rep, **kwargs)
    if not held.any():
        return np.full(len(ARM_JOINTS), np.nan), np.full(len(ARM_JOINTS), np.nan)
    return ((rep.action_deg[held] - rep.sim_deg[held]).mean(axis=0),
            (rep.action_deg[held] - rep.real_deg[held]).mean(axis=0))


# --------------------------------------------------------------------------------------------------
# The teleport scale
# --------------------------------------------------------------------------------------------------

def teleport_errors(episodes: Sequence[Episode], shift: int = 1) -> np.ndarray:
    """(nframe_total, 5) |action[t] - state[t + shift]| over the arm joints, degrees.

    ``shift = 1`` is a servo that reaches each target within one frame: the "teleport" scale every
    simulated servo is measured against.
    """
    if not isinstance(shift, (int, np.integer)) or isinstance(shift, bool) or shift < 0:
        raise ValueError(f'shift must be an integer >= 0 frames, got {shift!r}')
    episodes = list(episodes)
    if not episodes:
        raise ValueError('episodes must hold at least one episode, got none')
    shortest = min(e.nframe for e in episodes)
    if shift >= shortest:
        raise ValueError(f'shift must be shorter than the shortest episode ({shortest} frames), got {shift!r}')
    rows = []
    for e in episodes:
        cols = arm_columns(e.joints)
        a, s = e.action[:, cols], e.state[:, cols]
        rows.append(np.abs(a[:e.nframe - shift] - s[shift:]))
    return np.concatenate(rows)


def best_shift(episodes: Sequence[Episode], shifts: Sequence[int] = range(11)) -> int:
    """The frame shift that minimises the teleport error on ``episodes`` (``shifts``: at least one)."""
    shifts = list(shifts)
    if not shifts:
        raise ValueError('shifts must hold at least one frame shift, got none')
    errors = [teleport_errors(episodes, s).mean() for s in shifts]
    return int(list(shifts)[int(np.argmin(errors))])


# --------------------------------------------------------------------------------------------------
# Evidence for the joint convention, and the book's tables
# --------------------------------------------------------------------------------------------------

def tip_height(episode: Episode, *, signs: Sequence[float] = (1, 1, 1, 1, 1)) -> np.ndarray:
    """(nframe,) height of the gripper tip (site ``gripperframe``) over the recording, m.

    The measured joints are put through the model's kinematics with radians = sign * deg2rad(degrees);
    the arm's base sits on the table at z = 0, so a right convention keeps the tip at z >= 0 and brings
    it down to about 0 where the arm picks from the table.
    """
    m = slim_arm()
    d = mujoco.MjData(m)
    q = to_radians(episode.state, episode.joints)
    q[:, :len(ARM_JOINTS)] *= np.asarray(signs, dtype=float)
    site = m.site(TIP_SITE).id
    z = np.empty(len(q))
    for k, qk in enumerate(q):
        d.qpos[:] = qk
        mujoco.mj_kinematics(m, d)
        z[k] = d.site_xpos[site, 2]
    return z


def joint_inertia(episodes: Sequence[Episode]) -> np.ndarray:
    """(5,) each arm joint's own inertia without armature, kg·m²: the diagonal of the mass matrix (what the joint's
    motor alone must accelerate, the rest of the arm held), the smallest over the episodes' measured poses.

    Chapter 1's bound on an explicit step scales with kp over this inertia, so the joint with the smallest one is the
    first to overshoot under Euler without armature.
    """
    m = copy.copy(slim_arm())
    m.dof_armature[:] = 0.0
    d = mujoco.MjData(m)
    unit, column = np.zeros(m.nv), np.zeros(m.nv)
    out = np.full(len(ARM_JOINTS), np.inf)
    for e in episodes:
        for qk in to_radians(e.state, e.joints):
            d.qpos[:] = qk
            mujoco.mj_forward(m, d)
            for j in range(len(ARM_JOINTS)):
                unit[:] = 0.0
                unit[j] = 1.0
                mujoco.mj_mulM(m, d, column, unit)
                out[j] = min(out[j], column[j])
    return out


def overlap_depth(episode: Episode) -> np.ndarray:
    """(nframe,) deepest overlap of the arm's own collision geoms at each measured pose, m (0: none).

    This is why the replay turns contacts off: Menagerie's collision boxes of the lower arm, wrist and
    gripper reach into the shoulder's box when the arm is folded, so a replay with contacts would push
    the arm apart with forces the real one never feels.
    """
    m = load_so101()
    d = mujoco.MjData(m)
    q = to_radians(episode.state, episode.joints)
    depth = np.zeros(len(q))
    for k, qk in enumerate(q):
        d.qpos[:] = qk
        mujoco.mj_forward(m, d)
        if d.ncon:
            depth[k] = max(0.0, -float(d.contact.dist[:d.ncon].min()))
    return depth


def find_dataset(source: str | os.PathLike | None = None, *, download: bool = False, degrees: bool = True
                 ) -> tuple[LeRobotDataset, str]:
    """The chapter's recording, and a sentence saying where it came from.

    ``source`` is a folder, a Hub dataset id (fetched when ``download`` is True), or ``'synthetic'`` for
    :func:`synthetic_dataset`, the stand-in recorded by the simulated arm itself; None means :func:`dataset_path`,
    the recording that ships with physai (or ``PHYSAI_DATASET``). With ``degrees`` (the default) a recording in
    LeRobot's -100..100 normalisation, as the shipped one is, comes converted to LeRobot's degrees with the
    follower's scale read off its values (:func:`physai.engine.lerobot_units.to_degrees`); without, as recorded.
    """
    if source == 'synthetic':
        return synthetic_dataset(), 'a synthetic stand-in made by the simulated arm itself, as asked'
    if source is not None:
        data, origin = load_lerobot(source, download=download), f'recording {source}'
    else:
        path = dataset_path()
        data, origin = load_lerobot(path), f'recording {path.name}'
    return (lerobot_units.to_degrees(data)[0] if degrees else data), origin


def dataset_path() -> pathlib.Path:
    """The recording the book uses: ``PHYSAI_DATASET`` if set, else the one shipped inside physai
    (:func:`physai.engine.datasets.shipped_recording`, 180 KB, Apache-2.0)."""
    env = os.environ.get('PHYSAI_DATASET')
    return pathlib.Path(env) if env else shipped_recording()


def load_book_dataset(source: str | os.PathLike | None = None, *, download: bool = False
                      ) -> LeRobotDataset:
    """The SO-101 recording of chapter 4 (see :func:`dataset_path`), or ``source`` when given, in degrees
    (:func:`find_dataset`)."""
    return find_dataset(source, download=download)[0]


def split(dataset: LeRobotDataset) -> tuple[list[Episode], list[Episode]]:
    """The book's split: fit on the first three episodes (0-2), hold out the next one (3).

    A dataset with fewer episodes fits on all but its last and holds out the last.
    """
    if not isinstance(dataset, LeRobotDataset):
        raise TypeError(f'dataset must be a LeRobotDataset, got {type(dataset).__name__}')
    if len(dataset) < 2:
        raise ValueError(f'the dataset needs at least 2 episodes (fit and held out), got {len(dataset)}')
    if len(dataset) > HELDOUT_EPISODE:
        return [dataset.episodes[i] for i in FIT_EPISODES], [dataset.episodes[HELDOUT_EPISODE]]
    return list(dataset.episodes[:-1]), [dataset.episodes[-1]]


MODELS = ('teleport', 'teleport-best-shift', 'menagerie', 'therobotstudio', 'published-fit', 'fitted')


def sysid_rows(fit_eps: Sequence[Episode], heldout: Sequence[Episode], fitted: ArmServo, *,
               config: ReplayConfig = ReplayConfig()) -> list[dict]:
    """One row per model (``MODELS``): mean absolute error on the fit and held-out episodes, degrees.

    Keys: ``model``, ``fit_mae_deg``, ``heldout_mae_deg``, and ``fit_<joint>_deg``,
    ``heldout_<joint>_deg`` per arm joint.
    """
    def row(name, fit_err, held_err):
        return dict(model=name, fit_mae_deg=float(fit_err.mean()),
                    heldout_mae_deg=float(held_err.mean()),
                    **{f'fit_{j}_deg': float(v) for j, v in zip(ARM_JOINTS, fit_err.mean(axis=0))},
                    **{f'heldout_{j}_deg': float(v) for j, v in zip(ARM_JOINTS, held_err.mean(axis=0))})

    rows = []
    shift = best_shift(fit_eps)
    for name, s in (('teleport', 1), ('teleport-best-shift', shift)):
        rows.append(row(name, teleport_errors(fit_eps, s), teleport_errors(heldout, s)))
    servos = dict(BASELINES, fitted=fitted)
    runs = replay(list(servos.values()), list(fit_eps) + list(heldout), config=config)
    for name, reps in zip(servos, runs):
        rows.append(row(name, np.concatenate([r.error_deg for r in reps[:len(fit_eps)]]),
                        np.concatenate([r.error_deg for r in reps[len(fit_eps):]])))
    return rows


def joint_columns(part: str) -> tuple[tuple[str, str], ...]:
    """``format_table`` columns of the per-joint errors, ``part`` 'fit' or 'heldout'."""
    return (('model', 's'),) + tuple((f'{part}_{j}_deg', '.3f') for j in ARM_JOINTS)


MAX_MAP_CELLS = 10_000
"""Cells one :func:`kp_damping_map` may have (the chapter's has 13 x 13): a larger grid is an error, not a hang."""


def kp_damping_map(episodes: Sequence[Episode], base: ArmServo, kps: Sequence[float],
                   dampings: Sequence[float], *, config: ReplayConfig = ReplayConfig()) -> np.ndarray:
    """(len(kps), len(dampings)) mean absolute error of ``base`` with kp and joint damping replaced, deg.

    Every cell is one replay of every episode; all run in one batch.

    Raises:
      ValueError: more than ``MAX_MAP_CELLS`` cells, or what :class:`ArmServo` and :func:`replay` refuse.
    """
    if len(kps) * len(dampings) > MAX_MAP_CELLS:
        raise ValueError(f'kps x dampings must be at most {MAX_MAP_CELLS:,} cells, got {len(kps)} x {len(dampings)}')
    servos = [dataclasses.replace(base, kp=float(kp), damping=float(b)) for kp in kps for b in dampings]
    runs = replay(servos, episodes, config=config)
    return np.array([mae_deg(r) for r in runs]).reshape(len(kps), len(dampings))


# --------------------------------------------------------------------------------------------------
# The stiffness/damping trade-off
# --------------------------------------------------------------------------------------------------

VALLEY_KPS = tuple(float(x) for x in np.geomspace(1, 1000, 13))
"""N·m/rad: the kp rows of the chapter's kp × damping map, 1 to 1000 in quarter decades."""
VALLEY_DAMPINGS = tuple(float(x) for x in np.geomspace(0.01, 10, 13))
"""N·m·s/rad: the joint-damping columns of the map, 0.01 to 10 in quarter decades."""
VALLEY_TABLE_KPS = (3.0, 100.0)
"""N·m/rad: the kp range of the rows :meth:`DampingValley.rows` lists (the valley, off the grid's edges)."""
CLIFF_FACTOR = 2.0
"""Past the cliff, even the best kp of a damping column is more than this many times the best cell's error."""


def _positive_grid(name: str, values, unit: str) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        x = np.array([])
    if x.ndim != 1 or x.size < 2 or not np.all(np.isfinite(x) & (x > 0)) or np.any(np.diff(x) <= 0):
        raise ValueError(f'{name} must be 2 or more increasing finite numbers > 0 {unit}, got {values!r}')
    return x


@dataclasses.dataclass(frozen=True)
class DampingValley:
    """The error of one servo over a grid of kp and joint damping (the rest as the servo has it), and what the
    chapter reads off it. Build it with :func:`damping_valley`, or from a grid already computed.

    Every figure is read from the grid as it stands: the map's cells are smooth replays (no chaos), so they are
    robust figures to the three decimals the chapter prints.
    """

    kps: np.ndarray
    """(nkp,) kp of each row, N·m/rad, increasing."""
    dampings: np.ndarray
    """(ndamping,) joint damping of each column, N·m·s/rad, increasing."""
    mae_deg: np.ndarray
    """(nkp, ndamping) mean absolute error of each cell, degrees."""
    kv: float
    """The servo's kv, N·m·s/rad (kept in every cell): the lag of a cell is (kv + damping)/kp."""

    def __post_init__(self):
        kps = _positive_grid('kps', self.kps, 'N·m/rad')
        dampings = _positive_grid('dampings', self.dampings, 'N·m·s/rad')
        grid = np.asarray(self.mae_deg, dtype=float)
        if grid.shape != (len(kps), len(dampings)) or not np.all(np.isfinite(grid) & (grid >= 0)):
            raise ValueError(f'mae_deg must be ({len(kps)}, {len(dampings)}) finite numbers >= 0 deg, got shape '
                             f'{grid.shape}')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        object.__setattr__(self, 'kps', kps)
        object.__setattr__(self, 'dampings', dampings)
        object.__setattr__(self, 'mae_deg', grid)

    @property
    def best(self) -> tuple[float, float, float]:
        """The best cell: ``(kp, damping, mae_deg)``."""
        i, k = np.unravel_index(np.argmin(self.mae_deg), self.mae_deg.shape)
        return float(self.kps[i]), float(self.dampings[k]), float(self.mae_deg[i, k])

    def at(self, kp: float, damping: float) -> float:
        """The error of the cell nearest (kp, damping) in log scale, degrees (a point off the grid: its edge)."""
        checks.positive('kp', kp, 'N·m/rad')
        checks.positive('damping', damping, 'N·m·s/rad')
        i = int(np.argmin(np.abs(np.log(self.kps / kp))))
        k = int(np.argmin(np.abs(np.log(self.dampings / damping))))
        return float(self.mae_deg[i, k])

    @property
    def best_per_damping(self) -> np.ndarray:
        """(ndamping,) the error of the best kp in each damping column, degrees."""
        return self.mae_deg.min(axis=0)

    @property
    def cliff_damping(self) -> float:
        """The smallest damping, at or above the best column, from which on every column's best kp is more than
        ``CLIFF_FACTOR`` times the best cell's error, N·m·s/rad; NaN when the grid has no such cliff."""
        worse = self.best_per_damping > CLIFF_FACTOR * self.mae_deg.min()
        k_best = int(np.argmin(self.best_per_damping))
        for k in range(k_best, len(self.dampings)):
            if np.all(worse[k:]):
                return float(self.dampings[k])
        return math.nan

    def rows(self, kp_range: tuple[float, float] = VALLEY_TABLE_KPS) -> list[dict]:
        """The valley: for every kp row within ``kp_range`` (N·m/rad, inclusive), its best damping.

        Keys: ``kp`` (N·m/rad), ``best_damping`` (N·m·s/rad), ``lag_ms`` ((kv + best_damping)/kp, ms) and
        ``mae_deg`` (that cell's error, degrees: the chapter maps the fit episodes).
        """
        low, high = kp_range
        if not (checks.is_real(low) and checks.is_real(high) and 0 < low <= high):
            raise ValueError(f'kp_range must be (low, high) N·m/rad with 0 < low <= high, got {kp_range!r}')
        rows = []
        for kp, row in zip(self.kps, self.mae_deg):
            if low <= kp <= high:
                b = float(self.dampings[np.argmin(row)])
                rows.append(dict(kp=float(kp), best_damping=b, lag_ms=float(1e3 * (self.kv + b) / kp),
                                 mae_deg=float(row.min())))
        return rows


def damping_valley(episodes: Sequence[Episode], base: ArmServo, *, kps: Sequence[float] = VALLEY_KPS,
                   dampings: Sequence[float] = VALLEY_DAMPINGS, config: ReplayConfig = ReplayConfig()
                   ) -> DampingValley:
    """``base`` replayed over every (kp, joint damping) of the grid, the rest as it is: :func:`kp_damping_map`.

    Args:
      episodes: the episodes scored (the chapter: the fit episodes; no choice is read off a held-out one).
      base: the servo whose kv, forcerange, frictionloss and armature every cell keeps.
      kps: (nkp,) increasing, N·m/rad.
      dampings: (ndamping,) increasing, N·m·s/rad.
      config: the replay settings.
    """
    kps = _positive_grid('kps', kps, 'N·m/rad')
    dampings = _positive_grid('dampings', dampings, 'N·m·s/rad')
    grid = kp_damping_map(episodes, base, kps, dampings, config=config)
    return DampingValley(kps=kps, dampings=dampings, mae_deg=grid, kv=base.kv)


def frame_speeds_deg(angles_deg: np.ndarray, fps: float) -> np.ndarray:
    """Joint speeds from one frame to the next, ``|q[t+1] - q[t]|·fps``, deg/s.

    Args:
      angles_deg: (nframe, njoint) joint angles, degrees, nframe >= 2 (``Replay.real_deg`` or ``sim_deg``).
      fps: frames per second, > 0.

    Returns:
      (nframe - 1, njoint).
    """
    checks.positive('fps', fps, 'frames/s')
    q = np.asarray(angles_deg, dtype=float)
    if q.ndim != 2 or len(q) < 2:
        raise ValueError(f'angles_deg must be (nframe, njoint) with nframe >= 2, got shape {q.shape}')
    return np.abs(np.diff(q, axis=0)) * fps


def saturated_speed_deg(servo: ArmServo, *, damping: float | None = None) -> float:
    """The top speed of a saturated joint, ``forcerange/damping`` in deg/s (less what gravity takes).

    kv acts inside the force clamp and the joint damping outside it, so once the spring saturates only the joint
    damping brakes (``tests/test_sysid.py`` checks this against MuJoCo).

    Args:
      servo: its forcerange (N·m) and, unless ``damping`` is given, its joint damping.
      damping: joint damping to use instead, N·m·s/rad, > 0.
    """
    damping = servo.damping if damping is None else damping
    checks.positive('damping', damping, 'N·m·s/rad')
    return math.degrees(servo.forcerange / damping)


# --------------------------------------------------------------------------------------------------
# Break it: one setting changed, every entry an ensemble
# --------------------------------------------------------------------------------------------------

BREAK_VARIANTS = {
    'as above': ReplayConfig(),
    'contacts on': ReplayConfig(contacts=True),
    'limits off': ReplayConfig(limits=False),
    'Euler, 33.3 ms': ReplayConfig(integrator='Euler', timestep=1 / 30),
    'implicitfast, 33.3 ms': ReplayConfig(timestep=1 / 30),
    'discrete, 33.3 ms': ReplayConfig(integrator='discrete', timestep=1 / 30),
}
"""The chapter's Break-it replays by name: the replay of the fit, then one setting changed at a time."""

CHAOS_DEG = 1e-6
"""deg: an ensemble whose errors spread wider than this is chaotic; a smooth replay's move by about the offsets'
size (1e-8 deg)."""


@dataclasses.dataclass(frozen=True)
class EnsembleScore:
    """One servo replayed from every start of ``arm_replay.ENSEMBLE_OFFSETS``: its error as a robust figure."""

    mae: robust.Ensemble
    """The mean absolute error over the runs, degrees: median, smallest, largest."""
    joint_mae_deg: np.ndarray
    """(5,) the median over the runs of each arm joint's mean absolute error, degrees."""
    diverged: bool
    """Any run diverged."""
    runs: tuple
    """``runs[k][j]``: the :class:`Replay` from start k on episode j (k = 0 is the recorded start)."""

    @property
    def chaotic(self) -> bool:
        """The runs' errors spread wider than ``CHAOS_DEG``: any one run is one draw from a distribution."""
        return self.mae.high - self.mae.low > CHAOS_DEG

    @property
    def figure(self) -> float:
        """The error to print, degrees: the median, to one significant digit when the replay is chaotic."""
        return robust.round_sig(self.mae.median, 1) if self.chaotic else self.mae.median

    @property
    def shown(self) -> str:
        """The figure as a table shows it: three decimals, or ``'≈ 3 (chaotic)'``."""
        return f'≈ {self.figure:g} (chaotic)' if self.chaotic else f'{self.figure:.3f}'


def ensemble_score(servo: ArmServo, episodes: Sequence[Episode], *, config: ReplayConfig = ReplayConfig()
                   ) -> EnsembleScore:
    """``servo`` replayed on ``episodes`` from the starts of ``arm_replay.ENSEMBLE_OFFSETS`` (0 to 7e-9 rad), one batch.

    Each run's error is taken over all of ``episodes``, every frame weighted alike.
    """
    if not episodes:
        raise ValueError('episodes must hold at least one episode, got none')
    runs = replay_ensemble(servo, episodes, config=config)
    return EnsembleScore(mae=robust.ensemble(mae_deg(row) for row in runs),
                         joint_mae_deg=np.median([joint_mae_deg(row) for row in runs], axis=0),
                         diverged=any(r.diverged for row in runs for r in row), runs=tuple(map(tuple, runs)))


def break_it(fitted: ArmServo, episodes: Sequence[Episode], *,
             variants: dict[str, ReplayConfig] | None = None) -> list[dict]:
    """The chapter's Break it: ``fitted`` and Menagerie's servo under each replay setting, as ensembles.

    Args:
      fitted: the fitted servo.
      episodes: the episodes scored (the chapter: the held-out one).
      variants: replay settings by name (default ``BREAK_VARIANTS``).

    Returns:
      One row per variant: ``replay`` (its name), ``fitted`` and ``menagerie`` (:class:`EnsembleScore`),
      ``fitted_mae_deg`` and ``menagerie_mae_deg`` (their ``shown`` text), ``fitted_elbow_deg`` (the fitted
      servo's elbow error, degrees) and ``diverged`` (``'yes'`` if any run of either diverged, else ``'no'``).
    """
    variants = BREAK_VARIANTS if variants is None else variants
    if not variants:
        raise ValueError('variants must name at least one ReplayConfig, got none')
    for name, cfg in variants.items():
        if not isinstance(cfg, ReplayConfig):
            raise ValueError(f'variants[{name!r}] must be a ReplayConfig, got {cfg!r}')
    rows = []
    elbow = ARM_JOINTS.index('elbow_flex')
    for name, cfg in variants.items():
        fit, men = (ensemble_score(s, episodes, config=cfg) for s in (fitted, BASELINES['menagerie']))
        rows.append(dict(replay=name, fitted=fit, menagerie=men, fitted_mae_deg=fit.shown,
                         menagerie_mae_deg=men.shown, fitted_elbow_deg=float(fit.joint_mae_deg[elbow]),
                         diverged='yes' if fit.diverged or men.diverged else 'no'))
    return rows


def leave_one_out(dataset: LeRobotDataset, *, known: dict[int, ArmServo] | None = None, **fit_kwargs) -> list[dict]:
    """Fit on all episodes but one and score the one left out, for each episode in turn.

    The folds' fits run side by side (``sysid.fit_servos``): each gives the same servo as :func:`fit_servo` on its
    episodes alone, bit for bit, and together they keep every thread busy.

    Args:
      dataset: the recording; every episode is left out once.
      known: folds already fitted, by the index of the episode they leave out (the main fit, when it held out one
        episode, is that episode's fold): they are scored, not refitted.
      **fit_kwargs: passed to ``sysid.fit_servos`` as to :func:`fit_servo` (``starts``, ``max_iter``,
        ``progress``, ...); its ``config`` is also the replay the fitted servo is scored with.

    Returns:
      Rows with ``heldout`` (episode_index), the six fitted parameters, ``lag_ms``, ``fit_mae_deg`` and
      ``heldout_mae_deg`` (the fold's fitted servo), and ``menagerie_heldout_mae_deg`` (Menagerie's servo on the
      same left-out episode, the scale), all in degrees.
    """
    if not isinstance(dataset, LeRobotDataset) or len(dataset) < 2:
        raise ValueError(f'dataset must be a LeRobotDataset of 2 or more episodes, got {dataset!r}')
    known = {} if known is None else known
    indices = [e.index for e in dataset.episodes]
    if not isinstance(known, dict) or not all(k in indices and isinstance(v, ArmServo) for k, v in known.items()):
        raise ValueError(f'known must map episode indices of the dataset ({indices}) to ArmServo, got {known!r}')
    rows = []
    episodes = list(dataset.episodes)
    folds = [episodes[:k] + episodes[k + 1:] for k in range(len(episodes))]
    todo = [rest for out, rest in zip(episodes, folds) if out.index not in known]
    fits = iter(fit_servos(todo, **fit_kwargs) if todo else [])  # every fold at once, one batch per solver round
    for out, rest in zip(episodes, folds):
        fitted = known[out.index] if out.index in known else next(fits).servo
        runs, men = replay([fitted, MENAGERIE], rest + [out], config=fit_kwargs.get('config', ReplayConfig()))
        rows.append(dict(heldout=out.index, **fitted.as_dict(), lag_ms=fitted.lag_ms,
                         fit_mae_deg=mae_deg(runs[:-1]), heldout_mae_deg=runs[-1].mae_deg,
                         menagerie_heldout_mae_deg=men[-1].mae_deg))
    return rows


def fold_summary(rows: Sequence[dict]) -> dict[str, float]:
    """Leave-one-out over all folds: the mean held-out error of the fitted and of Menagerie's servo, degrees.

    Args:
      rows: :func:`leave_one_out`'s rows, one per fold (each episode left out once).

    Returns:
      ``folds``, ``fitted_deg`` and ``menagerie_deg`` (the means over the folds, every fold weighted alike),
      ``ratio`` (Menagerie's over the fitted), and the range of the fitted parameters over the folds:
      ``<param>_min`` and ``<param>_max`` for ``lag_ms`` and every parameter of :class:`ArmServo`.
    """
    rows = list(rows)
    needed = {'heldout_mae_deg', 'menagerie_heldout_mae_deg', 'lag_ms', *ArmServo.__dataclass_fields__}
    if not rows or any(not needed <= set(r) for r in rows):
        raise ValueError(f'rows must be leave_one_out rows (keys {sorted(needed)}), got {rows!r}')
    fitted = float(np.mean([r['heldout_mae_deg'] for r in rows]))
    men = float(np.mean([r['menagerie_heldout_mae_deg'] for r in rows]))
    out = dict(folds=len(rows), fitted_deg=fitted, menagerie_deg=men, ratio=men / fitted)
    for key in ('lag_ms', *ArmServo.__dataclass_fields__):
        out[f'{key}_min'] = float(min(r[key] for r in rows))
        out[f'{key}_max'] = float(max(r[key] for r in rows))
    return out


# --------------------------------------------------------------------------------------------------
# What the data pin down: the lag ridge, the static offsets
# --------------------------------------------------------------------------------------------------

def static_offsets_deg(episodes: Sequence[Episode], *, window: int = 6, tol_deg: float = 1.0) -> np.ndarray:
    """(5,) the real arm's command minus joint in its held poses, per arm joint, degrees (``ARM_JOINTS`` order).

    The held frames are those of :func:`held_frames` whose commands lie inside the model's ctrlrange (as in
    :func:`sag_frames`), pooled over ``episodes``. A held pose's offset is gravity sag, friction and any
    calibration offset between leader and follower together: the recording alone cannot tell them apart, which is
    what makes kp hard to identify.

    Raises:
      ValueError: no episodes, or no held frame in any of them.
    """
    episodes = list(episodes)
    if not episodes or not all(isinstance(e, Episode) for e in episodes):
        raise ValueError(f'episodes must be one or more Episode, got {episodes!r}')
    low, high = np.degrees(slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    offsets = []
    for e in episodes:
        cols = arm_columns(e.joints)
        a, s = e.action[:, cols], e.state[:, cols]
        held = held_frames(a, window=window, tol_deg=tol_deg) & np.all((a >= low) & (a <= high), axis=1)
        offsets.append((a - s)[held])
    offsets = np.concatenate(offsets)
    if not len(offsets):
        raise ValueError(f'episodes must hold a pose somewhere (window {window} frames, tol {tol_deg} deg), '
                         f'got none held')
    return offsets.mean(axis=0)


def shift_commands(episodes: Sequence[Episode], offsets_deg: Sequence[float]) -> list[Episode]:
    """The episodes with ``offsets_deg`` taken off every frame's arm commands: ``action - offset`` per joint.

    With :func:`static_offsets_deg` as the offsets, the shifted commands point where the real joints came to rest
    in the held poses, so a servo no longer needs to sag to match them.

    Args:
      episodes: the recordings.
      offsets_deg: (5,) degrees per arm joint, ``ARM_JOINTS`` order, finite.
    """
    off = np.asarray(offsets_deg, dtype=float)
    if off.shape != (len(ARM_JOINTS),) or not np.all(np.isfinite(off)):
        raise ValueError(f'offsets_deg must be {len(ARM_JOINTS)} finite numbers in deg ({", ".join(ARM_JOINTS)}), '
                         f'got {offsets_deg!r}')
    shifted = []
    for e in episodes:
        if not isinstance(e, Episode):
            raise ValueError(f'episodes must be Episode objects, got {type(e).__name__}')
        action = e.action.copy()
        action[:, arm_columns(e.joints)] -= off
        shifted.append(dataclasses.replace(e, action=action))
    return shifted


RIDGE_KPS = tuple(float(x) for x in np.geomspace(4, 400, 17))
"""N·m/rad: the kp of the chapter's walk along the ridge, 4 to 400 in eighth decades."""


def ridge_servos(servo: ArmServo, kps: Sequence[float] = RIDGE_KPS) -> list[ArmServo]:
    """``servo`` moved along its ridge: each kp with ``kv = lag * kp - damping``, so (kv + damping)/kp stays put.

    Everything else (joint damping, forcerange, frictionloss, armature) is kept.

    Raises:
      ValueError: ``kps`` not increasing positive numbers, or a kp so small that kv would be negative
        (kp < damping / lag).
    """
    kps = _positive_grid('kps', kps, 'N·m/rad')
    lag = servo.lag_ms / 1e3
    if kps[0] * lag < servo.damping:
        raise ValueError(f'kps must be >= damping/lag = {servo.damping / lag:.4g} N·m/rad (kv >= 0), got {kps[0]!r}')
    return [dataclasses.replace(servo, kp=float(kp), kv=float(lag * kp - servo.damping)) for kp in kps]


def ridge(episodes: Sequence[Episode], servo: ArmServo, *, kps: Sequence[float] = RIDGE_KPS,
          offsets_deg: Sequence[float] | None = None, config: ReplayConfig = ReplayConfig()) -> list[dict]:
    """The cost along the ridge of constant lag through ``servo`` (:func:`ridge_servos`), all in one batch.

    Args:
      episodes: the episodes scored (the chapter: the fit episodes).
      servo: the ridge's point and its lag (the fitted servo).
      kps: (nkp,) increasing, N·m/rad.
      offsets_deg: (5,) if given, every point is scored a second time on the episodes with these offsets taken
        off the commands (:func:`shift_commands`).
      config: the replay settings.

    Returns:
      One row per kp: ``kp`` (N·m/rad), ``kv`` (N·m·s/rad), ``lag_ms``, ``cost`` (half the mean squared error,
      deg², the fit's objective), ``mae_deg``, ``<joint>_deg`` (per arm joint), and with ``offsets_deg`` the same
      three with the suffix ``_shifted``.
    """
    episodes = list(episodes)
    if not episodes:
        raise ValueError('episodes must hold at least one episode, got none')
    servos = ridge_servos(servo, kps)
    sets = {'': episodes}
    if offsets_deg is not None:
        sets['_shifted'] = shift_commands(episodes, offsets_deg)
    runs = replay(servos, [e for eps in sets.values() for e in eps], config=config)
    rows = []
    for s, row in zip(servos, runs):
        out = dict(kp=s.kp, kv=s.kv, lag_ms=s.lag_ms)
        for k, suffix in enumerate(sets):
            reps = row[k * len(episodes):(k + 1) * len(episodes)]
            err = np.concatenate([r.sim_deg[1:] - r.real_deg[1:] for r in reps])
            out[f'cost{suffix}'] = float(0.5 * np.mean(err**2))
            out[f'mae_deg{suffix}'] = float(np.abs(err).mean())
            for j, name in enumerate(ARM_JOINTS):
                out[f'{name}_deg{suffix}'] = float(np.abs(err[:, j]).mean())
        rows.append(out)
    return rows


def ridge_bottom(rows: Sequence[dict], key: str = 'cost') -> dict:
    """The row of :func:`ridge` with the lowest ``key`` (``'cost'`` or ``'cost_shifted'``)."""
    rows = list(rows)
    if not rows or any(key not in r for r in rows):
        raise ValueError(f'rows must be ridge rows holding {key!r}, got {len(rows)} rows')
    return min(rows, key=lambda r: r[key])


# --------------------------------------------------------------------------------------------------
# The collision artefact
# --------------------------------------------------------------------------------------------------

COLLISION_EPISODE = 1
"""The episode whose first frame (the folded rest pose, collision boxes overlapping) the chapter holds."""


def collision_hold(episode: Episode, *, servo: ArmServo = MENAGERIE, frame: int = 0,
                   seconds: float = 2.0) -> dict[str, PoseHold]:
    """``servo`` told to hold the recorded pose of ``frame`` (start and command alike), contacts off and on.

    In the recording's folded rest pose Menagerie's collision boxes overlap (:func:`overlap_depth`): with contacts
    on they push the arm out of the pose and the servos pin at their force limit, a sag and a saturation the real
    arm, folded without touching itself, never shows.

    Args:
      episode: the recording.
      servo: the servo on every joint (default Menagerie's).
      frame: which frame's ``observation.state``, 0 <= frame < nframe.
      seconds: how long to hold, s, in (0, 60].

    Returns:
      ``{'contacts off': PoseHold, 'contacts on': PoseHold}``.
    """
    if not isinstance(episode, Episode):
        raise ValueError(f'episode must be an Episode, got {type(episode).__name__}')
    if not (isinstance(frame, numbers.Integral) and not isinstance(frame, bool) and 0 <= frame < episode.nframe):
        raise ValueError(f'frame must be a whole number in [0, {episode.nframe}), got {frame!r}')
    pose = to_radians(episode.state[frame:frame + 1], episode.joints)[0]
    return {name: hold_pose(servo, pose, config=ReplayConfig(contacts=contacts), seconds=seconds, fps=episode.fps)
            for name, contacts in (('contacts off', False), ('contacts on', True))}


def collision_rows(holds: dict[str, PoseHold]) -> list[dict]:
    """One row per arm joint of :func:`collision_hold`: ``joint``, ``force_off`` and ``force_on`` (N·m),
    ``moved_off_deg`` and ``moved_on_deg`` (final minus start, degrees)."""
    off, on = holds['contacts off'], holds['contacts on']
    return [dict(joint=name, force_off=float(off.actuator_force[j]), force_on=float(on.actuator_force[j]),
                 moved_off_deg=float(off.moved_deg[j]), moved_on_deg=float(on.moved_deg[j]))
            for j, name in enumerate(ARM_JOINTS)]



@experiment('sysid', summary='open-loop replay of the SO-101 recording: baselines and the fitted servo',
            columns=(('model', 's'), ('fit_mae_deg', '.3f'), ('heldout_mae_deg', '.3f')))
def sysid(progress: bool = True) -> list[dict]:
    """Fit on episodes 0-2 of the book's recording, score every model on them and on episode 3."""
    try:
        dataset = load_book_dataset()
    except FileNotFoundError as err:
        raise ValueError(f'{err}; set PHYSAI_DATASET to a LeRobot SO-101 dataset folder') from None
    fit_eps, heldout = split(dataset)
    result = fit_servo(fit_eps, progress=progress and sys.stderr.isatty())
    rows = sysid_rows(fit_eps, heldout, result.servo)
    return [{k: row[k] for k in ('model', 'fit_mae_deg', 'heldout_mae_deg')} for row in rows]
