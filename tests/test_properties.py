"""Whatever goes in, a documented error or an honest result: property tests of the public functions and the CLI.

Each test draws inputs with hypothesis (finite, huge, tiny, negative, NaN, infinite, wrong types) and asserts that
the call either raises the documented ValueError / TypeError or returns a result whose flags agree with its numbers:
never another exception, never "settled" for a run that diverged, never moved or is not finite.
"""

import contextlib
import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from physai.engine import link
from physai.experiments import position_actuators
from physai.interface import actuator_models_panels
from physai.laws import checks, drives, sim
from physai.__main__ import main

# numbers a reader might type, and the ones a slider end or a typo gives
ANY_NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e12, max_value=1e12),
    st.sampled_from([0.0, -0.0, 1e-300, 1e-12, 1e-9, 1e9, 1e300, -1.0, math.nan, math.inf]),
    st.integers(min_value=-10**6, max_value=10**6),
)
WRONG_TYPES = st.sampled_from([None, 'abc', [1.0, 2.0], {'kp': 1.0}, True])
# derandomize: the same inputs on every run and every machine, so CI never meets a new one by luck (widen
# max_examples locally to explore); no example database is written into the repository
EXAMPLES = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
FEWER = settings(EXAMPLES, max_examples=40)


def _consistent(response: link.StepResponse) -> None:
    """The flags of a step response agree with its numbers."""
    assert len(response.t) == len(response.q) >= 1
    if response.diverged:
        assert not response.settled
        assert math.isnan(response.sag_deg) and math.isnan(response.rise_ms)
        return
    assert np.all(np.isfinite(response.q)) and np.all(np.abs(response.q) <= sim.DIVERGED_BOUND)
    if response.settled:
        assert math.isfinite(response.sag_deg) and response.p2p_deg <= link.SETTLED_P2P_DEG
        assert math.isnan(response.rise_ms) or response.rise_ms >= 0
    else:
        assert math.isnan(response.sag_deg) and math.isnan(response.rise_ms)


@EXAMPLES
@given(kp=ANY_NUMBER, kv=st.one_of(st.none(), ANY_NUMBER), armature=ANY_NUMBER, damping=ANY_NUMBER,
       timestep=st.one_of(ANY_NUMBER, st.floats(min_value=1e-5, max_value=0.1)),
       integrator=st.sampled_from([*checks.INTEGRATORS, 'euler', '']),
       forcerange=st.one_of(st.none(), ANY_NUMBER, st.tuples(ANY_NUMBER, ANY_NUMBER)))
def test_step_response_answers_any_input_with_an_error_or_consistent_flags(kp, kv, armature, damping, timestep,
                                                                         integrator, forcerange):
    try:
        response = link.step_response(kp, kv=kv, armature=armature, damping=damping, timestep=timestep,
                                       integrator=integrator, forcerange=forcerange, duration=1.0)
    except ValueError as err:
        assert ' must ' in str(err)  # names the parameter and what is allowed
        return
    _consistent(response)


@EXAMPLES
@given(kp=st.floats(min_value=1e-3, max_value=1e7), log_kv=st.floats(min_value=-3, max_value=12),
       log_armature=st.floats(min_value=-6, max_value=9), timestep=st.sampled_from([0.0005, 0.005, 0.02]),
       integrator=st.sampled_from(checks.INTEGRATORS))
def test_extreme_but_valid_servos_are_flagged_not_reported_as_settled(kp, log_kv, log_armature, timestep,
                                                                      integrator):
    """Huge damping or inertia leaves the link where it started: it has no sag and no rise time to report."""
    response = link.step_response(kp, kv=10 ** log_kv, armature=10 ** log_armature, timestep=timestep,
                                   integrator=integrator)
    _consistent(response)
    if response.settled:  # it really got somewhere and stopped there
        assert np.ptp(response.q) > 0


@EXAMPLES
@given(values=st.lists(st.one_of(ANY_NUMBER, WRONG_TYPES), min_size=9, max_size=9),
       nstep=st.one_of(st.integers(min_value=-5, max_value=400), ANY_NUMBER))
def test_servo_loop_answers_any_input_with_an_error_or_a_trajectory(values, nstep):
    kp, kv, inertia, tau_g, h, q0, u, damping, _ = values
    try:
        q = sim.servo_loop(kp, kv, inertia, tau_g, h, nstep, q0=q0, u=u, damping=damping)
    except ValueError as err:
        assert ' must ' in str(err)
        return
    assert q.shape == (nstep + 1,) and q[0] == q0
    finite = np.isfinite(q)
    # finite up to a divergence, NaN after it, and never beyond the bound
    assert np.all(finite[:np.argmin(finite)] if not finite.all() else finite)
    assert np.all(np.abs(q[finite]) <= sim.DIVERGED_BOUND)


@EXAMPLES
@given(ctrl=ANY_NUMBER, length=ANY_NUMBER, velocity=ANY_NUMBER,
       gainprm=st.one_of(st.lists(ANY_NUMBER, max_size=4), WRONG_TYPES),
       biasprm=st.one_of(st.lists(ANY_NUMBER, max_size=5), WRONG_TYPES),
       forcerange=st.one_of(st.none(), st.lists(ANY_NUMBER, max_size=3), WRONG_TYPES))
def test_actuator_force_answers_any_input_with_an_error_or_a_number(ctrl, length, velocity, gainprm, biasprm,
                                                                    forcerange):
    try:
        force = sim.actuator_force(ctrl, length, velocity, gainprm, biasprm, forcerange)
    except (ValueError, TypeError) as err:
        assert ' must ' in str(err) or 'float' in str(err)
        return
    assert np.shape(force) == ()


@EXAMPLES
@given(kp=ANY_NUMBER, tau_g=ANY_NUMBER, dampratio=ANY_NUMBER, inertia=ANY_NUMBER, h=ANY_NUMBER, w2=ANY_NUMBER,
       c=ANY_NUMBER)
def test_closed_forms_answer_any_input_with_an_error_or_a_number(kp, tau_g, dampratio, inertia, h, w2, c):
    for call in (lambda: sim.servo_sag(kp, tau_g), lambda: sim.kv_from_dampratio(kp, dampratio, inertia)):
        try:
            value = call()
        except ValueError as err:
            assert ' must ' in str(err)
        else:  # inf only where the exact value is beyond floating point (kp*inertia near 1e308)
            assert not math.isnan(value) and value >= 0
    try:
        growth = sim.step_growth(sim.semi_implicit_euler, h, w2, c)
    except ValueError as err:
        assert ' must ' in str(err)
    else:
        assert growth >= 0 or math.isnan(w2) or math.isnan(c)  # inf means diverged, never an overflow error


@FEWER
@given(kp=st.one_of(ANY_NUMBER, st.floats(min_value=1.0, max_value=1e7)),
       gear=st.one_of(ANY_NUMBER, st.floats(min_value=0.1, max_value=50.0)))
def test_gear_sag_flags_a_diverged_run_instead_of_reporting_its_sag(kp, gear):
    try:
        rows = position_actuators.gear_sag(kp=kp, gears=(1.0, gear), duration=1.0)
    except ValueError as err:
        assert ' must ' in str(err)
        return
    for row in rows:
        assert row['mujoco'] in ('stable', 'diverged')
        if row['mujoco'] == 'diverged':
            assert math.isnan(row['sag_deg'])
        else:
            assert abs(row['sag_deg']) < 180


@FEWER
@given(model=st.sampled_from(drives.MODELS + ('bogus',)), kp=ANY_NUMBER, kv=ANY_NUMBER, forcerange=ANY_NUMBER,
       timestep=st.one_of(ANY_NUMBER, st.sampled_from([1 / 360, 0.001, 0.02])))
def test_pendulum_answers_any_input_with_an_error_or_a_flagged_run(model, kp, kv, forcerange, timestep):
    try:
        run, metrics = actuator_models_panels.panel_run(model, kp, kv, 0.0, timestep, "implicitfast", forcerange, math.inf, 0)
    except ValueError as err:
        assert ' must ' in str(err)
        return
    q = np.asarray(run.q)
    assert run.diverged or (np.all(np.isfinite(q)) and np.all(np.abs(q) <= 1e3))


@settings(EXAMPLES, max_examples=60)
@given(argv=st.lists(st.one_of(st.sampled_from(['list', '--json', '--bogus', '-x', 'extra', 'kp-sweeep',
                                                  'actuator-sweep', 'stiffness', 'nope']),
                               st.text(alphabet='abcdefghij-_ ', min_size=1, max_size=12)), max_size=3))
def test_command_line_answers_any_words_with_a_table_or_exit_2(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main(argv)
        except SystemExit as stop:  # argparse's errors: usage and exit 2
            status = stop.code
    assert status in (0, 2), out.getvalue()
    if status == 2:
        assert 'error' in out.getvalue()


def test_cli_refuses_an_unknown_option_by_name(capsys):
    with pytest.raises(SystemExit) as stop:
        main(['--bogus'])
    assert stop.value.code == 2
    assert 'unrecognized arguments: --bogus' in capsys.readouterr().err


def test_cli_list_takes_no_argument(capsys):
    with pytest.raises(SystemExit) as stop:
        main(['list', 'extra'])
    assert stop.value.code == 2
    assert "list takes no argument, got 'extra'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------
# Chapter 3: where the PD runs (physai.laws.loop, physai.engine.hold, physai.experiments.where_pd_runs)

import dataclasses  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import mujoco  # noqa: E402
import pandas as pd  # noqa: E402

from physai.engine import arm_replay, datasets, hold, mj, pd_controller, so101, sysid  # noqa: E402
from physai.experiments import critical_rate, servo_sysid, where_pd_runs  # noqa: E402
from physai.laws import loop  # noqa: E402

# a MuJoCo run per example: few examples, tiny durations
MUJOCO_RUNS = settings(EXAMPLES, max_examples=12)
RATES = st.one_of(ANY_NUMBER, st.floats(min_value=1.0, max_value=2000.0), st.sampled_from([0.05, 0.1, 0.2, 1e6]))
SECONDS = 5.0  # bounded time: no single call of these tests may take longer


def _growth_ok(value) -> None:
    """A growth per step or tick: a number >= 0 or inf (diverged), never NaN."""
    assert isinstance(value, float) and not math.isnan(value) and value >= 0


@contextlib.contextmanager
def _within(seconds: float = SECONDS):
    start = time.perf_counter()
    yield
    assert time.perf_counter() - start < seconds, 'a call took longer than it may: a hang in the making'


def _documented(err: Exception) -> None:
    """A ValueError / TypeError that names what is wrong and what is allowed."""
    assert isinstance(err, (ValueError, TypeError)), repr(err)
    assert ' must ' in str(err), str(err)


@EXAMPLES
@given(fields=st.lists(st.one_of(ANY_NUMBER, WRONG_TYPES), min_size=6, max_size=6),
       q=st.one_of(ANY_NUMBER, WRONG_TYPES, st.lists(ANY_NUMBER, max_size=3)), qd=st.one_of(ANY_NUMBER, WRONG_TYPES))
def test_mit_torque_answers_any_command_with_an_error_or_a_clamped_torque(fields, q, qd):
    names = ('position', 'velocity', 'stiffness', 'damping', 'effort', 'max_effort')
    try:
        command = loop.JointCommand(**dict(zip(names, fields)))
        tau = np.asarray(loop.mit_torque(command, q, qd))
    except (ValueError, TypeError) as err:
        _documented(err)
        return
    state = np.broadcast_to(np.asarray(q, dtype=float), tau.shape)
    finite_state = np.isfinite(state) & np.isfinite(float(qd))
    # the clamp holds wherever the state is finite (an overflow saturates to the clamp)
    assert np.all(np.abs(tau[finite_state]) <= command.max_effort)
    assert not np.any(np.isnan(tau[finite_state]))


@EXAMPLES
@given(rate_hz=RATES, timestep=st.one_of(ANY_NUMBER, st.sampled_from([1e-5, 0.001, 0.005, 0.02])),
       nstep=st.one_of(st.integers(min_value=-3, max_value=2000), ANY_NUMBER, WRONG_TYPES))
def test_tick_mask_and_pattern_answer_any_rate_with_an_error_or_ticks(rate_hz, timestep, nstep):
    with _within():
        try:
            mask = loop.tick_mask(rate_hz, timestep, nstep)
        except (ValueError, TypeError) as err:
            _documented(err)
        else:
            assert mask.shape == (nstep,) and mask.dtype == bool and (nstep == 0 or mask[0])
        try:
            pattern = loop.tick_pattern(rate_hz, timestep)
        except (ValueError, TypeError) as err:
            _documented(err)
        else:
            assert 1 <= len(pattern) <= 50
            assert all(isinstance(n, int) and 1 <= n <= loop.MAX_STEPS_PER_TICK for n in pattern)


@EXAMPLES
@given(rate_hz=RATES, kp=ANY_NUMBER, kv=ANY_NUMBER, inertia=ANY_NUMBER, damping=ANY_NUMBER,
       timestep=st.one_of(ANY_NUMBER, st.sampled_from([0.0005, 0.001, 0.02])),
       backend=st.sampled_from([*loop.BACKENDS, 'bogus']), integrator=st.sampled_from(checks.INTEGRATORS))
def test_tick_growth_answers_any_input_with_an_error_or_a_growth(rate_hz, kp, kv, inertia, damping, timestep,
                                                                  backend, integrator):
    """Growth per tick is a number >= 0, or inf beyond floating point: never NaN, never an OverflowError."""
    with _within():
        try:
            growth = loop.tick_growth(rate_hz=rate_hz, kp=kp, kv=kv, inertia=inertia, timestep=timestep,
                                      damping=damping, backend=backend, integrator=integrator)
        except (ValueError, TypeError) as err:
            _documented(err)
            return
    _growth_ok(growth)


@EXAMPLES
@given(substeps=st.lists(st.one_of(st.integers(min_value=-2, max_value=50), ANY_NUMBER), max_size=3),
       h=ANY_NUMBER, c_joint=ANY_NUMBER)
def test_zoh_step_refuses_ticks_that_are_not_whole_steps(substeps, h, c_joint):
    try:
        q, v = loop.zoh_step(1.0, 0.0, lambda q, v: -q - v, h, substeps=substeps, c_joint=c_joint)
    except (ValueError, TypeError) as err:
        _documented(err)
        return
    assert all(isinstance(n, (int, np.integer)) and n >= 1 for n in substeps)
    assert not (math.isnan(q) or math.isnan(v)) or not math.isfinite(h * c_joint)



@FEWER
@given(rates=st.one_of(st.lists(RATES, max_size=4), ANY_NUMBER, WRONG_TYPES),
       kp=st.one_of(ANY_NUMBER, st.floats(min_value=1.0, max_value=1e300)), kv=ANY_NUMBER,
       armature=st.one_of(ANY_NUMBER, st.floats(min_value=0.0, max_value=0.1)),
       timestep=st.one_of(ANY_NUMBER, st.sampled_from([0.0005, 0.001, 0.02])),
       backend=st.sampled_from(loop.BACKENDS), integrator=st.sampled_from(checks.INTEGRATORS))
def test_growth_curve_saturates_to_inf_instead_of_overflowing(rates, kp, kv, armature, timestep, backend,
                                                              integrator):
    with _within():
        try:
            growth = where_pd_runs.growth_curve(rates, backend=backend, kp=kp, kv=kv, armature=armature,
                                                timestep=timestep, integrator=integrator)
        except (ValueError, TypeError) as err:
            _documented(err)
            return
    assert growth.shape == (len(rates),)
    for g in growth:
        _growth_ok(float(g))


@EXAMPLES
@given(rate_hz=RATES, kp=ANY_NUMBER, kv=ANY_NUMBER, inertia=ANY_NUMBER, damping=st.one_of(st.none(), ANY_NUMBER),
       timestep=st.one_of(ANY_NUMBER, st.sampled_from([0.0005, 0.001, 0.02])))
def test_zoh_margins_and_rate_bound_answer_with_an_error_or_signed_numbers(rate_hz, kp, kv, inertia, damping,
                                                                           timestep):
    try:
        margins = where_pd_runs.zoh_margins(rate_hz, kp=kp, kv=kv, inertia=inertia, timestep=timestep)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:  # a margin may be -inf (hopeless), never NaN: its sign is the answer
        assert not any(math.isnan(v) for v in margins.values())
    try:
        bound = critical_rate.rate_bound_hz(rate_hz, kp=kp, kv=kv, damping=damping, timestep=timestep)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert bound >= 0 and not math.isnan(bound)


@settings(EXAMPLES, max_examples=20)
@given(rates=st.one_of(st.lists(st.floats(min_value=1.0, max_value=1000.0), min_size=1, max_size=3).map(sorted),
                       st.lists(RATES, max_size=3)),
       kp=ANY_NUMBER, kv=ANY_NUMBER, armature=ANY_NUMBER)
def test_growth_scan_answers_few_rates_with_an_error_or_growths(rates, kp, kv, armature):
    with _within():
        try:
            scan = critical_rate.growth_scan(rates, kp=kp, kv=kv, armature=armature)
        except (ValueError, TypeError) as err:
            _documented(err)
            return
    assert scan.growth.shape == (len(rates), 6)
    for g in scan.growth.ravel():
        _growth_ok(float(g))
    try:
        critical = scan.critical_hz
    except ValueError as err:  # the scan ends before the critical rate: said so, not a made-up rate
        _documented(err)
    else:
        assert scan.worst[-1] < 1 and critical in scan.rates_hz


def _hold_consistent(r: hold.HoldResponse) -> None:
    """A hold run's flags agree with its numbers."""
    assert r.q.shape == r.target.shape == (len(r.t), 6)
    if r.diverged:
        assert np.all(np.isnan(r.p2p_rad)) and r.chatter_hz is None and not r.chatters and r.state == 'diverged'
        return
    assert np.all(np.isfinite(r.q)) and np.all(np.abs(r.q) <= sim.DIVERGED_BOUND)
    assert np.all(np.isfinite(r.p2p_rad)) and np.all(r.p2p_rad >= 0)
    loud = (r.p2p_rad >= hold.QUIET_P2P) & (r.turns >= hold.CHATTER_TURNS)  # back and forth, and far enough
    assert r.chatters == bool(loud.any()) and (not r.chatters or loud[r.worst])
    assert r.moves == (not r.chatters and r.worst_p2p_rad >= hold.QUIET_P2P)
    assert r.state == ('chatters' if r.chatters else 'moves' if r.moves else 'still')
    assert np.isfinite(r.offset_deg) and r.offset_deg >= 0
    if r.chatter_hz is not None:
        assert r.chatters and r.chatter_hz >= hold.CHATTER_MIN_HZ


@EXAMPLES
@given(fields=st.lists(st.one_of(ANY_NUMBER, WRONG_TYPES), min_size=6, max_size=6),
       backend=st.sampled_from([*loop.BACKENDS, 'x']), integrator=st.sampled_from([*checks.INTEGRATORS, 'x']))
def test_hold_params_answer_any_input_with_an_error_or_params(fields, backend, integrator):
    names = ('rate_hz', 'kp', 'kv', 'armature', 'timestep', 'start_offset')
    try:
        params = hold.HoldParams(backend=backend, integrator=integrator, **dict(zip(names, fields)))
    except (ValueError, TypeError) as err:
        _documented(err)
        return
    assert params.rate_hz > 0 and params.kp > 0 and 0 < params.timestep <= checks.MAX_TIMESTEP


@MUJOCO_RUNS
@given(rate_hz=st.one_of(st.floats(min_value=1.0, max_value=2000.0), st.sampled_from([1e-300, 0.1, 1e6])),
       backend=st.sampled_from(loop.BACKENDS), kp=st.floats(min_value=1.0, max_value=1e9),
       kv=st.one_of(st.floats(min_value=0.0, max_value=1e6), st.just(1e9)),
       armature=st.sampled_from([0.0, 0.028, 1e3]), timestep=st.sampled_from([0.001, 0.005, 0.02, 0.1]),
       integrator=st.sampled_from(checks.INTEGRATORS),
       duration=st.one_of(st.sampled_from([1e-9, 0.004, 0.05]), ANY_NUMBER))
def test_hold_responses_flag_what_they_measured(rate_hz, backend, kp, kv, armature, timestep, integrator, duration):
    params = hold.HoldParams(rate_hz=rate_hz, backend=backend, kp=kp, kv=kv, armature=armature, timestep=timestep,
                             integrator=integrator)
    with _within(2 * SECONDS):
        try:  # at most 0.05 s simulated, so that each example stays fast; longer ones are refused by their count
            responses = hold.hold_responses([params], duration=min(duration, 0.05) if duration > 0 else duration,
                                            nthread=1)
        except (ValueError, TypeError) as err:
            _documented(err)
            return
    _hold_consistent(responses[0])


PD_XML = """
<mujoco>
  <worldbody>
    <body>
      <joint name="driven" type="hinge" axis="0 1 0"/>
      <geom type="capsule" size="0.02" fromto="0 0 0 0.3 0 0" mass="1"/>
      <body pos="0.3 0 0">
        <joint name="loose" type="hinge" axis="0 1 0"/>
        <geom type="sphere" size="0.02" mass="0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator><position joint="driven" kp="10" gear="2" forcerange="-3 3"/></actuator>
</mujoco>
"""


@EXAMPLES
@given(joints=st.one_of(st.lists(st.one_of(st.sampled_from(['driven', 'loose', 'nope', '']),
                                           st.integers(min_value=-2, max_value=3), ANY_NUMBER, st.none()),
                                 max_size=3),
                        WRONG_TYPES, st.sampled_from(['driven', 0])),
       backend=st.sampled_from([*loop.BACKENDS, 'x']), feedforward=st.sampled_from([*loop.FEEDFORWARD, 'x']),
       position=ANY_NUMBER, stiffness=ANY_NUMBER, max_effort=ANY_NUMBER)
def test_pd_controller_answers_any_joints_with_an_error_or_a_working_controller(joints, backend, feedforward,
                                                                               position, stiffness, max_effort):
    m = mujoco.MjModel.from_xml_string(PD_XML)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # the loose joint's fallback to in-loop is announced, not an error
            pd_ = pd_controller.PDController(m, joints, backend=backend, feedforward=feedforward)
        command = loop.JointCommand(position=position, stiffness=stiffness, damping=0.1, max_effort=max_effort)
    except (ValueError, TypeError) as err:
        _documented(err)
        return
    d = mujoco.MjData(m)
    pd_.write(d, [command] * len(pd_.joints))
    with mj.captured_warnings():
        for _ in range(5):
            mujoco.mj_step(m, d)
    effort = pd_.effort(d)
    assert effort.shape == (len(pd_.joints),)
    assert np.all(np.abs(effort) <= command.max_effort * (1 + 1e-9)) or not np.all(np.isfinite(d.qpos))


# ---------------------------------------------------------------------------------------------------------
# Chapter 4: the servo from a recording (physai.engine.sysid, physai.engine.datasets,
# physai.experiments.servo_sysid)

SYNTHETIC = arm_replay.synthetic_dataset(nepisode=1, seconds=0.5)
EPISODE = SYNTHETIC.episodes[0]


@EXAMPLES
@given(values=st.lists(st.one_of(ANY_NUMBER, WRONG_TYPES), min_size=6, max_size=6),
       timestep=st.one_of(ANY_NUMBER, st.sampled_from([0.001, 0.005, 1 / 30])),
       integrator=st.sampled_from([*checks.INTEGRATORS, 'euler']),
       contacts=st.one_of(st.booleans(), WRONG_TYPES, st.sampled_from(['no', 0, 1])),
       fps=ANY_NUMBER)
def test_arm_servo_and_replay_config_answer_any_input_with_an_error_or_a_config(values, timestep, integrator,
                                                                                contacts, fps):
    try:
        servo = arm_replay.ArmServo(**dict(zip(arm_replay.PARAMS, values)))
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert servo.lag_ms >= 0 and servo.saturation_deg > 0
    try:
        config = arm_replay.ReplayConfig(timestep=timestep, integrator=integrator, contacts=contacts)
        substeps = config.substeps(fps)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert isinstance(config.contacts, (bool, np.bool_)) and 1 <= substeps <= mj.MAX_STEPS


@EXAMPLES
@given(values=st.one_of(st.lists(st.lists(ANY_NUMBER, min_size=0, max_size=7), max_size=3), ANY_NUMBER,
                        WRONG_TYPES),
       joints=st.one_of(st.permutations(so101.JOINTS), st.just(so101.JOINTS[:5]),
                        st.lists(st.sampled_from([*so101.JOINTS, 'elbow']), max_size=7), WRONG_TYPES,
                        st.just('shoulder_pan')))
def test_to_radians_answers_any_table_with_an_error_or_model_angles(values, joints):
    try:
        q = arm_replay.to_radians(values, joints)
    except ValueError as err:  # a table that does not fit its names, or names without the arm's joints
        assert ' must ' in str(err) or 'lacks the arm joints' in str(err), str(err)
        return
    assert q.shape == (len(np.atleast_2d(values)), len(so101.JOINTS))
    finite_in = np.all(np.isfinite(np.atleast_2d(np.asarray(values, dtype=float))))
    assert np.all(np.isfinite(q)) or not finite_in


def _replay_consistent(r: arm_replay.Replay, episode) -> None:
    """A replay's flags agree with its numbers: 'stable' (neither flag) only for a finite, bounded replay."""
    assert r.sim_deg.shape == r.real_deg.shape == (episode.nframe, 5)
    if r.diverged:
        assert not r.chatters
        return
    assert np.all(np.isfinite(r.sim_deg)) and np.all(np.abs(np.radians(r.sim_deg)) <= sim.DIVERGED_BOUND)
    assert math.isfinite(r.mae_deg) and r.mae_deg >= 0
    assert r.chatters == (r.chatter_deg > arm_replay.CHATTER_DEG)


@MUJOCO_RUNS
@given(log_servo=st.tuples(st.floats(-1, 6), st.floats(-4, 4), st.floats(-2, 6), st.floats(-4, 4),
                           st.floats(-5, 1), st.floats(-6, 3)),
       timestep=st.one_of(st.floats(min_value=1e-4, max_value=0.1), st.sampled_from([0.005, 1 / 30, 0.1, 1e-9])),
       integrator=st.sampled_from(checks.INTEGRATORS), contacts=st.booleans(), limits=st.booleans(),
       nan_frame=st.one_of(st.none(), st.none(), st.integers(min_value=0, max_value=EPISODE.nframe - 1)))
def test_replay_flags_a_diverged_or_chattering_run_and_refuses_non_finite_commands(log_servo, timestep, integrator,
                                                                                   contacts, limits, nan_frame):
    episode = EPISODE
    if nan_frame is not None:
        action = episode.action.copy()
        action[nan_frame, 1] = math.nan
        episode = dataclasses.replace(episode, action=action)
    with _within(2 * SECONDS):
        try:
            servo = arm_replay.ArmServo(**{n: 10.0 ** v for n, v in zip(arm_replay.PARAMS, log_servo)})
            config = arm_replay.ReplayConfig(timestep=timestep, integrator=integrator, contacts=contacts, limits=limits)
            result = arm_replay.replay([servo], [episode], config=config, nthread=1)
        except (ValueError, TypeError) as err:
            _documented(err)
            return
    assert nan_frame is None  # a NaN command is refused, never replayed as ctrl 0
    _replay_consistent(result[0][0], episode)


# corruptions of the shipped recording, each with the file its error must name
INFO = 'meta/info.json'
DATA = 'data/chunk-000/file-000.parquet'


def _edit_info(root, edit):
    info = json.loads((root / INFO).read_text())
    edit(info)
    (root / INFO).write_text(json.dumps(info))


def _edit_table(root, edit):
    table = pd.read_parquet(root / DATA)
    edit(table).to_parquet(root / DATA)


def _set_row(column, k, value):
    def edit(table):
        values = list(table[column])
        values[k % len(values)] = np.asarray(value, dtype=np.float32) if np.ndim(value) else value
        return table.assign(**{column: values})
    return edit


CORRUPTIONS = {
    'truncated info.json': (INFO, lambda root, k: (root / INFO).write_text((root / INFO).read_text()[:k % 2000])),
    'info.json not UTF-8': (INFO, lambda root, k: (root / INFO).write_bytes(b'\xff' * (1 + k % 5))),
    'info.json a list': (INFO, lambda root, k: (root / INFO).write_text(json.dumps([k]))),
    'fps wrong': (INFO, lambda root, k: _edit_info(root, lambda i: i.update(fps=[True, '30', -k, None][k % 4]))),
    'features wrong': (INFO, lambda root, k: _edit_info(root, lambda i: i.update(features=[[], 'x', None][k % 3]))),
    'shape wrong': (INFO, lambda root, k: _edit_info(root, lambda i: i['features']['action'].update(
        shape=[k % 5, [k % 5], '6'][k % 3]))),
    'total_episodes wrong': (INFO, lambda root, k: _edit_info(root, lambda i: i.update(
        total_episodes=[k % 4, 5 + k % 3, '4'][k % 3]))),
    'total_frames wrong': (INFO, lambda root, k: _edit_info(root, lambda i: i.update(total_frames=k % 1492))),
    'missing data file': ('data/chunk-*/file-*.parquet', lambda root, k: (root / DATA).unlink()),
    'truncated data file': (DATA, lambda root, k: (root / DATA).write_bytes((root / DATA).read_bytes()[:k % 4000])),
    'duplicated data file': ('file-001.parquet', lambda root, k: shutil.copy(root / DATA,
                                                                           root / DATA.replace('000.p', '001.p'))),
    'empty data file': (DATA, lambda root, k: _edit_table(root, lambda t: t.iloc[:0])),
    'episode missing': ('info.json', lambda root, k: _edit_table(root, lambda t: t[t.episode_index != k % 4])),
    'episode index beyond': ('info.json', lambda root, k: _edit_table(root, lambda t: t.assign(
        episode_index=np.where(t.episode_index == 3, 4 + k % 100, t.episode_index)))),
    'frame twice': (DATA, lambda root, k: _edit_table(root, lambda t: pd.concat([t, t.iloc[k % 1492:k % 1492 + 1]]))),
    'frame missing': (DATA, lambda root, k: (_edit_table(root, lambda t: t.drop(t.index[k % 1492])),
                                             _edit_info(root, lambda i: i.pop('total_frames')))),
    'frame_index as text': (DATA, lambda root, k: _edit_table(root, lambda t: t.assign(
        frame_index=t.frame_index.astype(str)))),
    'timestamp NaN': (DATA, lambda root, k: _edit_table(root, _set_row('timestamp', k, math.nan))),
    'action NaN': (DATA, lambda root, k: _edit_table(root, _set_row('action', k, [math.nan] * 6))),
    'state inf': (DATA, lambda root, k: _edit_table(root, _set_row('observation.state', k, [math.inf] * 6))),
    'action too short': (DATA, lambda root, k: _edit_table(root, _set_row('action', k, [0.0] * (k % 6)))),
    'action column missing': (DATA, lambda root, k: _edit_table(root, lambda t: t.drop(columns=['action']))),
}


@settings(EXAMPLES, max_examples=60)
@given(corruption=st.sampled_from(sorted(CORRUPTIONS)), k=st.integers(min_value=0, max_value=10**6))
def test_loader_names_the_file_and_the_problem_of_any_corrupted_copy(corruption, k):
    where, corrupt = CORRUPTIONS[corruption]
    with tempfile.TemporaryDirectory() as tmp:
        root = shutil.copytree(datasets.shipped_recording(), pathlib.Path(tmp) / 'copy')
        corrupt(root, k)
        with pytest.raises((ValueError, FileNotFoundError)) as raised:
            datasets.load_lerobot(root)
    message = str(raised.value)
    assert where.split('/')[-1].replace('*', '') in message or where in message, (corruption, message)
    assert ' must ' in message or ' no ' in f' {message}', (corruption, message)  # what is wrong or missing



@EXAMPLES
@given(window=st.one_of(st.integers(min_value=-2, max_value=40), ANY_NUMBER), tol_deg=ANY_NUMBER,
       shift=st.one_of(st.integers(min_value=-2, max_value=40), ANY_NUMBER),
       shifts=st.lists(st.integers(min_value=0, max_value=20), max_size=3),
       fps=ANY_NUMBER, damping=st.one_of(st.none(), ANY_NUMBER))
def test_servo_sysid_numbers_answer_with_an_error_or_a_result(window, tol_deg, shift, shifts, fps, damping):
    action = EPISODE.action[:, :5]
    try:
        held = servo_sysid.held_frames(action, window=window, tol_deg=tol_deg)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert held.shape == (len(action),) and not held[:window].any()
    for call in (lambda: servo_sysid.teleport_errors([EPISODE], shift), lambda: servo_sysid.best_shift([EPISODE], shifts)):
        try:
            value = call()
        except (ValueError, TypeError) as err:
            _documented(err)
        else:  # never an empty table whose mean is NaN
            assert np.size(value) > 0 and np.all(np.isfinite(value))
    try:
        speeds = servo_sysid.frame_speeds_deg(action, fps)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert speeds.shape == (len(action) - 1, 5) and np.all(speeds >= 0)
    try:
        top = servo_sysid.saturated_speed_deg(arm_replay.MENAGERIE, damping=damping)
    except (ValueError, TypeError) as err:
        _documented(err)
    else:
        assert top > 0 and not math.isnan(top)


CH3_CH4 = ['pd-growth', 'pd-cause', 'pd-critical-rate', 'pd-tick-mix', 'pd-rate', 'pd-rate-near-critical',
           'pd-implicit-kv', 'sysid']
SLOW = {'pd-rate', 'pd-rate-near-critical', 'pd-implicit-kv', 'sysid'}  # minutes each: only with words that make them refuse


@settings(EXAMPLES, max_examples=30)
@given(argv=st.lists(st.one_of(st.sampled_from(CH3_CH4 + ['list', '--json', '--bogus', 'extra', 'pd-grwoth']),
                               st.text(alphabet='pdgrowth-_ ', min_size=1, max_size=10)), max_size=3))
def test_command_line_answers_chapter_3_and_4_words_with_a_table_or_one_error(argv):
    words = [w for w in argv if not w.startswith('-')]
    if words and words[0] in SLOW and len(words) == 1 and all(w == '--json' for w in argv if w.startswith('-')):
        return  # would run the experiment itself (minutes); its refusal of extra words is drawn instead
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _within(3 * SECONDS):
        try:
            status = main(argv)
        except SystemExit as stop:
            status = stop.code
    assert status in (0, 2), err.getvalue()
    assert 'Traceback' not in err.getvalue() + out.getvalue()
    if status == 2:
        assert [line for line in err.getvalue().splitlines() if 'error: ' in line]


# ---------------------------------------------------------------------------------------------------------
# Chapters 3 and 4: each bug the properties found, as a plain test that failed before the fix


def test_tick_mask_refuses_a_step_count_that_is_not_a_whole_number():
    """Was: ValueError 'negative dimensions', a numpy TypeError, or a 7 TiB MemoryError."""
    for nstep in (-1, 2.5, math.nan, None, 10**12):
        with pytest.raises(ValueError, match='nstep must be a whole number'):
            loop.tick_mask(100, 0.001, nstep)


def test_a_controller_slower_than_the_tick_limit_is_refused_not_stepped_for_ever():
    """Was: tick_growth at 1e-6 Hz stepped 1e9 physics steps per tick in Python (a hang), growth_scan likewise;
    tick_pattern at rate and timestep 1e-200 raised ZeroDivisionError."""
    with pytest.raises(ValueError, match='rate_hz must be >= 0.1 Hz at timestep 0.001 s'):
        loop.tick_growth(rate_hz=1e-6, kp=1.0, kv=1.0, inertia=1.0)
    with pytest.raises(ValueError, match='at most 10,000 physics steps per tick'):
        critical_rate.growth_scan([1e-300])
    with pytest.raises(ValueError, match='rate_hz must be'):
        loop.tick_pattern(1e-200, 1e-200)


def test_tick_growth_refuses_nan_and_negative_gains_and_saturates_an_overflow():
    """Was: kp NaN gave growth inf (a made-up divergence), kp -1 gave 1.006, and in-step an OverflowError."""
    for kp in (math.nan, -1.0, 'a'):
        with pytest.raises(ValueError, match='kp must be a finite number >= 0'):
            loop.tick_growth(rate_hz=100, kp=kp, kv=1.0, inertia=1.0)
    assert loop.tick_growth(rate_hz=0.1, kp=1e12, kv=0.0, inertia=1e-6, backend='in-step',
                            integrator='Euler') == math.inf


def test_zoh_step_refuses_a_tick_of_no_or_negative_steps():
    """Was: substeps (-1,) silently took no step at all."""
    with pytest.raises(ValueError, match=r'substeps\[0\] must be a whole number'):
        loop.zoh_step(1.0, 0.0, lambda q, v: -q, 0.001, substeps=(-1,))


def test_mit_torque_names_a_state_that_is_not_a_number():
    """Was: numpy's 'could not convert string to float'."""
    with pytest.raises(ValueError, match='q must be a number'):
        loop.mit_torque(loop.JointCommand(stiffness=1.0), 'a', 0.0)


def test_growth_curve_checks_its_gains_and_saturates_instead_of_failing_in_linear_algebra():
    """Was: kp or kv NaN raised LinAlgError, armature -1 gave a growth for a negative inertia, a scalar rate a
    TypeError; the issue's kp 30000 RK4 case must stay finite numbers or inf."""
    with pytest.raises(ValueError, match='kp must be a finite number >= 0'):
        where_pd_runs.growth_curve([100], backend='in-loop', kp=math.nan)
    with pytest.raises(ValueError, match='kv must be'):
        where_pd_runs.worst_growth(rate_hz=100, backend='in-loop', kv=math.nan)
    with pytest.raises(ValueError, match='armature must be'):
        where_pd_runs.growth_curve([100], backend='in-loop', armature=-1)
    with pytest.raises(ValueError, match='rates_hz must be a sequence'):
        where_pd_runs.growth_curve(100, backend='in-loop')
    growth = where_pd_runs.growth_curve([1.0, 100.0], backend='in-step', kp=30000, armature=0, timestep=0.0005,
                                        integrator='RK4')
    assert growth[0] == math.inf and np.all(growth > 1)
    assert np.all(where_pd_runs.growth_curve([10.0], backend='in-loop', kp=1e308, armature=0) == math.inf)


def test_zoh_margins_refuse_an_overflow_instead_of_returning_nan():
    """Was: kp 1e300 at inertia 1e-300 gave margins NaN (inf - inf)."""
    with pytest.raises(ValueError, match='must keep'):
        where_pd_runs.zoh_margins(1000.0, kp=1e300, kv=1e300, inertia=1e-300)


def test_pd_controller_refuses_joints_models_and_data_of_the_wrong_kind():
    """Was: joint 1.5 silently became joint 1, None and NaN gave int() errors, a model or data of None a pybind
    or attribute error, and a joint name given as a bare string was split into letters."""
    m = mujoco.MjModel.from_xml_string(PD_XML)
    for joint in (1.5, None, math.nan):
        with pytest.raises(ValueError, match='joint must be a joint name or a whole-number id'):
            pd_controller.PDController(m, [joint])
    with pytest.raises(TypeError, match='joints must be a sequence'):
        pd_controller.PDController(m, 'driven')
    with pytest.raises(TypeError, match='model must be a mujoco.MjModel'):
        pd_controller.PDController(None, ['driven'])
    pd_ = pd_controller.PDController(m, ['driven'])
    with pytest.raises(TypeError, match='data must be a mujoco.MjData'):
        pd_.write(None, [loop.JointCommand()])


def test_hold_params_and_hold_responses_name_what_is_wrong():
    """Was: start_offset 'a' gave 'must be real number, not str'; params of ints an AttributeError; a duration of
    1e9 s a 728 TiB MemoryError; nthread 'a' a pybind error."""
    with pytest.raises(ValueError, match='start_offset must be'):
        hold.HoldParams(start_offset='a')
    with pytest.raises(TypeError, match=r'params\[0\] must be a HoldParams'):
        hold.hold_responses([1], duration=0.01)
    with pytest.raises(TypeError, match='params must be a sequence of HoldParams'):
        hold.hold_responses(hold.HoldParams(), duration=0.01)
    with pytest.raises(ValueError, match='duration must be at most 1,000,000 physics steps'):
        hold.hold_responses([hold.HoldParams(timestep=1e-5)], duration=1e9)
    with pytest.raises(ValueError, match='nthread must be'):
        hold.hold_responses([hold.HoldParams()], duration=0.01, nthread='a')


def test_replay_config_refuses_a_word_for_contacts_instead_of_turning_them_on():
    """Was: contacts='no' was truthy, so the replay ran with contacts on; fps 0 raised ZeroDivisionError."""
    with pytest.raises(ValueError, match='contacts must be True or False'):
        arm_replay.ReplayConfig(contacts='no')
    with pytest.raises(ValueError, match='fps must be'):
        arm_replay.ReplayConfig().substeps(0)


def test_to_radians_checks_the_table_against_its_joint_names():
    """Was: a (3, 4) table for six joints an IndexError, duplicate joint names silently took the first."""
    with pytest.raises(ValueError, match='values must have one column per joint'):
        arm_replay.to_radians(np.zeros((3, 4)), so101.JOINTS)
    with pytest.raises(ValueError, match='joints must name each joint once'):
        arm_replay.to_radians(np.zeros((3, 7)), so101.JOINTS + ('gripper',))
    assert arm_replay.to_radians(np.zeros(6), so101.JOINTS).shape == (1, 6)  # one frame still works


def test_replay_refuses_a_nan_command_instead_of_replaying_ctrl_zero():
    """Was: MuJoCo zeroed the NaN ctrl and the replay came back diverged=False with an error figure."""
    action = EPISODE.action.copy()
    action[3, 1] = math.nan
    with pytest.raises(ValueError, match='episode 0 action must be finite'):
        arm_replay.replay([arm_replay.MENAGERIE], [dataclasses.replace(EPISODE, action=action)])


def test_replay_refuses_runs_beyond_the_step_limits_instead_of_hanging():
    """Was: timestep 1e-7 took 47 s for half a second of recording; fps 1e-9 a 122 TiB MemoryError; a 2000 x 2000
    kp x damping map ran for ever."""
    with pytest.raises(ValueError, match='a replay must take at most 1,000,000 physics steps'):
        arm_replay.replay([arm_replay.MENAGERIE], [EPISODE], config=arm_replay.ReplayConfig(timestep=1e-7))
    with pytest.raises(ValueError, match='fps must be >='):
        arm_replay.replay([arm_replay.MENAGERIE], [dataclasses.replace(EPISODE, fps=1e-9)])
    with pytest.raises(ValueError, match='servos x episodes must take at most'):
        arm_replay.replay([arm_replay.MENAGERIE] * 11_000, [EPISODE], config=arm_replay.ReplayConfig(timestep=1e-4))
    with pytest.raises(ValueError, match='kps x dampings must be at most 10,000 cells'):
        servo_sysid.kp_damping_map([EPISODE], arm_replay.MENAGERIE, range(1, 2000), range(1, 2000))


def test_replay_and_fit_name_arguments_of_the_wrong_kind():
    """Was: AttributeError for a servo or episode of another type or config None, 'need at least one array' for a
    fit on no episode, 'min() arg is an empty sequence' for no start, a reshape error for x of 2 numbers."""
    with pytest.raises(TypeError, match=r'servos\[0\] must be an ArmServo'):
        arm_replay.replay([1], [EPISODE])
    with pytest.raises(TypeError, match='config must be a ReplayConfig'):
        arm_replay.replay([arm_replay.MENAGERIE], [EPISODE], config=None)
    with pytest.raises(ValueError, match='episodes must hold at least one episode'):
        sysid.fit_servo([], max_iter=1, progress=False)
    with pytest.raises(ValueError, match='starts must map at least one name'):
        sysid.fit_servo([EPISODE], starts={}, max_iter=1, progress=False)
    with pytest.raises(ValueError, match='x must be'):
        sysid.residuals([1.0, 2.0], [EPISODE])
    with pytest.raises(ValueError, match='x must be 6 log10 parameters'):
        sysid.from_log([1.0] * 3)


def test_episode_refuses_columns_that_do_not_match_its_joints():
    """Was: accepted, then an IndexError deep inside the replay."""
    with pytest.raises(ValueError, match='action must have the shape of state'):
        dataclasses.replace(EPISODE, action=EPISODE.action[:, :3])
    with pytest.raises(ValueError, match='fps must be a finite number > 0'):
        dataclasses.replace(EPISODE, fps=0.0)


@pytest.fixture
def recording(tmp_path):
    return shutil.copytree(datasets.shipped_recording(), tmp_path / 'copy')


def test_loader_names_info_json_that_is_not_utf8_or_says_fps_true(recording):
    """Was: a bare UnicodeDecodeError; fps true was read as 1 frame per second."""
    (recording / INFO).write_bytes(b'\xff\xfe')
    with pytest.raises(ValueError, match='info.json must be UTF-8 text'):
        datasets.load_lerobot(recording)
    shutil.copy(datasets.shipped_recording() / INFO, recording / INFO)
    _edit_info(recording, lambda i: i.update(fps=True))
    with pytest.raises(ValueError, match='fps in .*info.json must be a number > 0, got True'):
        datasets.load_lerobot(recording)


def test_loader_names_features_and_counts_of_the_wrong_kind(recording):
    """Was: TypeError / AttributeError for features that are not an object, total_episodes '4' ignored."""
    _edit_info(recording, lambda i: i.update(features=['action']))
    with pytest.raises(ValueError, match='features in .*info.json must be a JSON object'):
        datasets.load_lerobot(recording)
    shutil.copy(datasets.shipped_recording() / INFO, recording / INFO)
    _edit_info(recording, lambda i: i.update(total_episodes='4'))
    with pytest.raises(ValueError, match='total_episodes in .*info.json must be a whole number'):
        datasets.load_lerobot(recording)


def test_loader_names_a_corrupted_parquet_file(recording):
    """Was: pyarrow's ArrowInvalid with the absolute path, not a loader error."""
    (recording / DATA).write_bytes((recording / DATA).read_bytes()[:1000])
    with pytest.raises(ValueError, match='file-000.parquet in .* must be a readable parquet file'):
        datasets.load_lerobot(recording)


def test_loader_refuses_frame_indices_stored_as_text_instead_of_sorting_them_as_words(recording):
    """Was: accepted, frames sorted '0', '1', '10', '100', ... so every episode was silently shuffled."""
    _edit_table(recording, lambda t: t.assign(frame_index=t.frame_index.astype(str)))
    with pytest.raises(ValueError, match='frame_index in data/chunk-000/file-000.parquet .* whole numbers'):
        datasets.load_lerobot(recording)


def test_loader_refuses_nan_episode_indices_and_timestamps(recording):
    """Was: 'cannot convert float NaN to integer' for an episode index; a NaN timestamp was accepted."""
    _edit_table(recording, lambda t: t.assign(timestamp=np.where(np.arange(len(t)) == 5, np.nan, t.timestamp)))
    with pytest.raises(ValueError, match='timestamp in data/chunk-000/file-000.parquet .* finite numbers'):
        datasets.load_lerobot(recording)
    shutil.copy(datasets.shipped_recording() / DATA, recording / DATA)
    _edit_table(recording, lambda t: t.assign(episode_index=np.where(t.episode_index == 3, np.nan, t.episode_index)))
    with pytest.raises(ValueError, match='episode_index in data/chunk-000/file-000.parquet .* whole numbers'):
        datasets.load_lerobot(recording)


def test_loader_refuses_a_frame_missing_from_the_middle_of_an_episode(recording):
    """Was: accepted when info.json gives no total_frames: the episode silently skipped a frame."""
    _edit_table(recording, lambda t: t[(t.episode_index != 1) | (t.frame_index != 10)])
    _edit_info(recording, lambda i: i.pop('total_frames'))
    with pytest.raises(ValueError, match='episode 1 must hold frames 0 ... 373 once each, got no frame 10'):
        datasets.load_lerobot(recording)


def test_loader_names_the_file_of_a_non_finite_frame(recording):
    """Was: episode and frame only, not the file."""
    _edit_table(recording, _set_row('action', 7, [math.nan] * 6))
    with pytest.raises(ValueError, match='action must be finite.* of data/chunk-000/file-000.parquet'):
        datasets.load_lerobot(recording)


def test_load_lerobot_names_a_source_that_is_no_path():
    """Was: pathlib's 'expected str, bytes or os.PathLike object, not int'."""
    with pytest.raises(TypeError, match='source must be a folder path or a Hub dataset id'):
        datasets.load_lerobot(3)


def test_servo_sysid_refuses_windows_and_shifts_that_measure_nothing():
    """Was: window -1 and tol NaN silently found 0 or all frames held; shift 1e9 gave an empty table whose mean is
    NaN; best_shift of no shifts an argmin error; split(None) a len() error."""
    with pytest.raises(ValueError, match='window must be a whole number'):
        servo_sysid.held_frames(EPISODE.action, window=-1)
    with pytest.raises(ValueError, match='tol_deg must be'):
        servo_sysid.held_frames(EPISODE.action, tol_deg=math.nan)
    with pytest.raises(ValueError, match='shift must be shorter than the shortest episode'):
        servo_sysid.teleport_errors([EPISODE], 10**9)
    with pytest.raises(ValueError, match='shifts must hold at least one'):
        servo_sysid.best_shift([EPISODE], [])
    with pytest.raises(TypeError, match='dataset must be a LeRobotDataset'):
        servo_sysid.split(None)


def test_cli_turns_a_corrupted_dataset_into_one_error_line(recording, monkeypatch, capsys):
    """sysid on a PHYSAI_DATASET whose info.json is cut short: exit 2 and one line, no traceback."""
    (recording / INFO).write_text('{"codebase_version": ')
    monkeypatch.setenv('PHYSAI_DATASET', os.fspath(recording))
    assert main(['sysid']) == 2
    err = capsys.readouterr().err
    assert err.startswith('error: ') and 'info.json must be valid JSON' in err and len(err.splitlines()) == 1


# ---------------------------------------------------------------------------------------------------------------------
# generated recordings through the loader and fit-servo: wrong rates, glitches, wraps, duplicates, huge episodes,
# hostile names (issue 27). Each drawn recording knows what it is: a clean one must load as written, a corrupted one
# (of a kind the loader promises to catch, above its threshold) must be refused naming its episode.

import functools  # noqa: E402
import xml.etree.ElementTree as ElementTree  # noqa: E402

from physai.cli import fit_request, identify, outputs  # noqa: E402

GENERATED_FPS = (10.0, 15.0, 29.97, 30.0, 50.0, 60.0)
KINDS = ('clean', 'info fps', 'stamped fps', 'glitch', 'wrap', 'spike', 'timestamp twice', 'reversed', 'dropped',
         'stored twice', 'hostile names')
HOSTILE_TEXT = st.sampled_from(['x--->', '<option gravity="0 0 9.81"/>', '\x1b[2J\x1b[31mred', 'two\nlines',
                                '\u202eevil', 'tab\there', '$x^$ {math}', 'ok name', 'émoji 🤖'])
MAX_STEP_DEG = 5.0  # the generated arm moves at most this per frame, so a spike of 30° or more stands out


@dataclasses.dataclass(frozen=True)
class Generated:
    """A drawn recording: what was written and which corruption (``kind``) went into which episode."""
    fps: float
    episodes: tuple  # (index, action (n, 6), state (n, 6), timestamp (n,)) as written before the corruption
    kind: str
    target: int  # the corrupted episode's index
    frames: pd.DataFrame
    info: dict


def _motion(rng, n, fps):
    """(n, 6) smooth joint values in the dataset's units: arm joints in degrees around a mid-range pose, at most
    ``MAX_STEP_DEG`` per frame; the gripper in 0..100."""
    t = np.arange(n) / fps
    out = np.empty((n, 6))
    for j in range(6):
        freq = rng.uniform(0.05, 0.5)
        amplitude = min(rng.uniform(2.0, 60.0), MAX_STEP_DEG * fps / (2 * np.pi * freq) * 0.9)
        centre = rng.uniform(-60.0, 60.0) if j < 5 else 50.0
        amplitude = min(amplitude, 45.0) if j == 5 else amplitude
        out[:, j] = centre + amplitude * np.sin(2 * np.pi * freq * t + rng.uniform(0, 2 * np.pi))
    return out


@st.composite
def generated_recordings(draw, kinds=KINDS):
    fps = draw(st.sampled_from(GENERATED_FPS))
    lengths = draw(st.lists(st.one_of(st.integers(2, 240), st.integers(2, 12), st.sampled_from([3000, 20000])),
                            min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(kinds))
    target = draw(st.integers(0, len(lengths) - 1))
    episodes, rows = [], []
    for index, n in enumerate(lengths):
        action = _motion(rng, n, fps).astype(np.float32).astype(float)
        state = np.concatenate([action[:1].repeat(min(2, n - 1), axis=0), action[:n - min(2, n - 1)]])
        state = np.round(state / (360 / 4096)) * (360 / 4096)  # the follower, two frames behind, in encoder counts
        stamp = (np.arange(n) / fps).astype(np.float32).astype(float)
        episodes.append((index, action, state, stamp))
        rows.append(pd.DataFrame({'action': list(action.astype(np.float32)),
                                  'observation.state': list(state.astype(np.float32)),
                                  'timestamp': stamp.astype(np.float32), 'frame_index': np.arange(n),
                                  'episode_index': np.full(n, index)}))
    frames = pd.concat(rows, ignore_index=True)
    info = {'codebase_version': 'v3.0', 'robot_type': 'so101_follower', 'fps': fps,
            'features': {f: {'dtype': 'float32', 'shape': [6], 'names': [f'{j}.pos' for j in so101_joints()]}
                         for f in ('action', 'observation.state')}}
    rows_of = np.flatnonzero(frames['episode_index'] == target)
    n = len(rows_of)
    feature = draw(st.sampled_from(['action', 'observation.state']))
    joint = draw(st.integers(0, 5))

    def put(row, change):
        values = np.array(frames.at[row, feature], dtype=np.float64)
        values[joint] = change(values[joint])
        with np.errstate(over='ignore'):  # a glitch beyond float32 is stored as inf, as LeRobot would store it
            frames.at[row, feature] = values.astype(np.float32)

    if kind == 'info fps':
        info['fps'] = draw(st.sampled_from([f for f in GENERATED_FPS if abs(1 / f - 1 / fps) > 1e-3]))
    elif kind == 'stamped fps':
        other = draw(st.sampled_from([f for f in GENERATED_FPS if abs(1 / f - 1 / fps) > 1e-3]))
        frames.loc[rows_of, 'timestamp'] = (np.arange(n) / other).astype(np.float32)
    elif kind == 'glitch':
        value = draw(st.one_of(st.floats(361.0, 1e300), st.floats(-1e300, -361.0), st.just(1e30)))
        put(rows_of[draw(st.integers(0, n - 1))], lambda v: value)
    elif kind == 'wrap' and n >= 2:
        start = draw(st.integers(1, n - 1))  # the jump of a turn lies inside the episode
        turn = draw(st.sampled_from([360.0, -360.0]))
        for row in rows_of[start:start + draw(st.integers(1, n))]:
            put(row, lambda v: v + turn)
    elif kind == 'spike' and n >= 3:
        size = draw(st.floats(30.0, 170.0)) * draw(st.sampled_from([1, -1]))
        put(rows_of[draw(st.integers(1, n - 2))], lambda v: v + size)
    elif kind == 'timestamp twice':
        k = rows_of[draw(st.integers(0, n - 1))]
        frames = pd.concat([frames.iloc[:k + 1], frames.iloc[k:]], ignore_index=True)
        frames.loc[frames['episode_index'] == target, 'frame_index'] = np.arange(n + 1)
    elif kind == 'reversed' and n >= 2:
        frames.loc[rows_of, 'timestamp'] = frames.loc[rows_of, 'timestamp'].to_numpy()[::-1]
    elif kind == 'dropped' and n >= 3:
        frames = frames.drop(index=rows_of[draw(st.integers(1, n - 2))]).reset_index(drop=True)
        frames.loc[frames['episode_index'] == target, 'frame_index'] = np.arange(n - 1)
    elif kind == 'stored twice':
        twice = frames.loc[np.repeat(rows_of, 2)].copy()
        twice['frame_index'] = np.arange(2 * n)
        twice['timestamp'] = (np.arange(2 * n) / fps).astype(np.float32)
        frames = pd.concat([frames[frames['episode_index'] != target], twice], ignore_index=True)
    elif kind == 'hostile names':
        info['robot_type'] = draw(HOSTILE_TEXT)
    else:
        kind = 'clean'  # a corruption the episode is too short to hold
    return Generated(fps=fps, episodes=tuple(episodes), kind=kind, target=target, frames=frames, info=info)


def so101_joints():
    from physai.engine.so101 import JOINTS
    return JOINTS


def _write(root: pathlib.Path, rec: Generated) -> pathlib.Path:
    (root / 'meta').mkdir(parents=True)
    (root / 'data' / 'chunk-000').mkdir(parents=True)
    (root / 'meta' / 'info.json').write_text(json.dumps(rec.info))
    rec.frames.to_parquet(root / 'data' / 'chunk-000' / 'file-000.parquet')
    return root


def _moving_frames(action: np.ndarray) -> int:
    return int(np.sum(np.max(np.abs(action[2:] - action[:-2]), axis=1) > datasets.MOVING_DEG)) if len(action) > 2 else 0


LOADER_RUNS = settings(EXAMPLES, max_examples=150)


@LOADER_RUNS
@given(rec=generated_recordings(), folder=st.one_of(st.just('data'), HOSTILE_TEXT.map(lambda s: s.replace('/', '_'))))
def test_a_generated_recording_loads_as_written_or_is_refused_naming_the_bad_episode(rec, folder):
    with tempfile.TemporaryDirectory() as tmp:
        try:
            root = _write(pathlib.Path(tmp) / folder.replace('\x00', ''), rec)
        except OSError:  # a name this file system will not take
            return
        try:
            data = datasets.load_lerobot(root)
        except ValueError as err:
            message = str(err)
            assert rec.kind not in ('clean', 'hostile names'), message  # a sound recording is never refused
            assert ' must ' in message and outputs.inert(message).isprintable()
            # the episode named (a wrong fps in info.json shows in the first episode read)
            assert f'episode {0 if rec.kind == "info fps" else rec.target} ' in message, message
            return
    assert rec.kind in ('clean', 'hostile names', 'stored twice'), rec.kind  # every other corruption is refused
    if rec.kind == 'stored twice':  # refused whenever the doubled episode moves enough to judge
        doubled = data[rec.target].action
        assert _moving_frames(doubled) < datasets.MIN_MOVING_FRAMES
        return
    assert data.fps == rec.fps and [e.index for e in data] == [e[0] for e in rec.episodes]
    for e, (index, action, state, stamp) in zip(data, rec.episodes):
        np.testing.assert_array_equal(e.action, action.astype(np.float32))
        np.testing.assert_array_equal(e.state, state.astype(np.float32))
        np.testing.assert_array_equal(e.timestamp, stamp.astype(np.float32))
        assert datasets.check_episode(e) is e


@functools.cache
def _tiny_identification():
    """A real Identification, cheap (3 synthetic episodes of 3 s, fits capped at 10 iterations), for the command's
    runs below: the fit itself is not what they test, everything around it is."""
    data = arm_replay.synthetic_dataset(nepisode=3, seconds=3.0)
    fit, held = fit_request.select_episodes(data)
    return identify.identify(data, fit, held, progress=False, max_iter=10)


OUT_PLACES = ('new', 'existing', 'existing with --force', 'symbolic link', 'folder', 'missing folder',
              'inside the dataset', 'read-only file', 'wrong suffix')


@settings(EXAMPLES, max_examples=40)
@given(rec=generated_recordings(kinds=('clean', 'hostile names', 'glitch', 'wrap', 'spike', 'info fps',
                                       'timestamp twice', 'dropped')),
       out_place=st.sampled_from(OUT_PLACES), report=st.booleans(), json_=st.booleans(),
       episodes=st.one_of(st.none(), st.lists(st.integers(0, 4), min_size=1, max_size=4)),
       heldout=st.one_of(st.none(), st.lists(st.integers(0, 4), min_size=1, max_size=2)),
       max_frames=st.one_of(st.none(), st.sampled_from(['2', '60', '500', '0', 'x'])))
def test_fit_servo_on_a_generated_recording_writes_a_sound_model_or_refuses_in_one_line(rec, out_place, report, json_,
                                                                                       episodes, heldout, max_frames):
    """Whatever the recording and the options: exit 0 with a model that compiles as Menagerie's arm (gravity down,
    no injected element) and a printable report, or exit 2 with one printable error line and every file as it was;
    never a traceback, and never 0 on a recording whose selected episodes are corrupted."""
    tiny = _tiny_identification()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        root = _write(tmp / 'data', rec)
        out = tmp / 'arm.xml'
        (tmp / 'victim.txt').write_text('not yours')
        if out_place in ('existing', 'existing with --force', 'read-only file'):
            out.write_text('the old model')
            if out_place == 'read-only file':
                out.chmod(0o444)
        elif out_place == 'symbolic link':
            out.symlink_to(tmp / 'victim.txt')
        elif out_place == 'folder':
            out.mkdir()
        elif out_place == 'missing folder':
            out = tmp / 'missing' / 'arm.xml'
        elif out_place == 'inside the dataset':
            out = root / 'meta' / 'arm.xml'
        elif out_place == 'wrong suffix':
            out = tmp / 'arm.urdf'
        argv = ['fit-servo', str(root), '--out', str(out)]
        argv += ['--force'] if out_place in ('existing with --force', 'read-only file', 'symbolic link') else []
        argv += ['--report', str(tmp / 'fit.png')] if report else []
        argv += ['--json'] if json_ else []
        argv += ['--episodes', *map(str, episodes)] if episodes else []
        argv += ['--heldout', *map(str, heldout)] if heldout else []
        argv += [f'--max-frames={max_frames}'] if max_frames else []
        before = {p: p.read_bytes() for p in tmp.rglob('*') if p.is_file() and not p.is_symlink()}

        def fake(data, fit, held, *, source='', **kwargs):
            return dataclasses.replace(tiny, dataset=data, source=source)

        stdout, stderr = io.StringIO(), io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(identify, 'identify', fake)
            mp.setattr('sys.stdout', stdout)
            mp.setattr('sys.stderr', stderr)
            status = main(argv)
        assert status in (0, 2), (status, stderr.getvalue())
        if status == 2:
            lines = stderr.getvalue().splitlines()
            assert len(lines) == 1 and lines[0].startswith('error: ') and lines[0].isprintable(), lines
            after = {p: p.read_bytes() for p in tmp.rglob('*') if p.is_file() and not p.is_symlink()}
            assert after == before  # nothing written, nothing left behind
            return
        assert out_place in ('new', 'existing with --force'), out_place  # every unsafe place is refused
        assert (tmp / 'victim.txt').read_text() == 'not yours'
        chosen = episodes or [e[0] for e in rec.episodes]
        assert rec.kind in ('clean', 'hostile names') or rec.target not in chosen, rec.kind  # no bad episode fitted
        text = out.read_text(encoding='utf-8')
        assert text.count('-->') == 1 and all(line.isprintable() for line in text.splitlines())
        ElementTree.fromstring(text)
        np.testing.assert_allclose(mujoco.MjModel.from_xml_path(str(out)).opt.gravity, [0, 0, -9.81])
        assert all(line.isprintable() for line in stdout.getvalue().splitlines())
        if json_:
            assert json.loads(stdout.getvalue())['out'] == str(out)
        assert not report or (tmp / 'fit.png').read_bytes()[:4] == b'\x89PNG'
        leftovers = [p.name for p in tmp.iterdir() if p.name.endswith('.part')]
        assert not leftovers
