"""What a 3D view of a model needs from MuJoCo: each body's pose per frame, and each visible mesh on its body.

A viewer that draws a MuJoCo model needs two things, and this module gives both from the compiled model:

* **once**, the visible geoms (:func:`visual_geoms`): for each, the body it rides on (``geom_bodyid``), its mesh
  (``geom_dataid``), its placement on that body (``geom_pos``, ``geom_quat``) and its colour, and each mesh's
  vertices and faces as MuJoCo compiled them (:func:`mesh_geometry`, ``mesh_vert``/``mesh_face``);
* **per frame**, every body's pose in the world (:func:`body_poses`): ``xpos`` (m) and ``xquat`` (w, x, y, z),
  as ``mj_kinematics`` computes them from ``qpos``.

MuJoCo's compiler moves each mesh into a frame of its own, the frame of the mesh's inertia (origin at the centre
of mass it computes for the mesh, axes along its principal axes): ``mesh_vert`` holds the file's vertices so moved
(``mesh_pos``/``mesh_quat``, in ``mjmodel.h`` "translation/rotation applied to asset vertices"), and the inverse
move is folded into ``geom_pos``/``geom_quat``. So the compiled
``mesh_vert`` placed by the compiled ``geom_pos``/``geom_quat`` on a body at ``xpos``/``xquat`` is exactly where
MuJoCo puts the geom::

    geom_xpos = xpos + xmat @ geom_pos          (m)
    geom_xmat = xmat @ mat(geom_quat)
    world vertex = geom_xpos + geom_xmat @ mesh_vert[v]

and the file's own vertices must not be placed with the compiled ``geom_pos``/``geom_quat``
(``tests/test_bodies.py`` checks both: the formula against ``d.geom_xpos``/``d.geom_xmat``, and the file's STL
vertices placed by the MJCF's ``pos``/``quat`` against the compiled ones). A viewer given :func:`visual_geoms`,
:func:`mesh_geometry` and the bodies' ``xpos``/``xquat`` of each frame therefore draws MuJoCo's own pose, body by
body, with no kinematics of its own.

:func:`magnify` makes small motions visible: it scales each joint's excursion from a reference, in joint space,
so that the magnified arm is still a pose the arm can take (its bodies stay joined).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from physai.laws import checks


DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
"""MuJoCo's default ``geom rgba``; a geom whose rgba differs from it shows that colour, not its material's."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class VisualGeom:
    """One visible mesh geom of a compiled model, placed on its body.

    The geom's world pose is ``xpos[body] + xmat[body] @ pos`` and ``xmat[body] @ mat(quat)`` (MuJoCo's
    ``geom_xpos``, ``geom_xmat``); its vertices are ``mesh_vert`` of ``mesh`` (see the module docstring).
    """

    geom: int
    """Its id in the model (``geom_*`` arrays)."""
    body: int
    """The body it rides on (``geom_bodyid``)."""
    mesh: int
    """Its mesh (``geom_dataid``), an id in the ``mesh_*`` arrays."""
    pos: tuple[float, float, float]
    """Its position in its body's frame (``geom_pos``), m."""
    quat: tuple[float, float, float, float]
    """Its orientation in its body's frame (``geom_quat``), unit quaternion (w, x, y, z)."""
    rgba: tuple[float, float, float, float]
    """The colour MuJoCo draws it in: ``geom_rgba`` when set, else its material's ``mat_rgba``; 0..1."""


def shown_groups() -> tuple[int, ...]:
    """The geom groups MuJoCo's viewer shows by default (``mjvOption.geomgroup``: groups 0, 1 and 2)."""
    return tuple(int(g) for g in np.flatnonzero(mujoco.MjvOption().geomgroup))


def geom_rgba(model: mujoco.MjModel, geom: int) -> tuple[float, float, float, float]:
    """The colour MuJoCo draws geom ``geom`` in.

    MJCF's ``geom rgba``, when it differs from the default (0.5, 0.5, 0.5, 1), takes precedence over the
    material (MuJoCo's XML reference, geom/rgba: https://mujoco.readthedocs.io/en/stable/XMLreference.html);
    otherwise a geom with a material (``geom_matid`` >= 0) shows the material's ``mat_rgba``. ``tests/test_bodies.py``
    checks it against the colours ``mjv_updateScene`` gives the geoms MuJoCo's renderer draws.
    """
    own = tuple(float(c) for c in model.geom_rgba[geom])
    material = int(model.geom_matid[geom])
    if material >= 0 and np.allclose(own, DEFAULT_RGBA, rtol=0, atol=1e-7):
        return tuple(float(c) for c in model.mat_rgba[material])
    return own


def visual_geoms(model: mujoco.MjModel) -> tuple[VisualGeom, ...]:
    """The mesh geoms MuJoCo's viewer shows by default (groups :func:`shown_groups`), in geom order.

    For the SO-101 of MuJoCo Menagerie these are the 18 visual meshes (class ``visual``, group 2); its collision
    boxes (group 3) and gripper collision meshes (group 4) are hidden, as in MuJoCo's viewer. A shown geom that is
    not a mesh (a box, a capsule...) raises, since a mesh viewer would silently leave it out.

    Raises:
        ValueError: if a geom in a shown group is not a mesh.
    """
    groups = shown_groups()
    found = []
    for geom in range(model.ngeom):
        if int(model.geom_group[geom]) not in groups:
            continue
        if model.geom_type[geom] != mujoco.mjtGeom.mjGEOM_MESH:
            kind = mujoco.mjtGeom(int(model.geom_type[geom])).name
            raise ValueError(f'geom {geom} ({model.geom(geom).name or "unnamed"}) must be a mesh to be drawn by a '
                             f'mesh viewer, got {kind} in shown group {int(model.geom_group[geom])}')
        found.append(VisualGeom(
            geom=geom, body=int(model.geom_bodyid[geom]), mesh=int(model.geom_dataid[geom]),
            pos=tuple(float(x) for x in model.geom_pos[geom]), quat=tuple(float(x) for x in model.geom_quat[geom]),
            rgba=geom_rgba(model, geom)))
    return tuple(found)


def mesh_geometry(model: mujoco.MjModel, mesh: int) -> tuple[np.ndarray, np.ndarray]:
    """Mesh ``mesh`` as MuJoCo compiled it: vertices (nvert, 3) float32 in m, in the mesh's own frame (see the module
    docstring), and triangles (nface, 3) int32 indexing them, counter-clockwise seen from outside.

    Raises:
        ValueError: if ``mesh`` is not a mesh id of ``model``.
    """
    if not (isinstance(mesh, (int, np.integer)) and 0 <= mesh < model.nmesh):
        raise ValueError(f'mesh must be a mesh id in [0, {model.nmesh}), got {mesh!r}')
    start, count = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
    fstart, fcount = int(model.mesh_faceadr[mesh]), int(model.mesh_facenum[mesh])
    return (np.array(model.mesh_vert[start:start + count], dtype=np.float32),
            np.array(model.mesh_face[fstart:fstart + fcount], dtype=np.int32))


def as_frames(model: mujoco.MjModel, qpos, name: str = 'qpos') -> np.ndarray:
    """``qpos`` as (nframe, nq) float64, checked (finite, nq columns); one pose (nq,) becomes one frame.

    Raises:
        ValueError: naming ``name``, if the shape is not (nq,) or (nframe, nq) or a value is not finite.
    """
    q = np.asarray(qpos, dtype=np.float64)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != model.nq or q.shape[0] == 0:
        raise ValueError(f'{name} must have shape (nq,) or (nframe, nq) with nq = {model.nq} and nframe >= 1, '
                         f'got {np.shape(qpos)}')
    if not np.all(np.isfinite(q)):
        raise ValueError(f'{name} must be finite, got a NaN or inf')
    return q


def body_poses(model: mujoco.MjModel, qpos, *, data: mujoco.MjData | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every body's pose for each frame of joint positions, as MuJoCo computes it.

    For each frame, ``d.qpos = qpos[i]`` and ``mj_kinematics`` (forward kinematics only: no velocities, forces or
    contacts are needed for a pose), then ``d.xpos`` and ``d.xquat`` are copied. Body 0 is the world.

    Args:
        model: the compiled model.
        qpos: (nframe, nq) joint positions (MuJoCo's ``qpos``, rad for hinges), or (nq,) for one frame.
        data: an ``MjData`` of ``model`` to compute in (its ``qpos`` and poses are overwritten); a new one by
            default.

    Returns:
        ``xpos`` (nframe, nbody, 3) in m and ``xquat`` (nframe, nbody, 4) unit quaternions (w, x, y, z), each
        body's frame in the world, float64.
    """
    q = as_frames(model, qpos)
    d = mujoco.MjData(model) if data is None else data
    xpos = np.empty((len(q), model.nbody, 3))
    xquat = np.empty((len(q), model.nbody, 4))
    for i, frame in enumerate(q):
        d.qpos[:] = frame
        mujoco.mj_kinematics(model, d)
        xpos[i] = d.xpos
        xquat[i] = d.xquat
    return xpos, xquat


def sample_frames(time, fps: float) -> np.ndarray:
    """The indices of a run's samples to show at ``fps`` frames per second: for each display time k / fps from
    ``time[0]`` to ``time[-1]``, the last sample at or before it (a zero-order hold, as a screen shows a run).

    Args:
        time: (nstep,) sample times of the run, s, nondecreasing.
        fps: display frames per second, > 0.

    Returns:
        (nframe,) int indices into ``time``; nframe = floor((time[-1] - time[0]) * fps) + 1.
    """
    fps = checks.positive('fps', fps, 'frames/s')
    t = np.asarray(time, dtype=np.float64)
    if t.ndim != 1 or len(t) == 0 or not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0):
        raise ValueError(f'time must be a nonempty, finite, nondecreasing 1-D array of s, got shape {np.shape(time)}')
    count = int(np.floor((t[-1] - t[0]) * fps + 1e-9)) + 1
    shown = t[0] + np.arange(count) / fps
    # a display time a rounding error short of a sample still shows that sample
    return np.searchsorted(t, shown + 1e-9 * max(1.0, abs(t[-1])), side='right') - 1


def magnify(model: mujoco.MjModel, qpos, reference, factor: float) -> np.ndarray:
    """Joint positions with each excursion from ``reference`` scaled by ``factor``:
    ``reference + factor * (qpos - reference)``.

    Scaling in joint space keeps the magnified pose one the arm can take: every body stays on its joint. It needs
    joints whose ``qpos`` adds (hinges and slides); a ball or free joint's quaternion does not scale this way.

    Args:
        model: the compiled model (its joint types are checked).
        qpos: (nframe, nq) or (nq,) joint positions.
        reference: (nq,) the pose the excursions are measured from.
        factor: the magnification, > 0 (1 leaves ``qpos`` as is).

    Returns:
        float64 array of ``qpos``'s shape.

    Raises:
        ValueError: if the model has a ball or free joint, or a shape or value is not allowed.
    """
    factor = checks.positive('factor', factor)
    kinds = {int(t) for t in model.jnt_type}
    if kinds - {int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)}:
        raise ValueError('model must have only hinge and slide joints to magnify qpos, got a ball or free joint')
    ref = as_frames(model, reference, 'reference')
    if len(ref) != 1:
        raise ValueError(f'reference must have shape (nq,) with nq = {model.nq}, got {np.shape(reference)}')
    q = np.asarray(qpos, dtype=np.float64)
    frames = as_frames(model, q)
    out = ref + factor * (frames - ref)
    return out[0] if q.ndim == 1 else out
