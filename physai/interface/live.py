"""Live slider panels in the kernel (Jupyter, Colab): the renderer every chapter's kernel panel is built with.

A chapter's panel is described once (:class:`physai.interface.panel.PanelSpec`: controls, plots, words); this
module renders that description with ipywidgets and matplotlib, as :mod:`physai.interface.web` renders it on the
published page. A kernel panel is four pieces, so all panels look alike, reset alike and answer a slider within
the book's 100 ms budget:

1. **Controls**: the description's :class:`~physai.interface.panel.Slider`, :class:`~physai.interface.panel.LogSlider`
   and :class:`~physai.interface.panel.Choice` (re-exported here with :func:`~physai.interface.panel.common_controls`,
   the book's common four); :func:`make_widget` makes each an ipywidgets control.
2. **compute(values) -> results**: the physics. Split it into sub-computations wrapped in
   :func:`physai.experiments.registry.cached`, each taking only the parameters it depends on, so a kp move never
   reruns the work that depends on armature, timestep and integrator only.
   A part too slow for the budget (a map over a grid, a curve of 25 runs) is a :class:`Deferred`: compute
   reads it with ``part.get(values)``, None until it is ready, and the panel computes it on a worker thread
   after answering the slider, then redraws (:meth:`Panel.wait` blocks until done).
3. **setup(fig) -> state**: creates the axes and artists once, on one persistent figure (each axes' labels, limits
   and legend from the description's :class:`~physai.interface.panel.Plot`: :func:`physai.interface.plots.apply_plot`).
   Create the artists that move on any slider change with ``animated=True`` (or ``.set_animated(True)``), titles and
   maps included, and keep every axis fixed. A legend or the spines that animated artists would cover stay on
   top with :func:`on_top`.
4. **draw(state, results, values)**: moves those artists in place (``set_data``, ``set_text``, ...).
   Touch a non-animated artist only when its content really changes (compare with the last result). An axis
   that must change goes in steps: ``draw`` returns the step as a *view key*, the panel keeps each view's
   background, and :meth:`Panel.warm` draws them all when the panel is made.

:class:`Panel` wires them together. A slider change calls :meth:`Panel.update`, the one hot path: merge
the new value, ``compute``, ``draw``, render the figure to PNG bytes and hand them to an
``ipywidgets.Image``. Rendering blits: the axes, ticks, labels and legends are drawn once into a
cached background, and only the animated artists are drawn over it. If ``draw`` changed any
non-animated artist (matplotlib then marks the figure stale), the whole figure is redrawn and the
background renewed (or the background of a view seen before restored), so the picture is always right and
usually fast; :attr:`Panel.full_redraws` counts the whole redraws. Nothing is re-displayed and
nothing is printed, so a panel cell has exactly one output (the widget box) even without a widget
front end (nbval); its ``text/plain`` is a fixed sentence naming the controls, so nbval can compare
it (nbval skips the widget view itself, whose model id is random). An exception in compute or draw
is shown in red on the figure and never reaches the slider; a diverged run is a result your
``draw`` flags (see :class:`physai.interface.plots.StepResponseMarks`).

A minimal panel with one extra slider, and a slow part drawn when it is ready::

    import functools
    from physai.engine import link
    from physai.experiments.registry import cached
    from physai.experiments.servo_panel import servo_stability
    from physai.interface import live, plots

    @cached                         # cache key: (kp, armature, timestep, integrator, dampratio)
    def response(kp, armature, timestep, integrator, dampratio):
        return link.step_response(kp, armature=armature, timestep=timestep,
                                  integrator=integrator, dampratio=dampratio)

    stability = live.Deferred(servo_stability)      # 209 runs: off the hot path

    def compute(values):            # values: every control's current value, SI units
        return {'response': response(**values),     # extra keys are ignored by cached functions
                'stability': stability.get(values)}  # None until the worker has computed it

    def setup(fig):
        ax = fig.add_subplot(1, 1, 1)
        return {'marks': plots.StepResponseMarks(ax, animated=True)}   # moved on every change

    def draw(state, results, values):
        state['marks'].update(results['response'])
        ...                         # draw results['stability'], or say it is on its way

    controls = live.common_controls() + [live.Slider('dampratio', 'dampratio', 0.1, 2.0, 1.0)]
    panel = live.Panel(controls, compute=compute, setup=setup, draw=draw, figsize=(6, 3.5),
                       deferred=[stability])
    panel                           # last line of a cell: shows sliders, reset button and figure
    panel.update(kp=300.0)          # the same path a slider takes; returns the PNG bytes
    panel.wait()                    # the PNG once the deferred parts are drawn too

Chapter 1's panel is :func:`physai.interface.position_actuators_panels.servo_panel`; its page panel (the
precomputed first view and MuJoCo in the reader's browser) is
:func:`physai.interface.position_actuators_panels.servo_twin` with :func:`physai.interface.web.servo_live`.
"""

from __future__ import annotations

import functools
import inspect
import math
import struct
import threading
import time
import warnings
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from physai.interface import plots
from physai.interface.panel import Choice, Control, LogSlider, Slider, common_controls  # noqa: F401 (re-exported)


# ---------------------------------------------------------------------------------------------
# Controls: described in physai.interface.panel, made into ipywidgets here


def make_widget(control: Control):
    """The ipywidgets control of a :mod:`physai.interface.panel` control, at its default."""
    import ipywidgets as W
    common = dict(description=_description(control.label, getattr(control, 'unit', '')),
                  style={'description_width': '150px'}, layout=W.Layout(width='380px'))
    if isinstance(control, Choice):
        return W.Dropdown(options=list(zip(control.labels, control.options)), value=control.default, **common)
    if isinstance(control, LogSlider):
        return W.FloatLogSlider(value=control.default, base=10, min=math.log10(control.min),
                                max=math.log10(control.max), step=control.increment, readout_format=control.format,
                                continuous_update=control.continuous_update, **common)
    return W.FloatSlider(value=control.default, min=control.min, max=control.max, step=control.increment,
                         readout_format=control.format, continuous_update=control.continuous_update, **common)


def to_value(control: Control, widget_value):
    """A widget's value as the physics receives it (SI units, clipped)."""
    if isinstance(control, Choice):
        return widget_value
    return control.clamp(widget_value * control.scale)


def to_widget(control: Control, value):
    """A value (SI units) as the control's widget shows it."""
    return value if isinstance(control, Choice) else value / control.scale


def _description(label: str, unit: str) -> str:
    return f'{label} ({unit})' if unit else label


# ---------------------------------------------------------------------------------------------
# The live panel


def _png_chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack('>I', len(data)) + tag + data + struct.pack('>I', zlib.crc32(tag + data))


def _encode_png(fig, compress_level: int = 1, patches: Sequence[tuple[tuple[slice, slice], np.ndarray]] = ()
                ) -> bytes:
    """The canvas as PNG bytes (8-bit RGB), with ``patches`` ((rows, columns), pixels) pasted over it.

    Written directly: every row unfiltered, then zlib at ``compress_level``. A figure's large flat areas compress
    as well as with PNG's per-row filters, and it takes a sixth of the time of Pillow's encoder, which tries them.
    """
    rgba = np.asarray(fig.canvas.buffer_rgba())
    height, width = rgba.shape[:2]
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type None
    pixels = rows[:, 1:].reshape(height, width, 3)
    pixels[...] = rgba[..., :3]
    for where, patch in patches:
        pixels[where] = patch
    header = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)  # 8 bits, truecolor, no interlace
    return (b'\x89PNG\r\n\x1a\n' + _png_chunk(b'IHDR', header)
            + _png_chunk(b'IDAT', zlib.compress(rows.tobytes(), compress_level)) + _png_chunk(b'IEND', b''))


def on_top(*artists) -> None:
    """Keep these non-animated artists (a legend, the spines) on top of the animated ones a panel draws over
    them: the panel pastes their pixels from the last full redraw over every blitted picture. Give a legend an
    opaque, square frame (``framealpha=1, fancybox=False``), so its pixels do not depend on what lies under it."""
    for artist in artists:
        artist._physai_on_top = True


def sprite(*texts) -> None:
    """Let a panel paint these animated texts from a cache: each distinct string is rendered once (text is the
    slowest thing a panel draws, glyph by glyph) and its pixels pasted afterwards. Only for a text over the
    unchanging background that no other animated artist crosses, such as a title that names the current setting."""
    for text in texts:
        text._physai_sprite = True


def _pixel_region(box, height: int, width: int, margin: int = 2) -> tuple[slice, slice] | None:
    """(rows, columns) of the canvas covering a display-space box (y up), with a margin; None if off the canvas."""
    x0, x1 = max(0, math.floor(box.x0) - margin), min(width, math.ceil(box.x1) + margin)
    y0, y1 = max(0, height - math.ceil(box.y1) - margin), min(height, height - math.floor(box.y0) + margin)
    return (slice(y0, y1), slice(x0, x1)) if x1 > x0 and y1 > y0 else None


def _on_top_patches(fig) -> list[tuple[tuple[slice, slice], np.ndarray]]:
    """After a full redraw: the pixels of every :func:`on_top` artist, by (rows, columns) of the canvas."""
    renderer = fig.canvas.get_renderer()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3]
    height, width = pixels.shape[:2]
    artists = [a for ax in fig.axes for a in ax.get_children()] + list(fig.legends) + list(fig.texts)
    patches = []
    for artist in artists:
        if not getattr(artist, '_physai_on_top', False) or not artist.get_visible():
            continue
        where = _pixel_region(artist.get_window_extent(renderer), height, width, margin=1)
        if where is not None:
            patches.append((where, pixels[where].copy()))
    return patches


def _subplot_params(fig) -> tuple[float, ...]:
    p = fig.subplotpars
    return (p.left, p.right, p.bottom, p.top, p.wspace, p.hspace)


class Deferred:
    """A slow part of a panel's results, computed off the hot path: the panel answers a slider with what is
    ready, then fills this part in (coarse first, then fine).

    ``Deferred(func)`` wraps ``func``, called with the panel's values it names (extra keys are ignored, as with
    :func:`physai.experiments.registry.cached`; bind fixed arguments with ``functools.partial``). In ``compute``,
    :meth:`get` returns the stored result for the current values, or None when it is not computed yet: ``draw``
    then shows that part as pending. After drawing that first picture the panel computes the missing parts on a
    worker thread, in the order given to it, and redraws after each (:meth:`Panel.wait` blocks until then).
    An exception raised by ``func`` is stored too and raised again by :meth:`get`, so the panel draws it.

    Args:
      func: the slow computation (e.g. a map over a grid for one timestep and integrator).
      maxsize: results kept, most recently used first.
    """

    def __init__(self, func: Callable, *, maxsize: int = 32):
        self.func = func
        self.names = tuple(p.name for p in inspect.signature(func).parameters.values()
                           if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        self.maxsize = maxsize
        self.calls = 0
        """Real computations so far (tests count them)."""
        self._store: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, values: dict) -> tuple:
        return tuple((name, values[name]) for name in self.names if name in values)

    def ready(self, values: dict) -> bool:
        """Whether the result for ``values`` is stored."""
        with self._lock:
            return self._key(values) in self._store

    def get(self, values: dict) -> Any:
        """The stored result for ``values``, or None if not computed yet (a stored exception is raised)."""
        with self._lock:
            entry = self._store.get(self._key(values))
        if entry is None:
            return None
        ok, result = entry
        if not ok:
            raise result
        return result

    def compute(self, values: dict) -> Any:
        """Compute (or fetch) the result for ``values`` and store it; returns it (raises what ``func`` raised)."""
        key = self._key(values)
        with self._lock:
            entry = self._store.get(key)
        if entry is None:
            try:
                entry = (True, self.func(**dict(key)))
            except Exception as exc:  # kept: the panel draws it, the slider survives
                entry = (False, exc)
            with self._lock:
                self.calls += 1
                self._store[key] = entry
                self._store.move_to_end(key)
                while len(self._store) > self.maxsize:
                    self._store.popitem(last=False)
        return self.get(values)

    def cache_clear(self) -> None:
        with self._lock:
            self._store.clear()
            self.calls = 0


class Panel:
    """A live slider panel: controls + compute + draw on one persistent figure + reset.

    Args:
      controls: the sliders and choices, in display order.
      compute: ``compute(values) -> results``; ``values`` maps every control's name to its value
        (SI units). Wrap expensive parts in :func:`cached`, slow ones in :class:`Deferred`. None passes
        the values through.
      setup: ``setup(fig) -> state``: add axes and artists to the panel's figure, once. Unless it
        sets the spacing itself (``fig.subplots_adjust``), the panel applies ``tight_layout``.
      draw: ``draw(state, results, values)``: move the artists to show ``results``. It may return a
        *view key*: a hashable that determines every non-animated artist (e.g. a stepped axis limit). The
        panel then keeps the rendered background of up to ``views`` keys and returns to a key it has seen
        without redrawing the whole figure. None (the default) keeps no views.
      figsize: figure size, inches.
      dpi: resolution of the rendered image, dots per inch.
      title: optional heading above the controls (HTML allowed).
      deferred: the :class:`Deferred` parts ``compute`` reads, in the order the worker computes them. The
        first picture (at construction) is computed in full, synchronously.
      views: backgrounds kept by view key.

    Attributes:
      values: the current values, dict name -> value.
      figure: the persistent ``matplotlib.figure.Figure`` (not registered with pyplot).
      image: the ``ipywidgets.Image`` showing it (created when first displayed or accessed).
      png: the latest rendered PNG bytes.
      error: the message of the last exception caught in compute/draw, or None.
      latencies: seconds taken by each :meth:`update` (latest 200).
      full_redraws: how many renders redrew the whole figure rather than the animated artists.
      refreshes: how many times the worker redrew the figure after computing a deferred part.
    """

    def __init__(self, controls: Sequence[Control], *, compute: Callable[[dict], Any] | None = None,
                 setup: Callable, draw: Callable, figsize: tuple[float, float] = (12.0, 3.6),
                 dpi: float = 80, title: str | None = None, deferred: Sequence[Deferred] = (),
                 views: int = 8):
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise ValueError(f'control names must be unique, got {names}')
        self.controls = {c.name: c for c in controls}
        self.compute = compute if compute is not None else (lambda values: values)
        self.draw = draw
        self.title = title
        self.deferred = tuple(deferred)
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
        self._views: OrderedDict = OrderedDict()
        self._max_views = views
        self._animated: list = []
        self._patches: list = []
        self._sprites: OrderedDict = OrderedDict()
        self.full_redraws = 0
        self.refreshes = 0
        self._lock = threading.RLock()  # the figure: one drawer at a time
        self._generation = 0  # bumped by every update; the worker draws only for the latest
        self._wake = threading.Condition()
        self._pending: tuple[int, dict] | None = None
        self._busy = False
        self._worker: threading.Thread | None = None
        for part in self.deferred:  # the first picture is complete
            self._compute_part(part, self.values)
        self.update()

    # the hot path -----------------------------------------------------------------------------
    def update(self, **changes) -> bytes:
        """Apply ``changes`` (name=value, SI units), recompute, redraw in place, render, show.

        Values are clipped to their slider's range, so an extreme value is drawn, never raised.
        An unknown control name raises ValueError (a programming error, not a slider move). Deferred
        parts not ready for the new values are drawn as pending and computed afterwards on the worker
        thread (:meth:`wait`).

        Returns:
          The new PNG bytes (also in :attr:`png` and the image widget).
        """
        start = time.perf_counter()
        with self._lock:
            for name, value in changes.items():
                if name not in self.controls:
                    raise ValueError(
                        f'unknown control {name!r}; controls: {", ".join(self.controls)}')
                self.values[name] = self.controls[name].clamp(value)
            self._generation += 1
            if changes and self._widgets is not None and not self._syncing:
                self._sync_widgets()
            png = self._redraw()
            self._request(self._generation, dict(self.values))
        self.latencies = (self.latencies + [time.perf_counter() - start])[-200:]
        return png

    def _redraw(self) -> bytes:
        """compute, draw and render the current values (the caller holds the lock)."""
        view = None
        try:
            with plots.book_style():
                results = self.compute(dict(self.values))
                view = self.draw(self.state, results, dict(self.values))
            self.error = None
            self._error_text.set_visible(False)
        except Exception as exc:  # a panel must survive any slider position
            self.error = f'{type(exc).__name__}: {exc}'
            self._error_text.set_text(f'could not draw this setting\n{self.error}'[:300])
            self._error_text.set_visible(True)
        try:
            self.png = self._render(view)
        except Exception as exc:
            self.error = f'{type(exc).__name__} while rendering: {exc}'
        if self._image is not None:
            self._image.value = self.png
        return self.png

    def _render(self, view: Hashable | None = None) -> bytes:
        """Blit: redraw everything only when a non-animated artist changed to a view not seen before,
        else restore a kept background and draw just the animated artists over it."""
        fig = self.figure
        canvas = fig.canvas
        kept = self._views.get(view) if view is not None else None
        if self._background is None or (fig.stale and kept is None):
            canvas.draw()
            self._background = canvas.copy_from_bbox(fig.bbox)
            self._animated = [a for ax in fig.axes
                              for a in sorted(ax.get_children(), key=lambda a: a.get_zorder())
                              if a.get_animated()]
            self._animated += [a for a in fig.texts if a.get_animated()]
            self._patches = _on_top_patches(fig)
            self._sprites.clear()  # rendered over the old background
            self.full_redraws += 1
            if view is not None:
                self._views[view] = self._background
                while len(self._views) > self._max_views:
                    self._views.popitem(last=False)
        else:
            if fig.stale:  # the non-animated artists match a view drawn before
                self._background = kept
                self._views.move_to_end(view)
                fig.stale = False
            canvas.restore_region(self._background)
        for artist in self._animated:
            if not artist.get_visible():
                continue
            if getattr(artist, '_physai_sprite', False):
                self._draw_sprite(artist)
            else:
                fig.draw_artist(artist)
        fig.stale = False  # drawing an artist may touch its parts (a legend's frame); that changes nothing behind it
        return _encode_png(fig, patches=self._patches)

    def _draw_sprite(self, text) -> None:
        """Paste a :func:`sprite` text's cached pixels, or draw it and cache them."""
        fig = self.figure
        key = (id(text), id(self._background), text.get_text(), str(text.get_color()), text.get_fontsize())
        pixels = np.asarray(fig.canvas.buffer_rgba())
        cached = self._sprites.get(key)
        if cached is None:
            fig.draw_artist(text)
            box = text.get_window_extent(fig.canvas.get_renderer())
            patch = text.get_bbox_patch()
            if patch is not None:
                box = type(box).union([box, patch.get_window_extent(fig.canvas.get_renderer())])
            where = _pixel_region(box, *pixels.shape[:2])
            if where is None:
                return
            cached = self._sprites[key] = (where, pixels[where].copy())
            while len(self._sprites) > 256:
                self._sprites.popitem(last=False)
        where, patch_pixels = cached
        pixels[where] = patch_pixels

    # the deferred parts -----------------------------------------------------------------------
    def _request(self, generation: int, values: dict) -> None:
        if not any(not part.ready(values) for part in self.deferred):
            return
        with self._wake:
            self._pending = (generation, values)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name='physai-panel', daemon=True)
                self._worker.start()
            self._wake.notify_all()

    def _work(self) -> None:
        """The worker: compute the missing deferred parts of the latest request, redraw after each."""
        while True:
            with self._wake:
                if self._pending is None and not self._wake.wait_for(
                        lambda: self._pending is not None, timeout=30.0):
                    self._worker = None  # idle for a while: the thread ends, a new request starts another
                    return
                generation, values = self._pending
                self._pending = None
                self._busy = True
            try:
                for part in self.deferred:
                    if generation != self._generation:
                        break  # a newer setting is waiting; it is served next
                    if part.ready(values):
                        continue
                    self._compute_part(part, values)
                    with self._lock:
                        if generation == self._generation:
                            self._redraw()
                            self.refreshes += 1
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()

    @staticmethod
    def _compute_part(part: Deferred, values: dict) -> None:
        try:
            part.compute(values)
        except Exception:  # stored by the part; compute's get raises it again and the panel draws it
            pass

    def wait(self, timeout: float | None = None) -> bytes:
        """Block until every deferred part of the current setting is computed and drawn; returns :attr:`png`.

        Args:
          timeout: seconds to wait at most (None: as long as it takes).
        """
        with self._wake:
            self._wake.wait_for(lambda: self._pending is None and not self._busy, timeout)
        return self.png

    def warm(self, settings: Sequence[dict]) -> None:
        """Visit each of ``settings`` (dicts of changes) once, then return to the current values: each view a
        stepped axis can take (see ``draw``'s view key) is drawn now, so a slider never waits for it later."""
        current = dict(self.values)
        for changes in settings:
            self.update(**changes)
        self.update(**current)

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
            w = make_widget(control)
            w.value = to_widget(control, self.values[name])
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
            self.update(**{name: to_value(self.controls[name], change['new'])})
        finally:
            self._syncing = False

    def _sync_widgets(self) -> None:
        self._syncing = True
        try:
            for name, w in self._widgets.items():
                target = to_widget(self.controls[name], self.values[name])
                if w.value != target:
                    w.value = target
        finally:
            self._syncing = False

    def __repr__(self) -> str:
        return (f'live panel ({", ".join(self.controls)}): move the sliders in Jupyter or Colab; '
                f"on the book's page the same panel runs without a kernel")

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
