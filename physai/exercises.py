"""Worked answers of chapter 1's exercises, each also a ``python -m physai`` table.

- ``motor-hold``: replace the link's ``<position>`` by a ``<motor>``; which ``ctrl`` holds it horizontal?
- ``gear-sag``: the same ``<position kp=100>`` servo with ``gear`` 1 and 2; what happens to the sag?

(The third exercise, the smallest armature Euler survives with kv = 0, is ``armature-limit`` in
:mod:`physai.stability`.) Each answer is computed with MuJoCo on the book's link (:data:`physai.servo.LINK_XML`).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from physai import checks, perturb
from physai.registry import experiment
from physai.servo import LINK_XML, SETTLE_WINDOW, TAU_G, diverged
from physai.sim import servo_sag

_POSITION_LINE = '<position name="servo" joint="hinge" kp="1" kv="0"/>'


def link_with_actuator(actuator: str, *, armature: float = 0.028, timestep: float = 0.005,
                       integrator: str = 'implicitfast') -> mujoco.MjModel:
    """The book's link with its actuator element replaced by ``actuator`` (an MJCF string on joint ``hinge``)."""
    if _POSITION_LINE not in LINK_XML:
        raise RuntimeError('physai.servo.LINK_XML no longer has the expected actuator line')
    xml = (LINK_XML.replace(_POSITION_LINE, actuator)
           .replace('armature="0.028"', f'armature="{armature}"')
           .replace('timestep="0.005"', f'timestep="{timestep}"')
           .replace('integrator="implicitfast"', f'integrator="{integrator}"'))
    return mujoco.MjModel.from_xml_string(xml)


def _simulate(m: mujoco.MjModel, *, q0: float, ctrl: float, duration: float) -> tuple[np.ndarray, bool]:
    """q after each step, (nstep + 1,), from rest at q0 with a constant ctrl, and whether the run diverged
    (:func:`physai.servo.diverged`; MuJoCo resets a run whose acceleration blows up, so read its warning)."""
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    perturb.nudge(d.qpos)
    d.ctrl[0] = ctrl
    mujoco.mj_forward(m, d)
    nstep = round(duration / m.opt.timestep)
    q = np.empty(nstep + 1)
    q[0] = q0
    for k in range(1, nstep + 1):
        mujoco.mj_step(m, d)
        q[k] = d.qpos[0]
    return q, diverged(q, d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0)


def motor_hold(gear: float = 1.0, *, duration: float = 1.0) -> list[dict]:
    """The constant ``<motor>`` control that holds the link horizontal, checked by a run.

    At q = 0 and rest the motor must cancel gravity: ``gear * ctrl = tau_g``, read from MuJoCo as
    ``qfrc_bias`` (the gravity torque, N·m). The run starts at q = 0 with that ctrl; ``drift_deg`` is
    how far it has moved after ``duration`` seconds (only rounding: the balance is exact but not
    restoring, since a motor has no stiffness).

    Returns:
      Rows ``quantity``, ``value``.
    """
    m = link_with_actuator(f'<motor name="servo" joint="hinge" gear="{gear}"/>')
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    ctrl = float(d.qfrc_bias[0] / gear)
    q, _ = _simulate(m, q0=0.0, ctrl=ctrl, duration=duration)
    q_low, _ = _simulate(m, q0=0.0, ctrl=0.99 * ctrl, duration=duration)
    return [
        {'quantity': 'ctrl that holds q = 0 (N m)', 'value': ctrl},
        {'quantity': 'tau_g = m g L/2 (N m)', 'value': TAU_G},
        {'quantity': f'drift after {duration:g} s with that ctrl (deg)',
         'value': math.degrees(abs(q[-1]))},
        {'quantity': f'drop after {duration:g} s with 1 % less ctrl (deg)',
         'value': math.degrees(-q_low[-1])},
    ]


MIN_GEAR, MAX_GEAR = 1e-3, 1e4
"""The gear ratios :func:`gear_sag` takes (a real gearbox lies well inside)."""


def gear_sag(kp: float = 100.0, gears=(1.0, 2.0), *, duration: float = 3.0) -> list[dict]:
    """Sag of the ``<position kp dampratio=1>`` servo for several gears, MuJoCo vs the formula.

    With gear g the actuator length is ``g*q`` and the joint torque ``g*force``, so the joint feels the
    stiffness ``g²·kp``: the sag is ``servo_sag(g²·kp, tau_g)``. The command u now means ``q = u/g``.

    Returns:
      Rows ``gear``, ``joint_stiffness`` (g²·kp, N·m/rad), ``sag_deg`` (MuJoCo, mean error over the
      last 0.5 s; NaN when the run diverged), ``servo_sag_deg`` (formula), ``mujoco`` ('stable' or
      'diverged', :func:`physai.servo.diverged`), ``sag_ratio`` (gear 1's sag over this one's).
    """
    checks.positive('kp', kp, 'N·m/rad')
    gears = tuple(gears) if isinstance(gears, (list, tuple)) else gears
    if not (isinstance(gears, tuple) and gears
            and all(checks.is_real(g) and MIN_GEAR <= g <= MAX_GEAR for g in gears)):
        raise ValueError(f'gears must be one or more gear ratios in [{MIN_GEAR:g}, {MAX_GEAR:g}], got {gears!r}')
    if not (checks.is_real(duration) and SETTLE_WINDOW < duration <= 60):
        raise ValueError(f'duration must be in ({SETTLE_WINDOW}, 60] s, got {duration!r}')
    rows = []
    for gear in gears:
        m = link_with_actuator(
            f'<position name="servo" joint="hinge" kp="{kp}" dampratio="1" gear="{gear}"/>')
        q, bad = _simulate(m, q0=-0.5, ctrl=0.0, duration=duration)
        t = m.opt.timestep * np.arange(len(q))
        sag = math.nan if bad else -math.degrees(float(np.mean(q[t >= t[-1] - SETTLE_WINDOW + 1e-12])))
        rows.append({'gear': float(gear), 'joint_stiffness': gear**2 * kp, 'sag_deg': sag,
                     'servo_sag_deg': math.degrees(servo_sag(gear**2 * kp, TAU_G)),
                     'mujoco': 'diverged' if bad else 'stable'})
    for row in rows:
        row['sag_ratio'] = rows[0]['sag_deg'] / row['sag_deg']  # NaN where either run diverged
    return rows


@experiment('motor-hold', summary='exercise: the <motor> ctrl that holds the link horizontal',
            columns=(('quantity', 's'), ('value', '.6f')))
def motor_hold_table() -> list[dict]:
    return motor_hold()


@experiment('gear-sag', summary='exercise: <position kp=100> with gear 1 and 2, the sag',
            columns=(('gear', '.0f'), ('joint_stiffness', '.1f'), ('sag_deg', '.5f'),
                     ('servo_sag_deg', '.5f'), ('mujoco', 's'), ('sag_ratio', '.4f')))
def gear_sag_table() -> list[dict]:
    return gear_sag()
