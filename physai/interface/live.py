"""Live slider panels (Jupyter, Colab): the framework every chapter's panel is built from.

Every chapter's panel is built from the same four pieces, so all panels look alike, reset alike and
answer a slider within the book's 100 ms budget:

1. **Controls**: :class:`LogSlider`, :class:`Slider`, :class:`Choice`. :func:`common_controls` gives the
   book's common four: kp (log, 1 … 30000 N·m/rad), armature (0 … 0.1 kg·m²), timestep (0.5 … 20 ms,
   passed on in seconds) and the integrator (one of :data:`physai.engine.link.INTEGRATORS`).
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
``draw`` flags (see :class:`physai.interface.plots.StepResponseMarks`).

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
import io
import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from physai.interface import plots
from physai.laws.checks import INTEGRATORS


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
      integrator: one of :data:`physai.engine.link.INTEGRATORS`.

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
