"""Chapters 3 and 4's live panels on the published page: the SO-101 simulated in the reader's browser.

:func:`pd_live` and :func:`sysid_live` write one HTML block each (the layout of
:func:`physai.interface.web.live_html`) that the book's script ``book/_static/physai-live.js`` turns into a live panel
(its classes in ``book/_static/physai-live-arm.js``, its physics in ``physai-live-arm-core.js``), running MuJoCo's
WebAssembly build (MuJoCo 3.3.8) on :func:`arm_xml`, the mesh-free SO-101 of
:func:`physai.engine.so101.load_mesh_free`:

- chapter 3, the panel of :func:`physai.interface.where_pd_runs_panels.pd_panel`: the same controls (controller rate,
  where the PD runs, kp, kv, armature, timestep, integrator), the same two plots (the worst joint's move and hold
  against its command; the growth per controller tick of both backends against the rate) and the same words, with
  the move, ticks and zero-order hold of :func:`physai.engine.hold.hold_responses`;
- chapter 4, the panel of :func:`physai.interface.servo_sysid_panels.sysid_panel`: a recorded episode replayed open
  loop (:func:`physai.engine.sysid.replay`) under kp, kv, forcerange, armature, timestep and integrator, drawn
  against the recording with the error per joint, the sag in held poses and the status words.

The arm in the browser has no geom at all: nothing touches during the move and the hold
(``physai.engine.hold.hold_model``) and chapter 4's replay runs with contacts off, so without the collision boxes
Python MuJoCo 3.17.0 gives the same trajectories bit for bit, each step about a fifth cheaper. MuJoCo 3.3.8 in the
browser compiles the text to the same model, field for field, but its runs agree with 3.17.0's only within a
tolerance: the joints' friction loss is a constraint, and the two versions' solvers stop at its tolerance by
different iterates (``tests/test_web_arm.py`` states the figures: a hold that settles ends within 1e-9 rad; one
that chatters, a chaotic limit cycle, chatters in both).

What the browser cannot run: the ``discrete`` integrator (not in MuJoCo 3.3.8). With it the page shows results
Python MuJoCo 3.17.0 precomputed, labelled as such. Chapter 4's (:func:`sysid_discrete`): the replay at the nearest
kp of a small grid, the other controls at the panel's start, each record checked against replays from starts 1e-9
rad away (a record that moves is stored as its verdict alone). Chapter 3's (:func:`pd_discrete`): a hold below the
critical rate is a chaotic limit cycle, so no single trace of it survives a last-bit change; the page shows the
verdict of an ensemble per rate and backend, in the words of the chapter's twin, beside the growth per tick it
computes itself.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence

import mujoco
import numpy as np
from IPython.display import HTML

from physai.engine import so101
from physai.engine.datasets import Episode
from physai.engine.mj import INTEGRATOR_ENUM, MAX_STEPS
from physai.engine.hold import (DURATION, ENSEMBLE_SIZE, MOVE_TIME, PHYSICS_TIMESTEP, QUIET_P2P, SETTLE_WINDOW,
                                SO101_ARMATURE, SO101_FORCERANGE, SO101_KP, SO101_KV, STANDBY, HoldParams,
                                hold_ensembles, hold_responses, so101_joints)
from physai.engine.so101 import ARM_JOINTS
from physai.engine.sysid import (CHATTER_DEG, ArmServo, ReplayConfig, arm_columns, replay, slim_arm, to_radians)
from physai.experiments.servo_sysid import hold_sag_deg
from physai.experiments.where_pd_runs import RATES_HZ, growth_curve, standby_inertia, worst_growth
from physai.interface.plots import COLORS
from physai.interface.web import BROWSER_INTEGRATORS, PANEL_INTEGRATORS, live_html, pack
from physai.interface.servo_sysid_panels import (PANEL_JOINTS as SYSID_JOINTS, TWIN_KPS, replay_diverged,
                                                 replay_status)
from physai.interface.where_pd_runs_panels import (PANEL_RATES_HZ, PANEL_YLIM_DEG, PANEL_YLIM_WIDE_DEG,
                                                  ensemble_text, pd_note)
from physai.laws import checks
from physai.laws.loop import BACKENDS

PD_TWIN_ID = 'physai-twin-ch3-pd-rate'
"""The HTML id of chapter 3's static twin (:func:`physai.interface.where_pd_runs_panels.pd_twin`)."""

RATE_RANGE_HZ = (10.0, 1000.0)
"""The controller-rate slider's range, Hz (as the kernel's panel)."""

KV_RANGE = (0.0, 10.0)
"""The kv slider's range, N·m·s/rad."""

KP_RANGE = (1.0, 30000.0)
"""The kp slider's range, N·m/rad (:func:`physai.interface.live.common_controls`)."""

ARMATURE_RANGE = (0.0, 0.1)
"""The armature slider's range, kg·m²."""

TIMESTEP_RANGE_MS = (0.5, 20.0)
"""The timestep slider's range, ms."""



# ---------------------------------------------------------------------------------------------------------------
# The arm as MJCF text for MuJoCo 3.3.8


def _num(x) -> str:
    """A float as the shortest text that reads back to the same double (MuJoCo's parser uses strtod)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f'the arm model holds a non-finite number, {x!r}')
    return repr(x) if x != int(x) or abs(x) >= 1e16 else str(int(x))


def _vec(values) -> str:
    return ' '.join(_num(v) for v in np.ravel(values))


def arm_xml() -> str:
    """The SO-101's bodies, joints and actuators as MJCF text that MuJoCo 3.3.8's parser takes, written from the
    compiled model, without any geom.

    Not ``MjSpec.to_xml()``: MuJoCo 3.17 writes numbers to six digits (the compiled body frames and inertias then
    differ from physai's model) and writes attributes 3.3.8 refuses (``input`` on an actuator). Here every number
    is written as the compiled :func:`physai.engine.so101.load_mesh_free` model holds it, each frame relative to its
    parent, every inertia explicit, so MuJoCo 3.17.0 and 3.3.8 both compile the same bodies, joints, actuators and
    options to the last bit (``tests/test_web_arm.py``).

    No geom: nothing touches during chapter 3's move and hold (``tests/test_hold.py`` counts no contact, so physai
    keeps contacts on) and chapter 4's replay turns contacts off, while placing the collision boxes and checking
    them for contact every step costs about a fifth of a step. Without them Python MuJoCo 3.17.0 gives physai's
    trajectories bit for bit (settling, chattering and diverging holds alike). Visual-only parts (materials,
    sites, the camera) are left out too.
    """
    m = so101.load_mesh_free(collision_meshes=False)

    def name(kind, i: int) -> str | None:
        return mujoco.mj_id2name(m, kind, i)

    o = m.opt
    integrator = {int(v): k for k, v in INTEGRATOR_ENUM.items()}[int(o.integrator)]
    lines = ['<mujoco model="so101 bodies and joints (physai)">',
             '  <compiler angle="radian" autolimits="false" boundmass="0" boundinertia="0" '
             'inertiafromgeom="false"/>',
             f'  <option timestep="{_num(o.timestep)}" gravity="{_vec(o.gravity)}" impratio="{_num(o.impratio)}" '
             f'tolerance="{_num(o.tolerance)}" ls_tolerance="{_num(o.ls_tolerance)}" '
             f'iterations="{int(o.iterations)}" ls_iterations="{int(o.ls_iterations)}" '
             f'integrator="{integrator}" '
             f'cone="{("pyramidal", "elliptic")[int(o.cone)]}" '
             f'jacobian="{("dense", "sparse", "auto")[int(o.jacobian)]}" '
             f'solver="{("PGS", "CG", "Newton")[int(o.solver)]}"/>',
             '  <worldbody>']
    if m.nflex or m.ntendon or m.neq or m.npair or m.nexclude or m.nmesh:
        raise ValueError('arm_xml writes bodies, hinges and joint actuators only')

    def body(b: int, depth: int) -> None:
        pad = '  ' * depth
        lines.append(f'{pad}<body name="{name(mujoco.mjtObj.mjOBJ_BODY, b)}" pos="{_vec(m.body_pos[b])}" '
                     f'quat="{_vec(m.body_quat[b])}">')
        lines.append(f'{pad}  <inertial pos="{_vec(m.body_ipos[b])}" quat="{_vec(m.body_iquat[b])}" '
                     f'mass="{_num(m.body_mass[b])}" diaginertia="{_vec(m.body_inertia[b])}"/>')
        for j in range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]):
            if int(m.jnt_type[j]) != int(mujoco.mjtJoint.mjJNT_HINGE):
                raise ValueError('arm_xml writes hinge joints only')
            dof = m.jnt_dofadr[j]
            lines.append(f'{pad}  <joint name="{name(mujoco.mjtObj.mjOBJ_JOINT, j)}" type="hinge" '
                         f'pos="{_vec(m.jnt_pos[j])}" axis="{_vec(m.jnt_axis[j])}" '
                         f'limited="{"true" if m.jnt_limited[j] else "false"}" range="{_vec(m.jnt_range[j])}" '
                         f'margin="{_num(m.jnt_margin[j])}" ref="{_num(m.qpos0[m.jnt_qposadr[j]])}" '
                         f'springref="{_num(m.qpos_spring[m.jnt_qposadr[j]])}" '
                         f'stiffness="{_num(m.jnt_stiffness[j])}" armature="{_num(m.dof_armature[dof])}" '
                         f'damping="{_num(m.dof_damping[dof])}" frictionloss="{_num(m.dof_frictionloss[dof])}" '
                         f'solreflimit="{_vec(m.jnt_solref[j])}" solimplimit="{_vec(m.jnt_solimp[j])}" '
                         f'solreffriction="{_vec(m.dof_solref[dof])}" solimpfriction="{_vec(m.dof_solimp[dof])}"/>')
        for child in range(m.nbody):
            if child != b and m.body_parentid[child] == b:
                body(child, depth + 1)
        lines.append(f'{pad}</body>')

    for b in range(1, m.nbody):
        if m.body_parentid[b] == 0:
            body(b, 2)
    lines.append('  </worldbody>')
    lines.append('  <actuator>')
    for a in range(m.nu):
        if int(m.actuator_trntype[a]) != int(mujoco.mjtTrn.mjTRN_JOINT) or int(m.actuator_dyntype[a]) != 0:
            raise ValueError('arm_xml writes joint actuators without dynamics only')
        joint = name(mujoco.mjtObj.mjOBJ_JOINT, m.actuator_trnid[a, 0])
        lines.append(f'    <general name="{name(mujoco.mjtObj.mjOBJ_ACTUATOR, a)}" joint="{joint}" '
                     f'gear="{_vec(m.actuator_gear[a])}" '
                     f'ctrllimited="{"true" if m.actuator_ctrllimited[a] else "false"}" '
                     f'ctrlrange="{_vec(m.actuator_ctrlrange[a])}" '
                     f'forcelimited="{"true" if m.actuator_forcelimited[a] else "false"}" '
                     f'forcerange="{_vec(m.actuator_forcerange[a])}" '
                     f'gaintype="{("fixed", "affine", "muscle")[int(m.actuator_gaintype[a])]}" '
                     f'gainprm="{_vec(m.actuator_gainprm[a])}" '
                     f'biastype="{("none", "affine", "muscle")[int(m.actuator_biastype[a])]}" '
                     f'biasprm="{_vec(m.actuator_biasprm[a])}"/>')
    lines.append('  </actuator>')
    lines.append('</mujoco>')
    return '\n'.join(lines) + '\n'


# ---------------------------------------------------------------------------------------------------------------
# The panel's configuration and its block


PD_DISCRETE_RATES_HZ = tuple(float(r) for r in RATES_HZ)
"""Hz: the controller rates of chapter 3's precomputed ``discrete`` ensembles, the chapter's pd-rate table's (five
rates: an ensemble of a chattering hold is 64 runs, and a dozen rates would take the chapter's cell past 20 s)."""


def pd_discrete(*, kp: float = SO101_KP, kv: float = SO101_KV, armature: float = SO101_ARMATURE,
                timestep: float = PHYSICS_TIMESTEP) -> dict:
    """Chapter 3's ``discrete`` holds, which MuJoCo 3.3.8 in the browser cannot run, precomputed by Python MuJoCo
    as the chapter's twin reports a hold: as an ensemble (:func:`physai.engine.hold.hold_ensembles`, runs from
    nearby starts), in the twin's words (:func:`physai.interface.where_pd_runs_panels.ensemble_text`), which
    survive a last-bit change where one run's trace would not (below the critical rate the hold is a chaotic
    limit cycle).

    Returns ``rates`` (:data:`PD_DISCRETE_RATES_HZ`), the ``settings`` (kp, kv, armature, timestep) and ``words``:
    for each rate, each backend's line (rate-major, in ``backends`` order) and its state (``still``,
    ``chatters``, ``mixed`` or ``diverged``).
    """
    params = [HoldParams(rate_hz=r, backend=b, kp=kp, kv=kv, armature=armature, timestep=timestep,
                         integrator='discrete') for r in PD_DISCRETE_RATES_HZ for b in BACKENDS]
    ensembles = hold_ensembles(params, n=ENSEMBLE_SIZE)
    return {'rates': list(PD_DISCRETE_RATES_HZ), 'backends': list(BACKENDS), 'pythonMujoco': mujoco.__version__,
            'settings': {'kp': kp, 'kv': kv, 'armature': armature, 'timestep': timestep},
            'words': [{'text': ensemble_text(e), 'state': e.state} for e in ensembles]}


@functools.lru_cache(maxsize=4)
def _pd_discrete_shared(kp: float, kv: float, armature: float, timestep: float) -> dict:
    return pd_discrete(kp=kp, kv=kv, armature=armature, timestep=timestep)


def pd_config(*, rate_hz: float = 50.0, backend: str = 'in-loop', kp: float = SO101_KP, kv: float = SO101_KV,
              armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP, integrator: str = 'implicitfast',
              twin: str | None = PD_TWIN_ID) -> dict:
    """Everything chapter 3's live panel needs in the browser, as plain JSON-ready data.

    Args:
      rate_hz, backend, kp, kv, armature, timestep, integrator: the controls' start and reset values (SI units, as
        :func:`physai.interface.where_pd_runs_panels.pd_panel`'s), each inside its slider's range.
      twin: the HTML id of the static twin the panel replaces when MuJoCo loads, or None.
    """
    def within(name, value, lo, hi, unit, scale=1.0):
        if not (checks.is_real(value) and lo <= value * scale <= hi):
            raise ValueError(f'{name} must be in [{lo:g}, {hi:g}] {unit} (the slider), got {value!r}')

    within('rate_hz', rate_hz, *RATE_RANGE_HZ, 'Hz')
    checks.one_of('backend', backend, BACKENDS)
    within('kp', kp, *KP_RANGE, 'N·m/rad')
    within('kv', kv, *KV_RANGE, 'N·m·s/rad')
    within('armature', armature, *ARMATURE_RANGE, 'kg·m²')
    within('timestep', timestep, *TIMESTEP_RANGE_MS, 'ms', scale=1e3)
    if integrator not in PANEL_INTEGRATORS:
        raise ValueError(f'integrator must be one of {", ".join(PANEL_INTEGRATORS)}, got {integrator!r}')
    if twin is not None and not (isinstance(twin, str) and twin.replace('-', '').isalnum()):
        raise ValueError(f'twin must be an HTML id (letters, digits, -) or None, got {twin!r}')
    base = so101.load_mesh_free(collision_meshes=False)
    return {
        'key': 'pd', 'twin': twin, 'xml': arm_xml(), 'pythonMujoco': mujoco.__version__, 'colors': COLORS,
        'hold': {'standby': list(STANDBY), 'moveTime': MOVE_TIME, 'duration': DURATION,
                 'settleWindow': SETTLE_WINDOW, 'quietP2P': QUIET_P2P, 'joints': list(so101_joints()),
                 'forcerange': SO101_FORCERANGE},
        'growth': {'rates': list(PANEL_RATES_HZ), 'inertia': standby_inertia(0.0).tolist(),
                   'damping': float(base.dof_damping[0])},
        'defaults': {'rateHz': rate_hz, 'backend': backend, 'kp': kp, 'kv': kv, 'armature': armature,
                     'timestep': timestep, 'integrator': integrator},
        'ranges': {'rateHz': RATE_RANGE_HZ, 'kp': KP_RANGE, 'kv': KV_RANGE, 'armature': ARMATURE_RANGE,
                   'timestepMs': TIMESTEP_RANGE_MS},
        'ylimDeg': [PANEL_YLIM_DEG, PANEL_YLIM_WIDE_DEG],
        'backends': BACKENDS, 'integrators': PANEL_INTEGRATORS, 'browserIntegrators': BROWSER_INTEGRATORS,
        'discrete': copy.deepcopy(_pd_discrete_shared(float(kp), float(kv), float(armature), float(timestep))),
    }


def pd_live(*, rate_hz: float = 50.0, backend: str = 'in-loop', kp: float = SO101_KP, kv: float = SO101_KV,
            armature: float = SO101_ARMATURE, timestep: float = PHYSICS_TIMESTEP, integrator: str = 'implicitfast',
            twin: str | None = PD_TWIN_ID) -> HTML:
    """Chapter 3's live panel for the published page: the SO-101 holding its standby pose with the PD in the loop or
    in the step, simulated by MuJoCo in the reader's browser.

    Show it in the cell after :func:`~physai.interface.where_pd_runs_panels.pd_twin`: on the page the panel takes
    the twin's place once MuJoCo has loaded (at the reader's first touch of the twin). Arguments as
    :func:`pd_config`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.where_pd_runs_panels.pd_panel`).
    """
    config = pd_config(rate_hz=rate_hz, backend=backend, kp=kp, kv=kv, armature=armature, timestep=timestep,
                       integrator=integrator, twin=twin)
    return live_html(config, title='Where the PD runs, live: MuJoCo in your browser')


def hold_reference(settings: Sequence[dict]) -> list[dict]:
    """Python MuJoCo's hold runs for settings as the page names them (``rateHz``, ``backend``, ``kp``, ``kv``,
    ``armature``, ``timestep``, ``integrator``): the joint angles q, (nstep, 6) rad, the worst joint, its
    peak-to-peak and tone, whether it diverged, the growth per tick at the rate, and the panel's note (the tests
    compare the page's runs with these)."""
    params = [HoldParams(rate_hz=s['rateHz'], backend=s['backend'], kp=s['kp'], kv=s['kv'], armature=s['armature'],
                         timestep=s['timestep'], integrator=s['integrator']) for s in settings]
    out = []
    for s, r in zip(settings, hold_responses(params, nthread=1)):
        growth = worst_growth(rate_hz=s['rateHz'], backend=s['backend'], kp=s['kp'], kv=s['kv'],
                              armature=s['armature'], timestep=s['timestep'], integrator=s['integrator'])
        curve = growth_curve(PANEL_RATES_HZ, backend=s['backend'], kp=s['kp'], kv=s['kv'], armature=s['armature'],
                             timestep=s['timestep'], integrator=s['integrator'])
        out.append({'setting': s, 'q': r.q, 'worst': r.worst, 'diverged': r.diverged,
                    'p2p': r.p2p_rad, 'chatterHz': r.chatter_hz, 'growth': growth, 'curve': curve,
                    'note': pd_note(r, growth, rate_hz=s['rateHz'], backend=s['backend'])})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Chapter 4: a recorded episode replayed under the servo on the sliders

SYSID_TWIN_ID = 'physai-twin-sysid-kp'
"""The HTML id of chapter 4's static twin (:func:`physai.interface.servo_sysid_panels.sysid_twin`)."""

SYSID_KV_RANGE = (0.001, 30.0)
"""The kv slider's range, N·m·s/rad (log, as the kernel's panel)."""

SYSID_FORCERANGE_RANGE = (0.2, 5.0)
"""The forcerange slider's range, N·m."""

SYSID_DISCRETE_KPS = TWIN_KPS
"""N·m/rad: the kp grid of chapter 4's precomputed ``discrete`` replays (the static twin's, 1 to 1000)."""

SYSID_DISCRETE_STEPS = {'sim': 0.01, 'bars': 0.01}
"""deg: the resolution of a precomputed replay as stored: the two plotted joints' traces (packed, a hundredth of
a degree, under a pixel of the overlay) and the bars of error and sag per joint."""

CHAOS_NUDGE = 1e-9
"""rad: a precomputed replay is made again from starts this far away on every joint, both ways; a record that
changes is a chaotic replay, stored as its verdict alone."""


def sysid_config(episode: Episode, base: ArmServo, *, joints: Sequence[str] = SYSID_JOINTS,
                 timestep: float = 0.005, integrator: str = 'implicitfast',
                 twin: str | None = SYSID_TWIN_ID) -> dict:
    """Everything chapter 4's live panel needs in the browser: the arm, the recorded episode and the servo.

    The episode goes in whole: its commands as the model's ctrl (rad, every joint,
    :func:`physai.engine.sysid.to_radians`), its start, and its commands and measured joints in degrees for the
    plots, each number as recorded (the chapter's held-out episode, 373 frames: 115 KB of JSON).

    Args:
      episode: the recording to replay (physai.engine.datasets.Episode).
      base: the servo the sliders start from and reset to (kp, kv, forcerange, armature on the sliders; damping and
        frictionloss stay at base's, as in :func:`physai.interface.servo_sysid_panels.sysid_panel`).
      joints: the two arm joints the overlay shows.
      timestep, integrator: the replay's start and reset values.
      twin: the HTML id of the static twin the panel replaces, or None.
    """
    if not isinstance(episode, Episode):
        raise TypeError(f'episode must be a physai.engine.datasets.Episode, got {type(episode).__name__}')
    if not isinstance(base, ArmServo):
        raise TypeError(f'base must be a physai.engine.sysid.ArmServo, got {type(base).__name__}')
    if (isinstance(joints, str) or len(joints) != 2 or any(j not in ARM_JOINTS for j in joints)):
        raise ValueError(f'joints must be two of {", ".join(ARM_JOINTS)}, got {joints!r}')
    ReplayConfig(timestep=timestep, integrator='implicitfast')  # checks the timestep
    if not TIMESTEP_RANGE_MS[0] <= timestep * 1e3 <= TIMESTEP_RANGE_MS[1]:
        raise ValueError(f'timestep must be in [{TIMESTEP_RANGE_MS[0]}, {TIMESTEP_RANGE_MS[1]}] ms (the slider), '
                         f'got {timestep!r} s')
    if integrator not in PANEL_INTEGRATORS:
        raise ValueError(f'integrator must be one of {", ".join(PANEL_INTEGRATORS)}, got {integrator!r}')
    if twin is not None and not (isinstance(twin, str) and twin.replace('-', '').isalnum()):
        raise ValueError(f'twin must be an HTML id (letters, digits, -) or None, got {twin!r}')
    _replay_steps_fit(episode, timestep)
    cols = arm_columns(episode.joints)
    u = to_radians(episode.action, episode.joints)
    start = to_radians(episode.state[:1], episode.joints)[0]
    low, high = np.degrees(slim_arm().actuator_ctrlrange[:len(ARM_JOINTS)]).T
    model_joints = list(so101_joints())
    clamp = lambda lo, v, hi: min(max(v, lo), hi)  # noqa: E731
    return {
        'key': 'sysid', 'twin': twin, 'xml': arm_xml(), 'pythonMujoco': mujoco.__version__, 'colors': COLORS,
        'episode': {'index': int(episode.index), 'fps': float(episode.fps), 'nframe': int(episode.nframe),
                    'u': u.ravel().tolist(), 'start': start.tolist(),
                    'actionDeg': episode.action[:, cols].ravel().tolist(),
                    'stateDeg': episode.state[:, cols].ravel().tolist()},
        'armJoints': list(ARM_JOINTS), 'armIndex': [model_joints.index(j) for j in ARM_JOINTS],
        'joints': list(joints), 'chatterDeg': CHATTER_DEG, 'ctrlLowDeg': low.tolist(), 'ctrlHighDeg': high.tolist(),
        'base': {'kp': base.kp, 'kv': base.kv, 'forcerange': base.forcerange, 'damping': base.damping,
                 'frictionloss': base.frictionloss, 'armature': base.armature},
        'defaults': {'kp': clamp(*KP_RANGE[:1], base.kp, KP_RANGE[1]),
                     'kv': clamp(SYSID_KV_RANGE[0], base.kv, SYSID_KV_RANGE[1]),
                     'forcerange': clamp(SYSID_FORCERANGE_RANGE[0], base.forcerange, SYSID_FORCERANGE_RANGE[1]),
                     'armature': min(base.armature, ARMATURE_RANGE[1]), 'timestep': timestep,
                     'integrator': integrator},
        'ranges': {'kp': KP_RANGE, 'kv': SYSID_KV_RANGE, 'forcerange': SYSID_FORCERANGE_RANGE,
                   'armature': ARMATURE_RANGE, 'timestepMs': TIMESTEP_RANGE_MS},
        'integrators': PANEL_INTEGRATORS, 'browserIntegrators': BROWSER_INTEGRATORS,
        'discrete': sysid_discrete(episode, base, joints=joints, timestep=timestep),
    }


def _rounded(values, step: float) -> list:
    """Values in whole ``step``s (None where not finite), as the page draws them."""
    digits = max(0, -math.floor(math.log10(step)))
    return [round(round(float(v) / step) * step, digits) if math.isfinite(v) else None for v in values]


def _sysid_record(servos: Sequence[ArmServo], episode: Episode, joints: Sequence[str], config: ReplayConfig,
                  offsets: Sequence[float]) -> list[dict]:
    """The replays of ``episode`` under each servo from its start moved by the offset (rad), each as the page
    stores it: the two plotted joints packed, the error and sag per joint, the status words."""
    cols = [ARM_JOINTS.index(j) for j in joints]
    out = []
    for row in replay(servos, [episode], config=config, nthread=1, offsets=offsets):
        rep = row[0]
        sag, _ = hold_sag_deg(rep)
        diverged, status = replay_diverged(rep), replay_status(rep)
        step = SYSID_DISCRETE_STEPS['sim']
        out.append({'sim': [pack([float(v) if math.isfinite(v) else None for v in rep.sim_deg[:, c]], step)
                            for c in cols],
                    'jointMae': _rounded(rep.joint_mae_deg, SYSID_DISCRETE_STEPS['bars']),
                    'sag': _rounded(sag, SYSID_DISCRETE_STEPS['bars']), 'status': status, 'diverged': diverged,
                    'chatters': bool(rep.chatters) and not diverged})
    return out


def sysid_discrete(episode: Episode, base: ArmServo, *, joints: Sequence[str] = SYSID_JOINTS,
                   timestep: float = 0.005) -> dict:
    """Chapter 4's ``discrete`` replays, which MuJoCo 3.3.8 in the browser cannot run, precomputed by Python MuJoCo
    for the page: ``episode`` under :data:`SYSID_DISCRETE_KPS`, kv, forcerange and armature at the panel's defaults
    (:func:`sysid_config`), at ``timestep``.

    A stored figure must survive a last-bit change: each replay is made three times, from the recorded start and
    from starts :data:`CHAOS_NUDGE` rad away both ways, and a record that changes is stored as its verdict alone
    (``chaotic``, the status's first word), which the page shows instead of one draw of a chaotic replay. The
    recording's own sag per joint is stored once (``sagReal``).
    """
    defaults = {'kv': min(max(SYSID_KV_RANGE[0], base.kv), SYSID_KV_RANGE[1]),
                'forcerange': min(max(SYSID_FORCERANGE_RANGE[0], base.forcerange), SYSID_FORCERANGE_RANGE[1]),
                'armature': min(base.armature, ARMATURE_RANGE[1])}
    servos = [ArmServo(kp=kp, kv=defaults['kv'], forcerange=defaults['forcerange'], damping=base.damping,
                       frictionloss=base.frictionloss, armature=defaults['armature']) for kp in SYSID_DISCRETE_KPS]
    config = ReplayConfig(timestep=timestep, integrator='discrete')
    n = len(servos)
    runs = _sysid_record(servos * 3, episode, joints, config, [0.0] * n + [CHAOS_NUDGE] * n + [-CHAOS_NUDGE] * n)
    records = []
    for k in range(n):
        record = runs[k]
        if runs[n + k] != record or runs[2 * n + k] != record:
            record = {'chaotic': True, 'status': f"{record['status'].split(' ')[0]} (chaotic: no single replay is "
                                                 'stored)', 'diverged': record['diverged']}
        records.append(record)
    real = replay(servos[:1], [episode], config=ReplayConfig(timestep=timestep), nthread=1)[0][0]
    return {'kp': list(SYSID_DISCRETE_KPS), 'settings': dict(defaults, timestep=timestep),
            'steps': SYSID_DISCRETE_STEPS, 'joints': list(joints), 'pythonMujoco': mujoco.__version__,
            'sagReal': _rounded(hold_sag_deg(real)[1], SYSID_DISCRETE_STEPS['bars']), 'runs': records}


def _replay_steps_fit(episode: Episode, timestep: float) -> None:
    """``episode`` must be a replay the page can run at every timestep of the slider: 2 frames or more, finite
    numbers, at most ``mj.MAX_STEPS`` physics steps at the smallest timestep."""
    if episode.nframe < 2:
        raise ValueError(f'episode must have at least 2 frames to replay, got {episode.nframe}')
    if not (np.all(np.isfinite(episode.action)) and np.all(np.isfinite(episode.state))):
        raise ValueError(f'episode {episode.index} action and state must be finite')
    steps = (episode.nframe - 1) * ReplayConfig(timestep=TIMESTEP_RANGE_MS[0] / 1e3).substeps(episode.fps)
    if steps > MAX_STEPS:
        raise ValueError(f'episode must take at most {MAX_STEPS:,} physics steps at the smallest timestep, got '
                         f'{steps:,} ({episode.nframe} frames)')


def sysid_live(episode: Episode, base: ArmServo, *, joints: Sequence[str] = SYSID_JOINTS, timestep: float = 0.005,
               integrator: str = 'implicitfast', twin: str | None = SYSID_TWIN_ID) -> HTML:
    """Chapter 4's live panel for the published page: ``episode`` replayed open loop under the servo on the sliders
    (kp, kv, forcerange, armature, timestep, integrator), simulated by MuJoCo in the reader's browser and drawn
    against the recording.

    Show it in the cell after :func:`~physai.interface.servo_sysid_panels.sysid_twin`, with the same episode and
    servo. Arguments as :func:`sysid_config`. In Jupyter it shows nothing (the kernel's own panel is
    :func:`~physai.interface.servo_sysid_panels.sysid_panel`).
    """
    config = sysid_config(episode, base, joints=joints, timestep=timestep, integrator=integrator, twin=twin)
    return live_html(config, title='Replay against the recording, live: MuJoCo in your browser')


def replay_reference(episode: Episode, servos: Sequence[dict], *, timestep: float, integrator: str) -> list[dict]:
    """Python MuJoCo's replays of ``episode`` for servos as the page names them (kp, kv, forcerange, damping,
    frictionloss, armature): the simulated arm joints (nframe, 5) degrees, the figures and the status words of
    :func:`physai.interface.servo_sysid_panels.sysid_panel` (the tests compare the page's replays with these)."""
    arms = [ArmServo(**{k: s[k] for k in ('kp', 'kv', 'forcerange', 'damping', 'frictionloss', 'armature')})
            for s in servos]
    out = []
    for row in replay(arms, [episode], config=ReplayConfig(timestep=timestep, integrator=integrator), nthread=1):
        rep = row[0]
        sag, real_sag = hold_sag_deg(rep)
        out.append({'simDeg': rep.sim_deg, 'mae': rep.mae_deg, 'jointMae': rep.joint_mae_deg, 'diverged': rep.diverged,
                    'chatter': rep.chatter_deg, 'sag': sag, 'sagReal': real_sag, 'status': replay_status(rep)})
    return out
