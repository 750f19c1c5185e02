"""physai.engine.firmware: each firmware element built with MjSpec and checked against mj_step (the play model's dead
zone width, the pid plugin's slew rate, the dead band's stopping band), and the arm replay with elements."""

import math

import mujoco
import numpy as np
import pytest

from physai.engine import firmware, servo_models
from physai.engine.arm_replay import ArmServo
from physai.engine.servo_models import JointModel
from physai.laws import sts3215

LINK = """<mujoco><compiler angle="radian"/><option timestep="0.002" gravity="0 0 0" integrator="implicitfast"/>
  <worldbody><body name="link"><joint name="j" type="hinge" axis="0 1 0" damping="0.5" armature="0.0375"/><geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01"
  mass="0.2"/></body></worldbody>{actuator}</mujoco>"""
POSITION = '<actuator><position joint="j" kp="{kp}" kv="{kv}"/></actuator>'


def settle(m, d, steps=3000):
    for _ in range(steps):
        mujoco.mj_step(m, d)


@pytest.mark.parametrize('backlash_deg', [0.5, 1.0, 2.0])
def test_play_hinge_lets_the_link_move_by_the_backlash(backlash_deg):
    """With the servo holding its hinge (stiff, at 0), a torque on the link pushes it to one end of the play and the
    opposite torque to the other: the link's dead zone is the backlash wide, within 0.01° (the soft limit gives a
    little under the test torque)."""
    spec = mujoco.MjSpec.from_string(LINK.format(actuator=POSITION.format(kp=1000, kv=10)))
    firmware.add_play(spec, 'j', math.radians(backlash_deg))
    m = spec.compile()
    d = mujoco.MjData(m)
    play = m.joint('j' + firmware.PLAY_SUFFIX).dofadr[0]
    ends = []
    for tau in (0.01, -0.01):
        d.qfrc_applied[:] = 0
        d.qfrc_applied[play] = tau
        settle(m, d)
        ends.append(d.qpos.sum())  # the link turns by servo hinge + play hinge
    assert math.degrees(ends[0] - ends[1]) == pytest.approx(backlash_deg, abs=0.01)
    assert abs(math.degrees(d.qpos[0])) < 0.01  # the servo's own hinge barely moved: the play took it


def test_play_hinge_is_menageries_backlash_class():
    """The play hinge carries Menagerie's unused backlash class: damping 0.01, armature 0.01, ±0.5° at 1°."""
    spec = mujoco.MjSpec.from_string(LINK.format(actuator=''))
    j = firmware.add_play(spec, 'j', math.radians(sts3215.MENAGERIE_BACKLASH_DEG))
    assert (float(j.damping[0]), float(j.armature)) == (0.01, 0.01)
    np.testing.assert_allclose(j.range, [-0.0087267, 0.0087267], rtol=1e-6)


@pytest.mark.parametrize('slewmax', [0.5, 2.0])
def test_pid_actuator_set_point_moves_at_slewmax(slewmax):
    """MuJoCo's pid actuator (position input) with slewmax moves its set point (its activation, 0 after a reset) by
    slewmax*dt a step towards the command: the law sts3215.slew_limited from 0, step for step."""
    spec = mujoco.MjSpec.from_string(LINK.format(actuator=''))
    a = firmware.add_pid_servo(spec, 'j', kp=20.0, slewmax=slewmax)
    m = spec.compile()
    assert m.nu == 1 and m.actuator_ctrlspec[0] == firmware.PID_POSITION_INPUT  # one ctrl, as <position>
    d = mujoco.MjData(m)
    commands = np.concatenate([np.full(5, 0.01), np.full(400, 1.0), np.full(300, -0.5)])
    set_points = []
    for u in commands:
        d.ctrl[0] = u
        mujoco.mj_step(m, d)
        set_points.append(d.act[0])
    law = sts3215.slew_limited(commands, slewmax, m.opt.timestep, previous=0.0)
    np.testing.assert_allclose(set_points, law, rtol=0, atol=1e-12)
    rate = np.diff(set_points[5:200]) / m.opt.timestep
    np.testing.assert_allclose(rate, slewmax, rtol=1e-9)


@pytest.mark.parametrize('integrator', ['implicitfast', 'Euler'])
def test_position_servo_on_slew_limited_commands_moves_as_the_pid_actuator(integrator):
    """The arm replay feeds <position> the clipped commands instead of using the pid actuator: the two give the same
    motion on mj_step, bit for bit (with a zero velocity set point the pid actuator is <position>)."""
    runs = []
    for kind in ('pid', 'position'):
        actuator = '' if kind == 'pid' else POSITION.format(kp=20.0, kv=0.4)
        spec = mujoco.MjSpec.from_string(LINK.format(actuator=actuator))
        if kind == 'pid':
            firmware.add_pid_servo(spec, 'j', kp=20.0, kv=0.4, slewmax=1.5)
        m = spec.compile()
        m.opt.integrator = getattr(mujoco.mjtIntegrator, f'mjINT_{integrator.upper()}')
        d = mujoco.MjData(m)
        commands = np.concatenate([np.zeros(3), np.full(900, 0.8)])
        if kind == 'position':
            commands = sts3215.slew_limited(commands, 1.5, m.opt.timestep, previous=0.0)
        q = []
        for u in commands:
            d.ctrl[0] = u
            mujoco.mj_step(m, d)
            q.append(d.qpos[0])
        runs.append(np.array(q))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize('start', [-0.2, 0.2])
def test_dead_band_as_friction_stops_within_the_band_short_of_the_target(start):
    """A servo whose joint carries frictionloss kp*delta stops within delta of its target, on the side it came from
    (lerobot issue 3400's direction-dependent settling), two seconds after the step; without it, on the target.
    (MuJoCo's friction is a soft constraint: held longer, the joint creeps on towards the target over seconds.)"""
    kp, delta = 8.9, math.radians(0.5)
    ends = {}
    for band in (0.0, delta):
        spec = mujoco.MjSpec.from_string(LINK.format(actuator=POSITION.format(kp=kp, kv=0.3)))
        spec.joint('j').frictionloss = sts3215.dead_band_friction(kp, band)
        spec.joint('j').damping = [2.0, 0.0, 0.0]  # overdamped: no overshoot, so the approach decides the side
        m = spec.compile()
        d = mujoco.MjData(m)
        d.qpos[0] = start
        d.ctrl[0] = 0.0
        settle(m, d, 1000)
        ends[band] = d.qpos[0]
    assert abs(ends[0.0]) < 0.05 * delta
    assert 10 * abs(ends[0.0]) < abs(ends[delta]) <= 1.02 * delta
    assert np.sign(ends[delta]) == np.sign(start)


def servo():
    return JointModel.uniform(ArmServo(kp=8.31, kv=0.713, forcerange=1.29, damping=0.181, frictionloss=0.178,
                                       armature=0.0375))


@pytest.mark.slow
def test_replay_without_elements_is_chapter_4s(book_dataset=None):
    """No element: the firmware replay gives servo_models.replay's numbers, bit for bit."""
    from physai.experiments import servo_sysid
    episodes = list(servo_sysid.load_book_dataset().episodes[:2])
    ref = servo_models.replay([servo()], episodes)[0]
    runs = firmware.replay([firmware.FirmwareModel(servo=servo())], episodes)[0]
    for a, b in zip(ref, runs):
        np.testing.assert_array_equal(a.sim_deg, b.sim_deg)


@pytest.mark.slow
def test_replay_with_play_reads_servo_or_link():
    """With play the link hangs off the servo's hinge by about half the play under the arm's weight: at most half the
    play and what the soft limit gives under a newton-metre or so (a quarter of a degree here)."""
    from physai.experiments import servo_sysid
    episodes = list(servo_sysid.load_book_dataset().episodes[:1])
    b = math.radians(2.0)
    servo_run, link_run = (r[0] for r in firmware.replay(
        [firmware.FirmwareModel(servo=servo(), backlash=b, read=read) for read in firmware.READS], episodes))
    gap = np.abs(link_run.sim_deg - servo_run.sim_deg)
    assert gap.max() <= math.degrees(b / 2) + 0.25
    assert gap.max() > math.degrees(b / 2) * 0.5
    assert not servo_run.diverged


@pytest.mark.parametrize('kwargs,name', [(dict(backlash=0.5), 'backlash'), (dict(slewmax=0.0), 'slewmax'),
                                         (dict(read='motor'), 'read')])
def test_firmware_model_refuses_bad_elements(kwargs, name):
    """An element out of range is a ValueError naming it."""
    with pytest.raises(ValueError, match=name):
        firmware.FirmwareModel(servo=servo(), **kwargs)
