"""Latency of chapter 3's and chapter 4's page panels in the browser, control by control: from a slider input to the
redrawn plots, with MuJoCo running the SO-101's hold (chapter 3) or the held-out episode's replay (chapter 4) in the
page (physai.interface.web_arm; book/_static/panels/where_pd_runs_panels.js, servo_sysid_panels.js).

Builds the scratch page of tests/test_web_arm.py (the chapters' page panels, their first views shortened, the site's
modules and the engine, with tests/browser.py) in a temporary directory, serves it over http and opens it in headless
Chromium (/usr/bin/chromium), MuJoCo started from the page's address. For every control it makes ``--values`` changes spread over the control's range
(log-spaced on kp and the rate, every option of a choice, cycling) and times each, dispatching the input in a task of
its own (as the browser dispatches a slider's input), from the input event to:

(a) first picture: the first slice (5 ms of MuJoCo) of the new run drawn (chapter 3: with the growth plot), as the
    panel records it;
(b) whole: the run (the 3 s hold; the 12 s episode) simulated and drawn with its verdict, as the panel records it
    (the page stays responsive meanwhile: the run goes in slices, one task each);
(c) painted: (b) and then the next animation frame, when the browser paints it.

(a) and (b) are the figures chapters 1 and 2 report (bench_web.py: the handler has rerun MuJoCo and redrawn); (c) adds
the wait for the screen's next frame, up to 17 ms at 60 Hz. The row ``kp, discrete`` moves kp with the discrete
integrator, which MuJoCo 3.14.0 runs in the page like the others.

Baseline in the same run: the chapter's widget (physai.interface.where_pd_runs_panels.pd_widget, or
physai.interface.servo_sysid_panels.sysid_widget) computing the runs of the same kp changes in Python MuJoCo 3.17.0
(latency.kernel_kp_latencies: no drawing).

Prints a table (control, median and 95th percentile of (a), (b) and (c) in ms), then the last line
``chapter <N>: browser first picture <A> ms median, p95 <B>; whole <C> ms median (worst control <W>), p95 <D>;
painted <E> ms median (worst control); goal 50 ms: <met|missed> ...; kernel <Z> ms; ratio kernel / whole
<Z/C>``. This machine is shared: figures measured under other processes' load are inflated.

Run: ``.venv/bin/python benchmarks/bench_web_arm.py [--chapter 3|4] [--values 12]``. ``--quick`` (as ``make test``
runs it, to keep it working) makes two changes per control: the same table and lines in seconds, too few to quote.
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

from browser import (CHROMIUM, ENGINE, FRAME_AND_TASK, NO_ENGINE, chromium, open_page,  # noqa: E402
                     scratch_site, serve, wait_live)
from latency import kernel_kp_latencies, preflight, staged_report  # noqa: E402
from test_web_arm import ARM_COLUMN_PX, held_out, pd_blocks, sysid_blocks  # noqa: E402

from physai.interface.servo_sysid_panels import sysid_widget  # noqa: E402
from physai.interface.where_pd_runs_panels import pd_widget  # noqa: E402

MEASURE = """async ([key, name, value]) => {
    const panel = window.physaiPanels[key];
    const input = document.getElementById(`physai-panel-${key}-${name}`);""" + FRAME_AND_TASK + """
    await frame();
    await task();
    const drawn = panel.drawn;
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    while (panel.drawn === drawn) await task();
    await frame();
    return [panel.latencies.at(-1), panel.completeLatencies.at(-1), performance.now() - t0];
}"""


def control_values(chapter: int, n: int) -> dict[str, list]:
    """n positions per control, in the input element's own units; the row ``kp, discrete`` moves kp with the
    discrete integrator selected."""
    log = np.round(np.linspace(0, 1000, n)).astype(int).tolist()      # kp's log slider (chapter 4: kv's too), 0..1000
    if chapter == 4:
        return {
            'kp': log,
            'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
            'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
            'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
            'kv': log,
            'forcerange': np.round(np.linspace(0.2, 5.0, n), 2).tolist(),
            'kp, discrete': log,
        }
    return {
        'rate_hz': log,                                                   # log slider over 0..1000
        'backend': [('in-loop', 'in-step')[i % 2] for i in range(n)],
        'kp': log,
        'kv': np.round(np.linspace(0.0, 10.0, n), 2).tolist(),
        'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
        'kp, discrete': log,
    }


def browser_latencies(chapter: int, n: int) -> dict[str, tuple[list[float], list[float], list[float]]]:
    out = {}
    key = 'pd' if chapter == 3 else 'sysid'
    blocks = pd_blocks() if chapter == 3 else sysid_blocks()
    with (tempfile.TemporaryDirectory() as tmp,
          serve(scratch_site(pathlib.Path(tmp), blocks, max_width=ARM_COLUMN_PX)) as url, chromium() as browser):
        page, _, _ = open_page(browser, f'{url}/?{key}-integrator=implicitfast')
        wait_live(page, key)
        for row, values in control_values(chapter, n).items():
            name, _, integrator = row.partition(', ')
            if integrator:
                page.select_option(f'#physai-panel-{key}-integrator', integrator)
                wait_live(page, key)
            times = [], [], []
            for value in tqdm(values, desc=row, leave=False):
                for column, t in zip(times, page.evaluate(MEASURE, [key, name, value])):
                    column.append(t)
            page.click(f'#physai-panel-{key} button:text("reset")')
            wait_live(page, key)
            out[row] = times
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--chapter', type=int, choices=(3, 4), default=3, help='the chapter whose panel to time')
    parser.add_argument('--values', type=int, default=12, help='changes per control')
    parser.add_argument('--quick', action='store_true', help='2 changes per control: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values = 2
    preflight(CHROMIUM, ENGINE, NO_ENGINE)
    results = browser_latencies(args.chapter, args.values)
    print(f'load average {os.getloadavg()[0]:.1f} after the browser runs')
    panel = pd_widget() if args.chapter == 3 else sysid_widget(*held_out())
    kernel = kernel_kp_latencies(panel, min(args.values, 12), 'kernel kp')
    print(staged_report(f'chapter {args.chapter}', results, kernel))

if __name__ == '__main__':
    main()
