"""physai: the helper package of the interactive textbook on simulated actuators.

The package is cut in layers; a layer imports only from the layers below it (``make test`` checks this with
import-linter, the contract is in ``pyproject.toml``). Read it from the bottom up:

1. ``physai.laws``: the physics as equations, no MuJoCo. ``checks`` (input checks, one message format),
   ``robust`` (robust figures: round-off bounds, ensembles, significant digits), ``sim`` (chapter 1's
   Build-it functions: MuJoCo's force law, kv from dampratio, sag, the semi-implicit Euler step, growth per
   step), ``stability`` (h²ω² < 4 ± 2hc, critical armature, growth per step of every integrator),
   ``drives`` (chapter 2's force laws: PD, DC-motor envelope, remotized limit, delay, and their configs),
   ``loop`` (chapter 3's MIT-form command, controller ticks, zero-order hold, the in-loop PD's two flaws one at a
   time), ``servo_gain`` (the STS3215's firmware P register to MuJoCo's kp and back, BAM's duty-gain law beside
   Menagerie's reading), ``grip`` (chapter 5's squeeze force, torque clamp, slip condition and Feetech's torque
   register).
2. ``physai.engine``: models and runners on MuJoCo. ``mj`` (the shared plumbing: integrators by name,
   MuJoCo's warnings captured per run, the one divergence rule, position-servo gains and armature set on a
   compiled model), ``perturb`` (the last-bit nudge), ``link`` (chapter 1's link and its step responses),
   ``pendulum`` (chapter 2's pendulum under each actuator model), ``so101`` (the SO-101 from MuJoCo
   Menagerie), ``bodies`` (what a 3D view needs: each body's pose per frame, each visible mesh on its body),
   ``pd_controller`` (chapter 3's MIT-form PD, run in the loop or in MuJoCo's step), ``hold``
   (chapter 3's arm holding a pose with it, and ensembles of such runs), ``arm_replay`` (chapter 4's servo model
   and open-loop replay of recorded episodes), ``sysid`` (chapter 4's fit of that servo), ``servo_models``
   (per-joint servos, MuJoCo's command delay and calibration offsets, and the structures fitted against the
   spring), ``datasets`` (LeRobot recordings), ``lerobot_units`` (their units read off their values: degrees or
   LeRobot's -100..100 normalisation, converted to degrees), ``gripper`` (chapter 5's SO-101 with a cube between its jaws, squeezed and loaded).
3. ``physai.experiments``: every table of the book, by chapter (``position_actuators``, with ``servo_panel``, its
   live panel's physics, and ``position_actuators_further``, its "Going further" tables; ``actuator_models``,
   ``where_pd_runs``, ``servo_sysid``, and ``servo_truth``, chapter 4's truth table), and the ``registry`` behind
   ``python -m physai NAME``.
4. ``physai.cli``: ``python -m physai fit-servo``, chapter 4's fit on your own recording: ``fit_request`` (the
   request checked before any work), ``identify`` (the fit and what the recording pins down), ``fit_report``
   (the MJCF file and the report), ``outputs`` (files written safely).
5. ``physai.interface``: what a reader sees. ``plots`` (the figure style), ``diagrams``, ``tables`` (result
   tables), ``panel`` (a live panel described once), ``web`` and ``web_arm`` (the page panel: the
   precomputed first view, MuJoCo's WebAssembly build in the reader's browser), ``widget`` (the same panel in a
   notebook, an anywidget whose physics runs in the kernel; ``nodelay``, a Jupyter Server connection without
   Nagle's delay for presenting it), ``arm_frames`` (the SO-101 rendered by MuJoCo for the notebook), and one ``*_panels``
   module per chapter.
6. ``physai.book``: the book's own tooling. ``prose`` (numbers glued into the text), ``colab`` (every
   chapter's first cell), ``edition`` (the Colab edition), ``buildit`` (the learner's Build-it checks),
   ``arm_meshes`` (the SO-101's meshes for the page's 3D view).

``python -m physai`` (``physai.__main__``) is the command line over the registry and ``physai.cli``.

The names below are the ones chapters and readers use most; ``import physai`` loads no plotting or widgets.

In the book's Colab runtime (marked by the first cell's set-up, ``physai.book.colab``) ``import physai`` first refuses
a MuJoCo other than the book's pinned one with the set-up's own one-line ``RESTART NEEDED``; anywhere else it checks
nothing, and physai runs on any MuJoCo of its supported range.
"""

import os as _os

if _os.environ.get('PHYSAI_BOOK_MUJOCO'):  # the book's Colab runtime (physai.book.colab.BOOK_RUNTIME_ENV)
    from physai.book.colab import refuse_a_stale_runtime as _refuse_a_stale_runtime
    _refuse_a_stale_runtime()  # before anything imports MuJoCo

from physai.engine.datasets import Episode, LeRobotDataset, load_lerobot
from physai.engine.hold import HoldParams
from physai.engine.pd_controller import PDController
from physai.engine.link import LINK_INERTIA, TAU_G, ServoParams, StepResponse, step_response, step_responses
from physai.engine.pendulum import PendulumParams, simulate
from physai.experiments.registry import format_table, run, to_json
from physai.laws.checks import INTEGRATORS
from physai.laws.drives import (DCMotor, DelayedPD, IdealPD, ImplicitPD, RemotizedPD, dc_motor_envelope,
                                delay_commands, remotized_limit)
from physai.laws.loop import BACKENDS, JointCommand, mit_torque
from physai.laws.sim import actuator_force, kv_from_dampratio, semi_implicit_euler, servo_sag, step_growth

__all__ = [
    'INTEGRATORS', 'LINK_INERTIA', 'TAU_G', 'ServoParams', 'StepResponse', 'actuator_force',
    'format_table', 'kv_from_dampratio', 'run', 'semi_implicit_euler', 'servo_sag', 'step_growth',
    'step_response', 'step_responses', 'to_json',
    'Episode', 'LeRobotDataset', 'load_lerobot',
    'DCMotor', 'DelayedPD', 'IdealPD', 'ImplicitPD', 'PendulumParams', 'RemotizedPD',
    'dc_motor_envelope', 'delay_commands', 'remotized_limit', 'simulate',
    'BACKENDS', 'HoldParams', 'JointCommand', 'PDController', 'mit_torque',
]
