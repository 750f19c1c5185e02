"""Chapter 1's experiments: the link on a ``<position>`` servo, MuJoCo's SO-101 servo, and the exercises' answers.

Every table of the chapter is a function registered by name (``python -m physai NAME``): the force law against
``qfrc_actuator`` (``actuator-laws``), the link's constants (``link``), our servo loop against ``mj_step``
(``servo-loop``), growth per step (``growth``), sag and rise against kp (``kp-sweep``), the SO-101 servo with less
armature (``armature-sweep``, its clamped Euler column a 256-run ensemble) and more kp (``kp-limit``), the smallest
stable armature (``armature-limit``), Menagerie's SO-101 servos (``so101``, :func:`so101_mode_h_omega`, and
``so101-no-armature``, an ensemble per variant) and the exercises (``motor-hold``, ``gear-sag``). The optional "Going
further" section's tables are here as well: the panel's top kp as a slow divergence (``bound-swing``), the cures for
sag (``sag-cures``), the actuator driven from Python (``use-it``), the XML traps (``actuator-traps``, ``<velocity>``
under Euler in ``velocity-trap``, a soft joint limit in ``joint-limit``), the step matrix's trace and determinant
(``trace-determinant``, :func:`step_matrix`) and the
model's side of a step test on the SO-101's elbow (``elbow-step-test``, :func:`so101_joint_step`, which chapter 2
also drives with explicit models). The live panel's physics is here too: ``servo_step``, ``servo_kp_curve`` and
``servo_stability`` (cached per argument, so a kp move reruns only what depends on kp).
"""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np

from physai.engine import link, perturb, so101
from physai.laws import checks, robust
from physai.engine.link import LINK_INERTIA, SETTLE_WINDOW, ServoParams, TAU_G, step_responses
from physai.engine import mj
from physai.engine.mj import diverged
from physai.engine.so101 import ARMATURE_CHECK_FINE_TIMESTEP, load_so101, so101_hold
from physai.experiments.registry import cached, experiment
from physai.laws.sim import actuator_force, kv_from_dampratio, servo_loop, servo_sag
from physai.laws.stability import (armature_at_h_omega, c_implicit_for, critical_armature, critical_h_omega,
                                   e_folding_time, integrator_growth, is_stable_linear)


SO101_TABLE_TIMESTEP = 0.005  # s, the timestep at which the so101 table evaluates h·ω


def so101_servos(timestep: float = SO101_TABLE_TIMESTEP) -> list[dict]:
    """Per actuated joint of the SO-101: its servo gains, armature and the inertia it drives.

    ``M_ii`` is the joint's diagonal entry of the mass matrix at the home pose ``qpos0`` (from
    ``mj_fullM``; it includes ``dof_armature``); ``link_inertia = M_ii - armature`` is the part that
    comes from the links beyond the joint. ``h_omega = h*sqrt(kp/M_ii)``, and
    ``h_omega_no_armature = h*sqrt(kp/link_inertia)``: the same servo with the armature dropped.

    Args:
      timestep: h, s, at which to evaluate h·ω.

    Returns:
      One row per actuator, keys ``joint``, ``kp`` (N·m/rad), ``kv`` (N·m·s/rad), ``forcerange``
      ((low, high) N·m), ``armature``, ``M_ii``, ``link_inertia`` (kg·m²), ``h_omega``,
      ``h_omega_no_armature``.
    """
    import numpy as np

    if not (0 < timestep <= 0.1):
        raise ValueError(f'timestep must be in (0, 0.1] s, got {timestep!r}')
    m = load_so101()
    d = mujoco.MjData(m)  # qpos = qpos0, the home pose
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    rows = []
    for i in range(m.nu):
        joint = int(m.actuator_trnid[i, 0])
        dof = int(m.jnt_dofadr[joint])
        kp = float(m.actuator_gainprm[i, 0])
        armature = float(m.dof_armature[dof])
        m_ii = float(full[dof, dof])
        link_inertia = m_ii - armature
        rows.append({
            'joint': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, joint),
            'kp': kp,
            'kv': float(-m.actuator_biasprm[i, 2]),
            'forcerange': [float(x) for x in m.actuator_forcerange[i]],
            'armature': armature,
            'M_ii': m_ii,
            'link_inertia': link_inertia,
            'h_omega': float(timestep * np.sqrt(kp / m_ii)),
            'h_omega_no_armature': float(timestep * np.sqrt(kp / link_inertia)),
        })
    return rows


def so101_mode_h_omega(timestep: float = SO101_TABLE_TIMESTEP, *, armature: float | None = None) -> np.ndarray:
    """hω of the SO-101's modes when all six servos move at once: h·sqrt of the eigenvalues of M⁻¹·K, sorted.

    ``M`` is the full mass matrix at ``qpos0`` (``mj_fullM``) and ``K = diag(kp)``, the servos' stiffness. The
    per-joint figure h·sqrt(kp/M_ii) of :func:`so101_servos` is the joint's frequency while the other joints hold
    still; the modes are the frequencies of the whole arm. ``armature`` (kg·m², None: the model's) replaces
    ``dof_armature`` on every joint.

    Returns:
      (nv,) hω per mode, ascending.
    """
    if not (0 < timestep <= 0.1):
        raise ValueError(f'timestep must be in (0, 0.1] s, got {timestep!r}')
    m = load_so101()
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    if armature is not None:
        checks.nonnegative('armature', armature, 'kg·m²')
        full += np.diag(armature - m.dof_armature)
    stiffness = np.zeros(m.nv)
    for i in range(m.nu):
        stiffness[m.jnt_dofadr[m.actuator_trnid[i, 0]]] = m.actuator_gainprm[i, 0]
    w2 = np.linalg.eigvals(np.linalg.solve(full, np.diag(stiffness))).real
    return np.sort(timestep * np.sqrt(np.clip(w2, 0.0, None)))


def _register() -> None:

    experiment('so101', summary="the SO-101's servos: gains, armature, M_ii at qpos0 and h*omega at 5 ms",
               columns=(('joint', 's'), ('kp', '.2f'), ('kv', '.3f'), ('forcerange', '.2f'),
                        ('armature', '.3f'), ('M_ii', '.6f'), ('link_inertia', '.6f'),
                        ('h_omega', '.3f'), ('h_omega_no_armature', '.3f')))(so101_servos)


_register()




SO101_HOLD_ENSEMBLE = 8
"""Runs per variant behind ``so101-no-armature``: run k starts ``k*SO101_HOLD_SPREAD`` rad from the home pose in
every joint. The arm's chatter wanders (its peak-to-peak over one half-second window differs from the next window's
by a tenth), so one run's amplitude is one draw; the table reports the range the ensemble spans."""

SO101_HOLD_SPREAD = 1e-7
"""rad: the spacing of the ensemble's starts. At 1e-9 rad the runs stay together for the whole 3 s; from about
1e-7 rad they take different paths, so the ensemble samples the chatter rather than one path of it."""

SO101_HOLD_VARIANTS = {
    'shipped': {},
    'no_armature': {'armature': 0.0},
    'no_armature_unclamped': {'armature': 0.0, 'forcelimited': False},
    'no_armature_1ms': {'armature': 0.0, 'timestep': ARMATURE_CHECK_FINE_TIMESTEP},
}
"""The four versions of Menagerie's SO-101 that ``so101-no-armature`` runs (keyword arguments of ``so101_hold``)."""


def chatter_verdict(p2p_deg: np.ndarray) -> str:
    """``'never'``, ``'sometimes'`` or ``'always'``: how many runs of an ensemble move more than ``CHATTER_P2P_DEG``
    over their settle window. Args: p2p_deg: (n,) peak-to-peak of each run, degrees."""
    chatter = np.asarray(p2p_deg) > CHATTER_P2P_DEG
    return 'never' if not chatter.any() else 'always' if chatter.all() else 'sometimes'


def chatter_range(p2p_deg: np.ndarray) -> tuple[float, float]:
    """(low, high) degrees: the smallest and largest peak-to-peak of the runs that chatter, each rounded outward on the
    1-2-5 series (:func:`physai.laws.robust.series_125`), so that the printed range holds for the ensemble's next
    draw too; (0, 0) when no run chatters."""
    p2p = np.asarray(p2p_deg, dtype=float)
    moving = p2p[p2p > CHATTER_P2P_DEG]
    if moving.size == 0:
        return 0.0, 0.0
    return robust.series_125(float(moving.min()), 'down'), robust.series_125(float(moving.max()), 'up')


def so101_without_armature(n: int = SO101_HOLD_ENSEMBLE) -> list[dict]:
    """What dropping the armature does to the real model: per joint, does it chatter after a step, and how much.

    Four versions of Menagerie's SO-101 (:data:`SO101_HOLD_VARIANTS`; implicitfast, 5 ms unless changed), each joint
    commanded 0.2 rad from the home pose for 3 s, each run ``n`` times from starts ``k*SO101_HOLD_SPREAD`` apart. A run
    chatters at a joint when its peak-to-peak over the last 0.5 s passes ``CHATTER_P2P_DEG``.

    Returns:
      One row per joint: the verdict of each variant (:func:`chatter_verdict`), and for the armature dropped with the
      clamp kept the range of the chattering runs' peak-to-peak, degrees (:func:`chatter_range`):
      ``no_armature_p2p_low``, ``no_armature_p2p_high``.
    """
    if not (isinstance(n, int) and 1 <= n <= 10):
        raise ValueError(f'n must be an integer in [1, 10] runs (starts at most 1e-6 rad apart), got {n!r}')
    p2p = {}
    for name, kwargs in SO101_HOLD_VARIANTS.items():
        runs = [so101_hold(offset=k * SO101_HOLD_SPREAD, **kwargs) for k in range(n)]
        if any(bad for _, bad in runs):
            raise RuntimeError(f'so101_without_armature: a run of {name} diverged')
        p2p[name] = np.array([run for run, _ in runs])  # (n, nu) degrees
    m = load_so101()
    rows = []
    for i in range(m.nu):
        verdict = {name: chatter_verdict(runs[:, i]) for name, runs in p2p.items()}
        low, high = chatter_range(p2p['no_armature'][:, i])
        rows.append({'joint': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[i, 0])),
                     'shipped': verdict['shipped'], 'no_armature': verdict['no_armature'],
                     'no_armature_p2p_low': low, 'no_armature_p2p_high': high,
                     'no_armature_unclamped': verdict['no_armature_unclamped'],
                     'no_armature_1ms': verdict['no_armature_1ms']})
    return rows


def _register_hold() -> None:

    experiment('so101-no-armature',
               summary='the SO-101 model with its armature dropped: does it chatter after a step, per joint',
               columns=(('joint', 's'), ('shipped', 's'), ('no_armature', 's'), ('no_armature_p2p_low', '.1g', '°'),
                        ('no_armature_p2p_high', '.1g', '°'), ('no_armature_unclamped', 's'),
                        ('no_armature_1ms', 's')))(so101_without_armature)


_register_hold()


# The hard exercise: Euler, kv = 0, joint damping 0.6, SO-101 kp, dt 5 ms.
LIMIT_KP = so101.MENAGERIE_KP

LIMIT_DAMPING = so101.MENAGERIE_DAMPING
LIMIT_TIMESTEP = 0.005
LIMIT_ARMATURES = tuple(round(0.0001 * k, 4) for k in range(0, 31))  # 0 ... 0.003 kg·m²
LIMIT_DURATION = 10.0  # s: near the bound the growth is slow, so run longer than a step response


def armature_limit_runs(armatures=LIMIT_ARMATURES, *, kp: float = LIMIT_KP, kv: float = 0.0,
                        damping: float = LIMIT_DAMPING, timestep: float = LIMIT_TIMESTEP,
                        integrator: str = 'Euler', duration: float = LIMIT_DURATION) -> list[dict]:
    """MuJoCo runs of the link over an armature grid: which diverge, and the linear prediction.

    Returns:
      One row per armature: ``armature`` (kg·m²), ``h_omega``, ``growth`` (spectral radius of the
      linear step), ``bound_stable`` (bool) and ``mujoco`` (``stable`` / ``diverged``).
    """
    params = [ServoParams(kp=kp, kv=kv, armature=a, damping=damping, timestep=timestep,
                          integrator=integrator) for a in armatures]
    responses = step_responses(params, duration=duration)
    rows = []
    for p, r in zip(params, responses):
        inertia = p.inertia
        w2, c = kp / inertia, (kv + damping) / inertia
        ci = c_implicit_for(integrator, kv, damping, inertia)
        rows.append({'armature': p.armature, 'h_omega': p.h_omega,
                     'growth': integrator_growth(integrator, timestep, w2, c, c_joint=damping / inertia),
                     'bound_stable': is_stable_linear(timestep, w2, c, ci),
                     'mujoco': 'diverged' if r.diverged else 'stable'})
    return rows


@experiment('armature-limit',
            summary='Euler, kv 0, damping 0.6: the smallest stable armature, MuJoCo vs the bound vs h*omega=2',
            columns=(('quantity', 's'), ('armature', '.6f')))
def armature_limit() -> list[dict]:
    """The hard exercise's answer: three estimates of where Euler stops diverging."""
    runs = armature_limit_runs()
    diverged = [r['armature'] for r in runs if r['mujoco'] == 'diverged']
    stable = [r['armature'] for r in runs if r['mujoco'] == 'stable']
    return [
        {'quantity': 'largest diverging armature on the grid (MuJoCo)',
         'armature': max(diverged) if diverged else math.nan},
        {'quantity': 'smallest stable armature on the grid (MuJoCo)',
         'armature': min(stable) if stable else math.nan},
        {'quantity': 'bound h^2 w^2 = 4 + 2 h damping / I',
         'armature': critical_armature(LIMIT_KP, kv=0.0, damping=LIMIT_DAMPING,
                                       timestep=LIMIT_TIMESTEP, link_inertia=LINK_INERTIA)},
        {'quantity': 'rule of thumb h w = 2',
         'armature': armature_at_h_omega(2.0, LIMIT_KP, LIMIT_TIMESTEP, link_inertia=LINK_INERTIA)},
    ]


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


def _verdict(response: link.StepResponse) -> str:
    return 'diverged' if response.diverged else 'stable'


@experiment('actuator-laws', summary='one affine force law for motor, position and velocity vs qfrc_actuator',
            columns=(('actuator', 's'), ('gainprm0', '.3f'), ('biasprm', '.3f'), ('max_error', '.1e', 'N·m')))
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
def link_check(q: float = 0.3) -> list[dict]:
    m = link.link_model(ServoParams(kp=1.0))
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
        spec = link.link_spec()
        spec.actuator('servo').set_to_position(kp=kp, dampratio=1.0)
        compiled = spec.compile()
        rows.append({'quantity': f'kv for kp={kp}, dampratio=1 (N m s/rad)',
                     'ours': float(kv_from_dampratio(kp, 1.0, LINK_INERTIA + compiled.dof_armature[0])),
                     'mujoco': float(-compiled.actuator_biasprm[0, 2])})
    return rows


@experiment('servo-loop', summary='our semi-implicit Euler servo loop vs mj_step (implicitfast)',
            columns=(('kp', '.0f'), ('max_abs_diff_rad', '.1e'), ('sag_deg', '.4f'),
                     ('servo_sag_deg', '.4f'), ('rise_ms', '.2f')))
def servo_loop_check() -> list[dict]:
    params = [ServoParams(kp=kp) for kp in KP_SWEEP]
    responses = link.step_responses(params)
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
    responses = link.step_responses(params)
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
            for p, r in zip(params, link.step_responses(params))]


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
    p2p = np.array([r.p2p_deg for r in link.step_responses(params, q0=starts)])
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
    responses = link.step_responses(params)
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
    responses = link.step_responses(params)
    return [{'kp': kp, 'h_omega': params[2 * k].h_omega,
             'implicitfast': _verdict(responses[2 * k]), 'discrete': _verdict(responses[2 * k + 1])}
            for k, kp in enumerate(KP_LIMIT)]


def _geared_link(gear: float, kp: float | None = None) -> mujoco.MjModel:
    """The book's link with its actuator geared by ``gear``: a ``<motor>``, or with ``kp`` a ``<position kp
    dampratio=1>`` servo (MuJoCo resolves dampratio when it compiles, gear included)."""
    spec = link.link_spec()
    servo = spec.actuator('servo')
    if kp is None:
        servo.set_to_motor()
    else:
        servo.set_to_position(kp=kp, dampratio=1.0)
    servo.gear[0] = gear
    return spec.compile()


def _simulate(m: mujoco.MjModel, *, q0: float, ctrl: float, duration: float) -> tuple[np.ndarray, bool]:
    """q after each step, (nstep + 1,), from rest at q0 with a constant ctrl, and whether the run diverged
    (:func:`physai.engine.mj.diverged`; MuJoCo resets a run whose acceleration blows up, so read its warning)."""
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    perturb.nudge(d.qpos)
    d.ctrl[0] = ctrl
    mujoco.mj_forward(m, d)
    nstep = round(duration / m.opt.timestep)
    q = np.empty(nstep + 1)
    q[0] = q0
    with mj.captured_warnings():
        for k in range(1, nstep + 1):
            mujoco.mj_step(m, d)
            q[k] = d.qpos[0]
    return q, diverged(q, warned=mj.warned(d))


def motor_hold(gear: float = 1.0, *, duration: float = 1.0) -> list[dict]:
    """The constant ``<motor>`` control that holds the link horizontal, checked by a run.

    At q = 0 and rest the motor must cancel gravity: ``gear * ctrl = tau_g``, read from MuJoCo as
    ``qfrc_bias`` (the gravity torque, N·m). The run starts at q = 0 with that ctrl; ``drift_deg`` is
    how far it has moved after ``duration`` seconds (only rounding: the balance is exact but not
    restoring, since a motor has no stiffness).

    Returns:
      Rows ``quantity``, ``value``.
    """
    m = _geared_link(gear)
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
      'diverged', :func:`physai.engine.mj.diverged`), ``sag_ratio`` (gear 1's sag over this one's).
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
        m = _geared_link(gear, kp)
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
            columns=(('gear', '.0f'), ('joint_stiffness', '.1f', 'N·m/rad'), ('sag_deg', '.5f'),
                     ('servo_sag_deg', '.5f'), ('mujoco', 's'), ('sag_ratio', '.4f')))
def gear_sag_table() -> list[dict]:
    return gear_sag()


# ---------------------------------------------------------------------------------------------
# Chapter 1: the servo panel

PANEL_KP_GRID = np.array(robust.log_grid(1.0, 30000.0, 25))
"""kp values of the panel's sag / rise curve, N·m/rad."""

STABILITY_KP = np.array(robust.log_grid(1.0, 30000.0, 19))
"""kp rows of the panel's stability map, N·m/rad."""

STABILITY_ARMATURE = np.linspace(0.0, 0.1, 11)
"""armature columns of the panel's stability map, kg·m²."""

STABILITY_STEPS = 300
"""Steps of each short run in the stability map (whatever the timestep)."""


def panel_servo(kp, armature, timestep, integrator, dampratio) -> ServoParams:
    """The live panel's servo on the link: its sliders' values as :class:`ServoParams` (floats, checked there)."""
    return ServoParams(kp=float(kp), armature=float(armature), timestep=float(timestep),
                       integrator=integrator, dampratio=float(dampratio))


@cached(maxsize=64)
def servo_step(kp: float, armature: float, timestep: float, integrator: str,
               dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0):
    """One step response (:func:`physai.engine.link.step_response` on one thread), cached by its arguments."""
    params = panel_servo(kp, armature, timestep, integrator, dampratio)
    return step_responses([params], q0=q0, duration=duration, nthread=1)[0]


PANEL_STEP_BUDGET = 12_000
"""Physics steps, weighted by :data:`INTEGRATOR_COST`, of the step response the live panel runs before it answers a
slider (6000 steps at 0.5 ms, or RK4 at 1 ms: 15-30 ms of MuJoCo on this book's 2-core machine). A longer run (RK4
below a 1 ms step) answers with its first :data:`PANEL_FIRST_PART` and draws the rest when the panel's worker has
it."""

PANEL_FIRST_PART = 1.0
"""s: the part of a long step response the live panel draws first (the rise of every servo that settles in time)."""

INTEGRATOR_COST = {'RK4': 4}
"""Cost of one physics step against an Euler step (1 unless listed): RK4 evaluates the dynamics four times."""


def panel_step_cost(timestep: float, integrator: str, duration: float = 3.0) -> int:
    """The weighted physics steps of one step response (see :data:`PANEL_STEP_BUDGET`)."""
    return max(1, round(duration / timestep)) * INTEGRATOR_COST.get(integrator, 1)


@cached(maxsize=64)
def servo_step_start(kp: float, armature: float, timestep: float, integrator: str,
                     dampratio: float = 1.0, q0: float = -0.5, duration: float = 3.0):
    """The first :data:`PANEL_FIRST_PART` of :func:`servo_step`'s run, sample for sample the same (the batch is the
    same arithmetic, however far it runs); None when the whole run fits :data:`PANEL_STEP_BUDGET`.

    Its figures describe only that part: the panel draws the trajectory and says the rest is coming. A part that
    diverged is the whole story, since a diverged run ends where MuJoCo flagged it.
    """
    if panel_step_cost(timestep, integrator, duration) <= PANEL_STEP_BUDGET:
        return None
    params = panel_servo(kp, armature, timestep, integrator, dampratio)
    return step_responses([params], q0=q0, duration=min(PANEL_FIRST_PART, duration), nthread=1)[0]


@cached(maxsize=16)
def servo_kp_curve(armature: float, timestep: float, integrator: str, dampratio: float = 1.0,
                   q0: float = -0.5, duration: float = 3.0) -> dict:
    """Sag and rise time over :data:`PANEL_KP_GRID`, one batched run (does not depend on kp).

    Returns:
      dict with ``kp`` (n,), ``sag_deg`` (n,), ``rise_ms`` (n,) (NaN where the run did not settle) and
      ``diverged`` (n,) bool: diverged, or never settled (still swinging at the end, on a bound).
    """
    params = [panel_servo(kp, armature, timestep, integrator, dampratio) for kp in PANEL_KP_GRID]
    responses = step_responses(params, q0=q0, duration=duration)
    settled = np.array([r.settled for r in responses])
    return {'kp': PANEL_KP_GRID,
            'sag_deg': np.where(settled, [r.sag_deg for r in responses], np.nan),
            'rise_ms': np.where(settled, [r.rise_ms for r in responses], np.nan),
            'diverged': ~settled}


def unstable(response, q0: float) -> bool:
    """The stability map's verdict on one short run: diverged (:func:`physai.engine.mj.diverged`, the package's
    rule), or a limit cycle: still swinging wider than ``1.5 |q0|`` over its last sixth, so it never settles."""
    if response.diverged:
        return True
    tail = response.q[-len(response.q) // 6:]
    return bool(np.max(np.abs(tail)) > 1.5 * abs(q0))


def servo_bounds(timestep: float, integrator: str, dampratio: float = 1.0) -> dict:
    """The stability map's analytic curves over armature (no simulation, so the panel draws them at once).

    Returns:
      dict with ``h_omega_star`` (the integrator's critical hω, :func:`critical_h_omega`; inf when none) and the
      curves ``bound_armature`` (m,) kg·m², ``bound_kp`` (m,) for growth = 1 (NaN when there is no bound) and
      ``two_kp`` (m,) for hω = 2, N·m/rad.
    """
    star = critical_h_omega(integrator, dampratio)
    armature = np.linspace(0.0, 0.1, 101)
    inertia = LINK_INERTIA + armature
    return {'h_omega_star': star, 'bound_armature': armature,
            'bound_kp': (star / timestep) ** 2 * inertia if math.isfinite(star)
            else np.full_like(armature, np.nan),
            'two_kp': (2.0 / timestep) ** 2 * inertia}


@cached(maxsize=16)
def servo_stability(timestep: float, integrator: str, dampratio: float = 1.0,
                    q0: float = -0.5) -> dict:
    """Where MuJoCo diverges over (armature, kp), and the analytic bound (does not depend on kp, armature).

    Runs :data:`STABILITY_STEPS` steps for each cell of :data:`STABILITY_KP` × :data:`STABILITY_ARMATURE`
    in one batch; a cell counts as diverged if MuJoCo flags it or it ends swinging wider than 1.5 |q0|.

    Returns:
      dict with ``kp`` (nk,), ``armature`` (na,), ``diverged`` (nk, na) bool, and :func:`servo_bounds`'
      ``h_omega_star``, ``bound_armature``, ``bound_kp`` and ``two_kp``.
    """
    params = [panel_servo(kp, a, timestep, integrator, dampratio)
              for kp in STABILITY_KP for a in STABILITY_ARMATURE]
    responses = step_responses(params, q0=q0, duration=STABILITY_STEPS * timestep)
    diverged = np.array([unstable(r, q0) for r in responses]).reshape(len(STABILITY_KP), -1)
    return {'kp': STABILITY_KP, 'armature': STABILITY_ARMATURE, 'diverged': diverged,
            **servo_bounds(timestep, integrator, dampratio)}


BOUND_SWING_DURATION = 12.0
"""s: how long :func:`bound_swing` runs the panel's top-kp servo (a few e-folding times, still far inside the 20π rad
divergence bound)."""

BOUND_SWING_WINDOW = 0.25
"""s: the swing amplitude is read once per window of this length (half its peak-to-peak)."""

BOUND_SWING_SKIP = 0.5
"""s: windows before this are left out of the fit (the fast-decaying second mode of the step is still there)."""


def swing_amplitudes(t: np.ndarray, q: np.ndarray, window: float = BOUND_SWING_WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """Half the peak-to-peak of ``q`` over consecutive windows: the amplitude of a swing about a fixed point.

    Args:
      t: (n,) times, s, evenly spaced.
      q: (n,) angles, rad.
      window: window length, s.

    Returns:
      ``(centres, amplitudes)``, (m,) each: each window's mid-time (s) and amplitude (rad).
    """
    checks.positive('window', window, 's')
    per = max(2, round(window / (t[1] - t[0])))
    m = len(q) // per
    blocks = np.asarray(q[:m * per], dtype=float).reshape(m, per)
    centres = np.asarray(t[:m * per], dtype=float).reshape(m, per).mean(axis=1)
    return centres, 0.5 * np.ptp(blocks, axis=1)


@experiment('bound-swing', summary="the panel's top kp under implicitfast: growth a hair above 1, a slow divergence",
            columns=(('quantity', 's'), ('linear_step', '.3g'), ('mujoco', '.3g')))
def bound_swing(kp: float = float(PANEL_KP_GRID[-1]), armature: float = SO101_ARMATURE, timestep: float = 0.005,
                duration: float = BOUND_SWING_DURATION) -> list[dict]:
    """How fast the swing of a servo a hair past implicitfast's bound grows: the linear step against MuJoCo.

    The panel's servo (dampratio 1) at ``kp`` and ``armature`` sits at hω ≈ 2 + 2√2, on the bound. The linear step
    (:func:`integrator_growth`) predicts a growth per step g and an e-folding time h/ln g
    (:func:`physai.laws.stability.e_folding_time`). The MuJoCo run (implicitfast, from rest at q = −0.5 rad to the
    command 0) is read as a swing amplitude per :data:`BOUND_SWING_WINDOW` (:func:`swing_amplitudes`); a straight
    line through log(amplitude) against time after :data:`BOUND_SWING_SKIP` gives the measured growth per step,
    exp(slope·h).

    Returns:
      Rows ``quantity``, ``linear_step``, ``mujoco``: the growth per step minus 1, the e-folding time (s), and the
      factor by which the swing grows from the first fitted window to the last (the linear step's g^n over the n
      steps between their mid-times, against the ratio of the run's two amplitudes).
    """
    params = panel_servo(kp, armature, timestep, 'implicitfast', 1.0)
    run = step_responses([params], duration=duration, nthread=1)[0]
    if run.diverged:
        raise RuntimeError(f'bound_swing: the run at kp={kp}, armature={armature} diverged within {duration} s; '
                           'it is meant to sit on the bound')
    inertia = params.inertia
    g = integrator_growth('implicitfast', timestep, kp / inertia, params.kv_effective / inertia)
    centres, amplitude = swing_amplitudes(run.t, run.q)
    fit = centres >= BOUND_SWING_SKIP
    centres, amplitude = centres[fit], amplitude[fit]
    slope = float(np.polyfit(centres, np.log(amplitude), 1)[0])  # 1/s
    g_run = math.exp(slope * timestep)
    steps = (centres[-1] - centres[0]) / timestep
    return [
        {'quantity': 'growth per step - 1', 'linear_step': g - 1.0, 'mujoco': g_run - 1.0},
        {'quantity': 'e-folding time (s)', 'linear_step': e_folding_time(g, timestep),
         'mujoco': e_folding_time(g_run, timestep)},
        {'quantity': f'swing growth from {centres[0]:.2f} s to {centres[-1]:.2f} s', 'linear_step': g ** steps,
         'mujoco': float(amplitude[-1] / amplitude[0])},
    ]


# ---------------------------------------------------------------------------------------------
# Chapter 1, "Going further": the actuator from Python, three traps, the trace and determinant of the step,
# and the step test of a real elbow

USE_IT_STATES = ((0.0, -0.002, 0.1), (0.5, 0.0, 0.0))
"""(ctrl rad, qpos rad, qvel rad/s) of the two states :func:`use_it` reads: holding near the command, and a
0.5 rad step just commanded (the force clamps)."""


def _so101_link_spec(*, integrator: str = 'implicitfast') -> mujoco.MjSpec:
    """The book's link with Menagerie's SO-101 servo: ``<position kp kv forcerange>`` and the joint's armature."""
    spec = link.link_spec(armature=SO101_ARMATURE, integrator=integrator)
    servo = spec.actuator('servo')
    servo.set_to_position(kp=SO101_KP, kv=SO101_KV)
    servo.forcerange = [SO101_FORCERANGE[0], SO101_FORCERANGE[1]]
    servo.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    return spec


@experiment('use-it', summary='d.ctrl in, d.actuator_force and d.qfrc_actuator out, kp and kv read back',
            columns=(('ctrl', '.3f', 'rad'), ('qpos', '.3f'), ('qvel', '.3f'), ('kp_read', '.2f', 'N·m/rad'), ('kv_read', '.3f', 'N·m·s/rad'),
                     ('pd_law', '.4f', 'N·m'), ('actuator_force', '.4f'), ('qfrc_actuator', '.4f')))
def use_it(states=USE_IT_STATES) -> list[dict]:
    """The SO-101 servo on the link driven from Python, one ``mj_forward`` per state.

    Write the command to ``d.ctrl`` (rad for a ``<position>``), the state to ``d.qpos``, ``d.qvel``; after
    ``mj_forward``, ``d.actuator_force`` is the force in actuator space (after ``forcerange``) and
    ``d.qfrc_actuator`` the generalized force on the joint (gear times it, gear 1 here). kp and kv are read back
    from ``actuator_gainprm[0]`` and ``-actuator_biasprm[2]``.

    Args:
      states: (ctrl rad, qpos rad, qvel rad/s) triples.

    Returns:
      One row per state: ``ctrl``, ``qpos``, ``qvel``, ``kp_read`` (N·m/rad), ``kv_read`` (N·m·s/rad),
      ``pd_law`` (kp(u − q) − kv q̇, unclamped, N·m), ``actuator_force``, ``qfrc_actuator`` (N·m).
    """
    m = _so101_link_spec().compile()
    d = mujoco.MjData(m)
    kp, kv = float(m.actuator_gainprm[0, 0]), float(-m.actuator_biasprm[0, 2])
    rows = []
    for ctrl, q, v in states:
        for name, value in (('ctrl', ctrl), ('qpos', q), ('qvel', v)):
            checks.finite(name, value)
        d.ctrl[0], d.qpos[0], d.qvel[0] = ctrl, q, v
        mujoco.mj_forward(m, d)
        rows.append({'ctrl': ctrl, 'qpos': q, 'qvel': v, 'kp_read': kp, 'kv_read': kv,
                     'pd_law': kp * (ctrl - q) - kv * v, 'actuator_force': float(d.actuator_force[0]),
                     'qfrc_actuator': float(d.qfrc_actuator[0])})
    return rows


TRAP_Q = -0.1
"""rad: the angle at which :func:`actuator_traps` reads the ``<general>`` force (command 0, at rest)."""

TRAP_CTRL = 0.5
"""rad: the command of the ctrlrange/forcerange runs."""

TRAP_LIMIT = 0.2
"""rad, the ctrlrange ±0.2 of the trap (a number meant as a torque limit, read by MuJoCo as a command range)."""

TRAP_DURATION = 2.0
"""s: the length of the trap runs."""


def _trap_run(m: mujoco.MjModel, ctrl: float, duration: float = TRAP_DURATION) -> tuple[float, float]:
    """From rest at q = 0 with a constant ctrl: the angle at the end (rad) and the largest |actuator_force| (N·m)."""
    d = mujoco.MjData(m)
    perturb.nudge(d.qpos)
    d.ctrl[0] = ctrl
    peak = 0.0
    with mj.captured_warnings():
        for _ in range(round(duration / m.opt.timestep)):
            mujoco.mj_step(m, d)
            peak = max(peak, abs(float(d.actuator_force[0])))
    return float(d.qpos[0]), peak


@experiment('actuator-traps', summary='<general> without biastype="affine"; ctrlrange is not forcerange',
            columns=(('trap', 's'), ('case', 's'), ('quantity', 's'), ('value', '.3f'), ('unit', 's')))
def actuator_traps() -> list[dict]:
    """Two traps of MuJoCo's actuator XML, measured on the link with the SO-101 servo.

    1. ``<general gainprm="kp" biasprm="0 -kp -kv">`` is not a position servo unless ``biastype="affine"``: the
       default bias type is none, so ``biasprm`` is ignored and the force is kp·u, with no spring and no damper.
       The rows read the force at q = ``TRAP_Q`` with command 0 (N·m).
    2. ``ctrlrange`` clamps the command u (rad for a position servo), ``forcerange`` the force (N·m). Commanded
       ``TRAP_CTRL`` for ``TRAP_DURATION`` s, ctrlrange ±``TRAP_LIMIT`` stops the link near 0.2 rad with an
       unlimited force; forcerange ±2.94 lets it reach the command with at most 2.94 N·m. These runs carry the
       SO-101 joint's damping and friction loss.

    Returns:
      Rows ``trap``, ``case``, ``quantity``, ``value``, ``unit``.
    """
    rows = []
    for biastype, name in ((mujoco.mjtBias.mjBIAS_NONE, 'biastype none (the default)'),
                           (mujoco.mjtBias.mjBIAS_AFFINE, 'biastype="affine"')):
        spec = link.link_spec(armature=SO101_ARMATURE)
        servo = spec.actuator('servo')
        servo.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        servo.biastype = biastype
        servo.gainprm[0] = SO101_KP
        servo.biasprm[:3] = [0.0, -SO101_KP, -SO101_KV]
        m = spec.compile()
        d = mujoco.MjData(m)
        d.qpos[0], d.ctrl[0] = TRAP_Q, 0.0
        mujoco.mj_forward(m, d)
        rows.append({'trap': '<general>', 'case': name, 'quantity': f'force at q = {TRAP_Q:g}, u = 0',
                     'value': float(d.actuator_force[0]), 'unit': 'N m'})
    for limit in ('ctrlrange', 'forcerange'):
        spec = link.link_spec(armature=SO101_ARMATURE)
        spec.joint('hinge').damping[0] = SO101_DAMPING  # the SO-101 joint's, which damps the clamped swing
        spec.joint('hinge').frictionloss = SO101_FRICTIONLOSS
        servo = spec.actuator('servo')
        servo.set_to_position(kp=SO101_KP, kv=SO101_KV)
        if limit == 'ctrlrange':
            servo.ctrlrange = [-TRAP_LIMIT, TRAP_LIMIT]
            servo.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            case = f'ctrlrange -{TRAP_LIMIT:g} {TRAP_LIMIT:g}'
        else:
            servo.forcerange = [SO101_FORCERANGE[0], SO101_FORCERANGE[1]]
            servo.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            case = f'forcerange {SO101_FORCERANGE[0]:g} {SO101_FORCERANGE[1]:g}'
        q_end, peak = _trap_run(spec.compile(), TRAP_CTRL)
        rows.append({'trap': 'ctrlrange vs forcerange', 'case': case,
                     'quantity': f'angle after {TRAP_DURATION:g} s (ctrl {TRAP_CTRL:g})', 'value': q_end,
                     'unit': 'rad'})
        rows.append({'trap': 'ctrlrange vs forcerange', 'case': case, 'quantity': 'largest |actuator_force|',
                     'value': peak, 'unit': 'N m'})
    return rows


VELOCITY_TRAP_KV = 20.0
"""N·m·s/rad: the ``<velocity kv>`` of the trap; h·kv/I is above 2 on the link at 5 ms."""

VELOCITY_TRAP_CTRL = 1.0
"""rad/s: the commanded speed."""


@experiment('velocity-trap', summary='<velocity kv=20> on the link: Euler takes kv explicitly and diverges',
            columns=(('integrator', 's'), ('h_kv_over_I', '.3f'), ('mujoco', 's'), ('mean_speed', '.3f', 'rad/s')))
def velocity_trap(kv: float = VELOCITY_TRAP_KV, integrators=('Euler', 'implicitfast')) -> list[dict]:
    """A ``<velocity kv>`` actuator (τ = kv(u − q̇), a pure damper toward the commanded speed) on the link.

    Euler integrates the actuator's kv explicitly, so it is stable only while h·kv/I < 2; implicitfast folds kv
    into the step and holds at any kv. Each run commands ``VELOCITY_TRAP_CTRL`` rad/s for 2 s from rest.

    Args:
      kv: the actuator's gain, N·m·s/rad (> 0).
      integrators: MuJoCo integrators to run.

    Returns:
      One row per integrator: ``h_kv_over_I``, ``mujoco`` (stable / diverged) and ``mean_speed`` (rad/s over the
      last 0.5 s; None when the run diverged).
    """
    checks.positive('kv', kv, 'N·m·s/rad')
    rows = []
    for integrator in integrators:
        spec = link.link_spec(armature=SO101_ARMATURE, integrator=integrator)
        spec.actuator('servo').set_to_velocity(kv=kv)
        m = spec.compile()
        d = mujoco.MjData(m)
        perturb.nudge(d.qpos)
        d.ctrl[0] = VELOCITY_TRAP_CTRL
        nstep = round(2.0 / m.opt.timestep)
        ntail = round(SETTLE_WINDOW / m.opt.timestep)
        v = np.empty(nstep)
        with mj.captured_warnings():
            for k in range(nstep):
                mujoco.mj_step(m, d)
                v[k] = d.qvel[0]
        bad = diverged(v=v, warned=mj.warned(d))
        inertia = LINK_INERTIA + SO101_ARMATURE
        rows.append({'integrator': integrator, 'h_kv_over_I': m.opt.timestep * kv / inertia,
                     'mujoco': 'diverged' if bad else 'stable',
                     'mean_speed': None if bad else float(np.mean(v[-ntail:]))})
    return rows


# --- curing the sag, and a joint range that gives

SAG_CURE_KP = 30.0
"""N·m/rad: the servo whose sag the cures remove (Build it's example, dampratio 1)."""

SAG_CURE_KI_SHARE = 0.1
"""The integral gain of the PI rows as a share of kp·ω: ki = 0.1·kp·ω, an integral ten times slower than the PD."""

SAG_CURE_IMAX = 0.005
"""rad·s: the anti-windup clamp of the last row (``<pid imax>``), about 1.6 times the integral that holding the link
needs (τ_g/ki)."""

SAG_CURE_MODEL_ERROR = 0.2
"""The feed-forward row with a wrong load model believes the link 20 % lighter than it is."""


def _link_with_actuators(actuators: str) -> mujoco.MjModel:
    """The book's link (armature 0.028, implicitfast, 5 ms) with its ``<actuator>`` block's servo replaced."""
    servo = '<position name="servo" joint="hinge" kp="1" kv="0"/>'
    if servo not in link.LINK_XML:
        raise AssertionError('the link XML no longer holds the servo line this function replaces')
    return mujoco.MjModel.from_xml_string(link.LINK_XML.replace(servo, actuators))


def _hold_run(m: mujoco.MjModel, ctrl, *, q0: float = -0.5, duration: float = 3.0) -> np.ndarray:
    """q after each step, (nstep + 1,), from rest at ``q0`` with a constant ``ctrl`` (nu,)."""
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    perturb.nudge(d.qpos)
    d.ctrl[:] = ctrl
    mujoco.mj_forward(m, d)
    nstep = round(duration / m.opt.timestep)
    q = np.empty(nstep + 1)
    q[0] = d.qpos[0]
    with mj.captured_warnings():
        for k in range(nstep):
            mujoco.mj_step(m, d)
            q[k + 1] = d.qpos[0]
    if diverged(q, warned=mj.warned(d)):
        raise RuntimeError('a sag-cure run diverged')
    return q


@experiment('sag-cures', summary='curing the sag: gravity feed-forward and integral action, and what each costs',
            columns=(('servo', 's'), ('error_deg', '.3f'), ('overshoot_pct', '.1f'), ('needs', 's')))
def sag_cures(kp: float = SAG_CURE_KP) -> list[dict]:
    """A ``<position kp dampratio=1>`` servo on the link, stepped from −0.5 rad to 0, and four ways to remove its sag.

    - **Gravity feed-forward**: a second actuator, a ``<motor>``, adds the torque gravity needs at the command,
      τ_g cos u (read from MuJoCo's ``qfrc_bias`` at q = u). The spring then has nothing to hold. Exact only while the
      load model is: with the link believed ``SAG_CURE_MODEL_ERROR`` lighter, that share of the sag stays.
    - **Integral action**: MuJoCo's ``<pid ki>`` actuator (MuJoCo 3.12 and later) adds ki·∫e dt, a force that keeps
      growing while any error is left, so the sag goes to zero. The integral also piles up during the rise (windup),
      so the step overshoots; ``imax`` clamps the integral and the overshoot with it.

    Returns:
      One row per servo: ``error_deg`` (command minus the mean angle over the last 0.5 s of a 3 s run), ``overshoot_pct``
      (how far the link went past the command, % of the 0.5 rad step) and ``needs`` (what the cure asks for).
    """
    checks.positive('kp', kp, 'N·m/rad')
    inertia = LINK_INERTIA + SO101_ARMATURE
    ki = SAG_CURE_KI_SHARE * kp * math.sqrt(kp / inertia)
    position = f'<position name="servo" joint="hinge" kp="{kp!r}" dampratio="1"/>'
    ff_model = _link_with_actuators(position + '<motor name="ff" joint="hinge"/>')
    d = mujoco.MjData(ff_model)
    mujoco.mj_forward(ff_model, d)  # q = 0, the command: qfrc_bias is the torque gravity needs there
    tau_ff = float(d.qfrc_bias[0])
    pid = f'<pid name="servo" joint="hinge" kp="{kp!r}" dampratio="1" ki="{ki!r}" input="pos"'
    cases = [
        ('<position> (P and D)', _link_with_actuators(position), [0.0], '-'),
        ('+ gravity feed-forward', ff_model, [0.0, tau_ff], 'a model of the load'),
        (f'+ feed-forward, link {100 * SAG_CURE_MODEL_ERROR:.0f} % too light', ff_model,
         [0.0, (1 - SAG_CURE_MODEL_ERROR) * tau_ff], 'a model of the load'),
        (f'<pid ki={ki:.0f}> (PID)', _link_with_actuators(pid + '/>'), [0.0], 'an integral state'),
        (f'<pid ki={ki:.0f} imax={SAG_CURE_IMAX:g}>', _link_with_actuators(pid + f' imax="{SAG_CURE_IMAX!r}"/>'), [0.0],
         'an integral state, an imax'),
    ]
    rows = []
    for name, m, ctrl, needs in cases:
        q = _hold_run(m, ctrl)
        t = m.opt.timestep * np.arange(len(q))
        final = float(np.mean(q[t >= t[-1] - SETTLE_WINDOW + 1e-12]))
        rows.append({'servo': name, 'error_deg': round(-math.degrees(final), 3) + 0.0,
                     'overshoot_pct': 100 * max(0.0, float(np.max(q))) / 0.5, 'needs': needs})
    return rows


LIMIT_RANGE = 0.3
"""rad: the joint range ±0.3 of the joint-limit runs."""

LIMIT_COMMAND = 0.5
"""rad: the command, past the range, so the servo presses the link into its limit."""

LIMIT_SOLREFS = ((0.02, 1.0), (0.01, 1.0), (0.005, 1.0))
"""(timeconst s, dampratio) of ``solreflimit``: MuJoCo's default first, then stiffer."""


@experiment('joint-limit', summary='a joint range is a soft constraint: how far the servo pushes the link past it',
            columns=(('solreflimit', 's'), ('past_limit_deg', '.3f'), ('limit_torque', '.3f', 'N·m')))
def joint_limit(solrefs=LIMIT_SOLREFS) -> list[dict]:
    """The link with the SO-101 servo (kp, kv, forcerange ±2.94, joint damping) and a joint ``range`` of ±0.3 rad,
    commanded to 0.5 rad: the servo presses the link into its upper limit with its clamped 2.94 N·m.

    A limit is a constraint of MuJoCo's soft constraint model, like a contact: its force grows with how far the
    joint is past the range, set by ``solreflimit`` (a time constant and a damping ratio, default 0.02 s and 1) and
    ``solimplimit``. So a pushed joint goes past its range a little. A stiffer time constant helps only down to twice
    the timestep: MuJoCo's ``refsafe`` uses max(timeconst, 2h).

    Returns:
      One row per ``solreflimit``: ``past_limit_deg`` (the angle beyond the range after 2 s, degrees) and
      ``limit_torque`` (the limit's torque on the joint, N·m: the servo's push minus gravity's pull).
    """
    rows = []
    for timeconst, dampratio in solrefs:
        spec = link.link_spec(armature=SO101_ARMATURE)
        spec.compiler.degree = False  # the range below is in rad
        hinge = spec.joint('hinge')
        hinge.range = [-LIMIT_RANGE, LIMIT_RANGE]
        hinge.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        hinge.solref_limit = [timeconst, dampratio]
        hinge.damping[0] = SO101_DAMPING
        servo = spec.actuator('servo')
        servo.set_to_position(kp=SO101_KP, kv=SO101_KV)
        servo.forcerange = list(SO101_FORCERANGE)
        servo.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        m = spec.compile()
        d = mujoco.MjData(m)
        perturb.nudge(d.qpos)
        d.ctrl[0] = LIMIT_COMMAND
        with mj.captured_warnings():
            for _ in range(round(2.0 / m.opt.timestep)):
                mujoco.mj_step(m, d)
        rows.append({'solreflimit': f'{timeconst:g} {dampratio:g}',
                     'past_limit_deg': math.degrees(float(d.qpos[0]) - LIMIT_RANGE),
                     'limit_torque': float(-d.qfrc_constraint[0])})
    return rows


def step_matrix(h: float, w2: float, c: float, c_implicit: float) -> np.ndarray:
    """The 2×2 matrix of one semi-implicit Euler step on ``a = -w2*q - c*v`` (columns: images of (1,0), (0,1)).

    ``v' = v + h*(-w2*q - c*v) / (1 + h*c_implicit)``, ``q' = q + h*v'`` (:func:`physai.laws.sim.semi_implicit_euler`).

    Args:
      h: timestep, s (> 0).
      w2: ω² = kp/I, 1/s² (>= 0).
      c: damping per unit inertia, (kv + damping)/I, 1/s (>= 0).
      c_implicit: the part of c taken implicitly, 1/s, in [0, c].

    Returns:
      (2, 2) the step matrix acting on (q, v).
    """
    checks.positive('h', h, 's')
    checks.nonnegative('w2', w2, '1/s²')
    checks.nonnegative('c', c, '1/s')
    if not (checks.is_real(c_implicit) and 0 <= c_implicit <= c):
        raise ValueError(f'c_implicit must be in [0, c] = [0, {c!r}] 1/s, got {c_implicit!r}')

    from physai.laws.sim import semi_implicit_euler

    def accel(q, v):  # every force explicit; the step divides by 1 + h*c_implicit
        return -w2 * q - c * v

    columns = [semi_implicit_euler(q, v, accel, h, c_implicit) for q, v in ((1.0, 0.0), (0.0, 1.0))]
    return np.array(columns, dtype=float).T


def trace_det_formula(h: float, w2: float, c: float, c_implicit: float) -> tuple[float, float]:
    """Trace and determinant of :func:`step_matrix` by hand, with D = 1 + h·c_i and c_e = c − c_i:
    ``tr = 1 + (1 - h·c_e - h²ω²)/D``, ``det = (1 - h·c_e)/D``."""
    big_d, c_e = 1.0 + h * c_implicit, c - c_implicit
    return 1.0 + (1.0 - h * c_e - h * h * w2) / big_d, (1.0 - h * c_e) / big_d


TRACE_DET_CASES = ((SO101_KP, SO101_ARMATURE), (SO101_KP, 0.005), (SO101_KP, 0.0), (10000.0, SO101_ARMATURE))
"""(kp N·m/rad, armature kg·m²) on the link with the SO-101's kv and joint damping, 5 ms."""


@experiment('trace-determinant',
            summary='1 + trace + det of the step matrix has the sign of the bound minus h^2 w^2',
            columns=(('integrator', 's'), ('kp', '.2f'), ('armature', '.3f'), ('h2w2', '.3f'), ('bound', '.3f'),
                     ('one_plus_tr_plus_det', '.4f'), ('det', '.4f'), ('growth', '.4f'),
                     ('formula_error', '.1e')))
def trace_determinant(cases=TRACE_DET_CASES) -> list[dict]:
    """The stability bound read off the step matrix's trace and determinant (Jury's test for a 2×2 matrix).

    A real 2×2 matrix has both eigenvalues inside the unit circle exactly when ``|det| < 1`` and
    ``|tr| < 1 + det``. For the semi-implicit step ``1 - tr + det = h²ω²/D > 0`` always, ``det < 1`` always,
    ``det > -1`` is the damper's own bound ``h·c_e < 2 + h·c_i``, and
    ``1 + tr + det = (4 + 2h(c_i - c_e) - h²ω²)/D``:
    positive exactly while h²ω² < 4 + 2h(c_i − c_e), the bound of the chapter.

    Returns:
      One row per case and integrator (Euler: joint damping implicit, implicitfast: kv and damping implicit):
      ``h2w2``, ``bound`` (4 + 2h(c_i − c_e)), ``one_plus_tr_plus_det`` and ``det`` of the numerical matrix,
      ``growth`` (spectral radius) and ``formula_error`` (largest difference between the hand formulas for trace
      and determinant and the matrix's, a round-off bound).
    """
    rows = []
    for kp, armature in cases:
        p = so101_servo(armature, kp=kp)
        inertia = p.inertia
        w2, c = kp / inertia, (SO101_KV + SO101_DAMPING) / inertia
        for integrator in ('Euler', 'implicitfast'):
            ci = c_implicit_for(integrator, SO101_KV, SO101_DAMPING, inertia)
            a = step_matrix(p.timestep, w2, c, ci)
            tr, det = float(np.trace(a)), float(np.linalg.det(a))
            tr_f, det_f = trace_det_formula(p.timestep, w2, c, ci)
            h = p.timestep
            rows.append({'integrator': integrator, 'kp': kp, 'armature': armature, 'h2w2': h * h * w2,
                         'bound': 4.0 + 2.0 * h * (ci - (c - ci)), 'one_plus_tr_plus_det': 1.0 + tr + det,
                         'det': det, 'growth': float(np.max(np.abs(np.linalg.eigvals(a)))),
                         'formula_error': robust.roundoff(max(abs(tr - tr_f), abs(det - det_f)))})
    return rows


# --- the step test of the SO-101's elbow, in the model: what a measurement on the real arm is compared with

STEP_TEST_JOINT = 'elbow_flex'
STEP_TEST_SIZE = 0.2  # rad, the commanded step
STEP_TEST_DURATION = 1.0  # s
STEP_TEST_FPS = 30.0  # Hz, LeRobot's recording rate (chapter 4's episodes)


@dataclasses.dataclass(frozen=True)
class JointStep:
    """One joint of Menagerie's SO-101 after a step in its command (the others hold the home pose)."""

    joint: str
    t: np.ndarray
    """(n + 1,) s."""
    q: np.ndarray
    """(n + 1,) the joint's angle, rad."""
    v: np.ndarray
    """(n + 1,) its velocity, rad/s."""
    force: np.ndarray
    """(n,) the torque its actuator applied in each step, N·m."""
    target: float
    """The commanded angle, rad."""
    diverged: bool


def so101_joint_step(joint: str = STEP_TEST_JOINT, step: float = STEP_TEST_SIZE, *,
                     duration: float = STEP_TEST_DURATION, law=None) -> JointStep:
    """Step one joint of Menagerie's SO-101 by ``step`` rad from the home pose; the others keep commanding it.

    With ``law`` None the joint keeps Menagerie's implicit ``<position>`` servo. Otherwise its actuator becomes a
    ``<motor>`` (gain 1, no bias, no clamp) and ``law(q, v, q_target)`` (rad, rad/s, rad → N·m, e.g. the
    ``torque`` method of a :mod:`physai.laws.drives` config) gives its torque from the state at the start of every
    physics step: an explicit actuator, while the other five joints stay implicit.

    Returns:
      A :class:`JointStep`.
    """
    import copy

    from physai.engine.so101 import JOINTS

    checks.one_of('joint', joint, JOINTS)
    checks.finite('step', step, 'rad')
    if not (checks.is_real(duration) and 0 < duration <= 60):
        raise ValueError(f'duration must be in (0, 60] s, got {duration!r}')
    m = copy.copy(load_so101())
    i = next(k for k in range(m.nu)
             if mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[k, 0])) == joint)
    dof, adr = int(m.jnt_dofadr[m.actuator_trnid[i, 0]]), int(m.jnt_qposadr[m.actuator_trnid[i, 0]])
    d = mujoco.MjData(m)
    perturb.nudge(d.qpos)
    home = np.array([m.qpos0[m.jnt_qposadr[m.actuator_trnid[k, 0]]] for k in range(m.nu)])
    target = float(np.clip(home[i] + step, *m.actuator_ctrlrange[i]))
    d.ctrl[:] = np.clip(home, m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1])
    if law is None:
        d.ctrl[i] = target
    else:
        m.actuator_gainprm[i, :] = 0.0
        m.actuator_gainprm[i, 0] = 1.0
        m.actuator_biasprm[i, :] = 0.0
        m.actuator_forcelimited[i] = 0
        m.actuator_ctrllimited[i] = 0
    mujoco.mj_forward(m, d)
    nstep = round(duration / m.opt.timestep)
    q, v, force = np.empty(nstep + 1), np.empty(nstep + 1), np.empty(nstep)
    q[0], v[0] = d.qpos[adr], d.qvel[dof]
    bad = False
    with mj.captured_warnings():
        for k in range(nstep):
            if law is not None:
                d.ctrl[i] = float(law(q[k], v[k], target))
            mujoco.mj_step(m, d)
            force[k] = d.actuator_force[i]
            q[k + 1], v[k + 1] = d.qpos[adr], d.qvel[dof]
            if mj.warned(d) or mj.runaway(v[k + 1]):
                bad = True
                q, v, force = q[:k + 2], v[:k + 2], force[:k + 1]
                break
    return JointStep(joint, m.opt.timestep * np.arange(len(q)), q, v, force, target, bad)


def joint_step_metrics(run: JointStep) -> dict:
    """What a step test reads off a step: ``error_deg`` (command minus the mean of the last 0.2 s), ``rise_ms``
    (10 % to 90 % of the move), ``overshoot_pct``, ``peak_speed`` (rad/s), ``peak_force`` (|N·m|) and
    ``rise_frames`` (how many frames of a ``STEP_TEST_FPS`` recording fall inside the rise)."""
    if run.diverged:
        nan = math.nan
        return {'error_deg': nan, 'rise_ms': nan, 'overshoot_pct': nan, 'peak_speed': nan, 'peak_force': nan,
                'rise_frames': nan}
    final = float(np.mean(run.q[run.t >= run.t[-1] - 0.2 + 1e-9]))
    start = float(run.q[0])
    rise = link.rise_time(run.t, run.q, final)
    progress = (run.q - start) / (final - start)
    return {'error_deg': math.degrees(run.target - final), 'rise_ms': 1e3 * rise,
            'overshoot_pct': 100 * max(0.0, float(np.max(progress)) - 1.0),
            'peak_speed': float(np.max(np.abs(run.v))), 'peak_force': float(np.max(np.abs(run.force))),
            'rise_frames': rise * STEP_TEST_FPS}


@experiment('elbow-step-test', summary="the SO-101 model's elbow after a 0.2 rad step: what a real step test "
                                       'is compared with',
            columns=(('joint', 's'), ('step_rad', '.2f'), ('error_deg', '.3f'), ('rise_ms', '.1f'),
                     ('overshoot_pct', '.1f'), ('peak_speed', '.2f', 'rad/s'), ('peak_force', '.2f', 'N·m'),
                     ('rise_frames', '.1f')))
def elbow_step_test(steps=(STEP_TEST_SIZE, -STEP_TEST_SIZE)) -> list[dict]:
    """The model's side of the elbow step test: Menagerie's SO-101, elbow stepped up and down from home.

    Returns:
      One row per step: ``joint``, ``step_rad`` and :func:`joint_step_metrics`.
    """
    rows = []
    for step in steps:
        row = {'joint': STEP_TEST_JOINT, 'step_rad': step}
        row.update(joint_step_metrics(so101_joint_step(STEP_TEST_JOINT, step)))
        rows.append(row)
    return rows
