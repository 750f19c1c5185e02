"""physai.interface.live: the kernel's renderer of a panel description (its controls as ipywidgets, the blitted
figure, errors drawn not raised, the widget), exercised through chapter 1's servo panel; and
physai.interface.panel: the description itself (controls, plots, words)."""

import io

import numpy as np
import pytest

from physai.interface import live, panel as panel_module
from physai.laws.checks import INTEGRATORS


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert('RGB'))





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
    with pytest.raises(ValueError, match='format spec must be'):
        live.Slider('x', 'x', 0, 1, 0.5, format='.3%')
    kp, armature, timestep, integrator = live.common_controls()
    assert (kp.min, kp.max, armature.min, armature.max) == (1.0, 30000.0, 0.0, 0.1)
    assert timestep.clamp(1.0) == pytest.approx(0.020)  # shown in ms, passed in s
    assert timestep.url == 'h' and kp.url == 'kp'  # the page's address keys
    assert integrator.options == INTEGRATORS
    with pytest.raises(ValueError, match=r'timestep must be in \[0.5, 20\] ms'):
        timestep.check(0.05)


def test_a_panel_description_names_its_parts_once_and_fills_in_its_words():
    panel = panel_module
    spec = panel.PanelSpec(key='demo', title='demo', controls=live.common_controls(),
                           plots=(panel.Plot(key='step', xlim=(0, 3), ylim=(-40, 10)),),
                           words={'sag': 'sag {sag:.3f}°'}, note='{n} runs')
    assert spec.say('sag', sag=0.16875) == 'sag 0.169°' and spec.say('note', n=3) == '3 runs'
    assert spec.defaults == {'kp': 100.0, 'armature': 0.028, 'timestep': 0.005, 'integrator': 'implicitfast'}
    assert spec.with_defaults(kp=300.0).defaults['kp'] == 300.0
    with pytest.raises(ValueError, match='kp must be in'):
        spec.with_defaults(kp=1e6)
    with pytest.raises(ValueError, match='control names must be unique'):
        panel.PanelSpec(key='demo', title='demo', controls=live.common_controls() * 2, plots=())
    with pytest.raises(ValueError, match='fields must be plain names'):
        panel.PanelSpec(key='demo', title='demo', controls=(), plots=(), words={'x': '{a[0]}'})
    with pytest.raises(ValueError, match='format spec must be'):
        panel.PanelSpec(key='demo', title='demo', controls=(), plots=(), words={'x': '{a:>8}'})
    with pytest.raises(ValueError, match='a log y axis needs ylim > 0'):
        panel.Plot(key='p', ylim=(0, 1), ylog=True)
    data = spec.to_json()
    assert [c['name'] for c in data['controls']] == ['kp', 'armature', 'timestep', 'integrator']
    assert data['controls'][2] == {'name': 'timestep', 'label': 'timestep', 'kind': 'linear', 'min': 0.5, 'max': 20.0,
                                   'default': 5.0, 'step': 0.1, 'unit': 'ms', 'scale': 1e-3, 'format': '.1f', 'url': 'h'}




# ---------------------------------------------------------------------------------------------
# deferred parts, views and artists kept on top (a toy panel, so each test controls its timing)


def _toy_panel(slow, **kwargs):
    """One slider x; a quick line at height x and a deferred text showing slow(x), 'pending' until ready."""
    part = live.Deferred(slow)

    def compute(values):
        return {'slow': part.get(values)}

    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        line = ax.plot([0, 1], [0, 0], animated=True)[0]
        text = ax.text(0.5, 0.5, '', animated=True)
        return {'ax': ax, 'line': line, 'text': text}

    def draw(state, results, values):
        state['line'].set_ydata([values['x'], values['x']])
        state['text'].set_text('pending' if results['slow'] is None else f"slow {results['slow']:.2f}")

    panel = live.Panel([live.Slider('x', 'x', 0, 1, 0.2)], compute=compute, setup=setup, draw=draw,
                       figsize=(3, 2), deferred=[part], **kwargs)
    return panel, part


def test_a_deferred_part_is_drawn_pending_then_filled_in_by_the_worker():
    import threading
    gate = threading.Event()
    gate.set()

    def slow(x):
        gate.wait(30)
        return 10 * x

    panel, part = _toy_panel(slow)
    assert panel.state['text'].get_text() == 'slow 2.00'  # the first picture is complete
    gate.clear()
    first = panel.update(x=0.5)
    assert panel.state['text'].get_text() == 'pending'  # the slider got its answer without waiting
    pending = panel.png
    gate.set()
    final = panel.wait(timeout=30)
    assert panel.state['text'].get_text() == 'slow 5.00'
    assert first == pending and final != first and panel.refreshes == 1
    panel.update(x=0.2)
    panel.update(x=0.5)  # both ready: nothing deferred, no worker redraw
    panel.wait(timeout=30)
    assert part.calls == 2 and panel.refreshes == 1 and panel.state['text'].get_text() == 'slow 5.00'


def test_a_failing_deferred_part_is_drawn_not_raised():
    def slow(x):
        if x > 0.5:
            raise RuntimeError('no map here')
        return x

    panel, _ = _toy_panel(slow)
    panel.update(x=0.9)
    panel.wait(timeout=30)
    assert panel.error == 'RuntimeError: no map here'
    assert panel.png.startswith(b'\x89PNG')
    panel.update(x=0.1)
    panel.wait(timeout=30)
    assert panel.error is None


def test_a_view_seen_before_is_restored_without_a_full_redraw():
    """draw returns a view key (a stepped axis limit): each view is drawn in full once, then restored."""
    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        ax.set_xlim(0, 1)
        return {'ax': ax, 'line': ax.plot([0, 1], [0, 0], animated=True)[0], 'top': None}

    def draw(state, results, values):
        top = 1.0 if values['x'] <= 1 else 10.0
        if top != state['top']:
            state['ax'].set_ylim(0, top)
            state['top'] = top
        state['line'].set_ydata([values['x'], values['x']])
        return top

    panel = live.Panel([live.Slider('x', 'x', 0, 10, 0.5)], compute=None, setup=setup, draw=draw, figsize=(3, 2))
    panel.warm([{'x': 5.0}])
    assert panel.values['x'] == 0.5 and panel.full_redraws == 2
    for x in (7.0, 0.3, 9.0, 0.9):
        blitted = panel.update(x=x)
    assert panel.full_redraws == 2
    panel._background = None  # force the full path
    assert np.array_equal(_pixels(blitted), _pixels(panel.update()))


def test_an_artist_kept_on_top_stays_over_the_animated_ones():
    """A thick animated line crosses an opaque legend; the legend's pixels are those of the full redraw."""
    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        line = ax.plot([0, 1], [0.9, 0.9], lw=20, animated=True, label='moving')[0]
        legend = ax.legend(loc='upper right', framealpha=1.0, fancybox=False)
        live.on_top(legend)
        return {'line': line, 'legend': legend}

    def draw(state, results, values):
        state['line'].set_ydata([values['y'], values['y']])

    panel = live.Panel([live.Slider('y', 'y', 0, 1, 0.1)], compute=None, setup=setup, draw=draw, figsize=(3, 2))
    renderer = panel.figure.canvas.get_renderer()
    box = panel.state['legend'].get_window_extent(renderer)
    height = _pixels(panel.png).shape[0]
    rows = slice(height - int(box.y1) + 2, height - int(box.y0) - 2)
    cols = slice(int(box.x0) + 2, int(box.x1) - 2)
    below = _pixels(panel.png)[rows, cols]
    through = panel.state['line'].axes.transData.inverted().transform((0, (box.y0 + box.y1) / 2))[1]
    crossing = _pixels(panel.update(y=float(through)))[rows, cols]
    assert np.array_equal(below, crossing)
    away = panel.update(y=0.1)
    assert not np.array_equal(_pixels(away), _pixels(panel.update(y=float(through))))  # the line did move


def test_a_sprite_text_is_rendered_once_per_string_and_pasted_the_same():
    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.title.set_animated(True)
        live.sprite(ax.title)
        return {'ax': ax, 'line': ax.plot([0, 1], [0, 0], animated=True)[0]}

    def draw(state, results, values):
        state['ax'].title.set_text(f"x rounded {round(values['x'], 1):.1f}")
        state['line'].set_ydata([values['x'], values['x']])

    panel = live.Panel([live.Slider('x', 'x', 0, 1, 0.2)], compute=None, setup=setup, draw=draw, figsize=(3, 2))
    title = panel.state['ax'].title
    drawn = []
    original = title.draw
    title.draw = lambda renderer: (drawn.append(title.get_text()), original(renderer))
    for x in (0.21, 0.52, 0.19, 0.48, 0.5):
        pasted = panel.update(x=x)
    assert drawn == ['x rounded 0.5']  # 0.2 was drawn when the panel was made; 0.5 once
    panel._background = None  # force the full path: the same picture
    assert np.array_equal(_pixels(pasted), _pixels(panel.update()))
