"""The Build-it checks against a learner's attempts: implementations written the way a learner might, right and
wrong. Every wrong one is rejected with a message that names the function and the first input where it differs
(and what was expected there); every right one, however it is written, passes."""

import math

import numpy as np
import pytest

from physai.book import buildit
from physai.engine.link import LINK_INERTIA, TAU_G
from physai.engine.pd_controller import PDController
from physai.laws import loop


# --- right, written otherwise than physai's ----------------------------------------------------------------------

def actuator_force_with_min_max(ctrl, length, velocity, gainprm, biasprm, forcerange=None):
    force = gainprm[0] * np.asarray(ctrl, dtype=float) + biasprm[0] + biasprm[1] * np.asarray(length) \
        + biasprm[2] * np.asarray(velocity)
    if forcerange is not None:
        force = np.minimum(np.maximum(force, forcerange[0]), forcerange[1])
    return force


def kv_from_dampratio_with_numpy(kp, dampratio, inertia):
    return 2 * np.asarray(dampratio) * np.sqrt(np.asarray(kp) * np.asarray(inertia))


def semi_implicit_euler_in_two_lines(q, v, accel, h, c_implicit=0.0):
    v_new = (v + h * accel(q, v) / (1 + h * c_implicit))
    return q + h * v_new, v_new


def servo_loop_with_a_list(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    """Appends to a list; breaks out on divergence and pads with NaN."""
    c = (kv + damping) / inertia
    q, v, out = q0, 0.0, [q0]
    for _ in range(nstep):
        a = (kp * (u - q) - (kv + damping) * v - tau_g * math.cos(q)) / inertia
        v = v + h * a / (1 + h * c)
        q = q + h * v
        if abs(q) > 20 * math.pi:
            break
        out.append(q)
    return np.array(out + [np.nan] * (nstep + 1 - len(out)))


def servo_sag_by_bisection(kp, tau_g, **kwargs):
    low, high = 0.0, math.pi / 2
    for _ in range(200):
        mid = 0.5 * (low + high)
        if kp * mid - tau_g * math.cos(mid) > 0:
            high = mid
        else:
            low = mid
    return 0.5 * (low + high)


def step_growth_by_rows(step, h, w2, c, **step_kwargs):
    """The matrix built row by row (the images' q entries, then their v entries), not as columns transposed."""
    def accel(q, v):
        return -w2 * q - c * v
    q1, v1 = step(1.0, 0.0, accel, h, **step_kwargs)
    q2, v2 = step(0.0, 1.0, accel, h, **step_kwargs)
    matrix = np.array([[q1, q2], [v1, v2]])
    return float(max(abs(np.linalg.eigvals(matrix))))


def pd_torque_on_copies(q_target, q, v_target, v, kp, kv, tau_ff=0.0):
    error = np.array(q_target, dtype=float) - q
    return kp * error + kv * (np.asarray(v_target) - v) + tau_ff


def delay_commands_by_indexing(commands, delay):
    commands = np.asarray(commands)
    return commands[np.maximum(np.arange(len(commands)) - delay, 0)]


def remotized_limit_with_interp(q, table):
    angles, limits = zip(*table)
    result = np.interp(q, angles, limits)
    return float(result) if np.ndim(q) == 0 else result


def mit_torque_with_clip(command, q, qd):
    tau = (command.stiffness * (command.position - np.asarray(q)) + command.damping * (command.velocity - np.asarray(qd))
           + command.effort)
    return np.clip(tau, -command.max_effort, command.max_effort)


def zoh_step_with_an_inner_loop(q, v, accel, h, *, substeps=(1,), c_joint=0.0):
    for n in substeps:
        a = accel(q, v)  # read once per tick, held
        for _ in range(n):
            v = (v + h * (a - c_joint * v) + h * c_joint * v) / (1 + h * c_joint)
            q = q + h * v
    return q, v


def write_of_the_core(self, data, commands):
    """Gear 1, feed-forward in the clamp: the chapter's table, term by term."""
    for k, cmd in enumerate(commands):
        dof = self.dofs[k]
        if not self.in_step[k]:
            data.qfrc_applied[dof] = loop.mit_torque(cmd, data.qpos[self.qposadr[k]], data.qvel[dof])
            continue
        a = self.actuators[k]
        self.model.actuator_gainprm[a, 0] = cmd.stiffness
        self.model.actuator_biasprm[a, :3] = (cmd.damping * cmd.velocity + cmd.effort, -cmd.stiffness, -cmd.damping)
        low = max(self.forcerange[k][0], -cmd.max_effort)
        high = min(self.forcerange[k][1], cmd.max_effort)
        self.model.actuator_forcelimited[a] = math.isfinite(low) or math.isfinite(high)
        self.model.actuator_forcerange[a] = (low, high)
        data.ctrl[a] = cmd.position
        data.qfrc_applied[dof] = 0.0


RIGHT = [
    ('actuator_force', actuator_force_with_min_max),
    ('kv_from_dampratio', kv_from_dampratio_with_numpy),
    ('semi_implicit_euler', semi_implicit_euler_in_two_lines),
    ('servo_loop', servo_loop_with_a_list),
    ('servo_sag', servo_sag_by_bisection),
    ('step_growth', step_growth_by_rows),
    ('pd_torque', pd_torque_on_copies),
    ('delay_commands', delay_commands_by_indexing),
    ('remotized_limit', remotized_limit_with_interp),
    ('mit_torque', mit_torque_with_clip),
    ('zoh_step', zoh_step_with_an_inner_loop),
    ('write', write_of_the_core),
]


@pytest.mark.parametrize('name, function', RIGHT, ids=[f.__name__ for _, f in RIGHT])
def test_a_right_implementation_written_otherwise_passes(name, function):
    said = []
    assert buildit.check(function, name, say=said.append).passed, said
    assert said[0].startswith(f'✓ {name} passes')


# --- wrong, each in a way a learner might be -------------------------------------------------------------------

def servo_loop_that_never_marks_divergence(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    c = (kv + damping) / inertia
    q, v, out = q0, 0.0, [q0]
    for _ in range(nstep):
        a = (kp * (u - q) - (kv + damping) * v - tau_g * math.cos(q)) / inertia
        v = v + h * a / (1 + h * c)
        q = q + h * v
        out.append(q)
    return np.array(out)


def servo_loop_on_the_chapters_tau_g(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    return servo_loop_with_a_list(kp, kv, inertia, TAU_G, h, nstep, q0=q0, u=u, damping=damping)


def servo_loop_with_explicit_damping(kp, kv, inertia, tau_g, h, nstep, *, q0=-0.5, u=0.0, damping=0.0):
    q, v, out = q0, 0.0, [q0]
    for _ in range(nstep):
        v = v + h * (kp * (u - q) - (kv + damping) * v - tau_g * math.cos(q)) / inertia
        q = q + h * v
        out.append(q if abs(q) <= 20 * math.pi else np.nan)
    return np.array(out)


def kv_from_dampratio_for_scalars_only(kp, dampratio, inertia):
    return 2 * dampratio * math.sqrt(kp * inertia)


def kv_without_the_armature(kp, dampratio, inertia):
    return 2 * dampratio * np.sqrt(kp * LINK_INERTIA)  # the link's own inertia: the armature left out


def semi_implicit_euler_implicit_twice(q, v, accel, h, c_implicit=0.0):
    """The damping divided out and also subtracted: counted twice."""
    v_new = (v + h * (accel(q, v) - c_implicit * v)) / (1 + h * c_implicit)
    return q + h * v_new, v_new


def servo_sag_small_angle(kp, tau_g, **kwargs):
    return tau_g / kp


def step_growth_in_float32(step, h, w2, c, **step_kwargs):
    def accel(q, v):
        return -np.float32(w2) * q - np.float32(c) * v
    columns = [step(np.float32(1), np.float32(0), accel, np.float32(h), **step_kwargs),
               step(np.float32(0), np.float32(1), accel, np.float32(h), **step_kwargs)]
    return float(np.max(np.abs(np.linalg.eigvals(np.array(columns, dtype=np.float32).T))))


def step_growth_of_the_trace(step, h, w2, c, **step_kwargs):
    def accel(q, v):
        return -w2 * q - c * v
    (a, b), (c2, d) = step(1.0, 0.0, accel, h, **step_kwargs), step(0.0, 1.0, accel, h, **step_kwargs)
    return abs(a + d) / 2


def pd_torque_that_changes_its_input(q_target, q, v_target, v, kp, kv, tau_ff=0.0):
    if isinstance(q, np.ndarray):
        q -= q_target  # the error, in place: the caller's q is now -(q* - q)
        q *= -1
        error = q
    else:
        error = q_target - q
    return kp * error + kv * (np.asarray(v_target) - v) + tau_ff


def pd_torque_with_the_sign_of_kv_flipped(q_target, q, v_target, v, kp, kv, tau_ff=0.0):
    return kp * (np.asarray(q_target) - q) + kv * (v - np.asarray(v_target)) + tau_ff


def delay_commands_with_roll(commands, delay):
    return np.roll(np.asarray(commands), delay, axis=0)  # the last commands wrap round to the front


def remotized_limit_nearest(q, table):
    angles, limits = np.array(table).T
    index = np.abs(np.subtract.outer(np.atleast_1d(q), angles)).argmin(axis=-1)
    result = limits[index]
    return float(result[0]) if np.ndim(q) == 0 else result


def mit_torque_without_the_velocity_target(command, q, qd):
    tau = command.stiffness * (command.position - np.asarray(q)) - command.damping * np.asarray(qd) + command.effort
    return np.clip(tau, -command.max_effort, command.max_effort)


def zoh_step_without_joint_damping(q, v, accel, h, *, substeps=(1,), c_joint=0.0):
    for n in substeps:
        a = accel(q, v)
        for _ in range(n):
            v = v + h * a
            q = q + h * v
    return q, v


def write_that_forgets_the_clamp(self, data, commands):
    write_of_the_core(self, data, commands)
    for k in range(len(commands)):
        if self.in_step[k]:
            self.model.actuator_forcelimited[self.actuators[k]] = 0


def write_with_the_torque_in_step_too(self, data, commands):
    """The in-step joint also gets the in-loop torque: the PD counted twice."""
    write_of_the_core(self, data, commands)
    for k, cmd in enumerate(commands):
        if self.in_step[k]:
            data.qfrc_applied[self.dofs[k]] = loop.mit_torque(cmd, data.qpos[self.qposadr[k]], data.qvel[self.dofs[k]])


WRONG = [
    # (name, function, what the first line must hold: the first differing case and what differs there)
    ('servo_loop', servo_loop_that_never_marks_divergence,
     'q[5] (after step 5: this run diverges, |q| passes DIVERGED_BOUND = 20π rad at step 5, and the docstring asks '
     'for NaN from there on): expected nan rad, got 69.1'),
    ('servo_loop', servo_loop_on_the_chapters_tau_g, 'tau_g=1.5, h=0.005, nstep=200, q0=-0.5): q[1] (after step 1)'),
    ('servo_loop', servo_loop_with_explicit_damping, '(kp=30, kv=1.96408, inertia=0.0321468, tau_g=0.2943'),
    ('kv_from_dampratio', kv_from_dampratio_for_scalars_only,
     'kv_from_dampratio(kp=[ 10.   100.   998.22   3.  ], dampratio=[1.  0.5 1.  2. ], inertia=[0.0041 0.0141 '
     '0.0321 0.2041]) raised TypeError: only 0-dimensional arrays can be converted to Python scalars (this case passes '
     'arrays'),
    ('kv_from_dampratio', kv_without_the_armature, 'kv_from_dampratio(kp=100, dampratio=0.5, inertia=0.0141468)'),
    ('semi_implicit_euler', semi_implicit_euler_implicit_twice,
     'semi_implicit_euler(q=-0.3, v=1.5, accel=lambda q, v: -400*q - 3*v, h=0.002, c_implicit=20)'),
    ('servo_sag', servo_sag_small_angle, 'servo_sag(kp=0.05, tau_g=0.2943): expected e = 1.340956683 rad'),
    ('step_growth', step_growth_in_float32, "beyond the check's tolerance of 1e-09 × (1 + |expected|))"),
    ('step_growth', step_growth_of_the_trace, 'step_growth(step=semi_implicit_euler, h=0.005, w2=400, c=3, '
                                              'c_implicit=0): expected growth = 0.9924716621'),
    ('pd_torque', pd_torque_that_changes_its_input,
     'pd_torque(q_target=0.25, q=[-0.5  0.   0.5], v_target=0, v=[ 1.  0. -2.], kp=40, kv=0.8): your function '
     'changed its input q (it held [-0.5  0.   0.5], after the call [ 0.75  0.25 -0.25])'),
    ('pd_torque', pd_torque_with_the_sign_of_kv_flipped, 'pd_torque(q_target=0.3, q=0.2, v_target=0, v=0.5'),
    ('delay_commands', delay_commands_with_roll, 'delay=2): out[0, 0] (the command of tick 0): expected 1, got 4'),
    ('remotized_limit', remotized_limit_nearest, 'limit[2] (at q = 0.785398 rad): expected 4.75 N·m, got 6'),
    ('mit_torque', mit_torque_without_the_velocity_target, 'velocity=-1.0, stiffness=100.0, damping=2.0, effort=0.0, max_effort=inf), q=-0.5, qd=3): expected torque = 92 N·m, got 94'),
    ('zoh_step', zoh_step_without_joint_damping, 'c_joint=15): expected'),
    ('write', write_that_forgets_the_clamp, 'max_effort=2.0)): qpos['),
    ('write', write_with_the_torque_in_step_too, "write(backend='in-step', integrator='implicitfast', gear=1"),
]


@pytest.mark.parametrize('name, function, shown', WRONG, ids=[f.__name__ for _, f, _ in WRONG])
def test_a_wrong_implementation_is_rejected_naming_the_function_and_its_first_differing_case(name, function, shown):
    said = []
    result = buildit.check(function, name, say=said.append)
    assert not result.passed and result.cases >= 1
    assert said[0].startswith(f'✗ {name}('), said[0]
    assert shown in said[0], said[0]
    for internal in ('spring', 'gravity', 'pd_40', 'pd_stiff', '<lambda>'):  # the learner never saw those names
        assert f'={internal}' not in said[0], said[0]


def test_a_near_miss_states_the_checks_tolerance_and_a_plain_miss_does_not():
    said = []
    buildit.check(step_growth_in_float32, 'step_growth', say=said.append)
    assert 'off by' in said[0] and "the check's tolerance of 1e-09" in said[0], said[0]
    said = []
    buildit.check(step_growth_of_the_trace, 'step_growth', say=said.append)
    assert 'tolerance' not in said[0], said[0]


def test_the_message_shows_the_input_as_the_check_passed_it_not_as_the_function_left_it():
    said = []
    buildit.check(pd_torque_that_changes_its_input, 'pd_torque', say=said.append)
    assert said[0].startswith('✗ pd_torque(q_target=0.25, q=[-0.5  0.   0.5], '), said[0]


def test_the_write_check_needs_only_the_core():
    """write's cases use gear 1 and the feed-forward inside the clamp: the core's table is all it needs."""
    from physai.book import buildit_cases
    cases, _ = buildit_cases.CHECKS['write']()
    assert {case.args[2] for case in cases} == {1.0}
    assert {case.args[3] for case in cases} == {'in-clamp'}
    assert isinstance(PDController, type)
