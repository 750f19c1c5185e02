"""Robust figures: round-off bounds, significant digits and the 1-2-5 series print the same on any processor."""

import json
import math

import numpy as np

import pytest

from physai.experiments import registry
from physai.laws import robust


@pytest.mark.parametrize('value, bound', [(2.2e-16, 1e-12), (0.0, 1e-12), (-3.6e-15, 1e-12), (7.3e-05, 1e-4),
                                          (1e-3, 1e-3), (1.2e-3, 1e-2)])
def test_roundoff_bound_is_the_power_of_ten_above_and_at_least_the_floor(value, bound):
    assert robust.roundoff_bound(value) == pytest.approx(bound, rel=1e-12)


def test_a_bound_prints_as_a_bound_and_serializes_as_its_number():
    """Whatever format a table column asks for, the cell shows '< 1e-12'; JSON keeps the number."""
    below = robust.roundoff(3.3e-16)
    assert f'{below:.1e}' == f'{below:.4f}' == '< 1e-12'
    assert registry.format_table([{'diff': below}], [('diff', '.2e')]).splitlines()[1].strip() == '< 1e-12'
    assert json.loads(registry.to_json([{'diff': below}])) == [{'diff': 1e-12}]


def test_difference_keeps_real_differences_and_bounds_rounding():
    assert robust.difference(4.67e-3) == 4.67e-3 and not isinstance(robust.difference(4.67e-3), robust.Below)
    assert isinstance(robust.difference(1e-17), robust.Below)


@pytest.mark.parametrize('value, digits, expected', [(7.9163, 3, 7.92), (0.06982, 3, 0.0698), (108.3, 2, 110.0),
                                                     (0.0, 2, 0.0)])
def test_round_sig(value, digits, expected):
    assert robust.round_sig(value, digits) == expected
    assert math.isnan(robust.round_sig(math.nan, 2))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match='value must be a finite number, got nan'):
        robust.roundoff_bound(math.nan)
    with pytest.raises(ValueError, match='digits must be an integer >= 1, got 0'):
        robust.round_sig(1.0, 0)
    with pytest.raises(ValueError, match='value must be a finite number > 0, got 0'):
        robust.series_125(0)
    with pytest.raises(ValueError, match='values must be one or more finite numbers'):
        robust.ensemble([])


def test_ensemble_summarizes_median_and_range():
    e = robust.ensemble([0.3, 0.1, 0.2, 0.4])
    assert (e.median, e.low, e.high, e.n) == (0.25, 0.1, 0.4, 4)
    assert e.rounded(1).median == 0.2


@pytest.mark.parametrize('value, how, expected', [
    (0.159, 'nearest', 0.2), (0.047, 'nearest', 0.05), (0.0087, 'nearest', 0.01), (0.13, 'nearest', 0.1),
    (0.115, 'down', 0.1), (0.034, 'down', 0.02), (0.05, 'down', 0.05), (0.0635, 'up', 0.1), (0.189, 'up', 0.2),
    (500.0, 'up', 500.0), (7.0, 'up', 10.0), (6.0, 'down', 5.0),
])
def test_series_125_rounds_onto_one_two_five(value, how, expected):
    assert robust.series_125(value, how) == expected


def test_log_grid_rounds_at_the_source_and_keeps_its_ends():
    assert robust.log_grid(1.0, 30000.0, 25)[:4] == (1.0, 1.54, 2.36, 3.63)
    assert robust.log_grid(10.0, 1000.0, 41)[20] == 100.0 and robust.log_grid(10.0, 1000.0, 41)[-1] == 1000.0
    with pytest.raises(ValueError, match='repeat a value'):
        robust.log_grid(1.0, 1.01, 50)
    with pytest.raises(ValueError, match='stop must be greater'):
        robust.log_grid(10.0, 1.0, 5)


@pytest.mark.parametrize('grid', ['PANEL_KP_GRID', 'STABILITY_KP', 'PANEL_RATES_HZ'])
def test_the_book_s_grids_are_far_from_a_rounding_boundary(grid):
    """A grid value moves on another processor only if its raw value, pow's result, lies within a few units in the
    last place of a rounding boundary; every raw value of the book's grids is a billion times farther than that
    (a relative nudge of 1e-9 either way rounds to the same value)."""
    from physai.experiments import servo_panel
    from physai.interface import where_pd_runs_panels

    module = where_pd_runs_panels if grid == 'PANEL_RATES_HZ' else servo_panel
    values = tuple(float(x) for x in getattr(module, grid))
    raw = {'PANEL_KP_GRID': (1.0, 30000.0, 25), 'STABILITY_KP': (1.0, 30000.0, 19),
           'PANEL_RATES_HZ': (10.0, 1000.0, 41)}[grid]
    assert values == robust.log_grid(*raw)
    for x in np.geomspace(*raw):
        assert robust.round_sig(x * (1 - 1e-9), 3) == robust.round_sig(x * (1 + 1e-9), 3) == robust.round_sig(x, 3)


@pytest.mark.parametrize('call, message', [
    # a million-value grid allocates gigabytes before rounding can refuse it: the size is checked first
    (lambda: robust.log_grid(1.0, 100.0, 10**9), r'num must be a whole number in \[2, 100,000\], got 1000000000'),
    (lambda: robust.log_grid(1.0, 100.0, True), r'num must be a whole number in \[2, 100,000\], got True'),
    (lambda: robust.log_grid(1.0, 100.0, 5, digits=0), r'digits must be a whole number in \[1, 17\]'),
    (lambda: robust.log_grid(1.0, 100.0, 5, digits=10**6), r'digits must be a whole number in \[1, 17\]'),
    (lambda: robust.roundoff_bound(None), 'value must be a finite number, got None'),
    (lambda: robust.roundoff_bound('abc'), "value must be a finite number, got 'abc'"),
    (lambda: robust.roundoff_bound(1e-5, None), 'floor must be a finite number > 0, got None'),
    (lambda: robust.roundoff(1e-5, 'x'), "floor must be a finite number > 0, got 'x'"),
    (lambda: robust.difference(None), 'value must be a finite number, got None'),
    (lambda: robust.difference(math.nan), 'value must be a finite number, got nan'),
    (lambda: robust.round_sig(None, 3), 'value must be a real number'),
    (lambda: robust.round_sig(1.0, True), 'digits must be an integer >= 1, got True'),
    (lambda: robust.series_125(1.7e308, 'up'), 'value must have a 1-2-5 value above it'),
    (lambda: robust.Ensemble(median=1.0, low=2.0, high=3.0, n=3), 'low <= median <= high must hold'),
    (lambda: robust.Ensemble(median=math.nan, low=0.0, high=3.0, n=3), 'median must be a finite number'),
    (lambda: robust.Ensemble(median=1.0, low=0.0, high=3.0, n=0), 'n must be a whole number of runs >= 1, got 0'),
])
def test_each_bad_argument_of_the_robust_figures_is_named_with_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_series_125_near_the_largest_float_answers_instead_of_a_math_domain_error():
    assert robust.series_125(1e308) == 1e308 and robust.series_125(1.7e308, 'down') == 1e308
