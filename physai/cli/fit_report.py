"""``python -m physai fit-servo``'s outputs: the fitted servo written into Menagerie's SO-101 as MJCF, and the report.

:func:`write_mjcf` writes Menagerie's SO-101 with the fitted servo as a default class (``SERVO_CLASS``, and one class
per joint with ``per_joint``), a command delay as each actuator's MuJoCo ``delay`` with a ``ctrl`` history, and
calibration offsets as a ``<general>`` actuator's bias (MuJoCo has no offset attribute on ``<position>``); its header
comment says where the numbers come from. :func:`report` gathers what the identification found
(:class:`physai.cli.identify.Identification`) into a dict that :func:`report_json` and :func:`report_text` print.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import re

import mujoco
import mujoco.batch
import numpy as np

from physai.engine import arm_replay, firmware, servo_models, so101, sysid
from physai.engine.datasets import index_ranges as _ranges
from physai.engine.so101 import ARM_JOINTS, JOINTS
from physai.engine.arm_replay import ArmServo
from physai.cli import outputs
from physai.experiments import gripper as grasp, servo_sysid, servo_truth
from physai.experiments.registry import format_table
from physai.laws import servo_gain, sts3215
from physai.cli.identify import (BOUND_MARGIN, COST_RISE, PINNED_RATIO, SPREAD_KEYS, START, Identification, findings,
                                 heldout_errors, lag_at_rate, lag_rate_sentence, ridge_summary, spread, three_digits)


SERVO_CLASS = 'fitted_servo'
"""The default class of the written file that holds the fitted servo (a child of Menagerie's ``sts3215``)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Firmware:
    """The STS3215 firmware elements ``fit-servo`` writes on top of the fitted spring (chapter 6); all off by default,
    as chapter 6's ablation found none of them told apart from the spring on its recording."""

    p_register: int | None = None
    """``P_Coefficient``: with ``supply_voltage``, kp and forcerange from the registers (kv keeps the fitted lag)."""
    supply_voltage: float | None = None
    """V (default 7.4 when only ``p_register`` is given)."""
    goal_speed: int = 0
    """``Goal_Speed``, steps/s: written as MuJoCo ``pid`` actuators with ``slewmax`` (0: none)."""
    dead_zone: int = 0
    """Dead zone register, steps: ``frictionloss += kp*delta`` (0: none)."""
    play_deg: float = 0.0
    """Backlash, degrees: a play hinge on each arm joint (0: none)."""

    def __post_init__(self):
        sts3215.Settings(p_register=servo_gain.LEROBOT_SO101_P if self.p_register is None else self.p_register,
                         supply_voltage=7.4 if self.supply_voltage is None else self.supply_voltage,
                         goal_speed=self.goal_speed, dead_zone=self.dead_zone, backlash_deg=self.play_deg)

    @property
    def registers(self) -> bool:
        """kp and forcerange come from the P register and the supply."""
        return self.p_register is not None or self.supply_voltage is not None

    @property
    def settings(self) -> sts3215.Settings:
        """The registers as :class:`sts3215.Settings` (LeRobot's P = 16 and BAM's 7.4 V where not given)."""
        return sts3215.Settings(p_register=servo_gain.LEROBOT_SO101_P if self.p_register is None
                                else self.p_register, supply_voltage=7.4 if self.supply_voltage is None
                                else self.supply_voltage, goal_speed=self.goal_speed, dead_zone=self.dead_zone,
                                backlash_deg=self.play_deg)

    @property
    def any(self) -> bool:
        """Some element is on."""
        return self.registers or bool(self.goal_speed or self.dead_zone or self.play_deg)

    def servo(self, fitted: ArmServo) -> ArmServo:
        """The servo written: the fitted one, with kp and forcerange from the registers when given (kv moved so the
        lag (kv + damping)/kp stays the fitted one) and the dead band's friction added."""
        s = self.settings
        out = fitted
        if self.registers:
            kv = max(fitted.lag_ms / 1e3 * s.kp - fitted.damping, 0.0)
            out = dataclasses.replace(out, kp=s.kp, kv=kv, forcerange=s.forcerange)
        if self.dead_zone:
            out = dataclasses.replace(out, frictionloss=out.frictionloss + sts3215.dead_band_friction(out.kp,
                                                                                                       s.dead_band))
        return out


# --------------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------------

def write_mjcf(ident: Identification, path: str | pathlib.Path, *, replace: bool = True,
               elements: Firmware = Firmware()) -> pathlib.Path:
    """Write Menagerie's SO-101 with the fitted servo, loadable with ``mujoco.MjModel.from_xml_path``.

    The file is Menagerie's ``so101.xml`` as ``MjSpec`` reads it, with a default class ``fitted_servo`` (a child of
    Menagerie's ``sts3215``: ``<joint damping frictionloss armature>`` and the position servo's ``gainprm``,
    ``biasprm``, ``forcerange``) on every joint and actuator, and with per-joint servos one child class per arm
    joint (``fitted_servo_<joint>``). Offsets go into each arm actuator's ``biasprm[0] = -kp c`` and ctrlrange. The
    meshes are read from Menagerie's folder by absolute path (``meshdir``); a comment at the top says what was fitted,
    on which recording, and how the replay was run (the recording's name made inert: ``outputs.comment_text``). The
    file is written atomically (``outputs.write_atomic``): an interrupted write leaves any old file whole, and without
    ``replace`` a file that exists by then is kept (FileExistsError).
    Menagerie's own option (timestep, integrator) and contacts stay;
    the replay that scored the fit ran with contacts off and the timestep of ``arm_replay.ReplayConfig``.

    ``elements`` adds chapter 6's firmware elements (:class:`Firmware`): kp and forcerange from the registers, the
    dead band's friction, a play hinge per arm joint (``<joint name="<joint>_play">``), and the speed limit as MuJoCo's
    ``pid`` actuators (position input, ``slewmax``) in place of the ``<position>`` actuators.

    Raises:
      ValueError: firmware elements with per-joint servos, offsets or a delay (not supported together).
    """
    if not isinstance(elements, Firmware):
        raise ValueError(f'elements must be a fit_report.Firmware, got {type(elements).__name__}')
    if elements.any and (ident.servos.per_joint or any(ident.servos.offsets_deg) or ident.servos.delay > 0):
        raise ValueError('the firmware elements (--p-register, --supply-voltage, --goal-speed, --dead-zone, --play) '
                         'go with the shared spring only, not with --per-joint, --offsets or --delay')
    xml = so101.menagerie_xml('so101')
    spec = mujoco.MjSpec.from_file(str(xml))
    spec.meshdir = str((xml.parent / spec.meshdir).resolve())
    servos = ident.servos
    if elements.any:
        servos = dataclasses.replace(servos, shared=elements.servo(servos.shared))
        servos = dataclasses.replace(servos, kp=(servos.shared.kp,) * len(ARM_JOINTS),
                                     kv=(servos.shared.kv,) * len(ARM_JOINTS))
    shared = servos.shared
    top = spec.add_default(SERVO_CLASS, spec.find_default('sts3215'))
    _set_class(top, shared.kp, shared.kv, 0.0, shared)
    classes = {}
    for i, name in enumerate(ARM_JOINTS):
        if servos.per_joint:
            classes[name] = spec.add_default(f'{SERVO_CLASS}_{name}', top)
            _set_class(classes[name], servos.kp[i], servos.kv[i], 0.0, shared)
        else:
            classes[name] = top
    classes['gripper'] = top
    for name in JOINTS:
        i = ARM_JOINTS.index(name) if name in ARM_JOINTS else None
        kp = servos.kp[i] if i is not None else shared.kp
        kv = servos.kv[i] if i is not None else shared.kv
        c = math.radians(servos.offsets_deg[i]) if i is not None else 0.0
        joint, actuator = spec.joint(name), spec.actuator(name)
        joint.classname = actuator.classname = classes[name]
        _set_joint(joint, shared)
        _set_actuator(actuator, kp, kv, c, shared.forcerange)  # an element keeps the values its class had when parsed
        actuator.ctrlrange = np.asarray(actuator.ctrlrange) + c
        if servos.delay > 0:  # MuJoCo's own command delay, read from a ctrl history
            actuator.delay = servos.delay
            actuator.nsample = servo_models.HISTORY_SAMPLES
            actuator.interp = arm_replay.INTERP_LINEAR
    if elements.play_deg:
        for name in ARM_JOINTS:
            firmware.add_play(spec, name, math.radians(elements.play_deg))
    if elements.goal_speed:
        for name in JOINTS:
            old = spec.actuator(name)
            ctrlrange, limited = np.array(old.ctrlrange), old.ctrllimited
            spec.delete(old)
            new = firmware.add_pid_servo(spec, name, kp=shared.kp, kv=shared.kv, forcerange=shared.forcerange,
                                         slewmax=elements.settings.slewmax, name=name)
            new.ctrlrange, new.ctrllimited = ctrlrange, limited
    text = spec.to_xml()
    header = _header(ident, xml, elements, shared)
    text = re.sub(r'(<mujoco[^>]*>)', lambda m: m.group(1) + '\n' + header, text, count=1)
    return outputs.write_atomic(path, lambda f: f.write(text.encode('utf-8')), replace=replace)


def _set_joint(joint, servo: ArmServo) -> None:
    joint.damping = [servo.damping, 0.0, 0.0]
    joint.frictionloss = servo.frictionloss
    joint.armature = servo.armature


def _set_actuator(actuator, kp: float, kv: float, c: float, forcerange: float) -> None:
    actuator.gainprm[0] = kp
    actuator.biasprm[:3] = [-kp * c, -kp, -kv]
    actuator.forcerange = [-forcerange, forcerange]


def _set_class(default, kp: float, kv: float, c: float, servo: ArmServo) -> None:
    _set_joint(default.joint, servo)
    _set_actuator(default.actuator, kp, kv, c, servo.forcerange)


def _header(ident: Identification, xml: pathlib.Path, elements: Firmware = Firmware(),
            servo: ArmServo | None = None) -> str:
    servo = ident.servos.shared if servo is None else servo
    step = 1.0 / (ident.dataset.fps * ident.config.substeps(ident.dataset.fps))
    lines = [
        f'Written by physai fit-servo from {ident.source}: fitted on episodes {_ranges([e.index for e in ident.fit])},',
        f'held out {_ranges([e.index for e in ident.heldout])}. The arm is MuJoCo Menagerie\'s {xml}',
        f'(meshes read from there by absolute path). Class {SERVO_CLASS}: ' +
        ', '.join(f'{k} {v:g}' for k, v in servo.as_dict().items()) +
        f' (lag (kv + damping)/kp {servo.lag_ms:.0f} ms).',
        'These are the effective servo of the recorded teleoperation loop (leader, bus, servo), not bench constants:',
        'the lag is what the recording pins down; see the report for the spread of the rest.',
        'Identified by an open-loop replay with contacts off (Menagerie\'s collision boxes overlap in the folded',
        f'pose), joint limits on, {ident.config.integrator} at {1e3 * step:.3f} ms; '
        'this file keeps Menagerie\'s own option and contacts.',
    ]
    if ident.units and ident.units['converted_with']:
        lines.append(f"The recording was in LeRobot's -100..100 normalisation, converted to its degrees with "
                     f"{ident.units['converted_with']} before the fit.")
    if ident.servos.per_joint:
        lines.append('Per-joint classes fitted_servo_<joint> carry each arm joint\'s own kp and kv (gainprm, biasprm).')
    if ident.servos.delay > 0:
        lines.append(f'Every actuator reads its ctrl {1e3 * ident.servos.delay:.3g} ms late from a history of '
                     f'{servo_models.HISTORY_SAMPLES} samples (delay, nsample, interp="linear"; MuJoCo 3.5.0 or later).')
    if any(ident.servos.offsets_deg):
        lines += ['Calibration offsets c (degrees; the joint is driven towards ctrl - c): ' +
                  ', '.join(f'{j} {c:+.3f}' for j, c in zip(ARM_JOINTS, ident.servos.offsets_deg)) + '.',
                  'MuJoCo\'s <position> has no offset: each arm actuator carries it as biasprm[0] = -kp*c (written as',
                  '<general>), and its ctrlrange is moved by c so the clamp acts where the shifted command would.']
    if elements.any:
        s = elements.settings
        lines.append('STS3215 firmware elements (chapter 6; its ablation could not tell any of them on its recording):')
        if elements.registers:
            lines.append(f'  kp {s.kp:.4g} and forcerange {s.forcerange:.4g} from P = {s.p_register} at {s.supply_voltage:g} V '
                         f'(BAM\'s duty-gain law); kv {servo.kv:.4g} keeps the fitted lag.')
        if elements.dead_zone:
            lines.append(f'  dead zone {elements.dead_zone} steps: joint frictionloss includes kp*delta = '
                         f'{sts3215.dead_band_friction(servo.kp, s.dead_band):.4g} N*m.')
        if elements.play_deg:
            lines.append(f'  backlash {elements.play_deg:g} deg: a hinge <joint>_play on each arm joint, range +-'
                         f'{elements.play_deg / 2:g} deg (Menagerie\'s backlash class).')
        if elements.goal_speed:
            lines.append(f'  Goal_Speed {elements.goal_speed} steps/s: pid actuators (MuJoCo 3.12.0 or later), slewmax '
                         f'{s.slewmax:.4g} rad/s; their set point (mjData.act) starts at 0 after a reset: set it to '
                         f'the start pose.')
    body = '\n'.join('  ' + outputs.comment_text(line) for line in lines)  # the source is the recording's own text
    return f'<!--\n{body}\n-->'


# --------------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------------

def fit_stops(ident: Identification) -> tuple[bool, list[str]]:
    """Whether the main fit converged, and a sentence for each place it stopped that is not a minimum the data set.

    A fit that ends where it started (``START`` as the fit holds it: clipped into ``sysid.LOG_BOUNDS`` and rounded
    to ``sysid.FIT_DIGITS``) has not converged, whatever its solver said: the data did not move it (a glitch so large
    that no servo changes the cost, say). A parameter that ends within ``BOUND_MARGIN`` of a bound of the fit's box
    is where the box stopped it, not where the data put it; the report says so (and :func:`spread` never calls it
    pinned). Per-joint kp and kv are checked the same way.
    """
    servo = ident.servos.shared
    start = sysid.from_log(sysid.to_log(START)).rounded(sysid.FIT_DIGITS)
    converged, notes = ident.fit_converged, []
    if servo == start:
        converged = False
        notes.append('the fit ended where it started (TheRobotStudio\'s gains): the recording did not move it, so the '
                     'written servo is the start, not a fit; check the recording for glitches and its moves')
    low, high = (10.0 ** b for b in sysid.LOG_BOUNDS)
    values = [(name, getattr(servo, name), k) for k, name in enumerate(arm_replay.PARAMS)]
    if ident.servos.per_joint:
        values += [(f'{j} {name}', v, arm_replay.PARAMS.index(name)) for name in ('kp', 'kv')
                   for j, v in zip(ARM_JOINTS, getattr(ident.servos, name))]
    for name, value, k in values:
        if value <= low[k] * BOUND_MARGIN or value >= high[k] / BOUND_MARGIN:
            edge, bound = ('lower', low[k]) if value <= low[k] * BOUND_MARGIN else ('upper', high[k])
            notes.append(f'{name} ended at the {edge} bound of the fit ({three_digits(value)}, bound {bound:g}): there the bound '
                         f'stopped it, not the data')
    return converged, notes


def report(ident: Identification, out: str | pathlib.Path | None = None) -> dict:
    """The command's report as a JSON-ready dict (``--json`` prints it; :func:`report_text` formats it);
    ``fit_converged`` and the warnings include :func:`fit_stops`."""
    data = ident.dataset
    converged, stops = fit_stops(ident)
    servos = ident.servos
    pinned, loose = findings(ident)
    folds = [{k: r[k] for k in ('heldout', *SPREAD_KEYS, 'heldout_mae_deg', 'menagerie_heldout_mae_deg',
                                'teleport_shift_deg')} for r in ident.folds]
    summary = servo_sysid.fold_summary(ident.folds)
    return dict(
        source=ident.source, version=data.version, fps=data.fps, robot_type=data.robot_type, units=ident.units,
        episodes=dict(fit=[e.index for e in ident.fit], heldout=[e.index for e in ident.heldout]),
        recording=ident.motion,
        servo=servos.shared.as_dict() | dict(lag_ms=servos.shared.lag_ms, delay_ms=1e3 * servos.delay),
        per_joint=({j: dict(kp=servos.kp[i], kv=servos.kv[i], lag_ms=float(servos.lag_ms()[i]))
                    for i, j in enumerate(ARM_JOINTS)} if servos.per_joint else None),
        offsets_deg=(dict(zip(ARM_JOINTS, servos.offsets_deg)) if any(servos.offsets_deg) else None),
        static_offsets_deg=(None if ident.static_offsets_deg is None
                            else {j: float(c) for j, c in zip(ARM_JOINTS, ident.static_offsets_deg)}),
        spread=spread(ident), ridge=ridge_summary(ident), pinned=pinned, not_pinned=loose,
        lag_rate=lag_at_rate(data.fps),
        heldout_mae_deg=heldout_errors(ident), folds=folds,
        leave_one_out=dict(fitted_deg=summary['fitted_deg'], menagerie_deg=summary['menagerie_deg']),
        structures=servo_truth.structure_rows(ident.structures) if ident.structures else [],
        intervals=list(ident.intervals), rise_pct=100 * servo_truth.RISE,
        truth_table=[{k: r[k] for k, *_ in servo_truth.TRUTH_COLUMNS} | dict(kind=r['kind']) for r in ident.truth],
        truth_completions=servo_truth.completion_rows(ident.truth) if ident.truth else [],
        fit_converged=converged, warnings=list(ident.warnings) + stops,
        gripper=gripper_part(ident),
        out=None if out is None else str(out))


def gripper_part(ident: Identification) -> dict | None:
    """The gripper, which the fit leaves out, scored with the fitted servo (chapter 5,
    :func:`physai.experiments.gripper.gripper_summary`) on the selected episodes; None without a gripper column."""
    servo = ident.servos.shared
    return grasp.gripper_summary(ident.dataset, [*ident.fit, *ident.heldout], kp=servo.kp, kv=servo.kv,
                                 forcerange=servo.forcerange)


def report_json(rep: dict) -> str:
    """:func:`report` as JSON text; NaN and infinities become null, numpy numbers plain ones."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, (np.generic,)):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return value
    return json.dumps(clean(rep), indent=1)


def report_text(rep: dict) -> str:
    """:func:`report` as the text the command prints."""
    text = outputs.inert  # names from the recording (its folder, robot_type) may hold terminal escapes
    lines = [f"{text(rep['source'])}: LeRobot {text(rep['version'])}, {rep['fps']:g} fps, "
             f"robot {text(rep['robot_type'])}",
             f"fit on episodes {_ranges(rep['episodes']['fit'])} ({rep['recording']['seconds']:.1f} s, "
             f"{rep['recording']['moving_seconds']:.1f} s moving, {rep['recording']['held_frames']} held frames); "
             f"held out {_ranges(rep['episodes']['heldout'])}"]
    if rep['units']:
        lines.append(f"units: {text(rep['units']['evidence'])}")
        if rep['units']['converted_with']:
            lines.append(f"  converted to LeRobot's degrees with {text(rep['units']['converted_with'])}; degrees per "
                         "unit: " + ', '.join(f'{j} {v:.4f}' for j, v in rep['units']['deg_per_unit'].items()))
    if rep['out']:
        lines.append(f"wrote {text(rep['out'])}")
    lines += ['', f"fitted servo (class {SERVO_CLASS}), and its range over {len(rep['folds'])} leave-one-out folds:"]
    rows = [dict(param=k, fitted=three_digits(v['fitted']), fold_min=three_digits(v['fold_min']), fold_max=three_digits(v['fold_max']),
                 cost_rise_pct='-' if math.isnan(v['cost_rise_pct']) else f"{v['cost_rise_pct']:.1f}",
                 pinned='yes' if v['pinned'] else 'no') for k, v in rep['spread'].items()]
    lines.append(format_table(rows, [('param', 's'), ('fitted', 's'), ('fold_min', 's'), ('fold_max', 's'),
                                     ('cost_rise_pct', 's'), ('pinned', 's')]))
    lines.append(f'(cost_rise_pct: how much the fit cost rises when the parameter alone is scaled by {PINNED_RATIO:g} '
                 f'either way; pinned: folds within a factor {PINNED_RATIO:g}, a rise of {100 * COST_RISE:g} % or '
                 f'more, off the fit\'s bounds)')
    if rep['per_joint']:
        lines += ['', 'per joint (classes fitted_servo_<joint>; the other parameters as above):']
        lines.append(format_table([dict(joint=j, **v) for j, v in rep['per_joint'].items()],
                                  [('joint', 's'), ('kp', 'g'), ('kv', 'g'), ('lag_ms', '.0f')]))
    if rep['offsets_deg']:
        lines += ['', 'calibration offsets written into the actuators (command - joint in the held poses, deg):',
                  ', '.join(f'{j} {c:+.2f}' for j, c in rep['offsets_deg'].items())]
    lines += ['', 'what the recording pins down:'] + [f'  - {s}' for s in rep['pinned'] or ['nothing within the folds']]
    lines += ['what it does not:'] + [f'  - {s}' for s in rep['not_pinned']]
    lines += ['at what rate:', f"  - {lag_rate_sentence(rep['lag_rate'])}"]
    held = rep['heldout_mae_deg']
    held_out = rep['episodes']['heldout']
    lines += ['', f"held-out error (episode{'s' if len(held_out) > 1 else ''} {_ranges(held_out)}), mean absolute, "
                  f"degrees:"]
    lines.append(format_table([dict(model=name, **row) for name, row in held.items()],
                              [('model', 's')] + [(j, '.3f') for j in ARM_JOINTS] + [('mean', '.3f')]))
    loo = rep['leave_one_out']
    lines.append(f"leave-one-out, every selected episode held out once: fitted {loo['fitted_deg']:.3f} deg, "
                 f"Menagerie {loo['menagerie_deg']:.3f} deg")
    if rep['structures']:
        lines += ['', 'model structures, leave-one-out (each fitted on the other episodes; held-out error, degrees):']
        lines.append(format_table(rep['structures'], [('structure', 's'), ('loo_deg', '.3f'), ('loo_min', '.3f'),
                                                      ('loo_max', '.3f'), ('kp_min', '.3g'), ('kp_max', '.3g'),
                                                      ('lag_ms_min', '.0f'), ('lag_ms_max', '.0f'),
                                                      ('delay_ms_max', '.1f'), ('offset_max_deg', '.2f')]))
    if rep['intervals']:
        lines += ['', f"how far each parameter can move before the held-out error, averaged over the folds, rises by "
                      f"{rep['rise_pct']:g} % (factors of the fitted value; the delay in ms; factors on all "
                      f"the fitted offsets at once; a slice, the others kept, not a calibrated interval: a few "
                      f"episodes cannot calibrate one, and fitted_min..fitted_max, the folds' range, is the spread "
                      f"to quote):"]
        lines.append(format_table(rep['intervals'], [('param', 's'), ('structure', 's'), ('fitted_min', '.3g'),
                                                     ('fitted_max', '.3g'), ('low', '.3g'), ('high', '.3g'),
                                                     ('edge', '')]))
    if rep['truth_table']:
        lines += ['', "chapter 4's truth table on this recording (leave-one-out, degrees; from_fit: 'partly' for a "
                      "published set completed from each fold's own fit; vs_shift: over the teleport at its best "
                      "shift, its min and max fold by fold):"]
        lines.append(format_table(rep['truth_table'], servo_truth.TRUTH_COLUMNS))
    if rep['truth_completions']:
        lines += ['', "the partial sets under each completion of what their sources leave out (best_completion_deg to "
                      "worst_completion_deg in the table above is their range; a conclusion that changes with it "
                      "rests on the completion):"]
        lines.append(format_table(rep['truth_completions'], servo_truth.COMPLETION_COLUMNS))
    lines += gripper_lines(rep.get('gripper'))
    lines += ['', 'warnings:'] + [f'  - {text(w)}' for w in rep['warnings'] or ['none']]
    return '\n'.join(lines)


def gripper_lines(part: dict | None) -> list[str]:
    """The report's gripper section (chapter 5) as text lines."""
    if part is None:
        return ['', 'gripper: the recording has no gripper column']
    rows = part['episodes']
    lines = ['', f"gripper (not in the fit; its 0..100, replayed open loop on Menagerie's gripper with the fitted "
                 f"servo, kp {part['kp']:.3g}, forcerange {part['forcerange']:.3g} N·m, the arm held still):"]
    if not part['closes_on_something']:
        lines.append('  it never stops above its command while commanded shut: it closed on nothing the recording '
                     'shows, so there is no holding gap')
    else:
        lines.append(f"  it closes on something in {sum(1 for r in rows if r['holds'])} of {len(rows)} episodes, "
                     f"the longest hold {part['longest_hold_s']:.2f} s; the holding gap (follower above its command) "
                     f"is {part['gap']:.1f} units, about {part['gap_deg']:.0f} deg of Menagerie's gripper range")
        lines.append(f"  at that gap the fitted servo presses with {part['torque_servo']:.2f} N·m (its forcerange "
                     f"{part['forcerange']:.2f}); BAM's kp at P = 16 would ask for {part['torque_p16']:.2f} N·m")
    lines.append(format_table(rows, [('episode', 'd'), ('holds', 'd'), ('longest_hold_s', '.2f'), ('gap', '.1f'),
                                     ('real_hold', '.1f'), ('sim_hold', '.1f'), ('hold_err_cube', '.1f'),
                                     ('hold_err_none', '.1f'), ('err_cube', '.1f'), ('err_none', '.1f')]))
    lines.append('  (units of 0..100; sim_hold and the _cube errors with a 24 mm cube between the jaws, _none '
                 'without; hold_err: in the holds only)')
    return lines
