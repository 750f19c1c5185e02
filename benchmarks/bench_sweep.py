"""Batched sweep (mujoco.batch) against a plain Python mj_step loop over the same grid.

The grid is kp × armature × integrator (10 × 4 × 3 = 120 step responses of 3 s at dt 5 ms). Both
paths build the same models and compute the same figures; the last line prints

    sweep batched <X> ms, loop <Y> ms, ratio <Y/X>

with each time the fastest of a few repeats measured in this one run (other work on a shared
machine only ever adds time, so the minimum is the steadiest estimate).

    .venv/bin/python benchmarks/bench_sweep.py
"""

import time

import mujoco
import numpy as np

from physai.engine import link
from physai.engine.link import ServoParams

GRID = [ServoParams(kp=kp, armature=a, integrator=i, kv=2.731, damping=0.6)
        for kp in np.geomspace(10, 30000, 10) for a in (0.0, 0.005, 0.01, 0.028)
        for i in ('Euler', 'implicitfast', 'discrete')]


def loop_sweep(grid):
    """The naive path: one model and one MjData per response, mj_step from Python."""
    out = []
    for params in grid:
        m = link.link_model(params)
        d = mujoco.MjData(m)
        d.qpos[0] = -0.5
        mujoco.mj_forward(m, d)
        q = [-0.5]
        bad = False
        for _ in range(round(3.0 / params.timestep)):
            mujoco.mj_step(m, d)
            if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
                bad = True
                break
            q.append(d.qpos[0])
        q = np.array(q)
        out.append(link.summarize(params, params.timestep * np.arange(len(q)), q, bad))
    return out


def timed(fn, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(1e3 * (time.perf_counter() - start))
    return min(times), result


def main():
    batched_ms, batched = timed(lambda: link.step_responses(GRID))
    loop_ms, looped = timed(lambda: loop_sweep(GRID))
    same = all(a.diverged == b.diverged and np.array_equal(a.q, b.q) for a, b in zip(batched, looped))
    print(f'{len(GRID)} step responses, identical results: {same}')
    print(f'sweep batched {batched_ms:.1f} ms, loop {loop_ms:.1f} ms, ratio {loop_ms / batched_ms:.2f}')


if __name__ == '__main__':
    main()
