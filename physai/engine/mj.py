"""Input checks shared by every config in physai, with one message format.

Each check raises ``ValueError('<name> must be <what is allowed>, got <value>')``, e.g.
``timestep must be in (0, 0.1] s, got 0``, and returns the value as a float where it is a number.
"""

from __future__ import annotations

import mujoco
import numpy as np

from physai.laws.sim import DIVERGED_BOUND


INTEGRATOR_ENUM = {
    'Euler': mujoco.mjtIntegrator.mjINT_EULER,
    'RK4': mujoco.mjtIntegrator.mjINT_RK4,
    'implicit': mujoco.mjtIntegrator.mjINT_IMPLICIT,
    'implicitfast': mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    'discrete': mujoco.mjtIntegrator.mjINT_DISCRETE,
}

MAX_STEPS = 1_000_000
"""Physics steps one run may take (duration / timestep): 3 s at 3 µs; beyond it is an error, not a hang."""

MAX_TOTAL_STEPS = 50_000_000
"""Physics steps one batch may take over all its runs (about 400 MB of recorded angles)."""


def diverged(q: np.ndarray, bad_qacc: bool = False) -> bool:
    """The package's one divergence rule: MuJoCo's bad-acceleration warning fired (it then resets the
    simulation, so the record can look finite afterwards), a non-finite angle, or ``|q| > DIVERGED_BOUND``.

    Args:
      q: (n, ...) recorded joint angles, rad.
      bad_qacc: whether ``mjWARN_BADQACC`` counted a warning during the run.
    """
    q = np.asarray(q, dtype=float)
    return bool(bad_qacc or not np.all(np.isfinite(q)) or np.any(np.abs(q) > DIVERGED_BOUND))


# MuJoCo prints a warning when it resets a diverged simulation. Here a diverged run is a result that
# step_responses reads from the warning counters, so the text is kept (the latest few) instead of printed.
WARNINGS: list[str] = []


def _keep_warning(message: str) -> None:
    WARNINGS.append(message)
    del WARNINGS[:-20]
