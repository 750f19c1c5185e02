"""The SO-101 arm from MuJoCo Menagerie, loaded offline when a local copy is at hand.

``load_so101()`` asks the ``mujoco_menagerie`` package for ``robotstudio_so101`` / ``so101``. The package
reads ``MENAGERIE_ROOT`` when it is set; otherwise, if a ``shared/menagerie`` folder sits beside this
repository (as on the book's development machines), it is used; otherwise the package downloads the model
(Colab). ``load_mesh_free()`` is the same arm without its visual meshes, for runners that copy the model often.
"""

from __future__ import annotations

import copy
import functools
import math
import os
import pathlib

import mujoco

from physai.engine import mj, perturb


ARM_JOINTS = ('shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll')
JOINTS = ARM_JOINTS + ('gripper',)
_SHARED_MENAGERIE = pathlib.Path(__file__).resolve().parents[3] / 'shared' / 'menagerie'


def menagerie_root() -> str | None:
    """The local Menagerie folder to use, or None to let ``mujoco_menagerie`` download."""
    root = os.environ.get('MENAGERIE_ROOT')
    if root:
        return root
    if (_SHARED_MENAGERIE / 'robotstudio_so101').is_dir():
        return str(_SHARED_MENAGERIE)
    return None


class ModelUnavailable(RuntimeError):
    """The SO-101 model can be neither found locally nor downloaded; the message says how to fix it."""


@functools.cache
def _load(entry: str) -> mujoco.MjModel:
    return check_model(_from_menagerie(lambda menagerie: menagerie.load('robotstudio_so101', entry)), entry)


def check_model(m: mujoco.MjModel, entry: str = 'so101') -> mujoco.MjModel:
    """``m`` if it is the SO-101 physai is built on, else :class:`ModelUnavailable` saying what differs and what to do.

    Everything that replays or holds the arm reads its joints and actuators by the names in ``JOINTS`` and by their
    order (``qpos`` and ``ctrl`` columns in ``JOINTS`` order): each of ``JOINTS`` must be a hinge joint, the first
    ``len(JOINTS)`` in the model and in this order, driven by an actuator of the same name, the actuators in the same
    order, as in Menagerie's ``robotstudio_so101``. Another arm, an older or a hand-edited copy of the model would
    otherwise end in a KeyError or an IndexError, or drive one joint with another's command.
    """
    joints = [m.joint(i).name for i in range(m.njnt)]
    actuators = [m.actuator(i).name for i in range(m.nu)]
    driven = [m.joint(int(m.actuator_trnid[i, 0])).name if m.actuator_trntype[i] == mujoco.mjtTrn.mjTRN_JOINT
              else None for i in range(m.nu)]
    hinges = all(m.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE for i in range(min(m.njnt, len(JOINTS))))
    if joints[:len(JOINTS)] != list(JOINTS) or not hinges or actuators[:len(JOINTS)] != list(JOINTS) \
            or driven[:len(JOINTS)] != list(JOINTS):
        where = os.environ.get('MENAGERIE_ROOT') or 'mujoco_menagerie\'s download'
        raise ModelUnavailable(
            f'the SO-101 model must have the hinge joints {", ".join(JOINTS)} in this order, each driven by an '
            f'actuator of its name, as MuJoCo Menagerie\'s robotstudio_so101 has; got joints {", ".join(joints)} and '
            f'actuators {", ".join(actuators)} in robotstudio_so101/{entry}.xml of {where}: '
            + ('on Colab, choose Runtime > Disconnect and delete runtime and run the notebook from the top, so that '
               'mujoco_menagerie downloads an unchanged copy' if on_colab() else
               'set MENAGERIE_ROOT to an unchanged copy of MuJoCo Menagerie (the book ships one in '
               '../shared/menagerie)'))
    return m


def _from_menagerie(read):
    """``read(mujoco_menagerie)``, reading ``robotstudio_so101`` from the local copy when there is one; a missing
    model becomes :class:`ModelUnavailable`, whose message says how to fix it."""
    import mujoco_menagerie

    root = menagerie_root()
    if root is not None and not os.environ.get('MENAGERIE_ROOT'):
        os.environ['MENAGERIE_ROOT'] = root
    try:
        return read(mujoco_menagerie)
    except mujoco_menagerie.MenagerieError as err:  # not under MENAGERIE_ROOT, or the download failed
        where = (f'MENAGERIE_ROOT={os.environ["MENAGERIE_ROOT"]} has no robotstudio_so101'
                 if os.environ.get('MENAGERIE_ROOT') else f'the download failed ({type(err).__name__})')
        raise ModelUnavailable(f'the SO-101 model is not available: {where}. {_advice()}') from err


def on_colab() -> bool:
    """Whether this runs on Google Colab (its ``google.colab`` module is imported)."""
    import sys
    return 'google.colab' in sys.modules


def _advice() -> str:
    """What to do when the model is missing: on Colab, where no local copy is at hand, about the download;
    elsewhere, about ``MENAGERIE_ROOT`` too."""
    if on_colab():
        return ('On Colab the model is downloaded from GitHub (MuJoCo Menagerie\'s release assets) '
                'into the runtime: check that the runtime is connected and can reach github.com (a code cell with '
                '!curl -sI https://github.com shows it), then run this cell again; if it keeps failing, choose '
                'Runtime > Disconnect and delete runtime and run the notebook from the top.')
    return ('Set MENAGERIE_ROOT to a copy of MuJoCo Menagerie holding robotstudio_so101 (the book ships one beside '
            'the repository in ../shared/menagerie), or give Python network access so that mujoco_menagerie can '
            'download it.')


def menagerie_xml(entry: str = 'so101') -> pathlib.Path:
    """The path of Menagerie's SO-101 MJCF file ``entry`` (the local copy when there is one, else ``mujoco_menagerie``'s
    download); :class:`ModelUnavailable` when neither is at hand."""
    return pathlib.Path(_from_menagerie(lambda menagerie: menagerie.get('robotstudio_so101').xml(entry)))


def load_so101(entry: str = 'so101') -> mujoco.MjModel:
    """A fresh copy of the SO-101 model (``entry`` 'so101' is the arm alone, 'scene' adds a floor)."""
    return copy.copy(_load(entry))


def folder() -> pathlib.Path:
    """The folder of Menagerie's ``robotstudio_so101`` (its ``so101.xml``, ``LICENSE`` and ``assets/`` of STL meshes),
    local or downloaded as :func:`load_so101` finds it."""
    return pathlib.Path(_from_menagerie(lambda menagerie: menagerie.get('robotstudio_so101').path()))


def load_mesh_free(*, collision_meshes: bool = True) -> mujoco.MjModel:
    """A fresh copy of the SO-101 arm without its visual meshes: the same physics, copied in about a millisecond.

    The visual meshes (``contype = conaffinity = 0``) are nearly all of the compiled model's 63 MB, so a copy of
    :func:`load_so101` costs ~100 ms, a runner that keeps a model per setting holds 63 MB for each, and loading
    them takes ~340 MB. They take part in no collision, but one of them, the camera mount's, gives its body (the
    one body without an ``<inertial>``) its mass and inertia. So the spec is compiled once with only that mesh,
    every body's mass, centre of mass and principal inertia are frozen from it as an explicit ``<inertial>``,
    and it is compiled again without any visual mesh (``MjSpec``). Mass matrix, gravity, contacts and
    trajectories are the shipped model's to the last bit (``tests/test_so101.py`` checks them against it).

    Args:
      collision_meshes: keep the gripper's three collision meshes (1.7 MB; contacts exactly as in the shipped
        model). False drops every mesh, for runs with contacts off.
    """
    return copy.copy(_mesh_free(bool(collision_meshes)))


def mesh_free_spec(*, collision_meshes: bool = True) -> mujoco.MjSpec:
    """A fresh copy of the :func:`load_mesh_free` arm as an ``MjSpec``, for models that add to it (chapter 5's cube
    between the jaws); compiled unchanged it is :func:`load_mesh_free`'s model."""
    return _mesh_free_spec(bool(collision_meshes)).copy()


@functools.cache
def _mesh_free(collision_meshes: bool) -> mujoco.MjModel:
    return check_model(_mesh_free_spec(collision_meshes).copy().compile())


@functools.cache
def _mesh_free_spec(collision_meshes: bool) -> mujoco.MjSpec:
    spec = _from_menagerie(lambda menagerie: menagerie.get('robotstudio_so101').spec('so101'))
    bodies = [b for b in spec.bodies if b.name != 'world']
    from_geoms = {b.name for b in bodies if not b.explicitinertial}  # MuJoCo sums their geoms' inertia

    def drop_meshes(keep_on: set[str]) -> None:
        kept = set()
        for geom in list(spec.geoms):
            if geom.type != mujoco.mjtGeom.mjGEOM_MESH:
                continue
            collides = geom.contype or geom.conaffinity
            if (collision_meshes and collides) or geom.parent.name in keep_on:
                kept.add(geom.meshname)
            else:
                spec.delete(geom)
        for mesh in list(spec.meshes):
            if mesh.name not in kept:
                spec.delete(mesh)

    drop_meshes(keep_on=from_geoms)
    freeze_inertia(spec, spec.compile(), bodies)  # every body's inertia as the shipped model has it
    drop_meshes(keep_on=set())
    return spec


def freeze_inertia(spec: mujoco.MjSpec, compiled: mujoco.MjModel, bodies) -> None:
    """Write each of ``bodies``' mass, centre of mass and principal inertia, as ``compiled`` has them, into
    ``spec`` as explicit inertials, so that deleting the meshes they were computed from changes nothing."""
    for body in bodies:
        i = compiled.body(body.name).id
        body.explicitinertial = True
        body.mass = compiled.body_mass[i]
        body.ipos = compiled.body_ipos[i]
        body.iquat = compiled.body_iquat[i]
        body.inertia = compiled.body_inertia[i]
        body.fullinertia = [math.nan] * 6  # the principal inertia above, not a full tensor


# --- Menagerie's servo: class sts3215 in so101.xml, the same on every joint (tests/test_chapter1.py checks
# these against the compiled model) -----------------------------------------------------------------------

MENAGERIE_KP = 998.22
"""``<position kp>``, N·m/rad."""

MENAGERIE_KV = 2.731
"""``<position kv>``, N·m·s/rad."""

MENAGERIE_FORCERANGE = 2.94
"""``<position forcerange="-2.94 2.94">``, N·m (symmetric)."""

MENAGERIE_ARMATURE = 0.028
"""``<joint armature>``, kg·m²."""

MENAGERIE_DAMPING = 0.6
"""``<joint damping>``, N·m·s/rad."""

MENAGERIE_FRICTIONLOSS = 0.052
"""``<joint frictionloss>``, N·m."""


# --- chapter 1: the SO-101's servos as MuJoCo sees them ---------------------------------------------

FOLLOWER_GEAR_RATIO = 345
"""The follower arm's six STS3215 servos all have 1/345 gearing (the leader mixes 1/191, 1/345, 1/147)."""

LEADER_GEAR_RATIOS = (191, 345, 147)
"""The leader arm's STS3215 gearings: a mix of 1/191, 1/345 and 1/147."""

MENAGERIE_ASSUMED_P_GAIN = 16
"""The servo firmware's own proportional gain (a register) that Menagerie's kp and kv assume."""

STS3215_STEPS_PER_TURN = 4096
"""The STS3215's position sensor: 12 bits per output turn (LeRobot's model resolution for it)."""

ARMATURE_CHECK_STEP = 0.2  # rad, the command step every joint gets from the home pose
ARMATURE_CHECK_DURATION = 3.0  # s
ARMATURE_CHECK_WINDOW = 0.5  # s, the tail over which the peak-to-peak is measured
ARMATURE_CHECK_FINE_TIMESTEP = 0.001  # s, the smaller step that also cures the chatter


def so101_hold(*, armature: float | None = None, forcelimited: bool = True, timestep: float | None = None,
               step: float = ARMATURE_CHECK_STEP, duration: float = ARMATURE_CHECK_DURATION, offset: float = 0.0):
    """Step every SO-101 joint's command by ``step`` from the home pose and measure the settled motion.

    The model is Menagerie's as shipped (its integrator, its gains, its friction loss), with the
    optional changes: ``armature`` on every joint (None: keep 0.028), ``forcelimited`` False to drop
    the ±2.94 N·m clamp, ``timestep`` in s (None: keep the model's). ``offset`` (rad, at most 1e-6) moves the
    start of every joint away from the home pose: an ensemble's runs differ only by it.

    Returns:
      ``(p2p_deg, diverged)``: the peak-to-peak of each joint over the last 0.5 s, degrees, (nu,)
      (NaN when MuJoCo flagged a bad acceleration), and whether it did.
    """
    p2p, bad = so101_hold_windows((duration,), armature=armature, forcelimited=forcelimited, timestep=timestep,
                                  step=step, offset=offset)
    return p2p[0], bad


def so101_hold_windows(lengths, *, armature: float | None = None, forcelimited: bool = True,
                       timestep: float | None = None, step: float = ARMATURE_CHECK_STEP, offset: float = 0.0):
    """:func:`so101_hold` read at several run lengths: one run, as long as the longest, and each joint's
    peak-to-peak over the 0.5 s that end at each length (a run of length T is the first T s of a longer one).

    Args:
      lengths: run lengths, s, increasing, the first at least 0.5 s, (nlength,).
      armature, forcelimited, timestep, step, offset: as :func:`so101_hold`.

    Returns:
      ``(p2p_deg, diverged)``: (nlength, nu) degrees (all NaN when MuJoCo flagged a bad acceleration), and whether
      it did.
    """
    import numpy as np

    lengths = tuple(float(x) for x in lengths)
    if (not lengths or lengths[0] < ARMATURE_CHECK_WINDOW or any(b <= a for a, b in zip(lengths, lengths[1:]))
            or lengths[-1] > 600):
        raise ValueError(f'lengths must increase from at least {ARMATURE_CHECK_WINDOW} s to at most 600 s, '
                         f'got {lengths!r}')
    m = load_so101()
    if not forcelimited:
        m.actuator_forcelimited[:] = 0
    if timestep is not None:
        m.opt.timestep = timestep
    if not (isinstance(offset, (int, float)) and abs(offset) <= 1e-6):
        raise ValueError(f'offset must be a start offset of at most 1e-6 rad, got {offset!r}')
    d = mujoco.MjData(m)
    mj.set_armature(m, m.dof_armature if armature is None else armature, data=d)
    d.qpos[:] += offset
    perturb.nudge(d.qpos)
    d.ctrl[:] = np.clip(step, m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])
    mujoco.mj_forward(m, d)
    ends = [round(length / m.opt.timestep) for length in lengths]
    ntail = round(ARMATURE_CHECK_WINDOW / m.opt.timestep)
    joints = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    tails = np.empty((len(ends), ntail, m.nu))
    with mj.captured_warnings():
        for k in range(ends[-1]):
            mujoco.mj_step(m, d)
            for i, end in enumerate(ends):
                if end - ntail <= k < end:
                    tails[i, k - (end - ntail)] = d.qpos[joints]
    if mj.diverged(tails, warned=mj.warned(d)):
        return np.full((len(ends), m.nu), np.nan), True
    return np.degrees(np.ptp(tails, axis=1)), False
