"""The shared input checks: every message names the parameter, what is allowed and what came in."""

import math

import numpy as np
import pytest

from physai.engine import mj
from physai.laws import checks


@pytest.mark.parametrize('call, message', [
    (lambda: checks.positive('kp', 0, 'N·m/rad'), 'kp must be a finite number > 0 N·m/rad, got 0'),
    (lambda: checks.positive('kp', math.inf, 'N·m/rad'), 'kp must be a finite number > 0 N·m/rad, got inf'),
    (lambda: checks.nonnegative('dampratio', -1), 'dampratio must be a finite number >= 0, got -1'),
    (lambda: checks.nonnegative('armature', True, 'kg·m²'), 'armature must be a finite number >= 0 kg·m², got True'),
    (lambda: checks.finite('effort', math.nan, 'N·m'), 'effort must be a finite number N·m, got nan'),
    (lambda: checks.limit('effort_limit', 0, 'N·m'), r'effort_limit must be > 0 N·m \(inf for no limit\), got 0'),
    (lambda: checks.timestep(0), r'timestep must be in \(0, 0.1\] s, got 0'),
    (lambda: checks.timestep(math.nan), r'timestep must be in \(0, 0.1\] s, got nan'),
    (lambda: checks.timestep(0.2), r'timestep must be in \(0, 0.1\] s, got 0.2'),
    (lambda: checks.integrator('rk4'),
     "integrator must be one of Euler, RK4, implicit, implicitfast, discrete, got 'rk4'"),
])
def test_bad_values_are_named_with_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_good_values_pass_through_as_floats():
    assert checks.positive('kp', np.float32(2.5)) == 2.5
    assert checks.nonnegative('armature', 0) == 0.0
    assert checks.limit('effort_limit', math.inf) == math.inf
    assert checks.timestep(0.1) == 0.1
    assert checks.integrator('discrete') == 'discrete'


def test_every_integrator_name_maps_to_mujoco():
    assert set(mj.INTEGRATOR_ENUM) == set(checks.INTEGRATORS)


def test_an_int_too_large_for_a_float_is_refused_not_an_overflow():
    """math.isfinite(10**400) raises OverflowError; the checks answer with their usual ValueError."""
    with pytest.raises(ValueError, match='kp must be a finite number > 0'):
        checks.positive('kp', 10**400)
    with pytest.raises(ValueError, match='timestep must be in'):
        checks.timestep(10**400)


@pytest.mark.parametrize('value, ok', [(0, True), (5, True), (np.int64(7), True), (-1, False), (11, False),
                                       (1.0, False), (True, False), (None, False), (10**30, False)])
def test_whole_takes_only_integers_in_range(value, ok):
    if ok:
        assert checks.whole('n', value, 0, 10) == value
    else:
        with pytest.raises(ValueError, match=r'n must be a whole number in \[0, 10\]'):
            checks.whole('n', value, 0, 10)


@pytest.mark.parametrize('value', [None, 'abc', [1.0, None], True, [True, False], 1 + 2j, [[1.0], [1.0, 2.0]],
                                   10**400, {'q': 1.0}])
def test_real_array_refuses_what_numpy_would_turn_into_nan_or_objects(value):
    with pytest.raises(ValueError, match=r'q must be a number or an array of numbers rad, got'):
        checks.real_array('q', value, 'rad')


def test_real_array_passes_numbers_nan_and_infinity_as_floats():
    out = checks.real_array('q', [1, 2.5, math.nan, -math.inf])
    assert out.dtype == np.float64 and out[0] == 1.0 and math.isnan(out[2]) and out[3] == -math.inf


def test_distinct_names_every_repeated_item_once():
    assert checks.distinct('joints', ('a', 'b')) == ['a', 'b']
    with pytest.raises(ValueError, match=r"joints must hold each item once, got 'a', 'b' more than once in "):
        checks.distinct('joints', ['a', 'b', 'a', 'b', 'a'])
