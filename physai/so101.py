"""The SO-101 arm from MuJoCo Menagerie, loaded offline when a local copy is at hand.

``load_so101()`` asks the ``mujoco_menagerie`` package for ``robotstudio_so101`` / ``so101``. The package
reads ``MENAGERIE_ROOT`` when it is set; otherwise, if a ``shared/menagerie`` folder sits beside this
repository (as on the book's development machines), it is used; otherwise the package downloads the model
(Colab).
"""

from __future__ import annotations

import functools
import os
import pathlib

import mujoco

from physai import perturb

ARM_JOINTS = ('shoulder_pan', 'shoulder_lift', 'elbow_flex', 'wrist_flex', 'wrist_roll')
JOINTS = ARM_JOINTS + ('gripper',)

_SHARED_MENAGERIE = pathlib.Path(__file__).resolve().parents[2] / 'shared' / 'menagerie'


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
    import mujoco_menagerie

    root = menagerie_root()
    if root is not None and not os.environ.get('MENAGERIE_ROOT'):
        os.environ['MENAGERIE_ROOT'] = root
    try:
        return mujoco_menagerie.load('robotstudio_so101', entry)
    except mujoco_menagerie.MenagerieError as err:  # not under MENAGERIE_ROOT, or the download failed
        where = (f'MENAGERIE_ROOT={os.environ["MENAGERIE_ROOT"]} has no robotstudio_so101'
                 if os.environ.get('MENAGERIE_ROOT') else f'the download failed ({type(err).__name__})')
        raise ModelUnavailable(
            f'the SO-101 model is not available: {where}. Set MENAGERIE_ROOT to a copy of MuJoCo Menagerie '
            f'holding robotstudio_so101 (the book ships one beside the repository in ../shared/menagerie), '
            f'or give Python network access so that mujoco_menagerie can download it.') from err


def load_so101(entry: str = 'so101') -> mujoco.MjModel:
    """A fresh copy of the SO-101 model (``entry`` 'so101' is the arm alone, 'scene' adds a floor)."""
    import copy

    return copy.copy(_load(entry))


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

SO101_TABLE_TIMESTEP = 0.005  # s, the timestep at which the so101 table evaluates h·ω


def so101_servos(timestep: float = SO101_TABLE_TIMESTEP) -> list[dict]:
    """Per actuated joint of the SO-101: its servo gains, armature and the inertia it drives.

    ``M_ii`` is the joint's diagonal entry of the mass matrix at the home pose ``qpos0`` (from
    ``mj_fullM``; it includes ``dof_armature``); ``link_inertia = M_ii - armature`` is the part that
    comes from the links beyond the joint. ``h_omega = h*sqrt(kp/M_ii)``, and
    ``h_omega_no_armature = h*sqrt(kp/link_inertia)``: the same servo with the armature dropped.

    Args:
      timestep: h, s, at which to evaluate h·ω.

    Returns:
      One row per actuator, keys ``joint``, ``kp`` (N·m/rad), ``kv`` (N·m·s/rad), ``forcerange``
      ((low, high) N·m), ``armature``, ``M_ii``, ``link_inertia`` (kg·m²), ``h_omega``,
      ``h_omega_no_armature``.
    """
    import numpy as np

    if not (0 < timestep <= 0.1):
        raise ValueError(f'timestep must be in (0, 0.1] s, got {timestep!r}')
    m = load_so101()
    d = mujoco.MjData(m)  # qpos = qpos0, the home pose
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    rows = []
    for i in range(m.nu):
        joint = int(m.actuator_trnid[i, 0])
        dof = int(m.jnt_dofadr[joint])
        kp = float(m.actuator_gainprm[i, 0])
        armature = float(m.dof_armature[dof])
        m_ii = float(full[dof, dof])
        link_inertia = m_ii - armature
        rows.append({
            'joint': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, joint),
            'kp': kp,
            'kv': float(-m.actuator_biasprm[i, 2]),
            'forcerange': [float(x) for x in m.actuator_forcerange[i]],
            'armature': armature,
            'M_ii': m_ii,
            'link_inertia': link_inertia,
            'h_omega': float(timestep * np.sqrt(kp / m_ii)),
            'h_omega_no_armature': float(timestep * np.sqrt(kp / link_inertia)),
        })
    return rows


def _register() -> None:
    from physai.registry import experiment

    experiment('so101', summary="the SO-101's servos: gains, armature, M_ii at qpos0 and h*omega at 5 ms",
               columns=(('joint', 's'), ('kp', '.2f'), ('kv', '.3f'), ('forcerange', '.2f'),
                        ('armature', '.3f'), ('M_ii', '.6f'), ('link_inertia', '.6f'),
                        ('h_omega', '.3f'), ('h_omega_no_armature', '.3f')))(so101_servos)


_register()


ARMATURE_CHECK_STEP = 0.2  # rad, the command step every joint gets from the home pose
ARMATURE_CHECK_DURATION = 3.0  # s
ARMATURE_CHECK_WINDOW = 0.5  # s, the tail over which the peak-to-peak is measured
ARMATURE_CHECK_FINE_TIMESTEP = 0.001  # s, the smaller step that also cures the chatter


def so101_hold(*, armature: float | None = None, forcelimited: bool = True, timestep: float | None = None,
               step: float = ARMATURE_CHECK_STEP, duration: float = ARMATURE_CHECK_DURATION):
    """Step every SO-101 joint's command by ``step`` from the home pose and measure the settled motion.

    The model is Menagerie's as shipped (its integrator, its gains, its friction loss), with the
    optional changes: ``armature`` on every joint (None: keep 0.028), ``forcelimited`` False to drop
    the ±2.94 N·m clamp, ``timestep`` in s (None: keep the model's).

    Returns:
      ``(p2p_deg, diverged)``: the peak-to-peak of each joint over the last 0.5 s, degrees, (nu,)
      (NaN when MuJoCo flagged a bad acceleration), and whether it did.
    """
    import numpy as np

    m = load_so101()
    if armature is not None:
        m.dof_armature[:] = armature
    if not forcelimited:
        m.actuator_forcelimited[:] = 0
    if timestep is not None:
        m.opt.timestep = timestep
    d = mujoco.MjData(m)
    mujoco.mj_setConst(m, d)  # constants that depend on armature
    perturb.nudge(d.qpos)
    d.ctrl[:] = np.clip(step, m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])
    mujoco.mj_forward(m, d)
    nstep = round(duration / m.opt.timestep)
    ntail = round(ARMATURE_CHECK_WINDOW / m.opt.timestep)
    tail = np.empty((ntail, m.nu))
    for k in range(nstep):
        mujoco.mj_step(m, d)
        if k >= nstep - ntail:
            tail[k - (nstep - ntail)] = d.qpos[m.jnt_qposadr[m.actuator_trnid[:, 0]]]
    diverged = d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0
    if diverged:
        return np.full(m.nu, np.nan), True
    return np.degrees(np.ptp(tail, axis=0)), False


def so101_without_armature() -> list[dict]:
    """What dropping the armature does to the real model: per joint, the chatter after a step.

    Four runs of Menagerie's SO-101 (implicitfast, 5 ms), each joint commanded 0.2 rad from the home
    pose for 3 s: as shipped; armature 0; armature 0 without the forcerange clamp; armature 0 at a 1 ms
    timestep. Each column is the peak-to-peak over the last 0.5 s, degrees (0: settled).
    """
    runs = {
        'p2p_deg': so101_hold(),
        'no_armature_p2p_deg': so101_hold(armature=0.0),
        'no_armature_unclamped_p2p_deg': so101_hold(armature=0.0, forcelimited=False),
        'no_armature_1ms_p2p_deg': so101_hold(armature=0.0, timestep=ARMATURE_CHECK_FINE_TIMESTEP),
    }
    m = load_so101()
    rows = []
    for i in range(m.nu):
        row = {'joint': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[i, 0]))}
        row.update({key: float(p2p[i]) for key, (p2p, _) in runs.items()})
        rows.append(row)
    return rows


def _register_hold() -> None:
    from physai.registry import experiment

    experiment('so101-no-armature',
               summary='the SO-101 model with its armature dropped: chatter after a step, per joint',
               columns=(('joint', 's'), ('p2p_deg', '.4f'), ('no_armature_p2p_deg', '.4f'),
                        ('no_armature_unclamped_p2p_deg', '.4f'),
                        ('no_armature_1ms_p2p_deg', '.4f')))(so101_without_armature)


_register_hold()
