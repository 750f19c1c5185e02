"""physai: the helper package of the interactive textbook on simulated actuators.

Modules by physical concept:

- ``physai.sim``: the functions the reader writes in chapter 1 (force law, kv from dampratio, sag,
  the semi-implicit Euler step, growth per step).
- ``physai.servo``: the Experiment's link driven by a ``<position>`` servo; batched step responses.
- ``physai.experiments``: chapter 1's named experiments (``python -m physai list``).
- ``physai.so101``: the SO-101 arm from MuJoCo Menagerie, offline when a local copy is at hand.
- ``physai.registry``: the experiment registry behind the command line.
"""

from physai.registry import format_table, run, to_json
from physai.servo import (INTEGRATORS, LINK_INERTIA, TAU_G, ServoParams, StepResponse,
                          step_response, step_responses)
from physai.sim import (actuator_force, kv_from_dampratio, semi_implicit_euler, servo_sag,
                        step_growth)

__all__ = [
    'INTEGRATORS', 'LINK_INERTIA', 'TAU_G', 'ServoParams', 'StepResponse', 'actuator_force',
    'format_table', 'kv_from_dampratio', 'run', 'semi_implicit_euler', 'servo_sag', 'step_growth',
    'step_response', 'step_responses', 'to_json',
]
