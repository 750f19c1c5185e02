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
MuJoCo 3.3.8) as step responses on :data:`DISCRETE_KP` × :data:`DISCRETE_ARMATURE` × :data:`DISCRETE_TIMESTEP` at
dampratio 1, and the integrators' critical hω per damping choice (:func:`physai.laws.stability.critical_h_omega`).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence

import mujoco
import numpy as np
from IPython.display import HTML

from physai.engine.link import LINK_INERTIA, LINK_XML, step_responses
from physai.experiments.position_actuators import (PANEL_KP_GRID, STABILITY_ARMATURE, STABILITY_KP, STABILITY_STEPS,
                                                   panel_servo, servo_stability, unstable)
from physai.interface.plots import COLORS, readout
from physai.laws import checks
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


def envelope(t: np.ndarray, q_deg: np.ndarray, duration: float, bins: int = ENVELOPE_BINS) -> list[list]:
    """A trace as ``[low, high]``: its lowest and highest angle in each of ``bins`` equal time bins of
    ``[0, duration]``, degrees to 0.01° (None for a bin without a sample: a diverged run ends early).

    Args:
      t: (n,) times, s.
      q_deg: (n,) angles, degrees; a non-finite angle is left out.
      duration: the plotted time span, s.
      bins: number of bins.
    """
    t, q_deg = np.asarray(t, dtype=float), np.asarray(q_deg, dtype=float)
    keep = np.isfinite(q_deg)
    t, q_deg = t[keep], np.clip(q_deg[keep], -1e4, 1e4)
    index = np.minimum((t / duration * bins).astype(int), bins - 1)
    low: list = [None] * bins
    high: list = [None] * bins
    for b in np.unique(index):
        chunk = q_deg[index == b]
        low[b], high[b] = round(float(chunk.min()), 2), round(float(chunk.max()), 2)
    return [low, high]


def _finite(x: float, digits: int) -> float | None:
    """x to ``digits`` significant digits (the figures draw no finer, and a last-bit change cannot move them), or
    None for NaN or inf."""
    return float(f'{x:.{digits}g}') if math.isfinite(x) else None


def _discrete_runs(q0: float, duration: float) -> dict:
    grid = [(h, a, k) for h in DISCRETE_TIMESTEP for a in DISCRETE_ARMATURE for k in DISCRETE_KP]
    responses = step_responses([panel_servo(k, a, h, 'discrete', 1.0) for h, a, k in grid], q0=q0, duration=duration)
    runs = []
    for (h, a, k), r in zip(grid, responses):
        runs.append({'trace': envelope(r.t, np.degrees(r.q), duration), 'readout': readout(r),
                     'diverged': r.diverged, 'settled': r.settled, 'tEnd': round(float(r.t[-1]), 4),
                     'sagDeg': _finite(r.sag_deg, 4), 'riseMs': _finite(r.rise_ms, 4),
                     'riseWindow': [_finite(x, 4) for x in r.rise_window]})
    stability = [servo_stability(h, 'discrete', 1.0, q0)['diverged'].astype(int).tolist() for h in DISCRETE_TIMESTEP]
    return {'kp': DISCRETE_KP, 'armature': DISCRETE_ARMATURE, 'timestep': DISCRETE_TIMESTEP, 'dampratio': 1.0,
            'runs': runs, 'stability': stability}


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
    reader sees the static twin, ``config['twin']``); the script builds the panel inside it.
    """
    key = config['key']
    data = json.dumps(config, separators=(',', ':'), allow_nan=False).replace('</', '<\\/')
    return HTML(f'<div class="physai-live" id="physai-live-{html.escape(key)}" data-physai-live="{html.escape(key)}"'
                f' data-title="{html.escape(title)}" hidden>'
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
