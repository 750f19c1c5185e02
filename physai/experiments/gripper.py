"""Chapter 5's tables: how hard the SO-101's simulated gripper squeezes, and what it holds.

Sources of the numbers that are not simulated (each cited where it is used):

- Menagerie's gripper servo: ``so101.xml``, class ``sts3215`` (kp 998.22, forcerange ±2.94 N·m), the same on every
  joint. ±2.94 N·m is 30 kg·cm, the stall torque the 12 V STS3215 is rated at; that Menagerie took it from the 12 V
  rating is an inference from the numbers (Menagerie's comment cites Gregory119/RBE501-RL-arm-project's derivation,
  whose datasheet figures are the 12 V ST-3215-C047's: ``physai.laws.servo_gain``'s docstring), not a documented fact.
- LeRobot's SO-101 follower, ``configure()`` in ``src/lerobot/robots/so_follower/so_follower.py`` (huggingface/lerobot,
  commit 7427f31, August 2026; introduced by pull request 1809, commit 882c80d, August 2025), writes to the gripper
  servo only: ``Max_Torque_Limit`` 500 ("50% of max torque to avoid burnout"), ``Protection_Current`` 250 ("50% of
  max current to avoid burnout") and ``Overload_Torque`` 25 ("25% torque when overloaded").
- Feetech's STS memory table (the e-manual LeRobot's ``motors/feetech/tables.py`` links; read here through public
  transcriptions of it, the original not being reachable from the machines the book was written on): register 16,
  maximum torque, 0..1000 in 0.1 % of the maximum; 28, protection current, in 6.5 mA; 34, protective torque, the
  output torque in % after overload protection trips (default 20); 35, protection time, in 10 ms (default 200,
  2 s); 36, overload torque, the % threshold that starts the protection timer (default 80).
"""

from __future__ import annotations

import numpy as np

from physai.engine import datasets, gripper, so101
from physai.experiments.registry import experiment
from physai.laws import grip, servo_gain


STALL_12V = so101.MENAGERIE_FORCERANGE
"""N·m: Menagerie's forcerange, 30 kg·cm, the 12 V STS3215's rated stall torque (an inference, see above)."""

STALL_7V4 = round(grip.kg_cm(19.5), 2)
"""N·m: the 7.4 V STS3215's rated stall torque, about 19.5 kg·cm (1.91 N·m)."""

LEROBOT_MAX_TORQUE_LIMIT = 500
"""``Max_Torque_Limit`` LeRobot writes to the gripper (0.1 % units: 50 %)."""

LEROBOT_PROTECTION_CURRENT = 250
"""``Protection_Current`` LeRobot writes to the gripper (6.5 mA units: 1.625 A)."""

LEROBOT_OVERLOAD_TORQUE = 25
"""``Overload_Torque`` LeRobot writes to the gripper (%: the threshold that starts the protection timer)."""

CRUSH_DEPTH = 1.5e-3
"""m: a contact deeper than this is called *crushed*: the soft contact carries the squeeze with an overlap of more
than a sixteenth of the 24 mm cube's edge, which a rigid cube would not allow (a threshold this book states)."""

SLIP_DISTANCE = 2e-3
"""m: a cube that slides more than this along the jaws in the hold *slips* (soft friction creeps less)."""

JITTER_FRACTION = 0.1
"""A jaw force whose peak-to-peak over the hold's last 0.25 s passes this fraction of its mean *jitters*."""

HOLD = 1.0
"""s: how long each grasp of the tables holds the cube."""

TAIL = 0.25
"""s: the end of the hold over which the squeeze, the penetration and the jitter are read."""

NEAR_CONTACT = 0.03
"""rad: the gripper command of the kp rows: just inside the cube's faces (the jaws touch it near 0.04 rad), so with
Menagerie's 2.94 N·m limit kp·error stays under the clamp and kp is in charge."""


def verdict(run: gripper.GripRun) -> dict:
    """What one grasp did: the squeeze, penetration, slide and jitter over its end, and the verdict (diverged,
    slips, jitters, crushed or held, the first that applies)."""
    if run.diverged:
        return {'squeeze_n': float('nan'), 'penetration_mm': float('nan'), 'slide_mm': float('nan'),
                'jitter_n': float('nan'), 'verdict': 'diverged'}
    tail = run.time > run.time[-1] - TAIL
    squeeze = float(np.mean(run.jaw_force[tail]))
    jitter = float(np.ptp(run.jaw_force[tail]))
    slide = float(run.slide[-1])
    depth = float(np.max(run.penetration[tail]))
    if slide > SLIP_DISTANCE:
        word = 'slips'
    elif jitter > JITTER_FRACTION * max(squeeze, 1e-9):
        word = 'jitters'
    elif depth > CRUSH_DEPTH:
        word = 'crushed'
    else:
        word = 'held'
    return {'squeeze_n': squeeze, 'penetration_mm': depth * 1e3, 'slide_mm': slide * 1e3, 'jitter_n': jitter,
            'verdict': word}


def _row(change: str, setup: gripper.GripSetup, **kwargs) -> dict:
    run = gripper.grip(setup, hold=kwargs.pop('hold', HOLD), **kwargs)
    row = {'change': change, 'torque_limit': setup.torque_limit, 'kp': setup.kp, 'mass_kg': setup.mass,
           'mu': setup.mu}
    row.update(verdict(run))
    squeeze = round(row['squeeze_n']) if np.isfinite(row['squeeze_n']) else 0
    row['margin'] = float(grip.slip_margin(setup.mass, squeeze, setup.mu)) if squeeze > 0 else 0.0
    row['slide_mm'] = min(row['slide_mm'], SLIDE_CAP * 1e3)
    return {key: row[key] for key, *_ in GRASP_COLUMNS}


LEROBOT_LIMIT = grip.torque_limit_register(LEROBOT_MAX_TORQUE_LIMIT, STALL_12V)
"""N·m: LeRobot's 50 % of Menagerie's 2.94 N·m."""


GRASP_COLUMNS = (('change', 's'), ('torque_limit', '.3f', 'N·m'), ('kp', '.0f', 'N·m/rad'), ('mass_kg', '.2f', 'kg'),
                 ('mu', '.2f', ''), ('squeeze_n', '.0f', 'N'), ('margin', '.0f', ''), ('slide_mm', '.0f', 'mm'),
                 ('penetration_mm', '.1f', 'mm'), ('verdict', 's'))
"""Printed to what survives a last-bit change: a jittering grasp's squeeze moves by a few tenths of a newton and its
jitter by newtons from one processor to another, so the squeeze is printed in whole newtons, the margin from that
whole-newton squeeze, the slide in whole millimetres up to :data:`SLIDE_CAP`, and the jitter only as the verdict."""

SLIDE_CAP = 10e-3
"""m: slides beyond this are printed as this (a cube that slipped; how far it fell is chaos, not a figure)."""


@experiment('grasp-table', summary='held / slips / crushed / jitters against torque limit, mass, friction and kp',
            columns=GRASP_COLUMNS)
def grasp_table() -> list[dict]:
    """One change at a time from LeRobot's gripper (50 % of 2.94 N·m, Menagerie's kp, commanded shut) on a 30 g
    cube, mu = 1; the kp rows command the gripper just inside the cube with Menagerie's full 2.94 N·m limit."""
    base = gripper.GripSetup(torque_limit=LEROBOT_LIMIT)
    rows = [_row('LeRobot 50 %', base),
            _row('Menagerie 100 %', gripper.GripSetup()),
            _row('7.4 V stall', gripper.GripSetup(torque_limit=STALL_7V4)),
            _row('7.4 V at 50 %', gripper.GripSetup(torque_limit=STALL_7V4 / 2))]
    for mass in (0.3, 1.0, 3.0):
        rows.append(_row(f'mass {mass:g} kg', gripper.GripSetup(torque_limit=LEROBOT_LIMIT, mass=mass)))
    for mu in (0.3, 0.1, 0.03):
        rows.append(_row(f'mu {mu:g}', gripper.GripSetup(torque_limit=LEROBOT_LIMIT, mu=mu)))
    for kp in (998.22, 3000.0, 10000.0, 30000.0):
        rows.append(_row(f'kp {kp:g}, near contact', gripper.GripSetup(kp=kp, command=NEAR_CONTACT)))
    rows.append(_row('overload on, 3 s', base, hold=3.0, overload=gripper.Overload()))
    return rows


REGISTER_COLUMNS = (('register', 's'), ('address', 'd', ''), ('value', 'd', ''), ('meaning', 's'),
                    ('physical', 's'))


@experiment('gripper-registers', summary="the three registers LeRobot writes to the SO-101's gripper, in physical units",
            columns=REGISTER_COLUMNS)
def gripper_registers() -> list[dict]:
    """LeRobot's gripper registers read through Feetech's memory table (module docstring)."""
    return [
        {'register': 'Max_Torque_Limit', 'address': 16, 'value': LEROBOT_MAX_TORQUE_LIMIT,
         'meaning': '0.1 % of the maximum torque',
         'physical': f'{grip.torque_limit_register(LEROBOT_MAX_TORQUE_LIMIT, STALL_12V):.2f} N·m of 12 V '
                     f'{STALL_12V:.2f}, {grip.torque_limit_register(LEROBOT_MAX_TORQUE_LIMIT, STALL_7V4):.2f} N·m '
                     f'of 7.4 V {STALL_7V4:.2f}'},
        {'register': 'Protection_Current', 'address': 28, 'value': LEROBOT_PROTECTION_CURRENT,
         'meaning': 'over-current threshold, 6.5 mA', 'physical': f'{LEROBOT_PROTECTION_CURRENT * 6.5e-3:.3f} A'},
        {'register': 'Overload_Torque', 'address': 36, 'value': LEROBOT_OVERLOAD_TORQUE,
         'meaning': '% that starts the protection timer',
         'physical': f'timer from {LEROBOT_OVERLOAD_TORQUE} % load; after Protection_Time (default 2 s) '
                     f'the output drops to Protective_Torque (default 20 %)'},
    ]


HOLD_GAP = 3.0
"""Gripper units (0..100): the follower sits this far or more above its command while something blocks it."""

RECORDING_COLUMNS = (('episode', 'd', ''), ('holds', 'd', ''), ('longest_hold_s', '.2f'), ('gap', '.1f', '%'),
                     ('gap_deg', '.0f'), ('torque_p16', '.1f', 'N·m'), ('real_hold', '.1f', '%'),
                     ('sim_hold', '.1f', '%'), ('hold_err_cube', '.1f', '%'), ('hold_err_none', '.1f', '%'),
                     ('err_cube', '.1f', '%'), ('err_none', '.1f', '%'))
"""Per episode: the holds (the follower blocked :data:`HOLD_GAP` or more above a command in the closed third), the
longest in seconds, the median gap (0..100 units, % of the calibrated range) and in degrees on Menagerie's gripper
range (chapter 4's mapping), the torque BAM's kp at LeRobot's P = 16 would press with at that gap, the median
gripper position in the holds, recorded and replayed with the cube, and the replay's mean absolute error in the
holds and over the episode, with the 24 mm cube between the jaws and without it."""


def recording_holds(dataset=None, *, episodes=None, setup: gripper.GripSetup = gripper.GripSetup()) -> list[dict]:
    """The shipped recording's gripper (or ``dataset``'s, or its ``episodes``), episode by episode
    (:data:`RECORDING_COLUMNS`), replayed with ``setup``'s servo; the hold columns are NaN in an episode without a
    hold."""
    if dataset is None:
        dataset = datasets.load_lerobot(datasets.shipped_recording())
    episodes = dataset.episodes if episodes is None else episodes
    span_deg = float(np.degrees(np.ptp(gripper.gripper_units_to_rad([0.0, 100.0]))))
    kp16 = servo_gain.BAM_STS3215.kp(servo_gain.LEROBOT_SO101_P)
    rows = []
    for episode in episodes:
        g = episode.joints.index('gripper')
        command, state = episode.action[:, g], episode.state[:, g]
        blocked = (state - command > HOLD_GAP) & (command < 100 / 3)
        edges = np.diff(np.concatenate(([0], blocked.astype(int), [0])))
        starts, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
        longest = int(np.max(ends - starts)) if len(starts) else 0
        with_cube = gripper.replay_gripper(command, episode.fps, setup=setup)
        without = gripper.replay_gripper(command, episode.fps, setup=setup, cube=False)
        nan = float('nan')
        gap = float(np.median((state - command)[blocked])) if blocked.any() else nan
        rows.append({'episode': int(episode.index), 'holds': len(starts), 'longest_hold_s': longest / episode.fps,
                     'gap': gap, 'gap_deg': gap / 100 * span_deg,
                     'torque_p16': kp16 * np.radians(gap / 100 * span_deg),
                     'real_hold': float(np.median(state[blocked])) if blocked.any() else nan,
                     'sim_hold': float(np.median(with_cube[blocked])) if blocked.any() else nan,
                     'hold_err_cube': float(np.mean(np.abs(with_cube - state)[blocked])) if blocked.any() else nan,
                     'hold_err_none': float(np.mean(np.abs(without - state)[blocked])) if blocked.any() else nan,
                     'err_cube': float(np.mean(np.abs(with_cube - state)[1:])),
                     'err_none': float(np.mean(np.abs(without - state)[1:]))})
    return rows


def gripper_summary(dataset, episodes=None, *, kp: float | None = None, kv: float | None = None,
                    forcerange: float | None = None) -> dict | None:
    """What a recording's gripper shows, for ``fit-servo``'s report: :func:`recording_holds` per episode with a servo
    of ``kp``, ``kv`` and ``forcerange`` on the gripper (None: Menagerie's), whether the gripper closed on something,
    and the torque that servo and BAM's kp at P = 16 would press with at the median holding gap. None when the
    recording has no gripper column."""
    episodes = list(dataset.episodes if episodes is None else episodes)
    if not episodes or 'gripper' not in episodes[0].joints:
        return None
    setup = gripper.GripSetup(kp=so101.MENAGERIE_KP if kp is None else kp, kv=so101.MENAGERIE_KV if kv is None else kv,
                              torque_limit=so101.MENAGERIE_FORCERANGE if forcerange is None else forcerange)
    rows = recording_holds(dataset, episodes=episodes, setup=setup)
    held = [r for r in rows if r['holds']]
    gap_deg = float(np.median([r['gap_deg'] for r in held])) if held else float('nan')
    return {'closes_on_something': bool(held), 'episodes': rows, 'kp': setup.kp, 'kv': setup.kv,
            'forcerange': setup.torque_limit, 'gap': float(np.median([r['gap'] for r in held])) if held else float('nan'),
            'gap_deg': gap_deg, 'longest_hold_s': max((r['longest_hold_s'] for r in held), default=0.0),
            'torque_servo': float(grip.clamped_torque(setup.kp, np.radians(gap_deg), setup.torque_limit))
                            if held else float('nan'),
            'torque_p16': float(np.median([r['torque_p16'] for r in held])) if held else float('nan')}


@experiment('recording-gripper', summary="the shipped recording's gripper: its holds on the cube, the gap while "
                                         'holding, and its replay with and without a cube', columns=RECORDING_COLUMNS)
def recording_gripper() -> list[dict]:
    """:func:`recording_holds` on the book's recording."""
    return recording_holds()


SLIP_COLUMNS = (('jaws', 's'), ('condim', 'd', ''), ('mu', '.1f', ''), ('squeeze_n', '.0f', 'N'),
                ('cone_load_n', '.0f', 'N'), ('slip_load_n', '.0f', 'N'), ('ratio', '.1f', ''))
"""``cone_load_n``: 2·mu·F_n, the friction cone's prediction; ``slip_load_n``: the load (weight plus the ramped
force) at which MuJoCo's cube started to slide faster than 20 mm/s; ``ratio``: the second over the first."""


@experiment('slip-threshold', summary="the load at which the cube slips, against the friction cone's 2·mu·F_n: flat "
                                      "jaws and the SO-101's", columns=SLIP_COLUMNS)
def slip_threshold() -> list[dict]:
    """The friction cone's slip load against MuJoCo's, on two flat jaws and on the SO-101's jaws (LeRobot's 50 %)."""
    rows = []
    for mu in (0.3, 1.0):
        load, normal = gripper.flat_jaws_slip(mu=mu, squeeze=22.0, condim=3)
        rows.append({'jaws': 'flat', 'condim': 3, 'mu': mu, 'squeeze_n': normal,
                     'cone_load_n': float(grip.hold_load(normal, mu)), 'slip_load_n': load})
    for mu in (0.3, 1.0):
        for condim in (3, 6):
            load, normal = gripper.so101_slip(gripper.GripSetup(torque_limit=LEROBOT_LIMIT, mu=mu, condim=condim))
            rows.append({'jaws': 'SO-101', 'condim': condim, 'mu': mu, 'squeeze_n': normal,
                         'cone_load_n': float(grip.hold_load(normal, mu)), 'slip_load_n': load})
    for row in rows:
        row['ratio'] = row['slip_load_n'] / row['cone_load_n']
    return rows
