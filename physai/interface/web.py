"""The page panel: a chapter's panel on the published book, where no kernel runs, drawn by the book's JavaScript.

A chapter's live panel is described once (:class:`physai.interface.panel.PanelSpec`) and drawn by
``book/_static/panels/``: in Jupyter or Colab as a widget whose physics the kernel runs (:mod:`physai.interface.widget`),
on the page from the two blocks this module writes:

- :func:`first_view` (the chapter's ``*_twin`` function, e.g.
  :func:`physai.interface.position_actuators_panels.servo_twin`): the description as JSON, the chapter's constants,
  and the panel's results precomputed by Python MuJoCo on a grid of some of its controls (the others fixed). The page
  draws it at once, with the same code that draws the live panel, and a control of the grid moves between its
  precomputed positions. Its traces are stored packed (:func:`pack`), so the first view stays small.
- :func:`engine_block` (``servo_live``, ``pendulum_live`` here; ``pd_live``, ``sysid_live``, ``gripper_live`` in
  :mod:`physai.interface.web_arm`): the model as MJCF text and the engine's rule, hidden. When the reader presses "Run
  MuJoCo live" or changes a control (or the page's address carries a setting of it: :func:`address`), the page loads MuJoCo's own
  WebAssembly build (:data:`ENGINE`, served from the site: ``book/_ext/physai_engine.py`` copies it there) and from then
  on every control reruns the physics in the page.

Without WebAssembly the first view stays, its other controls off, and the panel says why; without the book's script
(Jupyter, Colab) the block shows one line pointing at the notebook's panel (the widget).

:data:`ENGINE` is MuJoCo 3.14.0 (npm ``@mujoco/mujoco``, the newest release of that package; its single-threaded
build: the multi-threaded one needs cross-origin-isolation headers a static site cannot count on); the book's
numbers are Python MuJoCo 3.17.0's (``requirements.txt``). The two compile physai's models to the same fields, and
their runs agree within stated tolerances, most of them bit for bit (``tests/test_web*.py``).
"""

from __future__ import annotations

import dataclasses
import html
import itertools
import json
import math
import urllib.parse
from collections.abc import Callable, Mapping, Sequence

import mujoco
import numpy as np
from IPython.display import HTML

from physai.engine import mj
from physai.engine.link import LINK_XML
from physai.engine.pendulum import PENDULUM_XML
from physai.interface.panel import Choice, PanelSpec
from physai.interface.plots import COLORS
from physai.laws.sim import DIVERGED_BOUND


@dataclasses.dataclass(frozen=True, kw_only=True)
class Engine:
    """The browser's MuJoCo as the site ships it."""

    package: str
    """The npm package, pinned in ``package.json`` and ``package-lock.json``."""
    version: str
    """Its version, the MuJoCo release it builds (``mj_versionString`` in the page)."""
    files: tuple[str, ...]
    """The files the site serves from ``_static/mujoco/`` (``book/_ext/physai_engine.py`` copies them)."""
    megabytes: float
    """Their size, MB (10⁶ bytes), as measured (``tests/test_web.py`` checks it against ``node_modules``)."""
    compressed_megabytes: float
    """What a server compressing with gzip sends, MB (level 6), as measured."""


ENGINE = Engine(package='@mujoco/mujoco', version='3.14.0', files=('mujoco.js', 'mujoco.wasm'), megabytes=10.6,
                compressed_megabytes=2.6)
"""MuJoCo's WebAssembly build, as the page loads it."""


def engine_rule() -> dict:
    """The divergence rule of :func:`physai.engine.mj.diverged` as the page applies it: the MuJoCo warnings that count
    (:data:`physai.engine.mj.BLOWUP_WARNINGS`, by name), the angle and speed bounds, the most steps a run may take."""
    return {'warnings': [mujoco.mjtWarning(w).name for w in mj.BLOWUP_WARNINGS], 'angleBound': DIVERGED_BOUND,
            'speedBound': mj.SPEED_BOUND, 'maxSteps': mj.MAX_STEPS}


# ---------------------------------------------------------------------------------------------------------------
# Packed traces


PACK_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
"""The 62 characters of a packed number (:func:`pack`)."""


def pack(values: Sequence[float | None], step: float) -> str:
    """A trace as a short string for the page: each value in whole ``step`` s, as the change from the value before.

    Each change d is written zigzagged (``z = 2d`` for d >= 0, ``-2d - 1`` below) in :data:`PACK_DIGITS`: one
    character when z < 61, else ``'_'``, z in base 62 and ``'.'``; a missing value (None, NaN) is ``'-'``. A trace
    that settles is then mostly ``'0'``, which compresses to almost nothing. The page reads it back with ``unpack``
    (``book/_static/panels/laws.js``); the round trip gives ``round(v / step) * step``.
    """
    out, before = [], 0
    for v in values:
        if v is None or not math.isfinite(v):
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
    """:func:`pack` read back (what the page does): the values rounded to whole ``step`` s, None where missing."""
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


def rounded(x: float, digits: int = 4) -> float | None:
    """x to ``digits`` significant digits (the figures draw no finer, and a last-bit change cannot move them), or
    None for NaN or inf."""
    x = float(x)
    return float(f'{x:.{digits}g}') if math.isfinite(x) else None


def stepped(values, step: float) -> list[float | None]:
    """Values in whole ``step`` s, as the page draws them (None where not finite): what a stored bar or number holds."""
    digits = max(0, -math.floor(math.log10(step))) + 1
    return [round(round(float(v) / step) * step, digits) if math.isfinite(v) else None for v in np.ravel(values)]


# ---------------------------------------------------------------------------------------------------------------
# The two blocks


@dataclasses.dataclass(frozen=True)
class Part:
    """One part of a panel's precomputed results: it depends on the controls ``on`` (a subset of the first view's
    grid) and ``compute(**values of on)`` returns it as the page stores it (JSON-ready)."""

    on: tuple[str, ...]
    compute: Callable[..., object]


def _json(value) -> str:
    """Deterministic JSON that is safe inside a <script> element (and whose stored text nbval compares)."""
    text = json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=False, allow_nan=False)
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def first_view(spec: PanelSpec, module: str, *, grid: Mapping[str, Sequence], parts: Mapping[str, Part],
               constants: Mapping, fallback: str) -> HTML:
    """The page panel's block with its precomputed first view.

    Args:
      spec: the panel's description; its defaults are where the grid's controls start (the nearest grid value) and
        where the other controls stay.
      module: the chapter's page module in ``book/_static/panels/`` (``position_actuators_panels.js``).
      grid: for some controls (by name), the values the first view is precomputed at, each within the control's range.
      parts: the results by name, each computed once per combination of the grid values of the controls it is on.
      constants: the chapter's numbers the page needs to draw and to run (JSON-ready); the block adds the colours and
        the Python MuJoCo version.
      fallback: the one line shown where the book's script does not run (Jupyter, Colab).

    Returns:
      ``IPython.display.HTML``: ``<div class="physai-panel" id="physai-panel-KEY" data-panel="KEY">``, byte-stable for
      equal inputs.
    """
    defaults = spec.defaults
    at = {name: v for name, v in defaults.items() if name not in grid}
    grid = {name: [spec.control(name).check(v) for v in values] for name, values in grid.items()}
    stored = {}
    for name, part in parts.items():
        unknown = [c for c in part.on if c not in grid]
        if unknown:
            raise ValueError(f'part {name} is on {", ".join(unknown)}, which the grid does not hold')
        stored[name] = {'on': list(part.on), 'data': [part.compute(**dict(zip(part.on, combination)))
                                                      for combination in itertools.product(*(grid[c] for c in part.on))]}
    data = {'module': module, 'spec': spec.to_json(),
            'constants': {**constants, 'colors': COLORS, 'pythonMujoco': mujoco.__version__},
            'firstView': {'grid': grid, 'at': at, 'parts': stored}}
    key = html.escape(spec.key)
    return HTML(f'<div class="physai-panel" id="physai-panel-{key}" data-panel="{key}">'
                f'<p class="physai-panel-fallback">{html.escape(fallback)}</p>'
                f'<script type="application/json" class="physai-panel-data">{_json(data)}</script></div>')


def engine_block(key: str, xml: str, **extra) -> HTML:
    """The hidden block that lets panel ``key`` run MuJoCo in the page: the model's MJCF text, the engine
    (:data:`ENGINE`) and its divergence rule (:func:`engine_rule`), and ``extra`` JSON-ready data the chapter's runs
    need. Shows nothing in Jupyter or Colab (``hidden``), where the notebook's panel (the widget) runs the physics in the kernel."""
    engine = {'package': ENGINE.package, 'version': ENGINE.version, 'megabytes': ENGINE.megabytes,
              'compressedMegabytes': ENGINE.compressed_megabytes, **engine_rule()}
    data = {'engine': engine, 'xml': xml, **extra}
    return HTML(f'<div class="physai-live" data-panel="{html.escape(key)}" hidden>'
                f'<script type="application/json" class="physai-live-data">{_json(data)}</script></div>')


def servo_live() -> HTML:
    """Chapter 1's panel runs MuJoCo in the reader's browser: the link as :data:`physai.engine.link.LINK_XML`, the very
    text every step response of physai compiles. Show it in the cell after
    :func:`~physai.interface.position_actuators_panels.servo_twin`."""
    return engine_block('servo', LINK_XML)


def pendulum_live() -> HTML:
    """Chapter 2's panel runs MuJoCo in the reader's browser: the pendulum as
    :data:`physai.engine.pendulum.PENDULUM_XML`, the text physai compiles. Show it in the cell after
    :func:`~physai.interface.actuator_models_panels.forcerange_twin`."""
    return engine_block('pendulum', PENDULUM_XML)


def url_text(control, value) -> str:
    """A control's value as the page's address writes it (``Control.urlText`` in ``spec.js``): a slider's displayed
    value to 12 significant digits, a choice's option as JavaScript prints it (1.0 as ``1``)."""
    if isinstance(control, Choice):
        option = control.check(value)
        if isinstance(option, float) and option.is_integer():
            return str(int(option))
        return str(option)
    return f'{control.check(value) / control.scale:.12g}'


def address(spec: PanelSpec, values: Mapping, *, present: bool = False) -> str:
    """The address relative to the chapter's page (``?servo-kp=3000&servo-h=2#physai-panel-servo``) that opens ``spec``'s
    page panel on ``values`` (SI, by control name; each must be within its control's range, else ValueError naming
    it), in the present view if ``present``. The page reads it back (``fromUrl`` in ``ui.js``) and starts MuJoCo on
    it."""
    query = {f'{spec.key}-{spec.control(name).url}': url_text(spec.control(name), v) for name, v in values.items()}
    if present:
        query[f'{spec.key}-present'] = '1'
    return '?' + urllib.parse.urlencode(query) + f'#physai-panel-{spec.key}'


def read_address(spec: PanelSpec, query: str) -> dict:
    """The values (SI, by control name) an address (or its query) gives ``spec``'s panel, as the page reads it: ValueError for a key
    the panel does not have or a value out of its control's range (the page would clamp it and say so)."""
    out = {}
    query = urllib.parse.urlsplit(query).query
    for key, text in urllib.parse.parse_qsl(query, keep_blank_values=True):
        if not key.startswith(f'{spec.key}-'):
            raise ValueError(f'address key {key!r} is not panel {spec.key!r}\'s')
        url = key[len(spec.key) + 1:]
        if url == 'present':
            continue
        control = next((c for c in spec.controls if c.url == url), None)
        if control is None:
            raise ValueError(f'panel {spec.key} has no address key {url!r}; keys: '
                             f'{", ".join(c.url for c in spec.controls)}, present')
        if isinstance(control, Choice):
            option = next((o for o in control.options if url_text(control, o) == text), None)
            if option is None:
                raise ValueError(f'{control.name} must be one of {", ".join(map(str, control.options))}, got {text!r}')
            out[control.name] = option
        else:
            out[control.name] = control.check(float(text) * control.scale)
    return out


def block_data(block: str) -> dict:
    """The JSON a block of this module carries (tests and benchmarks read it back)."""
    body = block.split('type="application/json"', 1)[1].split('>', 1)[1].rsplit('</script>', 1)[0]
    return json.loads(body)


def trace(values_deg: np.ndarray, step: float, clip: tuple[float, float]) -> str:
    """A trace as the first view stores it: degrees clipped to ``clip`` (the plot's range and a margin), packed in
    whole ``step`` s (:func:`pack`)."""
    v = np.clip(np.asarray(values_deg, dtype=float), *clip)
    return pack(v.tolist(), step)
