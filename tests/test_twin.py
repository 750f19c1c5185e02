"""physai.interface.twin: the kernel-free static twin's HTML for any sliders, and its number compaction."""

import json
import re

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


def test_a_note_sits_above_the_frame_in_the_titles_place_off_the_data():
    """A twin_note is drawn in the top margin (the script's margins are the module's), never inside the frame."""
    assert (f'M={{l:{twin.MARGIN_LEFT},r:{twin.MARGIN_RIGHT},t:{twin.MARGIN_TOP},b:{twin.MARGIN_BOTTOM}}}'
            in twin._TWIN_JS)
    t = np.linspace(0, 1, 11)
    sliders = [twin.TwinSlider('kp', 'kp (N·m/rad)', [1, 10], default=0)]

    def frame(kp):
        return [[twin.twin_line(t, kp * t, label='q(t)'), twin.twin_note(f'kp {kp}: settles')]]

    height = 300
    data = json.loads(re.search(r'-data">(.*?)</script>',
                                twin.twin_html('note-test', sliders, [twin.TwinAxes(xlabel='t (s)')], frame,
                                               height=height), re.S).group(1))
    notes = [it for it in data['items'] if it['k'] == 't']
    assert [it['s'] for it in notes] == ['kp 1: settles', 'kp 10: settles']
    frame_px = height - twin.MARGIN_TOP - twin.MARGIN_BOTTOM
    for note in notes:
        centre_px = (height - twin.MARGIN_BOTTOM) - note['y'] * frame_px  # the script's y0 - y*(y0 - y1)
        assert 0 < centre_px - 0.5 * note['z'] and centre_px + 0.5 * note['z'] < twin.MARGIN_TOP
        start_px = twin.MARGIN_LEFT + note['x'] * (400 - twin.MARGIN_LEFT - twin.MARGIN_RIGHT)  # width 400
        assert 0 < start_px < twin.MARGIN_LEFT and note['a'] == 'start'
    with pytest.raises(ValueError, match="note takes the title's place"):
        twin.twin_html('note-test', sliders, [twin.TwinAxes(title='q', xlabel='t (s)')], frame)
    with pytest.raises(ValueError, match='too long'):
        twin.twin_html('note-test', sliders, [twin.TwinAxes(xlabel='t (s)')],
                       lambda kp: [[twin.twin_note('x' * 200)]])
