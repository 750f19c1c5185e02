"""physai.experiments.servo_panel: chapter 1's panel physics where the panel's sliders reach, and its top kp's slow
divergence (``bound-swing``), against MuJoCo's runs and the linear step."""

import math

import numpy as np
import pytest

from physai.engine import link
from physai.experiments import registry, servo_panel
from physai.interface.panel import common_controls
from physai.laws import stability
from physai.engine.link import LINK_INERTIA


SLIDER_KP_NEAR_1000 = 10 ** (134 * math.log10(30000) / 200)  # the panel's kp slider: 200 log steps, 1 … 30000


@pytest.mark.parametrize('kp', [998.22, 1000.0, SLIDER_KP_NEAR_1000])
def test_panel_euler_at_dampratio_one_breaks_where_the_so101_kv_holds(kp):
    """The live panel damps with dampratio 1: at kp ≈ 1000 and armature 0.028 its kv is over four times the
    SO-101's 2.731, and Euler, which takes kv explicitly, diverges (hω 0.88 > 0.83) where the SO-101's kv
    holds. Just past the bound's armature it settles; implicitfast settles even at armature 0."""
    h = 0.005
    panel = servo_panel.servo_step(kp, 0.028, h, 'Euler')
    assert panel.diverged and panel.params.h_omega < 2
    assert panel.params.kv_effective / 2.731 > 4
    so101_kv = link.step_response(kp, kv=2.731, armature=0.028, integrator='Euler')
    assert so101_kv.settled
    star = stability.critical_h_omega('Euler', 1.0)
    bound_armature = stability.armature_at_h_omega(star, kp, h, link_inertia=LINK_INERTIA)
    assert 0.028 < bound_armature < math.ceil(1e3 * bound_armature) / 1e3
    assert servo_panel.servo_step(kp, math.ceil(1e3 * bound_armature) / 1e3, h, 'Euler').settled
    assert servo_panel.servo_step(kp, 0.028, h, 'implicitfast').settled
    assert servo_panel.servo_step(kp, 0.0, h, 'implicitfast').settled


def test_panel_top_kp_sits_on_the_implicitfast_bound_and_never_settles():
    """kp 30000 at armature 0.028, ζ = 1: hω = 4.830, on implicitfast's bound 2 + 2√2 (growth per step
    1.001), so the link flips about the command for the whole run, neither flagged as diverged nor settled.
    discrete, which has no bound, settles at the same point."""
    kp_top = common_controls()[0].max
    run = servo_panel.servo_step(kp_top, 0.028, 0.005, 'implicitfast')
    assert run.params.h_omega == pytest.approx(2 + 2 * math.sqrt(2), abs=0.005)
    assert not run.diverged and not run.settled and run.p2p_deg > 90
    assert np.all(np.sign(np.diff(run.q[-20:])) != np.sign(np.diff(run.q[-21:-1])))  # flips every step
    assert servo_panel.servo_step(kp_top, 0.028, 0.005, 'discrete').settled


def test_top_kp_swing_is_a_slow_divergence_that_mujoco_grows_by_the_predicted_factor():
    """The panel's top kp under implicitfast sits a hair past the bound: growth 1.001 per step at 5 ms, an
    e-folding time near 5 s. MuJoCo's run grows by exactly the factor the linear step predicts, to 1 %."""
    rows = {r['quantity'].split(' from ')[0]: r for r in registry.run('bound-swing')}
    growth, efold = rows['growth per step - 1'], rows['e-folding time (s)']
    assert 0 < growth['linear_step'] < 0.002
    assert 3 < efold['linear_step'] < 8  # slow: longer than the panel's 3 s run, but finite
    assert efold['mujoco'] == pytest.approx(efold['linear_step'], rel=0.01)
    swing = rows['swing growth']
    assert swing['mujoco'] > 5 and swing['mujoco'] == pytest.approx(swing['linear_step'], rel=0.01)
    assert servo_panel.PANEL_KP_GRID[-1] == common_controls()[0].max  # the panel's top kp
