"""Where the PD runs: in the control loop or in the physics step (chapter 3).

A joint command in the "MIT" form that hobby and quadruped motor drivers accept,
:class:`JointCommand` (position, velocity, stiffness, damping, effort, max effort), asks for the torque

    tau = stiffness * (position - q) + damping * (velocity - qd) + effort,   |tau| <= max_effort

with q, qd the joint's ``d.qpos`` / ``d.qvel`` (rad, rad/s) and tau the generalized force on its dof (N·m).
:class:`PDController` applies it to a MuJoCo model in one of two places (``BACKENDS``):

``'in-loop'`` (backend A, PD in the controller)
    At every controller tick compute tau from the state, clamp it, write it to ``d.qfrc_applied`` and let it
    stand for every physics step until the next tick (a zero-order hold). The joint's own actuator is
    silenced. The PD is then integrated *explicitly* with the controller period as its step: between ticks
    the torque does not see the joint move.

``'in-step'`` (backend B, PD in the physics step)
    At start-up turn the joint's actuator into a position servo: ``actuator_gaintype`` fixed,
    ``actuator_biastype`` affine, so that ``force = gainprm[0]*ctrl + biasprm[1]*length + biasprm[2]*velocity``
    with ``gainprm[0] = kp``, ``biasprm = (0, -kp, -kv)``: exactly ``<position kp kv>``. At every tick write
    kp, kv from the command's stiffness and damping and ``ctrl`` from its position. MuJoCo then evaluates the
    PD at every physics step, with kv inside the implicit integrators. The terms that are constant over a
    tick, ``damping * velocity + effort``, go to ``d.qfrc_applied`` (``feedforward='applied'``) or into the
    servo's constant bias ``biasprm[0]`` (``feedforward='in-clamp'``, the default). The clamp is the
    actuator's ``forcerange`` (narrowed to the command's max effort when that is smaller). A joint without an
    actuator falls back to ``'in-loop'`` with a warning.

    Why the default differs from the plain recipe: ``qfrc_applied`` is outside the actuator's clamp. While
    the arm moves, the servo's ``-kv*qd`` saturates at the forcerange but the applied ``+kv*velocity``
    does not, so the joint gets up to ``kv*|velocity|`` more torque than the motor could give and
    overshoots. A real motor clamps the whole MIT torque; ``biasprm[0]`` is constant over the tick as well,
    so MuJoCo clamps it with the PD and the two backends agree while moving too.

Either way the effort read back is ``qfrc_actuator + qfrc_applied`` at the joint's dof (N·m).

The rest of the module is the chapter's experiment on Menagerie's SO-101: hold a standby pose after a move,
physics at 1 kHz, a controller at 50 ... 1000 Hz, both backends (:func:`hold_responses`, batched on
``mujoco.batch.Batch``), and the stability bound that explains it (:func:`tick_growth`, built on
:func:`physai.sim.step_growth`: the controller tick is the step that integrates the PD explicitly).
Below the critical rate the in-loop chatter is a chaotic limit cycle, whose amplitude and tone on one run depend
on the last bits of its start: the ``pd-rate`` table therefore sums up ensembles of runs from starts a nanoradian
apart (:func:`hold_ensembles`), to the precision they support (:func:`physai.robust.series_125`).

Symbols and their MuJoCo fields:

======  ========================================================  =========
symbol  MuJoCo                                                    unit
======  ========================================================  =========
q, qd   ``d.qpos[jnt_qposadr]``, ``d.qvel[jnt_dofadr]``           rad, rad/s
kp      ``actuator_gainprm[0]`` = ``-actuator_biasprm[1]``        N·m/rad
kv      ``-actuator_biasprm[2]``                                  N·m·s/rad
I       the joint's diagonal of ``d.M`` (with ``dof_armature``)   kg·m²
h       ``m.opt.timestep``, the physics step                      s
T       1 / rate_hz, the controller tick                          s
======  ========================================================  =========
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.laws import checks
from physai.engine.hold import (ENSEMBLE_SIZE, HoldEnsemble, HoldParams, PHYSICS_TIMESTEP, SO101_ARMATURE, SO101_KP,
                                SO101_KV, SO101_MAX_EFFORT, STANDBY, _hold_model, _so101_base, hold_ensembles)
from physai.experiments.registry import experiment
from physai.laws.loop import BACKENDS, tick_pattern
from physai.laws.stability import integrator_growth


RATES_HZ = (50, 100, 200, 400, 1000)


def rate_ensembles(*, rates_hz: Sequence[float] = RATES_HZ, **overrides) -> list[HoldEnsemble]:
    """Both backends at every rate as ensembles (rate-major: rate 1 in-loop, rate 1 in-step, ...).

    The ensembles are deterministic, so the latest few are kept and shared (treat them as read-only).
    """
    return list(_rate_ensembles(tuple(rates_hz), tuple(sorted(overrides.items()))))


@functools.lru_cache(maxsize=4)
def _rate_ensembles(rates_hz: tuple, overrides: tuple) -> tuple[HoldEnsemble, ...]:
    params = [HoldParams(rate_hz=r, backend=b, **dict(overrides)) for r in rates_hz for b in BACKENDS]
    return tuple(hold_ensembles(params))


RATE_COLUMNS = (('rate_hz', '.0f'), ('backend', 's'), ('runs', 'd'), ('chattering', 'd'), ('p2p_rad', 'g'),
                ('p2p_low', 'g'), ('p2p_high', 'g'), ('chatter_hz', 's'))
"""The pd-rate table's columns (also the chapter's Break-it table)."""


def rate_rows(ensembles: Sequence[HoldEnsemble]) -> list[dict]:
    """The pd-rate table's rows from hold ensembles.

    Each row: ``runs`` and how many of them chatter; the worst joint's peak-to-peak ``p2p_rad`` as the
    ensemble's median on the 1-2-5 series, the range of its middle 95% (:attr:`HoldEnsemble.p2p_range`) widened
    to that series (``p2p_low`` ... ``p2p_high``),
    or the bound ``< 1e-09`` when every run is still; ``chatter_hz`` as :attr:`HoldEnsemble.tone` (text: a
    band such as ``'5-10'``, ``'broadband'``, or None when still).
    """
    return [e.row() for e in ensembles]


@experiment('pd-rate', summary=f'SO-101 hold, {ENSEMBLE_SIZE} runs per row: worst joint p2p and chatter vs '
                               'controller rate, PD in-loop or in-step',
            columns=RATE_COLUMNS)
def pd_rate() -> list[dict]:
    return rate_rows(rate_ensembles())


def standby_inertia(armature: float = SO101_ARMATURE) -> np.ndarray:
    """Each SO-101 joint's diagonal of the mass matrix at ``STANDBY``, (6,) kg·m² (armature included)."""
    return _standby_link_inertia() + armature  # armature adds to the diagonal only


@functools.cache
def _standby_link_inertia() -> np.ndarray:
    m = copy.copy(_hold_model('in-step', SO101_KP, SO101_KV, 0.0, PHYSICS_TIMESTEP, 'implicitfast',
                              SO101_MAX_EFFORT))
    d = mujoco.MjData(m)
    d.qpos[:] = STANDBY
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return np.diag(full)


def worst_growth(*, rate_hz: float, backend: str, kp: float = SO101_KP, kv: float = SO101_KV,
                 armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
                 integrator: str = 'implicitfast', damping: float | None = None) -> float:
    """The largest :func:`tick_growth` over the SO-101's joints at ``STANDBY`` (joint damping from the model)."""
    return float(growth_curve([rate_hz], backend=backend, kp=kp, kv=kv, armature=armature,
                              timestep=timestep, integrator=integrator, damping=damping)[0])


def growth_curve(rates_hz: Sequence[float], *, backend: str, kp: float = SO101_KP, kv: float = SO101_KV,
                 armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
                 integrator: str = 'implicitfast', damping: float | None = None) -> np.ndarray:
    """:func:`worst_growth` at many controller rates at once, (nrate,): what the panel's stability plot draws.

    The same linear maps as :func:`tick_growth`, built as matrices for all six joints together instead of
    stepping :func:`zoh_step` on unit vectors: one physics step with the PD acceleration a held is linear
    in (q, v, a), ``S = [[1, h/(1 + h*c_joint), h²/(1 + h*c_joint)], [0, 1/(1 + h*c_joint), h/(1 + h*c_joint)],
    [0, 0, 1]]``; a tick of n steps is ``S^n`` applied to ``(q, v, -w2*q - c*v)``, and the ticks of
    :func:`tick_pattern` are multiplied in order (renormalized as they go, so no product overflows).
    Agrees with :func:`tick_growth` to rounding (``tests/test_control.py``).

    Args:
      rates_hz: controller rates, Hz, (nrate,).
      backend, kp, kv, armature, timestep, integrator, damping: as :func:`worst_growth`.

    Returns:
      The worst joint's growth per tick at each rate, (nrate,).
    """
    checks.one_of('backend', backend, BACKENDS)
    checks.integrator(integrator)
    if damping is None:
        damping = float(_so101_base().dof_damping[0])
    inertia = standby_inertia(armature)  # (6,)
    w2, c_pd, c_joint = kp / inertia, kv / inertia, damping / inertia
    h = timestep
    patterns = [tick_pattern(r, h) for r in rates_hz]
    if backend == 'in-step':
        per_step = max(integrator_growth(integrator, h, a, b + cj, c_joint=cj)
                       for a, b, cj in zip(w2, c_pd, c_joint))
        exponents = np.array([sum(p) / len(p) for p in patterns])
        with np.errstate(over='ignore'):  # a growth too large for a float saturates to inf: diverged
            return np.power(np.float64(per_step), exponents)
    nj = len(inertia)
    damp = 1.0 / (1.0 + h * c_joint)
    step = np.zeros((nj, 3, 3))
    step[:, 0, 0] = 1.0
    step[:, 0, 1] = h * damp
    step[:, 0, 2] = h * h * damp
    step[:, 1, 1] = damp
    step[:, 1, 2] = h * damp
    step[:, 2, 2] = 1.0
    hold = np.zeros((nj, 3, 2))  # (q, v) -> (q, v, a) at the tick
    hold[:, 0, 0] = hold[:, 1, 1] = 1.0
    hold[:, 2, 0], hold[:, 2, 1] = -w2, -c_pd
    tick_maps: dict[int, np.ndarray] = {}
    out = np.empty(len(patterns))
    for i, pattern in enumerate(patterns):
        product = np.broadcast_to(np.eye(2), (nj, 2, 2))
        log_scale = np.zeros(nj)
        for n in pattern:
            if n not in tick_maps:
                tick_maps[n] = (np.linalg.matrix_power(step, n) @ hold)[:, :2, :]
            product = tick_maps[n] @ product
            scale = np.max(np.abs(product), axis=(1, 2))
            scale = np.where(scale > 0, scale, 1.0)
            product = product / scale[:, None, None]
            log_scale += np.log(scale)
        radius = np.max(np.abs(np.linalg.eigvals(product)), axis=1)
        with np.errstate(divide='ignore', over='ignore'):  # 0 and inf saturate: never an exception
            out[i] = np.max(np.exp((log_scale + np.log(radius)) / len(pattern)))
    return out
