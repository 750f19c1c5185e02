"""``python -m physai fit-servo``'s request checked before any work: the robot, the episodes, the output files, the cost.

Every check raises a ``ValueError`` that names what was asked and what is allowed, before a single replay runs:
the robot (:func:`check_robot`), the split into fit and held-out episodes (:func:`select_episodes`), the files to
write (:func:`check_outputs`, by :mod:`physai.cli.outputs`), the episodes' lengths (:func:`check_lengths`) and the
fit's estimated cost in frame replays and batch memory (:func:`fit_cost`, :func:`check_cost`), and the recording's
units (:func:`check_units`: a recording in LeRobot's -100..100 normalisation is converted to degrees, never fitted
as it is).

Warnings (:func:`recording_warnings`, on :func:`motion`) say when a recording is too short or too still to identify
a servo; their thresholds are derived below (``MOVING_SPEED_DEG_S``, ``MIN_MOVING_SECONDS``, ``MIN_HELD_FRAMES``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import pathlib
from collections.abc import Sequence

import numpy as np

from physai.engine import arm_replay, lerobot_units, so101
from physai.engine.datasets import Episode, LeRobotDataset, check_episode
from physai.engine.datasets import index_ranges as _ranges
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.cli import outputs
from physai.experiments import servo_sysid
from physai.laws import checks


ROBOTS = ('so101',)
"""Arms the command can identify: those whose MuJoCo Menagerie model the replay is built on."""


FOLD_MAX_ITER = 50
"""Iteration cap of each leave-one-out fold (started from ``physai.cli.identify.START``; a cap, not a target)."""

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


OUT_DEFAULT = 'so101_fitted.xml'
"""The file written when ``--out`` is not given, in the current folder."""



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


def min_frames(fps: float) -> int:
    """The fewest frames an episode needs to take part in a fit: ``MIN_EPISODE_SECONDS`` of them, and more than the
    teleport's largest shift (``MAX_SHIFT`` frames), which it is scored against."""
    return max(math.ceil(MIN_EPISODE_SECONDS * fps), MAX_SHIFT + 1)


def check_lengths(fit: Sequence[Episode], heldout: Sequence[Episode]) -> None:
    """Refuse, before any fit, episodes too short to take part. A held-out one needs ``MIN_EPISODE_SECONDS`` to hold a
    move and its settling (its error is the fit's score); so does every fit episode, since leave-one-out holds each
    out once, and each must outlast the teleport's shifts (:func:`min_frames`). A 3-frame fit episode once failed
    after the whole fit (28 s), with the teleport's own message about its shift."""
    for e in heldout:
        if e.nframe < min_frames(e.fps):
            raise ValueError(f'a held-out episode must last at least {MIN_EPISODE_SECONDS:g} s '
                             f'({min_frames(e.fps)} frames at {e.fps:g} fps) to score the fit on '
                             f'a move and its settling, got episode {e.index} with {e.nframe} frames '
                             f'({e.nframe / e.fps:.2f} s); hold out another with --heldout')
    for e in fit:
        if e.nframe < min_frames(e.fps):
            raise ValueError(f'every fit episode must last at least {MIN_EPISODE_SECONDS:g} s ({min_frames(e.fps)} '
                             f'frames at {e.fps:g} fps): leave-one-out holds each out once to score the fit on a move '
                             f'and its settling, got episode {e.index} with {e.nframe} frames '
                             f'({e.nframe / e.fps:.2f} s); leave it out with --episodes')


# --------------------------------------------------------------------------------------------------
# The leader against the follower, joint by joint
# --------------------------------------------------------------------------------------------------

MAX_SHIFT = 10
"""The teleport's shifts, frames (``servo_sysid.best_shift`` tries 0 to 10): the follower compared with the leader
that many frames before."""

SLOPE_RANGE = (0.75, 4 / 3)
"""Each arm joint's follower must move as far as its leader: the slope of ``observation.state`` against ``action``
(least squares over the selected episodes, the state taken ``best_shift`` frames later) must lie in this range, a
factor 4/3 either side of 1. The shipped recording's slopes lie between 0.93 (elbow_flex and wrist_flex) and 1.03
(shoulder_lift); a joint whose sign differs between the two arms gives about -1 (a shoulder_lift flipped in the state
fitted a lag of 2.3 s), a leader in LeRobot's -100..100 with a follower in degrees the leader's degrees per unit (a
calibrated range of N encoder counts makes N·360/4096/200 of them: 0.97 for 2,205 counts, 1.69 for 3,835)."""

MIN_SPAN_DEG = 20.0
"""A joint's slope is judged only when its commands span at least this many degrees over the selected episodes: over
a few degrees the sag and the counts decide the slope, not the calibration."""

MAX_OFFSET_DEG = 20.0
"""The follower may sit off its leader, joint by joint (the median of state - action at the best shift), by at most
this: the sag under the arm's own weight and a calibration offset (the shipped recording: at most 1.9, the elbow).
Beyond it the two arms were calibrated with different zeros."""

RANGE_MARGIN_DEG = 10.0
"""deg: a recorded arm joint may leave Menagerie's joint range by at most this (the shipped recording's elbow reads
up to 100.0 against the model's 96.8: the real arm's stops differ a little from the model's); beyond it the joint's
zero or scale is not the model's, or the column belongs to another joint."""

MIN_HELD_FOR_GRAVITY = 30
"""Held frames (``servo_sysid.held_frames``) needed to judge which way shoulder_lift sags."""

MIN_SAG_GRAVITY_R = -0.5
"""shoulder_lift's sag in the held poses (command - joint) must not correlate with the torque that holds the arm
there (Menagerie's model at the recorded pose) below this. A servo sags with gravity, so the correlation is positive
(the shipped recording, converted to degrees: +0.87); friction holds a joint anywhere within its frictionloss/kp of the command, which
weakens it (the synthetic stand-in, whose friction is half its gravity load: +0.10). The held poses are few, so a
correlation near 0 says nothing; one clearly negative says the column named shoulder_lift sags against gravity: it
holds another joint (shoulder_lift and elbow_flex swapped in info.json: -0.74, a fit with kp 86 % too high) or its
sign is flipped in both arms (-0.88)."""

MAX_GRAVITY_POSES = 2000
"""The most held frames whose holding torque :func:`leader_follower` computes (one ``mj_forward`` each): a longer
recording is sampled evenly (the shipped one has 512)."""

MIN_GRAVITY_SPREAD = 0.1
"""N·m: shoulder_lift's holding torque must vary by at least this over the held frames for its sag to be judged."""


def _pair(episodes: Sequence[Episode], shift: int, columns: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The commands and the follower ``shift`` frames later, every selected episode end to end: (n, len(columns))."""
    action = np.concatenate([e.action[:e.nframe - shift, columns] for e in episodes])
    state = np.concatenate([e.state[shift:, columns] for e in episodes])
    return action, state


def leader_follower(episodes: Sequence[Episode]) -> dict:
    """How the follower (``observation.state``) answers its leader (``action``) joint by joint, for
    :func:`check_leader_follower`: the episode whose state copies its action exactly (``copy``: (episode, shift) or
    None), the teleport's best shift, per arm joint the ``slope`` and ``offset_deg`` (median of state - action) at
    that shift, the commands' ``span_deg``, how far the recorded values leave Menagerie's range (``beyond_deg``, 0
    inside it, with the ``worst`` (feature, episode, frame, value)), and for shoulder_lift the correlation of its sag
    in the held frames with the torque that holds it there (``sag_gravity_r``, NaN when there are too few held frames
    or too little torque to judge).
    """
    episodes = list(episodes)
    cols = arm_replay.arm_columns(episodes[0].joints)
    copy = next(((e.index, s) for e in episodes for s in range(min(MAX_SHIFT, e.nframe - 1) + 1)
                 if np.array_equal(e.state[s:, cols], e.action[:e.nframe - s, cols])), None)
    shift = servo_sysid.best_shift(episodes, range(MAX_SHIFT + 1))
    action, state = _pair(episodes, shift, cols)
    low, high = np.degrees(arm_replay.slim_arm().jnt_range[[JOINTS.index(j) for j in ARM_JOINTS]]).T
    out = dict(copy=copy, best_shift=shift, joints={})
    for k, joint in enumerate(ARM_JOINTS):
        a, s = action[:, k], state[:, k]
        span = float(a.max() - a.min())
        slope = float(np.polyfit(a, s, 1)[0]) if span > 0 else math.nan
        worst, beyond = None, 0.0
        for feature, values in (('action', 'action'), ('observation.state', 'state')):
            for e in episodes:
                v = getattr(e, values)[:, cols[k]]
                outside = np.maximum(low[k] - v, v - high[k])
                i = int(np.argmax(outside))
                if outside[i] > beyond:
                    beyond, worst = float(outside[i]), (feature, e.index, i, float(v[i]))
        out['joints'][joint] = dict(slope=slope, offset_deg=float(np.median(s - a)), span_deg=span,
                                    beyond_deg=beyond, worst=worst, range_deg=(float(low[k]), float(high[k])))
    # held: the commands still for a moment and the follower settled (a slow stretch of a move is no held pose)
    held = [np.flatnonzero(servo_sysid.held_frames(e.action[:, cols]) & servo_sysid.held_frames(e.state[:, cols]))
            for e in episodes]
    lift = ARM_JOINTS.index('shoulder_lift')
    r = math.nan
    if sum(len(h) for h in held) >= MIN_HELD_FOR_GRAVITY:
        poses = np.concatenate([arm_replay.to_radians(e.state[h], e.joints) for e, h in zip(episodes, held)])
        sag = np.concatenate([e.action[h, cols[lift]] - e.state[h, cols[lift]] for e, h in zip(episodes, held)])
        every = max(1, len(poses) // MAX_GRAVITY_POSES)  # a long recording: every few held frames, evenly
        poses, sag = poses[::every], sag[::every]
        torque = arm_replay.holding_torque(poses)[:, JOINTS.index('shoulder_lift')]
        if torque.max() - torque.min() >= MIN_GRAVITY_SPREAD and np.std(sag) > 0:
            r = float(np.corrcoef(torque, sag)[0, 1])
    out['sag_gravity_r'] = r
    return out


def check_leader_follower(episodes: Sequence[Episode]) -> dict:
    """:func:`leader_follower` of the selected episodes if the follower answers its leader joint by joint, else a
    ValueError that names the joint, what was measured and what to do, before any fit.

    Refused: ``observation.state`` a copy of ``action`` (shifted or not: no follower was read, and the teleport it is
    scored against is then exact); an arm joint whose slope leaves ``SLOPE_RANGE`` (its sign or its scale differs
    between the arms); an offset beyond ``MAX_OFFSET_DEG`` (different zeros); a recorded value beyond Menagerie's
    joint range by more than ``RANGE_MARGIN_DEG`` (another zero, another scale, another joint's column); a
    shoulder_lift whose sag in the held poses leans against the torque gravity puts on it there (its column holds
    another joint, or its sign is flipped in both arms): the model would replay another arm than the one recorded.
    Joint names swapped in info.json between joints that gravity loads alike and that move within each other's
    ranges are not seen here (on the shipped recording in degrees, wrist_flex and wrist_roll swapped are: the wrist
    roll's values lie beyond the wrist flex's range).
    """
    found = leader_follower(episodes)
    if found['copy'] is not None:
        index, shift = found['copy']
        late = '' if shift == 0 else f' {shift} frame{"s" if shift > 1 else ""} later'
        raise ValueError(f'observation.state must be the follower\'s own readings, got a copy of action{late} in episode '
                         f'{index} (every arm joint of every frame): no follower was recorded, so there is no servo to '
                         f'identify; record with the follower arm connected (its present position is '
                         f'observation.state)')
    for joint, row in found['joints'].items():
        if row['span_deg'] >= MIN_SPAN_DEG and not SLOPE_RANGE[0] <= row['slope'] <= SLOPE_RANGE[1]:
            why = ('its direction differs between the two arms' if row['slope'] < 0 else
                   'its scale differs between the two arms (one in degrees, the other in another unit?)')
            raise ValueError(f'observation.state must move as far as action on every arm joint (a slope of '
                             f'{SLOPE_RANGE[0]:g} to {SLOPE_RANGE[1]:.3g}), got {row["slope"]:+.2f} for {joint}: '
                             f'{why}; calibrate both arms the same way (lerobot-calibrate), or fix the recording')
        if abs(row['offset_deg']) > MAX_OFFSET_DEG:
            raise ValueError(f'observation.state must sit within {MAX_OFFSET_DEG:g}° of action on every arm joint '
                             f'(the median of state - action), got {row["offset_deg"]:+.1f}° for {joint}: the two arms '
                             f'were calibrated with different zeros; calibrate both arms the same way '
                             f'(lerobot-calibrate)')
        if row['beyond_deg'] > RANGE_MARGIN_DEG:
            feature, index, frame, value = row['worst']
            low, high = row['range_deg']
            raise ValueError(f'{joint} must stay within Menagerie\'s range of the joint, {low:.1f}° to {high:.1f}° '
                             f'(± {RANGE_MARGIN_DEG:g}°), got {value:.1f} in {feature} of episode {index} frame '
                             f'{frame}: its zero or scale is not the model\'s, or the column holds another joint; check '
                             f'the joint names in meta/info.json and the arms\' calibration')
    if found['sag_gravity_r'] < MIN_SAG_GRAVITY_R:
        raise ValueError(f'shoulder_lift must sag with gravity in the held poses (its command - joint growing with the '
                         f'torque that holds the arm there, in Menagerie\'s model), got a correlation of '
                         f'{found["sag_gravity_r"]:+.2f}: the column named shoulder_lift holds another joint, or its '
                         f'sign is flipped in both arms; check the joint names in meta/info.json and the calibration')
    return found


def first_frames(episodes: Sequence[Episode], max_frames: int) -> list[Episode]:
    """Each episode cut to its first ``max_frames`` frames (``--max-frames``)."""
    max_frames = checks.whole('max_frames', max_frames, 2, None, 'frames')
    return [e if e.nframe <= max_frames else dataclasses.replace(
        e, action=e.action[:max_frames], state=e.state[:max_frames], timestamp=e.timestamp[:max_frames])
        for e in episodes]


EVALUATIONS_PER_ITERATION = len(arm_replay.PARAMS) + 2
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
             max_iter: int = 50, config: arm_replay.ReplayConfig = arm_replay.ReplayConfig()) -> dict:
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
    nparam = len(arm_replay.PARAMS)
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
    low, high = np.degrees(arm_replay.slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    moving = held = 0
    for e in episodes:
        a = e.action[:, arm_replay.arm_columns(e.joints)]
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


# --------------------------------------------------------------------------------------------------
# Units: degrees, or LeRobot's -100..100 normalisation?
# --------------------------------------------------------------------------------------------------

CALIBRATION_HINT = '~/.cache/huggingface/lerobot/calibration/robots/so101_follower/<id>.json'
"""Where LeRobot keeps the SO-101 follower's calibration file by default (``HF_LEROBOT_CALIBRATION``)."""


def check_units(dataset: LeRobotDataset, calibration: str | pathlib.Path | None = None
                ) -> tuple[LeRobotDataset, lerobot_units.RecordingUnits, dict, list[str]]:
    """The recording in LeRobot's degrees before any fit, what its units were, and what to say about them.

    A recording in LeRobot's -100..100 normalisation (``lerobot_units.identify_units``: per-joint grids of encoder
    counts, values clamped at exactly ±100) fitted as degrees gives a plausible, wrong servo, so it is never fitted as
    it is. It is converted with the follower's calibration file when ``calibration`` names one (checked against the
    recording's grids), else with the follower's calibrated ranges read off ``observation.state``'s grids, which give
    the same scale (the conversion needs only each range's width, max - min: both modes put zero in its middle), with
    a warning that says so. Without either it is refused.

    Returns:
      The recording in degrees, its :class:`~physai.engine.lerobot_units.RecordingUnits`, the units as the report
      states them (``units``, ``evidence``, ``converted_with``, ``deg_per_unit`` per arm joint or None) and the
      warnings to add to the report.

    Raises:
      ValueError: one line saying what to do: the leader and follower in different units; a normalised recording
        whose follower shows no grid and no ``calibration``; a ``calibration`` that does not match the recording or
        is given for one in degrees; an unreadable calibration file.
    """
    units = lerobot_units.identify_units(dataset)
    if units.units == 'mixed':
        raise ValueError(f'the recording\'s arm joints must all be in one unit, got {units.summary()}: the leader and '
                         f'the follower were configured differently (use_degrees), so the follower was sent numbers in '
                         f'units it does not read them in; record again with both alike')
    warnings = []
    scale, converted_with = None, None
    if units.normalised:
        if calibration is not None:
            try:
                ranges = lerobot_units.read_calibration(calibration)
            except FileNotFoundError as err:
                raise ValueError(f'--calibration must name the follower\'s LeRobot calibration file, got '
                                 f'{err}') from None
            try:
                scale = lerobot_units.calibration_scale(units, ranges)
            except ValueError as err:
                raise ValueError(f'--calibration {calibration}: {err}') from None
            converted_with = f'the follower\'s calibration file {calibration}'
        else:
            try:
                scale = units.degrees_per_unit()
            except ValueError:
                missing = [j for j, n in zip(units.joints, units.follower_counts) if n is None]
                raise ValueError(f'the recording is in {units.summary()}, and the follower\'s calibrated range of '
                                 f'{", ".join(missing)} cannot be read off observation.state (too few distinct values, '
                                 f'or not raw readings); give the follower\'s calibration with --calibration '
                                 f'({CALIBRATION_HINT})') from None
            converted_with = ('the follower\'s calibrated ranges read off observation.state\'s grids (' +
                              ', '.join(f'{j} {n}' for j, n in zip(units.joints, units.follower_counts)) +
                              ' encoder counts)')
            warnings.append(f'the recording is in {units.summary()}: converted to LeRobot\'s degrees with '
                            f'{converted_with}; give the follower\'s calibration file with --calibration '
                            f'({CALIBRATION_HINT}) to convert with it instead')
        dataset = dataclasses.replace(dataset, episodes=tuple(lerobot_units.convert(dataset.episodes, scale)))
    elif calibration is not None:
        raise ValueError(f'--calibration converts a recording in LeRobot\'s -100..100 normalisation, got one in '
                         f'{units.summary()}; leave --calibration out')
    elif units.units == 'unknown':
        warnings.append(f'units {units.summary()}; if the recording is in LeRobot\'s -100..100 normalisation, '
                        f'convert it first (physai.engine.lerobot_units.convert)')
    stated = dict(units=units.units, evidence=units.summary(), converted_with=converted_with,
                  deg_per_unit=None if scale is None else dict(zip(units.joints, map(float, scale))))
    return dataset, units, stated, warnings
