"""Latency of every chapter's live panel, control by control, against the naive way of redrawing chapter 1's.

Drives each panel's own update path (``Panel.update``, the function a slider calls) in a plain process with no
widget front end. For every control of every chapter's panel it makes ``--values`` fresh changes spread over the
control's whole range, ends included (log-spaced on a log slider, every option of a choice), each from the panel's
default setting, and times each from the change to the new PNG bytes (and to the complete figure, once the panel's
worker has drawn the parts it defers, such as chapter 1's kp curve and stability map; it waits for them before the
next change). It does the same from each slow setting of :data:`SLOW_SETTINGS` (chapter 1 at 0.5 ms with RK4,
chapter 2 at 0.5 ms with each explicit model): rows ``control @ setting``, counted in the last line. With
``--corners N`` it also times chapter 1's slowest corners (0.5 ms steps with each integrator, armature 0.1, the 20 ms
Euler corner): the change into each, then N kp and N armature moves there. In the same run
it times the naive approach on chapter 1's changes: rerun every computation (no cache), build a whole new pyplot
figure and render it inline as PNG (what ``%matplotlib inline`` does at the end of a cell).

Prints a table (chapter, control, median and 95th percentile in ms, median to the complete figure, median CPU ms of
the answer on the calling thread), then the last
line ``panel <X> ms (worst median: <chapter> <control>), p95 <Y> ms, naive <Z> ms, ratio <Z/X>``: X the worst
control's median, Y the worst 95th percentile, Z the naive median, all measured in this run.

Run: ``.venv/bin/python benchmarks/bench_panel.py [--values 10] [--chapters 1 2 3 4 6] [--corners 5]`` (chapter 6 on
request only: its spring is fitted first, about 40 s). With ``--quick``
(as ``make test`` runs it, to keep it working) two values per control, no slow settings and a naive baseline of chapter
1's kp alone: the same table and last line in seconds, figures too few to quote.
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

from physai.engine import arm_replay  # noqa: E402
from physai.experiments import servo_panel, servo_sysid  # noqa: E402
from physai.interface import (actuator_models_panels, live, plots, position_actuators_panels,  # noqa: E402
                              servo_firmware_panels, servo_sysid_panels, where_pd_runs_panels)


def control_values(control, n: int) -> list:
    """``n`` values over a control's whole range, ends included: every option of a choice, log-spaced on a log
    slider, evenly spaced on a linear one."""
    if isinstance(control, live.Choice):
        return [control.options[k % len(control.options)] for k in range(max(n, len(control.options)))]
    low, high = control.min, control.max  # in the slider's displayed unit; live.to_value gives what update takes
    shown = np.geomspace(low, high, n) if isinstance(control, live.LogSlider) else np.linspace(low, high, n)
    return [live.to_value(control, float(v)) for v in shown]


def chapter_panels(chapters) -> dict:
    """chapter number -> a function that makes that chapter's panel (chapter 4's on its held-out episode)."""
    makers = {1: position_actuators_panels.servo_panel, 2: actuator_models_panels.actuator_panel,
              3: where_pd_runs_panels.pd_panel}
    if 4 in chapters:
        _, heldout = servo_sysid.split(servo_sysid.load_book_dataset())
        makers[4] = lambda: servo_sysid_panels.sysid_panel(heldout[0], arm_replay.MENAGERIE)
    if 6 in chapters:  # chapter 6's settings panel on the last fold's spring (its fit takes about 40 s)
        from physai.experiments import servo_firmware, servo_truth
        data = servo_sysid.load_book_dataset()
        last = servo_truth.compare_structures(data, rivals=())[-1]
        held = next(e for e in data.episodes if e.index == last.heldout)
        load = servo_firmware.heaviest_load(data)[1]
        makers[6] = lambda: servo_firmware_panels.settings_panel(last.models['spring'], held, load)
    return {c: makers[c] for c in chapters}


def time_change(panel, changes: dict) -> tuple[float, float, float]:
    """(ms to the new PNG, ms to the complete figure, CPU ms of the answer): one change, then its deferred parts
    drawn (the panel's worker fills them in; waiting for it keeps one change's background work out of the next
    one's time). The CPU time is the calling thread's until the PNG: what the answer costs, whatever else the
    machine is running (wall times on a shared machine are inflated by its load)."""
    start, cpu = time.perf_counter(), time.thread_time()
    png = panel.update(**changes)
    first, cpu = 1e3 * (time.perf_counter() - start), 1e3 * (time.thread_time() - cpu)
    assert png.startswith(b'\x89PNG'), changes
    panel.wait()
    return first, 1e3 * (time.perf_counter() - start), cpu


def time_controls(panel, n: int, at: dict | None = None) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Per control, the latencies (ms to the new PNG, ms to the complete figure, CPU ms) of ``n`` changes, each from the
    panel's default setting, or from the setting ``at`` (changes of the defaults; its own controls are not moved)."""
    times = {}
    for name, control in panel.controls.items():
        if at and name in at:
            continue
        times[name] = ([], [], [])
        for value in control_values(control, n):
            panel.reset()
            if at:
                panel.update(**at)
            panel.wait()
            for column, ms in zip(times[name], time_change(panel, {name: value})):
                column.append(ms)
    return times


CORNERS = [{'timestep': 0.0005, 'integrator': i} for i in ('RK4', 'implicitfast', 'Euler')] + [
    {'timestep': 0.0005, 'integrator': 'RK4', 'armature': 0.1},
    {'timestep': 0.02, 'integrator': 'Euler', 'armature': 0.0}]
"""Chapter 1's slowest corners: 0.5 ms steps (6000 per step response), RK4, armature 0.1, and the 20 ms Euler
corner where most runs diverge."""


SLOW_SETTINGS = {
    1: [{'timestep': 0.0005, 'integrator': 'RK4'}],
    2: [{'timestep': 0.0005, 'model': model} for model in ('ideal PD', 'DC motor', 'delayed PD', 'remotized PD')],
}
"""Per chapter, the settings where every other control is timed too (rows ``control @ setting`` of the table, in
the last line): chapter 1 at 0.5 ms with RK4 (6000 RK4 steps per step response), chapter 2 at 0.5 ms with each
explicit model (6000 steps of a Python loop around mj_step)."""


def setting_name(setting: dict) -> str:
    """'h 0.5 ms RK4', 'h 0.5 ms DC motor': a slow setting as a short label."""
    parts = [f'h {1e3 * v:g} ms' if k == 'timestep' else str(v) for k, v in setting.items()]
    return ' '.join(parts)


def time_corners(panel, n: int) -> list[tuple[str, float, float, float]]:
    """At each corner: the change into it (ms to the new PNG and to the complete figure), then the median of
    ``n`` kp and armature moves made there (ms to the new PNG)."""
    rows = []
    for corner in CORNERS:
        panel.reset()
        panel.wait()
        first, complete, _ = time_change(panel, corner)
        moves = [time_change(panel, {name: value})[0] for name in ('kp', 'armature')
                 for value in control_values(panel.controls[name], n)]
        rows.append((', '.join(f'{k} {v}' for k, v in corner.items()), first, complete,
                     statistics.median(moves), float(np.percentile(moves, 95))))
    return rows


def naive_update(values: dict) -> bytes:
    """Everything from scratch: the three computations, a new figure, an inline PNG."""
    values = {**values, 'dampratio': 1.0, 'q0': -0.5, 'duration': 3.0}
    response = servo_panel.servo_step.__wrapped__(**{k: values[k] for k in (
        'kp', 'armature', 'timestep', 'integrator', 'dampratio', 'q0', 'duration')})
    curve = servo_panel.servo_kp_curve.__wrapped__(**{k: values[k] for k in (
        'armature', 'timestep', 'integrator', 'dampratio', 'q0', 'duration')})
    stab = servo_panel.servo_stability.__wrapped__(**{k: values[k] for k in (
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
    parser.add_argument('--chapters', type=int, nargs='+', default=[1, 2, 3, 4], choices=[1, 2, 3, 4, 6])
    parser.add_argument('--corners', type=int, default=0,
                        help="also time chapter 1's corners, with this many kp and armature moves at each")
    parser.add_argument('--quick', action='store_true',
                        help='2 values per control, no slow settings, naive on kp only: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values = 2

    rows, corners = [], []
    for chapter, make in tqdm(chapter_panels(args.chapters).items(), desc='panels', unit='panel'):
        panel = make()
        timed = [(name, times) for name, times in time_controls(panel, args.values).items()]
        for setting in [] if args.quick else SLOW_SETTINGS.get(chapter, []):
            timed += [(f'{name} @ {setting_name(setting)}', times)
                      for name, times in time_controls(panel, args.values, at=setting).items()]
        for name, (ms, complete, cpu) in timed:
            rows.append((chapter, name, statistics.median(ms), float(np.percentile(ms, 95)),
                         statistics.median(complete), statistics.median(cpu)))
        if chapter == 1 and args.corners:
            corners = time_corners(panel, args.corners)
    print(f'{"chapter":>7}  {"control":<40} {"median ms":>9} {"p95 ms":>8} {"complete ms":>11} {"cpu ms":>7}')
    for chapter, name, median, p95, complete, cpu in rows:
        print(f'{chapter:>7}  {name:<40} {median:9.1f} {p95:8.1f} {complete:11.1f} {cpu:7.1f}')
    if corners:
        print(f'chapter 1 corners: {"setting":<52} {"in ms":>6} {"complete ms":>11} {"moves median":>12} {"p95":>6}')
        for setting, first, complete, median, p95 in corners:
            print(f'{"":>19}{setting:<52} {first:6.1f} {complete:11.1f} {median:12.1f} {p95:6.1f}')

    servo = position_actuators_panels.servo_panel()
    changes = [{name: v} for name, control in servo.controls.items() for v in control_values(control, args.values)
               if name == 'kp' or not args.quick]
    values = {c.name: c.default_value for c in live.common_controls()}
    naive_ms = []
    for change in changes:
        start = time.perf_counter()
        png = naive_update({**values, **change})
        naive_ms.append(1e3 * (time.perf_counter() - start))
        assert png.startswith(b'\x89PNG')

    chapter, name, worst, *_ = max(rows, key=lambda row: row[2])
    p95 = max(row[3] for row in rows)
    naive = statistics.median(naive_ms)
    print(f'panel {worst:.0f} ms (worst median: chapter {chapter} {name}), p95 {p95:.0f} ms, '
          f'naive {naive:.0f} ms, ratio {naive / worst:.1f}')


if __name__ == '__main__':
    main()
