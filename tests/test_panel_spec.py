"""physai.interface.panel: a panel described once (controls, plots, words), which the page's code draws on the page and
in the notebook's widget; and physai.interface.widget.Deferred, a part of its results computed after the first reply."""

import pytest

from physai.interface import panel as panel_module
from physai.interface.widget import Deferred
from physai.laws.checks import INTEGRATORS


def test_controls_validate_their_ranges():
    with pytest.raises(ValueError, match='default must be in'):
        panel_module.Slider('x', 'x', 0, 1, 2)
    with pytest.raises(ValueError, match='log slider needs min > 0'):
        panel_module.LogSlider('kp', 'kp', 0, 10, 1)
    with pytest.raises(ValueError, match='default must be one of'):
        panel_module.Choice('integrator', 'integrator', INTEGRATORS, 'Verlet')
    with pytest.raises(ValueError, match='format spec must be'):
        panel_module.Slider('x', 'x', 0, 1, 0.5, format='.3%')
    kp, armature, timestep, integrator = panel_module.common_controls()
    assert (kp.min, kp.max, armature.min, armature.max) == (1.0, 30000.0, 0.0, 0.1)
    assert timestep.clamp(1.0) == pytest.approx(0.020)  # shown in ms, passed in s
    assert timestep.url == 'h' and kp.url == 'kp'  # the page's address keys
    assert integrator.options == INTEGRATORS
    with pytest.raises(ValueError, match=r'timestep must be in \[0.5, 20\] ms'):
        timestep.check(0.05)


def test_a_panel_description_names_its_parts_once_and_fills_in_its_words():
    panel = panel_module
    spec = panel.PanelSpec(key='demo', title='demo', controls=panel_module.common_controls(),
                           plots=(panel.Plot(key='step', xlim=(0, 3), ylim=(-40, 10)),),
                           words={'sag': 'sag {sag:.3f}°'}, note='{n} runs')
    assert spec.say('sag', sag=0.16875) == 'sag 0.169°' and spec.say('note', n=3) == '3 runs'
    assert spec.defaults == {'kp': 100.0, 'armature': 0.028, 'timestep': 0.005, 'integrator': 'implicitfast'}
    assert spec.with_defaults(kp=300.0).defaults['kp'] == 300.0
    with pytest.raises(ValueError, match='kp must be in'):
        spec.with_defaults(kp=1e6)
    with pytest.raises(ValueError, match='control names must be unique'):
        panel.PanelSpec(key='demo', title='demo', controls=panel_module.common_controls() * 2, plots=())
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


def test_a_deferred_part_is_none_until_computed_then_cached_by_the_values_it_names():
    calls = []

    def slow(x, *, scale=10.0):
        calls.append(x)
        return scale * x

    part = Deferred(slow)
    assert part.get({'x': 0.5, 'other': 1}) is None and not part.ready({'x': 0.5})
    part.compute({'x': 0.5, 'other': 1})   # keys it does not name are ignored
    assert part.ready({'x': 0.5, 'other': 2}) and part.get({'x': 0.5}) == 5.0
    part.compute({'x': 0.5})
    assert calls == [0.5]   # computed once per value of what it names
    assert part.get({'x': 0.25}) is None


def test_a_failing_deferred_part_raises_again_when_read_so_the_widget_replies_with_it():
    def slow(x):
        if x > 0.5:
            raise RuntimeError('no map here')
        return x

    part = Deferred(slow)
    with pytest.raises(RuntimeError, match='no map here'):
        part.compute({'x': 0.9})
    assert part.ready({'x': 0.9})
    with pytest.raises(RuntimeError, match='no map here'):
        part.get({'x': 0.9})
    part.compute({'x': 0.1})
    assert part.get({'x': 0.1}) == 0.1

