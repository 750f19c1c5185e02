"""Chapter 3's live panel and its static twin: the SO-101 holding a pose with its PD in the loop or in the step.

:func:`pd_panel` holds Menagerie's SO-101 at the standby pose with the controller at ``rate_hz`` and draws the worst
joint's hold against the command and the growth per tick against the controller rate (the analytic bound from
:mod:`physai.experiments.where_pd_runs`); a chattering hold is reported as its ensemble (:func:`ensemble_text`).
:func:`pd_twin` is the same figure precomputed for the published page. :class:`BitmapText` is the text artist both
chapter 3's and chapter 4's panels redraw at every slider move.
"""

from __future__ import annotations

import functools
import math

import matplotlib as mpl
import numpy as np
from matplotlib import font_manager
from matplotlib.text import Text

from physai.experiments import registry
from physai.interface import live, plots, twin
from physai.engine.hold import (DURATION, ENSEMBLE_PROBE, ENSEMBLE_SIZE, ENSEMBLE_SPACING, HoldEnsemble, HoldParams,
                                HoldResponse, PHYSICS_TIMESTEP, SETTLE_WINDOW, SO101_ARMATURE, SO101_KP, SO101_KV,
                                STANDBY, hold_responses, so101_joints)
from physai.experiments.where_pd_runs import RATES_HZ, growth_curve, rate_ensembles, worst_growth
from physai.laws import robust
from physai.laws.loop import BACKENDS


# ---------------------------------------------------------------------------------------------------------
# Text that changes at every slider move, drawn as one bitmap


class BitmapText(Text):
    """A text artist drawn as one bitmap, cached per string: for the text a live panel changes at every move.

    matplotlib 3.11 draws a string glyph by glyph (about 3 ms a string plus 0.15 ms a glyph here): the two lines
    of a panel's verdict cost 15-20 ms, as much as the simulation behind them. This draws the same string in the
    same font file at the same pixel size with PIL's FreeType, as one RGBA bitmap (~1 ms; the latest 256 are
    kept), and blits it. Honoured: position and transform, ``ha`` (left, center, right), ``va`` (top, bottom,
    center, baseline), colour and alpha, several lines (``linespacing`` 'normal' or a factor), and a ``bbox`` with
    facecolor, edgecolor and pad. Not honoured: rotation, math text, wrapping. Add it with :func:`add_bitmap_text`.
    """

    def draw(self, renderer):
        if renderer is not None:
            self._renderer = renderer
        if not self.get_visible() or not self.get_text():
            return
        px_per_pt = renderer.points_to_pixels(1.0)
        size_px = round(self.get_fontsize() * px_per_pt, 2)
        path = font_manager.findfont(self.get_fontproperties())
        face = edge = (0.0, 0.0, 0.0, 0.0)
        pad_px = edge_px = 0.0
        patch = self.get_bbox_patch()
        if patch is not None:
            face, edge = tuple(patch.get_facecolor()), tuple(patch.get_edgecolor())
            pad_px = patch.get_boxstyle().pad * size_px  # the pad is a fraction of the font size
            edge_px = patch.get_linewidth() * px_per_pt if edge[3] > 0 else 0.0
        image, (left, top, width, height, descent) = _text_bitmap(
            self.get_text(), path, size_px, mpl.colors.to_rgba(self.get_color(), self.get_alpha()),
            self.get_linespacing(), pad_px, face, edge, edge_px)
        x, y = self.get_transform().transform(self.get_unitless_position())  # display px, y upwards
        ha, va = self.get_horizontalalignment(), self.get_verticalalignment()
        if ha not in _HA or va not in _VA:
            raise ValueError(f'BitmapText supports ha in {sorted(_HA)} and va in {sorted(_VA)}, got {ha!r}, {va!r}')
        text_top = y + {'top': 0.0, 'bottom': height, 'center': height / 2, 'baseline': height - descent}[va]
        x0 = x - _HA[ha] * width - left
        y0 = text_top + top - image.shape[0]
        gc = renderer.new_gc()
        renderer.draw_image(gc, round(x0), round(y0), image[::-1])  # the bitmap's rows run downwards
        gc.restore()
        self.stale = False


_HA = {'left': 0.0, 'center': 0.5, 'right': 1.0}
_VA = ('top', 'bottom', 'center', 'baseline')


def add_bitmap_text(ax, x: float, y: float, text: str = '', **kwargs) -> BitmapText:
    """A :class:`BitmapText` at (x, y) on ``ax`` (data coordinates unless ``transform`` is given), animated so a
    live panel blits it; ``kwargs`` as ``ax.text``'s."""
    artist = BitmapText(x, y, text, **{'transform': ax.transData, 'animated': True, **kwargs})
    ax.add_artist(artist)
    artist.set_clip_path(None)  # add_artist clips to the axes; a title sits above them
    artist.set_clip_on(False)
    return artist


@functools.lru_cache(maxsize=16)
def _font(path: str, size_px: float):
    from PIL import ImageFont
    # the basic layout advances glyphs as matplotlib does (raqm's shaping makes a line a few pixels wider)
    return ImageFont.truetype(path, size=size_px, layout_engine=ImageFont.Layout.BASIC)


@functools.lru_cache(maxsize=16)
def _font_extent(path: str, size_px: float) -> tuple[float, float, float]:
    """The font's own ascent, descent and line gap, px: what matplotlib 3.11 sizes every line with (the OS/2 table,
    else hhea), before it widens a line whose glyphs reach further."""
    font = font_manager.get_font(path)
    scale = size_px / font.get_sfnt_table('head')['unitsPerEm']
    for table, gap, ascent, descent in (('OS/2', 'sTypoLineGap', 'sTypoAscender', 'sTypoDescender'),
                                        ('hhea', 'lineGap', 'ascent', 'descent')):
        values = font.get_sfnt_table(table)
        if values is not None:
            return values[ascent] * scale, -values[descent] * scale, values[gap] * scale
    ascent, descent = _font(path, size_px).getmetrics()
    return float(ascent), float(descent), 0.0


@functools.lru_cache(maxsize=256)
def _text_bitmap(text: str, path: str, size_px: float, color: tuple, linespacing, pad_px: float, face: tuple,
                 edge: tuple, edge_px: float) -> tuple[np.ndarray, tuple[float, ...]]:
    """The string's bitmap, (H, W, 4) uint8 straight RGBA, row 0 on top, and the text block inside it, px:
    ``(left, top, width, height, descent)`` (descent: below the last line's baseline).

    Lines are stacked as matplotlib 3.11 stacks them: each at least the font's ascent and descent (plus half the
    line gap each when there are several lines, with ``linespacing`` 'normal'), or ``linespacing`` times the font's
    height."""
    from PIL import Image, ImageDraw
    font = _font(path, size_px)
    min_ascent, min_descent, gap = _font_extent(path, size_px)
    lines = text.split('\n')
    if len(lines) == 1:
        gap = 0.0
    extents = []  # (ascent, descent) of each line, px
    for line in lines:
        _, top, _, bottom = font.getbbox(line, anchor='ls') if line else (0, 0, 0, 0)
        if linespacing == 'normal':
            extents.append((max(-top, min_ascent) + gap / 2, max(bottom, min_descent) + gap / 2))
        else:
            leading = float(linespacing) * (min_ascent + min_descent) - (bottom - top)
            extents.append((-top + leading / 2, bottom + leading / 2))
    width = max(font.getlength(line) for line in lines)
    height = sum(a + d for a, d in extents)
    border = pad_px + edge_px
    mask = Image.new('L', (math.ceil(width + 2 * border), math.ceil(height + 2 * border)), 0)
    draw = ImageDraw.Draw(mask)
    baseline = border
    for line, (a, d) in zip(lines, extents):
        baseline += a
        draw.text((border, baseline), line, font=font, fill=255, anchor='ls')
        baseline += d
    ink = np.asarray(mask, dtype=float)[..., None] / 255.0 * color[3]  # coverage times the text's alpha
    back = np.empty(ink.shape[:2] + (4,))
    back[...] = face
    if edge_px > 0:
        e = max(1, round(edge_px))
        for rim in (np.s_[:e, :], np.s_[-e:, :], np.s_[:, :e], np.s_[:, -e:]):
            back[rim] = edge
    alpha = ink + back[..., 3:] * (1.0 - ink)  # the text over its box
    rgb = (np.asarray(color[:3]) * ink + back[..., :3] * back[..., 3:] * (1.0 - ink)) / np.where(alpha > 0, alpha, 1.0)
    image = np.round(255.0 * np.concatenate([rgb, alpha], axis=2)).astype(np.uint8)
    return image, (border, border, width, height, extents[-1][1])


# ---------------------------------------------------------------------------------------------------------
# The chapter's live panel and its static twin (built on physai.interface.live)

PANEL_RATES_HZ = robust.log_grid(10.0, 1000.0, 41)
"""Controller rates (Hz) at which the panel draws the growth per tick of both backends."""

PANEL_YLIM_DEG = 80.0
"""deg: the panel's trajectory axis spans ±80° (every joint's move to ``STANDBY`` fits) unless a run leaves it."""

PANEL_YLIM_WIDE_DEG = 180.0
"""deg: the axis of a run that leaves ±80°: every joint's range fits (the widest, wrist_roll's, is ±157°), so only
a diverging run is cut off, and its verdict says so."""


def pd_note(response: HoldResponse, growth: float, *, rate_hz: float, backend: str) -> str:
    """The two-line note :func:`pd_panel` writes on its trajectory plot: where the PD runs and how often, the worst
    joint's peak-to-peak over the last second and its chatter tone, and the verdict with the growth per tick (the
    page's live panel writes the same words: ``holdNote`` in ``book/_static/physai-live-arm-core.js``)."""
    where = f'{backend} at {rate_hz:.0f} Hz'
    if response.diverged:  # MuJoCo flagged bad accelerations (and reset the run): no peak-to-peak to speak of
        return f'{where}: diverged\ngrowth per tick {growth:.3g}'
    chatter = '' if not response.chatters else (', broadband chatter' if response.chatter_hz is None
                                                else f', chatter {response.chatter_hz:.0f} Hz')
    state = 'chatters' if response.chatters else 'quiet'
    return (f'{where}: p2p over the last second {response.worst_p2p_rad:.2e} rad{chatter}\n'
            f'{state}, growth per tick {growth:.3f}')


def pd_panel(*, rate_hz: float = 50.0, backend: str = 'in-loop', kp: float = SO101_KP,
             kv: float = SO101_KV, armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
             integrator: str = 'implicitfast'):
    """Chapter 3's live panel: the common four plus controller rate, damping kv and backend.

    Every change reruns the SO-101 hold (:func:`hold_responses`) and redraws (1) the worst joint's
    trajectory and its command, with its peak-to-peak over the last second and whether it chatters, and
    (2) the growth per controller tick of both backends against the controller rate, the current one marked.

    Returns:
      A :class:`physai.interface.live.Panel`; show it as the last expression of a cell.
    """

    joint_names = so101_joints()

    @registry.cached(maxsize=16)
    def run(rate_hz, backend, kp, kv, armature, timestep, integrator):
        params = HoldParams(rate_hz=rate_hz, backend=backend, kp=kp, kv=kv, armature=armature,
                            timestep=timestep, integrator=integrator)
        return hold_responses([params], nthread=1)[0]

    @registry.cached(maxsize=16)
    def curves(kp, kv, armature, timestep, integrator):  # not the rate or the backend: both curves drawn
        return {b: growth_curve(PANEL_RATES_HZ, backend=b, kp=kp, kv=kv, armature=armature,
                                timestep=timestep, integrator=integrator) for b in BACKENDS}

    def compute(values):
        response = run(**values)
        growth = worst_growth(**values)
        return {'response': response, 'curves': curves(**values), 'growth': growth}

    def setup(fig):
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={'width_ratios': [1.5, 1]})
        (target,) = ax1.plot([], [], color=plots.COLORS['command'], lw=1, ls='--', label='command',
                             animated=True)
        (q_line,) = ax1.plot([], [], color=plots.COLORS['response'], lw=1.2, label='joint angle q',
                             animated=True)
        ax1.axvspan(DURATION - SETTLE_WINDOW, DURATION, color='#eeeeee', zorder=0, label='last second')
        ax1.set_xlim(0, DURATION)
        note = add_bitmap_text(ax1, 0.02, 0.04, transform=ax1.transAxes, fontsize=8.5,
                               bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        # the legend sits above the axes, clear of every joint's trajectory, so it never has to move
        ax1.legend(loc='lower right', bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=7.5, frameon=False,
                   borderaxespad=0.2)
        ax1.set_ylim(-PANEL_YLIM_DEG, PANEL_YLIM_DEG)
        plots.label(ax1, 'time (s)', 'joint angle (deg)')
        colors = {'in-loop': plots.COLORS['diverged'], 'in-step': plots.COLORS['response']}
        lines = {b: ax2.plot([], [], color=colors[b], label=f'{b}', animated=True)[0] for b in BACKENDS}
        ax2.axhline(1.0, color=plots.COLORS['bound'], lw=1, ls='--')
        point = plots.mark_point(ax2, rate_hz, 1.0, label='current', animated=True)
        ax2.set_xscale('log')
        ax2.set_xlim(PANEL_RATES_HZ[0], PANEL_RATES_HZ[-1])
        ax2.set_ylim(0, 2)
        ax2.legend(loc='upper right', fontsize=7.5)
        plots.label(ax2, 'controller rate (Hz)', 'growth per tick (worst joint)', 'stability')
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15, top=0.9, wspace=0.28)
        # the title names the worst joint: animated, so it is blitted with the curves; where set_title puts it
        above = mpl.transforms.ScaledTranslation(0.0, mpl.rcParams['axes.titlepad'] / 72, fig.dpi_scale_trans)
        title = add_bitmap_text(ax1, 0.0, 1.0, va='baseline', fontsize=9.5, transform=ax1.transAxes + above)
        return {'ax1': ax1, 'title': title, 'target': target, 'q': q_line, 'note': note, 'lines': lines,
                'point': point, 'ylim': (-PANEL_YLIM_DEG, PANEL_YLIM_DEG), 'wide': False}

    def draw(state, results, values):
        r, growth = results['response'], results['growth']
        j = r.worst
        state['q'].set_data(r.t, np.degrees(r.q[:, j]))
        state['target'].set_data(r.t, np.degrees(r.target[:, j]))
        # two ranges only, both drawn once (pd_panel draws the wide one at start-up): a slider move then
        # redraws just the animated artists, whichever range it needs
        with np.errstate(invalid='ignore'):  # a diverged run's NaN is neither in nor out
            wide = state['wide'] or bool(np.any(np.abs(np.degrees(r.q[:, j])) > PANEL_YLIM_DEG))
        half = PANEL_YLIM_WIDE_DEG if wide else PANEL_YLIM_DEG
        ylim = (-half, half)
        if ylim != state['ylim']:
            state['ax1'].set_ylim(*ylim)
            state['ylim'] = ylim
        state['title'].set_text(f'worst joint: {joint_names[j]}')
        # the note goes on the side the move leaves free (above a move down, below a move up)
        down = STANDBY[j] < 0
        state['note'].set_position((0.02, 0.96 if down else 0.04))
        state['note'].set_verticalalignment('top' if down else 'bottom')
        state['note'].set_text(pd_note(r, growth, rate_hz=values['rate_hz'], backend=values['backend']))
        for b, line in state['lines'].items():
            line.set_data(PANEL_RATES_HZ, np.minimum(results['curves'][b], 2.0))
        state['point'].set_data([values['rate_hz']], [min(growth, 2.0)])
        return ylim  # the view key: the one thing about the axes a setting changes

    controls = live.common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator) + [
        live.LogSlider('rate_hz', 'controller rate', 10.0, 1000.0, rate_hz, unit='Hz', readout_format='.0f'),
        live.Slider('kv', 'damping kv', 0.0, 10.0, kv, step=0.01, unit='N·m·s/rad', readout_format='.3f'),
        live.Choice('backend', 'PD runs', BACKENDS, backend),
    ]
    panel = live.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(12.0, 3.8), dpi=80)
    panel.state['wide'] = True  # draw the wide range once now, so no slider move waits for it
    panel.update()
    panel.state['wide'] = False
    panel.update()
    return panel


TWIN_ARMATURES = (SO101_ARMATURE, 0.0)


def pd_twin():
    """The panel's static twin: controller rate × backend × armature (0.028 or 0), precomputed.

    Each frame shows run 0 of the configuration's ensemble (:func:`rate_ensembles`), the joint of
    :attr:`HoldEnsemble.joint`, and the ensemble's summary as text: the trace is one draw of a chaotic run,
    the text and the growth curves are what every processor reproduces.

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.twin.static_twin`).
    """

    joint_names = so101_joints()
    runs = {}
    for armature in TWIN_ARMATURES:
        for e in rate_ensembles(armature=armature):
            runs[e.params.rate_hz, e.params.backend, armature] = e
    growth = {(b, a): growth_curve(PANEL_RATES_HZ, backend=b, armature=a)
              for b in BACKENDS for a in TWIN_ARMATURES}
    colors = {'in-loop': plots.COLORS['diverged'], 'in-step': plots.COLORS['response']}

    def frame(rate_hz, backend, armature):
        e = runs[rate_hz, backend, armature]
        r, j = e.sample, e.joint
        items = [twin.twin_line(r.t, np.degrees(r.target[:, j]), label='command', color=plots.COLORS['command'],
                             width=1.0, dash='4 3'),
                 twin.twin_line(r.t, np.degrees(r.q[:, j]), label=f'q ({joint_names[j]}, run 1 of {e.n})',
                             width=1.2)]
        items.append(twin.twin_note(ensemble_text(e)))  # above the frame: a chattering trace fills the plot
        current = worst_growth(rate_hz=rate_hz, backend=backend, armature=armature)
        stab = [twin.twin_line(PANEL_RATES_HZ, np.minimum(growth[b, armature], 2.0), label=b, color=colors[b])
                for b in BACKENDS]
        stab.append(twin.twin_line([PANEL_RATES_HZ[0], PANEL_RATES_HZ[-1]], [1.0, 1.0], color='#222222',
                                width=1.0, dash='4 3'))
        stab.append(twin.twin_markers([rate_hz], [min(current, 2.0)], label='current'))
        return [items, stab]

    sliders = [twin.TwinSlider('rate_hz', 'controller rate (Hz)', RATES_HZ, default=0),
               twin.TwinSlider('backend', 'PD runs', BACKENDS, kind='select'),
               twin.TwinSlider('armature', 'armature (kg·m²)', TWIN_ARMATURES, kind='select')]
    axes = [twin.TwinAxes(xlabel='time (s)', ylabel='joint angle (deg)', xlim=(0, DURATION), legend='ur'),
            twin.TwinAxes(title='growth per controller tick', xlabel='controller rate (Hz)',
                       ylabel='growth per tick', xlim=(PANEL_RATES_HZ[0], PANEL_RATES_HZ[-1]),
                       ylim=(0, 2), xlog=True, legend='ur')]
    return twin.static_twin('ch3-pd-rate', sliders, axes, frame, digits=4, width=460, height=300,
                         caption='Left: a joint during the move and hold, under the summary of its ensemble; '
                                 'right: growth per controller tick. '
                                 f'Physics at {1 / PHYSICS_TIMESTEP:.0f} Hz; Menagerie servo kp {SO101_KP:.2f}, '
                                 f'kv {SO101_KV:.3f}. Growth above 1 (dashed): the PD cannot hold still. The '
                                 f'trace is the first run of an ensemble ({ENSEMBLE_SIZE} runs where the arm moves, '
                                 f'{ENSEMBLE_PROBE} where it holds still, starts {ENSEMBLE_SPACING:.0e} rad apart); '
                                 'the note above the trace sums up all of them.')


def ensemble_text(ensemble: HoldEnsemble) -> str:
    """One line for a reader: ``'chatters in 64 of 64 runs: p2p 0.2 rad (0.1-0.2), 5-10 Hz'`` or
    ``'still in 8 of 8 runs: p2p < 1e-09 rad'`` (the same figures as :func:`rate_rows`)."""
    row = ensemble.row()
    if ensemble.state == 'still':
        return f'still in {ensemble.still} of {ensemble.n} runs: p2p {row["p2p_rad"]:g} rad'
    if ensemble.state != 'chatters':
        return (f'{ensemble.state}: {ensemble.chattering} of {ensemble.n} runs chatter, '
                f'{ensemble.still} hold still')
    tone = row['chatter_hz'] if row['chatter_hz'] == 'broadband' else f'{row["chatter_hz"]} Hz'
    return (f'chatters in {ensemble.chattering} of {ensemble.n} runs: p2p {row["p2p_rad"]:g} rad '
            f'({row["p2p_low"]:g}-{row["p2p_high"]:g}), {tone}')
