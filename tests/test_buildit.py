"""Build it, for real: each check passes physai's reference, fails a deliberately wrong function with a
message that names the input, what was expected and what it got, and says "not written yet" for an empty stub."""

import math

import numpy as np
import pytest

from physai.book import buildit
from physai.engine import so101, sysid
from physai.laws import sim
from physai.engine.hold import PDController


@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_the_reference_implementation_passes_its_check(name):
    said = []
    result = buildit.check(buildit.reference(name), say=said.append, strict=True)
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


def _pd_without_feedforward(q_target, q, v_target, v, kp, kv, tau_ff=0.0):
    return kp * (np.asarray(q_target) - q) + kv * (np.asarray(v_target) - v)


def _envelope_without_the_clip(v, *, saturation_effort, forcerange, velocity_limit):
    s, e, vmax = saturation_effort, forcerange, velocity_limit
    return np.maximum(s * (-1.0 - np.asarray(v) / vmax), -e), np.minimum(s * (1.0 - np.asarray(v) / vmax), e)


def _limit_extrapolated(q, table):
    (q0, l0), (q1, l1) = table[0], table[-1]
    return l0 + (np.asarray(q) - q0) * (l1 - l0) / (q1 - q0)  # a straight line, not held beyond the ends


def _delay_with_zeros(commands, delay):
    commands = np.asarray(commands, dtype=float)
    out = np.zeros_like(commands)
    out[delay:] = commands[:len(commands) - delay] if delay < len(commands) else 0.0
    return out


def _mit_without_the_clamp(command, q, qd):
    q, qd = np.asarray(q), np.asarray(qd)
    return command.stiffness * (command.position - q) + command.damping * (command.velocity - qd) + command.effort


def _zoh_without_the_hold(q, v, accel, h, *, substeps=(1,), c_joint=0.0):
    for _ in range(sum(substeps)):  # the PD read every physics step: backend B, not a held tick
        q, v = sim.semi_implicit_euler(q, v, lambda _q, _v: accel(_q, _v) - c_joint * _v, h, c_implicit=c_joint)
    return q, v


def _radians_in_dataset_order(values, joints):
    return np.deg2rad(np.atleast_2d(np.asarray(values, dtype=float)))  # the gripper's 0..100 taken as degrees


def _residuals_unscaled(x, episodes, *, config=sysid.ReplayConfig(), decimate=1):
    return sysid.residuals(x, episodes, config=config, decimate=decimate) * math.sqrt(5 * 23)  # no 1/sqrt(nres)


def _write_ignoring_the_gear(self, data, commands):
    """In-step gains taken as joint gains: kp = stiffness instead of stiffness/g²."""
    PDController.write(self, data, commands)
    for k, command in enumerate(commands):
        if self.in_step[k]:
            a = self.actuators[k]
            self.model.actuator_gainprm[a, 0] = command.stiffness
            self.model.actuator_biasprm[a, 1:3] = (-command.stiffness, -command.damping)


WRONG = {
    'actuator_force': (_no_clamp, 'expected 5 N·m, got'),
    'kv_from_dampratio': (_kv_without_the_two, 'expected 0.4072760121 N·m·s/rad, got 0.203638006'),
    'semi_implicit_euler': (_explicit_euler, 'at index 0 expected'),
    'servo_loop': (_loop_without_gravity, 'rad, got'),
    'servo_sag': (_small_angle_sag, 'net torque'),
    'step_growth': (_growth_of_the_wrong_matrix, 'expected'),
    'pd_torque': (_pd_without_feedforward, 'tau_ff=0.1): expected 3.7 N·m, got 3.6'),
    'dc_motor_envelope': (_envelope_without_the_clip, 'tau_min: at index 0 expected 6 N·m, got 70'),
    'remotized_limit': (_limit_extrapolated, 'at index 0 expected 6 N·m, got 6.79'),
    'delay_commands': (_delay_with_zeros, '0.9]], 2): at index (0, 0) expected 1, got 0'),
    'mit_torque': (_mit_without_the_clamp, 'max_effort=5.0), -0.5, 0): expected 5 N·m, got 32.1'),
    'write': (_write_ignoring_the_gear, "write('in-step', 'RK4', 2, 'in-clamp', JointCommand(position=0.3"),
    'zoh_step': (_zoh_without_the_hold, 'substeps=(5,), c_joint=0): at index 0 expected 0.4997, got 0.4997003'),
    'to_radians': (_radians_in_dataset_order, "'gripper']): at index (0, 5) expected -0.1745"),
    'residuals': (_residuals_unscaled, '[episode 0 (24 frames)]): at index (0, 0) expected -0.017358'),
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


def test_every_chapter_has_its_functions_and_each_a_reference_in_physai():
    assert list(buildit.CHAPTERS) == [1, 2, 3, 4]
    assert buildit.FUNCTIONS[:6] == buildit.CHAPTERS[1]
    assert set(buildit._CHECKS) == set(buildit._ORACLE) == set(buildit.FUNCTIONS)
    for name in buildit.FUNCTIONS:
        assert buildit.solution(name).startswith(f'def {name}(')


def test_a_stub_imports_what_its_signature_and_earlier_chapters_give():
    """mit_torque's signature names JointCommand and its docstring chapter 2's pd_torque: the stub imports both."""
    assert 'from physai.laws.loop import JointCommand' in buildit.stub('mit_torque')
    assert "from physai.laws.sim import semi_implicit_euler  # chapter 1's step" in buildit.stub('zoh_step')
    assert buildit.stub('servo_sag').startswith(buildit.STUB_IMPORTS + 'def servo_sag(')
    assert np.isclose(buildit.reference('to_radians')(np.zeros(6), so101.JOINTS)[0, 0], 0.0)


def test_the_your_turn_text_names_what_the_check_compares_with():
    """Where MuJoCo has no single field for it (a step rule, a table lookup), the check compares with physai's own."""
    assert buildit.compared_with('pd_torque') == buildit.compared_with('zoh_step') == 'MuJoCo'
    assert buildit.compared_with('remotized_limit') == buildit.compared_with('semi_implicit_euler') == (
        "physai's reference")
    for name in buildit.FUNCTIONS:
        assert ('MuJoCo' in buildit._ORACLE[name].split(' (')[0]) == (buildit.compared_with(name) == 'MuJoCo'), name
