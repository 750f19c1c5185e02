"""Chapter 1's live panel and its static twin: the link on a ``<position>`` servo under kp, armature, timestep and
integrator.

:func:`servo_panel` draws three plots that answer every slider at once: the step response with its sag and 10-90 %
rise (or "diverged"), sag and rise time against kp, and where in (armature, kp) the step is stable, MuJoCo's runs
against the linear bound. Its physics is :mod:`physai.experiments.position_actuators` (``servo_step``,
``servo_kp_curve``, ``servo_stability``); :func:`servo_twin` is the same figure precomputed for the published page.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from physai.interface import plots
from physai.engine.link import LINK_INERTIA, step_responses
from physai.experiments.position_actuators import (PANEL_KP_GRID, STABILITY_ARMATURE, STABILITY_KP, unstable, panel_servo,
                                                   servo_bounds, servo_kp_curve, servo_stability, servo_step,
                                                   servo_step_start)
from physai.interface.live import Deferred, Panel, common_controls, on_top, sprite
from physai.interface.twin import TwinAxes, TwinSlider, static_twin, twin_line, twin_markers, twin_text
from physai.laws.stability import critical_h_omega


def _edges(centers: np.ndarray, log: bool) -> np.ndarray:
    x = np.log10(centers) if log else centers
    mid = (x[1:] + x[:-1]) / 2
    edges = np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])
    return 10 ** edges if log else edges


def servo_panel(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
                duration: float = 3.0) -> Panel:
    """Chapter 1's live panel: the common four controls and three plots of the link's servo.

    (1) the step response from ``q0`` to 0 with sag and 10–90 % rise marked, a diverged run flagged
    in red; (2) sag and rise time against kp (log axes) for the current armature, timestep and
    integrator, the current kp marked; (3) stability over (armature, kp) for the current integrator
    and timestep: cells where MuJoCo diverges, the growth = 1 bound and hω = 2, the current point.

    Every axis is fixed, so a change redraws only the moving artists. The step response answers at once, or,
    when the whole run would not fit the panel's budget (RK4 below a 1 ms step,
    :data:`~physai.experiments.position_actuators.PANEL_STEP_BUDGET`), with its first second
    (:func:`~physai.experiments.position_actuators.servo_step_start`, the same samples) and a note that the rest is
    coming; the kp curve (one batch of 25 runs) and the stability map (one batch of 209 short runs) are
    :class:`Deferred`: computed once per (armature, timestep, integrator) and (timestep, integrator) on the
    panel's worker, drawn as pending until then (the analytic bounds are drawn at once). The worker computes the
    whole step response first, then the curve, then the map.

    Args:
      kp, armature, timestep, integrator: the controls' start and reset values (SI units).
      dampratio: ζ, kv = 2ζ sqrt(kp·I) recomputed for every armature.
      q0: start angle, rad.
      duration: simulated time of the step response, s.

    Returns:
      The :class:`Panel`; show it as the last expression of a cell.
    """
    fixed = {'dampratio': dampratio, 'q0': q0, 'duration': duration}
    step_part = Deferred(functools.partial(servo_step, **fixed))
    curve_part = Deferred(functools.partial(servo_kp_curve, **fixed))
    map_part = Deferred(functools.partial(servo_stability, dampratio=dampratio, q0=q0))

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
                'bounds': servo_bounds(values['timestep'], values['integrator'], dampratio)}

    def setup(fig) -> dict:
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={'width_ratios': [1.15, 1, 1]})
        marks = plots.StepResponseMarks(ax1, duration=duration, animated=True,
                                        ylim=(math.degrees(q0) * 1.25, -math.degrees(q0) * 0.5))
        ax1.title.set_animated(True)  # it names the integrator and timestep
        sprite(ax1.title)  # over the fixed background: each title is rendered once
        legend = ax1.get_legend()
        legend.get_frame().set_alpha(1.0)
        legend.get_frame().set_boxstyle('square', pad=0)
        on_top(legend)  # over the trajectory
        # (2) sag and rise against kp: sag on the left axis, rise time on a twin right axis
        ax2.set_xlim(PANEL_KP_GRID[0] / 1.3, PANEL_KP_GRID[-1] * 1.3)
        ax2.set_ylim(1e-3, 1e2)
        plots.log_axis(ax2, 'both')
        ax2r = ax2.twinx()
        ax2r.set_ylim(1, 1e4)
        plots.log_axis(ax2r, 'y')
        ax2r.grid(False)
        ax2r.spines['right'].set_visible(True)
        (sag_line,) = ax2.plot([], [], 'o-', ms=3, color=plots.COLORS['sag_curve'], label='sag',
                               animated=True)
        (rise_line,) = ax2r.plot([], [], 's-', ms=3, color=plots.COLORS['rise_curve'],
                                 label='rise time', animated=True)
        (bad_kp,) = ax2.plot([], [], 'x', ms=6, mew=2, color=plots.COLORS['diverged'],
                             label='never settles', transform=ax2.get_xaxis_transform(), animated=True)
        (kp_line,) = ax2.plot([kp, kp], [0, 1], color=plots.COLORS['current'], lw=1.2, ls='--',
                              transform=ax2.get_xaxis_transform(), animated=True)
        sag_point = plots.mark_point(ax2, kp, 1.0, label='current kp', animated=True)
        rise_point = plots.mark_point(ax2r, kp, 1.0, label=None, animated=True)
        curve_note = ax2.text(0.5, 0.5, '', transform=ax2.transAxes, ha='center', va='center',
                              fontsize=9, color='#555555', animated=True,
                              bbox=dict(facecolor='white', edgecolor='#aaaaaa', pad=3))
        plots.label(ax2, 'kp (N·m/rad)', 'sag (deg)', 'sag and rise time vs kp')
        ax2r.set_ylabel('rise time (ms)', color=plots.COLORS['rise_curve'])
        ax2.yaxis.label.set_color(plots.COLORS['sag_curve'])
        on_top(ax2.legend(handles=[sag_line, rise_line, bad_kp, sag_point], loc='upper right',
                          fontsize=7.5, framealpha=1.0, fancybox=False))
        # (3) stability map over (armature, kp); it changes only with timestep and integrator
        kp_edges = _edges(STABILITY_KP, log=True)
        arm_edges = _edges(STABILITY_ARMATURE, log=False)
        mesh = ax3.pcolormesh(arm_edges, kp_edges,
                              np.zeros((len(STABILITY_KP), len(STABILITY_ARMATURE))),
                              cmap=ListedColormap(['#e8f1fa', '#f7c6c6']), vmin=0, vmax=1,
                              shading='flat', animated=True)
        ax3.set_xlim(arm_edges[0], arm_edges[-1])
        ax3.set_ylim(kp_edges[0], kp_edges[-1])
        plots.log_axis(ax3, 'y')
        ax3.grid(False)
        (bound,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=2, label='growth = 1', animated=True)
        (two,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=1, ls='--', label='hω = 2', animated=True)
        point = plots.mark_point(ax3, armature, kp, label='current', animated=True)
        legend = ax3.legend(handles=[Patch(color='#f7c6c6', label='MuJoCo diverges'), bound, two, point],
                            loc='lower right', fontsize=7.5, framealpha=1.0, fancybox=False)
        on_top(legend, *ax3.spines.values())  # over the animated map
        note = ax3.text(0.03, 0.04, '', transform=ax3.transAxes, ha='left', va='bottom', fontsize=8,
                        animated=True,
                        bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        map_note = ax3.text(0.5, 0.62, 'running MuJoCo over the grid…', transform=ax3.transAxes,
                            ha='center', va='center', fontsize=9, color='#555555', animated=True,
                            visible=False, bbox=dict(facecolor='white', edgecolor='#aaaaaa', pad=3))
        plots.label(ax3, 'armature (kg·m²)', 'kp (N·m/rad)', 'stability')
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
            marks.readout.set_text(f'first {response.t[-1]:.1f} s of {duration:g} s, the rest is on its way…')
            marks.readout.set_color('#555555')
        state['ax1'].title.set_text(f"step response, {values['integrator']}, h = {values['timestep'] * 1e3:.1f} ms")
        state['bound'].set_data(bounds['bound_armature'], bounds['bound_kp'])
        state['two'].set_data(bounds['bound_armature'], bounds['two_kp'])
        if stab is not state['stability']:
            if stab is not None:
                state['mesh'].set_array(stab['diverged'].astype(float).ravel())
            state['stability'] = stab
        state['mesh'].set_visible(stab is not None)
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
        state['curve_note'].set_text('' if curve is not None else 'running 25 step responses…')
        state['curve_note'].set_visible(curve is None)
        k = values['kp']
        state['kp_line'].set_xdata([k, k])
        settled = response.settled and not partial
        state['sag_point'].set_data([k], [response.sag_deg if settled and response.sag_deg > 0 else np.nan])
        state['rise_point'].set_data([k], [response.rise_ms if settled else np.nan])
        state['point'].set_data([values['armature']], [k])
        star = bounds['h_omega_star']
        h_omega = values['timestep'] * math.sqrt(k / (LINK_INERTIA + values['armature']))
        bound_text = f'bound hω* = {star:.2f}' if math.isfinite(star) else 'no bound (stable)'
        state['note'].set_text(f'{bound_text}\ncurrent hω = {h_omega:.2f}')

    controls = common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator)
    return Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.9), dpi=80,
                 deferred=(step_part, curve_part, map_part))


# ---------------------------------------------------------------------------------------------
# Chapter 1: the servo twin

TWIN_KP = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)
"""kp positions of chapter 1's twin, N·m/rad."""

TWIN_ARMATURE = (0.0, 0.002, 0.005, 0.01, 0.028, 0.1)
"""armature positions of chapter 1's twin, kg·m²."""

TWIN_INTEGRATORS = ('Euler', 'implicitfast', 'discrete')
"""Integrators of chapter 1's twin."""


def servo_twin(key: str = 'servo', *, kps: Sequence[float] = TWIN_KP,
               armatures: Sequence[float] = TWIN_ARMATURE,
               integrators: Sequence[str] = TWIN_INTEGRATORS, timestep: float = 0.005,
               dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0,
               kp_default: float = 100.0, armature_default: float = 0.028,
               integrator_default: str = 'implicitfast'):
    """Chapter 1's static twin: kp and armature sliders and an integrator choice over a precomputed grid.

    All len(kps) × len(armatures) × len(integrators) step responses run in one batch. Three plots:
    the step response with its sag / rise readout (or a red "diverged"); sag and rise time against kp
    for the chosen armature and integrator, the current kp marked; and which grid cells diverge over
    (armature, kp) with the growth = 1 bound (:func:`critical_h_omega`) and hω = 2, current point marked.

    Returns:
      ``IPython.display.HTML`` (see :func:`static_twin`).
    """
    kps, armatures, integrators = tuple(kps), tuple(armatures), tuple(integrators)
    grid = [(i, a, k) for i in integrators for a in armatures for k in kps]
    params = [panel_servo(k, a, timestep, i, dampratio) for i, a, k in grid]
    responses = dict(zip(grid, step_responses(params, q0=q0, duration=duration)))
    stride = max(1, round(0.01 / timestep))  # one sample per 10 ms keeps the page small
    kp_arr = np.array(kps)
    arm_line = np.linspace(min(armatures), max(armatures), 41)
    colors = plots.COLORS
    q0_deg = math.degrees(q0)

    def frame(kp, armature, integrator):
        r = responses[(integrator, armature, kp)]
        t, q = r.t[::stride], np.degrees(r.q[::stride])
        step = [twin_line([0, duration], [0, 0], color=colors['command'], width=1, dash='4 3',
                          label='command u = 0'),
                twin_line(t, np.clip(q, 1.25 * q0_deg - 5, -0.5 * q0_deg + 5), label='q(t)')]
        if r.diverged:
            step.append(twin_text('diverged', x=0.5, y=0.55, color=colors['diverged'], size=22,
                                  bold=True))
            step.append(twin_text(f'after {r.t[-1]:.3f} s', x=0.5, y=0.4,
                                  color=colors['diverged'], size=12))
        else:
            t10, t90, q10, q90, q_final = plots.rise_marks(r)
            qf = math.degrees(q_final)
            step.append(twin_line([0, duration], [qf, qf], color=colors['sag'], width=1, dash='2 2',
                                  label='settled'))
            if math.isfinite(t10) and math.isfinite(t90):
                step.append(twin_line([t10, t90], [math.degrees(q90)] * 2, color=colors['rise'],
                                      width=3, label='10-90 % rise'))
            step.append(twin_text(plots.readout(r), x=0.97, y=0.08, anchor='end', size=12))
        row = [responses[(integrator, armature, k)] for k in kps]
        bad = np.array([not x.settled for x in row])  # diverged, or swinging for ever on a bound
        sag = np.where(bad, np.nan, [x.sag_deg for x in row])
        rise = np.where(bad, np.nan, [x.rise_ms for x in row])
        curve = [twin_line(kp_arr, np.where(sag > 0, sag, np.nan), color=colors['sag_curve'],
                           label='sag (deg)'),
                 twin_markers(kp_arr, np.where(sag > 0, sag, np.nan), color=colors['sag_curve'],
                              size=2.5),
                 twin_line(kp_arr, rise, color=colors['rise_curve'], label='rise (ms)'),
                 twin_markers(kp_arr, rise, color=colors['rise_curve'], size=2.5, symbol='s')]
        if bad.any():
            curve.append(twin_markers(kp_arr[bad], np.full(bad.sum(), 2e-3), symbol='x', size=4,
                                      color=colors['diverged'], label='never settles'))
        here = [r.sag_deg, r.rise_ms] if r.settled else [np.nan, np.nan]
        curve.append(twin_markers([kp, kp], [v if v > 0 else np.nan for v in here], size=6,
                                  filled=False, color=colors['current'], label='current kp'))
        cells = [(a, k, unstable(responses[(integrator, a, k)], q0)) for a in armatures for k in kps]
        stable = [(a, k) for a, k, d in cells if not d]
        diverged = [(a, k) for a, k, d in cells if d]
        star = critical_h_omega(integrator, dampratio)
        inertia = LINK_INERTIA + arm_line
        stab = []
        if stable:
            stab.append(twin_markers(*zip(*stable), color='#7aa6d6', size=3))
        if diverged:
            stab.append(twin_markers(*zip(*diverged), color=colors['diverged'], size=4, symbol='x',
                                     label='unstable'))
        if math.isfinite(star):
            stab.append(twin_line(arm_line, (star / timestep) ** 2 * inertia, width=2,
                                  color=colors['bound'], label=f'growth = 1 (hω = {star:.2f})'))
        else:
            stab.append(twin_text('no bound: stable for any hω', x=0.03, y=0.94, anchor='start',
                                  size=11))
        stab.append(twin_line(arm_line, (2.0 / timestep) ** 2 * inertia, width=1, dash='5 3',
                              color=colors['bound'], label='hω = 2'))
        stab.append(twin_markers([armature], [kp], size=7, filled=False, color=colors['current']))
        return [step, curve, stab]

    sliders = [
        TwinSlider('kp', 'kp (N·m/rad)', kps, [format(k, 'g') for k in kps],
                   default=_nearest(kps, kp_default)),
        TwinSlider('armature', 'armature (kg·m²)', armatures, [format(a, 'g') for a in armatures],
                   default=_nearest(armatures, armature_default)),
        TwinSlider('integrator', 'integrator', integrators, kind='select',
                   default=integrators.index(integrator_default)
                   if integrator_default in integrators else 0),
    ]
    axes = [
        TwinAxes(title='step response', xlabel='time (s)', ylabel='joint angle q (deg)',
                 xlim=(0, duration), ylim=(1.25 * q0_deg, -0.5 * q0_deg), legend='ur'),
        TwinAxes(title='sag and rise time vs kp', xlabel='kp (N·m/rad)',
                 ylabel='sag (deg), rise (ms)', xlog=True, ylog=True,
                 xlim=(min(kps) / 1.5, max(kps) * 1.5), ylim=(1e-3, 1e4), legend='ur'),
        TwinAxes(title=f'stability, h = {timestep * 1e3:g} ms', xlabel='armature (kg·m²)',
                 ylabel='kp (N·m/rad)', ylog=True,
                 xlim=(min(armatures) - 0.005, max(armatures) + 0.005),
                 ylim=(min(kps) / 100, max(kps) * 1.5), legend='lr'),
    ]
    return static_twin(key, sliders, axes, frame, width=380, height=280,
                       caption=f'Precomputed with MuJoCo: dampratio {dampratio:g}, timestep '
                               f'{timestep * 1e3:g} ms, start at {q0_deg:.1f}° with command 0°. '
                               f'Stability: blue dots settle, red crosses diverge or keep swinging '
                               f'wider than they started, red circle the current setting.')


def _nearest(values: Sequence[float], target: float) -> int:
    return int(np.argmin([abs(math.log(v + 1e-9) - math.log(target + 1e-9)) for v in values]))
