"""Live panels on the published page: MuJoCo itself, running in the reader's browser.

The published book has no kernel, so its figures are static twins (:mod:`physai.interface.twin`): pictures
precomputed on a grid. :func:`servo_live` adds chapter 1's live panel beside the twin: one HTML block with the
link's model and everything the page needs as JSON, which the book's script ``book/_static/physai-live.js`` turns
into the panel of :func:`physai.interface.position_actuators_panels.servo_panel` running MuJoCo's WebAssembly build
(npm ``mujoco-js`` 0.0.7, MuJoCo 3.3.8; ``book/_ext/physai_engine.py`` copies it into the site).

How the page behaves:

- First view: only the twin shows; the block is hidden and the 11 MB engine is not fetched.
- The reader touches the twin (or its "Run MuJoCo live" button), or the page's address carries a setting of the
  panel: the engine loads, the live panel takes the twin's place at the twin's setting, and the twin is hidden.
- JavaScript off: the block stays hidden (``hidden``), the twin is what the reader sees. WebAssembly off: the
  script says so in one line and leaves the twin.

What the browser cannot run is precomputed here, labelled as such on the page: the ``discrete`` integrator (not in
MuJoCo 3.3.8) as step responses on :data:`DISCRETE_KP` × :data:`DISCRETE_ARMATURE` × :data:`DISCRETE_TIMESTEP` for
every damping choice of :data:`DAMPRATIOS`, and the integrators' critical hω per damping choice
(:func:`physai.laws.stability.critical_h_omega`). A precomputed trace is stored packed (:func:`pack`): the block is
part of the chapter's page, so its size counts in the first view (about 35 kB compressed for chapter 1).

:func:`pendulum_live` does the same for chapter 2's panel
(:func:`physai.interface.actuator_models_panels.actuator_panel`): the pendulum under each actuator model, run by
``book/_static/physai-live-pendulum.js``; its ``discrete`` runs are precomputed per model, kp and timestep.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence

import mujoco
import numpy as np
from IPython.display import HTML

from physai.engine import pendulum
from physai.engine.link import LINK_INERTIA, LINK_XML, step_responses
from physai.experiments.actuator_models import DC_SATURATION
from physai.experiments.position_actuators import (PANEL_KP_GRID, STABILITY_ARMATURE, STABILITY_KP, STABILITY_STEPS,
                                                   panel_servo, servo_stability, unstable)
from physai.interface import actuator_models_panels as models_panels
from physai.interface.plots import COLORS, readout
from physai.laws import checks
from physai.laws.drives import MODELS
from physai.laws.stability import critical_h_omega

BROWSER_INTEGRATORS = ('Euler', 'RK4', 'implicit', 'implicitfast')
"""The integrators MuJoCo's WebAssembly build (3.3.8) has: the panel runs these live."""

PANEL_INTEGRATORS = BROWSER_INTEGRATORS + ('discrete',)
"""The integrator choice of the live panel; ``discrete`` shows precomputed runs."""

DAMPRATIOS = (0.0, 0.5, 1.0, 2.0)
"""The damping choice: dampratio ζ, kv = 2ζ sqrt(kp·I) recomputed for every armature."""

DISCRETE_KP = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)
"""kp of the precomputed ``discrete`` runs, N·m/rad."""

DISCRETE_ARMATURE = (0.0, 0.005, 0.028, 0.1)
"""armature of the precomputed ``discrete`` runs, kg·m²."""

DISCRETE_TIMESTEP = (0.0005, 0.002, 0.005, 0.02)
"""timesteps of the precomputed ``discrete`` runs, s."""

ENVELOPE_BINS = 80
"""A precomputed trace is stored as its lowest and highest angle in each of this many time bins, so a swing that
flips sides every step still shows its full width."""

SERVO_TWIN_ID = 'physai-twin-servo'
"""The HTML id of chapter 1's static twin (:func:`physai.interface.position_actuators_panels.servo_twin`)."""

TIMESTEP_RANGE_MS = (0.5, 20.0)
"""The timestep slider's range, ms (as :func:`physai.interface.live.common_controls`)."""


def browser_xml() -> str:
    """The link's MJCF for the browser's MuJoCo: :data:`physai.engine.link.LINK_XML`, the very text every step
    response of physai compiles.

    Not ``link_spec().to_xml()``: MuJoCo 3.17 writes the capsule's ``fromto`` as a quaternion rounded to six digits
    (the compiled inertial frame then differs in its last bit, and 18 of 54 test runs lose bit-identity) and adds an
    actuator attribute (``input``) that 3.3.8's parser refuses.
    """
    return LINK_XML


def envelope(t: np.ndarray, q_deg: np.ndarray, duration: float, bins: int = ENVELOPE_BINS,
             digits: int = 2) -> list[list]:
    """A trace as ``[low, high]``: its lowest and highest angle in each of ``bins`` equal time bins of
    ``[0, duration]``, degrees to ``digits`` decimals (None for a bin without a sample: a diverged run ends early).

    Args:
      t: (n,) times, s.
      q_deg: (n,) angles, degrees (or any trace); a non-finite value is left out.
      duration: the plotted time span, s.
      bins: number of bins.
      digits: decimals kept.
    """
    t, q_deg = np.asarray(t, dtype=float), np.asarray(q_deg, dtype=float)
    keep = np.isfinite(q_deg)
    t, q_deg = t[keep], np.clip(q_deg[keep], -1e4, 1e4)
    index = np.minimum((t / duration * bins).astype(int), bins - 1)
    low: list = [None] * bins
    high: list = [None] * bins
    for b in np.unique(index):
        chunk = q_deg[index == b]
        low[b], high[b] = round(float(chunk.min()), digits), round(float(chunk.max()), digits)
    return [low, high]


PACK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
"""The 62 characters of a packed number (:func:`pack`)."""


def pack(values: Sequence[float | None], step: float) -> str:
    """A trace as a short string for the page: each value in whole ``step`` s, as the change from the value before.

    Each change d is written zigzagged (``z = 2d`` for d >= 0, ``-2d - 1`` below) in :data:`PACK_DIGITS`: one
    character when z < 61, else ``'_'``, z in base 62 and ``'.'``; a missing value (None) is ``'-'``. A trace that
    settles is then mostly ``'0'``, which compresses to almost nothing. ``physai-live-core.js`` unpacks it
    (``unpack``); the round trip gives ``round(v / step) * step``.
    """
    out, before = [], 0
    for v in values:
        if v is None:
            out.append('-')
            continue
        k = round(v / step)
        d = k - before
        before = k
        z = 2 * d if d >= 0 else -2 * d - 1
        if z < 61:
            out.append(PACK_DIGITS[z])
            continue
        digits = ''
        while True:
            z, r = divmod(z, 62)
            digits = PACK_DIGITS[r] + digits
            if z == 0:
                break
        out.append(f'_{digits}.')
    return ''.join(out)


def unpack(text: str, step: float) -> list[float | None]:
    """:func:`pack` read back (what the page does): the values rounded to whole ``step`` s."""
    out: list[float | None] = []
    k, i = 0, 0
    while i < len(text):
        c = text[i]
        if c == '-':
            out.append(None)
            i += 1
            continue
        if c == '_':
            end = text.index('.', i)
            z = 0
            for ch in text[i + 1:end]:
                z = 62 * z + PACK_DIGITS.index(ch)
            i = end + 1
        else:
            z = PACK_DIGITS.index(c)
            i += 1
        k += z // 2 if z % 2 == 0 else -(z + 1) // 2
        out.append(k * step)
    return out


TRACE_STEP_DEG = 0.1
"""Resolution of a precomputed angle trace, degrees (a pixel of chapter 1's step response is about 0.2°)."""


def _finite(x: float, digits: int) -> float | None:
    """x to ``digits`` significant digits (the figures draw no finer, and a last-bit change cannot move them), or
    None for NaN or inf."""
    return float(f'{x:.{digits}g}') if math.isfinite(x) else None


def _discrete_runs(q0: float, duration: float) -> dict:
    """The ``discrete`` runs, index ``((iz * ntimestep + ih) * narmature + ia) * nkp + ik`` over :data:`DAMPRATIOS`
    × :data:`DISCRETE_TIMESTEP` × :data:`DISCRETE_ARMATURE` × :data:`DISCRETE_KP`, and the stability map per
    (dampratio, timestep)."""
    grid = [(z, h, a, k) for z in DAMPRATIOS for h in DISCRETE_TIMESTEP for a in DISCRETE_ARMATURE
            for k in DISCRETE_KP]
    responses = step_responses([panel_servo(k, a, h, 'discrete', z) for z, h, a, k in grid], q0=q0,
                               duration=duration)
    runs = []
    for r in responses:
        runs.append({'trace': [pack(x, TRACE_STEP_DEG) for x in envelope(r.t, np.degrees(r.q), duration)],
                     'readout': readout(r), 'diverged': r.diverged, 'settled': r.settled,
                     'tEnd': round(float(r.t[-1]), 4), 'sagDeg': _finite(r.sag_deg, 4),
                     'riseMs': _finite(r.rise_ms, 4), 'riseWindow': [_finite(x, 4) for x in r.rise_window]})
    stability = [[servo_stability(h, 'discrete', z, q0)['diverged'].astype(int).tolist() for h in DISCRETE_TIMESTEP]
                 for z in DAMPRATIOS]
    return {'kp': DISCRETE_KP, 'armature': DISCRETE_ARMATURE, 'timestep': DISCRETE_TIMESTEP,
            'dampratio': DAMPRATIOS, 'traceStep': TRACE_STEP_DEG, 'runs': runs, 'stability': stability}


def servo_config(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                 integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
                 duration: float = 3.0, twin: str | None = SERVO_TWIN_ID) -> dict:
    """Everything chapter 1's live panel needs in the browser, as plain JSON-ready data.

    Args:
      kp, armature, timestep, integrator, dampratio: the controls' start and reset values (SI units); dampratio
        one of :data:`DAMPRATIOS`, integrator one of :data:`PANEL_INTEGRATORS`.
      q0: start angle, rad (the command is 0).
      duration: simulated time of a step response, s.
      twin: the HTML id of the static twin the panel replaces when MuJoCo loads, or None.
    """
    checks.positive('kp', kp, 'N·m/rad')
    if not 1.0 <= kp <= 30000.0:
        raise ValueError(f'kp must be in [1, 30000] N·m/rad (the slider), got {kp!r}')
    checks.nonnegative('armature', armature, 'kg·m²')
    if armature > 0.1:
        raise ValueError(f'armature must be in [0, 0.1] kg·m² (the slider), got {armature!r}')
    checks.timestep(timestep)
    if not TIMESTEP_RANGE_MS[0] <= timestep * 1e3 <= TIMESTEP_RANGE_MS[1]:
        raise ValueError(f'timestep must be in [{TIMESTEP_RANGE_MS[0]}, {TIMESTEP_RANGE_MS[1]}] ms (the slider), '
                         f'got {timestep!r} s')
    if integrator not in PANEL_INTEGRATORS:
        raise ValueError(f'integrator must be one of {", ".join(PANEL_INTEGRATORS)}, got {integrator!r}')
    if dampratio not in DAMPRATIOS:
        raise ValueError(f'dampratio must be one of {", ".join(map(str, DAMPRATIOS))}, got {dampratio!r}')
    if not (checks.is_real(q0) and 0 < abs(q0) <= 1.0):
        raise ValueError(f'q0 must be a nonzero angle in [-1, 1] rad, got {q0!r}')
    if not (checks.is_real(duration) and 0.5 < duration <= 10.0):
        raise ValueError(f'duration must be in (0.5, 10] s, got {duration!r}')
    if twin is not None and not (isinstance(twin, str) and twin.replace('-', '').isalnum()):
        raise ValueError(f'twin must be an HTML id (letters, digits, -) or None, got {twin!r}')
    critical = {i: {format(z, 'g'): _finite(critical_h_omega(i, z), 8) for z in DAMPRATIOS}
                for i in PANEL_INTEGRATORS}
    return {
        'key': 'servo', 'twin': twin, 'xml': browser_xml(), 'linkInertia': LINK_INERTIA,
        'q0': q0, 'duration': duration, 'pythonMujoco': mujoco.__version__, 'colors': COLORS,
        'defaults': {'kp': kp, 'armature': armature, 'timestep': timestep, 'integrator': integrator,
                     'dampratio': dampratio},
        'integrators': PANEL_INTEGRATORS, 'browserIntegrators': BROWSER_INTEGRATORS, 'dampratios': DAMPRATIOS,
        'timestepRangeMs': TIMESTEP_RANGE_MS,
        'kpGrid': PANEL_KP_GRID.tolist(), 'stabilityKp': STABILITY_KP.tolist(),
        'stabilityArmature': STABILITY_ARMATURE.tolist(), 'stabilitySteps': STABILITY_STEPS,
        'criticalHOmega': critical, 'discrete': _discrete_runs(q0, duration),
    }


def live_html(config: dict, *, title: str) -> HTML:
    """The HTML block of a live panel: hidden, with its ``config`` as JSON for ``physai-live.js``.

    The block shows nothing until the page's script has MuJoCo running (so with JavaScript or WebAssembly off the
    reader sees the static twin, ``config['twin']``, also named by the block's ``data-twin``, so the page offers the
    live panel without parsing the configuration); the script builds the panel inside it.
    """
    key = config['key']
    data = json.dumps(config, separators=(',', ':'), allow_nan=False).replace('</', '<\\/')
    twin = f' data-twin="{html.escape(config["twin"])}"' if config.get('twin') else ''
    return HTML(f'<div class="physai-live" id="physai-live-{html.escape(key)}" data-physai-live="{html.escape(key)}"'
                f'{twin} data-title="{html.escape(title)}" hidden>'
                f'<script type="application/json" class="physai-live-config">{data}</script></div>')


def servo_live(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
               integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0,
               twin: str | None = SERVO_TWIN_ID) -> HTML:
    """Chapter 1's live panel for the published page: the link's servo under kp, armature, timestep, integrator and
    damping, simulated by MuJoCo in the reader's browser.

    Show it in the cell after :func:`~physai.interface.position_actuators_panels.servo_twin`: on the page the panel
    takes the twin's place once MuJoCo has loaded (at the reader's first touch of the twin). Arguments as
    :func:`servo_config`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.position_actuators_panels.servo_panel`).
    """
    config = servo_config(kp=kp, armature=armature, timestep=timestep, integrator=integrator, dampratio=dampratio,
                          q0=q0, duration=duration, twin=twin)
    return live_html(config, title='The servo, live: MuJoCo in your browser')


def stability_reference(timestep: float, integrator: str, dampratio: float = 1.0, q0: float = -0.5) -> np.ndarray:
    """The stability map's cells as the page computes them, (len(STABILITY_KP), len(STABILITY_ARMATURE)) bools:
    :func:`physai.experiments.position_actuators.servo_stability` (the tests compare the page's map with it)."""
    return servo_stability(timestep, integrator, dampratio, q0)['diverged']


def step_reference(settings: Sequence[tuple[float, float, float, str, float]], *, q0: float = -0.5,
                   duration: float = 3.0) -> list[dict]:
    """Python MuJoCo's step responses for (kp, armature, timestep, integrator, dampratio) settings, as the page
    reports them: the trajectory q (rad), its readout words, and the stability map's verdict on it."""
    params = [panel_servo(*s) for s in settings]
    out = []
    for s, r in zip(settings, step_responses(params, q0=q0, duration=duration)):
        out.append({'setting': s, 'q': r.q.tolist(), 'readout': readout(r), 'diverged': r.diverged,
                    'sagDeg': _finite(r.sag_deg, 17), 'riseMs': _finite(r.rise_ms, 17),
                    'unstable': unstable(r, q0)})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Chapter 2: the pendulum under each actuator model

PENDULUM_TWIN_ID = 'physai-twin-ch2-effort-limit'
"""The HTML id of chapter 2's static twin (:func:`physai.interface.actuator_models_panels.forcerange_twin`)."""

PENDULUM_CONTROLS = (
    {'name': 'model', 'label': 'model', 'kind': 'choice', 'options': MODELS},
    {'name': 'kp', 'label': 'kp', 'kind': 'log', 'min': 1.0, 'max': 30000.0, 'unit': 'N·m/rad', 'format': '.4g'},
    {'name': 'armature', 'label': 'armature', 'kind': 'linear', 'min': 0.0, 'max': 0.1, 'step': 0.0005,
     'unit': 'kg·m²', 'format': '.4f'},
    {'name': 'timestep', 'label': 'timestep', 'kind': 'linear', 'min': 0.5, 'max': 20.0, 'step': 0.1, 'unit': 'ms',
     'scale': 1e-3, 'format': '.1f'},
    {'name': 'integrator', 'label': 'integrator', 'kind': 'choice', 'options': PANEL_INTEGRATORS},
    {'name': 'kv', 'label': 'kv', 'kind': 'log', 'min': 0.1, 'max': 300.0, 'unit': 'N·m·s/rad', 'format': '.3g'},
    {'name': 'forcerange', 'label': 'forcerange E (100: none)', 'kind': 'linear', 'min': 0.5,
     'max': models_panels.PANEL_NO_LIMIT, 'step': 0.5, 'unit': 'N·m', 'format': '.1f'},
    {'name': 'velocity_limit', 'label': 'velocity limit V', 'kind': 'linear', 'min': 1.0, 'max': 40.0, 'step': 1.0,
     'unit': 'rad/s', 'format': '.0f'},
    {'name': 'delay', 'label': 'delay', 'kind': 'linear', 'min': 0.0, 'max': 60.0, 'step': 1.0, 'unit': 'steps',
     'format': '.0f'},
)
"""The controls of :func:`physai.interface.actuator_models_panels.actuator_panel` as the page builds them (a test
keeps them equal): sliders in their displayed unit (``scale`` turns it into SI), ``format`` the readout's."""

PENDULUM_DISCRETE_KP = (30.0, 100.0, 300.0, 1000.0)
"""kp of chapter 2's precomputed ``discrete`` runs, N·m/rad."""

PENDULUM_DISCRETE_TIMESTEP = (0.001, pendulum.TIMESTEP, 0.005, 0.02)
"""timesteps of chapter 2's precomputed ``discrete`` runs, s."""

PENDULUM_BINS = 60
"""Time bins of a precomputed pendulum trace (angle and torque, lowest and highest per bin)."""

PENDULUM_PATH_POINTS = 80
"""Most samples of a precomputed run's path in the torque-speed plane."""


def _pendulum_values(model, kp, kv, armature, timestep, integrator, forcerange, velocity_limit, delay) -> dict:
    """The panel's values checked against :data:`PENDULUM_CONTROLS` (SI units), as a dict."""
    values = {'model': model, 'kp': kp, 'armature': armature, 'timestep': timestep, 'integrator': integrator,
              'kv': kv, 'forcerange': forcerange, 'velocity_limit': velocity_limit, 'delay': delay}
    for c in PENDULUM_CONTROLS:
        v = values[c['name']]
        if c['kind'] == 'choice':
            if v not in c['options']:
                raise ValueError(f"{c['name']} must be one of {', '.join(c['options'])}, got {v!r}")
            continue
        scale = c.get('scale', 1.0)
        if not (checks.is_real(v) and c['min'] * scale <= v <= c['max'] * scale):
            raise ValueError(f"{c['name']} must be in [{c['min']:g}, {c['max']:g}] {c['unit']} (the slider), "
                             f"got {v!r}{' s' if scale != 1.0 else ''}")
    if delay != int(delay):
        raise ValueError(f'delay must be a whole number of physics steps, got {delay!r}')
    return values


def _pendulum_run(values: dict, q0: float = 0.0) -> tuple:
    """:func:`physai.interface.actuator_models_panels.panel_run` on the panel's values, from angle ``q0`` (rad)."""
    return models_panels.panel_run(values['model'], values['kp'], values['kv'], values['armature'],
                                   values['timestep'], values['integrator'], values['forcerange'],
                                   values['velocity_limit'], int(values['delay']), q0=q0)


PENDULUM_CHAOS_NUDGE = 1e-9
"""rad: each precomputed run is also made from ±this start angle; a run whose stored form then moves is chaotic."""


def _pendulum_record(values: dict, q0: float, duration: float) -> dict:
    """One precomputed run as the page draws it (angle and torque as envelopes, the sampled torque-speed path,
    the readout words), packed to the resolution the plots draw: 0.1°, 0.01 N·m, 0.1 rad/s."""
    run, metrics = _pendulum_run(values, q0)
    n = len(run.torque)
    stride = max(1, math.ceil(n / PENDULUM_PATH_POINTS))
    tau = np.clip(np.nan_to_num(run.torque), -1e3, 1e3)
    v = np.clip(run.v[:n:stride], -1e3, 1e3).tolist()
    return {'q': [pack(x, 0.1) for x in envelope(run.t, np.degrees(run.q), duration, PENDULUM_BINS)],
            'torque': [pack(x, 0.01) for x in envelope(run.t[:n], tau, duration, PENDULUM_BINS)],
            'path': [pack(v, 0.1), pack(tau[::stride].tolist(), 0.01)], 'pathDt': stride * values['timestep'],
            'readout': models_panels.panel_readout(run, metrics), 'diverged': bool(run.diverged),
            'tEnd': round(float(run.t[-1]), 4), 'qEndDeg': round(math.degrees(float(run.q[-1])), 2)}


def _pendulum_discrete(defaults: dict) -> dict:
    """The ``discrete`` runs on :data:`MODELS` × :data:`PENDULUM_DISCRETE_KP` × :data:`PENDULUM_DISCRETE_TIMESTEP`,
    every other control at its default, each stored as the page draws it (:func:`_pendulum_record`).

    A stored figure must survive a last-bit change, and a chaotic run's trace does not: each run is made three
    times, from the hanging angle and from ±:data:`PENDULUM_CHAOS_NUDGE`. When the three stored forms differ, the
    run is a chaotic limit cycle and only that is stored (``chaotic``, with the readout's words and no trace or
    number); the page says so instead of drawing one draw of it.
    """
    duration = models_panels.PANEL_DURATION
    runs = []
    for model in MODELS:
        for h in PENDULUM_DISCRETE_TIMESTEP:
            for kp in PENDULUM_DISCRETE_KP:
                values = {**defaults, 'model': model, 'kp': kp, 'timestep': h, 'integrator': 'discrete'}
                record = _pendulum_record(values, 0.0, duration)
                if any(_pendulum_record(values, q0, duration) != record
                       for q0 in (PENDULUM_CHAOS_NUDGE, -PENDULUM_CHAOS_NUDGE)):
                    # the verdict without its numbers ("still swinging"), which a last bit moves
                    words = 'diverges' if record['diverged'] else record['readout'].split(':')[0]
                    record = {'chaotic': True, 'readout': f'{words} (chaotic: no single trace is stored)',
                              'diverged': False}
                runs.append(record)
    return {'models': MODELS, 'kp': PENDULUM_DISCRETE_KP, 'timestep': PENDULUM_DISCRETE_TIMESTEP,
            'steps': {'q': 0.1, 'torque': 0.01, 'speed': 0.1},
            'settings': {k: v for k, v in defaults.items() if k not in ('model', 'kp', 'timestep', 'integrator')},
            'runs': runs}


def pendulum_config(*, model: str = 'ideal PD', kp: float = 100.0, kv: float = 5.0, armature: float = 0.0,
                    timestep: float = pendulum.TIMESTEP, integrator: str = 'implicitfast', forcerange: float = 6.0,
                    velocity_limit: float = 8.0, delay: int = 12, twin: str | None = PENDULUM_TWIN_ID) -> dict:
    """Everything chapter 2's live panel needs in the browser, as plain JSON-ready data.

    Args:
      model, kp, kv, armature, timestep, integrator, forcerange, velocity_limit, delay: the controls' start and
        reset values in SI units (those of :func:`physai.interface.actuator_models_panels.actuator_panel`, whose
        defaults these are), each within its slider (:data:`PENDULUM_CONTROLS`).
      twin: the HTML id of the static twin the panel replaces when MuJoCo loads, or None.
    """
    defaults = _pendulum_values(model, kp, kv, armature, timestep, integrator, forcerange, velocity_limit, delay)
    if twin is not None and not (isinstance(twin, str) and twin.replace('-', '').isalnum()):
        raise ValueError(f'twin must be an HTML id (letters, digits, -) or None, got {twin!r}')
    step = models_panels.PANEL_STEP
    return {
        'key': 'pendulum', 'twin': twin, 'xml': pendulum.PENDULUM_XML, 'pythonMujoco': mujoco.__version__,
        'colors': COLORS, 'defaults': defaults, 'controls': PENDULUM_CONTROLS,
        'browserIntegrators': BROWSER_INTEGRATORS,
        'duration': models_panels.PANEL_DURATION, 'step': {'at': step.at, 'low': step.low, 'high': step.high},
        'controlRate': pendulum.CONTROL_RATE, 'tauG': pendulum.TAU_G, 'torqueSteps': models_panels.PANEL_TORQUE_STEPS,
        'constants': {'noLimit': models_panels.PANEL_NO_LIMIT, 'remotizedShare': models_panels.PANEL_REMOTIZED_SHARE,
                      'dcSaturation': DC_SATURATION},
        'discrete': _pendulum_discrete(defaults),
    }


def pendulum_live(**settings) -> HTML:
    """Chapter 2's live panel for the published page: the pendulum under each actuator model (implicit, ideal PD,
    DC motor, delayed PD, remotized PD) with kp, kv, armature, timestep, integrator, effort and velocity limits and
    delay, simulated by MuJoCo in the reader's browser.

    Show it in the cell after :func:`~physai.interface.actuator_models_panels.forcerange_twin`: on the page the
    panel takes the twin's place once MuJoCo has loaded (at the reader's first touch of the twin). Arguments as
    :func:`pendulum_config`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.actuator_models_panels.actuator_panel`).
    """
    return live_html(pendulum_config(**settings), title='The actuator models, live: MuJoCo in your browser')


def pendulum_reference(settings: Sequence[dict]) -> list[dict]:
    """Python MuJoCo's runs of chapter 2's panel for settings (dicts of the panel's values, SI units), as the page
    reports them: q and qd (rad, rad/s), the applied torque (N·m), whether it diverged, and the readout words."""
    out = []
    for s in settings:
        run, metrics = _pendulum_run(_pendulum_values(**s))
        out.append({'setting': s, 'q': run.q.tolist(), 'v': run.v.tolist(), 'torque': run.torque.tolist(),
                    'diverged': bool(run.diverged), 'readout': models_panels.panel_readout(run, metrics)})
    return out
