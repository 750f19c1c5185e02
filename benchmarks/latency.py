"""What the browser benchmarks (bench_web.py, bench_web_arm.py) share: the check that the browser and the engine are
there, the baseline they measure in the same run (a chapter's kernel panel answering kp moves) and the 95th
percentile they print."""

from __future__ import annotations

import os
import pathlib
import time

import numpy as np
from tqdm import tqdm


def preflight(chromium: str, engine: pathlib.Path, no_engine: str) -> None:
    """Stop with a one-line message when Chromium or MuJoCo's WebAssembly build is missing; print the machine's load."""
    if not os.path.exists(chromium):
        raise SystemExit(f'{chromium} is missing')
    if not engine.is_file():
        raise SystemExit(no_engine)
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures include other processes\' load)')


def kernel_kp_latencies(panel, n: int, desc: str) -> list[float]:
    """ms per update of a kernel panel (``physai.interface.live``) over ``n`` positions of its kp slider, 1 to 30000
    N·m/rad log-spaced, each value nudged so that no cache answers; after one update to warm it up."""
    panel.update()
    times = []
    for position in tqdm(np.linspace(0, 1000, n), desc=desc, leave=False):
        panel.values['kp'] = float(30000 ** (position / 1000)) * (1 + 1e-9)
        start = time.perf_counter()
        panel.update()
        times.append(1e3 * (time.perf_counter() - start))
    return times


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))
