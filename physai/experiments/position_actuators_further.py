"""Chapter 1's "Going further": the position actuator used from Python, its traps, and the step test of an elbow.

Each table is a function registered by name (``python -m physai NAME``): the actuator driven from Python
(``use-it``), the XML traps (``actuator-traps``, ``<velocity>`` under Euler in ``velocity-trap``), the cures for
sag and what each costs (``sag-cures``), a soft joint limit (``joint-limit``), the step matrix's trace and
determinant (``trace-determinant``, :func:`step_matrix`) and the model's side of a step test on the SO-101's elbow
(``elbow-step-test``, :func:`so101_joint_step`, which chapter 2 also drives with explicit models).
"""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np

from physai.engine import link, perturb
from physai.laws import checks, robust
from physai.engine.link import LINK_INERTIA, SETTLE_WINDOW
from physai.engine import mj
from physai.engine.mj import diverged
from physai.engine.so101 import load_so101
from physai.experiments.registry import experiment
from physai.laws.stability import c_implicit_for
from physai.experiments.position_actuators import (SO101_ARMATURE, SO101_DAMPING, SO101_FORCERANGE, SO101_FRICTIONLOSS,
                                                   SO101_KP, SO101_KV, so101_servo)


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
