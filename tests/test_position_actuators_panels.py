"""physai.interface.position_actuators_panels: chapter 1's servo panel (its caches, the extreme corner of
every slider) and its static twin's HTML, redrawn in headless Chromium."""

import json
import re

import numpy as np
import pytest

from physai.experiments import position_actuators
from physai.interface import plots, position_actuators_panels
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
    curve, stab, step = (position_actuators.servo_kp_curve.calls, position_actuators.servo_stability.calls,
                         position_actuators.servo_step.calls)
    redraws = panel.full_redraws
    for kp in (120.0, 300.0, 1000.0, 7.0):
        panel.update(kp=kp)
        panel.wait()
    assert position_actuators.servo_kp_curve.calls == curve
    assert position_actuators.servo_stability.calls == stab
    assert position_actuators.servo_step.calls == step + 4
    assert panel.full_redraws == redraws  # only the animated artists were drawn
    panel.update(armature=0.022)
    panel.wait()
    assert position_actuators.servo_kp_curve.calls == curve + 1
    assert position_actuators.servo_stability.calls == stab
    panel.update(integrator='Euler')
    panel.wait()
    assert position_actuators.servo_stability.calls == stab + 1


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
    calls = position_actuators.servo_stability.calls
    for change in ({'kp': 40.0}, {'armature': 0.05}, {'timestep': 0.005}, {'timestep': 0.0093},
                   {'integrator': 'Euler'}, {'integrator': 'implicit'}):
        panel.update(**change)
        panel.wait()
    assert position_actuators.servo_stability.calls == calls + 2  # only implicit at 5 ms and Euler at 9.3 ms were new
    panel.reset()


def test_drawn_curve_and_map_equal_the_uncached_computation(panel):
    kp, armature, h, integrator = 40.0, 0.013, 0.0117, 'Euler'  # hω 0.57, under Euler's 0.83: settles
    panel.update(kp=kp, armature=armature, timestep=h, integrator=integrator)
    panel.wait()
    state = panel.state
    stab = position_actuators.servo_stability.__wrapped__(h, integrator)
    curve = position_actuators.servo_kp_curve.__wrapped__(armature, h, integrator)
    step = position_actuators.servo_step.__wrapped__(kp, armature, h, integrator)
    assert state['mesh'].get_visible() and not state['map_note'].get_visible()
    assert np.array_equal(np.asarray(state['mesh'].get_array()).ravel(), stab['diverged'].astype(float).ravel())
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
    diverged = np.asarray(state['mesh'].get_array()).reshape(len(position_actuators.STABILITY_KP), -1)
    assert diverged[-1, 0] == 1.0  # top kp, no armature
    panel.reset()


# ---------------------------------------------------------------------------------------------
# the static twin

@pytest.fixture(scope='module')
def twin_text():
    return position_actuators_panels.servo_twin().data


def test_twin_html_is_byte_identical_across_calls(twin_text):
    assert position_actuators_panels.servo_twin().data == twin_text


def test_twin_has_deterministic_ids_and_no_external_resources(twin_text):
    for suffix in ('', '-kp', '-armature', '-integrator', '-plot-0', '-plot-1', '-plot-2',
                   '-data'):
        assert f'id="physai-twin-servo{suffix}"' in twin_text
    assert not re.search(r'<script[^>]*\bsrc=', twin_text)
    assert not re.search(r'<link\b', twin_text)
    assert 'http://' not in twin_text.replace('http://www.w3.org/2000/svg', '')
    assert 'https://' not in twin_text
    assert len(twin_text.encode()) < 1_500_000


def test_twin_data_holds_one_frame_per_slider_combination(twin_text):
    raw = re.search(r'<script type="application/json" id="physai-twin-servo-data">(.*?)</script>',
                    twin_text, re.S).group(1)
    data = json.loads(raw)
    assert len(data['frames']) == (len(position_actuators_panels.TWIN_KP) * len(position_actuators_panels.TWIN_ARMATURE)
                                   * len(position_actuators_panels.TWIN_INTEGRATORS))
    assert [s['name'] for s in data['spec']['sliders']] == ['kp', 'armature', 'integrator']
    assert all(len(frame) == 3 for frame in data['frames'])
    texts = {item['s'] for item in data['items'] if item['k'] == 't'}
    assert 'diverged' in texts  # Euler at low armature and high kp


def test_twin_redraws_when_a_slider_moves_in_a_browser(twin_text, twin_page):
    """No kernel: the page's own script redraws the SVG when kp, armature or integrator change."""
    open_page, errors = twin_page
    root = 'physai-twin-servo'
    page = open_page(twin_text)
    before = page.inner_html(f'#{root}-plot-0')
    assert '<path' in before and 'sag' in before
    page.eval_on_selector(f'#{root}-kp', "e => { e.value = 8; e.dispatchEvent(new Event('input')); }")
    assert page.inner_html(f'#{root}-plot-0') != before
    assert page.inner_text(f'#{root}-kp-value') == f'{position_actuators_panels.TWIN_KP[8]:g}'
    page.select_option(f'#{root}-integrator', label='Euler')
    page.eval_on_selector(f'#{root}-armature', "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
    assert 'diverged' in page.inner_html(f'#{root}-plot-0')
    assert page.inner_html(f'#{root}-plot-2') != ''
    assert errors == []


def test_a_long_rk4_run_answers_with_its_first_second_then_the_whole_run(panel):
    """At 0.5 ms, RK4's 6000 steps (24000 Euler-step equivalents) do not fit the budget: the slider gets the first
    second of the very run (the same samples) with a note, and the worker then draws the whole run's figures."""
    kp = 317.0
    panel.update(kp=kp, timestep=0.0005, integrator='RK4')
    first_png = panel.png
    state = panel.state
    full = position_actuators.servo_step.__wrapped__(kp, 0.028, 0.0005, 'RK4')
    start = position_actuators.servo_step_start(kp, 0.028, 0.0005, 'RK4')
    assert start.t[-1] == pytest.approx(position_actuators.PANEL_FIRST_PART)
    np.testing.assert_array_equal(start.q, full.q[:len(start.q)])
    panel.wait()
    assert panel.png != first_png
    assert np.array_equal(state['marks'].trajectory.get_xdata(), full.t)
    assert full.settled and state['marks'].readout.get_text() == plots.readout(full)
    assert position_actuators.servo_step_start(kp, 0.028, 0.001, 'RK4') is None  # 1 ms fits: answered whole
    panel.reset()


def test_the_first_part_of_a_long_run_is_drawn_as_a_part(panel):
    """What the slider shows before the worker is done: the first second, no settled line or rise, a note."""
    values = {**panel.values, 'kp': 1234.0, 'timestep': 0.0005, 'integrator': 'RK4'}
    results = {'response': position_actuators.servo_step_start(1234.0, 0.028, 0.0005, 'RK4'), 'partial': True,
               'curve': None, 'stability': None,
               'bounds': position_actuators.servo_bounds(0.0005, 'RK4')}
    with plots.book_style():
        panel.draw(panel.state, results, values)
    marks = panel.state['marks']
    assert len(marks.trajectory.get_xdata()) == len(results['response'].t)
    assert len(marks.settled.get_xdata()) == 0 and len(marks.rise.get_xdata()) == 0
    assert marks.readout.get_text().startswith('first 1.0 s of 3 s')
    assert np.isnan(panel.state['sag_point'].get_ydata()[0])
    panel.reset()
