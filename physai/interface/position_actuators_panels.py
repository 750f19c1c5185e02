"""Chapter 1's live panel: the link on a ``<position>`` servo under kp, armature, timestep, integrator and damping.

The panel is described once, :func:`servo_spec` (controls, plots, words), and drawn by the page's
``book/_static/panels/position_actuators_panels.js`` in two places: on the published page, :func:`servo_twin` with
:func:`physai.interface.web.servo_live` (the first view precomputed here, then MuJoCo in the reader's browser), and in
Jupyter or Colab, :func:`physai.interface.widget.servo_widget` (Python MuJoCo in the kernel runs every setting). Three
plots answer every control: the step response with its sag and 10-90 % rise (or "diverged"), sag and rise time against
kp, and where in (armature, kp) the step is stable, MuJoCo's runs against the linear bound. Its physics is
:mod:`physai.experiments.servo_panel` (``servo_step``, ``servo_kp_curve``, ``servo_stability``); :func:`step_part`,
:func:`curve_part` and :func:`map_part` put its results in the form both read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from physai.engine import link
from physai.engine.link import LINK_INERTIA
from physai.experiments.servo_panel import (PANEL_KP_GRID, STABILITY_ARMATURE, STABILITY_KP, STABILITY_STEPS,
                                            servo_kp_curve, servo_stability, servo_step)
from physai.interface import plots, web
from physai.interface.panel import Axis2, Choice, Entry, PanelSpec, Plot, common_controls
from physai.laws.stability import critical_h_omega

COLORS = plots.COLORS

DAMPRATIOS = (0.0, 0.5, 1.0, 2.0)
"""The damping choice: dampratio ζ, kv = 2ζ sqrt(kp·I) recomputed for every armature."""

MAP_FILLS = ('#e6e6e6', '#e8f1fa', '#f7c6c6')
"""The stability map's cells: not run yet, settles, MuJoCo diverges (or swings wider than it started)."""


def _edges(centers: np.ndarray, log: bool) -> np.ndarray:
    x = np.log10(centers) if log else centers
    mid = (x[1:] + x[:-1]) / 2
    edges = np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])
    return 10 ** edges if log else edges


KP_EDGES = _edges(STABILITY_KP, log=True)
ARMATURE_EDGES = _edges(STABILITY_ARMATURE, log=False)


def servo_spec(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
               integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
               duration: float = 3.0) -> PanelSpec:
    """Chapter 1's panel, described once: the common four and the damping choice, the three plots, the words.

    Args:
      kp, armature, timestep, integrator, dampratio: the controls' start and reset values (SI units).
      q0: start angle, rad (the command is 0): it sets the step plot's range.
      duration: simulated time of the step response, s.
    """
    q0_deg = math.degrees(q0)
    controls = common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator) + [
        Choice('dampratio', 'damping ζ', DAMPRATIOS, dampratio, labels=[f'dampratio {z:g}' for z in DAMPRATIOS],
               url='zeta')]
    step = Plot(key='step', title='step response', xlabel='time (s)', ylabel='joint angle q (deg)',
                xlim=(0.0, duration), ylim=(1.25 * q0_deg, -0.5 * q0_deg),
                legend=(Entry('command u = 0', COLORS['command'], 'dash'), Entry('q(t)', COLORS['response']),
                        Entry('settled', COLORS['sag'], 'dot'), Entry('10-90 % rise', COLORS['rise'])))
    curve = Plot(key='curve', title='sag and rise time vs kp', xlabel='kp (N·m/rad)', ylabel='sag (deg)',
                 xlim=(PANEL_KP_GRID[0] / 1.3, PANEL_KP_GRID[-1] * 1.3), ylim=(1e-3, 1e2), xlog=True, ylog=True,
                 y2=Axis2(label='rise time (ms)', lim=(1.0, 1e4), log=True, color=COLORS['rise_curve']),
                 legend=(Entry('sag', COLORS['sag_curve']), Entry('rise time', COLORS['rise_curve']),
                         Entry('not settled in the run', COLORS['diverged'], 'x'),
                         Entry('current kp', COLORS['current'], 'o')))
    stability = Plot(key='map', title='stability', xlabel='armature (kg·m²)', ylabel='kp (N·m/rad)',
                     xlim=(float(ARMATURE_EDGES[0]), float(ARMATURE_EDGES[-1])),
                     ylim=(float(KP_EDGES[0]), float(KP_EDGES[-1])), ylog=True, notes=2, corner='lr', height=290,
                     legend=(Entry('diverges or swings wide', MAP_FILLS[2], 'box'), Entry('not run yet', MAP_FILLS[0], 'box'),
                             Entry('growth = 1', COLORS['bound']), Entry('hω = 2', COLORS['bound'], 'dash'),
                             Entry('current', COLORS['current'], 'o')))
    words = {**plots.STEP_WORDS,
             'flag': 'diverged', 'after': 'after {t:.3f} s',
             'partial': 'first {t:.1f} s of {duration:g} s, the rest is on its way…',
             'step_title': 'step response, {integrator}, h = {h_ms:.1f} ms',
             'map_title': 'stability, {integrator}, h = {h_ms:.1f} ms',
             'bound': 'bound hω* = {star:.2f}', 'no_bound': 'no bound (stable)', 'h_omega': 'current hω = {h_omega:.2f}',
             'curve_pending': 'running 25 step responses…', 'map_pending': 'running MuJoCo over the grid…',
             'map_progress': 'MuJoCo {rows}/{total} rows'}
    note = ('Start at {q0_deg:.1f}° with command 0°; dampratio ζ sets kv = 2ζ√(kp·I) for every armature. Stability: '
            'each cell runs {steps} steps, red where MuJoCo diverges or the link still swings wider than it started.')
    return PanelSpec(key='servo', title='The servo on the link', controls=controls,
                     plots=(step, curve, stability), words=words, note=note)


def note_values(q0: float) -> dict:
    """The values the description's note is filled with."""
    return {'q0_deg': math.degrees(q0), 'steps': STABILITY_STEPS}


# ---------------------------------------------------------------------------------------------
# The page panel: its precomputed first view

TWIN_KP = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)
"""kp of the first view's grid, N·m/rad."""

TWIN_ARMATURE = (0.0, 0.002, 0.005, 0.01, 0.028, 0.1)
"""armature of the first view's grid, kg·m²."""

TWIN_INTEGRATORS = ('Euler', 'implicitfast', 'discrete')
"""Integrators of the first view's grid."""

TRACE_STEP_DEG = 0.1
"""Resolution of a stored step response, degrees (a pixel of the step plot is about 0.2°)."""


def step_part(response: link.StepResponse, *, ylim: tuple[float, float]) -> dict:
    """A step response as the page stores it: the angle every step (degrees, clipped to the plot's range and 5°,
    packed at :data:`TRACE_STEP_DEG`), its figures to four digits and the readout's words
    (``book/_static/panels/position_actuators_panels.js`` draws it as it draws a run of its own)."""
    return {'h': response.params.timestep,
            'q': web.trace(np.degrees(response.q), TRACE_STEP_DEG, (ylim[0] - 5.0, ylim[1] + 5.0)),
            'diverged': bool(response.diverged), 'settled': bool(response.settled), 'bad': plots.readout_bad(response),
            'tEnd': web.rounded(response.t[-1]), 'sagDeg': web.rounded(response.sag_deg),
            'riseMs': web.rounded(response.rise_ms), 'riseWindow': [web.rounded(x) for x in response.rise_window],
            'readout': plots.readout(response)}


def curve_part(curve: dict) -> dict:
    """:func:`~physai.experiments.servo_panel.servo_kp_curve` as the page stores it (four digits)."""
    return {'sagDeg': [web.rounded(x) for x in curve['sag_deg']], 'riseMs': [web.rounded(x) for x in curve['rise_ms']],
            'bad': [bool(b) for b in curve['diverged']]}


def map_part(stability: dict) -> list[list[int]]:
    """:func:`~physai.experiments.servo_panel.servo_stability`'s cells as the page stores them: 1 unstable."""
    return stability['diverged'].astype(int).tolist()


def servo_constants(q0: float, duration: float) -> dict:
    """The numbers the page's panel draws and runs with (JSON-ready)."""
    return {'q0': q0, 'duration': duration, 'traceStep': TRACE_STEP_DEG,
            'link': {'inertia': LINK_INERTIA, 'settleWindow': link.SETTLE_WINDOW,
                     'settledP2pDeg': link.SETTLED_P2P_DEG, 'stillRad': link.STILL_RAD,
                     'creepShare': link.CREEP_SHARE, 'riseStart': link.RISE_START},
            'kpGrid': PANEL_KP_GRID.tolist(), 'stabilityKp': STABILITY_KP.tolist(),
            'stabilityArmature': STABILITY_ARMATURE.tolist(), 'stabilitySteps': STABILITY_STEPS,
            'mapFills': MAP_FILLS, 'note': note_values(q0),
            'criticalHOmega': {i: {format(z, 'g'): web.rounded(critical_h_omega(i, z), 8) for z in DAMPRATIOS}
                               for i in INTEGRATOR_NAMES}}


INTEGRATOR_NAMES = ('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')


def servo_twin(*, kps: Sequence[float] = TWIN_KP, armatures: Sequence[float] = TWIN_ARMATURE,
               integrators: Sequence[str] = TWIN_INTEGRATORS, kp: float = 100.0, armature: float = 0.028,
               timestep: float = 0.005, integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
               duration: float = 3.0):
    """Chapter 1's page panel (:func:`servo_spec`) with its first view precomputed: the step response, the kp curve and
    the stability map at every kp of ``kps``, armature of ``armatures`` and integrator of ``integrators``, at the
    panel's timestep and damping. On the page a reader's kp, armature or integrator picks the nearest precomputed
    run until MuJoCo runs in the page (:func:`physai.interface.web.servo_live`, in the next cell), which reruns
    every setting.

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.web.first_view`).
    """
    spec = servo_spec(kp=kp, armature=armature, timestep=timestep, integrator=integrator, dampratio=dampratio,
                      q0=q0, duration=duration)
    ylim = spec.plot('step').ylim
    parts = {
        'step': web.Part(('kp', 'armature', 'integrator'), lambda kp, armature, integrator: step_part(
            servo_step(kp, armature, timestep, integrator, dampratio, q0, duration), ylim=ylim)),
        'curve': web.Part(('armature', 'integrator'), lambda armature, integrator: curve_part(
            servo_kp_curve(armature, timestep, integrator, dampratio, q0, duration))),
        'map': web.Part(('integrator',), lambda integrator: map_part(
            servo_stability(timestep, integrator, dampratio, q0))),
    }
    return web.first_view(spec, 'position_actuators_panels.js',
                          grid={'kp': kps, 'armature': armatures, 'integrator': integrators}, parts=parts,
                          constants=servo_constants(q0, duration),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, run by the kernel.')
