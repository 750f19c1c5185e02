"""Chapter 3's first exercise: the in-loop PD's critical controller rate, on the growth per tick and in MuJoCo.

``pd-critical-rate`` (:func:`growth_scan`: every joint's growth over rates 1 Hz apart, where it first drops below 1
and where it stays below, and the estimate :func:`rate_bound_hz`), ``pd-tick-mix`` (:func:`tick_mix_rows`: why the
growth bumps back above 1 between those two rates, long and short ticks mixed) and ``pd-rate-near-critical``
(:func:`near_critical_ensembles`: MuJoCo's arm around the critical rate, an ensemble per rate, and
:func:`quiet_from_hz`). The growth figures are linear algebra on the model at ``STANDBY``
(:func:`physai.experiments.where_pd_runs.worst_growth`); MuJoCo's runs are summed up by what every run of an
ensemble shares. Symbols as in :mod:`physai.laws.loop`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np

from physai.laws import checks
from physai.engine.hold import (ENSEMBLE_SIZE, HoldEnsemble, HoldParams, PHYSICS_TIMESTEP, SO101_ARMATURE, SO101_KP,
                                SO101_KV, hold_ensembles, so101_joints)
from physai.experiments.registry import experiment
from physai.experiments.where_pd_runs import checked_rates, joint_damping, standby_inertia, worst_growth
from physai.laws.loop import tick_growth, tick_pattern, zoh_step
from physai.laws.sim import step_growth


# ---------------------------------------------------------------------------------------------------------
# Scanned in 1 Hz steps, and why the growth bumps back above 1


SCAN_RATES_HZ = tuple(float(r) for r in range(100, 160))
"""Hz: the exercise's scan, 100 ... 159 Hz in 1 Hz steps, around the in-loop critical rate."""


def first_below_hz(rates_hz: Sequence[float], growth: Sequence[float]) -> float:
    """The first rate at which ``growth`` (per tick, one per rate) drops below 1, Hz.

    Raises:
      ValueError: the lengths differ, the rates are not increasing, or no growth is below 1.
    """
    rates, growth = _scan('rates_hz', rates_hz, growth)
    below = np.flatnonzero(growth < 1)
    if not below.size:
        raise ValueError(f'growth must drop below 1 at some rate of rates_hz ({rates[0]:g} ... {rates[-1]:g} Hz), '
                         f'got at least {growth.min():.6g}')
    return rates[below[0]]


def stable_from_hz(rates_hz: Sequence[float], growth: Sequence[float]) -> float:
    """The lowest rate from which ``growth`` stays below 1 at every faster rate given, Hz.

    Raises:
      ValueError: the lengths differ, the rates are not increasing, or the growth at the fastest rate is not below 1
        (the scan ends before the critical rate).
    """
    rates, growth = _scan('rates_hz', rates_hz, growth)
    if not growth[-1] < 1:
        raise ValueError(f'growth must be below 1 at the fastest rate of rates_hz ({rates[-1]:g} Hz), '
                         f'got {growth[-1]:.6g}: scan faster rates')
    unstable = np.flatnonzero(~(growth < 1))
    return rates[unstable[-1] + 1] if unstable.size else rates[0]


def _scan(name: str, rates_hz, growth) -> tuple[tuple[float, ...], np.ndarray]:
    rates = checked_rates(name, rates_hz)
    growth = np.asarray(growth, dtype=float)
    if growth.shape != (len(rates),):
        raise ValueError(f'growth must hold one value per rate ({len(rates)}), got shape {growth.shape}')
    return rates, growth


def rate_bound_hz(rate_hz: float, *, kp: float = SO101_KP, kv: float = SO101_KV, damping: float | None = None,
                  timestep: float = PHYSICS_TIMESTEP) -> float:
    """The chapter's estimate of the critical rate, ``f* = (1 - beta)*kp/(kv + d)``, Hz.

    ``beta = (n + 1)/(2n)`` with ``n = 1/(rate_hz*timestep)`` physics steps per tick at ``rate_hz`` (the rate whose
    n to use: the estimate's own rate, or a scanned critical rate); d is the joint damping ``dof_damping``,
    N·m·s/rad (None: the SO-101's), which acts continuously and so adds to kv.

    Raises:
      ValueError: a rate or timestep out of range (a rate above 1/timestep included), kp <= 0, or kv + d <= 0 (no
        damping: no rate is fast enough).
    """
    checks.positive('rate_hz', rate_hz, 'Hz')
    checks.positive('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.timestep(timestep)
    damping = joint_damping(damping)
    if not kv + damping > 0:
        raise ValueError(f'kv + damping must be > 0 N·m·s/rad, got {kv!r} + {damping!r}')
    if rate_hz * timestep > 1:  # a tick shorter than a physics step: the estimate's n >= 1 steps per tick fails
        raise ValueError(f'rate_hz must be at most 1/timestep = {1 / timestep:.6g} Hz (one physics step per tick) '
                         f'at timestep {timestep:g} s, got {rate_hz!r}')
    n = 1.0 / (rate_hz * timestep)
    beta = (n + 1) / (2 * n)
    return (1 - beta) * kp / (kv + damping)


@dataclasses.dataclass(frozen=True)
class GrowthScan:
    """The in-loop growth per controller tick of every SO-101 joint at ``STANDBY`` over a scan of rates."""

    rates_hz: tuple[float, ...]
    """(nrate,) controller rates, Hz, increasing."""
    growth: np.ndarray
    """(nrate, 6) each joint's growth per tick (:func:`tick_growth`), dimensionless; above 1 it cannot settle."""
    inertia: np.ndarray
    """(6,) each joint's diagonal of the mass matrix at ``STANDBY``, kg·m² (armature included)."""
    kp: float
    """N·m/rad."""
    kv: float
    """N·m·s/rad."""
    damping: float
    """The joints' ``dof_damping``, N·m·s/rad."""
    timestep: float
    """The physics step, s."""

    @property
    def worst(self) -> np.ndarray:
        """(nrate,) the worst joint's growth per tick."""
        return self.growth.max(axis=1)

    @property
    def first_below_hz(self) -> float:
        """Where the worst joint's growth first drops below 1, Hz: not yet the critical rate."""
        return first_below_hz(self.rates_hz, self.worst)

    @property
    def critical_hz(self) -> float:
        """The critical rate, Hz: from here on the worst growth is below 1 at every scanned rate."""
        return stable_from_hz(self.rates_hz, self.worst)

    @property
    def bumps_hz(self) -> list[float]:
        """Rates above :attr:`first_below_hz` where the worst growth is back at or above 1, Hz."""
        first = self.first_below_hz
        return [r for r, g in zip(self.rates_hz, self.worst) if r > first and g >= 1]

    @property
    def joint_first_below_hz(self) -> list[float]:
        """(6,) each joint's :func:`first_below_hz`."""
        return [first_below_hz(self.rates_hz, g) for g in self.growth.T]

    @property
    def joint_stable_from_hz(self) -> list[float]:
        """(6,) each joint's :func:`stable_from_hz`."""
        return [stable_from_hz(self.rates_hz, g) for g in self.growth.T]

    @property
    def formula_hz(self) -> float:
        """:func:`rate_bound_hz` with n taken at the scanned critical rate, Hz."""
        return rate_bound_hz(self.critical_hz, kp=self.kp, kv=self.kv, damping=self.damping,
                             timestep=self.timestep)

    @property
    def long_steps(self) -> int:
        """Physics steps per tick at :attr:`first_below_hz` rounded: the long ticks of the scan's patterns (8)."""
        return round(1.0 / (self.first_below_hz * self.timestep))

    def rows(self) -> list[dict]:
        """The pd-critical-rate table: one row per joint, its inertia and where its growth drops below 1."""
        return [{'joint': name, 'inertia': float(i), 'first_below_1_hz': f, 'stable_from_hz': s}
                for name, i, f, s in zip(so101_joints(), self.inertia, self.joint_first_below_hz,
                                         self.joint_stable_from_hz)]


def growth_scan(rates_hz: Sequence[float] = SCAN_RATES_HZ, *, kp: float = SO101_KP, kv: float = SO101_KV,
                armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
                damping: float | None = None) -> GrowthScan:
    """Every joint's in-loop growth per tick at every rate: :func:`tick_growth` (chapter 1's ``step_growth`` on the
    held tick, joint damping implicit) with the joint's inertia at ``STANDBY``.

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      kp, kv: PD gains, N·m/rad (> 0) and N·m·s/rad (>= 0).
      armature: ``dof_armature``, kg·m², >= 0.
      timestep: physics step, s, in (0, 0.1].
      damping: joint damping, N·m·s/rad, >= 0 (None: the SO-101's ``dof_damping``).
    """
    rates = checked_rates('rates_hz', rates_hz)
    checks.positive('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.timestep(timestep)
    damping = joint_damping(damping)
    inertia = standby_inertia(checks.nonnegative('armature', armature, 'kg·m²'))
    growth = np.array([[tick_growth(rate_hz=r, kp=kp, kv=kv, inertia=float(i), timestep=timestep, damping=damping)
                        for i in inertia] for r in rates])
    return GrowthScan(rates_hz=rates, growth=growth, inertia=inertia, kp=float(kp), kv=float(kv),
                      damping=damping, timestep=float(timestep))


CRITICAL_COLUMNS = (('joint', 's'), ('inertia', '.5f'), ('first_below_1_hz', '.0f'), ('stable_from_hz', '.0f'))
"""The pd-critical-rate table's columns."""


@experiment('pd-critical-rate', summary='SO-101 PD in-loop, rates scanned in 1 Hz steps: where each joint\'s '
                                        'growth per tick first drops below 1 and where it stays below',
            columns=CRITICAL_COLUMNS)
def pd_critical_rate() -> list[dict]:
    return growth_scan().rows()


def tick_mix_rates(scan: GrowthScan) -> tuple[float, ...]:
    """The rates the tick-mix table shows, Hz: every tick long, the first dip, the bumps, the critical rate, every
    tick one step shorter."""
    h, n = scan.timestep, scan.long_steps
    return (1.0 / (n * h), scan.first_below_hz, *scan.bumps_hz, scan.critical_hz, 1.0 / ((n - 1) * h))


def _mix(pattern: Sequence[int]) -> str:
    counts = {n: pattern.count(n) for n in sorted(set(pattern), reverse=True)}
    return ' + '.join(f'{c}×{n}' for n, c in counts.items())


def pattern_growth(pattern: Sequence[int], *, kp: float = SO101_KP, kv: float = SO101_KV,
                   armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
                   damping: float | None = None) -> float:
    """The worst SO-101 joint's in-loop growth per tick over one repeating pattern of held ticks, taken in the order
    given: chapter 1's ``step_growth`` on :func:`physai.laws.loop.zoh_step` over the whole pattern, to the power
    ``1/len(pattern)``, each joint with its inertia at ``STANDBY``.

    The ticks' maps do not commute, so the same ticks in another order can grow differently: 133 Hz on 1 kHz
    physics alternates 8 and 7 steps and grows, its ticks sorted (all 8s, then all 7s) decay.

    Args:
      pattern: physics steps per tick, one entry per tick, each a whole number in [1, ``MAX_STEPS_PER_TICK``].
      kp, kv, armature, timestep: N·m/rad, N·m·s/rad, kg·m², s, as :class:`HoldParams`.
      damping: the joints' ``dof_damping``, N·m·s/rad (None: the SO-101's).

    Returns:
      The growth per tick; ``inf`` when it is beyond floating point.

    Raises:
      ValueError: an empty pattern or a tick out of range (:func:`physai.laws.loop.zoh_step`), or a gain, armature,
        damping or timestep out of range.
    """
    if isinstance(pattern, (str, bytes)) or not isinstance(pattern, Sequence | np.ndarray) or len(pattern) == 0:
        raise ValueError(f'pattern must be a non-empty sequence of physics steps per tick, got {pattern!r}')
    pattern = tuple(pattern)
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.nonnegative('kv', kv, 'N·m·s/rad')
    checks.timestep(timestep)
    damping = joint_damping(damping)
    inertia = standby_inertia(checks.nonnegative('armature', armature, 'kg·m²'))
    growth = 0.0
    for i in inertia:
        g = step_growth(zoh_step, timestep, kp / i, kv / i, substeps=pattern, c_joint=damping / i)
        try:
            growth = max(growth, float(g ** (1.0 / len(pattern))))
        except OverflowError:  # beyond floating point: diverged
            return math.inf
    return growth


TICK_MIX_COLUMNS = (('rate_hz', '.1f'), ('ticks', 'd'), ('steps', 's'), ('mean_steps', '.3f'), ('growth', '.4f'),
                    ('long_first_growth', '.4f'))
"""The pd-tick-mix table's columns."""


def tick_mix_rows(rates_hz: Sequence[float], *, kp: float = SO101_KP, kv: float = SO101_KV,
                  armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP) -> list[dict]:
    """What each controller rate's repeating tick pattern is made of, and the worst in-loop growth per tick.

    Each row: ``ticks`` in the pattern (:func:`tick_pattern`), ``steps`` how many ticks of how many physics steps
    (``'13×8 + 3×7'``), ``mean_steps`` per tick, :func:`worst_growth` in-loop, and ``long_first_growth``, the same
    ticks in another order, all the long ones first (:func:`pattern_growth`).

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      kp, kv, armature, timestep: N·m/rad, N·m·s/rad, kg·m², s, as :class:`HoldParams`.
    """
    rows = []
    for rate in checked_rates('rates_hz', rates_hz):
        pattern = tick_pattern(rate, timestep)
        rows.append({'rate_hz': rate, 'ticks': len(pattern), 'steps': _mix(pattern),
                     'mean_steps': sum(pattern) / len(pattern),
                     'growth': worst_growth(rate_hz=rate, backend='in-loop', kp=kp, kv=kv, armature=armature,
                                            timestep=timestep),
                     'long_first_growth': pattern_growth(sorted(pattern, reverse=True), kp=kp, kv=kv,
                                                         armature=armature, timestep=timestep)})
    return rows


@experiment('pd-tick-mix', summary='SO-101 PD in-loop around the critical rate: long and short ticks in each '
                                   'rate\'s pattern, and the growth per tick',
            columns=TICK_MIX_COLUMNS)
def pd_tick_mix() -> list[dict]:
    return tick_mix_rows(tick_mix_rates(growth_scan()))


# ---------------------------------------------------------------------------------------------------------
# ... and MuJoCo itself around the critical rate: an ensemble per rate


NEAR_CRITICAL_RATES_HZ = tuple(float(r) for r in range(110, 136, 2))
"""Hz: the exercise's MuJoCo runs, 110 ... 134 Hz in 2 Hz steps."""


def near_critical_ensembles(rates_hz: Sequence[float] = NEAR_CRITICAL_RATES_HZ, **overrides) -> list[HoldEnsemble]:
    """The in-loop hold at every rate as an ensemble (:func:`hold_ensembles`), shared like :func:`rate_ensembles`.

    Args:
      rates_hz: controller rates, Hz, strictly increasing, (nrate,).
      overrides: further :class:`HoldParams` fields (kp, kv, armature, ...), the same for every rate.
    """
    return list(_near_critical_ensembles(checked_rates('rates_hz', rates_hz), tuple(sorted(overrides.items()))))


@functools.lru_cache(maxsize=2)
def _near_critical_ensembles(rates_hz: tuple, overrides: tuple) -> tuple[HoldEnsemble, ...]:
    return tuple(hold_ensembles([HoldParams(rate_hz=r, backend='in-loop', **dict(overrides)) for r in rates_hz]))


NEAR_CRITICAL_COLUMNS = (('rate_hz', '.0f'), ('growth', '.4f'), ('runs', 'd'), ('chattering', 'd'), ('state', 's'))
"""The pd-rate-near-critical table's columns."""


def near_critical_rows(ensembles: Sequence[HoldEnsemble]) -> list[dict]:
    """One row per in-loop ensemble: the worst growth per tick (:func:`worst_growth`), ``runs``, how many of them
    chatter, and what every run shares (:attr:`HoldEnsemble.state`: ``'chatters'``, ``'still'``, or ``'mixed'``)."""
    rows = []
    for e in ensembles:
        p = e.params
        if p.backend != 'in-loop':
            raise ValueError(f"ensembles must be in-loop, got backend {p.backend!r} at {p.rate_hz:g} Hz")
        rows.append({'rate_hz': p.rate_hz,
                     'growth': worst_growth(rate_hz=p.rate_hz, backend='in-loop', kp=p.kp, kv=p.kv,
                                            armature=p.armature, timestep=p.timestep, integrator=p.integrator),
                     'runs': e.n, 'chattering': e.chattering, 'state': e.state})
    return rows


@experiment('pd-rate-near-critical', summary=f'SO-101 hold, PD in-loop at 110-134 Hz, up to {ENSEMBLE_SIZE} runs '
                                             'per rate: growth per tick and whether every run chatters or holds still',
            columns=NEAR_CRITICAL_COLUMNS)
def pd_rate_near_critical() -> list[dict]:
    return near_critical_rows(near_critical_ensembles())


def quiet_from_hz(rows: Sequence[dict]) -> float:
    """The lowest rate of :func:`near_critical_rows`' rows from which every run at every faster rate holds still, Hz.

    Raises:
      ValueError: the fastest row does not hold still in every run.
    """
    rows = sorted(rows, key=lambda row: row['rate_hz'])
    if not rows or rows[-1]['state'] != 'still':
        raise ValueError('rows must end with a rate where every run holds still, got states '
                         f'{[(row["rate_hz"], row["state"]) for row in rows]!r}')
    loud = [i for i, row in enumerate(rows) if row['state'] != 'still']
    return rows[loud[-1] + 1 if loud else 0]['rate_hz']
