"""The STS3215's registers, one by one, as the numbers a MuJoCo model needs.

An SO-101 owner can change five things in the servo's firmware and cannot change two. For each, the law here turns
the register (or the property) into MuJoCo's number; :mod:`physai.engine.firmware` builds the element that carries
it, and ``tests/test_firmware.py`` checks each against ``mj_step``.

========================  ==============================  ======================================================
register / property       law                             MuJoCo element
========================  ==============================  ======================================================
``P_Coefficient`` P       ``kp = g*P*V*kt/R``             ``<position kp>`` (``actuator_gainprm[0]``)
supply voltage V          ``kp`` and ``forcerange`` ∝ V   ``kp`` and ``<position forcerange>``
``Torque_Limit`` L        ``forcerange = d_max*V*kt/R*L/1000``  ``actuator_forcerange``
``Goal_Speed`` s          ``slewmax = s*2*pi/4096`` rad/s the ``pid`` actuator's ``slewmax`` (0: none)
dead zone registers n     ``delta = n*2*pi/4096`` rad     ``dof_frictionloss += kp*delta`` (see below)
backlash (mechanical)     play ``b`` rad, total           a second hinge, ``range = ±b/2`` (two-hinge play)
loop rate (firmware)      not known                       none: MuJoCo's step closes the loop continuously
========================  ==============================  ======================================================

Where each rests:

- **P and V to kp, torque limit to forcerange**: the duty-gain law of :mod:`physai.laws.servo_gain` (Rhoban BAM's
  STS3215 identification, chapter 4), unchanged: kp = g*P*V*kt/R and forcerange = d_max*V*kt/R. Changing V here
  keeps BAM's kt and R, i.e. the same 7.4 V motor on another supply. That is an *assumption*: the 12 V STS3215 has a
  motor of its own (TheRobotStudio/SO-ARM100 issue #134 ran one), whose kt and R no public identification gives.
  ``Torque_Limit`` (address 48, LeRobot's Feetech tables) is read as thousandths of full duty (0..1000), as
  Feetech's memory table and LeRobot's ``Max_Torque_Limit`` writes use it; that it scales the duty ceiling linearly
  is *assumed*.
- **Goal speed to a slew limit**: ``Goal_Speed`` (address 46, LeRobot's ``Goal_Velocity``) is in encoder steps per
  second (Feetech's SCServo examples, ``SMS_STS/SyncWritePos.ino``; 3400 steps/s the top speed), 4096 a turn
  (LeRobot's Feetech tables, ``MODEL_RESOLUTION``); 0 means no limit below the top speed. The firmware's own speed
  profile (trapezoidal, with the ``Acceleration`` register, address 41) is not documented: the book *assumes* its
  effect on a 30 Hz stream of targets is a cap on how fast the set point moves, which is what MuJoCo's ``pid``
  actuator (new in MuJoCo 3.12.0, after the ``mujoco.pid`` plugin, ``plugin/actuator/pid.cc``) applies with
  ``slewmax``: the set point moves at most ``slewmax*dt`` a step. The acceleration limit (100 steps/s² a unit, the
  same examples; LeRobot's ``configure_motors`` writes 254) has no MuJoCo counterpart here and is left out.
- **Dead zone to friction**: ``CW_Dead_Zone`` and ``CCW_Dead_Zone`` (addresses 26 and 27, one byte each, in encoder
  steps; LeRobot's Feetech tables). A P loop that drives nothing while ``|e| < delta`` and ``kp*(|e| - delta)``
  beyond it applies ``kp*e - kp*delta*sign(e)``: while the joint moves towards its target, sign(e) = sign(qd) and
  that is exactly ``kp*e`` minus a Coulomb friction ``kp*delta``. MuJoCo's ``frictionloss`` of ``kp*delta`` so
  gives the same approach and the same end on an unloaded joint: it stops anywhere within ``delta`` of the target,
  short of it on the side it came from. No document gives the firmware's law inside the band: this shifted one is
  *assumed*. Past the target (overshoot) the two differ; the book *assumes* that rare at these gains. Under a steady
  load (gravity) they differ too: the dead band settles at ``delta`` beyond the sag ``load/kp`` from either side, the
  friction anywhere within ``delta`` of the sag. (lerobot issue #3400's direction-dependent settling at P = 16 is
  the friction's kind: the issue puts it down to static friction, not to these registers.) With ``cw != ccw`` the
  band is asymmetric; MuJoCo's friction is not, so the mean is used.
- **Backlash**: 1 to 2 degrees reported by owners (TheRobotStudio/SO-ARM100 issue #134: "~1°" of free play by hand,
  "≤ 0.5°" in the specification; matthieuvigne/STS_servos issue #5: "at least 2°, but I never measured it
  precisely"). MuJoCo has no backlash attribute; Menagerie's SO-101 ships a ``backlash`` default class (a limited
  hinge of ±0.0087267 rad, ±0.5°, damping 0.01, armature 0.01) and adds it to no joint ("not added to any joints for
  now", ``robotstudio_so101/so101.xml``). The two-hinge play model puts that hinge between the servo's output and
  the link.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from physai.laws import checks, servo_gain
from physai.laws.servo_gain import BAM_STS3215, TICKS_PER_TURN


FULL_TORQUE_LIMIT = 1000
"""``Torque_Limit`` at full duty (thousandths)."""

MAX_GOAL_SPEED = 32767
"""The largest ``Goal_Speed`` the two-byte register holds (its top bit is the direction), steps/s."""

MAX_DEAD_ZONE = 255
"""The largest dead zone register (one byte), steps."""

SUPPLY_VOLTAGES = (5.0, 7.4, 12.0)
"""V: the supplies SO-101 owners run their arms at (a USB-C 5 V supply, the 7.4 V STS3215, the 12 V one)."""

MENAGERIE_BACKLASH_DEG = 2 * math.degrees(0.0087267)
"""deg: the total play of Menagerie's unused ``backlash`` class, range ±0.0087267 rad (1.0°)."""
MENAGERIE_BACKLASH_DAMPING = 0.01
"""N·m·s/rad: the same class's joint damping."""
MENAGERIE_BACKLASH_ARMATURE = 0.01
"""kg·m²: the same class's joint armature."""


def step_rad(steps) -> float | np.ndarray:
    """Encoder steps (4096 a turn) to radians: ``steps*2*pi/4096``."""
    return checks.real_array('steps', steps) * (2 * math.pi / TICKS_PER_TURN) + 0.0


def electrics(supply_voltage: float = BAM_STS3215.supply_voltage) -> servo_gain.ServoElectrics:
    """BAM's STS3215 on another supply (its kt and R kept: an assumption, see the module's docstring).

    Raises:
      ValueError: ``supply_voltage`` not a number in (0, 14] V (the STS3215's operating range ends at 14 V,
        TheRobotStudio/SO-ARM100 issue #134's table).
    """
    v = checks.positive('supply_voltage', supply_voltage, 'V')
    if v > 14:
        raise ValueError(f'supply_voltage must be in (0, 14] V, got {supply_voltage!r}')
    return dataclasses.replace(BAM_STS3215, supply_voltage=v)


def register_kp(p_register, supply_voltage=7.4):
    """MuJoCo's kp for a P register and a supply voltage, N·m/rad; broadcasts over ``p_register``.

    The firmware drives the duty ``d = g*P*e`` (e the error, rad), which puts ``d*V`` volts on a motor of torque
    constant ``kt`` and resistance ``R`` (both at the output shaft). Standing still, that is a torque
    ``kt*d*V/R = kp*e`` with::

        kp = g * P * V * kt / R

    with BAM's STS3215: g = 0.166 duty per rad per unit of P, kt = 1.21164135295077 N·m/A and
    R = 2.6761663274455603 ohm (``physai.laws.servo_gain.BAM_STS3215``). At 7.4 V this is chapter 4's mapping
    (8.9 at P = 16).

    Args:
      p_register: the ``P_Coefficient`` register, a number >= 0 or an array of them.
      supply_voltage: V, in (0, 14].
    """
    return electrics(supply_voltage).kp(p_register)


def forcerange(supply_voltage: float = BAM_STS3215.supply_voltage, torque_limit: int = FULL_TORQUE_LIMIT) -> float:
    """The stall torque the firmware allows, ``d_max*V*kt/R*L/1000``, N·m (MuJoCo ``forcerange``).

    Raises:
      ValueError: ``torque_limit`` not a whole number in [1, 1000].
    """
    limit = checks.whole('torque_limit', torque_limit, 1, FULL_TORQUE_LIMIT, '(thousandths of full duty)')
    return electrics(supply_voltage).forcerange * limit / FULL_TORQUE_LIMIT


def slewmax(goal_speed: int) -> float:
    """The set point's largest rate, rad/s, for a ``Goal_Speed`` register (steps/s); ``math.inf`` for 0 (no limit).

    Raises:
      ValueError: ``goal_speed`` not a whole number in [0, 32767].
    """
    s = checks.whole('goal_speed', goal_speed, 0, MAX_GOAL_SPEED, 'steps/s')
    return math.inf if s == 0 else float(step_rad(s))


def dead_band(cw_dead_zone: int, ccw_dead_zone: int | None = None) -> float:
    """The dead band's half-width, rad: the mean of the two registers (steps), as MuJoCo's friction is symmetric.

    Raises:
      ValueError: a register not a whole number in [0, 255].
    """
    cw = checks.whole('cw_dead_zone', cw_dead_zone, 0, MAX_DEAD_ZONE, 'steps')
    ccw = cw if ccw_dead_zone is None else checks.whole('ccw_dead_zone', ccw_dead_zone, 0, MAX_DEAD_ZONE, 'steps')
    return float(step_rad((cw + ccw) / 2))


def dead_band_friction(kp_value: float, dead_band_rad: float) -> float:
    """The Coulomb friction that stops a P loop of gain ``kp`` where a dead band of half-width ``delta`` would:
    ``kp*delta``, N·m (MuJoCo ``frictionloss``, added to the joint's own)."""
    return checks.nonnegative('kp', kp_value, 'N*m/rad') * checks.nonnegative('dead_band', dead_band_rad, 'rad')


def slew_limited(ctrl: np.ndarray, rate: float, dt: float, previous=None) -> np.ndarray:
    """The set point MuJoCo's ``pid`` actuator holds with ``slewmax = rate``: each step's command clipped to within
    ``rate*dt`` of the previous step's set point.

    ``previous`` is the set point before the first step: the actuator's activation (``mjData.act``, 0 after a
    reset). None takes the first command as it is (a set point that starts at the first command).

    Args:
      ctrl: (nstep,) or (nstep, nu) commands, rad.
      rate: rad/s, > 0 (``math.inf``: no limit).
      dt: the physics step, s.
      previous: (nu,) the set point before the first step, or None.

    Returns:
      The set points, the shape of ``ctrl``.
    """
    u = checks.real_array('ctrl', ctrl, 'rad')
    r = checks.positive('rate', rate, 'rad/s') if rate != math.inf else math.inf
    h = checks.positive('dt', dt, 's')
    out = np.array(u, dtype=float, copy=True)
    if r == math.inf or len(out) == 0:
        return out
    step = r * h
    last = None if previous is None else np.asarray(previous, dtype=float)
    for k in range(len(out)):
        if last is not None:
            out[k] = np.clip(out[k], last - step, last + step)
        last = out[k]
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """An STS3215 as its owner set it: the registers and the supply (LeRobot's SO-101 follower by default)."""

    p_register: int = servo_gain.LEROBOT_SO101_P
    """``P_Coefficient`` (address 21), 0..255; LeRobot writes 16 (``position_p_coefficient``, pull request #4142)."""
    supply_voltage: float = BAM_STS3215.supply_voltage
    """V, in (0, 14]."""
    torque_limit: int = FULL_TORQUE_LIMIT
    """``Torque_Limit`` (address 48), thousandths of full duty, 1..1000."""
    goal_speed: int = 0
    """``Goal_Speed`` (address 46), steps/s; 0: no limit (LeRobot's follower does not write it)."""
    dead_zone: int = 0
    """``CW_Dead_Zone`` = ``CCW_Dead_Zone`` (addresses 26, 27), steps, 0..255."""
    backlash_deg: float = 0.0
    """Total mechanical play at the output, degrees, in [0, 10] (not a register)."""

    def __post_init__(self):
        checks.whole('p_register', self.p_register, 0, 255, '(the P_Coefficient register)')
        electrics(self.supply_voltage)
        forcerange(self.supply_voltage, self.torque_limit)
        slewmax(self.goal_speed)
        dead_band(self.dead_zone)
        b = checks.nonnegative('backlash_deg', self.backlash_deg, 'deg')
        if b > 10:
            raise ValueError(f'backlash_deg must be in [0, 10] deg, got {self.backlash_deg!r}')

    @property
    def kp(self) -> float:
        """N·m/rad, :func:`register_kp`."""
        return float(register_kp(self.p_register, self.supply_voltage))

    @property
    def forcerange(self) -> float:
        """N·m, :func:`forcerange`."""
        return forcerange(self.supply_voltage, self.torque_limit)

    @property
    def slewmax(self) -> float:
        """rad/s, :func:`slewmax` (``math.inf``: none)."""
        return slewmax(self.goal_speed)

    @property
    def dead_band(self) -> float:
        """rad, the half-width, :func:`dead_band`."""
        return dead_band(self.dead_zone)

    @property
    def backlash(self) -> float:
        """rad, the total play."""
        return math.radians(self.backlash_deg)
