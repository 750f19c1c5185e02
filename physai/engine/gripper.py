"""Chapter 5's model and runner: Menagerie's SO-101 with a cube between its jaws, squeezed, then loaded.

:func:`build` takes the mesh-free arm (:func:`physai.engine.so101.mesh_free_spec`, its gripper's collision meshes
kept) and adds, with ``MjSpec``, a free cube between the jaws. The arm stands at its zero pose with the wrist rolled
a quarter turn (``wrist_roll`` = π/2), so that the jaws close horizontally and gravity pulls the cube along their
faces: only friction holds it. Menagerie gives the gripper's collision geoms ``priority="1"`` and their own
``condim``, ``friction`` and ``solref``, which then win every contact (MuJoCo's contact parameter mixing); the cube
gets ``priority="2"``, so the cube's ``condim`` and ``friction`` are the contact's, with Menagerie's gripper
``solref`` (0.01 1) kept.

:func:`grip` runs one grasp in three phases:

1. *close* (``CLOSE`` s): the cube floats (``gravcomp`` 1) while the gripper, started open, is commanded shut;
2. *hold* (``hold`` s): the cube's weight is switched on (``gravcomp`` 0);
3. *load* (optional): a downward force grows on the cube at ``load_rate`` N/s, the inertial force ``m*a`` an arm
   accelerating upwards at ``a`` would add, until the cube slips or the run ends.

It records what the chapter plots: the gripper's angle and torque, each jaw's normal force (``mj_contactForce``),
the deepest penetration, the cube's slide along the jaws and the moving jaw's lever.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math

import mujoco
import numpy as np

from physai.engine import mj, perturb, so101
from physai.laws import checks
from physai.laws.grip import GRAVITY


POSE = {'wrist_roll': math.pi / 2}
"""The arm's pose, rad, every other joint at 0: the jaws close horizontally, gravity lies along their faces."""

OPEN = 0.1
"""The gripper's angle at the start, rad (open wider than the cube)."""

CLOSED = -0.17453
"""The command that shuts the gripper: the low end of Menagerie's gripper ``ctrlrange``, rad."""

CLOSE = 1.0
"""s: how long the gripper closes and settles on the floating cube before its weight is switched on."""

CUBE_EDGE = 0.024
"""m: the cube's edge (24 mm, small enough for the SO-101's jaws)."""

SOLREF = (0.01, 1.0)
"""Menagerie's gripper ``solref`` (``collision_gripper`` class): a 10 ms, critically damped soft contact."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GripSetup:
    """One grasp: the gripper's servo, the cube and the simulation."""

    torque_limit: float = so101.MENAGERIE_FORCERANGE
    """The gripper actuator's ``forcerange``, ±N·m (Menagerie: 2.94)."""
    kp: float = so101.MENAGERIE_KP
    """The gripper's ``<position kp>``, N·m/rad (Menagerie: 998.22)."""
    kv: float = so101.MENAGERIE_KV
    """The gripper's ``<position kv>``, N·m·s/rad (Menagerie: 2.731)."""
    armature: float = so101.MENAGERIE_ARMATURE
    """The gripper joint's ``armature``, kg·m² (Menagerie: 0.028)."""
    command: float = CLOSED
    """The gripper's target angle, rad (Menagerie's ``ctrlrange`` -0.17453..1.74533); the default shuts it, far past
    the cube, so the torque saturates; a target just inside the cube's faces leaves ``kp`` in charge."""
    mass: float = 0.03
    """The cube's mass, kg."""
    mu: float = 1.0
    """The cube's sliding friction, ``friction[0]`` (the contact's, the cube having the higher priority)."""
    condim: int = 6
    """The cube's ``condim``: 1 (no friction), 3 (sliding), 4 (+ torsional), 6 (+ rolling); Menagerie's gripper: 6."""
    timestep: float = 0.005
    """s (Menagerie: 0.005)."""
    integrator: str = 'implicitfast'
    """MuJoCo's integrator (Menagerie: implicitfast)."""

    def __post_init__(self):
        checks.positive('torque_limit', self.torque_limit, 'N·m')
        checks.gain('kp', self.kp, 'N·m/rad')
        checks.nonnegative('kv', self.kv, 'N·m·s/rad')
        checks.nonnegative('armature', self.armature, 'kg·m²')
        checks.positive('mass', self.mass, 'kg')
        if not (checks.is_real(self.mass) and self.mass <= 100):
            raise ValueError(f'mass must be in (0, 100] kg, got {self.mass!r}')
        checks.nonnegative('mu', self.mu)
        if self.condim not in (1, 3, 4, 6):
            raise ValueError(f'condim must be one of 1, 3, 4, 6, got {self.condim!r}')
        if not (checks.is_real(self.command) and -0.17453 <= self.command <= 1.74533):
            raise ValueError(f'command must be in [-0.17453, 1.74533] rad, got {self.command!r}')
        checks.timestep(self.timestep)
        checks.integrator(self.integrator)


@functools.cache
def _cube_start() -> tuple[float, float, float]:
    """Where the cube starts: its face 0.5 mm off the fixed jaw's pad, at the pad's height, a little inside it."""
    m = so101.load_mesh_free()
    d = mujoco.MjData(m)
    for name, angle in POSE.items():
        d.qpos[m.joint(name).qposadr[0]] = angle
    mujoco.mj_forward(m, d)
    pad = m.geom('fixed_jaw_box5')
    x, y, z = d.geom_xpos[pad.id]
    return (float(x) - 0.008, float(y) + float(m.geom_size[pad.id][0]) + CUBE_EDGE / 2 + 0.0005, float(z) + 0.004)


def build(setup: GripSetup = GripSetup(), *, slide: bool = False) -> mujoco.MjModel:
    """Menagerie's SO-101 (mesh-free, gripper collision meshes kept) with the cube of ``setup`` between its jaws,
    the gripper's servo, the timestep and the integrator as ``setup`` says, the arm's five servos without their
    force limit (so that the arm, not the grasp, never gives way). ``slide`` True gives the cube one slide joint
    across the jaws instead of a free joint (:func:`replay_gripper`: it stays between them however they move).

    The model is compiled once (:func:`_compiled`, a third of a second: the collision meshes' hulls) and copied;
    ``setup``'s values are written into the copy's fields (the cube's mass and inertia, a uniform box's
    m·edge²/6, its friction and ``condim``, the options, the servo, the armature) and ``mj_setConst`` recomputes the
    constants that depend on them.
    """
    m = copy.copy(_compiled(bool(slide)))
    cube = m.body('cube').id
    geom = m.geom('cube').id
    m.body_mass[cube] = setup.mass
    m.body_inertia[cube] = setup.mass * CUBE_EDGE ** 2 / 6
    m.geom_friction[geom, 0] = setup.mu
    m.geom_condim[geom] = setup.condim
    m.opt.timestep = setup.timestep
    m.opt.integrator = mj.INTEGRATOR_ENUM[setup.integrator]
    gripper = m.actuator('gripper').id
    mj.set_position_servo(m, setup.kp, setup.kv, setup.torque_limit, actuators=gripper)
    # the arm's five servos unclamped: with Menagerie's ±2.94 N·m the shoulder gives way under about 9 N at the
    # jaws (2.94 N·m over the 0.33 m from the shoulder), and the chapter tests the gripper, not the arm
    m.actuator_forcelimited[:gripper] = 0
    mj.set_armature(m, setup.armature, dofs=m.jnt_dofadr[m.joint('gripper').id])  # and mj_setConst
    return m


@functools.cache
def _compiled(slide: bool) -> mujoco.MjModel:
    """:func:`build`'s model as compiled from the spec, with the default :class:`GripSetup`'s cube."""
    setup = GripSetup()
    spec = so101.mesh_free_spec()
    body = spec.worldbody.add_body(name='cube', pos=list(_cube_start()), gravcomp=1.0)
    if slide:
        body.add_joint(name='cube', type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[0, 1, 0])
    else:
        body.add_freejoint(name='cube')
    body.add_geom(name='cube', type=mujoco.mjtGeom.mjGEOM_BOX, size=[CUBE_EDGE / 2] * 3, mass=setup.mass,
                  friction=[setup.mu, 5e-3, 5e-4], condim=setup.condim, priority=2, solref=list(SOLREF),
                  rgba=[1.0, 0.5, 0.0, 1.0])
    return spec.compile()


@dataclasses.dataclass(frozen=True)
class GripRun:
    """One grasp's record, sampled every step (nstep,)."""

    time: np.ndarray
    """s."""
    q: np.ndarray
    """the gripper's angle, rad."""
    torque: np.ndarray
    """the gripper actuator's force, N·m (negative: closing)."""
    jaw_force: np.ndarray
    """the moving jaw's normal force on the cube, N (sum over its contacts)."""
    fixed_force: np.ndarray
    """the fixed jaw's normal force on the cube, N."""
    lever: np.ndarray
    """the moving jaw's lever, m: its contacts' moment about the gripper axis over their normal force (NaN
    without contact)."""
    penetration: np.ndarray
    """the deepest cube contact's overlap, m (0 without contact)."""
    slide: np.ndarray
    """how far the cube has moved down along the jaws since its weight came on, relative to the gripper body, m."""
    load: np.ndarray
    """the force along gravity on the cube besides its weight, N (the load ramp)."""
    hold_start: float
    """s: when the cube's weight came on."""
    tripped: float | None
    """s: when the overload protection cut the torque (None: it did not)."""
    diverged: bool
    """MuJoCo flagged the run (a warning, a non-finite or runaway state); the record is cut there."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Overload:
    """A Feetech STS servo's overload protection as a state of the run (Feetech's STS memory table, registers
    34-36: when the load stays above ``Overload_Torque`` for ``Protection_Time``, the output drops to
    ``Protective_Torque``).

    Assumed, not documented: the percentages are of the torque limit in force (``forcerange``); the timer restarts
    whenever the torque falls below the threshold; once tripped the limit stays down for the rest of the run.
    """

    threshold: float = 0.25
    """Overload_Torque as a fraction (LeRobot writes 25 to the SO-101's gripper; the default is 80)."""
    protection_time: float = 2.0
    """Protection_Time, s (register 35 counts 10 ms; its default 200 is 2 s; LeRobot does not write it)."""
    protective: float = 0.20
    """Protective_Torque as a fraction (register 34, default 20; LeRobot does not write it)."""

    def __post_init__(self):
        for name in ('threshold', 'protective'):
            value = getattr(self, name)
            if not (checks.is_real(value) and 0 <= value <= 1):
                raise ValueError(f'{name} must be a fraction in [0, 1], got {value!r}')
        checks.positive('protection_time', self.protection_time, 's')


def grip(setup: GripSetup = GripSetup(), *, hold: float = 1.0, load_rate: float = 0.0, model=None,
         overload: Overload | None = None, stop_on_slip: bool = False) -> GripRun:
    """One grasp on :func:`build`'s model: close on the floating cube, switch its weight on, hold, load.

    Args:
      setup: the servo, the cube and the simulation.
      hold: s, how long the cube hangs from the jaws after its weight comes on (the load ramp runs through it).
      load_rate: N/s, the growth of the extra downward force on the cube (0: none).
      model: :func:`build`'s model for ``setup``, to reuse (None: build it).
      overload: the servo's overload protection (None: off, as in Menagerie's model).
      stop_on_slip: end the run 0.1 s after the cube has slid 50 mm (a slip ramp need not watch it fall).
    """
    hold = checks.positive('hold', hold, 's')
    if hold > 60:
        raise ValueError(f'hold must be in (0, 60] s, got {hold!r}')
    load_rate = checks.nonnegative('load_rate', load_rate, 'N/s')
    m = build(setup) if model is None else copy.copy(model)
    d = mujoco.MjData(m)
    for name, angle in POSE.items():
        d.qpos[m.joint(name).qposadr[0]] = angle
    gq = m.joint('gripper').qposadr[0]
    d.qpos[gq] = OPEN
    perturb.nudge(d.qpos[:len(so101.JOINTS)])
    arm = [m.joint(name).qposadr[0] for name in so101.JOINTS]
    d.ctrl[:len(arm)] = d.qpos[arm]
    d.ctrl[m.actuator('gripper').id] = setup.command
    mujoco.mj_forward(m, d)

    cube = m.body('cube').id
    jaw, palm = m.body('moving_jaw_so101_v1').id, m.body('gripper').id
    joint = m.joint('gripper').id
    nclose = round(CLOSE / m.opt.timestep)
    nstep = nclose + round(hold / m.opt.timestep)
    rec = {k: np.full(nstep, np.nan) for k in ('time', 'q', 'torque', 'jaw', 'fixed', 'lever', 'pen', 'slide',
                                                 'load')}
    force = np.zeros(6)
    start_local = None
    diverged = False
    act = m.actuator('gripper').id
    limit = float(m.actuator_forcerange[act, 1])
    over_since = None
    tripped = None
    slipped_at = None
    with mj.captured_warnings():
        for k in range(nstep):
            if k == nclose:
                m.body_gravcomp[cube] = 0.0
                start_local = _in_gripper(d, palm, d.xpos[cube])
            if k >= nclose and load_rate:
                d.xfrc_applied[cube, 2] = -load_rate * (k - nclose) * m.opt.timestep
            mujoco.mj_step(m, d)
            if overload is not None and tripped is None:
                if abs(d.actuator_force[act]) >= overload.threshold * limit - 1e-12:
                    over_since = d.time if over_since is None else over_since
                    if d.time - over_since >= overload.protection_time - 1e-9:
                        tripped = d.time
                        m.actuator_forcerange[act] = (-overload.protective * limit, overload.protective * limit)
                else:
                    over_since = None
            if mj.warned(d) or not np.all(np.isfinite(d.qpos)) or mj.runaway(float(d.qvel[m.jnt_dofadr[joint]])):
                diverged = True
                break
            jaw_n, fixed_n, moment, depth = _cube_contacts(m, d, cube, jaw, palm, joint, force)
            rec['time'][k] = d.time
            rec['q'][k] = d.qpos[gq]
            rec['torque'][k] = d.actuator_force[m.actuator('gripper').id]
            rec['jaw'][k] = jaw_n
            rec['fixed'][k] = fixed_n
            rec['lever'][k] = abs(moment) / jaw_n if jaw_n > 0 else np.nan
            rec['pen'][k] = depth
            rec['load'][k] = -d.xfrc_applied[cube, 2]
            rec['slide'][k] = (0.0 if start_local is None
                               else float(start_local[2] - _in_gripper(d, palm, d.xpos[cube])[2]))
            if stop_on_slip and slipped_at is None and rec['slide'][k] > 0.05:
                slipped_at = k
            if slipped_at is not None and k - slipped_at >= round(0.1 / m.opt.timestep):
                break
    n = k + 1 if not diverged else k
    cut = {key: value[:n] for key, value in rec.items()}
    return GripRun(time=cut['time'], q=cut['q'], torque=cut['torque'], jaw_force=cut['jaw'],
                   fixed_force=cut['fixed'], lever=cut['lever'], penetration=cut['pen'], slide=cut['slide'],
                   load=cut['load'], hold_start=nclose * m.opt.timestep, tripped=tripped,
                   diverged=diverged)


def _cube_contacts(m: mujoco.MjModel, d: mujoco.MjData, cube: int, jaw: int, palm: int, joint: int,
                   force: np.ndarray) -> tuple[float, float, float, float]:
    """The cube's contacts now: the moving jaw's and the fixed jaw's normal force, N, the moving jaw's normal
    forces' moment about the gripper axis, N·m, and the deepest overlap, m.

    A contact's normal force is ``mj_contactForce``'s first component. Under the elliptic cone (Menagerie's) that is
    the contact's first constraint force row, ``efc_force[efc_address]``, read here for all contacts at once (the
    tests compare it with ``mj_contactForce``); under the pyramidal cone ``mj_contactForce`` is called per contact.
    """
    n = d.ncon
    if n == 0:
        return 0.0, 0.0, 0.0, 0.0
    con = d.contact
    g1, g2 = np.asarray(con.geom1[:n]), np.asarray(con.geom2[:n])
    b1, b2 = m.geom_bodyid[g1], m.geom_bodyid[g2]
    touches = (b1 == cube) | (b2 == cube)
    if not touches.any():
        return 0.0, 0.0, 0.0, 0.0
    other = np.where(b1 == cube, b2, b1)
    if m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC:
        address = np.asarray(con.efc_address[:n])
        normal_force = np.where(address >= 0, d.efc_force[np.maximum(address, 0)], 0.0)
    else:
        normal_force = np.zeros(n)
        for c in np.flatnonzero(touches):
            mujoco.mj_contactForce(m, d, int(c), force)
            normal_force[c] = force[0]
    depth = float(np.max(-np.asarray(con.dist[:n])[touches]))
    on_jaw = touches & (other == jaw)
    # the normal (the frame's first row) points from geom1 to geom2: the push on the jaw is along it when the jaw is
    # geom2
    sign = np.where(b2 == jaw, 1.0, -1.0)
    normals = np.asarray(con.frame[:n])[:, :3] * (normal_force * sign)[:, None]
    arms = (np.asarray(con.pos[:n]) - d.xanchor[joint])[on_jaw]
    f = normals[on_jaw]
    # (arm × f) · axis, written out: np.cross costs more than the rest of this function on a dozen contacts
    ax, ay, az = d.xaxis[joint]
    moment = float(np.sum(ax * (arms[:, 1] * f[:, 2] - arms[:, 2] * f[:, 1])
                          + ay * (arms[:, 2] * f[:, 0] - arms[:, 0] * f[:, 2])
                          + az * (arms[:, 0] * f[:, 1] - arms[:, 1] * f[:, 0])))
    return (float(normal_force[on_jaw].sum()), float(normal_force[touches & (other == palm)].sum()), moment,
            max(depth, 0.0))


def _in_gripper(d: mujoco.MjData, body: int, point: np.ndarray) -> np.ndarray:
    """``point`` (world) relative to ``body``'s origin, in world axes: the cube's drop is its z."""
    return np.asarray(point - d.xpos[body], dtype=float).copy()


# --- the slip law on two flat jaws ---------------------------------------------------------------------------

FLAT_JAWS_XML = """
<mujoco model="flat jaws">
  <option timestep="0.002" cone="elliptic" impratio="10" integrator="implicitfast"/>
  <worldbody>
    <geom name="fixed" type="box" size="0.02 0.002 0.02" pos="0 -0.014 0" friction="1 0.005 0.0005"/>
    <body name="jaw" pos="0 0.0141 0">
      <joint name="slide" type="slide" axis="0 1 0" damping="5"/>
      <geom name="jaw" type="box" size="0.02 0.002 0.02" mass="0.05"/>
    </body>
    <body name="cube" gravcomp="1">
      <freejoint/>
      <geom name="cube" type="box" size="0.012 0.012 0.012" mass="{mass!r}" friction="{mu!r} 0.005 0.0005"
            condim="{condim}" priority="2" solref="0.01 1"/>
    </body>
  </worldbody>
  <actuator><motor name="squeeze" joint="slide"/></actuator>
</mujoco>"""
"""Two flat jaws 4 cm square, one fixed, one on a slide pushed by a motor, and a 24 mm cube between them: the
friction-cone law with nothing else in the way (no rotating jaw, no twist). Menagerie's SO-101 options (elliptic
cone, impratio 10) and its gripper's solref; a 2 ms step."""

FLAT_LOAD_RATE = 5.0
"""N/s: how fast :func:`flat_jaws_slip`'s downward force on the cube grows."""

SLIP_SPEED = 0.02
"""m/s: the cube slides faster than this along the jaws: it has slipped (soft friction creeps far slower)."""


def flat_jaws_slip(*, mu: float, squeeze: float, mass: float = 0.03, condim: int = 3, rate: float = FLAT_LOAD_RATE,
                   max_time: float = 30.0) -> tuple[float, float]:
    """Squeeze a cube between two flat jaws with ``squeeze`` N, switch its weight on, then add a downward force on
    it that grows at ``rate`` N/s, until it slides faster than :data:`SLIP_SPEED`.

    Returns:
      ``(load, normal)``: the total load along the jaws when it slipped (weight plus the added force), N, and the
      normal force of the moving jaw's contacts just before (``mj_contactForce``), N. NaN, NaN when it never
      slipped within ``max_time`` s.
    """
    mu = checks.nonnegative('mu', mu)
    squeeze = checks.positive('squeeze', squeeze, 'N')
    mass = checks.positive('mass', mass, 'kg')
    rate = checks.positive('rate', rate, 'N/s')
    if condim not in (3, 4, 6):
        raise ValueError(f'condim must be one of 3, 4, 6 (with friction), got {condim!r}')
    m = mujoco.MjModel.from_xml_string(FLAT_JAWS_XML.format(mu=mu, condim=condim, mass=mass))
    d = mujoco.MjData(m)
    cube = m.body('cube').id
    vz = m.jnt_dofadr[m.body_jntadr[cube]] + 2
    jaw = m.geom('jaw').id
    perturb.nudge(d.qpos)
    d.ctrl[0] = -squeeze
    for _ in range(round(0.5 / m.opt.timestep)):
        mujoco.mj_step(m, d)
    m.body_gravcomp[cube] = 0
    start = d.time
    force = np.zeros(6)
    normal = 0.0
    while d.time < start + max_time:
        d.xfrc_applied[cube, 2] = -rate * (d.time - start)
        mujoco.mj_step(m, d)
        if -d.qvel[vz] > SLIP_SPEED:
            return float(-d.xfrc_applied[cube, 2] + mass * float(-m.opt.gravity[2])), normal
        normal = 0.0
        for c in range(d.ncon):
            if jaw in (d.contact[c].geom1, d.contact[c].geom2):
                mujoco.mj_contactForce(m, d, c, force)
                normal += float(force[0])
    return float('nan'), float('nan')


def so101_slip(setup: GripSetup = GripSetup(), *, rate: float = 10.0, max_time: float = 20.0
               ) -> tuple[float, float]:
    """:func:`grip` with a load growing at ``rate`` N/s until the cube slides faster than :data:`SLIP_SPEED`.

    Returns:
      ``(load, normal)``: the total load along the jaws when it slipped (weight plus the added force), N, and the
      mean of the two jaws' normal forces 25 ms before, N; NaN, NaN when it never slipped within ``max_time`` s.
    """
    run = grip(setup, hold=max_time, load_rate=checks.positive('rate', rate, 'N/s'), stop_on_slip=True)
    speed = np.diff(run.slide) / setup.timestep
    loaded = run.time[1:] > run.hold_start + 0.02
    fast = np.nonzero(loaded & (speed > SLIP_SPEED))[0]
    if not len(fast):
        return float('nan'), float('nan')
    k = fast[0] + 1
    before = max(k - round(0.025 / setup.timestep), 0)
    normal = 0.5 * (run.jaw_force[before] + run.fixed_force[before])
    return float(run.load[k] + setup.mass * GRAVITY), float(normal)


# --- the recording's gripper, replayed -----------------------------------------------------------------------

REPLAY_SUBSTEPS = 7
"""Physics steps per frame of a 30 fps recording in :func:`replay_gripper` (a 4.76 ms step, near Menagerie's 5 ms)."""


def gripper_units_to_rad(values, model: mujoco.MjModel | None = None) -> np.ndarray:
    """The gripper's 0..100 onto the model's gripper range, linearly (chapter 4's ``arm_replay.to_radians``)."""
    m = so101.load_mesh_free() if model is None else model
    lo, hi = m.jnt_range[m.joint('gripper').id]
    return lo + np.asarray(values, dtype=float) / 100.0 * (hi - lo)


def gripper_rad_to_units(q, model: mujoco.MjModel | None = None) -> np.ndarray:
    """The inverse of :func:`gripper_units_to_rad`."""
    m = so101.load_mesh_free() if model is None else model
    lo, hi = m.jnt_range[m.joint('gripper').id]
    return (np.asarray(q, dtype=float) - lo) / (hi - lo) * 100.0


def replay_gripper(command_units, fps: float, *, setup: GripSetup = GripSetup(), cube: bool = True) -> np.ndarray:
    """Replay a recorded gripper command on Menagerie's gripper, open loop, the arm held at :data:`POSE`.

    The cube (``setup``'s, weightless: ``gravcomp`` 1 all through, since the arm's own motion is not replayed)
    sits between the jaws where the real one was grasped, free only to slide across them (:func:`build` with
    ``slide``), so that the opening jaws cannot knock it away; with ``cube`` False the jaws close on nothing.

    Args:
      command_units: (nframe,) the recorded command, the gripper's 0..100.
      fps: the recording's frame rate, 1/s.
      setup: the servo and the cube (its ``timestep`` is replaced by 1/(fps·:data:`REPLAY_SUBSTEPS`)).
      cube: whether the cube is there.

    Returns:
      (nframe,) the simulated gripper, 0..100, at each frame (the first is the start, on the first command).
    """
    command_units = checks.real_array('command_units', command_units)
    fps = checks.positive('fps', fps, '1/s')
    m = build(dataclasses.replace(setup, timestep=1.0 / (fps * REPLAY_SUBSTEPS)), slide=True)
    cube_id = m.body('cube').id
    if not cube:
        m.geom_contype[m.body_geomadr[cube_id]] = 0
        m.geom_conaffinity[m.body_geomadr[cube_id]] = 0
    d = mujoco.MjData(m)
    for name, angle in POSE.items():
        d.qpos[m.joint(name).qposadr[0]] = angle
    arm = [m.joint(name).qposadr[0] for name in so101.JOINTS]
    gq = m.joint('gripper').qposadr[0]
    act = m.actuator('gripper').id
    commands = np.clip(gripper_units_to_rad(command_units, m), *m.actuator_ctrlrange[act])
    d.qpos[gq] = max(commands[0], OPEN)
    perturb.nudge(d.qpos[arm])
    d.ctrl[:len(arm)] = d.qpos[arm]
    out = np.empty(len(commands))
    out[0] = d.qpos[gq]
    with mj.captured_warnings():
        for k in range(1, len(commands)):
            d.ctrl[act] = commands[k - 1]
            for _ in range(REPLAY_SUBSTEPS):
                mujoco.mj_step(m, d)
            out[k] = d.qpos[gq]
    return gripper_rad_to_units(out, m)
