"""Chapter 3's live panel: the SO-101 holding a pose with its PD in the control loop or in MuJoCo's step.

The panel is described once, :func:`pd_spec` (controls, plots, words), and drawn by the page's
``book/_static/panels/where_pd_runs_panels.js`` in two places: on the published page, :func:`pd_twin` with
:func:`physai.interface.web_arm.pd_live` (the first view precomputed here, then MuJoCo in the reader's browser), and in
Jupyter or Colab, :func:`pd_widget` (Python MuJoCo in the kernel runs every setting, and poses the arm in 3D). It holds
Menagerie's SO-101 at the standby pose with the controller at ``rate_hz`` and draws the worst joint's hold against the
command and the growth per tick against the controller rate (the analytic bound from
:mod:`physai.experiments.where_pd_runs`); a chattering hold is reported as its ensemble (:func:`ensemble_text`).
"""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np

from physai.interface import plots, web
from physai.interface.panel import Choice, Entry, LogSlider, PanelSpec, Plot, Slider, common_controls
from physai.engine.hold import (CHATTER_TURNS, DURATION, ENSEMBLE_PROBE, ENSEMBLE_SIZE, MOVE_TIME, PHYSICS_TIMESTEP,
                                QUIET_P2P, SETTLE_WINDOW, SO101_ARMATURE, SO101_FORCERANGE, SO101_KP, SO101_KV, STANDBY,
                                TURN_SIZE, HoldEnsemble, HoldParams, HoldResponse, hold_ensembles, hold_responses,
                                so101_base, so101_joints)
from physai.experiments.servo_panel import INTEGRATOR_COST, panel_step_cost
from physai.experiments.where_pd_runs import RATES_HZ, rate_ensembles, standby_inertia, worst_growth
from physai.laws import robust
from physai.laws.loop import BACKENDS


# ---------------------------------------------------------------------------------------------------------
# The chapter's panel, described once

PANEL_RATES_HZ = robust.log_grid(10.0, 1000.0, 41)
"""Controller rates (Hz) at which the panel draws the growth per tick of both backends."""

PANEL_YLIM_DEG = 80.0
"""deg: the panel's trajectory axis spans ±80° (every joint's move to ``STANDBY`` fits) unless a run leaves it."""

PANEL_YLIM_WIDE_DEG = 180.0
"""deg: the axis of a run that leaves ±80°: every joint's range fits (the widest, wrist_roll's, is ±157°), so only
a diverging run is cut off, and its verdict says so."""

BACKEND_COLORS = {'in-loop': plots.COLORS['diverged'], 'in-step': plots.COLORS['response']}

NOTE_WORDS = {
    'where': '{backend} at {rate:.0f} Hz',
    'diverged': '{where}: diverged\ngrowth per tick {growth:.4g}',
    'held': '{where}: p2p over the last second {p2p:.2g}°{chatter}; joints up to {off:.2g}° off the command\n'
            '{state}, growth per tick {growth:.4g}',
    'tone': ', chatter {hz:.0f} Hz',
    'broadband': ', broadband chatter',
    'chatters': 'chatters',
    'moves': 'still moving, no chatter',
    'quiet': 'quiet',
}
"""The note on the panel's trajectory (:func:`pd_note`), templates of its description. The verdict (``state``) is the
run's (:attr:`physai.engine.hold.HoldResponse.state`): it chatters only if a joint turns back and forth; a run still
moving one way (a soft servo drifting toward its pose) is "still moving"; the offset is the largest over the joints of
the mean angle over the last second from the command (:attr:`~physai.engine.hold.HoldResponse.offset_deg`). Angles in
degrees, as the trace's axis; the growth per tick in the digits of the growth plot's title."""

STATE_WORDS = {'chatters': 'chatters', 'moves': 'moves', 'still': 'quiet'}
"""Each state of a hold (:attr:`~physai.engine.hold.HoldResponse.state`) to the key of its words in :data:`NOTE_WORDS`."""


def pd_spec(*, rate_hz: float = 50.0, backend: str = 'in-loop', kp: float = SO101_KP, kv: float = SO101_KV,
            armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP,
            integrator: str = 'implicitfast') -> PanelSpec:
    """Chapter 3's panel, described once: the common four, the controller rate, the damping kv and where the PD
    runs; the worst joint's hold and the growth per tick against the rate; the words.

    Args:
      rate_hz, backend, kp, kv, armature, timestep, integrator: the controls' start and reset values (SI units).
    """
    controls = [*common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator),
                LogSlider('rate_hz', 'controller rate', 10.0, 1000.0, rate_hz, unit='Hz', format='.0f', url='rate'),
                Slider('kv', 'damping kv', 0.0, 10.0, kv, step=0.01, unit='N·m·s/rad', format='.3f'),
                Choice('backend', 'PD runs', BACKENDS, backend)]
    hold = Plot(key='hold', title='worst joint', xlabel='time (s)', ylabel='joint angle (deg)', xlim=(0.0, DURATION),
                ylim=(-PANEL_YLIM_DEG, PANEL_YLIM_DEG), corner='above', width=510, height=290,
                legend=(Entry('command', plots.COLORS['command'], 'dash'), Entry('joint angle q', plots.COLORS['response']),
                        Entry('last second', plots.COLORS['shade'], 'box')))
    growth = Plot(key='growth', title='stability', xlabel='controller rate (Hz)', ylabel='growth per tick (worst joint)',
                  xlim=(PANEL_RATES_HZ[0] / 1.1, PANEL_RATES_HZ[-1] * 1.15), ylim=(0.0, 2.0), xlog=True, height=290,
                  legend=(Entry('in-loop', BACKEND_COLORS['in-loop']), Entry('in-step', BACKEND_COLORS['in-step']),
                          Entry('growth = 1', plots.COLORS['bound'], 'dash'), Entry('current', plots.COLORS['current'], 'o')))
    words = {**NOTE_WORDS, 'title': 'worst joint: {joint}', 'flag': 'diverged',
             'growth_title': 'growth per tick {growth:.4g} ({backend}, {rate:.0f} Hz)',
             'running': 'running… {done:.1f} / {total:.1f} s',
             'ensemble': '{words} · trace: run 1 of {n}'}
    note = ('The SO-101 (its bodies and joints: nothing touches) moves from its home pose to the standby pose in '
            '{move:g} s and holds it; the controller ticks at the chosen rate and holds its command (or torque) '
            'between ticks. The trace is the joint that moves most over the last second (grey). Growth per tick above '
            '1: the PD cannot hold still.')
    return PanelSpec(key='pd', title='Where the PD runs: in the loop or in the step', controls=controls,
                     plots=(hold, growth), words=words, note=note)


def pd_note(response: HoldResponse, growth: float, *, rate_hz: float, backend: str) -> str:
    """The two-line note on one hold's trajectory (:func:`run_part`), in the words of :data:`NOTE_WORDS`: where
    the PD runs and how often, the shown joint's peak-to-peak over the last second and its chatter tone, how far the
    joints sit from the command, and the run's verdict (:attr:`~physai.engine.hold.HoldResponse.state`) with the growth per
    tick."""
    words = NOTE_WORDS
    where = words['where'].format(backend=backend, rate=rate_hz)
    if response.diverged:  # MuJoCo flagged bad accelerations (and reset the run): no peak-to-peak to speak of
        return words['diverged'].format(where=where, growth=growth)
    chatter = '' if not response.chatters else (words['broadband'] if response.chatter_hz is None
                                                else words['tone'].format(hz=response.chatter_hz))
    return words['held'].format(where=where, p2p=math.degrees(response.worst_p2p_rad), chatter=chatter,
                                off=response.offset_deg, state=words[STATE_WORDS[response.state]],
                                growth=growth)


def pd_bad(response: HoldResponse) -> bool:
    """Whether the note reads as a failure (the diverged colour of the panel's note): the run diverged or
    chatters. A run still moving one way, or holding still, is no failure of the PD, however far off it sits (the note
    says how far)."""
    return response.state in ('diverged', 'chatters')


# ---------------------------------------------------------------------------------------------------------
# The page panel: its precomputed first view

TWIN_ARMATURES = (SO101_ARMATURE, 0.0)
"""kg·m²: the armatures of the first view's grid (Menagerie's, and none)."""

TRACE_STEP_DEG = 0.01
"""Resolution of a stored hold trace, degrees (a chatter of 1e-3 rad is 0.06°)."""


def hold_part(ensemble: HoldEnsemble) -> dict:
    """One configuration as the page's first view stores it: the ensemble's verdict in the chapter's words
    (:func:`ensemble_text`, with its state, and ``bad``: a run of it chatters or diverged), the joint it shows, and
    that joint's command and run 0's angle every
    physics step (packed at :data:`TRACE_STEP_DEG`): the trace is one draw of the ensemble, the words are what every
    processor reproduces (the stored ``sample`` of a chattering hold differs in its last bits from one processor to
    another, which the chapter's nbval sanitizer leaves out of the comparison)."""
    r, j = ensemble.sample, ensemble.joint
    clip = (-PANEL_YLIM_WIDE_DEG - 5.0, PANEL_YLIM_WIDE_DEG + 5.0)
    return {'joint': j, 'words': ensemble_text(ensemble), 'state': ensemble.state, 'n': ensemble.n,
            'bad': bool(ensemble.chattering > 0 or ensemble.diverged.any()),
            'target': web.trace(np.degrees(r.target[:, j]), TRACE_STEP_DEG, clip),
            'sample': web.trace(np.degrees(r.q[:, j]), TRACE_STEP_DEG, clip), 'h': r.params.timestep}


def pd_constants() -> dict:
    """The numbers the page's panel draws and runs with (JSON-ready): the hold's, the growth curve's, the joints."""
    base = so101_base()
    return {'hold': {'standby': list(STANDBY), 'moveTime': MOVE_TIME, 'duration': DURATION,
                     'settleWindow': SETTLE_WINDOW, 'quietP2P': QUIET_P2P, 'forcerange': SO101_FORCERANGE,
                     'turnSize': TURN_SIZE, 'chatterTurns': CHATTER_TURNS},
            'joints': list(so101_joints()), 'rates': list(PANEL_RATES_HZ), 'inertia': standby_inertia(0.0).tolist(),
            'damping': float(base.dof_damping[0]), 'ylimDeg': [PANEL_YLIM_DEG, PANEL_YLIM_WIDE_DEG],
            'traceStep': TRACE_STEP_DEG, 'note': {'move': MOVE_TIME}}


def pd_twin(**defaults):
    """Chapter 3's page panel (:func:`pd_spec`) with its first view precomputed: at each controller rate of the
    chapter's table (:data:`physai.experiments.where_pd_runs.RATES_HZ`), both backends and the armature on or off
    (:data:`TWIN_ARMATURES`), the hold's ensemble (:func:`physai.experiments.where_pd_runs.rate_ensembles`) as its
    verdict and one draw; the other controls at the panel's start (``defaults``, as :func:`pd_spec`'s). The growth per
    tick the page computes itself, at every setting. On the page MuJoCo then runs in the reader's browser
    (:func:`physai.interface.web_arm.pd_live`, in the next cell).

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.web.first_view`).
    """
    spec = pd_spec(**defaults)
    ensembles = {}
    for armature in TWIN_ARMATURES:
        for e in rate_ensembles(armature=armature):
            ensembles[e.params.rate_hz, e.params.backend, armature] = e
    parts = {'hold': web.Part(('rate_hz', 'backend', 'armature'),
                              lambda rate_hz, backend, armature: hold_part(ensembles[rate_hz, backend, armature]))}
    return web.first_view(spec, 'where_pd_runs_panels.js',
                          grid={'rate_hz': [float(r) for r in RATES_HZ], 'backend': BACKENDS, 'armature': TWIN_ARMATURES},
                          parts=parts, constants=pd_constants(),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, run by the kernel.')


def run_part(response: HoldResponse, growth: float) -> dict:
    """One hold run in the form of :func:`hold_part` less the ensemble: the joint it shows
    (:attr:`~physai.engine.hold.HoldResponse.worst`), that joint's command and angle every physics step (packed at
    :data:`TRACE_STEP_DEG`), the run's note (:func:`pd_note`, with the growth per tick ``growth``) and state, and
    ``bad`` (:func:`pd_bad`). What the kernel's widget answers with before the ensemble's verdict."""
    j, p = response.worst, response.params
    return {'joint': j, 'words': pd_note(response, growth, rate_hz=p.rate_hz, backend=p.backend),
            'state': response.state, 'bad': pd_bad(response), 'h': p.timestep, **_traces(response, j)}


def _traces(response: HoldResponse, joint: int) -> dict:
    clip = (-PANEL_YLIM_WIDE_DEG - 5.0, PANEL_YLIM_WIDE_DEG + 5.0)
    return {'target': web.trace(np.degrees(response.target[:, joint]), TRACE_STEP_DEG, clip),
            'sample': web.trace(np.degrees(response.q[:, joint]), TRACE_STEP_DEG, clip)}


def _one_hold(rate_hz, backend, kp, kv, armature, timestep, integrator) -> HoldResponse:
    return hold_responses([HoldParams(**locals())], nthread=1)[0]


PANEL_FIRST_STEPS = 600
"""Physics steps, weighted by :data:`physai.experiments.servo_panel.INTEGRATOR_COST` (RK4 four), of the hold the
widget runs before its first reply: about 4 ms of MuJoCo on this book's 2-core machine, near the page's first slice
(a whole hold at the chapter's 1 ms is 3000 steps, 20-25 ms, RK4's 65-75 ms). A longer hold answers first with its
start (:func:`hold_start`: at 1 ms the move to the standby pose and a little of the hold), drawn as the page draws a
hold MuJoCo is still running in the browser ("running… 0.6 / 3.0 s"), then whole."""


def hold_start(rate_hz, backend, kp, kv, armature, timestep, integrator) -> HoldResponse | None:
    """The first :data:`PANEL_FIRST_STEPS` weighted steps of the hold at these values, sample for sample the start
    of the whole run (the same arithmetic, however far it runs: :func:`physai.engine.hold.read_at`); None when the
    whole hold fits that budget. Its figures describe only that start, except a divergence, which the whole run
    shares (MuJoCo's warning counters only rise)."""
    if panel_step_cost(timestep, integrator, DURATION) <= PANEL_FIRST_STEPS:
        return None
    first = max(2, PANEL_FIRST_STEPS // INTEGRATOR_COST.get(integrator, 1))
    params = HoldParams(rate_hz=rate_hz, backend=backend, kp=kp, kv=kv, armature=armature, timestep=timestep,
                        integrator=integrator)
    return hold_responses([params], duration=first * timestep, nthread=1)[0]


def start_part(response: HoldResponse, growth: float, joint: int | None = None) -> dict:
    """The start of a hold (:func:`hold_start`) as the widget's first reply: :func:`run_part`'s form on ``joint``
    (the joint the panel showed last; None: the start's own worst), ``done``, the physics steps run so far, and no
    words, so that the page's module says the run is on its way, unless the start diverged: then the whole run's
    note (a diverged run reads as diverged at every length), in the failure colour."""
    j, p = (response.worst if joint is None else joint), response.params
    words = pd_note(response, growth, rate_hz=p.rate_hz, backend=p.backend) if response.diverged else None
    return {'joint': j, 'words': words, 'state': 'diverged' if response.diverged else 'running',
            'bad': response.diverged, 'h': p.timestep, 'done': len(response.t), **_traces(response, j)}


ARM3D_FRAMES = 750
"""The most frames of a hold the 3D view plays (``arm3d_view.js``'s ``MAX_FRAMES``): every stride-th step."""

ARM3D_MAGNIFY = (1, 10, 30, 100)
"""The 3D view's magnifications of the error from the command (``arm3d_view.js``'s ``MAGNIFY``)."""


def hold_poses(response: HoldResponse, magnify: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bodies' poses the 3D view plays for a hold, as the page's view computes them (``arm3d_view.js``:
    ``ArmView.show``): every stride-th physics step (at most :data:`ARM3D_FRAMES` frames), the joints at the command
    plus ``magnify`` times the error from it (a non-finite angle at the command), posed by MuJoCo's
    ``mj_kinematics`` on the SO-101.

    Returns:
      ``(time, xpos, xquat)``: s (nframe,), m (nframe, nbody, 3) and MuJoCo's (w, x, y, z) (nframe, nbody, 4).
    """
    q, target = response.q, response.target
    steps = len(q)
    stride = -(-steps // ARM3D_FRAMES)
    frames = np.arange(0, steps, stride)
    with np.errstate(invalid='ignore'):
        qpos = np.where(np.isfinite(q[frames]), target[frames] + magnify * (q[frames] - target[frames]), target[frames])
    m = so101_base()
    d = mujoco.MjData(m)
    xpos, xquat = np.empty((len(frames), m.nbody, 3)), np.empty((len(frames), m.nbody, 4))
    for i, row in enumerate(qpos):
        d.qpos[:] = row
        mujoco.mj_kinematics(m, d)
        xpos[i], xquat[i] = d.xpos, d.xquat
    return response.params.timestep * (frames + 1), xpos, xquat


def _ensemble_hold(rate_hz, backend, kp, kv, armature, timestep, integrator) -> dict:
    return hold_part(hold_ensembles([HoldParams(**locals())])[0])


WIDGET_WORDS = {'pending': '{words}\none run so far: the ensemble\'s verdict ({probe} or {n} runs) is coming…'}
"""The widget's words besides the page's: the note of one whole hold (:func:`run_part`), until the verdict of the
hold's ensemble (:func:`physai.engine.hold.hold_ensembles`: :data:`~physai.engine.hold.ENSEMBLE_PROBE` runs from nearby
starts, :data:`~physai.engine.hold.ENSEMBLE_SIZE` if one of them moves) comes; kept out of :func:`pd_spec`, whose words
the page's stored first view carries."""


def pd_widget(**defaults):
    """Chapter 3's page panel (:func:`pd_spec`, as :func:`pd_twin` opens it) as a Jupyter widget: the page's
    ``where_pd_runs_panels.js`` drawing what Python MuJoCo runs at the controls' exact values. It answers in up to
    three replies, as the page draws a hold while MuJoCo runs it in the browser: at once the hold's start where the
    whole hold is longer than :data:`PANEL_FIRST_STEPS` (:func:`start_part`, on the joint the panel showed last, the
    module saying "running…"), then the whole hold (:func:`run_part`, its note saying that the ensemble's verdict is
    coming: :data:`WIDGET_WORDS`), then the hold's ensemble (:func:`hold_part` of
    :func:`physai.engine.hold.hold_ensembles`, 8 or 64 runs) as the first view stores it: the ensemble's verdict, and
    its run 0 as the trace (the times of each: benchmarks/bench_panel.py). The growth per tick the page's module
    computes itself. Its 3D view plays the whole hold, posed by Python MuJoCo (:func:`hold_poses`); the view's module
    and the arm's meshes come from the kernel when a reader opens it
    (:func:`physai.interface.widget.arm3d_messages`).

    Args:
      defaults: as :func:`pd_twin`'s (:func:`pd_spec`'s keywords).

    Returns:
      A :class:`physai.interface.widget.PanelWidget` (needs ``anywidget``).
    """
    from physai.interface import widget  # anywidget only where the widget is asked for
    # the one run is kept (a thread-safe store): the ensemble's reply and the 3D view use it again
    one = widget.Deferred(_one_hold, maxsize=16)
    spec = pd_spec(**defaults)
    spec = dataclasses.replace(spec, words={**spec.words, **WIDGET_WORDS})
    shown = {'joint': None}  # the joint of the latest whole hold: a start is drawn on it, as the page draws one

    def pending(part: dict) -> dict:
        if part['words'] is not None:  # a start on its way has none
            part['words'] = spec.say('pending', words=part['words'], probe=ENSEMBLE_PROBE, n=ENSEMBLE_SIZE)
        return part

    def whole(values: dict) -> dict:
        part = pending(run_part(one.compute(values), worst_growth(**values)))
        shown['joint'] = part['joint']
        return part

    run_whole = widget.whole_part(spec, whole, maxsize=16)
    starts = widget.Deferred(hold_start, maxsize=16)

    def first(values: dict) -> dict:
        start = starts.compute(values)
        if start is None:  # the whole hold fits the first reply's budget
            return run_whole.compute(values)
        return pending(start_part(start, worst_growth(**values), shown['joint']))

    w = widget.PanelWidget(spec, 'where_pd_runs_panels.js', constants=pd_constants(), now={'run': first},
                           later={'run': run_whole, 'hold': widget.Deferred(_ensemble_hold, maxsize=16)})

    def poses(values, content):
        magnify = content.get('magnify')
        if magnify not in ARM3D_MAGNIFY:
            raise ValueError(f'magnify must be one of {ARM3D_MAGNIFY}, got {magnify!r}')
        time, xpos, xquat = hold_poses(one.compute(values), magnify)
        return {'frames': len(time), 'nbody': xpos.shape[1]}, [time, xpos, xquat]

    widget.arm3d_messages(w, poses)
    return w


def ensemble_text(ensemble: HoldEnsemble) -> str:
    """One line for a reader, in degrees as the panel's trace:
    ``'chatters in 64 of 64 runs: p2p 11° (5.7-11), 5-10 Hz'`` or ``'still in 8 of 8 runs: p2p < 1e-07°'``: the
    ensemble's figures in radians on the 1-2-5 series (:meth:`HoldEnsemble.row`, so that they do not move from one
    processor to another) converted to degrees, to two digits (a bound up the series), the figures the chapter's
    tables print (:meth:`HoldEnsemble.row_deg`)."""
    row = ensemble.row_deg()
    if ensemble.state == 'still':
        return f'still in {ensemble.still} of {ensemble.n} runs: p2p {row["p2p_deg"]}°'
    if ensemble.state != 'chatters':
        return (f'{ensemble.state}: {ensemble.chattering} of {ensemble.n} runs chatter, '
                f'{ensemble.still} hold still')
    tone = row['chatter_hz'] if row['chatter_hz'] == 'broadband' else f'{row["chatter_hz"]} Hz'
    p2p, low, high = (f'{row[key]:.2g}' for key in ('p2p_deg', 'p2p_low', 'p2p_high'))
    return f'chatters in {ensemble.chattering} of {ensemble.n} runs: p2p {p2p}° ({low}-{high}), {tone}'
