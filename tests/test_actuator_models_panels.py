"""physai.interface.actuator_models_panels: chapter 2's panel physics and readout, and its page's precomputed first
view over the model and the effort limit (byte-stable, robust to a nudge, redrawn in headless Chromium). The same panel
in the kernel, pendulum_widget, is tested in tests/test_widget_models_pd.py."""

import json
import math

import numpy as np

from physai.engine import pendulum
from physai.interface import actuator_models_panels, plots, web
from physai.laws import drives


# ---------------------------------------------------------------------------------------------
# the live panel and its static twin



def test_panel_readout_says_a_run_that_never_settles_is_still_swinging():
    """A DC motor with V 1 rad/s and kv 100 at a 20 ms step chatters along its band by ±8°: it has
    no settling error or rise time, and the readout says so instead of printing them."""
    run, metrics = actuator_models_panels.panel_run('DC motor', 100.0, 100.0, 0.0, 0.02, 'implicitfast', 100.0, 1.0, 0)
    assert not run.diverged and metrics['p2p_deg'] > 10 > plots.SWINGING_P2P_DEG
    text = actuator_models_panels.panel_readout(run, metrics)
    assert text.startswith('still swinging:') and text.endswith('rise n/a')
    assert f"{metrics['p2p_deg']:.3g}° peak to peak" in text and 'settling error' not in text
    # a heavily overdamped PD is still on its way: it creeps, it does not swing
    run, metrics = actuator_models_panels.panel_run('implicit', 100.0, 300.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert actuator_models_panels.panel_readout(run, metrics).startswith('still creeping:')
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 5.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 6.0, 8.0, 0)
    assert metrics['p2p_deg'] < plots.SWINGING_P2P_DEG
    assert actuator_models_panels.panel_readout(run, metrics) == f"settling error {metrics['error_deg']:.2f}°   rise 182 ms"
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert actuator_models_panels.panel_readout(run, metrics) == f'diverged after {run.t[-1]:.3f} s'


def test_panel_verdict_reads_as_a_failure_only_when_the_run_diverges_or_swings():
    """The readout's colour follows from the run: a diverged run or one still swinging (the DC motor chattering along
    its band; the link below its hold torque, swinging far from the command) reads as a failure. A soft or overdamped
    PD still creeping toward the command (kp 1; kv 300) is slow, not unstable: it does not. Nor does a settled run,
    however far from the command it settles (kp 40, 4° short)."""
    def verdict(model, kp, kv, forcerange=100.0, velocity_limit=8.0, timestep=pendulum.TIMESTEP):
        run, metrics = actuator_models_panels.panel_run(model, kp, kv, 0.0, timestep, 'implicitfast', forcerange,
                                                        velocity_limit, 0)
        return actuator_models_panels.panel_verdict(run, metrics), metrics

    cases = {('DC motor', 100.0, 100.0, 100.0, 1.0, 0.02): 'swinging', ('ideal PD', 400.0, 20.0, 2.0): 'swinging',
             ('implicit', 1.0, 0.5): 'creeping', ('implicit', 100.0, 300.0): 'creeping',
             ('ideal PD', 100.0, 100.0): 'diverged', ('implicit', 40.0, 5.0): 'settled'}
    for args, expected in cases.items():
        got, metrics = verdict(*args)
        assert got == expected, (args, got, metrics)
        assert (got in actuator_models_panels.BAD_VERDICTS) == (expected in ('swinging', 'diverged')), args
    _, far = verdict('implicit', 40.0, 5.0)
    assert far['error_deg'] > 4  # settled well below the command: said in the words, not a failure


def test_panel_flags_the_explicit_pd_that_explodes():
    run, metrics = actuator_models_panels.panel_run('ideal PD', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert run.diverged and metrics['diverged']
    run, metrics = actuator_models_panels.panel_run('implicit', 100.0, 100.0, 0.0, pendulum.TIMESTEP, 'implicitfast', 100.0, 8.0, 0)
    assert not run.diverged


def test_panel_defaults_are_the_ones_the_panel_starts_from():
    """The Try-it suggestions change PANEL_DEFAULTS, the description's own defaults (the notebook's widget starts
    there: tests/test_widget_models_pd.py)."""
    import inspect
    signature = inspect.signature(actuator_models_panels.actuator_spec).parameters
    assert {name: p.default for name, p in signature.items()} == actuator_models_panels.PANEL_DEFAULTS
    assert actuator_models_panels.actuator_spec().defaults == actuator_models_panels.PANEL_DEFAULTS


def test_the_try_it_suggestions_do_what_their_worked_answers_say():
    """Chapter 2's worked answers: kv 100 explodes the explicit PD (h·kv/I > 2) and not the implicit one; a 6 N·m
    clamp keeps it bounded but the torque chatters, changing sign at least 3 of every 10 steps; kp 30000 at 20 ms
    diverges under implicitfast (spring explicit) and holds under discrete; a DC motor with V 2 rises over three
    times slower than with V 8 to the same error; the remotized PD swings once half of E falls under tau_g."""
    tries = actuator_models_panels.panel_tries()
    assert set(tries) == set(actuator_models_panels.PANEL_TRIES)
    h, inertia = pendulum.TIMESTEP, pendulum.LINK_INERTIA
    assert h * 100.0 / inertia > 2
    assert tries['ideal PD, kv 100, no limit'][0].diverged
    run, metrics = tries['implicit, kv 100, no limit']
    assert not run.diverged and actuator_models_panels.panel_readout(run, metrics).startswith('still creeping')
    run, metrics = tries['ideal PD, kv 100, E 6']
    tail = run.t[:-1] >= run.t[-1] - 1.0
    flips = np.sum(np.diff(np.sign(run.torque[tail])) != 0) / np.sum(tail)
    assert not run.diverged and flips > 0.3 and np.max(np.abs(run.torque)) <= 6.0
    assert tries['implicit, kp 30000, 20 ms, implicitfast'][0].diverged
    run, metrics = tries['implicit, kp 30000, 20 ms, discrete']
    assert not run.diverged and abs(metrics['error_deg']) < 0.1
    slow, fast = tries['DC motor, V 2'][1], tries['DC motor, V 8'][1]
    assert slow['rise_ms'] > 3 * fast['rise_ms']
    assert abs(slow['error_deg'] - fast['error_deg']) < 1e-3
    held, weak = tries['remotized PD, E 6'][1], tries['remotized PD, E 5'][1]
    assert 0.5 * 6.0 > pendulum.TAU_G > 0.5 * 5.0
    assert held['p2p_deg'] < plots.SWINGING_P2P_DEG < weak['p2p_deg']


def test_first_view_is_byte_stable_small_and_survives_a_nudge(monkeypatch):
    first = actuator_models_panels.forcerange_twin().data
    assert actuator_models_panels.forcerange_twin().data == first
    assert len(first) < 300_000
    view = web.block_data(first)['firstView']
    assert view['grid'] == {'model': list(actuator_models_panels.MODELS),
                            'forcerange': list(actuator_models_panels.TWIN_FORCERANGES)}
    runs = view['parts']['run']['data']
    assert len(runs) == 5 * 6
    for model in range(5):  # every effort limit draws another run
        assert len({json.dumps(runs[model * 6 + k]) for k in range(6)}) == 6
    # the start's run (the effort-limit sweep's E = 2 N·m, at its gains), in the panel's words: it swings
    stored = runs[1 * 6 + 1]
    start = actuator_models_panels.TWIN_START
    run, metrics = actuator_models_panels.panel_run('ideal PD', start['kp'], start['kv'], 0.0, pendulum.TIMESTEP,
                                                    'implicitfast', start['forcerange'], 8.0, 12)
    assert stored['readout'] == actuator_models_panels.panel_readout(run, metrics)
    assert stored['readout'].startswith('still swinging:')
    monkeypatch.setenv('PHYSAI_PERTURB', '1e-12')
    assert actuator_models_panels.forcerange_twin().data == first


def test_first_view_redraws_in_a_browser_without_a_kernel(panel_page):
    open_page, errors = panel_page
    root = '#physai-panel-pendulum'
    page = open_page(actuator_models_panels.forcerange_twin().data + web.pendulum_live().data)
    before = page.inner_html(f'{root} svg.pl-step')
    assert '<path' in before
    assert 'still swinging' in page.inner_text(f'{root} .pl-readout')   # the start: the sweep's E = 2 N·m run
    page.eval_on_selector(f'{root}-forcerange', "e => { e.value = 6; e.dispatchEvent(new Event('input')); }")
    assert page.inner_html(f'{root} svg.pl-step') != before
    assert page.inner_text(f'{root}-forcerange-value') == '6.0 N·m'
    assert 'settling error' in page.inner_text(f'{root} .pl-readout')
    page.select_option(f'{root}-model', 'implicit')
    assert errors == []



def test_panel_offers_the_remotized_pd_whose_default_table_just_holds_the_link():
    """The panel's remotized PD limits the torque to E hanging and E/2 at horizontal: at the default E = 6 N·m,
    3 N·m is above the hold torque and the link settles; at E = 5 N·m, 2.5 N·m is below it and the link swings
    about the angle where the limit equals gravity's torque (chapter 2's hard exercise)."""
    assert 'remotized PD' in actuator_models_panels.MODELS
    args = (400.0, 20.0, 0.0, pendulum.TIMESTEP, 'implicitfast')
    run, metrics = actuator_models_panels.panel_run('remotized PD', *args, 6.0, 8.0, 0)
    assert isinstance(run.actuator, drives.RemotizedPD)
    assert run.actuator.table[-1][1] == 3.0 > pendulum.TAU_G
    assert not run.diverged and metrics['p2p_deg'] < plots.SWINGING_P2P_DEG
    run, metrics = actuator_models_panels.panel_run('remotized PD', *args, 5.0, 8.0, 0)
    assert metrics['p2p_deg'] > plots.SWINGING_P2P_DEG and metrics['error_deg'] > 10
    assert actuator_models_panels.panel_readout(run, metrics).startswith('still swinging:')


def test_panel_effort_limit_steps_the_torque_axes():
    """The torque axes change in steps: every effort limit, on any model, gets a step of PANEL_TORQUE_STEPS that shows
    the limit and the hold torque with a quarter to spare (no limit: 64 N·m), so most moves keep the axes; the page
    and the widget draw them from the same steps (pendulum_constants; laws.js's mirror: tests/test_web_pendulum.py)."""
    steps = actuator_models_panels.PANEL_TORQUE_STEPS
    assert actuator_models_panels.pendulum_constants()['torqueSteps'] == steps
    for model in actuator_models_panels.MODELS:
        for limit in (0.5, 3.0, 7.5, 11.5, 22.5, 44.5, 60.0, 99.5, 100.0):
            actuator = actuator_models_panels.panel_actuator(model, 400.0, 20.0, limit, 8.0, 12)
            e = actuator.table[0][1] if model == 'remotized PD' else actuator.forcerange
            top = actuator_models_panels.panel_torque_top(float(e))
            assert top in steps
            if math.isfinite(e):
                assert top >= 1.25 * max(limit, pendulum.TAU_G)
            else:
                assert top == 64.0