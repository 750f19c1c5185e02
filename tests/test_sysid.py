"""Chapter 4's replay and fit: the batched replay against a plain mj_step loop, the fit on data of known
servos, and the claims the chapter makes about the real recording (skipped when it is absent)."""

import dataclasses
import json
import math
import os

import mujoco
import numpy as np
import pytest

from physai.engine import perturb, replay
from physai.experiments import registry, servo_sysid
from physai.interface import servo_sysid_panels
from physai.laws import robust
from physai.__main__ import main
from physai.engine.datasets import Episode, load_lerobot, shipped_recording
from physai.engine.replay import ArmServo, ReplayConfig
from physai.engine.so101 import JOINTS, load_so101
from physai.laws.sim import actuator_force

REAL = shipped_recording()  # the recording physai ships (a copy of ../shared/datasets/so101_record_test)
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason='../shared/datasets/so101_record_test absent')

SOFT = ArmServo(kp=30.0, kv=0.5, forcerange=2.0, damping=0.3, frictionloss=0.05, armature=0.05)
CENTER_DEG = np.array([0.0, -60.0, 60.0, 40.0, -60.0, 20.0])  # mid-range, inside every joint's limits


def synthetic_episode(n: int = 45, index: int = 0, delay: int = 0) -> Episode:
    """Smooth commands around a mid-range pose; state = command delayed by ``delay`` frames."""
    t = np.arange(n) / 30.0
    action = CENTER_DEG + np.outer(np.sin(2 * np.pi * 0.7 * t), [20, 25, -25, 20, 15, 10])
    state = np.concatenate([np.repeat(action[:1], delay, axis=0), action[:n - delay]])
    return Episode(index=index, fps=30.0, joints=JOINTS, action=action, state=state, timestamp=t)


def replay_by_loop(servo: ArmServo, ep: Episode, config: ReplayConfig = ReplayConfig()) -> np.ndarray:
    """The slow, obviously correct reference: one MjData, hold each action for one frame of mj_step."""
    m = replay.arm_model(servo, config, fps=ep.fps)
    d = mujoco.MjData(m)
    d.qpos[:] = replay.to_radians(ep.state[:1], ep.joints)[0]
    perturb.nudge(d.qpos)  # the same last-bit nudge as sysid.replay under PHYSAI_PERTURB
    mujoco.mj_forward(m, d)
    u = replay.to_radians(ep.action, ep.joints)
    q = [d.qpos[:5].copy()]
    for k in range(ep.nframe - 1):
        d.ctrl[:] = u[k]
        for _ in range(config.substeps(ep.fps)):
            mujoco.mj_step(m, d)
        q.append(d.qpos[:5].copy())
    return np.rad2deg(np.array(q))


def test_slim_arm_has_the_menagerie_dynamics():
    """Dropping the meshes keeps every body's mass and inertia: same mass matrix, same gravity."""
    full, slim = load_so101(), replay._base_arm()
    assert [slim.joint(i).name for i in range(slim.njnt)] == list(JOINTS)
    d_full, d_slim = mujoco.MjData(full), mujoco.MjData(slim)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, size=6)
        d_full.qpos[:] = d_slim.qpos[:] = q
        mujoco.mj_forward(full, d_full)
        mujoco.mj_forward(slim, d_slim)
        np.testing.assert_allclose(d_slim.M, d_full.M, rtol=0, atol=1e-15)
        np.testing.assert_allclose(d_slim.qfrc_bias, d_full.qfrc_bias, rtol=0, atol=1e-14)
        np.testing.assert_allclose(d_slim.site_xpos, d_full.site_xpos, rtol=0, atol=1e-15)


def test_arm_model_force_is_the_clamped_position_law():
    """Each actuator's force is clip(kp (u - q) - kv q̇, ±forcerange), u clipped to ctrlrange first."""
    m = replay.arm_model(SOFT)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    d.qpos[:] = rng.uniform(-1, 1, 6)
    d.qvel[:] = rng.uniform(-3, 3, 6)
    d.ctrl[:] = rng.uniform(-1, 1, 6)
    mujoco.mj_forward(m, d)
    u = np.clip(d.ctrl, m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])  # limits on: ctrlrange
    ours = actuator_force(u, d.qpos, d.qvel, [SOFT.kp], [0, -SOFT.kp, -SOFT.kv],
                          (-SOFT.forcerange, SOFT.forcerange))
    np.testing.assert_allclose(d.actuator_force, ours, rtol=0, atol=1e-12)
    assert np.any(np.abs(ours) == SOFT.forcerange)  # some are clamped in this draw
    np.testing.assert_array_equal(m.dof_damping, SOFT.damping)
    np.testing.assert_array_equal(m.dof_frictionloss, SOFT.frictionloss)
    np.testing.assert_array_equal(m.dof_armature, SOFT.armature)


def test_whole_number_of_physics_steps_fills_a_frame():
    """5 ms at 30 fps rounds to 7 steps of 1/210 s, so frames and steps line up exactly."""
    config = ReplayConfig(timestep=0.005)
    assert config.substeps(30) == 7
    assert replay.arm_model(SOFT, config, fps=30).opt.timestep == pytest.approx(1 / 210)
    assert ReplayConfig(timestep=0.05).substeps(30) == 1


@pytest.mark.parametrize('integrator', ['implicitfast', 'Euler', 'RK4'])
def test_batched_replay_is_bit_identical_to_a_loop(integrator):
    """mujoco.batch runs the same arithmetic as mj_step: every frame of every run agrees exactly."""
    config = ReplayConfig(integrator=integrator)
    episodes = [synthetic_episode(30, 0), synthetic_episode(24, 1)]  # different lengths share a batch
    runs = replay.replay([SOFT, replay.MENAGERIE], episodes, config=config)
    for servo, row in zip([SOFT, replay.MENAGERIE], runs):
        for ep, rep in zip(episodes, row):
            assert rep.sim_deg.shape == (ep.nframe, 5) and not rep.diverged
            np.testing.assert_array_equal(rep.sim_deg, replay_by_loop(servo, ep, config))


def test_stiff_servo_reaches_each_target_within_a_frame():
    """Menagerie's kp 998 servo is nearly a teleport: within a degree of the last command, where a
    kp 3 servo trails by several."""
    ep = synthetic_episode()
    rep = replay.replay([replay.MENAGERIE], [ep])[0][0]
    assert np.abs(rep.sim_deg[1:] - ep.action[:-1, :5]).mean() < 1.0
    soft = replay.replay([dataclasses.replace(SOFT, kp=3.0)], [ep])[0][0]
    assert np.abs(soft.sim_deg[1:] - ep.action[:-1, :5]).mean() > 3


def test_scores_are_mean_absolute_errors_in_degrees():
    ep = synthetic_episode()
    rep = replay.replay([SOFT], [ep])[0][0]
    err = np.abs(rep.sim_deg[1:] - ep.state[1:, :5])
    assert rep.mae_deg == pytest.approx(err.mean())
    np.testing.assert_allclose(rep.joint_mae_deg, err.mean(axis=0))
    assert replay.mae_deg([rep, rep]) == pytest.approx(err.mean())


def test_residuals_half_squared_norm_is_half_the_mean_squared_error():
    ep = synthetic_episode()
    x = np.stack([replay.to_log(SOFT), replay.to_log(replay.MENAGERIE)], axis=1)
    r = replay.residuals(x, [ep])
    assert r.shape == (5 * (ep.nframe - 1), 2)
    rep = replay.replay([SOFT], [ep])[0][0]
    mse = np.mean((rep.sim_deg[1:] - rep.real_deg[1:]) ** 2)
    assert 0.5 * np.sum(r[:, 0] ** 2) == pytest.approx(0.5 * mse)


def test_log_parameters_round_trip():
    assert replay.from_log(replay.to_log(SOFT)).as_dict() == pytest.approx(SOFT.as_dict(), rel=1e-12)
    low, high = replay.LOG_BOUNDS
    for servo in replay.BASELINES.values():
        assert np.all(replay.to_log(servo) >= low) and np.all(replay.to_log(servo) <= high)


def test_teleport_scale_and_its_best_shift_find_a_known_delay():
    """A follower that lags its command by 3 frames: the teleport error vanishes at shift 3."""
    episodes = [synthetic_episode(60, 0, delay=3), synthetic_episode(60, 1, delay=3)]
    assert servo_sysid.best_shift(episodes) == 3
    assert servo_sysid.teleport_errors(episodes, 3).max() == 0
    ep = episodes[0]
    np.testing.assert_allclose(servo_sysid.teleport_errors([ep], 1), np.abs(ep.action[:-1, :5] - ep.state[1:, :5]))


def test_fit_recovers_the_lag_of_a_known_servo_and_is_deterministic():
    """Data made by a known servo: the fit runs until the solver's tolerances stop it, brings the error
    far down and finds its lag (kv + damping)/kp; run twice, it ends on the same bits."""
    true = ArmServo(kp=20.0, kv=0.5, forcerange=2.5, damping=0.5, frictionloss=0.02, armature=0.05)
    episodes = []
    for i in range(2):
        ep = synthetic_episode(40, i)
        sim = replay.replay([true], [ep])[0][0].sim_deg
        state = ep.state.copy()
        state[:, :5] = sim
        episodes.append(dataclasses.replace(ep, state=state))
    starts = {'menagerie': replay.MENAGERIE, 'therobotstudio': replay.THEROBOTSTUDIO}
    fit = replay.fit_servo(episodes, starts=starts, progress=False)
    again = replay.fit_servo(episodes, starts=starts, progress=False)
    assert fit.servo == again.servo
    assert [s.servo for s in fit.starts] == [s.servo for s in again.starts]
    assert fit.servo == replay.kept_start(fit.starts).servo.rounded(replay.FIT_DIGITS)
    assert [s.iterations for s in fit.starts] == [s.iterations for s in again.starts]
    assert [s.name for s in fit.starts] == ['menagerie', 'therobotstudio']
    for start in fit.starts:
        assert start.converged and start.iterations < start.max_iter == 50
        assert start.objectives[-1] <= start.objectives[0]
    assert replay.mae_deg(replay.replay([fit.servo], episodes)[0]) < 0.1
    assert fit.servo.lag_ms == pytest.approx(true.lag_ms, rel=0.2)
    low, high = replay.LOG_BOUNDS
    assert np.all(replay.to_log(fit.servo) >= low) and np.all(replay.to_log(fit.servo) <= high)


def test_kp_damping_map_is_one_replay_per_cell():
    ep = synthetic_episode(20)
    grid = servo_sysid.kp_damping_map([ep], SOFT, [10.0, 100.0], [0.1, 1.0, 3.0])
    assert grid.shape == (2, 3)
    one = replay.replay([dataclasses.replace(SOFT, kp=100.0, damping=3.0)], [ep])[0][0]
    assert grid[1, 2] == one.mae_deg


def test_hold_sag_of_a_stiff_servo_is_near_zero():
    """Held commands: the kp 998 servo holds within a few hundredths of a degree, a kp 3 one sags."""
    t = np.arange(60) / 30.0
    action = np.tile(np.array([0.0, -20.0, 40.0, 30.0, 0.0, 10.0]), (60, 1))
    ep = Episode(index=0, fps=30.0, joints=JOINTS, action=action, state=action.copy(), timestamp=t)
    assert servo_sysid.held_frames(action[:, :5]).sum() == 60 - 6
    stiff, _ = servo_sysid.hold_sag_deg(replay.replay([replay.MENAGERIE], [ep])[0][0])
    soft, real = servo_sysid.hold_sag_deg(replay.replay([ArmServo(
        kp=3.0, kv=0.3, forcerange=3.0, damping=0.3, frictionloss=0.0, armature=0.03)], [ep])[0][0])
    assert np.all(np.abs(stiff) < 0.05)
    assert np.max(np.abs(soft)) > 1.0
    np.testing.assert_array_equal(real, 0)


@pytest.mark.parametrize('kwargs, message', [
    (dict(kp=0.0), 'kp must be a finite number > 0 N·m/rad, got 0.0'),
    (dict(kv=-1.0), 'kv must be a finite number >= 0 N·m·s/rad, got -1.0'),
    (dict(forcerange=math.inf), 'forcerange must be a finite number > 0 N·m, got inf'),
    (dict(armature=-0.1), 'armature must be a finite number >= 0 kg·m², got -0.1'),
])
def test_bad_servo_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(SOFT, **kwargs)


def test_bad_replay_and_fit_settings():
    with pytest.raises(ValueError, match=r'timestep must be in \(0, 0.1\] s, got 0.2'):
        ReplayConfig(timestep=0.2)
    with pytest.raises(ValueError, match='integrator must be one of Euler, RK4'):
        ReplayConfig(integrator='Verlet')
    with pytest.raises(ValueError, match='shift must be an integer >= 0 frames, got -1'):
        servo_sysid.teleport_errors([synthetic_episode()], -1)
    with pytest.raises(ValueError, match='max_iter must be an integer >= 1, got 0'):
        replay.fit_servo([synthetic_episode()], max_iter=0, progress=False)
    ep = synthetic_episode()
    with pytest.raises(ValueError, match='lacks the arm joints'):
        replay.to_radians(ep.action[:, :3], JOINTS[:3])


# --- the real recording ---------------------------------------------------------------------------

@pytest.fixture(scope='module')
def real():
    return load_lerobot(REAL)


@needs_real
def test_contacts_off_because_the_collision_boxes_overlap_when_folded(real):
    """Measured poses put the lower arm, wrist and gripper boxes a centimetre or more into the shoulder's."""
    for ep in real:
        depth = servo_sysid.overlap_depth(ep)
        assert depth.max() > 0.01
        assert np.mean(depth > 0) > 0.2


@needs_real
def test_the_real_elbow_folds_past_the_model_range(real):
    elbow = replay._base_arm().jnt_range[JOINTS.index('elbow_flex')]
    reached = max(np.deg2rad(ep.state[:, 2]).max() for ep in real)
    assert reached > elbow[1]


def test_synthetic_stand_in_is_made_by_its_hidden_servo():
    """No recording at hand: the stand-in's states are the hidden servo's replay, to an encoder count."""
    ds = replay.synthetic_dataset(nepisode=2, seconds=3.0)
    assert len(ds) == 2 and ds.fps == 30.0 and ds[0].nframe == 90
    np.testing.assert_array_equal(ds[0].action[0], replay.REST_DEG)
    rep = replay.replay([replay.HIDDEN_SERVO], [ds[1]])[0][0]
    assert rep.mae_deg < replay.RESOLUTION_DEG
    assert replay.synthetic_dataset(nepisode=2, seconds=3.0)[1].state.tolist() == ds[1].state.tolist()


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
    assert -0.05 < z.min() < 0.0 and z.max() < 0.25
    lift_flipped = np.concatenate([servo_sysid.tip_height(ep, signs=(1, -1, 1, 1, 1)) for ep in real])
    elbow_flipped = np.concatenate([servo_sysid.tip_height(ep, signs=(1, 1, -1, 1, 1)) for ep in real])
    assert lift_flipped.min() < -0.07     # through the table
    assert elbow_flipped.min() > 0.1      # never reaches it


@pytest.fixture(scope='module')
def sysid_rows(real):
    fit_eps, heldout = servo_sysid.split(real)
    result = replay.fit_servo(fit_eps, progress=False)
    return {row['model']: row for row in servo_sysid.sysid_rows(fit_eps, heldout, result.servo)}, result


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
    assert result.servo.kp < replay.THEROBOTSTUDIO.kp < replay.MENAGERIE.kp


@needs_real
def test_both_starts_converge_to_the_same_lag(sysid_rows):
    """Menagerie's and TheRobotStudio's gains, 56 times apart in kp, both run until the solver stops by
    itself and meet at one lag (kv + damping)/kp, within 2 %, and nearly one cost, within 1 %."""
    _, result = sysid_rows
    men, trs = result.starts
    assert (men.name, trs.name) == ('menagerie', 'therobotstudio')
    assert men.converged and trs.converged
    assert men.servo.lag_ms == pytest.approx(trs.servo.lag_ms, rel=0.02)
    assert men.cost == pytest.approx(trs.cost, rel=replay.COST_TIE)
    # a tie, which goes to the softer start; the book's servo is that start's, to three digits
    assert result.kept == 'therobotstudio'
    assert result.servo == trs.servo.rounded(replay.FIT_DIGITS)


def _relative_margin_to_rounding(value, digits):
    """How far ``value`` is from the nearest point where its rounding to ``digits`` changes, relative."""
    step = 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1)
    frac = (value / step) % 1.0
    return abs(frac - 0.5) * step / abs(value)


@needs_real
def test_the_kept_fit_survives_a_last_bit_change(sysid_rows, monkeypatch):
    """Every simulation nudged by 1e-12 rad, TheRobotStudio's start ends on the same point to 1e-6, far inside
    the rounding of the book's servo, so the rounded servo (and everything computed from it) is unchanged."""
    _, result = sysid_rows
    trs = {s.name: s for s in result.starts}['therobotstudio']
    monkeypatch.setenv(perturb.ENV, '1e-12' if perturb.size() == 0 else '3e-11')
    nudged = replay.fit_servo(servo_sysid.split(load_lerobot(REAL))[0], starts={'therobotstudio': trs.start},
                             progress=False)
    assert nudged.servo == result.servo
    for name, value in trs.servo.as_dict().items():
        assert getattr(nudged.starts[0].servo, name) == pytest.approx(value, rel=1e-6)
        assert _relative_margin_to_rounding(value, replay.FIT_DIGITS) > 1e-5, name


@needs_real
def test_the_stiff_start_amplifies_last_bits_and_the_soft_one_does_not(real, monkeypatch):
    """A 1e-12 rad nudge: from Menagerie's gains the cost of the first iterates moves a thousandfold more within
    five iterations; from TheRobotStudio's it stays at the level of the nudge."""
    fit_eps, _ = servo_sysid.split(real)

    def objectives(start, nudge):
        monkeypatch.setenv(perturb.ENV, nudge)
        fit = replay.fit_servo(fit_eps, starts={'start': start}, max_iter=6, progress=False)
        return fit.starts[0].objectives

    for start, grows in ((replay.MENAGERIE, True), (replay.THEROBOTSTUDIO, False)):
        plain, nudged = objectives(start, '0'), objectives(start, '1e-12')
        moved = np.abs(plain - nudged) / plain
        assert moved[1] < 1e-10
        assert (moved[6] > 1e3 * moved[1]) == grows
        if not grows:
            assert moved[6] < 1e-10


@needs_real
def test_menagerie_at_one_step_per_frame_is_chaotic_and_the_fitted_servo_is_not(real, sysid_rows):
    """Starts 0..7e-9 rad apart: Menagerie's stiff, clamped servo at 33 ms scatters by tenths of a degree (the
    book gives it to one digit, about 3), the fitted servo's error agrees to 1e-6 deg, with contacts on too."""
    _, result = sysid_rows
    _, heldout = servo_sysid.split(real)
    for integrator in ('Euler', 'implicitfast'):
        config = ReplayConfig(integrator=integrator, timestep=1 / 30)
        men = robust.ensemble(r[0].mae_deg for r in replay.replay_ensemble(replay.MENAGERIE, heldout, config=config))
        assert 0.01 < men.high - men.low < 1.0
        assert robust.round_sig(men.median, 1) == 3 and 2.5 < men.low and men.high < 3.5
        fit = robust.ensemble(r[0].mae_deg for r in replay.replay_ensemble(result.servo, heldout, config=config))
        assert fit.high - fit.low < 1e-6
    for contacts in (False, True):
        config = ReplayConfig(contacts=contacts)
        for servo in (result.servo, replay.MENAGERIE):
            runs = robust.ensemble(r[0].mae_deg for r in replay.replay_ensemble(servo, heldout, config=config))
            assert runs.high - runs.low < 1e-6


def test_offsets_shift_each_servos_start():
    """``offsets`` moves servo i's start by offsets[i] rad on every joint; frame 0 is the start simulated."""
    ep = synthetic_episode(10)
    plain, shifted = replay.replay([SOFT, SOFT], [ep], offsets=[0.0, 1e-3])
    np.testing.assert_allclose(shifted[0].sim_deg[0] - plain[0].sim_deg[0], np.degrees(1e-3), rtol=1e-9)
    with pytest.raises(ValueError, match='offsets must be 2 finite numbers'):
        replay.replay([SOFT, SOFT], [ep], offsets=[0.0])


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


def test_leave_one_out_scores_with_the_replay_config_of_the_fit(monkeypatch):
    """The config passed for the fit is the one the left-out episode is scored with."""
    monkeypatch.setattr(servo_sysid, 'fit_servo', lambda eps, **kw: replay.FitResult(
        servo=SOFT, starts=(), evaluations=0, seconds=0.0))
    ds = replay.synthetic_dataset(nepisode=2, seconds=1.0)
    coarse = ReplayConfig(integrator='Euler', timestep=1 / 30)
    rows = servo_sysid.leave_one_out(ds, config=coarse)
    for row, ep in zip(rows, ds):
        assert row['heldout_mae_deg'] == replay.replay([SOFT], [ep], config=coarse)[0][0].mae_deg
        assert row['heldout_mae_deg'] != replay.replay([SOFT], [ep])[0][0].mae_deg


@needs_real
def test_command_line_json_rows(monkeypatch, capsys):

    monkeypatch.setattr(servo_sysid, 'fit_servo', lambda eps, **kw: replay.FitResult(
        servo=replay.PUBLISHED_FIT, starts=(), evaluations=0, seconds=0.0))
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
def test_break_it_contacts_on_worsens_and_only_the_clamp_saves_a_stiff_servo_at_one_step_per_frame(real):
    """Contacts on push the folded arm apart; Menagerie at 33 ms under Euler diverges without its clamp."""
    _, heldout = servo_sysid.split(real)
    servo = replay.PUBLISHED_FIT
    off, on = (replay.replay([servo], heldout, config=ReplayConfig(contacts=c))[0][0] for c in (False, True))
    assert on.mae_deg > 1.3 * off.mae_deg
    coarse = ReplayConfig(integrator='Euler', timestep=1 / 30)
    clamped, unclamped = (row[0] for row in replay.replay(
        [replay.MENAGERIE, dataclasses.replace(replay.MENAGERIE, forcerange=1e6)], heldout, config=coarse))
    assert not clamped.diverged and unclamped.diverged


def test_panel_survives_extreme_sliders_and_the_twin_is_stable():
    """Every slider at its ends redraws without an error; the twin's HTML is byte-identical twice."""
    ep = synthetic_episode(30)
    panel = servo_sysid_panels.sysid_panel(ep, SOFT)
    for change in (dict(kp=30000.0), dict(kp=1.0), dict(armature=0.0), dict(timestep=0.02),
                   dict(integrator='Euler'), dict(kv=0.001), dict(forcerange=0.2), dict(timestep=0.0005)):
        assert panel.update(**change)
        assert panel.error is None, (change, panel.error)
    kps = (1.0, 10.0, 100.0)
    first = servo_sysid_panels.sysid_twin(ep, SOFT, kps=kps).data
    assert first == servo_sysid_panels.sysid_twin(ep, SOFT, kps=kps).data
    assert 'physai-twin-sysid-kp' in first
    # the servo's own kp joins the frames, labelled, and the slider starts on it
    assert '"labels":["1","10","30 (fitted)","100"]' in first and '"init":2' in first


@pytest.mark.skipif(not os.path.exists('/usr/bin/chromium'), reason='headless Chromium is not installed')
def test_twin_redraws_in_a_browser_without_a_kernel(twin_page):
    """Moving the kp slider of the static twin changes both plots, with no kernel and no errors."""
    open_page, errors = twin_page
    root = 'physai-twin-sysid-kp'
    page = open_page(servo_sysid_panels.sysid_twin(synthetic_episode(30), SOFT, kps=(1.0, 10.0, 100.0)).data)
    before = [page.inner_html(f'#{root}-plot-{i}') for i in (0, 1)]
    assert all('<path' in b for b in before)
    page.eval_on_selector(f'#{root}-kp', "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    after = [page.inner_html(f'#{root}-plot-{i}') for i in (0, 1)]
    assert after[0] != before[0] and after[1] != before[1]
    assert errors == []


def test_leave_one_out_fits_on_the_others_and_scores_the_one_left_out():
    ds = replay.synthetic_dataset(nepisode=3, seconds=1.5)
    rows = servo_sysid.leave_one_out(ds, max_iter=1, progress=False,
                               starts={'therobotstudio': replay.THEROBOTSTUDIO})
    assert [r['heldout'] for r in rows] == [0, 1, 2]
    for r in rows:
        assert set(replay.PARAMS) <= set(r) and r['heldout_mae_deg'] >= 0 and r['lag_ms'] > 0


@needs_real
def test_a_replay_that_rattles_is_called_chattering_not_stable(real):
    """kp 30000 without armature at 20 ms under Euler stays bounded but flips every frame: the panel must not
    call that stable. The fitted servo tracks the recording smoothly."""
    _, heldout = servo_sysid.split(real)
    stiff = dataclasses.replace(replay.MENAGERIE, kp=30000.0, armature=0.0)
    config = replay.ReplayConfig(timestep=0.02, integrator='Euler')
    rattling = replay.replay([stiff], heldout, config=config)[0][0]
    assert not rattling.diverged and rattling.chatters and rattling.chatter_deg > 3 * replay.CHATTER_DEG
    soft = replay.ArmServo(kp=7.92, kv=0.698, forcerange=1.23, damping=0.159, frictionloss=0.16, armature=0.0353)
    smooth = replay.replay([soft], heldout)[0][0]
    assert not smooth.chatters and smooth.chatter_deg < 0.1


@needs_real
def test_the_panel_calls_a_rattling_replay_chattering(real):
    """At kp 30000, armature 0, 20 ms and Euler the panel once said 'stable' while the joints chattered ±20°."""
    _, heldout = servo_sysid.split(real)
    panel = servo_sysid_panels.sysid_panel(heldout[0], replay.MENAGERIE)
    panel.update(kp=30000.0, armature=0.0, timestep=0.02, integrator='Euler')
    assert panel.error is None
    assert panel.state['status'].get_text().startswith('chatters')
