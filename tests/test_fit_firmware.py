"""fit-servo's firmware elements (chapter 6): the MJCF it writes with them, read back and run in MuJoCo."""

import math

import mujoco
import numpy as np
import pytest

from physai import __main__ as cli
from physai.cli import fit_report, fit_request, identify
from physai.engine import firmware
from physai.engine.arm_replay import ArmServo
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.experiments import servo_sysid
from physai.laws import sts3215

SOFT = ArmServo(kp=8.31, kv=0.713, forcerange=1.29, damping=0.181, frictionloss=0.178, armature=0.0375)


@pytest.fixture(scope='module')
def ident():
    real = servo_sysid.load_book_dataset()
    fit, held = fit_request.select_episodes(real)
    return identify.Identification(
        source='a test', dataset=real, fit=tuple(fit), heldout=tuple(held),
        servos=identify.JointServos.uniform(SOFT), fit_converged=True, folds=(), static_offsets_deg=None, ridge=(),
        sim={}, cost_rise={}, best_shift=4, motion={}, warnings=())


def test_written_registers_dead_zone_and_play_are_read_back(ident, tmp_path):
    """kp and forcerange from P = 24 at 12 V (kv keeping the fitted lag), the dead band's friction added, and a play
    hinge of ±1° on every arm joint: all in the file as MuJoCo compiles it."""
    elements = fit_report.Firmware(p_register=24, supply_voltage=12.0, dead_zone=2, play_deg=2.0)
    path = fit_report.write_mjcf(ident, tmp_path / 'arm.xml', elements=elements)
    assert 'STS3215 firmware elements' in path.read_text(encoding='utf-8')
    m = mujoco.MjModel.from_xml_path(str(path))
    kp = sts3215.register_kp(24, 12.0)
    for name in JOINTS:
        a, dof = m.actuator(name).id, m.joint(name).dofadr[0]
        assert m.actuator_gainprm[a, 0] == pytest.approx(kp, rel=1e-6)
        assert (-m.actuator_biasprm[a, 2] + m.dof_damping[dof]) / kp == pytest.approx(SOFT.lag_ms / 1e3, rel=1e-5)
        assert m.actuator_forcerange[a, 1] == pytest.approx(sts3215.forcerange(12.0), rel=1e-6)
        assert m.dof_frictionloss[dof] == pytest.approx(SOFT.frictionloss + kp * sts3215.dead_band(2), rel=1e-5)
    for name in ARM_JOINTS:
        play = m.joint(name + firmware.PLAY_SUFFIX)
        np.testing.assert_allclose(m.jnt_range[play.id], [-math.radians(1.0), math.radians(1.0)], rtol=1e-5)
    assert m.njnt == len(JOINTS) + len(ARM_JOINTS)


def test_written_goal_speed_runs_as_a_slew_limited_pid_servo(ident, tmp_path):
    """With --goal-speed every actuator is MuJoCo's pid actuator, one ctrl each, whose set point climbs at the
    register's rate."""
    elements = fit_report.Firmware(goal_speed=1000)
    path = fit_report.write_mjcf(ident, tmp_path / 'arm.xml', elements=elements)
    m = mujoco.MjModel.from_xml_path(str(path))
    assert [m.actuator(i).name for i in range(m.nu)] == list(JOINTS)
    assert np.all(m.actuator_ctrlspec == firmware.PID_POSITION_INPUT) and m.nu == len(JOINTS)
    d = mujoco.MjData(m)
    a = m.actuator('elbow_flex').id
    start = d.qpos[m.joint('elbow_flex').qposadr[0]]
    points = []
    for k in range(26):  # 20 steps of climbing: less than the 0.5 rad the command asks for
        d.ctrl[:] = d.qpos[:m.nu] if k == 0 else d.ctrl
        if k == 5:
            d.ctrl[a] = start + 0.5
        mujoco.mj_step(m, d)
        points.append(d.act[m.actuator_actadr[a]])
    assert points[-1] < start + 0.5
    rate = (points[-1] - points[5]) / (20 * m.opt.timestep)
    assert rate == pytest.approx(sts3215.slewmax(1000), rel=1e-5)  # MuJoCo's XML writer keeps 6 digits


def test_elements_refuse_per_joint_servos(ident, tmp_path):
    """The firmware elements go with the shared spring only: per-joint servos with them are a ValueError."""
    servos = identify.JointServos(shared=SOFT, kp=(9.0,) * 5, kv=(0.7,) * 5)
    import dataclasses
    with pytest.raises(ValueError, match='shared spring only'):
        fit_report.write_mjcf(dataclasses.replace(ident, servos=servos), tmp_path / 'arm.xml',
                              elements=fit_report.Firmware(play_deg=1.0))


@pytest.mark.parametrize('option,value,message', [('--play', 'abc', '--play must be a number'),
                                                  ('--p-register', '300', 'p_register must be'),
                                                  ('--goal-speed', '1.5', '--goal-speed must be a whole number')])
def test_a_bad_firmware_option_is_one_line_naming_it(option, value, message, tmp_path, capsys):
    """A bad register stops fit-servo before any fit, with one line naming it (exit 2)."""
    assert cli.fit_servo(['synthetic', option, value, '--out', str(tmp_path / 'x.xml')]) == 2
    assert message in capsys.readouterr().err
