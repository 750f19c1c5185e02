"""Chapter 6's STS3215 firmware elements, each built into a MuJoCo model with MjSpec, and the arm replayed with them.

The laws are :mod:`physai.laws.sts3215`; here each becomes a MuJoCo element:

:func:`add_play`
    Backlash, the two-hinge play model. MuJoCo has no backlash attribute: a second hinge on the same axis, between the
    servo's output hinge and the link, limited to ``±b/2`` (Menagerie's unused ``backlash`` class, with its damping
    and armature). The servo drives and reads the first hinge; the link hangs on the second, free within the play.
:func:`add_pid_servo`
    The slew limit: MuJoCo's ``pid`` actuator (MuJoCo 3.12.0 and later; it subsumes the older ``mujoco.pid`` plugin,
    its changelog says) with ``kp``, ``kv`` and ``slewmax``, which moves its set point at most ``slewmax*dt`` a step.
    With a zero velocity set point it is ``<position>``, so the arm replay keeps chapter 4's ``<position>`` servo and
    applies the same clip to the command stream (:func:`physai.laws.sts3215.slew_limited`): ``tests/test_firmware.py``
    checks the two give the same set point and the same motion on ``mj_step``, bit for bit.
:func:`dead_band_model`
    The dead band as the joint friction ``kp*delta`` (``dof_frictionloss``) that stops the P loop where the band would.
P, supply voltage, torque limit
    Numbers on the ``<position>`` servo: ``kp`` and ``forcerange`` (:class:`physai.laws.sts3215.Settings`).

:class:`FirmwareModel` is chapter 4's per-joint servo (:class:`~physai.engine.servo_models.JointModel`) plus these
elements; :func:`replay` plays recorded episodes with several of them, as ``arm_replay.replay`` does (the same start,
substeps, score), one ``mujoco.batch.Batch`` per model layout (the play hinges add ``nq``). A model with no elements
gives ``servo_models.replay``'s numbers (``tests/test_firmware.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import arm_replay, mj, perturb
from physai.engine.arm_replay import Replay, ReplayConfig
from physai.engine.datasets import Episode
from physai.engine.servo_models import JointModel
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.laws import checks, sts3215


PLAY_SUFFIX = '_play'
"""The play hinge of joint ``j`` is named ``j + PLAY_SUFFIX``."""

READS = ('servo', 'link')
"""What the recorded angle is taken to be in a model with play: the servo's output (its encoder, which its loop
holds: the play is outside the loop), or the link past the play."""


def add_play(spec: mujoco.MjSpec, joint: str, backlash: float, *,
             damping: float = sts3215.MENAGERIE_BACKLASH_DAMPING,
             armature: float = sts3215.MENAGERIE_BACKLASH_ARMATURE) -> mujoco.MjsJoint:
    """Give ``joint`` a play of ``backlash`` rad (total): a second hinge on its body, same axis and anchor, limited to
    ``±backlash/2``. The body then turns by ``q_joint + q_play``; the actuator still drives ``joint``.

    Raises:
      ValueError: ``backlash`` not a number in (0, 0.2] rad, or ``joint`` not a hinge of ``spec``.
    """
    b = checks.positive('backlash', backlash, 'rad')
    if b > 0.2:
        raise ValueError(f'backlash must be in (0, 0.2] rad, got {backlash!r}')
    j = spec.joint(joint)
    if j is None or j.type != mujoco.mjtJoint.mjJNT_HINGE:
        raise ValueError(f'joint must name a hinge of the spec, got {joint!r}')
    half = math.degrees(b / 2) if spec.compiler.degree else b / 2  # a spec's angles are in its compiler's unit
    return j.parent.add_joint(name=joint + PLAY_SUFFIX, type=mujoco.mjtJoint.mjJNT_HINGE, axis=j.axis, pos=j.pos,
                              limited=mujoco.mjtLimited.mjLIMITED_TRUE, range=[-half, half],
                              damping=checks.nonnegative('damping', damping, 'N*m*s/rad'),
                              armature=checks.nonnegative('armature', armature, 'kg*m^2'), frictionloss=0.0)


PID_POSITION_INPUT = 1
"""``actuator_ctrlspec`` of a ``<pid input="pos">``: one control, the position set point (the velocity set point fixed
at zero), so that each actuator keeps one ``ctrl`` as a ``<position>`` does."""


def add_pid_servo(spec: mujoco.MjSpec, joint: str, *, kp: float, kv: float = 0.0, forcerange: float | None = None,
                  slewmax: float | None = None, name: str | None = None) -> mujoco.MjsActuator:
    """MuJoCo's ``pid`` actuator (new in MuJoCo 3.12.0) on ``joint``, position input only: force
    ``kp*(s - q) - kv*qd``, ``s`` the set point (its activation), which moves at most ``slewmax*dt`` a step towards
    the command (None: no limit), clamped to ±``forcerange`` (None: none). With a zero velocity set point it is
    ``<position>`` (MuJoCo's changelog for 3.12.0), so fed commands already clipped by
    :func:`physai.laws.sts3215.slew_limited` a ``<position>`` servo moves exactly as it does (``tests/test_firmware.py``).
    After a reset its set point is 0: set ``mjData.act`` (or a keyframe's ``act``) to the start pose.

    Raises:
      ValueError: ``kp`` not > 0, ``kv`` not >= 0, ``forcerange`` or ``slewmax`` not > 0.
    """
    k = checks.positive('kp', kp, 'N*m/rad')
    damping = checks.nonnegative('kv', kv, 'N*m*s/rad')
    rate = -1.0 if slewmax is None else checks.positive('slewmax', slewmax, 'rad/s')
    a = spec.add_actuator(name=name or f'{joint}_pid', target=joint, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    a.set_to_pid(kp=k, kv=damping, slewmax=rate, ctrlspec=PID_POSITION_INPUT)
    if forcerange is not None:
        f = checks.positive('forcerange', forcerange, 'N*m')
        a.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        a.forcerange = [-f, f]
    return a


def dead_band_model(servo: JointModel, dead_band: float) -> JointModel:
    """``servo`` with a dead band of half-width ``dead_band`` rad on every joint: ``frictionloss += kp*dead_band``."""
    return servo.replace(frictionloss=tuple(f + sts3215.dead_band_friction(k, dead_band)
                                            for f, k in zip(servo.frictionloss, servo.kp)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class FirmwareModel:
    """Chapter 4's servo per joint with the firmware's elements on the five arm joints (MuJoCo's units)."""

    servo: JointModel
    """kp, kv, forcerange and the joint's damping, friction, armature per joint (the dead band already folded into
    ``frictionloss`` by :func:`dead_band_model`); its delay and offsets must be 0."""
    backlash: float = 0.0
    """Total play of each arm joint, rad, in [0, 0.2] (0: none, no play hinge)."""
    slewmax: float = math.inf
    """The set point's largest rate, rad/s (``math.inf``: none)."""
    read: str = 'servo'
    """One of ``READS``: the angle scored against the recording."""

    def __post_init__(self):
        if not isinstance(self.servo, JointModel):
            raise ValueError(f'servo must be a JointModel, got {type(self.servo).__name__}')
        if self.servo.delay or any(self.servo.offsets_deg):
            raise ValueError('servo must have no delay and no offsets (chapter 6 adds neither)')
        b = checks.nonnegative('backlash', self.backlash, 'rad')
        if b > 0.2:
            raise ValueError(f'backlash must be in [0, 0.2] rad, got {self.backlash!r}')
        if self.slewmax != math.inf:
            checks.positive('slewmax', self.slewmax, 'rad/s')
        checks.one_of('read', self.read, READS)

    @property
    def layout(self) -> bool:
        """The model has play hinges (a different ``nq`` from one without)."""
        return self.backlash > 0


def mj_model(model: FirmwareModel, config: ReplayConfig = ReplayConfig(), *, fps: float = 30.0) -> mujoco.MjModel:
    """The slim SO-101 with ``model``'s servo on its joints and its play hinges, set up for replay at ``fps``.

    Raises:
      ValueError: a backlash with ``config.limits`` off (the play is a joint limit) or contacts on.
    """
    if not isinstance(model, FirmwareModel):
        raise TypeError(f'model must be a FirmwareModel, got {type(model).__name__}')
    if model.backlash and (not config.limits or config.contacts):
        raise ValueError('a backlash needs config.limits on and config.contacts off (the play is a joint limit)')
    m = copy.copy(_compiled_arm(float(model.backlash), bool(config.contacts)))
    s = model.servo
    arm_replay.set_replay_options(m, config, fps)
    for i, name in enumerate(JOINTS):
        a, dof = m.actuator(name).id, m.joint(name).dofadr[0]
        mj.set_position_servo(m, s.kp[i], s.kv[i], s.forcerange[i], actuators=a)
        m.dof_damping[dof] = s.damping[i]
        m.dof_frictionloss[dof] = s.frictionloss[i]
        m.dof_armature[dof] = s.armature[i]
    mujoco.mj_setConst(m, mujoco.MjData(m))  # the armature enters dof_invweight0, which scales friction loss
    return m


@functools.lru_cache(maxsize=16)
def _compiled_arm(backlash: float, contacts: bool) -> mujoco.MjModel:
    """The slim arm compiled with play hinges of ``backlash`` rad (0: none), kept: a copy of the spec takes a
    tenth of a second, a copy of the compiled model a millisecond (the settings panel recompiles on every change)."""
    spec = arm_replay.frozen_spec(primitives=contacts)
    if backlash:
        for j in ARM_JOINTS:
            add_play(spec, j, backlash)
    return spec.compile()


def qpos_columns(m: mujoco.MjModel, read: str = 'servo') -> list[list[int]]:
    """Per joint of ``JOINTS``, the qpos addresses whose sum is the angle read: the servo's hinge, plus its play hinge
    when ``read`` is 'link' and the model has one."""
    out = []
    for name in JOINTS:
        cols = [int(m.joint(name).qposadr[0])]
        if read == 'link' and mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name + PLAY_SUFFIX) >= 0:
            cols.append(int(m.joint(name + PLAY_SUFFIX).qposadr[0]))
        out.append(cols)
    return out


def replay(models: Sequence[FirmwareModel], episodes: Sequence[Episode], *,
           config: ReplayConfig = ReplayConfig()) -> list[list[Replay]]:
    """Replay every episode with every model, as ``arm_replay.replay`` does (start, substeps, score).

    Returns:
      ``result[i][j]``: model i on episode j (``Replay.servo`` holds the :class:`FirmwareModel`).
    """
    models = arm_replay.checked_items('models', models, FirmwareModel)
    episodes = arm_replay.checked_items('episodes', episodes, Episode)
    if not models or not episodes:
        return [[] for _ in models]
    arm_replay.check_run_budget(models, episodes, config)
    runs = runs_of([m for m in models for _ in episodes], episodes * len(models), config)
    return [runs[i * len(episodes):(i + 1) * len(episodes)] for i in range(len(models))]


def runs_of(models: Sequence[FirmwareModel], episodes: Sequence[Episode], config: ReplayConfig) -> list[Replay]:
    """Run k replays ``episodes[k]`` with ``models[k]``, one batch per layout (checked by the callers)."""
    out: list[Replay | None] = [None] * len(models)
    for layout in sorted({m.layout for m in models}):
        ks = [k for k, m in enumerate(models) if m.layout == layout]
        for k, r in zip(ks, _runs([models[k] for k in ks], [episodes[k] for k in ks], config)):
            out[k] = r
    return out


@mj.captured_warnings()
def _runs(models: Sequence[FirmwareModel], episodes: Sequence[Episode], config: ReplayConfig) -> list[Replay]:
    fps = episodes[0].fps
    substeps = config.substeps(fps)
    compiled = {}
    for fm in models:
        key = dataclasses.replace(fm, slewmax=math.inf, read='servo')  # neither changes the MjModel
        if key not in compiled:
            compiled[key] = mj_model(fm, config, fps=fps)
    ms = [compiled[dataclasses.replace(fm, slewmax=math.inf, read='servo')] for fm in models]
    m0 = ms[0]
    dt = m0.opt.timestep
    nframe = max(e.nframe for e in episodes)
    control, starts = [], []
    for fm, e in zip(models, episodes):
        u = arm_replay.to_radians(e.action, e.joints)
        u = np.concatenate([u, np.repeat(u[-1:], nframe - e.nframe, axis=0)])[:nframe - 1]
        u = np.repeat(u, substeps, axis=0)
        control.append(sts3215.slew_limited(u, fm.slewmax, dt) if fm.slewmax != math.inf else u)
        q0 = np.zeros(m0.nq)
        q0[[int(m0.joint(j).qposadr[0]) for j in JOINTS]] = arm_replay.to_radians(e.state[:1], e.joints)[0]
        starts.append(q0)
    batch = mujoco.batch.Batch(m0, len(ms), nthread=0)
    batch.set_models(ms)
    batch.reset()
    batch.qpos[:] = np.stack(starts)
    perturb.nudge(batch.qpos)
    first = batch.qpos.copy()
    batch.forward()
    rec = mj.rollout(batch, (nframe - 1) * substeps, control=np.stack(control), record=('qpos',))
    qpos = np.concatenate([first[:, None], rec['qpos'][:, substeps - 1::substeps]], axis=1)
    angles = np.empty(qpos.shape[:2] + (len(JOINTS),))
    for k, fm in enumerate(models):
        for i, cols in enumerate(qpos_columns(m0, fm.read)):
            angles[k, :, i] = qpos[k, :, cols].sum(axis=0)
    return arm_replay.replays(models, episodes, angles, mj.warned(batch))
