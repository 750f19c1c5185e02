"""The book's numbers survive a last-bit change in every simulation (physai.engine.perturb).

MuJoCo repeats itself bit for bit on one processor, and differs in the last bits on another. The stored outputs
must not depend on those bits: ``PHYSAI_PERTURB`` nudges the start of every simulation physai runs, and what the
book prints must not move. ``make test`` also re-runs the notebooks under nbval with the nudge on.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from physai.engine import link, perturb

NUDGE = '1e-12'

ALL_TABLES = '''
from physai.experiments import registry
for name in registry.names():
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
    return subprocess.Popen([sys.executable, '-c', ALL_TABLES], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=1800)
    assert process.returncode == 0, err[-3000:]
    return out


@pytest.mark.slow
def test_every_command_line_table_survives_a_last_bit_change():
    """`python -m physai NAME` prints the same table when every simulation starts 1e-12 rad away."""
    runs = [_start_tables(None), _start_tables(NUDGE)]  # side by side, one per core
    plain, nudged = (_finish(run) for run in runs)
    moved = [(a, b) for a, b in zip(plain.splitlines(), nudged.splitlines()) if a != b]
    assert len(plain.splitlines()) == len(nudged.splitlines())
    assert not moved, 'lines that moved (plain | nudged):\n' + '\n'.join(f'{a}\n{b}' for a, b in moved)
