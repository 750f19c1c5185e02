"""Chapter 3's experiments: where the PD runs, in the controller or in the physics step, on Menagerie's SO-101.

The arm holds a standby pose after a move, physics at 1 kHz, a controller at 50 ... 1000 Hz, both backends
(:mod:`physai.engine.hold`). Below the critical rate the in-loop chatter is a chaotic limit cycle, whose amplitude
and tone on one run depend on the last bits of its start: the ``pd-rate`` table therefore sums up ensembles of runs
from starts a nanoradian apart (:func:`rate_ensembles`), to the precision they support
(:func:`physai.laws.robust.series_125`). The growth per controller tick (:func:`growth_curve`, :func:`worst_growth`,
built on :func:`physai.laws.loop.tick_growth`) explains it.

The analysis behind the chapter's growth table is here too, each table a named experiment: ``pd-growth``
(:func:`growth_rows`: the two margins of the held tick, :func:`zoh_margins`, beside both growths), ``pd-cause`` and
``pd-implicit-kv``, ``pd-explicit-kv`` (:func:`cause_rows`, :func:`implicit_kv_ensembles`, :func:`explicit_kv_ensembles`:
which of the in-loop PD's two flaws, the hold or the explicit kv, makes it chatter, on the growth per tick and in
MuJoCo, each flaw alone), and Break it B's two feed-forward designs
(:func:`position_only_difference`, :func:`clamp_damping_rows`). The first exercise, the critical rate, is
:mod:`physai.experiments.critical_rate`. The growth figures are linear algebra on the model at ``STANDBY``, with no
simulation start to nudge; MuJoCo's runs are summed up by what every run of an ensemble shares. Symbols as in
:mod:`physai.laws.loop`.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.laws import checks, robust
from physai.engine.hold import (ENSEMBLE_SIZE, HoldEnsemble, HoldParams, PHYSICS_TIMESTEP, SO101_ARMATURE, SO101_KP,
                                SO101_KV, SO101_FORCERANGE, STANDBY, shared_hold_model, so101_base, hold_ensembles)
from physai.experiments.registry import experiment
from physai.engine import hold
from physai.engine.pd_controller import PDController
from physai.laws.loop import BACKENDS, FEEDFORWARD, JointCommand, flaw_growth, tick_pattern
from physai.laws.stability import integrator_growth


RATES_HZ = (50, 100, 200, 400, 1000)


def checked_rates(name: str, rates_hz: Sequence[float]) -> tuple[float, ...]:
    """Controller rates, each a finite number > 0 Hz, at least one, strictly increasing."""
    rates = tuple(checks.positive(f'{name}[{i}]', r, 'Hz') for i, r in enumerate(rates_hz))
    if not rates:
        raise ValueError(f'{name} must hold at least one rate in Hz, got {list(rates_hz)!r}')
    if any(b <= a for a, b in zip(rates[:-1], rates[1:])):
        raise ValueError(f'{name} must be strictly increasing, got {list(rates)!r} Hz')
    return rates


def joint_damping(damping: float | None) -> float:
    """The joints' ``dof_damping``, N·m·s/rad: Menagerie's SO-101 value when ``damping`` is None, else ``damping``
    checked to be >= 0."""
    if damping is None:
        return float(so101_base().dof_damping[0])
    return checks.nonnegative('damping', damping, 'N·m·s/rad')


def rate_ensembles(*, rates_hz: Sequence[float] = RATES_HZ, **overrides) -> list[HoldEnsemble]:
    """Both backends at every rate as ensembles (rate-major: rate 1 in-loop, rate 1 in-step, ...).

    The ensembles are deterministic, so the latest few are kept and shared (treat them as read-only).
    """
    return list(_rate_ensembles(tuple(rates_hz), tuple(sorted(overrides.items()))))


@functools.lru_cache(maxsize=4)
def _rate_ensembles(rates_hz: tuple, overrides: tuple) -> tuple[HoldEnsemble, ...]:
    params = [HoldParams(rate_hz=r, backend=b, **dict(overrides)) for r in rates_hz for b in BACKENDS]
    return tuple(hold_ensembles(params))


RATE_COLUMNS = (('rate_hz', '.0f'), ('backend', 's'), ('runs', 'd'), ('chattering', 'd'), ('p2p_deg', 'g'),
                ('p2p_low', 'g'), ('p2p_high', 'g'), ('chatter_hz', 's'))
"""The pd-rate table's columns (also the chapter's Break-it table)."""


def rate_rows(ensembles: Sequence[HoldEnsemble]) -> list[dict]:
    """The pd-rate table's rows from hold ensembles.

    Each row: ``runs`` and how many of them chatter; the worst joint's peak-to-peak ``p2p_deg`` as the
    ensemble's median on the 1-2-5 series in radians, the range of its middle 95% (:attr:`HoldEnsemble.p2p_range`)
    widened to that series (``p2p_low`` ... ``p2p_high``), each in degrees to two digits
    (:func:`physai.engine.hold.p2p_deg`: 0.2 rad is 11), or the bound ``< 1e-07`` (degrees) when every run is
    still; ``chatter_hz`` as :attr:`HoldEnsemble.tone` (text: a band such as ``'5-10'``, ``'broadband'``, or None
    when still).
    """
    return [e.row_deg() for e in ensembles]


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
    m = copy.copy(shared_hold_model('in-step', SO101_KP, SO101_KV, 0.0, PHYSICS_TIMESTEP, 'implicitfast',
                              SO101_FORCERANGE))
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
    :func:`tick_pattern` are multiplied in order (renormalized as they go, so no product overflows), tick j of
    every rate's pattern in one stacked product. Agrees with :func:`tick_growth` to rounding
    (``tests/test_where_pd_runs.py``).

    A rate above the physics rate ``1/timestep`` is drawn at the physics rate: a controller that asks for more ticks
    than there are physics steps ticks at every step (:func:`physai.laws.loop.tick_mask`, as the hold runs it), so its
    growth per tick is the growth per physics step.

    Args:
      rates_hz: controller rates, Hz, (nrate,).
      backend, kp, kv, armature, timestep, integrator, damping: as :func:`worst_growth`.

    Returns:
      The worst joint's growth per tick at each rate, (nrate,); ``inf`` where it is beyond floating point
      (diverged), never an OverflowError.

    Raises:
      ValueError: a rate not > 0 Hz or slower than :func:`tick_pattern` allows, kp, kv, armature or damping not a
        finite number >= 0, a timestep outside (0, 0.1] s, an unknown backend or integrator.
    """
    checks.one_of('backend', backend, BACKENDS)
    checks.integrator(integrator)
    if isinstance(rates_hz, (str, bytes)) or not isinstance(rates_hz, Sequence | np.ndarray):
        raise ValueError(f'rates_hz must be a sequence of rates in Hz, got {rates_hz!r}')
    rates = [checks.positive(f'rates_hz[{i}]', r, 'Hz') for i, r in enumerate(rates_hz)]
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.nonnegative('armature', armature, 'kg·m²')
    checks.timestep(timestep)
    damping = joint_damping(damping)
    inertia = standby_inertia(armature)  # (6,)
    with np.errstate(over='ignore'):  # a gain beyond floating point per unit inertia is inf: diverged below
        w2, c_pd, c_joint = kp / inertia, kv / inertia, damping / inertia
    h = timestep
    patterns = [tick_pattern(min(r, 1.0 / h), h) for r in rates]  # at most a tick a physics step
    if not patterns:
        return np.empty(0)
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
    # every rate at once: tick j of each rate's pattern multiplies that rate's product, (nrate, nj, 2, 2);
    # a rate whose pattern has ended keeps its product
    lengths = np.array([len(p) for p in patterns])
    steps_per_tick = sorted({n for p in patterns for n in p})
    which = np.zeros((len(patterns), lengths.max()), dtype=int)
    for i, pattern in enumerate(patterns):
        which[i, :len(pattern)] = [steps_per_tick.index(n) for n in pattern]
    with np.errstate(over='ignore', invalid='ignore', divide='ignore'):
        # a map beyond floating point (inf or NaN entries) is a joint that diverged: its growth is inf
        tick_maps = np.stack([(np.linalg.matrix_power(step, n) @ hold)[:, :2, :] for n in steps_per_tick])
        product = np.broadcast_to(np.eye(2), (len(patterns), nj, 2, 2)).copy()
        log_scale = np.zeros((len(patterns), nj))
        for j in range(lengths.max()):
            going = lengths > j
            new = tick_maps[which[going, j]] @ product[going]
            scale = np.max(np.abs(new), axis=(2, 3))
            scale = np.where(scale > 0, scale, 1.0)
            product[going] = new / scale[:, :, None, None]
            log_scale[going] += np.log(scale)
        finite = np.all(np.isfinite(product), axis=(2, 3)) & np.isfinite(log_scale)
        radius = np.full(finite.shape, math.inf)
        if finite.any():
            radius[finite] = np.max(np.abs(np.linalg.eigvals(product[finite])), axis=1)
        growth = np.where(finite, np.exp((log_scale + np.log(radius)) / lengths[:, None]), math.inf)
    return np.max(growth, axis=1)  # 0 and inf saturate: never an exception


# ---------------------------------------------------------------------------------------------------------
# The growth table of Build it, step 4: the two margins of the zero-order-hold bound, and the growth per tick


def zoh_margins(rate_hz: float, *, kp: float = SO101_KP, kv: float = SO101_KV, inertia: float,
                timestep: float = PHYSICS_TIMESTEP) -> dict:
    """The two conditions of the held PD's stability bound (Jury's test on the tick map), as margins.

    One joint ``I*qdd = -kp*q - kv*qd`` (joint damping left out), held over ticks of ``n`` physics steps on average
    (:func:`tick_pattern`), ``T = n*h``, ``beta = (n + 1)/(2n)``, ``x = (T*w)² = T²*kp/I``, ``c = kv/I``. The tick map
    is stable when both margins are positive:

        delay_margin    = c*T - (1 - beta)*x          (the half-tick delay against kv; I cancels out of its sign)
        explicit_margin = 4 - 2*c*T - (2*beta - 1)*x  (chapter 1's explicit bound with T in place of h)

    Args:
      rate_hz: controller rate, Hz, > 0.
      kp, kv: PD gains, N·m/rad (> 0) and N·m·s/rad (>= 0).
      inertia: I, the joint's diagonal of the mass matrix, kg·m², > 0.
      timestep: physics step h, s, in (0, 0.1].

    Returns:
      ``{'n', 'beta', 'T_omega', 'delay_margin', 'explicit_margin'}``: mean steps per tick, beta, T*w (rad), and
      the two margins (dimensionless; negative means growth above 1).
    """
    checks.positive('rate_hz', rate_hz, 'Hz')
    checks.positive('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    checks.timestep(timestep)
    pattern = tick_pattern(rate_hz, timestep)
    n = sum(pattern) / len(pattern)
    T = n * timestep
    beta = (n + 1) / (2 * n)
    try:
        x = T * T * kp / inertia
        cT = kv / inertia * T
    except OverflowError:
        x = cT = math.inf
    if not (math.isfinite(x) and math.isfinite(cT)):  # inf - inf has no sign: say which inputs overflowed
        raise ValueError(f'kp / inertia and kv / inertia must keep (T*w)² and c*T finite, got kp {kp!r}, kv {kv!r}, '
                         f'inertia {inertia!r} kg·m² at {rate_hz!r} Hz')
    return {'n': n, 'beta': beta, 'T_omega': math.sqrt(x), 'delay_margin': cT - (1 - beta) * x,
            'explicit_margin': 4 - 2 * cT - (2 * beta - 1) * x}


GROWTH_COLUMNS = (('rate_hz', '.0f'), ('n', '.1f'), ('beta', '.3f'), ('T_omega', '.3f'), ('delay_margin', '+.3f'),
                  ('explicit_margin', '+.3f'), ('in_loop_growth', '.4f'), ('in_step_growth', '.4f'))
"""The pd-growth table's columns."""


def growth_rows(rates_hz: Sequence[float] = RATES_HZ, *, kp: float = SO101_KP, kv: float = SO101_KV,
                armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP) -> list[dict]:
    """The pd-growth table: at each controller rate, the margins of :func:`zoh_margins` and both growths per tick.

    ``T_omega`` and the margins are the lightest joint's at ``STANDBY`` (the largest w, so the tightest explicit
    bound), without joint damping; ``in_loop_growth`` and ``in_step_growth`` are :func:`worst_growth`, the worst
    of all six joints with the model's joint damping. Everything is linear algebra on the model at ``STANDBY``:
    no simulation, so no figure here depends on the last bits of a run's start.

    Args:
      rates_hz: controller rates, Hz, each > 0, (nrate,).
      kp, kv, armature, timestep: N·m/rad, N·m·s/rad, kg·m², s, as :class:`HoldParams`.

    Returns:
      One row per rate with the keys of ``GROWTH_COLUMNS``.
    """
    rates = checked_rates('rates_hz', rates_hz)
    lightest = float(standby_inertia(checks.nonnegative('armature', armature, 'kg·m²')).min())
    return [{'rate_hz': rate,
             **zoh_margins(rate, kp=kp, kv=kv, inertia=lightest, timestep=timestep),
             'in_loop_growth': worst_growth(rate_hz=rate, backend='in-loop', kp=kp, kv=kv, armature=armature,
                                            timestep=timestep),
             'in_step_growth': worst_growth(rate_hz=rate, backend='in-step', kp=kp, kv=kv, armature=armature,
                                            timestep=timestep)}
            for rate in rates]


@experiment('pd-growth', summary='SO-101 PD in-loop: the two margins of the held tick and the growth per tick of '
                                 'both backends vs controller rate',
            columns=GROWTH_COLUMNS)
def pd_growth() -> list[dict]:
    return growth_rows()


# ---------------------------------------------------------------------------------------------------------
# The verdict: which of the in-loop PD's two flaws, the hold or the explicit kv, makes it unstable


CAUSE_COLUMNS = (('rate_hz', '.0f'), ('in_loop', '#.4g'), ('hold_only', '#.4g'), ('explicit_kv_only', '#.4g'),
                 ('in_step', '#.4g'), ('cause', 's'))
"""The pd-cause table's columns."""


def cause(in_loop: float, hold_only: float, explicit_kv_only: float) -> str:
    """Which flaw makes the in-loop PD unstable, from three growths per tick (:func:`cause_rows`' columns).

    ``'-'`` when the in-loop PD is stable (growth below 1); ``'hold'`` when the hold alone is unstable and explicit
    kv alone is not; ``'explicit kv'`` the other way round; ``'both'`` when each alone is unstable; ``'together'``
    when neither alone is but the two together are.
    """
    if not in_loop >= 1:
        return '-'
    return {(True, False): 'hold', (False, True): 'explicit kv', (True, True): 'both',
            (False, False): 'together'}[(hold_only >= 1, explicit_kv_only >= 1)]


def cause_rows(rates_hz: Sequence[float] = RATES_HZ, *, kp: float = SO101_KP, kv: float = SO101_KV,
               armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP) -> list[dict]:
    """The pd-cause table: the worst joint's growth per tick with the in-loop PD's two flaws, one, the other, neither.

    Columns (:func:`physai.laws.loop.flaw_growth`, the largest over the SO-101's six joints at ``STANDBY``, joint
    damping from the model): ``in_loop`` both flaws (the PD in the controller); ``hold_only`` the torque held but kv
    implicit (the in-loop PD with its implicit damping given back); ``explicit_kv_only`` kv explicit but the PD
    computed at every physics step (its hold taken away); ``in_step`` neither (MuJoCo's servo under
    ``implicitfast``); and ``cause`` (:func:`cause`). Linear algebra on the model, no simulation.

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      kp, kv, armature, timestep: N·m/rad, N·m·s/rad, kg·m², s, as :class:`HoldParams`.
    """
    rates = checked_rates('rates_hz', rates_hz)
    checks.positive('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.timestep(timestep)
    damping = joint_damping(None)
    inertia = standby_inertia(checks.nonnegative('armature', armature, 'kg·m²'))
    rows = []
    for rate in rates:
        def worst(hold_: bool, explicit_kv: bool) -> float:
            return max(flaw_growth(rate_hz=rate, kp=kp, kv=kv, inertia=float(i), timestep=timestep, damping=damping,
                                   hold=hold_, explicit_kv=explicit_kv) for i in inertia)
        row = {'rate_hz': rate, 'in_loop': worst(True, True), 'hold_only': worst(True, False),
               'explicit_kv_only': worst(False, True), 'in_step': worst(False, False)}
        row['cause'] = cause(row['in_loop'], row['hold_only'], row['explicit_kv_only'])
        rows.append(row)
    return rows


def dominant_cause(rows: Sequence[dict]) -> str:
    """The cause (:func:`cause`) shared by every row of :func:`cause_rows` whose in-loop PD is unstable, or
    ``'mixed'`` when they differ.

    Raises:
      ValueError: no row is unstable (no cause to name).
    """
    causes = {row['cause'] for row in rows if row['cause'] != '-'}
    if not causes:
        raise ValueError(f'rows must hold a rate where the in-loop PD is unstable, got causes '
                         f'{[row["cause"] for row in rows]!r}')
    return causes.pop() if len(causes) == 1 else 'mixed'


@experiment('pd-cause', summary='SO-101 PD in-loop: growth per tick with its two flaws (the hold, explicit kv), '
                                'each alone and neither, and which one makes it unstable',
            columns=CAUSE_COLUMNS)
def pd_cause() -> list[dict]:
    return cause_rows()


def implicit_kv_ensembles(rates_hz: Sequence[float] = RATES_HZ, **overrides) -> list[HoldEnsemble]:
    """MuJoCo's check of ``hold_only``: the in-loop hold at every rate with kv moved into the joints' damping
    (``HoldParams(implicit_kv=True)``), as ensembles (:func:`hold_ensembles`), shared like :func:`rate_ensembles`.

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      overrides: further :class:`HoldParams` fields (kp, kv, armature, ...), the same for every rate.
    """
    return list(_implicit_kv_ensembles(checked_rates('rates_hz', rates_hz), tuple(sorted(overrides.items()))))


@functools.lru_cache(maxsize=2)
def _implicit_kv_ensembles(rates_hz: tuple, overrides: tuple) -> tuple[HoldEnsemble, ...]:
    return tuple(hold_ensembles([HoldParams(rate_hz=r, backend='in-loop', implicit_kv=True, **dict(overrides))
                                 for r in rates_hz]))


IMPLICIT_KV_COLUMNS = tuple(c for c in RATE_COLUMNS if c[0] != 'backend')
"""The pd-implicit-kv and pd-explicit-kv tables' columns: pd-rate's without the backend (every row of either table has
one placement of the PD)."""


@experiment('pd-implicit-kv', summary=f'SO-101 hold, {ENSEMBLE_SIZE} runs per row: the PD in-loop with kv moved into '
                                      'the joint damping (implicit), its torque still held: p2p and chatter vs rate',
            columns=IMPLICIT_KV_COLUMNS)
def pd_implicit_kv() -> list[dict]:
    return [{key: value for key, value in e.row_deg().items() if key != 'backend'} for e in implicit_kv_ensembles()]


def explicit_kv_ensembles(rates_hz: Sequence[float] = RATES_HZ, **overrides) -> list[HoldEnsemble]:
    """MuJoCo's check of ``explicit_kv_only``: the PD evaluated at every physics step, its setpoint refreshed at each
    rate, with kv explicit. That is the in-step servo under ``Euler``, which takes the actuator's kv explicitly and the
    joints' damping implicitly, as :func:`physai.laws.loop.flaw_growth` does without the hold. As ensembles
    (:func:`hold_ensembles`), shared like :func:`rate_ensembles`.

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      overrides: further :class:`HoldParams` fields (kp, kv, armature, ...), the same for every rate.
    """
    return list(_explicit_kv_ensembles(checked_rates('rates_hz', rates_hz), tuple(sorted(overrides.items()))))


@functools.lru_cache(maxsize=2)
def _explicit_kv_ensembles(rates_hz: tuple, overrides: tuple) -> tuple[HoldEnsemble, ...]:
    return tuple(hold_ensembles([HoldParams(rate_hz=r, backend='in-step', integrator='Euler', **dict(overrides))
                                 for r in rates_hz]))


@experiment('pd-explicit-kv', summary=f'SO-101 hold, {ENSEMBLE_SIZE} runs per row: the PD at every physics step with kv '
                                      'explicit (in-step under Euler), its setpoint at the rate: p2p and chatter vs rate',
            columns=IMPLICIT_KV_COLUMNS)
def pd_explicit_kv() -> list[dict]:
    return [{key: value for key, value in e.row_deg().items() if key != 'backend'} for e in explicit_kv_ensembles()]


LONG_RATES_HZ = (50, 100)
"""Hz: the controller rates at which the in-loop PD chatters with Menagerie's armature: ``pd-rate-long`` runs them on."""

LONG_RUNS = 8
"""Runs per rate of ``pd-rate-long`` (starts ``ENSEMBLE_SPACING`` apart, as the chapter's ensembles)."""

LONG_DURATION = 30.0
"""s: how long ``pd-rate-long`` holds the pose, ten times the chapter's runs."""


@experiment('pd-rate-long', summary=f'SO-101 PD in-loop at {LONG_RATES_HZ[0]} and {LONG_RATES_HZ[1]} Hz held '
                                    f'{LONG_DURATION:g} s: is the chatter still there, and as wide, as at 3 s?',
            columns=(('rate_hz', '.0f'), ('runs', 'd'), ('chattering_3s', 'd'), ('chattering_30s', 'd'),
                     ('p2p_3s_deg', 'g'), ('p2p_30s_deg', 'g')))
def pd_rate_long(rates_hz: Sequence[float] = LONG_RATES_HZ, *, n: int = LONG_RUNS,
                 duration: float = LONG_DURATION) -> list[dict]:
    """The in-loop chatter of the chapter's table, run on: each rate's first ``n`` runs held for ``duration`` s, and
    read over the last second before 3 s (the chapter's runs) and before ``duration``.

    Returns:
      One row per rate: how many runs chatter (:attr:`physai.engine.hold.HoldResponse.chatters`, read over the last
      second before each of the two lengths, :func:`physai.engine.hold.read_at`), and the median of the worst
      peak-to-peak there, on the 1-2-5 series in radians and in degrees to two digits, as the chapter's tables
      (:func:`physai.engine.hold.p2p_deg`).
    """
    rates = checked_rates('rates_hz', rates_hz)
    params = [m for r in rates for m in hold.ensemble_members(HoldParams(rate_hz=r, backend='in-loop'), n)]
    runs = hold.hold_responses(params, duration=duration)
    rows = []
    for k, rate in enumerate(rates):
        read = {length: [hold.read_at(r, length) for r in runs[k * n:(k + 1) * n]] for length in (hold.DURATION, duration)}
        row = {'rate_hz': rate, 'runs': n}
        for length, key in ((hold.DURATION, '3s'), (duration, '30s')):
            row[f'chattering_{key}'] = sum(r.chatters for r in read[length])
        for length, key in ((hold.DURATION, '3s'), (duration, '30s')):
            median = float(np.median([r.worst_p2p_rad for r in read[length]]))
            row[f'p2p_{key}_deg'] = hold.p2p_deg(robust.series_125(median))
        rows.append(row)
    return rows


def margins_positive_from(rows: Sequence[dict]) -> float:
    """The lowest rate of :func:`growth_rows`' rows from which every faster row has both margins positive, Hz.

    Raises:
      ValueError: the fastest row has a margin <= 0 (no such rate among the rows).
    """
    rows = sorted(rows, key=lambda row: row['rate_hz'])
    good = [row['delay_margin'] > 0 and row['explicit_margin'] > 0 for row in rows]
    if not rows or not good[-1]:
        raise ValueError('rows must end with a rate where both margins are positive, got '
                         f'{[row["rate_hz"] for row in rows]!r} Hz')
    first = len(good) - (good[::-1] + [False]).index(False)
    return rows[first]['rate_hz']


# --------------------------------------------------------------------------------------------------
# Break it B, both designs: the feed-forward inside the clamp or in qfrc_applied

def position_only_difference(*, steps: int = 2000, target: float = 0.5) -> float:
    """The largest |q| difference between the two feed-forward designs when the command has no velocity target
    and no feed-forward torque, rad.

    Chapter 1's link on Menagerie's servo gains and clamp (:func:`physai.engine.hold.clamped_servo_link`), driven
    in-step by :class:`PDController` to ``target`` rad from rest, once with ``feedforward='in-clamp'`` and once
    with ``'applied'``. With ``velocity = effort = 0`` both designs write zero (``biasprm[0]`` or
    ``qfrc_applied``), so the runs are the same to the last bit: the applied design is safe for position-only
    commands, and differs only when a velocity target or a feed-forward torque is sent.

    Args:
      steps: physics steps to run, 1 ... 100000.
      target: the position command, rad, finite.
    """
    if not (isinstance(steps, numbers.Integral) and not isinstance(steps, bool) and 1 <= steps <= 100_000):
        raise ValueError(f'steps must be a whole number in [1, 100000], got {steps!r}')
    if not (checks.is_real(target) and math.isfinite(target)):
        raise ValueError(f'target must be a finite number of rad, got {target!r}')
    runs = []
    for feedforward in FEEDFORWARD:
        m = hold.clamped_servo_link()
        d = mujoco.MjData(m)
        pd = PDController(m, ['hinge'], backend='in-step', feedforward=feedforward)
        command = [JointCommand(position=target, stiffness=SO101_KP, damping=SO101_KV, max_effort=SO101_FORCERANGE)]
        q = np.empty(steps)
        for k in range(steps):
            pd.write(d, command)
            mujoco.mj_step(m, d)
            q[k] = d.qpos[0]
        runs.append(q)
    return float(np.max(np.abs(runs[0] - runs[1])))


CLAMP_ERRORS_RAD = (0.001, 0.5)
"""rad: the servo errors of :func:`clamp_damping_rows`, one well inside the clamp (kp·e < forcerange), one past it."""


def clamp_damping_rows(errors_rad: Sequence[float] = CLAMP_ERRORS_RAD, **servo) -> list[dict]:
    """What ``implicitfast`` integrates implicitly, inside and at the force limit (:func:`hold.implicit_damping`).

    Args:
      errors_rad: servo errors ``ctrl - q``, rad.
      **servo: ``kp``, ``kv``, ``damping``, ``forcerange``, ``armature``, ``timestep`` of
        :func:`physai.engine.hold.implicit_damping` (default Menagerie's servo, joint damping 0.6).

    Returns:
      One row per error: ``error_rad``, ``force`` (N·m), ``clamped`` ('yes'/'no'), ``implicit_damping``
      (``-qDeriv``, N·m·s/rad) and ``kv_implicit`` (that less the joint damping, N·m·s/rad).
    """
    damping = servo.get('damping', 0.6)
    limit = servo.get('forcerange', SO101_FORCERANGE)
    rows = []
    for e in errors_rad:
        force, c = hold.implicit_damping(e, **servo)
        rows.append(dict(error_rad=float(e), force=force, clamped='yes' if abs(force) >= limit else 'no',
                         implicit_damping=c, kv_implicit=c - damping))
    return rows
