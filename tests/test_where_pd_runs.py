"""physai.experiments.where_pd_runs: chapter 3's tables (pd-rate, pd-growth, the verdict of pd-cause and
pd-implicit-kv, the tick margins), each claim the chapter makes from them checked against MuJoCo ensembles and the
functions that compute it; the critical rate is tests/test_critical_rate.py."""

import math

import mujoco
import numpy as np
import pytest

from physai.engine import hold, pd_controller
from physai.experiments import critical_rate, registry, where_pd_runs
from physai.interface import where_pd_runs_panels
from physai.laws import loop, robust
from physai.engine.hold import HoldParams
from physai.laws.loop import BACKENDS


@pytest.fixture(scope='module')
def growth_at():
    return {row['rate_hz']: row for row in where_pd_runs.growth_rows()}


@pytest.fixture(scope='module')
def scan():
    return critical_rate.growth_scan()


# ------------------------------------------------------------------------------------------------------
# Build it, step 4: the margins of the held tick and the growth per tick


def test_pd_growth_table_has_its_columns_at_every_rate(growth_at):
    assert sorted(growth_at) == list(where_pd_runs.RATES_HZ)
    keys = registry.column_keys(where_pd_runs.GROWTH_COLUMNS)
    assert all(list(row) == keys for row in growth_at.values())
    assert registry.run('pd-growth') == list(growth_at.values())


def test_a_negative_margin_means_in_loop_growth_above_one(growth_at):
    """The chapter's reading of the table: a margin below 0 at exactly the rates whose growth per tick exceeds 1."""
    for rate, row in growth_at.items():
        negative = row['delay_margin'] < 0 or row['explicit_margin'] < 0
        assert negative == (row['in_loop_growth'] > 1), rate


def test_delay_margin_fails_at_50_and_100_hz_and_both_hold_from_200(growth_at):
    """The half-tick delay is what fails at 100 Hz (the explicit margin still holds there); at 50 Hz both fail,
    with the in-loop growth far above 1; from 200 Hz on both margins hold and the growth is below 1."""
    assert [r for r, row in growth_at.items() if row['delay_margin'] < 0] == [50, 100]
    assert [r for r, row in growth_at.items() if row['explicit_margin'] < 0] == [50]
    assert where_pd_runs.margins_positive_from(list(growth_at.values())) == 200
    assert growth_at[50]['in_loop_growth'] > 5 and growth_at[100]['in_loop_growth'] > 1.1
    assert all(row['in_loop_growth'] < 1 for r, row in growth_at.items() if r >= 200)


def test_in_step_growth_is_below_one_at_every_rate(growth_at):
    """In the step the growth per tick is the physics step's own to the n-th power: below 1 at every rate."""
    assert all(0 < row['in_step_growth'] < 1 for row in growth_at.values())


def test_margins_use_the_mean_tick_of_uneven_patterns():
    """400 Hz on 1 kHz physics ticks 3, 2, 3, 2 steps: n = 2.5, beta = (n + 1)/(2n) = 0.7, T*w = n*h*sqrt(kp/I)."""
    m = where_pd_runs.zoh_margins(400, kp=1000.0, kv=2.0, inertia=0.025, timestep=0.001)
    assert (m['n'], m['beta']) == (2.5, pytest.approx(0.7))
    assert m['T_omega'] == pytest.approx(0.0025 * math.sqrt(1000.0 / 0.025))


@pytest.mark.parametrize('n', [1, 2, 4, 5, 8, 10, 20])
def test_the_two_margins_are_the_stability_test_of_the_held_tick(n):
    """Without joint damping, both margins of {eq}`eq-zoh-bound` positive <=> zoh_step's growth per tick below 1,
    over kv from 0 to 12 N·m·s/rad at SO-101-like stiffness and inertia (even ticks of n steps)."""
    rate, inertia = 1000.0 / n, 0.028
    agree = 0
    for kv in np.linspace(0.0, 12.0, 49):
        m = where_pd_runs.zoh_margins(rate, kp=hold.SO101_KP, kv=float(kv), inertia=inertia, timestep=0.001)
        growth = loop.tick_growth(rate_hz=rate, kp=hold.SO101_KP, kv=float(kv), inertia=inertia, timestep=0.001)
        if min(abs(m['delay_margin']), abs(m['explicit_margin']), abs(growth - 1)) < 1e-9:
            continue  # on the boundary itself: rounding decides
        assert (m['delay_margin'] > 0 and m['explicit_margin'] > 0) == (growth < 1), (n, kv, m, growth)
        agree += 1
    assert agree >= 45


# ------------------------------------------------------------------------------------------------------
# The verdict: the hold, not the explicit kv, makes the SO-101's in-loop PD chatter


@pytest.fixture(scope='module')
def cause_at():
    return {row['rate_hz']: row for row in where_pd_runs.cause_rows()}


def test_the_hold_not_the_explicit_kv_makes_the_so101_in_loop_pd_unstable(cause_at, growth_at):
    """With Menagerie's armature: wherever the in-loop PD grows (50 and 100 Hz) the hold alone, kv implicit, still
    grows, and the explicit kv alone, PD at every physics step, does not; from 200 Hz on the PD is stable and there is
    no cause to name. The in_loop column is the growth table's, and the dominant cause is the hold."""
    assert [r for r, row in cause_at.items() if row['cause'] == 'hold'] == [50, 100]
    assert all(row['cause'] == '-' for r, row in cause_at.items() if r >= 200)
    for rate, row in cause_at.items():
        assert row['in_loop'] == pytest.approx(growth_at[rate]['in_loop_growth'], rel=1e-12)
        assert row['explicit_kv_only'] < 1 and row['in_step'] < 1
        assert row['in_step'] == pytest.approx(growth_at[rate]['in_step_growth'], rel=1e-12)
    assert cause_at[50]['hold_only'] > 1.3 and 1.02 < cause_at[100]['hold_only'] < cause_at[100]['in_loop']
    assert where_pd_runs.dominant_cause(list(cause_at.values())) == 'hold'


def test_without_armature_explicit_kv_alone_fails_at_every_rate():
    """Break it A's verdict: without armature the explicit kv alone is unstable at every rate, the only cause from
    200 Hz on (the hold alone is stable there), both flaws at 50 and 100 Hz."""
    rows = {row['rate_hz']: row for row in where_pd_runs.cause_rows(armature=0.0)}
    assert all(row['explicit_kv_only'] > 1 for row in rows.values())
    assert [rows[r]['cause'] for r in where_pd_runs.RATES_HZ] == ['both', 'both', 'explicit kv', 'explicit kv',
                                                                  'explicit kv']
    assert where_pd_runs.dominant_cause(list(rows.values())) == 'mixed'


@pytest.mark.parametrize('growths, expected', [
    ((0.9, 1.2, 1.2), '-'), ((1.1, 1.05, 0.9), 'hold'), ((1.1, 0.9, 1.05), 'explicit kv'),
    ((1.1, 1.05, 1.05), 'both'), ((1.1, 0.95, 0.95), 'together')])
def test_cause_names_the_flaw_that_is_unstable_on_its_own(growths, expected):
    assert where_pd_runs.cause(*growths) == expected


def test_pd_cause_is_a_named_experiment_with_its_columns(cause_at):
    rows = registry.run('pd-cause')
    assert [row['rate_hz'] for row in rows] == list(where_pd_runs.RATES_HZ)
    assert all(list(row) == registry.column_keys(where_pd_runs.CAUSE_COLUMNS) for row in rows)
    assert rows == list(cause_at.values())


@pytest.fixture(scope='module')
def implicit_kv_at():
    return {e.params.rate_hz: e for e in where_pd_runs.implicit_kv_ensembles()}


@pytest.mark.slow
def test_mujoco_arm_with_implicit_kv_still_chatters_where_the_hold_alone_grows(implicit_kv_at, ensembles, cause_at):
    """MuJoCo's check of the verdict: the in-loop PD with kv in the joints' damping (implicit) and its spring still
    held chatters in every run at 50 and 100 Hz, exactly where hold_only exceeds 1, and holds still in every run
    above; its swing is smaller than with kv explicit (median 0.02 against 0.2 rad at 50 Hz, 0.01 against 0.05 at
    100 Hz; the table's 1.1° and 0.57°), so implicit damping shrinks the chatter but does not stop it."""
    for rate, e in implicit_kv_at.items():
        if cause_at[rate]['hold_only'] > 1:
            assert e.state == 'chatters' and e.n == hold.ENSEMBLE_SIZE and not e.diverged.any()
            assert np.all(e.worst_p2p_rad > 10 * hold.QUIET_P2P)
            assert e.p2p.median < ensembles[rate, 'in-loop'].p2p.median / 3
        else:
            assert e.state == 'still'
    rows = {row['rate_hz']: row for row in registry.run('pd-implicit-kv')}
    assert (rows[50]['p2p_deg'], rows[100]['p2p_deg']) == (1.1, 0.57)
    assert [r for r, row in rows.items() if row['chattering'] == row['runs']] == [50, 100]


@pytest.mark.slow
def test_implicit_kv_table_survives_a_last_bit_change(monkeypatch, implicit_kv_at):
    """Every run nudged by 3e-11 rad (physai.engine.perturb): the printed table does not move."""
    exp = registry.get('pd-implicit-kv')
    plain = exp.table(exp.run())
    monkeypatch.setenv('PHYSAI_PERTURB', '3e-11')
    where_pd_runs._implicit_kv_ensembles.cache_clear()
    try:
        nudged = exp.table(exp.run())
    finally:
        where_pd_runs._implicit_kv_ensembles.cache_clear()
    assert nudged == plain


def test_mujoco_arm_with_only_explicit_kv_holds_still_at_every_rate(cause_at):
    """MuJoCo's check of explicit_kv_only on its own structure: the servo evaluated at every physics step under Euler
    (the actuator's kv explicit, the joints' damping implicit), its setpoint refreshed at each rate, holds the arm
    still in every run at every rate, where the linear step's growth stays below 1."""
    assert all(row['explicit_kv_only'] < 1 for row in cause_at.values())
    for e in where_pd_runs.explicit_kv_ensembles():
        assert e.params.backend == 'in-step' and e.params.integrator == 'Euler'
        assert e.state == 'still' and not e.diverged.any(), e.params.rate_hz
    rows = registry.run('pd-explicit-kv')
    assert [row['rate_hz'] for row in rows] == list(where_pd_runs.RATES_HZ)
    assert all(row['chattering'] == 0 for row in rows)


@pytest.mark.slow
def test_in_loop_chatter_is_sustained_for_thirty_seconds():
    """The chapter's "limit cycle": held ten times longer than its table's runs, every in-loop run at 50 and 100 Hz
    still chatters at 30 s, and as wide as at 3 s (0.2 and 0.05 rad on the 1-2-5 series: 11° and 2.9°)."""
    rows = {row['rate_hz']: row for row in registry.run('pd-rate-long')}
    for rate, p2p in ((50, 11), (100, 2.9)):
        row = rows[rate]
        assert row['chattering_3s'] == row['chattering_30s'] == row['runs'] == where_pd_runs.LONG_RUNS, row
        assert row['p2p_3s_deg'] == row['p2p_30s_deg'] == p2p, row


def test_chattering_joints_sit_at_the_clamp_at_most_ticks():
    """The first answer's claim: at 50 Hz in-loop, the joints that chatter have their held torque at one of the
    ±forcerange limits at most ticks of the last second (a loop of PDController writes, mj_step in between)."""
    params = hold.HoldParams(rate_hz=50, backend='in-loop')
    m = hold.hold_model(params)
    d = mujoco.MjData(m)
    controller = pd_controller.PDController(m, hold.so101_joints(), backend='in-loop')
    nstep = round(hold.DURATION / params.timestep)
    mask = loop.tick_mask(params.rate_hz, params.timestep, nstep)
    position, velocity = hold.reference(params.timestep * np.arange(nstep))
    q, torque = np.empty((nstep, m.nq)), []
    for k in range(nstep):
        if mask[k]:
            controller.write(d, [loop.JointCommand(position=p, velocity=v, stiffness=params.kp, damping=params.kv,
                                                   max_effort=params.forcerange)
                                 for p, v in zip(position[k], velocity[k])])
            if k * params.timestep >= hold.DURATION - hold.SETTLE_WINDOW:
                torque.append(d.qfrc_applied.copy())
        mujoco.mj_step(m, d)
        q[k] = d.qpos
    last = q[-round(hold.SETTLE_WINDOW / params.timestep):]
    loud = np.ptp(last, axis=0) >= hold.QUIET_P2P
    at_limit = np.mean(np.abs(np.array(torque)) >= params.forcerange * (1 - 1e-12), axis=0)
    assert loud.sum() >= 2
    assert np.all(at_limit[loud] > 0.75)


def test_at_100_hz_one_window_of_kv_holds_the_arm_and_menageries_kv_is_below_it():
    """Medium exercise: on a 0.05 N·m·s/rad grid the in-loop PD at 100 Hz is stable for kv from 3.80 to 5.00, with no
    gap in between; Menagerie's kv is below the window."""
    kvs = np.round(np.arange(0.0, 12.0, 0.05), 2)
    growth = np.array([where_pd_runs.worst_growth(rate_hz=100, backend='in-loop', kv=k) for k in kvs])
    stable = np.flatnonzero(growth < 1)
    assert (kvs[stable[0]], kvs[stable[-1]]) == (3.8, 5.0)
    assert np.all(np.diff(stable) == 1)
    assert hold.SO101_KV < kvs[stable[0]]


@pytest.mark.parametrize('rate_hz', [50, 100, 200, 400, 500, 600, 900])
def test_without_any_damping_the_held_pd_grows_whenever_a_tick_spans_more_than_one_step(rate_hz):
    """Hard exercise: kv = 0 and joint damping 0. A tick of n > 1 steps has determinant 1 + (1 - beta)*x > 1, so every
    rate below the physics rate grows (the uneven 400, 600 and 900 Hz too); at one tick per step the map is
    semi-implicit Euler on an undamped spring, determinant 1: growth exactly 1 to rounding."""
    assert where_pd_runs.worst_growth(rate_hz=rate_hz, backend='in-loop', kv=0.0, damping=0.0) > 1 + 1e-9
    assert where_pd_runs.worst_growth(rate_hz=1000, backend='in-loop', kv=0.0, damping=0.0) == pytest.approx(
        1.0, abs=1e-12)


def test_try_it_the_drawn_curve_crosses_one_once_and_kv_cannot_save_50_hz(scan):
    """Try it's worked answer: the panel's red curve, drawn at its 41 rates, crosses 1 once, between two points that
    bracket the whole 1 Hz scan's dip-and-bumps (128 ... 135 Hz); at 50 Hz the growth only rises with kv over the
    slider and never drops below 1; in-step the growth is below 1 at every drawn rate for every kv of the slider."""
    rates = np.array(where_pd_runs_panels.PANEL_RATES_HZ)
    red = where_pd_runs.growth_curve(rates, backend='in-loop')
    k = int(np.flatnonzero(red < 1)[0])
    assert np.all(red[:k] > 1) and np.all(red[k:] < 1)
    assert rates[k - 1] < scan.first_below_hz and scan.critical_hz < rates[k]
    kvs = np.round(np.arange(0.0, 10.0 + 1e-9, 0.05), 2)
    growth_50 = np.array([where_pd_runs.worst_growth(rate_hz=50, backend='in-loop', kv=kv) for kv in kvs])
    assert np.all(growth_50 > 1) and np.all(np.diff(growth_50) >= 0)
    assert all(np.all(where_pd_runs.growth_curve(rates, backend='in-step', kv=kv) < 1) for kv in kvs)


def test_the_clamp_is_what_keeps_the_in_loop_chatter_bounded():
    """Observe and Check yourself 2: with Menagerie's ±2.94 N·m the in-loop PD chatters at 50 and 100 Hz and does not
    diverge; the same runs with no useful clamp (1e6 N·m) diverge."""
    clamped = hold.hold_responses([HoldParams(rate_hz=r, backend='in-loop') for r in (50, 100)])
    free = hold.hold_responses([HoldParams(rate_hz=r, backend='in-loop', forcerange=1e6) for r in (50, 100)])
    assert all(r.chatters and not r.diverged for r in clamped)
    assert all(r.diverged for r in free)


def test_in_step_the_hold_does_not_depend_on_the_controller_rate():
    """The Experiment's second table: in-step, the runs at 50 ... 400 Hz stray from the 1 kHz run during the move (the
    staircase of setpoints), and agree with it to better than a nanoradian from half a second after the target
    stops."""
    runs = hold.hold_responses([HoldParams(rate_hz=r, backend='in-step') for r in where_pd_runs.RATES_HZ])
    reference = runs[-1]
    holding = reference.t > hold.MOVE_TIME + 0.5
    for r in runs[:-1]:
        assert np.max(np.abs(r.q[~holding] - reference.q[~holding])) > 1e-3
        assert np.max(np.abs(r.q[holding] - reference.q[holding])) < hold.STILL_P2P


# ------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize('call, message', [
    (lambda: critical_rate.growth_scan([]), r'rates_hz must hold at least one rate in Hz, got \[\]'),
    (lambda: critical_rate.growth_scan([120.0, 110.0]), r'rates_hz must be strictly increasing, got \[120.0, 110.0\]'),
    (lambda: critical_rate.growth_scan([0.0]), r'rates_hz\[0\] must be a finite number > 0 Hz, got 0.0'),
    (lambda: critical_rate.growth_scan(kv=-1.0), 'kv must be a finite number >= 0 N·m·s/rad, got -1.0'),
    (lambda: critical_rate.growth_scan(damping=math.nan), 'damping must be a finite number >= 0 N·m·s/rad'),
    (lambda: where_pd_runs.growth_rows(armature=-0.1), 'armature must be a finite number >= 0 kg·m², got -0.1'),
    (lambda: where_pd_runs.growth_rows([50.0], timestep=0.5), r'timestep must be in \(0, 0.1\] s, got 0.5'),
    (lambda: where_pd_runs.zoh_margins(100.0, inertia=0.0), 'inertia must be a finite number > 0 kg·m², got 0.0'),
    (lambda: where_pd_runs.zoh_margins(100.0, kp=0.0, inertia=1.0), 'kp must be a finite number > 0 N·m/rad'),
    (lambda: critical_rate.rate_bound_hz(100.0, kv=0.0, damping=0.0), r'kv \+ damping must be > 0 N·m·s/rad'),
    (lambda: critical_rate.rate_bound_hz(17.0, timestep=0.0625),
     r'rate_hz must be at most 1/timestep = 16 Hz \(one physics step per tick\) at timestep 0.0625 s, got 17.0'),
    (lambda: critical_rate.tick_mix_rows([math.inf]), r'rates_hz\[0\] must be a finite number > 0 Hz, got inf'),
    (lambda: critical_rate.first_below_hz([100.0, 110.0], [1.1, 1.2]), 'growth must drop below 1 at some rate'),
    (lambda: critical_rate.first_below_hz([100.0, 110.0], [0.9]), r'growth must hold one value per rate \(2\)'),
    (lambda: critical_rate.stable_from_hz([100.0, 110.0], [0.9, 1.1]),
     r'growth must be below 1 at the fastest rate of rates_hz \(110 Hz\), got 1.1'),
    (lambda: critical_rate.quiet_from_hz([{'rate_hz': 120.0, 'state': 'chatters'}]),
     'rows must end with a rate where every run holds still'),
    (lambda: where_pd_runs.margins_positive_from([{'rate_hz': 50.0, 'delay_margin': -1.0, 'explicit_margin': 1.0}]),
     'rows must end with a rate where both margins are positive'),
    (lambda: critical_rate.near_critical_ensembles([]), r'rates_hz must hold at least one rate in Hz'),
    (lambda: where_pd_runs.cause_rows([100.0, 50.0]), r'rates_hz must be strictly increasing'),
    (lambda: where_pd_runs.cause_rows(kp=0.0), 'kp must be a finite number > 0 N·m/rad, got 0.0'),
    (lambda: where_pd_runs.cause_rows(armature=-1.0), 'armature must be a finite number >= 0 kg·m², got -1.0'),
    (lambda: where_pd_runs.dominant_cause([{'cause': '-'}]), 'rows must hold a rate where the in-loop PD is unstable'),
    (lambda: where_pd_runs.implicit_kv_ensembles([]), r'rates_hz must hold at least one rate in Hz'),
])
def test_bad_input_raises_naming_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ------------------------------------------------------------------------------------------------------
# pd-rate: the SO-101 hold at each rate and backend, as ensembles (slow)


@pytest.fixture(scope='module')
def table():
    return {(row['rate_hz'], row['backend']): row for row in registry.run('pd-rate')}


def chatters(row) -> bool:
    """A row chatters when its worst joint still moves in the last second, with a clear tone or not."""
    return row['p2p_deg'] is not None and row['p2p_deg'] >= math.degrees(hold.QUIET_P2P)


@pytest.mark.slow
def test_pd_rate_rows_have_the_documented_keys(table):
    for row in table.values():
        assert set(row) == {'rate_hz', 'backend', 'runs', 'chattering', 'p2p_deg', 'p2p_low', 'p2p_high',
                            'chatter_hz'}
    assert sorted(table) == sorted((r, b) for r in where_pd_runs.RATES_HZ for b in BACKENDS)


@pytest.mark.slow
def test_in_loop_chatters_in_every_run_below_the_critical_rate_and_in_step_never_moves(ensembles):
    """The robust claims of the chapter: at 50 and 100 Hz every run of the in-loop ensemble chatters, by far
    (p2p > 0.01 rad, a hundred times QUIET_P2P); from 200 Hz on every run holds still, and in-step every run
    holds still at every rate (p2p < STILL_P2P)."""
    for rate in where_pd_runs.RATES_HZ:
        loop, step = ensembles[rate, 'in-loop'], ensembles[rate, 'in-step']
        assert step.state == 'still' and step.still == step.n >= hold.ENSEMBLE_PROBE
        if rate in (50, 100):
            assert loop.state == 'chatters' and loop.n == hold.ENSEMBLE_SIZE
            assert np.all(loop.worst_p2p_rad > 0.01) and not loop.diverged.any()
        else:
            assert loop.state == 'still' and loop.n == hold.ENSEMBLE_PROBE


@pytest.mark.slow
def test_main_table_prints_what_the_ensemble_supports(table, ensembles):
    """Median and the middle 95% on the 1-2-5 series, the tone as the band of the middle half of the runs' tones: the
    50 Hz chatter is about 0.2 rad at 5-10 Hz, the 100 Hz one about 0.05 rad at 10-20 Hz, printed in degrees to two
    digits (the figures the chapter's prose glues from this table)."""
    assert (table[50, 'in-loop']['p2p_deg'], table[50, 'in-loop']['p2p_low'], table[50, 'in-loop']['p2p_high'],
            table[50, 'in-loop']['chatter_hz']) == (11, 5.7, 11, '5-10')
    assert (table[100, 'in-loop']['p2p_deg'], table[100, 'in-loop']['p2p_low'],
            table[100, 'in-loop']['p2p_high'], table[100, 'in-loop']['chatter_hz']) == (2.9, 1.1, 5.7, '10-20')
    a50, a100 = ensembles[50, 'in-loop'], ensembles[100, 'in-loop']
    assert robust.series_125(a50.p2p.median) == 0.2 and robust.series_125(a100.p2p.median) == 0.05
    for rate in (200, 400, 1000):
        assert f"{table[rate, 'in-loop']['p2p_deg']:.2e}" == '< 1e-07'  # STILL_P2P, 1e-09 rad, up the series


@pytest.mark.slow
def test_pd_rate_table_survives_a_last_bit_change(monkeypatch, table):
    """Every run nudged by 3e-11 rad (physai.engine.perturb): each chaotic run changes, the printed table does not."""
    exp = registry.get('pd-rate')
    plain = exp.table(list(table.values()))
    plain_sample = {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles()}[50, 'in-loop']
    monkeypatch.setenv('PHYSAI_PERTURB', '3e-11')
    where_pd_runs._rate_ensembles.cache_clear()
    try:
        nudged = exp.table(exp.run())
        moved = where_pd_runs.rate_ensembles()
    finally:
        where_pd_runs._rate_ensembles.cache_clear()
    assert nudged == plain
    # ... although the runs themselves did move: the chatter is chaotic
    sample = {(e.params.rate_hz, e.params.backend): e for e in moved}[50, 'in-loop']
    assert abs(sample.sample.worst_p2p_rad - plain_sample.sample.worst_p2p_rad) > 1e-6


@pytest.mark.slow
def test_the_loudest_joint_at_50_hz_changes_from_run_to_run(ensembles):
    """Why the tables report ensembles: at 50 Hz in-loop the loudest joint of a run is one of several, each the loudest
    in many runs (at least 5 of 64), so the set the chapter names does not depend on a handful of runs."""
    loudest = np.argmax(ensembles[50, 'in-loop'].p2p_rad, axis=1)
    counts = np.bincount(loudest, minlength=len(hold.so101_joints()))
    assert np.count_nonzero(counts) >= 2 and np.all(counts[counts > 0] >= 5)


@pytest.mark.slow
def test_plotted_joint_chatters_in_every_run(ensembles, bare_ensembles):
    """The joint a figure shows does not depend on one run: the first joint that chatters in every run."""
    for e in list(ensembles.values()) + list(bare_ensembles.values()):
        if e.state == 'chatters':
            assert np.all(e.p2p_rad[:, e.joint] >= hold.QUIET_P2P)
            assert not np.all(e.p2p_rad[:, :e.joint] >= hold.QUIET_P2P, axis=0).any()
    assert hold.so101_joints()[ensembles[50, 'in-loop'].joint] == 'shoulder_lift'


@pytest.mark.slow
def test_without_armature_most_chatter_is_broadband(bare_ensembles):
    """Armature 0: the in-loop joints chatter at every rate in every run, but only 1 kHz (a step-by-step flip at
    500 Hz) has a clear tone; at 50 ... 400 Hz most runs have no dominant frequency. In-step stays still."""
    for rate in where_pd_runs.RATES_HZ:
        loop = bare_ensembles[rate, 'in-loop']
        assert loop.state == 'chatters' and np.all(loop.worst_p2p_rad > 1e-3)
        assert bare_ensembles[rate, 'in-step'].state == 'still'
    assert [bare_ensembles[rate, 'in-loop'].tone for rate in (50, 100, 200, 400)] == ['broadband'] * 4
    assert bare_ensembles[1000, 'in-loop'].tone == '500'


@pytest.mark.slow
def test_in_loop_chatters_at_low_rates_and_in_step_is_quiet_wherever_it_does(table):
    """The PD sampled at 50 and 100 Hz chatters (p2p > 0.01 rad); the same gains in the step stay still."""
    loud = [rate for rate in where_pd_runs.RATES_HZ if chatters(table[rate, 'in-loop'])]
    assert loud == [50, 100]
    for rate in where_pd_runs.RATES_HZ:
        quiet = table[rate, 'in-step']
        assert not chatters(quiet) and quiet['p2p_deg'] < 1e-6
        if rate in loud:
            assert table[rate, 'in-loop']['p2p_deg'] > math.degrees(0.01)


@pytest.mark.slow
def test_chatter_is_where_the_tick_growth_exceeds_one(table):
    """Chapter 1's bound with the tick as the step: growth > 1 exactly at the rates that chatter."""
    m = hold.hold_model(HoldParams())
    d = mujoco.MjData(m)
    d.qpos[:] = hold.STANDBY
    mujoco.mj_forward(m, d)
    inertia = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, inertia)
    for rate in where_pd_runs.RATES_HZ:
        growth = max(loop.tick_growth(rate_hz=rate, kp=hold.SO101_KP, kv=hold.SO101_KV,
                                         inertia=i, damping=0.6) for i in np.diag(inertia))
        assert (growth > 1) == chatters(table[rate, 'in-loop'])


def test_in_step_growth_per_second_does_not_depend_on_the_controller_rate():
    """In-step the tick only refreshes the setpoint: growth per tick ** rate is the same at every rate."""
    per_second = [where_pd_runs.worst_growth(rate_hz=r, backend='in-step') ** r for r in (50, 100, 200, 1000)]
    np.testing.assert_allclose(per_second, per_second[-1], rtol=1e-9)


@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('armature', [hold.SO101_ARMATURE, 0.0])
def test_growth_curve_is_tick_growth_for_the_worst_joint(backend, armature):
    """The panel's vectorized curve is max over joints of tick_growth, to rounding, even or uneven ticks."""
    rates = list(where_pd_runs_panels.PANEL_RATES_HZ) + [129.0, 133.0, 134.0]
    curve = where_pd_runs.growth_curve(rates, backend=backend, armature=armature)
    damping = float(hold.hold_model(HoldParams()).dof_damping[0])
    expected = [max(loop.tick_growth(rate_hz=r, kp=hold.SO101_KP, kv=hold.SO101_KV, inertia=i,
                                        damping=damping, backend=backend)
                    for i in where_pd_runs.standby_inertia(armature)) for r in rates]
    np.testing.assert_allclose(curve, expected, rtol=1e-12)


@pytest.mark.parametrize('setting', [{}, {'armature': 0.0}, {'timestep': 0.0005}, {'timestep': 0.02, 'kp': 30000.0},
                                     {'kp': 30000.0, 'armature': 0.0, 'timestep': 0.0005, 'integrator': 'RK4'}])
def test_growth_curve_of_many_rates_at_once_is_each_rate_alone_to_the_last_bit(setting):
    """The panel's curve stacks every rate's tick products into one array; each value is the one a single-rate
    call computes, bit for bit, overflow to inf included, so the panel and the tables never disagree."""
    rates = list(where_pd_runs_panels.PANEL_RATES_HZ) + [129.0, 133.0, 134.0, 2000.0]
    for backend in BACKENDS:
        curve = where_pd_runs.growth_curve(rates, backend=backend, **setting)
        alone = [where_pd_runs.growth_curve([r], backend=backend, **setting)[0] for r in rates]
        np.testing.assert_array_equal(curve, alone)
    assert where_pd_runs.growth_curve([], backend='in-loop').shape == (0,)


def test_growth_saturates_to_inf_instead_of_overflowing():
    """kp 30000 without armature under RK4 at 0.5 ms grows past any float per tick: that is 'diverged', shown as
    inf, not an OverflowError in red on the panel."""
    for backend in BACKENDS:
        growth = where_pd_runs.growth_curve([10.0, 50.0, 1000.0], backend=backend, kp=30000.0, armature=0.0,
                                      timestep=0.0005, integrator='RK4')
        assert np.all(growth > 1)
    assert np.isinf(where_pd_runs.growth_curve([10.0], backend='in-step', kp=30000.0, armature=0.0, timestep=0.0005,
                                         integrator='RK4')[0])


def test_both_feedforward_designs_are_the_same_for_a_position_only_command():
    """With no velocity target and no feed-forward torque, biasprm[0] and qfrc_applied both get zero."""
    assert where_pd_runs.position_only_difference(steps=500) == 0.0
    with pytest.raises(ValueError, match='steps must be'):
        where_pd_runs.position_only_difference(steps=0)


def test_menagerie_servo_kv_is_implicit_inside_the_clamp_and_gone_at_the_limit():
    free, pinned = where_pd_runs.clamp_damping_rows()
    assert free['clamped'] == 'no' and free['kv_implicit'] == pytest.approx(where_pd_runs.SO101_KV)
    assert pinned['clamped'] == 'yes' and pinned['kv_implicit'] == pytest.approx(0.0, abs=1e-12)
    assert pinned['force'] == pytest.approx(where_pd_runs.SO101_FORCERANGE)
