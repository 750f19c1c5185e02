"""physai.experiments.servo_truth: the published STS3215 sets as read from their sources, the truth table's
leave-one-out protocol (nothing chosen on the episode held out), and the folds' independence from their held-out
episode."""

import dataclasses
import math

import numpy as np
import pytest

from physai.engine import arm_replay, servo_models, sysid
from physai.engine.datasets import shipped_recording
from physai.engine.servo_models import JointModel
from physai.experiments import servo_sysid, servo_truth
from physai.laws import servo_gain

SOFT = arm_replay.ArmServo(kp=8.0, kv=0.7, forcerange=1.2, damping=0.15, frictionloss=0.15, armature=0.034)


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
    # its earlier kp 17.12 with the same forcerange is a pair of BAM's export at P = 32 (forcerange = V kt/R there)
    assert 17.12 / duck.forcerange[0] == pytest.approx(servo_gain.BAM_STS3215.duty_gain * 32, rel=0.005)
    anchor = by['Isaac Lab AnchorBench']
    assert anchor.kp[:3] == (48.42, 47.78, 14.72) and anchor.kv[:2] == (3.335, 2.563)
    assert anchor.kp[3] == SOFT.kp and anchor.kv[2] == SOFT.kv  # a value the card did not give: the fold's spring's
    means = next(s for s in servo_truth.PUBLISHED if s.name == 'Isaac Lab AnchorBench').completions[1].model(None)
    assert means.kp[3] == pytest.approx(np.mean([48.42, 47.78, 14.72])) and means.kv[2] == pytest.approx(2.949)
    assert by['MuJoCo Playground'].armature == (0.1088, 0.1472, 0.1224, 0.1133, 0.1146, 0.1985)
    nvidia = by['NVIDIA gtc_berlin']  # gtc_berlin.yaml as the file gives it, the effort limit AnchorBench's
    assert nvidia.kp[2] == pytest.approx(18.565405780730025) and nvidia.kv[0] == pytest.approx(2.309705389862818)
    assert nvidia.frictionloss[1] == pytest.approx(0.3181311647624241)  # dry friction
    assert nvidia.damping[4] == pytest.approx(0.4502010515484256)  # viscous friction
    assert nvidia.armature[3] == pytest.approx(0.05110346770103517) and nvidia.forcerange == (3.35,) * 6


def test_a_partial_set_is_completed_from_the_folds_own_fit():
    """Playground gives armature and friction only; the static load test kp only, keeping the fit's lag."""
    fit = JointModel.uniform(SOFT)
    sets = {s.name: s for s in servo_truth.PUBLISHED}
    playground = sets['MuJoCo Playground'].model(fit)
    assert playground.kp == fit.kp and playground.armature[0] == 0.1088
    static = sets['static load test, cos 45°'].model(fit)
    assert static.kp[0] == pytest.approx(servo_truth.STATIC_LOAD_KP)
    np.testing.assert_allclose(static.lag_ms(), fit.lag_ms())
    full = sets['static load test, no cosine'].model(fit)
    assert full.kp[0] == pytest.approx(servo_truth.STATIC_LOAD_KP_FULL)
    np.testing.assert_allclose(full.lag_ms(), fit.lag_ms())


def test_every_partial_set_is_also_completed_from_menageries_values_and_every_default_is_named():
    """Completion is a dimension of the table: each set completed from the fold's fit is also scored with its gaps
    filled from Menagerie's class, which owes nothing to the recording, and the second solution also from the study's
    own fit."""
    fit = JointModel.uniform(SOFT)
    men = JointModel.uniform(arm_replay.MENAGERIE)
    for s in servo_truth.PUBLISHED:
        names = [c.name for c in s.all_completions()]
        assert len(set(names)) == len(names) and names[0] == s.completion_name
        if s.uses_fit:
            assert any(n.startswith(servo_truth.MENAGERIE_VALUES) for n in names), s.name
    second = {c.name: c.model(fit) for c in next(s for s in servo_truth.PUBLISHED
                                                 if s.name == 'servo study, second solution').all_completions()}
    assert all(m.kp[0] == 8.8 and m.kv[0] == 0.52 for m in second.values())
    assert second[servo_truth.MENAGERIE_VALUES].armature == men.armature
    assert second["the study's published fit"].armature[0] == arm_replay.PUBLISHED_FIT.armature
    assert second[servo_truth.FOLD_SPRING].forcerange == fit.forcerange


def test_the_static_loads_two_readings():
    """Issue #134's load at 45°: m g L cos 45° = 1.04 N·m gives kp 27, m g L = 1.47 N·m gives 38 (32 to 47 over the
    range of the error); about 1° of free play makes both lower bounds."""
    assert servo_truth.STATIC_LOAD_KP_FULL == pytest.approx(38.3, abs=0.05)
    low, high = (servo_truth.STATIC_LOAD_TORQUE_FULL / math.radians(d) for d in (2.6, 1.8))
    assert 32.3 < low < 32.5 and 46.7 < high < 46.9


def test_the_static_load_tests_kp_is_gravitys_torque_on_the_45_degree_lever_over_the_deflection():
    """Issue #134: 1.5 kg on a 10 cm lever at 45°, 1.8-2.6° of error: m g L cos 45° = 1.04 N·m over 2.2° is kp 27
    (23 to 33 over the range of the error), far softer than Menagerie's and stiffer than the fit's."""
    assert servo_truth.STATIC_LOAD_TORQUE == pytest.approx(1.5 * 9.81 * 0.10 / math.sqrt(2), rel=1e-12)
    assert servo_truth.STATIC_LOAD_KP == pytest.approx(27.1, abs=0.05)
    low, high = (servo_truth.STATIC_LOAD_TORQUE / math.radians(d) for d in (2.6, 1.8))
    assert 22.9 < low < 23 and 33.1 < high < 33.2


def _fold(heldout: int, train: tuple[int, ...], best_shift: int, spring: JointModel) -> servo_truth.Fold:
    return servo_truth.Fold(heldout=heldout, train=train, best_shift=best_shift,
                            models={servo_models.SPRING.name: spring}, converged={servo_models.SPRING.name: True},
                            heldout_mae={servo_models.SPRING.name: 1.0})


def test_the_truth_table_scores_each_model_on_each_held_out_episode_and_shifts_the_teleport_per_fold():
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=2.0)
    folds = [_fold(e.index, tuple(x.index for x in data.episodes if x is not e), shift, JointModel.uniform(SOFT))
             for e, shift in zip(data.episodes, (2, 3, 4))]
    rows = {r['model']: r for r in servo_truth.truth_table(data, folds)}
    held = [servo_sysid.teleport_errors([e], s).mean() for e, s in zip(data.episodes, (2, 3, 4))]
    shift = rows['teleport, best shift']
    assert shift['loo_deg'] == pytest.approx(np.mean(held)) and shift['vs_shift'] == 1.0
    assert shift['vs_shift_min'] == shift['vs_shift_max'] == 1.0
    assert shift['heldout_deg'] == pytest.approx(held[-1])
    men = arm_replay.replay([arm_replay.MENAGERIE], list(data.episodes))[0]
    assert rows['Menagerie']['loo_deg'] == pytest.approx(np.mean([r.mae_deg for r in men]))
    per_fold = [r.mae_deg / h for r, h in zip(men, held)]  # each fold over its own shifted teleport
    assert rows['Menagerie']['vs_shift_min'] == pytest.approx(min(per_fold))
    assert rows['Menagerie']['vs_shift_max'] == pytest.approx(max(per_fold))
    borrowed = {s.name for s in servo_truth.PUBLISHED if s.uses_fit}
    assert borrowed == {'MuJoCo Playground', 'static load test, cos 45°', 'static load test, no cosine',
                        'servo study, second solution', 'Isaac Lab AnchorBench'}
    assert all(rows[n]['from_fit'] == 'partly' for n in borrowed)
    assert rows['Menagerie']['from_fit'] == rows['teleport']['from_fit'] == 'no'
    assert rows['this book: spring']['from_fit'] == 'yes'
    assert rows['Menagerie']['p_bam'] == pytest.approx(998.22 / servo_gain.BAM_STS3215.kp_per_p)
    assert math.isnan(rows['teleport']['p_bam'])


@pytest.mark.slow
def test_a_folds_fit_does_not_depend_on_the_episode_it_leaves_out():
    """Leave-one-out without leakage: scramble one episode's recording, and the fold that leaves it out fits the same
    servo, bit for bit (its start, TheRobotStudio's gains, has seen no data); the folds that train on it move."""
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=3.0)
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


def _scrambled(data, k):
    e = data.episodes[k]
    bad = dataclasses.replace(e, state=e.state + np.linspace(0, 8, e.nframe)[:, None], action=e.action[::-1].copy())
    return dataclasses.replace(data, episodes=data.episodes[:k] + (bad,) + data.episodes[k + 1:])


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
@pytest.mark.parametrize('offsets', [False, True], ids=['as recorded', 'offsets'])
def test_no_fold_in_any_mode_depends_on_the_episode_it_leaves_out(offsets):
    """fit-servo's folds in both of the ways it fits them (as recorded; with the held-pose offsets taken to be
    calibration, each fold measuring them on its own training episodes): scramble one episode, and every model of
    the fold that leaves it out (spring, delay, offsets) stays bit for bit; the folds that train on it move."""
    data = servo_sysid.load_book_dataset()
    data = dataclasses.replace(data, episodes=data.episodes[:3])
    first = servo_truth.compare_structures(data, max_iter=3, offsets=offsets)
    second = servo_truth.compare_structures(_scrambled(data, 1), max_iter=3, offsets=offsets)
    assert second[1].models == first[1].models
    spring = servo_models.SPRING.name
    assert second[0].models[spring] != first[0].models[spring] and second[2].models[spring] != first[2].models[spring]
    if offsets:  # each fold's offsets are its own training episodes'
        for f in first:
            train = [e for e in data.episodes if e.index in f.train]
            assert f.models[spring].offsets_deg == tuple(float(c) for c in servo_sysid.static_offsets_deg(train))


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
@pytest.mark.parametrize('mode', ['default', 'per_joint', 'offsets', 'delay'])
def test_fit_servo_hands_its_folds_the_recorded_commands_in_every_mode(mode, monkeypatch):
    """In every mode of fit-servo the folds get the episodes as recorded (nothing measured on all of them taken off
    first) and measure any offsets inside each fold: the test above then covers every mode."""
    from physai.cli import identify

    class Stop(Exception):
        pass

    seen = {}

    def capture(dataset, **kwargs):
        seen.update(dataset=dataset, **kwargs)
        raise Stop

    monkeypatch.setattr(servo_truth, 'compare_structures', capture)
    data = servo_sysid.load_book_dataset()
    fit, heldout = list(data.episodes[:3]), [data.episodes[3]]
    with pytest.raises(Stop):
        identify.identify(data, fit, heldout, max_iter=1, progress=False, **({} if mode == 'default' else {mode: True}))
    assert seen['offsets'] is (mode == 'offsets')
    assert all(a is b for a, b in zip(seen['dataset'].episodes, fit + heldout))


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_the_rivals_end_soft_from_a_stiff_start_too(book_fit):
    """On the book's fit episodes: both rivals started from a stiff servo (kp 60, kv keeping the spring's lag, the
    rest as the spring), the delay structure with a delay of three frames and the offsets structure with the held-pose
    offsets, end where the chapter's rivals (started from the spring) end: the delay at its one-step floor, kp soft,
    the same training cost."""
    data, fit_eps, _, spring = book_fit  # the book's fit episodes, 0-2, and its fit (conftest.py)
    offsets = tuple(servo_sysid.static_offsets_deg(fit_eps))
    stiff = dataclasses.replace(spring, kp=60.0, kv=60.0 * spring.lag_ms / 1e3 - spring.damping)
    h = 1.0 / (data.fps * arm_replay.ReplayConfig().substeps(data.fps))
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


@pytest.fixture(scope='module')
def chapter(book_fit):
    """Chapter 4's protocol on the shipped recording: the main fit (episodes 0-2, from TheRobotStudio's gains) as the
    fold that leaves out episode 3, the other folds and the rival structures fitted fold by fold, the truth table."""
    data, _, heldout, fitted = book_fit  # conftest.py: fitted once a session
    folds = servo_truth.compare_structures(data, known={heldout[0].index: fitted})
    rows = {r['model']: r for r in servo_truth.truth_table(data, folds)}
    return data, fitted, folds, rows


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_the_recording_prefers_the_soft_spring_and_no_delay_and_small_offsets(chapter):
    """The structures as chapter 4 reads them: the delay stays at its one-step floor and changes the error by under 2 %
    in every fold; the offsets help in every fold (by 2 to 9 %), stay under a degree, and leave kp soft."""
    data, _, folds, _ = chapter
    step = 1.0 / (data.fps * arm_replay.ReplayConfig().substeps(data.fps))
    spring, delay, offsets = (s.name for s in (servo_models.SPRING, servo_models.SPRING_DELAY,
                                                servo_models.SPRING_OFFSETS))
    for f in folds:
        assert f.models[delay].delay < 1.5 * step
        assert abs(f.heldout_mae[delay] / f.heldout_mae[spring] - 1) < 0.02
        assert 0.02 < 1 - f.heldout_mae[offsets] / f.heldout_mae[spring] < 0.1
        assert max(abs(c) for c in f.models[offsets].offsets_deg) < 1.0
        assert f.models[offsets].kp[0] < 2 * f.models[spring].kp[0] < 20


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_the_truth_table_says_what_chapter_4_reads_from_it(chapter):
    """Menagerie is no better than the plain teleport, and with its best delay (100 ms in every fold) no better than
    the teleport at its best shift; every set that borrows nothing lies between about the two teleports, the study's
    fit the best of them, about 1.5 times the spring; BAM at P = 16 beats P = 32; no published set under any of its
    completions beats the spring on average; the spring is 2 to 3.3 times closer than Menagerie in every fold; the
    folds' kp reads as P 14-16 through BAM's law."""
    data, fitted, folds, rows = chapter
    ours, tele, shift = rows['this book: spring'], rows['teleport'], rows['teleport, best shift']
    assert abs(rows['Menagerie']['loo_deg'] / tele['loo_deg'] - 1) < 0.02
    stiff = rows[servo_truth.STIFF_DELAY]
    assert stiff['delay_ms_min'] == stiff['delay_ms_max'] == 100.0
    assert abs(stiff['loo_deg'] / shift['loo_deg'] - 1) < 0.03
    independent = [r for r in rows.values() if r['kind'] == 'published' and r['from_fit'] == 'no']
    assert all(0.9 * shift['loo_deg'] < r['loo_deg'] < 1.02 * tele['loo_deg'] for r in independent)
    best = min(independent, key=lambda r: r['loo_deg'])
    assert best['model'] == 'servo study, published fit' and 1.4 < best['loo_deg'] / ours['loo_deg'] < 1.6
    assert rows['BAM m1, P = 16']['loo_deg'] < rows['BAM m1, P = 32']['loo_deg']
    assert all(r['best_completion_deg'] > ours['loo_deg'] for r in rows.values() if r['kind'] == 'published')
    men = [a / b for a, b in zip(rows['Menagerie']['heldout_folds'], ours['heldout_folds'])]
    assert 1.95 < min(men) and max(men) < 3.4
    p = [servo_gain.BAM_STS3215.p_register(f.models[servo_models.SPRING.name].kp[0]) for f in folds]
    assert 13 < min(p) and max(p) < 16.5


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_the_second_solution_scores_what_its_completion_gives_it(chapter):
    """The study's second solution (kp 8.8, kv 0.52) leave-one-out under each completion, on the recording in
    degrees (LeRobot's -100..100 converted): from Menagerie's values 0.82°, from each fold's spring 0.91°, from the
    study's own fit 1.43° and from that fit with Menagerie's armature 0.88°, against the spring's 0.79°. The
    armature of the completion decides most of it; none beats the spring on average."""
    _, _, _, rows = chapter
    second = {k: v['loo_deg'] for k, v in rows['servo study, second solution']['completions'].items()}
    expected = {servo_truth.MENAGERIE_VALUES: 0.818, servo_truth.FOLD_SPRING: 0.908,
                "the study's published fit": 1.426, "the study's published fit, Menagerie's armature": 0.879}
    assert second == pytest.approx(expected, abs=0.005)
    assert rows['this book: spring']['loo_deg'] == pytest.approx(0.795, abs=0.005)
    assert min(second.values()) > rows['this book: spring']['loo_deg']


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_nvidias_identification_is_scored_and_needs_its_larger_clamp(chapter):
    """NVIDIA's gtc_berlin.yaml, complete but for a force limit: 1.32° leave-one-out with the AnchorBench card's
    3.35 N·m (about Menagerie's 2.94 gives the same), but 1.9° with each fold's softer clamp, which its stiff joints
    (kp 19 to 51) saturate; between the teleport and its best shift, like every set that borrows nothing."""
    _, _, _, rows = chapter
    nvidia = rows['NVIDIA gtc_berlin']
    assert nvidia['from_fit'] == 'no' and nvidia['loo_deg'] == pytest.approx(1.323, abs=0.005)
    by = {k: v['loo_deg'] for k, v in nvidia['completions'].items()}
    assert by[servo_truth.MENAGERIE_VALUES] == pytest.approx(1.313, abs=0.005)
    assert by[servo_truth.FOLD_SPRING] == pytest.approx(1.931, abs=0.01)
    assert rows['teleport, best shift']['loo_deg'] < nvidia['loo_deg'] < rows['teleport']['loo_deg']


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_playgrounds_armature_alone_costs_the_spring_most_of_a_degree(chapter):
    """MuJoCo Playground's per-joint armature (0.11-0.20 kg·m², several times the fit's 0.03) put alone on each fold's
    spring raises the mean held-out error from about 0.8° to over 1.3°: the recording does not support it."""
    data, _, folds, rows = chapter
    playground = next(s for s in servo_truth.PUBLISHED if s.name == 'MuJoCo Playground')
    at = {e.index: e for e in data.episodes}
    errors = []
    for f in folds:
        spring = f.models[servo_models.SPRING.name]
        model = spring.replace(armature=playground.model(spring).armature)
        errors.append(servo_models.replay([model], [at[f.heldout]])[0][0].mae_deg)
    assert np.mean(errors) > 1.3 and np.mean(errors) > 1.5 * rows['this book: spring']['loo_deg']


@pytest.mark.slow
@pytest.mark.skipif(not shipped_recording().is_dir(), reason='the shipped SO-101 recording is absent')
def test_a_spring_refitted_around_playgrounds_armature_recovers_part_of_the_loss(chapter):
    """Refitted with Playground's armature and friction pinned (kp, kv, forcerange, damping free, fold by fold), the
    spring scores about 1.0° held out: better than the bare substitution (over 1.3°), worse than its own small
    armature (0.79°). The substitution alone overstates the case against a large armature."""
    data, _, folds, rows = chapter
    refit = servo_truth.refit_around(data, folds, armature=servo_truth._PLAYGROUND_ARMATURE,
                                     frictionloss=servo_truth._PLAYGROUND_FRICTIONLOSS)
    assert rows['this book: spring']['loo_deg'] < np.mean(refit) < 1.1 < 1.3
    assert servo_truth.AROUND_PINNED.free == ('kp', 'kv', 'forcerange', 'damping')
