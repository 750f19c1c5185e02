"""physai.interface.position_actuators_panels: chapter 1's panel, its description, its kernel rendering (its caches,
the extreme corner of every slider) and its page's precomputed first view (its blocks, redrawn in headless
Chromium)."""

import re

import numpy as np
import pytest

from physai.experiments import servo_panel
from physai.interface import plots, position_actuators_panels, web
from physai.laws.checks import INTEGRATORS


# ---------------------------------------------------------------------------------------------
# the live panel

@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_panel_survives_the_most_extreme_corner_of_every_slider(panel, integrator):
    """kp 30000, no armature, h = 20 ms: hω ≈ 54; only discrete (implicit stiffness) stays stable."""
    png = panel.update(kp=30000.0, armature=0.0, timestep=0.020, integrator=integrator)
    assert png.startswith(b'\x89PNG')
    assert panel.error is None
    flagged = panel.state['marks'].flag.get_visible()
    assert flagged == (integrator != 'discrete')


def test_kp_move_reuses_the_kp_curve_and_the_stability_map(panel):
    """The sag/rise-vs-kp curve does not depend on kp, the stability map not on kp or armature."""
    panel.update(kp=100.0, armature=0.021, timestep=0.004, integrator='implicitfast')
    panel.wait()
    curve, stab, step = (servo_panel.servo_kp_curve.calls, servo_panel.servo_stability.calls,
                         servo_panel.servo_step.calls)
    redraws = panel.full_redraws
    for kp in (120.0, 300.0, 1000.0, 7.0):
        panel.update(kp=kp)
        panel.wait()
    assert servo_panel.servo_kp_curve.calls == curve
    assert servo_panel.servo_stability.calls == stab
    assert servo_panel.servo_step.calls == step + 4
    assert panel.full_redraws == redraws  # only the animated artists were drawn
    panel.update(armature=0.022)
    panel.wait()
    assert servo_panel.servo_kp_curve.calls == curve + 1
    assert servo_panel.servo_stability.calls == stab
    panel.update(integrator='Euler')
    panel.wait()
    assert servo_panel.servo_stability.calls == stab + 1


def test_timestep_and_integrator_changes_redraw_only_the_moving_artists(panel):
    """Every axis is fixed: a new timestep or integrator (title, bounds, map, curve) never redraws the whole
    figure, neither for the first picture nor when the worker fills in the curve and the map."""
    panel.reset()
    panel.wait()
    redraws, refreshes = panel.full_redraws, panel.refreshes
    for change in ({'timestep': 0.0071}, {'integrator': 'RK4'}, {'timestep': 0.0123, 'integrator': 'Euler'},
                   {'armature': 0.061}):
        panel.update(**change)
        panel.wait()
    assert panel.full_redraws == redraws
    assert panel.refreshes > refreshes  # the deferred curve and maps were drawn, blitted


def test_the_map_of_a_timestep_and_integrator_is_computed_once(panel):
    panel.update(timestep=0.0093, integrator='implicit')
    panel.wait()
    calls = servo_panel.servo_stability.calls
    for change in ({'kp': 40.0}, {'armature': 0.05}, {'timestep': 0.005}, {'timestep': 0.0093},
                   {'integrator': 'Euler'}, {'integrator': 'implicit'}):
        panel.update(**change)
        panel.wait()
    assert servo_panel.servo_stability.calls == calls + 2  # only implicit at 5 ms and Euler at 9.3 ms were new
    panel.reset()


def test_drawn_curve_and_map_equal_the_uncached_computation(panel):
    kp, armature, h, integrator = 40.0, 0.013, 0.0117, 'Euler'  # hω 0.57, under Euler's 0.83: settles
    panel.update(kp=kp, armature=armature, timestep=h, integrator=integrator)
    panel.wait()
    state = panel.state
    stab = servo_panel.servo_stability.__wrapped__(h, integrator)
    curve = servo_panel.servo_kp_curve.__wrapped__(armature, h, integrator)
    step = servo_panel.servo_step.__wrapped__(kp, armature, h, integrator)
    assert state['mesh'].get_visible() and not state['map_note'].get_visible()
    assert np.array_equal(np.asarray(state['mesh'].get_array()).ravel(), 1.0 + stab['diverged'].astype(float).ravel())
    assert stab['diverged'].any() and not stab['diverged'].all()  # the map shows both kinds of cell
    assert np.array_equal(state['rise'].get_ydata(), curve['rise_ms'], equal_nan=True)
    assert np.array_equal(state['bound'].get_ydata(), stab['bound_kp'], equal_nan=True)
    assert np.array_equal(state['marks'].trajectory.get_xdata(), step.t)
    assert step.settled and state['marks'].readout.get_text() == plots.readout(step)
    panel.reset()


def test_a_diverged_setting_is_flagged_on_all_three_plots(panel):
    """kp 30000 with no armature at h = 20 ms under Euler: the step diverges (MuJoCo's bad-acceleration
    warning), the kp curve marks the runs that never settle and the map's current cell is red."""
    panel.update(kp=30000.0, armature=0.0, timestep=0.020, integrator='Euler')
    panel.wait()
    state = panel.state
    assert state['marks'].flag.get_visible() and panel.error is None
    assert state['marks'].readout.get_text().startswith('diverged after')
    assert len(state['bad_kp'].get_xdata()) > 0 and max(state['bad_kp'].get_xdata()) == 30000.0
    diverged = np.asarray(state['mesh'].get_array()).reshape(len(servo_panel.STABILITY_KP), -1)
    assert diverged[-1, 0] == 2.0  # top kp, no armature: red
    panel.reset()


# ---------------------------------------------------------------------------------------------
# the description, read by both renderers, and the page's precomputed first view

def test_kernel_panel_renders_the_description(panel):
    spec = position_actuators_panels.servo_spec()
    assert [c.name for c in spec.controls] == list(panel.controls)
    assert panel.values == spec.defaults
    ax1, ax2, ax3 = panel.figure.axes[:3]
    for ax, plot in zip((ax1, ax2, ax3), spec.plots):
        assert (ax.get_xlabel(), ax.get_ylabel()) == (plot.xlabel, plot.ylabel)
        assert ax.get_xlim() == pytest.approx(plot.xlim) and ax.get_ylim() == pytest.approx(plot.ylim)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [e.label for e in plot.legend]


@pytest.fixture(scope='module')
def first_view():
    return position_actuators_panels.servo_twin().data


def test_first_view_is_byte_identical_across_calls_and_self_contained(first_view):
    assert position_actuators_panels.servo_twin().data == first_view
    assert first_view.startswith('<div class="physai-panel" id="physai-panel-servo" data-panel="servo">')
    assert not re.search(r'<script[^>]*\bsrc=', first_view) and not re.search(r'<link\b', first_view)
    assert 'http://' not in first_view and 'https://' not in first_view
    assert len(first_view.encode()) < 300_000


def test_first_view_holds_each_part_once_per_combination_of_its_controls(first_view):
    data = web.block_data(first_view)
    view, grid = data['firstView'], data['firstView']['grid']
    assert grid == {'kp': list(position_actuators_panels.TWIN_KP), 'armature': list(position_actuators_panels.TWIN_ARMATURE),
                    'integrator': list(position_actuators_panels.TWIN_INTEGRATORS)}
    assert view['at'] == {'timestep': 0.005, 'dampratio': 1.0}
    sizes = {name: len(part['data']) for name, part in view['parts'].items()}
    assert sizes == {'step': 10 * 6 * 3, 'curve': 6 * 3, 'map': 3}
    # the step at kp 300, armature 0.028, implicitfast: the frame the page draws for that setting, in physai's words
    index = (5 * 6 + 4) * 3 + 1
    stored = view['parts']['step']['data'][index]
    r = servo_panel.servo_step(300.0, 0.028, 0.005, 'implicitfast')
    assert stored['readout'] == plots.readout(r) and stored['diverged'] == r.diverged
    angles = web.unpack(stored['q'], position_actuators_panels.TRACE_STEP_DEG)
    assert max(abs(a - b) for a, b in zip(angles, np.degrees(r.q))) <= 0.05 + 1e-9
    assert any(s['diverged'] for s in view['parts']['step']['data'])  # Euler at high kp and no armature
    assert view['parts']['map']['data'][0] == servo_panel.servo_stability(0.005, 'Euler')['diverged'].astype(int).tolist()


def test_first_view_redraws_when_a_control_of_its_grid_moves_in_a_browser(first_view, panel_page):
    """No kernel, no WebAssembly: the page's own script draws the stored frames; kp snaps to its grid, and the
    controls the grid does not hold are off."""
    open_page, errors = panel_page
    page = open_page(first_view + web.servo_live().data)
    root = '#physai-panel-servo'
    before = page.inner_html(f'{root} svg.pl-step')
    assert '<path' in before and 'sag 0.169°' in before
    page.eval_on_selector(f'{root}-kp', "e => { e.value = 800; e.dispatchEvent(new Event('input')); }")
    assert page.inner_html(f'{root} svg.pl-step') != before
    assert page.inner_text(f'{root}-kp-value') == '3000 N·m/rad'  # the nearest precomputed kp
    page.select_option(f'{root}-integrator', 'Euler')
    page.eval_on_selector(f'{root}-armature', "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    assert 'diverged' in page.inner_html(f'{root} svg.pl-step')
    assert page.is_disabled(f'{root}-timestep') and 'WebAssembly' in page.inner_text(f'{root} .pl-offer')
    assert errors == []


def test_a_long_rk4_run_answers_with_its_first_second_then_the_whole_run(panel):
    """At 0.5 ms, RK4's 6000 steps (24000 Euler-step equivalents) do not fit the budget: the slider gets the first
    second of the very run (the same samples) with a note, and the worker then draws the whole run's figures."""
    kp = 317.0
    panel.update(kp=kp, timestep=0.0005, integrator='RK4')
    first_png = panel.png
    state = panel.state
    full = servo_panel.servo_step.__wrapped__(kp, 0.028, 0.0005, 'RK4')
    start = servo_panel.servo_step_start(kp, 0.028, 0.0005, 'RK4')
    assert start.t[-1] == pytest.approx(servo_panel.PANEL_FIRST_PART)
    np.testing.assert_array_equal(start.q, full.q[:len(start.q)])
    panel.wait()
    assert panel.png != first_png
    assert np.array_equal(state['marks'].trajectory.get_xdata(), full.t)
    assert full.settled and state['marks'].readout.get_text() == plots.readout(full)
    assert servo_panel.servo_step_start(kp, 0.028, 0.001, 'RK4') is None  # 1 ms fits: answered whole
    panel.reset()


def test_the_first_part_of_a_long_run_is_drawn_as_a_part(panel):
    """What the slider shows before the worker is done: the first second, no settled line or rise, a note."""
    values = {**panel.values, 'kp': 1234.0, 'timestep': 0.0005, 'integrator': 'RK4'}
    results = {'response': servo_panel.servo_step_start(1234.0, 0.028, 0.0005, 'RK4'), 'partial': True,
               'curve': None, 'stability': None,
               'bounds': servo_panel.servo_bounds(0.0005, 'RK4')}
    with plots.book_style():
        panel.draw(panel.state, results, values)
    marks = panel.state['marks']
    assert len(marks.trajectory.get_xdata()) == len(results['response'].t)
    assert len(marks.settled.get_xdata()) == 0 and len(marks.rise.get_xdata()) == 0
    assert marks.readout.get_text().startswith('first 1.0 s of 3 s')
    assert np.isnan(panel.state['sag_point'].get_ydata()[0])
    panel.reset()
