"""Latency of every chapter's live panel, control by control, against the naive way of redrawing chapter 1's.

Drives each panel's own update path (``Panel.update``, the function a slider calls) in a plain process with no
widget front end. For every control of every chapter's panel it makes ``--values`` fresh changes spread over the
control's whole range, ends included (log-spaced on a log slider, every option of a choice), each from the panel's
default setting, and times each from the change to the new PNG bytes. In the same run it times the naive approach
on chapter 1's changes: rerun every computation (no cache), build a whole new pyplot figure and render it inline as
PNG (what ``%matplotlib inline`` does at the end of a cell).

Prints a table (chapter, control, median and 95th percentile in ms), then the last line
``panel <X> ms (worst median: <chapter> <control>), p95 <Y> ms, naive <Z> ms, ratio <Z/X>``: X the worst
control's median, Y the worst 95th percentile, Z the naive median, all measured in this run.

Run: ``.venv/bin/python benchmarks/bench_panel.py [--values 10] [--chapters 1 2 3 4]``
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import matplotlib

matplotlib.use('agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from tqdm import tqdm  # noqa: E402

from physai.engine import sysid  # noqa: E402
from physai.experiments import position_actuators, servo_sysid  # noqa: E402
from physai.interface import (actuator_models_panels, live, plots, position_actuators_panels,  # noqa: E402
                              servo_sysid_panels, where_pd_runs_panels)


def control_values(control, n: int) -> list:
    """``n`` values over a control's whole range, ends included: every option of a choice, log-spaced on a log
    slider, evenly spaced on a linear one."""
    if isinstance(control, live.Choice):
        return [control.options[k % len(control.options)] for k in range(max(n, len(control.options)))]
    low, high = control.min, control.max  # in the slider's displayed unit; to_value gives what update takes
    shown = np.geomspace(low, high, n) if isinstance(control, live.LogSlider) else np.linspace(low, high, n)
    return [control.to_value(float(v)) for v in shown]


def chapter_panels(chapters) -> dict:
    """chapter number -> a function that makes that chapter's panel (chapter 4's on its held-out episode)."""
    makers = {1: position_actuators_panels.servo_panel, 2: actuator_models_panels.actuator_panel,
              3: where_pd_runs_panels.pd_panel}
    if 4 in chapters:
        _, heldout = servo_sysid.split(servo_sysid.load_book_dataset())
        makers[4] = lambda: servo_sysid_panels.sysid_panel(heldout[0], sysid.MENAGERIE)
    return {c: makers[c] for c in chapters}


def time_controls(panel, n: int) -> dict[str, list[float]]:
    """Per control, the latency (ms) of ``n`` changes, each from the panel's default setting."""
    times = {}
    for name, control in panel.controls.items():
        times[name] = []
        for value in control_values(control, n):
            panel.reset()
            start = time.perf_counter()
            png = panel.update(**{name: value})
            times[name].append(1e3 * (time.perf_counter() - start))
            assert png.startswith(b'\x89PNG'), name
    return times


def naive_update(values: dict) -> bytes:
    """Everything from scratch: the three computations, a new figure, an inline PNG."""
    values = {**values, 'dampratio': 1.0, 'q0': -0.5, 'duration': 3.0}
    response = position_actuators.servo_step.__wrapped__(**{k: values[k] for k in (
        'kp', 'armature', 'timestep', 'integrator', 'dampratio', 'q0', 'duration')})
    curve = position_actuators.servo_kp_curve.__wrapped__(**{k: values[k] for k in (
        'armature', 'timestep', 'integrator', 'dampratio', 'q0', 'duration')})
    stab = position_actuators.servo_stability.__wrapped__(**{k: values[k] for k in (
        'timestep', 'integrator', 'dampratio', 'q0')})
    with plots.book_style():
        fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(13.0, 3.9), dpi=80)
        plots.mark_step_response(ax1, response, ylim=(-35.8, 14.3))
        ax2.loglog(curve['kp'], curve['sag_deg'], 'o-', ms=3, label='sag')
        ax2r = ax2.twinx()
        ax2r.loglog(curve['kp'], curve['rise_ms'], 's-', ms=3, color='green', label='rise time')
        ax2.axvline(values['kp'], color='red', ls='--')
        plots.label(ax2, 'kp (N·m/rad)', 'sag (deg)', 'sag and rise time vs kp')
        ax2r.set_ylabel('rise time (ms)')
        ax3.pcolormesh(stab['armature'], stab['kp'], stab['diverged'].astype(float),
                       shading='nearest', cmap='coolwarm')
        ax3.set_yscale('log')
        ax3.plot(stab['bound_armature'], stab['bound_kp'], 'k-', label='growth = 1')
        ax3.plot(stab['bound_armature'], stab['two_kp'], 'k--', label='hω = 2')
        ax3.plot([values['armature']], [values['kp']], 'ro', mfc='none')
        ax3.legend(loc='lower right')
        plots.label(ax3, 'armature (kg·m²)', 'kp (N·m/rad)', 'stability')
        buffer = io.BytesIO()
        fig.savefig(buffer, format='png', bbox_inches='tight')  # as the inline backend does
        plt.close(fig)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--values', type=int, default=10, help='fresh values per control')
    parser.add_argument('--chapters', type=int, nargs='+', default=[1, 2, 3, 4], choices=[1, 2, 3, 4])
    args = parser.parse_args()

    rows = []
    for chapter, make in tqdm(chapter_panels(args.chapters).items(), desc='panels', unit='panel'):
        panel = make()
        for name, ms in time_controls(panel, args.values).items():
            rows.append((chapter, name, statistics.median(ms), float(np.percentile(ms, 95))))
    print(f'{"chapter":>7}  {"control":<16} {"median ms":>9} {"p95 ms":>8}')
    for chapter, name, median, p95 in rows:
        print(f'{chapter:>7}  {name:<16} {median:9.1f} {p95:8.1f}')

    servo = position_actuators_panels.servo_panel()
    changes = [{name: v} for name, control in servo.controls.items() for v in control_values(control, args.values)]
    values = {c.name: c.default_value for c in live.common_controls()}
    naive_ms = []
    for change in changes:
        start = time.perf_counter()
        png = naive_update({**values, **change})
        naive_ms.append(1e3 * (time.perf_counter() - start))
        assert png.startswith(b'\x89PNG')

    chapter, name, worst, _ = max(rows, key=lambda row: row[2])
    p95 = max(row[3] for row in rows)
    naive = statistics.median(naive_ms)
    print(f'panel {worst:.0f} ms (worst median: chapter {chapter} {name}), p95 {p95:.0f} ms, '
          f'naive {naive:.0f} ms, ratio {naive / worst:.1f}')


if __name__ == '__main__':
    main()
