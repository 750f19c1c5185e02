"""physai.interface.plots: the book's figure style and the marks on a step response."""

import math

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from physai.engine import link
from physai.interface import plots


def test_rise_marks_span_exactly_the_reported_rise_time():
    """The 10 % and 90 % crossings drawn on the plot are the ones step_response measured."""
    response = link.step_response(30.0)
    t10, t90, q10, q90, q_final = plots.rise_marks(response)
    assert 1e3 * (t90 - t10) == pytest.approx(response.rise_ms, abs=1e-9)
    assert math.degrees(-q_final) == pytest.approx(response.sag_deg, abs=1e-12)
    span = q_final - response.q[0]
    assert q10 == pytest.approx(response.q[0] + 0.1 * span)
    assert q90 == pytest.approx(response.q[0] + 0.9 * span)


def test_rise_marks_of_a_diverged_run_are_nan():
    """A diverged run has no settled value, so nothing is marked."""
    response = link.step_response(30000.0, armature=0.0, integrator='Euler')
    assert response.diverged
    assert all(math.isnan(v) for v in plots.rise_marks(response))


def test_step_response_marks_show_sag_and_flag_divergence():
    """The readout carries the sag and rise; a diverged run hides them and raises the red flag."""
    fig, ax = plt.subplots()
    stable = link.step_response(100.0)
    marks = plots.mark_step_response(ax, stable)
    assert f'sag {stable.sag_deg:.3f}°' in marks.readout.get_text()
    assert not marks.flag.get_visible()
    assert len(marks.rise.get_xdata()) == 2
    marks.update(link.step_response(30000.0, armature=0.0, integrator='Euler'))
    assert marks.flag.get_visible()
    assert marks.flag.get_color() == plots.COLORS['diverged']
    assert 'diverged' in marks.readout.get_text()
    assert len(marks.rise.get_xdata()) == 0
    plt.close(fig)


def test_diverged_trajectory_is_clipped_to_the_fixed_angle_range():
    fig, ax = plt.subplots()
    marks = plots.mark_step_response(ax, link.step_response(3000.0, armature=0.0,
                                                             integrator='Euler'), ylim=(-40, 15))
    y = marks.trajectory.get_ydata()
    assert np.all(np.isfinite(y)) and y.min() >= -41 and y.max() <= 16
    plt.close(fig)


def test_log_axis_labels_decades_plainly():
    fig, ax = plt.subplots()
    ax.plot([1, 30000], [1e-3, 10])
    plots.log_axis(ax, 'both')
    assert ax.get_xscale() == 'log' and ax.get_yscale() == 'log'
    formatter = ax.xaxis.get_major_formatter()
    assert [formatter(v) for v in (0.1, 1, 100, 10000, 3)] == ['0.1', '1', '100', '10000', '']
    with pytest.raises(ValueError, match='which must be one of x, y, both'):
        plots.log_axis(ax, 'z')
    plt.close(fig)


def test_book_style_has_white_background_and_grid():
    with plots.book_style():
        assert matplotlib.rcParams['figure.facecolor'] == 'white'
        assert matplotlib.rcParams['axes.grid']
        assert not matplotlib.rcParams['savefig.transparent']


def test_readout_says_what_a_run_that_has_not_settled_does():
    """At kp 30000 and dampratio 1, hω sits on implicitfast's bound: stable in name, still swinging at the end, a
    failure (the diverged colour). An overdamped servo that creeps toward the command has not settled either, but it
    does not swing: its readout says it creeps and is not a failure. The low-kp servo settles far below the command:
    its readout gives the sag."""
    assert plots.readout(link.step_response(100)) == 'sag 0.169°   rise 56.7 ms'
    swinging = link.step_response(30000)
    assert not swinging.diverged and swinging.swinging
    assert plots.readout(swinging) == f'not settled: still swinging {swinging.p2p_deg:.3g}° peak to peak'
    assert 'sag' not in plots.readout(swinging) and 'rise' not in plots.readout(swinging)
    assert plots.readout_bad(swinging)
    creeping = link.step_response(1.0, dampratio=2.0)  # overdamped and soft: still on its way after 3 s
    assert not creeping.settled and not creeping.swinging and not creeping.diverged
    assert plots.readout(creeping) == f'not settled: still creeping, {creeping.p2p_deg:.3g}° in the last 0.5 s'
    assert not plots.readout_bad(creeping)
    soft = link.step_response(1.0)  # settles, 16° below the command
    assert soft.settled and plots.readout(soft) == 'sag 16.193°   rise 533.0 ms' and not plots.readout_bad(soft)
    diverged = link.step_response(30000, integrator='Euler')
    assert diverged.diverged and plots.readout(diverged) == 'diverged' and plots.readout_bad(diverged)


def test_text_metadata_finds_the_smallest_visible_text_once_drawn():
    with plots.book_style():
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot([0, 1], [0, 1], label='line')
        ax.legend(fontsize=plots.MIN_FONT_PT)
        ax.text(0.5, 0.5, 'tiny', fontsize=6)
        hidden = ax.text(0.2, 0.2, 'hidden', fontsize=3)
        hidden.set_visible(False)
        fig.canvas.draw()
        meta = plots.text_metadata(fig)
        plt.close(fig)
    assert meta == {'min_font_pt': 6.0, 'width_in': 6.0, 'height_in': 3.0, 'dpi': 100.0}


def test_shown_text_px_scales_points_by_dpi_and_the_shown_width():
    meta = {'min_font_pt': 9.0, 'dpi': 100.0}
    assert plots.shown_text_px(meta, 840, 840) == pytest.approx(12.5)  # 9 pt at 100 dpi is 12.5 px
    assert plots.shown_text_px(meta, 840, 688) == pytest.approx(12.5 * 688 / 840)
    with pytest.raises(ValueError, match='image_width_px'):
        plots.shown_text_px(meta, 0, 688)


def test_the_book_style_keeps_figure_text_readable_in_the_column():
    """A figure of the book's default size and fonts, shown in the 1280 px column, has text of 10 px or more."""
    with plots.book_style():
        assert min(matplotlib.rcParams[k] for k in ('xtick.labelsize', 'ytick.labelsize', 'legend.fontsize')) \
            >= plots.MIN_FONT_PT
        width_px = matplotlib.rcParams['figure.figsize'][0] * matplotlib.rcParams['figure.dpi']
        meta = {'min_font_pt': plots.MIN_FONT_PT, 'dpi': matplotlib.rcParams['figure.dpi']}
        assert plots.shown_text_px(meta, width_px, min(width_px, plots.COLUMN_PX)) >= plots.MIN_TEXT_PX


def test_every_color_by_meaning_is_from_the_palette():
    palette = set(plots.PALETTE.values())
    assert set(plots.COLORS.values()) <= palette
    assert set(plots.SERIES) <= palette
    assert all(len(c) == 7 and c.startswith('#') for c in palette)


def test_record_figure_text_is_a_no_op_outside_ipython():
    assert plots.record_figure_text() is False


def test_lift_small_text_raises_only_what_is_under_the_minimum():
    with plots.book_style():
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.plot([0, 1], [0, 1], label='line')
        ax.legend(fontsize=7.5)
        big = ax.set_title('title', fontsize=14)
        assert plots.lift_small_text(fig) == 1
        assert plots.text_metadata(fig)['min_font_pt'] == plots.MIN_FONT_PT
        assert big.get_fontsize() == 14
        plt.close(fig)
