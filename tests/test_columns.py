"""physai.experiments.columns: a readable name and a unit for every column of the book's tables."""

import pytest

from physai.experiments import columns, registry


def header(key, *extra, keys=()):
    spec = [(k, '.1f') for k in keys] + [(key, '.1f', *extra)]
    return columns.describe(spec)[-1].header


@pytest.mark.parametrize('key, expected', [
    ('sag_deg', 'sag (°)'), ('rise_ms', 'rise time (ms)'), ('max_abs_diff_rad', 'max |diff| (rad)'),
    ('v_rad_s', 'v (rad/s)'), ('settling_s', 'settling (s)'), ('rate_hz', 'rate (Hz)'), ('overshoot_pct', 'overshoot (%)'),
    ('deepest_mm', 'deepest (mm)'), ('min_z_cm', 'min z (cm)'), ('heldout_mae_deg', 'held-out MAE (°)'),
])
def test_a_unit_suffix_becomes_the_unit_and_the_rest_the_name(key, expected):
    assert header(key) == expected


@pytest.mark.parametrize('key, expected', [
    ('kp', 'kp (N·m/rad)'), ('kv', 'kv (N·m·s/rad)'), ('damping', 'damping (N·m·s/rad)'),
    ('armature', 'armature (kg·m²)'), ('forcerange', 'forcerange (N·m)'), ('frictionloss', 'frictionloss (N·m)'),
    ('qpos', 'qpos (rad)'), ('M_ii', 'Mᵢᵢ (kg·m²)'),
])
def test_mujoco_names_carry_the_unit_mujoco_gives_them_on_a_hinge(key, expected):
    assert header(key) == expected


def test_a_bound_takes_the_unit_of_the_column_it_bounds():
    assert header('loo_min', keys=('loo_deg',)) == 'LOO min (°)'
    assert header('p2p_high', keys=('p2p_rad',)) == 'p2p high (rad)'
    assert header('kp_max') == 'kp max (N·m/rad)'
    assert header('lag_ms_min') == 'lag min (ms)'
    assert header('fitted_min') == 'fitted min'  # bounds of nothing with a unit: none


def test_a_unit_in_the_spec_wins_and_a_key_without_one_has_none():
    assert header('peak_force', 'N·m') == 'peak force (N·m)'
    assert header('growth') == 'growth'
    assert header('steps') == 'steps'  # ends in s, not in _s
    assert header('h_omega') == 'hω'


def test_every_registered_column_gets_a_header_and_a_unit_where_its_key_names_one():
    for name in registry.names():
        spec = registry.get(name).columns
        for cols in (spec.values() if isinstance(spec, dict) else [spec]):
            for column in columns.describe(cols):
                assert column.label and '_' not in column.label, (name, column)
                if columns.split_unit(column.key)[1]:
                    assert column.unit, (name, column)


def test_a_bad_spec_names_what_is_allowed():
    with pytest.raises(ValueError, match=r'\(key, format\) or \(key, format, unit\)'):
        columns.describe([('kp', '.1f', 'N·m/rad', 'extra')])
    with pytest.raises(ValueError, match=r'\(key, format\) or \(key, format, unit\)'):
        columns.describe('kp')
    with pytest.raises(ValueError, match=r'columns per choice'):
        registry.experiment('test-bad', summary='', columns={'a': (('kp', '.1f'),)}, choices=('b',))(lambda arg: [])
