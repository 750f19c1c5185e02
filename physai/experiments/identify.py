"""Identify your own arm: chapter 4's replay and fit on any LeRobot SO-101 recording, written out as an MJCF file.

``python -m physai fit-servo DATASET`` runs what chapter 4 does to its own recording on yours:

1. the episodes are split into fit and held-out ones (:func:`select_episodes`; by default the last one is held out);
2. one :class:`~physai.engine.sysid.ArmServo` is fitted to the fit episodes with ``sysid.fit_servo``, from the
   chapter's kept start (TheRobotStudio's soft gains), and rounded to ``sysid.FIT_DIGITS`` significant digits;
   with ``per_joint`` each arm joint then gets its own kp and kv (:func:`fit_per_joint`), the other four
   parameters staying shared;
3. leave-one-out over every selected episode (``servo_truth.compare_structures``): each fold's spring is fitted
   from ``START``, which has seen none of the recording (with one held-out episode the main fit is that episode's
   fold, since it saw only the fit episodes), and the rival structures (a command delay, calibration offsets) are
   fitted fold by fold from the fold's spring. The folds give the spread of each parameter and the structures'
   held-out scores; the cost's rise when one parameter alone changes (:func:`cost_rise`) says whether the recording
   exercises it at all; held-out slices (``servo_truth.intervals``) say how far each parameter can move before the
   held-out error rises by ``servo_truth.RISE``; and the ridge of constant lag (``servo_sysid.ridge``) with and
   without the held-pose offsets (``servo_sysid.static_offsets_deg``) says whether kp hangs on how those offsets
   are explained (:func:`spread`, :func:`findings`);
4. the held-out episodes are replayed with the fitted servo, Menagerie's, and the teleport scale, and every
   published set of chapter 4's truth table is scored on the recording's folds (``servo_truth.truth_table``);
5. :func:`write_mjcf` writes Menagerie's SO-101 with the fitted servo as a default class (``fitted_servo``, and one
   class per joint with ``per_joint``).

Delay. With ``delay`` the written servo is the *spring + delay* structure fitted on the fit episodes (from the
spring, the delay starting at one physics step), written as each actuator's MuJoCo ``delay`` with a ``ctrl`` history
(``nsample``, linear interpolation). On chapter 4's recording the fitted delay stays at its one-step floor.

Offsets. In held poses the real shoulder lift and elbow stop a few degrees from their commands. The fit as recorded
explains that as the sag of a soft servo and writes no offset. With ``offsets`` the held-pose offsets are taken to
be calibration instead: they are taken off the commands before fitting (``servo_sysid.shift_commands``) and written
into each arm actuator, ``force = kp (ctrl - c - q) - kv q̇`` (``biasprm[0] = -kp c``) with the ctrlrange moved by
``c``, so that the model driven by the recorded commands does what the shifted replay did. MuJoCo has no offset
attribute on ``<position>``: the file carries it as a ``<general>`` actuator's bias, and a comment says so.

Warnings (:func:`recording_warnings`) say when a recording is too short or too still to identify a servo; their
thresholds are derived below (``MOVING_SPEED_DEG_S``, ``MIN_MOVING_SECONDS``, ``MIN_HELD_FRAMES``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import pathlib
import re
import sys
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import mj, servo_models, so101, sysid
from physai.engine.datasets import Episode, LeRobotDataset, check_episode
from physai.engine.datasets import index_ranges as _ranges
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.engine.sysid import ArmServo
from physai.experiments import outputs, servo_sysid, servo_truth
from physai.experiments.registry import format_table
from physai.laws import checks, robust


ROBOTS = ('so101',)
"""Arms the command can identify: those whose MuJoCo Menagerie model the replay is built on."""

START = sysid.THEROBOTSTUDIO
"""The fit's start: chapter 4 keeps the fit from TheRobotStudio's soft gains (the tie goes to it, and its path does
not depend on the last bits of the arithmetic), so one start suffices."""

FOLD_MAX_ITER = 50
"""Iteration cap of each leave-one-out fold (started from ``START``; a cap, not a target)."""

PINNED_RATIO = 1.25
"""A parameter is *pinned* when its largest value over the leave-one-out folds is within this factor of its
smallest (±11 % about the middle); wider, and the recordings do not fix it."""

COST_RISE = 0.01
"""A parameter the recording pins raises the fit's cost by at least this fraction (1 %) when it alone is scaled by
``PINNED_RATIO`` either way. Without that test a parameter the recording never exercises (a force limit the servo never
reaches, say) could look pinned: every fold starts from the same published gains, and the solver leaves a parameter
the residuals do not feel near where it started."""

MOVING_SPEED_DEG_S = 10.0
"""deg/s: a frame *moves* when some arm command changes faster than this. A first-order lag T makes a joint moving
at speed v trail its command by v·T; at 10 deg/s a lag of 0.1 s (chapter 4's) puts the joint 1 degree behind, about
11 encoder counts of an STS3215 (360/4096 deg each), well above the measurement's resolution. Slower, the lag is lost
in the counts."""

MIN_MOVING_SECONDS = 5.0
"""s of moving frames the fit episodes need. Each move shows the lag for a few of its frames; six parameters (and a
held-out check) want dozens of moves, and a teleoperated pick-and-place move lasts about a second, so a few seconds
of motion is the least that holds enough of them. Chapter 4's fit episodes hold far more."""

MIN_HELD_FRAMES = 30
"""Held frames (``servo_sysid.held_frames``, commands within the model's range) the fit episodes need, one second at
30 fps: the held poses are where the sag (kp against gravity) and the offsets show; without them kp rests on the
moves alone and the offsets cannot be measured at all."""

MIN_EPISODE_SECONDS = 2.0
"""s: an episode shorter than this holds less than a move and its settling (a few lag times of 0.1 s each, and the
move itself)."""

RIDGE_FLAT = 0.05
"""The ridge with the offsets taken off is *flat* where its cost is within 5 % of its lowest."""

OUT_DEFAULT = 'so101_fitted.xml'
"""The file written when ``--out`` is not given, in the current folder."""

SERVO_CLASS = 'fitted_servo'
"""The default class of the written file that holds the fitted servo (a child of Menagerie's ``sts3215``)."""


# --------------------------------------------------------------------------------------------------
# Checking the request
# --------------------------------------------------------------------------------------------------

def check_robot(robot: str) -> str:
    """``robot`` if the command can identify it, else a ValueError saying which it can and why not the others."""
    if robot in ROBOTS:
        return robot
    if robot == 'so100':
        raise ValueError("robot must be so101, got 'so100': the replay is built on MuJoCo Menagerie's SO-101 model "
                         "(robotstudio_so101); Menagerie's SO-100 (trs_so_arm100) has other joint names and link "
                         "geometry and no replay here yet")
    raise ValueError(f'robot must be one of {", ".join(ROBOTS)}, got {robot!r}')


def select_episodes(dataset: LeRobotDataset, episodes: Sequence[int] | None = None,
                    heldout: Sequence[int] | None = None) -> tuple[list[Episode], list[Episode]]:
    """The fit and held-out episodes, by ``episode_index``.

    Args:
      dataset: the recording.
      episodes: the indices to use (default every episode of ``dataset``).
      heldout: the indices among ``episodes`` kept out of the fit (default the last of ``episodes``).

    Raises:
      ValueError: an index not in the dataset (or not among ``episodes``), one given twice, no held-out episode,
        fewer than 2 episodes left to fit, or a chosen episode that ``datasets.check_episode`` refuses (timestamps
        against fps, glitches, wraps, repeated frames).
    """
    available = [e.index for e in dataset]
    by_index = {e.index: e for e in dataset}

    def indices(name, values, allowed, where):
        if values is None:
            return None
        values = list(values)
        for v in values:
            if not (isinstance(v, numbers.Integral) and not isinstance(v, bool)) or v not in allowed:
                raise ValueError(f'{name} must be episode indices {where} ({_ranges(allowed)}), got {v!r}')
        if len(set(values)) != len(values):
            raise ValueError(f'{name} must name each episode once, got {values}')
        return values

    chosen = indices('episodes', episodes, available, 'of the dataset') or available
    for i in chosen:  # the loader checks what it reads; episodes made otherwise are checked here
        check_episode(by_index[i], source=str(dataset.root))
    if len(chosen) < 3:
        raise ValueError(f'episodes must be at least 3 (2 to fit, 1 held out), got {len(chosen)}: {chosen}')
    held = indices('heldout', heldout, chosen, 'among the episodes used') or chosen[-1:]
    if not held:
        raise ValueError('heldout must name at least one episode, got none')
    fit = [i for i in chosen if i not in held]
    if len(fit) < 2:
        raise ValueError(f'heldout must leave at least 2 episodes to fit, got {len(fit)} of {chosen} '
                         f'(held out: {held})')
    return [by_index[i] for i in fit], [by_index[i] for i in held]


def protected_folders(dataset: str | pathlib.Path | None = None) -> list[tuple[str, pathlib.Path]]:
    """The folders the command reads and must never write into: MuJoCo Menagerie's SO-101 model (the folder of
    ``so101.xml``, which every chapter loads, and the local Menagerie copy it sits in) and the dataset's folder."""
    xml = so101.menagerie_xml('so101')
    folders = [("MuJoCo Menagerie's SO-101 model", xml.parent)]
    root = so101.menagerie_root()
    if root is not None:
        folders.append(('the local copy of MuJoCo Menagerie', pathlib.Path(root)))
    if dataset is not None:
        folders.append(("the dataset's folder", pathlib.Path(dataset)))
    return folders


def check_outputs(out: str | pathlib.Path, report: str | pathlib.Path | None = None, *, force: bool = False,
                  dataset: str | pathlib.Path | None = None) -> tuple[pathlib.Path, pathlib.Path | None]:
    """The MJCF file (``--out``) and the PNG (``--report``, or None) the command may write, checked before any work
    (``outputs.check_output``): each names a file of its type in an existing folder the command can write to, is no
    symbolic link, replaces an existing file only when ``force``, and lies in none of :func:`protected_folders`."""
    folders = protected_folders(dataset)
    out = outputs.check_output(out, option='--out', suffix='.xml', force=force, keep_out=folders)
    if report is not None:
        report = outputs.check_output(report, option='--report', suffix='.png', force=force, keep_out=folders)
    return out, report


def check_lengths(fit: Sequence[Episode], heldout: Sequence[Episode]) -> None:
    """Refuse, before any fit, episodes too short to take part: a fit episode needs 2 frames to be replayed at all,
    a held-out one ``MIN_EPISODE_SECONDS`` to hold a move and its settling (its error is the fit's score)."""
    short = [e.index for e in fit if e.nframe < 2]
    if short:
        raise ValueError(f'every fit episode must have at least 2 frames to be replayed, got episode '
                         f'{_ranges(short)} with {min(e.nframe for e in fit)}; leave it out with --episodes')
    for e in heldout:
        if e.nframe / e.fps < MIN_EPISODE_SECONDS:
            raise ValueError(f'a held-out episode must last at least {MIN_EPISODE_SECONDS:g} s '
                             f'({math.ceil(MIN_EPISODE_SECONDS * e.fps)} frames at {e.fps:g} fps) to score the fit on '
                             f'a move and its settling, got episode {e.index} with {e.nframe} frames '
                             f'({e.nframe / e.fps:.2f} s); hold out another with --heldout')


def first_frames(episodes: Sequence[Episode], max_frames: int) -> list[Episode]:
    """Each episode cut to its first ``max_frames`` frames (``--max-frames``)."""
    max_frames = checks.whole('max_frames', max_frames, 2, None, 'frames')
    return [e if e.nframe <= max_frames else dataclasses.replace(
        e, action=e.action[:max_frames], state=e.state[:max_frames], timestamp=e.timestamp[:max_frames])
        for e in episodes]


EVALUATIONS_PER_ITERATION = len(sysid.PARAMS) + 2
"""Candidate replays per iteration of a fit, as estimated: a Jacobian (one probe per parameter) and about two trial
steps (a step the solver rejects costs another)."""

MAX_FRAME_REPLAYS = 1e8
"""The most frame replays (one frame of one episode simulated for one candidate servo: ``ReplayConfig.substeps``
physics steps) :func:`fit_cost` may estimate before the command refuses. The book's recording (4 episodes of 12 s) is
estimated at about a fiftieth of it (and replays about a quarter of its estimate), so a run at the budget takes some
fifty times as long as the book's: long enough that a reader should choose it, with ``--max-frames`` or fewer
episodes, rather than meet it."""

MAX_BATCH_BYTES = 2e9
"""bytes: the most memory the largest batch of replays may take (commands and recorded joints of every simulation it
holds, float64), as :func:`fit_cost` estimates it. The book's recording needs under 20 MB; the 100,000-frame
held-out episode that asked for this guard had passed 3.5 GB when it was stopped."""


def fit_cost(fit: Sequence[Episode], heldout: Sequence[Episode], *, per_joint: bool = False, offsets: bool = False,
             max_iter: int = 50, config: sysid.ReplayConfig = sysid.ReplayConfig()) -> dict:
    """What :func:`identify` will cost, estimated from the episodes before it starts.

    A batch replays every episode it holds for as many frames as its longest one, so the frames of a set of episodes
    are ``len(set) * longest``. The fit, each leave-one-out fold (one per selected episode, less the main fit's own
    when one episode is held out) and the per-joint fit each take up to ``max_iter`` (folds ``FOLD_MAX_ITER``)
    iterations of ``EVALUATIONS_PER_ITERATION`` candidate replays of their frames (the per-joint fit has ten
    parameters); the scores, the cost rises, the ridge and the final replays add a few replays more. The folds run
    side by side, so their Jacobians form the largest batch.

    Returns:
      ``frames`` (the selected episodes' frames), ``fits`` (the main fit and the folds), ``evaluations`` (candidate
      replays per fit, at most), ``frame_replays`` (the estimate, frames simulated), ``batch_bytes`` (the largest
      batch's memory, bytes) and ``longest`` (frames of the longest episode).
    """
    fit, heldout = list(fit), list(heldout)
    everyone = fit + heldout
    sub = config.substeps(everyone[0].fps)
    nparam = len(sysid.PARAMS)
    longest = max(e.nframe for e in everyone)

    def padded(episodes):
        return len(episodes) * max(e.nframe for e in episodes)

    evaluations = max_iter * EVALUATIONS_PER_ITERATION
    replays = evaluations * padded(fit)  # the main fit
    replays += (2 * nparam + 3) * padded(fit)  # cost_rise: the fit servo and each parameter scaled either way
    folds = [everyone[:k] + everyone[k + 1:] for k in range(len(everyone))]
    if len(heldout) == 1:  # the main fit is the held-out episode's fold
        folds = [f for f, e in zip(folds, everyone) if e is not heldout[0]]
    replays += sum(FOLD_MAX_ITER * EVALUATIONS_PER_ITERATION * padded(f) for f in folds)
    replays += 2 * len(everyone) * padded(everyone)  # each fold's score: its servo and Menagerie's on every episode
    ridge = len(servo_sysid.RIDGE_KPS[::2]) + 1
    replays += ridge * 2 * padded(fit)  # the ridge, as recorded and with the offsets taken off
    if per_joint:
        replays += max_iter * (2 * len(ARM_JOINTS) + 2) * padded(fit)
    replays += 2 * padded(everyone)  # the fitted and Menagerie's servo on every episode
    # a batch holds each simulation's commands and its recorded joints for every physics step of the longest episode
    per_sim = (longest - 1) * sub * 2 * len(JOINTS) * 8
    sims = max([(nparam + 1) * (len(everyone) - 1) * len(folds), (nparam + 1) * len(fit), 2 * ridge * len(fit),
                2 * len(everyone)] + ([(2 * len(ARM_JOINTS) + 1) * len(fit)] if per_joint else []))
    return dict(frames=sum(e.nframe for e in everyone), fits=1 + len(folds), evaluations=evaluations,
                frame_replays=float(replays), batch_bytes=float(sims * per_sim), longest=longest)


def check_cost(fit: Sequence[Episode], heldout: Sequence[Episode], *, max_frame_replays: float = MAX_FRAME_REPLAYS,
               max_batch_bytes: float = MAX_BATCH_BYTES, **kwargs) -> dict:
    """:func:`fit_cost` if it is within the budgets, else a ValueError with the numbers and what to do: fewer
    episodes (``--episodes``), or each cut to its first N frames (``--max-frames N``, the largest N that fits)."""
    cost = fit_cost(fit, heldout, **kwargs)
    over = []
    if cost['frame_replays'] > max_frame_replays:
        over.append(f"up to {cost['frame_replays'] / 1e6:,.0f} million frame replays, over the budget of "
                    f"{max_frame_replays / 1e6:,.0f} million "
                    f"({cost['frames']:,} frames in {len(fit) + len(heldout)} episodes of up to {cost['longest']:,} "
                    f"frames, {cost['fits']} fits (the main fit and the leave-one-out folds) of up to "
                    f"{cost['evaluations']} candidate replays each)")
    if cost['batch_bytes'] > max_batch_bytes:
        over.append(f"a batch of {cost['batch_bytes'] / 1e9:.2g} GB, over the budget of {max_batch_bytes / 1e9:.2g} GB "
                    f"(every simulation of a batch runs as long as the longest episode, {cost['longest']:,} frames)")
    if not over:
        return cost
    low, high = 2, cost['longest']  # the largest --max-frames whose cost fits, by bisection (the cost grows with it)
    while high - low > 1:
        mid = (low + high) // 2
        c = fit_cost(first_frames(fit, mid), first_frames(heldout, mid), **kwargs)
        ok = c['frame_replays'] <= max_frame_replays and c['batch_bytes'] <= max_batch_bytes
        low, high = (mid, high) if ok else (low, mid)
    shortest = math.ceil(MIN_EPISODE_SECONDS * fit[0].fps)
    hint = (f'or keep the first {low:,} frames of each with --max-frames {low}' if low >= shortest else
            'as even the shortest useful episodes would not fit')
    raise ValueError(f"the fit must stay within its budget, got an estimate of {' and '.join(over)}; choose fewer "
                     f"episodes with --episodes, {hint}")


# --------------------------------------------------------------------------------------------------
# Is the recording enough?
# --------------------------------------------------------------------------------------------------

def motion(episodes: Sequence[Episode]) -> dict:
    """How much of ``episodes`` moves and holds: ``seconds`` (total), ``moving_seconds`` (frames whose fastest arm
    command exceeds ``MOVING_SPEED_DEG_S``), ``held_frames`` (held poses inside the model's range, as
    ``servo_sysid.static_offsets_deg`` uses them) and ``shortest_seconds`` (the shortest episode)."""
    episodes = list(episodes)
    if not episodes:
        raise ValueError('episodes must hold at least one episode, got none')
    low, high = np.degrees(sysid.slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    moving = held = 0
    for e in episodes:
        a = e.action[:, sysid.arm_columns(e.joints)]
        if e.nframe >= 2:
            moving += int(np.sum(np.max(np.abs(np.diff(a, axis=0)), axis=1) * e.fps > MOVING_SPEED_DEG_S))
        inside = np.all((a >= low) & (a <= high), axis=1)
        held += int(np.sum(servo_sysid.held_frames(a) & inside))
    fps = episodes[0].fps
    return dict(seconds=float(sum(e.nframe for e in episodes) / fps), moving_seconds=moving / fps,
                held_frames=held, shortest_seconds=float(min(e.nframe for e in episodes) / fps))


def recording_warnings(fit_motion: dict, *, fps: float) -> list[str]:
    """One sentence per reason the fit episodes may be too short or too still to identify the servo."""
    out = []
    if fit_motion['moving_seconds'] < MIN_MOVING_SECONDS:
        out.append(f"too static: the fit episodes move (some arm command faster than {MOVING_SPEED_DEG_S:g} deg/s) "
                   f"for {fit_motion['moving_seconds']:.1f} s, under {MIN_MOVING_SECONDS:g} s; the lag shows only "
                   f"while the arm moves, so record more moves")
    if fit_motion['held_frames'] < MIN_HELD_FRAMES:
        out.append(f"too few held poses: {fit_motion['held_frames']} held frames in the fit episodes, under "
                   f"{MIN_HELD_FRAMES}; kp against gravity and the static offsets show only where the arm holds "
                   f"still, so pause for a second between moves")
    if fit_motion['shortest_seconds'] < MIN_EPISODE_SECONDS:
        out.append(f"too short: an episode lasts {fit_motion['shortest_seconds']:.2f} s, under "
                   f"{MIN_EPISODE_SECONDS:g} s, less than one move and its settling")
    if fps < 10:
        out.append(f'low frame rate: {fps:g} fps; a lag of about 0.1 s spans less than one frame')
    return out


# --------------------------------------------------------------------------------------------------
# Models with a servo per joint, and their replay
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class JointServos:
    """The servo as written to the file: a shared :class:`ArmServo` and, per arm joint, its kp, kv and offset."""

    shared: ArmServo
    """The fitted servo; every joint's damping, frictionloss, armature and forcerange, and the gripper's all."""
    kp: tuple[float, ...]
    """(5,) kp per arm joint, N·m/rad (``ARM_JOINTS`` order)."""
    kv: tuple[float, ...]
    """(5,) kv per arm joint, N·m·s/rad."""
    offsets_deg: tuple[float, ...] = (0.0,) * len(ARM_JOINTS)
    """(5,) c per arm joint, degrees: the actuator drives the joint towards ``ctrl - c``."""
    delay: float = 0.0
    """Command delay of every actuator, s (MuJoCo's ``actuator_delay``; 0: none)."""

    @classmethod
    def uniform(cls, servo: ArmServo, offsets_deg: Sequence[float] | None = None, delay: float = 0.0
                ) -> 'JointServos':
        """``servo`` on every joint, with ``offsets_deg`` (default none) and ``delay`` (s)."""
        n = len(ARM_JOINTS)
        offsets = (0.0,) * n if offsets_deg is None else tuple(float(c) for c in offsets_deg)
        return cls(shared=servo, kp=(servo.kp,) * n, kv=(servo.kv,) * n, offsets_deg=offsets, delay=float(delay))

    def model(self) -> servo_models.JointModel:
        """The same servos as a ``servo_models.JointModel`` (the gripper keeps the shared servo)."""
        shared = servo_models.JointModel.uniform(self.shared, delay=self.delay, offsets_deg=self.offsets_deg)
        return shared.replace(kp=tuple(self.kp) + (self.shared.kp,), kv=tuple(self.kv) + (self.shared.kv,))

    @property
    def per_joint(self) -> bool:
        """Some joint's kp or kv differs from the shared servo's."""
        return any(k != self.shared.kp for k in self.kp) or any(k != self.shared.kv for k in self.kv)

    def lag_ms(self) -> np.ndarray:
        """(5,) (kv + damping)/kp per arm joint, ms."""
        return 1e3 * (np.array(self.kv) + self.shared.damping) / np.array(self.kp)

    def apply(self, m: mujoco.MjModel) -> None:
        """Put the per-joint kp, kv and offsets on a model that already carries ``shared`` (``sysid.arm_model``).

        Actuator i drives joint i: ``gainprm[0] = kp``, ``biasprm[:3] = (-kp c, -kp, -kv)``, and its ctrlrange moves
        by ``c`` so that the clamp acts on ``ctrl - c`` where the shifted replay clamped the shifted command.
        """
        for i, name in enumerate(ARM_JOINTS):
            a = m.actuator(name).id
            c = math.radians(self.offsets_deg[i])
            m.actuator_gainprm[a, 0] = self.kp[i]
            m.actuator_biasprm[a, :3] = (-self.kp[i] * c, -self.kp[i], -self.kv[i])
            m.actuator_ctrlrange[a] += c


def joint_model(servos: JointServos, config: sysid.ReplayConfig, *, fps: float) -> mujoco.MjModel:
    """The slim SO-101 of the replay (``sysid.arm_model``) with ``servos`` on its joints."""
    m = sysid.arm_model(servos.shared, config, fps=fps)
    servos.apply(m)
    return m


@mj.captured_warnings()
def replay_models(models: Sequence[mujoco.MjModel], episodes: Sequence[Episode]) -> np.ndarray:
    """Replay every episode open loop on every model, as ``sysid.replay`` does for servos, in one batch.

    The models' timesteps must divide a frame: ``substeps = round(1 / (fps * timestep))``. Shorter episodes hold
    their last command. Used for per-joint servos, which ``sysid.replay`` (one servo on every joint) cannot hold.

    Returns:
      (nmodel, nepisode, nframe_max, 5) simulated arm joints, degrees (NaN after a divergence and past an episode's
      end).
    """
    fps = episodes[0].fps
    sub = max(1, round(1.0 / (fps * models[0].opt.timestep)))
    nframe = max(e.nframe for e in episodes)
    qpos, warned = sysid.rollout([m for m in models for _ in episodes], list(episodes) * len(models), sub)
    nsim = len(models) * len(episodes)
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    sim = np.rad2deg(qpos[:, :, arm]).reshape(len(models), len(episodes), nframe, len(ARM_JOINTS))
    for k in range(nsim):
        i, j = divmod(k, len(episodes))
        sim[i, j, episodes[j].nframe:] = np.nan
        if mj.diverged(qpos[k, :episodes[j].nframe], warned=bool(warned[k])):
            sim[i, j] = np.nan
    return sim


def model_sim(models: Sequence[servo_models.JointModel], episodes: Sequence[Episode],
              config: sysid.ReplayConfig) -> np.ndarray:
    """:func:`replay_models`' array for ``servo_models.JointModel`` models (a delay included), one batch."""
    nframe = max(e.nframe for e in episodes)
    sim = np.full((len(models), len(episodes), nframe, len(ARM_JOINTS)), np.nan)
    for i, row in enumerate(servo_models.replay(list(models), list(episodes), config=config)):
        for j, rep in enumerate(row):
            if not rep.diverged:
                sim[i, j, :rep.sim_deg.shape[0]] = rep.sim_deg
    return sim


def joint_errors(sim: np.ndarray, episodes: Sequence[Episode]) -> np.ndarray:
    """(nframe_total - nepisode, 5) |sim - real| over frames 1..n-1 of each episode, degrees (sim: one model's
    ``(nepisode, nframe_max, 5)`` from :func:`replay_models`)."""
    return np.concatenate([np.abs(sim[j, 1:e.nframe] - e.state[1:, sysid.arm_columns(e.joints)])
                           for j, e in enumerate(episodes)])


def fit_per_joint(shared: ArmServo, episodes: Sequence[Episode], *, config: sysid.ReplayConfig = sysid.ReplayConfig(),
                  offsets_deg: Sequence[float] | None = None, max_iter: int = 50, digits: int = sysid.FIT_DIGITS,
                  progress: bool = True) -> JointServos:
    """kp and kv of each arm joint, the other four parameters kept at ``shared``'s, fitted from ``shared``.

    The same least squares as ``sysid.fit_servo`` (log10 parameters inside ``sysid.LOG_BOUNDS``, per-frame residuals
    of the five arm joints, ``sysid.least_squares``: MuJoCo's solver with the fit's schedule), over ten parameters,
    every candidate replayed with :func:`replay_models`. The result is rounded to ``digits`` significant digits.
    """
    episodes = list(episodes)
    n = len(ARM_JOINTS)
    lo, hi = sysid.LOG_BOUNDS
    bounds = (np.r_[[lo[0]] * n, [lo[1]] * n], np.r_[[hi[0]] * n, [hi[1]] * n])
    fps = episodes[0].fps
    real = [e.state[1:, sysid.arm_columns(e.joints)] for e in episodes]
    base = JointServos.uniform(shared, offsets_deg)

    def servos_of(x):
        return dataclasses.replace(base, kp=tuple(10.0 ** x[:n]), kv=tuple(10.0 ** x[n:]))

    def residual(x):
        x = np.asarray(x, dtype=float).reshape(2 * n, -1)
        sim = replay_models([joint_model(servos_of(c), config, fps=fps) for c in x.T], episodes)
        cols = [np.concatenate([(sim[i, j, 1:e.nframe] - real[j]).ravel() for j, e in enumerate(episodes)])
                for i in range(x.shape[1])]
        r = np.stack(cols, axis=1)
        return np.nan_to_num(r, nan=1e3) / math.sqrt(r.shape[0])

    x0 = np.clip(np.log10(np.r_[[shared.kp] * n, [max(shared.kv, 10.0 ** lo[1])] * n]), *bounds)
    bar = _bar(max_iter, 'fitting per joint', progress)

    def on_iter(trace):
        if bar is not None and len(trace) <= max_iter:
            bar.update(1)

    x, _ = sysid.least_squares(x0, residual, bounds=bounds, eps=1e-3, max_iter=max_iter, on_iter=on_iter)
    if bar is not None:
        bar.close()
    fitted = servos_of(x)
    return dataclasses.replace(fitted, kp=tuple(robust.round_sig(v, digits) for v in fitted.kp),
                               kv=tuple(robust.round_sig(v, digits) for v in fitted.kv))


def _bar(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False, ncols=80)


# --------------------------------------------------------------------------------------------------
# The identification
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Identification:
    """Everything :func:`identify` found; :func:`report` turns it into the command's report."""

    source: str
    dataset: LeRobotDataset
    fit: tuple[Episode, ...]
    heldout: tuple[Episode, ...]
    servos: JointServos
    """What the file holds."""
    fit_converged: bool
    folds: tuple[dict, ...]
    """``servo_truth.spring_rows`` over every selected episode: each fold's spring, fitted from ``START``."""
    static_offsets_deg: np.ndarray | None
    """(5,) command minus joint in the fit episodes' held poses, degrees (None: no held pose)."""
    ridge: tuple[dict, ...]
    """``servo_sysid.ridge`` rows through the shared servo (with ``_shifted`` keys when offsets were measured)."""
    sim: dict[str, np.ndarray]
    """``'fitted'`` and ``'menagerie'``: (nepisode, nframe_max, 5) replays of ``fit + heldout``, degrees."""
    cost_rise: dict[str, float]
    """Per parameter (``sysid.PARAMS``): the fit cost's smaller relative rise when that parameter alone is scaled by
    ``PINNED_RATIO`` up or down (:func:`cost_rise`)."""
    best_shift: int
    """The teleport's best shift on the fit episodes, frames."""
    motion: dict
    """:func:`motion` of the fit episodes."""
    warnings: tuple[str, ...]
    config: sysid.ReplayConfig = sysid.ReplayConfig()
    """The replay settings of the fit."""
    structures: tuple = ()
    """``servo_truth.Fold`` per selected episode: the spring and its rivals fitted on the other episodes."""
    intervals: tuple[dict, ...] = ()
    """``servo_truth.intervals`` rows: how far each parameter can move before the held-out error rises."""
    truth: tuple[dict, ...] = ()
    """``servo_truth.truth_table`` rows of the recording: every published set, the teleport, the structures."""


def identify(dataset: LeRobotDataset, fit: Sequence[Episode], heldout: Sequence[Episode], *, source: str = '',
             per_joint: bool = False, offsets: bool = False, delay: bool = False,
             config: sysid.ReplayConfig = sysid.ReplayConfig(), max_iter: int = 50, progress: bool = True
             ) -> Identification:
    """Chapter 4's fit on ``fit``, its rivals and spread over leave-one-out folds, and the replays of every episode.

    Args:
      dataset: the recording (for its name and fps).
      fit, heldout: the episodes to fit and to hold out (:func:`select_episodes`).
      source: where the recording came from, for the report.
      per_joint: also fit each arm joint's kp and kv (:func:`fit_per_joint`).
      offsets: take the held-pose offsets to be calibration (see the module docstring).
      delay: write the *spring + delay* structure (see the module docstring); not with ``per_joint``.
      config: the replay settings (the chapter's: contacts off, limits on, implicitfast, 1/210 s at 30 fps).
      max_iter: the fits' iteration cap.
      progress: tqdm bars on stderr.
    """
    if delay and per_joint:
        raise ValueError('delay and per_joint cannot be combined: the delay structure shares one servo on every '
                         'joint, got both')
    fit, heldout = list(fit), list(heldout)
    fit_motion = motion(fit)
    warnings = recording_warnings(fit_motion, fps=dataset.fps)
    try:
        static = servo_sysid.static_offsets_deg(fit)
    except ValueError:
        static = None
    if offsets and static is None:
        raise ValueError('offsets need held poses in the fit episodes (the arm still for a moment), got none')
    use_offsets = static if offsets else None
    fit_in = servo_sysid.shift_commands(fit, use_offsets) if offsets else fit
    everyone = fit + heldout

    result = sysid.fit_servo(fit_in, starts={'therobotstudio': START}, config=config, max_iter=max_iter,
                             progress=progress)
    servo = result.servo
    converged = all(s.converged for s in result.starts)
    if not converged:
        warnings.append(f'the fit stopped at its cap of {max_iter} iterations before its tolerances were met')

    rise = cost_rise(servo, fit_in, config=config)
    folds_data = dataclasses.replace(
        dataset, episodes=tuple(servo_sysid.shift_commands(everyone, use_offsets) if offsets else everyone))
    main_fold = {heldout[0].index: servo} if len(heldout) == 1 else {}  # the main fit saw only that fold's episodes
    # every other fold starts from START, which has seen none of the recording: no fold's start knows its episode
    structures = servo_truth.compare_structures(folds_data, known=main_fold, start=START, config=config,
                                                max_iter=FOLD_MAX_ITER, progress=progress)
    folds = servo_truth.spring_rows(structures, folds_data, config=config)
    spans = servo_truth.intervals(structures, folds_data, config=config)
    truth = servo_truth.truth_table(folds_data, structures, config=config)

    kps = [kp for kp in servo_sysid.RIDGE_KPS[::2] if kp * servo.lag_ms / 1e3 >= servo.damping]
    ridge = servo_sysid.ridge(fit, servo, kps=sorted(set(kps) | {servo.kp}), offsets_deg=static,
                              config=config) if len(kps) >= 2 else []

    servos = JointServos.uniform(servo, use_offsets)
    if per_joint:
        servos = fit_per_joint(servo, fit, config=config, offsets_deg=use_offsets, max_iter=max_iter,
                               progress=progress)
    if delay:
        start = servo_models.JointModel.uniform(servo, delay=1.0 / (dataset.fps * config.substeps(dataset.fps)),
                                                offsets_deg=use_offsets)
        delayed = servo_models.fit([(servo_models.SPRING_DELAY, fit, start)], config=config, max_iter=max_iter)[0]
        shared = delayed.model.joint(ARM_JOINTS[0]).rounded(sysid.FIT_DIGITS)
        servos = JointServos.uniform(shared, use_offsets, delay=robust.round_sig(delayed.model.delay,
                                                                                  sysid.FIT_DIGITS))
    sim = model_sim([servos.model(), servo_models.JointModel.uniform(sysid.MENAGERIE)], everyone, config)
    if np.isnan(sim[0][:, 0]).any():
        warnings.append('the fitted servo diverged on some episode: its errors are reported as NaN')
    result_ident = Identification(
        source=source, dataset=dataset, fit=tuple(fit), heldout=tuple(heldout), servos=servos,
        fit_converged=converged, folds=tuple(folds), static_offsets_deg=static, ridge=tuple(ridge),
        sim={'fitted': sim[0], 'menagerie': sim[1]}, cost_rise=rise, best_shift=servo_sysid.best_shift(fit),
        motion=fit_motion, warnings=tuple(warnings), config=config, structures=tuple(structures),
        intervals=tuple(spans), truth=tuple(truth))
    errors = heldout_errors(result_ident)
    if errors['fitted']['mean'] >= errors['teleport-best-shift']['mean']:
        warnings.append('the fitted servo is no closer to the held-out episodes than the teleport at its best shift: '
                        'the servo model does not explain this recording (see the page on what each warning means)')
    return dataclasses.replace(result_ident, warnings=tuple(warnings))


def cost_rise(servo: ArmServo, episodes: Sequence[Episode], *, config: sysid.ReplayConfig = sysid.ReplayConfig(),
              factor: float = PINNED_RATIO) -> dict[str, float]:
    """How much each parameter alone matters to the fit: per parameter of ``sysid.PARAMS``, the smaller of the
    relative rises of the cost (half the mean squared error, the fit's objective) when it is multiplied and when it
    is divided by ``factor``, everything else kept; and ``split``, the smaller rise when kv or the joint damping is
    multiplied by ``factor`` and the other gives up as much, their sum (and so the lag) kept. All 15 servos replay
    in one batch."""
    servos = [servo] + [dataclasses.replace(servo, **{p: getattr(servo, p) * f}) for p in sysid.PARAMS
                        for f in (factor, 1.0 / factor)]
    more_kv = min(servo.kv * (factor - 1.0), servo.damping)
    more_damping = min(servo.damping * (factor - 1.0), servo.kv)
    servos += [dataclasses.replace(servo, kv=servo.kv + more_kv, damping=servo.damping - more_kv),
               dataclasses.replace(servo, kv=servo.kv - more_damping, damping=servo.damping + more_damping)]
    costs = []
    for row in sysid.replay(servos, list(episodes), config=config):
        err = np.concatenate([r.sim_deg[1:] - r.real_deg[1:] for r in row])
        costs.append(0.5 * float(np.mean(err ** 2)) if np.all(np.isfinite(err)) else math.inf)
    rise = {p: min(costs[1 + 2 * k], costs[2 + 2 * k]) / costs[0] - 1.0 for k, p in enumerate(sysid.PARAMS)}
    return rise | {'split': min(costs[-2], costs[-1]) / costs[0] - 1.0}


def heldout_errors(ident: Identification) -> dict[str, dict[str, float]]:
    """Mean absolute error on the held-out episodes, degrees, per arm joint and ``mean``, for ``fitted`` (the
    written model), ``menagerie``, ``teleport`` (shift 1) and ``teleport-best-shift``."""
    n = len(ident.fit)
    out = {}
    for name in ('fitted', 'menagerie'):
        err = joint_errors(ident.sim[name][n:], ident.heldout)
        out[name] = _by_joint(err)
    for name, shift in (('teleport', 1), ('teleport-best-shift', ident.best_shift)):
        out[name] = _by_joint(servo_sysid.teleport_errors(ident.heldout, shift))
    return out


def _by_joint(err: np.ndarray) -> dict[str, float]:
    return {**{j: float(v) for j, v in zip(ARM_JOINTS, err.mean(axis=0))}, 'mean': float(err.mean())}


# --------------------------------------------------------------------------------------------------
# What the data pin down
# --------------------------------------------------------------------------------------------------

SPREAD_KEYS = sysid.PARAMS + ('lag_ms',)

OFFSET_DEG = 1.0
"""deg: a held-pose offset this large (command - joint) leaves kp to how it is explained, sag or calibration; a soft
servo's sag under the SO-101's own weight is of this order (chapter 4's elbow: about 3 degrees)."""


BOUND_MARGIN = 1.05
"""A value within this factor of a bound of ``sysid.LOG_BOUNDS`` counts as stopped by the bound."""


def _g(value: float) -> str:
    """Three significant digits, without a bare trailing point (``400``, ``0.950``)."""
    return f'{value:#.3g}'.rstrip('.')


def spread(ident: Identification) -> dict[str, dict]:
    """Per parameter of the shared servo and its lag: ``fitted``, ``fold_min``, ``fold_max`` (over the leave-one-out
    folds), ``cost_rise_pct`` (:func:`cost_rise`, percent; NaN for the lag) and ``pinned``: the fitted value and the
    folds' lie within a factor ``PINNED_RATIO`` of each other, scaling the parameter by that factor raises the cost
    by ``COST_RISE`` or more, and none of them is at a bound of the fit (``sysid.LOG_BOUNDS``, within
    ``BOUND_MARGIN``); kv and damping are pinned only together (at a fixed lag one trades against the other), and
    only if that trade raises the cost by ``COST_RISE`` too (``cost_rise['split']``); kp not
    while it hangs on how the held-pose offsets are explained (:func:`kp_hangs_on_offsets`)."""
    servo = ident.servos.shared
    ambiguous = kp_hangs_on_offsets(ident)
    low, high = (10.0 ** b for b in sysid.LOG_BOUNDS)
    out = {}
    for key in SPREAD_KEYS:
        values = [r[key] for r in ident.folds] + [getattr(servo, key)]
        lo, hi = min(values), max(values)
        pinned = bool(lo > 0 and hi <= PINNED_RATIO * lo) and not (key == 'kp' and ambiguous)
        if key in sysid.PARAMS:  # a parameter on the edge of the fit's box is where the box stopped it, not the data
            k = sysid.PARAMS.index(key)
            pinned = (pinned and low[k] * BOUND_MARGIN < lo and hi < high[k] / BOUND_MARGIN
                      and ident.cost_rise[key] >= COST_RISE)
        out[key] = dict(fitted=float(getattr(servo, key)), fold_min=float(min(values[:-1])),
                        fold_max=float(max(values[:-1])), cost_rise_pct=100 * ident.cost_rise.get(key, math.nan),
                        pinned=pinned)
    # they trade against each other at a fixed lag: pinned only together, and only if the trade itself costs
    if not (out['kv']['pinned'] and out['damping']['pinned'] and ident.cost_rise.get('split', 0.0) >= COST_RISE):
        out['kv']['pinned'] = out['damping']['pinned'] = False
    return out


def ridge_summary(ident: Identification) -> dict | None:
    """What the ridge of constant lag says about kp: ``bottom_kp`` (lowest cost with the commands as recorded),
    ``stiff_kp`` and ``stiff_over_bottom`` (the stiffest point's cost over the bottom's), and with the offsets taken
    off,
    ``shifted_bottom_kp`` and the kp range ``flat_kp_min`` ... ``flat_kp_max`` within ``RIDGE_FLAT`` of its lowest."""
    rows = list(ident.ridge)
    if not rows:
        return None
    bottom = servo_sysid.ridge_bottom(rows)
    out = dict(lag_ms=float(ident.servos.shared.lag_ms), bottom_kp=float(bottom['kp']), bottom_cost=bottom['cost'],
               stiff_kp=float(rows[-1]['kp']), stiff_over_bottom=float(rows[-1]['cost'] / bottom['cost']))
    if 'cost_shifted' in rows[0]:
        low = servo_sysid.ridge_bottom(rows, 'cost_shifted')
        flat = [r['kp'] for r in rows if r['cost_shifted'] <= (1 + RIDGE_FLAT) * low['cost_shifted']]
        out.update(shifted_bottom_kp=float(low['kp']), flat_kp_min=float(min(flat)), flat_kp_max=float(max(flat)))
    return out


def offsets_structure_kp_ratio(ident: Identification) -> float:
    """The largest factor, over the folds, between the kp of the *spring + offsets* structure and the fold's spring
    kp (1: the fitted offsets leave kp where it was; NaN without that structure)."""
    name, spring = servo_models.SPRING_OFFSETS.name, servo_models.SPRING.name
    ratios = [f.models[name].kp[0] / f.models[spring].kp[0] for f in ident.structures if name in f.models]
    return float(max(max(r, 1.0 / r) for r in ratios)) if ratios else math.nan


def kp_hangs_on_offsets(ident: Identification) -> bool:
    """Whether kp says how the held-pose offsets are explained (sag or calibration) rather than how stiff the servo
    is: held-pose offsets of ``OFFSET_DEG`` or more, and either the *spring + offsets* structure, fitted fold by fold
    with the offsets free, moves kp by more than a factor ``PINNED_RATIO`` from the fold's spring, or (without that
    structure) the ridge of constant lag with the offsets taken off is flat (within ``RIDGE_FLAT``) more than a factor
    ``PINNED_RATIO`` from the fitted kp. On chapter 4's recording the fitted offsets stay under a degree and kp does
    not move: the recording prefers the sag."""
    offsets, ridge = ident.static_offsets_deg, ridge_summary(ident)
    if offsets is None or not np.any(np.abs(offsets) >= OFFSET_DEG):
        return False
    ratio = offsets_structure_kp_ratio(ident)
    if not math.isnan(ratio):
        return bool(ratio > PINNED_RATIO)
    if not ridge or 'flat_kp_min' not in ridge:
        return False
    kp = ident.servos.shared.kp
    return bool(ridge['flat_kp_max'] > PINNED_RATIO * kp or ridge['flat_kp_min'] < kp / PINNED_RATIO)


def findings(ident: Identification) -> tuple[list[str], list[str]]:
    """Sentences on what the recording pins down, and what it does not."""
    s = spread(ident)
    pinned, loose = [], []
    lag = s['lag_ms']
    (pinned if lag['pinned'] else loose).append(
        f"the lag (kv + damping)/kp: {lag['fitted']:.0f} ms, {lag['fold_min']:.0f} to {lag['fold_max']:.0f} ms over "
        f"the {len(ident.folds)} folds")
    for key, unit in (('frictionloss', 'N·m'), ('armature', 'kg·m²'), ('forcerange', 'N·m')):
        row = s[key]
        (pinned if row['pinned'] else loose).append(
            f"{key}: {_g(row['fitted'])} {unit}, {_g(row['fold_min'])} to {_g(row['fold_max'])} over the folds")
    kv, damping = s['kv'], s['damping']
    if kv['pinned'] and damping['pinned']:
        pinned.append(f"kv and damping one by one: {_g(kv['fold_min'])} to {_g(kv['fold_max'])} and "
                      f"{_g(damping['fold_min'])} to {_g(damping['fold_max'])} N·m·s/rad over the folds (the force "
                      f"clamp, where kv stops braking and the damping does not, told them apart)")
    else:
        loose.append(f"kv and damping one by one ({_g(kv['fold_min'])} to {_g(kv['fold_max'])} and "
                     f"{_g(damping['fold_min'])} to {_g(damping['fold_max'])} N·m·s/rad over the folds): only their "
                     f"sum sets the lag; the clamp asks only that damping keep forcerange/damping above the joints' "
                     f"speeds")
    kp = s['kp']
    ridge = ridge_summary(ident)
    sentence = f"kp: {_g(kp['fitted'])} N·m/rad, {_g(kp['fold_min'])} to {_g(kp['fold_max'])} over the folds"
    if ident.static_offsets_deg is not None:
        big = [(j, c) for j, c in zip(ARM_JOINTS, ident.static_offsets_deg) if abs(c) >= OFFSET_DEG]
        offsets = ', '.join(f'{j} {c:+.2f}' for j, c in big) or f'none of {OFFSET_DEG:g} degree or more'
        sentence += (f"; but in the held poses the real joints stop off their commands (command - joint, degrees: "
                     f"{offsets}), which a soft servo explains as sag and a stiff one with a calibration offset "
                     f"explains as well")
        if ridge and 'flat_kp_min' in ridge:
            sentence += (f". Along the ridge of constant lag the cost is lowest at kp {_g(ridge['bottom_kp'])} and "
                         f"{ridge['stiff_over_bottom']:.3g} times that at kp {ridge['stiff_kp']:.0f}; with the offsets "
                         f"taken off the commands it is within {100 * RIDGE_FLAT:.0f} % of its lowest from kp "
                         f"{_g(ridge['flat_kp_min'])} to {_g(ridge['flat_kp_max'])}")
            ratio = offsets_structure_kp_ratio(ident)
            if not math.isnan(ratio):
                sentence += (f"; fitted as parameters fold by fold (spring + offsets), the offsets move kp by up to a "
                             f"factor {ratio:.3g}")
            sentence += (': kp is pinned only by what the offsets are taken to be' if kp_hangs_on_offsets(ident) else
                         ': the recording itself prefers the sag, so the offsets do not decide kp')
    else:
        sentence += ('; the recording holds no still pose, so whether a calibration offset hides in it cannot be '
                     'checked: kp rests on the moves alone')
    (pinned if kp['pinned'] else loose).append(sentence)
    return pinned, loose


# --------------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------------

def write_mjcf(ident: Identification, path: str | pathlib.Path) -> pathlib.Path:
    """Write Menagerie's SO-101 with the fitted servo, loadable with ``mujoco.MjModel.from_xml_path``.

    The file is Menagerie's ``so101.xml`` as ``MjSpec`` reads it, with a default class ``fitted_servo`` (a child of
    Menagerie's ``sts3215``: ``<joint damping frictionloss armature>`` and the position servo's ``gainprm``,
    ``biasprm``, ``forcerange``) on every joint and actuator, and with per-joint servos one child class per arm
    joint (``fitted_servo_<joint>``). Offsets go into each arm actuator's ``biasprm[0] = -kp c`` and ctrlrange. The
    meshes are read from Menagerie's folder by absolute path (``meshdir``); a comment at the top says what was fitted,
    on which recording, and how the replay was run (the recording's name made inert: ``outputs.comment_text``). The
    file is written atomically (``outputs.write_atomic``): an interrupted write leaves any old file whole.
    Menagerie's own option (timestep, integrator) and contacts stay;
    the replay that scored the fit ran with contacts off and the timestep of ``sysid.ReplayConfig``.
    """
    xml = so101.menagerie_xml('so101')
    spec = mujoco.MjSpec.from_file(str(xml))
    spec.meshdir = str((xml.parent / spec.meshdir).resolve())
    servos, shared = ident.servos, ident.servos.shared
    top = spec.add_default(SERVO_CLASS, spec.find_default('sts3215'))
    _set_class(top, shared.kp, shared.kv, 0.0, shared)
    classes = {}
    for i, name in enumerate(ARM_JOINTS):
        if servos.per_joint:
            classes[name] = spec.add_default(f'{SERVO_CLASS}_{name}', top)
            _set_class(classes[name], servos.kp[i], servos.kv[i], 0.0, shared)
        else:
            classes[name] = top
    classes['gripper'] = top
    for name in JOINTS:
        i = ARM_JOINTS.index(name) if name in ARM_JOINTS else None
        kp = servos.kp[i] if i is not None else shared.kp
        kv = servos.kv[i] if i is not None else shared.kv
        c = math.radians(servos.offsets_deg[i]) if i is not None else 0.0
        joint, actuator = spec.joint(name), spec.actuator(name)
        joint.classname = actuator.classname = classes[name]
        _set_joint(joint, shared)
        _set_actuator(actuator, kp, kv, c, shared.forcerange)  # an element keeps the values its class had when parsed
        actuator.ctrlrange = np.asarray(actuator.ctrlrange) + c
        if servos.delay > 0:  # MuJoCo's own command delay, read from a ctrl history
            actuator.delay = servos.delay
            actuator.nsample = servo_models.HISTORY_SAMPLES
            actuator.interp = sysid.INTERP_LINEAR
    text = spec.to_xml()
    header = _header(ident, xml)
    text = re.sub(r'(<mujoco[^>]*>)', lambda m: m.group(1) + '\n' + header, text, count=1)
    return outputs.write_atomic(path, lambda f: f.write(text.encode('utf-8')))


def _set_joint(joint, servo: ArmServo) -> None:
    joint.damping = [servo.damping, 0.0, 0.0]
    joint.frictionloss = servo.frictionloss
    joint.armature = servo.armature


def _set_actuator(actuator, kp: float, kv: float, c: float, forcerange: float) -> None:
    actuator.gainprm[0] = kp
    actuator.biasprm[:3] = [-kp * c, -kp, -kv]
    actuator.forcerange = [-forcerange, forcerange]


def _set_class(default, kp: float, kv: float, c: float, servo: ArmServo) -> None:
    _set_joint(default.joint, servo)
    _set_actuator(default.actuator, kp, kv, c, servo.forcerange)


def _header(ident: Identification, xml: pathlib.Path) -> str:
    servo = ident.servos.shared
    step = 1.0 / (ident.dataset.fps * ident.config.substeps(ident.dataset.fps))
    lines = [
        f'Written by physai fit-servo from {ident.source}: fitted on episodes {_ranges([e.index for e in ident.fit])},',
        f'held out {_ranges([e.index for e in ident.heldout])}. The arm is MuJoCo Menagerie\'s {xml}',
        f'(meshes read from there by absolute path). Class {SERVO_CLASS}: ' +
        ', '.join(f'{k} {v:g}' for k, v in servo.as_dict().items()) +
        f' (lag (kv + damping)/kp {servo.lag_ms:.0f} ms).',
        'These are the effective servo of the recorded teleoperation loop (leader, bus, servo), not bench constants:',
        'the lag is what the recording pins down; see the report for the spread of the rest.',
        'Identified by an open-loop replay with contacts off (Menagerie\'s collision boxes overlap in the folded',
        f'pose), joint limits on, {ident.config.integrator} at {1e3 * step:.3f} ms; '
        'this file keeps Menagerie\'s own option and contacts.',
    ]
    if ident.servos.per_joint:
        lines.append('Per-joint classes fitted_servo_<joint> carry each arm joint\'s own kp and kv (gainprm, biasprm).')
    if ident.servos.delay > 0:
        lines.append(f'Every actuator reads its ctrl {1e3 * ident.servos.delay:.3g} ms late from a history of '
                     f'{servo_models.HISTORY_SAMPLES} samples (delay, nsample, interp="linear"; MuJoCo 3.5.0 or later).')
    if any(ident.servos.offsets_deg):
        lines += ['Calibration offsets c (degrees; the joint is driven towards ctrl - c): ' +
                  ', '.join(f'{j} {c:+.3f}' for j, c in zip(ARM_JOINTS, ident.servos.offsets_deg)) + '.',
                  'MuJoCo\'s <position> has no offset: each arm actuator carries it as biasprm[0] = -kp*c (written as',
                  '<general>), and its ctrlrange is moved by c so the clamp acts where the shifted command would.']
    body = '\n'.join('  ' + outputs.comment_text(line) for line in lines)  # the source is the recording's own text
    return f'<!--\n{body}\n-->'


# --------------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------------

def fit_stops(ident: Identification) -> tuple[bool, list[str]]:
    """Whether the main fit converged, and a sentence for each place it stopped that is not a minimum the data set.

    A fit that ends where it started (``START`` as the fit holds it: clipped into ``sysid.LOG_BOUNDS`` and rounded
    to ``sysid.FIT_DIGITS``) has not converged, whatever its solver said: the data did not move it (a glitch so large
    that no servo changes the cost, say). A parameter that ends within ``BOUND_MARGIN`` of a bound of the fit's box
    is where the box stopped it, not where the data put it; the report says so (and :func:`spread` never calls it
    pinned). Per-joint kp and kv are checked the same way.
    """
    servo = ident.servos.shared
    start = sysid.from_log(sysid.to_log(START)).rounded(sysid.FIT_DIGITS)
    converged, notes = ident.fit_converged, []
    if servo == start:
        converged = False
        notes.append('the fit ended where it started (TheRobotStudio\'s gains): the recording did not move it, so the '
                     'written servo is the start, not a fit; check the recording for glitches and its moves')
    low, high = (10.0 ** b for b in sysid.LOG_BOUNDS)
    values = [(name, getattr(servo, name), k) for k, name in enumerate(sysid.PARAMS)]
    if ident.servos.per_joint:
        values += [(f'{j} {name}', v, sysid.PARAMS.index(name)) for name in ('kp', 'kv')
                   for j, v in zip(ARM_JOINTS, getattr(ident.servos, name))]
    for name, value, k in values:
        if value <= low[k] * BOUND_MARGIN or value >= high[k] / BOUND_MARGIN:
            edge, bound = ('lower', low[k]) if value <= low[k] * BOUND_MARGIN else ('upper', high[k])
            notes.append(f'{name} ended at the {edge} bound of the fit ({_g(value)}, bound {bound:g}): there the bound '
                         f'stopped it, not the data')
    return converged, notes


def report(ident: Identification, out: str | pathlib.Path | None = None) -> dict:
    """The command's report as a JSON-ready dict (``--json`` prints it; :func:`report_text` formats it);
    ``fit_converged`` and the warnings include :func:`fit_stops`."""
    data = ident.dataset
    converged, stops = fit_stops(ident)
    servos = ident.servos
    pinned, loose = findings(ident)
    folds = [{k: r[k] for k in ('heldout', *SPREAD_KEYS, 'heldout_mae_deg', 'menagerie_heldout_mae_deg',
                                'teleport_shift_deg')} for r in ident.folds]
    summary = servo_sysid.fold_summary(ident.folds)
    return dict(
        source=ident.source, version=data.version, fps=data.fps, robot_type=data.robot_type,
        episodes=dict(fit=[e.index for e in ident.fit], heldout=[e.index for e in ident.heldout]),
        recording=ident.motion,
        servo=servos.shared.as_dict() | dict(lag_ms=servos.shared.lag_ms, delay_ms=1e3 * servos.delay),
        per_joint=({j: dict(kp=servos.kp[i], kv=servos.kv[i], lag_ms=float(servos.lag_ms()[i]))
                    for i, j in enumerate(ARM_JOINTS)} if servos.per_joint else None),
        offsets_deg=(dict(zip(ARM_JOINTS, servos.offsets_deg)) if any(servos.offsets_deg) else None),
        static_offsets_deg=(None if ident.static_offsets_deg is None
                            else {j: float(c) for j, c in zip(ARM_JOINTS, ident.static_offsets_deg)}),
        spread=spread(ident), ridge=ridge_summary(ident), pinned=pinned, not_pinned=loose,
        heldout_mae_deg=heldout_errors(ident), folds=folds,
        leave_one_out=dict(fitted_deg=summary['fitted_deg'], menagerie_deg=summary['menagerie_deg']),
        structures=servo_truth.structure_rows(ident.structures) if ident.structures else [],
        intervals=list(ident.intervals), rise_pct=100 * servo_truth.RISE,
        truth_table=[{k: r[k] for k, *_ in servo_truth.TRUTH_COLUMNS} | dict(kind=r['kind']) for r in ident.truth],
        fit_converged=converged, warnings=list(ident.warnings) + stops,
        out=None if out is None else str(out))


def report_json(rep: dict) -> str:
    """:func:`report` as JSON text; NaN and infinities become null, numpy numbers plain ones."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, (np.generic,)):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value
    return json.dumps(clean(rep), indent=1)


def report_text(rep: dict) -> str:
    """:func:`report` as the text the command prints."""
    text = outputs.inert  # names from the recording (its folder, robot_type) may hold terminal escapes
    lines = [f"{text(rep['source'])}: LeRobot {text(rep['version'])}, {rep['fps']:g} fps, "
             f"robot {text(rep['robot_type'])}",
             f"fit on episodes {_ranges(rep['episodes']['fit'])} ({rep['recording']['seconds']:.1f} s, "
             f"{rep['recording']['moving_seconds']:.1f} s moving, {rep['recording']['held_frames']} held frames); "
             f"held out {_ranges(rep['episodes']['heldout'])}"]
    if rep['out']:
        lines.append(f"wrote {text(rep['out'])}")
    lines += ['', f"fitted servo (class {SERVO_CLASS}), and its range over {len(rep['folds'])} leave-one-out folds:"]
    rows = [dict(param=k, fitted=_g(v['fitted']), fold_min=_g(v['fold_min']), fold_max=_g(v['fold_max']),
                 cost_rise_pct='-' if math.isnan(v['cost_rise_pct']) else f"{v['cost_rise_pct']:.1f}",
                 pinned='yes' if v['pinned'] else 'no') for k, v in rep['spread'].items()]
    lines.append(format_table(rows, [('param', 's'), ('fitted', 's'), ('fold_min', 's'), ('fold_max', 's'),
                                     ('cost_rise_pct', 's'), ('pinned', 's')]))
    lines.append(f'(cost_rise_pct: how much the fit cost rises when the parameter alone is scaled by {PINNED_RATIO:g} '
                 f'either way; pinned: folds within a factor {PINNED_RATIO:g}, a rise of {100 * COST_RISE:g} % or '
                 f'more, off the fit\'s bounds)')
    if rep['per_joint']:
        lines += ['', 'per joint (classes fitted_servo_<joint>; the other parameters as above):']
        lines.append(format_table([dict(joint=j, **v) for j, v in rep['per_joint'].items()],
                                  [('joint', 's'), ('kp', 'g'), ('kv', 'g'), ('lag_ms', '.0f')]))
    if rep['offsets_deg']:
        lines += ['', 'calibration offsets written into the actuators (command - joint in the held poses, deg):',
                  ', '.join(f'{j} {c:+.2f}' for j, c in rep['offsets_deg'].items())]
    lines += ['', 'what the recording pins down:'] + [f'  - {s}' for s in rep['pinned'] or ['nothing within the folds']]
    lines += ['what it does not:'] + [f'  - {s}' for s in rep['not_pinned']]
    held = rep['heldout_mae_deg']
    held_out = rep['episodes']['heldout']
    lines += ['', f"held-out error (episode{'s' if len(held_out) > 1 else ''} {_ranges(held_out)}), mean absolute, "
                  f"degrees:"]
    lines.append(format_table([dict(model=name, **row) for name, row in held.items()],
                              [('model', 's')] + [(j, '.3f') for j in ARM_JOINTS] + [('mean', '.3f')]))
    loo = rep['leave_one_out']
    lines.append(f"leave-one-out, every selected episode held out once: fitted {loo['fitted_deg']:.3f} deg, "
                 f"Menagerie {loo['menagerie_deg']:.3f} deg")
    if rep['structures']:
        lines += ['', 'model structures, leave-one-out (each fitted on the other episodes; held-out error, degrees):']
        lines.append(format_table(rep['structures'], [('structure', 's'), ('loo_deg', '.3f'), ('loo_min', '.3f'),
                                                      ('loo_max', '.3f'), ('kp_min', '.3g'), ('kp_max', '.3g'),
                                                      ('lag_ms_min', '.0f'), ('lag_ms_max', '.0f'),
                                                      ('delay_ms_max', '.1f'), ('offset_max_deg', '.2f')]))
    if rep['intervals']:
        lines += ['', f"how far each parameter can move before the held-out error, averaged over the folds, rises by "
                      f"{rep['rise_pct']:g} % (factors of the fitted value; the delay in ms; degrees added to an "
                      f"offset; a slice, the others kept):"]
        lines.append(format_table(rep['intervals'], [('param', 's'), ('structure', 's'), ('fitted_min', '.3g'),
                                                     ('fitted_max', '.3g'), ('low', '.3g'), ('high', '.3g'),
                                                     ('edge', '')]))
    if rep['truth_table']:
        lines += ['', "chapter 4's truth table on this recording (leave-one-out, degrees; from_fit: 'partly' for a "
                      "published set completed from each fold's own fit; vs_shift: over the teleport at its best "
                      "shift, its min and max fold by fold):"]
        lines.append(format_table(rep['truth_table'], servo_truth.TRUTH_COLUMNS))
    lines += ['', 'warnings:'] + [f'  - {text(w)}' for w in rep['warnings'] or ['none']]
    return '\n'.join(lines)
