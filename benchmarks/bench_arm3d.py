"""Frames per second of the SO-101's 3D view (book/_static/physai-arm3d.js) playing a clip in headless Chromium, and the
sizes of what the view loads.

Builds the scratch site of tests/test_arm3d_view.py (the view, three.js and the arm's meshes, laid out as the book
serves them) in a temporary directory, serves it over http and opens it in headless Chromium (/usr/bin/chromium,
the flags of tests/browser.py; WebGL 2 here is SwiftShader, on the CPU). The clip is a MuJoCo run of the SO-101
(its servos driving it from home to a target and back, 4 s) sampled at 60 frames per second, with a ghost arm, so
every animation frame has a new pose to draw. For ``--seconds`` the view plays it in real time while the page counts
its animation frames (requestAnimationFrame callbacks: the most frames the browser would show, the baseline of the
same run) and the frames the view drew.

This machine is shared (the load average is printed): the frames per second measured are what the view got of it.
So the benchmark also measures the view's cost in CPU time, which load does not inflate as much: the CPU time all of
Chromium's processes used while the view played (``/proc/PID/stat``, utime + stime), minus what they used in as long
a time with the view idle on the same page, divided by the frames drawn. One free core gives 1000 / that many ms
frames per second (Chromium's renderer and GPU processes also run side by side on two).

Prints, per viewport (desktop 1280 x 800 and phone 390 x 844): drawn fps, animation-frame fps, their ratio, the CPU
ms per frame and the fps one free core allows; then the files the view loads, raw and gzip -9.

With ``--panels`` it measures the view where the book shows it, in chapters 3 and 4's page panels (the scratch page of
tests/test_arm3d_panel.py, MuJoCo live): for each panel, the slider-to-plot latency of ``--values`` kp changes (as
bench_web_arm.py times them: (a) first picture, (b) whole run drawn with its verdict, (c) painted) with the 3D view
closed and with it open and playing, in ``--blocks`` pairs of interleaved blocks (closed, open, closed, open, ...) so
that the machine's load falls on both alike, and their ratio of medians (open / closed). The view holds still while
its panel computes and takes a finished run once the panel has been quiet for 250 ms (arm3d_view.js QUIET_MS), so
during a run of slider changes it draws nothing, as while a reader drags a slider. Then the view's frames per
second while it plays the panel's run in the panel, with the CPU time per frame as above: as the book plays it (at
most 30 frames a second on a software renderer; chapter 4's recording has 30 a second) and uncapped (no frame cap
and, in chapter 4, the replay at twice real time, so that every animation frame has a new pose: the most the view
can draw). The page's column is the book's at a 1280 px window (physai.interface.plots.COLUMN_PX).

With ``--panels --compare REF`` it measures only the view's CPU time per frame in the two panels, this tree's view
against a baseline (physai-arm3d.js and arm3d_view.js as at git REF, its meshes simplified to ``--compare-max-error``,
by default 0.3 mm as before 1 mm), in ``--rounds`` interleaved rounds (a fresh page each), and prints the ratio of
medians. With ``--blocks 0`` ``--panels`` skips the latency blocks.

With ``--first-view _build/html`` it opens chapters 3 and 4 of the built book and sums, gzip -9, what each loads
before the reader touches it, then what pressing the view's button adds (three.js and the arm; MuJoCo, which the
button starts when the panel is not live yet).

Run: ``.venv/bin/python benchmarks/bench_arm3d.py [--seconds 5] [--panels [--values 8] [--compare main]]
[--first-view _build/html]``. ``--quick`` (as ``make test`` runs it, to keep it working) plays 1 s per viewport: the
same lines in seconds, figures too short to quote.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import os
import pathlib
import shutil
import sys
import tempfile

import mujoco
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))
sys.path.insert(0, str(ROOT / 'benchmarks'))

import browser  # noqa: E402
from test_arm3d_view import scratch_site  # noqa: E402
from latency import p95  # noqa: E402

from physai.engine import bodies, so101  # noqa: E402


def clip(seconds: float = 4.0, fps: float = 60.0) -> dict:
    model = so101.load_so101()
    data = mujoco.MjData(model)
    time, qpos = [], []
    while data.time < seconds:
        data.ctrl[:] = [0.5, -0.7, 0.6, 0.4, -0.9, 0.3] if data.time < seconds / 2 else 0
        time.append(data.time)
        qpos.append(data.qpos.copy())
        mujoco.mj_step(model, data)
    shown = bodies.sample_frames(time, fps)
    xpos, xquat = bodies.body_poses(model, np.array(qpos)[shown])
    return {'time': np.asarray(time)[shown].tolist(), 'xpos': xpos.ravel().tolist(), 'xquat': xquat.ravel().tolist(),
            'ghost': {'xpos': xpos[::-1].ravel().tolist(), 'xquat': xquat[::-1].ravel().tolist()}}


MEASURE = """async ({ clip, seconds, play }) => {
    view.setClip(clip, { rate: 1, loop: true });
    let animationFrames = 0, counting = true;
    const count = () => { animationFrames += 1; if (counting) requestAnimationFrame(count); };
    requestAnimationFrame(count);
    const drawn0 = view.frames, t0 = performance.now();
    if (play) view.play();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const elapsed = (performance.now() - t0) / 1000, drawn = view.frames - drawn0;
    counting = false;
    view.pause();
    return { fps: drawn / elapsed, rafFps: animationFrames / elapsed, drawn };
}"""


def chromium_cpu_seconds() -> float:
    """CPU time (user + system, s) used so far by the Chromium processes descended from this one."""
    parents, names = {}, {}
    for entry in pathlib.Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / 'stat').read_text()
            names[int(entry.name)] = (entry / 'cmdline').read_bytes().split(b'\0')[0].decode(errors='replace')
        except OSError:
            continue
        fields = stat[stat.rindex(')') + 2:].split()
        parents[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid, utime + stime
    mine, total = {os.getpid()}, 0
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _) in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    for pid in mine - {os.getpid()}:
        if 'chrom' in names.get(pid, ''):
            total += parents[pid][1]
    return total / os.sysconf('SC_CLK_TCK')


PANEL_FPS = """async ([key, seconds, uncapped]) => {
    const view = window.physaiPanels[key].arm3d.view;
    if (uncapped) {   // as many frames as the browser shows, each with a new pose (chapter 4's recording has 30 a second)
        view.options.maxFps = Infinity;
        if (window.physaiPanels[key].arm3d.kind === 'replay') view.setRate(2);
    }
    view.play();
    let animationFrames = 0, counting = true;
    const count = () => { animationFrames += 1; if (counting) requestAnimationFrame(count); };
    requestAnimationFrame(count);
    const drawn0 = view.frames, t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    const elapsed = (performance.now() - t0) / 1000, drawn = view.frames - drawn0;
    counting = false;
    return { fps: drawn / elapsed, rafFps: animationFrames / elapsed, drawn,
             canvas: [view.renderer.domElement.width, view.renderer.domElement.height], renderer: view.webgl.renderer };
}"""


def panels(seconds: float, values: int, blocks: int) -> None:
    """The view in chapters 3 and 4's panels: latency with it closed and open (ratio), and its fps there."""
    from bench_web_arm import MEASURE, control_values
    from test_arm3d_panel import open_view, panel_site
    from physai.interface.plots import COLUMN_PX
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs before the panels')
    with tempfile.TemporaryDirectory() as folder:
        site = panel_site(pathlib.Path(folder), max_width=COLUMN_PX)   # the book's column at a 1280 px window
        with browser.serve(site) as url, browser.chromium() as chromium:
            for chapter, key in ((3, 'pd'), (4, 'sysid')):
                page, _, errors = browser.open_page(chromium, url + '/')
                browser.go_live(page, key)
                kps = control_values(chapter, values)['kp']
                times = {'closed': ([], [], []), 'open': ([], [], [])}
                for block in ('closed', 'open') * blocks:
                    state = page.eval_on_selector(f'#physai-panel-{key} .pl-arm3d', 'n => n.dataset.arm3d')
                    if block == 'open' and state != 'open':
                        open_view(page, key)
                        page.evaluate(f"() => window.physaiPanels['{key}'].arm3d.view.play()")
                    if block == 'closed' and state == 'open':
                        page.click(f'#physai-panel-{key} .pl-arm3d > .pl-arm3d-head > button')
                    for value in kps:
                        for column, t in zip(times[block], page.evaluate(MEASURE, [key, 'kp', value])):
                            column.append(t)
                if blocks == 0:   # only the view's frames per second
                    open_view(page, key)
                for block, columns in times.items() if blocks else ():
                    print(f'chapter {chapter} kp, 3D view {block:6s}: ' + ', '.join(
                        f'{name} {statistics.median(c):.1f} ms median (p95 {p95(c):.1f})'
                        for name, c in zip(('first picture', 'whole', 'painted'), columns)))
                if blocks:
                    ratios = [statistics.median(o) / statistics.median(c)
                              for o, c in zip(times['open'], times['closed'])]
                    print(f'chapter {chapter}: ratio open / closed (medians, {blocks * len(kps)} changes each, '
                          f'interleaved): first picture {ratios[0]:.2f}, whole {ratios[1]:.2f}, painted {ratios[2]:.2f}; '
                          f'load average {os.getloadavg()[0]:.1f}')
                for uncapped in (False, True):
                    result, per_frame = view_fps(page, key, seconds, uncapped)
                    what = ('uncapped, every animation frame a new pose' if uncapped else
                            'as the book plays it (at most 30 fps on a software renderer)')
                    print(f'chapter {chapter} view in the panel, {what}, canvas {result["canvas"][0]}x'
                          f'{result["canvas"][1]} px ({result["renderer"]}), load average {os.getloadavg()[0]:.1f}: '
                          f'drawn {result["fps"]:.1f} fps, animation frames {result["rafFps"]:.1f} fps, ratio '
                          f'{result["fps"] / result["rafFps"]:.2f}; Chromium CPU {per_frame:.1f} ms per frame over '
                          f'idle: one free core allows {1000 / per_frame:.0f} fps; errors: {errors or "none"}')
                page.close()


def view_fps(page, key: str, seconds: float, uncapped: bool = False) -> tuple[dict, float]:
    """The open view playing its panel's run for ``seconds``: PANEL_FPS's answer and Chromium's CPU ms per frame drawn
    over idle (the CPU time of as long a time paused just before). ``uncapped``: without the view's frame cap and,
    in chapter 4, at twice real time, so that each animation frame has a new pose to draw: the most it can draw."""
    page.wait_for_timeout(1000)   # the view has taken the last run (arm3d_view.js QUIET_MS)
    page.evaluate(f"() => window.physaiPanels['{key}'].arm3d.view.pause()")
    cpu0 = chromium_cpu_seconds()
    page.wait_for_timeout(int(seconds * 1000))
    cpu1 = chromium_cpu_seconds()
    result = page.evaluate(PANEL_FPS, [key, seconds, uncapped])
    cpu2 = chromium_cpu_seconds()
    return result, ((cpu2 - cpu1) - (cpu1 - cpu0)) / max(result['drawn'], 1) * 1000


def compare(ref: str, max_error: float, seconds: float, rounds: int) -> None:
    """The view's CPU ms per frame in chapters 3 and 4's panels, this tree's against a baseline (physai-arm3d.js and
    arm3d_view.js as at git ``ref``, meshes simplified to ``max_error``), in ``rounds`` interleaved rounds (baseline,
    this tree, baseline, ...) so that the machine's load falls on both alike; ratio of medians (this / baseline)."""
    import subprocess
    from test_arm3d_panel import open_view, panel_site
    from physai.book import arm_meshes
    from physai.interface.plots import COLUMN_PX
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs before the comparison')
    with tempfile.TemporaryDirectory() as folder:
        sites = {}
        for name in ('baseline', 'this tree'):
            sites[name] = panel_site(pathlib.Path(folder) / name.replace(' ', '_'), max_width=COLUMN_PX)
        static = sites['baseline'] / '_static'
        listed = subprocess.run(['git', 'ls-tree', '--name-only', ref, 'book/_static/'], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.split()
        modules = [path for path in listed if pathlib.Path(path).name.startswith('physai-arm3d')]  # split since
        for path in (*modules, 'book/_static/panels/arm3d_view.js'):
            target = static / pathlib.Path(path).relative_to('book/_static')
            target.write_bytes(subprocess.run(['git', 'show', f'{ref}:{path}'], cwd=ROOT, check=True,
                                              capture_output=True).stdout)
        shutil.rmtree(static / 'arm3d')
        baseline = arm_meshes.build(static / 'arm3d', max_error=max_error)
        print(f'baseline: {ref}, meshes to {max_error * 1e3:g} mm ({baseline["triangles"]} '
              f'triangles); this tree: meshes to {arm_meshes.MAX_ERROR * 1e3:g} mm')
        with browser.serve(sites['baseline']) as url0, browser.serve(sites['this tree']) as url1, \
                browser.chromium() as chromium:
            for chapter, key in ((3, 'pd'), (4, 'sysid')):
                ms = {'baseline': [], 'this tree': []}
                for _ in range(rounds):
                    for name, url in (('baseline', url0), ('this tree', url1)):
                        page, _, errors = browser.open_page(chromium, url + '/')
                        browser.go_live(page, key)
                        open_view(page, key)
                        result, per_frame = view_fps(page, key, seconds)
                        ms[name].append(per_frame)
                        print(f'  chapter {chapter} {name:9s}: canvas {result["canvas"][0]}x{result["canvas"][1]} px, '
                              f'drawn {result["fps"]:.1f} fps (animation frames {result["rafFps"]:.1f}), CPU '
                              f'{per_frame:.1f} ms per frame, load average {os.getloadavg()[0]:.1f}; '
                              f'errors: {errors or "none"}')
                        page.close()
                b, t = statistics.median(ms['baseline']), statistics.median(ms['this tree'])
                print(f'chapter {chapter}: CPU per frame, medians of {rounds}: baseline {b:.1f} ms, this tree {t:.1f} ms, '
                      f'ratio {t / b:.2f}; one free core allows {1000 / b:.0f} and {1000 / t:.0f} fps')


def first_view(html: pathlib.Path, pages: list[str]) -> None:
    """What each built page loads before the reader touches anything, and what opening its 3D view adds: every file it
    requests from the site, gzip -9 (a compressing server's size), summed."""
    def gz(url: str, base: str) -> int:
        path = html / url[len(base) + 1:].split('?')[0].split('#')[0]
        if path.is_dir():
            path = path / 'index.html'
        return len(gzip.compress(path.read_bytes(), 9, mtime=0)) if path.is_file() else 0
    from test_arm3d_panel import open_view
    with browser.serve(html) as url, browser.chromium() as chromium:
        for name in pages:
            page, requests, errors = browser.open_page(chromium, f'{url}/{name}')
            key = 'pd' if 'where_pd' in name else 'sysid'
            page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=60_000)
            page.wait_for_timeout(3000)
            first = sorted({r for r in requests if r.startswith(url)})
            size = sum(gz(r, url) for r in first)
            open_view(page, key)
            page.wait_for_timeout(1000)
            later = sorted({r for r in requests if r.startswith(url)} - set(first))
            arm3d = [r for r in later if '/three/' in r or '/arm3d/' in r or 'physai-arm3d' in r]
            engine = [r for r in later if '/mujoco/' in r]
            print(f'{name}: first view {len(first)} files, {size / 1e6:.3f} MB gzip -9; opening the 3D view adds '
                  f'the 3D assets {sum(gz(r, url) for r in arm3d) / 1e6:.3f} MB ({len(arm3d)} files) and MuJoCo '
                  f'{sum(gz(r, url) for r in engine) / 1e6:.3f} MB ({len(engine)} files) when not yet live; '
                  f'others {[r[len(url):] for r in later if r not in arm3d and r not in engine]}; errors: {errors or "none"}')
            page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=5.0)
    parser.add_argument('--panels', action='store_true', help='measure the view in chapters 3 and 4\'s panels')
    parser.add_argument('--values', type=int, default=6, help='kp changes per block (with --panels)')
    parser.add_argument('--blocks', type=int, default=4, help='blocks of each, closed and open, alternating (0: only the view\'s fps)')
    parser.add_argument('--first-view', type=pathlib.Path, metavar='HTML',
                        help='the built site (_build/html): what chapters 3 and 4 load first, and on opening the view')
    parser.add_argument('--compare', metavar='REF', help='with --panels: the view\'s CPU per frame against git REF\'s')
    parser.add_argument('--compare-max-error', type=float, default=3e-4, help='m: the baseline\'s mesh error bound')
    parser.add_argument('--rounds', type=int, default=3, help='interleaved rounds of the comparison')
    parser.add_argument('--quick', action='store_true', help='1 s per viewport: a check that it runs')
    args = parser.parse_args()
    if args.quick:
        args.seconds = 1.0
    if args.compare:
        compare(args.compare, args.compare_max_error, args.seconds, args.rounds)
        return
    if args.first_view:
        first_view(args.first_view, ['notebooks/03_where_pd_runs.html', 'notebooks/04_servo_sysid.html'])
        return
    if args.panels:
        panels(args.seconds, args.values, args.blocks)
        return
    data = clip()
    with tempfile.TemporaryDirectory() as folder:
        site = scratch_site(pathlib.Path(folder))
        with browser.serve(site) as url, browser.chromium() as chromium:
            for name, viewport in (('desktop', (1280, 800)), ('phone', (390, 844))):
                page = chromium.new_page(viewport={'width': viewport[0], 'height': viewport[1]})
                errors = []
                page.on('pageerror', lambda e: errors.append(str(e)))
                page.goto(url + '/index.html')
                page.wait_for_function("document.getElementById('status').textContent !== 'loading'", timeout=120000)
                canvas = page.evaluate('[view.renderer.domElement.width, view.renderer.domElement.height]')
                cpu0 = chromium_cpu_seconds()
                page.evaluate(MEASURE, {'clip': data, 'seconds': args.seconds, 'play': False})  # idle, as long
                cpu1 = chromium_cpu_seconds()
                result = page.evaluate(MEASURE, {'clip': data, 'seconds': args.seconds, 'play': True})
                cpu2 = chromium_cpu_seconds()
                per_frame = ((cpu2 - cpu1) - (cpu1 - cpu0)) / max(result['drawn'], 1) * 1000
                print(f'{name:8s} canvas {canvas[0]}x{canvas[1]} px ({page.evaluate("view.webgl.renderer")}; '
                      f'antialias {page.evaluate("view.renderer.getContextAttributes().antialias")}), load average '
                      f'{os.getloadavg()[0]:.1f}: drawn {result["fps"]:.1f} fps, animation frames '
                      f'{result["rafFps"]:.1f} fps, ratio {result["fps"] / result["rafFps"]:.2f}; Chromium CPU '
                      f'{per_frame:.1f} ms per frame over idle ({(cpu2 - cpu1) / args.seconds:.2f} vs '
                      f'{(cpu1 - cpu0) / args.seconds:.2f} CPU s/s idle): one free core allows {1000 / per_frame:.0f} fps; '
                      f'errors: {errors or "none"}')
                page.close()
        static = site / '_static'
        rows = sorted(p for p in static.rglob('*') if p.is_file() and p.name != 'package.json')
        total = total_gz = 0
        for path in rows:
            raw = path.read_bytes()
            packed = len(gzip.compress(raw, 9, mtime=0))
            total, total_gz = total + len(raw), total_gz + packed
            print(f'{str(path.relative_to(static)):32s} {len(raw):9d} bytes {packed:9d} gzip -9')
        print(f'{"all the view loads":32s} {total:9d} bytes {total_gz:9d} gzip -9')


if __name__ == '__main__':
    main()
