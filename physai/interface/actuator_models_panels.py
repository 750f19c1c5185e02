"""Chapter 2's live panel: the pendulum under each actuator model, and a sweep's runs on one axes.

The panel is described once, :func:`actuator_spec` (controls, plots, words), and drawn by the page's
``book/_static/panels/actuator_models_panels.js`` in two places: on the published page, :func:`forcerange_twin` with
:func:`physai.interface.web.pendulum_live` (the first view precomputed here over the model and the effort limit, then
MuJoCo in the reader's browser), and in Jupyter or Colab, :func:`pendulum_widget` (Python MuJoCo in the kernel runs
every setting). Its physics is :func:`panel_run`: :func:`physai.engine.pendulum.simulate` for the chosen model
(implicit, ideal PD, DC motor, delayed PD, remotized PD) with kp, kv, effort and velocity limits, delay, armature,
timestep and integrator; the panel draws the step response with its readout (:func:`panel_readout`), the applied
torque and the path in the torque-speed plane. :func:`plot_runs` draws a sweep's runs on one axes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
from IPython.display import HTML

from physai.interface import plots, web
from physai.interface.panel import Choice, Entry, LogSlider, PanelSpec, Plot, Slider, common_controls
from physai.engine.pendulum import CONTROL_RATE, PendulumParams, Run, Step, TAU_G, TIMESTEP, simulate
from physai.experiments.actuator_models import (DC_SATURATION, EFFORT_KP, EFFORT_KV, EFFORT_SWINGING, SWEEPS, TAIL,
                                               step_metrics)
from physai.interface.plots import SWINGING_P2P_DEG
from physai.engine.link import RISE_START
from physai.laws.drives import Actuator, DCMotor, DelayedPD, IdealPD, ImplicitPD, MODELS, RemotizedPD

COLORS = plots.COLORS

READOUT_WORDS = {
    'diverged': 'diverged after {t:.3f} s',
    'swinging': 'still swinging: {p2p:.3g}° peak to peak   rise n/a',
    'creeping': 'still creeping: {p2p:.3g}° in the last {tail:g} s   rise n/a',
    'settled': 'settling error {error:.2f}°   rise {rise}',
    'rise': '{rise_ms:.0f} ms',
    'no_rise': 'n/a',
}
"""The panel's verdict on a step response (:func:`panel_readout`), templates of its description."""


def panel_verdict(run: Run, metrics: dict) -> str:
    """The live panel's verdict on a step response (``metrics`` from :func:`step_metrics`): ``'diverged'``,
    ``'swinging'`` (its angle still moves more than ``plots.SWINGING_P2P_DEG`` peak to peak over the last 0.5 s and its
    velocity reverses there), ``'creeping'`` (as much motion, one way only) or ``'settled'``."""
    if run.diverged or metrics['diverged']:
        return 'diverged'
    if metrics['p2p_deg'] > SWINGING_P2P_DEG:
        v = run.v[run.t >= run.t[-1] - TAIL + 1e-9]
        signs = np.sign(v[v != 0])
        return 'swinging' if np.any(signs[1:] != signs[:-1]) else 'creeping'
    return 'settled'


BAD_VERDICTS = ('diverged', 'swinging')
"""The verdicts that read as a failure (the diverged colour of the panel's readout): a run still creeping
toward its command is slow, not unstable."""


def panel_readout(run: Run, metrics: dict) -> str:
    """The live panel's one-line verdict on a step response (``metrics`` from :func:`step_metrics`, the verdict
    :func:`panel_verdict`), in the words of :data:`READOUT_WORDS`.

    A settled run reads ``'settling error 1.69°   rise 75 ms'``. A run whose angle still moves more than
    ``plots.SWINGING_P2P_DEG`` peak to peak over the last 0.5 s has no settling error or rise time to
    speak of (both are measured against the mean of that window): it reads ``'still swinging: 15.2°
    peak to peak   rise n/a'`` if its velocity reverses in the window, ``'still creeping: 6.92° in the
    last 0.5 s   rise n/a'`` if it only drifts one way. A diverged run reads ``'diverged after 0.611 s'``.
    """
    words, verdict, p2p = READOUT_WORDS, panel_verdict(run, metrics), metrics['p2p_deg']
    if verdict == 'diverged':
        return words['diverged'].format(t=float(run.t[-1]))
    if verdict == 'swinging':
        return words['swinging'].format(p2p=p2p)
    if verdict == 'creeping':
        return words['creeping'].format(p2p=p2p, tail=TAIL)
    rise = metrics['rise_ms']
    rise_text = words['rise'].format(rise_ms=rise) if math.isfinite(rise) else words['no_rise']
    return words['settled'].format(error=metrics['error_deg'], rise=rise_text)


# ------------------------------------------------------------------------------------------------
# figures: a sweep's runs


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


PANEL_REMOTIZED_SHARE = 0.5
"""The remotized PD's limit at horizontal as a share of the effort slider's E: the panel's table is
((0, E), (π/2, E/2)), linear in between (a linkage that gives less torque the further the link is lifted). At the
default E = 6 N·m that is 3 N·m at horizontal, just above the hold torque; lower E and the link cannot hold."""

PANEL_STEP = Step()
PANEL_DURATION = 3.0  # s
PANEL_NO_LIMIT = 100.0  # N·m: the effort slider's top position means "no limit"
PANEL_SPEED_AXIS = 30.0  # rad/s: the torque-speed plane's half-width
PANEL_TORQUE_STEPS = (4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
"""The torque axes' half-ranges, N·m: the smallest step that shows 1.25 × max(E, tau_g); with no limit, 64."""


def panel_torque_top(limit: float) -> float:
    """The torque axes' half-range for an effort limit (N·m, inf for none): a step of :data:`PANEL_TORQUE_STEPS`,
    so most moves of the effort slider keep the axes (the page's ``panelTorqueTop`` is its mirror)."""
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
"""The starting values of the panel the chapter's Try-it suggestions change (:func:`actuator_spec`'s defaults; the
notebook's widget starts there: ``pendulum_widget(**PANEL_DEFAULTS)``)."""

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


ONLY_FOR = {'kv': None, 'velocity_limit': ('DC motor',), 'delay': ('delayed PD', 'remotized PD')}
"""The controls only some models use (the page greys them out for the others)."""


def actuator_spec(*, model: str = 'ideal PD', kp: float = 100.0, kv: float = 5.0, armature: float = 0.0,
                  timestep: float = TIMESTEP, integrator: str = 'implicitfast', forcerange: float = 6.0,
                  velocity_limit: float = 8.0, delay: int = 12) -> PanelSpec:
    """Chapter 2's panel, described once: the model, the common four and the models' own kv, effort limit, velocity
    limit and delay; the step response, the applied torque and the torque-speed plane; the words.

    Args:
      model, kp, kv, armature, timestep, integrator, forcerange, velocity_limit, delay: the controls' start and
        reset values (SI units; ``delay`` in physics steps).
    """
    top = panel_torque_top(forcerange if forcerange < PANEL_NO_LIMIT or model == 'DC motor' else math.inf)
    controls = [Choice('model', 'model', MODELS, model),
                *common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator),
                LogSlider('kv', 'kv', 0.1, 300.0, kv, unit='N·m·s/rad', format='.3g'),
                Slider('forcerange', 'forcerange E (100: none)', 0.5, PANEL_NO_LIMIT, forcerange, step=0.5, unit='N·m',
                       format='.1f'),
                Slider('velocity_limit', 'velocity limit V', 1.0, 40.0, velocity_limit, step=1.0, unit='rad/s',
                       format='.0f'),
                Slider('delay', 'delay', 0, 60, delay, step=1, unit='steps', format='.0f')]
    step = Plot(key='step', title='step response', xlabel='time (s)', ylabel='joint angle q (deg)',
                xlim=(0.0, PANEL_DURATION), ylim=(-20.0, 150.0), corner='ul',
                legend=(Entry('command q*', COLORS['command'], 'dash'), Entry('q(t)', COLORS['response'])))
    torque = Plot(key='torque', title='applied torque', xlabel='time (s)', ylabel='torque (N·m)',
                  xlim=(0.0, PANEL_DURATION), ylim=(-top, top), corner='lr',
                  legend=(Entry('applied torque', COLORS['response']), Entry('limits', COLORS['bound'], 'dot'),
                          Entry('hold torque τg', COLORS['sag'], 'dash')))
    plane = Plot(key='plane', title='torque-speed plane', xlabel='joint velocity qd (rad/s)', ylabel='torque (N·m)',
                 xlim=(-PANEL_SPEED_AXIS, PANEL_SPEED_AXIS), ylim=(-top, top),
                 legend=(Entry('allowed band', COLORS['bound']), Entry('run', COLORS['response'])))
    words = {**READOUT_WORDS, 'flag': 'diverged', 'used_by': 'used by {models} only',
             'chaotic': 'chaotic limit cycle: no single trace is stored',
             'status': '{model}, {integrator}, h = {h_ms:.2f} ms'}
    note = ('Command {low:.0f}° → {high:.0f}° at {at:g} s, sent at {rate:g} Hz and held between ticks; the explicit '
            'models compute their torque every physics step. DC motor: stall torque {stall:g} N·m. Remotized PD: '
            'limit E hanging, {share:g}·E at horizontal.')
    return PanelSpec(key='pendulum', title='The actuator models on the pendulum', controls=controls,
                     plots=(step, torque, plane), words=words, note=note)


def note_values() -> dict:
    """The values the description's note is filled with."""
    return {'low': math.degrees(PANEL_STEP.low), 'high': math.degrees(PANEL_STEP.high), 'at': PANEL_STEP.at,
            'rate': CONTROL_RATE, 'stall': DC_SATURATION, 'share': PANEL_REMOTIZED_SHARE}


# ---------------------------------------------------------------------------------------------
# The page panel: its precomputed first view

TWIN_FORCERANGES = (*SWEEPS['effort-limit'], PANEL_NO_LIMIT)
"""N·m: the effort limits of the first view's grid, the chapter's effort-limit sweep and none."""

STORED_STEPS = {'q': 0.1, 'torque': 0.01, 'v': 0.1}
"""Resolution of a stored run: angle (deg), torque (N·m) and speed (rad/s); a pixel of the plots is about 0.6°,
0.05 N·m and 0.2 rad/s."""

CHAOS_NUDGE = 1e-9
"""rad: a first-view run is made again from ±this start angle; a run whose stored form then moves is chaotic and
is stored as its verdict alone."""


def run_record(values: dict, q0: float = 0.0) -> dict:
    """One run of the panel (:func:`panel_run` at ``values``, from start angle ``q0``, rad) in the form the page
    decodes: angle, torque and speed every physics step (packed at :data:`STORED_STEPS`, clipped to twice the plots'
    ranges), the readout's words, whether it diverged and whether its verdict reads as a failure."""
    run, metrics = panel_run(**values, q0=q0)
    top = panel_torque_top(float(run.actuator.table[0][1]) if isinstance(run.actuator, RemotizedPD)
                           else float(run.actuator.forcerange))
    return {'q': web.trace(np.degrees(run.q), STORED_STEPS['q'], (-40.0, 180.0)),
            'torque': web.pack(np.clip(run.torque, -2 * top, 2 * top).tolist(), STORED_STEPS['torque']),
            'v': web.pack(np.clip(run.v, -2 * PANEL_SPEED_AXIS, 2 * PANEL_SPEED_AXIS).tolist(), STORED_STEPS['v']),
            'diverged': bool(run.diverged), 'readout': panel_readout(run, metrics),
            'bad': panel_verdict(run, metrics) in BAD_VERDICTS}


def run_part(values: dict, stored: dict | None = None) -> dict:
    """A run of the panel as the page's first view stores it: :func:`run_record` from the hanging start (``stored``,
    when it is already made), checked for chaos by two more runs. A chaotic run (its stored form moves when the start
    moves by :data:`CHAOS_NUDGE`) is stored as ``chaotic`` with the verdict alone, which survives a last-bit change
    where its traces would not."""
    stored = run_record(values) if stored is None else stored
    if any(run_record(values, q0) != stored for q0 in (CHAOS_NUDGE, -CHAOS_NUDGE)):
        words = 'diverges' if stored['diverged'] else stored['readout'].split(':')[0]
        return {'chaotic': True, 'diverged': stored['diverged'],
                'readout': f'{words} (chaotic: no single trace is stored)'}
    return stored


def pendulum_constants() -> dict:
    """The numbers the page's panel draws and runs with (JSON-ready)."""
    return {'duration': PANEL_DURATION, 'step': {'at': PANEL_STEP.at, 'low': PANEL_STEP.low, 'high': PANEL_STEP.high},
            'controlRate': CONTROL_RATE, 'tauG': TAU_G, 'torqueSteps': PANEL_TORQUE_STEPS, 'noLimit': PANEL_NO_LIMIT,
            'remotizedShare': PANEL_REMOTIZED_SHARE, 'dcSaturation': DC_SATURATION, 'speedAxis': PANEL_SPEED_AXIS,
            'tail': TAIL, 'riseStart': RISE_START, 'swingingP2pDeg': SWINGING_P2P_DEG, 'steps': STORED_STEPS,
            'onlyFor': {k: v for k, v in ONLY_FOR.items() if v}, 'note': note_values()}


TWIN_START = {'model': 'ideal PD', 'kp': EFFORT_KP, 'kv': EFFORT_KV, 'forcerange': EFFORT_SWINGING}
"""Where the page panel opens (and resets to): the experiment the chapter's prose discusses, the effort-limit sweep's
explicit ideal PD at its gains with the limit below the hold torque, which swings and never settles."""


def forcerange_twin(*, forceranges: Sequence[float] = TWIN_FORCERANGES, models: Sequence[str] = MODELS, **defaults):
    """Chapter 2's page panel (:func:`actuator_spec`) with its first view precomputed: a run of every model at every
    effort limit of ``forceranges`` (the chapter's effort-limit sweep and no limit), the other controls at the
    panel's start: :data:`TWIN_START` (the sweep's E = 2 N·m run), changed by ``defaults`` (as :func:`actuator_spec`'s
    keywords), the rest as :func:`actuator_spec` starts. On the page a reader's model or effort limit picks the
    precomputed run until MuJoCo runs in the page (:func:`physai.interface.web.pendulum_live`, in the next cell), which
    starts from the same setting.

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.web.first_view`).
    """
    spec = actuator_spec(**{**TWIN_START, **defaults})
    fixed = {name: v for name, v in spec.defaults.items() if name not in ('model', 'forcerange')}
    parts = {'run': web.Part(('model', 'forcerange'),
                             lambda model, forcerange: run_part({**fixed, 'model': model, 'forcerange': forcerange}))}
    return web.first_view(spec, 'actuator_models_panels.js', grid={'model': models, 'forcerange': forceranges},
                          parts=parts, constants=pendulum_constants(),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, run by the kernel.')


def pendulum_widget(**defaults):
    """Chapter 2's page panel (:func:`actuator_spec`, as :func:`forcerange_twin` opens it) as a Jupyter widget: the
    page's ``actuator_models_panels.js`` drawing the run Python MuJoCo makes at the controls' exact values. It answers
    at once with that one run (:func:`run_record`), as the page draws once MuJoCo runs in it, then with the first
    view's form of it (:func:`run_part`: the same run, checked for chaos by two runs from nudged starts), so that the
    verdict it settles on is the first view's at that setting: a chaotic setting's verdict alone, ``(chaotic: …)``.
    The first reply's time per control: benchmarks/bench_panel.py; the check costs two runs more.

    Args:
      defaults: as :func:`forcerange_twin`'s (:func:`actuator_spec`'s keywords), changing :data:`TWIN_START`.

    Returns:
      A :class:`physai.interface.widget.PanelWidget` (needs ``anywidget``).
    """
    from physai.interface import widget  # anywidget only where the widget is asked for
    spec = actuator_spec(**{**TWIN_START, **defaults})
    # the one run is kept: the second reply's chaos check starts from it and runs only the nudged starts
    one = widget.whole_part(spec, run_record, maxsize=16)
    checked = widget.whole_part(spec, lambda values: run_part(values, one.compute(values)), maxsize=16)
    return widget.PanelWidget(spec, 'actuator_models_panels.js', constants=pendulum_constants(),
                              now={'run': one.compute}, later={'run': checked})


def try_links() -> HTML:
    """Links that open the page panel (:func:`forcerange_twin`) on each Try-it suggestion (:data:`PANEL_TRIES`, each a
    change of :data:`PANEL_DEFAULTS`), numbered as the chapter lists them: the page panel opens on another setting."""
    spec = actuator_spec(**TWIN_START)
    links = [f'<a href="{html.escape(web.address(spec, {**PANEL_DEFAULTS, **change}))}">{html.escape(name)}</a>'
             for name, change in PANEL_TRIES.items()]
    return HTML('<p class="physai-try-links">Open the panel on a suggestion: ' + ' · '.join(links) + '</p>')
