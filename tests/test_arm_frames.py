"""physai.interface.arm_frames: the SO-101 rendered by MuJoCo for the notebook, or one line saying why not.

On the book's machines MuJoCo's renderer has a headless OpenGL context (MUJOCO_GL=egl on Mesa, or osmesa with
Debian's libosmesa6); where there is none, these tests check the message and skip the pictures.
"""

import mujoco
import numpy as np
import pytest

from physai.engine import so101
from physai.interface import arm_frames, plots

HOME = np.zeros(6)
TARGET = np.array([0.5, -0.7, 0.6, 0.4, -0.9, 0.3])


@pytest.fixture(scope='module')
def strip():
    """Two frames and a ghost, rendered once for the module (a child Python loads the meshed arm: a few seconds)."""
    made = arm_frames.render_strip(np.stack([HOME, TARGET]), times=[0.0, 1.0], ghost_qpos=np.stack([TARGET, HOME]))
    if made.images is None:
        pytest.skip(made.message)
    return made


def changed(a, b, level=24):
    return (np.abs(a.astype(int) - b.astype(int)).max(axis=-1) > level).mean()


@pytest.mark.slow  # a child Python renders the meshed arm: several seconds a strip
def test_frames_show_the_arm_and_follow_its_pose(strip):
    assert strip.images.shape == (2, 240, 320, 3) and strip.images.dtype == np.uint8
    assert strip.backend in arm_frames.BACKENDS and strip.message is None
    assert strip.times == (0.0, 1.0)
    assert changed(strip.images[0], strip.images[1]) > 0.01  # the two poses differ on screen
    yellow = (strip.images[..., 0] > 150) & (strip.images[..., 1] > 110) & (strip.images[..., 2] < 90)
    assert yellow[0].mean() > 0.01  # the arm's yellow parts are in the picture


@pytest.mark.slow  # a child Python renders the meshed arm: several seconds a strip
def test_the_ghost_is_drawn_over_the_scene(strip):
    plain = arm_frames.render_strip(np.stack([HOME, TARGET]), backends=(strip.backend,))
    assert changed(plain.images[0], strip.images[0]) > 0.005
    assert plain.times is None


@pytest.mark.slow  # a child Python renders the meshed arm: several seconds a strip
def test_magnified_frames_are_the_frames_of_the_magnified_pose(strip):
    small = HOME + 0.01 * (TARGET - HOME)
    magnified = arm_frames.render_strip(small, magnification=100, reference=HOME, backends=(strip.backend,))
    target = arm_frames.render_strip(TARGET, backends=(strip.backend,))
    assert changed(magnified.images[0], target.images[0]) < 0.001  # MuJoCo draws the same pose
    assert changed(magnified.images[0], strip.images[0]) > 0.01  # not the home pose


def test_without_an_opengl_context_there_is_one_line_and_no_images(capsys):
    made = arm_frames.render_strip(HOME, backends=('glx',))  # no X display here to make a GLX context with
    assert made.images is None and made.backend is None
    assert made.message.startswith("No frames of the arm here: MuJoCo's renderer found no OpenGL context (tried "
                                   'MUJOCO_GL=glx')
    assert '\n' not in made.message and 'apt-get install libosmesa6' in made.message
    assert arm_frames.show_strip(made) is None
    assert capsys.readouterr().out == made.message + '\n'


@pytest.mark.slow  # a child Python renders the meshed arm: several seconds a strip
def test_show_strip_draws_the_frames_side_by_side(strip):
    figure = arm_frames.show_strip(strip, title='the arm')
    assert len(figure.axes) == 2 and figure.axes[1].get_title() == 't = 1.00 s'


def test_bad_requests_are_refused_by_name():
    with pytest.raises(ValueError, match='qpos must have shape \\(nq,\\) or \\(nframe, nq\\) with nq = 6'):
        arm_frames.render_strip(np.zeros(5))
    with pytest.raises(ValueError, match='reference must be a \\(6,\\) pose when magnification is not 1'):
        arm_frames.render_strip(HOME, magnification=20)
    with pytest.raises(ValueError, match='width must be an integer in \\[16, 1920\\] px, got 0'):
        arm_frames.render_strip(HOME, width=0)
    with pytest.raises(ValueError, match='ghost_qpos must have the shape of qpos'):
        arm_frames.render_strip(np.stack([HOME, HOME]), ghost_qpos=HOME)
    with pytest.raises(ValueError, match='times must hold one time per frame \\(1\\), got 2'):
        arm_frames.render_strip(HOME, times=[0, 1])


def test_the_renderer_draws_the_bodies_the_3d_view_poses():
    """The scene entry the frames use has the arm's bodies in the same order as the arm the page poses."""
    arm, scene = so101.load_so101(), so101.load_so101('scene')
    assert [scene.body(i).name for i in range(scene.nbody)] == [arm.body(i).name for i in range(arm.nbody)]
    assert scene.nq == arm.nq and np.all(scene.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)


def test_a_view_clip_holds_mujoco_s_body_poses_at_the_frames_shown():
    model = so101.load_mesh_free(collision_meshes=False)
    time = np.arange(0, 1.0005, 0.005)
    qpos = np.outer(time, TARGET)
    clip = arm_frames.view_clip(time, qpos, fps=10, ghost_qpos=qpos[::-1])
    assert clip['time'] == [round(0.1 * k, 12) for k in range(11)] or np.allclose(clip['time'], np.arange(11) / 10)
    shown = np.rint(np.array(clip['time']) / 0.005).astype(int)
    data = mujoco.MjData(model)
    for i, step in enumerate(shown):
        data.qpos[:] = qpos[step]
        mujoco.mj_forward(model, data)
        np.testing.assert_array_equal(np.array(clip['xpos']).reshape(-1, model.nbody, 3)[i], data.xpos)
        np.testing.assert_array_equal(np.array(clip['xquat']).reshape(-1, model.nbody, 4)[i], data.xquat)
    assert len(clip['ghost']['xpos']) == len(clip['xpos'])
    with pytest.raises(ValueError, match='qpos must have one row per time \\(201\\), got 2'):
        arm_frames.view_clip(time, qpos[:2])


def sanitized(text: str) -> str:
    """``text`` as nbval compares it: notebooks/nbval_sanitize.cfg's arm-frames section applied."""
    import configparser
    import pathlib
    import re
    config = configparser.ConfigParser()
    config.read(pathlib.Path(__file__).resolve().parents[1] / 'notebooks' / 'nbval_sanitize.cfg')
    return re.sub(config['arm-frames']['regex'], config['arm-frames']['replace'], text)


def test_a_notebook_shows_the_same_kinds_of_output_with_or_without_opengl():
    """A StripView gives a picture and one line with or without frames, and the line compares equal after nbval's
    sanitizing: a chapter stored on a machine with OpenGL re-executes on one without, and back."""
    images = np.zeros((4, 24, 32, 3), np.uint8)
    with_gl = arm_frames.StripView(strip=arm_frames.Strip(images=images, times=(0.0, 0.1, 0.0, 0.1), backend='egl',
                                                          message=None), title='The SO-101', rows=('in-loop', 'in-step'))
    none = arm_frames.render_strip(HOME, backends=('glx',))
    without = arm_frames.StripView(strip=none, title='The SO-101', rows=('in-loop', 'in-step'))
    (a, a_meta), (b, b_meta) = with_gl._repr_mimebundle_(), without._repr_mimebundle_()
    assert a.keys() == b.keys() == {'image/png', 'text/plain'}
    for meta in (a_meta, b_meta):  # the text record the site test reads: no text under the book's minimum
        assert meta['image/png'][plots.METADATA_KEY]['min_font_pt'] >= plots.MIN_FONT_PT
    assert a['image/png'].startswith(b'\x89PNG') and b['image/png'].startswith(b'\x89PNG')
    assert a['text/plain'] != b['text/plain'] and none.message in b['text/plain']
    assert sanitized(a['text/plain']) == sanitized(b['text/plain']) == 'The SO-101 [frames: MACHINE]'
    assert len(with_gl.figure().axes) == 4 and with_gl.figure().axes[2].get_ylabel() == 'in-step'
    with pytest.raises(ValueError, match='rows must divide the strip\'s 4 frames evenly, got 3 rows'):
        arm_frames.StripView(strip=with_gl.strip, title='x', rows=('a', 'b', 'c'))
