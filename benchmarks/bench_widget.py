"""Chapter 1's panel as a Jupyter widget (physai.interface.widget) in JupyterLab, against the matplotlib panel, in one run.

Starts a local JupyterLab (tests/jupyter.py), opens a notebook whose cell shows ``servo_widget()`` in headless
Chromium, and for every control makes ``--values`` changes spread over its range (evenly over the slider's positions,
which are log-spaced on a log slider; every option of a choice), each from the panel's default setting (reset), and
then the same from the slow setting (0.5 ms, RK4). Each change is timed in the page, from the input event to the
redrawn step response (the kernel's first reply drawn: Python's run plus the round trip) and to the complete panel
(the kp curve and stability map the kernel's worker sends next); Python's part of the first is the reply's ``ms``.
The matplotlib panel (physai.interface.live, as benchmarks/bench_panel.py drives it, no front end) is timed on the same
changes in the same run.

In the same JupyterLab page it then shows the matplotlib panel (``servo_panel()``, a second cell) and times both
panels' two choices (integrator, dampratio: native ``<select>`` in both) the same way in the browser: from the change
to the new picture in the DOM (the widget's SVG, the matplotlib panel's ``<img>`` with its new PNG) and to the next
animation frame after it (the PNG decoded): the like-for-like ratio.

Prints a table per panel and the last line ``widget <X> ms (worst median: <control>), python <P> ms, matplotlib <M>
ms (worst median: <control>), ratio <X/M>``.

With ``--ping N`` it times only N round trips of a bare widget that answers at once (a trait, then a custom
message), and N execute requests to a kernel over ZMQ with no server or browser: what the round trip costs by itself.

Run: ``.venv/bin/python benchmarks/bench_widget.py [--values 10] [--rounds 3] [--ping 40]`` (needs anywidget and
jupyterlab); ``--quick``: two changes per control, one pass per choice, from the default setting only.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'benchmarks'))

from browser import chromium  # noqa: E402
from jupyter import jupyterlab, notebook, run_notebook  # noqa: E402

import bench_panel  # noqa: E402
from physai.interface import position_actuators_panels  # noqa: E402

SLOW = {'timestep': 0.0005, 'integrator': 'RK4'}

PING_CELL = r'''
import anywidget, traitlets
class Ping(anywidget.AnyWidget):
    _esm = """
    export default { render({model, el}) {
      const times = {trait: [], msg: []};
      window.ping = async (n, kind) => {
        for (let i = 0; i < n; i++) {
          const t = performance.now();
          await new Promise((resolve) => {
            if (kind === 'trait') {
              const f = () => { model.off('change:pong', f); resolve(); };
              model.on('change:pong', f); model.set('ping', i + 1 + (kind === 'trait' ? 0 : 0) + Math.random()); model.save_changes();
            } else {
              const f = (m) => { model.off('msg:custom', f); resolve(); };
              model.on('msg:custom', f); model.send({i});
            }
          });
          times[kind].push(performance.now() - t);
        }
        return times[kind];
      };
      el.textContent = 'ping ready'; el.id = 'pingready';
    } };
    """
    ping = traitlets.Float(0).tag(sync=True)
    pong = traitlets.Float(0).tag(sync=True)
    def __init__(self):
        super().__init__()
        self.observe(lambda c: setattr(self, 'pong', c['new']), names='ping')
        self.on_msg(lambda w, content, buffers: self.send({'i': content['i']}))
Ping()
'''
"""A bare anywidget that answers at once (a trait set back by an observer; a custom message sent back): the round
trip of JupyterLab's widget messages with no computation (``--ping``)."""


def kernel_round_trip(n: int) -> list[float]:
    """ms of ``n`` execute requests of ``pass`` to a fresh kernel over ZMQ (jupyter_client): no server, no browser."""
    from jupyter_client.manager import start_new_kernel
    km, kc = start_new_kernel(kernel_name='python3')
    try:
        for _ in range(5):
            kc.execute_interactive('pass', timeout=60)
        out = []
        for _ in range(n):
            start = time.perf_counter()
            kc.execute_interactive('pass', timeout=60)
            out.append(1e3 * (time.perf_counter() - start))
        return out
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)

MOVE_JS = """async ([name, index, count]) => {
    const panel = window.physaiPanels.servo, input = panel.inputs[name].input;
    const before = panel.completeLatencies.length, first = panel.latencies.length;
    if (input.tagName === 'SELECT') input.selectedIndex = index % input.options.length;
    else input.value = String(Number(input.min) + (Number(input.max) - Number(input.min)) * index / (count - 1));
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
    return {before, first};
}"""

SET_JS = """async (values) => {
    const panel = window.physaiPanels.servo, before = panel.completeLatencies.length;
    Object.assign(panel.values, values);
    panel.syncInputs();
    panel.askKernel();
    return before;
}"""


CHOICE_JS = """async ([select, image, index]) => {
    // a choice changed in the page, timed to the new picture in the DOM (the widget's SVG drawn, or the matplotlib
    // panel's <img> given its new PNG) and to the next animation frame after it
    const s = document.querySelector(select), img = image ? document.querySelector(image) : null;
    const panel = window.physaiPanels.servo, drawnBefore = panel.latencies.length, src = img ? img.src : null;
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    const t0 = performance.now();
    const changed = new Promise((resolve) => {
        if (img) {
            const seen = new MutationObserver(() => { if (img.src !== src) { seen.disconnect(); resolve(); } });
            seen.observe(img, {attributes: true, attributeFilter: ['src']});
        } else {
            const poll = () => (panel.latencies.length > drawnBefore ? resolve() : setTimeout(poll, 0));
            poll();
        }
    });
    s.selectedIndex = index;
    s.dispatchEvent(new Event('input', {bubbles: true}));
    s.dispatchEvent(new Event('change', {bubbles: true}));
    await changed;
    const dom = img ? performance.now() - t0 : panel.latencies.at(-1);
    if (img) await img.decode().catch(() => null);
    await frame();
    return [dom, performance.now() - t0];
}"""


def choice_times(page, select: str, image: str | None, count: int, rounds: int) -> tuple[list, list]:
    """(ms to the new picture in the DOM, ms to the next frame after it decoded) for ``rounds`` passes over a choice's
    ``count`` options, each from the option before; waits a second after each, for the deferred parts."""
    dom, painted = [], []
    for r in range(rounds):
        for index in list(range(1, count)) + [0]:
            a, b = page.evaluate(CHOICE_JS, [select, image, index])
            dom.append(a)
            painted.append(b)
            time.sleep(1.0)
    return dom, painted


def wait_complete(page, before: int) -> None:
    page.wait_for_function(f'() => window.physaiPanels.servo.completeLatencies.length > {before}', timeout=300000)


def widget_times(page, n: int, at: dict | None) -> dict:
    """control -> (ms to the step drawn, ms to the complete panel, Python ms of the first reply), per change."""
    controls = page.evaluate('() => window.physaiPanels.servo.controls.map((c) => [c.name, c.kind,'
                             ' (c.options || []).length])')
    out = {}
    for name, kind, options in controls:
        if at and name in at:
            continue
        count = max(n, options) if kind == 'choice' else n
        out[name] = ([], [], [], [], [])
        for index in range(count):
            defaults = page.evaluate('() => window.physaiPanels.servo.defaults()')
            wait_complete(page, page.evaluate(SET_JS, {**defaults, **(at or {})}))
            marks = page.evaluate(MOVE_JS, [name, index, count])
            wait_complete(page, marks['before'])
            first, complete = page.evaluate('() => [window.physaiPanels.servo.latencies.at(-1),'
                                            ' window.physaiPanels.servo.completeLatencies.at(-1)]')
            python_ms, trip, draw = page.evaluate('() => [window.physaiPanels.servo.lastReplyMs,'
                                                  ' window.physaiPanels.servo.kernelTimes.roundTrip,'
                                                  ' window.physaiPanels.servo.kernelTimes.draw]')
            for column, ms in zip(out[name], (first, complete, python_ms, trip, draw)):
                column.append(ms)
    return out


def table(title: str, rows: dict) -> tuple[str, float]:
    print(title)
    print(f'  {"control":<28} {"median ms":>9} {"p95 ms":>8} {"complete ms":>11} {"python ms":>9}'
          f' {"round trip":>10} {"draw ms":>7}')
    worst = (None, -1.0)
    for name, (first, complete, python_ms, *more) in rows.items():
        median = statistics.median(first)
        extra = ''.join(f' {statistics.median(x):{w}.1f}' for x, w in zip(more, (10, 7)))
        print(f'  {name:<28} {median:9.1f} {float(np.percentile(first, 95)):8.1f} {statistics.median(complete):11.1f} '
              f'{statistics.median(python_ms):9.1f}{extra}')
        if median > worst[1]:
            worst = (name, median)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--values', type=int, default=10, help='changes per control')
    parser.add_argument('--no-matplotlib', action='store_true', help='time the widget only')
    parser.add_argument('--rounds', type=int, default=3, help='passes over each choice in JupyterLab')
    parser.add_argument('--ping', type=int, default=0,
                        help='also time this many bare widget round trips (and kernel-only ones), then stop')
    parser.add_argument('--nodelay', action='store_true',
                        help='JupyterLab with physai.interface.nodelay.NoDelayConnection (no Nagle stall)')
    parser.add_argument('--quick', action='store_true',
                        help='2 changes per control, one pass per choice, the default setting only: a check that it runs')
    args = parser.parse_args()
    settings = (None,) if args.quick else (None, SLOW)
    if args.quick:
        args.values, args.rounds = 2, 1
    from physai.book import widget_bundle
    widget_bundle.main([])  # the widget's front end from the page's modules as they are now
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        if args.ping:
            (root / 'ping.ipynb').write_text(json.dumps(notebook([PING_CELL])))
            with jupyterlab(root, nodelay=args.nodelay) as (base, token), chromium() as browser:
                page, errors = run_notebook(browser, base, token, 'ping.ipynb')
                page.wait_for_selector('#pingready', state='attached', timeout=300000)
                for kind in ('trait', 'msg'):
                    t = page.evaluate('([n, k]) => window.ping(n, k)', [args.ping, kind])
                    print(f'bare widget round trip ({kind}): median {statistics.median(t):.1f} ms, min {min(t):.1f}, '
                          f'p95 {float(np.percentile(t, 95)):.1f}')
            t = kernel_round_trip(args.ping)
            print(f'kernel only (jupyter_client, ZMQ): median {statistics.median(t):.1f} ms, min {min(t):.1f}')
            return
        (root / 'panel.ipynb').write_text(json.dumps(notebook(
            ['from physai.interface.widget import servo_widget\nw = servo_widget()\nw',
             'from physai.interface.position_actuators_panels import servo_panel\np = servo_panel()\np'])))
        t0 = time.perf_counter()
        with jupyterlab(root, nodelay=args.nodelay) as (base, token), chromium() as browser:
            page, errors = run_notebook(browser, base, token, 'panel.ipynb')
            page.wait_for_selector('#physai-panel-servo[data-drawn]', state='attached', timeout=300000)
            print(f'JupyterLab up and the panel drawn in {time.perf_counter() - t0:.1f} s')
            widget = {}
            for setting in settings:
                suffix = '' if setting is None else f' @ {bench_panel.setting_name(setting)}'
                widget.update({f'{k}{suffix}': v for k, v in widget_times(page, args.values, setting).items()})
            # the matplotlib panel in the same notebook, its two choices (native <select>s) against the widget's
            page.keyboard.press('Shift+Enter')   # the second cell: servo_panel()
            page.wait_for_selector('.jp-Cell:nth-child(2) .jp-OutputArea img', timeout=300000)
            time.sleep(3)
            choices = []
            for name, index, count in (('integrator', 0, 5), ('dampratio', 1, 4)):
                widget_sel = f'#physai-panel-servo-{name}'
                mpl_css = page.evaluate(f"""() => {{ const s = document.querySelectorAll('.jp-Cell:nth-child(2)'
                    + ' .jp-OutputArea select')[{index}]; s.id = 'mpl-{name}'; return '#mpl-{name}'; }}""")
                w = choice_times(page, widget_sel, None, count, args.rounds)
                m = choice_times(page, mpl_css, '.jp-Cell:nth-child(2) .jp-OutputArea img', count, args.rounds)
                choices.append((name, w, m))
            if errors:
                print('page errors:', errors)
    w_name, w_ms = table('widget in JupyterLab (input event to the redrawn step; complete; Python of the first reply;'
                         ' its round trip, request sent to reply received; its drawing)',
                         widget)
    print('both panels in JupyterLab, a choice changed (to the new picture in the DOM / the next frame after it)')
    print(f'  {"control":<12} {"widget median":>13} {"p95":>6} {"painted":>8}   {"matplotlib median":>17} {"p95":>6}'
          f' {"painted":>8}  ratio')
    for name, (wd, wp), (md, mp) in choices:
        print(f'  {name:<12} {statistics.median(wd):13.1f} {float(np.percentile(wd, 95)):6.1f} '
              f'{statistics.median(wp):8.1f}   {statistics.median(md):17.1f} {float(np.percentile(md, 95)):6.1f} '
              f'{statistics.median(mp):8.1f}  {statistics.median(wp) / statistics.median(mp):.2f}')
    if args.no_matplotlib:
        return
    panel = position_actuators_panels.servo_panel()
    mpl = {}
    for setting in settings:
        suffix = '' if setting is None else f' @ {bench_panel.setting_name(setting)}'
        times = bench_panel.time_controls(panel, args.values, at=setting)
        mpl.update({f'{k}{suffix}': (a, b, c) for k, (a, b, c) in times.items()})
    m_name, m_ms = table('matplotlib panel, no front end (change to the new PNG; complete; CPU)', mpl)
    p_ms = statistics.median(widget[w_name][2])
    print(f'widget {w_ms:.1f} ms (worst median: {w_name}), python {p_ms:.1f} ms, matplotlib {m_ms:.1f} ms '
          f'(worst median: {m_name}), ratio {w_ms / m_ms:.2f}')


if __name__ == '__main__':
    main()
