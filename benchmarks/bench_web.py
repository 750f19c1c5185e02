"""Latency of chapter 1's live panel in the browser, control by control: from a slider input to the redrawn step
response, with MuJoCo running in the page (physai.interface.web, book/_static/physai-live.js).

Builds the scratch page of tests/test_web.py (chapter 1's twin and live block, the site's _static files and the
engine) in a temporary directory, serves it over http and opens it in headless Chromium (/usr/bin/chromium). For
every control it makes ``--values`` changes spread over the control's range (log-spaced on kp, every option of a
choice, cycling) and times each inside the page: from just before the input event is dispatched to (a) the return
of the panel's handler, which has rerun MuJoCo and redrawn the step response, and (b) the next painted frame (two
animation frames later). The kp curve and the stability map run in the panel's Web Worker meanwhile; the main
thread never waits for them, which is what these figures show.

Baseline in the same run: the kernel's panel (physai.interface.position_actuators_panels.servo_panel) updating for
the same kp changes (rerun with Python MuJoCo and redraw the PNG).

Prints a table (control, median and 95th percentile of (a) and (b) in ms), then the last line
``browser <X> ms median (worst control <C>), p95 <Y> ms; goal 50 ms: <met|missed>; kernel panel <Z> ms; ratio <Z/X>``.
This machine is shared: figures measured under other processes' load are inflated.

Run: ``.venv/bin/python benchmarks/bench_web.py [--values 40]``
"""

from __future__ import annotations

import argparse
import functools
import http.server
import math
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time

import numpy as np
from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))

from test_web import CHROMIUM, CHROMIUM_ARGS, build_scratch_site  # noqa: E402

from physai.interface.position_actuators_panels import servo_panel  # noqa: E402

MEASURE = """async ([name, value]) => {
    const input = document.getElementById(`physai-live-servo-${name}`);
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    await frame();
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    const handled = performance.now() - t0;
    await frame();
    await frame();
    return [handled, performance.now() - t0];
}"""


def control_values(n: int) -> dict[str, list]:
    """n slider positions per control, spread over the range (the input element's own units)."""
    kp_positions = np.round(np.linspace(0, 1000, n)).astype(int).tolist()  # the kp slider is log over 0..1000
    return {
        'kp': kp_positions,
        'armature': np.round(np.linspace(0.0, 0.1, n) / 0.0005).astype(int).tolist(),  # in 0.0005 steps
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast')[i % 4] for i in range(n)],
        'dampratio': [(0, 0.5, 1, 2)[i % 4] for i in range(n)],
    }


def serve(directory: pathlib.Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser_latencies(n: int) -> dict[str, tuple[list[float], list[float]]]:
    from playwright.sync_api import sync_playwright
    out = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        site = build_scratch_site(pathlib.Path(tmp))
        server = serve(site)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={'width': 1280, 'height': 800})
        page.goto(f'http://127.0.0.1:{server.server_port}/?servo-kp=100')
        page.wait_for_selector('#physai-live-servo[data-state=live]', state='attached', timeout=120000)
        values = control_values(n)
        for name, positions in values.items():
            if name == 'armature':
                positions = [round(k * 0.0005, 4) for k in positions]
            handled, painted = [], []
            for value in tqdm(positions, desc=name, leave=False):
                a, b = page.evaluate(MEASURE, [name, value])
                handled.append(a)
                painted.append(b)
            page.click('#physai-live-servo-panel button:text("reset")')
            out[name] = (handled, painted)
        browser.close()
        server.shutdown()
    return out


def kernel_latencies(n: int) -> list[float]:
    """The kernel's panel on the same kp positions (fresh values, so no cache hit)."""
    panel = servo_panel()
    panel.update()
    times = []
    for position in tqdm(np.linspace(0, 1000, n), desc='kernel kp', leave=False):
        kp = float(30000 ** (position / 1000)) * (1 + 1e-9)
        start = time.perf_counter()
        panel.values['kp'] = kp
        panel.update()
        times.append(1e3 * (time.perf_counter() - start))
    return times


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--values', type=int, default=40, help='changes per control')
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f'{CHROMIUM} is missing')
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures include other processes\' load)')
    results = browser_latencies(args.values)
    print(f'{"control":<12}{"median ms":>11}{"p95 ms":>9}{"painted median":>16}{"painted p95":>13}')
    for name, (handled, painted) in results.items():
        print(f'{name:<12}{statistics.median(handled):>11.1f}{p95(handled):>9.1f}'
              f'{statistics.median(painted):>16.1f}{p95(painted):>13.1f}')
    kernel = kernel_latencies(min(args.values, 20))
    worst = max(results, key=lambda k: statistics.median(results[k][0]))
    x = statistics.median(results[worst][0])
    y = max(p95(h) for h, _ in results.values())
    z = statistics.median(kernel)
    print(f'browser {x:.1f} ms median (worst control {worst}), p95 {y:.1f} ms; goal 50 ms: '
          f'{"met" if x < 50 else "missed"}; kernel panel {z:.1f} ms; ratio {z / x if x > 0 else math.inf:.1f}')


if __name__ == '__main__':
    main()
