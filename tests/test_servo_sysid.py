"""physai.experiments.servo_sysid: chapter 4's analysis: the kp × damping map (the valley, the cliff, the
speeds), the Break-it replays as ensembles, the dataset choice, and the chapter's claims on the real recording with
the servo fitted to it (slow; skipped when the recording is absent)."""

import dataclasses
import json
import math

import mujoco
import numpy as np
import pytest

from physai.engine import arm_replay, lerobot_units, perturb, sysid
from physai.experiments import registry, servo_sysid
from physai.laws import robust
from physai.__main__ import main
from physai.engine.datasets import Episode, load_lerobot, shipped_recording
from physai.engine.arm_replay import ArmServo, ReplayConfig
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.experiments.servo_sysid import DampingValley, EnsembleScore

REAL = shipped_recording()


def chapter_recording():
    """The shipped recording as chapter 4 reads it: converted from LeRobot's -100..100 to its degrees."""
    return lerobot_units.to_degrees(load_lerobot(REAL))[0]


needs_real = pytest.mark.skipif(not REAL.is_dir(), reason='the shipped SO-101 recording is absent')

ELBOW = ARM_JOINTS.index('elbow_flex')


# --- reading a map -------------------------------------------------------------------------------

KPS = np.array([1.0, 10.0, 100.0])
DAMPINGS = np.array([0.01, 0.1, 1.0, 10.0])


def made_up_valley(grid) -> DampingValley:
    return DampingValley(kps=KPS, dampings=DAMPINGS, mae_deg=np.array(grid, dtype=float), kv=0.5)


def test_the_best_cell_and_the_nearest_cell_in_log_scale():
    v = made_up_valley([[3.0, 2.0, 4.0, 9.0],
                        [1.5, 1.0, 2.5, 9.0],
                        [2.0, 1.8, 1.9, 9.0]])
    assert v.best == (10.0, 0.1, 1.0)
    assert v.at(998.0, 0.6) == 1.9        # kp 100 (nearest), damping 1 (0.6 is nearer 1 than 0.1 in log)
    assert v.at(1e6, 1e-6) == 2.0         # off the grid: its edge
    np.testing.assert_array_equal(v.best_per_damping, [1.5, 1.0, 1.9, 9.0])


def test_the_cliff_is_where_every_damping_from_there_on_is_more_than_twice_the_best():
    """A column past twice the best that a later column undercuts again is not yet the cliff."""
    v = made_up_valley([[1.0, 2.5, 1.5, 2.2],
                        [1.2, 2.6, 2.1, 2.3],
                        [1.4, 2.7, 2.2, 2.4]])
    assert v.cliff_damping == 10.0
    v = made_up_valley([[3.0, 1.0, 2.5, 2.1]] * 3)
    assert v.cliff_damping == 1.0
    assert math.isnan(made_up_valley([[3.0, 1.0, 1.5, 1.9]] * 3).cliff_damping)


def test_the_valley_rows_list_each_kp_with_its_best_damping_and_lag():
    v = made_up_valley([[3.0, 2.0, 4.0, 9.0],
                        [1.5, 1.0, 2.5, 9.0],
                        [2.0, 1.9, 1.8, 9.0]])
    rows = v.rows(kp_range=(5.0, 100.0))
    assert [r['kp'] for r in rows] == [10.0, 100.0]
    assert [r['best_damping'] for r in rows] == [0.1, 1.0]
    assert rows[0]['lag_ms'] == pytest.approx(1e3 * (0.5 + 0.1) / 10.0)
    assert [r['mae_deg'] for r in rows] == [1.0, 1.8]


@pytest.mark.parametrize('kwargs, message', [
    (dict(kps=[10.0, 1.0, 100.0]), 'kps must be 2 or more increasing finite numbers > 0 N·m/rad'),
    (dict(dampings=[0.0, 0.1, 1.0, 10.0]), 'dampings must be 2 or more increasing finite numbers > 0 N·m·s/rad'),
    (dict(mae_deg=np.ones((3, 3))), r'mae_deg must be \(3, 4\) finite numbers >= 0 deg, got shape \(3, 3\)'),
    (dict(mae_deg=np.full((3, 4), np.nan)), r'mae_deg must be \(3, 4\) finite numbers >= 0 deg'),
    (dict(kv=-0.1), 'kv must be a finite number >= 0 N·m·s/rad, got -0.1'),
])
def test_a_valley_rejects_a_malformed_grid(kwargs, message):
    args = dict(kps=KPS, dampings=DAMPINGS, mae_deg=np.ones((3, 4)), kv=0.5) | kwargs
    with pytest.raises(ValueError, match=message):
        DampingValley(**args)


def test_a_valley_rejects_bad_questions():
    v = made_up_valley(np.ones((3, 4)))
    with pytest.raises(ValueError, match='kp must be a finite number > 0 N·m/rad, got 0'):
        v.at(0, 1.0)
    with pytest.raises(ValueError, match=r'kp_range must be \(low, high\) N·m/rad with 0 < low <= high'):
        v.rows(kp_range=(100.0, 3.0))


def test_frame_speeds_are_the_change_per_frame_times_the_frame_rate():
    angles = np.outer(np.arange(5.0), [1.0, -2.0])  # 1 and -2 degrees a frame
    np.testing.assert_allclose(servo_sysid.frame_speeds_deg(angles, 30.0), np.tile([30.0, 60.0], (4, 1)))
    with pytest.raises(ValueError, match=r'angles_deg must be \(nframe, njoint\) with nframe >= 2, got shape \(1, 2\)'):
        servo_sysid.frame_speeds_deg(angles[:1], 30.0)
    with pytest.raises(ValueError, match='fps must be a finite number > 0 frames/s, got 0'):
        servo_sysid.frame_speeds_deg(angles, 0)


def test_a_saturated_joint_tops_out_at_forcerange_over_the_joint_damping_not_kv(soft):
    assert servo_sysid.saturated_speed_deg(soft) == pytest.approx(math.degrees(2.0 / 0.3))
    assert servo_sysid.saturated_speed_deg(soft, damping=1.0) == pytest.approx(math.degrees(2.0))
    with pytest.raises(ValueError, match='damping must be a finite number > 0 N·m·s/rad, got 0.0'):
        servo_sysid.saturated_speed_deg(soft, damping=0.0)


# --- ensembles -----------------------------------------------------------------------------------

def _score(low, high):
    return EnsembleScore(mae=robust.Ensemble(median=(low + high) / 2, low=low, high=high, n=8),
                         joint_mae_deg=np.zeros(5), diverged=False, runs=())


def test_a_chaotic_ensemble_is_shown_to_one_digit_a_smooth_one_to_three_decimals():
    smooth = _score(0.70119782, 0.70119783)
    assert not smooth.chaotic and smooth.figure == smooth.mae.median and smooth.shown == '0.701'
    chaotic = _score(2.78, 3.07)
    assert chaotic.chaotic and chaotic.figure == 3 and chaotic.shown == '≈ 3 (chaotic)'
    assert _score(1.0, 1.0 + 2 * servo_sysid.CHAOS_DEG).chaotic


def test_a_smooth_replays_ensemble_is_the_plain_replay(synthetic_episode, soft):
    """Starts 0 to 7e-9 rad apart: a smooth replay's runs agree far inside CHAOS_DEG, and run 0 is the plain one."""
    ep = synthetic_episode()
    score = servo_sysid.ensemble_score(soft, [ep])
    plain = arm_replay.replay([soft], [ep])[0][0]
    assert len(score.runs) == len(arm_replay.ENSEMBLE_OFFSETS) and not score.chaotic and not score.diverged
    np.testing.assert_array_equal(score.runs[0][0].sim_deg, plain.sim_deg)
    assert score.figure == pytest.approx(plain.mae_deg, abs=1e-6)
    np.testing.assert_allclose(score.joint_mae_deg, plain.joint_mae_deg, atol=1e-6)


def test_break_it_rows_carry_the_table_and_the_ensembles(synthetic_episode, soft):
    ep = synthetic_episode(30)
    variants = {'plain': ReplayConfig(), 'coarse': ReplayConfig(integrator='Euler', timestep=1 / 30)}
    rows = servo_sysid.break_it(soft, [ep], variants=variants)
    assert [r['replay'] for r in rows] == ['plain', 'coarse']
    for r in rows:
        assert r['fitted_mae_deg'] == r['fitted'].shown and r['menagerie_mae_deg'] == r['menagerie'].shown
        assert r['fitted_elbow_deg'] == r['fitted'].joint_mae_deg[ELBOW]
        assert r['diverged'] == 'no'
    assert rows[0]['menagerie'].runs[0][0].servo == arm_replay.MENAGERIE
    with pytest.raises(ValueError, match=r"variants\['bad'\] must be a ReplayConfig"):
        servo_sysid.break_it(soft, [ep], variants={'bad': 'Euler'})
    with pytest.raises(ValueError, match='episodes must hold at least one episode'):
        servo_sysid.ensemble_score(soft, [])


# --- the chapter's claims on the real recording --------------------------------------------------

@pytest.fixture(scope='module')
def chapter(book_fit):
    """The chapter's recording, held-out episode and fitted servo (``book_fit``, conftest.py: fitted once a session)."""
    data, _, heldout, fitted = book_fit
    return data, heldout, fitted


@pytest.fixture(scope='module')
def valley(chapter):
    """The chapter's map: the fit episodes (nothing is chosen on the held-out one), every other kp and damping."""
    data, _, fitted = chapter
    fit_eps, _ = servo_sysid.split(data)
    return servo_sysid.damping_valley(fit_eps, fitted, kps=servo_sysid.VALLEY_KPS[::2],
                                      dampings=servo_sysid.VALLEY_DAMPINGS[::2])


def _shown_valley(v: DampingValley, fitted: ArmServo) -> dict:
    """The valley's figures as the chapter prints them."""
    kp, damping, mae = v.best
    return dict(best=f'{kp:.2f} {damping:.3f} {mae:.3f}',
                menagerie=f'{v.at(arm_replay.MENAGERIE.kp, arm_replay.MENAGERIE.damping):.2f}',
                soft=f'{v.at(v.kps[0], fitted.damping):.2f}', cliff=f'{v.cliff_damping:.2f}',
                rows=[f"{r['kp']:.2f} {r['best_damping']:.3f} {r['lag_ms']:.0f} {r['mae_deg']:.3f}"
                      for r in v.rows()])


@pytest.mark.slow
@needs_real
def test_the_error_valley_follows_the_fitted_lag_until_the_damping_caps_it(chapter, valley):
    """The best cell's lag (kv + damping)/kp is the fitted lag within 10 %; below the fitted kp the best damping
    is the grid's smallest (kv alone is already too slow); above it the best damping grows with kp up to a cap,
    and the error rises row on row."""
    _, _, fitted = chapter
    best_kp, best_damping, best = valley.best
    assert 1e3 * (fitted.kv + best_damping) / best_kp == pytest.approx(fitted.lag_ms, rel=0.1)
    rows = valley.rows()
    softer = [r for r in rows if r['kp'] < fitted.kp]
    stiffer = [r for r in rows if r['kp'] > fitted.kp]
    assert softer and all(r['best_damping'] == valley.dampings[0] for r in softer)
    assert all(1e3 * fitted.kv / r['kp'] > fitted.lag_ms for r in softer)
    caps = [r['best_damping'] for r in stiffer]
    assert len(stiffer) >= 3 and caps == sorted(caps) and caps[-1] < valley.dampings[-1]
    errors = [r['mae_deg'] for r in stiffer]
    assert errors == sorted(errors) and errors[0] == best
    assert valley.at(valley.kps[0], fitted.damping) > 5 * best                          # too soft: sags, trails
    assert valley.at(arm_replay.MENAGERIE.kp, arm_replay.MENAGERIE.damping) > 2 * best          # too stiff: a teleport


@pytest.mark.slow
@needs_real
def test_past_the_cliff_the_joint_damping_caps_the_speed_below_the_real_arms(chapter, valley):
    """From the cliff on, even the best kp is more than twice as far off as the best cell: there forcerange/damping
    is below speeds the real joints reach in a few percent of the fit episodes' frames. The fitted servo's cap is
    above the real arm's peak speed, and its joints peak below that cap, at a speed the lag sets."""
    data, heldout, fitted = chapter
    fit_eps, _ = servo_sysid.split(data)
    cliff = valley.cliff_damping
    past = valley.dampings >= cliff
    assert past.any() and np.all(valley.best_per_damping[past] > servo_sysid.CLIFF_FACTOR * valley.best[2])
    assert cliff >= max(r['best_damping'] for r in valley.rows())  # the stiff rows' best damping is where it begins
    real = np.concatenate([servo_sysid.frame_speeds_deg(e.state[:, arm_replay.arm_columns(e.joints)], data.fps)
                           for e in fit_eps])
    assert np.mean(real > servo_sysid.saturated_speed_deg(fitted, damping=cliff)) > 0.01
    assert servo_sysid.saturated_speed_deg(fitted) > real.max()
    rep = arm_replay.replay([fitted], heldout)[0][0]
    sim_peak = servo_sysid.frame_speeds_deg(rep.sim_deg, data.fps).max()
    assert sim_peak < real.max() < servo_sysid.saturated_speed_deg(fitted)


@pytest.mark.slow
@needs_real
def test_the_valleys_printed_figures_survive_a_last_bit_change(chapter, valley, monkeypatch):
    data, _, fitted = chapter
    fit_eps, _ = servo_sysid.split(data)
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    again = servo_sysid.damping_valley(fit_eps, fitted, kps=servo_sysid.VALLEY_KPS[::2],
                                       dampings=servo_sysid.VALLEY_DAMPINGS[::2])
    assert _shown_valley(again, fitted) == _shown_valley(valley, fitted)


@pytest.fixture(scope='module')
def break_rows(chapter):
    _, heldout, fitted = chapter
    return {r['replay']: r for r in servo_sysid.break_it(fitted, heldout)}


@pytest.mark.slow
@needs_real
def test_break_it_only_menagerie_at_one_step_per_frame_is_chaotic(break_rows):
    """The fitted servo is smooth in every entry; Menagerie's stiff, clamped one is chaotic at one step per frame
    under Euler and implicitfast, about 3° (one digit), and nowhere else. No entry diverges."""
    assert list(break_rows) == list(servo_sysid.BREAK_VARIANTS)
    one_step = {'Euler, 33.3 ms', 'implicitfast, 33.3 ms'}
    for name, r in break_rows.items():
        assert not r['fitted'].chaotic, name
        assert r['menagerie'].chaotic == (name in one_step), name
        assert r['diverged'] == 'no'
    for name in one_step:
        assert break_rows[name]['menagerie'].figure == 3
        assert break_rows[name]['menagerie_mae_deg'] == '≈ 3 (chaotic)'
        # the soft fitted servo notices the coarse step little
        assert break_rows[name]['fitted'].figure == pytest.approx(break_rows['as above']['fitted'].figure, rel=0.1)
    assert break_rows['as above']['menagerie'].figure < 2.5


@pytest.mark.slow
@needs_real
def test_break_it_contacts_hardly_matter_and_the_limit_stands_in_for_the_arms_own_stop(break_rows):
    """Contacts on change either servo's error by under 5 % (the boxes overlap 4 mm deep; read as degrees, 2 cm, they
    had more than doubled the fitted servo's). Limits off, the fitted elbow sags past the model's limit and on past
    where the real elbow rests, so its error rises; the limit stops it 2-3 degrees past the real rest."""
    plain, contacts, free = (break_rows[k] for k in ('as above', 'contacts on', 'limits off'))
    for servo in ('fitted', 'menagerie'):
        assert contacts[servo].figure == pytest.approx(plain[servo].figure, rel=0.05)
    assert free['fitted_elbow_deg'] > plain['fitted_elbow_deg']
    rest = free['fitted'].runs[0][0]
    limit = math.degrees(arm_replay.slim_arm().jnt_range[JOINTS.index('elbow_flex')][1])
    real_rest, sim_rest = rest.real_deg[-1, ELBOW], rest.sim_deg[-1, ELBOW]
    assert limit - 3 < real_rest < limit     # the model's limit stops the elbow a little past the real one's rest
    assert sim_rest > limit + 1              # without it the soft elbow sags on past the limit


@pytest.mark.slow
@needs_real
def test_break_its_printed_figures_survive_a_last_bit_change(chapter, break_rows, monkeypatch):
    _, heldout, fitted = chapter
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    nudged = servo_sysid.break_it(fitted, heldout)

    def shown(r):
        return r['fitted_mae_deg'], r['menagerie_mae_deg'], f"{r['fitted_elbow_deg']:.3f}", r['diverged']

    assert [shown(r) for r in nudged] == [shown(r) for r in break_rows.values()]


# --- the teleport scale, the map, the hold sag, the dataset and the recording ------------------------

def test_teleport_scale_and_its_best_shift_find_a_known_delay(synthetic_episode):
    """A follower that lags its command by 3 frames: the teleport error vanishes at shift 3."""
    episodes = [synthetic_episode(60, 0, delay=3), synthetic_episode(60, 1, delay=3)]
    assert servo_sysid.best_shift(episodes) == 3
    assert servo_sysid.teleport_errors(episodes, 3).max() == 0
    ep = episodes[0]
    np.testing.assert_allclose(servo_sysid.teleport_errors([ep], 1), np.abs(ep.action[:-1, :5] - ep.state[1:, :5]))


def test_kp_damping_map_is_one_replay_per_cell(synthetic_episode, soft):
    ep = synthetic_episode(20)
    grid = servo_sysid.kp_damping_map([ep], soft, [10.0, 100.0], [0.1, 1.0, 3.0])
    assert grid.shape == (2, 3)
    one = arm_replay.replay([dataclasses.replace(soft, kp=100.0, damping=3.0)], [ep])[0][0]
    assert grid[1, 2] == one.mae_deg


def test_hold_sag_of_a_stiff_servo_is_near_zero():
    """Held commands: the kp 998 servo holds within a few hundredths of a degree, a kp 3 one sags."""
    t = np.arange(60) / 30.0
    action = np.tile(np.array([0.0, -20.0, 40.0, 30.0, 0.0, 10.0]), (60, 1))
    ep = Episode(index=0, fps=30.0, joints=JOINTS, action=action, state=action.copy(), timestamp=t)
    assert servo_sysid.held_frames(action[:, :5]).sum() == 60 - 6
    stiff, _ = servo_sysid.hold_sag_deg(arm_replay.replay([arm_replay.MENAGERIE], [ep])[0][0])
    soft, real = servo_sysid.hold_sag_deg(arm_replay.replay([ArmServo(
        kp=3.0, kv=0.3, forcerange=3.0, damping=0.3, frictionloss=0.0, armature=0.03)], [ep])[0][0])
    assert np.all(np.abs(stiff) < 0.05)
    assert np.max(np.abs(soft)) > 1.0
    np.testing.assert_array_equal(real, 0)


@needs_real
def test_contacts_off_because_the_collision_boxes_overlap_when_folded(real):
    """Measured poses put the lower arm, wrist and gripper boxes a few millimetres into the shoulder's, in a fifth of
    the frames or more of every episode (the recording read as degrees had them 2 cm deep: the joints were off by
    their scale)."""
    for ep in real:
        depth = servo_sysid.overlap_depth(ep)
        assert 0.003 < depth.max() < 0.005
        assert np.mean(depth > 0) > 0.18


@needs_real
def test_the_real_elbow_folds_to_the_models_range_and_the_leader_commands_past_it(real):
    elbow = arm_replay.slim_arm().jnt_range[JOINTS.index('elbow_flex')]
    reached = max(np.deg2rad(ep.state[:, 2]).max() for ep in real)
    commanded = max(np.deg2rad(ep.action[:, 2]).max() for ep in real)
    assert elbow[1] - np.radians(0.5) < reached < elbow[1] < commanded


def test_the_book_uses_the_shipped_recording_and_the_stand_in_only_when_asked(monkeypatch):
    monkeypatch.delenv('PHYSAI_DATASET', raising=False)
    ds, origin = servo_sysid.find_dataset()
    assert origin == 'recording so101_record_test' and ds.robot_type == 'so101_follower' and len(ds) == 4
    ds, origin = servo_sysid.find_dataset('synthetic')
    assert 'synthetic' in origin and len(ds) == 4


def test_a_missing_recording_is_an_error_not_a_silent_stand_in(monkeypatch, tmp_path):
    monkeypatch.setenv('PHYSAI_DATASET', str(tmp_path / 'nowhere'))
    with pytest.raises(FileNotFoundError, match='no dataset folder'):
        servo_sysid.find_dataset()


@needs_real
def test_sign_convention_keeps_the_tip_near_the_table(real):
    """+1 signs: the tip dips to the table plane but not through it; one flipped sign breaks that."""
    z = np.concatenate([servo_sysid.tip_height(ep) for ep in real])
    assert -0.03 < z.min() < 0.0 and z.max() < 0.25
    lift_flipped = np.concatenate([servo_sysid.tip_height(ep, signs=(1, -1, 1, 1, 1)) for ep in real])
    elbow_flipped = np.concatenate([servo_sysid.tip_height(ep, signs=(1, 1, -1, 1, 1)) for ep in real])
    assert lift_flipped.min() < -0.07     # through the table
    assert elbow_flipped.min() > 0.1      # never reaches it


@pytest.fixture(scope='module')
def sysid_rows(real):
    fit_eps, heldout = servo_sysid.split(real)
    result = sysid.fit_servo(fit_eps, progress=False)
    return {row['model']: row for row in servo_sysid.sysid_rows(fit_eps, heldout, result.servo)}, result


@pytest.mark.slow
@needs_real
def test_sysid_table_claims(sysid_rows):
    """The chapter's findings: the kp 998 servo is no better than teleport; the fit beats every baseline."""
    rows, result = sysid_rows
    assert list(rows) == list(servo_sysid.MODELS)
    assert rows['menagerie']['heldout_mae_deg'] == pytest.approx(rows['teleport']['heldout_mae_deg'], rel=0.1)
    for name in ('teleport', 'teleport-best-shift', 'menagerie', 'therobotstudio', 'published-fit'):
        assert rows['fitted']['heldout_mae_deg'] < rows[name]['heldout_mae_deg']
        assert rows['fitted']['fit_mae_deg'] < rows[name]['fit_mae_deg']
    assert 50 < result.servo.lag_ms < 200   # a lag of about 0.1 s, a few frames at 30 fps
    assert result.servo.kp < arm_replay.THEROBOTSTUDIO.kp < arm_replay.MENAGERIE.kp


@pytest.mark.slow
@needs_real
def test_both_starts_converge_to_the_same_lag(sysid_rows):
    """Menagerie's and TheRobotStudio's gains, 56 times apart in kp, both run until the solver stops by
    itself and meet at one lag (kv + damping)/kp, within 2 %, and nearly one cost, within 1 %."""
    _, result = sysid_rows
    men, trs = result.starts
    assert (men.name, trs.name) == ('menagerie', 'therobotstudio')
    assert men.converged and trs.converged
    assert men.servo.lag_ms == pytest.approx(trs.servo.lag_ms, rel=0.02)
    assert men.cost == pytest.approx(trs.cost, rel=sysid.COST_TIE)
    # a tie, which goes to the softer start; the book's servo is that start's, to three digits
    assert result.kept == 'therobotstudio'
    assert result.servo == trs.servo.rounded(sysid.FIT_DIGITS)


def _relative_margin_to_rounding(value, digits):
    """How far ``value`` is from the nearest point where its rounding to ``digits`` changes, relative."""
    step = 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1)
    frac = (value / step) % 1.0
    return abs(frac - 0.5) * step / abs(value)


@pytest.mark.slow
@needs_real
def test_the_kept_fit_survives_a_last_bit_change(sysid_rows, monkeypatch):
    """Every simulation nudged by 1e-12 rad, TheRobotStudio's start ends on the same point to 1e-6, far inside
    the rounding of the book's servo, so the rounded servo (and everything computed from it) is unchanged."""
    _, result = sysid_rows
    trs = {s.name: s for s in result.starts}['therobotstudio']
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    nudged = sysid.fit_servo(servo_sysid.split(chapter_recording())[0], starts={'therobotstudio': trs.start},
                             progress=False)
    assert nudged.servo == result.servo
    for name, value in trs.servo.as_dict().items():
        assert getattr(nudged.starts[0].servo, name) == pytest.approx(value, rel=1e-6)
        assert _relative_margin_to_rounding(value, sysid.FIT_DIGITS) > 1e-5, name


@pytest.mark.slow
@needs_real
def test_the_stiff_start_amplifies_last_bits_and_the_soft_one_does_not(real, monkeypatch):
    """A 1e-12 rad nudge: from Menagerie's gains the cost of the first iterates moves a thousandfold more within
    five iterations; from TheRobotStudio's it grows less than that and stays within parts in 10^9, far inside the
    rounding of the book's servo."""
    fit_eps, _ = servo_sysid.split(real)

    def objectives(start, nudge):
        monkeypatch.setenv(perturb.ENV, nudge)
        fit = sysid.fit_servo(fit_eps, starts={'start': start}, max_iter=6, progress=False)
        return fit.starts[0].objectives

    for start, grows in ((arm_replay.MENAGERIE, True), (arm_replay.THEROBOTSTUDIO, False)):
        plain, nudged = objectives(start, '0'), objectives(start, '1e-12')
        moved = np.abs(plain - nudged) / plain
        assert moved[1] < 1e-10
        assert (moved[6] > 1e3 * moved[1]) == grows
        if not grows:
            assert moved[6] < 1e-8


@pytest.mark.slow
@needs_real
def test_menagerie_at_one_step_per_frame_is_chaotic_and_the_fitted_servo_is_not(real, sysid_rows):
    """Starts 0..7e-9 rad apart: Menagerie's stiff, clamped servo at 33 ms scatters by tenths of a degree (the
    book gives it to one digit, about 3), the fitted servo's error agrees to 1e-6 deg, with contacts on too."""
    _, result = sysid_rows
    _, heldout = servo_sysid.split(real)
    for integrator in ('Euler', 'implicitfast'):
        config = ReplayConfig(integrator=integrator, timestep=1 / 30)
        men = robust.ensemble(r[0].mae_deg for r in arm_replay.replay_ensemble(arm_replay.MENAGERIE, heldout, config=config))
        assert 0.01 < men.high - men.low < 1.0
        assert robust.round_sig(men.median, 1) == 3 and 2.5 < men.low and men.high < 3.5
        fit = robust.ensemble(r[0].mae_deg for r in arm_replay.replay_ensemble(result.servo, heldout, config=config))
        assert fit.high - fit.low < 1e-6
    for contacts in (False, True):
        config = ReplayConfig(contacts=contacts)
        for servo in (result.servo, arm_replay.MENAGERIE):
            runs = robust.ensemble(r[0].mae_deg for r in arm_replay.replay_ensemble(servo, heldout, config=config))
            assert runs.high - runs.low < 1e-6


def test_saturated_servo_top_speed_is_forcerange_over_joint_damping():
    """kv acts inside the force clamp, joint damping outside: a saturated joint settles at
    forcerange/damping whatever kv is, not at forcerange/(kv + damping). MuJoCo is the oracle."""
    def peak_speed(kv):
        m = mujoco.MjModel.from_xml_string(f'''
        <mujoco><option timestep="0.001" gravity="0 0 0"/>
          <worldbody><body><joint name="j" axis="0 1 0" damping="0.5" armature="0.01"/>
            <geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.1"/></body></worldbody>
          <actuator><position joint="j" kp="200" kv="{kv}" forcerange="-1 1"/></actuator></mujoco>''')
        d = mujoco.MjData(m)
        d.ctrl[0] = 100.0  # far away: the spring stays saturated
        speeds = []
        for _ in range(2000):
            mujoco.mj_step(m, d)
            speeds.append(d.qvel[0])
        assert np.all(np.abs(d.actuator_force) == 1.0)
        return max(speeds)
    for kv in (0.0, 0.5, 2.0):
        assert peak_speed(kv) == pytest.approx(1.0 / 0.5, rel=1e-3)


def test_leave_one_out_scores_with_the_replay_config_of_the_fit(monkeypatch, soft):
    """The config passed for the fit is the one the left-out episode is scored with."""
    monkeypatch.setattr(servo_sysid, 'fit_servos', lambda folds, **kw: [sysid.FitResult(
        servo=soft, starts=(), evaluations=0, seconds=0.0) for _ in folds])
    ds = arm_replay.synthetic_dataset(nepisode=2, seconds=1.0)
    coarse = ReplayConfig(integrator='Euler', timestep=1 / 30)
    rows = servo_sysid.leave_one_out(ds, config=coarse)
    for row, ep in zip(rows, ds):
        assert row['heldout_mae_deg'] == arm_replay.replay([soft], [ep], config=coarse)[0][0].mae_deg
        assert row['heldout_mae_deg'] != arm_replay.replay([soft], [ep])[0][0].mae_deg


@needs_real
def test_command_line_json_rows(monkeypatch, capsys):

    monkeypatch.setattr(servo_sysid, 'fit_servo', lambda eps, **kw: sysid.FitResult(
        servo=arm_replay.PUBLISHED_FIT, starts=(), evaluations=0, seconds=0.0))
    assert main(['sysid', '--json']) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r['model'] for r in rows] == list(servo_sysid.MODELS)
    assert all(set(r) == {'model', 'fit_mae_deg', 'heldout_mae_deg'} for r in rows)
    assert rows[-1]['heldout_mae_deg'] == pytest.approx(rows[-2]['heldout_mae_deg'])


def test_missing_dataset_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv('PHYSAI_DATASET', str(tmp_path / 'nowhere'))
    with pytest.raises(ValueError, match='set PHYSAI_DATASET'):
        registry.run('sysid')


@needs_real
def test_break_it_contacts_on_hardly_matter_and_only_the_clamp_saves_a_stiff_servo_at_one_step_per_frame(real):
    """With the boxes a few millimetres deep, contacts on change a replay's error by a few per cent (read as degrees,
    2 cm deep, they had added a third); Menagerie at 33 ms under Euler diverges without its clamp."""
    _, heldout = servo_sysid.split(real)
    servo = arm_replay.PUBLISHED_FIT
    off, on = (arm_replay.replay([servo], heldout, config=ReplayConfig(contacts=c))[0][0] for c in (False, True))
    assert on.mae_deg == pytest.approx(off.mae_deg, rel=0.05)
    coarse = ReplayConfig(integrator='Euler', timestep=1 / 30)
    clamped, unclamped = (row[0] for row in arm_replay.replay(
        [arm_replay.MENAGERIE, dataclasses.replace(arm_replay.MENAGERIE, forcerange=1e6)], heldout, config=coarse))
    assert not clamped.diverged and unclamped.diverged


def test_leave_one_out_fits_on_the_others_and_scores_the_one_left_out():
    ds = arm_replay.synthetic_dataset(nepisode=3, seconds=1.5)
    rows = servo_sysid.leave_one_out(ds, max_iter=1, progress=False,
                               starts={'therobotstudio': arm_replay.THEROBOTSTUDIO})
    assert [r['heldout'] for r in rows] == [0, 1, 2]
    for r in rows:
        assert set(arm_replay.PARAMS) <= set(r) and r['heldout_mae_deg'] >= 0 and r['lag_ms'] > 0


def test_leave_one_out_scores_a_known_fold_and_fits_only_the_others(monkeypatch, soft):
    """A fold given in ``known`` (the main fit, when it held out that one episode) is scored, not refitted."""
    fitted_sets = []

    def fake_fit_servos(folds, **kw):
        fitted_sets.append([[e.index for e in fold] for fold in folds])
        return [sysid.FitResult(servo=arm_replay.THEROBOTSTUDIO, starts=(), evaluations=0, seconds=0.0) for _ in folds]
    monkeypatch.setattr(servo_sysid, 'fit_servos', fake_fit_servos)
    ds = arm_replay.synthetic_dataset(nepisode=3, seconds=1.0)
    rows = servo_sysid.leave_one_out(ds, known={2: soft})
    assert fitted_sets == [[[1, 2], [0, 2]]]  # folds leaving out 0 and 1; the one leaving out 2 is known
    assert [r['heldout'] for r in rows] == [0, 1, 2]
    assert rows[2]['kp'] == soft.kp and rows[0]['kp'] == arm_replay.THEROBOTSTUDIO.kp
    assert rows[2]['heldout_mae_deg'] == arm_replay.replay([soft], [ds.episodes[2]])[0][0].mae_deg
    with pytest.raises(ValueError, match=r'known must map episode indices of the dataset \(\[0, 1, 2\]\)'):
        servo_sysid.leave_one_out(ds, known={7: soft})


@needs_real
def test_a_replay_that_rattles_is_called_chattering_not_stable(real):
    """kp 30000 without armature at 20 ms under Euler stays bounded but flips every frame: the panel must not
    call that stable. The fitted servo tracks the recording smoothly."""
    _, heldout = servo_sysid.split(real)
    stiff = dataclasses.replace(arm_replay.MENAGERIE, kp=30000.0, armature=0.0)
    config = arm_replay.ReplayConfig(timestep=0.02, integrator='Euler')
    rattling = arm_replay.replay([stiff], heldout, config=config)[0][0]
    assert not rattling.diverged and rattling.chatters and rattling.chatter_deg > 3 * arm_replay.CHATTER_DEG
    soft = arm_replay.ArmServo(kp=7.96, kv=0.733, forcerange=1.16, damping=0.135, frictionloss=0.156, armature=0.0341)
    smooth = arm_replay.replay([soft], heldout)[0][0]
    assert not smooth.chatters and smooth.chatter_deg < 0.1


# --- what the data pin down: leave-one-out, the ridge, the offsets, the collision artefact -------

def test_leave_one_out_scores_menagerie_on_the_same_left_out_episode(monkeypatch, soft):
    monkeypatch.setattr(servo_sysid, 'fit_servos', lambda folds, **kw: [sysid.FitResult(
        servo=soft, starts=(), evaluations=0, seconds=0.0) for _ in folds])
    ds = arm_replay.synthetic_dataset(nepisode=2, seconds=1.0)
    rows = servo_sysid.leave_one_out(ds)
    for row, ep in zip(rows, ds):
        assert row['menagerie_heldout_mae_deg'] == arm_replay.replay([arm_replay.MENAGERIE], [ep])[0][0].mae_deg
    s = servo_sysid.fold_summary(rows)
    assert s['folds'] == 2
    assert s['fitted_deg'] == pytest.approx(np.mean([r['heldout_mae_deg'] for r in rows]))
    assert s['ratio'] == pytest.approx(s['menagerie_deg'] / s['fitted_deg'])
    assert s['kp_min'] == s['kp_max'] == soft.kp
    with pytest.raises(ValueError, match='leave_one_out rows'):
        servo_sysid.fold_summary([{'heldout_mae_deg': 1.0}])


def test_the_ridge_keeps_the_lag_and_changes_kp_and_kv_together(soft):
    servos = servo_sysid.ridge_servos(soft, [soft.kp, 2 * soft.kp, 10 * soft.kp])
    assert [s.lag_ms for s in servos] == pytest.approx([soft.lag_ms] * 3, rel=1e-12)
    assert all(s.damping == soft.damping and s.forcerange == soft.forcerange for s in servos)
    assert servos[0].kv == pytest.approx(soft.kv)
    with pytest.raises(ValueError, match='kps must be >= damping/lag'):
        servo_sysid.ridge_servos(dataclasses.replace(soft, kv=0.0, damping=1.0), [1e-6, 1.0])
    with pytest.raises(ValueError, match='kps must be 2 or more'):
        servo_sysid.ridge_servos(soft, [5.0])


def test_ridge_costs_are_the_fit_objective_and_shifted_commands_are_scored_apart(synthetic_episode, soft):
    """cost is half the mean squared error, the quantity least_squares minimises; the shifted scores use the
    commands with the offsets taken off."""
    ep = synthetic_episode()
    kps = [soft.kp, 3 * soft.kp]
    off = np.array([0.0, 2.0, -3.0, 0.0, 0.0])
    rows = servo_sysid.ridge([ep], soft, kps=kps, offsets_deg=off)
    for row, s in zip(rows, servo_sysid.ridge_servos(soft, kps)):
        x = sysid.to_log(s)
        r = sysid.residuals(x, [ep])
        assert row['cost'] == pytest.approx(0.5 * np.sum(r**2), rel=1e-6)
        shifted = servo_sysid.shift_commands([ep], off)
        assert row['mae_deg_shifted'] == pytest.approx(arm_replay.replay([s], shifted)[0][0].mae_deg, rel=1e-12)
    assert servo_sysid.ridge_bottom(rows)['kp'] in kps


def test_shifting_the_commands_moves_the_arm_columns_only(synthetic_episode):
    synthetic_episode = synthetic_episode()
    off = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    (moved,) = servo_sysid.shift_commands([synthetic_episode], off)
    cols = arm_replay.arm_columns(synthetic_episode.joints)
    np.testing.assert_allclose(synthetic_episode.action[:, cols] - moved.action[:, cols], np.tile(off, (moved.nframe, 1)))
    np.testing.assert_array_equal(moved.state, synthetic_episode.state)
    with pytest.raises(ValueError, match='offsets_deg must be 5 finite'):
        servo_sysid.shift_commands([synthetic_episode], [1.0, 2.0])


def test_static_offsets_are_command_minus_joint_in_the_held_poses(synthetic_episode):
    """A recording whose joints sit a fixed offset away from commands that hold still shows exactly that offset."""
    off = np.array([0.5, -2.0, 3.0, 0.0, 1.0])
    ep = synthetic_episode()
    cols = arm_replay.arm_columns(ep.joints)
    action = np.tile(ep.action[:1], (ep.nframe, 1))   # a pose held throughout
    state = action.copy()
    state[:, cols] -= off
    ep = dataclasses.replace(ep, action=action, state=state)
    np.testing.assert_allclose(servo_sysid.static_offsets_deg([ep]), off, atol=1e-12)
    with pytest.raises(ValueError, match='episodes must be one or more'):
        servo_sysid.static_offsets_deg([])


@needs_real
def test_contacts_on_pin_the_folded_elbow_and_wrist_at_the_force_limit_and_shove_the_wrist(real):
    """The collision artefact: in the folded rest pose the overlapping boxes push; Menagerie's servo then sits at
    +forcerange on the elbow and wrist flex and the wrist is shoved about 3.5 degrees, none of which happens with
    contacts off."""
    holds = servo_sysid.collision_hold(real.episodes[servo_sysid.COLLISION_EPISODE])
    rows = {r['joint']: r for r in servo_sysid.collision_rows(holds)}
    limit = arm_replay.MENAGERIE.forcerange
    assert rows['elbow_flex']['force_on'] == pytest.approx(limit) and rows['wrist_flex']['force_on'] == pytest.approx(limit)
    assert all(abs(r['force_off']) < 0.5 * limit for r in rows.values())
    assert 3 < abs(rows['wrist_flex']['moved_on_deg']) < 4
    assert abs(rows['wrist_flex']['moved_off_deg']) < 0.01
    assert holds['contacts on'].ncon > 0 and holds['contacts off'].ncon == 0


@needs_real
def test_with_the_static_offsets_off_the_ridge_bottom_moves_to_a_stiffer_kp(real):
    """The fitted kp is set by the held-pose offsets: as recorded the ridge of constant lag has its bottom near
    kp 8 and its stiff end costs three times as much; with the offsets taken off the commands the bottom moves to a
    stiffer kp (12-13) and the ridge flattens (its stiff end 1.4 times its bottom)."""
    fit_eps, _ = servo_sysid.split(real)
    fitted = ArmServo(kp=8.31, kv=0.713, forcerange=1.29, damping=0.181, frictionloss=0.178, armature=0.0375)
    off = servo_sysid.static_offsets_deg(fit_eps)
    assert off[ARM_JOINTS.index('shoulder_lift')] < -1.5 and off[ARM_JOINTS.index('elbow_flex')] < -1.5
    rows = servo_sysid.ridge(fit_eps, fitted, offsets_deg=off)
    assert 5 < servo_sysid.ridge_bottom(rows)['kp'] < 12
    assert rows[-1]['cost'] > 2.5 * servo_sysid.ridge_bottom(rows)['cost']
    bottom = servo_sysid.ridge_bottom(rows, 'cost_shifted')
    assert bottom['kp'] > 1.2 * servo_sysid.ridge_bottom(rows)['kp']
    assert rows[-1]['cost_shifted'] < 1.5 * bottom['cost_shifted']
    # the joints that carry no gravity load are better off stiffer along the ridge
    for joint in ('shoulder_pan', 'wrist_roll'):
        assert servo_sysid.ridge_bottom(rows, f'{joint}_deg')['kp'] > 12


@pytest.mark.slow
@needs_real
def test_the_fit_on_commands_without_the_static_offsets_is_much_stiffer_at_the_same_lag(book_fit):
    _, fit_eps, _, fitted = book_fit
    off = servo_sysid.static_offsets_deg(fit_eps)
    stiff = sysid.fit_servo(servo_sysid.shift_commands(fit_eps, off),
                             starts={'therobotstudio': arm_replay.THEROBOTSTUDIO}, progress=False).servo
    assert stiff.kp > 2.5 * fitted.kp
    assert stiff.lag_ms == pytest.approx(fitted.lag_ms, rel=0.05)
    assert robust.round_sig(stiff.kp, 2) == 22


@pytest.mark.slow
@needs_real
def test_leave_one_out_headline_fitted_beats_menagerie_on_every_fold(real):
    rows = servo_sysid.leave_one_out(real, starts={'published-fit': arm_replay.PUBLISHED_FIT}, progress=False)
    s = servo_sysid.fold_summary(rows)
    assert all(r['heldout_mae_deg'] < 0.6 * r['menagerie_heldout_mae_deg'] for r in rows)
    assert 2 < s['ratio'] < 3
    assert s['lag_ms_max'] < 1.05 * s['lag_ms_min']
    # the lag is pinned; the split of the damping between kv and the joint is not, and the force limit only loosely
    assert s['damping_max'] > 3 * s['damping_min']
    assert s['forcerange_max'] / s['forcerange_min'] - 1 > 5 * (s['lag_ms_max'] / s['lag_ms_min'] - 1)
    held = next(r for r in rows if r['heldout'] == servo_sysid.HELDOUT_EPISODE)
    assert held['heldout_mae_deg'] == min(r['heldout_mae_deg'] for r in rows)
