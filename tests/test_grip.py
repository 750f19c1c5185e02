"""physai.laws.grip and physai.engine.gripper against MuJoCo: the squeeze, the clamp and the slip."""

import mujoco
import numpy as np
import pytest

from physai.engine import gripper, so101
from physai.laws import grip


@pytest.mark.parametrize('condim', [3, 4, 6])
@pytest.mark.parametrize('mu', [0.3, 1.0])
def test_slip_threshold_matches_friction_cone(condim, mu):
    """A cube squeezed between two flat jaws slips when its load reaches 2·mu·F_n, within 2 % on MuJoCo's soft
    contact (elliptic cone, impratio 10, as Menagerie's SO-101): the soft friction lets it creep before that, but
    the load it carries when it starts to slide is the Coulomb cone's."""
    load, normal = gripper.flat_jaws_slip(mu=mu, condim=condim, squeeze=20.0, mass=0.03)
    assert normal == pytest.approx(20.0, rel=0.01)
    assert load == pytest.approx(grip.hold_load(normal, mu), rel=0.02)


def test_clamped_torque_matches_position_actuator():
    """A <position> servo held off its target pushes with kp·e until forcerange clamps it (actuator_force)."""
    xml = """<mujoco><worldbody><body><joint name="j" range="-0.01 0.01"/><geom size="0.1" mass="1"/></body>
    </worldbody><actuator><position joint="j" kp="{kp}" forcerange="-2.94 2.94"/></actuator></mujoco>"""
    for kp, target in [(10.0, 0.2), (10.0, -0.2), (998.22, 0.2), (998.22, 0.002)]:
        m = mujoco.MjModel.from_xml_string(xml.format(kp=kp))
        d = mujoco.MjData(m)
        d.ctrl[0] = target
        mujoco.mj_forward(m, d)
        assert d.actuator_force[0] == pytest.approx(float(grip.clamped_torque(kp, target - d.qpos[0], 2.94)))


@pytest.mark.parametrize('torque_limit', [2.94, 1.47, 0.955])
def test_so101_jaw_force_is_clamped_torque_over_lever(torque_limit):
    """Menagerie's SO-101 commanded shut on a 24 mm cube: the servo saturates at its forcerange, and the moving
    jaw's normal force (mj_contactForce) is that torque over the jaw's lever within 2 % (the joint's frictionloss,
    0.052 N·m, and the friction forces' moments are the rest); the fixed jaw presses back as hard, within 1 %."""
    run = gripper.grip(gripper.GripSetup(torque_limit=torque_limit), hold=0.5)
    tail = slice(-40, None)
    assert not run.diverged
    assert np.mean(run.torque[tail]) == pytest.approx(-torque_limit, rel=1e-6)
    lever = np.mean(run.lever[tail])
    assert 0.05 < lever < 0.08
    jaw = np.mean(run.jaw_force[tail])
    assert jaw == pytest.approx(float(grip.squeeze_force(torque_limit, lever)), rel=0.02)
    assert np.mean(run.fixed_force[tail]) == pytest.approx(jaw, rel=0.01)


def test_so101_squeeze_scales_with_torque_limit():
    """Halving the torque limit halves the squeeze (the lever does not change), within 2 %."""
    full, half = (np.mean(gripper.grip(gripper.GripSetup(torque_limit=t), hold=0.5).jaw_force[-40:])
                  for t in (2.94, 1.47))
    assert half / full == pytest.approx(0.5, rel=0.02)


def test_so101_holds_light_cube_and_drops_it_without_friction():
    """mu = 1 holds a 30 g cube still (it creeps less than 0.5 mm in 0.5 s); with condim 1 (no friction) it falls."""
    held = gripper.grip(gripper.GripSetup(), hold=0.5)
    assert abs(held.slide[-1]) < 5e-4
    dropped = gripper.grip(gripper.GripSetup(condim=1), hold=0.5)
    assert dropped.slide[-1] > 0.01


def test_laws_by_hand():
    assert grip.saturation_error(998.22, 2.94) == pytest.approx(2.94 / 998.22)
    assert grip.squeeze_force(-2.94, 0.065) == pytest.approx(2.94 / 0.065)
    assert grip.hold_load(10.0, 0.5) == pytest.approx(10.0)
    assert grip.slip_margin(1.0, 10.0, 0.5) == pytest.approx(10.0 / 9.81)
    assert grip.slip_acceleration(1.0, 10.0, 0.5) == pytest.approx(10.0 - 9.81)
    assert grip.torque_limit_register(500, 2.94) == pytest.approx(1.47)
    assert grip.kg_cm(30) == pytest.approx(2.943)


@pytest.mark.parametrize('call, message', [
    (lambda: grip.squeeze_force(1.0, 0), 'lever must be'),
    (lambda: grip.clamped_torque(-1, 0.1, 1), 'kp must be'),
    (lambda: grip.hold_load(-1.0, 0.5), 'normal_force must be >= 0'),
    (lambda: grip.slip_margin(1.0, 1.0, 0.5, acceleration=-20), 'acceleration must be'),
    (lambda: grip.torque_limit_register(1001, 2.94), 'register must be'),
    (lambda: gripper.GripSetup(condim=2), 'condim must be one of'),
    (lambda: gripper.GripSetup(mass=0), 'mass must be'),
    (lambda: gripper.GripSetup(integrator='rk5'), 'integrator must be'),
    (lambda: gripper.grip(hold=0), 'hold must be'),
])
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize('cone', ['elliptic', 'pyramidal'])
def test_cube_contact_forces_are_mj_contactForces(cone):
    """The runner reads each contact's normal force off efc_force under the elliptic cone: it is mj_contactForce's
    first component, contact by contact (and under the pyramidal cone it calls mj_contactForce)."""
    m = gripper.build(gripper.GripSetup())
    if cone == 'pyramidal':
        m.opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL
    d = mujoco.MjData(m)
    for name, angle in gripper.POSE.items():
        d.qpos[m.joint(name).qposadr[0]] = angle
    d.qpos[m.joint('gripper').qposadr[0]] = gripper.OPEN
    d.ctrl[:len(so101.JOINTS)] = [d.qpos[m.joint(name).qposadr[0]] for name in so101.JOINTS]
    d.ctrl[m.actuator('gripper').id] = gripper.CLOSED
    for _ in range(200):
        mujoco.mj_step(m, d)
    cube, jaw, palm = (m.body(n).id for n in ('cube', 'moving_jaw_so101_v1', 'gripper'))
    joint = m.joint('gripper').id
    jaw_n, fixed_n, moment, depth = gripper._cube_contacts(m, d, cube, jaw, palm, joint, np.zeros(6))
    force, by_hand = np.zeros(6), {jaw: 0.0, palm: 0.0}
    for c in range(d.ncon):
        bodies = {m.geom_bodyid[d.contact[c].geom1], m.geom_bodyid[d.contact[c].geom2]}
        if cube in bodies:
            mujoco.mj_contactForce(m, d, c, force)
            for body in (jaw, palm):
                if body in bodies:
                    by_hand[body] += force[0]
    assert jaw_n > 10 and jaw_n == pytest.approx(by_hand[jaw], rel=1e-12)
    assert fixed_n == pytest.approx(by_hand[palm], rel=1e-12)
