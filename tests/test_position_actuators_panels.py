"""physai.interface.position_actuators_panels: chapter 1's page panel, its precomputed first view (its blocks, redrawn
in headless Chromium). The same panel in the kernel, physai.interface.widget.servo_widget, is tested in
tests/test_widget.py."""

import re

import numpy as np
import pytest

from physai.experiments import servo_panel
from physai.interface import plots, position_actuators_panels, web


# ---------------------------------------------------------------------------------------------
# the page's precomputed first view


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

