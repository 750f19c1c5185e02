"""physai.interface.live: the live panel's update path, its caches, and the static twin's HTML."""

import io
import json
import math
import re

import matplotlib

matplotlib.use('agg')
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from physai.experiments import position_actuators, registry
from physai.interface import live, plots, position_actuators_panels, twin
from physai.laws import stability
from physai.engine.link import LINK_INERTIA, ServoParams, step_responses
from physai.laws.checks import INTEGRATORS


@pytest.fixture(scope='module')
def panel():
    return position_actuators_panels.servo_panel()


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert('RGB'))


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


def test_values_beyond_the_sliders_are_clipped_not_raised(panel):
    panel.update(kp=1e9, armature=-1.0, timestep=5.0, integrator='Euler')
    assert panel.values['kp'] == 30000.0
    assert panel.values['armature'] == 0.0
    assert panel.values['timestep'] == pytest.approx(0.020)
    assert panel.error is None
    panel.update(kp=float('nan'))
    assert panel.values['kp'] == 100.0  # NaN falls back to the default
    with pytest.raises(ValueError, match='unknown control'):
        panel.update(gain=3)
    with pytest.raises(ValueError, match='integrator must be one of'):
        panel.update(integrator='Verlet')


def test_reset_brings_every_control_back(panel):
    panel.update(kp=5000.0, armature=0.07, timestep=0.012, integrator='RK4')
    panel.reset()
    assert panel.values == {'kp': 100.0, 'armature': 0.028, 'timestep': 0.005,
                            'integrator': 'implicitfast'}


def test_kp_move_reuses_the_kp_curve_and_the_stability_map(panel):
    """The sag/rise-vs-kp curve does not depend on kp, the stability map not on kp or armature."""
    panel.update(kp=100.0, armature=0.021, timestep=0.004, integrator='implicitfast')
    curve, stab, step = (position_actuators.servo_kp_curve.calls, position_actuators.servo_stability.calls,
                         position_actuators.servo_step.calls)
    redraws = panel.full_redraws
    for kp in (120.0, 300.0, 1000.0, 7.0):
        panel.update(kp=kp)
    assert position_actuators.servo_kp_curve.calls == curve
    assert position_actuators.servo_stability.calls == stab
    assert position_actuators.servo_step.calls == step + 4
    assert panel.full_redraws == redraws  # only the animated artists were drawn
    panel.update(armature=0.022)
    assert position_actuators.servo_kp_curve.calls == curve + 1
    assert position_actuators.servo_stability.calls == stab
    panel.update(integrator='Euler')
    assert position_actuators.servo_stability.calls == stab + 1


def test_blitted_image_equals_a_full_redraw(panel):
    """Drawing only the moving artists over the cached background gives the same picture."""
    panel.update(kp=100.0, armature=0.028, timestep=0.005, integrator='implicitfast')
    for kp in (30.0, 3000.0, 250.0):
        blitted = panel.update(kp=kp)
    panel._background = None  # force the full path
    full = panel.update()
    assert np.array_equal(_pixels(blitted), _pixels(full))


def test_kp_moves_answer_within_the_latency_budget(panel):
    """The book's goal is a median under 100 ms from a slider change to new image bytes."""
    panel.update(kp=100.0, armature=0.028, timestep=0.005, integrator='implicitfast')
    for kp in np.geomspace(1, 30000, 12):
        panel.update(kp=float(kp))
    assert np.median(panel.latencies[-12:]) < 0.1


def test_an_exception_in_compute_is_drawn_not_raised():
    def compute(values):
        if values['x'] > 0.5:
            raise RuntimeError('boom')
        return values

    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        return ax.plot([0, 1], [0, 0], animated=True)[0]

    def draw(line, results, values):
        line.set_ydata([values['x'], values['x']])

    panel = live.Panel([live.Slider('x', 'x', 0, 1, 0.2)], compute=compute, setup=setup,
                          draw=draw, figsize=(3, 2))
    png = panel.update(x=0.9)
    assert png.startswith(b'\x89PNG') and panel.error == 'RuntimeError: boom'
    panel.update(x=0.1)
    assert panel.error is None


def test_cached_keys_only_on_the_parameters_it_names():
    @registry.cached(maxsize=2)
    def square(a, b=1):
        return a * a + b

    assert square(a=3, unrelated='ignored') == 10
    assert square(a=3, unrelated='changed') == 10
    assert square.calls == 1
    assert square(a=3, b=2) == 11 and square.calls == 2
    square(a=4), square(a=5), square(a=3)  # the oldest entries were evicted
    assert square.calls == 5
    assert square.depends_on == ('a', 'b')


def test_controls_validate_their_ranges():
    with pytest.raises(ValueError, match='default must be in'):
        live.Slider('x', 'x', 0, 1, 2)
    with pytest.raises(ValueError, match='log slider needs min > 0'):
        live.LogSlider('kp', 'kp', 0, 10, 1)
    with pytest.raises(ValueError, match='default must be one of'):
        live.Choice('integrator', 'integrator', INTEGRATORS, 'Verlet')
    kp, armature, timestep, integrator = live.common_controls()
    assert (kp.min, kp.max, armature.min, armature.max) == (1.0, 30000.0, 0.0, 0.1)
    assert timestep.clamp(1.0) == pytest.approx(0.020)  # shown in ms, passed in s
    assert integrator.options == INTEGRATORS


def test_panel_widget_holds_controls_reset_and_image(panel):
    import ipywidgets as W
    box = panel.widget
    assert isinstance(box, W.VBox)
    assert panel.image.value == panel.png
    panel._widgets['kp'].value = 250.0  # as a slider drag would
    assert panel.values['kp'] == pytest.approx(250.0)
    assert panel.image.value == panel.png
    panel.update(kp=40.0)  # a code change moves the slider too
    assert panel._widgets['kp'].value == pytest.approx(40.0)


def test_displaying_the_panel_without_a_front_end_adds_no_output():
    """Under nbval a panel cell has one output (the widget box): nothing printed, no inline figure."""
    nbformat = pytest.importorskip('nbformat')
    nbclient = pytest.importorskip('nbclient')
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        'from physai.interface import position_actuators_panels as panels\npanel = panels.servo_panel()\n'
        "panel.update(kp=3000.0, "
        "integrator='Euler', armature=0.0)\npanel.update(kp=50.0)\npanel"),
        nbformat.v4.new_code_cell("panels.servo_panel(kp=30000.0, timestep=0.02)")]
    nbclient.NotebookClient(nb, timeout=120, kernel_name='python3').execute()
    for cell in nb.cells:
        assert len(cell.outputs) == 1, cell.outputs
        output = cell.outputs[0]
        assert output.output_type == 'execute_result'
        assert 'application/vnd.jupyter.widget-view+json' in output.data
        assert 'image/png' not in output.data
        assert output.data['text/plain'] == (
            'live panel (kp, armature, timestep, integrator): move the sliders in Jupyter or '
            'Colab; the static twin works without a kernel')


# ---------------------------------------------------------------------------------------------
# the analytic stability bound

def test_critical_h_omega_matches_the_closed_forms():
    """ζ = 1: explicit damping h²ω² < 4 − 4hω, implicit damping h²ω² < 4 + 4hω; discrete has none."""
    assert stability.critical_h_omega('Euler') == pytest.approx(2 * (math.sqrt(2) - 1), rel=1e-9)
    assert stability.critical_h_omega('implicitfast') == pytest.approx(2 + 2 * math.sqrt(2),
                                                                     rel=1e-9)
    assert stability.critical_h_omega('implicit') == stability.critical_h_omega('implicitfast')
    assert 2.0 < stability.critical_h_omega('RK4') < 3.0
    assert math.isinf(stability.critical_h_omega('discrete'))


@pytest.mark.parametrize('integrator', ['Euler', 'implicitfast', 'RK4'])
def test_mujoco_diverges_beyond_the_growth_bound_and_not_inside_it(integrator):
    """Settings at 0.8 × hω* stay stable in MuJoCo, settings at 1.25 × hω* diverge."""
    h = 0.005
    star = stability.critical_h_omega(integrator)
    params, expected = [], []
    for armature in (0.0, 0.01, 0.05):
        inertia = LINK_INERTIA + armature
        for factor, diverges in ((0.8, False), (1.25, True)):
            kp = (factor * star / h) ** 2 * inertia
            params.append(ServoParams(kp=kp, armature=armature, timestep=h,
                                      integrator=integrator))
            expected.append(diverges)
    responses = step_responses(params, duration=position_actuators.STABILITY_STEPS * h)
    assert [position_actuators.unstable(r, -0.5) for r in responses] == expected


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


def test_generic_twin_with_a_delay_slider():
    """A later chapter's use: one slider over five delays, one plot."""
    t = np.linspace(0, 1, 101)
    sliders = [twin.TwinSlider('delay', 'delay (ms)', [0, 5, 10, 20, 40], default=2)]
    axes = [twin.TwinAxes(xlabel='time (s)', ylabel='q (deg)', ylim=(-30, 10))]

    def frame(delay):
        items = [twin.twin_line(t, -30 * np.exp(-t * 50 / (1 + delay)), label='q(t)')]
        if delay >= 40:
            items.append(twin.twin_text('diverged', color=plots.COLORS['diverged']))
        return [items]

    text = twin.static_twin('ch2-delay', sliders, axes, frame).data
    assert 'id="physai-twin-ch2-delay-delay"' in text
    assert text == twin.twin_html('ch2-delay', sliders, axes, frame)
    with pytest.raises(ValueError, match='key must be lowercase'):
        twin.twin_html('Bad Key', sliders, axes, frame)
    with pytest.raises(ValueError, match='one item list per axes'):
        twin.twin_html('x', sliders, axes, lambda delay: [[], []])


def test_compact_numbers_keep_relative_precision_on_log_data():
    assert twin._compact_numbers(np.array([1.0, 3.0, 30000.0]), 4) == '[1,3,30000]'
    assert twin._compact_numbers(np.array([16.87, 0.000612, np.nan]), 4) == \
        '[16.87,0.000612,null]'
    assert twin._compact_numbers(np.array([-28.65, -1e-9, 0.0]), 4) == '[-28.65,0,0]'


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
