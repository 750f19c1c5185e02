"""Chapter 5's live panel: the SO-101's gripper closing on a cube, its squeeze and the cube's slide.

The panel is described once, :func:`gripper_spec` (controls, plots, words), and drawn everywhere by the page's
``book/_static/panels/gripper_panels.js``: on the book's page as :func:`gripper_twin` (its first view precomputed) and
:func:`physai.interface.web_arm.gripper_live` (MuJoCo in the reader's browser, ``gripper_runs.js``), and in Jupyter and
Colab as :func:`gripper_widget` (the kernel's Python MuJoCo). Every change reruns one grasp (:func:`panel_run`:
:func:`physai.engine.gripper.grip`, the cube's weight on after :data:`physai.engine.gripper.CLOSE` s) and redraws the
moving jaw's force and the cube's slide along the jaws, with the verdict of chapter 5's grasp table
(:func:`physai.experiments.gripper.verdict`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from physai.engine import gripper, so101
from physai.experiments import gripper as grasp
from physai.interface import plots, web
from physai.interface.panel import Choice, Entry, LogSlider, PanelSpec, Plot, Slider, common_controls
from physai.laws import grip

HOLD = 1.0
"""s: how long each panel grasp holds the cube after its weight comes on."""

COMMANDS = {'shut': gripper.CLOSED, 'just inside the cube': grasp.NEAR_CONTACT}
"""The gripper commands the panel offers, rad: shut (the servo saturates) or just inside the cube (kp in charge)."""

SLIDE_TOP_MM = 20.0
"""mm: the slide plot's top; a cube that falls further is drawn at it."""

FORCE_TOP = 60.0
"""N: the jaw force plot's top (Menagerie's full limit squeezes about 44 N)."""

WORDS = {
    'diverged': 'diverged',
    'held': 'held · squeeze {squeeze:.0f} N · margin {margin:.0f} · slide {slide:.1f} mm · depth {depth:.1f} mm',
    'slips': 'slips · slide {slide:.0f} mm (margin {margin:.1f})',
    'jitters': 'jitters · the jaw force swings by {jitter:.0f} N',
    'crushed': 'crushed · the jaws {depth:.1f} mm into the cube · squeeze {squeeze:.0f} N',
}
"""The words on a grasp, by its verdict (:func:`physai.experiments.gripper.verdict`)."""


def gripper_spec() -> PanelSpec:
    """Chapter 5's panel, described once: the torque limit, the common four (kp, armature, timestep, integrator) on
    the gripper, the command, the cube's mass, friction and ``condim``; the jaw force and the slide; the words."""
    controls = [Slider('torque_limit', 'torque limit ±', 0.1, 4.0, grasp.LEROBOT_LIMIT, step=0.01, unit='N·m',
                       format='.2f'),
                *common_controls(kp=so101.MENAGERIE_KP, armature=so101.MENAGERIE_ARMATURE, timestep=0.005),
                Choice('command', 'command', tuple(COMMANDS), 'shut'),
                LogSlider('mass', 'cube mass', 0.01, 5.0, 0.03, unit='kg', format='.3g'),
                LogSlider('mu', 'friction μ', 0.01, 2.0, 1.0, unit='(coefficient)', format='.3g'),
                Choice('condim', 'condim', (1, 3, 4, 6), 6)]
    force = Plot(key='force', title='moving jaw force', xlabel='time (s)', ylabel='normal force (N)',
                 xlim=(0.0, gripper.CLOSE + HOLD), ylim=(0.0, FORCE_TOP), width=420, height=280,
                 legend=(Entry('jaw force', plots.PALETTE['blue']), Entry('|τ| / lever', plots.PALETTE['orange'],
                                                                          'dash')))
    slide = Plot(key='slide', title='the cube along the jaws', xlabel='time (s)', ylabel='slide (mm)',
                 xlim=(0.0, gripper.CLOSE + HOLD), ylim=(-1.0, SLIDE_TOP_MM), width=420, height=280)
    note = (f'The cube floats while the gripper closes ({gripper.CLOSE:g} s), then its weight comes on. Verdicts as '
            f'in the grasp table: slips past {1e3 * grasp.SLIP_DISTANCE:g} mm, jitters past '
            f'{100 * grasp.JITTER_FRACTION:g} % swing of the jaw force, crushed past '
            f'{1e3 * grasp.CRUSH_DEPTH:g} mm of overlap.')
    return PanelSpec(key='gripper', title='Squeeze and slip', controls=controls, plots=(force, slide),
                     words={**WORDS, 'running': 'running… {t:.1f} s'}, note=note)


def panel_setup(values: dict) -> gripper.GripSetup:
    """The grasp the controls' values (SI) set."""
    return gripper.GripSetup(torque_limit=values['torque_limit'], kp=values['kp'], armature=values['armature'],
                             timestep=values['timestep'], integrator=values['integrator'],
                             command=COMMANDS[values['command']], mass=values['mass'], mu=values['mu'],
                             condim=int(values['condim']))


def panel_run(values: dict) -> tuple[gripper.GripRun, dict]:
    """The panel's physics: one grasp (:func:`physai.engine.gripper.grip`, held :data:`HOLD` s) and its verdict
    (:func:`physai.experiments.gripper.verdict`, with the margin)."""
    setup = panel_setup(values)
    run = gripper.grip(setup, hold=HOLD)
    result = grasp.verdict(run)
    squeeze = result['squeeze_n']
    result['margin'] = (float(grip.slip_margin(setup.mass, squeeze, setup.mu))
                        if np.isfinite(squeeze) and squeeze > 0 else 0.0)
    return run, result


def status(result: dict) -> str:
    """The words the panel writes on a grasp (:data:`WORDS`)."""
    return WORDS[result['verdict']].format(squeeze=result['squeeze_n'], margin=result['margin'],
                                           slide=result['slide_mm'], depth=result['penetration_mm'],
                                           jitter=result['jitter_n'])


# ---------------------------------------------------------------------------------------------------------------
# The page panel (book/_static/panels/gripper_panels.js)

TWIN_LIMITS = (0.5, grasp.LEROBOT_LIMIT, so101.MENAGERIE_FORCERANGE)
"""N·m: the torque limits the page's first view is precomputed at (a weak servo, LeRobot's 50 %, Menagerie's)."""

TWIN_MASSES = (0.03, 0.3, 3.0)
"""kg: the cube masses the page's first view is precomputed at."""

FORCE_STEP = 0.05
"""N: the stored jaw force traces' resolution."""

SLIDE_STEP = 0.01
"""mm: the stored slide trace's resolution."""


def grasp_part(values: dict) -> dict:
    """One grasp as the first view stores it: the moving jaw's force and |τ|/lever (N, clipped to the plot, packed
    in :data:`FORCE_STEP`), the slide (mm, packed in :data:`SLIDE_STEP`), the verdict and its words."""
    run, result = panel_run(values)
    law = np.where(np.isfinite(run.lever), np.abs(run.torque) / run.lever, np.nan)
    return {'gripJaw': web.pack(np.clip(run.jaw_force, 0.0, FORCE_TOP).tolist(), FORCE_STEP),
            'gripLaw': web.pack(np.where(np.isfinite(law), np.clip(law, 0.0, FORCE_TOP), np.nan).tolist(), FORCE_STEP),
            'gripSlide': web.pack(np.clip(1e3 * run.slide, -1.0, SLIDE_TOP_MM).tolist(), SLIDE_STEP),
            'gripWords': status(result), 'h': float(values['timestep']), 'verdict': result['verdict']}


def gripper_constants() -> dict:
    """What the page needs to draw and run a grasp: the phases, the verdict's thresholds, the plots' tops, the
    commands and the open gripper (the torque kp asks at the start, the force plot's title), the limit the
    percentage is of (Menagerie's)."""
    return {'close': gripper.CLOSE, 'hold': HOLD, 'tail': grasp.TAIL, 'slipMm': 1e3 * grasp.SLIP_DISTANCE,
            'jitterFraction': grasp.JITTER_FRACTION, 'crushMm': 1e3 * grasp.CRUSH_DEPTH, 'forceTop': FORCE_TOP,
            'slideTop': SLIDE_TOP_MM, 'forceStep': FORCE_STEP, 'slideStep': SLIDE_STEP, 'commands': COMMANDS,
            'kv': so101.MENAGERIE_KV, 'open': gripper.OPEN, 'rated': so101.MENAGERIE_FORCERANGE,
            'gravity': grip.GRAVITY,
            'slideColor': plots.PALETTE['green']}


def gripper_twin(*, limits=TWIN_LIMITS, masses=TWIN_MASSES):
    """Chapter 5's page panel (:func:`gripper_spec`) with its first view precomputed: one grasp at every torque limit
    of ``limits`` and cube mass of ``masses``, the other controls at the panel's defaults. On the page a reader's
    torque limit or mass picks the nearest precomputed grasp until MuJoCo runs in the page
    (:func:`physai.interface.web_arm.gripper_live`, in the next cell), which reruns every setting.

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.web.first_view`).
    """
    spec = gripper_spec()
    at = spec.defaults
    parts = {'grasp': web.Part(('torque_limit', 'mass'), lambda torque_limit, mass: grasp_part(
        {**at, 'torque_limit': torque_limit, 'mass': mass}))}
    return web.first_view(spec, 'gripper_panels.js', grid={'torque_limit': limits, 'mass': masses}, parts=parts,
                          constants=gripper_constants(),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, its runs made by the kernel\'s Python MuJoCo.')


WIDGET_WORDS = {'pending': 'running MuJoCo…'}
"""The widget's words besides the page's: while the kernel runs a setting (kept out of :func:`gripper_spec`, whose
words the page's stored first view carries)."""


def gripper_widget():
    """Chapter 5's page panel (:func:`gripper_spec`) as a Jupyter widget (:class:`physai.interface.widget.PanelWidget`):
    the page's ``gripper_panels.js`` drawing the grasp Python MuJoCo runs at the controls' exact values
    (:func:`grasp_part`, as the first view stores one). The grasp (a few hundred ms, more at a fine timestep:
    ``benchmarks/bench_panel.py``) comes in the widget's second reply; the first says it is running."""
    from physai.interface import widget
    spec = gripper_spec()
    spec = dataclasses.replace(spec, words={**spec.words, **WIDGET_WORDS})
    return widget.PanelWidget(spec, 'gripper_panels.js', constants=gripper_constants(), now={},
                              later={'grasp': widget.whole_part(spec, grasp_part)})
