"""From the STS3215's P register to MuJoCo's ``kp``, and back.

The servo's firmware closes a proportional loop on the position error. With the error ``e = q* - q`` (rad), the
integer ``P`` in its ``P_Coefficient`` register and a *duty gain* ``g`` (duty per rad of error per unit of P), it
drives the motor's H-bridge at the duty cycle ``d = clip(g*P*e, -d_max, d_max)``, which puts ``d*V`` volts on the
motor (``V`` the supply voltage). A DC motor with torque constant ``kt`` and winding resistance ``R``, both seen at
the output shaft (gearbox included), with its inductance neglected (the electrical time constant L/R is far
shorter than the arm's motion), turns that voltage into the torque::

    tau = kt*(d*V - kt*qd)/R = (g*P*V*kt/R)*(q* - q) - (kt**2/R)*qd        while |g*P*e| < d_max

which is MuJoCo's ``<position>`` law ``tau = kp*(q* - q) - kv*qd`` (``actuator_gainprm[0]`` = kp =
``-actuator_biasprm[1]``, ``-actuator_biasprm[2]`` = kv) with::

    kp = g*P*V*kt/R          N·m/rad      and back:  P = kp*R/(g*V*kt)
    kv = kt**2/R             N·m·s/rad    back-EMF damping (BAM folds it into the joint's ``damping``)
    forcerange = d_max*V*kt/R   N·m       the torque at full duty, standing still

Symbols, units and where each number comes from:

- ``g``, duty gain, 1/(rad·P). Rhoban's BAM ("Better Actuator Models", github.com/Rhoban/bam,
  ``bam/feetech/actuator.py``, class ``STS3215Actuator``) measured ``error_gain = 0.166`` with an oscilloscope on
  STS3215s at 7.4 V, with ``max_pwm = 0.97`` (the largest duty). K-Scale Labs measured 0.1649 on the 12 V STS3215 at
  P = 32 (github.com/kscalelabs/sysid, ``data/feetech/STS_3215_12V/README.md``). The STS3215 counts 4096 ticks per
  turn (LeRobot's Feetech tables, ``MODEL_RESOLUTION``), so 0.166 per rad is 0.166*2*pi/4096 = 2.5e-4 of full duty
  per tick of error per unit of P.
- ``P``, the ``P_Coefficient`` register, one byte at address 21 (LeRobot's Feetech tables). LeRobot's SO-101
  follower writes 16 when it connects, with D 32 and I 0 ("Set P_Coefficient to lower value to avoid shakiness
  (Default is 32)", ``src/lerobot/robots/so101_follower/so101_follower.py``, ``configure``, LeRobot v0.4.2; later
  releases moved it to ``robots/so_follower/so_follower.py``, the 16 now the default of ``position_p_coefficient``).
- ``V``, supply voltage, V: 7.4 V for the STS3215 BAM identified; a 12 V version exists too (the static load test of
  TheRobotStudio/SO-ARM100 issue #134 ran one), with its own motor and so its own kt and R.
- ``kt``, N·m/A (= V·s/rad in SI), and ``R``, ohm: BAM's identification of the 7.4 V STS3215
  (``bam/params/feetech_sts3215_7_4V/m1.json``): kt = 1.2116, R = 2.6762.

:data:`BAM_STS3215` holds those numbers. At P = 32 it gives kp = 17.8 N·m/rad, the ``kp="17.8"`` of Open Duck
Mini's first STS3215 class (github.com/apirrone/Open_Duck_Playground, ``open_duck_mini_v2.xml``, March 2025); BAM's
own export (``bam/to_mujoco.py``) also multiplies kp by ``max_pwm`` and prints 17.3.

**Menagerie's reading.** MuJoCo Menagerie's ``so101.xml`` says its gains were "calculated according to"
github.com/Gregory119/RBE501-RL-arm-project (``gymnasium_env/README.md``, ``calc_actuator_model.py``), "assuming
that the servo proportional gain is set to 16". That derivation takes the P register as *volts per degree* of
error, ``V_motor = P * e * 180/pi``, with no supply voltage and no duty: in the law above, ``g*V = 180/pi`` volts per
rad per unit of P. It takes ``Km = tau_stall/i_stall`` = 2.94 N·m / 2.7 A (the 12 V ST-3215-C047's datasheet stall
figures), assumes ``R = 1`` ohm, and gets its damping from a back-EMF constant fitted to the no-load point,
``Kb = (V_rated - R*i_noload)/omega_noload`` = (12 - 0.18)/(45 rpm), not from ``Km``::

    kp = Km*P*(180/pi)/R = 998.22 at P = 16,   kv = Km*Kb/R = 2.731,   forcerange = tau_stall = 2.94

(:func:`menagerie_gains`). Against BAM's measured ``g*V`` (0.166*7.4 = 1.23 V per rad per P) the volts-per-degree
reading is 47 times steeper, and its R is 2.7 times smaller than BAM's: together the 998 against BAM's 8.9 at the
same P = 16.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from physai.laws import checks


TICKS_PER_TURN = 4096
"""The STS3215's position resolution (LeRobot's Feetech tables, ``MODEL_RESOLUTION['sts3215']``)."""

LEROBOT_SO101_P = 16
"""The ``P_Coefficient`` LeRobot's SO-101 follower writes at start-up (the default is 32, LeRobot's comment says)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServoElectrics:
    """A position servo's firmware P loop and DC motor, as seen from the output shaft."""

    duty_gain: float
    """g: duty cycle per rad of position error per unit of the P register, 1/(rad·P) (BAM: 0.166)."""
    supply_voltage: float
    """V: the voltage the H-bridge switches, V (BAM: 7.4)."""
    torque_constant: float
    """kt: output torque per amp, N·m/A, equal to the back-EMF constant in V·s/rad (BAM: 1.2116)."""
    resistance: float
    """R: winding resistance, ohm (BAM: 2.6762)."""
    max_duty: float = 1.0
    """d_max: the largest duty the firmware applies, in (0, 1] (BAM: 0.97)."""

    def __post_init__(self):
        checks.positive('duty_gain', self.duty_gain, '1/(rad*P)')
        checks.positive('supply_voltage', self.supply_voltage, 'V')
        checks.positive('torque_constant', self.torque_constant, 'N*m/A')
        checks.positive('resistance', self.resistance, 'ohm')
        if not (checks.is_real(self.max_duty) and 0 < self.max_duty <= 1):
            raise ValueError(f'max_duty must be in (0, 1], got {self.max_duty!r}')

    @property
    def kp_per_p(self) -> float:
        """``g*V*kt/R``: N·m/rad of MuJoCo kp per unit of the P register."""
        return self.duty_gain * self.supply_voltage * self.torque_constant / self.resistance

    def kp(self, p_register):
        """MuJoCo's kp (N·m/rad) for a P register value: ``kp = g*P*V*kt/R``; broadcasts over arrays."""
        return self.kp_per_p * _register(p_register)

    def p_register(self, kp):
        """The P register (a real number: round it to write it) that gives MuJoCo kp: ``P = kp*R/(g*V*kt)``."""
        kp = checks.real_array('kp', kp, 'N*m/rad')
        if not np.all(np.isfinite(kp) & (kp >= 0)):
            raise ValueError(f'kp must be finite and >= 0 N*m/rad, got {kp!r}')
        return kp / self.kp_per_p

    @property
    def kv(self) -> float:
        """Back-EMF damping ``kt**2/R``, N·m·s/rad (MuJoCo kv, or the joint's ``damping``)."""
        return self.torque_constant ** 2 / self.resistance

    @property
    def forcerange(self) -> float:
        """The torque at full duty standing still, ``d_max*V*kt/R``, N·m (MuJoCo ``forcerange``)."""
        return self.max_duty * self.supply_voltage * self.torque_constant / self.resistance

    def saturation_error(self, p_register) -> float:
        """The position error (rad) at which the duty reaches d_max: ``d_max/(g*P)``; beyond it kp no longer holds.

        Raises:
          ValueError: ``p_register`` not a finite number > 0 (at P = 0 the firmware drives nothing, at any error).
        """
        p = _register(p_register)
        if not np.all(np.asarray(p) > 0):
            raise ValueError(f'p_register must be > 0 (at P = 0 the firmware drives nothing, at any error), got '
                             f'{p_register!r}')
        return self.max_duty / (self.duty_gain * p)


BAM_STS3215 = ServoElectrics(duty_gain=0.166, supply_voltage=7.4, torque_constant=1.21164135295077,
                             resistance=2.6761663274455603, max_duty=0.97)
"""Rhoban BAM's 7.4 V STS3215: its measured duty gain and max duty (``bam/feetech/actuator.py``) and its identified
kt and R (``bam/params/feetech_sts3215_7_4V/m1.json``)."""


# ------------------------------------------------------------------------------------------------
# Menagerie's reading (Gregory119/RBE501-RL-arm-project, gymnasium_env/README.md and calc_actuator_model.py)

MENAGERIE_STALL_TORQUE = 30 * 9.8 / 100
"""tau_stall, N·m: 30 kg·cm (the 12 V ST-3215-C047's stall torque) as ``calc_actuator_model.py`` converts it."""
MENAGERIE_STALL_CURRENT = 2.7
"""i_stall, A (same datasheet)."""
MENAGERIE_RESISTANCE = 1.0
"""R, ohm, assumed in ``calc_actuator_model.py``."""
MENAGERIE_RATED_VOLTAGE = 12.0
"""V_rated, V."""
MENAGERIE_NO_LOAD_CURRENT = 0.18
"""i_noload, A."""
MENAGERIE_NO_LOAD_SPEED = 45 * 2 * math.pi / 60
"""omega_noload, rad/s (45 rpm)."""


def menagerie_gains(p_register=16) -> dict[str, float]:
    """MuJoCo Menagerie's SO-101 ``<position>`` gains for a P register, by the derivation its ``so101.xml`` cites.

    The P register is read as volts per degree of error (``V = P*e*180/pi``), so::

        Km = tau_stall/i_stall,  Kb = (V_rated - R*i_noload)/omega_noload
        kp = Km*P*(180/pi)/R,    kv = Km*Kb/R,    forcerange = tau_stall

    At P = 16 this is Menagerie's ``kp="998.22" kv="2.731" forcerange="-2.94 2.94"``.

    Returns:
      ``{'kp': N·m/rad, 'kv': N·m·s/rad, 'forcerange': N·m}``.

    Raises:
      ValueError: ``p_register`` not one finite number >= 0.
    """
    p = checks.nonnegative('p_register', p_register, '(the P_Coefficient register)')
    km = MENAGERIE_STALL_TORQUE / MENAGERIE_STALL_CURRENT
    kb = (MENAGERIE_RATED_VOLTAGE - MENAGERIE_RESISTANCE * MENAGERIE_NO_LOAD_CURRENT) / MENAGERIE_NO_LOAD_SPEED
    return {'kp': float(km * p * np.rad2deg(1.0) / MENAGERIE_RESISTANCE),
            'kv': float(km * kb / MENAGERIE_RESISTANCE),
            'forcerange': float(MENAGERIE_STALL_TORQUE)}


def menagerie_p_register(kp) -> float:
    """The P register Menagerie's reading assigns to a kp: ``P = kp*R/(Km*180/pi)`` (998.22 gives 16)."""
    kp = checks.nonnegative('kp', kp, 'N*m/rad')
    km = MENAGERIE_STALL_TORQUE / MENAGERIE_STALL_CURRENT
    return kp * MENAGERIE_RESISTANCE / (km * np.rad2deg(1.0))


def _register(p_register):
    p = checks.real_array('p_register', p_register)
    if not np.all(np.isfinite(p) & (p >= 0)):
        raise ValueError(f'p_register must be finite and >= 0 (the P_Coefficient register), got {p_register!r}')
    return p if p.ndim else float(p)
