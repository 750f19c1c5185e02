"""Chapter 1's servo panel, its physics: the link's step response, sag and rise against kp, and the stability map.

The panel (:mod:`physai.interface.position_actuators_panels`) reads every figure from here: ``servo_step``,
``servo_kp_curve`` and ``servo_stability`` (cached per argument, so a kp move reruns only what depends on kp),
``servo_bounds`` (the stability bound on kp for a timestep and integrator), and the step budget a slider move may
spend (``PANEL_STEP_BUDGET``). The "Going further" table ``bound-swing`` runs the panel's top kp under
implicitfast for longer: a growth a hair above 1, a slow divergence.
"""

from __future__ import annotations

import math

import numpy as np

from physai.laws import checks, robust
from physai.engine.link import LINK_INERTIA, ServoParams, step_responses
from physai.experiments.registry import cached, experiment
from physai.laws.stability import critical_h_omega, e_folding_time, integrator_growth
from physai.experiments.position_actuators import SO101_ARMATURE


PANEL_KP_GRID = np.array(robust.log_grid(1.0, 30000.0, 25))
"""kp values of the panel's sag / rise curve, N·m/rad."""

STABILITY_KP = np.array(robust.log_grid(1.0, 30000.0, 19))
"""kp rows of the panel's stability map, N·m/rad."""

STABILITY_ARMATURE = np.linspace(0.0, 0.1, 11)
"""armature columns of the panel's stability map, kg·m²."""

STABILITY_STEPS = 300
"""Steps of each short run in the stability map (whatever the timestep)."""


def panel_servo(kp, armature, timestep, integrator, dampratio) -> ServoParams:
    """The live panel's servo on the link: its sliders' values as :class:`ServoParams` (floats, checked there)."""
    return ServoParams(kp=float(kp), armature=float(armature), timestep=float(timestep),
                       integrator=integrator, dampratio=float(dampratio))


@cached(maxsize=64)
def servo_step(kp: float, armature: float, timestep: float, integrator: str,
               dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0):
    """One step response (:func:`physai.engine.link.step_response` on one thread), cached by its arguments."""
    params = panel_servo(kp, armature, timestep, integrator, dampratio)
    return step_responses([params], q0=q0, duration=duration, nthread=1)[0]


PANEL_STEP_BUDGET = 12_000
"""Physics steps, weighted by :data:`INTEGRATOR_COST`, of the step response the live panel runs before it answers a
slider (6000 steps at 0.5 ms, or RK4 at 1 ms: 15-30 ms of MuJoCo on this book's 2-core machine). A longer run (RK4
below a 1 ms step) answers with its first :data:`PANEL_FIRST_PART` and draws the rest when the panel's worker has
it."""

PANEL_FIRST_PART = 1.0
"""s: the part of a long step response the live panel draws first (the rise of every servo that settles in time)."""

INTEGRATOR_COST = {'RK4': 4}
"""Cost of one physics step against an Euler step (1 unless listed): RK4 evaluates the dynamics four times."""


def panel_step_cost(timestep: float, integrator: str, duration: float = 3.0) -> int:
    """The weighted physics steps of one step response (see :data:`PANEL_STEP_BUDGET`)."""
    return max(1, round(duration / timestep)) * INTEGRATOR_COST.get(integrator, 1)


@cached(maxsize=64)
def servo_step_start(kp: float, armature: float, timestep: float, integrator: str,
                     dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0):
    """The first :data:`PANEL_FIRST_PART` of :func:`servo_step`'s run, sample for sample the same (the batch is the
    same arithmetic, however far it runs); None when the whole run fits :data:`PANEL_STEP_BUDGET`.

    Its figures describe only that part: the panel draws the trajectory and says the rest is coming. A part that
    diverged is the whole story, since a diverged run ends where MuJoCo flagged it.
    """
    if panel_step_cost(timestep, integrator, duration) <= PANEL_STEP_BUDGET:
        return None
    params = panel_servo(kp, armature, timestep, integrator, dampratio)
    return step_responses([params], q0=q0, duration=min(PANEL_FIRST_PART, duration), nthread=1)[0]


@cached(maxsize=16)
def servo_kp_curve(armature: float, timestep: float, integrator: str, dampratio: float = 1.0,
                   q0: float = -0.5, duration: float = 3.0) -> dict:
    """Sag and rise time over :data:`PANEL_KP_GRID`, one batched run (does not depend on kp).

    Returns:
      dict with ``kp`` (n,), ``sag_deg`` (n,), ``rise_ms`` (n,) (NaN where the run did not settle) and
      ``diverged`` (n,) bool: diverged, or never settled (still swinging at the end, on a bound).
    """
    params = [panel_servo(kp, armature, timestep, integrator, dampratio) for kp in PANEL_KP_GRID]
    responses = step_responses(params, q0=q0, duration=duration)
    settled = np.array([r.settled for r in responses])
    return {'kp': PANEL_KP_GRID,
            'sag_deg': np.where(settled, [r.sag_deg for r in responses], np.nan),
            'rise_ms': np.where(settled, [r.rise_ms for r in responses], np.nan),
            'diverged': ~settled}


def unstable(response, q0: float) -> bool:
    """The stability map's verdict on one short run: diverged (:func:`physai.engine.mj.diverged`, the package's
    rule), or a limit cycle: still swinging wider than ``1.5 |q0|`` over its last sixth, so it never settles."""
    if response.diverged:
        return True
    tail = response.q[-len(response.q) // 6:]
    return bool(np.max(np.abs(tail)) > 1.5 * abs(q0))


def servo_bounds(timestep: float, integrator: str, dampratio: float = 1.0) -> dict:
    """The stability map's analytic curves over armature (no simulation, so the panel draws them at once).

    Returns:
      dict with ``h_omega_star`` (the integrator's critical hω, :func:`critical_h_omega`; inf when none) and the
      curves ``bound_armature`` (m,) kg·m², ``bound_kp`` (m,) for growth = 1 (NaN when there is no bound) and
      ``two_kp`` (m,) for hω = 2, N·m/rad.
    """
    star = critical_h_omega(integrator, dampratio)
    armature = np.linspace(0.0, 0.1, 101)
    inertia = LINK_INERTIA + armature
    return {'h_omega_star': star, 'bound_armature': armature,
            'bound_kp': (star / timestep) ** 2 * inertia if math.isfinite(star)
            else np.full_like(armature, np.nan),
            'two_kp': (2.0 / timestep) ** 2 * inertia}


@cached(maxsize=16)
def servo_stability(timestep: float, integrator: str, dampratio: float = 1.0,
                    q0: float = -0.5) -> dict:
    """Where MuJoCo diverges over (armature, kp), and the analytic bound (does not depend on kp, armature).

    Runs :data:`STABILITY_STEPS` steps for each cell of :data:`STABILITY_KP` × :data:`STABILITY_ARMATURE`
    in one batch; a cell counts as diverged if MuJoCo flags it or it ends swinging wider than 1.5 |q0|.

    Returns:
      dict with ``kp`` (nk,), ``armature`` (na,), ``diverged`` (nk, na) bool, and :func:`servo_bounds`'
      ``h_omega_star``, ``bound_armature``, ``bound_kp`` and ``two_kp``.
    """
    params = [panel_servo(kp, a, timestep, integrator, dampratio)
              for kp in STABILITY_KP for a in STABILITY_ARMATURE]
    responses = step_responses(params, q0=q0, duration=STABILITY_STEPS * timestep)
    diverged = np.array([unstable(r, q0) for r in responses]).reshape(len(STABILITY_KP), -1)
    return {'kp': STABILITY_KP, 'armature': STABILITY_ARMATURE, 'diverged': diverged,
            **servo_bounds(timestep, integrator, dampratio)}


BOUND_SWING_DURATION = 12.0
"""s: how long :func:`bound_swing` runs the panel's top-kp servo (a few e-folding times, still far inside the 20π rad
divergence bound)."""

BOUND_SWING_WINDOW = 0.25
"""s: the swing amplitude is read once per window of this length (half its peak-to-peak)."""

BOUND_SWING_SKIP = 0.5
"""s: windows before this are left out of the fit (the fast-decaying second mode of the step is still there)."""


def swing_amplitudes(t: np.ndarray, q: np.ndarray, window: float = BOUND_SWING_WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """Half the peak-to-peak of ``q`` over consecutive windows: the amplitude of a swing about a fixed point.

    Args:
      t: (n,) times, s, evenly spaced.
      q: (n,) angles, rad.
      window: window length, s.

    Returns:
      ``(centres, amplitudes)``, (m,) each: each window's mid-time (s) and amplitude (rad).
    """
    checks.positive('window', window, 's')
    per = max(2, round(window / (t[1] - t[0])))
    m = len(q) // per
    blocks = np.asarray(q[:m * per], dtype=float).reshape(m, per)
    centres = np.asarray(t[:m * per], dtype=float).reshape(m, per).mean(axis=1)
    return centres, 0.5 * np.ptp(blocks, axis=1)


@experiment('bound-swing', summary="the panel's top kp under implicitfast: growth a hair above 1, a slow divergence",
            columns=(('quantity', 's'), ('linear_step', '.3g'), ('mujoco', '.3g')))
def bound_swing(kp: float = float(PANEL_KP_GRID[-1]), armature: float = SO101_ARMATURE, timestep: float = 0.005,
                duration: float = BOUND_SWING_DURATION) -> list[dict]:
    """How fast the swing of a servo a hair past implicitfast's bound grows: the linear step against MuJoCo.

    The panel's servo (dampratio 1) at ``kp`` and ``armature`` sits at hω ≈ 2 + 2√2, on the bound. The linear step
    (:func:`integrator_growth`) predicts a growth per step g and an e-folding time h/ln g
    (:func:`physai.laws.stability.e_folding_time`). The MuJoCo run (implicitfast, from rest at q = −0.5 rad to the
    command 0) is read as a swing amplitude per :data:`BOUND_SWING_WINDOW` (:func:`swing_amplitudes`); a straight
    line through log(amplitude) against time after :data:`BOUND_SWING_SKIP` gives the measured growth per step,
    exp(slope·h).

    Returns:
      Rows ``quantity``, ``linear_step``, ``mujoco``: the growth per step minus 1, the e-folding time (s), and the
      factor by which the swing grows from the first fitted window to the last (the linear step's g^n over the n
      steps between their mid-times, against the ratio of the run's two amplitudes).
    """
    params = panel_servo(kp, armature, timestep, 'implicitfast', 1.0)
    run = step_responses([params], duration=duration, nthread=1)[0]
    if run.diverged:
        raise RuntimeError(f'bound_swing: the run at kp={kp}, armature={armature} diverged within {duration} s; '
                           'it is meant to sit on the bound')
    inertia = params.inertia
    g = integrator_growth('implicitfast', timestep, kp / inertia, params.kv_effective / inertia)
    centres, amplitude = swing_amplitudes(run.t, run.q)
    fit = centres >= BOUND_SWING_SKIP
    centres, amplitude = centres[fit], amplitude[fit]
    slope = float(np.polyfit(centres, np.log(amplitude), 1)[0])  # 1/s
    g_run = math.exp(slope * timestep)
    steps = (centres[-1] - centres[0]) / timestep
    return [
        {'quantity': 'growth per step - 1', 'linear_step': g - 1.0, 'mujoco': g_run - 1.0},
        {'quantity': 'e-folding time (s)', 'linear_step': e_folding_time(g, timestep),
         'mujoco': e_folding_time(g_run, timestep)},
        {'quantity': f'swing growth from {centres[0]:.2f} s to {centres[-1]:.2f} s', 'linear_step': g ** steps,
         'mujoco': float(amplitude[-1] / amplitude[0])},
    ]

