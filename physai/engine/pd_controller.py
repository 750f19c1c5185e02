"""A joint PD in the MIT form, applied to a MuJoCo model in the control loop or in the physics step.

A joint command in the "MIT" form that hobby and quadruped motor drivers accept,
:class:`JointCommand` (position, velocity, stiffness, damping, effort, max effort), asks for the torque

    tau = stiffness * (position - q) + damping * (velocity - qd) + effort,   |tau| <= max_effort

with q, qd the joint's ``d.qpos`` / ``d.qvel`` (rad, rad/s) and tau the generalized force on its dof (N·m).
:class:`PDController` applies it to a MuJoCo model in one of two places (``BACKENDS``):

``'in-loop'`` (backend A, PD in the controller)
    At every controller tick compute tau from the state, clamp it, write it to ``d.qfrc_applied`` and let it
    stand for every physics step until the next tick (a zero-order hold). The joint's own actuator is
    silenced. The PD is then integrated *explicitly* with the controller period as its step: between ticks
    the torque does not see the joint move.

``'in-step'`` (backend B, PD in the physics step)
    At start-up turn the joint's actuator into a position servo: ``actuator_gaintype`` fixed,
    ``actuator_biastype`` affine, so that ``force = gainprm[0]*ctrl + biasprm[1]*length + biasprm[2]*velocity``
    with ``gainprm[0] = kp``, ``biasprm = (0, -kp, -kv)``: exactly ``<position kp kv>``. At every tick write
    kp, kv from the command's stiffness and damping and ``ctrl`` from its position. MuJoCo then evaluates the
    PD at every physics step, with kv inside the implicit integrators. The terms that are constant over a
    tick, ``damping * velocity + effort``, go to ``d.qfrc_applied`` (``feedforward='applied'``) or into the
    servo's constant bias ``biasprm[0]`` (``feedforward='in-clamp'``, the default). The clamp is the
    actuator's ``forcerange`` (narrowed to the command's max effort when that is smaller). A joint without an
    actuator falls back to ``'in-loop'`` with a warning.

    Why the default differs from the plain recipe: ``qfrc_applied`` is outside the actuator's clamp. While
    the arm moves, the servo's ``-kv*qd`` saturates at the forcerange but the applied ``+kv*velocity``
    does not, so the joint gets up to ``kv*|velocity|`` more torque than the motor could give and
    overshoots. A real motor clamps the whole MIT torque; ``biasprm[0]`` is constant over the tick as well,
    so MuJoCo clamps it with the PD and the two backends agree while moving too.

Either way the effort read back is ``qfrc_actuator + qfrc_applied`` at the joint's dof (N·m). Chapter 3's arm
holding a pose with either backend is :mod:`physai.engine.hold`. Symbols as in :mod:`physai.laws.loop`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.laws import checks
from physai.laws.loop import BACKENDS, FEEDFORWARD, JointCommand, mit_torque

HINGE_XML = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}"/>
  <worldbody>
    <body>
      <joint name="hinge" type="hinge" axis="0 -1 0" damping="0.05" armature="0.01"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="0.3"/>
    </body>
  </worldbody>
  <actuator>{actuator}</actuator>
</mujoco>
"""
"""One link (0.3 kg, 0.2 m) on a hinge, 2 ms steps, its integrator and actuator left to fill
(``HINGE_XML.format(integrator='implicitfast', actuator='<motor joint="hinge"/>')``): the model on which a
PDController driving a plain motor is checked against MuJoCo's own servo, by chapter 3's Build it
(physai.book.buildit_cases) and by tests/test_pd_controller.py."""



def _joint_id(model: mujoco.MjModel, joint) -> int:
    if isinstance(joint, str):
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint)
        if jid < 0:
            raise ValueError(f'joint must name a joint of the model, got {joint!r}')
    else:
        if not (isinstance(joint, numbers.Integral) and not isinstance(joint, bool)):
            raise ValueError(f'joint must be a joint name or a whole-number id in [0, {model.njnt}), got {joint!r}')
        jid = int(joint)
        if not 0 <= jid < model.njnt:
            raise ValueError(f'joint id must be in [0, {model.njnt}), got {joint!r}')
    if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
        raise ValueError(f'joint must be a hinge or a slide, got type {model.jnt_type[jid]} for {joint!r}')
    return jid


def joint_actuator(model: mujoco.MjModel, jid: int) -> int:
    """The first actuator that drives joint ``jid`` directly (``actuator_trntype`` joint), or -1."""
    for i in range(model.nu):
        if (int(model.actuator_trntype[i]) == int(mujoco.mjtTrn.mjTRN_JOINT)
                and model.actuator_trnid[i, 0] == jid):
            return i
    return -1


class PDController:
    """A joint PD in the MIT form, run in the controller (``'in-loop'``) or in MuJoCo's step (``'in-step'``).

    Construction edits ``model`` in place, as a simulator plugin does at start-up: in-loop joints get their
    actuator silenced (gain and bias 0), in-step joints get theirs turned into a position servo (gain type
    fixed, bias type affine, ``ctrllimited`` off, since the position target is the controller's business).
    Call :meth:`write` at every controller tick and ``mj_step`` in between; whatever :meth:`write` puts in
    ``d.qfrc_applied`` and ``d.ctrl`` stays there until the next tick.

    With an actuator of gear g (``actuator_gear[0]``) the in-step servo gets ``kp = stiffness/g²``,
    ``kv = damping/g²`` and ``ctrl = g*position``, so the joint torque is the same as in-loop.

    Args:
      model: the model to drive; edited in place.
      joints: joint names or ids (hinge or slide), (njoint,).
      backend: one of ``BACKENDS``.
      feedforward: where in-step puts ``damping*velocity + effort``: ``'in-clamp'`` (``biasprm[0]``, clamped
        with the PD by ``forcerange``) or ``'applied'`` (``qfrc_applied``, unclamped).

    Attributes:
      backend: as given.
      in_step: (njoint,) bool, whether each joint's PD runs in the step (False: fell back to in-loop).
      dofs: (njoint,) dof addresses; ``qposadr``: their ``qpos`` addresses.
      actuators: (njoint,) actuator ids, -1 for none.
    """

    def __init__(self, model: mujoco.MjModel, joints: Sequence, *, backend: str = 'in-step',
                 feedforward: str = 'in-clamp'):
        if not isinstance(model, mujoco.MjModel):
            raise TypeError(f'model must be a mujoco.MjModel, got {type(model).__name__}')
        checks.one_of('backend', backend, BACKENDS)
        checks.one_of('feedforward', feedforward, FEEDFORWARD)
        self.feedforward = feedforward
        if isinstance(joints, (str, bytes)) or not isinstance(joints, Sequence | range | np.ndarray):
            raise TypeError(f'joints must be a sequence of joint names or ids, got {joints!r}')
        joints = list(joints)
        if not joints:
            raise ValueError('joints must name at least one joint, got none')
        self.model = model
        self.backend = backend
        ids = [_joint_id(model, j) for j in joints]
        # a joint given twice (by name and id, say) would get two PDs, the last one silently winning
        self.joints = tuple(checks.distinct('joints', [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j) or str(j)
                                                       for j in ids]))
        self.dofs = np.array([model.jnt_dofadr[j] for j in ids])
        self.qposadr = np.array([model.jnt_qposadr[j] for j in ids])
        self.actuators = np.array([joint_actuator(model, j) for j in ids])
        self.in_step = np.array([backend == 'in-step' and a >= 0 for a in self.actuators])
        missing = [name for name, a in zip(self.joints, self.actuators) if backend == 'in-step' and a < 0]
        if missing:
            warnings.warn(f'no actuator on joint(s) {", ".join(missing)}: their PD runs in-loop '
                          '(qfrc_applied, held between ticks)', stacklevel=2)
        self.gear = np.array([model.actuator_gear[a, 0] if a >= 0 else 1.0 for a in self.actuators])
        geared = [name for name, g in zip(self.joints, self.gear) if not (math.isfinite(g) and g != 0)]
        if geared:
            raise ValueError(f'the actuators of joint(s) {", ".join(geared)} must have a finite, non-zero gear '
                             f'(actuator_gear[0]): a PD through a gear of 0 has no torque to give')
        # the actuator's own clamp, as joint torque: the in-step servo may narrow it, never widen it
        self.forcerange = np.array([
            abs(g) * model.actuator_forcerange[a] if a >= 0 and model.actuator_forcelimited[a]
            else (-math.inf, math.inf) for a, g in zip(self.actuators, self.gear)])
        for k, a in enumerate(self.actuators):
            if a < 0:
                continue
            model.actuator_gaintype[a] = mujoco.mjtGain.mjGAIN_FIXED
            model.actuator_biastype[a] = mujoco.mjtBias.mjBIAS_AFFINE
            model.actuator_gainprm[a, :] = 0.0
            model.actuator_biasprm[a, :] = 0.0
            if self.in_step[k]:
                model.actuator_ctrllimited[a] = 0

    def write(self, data: mujoco.MjData, commands: Sequence[JointCommand]) -> None:
        """One controller tick: turn the commands into ``qfrc_applied`` (and ``ctrl``, gains in-step).

        Args:
          data: the simulation's data, at the state the controller reads.
          commands: one :class:`JointCommand` per joint, (njoint,).
        """
        if not isinstance(data, mujoco.MjData):
            raise TypeError(f'data must be a mujoco.MjData, got {type(data).__name__}')
        if data.model is not self.model:  # the gains go into self.model: another model's data would never see them
            raise ValueError('data must be the MjData of the controller\'s own model (mujoco.MjData(model)), got the '
                             'data of another model')
        if isinstance(commands, JointCommand) or not isinstance(commands, Sequence | np.ndarray):
            raise TypeError(f'commands must be a sequence of JointCommand, one per joint, got {commands!r}')
        commands = list(commands)
        if len(commands) != len(self.joints):
            raise ValueError(f'commands must hold one JointCommand per joint ({len(self.joints)}), '
                             f'got {len(commands)}')
        m = self.model
        for k, cmd in enumerate(commands):
            if not isinstance(cmd, JointCommand):
                raise ValueError(f'commands[{k}] must be a JointCommand, got {type(cmd).__name__}')
            dof = self.dofs[k]
            if not self.in_step[k]:
                tau = mit_torque(cmd, data.qpos[self.qposadr[k]], data.qvel[dof])
                data.qfrc_applied[dof] = float(tau)
                continue
            a, g = self.actuators[k], self.gear[k]
            kp, kv = cmd.stiffness / g**2, cmd.damping / g**2
            feedforward = cmd.damping * cmd.velocity + cmd.effort  # N·m, constant over the tick
            in_clamp = self.feedforward == 'in-clamp'
            m.actuator_gainprm[a, 0] = kp
            m.actuator_biasprm[a, :3] = (feedforward / g if in_clamp else 0.0, -kp, -kv)
            low, high = self.forcerange[k]
            low, high = max(low, -cmd.max_effort), min(high, cmd.max_effort)
            m.actuator_forcelimited[a] = math.isfinite(low) or math.isfinite(high)
            m.actuator_forcerange[a] = (low / abs(g), high / abs(g))
            data.ctrl[a] = g * cmd.position
            data.qfrc_applied[dof] = 0.0 if in_clamp else feedforward

    def effort(self, data: mujoco.MjData) -> np.ndarray:
        """The torque each joint received, ``qfrc_actuator + qfrc_applied`` at its dof, (njoint,) N·m.

        ``qfrc_actuator`` is the one MuJoCo computed in its last step (or ``mj_forward``).
        """
        return data.qfrc_actuator[self.dofs] + data.qfrc_applied[self.dofs]
