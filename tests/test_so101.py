"""The SO-101 model from MuJoCo Menagerie and the servo constants the book quotes from it."""

import os
import pathlib
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from physai.engine import so101


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


def test_a_missing_model_is_one_line_and_exit_2():
    """Offline without Menagerie the command line says what is missing and how to fix it, nothing more."""
    env = {**os.environ, 'MENAGERIE_ROOT': '/nonexistent'}
    done = subprocess.run([sys.executable, '-m', 'physai', 'so101'], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert done.stdout == ''
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: the SO-101 model is not available')
    assert 'MENAGERIE_ROOT' in lines[0] and 'network' in lines[0]


def test_a_failed_download_is_reported_as_the_model_being_unavailable(monkeypatch):
    import mujoco_menagerie

    def offline(*_args, **_kwargs):
        raise mujoco_menagerie.DownloadError('https://example.invalid: Name or service not known')

    monkeypatch.delenv('MENAGERIE_ROOT', raising=False)
    monkeypatch.setattr(so101, '_SHARED_MENAGERIE', pathlib.Path('/nonexistent'))
    monkeypatch.setattr(mujoco_menagerie, 'load', offline)
    so101._load.cache_clear()
    try:
        with pytest.raises(so101.ModelUnavailable, match='the download failed'):
            so101.load_so101()
    finally:
        so101._load.cache_clear()
