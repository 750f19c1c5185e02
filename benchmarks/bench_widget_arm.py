"""Python's time per reply of chapters 4, 5 and 6's panel widgets (physai.interface.widget), control by control.

No front end: for every control of each widget it makes ``--values`` changes spread over the control's range, ends
included (bench_panel.control_values: log-spaced on a log slider, every option of a choice), each from the panel's
default setting, and times what the widget does for a request: its first reply (``PanelWidget.frame``, the ``now``
parts and the cache's answer for the ``later`` ones, as ``reply['ms']`` measures it) and, with the cache cleared, the
slow part its worker then runs for the second reply (the replay, the grasp, the settings' two runs).

The widgets are built from the arguments their chapters' notebooks give their panels: chapter 4 on the held-out
episode with the published fit (``arm_replay.PUBLISHED_FIT``: the chapter's own fit takes minutes), chapter 6 on the
held-out episode of the last fold with that fold's spring (``--fit``: fitted here, about 40 s) or else the published
fit on every joint, and the recording's heaviest load.

In the same run, the baseline: each chapter's matplotlib panel (the kernel panel the widget is to replace, built from
the same arguments) makes the same changes, timed from the change to its complete figure (``bench_panel.time_change``).

Prints a table (chapter, control, first reply median ms, slow part median and 95th percentile ms, the matplotlib
panel's complete-figure median ms) and the last line ``first reply <F> ms (worst median: <chapter> <control>), slow
part <S> ms (worst median: <chapter> <control>), matplotlib panel <M> ms (worst median: <chapter> <control>), ratio
<S/M>``.

Run: ``.venv/bin/python benchmarks/bench_widget_arm.py [--values 4] [--fit]`` (needs anywidget and the bundle:
``python -m physai.book.widget_bundle``). With ``--quick`` (as ``make test`` runs it, to keep it working) two values
per control and chapter 6 on the published fit: the same table and last line, figures too few to quote.
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
from physai.engine.arm_replay import PUBLISHED_FIT  # noqa: E402
from physai.engine.servo_models import JointModel  # noqa: E402
from physai.experiments import servo_firmware, servo_sysid  # noqa: E402
from physai.interface import gripper_panels, servo_firmware_panels, servo_sysid_panels  # noqa: E402


def arguments(fit: bool) -> dict:
    """chapter -> the arguments its panel and its widget are built from."""
    data = servo_sysid.load_book_dataset()
    held = servo_sysid.split(data)[1][0]
    load = servo_firmware.heaviest_load(data)[1]
    if fit:
        from physai.experiments import servo_truth
        last = servo_truth.compare_structures(data, rivals=())[-1]
        spring, episode = last.models['spring'], next(e for e in data.episodes if e.index == last.heldout)
    else:
        spring, episode = JointModel.uniform(PUBLISHED_FIT), held
    return {4: (held, PUBLISHED_FIT), 5: (), 6: (spring, episode, load)}


WIDGETS = {4: servo_sysid_panels.sysid_widget, 5: gripper_panels.gripper_widget,
           6: servo_firmware_panels.settings_widget}
PANELS = {4: servo_sysid_panels.sysid_panel, 5: gripper_panels.gripper_panel,
          6: servo_firmware_panels.settings_panel}
"""chapter -> the function that makes its widget, and its matplotlib panel (the baseline), from the same arguments."""


def time_panel(panel, control, n: int) -> list[float]:
    """The matplotlib panel's ms to its complete figure for the same ``n`` changes of ``control`` from its default."""
    complete = []
    for value in control_values(control, n):
        panel.reset()
        panel.wait()
        complete.append(time_change(panel, {control.name: value})[1])
    return complete


def time_control(w, control, n: int) -> tuple[list[float], list[float]]:
    """(first reply ms, slow part ms) for ``n`` values of ``control`` from the default setting."""
    first, slow = [], []
    for value in control_values(control, n):
        values = {**w.spec.defaults, control.name: value}
        for part in w.later.values():
            part.cache_clear()
        start = time.perf_counter()
        w.frame(values)
        first.append(1e3 * (time.perf_counter() - start))
        start = time.perf_counter()
        for part in w.later.values():
            part.compute(w.spec.check(values))
        slow.append(1e3 * (time.perf_counter() - start))
    return first, slow


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--values', type=int, default=4, help='changes per control (every option of a choice)')
    parser.add_argument('--fit', action='store_true', help='chapter 6 on its fitted spring (about 40 s)')
    parser.add_argument('--quick', action='store_true', help='2 values per control, chapter 6 on the published fit: '
                                                             'a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values, args.fit = 2, False
    rows = []
    for chapter, made_from in arguments(args.fit).items():
        w, panel = WIDGETS[chapter](*made_from), PANELS[chapter](*made_from)
        try:
            for control in w.spec.controls:
                first, slow = time_control(w, control, args.values)
                baseline = time_panel(panel, panel.controls[control.name], args.values)
                rows.append((chapter, control.name, statistics.median(first), statistics.median(slow),
                             float(np.percentile(slow, 95)), statistics.median(baseline)))
                print(f'ch{chapter} {control.name:15s} first {rows[-1][2]:7.2f} ms   slow part median '
                      f'{rows[-1][3]:7.0f} ms  p95 {rows[-1][4]:7.0f} ms   matplotlib panel {rows[-1][5]:7.0f} ms',
                      flush=True)
        finally:
            panel.close()
    worst_first = max(rows, key=lambda r: r[2])
    worst_slow = max(rows, key=lambda r: r[3])
    worst_panel = max(rows, key=lambda r: r[5])
    print(f'first reply {worst_first[2]:.2f} ms (worst median: ch{worst_first[0]} {worst_first[1]}), slow part '
          f'{worst_slow[3]:.0f} ms (worst median: ch{worst_slow[0]} {worst_slow[1]}), matplotlib panel '
          f'{worst_panel[5]:.0f} ms (worst median: ch{worst_panel[0]} {worst_panel[1]}), ratio '
          f'{worst_slow[3] / worst_panel[5]:.2f}')


if __name__ == '__main__':
    main()
