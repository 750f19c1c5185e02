"""physai.engine.servo_models: per-joint servos, MuJoCo's command delay and calibration offsets on the replayed SO-101,
each against sysid's replay or a plain mj_step loop, and the structures' fit recovering a delay that is there."""

import math

import mujoco
import numpy as np
import pytest

from physai.engine import arm_replay, servo_models
from physai.engine.servo_models import JointModel, Structure
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.experiments import servo_sysid

SOFT = arm_replay.ArmServo(kp=8.0, kv=0.7, forcerange=1.2, damping=0.15, frictionloss=0.15, armature=0.034)


@pytest.fixture(scope='module')
def episode():
    """One short episode of the synthetic stand-in (3 s)."""
    return arm_replay.synthetic_dataset(nepisode=1, seconds=3.0)[0]


def test_one_servo_on_every_joint_replays_as_sysid_bit_for_bit(episode):
    ours = servo_models.replay([JointModel.uniform(SOFT)], [episode])[0][0]
    theirs = arm_replay.replay([SOFT], [episode])[0][0]
    assert np.array_equal(ours.sim_deg, theirs.sim_deg)


def test_a_history_nobody_reads_changes_nothing(episode):
    """With nsample > 0 and no delay MuJoCo keeps the history but reads ctrl: the same bits."""
    plain = servo_models.replay([JointModel.uniform(SOFT)], [episode])[0][0]
    kept = servo_models._runs([JointModel.uniform(SOFT)], [episode], arm_replay.ReplayConfig(), history=True)[0]
    assert np.array_equal(plain.sim_deg, kept.sim_deg)


def _by_hand(model: JointModel, episode, delay_steps: int) -> np.ndarray:
    """The replay as a plain mj_step loop on the model without a delay, each step's ctrl taken ``delay_steps`` steps
    back in the command stream (the first command before the start), arm joints in degrees at every frame end."""
    config = arm_replay.ReplayConfig()
    m = servo_models.mj_model(model.replace(delay=0.0), config, fps=episode.fps)
    d = mujoco.MjData(m)
    d.qpos[:] = arm_replay.to_radians(episode.state[:1], episode.joints)[0]
    mujoco.mj_forward(m, d)
    sub = config.substeps(episode.fps)
    stream = np.repeat(arm_replay.to_radians(episode.action, episode.joints)[:-1], sub, axis=0)
    out = [d.qpos[:len(ARM_JOINTS)].copy()]
    for n in range(len(stream)):
        d.ctrl[:] = stream[max(n - delay_steps, 0)]
        mujoco.mj_step(m, d)
        if (n + 1) % sub == 0:
            out.append(d.qpos[:len(ARM_JOINTS)].copy())
    return np.degrees(np.array(out))


@pytest.mark.parametrize('delay_steps', [1, 3, 10])
def test_mujocos_delay_reads_the_command_that_many_steps_back(episode, delay_steps):
    """A delay of k physics steps, read with linear interpolation exactly at a sample, is the command of k steps ago;
    before the start the history holds the first command (the arm told to stay where it starts)."""
    step = 1.0 / (episode.fps * arm_replay.ReplayConfig().substeps(episode.fps))
    model = JointModel.uniform(SOFT, delay=delay_steps * step)
    ours = servo_models.replay([model], [episode])[0][0].sim_deg
    np.testing.assert_allclose(ours, _by_hand(model, episode, delay_steps), atol=1e-9)


def test_a_longer_delay_lags_further_and_any_delay_is_at_least_one_step(episode):
    """MuJoCo reads the history before it writes the current command, so any delay in (0, h] is one step h; above it
    the replay changes continuously with the delay (linear interpolation between the samples)."""
    h = 1.0 / (episode.fps * arm_replay.ReplayConfig().substeps(episode.fps))
    delays = [0.5 * h, h, 1.5 * h, 2 * h, 20 * h]
    mae = [r[0].mae_deg for r in servo_models.replay([JointModel.uniform(SOFT, delay=d) for d in delays], [episode])]
    assert mae[0] == mae[1]
    assert mae[1] < mae[2] < mae[3] < mae[4]
    assert abs(mae[2] - (mae[1] + mae[3]) / 2) < 0.2 * (mae[3] - mae[1])


def test_an_offset_drives_each_joint_towards_its_command_less_the_offset(episode):
    """Offsets c in the actuators replay as the chapter's commands with c taken off (servo_sysid.shift_commands)."""
    c = (0.5, -2.0, 3.0, -1.0, 0.25)
    ours = servo_models.replay([JointModel.uniform(SOFT, offsets_deg=c)], [episode])[0][0].sim_deg
    shifted = arm_replay.replay([SOFT], servo_sysid.shift_commands([episode], c))[0][0].sim_deg
    np.testing.assert_allclose(ours, shifted, atol=1e-9)


def test_per_joint_values_reach_their_joints_and_actuators():
    kp = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0)
    model = JointModel.uniform(SOFT).replace(kp=kp, armature=(0.01, 0.02, 0.03, 0.04, 0.05, 0.06),
                                             frictionloss=(0.1,) * 6, delay=0.02)
    m = servo_models.mj_model(model)
    for i, name in enumerate(JOINTS):
        a, dof = m.actuator(name).id, m.joint(name).dofadr[0]
        assert m.actuator_gainprm[a, 0] == kp[i] and m.actuator_biasprm[a, 1] == -kp[i]
        assert m.dof_armature[dof] == model.armature[i] and m.actuator_delay[a] == 0.02
        assert m.actuator_history[a, 0] == servo_models.HISTORY_SAMPLES


def test_a_structure_turns_its_free_parameters_into_a_model_and_back():
    start = JointModel.uniform(SOFT, delay=0.01)
    structure = servo_models.SPRING_DELAY_OFFSETS
    x = structure.to_x(start, step=1 / 210)
    x[-1] = 1.5  # the wrist roll's offset
    model = structure.from_x(x, start)
    assert model.offsets_deg[-1] == 1.5 and model.delay == pytest.approx(0.01)
    assert model.kp == pytest.approx(start.kp) and structure.to_x(model, step=1 / 210)[-1] == 1.5


@pytest.mark.parametrize('changes, message', [
    (dict(kp=(1.0,) * 5), 'kp must be a tuple of 6'), (dict(delay=1.0), 'delay must be in'),
    (dict(kv=(-1.0,) * 6), 'kv of shoulder_pan'), (dict(offsets_deg=(math.nan,) * 5), 'offset of shoulder_pan')])
def test_a_bad_model_is_refused_by_name(changes, message):
    with pytest.raises(ValueError, match=message):
        JointModel.uniform(SOFT).replace(**changes)


def test_a_structure_names_only_parameters_it_knows():
    with pytest.raises(ValueError, match='free must be distinct names'):
        Structure(name='x', free=('kp', 'stiffness'))


def test_a_delay_longer_than_the_history_is_refused():
    with pytest.raises(ValueError, match='delay must be at most'):
        servo_models.mj_model(JointModel.uniform(SOFT, delay=servo_models.MAX_DELAY), arm_replay.ReplayConfig(timestep=0.002))


@pytest.mark.slow
def test_the_delay_structure_finds_a_delay_that_is_there():
    """A stand-in recorded by a stiff servo behind a 60 ms delay: the spring + delay fit, started at one physics step
    of delay from a soft spring, finds the delay within 10 % and the stiff kp within 25 %. So when the fit leaves the
    delay at its floor on the real recording, the recording does not want one."""
    stiff = arm_replay.ArmServo(kp=40.0, kv=1.0, forcerange=3.0, damping=0.3, frictionloss=0.05, armature=0.03)
    hidden = JointModel.uniform(stiff, delay=0.06)
    base = arm_replay.synthetic_dataset(nepisode=2, seconds=6.0)
    episodes = []
    for e in base.episodes:
        sim = servo_models.replay([hidden], [e])[0][0].sim_deg
        state = e.state.copy()
        state[:, :len(ARM_JOINTS)] = sim
        episodes.append(e.__class__(index=e.index, fps=e.fps, joints=e.joints, action=e.action, state=state,
                                    timestamp=e.timestamp))
    start = JointModel.uniform(arm_replay.THEROBOTSTUDIO, delay=1 / 210).replace(kv=1e-3)
    found = servo_models.fit([(servo_models.SPRING_DELAY, episodes, start)], max_iter=60)[0]
    assert found.model.delay == pytest.approx(0.06, rel=0.1)
    assert found.model.kp[0] == pytest.approx(40.0, rel=0.25)
