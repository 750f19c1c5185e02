"""physai.laws.loop: chapter 3's MIT-form command and its checks, controller ticks, and the zero-order hold."""

import math

import numpy as np
import pytest

from physai.laws import loop
from physai.laws.drives import pd_torque
from physai.laws.loop import JointCommand


def test_mit_torque_is_chapter_2s_pd_law_clipped_to_max_effort():
    """mit_torque = physai.laws.drives.pd_torque(stiffness, damping, effort), then clip to ±max_effort."""
    command = JointCommand(position=0.3, velocity=0.2, stiffness=40.0, damping=0.8, effort=0.1, max_effort=5.0)
    q, qd = np.linspace(-1.0, 1.0, 9), np.linspace(2.0, -2.0, 9)
    expected = np.clip(pd_torque(0.3, q, 0.2, qd, 40.0, 0.8, 0.1), -5.0, 5.0)
    np.testing.assert_array_equal(loop.mit_torque(command, q, qd), expected)
    assert np.max(np.abs(expected)) == 5.0  # the clamp is exercised


def test_tick_mask_is_even_where_the_rates_divide_and_alternates_at_400_hz():
    assert np.flatnonzero(loop.tick_mask(50, 0.001, 100)).tolist() == [0, 20, 40, 60, 80]
    assert loop.tick_mask(1000, 0.001, 7).all()
    assert np.diff(np.flatnonzero(loop.tick_mask(400, 0.001, 40))).tolist() == [3, 2] * 7 + [3]
    assert loop.tick_pattern(400, 0.001) == (3, 2)


def test_tick_pattern_is_kept_per_rate_and_still_refuses_bad_input():
    """Patterns are kept (a panel asks for the same 41 rates at every move), and an int, a float or a NumPy rate
    give the same one; input that is not a number still gets the ValueError naming it, not a hashing error."""
    assert loop.tick_pattern(400, 0.001) is loop.tick_pattern(400.0, np.float64(0.001))
    with pytest.raises(ValueError, match=r'rate_hz must be a finite number > 0 Hz, got \[400\]'):
        loop.tick_pattern([400], 0.001)
    with pytest.raises(ValueError, match='timestep must be a finite number > 0 s'):
        loop.tick_pattern(400, {'h': 0.001})


@pytest.mark.parametrize('rate_hz, pattern', [(129, (8, 8, 8, 7)), (400 / 3, (8, 7)), (125, (8,)), (2000, (1,))])
def test_tick_pattern_has_the_mean_tick_of_the_rate(rate_hz, pattern):
    """The pattern's ticks cover the steps of the rate's nearest fraction (129 Hz: 31 steps in 4 ticks)."""
    assert loop.tick_pattern(rate_hz, 0.001) == pattern
    for rate in (13.3, 77.0, 129.0, 134.0, 415.0):
        got = loop.tick_pattern(rate, 0.001)
        assert sum(got) / len(got) == pytest.approx(1000.0 / rate, rel=2e-3)
        assert max(got) - min(got) <= 1  # as even as the rate allows


# ------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize('kwargs, message', [
    ({'position': math.nan}, 'position must be a finite number rad'),
    ({'stiffness': -1.0}, 'stiffness must be a finite number >= 0'),
    ({'damping': math.inf}, 'damping must be a finite number >= 0'),
    ({'max_effort': 0.0}, 'max_effort must be > 0'),
    ({'effort': '1'}, 'effort must be a finite number'),
])
def test_bad_joint_command_raises_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JointCommand(**kwargs)


@pytest.mark.parametrize('n', [1, 2, 5, 20])
def test_held_pd_tick_is_the_zero_order_hold_map(n):
    """One held tick of n steps: v' = v + T*a, q' = q + T*v + (n+1)/(2n)*T²*a, T = n*h (no joint damping)."""
    h, w2, c = 1e-3, 3.0e4, 90.0
    q, v = 0.3, -1.2
    a = -w2 * q - c * v
    T, beta = n * h, (n + 1) / (2 * n)
    q1, v1 = loop.zoh_step(q, v, lambda q_, v_: -w2 * q_ - c * v_, h, substeps=(n,))
    assert v1 == pytest.approx(v + T * a, rel=1e-12)
    assert q1 == pytest.approx(q + T * v + beta * T**2 * a, rel=1e-12)


@pytest.mark.parametrize('q, qd', [(None, 0.0), (0.0, None), ([0.0, None], 0.0), ('0.1', 0.0)])
def test_mit_torque_refuses_a_state_that_is_not_numbers_instead_of_reading_none_as_nan(q, qd):
    with pytest.raises(ValueError, match='must be a number or an array of numbers'):
        loop.mit_torque(JointCommand(stiffness=10.0), q, qd)
