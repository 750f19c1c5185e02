"""physai.experiments.critical_rate: chapter 3's first exercise, the in-loop PD's critical rate, on the growth per tick
(scanned in 1 Hz steps, the tick mixes between the first dip and the last bump) and in MuJoCo's arm around it."""

import copy

import numpy as np
import pytest

from physai.engine import hold
from physai.experiments import critical_rate, registry, where_pd_runs
from physai.engine.hold import HoldParams
from physai.laws import loop
from physai.laws.sim import step_growth


@pytest.fixture(scope='module')
def scan():
    return critical_rate.growth_scan()


@pytest.fixture(scope='module')
def damping():
    return float(hold.hold_model(hold.HoldParams()).dof_damping[0])


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
    assert scan.formula_hz == pytest.approx(critical_rate.rate_bound_hz(scan.critical_hz, damping=damping))
    assert abs(scan.formula_hz - scan.critical_hz) < 0.05 * scan.critical_hz
    assert critical_rate.rate_bound_hz(scan.critical_hz, damping=0.0) > 1.15 * scan.critical_hz


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
        assert abs(critical_rate.stable_from_hz(scan.rates_hz, growth) - scan.critical_hz) < 0.1 * scan.critical_hz


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
    rows = critical_rate.tick_mix_rows(critical_rate.tick_mix_rates(scan))
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
    # the table's last column: the same ticks, the long ones first; where it and the growth part, the order decides
    for row in rows:
        pattern = sorted(loop.tick_pattern(row['rate_hz'], scan.timestep), reverse=True)
        assert row['long_first_growth'] == pytest.approx(_worst_pattern_growth(scan, pattern, damping), rel=1e-12)
    order = [row['rate_hz'] for row in rows if row['growth'] >= 1 > row['long_first_growth']]
    assert order == [133, 134]


@pytest.mark.parametrize('pattern', [(8,), (8, 7), (8, 8, 8, 7), (3, 2), (1,)])
def test_pattern_growth_is_chapter_1s_step_growth_over_the_held_ticks(scan, damping, pattern):
    assert critical_rate.pattern_growth(pattern) == pytest.approx(_worst_pattern_growth(scan, pattern, damping),
                                                                  rel=1e-12)


def test_pattern_growth_refuses_an_empty_or_bad_pattern():
    with pytest.raises(ValueError, match='pattern must be a non-empty sequence'):
        critical_rate.pattern_growth(())
    with pytest.raises(ValueError, match=r'substeps\[1\] must be a whole number'):
        critical_rate.pattern_growth((8, 0))


def test_stable_from_and_first_below_on_a_small_scan():
    rates, growth = (1.0, 2.0, 3.0, 4.0, 5.0), (1.2, 0.9, 1.1, 0.8, 0.7)
    assert critical_rate.first_below_hz(rates, growth) == 2
    assert critical_rate.stable_from_hz(rates, growth) == 4
    assert critical_rate.stable_from_hz(rates, (0.5,) * 5) == 1
    rows = [{'rate_hz': r, 'state': s} for r, s in zip(rates, ('chatters', 'still', 'mixed', 'still', 'still'))]
    assert critical_rate.quiet_from_hz(rows) == 4
    margins = [{'rate_hz': r, 'delay_margin': d, 'explicit_margin': e}
               for r, d, e in zip(rates, (-1.0, 1.0, 1.0, 1.0, 1.0), (1.0, 1.0, -1.0, 1.0, 1.0))]
    assert where_pd_runs.margins_positive_from(margins) == 4


@pytest.fixture(scope='module')
def near_rows():
    return critical_rate.near_critical_rows(critical_rate.near_critical_ensembles())


@pytest.mark.slow
def test_mujoco_arm_is_quiet_from_122_hz_where_the_growth_is_still_just_above_one(near_rows, scan):
    """The worked answer: every run of every ensemble agrees; the arm chatters in every run up to 120 Hz, where the
    growth per tick is well above 1, and holds still in every run from 122 Hz on, where the growth is at most
    1.02 (the largest of the quiet rates), the bump at 134 Hz included: the friction loss catches so slow a growth."""
    assert all(row['state'] in ('chatters', 'still') for row in near_rows)
    quiet = critical_rate.quiet_from_hz(near_rows)
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
def test_without_friction_loss_the_arm_chatters_where_the_growth_is_just_above_one(monkeypatch, near_rows):
    """The first exercise's explanation of MuJoCo's early quiet: at 122 and 124 Hz, where the growth per tick is just
    above 1 and the arm holds still in every run, the same runs with the joints' friction loss set to 0 chatter in
    every run."""
    quiet = [row['rate_hz'] for row in near_rows if row['state'] == 'still' and row['growth'] > 1][:2]
    assert quiet == [122, 124]
    base = copy.copy(hold.so101_base())
    base.dof_frictionloss[:] = 0.0
    hold.shared_hold_model.cache_clear()
    monkeypatch.setattr(hold, 'so101_base', lambda: base)
    try:
        ensembles = hold.hold_ensembles([HoldParams(rate_hz=r, backend='in-loop') for r in quiet])
    finally:  # nothing built from the friction-free arm outlives the test
        hold.shared_hold_model.cache_clear()
        hold._thread_batch.cache_clear()
    assert all(e.state == 'chatters' and e.n == hold.ENSEMBLE_SIZE for e in ensembles)


@pytest.mark.slow
def test_near_critical_table_survives_a_last_bit_change(monkeypatch, near_rows):
    """Every run nudged by 3e-11 rad (physai.engine.perturb): the printed table does not move."""
    exp = registry.get('pd-rate-near-critical')
    plain = exp.table(near_rows)
    monkeypatch.setenv('PHYSAI_PERTURB', '3e-11')
    critical_rate._near_critical_ensembles.cache_clear()
    try:
        nudged = exp.table(exp.run())
    finally:
        critical_rate._near_critical_ensembles.cache_clear()
    assert nudged == plain
