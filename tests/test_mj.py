"""physai.engine.mj: MuJoCo's warnings captured only around physai's runs, the one divergence rule, and servo gains
and armature written into a compiled model exactly as MuJoCo compiles them."""

import math
import threading

import mujoco
import mujoco.batch
import numpy as np
import pytest

from physai.engine import mj
from physai.engine.link import LINK_XML, step_response

_SERVO_XML = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body><joint name="j" type="hinge" axis="0 1 0" {joint}/><geom type="capsule" size="0.02" fromto="0 0 0 0.2 0 0" mass="0.3"/></body>
  </worldbody>
  <actuator>{actuator}</actuator>
</mujoco>"""


def _compiled(actuator: str, joint: str = '') -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(_SERVO_XML.format(actuator=actuator, joint=joint))


def test_physai_leaves_the_process_wide_warning_handler_as_it_found_it(capfd):
    """After physai's own runs (one of them diverging), a reader's diverging mj_step loop still prints MuJoCo's
    warning: physai captured warnings only while it ran."""
    before = mujoco.get_mju_user_warning()
    assert step_response(30000.0, armature=0.0, timestep=0.02, integrator='Euler').diverged
    assert mujoco.get_mju_user_warning() is before
    m = mujoco.MjModel.from_xml_string(LINK_XML)
    m.actuator_gainprm[0, 0], m.actuator_biasprm[0, 1] = 1e9, -1e9
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    d.qpos[0] = 1.0
    capfd.readouterr()
    for _ in range(200):
        mujoco.mj_step(m, d)
    assert mj.warned(d)
    printed = capfd.readouterr()
    assert 'WARNING' in printed.out + printed.err


def test_captured_warnings_keeps_the_text_and_restores_a_custom_handler():
    seen = []
    mujoco.set_mju_user_warning(seen.append)
    try:
        m = _compiled('<position joint="j" kp="1e9"/>')
        d = mujoco.MjData(m)
        d.ctrl[0] = 1.0
        with mj.captured_warnings() as kept:
            del kept[:]
            for _ in range(200):
                mujoco.mj_step(m, d)
        assert kept and not seen  # kept inside the block, not handed to the reader's handler
        assert mujoco.get_mju_user_warning() is seen.append or mujoco.get_mju_user_warning() == seen.append
    finally:
        mujoco.set_mju_user_warning(None)


@pytest.mark.parametrize('q, v, warned, expected', [
    ([0.0, 0.1, -0.2], None, False, False),
    ([0.0, 0.1, -0.2], None, True, True),  # MuJoCo reset the run: the record looks fine, the warning says no
    ([0.0, math.nan], None, False, True),
    ([0.0, 21 * math.pi], None, False, True),
    (None, [0.0, 999.0], False, False),
    (None, [0.0, 1001.0], False, True),  # a free joint is judged by its speed
    (None, [0.0, math.inf], False, True),
    ([40 * math.pi], [1.0], False, True),
])
def test_one_divergence_rule(q, v, warned, expected):
    assert mj.diverged(q, v=v, warned=warned) is expected


def test_set_position_servo_writes_what_mujoco_compiles_for_position():
    """A <motor> edited by set_position_servo has the fields MuJoCo compiles for <position kp kv forcerange>."""
    want = _compiled('<position joint="j" kp="300" kv="4" forcerange="-2.5 2.5"/>')
    got = _compiled('<motor joint="j"/>')
    mj.set_position_servo(got, 300.0, 4.0, 2.5)
    for field in ('actuator_gaintype', 'actuator_biastype', 'actuator_forcelimited', 'actuator_forcerange'):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    np.testing.assert_array_equal(got.actuator_gainprm[:, :3], want.actuator_gainprm[:, :3])
    np.testing.assert_array_equal(got.actuator_biasprm[:, :3], want.actuator_biasprm[:, :3])
    mj.set_position_servo(got, 300.0, 4.0, None)
    assert got.actuator_forcelimited[0] == 0


def test_set_armature_recomputes_the_constants_mujoco_compiles():
    want = _compiled('<position joint="j" kp="10"/>', joint='armature="0.05" frictionloss="0.1"')
    got = _compiled('<position joint="j" kp="10"/>', joint='frictionloss="0.1"')
    mj.set_armature(got, 0.05)
    assert got.dof_armature[0] == want.dof_armature[0]
    np.testing.assert_allclose(got.dof_invweight0, want.dof_invweight0, rtol=1e-12)
    assert got.dof_invweight0[0] != _compiled('<position joint="j" kp="10"/>').dof_invweight0[0]


def test_captures_open_on_two_threads_restore_the_handler_whichever_closes_first():
    """A live panel's worker thread and a slider's rerun capture at once; their blocks close in either order, and
    the handler that was there before comes back only when both have closed."""
    before = mujoco.get_mju_user_warning()
    inner_open, outer_closed = threading.Event(), threading.Event()
    seen_by_worker = []

    def worker():
        with mj.captured_warnings():
            inner_open.set()
            outer_closed.wait(5)
            seen_by_worker.append(mujoco.get_mju_user_warning())  # after the other block closed
    thread = threading.Thread(target=worker)
    with mj.captured_warnings():
        thread.start()
        inner_open.wait(5)
    outer_closed.set()  # the block opened first closed first
    thread.join(5)
    assert not thread.is_alive()
    assert seen_by_worker and seen_by_worker[0] is not before  # still captured while one block is open
    assert mujoco.get_mju_user_warning() is before


@pytest.mark.parametrize('name, setup', [
    ('BADCTRL', lambda m, d: d.ctrl.__setitem__(0, math.nan)),  # MuJoCo zeroes every control of that step
    ('BADCTRL', lambda m, d: d.ctrl.__setitem__(0, 1e308)),
    ('BADQVEL', lambda m, d: d.qvel.__setitem__(0, 1e308)),  # MuJoCo resets the run to its start
    ('BADQPOS', lambda m, d: d.qpos.__setitem__(0, math.inf)),
    ('BADQACC', lambda m, d: m.actuator_gainprm.__setitem__((0, 0), 1e308) or d.ctrl.__setitem__(0, 1.0)),
])
def test_every_warning_after_which_mujoco_resets_or_zeroes_a_run_counts_as_divergence(name, setup):
    """The record of such a run looks finite and calm afterwards, so MuJoCo's counter is the only witness."""
    m = _compiled('<general joint="j" gaintype="fixed" biastype="affine" gainprm="10" biasprm="0 -10 0"/>')
    d = mujoco.MjData(m)
    setup(m, d)
    with mj.captured_warnings():
        mujoco.mj_step(m, d)
    assert d.warning[getattr(mujoco.mjtWarning, f'mjWARN_{name}')].number > 0
    assert np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))  # nothing in the state gives it away
    assert mj.warned(d) and mj.diverged(d.qpos, warned=mj.warned(d))
    clean = mujoco.MjData(m)
    mujoco.mj_step(m, clean)
    assert not mj.warned(clean)


def test_a_batch_reports_each_simulation_that_blew_up():
    import mujoco.batch
    m = _compiled('<general joint="j" gaintype="fixed" biastype="affine" gainprm="10" biasprm="0 -10 0"/>')
    batch = mujoco.batch.Batch(m, 3, nthread=1)
    batch.reset()
    control = np.zeros((3, 5, 1))
    control[1, 2, 0] = math.nan  # a bad control in run 1 only
    batch.qvel[2, 0] = 1e308  # a bad start speed in run 2
    with mj.captured_warnings():
        batch.rollout(5, control=control, record=('qpos',))
    assert mj.warned(batch).tolist() == [False, True, True]


# --- Ctrl-C around MuJoCo's rollouts ---------------------------------------------------------------------------------

@pytest.fixture
def python_handles_sigint():
    """SIGINT handled by Python (``KeyboardInterrupt``), as in a terminal, for the test; the handler before it after.
    A process started in the background by a shell without job control (a CI runner's ``cmd &``) begins with SIGINT
    ignored, where deferred_interrupt rightly does nothing."""
    import signal
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_inside_the_block_is_held_and_raised_once_the_block_ends(python_handles_sigint):
    import os
    import signal
    before = signal.getsignal(signal.SIGINT)
    ran_on = False
    with pytest.raises(KeyboardInterrupt):
        with mj.deferred_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # bytecode runs: Python's handler has had its chance to raise, and did not
                pass
            ran_on = True
    assert ran_on and signal.getsignal(signal.SIGINT) is before
    with mj.deferred_interrupt():  # no signal: nothing raised
        pass
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_during_a_rollout_lets_the_rollout_finish_and_then_stops(python_handles_sigint):
    """An interrupt inside a MuJoCo rollout was lost in 3 of 6 runs of fit-servo (it carried on and exited 0); here it
    arrives while the C++ rollout runs, which returns whole, and is raised the moment it has."""
    import os
    import signal
    m = mujoco.MjModel.from_xml_string(LINK_XML)
    batch = mujoco.batch.Batch(m, 8, nthread=1)
    batch.reset()
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            mj.rollout(batch, 400_000, record=('qpos',))
    finally:
        timer.cancel()
    np.testing.assert_allclose(batch.bind('time'), 400_000 * m.opt.timestep)  # every step of every simulation ran


def test_a_rollout_off_the_main_thread_runs_as_it_is():
    m = mujoco.MjModel.from_xml_string(LINK_XML)
    batch = mujoco.batch.Batch(m, 2, nthread=1)
    batch.reset()
    got = []
    worker = threading.Thread(target=lambda: got.append(mj.rollout(batch, 10, record=('qpos',))['qpos'].shape))
    worker.start()
    worker.join()
    assert got == [(2, 10, 1)]
