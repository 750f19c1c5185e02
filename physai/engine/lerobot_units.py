"""What a LeRobot recording's joint numbers are, read off the numbers themselves, and their conversion to degrees.

LeRobot writes an SO-101 joint from its STS3215's encoder count ``raw`` (0 ... 4095, 4096 counts a turn) and the
arm's calibration (``range_min``, ``range_max``: the counts at the ends of the range recorded when the arm was
calibrated) in one of three ways, ``MotorNormMode`` in ``MotorsBus._normalize``
(``src/lerobot/motors/motors_bus.py`` in huggingface/lerobot, the same from v0.4.0 to v0.6.1), ``drive_mode`` 0 as
the SO-101's calibration writes it:

- ``DEGREES``: ``(raw - mid) * 360 / (4096 - 1)``, ``mid = (range_min + range_max) / 2``, not clamped;
- ``RANGE_M100_100``: ``(clip(raw, range_min, range_max) - range_min) / (range_max - range_min) * 200 - 100``;
- ``RANGE_0_100``: ``(clip(raw, range_min, range_max) - range_min) / (range_max - range_min) * 100`` (the gripper's,
  in both configurations of the arm).

The SO-101 follower and leader take ``RANGE_M100_100`` for their five arm joints unless configured with
``use_degrees=True`` (``config_so101_follower.py``, ``config_so101_leader.py``; the default was False up to v0.4.3
and is True from v0.4.4). Both arm modes put zero at the middle of the calibrated range, ``mid``. So inside the range
a normalised value u and LeRobot's degrees d of the same count differ only by a scale per joint,

    d = u * N * 360 / (200 * 4095),   N = range_max - range_min  (counts),

which :func:`degrees_per_unit` computes. (LeRobot's degrees count 4095 steps a turn where the encoder has 4096: they
are 0.024 % larger than true degrees, which this module keeps so that a converted recording equals the one LeRobot
would have written in degrees.)

The numbers carry their mode. A column of raw readings normalised to ``RANGE_M100_100`` lies on a grid of step
200/N anchored at -100 (every value is -100 + 200 k/N for a whole number of counts k), and piles up at exactly
-100 or +100 where the joint went past an end of its calibrated range (the clamp); a column in degrees lies on a grid
of step 360/4095 (:func:`column_units`). The two grids coincide only for N = 2275, where 200/N = 360/4095 (a
column that fits both is ``either``). A recording's two features are judged apart (:func:`identify_units`): the
``action`` (for a teleoperated arm, the leader's joints) and ``observation.state`` (the follower's).

Which scale converts the action? LeRobot's record loop stores the leader's normalised reading as the action and sends
that same number to the follower (``robot.send_action``), whose bus turns it into a goal count with the *follower's*
calibration (``MotorsBus.sync_write`` -> ``_unnormalize``). So the physical command is the action number read in the
follower's units, and :func:`to_degrees` converts both features with the follower's scale, which the follower's grid
(``observation.state``) gives, or LeRobot's calibration file of the follower (:func:`read_calibration`) when the
reader has it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
from collections.abc import Mapping, Sequence

import numpy as np

from physai.engine.datasets import ACTION, STATE, Episode, LeRobotDataset
from physai.engine.so101 import ARM_JOINTS, STS3215_STEPS_PER_TURN


DEGREES = 'degrees'
RANGE_M100_100 = 'range_m100_100'
RANGE_0_100 = 'range_0_100'
MODES = (DEGREES, RANGE_M100_100, RANGE_0_100)
"""LeRobot's ``MotorNormMode`` values."""

MAX_COUNT = STS3215_STEPS_PER_TURN - 1
"""The largest encoder count of an STS3215 (4095), and LeRobot's ``max_res`` in its degrees formula."""

DEG_PER_COUNT = 360.0 / MAX_COUNT
"""LeRobot's degrees per encoder count (0.0879°): its ``DEGREES`` mode divides by 4096 - 1."""

GRID_TOL_COUNTS = 1e-3
"""counts: a value lies on a grid when it is within this of a whole number of counts. A normalised value is computed
in double precision and stored as float32, whose rounding moves a value within ±100 by at most 3.8e-6, at most
8e-5 counts of a 4095-count range (the shipped recording's largest is 7e-5); a value off its grid lies anywhere up to
half a count away, so a wrong grid passes a value by chance with probability 2e-3."""

MIN_DISTINCT = 20
"""A column's grid is judged only on at least this many distinct values: a wrong grid then passes by chance with
probability (2e-3)^20, and the coarsest grid that fits is the range itself (a column whose counts all shared a factor
would show a coarser one; with 20 or more distinct counts that does not happen in practice)."""

EITHER_COUNTS = round(200 / DEG_PER_COUNT)
"""2275: the one calibrated range whose normalised grid, 200/N, is LeRobot's degree grid, 360/4095."""


# --------------------------------------------------------------------------------------------------
# LeRobot's formulas (for synthetic recordings and tests)
# --------------------------------------------------------------------------------------------------

def normalize(raw, range_min: int, range_max: int, mode: str) -> np.ndarray:
    """LeRobot's ``MotorsBus._normalize`` for one motor with ``drive_mode`` 0: encoder counts to the recorded value.

    Args:
      raw: encoder counts, any shape.
      range_min, range_max: the motor's calibrated range, counts, ``range_min < range_max``.
      mode: one of :data:`MODES`.
    """
    raw = np.asarray(raw, dtype=float)
    _check_range(range_min, range_max)
    bounded = np.clip(raw, range_min, range_max)
    if mode == RANGE_M100_100:
        return (bounded - range_min) / (range_max - range_min) * 200 - 100
    if mode == RANGE_0_100:
        return (bounded - range_min) / (range_max - range_min) * 100
    if mode == DEGREES:
        return (raw - (range_min + range_max) / 2) * 360 / MAX_COUNT
    raise ValueError(f'mode must be one of {", ".join(MODES)}, got {mode!r}')


def unnormalize(value, range_min: int, range_max: int, mode: str) -> np.ndarray:
    """LeRobot's ``MotorsBus._unnormalize`` for one motor with ``drive_mode`` 0: a value sent as a goal to encoder
    counts (``int`` truncates, as LeRobot's does)."""
    value = np.asarray(value, dtype=float)
    _check_range(range_min, range_max)
    if mode == RANGE_M100_100:
        out = (np.clip(value, -100.0, 100.0) + 100) / 200 * (range_max - range_min) + range_min
    elif mode == RANGE_0_100:
        out = np.clip(value, 0.0, 100.0) / 100 * (range_max - range_min) + range_min
    elif mode == DEGREES:
        out = value * MAX_COUNT / 360 + (range_min + range_max) / 2
    else:
        raise ValueError(f'mode must be one of {", ".join(MODES)}, got {mode!r}')
    return np.trunc(out).astype(int)


def _check_range(range_min, range_max) -> None:
    ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (range_min, range_max))
    if not ok or not 0 <= range_min < range_max <= MAX_COUNT:
        raise ValueError(f'range_min and range_max must be whole encoder counts with 0 <= range_min < range_max <= '
                         f'{MAX_COUNT}, got {range_min!r} and {range_max!r}')


def degrees_per_unit(counts) -> np.ndarray:
    """LeRobot's degrees per unit of ``RANGE_M100_100`` for a calibrated range of ``counts`` = range_max - range_min
    encoder counts: ``counts * 360 / (200 * 4095)`` (1.120 for the shipped follower's shoulder pan, 2549 counts)."""
    return np.asarray(counts, dtype=float) * DEG_PER_COUNT / 200


# --------------------------------------------------------------------------------------------------
# What one column is
# --------------------------------------------------------------------------------------------------

def _offset(x: np.ndarray) -> float:
    """Largest distance of x from a whole number."""
    return float(np.max(np.abs(x - np.round(x)))) if x.size else 0.0


def range_counts(values) -> int | None:
    """The calibrated range N (counts) of the coarsest ``RANGE_M100_100`` grid that holds every value of a column:
    the smallest N in 1 ... 4095 with every ``(value + 100) * N / 200`` within :data:`GRID_TOL_COUNTS` of a whole
    number; None if there is none, or a value lies beyond ±100."""
    u = np.unique(np.asarray(values, dtype=float))
    if u.size == 0 or np.any(np.abs(u) > 100.0):
        return None
    n = np.arange(1, MAX_COUNT + 1, dtype=float)
    for start in range(0, n.size, 512):  # a few blocks: most columns are decided in the first ones
        block = n[start:start + 512, None]
        x = (u[None, :] + 100.0) * block / 200.0
        fits = np.all(np.abs(x - np.round(x)) <= GRID_TOL_COUNTS, axis=1)
        if fits.any():
            return int(block[np.argmax(fits), 0])
    return None


@dataclasses.dataclass(frozen=True)
class ColumnUnits:
    """What one joint's column of one feature is, from its values (:func:`column_units`)."""

    mode: str
    """``range_m100_100`` (on a normalised grid), ``degrees`` (on LeRobot's degree grid), ``either`` (on both: N =
    2275), ``unquantised`` (on neither: not raw encoder readings, e.g. a processed or simulated recording) or
    ``undetermined`` (fewer than :data:`MIN_DISTINCT` distinct values)."""
    counts: int | None
    """The calibrated range N the normalised grid gives (counts), None off such a grid."""
    distinct: int
    """Distinct values in the column."""
    at_low: int
    """Frames at exactly -100: the clamp at the low end of a normalised range."""
    at_high: int
    """Frames at exactly +100: the clamp at the high end."""
    beyond_100: bool
    """Some value lies beyond ±100, outside any normalised range."""
    grid_offset: float | None
    """Largest distance of a value from the normalised grid of ``counts``, in steps (None without one)."""
    degree_offset: float
    """Largest distance of a value from LeRobot's degree grid through the column's first value, in steps of
    360/4095°: about 0 in degrees, up to 0.5 (values anywhere between the grid's lines) otherwise."""


def column_units(values) -> ColumnUnits:
    """What one column (one joint of one feature) of a recording is: see :class:`ColumnUnits`.

    Args:
      values: (nframe,) the column's values, as recorded.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or not np.all(np.isfinite(v)):
        raise ValueError(f'values must be a column of finite numbers, (nframe,), got shape {v.shape}')
    u = np.unique(v)
    counts = range_counts(u)
    degree_offset = _offset((u - u[0]) / DEG_PER_COUNT) if u.size else 0.0
    on_degrees = degree_offset <= GRID_TOL_COUNTS
    grid_offset = None if counts is None else _offset((u + 100.0) * counts / 200.0)
    if u.size < MIN_DISTINCT:
        mode = 'undetermined'
    elif counts is not None and on_degrees:
        mode = 'either'
    elif counts is not None:
        mode = RANGE_M100_100
    elif on_degrees:
        mode = DEGREES
    else:
        mode = 'unquantised'
    return ColumnUnits(mode=mode, counts=counts if u.size >= MIN_DISTINCT else None, distinct=int(u.size),
                       at_low=int(np.sum(v == -100.0)), at_high=int(np.sum(v == 100.0)),
                       beyond_100=bool(np.any(np.abs(v) > 100.0)), grid_offset=grid_offset,
                       degree_offset=degree_offset)


def feature_units(columns: Sequence[ColumnUnits]) -> str:
    """One feature's units from its arm joints' columns: ``range_m100_100``, ``degrees``, ``unknown`` (no column on
    a grid, none clamped) or ``mixed`` (joints in different modes, which LeRobot never writes: one setting,
    ``use_degrees``, sets all five).

    A feature is normalised when some column lies on a normalised grid and none on the degree grid only or beyond
    ±100, or, without any grid (a processed recording), when its values pile up at exactly ±100 in two frames or
    more with none beyond (the clamp). It is in degrees when some column lies on the degree grid only, or beyond ±100,
    and none on a normalised grid only; or when two columns or more fit both grids (``either``), which a degrees
    column with an odd calibrated range does, and a normalised one only for a range exactly 2275 counts wide.
    """
    modes = {c.mode for c in columns}
    beyond = any(c.beyond_100 for c in columns)
    normalised = RANGE_M100_100 in modes
    degrees = DEGREES in modes or beyond
    if normalised and degrees:
        return 'mixed'
    if normalised:
        return RANGE_M100_100 if 'unquantised' not in modes else 'mixed'
    if degrees:
        return DEGREES
    if 'either' in modes and 'unquantised' not in modes:
        # A degrees column whose calibrated range is odd (its mid a half count) lies on the 2275-count grid too, so a
        # degrees recording often fits it on several joints; a normalised one would need several ranges exactly 2275
        # counts wide, which no calibration by hand gives.
        return DEGREES if sum(c.mode == 'either' for c in columns) >= 2 else 'either'
    if sum(c.at_low + c.at_high for c in columns) >= 2:
        return RANGE_M100_100
    return 'unknown'


# --------------------------------------------------------------------------------------------------
# What a recording is
# --------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RecordingUnits:
    """A recording's arm-joint units, read off its values (:func:`identify_units`)."""

    joints: tuple[str, ...]
    """The arm joints, in ``ARM_JOINTS`` order."""
    action: tuple[ColumnUnits, ...]
    """Per arm joint, the ``action`` column (the leader's, for a teleoperated arm)."""
    state: tuple[ColumnUnits, ...]
    """Per arm joint, the ``observation.state`` column (the follower's)."""
    action_units: str
    """:func:`feature_units` of the action."""
    state_units: str
    """:func:`feature_units` of the state."""

    @property
    def units(self) -> str:
        """The recording's units: ``range_m100_100`` (normalised: both features, or one with the other undecided),
        ``degrees`` (the same for degrees), ``unknown`` (neither feature decided) or ``mixed`` (the action in one
        mode and the state in the other, or a feature mixed within itself)."""
        pair = {self.action_units, self.state_units}
        if 'mixed' in pair or pair == {RANGE_M100_100, DEGREES}:
            return 'mixed'
        for mode in (RANGE_M100_100, DEGREES):
            if mode in pair:
                return mode
        return 'unknown'

    @property
    def normalised(self) -> bool:
        """Whether the arm joints are in LeRobot's −100..100 normalisation."""
        return self.units == RANGE_M100_100

    @property
    def follower_counts(self) -> tuple[int | None, ...]:
        """Per arm joint, the follower's calibrated range (counts) its ``observation.state`` grid gives, or None."""
        return tuple(c.counts for c in self.state)

    def degrees_per_unit(self) -> np.ndarray:
        """(5,) the follower's degrees per normalised unit per arm joint, from its grids (:func:`degrees_per_unit`).

        Raises:
          ValueError: the recording is not normalised, or a joint of the follower has no grid (too few distinct
            values, or not raw readings): then only the follower's calibration file can say its scale.
        """
        if not self.normalised:
            raise ValueError(f'the recording must be in LeRobot\'s -100..100 normalisation to have a scale per unit, '
                             f'got {self.units}')
        missing = [j for j, n in zip(self.joints, self.follower_counts) if n is None]
        if missing:
            raise ValueError(f'the follower\'s calibrated range cannot be read off observation.state for '
                             f'{", ".join(missing)} (no grid of encoder counts: '
                             f'{", ".join(self.state[self.joints.index(j)].mode for j in missing)}); give the '
                             f'follower\'s LeRobot calibration file')
        return degrees_per_unit(self.follower_counts)

    def rows(self) -> list[dict]:
        """Per arm joint, the evidence: the leader's and the follower's calibrated range off their grids (counts),
        the largest distance from those grids and from LeRobot's degree grid (steps), the frames at exactly ±100,
        and the follower's degrees per unit (NaN where unknown)."""
        scale = (degrees_per_unit([np.nan if n is None else n for n in self.follower_counts])
                 if self.normalised else np.full(len(self.joints), np.nan))
        out = []
        for j, a, s, d in zip(self.joints, self.action, self.state, scale):
            out.append(dict(joint=j, leader_counts=a.counts, follower_counts=s.counts,
                            grid_offset=max((c.grid_offset for c in (a, s) if c.grid_offset is not None),
                                            default=math.nan),
                            degree_offset=min(a.degree_offset, s.degree_offset),
                            leader_at_100=a.at_low + a.at_high, follower_at_100=s.at_low + s.at_high,
                            deg_per_unit=float(d)))
        return out

    def summary(self) -> str:
        """One line: the units and their evidence."""
        if self.units == RANGE_M100_100:
            counts = [c.counts for c in self.state + self.action if c.counts is not None]
            clamped = sum(c.at_low + c.at_high for c in self.action + self.state)
            return (f"LeRobot's -100..100 normalisation (every arm joint's values on a grid of 200/N with N = "
                    f"{min(counts)} to {max(counts)} encoder counts per calibrated range, {clamped} values at exactly "
                    f"±100), not degrees" if counts else
                    f"LeRobot's -100..100 normalisation ({clamped} values at exactly ±100, none beyond), not degrees")
        if self.units == DEGREES:
            return "degrees (LeRobot's use_degrees: values on its grid of 360/4095 degrees, or beyond ±100)"
        if self.units == 'mixed':
            return (f'mixed: the action (leader) in {self.action_units}, observation.state (follower) in '
                    f'{self.state_units}')
        if 'either' in (self.action_units, self.state_units):
            return ('not proven: every joint\'s values fit both LeRobot\'s degree grid and a -100..100 grid of '
                    f'{EITHER_COUNTS} counts, where the two coincide, and none lies beyond ±100 or at exactly ±100; '
                    'read as degrees, as LeRobot names them')
        return ('not proven: the values lie on no grid of encoder counts (a processed or simulated recording?), none '
                'clamped at ±100; read as degrees, as LeRobot names them')


def identify_units(data: LeRobotDataset | Sequence[Episode]) -> RecordingUnits:
    """A recording's arm-joint units from its values (every episode's frames together): see the module docstring.

    Args:
      data: the recording, or its episodes, as recorded (each episode's ``joints`` naming the five arm joints).
    """
    episodes = list(data.episodes if isinstance(data, LeRobotDataset) else data)
    if not episodes or not all(isinstance(e, Episode) for e in episodes):
        raise ValueError(f'data must be a LeRobotDataset or episodes, at least one, got {data!r:.80}')
    columns = {}
    for feature in (ACTION, STATE):
        per_joint = []
        for j in ARM_JOINTS:
            if not all(j in e.joints for e in episodes):
                raise ValueError(f'every episode must have the arm joint {j}, got {episodes[0].joints}')
            values = np.concatenate([(e.action if feature == ACTION else e.state)[:, e.joints.index(j)]
                                     for e in episodes])
            per_joint.append(column_units(values))
        columns[feature] = tuple(per_joint)
    return RecordingUnits(joints=tuple(ARM_JOINTS), action=columns[ACTION], state=columns[STATE],
                          action_units=feature_units(columns[ACTION]), state_units=feature_units(columns[STATE]))


# --------------------------------------------------------------------------------------------------
# The follower's calibration, and the conversion
# --------------------------------------------------------------------------------------------------

def read_calibration(path: str | pathlib.Path) -> dict[str, tuple[int, int]]:
    """The calibrated ranges in a LeRobot calibration file: ``{joint: (range_min, range_max)}`` for the arm joints.

    LeRobot writes the file when an arm is calibrated (``Robot._save_calibration``), one object per motor with
    ``id``, ``drive_mode``, ``homing_offset``, ``range_min`` and ``range_max``; the SO-101 follower's lies in
    ``~/.cache/huggingface/lerobot/calibration/robots/so101_follower/<id>.json`` by default
    (``HF_LEROBOT_CALIBRATION``).

    Raises:
      FileNotFoundError: no such file.
      ValueError: not JSON, an arm joint missing, a range that is not whole counts 0 <= range_min < range_max <=
        4095, or a ``drive_mode`` other than 0 (the SO-101's calibration writes 0; another flips the sign).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'no calibration file at {path}')
    try:
        data = json.loads(path.read_text(encoding='utf-8'))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f'the calibration file {path} must be LeRobot\'s JSON, got: {err}') from None
    if not isinstance(data, dict):
        raise ValueError(f'the calibration file {path} must hold a JSON object (joint: calibration), got '
                         f'{type(data).__name__}')
    out = {}
    for j in ARM_JOINTS:
        entry = data.get(j)
        if not isinstance(entry, dict):
            raise ValueError(f'the calibration file {path} must calibrate {j}, got joints '
                             f'{", ".join(map(str, data)) or "none"}')
        low, high = entry.get('range_min'), entry.get('range_max')
        try:
            _check_range(low, high)
        except ValueError:
            raise ValueError(f'{j} in the calibration file {path} must have whole counts 0 <= range_min < range_max '
                             f'<= {MAX_COUNT}, got {low!r} and {high!r}') from None
        if entry.get('drive_mode', 0) != 0:
            raise ValueError(f'{j} in the calibration file {path} must have drive_mode 0 (the SO-101\'s), got '
                             f'{entry.get("drive_mode")!r}')
        out[j] = (int(low), int(high))
    return out


def calibration_scale(units: RecordingUnits, calibration: Mapping[str, tuple[int, int]]) -> np.ndarray:
    """(5,) degrees per unit from the follower's calibration, checked against the recording: each arm joint's range
    (range_max - range_min) must be the follower's grid where the recording shows one.

    Raises:
      ValueError: a joint missing, or a range that is not the recording's grid (another arm's file, or one from a
        later calibration).
    """
    counts = []
    for j, grid in zip(units.joints, units.follower_counts):
        if j not in calibration:
            raise ValueError(f'calibration must give the range of {j}, got {", ".join(calibration) or "none"}')
        low, high = calibration[j]
        _check_range(low, high)
        if grid is not None and high - low != grid:
            raise ValueError(f"the calibration's {j} range, {high - low} counts ({low} to {high}), must be the "
                             f"follower's grid in observation.state, {grid} counts: is it the follower's file, from "
                             f"the calibration the recording was made with?")
        counts.append(high - low)
    return degrees_per_unit(counts)


def convert(episodes: Sequence[Episode], deg_per_unit: Sequence[float]) -> list[Episode]:
    """Episodes in LeRobot's normalisation as degrees: every arm joint's action and state times its degrees per unit
    (the follower's, for both: see the module docstring); the gripper's 0..100 stays.

    Args:
      episodes: the episodes, as recorded.
      deg_per_unit: (5,) per arm joint, in ``ARM_JOINTS`` order, > 0.
    """
    scale = np.asarray(deg_per_unit, dtype=float)
    if scale.shape != (len(ARM_JOINTS),) or not np.all(np.isfinite(scale) & (scale > 0)):
        raise ValueError(f'deg_per_unit must be {len(ARM_JOINTS)} finite numbers > 0 (one per arm joint), got '
                         f'{deg_per_unit!r}')
    out = []
    for e in episodes:
        factor = np.ones(len(e.joints))
        for j, s in zip(ARM_JOINTS, scale):
            factor[e.joints.index(j)] = s
        out.append(dataclasses.replace(e, action=e.action * factor, state=e.state * factor))
    return out


def to_degrees(data: LeRobotDataset, *, calibration: Mapping[str, tuple[int, int]] | None = None
               ) -> tuple[LeRobotDataset, RecordingUnits]:
    """A recording with its arm joints in LeRobot's degrees, and what its units were (:func:`identify_units`).

    A normalised recording is converted with the follower's degrees per unit (:func:`convert`): from
    ``calibration`` when given (:func:`read_calibration`, checked against the grids: :func:`calibration_scale`),
    else from the follower's grids (:meth:`RecordingUnits.degrees_per_unit`). A recording in degrees, or whose units
    the values cannot tell (``unknown``), is returned as it is.

    Raises:
      ValueError: ``mixed`` units (the leader and the follower configured differently), a normalised recording whose
        follower shows no grid on some joint and no ``calibration``, a ``calibration`` that does not match the
        grids, or a ``calibration`` given for a recording that is not normalised.
    """
    units = identify_units(data)
    if units.units == 'mixed':
        raise ValueError(f'the recording\'s arm joints must all be in one unit, got {units.summary()}: record with '
                         f'the leader and the follower configured alike (use_degrees)')
    if not units.normalised:
        if calibration is not None:
            raise ValueError(f'a calibration converts a recording in LeRobot\'s -100..100 normalisation, got one in '
                             f'{units.summary()}; leave the calibration out')
        return data, units
    scale = (calibration_scale(units, calibration) if calibration is not None else units.degrees_per_unit())
    return dataclasses.replace(data, episodes=tuple(convert(data.episodes, scale))), units
