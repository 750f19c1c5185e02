"""The book's matplotlib look and a few helpers every chapter's figures share.

One style for every figure (white, non-transparent background so a figure reads in light and dark
themes; a light grid; readable font sizes), log axes with plain decade labels, and the marks the book
puts on a step response: the settled value and its sag below the command, the 10 % and 90 % levels and
the rise time between them, and a red "diverged" flag when MuJoCo blew up.

Usage in a notebook::

    import matplotlib.pyplot as plt
    from physai.engine import link
    from physai.interface import plots

    plots.use_book_style()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    response = link.step_response(100.0)
    plots.mark_step_response(ax1, response)        # trajectory, sag, 10-90 % rise, diverged flag
    plots.log_axis(ax2, 'both')                    # decades labelled 1, 10, 100, 1000
    plots.label(ax2, 'kp (N·m/rad)', 'sag (deg)')

The panels themselves are drawn by the page's code, on the page and in the notebooks' widgets
(:mod:`physai.interface.widget`); these helpers are for the chapters' figures.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator

import matplotlib as mpl
import matplotlib.ticker as mticker
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from physai.engine.link import SETTLE_WINDOW, SETTLED_P2P_DEG


BOOK_STYLE = {
    'figure.facecolor': 'white',
    'axes.facecolor': 'white',
    'savefig.facecolor': 'white',
    'savefig.transparent': False,
    'axes.edgecolor': '#333333',
    'axes.labelcolor': '#222222',
    'text.color': '#222222',
    'xtick.color': '#333333',
    'ytick.color': '#333333',
    'axes.grid': True,
    'axes.grid.which': 'major',
    'grid.color': '#dddddd',
    'grid.linewidth': 0.8,
    'font.size': 10,
    'axes.titlesize': 11,
    'axes.labelsize': 10,
    'xtick.labelsize': 9,
    'ytick.labelsize': 9,
    'legend.fontsize': 9,
    'figure.figsize': (8.4, 3.4),
    'figure.dpi': 100,
    'legend.framealpha': 0.9,
    'lines.linewidth': 1.6,
    'axes.spines.top': False,
    'axes.spines.right': False,
}
"""rcParams of the book's figures."""

PALETTE = {
    'blue': '#1f6fb4',
    'green': '#2a9d4b',
    'red': '#d62728',
    'orange': '#d08b00',
    'purple': '#9467bd',
    'ink': '#222222',
    'axes': '#333333',
    'dark_grey': '#555555',
    'grey': '#888888',
    'shade': '#eeeeee',
    'light_blue': '#9ecae1',
    'light_orange': '#fdae6b',
    'pale_blue': '#eef3fb',
    'pale_orange': '#fdf1dc',
    'pale_red': '#fbe3e3',
    'pale_green': '#e5f4e8',
    'pale_purple': '#efe9f7',
}
"""The book's one palette: every color a chapter or a panel draws with is one of these (chapters name
them, ``plots.PALETTE['blue']``, or better a meaning of :data:`COLORS`)."""

SERIES = tuple(PALETTE[name] for name in ('blue', 'green', 'red', 'orange', 'purple'))
"""Colors of curves that only need telling apart, in order."""

COLORS = {
    'response': PALETTE['blue'],
    'command': PALETTE['dark_grey'],
    'sag': PALETTE['orange'],
    'rise': PALETTE['green'],
    'diverged': PALETTE['red'],
    'bound': PALETTE['ink'],
    'current': PALETTE['red'],
    'sag_curve': PALETTE['orange'],
    'rise_curve': PALETTE['green'],
    'ink': PALETTE['ink'],
    'axes': PALETTE['axes'],
    'muted': PALETTE['grey'],
    'shade': PALETTE['shade'],
    'real': PALETTE['grey'],
    'fitted': PALETTE['blue'],
    'menagerie': PALETTE['red'],
}
"""The book's colors by meaning, shared by the figures and the panels (``physai.interface.web`` sends them to the page's code)."""

MIN_FONT_PT = 9.0
"""The smallest text a book figure sets (tick labels, legends, notes), in points."""

COLUMN_PX = 688
"""Width of the book's text column at a 1280 px wide window (CSS px): the widest a figure is shown."""

MIN_TEXT_PX = 10.0
"""The smallest text a figure may show at 1280 px (CSS px), checked by tests/test_site.py."""

METADATA_KEY = 'physai'
"""Key of a figure's text metadata in its image output (:func:`text_metadata`)."""


def text_metadata(fig: Figure) -> dict:
    """What a reader's eye needs to know of a drawn figure: its smallest text and its size.

    ``min_font_pt`` is the smallest font of any visible, non-empty text (titles, labels, tick labels, legends,
    notes), ``width_in`` and ``height_in`` the figure's size and ``dpi`` its dots per inch. The size of that text
    on screen follows from the image's pixel width and the width it is shown at (:func:`shown_text_px`).
    Call it after the figure is drawn (tick labels exist only then).
    """
    from matplotlib.text import Text
    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_figure() is not None]
    width, height = fig.get_size_inches()
    return {'min_font_pt': float(min(sizes)) if sizes else None, 'width_in': round(float(width), 3),
            'height_in': round(float(height), 3), 'dpi': float(fig.dpi)}


def shown_text_px(metadata: dict, image_width_px: float, shown_width_px: float) -> float:
    """The smallest text of a figure as shown, in CSS px, from :func:`text_metadata` and the image's widths."""
    if image_width_px <= 0 or shown_width_px <= 0:
        raise ValueError(f'image_width_px and shown_width_px must be positive, got {image_width_px} and '
                         f'{shown_width_px}')
    return metadata['min_font_pt'] * metadata['dpi'] / 72 * shown_width_px / image_width_px


def lift_small_text(fig: Figure, minimum: float = MIN_FONT_PT) -> int:
    """Set every visible text of ``fig`` smaller than ``minimum`` points to ``minimum``; returns how many.

    A figure shown in the book never sets text under :data:`MIN_FONT_PT` (a compact legend, say): the display hook (:func:`record_figure_text`) calls this before rendering.
    """
    from matplotlib.text import Text
    fig.canvas.draw()  # tick labels exist once drawn
    small = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and t.get_fontsize() < minimum]
    for text in small:
        text.set_fontsize(minimum)
    return len(small)


def _png_with_metadata(fig: Figure):
    from io import BytesIO
    lift_small_text(fig)
    buffer = BytesIO()
    fig.canvas.print_figure(buffer, format='png', bbox_inches='tight', dpi=fig.dpi, facecolor='white')
    return buffer.getvalue(), {METADATA_KEY: text_metadata(fig)}


def record_figure_text() -> bool:
    """Have IPython show every matplotlib figure as a PNG that carries :func:`text_metadata` in its output, its
    text no smaller than :data:`MIN_FONT_PT` (:func:`lift_small_text`).

    The stored notebook then says, per figure, its smallest font and size, which the site test turns into the
    text size a reader sees. Does nothing outside IPython; returns whether it is installed.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if 'ipykernel' in sys.modules:
        # matplotlib loads its inline backend at the first figure, which sets IPython's figure formatters then:
        # load it now, so that the formatter set here is the one that stays
        import matplotlib_inline.backend_inline  # noqa: F401
    formatter = shell.display_formatter.formatters['image/png']
    formatter.for_type(Figure, _png_with_metadata)
    return True


def use_book_style() -> None:
    """Apply :data:`BOOK_STYLE` to matplotlib's global rcParams (call once per notebook), and record each shown
    figure's text size in its output (:func:`record_figure_text`)."""
    mpl.rcParams.update(BOOK_STYLE)
    record_figure_text()


@contextlib.contextmanager
def book_style() -> Iterator[None]:
    """Context manager: the book's style inside the ``with`` block only."""
    with mpl.rc_context(BOOK_STYLE):
        yield


def label(ax: Axes, xlabel: str, ylabel: str, title: str | None = None) -> None:
    """Axis labels (with units, e.g. ``'time (s)'``) and an optional title."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)


def _plain_decade(value: float, _pos=None) -> str:
    if value <= 0 or not math.isfinite(value):
        return ''
    exponent = math.log10(value)
    if abs(exponent - round(exponent)) > 1e-9:
        return ''
    return f'{value:g}' if 1e-3 <= value < 1e5 else f'1e{round(exponent)}'


def log_axis(ax: Axes, which: str = 'x') -> None:
    """Log scale with plain decade labels (0.1, 1, 10, 100, 1000, 10000) and unlabelled minor ticks.

    Args:
      ax: the axes.
      which: ``'x'``, ``'y'`` or ``'both'``.
    """
    if which not in ('x', 'y', 'both'):
        raise ValueError(f"which must be one of x, y, both, got {which!r}")
    for name in (('x', 'y') if which == 'both' else (which,)):
        axis = ax.xaxis if name == 'x' else ax.yaxis
        (ax.set_xscale if name == 'x' else ax.set_yscale)('log')
        axis.set_major_locator(mticker.LogLocator(base=10, numticks=12))
        axis.set_major_formatter(mticker.FuncFormatter(_plain_decade))
        axis.set_minor_locator(mticker.LogLocator(base=10, subs=np.arange(2, 10), numticks=12))
        axis.set_minor_formatter(mticker.NullFormatter())


def rise_marks(response) -> tuple[float, float, float, float, float]:
    """Where the 10-90 % rise of a step response starts and ends.

    Args:
      response: a :class:`physai.engine.link.StepResponse` (uses ``q``, ``sag_deg``, ``rise_window``).

    Returns:
      ``(t10, t90, q10, q90, q_final)``: the times (s) the response crossed 10 % and 90 % of the way
      from ``q[0]`` to the settled value (as the step response measured them), those two angles and the
      settled value (rad). All NaN where the response has no rise time (diverged, never settled, or never
      got ``RISE_START`` of the way).
    """
    t10, t90 = response.rise_window
    if not (math.isfinite(t10) and math.isfinite(t90)):
        return (math.nan,) * 5
    q_final = -math.radians(response.sag_deg)  # the command is 0, sag = u - q_final
    q0 = float(response.q[0])
    span = q_final - q0
    return t10, t90, q0 + 0.1 * span, q0 + 0.9 * span, q_final


class StepResponseMarks:
    """The artists of one step-response plot, created once and moved in place by :meth:`update`.

    Draws the trajectory q(t) in degrees, the command (0°), the settled value with the sag written
    next to it, the 10 % and 90 % levels with the rise time between them, and a red "diverged" flag.

    Args:
      ax: the axes to draw on; labels (time in s, angle in degrees) are set here.
      color: color of the trajectory.
      ylim: fixed angle limits, degrees. A diverged run is clipped to them, so the flag, not the
        scale, tells the story.
      duration: length of the time axis, s (the run's duration; a diverged run ends early).
      legend: draw the legend.
    """

    def __init__(self, ax: Axes, *, color: str = COLORS['response'],
                 ylim: tuple[float, float] = (-40.0, 15.0), duration: float = 3.0,
                 legend: bool = True):
        self.ax = ax
        self.ylim = ylim
        self.duration = duration
        (self.command,) = ax.plot([0, duration], [0, 0], color=COLORS['command'], lw=1, ls='--',
                                  label='command u = 0')
        (self.trajectory,) = ax.plot([], [], color=color, label='q(t)')
        (self.settled,) = ax.plot([], [], color=COLORS['sag'], lw=1, ls=':', label='settled')
        (self.levels,) = ax.plot([], [], color=COLORS['rise'], lw=0.8, ls=':')
        (self.rise,) = ax.plot([], [], color=COLORS['rise'], lw=3, solid_capstyle='butt',
                               label='10-90 % rise')
        self.readout = ax.text(0.98, 0.06, '', transform=ax.transAxes, ha='right', va='bottom',
                               fontsize=9, bbox=dict(facecolor='white', edgecolor='none',
                                                     alpha=0.85, pad=1.5))
        self.flag = ax.text(0.5, 0.55, 'diverged', transform=ax.transAxes, ha='center',
                            va='center', color=COLORS['diverged'], fontsize=16,
                            fontweight='bold', visible=False,
                            bbox=dict(facecolor='white', edgecolor=COLORS['diverged'], pad=3))
        label(ax, 'time (s)', 'joint angle q (deg)')
        ax.set_xlim(0, duration)
        ax.set_ylim(*ylim)
        if legend:
            ax.legend(loc='upper right', ncols=2, fontsize=MIN_FONT_PT)

    def update(self, response) -> None:
        """Show ``response`` (a :class:`physai.engine.link.StepResponse`) on the existing artists."""
        t = np.asarray(response.t, dtype=float)
        q_deg = np.degrees(np.asarray(response.q, dtype=float))
        lo, hi = self.ylim
        q_deg = np.clip(np.nan_to_num(q_deg, nan=hi, posinf=hi, neginf=lo), lo - 1, hi + 1)
        t_end = self.duration
        self.trajectory.set_data(t, q_deg)
        t10, t90, q10, q90, q_final = rise_marks(response)
        if response.diverged:
            self.settled.set_data([], [])
            self.levels.set_data([], [])
            self.rise.set_data([], [])
            self.readout.set_text(STEP_WORDS['diverged_after'].format(t=float(t[-1])))
            self.readout.set_color(COLORS['diverged'])
            self.flag.set_visible(True)
            return
        self.flag.set_visible(False)
        self.readout.set_color(COLORS['diverged'] if readout_bad(response) else '#222222')
        qf = math.degrees(q_final)
        self.settled.set_data([0, t_end], [qf, qf])
        if math.isfinite(t10) and math.isfinite(t90):
            q10d, q90d = math.degrees(q10), math.degrees(q90)
            self.levels.set_data([0, t_end, np.nan, 0, t_end], [q10d, q10d, np.nan, q90d, q90d])
            self.rise.set_data([t10, t90], [q90d, q90d])
        else:
            self.levels.set_data([], [])
            self.rise.set_data([], [])
        self.readout.set_text(readout(response))


SWINGING_P2P_DEG = SETTLED_P2P_DEG
"""Peak-to-peak over the settle window (degrees) above which a stable run is still swinging."""


STEP_WORDS = {
    'diverged': 'diverged',
    'diverged_after': 'diverged after {t:.3f} s',
    'swinging': 'not settled: still swinging {p2p:.3g}° peak to peak',
    'creeping': 'not settled: still creeping, {p2p:.3g}° in the last {tail:g} s',
    'settled': 'sag {sag:.3f}°   rise {rise}',
    'rise': '{rise_ms:.1f} ms',
    'no_rise': 'n/a',
}
"""What a step response measured, in the book's words (templates; chapter 1's panel description holds them, so the
page writes the same)."""


def readout(response) -> str:
    """What a step response measured, in the book's words (:data:`STEP_WORDS`).

    'sag 0.169°   rise 56.7 ms' for a settled run (rise 'n/a' when it never got 10 % of its way); for a run still
    moving at the end, 'not settled: still swinging 127° peak to peak' when it turns back and forth
    (:attr:`~physai.engine.link.StepResponse.swinging`) or 'not settled: still creeping, 0.37° in the last 0.5 s'
    when it only moves one way; 'diverged' for a run MuJoCo gave up on.
    """
    if response.diverged:
        return STEP_WORDS['diverged']
    if not response.settled:
        if response.swinging:
            return STEP_WORDS['swinging'].format(p2p=response.p2p_deg)
        return STEP_WORDS['creeping'].format(p2p=response.p2p_deg, tail=SETTLE_WINDOW)
    rise = (STEP_WORDS['rise'].format(rise_ms=response.rise_ms) if math.isfinite(response.rise_ms)
            else STEP_WORDS['no_rise'])
    return STEP_WORDS['settled'].format(sag=response.sag_deg, rise=rise)


def readout_bad(response) -> bool:
    """Whether a step response's readout reads as a failure (the diverged colour): it diverged, or it has not settled
    and still swings. A run still creeping toward rest is slow, not unstable, and reads in the text colour."""
    return bool(response.diverged or (not response.settled and response.swinging))


def mark_step_response(ax: Axes, response, **kwargs) -> StepResponseMarks:
    """Plot a step response with its sag and 10-90 % rise marked (and a red flag if it diverged).

    Args:
      ax: the axes.
      response: a :class:`physai.engine.link.StepResponse`.
      **kwargs: passed to :class:`StepResponseMarks` (``color``, ``ylim``).

    Returns:
      The marks; call ``.update(other_response)`` to move them in place.
    """
    marks = StepResponseMarks(ax, **kwargs)
    marks.update(response)
    return marks
