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


def test_detached_figure_is_white_and_unknown_to_pyplot():
    """A live panel's figure must never be shown by the inline backend at the end of a cell."""
    before = plt.get_fignums()
    fig = plots.detached_figure((4, 3))
    assert plt.get_fignums() == before
    assert matplotlib.colors.to_hex(fig.get_facecolor()) == '#ffffff'


def test_book_style_has_white_background_and_grid():
    with plots.book_style():
        assert matplotlib.rcParams['figure.facecolor'] == 'white'
        assert matplotlib.rcParams['axes.grid']
        assert not matplotlib.rcParams['savefig.transparent']


def test_readout_calls_out_a_run_that_never_settles():
    """At kp 30000 and dampratio 1, hω sits on implicitfast's bound: stable in name, swinging for ever."""

    assert plots.readout(link.step_response(100)) == 'sag 0.169°   rise 56.7 ms'
    swinging = link.step_response(30000)
    assert not swinging.diverged
    assert plots.readout(swinging) == f'never settles, swing {swinging.p2p_deg:.2g}° p2p'
    assert 'sag' not in plots.readout(swinging) and 'rise' not in plots.readout(swinging)
    creeping = link.step_response(100, kv=1e9)  # moved 1.5e-7 rad in 3 s: no sag, no rise to report
    assert not creeping.settled and plots.readout(creeping).startswith('never settles')
