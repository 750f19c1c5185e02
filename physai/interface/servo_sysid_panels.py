"""Chapter 4's live panel: an SO-101 episode replayed open loop under a servo you set.

The panel is described once, :func:`sysid_spec` (controls, plots, words), and drawn everywhere by the page's
``book/_static/panels/servo_sysid_panels.js``: on the published page as :func:`sysid_twin` with
:func:`physai.interface.web_arm.sysid_live` (the first view precomputed here over kp, then MuJoCo in the reader's
browser), and in Jupyter and Colab as :func:`sysid_widget` (every setting replayed by the kernel's Python MuJoCo). It
replays one recorded episode (:func:`physai.engine.arm_replay.replay`) with the servo's kp, kv, forcerange, armature,
timestep and integrator on the controls, and draws the simulated joints against the recording, the error per joint,
the sag in held poses and whether the replay stayed stable, chatters or diverged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from physai.interface import plots, web
from physai.interface.panel import Entry, LogSlider, PanelSpec, Plot, Slider, common_controls
from physai.engine import mj
from physai.engine.datasets import Episode
from physai.engine.arm_replay import (CHATTER_DEG, ArmServo, Replay, ReplayConfig, arm_columns, arm_model, replay,
                                      replay_steps, rollout, slim_arm)
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.experiments.servo_sysid import hold_sag_deg
from physai.laws import checks, robust

PANEL_JOINTS = ('shoulder_lift', 'elbow_flex')
"""The two joints the overlay shows."""

TWIN_KPS = robust.log_grid(1.0, 1000.0, 13)
"""N·m/rad: the first view's kp grid (with the fitted kp)."""

JOINT_SHORT = ('pan', 'lift', 'elbow', 'w.flex', 'w.roll')
"""The arm joints' names under the bars."""

SIM_COLORS = (plots.PALETTE['blue'], plots.PALETTE['green'])
SAG_COLOR = plots.PALETTE['orange']

TWIN_NUDGES = (0.0, 1e-9, 2e-9, 3e-9)
"""rad: each frame of the first view is replayed from the recorded start and from three starts a little off it
(the first four of :data:`physai.engine.arm_replay.ENSEMBLE_OFFSETS`), so a chaotic frame shows itself before it is
stored. A chaotic replay falls on one of a few branches, so it takes more than two draws to see one part."""

CHAOTIC_SPREAD_DEG = 1e-4
"""deg: a frame whose nudged replays part by more than this is chaotic. One that is not parts by under 1e-6 deg
(the 1e-9 rad nudge, amplified tenfold at most), a hundred times below the stored 0.01 deg; a chaotic one by
degrees (kp 1000 with the fitted friction: 2.6 deg)."""

FAR_OFF_RATIO = 2.0
"""A replay that stays bounded and smooth but is more than this many times as far from the recording as the teleport
(each joint on the previous frame's command, :attr:`Replay.teleport_deg`) is *far off*, not a replay to call stable:
it does worse than a servo that models no dynamics at all, by a wide margin. On chapter 4's held-out episode the
fitted servo is a third of the teleport's error, Menagerie's servo about the teleport's; kp 1 with the rest as fitted
sags and trails 13° off, seven times the teleport's."""

STATUS_WORDS = {
    'diverged': 'diverged',
    'chatters': 'chatters ({chatter:.0f}° per frame) · MAE {mae:.3f}°',
    'far_off': 'far off · MAE {mae:.3f}°, {ratio:.1f}× the teleport\'s',
    'stable': 'stable · MAE {mae:.3f}°',
}
"""The words on a replay (:func:`replay_status`), templates of the panel's description."""


SERVO_FIELDS = tuple(f.name for f in dataclasses.fields(ArmServo))
"""The panel's controls named like a servo's fields (kp, kv, forcerange, damping, frictionloss, armature) set it."""

CONFIG_FIELDS = ('timestep', 'integrator')
"""The panel's controls that set the replay's step."""


def panel_replay(episode: Episode, base: ArmServo, values: dict) -> Replay:
    """The panel's physics: ``episode`` replayed open loop (:func:`physai.engine.arm_replay.replay`) with ``base`` changed by
    the controls' values (SI), each control named like the servo's field or the replay's option it sets."""
    servo = dataclasses.replace(base, **{k: v for k, v in values.items() if k in SERVO_FIELDS})
    config = ReplayConfig(**{k: values[k] for k in CONFIG_FIELDS})
    return replay([servo], [episode], config=config, nthread=1)[0][0]


def replay_diverged(rep: Replay) -> bool:
    """Whether a replay counts as diverged on the panel: MuJoCo flagged it, or a frame is not finite."""
    return bool(rep.diverged or not np.all(np.isfinite(rep.sim_deg)))


def replay_far_off(rep: Replay) -> bool:
    """Whether a replay that neither diverged nor chatters is far off: its error over :data:`FAR_OFF_RATIO` times the
    teleport's on the same episode."""
    return bool(rep.mae_deg > FAR_OFF_RATIO * rep.teleport_deg)


def replay_status(rep: Replay) -> str:
    """The words the panel writes on a replay (:data:`STATUS_WORDS`), the first that applies:
    ``diverged``; ``chatters (N° per frame) · MAE x°`` when it stays bounded but rattles frame to frame;
    ``far off · MAE x°, r× the teleport's`` when it is smooth but more than :data:`FAR_OFF_RATIO` times as far from the
    recording as the teleport (:func:`replay_far_off`); else ``stable · MAE x°``. Only the last is drawn as a good
    run."""
    if replay_diverged(rep):
        return STATUS_WORDS['diverged']
    if rep.chatters:
        return STATUS_WORDS['chatters'].format(chatter=rep.chatter_deg, mae=rep.mae_deg)
    if replay_far_off(rep):
        return STATUS_WORDS['far_off'].format(mae=rep.mae_deg, ratio=rep.mae_deg / rep.teleport_deg)
    return STATUS_WORDS['stable'].format(mae=rep.mae_deg)


def sysid_spec(episode: Episode, base: ArmServo, *, joints: Sequence[str] = PANEL_JOINTS, timestep: float = 0.005,
               integrator: str = 'implicitfast') -> PanelSpec:
    """Chapter 4's panel, described once: the common four, kv and forcerange starting at ``base`` (clipped to the
    controls' ranges); the overlay of ``joints`` against ``episode``'s recording, the error per joint and the sag in
    held poses; the words.

    Args:
      episode: the recording replayed (its index and range set the overlay's title and limits).
      base: the servo the controls start from (damping and friction loss stay at base's).
      joints: the two arm joints the overlay shows.
      timestep, integrator: the replay's start values.

    Raises:
      TypeError: ``episode`` not an :class:`Episode` or ``base`` not an :class:`ArmServo`.
      ValueError: an episode of fewer than 2 frames or without the five arm joints, or ``joints`` not two arm joints
        named once each.
    """
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode (a recording, e.g. load_lerobot(...)[0]), '
                        f'got {episode!r:.80}')
    if not isinstance(base, ArmServo):
        raise TypeError(f'base must be a physai.engine.arm_replay.ArmServo (e.g. arm_replay.MENAGERIE), '
                        f'got {base!r:.80}')
    if episode.nframe < 2 or any(j not in episode.joints for j in ARM_JOINTS):
        raise ValueError(f'episode must hold at least 2 frames of the arm joints {", ".join(ARM_JOINTS)}, got '
                         f'{episode.nframe} frames of {", ".join(episode.joints)}')
    if isinstance(joints, str) or len(joints) != 2 or any(j not in ARM_JOINTS for j in joints):
        raise ValueError(f'joints must be two of {", ".join(ARM_JOINTS)}, got {joints!r}')
    checks.distinct('joints', joints)
    clip = lambda lo, v, hi: min(max(v, lo), hi)  # noqa: E731
    controls = [*common_controls(kp=clip(1.0, base.kp, 30000.0), armature=min(base.armature, 0.1), timestep=timestep,
                                 integrator=integrator),
                LogSlider('kv', 'kv', 0.001, 30.0, clip(0.001, base.kv, 30.0), unit='N·m·s/rad', format='.3g'),
                Slider('forcerange', 'forcerange ±', 0.2, 5.0, clip(0.2, base.forcerange, 5.0), step=0.01, unit='N·m',
                       format='.2f')]
    real = episode.state[:, arm_columns(episode.joints)][:, [ARM_JOINTS.index(j) for j in joints]]
    lo, hi = float(real.min()), float(real.max())
    x = tuple((float(i), name) for i, name in enumerate(JOINT_SHORT))
    overlay = Plot(key='overlay', title=f'held-out episode {episode.index}', xlabel='time (s)',
                   ylabel='joint angle (deg)', xlim=(0.0, (episode.nframe - 1) / episode.fps),
                   ylim=(lo - 0.15 * (hi - lo), hi + 0.15 * (hi - lo)), corner='above', width=480, height=290,
                   legend=(Entry('real', plots.COLORS['real']),
                           *(Entry(f'sim {j}', c) for j, c in zip(joints, SIM_COLORS))))
    errors = Plot(key='errors', title='error per joint', xlabel='joint', ylabel='mean |sim − real| (deg)',
                  xlim=(-0.6, len(ARM_JOINTS) - 0.4), ylim=(0.0, 6.0), xticks=x, width=280, height=290)
    sags = Plot(key='sags', title='sag in held poses', xlabel='joint', ylabel='command − joint (deg)',
                xlim=(-0.6, len(ARM_JOINTS) - 0.4), ylim=(-4.0, 4.0), xticks=x, width=280, height=290, corner='below',
                legend=(Entry('real', plots.COLORS['real'], 'box'), Entry('sim', SAG_COLOR, 'box')))
    words = {**STATUS_WORDS, 'running': 'running… {t:.1f} s',
             'chaotic': 'chaotic: no single replay is stored · MAE ≈ {mae:.2g}°'}
    note = ('Episode {index} ({nframe} frames at {fps:g} fps) replayed open loop: every frame\'s recorded command '
            'held until the next frame, a whole number of physics steps per frame; joint damping {damping:.4g} '
            'N·m·s/rad and friction loss {frictionloss:.4g} N·m as fitted. A replay more than '
            f'{FAR_OFF_RATIO:g} times as far from the recording as a teleport to each command is far off.')
    return PanelSpec(key='sysid', title='Replay against the recording', controls=controls,
                     plots=(overlay, errors, sags), words=words, note=note)


# --------------------------------------------------------------------------------------------------
# The page panel: its precomputed first view

STORED_STEP_DEG = 0.01
"""Resolution of a stored replay, degrees: the two plotted joints' traces (under a pixel of the overlay) and the
bars of error and sag per joint."""


def replay_part(draws: Sequence[Replay], joints: Sequence[str]) -> dict:
    """A replay as the page's first view stores it, from its draws (the same servo from the :data:`TWIN_NUDGES`
    starts): the plotted joints' traces (packed at :data:`STORED_STEP_DEG`), the error and sag per joint (to
    :data:`STORED_STEP_DEG`) and the status words. A chaotic replay (its draws part by more than
    :data:`CHAOTIC_SPREAD_DEG`) stores its verdict alone, with the ensemble's median error to two digits, which
    another processor reproduces where it would draw other traces."""
    rep = draws[0]
    step = STORED_STEP_DEG
    chaotic = (not any(r.diverged for r in draws)
               and max(float(np.max(np.abs(r.sim_deg - rep.sim_deg))) for r in draws) > CHAOTIC_SPREAD_DEG)
    if chaotic:
        mae = robust.round_sig(float(np.median([r.mae_deg for r in draws])), 2)
        return {'chaotic': True, 'mae': mae, 'diverged': False}
    sag, _ = hold_sag_deg(rep)
    cols = [ARM_JOINTS.index(j) for j in joints]
    return {'sim': [web.pack(rep.sim_deg[:, c].tolist(), step) for c in cols],
            'jointMae': web.stepped(rep.joint_mae_deg, step), 'sag': web.stepped(sag, step),
            'status': replay_status(rep), 'diverged': replay_diverged(rep), 'chatters': bool(rep.chatters),
            'farOff': replay_far_off(rep) and not replay_diverged(rep) and not rep.chatters}


def sysid_constants(episode: Episode, base: ArmServo, joints: Sequence[str]) -> dict:
    """The numbers the page's panel draws and runs with (JSON-ready): the recording (degrees, arm joints), the
    servo the controls change, the joints' addresses and ctrl ranges, the chatter threshold."""
    cols = arm_columns(episode.joints)
    model_joints = list(slim_arm_joints())
    low, high = np.degrees(slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    _, real_sag = hold_sag_deg(replay([base], [episode], nthread=1)[0][0])
    return {'episode': {'index': int(episode.index), 'fps': float(episode.fps), 'nframe': int(episode.nframe),
                        'actionDeg': episode.action[:, cols].ravel().tolist(),
                        'stateDeg': episode.state[:, cols].ravel().tolist()},
            'armJoints': list(ARM_JOINTS), 'armIndex': [model_joints.index(j) for j in ARM_JOINTS],
            'joints': list(joints), 'chatterDeg': CHATTER_DEG, 'ctrlLowDeg': low.tolist(), 'ctrlHighDeg': high.tolist(),
            'teleportDeg': teleport_deg(episode), 'farOffRatio': FAR_OFF_RATIO,
            'servo': dataclasses.asdict(base),
            'sagReal': web.stepped(real_sag, STORED_STEP_DEG),
            'steps': STORED_STEP_DEG,
            'note': {'index': int(episode.index), 'nframe': int(episode.nframe), 'fps': float(episode.fps),
                     'damping': base.damping, 'frictionloss': base.frictionloss}}


def teleport_deg(episode: Episode) -> float:
    """:attr:`Replay.teleport_deg` of any replay of ``episode``: the teleport's mean absolute error, degrees."""
    cols = arm_columns(episode.joints)
    return float(np.abs(episode.action[:-1, cols] - episode.state[1:, cols]).mean())


def slim_arm_joints() -> tuple[str, ...]:
    """The replayed arm's joint names in qpos order."""
    import mujoco
    m = slim_arm()
    return tuple(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt))


WIDGET_WORDS = {'pending': 'running MuJoCo…',
                'chaotic': 'chaotic: nudged replays part, so none is drawn · MAE ≈ {mae:.2g}°',
                'arm3d_chaotic': 'chaotic: no single replay to play, as the plot draws none',
                'arm3d_stopped': 'diverged: MuJoCo stopped the replay at {t:.2f} s, where the view ends'}
"""The widget's words besides the page's: while the kernel runs a setting; its verdict on a chaotic setting (the
page's says its first view stores no single replay); the 3D view's note on a chaotic setting and on a replay that
diverged (kept out of :func:`sysid_spec`, whose words the page's stored first view carries)."""


def panel_draws(episode: Episode, base: ArmServo, values: dict) -> list[Replay]:
    """:func:`panel_replay` from the recorded start and the :data:`TWIN_NUDGES` starts, in one batch: the draws
    :func:`replay_part` stores one setting from."""
    servo = dataclasses.replace(base, **{k: v for k, v in values.items() if k in SERVO_FIELDS})
    runs = replay([servo] * len(TWIN_NUDGES), [episode], config=ReplayConfig(**{k: values[k] for k in CONFIG_FIELDS}),
                  offsets=np.asarray(TWIN_NUDGES))
    return [run[0] for run in runs]


@mj.captured_warnings()  # a replay that blows up is its verdict's to say, not a line on the notebook's stderr
def replay_qpos(episode: Episode, base: ArmServo, values: dict) -> tuple[np.ndarray, bool]:
    """The replay the panel draws (:func:`panel_replay`, from the recorded start: the first of :func:`panel_draws`)
    with every joint kept, the gripper's too, as the page's replay record keeps them for its 3D view.

    Returns:
      ``(qpos, warned)``: (nframe, nq) rad at frame 0 (the start) and at the end of every frame, in the model's joint
      order (:data:`physai.engine.so101.JOINTS`), and whether MuJoCo warned (the run stopped there, its last frames
      repeating the one before).
    """
    servo = dataclasses.replace(base, **{k: v for k, v in values.items() if k in SERVO_FIELDS})
    config = ReplayConfig(**{k: values[k] for k in CONFIG_FIELDS})
    replay_steps([episode], config)  # the checks replay() makes
    qpos, warned = rollout([arm_model(servo, config, fps=episode.fps)], [episode], config.substeps(episode.fps),
                           nthread=1)
    return qpos[0], bool(warned[0])


def replay_end(qpos: np.ndarray, warned: bool) -> int:
    """How many frames of a replay (:func:`replay_qpos`'s ``qpos`` and ``warned``) the 3D view plays: all of them,
    but a run whose angles stop being finite ends before the first such frame, and a run MuJoCo stopped (``warned``)
    ends at the frame it stopped on, the last that differs from the one before it (every later frame repeats it bit
    for bit; an arm the servos move never holds every joint still to the last bit for a whole frame)."""
    finite = np.all(np.isfinite(qpos), axis=1)
    n = len(qpos) if finite.all() else int(np.argmin(finite))
    if warned and n > 1:
        moved = np.flatnonzero(np.any(qpos[1:n] != qpos[:n - 1], axis=1))
        n = int(moved[-1]) + 2 if len(moved) else 1
    return max(n, 1)


def replay_poses(episode: Episode, base: ArmServo, values: dict) -> dict[str, np.ndarray]:
    """The bodies' poses the 3D view plays for a replay, as the page's view computes them (``arm3d_view.js``:
    ``ArmView.show``, kind ``replay``): at every frame of :func:`replay_qpos`, the simulated arm (solid) and the
    recorded one (the ghost: the recording's five arm joints, ``observation.state`` in radians, with the simulated
    gripper, which the recording's arm joints do not include), each posed by MuJoCo's ``mj_kinematics`` on the
    replayed arm (:func:`physai.engine.arm_replay.slim_arm`), up to :func:`replay_end`: a run that diverged ends
    where it did.

    Returns:
      ``time`` (nframe,) s; ``xpos``, ``ghost_xpos`` (nframe, nbody, 3) m; ``xquat``, ``ghost_xquat``
      (nframe, nbody, 4) MuJoCo's (w, x, y, z).
    """
    import mujoco
    qpos, warned = replay_qpos(episode, base, values)
    n = replay_end(qpos, warned)
    sim = qpos[:n]
    real = sim.copy()
    real[:, [JOINTS.index(j) for j in ARM_JOINTS]] = np.deg2rad(episode.state[:n, arm_columns(episode.joints)])
    m = slim_arm()
    d = mujoco.MjData(m)
    out = {}
    for prefix, frames in (('', sim), ('ghost_', real)):
        xpos, xquat = np.empty((n, m.nbody, 3)), np.empty((n, m.nbody, 4))
        for i, row in enumerate(frames):
            d.qpos[:] = row
            mujoco.mj_kinematics(m, d)
            xpos[i], xquat[i] = d.xpos, d.xquat
        out[f'{prefix}xpos'], out[f'{prefix}xquat'] = xpos, xquat
    return {'time': np.arange(n) / episode.fps, **out}


def sysid_widget(episode: Episode, base: ArmServo, *, joints: Sequence[str] = PANEL_JOINTS):
    """Chapter 4's page panel (:func:`sysid_spec`) as a Jupyter widget (:class:`physai.interface.widget.PanelWidget`):
    the page's ``servo_sysid_panels.js`` drawing the replay Python MuJoCo runs at the controls' exact values, stored
    as the first view stores one (:func:`panel_draws`, :func:`replay_part`: a chaotic setting shows its verdict
    alone). The four replays (a few hundred ms together: ``benchmarks/bench_panel.py``) come in the widget's second
    reply; the first says they are running. Its 3D view plays what the overlay draws: the replay from the recorded
    start against the recording (:func:`replay_poses`, posed by Python MuJoCo, sent when the view asks:
    :func:`widget.arm3d_messages <physai.interface.widget.arm3d_messages>`, as chapter 3's), ending where a replay
    that diverged was stopped, and nothing but a note where the setting is chaotic (the overlay draws no replay).

    Args:
      episode: the recording replayed (chapter 4: the held-out episode).
      base: the servo the controls start from (damping and friction loss stay at base's).
      joints: the two arm joints the overlay shows.

    Raises:
      TypeError, ValueError: as :func:`sysid_spec`.
    """
    from physai.interface import widget
    spec = sysid_spec(episode, base, joints=joints)
    spec = dataclasses.replace(spec, words={**spec.words, **WIDGET_WORDS})
    joints = tuple(joints)
    w = widget.PanelWidget(spec, 'servo_sysid_panels.js', constants=sysid_constants(episode, base, joints), now={},
                           later={'replay': widget.whole_part(
                               spec, lambda values: replay_part(panel_draws(episode, base, values), joints))})
    kept = widget.whole_part(spec, lambda values: replay_poses(episode, base, values), maxsize=4)

    def poses(values, _):
        # what the plot draws at these values: no replay where it is chaotic, the replay where MuJoCo stopped it
        part = w.later['replay'].compute(values)
        if part.get('chaotic'):
            return {'frames': 0, 'nbody': slim_arm().nbody, 'note': spec.say('arm3d_chaotic')}, []
        p = kept.compute(values)
        note = spec.say('arm3d_stopped', t=float(p['time'][-1])) if part['diverged'] else ''
        return ({'frames': len(p['time']), 'nbody': p['xpos'].shape[1], 'note': note},
                [p['time'], p['xpos'], p['xquat'], p['ghost_xpos'], p['ghost_xquat']])

    widget.arm3d_messages(w, poses)
    return w


def sysid_twin(episode: Episode, base: ArmServo, *, kps: Sequence[float] = TWIN_KPS,
               joints: Sequence[str] = PANEL_JOINTS):
    """Chapter 4's page panel (:func:`sysid_spec`) with its first view precomputed: ``episode`` replayed with ``base``
    at each kp of ``kps`` and at ``base.kp`` itself (where the panel starts), each from the :data:`TWIN_NUDGES` starts
    (a chaotic replay is stored as its verdict, :func:`replay_part`). On the page a reader's kp picks the nearest
    precomputed replay until MuJoCo runs in the page (:func:`physai.interface.web_arm.sysid_live`, in the next cell).

    Returns:
      ``IPython.display.HTML`` (see :func:`physai.interface.web.first_view`).
    """
    spec = sysid_spec(episode, base, joints=joints)
    kp0 = spec.control('kp').default_value
    kps = tuple(sorted({float(k) for k in kps} | {kp0}))
    at = spec.defaults
    servos = [dataclasses.replace(base, **{k: v for k, v in {**at, 'kp': kp}.items() if k in SERVO_FIELDS})
              for kp in kps]
    n = len(kps)
    runs = replay(servos * len(TWIN_NUDGES), [episode], config=ReplayConfig(**{k: at[k] for k in CONFIG_FIELDS}),
                  offsets=np.repeat(TWIN_NUDGES, n))
    draws = {k: [runs[m * n + i][0] for m in range(len(TWIN_NUDGES))] for i, k in enumerate(kps)}
    parts = {'replay': web.Part(('kp',), lambda kp: replay_part(draws[kp], joints))}
    return web.first_view(spec, 'servo_sysid_panels.js', grid={'kp': kps}, parts=parts,
                          constants=sysid_constants(episode, base, joints),
                          fallback='This panel draws on the book\'s page; in Jupyter or Colab the cell above shows '
                                   'the same panel, its runs made by the kernel\'s Python MuJoCo.')
