"""Chapter 5's laws: how hard a position-servo gripper squeezes, and when what it holds slips.

A position servo commanded past contact never reaches its target: the jaw stops on the object, the error
``e = q* - q`` stays, and the servo's torque rises as ``kp*e`` until the force limit clamps it::

    tau = clip(kp*(q* - q), -forcerange, forcerange)          N·m      (MuJoCo's <position> at standstill)

The jaw turns about the gripper joint, so the torque pushes the object with the normal force::

    F_n = tau / r                                              N        r: the jaw's lever, m

``r`` is the distance from the joint axis to the line along which the jaw pushes (the contact normal through the
contact point). The object, squeezed between the moving jaw and the fixed one, feels ``F_n`` on each face
(it is in equilibrium across the jaws). Each face holds with friction up to ``mu*F_n`` (Coulomb's cone,
MuJoCo's ``condim`` 3 and above, ``friction[0]``), so the largest load along the jaw faces the grasp holds is::

    F_hold = 2*mu*F_n                                          N

and a cube of mass ``m`` in gravity ``g`` carried by an arm accelerating upwards at ``a`` (against gravity; an arm
accelerating downwards has ``a < 0`` and lightens the load) slips when::

    m*(g + a) > 2*mu*F_n

Each formula is evaluated against ``mj_step`` on Menagerie's SO-101 with a cube between its jaws in
``tests/test_grip.py`` (``mj_contactForce`` gives ``F_n``).
"""

from __future__ import annotations

import numpy as np

from physai.laws import checks


GRAVITY = 9.81
"""m/s², MuJoCo's default ``<option gravity="0 0 -9.81">``."""

KG_CM = GRAVITY / 100
"""N·m per kg·cm, the unit servo makers rate stall torque in (1 kg·cm = 0.0981 N·m)."""


def clamped_torque(kp, error, forcerange):
    """The servo's torque at standstill: ``clip(kp*error, -forcerange, forcerange)``, N·m.

    Args:
      kp: the position gain, N·m/rad (MuJoCo's ``actuator_gainprm[0]``), > 0.
      error: ``q* - q``, rad, scalar or array.
      forcerange: the symmetric force limit, N·m (``actuator_forcerange``), > 0.
    """
    kp = checks.positive('kp', kp, 'N·m/rad')
    forcerange = checks.positive('forcerange', forcerange, 'N·m')
    error = checks.real_array('error', error, 'rad')
    return np.clip(kp * error, -forcerange, forcerange)


def saturation_error(kp, forcerange):
    """The position error, rad, at which ``kp*e`` reaches the force limit: ``forcerange/kp``. Past it, pressing
    the command further into the object adds no force."""
    return checks.positive('forcerange', forcerange, 'N·m') / checks.positive('kp', kp, 'N·m/rad')


def squeeze_force(torque, lever):
    """The jaw's normal force on the object, N: ``|torque| / lever``.

    Args:
      torque: the torque the servo applies about the gripper joint, N·m (scalar or array).
      lever: the distance from the joint axis to the jaw's line of push, m, > 0.
    """
    lever = checks.positive('lever', lever, 'm')
    return np.abs(checks.real_array('torque', torque, 'N·m')) / lever


def hold_load(normal_force, mu, *, faces: int = 2):
    """The largest load along the jaw faces the grasp holds, N: ``faces*mu*normal_force`` (Coulomb).

    Args:
      normal_force: the force each jaw presses with, N, >= 0.
      mu: the sliding friction coefficient of the contact (MuJoCo's ``geom_friction[0]``), >= 0.
      faces: how many faces hold the object with that normal force (2: squeezed between two jaws).
    """
    normal_force = checks.real_array('normal_force', normal_force, 'N')
    if np.any(normal_force < 0):
        raise ValueError(f'normal_force must be >= 0 N, got {normal_force!r}')
    mu = checks.nonnegative('mu', mu)
    faces = checks.whole('faces', faces, 1)
    return faces * mu * normal_force


def slip_margin(mass, normal_force, mu, *, acceleration=0.0, gravity=GRAVITY):
    """How many times over the grasp holds its load: ``2*mu*F_n / (m*(g + a))``; below 1 it slips.

    Args:
      mass: the object's mass, kg, > 0.
      normal_force: each jaw's normal force, N, >= 0.
      mu: the sliding friction coefficient, >= 0.
      acceleration: the arm's upward acceleration, m/s² (positive adds to the load), with ``g + a > 0``.
      gravity: m/s², > 0.
    """
    mass = checks.positive('mass', mass, 'kg')
    gravity = checks.positive('gravity', gravity, 'm/s²')
    acceleration = checks.finite('acceleration', acceleration, 'm/s²')
    if gravity + acceleration <= 0:
        raise ValueError(f'acceleration must be > -gravity = {-gravity:g} m/s² (a load along the jaws), '
                         f'got {acceleration!r}')
    return hold_load(normal_force, mu) / (mass * (gravity + acceleration))


def slip_acceleration(mass, normal_force, mu, *, gravity=GRAVITY):
    """The arm's upward acceleration, m/s², at which the object starts to slip: ``2*mu*F_n/m - g``
    (negative: it slips under gravity alone)."""
    mass = checks.positive('mass', mass, 'kg')
    return hold_load(normal_force, mu) / mass - checks.positive('gravity', gravity, 'm/s²')


def torque_limit_register(register, stall_torque):
    """The torque limit, N·m, a Feetech STS servo's ``Max_Torque_Limit`` (address 16) sets: ``register/1000`` of
    the stall torque (the register counts 0.1 % of the maximum torque, 0..1000, Feetech's STS memory table).

    Args:
      register: 0..1000 (LeRobot writes 500 to the SO-101's gripper).
      stall_torque: the servo's rated stall torque at its supply voltage, N·m, > 0.
    """
    register = checks.whole('register', register, 0, 1000)
    return register / 1000 * checks.positive('stall_torque', stall_torque, 'N·m')


def kg_cm(value):
    """kg·cm to N·m."""
    return checks.finite('value', value, 'kg·cm') * KG_CM
