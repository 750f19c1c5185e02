"""Latency of the page panels in the browser, control by control: from a slider input to the redrawn step response,
with MuJoCo running in the page (physai.interface.web; book/_static/panels/position_actuators_panels.js for chapter 1's
panel, actuator_models_panels.js for chapter 2's, gripper_panels.js for chapter 5's).

Builds the scratch page of tests/test_web_pendulum.py (chapter 1's and chapter 2's page panels, the site's modules
and the engine, with tests/browser.py) in a temporary directory, serves it over http and opens it in headless
Chromium (/usr/bin/chromium), MuJoCo started from the page's address. For every control of a panel it makes ``--values`` changes spread over the
control's range (log-spaced on kp and kv, every option of a choice, cycling) and times each inside the page,
dispatching the input in a task of its own (as the browser dispatches a slider's input): from just before the input
event is dispatched to (a) the return of the panel's handler, which has rerun MuJoCo and redrawn the step response,
and (b) the next animation frame, when the browser paints it (up to 17 ms after (a) at 60 Hz). Chapter 1's kp curve
and stability map run in the panel's Web Worker meanwhile; the main thread never waits for them, which is what these
figures show. Chapter 2's velocity limit is timed on the DC motor and its delay on the delayed PD (the models that use
them). The row ``kp, discrete`` moves kp with the discrete integrator, which MuJoCo 3.14.0 runs in the page like the
others.

Baseline in the same run: each chapter's widget (physai.interface.widget.servo_widget,
actuator_models_panels.pendulum_widget, gripper_panels.gripper_widget) computing the runs of the same kp changes in
Python MuJoCo (latency.kernel_kp_latencies: no drawing).

Prints a table per chapter (control, median and 95th percentile of (a) and (b) in ms) and a line per chapter
``chapter N: browser <X> ms median (worst control <C>), p95 <Y> ms; goal 50 ms: <met|missed>; kernel <Z> ms;
ratio <Z/X>``. This machine is shared: figures measured under other processes' load are inflated.

Chapter 5's grasp (the gripper closing on the cube, then holding it: 2 s of contacts, 400 MuJoCo steps at the panel's
5 ms, thousands at a fine timestep) goes in slices, as chapters 3 and 4's runs do (bench_web_arm.py), so its table
has their three columns: (a) the first slice drawn, (b) the whole grasp drawn with its verdict, (c) (b) and the next
animation frame; its line is theirs (latency.staged_report): ``chapter 5: browser first picture <A> ms median, p95 <B>;
whole <C> ms median (worst control <W>), p95 <D>; painted <E> ms median (worst control); goal 50 ms: ...; kernel
<Z> ms; ratio kernel / whole <R>``.

Run: ``.venv/bin/python benchmarks/bench_web.py [--values 40] [--chapters 1 2 5]``. ``--quick`` (as ``make test`` runs
it, to keep it working) makes two changes per control: the same table and lines in seconds, figures too few to quote.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import statistics
import sys
import tempfile

import numpy as np
from tqdm import tqdm

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))

from browser import (CHROMIUM, ENGINE, FRAME_AND_TASK, NO_ENGINE, chromium, open_page,  # noqa: E402
                     scratch_site, serve, wait_live)
from bench_web_arm import MEASURE as SLICED  # noqa: E402  a sliced panel's input: first slice, whole run, next frame
from latency import kernel_kp_latencies, p95, preflight, staged_report  # noqa: E402
from test_web import servo_blocks  # noqa: E402
from test_web_pendulum import pendulum_blocks  # noqa: E402
from test_web_gripper import gripper_blocks  # noqa: E402

from physai.interface.actuator_models_panels import pendulum_widget  # noqa: E402
from physai.interface.gripper_panels import gripper_widget  # noqa: E402
from physai.interface.widget import servo_widget  # noqa: E402

MEASURE = """async ([id, value]) => {
    const input = document.getElementById(id);""" + FRAME_AND_TASK + """
    await frame();
    await task();
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    const handled = performance.now() - t0;
    await frame();
    return [handled, performance.now() - t0];
}"""




def gripper_values(n: int) -> dict[str, list]:
    """Chapter 5: n positions per control (kp, the mass and the friction are log sliders over 0..1000), every choice."""
    log = np.round(np.linspace(0, 1000, n)).astype(int).tolist()
    return {
        'torque_limit': np.round(np.linspace(0.1, 4.0, n), 2).tolist(),
        'kp': log,
        'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
        'command': [('just inside the cube', 'shut')[i % 2] for i in range(n)],
        'mass': log,
        'mu': log,
        'condim': [('1', '3', '4', '6')[i % 4] for i in range(n)],
    }


def gripper_latencies(n: int) -> dict[str, tuple[list[float], list[float], list[float]]]:
    """Chapter 5's page panel, live: (first picture, whole, painted) ms per change, by control."""
    out = {}
    with (tempfile.TemporaryDirectory() as tmp, serve(scratch_site(pathlib.Path(tmp), gripper_blocks())) as url,
          chromium() as browser):
        page, _, _ = open_page(browser, f'{url}/?gripper-integrator=implicitfast')
        wait_live(page, 'gripper')
        for name, positions in gripper_values(n).items():
            times = [], [], []
            for value in tqdm(positions, desc=f'chapter 5 {name}', leave=False):
                for column, t in zip(times, page.evaluate(SLICED, ['gripper', name, value])):
                    column.append(t)
            page.click('#physai-panel-gripper button:text("reset")')
            wait_live(page, 'gripper')
            out[name] = times
        page.close()
    return out


def control_values(n: int) -> dict[str, list]:
    """Chapter 1: n slider positions per control, spread over the range (the input element's own units)."""
    kp_positions = np.round(np.linspace(0, 1000, n)).astype(int).tolist()  # the kp slider is log over 0..1000
    return {
        'kp': kp_positions,
        'armature': np.round(np.linspace(0.0, 0.1, n) / 0.0005).astype(int).tolist(),  # in 0.0005 steps
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
        'dampratio': [(0, 0.5, 1, 2)[i % 4] for i in range(n)],
        'kp, discrete': kp_positions,
    }


def pendulum_values(n: int) -> dict[str, list]:
    """Chapter 2: n positions per control (kp and kv are log sliders over 0..1000), every model and integrator."""
    log = np.round(np.linspace(0, 1000, n)).astype(int).tolist()
    models = ('implicit', 'ideal PD', 'DC motor', 'delayed PD', 'remotized PD')
    return {
        'model': [models[i % 5] for i in range(n)],
        'kp': log,
        'armature': [round(x, 4) for x in np.round(np.linspace(0.0, 0.1, n) / 0.0005) * 0.0005],
        'timestep': np.round(np.linspace(0.5, 20.0, n), 1).tolist(),
        'integrator': [('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')[i % 5] for i in range(n)],
        'kv': log,
        'forcerange': np.round(np.linspace(0.5, 100.0, n) * 2).astype(int).tolist(),  # in 0.5 steps, halved below
        'velocity_limit': np.round(np.linspace(1, 40, n)).astype(int).tolist(),
        'delay': np.round(np.linspace(0, 60, n)).astype(int).tolist(),
        'kp, discrete': log,
    }


PENDULUM_MODEL_FOR = {'velocity_limit': 'DC motor', 'delay': 'delayed PD'}
"""Chapter 2's controls timed on the model that uses them."""


def browser_latencies(n: int, chapters: list[int]) -> dict[int, dict[str, tuple[list[float], list[float]]]]:
    out: dict[int, dict] = {}
    blocks = (servo_blocks() if 1 in chapters else '') + (pendulum_blocks() if 2 in chapters else '')
    with (tempfile.TemporaryDirectory() as tmp, serve(scratch_site(pathlib.Path(tmp), blocks)) as url,
          chromium() as browser):
        for chapter in chapters:
            key, values = ('servo', control_values(n)) if chapter == 1 else ('pendulum', pendulum_values(n))
            page, _, _ = open_page(browser, f'{url}/?{key}-kp=100')
            wait_live(page, key)
            reset = f'#physai-panel-{key} button:text("reset")'
            out[chapter] = {}
            for row, positions in values.items():
                # a row 'kp, discrete' moves kp with the discrete integrator: the panel shows precomputed runs
                name, _, integrator = row.partition(', ')
                if integrator:
                    page.select_option(f'#physai-panel-{key}-integrator', integrator)
                if chapter == 1 and name == 'armature':
                    positions = [round(k * 0.0005, 4) for k in positions]
                if chapter == 2 and name == 'forcerange':
                    positions = [k / 2 for k in positions]
                if chapter == 2 and name in PENDULUM_MODEL_FOR:
                    page.select_option(f'#physai-panel-{key}-model', PENDULUM_MODEL_FOR[name])
                handled, painted = [], []
                for value in tqdm(positions, desc=f'chapter {chapter} {row}', leave=False):
                    a, b = page.evaluate(MEASURE, [f'physai-panel-{key}-{name}', value])
                    handled.append(a)
                    painted.append(b)
                page.click(reset)
                out[chapter][row] = (handled, painted)
            page.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--values', type=int, default=40, help='changes per control')
    parser.add_argument('--chapters', type=int, nargs='+', default=[1, 2, 5], choices=[1, 2, 5],
                        help='the chapters whose panels are timed')
    parser.add_argument('--quick', action='store_true', help='2 changes per control: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values = 2
    preflight(CHROMIUM, ENGINE, NO_ENGINE)
    early = [c for c in args.chapters if c in (1, 2)]
    results = browser_latencies(args.values, early) if early else {}
    summary = []
    for chapter, by_control in results.items():
        print(f'chapter {chapter}')
        print(f'{"control":<16}{"median ms":>11}{"p95 ms":>9}{"painted median":>16}{"painted p95":>13}')
        for name, (handled, painted) in by_control.items():
            print(f'{name:<16}{statistics.median(handled):>11.1f}{p95(handled):>9.1f}'
                  f'{statistics.median(painted):>16.1f}{p95(painted):>13.1f}')
        panel = servo_widget() if chapter == 1 else pendulum_widget()
        kernel = kernel_kp_latencies(panel, min(args.values, 20), f'chapter {chapter} kernel kp')
        worst = max(by_control, key=lambda k: statistics.median(by_control[k][0]))
        x = statistics.median(by_control[worst][0])
        y = max(p95(h) for h, _ in by_control.values())
        z = statistics.median(kernel)
        summary.append(f'chapter {chapter}: browser {x:.1f} ms median (worst control {worst}), p95 {y:.1f} ms; '
                       f'goal 50 ms: {"met" if x < 50 else "missed"}; kernel {z:.1f} ms; '
                       f'ratio {z / x if x > 0 else math.inf:.2g}')
    if 5 in args.chapters:
        summary.append(gripper_summary(args.values))
    print('\n'.join(summary))


def gripper_summary(n: int) -> str:
    """Chapter 5's table printed, and its line returned."""
    results = gripper_latencies(n)
    print('chapter 5')
    kernel = kernel_kp_latencies(gripper_widget(), min(n, 12), 'chapter 5 kernel kp')
    return staged_report('chapter 5', results, kernel, run='grasp')

if __name__ == '__main__':
    main()
