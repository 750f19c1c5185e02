"""physai.experiments.servo_firmware: the ablation's protocol (each element chosen on training episodes only, scored on
the one held out) and its verdicts."""

import numpy as np
import pytest

from physai.engine import arm_replay
from physai.engine.servo_models import SPRING, JointModel
from physai.experiments import servo_firmware, servo_truth


def test_verdict_needs_every_fold_beyond_half_an_encoder_step():
    """An element helps or hurts only when every fold moves the same way by more than TELL_DEG."""
    t = servo_firmware.TELL_DEG
    assert t == pytest.approx(0.5 * 360 / 4096)
    assert servo_firmware.verdict([-2 * t, -1.5 * t, -3 * t]) == 'helps'
    assert servo_firmware.verdict([2 * t, 1.5 * t]) == 'hurts'
    assert servo_firmware.verdict([-2 * t, -0.5 * t]) == 'cannot tell'
    assert servo_firmware.verdict([-2 * t, 2 * t]) == 'cannot tell'


@pytest.mark.slow
def test_an_element_chosen_off_scores_as_the_spring_and_nothing_held_out_is_used():
    """Where the training episodes choose an element off, the held-out error is the spring's, to the bit; every
    choice is made on the fold's training episodes (a held-out episode changed beyond recognition changes no
    choice)."""
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=3.0)
    servo = JointModel.uniform(arm_replay.HIDDEN_SERVO)
    episodes = list(data.episodes)
    folds = []
    for k, e in enumerate(episodes):
        spring_held = arm_replay.replay([arm_replay.HIDDEN_SERVO], [e])[0][0].mae_deg
        folds.append(servo_truth.Fold(heldout=e.index, train=tuple(x.index for x in episodes if x is not e),
                                      best_shift=1, models={SPRING.name: servo}, converged={SPRING.name: True},
                                      heldout_mae={SPRING.name: spring_held}))
    elements = [el for el in servo_firmware.ELEMENTS if el.name in ('dead band', 'slew limit')]
    results = servo_firmware.ablation(data, folds, elements=elements)
    assert len(results) == len(elements) * len(folds)
    for r in results:
        if r.chosen == 0:  # off: the data were made without a dead band or a slew limit
            assert r.heldout_deg == r.spring_deg
    rows = servo_firmware.ablation_rows(results, folds, elements)
    assert [r['model'] for r in rows] == ['spring (chapter 4)', '+ dead band', '+ slew limit']
    assert all(set(k for k, *_ in servo_firmware.ABLATION_COLUMNS) <= set(r) for r in rows)
    assert np.isfinite([r['loo_deg'] for r in rows]).all()
