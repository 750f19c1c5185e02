"""Chapter 2's experiments: the pendulum under each actuator model, swept, mapped and held against MuJoCo's own.

Each table is registered by name (``python -m physai NAME``): ``actuator-sweep PARAM`` (one parameter over five
values, :func:`sweep`, read off by :func:`step_metrics`), ``actuator-map`` (timestep × kv × kp: where the explicit
PD diverges and the implicit ones hold, :func:`divergence_map`, with the kv on each stability bound,
:func:`kv_bound`) and ``actuator-native`` (our DC motor and delay against MuJoCo 3.17's ``<dcmotor>`` and actuator
delay, :func:`native_comparison`). What Isaac Lab's documentation adds: the explicit torque clipped again by the
joint (``double-clip``), the solver's gains on explicit joints (``solver-gains``), a delay drawn per episode
(``delay-randomized``); and on the real robot, the SO-101's elbow under Menagerie's implicit servo and explicit
models of its STS3215 (``so101-elbow-models``). The models are :mod:`physai.laws.drives`, the runner
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
    'viscous-friction': (0, 0.05, 0.2, 0.5, 1),
    'effort-limit': (1, 2, 3, 4, 6),
    'velocity-limit': (2, 4, 8, 16, 32),
    'delay': (0, 6, 12, 24, 48),
}

SWEEP_KEY = {'stiffness': 'kp', 'damping': 'kv', 'armature': 'armature', 'friction': 'frictionloss',
             'viscous-friction': 'damping', 'effort-limit': 'forcerange', 'velocity-limit': 'velocity_limit',
             'delay': 'delay_steps'}

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
    4 s), friction (kp = kv = 0, free swing from 4π rad/s, 6 s, joint ``frictionloss`` in N·m), viscous-friction
    (the same swing with joint ``damping`` in N·m·s/rad instead), effort-limit (ideal PD kp 400 kv 20
    from hanging towards horizontal, 6 s, its clamp E = ``forcerange`` in N·m), velocity-limit (DC motor S 12, E 6, kp 100, kv 5, the step,
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
    elif param in ('friction', 'viscous-friction'):
        joint = 'frictionloss' if param == 'friction' else 'damping'
        runs = simulate([IdealPD(kp=0.0, kv=0.0)] * len(values),
                        pendulum=[PendulumParams(**{joint: x}) for x in values], command=0.0,
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
        elif param in ('friction', 'viscous-friction'):
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
        rows.append({k: row[k] for k, *_ in SWEEP_COLUMNS[param]})
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
                 ('final_speed', '.4f', 'rad/s')),
    'viscous-friction': (('damping', '.2f'), ('decay_s', '.3f'), ('turns', '.2f'), ('final_speed', '.4f', 'rad/s')),
    'effort-limit': (('forcerange', '.1f'), ('mean_angle_rad', '.4f'), ('p2p_rad', '.4f')),
    'velocity-limit': (('velocity_limit', '.0f', 'rad/s'), ('peak_speed', '.3f', 'rad/s'), ('error_deg', '.3f'),
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


# ------------------------------------------------------------------------------------------------
# what Isaac Lab's documentation adds: the second clip, the solver's gains, randomized delay


def explicit_through_clamped_motor(actuator, joint_limit: float, *, command=Step(at=0.0),
                                   duration: float = 6.0) -> tuple[Run, np.ndarray]:
    """An explicit model whose torque goes through a ``<motor>`` that clamps it again at ±``joint_limit``.

    This is the path of an explicit actuator in Isaac Lab: the model clips its torque at its own
    ``actuator_effort_limit``, and the physics engine clips what it receives once more at the joint's
    ``joint_effort_limit`` (the names of Isaac Lab 3.0; before it, ``effort_limit`` and ``effort_limit_sim``). In
    MuJoCo the second clip is the ``<motor>``'s ``forcerange``. Same physics as :func:`physai.engine.pendulum.simulate` (the same start,
    nudge and held commands), one physics step at a time.

    Args:
      actuator: an explicit config of :mod:`physai.laws.drives` (``IdealPD``, ``DCMotor``, ...), no delay.
      joint_limit: the motor's forcerange ±E_joint, N·m (> 0; ``inf`` for none).
      command: the position command, as for ``simulate``.
      duration: s.

    Returns:
      ``(run, requested)``: the :class:`Run` (its ``torque`` is what the joint got, ``d.actuator_force``) and
      (n,) the torque the model computed and would report, N·m.
    """
    if not getattr(actuator, 'explicit', False):
        raise ValueError(f'actuator must be an explicit model (IdealPD, DCMotor, ...), got {actuator!r}')
    checks.limit('joint_limit', joint_limit, 'N·m')
    checks.positive('duration', duration, 's')
    p = PendulumParams()
    m = pendulum_model(p, actuator)
    if math.isfinite(joint_limit):
        m.actuator_forcelimited[0] = 1
        m.actuator_forcerange[0] = (-joint_limit, joint_limit)
    d = mujoco.MjData(m)
    from physai.engine import perturb
    d.qpos[0] = 0.0 + perturb.size()
    mujoco.mj_forward(m, d)
    nstep = max(1, round(duration / p.timestep))
    cmd = held_commands(command, p, nstep)
    q, v = np.empty(nstep + 1), np.empty(nstep + 1)
    applied, requested = np.empty(nstep), np.empty(nstep)
    q[0], v[0] = d.qpos[0], d.qvel[0]
    from physai.engine import mj
    with mj.captured_warnings():
        for k in range(nstep):
            requested[k] = float(actuator.torque(q[k], v[k], cmd[k, 0], cmd[k, 1], cmd[k, 2]))
            d.ctrl[0] = requested[k]
            mujoco.mj_step(m, d)
            applied[k] = d.actuator_force[0]
            q[k + 1], v[k + 1] = d.qpos[0], d.qvel[0]
    full = np.concatenate([cmd, cmd[-1:]])
    run = Run(actuator, p, p.timestep * np.arange(nstep + 1), q, v, full[:, 0].copy(), applied,
              mj.diverged(v=v, warned=mj.warned(d)), full)
    return run, requested


DOUBLE_CLIP_MODEL_LIMIT = 6.0  # N·m: the model's own effort limit
DOUBLE_CLIP_JOINT_LIMITS = (math.inf, 2.0)  # N·m: the joint's, none and one below the hold torque


@experiment('double-clip', summary="an explicit PD (E = 6 N m) through a joint that clamps again at 2 N m",
            columns=(('joint_limit', '.1f', 'N·m'), ('model_peak', '.2f', 'N·m'), ('applied_peak', '.2f', 'N·m'),
                     ('mean_angle_rad', '.4f'), ('p2p_rad', '.4f'), ('vs_model_limit_2', '.1e', 'rad')))
def double_clip() -> list[dict]:
    """The effort-limit sweep's explicit PD (kp 400, kv 20, E = 6 N·m) with the joint's own limit on top.

    Returns:
      One row per joint limit: ``model_peak`` (the largest torque the model computed, N·m), ``applied_peak``
      (the largest the joint got), the mean and peak-to-peak angle over the last 2 s (rad), and
      ``vs_model_limit_2``: the largest angle difference (rad) from the same PD with its own limit at 2 N·m (a
      round-off bound when they are the same run).
    """
    reference = simulate([IdealPD(kp=400.0, kv=20.0, forcerange=2.0)], command=Step(at=0.0), duration=6.0)[0]
    rows = []
    for limit in DOUBLE_CLIP_JOINT_LIMITS:
        run, requested = explicit_through_clamped_motor(
            IdealPD(kp=400.0, kv=20.0, forcerange=DOUBLE_CLIP_MODEL_LIMIT), limit)
        tail = _tail(run, 2.0)
        rows.append({'joint_limit': limit, 'model_peak': float(np.max(np.abs(requested))),
                     'applied_peak': float(np.max(np.abs(run.torque))), 'mean_angle_rad': float(np.mean(tail)),
                     'p2p_rad': float(np.ptp(tail)), 'vs_model_limit_2': _max_diff(run.q, reference.q)})
    return rows


@experiment('solver-gains', summary='the gains MuJoCo holds for each model: zero for every explicit one',
            columns=(('model', 's'), ('actuator', 's'), ('solver_kp', '.1f', 'N·m/rad'), ('solver_kv', '.1f', 'N·m·s/rad'),
                     ('forcelimited', 's')))
def solver_gains(kp: float = 100.0, kv: float = 5.0) -> list[dict]:
    """What the compiled model holds for each actuator model at the same kp, kv and a 6 N·m limit.

    The solver's kp is ``-actuator_biasprm[1]`` and its kv ``-actuator_biasprm[2]``: an implicit model gives
    them to MuJoCo, an explicit one leaves a ``<motor>`` with both at zero (as Isaac Lab sets the simulation's
    joint stiffness and damping to zero for explicit actuators) and computes the torque itself.
    """
    from physai.laws.drives import RemotizedPD
    models = {'implicit': ImplicitPD(kp=kp, kv=kv, forcerange=6.0),
              'ideal PD': IdealPD(kp=kp, kv=kv, forcerange=6.0),
              'DC motor': DCMotor(kp=kp, kv=kv, forcerange=6.0, saturation_effort=DC_SATURATION,
                                  velocity_limit=8.0),
              'delayed PD': DelayedPD(kp=kp, kv=kv, forcerange=6.0, delay=12),
              'remotized PD': RemotizedPD(kp=kp, kv=kv, table=((0.0, 6.0), (HORIZONTAL, 3.0)))}
    rows = []
    for name, actuator in models.items():
        m = pendulum_model(PendulumParams(), actuator)
        rows.append({'model': name, 'actuator': 'position' if not actuator.explicit else 'motor',
                     'solver_kp': float(-m.actuator_biasprm[0, 1]) + 0.0,
                     'solver_kv': float(-m.actuator_biasprm[0, 2]) + 0.0,
                     'forcelimited': 'yes' if m.actuator_forcelimited[0] else 'no'})
    return rows


DELAY_RANGE = (0, 12)  # physics steps: min_delay, max_delay
DELAY_EPISODES = 8
DELAY_SEED = 0


def randomized_delays(min_delay: int = DELAY_RANGE[0], max_delay: int = DELAY_RANGE[1], *,
                      episodes: int = DELAY_EPISODES, seed: int = DELAY_SEED) -> list[dict]:
    """Episodes of the delayed PD (kp 100, kv 5, the delay sweep's square wave), each with its own delay.

    As Isaac Lab's delayed actuator does at every reset, each episode draws its delay uniformly from the whole
    numbers ``min_delay … max_delay`` (physics steps) and keeps it for the episode.

    Args:
      min_delay, max_delay: whole numbers of physics steps, 0 <= min_delay <= max_delay.
      episodes: how many episodes (>= 1).
      seed: the generator's seed (NumPy's default generator).

    Returns:
      One row per episode: ``episode``, ``delay_steps``, ``delay_ms``, ``lag_ms`` (command edge to the halfway
      crossing, :func:`lag_ms`).
    """
    for name, value in (('min_delay', min_delay), ('max_delay', max_delay)):
        if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 0):
            raise ValueError(f'{name} must be a whole number of physics steps >= 0, got {value!r}')
    if max_delay < min_delay:
        raise ValueError(f'max_delay must be >= min_delay = {min_delay}, got {max_delay!r}')
    if not (isinstance(episodes, (int, np.integer)) and episodes >= 1):
        raise ValueError(f'episodes must be a whole number >= 1, got {episodes!r}')
    delays = np.random.default_rng(seed).integers(min_delay, max_delay + 1, size=episodes)
    runs = simulate([DelayedPD(kp=100.0, kv=5.0, delay=int(x)) for x in delays], command=Square(), duration=6.0)
    return [{'episode': k, 'delay_steps': int(x), 'delay_ms': 1e3 * int(x) * TIMESTEP, 'lag_ms': lag_ms(run)}
            for k, (x, run) in enumerate(zip(delays, runs))]


@experiment('delay-randomized', summary='the delayed PD with a delay drawn per episode from 0 ... 12 steps',
            columns=(('episode', 'd'), ('delay_steps', 'd'), ('delay_ms', '.1f'), ('lag_ms', '.1f')))
def delay_randomized() -> list[dict]:
    return randomized_delays()


# ------------------------------------------------------------------------------------------------
# on the real robot: the SO-101's elbow servo, implicit (Menagerie) and explicit (a DC motor)

STS3215_STALL_TORQUE = 2.94
"""N·m: the stall torque used for the STS3215: Menagerie's ``forcerange`` for its ``sts3215`` class (2.94 N·m is
30 kg·cm)."""

STS3215_NO_LOAD_SPEED = 45 * 2 * math.pi / 60
"""rad/s (45 rpm, 0.222 s per 60°): the STS3215's no-load speed in the derivation behind Menagerie's gains
(github.com/Gregory119/RBE501-RL-arm-project, ``gymnasium_env/calc_actuator_model.py``: ``omega_nl``, from the 12 V
ST-3215-C047's figures); nobody has measured it on the book's arm, so replace it with your servo's measured one. The
chapter also runs twice this value."""


def so101_elbow_models(step: float = 0.2) -> dict:
    """The SO-101's elbow stepped by ``step`` rad under three actuator models, the other joints on Menagerie's.

    ``Menagerie`` is the model as shipped: ``<position kp=998.22 kv=2.731 forcerange=±2.94>``, implicit. ``ideal
    PD`` computes the same law explicitly through a ``<motor>`` (:class:`IdealPD`, E = 2.94 N·m). ``DC motor``
    clips it to the torque-speed band of a motor with stall torque S = E = ``STS3215_STALL_TORQUE`` and no-load
    speed V (:class:`DCMotor`), at ``STS3215_NO_LOAD_SPEED`` and twice that.

    Returns:
      Model name → :class:`physai.experiments.position_actuators_further.JointStep`.
    """
    from physai.engine import so101
    from physai.experiments.position_actuators_further import so101_joint_step

    kp, kv, e = so101.MENAGERIE_KP, so101.MENAGERIE_KV, so101.MENAGERIE_FORCERANGE
    ideal = IdealPD(kp=kp, kv=kv, forcerange=e)
    models = {'Menagerie (implicit)': None, 'ideal PD (explicit)': ideal}
    for factor in (1, 2):
        v = factor * STS3215_NO_LOAD_SPEED
        models[f'DC motor, V = {v:.1f} rad/s'] = DCMotor(kp=kp, kv=kv, forcerange=e,
                                                        saturation_effort=STS3215_STALL_TORQUE, velocity_limit=v)
    return {name: so101_joint_step('elbow_flex', step, law=None if cfg is None else cfg.torque)
            for name, cfg in models.items()}


@experiment('so101-elbow-models', summary="the SO-101's elbow after a 0.2 rad step: Menagerie's implicit servo "
                                          'against explicit models of the STS3215',
            columns=(('model', 's'), ('rise_ms', '.1f'), ('overshoot_pct', '.1f'), ('peak_speed', '.2f', 'rad/s'),
                     ('error_deg', '.3f'), ('max_diff_deg', '.2f')))
def so101_elbow_table() -> list[dict]:
    """Rows of :func:`so101_elbow_models`: rise time, overshoot, peak speed, settled error, and the largest angle
    difference from Menagerie's run (degrees)."""
    from physai.experiments.position_actuators_further import joint_step_metrics

    runs = so101_elbow_models()
    base = runs['Menagerie (implicit)']
    rows = []
    for name, run in runs.items():
        metrics = joint_step_metrics(run)
        n = min(len(run.q), len(base.q))
        rows.append({'model': name, 'rise_ms': metrics['rise_ms'], 'overshoot_pct': metrics['overshoot_pct'],
                     'peak_speed': metrics['peak_speed'], 'error_deg': metrics['error_deg'],
                     'max_diff_deg': math.degrees(float(np.max(np.abs(run.q[:n] - base.q[:n]))))})
    return rows
