"""physai.laws.motion: counting a run's turns, the rule behind the panels' swinging / creeping / chattering verdicts."""

import numpy as np
import pytest

from physai.laws.motion import reversals


def test_a_monotone_run_never_turns_whatever_the_size():
    """A creep toward the command (an overdamped approach) and a drift under gravity go one way: no reversal."""
    t = np.linspace(0.0, 1.0, 501)
    for x in (np.exp(-3 * t), -0.2 * t ** 2, np.full_like(t, 0.5)):
        for size in (0.0, 1e-9, 1e-3):
            assert reversals(x, size) == 0


def test_a_sine_turns_once_per_half_period():
    """n half periods of a sine turn at each of their n extremes when the swing exceeds the size, and not at all when
    it does not."""
    t = np.linspace(0.0, 1.0, 2001)
    x = 1e-3 * np.sin(2 * np.pi * 7 * t)  # 14 half periods
    assert reversals(x, 0.0) == 14 and reversals(x, 1e-4) == 14
    assert reversals(x, 3e-3) == 0  # a swing of 2e-3 peak to peak never comes back by 3e-3


def test_the_size_filters_dust_riding_on_a_drift():
    """A drift with a ripple far below the size still reads as one way; the ripple alone, with size 0, turns."""
    t = np.linspace(0.0, 1.0, 1001)
    x = 0.05 * t + 1e-7 * np.sin(2 * np.pi * 40 * t)
    assert reversals(x, 1e-5) == 0
    assert reversals(1e-7 * np.sin(2 * np.pi * 40 * t), 0.0) == 80


def test_equal_neighbours_are_not_a_turn():
    assert reversals([0.0, 1.0, 1.0, 1.0, 2.0]) == 0
    assert reversals([0.0, 1.0, 1.0, 0.5]) == 1
    assert reversals([]) == 0 and reversals([3.0]) == 0


@pytest.mark.parametrize('x, size, message', [
    ([0.0, np.nan], 0.0, 'x must be a 1-D array of finite numbers'),
    ([[0.0, 1.0]], 0.0, 'x must be a 1-D array'),
    ([0.0, 1.0], -1.0, 'size must be'),
    ([0.0, 1.0], np.inf, 'size must be'),
    (None, 0.0, 'x must be a number or an array'),
])
def test_bad_input_raises_naming_the_parameter(x, size, message):
    with pytest.raises(ValueError, match=message):
        reversals(x, size)
