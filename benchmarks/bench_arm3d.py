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

Run: ``.venv/bin/python benchmarks/bench_arm3d.py [--seconds 5]``
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import sys
import tempfile

import mujoco
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tests'))

import browser  # noqa: E402
from test_arm3d_view import scratch_site  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=5.0)
    args = parser.parse_args()
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
