"""Input checks shared by every config in physai, with one message format.

Each check raises ``ValueError('<name> must be <what is allowed>, got <value>')``, e.g.
``timestep must be in (0, 0.1] s, got 0``, and returns the value as a float where it is a number.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np


INTEGRATORS = ('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')
"""MuJoCo's integrators by their MJCF names (``<option integrator>``)."""

MAX_TIMESTEP = 0.1  # s


def is_real(value) -> bool:
    """A real number (int, float, NumPy scalar), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _isfinite(value) -> bool:
    """``math.isfinite`` that answers False, not OverflowError, for an int too large for a float (10**400)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _unit(unit: str) -> str:
    return f' {unit}' if unit else ''


def finite(name: str, value, unit: str = '') -> float:
    """A finite number."""
    if not (is_real(value) and _isfinite(value)):
        raise ValueError(f'{name} must be a finite number{_unit(unit)}, got {value!r}')
    return float(value)


def at_least(name: str, value, low: float, unit: str = '', *, strict: bool = False) -> float:
    """A finite number >= low (> low when ``strict``)."""
    ok = is_real(value) and _isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        sign = '>' if strict else '>='
        raise ValueError(f'{name} must be a finite number {sign} {low:g}{_unit(unit)}, got {value!r}')
    return float(value)


def positive(name: str, value, unit: str = '') -> float:
    """A finite number > 0."""
    return at_least(name, value, 0, unit, strict=True)


def nonnegative(name: str, value, unit: str = '') -> float:
    """A finite number >= 0."""
    return at_least(name, value, 0, unit)


def limit(name: str, value, unit: str = '') -> float:
    """A number > 0, where inf means no limit."""
    if not (is_real(value) and not math.isnan(value) and value > 0):
        raise ValueError(f'{name} must be > 0{_unit(unit)} (inf for no limit), got {value!r}')
    return float(value)


def timestep(value, name: str = 'timestep') -> float:
    """A physics step in (0, 0.1] s."""
    if not (is_real(value) and _isfinite(value) and 0 < value <= MAX_TIMESTEP):
        raise ValueError(f'{name} must be in (0, {MAX_TIMESTEP:g}] s, got {value!r}')
    return float(value)


def one_of(name: str, value, allowed: Sequence[str]) -> str:
    """One of the allowed names."""
    if value not in allowed:
        raise ValueError(f'{name} must be one of {", ".join(allowed)}, got {value!r}')
    return value


def integrator(value, name: str = 'integrator') -> str:
    """One of :data:`INTEGRATORS`."""
    return one_of(name, value, INTEGRATORS)


def whole(name: str, value, low: int = 0, high: int | None = None, unit: str = '') -> int:
    """A whole number (an int or a NumPy integer, not a bool) in [low, high] (no upper end when ``high`` is None)."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        where = f'>= {low:,}' if high is None else f'in [{low:,}, {high:,}]'
        raise ValueError(f'{name} must be a whole number {where}{_unit(unit)}, got {value!r}')
    return int(value)


def real_array(name: str, value, unit: str = '') -> np.ndarray:
    """A number or an array of numbers (ints or floats; NaN and infinities pass) as a float array.

    None, text, bools, complex numbers, a ragged list or anything else that NumPy would hold as objects is refused,
    where ``np.asarray(value, dtype=float)`` would have turned None into NaN.
    """
    try:
        array = np.asarray(value)
        if array.dtype == object and all(is_real(x) for x in array.ravel()):  # ints beyond int64 (10**30)
            array = array.astype(float)
    except (TypeError, ValueError, OverflowError):  # a ragged nesting, an int beyond any float (10**400)
        array = None
    if array is None or array.dtype.kind not in 'iuf':
        shown = repr(value)
        raise ValueError(f'{name} must be a number or an array of numbers{_unit(unit)}, got '
                         f'{shown if len(shown) <= 80 else shown[:77] + "..."}')
    return array.astype(float)


def rate(name: str, value, unit: str = '1/s'):
    """A rate per unit inertia (ω² = kp/I, a damping over I; a number or an array) >= 0, returned as given; inf
    stands for a value beyond floating point (kp/I overflowed: a step with it diverges), NaN is refused."""
    if is_real(value):  # the common case, without numpy: a step's checks run once a step
        ok = value >= 0  # False for NaN too
    else:
        ok = bool(np.all(real_array(name, value, unit) >= 0))
    if not ok:
        raise ValueError(f'{name} must be a number >= 0{_unit(unit)} (inf: beyond floating point), got {value!r}')
    return value


def gain(name: str, value, unit: str = ''):
    """A gain (kp, kv; a number or an array) that is finite and >= 0, returned as given (an infinite gain times a
    zero error is NaN)."""
    if is_real(value):  # the common case, without numpy: a PD law runs once a step
        ok = _isfinite(value) and value >= 0
    else:
        array = real_array(name, value, unit)
        ok = bool(np.all(np.isfinite(array) & (array >= 0)))
    if not ok:
        raise ValueError(f'{name} must be a finite number >= 0{_unit(unit)}, got {value!r}')
    return value


def distinct(name: str, values: Sequence) -> list:
    """Items that appear once each (joint names, say), as a list."""
    values = list(values)
    twice = list(dict.fromkeys(v for k, v in enumerate(values) if v in values[:k]))
    if twice:
        raise ValueError(f'{name} must hold each item once, got {", ".join(map(repr, twice))} more than once in '
                         f'{values!r}')
    return values
