"""The SO-101 model from MuJoCo Menagerie and the servo constants the book quotes from it."""

import os
import pathlib
import re
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


def menagerie_copy(root: pathlib.Path, edit) -> pathlib.Path:
    """A Menagerie folder at ``root`` whose robotstudio_so101 XML files are Menagerie's run through ``edit`` (text to
    text); the meshes are the shipped ones, linked."""
    folder = so101.folder()
    copy = root / 'robotstudio_so101'
    copy.mkdir(parents=True)
    for name in ('so101.xml', 'scene.xml'):
        (copy / name).write_text(edit((folder / name).read_text()))
    (copy / 'assets').symlink_to(folder / 'assets')
    return root


def renamed_wrist_roll(text: str) -> str:
    return text.replace('"wrist_roll"', '"wrist_rotate"')


def without_wrist_roll(text: str) -> str:
    text = re.sub(r'\s*<joint axis="0 0 1" name="wrist_roll"[^>]*/>', '', text)
    return re.sub(r'\s*<position class="sts3215" name="wrist_roll"[^>]*/>', '', text)


def swapped_actuators(text: str) -> str:
    """The elbow's actuator listed before the shoulder's: every name there, the ctrl columns in another order."""
    lines = text.splitlines(keepends=True)
    lift = next((i for i, line in enumerate(lines) if '<position class="sts3215" name="shoulder_lift"' in line), None)
    if lift is not None:  # so101.xml; scene.xml includes it
        lines[lift], lines[lift + 1] = lines[lift + 1], lines[lift]
    return ''.join(lines)


@pytest.mark.parametrize('edit, words', [
    (renamed_wrist_roll, ['joints shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, wrist_rotate, gripper']),
    (without_wrist_roll, ['joints shoulder_pan, shoulder_lift, elbow_flex, wrist_flex, gripper and']),
    (swapped_actuators, ['actuators shoulder_pan, elbow_flex, shoulder_lift']),
])
def test_a_model_with_other_joints_or_actuators_is_refused_by_name(tmp_path, edit, words):
    """A Menagerie copy with other joint names or without wrist_roll ended fit-servo in a KeyError or an IndexError;
    actuators in another order would have driven one joint with another's command."""
    root = menagerie_copy(tmp_path, edit)
    m = mujoco.MjModel.from_xml_path(str(root / 'robotstudio_so101' / 'so101.xml'))
    with pytest.raises(so101.ModelUnavailable) as err:
        so101.check_model(m)
    message = str(err.value)
    assert message.startswith('the SO-101 model must have the hinge joints shoulder_pan, shoulder_lift, elbow_flex, '
                              'wrist_flex, wrist_roll, gripper in this order, each driven by an actuator of its name')
    assert all(w in message for w in words) and 'set MENAGERIE_ROOT to an unchanged copy' in message, message
    assert so101.check_model(so101.load_so101()) is not None


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


def test_on_colab_a_failed_download_gives_colabs_own_advice(monkeypatch):
    """On Colab there is no ../shared/menagerie beside the notebook: the advice is about the download and the
    runtime, not about MENAGERIE_ROOT."""
    import sys
    import types
    import mujoco_menagerie

    def offline(*_args, **_kwargs):
        raise mujoco_menagerie.DownloadError('https://example.invalid: Name or service not known')

    monkeypatch.delenv('MENAGERIE_ROOT', raising=False)
    monkeypatch.setattr(so101, '_SHARED_MENAGERIE', pathlib.Path('/nonexistent'))
    monkeypatch.setattr(mujoco_menagerie, 'load', offline)
    monkeypatch.setitem(sys.modules, 'google.colab', types.ModuleType('google.colab'))
    so101._load.cache_clear()
    try:
        with pytest.raises(so101.ModelUnavailable) as err:
            so101.load_so101()
    finally:
        so101._load.cache_clear()
    message = str(err.value)
    assert 'the download failed' in message and 'On Colab' in message and 'Disconnect and delete runtime' in message
    assert 'MENAGERIE_ROOT' not in message and 'shared/menagerie' not in message


# --- the mesh-free model (load_mesh_free): MuJoCo's meshed model is the oracle ----------------------------

@pytest.fixture(scope='module')
def mesh_free():
    return so101.load_mesh_free()


def _forward(m, q):
    d = mujoco.MjData(m)
    d.qpos[:] = q
    mujoco.mj_forward(m, d)
    return d


def test_mesh_free_model_drops_the_visual_meshes_only(model, mesh_free):
    """No visual mesh is left (they take part in no collision); the gripper's three collision meshes stay; the
    copy is a few percent of the shipped model's size."""
    def visual_meshes(m):
        return sum(1 for i in range(m.ngeom) if m.geom_type[i] == mujoco.mjtGeom.mjGEOM_MESH
                   and not (m.geom_contype[i] or m.geom_conaffinity[i]))

    def size(m):
        return sum(getattr(m, f).nbytes for f in dir(m) if isinstance(getattr(m, f, None), np.ndarray))

    assert visual_meshes(model) > 0 and visual_meshes(mesh_free) == 0
    assert mesh_free.nmesh == 3
    assert size(mesh_free) < 0.05 * size(model)
    assert [mesh_free.joint(i).name for i in range(mesh_free.njnt)] == list(so101.JOINTS)
    assert so101.load_mesh_free() is not so101.load_mesh_free()  # a fresh copy each time


def test_mesh_free_model_has_the_meshed_inertia_gravity_and_kinematics(model, mesh_free):
    """Every body keeps its mass and inertia (the camera mount's came from its visual mesh): the same mass
    matrix, gravity and bias forces and site positions as the shipped model at any pose, to the last bit."""
    np.testing.assert_array_equal(mesh_free.body_mass, model.body_mass)
    np.testing.assert_array_equal(mesh_free.body_inertia, model.body_inertia)
    np.testing.assert_array_equal(mesh_free.dof_M0, model.dof_M0)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(model.jnt_range[:, 0], model.jnt_range[:, 1])
        v = rng.uniform(-3, 3, size=model.nv)
        full, free = _forward(model, q), _forward(mesh_free, q)
        full.qvel[:] = free.qvel[:] = v
        mujoco.mj_forward(model, full)
        mujoco.mj_forward(mesh_free, free)
        full_m, free_m = np.zeros((model.nv, model.nv)), np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, full, full_m)
        mujoco.mj_fullM(mesh_free, free, free_m)
        np.testing.assert_array_equal(free_m, full_m)
        np.testing.assert_array_equal(free.qfrc_bias, full.qfrc_bias)  # gravity and Coriolis
        np.testing.assert_array_equal(free.site_xpos, full.site_xpos)


def test_mesh_free_model_has_the_meshed_contacts_where_the_jaw_meshes_touch(model, mesh_free):
    """At a pose where the gripper's collision meshes touch, the mesh-free model finds the same contacts and
    the same accelerations; dropping those meshes too (collision_meshes=False) would lose contacts."""
    q = [1.571, -0.337, 1.083, 1.311, -1.502, -0.112]  # jaw folded into the wrist: 4 of 5 contacts on meshes
    full, free = _forward(model, q), _forward(mesh_free, q)
    meshes = [c for c in full.contact.geom[:full.ncon]
              if mujoco.mjtGeom.mjGEOM_MESH in (model.geom_type[c[0]], model.geom_type[c[1]])]
    assert len(meshes) >= 1
    assert free.ncon == full.ncon
    np.testing.assert_array_equal(np.sort(free.contact.dist[:free.ncon]), np.sort(full.contact.dist[:full.ncon]))
    np.testing.assert_array_equal(free.qacc, full.qacc)
    bare = _forward(so101.load_mesh_free(collision_meshes=False), q)
    assert bare.ncon < full.ncon


def test_mesh_free_model_steps_the_meshed_trajectory_bit_for_bit(model, mesh_free):
    """Menagerie's servos stepping every joint 0.5 rad from the home pose for 2 s: the same qpos at every step."""
    full, free = mujoco.MjData(model), mujoco.MjData(mesh_free)
    full.ctrl[:] = free.ctrl[:] = 0.5
    for _ in range(400):
        mujoco.mj_step(model, full)
        mujoco.mj_step(mesh_free, free)
        np.testing.assert_array_equal(free.qpos, full.qpos)


def test_a_missing_model_is_reported_by_the_mesh_free_loader_too(monkeypatch):
    import mujoco_menagerie

    class Offline:
        def spec(self, *_args, **_kwargs):
            raise mujoco_menagerie.DownloadError('https://example.invalid: Name or service not known')

    monkeypatch.delenv('MENAGERIE_ROOT', raising=False)
    monkeypatch.setattr(so101, '_SHARED_MENAGERIE', pathlib.Path('/nonexistent'))
    monkeypatch.setattr(mujoco_menagerie, 'get', lambda _name: Offline())
    so101._mesh_free.cache_clear()
    so101._mesh_free_spec.cache_clear()
    try:
        with pytest.raises(so101.ModelUnavailable, match='the download failed'):
            so101.load_mesh_free()
    finally:
        so101._mesh_free.cache_clear()
        so101._mesh_free_spec.cache_clear()
