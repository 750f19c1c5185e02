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
