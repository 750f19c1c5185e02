"""Latency of chapter 6's page panel in the browser, control by control: from a slider input to the redrawn step and
segment, with MuJoCo running both in the page (physai.interface.web_firmware; book/_static/panels/
servo_firmware_panels.js, firmware_runs.js).

Builds the scratch page of tests/test_web_firmware.py (the panel, its first view shortened, the site's modules and the
engine) in a temporary directory, serves it over http and opens it in headless Chromium, MuJoCo started from the
page's address, and times every control as benchmarks/bench_web_arm.py times chapters 3 and 4 (its MEASURE): (a) the
first picture (the first slice of the new runs drawn, or the whole when it fits in one slice), (b) the whole (the
1.5 s step and the 6 s segment simulated and drawn with the readouts), (c) painted ((b) and the next animation frame).
``--values`` changes per control, spread over its range (every option of the integrator, cycling).

Baseline in the same run: the chapter's widget (physai.interface.servo_firmware_panels.settings_widget) computing
the runs of ``--values`` P registers in Python MuJoCo 3.17.0 (latency.kernel_latencies: no drawing).

Prints the table, then the last line ``chapter 6: browser first picture <A> ms median, p95 <B>; whole <C> ms median
(worst control <W>), p95 <D>; painted <E> ms median (worst control); goal 50 ms: <met|missed> ...; kernel
<Z> ms``.
This machine is shared: figures measured under other processes' load are inflated.

Run: ``.venv/bin/python benchmarks/bench_web_firmware.py [--values 12]``; ``--quick``: two changes per control.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

import numpy as np
from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'benchmarks'))

from bench_web_arm import MEASURE  # noqa: E402
from browser import CHROMIUM, ENGINE, NO_ENGINE, chromium, open_page, scratch_site, serve, wait_live  # noqa: E402
from latency import kernel_latencies, preflight, staged_report  # noqa: E402
from test_web_firmware import LOAD, firmware_blocks, held_out, spring  # noqa: E402

from physai.interface.servo_firmware_panels import settings_widget  # noqa: E402

KEY = 'firmware'


def control_values(n: int) -> dict[str, list]:
    """n positions per control, in the input element's own units."""
    return {
        'p_register': np.round(np.linspace(1, 64, n)).astype(int).tolist(),
        'supply_voltage': np.round(np.linspace(5.0, 12.6, n), 1).tolist(),
        'torque_limit': (np.round(np.linspace(100, 1000, n) / 10) * 10).astype(int).tolist(),
        'goal_speed': (np.round(np.linspace(0, 4000, n) / 50) * 50).astype(int).tolist(),
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
    }


def browser_latencies(n: int) -> dict[str, tuple[list[float], list[float], list[float]]]:
    out = {}
    with (tempfile.TemporaryDirectory() as tmp,
          serve(scratch_site(pathlib.Path(tmp), firmware_blocks(), max_width=1200)) as url, chromium() as browser):
        page, _, _ = open_page(browser, f'{url}/?{KEY}-integrator=implicitfast')
        wait_live(page, KEY)
        for name, values in control_values(n).items():
            times = [], [], []
            for value in tqdm(values, desc=name, leave=False):
                for column, t in zip(times, page.evaluate(MEASURE, [KEY, name, value])):
                    column.append(t)
            page.click(f'#physai-panel-{KEY} button:text("reset")')
            wait_live(page, KEY)
            out[name] = times
    return out


def kernel_p_latencies(n: int) -> list[float]:
    """ms of the kernel's widget for the runs of n P registers (latency.kernel_latencies), each with its own supply
    voltage so that no cache answers."""
    widget = settings_widget(spring(), held_out(), LOAD)
    return kernel_latencies(widget, [{'p_register': float(round(p)), 'supply_voltage': 7.4 + 1e-9 * p}
                                     for p in np.linspace(1, 64, n)], 'kernel P')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--values', type=int, default=12, help='changes per control')
    parser.add_argument('--quick', action='store_true', help='2 changes per control: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values = 2
    preflight(CHROMIUM, ENGINE, NO_ENGINE)
    results = browser_latencies(args.values)
    print(f'load average {os.getloadavg()[0]:.1f} after the browser runs')
    kernel = kernel_p_latencies(min(args.values, 12))
    print(staged_report('chapter 6', results, kernel))

if __name__ == '__main__':
    main()
