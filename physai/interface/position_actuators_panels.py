"""Chapter 1's live panel: the link on a ``<position>`` servo under kp, armature, timestep, integrator and damping.

The panel is described once, :func:`servo_spec` (controls, plots, words), and rendered twice: :func:`servo_panel` in
the kernel (ipywidgets, matplotlib), :func:`servo_twin` with :func:`physai.interface.web.servo_live` on the published
page (``book/_static/panels/position_actuators_panels.js``: the first view precomputed here, then MuJoCo in the
reader's browser). Three plots answer every control: the step response with its sag and 10-90 % rise (or
"diverged"), sag and rise time against kp, and where in (armature, kp) the step is stable, MuJoCo's runs against the
linear bound. Its physics is :mod:`physai.experiments.position_actuators` (``servo_step``, ``servo_kp_curve``,
``servo_stability``, ``servo_bounds``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.colors import ListedColormap

from physai.engine import link
from physai.engine.link import LINK_INERTIA
from physai.experiments.servo_panel import (PANEL_KP_GRID, STABILITY_ARMATURE, STABILITY_KP, STABILITY_STEPS,
                                            servo_bounds, servo_kp_curve, servo_stability, servo_step, servo_step_start)
from physai.interface import plots, web
from physai.interface.live import Deferred, Panel, on_top, sprite
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


def servo_panel(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
                duration: float = 3.0) -> Panel:
    """Chapter 1's live panel in the kernel: :func:`servo_spec` rendered with ipywidgets and matplotlib.

    (1) the step response from ``q0`` to 0 with sag and 10–90 % rise marked, a diverged run flagged
    in red; (2) sag and rise time against kp (log axes) for the current armature, timestep, integrator and damping,
    the current kp marked; (3) stability over (armature, kp) for the current integrator, timestep and damping: cells
    where MuJoCo diverges, the growth = 1 bound and hω = 2, the current point.

    Every axis is fixed, so a change redraws only the moving artists. The step response answers at once, or,
    when the whole run would not fit the panel's budget (RK4 below a 1 ms step,
    :data:`~physai.experiments.servo_panel.PANEL_STEP_BUDGET`), with its first second
    (:func:`~physai.experiments.servo_panel.servo_step_start`, the same samples) and a note that the rest is
    coming; the kp curve (one batch of 25 runs) and the stability map (one batch of 209 short runs) are
    :class:`Deferred`: computed once per (armature, timestep, integrator, damping) and (timestep, integrator, damping)
    on the panel's worker, drawn as pending until then (the analytic bounds are drawn at once). The worker computes
    the whole step response first, then the curve, then the map.

    Args:
      kp, armature, timestep, integrator, dampratio: the controls' start and reset values (SI units).
      q0: start angle, rad.
      duration: simulated time of the step response, s.

    Returns:
      The :class:`Panel`; show it as the last expression of a cell.
    """
    spec = servo_spec(kp=kp, armature=armature, timestep=timestep, integrator=integrator, dampratio=dampratio,
                      q0=q0, duration=duration)
    fixed = {'q0': q0, 'duration': duration}
    step_part = Deferred(functools.partial(servo_step, **fixed))
    curve_part = Deferred(functools.partial(servo_kp_curve, **fixed))
    map_part = Deferred(functools.partial(servo_stability, q0=q0))

    def compute(values: dict) -> dict:
        response, partial = step_part.get(values), False
        if response is None:
            first = servo_step_start(**{**values, **fixed})
            if first is None:  # the whole run fits the budget: answer with it
                response = step_part.compute(values)
            else:
                response, partial = first, True
        return {'response': response, 'partial': partial, 'curve': curve_part.get(values),
                'stability': map_part.get(values),
                'bounds': servo_bounds(values['timestep'], values['integrator'], values['dampratio'])}

    def setup(fig) -> dict:
        step, curve, stab = spec.plots
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={'width_ratios': [p.width for p in spec.plots]})
        marks = plots.StepResponseMarks(ax1, duration=duration, animated=True, ylim=step.ylim, legend=False)
        plots.apply_plot(ax1, step, title=False)
        ax1.title.set_animated(True)  # it names the integrator and timestep
        sprite(ax1.title)  # over the fixed background: each title is rendered once
        legend = plots.legend(ax1, step, framealpha=1.0, fancybox=False)
        on_top(legend)  # over the trajectory
        # (2) sag and rise against kp: sag on the left axis, rise time on the second axis
        ax2r = plots.apply_plot(ax2, curve)
        (sag_line,) = ax2.plot([], [], 'o-', ms=3, color=COLORS['sag_curve'], animated=True)
        (rise_line,) = ax2r.plot([], [], 's-', ms=3, color=COLORS['rise_curve'], animated=True)
        (bad_kp,) = ax2.plot([], [], 'x', ms=6, mew=2, color=COLORS['diverged'], transform=ax2.get_xaxis_transform(),
                             animated=True)
        (kp_line,) = ax2.plot([kp, kp], [0, 1], color=COLORS['current'], lw=1.2, ls='--',
                              transform=ax2.get_xaxis_transform(), animated=True)
        sag_point = plots.mark_point(ax2, kp, 1.0, label=None, animated=True)
        rise_point = plots.mark_point(ax2r, kp, 1.0, label=None, animated=True)
        curve_note = ax2.text(0.5, 0.5, '', transform=ax2.transAxes, ha='center', va='center', fontsize=9,
                              color='#555555', animated=True, bbox=dict(facecolor='white', edgecolor='#aaaaaa', pad=3))
        ax2.yaxis.label.set_color(COLORS['sag_curve'])
        on_top(plots.legend(ax2, curve, framealpha=1.0, fancybox=False))
        # (3) stability map over (armature, kp); it changes only with timestep, integrator and damping
        mesh = ax3.pcolormesh(ARMATURE_EDGES, KP_EDGES, np.zeros((len(STABILITY_KP), len(STABILITY_ARMATURE))),
                              cmap=ListedColormap(MAP_FILLS), vmin=-0.5, vmax=2.5, shading='flat', animated=True)
        plots.apply_plot(ax3, stab)
        ax3.grid(False)
        (bound,) = ax3.plot([], [], color=COLORS['bound'], lw=2, animated=True)
        (two,) = ax3.plot([], [], color=COLORS['bound'], lw=1, ls='--', animated=True)
        point = plots.mark_point(ax3, armature, kp, label=None, animated=True)
        on_top(plots.legend(ax3, stab, framealpha=1.0, fancybox=False), *ax3.spines.values())  # over the map
        note = ax3.text(0.03, 0.04, '', transform=ax3.transAxes, ha='left', va='bottom', fontsize=8, animated=True,
                        bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        map_note = ax3.text(0.5, 0.62, spec.say('map_pending'), transform=ax3.transAxes, ha='center', va='center',
                            fontsize=9, color='#555555', animated=True, visible=False,
                            bbox=dict(facecolor='white', edgecolor='#aaaaaa', pad=3))
        fig.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.9, wspace=0.5)
        return {'marks': marks, 'ax1': ax1, 'sag': sag_line, 'rise': rise_line, 'bad_kp': bad_kp,
                'kp_line': kp_line, 'sag_point': sag_point, 'rise_point': rise_point,
                'curve_note': curve_note, 'mesh': mesh, 'bound': bound, 'two': two, 'point': point,
                'note': note, 'map_note': map_note, 'stability': None, 'curve': None}

    def draw(state: dict, results: dict, values: dict) -> None:
        response, curve, stab, bounds = (results['response'], results['curve'], results['stability'],
                                         results['bounds'])
        marks = state['marks']
        marks.update(response)
        partial = results['partial'] and not response.diverged  # a run that diverged early is all there is
        if partial:
            for line in (marks.settled, marks.levels, marks.rise):
                line.set_data([], [])
            marks.readout.set_text(spec.say('partial', t=float(response.t[-1]), duration=duration))
            marks.readout.set_color('#555555')
        h_ms = values['timestep'] * 1e3
        state['ax1'].title.set_text(spec.say('step_title', integrator=values['integrator'], h_ms=h_ms))
        state['bound'].set_data(bounds['bound_armature'], bounds['bound_kp'])
        state['two'].set_data(bounds['bound_armature'], bounds['two_kp'])
        if stab is not state['stability']:
            cells = (np.zeros(stab_shape) if stab is None else 1.0 + stab['diverged'].astype(float))
            state['mesh'].set_array(cells.ravel())
            state['stability'] = stab
        state['map_note'].set_visible(stab is None)
        if curve is not state['curve']:
            if curve is None:
                for name in ('sag', 'rise', 'bad_kp'):
                    state[name].set_data([], [])
            else:
                state['sag'].set_data(curve['kp'], np.where(curve['sag_deg'] > 0, curve['sag_deg'], np.nan))
                state['rise'].set_data(curve['kp'], curve['rise_ms'])
                bad = curve['kp'][curve['diverged']]
                state['bad_kp'].set_data(bad, np.full(len(bad), 0.04))
            state['curve'] = curve
        state['curve_note'].set_text('' if curve is not None else spec.say('curve_pending'))
        state['curve_note'].set_visible(curve is None)
        k = values['kp']
        state['kp_line'].set_xdata([k, k])
        settled = response.settled and not partial
        state['sag_point'].set_data([k], [response.sag_deg if settled and response.sag_deg > 0 else np.nan])
        state['rise_point'].set_data([k], [response.rise_ms if settled else np.nan])
        state['point'].set_data([values['armature']], [k])
        star = bounds['h_omega_star']
        h_omega = values['timestep'] * math.sqrt(k / (LINK_INERTIA + values['armature']))
        bound_text = spec.say('bound', star=star) if math.isfinite(star) else spec.say('no_bound')
        state['note'].set_text(f"{bound_text}\n{spec.say('h_omega', h_omega=h_omega)}")

    stab_shape = (len(STABILITY_KP), len(STABILITY_ARMATURE))
    return Panel(spec.controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.9), dpi=80,
                 deferred=(step_part, curve_part, map_part))


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
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab use the live panel '
                                   'above.')
