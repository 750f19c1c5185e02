"""physai.interface.web_firmware: chapter 6's page panel, the STS3215's settings run by MuJoCo in the browser.

The fast tests check the Python side (the blocks, the page's control set, the kp table against the law). In Node,
MuJoCo 3.14.0's WebAssembly build runs the page's step and segment (``book/_static/panels/firmware_runs.js``) at
settings that cover every page control, and its runs, readouts and verdicts are compared with Python MuJoCo 3.17.0's
(:func:`physai.interface.servo_firmware_panels.settings_runs`, ``readouts``, ``readout_lines``), within the tolerance
chapter 4's replays are held to (``tests/test_web_arm.py``: :data:`REPLAY_SIM_TOL_DEG`, :data:`REPLAY_MAE_TOL_DEG`).
"""

import dataclasses
import functools
import math

import numpy as np
import pytest

from physai.engine import arm_replay
from physai.engine.servo_models import JointModel
from physai.interface import servo_firmware_panels as sfp
from physai.interface import web, web_firmware
from physai.laws import sts3215
from browser import engine_url, module, node
from test_web_arm import REPLAY_MAE_TOL_DEG, REPLAY_SIM_TOL_DEG

LOAD = 0.9
"""N·m: the load of the sag readout in these tests."""

SETTINGS = [dict(p_register=16.0, supply_voltage=7.4, torque_limit=1000.0, goal_speed=0.0, timestep=0.005,
                 integrator='implicitfast'),                                   # LeRobot's follower, the panel's start
            dict(p_register=32.0, supply_voltage=12.0, torque_limit=500.0, goal_speed=500.0, timestep=0.002,
                 integrator='Euler'),
            dict(p_register=1.0, supply_voltage=5.0, torque_limit=100.0, goal_speed=50.0, timestep=0.02,
                 integrator='implicit'),                                       # cannot hold the load
            dict(p_register=64.0, supply_voltage=12.6, torque_limit=1000.0, goal_speed=4000.0, timestep=0.01,
                 integrator='RK4'),
            dict(p_register=64.0, supply_voltage=12.6, torque_limit=1000.0, goal_speed=0.0, timestep=0.02,
                 integrator='Euler')]                                          # a stiff servo at a coarse step
"""Every page control over its range, every integrator but discrete (which implicitfast's runs stand for)."""


@functools.cache
def held_out():
    from physai.experiments import servo_sysid
    data, _ = servo_sysid.find_dataset(None, download=False)
    return servo_sysid.split(data)[1][0]


@functools.cache
def spring() -> JointModel:
    """Chapter 4's published fit, different on every joint (so that a joint mixed up shows)."""
    base = JointModel.uniform(arm_replay.PUBLISHED_FIT)
    scale = (1.0, 1.1, 0.9, 1.2, 0.8, 1.0)
    return base.replace(kv=tuple(v * s for v, s in zip(base.kv, scale)),
                        damping=tuple(v * s for v, s in zip(base.damping, scale[::-1])),
                        frictionloss=tuple(v * s for v, s in zip(base.frictionloss, scale)),
                        armature=tuple(v * s for v, s in zip(base.armature, scale[::-1])))


def python_run(values: dict) -> dict:
    segment = sfp.segment_of(held_out())
    v = {**values, 'backlash_deg': 0.0}
    step, seg = sfp.settings_runs(spring(), segment, v)
    r = sfp.readouts(spring(), sfp.settings_of(v), LOAD, step, seg, segment.fps)
    return {'step': step.sim_deg, 'segment': seg.sim_deg, 'readouts': r, 'lines': sfp.readout_lines(r)}


def test_page_panel_has_the_kernel_s_controls_but_the_backlash_and_says_so():
    segment = sfp.segment_of(held_out())
    kernel, page = sfp.settings_spec(segment), web_firmware.page_spec(segment)
    assert [c.name for c in page.controls] == [c.name for c in kernel.controls if c.name != 'backlash_deg']
    assert 'backlash is left out' in page.note
    assert page.plots == kernel.plots and all(page.words[w] == t for w, t in kernel.words.items())


def test_constants_hold_the_law_s_kp_at_every_slider_position():
    segment = sfp.segment_of(held_out())
    k = web_firmware.settings_constants(spring(), segment, LOAD)
    assert k['voltages'][0] == 5.0 and k['voltages'][-1] == 12.6 and len(k['voltages']) == 77
    assert k['pRegisters'] == list(range(1, 65))
    for vi in (0, 24, 70, 76):
        v = k['voltages'][vi]
        assert k['forcerange'][vi] == sts3215.forcerange(v)
        for pi in (0, 15, 63):
            assert k['kp'][vi][pi] == sts3215.Settings(p_register=pi + 1, supply_voltage=v).kp


def test_blocks_carry_the_first_view_and_the_two_runs():
    episode = held_out()
    segment = sfp.segment_of(episode)
    twin = web.block_data(web_firmware.settings_twin(spring(), episode, LOAD, p_registers=(16,),
                                                     goal_speeds=(0,)).data)
    assert twin['module'] == 'servo_firmware_panels.js' and twin['spec']['key'] == 'firmware'
    stored = twin['firstView']['parts']['runs']['data'][0]
    p = python_run(SETTINGS[0])
    assert stored['lines'] == p['lines']
    j = sfp.ARM_JOINTS.index(sfp.STEP_JOINT)
    got = np.array(web.unpack(stored['segment'], web_firmware.STORED_STEP_DEG))
    assert np.max(np.abs(got - p['segment'][:, j])) <= web_firmware.STORED_STEP_DEG / 2 + 1e-9
    live = web.block_data(web_firmware.settings_live(episode).data)
    assert len(live['episodes']['segment']['u']) == 6 * segment.nframe
    assert len(live['episodes']['step']['u']) == 6 * sfp.STEP_FRAMES


RUN_SCRIPT = """
import fs from 'fs';
import {{Model, diverged, load}} from '{engine}';
import {{summarizeReplay}} from '{laws}';
import {{runToEnd}} from '{runs}';
import {{firmwareReadouts, firmwareRun, firmwareServo}} from '{firmware}';
import {{readoutLines}} from '{chapter}';
import {{format}} from '{spec}';
const {{settings, xml, rule, k, episodes, words}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const mujoco = await load('{url}');
const model = new Model(mujoco, xml, rule);
const sk = {{armIndex: k.armJoints.map((_, i) => i), chatterDeg: k.chatterDeg, ctrlLowDeg: [], ctrlHighDeg: []}};
const finite = (a) => Array.from(a, (x) => (Number.isFinite(x) ? x : null));
console.log(JSON.stringify(settings.map((v) => {{
  const servo = firmwareServo(v, k), out = {{}};
  for (const name of ['step', 'segment']) {{
    const e = {{...k[name], ...episodes[name]}};
    const run = runToEnd(firmwareRun(model, servo, k, e));
    const q = run.q.subarray(0, run.frames * 6);
    out[name] = summarizeReplay(run, e, diverged({{q, warned: run.warned}}, rule), sk);
  }}
  const r = firmwareReadouts(servo, out.step, out.segment, k);
  const lines = readoutLines({{...r, riseFraction: k.rise}}, (w, x) => format(words[w], x));
  return {{step: finite(out.step.simDeg), segment: finite(out.segment.simDeg), mae: out.segment.mae,
          chatter: out.segment.chatter, kp: r.kp, forcerange: r.forcerange,
          rise: Number.isFinite(r.rise) ? r.rise : null,
          verdict: r.verdict, lines}};
}})));
"""


@pytest.mark.slow
def test_node_mujoco_runs_agree_with_python_mujoco_and_the_verdicts_follow():
    episode = held_out()
    segment = sfp.segment_of(episode)
    live = web.block_data(web_firmware.settings_live(episode).data)
    k = web_firmware.settings_constants(spring(), segment, LOAD)
    js = node(RUN_SCRIPT.format(engine=module('engine.js'), laws=module('laws.js'), runs=module('runs.js'),
                                firmware=module('firmware_runs.js'), chapter=module('servo_firmware_panels.js'),
                                spec=module('spec.js'), url=engine_url()),
              {'settings': SETTINGS, 'xml': live['xml'], 'rule': live['engine'], 'k': k,
               'episodes': live['episodes'], 'words': web_firmware.page_spec(segment).words}, timeout=900)
    verdicts = set()
    for s, j in zip(SETTINGS, js):
        p = python_run(s)
        r = p['readouts']
        name = f"P {s['p_register']:g} {s['supply_voltage']:g} V speed {s['goal_speed']:g} {s['integrator']} " \
               f"{s['timestep'] * 1e3:g} ms"
        assert j['kp'] == r['kp'] and j['forcerange'] == r['forcerange'], name
        for run in ('step', 'segment'):
            sim = np.array([math.nan if x is None else x for x in j[run]], dtype=float).reshape(-1, 5)
            worst = float(np.max(np.abs(sim - p[run])))
            assert worst <= REPLAY_SIM_TOL_DEG, (name, run, worst)
        assert j['mae'] == pytest.approx(r['mae'], abs=REPLAY_MAE_TOL_DEG), name
        assert j['verdict'] == r['verdict'], name
        if math.isfinite(r['rise']):
            assert j['rise'] == pytest.approx(r['rise'], abs=1e-9), name
        else:
            assert j['rise'] is None, name
        assert j['lines'] == p['lines'], name
        verdicts.add(r['verdict'])
        print(f"{name}: {r['verdict']} in both, frames within {worst:.1e}°, MAE {j['mae']:.4f}° "
              f"(Python {r['mae']:.4f}°); {' · '.join(j['lines'])}")
    # the verdicts follow from the runs: the chatter line decides
    for s, j in zip(SETTINGS, js):
        if j['verdict'] in ('quiet', 'chatters'):
            assert (j['chatter'] > k['chatterDeg']) == (j['verdict'] == 'chatters')


# ---------------------------------------------------------------------------------------------------------------
# In the browser


def firmware_blocks() -> str:
    """Chapter 6's page panel: its first view at one P and two Goal_Speeds (a stand-in for the chapter's grid) and
    its engine block."""
    episode = held_out()
    return (web_firmware.settings_twin(spring(), episode, LOAD, p_registers=(16,), goal_speeds=(0, 500)).data
            + web_firmware.settings_live(episode).data)


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    from browser import scratch_site, serve
    with serve(scratch_site(tmp_path_factory.mktemp('web_firmware'), firmware_blocks(), max_width=1200)) as url:
        yield url


@pytest.mark.slow
def test_every_control_changes_the_plots_and_the_readout_follows(site, browser):
    from browser import drawn, open_page, set_control, wait_live
    page, requests, errors = open_page(browser, site + '/?firmware-speed=500')
    wait_live(page, 'firmware')
    readout = page.inner_text('#physai-panel-firmware .pl-readout')
    assert readout == ' · '.join(python_run({**SETTINGS[0], 'goal_speed': 500.0})['lines'])
    for name, value in [('p_register', 40), ('supply_voltage', 12.0), ('torque_limit', 200), ('goal_speed', 0),
                        ('timestep', 2.0), ('integrator', 'Euler')]:
        before = drawn(page, '#physai-panel-firmware .pl-plots')
        set_control(page, 'firmware', name, value)
        wait_live(page, 'firmware')
        assert drawn(page, '#physai-panel-firmware .pl-plots') != before, f'{name} = {value} did not change the plots'
    final = dict(p_register=40.0, supply_voltage=12.0, torque_limit=200.0, goal_speed=0.0, timestep=0.002,
                 integrator='Euler')
    assert page.inner_text('#physai-panel-firmware .pl-readout') == ' · '.join(python_run(final)['lines'])
    assert all(r.startswith(site) or r.startswith('blob:' + site) for r in requests)   # the engine's glue: a blob
    assert errors == []


VERDICT_SCRIPT = """
import fs from 'fs';
import {{firmwareReadouts, firmwareServo}} from '{firmware}';
import {{readoutLines}} from '{chapter}';
import {{format}} from '{spec}';
const {{cases, k, words, values}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const servo = firmwareServo(values, k);
const num = (x) => (x === null ? NaN : x);
console.log(JSON.stringify(cases.map((c) => {{
  const s = {{simDeg: c.simDeg.map(num), diverged: c.diverged, chatters: c.chatters, chatter: num(c.chatter),
             mae: num(c.mae)}};
  const r = firmwareReadouts(servo, s, s, k);
  return {{verdict: r.verdict, lines: readoutLines({{...r, riseFraction: k.rise}}, (w, x) => format(words[w], x))}};
}})));
"""


def test_js_verdicts_and_words_are_python_s_for_every_verdict():
    """The page's verdict and readout lines for runs that diverged, chatter, rattle not at all, or stay quiet (the
    Node runs above are all quiet): the same as the widget's on the same figures."""
    segment = sfp.segment_of(held_out())
    k = web_firmware.settings_constants(spring(), segment, LOAD)
    smooth = np.add.outer(np.linspace(0.0, sfp.STEP_DEG, sfp.STEP_FRAMES), np.zeros(5))
    cases = [dict(diverged=True, chatters=False, chatter=math.nan, mae=math.nan, sim=np.full((3, 5), np.nan)),
             dict(diverged=False, chatters=True, chatter=2.5, mae=4.0, sim=smooth),
             dict(diverged=False, chatters=False, chatter=0.0, mae=1.0, sim=smooth),
             dict(diverged=False, chatters=False, chatter=0.04, mae=1.5, sim=smooth)]
    python = []
    for c in cases:
        run = type('Run', (), dict(diverged=c['diverged'], chatters=c['chatters'], chatter_deg=c['chatter'],
                                   mae_deg=c['mae'], sim_deg=c['sim']))()
        r = sfp.readouts(spring(), sfp.settings_of({**SETTINGS[0], 'backlash_deg': 0.0}), LOAD, run, run, segment.fps)
        python.append((r['verdict'], sfp.readout_lines(r)))
    none = lambda a: [None if not math.isfinite(x) else float(x) for x in np.ravel(a)]  # noqa: E731
    js = node(VERDICT_SCRIPT.format(firmware=module('firmware_runs.js'), chapter=module('servo_firmware_panels.js'),
                                    spec=module('spec.js')),
              {'cases': [dict(diverged=c['diverged'], chatters=c['chatters'], simDeg=none(c['sim']),
                              chatter=none([c['chatter']])[0], mae=none([c['mae']])[0]) for c in cases],
               'k': k, 'words': web_firmware.page_spec(segment).words, 'values': SETTINGS[0]})
    assert [(j['verdict'], j['lines']) for j in js] == python
    assert [v for v, _ in python] == ['diverged', 'chatters', 'still', 'quiet']
