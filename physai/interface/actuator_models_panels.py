"""Chapter 2's live panel and its static twins: the pendulum under each actuator model.

:func:`actuator_panel` runs :func:`physai.engine.pendulum.simulate` for the chosen model (implicit, ideal PD, DC
motor, delayed PD, remotized PD) with kp, kv, effort and velocity limits, delay, armature, timestep and integrator,
and draws the step response with its readout (:func:`panel_readout`) and the applied torque; :func:`forcerange_twin`
is the effort-limit figure precomputed for the published page. :func:`plot_runs` draws a sweep's runs on one axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from physai.experiments import registry
from physai.interface import live, plots, twin
from physai.engine.pendulum import PendulumParams, Run, Step, TAU_G, TIMESTEP, simulate
from physai.experiments.actuator_models import DC_SATURATION, SWEEPS, TAIL, step_metrics, sweep, swing_angle
from physai.interface.plots import SWINGING_P2P_DEG
from physai.laws.drives import Actuator, DCMotor, DelayedPD, IdealPD, ImplicitPD, MODELS, RemotizedPD


def panel_readout(run: Run, metrics: dict) -> str:
    """The live panel's one-line verdict on a step response (``metrics`` from :func:`step_metrics`).

    A settled run reads ``'settling error 1.69°   rise 75 ms'``. A run whose angle still moves more than
    ``plots.SWINGING_P2P_DEG`` peak to peak over the last 0.5 s has no settling error or rise time to
    speak of (both are measured against the mean of that window): it reads ``'still swinging: 15.2°
    peak to peak   rise n/a'`` if its velocity reverses in the window, ``'still creeping: 6.92° in the
    last 0.5 s   rise n/a'`` if it only drifts one way. A diverged run reads ``'diverged after 0.611 s'``.
    """

    if run.diverged or metrics['diverged']:
        return f'diverged after {float(run.t[-1]):.3f} s'
    p2p = metrics['p2p_deg']
    if p2p > SWINGING_P2P_DEG:
        v = run.v[run.t >= run.t[-1] - TAIL + 1e-9]
        signs = np.sign(v[v != 0])
        if np.any(signs[1:] != signs[:-1]):
            return f'still swinging: {p2p:.3g}° peak to peak   rise n/a'
        return f'still creeping: {p2p:.3g}° in the last {TAIL:g} s   rise n/a'
    rise = metrics['rise_ms']
    rise_text = f'{rise:.0f} ms' if math.isfinite(rise) else 'n/a'
    return f"settling error {metrics['error_deg']:.2f}°   rise {rise_text}"


# ------------------------------------------------------------------------------------------------
# figures, the live panel and its static twin


def plot_runs(ax, runs: Sequence[Run], labels: Sequence[str], *, title: str = '',
              command: bool = True) -> None:
    """Position against time for several runs (degrees), with the (first run's) command drawn.

    Args:
      ax: matplotlib axes.
      runs: the runs, (nrun,).
      labels: one legend label per run.
      title: the axes title.
      command: draw the command q*(t) as a dashed step line.
    """
    import matplotlib as mpl

    colors = mpl.colormaps['viridis'](np.linspace(0.0, 0.85, len(runs)))
    if command and len(runs):
        ax.step(runs[0].t, np.degrees(runs[0].command), where='post', color='#555555', lw=1.2,
                ls='--', label='command q*')
    for run, lab, color in zip(runs, labels, colors):
        ax.plot(run.t, np.degrees(run.q), color=color, lw=1.4,
                label=lab + (' (diverged)' if run.diverged else ''))
    ax.set_xlabel('time (s)')
    ax.set_ylabel('joint angle q (deg)')
    if title:
        ax.set_title(title)
    ax.legend(fontsize=7.5, loc='best')


"""The panel's model choice: the models of :mod:`physai.laws.drives` and the remotized PD."""

PANEL_REMOTIZED_SHARE = 0.5
"""The remotized PD's limit at horizontal as a share of the effort slider's E: the panel's table is
((0, E), (π/2, E/2)), linear in between (a linkage that gives less torque the further the link is lifted). At the
default E = 6 N·m that is 3 N·m at horizontal, just above the hold torque; lower E and the link cannot hold."""

PANEL_STEP = Step()
PANEL_DURATION = 3.0  # s
PANEL_NO_LIMIT = 100.0  # N·m: the effort slider's top position means "no limit"
PANEL_TORQUE_STEPS = (4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
"""The torque axes' half-ranges, N·m: the smallest step that shows 1.25 × max(E, tau_g); with no limit, 64."""


def panel_torque_top(limit: float) -> float:
    """The torque axes' half-range for an effort limit (N·m, inf for none): a step of :data:`PANEL_TORQUE_STEPS`,
    so most moves of the effort slider keep the axes, and each step's axes are drawn once."""
    if not math.isfinite(limit):
        return 64.0
    need = 1.25 * max(limit, TAU_G)
    return next((top for top in PANEL_TORQUE_STEPS if top >= need), PANEL_TORQUE_STEPS[-1])


def panel_actuator(model: str, kp: float, kv: float, forcerange: float, velocity_limit: float,
                   delay: int) -> Actuator:
    """The config the live panel's controls describe (``model`` one of ``MODELS``).

    An ``forcerange`` of ``PANEL_NO_LIMIT`` or more means no limit (the DC motor keeps it as its cap, the
    remotized PD as its table's first value). The remotized PD's table is ((0, E), (π/2, E·``PANEL_REMOTIZED_SHARE``))
    and it takes the delay too.
    """
    if model == 'remotized PD':
        table = ((0.0, forcerange), (math.pi / 2, PANEL_REMOTIZED_SHARE * forcerange))
        return RemotizedPD(kp=kp, kv=kv, table=table, delay=int(round(delay)))
    if forcerange >= PANEL_NO_LIMIT and model != 'DC motor':
        forcerange = math.inf
    if model == 'implicit':
        return ImplicitPD(kp=kp, kv=kv, forcerange=forcerange)
    if model == 'ideal PD':
        return IdealPD(kp=kp, kv=kv, forcerange=forcerange)
    if model == 'DC motor':
        return DCMotor(kp=kp, kv=kv, forcerange=forcerange, saturation_effort=DC_SATURATION,
                       velocity_limit=velocity_limit)
    if model == 'delayed PD':
        return DelayedPD(kp=kp, kv=kv, forcerange=forcerange, delay=int(round(delay)))
    raise ValueError(f'model must be one of {", ".join(MODELS)}, got {model!r}')


def panel_run(model: str, kp: float, kv: float, armature: float, timestep: float, integrator: str,
              forcerange: float, velocity_limit: float, delay: int, *, q0: float = 0.0) -> tuple[Run, dict]:
    """One step response (0 → π/2 at 0.5 s, 3 s) for the panel, with :func:`step_metrics`; ``q0`` the start angle,
    rad (hanging by default)."""
    actuator = panel_actuator(model, kp, kv, forcerange, velocity_limit, delay)
    pendulum = PendulumParams(armature=armature, timestep=timestep, integrator=integrator)
    run = simulate([actuator], pendulum=pendulum, command=PANEL_STEP, duration=PANEL_DURATION, q0=q0)[0]
    return run, step_metrics(run, at=PANEL_STEP.at)


PANEL_DEFAULTS = {'model': 'ideal PD', 'kp': 100.0, 'kv': 5.0, 'armature': 0.0, 'timestep': TIMESTEP,
                  'integrator': 'implicitfast', 'forcerange': 6.0, 'velocity_limit': 8.0, 'delay': 12}
"""The live panel's starting values (the defaults of :func:`actuator_panel`)."""

PANEL_TRIES = {
    'ideal PD, kv 100, no limit': {'kv': 100.0, 'forcerange': PANEL_NO_LIMIT},
    'implicit, kv 100, no limit': {'model': 'implicit', 'kv': 100.0, 'forcerange': PANEL_NO_LIMIT},
    'ideal PD, kv 100, E 6': {'kv': 100.0},
    'implicit, kp 30000, 20 ms, implicitfast': {'model': 'implicit', 'kp': 30000.0, 'timestep': 0.02,
                                                'forcerange': PANEL_NO_LIMIT},
    'implicit, kp 30000, 20 ms, discrete': {'model': 'implicit', 'kp': 30000.0, 'timestep': 0.02,
                                            'forcerange': PANEL_NO_LIMIT, 'integrator': 'discrete'},
    'DC motor, V 8': {'model': 'DC motor'},
    'DC motor, V 2': {'model': 'DC motor', 'velocity_limit': 2.0},
    'remotized PD, E 6': {'model': 'remotized PD'},
    'remotized PD, E 5': {'model': 'remotized PD', 'forcerange': 5.0},
}
"""Chapter 2's Try-it suggestions: each is a change of :data:`PANEL_DEFAULTS`, run by :func:`panel_tries`."""


def panel_tries() -> dict[str, tuple[Run, dict]]:
    """The Try-it suggestions (:data:`PANEL_TRIES`), each run as the panel runs it (:func:`panel_run`).

    Returns:
      Name → ``(run, metrics)``.
    """
    return {name: panel_run(**{**PANEL_DEFAULTS, **change}) for name, change in PANEL_TRIES.items()}


def actuator_panel(*, model: str = 'ideal PD', kp: float = 100.0, kv: float = 5.0,
                   armature: float = 0.0, timestep: float = TIMESTEP,
                   integrator: str = 'implicitfast', forcerange: float = 6.0,
                   velocity_limit: float = 8.0, delay: int = 12):
    """Chapter 2's live panel: one actuator model on the pendulum, redrawn on every change.

    Controls: the model (implicit, ideal PD, DC motor, delayed PD, remotized PD), the book's common four (kp,
    armature, timestep, integrator) and the models' own kv, effort limit (for the remotized PD its limit hanging,
    half of it at horizontal), velocity limit (DC motor, stall torque 12 N·m) and delay (delayed and remotized PD,
    physics steps). Plots: (1) the step response 0 → 90°
    with the command, its settling error and rise time, a diverged run flagged; (2) the applied
    torque with the limits that clip it; (3) the path in the torque-speed plane with the allowed band.

    Returns:
      A :class:`physai.interface.live.Panel`.
    """

    run_cached = registry.cached(panel_run, maxsize=16)

    def compute(values: dict) -> dict:
        run, metrics = run_cached(**values)
        return {'run': run, 'metrics': metrics, 'actuator': run.actuator}

    def setup(fig) -> dict:
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={'width_ratios': [1.2, 1, 1]})
        t_end = PANEL_DURATION
        ax1.step([0, PANEL_STEP.at, t_end], [0, 90, 90], where='post', color=plots.COLORS['command'],
                 lw=1, ls='--', label='command q*')
        (q_line,) = ax1.plot([], [], color=plots.COLORS['response'], label='q(t)', animated=True)
        readout = ax1.text(0.98, 0.05, '', transform=ax1.transAxes, ha='right', va='bottom',
                           fontsize=9, animated=True,
                           bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        flag = ax1.text(0.5, 0.55, 'diverged', transform=ax1.transAxes, ha='center', va='center',
                        color=plots.COLORS['diverged'], fontsize=16, fontweight='bold',
                        visible=False, animated=True,
                        bbox=dict(facecolor='white', edgecolor=plots.COLORS['diverged'], pad=3))
        ax1.set_xlim(0, t_end)
        ax1.set_ylim(-20, 150)
        plots.label(ax1, 'time (s)', 'joint angle q (deg)', 'step response')
        ax1.legend(loc='upper left', fontsize=7.5)
        (tau_line,) = ax2.plot([], [], color=plots.COLORS['response'], label='applied torque',
                               animated=True)
        (limit_line,) = ax2.plot([], [], color=plots.COLORS['bound'], lw=1, ls=':',
                                 label='limits', animated=True)
        ax2.axhline(TAU_G, color=plots.COLORS['sag'], lw=1, ls='--', label='hold torque tau_g')
        ax2.set_xlim(0, t_end)
        plots.label(ax2, 'time (s)', 'torque (N·m)', 'applied torque')
        ax2.legend(loc='upper right', fontsize=7.5)
        (band,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=1.5, label='allowed band',
                           animated=True)
        (path,) = ax3.plot([], [], color=plots.COLORS['response'], lw=1, label='run', animated=True)
        ax3.set_xlim(-30, 30)
        plots.label(ax3, 'joint velocity qd (rad/s)', 'torque (N·m)', 'torque-speed plane')
        ax3.legend(loc='upper right', fontsize=7.5)
        fig.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.9, wspace=0.35)
        return {'ax2': ax2, 'ax3': ax3, 'q': q_line, 'readout': readout, 'flag': flag,
                'tau': tau_line, 'limit': limit_line, 'band': band, 'path': path, 'ylim': None}

    def draw(state: dict, results: dict, values: dict) -> None:
        run, metrics, actuator = results['run'], results['metrics'], results['actuator']
        state['q'].set_data(run.t, np.clip(np.degrees(np.nan_to_num(run.q)), -30, 160))
        state['flag'].set_visible(run.diverged)
        state['readout'].set_color(plots.COLORS['diverged'] if run.diverged else '#222222')
        state['readout'].set_text(panel_readout(run, metrics))
        remotized = isinstance(actuator, RemotizedPD)
        e = float(actuator.table[0][1]) if remotized else float(actuator.forcerange)
        top = panel_torque_top(e)
        if top != state['ylim']:  # static artists change only when the scale steps
            for ax in (state['ax2'], state['ax3']):
                ax.set_ylim(-top, top)
            state['ylim'] = top
        n = len(run.torque)
        state['tau'].set_data(run.t[:n], np.clip(np.nan_to_num(run.torque), -2 * top, 2 * top))
        # a constant clamp (ideal, implicit and delayed PD); the DC motor's and the remotized PD's limits move
        if isinstance(actuator, (IdealPD, ImplicitPD)) and not isinstance(actuator, (DCMotor, RemotizedPD)):
            state['limit'].set_data([0, PANEL_DURATION, np.nan, 0, PANEL_DURATION],
                                    [e, e, np.nan, -e, -e])
            state['band'].set_data([-30, 30, 30, -30, -30], [e, e, -e, -e, e])
        else:
            low, high = actuator.limits(run.q[:n], run.v[:n])  # the remotized limit follows the angle
            state['limit'].set_data(np.concatenate([run.t[:n], [np.nan], run.t[:n]]),
                                    np.concatenate([high, [np.nan], low]))
            speeds = np.linspace(-30, 30, 241)
            # the band at the run's last angle (the DC motor's does not depend on it)
            low, high = (np.broadcast_to(x, speeds.shape)  # the remotized limit is the same at every speed
                         for x in actuator.limits(float(run.q[n]) if remotized else 0.0, speeds))
            state['band'].set_data(np.concatenate([speeds, speeds[::-1], speeds[:1]]),
                                   np.concatenate([high, low[::-1], high[:1]]))
        state['path'].set_data(np.clip(run.v[:n], -40, 40), np.clip(run.torque, -2 * top, 2 * top))
        return top  # the view: every non-animated artist follows from the torque axes' range

    controls = [live.Choice('model', 'model', MODELS, model)]
    controls += live.common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator)
    controls += [
        live.LogSlider('kv', 'kv', 0.1, 300.0, kv, unit='N·m·s/rad', readout_format='.3g'),
        live.Slider('forcerange', 'forcerange E (100: none)', 0.5, PANEL_NO_LIMIT, forcerange,
                 step=0.5, unit='N·m', readout_format='.1f'),
        live.Slider('velocity_limit', 'velocity limit V', 1.0, 40.0, velocity_limit, step=1.0,
                 unit='rad/s', readout_format='.0f'),
        live.Slider('delay', 'delay', 0, 60, delay, step=1, unit='steps', readout_format='.0f'),
    ]
    panel = live.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.9), dpi=80,
                       views=len(PANEL_TORQUE_STEPS) + 1)
    # one effort limit per torque step (and none): each step's axes are drawn now, not on a slider move
    limits = [min(step / 1.25, PANEL_NO_LIMIT - 0.5) for step in PANEL_TORQUE_STEPS] + [PANEL_NO_LIMIT]
    panel.warm([{'forcerange': limit} for limit in limits])
    return panel


def forcerange_twin():
    """Static twin of the effort-limit sweep: a slider over the five limits, a choice of model.

    Frames come from the sweep itself (ideal PD kp 400, kv 20) and from the implicit ``<position>``
    with the same gains and ``forcerange = ±E``. Plots: the angle with the command and the balance
    angle ``asin(E/tau_g)``; the applied torque with ±E and tau_g.
    """

    values = SWEEPS['effort-limit']
    explicit = sweep('effort-limit').runs
    implicit = simulate([ImplicitPD(kp=400.0, kv=20.0, forcerange=x) for x in values],
                        command=Step(at=0.0), duration=6.0)
    runs = {'ideal PD': dict(zip(values, explicit)), 'implicit': dict(zip(values, implicit))}
    every = 3  # keep every third sample (120 per second) to keep the page small

    def frame(forcerange, model):
        run = runs[model][forcerange]
        t = run.t[::every]
        items_q = [twin.twin_line([0, 6], [90, 90], label='command q*', color=plots.COLORS['command'],
                               width=1.0, dash='5,4'),
                   twin.twin_line(t, np.degrees(run.q[::every]), label='q(t)')]
        balance = swing_angle(forcerange)
        if math.isfinite(balance):
            items_q.append(twin.twin_line([0, 6], [math.degrees(balance)] * 2, label='asin(E/tau_g)',
                                       color=plots.COLORS['sag'], width=1.0, dash='2,3'))
        items_tau = [twin.twin_line(run.t[:-1][::every], run.torque[::every], label='torque'),
                     twin.twin_line([0, 6], [TAU_G, TAU_G], label='tau_g', color=plots.COLORS['sag'],
                                 width=1.0, dash='5,4'),
                     twin.twin_line([0, 6, np.nan, 0, 6], [forcerange, forcerange, np.nan,
                                                        -forcerange, -forcerange],
                                 label='±E', color=plots.COLORS['bound'], width=1.0, dash='2,3')]
        return [items_q, items_tau]

    sliders = [twin.TwinSlider('forcerange', 'forcerange E (N·m)', values, default=1),
               twin.TwinSlider('model', 'model', ('ideal PD', 'implicit'), kind='select')]
    axes = [twin.TwinAxes(title='angle', xlabel='time (s)', ylabel='joint angle q (deg)',
                       xlim=(0, 6), ylim=(-10, 110), legend='lr'),
            twin.TwinAxes(title='applied torque', xlabel='time (s)', ylabel='torque (N·m)',
                       xlim=(0, 6), ylim=(-8, 8), legend='lr')]
    return twin.static_twin('ch2-effort-limit', sliders, axes, frame,
                         title='Effort limit: kp 400, kv 20, from hanging to horizontal',
                         caption=f'Below tau_g = {TAU_G:.2f} N·m the torque sits at the limit and '
                                 'the link swings about asin(E/tau_g).')
