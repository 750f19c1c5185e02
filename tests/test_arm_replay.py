"""physai.engine.arm_replay: chapter 4's batched replay against a plain mj_step loop, the arm model's force law, the
scores, the synthetic stand-in recording and a held pose."""

import dataclasses
import math

import mujoco
import numpy as np
import pytest

from physai.engine import arm_replay, perturb
from physai.engine.datasets import Episode
from physai.engine.arm_replay import ArmServo, ReplayConfig
from physai.engine.so101 import JOINTS, load_so101
from physai.laws.sim import actuator_force


def replay_by_loop(servo: ArmServo, ep: Episode, config: ReplayConfig = ReplayConfig()) -> np.ndarray:
    """The slow, obviously correct reference: one MjData, hold each action for one frame of mj_step."""
    m = arm_replay.arm_model(servo, config, fps=ep.fps)
    d = mujoco.MjData(m)
    d.qpos[:] = arm_replay.to_radians(ep.state[:1], ep.joints)[0]
    perturb.nudge(d.qpos)  # the same last-bit nudge as arm_replay.replay under PHYSAI_PERTURB
    mujoco.mj_forward(m, d)
    u = arm_replay.to_radians(ep.action, ep.joints)
    q = [d.qpos[:5].copy()]
    for k in range(ep.nframe - 1):
        d.ctrl[:] = u[k]
        for _ in range(config.substeps(ep.fps)):
            mujoco.mj_step(m, d)
        q.append(d.qpos[:5].copy())
    return np.rad2deg(np.array(q))


def test_slim_arm_has_the_menagerie_dynamics():
    """Dropping the meshes keeps every body's mass and inertia: same mass matrix, same gravity."""
    full, slim = load_so101(), arm_replay.slim_arm()
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


def test_arm_model_force_is_the_clamped_position_law(soft):
    """Each actuator's force is clip(kp (u - q) - kv q̇, ±forcerange), u clipped to ctrlrange first."""
    m = arm_replay.arm_model(soft)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    d.qpos[:] = rng.uniform(-1, 1, 6)
    d.qvel[:] = rng.uniform(-3, 3, 6)
    d.ctrl[:] = rng.uniform(-1, 1, 6)
    mujoco.mj_forward(m, d)
    u = np.clip(d.ctrl, m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])  # limits on: ctrlrange
    ours = actuator_force(u, d.qpos, d.qvel, [soft.kp], [0, -soft.kp, -soft.kv],
                          (-soft.forcerange, soft.forcerange))
    np.testing.assert_allclose(d.actuator_force, ours, rtol=0, atol=1e-12)
    assert np.any(np.abs(ours) == soft.forcerange)  # some are clamped in this draw
    np.testing.assert_array_equal(m.dof_damping, soft.damping)
    np.testing.assert_array_equal(m.dof_frictionloss, soft.frictionloss)
    np.testing.assert_array_equal(m.dof_armature, soft.armature)


def test_whole_number_of_physics_steps_fills_a_frame(soft):
    """5 ms at 30 fps rounds to 7 steps of 1/210 s, so frames and steps line up exactly."""
    config = ReplayConfig(timestep=0.005)
    assert config.substeps(30) == 7
    assert arm_replay.arm_model(soft, config, fps=30).opt.timestep == pytest.approx(1 / 210)
    assert ReplayConfig(timestep=0.05).substeps(30) == 1


@pytest.mark.parametrize('integrator', ['implicitfast', 'Euler', 'RK4'])
def test_batched_replay_is_bit_identical_to_a_loop(integrator, synthetic_episode, soft):
    """mujoco.batch runs the same arithmetic as mj_step: every frame of every run agrees exactly (the batch runs
    the arm without geoms or sites, the loop arm_model's, which keeps its collision boxes)."""
    config = ReplayConfig(integrator=integrator)
    episodes = [synthetic_episode(30, 0), synthetic_episode(24, 1)]  # different lengths share a batch
    runs = arm_replay.replay([soft, arm_replay.MENAGERIE], episodes, config=config)
    for servo, row in zip([soft, arm_replay.MENAGERIE], runs):
        for ep, rep in zip(episodes, row):
            assert rep.sim_deg.shape == (ep.nframe, 5) and not rep.diverged
            np.testing.assert_array_equal(rep.sim_deg, replay_by_loop(servo, ep, config))


def test_stiff_servo_reaches_each_target_within_a_frame(synthetic_episode, soft):
    """Menagerie's kp 998 servo is nearly a teleport: within a degree of the last command, where a
    kp 3 servo trails by several."""
    ep = synthetic_episode()
    rep = arm_replay.replay([arm_replay.MENAGERIE], [ep])[0][0]
    assert np.abs(rep.sim_deg[1:] - ep.action[:-1, :5]).mean() < 1.0
    soft = arm_replay.replay([dataclasses.replace(soft, kp=3.0)], [ep])[0][0]
    assert np.abs(soft.sim_deg[1:] - ep.action[:-1, :5]).mean() > 3


def test_scores_are_mean_absolute_errors_in_degrees(synthetic_episode, soft):
    ep = synthetic_episode()
    rep = arm_replay.replay([soft], [ep])[0][0]
    err = np.abs(rep.sim_deg[1:] - ep.state[1:, :5])
    assert rep.mae_deg == pytest.approx(err.mean())
    np.testing.assert_allclose(rep.joint_mae_deg, err.mean(axis=0))
    assert arm_replay.mae_deg([rep, rep]) == pytest.approx(err.mean())


@pytest.mark.parametrize('kwargs, message', [
    (dict(kp=0.0), 'kp must be a finite number > 0 N·m/rad, got 0.0'),
    (dict(kv=-1.0), 'kv must be a finite number >= 0 N·m·s/rad, got -1.0'),
    (dict(forcerange=math.inf), 'forcerange must be a finite number > 0 N·m, got inf'),
    (dict(armature=-0.1), 'armature must be a finite number >= 0 kg·m², got -0.1'),
])
def test_bad_servo_parameters(kwargs, message, soft):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(soft, **kwargs)


def test_synthetic_stand_in_is_made_by_its_hidden_servo():
    """No recording at hand: the stand-in's states are the hidden servo's replay, to an encoder count."""
    ds = arm_replay.synthetic_dataset(nepisode=2, seconds=3.0)
    assert len(ds) == 2 and ds.fps == 30.0 and ds[0].nframe == 90
    np.testing.assert_array_equal(ds[0].action[0], arm_replay.REST_DEG)
    rep = arm_replay.replay([arm_replay.HIDDEN_SERVO], [ds[1]])[0][0]
    assert rep.mae_deg < arm_replay.RESOLUTION_DEG
    assert arm_replay.synthetic_dataset(nepisode=2, seconds=3.0)[1].state.tolist() == ds[1].state.tolist()


@pytest.mark.parametrize('kwargs, message', [
    (dict(nepisode=10**9), r'nepisode must be a whole number in \[1, 1,000\] episodes, got 1000000000'),
    (dict(seconds=1e9), r'seconds must give 2 to 142,858 frames at 30 fps \(a replay runs at most 1,000,000 physics '
                        r'steps, 7 a frame\), got 1000000000.0 s: 30,000,000,000 frames'),
    (dict(nepisode=100, seconds=4000.0), r'nepisode x seconds x fps must be at most 1,000,000 frames in all, got 100 '
                                         r'episodes of 120,000 frames'),
    (dict(seconds=0.01), r'seconds must give 2 to .* got 0.01 s: 0 frames'),
    (dict(seconds=math.nan), 'seconds must be a finite number > 0 s, got nan'),
    (dict(fps=0.0), 'fps must be a finite number > 0 frames/s, got 0.0'),
    (dict(seed=-1), 'seed must be a whole number >= 0, got -1'),
    (dict(servo='menagerie'), 'servo must be an ArmServo, got str'),
])
def test_a_synthetic_recording_too_large_to_make_is_refused_before_any_frame_is_made(kwargs, message):
    """Huge sizes once ran on after their caller had gone (0.97 GB); each is refused at once, with the limit."""
    with pytest.raises(ValueError, match=message):
        arm_replay.synthetic_dataset(**kwargs)


def test_offsets_shift_each_servos_start(synthetic_episode, soft):
    """``offsets`` moves servo i's start by offsets[i] rad on every joint; frame 0 is the start simulated."""
    ep = synthetic_episode(10)
    plain, shifted = arm_replay.replay([soft, soft], [ep], offsets=[0.0, 1e-3])
    np.testing.assert_allclose(shifted[0].sim_deg[0] - plain[0].sim_deg[0], np.degrees(1e-3), rtol=1e-9)
    with pytest.raises(ValueError, match='offsets must be 2 finite numbers'):
        arm_replay.replay([soft, soft], [ep], offsets=[0.0])


def test_hold_pose_starts_and_commands_the_pose_and_reads_the_servo_force():
    """A stiff servo at a pose it is told to hold barely moves, and its force is MuJoCo's actuator_force."""
    pose = np.zeros(len(JOINTS))
    pose[1], pose[2] = -0.5, 0.5
    h = arm_replay.hold_pose(arm_replay.MENAGERIE, pose, seconds=0.5)
    np.testing.assert_allclose(h.pose_deg, np.degrees(pose[:5]))
    assert np.all(np.abs(h.moved_deg) < 0.1)
    assert np.all(np.abs(h.actuator_force) <= arm_replay.MENAGERIE.forcerange + 1e-12)
    assert h.ncon == 0
    m = arm_replay.arm_model(arm_replay.MENAGERIE)
    d = mujoco.MjData(m)
    d.qpos[:] = pose
    d.ctrl[:] = pose
    for _ in range(round(0.5 / m.opt.timestep)):
        mujoco.mj_step(m, d)
    np.testing.assert_array_equal(h.actuator_force, d.actuator_force[:5])


def test_hold_pose_flags_a_hold_that_blew_up_though_its_final_angles_look_finite():
    """Explicit Euler at 5 ms with a 1e5 N·m/rad servo blows up; MuJoCo then resets the arm to its model pose, so the
    final angles are finite (and the shoulder seems to have moved 28.6°): the hold says it diverged."""
    stiff = arm_replay.ArmServo(kp=1e5, kv=0, forcerange=1e6, damping=0, frictionloss=0, armature=0)
    pose = np.zeros(len(JOINTS))
    pose[1] = -0.5
    h = arm_replay.hold_pose(stiff, pose, config=arm_replay.ReplayConfig(integrator='Euler'), seconds=0.5)
    assert h.diverged and np.all(np.isfinite(h.final_deg))
    assert not arm_replay.hold_pose(arm_replay.MENAGERIE, pose, seconds=0.5).diverged


@pytest.mark.parametrize('kwargs, message', [
    (dict(pose=[0.0] * 5), 'pose must be 6 finite'),
    (dict(pose=[np.nan] * 6), 'pose must be 6 finite'),
    (dict(pose=[0.0] * 6, seconds=0.0), 'seconds must be'),
    (dict(pose=[0.0] * 6, seconds=120.0), r'seconds must be in \(0, 60\]'),
])
def test_hold_pose_rejects_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        arm_replay.hold_pose(arm_replay.MENAGERIE, **kwargs)
