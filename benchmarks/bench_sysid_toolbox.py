"""Chapter 4's fit done twice in one run: with physai (``sysid.fit_servo``) and with MuJoCo's own toolbox, ``mujoco.sysid``.

Both fit the same six parameters (kp, kv, forcerange, joint damping, frictionloss, armature, in log10 space inside
``sysid.LOG_BOUNDS``) of one servo on every joint, from the same start (TheRobotStudio's gains), to the same three fit
episodes of the shipped recording, on the same arm (the mesh-free SO-101, contacts off, implicitfast, 7 steps per
frame), with MuJoCo's Levenberg-Marquardt (``mujoco.minimize.least_squares``) underneath. What differs is the pipeline
``mujoco.sysid`` builds around it, used as its documentation shows (``ModelSequences``, ``Parameter`` modifiers on an
``MjSpec``, ``build_residual_fn``, ``optimize(optimizer='mujoco')``):

- every candidate is a fresh ``MjSpec.compile()`` of the arm (``model_modifier.apply_param_modifiers``), replayed with
  ``mujoco.rollout`` on one thread per CPU; physai copies one compiled model and edits its fields, and replays every
  candidate of a solver round in one ``mujoco.batch`` call;
- its default residual divides each joint's error by the norm of that joint's measured angles
  (``signal_modifier.normalize_residual``): joints far from zero weigh less; physai scores plain degrees;
- its intervals (``calculate_intervals``) assume independent residuals; chapter 4 shows they are not.

The script prints, for each: wall and CPU seconds, the fitted servo, its lag, and its held-out error (episode 3, by
physai's replay, the chapter's metric). The last line is the ratio of the toolbox's wall time to physai's. It needs
``pip install "mujoco[sysid]==3.17.0"`` (scipy, plotly, ...), which physai itself does not. Run it from the
repository root:

    .venv/bin/python benchmarks/bench_sysid_toolbox.py

``--loo`` fits both leave-one-out instead, every episode held out once (four fits each, minutes with the toolbox),
and prints each fold's held-out error for both and their means: the toolbox's objective against physai's, on
episodes neither saw.

``--quick`` (as ``make test`` runs it, to keep it working: ``benchmarks/requirements.txt`` installs the toolbox) fits
the first 3 s of one episode with at most 2 iterations each: the same lines in seconds, not a fit to quote.
"""

import argparse
import dataclasses
import os
import time

import mujoco
import numpy as np

from physai.engine import arm_replay, sysid
from physai.engine.so101 import ARM_JOINTS, JOINTS, freeze_inertia, load_so101
from physai.experiments import servo_sysid


def bare_spec(fps: float) -> mujoco.MjSpec:
    """The replay's arm as an MjSpec (what mujoco.sysid compiles per candidate): no meshes, geoms or sites, every
    body's inertia frozen from the full model, contacts off, implicitfast at arm_replay.ReplayConfig's step."""
    import mujoco_menagerie

    full = load_so101()
    spec = mujoco_menagerie.get('robotstudio_so101').spec('so101')
    freeze_inertia(spec, full, [body for body in spec.bodies if body.name != 'world'])
    for geom in list(spec.geoms):
        spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    for site in list(spec.sites):
        spec.delete(site)
    config = arm_replay.ReplayConfig()
    spec.option.timestep = 1.0 / (fps * config.substeps(fps))
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    return spec


def servo_modifier(name: str):
    """A mujoco.sysid modifier writing one log10 parameter of the shared servo into every joint or actuator."""
    def modify(spec: mujoco.MjSpec, param) -> None:
        value = float(10.0 ** param.value[0])
        for joint in JOINTS:
            j, a = spec.joint(joint), spec.actuator(joint)
            if name == 'kp':
                a.gainprm[0] = value
                a.biasprm[1] = -value
            elif name == 'kv':
                a.biasprm[2] = -value
            elif name == 'forcerange':
                a.forcelimited = 1
                a.forcerange = [-value, value]
            elif name == 'damping':
                j.damping = [value, 0.0, 0.0]
            elif name == 'frictionloss':
                j.frictionloss = value
            elif name == 'armature':
                j.armature = value
    return modify


def toolbox_fit(fit_eps, start: arm_replay.ArmServo, max_iters: int = 50):
    from mujoco import sysid as msys

    fps = fit_eps[0].fps
    spec = bare_spec(fps)
    model = spec.compile()
    sub = arm_replay.ReplayConfig().substeps(fps)
    step = model.opt.timestep
    ctrl_map = msys.TimeSeries.compute_all_control_mapping(model)
    qpos_map = {f'{j}_qpos': (msys.SignalType.MjStateQPos, np.array([k])) for k, j in enumerate(ARM_JOINTS)}
    states, controls, sensors, names = [], [], [], []
    for e in fit_eps:
        u = np.repeat(arm_replay.to_radians(e.action, e.joints), sub, axis=0)  # each frame's command held for its steps
        controls.append(msys.TimeSeries(times=np.arange(len(u)) * step, data=u, signal_mapping=ctrl_map))
        q = np.radians(e.state[:, arm_replay.arm_columns(e.joints)])
        sensors.append(msys.TimeSeries(times=np.arange(e.nframe) / fps, data=q, signal_mapping=qpos_map))
        states.append(msys.create_initial_state(model, arm_replay.to_radians(e.state[:1], e.joints)[0]))
        names.append(f'episode {e.index}')
    seqs = msys.ModelSequences('so101', spec, names, states, controls, sensors, allow_missing_sensors=True)
    params = msys.ParameterDict()
    lo, hi = sysid.LOG_BOUNDS
    for k, name in enumerate(arm_replay.PARAMS):
        params.add(msys.Parameter(name, float(sysid.to_log(start)[k]), lo[k], hi[k], modifier=servo_modifier(name)))
    residual = msys.build_residual_fn(models_sequences=[seqs])
    best, _ = msys.optimize(params, residual, optimizer='mujoco', verbose=False, x_scale='jac', max_iters=max_iters)
    return sysid.from_log(best.as_vector()).rounded(sysid.FIT_DIGITS)


def first_frames(episode, n: int):
    """The episode's first ``n`` frames."""
    return dataclasses.replace(episode, action=episode.action[:n], state=episode.state[:n],
                               timestamp=episode.timestamp[:n])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='3 s of one episode, 2 iterations: a check that it runs')
    parser.add_argument('--loo', action='store_true', help='both fits leave-one-out, each fold scored held out')
    args = parser.parse_args()
    data, _ = servo_sysid.find_dataset(None)
    if args.loo:
        return leave_one_out(data)
    fit_eps, heldout = servo_sysid.split(data)
    iterations = 50
    if args.quick:
        fit_eps, iterations = [first_frames(fit_eps[0], round(3 * fit_eps[0].fps))], 2
    start = arm_replay.THEROBOTSTUDIO
    results = {}
    for name, run in (('physai', lambda: sysid.fit_servo(fit_eps, starts={'therobotstudio': start},
                                                         max_iter=iterations, progress=False).servo),
                      ('mujoco.sysid', lambda: toolbox_fit(fit_eps, start, iterations))):
        t0, c0 = time.perf_counter(), time.process_time()
        servo = run()
        results[name] = (time.perf_counter() - t0, time.process_time() - c0, servo)
    for name, (wall, cpu, servo) in results.items():
        held = arm_replay.replay([servo], heldout)[0][0].mae_deg
        print(f'{name:13s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  lag {servo.lag_ms:5.0f} ms  held-out {held:.3f} deg  '
              f'{servo}')
    print(f'load {os.getloadavg()[0]:.1f}; mujoco.sysid / physai wall time: '
          f'{results["mujoco.sysid"][0] / results["physai"][0]:.2f}')


def leave_one_out(data):
    """Both fits on every fold (each from TheRobotStudio's gains), each scored on the episode the fold leaves out."""
    episodes = list(data.episodes)
    held = {'physai': [], 'mujoco.sysid': []}
    cpu = {'physai': 0.0, 'mujoco.sysid': 0.0}
    start = arm_replay.THEROBOTSTUDIO
    for k, out in enumerate(episodes):
        train = episodes[:k] + episodes[k + 1:]
        for name, run in (('physai', lambda: sysid.fit_servo(train, starts={'therobotstudio': start},
                                                             progress=False).servo),
                          ('mujoco.sysid', lambda: toolbox_fit(train, start))):
            c0 = time.process_time()
            servo = run()
            cpu[name] += time.process_time() - c0
            held[name].append(arm_replay.replay([servo], [out])[0][0].mae_deg)
            print(f'fold {out.index} {name:13s} held-out {held[name][-1]:.3f} deg  {servo}', flush=True)
    for name, h in held.items():
        print(f'{name:13s} leave-one-out {np.mean(h):.3f} deg (folds {", ".join(f"{x:.3f}" for x in h)}), '
              f'cpu {cpu[name]:.0f} s')
    wins = sum(a < b for a, b in zip(held['mujoco.sysid'], held['physai']))
    print(f'mujoco.sysid better held out in {wins} of {len(episodes)} folds; '
          f'leave-one-out mujoco.sysid / physai: {np.mean(held["mujoco.sysid"]) / np.mean(held["physai"]):.3f}')


if __name__ == '__main__':
    main()
