"""physai.engine.sysid: chapter 4's residuals and servo fit, on data of known servos (the replay they rest on is
tests/test_arm_replay.py)."""

import dataclasses

import mujoco
import mujoco.minimize
import numpy as np
import pytest

from physai.engine import arm_replay, sysid
from physai.experiments import servo_sysid
from physai.engine.arm_replay import ArmServo, ReplayConfig
from physai.engine.so101 import JOINTS


def test_residuals_half_squared_norm_is_half_the_mean_squared_error(synthetic_episode, soft):
    ep = synthetic_episode()
    x = np.stack([sysid.to_log(soft), sysid.to_log(arm_replay.MENAGERIE)], axis=1)
    r = sysid.residuals(x, [ep])
    assert r.shape == (5 * (ep.nframe - 1), 2)
    rep = arm_replay.replay([soft], [ep])[0][0]
    mse = np.mean((rep.sim_deg[1:] - rep.real_deg[1:]) ** 2)
    assert 0.5 * np.sum(r[:, 0] ** 2) == pytest.approx(0.5 * mse)


def test_batched_residuals_equal_column_by_column_bit_for_bit(synthetic_episode, soft):
    """The residuals of a Jacobian's six candidates, replayed in one batch, are those of each candidate alone.
    (The side-by-side fits get theirs from batches shared with other fits: see the next test.)"""
    episodes = [synthetic_episode(30, 0), synthetic_episode(24, 1, delay=2)]
    x = sysid.to_log(soft)[:, None] + np.diag(np.full(len(arm_replay.PARAMS), 1e-3))  # six finite-difference probes
    batched = sysid.residuals(x, episodes)
    assert batched.shape == (5 * (30 - 1 + 24 - 1), 6) and np.all(np.isfinite(batched))
    for k in range(x.shape[1]):
        np.testing.assert_array_equal(batched[:, k], sysid.residuals(x[:, k], episodes)[:, 0])


def test_side_by_side_fits_take_the_path_of_each_fit_alone(synthetic_episode):
    """fit_servos runs several fits as one batch per round; each ends on the bits of least_squares run alone
    on sysid.residuals, one call per candidate set (the unbatched fit), iterations and costs included."""
    problems = [[synthetic_episode(12, 0, delay=2)], [synthetic_episode(10, 1, delay=3), synthetic_episode(8, 2)]]
    starts = {'therobotstudio': arm_replay.THEROBOTSTUDIO, 'published-fit': arm_replay.PUBLISHED_FIT}
    fits = sysid.fit_servos(problems, starts=starts, max_iter=2, progress=False)
    for episodes, fit in zip(problems, fits):
        for start in fit.starts:
            x, trace = mujoco.minimize.least_squares(
                sysid.to_log(start.start), lambda x: sysid.residuals(x, episodes), bounds=sysid.LOG_BOUNDS,
                eps=1e-3, max_iter=2, verbose=mujoco.minimize.Verbosity.SILENT, **sysid.SOLVER)
            assert start.servo == sysid.from_log(x) and start.iterations == len(trace) - 1
            np.testing.assert_array_equal(start.objectives, [log.objective for log in trace])
        assert fit.servo == sysid.kept_start(fit.starts).servo.rounded(sysid.FIT_DIGITS)
    assert fits[0].evaluations > 0 and fits[1].evaluations > 0


def _flat_tail(x):
    """A cost that ends in a flat tail: x0 found in one Gauss-Newton step, x1 only creeping towards 0 (a cubic
    residual: each step takes a third of x1 off), over a floor of 0.5."""
    x = np.asarray(x, dtype=float).reshape(2, -1)
    return np.stack([x[0] - 1.0, 0.05 * x[1] ** 3, np.ones(x.shape[1])])


def test_the_fit_stops_at_the_first_iteration_that_gains_less_than_ftol():
    """sysid.least_squares follows mujoco.minimize.least_squares with the fit's schedule step for step, and stops
    at the first iteration that lowers the cost by less than FTOL of it, at that iteration's start point."""
    bounds = (np.array([-2.0, -2.0]), np.array([2.0, 2.0]))
    x0 = np.array([0.0, 1.5])
    _, full = mujoco.minimize.least_squares(x0, _flat_tail, bounds=bounds, eps=1e-6, max_iter=200,
                                            verbose=mujoco.minimize.Verbosity.SILENT, **sysid.SOLVER)
    stop = next(i for i, log in enumerate(full) if log.reduction < sysid.FTOL * log.objective)
    assert 0 < stop < len(full) - 1  # the rule stops it before the solver's own tolerances would
    x, trace = sysid.least_squares(x0, _flat_tail, bounds=bounds, eps=1e-6, max_iter=200)
    assert len(trace) == stop + 1
    np.testing.assert_array_equal(x, np.ravel(full[stop].candidate))
    assert [log.objective for log in trace] == [log.objective for log in full[:stop + 1]]
    assert all(log.reduction >= sysid.FTOL * log.objective for log in trace[:-1])
    # a cap reached first ends it as the solver does, with the final point's log last
    x2, trace2 = sysid.least_squares(x0, _flat_tail, bounds=bounds, eps=1e-6, max_iter=2)
    assert len(trace2) == 3 and trace2[-1].reduction == 0
    np.testing.assert_array_equal(x2, np.ravel(trace2[-1].candidate))


def test_side_by_side_fits_refuse_bad_input(synthetic_episode):
    ep = synthetic_episode(12, 0)
    with pytest.raises(ValueError, match='problems must be one or more sequences of episodes'):
        sysid.fit_servos([], progress=False)
    with pytest.raises(ValueError, match='episodes must share one fps'):
        sysid.fit_servos([[ep], [dataclasses.replace(ep, fps=25.0)]], progress=False)
    with pytest.raises(ValueError, match='episodes must hold at least one episode'):
        sysid.fit_servos([[ep], []], progress=False)
    nan = dataclasses.replace(ep, action=np.where(np.arange(ep.nframe)[:, None] == 3, np.nan, ep.action))
    with pytest.raises(ValueError, match='episode 0 action must be finite'):
        sysid.fit_servos([[ep], [nan]], progress=False)


def test_log_parameters_round_trip(soft):
    assert sysid.from_log(sysid.to_log(soft)).as_dict() == pytest.approx(soft.as_dict(), rel=1e-12)
    low, high = sysid.LOG_BOUNDS
    for servo in arm_replay.BASELINES.values():
        assert np.all(sysid.to_log(servo) >= low) and np.all(sysid.to_log(servo) <= high)


@pytest.mark.slow
def test_fit_recovers_the_lag_of_a_known_servo_and_is_deterministic(synthetic_episode):
    """Data made by a known servo: the fit runs until the solver's tolerances stop it, brings the error
    far down and finds its lag (kv + damping)/kp; run twice, it ends on the same bits."""
    true = ArmServo(kp=20.0, kv=0.5, forcerange=2.5, damping=0.5, frictionloss=0.02, armature=0.05)
    episodes = []
    for i in range(2):
        ep = synthetic_episode(40, i)
        sim = arm_replay.replay([true], [ep])[0][0].sim_deg
        state = ep.state.copy()
        state[:, :5] = sim
        episodes.append(dataclasses.replace(ep, state=state))
    starts = {'menagerie': arm_replay.MENAGERIE, 'therobotstudio': arm_replay.THEROBOTSTUDIO}
    fit = sysid.fit_servo(episodes, starts=starts, progress=False)
    again = sysid.fit_servo(episodes, starts=starts, progress=False)
    assert fit.servo == again.servo
    assert [s.servo for s in fit.starts] == [s.servo for s in again.starts]
    assert fit.servo == sysid.kept_start(fit.starts).servo.rounded(sysid.FIT_DIGITS)
    assert [s.iterations for s in fit.starts] == [s.iterations for s in again.starts]
    assert [s.name for s in fit.starts] == ['menagerie', 'therobotstudio']
    for start in fit.starts:
        assert start.converged and start.iterations < start.max_iter == 50
        assert start.objectives[-1] <= start.objectives[0]
    assert arm_replay.mae_deg(arm_replay.replay([fit.servo], episodes)[0]) < 0.1
    assert fit.servo.lag_ms == pytest.approx(true.lag_ms, rel=0.2)
    low, high = sysid.LOG_BOUNDS
    assert np.all(sysid.to_log(fit.servo) >= low) and np.all(sysid.to_log(fit.servo) <= high)


def test_bad_replay_and_fit_settings(synthetic_episode):
    with pytest.raises(ValueError, match=r'timestep must be in \(0, 0.1\] s, got 0.2'):
        ReplayConfig(timestep=0.2)
    with pytest.raises(ValueError, match='integrator must be one of Euler, RK4'):
        ReplayConfig(integrator='Verlet')
    with pytest.raises(ValueError, match='shift must be an integer >= 0 frames, got -1'):
        servo_sysid.teleport_errors([synthetic_episode()], -1)
    with pytest.raises(ValueError, match='max_iter must be an integer >= 1, got 0'):
        sysid.fit_servo([synthetic_episode()], max_iter=0, progress=False)
    ep = synthetic_episode()
    with pytest.raises(ValueError, match='lacks the arm joints'):
        arm_replay.to_radians(ep.action[:, :3], JOINTS[:3])
