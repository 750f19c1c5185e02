"""Chapter 2's analysis of the divergence map: the kv on the stability bounds that the map draws, the largest
kd the explicit PD tolerates at the Experiment's timestep, and the claims the chapter makes from them."""

import math

import numpy as np
import pytest

from physai.engine import pendulum
from physai.experiments import actuator_models
from physai.laws.drives import IdealPD, ImplicitPD

I = pendulum.LINK_INERTIA
H = pendulum.TIMESTEP
IMPLICIT = ('implicitfast', 'implicit')


def _explicit_kv(kp, h):
    """The explicit PD's bound solved by hand: h²kp/I = 4 - 2h·kv/I."""
    return 2 * I / h - h * kp / 2


def _implicit_kv(kp, h):
    """The implicit damper's bound solved by hand: h²kp/I = 4 + 2h·kv/I."""
    return h * kp / 2 - 2 * I / h


@pytest.mark.parametrize('kp', [0.0, 100.0, 1000.0, 10000.0])
@pytest.mark.parametrize('h', [0.0005, H, 0.02])
def test_kv_bound_solves_the_oscillation_bound_for_kv(kp, h):
    """Euler (the explicit PD) has its bound at kv = 2I/h - h·kp/2, implicitfast and implicit at its mirror."""
    assert actuator_models.kv_bound(kp, h) == pytest.approx(_explicit_kv(kp, h), rel=1e-12, abs=1e-9)
    for integrator in IMPLICIT:
        assert actuator_models.kv_bound(kp, h, integrator=integrator) == pytest.approx(
            _implicit_kv(kp, h), rel=1e-12, abs=1e-9)


def test_kv_bound_keeps_the_shape_of_the_timesteps_and_takes_another_inertia():
    h = np.geomspace(3e-4, 3e-2, 7).reshape(7, 1)
    kv = actuator_models.kv_bound(1000.0, h, integrator='implicitfast', inertia=0.5)
    assert kv.shape == (7, 1)
    np.testing.assert_allclose(kv, h * 1000.0 / 2 - 2 * 0.5 / h, rtol=1e-12)
    assert isinstance(actuator_models.kv_bound(1000.0, H), float)


@pytest.mark.parametrize('kp, h', [(100.0, H), (1000.0, 0.001), (10.0, 0.02)])
def test_growth_per_step_crosses_one_at_the_explicit_bound(kp, h):
    """The explicit PD is stable just below the kv on its bound and diverges just above (chapter 1's growth)."""
    kv = actuator_models.kv_bound(kp, h)
    assert kv > 0
    below, _ = actuator_models.explicit_implicit_growth(kp, 0.99 * kv, h)
    above, _ = actuator_models.explicit_implicit_growth(kp, 1.01 * kv, h)
    assert below < 1 < above


@pytest.mark.parametrize('kp, h', [(10000.0, 0.01), (10000.0, 0.02), (3000.0, 0.02)])
def test_growth_per_step_crosses_one_at_the_implicit_bound(kp, h):
    """The implicit damper holds just above the kv on its bound and fails just below: a spring too stiff."""
    kv = actuator_models.kv_bound(kp, h, integrator='implicitfast')
    assert kv > 0
    _, below = actuator_models.explicit_implicit_growth(kp, 0.99 * kv, h)
    _, above = actuator_models.explicit_implicit_growth(kp, 1.01 * kv, h)
    assert above < 1 < below


def test_mujoco_holds_the_explicit_pd_just_below_the_kv_limit_and_not_just_above():
    """The chapter's kv_limit (kp 100 at 1/360 s) is where MuJoCo's explicit PD starts to diverge; the implicit
    PD holds on both sides."""
    kv_limit = actuator_models.kv_bound(100.0, H)
    runs = pendulum.simulate([IdealPD(kp=100.0, kv=0.97 * kv_limit), IdealPD(kp=100.0, kv=1.03 * kv_limit),
                              ImplicitPD(kp=100.0, kv=1.03 * kv_limit)], command=pendulum.HORIZONTAL, duration=3.0)
    assert [r.diverged for r in runs] == [False, True, False]


def test_kv_limit_lies_between_the_kds_the_chapter_contrasts():
    """"The explicit PD diverges at kd 100 but not at kd 50": the boundary, printed to one decimal, lies between,
    and far enough from a rounding edge that no processor prints another digit."""
    kv_limit = actuator_models.kv_bound(100.0, H)
    assert 50 < kv_limit < 100
    assert kv_limit == pytest.approx(2 * I / H - H * 100 / 2, rel=1e-12)
    tenths = 10 * kv_limit
    assert abs(tenths - math.floor(tenths) - 0.5) < 0.5 - 1e-6


def test_the_map_cells_lie_on_the_side_of_the_bounds_the_figure_draws():
    """Every map cell where the explicit PD diverges lies above its bound (solid line, or everywhere where no kv > 0
    is on it), every stable one below; implicitfast diverges exactly below its bound (the dashed line), only at
    kp 10000, and never where the explicit PD holds."""
    rows = actuator_models.divergence_map()
    for r in rows:
        explicit_kv = actuator_models.kv_bound(r['kp'], r['timestep'])
        implicit_kv = actuator_models.kv_bound(r['kp'], r['timestep'], integrator='implicitfast')
        assert (r['explicit'] == 'diverged') == (r['kv'] > explicit_kv), r
        assert (r['implicit'] == 'diverged') == (r['kv'] < implicit_kv), r
        # no cell sits so near a bound that a last-bit change could move it across
        for bound in (explicit_kv, implicit_kv):
            assert bound <= 0 or abs(r['kv'] / bound - 1) > 0.01, r
    both = [r for r in rows if r['implicit'] == 'diverged']
    assert both and {r['kp'] for r in both} == {10000}
    assert all(r['explicit'] == 'diverged' for r in both)
    assert any(r['explicit'] == 'diverged' and r['implicit'] == 'stable' for r in rows)


@pytest.mark.parametrize('kwargs, message', [
    (dict(kp=-1.0, timestep=H), 'kp must be a finite number >= 0 N·m/rad, got -1.0'),
    (dict(kp=100.0, timestep=0.0), r'timestep must be in \(0, 0.1\] s, got 0.0'),
    (dict(kp=100.0, timestep=np.array([0.001, 0.2])), r'timestep must be in \(0, 0.1\] s'),
    (dict(kp=100.0, timestep=H, integrator='RK4'), "integrator must be one of Euler, implicit, implicitfast, got 'RK4'"),
    (dict(kp=100.0, timestep=H, inertia=0.0), 'inertia must be a finite number > 0 kg·m², got 0.0'),
])
def test_kv_bound_rejects_bad_input_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        actuator_models.kv_bound(**kwargs)
