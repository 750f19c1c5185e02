"""The LeRobot loader: tiny v3.0 and v2.1 datasets built here, every error it promises, the real recording."""

import dataclasses
import json
import pathlib
import sys
import types

import numpy as np
import pandas as pd
import pytest

import recordings  # tests/recordings.py: corrupted copies of the shipped recording
from physai.engine import datasets
from physai.engine.datasets import load_lerobot, read_lerobot

NAMES = ['shoulder_pan.pos', 'shoulder_lift.pos', 'elbow_flex.pos', 'wrist_flex.pos', 'wrist_roll.pos',
         'gripper.pos']
REAL = pathlib.Path(__file__).resolve().parents[2] / 'shared' / 'datasets' / 'so101_record_test'


def _info(version: str, names=NAMES, *, fps=30, drop=None) -> dict:
    features = {
        'action': {'dtype': 'float32', 'shape': [len(names)], 'names': list(names)},
        'observation.state': {'dtype': 'float32', 'shape': [len(names)], 'names': list(names)},
        'timestamp': {'dtype': 'float32', 'shape': [1], 'names': None},
        'frame_index': {'dtype': 'int64', 'shape': [1], 'names': None},
        'episode_index': {'dtype': 'int64', 'shape': [1], 'names': None},
    }
    if drop:
        del features[drop]
    return {'codebase_version': version, 'robot_type': 'so101_follower', 'fps': fps,
            'features': features}


def _frames(episode: int, n: int, width: int = 6) -> pd.DataFrame:
    """n frames whose values encode episode, frame and joint: 100*episode + frame + joint/10."""
    values = [[100.0 * episode + k + j / 10 for j in range(width)] for k in range(n)]
    return pd.DataFrame({
        'action': [np.array(v, dtype=np.float32) for v in values],
        'observation.state': [np.array(v, dtype=np.float32) - 1 for v in values],
        'timestamp': np.arange(n, dtype=np.float32) / 30,
        'frame_index': np.arange(n),
        'episode_index': np.full(n, episode),
    })


def _write_info(root: pathlib.Path, info: dict) -> None:
    (root / 'meta').mkdir(parents=True, exist_ok=True)
    (root / 'meta' / 'info.json').write_text(json.dumps(info))


def make_v30(root: pathlib.Path, lengths=(5, 7), *, info=None, frames=None) -> pathlib.Path:
    """A v3.0 dataset: all episodes in data/chunk-000/file-000.parquet, rows shuffled."""
    _write_info(root, info or _info('v3.0'))
    table = frames if frames is not None else pd.concat(
        [_frames(e, n) for e, n in enumerate(lengths)], ignore_index=True)
    table = table.sample(frac=1.0, random_state=0)  # the loader must sort by episode and frame
    (root / 'data' / 'chunk-000').mkdir(parents=True)
    table.to_parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    return root


def make_v21(root: pathlib.Path, lengths=(5, 7)) -> pathlib.Path:
    """A v2.1 dataset: one data/chunk-000/episode_NNNNNN.parquet per episode."""
    _write_info(root, _info('v2.1'))
    (root / 'data' / 'chunk-000').mkdir(parents=True)
    for e, n in enumerate(lengths):
        _frames(e, n).to_parquet(root / 'data' / 'chunk-000' / f'episode_{e:06d}.parquet')
    return root


@pytest.mark.parametrize('make', [make_v30, make_v21], ids=['v3.0', 'v2.1'])
def test_both_formats_give_the_same_episodes_in_frame_order(tmp_path, make):
    """Episodes split by episode_index, frames sorted by frame_index, joint names without '.pos'."""
    ds = load_lerobot(make(tmp_path))
    assert ds.fps == 30.0
    assert ds.joints == ('shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll',
                         'gripper')
    assert [e.index for e in ds] == [0, 1]
    assert [e.nframe for e in ds] == [5, 7]
    ep = ds[1]
    assert ep.action.shape == (7, 6) and ep.action.dtype == np.float64
    np.testing.assert_allclose(ep.action[:, 0], 100 + np.arange(7), rtol=1e-6)
    np.testing.assert_allclose(ep.action[3], 103 + np.arange(6) / 10, rtol=1e-6)
    np.testing.assert_allclose(ep.state, ep.action - 1, rtol=1e-6)
    np.testing.assert_allclose(ep.timestamp, np.arange(7) / 30, rtol=1e-6)
    assert ep.duration == pytest.approx(7 / 30)


def test_joints_argument_picks_and_orders_columns(tmp_path):
    ds = load_lerobot(make_v30(tmp_path), joints=['elbow_flex', 'shoulder_pan'])
    assert ds.joints == ('elbow_flex', 'shoulder_pan')
    np.testing.assert_allclose(ds[0].action[2], [2.2, 2.0], rtol=1e-6)


def test_missing_folder_and_hub_id_without_download_never_touch_the_network(tmp_path):
    with pytest.raises(FileNotFoundError, match='no dataset folder'):
        load_lerobot(tmp_path / 'absent')
    with pytest.raises(FileNotFoundError, match='download=True'):
        load_lerobot('someone/so101_dataset')


def test_missing_info_json_and_missing_data_files(tmp_path):
    tmp_path.joinpath('empty').mkdir()
    with pytest.raises(FileNotFoundError, match='meta/info.json'):
        read_lerobot(tmp_path / 'empty')
    _write_info(tmp_path / 'nodata', _info('v3.0'))
    with pytest.raises(FileNotFoundError, match=r'data/chunk-\*/file-\*\.parquet'):
        read_lerobot(tmp_path / 'nodata')
    _write_info(tmp_path / 'nodata21', _info('v2.1'))
    with pytest.raises(FileNotFoundError, match=r'episode_\*\.parquet'):
        read_lerobot(tmp_path / 'nodata21')


@pytest.mark.parametrize('feature', ['action', 'observation.state'])
def test_missing_feature_in_info_json(tmp_path, feature):
    make_v30(tmp_path, info=_info('v3.0', drop=feature))
    with pytest.raises(ValueError, match=f"no '{feature}' feature"):
        read_lerobot(tmp_path)


def test_missing_column_in_the_parquet_file(tmp_path):
    frames = _frames(0, 4).drop(columns=['observation.state'])
    make_v30(tmp_path, frames=frames)
    with pytest.raises(ValueError, match="no 'observation.state' column"):
        read_lerobot(tmp_path)


def test_rows_of_the_wrong_width(tmp_path):
    frames = _frames(0, 4, width=5)  # five numbers per frame, six joint names
    make_v30(tmp_path, frames=frames)
    with pytest.raises(ValueError, match=r'action in data/chunk-000/file-000.parquet must have 6 numbers'):
        read_lerobot(tmp_path)


def test_info_shape_that_disagrees_with_the_names(tmp_path):
    info = _info('v3.0')
    info['features']['action']['shape'] = [7]
    make_v30(tmp_path, info=info)
    with pytest.raises(ValueError, match=r'action shape in meta/info.json must be \[6\]'):
        read_lerobot(tmp_path)


def test_non_finite_frame_names_episode_and_frame(tmp_path):
    frames = _frames(0, 6)
    frames.at[4, 'observation.state'] = np.array([0, 0, np.nan, 0, 0, 0], dtype=np.float32)
    make_v30(tmp_path, frames=frames)
    with pytest.raises(ValueError, match='observation.state must be finite.*episode 0 frame 4'):
        read_lerobot(tmp_path)


def test_unknown_joint_names_are_rejected(tmp_path):
    make_v30(tmp_path, info=_info('v3.0', names=NAMES[:5] + ['tail.pos']))
    with pytest.raises(ValueError, match=r"unknown joint names \['tail'\]"):
        read_lerobot(tmp_path)


def test_asking_for_a_joint_the_dataset_lacks(tmp_path):
    make_v30(tmp_path)
    with pytest.raises(ValueError, match=r"joints \['knee'\] are not in the dataset"):
        read_lerobot(tmp_path, joints=['knee'])


def test_unsupported_version(tmp_path):
    make_v30(tmp_path, info=_info('v1.6'))
    with pytest.raises(ValueError, match="codebase_version must be one of v2.0, v2.1, v3.0, got 'v1.6'"):
        read_lerobot(tmp_path)


def test_download_asks_the_hub_for_meta_and_data_only(tmp_path, monkeypatch):
    """A fake huggingface_hub stands in for the network: the call it receives is what is checked."""
    calls = []

    def snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(make_v21(tmp_path / 'downloaded'))

    monkeypatch.setitem(sys.modules, 'huggingface_hub',
                        types.SimpleNamespace(snapshot_download=snapshot_download))
    ds = load_lerobot('someone/so101_dataset', download=True)
    assert len(ds) == 2 and ds.version == 'v2.1'
    (call,) = calls
    assert call['repo_id'] == 'someone/so101_dataset' and call['repo_type'] == 'dataset'
    assert all(p.startswith(('meta', 'data')) for p in call['allow_patterns'])
    with pytest.raises(ValueError, match='repo_id must look like owner/name'):
        datasets.download_lerobot('not a repo id')


def test_download_without_huggingface_hub_names_the_hub_extra(monkeypatch):
    """No huggingface_hub installed: the error says how to get it, through physai's declared extra."""
    import tomllib

    monkeypatch.setitem(sys.modules, 'huggingface_hub', None)  # makes the import fail
    with pytest.raises(ImportError, match=r'pip install "physai\[hub\]"'):
        load_lerobot('someone/so101_dataset', download=True)
    pyproject = pathlib.Path(__file__).resolve().parents[1] / 'pyproject.toml'
    extras = tomllib.loads(pyproject.read_text())['project']['optional-dependencies']
    assert any(req.startswith('huggingface_hub') for req in extras['hub'])


@pytest.mark.skipif(not REAL.is_dir(), reason='../shared/datasets/so101_record_test is not here')
def test_the_real_so101_recording():
    """4 episodes at 30 fps; arm joints in degrees (within ±180), the gripper within 0..100."""
    ds = load_lerobot(REAL)
    assert ds.version == 'v3.0' and ds.fps == 30.0 and ds.robot_type == 'so101_follower'
    assert [e.nframe for e in ds] == [373, 374, 372, 373]
    for ep in ds:
        for values in (ep.action, ep.state):
            assert np.all(np.abs(values[:, :5]) <= 180)
            assert np.all((values[:, 5] >= 0) & (values[:, 5] <= 100))
        # the follower tracks the leader: action and next state within a few degrees on average
        assert np.abs(ep.action[:-1, :5] - ep.state[1:, :5]).mean() < 5


# ---------------------------------------------------------------------------------------------
# the data must agree with meta/info.json: once accepted silently, now each a clear error


def _counted(lengths) -> dict:
    return {**_info('v3.0'), 'total_episodes': len(lengths), 'total_frames': int(sum(lengths))}


def test_a_duplicated_data_file_is_refused(tmp_path):
    """A second copy of file-000 doubled every episode; the held-out error changed without a word."""
    root = make_v30(tmp_path, info=_counted((5, 7)))
    data = root / 'data' / 'chunk-000'
    (data / 'file-001.parquet').write_bytes((data / 'file-000.parquet').read_bytes())
    with pytest.raises(ValueError, match=r'every frame must appear once, got episode \d frame \d more than once '
                                         r'\(in data/chunk-000/file-000.parquet, data/chunk-000/file-001.parquet'):
        read_lerobot(root)


def test_an_episode_index_beyond_info_is_refused(tmp_path):
    frames = pd.concat([_frames(0, 5), _frames(99, 7)], ignore_index=True)
    root = make_v30(tmp_path, info=_counted((5, 7)), frames=frames)
    with pytest.raises(ValueError, match=r'episode_index must be in \[0, 1\] .*total_episodes = 2\), got \[99\]'):
        read_lerobot(root)


def test_an_episode_without_frames_is_refused(tmp_path):
    root = make_v30(tmp_path, (5, 7), info={**_info('v3.0'), 'total_episodes': 3})
    with pytest.raises(ValueError, match='must have frames, got none for episode 2'):
        read_lerobot(root)


def test_a_frame_count_that_disagrees_with_info_is_refused(tmp_path):
    root = make_v30(tmp_path, (5, 7), info={**_counted((5, 7)), 'total_frames': 13})
    with pytest.raises(ValueError, match=r'must hold the 13 frames .* \(total_frames\), got 12'):
        read_lerobot(root)


def test_an_empty_data_file_is_named(tmp_path):
    root = make_v30(tmp_path, frames=_frames(0, 5).iloc[:0])
    with pytest.raises(ValueError, match=r'data/chunk-000/file-000.parquet in .* has no frames'):
        read_lerobot(root)


def test_a_truncated_info_json_names_its_file(tmp_path):
    root = make_v30(tmp_path)
    path = root / 'meta' / 'info.json'
    path.write_text(path.read_text()[:40])
    with pytest.raises(ValueError, match=rf'{path} must be valid JSON, got an error at line 1'):
        read_lerobot(root)


def test_joints_given_as_one_string_is_refused_not_split_into_letters():
    with pytest.raises(TypeError, match='joints must be a sequence of joint names'):
        read_lerobot(datasets.shipped_recording(), joints="shoulder_pan")


# ---------------------------------------------------------------------------------------------
# recordings that load but are wrong: each once gave a plausible, wrong fit without a word (tests/recordings.py)


@pytest.mark.parametrize('name', list(recordings.CORRUPTIONS))
def test_a_corrupted_recording_is_refused_naming_the_episode_and_what_is_wrong(tmp_path, name):
    frames, meta = recordings.CORRUPTIONS[name](recordings.table(), recordings.info())
    root = recordings.write(tmp_path, frames, meta)
    with pytest.raises(ValueError, match=r'^(episode \d+ of .* (must|timestamps)|fps in .*info.json must)') as err:
        load_lerobot(root)
    assert 'leave the episode out' in str(err.value) or str(err.value).startswith('fps in')


@pytest.mark.parametrize('fps, words', [(15, ['66.667 ms apart', '33.333 ms between most frames', 'as at 30 fps']),
                                        (60, ['16.667 ms apart', 'as at 30 fps'])])
def test_a_wrong_fps_says_which_rate_the_timestamps_show(tmp_path, fps, words):
    """fps 15 fitted a lag of 217 ms instead of 109 ms, fps 60 one of 57 ms, each called pinned."""
    root = recordings.write(tmp_path, meta={**recordings.info(), 'fps': fps})
    with pytest.raises(ValueError) as err:
        load_lerobot(root)
    assert all(w in str(err.value) for w in words), err.value


@pytest.mark.parametrize('corrupt, words', [
    (recordings.reversed_time, ['episode 1', 'time running backwards']),
    (lambda f, m: recordings.stored_twice(f, m, restamp=False), ['episode 0', 'frames stored twice', 'frames 1, 3, 5']),
    (recordings.stored_twice, ['episode 0', 'must not repeat its frames', 'moving frames', 'stored twice']),
    (recordings.dropped_frame, ['episode 2', 'frames 100', '66.6', 'dropped']),
    (recordings.glitch(1e30), ['episode 1', 'observation.state must lie within ±360', '1e+30', 'shoulder_lift',
                               'frame 120']),
    (recordings.wrap(), ['episode 0', 'observation.state must move less than 180° in one frame', '+360.',
                         'wrist_roll', 'from frame 199 to 200', 'encoder wrap']),
    (recordings.spike(45.0), ['episode 3', 'action must not leave its neighbours by more than 20°', '+45.0°',
                              'elbow_flex', 'frame 50', 'glitch']),
    (recordings.dropout(), ['episode 1', 'observation.state must hold a reading in every frame',
                            'every arm joint at exactly 0 in 2 frames (120, 121)', 'dropout']),
    (recordings.dropout(feature='action', episode=3, frames_=slice(200, 202)), ['episode 3', 'action must hold',
                                                                                 '(200, 201)']),
    (recordings.excursion(60.0), ['episode 2', 'observation.state must not leave its neighbours by more than 20° for 1 '
                                  'to 3 frames', '+60.0° and back -60.0°', 'elbow_flex at frames 80-82',
                                  'run of 3 frames']),
    (recordings.dropout(episode=0, frames_=slice(40, 42), joints=slice(1, 2)),
     ['episode 0', 'shoulder_lift at frames 40-41', 'run of 2 frames', 'dropout']),
    (recordings.slow_loop(10), ['episode 0', 'must be recorded at its fps', 'of its', 'two frames long',
                                'ran slower than 30 fps', 'a lag too short', 'record at an fps the loop keeps']),
])
def test_each_kind_of_bad_episode_names_its_frames(tmp_path, corrupt, words):
    root = recordings.write(tmp_path, *corrupt(recordings.table(), recordings.info()))
    with pytest.raises(ValueError) as err:
        load_lerobot(root)
    assert all(w in str(err.value) for w in words), err.value


def test_a_bad_episode_can_be_left_out_and_the_others_load_unchanged(tmp_path):
    root = recordings.write(tmp_path, *recordings.glitch(1e30, episode=1)(recordings.table(), recordings.info()))
    ds = load_lerobot(root, episodes=[0, 2, 3])
    shipped = load_lerobot(datasets.shipped_recording())
    assert [e.index for e in ds] == [0, 2, 3]
    for e in ds:
        np.testing.assert_array_equal(e.state, shipped[e.index].state)
    with pytest.raises(ValueError, match=r'episodes must be episode indices of the dataset \(0-3\), got 7'):
        load_lerobot(root, episodes=[0, 7])
    with pytest.raises(ValueError, match=r"episodes must hold each item once, got 0 more than once"):
        load_lerobot(root, episodes=[0, 0, 2])


def test_the_shipped_and_the_synthetic_recordings_pass_every_check():
    from physai.engine import arm_replay
    for e in list(load_lerobot(datasets.shipped_recording())) + list(arm_replay.synthetic_dataset(seconds=4.0)):
        assert datasets.check_episode(e) is e


def test_a_recording_without_timestamps_is_refused_since_its_fps_cannot_be_checked(tmp_path):
    root = recordings.write(tmp_path, recordings.table().drop(columns=['timestamp']))
    with pytest.raises(ValueError, match='must have a timestamp column'):
        load_lerobot(root)


def test_a_joint_named_twice_is_refused_in_the_request_and_in_info_json(tmp_path):
    with pytest.raises(ValueError, match=r"joints must hold each item once, got 'elbow_flex' more than once"):
        load_lerobot(datasets.shipped_recording(), joints=['elbow_flex', 'shoulder_pan', 'elbow_flex'])
    make_v30(tmp_path, info=_info('v3.0', names=NAMES[:5] + ['wrist_roll.pos']))
    with pytest.raises(ValueError, match=r"joint names of action in meta/info.json must hold each item once, got "
                                         r"'wrist_roll' more than once"):
        read_lerobot(tmp_path)


def test_the_checks_thresholds_sit_far_from_the_shipped_recording():
    """The largest out-and-back and the largest frame-to-frame jump of the real arm stay well inside the glitch and
    wrap thresholds, and its repeats well under the refused share."""
    for e in load_lerobot(datasets.shipped_recording()):
        for values in (e.action, e.state):
            step = np.diff(values, axis=0)
            back = np.where(np.sign(step[:-1]) == -np.sign(step[1:]), np.minimum(abs(step[:-1]), abs(step[1:])), 0)
            assert back.max() < datasets.SPIKE_DEG / 10 and np.abs(step).max() < datasets.WRAP_JUMP_DEG / 10


def test_the_dropout_and_pace_thresholds_sit_far_from_the_shipped_recording():
    """No frame of the real arm reads all zeros; its runs of 2 and 3 frames leave their neighbours by a tenth of the
    glitch threshold at most; and no frame of it moved the leader and the follower 1.6 times as far as the frames
    either side, out of 514 judged."""
    judged = 0
    for e in load_lerobot(datasets.shipped_recording()):
        for values in (e.action, e.state):
            assert not np.any(np.all(values[:, :5] == 0, axis=1))
            for length in (2, 3):
                n = len(values) - length - 1
                before, after = values[:n], values[length + 1:length + 1 + n]
                run = np.stack([values[1 + i:1 + i + n] for i in range(length)])
                leave = np.minimum(np.abs(run - before), np.abs(run - after)).min(axis=0)
                same_way = np.all(np.sign(run - before) == np.sign(run - after), axis=0)
                assert np.where(same_way, leave, 0).max() < datasets.SPIKE_DEG / 10
        long, count = datasets.long_frames(e)
        assert long.size == 0
        judged += count
    assert judged == 514


@pytest.mark.parametrize('every', [10, 20])
def test_a_record_loop_slower_than_its_fps_shows_as_long_frames_where_a_turn_took_two_periods(every):
    """Every 10th turn of the loop two periods long fitted a lag 11 % short; the timestamps (frame_index / fps, as
    LeRobot writes them) cannot show it, the motion does: the long frames found are the ones after each gap."""
    frames, _ = recordings.slow_loop(every)(recordings.table(), recordings.info())
    shipped = load_lerobot(datasets.shipped_recording())
    for index in range(4):
        rows = frames[frames['episode_index'] == index].sort_values('frame_index')
        e = dataclasses.replace(shipped[index], action=np.stack(rows['action']).astype(float),
                                state=np.stack(rows['observation.state']).astype(float),
                                timestamp=rows['timestamp'].to_numpy(float))
        long, judged = datasets.long_frames(e)
        gaps = np.arange(every - 1, e.nframe, every - 1)  # the frame recorded after each missing one
        assert long.size > datasets.LONG_FRAME_SHARE * judged and long.size >= datasets.MIN_LONG_FRAMES
        assert set(long) <= set(gaps)
        with pytest.raises(ValueError, match=f'episode {index} .*must be recorded at its fps'):
            datasets.check_episode(e)


def test_one_slow_turn_of_the_loop_is_a_hiccup_not_a_rate():
    e = load_lerobot(datasets.shipped_recording())[1]
    gap = np.delete(np.arange(e.nframe), [100, 200])  # two turns of two periods in 374 frames
    slow = dataclasses.replace(e, action=e.action[gap], state=e.state[gap], timestamp=np.arange(len(gap)) / 30)
    long, judged = datasets.long_frames(slow)
    assert 0 < long.size < datasets.MIN_LONG_FRAMES
    assert datasets.check_episode(slow) is slow


def _with_videos(fps, video_fps, *, key='info'):
    info = _info('v3.0', fps=fps)
    for camera in ('front', 'top'):
        info['features'][f'observation.images.{camera}'] = {
            'dtype': 'video', 'shape': [480, 640, 3], 'names': ['height', 'width', 'channels'],
            key: {'video.fps': video_fps, 'video.codec': 'av1'}}
    return info


@pytest.mark.parametrize('key', ['info', 'video_info'])
def test_fps_that_is_not_the_videos_rate_is_refused_even_when_the_timestamps_agree_with_it(tmp_path, key):
    """fps and the timestamps both relabelled 15 fitted a lag of 217 ms, twice the real one, and called it pinned;
    info.json's videos still said 30 (v2.0 keeps the rate under video_info)."""
    frames = pd.concat([_frames(e, 8) for e in range(2)], ignore_index=True)
    frames['timestamp'] = (frames['frame_index'] / 15).astype(np.float32)
    make_v30(tmp_path, info=_with_videos(15, 30, key=key), frames=frames)
    with pytest.raises(ValueError, match=r"^fps in .*info.json must be the frame rate of the recording's videos, got "
                                         r"fps 15 and 30 fps in features.observation.images.front.info.video.fps "
                                         r"\(and 1 more video\): .* set fps to the rate the recording was made at"):
        read_lerobot(tmp_path)


def test_videos_at_the_recordings_rate_pass_and_a_rate_that_is_not_a_number_is_named(tmp_path):
    make_v30(tmp_path / 'a', info=_with_videos(30, 30))
    assert read_lerobot(tmp_path / 'a').fps == 30
    make_v30(tmp_path / 'b', info=_with_videos(30, 'thirty'))
    with pytest.raises(ValueError, match=r"features.observation.images.front.info.video.fps in .* must be a number > 0 "
                                         r"\(the frame rate of its video\), got 'thirty'"):
        read_lerobot(tmp_path / 'b')
    assert read_lerobot(datasets.shipped_recording()).fps == 30  # its two videos at 30 fps


def test_float32_timestamps_an_hour_into_an_episode_pass_and_a_dropped_frame_there_does_not():
    """LeRobot stores timestamps as float32, whose rounding an hour in (2.4e-4 s) exceeds LeRobot's 1e-4 s tolerance:
    the check allows for it, and still sees a frame missing at that point."""
    n = 30 * 3600 + 30
    t = np.arange(n) / 30
    values = np.column_stack([10 * np.sin(0.3 * t + j) for j in range(6)]) + 20
    episode = datasets.Episode(index=0, fps=30.0, joints=tuple(n[:-4] for n in NAMES), action=values,
                               state=values.copy(), timestamp=t.astype(np.float32).astype(np.float64))
    assert np.abs(np.diff(episode.timestamp) - 1 / 30).max() > datasets.TIMESTAMP_TOLERANCE_S
    assert datasets.check_episode(episode) is episode
    gap = np.delete(np.arange(n), n - 10)
    dropped = dataclasses.replace(episode, action=values[gap], state=values[gap],
                                  timestamp=episode.timestamp[gap])
    with pytest.raises(ValueError, match=rf'1 step that is not \(frames {n - 10}; the first is 66.6'):
        datasets.check_episode(dropped)
