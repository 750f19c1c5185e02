"""What the browser benchmarks (bench_web.py, bench_web_arm.py, bench_web_firmware.py) share: the check that the browser
and the engine are there, the baseline they measure in the same run (a chapter's widget computing the same kp moves in Python), the
95th percentile they print and the report of a panel timed to its first picture, its whole run and the frame after."""

from __future__ import annotations

import os
import pathlib
import statistics
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


def kernel_latencies(widget, changes: list[dict], desc: str) -> list[float]:
    """ms the chapter's widget (``physai.interface.widget.PanelWidget``) takes in the kernel for a whole setting, for
    each of ``changes`` (values over its defaults, SI units): the parts of its first reply and every part it defers
    (Python MuJoCo, no drawing; chapter 3's widget adds its 64-run ensemble and chapter 4's its three nudged replays,
    which the page does not run); after one setting to warm up."""
    def whole(values: dict) -> None:
        widget.frame(values)
        checked = widget.spec.check(values)
        for part in widget.later.values():
            if not part.ready(checked):
                part.compute(checked)

    defaults = widget.spec.defaults
    whole(defaults)
    times = []
    for change in tqdm(changes, desc=desc, leave=False):
        start = time.perf_counter()
        whole({**defaults, **change})
        times.append(1e3 * (time.perf_counter() - start))
    return times


def kernel_kp_latencies(widget, n: int, desc: str) -> list[float]:
    """:func:`kernel_latencies` over ``n`` values of the widget's kp slider, log-spaced over its range."""
    kp = next(c for c in widget.spec.controls if c.name == 'kp')
    low, high = kp.min * kp.scale, kp.max * kp.scale
    return kernel_latencies(widget, [{'kp': float(low * (high / low) ** x)} for x in np.linspace(0, 1, n)], desc)


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def staged_report(label: str, results: dict[str, tuple[list[float], list[float], list[float]]],
                  kernel: list[float], run: str = 'run') -> str:
    """Print the table of a panel timed per control to its first picture, its whole ``run`` and the next frame after
    it (ms, each a list of changes), and return the summary line: the first pictures over all controls, the worst
    control's whole run, the 50 ms goal for each, and the kernel's widget on kp moves (``kernel``) as the baseline."""
    width = max(14, *(len(name) + 2 for name in results))
    print(f'{"control":<{width}}{"first picture median":>22}{"p95":>8}{"whole median":>14}{"p95":>8}'
          f'{"painted median":>16}{"p95":>8}   ms')
    for name, columns in results.items():
        print(f'{name:<{width}}' + ''.join(f'{statistics.median(c):>{w}.1f}{p95(c):>8.1f}'
                                           for c, w in zip(columns, (22, 14, 16))))
    firsts = [x for first, _, _ in results.values() for x in first]
    first = statistics.median(firsts)
    worst = max(results, key=lambda k: statistics.median(results[k][1]))
    whole = statistics.median(results[worst][1])
    painted = max(statistics.median(c[2]) for c in results.values())
    z = statistics.median(kernel)
    return (f'{label}: browser first picture {first:.1f} ms median, p95 {p95(firsts):.1f}; '
            f'whole {whole:.1f} ms median (worst control {worst}), '
            f'p95 {max(p95(c[1]) for c in results.values()):.1f}; painted {painted:.1f} ms median (worst control); '
            f'goal 50 ms: {"met" if first < 50 else "missed"} for the first picture, '
            f'{"met" if whole < 50 else "missed"} for the whole {run}; kernel {z:.1f} ms; '
            f'ratio kernel / whole {z / whole:.2f}')
