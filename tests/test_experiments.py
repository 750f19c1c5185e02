"""Chapter 1's experiments and the command line that prints them."""

import json
import math
import subprocess
import sys

import pytest

from physai.experiments import registry
from physai.__main__ import main

KEYS = {
    'actuator-laws': ['actuator', 'gainprm0', 'biasprm', 'max_error'],
    'link': ['quantity', 'ours', 'mujoco'],
    'servo-loop': ['kp', 'max_abs_diff_rad', 'sag_deg', 'servo_sag_deg', 'rise_ms'],
    'growth': ['kp', 'armature', 'h_omega', 'euler_growth', 'implicitfast_growth', 'mujoco_euler',
               'mujoco_implicitfast'],
    'kp-sweep': ['kp', 'kv', 'sag_deg', 'sag_linear_deg', 'sag_exact_deg', 'rise_ms'],
    'armature-sweep': ['armature', 'inertia', 'h_omega', 'euler', 'implicitfast', 'discrete',
                       'euler_clamped_chatters', 'euler_clamped_p2p_deg'],
    'kp-limit': ['kp', 'h_omega', 'implicitfast', 'discrete'],
}


def _json_rows(capsys, *argv):
    assert main([*argv, '--json']) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize('name', sorted(KEYS))
def test_json_rows_have_exactly_the_documented_keys(capsys, name):
    rows = _json_rows(capsys, name)
    assert rows and all(list(row) == KEYS[name] for row in rows)


def test_every_registered_experiment_prints_json_with_its_columns(capsys):
    """Whatever a chapter registers, its JSON rows carry exactly the table's columns."""
    for name in registry.names():
        exp = registry.get(name)
        if name in KEYS or exp.choices:
            continue  # checked above, or by the chapter's own tests per argument
        rows = _json_rows(capsys, name)
        assert all(list(row) == [key for key, _ in exp.columns] for row in rows), name


def test_table_and_json_come_from_the_same_rows(capsys):
    assert main(['kp-sweep']) == 0
    table = capsys.readouterr().out.splitlines()
    rows = _json_rows(capsys, 'kp-sweep')
    assert len(table) == len(rows) + 1
    assert table[1].split()[2] == f"{rows[0]['sag_deg']:.4f}"


def test_list_names_every_experiment(capsys):
    assert main(['list']) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == registry.names()
    assert set(KEYS) <= set(listed)


def test_unknown_experiment_exits_2_and_lists_the_names():
    proc = subprocess.run([sys.executable, '-m', 'physai', 'kp-sweeep'], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "got 'kp-sweeep'" in proc.stderr
    assert 'kp-sweep' in proc.stderr.split('experiment must be one of')[1].split(', ')


def test_hand_laws_agree_with_mujoco_to_1e_12():
    """The round-off columns report the bound 1e-12 (printed '< 1e-12'), never a raw last-bit difference."""
    assert all(row['max_error'] == 1e-12 for row in registry.run('actuator-laws'))
    assert all(row['max_abs_diff_rad'] == 1e-12 for row in registry.run('servo-loop'))
    assert '< 1e-12' in registry.get('servo-loop').table(registry.run('servo-loop'))
    for row in registry.run('link'):
        assert row['ours'] == pytest.approx(row['mujoco'], rel=1e-12)


def test_growth_above_one_exactly_where_mujoco_diverges():
    """The linearized growth per step predicts every stable / diverged cell of the real runs."""
    for row in registry.run('growth'):
        assert (row['euler_growth'] > 1) == (row['mujoco_euler'] == 'diverged'), row
        assert (row['implicitfast_growth'] > 1) == (row['mujoco_implicitfast'] == 'diverged'), row


def test_kp_sweep_sag_is_the_exact_static_sag():
    for row in registry.run('kp-sweep'):
        assert row['sag_deg'] == pytest.approx(row['sag_exact_deg'], abs=1e-3)
        assert row['sag_linear_deg'] == pytest.approx(math.degrees(0.2943 / row['kp']))


def test_table_uses_fixed_precision():
    rows = [{'x': 1 / 3, 'y': [1.0, 2.0], 'z': 'ok', 'w': math.nan}]
    assert registry.format_table(rows, [('x', '.3f'), ('y', '.1f'), ('z', 's'), ('w', '.2f')]) == (
        '    x        y   z    w\n0.333  1.0 2.0  ok  nan')


def test_nan_becomes_null_in_json():
    assert json.loads(registry.to_json([{'a': math.nan, 'b': 1.5}])) == [{'a': None, 'b': 1.5}]


def test_list_as_json_names_every_experiment_with_its_choices(capsys):
    rows = _json_rows(capsys, 'list')
    assert [row['name'] for row in rows] == registry.names()
    assert all(set(row) == {'name', 'summary', 'choices'} for row in rows)
