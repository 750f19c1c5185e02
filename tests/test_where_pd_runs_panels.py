"""physai.interface.where_pd_runs_panels: chapter 3's live panel and its static twin, against the pd-rate
ensembles."""

import math

import numpy as np
import pytest

from physai.engine import hold
from physai.experiments import where_pd_runs
from physai.interface import where_pd_runs_panels
from physai.laws.loop import BACKENDS


def _twin_data(html: str) -> dict:
    import json
    import re
    return json.loads(re.search(r'<script[^>]*id="physai-twin-ch3-pd-rate-data"[^>]*>(.*?)</script>', html,
                                re.S).group(1))


@pytest.mark.slow
def test_twin_says_what_the_table_says_and_its_traces_show_it(ensembles, bare_ensembles):
    """nbval leaves the twin's traces out (a chaotic run's draw); their robust features are checked here: each
    frame's text is its ensemble's summary, and its trace moves (p2p >= QUIET_P2P over the last second) exactly
    where the ensemble chatters and is flat (to the twin's 4 digits) where it holds still."""
    data = _twin_data(where_pd_runs_panels.pd_twin().data)
    arrays, items, frames = data['arrays'], data['items'], data['frames']
    combos = [(rate, backend, armature) for rate in where_pd_runs.RATES_HZ for backend in BACKENDS
              for armature in where_pd_runs_panels.TWIN_ARMATURES]
    assert len(frames) == len(combos)
    names = hold.so101_joints()
    for (rate, backend, armature), frame in zip(combos, frames):
        e = (ensembles if armature else bare_ensembles)[rate, backend]
        trace = [items[i] for i in frame[0] if items[i]['k'] == 'l' and items[i]['n'].startswith('q (')]
        texts = [items[i]['s'] for i in frame[0] if items[i]['k'] == 't']
        assert texts == [where_pd_runs_panels.ensemble_text(e)]
        assert trace[0]['n'] == f'q ({names[e.joint]}, run 1 of {e.n})'
        t, q_deg = np.array(arrays[trace[0]['x']], dtype=float), np.array(arrays[trace[0]['y']], dtype=float)
        last = t >= t[-1] - hold.SETTLE_WINDOW + 0.5 * hold.PHYSICS_TIMESTEP
        p2p = math.radians(np.ptp(q_deg[last]))
        if e.state == 'chatters':
            assert p2p >= hold.QUIET_P2P
        else:  # flat to the twin's 4 significant digits
            assert np.ptp(q_deg[last]) <= 10.0 ** (math.floor(math.log10(np.max(np.abs(q_deg)))) - 3)


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
