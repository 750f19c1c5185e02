"""Identify your own arm: chapter 4's replay and fit on any LeRobot SO-101 recording, written out as an MJCF file.

``python -m physai fit-servo DATASET`` runs what chapter 4 does to its own recording on yours:

1. the episodes are split into fit and held-out ones (:func:`physai.cli.fit_request.select_episodes`; by default the last one is held out);
2. one :class:`~physai.engine.arm_replay.ArmServo` is fitted to the fit episodes with ``sysid.fit_servo``, from the
   chapter's kept start (TheRobotStudio's soft gains), and rounded to ``sysid.FIT_DIGITS`` significant digits;
   with ``per_joint`` each arm joint then gets its own kp and kv (:func:`fit_per_joint`), the other four
   parameters staying shared;
3. leave-one-out over every selected episode (``servo_truth.compare_structures``): each fold's spring is fitted
   from ``START``, which has seen none of the recording (with one held-out episode the main fit is that episode's
   fold, since it saw only the fit episodes), and the rival structures (a command delay, calibration offsets) are
   fitted fold by fold from the fold's spring. The folds give the spread of each parameter and the structures'
   held-out scores; the cost's rise when one parameter alone changes (:func:`cost_rise`) says whether the recording
   exercises it at all; held-out slices (``servo_truth.intervals``) say how far each parameter can move before the
   held-out error rises by ``servo_truth.RISE``; and the ridge of constant lag (``servo_sysid.ridge``) with and
   without the held-pose offsets (``servo_sysid.static_offsets_deg``) says whether kp hangs on how those offsets
   are explained (:func:`spread`, :func:`findings`);
4. the held-out episodes are replayed with the fitted servo, Menagerie's, and the teleport scale, and every
   published set of chapter 4's truth table is scored on the recording's folds (``servo_truth.truth_table``);
5. :func:`physai.cli.fit_report.write_mjcf` writes Menagerie's SO-101 with the fitted servo as a default class (``fitted_servo``, and one
   class per joint with ``per_joint``).

Delay. With ``delay`` the written servo is the *spring + delay* structure fitted on the fit episodes (from the
spring, the delay starting at one physics step), written as each actuator's MuJoCo ``delay`` with a ``ctrl`` history
(``nsample``, linear interpolation). On chapter 4's recording the fitted delay stays at its one-step floor.

Offsets. In held poses the real shoulder lift and elbow stop a few degrees from their commands. The fit as recorded
explains that as the sag of a soft servo and writes no offset. With ``offsets`` the held-pose offsets are taken to
be calibration instead: they are taken off the commands before fitting (``servo_sysid.shift_commands``) and written
into each arm actuator, ``force = kp (ctrl - c - q) - kv q̇`` (``biasprm[0] = -kp c``) with the ctrlrange moved by
``c``, so that the model driven by the recorded commands does what the shifted replay did. MuJoCo has no offset
attribute on ``<position>``: the file carries it as a ``<general>`` actuator's bias, and a comment says so.
The leave-one-out folds do the same inside each fold: a fold measures the offsets on its own training episodes, never
on the episode it leaves out, and replays every episode's commands as recorded with those offsets in its models
(``servo_truth.compare_structures(offsets=True)``); the truth table's published sets replay the recorded commands.

The request is checked before any work (:mod:`physai.cli.fit_request`, which also warns when a recording is too
short or too still), and the file and the report are :mod:`physai.cli.fit_report`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import arm_replay, mj, servo_models, sysid
from physai.engine.datasets import Episode, LeRobotDataset
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.engine.arm_replay import ArmServo
from physai.cli.fit_request import FOLD_MAX_ITER, motion, recording_warnings
from physai.experiments import servo_sysid, servo_truth
from physai.laws import robust


START = arm_replay.THEROBOTSTUDIO
"""The fit's start: chapter 4 keeps the fit from TheRobotStudio's soft gains (the tie goes to it, and its path does
not depend on the last bits of the arithmetic), so one start suffices."""

PINNED_RATIO = 1.25
"""A parameter is *pinned* when its largest value over the leave-one-out folds is within this factor of its
smallest (±11 % about the middle); wider, and the recordings do not fix it."""

COST_RISE = 0.01
"""A parameter the recording pins raises the fit's cost by at least this fraction (1 %) when it alone is scaled by
``PINNED_RATIO`` either way. Without that test a parameter the recording never exercises (a force limit the servo never
reaches, say) could look pinned: every fold starts from the same published gains, and the solver leaves a parameter
the residuals do not feel near where it started."""


RIDGE_FLAT = 0.05
"""The ridge with the offsets taken off is *flat* where its cost is within 5 % of its lowest."""


# --------------------------------------------------------------------------------------------------
# Checking the request
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class JointServos:
    """The servo as written to the file: a shared :class:`ArmServo` and, per arm joint, its kp, kv and offset."""

    shared: ArmServo
    """The fitted servo; every joint's damping, frictionloss, armature and forcerange, and the gripper's all."""
    kp: tuple[float, ...]
    """(5,) kp per arm joint, N·m/rad (``ARM_JOINTS`` order)."""
    kv: tuple[float, ...]
    """(5,) kv per arm joint, N·m·s/rad."""
    offsets_deg: tuple[float, ...] = (0.0,) * len(ARM_JOINTS)
    """(5,) c per arm joint, degrees: the actuator drives the joint towards ``ctrl - c``."""
    delay: float = 0.0
    """Command delay of every actuator, s (MuJoCo's ``actuator_delay``; 0: none)."""

    @classmethod
    def uniform(cls, servo: ArmServo, offsets_deg: Sequence[float] | None = None, delay: float = 0.0
                ) -> 'JointServos':
        """``servo`` on every joint, with ``offsets_deg`` (default none) and ``delay`` (s)."""
        n = len(ARM_JOINTS)
        offsets = (0.0,) * n if offsets_deg is None else tuple(float(c) for c in offsets_deg)
        return cls(shared=servo, kp=(servo.kp,) * n, kv=(servo.kv,) * n, offsets_deg=offsets, delay=float(delay))

    def model(self) -> servo_models.JointModel:
        """The same servos as a ``servo_models.JointModel`` (the gripper keeps the shared servo)."""
        shared = servo_models.JointModel.uniform(self.shared, delay=self.delay, offsets_deg=self.offsets_deg)
        return shared.replace(kp=tuple(self.kp) + (self.shared.kp,), kv=tuple(self.kv) + (self.shared.kv,))

    @property
    def per_joint(self) -> bool:
        """Some joint's kp or kv differs from the shared servo's."""
        return any(k != self.shared.kp for k in self.kp) or any(k != self.shared.kv for k in self.kv)

    def lag_ms(self) -> np.ndarray:
        """(5,) (kv + damping)/kp per arm joint, ms."""
        return 1e3 * (np.array(self.kv) + self.shared.damping) / np.array(self.kp)

    def apply(self, m: mujoco.MjModel) -> None:
        """Put the per-joint kp, kv and offsets on a model that already carries ``shared`` (``arm_replay.arm_model``).

        Actuator i drives joint i: ``gainprm[0] = kp``, ``biasprm[:3] = (-kp c, -kp, -kv)``, and its ctrlrange moves
        by ``c`` so that the clamp acts on ``ctrl - c`` where the shifted replay clamped the shifted command.
        """
        for i, name in enumerate(ARM_JOINTS):
            a = m.actuator(name).id
            c = math.radians(self.offsets_deg[i])
            m.actuator_gainprm[a, 0] = self.kp[i]
            m.actuator_biasprm[a, :3] = (-self.kp[i] * c, -self.kp[i], -self.kv[i])
            m.actuator_ctrlrange[a] += c


def joint_model(servos: JointServos, config: arm_replay.ReplayConfig, *, fps: float) -> mujoco.MjModel:
    """The slim SO-101 of the replay (``arm_replay.arm_model``) with ``servos`` on its joints."""
    m = arm_replay.arm_model(servos.shared, config, fps=fps)
    servos.apply(m)
    return m


@mj.captured_warnings()
def replay_models(models: Sequence[mujoco.MjModel], episodes: Sequence[Episode]) -> np.ndarray:
    """Replay every episode open loop on every model, as ``arm_replay.replay`` does for servos, in one batch.

    The models' timesteps must divide a frame: ``substeps = round(1 / (fps * timestep))``. Shorter episodes hold
    their last command. Used for per-joint servos, which ``arm_replay.replay`` (one servo on every joint) cannot hold.

    Returns:
      (nmodel, nepisode, nframe_max, 5) simulated arm joints, degrees (NaN after a divergence and past an episode's
      end).
    """
    fps = episodes[0].fps
    sub = max(1, round(1.0 / (fps * models[0].opt.timestep)))
    nframe = max(e.nframe for e in episodes)
    qpos, warned = arm_replay.rollout([m for m in models for _ in episodes], list(episodes) * len(models), sub)
    nsim = len(models) * len(episodes)
    arm = [JOINTS.index(j) for j in ARM_JOINTS]
    sim = np.rad2deg(qpos[:, :, arm]).reshape(len(models), len(episodes), nframe, len(ARM_JOINTS))
    for k in range(nsim):
        i, j = divmod(k, len(episodes))
        sim[i, j, episodes[j].nframe:] = np.nan
        if mj.diverged(qpos[k, :episodes[j].nframe], warned=bool(warned[k])):
            sim[i, j] = np.nan
    return sim


def model_sim(models: Sequence[servo_models.JointModel], episodes: Sequence[Episode],
              config: arm_replay.ReplayConfig) -> np.ndarray:
    """:func:`replay_models`' array for ``servo_models.JointModel`` models (a delay included), one batch."""
    nframe = max(e.nframe for e in episodes)
    sim = np.full((len(models), len(episodes), nframe, len(ARM_JOINTS)), np.nan)
    for i, row in enumerate(servo_models.replay(list(models), list(episodes), config=config)):
        for j, rep in enumerate(row):
            if not rep.diverged:
                sim[i, j, :rep.sim_deg.shape[0]] = rep.sim_deg
    return sim


def joint_errors(sim: np.ndarray, episodes: Sequence[Episode]) -> np.ndarray:
    """(nframe_total - nepisode, 5) |sim - real| over frames 1..n-1 of each episode, degrees (sim: one model's
    ``(nepisode, nframe_max, 5)`` from :func:`replay_models`)."""
    return np.concatenate([np.abs(sim[j, 1:e.nframe] - e.state[1:, arm_replay.arm_columns(e.joints)])
                           for j, e in enumerate(episodes)])


def fit_per_joint(shared: ArmServo, episodes: Sequence[Episode], *, config: arm_replay.ReplayConfig = arm_replay.ReplayConfig(),
                  offsets_deg: Sequence[float] | None = None, max_iter: int = 50, digits: int = sysid.FIT_DIGITS,
                  progress: bool = True) -> JointServos:
    """kp and kv of each arm joint, the other four parameters kept at ``shared``'s, fitted from ``shared``.

    The same least squares as ``sysid.fit_servo`` (log10 parameters inside ``sysid.LOG_BOUNDS``, per-frame residuals
    of the five arm joints, ``sysid.least_squares``: MuJoCo's solver with the fit's schedule), over ten parameters,
    every candidate replayed with :func:`replay_models`. The result is rounded to ``digits`` significant digits.
    """
    episodes = list(episodes)
    n = len(ARM_JOINTS)
    lo, hi = sysid.LOG_BOUNDS
    bounds = (np.r_[[lo[0]] * n, [lo[1]] * n], np.r_[[hi[0]] * n, [hi[1]] * n])
    fps = episodes[0].fps
    real = [e.state[1:, arm_replay.arm_columns(e.joints)] for e in episodes]
    base = JointServos.uniform(shared, offsets_deg)

    def servos_of(x):
        return dataclasses.replace(base, kp=tuple(10.0 ** x[:n]), kv=tuple(10.0 ** x[n:]))

    def residual(x):
        x = np.asarray(x, dtype=float).reshape(2 * n, -1)
        sim = replay_models([joint_model(servos_of(c), config, fps=fps) for c in x.T], episodes)
        cols = [np.concatenate([(sim[i, j, 1:e.nframe] - real[j]).ravel() for j, e in enumerate(episodes)])
                for i in range(x.shape[1])]
        r = np.stack(cols, axis=1)
        return np.nan_to_num(r, nan=1e3) / math.sqrt(r.shape[0])

    x0 = np.clip(np.log10(np.r_[[shared.kp] * n, [max(shared.kv, 10.0 ** lo[1])] * n]), *bounds)
    bar = _bar(max_iter, 'fitting per joint', progress)

    def on_iter(trace):
        if bar is not None and len(trace) <= max_iter:
            bar.update(1)

    x, _ = sysid.least_squares(x0, residual, bounds=bounds, eps=1e-3, max_iter=max_iter, on_iter=on_iter)
    if bar is not None:
        bar.close()
    fitted = servos_of(x)
    return dataclasses.replace(fitted, kp=tuple(robust.round_sig(v, digits) for v in fitted.kp),
                               kv=tuple(robust.round_sig(v, digits) for v in fitted.kv))


def _bar(total: int, desc: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, file=sys.stderr, leave=False, ncols=80)


# --------------------------------------------------------------------------------------------------
# The identification
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Identification:
    """Everything :func:`identify` found; :func:`report` turns it into the command's report."""

    source: str
    dataset: LeRobotDataset
    fit: tuple[Episode, ...]
    heldout: tuple[Episode, ...]
    servos: JointServos
    """What the file holds."""
    fit_converged: bool
    folds: tuple[dict, ...]
    """``servo_truth.spring_rows`` over every selected episode: each fold's spring, fitted from ``START``."""
    static_offsets_deg: np.ndarray | None
    """(5,) command minus joint in the fit episodes' held poses, degrees (None: no held pose)."""
    ridge: tuple[dict, ...]
    """``servo_sysid.ridge`` rows through the shared servo (with ``_shifted`` keys when offsets were measured)."""
    sim: dict[str, np.ndarray]
    """``'fitted'`` and ``'menagerie'``: (nepisode, nframe_max, 5) replays of ``fit + heldout``, degrees."""
    cost_rise: dict[str, float]
    """Per parameter (``arm_replay.PARAMS``): the fit cost's smaller relative rise when that parameter alone is scaled by
    ``PINNED_RATIO`` up or down (:func:`cost_rise`)."""
    best_shift: int
    """The teleport's best shift on the fit episodes, frames."""
    motion: dict
    """:func:`motion` of the fit episodes."""
    warnings: tuple[str, ...]
    config: arm_replay.ReplayConfig = arm_replay.ReplayConfig()
    """The replay settings of the fit."""
    structures: tuple = ()
    """``servo_truth.Fold`` per selected episode: the spring and its rivals fitted on the other episodes."""
    intervals: tuple[dict, ...] = ()
    """``servo_truth.intervals`` rows: how far each parameter can move before the held-out error rises."""
    truth: tuple[dict, ...] = ()
    """``servo_truth.truth_table`` rows of the recording: every published set, the teleport, the structures."""
    units: dict | None = None
    """The recording's units as the report states them (``fit_request.check_units``): ``units``, ``evidence``,
    ``converted_with`` and ``deg_per_unit``; None when not checked (the synthetic stand-in)."""


def identify(dataset: LeRobotDataset, fit: Sequence[Episode], heldout: Sequence[Episode], *, source: str = '',
             per_joint: bool = False, offsets: bool = False, delay: bool = False,
             config: arm_replay.ReplayConfig = arm_replay.ReplayConfig(), max_iter: int = 50, progress: bool = True
             ) -> Identification:
    """Chapter 4's fit on ``fit``, its rivals and spread over leave-one-out folds, and the replays of every episode.

    Args:
      dataset: the recording (for its name and fps).
      fit, heldout: the episodes to fit and to hold out (:func:`select_episodes`).
      source: where the recording came from, for the report.
      per_joint: also fit each arm joint's kp and kv (:func:`fit_per_joint`).
      offsets: take the held-pose offsets to be calibration (see the module docstring).
      delay: write the *spring + delay* structure (see the module docstring); not with ``per_joint``.
      config: the replay settings (the chapter's: contacts off, limits on, implicitfast, 1/210 s at 30 fps).
      max_iter: the fits' iteration cap.
      progress: tqdm bars on stderr.
    """
    if delay and per_joint:
        raise ValueError('delay and per_joint cannot be combined: the delay structure shares one servo on every '
                         'joint, got both')
    fit, heldout = list(fit), list(heldout)
    fit_motion = motion(fit)
    warnings = recording_warnings(fit_motion, fps=dataset.fps)
    try:
        static = servo_sysid.static_offsets_deg(fit)
    except ValueError:
        static = None
    if offsets and static is None:
        raise ValueError('offsets need held poses in the fit episodes (the arm still for a moment), got none')
    use_offsets = static if offsets else None
    fit_in = servo_sysid.shift_commands(fit, use_offsets) if offsets else fit
    everyone = fit + heldout

    result = sysid.fit_servo(fit_in, starts={'therobotstudio': START}, config=config, max_iter=max_iter,
                             progress=progress)
    servo = result.servo
    converged = all(s.converged for s in result.starts)
    if not converged:
        warnings.append(f'the fit stopped at its cap of {max_iter} iterations before its tolerances were met')

    rise = cost_rise(servo, fit_in, config=config)
    # the folds replay the commands as recorded; with offsets each fold measures its own on its training episodes
    folds_data = dataclasses.replace(dataset, episodes=tuple(everyone))
    main_fold = {heldout[0].index: servo} if len(heldout) == 1 else {}  # the main fit saw only that fold's episodes
    # every other fold starts from START, which has seen none of the recording: no fold's start knows its episode
    structures = servo_truth.compare_structures(folds_data, known=main_fold, start=START, config=config,
                                                max_iter=FOLD_MAX_ITER, progress=progress, offsets=offsets)
    folds = servo_truth.spring_rows(structures, folds_data, config=config)
    spans = servo_truth.intervals(structures, folds_data, config=config)
    truth = servo_truth.truth_table(folds_data, structures, config=config)

    kps = [kp for kp in servo_sysid.RIDGE_KPS[::2] if kp * servo.lag_ms / 1e3 >= servo.damping]
    ridge = servo_sysid.ridge(fit, servo, kps=sorted(set(kps) | {servo.kp}), offsets_deg=static,
                              config=config) if len(kps) >= 2 else []

    servos = JointServos.uniform(servo, use_offsets)
    if per_joint:
        servos = fit_per_joint(servo, fit, config=config, offsets_deg=use_offsets, max_iter=max_iter,
                               progress=progress)
    if delay:
        start = servo_models.JointModel.uniform(servo, delay=1.0 / (dataset.fps * config.substeps(dataset.fps)),
                                                offsets_deg=use_offsets)
        delayed = servo_models.fit([(servo_models.SPRING_DELAY, fit, start)], config=config, max_iter=max_iter)[0]
        shared = delayed.model.joint(ARM_JOINTS[0]).rounded(sysid.FIT_DIGITS)
        servos = JointServos.uniform(shared, use_offsets, delay=robust.round_sig(delayed.model.delay,
                                                                                  sysid.FIT_DIGITS))
    sim = model_sim([servos.model(), servo_models.JointModel.uniform(arm_replay.MENAGERIE)], everyone, config)
    if np.isnan(sim[0][:, 0]).any():
        warnings.append('the fitted servo diverged on some episode: its errors are reported as NaN')
    result_ident = Identification(
        source=source, dataset=dataset, fit=tuple(fit), heldout=tuple(heldout), servos=servos,
        fit_converged=converged, folds=tuple(folds), static_offsets_deg=static, ridge=tuple(ridge),
        sim={'fitted': sim[0], 'menagerie': sim[1]}, cost_rise=rise, best_shift=servo_sysid.best_shift(fit),
        motion=fit_motion, warnings=tuple(warnings), config=config, structures=tuple(structures),
        intervals=tuple(spans), truth=tuple(truth))
    errors = heldout_errors(result_ident)
    if errors['fitted']['mean'] >= errors['teleport-best-shift']['mean']:
        warnings.append('the fitted servo is no closer to the held-out episodes than the teleport at its best shift: '
                        'the servo model does not explain this recording (see the page on what each warning means)')
    return dataclasses.replace(result_ident, warnings=tuple(warnings))


def cost_rise(servo: ArmServo, episodes: Sequence[Episode], *, config: arm_replay.ReplayConfig = arm_replay.ReplayConfig(),
              factor: float = PINNED_RATIO) -> dict[str, float]:
    """How much each parameter alone matters to the fit: per parameter of ``arm_replay.PARAMS``, the smaller of the
    relative rises of the cost (half the mean squared error, the fit's objective) when it is multiplied and when it
    is divided by ``factor``, everything else kept; and ``split``, the smaller rise when kv or the joint damping is
    multiplied by ``factor`` and the other gives up as much, their sum (and so the lag) kept. All 15 servos replay
    in one batch."""
    servos = [servo] + [dataclasses.replace(servo, **{p: getattr(servo, p) * f}) for p in arm_replay.PARAMS
                        for f in (factor, 1.0 / factor)]
    more_kv = min(servo.kv * (factor - 1.0), servo.damping)
    more_damping = min(servo.damping * (factor - 1.0), servo.kv)
    servos += [dataclasses.replace(servo, kv=servo.kv + more_kv, damping=servo.damping - more_kv),
               dataclasses.replace(servo, kv=servo.kv - more_damping, damping=servo.damping + more_damping)]
    costs = []
    for row in arm_replay.replay(servos, list(episodes), config=config):
        err = np.concatenate([r.sim_deg[1:] - r.real_deg[1:] for r in row])
        costs.append(0.5 * float(np.mean(err ** 2)) if np.all(np.isfinite(err)) else math.inf)
    rise = {p: min(costs[1 + 2 * k], costs[2 + 2 * k]) / costs[0] - 1.0 for k, p in enumerate(arm_replay.PARAMS)}
    return rise | {'split': min(costs[-2], costs[-1]) / costs[0] - 1.0}


def heldout_errors(ident: Identification) -> dict[str, dict[str, float]]:
    """Mean absolute error on the held-out episodes, degrees, per arm joint and ``mean``, for ``fitted`` (the
    written model), ``menagerie``, ``teleport`` (shift 1) and ``teleport-best-shift``."""
    n = len(ident.fit)
    out = {}
    for name in ('fitted', 'menagerie'):
        err = joint_errors(ident.sim[name][n:], ident.heldout)
        out[name] = _by_joint(err)
    for name, shift in (('teleport', 1), ('teleport-best-shift', ident.best_shift)):
        out[name] = _by_joint(servo_sysid.teleport_errors(ident.heldout, shift))
    return out


def _by_joint(err: np.ndarray) -> dict[str, float]:
    return {**{j: float(v) for j, v in zip(ARM_JOINTS, err.mean(axis=0))}, 'mean': float(err.mean())}


# --------------------------------------------------------------------------------------------------
# What the data pin down
# --------------------------------------------------------------------------------------------------

SPREAD_KEYS = arm_replay.PARAMS + ('lag_ms',)

OFFSET_DEG = 1.0
"""deg: a held-pose offset this large (command - joint) leaves kp to how it is explained, sag or calibration; a soft
servo's sag under the SO-101's own weight is of this order (chapter 4's elbow: about 3 degrees)."""


BOUND_MARGIN = 1.05
"""A value within this factor of a bound of ``sysid.LOG_BOUNDS`` counts as stopped by the bound."""


def three_digits(value: float) -> str:
    """Three significant digits, without a bare trailing point (``400``, ``0.950``)."""
    return f'{value:#.3g}'.rstrip('.')


def spread(ident: Identification) -> dict[str, dict]:
    """Per parameter of the shared servo and its lag: ``fitted``, ``fold_min``, ``fold_max`` (over the leave-one-out
    folds), ``cost_rise_pct`` (:func:`cost_rise`, percent; NaN for the lag) and ``pinned``: the fitted value and the
    folds' lie within a factor ``PINNED_RATIO`` of each other, scaling the parameter by that factor raises the cost
    by ``COST_RISE`` or more, and none of them is at a bound of the fit (``sysid.LOG_BOUNDS``, within
    ``BOUND_MARGIN``); kv and damping are pinned only together (at a fixed lag one trades against the other), and
    only if that trade raises the cost by ``COST_RISE`` too (``cost_rise['split']``); kp not
    while it hangs on how the held-pose offsets are explained (:func:`kp_hangs_on_offsets`)."""
    servo = ident.servos.shared
    ambiguous = kp_hangs_on_offsets(ident)
    low, high = (10.0 ** b for b in sysid.LOG_BOUNDS)
    out = {}
    for key in SPREAD_KEYS:
        values = [r[key] for r in ident.folds] + [getattr(servo, key)]
        lo, hi = min(values), max(values)
        pinned = bool(lo > 0 and hi <= PINNED_RATIO * lo) and not (key == 'kp' and ambiguous)
        if key in arm_replay.PARAMS:  # a parameter on the edge of the fit's box is where the box stopped it, not the data
            k = arm_replay.PARAMS.index(key)
            pinned = (pinned and low[k] * BOUND_MARGIN < lo and hi < high[k] / BOUND_MARGIN
                      and ident.cost_rise[key] >= COST_RISE)
        out[key] = dict(fitted=float(getattr(servo, key)), fold_min=float(min(values[:-1])),
                        fold_max=float(max(values[:-1])), cost_rise_pct=100 * ident.cost_rise.get(key, math.nan),
                        pinned=pinned)
    # they trade against each other at a fixed lag: pinned only together, and only if the trade itself costs
    if not (out['kv']['pinned'] and out['damping']['pinned'] and ident.cost_rise.get('split', 0.0) >= COST_RISE):
        out['kv']['pinned'] = out['damping']['pinned'] = False
    return out


def ridge_summary(ident: Identification) -> dict | None:
    """What the ridge of constant lag says about kp: ``bottom_kp`` (lowest cost with the commands as recorded),
    ``stiff_kp`` and ``stiff_over_bottom`` (the stiffest point's cost over the bottom's), and with the offsets taken
    off,
    ``shifted_bottom_kp`` and the kp range ``flat_kp_min`` ... ``flat_kp_max`` within ``RIDGE_FLAT`` of its lowest."""
    rows = list(ident.ridge)
    if not rows:
        return None
    bottom = servo_sysid.ridge_bottom(rows)
    out = dict(lag_ms=float(ident.servos.shared.lag_ms), bottom_kp=float(bottom['kp']), bottom_cost=bottom['cost'],
               stiff_kp=float(rows[-1]['kp']), stiff_over_bottom=float(rows[-1]['cost'] / bottom['cost']))
    if 'cost_shifted' in rows[0]:
        low = servo_sysid.ridge_bottom(rows, 'cost_shifted')
        flat = [r['kp'] for r in rows if r['cost_shifted'] <= (1 + RIDGE_FLAT) * low['cost_shifted']]
        out.update(shifted_bottom_kp=float(low['kp']), flat_kp_min=float(min(flat)), flat_kp_max=float(max(flat)))
    return out


def offsets_structure_kp_ratio(ident: Identification) -> float:
    """The largest factor, over the folds, between the kp of the *spring + offsets* structure and the fold's spring
    kp (1: the fitted offsets leave kp where it was; NaN without that structure)."""
    name, spring = servo_models.SPRING_OFFSETS.name, servo_models.SPRING.name
    ratios = [f.models[name].kp[0] / f.models[spring].kp[0] for f in ident.structures if name in f.models]
    return float(max(max(r, 1.0 / r) for r in ratios)) if ratios else math.nan


def kp_hangs_on_offsets(ident: Identification) -> bool:
    """Whether kp says how the held-pose offsets are explained (sag or calibration) rather than how stiff the servo
    is: held-pose offsets of ``OFFSET_DEG`` or more, and either the *spring + offsets* structure, fitted fold by fold
    with the offsets free, moves kp by more than a factor ``PINNED_RATIO`` from the fold's spring, or (without that
    structure) the ridge of constant lag with the offsets taken off is flat (within ``RIDGE_FLAT``) more than a factor
    ``PINNED_RATIO`` from the fitted kp. On chapter 4's recording the fitted offsets stay under a degree and kp does
    not move: the recording prefers the sag."""
    offsets, ridge = ident.static_offsets_deg, ridge_summary(ident)
    if offsets is None or not np.any(np.abs(offsets) >= OFFSET_DEG):
        return False
    ratio = offsets_structure_kp_ratio(ident)
    if not math.isnan(ratio):
        return bool(ratio > PINNED_RATIO)
    if not ridge or 'flat_kp_min' not in ridge:
        return False
    kp = ident.servos.shared.kp
    return bool(ridge['flat_kp_max'] > PINNED_RATIO * kp or ridge['flat_kp_min'] < kp / PINNED_RATIO)


RESAMPLED_RATES = (0.5, 4.0)
"""The rates, as multiples of the recording's, at which :func:`lag_at_rate` says how far resampling moves the lag."""


def lag_at_rate(fps: float) -> dict:
    """What the fitted lag is measured against, and how far a recording resampled to another rate would move it.

    The replay holds each frame's action for one frame (1/fps, a zero-order hold), as LeRobot's record loop sends one
    command a frame and the servo holds it until the next: the fitted lag is the servo's lag behind the commands it
    was sent, and those are the recording's frames only at the rate it was recorded at. Resampled to another rate R
    (interpolated), the frames are commands the servo never got: on average a held command of the recording trails
    the motion it samples by half a frame, 1/(2 fps), and one held at R by 1/(2R), so the fit adds the difference
    to the lag, ``(1/fps - 1/R)/2``. Measured on the shipped recording (``tests/test_identify.py``, the test of the
    lag against the frame rate): resampled to 15 and to 120 fps it fits 91.8 and 119.1 ms against 109.0 at 30
    (this rule: 92.3 and 121.5), and with the 30 Hz loop's commands held as they were sent, 120 fps fits 107.5 ms:
    the frame rate itself does not move the lag, the commands it misplaces do.

    Returns:
      ``fps``, ``hold_ms`` (how long each command is held, 1000/fps), and ``resampled``: per rate R of
      ``RESAMPLED_RATES`` times fps, ``fps`` and ``lag_shift_ms``, the rule's change of the lag at R.
    """
    fps = float(fps)
    return dict(fps=fps, hold_ms=1e3 / fps,
                resampled=[dict(fps=k * fps, lag_shift_ms=1e3 * (1.0 / fps - 1.0 / (k * fps)) / 2)
                           for k in RESAMPLED_RATES])


def lag_rate_sentence(rate: dict) -> str:
    """:func:`lag_at_rate` as the report's sentence."""
    shifts = ' and '.join(f"{r['lag_shift_ms']:+.1f} ms at {r['fps']:g} fps" for r in rate['resampled'][::-1])
    return (f"the lag is the servo's lag behind commands held one frame each ({rate['hold_ms']:.1f} ms at "
            f"{rate['fps']:g} fps), as LeRobot's record loop sends them: it holds at the recording's rate only. The "
            f"same moves resampled to another rate R are commands the servo never got, and would move the fitted lag "
            f"by half the change of the frame period, (1/fps - 1/R)/2: {shifts}")


def findings(ident: Identification) -> tuple[list[str], list[str]]:
    """Sentences on what the recording pins down, and what it does not."""
    s = spread(ident)
    pinned, loose = [], []
    lag = s['lag_ms']
    (pinned if lag['pinned'] else loose).append(
        f"the lag (kv + damping)/kp: {lag['fitted']:.0f} ms, {lag['fold_min']:.0f} to {lag['fold_max']:.0f} ms over "
        f"the {len(ident.folds)} folds")
    for key, unit in (('frictionloss', 'N·m'), ('armature', 'kg·m²'), ('forcerange', 'N·m')):
        row = s[key]
        (pinned if row['pinned'] else loose).append(
            f"{key}: {three_digits(row['fitted'])} {unit}, {three_digits(row['fold_min'])} to {three_digits(row['fold_max'])} over the folds")
    kv, damping = s['kv'], s['damping']
    if kv['pinned'] and damping['pinned']:
        pinned.append(f"kv and damping one by one: {three_digits(kv['fold_min'])} to {three_digits(kv['fold_max'])} and "
                      f"{three_digits(damping['fold_min'])} to {three_digits(damping['fold_max'])} N·m·s/rad over the folds (the force "
                      f"clamp, where kv stops braking and the damping does not, told them apart)")
    else:
        loose.append(f"kv and damping one by one ({three_digits(kv['fold_min'])} to {three_digits(kv['fold_max'])} and "
                     f"{three_digits(damping['fold_min'])} to {three_digits(damping['fold_max'])} N·m·s/rad over the folds): only their "
                     f"sum sets the lag; the clamp asks only that damping keep forcerange/damping above the joints' "
                     f"speeds")
    kp = s['kp']
    ridge = ridge_summary(ident)
    sentence = f"kp: {three_digits(kp['fitted'])} N·m/rad, {three_digits(kp['fold_min'])} to {three_digits(kp['fold_max'])} over the folds"
    if ident.static_offsets_deg is not None:
        big = [(j, c) for j, c in zip(ARM_JOINTS, ident.static_offsets_deg) if abs(c) >= OFFSET_DEG]
        offsets = ', '.join(f'{j} {c:+.2f}' for j, c in big) or f'none of {OFFSET_DEG:g} degree or more'
        sentence += (f"; but in the held poses the real joints stop off their commands (command - joint, degrees: "
                     f"{offsets}), which a soft servo explains as sag and a stiff one with a calibration offset "
                     f"explains as well")
        if ridge and 'flat_kp_min' in ridge:
            flat = (f"within {100 * RIDGE_FLAT:.0f} % of its lowest from kp {three_digits(ridge['flat_kp_min'])} to "
                    f"{three_digits(ridge['flat_kp_max'])}" if ridge['flat_kp_max'] > ridge['flat_kp_min'] else
                    f"lowest at kp {three_digits(ridge['shifted_bottom_kp'])}, and more than {100 * RIDGE_FLAT:.0f} % "
                    f"higher at the other kp of the ridge")
            sentence += (f". Along the ridge of constant lag the cost is lowest at kp {three_digits(ridge['bottom_kp'])} and "
                         f"{ridge['stiff_over_bottom']:.3g} times that at kp {ridge['stiff_kp']:.0f}; with the offsets "
                         f"taken off the commands it is {flat}")
            ratio = offsets_structure_kp_ratio(ident)
            if not math.isnan(ratio):
                sentence += (f"; fitted as parameters fold by fold (spring + offsets), the offsets move kp by up to a "
                             f"factor {ratio:.3g}")
            sentence += (': kp is pinned only by what the offsets are taken to be' if kp_hangs_on_offsets(ident) else
                         ': the recording itself prefers the sag, so the offsets do not decide kp')
    else:
        sentence += ('; the recording holds no still pose, so whether a calibration offset hides in it cannot be '
                     'checked: kp rests on the moves alone')
    (pinned if kp['pinned'] else loose).append(sentence)
    return pinned, loose
