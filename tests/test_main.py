"""physai.__main__: the command line over the registry (``python -m physai NAME``): the table and --json
rows with their documented keys, ``list``, and the errors for unknown names."""

import json
import subprocess
import sys

import pytest

from physai.experiments import actuator_models, registry
from physai.__main__ import main

SWEEP_KEYS = {
    'stiffness': ['kp', 'error_deg', 'servo_sag_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'damping': ['kv', 'dampratio', 'error_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'armature': ['armature', 'error_deg', 'overshoot_pct', 'rise_ms', 'settling_s'],
    'friction': ['frictionloss', 'decay_s', 'turns', 'final_speed'],
    'viscous-friction': ['damping', 'decay_s', 'turns', 'final_speed'],
    'effort-limit': ['forcerange', 'mean_angle_rad', 'p2p_rad'],
    'velocity-limit': ['velocity_limit', 'peak_speed', 'error_deg', 'overshoot_pct', 'rise_ms',
                       'settling_s'],
    'delay': ['delay_steps', 'delay_ms', 'lag_ms', 'overshoot_pct'],
}


@pytest.mark.parametrize('param', sorted(SWEEP_KEYS))
def test_actuator_sweep_json_has_its_keys_and_five_rows(capsys, param):
    assert main(['actuator-sweep', param, '--json']) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 5 and all(list(row) == SWEEP_KEYS[param] for row in rows)
    assert [row[SWEEP_KEYS[param][0]] for row in rows] == list(actuator_models.SWEEPS[param])
    assert main(['actuator-sweep', param]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == SWEEP_KEYS[param] and len(table) == 6


def test_actuator_sweep_rejects_an_unknown_parameter(capsys):
    assert main(['actuator-sweep', 'stifness']) == 2
    assert 'stiffness' in capsys.readouterr().err


KEYS = {
    'actuator-laws': ['actuator', 'gainprm0', 'biasprm', 'max_error'],
    'link': ['quantity', 'ours', 'mujoco'],
    'servo-loop': ['kp', 'max_abs_diff_rad', 'sag_deg', 'servo_sag_deg', 'rise_ms'],
    'growth': ['kp', 'armature', 'h_omega', 'euler_growth', 'implicitfast_growth', 'mujoco_euler',
               'mujoco_implicitfast'],
    'kp-sweep': ['kp', 'kv', 'sag_deg', 'sag_linear_deg', 'sag_exact_deg', 'rise_ms'],
    'armature-sweep': ['armature', 'inertia', 'h_omega', 'euler', 'implicitfast', 'discrete',
                       'euler_clamped_at_3s', 'euler_clamped_p2p_deg'],
    'kp-limit': ['kp', 'h_omega', 'implicitfast', 'discrete'],
}


def _json_rows(capsys, *argv):
    assert main([*argv, '--json']) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize('name', sorted(KEYS))
def test_json_rows_have_exactly_the_documented_keys(capsys, name):
    rows = _json_rows(capsys, name)
    assert rows and all(list(row) == KEYS[name] for row in rows)


def test_an_experiment_whose_rows_differ_from_its_columns_is_refused_by_name():
    """Experiment.run checks every row against the table's columns (so every chapter that runs an experiment checks
    its JSON keys): a key missing, added or out of order is an error naming the experiment and the row."""
    for rows in ([{'b': 1, 'a': 2}], [{'a': 1}], [{'a': 1, 'b': 2, 'c': 3}]):
        exp = registry.Experiment(name='demo', summary='', columns=(('a', 'd'), ('b', 'd')), func=lambda r=rows: r)
        with pytest.raises(RuntimeError, match=r"demo: row 0 has the keys"):
            exp.run()
    ok = registry.Experiment(name='demo', summary='', columns=(('a', 'd'), ('b', 'd')), func=lambda: [{'a': 1, 'b': 2}])
    assert ok.run() == [{'a': 1, 'b': 2}]


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


def test_list_as_json_names_every_experiment_with_its_choices(capsys):
    rows = _json_rows(capsys, 'list')
    assert [row['name'] for row in rows] == registry.names()
    assert all(set(row) == {'name', 'summary', 'choices'} for row in rows)


def test_fit_servo_is_a_subcommand_beside_the_tables_with_one_line_errors():
    """``fit-servo`` takes its own options (tests/test_identify.py covers them); a bad one is one line, exit 2."""
    proc = subprocess.run([sys.executable, '-m', 'physai', 'fit-servo', '/no/such/folder'], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and proc.stdout == ''
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and proc.stderr.startswith('error: DATASET')
