"""Latency of chapter 3's and chapter 4's live panels in the browser, control by control: from a slider input to the
redrawn plots, with MuJoCo running the SO-101's hold (chapter 3) or the held-out episode's replay (chapter 4) in the
page (physai.interface.web_arm, book/_static/physai-live-arm.js).

Builds the scratch page of tests/test_web_arm.py (the chapter's twin or a stand-in for it, the live block, the site's
_static files and the engine) in a temporary directory, serves it over http and opens it in headless Chromium
(/usr/bin/chromium). For every control it makes ``--values`` changes spread over the control's range (log-spaced on
kp and the rate, every option of a choice, cycling) and times each inside the page, from just before the input event
is dispatched to:

(a) first paint: the first slice (5 ms of MuJoCo) of the new run drawn (chapter 3: with the growth plot), then the
    next painted frame;
(b) whole: the run (the 3 s hold; the 12 s episode) simulated and drawn with its verdict (the page stays
    responsive meanwhile: the run goes in slices, one task each).

Baseline in the same run: the kernel's panel (physai.interface.where_pd_runs_panels.pd_panel, or
physai.interface.servo_sysid_panels.sysid_panel) updating for the same kp changes (rerun with Python MuJoCo 3.17.0
and redraw the PNG).

Prints a table (control, median and 95th percentile of (a) and (b) in ms), then the last line
``chapter <N>: browser first paint <A> ms median, p95 <B>; whole <C> ms median (worst control <W>), p95 <D>;
goal 50 ms: <met|missed> ...; kernel panel <Z> ms; ratio kernel / whole <Z/C>``. This machine is shared: figures
measured under other processes' load are inflated.

Run: ``.venv/bin/python benchmarks/bench_web_arm.py [--chapter 3|4] [--values 12]``
"""

from __future__ import annotations

import argparse
import functools
import http.server
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

from test_web_arm import CHROMIUM, CHROMIUM_ARGS, build_scratch_site, held_out  # noqa: E402

from physai.interface import web_arm  # noqa: E402
from physai.interface.servo_sysid_panels import sysid_panel, sysid_twin  # noqa: E402
from physai.interface.where_pd_runs_panels import pd_panel  # noqa: E402

MEASURE = """async ([key, name, value]) => {
    const panel = window.physaiLive[key];
    const input = document.getElementById(`physai-live-${key}-${name}`);
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    await frame();
    const before = panel.drawn, firsts = panel.latencies.length;
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    while (panel.latencies.length === firsts) await new Promise((resolve) => setTimeout(resolve, 0));
    await frame();
    const first = performance.now() - t0;
    while (panel.drawn === before) await new Promise((resolve) => setTimeout(resolve, 0));
    await frame();
    return [first, performance.now() - t0];
}"""


def control_values(chapter: int, n: int) -> dict[str, list]:
    """n positions per control, in the input element's own units."""
    if chapter == 4:
        return {
            'kp': np.round(np.linspace(0, 1000, n)).astype(int).tolist(),      # log slider over 0..1000
            'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
            'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
            'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast')[i % 4] for i in range(n)],
            'kv': np.round(np.linspace(0, 1000, n)).astype(int).tolist(),      # log slider over 0..1000
            'forcerange': np.round(np.linspace(0.2, 5.0, n), 2).tolist(),
        }
    return {
        'rateHz': np.round(np.linspace(0, 400, n)).astype(int).tolist(),   # log slider over 0..400
        'backend': [('in-loop', 'in-step')[i % 2] for i in range(n)],
        'kp': np.round(np.linspace(0, 1000, n)).astype(int).tolist(),      # log slider over 0..1000
        'kv': np.round(np.linspace(0.0, 10.0, n), 2).tolist(),
        'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast')[i % 4] for i in range(n)],
    }


def serve(directory: pathlib.Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser_latencies(chapter: int, n: int) -> dict[str, tuple[list[float], list[float]]]:
    from playwright.sync_api import sync_playwright
    out = {}
    key = 'pd' if chapter == 3 else 'sysid'
    idle = f"() => document.querySelector('#physai-live-{key}-panel').dataset.state === 'idle'"
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        if chapter == 3:
            site = build_scratch_site(pathlib.Path(tmp))
        else:
            episode, base = held_out()
            site = build_scratch_site(pathlib.Path(tmp), sysid_twin(episode, base, kps=(10.0, 1000.0)).data,
                                      web_arm.sysid_live(episode, base).data)
        server = serve(site)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={'width': 1280, 'height': 800})
        page.goto(f'http://127.0.0.1:{server.server_port}/?{key}-integrator=implicitfast')
        page.wait_for_selector(f'#physai-live-{key}[data-state=live]', state='attached', timeout=120000)
        page.wait_for_function(idle)
        for name, values in control_values(chapter, n).items():
            first, whole = [], []
            for value in tqdm(values, desc=name, leave=False):
                a, b = page.evaluate(MEASURE, [key, name, value])
                first.append(a)
                whole.append(b)
            page.click(f'#physai-live-{key}-panel button:text("reset")')
            page.wait_for_function(idle)
            out[name] = (first, whole)
        browser.close()
        server.shutdown()
    return out


def kernel_latencies(chapter: int, n: int) -> list[float]:
    """The kernel's panel on the same kp positions (fresh values, so no cache hit)."""
    panel = pd_panel() if chapter == 3 else sysid_panel(*held_out())
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
    parser.add_argument('--chapter', type=int, choices=(3, 4), default=3, help='the chapter whose panel to time')
    parser.add_argument('--values', type=int, default=12, help='changes per control')
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f'{CHROMIUM} is missing')
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures include other processes\' load)')
    results = browser_latencies(args.chapter, args.values)
    print(f'{"control":<12}{"first paint median":>20}{"p95":>8}{"whole median":>14}{"p95":>8}   ms')
    for name, (first, whole) in results.items():
        print(f'{name:<12}{statistics.median(first):>20.1f}{p95(first):>8.1f}'
              f'{statistics.median(whole):>14.1f}{p95(whole):>8.1f}')
    print(f'load average {os.getloadavg()[0]:.1f} after the browser runs')
    kernel = kernel_latencies(args.chapter, min(args.values, 12))
    firsts = [x for first, _ in results.values() for x in first]
    worst = max(results, key=lambda k: statistics.median(results[k][1]))
    whole = statistics.median(results[worst][1])
    z = statistics.median(kernel)
    print(f'chapter {args.chapter}: browser first paint {statistics.median(firsts):.1f} ms median, '
          f'p95 {p95(firsts):.1f}; whole '
          f'{whole:.1f} ms median (worst control {worst}), p95 {max(p95(w) for _, w in results.values()):.1f}; '
          f'goal 50 ms: {"met" if statistics.median(firsts) < 50 else "missed"} for the first paint, '
          f'{"met" if whole < 50 else "missed"} for the whole run; kernel panel {z:.1f} ms; '
          f'ratio kernel / whole {z / whole:.2f}')


if __name__ == '__main__':
    main()
