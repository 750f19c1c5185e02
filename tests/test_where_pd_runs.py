"""Chapter 3's analysis (physai.experiments.where_pd_runs): the growth table of Build it, step 4, and the first
exercise's critical rate, each claim the chapter makes from them checked against the functions that compute it."""

import math

import numpy as np
import pytest

from physai.engine import hold
from physai.experiments import registry, where_pd_runs
from physai.laws import loop
from physai.laws.sim import step_growth


@pytest.fixture(scope='module')
def growth_at():
    return {row['rate_hz']: row for row in where_pd_runs.growth_rows()}


@pytest.fixture(scope='module')
def scan():
    return where_pd_runs.growth_scan()


@pytest.fixture(scope='module')
def damping():
    return float(hold.hold_model(hold.HoldParams()).dof_damping[0])


# ------------------------------------------------------------------------------------------------------
# Build it, step 4: the margins of the held tick and the growth per tick


def test_pd_growth_table_has_its_columns_at_every_rate(growth_at):
    assert sorted(growth_at) == list(where_pd_runs.RATES_HZ)
    keys = [key for key, _ in where_pd_runs.GROWTH_COLUMNS]
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
# The first exercise: the critical rate, scanned in 1 Hz steps


def test_growth_first_dips_below_one_at_128_hz_but_stays_below_only_from_135(scan):
    """The worked answer: first below 1 at 128 Hz, back above at 129, 133 and 134 Hz, below 1 from 135 Hz on."""
    assert scan.first_below_hz == 128
    assert scan.bumps_hz == [129, 133, 134]
    assert scan.critical_hz == 135
    rates = np.array(scan.rates_hz)
    assert np.all(scan.worst[rates >= scan.critical_hz] < 1)
    assert np.all(scan.worst[rates < scan.first_below_hz] > 1)
    assert scan.worst[rates == scan.critical_hz - 1][0] >= 1


def test_scan_verdicts_are_not_rounding(scan):
    """Every joint's growth at every scanned rate is at least 1e-6 from 1: no verdict of the exercise (below 1 or
    not) can flip with the last bits of the arithmetic, on any processor."""
    assert np.min(np.abs(scan.growth - 1)) > 1e-6


def test_half_tick_delay_bound_explains_the_critical_rate(scan, damping):
    """{eq}`eq-rate-bound` with beta at the critical rate and the joint damping added to kv is within 5% of the
    scanned critical rate; without the joint damping it would be far off (above the whole scan's stable end)."""
    assert scan.formula_hz == pytest.approx(where_pd_runs.rate_bound_hz(scan.critical_hz, damping=damping))
    assert abs(scan.formula_hz - scan.critical_hz) < 0.05 * scan.critical_hz
    assert where_pd_runs.rate_bound_hz(scan.critical_hz, damping=0.0) > 1.15 * scan.critical_hz


def test_every_joint_turns_stable_at_about_the_same_rate_whatever_its_inertia(scan, damping):
    """Check yourself 1: the failing condition does not contain I. The six joints (inertias 0.028 to 0.037 kg·m²)
    are stable from 128 ... 135 Hz; a joint of half or twice the lightest inertia, within 10% of the critical rate."""
    assert np.ptp(scan.inertia) > 0.25 * scan.inertia.min()
    assert (min(scan.joint_stable_from_hz), max(scan.joint_stable_from_hz)) == (128, 135)
    assert scan.joint_first_below_hz == [128] * 6
    for factor in (0.5, 2.0):
        inertia = factor * float(scan.inertia.min())
        growth = [loop.tick_growth(rate_hz=r, kp=hold.SO101_KP, kv=hold.SO101_KV, inertia=inertia, damping=damping)
                  for r in scan.rates_hz]
        assert abs(where_pd_runs.stable_from_hz(scan.rates_hz, growth) - scan.critical_hz) < 0.1 * scan.critical_hz


def test_scan_rows_are_the_per_joint_verdicts(scan):
    rows = scan.rows()
    assert [row['joint'] for row in rows] == list(hold.so101_joints())
    assert [row['stable_from_hz'] for row in rows] == scan.joint_stable_from_hz
    assert registry.run('pd-critical-rate') == rows


def _worst_pattern_growth(scan, pattern, damping):
    """The worst joint's growth per tick over one repeating pattern of held ticks, straight from zoh_step."""
    return max(step_growth(loop.zoh_step, scan.timestep, scan.kp / i, scan.kv / i, substeps=tuple(pattern),
                           c_joint=damping / i) ** (1 / len(pattern)) for i in scan.inertia)


def test_the_bumps_come_from_the_order_of_long_and_short_ticks(scan, damping):
    """The worked answer's explanation: every tick 8 steps long grows, every tick 7 steps long decays, the rates in
    between mix 8s and 7s; at 128 Hz the ticks average more steps than at 129 Hz, yet the growth is below 1 at 128
    and above at 129: the mean alone does not decide. Sorting 133 Hz's ticks (all 8s, then all 7s) turns its
    growth from above 1 to below."""
    rows = where_pd_runs.tick_mix_rows(where_pd_runs.tick_mix_rates(scan))
    long_n = scan.long_steps
    assert long_n == 8
    assert [r['rate_hz'] for r in rows] == pytest.approx([125, 128, 129, 133, 134, 135, 1000 / 7])
    assert rows[0]['steps'] == f'1×{long_n}' and rows[0]['growth'] > 1
    assert rows[-1]['steps'] == f'1×{long_n - 1}' and rows[-1]['growth'] < 1
    for row in rows[1:-1]:
        pattern = loop.tick_pattern(row['rate_hz'], scan.timestep)
        assert set(pattern) == {long_n, long_n - 1} and len(pattern) == row['ticks']
        assert row['steps'] == f'{pattern.count(long_n)}×{long_n} + {pattern.count(long_n - 1)}×{long_n - 1}'
        assert row['mean_steps'] == pytest.approx(sum(pattern) / len(pattern))
        assert row['growth'] == pytest.approx(_worst_pattern_growth(scan, pattern, damping), rel=1e-9)
    dip, bump = rows[1], rows[2]
    assert dip['mean_steps'] > bump['mean_steps'] and dip['growth'] < 1 < bump['growth']
    pattern = loop.tick_pattern(133, scan.timestep)
    assert _worst_pattern_growth(scan, pattern, damping) > 1 > _worst_pattern_growth(scan, sorted(pattern), damping)


def test_stable_from_and_first_below_on_a_small_scan():
    rates, growth = (1.0, 2.0, 3.0, 4.0, 5.0), (1.2, 0.9, 1.1, 0.8, 0.7)
    assert where_pd_runs.first_below_hz(rates, growth) == 2
    assert where_pd_runs.stable_from_hz(rates, growth) == 4
    assert where_pd_runs.stable_from_hz(rates, (0.5,) * 5) == 1
    rows = [{'rate_hz': r, 'state': s} for r, s in zip(rates, ('chatters', 'still', 'mixed', 'still', 'still'))]
    assert where_pd_runs.quiet_from_hz(rows) == 4
    margins = [{'rate_hz': r, 'delay_margin': d, 'explicit_margin': e}
               for r, d, e in zip(rates, (-1.0, 1.0, 1.0, 1.0, 1.0), (1.0, 1.0, -1.0, 1.0, 1.0))]
    assert where_pd_runs.margins_positive_from(margins) == 4


# ------------------------------------------------------------------------------------------------------
# ... and MuJoCo around the critical rate


@pytest.fixture(scope='module')
def near_rows():
    return where_pd_runs.near_critical_rows(where_pd_runs.near_critical_ensembles())


@pytest.mark.slow
def test_mujoco_arm_is_quiet_from_122_hz_where_the_growth_is_still_just_above_one(near_rows, scan):
    """The worked answer: every run of every ensemble agrees; the arm chatters in every run up to 120 Hz, where the
    growth per tick is well above 1, and holds still in every run from 122 Hz on, where the growth is at most
    1.02 (the largest of the quiet rates), the bump at 134 Hz included: the friction loss catches so slow a growth."""
    assert all(row['state'] in ('chatters', 'still') for row in near_rows)
    quiet = where_pd_runs.quiet_from_hz(near_rows)
    assert quiet == 122
    loud = [row for row in near_rows if row['rate_hz'] < quiet]
    calm = [row for row in near_rows if row['rate_hz'] >= quiet]
    assert all(row['state'] == 'chatters' and row['chattering'] == row['runs'] == hold.ENSEMBLE_SIZE
               for row in loud)
    assert all(row['state'] == 'still' and row['chattering'] == 0 for row in calm)
    assert all(row['growth'] > 1.02 for row in loud)
    at_quiet = calm[0]['growth']
    assert 1 < at_quiet < 1.02 and at_quiet == max(row['growth'] for row in calm)
    bumps = [row['rate_hz'] for row in calm if row['rate_hz'] > scan.first_below_hz and row['growth'] >= 1]
    assert bumps == [134]


@pytest.mark.slow
def test_near_critical_table_survives_a_last_bit_change(monkeypatch, near_rows):
    """Every run nudged by 3e-11 rad (physai.engine.perturb): the printed table does not move."""
    exp = registry.get('pd-rate-near-critical')
    plain = exp.table(near_rows)
    monkeypatch.setenv('PHYSAI_PERTURB', '3e-11')
    where_pd_runs._near_critical_ensembles.cache_clear()
    try:
        nudged = exp.table(exp.run())
    finally:
        where_pd_runs._near_critical_ensembles.cache_clear()
    assert nudged == plain


# ------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize('call, message', [
    (lambda: where_pd_runs.growth_scan([]), r'rates_hz must hold at least one rate in Hz, got \[\]'),
    (lambda: where_pd_runs.growth_scan([120.0, 110.0]), r'rates_hz must be strictly increasing, got \[120.0, 110.0\]'),
    (lambda: where_pd_runs.growth_scan([0.0]), r'rates_hz\[0\] must be a finite number > 0 Hz, got 0.0'),
    (lambda: where_pd_runs.growth_scan(kv=-1.0), 'kv must be a finite number >= 0 N·m·s/rad, got -1.0'),
    (lambda: where_pd_runs.growth_scan(damping=math.nan), 'damping must be a finite number >= 0 N·m·s/rad'),
    (lambda: where_pd_runs.growth_rows(armature=-0.1), 'armature must be a finite number >= 0 kg·m², got -0.1'),
    (lambda: where_pd_runs.growth_rows([50.0], timestep=0.5), r'timestep must be in \(0, 0.1\] s, got 0.5'),
    (lambda: where_pd_runs.zoh_margins(100.0, inertia=0.0), 'inertia must be a finite number > 0 kg·m², got 0.0'),
    (lambda: where_pd_runs.zoh_margins(100.0, kp=0.0, inertia=1.0), 'kp must be a finite number > 0 N·m/rad'),
    (lambda: where_pd_runs.rate_bound_hz(100.0, kv=0.0, damping=0.0), r'kv \+ damping must be > 0 N·m·s/rad'),
    (lambda: where_pd_runs.tick_mix_rows([math.inf]), r'rates_hz\[0\] must be a finite number > 0 Hz, got inf'),
    (lambda: where_pd_runs.first_below_hz([100.0, 110.0], [1.1, 1.2]), 'growth must drop below 1 at some rate'),
    (lambda: where_pd_runs.first_below_hz([100.0, 110.0], [0.9]), r'growth must hold one value per rate \(2\)'),
    (lambda: where_pd_runs.stable_from_hz([100.0, 110.0], [0.9, 1.1]),
     r'growth must be below 1 at the fastest rate of rates_hz \(110 Hz\), got 1.1'),
    (lambda: where_pd_runs.quiet_from_hz([{'rate_hz': 120.0, 'state': 'chatters'}]),
     'rows must end with a rate where every run holds still'),
    (lambda: where_pd_runs.margins_positive_from([{'rate_hz': 50.0, 'delay_margin': -1.0, 'explicit_margin': 1.0}]),
     'rows must end with a rate where both margins are positive'),
    (lambda: where_pd_runs.near_critical_ensembles([]), r'rates_hz must hold at least one rate in Hz'),
])
def test_bad_input_raises_naming_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()

