"""Build it, for real: each check passes physai's reference, fails a deliberately wrong function with a
message that names the input, what was expected and what it got, and says "not written yet" for an empty stub."""

import math

import numpy as np
import pytest

from physai.book import buildit, buildit_cases
from physai.engine import arm_replay, so101, sysid
from physai.laws import sim
from physai.engine.pd_controller import PDController


@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_the_reference_implementation_passes_its_check(name):
    said = []
    result = buildit.check(buildit.reference(name), say=said.append, strict=True)
    assert result.passed and result.cases >= 3
    assert said == [f'✓ {name} passes: all {result.cases} cases agree with {buildit_cases.ORACLE[name]}.']


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


def _residuals_unscaled(x, episodes, *, config=arm_replay.ReplayConfig(), decimate=1):
    return sysid.residuals(x, episodes, config=config, decimate=decimate) * math.sqrt(5 * 23)  # no 1/sqrt(nres)


def _squeeze_with_the_sign(torque, lever):
    """The closing torque is negative: without abs() the force comes out negative."""
    return np.asarray(torque) / lever


def _hold_with_one_face(normal_force, mu, *, faces=2):
    """Only one jaw's friction counted."""
    return mu * np.asarray(normal_force)


def _write_without_the_feedforward(self, data, commands):
    """In-step, the constant bias left at 0: the velocity target's kv·qd* and the feed-forward torque lost."""
    PDController.write(self, data, commands)
    for k, command in enumerate(commands):
        if self.in_step[k]:
            self.model.actuator_biasprm[self.actuators[k], 0] = 0.0


def _kp_without_the_voltage(p_register, supply_voltage=7.4):
    """The duty gain taken as volts: kp = g*P*kt/R, the supply left out."""
    return 0.166 * np.asarray(p_register, dtype=float) * 1.21164135295077 / 2.6761663274455603


def _slew_from_the_command(ctrl, rate, dt, previous=None):
    """Each command clipped against the previous command instead of the previous set point."""
    u = np.asarray(ctrl, dtype=float)
    out = u.copy()
    for k in range(1, len(u)):
        out[k] = np.clip(u[k], u[k - 1] - rate * dt, u[k - 1] + rate * dt)
    return out


WRONG = {
    'actuator_force': (_no_clamp, 'forcerange=[-5.0, 5.0]): expected force = 5 N·m, got'),
    'kv_from_dampratio': (_kv_without_the_two, 'expected kv = 0.4072760121 N·m·s/rad, got 0.203638006'),
    'semi_implicit_euler': (_explicit_euler, "(q=0.1, v=0, accel=lambda q, v: -400*q - 3*v, h=0.005, "
                                             "c_implicit=0): expected q' = 0.099 rad, got 0.1"),
    'servo_loop': (_loop_without_gravity, 'q[1] (after step 1): expected'),
    'servo_sag': (_small_angle_sag, '(kp=0.05, tau_g=0.2943): expected e = 1.340956683 rad, the one root in'),
    'step_growth': (_growth_of_the_wrong_matrix, 'expected growth = 0.9924716621, got 0.99'),
    'pd_torque': (_pd_without_feedforward, 'kv=0.8, tau_ff=0.1): expected torque = 3.7 N·m, got 3.6'),
    'dc_motor_envelope': (_envelope_without_the_clip, 'tau_min[0] (at v = -40 rad/s): expected 6 N·m, got 70'),
    'remotized_limit': (_limit_extrapolated, 'limit[0] (at q = -0.5 rad): expected 6 N·m, got 6.79'),
    'delay_commands': (_delay_with_zeros, '0.9]], delay=2): out[0, 0] (the command of tick 0): expected 1, got 0'),
    'mit_torque': (_mit_without_the_clamp, 'max_effort=5.0), q=-0.5, qd=0): expected torque = 5 N·m, got 32.1'),
    'write': (_write_without_the_feedforward, "write(backend='in-step', integrator='RK4', gear=1, "
                                              "feedforward='in-clamp', command=JointCommand(position=0.3, velocity=0.5"),
    'zoh_step': (_zoh_without_the_hold, "substeps=(5,), c_joint=0): expected q' = 0.4997 rad, got 0.4997003"),
    'to_radians': (_radians_in_dataset_order, "q[0, 5] (frame 0, joint gripper): expected -0.1745"),
    'residuals': (_residuals_unscaled, 'episodes=[episode 0 (24 frames)]): r[0, 0] (residual 0 of candidate 0): '
                                       'expected -0.017358'),
    'squeeze_force': (_squeeze_with_the_sign, '(torque=-2.94, lever=0.066'),
    'hold_load': (_hold_with_one_face, '(normal_force=22.07'),
    'register_kp': (_kp_without_the_voltage, '(p_register=16, supply_voltage=7.4): expected kp = 8.898581364 N·m/rad, '
                                             'got 1.2025'),
    'slew_limited': (_slew_from_the_command, 'rate=2, dt=0.01, previous=0): set point[4] (after step 5): expected '
                                             '0.04 rad, got 0.5'),
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
    assert said[0].startswith('✗ servo_sag(kp=0.05, tau_g=0.2943) ') and said[0].endswith(
        'raised ZeroDivisionError: oops'), said


# --- plausible bugs, each caught where it shows -------------------------------------------------------------------

def _newton_without_the_bracket(kp, tau_g, *, tol=1e-14, max_iter=100):
    """Newton from tau_g/kp with no bracket: fine for a stiff servo, lost when kp is below tau_g."""
    e = tau_g / kp
    for _ in range(max_iter):
        step = (kp * e - tau_g * math.cos(e)) / (kp + tau_g * math.sin(e))
        e -= step
        if abs(step) < tol:
            break
    return e


def test_servo_sag_without_its_bracket_fails_at_a_kp_below_tau_g():
    """Chapter 1's soft servo (kp below tau_g, a sag of tens of degrees): unbracketed Newton lands on -17.2 rad at kp
    0.05 (a root of kp·e = tau_g·cos e far outside (0, π/2)), and the check says so at that kp."""
    assert 0 < _newton_without_the_bracket(100.0, 0.2943) < 0.01  # right for a stiff servo
    assert _newton_without_the_bracket(0.05, 0.2943) == pytest.approx(-17.2047, abs=1e-3)
    said = []
    assert not buildit.check(_newton_without_the_bracket, 'servo_sag', say=said.append).passed
    assert said[0].startswith('✗ servo_sag(kp=0.05, tau_g=0.2943): expected e = 1.340956683 rad, the one root '
                              'in (0, π/2), got -17.20465826'), said


def test_a_missing_return_is_reported_as_none_not_as_nan():
    def kv_from_dampratio(kp, dampratio, inertia):
        kv = 2 * dampratio * math.sqrt(kp * inertia)  # computed, never returned

    def semi_implicit_euler(q, v, accel, h, c_implicit=0.0):
        v = v + h * accel(q, v) / (1 + h * c_implicit)
        q = q + h * v
    for function in (kv_from_dampratio, semi_implicit_euler):
        said = []
        buildit.check(function, say=said.append)
        assert said[0].endswith('got None: does the function end without returning its result (a missing '
                                'return)?'), said
        assert 'nan' not in said[0]


def _force_without_the_constant_bias(ctrl, length, velocity, gainprm, biasprm, forcerange=None):
    force = gainprm[0] * ctrl + biasprm[1] * length + biasprm[2] * velocity  # biasprm[0] left out
    return force if forcerange is None else np.clip(force, *forcerange)


def _loop_without_the_command(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    return sim.servo_loop(kp, kv, inertia, tau_g, h, nstep, q0=q0, u=0.0, damping=damping)


def _loop_without_joint_damping(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    return sim.servo_loop(kp, kv, inertia, tau_g, h, nstep, q0=q0, u=u, damping=0.0)


def _write_ignoring_the_motors_forcerange(self, data, commands):
    """The in-step clamp from max_effort alone: the actuator's own (narrower) forcerange forgotten."""
    PDController.write(self, data, commands)
    for k, command in enumerate(commands):
        if self.in_step[k]:
            a, g = self.actuators[k], self.gear[k]
            self.model.actuator_forcerange[a] = (-command.max_effort / abs(g), command.max_effort / abs(g))


@pytest.mark.parametrize('name, wrong, shown', [
    ('actuator_force', _force_without_the_constant_bias, 'biasprm=[1.5, -8.0, -0.4]'),
    ('servo_loop', _loop_without_the_command, 'u=0.4, damping=0.3): q[1] (after step 1)'),
    ('servo_loop', _loop_without_joint_damping, 'u=0.4, damping=0.3): q[1] (after step 1)'),
    ('write', _write_ignoring_the_motors_forcerange, "max_effort=5.0), motor_forcerange=1): qpos["),
])
def test_a_bug_that_only_shows_in_one_regime_has_a_case_there(name, wrong, shown):
    said = []
    assert not buildit.check(wrong, name, say=said.append).passed
    assert shown in said[0], said[0]


# --- the check blames the function that is wrong -----------------------------------------------------------------

def _learners_namespace(semi_implicit_euler):
    """A notebook's namespace: the learner's semi_implicit_euler, and a correct servo_loop that calls it."""
    namespace = {'semi_implicit_euler': semi_implicit_euler}
    exec(buildit.solution('servo_loop').replace(', semi_implicit_euler as _semi_implicit_euler', '')
         .replace('_semi_implicit_euler(', 'semi_implicit_euler('), namespace)
    return namespace


def test_pasting_a_worked_solution_leaves_the_learners_own_functions_alone():
    """servo_loop's solution calls physai's semi_implicit_euler, imported under a private name: pasted below the
    learner's wrong semi_implicit_euler it does not replace it, so that one's check still fails."""
    namespace = {'semi_implicit_euler': _explicit_euler}
    for name in ('servo_loop', 'step_growth'):
        exec(buildit.solution(name), namespace)
    assert namespace['semi_implicit_euler'] is _explicit_euler
    assert not buildit.check(namespace['semi_implicit_euler'], 'semi_implicit_euler', say=lambda line: None).passed
    assert buildit.check(namespace['servo_loop'], say=lambda line: None).passed
    assert 'semi_implicit_euler as _semi_implicit_euler' in buildit.solution('zoh_step')
    assert 'mit_torque as _mit_torque' in buildit.solution('write')
    assert 'mit_torque' not in buildit.stub('write').split('class ')[0].split('def write')[0].replace(
        '# mit_torque is yours', '')


def test_a_correct_servo_loop_on_a_stub_semi_implicit_euler_says_which_one_to_write():
    stub = {}
    exec(buildit.stub('semi_implicit_euler'), stub)
    namespace = _learners_namespace(stub['semi_implicit_euler'])
    said = []
    result = buildit.check(namespace['servo_loop'], say=said.append, strict=True)  # not written yet: no raise
    assert not result.passed
    assert said == ['… servo_loop calls semi_implicit_euler, which is not written yet: complete semi_implicit_euler '
                    'above and run its check, then run this check again.']


def test_a_correct_servo_loop_on_a_wrong_semi_implicit_euler_blames_semi_implicit_euler():
    namespace = _learners_namespace(_explicit_euler)
    said = []
    assert not buildit.check(namespace['servo_loop'], say=said.append).passed
    assert said[0].startswith('✗ servo_loop calls your semi_implicit_euler, which does not pass its own check yet '
                              '(semi_implicit_euler(q=0.1, v=0'), said
    assert 'Fix semi_implicit_euler first' in said[0]
    with pytest.raises(buildit.BuildItError, match='semi_implicit_euler'):
        buildit.check(namespace['servo_loop'], say=lambda line: None, strict=True)


def test_a_correct_servo_loop_on_a_correct_semi_implicit_euler_of_the_learner_passes():
    namespace = _learners_namespace(lambda q, v, accel, h, c_implicit=0.0: sim.semi_implicit_euler(q, v, accel, h,
                                                                                                    c_implicit))
    assert buildit.check(namespace['servo_loop'], say=lambda line: None).passed


# --- the worked solution runs as pasted --------------------------------------------------------------------------

@pytest.mark.parametrize('name', buildit.FUNCTIONS)
def test_the_worked_solution_pasted_into_a_fresh_namespace_passes_its_check(name):
    """What the edition folds under "Worked solution": its imports, physai's private helpers it calls, the function.
    Pasted into an empty namespace (a fresh Colab cell), it defines the function and passes."""
    namespace = {'__name__': '__main__'}
    exec(compile(buildit.solution(name), f'<solution {name}>', 'exec'), namespace)
    assert buildit.check(namespace[name], name, say=lambda line: None, strict=True).passed


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match='name must be one of actuator_force'):
        buildit.check(lambda: 0, 'motor')
    with pytest.raises(ValueError, match='name must be one of'):
        buildit.stub('motor')


def test_solution_is_the_reference_source_after_what_it_needs():
    import inspect
    solution = buildit.solution('servo_sag')
    assert solution.startswith('import math\n\nfrom physai.laws import checks\n\n\ndef servo_sag(')
    assert solution.endswith(inspect.getsource(sim.servo_sag))
    loop = buildit.solution('servo_loop')  # its private input check goes in with it, before it
    assert loop.index('def _check_loop(') < loop.index('def servo_loop(')
    assert ('from physai.laws.sim import DIVERGED_BOUND, MAX_LOOP_STEPS, semi_implicit_euler as _semi_implicit_euler'
            in loop)


def test_every_chapter_has_its_functions_and_each_a_reference_in_physai():
    assert list(buildit.CHAPTERS) == [1, 2, 3, 4, 5, 6]
    assert buildit.FUNCTIONS[:6] == buildit.CHAPTERS[1]
    assert set(buildit_cases.CHECKS) == set(buildit_cases.ORACLE) == set(buildit.FUNCTIONS)
    for name in buildit.FUNCTIONS:
        assert f'\ndef {name}(' in '\n' + buildit.solution(name)


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
        assert ('MuJoCo' in buildit_cases.ORACLE[name].split(' (')[0]) == (buildit.compared_with(name) == 'MuJoCo'), name


def test_a_stub_says_its_raises_are_optional_and_names_no_constant_it_does_not_give():
    """The checks pass no bad input, so a docstring's Raises is optional for the learner; a limit it names
    (MAX_LOOP_STEPS) carries its value."""
    assert '# The check compares results only: the input checks under Raises are optional here.' in (
        buildit.stub('servo_loop'))
    assert f'({sim.MAX_LOOP_STEPS:,})' in buildit.stub('servo_loop')
    assert 'Raises are optional' not in buildit.stub('delay_commands') or 'Raises:' in buildit.stub('delay_commands')
