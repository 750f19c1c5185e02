"""physai.interface.live: the live-panel framework (sliders, choices, the blitted figure, errors drawn not
raised, the widget), exercised through chapter 1's servo panel."""

import io

import numpy as np
import pytest

from physai.interface import live
from physai.laws.checks import INTEGRATORS


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert('RGB'))


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


def test_blitted_image_equals_a_full_redraw(panel):
    """Drawing only the moving artists over the cached background gives the same picture."""
    panel.update(kp=100.0, armature=0.028, timestep=0.005, integrator='implicitfast')
    for kp in (30.0, 3000.0, 250.0):
        blitted = panel.update(kp=kp)
    panel._background = None  # force the full path
    full = panel.update()
    assert np.array_equal(_pixels(blitted), _pixels(full))


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
