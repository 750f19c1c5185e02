"""physai.interface.where_pd_runs_panels: chapter 3's live panel and its page's precomputed first view, against
the pd-rate ensembles."""

import math

import mujoco
import mujoco.batch
import numpy as np
import pytest

from physai.engine import hold
from physai.experiments import where_pd_runs
from physai.interface import web, where_pd_runs_panels
from physai.laws.loop import BACKENDS


@pytest.mark.slow
def test_first_view_says_what_the_table_says_and_its_traces_show_it(ensembles, bare_ensembles):
    """nbval leaves the first view's sample traces out (a chaotic run's draw); their robust features are checked
    here: each frame's words are its ensemble's summary, it shows the ensemble's joint, and its trace moves
    (p2p >= QUIET_P2P over the last second) exactly where the ensemble chatters and is flat (to the stored 0.01°)
    where it holds still."""
    data = web.block_data(where_pd_runs_panels.pd_twin().data)
    view = data['firstView']
    assert view['parts']['hold']['on'] == ['rate_hz', 'backend', 'armature']
    combos = [(rate, backend, armature) for rate in where_pd_runs.RATES_HZ for backend in BACKENDS
              for armature in where_pd_runs_panels.TWIN_ARMATURES]
    frames = view['parts']['hold']['data']
    assert len(frames) == len(combos)
    step = where_pd_runs_panels.TRACE_STEP_DEG
    for (rate, backend, armature), frame in zip(combos, frames):
        e = (ensembles if armature else bare_ensembles)[rate, backend]
        assert frame['words'] == where_pd_runs_panels.ensemble_text(e) and frame['state'] == e.state
        assert frame['joint'] == e.joint and frame['n'] == e.n
        q_deg = np.array(web.unpack(frame['sample'], step), dtype=float)
        t = hold.PHYSICS_TIMESTEP * np.arange(1, len(q_deg) + 1)
        last = t >= t[-1] - hold.SETTLE_WINDOW + 0.5 * hold.PHYSICS_TIMESTEP
        p2p = math.radians(np.ptp(q_deg[last]))
        if e.state == 'chatters':
            assert p2p >= hold.QUIET_P2P
        else:  # flat to the stored resolution
            assert np.ptp(q_deg[last]) <= 2 * step


def _note(**change):
    params = hold.HoldParams(**{'rate_hz': 50.0, 'backend': 'in-loop', **change})
    r = hold.hold_responses([params], nthread=1)[0]
    growth = where_pd_runs.worst_growth(rate_hz=params.rate_hz, backend=params.backend, kp=params.kp, kv=params.kv,
                                        armature=params.armature)
    return r, growth, where_pd_runs_panels.pd_note(r, growth, rate_hz=params.rate_hz, backend=params.backend)


@pytest.mark.parametrize('kp', [1.0, 13.0])
def test_a_soft_servo_drifting_is_not_called_a_chatter(kp):
    """At kp 1 and 13 the in-loop PD at 50 Hz is stable (growth per tick below 1) and the arm drifts slowly toward its
    pose, one way, without turning back: the note says it is still moving, with no chatter and how far off its command
    it is, and does not read as a failure. (The panel used to call it "broadband chatter, chatters", in red.)"""
    r, growth, note = _note(kp=kp)
    assert growth < 1 and not r.diverged
    assert r.worst_p2p_rad >= hold.QUIET_P2P and r.turns[r.worst] < hold.CHATTER_TURNS
    assert r.state == 'moves' and not r.chatters and not where_pd_runs_panels.pd_bad(r)
    assert 'chatter' not in note.split('\n')[0] and note.split('\n')[1].startswith('still moving, no chatter')
    assert f'up to {r.offset_deg:.2g}° off the command' in note


def test_a_hold_far_off_its_command_says_how_far():
    """kp 1 cannot hold the arm up: a joint sits more than 10° from its command at the end, and the note says so;
    Menagerie's kp in the step holds every joint within a tenth of a degree."""
    soft, _, note = _note(kp=1.0)
    assert soft.offset_deg > 10 and f'up to {soft.offset_deg:.2g}° off the command' in note
    stiff, _, note = _note(backend='in-step')
    assert stiff.state == 'still' and stiff.offset_deg < 0.1 and 'quiet' in note
    assert not where_pd_runs_panels.pd_bad(stiff)


def test_a_chattering_hold_and_a_diverged_one_read_as_failures():
    """Menagerie's gains in-loop at 50 Hz chatter (growth per tick above 1, joints turning back and forth at the
    clamp): the note names the tone and reads as a failure; a run MuJoCo flags as diverged does too."""
    r, growth, note = _note()
    assert growth > 1 and r.state == 'chatters' and r.turns[r.worst] >= hold.CHATTER_TURNS
    assert where_pd_runs_panels.pd_bad(r) and note.split('\n')[1].startswith('chatters')
    bad, _, note = _note(backend='in-step', integrator='RK4', timestep=0.005, kp=10000.0, kv=0.0, armature=0.0,
                         rate_hz=1000.0)
    assert bad.state == 'diverged' and where_pd_runs_panels.pd_bad(bad) and 'diverged' in note


def test_panel_slider_moves_redraw_only_the_animated_artists():
    """Rate, kp and backend moves keep the axes (no full redraw): the live panel stays under 100 ms."""
    panel = where_pd_runs_panels.pd_panel()
    before = panel.full_redraws
    for change in ({'rate_hz': 120.0}, {'kp': 1500.0}, {'backend': 'in-step'}, {'rate_hz': 400.0},
                   {'kp': 700.0}, {'backend': 'in-loop'}):
        panel.update(**change)
        assert panel.error is None, panel.error
    assert panel.full_redraws == before


def test_panel_survives_extreme_settings_without_errors():
    panel = where_pd_runs_panels.pd_panel()
    for change in ({'backend': 'in-step'}, {'armature': 0.0, 'rate_hz': 1000.0}, {'kp': 30000.0},
                   {'timestep': 0.02, 'integrator': 'Euler'}, {'kv': 0.0, 'backend': 'in-loop'}):
        panel.update(**change)
        assert panel.error is None, panel.error
    panel.reset()
    assert panel.values['rate_hz'] == 50.0 and panel.error is None


def test_panel_draws_the_hold_and_curves_the_unbatched_computations_give():
    """What the panel draws is hold_responses' run for the same setting and growth_curve's values, whichever
    path computed them: the lone in-loop run, the in-step rollout, the stacked curves."""
    panel = where_pd_runs_panels.pd_panel()
    for change in ({'rate_hz': 120.0, 'kp': 700.0}, {'backend': 'in-step', 'armature': 0.0}):
        panel.update(**change)
        v = panel.values
        params = hold.HoldParams(rate_hz=v['rate_hz'], backend=v['backend'], kp=v['kp'], kv=v['kv'],
                                 armature=v['armature'], timestep=v['timestep'], integrator=v['integrator'])
        (run,) = hold.hold_responses([params], nthread=1)
        t, q = panel.state['q'].get_data()
        np.testing.assert_array_equal(q, np.degrees(run.q[:, run.worst]))
        for backend, line in panel.state['lines'].items():
            expected = [where_pd_runs.growth_curve([r], backend=backend, kp=v['kp'], kv=v['kv'], armature=v['armature'],
                                                   timestep=v['timestep'], integrator=v['integrator'])[0]
                        for r in where_pd_runs_panels.PANEL_RATES_HZ]
            np.testing.assert_array_equal(line.get_data()[1], np.minimum(expected, 2.0))


def test_each_update_makes_at_most_one_batched_simulation_call(monkeypatch):
    """In-step a move is one Batch.rollout of the whole run; in-loop none (one MjData steps it), where a 50 Hz
    controller used to cost 150 Python calls of Batch.rollout; a cached setting simulates nothing."""
    calls = []
    rollout = mujoco.batch.Batch.rollout
    monkeypatch.setattr(mujoco.batch.Batch, 'rollout', lambda self, *a, **k: calls.append(1) or rollout(self, *a, **k))
    lone = []
    lone_loop = hold._lone_loop
    monkeypatch.setattr(hold, '_lone_loop', lambda *a, **k: lone.append(1) or lone_loop(*a, **k))
    panel = where_pd_runs_panels.pd_panel()
    calls.clear(), lone.clear()
    panel.update(kp=640.0)  # in-loop at 50 Hz
    assert (len(calls), len(lone)) == (0, 1)
    panel.update(backend='in-step')
    assert (len(calls), len(lone)) == (1, 1)
    panel.update(backend='in-loop')  # seen before: nothing simulated
    assert (len(calls), len(lone)) == (1, 1)


def test_a_diverged_setting_is_flagged_and_no_range_change_redraws_the_axes():
    """RK4 without armature at 20 ms diverges (the joint damping is explicit on the light gripper): the verdict
    says so, the panel draws no error, and neither that run nor one leaving ±80° redraws the whole figure (both
    ranges were drawn when the panel was made)."""
    panel = where_pd_runs_panels.pd_panel()
    before = panel.full_redraws
    panel.update(integrator='RK4', armature=0.0, timestep=0.02)
    assert panel.error is None
    assert 'diverged' in panel.state['note'].get_text()
    panel.reset()
    panel.update(rate_hz=10.0)  # a 10 Hz controller swings the arm past 80°
    assert panel.state['ylim'] == (-where_pd_runs_panels.PANEL_YLIM_WIDE_DEG, where_pd_runs_panels.PANEL_YLIM_WIDE_DEG)
    assert panel.error is None
    assert panel.full_redraws == before


@pytest.mark.parametrize('ha', ['left', 'center', 'right'])
@pytest.mark.parametrize('va', ['top', 'bottom', 'center', 'baseline'])
def test_bitmap_text_lands_where_matplotlib_draws_the_same_text(ha, va):
    """The panels' fast text puts its ink where matplotlib's own Text puts the same string (within 2 px), with the
    same box, so swapping one for the other moves nothing on the figure."""
    from physai.interface import plots

    def ink(kind):
        fig = plots.detached_figure((4.0, 2.0), dpi=80)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        kwargs = dict(transform=ax.transAxes, ha=ha, va=va, fontsize=9, color='black',
                      bbox=dict(facecolor='#ffee00', edgecolor='none', pad=2))
        text = 'p2p 1.23e-03 rad\nchatters, 7 Hz'
        if kind == 'bitmap':
            where_pd_runs_panels.add_bitmap_text(ax, 0.5, 0.5, text, animated=False, **kwargs)
        else:
            ax.text(0.5, 0.5, text, **kwargs)
        fig.canvas.draw()
        rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
        dark, box = rgb.sum(axis=2) < 200, (rgb[..., 2] < 100) & (rgb[..., 0] > 200)
        return [(np.flatnonzero(m.any(axis=0))[[0, -1]], np.flatnonzero(m.any(axis=1))[[0, -1]]) for m in (dark, box)]

    for (x_ours, y_ours), (x_mpl, y_mpl) in zip(ink('bitmap'), ink('matplotlib')):
        np.testing.assert_allclose(x_ours, x_mpl, atol=2)
        np.testing.assert_allclose(y_ours, y_mpl, atol=2)


def test_bitmap_text_is_drawn_once_per_string():
    """Back at a setting drawn before, the note and title bitmaps are reused, not drawn again."""
    panel = where_pd_runs_panels.pd_panel()
    panel.update(rate_hz=60.0)
    misses = where_pd_runs_panels._text_bitmap.cache_info().misses
    panel.update(rate_hz=50.0)
    panel.update(rate_hz=60.0)
    assert where_pd_runs_panels._text_bitmap.cache_info().misses == misses
    assert isinstance(panel.state['note'], where_pd_runs_panels.BitmapText)
