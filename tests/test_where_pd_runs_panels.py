"""physai.interface.where_pd_runs_panels: chapter 3's panel words and its page's precomputed first view, against the
pd-rate ensembles. The same panel in the kernel, pd_widget, is
tested in tests/test_widget_models_pd.py."""

import math

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
