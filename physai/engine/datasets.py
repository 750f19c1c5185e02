"""Recorded robot episodes in the LeRobot dataset format (v3.0 and v2.1), read into numpy arrays.

A LeRobot dataset is a folder::

    meta/info.json                          fps, codebase_version, features (with joint names)
    data/chunk-000/file-000.parquet         v3.0: many episodes per file, told apart by ``episode_index``
    data/chunk-000/episode_000000.parquet   v2.1: one file per episode

Each row is one frame. Chapter 4 reads two features per frame: ``action`` (the command sent to the
follower: for a teleoperated SO-101, the leader arm's joints) and ``observation.state`` (the follower's
measured joints). Their names in ``info.json`` (``shoulder_pan.pos`` ...) say which column is which joint.

:func:`load_lerobot` reads a local folder; given a Hugging Face Hub dataset id instead, it downloads the
``meta/`` and ``data/`` files, but only when asked to (``download=True``), with a progress bar. Videos are
never downloaded. Every problem with the data is a clear error: FileNotFoundError for a missing folder or
file, ValueError for a missing feature, a wrong width, a non-finite frame or a joint name it does not know.

A recording that loads but is wrong would give a plausible, wrong fit, so each episode read is also checked
(:func:`check_episode`) and refused by name, its frames named:

- **timing**: LeRobot writes ``timestamp = frame_index / fps`` and its own loader insists that consecutive frames be
  1/fps apart within ``tolerance_s`` = 1e-4 s (``LeRobotDataset``, ``src/lerobot/datasets/lerobot_dataset.py`` in
  huggingface/lerobot). Here the same (:data:`TIMESTAMP_TOLERANCE_S`): a frame stored twice (two equal
  timestamps), time running backwards, a dropped frame, or timestamps at another rate than ``fps`` in info.json (the
  open-loop replay plays one frame per 1/fps: at a wrong rate it fits a lag too long or too short by that factor);
- **values**, in the dataset's units (the SO-101's arm joints in LeRobot's degrees or its -100..100 normalisation,
  :mod:`physai.engine.lerobot_units`; its gripper 0..100): a frame whose every arm joint reads exactly 0 (a read that
  returned nothing), beyond ±:data:`RANGE_DEG`, jumping by more than :data:`WRAP_JUMP_DEG` in one frame (an encoder
  wrap), or a run of 1 to :data:`GLITCH_FRAMES` frames out and back by more than :data:`SPIKE_DEG` (a glitch, or a
  dropout of a few frames);
- **repeats**: more than :data:`REPEAT_SHARE` of the moving frames equal to the frame before (action and state
  alike), as when every frame is stored twice under renumbered timestamps;
- **pace**: the record loop slower than ``fps`` (:func:`long_frames`). The timestamps cannot show it, since LeRobot
  writes ``frame_index / fps`` whatever the loop's real pace, but the motion does: a frame that took two periods
  moves the leader and the follower about twice as far as the frames either side.

The recording's own ``meta/info.json`` is checked too: ``fps`` must be the rate of its videos (each video feature's
``info.video.fps``), since LeRobot records frames and videos at one rate.

A bad episode can be left out: ``episodes=`` reads (and checks) only the episodes asked for.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
import pathlib
import re
from collections.abc import Sequence

import numpy as np

from physai.engine.so101 import JOINTS
from physai.laws import checks


ACTION = 'action'
STATE = 'observation.state'
VERSIONS = ('v2.0', 'v2.1', 'v3.0')

TIMESTAMP_TOLERANCE_S = 1e-4
"""s: consecutive timestamps must be 1/fps apart within this, LeRobot's own default ``tolerance_s`` (its
``LeRobotDataset`` checks the same spacing when it loads a dataset), plus the rounding of the two timestamps as
float32, the type LeRobot stores them in (negligible for minutes, 2.4e-4 s each an hour into an episode)."""

RANGE_DEG = 360.0
"""A joint value must lie within ±this. LeRobot's SO-101 calibration writes degrees as (raw - mid)·360/4095 from
encoder counts raw and mid in 0..4095 (``MotorsBus._normalize``, ``MotorNormMode.DEGREES``), so no real reading lies
beyond ±360°, and the gripper's 0..100 lies well inside."""

WRAP_JUMP_DEG = 180.0
"""deg: a joint that moves more than half a turn between two frames has wrapped past ±180° (or glitched): no SO-101
joint turns that far in a frame (5400°/s at 30 fps)."""

SPIKE_DEG = 20.0
"""deg: a frame that leaves both its neighbours by more than this, out and back, is a glitch. In the recording shipped
with physai the largest such out-and-back is 1.9° (a gripper frame; 0.8° on the arm joints)."""

REPEAT_SHARE = 0.25
"""An episode is refused when more than this share of its moving frames (the action changing by more than
:data:`MOVING_DEG` over the frames either side) equal the frame before in both action and state. In the shipped
recording at most 1 in 139 to 285 moving frames per episode does; a recording with every frame stored twice has
about half."""

MOVING_DEG = 0.5
"""deg: a frame is moving when some joint's action changes by more than this from the frame before it to the frame
after it (six encoder counts of an STS3215)."""

MIN_MOVING_FRAMES = 10
"""Repeats are judged only in an episode with at least this many moving frames."""

GLITCH_FRAMES = 3
"""The longest run of frames the glitch check looks for: 1 to 3 frames that leave both their neighbours by more than
:data:`SPIKE_DEG` the same way (a bus read gone wrong, a dropout of a few frames reading 0). In the shipped recording
the largest such run of up to 3 frames leaves its neighbours by 1.9 (a gripper frame of the action); a run of 3 frames
of the real arm would have to travel 20° out and back in 133 ms."""

LONG_FRAME_RATIO = 1.6
"""A frame is *long* when the action and the state both moved at least this many times as far in it as the mean of
the frames either side (both of which moved more than :data:`MOVING_DEG`): a frame that took two periods of the record
loop moves the arm about twice as far. In the shipped recording no frame is long in both (514 frames judged)."""

LONG_FRAME_SHARE = 0.02
"""An episode is refused when at least :data:`MIN_LONG_FRAMES` of its judged frames, and more than this share of
them, are long. A long frame is one period the replay does not play, so a share s of them shortens the fitted lag by
about s: every 10th frame two periods long (the record loop at nine tenths of its fps) made 8 % of the shipped
recording's judged frames long and fitted a lag 11 % short; every 50th, 1.2 % of them."""

MIN_LONG_FRAMES = 3
"""Long frames are refused only when there are at least this many: one slow turn of the loop is a hiccup, not a
rate."""


@dataclasses.dataclass(frozen=True)
class Episode:
    """One recorded episode, in the dataset's own units (SO-101: LeRobot's degrees or its -100..100 normalisation,
    which :func:`physai.engine.lerobot_units.to_degrees` converts; gripper 0..100)."""

    index: int
    """``episode_index`` in the dataset."""
    fps: float
    """Frames per second of the recording."""
    joints: tuple[str, ...]
    """Joint name of each column of ``action`` and ``state``, e.g. ``('shoulder_pan', ...)``."""
    action: np.ndarray
    """(nframe, njoint) commanded joint targets, float64."""
    state: np.ndarray
    """(nframe, njoint) measured joints, float64."""
    timestamp: np.ndarray
    """(nframe,) time since the episode started, s."""

    def __post_init__(self):
        if not (isinstance(self.index, numbers.Integral) and not isinstance(self.index, bool)):
            raise ValueError(f'index must be a whole number (episode_index), got {self.index!r}')
        if not (isinstance(self.fps, numbers.Real) and not isinstance(self.fps, bool) and math.isfinite(self.fps)
                and self.fps > 0):
            raise ValueError(f'fps must be a finite number > 0 frames/s, got {self.fps!r}')
        if isinstance(self.joints, (str, bytes)) or not all(isinstance(j, str) for j in self.joints):
            raise ValueError(f'joints must be a sequence of joint names, got {self.joints!r}')
        checks.distinct('joints', self.joints)
        width = len(self.joints)
        shape = np.shape(self.state)
        if len(shape) != 2 or shape[1] != width:
            raise ValueError(f'state must be (nframe, {width}), one column per joint, got shape {shape}')
        if np.shape(self.action) != shape:
            raise ValueError(f'action must have the shape of state, {shape}, got {np.shape(self.action)}')
        if np.shape(self.timestamp) != shape[:1]:
            raise ValueError(f'timestamp must be ({shape[0]},), one per frame, got shape {np.shape(self.timestamp)}')

    @property
    def nframe(self) -> int:
        """Number of frames."""
        return len(self.state)

    @property
    def duration(self) -> float:
        """Length in seconds, nframe / fps."""
        return self.nframe / self.fps


@dataclasses.dataclass(frozen=True)
class LeRobotDataset:
    """The episodes of a LeRobot dataset and what ``meta/info.json`` says about them."""

    root: pathlib.Path
    """The dataset folder."""
    version: str
    """``codebase_version`` from info.json, one of ``VERSIONS``."""
    fps: float
    """Frames per second."""
    robot_type: str | None
    """``robot_type`` from info.json (e.g. ``so101_follower``), None if absent."""
    joints: tuple[str, ...]
    """The joint of each column of every episode's ``action`` and ``state``."""
    episodes: tuple[Episode, ...]
    """In ``episode_index`` order."""

    def __len__(self) -> int:
        return len(self.episodes)

    def __getitem__(self, i: int) -> Episode:
        return self.episodes[i]


def _joint_names(feature: str, spec: dict) -> list[str]:
    """The joint names of a feature in info.json, without the ``.pos`` suffix."""
    names = spec.get('names')
    if isinstance(names, dict):  # older datasets: {"motors": [...]}
        names = next(iter(names.values()), None)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f'{feature} in meta/info.json must list its joint names, got {names!r}')
    return [n[:-len('.pos')] if n.endswith('.pos') else n for n in names]


def _read_info(root: pathlib.Path) -> dict:
    path = root / 'meta' / 'info.json'
    if not path.is_file():
        raise FileNotFoundError(f'no meta/info.json in {root}: not a LeRobot dataset folder')
    try:
        with open(path, encoding='utf-8') as f:
            info = json.load(f)
    except json.JSONDecodeError as err:
        raise ValueError(f'{path} must be valid JSON, got an error at line {err.lineno} column {err.colno}: '
                         f'{err.msg}') from None
    except UnicodeDecodeError as err:
        raise ValueError(f'{path} must be UTF-8 text (JSON), got byte {err.object[err.start]:#04x} at position '
                         f'{err.start}') from None
    if not isinstance(info, dict):
        raise ValueError(f'{path} must hold a JSON object, got {type(info).__name__}')
    version = info.get('codebase_version')
    if version not in VERSIONS:
        raise ValueError(
            f'codebase_version must be one of {", ".join(VERSIONS)}, got {version!r} in {path}')
    fps = info.get('fps')
    if not isinstance(fps, (int, float)) or isinstance(fps, bool) or not np.isfinite(fps) or fps <= 0:
        raise ValueError(f'fps in {path} must be a number > 0, got {fps!r}')
    features = info.get('features', {})
    if not isinstance(features, dict):
        raise ValueError(f'features in {path} must be a JSON object (name: spec), got {features!r}')
    for feature in (ACTION, STATE):
        if feature not in features:
            raise ValueError(f'meta/info.json has no {feature!r} feature; features: '
                             f'{", ".join(features) or "none"}')
        if not isinstance(features[feature], dict):
            raise ValueError(f'{feature} in {path} must be a JSON object with names and shape, got '
                             f'{features[feature]!r}')
    for key in ('total_episodes', 'total_frames'):
        value = info.get(key)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            raise ValueError(f'{key} in {path} must be a whole number >= 0, got {value!r}')
    return info


def _check_video_fps(info: dict, path: pathlib.Path) -> None:
    """``fps`` in info.json against the rate of every video feature (``info.video.fps``; v2.0 kept it in
    ``video_info``): LeRobot records the frames and the videos at one rate, so a difference means one was changed."""
    fps = float(info['fps'])
    rates = {}
    for name, spec in info.get('features', {}).items():
        if not (isinstance(spec, dict) and spec.get('dtype') == 'video'):
            continue
        video = spec.get('info', spec.get('video_info'))
        rate = video.get('video.fps') if isinstance(video, dict) else None
        if rate is None:
            continue
        if not (checks.is_real(rate) and math.isfinite(rate) and rate > 0):
            raise ValueError(f'features.{name}.info.video.fps in {path} must be a number > 0 (the frame rate of its '
                             f'video), got {rate!r}')
        rates[name] = float(rate)
    other = {name: rate for name, rate in rates.items() if abs(rate - fps) > 1e-6 * fps}
    if other:
        name, rate = next(iter(other.items()))
        raise ValueError(f'fps in {path} must be the frame rate of the recording\'s videos, got fps {fps:g} and '
                         f'{rate:g} fps in features.{name}.info.video.fps'
                         f'{f" (and {len(other) - 1} more video)" if len(other) > 1 else ""}: LeRobot records frames '
                         f'and videos at one rate, so one of them was changed; set fps to the rate the recording was '
                         f'made at')


def _data_files(root: pathlib.Path, version: str) -> list[pathlib.Path]:
    pattern = 'file-*.parquet' if version == 'v3.0' else 'episode_*.parquet'
    files = sorted((root / 'data').glob(f'chunk-*/{pattern}'))
    if not files:
        raise FileNotFoundError(
            f'no data/chunk-*/{pattern} in {root} (LeRobot {version} keeps its frames there)')
    return files


def _stack(column, feature: str, width: int, where: str) -> np.ndarray:
    """A parquet column of per-frame lists as a (nframe, width) float64 array."""
    try:
        values = np.array([np.asarray(v, dtype=np.float64) for v in column])
    except (TypeError, ValueError) as err:  # ragged rows
        raise ValueError(f'{feature} in {where} must have {width} numbers per frame: {err}') from None
    if values.ndim != 2 or values.shape[1] != width:
        raise ValueError(f'{feature} in {where} must have {width} numbers per frame '
                         f'(one per joint name), got shape {values.shape}')
    return values


def _check_finite(values: np.ndarray, feature: str, episode: int, frames: np.ndarray, files: np.ndarray) -> None:
    bad = ~np.all(np.isfinite(values), axis=1)
    if np.any(bad):
        k = int(np.argmax(bad))
        raise ValueError(f'{feature} must be finite, got {values[k].tolist()} in episode {episode} '
                         f'frame {int(frames[k])} of {files[k]} ({int(bad.sum())} non-finite frames)')


def _check_columns(table, where: str, root: pathlib.Path) -> None:
    """episode_index and frame_index whole numbers >= 0, timestamp finite numbers, in one data file."""
    import pandas as pd

    for column in ('episode_index', 'frame_index'):
        if column in table.columns:
            values = table[column]
            if not pd.api.types.is_integer_dtype(values):
                raise ValueError(f'{column} in {where} in {root} must hold whole numbers >= 0, got {values.dtype} '
                                 'values')
            if bool((values < 0).any()):
                raise ValueError(f'{column} in {where} in {root} must hold whole numbers >= 0, got '
                                 f'{int(values[values < 0].iloc[0])}')
    if 'timestamp' in table.columns:
        values = table['timestamp']
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            raise ValueError(f'timestamp in {where} in {root} must hold finite numbers (s), got {values.dtype} values')
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            raise ValueError(f'timestamp in {where} in {root} must hold finite numbers (s), got '
                             f'{values.iloc[int(np.argmax(bad))]} ({int(bad.sum())} non-finite)')


def _check_frames(table, info: dict, root: pathlib.Path) -> None:
    """The frames agree with meta/info.json: no frame twice, every episode there, the counts it states."""
    where = root / 'meta' / 'info.json'
    twice = table.duplicated(['episode_index', 'frame_index'], keep=False)
    if twice.any():
        first = table[twice].iloc[0]
        files = sorted(set(table[twice & (table['episode_index'] == first['episode_index'])
                                 & (table['frame_index'] == first['frame_index'])]['_file']))
        raise ValueError(f'every frame must appear once, got episode {int(first["episode_index"])} frame '
                         f'{int(first["frame_index"])} more than once (in {", ".join(files)}; '
                         f'{int(twice.sum())} rows share their episode and frame index) in {root}')
    indices = sorted(int(i) for i in table['episode_index'].unique())
    total = info.get('total_episodes')
    if isinstance(total, int) and not isinstance(total, bool):
        outside = [i for i in indices if not 0 <= i < total]
        if outside:
            raise ValueError(f'episode_index must be in [0, {total - 1}] ({where} says total_episodes = {total}), '
                             f'got {outside}')
        empty = [i for i in range(total) if i not in indices]
        if empty:
            raise ValueError(f'every episode {where} counts (total_episodes = {total}) must have frames, got none '
                             f'for episode {", ".join(map(str, empty))}')
    for index, rows in table.groupby('episode_index', sort=True):
        frames_of = np.sort(rows['frame_index'].to_numpy())
        if frames_of[0] != 0 or frames_of[-1] != len(frames_of) - 1:
            gap = int(np.setdiff1d(np.arange(frames_of[-1] + 1), frames_of)[0]) if frames_of[0] == 0 else 0
            raise ValueError(f'episode {int(index)} must hold frames 0 ... {frames_of[-1]} once each, got no frame '
                             f'{gap} (in {", ".join(sorted(set(rows["_file"])))} in {root})')
    frames = info.get('total_frames')
    if isinstance(frames, int) and not isinstance(frames, bool) and frames != len(table):
        raise ValueError(f'the data files must hold the {frames} frames {where} counts (total_frames), '
                         f'got {len(table)}')


def index_ranges(values: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` as ``'0-2, 5'``."""
    values, parts, start = sorted(values), [], None
    for k, v in enumerate(values):
        start = v if start is None else start
        if k + 1 == len(values) or values[k + 1] != v + 1:
            parts.append(f'{start}' if start == v else f'{start}-{v}')
            start = None
    return ', '.join(parts)


def _count(n: int, noun: str) -> str:
    return f'{n} {noun}' + ('' if n == 1 else 's')


def _frames_text(frames: np.ndarray, limit: int = 3) -> str:
    """``[3, 8, 9, 40]`` as ``'3, 8, 9 and 1 more'``."""
    shown = ', '.join(str(int(k)) for k in frames[:limit])
    return shown + (f' and {len(frames) - limit} more' if len(frames) > limit else '')


def _check_timing(e: Episode) -> str | None:
    """What is wrong with an episode's timestamps against its fps, or None."""
    if e.nframe < 2:
        return None
    dt = np.diff(e.timestamp)
    period = 1.0 / e.fps
    # LeRobot stores timestamps as float32: add the rounding of both ends (2.4e-4 s an hour into an episode)
    tol = TIMESTAMP_TOLERANCE_S + 2 * np.spacing(np.abs(e.timestamp[1:]).astype(np.float32)).astype(np.float64)
    need = (f'timestamps 1/fps = {1e3 * period:.3f} ms apart (fps {e.fps:g} in meta/info.json, '
            f'± {1e3 * TIMESTAMP_TOLERANCE_S:g} ms)')
    same = np.flatnonzero(np.abs(dt) <= tol)
    if same.size:
        return (f'must have {need}, got frames stored twice: {_count(same.size, "frame")} with the timestamp of the '
                f'frame before (frames {_frames_text(same + 1)})')
    back = np.flatnonzero(dt < 0)
    if back.size:
        return (f'must have {need}, got time running backwards at {_count(back.size, "frame")} (frames '
                f'{_frames_text(back + 1)}; the first goes from {e.timestamp[back[0]]:.4f} s to '
                f'{e.timestamp[back[0] + 1]:.4f} s)')
    typical = float(np.median(dt))
    if abs(typical - period) > float(np.median(tol)):
        return (f'must have {need}, got {1e3 * typical:.3f} ms between most frames, as at {1.0 / typical:.4g} fps: '
                f'either fps in meta/info.json or the timestamps are wrong, and a replay at the wrong rate fits a lag '
                f'off by the same factor')
    off = np.flatnonzero(np.abs(dt - period) > tol)
    if off.size:
        return (f'must have {need}, got {_count(off.size, "step")} that {"is" if off.size == 1 else "are"} not '
                f'(frames {_frames_text(off + 1)}; the first '
                f'is {1e3 * dt[off[0]]:.3f} ms after the frame before: a dropped or late frame)')
    return None


def _first(mask: np.ndarray) -> tuple[int, int, np.ndarray]:
    """The first (row, column) a (nframe, njoint) mask flags, and every row it flags."""
    k, j = (int(i) for i in np.argwhere(mask)[0])
    return k, j, np.flatnonzero(mask.any(axis=1))


def _excursions(values: np.ndarray, frames: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of ``frames`` frames that leave both their neighbours by more than ``SPIKE_DEG`` the same way.

    Returns (nrun, njoint) arrays over the runs starting at frames 1 ... nframe - frames - 1: which joints leave, the
    step out (into the run's first frame) and the step back (out of its last)."""
    n = len(values) - frames - 1
    if n <= 0:
        empty = np.zeros((0, values.shape[1]))
        return empty.astype(bool), empty, empty
    before, after = values[:n], values[frames + 1:frames + 1 + n]
    run = np.stack([values[1 + i:1 + i + n] for i in range(frames)])  # (frames, n, njoint)
    up = np.all((run - before > SPIKE_DEG) & (run - after > SPIKE_DEG), axis=0)
    down = np.all((before - run > SPIKE_DEG) & (after - run > SPIKE_DEG), axis=0)
    return up | down, run[0] - before, after - run[-1]


def _check_values(e: Episode) -> str | None:
    """What is wrong with an episode's values (zeros, range, wraps, glitches, repeated frames), or None."""
    arm = [k for k, j in enumerate(e.joints) if j != 'gripper']
    for feature, values in ((ACTION, e.action), (STATE, e.state)):
        zero = np.flatnonzero(np.all(values[:, arm] == 0, axis=1)) if arm else np.zeros(0, dtype=int)
        if zero.size:
            return (f'{feature} must hold a reading in every frame, got every arm joint at exactly 0 in '
                    f'{_count(zero.size, "frame")} ({_frames_text(zero)}): a read that returned nothing (a dropout)')
        outside = np.abs(values) > RANGE_DEG
        if outside.any():
            k, j, frames = _first(outside)
            return (f'{feature} must lie within ±{RANGE_DEG:g} (degrees; the gripper 0..100), got {values[k, j]:g} '
                    f'for {e.joints[j]} at frame {k} ({_count(frames.size, "frame")} out of range: '
                    f'{_frames_text(frames)}): a glitch, or not LeRobot\'s degrees')
        step = np.diff(values, axis=0)
        wraps = np.abs(step) > WRAP_JUMP_DEG
        if wraps.any():
            k, j, frames = _first(wraps)
            frames = frames + 1  # the frame after the jump
            return (f'{feature} must move less than {WRAP_JUMP_DEG:g}° in one frame, got {step[k, j]:+.1f}° for '
                    f'{e.joints[j]} from frame {k} to {k + 1} ({_count(frames.size, "such jump")}, at frames '
                    f'{_frames_text(frames)}): an encoder wrap past ±180°, or a glitch')
        for length in range(1, GLITCH_FRAMES + 1):
            runs, out, back = _excursions(values, length)
            if runs.any():
                k, j, starts = _first(runs)
                starts = starts + 1  # the run's first frame
                at = f'frame {k + 1}' if length == 1 else f'frames {k + 1}-{k + length}'
                return (f'{feature} must not leave its neighbours by more than {SPIKE_DEG:g}° for 1 to '
                        f'{GLITCH_FRAMES} frames, got {out[k, j]:+.1f}° and back {back[k, j]:+.1f}° for '
                        f'{e.joints[j]} at {at} ({_count(starts.size, "such run")} of {length} '
                        f'frame{"s" if length > 1 else ""}, from frame {_frames_text(starts)}): a glitch, or a '
                        f'dropout')
    if e.nframe >= 3:
        moving = np.max(np.abs(e.action[2:] - e.action[:-2]), axis=1) > MOVING_DEG
        repeat = (np.all(e.action[1:-1] == e.action[:-2], axis=1) & np.all(e.state[1:-1] == e.state[:-2], axis=1))
        repeats = np.flatnonzero(moving & repeat) + 1
        if moving.sum() >= MIN_MOVING_FRAMES and repeats.size > REPEAT_SHARE * moving.sum():
            return (f'must not repeat its frames, got {repeats.size} of its {int(moving.sum())} moving frames equal '
                    f'to the frame before in action and state (frames {_frames_text(repeats)}): every frame stored '
                    f'twice? A replay of it sees the arm at half its real speed')
    return None


def long_frames(e: Episode) -> tuple[np.ndarray, int]:
    """The frames of ``e`` that took about two periods of the record loop, and how many frames were judged.

    A frame k is judged when the arm joints moved more than :data:`MOVING_DEG` (the length of the step over the arm
    joints, in the dataset's units) in each of the frames either side, in both the action and the state; it is long
    when, in both, its own step is at least :data:`LONG_FRAME_RATIO` times the mean of theirs. LeRobot's record loop
    reads the follower, reads the leader, sends the command and waits out the rest of ``1/fps``; a turn that takes
    longer is still stamped ``1/fps`` after the one before, so only the motion shows it: both arms moved for two
    periods in one frame. An episode whose state copies its action has one clock, not two, and is not judged
    (``fit-servo`` refuses it as a recording without a follower).

    Returns:
      (nlong,) the long frames' indices, and the number of frames judged.
    """
    arm = [k for k, j in enumerate(e.joints) if j != 'gripper']
    if e.nframe < 4 or not arm or np.array_equal(e.action[:, arm], e.state[:, arm]):  # a copy is no second clock
        return np.zeros(0, dtype=int), 0
    judged, long = np.ones(e.nframe - 3, dtype=bool), np.ones(e.nframe - 3, dtype=bool)
    for values in (e.action, e.state):
        step = np.linalg.norm(np.diff(values[:, arm], axis=0), axis=1)
        before, now, after = step[:-2], step[1:-1], step[2:]
        moving = (before > MOVING_DEG) & (after > MOVING_DEG)
        judged &= moving
        long &= moving & (now >= LONG_FRAME_RATIO * 0.5 * (before + after))
    # step[1:-1][i] is the step into frame i + 2 from frame i + 1: the frame that took long is i + 2
    return np.flatnonzero(long) + 2, int(judged.sum())


def _check_pace(e: Episode) -> str | None:
    """Whether the record loop kept its fps (:func:`long_frames`), or what shows it did not."""
    long, judged = long_frames(e)
    if long.size >= MIN_LONG_FRAMES and long.size > LONG_FRAME_SHARE * judged:
        return (f'must be recorded at its fps, got {long.size} of its {judged} moving frames about two frames long '
                f'(action and state each moved {LONG_FRAME_RATIO:g} times as far as in the frames either side: frames '
                f'{_frames_text(long)}): the record loop ran slower than {e.fps:g} fps, and LeRobot stamps every frame '
                f'1/fps after the one before, so a replay plays those moves too fast and fits a lag too short: record '
                f'at an fps the loop keeps (fewer or smaller cameras, a lower fps)')
    return None


def check_episode(episode: Episode, *, source: str = '') -> Episode:
    """``episode`` if its timestamps agree with its fps, its values hold no empty reading, glitch, wrap or repeated
    frames and its frames are not longer than 1/fps (see the module docstring), else a ValueError naming the episode,
    what is wrong and the frames.

    Args:
      episode: the episode to check.
      source: where it was read from, for the message (e.g. the dataset folder).
    """
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be an Episode, got {type(episode).__name__}')
    problem = _check_timing(episode) or _check_values(episode) or _check_pace(episode)
    if problem:
        where = f' of {source}' if source else ''
        raise ValueError(f'episode {episode.index}{where} {problem}; fix the recording, or leave the episode out '
                         f'(load_lerobot(episodes=...), fit-servo --episodes)')
    return episode


def read_lerobot(root: str | pathlib.Path, *, joints: Sequence[str] | None = None,
                 known_joints: Sequence[str] = JOINTS, episodes: Sequence[int] | None = None) -> LeRobotDataset:
    """Read a LeRobot v3.0 or v2.1 dataset folder.

    Args:
      root: the folder that holds ``meta/info.json`` and ``data/``.
      joints: the joints to keep, in this column order, each once; None keeps the dataset's own order.
      known_joints: the joint names the robot has (the SO-101's by default); a dataset naming any
        other joint is rejected, since its columns could not be matched to the model.
      episodes: the ``episode_index`` values to keep, each checked (:func:`check_episode`); None keeps and checks
        every episode.

    Returns:
      The dataset, each episode's ``action`` and ``state`` of shape (nframe, len(joints)).

    Raises:
      FileNotFoundError: no folder, no meta/info.json, or no data files.
      ValueError: invalid JSON in meta/info.json, an unsupported version, a missing ``action`` /
        ``observation.state``, joint names that differ between the two, are unknown or named twice, a row of the
        wrong width, a non-finite frame, an empty data file, a frame stored twice, episodes and frames that
        disagree with info.json's ``total_episodes`` / ``total_frames``, no timestamp column, an episode asked for
        that is not there, a kept episode that :func:`check_episode` refuses (timestamps against fps, empty readings,
        glitches, wraps, repeated frames, frames longer than 1/fps), or an fps that is not its videos' rate.
    """
    import pandas as pd

    root = pathlib.Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f'no dataset folder at {root}')
    info = _read_info(root)
    version = info['codebase_version']
    features = info['features']
    names = _joint_names(ACTION, features[ACTION])
    state_names = _joint_names(STATE, features[STATE])
    if state_names != names:
        raise ValueError(f'{STATE} must name the same joints as {ACTION}, got {state_names} '
                         f'and {names}')
    checks.distinct(f'the joint names of {ACTION} in meta/info.json', names)
    unknown = [n for n in names if n not in known_joints]
    if unknown:
        raise ValueError(f'unknown joint names {unknown}; known joints: {", ".join(known_joints)}')
    for feature in (ACTION, STATE):
        shape = features[feature].get('shape', [len(names)])
        if not isinstance(shape, list) or shape != [len(names)]:
            raise ValueError(f'{feature} shape in meta/info.json must be [{len(names)}] (one per '
                             f'joint name), got {shape}')
    if joints is None:
        joints = names
    if isinstance(joints, str) or not all(isinstance(j, str) for j in joints):
        raise TypeError(f'joints must be a sequence of joint names (e.g. ["shoulder_pan"]), got {joints!r}')
    checks.distinct('joints', joints)
    missing = [j for j in joints if j not in names]
    if missing:
        raise ValueError(f'joints {missing} are not in the dataset; it has {", ".join(names)}')
    columns = [names.index(j) for j in joints]

    frames = []
    for path in _data_files(root, version):
        where = str(path.relative_to(root))
        try:
            table = pd.read_parquet(path)
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f'{where} in {root} must be a readable parquet file, got: '
                             f'{str(err).replace(str(path), where)}') from None
        if len(table) == 0:
            raise ValueError(f'{where} in {root} has no frames (an empty data file)')
        for column in (ACTION, STATE, 'episode_index'):
            if column not in table.columns:
                raise ValueError(f'{where} has no {column!r} column; columns: '
                                 f'{", ".join(map(str, table.columns))}')
        _check_columns(table, where, root)
        table = table.assign(**{ACTION: list(_stack(table[ACTION], ACTION, len(names), where)),
                                STATE: list(_stack(table[STATE], STATE, len(names), where))})
        frames.append(table.assign(_file=where))
    table = pd.concat(frames, ignore_index=True)
    if 'timestamp' not in table.columns:  # LeRobot always writes it; without it fps cannot be checked
        raise ValueError(f'the data files in {root} must have a timestamp column (s since the episode started), got '
                         f'none; it is how a wrong fps in meta/info.json shows')
    if 'frame_index' not in table.columns:
        table['frame_index'] = table.groupby('episode_index').cumcount()
    _check_frames(table, info, root)
    fps = float(info['fps'])
    available = sorted(int(i) for i in table['episode_index'].unique())
    if episodes is not None:
        if isinstance(episodes, (str, bytes)) or not isinstance(episodes, Sequence | np.ndarray):
            raise TypeError(f'episodes must be a sequence of episode indices, got {episodes!r}')
        for i in checks.distinct('episodes', episodes):
            if not (isinstance(i, numbers.Integral) and not isinstance(i, bool)) or i not in available:
                raise ValueError(f'episodes must be episode indices of the dataset ({index_ranges(available)}), got '
                                 f'{i!r}')
        table = table[table['episode_index'].isin([int(i) for i in episodes])]

    kept = []
    for index, rows in table.groupby('episode_index', sort=True):
        rows = rows.sort_values('frame_index', kind='stable')
        action = np.stack(rows[ACTION].to_numpy())[:, columns]
        state = np.stack(rows[STATE].to_numpy())[:, columns]
        frame = rows['frame_index'].to_numpy()
        files = rows['_file'].to_numpy()
        _check_finite(action, ACTION, int(index), frame, files)
        _check_finite(state, STATE, int(index), frame, files)
        timestamp = rows['timestamp'].to_numpy(dtype=np.float64)
        kept.append(check_episode(Episode(index=int(index), fps=fps, joints=tuple(joints), action=action, state=state,
                                          timestamp=timestamp), source=str(root)))
    # after the episodes: a wrong fps whose timestamps disagree is named with its episode and the rate they show
    _check_video_fps(info, root / 'meta' / 'info.json')
    return LeRobotDataset(root=root, version=version, fps=fps, robot_type=info.get('robot_type'),
                          joints=tuple(joints), episodes=tuple(kept))


_HUB_ID = re.compile(r'^[A-Za-z0-9][\w.-]*/[\w.-]+$')


def download_lerobot(repo_id: str, *, local_dir: str | pathlib.Path | None = None,
                     revision: str | None = None) -> pathlib.Path:
    """Download a LeRobot dataset's ``meta/`` and ``data/`` from the Hugging Face Hub (no videos).

    Needs the ``huggingface_hub`` package (the ``hub`` extra: ``pip install "physai[hub]"``; Colab ships
    it) and a network connection; shows a progress bar per file.

    Args:
      repo_id: ``owner/name`` of a public dataset on the Hub.
      local_dir: where to put it; None uses the Hub's cache.
      revision: a branch, tag or commit; None is the default branch.

    Returns:
      The local dataset folder.
    """
    if not _HUB_ID.match(repo_id):
        raise ValueError(f'repo_id must look like owner/name, got {repo_id!r}')
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ImportError('downloading a dataset needs the huggingface_hub package: '
                          'pip install "physai[hub]" (or pip install huggingface_hub)') from None
    path = snapshot_download(repo_id=repo_id, repo_type='dataset', revision=revision,
                             local_dir=None if local_dir is None else str(local_dir),
                             allow_patterns=['meta/*', 'meta/**', 'data/**'])
    return pathlib.Path(path)


def load_lerobot(source: str | pathlib.Path, *, download: bool = False,
                 joints: Sequence[str] | None = None, revision: str | None = None,
                 local_dir: str | pathlib.Path | None = None, episodes: Sequence[int] | None = None) -> LeRobotDataset:
    """A LeRobot dataset from a local folder, or from the Hugging Face Hub when ``download`` is True.

    Args:
      source: a dataset folder, or a Hub dataset id ``owner/name``.
      download: allow downloading ``source`` from the Hub when it is not a local folder.
        False (the default) never touches the network.
      joints, episodes: see :func:`read_lerobot`.
      revision, local_dir: see :func:`download_lerobot`.

    Raises:
      TypeError: ``source`` is not a path or a dataset id.
      FileNotFoundError: ``source`` is no local folder and ``download`` is False.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f'source must be a folder path or a Hub dataset id (owner/name), got {source!r}')
    path = pathlib.Path(source)
    if path.is_dir():
        return read_lerobot(path, joints=joints, episodes=episodes)
    if not download:
        hint = (f'; to fetch the Hub dataset {source!r} pass download=True'
                if _HUB_ID.match(str(source)) else '')
        raise FileNotFoundError(f'no dataset folder at {source}{hint}')
    return read_lerobot(download_lerobot(str(source), local_dir=local_dir, revision=revision),
                        joints=joints, episodes=episodes)


SHIPPED_RECORDING = 'so101_record_test'
"""The real SO-101 recording that ships inside physai (``physai/data/so101_record_test``; see its PROVENANCE.md)."""


def shipped_recording() -> pathlib.Path:
    """The folder of the real SO-101 recording shipped with physai as package data (chapter 4's data).

    A LeRobot v3.0 dataset, 4 episodes at 30 fps (``meta/`` and ``data/``, no videos), from the public Hugging Face
    dataset ``SamueleSandrini/record-test``, Apache-2.0 (``PROVENANCE.md`` in the folder). It is installed with
    physai by ``pip install`` (pyproject.toml's package-data), so it is there on Colab without a download.

    Raises:
      FileNotFoundError: the package was installed without its data.
    """
    path = pathlib.Path(__file__).resolve().parents[1] / 'data' / SHIPPED_RECORDING
    if not (path / 'meta' / 'info.json').is_file():
        raise FileNotFoundError(f'the recording shipped with physai is missing from {path}: reinstall physai '
                                '(pip install --force-reinstall physai), whose package data holds it')
    return path
