"""Build it, for real: each check passes the reference of physai.sim, fails a deliberately wrong function with a
message that names the input, what was expected and what it got, and says "not written yet" for an empty stub."""

import math

import numpy as np
import pytest

from physai import buildit, sim


@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_the_reference_implementation_passes_its_check(name):
    said = []
    result = buildit.check(getattr(sim, name), say=said.append, strict=True)
    assert result.passed and result.cases >= 3
    assert said == [f'✓ {name} passes: all {result.cases} cases agree with {buildit._ORACLE[name]}.']


def _no_clamp(ctrl, length, velocity, gainprm, biasprm, forcerange=None):
    return gainprm[0] * ctrl + biasprm[0] + biasprm[1] * length + biasprm[2] * velocity


def _kv_without_the_two(kp, dampratio, inertia):
    return dampratio * math.sqrt(kp * inertia)


def _explicit_euler(q, v, accel, h, c_implicit=0.0):
    return q + h * v, v + h * accel(q, v)  # position with the old velocity: not semi-implicit


def _loop_without_gravity(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    return sim.servo_loop(kp, kv, inertia, 0.0, h, nstep, q0=q0, u=u, damping=damping)


def _small_angle_sag(kp, tau_g, **kwargs):
    return tau_g / kp


def _growth_of_the_wrong_matrix(step, h, w2, c, **step_kwargs):
    return abs(1 - h * h * w2)


WRONG = {
    'actuator_force': (_no_clamp, 'expected 5 N·m, got'),
    'kv_from_dampratio': (_kv_without_the_two, 'expected 0.4072760121 N·m·s/rad, got 0.203638006'),
    'semi_implicit_euler': (_explicit_euler, 'at index 0 expected'),
    'servo_loop': (_loop_without_gravity, 'rad, got'),
    'servo_sag': (_small_angle_sag, 'net torque'),
    'step_growth': (_growth_of_the_wrong_matrix, 'expected'),
}


@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_a_wrong_function_fails_with_the_input_the_expected_value_and_what_it_got(name):
    wrong, expected_text = WRONG[name]
    said = []
    result = buildit.check(wrong, name, say=said.append)
    assert not result.passed
    assert said[0].startswith(f'✗ {name}(') and expected_text in said[0], said[0]
    with pytest.raises(buildit.BuildItError, match=name):
        buildit.check(wrong, name, say=lambda line: None, strict=True)


@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_the_stub_compiles_and_its_check_says_not_written_yet_without_raising(name):
    namespace = {}
    exec(compile(buildit.stub(name), f'<stub {name}>', 'exec'), namespace)
    said = []
    result = buildit.check(namespace[name], say=said.append, strict=True)
    assert not result.passed and result.cases == 0
    assert said == [f'… {name} is not written yet: complete its cell above, run it, then run this check again.']


def test_a_function_that_raises_is_named_with_its_input():
    def servo_sag(kp, tau_g):
        raise ZeroDivisionError('oops')
    said = []
    buildit.check(servo_sag, say=said.append)
    assert said[0].startswith('✗ servo_sag(0.3, ') and said[0].endswith('raised ZeroDivisionError: oops'), said


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match='name must be one of actuator_force'):
        buildit.check(lambda: 0, 'motor')
    with pytest.raises(ValueError, match='name must be one of'):
        buildit.stub('motor')


def test_solution_is_the_reference_source():
    assert buildit.solution('servo_sag').startswith('def servo_sag(')
    assert np.isclose(sim.kv_from_dampratio(4.0, 1.0, 1.0), 4.0)
