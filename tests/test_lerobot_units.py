"""physai.engine.lerobot_units: LeRobot's formulas, the units read off a recording's values, and the conversion to
degrees, on synthetic recordings made through LeRobot's own formulas (both modes, and the two arms configured
differently) and on the shipped recording, whose units the chapter proves this way."""

import dataclasses
import json

import numpy as np
import pytest

from physai.engine import arm_replay, lerobot_units
from physai.engine.datasets import Episode, LeRobotDataset, load_lerobot, shipped_recording
from physai.engine.lerobot_units import DEGREES, RANGE_0_100, RANGE_M100_100
from physai.engine.so101 import ARM_JOINTS, JOINTS


# --- LeRobot's formulas, as MotorsBus._normalize and _unnormalize write them -------------------------------------

def test_normalize_is_lerobots_formula_for_each_mode():
    """Hand-computed from motors_bus.py (v0.4.2): a range of 1000 to 3000 counts, mid 2000, 4095 steps a turn."""
    raw = np.array([500, 1000, 1500, 2000, 3000, 3500])
    np.testing.assert_allclose(lerobot_units.normalize(raw, 1000, 3000, RANGE_M100_100),
                               [-100, -100, -50, 0, 100, 100])  # clamped at both ends
    np.testing.assert_allclose(lerobot_units.normalize(raw, 1000, 3000, RANGE_0_100), [0, 0, 25, 50, 100, 100])
    np.testing.assert_allclose(lerobot_units.normalize(raw, 1000, 3000, DEGREES),
                               (raw - 2000) * 360 / 4095)  # not clamped; the 4095 is LeRobot's resolution - 1
    assert lerobot_units.normalize(2000 + 4095 / 4, 1000, 3000, DEGREES) == pytest.approx(90.0)


def test_both_arm_modes_put_zero_in_the_middle_of_the_calibrated_range():
    for low, high in ((1000, 3000), (700, 3249), (0, 4095)):
        mid = (low + high) / 2
        assert lerobot_units.normalize(mid, low, high, RANGE_M100_100) == pytest.approx(0.0, abs=1e-12)
        assert lerobot_units.normalize(mid, low, high, DEGREES) == pytest.approx(0.0, abs=1e-12)


def test_inside_the_range_the_two_arm_modes_differ_by_the_degrees_per_unit():
    """d = u * (max - min) * 360 / (200 * 4095) for every count inside the range, exactly what to_degrees uses."""
    low, high = 812, 3361
    raw = np.arange(low, high + 1)
    u = lerobot_units.normalize(raw, low, high, RANGE_M100_100)
    d = lerobot_units.normalize(raw, low, high, DEGREES)
    np.testing.assert_allclose(u * lerobot_units.degrees_per_unit(high - low), d, rtol=0, atol=1e-12)


def test_unnormalize_truncates_to_a_goal_count_as_lerobot_does():
    assert lerobot_units.unnormalize(0.0, 1000, 3000, RANGE_M100_100) == 2000
    assert lerobot_units.unnormalize(150.0, 1000, 3000, RANGE_M100_100) == 3000  # clamped to ±100 first
    assert lerobot_units.unnormalize(-49.99, 1000, 3000, RANGE_M100_100) == 1500  # 1500.1 truncated
    assert lerobot_units.unnormalize(90.0, 1000, 3000, DEGREES) == 3023  # 2000 + 1023.75, truncated


@pytest.mark.parametrize('low, high', [(3000, 1000), (5, 5), (-1, 100), (0, 4096), (1.5, 100)])
def test_a_range_that_is_no_calibration_is_refused_by_name(low, high):
    with pytest.raises(ValueError, match='range_min and range_max must be whole encoder counts'):
        lerobot_units.normalize(0, low, high, RANGE_M100_100)


def test_a_mode_lerobot_does_not_have_is_refused():
    with pytest.raises(ValueError, match="mode must be one of degrees, range_m100_100, range_0_100, got 'radians'"):
        lerobot_units.normalize(0, 1000, 3000, 'radians')


# --- recordings made through LeRobot's formulas --------------------------------------------------------------------

FOLLOWER = {'shoulder_pan': (771, 3320), 'shoulder_lift': (820, 3123), 'elbow_flex': (890, 3095),
            'wrist_flex': (860, 3147), 'wrist_roll': (130, 3965), 'gripper': (2000, 3484)}
"""A follower's calibration (range_min, range_max), with the shipped recording's range widths (2549 ... 3835)."""

LEADER = {'shoulder_pan': (740, 3352), 'shoulder_lift': (830, 3276), 'elbow_flex': (900, 3119),
          'wrist_flex': (870, 3209), 'wrist_roll': (140, 3951), 'gripper': (2050, 3293)}
"""The leader's, with the shipped recording's leader widths (2612 ... 3811)."""


def counts(degrees: np.ndarray, calibration: dict) -> np.ndarray:
    """(nframe, 6) encoder counts of joints at ``degrees`` (LeRobot's, zero mid-range), the gripper's 0..100 too."""
    raw = np.empty_like(degrees)
    for i, j in enumerate(JOINTS):
        low, high = calibration[j]
        if j == 'gripper':
            raw[:, i] = low + degrees[:, i] / 100 * (high - low)
        else:
            raw[:, i] = (low + high) / 2 + degrees[:, i] * lerobot_units.MAX_COUNT / 360
    return np.clip(np.round(raw), 0, lerobot_units.MAX_COUNT)


def record(raw: np.ndarray, calibration: dict, mode: str) -> np.ndarray:
    """What LeRobot stores for encoder counts ``raw`` (float32, as its datasets hold them)."""
    out = np.empty_like(raw)
    for i, j in enumerate(JOINTS):
        out[:, i] = lerobot_units.normalize(raw[:, i], *calibration[j], RANGE_0_100 if j == 'gripper' else mode)
    return out.astype(np.float32).astype(np.float64)


@pytest.fixture(scope='module')
def motion():
    """Leader and follower angles (LeRobot's degrees) of chapter 4's synthetic stand-in: the follower's is the
    simulated arm's response to the leader's, and the elbow is folded past its range in the first frames."""
    data = arm_replay.synthetic_dataset(nepisode=2, seconds=4.0)
    leader = np.concatenate([e.action for e in data])
    follower = np.concatenate([e.state for e in data])
    leader[:5, JOINTS.index('elbow_flex')] = 120.0  # past the end of the leader's range (96.0 deg from mid)
    return data, leader, follower


def dataset(like: LeRobotDataset, action: np.ndarray, state: np.ndarray) -> LeRobotDataset:
    """``like``'s episodes with these action and state frames, in order."""
    episodes, k = [], 0
    for e in like:
        episodes.append(dataclasses.replace(e, action=action[k:k + e.nframe], state=state[k:k + e.nframe]))
        k += e.nframe
    return dataclasses.replace(like, episodes=tuple(episodes))


def test_a_normalised_recording_is_recognised_and_gives_back_the_followers_ranges(motion):
    like, leader, follower = motion
    data = dataset(like, record(counts(leader, LEADER), LEADER, RANGE_M100_100),
                   record(counts(follower, FOLLOWER), FOLLOWER, RANGE_M100_100))
    units = lerobot_units.identify_units(data)
    assert units.units == RANGE_M100_100 and units.normalised
    assert units.follower_counts == tuple(FOLLOWER[j][1] - FOLLOWER[j][0] for j in ARM_JOINTS)
    assert tuple(c.counts for c in units.action) == tuple(LEADER[j][1] - LEADER[j][0] for j in ARM_JOINTS)
    elbow, e = units.action[ARM_JOINTS.index('elbow_flex')], JOINTS.index('elbow_flex')
    past = int(np.sum(counts(leader, LEADER)[:, e] >= LEADER['elbow_flex'][1]))  # folded to or past the range's end
    assert past > 5 and elbow.at_high == past and not elbow.beyond_100  # the clamp, as the shipped leader's elbow
    assert all(c.grid_offset < lerobot_units.GRID_TOL_COUNTS for c in units.action + units.state)
    assert all(c.degree_offset > 0.3 for c in units.action + units.state)  # anywhere between the degree grid's lines
    clamped = sum(c.at_low + c.at_high for c in units.action + units.state)
    assert 'normalisation' in units.summary() and f'{clamped} values at exactly ±100' in units.summary()


def test_to_degrees_gives_what_lerobot_would_have_written_in_degrees(motion):
    """The follower's state converted equals the same counts written in DEGREES mode inside the calibrated range
    (past its end, the range's end: the clamp lost the rest); the action converted is the goal the follower's bus
    made of the leader's number (before LeRobot truncates it to a count), in degrees."""
    like, leader, follower = motion
    follower_raw, leader_raw = counts(follower, FOLLOWER), counts(leader, LEADER)
    action = record(leader_raw, LEADER, RANGE_M100_100)
    data = dataset(like, action, record(follower_raw, FOLLOWER, RANGE_M100_100))
    converted, units = lerobot_units.to_degrees(data)
    state = np.concatenate([e.state for e in converted])
    clamped_raw = np.stack([np.clip(follower_raw[:, i], *FOLLOWER[j]) for i, j in enumerate(JOINTS)], axis=1)
    assert np.any(clamped_raw != follower_raw)  # the follower's elbow too is folded past its range at rest
    np.testing.assert_allclose(state, record(clamped_raw, FOLLOWER, DEGREES), rtol=0, atol=1e-4)
    goal = np.empty_like(action)  # the follower's _unnormalize, without its int()
    for i, j in enumerate(JOINTS):
        low, high = FOLLOWER[j]
        goal[:, i] = ((np.clip(action[:, i], -100, 100) + 100) / 200 * (high - low) + low - (low + high) / 2) * \
            360 / lerobot_units.MAX_COUNT
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    np.testing.assert_allclose(np.concatenate([e.action for e in converted])[:, arm], goal[:, arm], rtol=0,
                               atol=1e-9)
    gripper = JOINTS.index('gripper')
    np.testing.assert_array_equal(np.concatenate([e.action for e in converted])[:, gripper], action[:, gripper])
    assert lerobot_units.identify_units(converted).units == DEGREES  # converted once, never twice


def test_a_recording_in_degrees_is_recognised_and_left_as_it_is(motion):
    like, leader, follower = motion
    data = dataset(like, record(counts(leader, LEADER), LEADER, DEGREES),
                   record(counts(follower, FOLLOWER), FOLLOWER, DEGREES))
    units = lerobot_units.identify_units(data)
    assert units.units == DEGREES and not units.normalised
    assert all(c.degree_offset < lerobot_units.GRID_TOL_COUNTS for c in units.action + units.state)
    assert lerobot_units.to_degrees(data)[0] is data
    with pytest.raises(ValueError, match='must be in LeRobot.s -100..100 normalisation to have a scale'):
        units.degrees_per_unit()
    with pytest.raises(ValueError, match='a calibration converts a recording in LeRobot.s -100..100'):
        lerobot_units.to_degrees(data, calibration={j: FOLLOWER[j] for j in ARM_JOINTS})


def test_leader_and_follower_configured_differently_are_refused(motion):
    """The leader in -100..100, the follower in degrees: LeRobot sends the leader's number, which the follower reads
    as degrees, so no one scale makes the recording what either arm meant."""
    like, leader, follower = motion
    data = dataset(like, record(counts(leader, LEADER), LEADER, RANGE_M100_100),
                   record(counts(follower, FOLLOWER), FOLLOWER, DEGREES))
    units = lerobot_units.identify_units(data)
    assert (units.action_units, units.state_units, units.units) == (RANGE_M100_100, DEGREES, 'mixed')
    with pytest.raises(ValueError, match='must all be in one unit, got mixed: the action .leader. in range_m100_100, '
                                         'observation.state .follower. in degrees'):
        lerobot_units.to_degrees(data)


def test_values_on_no_grid_are_not_proven_either_way(motion):
    """The stand-in's commands are smooth paths, not encoder readings: nothing to prove, read as degrees."""
    like, _, _ = motion
    units = lerobot_units.identify_units(like)
    assert units.units == 'unknown' and 'not proven' in units.summary()
    assert lerobot_units.to_degrees(like)[0] is like


def test_a_processed_recording_still_shows_the_clamp():
    """Off any grid (resampled, say), values that pile up at exactly ±100 with none beyond are the clamp."""
    rng = np.random.default_rng(1)
    values = rng.uniform(-90, 90, 200)
    values[:12] = 100.0
    column = lerobot_units.column_units(values)
    assert column.mode == 'unquantised' and column.at_high == 12
    assert lerobot_units.feature_units([column] * 5) == RANGE_M100_100
    assert lerobot_units.feature_units([lerobot_units.column_units(values[12:])] * 5) == 'unknown'


def test_a_range_of_2275_counts_is_the_one_that_fits_both_grids():
    """200/2275 = 360/4095: such a column, and a degrees column with a half-count mid, is 'either'."""
    assert lerobot_units.EITHER_COUNTS == 2275
    raw = np.random.default_rng(2).integers(900, 3176, 300)
    normalised = lerobot_units.normalize(raw, 900, 3175, RANGE_M100_100)
    degrees = lerobot_units.normalize(raw, 900, 3175, DEGREES)  # mid 2037.5
    for values in (normalised, degrees):
        column = lerobot_units.column_units(values)
        assert column.mode == 'either' and column.counts == 2275
    # one such joint leaves the feature open; several are a degrees recording's odd ranges, not five equal ranges
    other = lerobot_units.column_units(lerobot_units.normalize(raw, 800, 3349, RANGE_M100_100))
    assert lerobot_units.feature_units([column, other, other, other, other]) == RANGE_M100_100
    assert lerobot_units.feature_units([column] + [lerobot_units.column_units(np.zeros(3))] * 4) == 'either'
    assert lerobot_units.feature_units([column] * 5) == DEGREES


def test_too_few_values_decide_nothing():
    column = lerobot_units.column_units(np.array([-50.0, 0.0, 50.0] * 10))
    assert column.mode == 'undetermined' and column.counts is None


# --- the follower's calibration file --------------------------------------------------------------------------------

def calibration_file(path, ranges: dict, **change) -> str:
    """A calibration file as LeRobot writes it (Robot._save_calibration: one object per motor)."""
    entries = {j: {'id': i + 1, 'drive_mode': 0, 'homing_offset': -13 * i, 'range_min': lo, 'range_max': hi}
               for i, (j, (lo, hi)) in enumerate(ranges.items())}
    for joint, values in change.items():
        entries[joint].update(values)
    path.write_text(json.dumps(entries, indent=4))
    return str(path)


def test_a_calibration_file_converts_and_must_match_the_recording(motion, tmp_path):
    like, leader, follower = motion
    data = dataset(like, record(counts(leader, LEADER), LEADER, RANGE_M100_100),
                   record(counts(follower, FOLLOWER), FOLLOWER, RANGE_M100_100))
    ranges = lerobot_units.read_calibration(calibration_file(tmp_path / 'follower.json', FOLLOWER))
    assert ranges == {j: FOLLOWER[j] for j in ARM_JOINTS}
    by_file, _ = lerobot_units.to_degrees(data, calibration=ranges)
    by_grid, _ = lerobot_units.to_degrees(data)
    for a, b in zip(by_file, by_grid):
        np.testing.assert_array_equal(a.state, b.state)
    leader_file = lerobot_units.read_calibration(calibration_file(tmp_path / 'leader.json', LEADER))
    with pytest.raises(ValueError, match=r"the calibration's shoulder_pan range, 2612 counts .740 to 3352., must be "
                                         r"the follower's grid in observation.state, 2549 counts"):
        lerobot_units.to_degrees(data, calibration=leader_file)


@pytest.mark.parametrize('change, message', [
    (dict(elbow_flex={'range_min': 3000, 'range_max': 1000}), 'elbow_flex in the calibration file .* must have whole'),
    (dict(wrist_roll={'range_max': 4096.5}), 'wrist_roll in the calibration file .* must have whole counts'),
    (dict(wrist_flex={'drive_mode': 1}), 'wrist_flex in the calibration file .* must have drive_mode 0'),
])
def test_a_calibration_file_that_is_not_the_so101s_is_refused_by_name(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        lerobot_units.read_calibration(calibration_file(tmp_path / 'c.json', FOLLOWER, **change))


def test_a_calibration_file_missing_a_joint_or_not_json_is_refused(tmp_path):
    path = tmp_path / 'c.json'
    path.write_text(json.dumps({'shoulder_pan': {'range_min': 1, 'range_max': 2}}))
    with pytest.raises(ValueError, match='must calibrate shoulder_lift, got joints shoulder_pan'):
        lerobot_units.read_calibration(path)
    path.write_text('{not json')
    with pytest.raises(ValueError, match='must be LeRobot.s JSON'):
        lerobot_units.read_calibration(path)
    with pytest.raises(FileNotFoundError, match='no calibration file at'):
        lerobot_units.read_calibration(tmp_path / 'absent.json')


# --- the shipped recording -------------------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def shipped():
    if not shipped_recording().is_dir():
        pytest.skip('the shipped SO-101 recording is absent')
    return load_lerobot(shipped_recording())


def test_the_shipped_recording_is_in_lerobots_normalisation_not_degrees(shipped):
    """Chapter 4's evidence: every arm joint of both arms on a grid of its own calibrated range (the leader's
    2219-3811 counts, the follower's 2205-3835), far off the one degree grid, and the leader's elbow clamped at
    exactly 100 in 515 frames; nothing lies beyond ±100."""
    units = lerobot_units.identify_units(shipped)
    assert units.units == RANGE_M100_100
    assert units.follower_counts == (2549, 2303, 2205, 2287, 3835)
    assert tuple(c.counts for c in units.action) == (2612, 2446, 2219, 2339, 3811)
    assert max(c.grid_offset for c in units.action + units.state) < 1e-4
    assert min(c.degree_offset for c in units.action + units.state) > 0.45
    assert [c.at_low + c.at_high for c in units.action] == [0, 0, 515, 0, 0]
    assert [c.at_low + c.at_high for c in units.state] == [0] * 5
    assert not any(c.beyond_100 for c in units.action + units.state)
    np.testing.assert_allclose(units.degrees_per_unit(), np.array([2549, 2303, 2205, 2287, 3835]) * 360 / 819000)


def test_the_shipped_recording_in_degrees_folds_the_elbow_just_inside_the_models_range(shipped):
    """Converted, the follower's elbow folds to 96.5 deg, inside the model's 96.8; the leader's clamped 100 becomes
    the follower's range end, 96.9 deg, a hair past it."""
    converted, _ = lerobot_units.to_degrees(shipped)
    elbow = JOINTS.index('elbow_flex')
    limit = np.degrees(arm_replay.slim_arm().jnt_range[elbow][1])
    state_max = max(e.state[:, elbow].max() for e in converted)
    action_max = max(e.action[:, elbow].max() for e in converted)
    assert state_max == pytest.approx(99.5465 * 2205 * 360 / 819000, abs=1e-3) and state_max < limit < action_max
    assert action_max == pytest.approx(2205 * 180 / 4095)


def test_the_recordings_readme_states_the_units_the_values_show(shipped):
    """The shipped README's numbers are the ones identify_units and to_degrees compute."""
    text = ' '.join((shipped_recording() / 'README.md').read_text(encoding='utf-8').split())
    units = lerobot_units.identify_units(shipped)
    leader = [c.counts for c in units.action]
    follower = list(units.follower_counts)
    say = lambda values: ', '.join(map(str, values[:-1])) + ' and ' + str(values[-1])  # noqa: E731
    assert f'leader\'s ranges are {say(leader)} counts wide, the follower\'s {say(follower)}' in text
    assert say([f'{s:.3f}' for s in units.degrees_per_unit()]) + ' degrees per unit' in text
    assert f'exactly 100.000 in {units.action[2].at_high} frames' in text
    assert max(c.grid_offset for c in units.action + units.state) < 1e-4 and 'within 10⁻⁴ of a step' in text
    offsets = [c.degree_offset for c in units.action + units.state]
    assert f'{min(offsets):.2f} to {max(offsets):.2f} of a step' in text
    converted, _ = lerobot_units.to_degrees(shipped)
    e = JOINTS.index('elbow_flex')
    assert f'folds to {max(x.state[:, e].max() for x in converted):.1f}°' in text
    assert f'commands it to {max(x.action[:, e].max() for x in converted):.1f}°' in text


@pytest.mark.slow
def test_the_action_converted_with_the_leaders_scale_fits_a_stiffer_kp_and_a_shorter_lag(shipped):
    """Chapter 4's 'What the units change': each column on its own arm's scale moves the commands up to 6 % off the
    goals the follower was sent, and the fit answers with a kp about a tenth stiffer and a lag about a tenth shorter
    than on the follower's scale (9.12 against 8.31 N·m/rad, 95 against 108 ms)."""
    from physai.engine import sysid
    from physai.experiments import servo_sysid
    units = lerobot_units.identify_units(shipped)
    follower, leader = units.degrees_per_unit(), lerobot_units.degrees_per_unit([c.counts for c in units.action])
    assert 0.05 < np.max(np.abs(leader / follower - 1)) < 0.07
    fit_eps, _ = servo_sysid.split(shipped)
    right = lerobot_units.convert(fit_eps, follower)
    own = [dataclasses.replace(e, action=lerobot_units.convert([raw], leader)[0].action) for e, raw in zip(right, fit_eps)]
    core, wrong = (r.servo for r in sysid.fit_servos([right, own], starts={'therobotstudio': arm_replay.THEROBOTSTUDIO},
                                                       progress=False))
    assert 1.05 < wrong.kp / core.kp < 1.15 and 0.83 < wrong.lag_ms / core.lag_ms < 0.93
