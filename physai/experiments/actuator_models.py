"""Chapter 2's experiments: the pendulum under each actuator model, swept, mapped and held against MuJoCo's own.

Each table is registered by name (``python -m physai NAME``): ``actuator-sweep PARAM`` (one parameter over five
values, :func:`sweep`, read off by :func:`step_metrics`), ``actuator-map`` (timestep × kv × kp: where the explicit
PD diverges and the implicit ones hold, :func:`divergence_map`, with the kv on each stability bound,
:func:`kv_bound`) and ``actuator-native`` (our DC motor and delay against MuJoCo 3.17's ``<dcmotor>`` and actuator
delay, :func:`native_comparison`). The models are :mod:`physai.laws.drives`, the runner
:mod:`physai.engine.pendulum`; a diverged run is a result, never an exception.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import link
from physai.laws import checks, robust, stability
from physai.engine.pendulum import (HORIZONTAL, LINK_INERTIA, PendulumParams, Run, Square, Step, TAU_G, TIMESTEP,
                                    run_with_ctrl, native_model, run_implicit, held_commands, native_dc_motor_run,
                                    native_dc_motor_spec, native_delay_run, pendulum_model, simulate)
from physai.experiments.registry import experiment
from physai.laws.drives import DCMotor, DelayedPD, IdealPD, ImplicitPD, delay_commands
from physai.laws.sim import semi_implicit_euler, servo_sag, step_growth


# ------------------------------------------------------------------------------------------------
# what the book reads off a run


SETTLE_BAND = 0.02  # settling: within 2 % of the step size
TAIL = 0.5  # s, the window of the settled value


def _tail(run: Run, window: float) -> np.ndarray:
    return run.q[run.t >= run.t[-1] - window + 1e-9]


def step_metrics(run: Run, *, at: float = 0.5) -> dict:
    """Figures of a step response whose command jumps at ``at`` seconds.

    Returns a dict with ``final_rad`` (mean over the last 0.5 s), ``error_deg`` (command minus final),
    ``overshoot_pct`` (beyond the final value, % of the move), ``rise_ms`` (10 % to 90 % of the move,
    linear interpolation), ``settling_s`` (from the step until q stays within 2 % of the move),
    ``peak_speed`` (max |qd|, rad/s), ``p2p_deg`` (peak-to-peak of q over the last 0.5 s, degrees: a
    run above ``plots.SWINGING_P2P_DEG`` has not settled) and ``diverged``; NaN figures for a diverged
    run.
    """
    nan = math.nan
    if run.diverged or run.t[-1] <= at:
        return {'final_rad': nan, 'error_deg': nan, 'overshoot_pct': nan, 'rise_ms': nan,
                'settling_s': nan, 'peak_speed': nan, 'p2p_deg': nan, 'diverged': True}
    after = run.t >= at - 1e-9
    t, q = run.t[after], run.q[after]
    start = q[0]
    tail = _tail(run, TAIL)
    final = float(np.mean(tail))
    move = final - start
    wanted = float(run.command[-1]) - start
    if abs(move) < link.RISE_START * abs(wanted) or move == 0:
        # it never got a tenth of its way: there is no rise, overshoot or settling of a move to report
        rise = overshoot = settling = nan
    else:
        progress = (q - start) / move
        rise = link.rise_time(t, q, final)
        overshoot = max(0.0, float(np.max(progress)) - 1.0) * 100
        outside = np.nonzero(np.abs(q - final) > SETTLE_BAND * abs(move))[0]
        settling = 0.0 if outside.size == 0 else float(t[min(outside[-1] + 1, len(t) - 1)] - at)
    return {'final_rad': final, 'error_deg': math.degrees(float(run.command[-1]) - final),
            'overshoot_pct': overshoot, 'rise_ms': 1e3 * rise, 'settling_s': settling,
            'peak_speed': float(np.max(np.abs(run.v))), 'p2p_deg': math.degrees(float(np.ptp(tail))),
            'diverged': False}


def lag_ms(run: Run) -> float:
    """Mean delay from each rising command edge to q crossing halfway between its two levels, ms."""
    if run.diverged:
        return math.nan
    cmd = run.command
    edges = np.nonzero(np.diff(cmd) > 0)[0] + 1
    lags = []
    for k in edges:
        crossed = link.crossing_time(run.t[k - 1:], run.q[k - 1:], 0.5 * (cmd[k - 1] + cmd[k]))
        if math.isfinite(crossed):
            lags.append(crossed - run.t[k])
    return 1e3 * float(np.mean(lags)) if lags else math.nan


def decay_time(run: Run, *, fraction: float = 0.1) -> float:
    """Time after which |qd| stays below ``fraction`` of its initial value, s (NaN if it never does)."""
    if run.diverged:
        return math.nan
    level = fraction * abs(run.v[0])
    above = np.nonzero(np.abs(run.v) >= level)[0]
    if above.size == 0:
        return 0.0
    if above[-1] == len(run.v) - 1:
        return math.nan
    return float(run.t[above[-1] + 1])


def swing_angle(forcerange: float, tau_g: float = TAU_G) -> float:
    """The angle where gravity equals the limit, ``tau_g*sin(q) = E`` (rad); NaN when E >= tau_g."""
    return math.asin(forcerange / tau_g) if forcerange < tau_g else math.nan


# ------------------------------------------------------------------------------------------------
# the sweeps


SWEEPS = {
    'stiffness': (10, 40, 100, 400, 1000),
    'damping': (0.5, 2, 10, 40, 100),
    'armature': (0, 0.01, 0.05, 0.2, 1),
    'friction': (0, 0.05, 0.2, 0.5, 1),
    'effort-limit': (1, 2, 3, 4, 6),
    'velocity-limit': (2, 4, 8, 16, 32),
    'delay': (0, 6, 12, 24, 48),
}

SWEEP_KEY = {'stiffness': 'kp', 'damping': 'kv', 'armature': 'armature', 'friction': 'frictionloss',
             'effort-limit': 'effort_limit', 'velocity-limit': 'velocity_limit', 'delay': 'delay_steps'}

DC_SATURATION = 12.0  # N·m
DC_EFFORT = 6.0  # N·m
FREE_SWING_SPEED = 4 * math.pi  # rad/s


@dataclasses.dataclass(frozen=True)
class Sweep:
    """One sweep of the Experiment: its runs, the command and the rows the book prints."""

    param: str
    values: tuple
    runs: list[Run]
    command: Callable
    rows: list[dict]


def sweep(param: str) -> Sweep:
    """Run one of the chapter's sweeps (five runs each) and compute its rows.

    ``param`` is one of ``SWEEPS``: stiffness, damping, armature (implicit PD, step 0 → π/2 at 0.5 s,
    4 s), friction (kp = kv = 0, free swing from 4π rad/s, 6 s), effort-limit (ideal PD kp 400 kv 20
    from hanging towards horizontal, 6 s), velocity-limit (DC motor S 12, E 6, kp 100, kv 5, the step,
    4 s), delay (delayed PD kp 100 kv 5, square wave 0 ↔ π/2 of period 2 s, 6 s).
    """
    if param not in SWEEPS:
        raise ValueError(f'param must be one of {", ".join(SWEEPS)}, got {param!r}')
    values = SWEEPS[param]
    key = SWEEP_KEY[param]
    step = Step()
    if param == 'stiffness':
        runs = simulate([ImplicitPD(kp=x, kv=5.0) for x in values], command=step, duration=4.0)
    elif param == 'damping':
        runs = simulate([ImplicitPD(kp=100.0, kv=x) for x in values], command=step, duration=4.0)
    elif param == 'armature':
        runs = simulate([ImplicitPD(kp=100.0, kv=5.0)] * len(values),
                        pendulum=[PendulumParams(armature=x) for x in values], command=step,
                        duration=4.0)
    elif param == 'friction':
        runs = simulate([IdealPD(kp=0.0, kv=0.0)] * len(values),
                        pendulum=[PendulumParams(frictionloss=x) for x in values], command=0.0,
                        duration=6.0, v0=FREE_SWING_SPEED)
        step = None
    elif param == 'effort-limit':
        step = Step(at=0.0)
        runs = simulate([IdealPD(kp=400.0, kv=20.0, forcerange=x) for x in values], command=step,
                        duration=6.0)
    elif param == 'velocity-limit':
        runs = simulate([DCMotor(kp=100.0, kv=5.0, forcerange=DC_EFFORT,
                                 saturation_effort=DC_SATURATION, velocity_limit=x) for x in values],
                        command=step, duration=4.0)
    else:
        step = Square()
        runs = simulate([DelayedPD(kp=100.0, kv=5.0, delay=x) for x in values], command=step,
                        duration=6.0)
    rows = []
    for x, run in zip(values, runs):
        if param in ('stiffness', 'damping', 'armature', 'velocity-limit'):
            s = step_metrics(run, at=step.at)
            row = {key: x, 'error_deg': s['error_deg'], 'overshoot_pct': s['overshoot_pct'],
                   'rise_ms': s['rise_ms'], 'settling_s': s['settling_s']}
            if param == 'stiffness':
                row['servo_sag_deg'] = math.degrees(servo_sag(x, TAU_G))
            if param == 'damping':
                inertia = run.pendulum.inertia
                row['dampratio'] = x / (2 * math.sqrt(100.0 * inertia))
            if param == 'velocity-limit':
                row['peak_speed'] = s['peak_speed']
        elif param == 'friction':
            turns = float(np.max(run.q)) / (2 * math.pi) if not run.diverged else math.nan
            decay = decay_time(run)  # None (printed '-', JSON null): not below 10 % within the run
            row = {key: x, 'decay_s': decay if math.isfinite(decay) else None, 'turns': turns,
                   'final_speed': float(abs(run.v[-1]))}
        elif param == 'effort-limit':
            tail = _tail(run, 2.0)
            row = {key: x, 'mean_angle_rad': float(np.mean(tail)), 'p2p_rad': float(np.ptp(tail))}
        else:
            row = {key: x, 'delay_ms': 1e3 * x * run.pendulum.timestep, 'lag_ms': lag_ms(run),
                   'overshoot_pct': _square_overshoot(run)}
        rows.append({k: row[k] for k, _ in SWEEP_COLUMNS[param]})
    return Sweep(param, values, runs, step, rows)


def _square_overshoot(run: Run) -> float:
    """Largest excursion beyond the command range (0 … π/2) as % of the step, NaN if diverged."""
    if run.diverged:
        return math.nan
    high, low = float(np.max(run.command)), float(np.min(run.command))
    beyond = max(float(np.max(run.q)) - high, low - float(np.min(run.q)), 0.0)
    return 100 * beyond / (high - low)


SWEEP_COLUMNS = {
    'stiffness': (('kp', '.0f'), ('error_deg', '.3f'), ('servo_sag_deg', '.3f'),
                  ('overshoot_pct', '.2f'), ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'damping': (('kv', '.1f'), ('dampratio', '.3f'), ('error_deg', '.3f'), ('overshoot_pct', '.2f'),
                ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'armature': (('armature', '.2f'), ('error_deg', '.3f'), ('overshoot_pct', '.2f'),
                 ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'friction': (('frictionloss', '.2f'), ('decay_s', '.3f'), ('turns', '.2f'),
                 ('final_speed', '.4f')),
    'effort-limit': (('effort_limit', '.1f'), ('mean_angle_rad', '.4f'), ('p2p_rad', '.4f')),
    'velocity-limit': (('velocity_limit', '.0f'), ('peak_speed', '.3f'), ('error_deg', '.3f'),
                       ('overshoot_pct', '.2f'), ('rise_ms', '.1f'), ('settling_s', '.3f')),
    'delay': (('delay_steps', '.0f'), ('delay_ms', '.1f'), ('lag_ms', '.1f'),
              ('overshoot_pct', '.2f')),
}


@experiment('actuator-sweep', summary='the pendulum under one actuator parameter swept over five values',
            columns=SWEEP_COLUMNS, choices=tuple(SWEEPS))
def actuator_sweep(param: str) -> list[dict]:
    return sweep(param).rows


# ------------------------------------------------------------------------------------------------
# where implicit and explicit part ways


MAP_TIMESTEPS = (0.0005, 0.001, 0.002, TIMESTEP, 0.005, 0.01, 0.02)  # s
MAP_KVS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200)  # N·m·s/rad
MAP_KPS = (100, 1000, 10000)  # N·m/rad


def explicit_implicit_growth(kp: float, kv: float, timestep: float, inertia: float = LINK_INERTIA
                ) -> tuple[float, float]:
    """Growth per step of the PD-held pendulum near horizontal, explicit and implicit.

    Near q = π/2 gravity adds no stiffness (``d(tau_g*sin q)/dq = 0`` there), so the motion is the
    linear oscillator ``a = -w2*q - c*v`` with ``w2 = kp/I`` and ``c = kv/I``. The explicit PD submits
    ``kv*qd`` from the start of the step (chapter 1's step with ``c_implicit = 0``); implicitfast folds
    ``kv`` into the step (``c_implicit = c``). Growth above 1 means the run diverges; the explicit
    bound is ``h²ω² < 4 - 2hc``, the implicit one ``h²ω² < 4 + 2hc``.

    Returns:
      ``(explicit_growth, implicit_growth)``.
    """
    w2, c = kp / inertia, kv / inertia
    explicit = step_growth(semi_implicit_euler, timestep, w2, c, c_implicit=0.0)
    implicit = step_growth(semi_implicit_euler, timestep, w2, c, c_implicit=c)
    return explicit, implicit


def kv_bound(kp: float, timestep, *, integrator: str = 'Euler', inertia: float = LINK_INERTIA):
    """The kv on the oscillation bound of the PD-held pendulum near horizontal, N·m·s/rad.

    The step is stable while ``h²ω² < 4 + 4h·c_implicit - 2hc`` (:func:`physai.laws.stability.oscillation_bound`)
    with ``ω² = kp/I``, ``c = kv/I`` and ``c_implicit`` the part of ``c`` the ``integrator`` takes implicitly
    (:func:`physai.laws.stability.c_implicit_for`, no joint damping). The bound is affine in kv, so one kv lies on
    it:

    - ``'Euler'``, the explicit PD (``<position>`` under Euler is the explicit PD's step, ``c_implicit = 0``):
      ``kv = 2I/h - h·kp/2``; the run is stable *below* it (``h²ω² < 4 - 2hc``). Zero or less: no kv is.
    - ``'implicitfast'`` or ``'implicit'`` (``c_implicit = c``): ``kv = h·kp/2 - 2I/h``; stable *above* it
      (``h²ω² < 4 + 2hc``). Zero or less: every kv is.

    The damping bound ``hc < 2(1 + h·c_implicit)`` adds nothing here: for kp > 0 the oscillation bound is the
    stricter one.

    Args:
      kp: stiffness, N·m/rad, >= 0.
      timestep: h, s, in (0, 0.1]: a number or an array of any shape.
      integrator: ``'Euler'`` (the explicit PD), ``'implicitfast'`` or ``'implicit'``.
      inertia: I about the hinge, kg·m² (the pendulum's link by default).

    Returns:
      kv on the bound, the shape of ``timestep`` (a float for a number); negative where the bound needs none.
    """
    checks.nonnegative('kp', kp, 'N·m/rad')
    checks.positive('inertia', inertia, 'kg·m²')
    checks.one_of('integrator', integrator, stability.IMPLICIT_DAMPING)
    h = np.asarray(timestep, dtype=float)
    if h.size == 0 or not np.all(np.isfinite(h) & (h > 0) & (h <= checks.MAX_TIMESTEP)):
        raise ValueError(f'timestep must be in (0, {checks.MAX_TIMESTEP:g}] s, got {timestep!r}')

    def margin(kv):  # oscillation bound minus h²ω², affine in kv
        c_implicit = stability.c_implicit_for(integrator, kv, 0.0, inertia)
        return stability.oscillation_bound(h, kv / inertia, c_implicit) - h * h * kp / inertia

    scale = inertia / h  # N·m·s/rad: where 2hc = 2, a kv of the bound's own size
    at_zero = margin(0.0)
    kv = -at_zero * scale / (margin(scale) - at_zero)
    return float(kv) if kv.ndim == 0 else kv


def divergence_map(*, timesteps: Sequence[float] = MAP_TIMESTEPS, kvs: Sequence[float] = MAP_KVS,
                   kps: Sequence[float] = MAP_KPS, duration: float = 3.0) -> list[dict]:
    """Which (timestep, kv, kp) cells diverge with the explicit PD and with the implicit one, per integrator.

    Every cell holds the pendulum at horizontal from hanging (command π/2 from t = 0) for ``duration``
    seconds: with the explicit :class:`IdealPD` (no clamp), with :class:`ImplicitPD` under implicitfast (kv
    implicit, kp explicit) and with :class:`ImplicitPD` under MuJoCo's ``discrete`` integrator, which solves the
    step in the metric ``M + hD + h²K`` and so takes the spring kp implicitly as well. The explicit PD through a
    ``<motor>`` is the same step as ``<position>`` under MuJoCo's Euler integrator (which takes ``kv``
    explicitly), so all cells run together on ``mujoco.batch.Batch`` as ``<position>`` models under the three
    integrators; ``tests/test_actuators.py`` checks that equality against the per-step loop of :func:`simulate`.

    Returns:
      Rows ``kp``, ``kv``, ``timestep``, ``h_omega``, ``h_c``, ``explicit_growth``, ``implicit_growth``,
      ``explicit``, ``implicit`` (implicitfast), ``discrete`` (``stable`` / ``diverged`` from MuJoCo).
    """
    cells = [(kp, kv, h) for kp in kps for kv in kvs for h in timesteps]
    integrators = ('Euler', 'implicitfast', 'discrete')
    actuators, pendulums = [], []
    for kp, kv, h in cells:
        for integrator in integrators:
            actuators.append(ImplicitPD(kp=kp, kv=kv))
            pendulums.append(PendulumParams(timestep=h, integrator=integrator))
    commands = [np.full(max(1, round(duration / p.timestep)), HORIZONTAL) for p in pendulums]
    results = run_implicit(actuators, pendulums, commands, 0.0, 0.0)
    verdicts = ['diverged' if r[3] else 'stable' for r in results]
    rows = []
    for k, (kp, kv, h) in enumerate(cells):
        explicit_growth, implicit_growth = explicit_implicit_growth(kp, kv, h)
        explicit, implicit, discrete = verdicts[3 * k:3 * k + 3]
        rows.append({'kp': kp, 'kv': kv, 'timestep': h, 'h_omega': h * math.sqrt(kp / LINK_INERTIA),
                     'h_c': h * kv / LINK_INERTIA, 'explicit_growth': explicit_growth,
                     'implicit_growth': implicit_growth, 'explicit': explicit, 'implicit': implicit,
                     'discrete': discrete})
    return rows


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference over the common length; a round-off bound when it is rounding."""
    n = min(len(a), len(b))
    return robust.difference(np.max(np.abs(a[:n] - b[:n])))


@experiment('actuator-native', summary="our DC motor and delay against MuJoCo 3.17's <dcmotor> and delay",
            columns=(('case', 's'), ('integrator', 's'), ('max_abs_diff', '.2e'), ('unit', 's')))
def native_comparison() -> list[dict]:
    """Where our explicit models and MuJoCo's native counterparts agree, and where they part."""
    cfg = DCMotor(kp=100.0, kv=5.0, forcerange=DC_EFFORT, saturation_effort=DC_SATURATION,
                  velocity_limit=8.0)
    rows = []
    # the envelope itself: full positive and negative voltage at every speed
    m = native_model(native_dc_motor_spec(cfg), PendulumParams())
    d = mujoco.MjData(m)
    worst = 0.0
    for v in np.linspace(-3 * cfg.velocity_limit, 3 * cfg.velocity_limit, 121):
        low, high = cfg.limits(0.0, v)
        for u, want in ((1e6, high), (-1e6, low)):
            mujoco.mj_resetData(m, d)
            d.qvel[0], d.ctrl[0] = v, u
            mujoco.mj_forward(m, d)
            worst = max(worst, abs(float(d.actuator_force[0]) - float(want)))
    rows.append({'case': 'dcmotor torque at full voltage vs dc_motor_envelope', 'integrator': '-',
                 'max_abs_diff': robust.difference(worst), 'unit': 'N m'})
    for integrator in ('Euler', 'implicitfast'):
        p = PendulumParams(integrator=integrator)
        ours = simulate([cfg], pendulum=p, command=Step(), duration=4.0)[0].q
        rows.append({'case': 'dcmotor, back-EMF compensated vs DCMotor', 'integrator': integrator,
                     'max_abs_diff': _max_diff(native_dc_motor_run(cfg, pendulum=p), ours),
                     'unit': 'rad'})
    ours = simulate([cfg], command=Step(), duration=4.0)[0].q
    rows.append({'case': 'dcmotor, plain voltage (back-EMF damping) vs DCMotor',
                 'integrator': 'implicitfast',
                 'max_abs_diff': _max_diff(native_dc_motor_run(cfg, compensate=False), ours),
                 'unit': 'rad'})
    delayed = DelayedPD(kp=100.0, kv=5.0, delay=24)
    p = PendulumParams()
    nstep = round(6.0 / p.timestep)
    seen = delay_commands(held_commands(Square(), p, nstep)[:, 0], delayed.delay)
    m = pendulum_model(p, ImplicitPD(kp=100.0, kv=5.0))
    implicit_on_delayed = run_with_ctrl(m, mujoco.MjData(m), nstep, lambda i, q, v: seen[i])
    native = native_delay_run(delayed)
    rows.append({'case': 'position delay, history = first command vs delay_commands',
                 'integrator': 'implicitfast', 'max_abs_diff': _max_diff(native, implicit_on_delayed),
                 'unit': 'rad'})
    rows.append({'case': 'position delay, history = zeros (default) vs first command',
                 'integrator': 'implicitfast',
                 'max_abs_diff': _max_diff(native_delay_run(delayed, hold_first=False), native),
                 'unit': 'rad'})
    explicit = simulate([delayed], command=Square(), duration=6.0)[0].q
    rows.append({'case': 'position delay (implicit) vs DelayedPD (explicit)',
                 'integrator': 'implicitfast', 'max_abs_diff': _max_diff(native, explicit), 'unit': 'rad'})
    return rows


@experiment('actuator-map',
            summary='timestep x kv x kp: where the explicit PD diverges and the implicit (implicitfast, discrete) holds',
            columns=(('kp', '.0f'), ('kv', '.1f'), ('timestep', '.5f'), ('h_omega', '.3f'), ('h_c', '.3f'),
                     ('explicit_growth', '.4f'), ('implicit_growth', '.4f'), ('explicit', 's'),
                     ('implicit', 's'), ('discrete', 's')))
def actuator_map() -> list[dict]:
    return divergence_map()
