"""Chapter 6's settings panel: the STS3215's registers set on the fitted arm, a step and a teleoperation segment.

The panel is described once, :func:`settings_spec` (controls, plots, words), and drawn everywhere by the page's
``book/_static/panels/servo_firmware_panels.js``: in Jupyter and Colab as :func:`settings_widget` (the kernel's Python
MuJoCo), on the book's page by :mod:`physai.interface.web_firmware`. The controls are the owner's settings (P
register, supply voltage, torque limit, Goal_Speed, backlash) plus the replay's timestep and integrator; each becomes a
:class:`physai.engine.firmware.FirmwareModel` on the chapter's fitted spring (:func:`settings_model`) and replays two
things on ``mj_step`` (:func:`physai.engine.firmware.replay`): a step of the shoulder lift from a held pose, and a
segment of the held-out teleoperation episode at its 30 Hz. The readouts (:func:`readouts`) are computed from those
two runs and the settings alone: kp, the sag under the arm's heaviest load, the dead band, the time to 90 % of the
step, and the verdict on the segment: whether it chatters at the policy's rate, and by what margin it does not.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from physai.engine import firmware
from physai.engine.arm_replay import CHATTER_DEG, Replay, ReplayConfig
from physai.engine.datasets import Episode
from physai.engine.servo_models import JointModel
from physai.engine.so101 import ARM_JOINTS
from physai.experiments import servo_firmware
from physai.interface import plots
from physai.interface.panel import Choice, Entry, PanelSpec, Plot, Slider
from physai.laws import checks, sts3215

STEP_JOINT = 'shoulder_lift'
"""The joint the step moves and both plots show."""

STEP_DEG = 20.0
"""deg: the step's size."""

STEP_AT_FRAME = 3
"""The step is commanded from this frame on (0.1 s at 30 fps)."""

STEP_FRAMES = 46
"""Frames of the step run (1.5 s at 30 fps)."""

RISE = 0.9
"""Time to target is the time to reach this fraction of the step."""

SEGMENT_S = 6.0
"""s: the teleoperation segment's length."""

FIELDS = ('p_register', 'supply_voltage', 'torque_limit', 'goal_speed', 'backlash_deg')
"""The controls that set :class:`physai.laws.sts3215.Settings`."""

WORDS = {
    'diverged': 'diverged at 30 Hz',
    'chatters': 'chatters at 30 Hz, over the {limit:g}° line',
    'quiet': 'no chatter at 30 Hz: margin {margin:.0f}×',
    'still': 'no chatter at 30 Hz: no rattle at all',
    'segment': 'segment: {chatter:.3f}° per frame · MAE {mae:.2f}°',
    'kp': 'kp {kp:.2f} N·m/rad · forcerange {forcerange:.2f} N·m',
    'sag': 'sag {sag:.2f}° under {load:.2f} N·m',
    'cannot_hold': 'cannot hold {load:.2f} N·m (forcerange {forcerange:.2f} N·m)',
    'band': 'dead band ±{band:.2f}°',
    'rise': 'time to {rise:.0f}% of the step {t:.2f} s',
    'no_rise': 'never reaches {rise:.0f}% of the step',
}
"""The words on the panel, templates of its description."""


def segment_of(episode: Episode, seconds: float = SEGMENT_S) -> Episode:
    """The ``seconds`` of ``episode`` whose shoulder-lift command moves most (sum of its frame-to-frame changes; the
    first such window), as an episode of its own starting at 0 s."""
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')
    n = int(round(checks.positive('seconds', seconds, 's') * episode.fps)) + 1
    if n > episode.nframe:
        raise ValueError(f'seconds must be at most the episode\'s {(episode.nframe - 1) / episode.fps:g} s, '
                         f'got {seconds!r}')
    move = np.abs(np.diff(episode.action[:, episode.joints.index(STEP_JOINT)]))
    sums = np.convolve(move, np.ones(n - 1), mode='valid')
    start = int(np.argmax(sums))
    cut = slice(start, start + n)
    return Episode(index=episode.index, fps=episode.fps, joints=episode.joints, action=episode.action[cut],
                   state=episode.state[cut], timestamp=episode.timestamp[cut] - episode.timestamp[start])


def step_episode(segment: Episode) -> Episode:
    """A commanded step of :data:`STEP_DEG` on :data:`STEP_JOINT` from the pose in the middle of ``segment`` (held
    for :data:`STEP_AT_FRAME` frames), :data:`STEP_FRAMES` frames at its fps; its "recording" is the command."""
    pose = segment.state[segment.nframe // 2]
    action = np.repeat(pose[None], STEP_FRAMES, axis=0)
    action[STEP_AT_FRAME:, segment.joints.index(STEP_JOINT)] += STEP_DEG
    return Episode(index=segment.index, fps=segment.fps, joints=segment.joints, action=action, state=action.copy(),
                   timestamp=np.arange(STEP_FRAMES) / segment.fps)


def settings_of(values: dict) -> sts3215.Settings:
    """The :class:`physai.laws.sts3215.Settings` the controls' values (SI, floats) set."""
    return sts3215.Settings(p_register=int(round(values['p_register'])), supply_voltage=float(values['supply_voltage']),
                            torque_limit=int(round(values['torque_limit'])),
                            goal_speed=int(round(values['goal_speed'])), backlash_deg=float(values['backlash_deg']))


def settings_model(spring: JointModel, settings: sts3215.Settings) -> firmware.FirmwareModel:
    """``spring`` with the settings: kp from P and the supply, forcerange from the supply and the torque limit, kv
    moved so each joint keeps its lag (as the chapter's ablation does), the slew limit and the play."""
    if not isinstance(spring, JointModel):
        raise TypeError(f'spring must be a physai.engine.servo_models.JointModel, got {type(spring).__name__}')
    servo = servo_firmware.on_lag(spring, settings.kp, settings.forcerange)
    return firmware.FirmwareModel(servo=servo, backlash=settings.backlash, slewmax=settings.slewmax)


def settings_runs(spring: JointModel, segment: Episode, values: dict) -> tuple[Replay, Replay]:
    """The panel's physics: the step (:func:`step_episode`) and ``segment`` replayed on ``mj_step`` with ``spring``
    under the controls' settings (:func:`settings_model`), at the controls' timestep and integrator."""
    model = settings_model(spring, settings_of(values))
    config = ReplayConfig(timestep=float(values['timestep']), integrator=values['integrator'])
    step, seg = firmware.replay([model], [step_episode(segment), segment], config=config)[0]
    return step, seg


def time_to_target(step: Replay, fps: float) -> float:
    """s from the step's command to :data:`RISE` of the step on :data:`STEP_JOINT`, interpolated between frames;
    ``math.inf`` if it never gets there (or the run diverged)."""
    j = ARM_JOINTS.index(STEP_JOINT)
    q = step.sim_deg[STEP_AT_FRAME - 1:, j]
    if step.diverged or not np.all(np.isfinite(q)):
        return math.inf
    frac = (q - q[0]) / STEP_DEG
    above = np.flatnonzero(frac >= RISE)
    if not len(above):
        return math.inf
    k = int(above[0])
    if k == 0:
        return 0.0
    t = k - 1 + (RISE - frac[k - 1]) / (frac[k] - frac[k - 1])
    return float((t - 1) / fps)  # frame STEP_AT_FRAME - 1 is q[0]; the command changes one frame later


def readouts(spring: JointModel, settings: sts3215.Settings, load: float, step: Replay, segment: Replay,
             fps: float) -> dict:
    """The panel's readouts, from the settings and the two runs (:func:`settings_runs`): ``kp``, ``forcerange``;
    ``sag`` (deg, ``load/kp``; NaN where ``load`` exceeds forcerange); ``band`` (deg, the half-width over which the
    P loop stalls on :data:`STEP_JOINT`: its friction over kp, plus half the play); ``rise`` (s,
    :func:`time_to_target`); ``chatter`` (deg per frame, the segment's :attr:`Replay.chatter_deg`), ``margin``
    (``CHATTER_DEG / chatter``, inf for none) and ``verdict``: ``diverged``, ``chatters``, ``quiet`` or ``still``
    (no rattle at all); ``mae`` (deg, the segment against the recording)."""
    j = ARM_JOINTS.index(STEP_JOINT)
    kp, force = settings.kp, settings.forcerange
    sag = math.degrees(load / kp) if load <= force else math.nan
    band = math.degrees(spring.frictionloss[j] / kp + settings.backlash / 2)
    chatter = float(segment.chatter_deg)
    if segment.diverged or not np.all(np.isfinite(segment.sim_deg)):
        verdict = 'diverged'
    elif segment.chatters:
        verdict = 'chatters'
    elif chatter == 0:
        verdict = 'still'
    else:
        verdict = 'quiet'
    return {'kp': kp, 'forcerange': force, 'load': load, 'sag': sag, 'band': band, 'rise': time_to_target(step, fps),
            'chatter': chatter, 'margin': CHATTER_DEG / chatter if chatter > 0 else math.inf, 'verdict': verdict,
            'mae': float(segment.mae_deg), 'limit': CHATTER_DEG}


def readout_lines(r: dict) -> list[str]:
    """The readouts as the panel writes them (:data:`WORDS`)."""
    lines = [WORDS['kp'].format(**r),
             WORDS['sag'].format(**r) if math.isfinite(r['sag']) else WORDS['cannot_hold'].format(**r),
             WORDS['band'].format(**r),
             (WORDS['rise'].format(rise=100 * RISE, t=r['rise']) if math.isfinite(r['rise'])
              else WORDS['no_rise'].format(rise=100 * RISE))]
    return lines + [WORDS[r['verdict']].format(**r), WORDS['segment'].format(**r)]


def settings_spec(segment: Episode, *, settings: sts3215.Settings = sts3215.Settings(), timestep: float = 0.005,
                  integrator: str = 'implicitfast') -> PanelSpec:
    """Chapter 6's panel, described once: the owner's settings (starting at ``settings``), the replay's timestep and
    integrator; the step and the segment plots; the words."""
    if not isinstance(segment, Episode):
        raise TypeError(f'segment must be a physai.engine.datasets.Episode, got {type(segment).__name__}')
    if not isinstance(settings, sts3215.Settings):
        raise TypeError(f'settings must be a physai.laws.sts3215.Settings, got {type(settings).__name__}')
    controls = [Slider('p_register', 'P register', 1, 64, settings.p_register, step=1, unit='(register)', format='.0f',
                       url='p'),
                Slider('supply_voltage', 'supply', 5.0, 12.6, settings.supply_voltage, step=0.1, unit='V',
                       format='.1f', url='v'),
                Slider('torque_limit', 'torque limit', 100, 1000, settings.torque_limit, step=10, unit='‰',
                       format='.0f', url='torque'),
                Slider('goal_speed', 'Goal_Speed', 0, 4000, settings.goal_speed, step=50, unit='steps/s',
                       format='.0f', url='speed'),
                Slider('backlash_deg', 'backlash', 0.0, 3.0, settings.backlash_deg, step=0.1, unit='°', format='.1f',
                       url='backlash'),
                Slider('timestep', 'timestep', 0.5, 20.0, timestep * 1e3, step=0.1, unit='ms', scale=1e-3,
                       format='.1f', url='h', continuous_update=False),
                Choice('integrator', 'integrator', checks.INTEGRATORS, integrator)]
    col = segment.joints.index(STEP_JOINT)
    start = float(segment.state[segment.nframe // 2, col])
    real = segment.state[:, col]
    lo, hi = float(real.min()), float(real.max())
    step = Plot(key='step', title=f'a {STEP_DEG:g}° step, {STEP_JOINT.replace("_", " ")}', xlabel='time (s)',
                ylabel='joint angle (deg)', xlim=(0.0, (STEP_FRAMES - 1) / segment.fps),
                ylim=(start - 0.3 * STEP_DEG, start + 1.3 * STEP_DEG), width=360, height=290, corner='above',
                legend=(Entry('command', plots.COLORS['real'], 'dash'), Entry('sim', plots.PALETTE['blue'])))
    seg = Plot(key='segment', title=f'{segment.nframe / segment.fps:.0f} s of teleoperation, episode {segment.index}',
               xlabel='time (s)', ylabel='joint angle (deg)', xlim=(0.0, (segment.nframe - 1) / segment.fps),
               ylim=(lo - 0.15 * (hi - lo), hi + 0.15 * (hi - lo)), width=480, height=290, corner='above',
               legend=(Entry('real', plots.COLORS['real']), Entry('sim', plots.PALETTE['green'])))
    note = ('The chapter\'s fitted spring with the settings: kp from P and the supply, forcerange from the supply and '
            'the torque limit, kv keeping each joint\'s lag, Goal_Speed as a slew limit on the set point (0: none), '
            'the backlash as a play hinge on every arm joint; the angle read is the servo\'s. The segment replays '
            'the recorded commands at 30 Hz, open loop.')
    return PanelSpec(key='firmware', title='The servo\'s settings', controls=controls, plots=(step, seg), words=WORDS,
                     note=note)


def settings_widget(spring: JointModel, episode: Episode, load: float, *,
                    settings: sts3215.Settings = sts3215.Settings()):
    """Chapter 6's panel as a Jupyter widget (:class:`physai.interface.widget.PanelWidget`): the page's
    ``servo_firmware_panels.js`` drawing the step and the segment Python MuJoCo runs at the controls' exact values,
    as the page's first view stores them (:func:`physai.interface.web_firmware.runs_part`). It has every control of
    :func:`settings_spec`, the backlash too (the kernel runs the play's second hinge, which the page cannot). The two
    runs (0.1 to 0.5 s: ``benchmarks/bench_panel.py``) come in the widget's second reply; the first says they are
    running.

    Args:
      spring: the fitted per-joint servo (chapter 4's spring, no delay, no offsets).
      episode: the held-out recording the segment is cut from (:func:`segment_of`).
      load: N·m, the arm's heaviest gravity load (``servo_firmware.heaviest_load``), for the sag.
      settings: where the controls start (LeRobot's follower by default).

    Raises:
      TypeError: ``spring``, ``episode`` or ``settings`` of the wrong type.
      ValueError: ``load`` not a number >= 0, or an episode shorter than the segment or without the arm joints.
    """
    from physai.interface import web_firmware, widget
    if not isinstance(spring, JointModel):
        raise TypeError(f'spring must be a physai.engine.servo_models.JointModel, got {type(spring).__name__}')
    load = checks.nonnegative('load', load, 'N*m')
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')
    if any(j not in episode.joints for j in ARM_JOINTS):
        raise ValueError(f'episode must hold the arm joints {", ".join(ARM_JOINTS)}, got {", ".join(episode.joints)}')
    segment = segment_of(episode)
    spec = settings_spec(segment, settings=settings)
    spec = dataclasses.replace(spec, words={**spec.words, **web_firmware.PAGE_WORDS})
    return widget.PanelWidget(spec, 'servo_firmware_panels.js',
                              constants=web_firmware.settings_constants(spring, segment, load), now={},
                              later={'runs': widget.whole_part(
                                  spec, lambda values: web_firmware.runs_part(spring, segment, load, values))})
