"""Batched sweep (mujoco.batch) against mujoco.rollout and a plain Python mj_step loop over the same grid.

The grid is kp × armature × integrator (10 × 4 × 3 = 120 step responses of 3 s at dt 5 ms). Every path builds
its models and computes the same figures (``link.summarize``) from the same trajectories:

- batched: ``physai.engine.link.step_responses``, one ``mujoco.batch.Batch`` with per-simulation model fields;
- rollout: what a user would pick instead, one ``mujoco.rollout.rollout`` call over 120 compiled models
  (``link.link_model``) on ``os.cpu_count()`` threads, one MjData per thread. A rollout does not stop a run
  whose acceleration blew up: MuJoCo resets it (its time restarts from 0) and it carries on, so the
  trajectory is cut where the time goes back;
- loop: one MjData per run and ``mj_step`` from Python, stopping at MuJoCo's bad-acceleration warning.

The three must give bit-identical trajectories and the same divergence flags (printed). The last line prints

    sweep batched <X> ms, rollout <Y> ms (ratio <Y/X>), loop <Z> ms, ratio <Z/X>

with each time the fastest of a few repeats measured in this one run (other work on a shared machine only ever
adds time, so the minimum is the steadiest estimate). The repeats of the three paths are interleaved, so a
stretch of load from elsewhere falls on all of them alike.

    .venv/bin/python benchmarks/bench_sweep.py [--repeats N]

With ``--quick`` (as ``make test`` runs it, to keep it working) every tenth run of the grid (12, some diverging), once:
the same lines in seconds. Either way it exits with status 1 when the three paths' results are not identical.
"""

import argparse
import os
import time

import mujoco
import mujoco.rollout
import numpy as np

from physai.engine import link, mj
from physai.engine.link import ServoParams

GRID = [ServoParams(kp=kp, armature=a, integrator=i, kv=2.731, damping=0.6)
        for kp in np.geomspace(10, 30000, 10) for a in (0.0, 0.005, 0.01, 0.028)
        for i in ('Euler', 'implicitfast', 'discrete')]
Q0 = -0.5  # rad, every run's start; the command is 0
DURATION = 3.0  # s


def loop_sweep(grid):
    """The naive path: one model and one MjData per response, mj_step from Python."""
    out = []
    for params in grid:
        m = link.link_model(params)
        d = mujoco.MjData(m)
        d.qpos[0] = Q0
        mujoco.mj_forward(m, d)
        q = [Q0]
        bad = False
        for _ in range(round(DURATION / params.timestep)):
            mujoco.mj_step(m, d)
            if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
                bad = True
                break
            q.append(d.qpos[0])
        q = np.array(q)
        out.append(link.summarize(params, params.timestep * np.arange(len(q)), q, bad))
    return out


def rollout_sweep(grid, nthread=None):
    """The rollout path: one ``mujoco.rollout.rollout`` call over every run, ``nthread`` threads (all CPUs)."""
    nthread = os.cpu_count() if nthread is None else nthread
    models = [link.link_model(p) for p in grid]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(models[0])
    d.qpos[0] = Q0
    mujoco.mj_forward(models[0], d)  # the state is qpos, qvel, act, time: the same for every model
    start = np.empty(mujoco.mj_stateSize(models[0], spec))
    mujoco.mj_getState(models[0], d, start, spec)
    nstep = {round(DURATION / p.timestep) for p in grid}
    if len(nstep) != 1:
        raise ValueError('rollout_sweep needs one timestep for the whole grid (one rollout call)')
    datas = [mujoco.MjData(models[0]) for _ in range(nthread)]
    state, _ = mujoco.rollout.rollout(models, datas, start[None], nstep=nstep.pop())
    out = []
    for params, run in zip(grid, state):
        t, q = run[:, 0], run[:, 1]
        reset = np.nonzero(np.diff(t) < 0)[0]  # MuJoCo reset a run whose acceleration blew up
        bad = bool(reset.size)
        q = np.concatenate([[Q0], q[:reset[0] + 1] if bad else q])
        out.append(link.summarize(params, params.timestep * np.arange(len(q)), q, bad))
    return out


def same(a, b):
    """Bit-identical trajectories and the same flags, run by run."""
    return all(x.diverged == y.diverged and np.array_equal(x.q, y.q) for x, y in zip(a, b, strict=True))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=5, help='repeats of each path (the fastest counts)')
    parser.add_argument('--quick', action='store_true', help='every tenth run of the grid, once: a check that it runs')
    args = parser.parse_args()
    grid = GRID[::10] if args.quick else GRID
    if args.quick:
        args.repeats = 1
    paths = {'batched': lambda: link.step_responses(grid, q0=Q0, duration=DURATION),
             'rollout': lambda: rollout_sweep(grid),
             'loop': lambda: loop_sweep(grid)}
    times = {name: [] for name in paths}
    results = {}
    with mj.captured_warnings():  # the diverging runs' warnings, which the loop and rollout would print
        for _ in range(args.repeats):
            for name, fn in paths.items():
                start = time.perf_counter()
                results[name] = fn()
                times[name].append(1e3 * (time.perf_counter() - start))
    best = {name: min(t) for name, t in times.items()}
    ndiverged = sum(r.diverged for r in results['batched'])
    identical = {other: same(results['batched'], results[other]) for other in ('rollout', 'loop')}
    print(f'{len(grid)} step responses ({ndiverged} diverged), {os.cpu_count()} CPUs; identical results: '
          f'rollout {identical["rollout"]}, loop {identical["loop"]}')
    for name, t in times.items():
        print(f'{name:8s} min {best[name]:8.1f} ms, median {np.median(t):8.1f} ms over {len(t)} repeats')
    x, y, z = best['batched'], best['rollout'], best['loop']
    print(f'sweep batched {x:.1f} ms, rollout {y:.1f} ms (ratio {y / x:.2f}), loop {z:.1f} ms, ratio {z / x:.2f}')
    if not all(identical.values()):
        raise SystemExit('the paths disagree: ' + ', '.join(k for k, v in identical.items() if not v))


if __name__ == '__main__':
    main()
