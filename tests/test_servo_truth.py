"""physai.experiments.servo_truth: the published STS3215 sets as read from their sources, the truth table's
leave-one-out protocol (nothing chosen on the episode held out), and the folds' independence from their held-out
episode."""

import dataclasses
import math

import numpy as np
import pytest

from physai.engine import servo_models, sysid
from physai.engine.datasets import shipped_recording
from physai.engine.servo_models import JointModel
from physai.engine.so101 import ARM_JOINTS
from physai.experiments import servo_sysid, servo_truth
from physai.laws import servo_gain

SOFT = sysid.ArmServo(kp=8.0, kv=0.7, forcerange=1.2, damping=0.15, frictionloss=0.15, armature=0.034)


def test_every_published_set_names_its_source_assumption_and_completion():
    names = [s.name for s in servo_truth.PUBLISHED]
    assert len(set(names)) == len(names)
    for s in servo_truth.PUBLISHED:
        assert s.source and s.assumes and s.completion
        assert (s.completion != 'none') or not s.uses_fit
        assert isinstance(s.model(JointModel.uniform(SOFT)), JointModel)


def test_the_sets_carry_the_numbers_their_sources_give():
    by = {s.name: s.model(JointModel.uniform(SOFT)) for s in servo_truth.PUBLISHED}
    assert by['Menagerie'].kp[0] == 998.22 and by['BAM m1, P = 32'].kp[0] == 17.8
    assert by['BAM m1, P = 16'].kp[0] == pytest.approx(servo_gain.BAM_STS3215.kp(16))
    duck = by['Open Duck Mini v2']
    assert (duck.kp[0], duck.damping[0], duck.frictionloss[0], duck.armature[0], duck.forcerange[0]) == (
        13.37, 0.56, 0.068, 0.027, 3.23)
    anchor = by['Isaac Lab AnchorBench']
    assert anchor.kp[:3] == (48.42, 47.78, 14.72) and anchor.kv[:2] == (3.335, 2.563)
    assert anchor.kp[3] == pytest.approx(np.mean([48.42, 47.78, 14.72]))  # a joint not read: the mean of those read
    assert anchor.kv[2] == pytest.approx(np.mean([3.335, 2.563]))
    assert by['MuJoCo Playground'].armature == (0.1088, 0.1472, 0.1224, 0.1133, 0.1146, 0.1985)


def test_a_partial_set_is_completed_from_the_folds_own_fit():
    """Playground gives armature and friction only; the static load test kp only, keeping the fit's lag."""
    fit = JointModel.uniform(SOFT)
    sets = {s.name: s for s in servo_truth.PUBLISHED}
    playground = sets['MuJoCo Playground'].model(fit)
    assert playground.kp == fit.kp and playground.armature[0] == 0.1088
    static = sets['static load test'].model(fit)
    assert static.kp[0] == pytest.approx(servo_truth.STATIC_LOAD_KP)
    np.testing.assert_allclose(static.lag_ms(), fit.lag_ms())
    assert 32 < servo_truth.STATIC_LOAD_KP < 47


def _fold(heldout: int, train: tuple[int, ...], best_shift: int, spring: JointModel) -> servo_truth.Fold:
    return servo_truth.Fold(heldout=heldout, train=train, best_shift=best_shift,
                            models={servo_models.SPRING.name: spring}, converged={servo_models.SPRING.name: True},
                            heldout_mae={servo_models.SPRING.name: 1.0})


def test_the_truth_table_scores_each_model_on_each_held_out_episode_and_shifts_the_teleport_per_fold():
    data = sysid.synthetic_dataset(nepisode=3, seconds=2.0)
    folds = [_fold(e.index, tuple(x.index for x in data.episodes if x is not e), shift, JointModel.uniform(SOFT))
             for e, shift in zip(data.episodes, (2, 3, 4))]
    rows = {r['model']: r for r in servo_truth.truth_table(data, folds)}
    held = [servo_sysid.teleport_errors([e], s).mean() for e, s in zip(data.episodes, (2, 3, 4))]
    shift = rows['teleport, best shift']
    assert shift['loo_deg'] == pytest.approx(np.mean(held)) and shift['vs_shift'] == 1.0
    assert shift['heldout_deg'] == pytest.approx(held[-1])
    men = sysid.replay([sysid.MENAGERIE], list(data.episodes))[0]
    assert rows['Menagerie']['loo_deg'] == pytest.approx(np.mean([r.mae_deg for r in men]))
    assert rows['Menagerie']['p_bam'] == pytest.approx(998.22 / servo_gain.BAM_STS3215.kp_per_p)
    assert math.isnan(rows['teleport']['p_bam'])


@pytest.mark.slow
def test_a_folds_fit_does_not_depend_on_the_episode_it_leaves_out():
    """Leave-one-out without leakage: scramble one episode's recording, and the fold that leaves it out fits the same
    servo, bit for bit (its start, TheRobotStudio's gains, has seen no data); the folds that train on it move."""
    data = sysid.synthetic_dataset(nepisode=3, seconds=3.0)
    first = servo_truth.compare_structures(data, rivals=(), max_iter=20)
    e = data.episodes[1]
    scrambled = dataclasses.replace(e, state=e.state + np.linspace(0, 8, e.nframe)[:, None],
                                    action=e.action[::-1].copy())
    second = servo_truth.compare_structures(dataclasses.replace(data, episodes=(data.episodes[0], scrambled,
                                                                               data.episodes[2])), rivals=(),
                                            max_iter=20)
    spring = servo_models.SPRING.name
    assert second[1].models[spring] == first[1].models[spring]
    assert second[0].models[spring] != first[0].models[spring] and second[2].models[spring] != first[2].models[spring]


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_the_rivals_end_soft_from_a_stiff_start_too():
    """On the book's fit episodes: both rivals started from a stiff servo (kp 60, kv keeping the spring's lag, the
    rest as the spring), the delay structure with a delay of three frames and the offsets structure with the held-pose
    offsets, end where the chapter's rivals (started from the spring) end: the delay at its one-step floor, kp soft,
    the same training cost."""
    data, _ = servo_sysid.find_dataset(None)
    fit_eps = list(data.episodes[:3])
    spring = sysid.fit_servo(fit_eps, starts={'therobotstudio': sysid.THEROBOTSTUDIO}, progress=False).servo
    offsets = tuple(servo_sysid.static_offsets_deg(fit_eps))
    stiff = dataclasses.replace(spring, kp=60.0, kv=60.0 * spring.lag_ms / 1e3 - spring.damping)
    h = 1.0 / (data.fps * sysid.ReplayConfig().substeps(data.fps))
    problems = [
        (servo_models.SPRING_DELAY, fit_eps, JointModel.uniform(spring, delay=h)),
        (servo_models.SPRING_DELAY, fit_eps, JointModel.uniform(stiff, delay=3 / data.fps)),
        (servo_models.SPRING_OFFSETS, fit_eps, JointModel.uniform(spring)),
        (servo_models.SPRING_OFFSETS, fit_eps, JointModel.uniform(stiff, offsets_deg=offsets)),
    ]
    ours_delay, stiff_delay, ours_offsets, stiff_offsets = servo_models.fit(problems)
    assert stiff_delay.model.delay < 1.5 * h and stiff_delay.model.kp[0] < 15
    assert stiff_delay.cost == pytest.approx(ours_delay.cost, rel=0.01)
    assert stiff_offsets.model.kp[0] < 15 and max(abs(c) for c in stiff_offsets.model.offsets_deg) < 1.5
    assert stiff_offsets.cost == pytest.approx(ours_offsets.cost, rel=0.01)
    assert all(abs(a - b) < 0.3 for a, b in zip(stiff_offsets.model.offsets_deg, ours_offsets.model.offsets_deg))
