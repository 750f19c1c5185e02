"""Live slider panels (Jupyter, Colab) and their static twins (the published page, no kernel).

Every chapter's panel is built from the same four pieces, so all panels look alike, reset alike and
answer a slider within the book's 100 ms budget:

1. **Controls**: :class:`LogSlider`, :class:`Slider`, :class:`Choice`. :func:`common_controls` gives the
   book's common four: kp (log, 1 … 30000 N·m/rad), armature (0 … 0.1 kg·m²), timestep (0.5 … 20 ms,
   passed on in seconds) and the integrator (one of :data:`physai.servo.INTEGRATORS`).
2. **compute(values) -> results**: the physics. Split it into sub-computations wrapped in
   :func:`cached`, each taking only the parameters it depends on, so a kp move never reruns the work
   that depends on armature, timestep and integrator only.
3. **setup(fig) -> state**: creates the axes and artists once, on one persistent figure. Create the
   artists that move on most slider changes with ``animated=True`` (or ``.set_animated(True)``).
4. **draw(state, results, values)**: moves those artists in place (``set_data``, ``set_text``, ...).
   Touch a non-animated artist only when its content really changes (compare with the last result).

:class:`Panel` wires them together. A slider change calls :meth:`Panel.update`, the one hot path: merge
the new value, ``compute``, ``draw``, render the figure to PNG bytes and hand them to an
``ipywidgets.Image``. Rendering blits: the axes, ticks, labels and legends are drawn once into a
cached background, and only the animated artists are drawn over it. If ``draw`` changed any
non-animated artist (matplotlib then marks the figure stale), the whole figure is redrawn and the
background renewed, so the picture is always right and usually fast. Nothing is re-displayed and
nothing is printed, so a panel cell has exactly one output (the widget box) even without a widget
front end (nbval); its ``text/plain`` is a fixed sentence naming the controls, so nbval can compare
it (nbval skips the widget view itself, whose model id is random). An exception in compute or draw
is shown in red on the figure and never reaches the slider; a diverged run is a result your
``draw`` flags (see :class:`physai.plots.StepResponseMarks`).

A minimal panel with one extra slider::

    from physai import plots, servo, widgets as W

    @W.cached                       # cache key: (kp, armature, timestep, integrator, dampratio)
    def response(kp, armature, timestep, integrator, dampratio):
        return servo.step_response(kp, armature=armature, timestep=timestep,
                                   integrator=integrator, dampratio=dampratio)

    def compute(values):            # values: every control's current value, SI units
        return {'response': response(**values)}   # extra keys are ignored by cached functions

    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        return {'marks': plots.StepResponseMarks(ax, animated=True)}   # moved on every change

    def draw(state, results, values):
        state['marks'].update(results['response'])

    controls = W.common_controls() + [W.Slider('dampratio', 'dampratio', 0.1, 2.0, 1.0)]
    panel = W.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(6, 3.5))
    panel                           # last line of a cell: shows sliders, reset button and figure
    panel.update(kp=300.0)          # the same path a slider takes; returns the PNG bytes

Chapter 1's panel is :func:`servo_panel`.

The **static twin** works on the published HTML page with no kernel: :func:`static_twin` precomputes one
frame per combination of slider positions and returns an ``IPython.display.HTML`` holding plain HTML,
compact JSON and a small inline script that draws line plots as SVG (no CDN, no widget manager, no
external file). Element ids derive from ``key`` (root ``physai-twin-<key>``) and every number is
rounded, so the stored output is byte-stable for nbval::

    sliders = [W.TwinSlider('delay', 'delay (ms)', [0, 5, 10, 20, 40])]
    axes = [W.TwinAxes(xlabel='time (s)', ylabel='joint angle q (deg)', ylim=(-35, 10))]

    def frame(delay):               # one call per combination; returns one item list per axes
        r = my_run(delay)
        items = [W.twin_line(r.t, np.degrees(r.q), label='q(t)')]
        if r.diverged:
            items.append(W.twin_text('diverged', color=plots.COLORS['diverged'], size=20))
        return [items]

    W.static_twin('ch2-delay', sliders, axes, frame)

Chapter 1's twin is :func:`servo_twin`.
"""

from __future__ import annotations

import dataclasses
import functools
import html
import inspect
import io
import json
import math
import re
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from physai import plots
from physai.servo import INTEGRATORS, LINK_INERTIA, ServoParams, step_responses
from physai.stability import critical_h_omega, integrator_growth  # noqa: F401 (re-exported)

# ---------------------------------------------------------------------------------------------
# Controls


def _check_range(name: str, low: float, high: float, default: float) -> None:
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f'{name}: min must be < max (finite), got ({low}, {high})')
    if not low <= default <= high:
        raise ValueError(f'{name}: default must be in [{low}, {high}], got {default}')


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Control:
    name: str
    """Keyword under which the value reaches ``compute``, e.g. ``kp``."""
    label: str
    """Text beside the widget, e.g. ``kp (N·m/rad)``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Slider(_Control):
    """A linear slider. The widget shows ``value / scale`` in ``unit``; compute receives ``value``.

    Example: ``Slider(name='timestep', label='timestep', min=0.5, max=20, default=5, unit='ms',
    scale=1e-3)`` shows milliseconds and passes seconds.
    """

    min: float
    """Lowest position, in the displayed unit."""
    max: float
    """Highest position, in the displayed unit."""
    default: float
    """Start and reset position, in the displayed unit."""
    step: float | None = None
    """Slider increment, displayed unit (None: 1/200 of the range)."""
    unit: str = ''
    """Displayed unit, appended to the label."""
    scale: float = 1.0
    """Value passed on = displayed value × scale (1e-3 turns ms into s)."""
    readout_format: str = '.3g'
    continuous_update: bool = True
    """Update while dragging (False: on release, for controls whose change costs a long recompute)."""

    def __post_init__(self):
        _check_range(self.name, self.min, self.max, self.default)
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f'{self.name}: scale must be a finite number > 0, got {self.scale}')

    def __init__(self, name: str, label: str, min: float, max: float, default: float, *,
                 step: float | None = None, unit: str = '', scale: float = 1.0,
                 readout_format: str = '.3g', continuous_update: bool = True):
        for field, value in (('name', name), ('label', label), ('min', float(min)),
                             ('max', float(max)), ('default', float(default)), ('step', step),
                             ('unit', unit), ('scale', float(scale)),
                             ('readout_format', readout_format),
                             ('continuous_update', continuous_update)):
            object.__setattr__(self, field, value)
        self.__post_init__()

    @property
    def default_value(self) -> float:
        """The default in the unit compute receives."""
        return self.default * self.scale

    def clamp(self, value: Any) -> float:
        """A value compute may receive: clipped to the slider's range, NaN replaced by the default."""
        value = float(value)
        if math.isnan(value):
            return self.default_value
        return min(max(value, self.min * self.scale), self.max * self.scale)

    def make_widget(self):
        import ipywidgets as W
        step = self.step if self.step is not None else (self.max - self.min) / 200
        return W.FloatSlider(value=self.default, min=self.min, max=self.max, step=step,
                             description=_description(self.label, self.unit),
                             readout_format=self.readout_format,
                             continuous_update=self.continuous_update,
                             style={'description_width': '150px'},
                             layout=W.Layout(width='380px'))

    def to_value(self, widget_value: float) -> float:
        return self.clamp(widget_value * self.scale)

    def to_widget(self, value: float) -> float:
        return value / self.scale


class LogSlider(Slider):
    """A slider whose position is log10 of the value, for quantities spanning decades (kp).

    ``min``, ``max`` and ``default`` are values (not exponents), in the displayed unit; all > 0.
    """

    def __post_init__(self):
        super().__post_init__()
        if self.min <= 0:
            raise ValueError(f'{self.name}: a log slider needs min > 0, got {self.min}')

    def make_widget(self):
        import ipywidgets as W
        lo, hi = math.log10(self.min), math.log10(self.max)
        step = self.step if self.step is not None else (hi - lo) / 200
        return W.FloatLogSlider(value=self.default, base=10, min=lo, max=hi, step=step,
                                description=_description(self.label, self.unit),
                                readout_format=self.readout_format,
                             continuous_update=self.continuous_update,
                                style={'description_width': '150px'},
                                layout=W.Layout(width='380px'))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Choice(_Control):
    """A dropdown over a few options (strings); compute receives the chosen option."""

    options: tuple[str, ...]
    default: str

    def __init__(self, name: str, label: str, options: Sequence[str], default: str | None = None):
        options = tuple(options)
        if not options:
            raise ValueError(f'{name}: options must not be empty')
        default = options[0] if default is None else default
        if default not in options:
            raise ValueError(f'{name}: default must be one of {", ".join(options)}, got {default!r}')
        for field, value in (('name', name), ('label', label), ('options', options),
                             ('default', default)):
            object.__setattr__(self, field, value)

    @property
    def default_value(self) -> str:
        return self.default

    def clamp(self, value: Any) -> str:
        """The option itself; an unknown option raises ValueError listing the valid ones."""
        if value not in self.options:
            raise ValueError(
                f'{self.name} must be one of {", ".join(self.options)}, got {value!r}')
        return value

    def make_widget(self):
        import ipywidgets as W
        return W.Dropdown(options=self.options, value=self.default, description=self.label,
                          style={'description_width': '150px'}, layout=W.Layout(width='380px'))

    def to_value(self, widget_value: str) -> str:
        return widget_value

    def to_widget(self, value: str) -> str:
        return value


Control = Slider | LogSlider | Choice


def _description(label: str, unit: str) -> str:
    return f'{label} ({unit})' if unit else label


def common_controls(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                    integrator: str = 'implicitfast') -> list[Control]:
    """The book's common four controls, with these defaults (SI units).

    Args:
      kp: stiffness, N·m/rad; log slider 1 … 30000.
      armature: kg·m²; slider 0 … 0.1.
      timestep: s; slider shown in ms, 0.5 … 20 ms, passed on in s.
      integrator: one of :data:`physai.servo.INTEGRATORS`.

    Returns:
      ``[LogSlider kp, Slider armature, Slider timestep, Choice integrator]``.
    """
    return [
        LogSlider('kp', 'kp', 1.0, 30000.0, kp, unit='N·m/rad', readout_format='.4g'),
        Slider('armature', 'armature', 0.0, 0.1, armature, step=0.0005, unit='kg·m²',
               readout_format='.4f'),
        Slider('timestep', 'timestep', 0.5, 20.0, timestep * 1e3, step=0.1, unit='ms',
               scale=1e-3, readout_format='.1f', continuous_update=False),
        Choice('integrator', 'integrator', INTEGRATORS, integrator),
    ]


# ---------------------------------------------------------------------------------------------
# Caching by dependencies


def cached(func: Callable | None = None, *, maxsize: int = 32) -> Callable:
    """Memoize ``func`` on the parameters its signature names; extra keyword arguments are ignored.

    Call it with a panel's whole ``values`` dict (``f(**values)``): only the named parameters form
    the cache key, so a change of any other control returns the stored result at once. The wrapper
    counts real computations in ``.calls`` (tests use it) and has ``.cache_clear()``.

    Use as ``@cached`` or ``@cached(maxsize=8)``.
    """
    if func is None:
        return functools.partial(cached, maxsize=maxsize)
    signature = inspect.signature(func)
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    store: OrderedDict = OrderedDict()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in names})
        bound.apply_defaults()
        key = tuple((k, bound.arguments[k]) for k in names if k in bound.arguments)
        if key in store:
            store.move_to_end(key)
            return store[key]
        result = func(*bound.args, **bound.kwargs)
        wrapper.calls += 1
        store[key] = result
        while len(store) > maxsize:
            store.popitem(last=False)
        return result

    def cache_clear() -> None:
        store.clear()
        wrapper.calls = 0

    wrapper.calls = 0
    wrapper.cache_clear = cache_clear
    wrapper.depends_on = tuple(names)
    return wrapper


# ---------------------------------------------------------------------------------------------
# The live panel


def _encode_png(fig, compress_level: int = 1) -> bytes:
    from PIL import Image
    buffer = np.asarray(fig.canvas.buffer_rgba())
    out = io.BytesIO()
    Image.fromarray(buffer[..., :3]).save(out, format='png', compress_level=compress_level)
    return out.getvalue()


def _subplot_params(fig) -> tuple[float, ...]:
    p = fig.subplotpars
    return (p.left, p.right, p.bottom, p.top, p.wspace, p.hspace)


class Panel:
    """A live slider panel: controls + compute + draw on one persistent figure + reset.

    Args:
      controls: the sliders and choices, in display order.
      compute: ``compute(values) -> results``; ``values`` maps every control's name to its value
        (SI units). Wrap expensive parts in :func:`cached`. None passes the values through.
      setup: ``setup(fig) -> state``: add axes and artists to the panel's figure, once. Unless it
        sets the spacing itself (``fig.subplots_adjust``), the panel applies ``tight_layout``.
      draw: ``draw(state, results, values)``: move the artists to show ``results``.
      figsize: figure size, inches.
      dpi: resolution of the rendered image, dots per inch.
      title: optional heading above the controls (HTML allowed).

    Attributes:
      values: the current values, dict name -> value.
      figure: the persistent ``matplotlib.figure.Figure`` (not registered with pyplot).
      image: the ``ipywidgets.Image`` showing it (created when first displayed or accessed).
      png: the latest rendered PNG bytes.
      error: the message of the last exception caught in compute/draw, or None.
      latencies: seconds taken by each :meth:`update` (latest 200).
      full_redraws: how many updates redrew the whole figure rather than the animated artists.
    """

    def __init__(self, controls: Sequence[Control], *, compute: Callable[[dict], Any] | None = None,
                 setup: Callable, draw: Callable, figsize: tuple[float, float] = (12.0, 3.6),
                 dpi: float = 80, title: str | None = None):
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise ValueError(f'control names must be unique, got {names}')
        self.controls = {c.name: c for c in controls}
        self.compute = compute if compute is not None else (lambda values: values)
        self.draw = draw
        self.title = title
        self.values = {c.name: c.default_value for c in controls}
        self.figure = plots.detached_figure(figsize, dpi=dpi)
        with plots.book_style():
            defaults = _subplot_params(self.figure)
            self.state = setup(self.figure)
            if _subplot_params(self.figure) == defaults:  # setup left the layout to us
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    self.figure.tight_layout()
            self._error_text = self.figure.text(
                0.5, 0.5, '', ha='center', va='center', color=plots.COLORS['diverged'],
                fontsize=11, wrap=True, visible=False, zorder=10, animated=True,
                bbox=dict(facecolor='white', edgecolor=plots.COLORS['diverged']))
        self.error: str | None = None
        self.png = b''
        self.latencies: list[float] = []
        self._widgets: dict | None = None
        self._image = None
        self._box = None
        self._syncing = False
        self._background = None
        self._animated: list = []
        self.full_redraws = 0
        self.update()

    # the hot path -----------------------------------------------------------------------------
    def update(self, **changes) -> bytes:
        """Apply ``changes`` (name=value, SI units), recompute, redraw in place, render, show.

        Values are clipped to their slider's range, so an extreme value is drawn, never raised.
        An unknown control name raises ValueError (a programming error, not a slider move).

        Returns:
          The new PNG bytes (also in :attr:`png` and the image widget).
        """
        start = time.perf_counter()
        for name, value in changes.items():
            if name not in self.controls:
                raise ValueError(
                    f'unknown control {name!r}; controls: {", ".join(self.controls)}')
            self.values[name] = self.controls[name].clamp(value)
        if changes and self._widgets is not None and not self._syncing:
            self._sync_widgets()
        try:
            with plots.book_style():
                results = self.compute(dict(self.values))
                self.draw(self.state, results, dict(self.values))
            self.error = None
            self._error_text.set_visible(False)
        except Exception as exc:  # a panel must survive any slider position
            self.error = f'{type(exc).__name__}: {exc}'
            self._error_text.set_text(f'could not draw this setting\n{self.error}'[:300])
            self._error_text.set_visible(True)
        try:
            self.png = self._render()
        except Exception as exc:
            self.error = f'{type(exc).__name__} while rendering: {exc}'
        if self._image is not None:
            self._image.value = self.png
        self.latencies = (self.latencies + [time.perf_counter() - start])[-200:]
        return self.png

    def _render(self) -> bytes:
        """Blit: redraw everything only when a non-animated artist changed, else just the animated."""
        fig = self.figure
        canvas = fig.canvas
        if self._background is None or fig.stale:
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._animated = [a for ax in fig.axes
                              for a in sorted(ax.get_children(), key=lambda a: a.get_zorder())
                              if a.get_animated()]
            self._animated += [a for a in fig.texts if a.get_animated()]
            self.full_redraws += 1
        else:
            canvas.restore_region(self._background)
        for artist in self._animated:
            if artist.get_visible():
                fig.draw_artist(artist)
        return _encode_png(fig)

    def reset(self) -> bytes:
        """Every control back to its default, then one update."""
        return self.update(**{name: c.default_value for name, c in self.controls.items()})

    # widgets ----------------------------------------------------------------------------------
    @property
    def image(self):
        if self._image is None:
            self.widget  # noqa: B018, builds the widgets
        return self._image

    @property
    def widget(self):
        """The ``ipywidgets.VBox``: controls and reset button above the figure."""
        if self._box is not None:
            return self._box
        import ipywidgets as W
        self._widgets = {}
        for name, control in self.controls.items():
            w = control.make_widget()
            w.value = control.to_widget(self.values[name])
            w.observe(functools.partial(self._on_change, name), names='value')
            self._widgets[name] = w
        reset = W.Button(description='reset', icon='undo', tooltip='all controls to their defaults',
                         layout=W.Layout(width='100px'))
        reset.on_click(lambda _button: self.reset())
        self._image = W.Image(value=self.png, format='png',
                              layout=W.Layout(max_width='100%', height='auto'))
        controls = list(self._widgets.values())
        half = (len(controls) + 1) // 2
        rows = W.HBox([W.VBox(controls[:half]), W.VBox(controls[half:]), reset])
        children = [rows, self._image]
        if self.title:
            children.insert(0, W.HTML(self.title))
        self._box = W.VBox(children)
        return self._box

    def _on_change(self, name: str, change: dict) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            self.update(**{name: self.controls[name].to_value(change['new'])})
        finally:
            self._syncing = False

    def _sync_widgets(self) -> None:
        self._syncing = True
        try:
            for name, w in self._widgets.items():
                target = self.controls[name].to_widget(self.values[name])
                if w.value != target:
                    w.value = target
        finally:
            self._syncing = False

    def __repr__(self) -> str:
        return (f'live panel ({", ".join(self.controls)}): move the sliders in Jupyter or Colab; '
                f'the static twin works without a kernel')

    def _repr_mimebundle_(self, **kwargs) -> dict:
        """The widget box's bundle with a stable ``text/plain`` (nbval compares it, skips the view)."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle['text/plain'] = repr(self)
        return bundle

    def close(self) -> None:
        """Close the widgets (front-end views disappear); the figure stays usable."""
        if self._box is not None:
            for w in [*self._widgets.values(), self._image, self._box]:
                w.close()
            self._box = self._image = self._widgets = None


# ---------------------------------------------------------------------------------------------
# Chapter 1: the servo panel

PANEL_KP_GRID = np.geomspace(1.0, 30000.0, 25)
"""kp values of the panel's sag / rise curve, N·m/rad."""
STABILITY_KP = np.geomspace(1.0, 30000.0, 19)
"""kp rows of the panel's stability map, N·m/rad."""
STABILITY_ARMATURE = np.linspace(0.0, 0.1, 11)
"""armature columns of the panel's stability map, kg·m²."""
STABILITY_STEPS = 300
"""Steps of each short run in the stability map (whatever the timestep)."""


def _params(kp, armature, timestep, integrator, dampratio) -> ServoParams:
    return ServoParams(kp=float(kp), armature=float(armature), timestep=float(timestep),
                       integrator=integrator, dampratio=float(dampratio))


@cached(maxsize=64)
def servo_step(kp: float, armature: float, timestep: float, integrator: str,
               dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0):
    """One step response (:func:`physai.servo.step_response` on one thread), cached by its arguments."""
    params = _params(kp, armature, timestep, integrator, dampratio)
    return step_responses([params], q0=q0, duration=duration, nthread=1)[0]


@cached(maxsize=16)
def servo_kp_curve(armature: float, timestep: float, integrator: str, dampratio: float = 1.0,
                   q0: float = -0.5, duration: float = 3.0) -> dict:
    """Sag and rise time over :data:`PANEL_KP_GRID`, one batched run (does not depend on kp).

    Returns:
      dict with ``kp`` (n,), ``sag_deg`` (n,), ``rise_ms`` (n,) (NaN where the run did not settle) and
      ``diverged`` (n,) bool: diverged, or never settled (still swinging at the end, on a bound).
    """
    params = [_params(kp, armature, timestep, integrator, dampratio) for kp in PANEL_KP_GRID]
    responses = step_responses(params, q0=q0, duration=duration)
    settled = np.array([r.settled for r in responses])
    return {'kp': PANEL_KP_GRID,
            'sag_deg': np.where(settled, [r.sag_deg for r in responses], np.nan),
            'rise_ms': np.where(settled, [r.rise_ms for r in responses], np.nan),
            'diverged': ~settled}


def _grows(response, q0: float) -> bool:
    """Diverged, or still swinging wider than it started at the end of a short run."""
    if response.diverged:
        return True
    tail = response.q[-len(response.q) // 6:]
    return bool(np.max(np.abs(tail)) > 1.5 * abs(q0))


@cached(maxsize=16)
def servo_stability(timestep: float, integrator: str, dampratio: float = 1.0,
                    q0: float = -0.5) -> dict:
    """Where MuJoCo diverges over (armature, kp), and the analytic bound (does not depend on kp, armature).

    Runs :data:`STABILITY_STEPS` steps for each cell of :data:`STABILITY_KP` × :data:`STABILITY_ARMATURE`
    in one batch; a cell counts as diverged if MuJoCo flags it or it ends swinging wider than 1.5 |q0|.

    Returns:
      dict with ``kp`` (nk,), ``armature`` (na,), ``diverged`` (nk, na) bool, ``h_omega_star``
      (the integrator's critical hω, :func:`critical_h_omega`) and the curves ``bound_armature``
      (m,) with ``bound_kp`` (m,) for growth = 1 and ``two_kp`` (m,) for hω = 2, N·m/rad.
    """
    params = [_params(kp, a, timestep, integrator, dampratio)
              for kp in STABILITY_KP for a in STABILITY_ARMATURE]
    responses = step_responses(params, q0=q0, duration=STABILITY_STEPS * timestep)
    diverged = np.array([_grows(r, q0) for r in responses]).reshape(len(STABILITY_KP), -1)
    star = critical_h_omega(integrator, dampratio)
    armature = np.linspace(0.0, 0.1, 101)
    inertia = LINK_INERTIA + armature
    return {'kp': STABILITY_KP, 'armature': STABILITY_ARMATURE, 'diverged': diverged,
            'h_omega_star': star, 'bound_armature': armature,
            'bound_kp': (star / timestep) ** 2 * inertia if math.isfinite(star)
            else np.full_like(armature, np.nan),
            'two_kp': (2.0 / timestep) ** 2 * inertia}


def _edges(centers: np.ndarray, log: bool) -> np.ndarray:
    x = np.log10(centers) if log else centers
    mid = (x[1:] + x[:-1]) / 2
    edges = np.concatenate([[x[0] - (mid[0] - x[0])], mid, [x[-1] + (x[-1] - mid[-1])]])
    return 10 ** edges if log else edges


def servo_panel(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
                duration: float = 3.0) -> Panel:
    """Chapter 1's live panel: the common four controls and three plots of the link's servo.

    (1) the step response from ``q0`` to 0 with sag and 10–90 % rise marked, a diverged run flagged
    in red; (2) sag and rise time against kp (log axes) for the current armature, timestep and
    integrator, the current kp marked; (3) stability over (armature, kp) for the current integrator
    and timestep: cells where MuJoCo diverges, the growth = 1 bound and hω = 2, the current point.

    Args:
      kp, armature, timestep, integrator: the controls' start and reset values (SI units).
      dampratio: ζ, kv = 2ζ sqrt(kp·I) recomputed for every armature.
      q0: start angle, rad.
      duration: simulated time of the step response, s.

    Returns:
      The :class:`Panel`; show it as the last expression of a cell.
    """
    fixed = {'dampratio': dampratio, 'q0': q0, 'duration': duration}

    def compute(values: dict) -> dict:
        values = {**values, **fixed}
        return {'response': servo_step(**values), 'curve': servo_kp_curve(**values),
                'stability': servo_stability(**values)}

    def setup(fig) -> dict:
        ax1, ax2, ax3 = fig.subplots(1, 3, gridspec_kw={'width_ratios': [1.15, 1, 1]})
        marks = plots.StepResponseMarks(ax1, duration=duration, animated=True,
                                        ylim=(math.degrees(q0) * 1.25, -math.degrees(q0) * 0.5))
        # (2) sag and rise against kp: sag on the left axis, rise time on a twin right axis
        ax2.set_xlim(PANEL_KP_GRID[0] / 1.3, PANEL_KP_GRID[-1] * 1.3)
        ax2.set_ylim(1e-3, 1e2)
        plots.log_axis(ax2, 'both')
        ax2r = ax2.twinx()
        ax2r.set_ylim(1, 1e4)
        plots.log_axis(ax2r, 'y')
        ax2r.grid(False)
        ax2r.spines['right'].set_visible(True)
        (sag_line,) = ax2.plot([], [], 'o-', ms=3, color=plots.COLORS['sag_curve'], label='sag',
                               animated=True)
        (rise_line,) = ax2r.plot([], [], 's-', ms=3, color=plots.COLORS['rise_curve'],
                                 label='rise time', animated=True)
        (bad_kp,) = ax2.plot([], [], 'x', ms=6, mew=2, color=plots.COLORS['diverged'],
                             label='never settles', transform=ax2.get_xaxis_transform(), animated=True)
        (kp_line,) = ax2.plot([kp, kp], [0, 1], color=plots.COLORS['current'], lw=1.2, ls='--',
                              transform=ax2.get_xaxis_transform(), animated=True)
        sag_point = plots.mark_point(ax2, kp, 1.0, label='current kp', animated=True)
        rise_point = plots.mark_point(ax2r, kp, 1.0, label=None, animated=True)
        plots.label(ax2, 'kp (N·m/rad)', 'sag (deg)', 'sag and rise time vs kp')
        ax2r.set_ylabel('rise time (ms)', color=plots.COLORS['rise_curve'])
        ax2.yaxis.label.set_color(plots.COLORS['sag_curve'])
        ax2.legend(handles=[sag_line, rise_line, bad_kp, sag_point], loc='upper right',
                   fontsize=7.5)
        # (3) stability map over (armature, kp); it changes only with timestep and integrator
        kp_edges = _edges(STABILITY_KP, log=True)
        arm_edges = _edges(STABILITY_ARMATURE, log=False)
        from matplotlib.colors import ListedColormap
        from matplotlib.patches import Patch
        mesh = ax3.pcolormesh(arm_edges, kp_edges,
                              np.zeros((len(STABILITY_KP), len(STABILITY_ARMATURE))),
                              cmap=ListedColormap(['#e8f1fa', '#f7c6c6']), vmin=0, vmax=1,
                              shading='flat')
        ax3.set_xlim(arm_edges[0], arm_edges[-1])
        ax3.set_ylim(kp_edges[0], kp_edges[-1])
        plots.log_axis(ax3, 'y')
        ax3.grid(False)
        (bound,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=2, label='growth = 1')
        (two,) = ax3.plot([], [], color=plots.COLORS['bound'], lw=1, ls='--', label='hω = 2')
        point = plots.mark_point(ax3, armature, kp, label='current', animated=True)
        ax3.legend(handles=[Patch(color='#f7c6c6', label='MuJoCo diverges'), bound, two, point],
                   loc='lower right', fontsize=7.5, framealpha=0.9)
        note = ax3.text(0.03, 0.04, '', transform=ax3.transAxes, ha='left', va='bottom', fontsize=8,
                        animated=True,
                        bbox=dict(facecolor='white', edgecolor='none', alpha=0.85, pad=1.5))
        plots.label(ax3, 'armature (kg·m²)', 'kp (N·m/rad)', 'stability')
        fig.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.9, wspace=0.5)
        return {'marks': marks, 'ax1': ax1, 'sag': sag_line, 'rise': rise_line, 'bad_kp': bad_kp,
                'kp_line': kp_line, 'sag_point': sag_point, 'rise_point': rise_point,
                'mesh': mesh, 'bound': bound, 'two': two, 'point': point, 'note': note,
                'stability': None, 'title': None}

    def draw(state: dict, results: dict, values: dict) -> None:
        response, curve, stab = results['response'], results['curve'], results['stability']
        state['marks'].update(response)
        title = f"step response, {values['integrator']}, h = {values['timestep'] * 1e3:.1f} ms"
        if title != state['title']:  # static artists change only when their content does
            state['ax1'].set_title(title)
            state['title'] = title
        if stab is not state['stability']:
            state['mesh'].set_array(stab['diverged'].astype(float).ravel())
            state['bound'].set_data(stab['bound_armature'], stab['bound_kp'])
            state['two'].set_data(stab['bound_armature'], stab['two_kp'])
            state['stability'] = stab
        state['sag'].set_data(curve['kp'], np.where(curve['sag_deg'] > 0, curve['sag_deg'], np.nan))
        state['rise'].set_data(curve['kp'], curve['rise_ms'])
        bad = curve['kp'][curve['diverged']]
        state['bad_kp'].set_data(bad, np.full(len(bad), 0.04))
        k = values['kp']
        state['kp_line'].set_xdata([k, k])
        settled = response.settled
        state['sag_point'].set_data([k], [response.sag_deg if settled and response.sag_deg > 0 else np.nan])
        state['rise_point'].set_data([k], [response.rise_ms if settled else np.nan])
        state['point'].set_data([values['armature']], [k])
        star = stab['h_omega_star']
        h_omega = values['timestep'] * math.sqrt(k / (LINK_INERTIA + values['armature']))
        bound_text = f'bound hω* = {star:.2f}' if math.isfinite(star) else 'no bound (stable)'
        state['note'].set_text(f'{bound_text}\ncurrent hω = {h_omega:.2f}')

    controls = common_controls(kp=kp, armature=armature, timestep=timestep, integrator=integrator)
    return Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(13.0, 3.9), dpi=80)


# ---------------------------------------------------------------------------------------------
# The static twin


_KEY = re.compile(r'^[a-z0-9][a-z0-9-]*$')


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwinSlider:
    """One control of a static twin: a position per precomputed value.

    Args (keyword or positional): name (keyword passed to the frame function), label (with unit),
    values (the precomputed values, in order), labels (text shown for each value; default
    ``format(value, '.4g')``), default (index of the start position), kind (``'slider'`` or
    ``'select'``, a dropdown, e.g. for integrators).
    """

    name: str
    label: str
    values: tuple
    labels: tuple[str, ...] | None = None
    default: int = 0
    kind: str = 'slider'

    def __init__(self, name: str, label: str, values: Sequence, labels: Sequence[str] | None = None,
                 *, default: int = 0, kind: str = 'slider'):
        values = tuple(values)
        if not values:
            raise ValueError(f'{name}: values must not be empty')
        labels = tuple(str(s) for s in labels) if labels is not None else tuple(
            v if isinstance(v, str) else format(v, '.4g') for v in values)
        if len(labels) != len(values):
            raise ValueError(f'{name}: labels must match values, got {len(labels)} labels for '
                             f'{len(values)} values')
        if not 0 <= default < len(values):
            raise ValueError(f'{name}: default must be an index in [0, {len(values) - 1}], '
                             f'got {default}')
        if kind not in ('slider', 'select'):
            raise ValueError(f"{name}: kind must be one of slider, select, got {kind!r}")
        if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*$', name):
            raise ValueError(f'{name!r}: name must be a Python identifier')
        for field, value in (('name', name), ('label', label), ('values', values),
                             ('labels', labels), ('default', default), ('kind', kind)):
            object.__setattr__(self, field, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwinAxes:
    """One plot of a static twin. Limits left None follow each frame's data."""

    title: str = ''
    xlabel: str = ''
    """With the unit, e.g. ``'time (s)'``."""
    ylabel: str = ''
    xlim: tuple[float, float] | None = None
    ylim: tuple[float, float] | None = None
    xlog: bool = False
    ylog: bool = False
    legend: str | None = 'ur'
    """Legend corner: ``'ur'``, ``'ul'``, ``'lr'``, ``'ll'``, or None for no legend."""


def twin_line(x, y, *, label: str | None = None, color: str = plots.COLORS['response'],
              width: float = 1.6, dash: str | None = None) -> dict:
    """A line of a twin frame. x, y: (n,); non-finite values break the line. dash: SVG dasharray."""
    item = {'k': 'l', 'x': np.asarray(x, dtype=float), 'y': np.asarray(y, dtype=float),
            'c': color, 'w': width}
    if dash:
        item['d'] = dash
    if label:
        item['n'] = label
    return item


def twin_markers(x, y, *, label: str | None = None, color: str = plots.COLORS['current'],
                 size: float = 4.0, symbol: str = 'o', filled: bool = True) -> dict:
    """Markers of a twin frame at (x, y), (n,) each. symbol: ``'o'`` circle, ``'x'``, ``'s'`` square."""
    if symbol not in ('o', 'x', 's'):
        raise ValueError(f"symbol must be one of o, x, s, got {symbol!r}")
    item = {'k': 'm', 'x': np.atleast_1d(np.asarray(x, dtype=float)),
            'y': np.atleast_1d(np.asarray(y, dtype=float)), 'c': color, 's': size, 'p': symbol,
            'f': 1 if filled else 0}
    if label:
        item['n'] = label
    return item


def twin_text(text: str, *, x: float = 0.5, y: float = 0.5, color: str = '#222222',
              size: float = 12.0, bold: bool = False, anchor: str = 'middle') -> dict:
    """Text at (x, y) in axes fractions (0, 0 bottom left). anchor: ``start``, ``middle``, ``end``."""
    if anchor not in ('start', 'middle', 'end'):
        raise ValueError(f"anchor must be one of start, middle, end, got {anchor!r}")
    return {'k': 't', 's': str(text), 'x': float(x), 'y': float(y), 'c': color, 'z': size,
            'b': 1 if bold else 0, 'a': anchor}


def _compact_numbers(values: np.ndarray, digits: int) -> str:
    """A JSON array of ``values``, each rounded to ``digits`` significant digits.

    No value is resolved finer than ``digits + 3`` decades below the array's largest |value|, so a trajectory settling towards 0 does not spend characters on noise, while a quantity
    drawn on a log axis (kp 1 … 30000, sag 10 … 0.001) keeps its relative precision.
    """
    values = np.asarray(values, dtype=float).ravel()
    finite = np.isfinite(values)
    if not finite.any():
        return '[' + ','.join('null' for _ in values) + ']'
    biggest = float(np.max(np.abs(values[finite])))
    top = math.floor(math.log10(biggest)) if biggest > 0 else 0
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append('null')
            continue
        own = math.floor(math.log10(abs(v))) if v != 0 else top
        decimals = min(digits - 1 - own, digits + 3 - top)
        if decimals > 0:
            s = f'{v:.{decimals}f}'.rstrip('0').rstrip('.')
        else:
            s = str(int(round(v, decimals)))
        out.append('0' if s in ('-0', '', '-') else s)
    return '[' + ','.join(out) + ']'


def _scalar(v: float, digits: int) -> str:
    return _compact_numbers(np.array([v]), digits)[1:-1]


def _json_text(value) -> str:
    """Deterministic JSON safe inside a <script> element."""
    text = json.dumps(value, sort_keys=True, separators=(',', ':'), ensure_ascii=True)
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def twin_html(key: str, sliders: Sequence[TwinSlider], axes: Sequence[TwinAxes],
              frame: Callable[..., Sequence[Sequence[dict]]], *, title: str | None = None,
              caption: str | None = None, digits: int = 4, width: int = 400,
              height: int = 280) -> str:
    """The HTML text of a static twin (see :func:`static_twin`)."""
    if not _KEY.match(key):
        raise ValueError(f'key must be lowercase letters, digits and hyphens, got {key!r}')
    if not sliders:
        raise ValueError('sliders must not be empty')
    if not axes:
        raise ValueError('axes must not be empty')
    root = f'physai-twin-{key}'
    arrays: dict[str, int] = {}
    items: dict[str, int] = {}

    def array_id(values: np.ndarray) -> int:
        text = _compact_numbers(values, digits)
        return arrays.setdefault(text, len(arrays))

    def item_id(item: dict) -> int:
        entry = {}
        for name, value in item.items():
            if name in ('x', 'y') and item['k'] != 't':
                entry[name] = array_id(value)
            elif isinstance(value, float):
                entry[name] = float(_scalar(value, digits))
            else:
                entry[name] = value
        text = _json_text(entry)
        return items.setdefault(text, len(items))

    frames = []
    for combination in np.ndindex(*[len(s.values) for s in sliders]):
        kwargs = {s.name: s.values[i] for s, i in zip(sliders, combination)}
        content = frame(**kwargs)
        if len(content) != len(axes):
            raise ValueError(f'frame must return one item list per axes ({len(axes)}), '
                             f'got {len(content)} for {kwargs}')
        frames.append([[item_id(it) for it in per_axes] for per_axes in content])

    def limits(lim):
        return None if lim is None else [float(_scalar(v, 6)) for v in lim]

    spec = {
        'width': width, 'height': height,
        'sliders': [{'name': s.name, 'label': s.label, 'labels': list(s.labels),
                     'init': s.default, 'kind': s.kind} for s in sliders],
        'axes': [{'title': a.title, 'xlabel': a.xlabel, 'ylabel': a.ylabel,
                  'xlim': limits(a.xlim), 'ylim': limits(a.ylim), 'xlog': a.xlog,
                  'ylog': a.ylog, 'legend': a.legend} for a in axes],
    }
    data = ('{"spec":' + _json_text(spec)
            + ',"arrays":[' + ','.join(arrays) + ']'
            + ',"items":[' + ','.join(items) + ']'
            + ',"frames":' + _json_text(frames) + '}')
    controls = []
    for s in sliders:
        cid = f'{root}-{s.name}'
        if s.kind == 'select':
            options = ''.join(f'<option value="{i}"{" selected" if i == s.default else ""}>'
                              f'{html.escape(lab)}</option>' for i, lab in enumerate(s.labels))
            widget = f'<select id="{cid}" style="font-size:13px">{options}</select>'
        else:
            widget = (f'<input type="range" id="{cid}" min="0" max="{len(s.values) - 1}" step="1" '
                      f'value="{s.default}" style="width:180px;vertical-align:middle">'
                      f' <span id="{cid}-value" style="display:inline-block;min-width:64px;'
                      f'font-family:monospace">{html.escape(s.labels[s.default])}</span>')
        controls.append(f'<label style="margin-right:18px;white-space:nowrap">'
                        f'{html.escape(s.label)} {widget}</label>')
    svgs = ''.join(f'<svg id="{root}-plot-{i}" xmlns="http://www.w3.org/2000/svg" '
                   f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
                   f'style="max-width:100%;height:auto;background:#ffffff"></svg>'
                   for i in range(len(axes)))
    heading = (f'<div style="font-weight:bold;margin-bottom:4px">{html.escape(title)}</div>'
               if title else '')
    note = (f'<div style="font-size:12px;color:#444444;margin-top:4px">{html.escape(caption)}</div>'
            if caption else '')
    return (
        f'<div id="{root}" class="physai-twin" style="background:#ffffff;color:#222222;'
        f'border:1px solid #cccccc;border-radius:4px;padding:8px;font-family:sans-serif;'
        f'font-size:13px;max-width:100%;overflow-x:auto">'
        f'{heading}<div id="{root}-controls" style="margin-bottom:6px">{"".join(controls)}</div>'
        f'<div id="{root}-plots" style="display:flex;flex-wrap:wrap;gap:4px">{svgs}</div>{note}'
        f'<script type="application/json" id="{root}-data">{data}</script>'
        f'<script>(function(){{var ROOT="{root}";{_TWIN_JS}}})();</script></div>')


def static_twin(key: str, sliders: Sequence[TwinSlider], axes: Sequence[TwinAxes],
                frame: Callable[..., Sequence[Sequence[dict]]], *, title: str | None = None,
                caption: str | None = None, digits: int = 4, width: int = 400,
                height: int = 280):
    """A kernel-free twin of a live panel: precomputed frames, HTML sliders, inline SVG plots.

    Args:
      key: lowercase letters, digits, hyphens; unique on the page. Ids: ``physai-twin-<key>``
        (root), ``physai-twin-<key>-<slider name>`` (inputs), ``physai-twin-<key>-plot-<i>`` (SVGs),
        ``physai-twin-<key>-data`` (the JSON).
      sliders: the controls; every combination of their values is one frame.
      axes: one :class:`TwinAxes` per plot, side by side.
      frame: ``frame(**{slider.name: value}) -> [items of plot 0, items of plot 1, ...]`` built
        with :func:`twin_line`, :func:`twin_markers`, :func:`twin_text`. Items with a label go into
        the legend. Equal arrays and items are stored once, so shared curves cost nothing extra.
      title: heading above the controls.
      caption: a line of text under the plots.
      digits: significant digits kept in each array (relative to its largest value).
      width, height: size of each plot, px.

    Returns:
      ``IPython.display.HTML``; its ``.data`` is the text (byte-stable for equal inputs).
    """
    from IPython.display import HTML
    return HTML(twin_html(key, sliders, axes, frame, title=title, caption=caption,
                          digits=digits, width=width, height=height))


_TWIN_JS = r"""
var root=document.getElementById(ROOT);if(!root||root.getAttribute('data-ready'))return;
root.setAttribute('data-ready','1');
var D=JSON.parse(document.getElementById(ROOT+'-data').textContent),S=D.spec,NS='http://www.w3.org/2000/svg';
var W=S.width,H=S.height,M={l:62,r:14,t:24,b:42};
function el(tag,a,p,txt){var e=document.createElementNS(NS,tag);for(var k in a)e.setAttribute(k,a[k]);
if(txt!==undefined)e.textContent=txt;if(p)p.appendChild(e);return e;}
function fin(v){return v!==null&&isFinite(v);}
function lg(v){return Math.log(v)/Math.LN10;}
function num(v){var a=Math.abs(v);if(a===0)return '0';if(a>=1e5||a<1e-3)return v.toExponential(0).replace('+','');
return String(parseFloat(v.toPrecision(4)));}
function lims(ax,items,c,log){var L=ax[c+'lim'];if(L)return L;var lo=Infinity,hi=-Infinity;
items.forEach(function(it){if(it.k==='t')return;D.arrays[it[c]].forEach(function(v){
if(fin(v)&&(!log||v>0)){if(v<lo)lo=v;if(v>hi)hi=v;}});});
if(!(lo<=hi))return log?[1,10]:[0,1];
if(log){lo=Math.pow(10,Math.floor(lg(lo)));hi=Math.pow(10,Math.ceil(lg(hi)));if(lo===hi)hi*=10;return[lo,hi];}
if(lo===hi){lo-=1;hi+=1;}var p=0.05*(hi-lo);return[lo-p,hi+p];}
function ticks(lo,hi,log){var t=[],i;if(log){var a=Math.ceil(lg(lo)-1e-9),b=Math.floor(lg(hi)+1e-9),
s=Math.max(1,Math.ceil((b-a+1)/7));for(i=a;i<=b;i+=s)t.push(Math.pow(10,i));return t;}
var raw=(hi-lo)/6,m=Math.pow(10,Math.floor(lg(raw))),st=[1,2,2.5,5,10].map(function(f){return f*m;})
.filter(function(x){return x>=raw;})[0];for(i=Math.ceil(lo/st-1e-9);i*st<=hi+1e-9*st;i++)t.push(i*st);return t;}
function sc(lim,log,a,b){var lo=log?lg(lim[0]):lim[0],hi=log?lg(lim[1]):lim[1];
return function(v){if(!fin(v)||(log&&v<=0))return NaN;v=log?lg(v):v;return a+(v-lo)/(hi-lo)*(b-a);};}
var svgs=S.axes.map(function(_,i){return document.getElementById(ROOT+'-plot-'+i);});
function plot(i,items){var ax=S.axes[i],svg=svgs[i];while(svg.firstChild)svg.removeChild(svg.firstChild);
var x0=M.l,x1=W-M.r,y0=H-M.b,y1=M.t,xl=lims(ax,items,'x',ax.xlog),yl=lims(ax,items,'y',ax.ylog),
X=sc(xl,ax.xlog,x0,x1),Y=sc(yl,ax.ylog,y0,y1);
el('rect',{x:0,y:0,width:W,height:H,fill:'#ffffff'},svg);
var cid=ROOT+'-clip-'+i,defs=el('defs',{},svg),cp=el('clipPath',{id:cid},defs);
el('rect',{x:x0,y:y1,width:x1-x0,height:y0-y1},cp);
ticks(xl[0],xl[1],ax.xlog).forEach(function(t){var x=X(t);el('line',{x1:x,x2:x,y1:y0,y2:y1,stroke:'#e3e3e3'},svg);
el('line',{x1:x,x2:x,y1:y0,y2:y0+4,stroke:'#333'},svg);
el('text',{x:x,y:y0+15,'text-anchor':'middle','font-size':10,fill:'#333'},svg,num(t));});
ticks(yl[0],yl[1],ax.ylog).forEach(function(t){var y=Y(t);el('line',{x1:x0,x2:x1,y1:y,y2:y,stroke:'#e3e3e3'},svg);
el('line',{x1:x0-4,x2:x0,y1:y,y2:y,stroke:'#333'},svg);
el('text',{x:x0-6,y:y+3.5,'text-anchor':'end','font-size':10,fill:'#333'},svg,num(t));});
el('rect',{x:x0,y:y1,width:x1-x0,height:y0-y1,fill:'none',stroke:'#333'},svg);
el('text',{x:(x0+x1)/2,y:H-8,'text-anchor':'middle','font-size':12,fill:'#222'},svg,ax.xlabel);
el('text',{x:14,y:(y0+y1)/2,'text-anchor':'middle','font-size':12,fill:'#222',
transform:'rotate(-90 14 '+(y0+y1)/2+')'},svg,ax.ylabel);
if(ax.title)el('text',{x:(x0+x1)/2,y:16,'text-anchor':'middle','font-size':13,fill:'#222'},svg,ax.title);
var g=el('g',{'clip-path':'url(#'+cid+')'},svg),leg=[];
items.forEach(function(it){if(it.k==='l'){var xs=D.arrays[it.x],ys=D.arrays[it.y],d='',pen=false;
for(var j=0;j<xs.length;j++){var px=X(xs[j]),py=Y(ys[j]);
if(isFinite(px)&&isFinite(py)){py=Math.max(-1e4,Math.min(1e4,py));d+=(pen?'L':'M')+px.toFixed(1)+' '+py.toFixed(1);pen=true;}
else pen=false;}
var a={d:d||'M0 0',fill:'none',stroke:it.c,'stroke-width':it.w,'stroke-linejoin':'round'};if(it.d)a['stroke-dasharray']=it.d;
el('path',a,g);}
else if(it.k==='m'){var mx=D.arrays[it.x],my=D.arrays[it.y];for(var j=0;j<mx.length;j++){
var px=X(mx[j]),py=Y(my[j]);if(!isFinite(px)||!isFinite(py))continue;mark(g,it,px,py);}}
if(it.n&&it.k!=='t')leg.push(it);});
items.forEach(function(it){if(it.k!=='t')return;el('text',{x:x0+it.x*(x1-x0),y:y0-it.y*(y0-y1),
'text-anchor':it.a,'font-size':it.z,'font-weight':it.b?'bold':'normal',fill:it.c,'dominant-baseline':'middle'},svg,it.s);});
if(ax.legend&&leg.length){var lw=0;leg.forEach(function(it){lw=Math.max(lw,it.n.length*6+30);});
var lh=leg.length*14+6,lx=ax.legend[1]==='r'?x1-lw-4:x0+4,ly=ax.legend[0]==='u'?y1+4:y0-lh-4,
lgG=el('g',{},svg);el('rect',{x:lx,y:ly,width:lw,height:lh,fill:'#ffffff','fill-opacity':0.9,stroke:'#cccccc'},lgG);
leg.forEach(function(it,j){var yy=ly+12+j*14;if(it.k==='l'){var a={x1:lx+4,x2:lx+22,y1:yy-3,y2:yy-3,stroke:it.c,'stroke-width':it.w};
if(it.d)a['stroke-dasharray']=it.d;el('line',a,lgG);}else mark(lgG,it,lx+13,yy-3);
el('text',{x:lx+26,y:yy,'font-size':10,fill:'#222'},lgG,it.n);});}}
function mark(p,it,x,y){var s=it.s;if(it.p==='x'){el('path',{d:'M'+(x-s)+' '+(y-s)+'L'+(x+s)+' '+(y+s)+'M'+(x-s)+' '+(y+s)+'L'+(x+s)+' '+(y-s),
stroke:it.c,'stroke-width':1.8},p);}else if(it.p==='s'){el('rect',{x:x-s,y:y-s,width:2*s,height:2*s,fill:it.f?it.c:'none',stroke:it.c,'stroke-width':1.5},p);}
else el('circle',{cx:x,cy:y,r:s,fill:it.f?it.c:'none',stroke:it.c,'stroke-width':it.f?1:2},p);}
var inputs=S.sliders.map(function(s){return document.getElementById(ROOT+'-'+s.name);});
function draw(){var idx=0;S.sliders.forEach(function(s,k){var v=parseInt(inputs[k].value,10);idx=idx*s.labels.length+v;
var out=document.getElementById(ROOT+'-'+s.name+'-value');if(out)out.textContent=s.labels[v];});
var f=D.frames[idx];root.setAttribute('data-frame',idx);
f.forEach(function(ids,i){plot(i,ids.map(function(j){return D.items[j];}));});}
inputs.forEach(function(e){e.addEventListener('input',draw);e.addEventListener('change',draw);});
draw();
"""


# ---------------------------------------------------------------------------------------------
# Chapter 1: the servo twin

TWIN_KP = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0, 30000.0)
"""kp positions of chapter 1's twin, N·m/rad."""
TWIN_ARMATURE = (0.0, 0.002, 0.005, 0.01, 0.028, 0.1)
"""armature positions of chapter 1's twin, kg·m²."""
TWIN_INTEGRATORS = ('Euler', 'implicitfast', 'discrete')
"""Integrators of chapter 1's twin."""


def servo_twin(key: str = 'servo', *, kps: Sequence[float] = TWIN_KP,
               armatures: Sequence[float] = TWIN_ARMATURE,
               integrators: Sequence[str] = TWIN_INTEGRATORS, timestep: float = 0.005,
               dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0,
               kp_default: float = 100.0, armature_default: float = 0.028,
               integrator_default: str = 'implicitfast'):
    """Chapter 1's static twin: kp and armature sliders and an integrator choice over a precomputed grid.

    All len(kps) × len(armatures) × len(integrators) step responses run in one batch. Three plots:
    the step response with its sag / rise readout (or a red "diverged"); sag and rise time against kp
    for the chosen armature and integrator, the current kp marked; and which grid cells diverge over
    (armature, kp) with the growth = 1 bound (:func:`critical_h_omega`) and hω = 2, current point marked.

    Returns:
      ``IPython.display.HTML`` (see :func:`static_twin`).
    """
    kps, armatures, integrators = tuple(kps), tuple(armatures), tuple(integrators)
    grid = [(i, a, k) for i in integrators for a in armatures for k in kps]
    params = [_params(k, a, timestep, i, dampratio) for i, a, k in grid]
    responses = dict(zip(grid, step_responses(params, q0=q0, duration=duration)))
    stride = max(1, round(0.01 / timestep))  # one sample per 10 ms keeps the page small
    kp_arr = np.array(kps)
    arm_line = np.linspace(min(armatures), max(armatures), 41)
    colors = plots.COLORS
    q0_deg = math.degrees(q0)

    def frame(kp, armature, integrator):
        r = responses[(integrator, armature, kp)]
        t, q = r.t[::stride], np.degrees(r.q[::stride])
        step = [twin_line([0, duration], [0, 0], color=colors['command'], width=1, dash='4 3',
                          label='command u = 0'),
                twin_line(t, np.clip(q, 1.25 * q0_deg - 5, -0.5 * q0_deg + 5), label='q(t)')]
        if r.diverged:
            step.append(twin_text('diverged', x=0.5, y=0.55, color=colors['diverged'], size=22,
                                  bold=True))
            step.append(twin_text(f'after {r.t[-1]:.3f} s', x=0.5, y=0.4,
                                  color=colors['diverged'], size=12))
        else:
            t10, t90, q10, q90, q_final = plots.rise_marks(r)
            qf = math.degrees(q_final)
            step.append(twin_line([0, duration], [qf, qf], color=colors['sag'], width=1, dash='2 2',
                                  label='settled'))
            if math.isfinite(t10) and math.isfinite(t90):
                step.append(twin_line([t10, t90], [math.degrees(q90)] * 2, color=colors['rise'],
                                      width=3, label='10-90 % rise'))
            step.append(twin_text(plots.readout(r), x=0.97, y=0.08, anchor='end', size=12))
        row = [responses[(integrator, armature, k)] for k in kps]
        bad = np.array([not x.settled for x in row])  # diverged, or swinging for ever on a bound
        sag = np.where(bad, np.nan, [x.sag_deg for x in row])
        rise = np.where(bad, np.nan, [x.rise_ms for x in row])
        curve = [twin_line(kp_arr, np.where(sag > 0, sag, np.nan), color=colors['sag_curve'],
                           label='sag (deg)'),
                 twin_markers(kp_arr, np.where(sag > 0, sag, np.nan), color=colors['sag_curve'],
                              size=2.5),
                 twin_line(kp_arr, rise, color=colors['rise_curve'], label='rise (ms)'),
                 twin_markers(kp_arr, rise, color=colors['rise_curve'], size=2.5, symbol='s')]
        if bad.any():
            curve.append(twin_markers(kp_arr[bad], np.full(bad.sum(), 2e-3), symbol='x', size=4,
                                      color=colors['diverged'], label='never settles'))
        here = [r.sag_deg, r.rise_ms] if r.settled else [np.nan, np.nan]
        curve.append(twin_markers([kp, kp], [v if v > 0 else np.nan for v in here], size=6,
                                  filled=False, color=colors['current'], label='current kp'))
        cells = [(a, k, _grows(responses[(integrator, a, k)], q0)) for a in armatures for k in kps]
        stable = [(a, k) for a, k, d in cells if not d]
        diverged = [(a, k) for a, k, d in cells if d]
        star = critical_h_omega(integrator, dampratio)
        inertia = LINK_INERTIA + arm_line
        stab = []
        if stable:
            stab.append(twin_markers(*zip(*stable), color='#7aa6d6', size=3))
        if diverged:
            stab.append(twin_markers(*zip(*diverged), color=colors['diverged'], size=4, symbol='x',
                                     label='unstable'))
        if math.isfinite(star):
            stab.append(twin_line(arm_line, (star / timestep) ** 2 * inertia, width=2,
                                  color=colors['bound'], label=f'growth = 1 (hω = {star:.2f})'))
        else:
            stab.append(twin_text('no bound: stable for any hω', x=0.03, y=0.94, anchor='start',
                                  size=11))
        stab.append(twin_line(arm_line, (2.0 / timestep) ** 2 * inertia, width=1, dash='5 3',
                              color=colors['bound'], label='hω = 2'))
        stab.append(twin_markers([armature], [kp], size=7, filled=False, color=colors['current']))
        return [step, curve, stab]

    sliders = [
        TwinSlider('kp', 'kp (N·m/rad)', kps, [format(k, 'g') for k in kps],
                   default=_nearest(kps, kp_default)),
        TwinSlider('armature', 'armature (kg·m²)', armatures, [format(a, 'g') for a in armatures],
                   default=_nearest(armatures, armature_default)),
        TwinSlider('integrator', 'integrator', integrators, kind='select',
                   default=integrators.index(integrator_default)
                   if integrator_default in integrators else 0),
    ]
    axes = [
        TwinAxes(title='step response', xlabel='time (s)', ylabel='joint angle q (deg)',
                 xlim=(0, duration), ylim=(1.25 * q0_deg, -0.5 * q0_deg), legend='ur'),
        TwinAxes(title='sag and rise time vs kp', xlabel='kp (N·m/rad)',
                 ylabel='sag (deg), rise (ms)', xlog=True, ylog=True,
                 xlim=(min(kps) / 1.5, max(kps) * 1.5), ylim=(1e-3, 1e4), legend='ur'),
        TwinAxes(title=f'stability, h = {timestep * 1e3:g} ms', xlabel='armature (kg·m²)',
                 ylabel='kp (N·m/rad)', ylog=True,
                 xlim=(min(armatures) - 0.005, max(armatures) + 0.005),
                 ylim=(min(kps) / 100, max(kps) * 1.5), legend='lr'),
    ]
    return static_twin(key, sliders, axes, frame, width=380, height=280,
                       caption=f'Precomputed with MuJoCo: dampratio {dampratio:g}, timestep '
                               f'{timestep * 1e3:g} ms, start at {q0_deg:.1f}° with command 0°. '
                               f'Stability: blue dots settle, red crosses diverge or keep swinging '
                               f'wider than they started, red circle the current setting.')


def _nearest(values: Sequence[float], target: float) -> int:
    return int(np.argmin([abs(math.log(v + 1e-9) - math.log(target + 1e-9)) for v in values]))
