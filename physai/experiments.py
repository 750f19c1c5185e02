"""Chapter 1's experiments: each is a table in the book and a ``python -m physai NAME`` command."""

from __future__ import annotations

import math

import mujoco
import numpy as np

from physai import robust, servo, so101
from physai.registry import experiment
from physai.servo import LINK_INERTIA, TAU_G, ServoParams
from physai.sim import actuator_force, kv_from_dampratio, servo_loop, servo_sag
from physai.stability import integrator_growth

KP_SWEEP = (1, 3, 10, 30, 100, 300, 1000)

# Menagerie's SO-101 servo (class sts3215 in so101.xml)
SO101_KP = so101.MENAGERIE_KP
SO101_KV = so101.MENAGERIE_KV
SO101_DAMPING = so101.MENAGERIE_DAMPING
SO101_FRICTIONLOSS = so101.MENAGERIE_FRICTIONLOSS
SO101_FORCERANGE = (-so101.MENAGERIE_FORCERANGE, so101.MENAGERIE_FORCERANGE)
SO101_ARMATURE = so101.MENAGERIE_ARMATURE
ARMATURE_SWEEP = (SO101_ARMATURE, 0.010, 0.005, 0.002, 0.001, 0.0)
GROWTH_ARMATURES = (SO101_ARMATURE, 0.010, 0.005, 0.002, 0.0)
KP_LIMIT = (SO101_KP, 3000, 10000, 30000)
CHATTER_ENSEMBLE = 256
"""Runs per armature behind the clamped-Euler column of ``armature-sweep``: whether friction catches a chattering
run is decided by the last bits of its arithmetic, so the column reports what an ensemble does."""
CHATTER_SPREAD = 1e-9
"""rad: run k of the ensemble starts ``k*CHATTER_SPREAD`` away from the others."""
CHATTER_P2P_DEG = 1e-6
"""deg: a clamped run moving more than this over the settle window still chatters; less, friction caught it."""

ACTUATOR_LAWS_XML = """
<mujoco model="actuator-laws">
  <worldbody>
    <body name="a"><joint name="motor_joint" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/></body>
    <body name="b" pos="1 0 0"><joint name="position_joint" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/></body>
    <body name="c" pos="2 0 0"><joint name="velocity_joint" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="1"/></body>
  </worldbody>
  <actuator>
    <motor name="motor" joint="motor_joint" gear="3"/>
    <position name="position" joint="position_joint" kp="40" kv="2" forcerange="-5 5"/>
    <velocity name="velocity" joint="velocity_joint" kv="0.7"/>
  </actuator>
</mujoco>
"""


def so101_servo(armature: float = SO101_ARMATURE, *, kp: float = SO101_KP,
                integrator: str = 'implicitfast', frictionloss: float = SO101_FRICTIONLOSS,
                forcerange: tuple[float, float] | None = None) -> ServoParams:
    """Menagerie's SO-101 servo gains on the book's link (dt 5 ms)."""
    return ServoParams(kp=kp, kv=SO101_KV, armature=armature, damping=SO101_DAMPING,
                       frictionloss=frictionloss, integrator=integrator, forcerange=forcerange)


def _verdict(response: servo.StepResponse) -> str:
    return 'diverged' if response.diverged else 'stable'


@experiment('actuator-laws', summary='one affine force law for motor, position and velocity vs qfrc_actuator',
            columns=(('actuator', 's'), ('gainprm0', '.3f'), ('biasprm', '.3f'), ('max_error', '.1e')))
def actuator_laws(n: int = 100, seed: int = 0) -> list[dict]:
    m = mujoco.MjModel.from_xml_string(ACTUATOR_LAWS_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(seed)
    errors = np.zeros(m.nu)
    for _ in range(n):
        d.qpos[:] = rng.uniform(-3, 3, m.nq)
        d.qvel[:] = rng.uniform(-10, 10, m.nv)
        d.ctrl[:] = rng.uniform(-3, 3, m.nu)
        mujoco.mj_forward(m, d)
        for i in range(m.nu):
            dof = m.jnt_dofadr[m.actuator_trnid[i, 0]]
            gear = m.actuator_gear[i, 0]
            forcerange = m.actuator_forcerange[i] if m.actuator_forcelimited[i] else None
            force = actuator_force(d.ctrl[i], gear * d.qpos[dof], gear * d.qvel[dof],
                                   m.actuator_gainprm[i], m.actuator_biasprm[i], forcerange)
            errors[i] = max(errors[i], abs(gear * force - d.qfrc_actuator[dof]))
    return [{'actuator': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i),
             'gainprm0': float(m.actuator_gainprm[i, 0]),
             'biasprm': [float(x) for x in m.actuator_biasprm[i, :3]],
             'max_error': robust.roundoff(errors[i])} for i in range(m.nu)]


@experiment('link', summary="the link's inertia, gravity torque and kv from dampratio vs MuJoCo",
            columns=(('quantity', 's'), ('ours', '.9f'), ('mujoco', '.9f')))
def link(q: float = 0.3) -> list[dict]:
    m = servo.link_model(ServoParams(kp=1.0))
    d = mujoco.MjData(m)
    d.qpos[0] = q
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    rows = [
        {'quantity': 'inertia about hinge (kg m^2)', 'ours': LINK_INERTIA,
         'mujoco': float(full[0, 0] - m.dof_armature[0])},
        {'quantity': f'gravity torque at q={q} (N m)', 'ours': -TAU_G * math.cos(q),
         'mujoco': float(-d.qfrc_bias[0])},
    ]
    for kp in (1, 10, 100, 1000):
        xml = servo.LINK_XML.replace('kp="1" kv="0"', f'kp="{kp}" dampratio="1"')
        compiled = mujoco.MjModel.from_xml_string(xml)
        rows.append({'quantity': f'kv for kp={kp}, dampratio=1 (N m s/rad)',
                     'ours': float(kv_from_dampratio(kp, 1.0, LINK_INERTIA + compiled.dof_armature[0])),
                     'mujoco': float(-compiled.actuator_biasprm[0, 2])})
    return rows


@experiment('servo-loop', summary='our semi-implicit Euler servo loop vs mj_step (implicitfast)',
            columns=(('kp', '.0f'), ('max_abs_diff_rad', '.1e'), ('sag_deg', '.4f'),
                     ('servo_sag_deg', '.4f'), ('rise_ms', '.2f')))
def servo_loop_check() -> list[dict]:
    params = [ServoParams(kp=kp) for kp in KP_SWEEP]
    responses = servo.step_responses(params)
    rows = []
    for p, r in zip(params, responses):
        ours = servo_loop(p.kp, p.kv_effective, p.inertia, TAU_G, p.timestep, len(r.q) - 1,
                          q0=float(r.q[0]), damping=p.damping)
        rows.append({'kp': p.kp, 'max_abs_diff_rad': robust.roundoff(np.max(np.abs(ours - r.q))),
                     'sag_deg': r.sag_deg, 'servo_sag_deg': math.degrees(servo_sag(p.kp, TAU_G)),
                     'rise_ms': r.rise_ms})
    return rows


def growth_pair(params: ServoParams) -> tuple[float, float]:
    """Growth per step of the linearized servo under Euler and under implicitfast.

    ω² = kp/I, c = (kv + damping)/I. Euler treats only the joint damping implicitly, implicitfast
    treats kv and the damping implicitly.
    """
    inertia = params.inertia
    w2, c = params.kp / inertia, (params.kv_effective + params.damping) / inertia
    return tuple(integrator_growth(integrator, params.timestep, w2, c, c_joint=params.damping / inertia)
                 for integrator in ('Euler', 'implicitfast'))


@experiment('growth', summary='growth per step predicts which SO-101 servo settings MuJoCo diverges on',
            columns=(('kp', '.2f'), ('armature', '.3f'), ('h_omega', '.3f'), ('euler_growth', '.4f'),
                     ('implicitfast_growth', '.4f'), ('mujoco_euler', 's'),
                     ('mujoco_implicitfast', 's')))
def growth() -> list[dict]:
    cases = [(SO101_KP, a) for a in GROWTH_ARMATURES] + [(kp, SO101_ARMATURE) for kp in KP_LIMIT[1:]]
    params = [so101_servo(a, kp=kp, integrator=i, frictionloss=0.0)
              for kp, a in cases for i in ('Euler', 'implicitfast')]
    responses = servo.step_responses(params)
    rows = []
    for k, (kp, a) in enumerate(cases):
        euler, implicitfast = growth_pair(params[2 * k])
        rows.append({'kp': kp, 'armature': a, 'h_omega': params[2 * k].h_omega,
                     'euler_growth': euler, 'implicitfast_growth': implicitfast,
                     'mujoco_euler': _verdict(responses[2 * k]),
                     'mujoco_implicitfast': _verdict(responses[2 * k + 1])})
    return rows


@experiment('kp-sweep', summary='sag and rise time against kp at dampratio 1',
            columns=(('kp', '.0f'), ('kv', '.4f'), ('sag_deg', '.4f'), ('sag_linear_deg', '.4f'),
                     ('sag_exact_deg', '.4f'), ('rise_ms', '.2f')))
def kp_sweep() -> list[dict]:
    params = [ServoParams(kp=kp, dampratio=1.0) for kp in KP_SWEEP]
    return [{'kp': p.kp, 'kv': p.kv_effective, 'sag_deg': r.sag_deg,
             'sag_linear_deg': math.degrees(TAU_G / p.kp),
             'sag_exact_deg': math.degrees(servo_sag(p.kp, TAU_G)), 'rise_ms': r.rise_ms}
            for p, r in zip(params, servo.step_responses(params))]


def clamped_chatter(armature: float, *, n: int = CHATTER_ENSEMBLE) -> tuple[str, float, float]:
    """Does Euler with the servo's forcerange keep chattering at this armature? An ensemble's answer.

    Runs ``n`` step responses from starts ``k*CHATTER_SPREAD`` rad apart (k = 0 .. n-1). A run chatters when its
    peak-to-peak over the settle window exceeds ``CHATTER_P2P_DEG``; otherwise the joint's friction loss caught it.

    Returns:
      ``(verdict, p2p, share)``: ``'never'``, ``'sometimes'`` or ``'always'``; the median peak-to-peak of the
      runs that chatter, degrees, to one decimal (0.0 when none does); the share of runs that chatter, which
      moves from one processor to another and is not printed.
    """
    params = [so101_servo(armature, integrator='Euler', forcerange=SO101_FORCERANGE)] * n
    starts = -0.5 + CHATTER_SPREAD * np.arange(n)
    p2p = np.array([r.p2p_deg for r in servo.step_responses(params, q0=starts)])
    chatter = p2p > CHATTER_P2P_DEG
    verdict = 'never' if not chatter.any() else 'always' if chatter.all() else 'sometimes'
    median = round(float(np.median(p2p[chatter])), 1) if chatter.any() else 0.0
    return verdict, median, float(chatter.mean())


@experiment('armature-sweep', summary='SO-101 servo with less and less armature under three integrators',
            columns=(('armature', '.3f'), ('inertia', '.5f'), ('h_omega', '.3f'), ('euler', 's'),
                     ('implicitfast', 's'), ('discrete', 's'), ('euler_clamped_chatters', 's'),
                     ('euler_clamped_p2p_deg', '.1f')))
def armature_sweep() -> list[dict]:
    """The last two columns: Euler with the servo's forcerange, over an ensemble (:func:`clamped_chatter`)."""
    integrators = ('Euler', 'implicitfast', 'discrete')
    params = [so101_servo(a, integrator=i) for a in ARMATURE_SWEEP for i in integrators]
    responses = servo.step_responses(params)
    rows = []
    for k, a in enumerate(ARMATURE_SWEEP):
        euler, implicitfast, discrete = responses[3 * k:3 * k + 3]
        chatters, p2p, _ = clamped_chatter(a)
        rows.append({'armature': a, 'inertia': params[3 * k].inertia,
                     'h_omega': params[3 * k].h_omega, 'euler': _verdict(euler),
                     'implicitfast': _verdict(implicitfast), 'discrete': _verdict(discrete),
                     'euler_clamped_chatters': chatters, 'euler_clamped_p2p_deg': p2p})
    return rows


@experiment('kp-limit', summary='raising kp on the SO-101 servo at armature 0.028',
            columns=(('kp', '.2f'), ('h_omega', '.3f'), ('implicitfast', 's'), ('discrete', 's')))
def kp_limit() -> list[dict]:
    params = [so101_servo(kp=kp, integrator=i) for kp in KP_LIMIT for i in ('implicitfast', 'discrete')]
    responses = servo.step_responses(params)
    return [{'kp': kp, 'h_omega': params[2 * k].h_omega,
             'implicitfast': _verdict(responses[2 * k]), 'discrete': _verdict(responses[2 * k + 1])}
            for k, kp in enumerate(KP_LIMIT)]
