"""What a table's columns mean to a reader: a readable name and a unit for every column key.

A table of the book is rows of dicts printed with a column spec, ``((key, format), ...)``
(:func:`physai.experiments.registry.format_table`). The text table's header is the key itself, ``sag_deg``, which is
also the row's key in ``python -m physai NAME --json``. The page shows a readable header, "sag (°)", made from the
same spec by :func:`describe`. A column's unit comes from the first of these that applies:

1. the spec: a third element, ``('peak_force', '.2f', 'N·m')``, for a column whose key does not say its unit;
2. the key's unit suffix (:data:`UNIT_SUFFIXES`): ``sag_deg`` °, ``rise_ms`` ms, ``max_abs_diff_rad`` rad;
3. MuJoCo's own names and the book's recurring quantities (:data:`QUANTITIES`), on the book's hinge joints:
   ``kp`` N·m/rad, ``kv`` and ``damping`` N·m·s/rad, ``armature`` kg·m², ``forcerange`` N·m, ...;
4. a bound of another column of the same table, ``X_min``, ``X_max``, ``X_low`` or ``X_high``: the unit of ``X``
   or of ``X`` with a unit suffix (``loo_min`` of ``loo_deg``, ``p2p_low`` of ``p2p_rad``, ``kp_max`` of ``kp``).

Otherwise the column has none: a count, a ratio, a growth per step, a verdict, a text, or values whose unit changes
from row to row (those tables carry it in a row's text). The name is the key without its unit suffix, underscores as
spaces, unless :data:`LABELS` gives a better one (``h_omega`` hω, ``rise_ms`` "rise time").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence


UNIT_SUFFIXES = (('_rad_s', 'rad/s'), ('_deg', '°'), ('_rad', 'rad'), ('_ms', 'ms'), ('_s', 's'),
                 ('_hz', 'Hz'), ('_pct', '%'), ('_mm', 'mm'), ('_cm', 'cm'), ('_kg', 'kg'))
"""(suffix, unit) of the keys that name their unit, longest first where one ends another (``_rad_s`` before ``_s``)."""

QUANTITIES = {
    'kp': 'N·m/rad', 'kv': 'N·m·s/rad', 'damping': 'N·m·s/rad', 'armature': 'kg·m²', 'frictionloss': 'N·m',
    'forcerange': 'N·m', 'inertia': 'kg·m²', 'M_ii': 'kg·m²', 'link_inertia': 'kg·m²', 'timestep': 's',
    'qpos': 'rad', 'qvel': 'rad/s', 'actuator_force': 'N·m', 'qfrc_actuator': 'N·m',
}
"""Units of MuJoCo's names (``kp``, ``armature``, ``qpos``, ...) and of the book's recurring quantities, for the
hinge joints of every model in the book."""

BOUNDS = ('_min', '_max', '_low', '_high')
"""Suffixes of a column that bounds another of its table, and so shares its unit (rule 4)."""

LABELS = {
    'rise': 'rise time', 'max_abs_diff': 'max |diff|', 'h_omega': 'hω', 'h_omega_no_armature': 'hω without armature',
    'T_omega': 'Tω', 'h2w2': 'h²ω²', 'h_c': 'hc', 'h_kv_over_I': 'h·kv/I', 'M_ii': 'Mᵢᵢ',
    'one_plus_tr_plus_det': '1 + tr + det', 'gainprm0': 'gainprm[0]', 'vs_model_limit_2': 'vs model limit 2',
    'beta': 'β', 'p_bam': 'BAM P', 'no_armature_1ms': 'no armature, 1 ms', 'in_loop': 'in-loop', 'in_step': 'in-step',
    'in_loop_growth': 'in-loop growth', 'in_step_growth': 'in-step growth',
    'at_3s': 'chattering at 3 s', 'at_30s': 'chattering at 30 s', 'at_100s': 'chattering at 100 s',
    'half_caught': 'half caught between', 'euler_clamped_at_3s': 'Euler clamped, chatters at 3 s',
    'euler_clamped_p2p': 'Euler clamped, p2p', 'no_armature_at_30s': 'no armature, at 30 s',
    'chattering_3s': 'chattering at 3 s', 'chattering_30s': 'chattering at 30 s', 'p2p_3s': 'p2p at 3 s',
    'p2p_30s': 'p2p at 30 s',
}
"""Readable names of the keys (without their unit suffix) whose spelled-out form reads badly."""

WORDS = {'mae': 'MAE', 'euler': 'Euler', 'mujoco': 'MuJoCo', 'pd': 'PD', 'bam': 'BAM', 'loo': 'LOO', 'heldout': 'held-out'}
"""Words of a key written as the book writes them in prose."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Column:
    """One column of a table as a reader sees it."""

    key: str
    """The row's key and the text table's header, e.g. ``sag_deg``."""
    fmt: str
    """Its format spec, e.g. ``.4f`` (``s`` for text)."""
    label: str
    """The readable name, e.g. ``sag``."""
    unit: str
    """The unit, e.g. ``°``, or '' for none."""

    @property
    def header(self) -> str:
        """``label (unit)``, or the label alone when the column has no unit."""
        return f'{self.label} ({self.unit})' if self.unit else self.label


def split_unit(key: str) -> tuple[str, str]:
    """``(stem, unit)`` of a key by its unit suffix: ``('sag', '°')`` for ``sag_deg``, ``(key, '')`` without one."""
    for suffix, unit in UNIT_SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[:-len(suffix)], unit
    return key, ''


def _bound(key: str) -> tuple[str, str]:
    """``(base, bound)`` of a key that ends in a bound of :data:`BOUNDS` (``('lag_ms', 'min')``), else ``(key, '')``."""
    for bound in BOUNDS:
        if key.endswith(bound) and len(key) > len(bound):
            return key[:-len(bound)], bound[1:]
    return key, ''


def label(key: str) -> str:
    """The readable name of a key: :data:`LABELS`, or its stem with the words of :data:`WORDS`, spaces for ``_``.

    A bound of a quantity with a unit suffix reads as the quantity's name and the bound: ``lag_ms_min`` "lag min".
    """
    stem, unit = split_unit(key)
    base, bound = _bound(key)
    if not unit and bound and split_unit(base)[1]:
        return f'{label(base)} {bound}'
    if stem in LABELS:
        return LABELS[stem]
    return ' '.join(WORDS.get(word, word) for word in stem.split('_') if word)


def _unit(key: str, keys: Sequence[str]) -> str:
    unit = split_unit(key)[1]
    if unit:
        return unit
    if key in QUANTITIES:
        return QUANTITIES[key]
    base, bound = _bound(key)
    if bound:
        if split_unit(base)[1] or base in QUANTITIES:
            return _unit(base, keys)
        for other in keys:  # the column it bounds, with a unit suffix: loo_min of loo_deg
            stem, unit = split_unit(other)
            if other != key and stem == base and unit:
                return unit
    return ''


def checked_spec(columns: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
    """A column spec, ``((key, format), ...)`` or ``((key, format, unit), ...)``, as a tuple of tuples.

    Raises:
      ValueError: an entry that is not 2 or 3 texts, (key, format) or (key, format, unit).
    """
    if isinstance(columns, (str, bytes)) or not all(
            isinstance(c, (tuple, list)) and len(c) in (2, 3) and all(isinstance(x, str) for x in c)
            for c in columns):
        raise ValueError('columns must be (key, format) or (key, format, unit) entries of text, e.g. '
                         f'(("kp", ".0f"), ("peak_force", ".2f", "N·m")), got {columns!r}')
    return tuple(tuple(c) for c in columns)


def describe(columns: Sequence[Sequence[str]]) -> tuple[Column, ...]:
    """The columns of a spec, ``((key, format), ...)`` or ``((key, format, unit), ...)``, with names and units.

    Raises:
      ValueError: as :func:`checked_spec`.
    """
    columns = checked_spec(columns)
    keys = [c[0] for c in columns]
    return tuple(Column(key=c[0], fmt=c[1], label=label(c[0]), unit=c[2] if len(c) == 3 else _unit(c[0], keys))
                 for c in columns)
