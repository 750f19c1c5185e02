"""How a run moves at its end: one way (it creeps or drifts toward rest) or back and forth (it swings or chatters).

A panel's verdict on a run must follow from the run it labels. A run still moving when it ends is not yet a failure:
an overdamped servo creeps toward its command, a soft one drifts under gravity. One that turns back and forth is
swinging, and if it keeps doing so fast, chattering. :func:`reversals` counts the turns; chapter 1's and chapter 3's
verdicts read it (``book/_static/panels/laws.js`` mirrors it as ``reversals``).
"""

from __future__ import annotations

import numpy as np

from physai.laws import checks


def reversals(x, size: float = 0.0) -> int:
    """How many times ``x`` turns back by more than ``size``: a zigzag count with hysteresis.

    From the start the signal's running highest and lowest values are kept; once it has risen more than ``size``
    above its lowest it is going up (or down, once it has fallen more than ``size`` below its highest). While going up
    its highest value so far is the turning candidate; a fall of more than ``size`` below it is a reversal, and from
    there it is going down, and so on. A monotone signal has none, whatever ``size``; n half periods of a sine from a
    zero crossing, its swing wider than ``size``, turn at each of their n extremes. With ``size`` 0 every strict
    change of direction counts (equal neighbours do not).

    Args:
      x: (n,) samples, finite numbers.
      size: how far the signal must come back, strictly more, for a turn to count, >= 0 (the unit of ``x``).

    Returns:
      The number of reversals, >= 0.

    Raises:
      ValueError: ``x`` not a 1-D array of finite numbers, or ``size`` not a finite number >= 0.
    """
    values = checks.real_array('x', x)
    if values.ndim != 1 or not np.all(np.isfinite(values)):
        raise ValueError(f'x must be a 1-D array of finite numbers, got shape {values.shape}')
    size = checks.nonnegative('size', size)
    count, direction = 0, 0
    if values.size == 0:
        return 0
    high = low = float(values[0])
    for v in values[1:].tolist():
        if direction == 0:
            high, low = max(high, v), min(low, v)
            if v - low > size:
                direction, high = 1, v
            elif high - v > size:
                direction, low = -1, v
        elif direction > 0:
            if v > high:
                high = v
            elif high - v > size:
                count, direction, low = count + 1, -1, v
        else:
            if v < low:
                low = v
            elif v - low > size:
                count, direction, high = count + 1, 1, v
    return count
