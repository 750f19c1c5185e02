"""Robust figures: numbers printed only to the precision that survives a last-bit change in the simulation.

Three kinds of quantity need more than a format string (see DESIGN.md, "Reproducible anywhere"):

- **Round-off.** Two computations that agree to rounding differ by 1e-17 on one processor and 3e-16 on
  another. Print the bound they satisfy, not the raw difference: :func:`roundoff_bound`.
- **Chaos.** A limit cycle's amplitude or tone on one run is one draw from a distribution. Print a summary of
  an ensemble of runs from slightly perturbed starts, to the digits the ensemble supports: :func:`ensemble`.
- **Fits.** A fit's parameters are known to the spread of its starts and folds, not to its last digit:
  :func:`round_sig`, with the digits chosen from that spread.

An ensemble's median or range is printed on the 1-2-5 series (:func:`series_125`), one significant digit coarse
enough that it does not move from one draw of the ensemble to the next.

Inputs count too: a grid that goes into a stored output (a panel's kp axis, its controller rates) is built with
:func:`log_grid`, whose values are rounded at the source, so the stored numbers are the same on every processor.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable

import numpy as np


def _real(value) -> bool:
    """A real number (int, float, NumPy scalar), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite(name: str, value) -> float:
    if not (_real(value) and math.isfinite(value)):
        raise ValueError(f'{name} must be a finite number, got {value!r}')
    return float(value)


ROUNDOFF_FLOOR = 1e-12
"""The smallest bound :func:`roundoff_bound` reports: differences below it are rounding, on any processor."""


def roundoff_bound(value: float, floor: float = ROUNDOFF_FLOOR) -> float:
    """The power of ten that bounds ``|value|`` from above, and at least ``floor``.

    ``roundoff_bound(2.2e-16) == 1e-12`` (the floor); ``roundoff_bound(7.3e-05) == 1e-04``. Print it as "agrees
    to better than 1e-12 rad": unlike the raw difference, the bound is the same on every processor (unless the
    difference sits right at a power of ten, which a real round-off difference does not).

    Raises:
      ValueError: ``value`` is not a finite number, or ``floor`` is not a positive finite number.
    """
    _finite('value', value)
    if not (_real(floor) and math.isfinite(floor) and floor > 0):
        raise ValueError(f'floor must be a finite number > 0, got {floor!r}')
    magnitude = abs(float(value))
    if magnitude <= floor:
        return floor
    return 10.0 ** math.ceil(math.log10(magnitude))


class Below(float):
    """A round-off bound: a float (JSON and arithmetic see the bound) that prints as ``< 1e-12``.

    Any format spec gives the same text, so a table column or an f-string shows the bound, not digits.
    """

    def __format__(self, spec: str) -> str:
        return f'< {float(self):.0e}'

    def __repr__(self) -> str:
        return float.__repr__(self)


def roundoff(value: float, floor: float = ROUNDOFF_FLOOR) -> Below:
    """:func:`roundoff_bound` as a :class:`Below`, for a table cell that shows a round-off agreement."""
    return Below(roundoff_bound(value, floor))


ROUNDING_BELOW = 1e-9
"""A difference below this between two computations of the same physics is rounding (see :func:`difference`)."""


def difference(value: float) -> float:
    """A difference as a table shows it: a :class:`Below` bound when it is rounding, the value otherwise.

    Below ``ROUNDING_BELOW`` the difference between two computations of the same physics is rounding, whose digits
    depend on the processor: it becomes ``roundoff(value)``. Above it, it is a real difference and stays as is.

    Raises:
      ValueError: ``value`` is not a finite number (a NaN difference is no figure to print).
    """
    value = _finite('value', value)
    return roundoff(value) if abs(value) < ROUNDING_BELOW else value


def round_sig(value: float, digits: int) -> float:
    """``value`` rounded to ``digits`` significant digits (0 stays 0; NaN and infinities pass through).

    Raises:
      ValueError: ``value`` not a real number, or ``digits`` not a whole number >= 1.
    """
    if not (isinstance(digits, numbers.Integral) and not isinstance(digits, bool) and digits >= 1):
        raise ValueError(f'digits must be an integer >= 1, got {digits!r}')
    if not _real(value):
        raise ValueError(f'value must be a real number (NaN and infinities pass through), got {value!r}')
    if value == 0 or not math.isfinite(value):
        return value
    return round(float(value), digits - 1 - math.floor(math.log10(abs(value))))


MAX_GRID = 100_000
"""The most values :func:`log_grid` makes (a grid is an input to a table or a panel, never a bulk array)."""


def log_grid(start: float, stop: float, num: int, digits: int = 3) -> tuple[float, ...]:
    """``num`` values spaced evenly in log from ``start`` to ``stop``, each rounded to ``digits`` significant digits.

    ``np.geomspace`` calls ``pow``, whose last bit differs from one processor to another (numpy picks its SIMD path
    by CPU): ``np.geomspace(1, 30000, 25)[12]`` prints ``173.20508075688772`` on one machine and may print a last
    digit more or less on another, and a stored output that embeds it would then differ. Rounded to ``digits``
    significant digits (173.0 here) the grid is the same everywhere, unless a raw value lay within a few units in
    the last place of a rounding boundary (``tests/test_robust.py`` checks the book's grids are far from one).

    Raises:
      ValueError: ``start`` or ``stop`` not a finite number > 0, ``stop <= start``, ``num`` not a whole number in
        [2, ``MAX_GRID``], ``digits`` not a whole number in [1, 17], or rounding merged two neighbours (ask for
        fewer values or more digits).
    """
    for name, value in (('start', start), ('stop', stop)):
        if not (_real(value) and math.isfinite(value) and value > 0):
            raise ValueError(f'{name} must be a finite number > 0, got {value!r}')
    if not stop > start:
        raise ValueError(f'stop must be greater than start ({start!r}), got {stop!r}')
    if not (isinstance(num, numbers.Integral) and not isinstance(num, bool) and 2 <= num <= MAX_GRID):
        raise ValueError(f'num must be a whole number in [2, {MAX_GRID:,}], got {num!r}')
    if not (isinstance(digits, numbers.Integral) and not isinstance(digits, bool) and 1 <= digits <= 17):
        raise ValueError(f'digits must be a whole number in [1, 17] (a float holds 17 significant digits), got '
                         f'{digits!r}')
    grid = tuple(round_sig(float(x), digits) for x in np.geomspace(start, stop, num))
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ValueError(f'{num} values from {start!r} to {stop!r} at {digits} significant digits repeat a value: '
                         f'ask for fewer values or more digits')
    return grid


def series_125(value: float, how: str = 'nearest') -> float:
    """``value`` on the 1-2-5 series (..., 0.1, 0.2, 0.5, 1, 2, 5, ...): nearest in ratio, or next ``'down'``/``'up'``.

    An ensemble's median or range moves from one draw of the ensemble to the next; one significant digit on the
    1-2-5 series is coarse enough that the printed figure does not (``tests/test_where_pd_runs.py`` checks it on the
    SO-101's chatter).
    """
    if not (_real(value) and math.isfinite(value) and value > 0):
        raise ValueError(f'value must be a finite number > 0, got {value!r}')
    if how not in ('nearest', 'down', 'up'):
        raise ValueError(f"how must be one of nearest, down, up, got {how!r}")
    decade = 10.0 ** math.floor(math.log10(value))
    ladder = [v for v in (decade * m for m in (1, 2, 5, 10)) if math.isfinite(v)]  # 2e308 is beyond a float
    if how == 'up' and not any(v >= value * (1 - 1e-12) for v in ladder):
        raise ValueError(f'value must have a 1-2-5 value above it within floating point, got {value!r}')
    if how == 'nearest':
        best = min(ladder, key=lambda v: abs(math.log(value / v)))
    elif how == 'down':
        best = max(v for v in ladder if v <= value * (1 + 1e-12))
    else:
        best = min(v for v in ladder if v >= value * (1 - 1e-12))
    return float(f'{best:.1g}')


@dataclasses.dataclass(frozen=True)
class Ensemble:
    """A summary of one quantity over an ensemble of runs from slightly different starts."""

    median: float
    """The median over the runs."""
    low: float
    """The smallest value."""
    high: float
    """The largest value."""
    n: int
    """The number of runs."""

    def __post_init__(self):
        for name in ('median', 'low', 'high'):
            _finite(name, getattr(self, name))
        if not self.low <= self.median <= self.high:
            raise ValueError(f'low <= median <= high must hold, got {self.low!r}, {self.median!r}, {self.high!r}')
        if not (isinstance(self.n, numbers.Integral) and not isinstance(self.n, bool) and self.n >= 1):
            raise ValueError(f'n must be a whole number of runs >= 1, got {self.n!r}')

    def rounded(self, digits: int = 1) -> 'Ensemble':
        """The same summary with each figure rounded to ``digits`` significant digits."""
        return Ensemble(round_sig(self.median, digits), round_sig(self.low, digits),
                        round_sig(self.high, digits), self.n)


def ensemble(values: Iterable[float]) -> Ensemble:
    """Median, smallest and largest of ``values`` (finite numbers, at least one), (n,)."""
    x = np.asarray(list(values), dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f'values must be one or more finite numbers, got {x.tolist()!r}')
    return Ensemble(float(np.median(x)), float(x.min()), float(x.max()), int(x.size))
