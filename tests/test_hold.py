"""physai.engine.hold: chapter 3's batched SO-101 hold against a plain loop of PDController.write and mj_step, and its
ensembles."""

import dataclasses
import math

import mujoco
import mujoco.batch
import numpy as np
import pytest

from physai.engine import hold, mj, perturb, so101
from physai.laws import loop, robust
from physai.engine.hold import HoldParams
from physai.engine.pd_controller import PDController
from physai.laws.loop import BACKENDS, JointCommand


def hold_by_loop(params: HoldParams, duration: float = 1.0, model: mujoco.MjModel | None = None):
    """The slow, obvious reference: one MjData, PDController.write at every tick, mj_step in between (on
    ``model``, default the runner's own :func:`hold.hold_model`)."""
    if model is None and params.implicit_kv:  # kv in the joints' damping, built here rather than by the runner
        m = hold.hold_model(dataclasses.replace(params, implicit_kv=False))
        m.dof_damping[:] += params.kv
    else:
        m = hold.hold_model(params) if model is None else model
    kv = 0.0 if params.implicit_kv else params.kv
    controller = PDController(m, hold.so101_joints(), backend=params.backend)
    d = mujoco.MjData(m)
    d.qpos[:] += params.start_offset
    perturb.nudge(d.qpos)  # the same start as the batched run, nudged or not (PHYSAI_PERTURB)
    nstep = round(duration / params.timestep)
    t = params.timestep * np.arange(nstep)
    position, velocity = hold.reference(t)
    mask = loop.tick_mask(params.rate_hz, params.timestep, nstep)
    q = np.empty((nstep, m.nq))
    max_contacts = 0
    for k in range(nstep):
        if mask[k]:
            controller.write(d, [JointCommand(position=p, velocity=v, stiffness=params.kp,
                                              damping=kv, max_effort=params.forcerange)
                                 for p, v in zip(position[k], velocity[k])])
        mujoco.mj_step(m, d)
        q[k] = d.qpos
        max_contacts = max(max_contacts, d.ncon)
    return q, max_contacts


@pytest.mark.parametrize('backend', BACKENDS + ('in-loop, kv implicit',))
@pytest.mark.parametrize('rate_hz', [50, 400])
def test_batched_hold_matches_a_plain_loop_and_touches_nothing(backend, rate_hz):
    """The batched runner is the PDController loop (1e-9 rad), and no contact ever forms: contacts stay on. The
    what-if with kv implicit is the same loop on a model whose joint damping carries kv, the PD writing kv 0."""
    implicit_kv = backend == 'in-loop, kv implicit'
    params = HoldParams(rate_hz=rate_hz, backend='in-loop' if implicit_kv else backend, implicit_kv=implicit_kv)
    q_loop, max_contacts = hold_by_loop(params)
    (batched,) = hold.hold_responses([params], duration=1.0)
    np.testing.assert_allclose(batched.q, q_loop, atol=1e-9, rtol=0)
    assert max_contacts == 0


def meshed_hold_model(params: HoldParams) -> mujoco.MjModel:
    """The oracle's model: Menagerie's SO-101 as shipped, meshes and all, with the run's options and armature
    (PDController sets up the actuators, as in hold_by_loop)."""
    m = so101.load_so101()
    m.opt.timestep = params.timestep
    m.opt.integrator = mj.INTEGRATOR_ENUM[params.integrator]
    mj.set_armature(m, params.armature)
    return m


@pytest.mark.parametrize('backend', BACKENDS)
def test_hold_on_the_mesh_free_arm_is_the_loop_on_the_shipped_arm(backend):
    """The chapter's runs use the arm without its visual meshes; MuJoCo stepping the shipped model (63 MB of
    meshes) through PDController gives the same trajectory: at 50 Hz in-loop that is a chaotic chatter, so any
    difference in mass, inertia or contacts would have grown by the end."""
    params = HoldParams(rate_hz=50, backend=backend)
    q_loop, max_contacts = hold_by_loop(params, model=meshed_hold_model(params))
    (run,) = hold.hold_responses([params], duration=1.0)
    np.testing.assert_allclose(run.q, q_loop, atol=1e-9, rtol=0)
    assert max_contacts == 0


LONE_CASES = [
    HoldParams(rate_hz=50, backend='in-loop'),  # chaotic: any last-bit difference would grow
    HoldParams(rate_hz=1000, backend='in-loop', armature=0.0),  # a tick at every step
    HoldParams(rate_hz=133, backend='in-loop', kp=30000.0, timestep=0.02, integrator='Euler', armature=0.0),
    # an explicit PD far past its bound: MuJoCo flags bad accelerations, resets and goes on, many times
    HoldParams(rate_hz=333, backend='in-loop', kp=1e6, forcerange=1e9, armature=0.0, integrator='Euler'),
]


@pytest.mark.parametrize('params', LONE_CASES, ids=['50Hz', '1kHz', 'coarse', 'diverges'])
def test_a_lone_in_loop_run_is_its_batched_run_bit_for_bit(params):
    """The live panel's single in-loop run steps one MjData instead of a Batch call per tick: the same samples to
    the last bit as when it runs in a batch beside another in-loop run, diverged runs included (flagged in both)."""
    lone = hold.hold_responses([params], nthread=1)[0]
    batched = hold.hold_responses([params, dataclasses.replace(params, rate_hz=77.0)], nthread=1)[0]
    np.testing.assert_array_equal(lone.q, batched.q)
    assert lone.diverged == batched.diverged
    assert lone.diverged == (params.kp == 1e6)


def test_a_lone_run_makes_no_batch_call_per_tick_and_in_step_makes_one(monkeypatch):
    """In-loop alone: no Batch.rollout at all (150 ticks at 50 Hz used to be 150 calls); in-step: one call for the
    whole run, its inputs scheduled ahead."""
    calls = []
    rollout = mujoco.batch.Batch.rollout

    def counted(self, *args, **kwargs):
        calls.append(args[0] if args else kwargs['nstep'])
        return rollout(self, *args, **kwargs)

    monkeypatch.setattr(mujoco.batch.Batch, 'rollout', counted)
    hold.hold_responses([HoldParams(rate_hz=50, backend='in-loop')], nthread=1)
    assert calls == []
    hold.hold_responses([HoldParams(rate_hz=50, backend='in-step')], nthread=1)
    assert calls == [round(hold.DURATION / hold.PHYSICS_TIMESTEP)]


def test_ensemble_runs_start_a_nanoradian_apart():
    """Run k of an ensemble is the configuration with every joint's start moved by k * ENSEMBLE_SPACING."""
    members = hold.ensemble_members(HoldParams(rate_hz=50, backend='in-loop'), 4)
    assert [m.start_offset for m in members] == [k * hold.ENSEMBLE_SPACING for k in range(4)]
    base, run = hold.hold_responses([members[0], members[3]], duration=0.002)
    assert 0 < np.max(np.abs(run.q - base.q)) < 1e-8  # 3e-9 rad at the start, a few steps later


def test_a_table_peak_to_peak_is_the_radian_series_figure_in_degrees_to_two_digits():
    """The tables round in radians (the 1-2-5 series the ensembles support) and print degrees: 0.2 rad is 11.46°, shown
    11; a still ensemble's bound of 1e-09 rad (5.7e-08°) goes up the series to < 1e-07; no figure stays none."""
    assert [hold.p2p_deg(x) for x in (0.2, 0.1, 0.05, 0.02, 0.01, 0.005)] == [11, 5.7, 2.9, 1.1, 0.57, 0.29]
    bound = hold.p2p_deg(robust.Below(hold.STILL_P2P))
    assert isinstance(bound, robust.Below) and f'{bound:g}' == '< 1e-07' and bound > math.degrees(hold.STILL_P2P)
    assert hold.p2p_deg(None) is None


def test_a_still_configuration_stops_at_the_probe_and_a_moving_one_gets_the_full_ensemble():
    e_still, e_loud = hold.hold_ensembles([HoldParams(rate_hz=400, backend='in-step'),
                                              HoldParams(rate_hz=50, backend='in-loop')], n=12, probe=4)
    assert (e_still.n, e_still.state, e_still.tone) == (4, 'still', None)
    assert (e_loud.n, e_loud.state, e_loud.chattering) == (12, 'chatters', 12)


def test_chatter_frequency_finds_a_tone_and_refuses_broadband_motion():
    """A tone (even one that wanders by a hertz) is found; noise, two far-apart tones and drift are None."""
    t = np.arange(1000) * 1e-3
    rng = np.random.default_rng(0)
    assert hold.chatter_frequency(t, np.sin(2 * np.pi * 7 * t)) == 7.0
    wandering = np.sin(2 * np.pi * (7 * t + 0.15 * np.sin(2 * np.pi * t)))  # 7 ± 0.9 Hz over the second
    assert hold.chatter_frequency(t, wandering) == 7.0
    assert hold.chatter_frequency(t, rng.standard_normal(t.size)) is None
    assert hold.chatter_frequency(t, np.sin(2 * np.pi * 8 * t) + 0.9 * np.sin(2 * np.pi * 98 * t)) is None
    assert hold.chatter_frequency(t, t + 0.01 * np.sin(2 * np.pi * 20 * t)) is None  # drift: 1 Hz bin


@pytest.mark.parametrize('integrator, tol', [('Euler', 1e-12), ('implicitfast', 1e-4)])
def test_backends_agree_at_1khz(integrator, tol):
    """At 1 kHz the tick is the physics step: identical under Euler (kv explicit in both), within 1e-4 rad
    over the whole move and hold under implicitfast (only the step treats kv implicitly)."""
    a, b = hold.hold_responses([HoldParams(rate_hz=1000, backend=backend, integrator=integrator)
                                   for backend in BACKENDS])
    assert np.max(np.abs(a.q - b.q)) < tol


def test_without_armature_in_loop_chatters_even_at_1khz_and_in_step_does_not():
    a, b = hold.hold_responses([HoldParams(rate_hz=1000, backend=backend, armature=0.0)
                                   for backend in BACKENDS])
    assert a.chatters and a.chatter_hz == 500.0 and a.worst_p2p_rad > 1e-3  # one step up, one down
    assert not b.chatters and b.chatter_hz is None and not b.diverged


def test_feedforward_outside_the_clamp_overshoots_the_move():
    """kv*velocity as qfrc_applied escapes the forcerange while moving: the arm overshoots by far."""
    clamped, applied = hold.hold_responses(
        [HoldParams(rate_hz=1000, feedforward=f) for f in loop.FEEDFORWARD], duration=1.0)
    assert np.max(np.abs(clamped.q - clamped.target)) < 0.05
    assert np.max(np.abs(applied.q - applied.target)) > 0.3


@pytest.mark.parametrize('kwargs, message', [
    ({'rate_hz': 0}, 'rate_hz must be a finite number > 0 Hz, got 0'),
    ({'backend': 'firmware'}, 'backend must be one of in-loop, in-step'),
    ({'timestep': 0.2}, r'timestep must be in \(0, 0.1\] s'),
    ({'integrator': 'leapfrog'}, 'integrator must be one of'),
    ({'armature': -0.1}, 'armature must be a finite number >= 0'),
    ({'kp': 0.0}, 'kp must be a finite number > 0 N·m/rad, got 0.0'),
    ({'feedforward': 'nowhere'}, 'feedforward must be one of in-clamp, applied'),
    ({'start_offset': 1e-3}, r'start_offset must be a number in \[-1e-06, 1e-06\] rad, got 0.001'),
    ({'implicit_kv': 1, 'backend': 'in-loop'}, 'implicit_kv must be True or False, got 1'),
    ({'implicit_kv': True, 'backend': 'in-step'}, "implicit_kv applies to backend 'in-loop' only"),
])
def test_bad_hold_params_raise_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HoldParams(**kwargs)


def test_implicitfast_drops_kv_from_the_velocity_derivative_at_the_force_limit():
    """Inside the clamp qDeriv holds -(kv + damping); with the force pinned at forcerange only -damping."""
    force, c = hold.implicit_damping(0.001, kp=100.0, kv=2.0, damping=0.5, forcerange=3.0)
    assert force == pytest.approx(0.1) and c == pytest.approx(2.5)
    for error in (0.5, -0.5):
        force, c = hold.implicit_damping(error, kp=100.0, kv=2.0, damping=0.5, forcerange=3.0)
        assert abs(force) == pytest.approx(3.0) and c == pytest.approx(0.5)
    with pytest.raises(ValueError, match='error must be a finite'):
        hold.implicit_damping(math.nan)
    with pytest.raises(ValueError, match='forcerange'):
        hold.implicit_damping(0.1, forcerange=0.0)


def test_implicit_kv_moves_kv_into_the_damping_that_implicitfast_takes_implicitly():
    """HoldParams(implicit_kv=True): every joint's dof_damping is the model's plus kv, so implicitfast's velocity
    derivative (-qDeriv on the diagonal) holds kv while the applied torque carries none; the shared in-loop model
    is left as it was."""
    base = hold.hold_model(HoldParams(backend='in-loop'))
    what_if = hold.hold_model(HoldParams(backend='in-loop', implicit_kv=True, kv=2.5))
    np.testing.assert_allclose(what_if.dof_damping, base.dof_damping + 2.5, rtol=0, atol=1e-15)
    d = mujoco.MjData(what_if)
    mujoco.mj_step(what_if, d)
    diagonal = d.qDeriv[what_if.D_rowadr + what_if.D_diag]  # qDeriv is stored sparse, row by row
    np.testing.assert_allclose(-diagonal, base.dof_damping + 2.5, rtol=1e-12)
    assert np.all(hold.hold_model(HoldParams(backend='in-loop')).dof_damping == base.dof_damping)


def test_two_threads_running_holds_at_once_get_each_their_own_runs():
    """A panel widget's worker runs holds while its first reply (or a notebook cell, or another widget) runs others:
    two threads calling hold_responses at once, in-step with the same set-up and different gains (the models a batch
    pools per set-up, the batch of the same size), each get the runs they get alone, to the bit. With one pool and one
    batch for both, each thread's gains were written into the other's models mid-run (a 64-run ensemble read 'mixed:
    8 of 64 chatter' where alone it chatters in all 64)."""
    import threading
    setups = [[HoldParams(backend='in-step', kp=kp, kv=kv, armature=0.01, timestep=0.006, integrator='Euler',
                          rate_hz=200.0, start_offset=1e-9 * i) for i in range(8)] for kp, kv in ((300.0, 5.0),
                                                                                              (900.0, 1.0))]
    alone = [[r.q for r in hold.hold_responses(params, nthread=1)] for params in setups]
    for _ in range(3):
        together, errors = [None, None], []

        def run(i):
            try:
                together[i] = [r.q for r in hold.hold_responses(setups[i], nthread=1)]
            except Exception as exc:  # reported below, not lost in the thread
                errors.append(exc)
        threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for i in (0, 1):
            for got, want in zip(together[i], alone[i]):
                np.testing.assert_array_equal(got, want)
