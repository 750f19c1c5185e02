"""physai.engine.bodies: what a 3D view needs from MuJoCo, checked against MuJoCo's own poses and renderer scene."""

import mujoco
import numpy as np
import pytest

from physai.engine import bodies, so101


@pytest.fixture(scope='module')
def model():
    return so101.load_so101()


def random_poses(model, count, seed=3):
    """``count`` joint poses drawn inside the joints' ranges."""
    rng = np.random.default_rng(seed)
    low, high = model.jnt_range[:, 0], model.jnt_range[:, 1]
    return low + (high - low) * rng.random((count, model.nq))


def quat_to_mat(quat):
    out = np.empty(9)
    mujoco.mju_quat2Mat(out, np.asarray(quat, dtype=np.float64))
    return out.reshape(3, 3)


def read_stl(path):
    """A binary STL's triangles, (ntri, 3, 3) float32: an 80-byte header, a count, then 50-byte records (normal,
    three vertices, two attribute bytes)."""
    raw = path.read_bytes()
    count = int(np.frombuffer(raw, np.uint32, 1, 80)[0])
    records = np.frombuffer(raw, np.dtype([('n', '<f4', 3), ('v', '<f4', (3, 3)), ('a', '<u2')]), count, 84)
    return records['v']


def test_the_so101_shows_its_18_visual_meshes_and_hides_its_collision_geoms(model):
    shown = bodies.visual_geoms(model)
    assert len(shown) == 18
    assert all(int(model.geom_group[g.geom]) == 2 for g in shown)
    assert {int(model.geom_group[g]) for g in range(model.ngeom)} - set(bodies.shown_groups()) == {3, 4}
    assert len({g.mesh for g in shown}) == 14  # the servo's mesh rides on five bodies


def test_geom_pose_is_its_body_pose_times_its_compiled_placement(model):
    """geom_xpos = xpos + xmat geom_pos and geom_xmat = xmat mat(geom_quat), for every shown geom and frame."""
    data = mujoco.MjData(model)
    poses = random_poses(model, 5)
    xpos, xquat = bodies.body_poses(model, poses)
    for frame, qpos in enumerate(poses):
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        for geom in bodies.visual_geoms(model):
            body_mat = quat_to_mat(xquat[frame, geom.body])
            np.testing.assert_allclose(xpos[frame, geom.body] + body_mat @ geom.pos, data.geom_xpos[geom.geom],
                                       rtol=0, atol=1e-15)
            np.testing.assert_allclose(body_mat @ quat_to_mat(geom.quat), data.geom_xmat[geom.geom].reshape(3, 3),
                                       rtol=0, atol=1e-15)


def test_body_poses_are_those_of_a_full_forward_pass(model):
    """mj_kinematics alone gives the xpos/xquat that mj_forward gives."""
    data = mujoco.MjData(model)
    poses = random_poses(model, 3, seed=5)
    xpos, xquat = bodies.body_poses(model, poses)
    for frame, qpos in enumerate(poses):
        data.qpos[:] = qpos
        mujoco.mj_forward(model, data)
        np.testing.assert_array_equal(xpos[frame], data.xpos)
        np.testing.assert_array_equal(xquat[frame], data.xquat)
    one_xpos, _ = bodies.body_poses(model, poses[0])
    assert one_xpos.shape == (1, model.nbody, 3)


def test_compiled_mesh_frame_is_folded_into_the_compiled_geom_placement(model):
    """MuJoCo re-centres each mesh (mesh_vert in the mesh's own frame) and moves the offset into geom_pos/quat: the
    STL file's vertices placed by the MJCF's pos/quat land where the compiled vertices placed by the compiled
    geom_pos/quat land, and the file's vertices placed by the compiled placement do not."""
    spec = mujoco.MjSpec.from_file(str(so101.folder() / 'so101.xml'))
    plate = next(g for g in bodies.visual_geoms(model) if model.mesh(g.mesh).name == 'waveshare_mounting_plate_so101_v2')
    written = next(g for g in spec.geoms if g.meshname == 'waveshare_mounting_plate_so101_v2')
    quat = np.array(written.quat, dtype=np.float64)
    quat /= np.linalg.norm(quat)  # the MJCF writes quat="1 1 1 1"; MuJoCo normalises it
    raw = read_stl(so101.folder() / 'assets' / 'waveshare_mounting_plate_so101_v2.stl').reshape(-1, 3)
    raw_in_body = np.array(written.pos) + raw.astype(np.float64) @ quat_to_mat(quat).T
    vert, _ = bodies.mesh_geometry(model, plate.mesh)
    compiled_in_body = np.array(plate.pos) + vert.astype(np.float64) @ quat_to_mat(plate.quat).T
    nearest = np.min(np.linalg.norm(compiled_in_body[:, None] - raw_in_body[None], axis=2), axis=1)
    assert nearest.max() < 1e-7  # m: float32 vertices, 0.1 um
    wrong = np.array(plate.pos) + raw.astype(np.float64) @ quat_to_mat(plate.quat).T
    misplaced = np.min(np.linalg.norm(wrong[:, None] - raw_in_body[None], axis=2), axis=1)
    assert misplaced.max() > 1e-3  # m: the offset is millimetres, so a viewer that mixed the two would show it


def test_colours_are_those_mujoco_s_renderer_draws(model):
    """mjv_updateScene (no GL needed) lists the geoms MuJoCo's renderer draws, with their colours."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    scene = mujoco.MjvScene(model, maxgeom=200)
    mujoco.mjv_updateScene(model, data, mujoco.MjvOption(), None, mujoco.MjvCamera(), mujoco.mjtCatBit.mjCAT_ALL,
                           scene)
    drawn = {int(scene.geoms[i].objid): np.array(scene.geoms[i].rgba) for i in range(scene.ngeom)
             if scene.geoms[i].objtype == mujoco.mjtObj.mjOBJ_GEOM}
    shown = bodies.visual_geoms(model)
    assert set(drawn) == {g.geom for g in shown}
    for geom in shown:
        np.testing.assert_allclose(geom.rgba, drawn[geom.geom], rtol=0, atol=1e-7)
    colours = {tuple(np.round(g.rgba, 6)) for g in shown}  # mat_rgba is float32
    assert colours == {(1.0, 0.82, 0.12, 1.0), (0.1, 0.1, 0.1, 1.0)}  # yellow parts, black servos


def test_an_explicit_geom_rgba_takes_precedence_over_the_material():
    model = mujoco.MjModel.from_xml_string("""
        <mujoco><asset><material name="red" rgba="1 0 0 1"/>
          <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/></asset>
          <worldbody><body><geom type="mesh" mesh="tet" material="red"/>
            <geom type="mesh" mesh="tet" material="red" rgba="0 0 1 1"/></body></worldbody></mujoco>""")
    assert [g.rgba for g in bodies.visual_geoms(model)] == [(1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)]


def test_a_shown_geom_that_is_not_a_mesh_is_refused_not_silently_dropped():
    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><geom name="floor" type="box" size="1 1 .1"/>'
                                           '</worldbody></mujoco>')
    with pytest.raises(ValueError, match='geom 0 \\(floor\\) must be a mesh .* got mjGEOM_BOX in shown group 0'):
        bodies.visual_geoms(model)


def test_the_page_s_mesh_free_arm_has_the_same_bodies(model):
    """The live panels run the mesh-free arm: its xpos/xquat index the same bodies as the meshed one's."""
    free = so101.load_mesh_free()
    assert [free.body(i).name for i in range(free.nbody)] == [model.body(i).name for i in range(model.nbody)]
    poses = random_poses(model, 2)
    for meshed, light in zip(bodies.body_poses(model, poses), bodies.body_poses(free, poses)):
        np.testing.assert_array_equal(meshed, light)


def test_mesh_geometry_is_mujoco_s_compiled_mesh(model):
    vert, face = bodies.mesh_geometry(model, 1)
    assert vert.shape == (model.mesh_vertnum[1], 3) and face.shape == (model.mesh_facenum[1], 3)
    assert vert.dtype == np.float32 and face.dtype == np.int32
    assert face.min() == 0 and face.max() == len(vert) - 1
    with pytest.raises(ValueError, match=f'mesh must be a mesh id in \\[0, {model.nmesh}\\), got 99'):
        bodies.mesh_geometry(model, 99)


def test_frames_sampled_at_a_display_rate_hold_the_last_sample():
    time = np.arange(0, 1.0005, 0.001)  # a 1 kHz run of 1 s
    shown = bodies.sample_frames(time, 30)
    assert len(shown) == 31
    np.testing.assert_array_equal(shown, [k * 1000 // 30 for k in range(31)])  # sample i is at i ms
    assert np.all(time[shown] <= np.arange(31) / 30 + 1e-12)
    np.testing.assert_array_equal(bodies.sample_frames([0.0, 0.5, 2.5], 1), [0, 1, 1])
    with pytest.raises(ValueError, match='fps must be a finite number > 0 frames/s, got 0'):
        bodies.sample_frames(time, 0)
    with pytest.raises(ValueError, match='time must be a nonempty, finite, nondecreasing'):
        bodies.sample_frames([0.0, 1.0, 0.5], 30)


def test_magnified_excursion_is_the_excursion_times_the_factor(model):
    reference = random_poses(model, 1, seed=1)[0] * 0.1
    poses = reference + 0.001 * np.arange(3)[:, None]
    magnified = bodies.magnify(model, poses, reference, 20)
    np.testing.assert_allclose(magnified - reference, 20 * (poses - reference), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(bodies.magnify(model, reference, reference, 20), reference)
    with pytest.raises(ValueError, match='factor must be a finite number > 0, got -1'):
        bodies.magnify(model, poses, reference, -1)
    with pytest.raises(ValueError, match='reference must have shape \\(nq,\\) with nq = 6'):
        bodies.magnify(model, poses, poses, 2)


def test_a_free_joint_cannot_be_magnified_in_joint_space():
    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><freejoint/><geom size=".1"/></body>'
                                           '</worldbody></mujoco>')
    with pytest.raises(ValueError, match='model must have only hinge and slide joints'):
        bodies.magnify(model, np.zeros(7), np.zeros(7), 2)


def test_poses_of_the_wrong_shape_are_refused(model):
    with pytest.raises(ValueError, match='qpos must have shape \\(nq,\\) or \\(nframe, nq\\) with nq = 6'):
        bodies.body_poses(model, np.zeros((2, 5)))
    with pytest.raises(ValueError, match='qpos must be finite'):
        bodies.body_poses(model, np.full(6, np.nan))
