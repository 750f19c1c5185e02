"""physai.interface.gripper_panels: chapter 5's panel's physics is the engine's grasp. The widget (the panel in
Jupyter and Colab: its start, its verdicts following from the runs they label, the ends of every control) is
tests/test_widget_arm.py's; the page panel's first view is tests/test_web_gripper.py's."""

import numpy as np

from physai.engine import gripper
from physai.interface import gripper_panels


def test_panel_grasp_is_the_engines():
    values = gripper_panels.gripper_spec().defaults
    run, _ = gripper_panels.panel_run(values)
    direct = gripper.grip(gripper_panels.panel_setup(values), hold=gripper_panels.HOLD)
    assert np.array_equal(run.jaw_force, direct.jaw_force)
