"""physai.engine.pd_controller: chapter 3's PDController, in-loop and in-step, against MuJoCo's own <position> servo
and the MIT law, and its refusals."""

import warnings

import mujoco
import numpy as np
import pytest

from physai.engine.pd_controller import HINGE_XML, PDController
from physai.laws import loop
from physai.laws.loop import JointCommand
INTEGRATORS = ('Euler', 'implicitfast', 'implicit', 'RK4')

# One link on a hinge (pd_controller.HINGE_XML), driven by a plain motor (gain 1, no bias): the in-step backend must
# turn it into exactly the servo that the second model writes with <position>.
MOTOR_XML = HINGE_XML.replace('{actuator}', '<motor name="drive" joint="hinge" gear="{gear}" {limits}/>')
POSITION_XML = HINGE_XML.replace(
    '{actuator}', '<position name="drive" joint="hinge" gear="{gear}" kp="{kp}" kv="{kv}" {limits}/>')


def clamped_motor() -> mujoco.MjModel:
    """The link on a plain motor (gear 1, implicitfast) whose forcerange clamps it to ±1 N·m."""
    return mujoco.MjModel.from_xml_string(
        MOTOR_XML.format(integrator='implicitfast', gear=1, limits='forcerange="-1 1"'))


# A second, unactuated hinge for the fall-back.
TWO_JOINT_XML = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body>
      <joint name="driven" type="hinge" axis="0 1 0" armature="0.01"/>
      <geom type="sphere" size="0.05" mass="1" pos="0.1 0 0"/>
      <body pos="0.2 0 0">
        <joint name="free_hinge" type="hinge" axis="0 1 0" armature="0.01"/>
        <geom type="sphere" size="0.05" mass="1" pos="0.1 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor joint="driven"/>
  </actuator>
</mujoco>
"""




@pytest.mark.parametrize('integrator', INTEGRATORS)
@pytest.mark.parametrize('gear, forcerange', [(1.0, None), (1.0, 0.5), (2.0, None)])
def test_in_step_servo_is_mujocos_position_actuator_step_for_step(integrator, gear, forcerange):
    """A fixed command in-step turns the motor into <position kp kv>: same qpos at every step, to 1e-12 rad."""
    stiffness, damping, target = 40.0, 0.8, 0.3
    limits = '' if forcerange is None else f'forcerange="{-forcerange} {forcerange}"'
    ours = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator=integrator, gear=gear, limits=limits))
    # the <position> model in actuator units: kp*gear² is the joint stiffness, ctrl/gear the joint target
    theirs = mujoco.MjModel.from_xml_string(POSITION_XML.format(
        integrator=integrator, gear=gear, kp=stiffness / gear**2, kv=damping / gear**2, limits=limits))
    d_ours, d_theirs = mujoco.MjData(ours), mujoco.MjData(theirs)
    d_ours.qpos[0] = d_theirs.qpos[0] = -0.5
    controller = PDController(ours, ['hinge'], backend='in-step')
    command = JointCommand(position=target, stiffness=stiffness, damping=damping)
    d_theirs.ctrl[0] = gear * target
    for _ in range(1000):
        controller.write(d_ours, [command])
        mujoco.mj_step(ours, d_ours)
        mujoco.mj_step(theirs, d_theirs)
        assert abs(d_ours.qpos[0] - d_theirs.qpos[0]) <= 1e-12
    np.testing.assert_allclose(controller.effort(d_ours), d_theirs.qfrc_actuator, atol=1e-9)


def test_in_loop_torque_is_the_mit_law_clamped_and_held_between_ticks():
    """In-loop writes clip(kp*(p-q) + kv*(v-qd) + effort) to qfrc_applied, and it stays there while q moves."""
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='implicitfast', gear=1, limits=''))
    d = mujoco.MjData(m)
    d.qpos[0], d.qvel[0] = -0.2, 0.7
    controller = PDController(m, ['hinge'], backend='in-loop')
    command = JointCommand(position=0.1, velocity=0.5, stiffness=4.0, damping=0.4, effort=0.05,
                           max_effort=2.0)
    controller.write(d, [command])
    expected = 4.0 * (0.1 + 0.2) + 0.4 * (0.5 - 0.7) + 0.05
    assert d.qfrc_applied[0] == pytest.approx(expected, abs=1e-15)
    for _ in range(5):
        mujoco.mj_step(m, d)
    assert d.qfrc_applied[0] == pytest.approx(expected, abs=1e-15)
    assert d.qpos[0] != pytest.approx(-0.2)
    # the silenced actuator adds nothing, so the effort read back is the held torque
    assert controller.effort(d)[0] == pytest.approx(expected, abs=1e-12)
    strong = JointCommand(position=3.0, stiffness=10.0, max_effort=2.0)
    controller.write(d, [strong])
    assert d.qfrc_applied[0] == 2.0


def test_in_step_velocity_and_effort_stay_inside_the_clamp_by_default():
    """Default in-step: damping*velocity + effort ride in biasprm[0], so forcerange clamps the whole torque."""
    m = clamped_motor()
    d = mujoco.MjData(m)
    controller = PDController(m, ['hinge'], backend='in-step')
    controller.write(d, [JointCommand(velocity=10.0, damping=1.0, effort=0.5)])
    mujoco.mj_forward(m, d)
    assert controller.effort(d)[0] == pytest.approx(1.0)
    # the plain recipe puts them in qfrc_applied, outside the clamp
    m2 = clamped_motor()
    d2 = mujoco.MjData(m2)
    applied = PDController(m2, ['hinge'], backend='in-step', feedforward='applied')
    applied.write(d2, [JointCommand(velocity=10.0, damping=1.0, effort=0.5)])
    mujoco.mj_forward(m2, d2)
    assert applied.effort(d2)[0] == pytest.approx(10.5)


def test_unactuated_joint_falls_back_to_in_loop_with_a_warning():
    """In-step needs an actuator; a joint without one gets the in-loop PD and a warning naming it."""
    m = mujoco.MjModel.from_xml_string(TWO_JOINT_XML)
    d = mujoco.MjData(m)
    with pytest.warns(UserWarning, match='free_hinge'):
        controller = PDController(m, ['driven', 'free_hinge'], backend='in-step')
    assert list(controller.in_step) == [True, False]
    d.qpos[1] = 0.2
    controller.write(d, [JointCommand(stiffness=5.0), JointCommand(stiffness=5.0)])
    assert d.qfrc_applied[1] == pytest.approx(-1.0)
    assert d.ctrl[0] == 0.0 and m.actuator_gainprm[0, 0] == 5.0


def test_max_effort_narrows_the_actuator_forcerange_never_widens_it():
    m = clamped_motor()
    d = mujoco.MjData(m)
    controller = PDController(m, ['hinge'], backend='in-step')
    controller.write(d, [JointCommand(position=1.0, stiffness=100.0, max_effort=0.3)])
    np.testing.assert_allclose(m.actuator_forcerange[0], (-0.3, 0.3))
    controller.write(d, [JointCommand(position=1.0, stiffness=100.0, max_effort=5.0)])
    np.testing.assert_allclose(m.actuator_forcerange[0], (-1.0, 1.0))


def test_bad_controller_setup_and_commands_raise():
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='Euler', gear=1, limits=''))
    d = mujoco.MjData(m)
    with pytest.raises(ValueError, match="joint must name a joint of the model, got 'elbow'"):
        PDController(m, ['elbow'])
    with pytest.raises(ValueError, match='backend must be one of'):
        PDController(m, ['hinge'], backend='firmware')
    controller = PDController(m, ['hinge'])
    with pytest.raises(ValueError, match=r'one JointCommand per joint \(1\), got 2'):
        controller.write(d, [JointCommand(), JointCommand()])
    with pytest.raises(ValueError, match='commands\\[0\\] must be a JointCommand'):
        controller.write(d, [0.3])
    with pytest.raises(ValueError, match='integrator must be one of'):
        loop.tick_growth(rate_hz=100, kp=1, kv=0, inertia=1, integrator='leapfrog')


def test_quiet_controller_setup_with_actuators_warns_nothing():
    m = mujoco.MjModel.from_xml_string(MOTOR_XML.format(integrator='Euler', gear=1, limits=''))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        PDController(m, ['hinge'], backend='in-step')


def test_a_joint_whose_actuator_has_gear_zero_is_refused():
    """The controller divides by the gear to put a joint torque into the actuator; gear 0 would divide by zero."""
    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="j" type="hinge"/><geom size="0.1" mass="1"/></body></worldbody>'
        '<actuator><motor name="m" joint="j" gear="0"/></actuator></mujoco>')
    with pytest.raises(ValueError, match=r'joint\(s\) j must have a finite, non-zero gear'):
        PDController(m, ['j'], backend='in-step')


def test_a_controller_refuses_a_joint_given_twice_and_another_models_data():
    """A joint twice got two PDs, the last silently winning; another model's data ended in an IndexError (or, of the
    same size, in gains written where the data never looks)."""
    xml = ('<mujoco><worldbody><body><joint name="hinge" axis="0 1 0"/><geom size="0.05" mass="1"/></body>'
           '</worldbody><actuator><motor joint="hinge"/></actuator></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    with pytest.raises(ValueError, match=r"joints must hold each item once, got 'hinge' more than once"):
        PDController(m, ['hinge', 0])
    controller = PDController(m, ['hinge'])
    twin = mujoco.MjModel.from_xml_string(xml)  # the same model compiled again: its data never sees the gains
    for data in (mujoco.MjData(twin), mujoco.MjData(mujoco.MjModel.from_xml_string('<mujoco/>'))):
        with pytest.raises(ValueError, match="data must be the MjData of the controller's own model"):
            controller.write(data, [JointCommand(stiffness=1.0)])
    controller.write(mujoco.MjData(m), [JointCommand(stiffness=1.0)])
