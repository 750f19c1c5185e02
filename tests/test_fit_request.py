"""physai.cli.fit_request: what ``python -m physai fit-servo`` refuses before any fit (the follower against its leader
joint by joint, Menagerie's model, episodes too short to take part), each with the minimal recording that once gave a
plausible, wrong fit or a crash after it; and the shipped recording, which passes every check far from its threshold.
Refusals are checked with the fit replaced by one that fails the test: none of them may reach it."""

import dataclasses
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import recordings  # tests/recordings.py: corrupted copies of the shipped recording
from physai.__main__ import main
from physai.cli import fit_request, identify
from physai.engine import arm_replay, datasets
from physai.engine.so101 import JOINTS
from test_so101 import menagerie_copy, renamed_wrist_roll


@pytest.fixture
def refused(monkeypatch, capsys, tmp_path):
    """``refused(frames, meta) -> line``: fit-servo on that recording must exit 2 with one ``error:`` line before any
    fit, writing nothing."""
    def reached(*args, **kwargs):
        raise AssertionError('the fit was reached')

    monkeypatch.setattr(identify, 'identify', reached)

    def run(frames, meta, *options):
        root = recordings.write(tmp_path / 'data', frames, meta)
        out = tmp_path / 'arm.xml'
        assert main(['fit-servo', str(root), '--out', str(out), *options]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith('error: '), err
        assert not out.exists()
        return err[0]
    return run


def _with(frames: pd.DataFrame, feature: str, change) -> pd.DataFrame:
    """``frames`` with ``change(values)`` applied to every frame's ``feature`` (an (6,) array)."""
    frames = frames.copy()
    frames[feature] = [np.asarray(change(np.array(v, dtype=np.float64)), dtype=np.float32) for v in frames[feature]]
    return frames


def _scaled(joint: int, factor: float):
    def change(v):
        v[joint] *= factor
        return v
    return change


def _shifted(joint: int, by: float):
    def change(v):
        v[joint] += by
        return v
    return change


def _renamed(meta: dict, a: str, b: str) -> dict:
    """info.json with joints ``a`` and ``b`` swapped in both features' names (the loader sees the same joints)."""
    meta = {**meta, 'features': dict(meta['features'])}
    for feature in ('action', 'observation.state'):
        names = [{f'{a}.pos': f'{b}.pos', f'{b}.pos': f'{a}.pos'}.get(n, n) for n in meta['features'][feature]['names']]
        meta['features'][feature] = {**meta['features'][feature], 'names': names}
    return meta


# --- the shipped recording and the synthetic stand-in pass, far from every threshold --------------------------------

def test_the_shipped_recording_answers_its_leader_far_inside_every_threshold(real):
    found = fit_request.check_leader_follower(list(real.episodes))
    assert found['copy'] is None and found['best_shift'] == 4
    for joint, row in found['joints'].items():
        assert 0.9 < row['slope'] < 1.05, (joint, row)  # SLOPE_RANGE is 0.75 .. 1.33
        assert abs(row['offset_deg']) < fit_request.MAX_OFFSET_DEG / 10, (joint, row)
        assert row['beyond_deg'] < fit_request.RANGE_MARGIN_DEG / 2, (joint, row)  # the elbow's 100.0 against 96.8
        assert row['span_deg'] > fit_request.MIN_SPAN_DEG
    assert found['sag_gravity_r'] > 0.8  # MIN_SAG_GRAVITY_R is -0.5


def test_the_synthetic_stand_in_passes_too():
    data = arm_replay.synthetic_dataset()
    found = fit_request.check_leader_follower(list(data.episodes))
    assert found['sag_gravity_r'] > fit_request.MIN_SAG_GRAVITY_R


# --- what the leader/follower checks refuse --------------------------------------------------------------------------

@pytest.mark.parametrize('corrupt, words', [
    # state equal to action ended in a ZeroDivisionError at servo_truth.py after the whole fit
    (lambda f, m: (f.assign(**{'observation.state': f['action']}), m),
     ["observation.state must be the follower's own readings, got a copy of action in episode 0",
      'no follower was recorded']),
    # a shoulder_lift flipped in the state fitted a lag of 2.3 s; in the action, one of 5 s
    (lambda f, m: (_with(f, 'observation.state', _scaled(1, -1.0)), m),
     ['observation.state must move as far as action on every arm joint (a slope of 0.75 to 1.33), got -1.03 for '
      'shoulder_lift: its direction differs between the two arms', 'lerobot-calibrate']),
    (lambda f, m: (_with(f, 'action', _scaled(1, -1.0)), m), ['got -1.03 for shoulder_lift']),
    # a column scaled or shifted off its LeRobot grid (a leader in -100..100 with a follower in degrees; an arm with
    # another zero) is refused by the units check, which runs first (the slope and offset checks on degrees: below)
    (lambda f, m: (_with(f, 'action', _scaled(1, 1 / 1.5)), m),
     ["the recording's arm joints must all be in one unit", 'the action (leader) in mixed']),
    (lambda f, m: (_with(f, 'observation.state', _shifted(2, 35.0)), m),
     ["the recording's arm joints must all be in one unit", 'observation.state (follower) in mixed']),
    # shoulder_lift and elbow_flex swapped in info.json fitted kp 86 % too high and called it pinned
    (lambda f, m: (f, _renamed(m, 'shoulder_lift', 'elbow_flex')),
     ['shoulder_lift must sag with gravity in the held poses', 'got a correlation of -0.74',
      'holds another joint, or its sign is flipped in both arms']),
    (lambda f, m: (_with(_with(f, 'observation.state', _scaled(1, -1.0)), 'action', _scaled(1, -1.0)), m),
     ['shoulder_lift must sag with gravity', 'got a correlation of -0.88']),
])
def test_a_follower_that_does_not_answer_its_leader_is_refused_before_the_fit(refused, corrupt, words):
    line = refused(*corrupt(recordings.table(), recordings.info()))
    assert all(w in line for w in words), line


@pytest.mark.parametrize('change, words', [
    # a leader whose scale differs from its follower's (in degrees: what the units check cannot see)
    (lambda e: dataclasses.replace(e, action=e.action * np.r_[1, 1 / 1.5, 1, 1, 1, 1]),
     'got +1.55 for shoulder_lift: its scale differs between the two arms'),
    (lambda e: dataclasses.replace(e, state=e.state + np.r_[0, 0, 35.0, 0, 0, 0]),
     'observation.state must sit within 20° of action on every arm joint'),
    (lambda e: dataclasses.replace(e, state=e.state + np.r_[0, 0, 60.0, 0, 0, 0],
                                   action=e.action + np.r_[0, 0, 60.0, 0, 0, 0]),
     "elbow_flex must stay within Menagerie's range of the joint, -96.8° to 96.8° (± 10°)"),
])
def test_a_follower_in_degrees_that_does_not_answer_its_leader_is_refused(real, change, words):
    """The same corruptions as above on a recording already in degrees: the slope, offset and range checks."""
    with pytest.raises(ValueError, match=re.escape(words)):
        fit_request.check_leader_follower([change(e) for e in real])


def test_a_copy_of_the_action_a_few_frames_late_is_no_follower_either(real):
    """The teleport at its best shift is then exact: the truth table's ratios to it divided by zero."""
    e = real[0]
    late = dataclasses.replace(e, state=np.concatenate([e.action[:3], e.action[:-3]]))
    with pytest.raises(ValueError, match=r'got a copy of action 3 frames later in episode 0'):
        fit_request.check_leader_follower([late, real[1]])


def test_wrist_flex_and_wrist_roll_swapped_are_refused_by_the_joint_range_in_degrees(real):
    """wrist_flex and wrist_roll swapped in info.json fitted kp 15 % too high. Read as degrees, the two move within
    each other's ranges and gravity does not tell them apart; converted to degrees (the shipped recording is in
    LeRobot's -100..100), the wrist roll's values lie beyond the wrist flex's range in Menagerie's model."""
    swapped = list(JOINTS)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    with pytest.raises(ValueError, match=r"wrist_flex must stay within Menagerie's range of the joint"):
        fit_request.check_leader_follower([dataclasses.replace(e, joints=tuple(swapped)) for e in real])


# --- the model, and episodes too short to take part ------------------------------------------------------------------

def test_a_menagerie_model_with_other_joint_names_stops_the_command_before_the_fit(tmp_path):
    """A Menagerie copy whose wrist_roll is called otherwise ended fit-servo in a KeyError."""
    root = menagerie_copy(tmp_path / 'menagerie', renamed_wrist_roll)
    env = {**os.environ, 'MENAGERIE_ROOT': str(root)}
    done = subprocess.run([sys.executable, '-m', 'physai', 'fit-servo', str(datasets.shipped_recording()), '--out',
                           str(tmp_path / 'arm.xml')], env=env, capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith('error: the SO-101 model must have the hinge joints shoulder_pan, shoulder_lift, '
                               'elbow_flex, wrist_flex, wrist_roll, gripper in this order')
    assert 'wrist_rotate' in lines[0] and 'fitting' not in done.stderr and not (tmp_path / 'arm.xml').exists()


def test_a_fit_episode_too_short_for_leave_one_out_is_refused_up_front(refused):
    """A 3-frame fit episode failed after the whole fit (28 s): "shift must be shorter than the shortest episode"."""
    frames = recordings.table()
    frames = frames[(frames['episode_index'] != 0) | (frames['frame_index'] < 3)]
    line = refused(frames, {**recordings.info(), 'total_frames': len(frames)})
    assert line == ('error: every fit episode must last at least 2 s (60 frames at 30 fps): leave-one-out holds each '
                    'out once to score the fit on a move and its settling, got episode 0 with 3 frames (0.10 s); '
                    'leave it out with --episodes')


@pytest.mark.parametrize('fps, frames', [(30.0, 60), (5.0, 11), (1000.0, 2000)])
def test_an_episode_needs_two_seconds_and_more_frames_than_the_teleports_shifts(fps, frames):
    assert fit_request.min_frames(fps) == frames
    assert fit_request.MAX_SHIFT + 1 == len(range(11))  # servo_sysid.best_shift's default shifts
