"""physai.laws.stability: the closed-form bounds (h²ω² < 4 ± 2hc) against growth per step and MuJoCo runs."""

import math

import numpy as np
import pytest

from physai.experiments import servo_panel
from physai.laws import stability
from physai.engine.link import LINK_INERTIA, ServoParams, step_responses
from physai.laws.sim import semi_implicit_euler, step_growth

H, KP, KV = 0.005, 100.0, 1.0


@pytest.mark.parametrize('call, message', [
    (lambda: stability.critical_armature(KP, kv=KV, damping=0.1, timestep=H, link_inertia=-0.01),
     'link_inertia must be a finite number >= 0 kg·m², got -0.01'),  # a negative inertia gave a larger armature
    (lambda: stability.critical_inertia(-KP, kv=KV, damping=0.1, timestep=H), 'kp must be a finite number >= 0'),
    (lambda: stability.critical_inertia(KP, kv=-1.0, damping=0.1, timestep=H), 'kv must be a finite number >= 0'),
    (lambda: stability.critical_inertia(KP, kv=KV, damping=math.nan, timestep=H), 'damping must be a finite number'),
    (lambda: stability.critical_inertia(KP, kv=KV, damping=0.1, timestep=0.0), r'timestep must be in \(0, 0.1\] s'),
    (lambda: stability.critical_inertia(KP, kv=KV, damping=0.1, timestep=H, integrator='RK4'),
     'integrator must be one of Euler, implicit, implicitfast'),
    (lambda: stability.armature_at_h_omega(0.0, KP, H, link_inertia=0.001), 'h_omega must be a finite number > 0, '
                                                                             'got 0.0'),  # was ZeroDivisionError
    (lambda: stability.armature_at_h_omega(0.5, -KP, H, link_inertia=0.001), 'kp must be a finite number > 0'),
    (lambda: stability.armature_at_h_omega(0.5, KP, 1e308, link_inertia=0.001), r'timestep must be in \(0, 0.1\]'),
    (lambda: stability.armature_at_h_omega(0.5, KP, H, link_inertia=None), 'link_inertia must be a finite number'),
    (lambda: stability.c_implicit_for('Euler', 'abc', 0.1, 0.1), "kv must be a number or an array of numbers"),
    (lambda: stability.c_implicit_for('Euler', KV, -0.1, 0.1), 'damping must be a finite number >= 0'),
    (lambda: stability.c_implicit_for('Euler', KV, 0.1, math.nan), 'inertia must be a finite number > 0'),
    (lambda: stability.oscillation_bound(-H, 1.0), 'h must be a finite number > 0 s'),
    (lambda: stability.oscillation_bound(H, math.inf), 'c must be a finite number >= 0 1/s'),
    (lambda: stability.oscillation_bound(H, 1.0, -1.0), 'c_implicit must be a finite number >= 0 1/s'),
    (lambda: stability.is_stable_linear(math.nan, 1.0, 1.0), 'h must be a finite number > 0 s'),
    (lambda: stability.is_stable_linear(H, -1.0, 1.0), 'w2 must be a finite number >= 0 1/s²'),
    (lambda: stability.loglog_slope([1.0, math.nan, 4.0], [1.0, 2.0, 3.0]), 'x must hold finite numbers > 0'),
    (lambda: stability.loglog_slope([1.0, 2.0], ['a', 'b']), 'y must be a number or an array of numbers'),
    (lambda: stability.critical_rise_time(-KP, 0.01), r'kp must be finite numbers > 0 N·m/rad, got -100.0'),
    (lambda: stability.critical_rise_time(KP, 0.0), 'inertia must be finite numbers > 0 kg·m²'),
    (lambda: stability.integrator_growth('Euler', H, math.nan, 1.0), 'w2 must be a number >= 0'),
    (lambda: stability.integrator_growth('Euler', H, 1.0, 1.0, c_joint=-1.0), 'c_joint must be a number >= 0'),
    (lambda: stability.integrator_growth('Verlet', H, 1.0, 1.0), 'integrator must be one of'),
    (lambda: stability.critical_h_omega('Euler', -1.0), 'dampratio must be a finite number >= 0, got -1.0'),
    (lambda: stability.critical_h_omega('Euler', [1.0]), r'dampratio must be a finite number >= 0, got \[1.0\]'),
])
def test_each_bad_argument_of_the_stability_laws_is_named_with_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_h_omega_whose_square_overflows_asks_for_no_inertia_instead_of_an_overflow_error():
    assert stability.armature_at_h_omega(1e308, KP, H, link_inertia=0.001) == -0.001


def test_critical_h_omega_without_a_crossing_says_so_instead_of_returning_the_scans_start():
    """Euler takes kv explicitly: at dampratio 1e6 the step is unstable already at the scan's first hω, 1e-3, and
    the bisection used to return that first hω as the bound."""
    with pytest.raises(ValueError, match=r'dampratio must leave Euler stable at the smallest hω scanned \(0.001\), '
                                         r'got 1000000.0, unstable there already: no crossing'):
        stability.critical_h_omega('Euler', 1e6)
    assert stability.critical_h_omega('discrete', 1e6) == math.inf  # never diverges: no crossing, and it says so
    assert stability.critical_h_omega('Euler', 1) is stability.critical_h_omega('Euler', 1.0)  # one cached value


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
