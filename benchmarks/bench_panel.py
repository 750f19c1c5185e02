"""Latency of chapter 1's live servo panel against the naive way of redrawing it.

Drives the panel's own update path (``Panel.update``, the function a slider calls) in a plain process
with no widget front end, over a fixed sequence of slider changes: mostly kp moves, with some
armature, integrator and timestep changes, as an instructor would make them. Each latency runs from
the change to the new PNG bytes. In the same run it times the naive approach for the same changes:
rerun every computation (no cache), build a whole new pyplot figure and render it inline as PNG
(what ``%matplotlib inline`` does at the end of a cell).

Last line: ``panel <X> ms, naive <Y> ms, ratio <Y/X>``: medians over the same changes (the first
``--naive`` of the sequence), each timed both ways.

Run: ``.venv/bin/python benchmarks/bench_panel.py [--changes 80] [--naive 15]``
"""

from __future__ import annotations

import argparse
import io
import math
import statistics
import time

import matplotlib

matplotlib.use('agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from physai.experiments import position_actuators
from physai.interface import live, plots, position_actuators_panels
from physai.laws.checks import INTEGRATORS


def slider_changes(n: int, seed: int = 0) -> list[dict]:
    """A reproducible sequence of single-control changes: ~75 % kp, the rest the other three."""
    rng = np.random.default_rng(seed)
    position = math.log10(100.0)
    changes = []
    for k in range(n):
        if k % 20 == 10:
            changes.append({'timestep': float(rng.choice([0.001, 0.002, 0.005, 0.01, 0.02]))})
        elif k % 12 == 6:
            changes.append({'integrator': str(rng.choice(INTEGRATORS))})
        elif k % 6 == 3:
            changes.append({'armature': float(np.round(rng.uniform(0.0, 0.1), 4))})
        else:  # a drag of the kp slider: a few slider steps either way
            position = float(np.clip(position + rng.normal(0, 0.15), 0.0, math.log10(30000.0)))
            changes.append({'kp': 10 ** position})
    return changes


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
    parser.add_argument('--changes', type=int, default=80, help='slider changes for the panel')
    parser.add_argument('--naive', type=int, default=15, help='changes timed for the naive way')
    args = parser.parse_args()

    changes = slider_changes(args.changes)
    panel = position_actuators_panels.servo_panel()
    panel_ms = []
    for change in changes:
        start = time.perf_counter()
        png = panel.update(**change)
        panel_ms.append(1e3 * (time.perf_counter() - start))
        assert png.startswith(b'\x89PNG') and panel.error is None, panel.error
    kp_ms = [ms for ms, c in zip(panel_ms, changes) if 'kp' in c]
    other_ms = [ms for ms, c in zip(panel_ms, changes) if 'kp' not in c]

    values = {c.name: c.default_value for c in live.common_controls()}
    naive_ms = []
    for change in changes[:args.naive]:
        values.update(change)
        start = time.perf_counter()
        png = naive_update(values)
        naive_ms.append(1e3 * (time.perf_counter() - start))
        assert png.startswith(b'\x89PNG')

    # the ratio compares the same changes: the first len(naive_ms) of the sequence, timed both ways
    panel_median = statistics.median(panel_ms[:len(naive_ms)])
    naive_median = statistics.median(naive_ms)
    print(f'{len(panel_ms)} panel updates: kp moves median {statistics.median(kp_ms):.1f} ms '
          f'({len(kp_ms)}), other controls median {statistics.median(other_ms):.1f} ms '
          f'({len(other_ms)}), all {statistics.median(panel_ms):.1f} ms, max {max(panel_ms):.1f} ms, '
          f'full redraws {panel.full_redraws}')
    print(f'{len(naive_ms)} naive updates: median {naive_median:.1f} ms, max {max(naive_ms):.1f} ms')
    print(f'panel {panel_median:.1f} ms, naive {naive_median:.1f} ms, '
          f'ratio {naive_median / panel_median:.1f}')


if __name__ == '__main__':
    main()
