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


ACTION = 'action'
STATE = 'observation.state'
VERSIONS = ('v2.0', 'v2.1', 'v3.0')


@dataclasses.dataclass(frozen=True)
class Episode:
    """One recorded episode, in the dataset's own units (SO-101: degrees, gripper 0..100)."""

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


def read_lerobot(root: str | pathlib.Path, *, joints: Sequence[str] | None = None,
                 known_joints: Sequence[str] = JOINTS) -> LeRobotDataset:
    """Read a LeRobot v3.0 or v2.1 dataset folder.

    Args:
      root: the folder that holds ``meta/info.json`` and ``data/``.
      joints: the joints to keep, in this column order; None keeps the dataset's own order.
      known_joints: the joint names the robot has (the SO-101's by default); a dataset naming any
        other joint is rejected, since its columns could not be matched to the model.

    Returns:
      The dataset, each episode's ``action`` and ``state`` of shape (nframe, len(joints)).

    Raises:
      FileNotFoundError: no folder, no meta/info.json, or no data files.
      ValueError: invalid JSON in meta/info.json, an unsupported version, a missing ``action`` /
        ``observation.state``, joint names that differ between the two or are unknown, a row of the wrong width,
        a non-finite frame, an empty data file, a frame stored twice, or episodes and frames that disagree with
        info.json's ``total_episodes`` / ``total_frames``.
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
    if 'frame_index' not in table.columns:
        table['frame_index'] = table.groupby('episode_index').cumcount()
    _check_frames(table, info, root)
    fps = float(info['fps'])

    episodes = []
    for index, rows in table.groupby('episode_index', sort=True):
        rows = rows.sort_values('frame_index', kind='stable')
        action = np.stack(rows[ACTION].to_numpy())[:, columns]
        state = np.stack(rows[STATE].to_numpy())[:, columns]
        frame = rows['frame_index'].to_numpy()
        files = rows['_file'].to_numpy()
        _check_finite(action, ACTION, int(index), frame, files)
        _check_finite(state, STATE, int(index), frame, files)
        if 'timestamp' in rows.columns:
            timestamp = rows['timestamp'].to_numpy(dtype=np.float64)
        else:
            timestamp = frame / fps
        episodes.append(Episode(index=int(index), fps=fps, joints=tuple(joints),
                                action=action, state=state, timestamp=timestamp))
    return LeRobotDataset(root=root, version=version, fps=fps, robot_type=info.get('robot_type'),
                          joints=tuple(joints), episodes=tuple(episodes))


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
                 local_dir: str | pathlib.Path | None = None) -> LeRobotDataset:
    """A LeRobot dataset from a local folder, or from the Hugging Face Hub when ``download`` is True.

    Args:
      source: a dataset folder, or a Hub dataset id ``owner/name``.
      download: allow downloading ``source`` from the Hub when it is not a local folder.
        False (the default) never touches the network.
      joints: see :func:`read_lerobot`.
      revision, local_dir: see :func:`download_lerobot`.

    Raises:
      TypeError: ``source`` is not a path or a dataset id.
      FileNotFoundError: ``source`` is no local folder and ``download`` is False.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f'source must be a folder path or a Hub dataset id (owner/name), got {source!r}')
    path = pathlib.Path(source)
    if path.is_dir():
        return read_lerobot(path, joints=joints)
    if not download:
        hint = (f'; to fetch the Hub dataset {source!r} pass download=True'
                if _HUB_ID.match(str(source)) else '')
        raise FileNotFoundError(f'no dataset folder at {source}{hint}')
    return read_lerobot(download_lerobot(str(source), local_dir=local_dir, revision=revision),
                        joints=joints)


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
