"""The plumbing every runner shares: integrators by name, MuJoCo's warnings, divergence, servos on a compiled model.

- :data:`INTEGRATOR_ENUM`: MJCF integrator names to ``mjtIntegrator``.
- :func:`captured_warnings`: while physai runs its own simulations, MuJoCo's warning text is kept in
  :data:`WARNINGS` instead of printed; the handler that was there before is put back afterwards, so a reader's own
  ``mj_step`` loop in the same notebook prints MuJoCo's warnings as usual.
- :func:`diverged`: the package's one divergence rule, used by every runner; :func:`warned` reads MuJoCo's own
  verdict (its bad position, velocity, acceleration and control warnings) from a run's data.
- :func:`set_position_servo`, :func:`set_armature`: write ``<position kp kv forcerange>`` gains and joint armature
  into a compiled model (then the constants that follow armature), without recompiling.
- :data:`MAX_STEPS`, :data:`MAX_TOTAL_STEPS`: the limits that keep a run from hanging the machine.
- :func:`rollout`: ``mujoco.batch.Batch.rollout`` with Ctrl-C held until the rollout returns
  (:func:`deferred_interrupt`), so that an interrupt is never lost inside MuJoCo.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
from collections.abc import Iterator

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
"""MuJoCo's integrators by their MJCF names (``<option integrator>``), as ``mjtIntegrator`` values."""

MAX_STEPS = 1_000_000
"""Physics steps one run may take (duration / timestep): 3 s at 3 µs; beyond it is an error, not a hang."""
MAX_TOTAL_STEPS = 50_000_000
"""Physics steps one batch may take over all its runs (about 400 MB of recorded angles)."""

SPEED_BOUND = 1e3
"""rad/s: a joint faster than this has run away (a hinge that may turn freely is judged by speed, not angle)."""

BADQACC = mujoco.mjtWarning.mjWARN_BADQACC
BLOWUP_WARNINGS = tuple(int(w) for w in (mujoco.mjtWarning.mjWARN_BADQPOS, mujoco.mjtWarning.mjWARN_BADQVEL,
                                          BADQACC, mujoco.mjtWarning.mjWARN_BADCTRL))
"""MuJoCo's warnings that a run blew up (``mj_checkPos``, ``mj_checkVel``, ``mj_checkAcc`` in ``engine_forward.c``:
a NaN, an infinity or a value above ``mjMAXVAL`` = 1e10 in ``qpos``, ``qvel`` or ``qacc`` resets the simulation to
its start; the same in ``ctrl`` zeroes every control of that step, ``mj_fwdActuation``). After any of them the
record goes on as if nothing happened (a reset arm, a servo without its command), so each one is a divergence. The
page's live panels read this same list (``physai.interface.web.engine_block``)."""


# ------------------------------------------------------------------------------------------------
# divergence


def diverged(q=None, *, v=None, warned: bool = False) -> bool:
    """The package's one divergence rule.

    A run diverged when MuJoCo warned that it blew up (:func:`warned`: a bad position, velocity or acceleration,
    after which MuJoCo resets the simulation so the record can look finite afterwards, or a bad control, which
    MuJoCo zeroes), when a recorded state is not finite, when an angle passes ``DIVERGED_BOUND``
    (20π rad, ten turns: a joint held by a servo never gets there) or a speed passes :data:`SPEED_BOUND`.
    Give the angles of joints a servo holds as ``q``; a joint that may turn freely (chapter 2's pendulum) gives
    its speeds as ``v`` only.

    Args:
      q: recorded joint angles, rad, any shape, or None.
      v: recorded joint speeds, rad/s, any shape, or None.
      warned: whether one of :data:`BLOWUP_WARNINGS` counted during the run (:func:`warned`).
    """
    if warned:
        return True
    if q is not None:
        q = np.asarray(q, dtype=float)
        if not np.all(np.isfinite(q)) or np.any(np.abs(q) > DIVERGED_BOUND):
            return True
    if v is not None:
        v = np.asarray(v, dtype=float)
        if not np.all(np.isfinite(v)) or np.any(np.abs(v) > SPEED_BOUND):
            return True
    return False


def runaway(v: float) -> bool:
    """One speed sample that :func:`diverged` would flag: not finite, or faster than :data:`SPEED_BOUND`."""
    return not math.isfinite(v) or abs(v) > SPEED_BOUND


def warned(data) -> bool | np.ndarray:
    """Whether MuJoCo warned that the run blew up (any of :data:`BLOWUP_WARNINGS`): for an ``MjData`` a bool, for a
    ``mujoco.batch.Batch`` (n,) bools."""
    if isinstance(data, mujoco.MjData):
        return blew_up(data.warning.number)
    return data.warning[:, list(BLOWUP_WARNINGS), 1].sum(axis=1) > 0


def blew_up(counters: np.ndarray) -> bool:
    """Whether any of :data:`BLOWUP_WARNINGS` counted, from an ``MjData``'s ``warning.number`` ((mjNWARNING,) ints)."""
    return bool(counters[list(BLOWUP_WARNINGS)].any())


# ------------------------------------------------------------------------------------------------
# MuJoCo's warnings

WARNINGS: list[str] = []
"""The latest MuJoCo warnings (at most 20) raised inside :func:`captured_warnings`."""


def _keep_warning(message: str) -> None:
    WARNINGS.append(message)
    del WARNINGS[:-20]


_capture = {'lock': threading.Lock(), 'depth': 0, 'before': None}
"""MuJoCo's warning handler is one per process: the blocks of :func:`captured_warnings` that are open at once (a live
panel computes its map on a worker thread while a slider reruns the step response) share one capture, set by the
first to open and restored by the last to close."""


@contextlib.contextmanager
def captured_warnings() -> Iterator[list[str]]:
    """Keep MuJoCo's warning text in :data:`WARNINGS` instead of printing it, for the duration of the block.

    physai reads a diverged run from MuJoCo's warning counters and reports it as a result, so the printed text would
    only repeat it. The handler that was set before (None: MuJoCo's own printing) is restored when the last open
    block closes: blocks may nest and may be open on several threads at once.
    """
    with _capture['lock']:
        if _capture['depth'] == 0:
            _capture['before'] = mujoco.get_mju_user_warning()
            mujoco.set_mju_user_warning(_keep_warning)
        _capture['depth'] += 1
    try:
        yield WARNINGS
    finally:
        with _capture['lock']:
            _capture['depth'] -= 1
            if _capture['depth'] == 0:
                mujoco.set_mju_user_warning(_capture['before'])
                _capture['before'] = None


# ------------------------------------------------------------------------------------------------
# Ctrl-C around MuJoCo's rollouts


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) while the block runs, then deliver it: once the block ends, the handler that was there
    (Python's: a ``KeyboardInterrupt``) runs as if the signal had arrived then.

    An interrupt that arrives while a MuJoCo rollout runs in C++ could be lost: the command carried on, exited 0 and
    wrote its files (issue 37; reproduced with ``mujoco.rollout`` alone). Here Python's own handler for SIGINT only
    records the signal, so nothing that runs inside the rollout can swallow a ``KeyboardInterrupt``; the rollout
    finishes (a batch is seconds at most) and the interrupt is raised right after it. Outside the main thread, or
    when SIGINT is ignored or not handled in Python, the block runs as it is.
    """
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous):
        yield
        return
    caught = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        previous(signal.SIGINT, caught[0])


def rollout(batch, *args, **kwargs) -> dict:
    """``batch.rollout(*args, **kwargs)`` (``mujoco.batch.Batch.rollout``) under :func:`deferred_interrupt`."""
    with deferred_interrupt():
        return batch.rollout(*args, **kwargs)


# ------------------------------------------------------------------------------------------------
# servos and armature on a compiled model


def set_position_servo(m: mujoco.MjModel, kp: float, kv: float, forcerange: float | tuple | None = None,
                       actuators=slice(None)) -> None:
    """Make ``actuators`` of the compiled model ``<position kp kv forcerange>`` servos, in place.

    Writes gain type fixed, bias type affine, ``gainprm[0] = kp``, ``biasprm[:3] = (0, -kp, -kv)`` and the force
    clamp: ``forcerange`` a number F for ±F N·m, a (low, high) pair, or None for no clamp. Nothing is recompiled
    (a position servo's gains enter no compiled constant).
    """
    m.actuator_gaintype[actuators] = mujoco.mjtGain.mjGAIN_FIXED
    m.actuator_biastype[actuators] = mujoco.mjtBias.mjBIAS_AFFINE
    m.actuator_gainprm[actuators, 0] = kp
    m.actuator_biasprm[actuators, :3] = (0.0, -kp, -kv)
    if forcerange is None:
        m.actuator_forcelimited[actuators] = 0
        return
    low, high = (-forcerange, forcerange) if np.ndim(forcerange) == 0 else forcerange
    m.actuator_forcelimited[actuators] = 1
    m.actuator_forcerange[actuators] = (low, high)


def set_armature(m: mujoco.MjModel, armature: float, dofs=slice(None), data: mujoco.MjData | None = None) -> None:
    """Set the armature (kg·m²) of ``dofs``, then recompute the constants that depend on it (``mj_setConst``:
    ``dof_invweight0``, which scales the friction-loss constraint). Call it after every other edit of the model's
    inertia, damping or options; ``data`` is scratch for ``mj_setConst`` (a new ``MjData`` if None)."""
    m.dof_armature[dofs] = armature
    mujoco.mj_setConst(m, mujoco.MjData(m) if data is None else data)
