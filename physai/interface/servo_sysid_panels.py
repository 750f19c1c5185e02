"""Chapter 4's live panel and its static twin: an SO-101 episode replayed open loop under a servo you set.

:func:`sysid_panel` replays one recorded episode (:func:`physai.engine.sysid.replay`) with the servo's kp, kv,
forcerange, damping, friction loss and armature on sliders and draws the simulated joints against the recording,
the mean absolute error and whether the replay stayed stable, chatters or diverged; :func:`sysid_twin` is the kp
sweep precomputed for the published page.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from matplotlib.collections import PolyCollection

from physai.experiments import registry
from physai.interface import live, plots, twin
from physai.interface.where_pd_runs_panels import add_bitmap_text
from physai.engine.datasets import Episode
from physai.engine.sysid import ArmServo, Replay, ReplayConfig, arm_columns, replay
from physai.engine.so101 import ARM_JOINTS
from physai.experiments.servo_sysid import hold_sag_deg
from physai.laws import checks, robust


# --------------------------------------------------------------------------------------------------
# The live panel and its static twin
# --------------------------------------------------------------------------------------------------

PANEL_JOINTS = ('shoulder_lift', 'elbow_flex')
TWIN_KPS = robust.log_grid(1.0, 1000.0, 13)

TWIN_NUDGES = (0.0, 1e-9, 2e-9, 3e-9)
"""rad: each frame of :func:`sysid_twin` is replayed from the recorded start and from three starts a little off it
(the first four of :data:`physai.engine.sysid.ENSEMBLE_OFFSETS`), so a chaotic frame shows itself before it is
stored. A chaotic replay falls on one of a few branches, so it takes more than two draws to see one part."""

CHAOTIC_SPREAD_DEG = 1e-4
"""deg: a frame whose nudged replays part by more than this is chaotic. One that is not parts by under 1e-6 deg
(the 1e-9 rad nudge, amplified tenfold at most), a hundred times below the twin's 0.01 deg; a chaotic one by
degrees (kp 1000 with the fitted friction: 2.6 deg)."""


def replay_diverged(rep: Replay) -> bool:
    """Whether a replay counts as diverged on the panel: MuJoCo flagged it, or a frame is not finite."""
    return bool(rep.diverged or not np.all(np.isfinite(rep.sim_deg)))


def replay_status(rep: Replay) -> str:
    """The words :func:`sysid_panel` writes on a replay: ``diverged``; ``chatters (N° per frame) · MAE x°`` when it
    stays bounded but rattles frame to frame (not a servo to call stable); or ``stable · MAE x°``. The page's live
    panel writes the same (``replayStatus`` in ``book/_static/physai-live-arm-core.js``)."""
    if replay_diverged(rep):
        return 'diverged'
    if rep.chatters:
        return f'chatters ({rep.chatter_deg:.0f}° per frame) · MAE {rep.mae_deg:.3f}°'
    return f'stable · MAE {rep.mae_deg:.3f}°'


def sysid_panel(episode: Episode, base: ArmServo, *, joints: Sequence[str] = PANEL_JOINTS):
    """The chapter's live panel: replay ``episode`` with ``base`` changed by the sliders.

    Sliders: the book's common four (kp, armature, timestep, integrator) plus kv and forcerange; joint
    damping and frictionloss stay at ``base``'s. Every change replays the episode and redraws the
    overlay of real and simulated ``joints``, the error per joint, the sag in held poses and whether
    the replay stayed stable, chatters (:attr:`Replay.chatters`) or diverged.

    Raises:
      TypeError: ``episode`` not an :class:`Episode` or ``base`` not an :class:`ArmServo`.
      ValueError: an episode of fewer than 2 frames or without the five arm joints, or ``joints`` not arm joints
        named once each.
    """
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be an Episode (a recording, e.g. load_lerobot(...)[0]), got {episode!r:.80}')
    if not isinstance(base, ArmServo):
        raise TypeError(f'base must be an ArmServo (e.g. sysid.MENAGERIE), got {base!r:.80}')
    if episode.nframe < 2 or any(j not in episode.joints for j in ARM_JOINTS):
        raise ValueError(f'episode must hold at least 2 frames of the arm joints {", ".join(ARM_JOINTS)}, got '
                         f'{episode.nframe} frames of {", ".join(episode.joints)}')
    if isinstance(joints, str) or not joints or any(j not in ARM_JOINTS for j in joints):
        raise ValueError(f'joints must be arm joints ({", ".join(ARM_JOINTS)}), got {joints!r}')
    checks.distinct('joints', joints)

    idx = [ARM_JOINTS.index(j) for j in joints]
    real_deg = episode.state[:, arm_columns(episode.joints)]
    t = np.arange(episode.nframe) / episode.fps

    @registry.cached(maxsize=16)
    def run(kp, kv, forcerange, armature, timestep, integrator):
        servo = dataclasses.replace(base, kp=kp, kv=kv, forcerange=forcerange, armature=armature)
        config = ReplayConfig(timestep=timestep, integrator=integrator)
        rep = replay([servo], [episode], config=config, nthread=1)[0][0]
        return rep, hold_sag_deg(rep)

    def compute(values):
        rep, (sag, real_sag) = run(**values)
        return {'replay': rep, 'sag': sag, 'real_sag': real_sag}

    def setup(fig):
        grid = fig.add_gridspec(1, 3, width_ratios=(2.3, 1, 1), wspace=0.35, left=0.06, right=0.98,
                               bottom=0.16, top=0.9)
        ax1, ax2, ax3 = (fig.add_subplot(grid[0, i]) for i in range(3))
        colors = ('#1f6fb4', '#2a9d4b')
        sim_lines = []
        for k, (j, c) in enumerate(zip(idx, colors)):
            ax1.plot(t, real_deg[:, j], color='#888888', lw=2.4, alpha=0.7,
                     label='real' if k == 0 else None)
            sim_lines.append(ax1.plot(t, real_deg[:, j], color=c, lw=1.3, animated=True,
                                      label=f'sim {joints[k]}')[0])
        lo, hi = real_deg[:, idx].min(), real_deg[:, idx].max()
        ax1.set_ylim(lo - 0.15 * (hi - lo), hi + 0.15 * (hi - lo))
        # legends sit outside the axes, clear of every trace and bar, so they never have to move
        ax1.legend(loc='lower right', bbox_to_anchor=(1.0, 1.0), ncol=3, fontsize=7.5, frameon=False,
                   borderaxespad=0.2)
        plots.label(ax1, 'time (s)', 'joint angle (deg)')
        ax1.set_title(f'held-out episode {episode.index}', loc='left', fontsize=10)
        status = add_bitmap_text(ax1, 0.98, 0.96, transform=ax1.transAxes, ha='right', va='top', fontsize=10)
        x = np.arange(len(ARM_JOINTS))
        names = ['pan', 'lift', 'elbow', 'w.flex', 'w.roll']
        # each set of bars is one collection: one artist to blit per set rather than one per bar
        error_bars = _Bars(ax2, x, 0.8, color='#1f6fb4')
        ax2.set_xticks(x, names, fontsize=7)
        ax2.set_xlim(-0.6, len(x) - 0.4)
        ax2.set_ylim(0, 6)
        plots.label(ax2, '', 'mean |sim − real| (deg)', 'error per joint')
        real_bars = _Bars(ax3, x - 0.2, 0.4, color='#888888', label='real')
        sag_bars = _Bars(ax3, x + 0.2, 0.4, color='#d08b00', label='sim')
        ax3.set_xlim(-0.6, len(x) - 0.4)
        ax3.axhline(0, color='#333333', lw=0.8)
        ax3.set_xticks(x, names, fontsize=7)
        ax3.set_ylim(-4, 4)
        ax3.legend(loc='upper center', bbox_to_anchor=(0.5, -0.09), ncol=2, fontsize=7.5, frameon=False)
        plots.label(ax3, '', 'command − joint (deg)', 'sag in held poses')
        return {'lines': sim_lines, 'status': status, 'errors': error_bars, 'sags': sag_bars,
                'real_sags': real_bars}

    def draw(state, results, values):
        rep = results['replay']
        for line, j in zip(state['lines'], idx):
            line.set_data(rep.t, rep.sim_deg[:, j])
        errors = rep.joint_mae_deg
        state['errors'].set_heights(np.where(np.isfinite(errors), errors, 0.0))
        for bars, sags in ((state['sags'], results['sag']), (state['real_sags'], results['real_sag'])):
            bars.set_heights(np.where(np.isfinite(sags), np.clip(sags, -4, 4), 0.0))
        status = replay_status(rep)
        state['status'].set_text(status)
        state['status'].set_color('#222222' if status.startswith('stable') else plots.COLORS['diverged'])

    controls = live.common_controls(kp=base.kp, armature=min(base.armature, 0.1)) + [
        live.LogSlider('kv', 'kv', 0.001, 30.0, max(base.kv, 0.001), unit='N·m·s/rad',
                    readout_format='.3g'),
        live.Slider('forcerange', 'forcerange ±', 0.2, 5.0, min(max(base.forcerange, 0.2), 5.0),
                 step=0.01, unit='N·m', readout_format='.2f'),
    ]
    return live.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.6), dpi=80)


class _Bars:
    """Bars of a bar chart as one animated ``PolyCollection`` (what ``ax.bar`` draws, as one artist).

    Args:
      ax: the axes.
      x: (nbar,) bar centres; width: bar width (data units); color: face colour; label: legend entry.
    """

    def __init__(self, ax, x, width: float, *, color: str, label: str | None = None):
        self.left = np.asarray(x, dtype=float) - width / 2
        self.width = width
        self.collection = PolyCollection(self._verts(np.zeros(len(self.left))), facecolors=color, edgecolors='none',
                                         label=label, animated=True)
        ax.add_collection(self.collection, autolim=False)

    def _verts(self, heights: np.ndarray) -> np.ndarray:
        left, right = self.left, self.left + self.width
        zero = np.zeros_like(left)
        return np.stack([np.stack([left, zero], 1), np.stack([left, heights], 1), np.stack([right, heights], 1),
                         np.stack([right, zero], 1)], axis=1)

    def set_heights(self, heights) -> None:
        """(nbar,) heights, data units (negative bars hang below 0)."""
        self.collection.set_verts(self._verts(np.asarray(heights, dtype=float)))


def sysid_twin(episode: Episode, base: ArmServo, *, kps: Sequence[float] = TWIN_KPS,
               joints: Sequence[str] = PANEL_JOINTS):
    """The panel's static twin over kp: ``base`` with each kp of ``kps``, precomputed in one batch.

    ``base.kp`` itself is always one of the frames (added to ``kps`` if missing, labelled "fitted") and
    the one the slider starts on, so the twin opens on the servo the panel starts with. A frame whose replay is
    chaotic (its replays from the :data:`TWIN_NUDGES` starts part by more than :data:`CHAOTIC_SPREAD_DEG`) shows
    the recording and the verdict with the ensemble's error, not one draw's traces, which another processor would
    draw otherwise.
    """

    kps = tuple(sorted({float(k) for k in kps} | {float(base.kp)}))
    n = len(kps)
    runs = replay([dataclasses.replace(base, kp=k) for k in kps] * len(TWIN_NUDGES), [episode],
                  offsets=np.repeat(TWIN_NUDGES, n))
    draws = [[runs[m * n + i][0] for m in range(len(TWIN_NUDGES))] for i in range(n)]
    reps = [d[0] for d in draws]
    chaotic = [not any(r.diverged for r in d) and
               max(float(np.max(np.abs(r.sim_deg - d[0].sim_deg))) for r in d) > CHAOTIC_SPREAD_DEG for d in draws]
    # a chaotic frame's error is an ensemble's: its median, to two digits (its draws part by a few thousandths)
    mae = np.array([robust.round_sig(float(np.median([r.mae_deg for r in d])), 2) if c else d[0].mae_deg
                    for d, c in zip(draws, chaotic)])
    idx = [ARM_JOINTS.index(j) for j in joints]
    colors = ('#1f6fb4', '#2a9d4b')
    real = [twin.twin_line(reps[0].t, reps[0].real_deg[:, j], color='#888888', width=2.4,
                        label='real' if k == 0 else None) for k, j in enumerate(idx)]

    def frame(kp):
        i = kps.index(kp)
        rep = reps[i]
        if chaotic[i]:  # its frames hang on the last bits: the words, not one draw's traces
            lines = real + [twin.twin_note(f'chaotic: no single replay is stored · MAE ≈ {mae[i]:.2g}°')]
        else:
            lines = real + [twin.twin_line(rep.t, rep.sim_deg[:, j], color=c, label=f'sim {name}')
                            for j, c, name in zip(idx, colors, joints)]
            lines.append(twin.twin_note('diverged' if rep.diverged else f'MAE {rep.mae_deg:.3f}°'))
        curve = [twin.twin_line(kps, mae, color='#555555', label='held-out MAE'),
                 twin.twin_markers([kp], [mae[i]], label='this kp')]
        return [lines, curve]

    default = kps.index(float(base.kp))
    labels = [format(k, '.4g') + (' (fitted)' if i == default else '') for i, k in enumerate(kps)]
    sliders = [twin.TwinSlider('kp', 'kp (N·m/rad)', kps, labels, default=default)]
    axes = [twin.TwinAxes(xlabel='time (s)', ylabel='joint angle (deg)', legend='ll'),
            twin.TwinAxes(xlabel='kp (N·m/rad)', ylabel='mean |sim − real| (deg)', xlog=True,
                       ylog=True, legend='ur')]
    return twin.static_twin('sysid-kp', sliders, axes, frame, width=430, height=280,
                         caption=f'Episode {episode.index} replayed with the fitted servo (kp '
                                 f'{base.kp:.4g}, where the slider starts) and at other kp (kv, '
                                 f'forcerange, damping, frictionloss, armature as fitted).')
