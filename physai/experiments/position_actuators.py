"""Chapter 1's experiments: the link on a ``<position>`` servo, MuJoCo's SO-101 servo, and the exercises' answers.

Every table of the chapter is a function registered by name (``python -m physai NAME``): the force law against
``qfrc_actuator`` (``actuator-laws``), the link's constants (``link``), our servo loop against ``mj_step``
(``servo-loop``), growth per step (``growth``), sag and rise against kp (``kp-sweep``), the SO-101 servo with less
armature (``armature-sweep``, its clamped Euler column a 256-run ensemble) and more kp (``kp-limit``), the smallest
stable armature (``armature-limit``), Menagerie's SO-101 servos (``so101``, :func:`so101_mode_h_omega`, and
``so101-no-armature``, an ensemble per variant) and the exercises (``motor-hold``, ``gear-sag``). The
panel's physics is :mod:`physai.experiments.servo_panel` and the "Going further" section's tables are
:mod:`physai.experiments.position_actuators_further`.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from physai.engine import link, perturb, so101
from physai.laws import checks, robust
from physai.engine.link import LINK_INERTIA, SETTLE_WINDOW, ServoParams, TAU_G, step_responses
from physai.engine import mj
from physai.engine.mj import diverged
from physai.engine.so101 import ARMATURE_CHECK_FINE_TIMESTEP, load_so101, so101_hold_windows
from physai.experiments import registry
from physai.experiments.registry import experiment
from physai.laws.sim import actuator_force, kv_from_dampratio, servo_loop, servo_sag
from physai.laws.stability import (armature_at_h_omega, c_implicit_for, critical_armature, integrator_growth,
                                   is_stable_linear)


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

SO101_HOLD_LONG = 30.0
"""s: the second length at which ``so101-no-armature`` reads the runs without armature (their first 3 s are the
table's runs): the link's clamped chatter is mostly over by then (``chatter-survival``), the arm's is not."""

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
        lengths = (so101.ARMATURE_CHECK_DURATION,) + ((SO101_HOLD_LONG,) if name == 'no_armature' else ())
        runs = [so101_hold_windows(lengths, offset=k * SO101_HOLD_SPREAD, **kwargs) for k in range(n)]
        if any(bad for _, bad in runs):
            raise RuntimeError(f'so101_without_armature: a run of {name} diverged')
        p2p[name] = np.array([run[0] for run, _ in runs])  # (n, nu) degrees
        if name == 'no_armature':
            p2p['no_armature_long'] = np.array([run[1] for run, _ in runs])
    m = load_so101()
    rows = []
    for i in range(m.nu):
        verdict = {name: chatter_verdict(runs[:, i]) for name, runs in p2p.items()}
        low, high = chatter_range(p2p['no_armature'][:, i])
        rows.append({'joint': mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[i, 0])),
                     'shipped': verdict['shipped'], 'no_armature': verdict['no_armature'],
                     'no_armature_p2p_low': low, 'no_armature_p2p_high': high,
                     'no_armature_at_30s': verdict['no_armature_long'],
                     'no_armature_unclamped': verdict['no_armature_unclamped'],
                     'no_armature_1ms': verdict['no_armature_1ms']})
    return rows


def _register_hold() -> None:

    experiment('so101-no-armature',
               summary='the SO-101 model with its armature dropped: does it chatter after a step, per joint',
               columns=(('joint', 's'), ('shipped', 's'), ('no_armature', 's'), ('no_armature_p2p_low', '.1g', '°'),
                        ('no_armature_p2p_high', '.1g', '°'), ('no_armature_at_30s', 's'), ('no_armature_unclamped', 's'),
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


CHATTER_CHECKS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
"""s: the lengths at which :func:`clamped_chatter` looks whether each run still moves; a run friction has caught is
not stepped further (the runs are the 3 s step responses, cut short where nothing is left to see)."""


def clamped_chatter(armature: float, *, n: int = CHATTER_ENSEMBLE) -> tuple[str, float, float]:
    """Does Euler with the servo's forcerange still chatter at the end of the 3 s run at this armature? An
    ensemble's answer.

    Runs ``n`` step responses from starts ``k*CHATTER_SPREAD`` rad apart (k = 0 .. n-1). A run chatters when its
    peak-to-peak over the settle window exceeds ``CHATTER_P2P_DEG``; otherwise the joint's friction loss caught it.
    The share depends on how long the runs are (:func:`chatter_survival` runs them to 100 s): this is the share at
    3 s, the length of every run of the table.

    Returns:
      ``(verdict, p2p, share)``: ``'never'``, ``'sometimes'`` or ``'always'``; the median peak-to-peak of the
      runs that chatter, degrees, to one decimal (0.0 when none does); the share of runs that chatter, which
      moves from one processor to another and is not printed.
    """
    params = [so101_servo(armature, integrator='Euler', forcerange=SO101_FORCERANGE)] * n
    starts = -0.5 + CHATTER_SPREAD * np.arange(n)
    run = link.moving_at(params, CHATTER_CHECKS, p2p_rad=math.radians(CHATTER_P2P_DEG), q0=starts)
    chatter = run.moving[:, -1]
    p2p = np.degrees(run.p2p_rad[:, -1])
    verdict = 'never' if not chatter.any() else 'always' if chatter.all() else 'sometimes'
    median = round(float(np.median(p2p[chatter])), 1) if chatter.any() else 0.0
    return verdict, median, float(chatter.mean())


SURVIVAL_ARMATURES = (0.002, 0.0)
"""kg·m²: the armatures of ``chatter-survival``, the first and the last at which the clamped Euler run sometimes
still chatters at 3 s."""

SURVIVAL_ENSEMBLE = 64
"""Runs per armature of ``chatter-survival``, from starts ``k*CHATTER_SPREAD`` apart."""

SURVIVAL_LENGTHS = (1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 70.0, 100.0)
"""s: the run lengths at which ``chatter-survival`` counts the runs still chattering (its figure draws them all)."""

SURVIVAL_SHOWN = (3.0, 30.0, 100.0)
"""s: the run lengths the table shows: the chapter's 3 s, and ten and thirty times longer."""

HALF_CAUGHT_GRID = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
"""s: the 1-2-5 run lengths between which ``chatter-survival`` places the time by which half the runs are caught."""

SHARE_BINS = ((0.0, '0'), (0.25, '<25%'), (0.75, '25-75%'), (1.0, '>75%'))
"""The share of runs still chattering as the table prints it, (upper edge, text): none, under a quarter, a quarter to
three quarters (both included), more than three quarters (all included). Bins this wide hold from one draw of a 64-run ensemble to the next where the
share is not near their edges: ``tests/test_position_actuators.py`` checks the table on ten draws."""


SHARE_WORDS = {'0': 'none', '<25%': 'under a quarter', '25-75%': 'a quarter to three quarters',
               '>75%': 'over three quarters'}
"""Each bin of :data:`SHARE_BINS` in the words of the chapter's prose."""


def share_bin(count: int, n: int) -> str:
    """The bin of :data:`SHARE_BINS` that holds ``count`` of ``n`` runs."""
    if not (isinstance(count, (int, np.integer)) and isinstance(n, (int, np.integer)) and 0 <= count <= n and n > 0):
        raise ValueError(f'count must be a whole number in [0, n] of n > 0 runs, got count={count!r}, n={n!r}')
    if count == 0:
        return SHARE_BINS[0][1]
    share = count / n
    if share < SHARE_BINS[1][0]:
        return SHARE_BINS[1][1]
    return SHARE_BINS[2][1] if share <= SHARE_BINS[2][0] else SHARE_BINS[3][1]


def half_caught(survival: link.Survival) -> str:
    """``'a-b'``: the run lengths of :data:`HALF_CAUGHT_GRID`, s, between which the number of runs still chattering
    first falls to half the ensemble or below (``'>100'`` when it never does within the runs)."""
    counts = dict(zip(survival.lengths, survival.count()))
    n = survival.moving.shape[0]
    before = 0.0
    for length in HALF_CAUGHT_GRID:
        if counts[length] <= n / 2:
            return f'{before:g}-{length:g}'
        before = length
    return f'>{before:g}'


@registry.cached(maxsize=4)
def chatter_survival(armature: float, *, n: int = SURVIVAL_ENSEMBLE) -> link.Survival:
    """How many clamped Euler runs still chatter after each run length of :data:`SURVIVAL_LENGTHS`, at this armature.

    The runs of :func:`clamped_chatter`'s ensemble (``n`` starts ``k*CHATTER_SPREAD`` rad apart), run to 100 s
    (:func:`physai.engine.link.moving_at`): a run friction has caught stays caught, so it is not stepped further.

    Returns:
      A :class:`physai.engine.link.Survival`.
    """
    params = [so101_servo(armature, integrator='Euler', forcerange=SO101_FORCERANGE)] * n
    return link.moving_at(params, SURVIVAL_LENGTHS, p2p_rad=math.radians(CHATTER_P2P_DEG),
                          q0=-0.5 + CHATTER_SPREAD * np.arange(n))


@experiment('chatter-survival', summary='the clamped Euler chatter on the link: share of runs still chattering, '
                                        'against run length',
            columns=(('armature', '.3f'), ('runs', 'd'), ('at_3s', 's'), ('at_30s', 's'), ('at_100s', 's'),
                     ('half_caught_s', 's')))
def chatter_survival_table() -> list[dict]:
    """The clamped Euler runs of ``armature-sweep`` run to 100 s (:func:`chatter_survival`): per armature of
    :data:`SURVIVAL_ARMATURES`, the share still chattering at each length of :data:`SURVIVAL_SHOWN` (a bin of
    :data:`SHARE_BINS`) and the run lengths between which half the runs have been caught (:func:`half_caught`)."""
    rows = []
    for armature in SURVIVAL_ARMATURES:
        survival = chatter_survival(armature)
        counts = dict(zip(survival.lengths, survival.count()))
        n = survival.moving.shape[0]
        rows.append({'armature': armature, 'runs': n,
                     **{f'at_{length:g}s': share_bin(int(counts[length]), n) for length in SURVIVAL_SHOWN},
                     'half_caught_s': half_caught(survival)})
    return rows


@experiment('armature-sweep', summary='SO-101 servo with less and less armature under three integrators',
            columns=(('armature', '.3f'), ('inertia', '.5f'), ('h_omega', '.3f'), ('euler', 's'),
                     ('implicitfast', 's'), ('discrete', 's'), ('euler_clamped_at_3s', 's'),
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
                     'euler_clamped_at_3s': chatters, 'euler_clamped_p2p_deg': p2p})
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
