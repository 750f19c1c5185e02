"""Servo system identification: replay recorded SO-101 episodes open loop and fit the servo model.

Open-loop replay
    Reset the simulated arm (``physai.so101.load_so101()``) to an episode's first ``observation.state``,
    then feed the recorded ``action`` stream tick for tick: each frame's target is held in ``d.ctrl`` for
    the physics steps of one frame (``substeps = round(1 / (fps * timestep))``, and the timestep is
    adjusted to ``1 / (fps * substeps)`` so a whole number of steps fills a frame). The simulated joints
    at the end of frame t are compared with ``observation.state[t+1]``.

    Contacts are off: Menagerie's simple collision boxes overlap each other in the folded rest pose
    (:func:`overlap_depth`), in which most of the recorded episodes start and end, so with contacts on
    the arm is pushed apart, wherever the boxes overlap, by contact forces the real arm never feels.
    Joint limits and the actuators' ctrlrange stay as the model ships them (``ReplayConfig.limits``);
    note that the model's elbow range, ±1.69 rad (±96.8°), is a few degrees narrower than the ≈99.6°
    this real elbow reaches when folded.

Joint convention
    radians = deg2rad(degrees), sign +1, offset 0 for the five arm joints: the gripper tip then comes
    down to the table plane and never far below it (:func:`tip_height`; a flipped shoulder lift sends it
    through the table, a flipped elbow or wrist flex never lets it reach the table). The gripper's 0..100
    is mapped linearly onto its joint range; it is simulated but never scored.

Score
    Mean absolute error in degrees of ``sim[t] - state[t]`` over frames 1..n-1 and the five arm joints
    (``mae_deg``), and per joint.

The servo model
    Every one of the six joints gets the same :class:`ArmServo`: MuJoCo's ``<position>`` actuator,
    ``force = clip(kp*(u - q) - kv*q̇, -forcerange, forcerange)`` (``actuator_gainprm[0] = kp``,
    ``actuator_biasprm[:3] = (0, -kp, -kv)``, ``actuator_forcerange``), on a joint with ``dof_damping``,
    ``dof_frictionloss`` and ``dof_armature``. kv acts inside the clamp and the joint damping outside it,
    so a saturated joint moves no faster than forcerange/damping (less what gravity takes), whatever kv.

The fit
    Six shared parameters in log10 space with bounds, fitted with MuJoCo's bounded Levenberg-Marquardt
    least squares (``mujoco.minimize.least_squares``) on per-frame residuals (sim - real, degrees) of the
    fit episodes, from two starts, each run until the solver's own tolerances stop it (``max_iter`` is
    only a cap). ``least_squares`` asks for the residuals of several candidates at once (all six
    finite-difference probes of a Jacobian in one call); :func:`replay` runs them, every candidate on every
    episode, as one ``mujoco.batch.Batch`` with one model per simulation. The models are copies of the
    arm without its meshes (:func:`_base_arm`), since copying the mesh data cost more than simulating.
    The starts end in one flat valley at nearly equal costs; the softest of those within ``COST_TIE`` is
    kept, since its path does not depend on the last bits of the arithmetic, and its servo is rounded to
    ``FIT_DIGITS`` significant digits, so everything computed from it is the same on any processor.

Also here: the teleport scale (:func:`teleport_errors`, :func:`best_shift`), the sag in held poses,
the kp × damping map, leave-one-out, a synthetic stand-in recording for when no real one is at hand
(:func:`find_dataset`), the ``sysid`` experiment (``python -m physai sysid``), and chapter 4's live panel
and static twin (:func:`sysid_panel`, :func:`sysid_twin`).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
from collections.abc import Sequence

import mujoco
import mujoco.batch
import mujoco.minimize
import numpy as np

from physai.engine.datasets import Episode, LeRobotDataset, load_lerobot, shipped_recording
from physai.engine.replay import (ArmServo, BASELINES, Replay, ReplayConfig, TIP_SITE, _base_arm, arm_columns,
                                  fit_servo, mae_deg, replay, synthetic_dataset, to_radians)
from physai.engine.so101 import ARM_JOINTS, load_so101
from physai.experiments.registry import experiment


FIT_EPISODES = (0, 1, 2)
HELDOUT_EPISODE = 3


def held_frames(action_deg: np.ndarray, *, window: int = 6, tol_deg: float = 1.0) -> np.ndarray:
    """(nframe,) True where every arm command has stayed within ``tol_deg`` for ``window`` frames.

    In such a held pose the servo has (nearly) settled, so joint minus command is the sag: the steady
    error it needs to hold the arm against gravity and friction.
    """
    a = np.asarray(action_deg, dtype=float)
    held = np.zeros(len(a), dtype=bool)
    for t in range(window, len(a)):
        held[t] = np.all(np.abs(a[t - window:t + 1] - a[t]) <= tol_deg)
    return held


def sag_frames(rep: Replay, **kwargs) -> np.ndarray:
    """(nframe,) held frames whose commands all lie inside the model's ctrlrange.

    Outside the ctrlrange the simulated joint stops at its limit, which would be measured instead of
    the sag (the folded rest pose commands the elbow past the model's range).

    Args:
      rep: a replay.
      **kwargs: ``window`` and ``tol_deg`` of :func:`held_frames`.
    """
    low, high = np.degrees(_base_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    inside = np.all((rep.action_deg >= low) & (rep.action_deg <= high), axis=1)
    return held_frames(rep.action_deg, **kwargs) & inside


def hold_sag_deg(rep: Replay, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """Mean command minus joint over :func:`sag_frames`, simulated and real, degrees.

    Returns:
      ``(sim, real)``, each (5,) per arm joint; NaN when the episode holds no such pose.
    """
    held = sag_frames(rep, **kwargs)
    if not held.any():
        return np.full(len(ARM_JOINTS), np.nan), np.full(len(ARM_JOINTS), np.nan)
    return ((rep.action_deg[held] - rep.sim_deg[held]).mean(axis=0),
            (rep.action_deg[held] - rep.real_deg[held]).mean(axis=0))


# --------------------------------------------------------------------------------------------------
# The teleport scale
# --------------------------------------------------------------------------------------------------

def teleport_errors(episodes: Sequence[Episode], shift: int = 1) -> np.ndarray:
    """(nframe_total, 5) |action[t] - state[t + shift]| over the arm joints, degrees.

    ``shift = 1`` is a servo that reaches each target within one frame: the "teleport" scale every
    simulated servo is measured against.
    """
    if not isinstance(shift, (int, np.integer)) or shift < 0:
        raise ValueError(f'shift must be an integer >= 0 frames, got {shift!r}')
    rows = []
    for e in episodes:
        cols = arm_columns(e.joints)
        a, s = e.action[:, cols], e.state[:, cols]
        rows.append(np.abs(a[:e.nframe - shift] - s[shift:]))
    return np.concatenate(rows)


def best_shift(episodes: Sequence[Episode], shifts: Sequence[int] = range(11)) -> int:
    """The frame shift that minimises the teleport error on ``episodes``."""
    errors = [teleport_errors(episodes, s).mean() for s in shifts]
    return int(list(shifts)[int(np.argmin(errors))])


# --------------------------------------------------------------------------------------------------
# Evidence for the joint convention, and the book's tables
# --------------------------------------------------------------------------------------------------

def tip_height(episode: Episode, *, signs: Sequence[float] = (1, 1, 1, 1, 1)) -> np.ndarray:
    """(nframe,) height of the gripper tip (site ``gripperframe``) over the recording, m.

    The measured joints are put through the model's kinematics with radians = sign * deg2rad(degrees);
    the arm's base sits on the table at z = 0, so a right convention keeps the tip at z >= 0 and brings
    it down to about 0 where the arm picks from the table.
    """
    m = _base_arm()
    d = mujoco.MjData(m)
    q = to_radians(episode.state, episode.joints)
    q[:, :len(ARM_JOINTS)] *= np.asarray(signs, dtype=float)
    site = m.site(TIP_SITE).id
    z = np.empty(len(q))
    for k, qk in enumerate(q):
        d.qpos[:] = qk
        mujoco.mj_kinematics(m, d)
        z[k] = d.site_xpos[site, 2]
    return z


def overlap_depth(episode: Episode) -> np.ndarray:
    """(nframe,) deepest overlap of the arm's own collision geoms at each measured pose, m (0: none).

    This is why the replay turns contacts off: Menagerie's collision boxes of the lower arm, wrist and
    gripper reach into the shoulder's box when the arm is folded, so a replay with contacts would push
    the arm apart with forces the real one never feels.
    """
    m = load_so101()
    d = mujoco.MjData(m)
    q = to_radians(episode.state, episode.joints)
    depth = np.zeros(len(q))
    for k, qk in enumerate(q):
        d.qpos[:] = qk
        mujoco.mj_forward(m, d)
        if d.ncon:
            depth[k] = max(0.0, -float(d.contact.dist[:d.ncon].min()))
    return depth


def find_dataset(source: str | os.PathLike | None = None, *, download: bool = False
                 ) -> tuple[LeRobotDataset, str]:
    """The chapter's recording, and a sentence saying where it came from.

    ``source`` is a folder, a Hub dataset id (fetched when ``download`` is True), or ``'synthetic'`` for
    :func:`synthetic_dataset`, the stand-in recorded by the simulated arm itself; None means :func:`dataset_path`,
    the recording that ships with physai (or ``PHYSAI_DATASET``).
    """
    if source == 'synthetic':
        return synthetic_dataset(), 'a synthetic stand-in made by the simulated arm itself, as asked'
    if source is not None:
        return load_lerobot(source, download=download), f'recording {source}'
    path = dataset_path()
    return load_lerobot(path), f'recording {path.name}'


def dataset_path() -> pathlib.Path:
    """The recording the book uses: ``PHYSAI_DATASET`` if set, else the one shipped inside physai
    (:func:`physai.engine.datasets.shipped_recording`, 180 KB, Apache-2.0)."""
    env = os.environ.get('PHYSAI_DATASET')
    return pathlib.Path(env) if env else shipped_recording()


def load_book_dataset(source: str | os.PathLike | None = None, *, download: bool = False
                      ) -> LeRobotDataset:
    """The SO-101 recording of chapter 4 (see :func:`dataset_path`), or ``source`` when given."""
    return load_lerobot(dataset_path() if source is None else source, download=download)


def split(dataset: LeRobotDataset) -> tuple[list[Episode], list[Episode]]:
    """The book's split: fit on the first three episodes (0-2), hold out the next one (3).

    A dataset with fewer episodes fits on all but its last and holds out the last.
    """
    if len(dataset) < 2:
        raise ValueError(f'the dataset needs at least 2 episodes (fit and held out), got {len(dataset)}')
    if len(dataset) > HELDOUT_EPISODE:
        return [dataset.episodes[i] for i in FIT_EPISODES], [dataset.episodes[HELDOUT_EPISODE]]
    return list(dataset.episodes[:-1]), [dataset.episodes[-1]]


MODELS = ('teleport', 'teleport-best-shift', 'menagerie', 'therobotstudio', 'published-fit', 'fitted')


def sysid_rows(fit_eps: Sequence[Episode], heldout: Sequence[Episode], fitted: ArmServo, *,
               config: ReplayConfig = ReplayConfig()) -> list[dict]:
    """One row per model (``MODELS``): mean absolute error on the fit and held-out episodes, degrees.

    Keys: ``model``, ``fit_mae_deg``, ``heldout_mae_deg``, and ``fit_<joint>_deg``,
    ``heldout_<joint>_deg`` per arm joint.
    """
    def row(name, fit_err, held_err):
        return dict(model=name, fit_mae_deg=float(fit_err.mean()),
                    heldout_mae_deg=float(held_err.mean()),
                    **{f'fit_{j}_deg': float(v) for j, v in zip(ARM_JOINTS, fit_err.mean(axis=0))},
                    **{f'heldout_{j}_deg': float(v) for j, v in zip(ARM_JOINTS, held_err.mean(axis=0))})

    rows = []
    shift = best_shift(fit_eps)
    for name, s in (('teleport', 1), ('teleport-best-shift', shift)):
        rows.append(row(name, teleport_errors(fit_eps, s), teleport_errors(heldout, s)))
    servos = dict(BASELINES, fitted=fitted)
    runs = replay(list(servos.values()), list(fit_eps) + list(heldout), config=config)
    for name, reps in zip(servos, runs):
        rows.append(row(name, np.concatenate([r.error_deg for r in reps[:len(fit_eps)]]),
                        np.concatenate([r.error_deg for r in reps[len(fit_eps):]])))
    return rows


def joint_columns(part: str) -> tuple[tuple[str, str], ...]:
    """``format_table`` columns of the per-joint errors, ``part`` 'fit' or 'heldout'."""
    return (('model', 's'),) + tuple((f'{part}_{j}_deg', '.3f') for j in ARM_JOINTS)


def kp_damping_map(episodes: Sequence[Episode], base: ArmServo, kps: Sequence[float],
                   dampings: Sequence[float], *, config: ReplayConfig = ReplayConfig()) -> np.ndarray:
    """(len(kps), len(dampings)) mean absolute error of ``base`` with kp and joint damping replaced, deg.

    Every cell is one replay of every episode; all run in one batch.
    """
    servos = [dataclasses.replace(base, kp=float(kp), damping=float(b)) for kp in kps for b in dampings]
    runs = replay(servos, episodes, config=config)
    return np.array([mae_deg(r) for r in runs]).reshape(len(kps), len(dampings))


def leave_one_out(dataset: LeRobotDataset, **fit_kwargs) -> list[dict]:
    """Fit on all episodes but one and score the one left out, for each episode in turn.

    Args:
      dataset: the recording; every episode is left out once.
      **fit_kwargs: passed to :func:`fit_servo` (``starts``, ``max_iter``, ``progress``, ...); its
        ``config`` is also the replay the fitted servo is scored with.

    Returns:
      Rows with ``heldout`` (episode_index), the six fitted parameters, ``lag_ms``,
      ``fit_mae_deg`` and ``heldout_mae_deg``.
    """
    rows = []
    episodes = list(dataset.episodes)
    for k, out in enumerate(episodes):
        rest = episodes[:k] + episodes[k + 1:]
        fitted = fit_servo(rest, **fit_kwargs).servo
        runs = replay([fitted], rest + [out], config=fit_kwargs.get('config', ReplayConfig()))[0]
        rows.append(dict(heldout=out.index, **fitted.as_dict(), lag_ms=fitted.lag_ms,
                         fit_mae_deg=mae_deg(runs[:-1]), heldout_mae_deg=runs[-1].mae_deg))
    return rows


@experiment('sysid', summary='open-loop replay of the SO-101 recording: baselines and the fitted servo',
            columns=(('model', 's'), ('fit_mae_deg', '.3f'), ('heldout_mae_deg', '.3f')))
def sysid(progress: bool = True) -> list[dict]:
    """Fit on episodes 0-2 of the book's recording, score every model on them and on episode 3."""
    try:
        dataset = load_book_dataset()
    except FileNotFoundError as err:
        raise ValueError(f'{err}; set PHYSAI_DATASET to a LeRobot SO-101 dataset folder') from None
    fit_eps, heldout = split(dataset)
    result = fit_servo(fit_eps, progress=progress and sys.stderr.isatty())
    rows = sysid_rows(fit_eps, heldout, result.servo)
    return [{k: row[k] for k in ('model', 'fit_mae_deg', 'heldout_mae_deg')} for row in rows]
