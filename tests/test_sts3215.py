"""physai.laws.sts3215: the STS3215's registers as MuJoCo numbers; kp against P and supply voltage checked against
chapter 4's duty-gain mapping and against the static deflection mj_step gives."""

import math

import mujoco
import numpy as np
import pytest

from physai.laws import servo_gain, sts3215


@pytest.mark.parametrize('p', [8, 16, 32])
def test_kp_at_bams_voltage_is_chapter_4s_mapping(p):
    """At 7.4 V the register law is chapter 4's: servo_gain.BAM_STS3215.kp."""
    assert sts3215.register_kp(p, 7.4) == pytest.approx(servo_gain.BAM_STS3215.kp(p), rel=1e-12)
    assert sts3215.Settings(p_register=p).kp == pytest.approx(servo_gain.BAM_STS3215.kp(p), rel=1e-12)


def test_kp_and_torque_scale_with_the_supply_voltage():
    """The duty drives d*V volts: kp and the stall torque are both proportional to V, their ratio (the error at full
    duty) is not."""
    for v in sts3215.SUPPLY_VOLTAGES:
        assert sts3215.register_kp(16, v) == pytest.approx(servo_gain.BAM_STS3215.kp(16) * v / 7.4, rel=1e-12)
        assert sts3215.forcerange(v) == pytest.approx(servo_gain.BAM_STS3215.forcerange * v / 7.4, rel=1e-12)
        assert sts3215.forcerange(v) / sts3215.register_kp(16, v) == pytest.approx(
            servo_gain.BAM_STS3215.saturation_error(16), rel=1e-12)
    assert sts3215.forcerange(7.4, 500) == pytest.approx(servo_gain.BAM_STS3215.forcerange / 2, rel=1e-12)


@pytest.mark.parametrize('p,v', [(16, 5.0), (16, 7.4), (32, 7.4), (16, 12.0)])
def test_mujoco_deflects_by_torque_over_kp(p, v):
    """A <position> servo with the register's kp, held against a steady torque tau below the clamp, settles tau/kp
    from its target in mj_step."""
    settings = sts3215.Settings(p_register=p, supply_voltage=v)
    tau = 0.3 * settings.forcerange
    xml = f"""<mujoco><option timestep="0.002" gravity="0 0 0"/><worldbody><body><joint name="j" type="hinge"
      axis="0 1 0" damping="1"/><geom type="sphere" size="0.05" mass="1"/></body></worldbody>
      <actuator><position joint="j" kp="{settings.kp!r}" forcelimited="true"
      forcerange="{-settings.forcerange!r} {settings.forcerange!r}"/></actuator></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qfrc_applied[0] = tau
    for _ in range(5000):
        mujoco.mj_step(m, d)
    assert d.qpos[0] == pytest.approx(tau / settings.kp, rel=1e-6)


def test_registers_in_radians():
    """Goal speed and dead zones count encoder steps, 4096 a turn; goal speed 0 is no limit."""
    assert sts3215.slewmax(0) == math.inf
    assert sts3215.slewmax(4096) == pytest.approx(2 * math.pi)
    assert sts3215.dead_band(1) == pytest.approx(2 * math.pi / 4096)
    assert sts3215.dead_band(1, 3) == pytest.approx(2 * 2 * math.pi / 4096)
    assert sts3215.dead_band_friction(10.0, 0.01) == pytest.approx(0.1)


def test_slew_limited_moves_at_most_rate_dt_a_step():
    """Each step's set point is within rate*dt of the previous one; the first is as commanded."""
    u = np.array([0.0, 1.0, 1.0, 1.0, -1.0, -1.0])
    out = sts3215.slew_limited(u, 10.0, 0.01)
    np.testing.assert_allclose(out, [0.0, 0.1, 0.2, 0.3, 0.2, 0.1])
    np.testing.assert_array_equal(sts3215.slew_limited(u, math.inf, 0.01), u)


@pytest.mark.parametrize('kwargs,name', [(dict(p_register=256), 'p_register'), (dict(supply_voltage=15.0),
                                         'supply_voltage'), (dict(torque_limit=0), 'torque_limit'),
                                         (dict(goal_speed=-1), 'goal_speed'), (dict(dead_zone=300), 'dead_zone'),
                                         (dict(backlash_deg=11.0), 'backlash_deg')])
def test_settings_refuse_bad_registers(kwargs, name):
    """A register outside its range is a ValueError naming it."""
    with pytest.raises(ValueError, match=name.replace('dead_zone', 'cw_dead_zone')):
        sts3215.Settings(**kwargs)
