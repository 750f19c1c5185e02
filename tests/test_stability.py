"""physai.laws.stability: the closed-form bounds (h²ω² < 4 ± 2hc) against growth per step and MuJoCo runs."""

import math

import numpy as np
import pytest

from physai.experiments import servo_panel
from physai.laws import stability
from physai.engine.link import LINK_INERTIA, ServoParams, step_responses
from physai.laws.sim import semi_implicit_euler, step_growth


# ---------------------------------------------------------------------------------------------
# the analytic stability bound

def test_e_folding_time_is_where_the_growth_compounds_to_e():
    """g^(τ/h) = e: 1.001 per step at 5 ms is about 5 s; decay gives the decay time, 1 gives inf."""
    tau = stability.e_folding_time(1.001, 0.005)
    assert 1.001 ** (tau / 0.005) == pytest.approx(math.e, rel=1e-12)
    assert stability.e_folding_time(1 / 1.001, 0.005) == pytest.approx(tau, rel=1e-12)
    assert math.isinf(stability.e_folding_time(1.0, 0.005))
    with pytest.raises(ValueError, match='growth must be'):
        stability.e_folding_time(0.0, 0.005)
    with pytest.raises(ValueError, match='h must be'):
        stability.e_folding_time(1.001, -1)

def test_critical_h_omega_matches_the_closed_forms():
    """ζ = 1: explicit damping h²ω² < 4 − 4hω, implicit damping h²ω² < 4 + 4hω; discrete has none."""
    assert stability.critical_h_omega('Euler') == pytest.approx(2 * (math.sqrt(2) - 1), rel=1e-9)
    assert stability.critical_h_omega('implicitfast') == pytest.approx(2 + 2 * math.sqrt(2),
                                                                     rel=1e-9)
    assert stability.critical_h_omega('implicit') == stability.critical_h_omega('implicitfast')
    assert 2.0 < stability.critical_h_omega('RK4') < 3.0
    assert math.isinf(stability.critical_h_omega('discrete'))


@pytest.mark.parametrize('integrator', ['Euler', 'implicitfast', 'RK4'])
def test_mujoco_diverges_beyond_the_growth_bound_and_not_inside_it(integrator):
    """Settings at 0.8 × hω* stay stable in MuJoCo, settings at 1.25 × hω* diverge."""
    h = 0.005
    star = stability.critical_h_omega(integrator)
    params, expected = [], []
    for armature in (0.0, 0.01, 0.05):
        inertia = LINK_INERTIA + armature
        for factor, diverges in ((0.8, False), (1.25, True)):
            kp = (factor * star / h) ** 2 * inertia
            params.append(ServoParams(kp=kp, armature=armature, timestep=h,
                                      integrator=integrator))
            expected.append(diverges)
    responses = step_responses(params, duration=servo_panel.STABILITY_STEPS * h)
    assert [servo_panel.unstable(r, -0.5) for r in responses] == expected


def test_dampratio_bounds_are_two_plus_minus_two_sqrt_two():
    """With kv = 2 sqrt(kp I) (ζ = 1), c = 2ω: Euler needs (hω)² + 4hω < 4, implicitfast (hω)² − 4hω < 4."""
    assert stability.critical_h_omega('Euler', 1.0) == pytest.approx(2 * math.sqrt(2) - 2, rel=1e-8)
    implicitfast = stability.critical_h_omega('implicitfast', 1.0)
    assert implicitfast == pytest.approx(2 + 2 * math.sqrt(2), rel=1e-8)
    assert math.isinf(stability.critical_h_omega('discrete', 1.0))


@pytest.mark.parametrize('integrator', ['Euler', 'implicitfast'])
def test_stability_bound_agrees_with_growth_per_step(integrator):
    """h²ω² < 4 + 4h·c_implicit − 2hc (with hc < 2(1 + h·c_implicit)) is exactly growth < 1."""
    rng = np.random.default_rng(3)
    for _ in range(400):
        kp, kv, damping = 10 ** rng.uniform(0, 4.5), rng.uniform(0, 5), rng.uniform(0, 1)
        inertia, h = 10 ** rng.uniform(-3.5, -1), rng.uniform(0.0005, 0.02)
        w2, c = kp / inertia, (kv + damping) / inertia
        ci = stability.c_implicit_for(integrator, kv, damping, inertia)
        growth = step_growth(semi_implicit_euler, h, w2, c, c_implicit=ci)
        if abs(growth - 1) > 1e-9:
            assert stability.is_stable_linear(h, w2, c, ci) == (growth < 1)
