"""The book's numbers survive a last-bit change in every simulation (physai.engine.perturb).

MuJoCo repeats itself bit for bit on one processor, and differs in the last bits on another. The stored outputs
must not depend on those bits: ``PHYSAI_PERTURB`` nudges the start of every simulation physai runs, and what the
book prints must not move. ``make test`` also re-runs the notebooks under nbval with the nudge on.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from physai.engine import link, perturb

NUDGE = '1e-12'

ROOT = pathlib.Path(__file__).resolve().parents[1]

PRINTED_ELSEWHERE = {
    'sysid': 'chapter 4 prints servo_sysid.sysid_rows of its own fit, the rows this command computes',
    'truth-table': "chapter 4 prints servo_truth.truth_table of its folds (the held-out fold is the main fit, fitted "
                   "from the same start on the same episodes as this command's)",
    'firmware-ablation': "chapter 6 prints servo_firmware.ablation_rows of its folds (fitted from the same start on "
                         "the same episodes as this command's)",
}
"""Experiments a chapter prints through the same functions, though not as ``exp.table(exp.run())``."""


def printed_by_a_chapter() -> set[str]:
    """Experiments that a chapter runs and prints exactly as the command line does (``rows = exp.run()`` and
    ``exp.table(rows)``, or ``tables.show(exp, rows)`` whose text is the same, in one cell): the nudged nbval run of
    ``make test`` already shows their tables survive the nudge, so this test need not compute them twice more."""
    names = set()
    for path in sorted((ROOT / 'notebooks').glob('[0-9][0-9]_*.ipynb')):
        for cell in json.loads(path.read_text(encoding='utf-8'))['cells']:
            source = ''.join(cell['source']) if cell['cell_type'] == 'code' else ''
            for var, name in re.findall(r"(\w+) = registry\.get\('([^']+)'\)", source):
                for rows in re.findall(rf"(\w+) = {var}\.run\(\)", source):
                    if re.search(rf"{var}\.table\({rows}\)|tables\.show\({var}, {rows}\)", source):
                        names.add(name)
    return names


ALL_TABLES = '''
import sys
from physai.experiments import registry
skip = set(sys.argv[1:])
for name in registry.names():
    if name in skip:
        continue
    exp = registry.get(name)
    for arg in exp.choices or (None,):
        print(f'## {name} {arg or ""}')
        print(exp.table(exp.run(arg), arg))
'''


def test_nudge_is_off_unless_asked(monkeypatch):
    """Without PHYSAI_PERTURB every run is exactly as it always was."""
    monkeypatch.delenv(perturb.ENV, raising=False)
    assert perturb.size() == 0.0
    q = np.array([0.5, -0.25])
    perturb.nudge(q)
    assert q.tolist() == [0.5, -0.25]


@pytest.mark.parametrize('text', ['abc', '-1e-12', '1e-3', 'nan', 'inf'])
def test_a_bad_nudge_is_refused_by_name(monkeypatch, text):
    """A nudge that is not a small non-negative angle is an error naming the variable and the range."""
    monkeypatch.setenv(perturb.ENV, text)
    with pytest.raises(ValueError, match=r'PHYSAI_PERTURB must be a number in \[0, 1e-06\] rad'):
        perturb.size()


def test_nudge_reaches_the_simulation_and_only_its_last_bits(monkeypatch):
    """The nudge changes a step response's trajectory, but by no more than the nudge itself grows to."""
    monkeypatch.delenv(perturb.ENV, raising=False)
    plain = link.step_response(100.0)
    monkeypatch.setenv(perturb.ENV, NUDGE)
    nudged = link.step_response(100.0)
    difference = np.max(np.abs(plain.q - nudged.q))
    assert 0 < difference < 1e-10
    assert f'{plain.sag_deg:.4f}' == f'{nudged.sag_deg:.4f}'


def _start_tables(nudge: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop(perturb.ENV, None)
    if nudge:
        env[perturb.ENV] = nudge
    skip = sorted(printed_by_a_chapter() | set(PRINTED_ELSEWHERE))
    return subprocess.Popen([sys.executable, '-c', ALL_TABLES, *skip], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=1800)
    assert process.returncode == 0, err[-3000:]
    return out


def test_the_tables_left_to_the_nudged_notebooks_are_there():
    """The experiments this test leaves to the chapters' nudged run are registered, and most of them are found in
    the chapters by their code (a renamed variable only makes this test compute a table again)."""
    from physai.experiments import registry
    found = printed_by_a_chapter()
    assert set(PRINTED_ELSEWHERE) <= set(registry.names()) and found <= set(registry.names())
    assert len(found) >= len(registry.names()) // 2


@pytest.mark.slow
def test_every_command_line_table_survives_a_last_bit_change():
    """`python -m physai NAME` prints the same table when every simulation starts 1e-12 rad away (the tables the
    chapters print the same way are checked by the nudged notebooks: :func:`printed_by_a_chapter`)."""
    runs = [_start_tables(None), _start_tables(NUDGE)]  # side by side, one per core
    plain, nudged = (_finish(run) for run in runs)
    moved = [(a, b) for a, b in zip(plain.splitlines(), nudged.splitlines()) if a != b]
    assert len(plain.splitlines()) == len(nudged.splitlines())
    assert not moved, 'lines that moved (plain | nudged):\n' + '\n'.join(f'{a}\n{b}' for a, b in moved)
