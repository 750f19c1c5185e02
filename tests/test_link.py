"""physai.engine.link: the link on a <position> servo, its step responses against MuJoCo, and their honest figures."""

import math

import mujoco
import numpy as np
import pytest

from physai.engine import link
from physai.laws import checks, stability
from physai.engine.link import LINK_INERTIA, LINK_XML, ServoParams, step_response, step_responses
from physai.laws.sim import servo_sag


def _by_loop(params: ServoParams, q0: float = -0.5, duration: float = 3.0) -> link.StepResponse:
    """The slow, obviously correct reference: one MjData, one mj_step at a time."""
    m = link.link_model(params)
    d = mujoco.MjData(m)
    d.qpos[0] = q0
    mujoco.mj_forward(m, d)
    q = [q0]
    for _ in range(round(duration / params.timestep)):
        mujoco.mj_step(m, d)
        if d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0:
            return link.summarize(params, params.timestep * np.arange(len(q)), np.array(q), True)
        q.append(d.qpos[0])
    return link.summarize(params, params.timestep * np.arange(len(q)), np.array(q), False)


GRID = [ServoParams(kp=kp, armature=a, integrator=i, kv=2.731, damping=0.6, timestep=h)
        for kp in (30, 998.22, 30000) for a in (0.028, 0.0) for i in checks.INTEGRATORS
        for h in (0.002, 0.005)] + [
    ServoParams(kp=kp, integrator=i, frictionloss=f, timestep=0.0005, forcerange=r)
    for kp in (100.0, 30000.0) for i in ('RK4', 'implicitfast') for f in (0.0, 0.05) for r in (None, 1.0)]
"""Every integrator at two steps, stiff and soft, with and without armature; the panel's 0.5 ms corner with friction
loss (a constraint) and a force clamp."""


def test_batched_step_responses_are_bit_identical_to_a_loop():
    """mujoco.batch runs the same arithmetic as mj_step, so every sample agrees exactly (the batch also skips the
    contact and, without friction loss, the constraint stages the link never uses)."""
    batched = step_responses(GRID)
    for params, ours in zip(GRID, batched):
        ref = _by_loop(params)
        assert ours.diverged == ref.diverged, params
        np.testing.assert_array_equal(ours.q, ref.q)
        np.testing.assert_array_equal(ours.t, ref.t)


def test_link_model_matches_a_freshly_compiled_model():
    """Editing fields in place gives the model MuJoCo would compile from the same attributes."""
    params = ServoParams(kp=250.0, dampratio=0.5, armature=0.01, damping=0.3, frictionloss=0.02,
                         forcerange=(-1.5, 2.0), timestep=0.002, integrator='Euler')
    xml = (LINK_XML.replace('kp="1" kv="0"', 'kp="250" dampratio="0.5" forcerange="-1.5 2"')
           .replace('armature="0.028"', 'armature="0.01" damping="0.3" frictionloss="0.02"')
           .replace('timestep="0.005" integrator="implicitfast"', 'timestep="0.002" integrator="Euler"'))
    compiled = mujoco.MjModel.from_xml_string(xml)
    ours = link.link_model(params)
    for field in ('actuator_gainprm', 'actuator_biasprm', 'actuator_forcerange', 'actuator_forcelimited',
                  'dof_armature', 'dof_damping', 'dof_frictionloss', 'dof_invweight0'):
        np.testing.assert_allclose(getattr(ours, field), getattr(compiled, field), rtol=1e-12,
                                   err_msg=field)
    assert ours.opt.timestep == compiled.opt.timestep
    assert ours.opt.integrator == compiled.opt.integrator


@pytest.mark.parametrize('armature', [0.0, 0.028, 0.1])
def test_kv_follows_armature_when_dampratio_is_given(armature):
    """dampratio is resolved at compile time; changing armature at run time must recompute kv."""
    kv = link.link_model(ServoParams(kp=100.0, dampratio=1.0, armature=armature)).actuator_biasprm[0, 2]
    xml = LINK_XML.replace('kp="1" kv="0"', 'kp="100" dampratio="1"').replace(
        'armature="0.028"', f'armature="{armature}"')
    assert kv == pytest.approx(mujoco.MjModel.from_xml_string(xml).actuator_biasprm[0, 2], rel=1e-12)


@pytest.mark.parametrize('kp', [1, 10, 100, 1000])
def test_sag_matches_static_balance(kp):
    """Once settled, the link rests where kp*e = tau_g*cos(e)."""
    r = step_response(kp)
    assert not r.diverged
    assert r.sag_deg == pytest.approx(math.degrees(servo_sag(kp, link.TAU_G)), abs=1e-3)


def test_rise_time_of_a_linear_ramp_is_interpolated():
    """10 % to 90 % of a straight line from 0 to 1 over 1 s takes 0.8 s, between samples too."""
    t = np.linspace(0, 1, 7)
    assert link.rise_time(t, t.copy(), 1.0) == pytest.approx(0.8)


def test_divergence_is_a_result_and_the_record_stops_before_the_reset():
    """Euler without armature blows up: flagged, no exception, and no post-reset samples kept."""
    r = step_response(998.22, kv=2.731, damping=0.6, armature=0.0, integrator='Euler')
    assert r.diverged
    assert math.isnan(r.sag_deg) and math.isnan(r.rise_ms) and math.isnan(r.p2p_deg)
    assert len(r.q) < 600
    assert np.all(np.abs(np.diff(r.q)) > 0)  # every kept sample is a real step, not a repeated reset state


def test_force_clamp_turns_the_explosion_into_chatter():
    """With the ±2.94 N·m clamp, Euler at armature 0 stays bounded but oscillates."""
    r = step_response(998.22, kv=2.731, damping=0.6, frictionloss=0.052, armature=0.0,
                      integrator='Euler', forcerange=(-2.94, 2.94))
    assert not r.diverged
    assert r.p2p_deg > 0.1


def test_a_run_on_the_stability_bound_never_settles():
    """kp 30000 at dampratio 1 puts hω = 4.83 on implicitfast's bound 2 + 2√2: no growth, no decay."""
    swinging = step_response(30000)
    assert not swinging.diverged and not swinging.settled
    assert swinging.p2p_deg > 90
    assert step_response(3000).settled


BAD_INPUT = [
    (dict(kp=0), 'kp must be a finite number > 0 N·m/rad, got 0'),
    (dict(kp=-5), 'kp must be a finite number > 0 N·m/rad, got -5'),
    (dict(kp=math.nan), 'kp must be a finite number > 0 N·m/rad, got nan'),
    (dict(kp=math.inf), 'kp must be a finite number > 0 N·m/rad, got inf'),
    (dict(kp=1, armature=-0.1), 'armature must be a finite number >= 0 kg·m², got -0.1'),
    (dict(kp=1, timestep=0), r'timestep must be in \(0, 0.1\] s, got 0'),
    (dict(kp=1, timestep=0.2), r'timestep must be in \(0, 0.1\] s, got 0.2'),
    (dict(kp=1, integrator='rk4'),
     "integrator must be one of Euler, RK4, implicit, implicitfast, discrete, got 'rk4'"),
    (dict(kp=1, damping=-1), 'damping must be a finite number >= 0 N·m·s/rad, got -1'),
    (dict(kp=1, frictionloss=-0.1), 'frictionloss must be a finite number >= 0 N·m, got -0.1'),
    (dict(kp=1, forcerange=(2, -2)), r'forcerange must be \(low, high\) N·m with low <= high, got \(2, -2\)'),
    (dict(kp=1, duration=0.3), r'duration must be in \(0.5, 600\] s \(longer than the settle window\), got 0.3'),
    (dict(kp=1, q0=100.0), r'q0 must be an angle in \[-pi, pi\] rad, got 100.0'),
]


@pytest.mark.parametrize('kwargs, message', BAD_INPUT)
def test_bad_input_names_the_parameter_and_what_is_allowed(kwargs, message):
    kp = kwargs.pop('kp')
    with pytest.raises(ValueError, match=message):
        step_response(kp, **kwargs)


@pytest.mark.parametrize('kwargs', [{'kv': 1e9}, {'armature': 1e9}, {'damping': 1e9}, {'dampratio': 1e9}])
def test_a_link_that_barely_moved_reports_no_sag_and_no_rise(kwargs):
    """With damping or inertia of 1e9 the link creeps 1e-7 rad in 3 s: it neither settled nor rose."""
    response = link.step_response(100.0, **kwargs)
    assert not response.diverged and not response.settled
    assert math.isnan(response.sag_deg) and math.isnan(response.rise_ms)


def test_a_run_on_the_stability_bound_has_no_sag():
    """kp 30000 at armature 0.028 under implicitfast swings ±64° for ever: never settles, so no sag or rise."""
    response = link.step_response(30000.0)
    assert not response.diverged and not response.settled and response.p2p_deg > 100
    assert math.isnan(response.sag_deg) and math.isnan(response.rise_ms)


@pytest.mark.parametrize('kwargs, message', [
    ({'timestep': 1e-9}, 'duration / timestep must be at most MAX_STEPS = 1,000,000 steps per run'),
    ({'timestep': 1e-7}, 'duration / timestep must be at most MAX_STEPS = 1,000,000 steps per run'),
    ({'forcerange': (5,)}, 'forcerange must be two finite numbers (low, high) N·m, got (5,)'),
    ({'forcerange': -5}, 'forcerange must be a finite number > 0 N·m, got -5'),
])
def test_a_run_too_long_or_a_malformed_clamp_is_refused_before_simulating(kwargs, message):
    """Once a hang (3e7 steps) or a TypeError from deep inside MuJoCo's rollout."""
    with pytest.raises(ValueError) as err:
        link.step_response(100.0, **kwargs)
    assert str(err.value).startswith(message)


def test_a_number_forcerange_is_the_symmetric_clamp_mujoco_compiles():
    """forcerange=F is MuJoCo's forcerange="-F F": one name, a number or a pair, as in ArmServo and HoldParams."""
    assert link.ServoParams(kp=1.0, forcerange=2.94).forcerange == (-2.94, 2.94)
    spec = link.link_spec()
    spec.actuator('servo').forcerange = [-2.94, 2.94]
    spec.actuator('servo').forcelimited = 1
    want = spec.compile()
    got = link.link_model(link.ServoParams(kp=1.0, kv=0.0, forcerange=2.94))
    assert list(got.actuator_forcerange[0]) == list(want.actuator_forcerange[0])
    assert got.actuator_forcelimited[0] == want.actuator_forcelimited[0] == 1


def test_step_responses_wants_servo_params():
    with pytest.raises(TypeError, match=r"params\[0\] must be a ServoParams, got dict"):
        link.step_responses([{'kp': 100}])


def test_many_runs_share_one_batch_limit():
    params = [link.ServoParams(kp=100.0, timestep=1e-5)] * 200
    with pytest.raises(ValueError, match='the batch must take at most MAX_TOTAL_STEPS'):
        link.step_responses(params)


def test_rise_shortfall_is_the_timestep_except_for_the_softest_servo():
    """At kp 100 the measured rise approaches the continuous formula as the step shrinks (5 → 1 → 0.2 ms);
    at kp 1 gravity's torque, comparable to the spring's, keeps it below the formula at any step."""
    inertia = LINK_INERTIA + 0.028
    timesteps = (0.005, 0.001, 0.0002)
    def ratio(kp, h):
        return link.step_response(kp, timestep=h).rise_ms / (1e3 * stability.critical_rise_time(kp, inertia))

    stiff = [ratio(100.0, h) for h in timesteps]
    assert stiff[0] < stiff[1] < stiff[2] < 1.0
    assert stiff[0] < 0.95 and stiff[2] > 0.995
    soft = [ratio(1.0, h) for h in timesteps]
    assert max(soft) < 0.9 and max(soft) - min(soft) < 0.01


def test_first_crossing_interpolates_linearly_between_samples():
    t = np.array([0.0, 1.0, 2.0])
    x = np.array([0.0, 0.4, 1.0])
    assert link.crossing_time(t, x, 0.7) == pytest.approx(1.5)
    assert link.crossing_time(t, x, 0.0) == 0.0
    assert math.isnan(link.crossing_time(t, x, 2.0))


def test_moving_at_reads_each_length_as_a_whole_run_of_that_length_would():
    """A run of length T, stepped from length to length and dropped once still, is sample for sample the first T s
    of a longer run: its peak-to-peak over the last 0.5 s at each length is step_responses' at that duration, and a
    run found still at one length stays still at every later one (friction holds it)."""
    params = [ServoParams(kp=998.22, kv=2.731, damping=0.6, frictionloss=0.052, armature=0.002, integrator='Euler',
                          forcerange=2.94)] * 12
    starts = -0.5 + 1e-9 * np.arange(12)
    lengths = (1.0, 2.0, 3.0, 5.0)
    survival = link.moving_at(params, lengths, p2p_rad=math.radians(1e-6), q0=starts)
    whole = step_responses(params, q0=starts, duration=lengths[-1])
    for k, length in enumerate(lengths):
        n = round(length / params[0].timestep) + 1
        p2p = np.array([np.ptp(r.q[n - 100:n]) for r in whole])
        moving = p2p > math.radians(1e-6)
        assert np.array_equal(survival.moving[:, k], moving), length
        stepped = ~np.isnan(survival.p2p_rad[:, k])
        assert np.array_equal(survival.p2p_rad[stepped, k], p2p[stepped])
    assert np.all(np.diff(survival.moving.astype(int), axis=1) <= 0)  # caught is for good
    assert survival.count()[0] > survival.count()[-1] > 0 and not survival.diverged.any()


def test_moving_at_refuses_lengths_closer_than_its_window():
    params = [ServoParams(kp=100.0)]
    for lengths in ((), (0.2,), (1.0, 1.3), (2.0, 1.0), (1.0, 700.0)):
        with pytest.raises(ValueError, match='lengths'):
            link.moving_at(params, lengths, p2p_rad=1e-8)
    with pytest.raises(ValueError, match='p2p_rad'):
        link.moving_at(params, (1.0,), p2p_rad=0.0)
    with pytest.raises(ValueError, match='one timestep'):
        link.moving_at([ServoParams(kp=1.0), ServoParams(kp=1.0, timestep=0.001)], (1.0,), p2p_rad=1e-8)
