"""A last-bit nudge of every simulation physai runs: how the book proves its stored numbers are robust.

MuJoCo gives the same bits on the same processor every time, but other processors (Colab's among them)
differ in the last bits of some operations, and chaotic motion or a flat fit can grow such a difference
into a visible one. To show that a stored output does not depend on those bits, set the environment variable
``PHYSAI_PERTURB`` to a small angle (rad), for example ``1e-12``: every simulation physai starts (step
responses, pendulum runs, the SO-101 holds and replays, the exercises' loops) then adds that angle to every
coordinate of its initial ``qpos`` before the first step. Unset or ``0`` leaves every run exactly as it was.

``make test`` runs the notebooks and the command-line tables once more with ``PHYSAI_PERTURB=1e-12`` and
checks that nothing they print moves (``tests/test_reproducible.py``).
"""

from __future__ import annotations

import math
import os

import numpy as np


ENV = 'PHYSAI_PERTURB'
"""The environment variable read by :func:`size`."""

MAX_SIZE = 1e-6
"""rad: the largest nudge accepted; anything larger would change the physics, not just its last bits."""


def size() -> float:
    """The nudge in rad from ``PHYSAI_PERTURB`` (0 when unset or empty), read at every call."""
    text = os.environ.get(ENV, '').strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f'{ENV} must be a number in [0, {MAX_SIZE:g}] rad, got {text!r}') from None
    if not (math.isfinite(value) and 0 <= value <= MAX_SIZE):
        raise ValueError(f'{ENV} must be a number in [0, {MAX_SIZE:g}] rad, got {text!r}')
    return value


def nudge(qpos: np.ndarray) -> None:
    """Add :func:`size` to every entry of ``qpos`` in place (a no-op when it is 0).

    Args:
      qpos: an initial state about to be simulated, (nq,) or (nsim, nq): ``MjData.qpos`` or ``Batch.qpos``.
        Every simulation gets the same nudge, so runs that started equal still start equal.
    """
    eps = size()
    if eps:
        qpos += eps
