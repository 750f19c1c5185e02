"""Chapter 4's truth table: every published STS3215 model and every model structure, scored alike on one recording.

One replay (``arm_replay.ReplayConfig()``: contacts off, limits on, implicitfast, 1/210 s at 30 fps), one metric (mean
absolute error of the five arm joints over frames 1..n-1, degrees), and one protocol, leave-one-out: each episode of
the recording is held out once; whatever is fitted or chosen (a fit, the teleport's best shift, a partial set's
missing values) is fitted or chosen on the other episodes only, from a start that has seen no data. A published set
that needs nothing from the data is simply replayed on each held-out episode.

:data:`PUBLISHED` holds the published sets, each with its source as read, the voltage and firmware gain it assumes,
and how a per-joint or partial set is completed; :func:`compare_structures` fits the chapter's spring and its rival
structures (:mod:`physai.engine.servo_models`) fold by fold; :func:`truth_table` scores them all; :func:`intervals`
says how far each identified parameter can move before the held-out error rises by a stated amount.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from physai.engine import arm_replay, servo_models, sysid
from physai.engine.datasets import LeRobotDataset
from physai.engine.servo_models import JointModel, Structure
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.engine.arm_replay import ArmServo, ReplayConfig
from physai.experiments import servo_sysid
from physai.experiments.registry import experiment
from physai.laws import servo_gain


# --------------------------------------------------------------------------------------------------
# The published sets
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class PublishedSet:
    """A published servo model of the STS3215 on the SO-101 (or of the STS3215 alone), as its source gives it."""

    name: str
    source: str
    """Where it was read (repository and file, or page)."""
    assumes: str
    """The voltage and firmware P gain it assumes, as far as the source says."""
    completion: str
    """How a per-joint or partial set is completed for the replay ('none' when the source gives every number)."""
    model: Callable[[JointModel], JointModel]
    """The replayed model, given the fold's own fit (the spring fitted on the fold's training episodes), which only a
    partial set uses."""
    uses_fit: bool = False
    """The set is completed from the fold's fit (so it differs from fold to fold, and is not independent of it)."""
    default_name: str = ''
    """A short name for the default completion (empty: derived, see :attr:`completion_name`)."""
    completions: tuple['Completion', ...] = ()
    """The other stated completions of a partial set, each scored beside :attr:`model` (its default): what fills
    the gaps is a choice, and the truth table shows how far the score moves with it."""

    def all_completions(self) -> tuple['Completion', ...]:
        """The default completion (:attr:`model`, named by :attr:`completion_name`) and then :attr:`completions`."""
        return (Completion(name=self.completion_name, model=self.model, uses_fit=self.uses_fit),) + self.completions

    @property
    def completion_name(self) -> str:
        """The default completion's short name: 'none' for a complete set, else "each fold's spring" when it borrows
        from the fold's fit, else the first clause of :attr:`completion`."""
        if self.default_name:
            return self.default_name
        if self.completion == 'none':
            return 'none'
        return FOLD_SPRING if self.uses_fit else self.completion.split(';')[0]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Completion:
    """One way to fill a partial set's gaps."""

    name: str
    model: Callable[[JointModel], JointModel]
    """The replayed model, given the fold's spring."""
    uses_fit: bool = False
    """The gaps are filled from the fold's own fit."""


FOLD_SPRING = "each fold's spring"
MENAGERIE_VALUES = "Menagerie's values"
"""The names of the two completions every partial set is scored under: its gaps filled from the spring fitted on the
fold's training episodes, or from Menagerie's STS3215 class (kp 998.22, kv 2.731, forcerange 2.94, damping 0.6,
frictionloss 0.052, armature 0.028), a published set that owes nothing to this recording."""


def _joints(**values: Sequence[float]) -> JointModel:
    return JointModel(**{k: tuple(float(x) for x in v) for k, v in values.items()})


def _mean_fill(read: Sequence[float | None]) -> tuple[float, ...]:
    """A per-joint list with the joints the source does not give (None) set to the mean of those it gives."""
    known = [v for v in read if v is not None]
    return tuple(float(np.mean(known)) if v is None else float(v) for v in read)


def _fill(read: dict[str, Sequence[float | None]], base: JointModel) -> JointModel:
    """``base`` with every value ``read`` gives (None: not given, ``base``'s kept), joint by joint."""
    return base.replace(**{k: tuple(float(b) if v is None else float(v) for v, b in zip(vs, getattr(base, k)))
                           for k, vs in read.items()})


# The Isaac Lab SO-101 asset's AnchorBench fit as the dataset card lists it, JOINTS order. None: a value of the card's
# table this book could not read (the copy of the card it could consult, a search index's, breaks off after the elbow's
# stiffness; the wrist joints, the gripper and the elbow's other columns are missing). The set is scored under three
# completions of those gaps, and says so.
_ANCHOR = dict(kp=(48.42, 47.78, 14.72, None, None, None), kv=(3.335, 2.563, None, None, None, None),
               armature=(0.0676, 0.0276, None, None, None, None), frictionloss=(0.347, 0.345, None, None, None, None),
               damping=(1.591, 0.561, None, None, None, None), forcerange=(3.35, 3.35, None, None, None, None))

# MuJoCo Playground v1.0.0, mujoco_playground/robots/so101/sim/constant.py, JOINTS order. The file goes on to give
# the position servo's PD gains, identified with these; the truth table does not use them (its row scores the armature
# and the friction alone, on the fold's own spring).
_PLAYGROUND_ARMATURE = (0.1088, 0.1472, 0.1224, 0.1133, 0.1146, 0.1985)
_PLAYGROUND_FRICTIONLOSS = (0.0001, 0.0, 0.0, 0.0, 0.0, 0.2517)

# NVIDIA/so101-typing-task, source/so101_typing/tasks/SO101/data/gtc_berlin.yaml (commit 7aec2ed2), an
# "actuator_sys_id_result" (metric position_mse) per joint, JOINTS order, as the file gives them. Mapped as the
# AnchorBench card's columns are: stiffness -> kp, damping -> kv (Isaac Lab's actuator damping is the PD's
# derivative gain), armature, dry_friction -> frictionloss, viscous_friction -> joint damping. The file gives no
# effort limit.
_GTC_BERLIN = dict(
    kp=(48.93682087435154, 51.336503963086734, 18.565405780730025, 43.03380653711947, 47.135886076886166,
        50.83054002253434),
    kv=(2.309705389862818, 2.7829628172221677, 0.534694353676958, 2.7191323580266284, 1.7895194158608136,
        2.345108101123728),
    armature=(0.058228342618297214, 0.04425337526513037, 0.054507128694178224, 0.05110346770103517,
              0.05138195786130317, 0.04338043435613245),
    frictionloss=(0.2154699280851669, 0.3181311647624241, 0.4018746873200306, 0.29646325177526045,
                  0.2827718443928624, 0.31151570694796027),
    damping=(1.0732503444852939, 0.8773707044105059, 0.4925605028705261, 0.51747384516758, 0.4502010515484256,
             1.1389592259244838))
ANCHOR_EFFORT_LIMIT = 3.35
"""N·m: the effort limit the AnchorBench card lists for the joints it shows (the same asset family, NVIDIA's)."""

STATIC_LOAD_LEVER_DEG = 45.0
"""deg: the lever's angle in the load test of TheRobotStudio/SO-ARM100 issue #134 ("1.5 kg load, 10 cm lever, 45°
angle"), read as 45° from the horizontal (from the vertical gives the same torque)."""
STATIC_LOAD_TORQUE = 1.5 * 9.81 * 0.10 * math.cos(math.radians(STATIC_LOAD_LEVER_DEG))
"""N·m: gravity's torque of 1.5 kg on a 10 cm lever at ``STATIC_LOAD_LEVER_DEG``, m·g·L·cos(45°) = 1.04 (the same
issue)."""
STATIC_LOAD_DEFLECTION_DEG = (1.8, 2.6)
"""deg: the position error under that load, 20-30 encoder counts (the same issue, which also measures about 1° of free
play by hand; how much of the error that play is, it does not say)."""
STATIC_LOAD_KP = STATIC_LOAD_TORQUE / math.radians(float(np.mean(STATIC_LOAD_DEFLECTION_DEG)))
"""N·m/rad implied at the middle of the deflection range: 27 (23 to 33 over the range)."""
STATIC_LOAD_TORQUE_FULL = 1.5 * 9.81 * 0.10
"""N·m: the same load read without the cosine, m·g·L = 1.47 (the whole lever arm horizontal), the other reading of
"at 45° angle"."""
STATIC_LOAD_KP_FULL = STATIC_LOAD_TORQUE_FULL / math.radians(float(np.mean(STATIC_LOAD_DEFLECTION_DEG)))
"""N·m/rad at the middle of the deflection range without the cosine: 38 (32 to 47 over the range). Either reading is a
lower bound on the loop's stiffness: the same issue measures about 1° of free play by hand, part of the deflection."""

SECOND_SOLUTION = dict(kp=8.8, kv=0.52)
"""The second solution the servo study of the sources reports, from the same other rig as ``arm_replay.PUBLISHED_FIT``."""


def _on_ridge(fit: JointModel, kp: float) -> JointModel:
    """``fit`` with its kp set to ``kp`` and its kv set to keep each joint's lag (kv + damping)/kp."""
    return _on_ridge_of(fit, fit, kp)


def _on_ridge_of(base: JointModel, fit: JointModel, kp: float) -> JointModel:
    """``base`` with its kp set to ``kp`` and its kv set to give each joint ``fit``'s lag (kv + damping)/kp over
    ``base``'s joint damping."""
    lag = np.array([fit.joint(j).lag_ms for j in JOINTS]) / 1e3
    kv = np.maximum(lag * kp - np.array(base.damping), 0.0)
    return base.replace(kp=kp, kv=tuple(float(v) for v in kv))


_MENAGERIE_JOINTS = JointModel.uniform(arm_replay.MENAGERIE)


PUBLISHED: tuple[PublishedSet, ...] = (
    PublishedSet(
        name='Menagerie', source='google-deepmind/mujoco_menagerie robotstudio_so101/so101.xml, class sts3215',
        assumes='P = 16 read as volts per degree of error, 12 V datasheet values (Gregory119/RBE501-RL-arm-project)',
        completion='none', model=lambda fit: JointModel.uniform(arm_replay.MENAGERIE)),
    PublishedSet(
        name='BAM m1, P = 32', source='TheRobotStudio/SO-ARM100 Simulation/SO101/joints_properties.xml (its README: '
                                      'adapted from Open Duck Mini; the same file in apirrone/Open_Duck_Playground, '
                                      'and that repository\'s open_duck_mini_v2.xml from 13 to 20 March 2025); kp and '
                                      'forcerange are Rhoban/bam params/feetech_sts3215_7_4V/m1.json through the '
                                      'duty-gain law',
        assumes='7.4 V STS3215, firmware P = 32 (the default, LeRobot\'s so101_follower.py says), duty gain '
                '0.166/rad/P',
        completion='none', model=lambda fit: JointModel.uniform(arm_replay.THEROBOTSTUDIO)),
    PublishedSet(
        name='BAM m1, P = 16', source='the same identification at the P = 16 LeRobot writes (physai.laws.servo_gain)',
        assumes='7.4 V STS3215, P = 16 (LeRobot so101_follower.configure)',
        completion='none',
        model=lambda fit: JointModel.uniform(arm_replay.THEROBOTSTUDIO).replace(
            kp=float(servo_gain.BAM_STS3215.kp(servo_gain.LEROBOT_SO101_P)))),
    PublishedSet(
        name='Open Duck Mini v2', source='apirrone/Open_Duck_Playground open_duck_mini_v2.xml (f6988368, 2025-03-23), '
                                         'class sts3215',
        assumes='7.4 V STS3215; the file states neither P nor where its values come from (the kp 17.12 it held '
                '20-23 March 2025, with this forcerange 3.23, is a pair BAM\'s export gives at P = 32: kp/forcerange '
                '= 0.166 x 32)',
        completion='none', model=lambda fit: _joints(kp=[13.37] * 6, kv=[0.0] * 6, forcerange=[3.23] * 6,
                                                     damping=[0.56] * 6, frictionloss=[0.068] * 6,
                                                     armature=[0.027] * 6)),
    PublishedSet(
        name='Isaac Lab AnchorBench', source='Hugging Face dataset card sreetz-nv/so101_vials_actuators_sysid '
                                             '(the SO-101 asset\'s system-identification fit, per joint)',
        assumes='not stated; stiffness, damping, armature, static and viscous friction, effort limit per joint',
        completion='shoulder_pan and shoulder_lift as the card lists them, elbow_flex its stiffness (the copy of '
                   'the card this book could read breaks off there); the wrists, the gripper and the elbow\'s other '
                   'values from each fold\'s spring (static friction -> frictionloss, viscous friction -> joint '
                   'damping)',
        model=lambda fit: _fill(_ANCHOR, fit), uses_fit=True,
        completions=(Completion(name=MENAGERIE_VALUES, model=lambda fit: _fill(_ANCHOR, _MENAGERIE_JOINTS)),
                     Completion(name='the mean of the values read',
                                model=lambda fit: _joints(**{k: _mean_fill(v) for k, v in _ANCHOR.items()})))),
    PublishedSet(
        name='NVIDIA gtc_berlin', source='NVIDIA/so101-typing-task source/so101_typing/tasks/SO101/data/'
                                         'gtc_berlin.yaml (7aec2ed2): stiffness, damping, armature, dry and viscous '
                                         'friction per joint',
        assumes='not stated (an actuator_sys_id_result, metric position_mse)',
        completion=f'forcerange {ANCHOR_EFFORT_LIMIT} N·m, the AnchorBench card\'s effort limit (the file gives '
                   f'none); the rest as the file gives it (dry friction -> frictionloss, viscous friction -> joint '
                   f'damping)',
        model=lambda fit: _joints(**_GTC_BERLIN, forcerange=[ANCHOR_EFFORT_LIMIT] * 6),
        default_name="AnchorBench's effort limit",
        completions=(Completion(name=MENAGERIE_VALUES, model=lambda fit: _fill(_GTC_BERLIN, _MENAGERIE_JOINTS)),
                     Completion(name=FOLD_SPRING, model=lambda fit: _fill(_GTC_BERLIN, fit), uses_fit=True))),
    PublishedSet(
        name='MuJoCo Playground', source='google-deepmind/mujoco_playground v1.0.0 robots/so101/sim/constant.py '
                                         '(ARMATURE, FRICTIONLOSS per joint, identified from teleoperation with '
                                         'mujoco.sysid, tasks/sysid/so101/README.md)',
        assumes='not stated',
        completion='armature and frictionloss per joint as published; kp, kv, forcerange and joint damping from this '
                   'book\'s spring fitted on the fold\'s training episodes (the file goes on to give its position '
                   'servo\'s PD gains, which this book could not read: the copies it could consult break off there)',
        model=lambda fit: fit.replace(armature=_PLAYGROUND_ARMATURE, frictionloss=_PLAYGROUND_FRICTIONLOSS),
        uses_fit=True,
        completions=(Completion(name=MENAGERIE_VALUES, model=lambda fit: _MENAGERIE_JOINTS.replace(
            armature=_PLAYGROUND_ARMATURE, frictionloss=_PLAYGROUND_FRICTIONLOSS)),)),
    PublishedSet(
        name='static load test, cos 45°', source='TheRobotStudio/SO-ARM100 issue #134: 1.8-2.6 deg at 1.5 kg on a '
                                                 '10 cm lever at 45°',
        assumes='12 V STS3215, firmware settings not stated; about 1° of the deflection may be free play (the same '
                'issue), so kp is a lower bound',
        completion=f'kp = {STATIC_LOAD_KP:.0f} N·m/rad ({STATIC_LOAD_TORQUE:.2f} N·m, m g L cos 45°, over 2.2 deg); '
                   f'kv keeps the lag of this book\'s spring fitted on the fold\'s training episodes, the rest from '
                   f'that fit',
        model=lambda fit: _on_ridge(fit, STATIC_LOAD_KP), uses_fit=True,
        completions=(Completion(name=MENAGERIE_VALUES + ', kv keeping the lag of the fold\'s spring',
                                model=lambda fit: _on_ridge_of(_MENAGERIE_JOINTS, fit, STATIC_LOAD_KP),
                                uses_fit=True),)),
    PublishedSet(
        name='static load test, no cosine', source='the same issue, the load read as m g L (the lever horizontal)',
        assumes='as above; kp a lower bound',
        completion=f'kp = {STATIC_LOAD_KP_FULL:.0f} N·m/rad ({STATIC_LOAD_TORQUE_FULL:.2f} N·m over 2.2 deg); kv '
                   f'keeps the lag of this book\'s spring fitted on the fold\'s training episodes, the rest from '
                   f'that fit',
        model=lambda fit: _on_ridge(fit, STATIC_LOAD_KP_FULL), uses_fit=True,
        completions=(Completion(name=MENAGERIE_VALUES + ', kv keeping the lag of the fold\'s spring',
                                model=lambda fit: _on_ridge_of(_MENAGERIE_JOINTS, fit, STATIC_LOAD_KP_FULL),
                                uses_fit=True),)),
    PublishedSet(
        name='servo study, published fit', source='the servo study of the sources (another SO-101 rig; not public)',
        assumes='not stated', completion='none', model=lambda fit: JointModel.uniform(arm_replay.PUBLISHED_FIT)),
    PublishedSet(
        name='servo study, second solution', source='the same study, from the same other rig',
        assumes='not stated',
        completion='kp 8.8 and kv 0.52 as reported; forcerange, joint damping, frictionloss, armature from this '
                   'book\'s spring fitted on the fold\'s training episodes',
        model=lambda fit: fit.replace(**SECOND_SOLUTION), uses_fit=True,
        completions=(
            Completion(name=MENAGERIE_VALUES, model=lambda fit: _MENAGERIE_JOINTS.replace(**SECOND_SOLUTION)),
            Completion(name="the study's published fit",
                       model=lambda fit: JointModel.uniform(arm_replay.PUBLISHED_FIT).replace(**SECOND_SOLUTION)),
            Completion(name="the study's published fit, Menagerie's armature",
                       model=lambda fit: JointModel.uniform(arm_replay.PUBLISHED_FIT).replace(
                           **SECOND_SOLUTION, armature=arm_replay.MENAGERIE.armature)))),
)
"""Every published set the truth table replays, in the order it lists them."""


# --------------------------------------------------------------------------------------------------
# The structures, fold by fold
# --------------------------------------------------------------------------------------------------

RIVALS = (servo_models.SPRING_DELAY, servo_models.SPRING_OFFSETS)
"""The structures fitted against the chapter's spring: a command delay (so the servo may be stiff and the lag a
delay) and a calibration offset per arm joint (so the held-pose offsets need not be sag)."""

START_DELAY_STEPS = 1
"""A delay structure starts at this many physics steps of delay (the least MuJoCo's history gives), from the fold's
spring fit: a delay the data want pushes it up from there (``tests/test_servo_truth.py`` starts one from a stiff
servo and a delay of three frames and finds the same end)."""


@dataclasses.dataclass(frozen=True)
class Fold:
    """One leave-one-out fold: what was fitted and chosen on the training episodes, and its score on the one out."""

    heldout: int
    """``episode_index`` of the episode left out."""
    train: tuple[int, ...]
    best_shift: int
    """The teleport's best shift on the training episodes, frames."""
    models: dict[str, JointModel]
    """Structure name -> the model fitted on the training episodes, rounded to ``sysid.FIT_DIGITS`` digits."""
    converged: dict[str, bool]
    heldout_mae: dict[str, float]
    """Structure name -> mean absolute error on the held-out episode, degrees."""


def compare_structures(dataset: LeRobotDataset, *, rivals: Sequence[Structure] = RIVALS,
                       known: dict[int, ArmServo] | None = None, start: ArmServo = arm_replay.THEROBOTSTUDIO,
                       config: ReplayConfig = ReplayConfig(), max_iter: int = 50, progress: bool = False,
                       offsets: bool = False) -> list[Fold]:
    """Fit the spring and each rival structure on every leave-one-out fold, and score them on the episode out.

    The spring of each fold is ``sysid.fit_servo`` from ``start`` (default TheRobotStudio's published gains, the
    chapter's and ``fit-servo``'s start: they have seen none of these episodes), except the folds in ``known`` (the
    chapter's main fit, which has seen only its fold's training episodes). Each rival then starts from its fold's spring (plus ``START_DELAY_STEPS`` of
    delay, offsets 0) and is fitted on the same training episodes, all folds and rivals side by side.

    With ``offsets`` (``fit-servo --offsets``: the held-pose offsets taken to be calibration) each fold measures them
    on its own training episodes (``servo_sysid.static_offsets_deg``), fits its spring on those episodes with the
    offsets taken off the commands, and keeps them in its models (``JointModel.offsets_deg``: the servo drives
    towards the command less the offset), so every model replays the commands as recorded and nothing is measured
    on the episode a fold leaves out; its rivals start from the spring with those offsets.

    Returns:
      One :class:`Fold` per episode, in the dataset's order.
    """
    if not isinstance(dataset, LeRobotDataset) or len(dataset) < 2:
        raise ValueError(f'dataset must be a LeRobotDataset of 2 or more episodes, got {dataset!r}')
    known = {} if known is None else dict(known)
    episodes = list(dataset.episodes)
    trains = [episodes[:k] + episodes[k + 1:] for k in range(len(episodes))]
    todo = [k for k, e in enumerate(episodes) if e.index not in known]
    fold_offsets = [tuple(float(c) for c in servo_sysid.static_offsets_deg(t)) if offsets else None for t in trains]
    fit_on = [servo_sysid.shift_commands(t, c) if offsets else t for t, c in zip(trains, fold_offsets)]
    fits = sysid.fit_servos([fit_on[k] for k in todo], starts={'start': start}, config=config, max_iter=max_iter,
                            progress=progress) if todo else []
    springs = {k: f.servo for k, f in zip(todo, fits)}
    converged = {k: all(s.converged for s in f.starts) for k, f in zip(todo, fits)}
    for k, e in enumerate(episodes):
        if e.index in known:
            springs[k], converged[k] = known[e.index], True
    step = 1.0 / (dataset.fps * config.substeps(dataset.fps))
    problems, where = [], []
    for k in range(len(episodes)):
        for structure in rivals:
            delay = START_DELAY_STEPS * step if 'delay' in structure.free else 0.0
            problems.append((structure, trains[k], JointModel.uniform(springs[k], delay=delay,
                                                                      offsets_deg=fold_offsets[k])))
            where.append((k, structure.name))
    rival_fits = servo_models.fit(problems, config=config, max_iter=max_iter) if problems else []
    models = {k: {servo_models.SPRING.name: JointModel.uniform(springs[k], offsets_deg=fold_offsets[k])}
              for k in range(len(episodes))}
    conv = {k: {servo_models.SPRING.name: converged[k]} for k in range(len(episodes))}
    for (k, name), f in zip(where, rival_fits):
        models[k][name] = f.model.rounded(sysid.FIT_DIGITS)
        conv[k][name] = f.converged
    names = list(models[0])
    flat = [(models[k][n], episodes[k]) for k in range(len(episodes)) for n in names]
    runs = servo_models._runs([m for m, _ in flat], [e for _, e in flat], config)
    scores = iter(r.mae_deg for r in runs)
    folds = []
    for k, e in enumerate(episodes):
        held = {n: next(scores) for n in names}
        folds.append(Fold(heldout=e.index, train=tuple(t.index for t in trains[k]),
                          best_shift=servo_sysid.best_shift(trains[k]), models=models[k], converged=conv[k],
                          heldout_mae=held))
    return folds


def structure_rows(folds: Sequence[Fold]) -> list[dict]:
    """Per structure: held-out error over the folds (``loo_deg`` mean, ``loo_min``, ``loo_max``), the ratio of the
    spring's mean to it (``gain``), and each fitted number's range over the folds (``<param>_min``, ``<param>_max`` for
    kp, kv, damping, forcerange, frictionloss, armature, lag_ms, delay_ms, and the largest offset ``offset_max_deg``).
    """
    folds = list(folds)
    if not folds:
        raise ValueError('folds must hold at least one Fold, got none')
    spring = float(np.mean([f.heldout_mae[servo_models.SPRING.name] for f in folds]))
    rows = []
    for name in folds[0].models:
        held = [f.heldout_mae[name] for f in folds]
        row = dict(structure=name, loo_deg=float(np.mean(held)), loo_min=float(min(held)), loo_max=float(max(held)),
                   gain=spring / float(np.mean(held)), converged=all(f.converged[name] for f in folds))
        ms = [f.models[name] for f in folds]
        for p in arm_replay.PARAMS:
            values = [getattr(m, p)[0] for m in ms]
            row[f'{p}_min'], row[f'{p}_max'] = float(min(values)), float(max(values))
        lags = [float(m.lag_ms()[0]) for m in ms]
        row['lag_ms_min'], row['lag_ms_max'] = min(lags), max(lags)
        row['delay_ms_min'] = 1e3 * min(m.delay for m in ms)
        row['delay_ms_max'] = 1e3 * max(m.delay for m in ms)
        row['offset_max_deg'] = float(max(max(abs(c) for c in m.offsets_deg) for m in ms))
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------------------
# How far each parameter can move
# --------------------------------------------------------------------------------------------------

RISE = 0.05
"""An interval holds the values of a parameter at which the held-out error, averaged over the folds, is at most this
fraction (5 %) above its value at each fold's own fit, every other parameter kept at the fold's fit."""

LOG_STEPS = (-0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2)
"""log10 steps of a servo parameter's slice: factors 0.63, 0.79, 0.89, 1, 1.12, 1.26, 1.58."""
DELAY_GRID_MS = (0.0, 5.0, 10.0, 20.0, 40.0)
"""ms: the delays of the delay slice (set, not added: the fitted delays lie at the one-step bound)."""
OFFSET_SCALES = (0.0, 0.5, 1.0, 1.5, 2.0)
"""Factors on all five fitted offsets at once: 0 is the spring's assumption of none."""


def intervals(folds: Sequence[Fold], dataset: LeRobotDataset, *, rise: float = RISE,
              config: ReplayConfig = ReplayConfig()) -> list[dict]:
    """Slices of the held-out error through each fold's fit: how far each parameter can move, others kept.

    The six servo parameters through the spring (factors ``10**LOG_STEPS``), the delay through the delay structure
    (``DELAY_GRID_MS``), and the five offsets together through the offsets structure (factors ``OFFSET_SCALES``). All slices of
    all folds run in one batch. A slice is not a profile: the other parameters are not refitted, so a parameter that
    trades against another (kv against the joint damping, at a fixed lag) looks better pinned here than it is.

    Returns:
      Rows with ``param``, ``structure``, ``fitted_min``/``fitted_max`` (the folds' fitted values), and ``low``,
      ``high``: the interval, as factors of the fitted value for a servo parameter and for the offsets (whose
      ``fitted_*`` give the largest offset of a fold, degrees), in ms for the delay; ``edge`` True where the interval
      reaches the end of the slice.
    """
    folds = list(folds)
    by_index = {e.index: e for e in dataset.episodes}
    spring, delay_s, offsets_s = (servo_models.SPRING.name, servo_models.SPRING_DELAY.name,
                                  servo_models.SPRING_OFFSETS.name)
    plans = []  # (param, structure, grid, [model per fold per grid point])
    for p in arm_replay.PARAMS:
        grid = [10.0 ** s for s in LOG_STEPS]
        plans.append((p, spring, grid, [[f.models[spring].replace(**{p: tuple(v * g for v in getattr(
            f.models[spring], p))}) for g in grid] for f in folds]))
    if delay_s in folds[0].models:
        grid = [d / 1e3 for d in DELAY_GRID_MS]
        plans.append(('delay', delay_s, DELAY_GRID_MS, [[f.models[delay_s].replace(delay=d) for d in grid]
                                                         for f in folds]))
    if offsets_s in folds[0].models:
        plans.append(('offsets', offsets_s, OFFSET_SCALES,
                      [[f.models[offsets_s].replace(offsets_deg=tuple(k * c for c in f.models[offsets_s].offsets_deg))
                        for k in OFFSET_SCALES] for f in folds]))
    flat_models, flat_eps = [], []
    for _, _, grid, per_fold in plans:
        for f, row in zip(folds, per_fold):
            flat_models += row
            flat_eps += [by_index[f.heldout]] * len(row)
    runs = iter(r.mae_deg for r in servo_models._runs(flat_models, flat_eps, config))
    out = []
    for param, structure, grid, per_fold in plans:
        err = np.array([[next(runs) for _ in grid] for _ in folds])  # (nfold, ngrid)
        base = np.array([f.heldout_mae[structure] for f in folds])
        mean = (err / base[:, None]).mean(axis=0)
        if param == 'delay':
            fitted = [f.models[structure].delay * 1e3 for f in folds]
            centre = int(np.argmin(np.abs(np.array(grid) - np.mean(fitted))))
        elif param == 'offsets':
            fitted = [max(abs(c) for c in f.models[structure].offsets_deg) for f in folds]
            centre = list(grid).index(1.0)
        else:
            fitted = [getattr(f.models[structure], param)[0] for f in folds]
            centre = list(LOG_STEPS).index(0.0)
        ok = mean <= 1.0 + rise
        lo = hi = centre
        while lo > 0 and ok[lo - 1]:
            lo -= 1
        while hi < len(grid) - 1 and ok[hi + 1]:
            hi += 1
        out.append(dict(param=param, structure=structure, fitted_min=float(min(fitted)), fitted_max=float(max(fitted)),
                        low=float(grid[lo]), high=float(grid[hi]), edge=bool(lo == 0 or hi == len(grid) - 1)))
    return out


# --------------------------------------------------------------------------------------------------
# The truth table
# --------------------------------------------------------------------------------------------------

STIFF_DELAYS_MS = (0.0, 33.3, 66.7, 100.0, 133.3, 166.7, 200.0)
"""ms: the command delays a stiff servo (Menagerie's) is tried with, 0 to 6 frames; each fold takes the one that
scores best on its training episodes."""

STIFF_DELAY = "stiff servo + delay (Menagerie's, delay chosen per fold)"
"""The truth table's row for a stiff servo given the command delay its fold's training episodes prefer: the *stiff
servo plus a command delay* structure with its own number, not the soft spring + delay fitted here."""


def stiff_delay_folds(dataset: LeRobotDataset, folds: Sequence[Fold], *, config: ReplayConfig = ReplayConfig()
                      ) -> list[tuple[float, float]]:
    """Per fold, (the delay in s chosen on its training episodes, the held-out error in degrees) of Menagerie's stiff
    servo with a command delay from ``STIFF_DELAYS_MS``. Each delay replays every episode once, in one batch; a fold
    picks the delay with the smallest mean absolute error over its training episodes' frames."""
    episodes = list(dataset.episodes)
    delays = [d / 1e3 for d in STIFF_DELAYS_MS]
    models = [JointModel.uniform(arm_replay.MENAGERIE, delay=d) for d in delays]
    runs = servo_models._runs([m for m in models for _ in episodes], episodes * len(models), config, history=True)
    err = np.array([[r.mae_deg for r in runs[i * len(episodes):(i + 1) * len(episodes)]] for i in range(len(models))])
    frames = np.array([e.nframe - 1 for e in episodes], dtype=float)
    at = {e.index: k for k, e in enumerate(episodes)}
    out = []
    for f in folds:
        train = [at[i] for i in f.train]
        score = (err[:, train] * frames[train]).sum(axis=1) / frames[train].sum()
        best = int(np.argmin(score))
        out.append((delays[best], float(err[best, at[f.heldout]])))
    return out


def truth_table(dataset: LeRobotDataset, folds: Sequence[Fold], *, config: ReplayConfig = ReplayConfig(),
                heldout_index: int | None = None) -> list[dict]:
    """Every published set under each of its completions, the teleport scale, a stiff servo with its best delay, and
    this book's structures, each scored on every held-out episode.

    A partial set is scored under its default completion (``PublishedSet.model``) and under each of
    ``PublishedSet.completions``; the fold's spring it may borrow from is taken without its offsets (in ``fit-servo
    --offsets`` the folds carry them), so every set replays the commands as recorded.

    Returns:
      One row per model: ``model``, ``kind`` ('published', 'scale' or 'fitted here'), ``from_fit`` ('no', 'partly'
      for a published set completed from the fold's fit, 'yes' for this book's structures), ``completion`` (the
      default's name), ``kp`` (its shared kp, or
      the range over joints and folds as ``kp_min``/``kp_max``), ``p_bam`` and ``p_menagerie`` (the P register each
      law gives the largest kp: ``servo_gain.BAM_STS3215.p_register``, ``servo_gain.menagerie_p_register``),
      ``heldout_deg`` (on the fold that leaves out ``heldout_index``, default the last episode), ``loo_deg`` (mean
      over the folds), ``loo_min``, ``loo_max``, ``vs_shift`` (``loo_deg`` over the teleport-at-its-best-shift's) and
      ``vs_shift_min``/``vs_shift_max`` (the same ratio fold by fold, each fold's error over its own shifted
      teleport's: its spread), ``heldout_folds`` (the held-out error of every fold, in the order of ``folds``),
      ``completions`` (per completion name: its ``loo_deg``, ``from_fit`` and ``heldout_folds``), and
      ``best_completion_deg``/``worst_completion_deg``, the smallest and largest ``loo_deg`` over the completions
      (``loo_deg`` itself for a complete set).
    """
    folds = list(folds)
    by_index = {e.index: e for e in dataset.episodes}
    heldout_index = folds[-1].heldout if heldout_index is None else heldout_index
    spring = servo_models.SPRING.name
    bare = [f.models[spring].replace(offsets_deg=(0.0,) * len(ARM_JOINTS)) for f in folds]
    entries = []  # (name, kind, from_fit, [(completion, from_fit, [model per fold])])
    for s in PUBLISHED:
        options = [(c.name, 'partly' if c.uses_fit else 'no', [c.model(b) for b in bare]) for c in s.all_completions()]
        entries.append((s.name, 'published', options[0][1], options))
    for name in folds[0].models:
        entries.append((f'this book: {name}', 'fitted here', 'yes', [('none', 'yes', [f.models[name] for f in folds])]))
    flat = [(m, by_index[f.heldout]) for *_, options in entries for *_, ms in options for m, f in zip(ms, folds)]
    runs = iter(r.mae_deg for r in servo_models._runs([m for m, _ in flat], [e for _, e in flat], config))
    rows = []
    for name, shifts in (('teleport', [1] * len(folds)), ('teleport, best shift', [f.best_shift for f in folds])):
        held = [float(servo_sysid.teleport_errors([by_index[f.heldout]], s).mean()) for f, s in zip(folds, shifts)]
        rows.append(dict(model=name, kind='scale', from_fit='no', completion='none', kp_min=math.nan,
                         kp_max=math.nan, heldout=held, completions={}))
    stiff = stiff_delay_folds(dataset, folds, config=config)
    rows.append(dict(model=STIFF_DELAY, kind='fitted here', from_fit='no', completion='none',
                     kp_min=arm_replay.MENAGERIE.kp, kp_max=arm_replay.MENAGERIE.kp, heldout=[h for _, h in stiff],
                     completions={}, delay_ms_min=1e3 * min(d for d, _ in stiff),
                     delay_ms_max=1e3 * max(d for d, _ in stiff)))
    for name, kind, from_fit, options in entries:
        scored = {}
        for cname, cfrom, ms in options:
            held = [next(runs) for _ in folds]
            scored[cname] = dict(from_fit=cfrom, heldout_folds=tuple(held), loo_deg=float(np.mean(held)), models=ms)
        default = options[0]
        kps = [k for m in default[2] for k in m.kp[:len(ARM_JOINTS)]]
        rows.append(dict(model=name, kind=kind, from_fit=from_fit, completion=default[0], kp_min=float(min(kps)),
                         kp_max=float(max(kps)), heldout=list(scored[default[0]]['heldout_folds']),
                         completions={k: {x: v[x] for x in ('from_fit', 'heldout_folds', 'loo_deg')}
                                      for k, v in scored.items()} if len(scored) > 1 else {}))
    shifted = np.array(rows[1]['heldout'])
    shift_mean = float(np.mean(shifted))
    if not np.all(shifted > 0):  # a teleport that is exact (the state a copy of the action) is no scale to divide by
        raise ValueError(f'the teleport at its best shift must miss the held-out episodes by something, got '
                         f'{shifted.min():g} degrees: observation.state copies action, so there is no servo to score')
    k_out = [f.heldout for f in folds].index(heldout_index)
    for r in rows:
        held = r.pop('heldout')
        kp = r['kp_max']
        per_fold = np.array(held) / shifted
        loo = [c['loo_deg'] for c in r['completions'].values()] or [float(np.mean(held))]
        r.update(heldout_folds=tuple(float(h) for h in held), heldout_deg=held[k_out], loo_deg=float(np.mean(held)),
                 loo_min=float(min(held)),
                 loo_max=float(max(held)), vs_shift=float(np.mean(held)) / shift_mean,
                 vs_shift_min=float(per_fold.min()), vs_shift_max=float(per_fold.max()),
                 best_completion_deg=float(min(loo)), worst_completion_deg=float(max(loo)),
                 p_bam=float(servo_gain.BAM_STS3215.p_register(kp)) if math.isfinite(kp) else math.nan,
                 p_menagerie=servo_gain.menagerie_p_register(kp) if math.isfinite(kp) else math.nan)
    return rows


def completion_rows(rows: Sequence[dict]) -> list[dict]:
    """The truth table's partial sets, one row per completion: ``model``, ``completion``, ``from_fit``, ``loo_deg``,
    ``loo_min``, ``loo_max`` (over the folds) and ``vs_spring`` (its ``loo_deg`` over this book's spring's)."""
    ours = next(r for r in rows if r['model'] == f'this book: {servo_models.SPRING.name}')['loo_deg']
    out = []
    for r in rows:
        for name, c in r['completions'].items():
            out.append(dict(model=r['model'], completion=name, from_fit=c['from_fit'], loo_deg=c['loo_deg'],
                            loo_min=min(c['heldout_folds']), loo_max=max(c['heldout_folds']),
                            vs_spring=c['loo_deg'] / ours))
    return out


def sources_rows() -> list[dict]:
    """The published sets' sources, assumptions and completions, for the table beside the truth table."""
    return [dict(model=s.name, source=s.source, assumes=s.assumes, completion=s.completion) for s in PUBLISHED]


TRUTH_COLUMNS = (('model', 's'), ('from_fit', 's'), ('kp_min', '.3g'), ('kp_max', '.3g'), ('p_bam', '.0f'),
                 ('heldout_deg', '.2f'), ('loo_deg', '.2f'), ('loo_min', '.2f'), ('loo_max', '.2f'),
                 ('best_completion_deg', '.2f'), ('worst_completion_deg', '.2f'), ('vs_shift', '.2f'),
                 ('vs_shift_min', '.2f'), ('vs_shift_max', '.2f'))


COMPLETION_COLUMNS = (('model', 's'), ('completion', 's'), ('from_fit', 's'), ('loo_deg', '.2f'), ('loo_min', '.2f'),
                      ('loo_max', '.2f'), ('vs_spring', '.2f'))


@experiment('truth-table', summary='every published STS3215 model and this book\'s structures, leave-one-out on the '
                                   'SO-101 recording',
            columns=TRUTH_COLUMNS)
def truth(progress: bool = False) -> list[dict]:
    """Chapter 4's truth table on its recording: the folds fitted from a start that has seen no data."""
    dataset = servo_sysid.load_book_dataset()
    folds = compare_structures(dataset, progress=progress)
    return [{k: r[k] for k, *_ in TRUTH_COLUMNS} for r in truth_table(dataset, folds)]


AROUND_PINNED = servo_models.Structure(name='spring around a pinned armature and friction',
                                       free=('kp', 'kv', 'forcerange', 'damping'))
"""The spring refitted with its armature and friction loss held at another source's: kp, kv, the force limit and the
joint damping free to absorb them."""


def refit_around(dataset: LeRobotDataset, folds: Sequence[Fold], *, armature: Sequence[float],
                 frictionloss: Sequence[float], config: ReplayConfig = ReplayConfig(), max_iter: int = 50
                 ) -> list[float]:
    """Per fold, the held-out error (degrees) of its spring refitted on its training episodes with ``armature`` and
    ``frictionloss`` (per joint, ``JOINTS`` order) pinned: whether a servo built around them can do as well, not only
    the fold's spring with them put in (all folds fitted side by side)."""
    by_index = {e.index: e for e in dataset.episodes}
    problems = [(AROUND_PINNED, [by_index[i] for i in f.train],
                 f.models[servo_models.SPRING.name].replace(armature=tuple(armature), frictionloss=tuple(frictionloss)))
                for f in folds]
    fits = servo_models.fit(problems, config=config, max_iter=max_iter)
    runs = servo_models._runs([r.model for r in fits], [by_index[f.heldout] for f in folds], config)
    return [r.mae_deg for r in runs]


def spring_rows(folds: Sequence[Fold], dataset: LeRobotDataset, *, config: ReplayConfig = ReplayConfig()
                ) -> list[dict]:
    """Leave-one-out of the chapter's spring, one row per fold, with ``servo_sysid.fold_summary``'s keys.

    Keys: ``heldout`` (episode_index), the six parameters of the fold's spring, ``lag_ms``, ``heldout_mae_deg``,
    ``menagerie_heldout_mae_deg`` (Menagerie's servo on the same episode) and ``teleport_shift_deg`` (the teleport at
    the best shift of the fold's training episodes), degrees.
    """
    folds = list(folds)
    by_index = {e.index: e for e in dataset.episodes}
    out = [by_index[f.heldout] for f in folds]
    men = servo_models._runs([JointModel.uniform(arm_replay.MENAGERIE)] * len(folds), out, config)
    rows = []
    for f, e, m in zip(folds, out, men):
        s = f.models[servo_models.SPRING.name].joint(ARM_JOINTS[0])
        rows.append(dict(heldout=f.heldout, **s.as_dict(), lag_ms=s.lag_ms,
                         heldout_mae_deg=f.heldout_mae[servo_models.SPRING.name], menagerie_heldout_mae_deg=m.mae_deg,
                         teleport_shift_deg=float(servo_sysid.teleport_errors([e], f.best_shift).mean())))
    return rows
