"""physai: the helper package of the interactive textbook on simulated actuators.

Modules by physical concept:

- ``physai.sim``: the functions the reader writes in chapter 1 (force law, kv from dampratio, sag,
  the semi-implicit Euler step, growth per step).
- ``physai.servo``: the Experiment's link driven by a ``<position>`` servo; batched step responses.
- ``physai.experiments``: chapter 1's named experiments (``python -m physai list``).
- ``physai.so101``: the SO-101 arm from MuJoCo Menagerie, offline when a local copy is at hand.
- ``physai.registry``: the experiment registry behind the command line.
- ``physai.plots``: the book's figure style, log axes, step-response marks (import it explicitly).
- ``physai.widgets``: live slider panels and their kernel-free static twins (import it explicitly,
  ``from physai import widgets``; kept out of this namespace so ``import physai`` stays light).
- ``physai.datasets``: LeRobot v3.0 / v2.1 recordings (local, or the Hugging Face Hub on request).
- ``physai.sysid``: chapter 4's open-loop replay of SO-101 episodes, its baselines and the servo fit.
- ``physai.stability``: the linear stability bounds of one servo step (h²ω² < 4 ± 2hc), critical
  armature, the ``armature-limit`` experiment, log-log slopes and the critically damped rise time.
- ``physai.exercises``: worked answers of chapter 1's exercises (``motor-hold``, ``gear-sag``).
- ``physai.diagrams``: 2-D drawings of the book's ideas (chapter 1's servo-loop block diagram).
- ``physai.actuators``: chapter 2's actuator models (implicit, ideal PD, DC motor, delayed, remotized PD) on
  the pendulum, their sweeps (``actuator-sweep PARAM``), the implicit/explicit divergence map, MuJoCo's
  native ``<dcmotor>`` and delay, and the chapter's live panel and static twin.
- ``physai.control``: chapter 3, where the PD runs: the MIT-form ``JointCommand``, ``PDController`` in the
  controller (``'in-loop'``, held ``qfrc_applied``) or in MuJoCo's step (``'in-step'``, position servo), the
  ``pd-rate`` experiment on the SO-101, growth per controller tick, the chapter's panel and static twin.
- ``physai.colab``: every chapter's short first cell, ``INSTALL_CELL`` (on Colab it installs physai, then
  ``colab.setup()`` installs MuJoCo 3.17.0 and raises ``RestartNeeded`` when the runtime must restart; nothing
  elsewhere); ``python -m physai.colab NOTEBOOK...`` writes it into a chapter.
- ``physai.edition``: the Colab edition generator (``python -m physai.edition`` writes ``colab/`` from the chapters:
  numbers written in, answers folded, outputs cleared).
- ``physai.buildit``: the learner's side of every chapter's Build it: ``stub(NAME)`` to complete, ``check(fn)``
  against MuJoCo, ``solution(NAME)``.
- ``physai.perturb`` and ``physai.robust``: the last-bit nudge (``PHYSAI_PERTURB``) that proves the stored outputs
  robust, and the robust figures themselves (round-off bounds, ensembles, significant digits).
"""

from physai.actuators import (DCMotor, DelayedPD, IdealPD, ImplicitPD, PendulumParams, RemotizedPD,
                              dc_motor_envelope, delay_commands, remotized_limit, simulate)
from physai.control import BACKENDS, HoldParams, JointCommand, PDController, mit_torque
from physai.datasets import Episode, LeRobotDataset, load_lerobot
from physai.registry import format_table, run, to_json
from physai.servo import (INTEGRATORS, LINK_INERTIA, TAU_G, ServoParams, StepResponse,
                          step_response, step_responses)
from physai.sim import (actuator_force, kv_from_dampratio, semi_implicit_euler, servo_sag,
                        step_growth)

__all__ = [
    'INTEGRATORS', 'LINK_INERTIA', 'TAU_G', 'ServoParams', 'StepResponse', 'actuator_force',
    'format_table', 'kv_from_dampratio', 'run', 'semi_implicit_euler', 'servo_sag', 'step_growth',
    'step_response', 'step_responses', 'to_json',
    'Episode', 'LeRobotDataset', 'load_lerobot',
    'DCMotor', 'DelayedPD', 'IdealPD', 'ImplicitPD', 'PendulumParams', 'RemotizedPD',
    'dc_motor_envelope', 'delay_commands', 'remotized_limit', 'simulate',
    'BACKENDS', 'HoldParams', 'JointCommand', 'PDController', 'mit_torque',
]
