"""The SO-101's frames: a run's poses as the page's 3D view plays them, and as pictures from MuJoCo's own renderer for
the notebook and Colab.

:func:`view_clip` turns a run (times and ``qpos``) into the clip the page's view plays (``Arm3D.setClip``): every
body's ``xpos``/``xquat`` at the frames shown, as MuJoCo computes them.

The published page draws the arm in 3D in the reader's browser (``book/_static/physai-arm3d.js``); a notebook has no
such view, so it shows the same poses as a strip of still frames rendered by ``mujoco.Renderer``: the solid arm, and
optionally a translucent ghost (a second set of poses, e.g. the recorded arm) and a magnification of small motions
about a reference pose (joint space, :func:`physai.engine.bodies.magnify`).

``mujoco.Renderer`` needs an OpenGL context, which a machine without a display has only through a headless backend
chosen by ``MUJOCO_GL`` *before* ``mujoco`` is imported (``egl``: a GPU's driver, or Mesa's; ``osmesa``: Mesa's CPU
renderer, Debian's ``libosmesa6``). A notebook has imported ``mujoco`` long before, so :func:`render_strip` renders in
a child Python with ``MUJOCO_GL`` set, trying ``egl`` then ``osmesa`` (in-process when this process already runs a
headless backend). Where neither gives a context it returns no images and a one-line message, and
:func:`show_strip` prints that line: nothing else breaks. A chapter shows a strip as a :class:`StripView`: the same
two outputs (a picture, one line of text) with or without frames, so its stored outputs do not depend on the machine
that ran it. On the book's machine both work (``egl`` on Mesa's
llvmpipe; ``osmesa`` after ``apt-get install libosmesa6``); a strip of four 320 x 240 frames takes a few seconds,
most of it the child loading the SO-101 with its meshes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from physai.engine import bodies, so101
from physai.interface import plots
from physai.laws import checks


BACKENDS = ('egl', 'osmesa')
"""The headless ``MUJOCO_GL`` backends tried, in order."""
GHOST_RGBA = (0.23, 0.51, 0.84, 0.35)
"""The ghost arm's colour and opacity (the 3D view's ``GHOST``)."""
CAMERA = {'azimuth': -30.0, 'elevation': -20.0, 'distance': 0.55, 'lookat': (0.08, 0.0, 0.12)}
"""MuJoCo's free camera (degrees, m) seeing the arm from where the page's view starts (its azimuth 150, elevation
20: MuJoCo gives the direction the camera looks, the page the direction it sits)."""
MAX_SIZE = 1920
"""px: the largest frame side :func:`render_strip` accepts."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Strip:
    """A strip of rendered frames, or the one-line reason there is none."""

    images: np.ndarray | None
    """(nframe, height, width, 3) uint8 RGB, or None without an OpenGL context."""
    times: tuple[float, ...] | None
    """Each frame's time, s, when given."""
    backend: str | None
    """The ``MUJOCO_GL`` backend that rendered it."""
    message: str | None
    """Why there are no images (one line), or None."""


def _render(qpos: np.ndarray, ghost: np.ndarray | None, width: int, height: int, camera: dict) -> np.ndarray:
    """Render in this process (its ``mujoco`` must run a headless backend)."""
    import mujoco

    model = so101.load_so101('scene')  # Menagerie's scene: the arm with a floor, a light and a sky
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    data, ghost_data = mujoco.MjData(model), mujoco.MjData(model)
    view = mujoco.MjvCamera()
    view.type = mujoco.mjtCamera.mjCAMERA_FREE
    view.azimuth, view.elevation, view.distance = camera['azimuth'], camera['elevation'], camera['distance']
    view.lookat[:] = camera['lookat']
    option = mujoco.MjvOption()
    renderer = mujoco.Renderer(model, height, width)
    try:
        frames = []
        for i, pose in enumerate(qpos):
            data.qpos[:] = pose
            mujoco.mj_forward(model, data)
            renderer.update_scene(data, view, option)
            if ghost is not None:
                ghost_data.qpos[:] = ghost[i]
                mujoco.mj_forward(model, ghost_data)
                first = renderer.scene.ngeom
                mujoco.mjv_addGeoms(model, ghost_data, option, mujoco.MjvPerturb(), mujoco.mjtCatBit.mjCAT_DYNAMIC,
                                    renderer.scene)
                for g in range(first, renderer.scene.ngeom):
                    renderer.scene.geoms[g].rgba[:] = GHOST_RGBA
            frames.append(renderer.render().copy())
        return np.stack(frames)
    finally:
        renderer.close()


def _in_child(backend: str, qpos, ghost, width, height, camera) -> np.ndarray:
    """Render in a child Python with ``MUJOCO_GL=backend``; raises RuntimeError with its last line on failure."""
    with tempfile.TemporaryDirectory(prefix='physai-frames-') as folder:
        job = os.path.join(folder, 'job.npz')
        out = os.path.join(folder, 'frames.npy')
        np.savez(job, qpos=qpos, ghost=np.zeros((0,)) if ghost is None else ghost,
                 spec=np.frombuffer(json.dumps({'width': width, 'height': height, 'camera': camera}).encode(), np.uint8))
        env = dict(os.environ, MUJOCO_GL=backend)
        env.pop('PYOPENGL_PLATFORM', None)  # mujoco.egl / mujoco.osmesa set the one they need
        done = subprocess.run([sys.executable, '-m', 'physai.interface.arm_frames', job, out], env=env,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
            raise RuntimeError(lines[-1] if lines else f'exit status {done.returncode}')
        return np.load(out)


def render_strip(qpos, *, times=None, ghost_qpos=None, magnification: float = 1.0, reference=None,
                 width: int = 320, height: int = 240, camera: dict | None = None,
                 backends: tuple[str, ...] = BACKENDS) -> Strip:
    """The SO-101 at each pose of ``qpos``, rendered by MuJoCo, or the one-line reason it cannot be.

    Args:
        qpos: (nframe, 6) joint positions of the SO-101 (rad), e.g. a run's ``qpos`` at
            :func:`physai.engine.bodies.sample_frames`; or (6,) for one frame.
        times: (nframe,) the frames' times, s, for their titles.
        ghost_qpos: (nframe, 6) poses of a translucent ghost arm drawn with the solid one (e.g. the recording).
        magnification: excursions from ``reference`` scaled by this (joint space; 1 shows the poses as they are).
        reference: (6,) the pose excursions are magnified about; needed when ``magnification`` is not 1.
        width, height: each frame's size, px.
        camera: MuJoCo free camera ``azimuth``, ``elevation`` (degrees), ``distance`` (m), ``lookat`` (m);
            default :data:`CAMERA`.
        backends: ``MUJOCO_GL`` backends to try in a child Python, in order.

    Returns:
        a :class:`Strip`; ``images`` None and ``message`` set where no backend gives an OpenGL context.
    """
    model = so101.load_mesh_free(collision_meshes=False)  # the same joints, to check the poses against
    frames = bodies.as_frames(model, qpos)
    ghost = None if ghost_qpos is None else bodies.as_frames(model, ghost_qpos, 'ghost_qpos')
    if ghost is not None and ghost.shape != frames.shape:
        raise ValueError(f'ghost_qpos must have the shape of qpos, {frames.shape}, got {ghost.shape}')
    if magnification != 1:
        if reference is None:
            raise ValueError('reference must be a (6,) pose when magnification is not 1, got None')
        frames = bodies.magnify(model, frames, reference, magnification)
        ghost = None if ghost is None else bodies.magnify(model, ghost, reference, magnification)
    if times is not None:
        times = tuple(float(t) for t in np.atleast_1d(times))
        if len(times) != len(frames):
            raise ValueError(f'times must hold one time per frame ({len(frames)}), got {len(times)}')
    for name, size in (('width', width), ('height', height)):
        if not (isinstance(size, (int, np.integer)) and 16 <= size <= MAX_SIZE):
            raise ValueError(f'{name} must be an integer in [16, {MAX_SIZE}] px, got {size!r}')
    view = dict(CAMERA, **(camera or {}))
    view['lookat'] = [checks.finite('camera lookat', float(x), 'm') for x in view['lookat']]

    if os.environ.get('MUJOCO_GL', '').lower() in BACKENDS and 'mujoco' in sys.modules:
        try:
            images = _render(frames, ghost, int(width), int(height), view)
            return Strip(images=images, times=times, backend=os.environ['MUJOCO_GL'].lower(), message=None)
        except Exception as err:  # noqa: BLE001 - a failed context is reported, never raised
            tried = [f'MUJOCO_GL={os.environ["MUJOCO_GL"]} in this process ({type(err).__name__}: {err})']
    else:
        tried = []
    for backend in backends:
        try:
            images = _in_child(backend, frames, ghost, int(width), int(height), view)
            return Strip(images=images, times=times, backend=backend, message=None)
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as err:
            tried.append(f'MUJOCO_GL={backend} ({str(err)[:120]})')
    return Strip(images=None, times=times, backend=None, message=(
        'No frames of the arm here: MuJoCo\'s renderer found no OpenGL context (tried '
        f'{"; ".join(tried) or "no backend"}); on Linux or Colab, `apt-get install libosmesa6` gives one.'))


def show_strip(strip: Strip, *, title: str | None = None):
    """Draw ``strip``'s frames side by side (matplotlib), each titled with its time; or print its one-line message.

    Returns:
        the matplotlib Figure, or None when there are no images.
    """
    if strip.images is None:
        print(strip.message)
        return None
    import matplotlib.pyplot as plt

    count = len(strip.images)
    height, width = strip.images.shape[1:3]
    figure, axes = plt.subplots(1, count, figsize=(2.4 * count, 2.4 * height / width + (0.5 if title else 0.25)),
                                squeeze=False)
    for i, ax in enumerate(axes[0]):
        ax.imshow(strip.images[i])
        ax.set_axis_off()
        if strip.times is not None:
            ax.set_title(f't = {strip.times[i]:.2f} s', fontsize=9)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    return figure


FRAMES_TAG = '[frames: '
"""The start of a :class:`StripView`'s text: what follows it, to the line's last ``]``, says whether this machine rendered
the frames or why it could not (its OpenGL context, machine by machine), so the stored notebooks leave it out of
nbval's comparison (``notebooks/nbval_sanitize.cfg``, section ``arm-frames``)."""


WIDTH_IN = plots.BOOK_STYLE['figure.figsize'][0]
"""A strip's width (in): the book's figures' (8.4 in), so at 100 dpi in the page's 688 px column its 9 pt text shows
at 10.2 px, the book's minimum or more (``tests/test_site.py``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class StripView:
    """What a notebook cell shows of a :class:`Strip`: one picture and one line of text, the same two outputs with
    or without an OpenGL context. The picture is the frames in ``rows`` rows (each row titled), or, without frames, the
    one-line message drawn as text; the text is ``title [frames: ...]`` with the backend or that message. So a
    notebook stored on a machine with OpenGL re-executes on one without (and back) with the same kinds of output, and
    only the bracket differs (the picture is not compared)."""

    strip: Strip
    title: str
    rows: tuple[str, ...] = ()
    """One title per row of frames (the frames fill the rows in order); empty: one row, untitled."""

    def __post_init__(self):
        if self.strip.images is not None and self.rows and len(self.strip.images) % len(self.rows):
            raise ValueError(f'rows must divide the strip\'s {len(self.strip.images)} frames evenly, got '
                             f'{len(self.rows)} rows')

    def text(self) -> str:
        """``title [frames: N rendered by MuJoCo (MUJOCO_GL=backend)]``, or the message in the bracket."""
        if self.strip.images is None:
            return f'{self.title} {FRAMES_TAG}{self.strip.message}]'
        return f'{self.title} {FRAMES_TAG}{len(self.strip.images)} rendered by MuJoCo (MUJOCO_GL={self.strip.backend})]'

    def figure(self):
        """The picture as a matplotlib Figure of its own (not pyplot's, so a notebook does not show it twice)."""
        from matplotlib.figure import Figure

        if self.strip.images is None:
            import textwrap
            lines = textwrap.wrap(self.strip.message, 110)
            figure = Figure(figsize=(WIDTH_IN, 0.5 + 0.22 * len(lines)))
            figure.text(0.01, 0.5, '\n'.join([self.title] + lines), va='center', fontsize=9, family='sans-serif')
            return figure
        images = self.strip.images
        nrow = max(1, len(self.rows))
        ncol = len(images) // nrow
        height, width = images.shape[1:3]
        side = WIDTH_IN / ncol  # the strip as wide as the book's figures, so its text reads as theirs
        figure = Figure(figsize=(WIDTH_IN, nrow * (side * height / width + 0.3) + 0.4))
        axes = figure.subplots(nrow, ncol, squeeze=False)
        for i, ax in enumerate(axes.ravel()):
            ax.imshow(images[i])
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
            if self.strip.times is not None:
                ax.set_title(f't = {self.strip.times[i]:.2f} s', fontsize=9)
            if self.rows and i % ncol == 0:
                ax.set_ylabel(self.rows[i // ncol], fontsize=9)
        figure.suptitle(self.title, fontsize=10)
        figure.tight_layout()
        return figure

    def png(self) -> tuple[bytes, dict]:
        """The picture as PNG bytes, and its text record (:func:`physai.interface.plots.text_metadata`: its smallest
        font and size, which the site test turns into the text size a reader sees)."""
        import io
        figure = self.figure()
        plots.lift_small_text(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format='png', dpi=100)
        return buffer.getvalue(), {plots.METADATA_KEY: plots.text_metadata(figure)}

    def _repr_mimebundle_(self, include=None, exclude=None):
        png, record = self.png()
        return {'image/png': png, 'text/plain': self.text()}, {'image/png': record}


def view_clip(time, qpos, *, fps: float = 30.0, ghost_qpos=None, model=None) -> dict:
    """A run as the page's 3D view plays it (``Arm3D.setClip`` of ``book/_static/physai-arm3d.js``): its samples
    at ``fps`` frames per second (:func:`physai.engine.bodies.sample_frames`) and every body's pose at each, as
    MuJoCo computes it (:func:`physai.engine.bodies.body_poses`), flat, JSON-ready.

    Args:
        time: (nstep,) the run's sample times, s.
        qpos: (nstep, nq) its joint positions.
        fps: frames per second of the clip.
        ghost_qpos: (nstep, nq) the ghost arm's joint positions at the same times (e.g. the recording), or None.
        model: the arm's model; by default the SO-101 without visual meshes (the same bodies, quicker to load).

    Returns:
        ``{'time': [nframe], 'xpos': [nframe * nbody * 3], 'xquat': [nframe * nbody * 4]}``, plus ``'ghost':
        {'xpos', 'xquat'}`` with a ghost; floats as MuJoCo computed them (m; w, x, y, z).
    """
    model = so101.load_mesh_free(collision_meshes=False) if model is None else model
    shown = bodies.sample_frames(time, fps)
    q = bodies.as_frames(model, qpos)
    if len(q) != len(np.atleast_1d(time)):
        raise ValueError(f'qpos must have one row per time ({len(np.atleast_1d(time))}), got {len(q)}')
    xpos, xquat = bodies.body_poses(model, q[shown])
    clip = {'time': [float(t) for t in np.asarray(time, dtype=np.float64)[shown]],
            'xpos': xpos.ravel().tolist(), 'xquat': xquat.ravel().tolist()}
    if ghost_qpos is not None:
        ghost = bodies.as_frames(model, ghost_qpos, 'ghost_qpos')
        if ghost.shape != q.shape:
            raise ValueError(f'ghost_qpos must have the shape of qpos, {q.shape}, got {ghost.shape}')
        gpos, gquat = bodies.body_poses(model, ghost[shown])
        clip['ghost'] = {'xpos': gpos.ravel().tolist(), 'xquat': gquat.ravel().tolist()}
    return clip


def _child(job: str, out: str) -> int:
    """``python -m physai.interface.arm_frames JOB.npz OUT.npy``: render a job (the parent sets ``MUJOCO_GL``)."""
    with np.load(job) as saved:
        spec = json.loads(saved['spec'].tobytes().decode())
        ghost = saved['ghost'] if saved['ghost'].size else None
        images = _render(saved['qpos'], ghost, spec['width'], spec['height'], spec['camera'])
    np.save(out, images)
    return 0


if __name__ == '__main__':
    sys.exit(_child(*sys.argv[1:3]))
