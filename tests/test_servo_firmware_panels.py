"""physai.interface.servo_firmware_panels: chapter 6's settings panel's physics and readouts, each following from the
runs it labels. The widget (the panel in Jupyter and Colab, at the ends of every control) is
tests/test_widget_arm.py's."""

import math

import numpy as np
import pytest

from physai.engine import firmware
from physai.engine.arm_replay import CHATTER_DEG, ArmServo
from physai.engine.servo_models import JointModel
from physai.engine.so101 import ARM_JOINTS
from physai.interface import servo_firmware_panels as sfp
from physai.laws import sts3215


@pytest.fixture
def spring():
    return JointModel.uniform(ArmServo(kp=8.9, kv=0.2, forcerange=3.0, damping=0.2, frictionloss=0.15,
                                       armature=0.03))


@pytest.fixture
def episode(synthetic_episode):
    return synthetic_episode(200)


def values(**changes):
    return {**dict(p_register=16.0, supply_voltage=7.4, torque_limit=1000.0, goal_speed=0.0, backlash_deg=0.0,
                   timestep=0.005, integrator='implicitfast'), **changes}


def test_readouts_follow_from_the_settings_and_the_runs(spring, episode):
    seg = sfp.segment_of(episode)
    assert seg.nframe == round(sfp.SEGMENT_S * seg.fps) + 1
    v = values(p_register=32.0, supply_voltage=12.0, torque_limit=500.0, backlash_deg=1.0)
    settings = sfp.settings_of(v)
    step, run = sfp.settings_runs(spring, seg, v)
    r = sfp.readouts(spring, settings, 0.5, step, run, seg.fps)
    assert r['kp'] == pytest.approx(float(sts3215.register_kp(32, 12.0)))
    assert r['forcerange'] == pytest.approx(sts3215.forcerange(12.0, 500))
    assert r['sag'] == pytest.approx(math.degrees(0.5 / r['kp']))
    j = ARM_JOINTS.index(sfp.STEP_JOINT)
    assert r['band'] == pytest.approx(math.degrees(spring.frictionloss[j] / r['kp'] + math.radians(1.0) / 2))
    # the runs are chapter 6's firmware replay of the same model
    model = sfp.settings_model(spring, settings)
    again = firmware.replay([model], [sfp.step_episode(seg), seg])[0]
    np.testing.assert_array_equal(again[1].sim_deg, run.sim_deg)
    # the time to target is where the stepped joint crosses 90 % of the step
    q = step.sim_deg[:, j]
    t = (np.arange(len(q)) - sfp.STEP_AT_FRAME) / seg.fps
    crossed = np.interp(r['rise'], t, q)
    assert crossed - q[sfp.STEP_AT_FRAME - 1] == pytest.approx(sfp.RISE * sfp.STEP_DEG, rel=1e-6)
    # the verdict is the segment's chatter against the book's line
    assert r['chatter'] == run.chatter_deg and r['margin'] == pytest.approx(CHATTER_DEG / run.chatter_deg)
    assert r['verdict'] == ('chatters' if run.chatters else 'quiet')
    assert sfp.readout_lines(r)[-2].startswith('no chatter at 30 Hz' if r['verdict'] == 'quiet' else 'chatters')


def test_a_load_over_the_torque_limit_is_not_held_and_a_slew_limit_slows_the_step(spring, episode):
    seg = sfp.segment_of(episode)
    v = values(torque_limit=100.0)
    step, run = sfp.settings_runs(spring, seg, v)
    r = sfp.readouts(spring, sfp.settings_of(v), 1.0, step, run, seg.fps)
    assert math.isnan(r['sag']) and sfp.readout_lines(r)[1].startswith('cannot hold')
    fast = sfp.readouts(spring, sfp.settings_of(values()), 0.5, *sfp.settings_runs(spring, seg, values()), seg.fps)
    slow_v = values(goal_speed=300.0)
    slow = sfp.readouts(spring, sfp.settings_of(slow_v), 0.5, *sfp.settings_runs(spring, seg, slow_v), seg.fps)
    rate = math.degrees(sts3215.slewmax(300))  # deg/s
    assert slow['rise'] >= sfp.RISE * sfp.STEP_DEG / rate - 1 / seg.fps > fast['rise']


def test_a_diverged_segment_is_called_so():
    class Run:
        diverged, chatters, chatter_deg, mae_deg = True, False, math.nan, math.nan
        sim_deg = np.full((3, 5), np.nan)
    spring = JointModel.uniform(ArmServo(kp=8.9, kv=0.2, forcerange=3.0, damping=0.2, frictionloss=0.15,
                                         armature=0.03))
    r = sfp.readouts(spring, sts3215.Settings(), 0.5, Run(), Run(), 30.0)
    assert r['verdict'] == 'diverged' and r['rise'] == math.inf
    assert sfp.readout_lines(r)[-2] == 'diverged at 30 Hz'


def test_bad_input_is_refused_by_name(spring, episode, synthetic_episode):
    """(The widget's own refusals, load and spring among them, are tests/test_widget_arm.py's.)"""
    with pytest.raises(ValueError, match='seconds must be at most'):
        sfp.segment_of(synthetic_episode(30))
    with pytest.raises(TypeError, match='spring must be'):
        sfp.settings_model('spring', sfp.settings_of(values()))
    with pytest.raises(ValueError, match='p_register'):
        sfp.settings_of(values(p_register=300.0))
