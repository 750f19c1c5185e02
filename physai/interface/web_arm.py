"""Chapters 3, 4 and 5's page panels run the SO-101 in the reader's browser: the arm as MJCF text, and the blocks.

:func:`pd_live` and :func:`sysid_live` write the engine blocks (:func:`physai.interface.web.engine_block`) that let the
page panels of :func:`physai.interface.where_pd_runs_panels.pd_twin` and
:func:`physai.interface.servo_sysid_panels.sysid_twin` run MuJoCo's WebAssembly build on :func:`arm_xml`, the
mesh-free SO-101 of :func:`physai.engine.so101.load_mesh_free` without a geom: chapter 3's move and hold (the runs of
:func:`physai.engine.hold.hold_responses`) and chapter 4's replay of a recorded episode
(:func:`physai.engine.arm_replay.replay`), as ``book/_static/panels/runs.js`` mirrors them. ``tests/test_web_arm.py`` states
how the browser's runs agree with Python MuJoCo 3.17.0's. :func:`gripper_live` does the same for chapter 5's grasp
(:func:`physai.engine.gripper.grip`, mirrored by ``book/_static/panels/gripper_runs.js``) on :func:`gripper_xml`, the
arm with its gripper's collision geoms and the cube (:func:`model_xml` writes both); ``tests/test_web_gripper.py``.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
from IPython.display import HTML

from physai.engine import gripper, so101
from physai.engine.datasets import Episode
from physai.engine.mj import INTEGRATOR_ENUM
from physai.engine.arm_replay import to_radians
from physai.interface.web import engine_block


# ---------------------------------------------------------------------------------------------------------------
# The arm as MJCF text


def _num(x) -> str:
    """A float as the shortest text that reads back to the same double (MuJoCo's parser uses strtod)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f'the arm model holds a non-finite number, {x!r}')
    return repr(x) if x != int(x) or abs(x) >= 1e16 else str(int(x))


def _vec(values) -> str:
    return ' '.join(_num(v) for v in np.ravel(values))


def _hull(m: mujoco.MjModel, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Mesh ``i``'s convex hull as the compiled model holds it (``mesh_graph``): its vertices (mesh frame) and its
    triangles. MuJoCo collides with a mesh's hull, so the hull alone is the same geometry for contacts, in a few
    kilobytes: Menagerie's three gripper meshes are 4675 vertices, their hulls (``maxhullvert="64"`` in its
    ``so101.xml``) 64 each. MuJoCo centres the hull on its own centroid when it compiles it and moves the geom to
    match, which changes a vertex's place on its body in the last bits only (``tests/test_web_gripper.py``)."""
    g, a = m.mesh_graph, m.mesh_graphadr[i]
    if a < 0:
        raise ValueError(f'mesh {i} has no convex hull in the compiled model')
    nv, nf = int(g[a]), int(g[a + 1])
    ids = g[a + 2 + nv:a + 2 + 2 * nv]
    faces = g[a + 2 + 3 * nv + 3 * nf:a + 2 + 3 * nv + 6 * nf].reshape(nf, 3)
    local = {int(v): k for k, v in enumerate(ids)}
    vert = m.mesh_vert[m.mesh_vertadr[i] + ids]
    return vert, np.vectorize(local.__getitem__)(faces)


def arm_xml() -> str:
    """The SO-101's bodies, joints and actuators as MJCF text, written from the compiled model, without any geom.

    Not ``MjSpec.to_xml()``: MuJoCo 3.17 writes numbers to six digits (the compiled inertias then differ from
    physai's model, even in Python MuJoCo 3.17.0) and writes an attribute the browser's MuJoCo 3.14.0 refuses
    (``input`` on an actuator: "input is only available for so3, pid and dcmotor actuators"). Here every number is
    written as the compiled :func:`physai.engine.so101.load_mesh_free` model holds it, each frame relative to its
    parent, every inertia explicit, so Python MuJoCo 3.17.0 and the browser's 3.14.0 compile the same bodies, joints,
    actuators and options to the last bit (``tests/test_web_arm.py``).

    No geom: nothing touches during chapter 3's move and hold (``tests/test_hold.py`` counts no contact, so physai
    keeps contacts on) and chapter 4's replay turns contacts off. Without them Python MuJoCo 3.17.0 gives physai's
    trajectories bit for bit (settling, chattering and diverging holds alike), and MuJoCo 3.14.0 in Node runs the
    chapter's holds in about two thirds of the time it takes with the collision boxes (measured on five holds, 1 to
    5 ms steps, all five integrators). Visual-only parts (materials, sites, the camera) are left out too.
    """
    return model_xml(so101.load_mesh_free(collision_meshes=False), 'so101 bodies and joints (physai)', geoms=False)


def model_xml(m: mujoco.MjModel, title: str, *, geoms: bool = True) -> str:
    """A compiled model as MJCF text, every number as the model holds it (:func:`arm_xml`): its options, bodies
    (hinges, free joints, ``gravcomp``), joint actuators without dynamics and, if ``geoms``, its geoms (boxes,
    spheres, capsules, cylinders and meshes, with their contact parameters) and its meshes, each as its convex hull
    (:func:`_hull`)."""
    def name(kind, i: int) -> str | None:
        return mujoco.mj_id2name(m, kind, i)

    o = m.opt
    integrator = {int(v): k for k, v in INTEGRATOR_ENUM.items()}[int(o.integrator)]
    lines = [f'<mujoco model="{title}">',
             '  <compiler angle="radian" autolimits="false" boundmass="0" boundinertia="0" '
             'inertiafromgeom="false"/>',
             f'  <option timestep="{_num(o.timestep)}" gravity="{_vec(o.gravity)}" impratio="{_num(o.impratio)}" '
             f'tolerance="{_num(o.tolerance)}" ls_tolerance="{_num(o.ls_tolerance)}" '
             f'iterations="{int(o.iterations)}" ls_iterations="{int(o.ls_iterations)}" '
             f'integrator="{integrator}" '
             f'cone="{("pyramidal", "elliptic")[int(o.cone)]}" '
             f'jacobian="{("dense", "sparse", "auto")[int(o.jacobian)]}" '
             f'solver="{("PGS", "CG", "Newton")[int(o.solver)]}"/>']
    if m.nflex or m.ntendon or m.neq or m.npair or m.nexclude:
        raise ValueError('model_xml writes bodies, geoms, meshes, hinges, free joints and joint actuators only')
    if m.nmesh and geoms:
        lines.append('  <asset>')
        for i in range(m.nmesh):
            v, f = _hull(m, i)
            lines.append(f'    <mesh name="mesh{i}" vertex="{_vec(v)}" face="{_vec(f)}"/>')
        lines.append('  </asset>')
    lines.append('  <worldbody>')
    geom_types = {int(mujoco.mjtGeom.mjGEOM_BOX): 'box', int(mujoco.mjtGeom.mjGEOM_SPHERE): 'sphere',
                  int(mujoco.mjtGeom.mjGEOM_CAPSULE): 'capsule', int(mujoco.mjtGeom.mjGEOM_CYLINDER): 'cylinder',
                  int(mujoco.mjtGeom.mjGEOM_MESH): 'mesh'}

    def write_geoms(b: int, pad: str) -> None:
        if not geoms:
            return
        for g in range(m.body_geomadr[b], m.body_geomadr[b] + m.body_geomnum[b]) if m.body_geomnum[b] else ():
            kind = geom_types.get(int(m.geom_type[g]))
            if kind is None:
                raise ValueError(f'model_xml writes boxes, spheres, capsules, cylinders and meshes, not geom {g}')
            gname = name(mujoco.mjtObj.mjOBJ_GEOM, g)
            shape = (f'mesh="mesh{m.geom_dataid[g]}"' if kind == 'mesh' else
                     f'size="{_vec(m.geom_size[g][:{"box": 3, "sphere": 1}.get(kind, 2)])}"')
            lines.append(f'{pad}  <geom{f" name={chr(34)}{gname}{chr(34)}" if gname else ""} type="{kind}" {shape} '
                         f'pos="{_vec(m.geom_pos[g])}" quat="{_vec(m.geom_quat[g])}" '
                         f'contype="{int(m.geom_contype[g])}" conaffinity="{int(m.geom_conaffinity[g])}" '
                         f'condim="{int(m.geom_condim[g])}" priority="{int(m.geom_priority[g])}" '
                         f'friction="{_vec(m.geom_friction[g])}" solmix="{_num(m.geom_solmix[g])}" '
                         f'solref="{_vec(m.geom_solref[g])}" solimp="{_vec(m.geom_solimp[g])}" '
                         f'margin="{_num(m.geom_margin[g])}" gap="{_num(m.geom_gap[g])}" '
                         f'rgba="{_vec(m.geom_rgba[g])}"/>')

    def body(b: int, depth: int) -> None:
        pad = '  ' * depth
        gravcomp = f' gravcomp="{_num(m.body_gravcomp[b])}"' if m.body_gravcomp[b] else ''
        lines.append(f'{pad}<body name="{name(mujoco.mjtObj.mjOBJ_BODY, b)}" pos="{_vec(m.body_pos[b])}" '
                     f'quat="{_vec(m.body_quat[b])}"{gravcomp}>')
        lines.append(f'{pad}  <inertial pos="{_vec(m.body_ipos[b])}" quat="{_vec(m.body_iquat[b])}" '
                     f'mass="{_num(m.body_mass[b])}" diaginertia="{_vec(m.body_inertia[b])}"/>')
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            dof = m.jnt_dofadr[j]
            if int(m.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE):
                lines.append(f'{pad}  <freejoint name="{name(mujoco.mjtObj.mjOBJ_JOINT, j)}"/>')
                continue
            if int(m.jnt_type[j]) != int(mujoco.mjtJoint.mjJNT_HINGE):
                raise ValueError('model_xml writes hinges and free joints only')
            lines.append(f'{pad}  <joint name="{name(mujoco.mjtObj.mjOBJ_JOINT, j)}" type="hinge" '
                         f'pos="{_vec(m.jnt_pos[j])}" axis="{_vec(m.jnt_axis[j])}" '
                         f'limited="{"true" if m.jnt_limited[j] else "false"}" range="{_vec(m.jnt_range[j])}" '
                         f'margin="{_num(m.jnt_margin[j])}" ref="{_num(m.qpos0[m.jnt_qposadr[j]])}" '
                         f'springref="{_num(m.qpos_spring[m.jnt_qposadr[j]])}" '
                         f'stiffness="{_num(m.jnt_stiffness[j])}" armature="{_num(m.dof_armature[dof])}" '
                         f'damping="{_num(m.dof_damping[dof])}" frictionloss="{_num(m.dof_frictionloss[dof])}" '
                         f'solreflimit="{_vec(m.jnt_solref[j])}" solimplimit="{_vec(m.jnt_solimp[j])}" '
                         f'solreffriction="{_vec(m.dof_solref[dof])}" solimpfriction="{_vec(m.dof_solimp[dof])}"/>')
        write_geoms(b, pad)
        for child in range(m.nbody):
            if child != b and m.body_parentid[child] == b:
                body(child, depth + 1)
        lines.append(f'{pad}</body>')

    write_geoms(0, '  ')
    for b in range(1, m.nbody):
        if m.body_parentid[b] == 0:
            body(b, 2)
    lines.append('  </worldbody>')
    lines.append('  <actuator>')
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT) or int(m.actuator_dyntype[a]) != 0:
            raise ValueError('model_xml writes joint actuators without dynamics only')
        joint = name(mujoco.mjtObj.mjOBJ_JOINT, m.actuator_trnid[a, 0])
        lines.append(f'    <general name="{name(mujoco.mjtObj.mjOBJ_ACTUATOR, a)}" joint="{joint}" '
                     f'gear="{_vec(m.actuator_gear[a])}" '
                     f'ctrllimited="{"true" if m.actuator_ctrllimited[a] else "false"}" '
                     f'ctrlrange="{_vec(m.actuator_ctrlrange[a])}" '
                     f'forcelimited="{"true" if m.actuator_forcelimited[a] else "false"}" '
                     f'forcerange="{_vec(m.actuator_forcerange[a])}" '
                     f'gaintype="{("fixed", "affine", "muscle")[int(m.actuator_gaintype[a])]}" '
                     f'gainprm="{_vec(m.actuator_gainprm[a])}" '
                     f'biastype="{("none", "affine", "muscle")[int(m.actuator_biastype[a])]}" '
                     f'biasprm="{_vec(m.actuator_biasprm[a])}"/>')
    lines.append('  </actuator>')
    lines.append('</mujoco>')
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------------------------------------------
# The blocks


def pd_live() -> HTML:
    """Chapter 3's panel runs MuJoCo in the reader's browser: :func:`arm_xml`. Show it in the cell after
    :func:`~physai.interface.where_pd_runs_panels.pd_twin`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.where_pd_runs_panels.pd_widget`)."""
    return engine_block('pd', arm_xml())


def sysid_live(episode: Episode) -> HTML:
    """Chapter 4's panel runs MuJoCo in the reader's browser: :func:`arm_xml` and ``episode``'s commands as the
    model's ctrl (rad, every joint, :func:`physai.engine.arm_replay.to_radians`) and its start. Show it in the cell after
    :func:`~physai.interface.servo_sysid_panels.sysid_twin`, with the same episode. In Jupyter it shows nothing (the
    kernel's own panel is :func:`~physai.interface.servo_sysid_panels.sysid_widget`)."""
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')
    u = to_radians(episode.action, episode.joints)
    start = to_radians(episode.state[:1], episode.joints)[0]
    return engine_block('sysid', arm_xml(), episode={'u': u.ravel().tolist(), 'start': start.tolist()})


def gripper_xml() -> str:
    """Chapter 5's grasp model (:func:`physai.engine.gripper.build`'s, compiled with the default
    :class:`~physai.engine.gripper.GripSetup`) as MJCF text (:func:`model_xml`): the mesh-free SO-101 with its
    gripper's collision geoms and the free cube between the jaws."""
    return model_xml(gripper.build(), 'so101 grasp (physai)')


def gripper_live() -> HTML:
    """Chapter 5's panel runs MuJoCo in the reader's browser: :func:`gripper_xml` and what a grasp needs of it (the
    pose, the open gripper, the bodies and joints by index). Show it in the cell after
    :func:`~physai.interface.gripper_panels.gripper_twin`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.gripper_panels.gripper_widget`)."""
    m = gripper.build()

    def qpos(name):
        return int(m.jnt_qposadr[m.joint(name).id])

    grasp = {'pose': {str(qpos(name)): angle for name, angle in gripper.POSE.items()},
             'open': gripper.OPEN, 'gripperQpos': qpos('gripper'),
             'gripperDof': int(m.jnt_dofadr[m.joint('gripper').id]),
             'armQpos': [qpos(name) for name in so101.JOINTS], 'actuator': int(m.actuator('gripper').id),
             'cube': int(m.body('cube').id), 'cubeGeom': int(m.geom('cube').id),
             'jaw': int(m.body('moving_jaw_so101_v1').id), 'palm': int(m.body('gripper').id),
             'joint': int(m.joint('gripper').id), 'edge': gripper.CUBE_EDGE}
    return engine_block('gripper', gripper_xml(), grasp=grasp)
