"""Copies of the SO-101 recording shipped with physai, corrupted one way at a time, for the tests of the loader and of
``python -m physai fit-servo`` (test_datasets, test_identify, test_properties, test_safety_audit).

:func:`write` writes a LeRobot v3.0 dataset (``meta/info.json`` and one parquet file) from a table and an info dict;
each function of :data:`CORRUPTIONS` takes the shipped ones and returns them changed as a recording goes wrong.
"""

import copy
import json
import pathlib

import numpy as np
import pandas as pd

from physai.engine.datasets import shipped_recording

ARM = 5  # the arm joints' columns come first (shoulder_pan ... wrist_roll), then the gripper


def table() -> pd.DataFrame:
    """The shipped recording's frames (4 episodes, 1492 rows), as read from its parquet file."""
    return pd.read_parquet(shipped_recording() / 'data' / 'chunk-000' / 'file-000.parquet')


def info() -> dict:
    """The shipped recording's ``meta/info.json``."""
    return json.loads((shipped_recording() / 'meta' / 'info.json').read_text())


def write(root: pathlib.Path, frames: pd.DataFrame | None = None, meta: dict | None = None) -> pathlib.Path:
    """A LeRobot v3.0 dataset at ``root`` (created) holding ``frames`` and ``meta`` (default: the shipped ones)."""
    root = pathlib.Path(root)
    (root / 'meta').mkdir(parents=True, exist_ok=True)
    (root / 'data' / 'chunk-000').mkdir(parents=True, exist_ok=True)
    (root / 'meta' / 'info.json').write_text(json.dumps(info() if meta is None else meta))
    (table() if frames is None else frames).to_parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    return root


def _rows(frames: pd.DataFrame, episode: int) -> np.ndarray:
    """The row labels of ``episode``, in frame order."""
    return frames[frames['episode_index'] == episode].sort_values('frame_index').index.to_numpy()


def _set(frames: pd.DataFrame, feature: str, episode: int, frame: int, joint: int, change) -> pd.DataFrame:
    """``frames`` with ``change(value)`` put in one joint of one frame of ``feature``."""
    frames = frames.copy()
    row = _rows(frames, episode)[frame]
    values = np.array(frames.at[row, feature], dtype=np.float32)
    values[joint] = change(values[joint])
    frames.at[row, feature] = values
    return frames


def _recount(meta: dict, frames: pd.DataFrame) -> dict:
    meta = copy.deepcopy(meta)
    meta['total_frames'] = len(frames)
    return meta


def wrong_fps(fps: float):
    """info.json says ``fps``; the frames were recorded (and time-stamped) at 30."""
    def corrupt(frames, meta):
        return frames, {**meta, 'fps': fps}
    return corrupt


def stamped_at(fps: float):
    """The timestamps say ``fps`` (frame_index / fps); info.json still says 30."""
    def corrupt(frames, meta):
        frames = frames.copy()
        frames['timestamp'] = (frames['frame_index'] / fps).astype(np.float32)
        return frames, meta
    return corrupt


def reversed_time(frames, meta, episode=1):
    """One episode's timestamps run backwards."""
    frames = frames.copy()
    rows = _rows(frames, episode)
    frames.loc[rows, 'timestamp'] = frames.loc[rows, 'timestamp'].to_numpy()[::-1]
    return frames, meta


def stored_twice(frames, meta, *, restamp=True):
    """Every frame written twice, renumbered (frame_index, index); timestamps recomputed at 30 fps (``restamp``) or
    each copied with its frame."""
    frames = frames.loc[frames.index.repeat(2)].reset_index(drop=True)
    frames['frame_index'] = frames.groupby('episode_index').cumcount()
    frames['index'] = np.arange(len(frames))
    if restamp:
        frames['timestamp'] = (frames['frame_index'] / 30).astype(np.float32)
    return frames, _recount(meta, frames)


def dropped_frame(frames, meta, episode=2, frame=100):
    """One frame lost: the frames after it renumbered, their timestamps kept (a gap of two periods)."""
    frames = frames.drop(index=_rows(frames, episode)[frame]).reset_index(drop=True)
    rows = frames['episode_index'] == episode
    frames.loc[rows, 'frame_index'] = frames[rows].sort_values('frame_index').groupby('episode_index').cumcount()
    return frames, _recount(meta, frames)


def glitch(value: float, feature: str = 'observation.state', episode: int = 1, frame: int = 120, joint: int = 1):
    """One joint of one frame replaced by ``value`` (1e30: a bus read gone wrong)."""
    def corrupt(frames, meta):
        return _set(frames, feature, episode, frame, joint, lambda v: value), meta
    return corrupt


def wrap(turn: float = 360.0, feature: str = 'observation.state', episode: int = 0, frames_: slice = slice(200, 201),
         joint: int = 4):
    """A joint's reading off by a whole turn over some frames (an encoder wrap)."""
    def corrupt(frames, meta):
        for k in range(*frames_.indices(10**9)):
            frames = _set(frames, feature, episode, k, joint, lambda v: v + turn)
        return frames, meta
    return corrupt


def spike(size: float, feature: str = 'action', episode: int = 3, frame: int = 50, joint: int = 2):
    """One frame out by ``size`` degrees and back."""
    def corrupt(frames, meta):
        return _set(frames, feature, episode, frame, joint, lambda v: v + size), meta
    return corrupt


def relabelled(fps: float):
    """info.json's fps and every timestamp say ``fps``; the frames (and the videos, whose info.json entries still say
    30) were recorded at 30."""
    def corrupt(frames, meta):
        frames, meta = stamped_at(fps)(frames, meta)
        return frames, {**meta, 'fps': fps}
    return corrupt


def dropout(value: float = 0.0, feature: str = 'observation.state', episode: int = 1, frames_: slice = slice(120, 122),
            joints: slice = slice(None)):
    """Some joints of a few frames read as ``value`` (a bus read that returned nothing: all zeros by default)."""
    def corrupt(frames, meta):
        frames = frames.copy()
        for row in _rows(frames, episode)[frames_]:
            values = np.array(frames.at[row, feature], dtype=np.float32)
            values[joints] = value
            frames.at[row, feature] = values
        return frames, meta
    return corrupt


def excursion(size: float, frames_: slice = slice(80, 83), feature: str = 'observation.state', episode: int = 2,
              joint: int = 2):
    """One joint out by ``size`` for a few frames and back (a glitch longer than a frame)."""
    def corrupt(frames, meta):
        for k in range(*frames_.indices(10**9)):
            frames = _set(frames, feature, episode, k, joint, lambda v: v + size)
        return frames, meta
    return corrupt


def slow_loop(every: int = 10, episodes=None):
    """The record loop slower than its fps: every ``every``-th turn took two periods, so the frame that a loop on time
    would have recorded in between is missing; the frames are numbered and stamped at 30 fps as LeRobot does
    (``frame_index / fps``). ``episodes``: the episodes so recorded (default all)."""
    def corrupt(frames, meta):
        keep = np.ones(len(frames), dtype=bool)
        for episode in sorted(frames['episode_index'].unique()):
            if episodes is None or episode in episodes:
                rows = _rows(frames, episode)
                keep[frames.index.get_indexer(rows[every - 1::every])] = False
        frames = frames[keep].reset_index(drop=True)
        frames['frame_index'] = frames.groupby('episode_index').cumcount()
        frames['timestamp'] = (frames['frame_index'] / 30).astype(np.float32)
        frames['index'] = np.arange(len(frames))
        return frames, _recount(meta, frames)
    return corrupt


def renamed(robot_type: str):
    """info.json's robot_type replaced (a hostile one: terminal escapes, comment closers)."""
    def corrupt(frames, meta):
        return frames, {**meta, 'robot_type': robot_type}
    return corrupt


CORRUPTIONS = {
    'fps 15 in info.json, data at 30': wrong_fps(15),
    'fps 60 in info.json, data at 30': wrong_fps(60),
    'timestamps at 60 fps, info.json 30': stamped_at(60),
    'timestamps reversed in an episode': reversed_time,
    'every frame stored twice, restamped': stored_twice,
    'every frame stored twice with its timestamp': lambda f, m: stored_twice(f, m, restamp=False),
    'a dropped frame': dropped_frame,
    'one state frame of 1e30': glitch(1e30),
    'one action frame of -1e30': glitch(-1e30, feature='action'),
    'one +360 degree encoder wrap': wrap(),
    'a -360 degree wrap over 40 frames': wrap(-360.0, episode=2, frames_=slice(150, 190), joint=0),
    'one frame 45 degrees out and back': spike(45.0),
    'one state frame 90 degrees out and back': spike(-90.0, feature='observation.state', episode=0, frame=30, joint=1),
    'two all-zero state frames': dropout(),
    'two all-zero action frames': dropout(feature='action', episode=3, frames_=slice(200, 202)),
    'one joint 60 degrees out for three frames': excursion(60.0),
    'a joint reading 0 for two frames': dropout(feature='observation.state', episode=0, frames_=slice(40, 42),
                                               joints=slice(1, 2)),
    'every 10th frame two periods long (the record loop at 9/10 of its fps)': slow_loop(10),
    'every 25th frame two periods long in one episode': slow_loop(25, episodes=[2]),
    'fps and timestamps 15, the videos 30': relabelled(15),
}
"""Each makes a recording the loader must refuse, naming the episode and frames."""
