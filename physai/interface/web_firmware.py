"""Chapter 6's page panel: the STS3215's settings on the fitted arm, run by MuJoCo in the reader's browser.

The panel's description and physics are :mod:`physai.interface.servo_firmware_panels` (in Jupyter and Colab:
:func:`~physai.interface.servo_firmware_panels.settings_widget`); this module writes the page half, as chapters 1
to 4 have theirs (:mod:`physai.interface.web`):

- :func:`settings_twin`: the panel's first view, the step and the segment precomputed by Python MuJoCo
  (:func:`physai.engine.firmware.replay`) on a grid of the P register and Goal_Speed, the other controls at the
  chapter's settings; ``book/_static/panels/servo_firmware_panels.js`` draws it.
- :func:`settings_live`: the engine block, the arm as :func:`physai.interface.web_arm.arm_xml` and the two runs'
  commands, so that every control reruns both in the page (``book/_static/panels/firmware_runs.js``).

The page panel has every control of the kernel's but the backlash: the play is a second hinge per joint
(:func:`physai.engine.firmware.add_play`), another model than the arm the page compiles, so the page leaves it to the
notebook's panel (the widget) and its note says so. Goal_Speed is the slew limit as the chapter's replay applies it: every physics step's
command clipped to within ``slewmax*dt`` of the step before (:func:`physai.laws.sts3215.slew_limited`), which moves
the ``<position>`` servo exactly as MuJoCo's ``pid`` actuator with ``slewmax`` does (``tests/test_firmware.py``).
kp and forcerange come from the P register and the supply through BAM's law in Python; the page reads them from a
table of every slider position (:func:`settings_constants`), so it needs no second copy of the law.
``tests/test_web_firmware.py`` states how the page's runs agree with Python MuJoCo 3.17.0's.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from IPython.display import HTML

from physai.engine.arm_replay import CHATTER_DEG, arm_columns, to_radians
from physai.engine.datasets import Episode
from physai.engine.servo_models import JointModel
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.interface import web
from physai.interface import servo_firmware_panels as sfp
from physai.interface.panel import PanelSpec
from physai.interface.web_arm import arm_xml
from physai.laws import checks, sts3215

PAGE_FIELDS = ('p_register', 'supply_voltage', 'torque_limit', 'goal_speed', 'timestep', 'integrator')
"""The page panel's controls: the notebook panel's (the widget's) without the backlash."""

TWIN_P = (8, 16, 32)
"""The P registers of the first view (16: LeRobot's default; 32: where owners report jitter)."""

TWIN_GOAL_SPEEDS = (0, 500, 1500)
"""The Goal_Speeds of the first view, steps/s (0: no limit)."""

STORED_STEP_DEG = 0.01
"""deg: the first view's traces are stored in whole hundredths of a degree."""

PAGE_NOTE = ('The chapter\'s fitted spring with the settings: kp from P and the supply, forcerange from the supply and '
             'the torque limit, kv keeping each joint\'s lag, Goal_Speed as a slew limit on the set point (0: none). '
             'The backlash is left out on this page: its play is a second hinge on every joint, another model than '
             'the one the page runs; in Jupyter or Colab the same panel, run by the kernel, has it. The segment '
             'replays the recorded commands at 30 Hz, open loop.')
"""The page panel's caption."""

PAGE_WORDS = {'running': 'running MuJoCo…'}
"""The page's words besides the widget's: while MuJoCo runs a setting."""


def page_spec(segment: Episode, *, settings: sts3215.Settings = sts3215.Settings()) -> PanelSpec:
    """:func:`physai.interface.servo_firmware_panels.settings_spec` without the backlash control, with the page's
    note and words."""
    spec = sfp.settings_spec(segment, settings=settings)
    return dataclasses.replace(spec, controls=tuple(c for c in spec.controls if c.name in PAGE_FIELDS),
                               words={**spec.words, **PAGE_WORDS}, note=PAGE_NOTE)


def _check(spring, episode):
    if not isinstance(spring, JointModel):
        raise TypeError(f'spring must be a physai.engine.servo_models.JointModel, got {type(spring).__name__}')
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')


def voltages(spec: PanelSpec) -> list[float]:
    """Every position of the supply slider, V (to one decimal, as the page indexes them)."""
    c = spec.control('supply_voltage')
    n = int(round((c.max - c.min) / c.step))
    return [round(c.min + k * c.step, 1) for k in range(n + 1)]


def settings_constants(spring: JointModel, segment: Episode, load: float) -> dict:
    """What the page draws and runs with (JSON-ready): kp per P register and supply position and forcerange per supply
    (:class:`physai.laws.sts3215.Settings`), the spring per joint and each joint's lag (kv follows it,
    :func:`physai.experiments.servo_firmware.on_lag`), the radians of a Goal_Speed step, the two runs' recordings, the
    step's joint and size, the load, the chatter line."""
    _check(spring, segment)
    load = checks.nonnegative('load', load, 'N*m')
    spec = page_spec(segment)
    p = spec.control('p_register')
    ps = list(range(int(p.min), int(p.max) + 1))
    vs = voltages(spec)
    step_ep = sfp.step_episode(segment)
    cols = arm_columns(segment.joints)
    lag = np.array([spring.joint(j).lag_ms for j in JOINTS]) / 1e3
    return {'pRegisters': ps, 'voltages': vs,
            'kp': [[float(sts3215.register_kp(pr, v)) for pr in ps] for v in vs],
            'forcerange': [sts3215.forcerange(v) for v in vs], 'fullTorque': sts3215.FULL_TORQUE_LIMIT,
            'radPerStep': 2 * math.pi / sts3215.TICKS_PER_TURN,
            'lag': lag.tolist(), 'damping': list(spring.damping), 'frictionloss': list(spring.frictionloss),
            'armature': list(spring.armature),
            'armJoints': list(ARM_JOINTS), 'stepJoint': ARM_JOINTS.index(sfp.STEP_JOINT),
            'stepDeg': sfp.STEP_DEG, 'stepAt': sfp.STEP_AT_FRAME, 'rise': sfp.RISE, 'load': load,
            'chatterDeg': CHATTER_DEG, 'steps': STORED_STEP_DEG,
            'step': {'fps': float(step_ep.fps), 'nframe': int(step_ep.nframe),
                     'actionDeg': step_ep.action[:, cols].ravel().tolist(),
                     'stateDeg': step_ep.state[:, cols].ravel().tolist()},
            'segment': {'fps': float(segment.fps), 'nframe': int(segment.nframe),
                        'actionDeg': segment.action[:, cols].ravel().tolist(),
                        'stateDeg': segment.state[:, cols].ravel().tolist()}}


def runs_part(spring: JointModel, segment: Episode, load: float, values: dict) -> dict:
    """One setting as the first view stores it: the step's and the segment's traces of the step joint (packed in
    :data:`STORED_STEP_DEG`), the readouts' lines and whether the verdict is a bad one. ``values`` without
    ``backlash_deg`` (the page's controls) run without play; the kernel's widget passes it
    (:func:`physai.interface.servo_firmware_panels.settings_widget`)."""
    values = {'backlash_deg': 0.0, **values}
    step, seg = sfp.settings_runs(spring, segment, values)
    r = sfp.readouts(spring, sfp.settings_of(values), load, step, seg, segment.fps)
    j = ARM_JOINTS.index(sfp.STEP_JOINT)
    clip = (-360.0, 360.0)
    return {'step': web.trace(step.sim_deg[:, j], STORED_STEP_DEG, clip),
            'segment': web.trace(seg.sim_deg[:, j], STORED_STEP_DEG, clip),
            'lines': sfp.readout_lines(r), 'bad': r['verdict'] not in ('quiet', 'still')}


def settings_twin(spring: JointModel, episode: Episode, load: float, *, p_registers=TWIN_P,
                  goal_speeds=TWIN_GOAL_SPEEDS) -> HTML:
    """Chapter 6's page panel with its first view precomputed: the step and the segment of ``episode``
    (:func:`physai.interface.servo_firmware_panels.segment_of`) on the fitted ``spring`` at every P register of
    ``p_registers`` and Goal_Speed of ``goal_speeds``, the rest at LeRobot's follower settings. The live block is
    :func:`settings_live`, in the next cell.

    Raises:
      TypeError: ``spring`` or ``episode`` of the wrong type.
      ValueError: ``load`` not >= 0, or a grid value outside its control's range.
    """
    _check(spring, episode)
    segment = sfp.segment_of(episode)
    spec = page_spec(segment)
    at = spec.defaults
    parts = {'runs': web.Part(('p_register', 'goal_speed'),
                              lambda p_register, goal_speed: runs_part(
                                  spring, segment, load, {**at, 'p_register': p_register, 'goal_speed': goal_speed}))}
    return web.first_view(spec, 'servo_firmware_panels.js',
                          grid={'p_register': list(p_registers), 'goal_speed': list(goal_speeds)}, parts=parts,
                          constants=settings_constants(spring, segment, load),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, its runs made by the kernel\'s Python MuJoCo.')


def settings_live(episode: Episode) -> HTML:
    """Chapter 6's panel runs MuJoCo in the reader's browser: :func:`physai.interface.web_arm.arm_xml` and the two
    runs' commands (rad, every joint) and starts: the step and the segment of ``episode``, as
    :func:`settings_twin` cuts them. Shows nothing in Jupyter (the kernel's panel is
    :func:`~physai.interface.servo_firmware_panels.settings_widget`)."""
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')
    segment = sfp.segment_of(episode)
    runs = {}
    for name, e in (('step', sfp.step_episode(segment)), ('segment', segment)):
        runs[name] = {'u': to_radians(e.action, e.joints).ravel().tolist(),
                      'start': to_radians(e.state[:1], e.joints)[0].tolist()}
    return web.engine_block('firmware', arm_xml(), episodes=runs)
