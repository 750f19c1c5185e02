"""The SO-101 model from MuJoCo Menagerie and the servo constants the book quotes from it."""

import mujoco
import numpy as np
import pytest

from physai import so101


@pytest.fixture(scope='module')
def model():
    return so101.load_so101()


def test_every_joint_carries_menagerie_s_sts3215_servo(model):
    """The constants physai uses everywhere are the compiled model's own numbers, on all six servos."""
    assert model.nu == len(so101.JOINTS)
    for name in so101.JOINTS:
        actuator, joint = model.actuator(name), model.joint(name)
        assert actuator.gainprm[0] == so101.MENAGERIE_KP
        np.testing.assert_array_equal(actuator.biasprm[:3], [0.0, -so101.MENAGERIE_KP, -so101.MENAGERIE_KV])
        np.testing.assert_array_equal(actuator.forcerange,
                                      [-so101.MENAGERIE_FORCERANGE, so101.MENAGERIE_FORCERANGE])
        assert joint.armature[0] == so101.MENAGERIE_ARMATURE
        assert joint.damping[0] == so101.MENAGERIE_DAMPING
        assert joint.frictionloss[0] == so101.MENAGERIE_FRICTIONLOSS


def test_menagerie_runs_implicitfast_at_5_ms(model):
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.timestep == 0.005
