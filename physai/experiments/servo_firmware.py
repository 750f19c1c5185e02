"""Chapter 6's ablation: chapter 4's fitted spring plus one firmware element at a time, scored leave-one-out.

The protocol is chapter 4's truth table's (:mod:`physai.experiments.servo_truth`): one replay (``ReplayConfig()``),
one metric (mean absolute error of the five arm joints over frames 1..n-1, degrees), and leave-one-out over the
recording's episodes. Each fold starts from the spring fitted on its training episodes
(``servo_truth.compare_structures``). An element's setting is then chosen on the same training episodes, from a
short grid of register values that includes "off" where the element can be off (the lowest training error wins; a
tie keeps the first, so "off" where it ties), and the fold's spring plus that element is scored on the episode held
out. Nothing of the held-out episode enters a choice.

An element *helps* when every fold's held-out error falls by more than ``TELL_DEG`` (half an encoder step, the
recording's resolution), *hurts* when every fold's rises by more than that, and otherwise these episodes *cannot tell*.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from physai.engine import firmware
from physai.engine.arm_replay import ReplayConfig
from physai.engine.datasets import LeRobotDataset
from physai.engine.firmware import FirmwareModel
from physai.engine.servo_models import SPRING, JointModel
from physai.engine.so101 import JOINTS
from physai.experiments import servo_sysid, servo_truth
from physai.experiments.registry import experiment
from physai.laws import sts3215
from physai.laws.servo_gain import TICKS_PER_TURN


TELL_DEG = 0.5 * 360.0 / TICKS_PER_TURN
"""deg: half an encoder step (0.044°). An element changes the held-out error by more than this on every fold, one way,
or the recording cannot tell it from the spring."""

DEAD_ZONES = (0, 1, 2, 4, 8)
"""Dead zone registers tried, steps (half-widths 0 to 0.70°)."""
BACKLASHES_DEG = (0.0, 0.5, 1.0, 2.0)
"""Total play tried, degrees (TheRobotStudio/SO-ARM100 #134: about 1°; matthieuvigne/STS_servos #5: at least 2°)."""
GOAL_SPEEDS = (0, 4000, 2000, 1000, 500)
"""``Goal_Speed`` tried, steps/s (0: no limit; 500 steps/s is 44°/s)."""
P_REGISTERS = (12, 16, 24, 32)
"""``P_Coefficient`` tried (LeRobot writes 16; the factory default is 32)."""
VOLTAGES = sts3215.SUPPLY_VOLTAGES
"""Supplies tried, V."""


@dataclasses.dataclass(frozen=True)
class Element:
    """One row of the ablation: a grid of settings and how each turns a fold's spring into a firmware model."""

    name: str
    setting: str
    """What the grid holds, with its unit."""
    grid: tuple
    build: Callable[[JointModel, object], FirmwareModel]
    off: bool
    """The grid's first setting is the spring itself (the element off)."""


def on_lag(spring: JointModel, kp: float, forcerange: float) -> JointModel:
    """``spring`` with kp and forcerange set, kv moved so that each joint keeps its lag (kv + damping)/kp."""
    lag = np.array([spring.joint(j).lag_ms for j in JOINTS]) / 1e3
    kv = np.maximum(lag * kp - np.array(spring.damping), 0.0)
    return spring.replace(kp=kp, forcerange=forcerange, kv=tuple(float(v) for v in kv))


ELEMENTS = (
    Element('dead band', 'dead zone register, steps', DEAD_ZONES,
            lambda s, n: FirmwareModel(servo=firmware.dead_band_model(s, sts3215.dead_band(n))), off=True),
    Element('backlash, servo read', 'play, deg', BACKLASHES_DEG,
            lambda s, b: FirmwareModel(servo=s, backlash=math.radians(b)), off=True),
    Element('backlash, link read', 'play, deg', BACKLASHES_DEG,
            lambda s, b: FirmwareModel(servo=s, backlash=math.radians(b), read='link'), off=True),
    Element('slew limit', 'Goal_Speed, steps/s', GOAL_SPEEDS,
            lambda s, g: FirmwareModel(servo=s, slewmax=sts3215.slewmax(g)), off=True),
    Element('P and supply voltage', '(P, V)', tuple((p, v) for v in VOLTAGES for p in P_REGISTERS),
            lambda s, pv: FirmwareModel(servo=on_lag(s, float(sts3215.register_kp(pv[0], pv[1])),
                                                      sts3215.forcerange(pv[1]))), off=False),
)
"""The elements, each added alone to the fold's spring."""


@dataclasses.dataclass(frozen=True)
class ElementFold:
    """One element on one fold: the setting chosen on the training episodes and the held-out score."""

    element: str
    heldout: int
    chosen: object
    train_deg: float
    """The training error at the chosen setting, degrees."""
    heldout_deg: float
    spring_deg: float
    """The fold's spring on the same held-out episode, degrees."""

    @property
    def change_deg(self) -> float:
        """Held-out error with the element minus without, degrees (negative: the element helps)."""
        return self.heldout_deg - self.spring_deg


def _mae(replays) -> float:
    return float(np.concatenate([r.error_deg for r in replays]).mean())


def ablation(dataset: LeRobotDataset, folds: Sequence[servo_truth.Fold], *,
             elements: Sequence[Element] = ELEMENTS, config: ReplayConfig = ReplayConfig()) -> list[ElementFold]:
    """Every element on every fold: its setting chosen on the fold's training episodes, scored on the one held out.

    All training runs go in one batch per model layout, then all held-out runs.

    Returns:
      One :class:`ElementFold` per element and fold, elements outer, in the order of ``elements`` and ``folds``.
    """
    folds = list(folds)
    if not folds:
        raise ValueError('folds must hold at least one servo_truth.Fold, got none')
    by_index = {e.index: e for e in dataset.episodes}
    spring = {f.heldout: f.models[SPRING.name] for f in folds}
    plan, models, episodes = [], [], []  # plan: (element, fold, setting, start, count)
    for el in elements:
        for f in folds:
            train = [by_index[i] for i in f.train]
            for g in el.grid:
                plan.append((el, f, g, len(models), len(train)))
                models += [el.build(spring[f.heldout], g)] * len(train)
                episodes += train
    runs = firmware.runs_of(models, episodes, config)
    chosen = {}
    for el, f, g, start, n in plan:
        err = _mae(runs[start:start + n])
        key = (el.name, f.heldout)
        if key not in chosen or err < chosen[key][1]:
            chosen[key] = (g, err)
    held_models, held_eps, keys = [], [], []
    for el in elements:
        for f in folds:
            held_models.append(el.build(spring[f.heldout], chosen[(el.name, f.heldout)][0]))
            held_eps.append(by_index[f.heldout])
            keys.append((el.name, f))
    held = firmware.runs_of(held_models, held_eps, config)
    return [ElementFold(element=name, heldout=f.heldout, chosen=chosen[(name, f.heldout)][0],
                        train_deg=chosen[(name, f.heldout)][1], heldout_deg=r.mae_deg,
                        spring_deg=f.heldout_mae[SPRING.name]) for (name, f), r in zip(keys, held)]


def verdict(changes: Sequence[float], tell: float = TELL_DEG) -> str:
    """'helps' if every fold's change is below -tell, 'hurts' if every one is above +tell, else 'cannot tell'."""
    changes = np.asarray(changes, dtype=float)
    if np.all(changes < -tell):
        return 'helps'
    if np.all(changes > tell):
        return 'hurts'
    return 'cannot tell'


def _shown(value) -> str:
    if isinstance(value, tuple):
        return '(' + ', '.join(f'{v:g}' for v in value) + ')'
    return f'{value:g}'


CHANGE_DIGITS = 2
"""Decimals of the printed changes, degrees."""


def _no_minus_zero(x: float, digits: int = CHANGE_DIGITS) -> float:
    """``x`` rounded to the digits the table prints, without a sign on zero (a change of -0.001 and one of +0.001
    both print +0.00, whatever the last bits)."""
    return round(float(x), digits) + 0.0



def ablation_rows(results: Sequence[ElementFold], folds: Sequence[servo_truth.Fold],
                  elements: Sequence[Element] = ELEMENTS) -> list[dict]:
    """The table: the spring's row, then one per element: held-out error over the folds (mean, min, max), the change
    against the spring (mean, min, max over the folds), the settings chosen, and the verdict."""
    spring = [f.heldout_mae[SPRING.name] for f in folds]
    rows = [dict(model='spring (chapter 4)', setting='-', chosen='-', loo_deg=float(np.mean(spring)),
                 loo_min=float(min(spring)), loo_max=float(max(spring)), change_deg=0.0, change_min=0.0,
                 change_max=0.0, verdict='-')]
    for el in elements:
        mine = [r for r in results if r.element == el.name]
        held = [r.heldout_deg for r in mine]
        change = [r.change_deg for r in mine]
        picks = sorted({r.chosen for r in mine}, key=el.grid.index)
        rows.append(dict(model=f'+ {el.name}', setting=el.setting, chosen=' '.join(_shown(p) for p in picks),
                         loo_deg=float(np.mean(held)), loo_min=float(min(held)), loo_max=float(max(held)),
                         change_deg=_no_minus_zero(np.mean(change)), change_min=_no_minus_zero(min(change)),
                         change_max=_no_minus_zero(max(change)), verdict=verdict(change)))
    return rows


ABLATION_COLUMNS = (('model', 's'), ('chosen', 's'), ('loo_deg', '.2f'), ('loo_min', '.2f'), ('loo_max', '.2f'),
                    ('change_deg', '+.2f'), ('change_min', '+.2f'), ('change_max', '+.2f'), ('verdict', 's'))


@experiment('firmware-ablation', summary='chapter 4\'s spring plus one STS3215 firmware element at a time, '
                                         'leave-one-out on the SO-101 recording', columns=ABLATION_COLUMNS)
def firmware_ablation() -> list[dict]:
    """Chapter 6's ablation table on its recording, the folds' springs fitted from chapter 4's start."""
    dataset = servo_sysid.load_book_dataset()
    folds = servo_truth.compare_structures(dataset, rivals=())
    rows = ablation_rows(ablation(dataset, folds), folds)
    return [{k: r[k] for k, *_ in ABLATION_COLUMNS} for r in rows]


# --------------------------------------------------------------------------------------------------
# The registers as numbers, and each element measured on mj_step
# --------------------------------------------------------------------------------------------------

def heaviest_load(dataset: LeRobotDataset) -> tuple[str, float]:
    """The arm joint and the torque (N·m) of the largest gravity load over every recorded pose of ``dataset``:
    ``arm_replay.holding_torque`` of each frame's ``observation.state``."""
    from physai.engine import arm_replay
    from physai.engine.so101 import ARM_JOINTS
    q = np.concatenate([arm_replay.to_radians(e.state, e.joints) for e in dataset.episodes])
    tau = np.abs(arm_replay.holding_torque(q)[:, :len(ARM_JOINTS)])
    j = int(np.argmax(tau.max(axis=0)))
    return ARM_JOINTS[j], float(tau[:, j].max())


def register_rows(load: float, *, p_registers: Sequence[int] = P_REGISTERS, voltages: Sequence[float] = VOLTAGES
                  ) -> list[dict]:
    """Per P register and supply: kp, forcerange, the error at full duty and the sag under ``load`` N·m (degrees,
    ``load/kp``, or NaN where the load exceeds forcerange: the servo cannot hold it), from :class:`sts3215.Settings`."""
    rows = []
    for v in voltages:
        for p in p_registers:
            s = sts3215.Settings(p_register=p, supply_voltage=v)
            rows.append(dict(p_register=p, supply_voltage=v, kp=s.kp, forcerange=s.forcerange,
                             saturation_deg=math.degrees(s.forcerange / s.kp),
                             sag_deg=math.degrees(load / s.kp) if load <= s.forcerange else math.nan))
    return rows


def _link(actuator: str = '') -> str:
    return ('<mujoco><compiler angle="radian"/><option timestep="0.002" gravity="0 0 0" integrator="implicitfast"/>'
            '<worldbody><body name="link"><joint name="j" type="hinge" axis="0 1 0" damping="2" armature="0.0375"/>'
            '<geom type="capsule" fromto="0 0 0 0.1 0 0" size="0.01" mass="0.2"/></body></worldbody>'
            f'{actuator}</mujoco>')


def element_rows(*, kp: float = 8.9, backlash_deg: float = 1.0, goal_speed: int = 1000, dead_zone: int = 4
                 ) -> list[dict]:
    """Each element built by :mod:`physai.engine.firmware` on one link, measured on ``mj_step`` against its setting.

    - backlash: the servo holds its hinge at 0 (kp 1000) while ±0.01 N·m pushes the link: the link's span, degrees;
    - slew limit: MuJoCo's ``pid`` actuator with ``slewmax`` from ``goal_speed``, at rest at 0 and then commanded to
      1 rad: its set point's rate, deg/s;
    - dead band: ``<position kp>`` with ``frictionloss = kp*delta`` from ``dead_zone``, stepped from 0.2 rad on either
      side: where it stops, degrees from the target, 2 s on (MuJoCo's friction is soft: it creeps on after).
    """
    import mujoco

    rows = []
    spec = mujoco.MjSpec.from_string(_link('<actuator><position joint="j" kp="1000" kv="10"/></actuator>'))
    firmware.add_play(spec, 'j', math.radians(backlash_deg))
    m = spec.compile()
    d = mujoco.MjData(m)
    ends = []
    for tau in (0.01, -0.01):
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[m.joint('j' + firmware.PLAY_SUFFIX).dofadr[0]] = tau
        for _ in range(1500):
            mujoco.mj_step(m, d)
        ends.append(float(d.qpos.sum()))
    rows.append(dict(element='backlash', setting=f'{backlash_deg:g}° of play', expected=backlash_deg,
                     measured=math.degrees(ends[0] - ends[1]), unit='deg'))
    spec = mujoco.MjSpec.from_string(_link())
    rate = sts3215.slewmax(goal_speed)
    firmware.add_pid_servo(spec, 'j', kp=kp, kv=0.5, slewmax=rate)
    m = spec.compile()
    d = mujoco.MjData(m)
    points = []
    for k in range(200):
        d.ctrl[0] = 0.0 if k < 5 else 1.0  # at rest at 0 (the set point's start after a reset), then a step
        mujoco.mj_step(m, d)
        points.append(float(d.act[0]))
    measured = (points[-1] - points[5]) / ((len(points) - 6) * m.opt.timestep)
    rows.append(dict(element='slew limit', setting=f'Goal_Speed {goal_speed} steps/s', expected=math.degrees(rate),
                     measured=math.degrees(measured), unit='deg/s'))
    delta = sts3215.dead_band(dead_zone)
    for start in (-0.2, 0.2):
        spec = mujoco.MjSpec.from_string(_link(f'<actuator><position joint="j" kp="{kp!r}" kv="0"/></actuator>'))
        spec.joint('j').frictionloss = sts3215.dead_band_friction(kp, delta)
        m = spec.compile()
        d = mujoco.MjData(m)
        d.qpos[0] = start
        for _ in range(1000):
            mujoco.mj_step(m, d)
        rows.append(dict(element='dead band', setting=f'dead zone {dead_zone} steps, from {start:+g} rad',
                         expected=math.degrees(delta), measured=math.degrees(float(d.qpos[0])), unit='deg'))
    return rows
