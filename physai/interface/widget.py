"""The page's panel as a Jupyter widget: one renderer for the book's page and the kernel (a spike of issue 42).

:class:`PanelWidget` is an ``anywidget`` whose front end is the page's own ES modules (``book/_static/panels/``:
``ui.js``'s ``Panel`` and the chapter's module, entered through ``widget.js``), bundled into one module by
``physai.book.widget_bundle`` (anywidget loads one file) and shipped in ``physai/interface/static/``. The physics
stays in the kernel: a control sends its values (the ``request`` trait), Python runs the chapter's parts at exactly
those values, in the form the page's first view stores them (:class:`physai.interface.web.Part`'s ``compute``), and
sends them back (``reply``), which the chapter's ``decode`` and ``draw`` draw as they draw a stored frame.

The parts that are cheap answer at once (``now``); the slow ones (``later``, each a :class:`Deferred`) answer from
their cache when they can, else are run on a worker thread once the first reply has left the kernel
(:func:`iopub_sent`), in their order, each sent in a further reply as it is ready (the last one ``complete``). A
``later`` part may share a ``now`` part's name: the ``now`` one is a cheap first answer (chapter 1: the step response's first second where the whole run is long),
replaced when the ``later`` one is ready.

:func:`arm3d_messages` answers a widget's 3D view (chapters 3 and 4): the view's files and each run's poses, as
binary buffers. :func:`servo_widget` is chapter 1's.
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anywidget
import mujoco
import numpy as np
import traitlets

from physai.experiments.servo_panel import servo_kp_curve, servo_stability, servo_step, servo_step_start
from physai.interface import position_actuators_panels as ch1
from physai.interface.panel import PanelSpec
from physai.interface.plots import COLORS

STATIC = Path(__file__).with_name('static')
"""The bundled front end: ``panels.js`` (``widget.js`` and all it imports) and ``panels.css`` (the panel's rules of
``book/_static/physai.css``), written by ``python -m physai.book.widget_bundle`` (generated, not committed: a
committed bundle would go stale with every change to the page's modules)."""


class Deferred:
    """A slow part of a panel's results, computed off the first reply: the widget answers a request with what is
    ready, then fills this part in (:class:`PanelWidget`'s ``later``).

    ``Deferred(func)`` wraps ``func``, called with the panel's values it names (extra keys are ignored, as with
    :func:`physai.experiments.registry.cached`; bind fixed arguments with ``functools.partial``). :meth:`get` returns
    the stored result for the values, or None when it is not computed yet; :meth:`compute` computes and stores it
    (the widget's worker thread calls it, in the order of ``later``, and replies after each). An exception raised by
    ``func`` is stored too and raised again by :meth:`get`, so the widget replies with it.

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
            except Exception as exc:  # kept: the widget replies with it and stays alive
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


class PanelWidget(anywidget.AnyWidget):
    """A chapter's panel (its :class:`~physai.interface.panel.PanelSpec`) drawn by the page's code, run by the kernel.

    Args:
      spec: the panel's description.
      module: the chapter's page module (``position_actuators_panels.js``), as the page block names it.
      constants: the chapter's numbers the page draws with (the page block's ``constants``).
      now: part name -> ``f(values) -> JSON``, run for every request before the reply.
      later: part name -> :class:`Deferred` returning JSON, run after the first reply unless cached; one named as a
        ``now`` part replaces it once computed.

    Attributes:
      compute_ms: Python's time for each request's first reply, ms (latest 500; the reply carries it as ``ms``).
    """

    # read when a widget is made, not when this module is imported (the bundle may not be built yet)
    _esm = traitlets.Unicode().tag(sync=True)
    _css = traitlets.Unicode().tag(sync=True)
    data = traitlets.Dict().tag(sync=True)
    request = traitlets.Dict().tag(sync=True)
    reply = traitlets.Dict().tag(sync=True)

    def __init__(self, spec: PanelSpec, module: str, *, constants: Mapping,
                 now: Mapping[str, Callable[[dict], object]], later: Mapping[str, Deferred]):
        missing = [name for name in ('panels.js', 'panels.css') if not (STATIC / name).is_file()]
        if missing:
            raise FileNotFoundError(f'the widget\'s front end {", ".join(missing)} is missing in {STATIC}: run '
                                    f'python -m physai.book.widget_bundle (after npm ci)')
        super().__init__(_esm=(STATIC / 'panels.js').read_text(), _css=(STATIC / 'panels.css').read_text(),
                         data={'module': module, 'spec': spec.to_json(),
                               'constants': {**constants, 'colors': COLORS, 'pythonMujoco': mujoco.__version__}})
        self.spec = spec
        self.now = dict(now)
        self.later = dict(later)
        self.compute_ms: list[float] = []
        self._sending = threading.Lock()
        self._wake = threading.Condition()
        self._job: tuple[int, dict] | None = None
        self._latest = 0
        self._worker = threading.Thread(target=self._work, daemon=True, name=f'physai-widget-{spec.key}')
        self._worker.start()
        self.observe(self._on_request, names='request')

    def __repr__(self) -> str:
        # the cell's stored text/plain (nbval compares it): the same words whatever the widget's id
        return (f'panel {self.spec.key} ({", ".join(c.name for c in self.spec.controls)}): the book page\'s panel, '
                f'run by this kernel')

    def frame(self, values: Mapping) -> tuple[dict, bool]:
        """The parts at ``values`` (each control's, checked against its range): the ``later`` ones from their cache,
        the ``now`` ones run where no cached ``later`` part takes their name, the rest None. Returns (frame,
        complete)."""
        values = self.spec.check(values)
        out = {name: f(values) for name, f in self.now.items()
               if name not in self.later or not self.later[name].ready(values)}
        for name, part in self.later.items():
            result = part.get(values)   # after the now parts: one of them may have computed it
            if result is not None or name not in out:
                out[name] = result
        return out, all(part.ready(values) for part in self.later.values())

    def _on_request(self, change) -> None:
        request = change['new']
        if not request:
            return
        generation, values = int(request['generation']), dict(request['values'])
        self._latest = generation
        start = time.perf_counter()
        try:
            frame, complete = self.frame(values)
        except Exception as exc:  # a setting the physics refuses: the panel says so and stays alive
            self._reply({'generation': generation, 'error': f'{type(exc).__name__}: {exc}'})
            return
        ms = 1e3 * (time.perf_counter() - start)
        self.compute_ms = (self.compute_ms + [ms])[-500:]
        self._reply({'generation': generation, 'values': values, 'frame': frame, 'complete': complete, 'ms': ms})
        if not complete:
            with self._wake:
                self._job = (generation, values)
                self._wake.notify()

    def _reply(self, reply: dict) -> None:
        with self._sending:
            self.reply = reply

    def _work(self) -> None:
        while True:
            with self._wake:
                while self._job is None:
                    self._wake.wait()
                generation, values = self._job
                self._job = None
            parts, checked = list(self.later.values()), self.spec.check(values)
            if any(not part.ready(checked) for part in parts):
                iopub_sent()   # the first reply on its way before the physics takes the interpreter
            for i, part in enumerate(parts):
                if generation != self._latest:
                    break  # a newer request: its own job follows
                ran = not part.ready(checked)
                if ran:
                    try:
                        part.compute(checked)
                    except Exception:  # stored by the part: frame() raises it again, into an error reply
                        pass
                # a reply for each part run, and a last one in any case (another job may have run them)
                last = i == len(parts) - 1
                if (ran or last) and generation == self._latest and not self._reply_frame(generation, values):
                    break

    def _reply_frame(self, generation: int, values: dict) -> bool:
        """Reply with the frame at ``values`` as far as it is computed; False if it is an error."""
        try:
            frame, complete = self.frame(values)
        except Exception as exc:
            self._reply({'generation': generation, 'error': f'{type(exc).__name__}: {exc}'})
            return False
        self._reply({'generation': generation, 'values': values, 'frame': frame, 'complete': complete})
        return True


def iopub_sent(timeout: float = 0.1) -> bool:
    """Wait until the kernel's IOPub thread has sent every message queued before this call; whether it did in time.

    ipykernel queues a widget's message for its IOPub thread, which sends it when it next holds the interpreter
    lock. With the worker starting the slow parts at once (MuJoCo steps called from Python), chapter 6's first reply
    reached the page 40-70 ms later than with the worker waiting (``benchmarks/bench_panel.py``: its backlash control,
    55-83 ms median to the first redraw, now 12-14 ms). Here the worker waits until the queue is through, as
    ipykernel's own ``OutStream.flush`` waits; outside an ipykernel kernel (tests, a script) it returns at once.
    """
    try:
        from IPython import get_ipython
        thread = get_ipython().kernel.iopub_socket.io_thread
        alive = thread.thread.is_alive()
    except (ImportError, AttributeError):   # no IPython, no kernel, no IOPub thread
        return True
    if not alive:
        return True
    sent = threading.Event()
    thread.schedule(sent.set)
    return sent.wait(timeout)


def whole_part(spec: PanelSpec, part: Callable[[dict], object], *, maxsize: int = 32) -> Deferred:
    """A slow part that depends on every control of ``spec`` (a replay, a grasp): ``part(values)`` as a
    :class:`Deferred` keyed by all the controls' values, so that a control added to the description keys it too."""
    def run(**values):
        return part(values)
    run.__signature__ = inspect.Signature([inspect.Parameter(c.name, inspect.Parameter.KEYWORD_ONLY)
                                           for c in spec.controls])
    return Deferred(run, maxsize=maxsize)


def arm3d_messages(widget: PanelWidget, poses: Callable[[dict, dict], tuple[dict, list]]) -> None:
    """The kernel's half of a widget's 3D view (``arm3d_view.js``'s kernel branch): a custom message ``{kind, id}``
    from the front end gets one back with the same ``kind`` and ``id``. ``arm3d-assets``: the view's module and the
    arm's meshes (``arm3d.js`` and ``arm3d/``, :func:`physai.book.widget_bundle.build_arm3d`) as two binary buffers
    and the meshes' description, sent when a reader opens the view; ``arm3d-poses`` (with ``values``, the controls'
    values of the run the view shows): ``poses(values, content)`` (the values checked against the controls' ranges),
    which returns the reply's fields and its float64 arrays, sent as buffers. A request it cannot answer gets
    ``error``."""
    def answer(_, content, buffers):
        kind, ident = content.get('kind'), content.get('id')
        if kind not in ('arm3d-assets', 'arm3d-poses'):
            return
        try:
            if kind == 'arm3d-assets':
                files = [STATIC / 'arm3d.js', STATIC / 'arm3d' / 'so101.bin', STATIC / 'arm3d' / 'so101.json']
                missing = [str(f) for f in files if not f.is_file()]
                if missing:
                    raise FileNotFoundError(f'the 3D view\'s files are missing ({", ".join(missing)}): run python -m '
                                            f'physai.book.widget_bundle --arm3d')
                widget.send({'kind': kind, 'id': ident, 'description': json.loads(files[2].read_text())},
                            buffers=[files[0].read_bytes(), files[1].read_bytes()])
                return
            fields, arrays = poses(widget.spec.check(content.get('values', {})), content)
            widget.send({'kind': kind, 'id': ident, **fields},
                        buffers=[np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in arrays])
        except Exception as exc:  # the view says so; the panel stays alive
            widget.send({'kind': kind, 'id': ident, 'error': f'{type(exc).__name__}: {exc}'})

    widget.on_msg(answer)


def _curve(armature, timestep, integrator, dampratio, *, q0, duration):
    return ch1.curve_part(servo_kp_curve(armature, timestep, integrator, dampratio, q0, duration))


def _map(timestep, integrator, dampratio, *, q0):
    return ch1.map_part(servo_stability(timestep, integrator, dampratio, q0))


def _step(kp, armature, timestep, integrator, dampratio, *, q0, duration, ylim):
    return ch1.step_part(servo_step(kp, armature, timestep, integrator, dampratio, q0, duration), ylim=ylim)


def servo_widget(*, kp: float = 100.0, armature: float = 0.028, timestep: float = 0.005,
                 integrator: str = 'implicitfast', dampratio: float = 1.0, q0: float = -0.5,
                 duration: float = 3.0) -> PanelWidget:
    """Chapter 1's panel (:func:`~physai.interface.position_actuators_panels.servo_spec`) as a widget: the page's
    ``position_actuators_panels.js`` drawing the step response (:func:`~physai.experiments.servo_panel.servo_step`),
    the kp curve and the stability map that Python MuJoCo runs at the controls' exact values.

    Where the whole step response would not fit the panel's budget (RK4 below a 1 ms step,
    :data:`~physai.experiments.servo_panel.PANEL_STEP_BUDGET`) the first reply draws its first second
    (:func:`~physai.experiments.servo_panel.servo_step_start`, the same samples), the readout saying the rest is
    coming and no sag or rise marked (they would describe that second only), and the worker's first reply the whole
    run; a run that diverged within that second is the whole story and reads as such.

    Args:
      kp, armature, timestep, integrator, dampratio: the controls' start and reset values (SI units).
      q0: start angle, rad (the command is 0).
      duration: simulated time of the step response, s.
    """
    spec = ch1.servo_spec(kp=kp, armature=armature, timestep=timestep, integrator=integrator, dampratio=dampratio,
                          q0=q0, duration=duration)
    whole = Deferred(functools.partial(_step, q0=q0, duration=duration, ylim=spec.plot('step').ylim))

    def step(values: dict) -> dict:
        first = servo_step_start(**values, q0=q0, duration=duration)
        if first is None:  # the whole run fits the budget: answer with it
            return whole.compute(values)
        part = ch1.step_part(first, ylim=spec.plot('step').ylim)
        if not first.diverged:
            part.update(settled=False, bad=False, readout=spec.say('partial', t=float(first.t[-1]), duration=duration))
        return part

    return PanelWidget(spec, 'position_actuators_panels.js', constants=ch1.servo_constants(q0, duration),
                       now={'step': step},
                       later={'step': whole, 'curve': Deferred(functools.partial(_curve, q0=q0, duration=duration)),
                              'map': Deferred(functools.partial(_map, q0=q0))})
