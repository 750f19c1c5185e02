"""Every chapter's panel in JupyterLab, control by control, against a bare widget round trip timed in the same run.

The panels are Jupyter widgets (:mod:`physai.interface.widget`): the page's own modules draw them, and each control
change asks the kernel for the run at its values. This benchmark starts a local JupyterLab (``tests/jupyter.py``) and
headless Chromium, and on that server:

- the baseline: ``--ping`` round trips of a bare widget that answers at once (a trait set in the page, its echo back),
  what JupyterLab's messages cost with no computation and no drawing;
- for each chapter of ``--chapters``, a notebook whose cell shows the chapter's widget, built from the arguments its
  chapter gives it (chapter 4 on the held-out episode with the published fit, chapter 6 on the held-out episode with
  the published fit on every joint and the recording's heaviest load: the chapters' own fits take minutes); for every
  control, ``--values`` changes spread over its range, ends included (every option of a choice), each from the
  panel's default setting, each timed in the page from the input event to the first redrawn picture (the kernel's
  first reply drawn) and to the complete panel (its slow parts, which the kernel sends as they finish), and Python's
  part of the first reply.

It does all of that twice: on a stock Jupyter Server, then on one started with
``physai.interface.nodelay.NoDelayConnection`` (the kernel's websocket without Nagle's algorithm: see that module).

Prints, per server, a table per chapter (control, median and 95th percentile ms to the first redraw, median to the
complete panel, Python's ms) and a line ``<server>: panel <X> ms (worst median: chapter <c> <control>), bare round
trip <P> ms, ratio <X/P>``; the last line gives both servers' X, P and ratio.

Run: ``.venv/bin/python benchmarks/bench_panel.py [--values 5] [--chapters 1 2 3 4 5 6] [--ping 40]`` (needs
jupyterlab, anywidget and Chromium; the widget's front end is bundled first). ``--quick`` (as ``make test`` runs it,
to keep it working): chapter 1, two values per control, 10 pings: the same tables, figures too few to quote.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.request

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))

from browser import chromium  # noqa: E402
from jupyter import jupyterlab, notebook, run_notebook  # noqa: E402

PING_CELL = r'''
import anywidget, traitlets

class Ping(anywidget.AnyWidget):
    _esm = """
    export default { render({model, el}) {
      window.ping = async (n) => {
        const times = [];
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          await new Promise((resolve) => {
            const f = () => { model.off('change:pong', f); resolve(); };
            model.on('change:pong', f);
            model.set('ping', i + 1 + Math.random());
            model.save_changes();
          });
          times.push(performance.now() - t);
        }
        return times;
      };
      el.textContent = 'ping ready';
      el.id = 'pingready';
    } };
    """
    ping = traitlets.Float(0).tag(sync=True)
    pong = traitlets.Float(0).tag(sync=True)

    def __init__(self):
        super().__init__()
        self.observe(lambda change: setattr(self, 'pong', change['new']), names='ping')

Ping()
'''
"""A widget that echoes the page's trait at once: the baseline round trip."""

CHAPTER_CELLS = {
    1: 'from physai.interface.widget import servo_widget\nservo_widget()',
    2: 'from physai.interface.actuator_models_panels import pendulum_widget\npendulum_widget()',
    3: 'from physai.interface.where_pd_runs_panels import pd_widget\npd_widget()',
    4: ('from physai.engine.arm_replay import PUBLISHED_FIT\nfrom physai.experiments import servo_sysid\n'
        'from physai.interface.servo_sysid_panels import sysid_widget\n'
        'held = servo_sysid.split(servo_sysid.load_book_dataset())[1][0]\nsysid_widget(held, PUBLISHED_FIT)'),
    5: 'from physai.interface.gripper_panels import gripper_widget\ngripper_widget()',
    6: ('from physai.engine.arm_replay import PUBLISHED_FIT\nfrom physai.engine.servo_models import JointModel\n'
        'from physai.experiments import servo_firmware, servo_sysid\n'
        'from physai.interface.servo_firmware_panels import settings_widget\n'
        'data = servo_sysid.load_book_dataset()\nheld = servo_sysid.split(data)[1][0]\n'
        'settings_widget(JointModel.uniform(PUBLISHED_FIT), held, servo_firmware.heaviest_load(data)[1])'),
}
"""chapter -> the cell that shows its widget."""

MOVE_JS = """async ([key, name, index, count]) => {
    const panel = window.physaiPanels[key], input = panel.inputs[name].input;
    const before = panel.completeLatencies.length;
    if (input.tagName === 'SELECT') input.selectedIndex = index % input.options.length;
    else input.value = String(Number(input.min) + (Number(input.max) - Number(input.min)) * index / (count - 1));
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
    return before;
}"""
"""Move control ``name`` of panel ``key`` to position ``index`` of ``count`` (the option, on a choice), as a reader
would; returns how many complete pictures the panel had drawn before."""

RESET_JS = """async (key) => {
    const panel = window.physaiPanels[key], before = panel.completeLatencies.length;
    Object.assign(panel.values, panel.defaults());
    panel.syncInputs();
    panel.askKernel();
    return before;
}"""
"""Put panel ``key`` back on its default setting and ask the kernel for it."""

LAB_TIMEOUT_MS = 300_000

SETTLE_S = 0.5
"""Seconds between the reset's complete picture and the timed move: a reader looks before moving the next control
(and on a stock server a request sent right after a reply waits for its acknowledgement: ``nodelay``'s docstring)."""


def wait_complete(page, key: str, before: int) -> None:
    page.wait_for_function(f'() => window.physaiPanels[{key!r}].completeLatencies.length > {before}',
                           timeout=LAB_TIMEOUT_MS)


def shut_kernels(base: str, token: str) -> None:
    """Shut down every kernel of the server (one chapter's MuJoCo models should not weigh on the next's times)."""
    with urllib.request.urlopen(f'{base}/api/kernels?token={token}', timeout=30) as answer:
        kernels = json.load(answer)
    for kernel in kernels:
        request = urllib.request.Request(f'{base}/api/kernels/{kernel["id"]}?token={token}', method='DELETE')
        urllib.request.urlopen(request, timeout=30).close()


def chapter_times(page, values: int) -> tuple[str, dict]:
    """(panel key, control -> (ms to the first redraw, ms to the complete panel, Python's ms), one per change)."""
    page.wait_for_function('() => Object.keys(window.physaiPanels || {}).length > 0', timeout=LAB_TIMEOUT_MS)
    key = page.evaluate('() => Object.keys(window.physaiPanels)[0]')
    page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=LAB_TIMEOUT_MS)
    controls = page.evaluate(f'() => window.physaiPanels[{key!r}].controls.map((c) => [c.name, c.kind,'
                             ' (c.options || []).length])')
    out = {}
    for name, kind, options in controls:
        count = max(values, options) if kind == 'choice' else values
        rows = out[name] = ([], [], [])
        for index in range(count):
            wait_complete(page, key, page.evaluate(RESET_JS, key))
            time.sleep(SETTLE_S)
            wait_complete(page, key, page.evaluate(MOVE_JS, [key, name, index, count]))
            first, complete, python_ms = page.evaluate(
                f'() => {{ const p = window.physaiPanels[{key!r}];'
                ' return [p.latencies.at(-1), p.completeLatencies.at(-1), p.lastReplyMs]; }')
            for column, ms in zip(rows, (first, complete, python_ms)):
                column.append(ms)
    return key, out


def server_run(chapters: list[int], values: int, pings: int, nodelay: bool) -> tuple[list[float], dict]:
    """(bare round trips ms, chapter -> (key, its control times)) on one JupyterLab server."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / 'ping.ipynb').write_text(json.dumps(notebook([PING_CELL])))
        for chapter in chapters:
            (root / f'chapter{chapter}.ipynb').write_text(json.dumps(notebook([CHAPTER_CELLS[chapter]])))
        with jupyterlab(root, nodelay=nodelay) as (base, token), chromium() as browser:
            page, errors = run_notebook(browser, base, token, 'ping.ipynb')
            page.wait_for_selector('#pingready', state='attached', timeout=LAB_TIMEOUT_MS)
            page.evaluate('(n) => window.ping(n)', 5)   # warm-up
            trips = page.evaluate('(n) => window.ping(n)', pings)
            page.close()
            shut_kernels(base, token)
            times = {}
            for chapter in chapters:
                start = time.perf_counter()
                page, more = run_notebook(browser, base, token, f'chapter{chapter}.ipynb')
                times[chapter] = chapter_times(page, values)
                print(f'  chapter {chapter}: {time.perf_counter() - start:.0f} s', file=sys.stderr)
                errors += more
                page.close()
                shut_kernels(base, token)
            if errors:
                raise RuntimeError(f'the page raised: {errors}')
    return trips, times


def report(server: str, trips: list[float], times: dict) -> tuple[float, str, float]:
    """Print one server's tables; return (worst median ms to the first redraw, where, bare round trip median ms)."""
    print(f'{server}: bare widget round trip median {statistics.median(trips):.1f} ms, '
          f'p95 {float(np.percentile(trips, 95)):.1f}')
    worst = (-1.0, '')
    for chapter, (key, rows) in times.items():
        print(f'  chapter {chapter} ({key}) {"control":<16} {"first redraw ms":>15} {"p95":>7} {"complete ms":>11}'
              f' {"python ms":>9}')
        for name, (first, complete, python_ms) in rows.items():
            median = statistics.median(first)
            print(f'  {"":<14} {name:<16} {median:15.1f} {float(np.percentile(first, 95)):7.1f}'
                  f' {statistics.median(complete):11.1f} {statistics.median(python_ms):9.1f}')
            if median > worst[0]:
                worst = (median, f'chapter {chapter} {name}')
    ping = statistics.median(trips)
    print(f'{server}: panel {worst[0]:.1f} ms (worst median: {worst[1]}), bare round trip {ping:.1f} ms, '
          f'ratio {worst[0] / ping:.2f}')
    return worst[0], worst[1], ping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--values', type=int, default=5, help='changes per slider (a choice: each option)')
    parser.add_argument('--chapters', type=int, nargs='+', default=[1, 2, 3, 4, 5, 6], choices=sorted(CHAPTER_CELLS))
    parser.add_argument('--ping', type=int, default=40, help='bare widget round trips (the baseline)')
    parser.add_argument('--quick', action='store_true',
                        help='chapter 1, two values per control, 10 pings: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.values, args.chapters, args.ping = 2, [1], 10
    from physai.book import widget_bundle
    widget_bundle.main([])   # the widget's front end from the page's modules as they are now
    results = {}
    for server, nodelay in (('stock Jupyter Server', False), ('NoDelayConnection', True)):
        print(f'{server}…', file=sys.stderr)
        results[server] = report(server, *server_run(args.chapters, args.values, args.ping, nodelay))
    print('; '.join(f'{server}: panel {x:.1f} ms ({where}), bare round trip {p:.1f} ms, ratio {x / p:.2f}'
                    for server, (x, where, p) in results.items()))


if __name__ == '__main__':
    main()
