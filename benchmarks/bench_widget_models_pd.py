"""Python's time per reply of chapters 2 and 3's panel widgets (physai.interface.widget), control by control.

For every control of ``pendulum_widget()`` and ``pd_widget()`` it makes ``--values`` changes spread over the control's
whole range (benchmarks/bench_panel.py's ``control_values``: log-spaced on a log slider, every option of a choice),
each from the panel's default setting, and times what the widget's first reply to it costs in Python: its ``frame``
(the parts it answers at once, the time a reply carries as ``ms``), on a fresh widget each (no stored result), after
one warm-up reply at the default. No JupyterLab and no browser: the round trip and the drawing are
benchmarks/bench_widget.py's. With ``--ensembles`` it also times chapter 3's second reply, the hold's ensemble
(``later``), at the default setting and at each control's first and last value.

In the same run, the baseline: each chapter's matplotlib panel (``actuator_panel()``, ``pd_panel()``: the kernel
panel the widget is to replace) makes the same changes, each from its default setting, timed from the change to its
new PNG (``bench_panel.time_change``), the matplotlib panel's first answer as ``frame`` is the widget's.

Prints a table (chapter, control, median and 95th percentile in ms, the median processor time of the replying
thread in ms, the matplotlib panel's median ms) and the last line ``pendulum <A> ms (worst median: <control>), pd <B>
ms (worst median: <control>), matplotlib panel <M> ms (worst median: <panel> <control>), ratio <max(A, B)/M>``.

Run: ``.venv/bin/python benchmarks/bench_widget_models_pd.py [--values 5] [--ensembles]`` (needs anywidget and the
bundle: python -m physai.book.widget_bundle). With ``--quick`` (as ``make test`` runs it, to keep it working) two
values per control: the same table and last line, figures too few to quote.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_panel import control_values, time_change  # noqa: E402
from physai.interface import actuator_models_panels, where_pd_runs_panels  # noqa: E402

WIDGETS = {'pendulum': actuator_models_panels.pendulum_widget, 'pd': where_pd_runs_panels.pd_widget}
PANELS = {'pendulum': actuator_models_panels.actuator_panel, 'pd': where_pd_runs_panels.pd_panel}
"""The matplotlib panel of each widget's chapter: the baseline."""


def panel_ms(panel, name: str, values) -> list[float]:
    """The matplotlib panel's ms to its new PNG for each change of control ``name`` to ``values``, from its default."""
    times = []
    for value in values:
        panel.reset()
        panel.wait()
        times.append(time_change(panel, {name: value})[0])
    return times


def reply_ms(make, values: dict) -> tuple[float, float]:
    """Python's time for a fresh widget's first reply at ``values``, ms (what the reply's ``ms`` measures), and the
    processor time of the calling thread in it, ms (what a busy machine does not add to)."""
    w = make()
    start, cpu = time.perf_counter(), time.thread_time()
    w.frame(values)
    return 1e3 * (time.perf_counter() - start), 1e3 * (time.thread_time() - cpu)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--values', type=int, default=5, help='changes per control (default 5)')
    parser.add_argument('--ensembles', action='store_true', help="also time chapter 3's ensemble (seconds each)")
    parser.add_argument('--quick', action='store_true', help='2 values per control: a check that it runs')
    args = parser.parse_args(argv)
    if args.quick:
        args.values = 2
    worst, baseline = {}, ('', '', 0.0)
    print(f'{"panel":9s} {"control":15s} {"n":>3s} {"median ms":>10s} {"p95 ms":>8s} {"CPU median ms":>14s} '
          f'{"matplotlib ms":>14s}')
    for key, make in WIDGETS.items():
        spec = make().spec
        defaults = spec.defaults
        reply_ms(make, defaults)  # warm-up: the model loaded and compiled once
        panel = PANELS[key]()
        try:
            for control in spec.controls:
                values = control_values(control, args.values)
                runs = [reply_ms(make, {**defaults, control.name: v}) for v in values]
                times = [wall for wall, _ in runs]
                median, p95 = statistics.median(times), float(np.percentile(times, 95))
                cpu = statistics.median(c for _, c in runs)
                old = statistics.median(panel_ms(panel, control.name, values))
                print(f'{key:9s} {control.name:15s} {len(times):3d} {median:10.1f} {p95:8.1f} {cpu:14.1f} {old:14.1f}',
                      flush=True)
                if median > worst.get(key, ('', 0.0))[1]:
                    worst[key] = (control.name, median)
                if old > baseline[2]:
                    baseline = (key, control.name, old)
        finally:
            panel.close()
    if args.ensembles:
        later = where_pd_runs_panels.pd_widget().later['hold']
        spec = where_pd_runs_panels.pd_widget().spec
        settings = [('default', spec.defaults)] + [
            (f'{c.name}={v:g}' if isinstance(v, float) else f'{c.name}={v}', {**spec.defaults, c.name: v})
            for c in spec.controls for v in (control_values(c, 2)[0], control_values(c, 2)[-1])]
        for name, values in settings:
            start = time.perf_counter()
            part = later.compute(values)
            print(f'pd ensemble {name:22s} {time.perf_counter() - start:6.2f} s  {part["n"]} runs, {part["state"]}',
                  flush=True)
    widget_worst = max(ms for _, ms in worst.values())
    print(', '.join(f'{key} {ms:.1f} ms (worst median: {name})' for key, (name, ms) in worst.items())
          + f', matplotlib panel {baseline[2]:.1f} ms (worst median: {baseline[0]} {baseline[1]}), ratio '
            f'{widget_worst / baseline[2]:.2f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
