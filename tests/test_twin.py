"""physai.interface.twin: the kernel-free static twin's HTML for any sliders, and its number compaction."""

import numpy as np
import pytest

from physai.interface import plots, twin


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


def test_twin_controls_wrap_on_a_narrow_screen_and_legends_sit_under_the_plot():
    t = np.linspace(0, 1, 11)
    sliders = [twin.TwinSlider('kp', 'kp (N·m/rad)', [1, 10, 100], default=1)]
    axes = [twin.TwinAxes(xlabel='time (s)', ylabel='q (deg)', legend='ur')]
    text = twin.twin_html('legend-test', sliders, axes, lambda kp: [[twin.twin_line(t, kp * t, label='q(t)')]])
    assert 'white-space:nowrap;' not in text.split('<label')[1].split('>')[0]  # the label itself may wrap
    assert 'max-width:100%' in text.split('<label')[1].split('>')[0]
    assert 'aria-valuetext="10 N·m/rad"' in text
    # the legend is laid out in a band added under the plot (H plus rows), not over the data
    assert "var HB=H+(rows.length?rows.length*16+6:0)" in text
