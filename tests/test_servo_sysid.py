"""Chapter 4's analysis: what the chapter reads off the kp × damping map (the valley, the cliff, the speeds), and
the Break-it replays as ensembles. Fast tests on made-up grids and a synthetic episode; slow ones check the
chapter's claims on the real recording with the servo fitted to it."""

import math

import numpy as np
import pytest

from physai.engine import perturb, replay
from physai.engine.datasets import Episode, load_lerobot, shipped_recording
from physai.engine.replay import ArmServo, ReplayConfig
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.experiments import servo_sysid
from physai.experiments.servo_sysid import DampingValley, EnsembleScore
from physai.laws import robust

REAL = shipped_recording()
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason='the shipped SO-101 recording is absent')

SOFT = ArmServo(kp=30.0, kv=0.5, forcerange=2.0, damping=0.3, frictionloss=0.05, armature=0.05)
CENTER_DEG = np.array([0.0, -60.0, 60.0, 40.0, -60.0, 20.0])
ELBOW = ARM_JOINTS.index('elbow_flex')


def synthetic_episode(n: int = 45) -> Episode:
    """Smooth commands around a mid-range pose, followed exactly (state = action)."""
    t = np.arange(n) / 30.0
    action = CENTER_DEG + np.outer(np.sin(2 * np.pi * 0.7 * t), [20, 25, -25, 20, 15, 10])
    return Episode(index=0, fps=30.0, joints=JOINTS, action=action, state=action.copy(), timestamp=t)


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
    assert [r['heldout_mae_deg'] for r in rows] == [1.0, 1.8]


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


def test_a_saturated_joint_tops_out_at_forcerange_over_the_joint_damping_not_kv():
    assert servo_sysid.saturated_speed_deg(SOFT) == pytest.approx(math.degrees(2.0 / 0.3))
    assert servo_sysid.saturated_speed_deg(SOFT, damping=1.0) == pytest.approx(math.degrees(2.0))
    with pytest.raises(ValueError, match='damping must be a finite number > 0 N·m·s/rad, got 0.0'):
        servo_sysid.saturated_speed_deg(SOFT, damping=0.0)


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


def test_a_smooth_replays_ensemble_is_the_plain_replay():
    """Starts 0 to 7e-9 rad apart: a smooth replay's runs agree far inside CHAOS_DEG, and run 0 is the plain one."""
    ep = synthetic_episode()
    score = servo_sysid.ensemble_score(SOFT, [ep])
    plain = replay.replay([SOFT], [ep])[0][0]
    assert len(score.runs) == len(replay.ENSEMBLE_OFFSETS) and not score.chaotic and not score.diverged
    np.testing.assert_array_equal(score.runs[0][0].sim_deg, plain.sim_deg)
    assert score.figure == pytest.approx(plain.mae_deg, abs=1e-6)
    np.testing.assert_allclose(score.joint_mae_deg, plain.joint_mae_deg, atol=1e-6)


def test_break_it_rows_carry_the_table_and_the_ensembles():
    ep = synthetic_episode(30)
    variants = {'plain': ReplayConfig(), 'coarse': ReplayConfig(integrator='Euler', timestep=1 / 30)}
    rows = servo_sysid.break_it(SOFT, [ep], variants=variants)
    assert [r['replay'] for r in rows] == ['plain', 'coarse']
    for r in rows:
        assert r['fitted_mae_deg'] == r['fitted'].shown and r['menagerie_mae_deg'] == r['menagerie'].shown
        assert r['fitted_elbow_deg'] == r['fitted'].joint_mae_deg[ELBOW]
        assert r['diverged'] == 'no'
    assert rows[0]['menagerie'].runs[0][0].servo == replay.MENAGERIE
    with pytest.raises(ValueError, match=r"variants\['bad'\] must be a ReplayConfig"):
        servo_sysid.break_it(SOFT, [ep], variants={'bad': 'Euler'})
    with pytest.raises(ValueError, match='episodes must hold at least one episode'):
        servo_sysid.ensemble_score(SOFT, [])


# --- the chapter's claims on the real recording --------------------------------------------------

@pytest.fixture(scope='module')
def chapter():
    """The chapter's recording, held-out episode and fitted servo (the fit takes a minute)."""
    data = load_lerobot(REAL)
    fit_eps, heldout = servo_sysid.split(data)
    fitted = replay.fit_servo(fit_eps, progress=False).servo
    return data, heldout, fitted


@pytest.fixture(scope='module')
def valley(chapter):
    _, heldout, fitted = chapter
    return servo_sysid.damping_valley(heldout, fitted)


def _shown_valley(v: DampingValley, fitted: ArmServo) -> dict:
    """The valley's figures as the chapter prints them."""
    kp, damping, mae = v.best
    return dict(best=f'{kp:.2f} {damping:.3f} {mae:.3f}',
                menagerie=f'{v.at(replay.MENAGERIE.kp, replay.MENAGERIE.damping):.2f}',
                soft=f'{v.at(v.kps[0], fitted.damping):.2f}', cliff=f'{v.cliff_damping:.2f}',
                rows=[f"{r['kp']:.2f} {r['best_damping']:.3f} {r['lag_ms']:.0f} {r['heldout_mae_deg']:.3f}"
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
    errors = [r['heldout_mae_deg'] for r in stiffer]
    assert errors == sorted(errors) and errors[0] == best
    assert valley.at(valley.kps[0], fitted.damping) > 5 * best                          # too soft: sags, trails
    assert valley.at(replay.MENAGERIE.kp, replay.MENAGERIE.damping) > 2 * best          # too stiff: a teleport


@pytest.mark.slow
@needs_real
def test_past_the_cliff_the_joint_damping_caps_the_speed_below_the_real_arms(chapter, valley):
    """From the cliff on, even the best kp is more than twice as far off as the best cell: there forcerange/damping
    is below the speed the real joints exceed one frame in twenty. The fitted servo's cap is far above the real
    arm's peak speed, and its joints peak below that cap, at a speed the lag sets."""
    data, heldout, fitted = chapter
    cliff = valley.cliff_damping
    past = valley.dampings >= cliff
    assert past.any() and np.all(valley.best_per_damping[past] > servo_sysid.CLIFF_FACTOR * valley.best[2])
    assert cliff > max(r['best_damping'] for r in valley.rows())
    rep = replay.replay([fitted], heldout)[0][0]
    real = servo_sysid.frame_speeds_deg(rep.real_deg, data.fps)
    assert servo_sysid.saturated_speed_deg(fitted, damping=cliff) < np.percentile(real, 95)
    assert servo_sysid.saturated_speed_deg(fitted) > 2 * real.max()
    sim_peak = servo_sysid.frame_speeds_deg(rep.sim_deg, data.fps).max()
    assert sim_peak < real.max() < servo_sysid.saturated_speed_deg(fitted)


@pytest.mark.slow
@needs_real
def test_the_valleys_printed_figures_survive_a_last_bit_change(chapter, valley, monkeypatch):
    _, heldout, fitted = chapter
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    assert _shown_valley(servo_sysid.damping_valley(heldout, fitted), fitted) == _shown_valley(valley, fitted)


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
        # the soft fitted servo barely notices the coarse step
        assert break_rows[name]['fitted'].figure == pytest.approx(break_rows['as above']['fitted'].figure, rel=0.05)
    assert break_rows['as above']['menagerie'].figure < 2.5


@pytest.mark.slow
@needs_real
def test_break_it_contacts_worsen_both_and_the_limit_stands_in_for_the_arms_own_stop(break_rows):
    """Contacts on more than double the fitted servo's error and worsen Menagerie's. Limits off, the fitted elbow
    sags past the model's limit and past where the real elbow rests, so its error rises."""
    plain, contacts, free = (break_rows[k] for k in ('as above', 'contacts on', 'limits off'))
    assert contacts['fitted'].figure > 2 * plain['fitted'].figure
    assert contacts['menagerie'].figure > plain['menagerie'].figure
    assert free['fitted_elbow_deg'] > plain['fitted_elbow_deg']
    rest = free['fitted'].runs[0][0]
    limit = math.degrees(replay._base_arm().jnt_range[JOINTS.index('elbow_flex')][1])
    real_rest, sim_rest = rest.real_deg[-1, ELBOW], rest.sim_deg[-1, ELBOW]
    assert limit < real_rest < limit + 5      # the model's limit stops the elbow a few degrees early
    assert sim_rest > real_rest + 2           # without it the soft elbow sags on past the real one


@pytest.mark.slow
@needs_real
def test_break_its_printed_figures_survive_a_last_bit_change(chapter, break_rows, monkeypatch):
    _, heldout, fitted = chapter
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    nudged = servo_sysid.break_it(fitted, heldout)

    def shown(r):
        return r['fitted_mae_deg'], r['menagerie_mae_deg'], f"{r['fitted_elbow_deg']:.3f}", r['diverged']

    assert [shown(r) for r in nudged] == [shown(r) for r in break_rows.values()]
