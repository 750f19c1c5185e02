"""physai.laws.servo_gain: the STS3215's P register to MuJoCo's kp and back, BAM's duty-gain law against MuJoCo's
<position> force, and Menagerie's volts-per-degree reading against the gains its so101.xml carries."""

import mujoco
import numpy as np
import pytest

from physai.engine import so101
from physai.laws import servo_gain
from physai.laws.servo_gain import BAM_STS3215, ServoElectrics


def dc_motor_torque(servo: ServoElectrics, p_register, q_target, q, qd):
    """The servo by hand: firmware duty on the error, then the DC motor's torque (inductance neglected)."""
    duty = np.clip(servo.duty_gain * p_register * (q_target - q), -servo.max_duty, servo.max_duty)
    return servo.torque_constant * (duty * servo.supply_voltage - servo.torque_constant * qd) / servo.resistance


def test_kp_is_the_dc_motor_torque_per_radian_of_error():
    """Below duty saturation the firmware-plus-motor torque is exactly kp*(q* - q) - kv*qd."""
    p, q_target, q, qd = 16, 0.3, 0.29, 0.4
    assert abs(BAM_STS3215.duty_gain * p * (q_target - q)) < BAM_STS3215.max_duty
    expected = BAM_STS3215.kp(p) * (q_target - q) - BAM_STS3215.kv * qd
    assert dc_motor_torque(BAM_STS3215, p, q_target, q, qd) == pytest.approx(expected, rel=1e-12)


def test_mujoco_position_actuator_with_these_gains_gives_the_dc_motor_torque():
    """MuJoCo's <position kp kv forcerange> from the law applies the hand-computed servo torque: linear below
    saturation, and the full-duty stall torque at rest beyond it."""
    p = 32
    xml = f"""<mujoco><worldbody><body><joint name="j" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/></body></worldbody>
      <actuator><position joint="j" kp="{BAM_STS3215.kp(p)!r}" kv="{BAM_STS3215.kv!r}"
        forcelimited="true" forcerange="{-BAM_STS3215.forcerange!r} {BAM_STS3215.forcerange!r}"/></actuator>
    </mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    for q_target, q, qd in ((0.1, 0.08, 0.5), (-0.05, -0.01, -1.2), (1.0, 0.0, 0.0), (-1.0, 0.0, 0.0)):
        data.qpos[0], data.qvel[0], data.ctrl[0] = q, qd, q_target
        mujoco.mj_forward(model, data)
        assert data.actuator_force[0] == pytest.approx(dc_motor_torque(BAM_STS3215, p, q_target, q, qd), rel=1e-9)


def test_p_register_and_kp_convert_both_ways():
    p = np.array([1.0, 8.0, 16.0, 32.0, 254.0])
    np.testing.assert_allclose(BAM_STS3215.p_register(BAM_STS3215.kp(p)), p, rtol=1e-14)
    assert servo_gain.menagerie_p_register(servo_gain.menagerie_gains(16)['kp']) == pytest.approx(16, rel=1e-14)


def test_bam_at_p32_is_open_duck_minis_first_kp_and_its_export_folds_in_max_duty():
    """Open Duck Mini's first STS3215 class had kp 17.8 and forcerange 3.35 at P = 32 and 7.4 V; BAM's to_mujoco
    multiplies by max_pwm 0.97 and prints 17.26."""
    assert BAM_STS3215.kp(32) == pytest.approx(17.8, abs=0.005)
    assert BAM_STS3215.kp(32) * BAM_STS3215.max_duty == pytest.approx(17.26, abs=0.005)
    assert BAM_STS3215.forcerange / BAM_STS3215.max_duty == pytest.approx(3.35, abs=0.005)
    # its joint damping: viscous friction 0.0591 plus the back-EMF term kt**2/R
    assert 0.05908515565091076 + BAM_STS3215.kv == pytest.approx(0.608, abs=0.0005)


def test_lerobot_p16_halves_bams_kp_to_about_nine():
    assert BAM_STS3215.kp(servo_gain.LEROBOT_SO101_P) == pytest.approx(BAM_STS3215.kp(32) / 2)
    assert 8.8 < BAM_STS3215.kp(16) < 9.0


def test_menagerie_reading_reproduces_the_gains_of_so101_xml():
    """kp = Km*P*(180/pi)/R at P = 16 is the kp="998.22" of Menagerie's sts3215 class, and so are kv and forcerange."""
    gains = servo_gain.menagerie_gains(16)
    assert gains['kp'] == pytest.approx(998.22, abs=0.005)
    assert gains['kv'] == pytest.approx(2.731, abs=0.0005)
    assert gains['forcerange'] == pytest.approx(2.94, abs=1e-12)
    model = so101.load_so101()
    assert model.actuator_gainprm[0, 0] == pytest.approx(round(gains['kp'], 2), rel=1e-12)
    assert -model.actuator_biasprm[0, 2] == pytest.approx(round(gains['kv'], 3), rel=1e-12)
    assert model.actuator_forcerange[0, 1] == pytest.approx(gains['forcerange'], rel=1e-12)


def test_menagerie_reading_is_a_hundredfold_stiffer_than_bams_at_the_same_register():
    """Volts per degree against a measured duty gain (x47) and R = 1 ohm against BAM's 2.68 ohm (x2.7)."""
    ratio = servo_gain.menagerie_gains(16)['kp'] / BAM_STS3215.kp(16)
    assert 100 < ratio < 125
    assert np.rad2deg(1.0) / (BAM_STS3215.duty_gain * BAM_STS3215.supply_voltage) == pytest.approx(46.6, abs=0.1)


def test_duty_saturates_within_a_fraction_of_a_radian():
    """At P = 16, BAM's duty gain reaches full duty at an error of 0.97/(0.166*16) = 0.37 rad (21 degrees)."""
    assert BAM_STS3215.saturation_error(16) == pytest.approx(0.97 / (0.166 * 16))


@pytest.mark.parametrize('field, value', [('duty_gain', 0.0), ('supply_voltage', -7.4), ('torque_constant', np.nan),
                                          ('resistance', float('inf')), ('max_duty', 1.5), ('max_duty', 0.0)])
def test_bad_servo_electrics_are_refused_by_name(field, value):
    good = dict(duty_gain=0.166, supply_voltage=7.4, torque_constant=1.2, resistance=2.7)
    with pytest.raises(ValueError, match=field):
        ServoElectrics(**{**good, field: value})


@pytest.mark.parametrize('bad', [-1.0, float('nan'), float('inf')])
def test_bad_register_or_kp_is_refused_by_name(bad):
    with pytest.raises(ValueError, match='p_register'):
        BAM_STS3215.kp(bad)
    with pytest.raises(ValueError, match='kp'):
        BAM_STS3215.p_register(bad)
    with pytest.raises(ValueError, match='kp'):
        servo_gain.menagerie_p_register(bad)


@pytest.mark.parametrize('call, message', [
    (lambda: BAM_STS3215.saturation_error(0), r'p_register must be > 0 \(at P = 0 the firmware drives nothing'),
    (lambda: BAM_STS3215.kp('abc'), "p_register must be a number or an array of numbers, got 'abc'"),
    (lambda: BAM_STS3215.p_register('abc'), "kp must be a number or an array of numbers N\\*m/rad, got 'abc'"),
    (lambda: servo_gain.menagerie_gains([]), r'p_register must be a finite number >= 0 \(the P_Coefficient '
                                             r'register\), got \[\]'),
    (lambda: servo_gain.menagerie_gains('abc'), "p_register must be a finite number >= 0"),
])
def test_each_bad_argument_of_the_gain_conversions_is_named(call, message):
    """P = 0 divided by zero in saturation_error; text and an empty list failed inside numpy, naming nothing."""
    with pytest.raises(ValueError, match=message):
        call()
