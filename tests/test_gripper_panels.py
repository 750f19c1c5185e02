"""physai.interface.gripper_panels: chapter 5's kernel panel, its verdicts following from the runs they label."""

import numpy as np
import pytest

from physai.engine import gripper
from physai.experiments import gripper as grasp
from physai.interface import gripper_panels


@pytest.fixture(scope='module')
def panel():
    return gripper_panels.gripper_panel()


def test_panel_starts_at_the_spec_defaults_and_draws(panel):
    spec = gripper_panels.gripper_spec()
    assert [c.name for c in spec.controls] == list(panel.controls) and panel.values == spec.defaults
    assert panel.update()[:4] == b'\x89PNG' and panel.error is None


@pytest.mark.parametrize('change, verdict', [
    ({}, 'held'),
    ({'torque_limit': 2.94}, 'crushed'),
    ({'mu': 0.01}, 'slips'),
    ({'condim': 1}, 'slips'),
    ({'command': 'just inside the cube', 'torque_limit': 2.94, 'kp': 20000.0}, 'jitters'),
])
def test_panel_verdict_is_the_grasp_tables_on_the_same_run(panel, change, verdict):
    """The words on the panel are the verdict of chapter 5's table, computed from the run the panel draws."""
    panel.reset()
    values = {**gripper_panels.gripper_spec().defaults, **change}
    run, result = gripper_panels.panel_run(values)
    assert result['verdict'] == verdict == grasp.verdict(run)['verdict']
    assert gripper_panels.status(result).startswith(verdict)
    assert panel.update(**change)[:4] == b'\x89PNG' and panel.error is None


def test_panel_survives_the_ends_of_every_control(panel):
    """Every control at either end of its range, one at a time: the panel draws and says something."""
    for control in gripper_panels.gripper_spec().controls:
        ends = control.options if hasattr(control, 'options') else (control.min * control.scale,
                                                                    control.max * control.scale)
        for value in ends:
            panel.reset()
            png = panel.update(**{control.name: value})
            assert png[:4] == b'\x89PNG' and panel.error is None, (control.name, value, panel.error)


def test_panel_grasp_is_the_engines(panel):
    panel.reset()
    run, _ = gripper_panels.panel_run(panel.values)
    direct = gripper.grip(gripper_panels.panel_setup(panel.values), hold=gripper_panels.HOLD)
    assert np.array_equal(run.jaw_force, direct.jaw_force)
