"""physai.interface.web_arm: chapters 3 and 4's page panels, the SO-101 simulated in the reader's browser.

The fast tests check the Python side (the arm's MJCF, the engine blocks) and, in Node, the page's JavaScript against
the Python it mirrors: the tick pattern, the growth per tick, the hold's summary and its words on Python's own
trajectories, the chatter tone, the reference move, a replay's figures and words; and MuJoCo 3.14.0's WebAssembly
build compiling the arm and running holds and replays against Python MuJoCo 3.17.0. The slow ones open the panels in
headless Chromium from a local http server.

What "agree" means here. In Python MuJoCo 3.17.0 the browser's MJCF gives trajectories bit-identical to physai's
(:func:`test_arm_xml_gives_physai_s_trajectories_in_python`). MuJoCo 3.14.0 in the browser compiles it to the same
fields; its runs part from Python's in the last bits (the arm's friction loss is a constraint, solved to a
tolerance, and the builds differ), which the friction's stick and slip can magnify while the arm moves. A hold that
settles agrees within :data:`MOVE_TOL_RAD` throughout and :data:`HOLD_TOL_RAD` at its end; a hold that chatters is a
chaotic limit cycle (physai reports it as an ensemble), so there the verdict agrees and its size within
:data:`CHATTER_RATIO`; a run that diverges diverges in both.
"""

import dataclasses
import functools
import math

import mujoco
import numpy as np
import pytest

from physai.engine import so101
from physai.engine.hold import HoldParams, chatter_frequency, hold_responses, reference
from physai.engine.arm_replay import ReplayConfig, replay
from physai.experiments.servo_sysid import hold_sag_deg
from physai.experiments.where_pd_runs import growth_curve, worst_growth
from physai.interface import servo_sysid_panels, web, web_arm, where_pd_runs_panels
from physai.interface.where_pd_runs_panels import PANEL_RATES_HZ, pd_note
from physai.laws.loop import tick_pattern
from browser import drawn, engine_url, go_live, module, node, open_page, scratch_site, serve, set_control, wait_live

MOVE_TOL_RAD = 1e-6
"""rad: the largest difference between a settling hold in MuJoCo 3.14.0 and in 3.17.0, at any step (measured: 3e-12
rad at most; MuJoCo 3.3.8, the browser's engine before, parted by 0.015 rad)."""

HOLD_TOL_RAD = 1e-9
"""rad: the same at the end of the hold."""

CHATTER_RATIO = 1.5
"""A chattering hold's peak-to-peak over the last second in the browser is within this factor of Python's (one draw
of a chaotic limit cycle each)."""

GROWTH_RTOL = 1e-12
"""The page's growth per tick against physai's: the same 2×2 maps, eigenvalues in closed form instead of LAPACK."""

REFERENCE_TOL = 3e-14
"""The move's command: numpy's x**3 .. x**5 and JavaScript's may differ in the last bits of the polynomial's terms."""

BASE = dict(kp=998.22, kv=2.731, armature=0.028, timestep=0.001, integrator='implicitfast')
SETTINGS = [dict(BASE, rate_hz=50.0, backend='in-loop'),                                   # chatters
            dict(BASE, rate_hz=200.0, backend='in-loop'),                                  # settles
            dict(BASE, rate_hz=400.0, backend='in-step', integrator='Euler', timestep=0.002),
            dict(BASE, rate_hz=50.0, backend='in-step', integrator='implicit', timestep=0.005),
            dict(BASE, rate_hz=200.0, backend='in-step', integrator='discrete', timestep=0.005),
            dict(BASE, rate_hz=200.0, backend='in-step', integrator='Euler', timestep=0.02, kp=30000.0, armature=0.0),
            dict(BASE, rate_hz=1000.0, backend='in-step', integrator='RK4', timestep=0.005, kp=10000.0, kv=0.0,
                 armature=0.0)]                                                            # diverges
"""The agreement set: both backends, every integrator, 1 to 20 ms, runs that settle, chatter and diverge."""


@functools.cache
def pd_constants() -> dict:
    return where_pd_runs_panels.pd_constants()


def python_holds(settings) -> list[dict]:
    """Python MuJoCo's holds for settings named as the panel names them: the joints every step, the worst joint,
    peak-to-peak, whether it diverged, the growth per tick at the rate, the widget's note."""
    params = [HoldParams(**s) for s in settings]
    out = []
    for s, r in zip(settings, hold_responses(params, nthread=1)):
        growth = worst_growth(**s)
        out.append({'q': r.q, 'worst': r.worst, 'diverged': r.diverged, 'p2p': r.p2p_rad, 'growth': growth,
                    'note': pd_note(r, growth, rate_hz=s['rate_hz'], backend=s['backend'])})
    return out


def verdict(note: str) -> str:
    """'quiet', 'chatters', 'still moving' or 'diverged' from a note."""
    return 'diverged' if 'diverged' in note else note.split('\n')[1].split(',')[0]


def compare_holds(settings, js_runs) -> list[str]:
    """Assert the page's runs agree with Python's (see the module docstring); return one line per run."""
    lines = []
    for s, j, p in zip(settings, js_runs, python_holds(settings)):
        name = f"{s['backend']} {s['rate_hz']:g} Hz {s['integrator']} {s['timestep'] * 1e3:g} ms kp {s['kp']:g}"
        assert verdict(j['note']) == verdict(p['note']), (name, j['note'], p['note'])
        assert j['growth'] == pytest.approx(p['growth'], rel=GROWTH_RTOL), name
        q_js = np.array(j['q'], dtype=float).reshape(-1, 6)
        state = verdict(p['note'])
        assert j['note'].split(':')[0] == p['note'].split(':')[0], name  # where the PD runs, how often
        if state == 'quiet':  # (its p2p, a few 1e-12 rad of round-off, is not a figure two builds share)
            assert q_js.shape == p['q'].shape, name
            same = np.array_equal(q_js, p['q'])
            worst = float(np.max(np.abs(q_js - p['q'])))
            end = float(np.max(np.abs(q_js[-1] - p['q'][-1])))
            assert worst <= MOVE_TOL_RAD and end <= HOLD_TOL_RAD, (name, worst, end)
            lines.append(f'{name}: settles in both, ' + ('bit for bit' if same else
                                                         f'|dq| <= {worst:.1e} rad, {end:.1e} rad at the end'))
        elif state == 'chatters':
            ratio = j['p2p'][j['worst']] / p['p2p'][p['worst']]
            assert 1 / CHATTER_RATIO <= ratio <= CHATTER_RATIO, (name, ratio)
            lines.append(f'{name}: chatters in both, p2p ratio {ratio:.2f}')
        else:
            lines.append(f'{name}: diverges in both')
    return lines


# ---------------------------------------------------------------------------------------------------------------
# The Python side


def test_arm_xml_compiles_to_the_mesh_free_arm_without_geoms():
    m = mujoco.MjModel.from_xml_string(web_arm.arm_xml())
    base = so101.load_mesh_free(collision_meshes=False)
    for field in ('body_pos', 'body_quat', 'body_ipos', 'body_iquat', 'body_mass', 'body_inertia', 'jnt_pos',
                  'jnt_axis', 'jnt_range', 'dof_armature', 'dof_damping', 'dof_frictionloss', 'dof_invweight0',
                  'actuator_gainprm', 'actuator_biasprm', 'actuator_forcerange', 'actuator_ctrlrange',
                  'opt.timestep', 'opt.integrator', 'opt.impratio', 'opt.cone', 'opt.solver', 'opt.tolerance'):
        obj, name = (m.opt, base.opt) if field.startswith('opt.') else (m, base), field.removeprefix('opt.')
        assert np.array_equal(getattr(obj[0], name), getattr(obj[1], name)), field
    assert m.ngeom == 0 and base.ngeom > 0
    assert '<mesh' not in web_arm.arm_xml() and ' input=' not in web_arm.arm_xml()  # 3.14.0 refuses input=


def test_arm_xml_gives_physai_s_trajectories_in_python(monkeypatch):
    """The same MuJoCo (3.17.0) on the browser's text and on physai's model: physai's own hold runner, bit for bit,
    on the agreement set (both backends, every integrator, holds that settle, chatter and diverge): the collision
    geoms, left out of the text, touch nothing."""
    from physai.engine import hold

    params = [HoldParams(**s) for s in SETTINGS]
    caches = (hold.shared_hold_model, hold._servo_pool, hold._thread_batch)

    def runs():
        for cache in caches:
            cache.cache_clear()
        return hold_responses(params, nthread=1)

    want = runs()
    bare = mujoco.MjModel.from_xml_string(web_arm.arm_xml())
    monkeypatch.setattr(hold, 'so101_base', lambda: bare)
    try:
        got = runs()
    finally:
        monkeypatch.undo()
        for cache in caches:
            cache.cache_clear()
    for p, a, b in zip(params, want, got):
        assert np.array_equal(a.q, b.q, equal_nan=True), p


def test_engine_blocks_carry_the_arm_and_the_episode():
    pd = web.block_data(web_arm.pd_live().data)
    assert pd['xml'] == web_arm.arm_xml() and pd['engine']['version'] == web.ENGINE.version
    episode, _ = held_out()
    block = web_arm.sysid_live(episode).data
    assert block.startswith('<div class="physai-live" data-panel="sysid" hidden>')
    data = web.block_data(block)
    assert len(data['episode']['u']) == 6 * episode.nframe and len(data['episode']['start']) == 6
    with pytest.raises(TypeError, match='episode must be a physai.engine.datasets.Episode'):
        web_arm.sysid_live(None)


# ---------------------------------------------------------------------------------------------------------------
# The page's JavaScript against the Python it mirrors, in Node


def test_tick_pattern_is_physai_s():
    """laws.js finds Fraction.limit_denominator(50)'s fraction by trying every denominator: the same patterns. A rate
    above the physics rate ticks at every step there, as growth_curve draws it (tick_pattern refuses such a rate)."""
    rates = [10.0, 37.0, 50.0, 129.0, 333.3, 400.0, 999.0, 1000.0, 1234.5] + list(PANEL_RATES_HZ)
    timesteps = [0.0005, 0.001, 0.0013, 0.002, 0.0047, 0.005, 0.01, 0.02, 1 / 360]
    grid = [(r, h) for r in rates for h in timesteps]
    js = node(f"import {{tickPattern}} from '{module('laws.js')}'; import fs from 'fs';"
              "const g = JSON.parse(fs.readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(g.map(([r, h]) => tickPattern(r, h))));", grid)
    assert js == [list(tick_pattern(min(r, 1 / h), h)) for r, h in grid]


GROWTH_SCRIPT = """
import fs from 'fs';
import {{growthCurve}} from '{laws}';
const {{settings, k}} = JSON.parse(fs.readFileSync(0, 'utf8'));
console.log(JSON.stringify(settings.map((s) => growthCurve(k.rates, {{...s, inertia: k.inertia, damping: k.damping}})
  .map((x) => (Number.isFinite(x) ? x : null)))));
"""


def test_growth_curves_are_physai_s():
    settings = [dict(BASE, backend=b, integrator=i, timestep=h, kp=kp, kv=kv, armature=a)
                for b in ('in-loop', 'in-step') for i in ('Euler', 'RK4', 'implicit', 'implicitfast', 'discrete')
                for h, kp, kv, a in ((0.001, 998.22, 2.731, 0.028), (0.005, 30000.0, 0.0, 0.0),
                                     (0.02, 3.0, 10.0, 0.1))]
    js = node(GROWTH_SCRIPT.format(laws=module('laws.js')), {'settings': settings, 'k': pd_constants()})
    finite = 0
    for s, curve in zip(settings, js):
        ref = growth_curve(PANEL_RATES_HZ, **s)
        got = np.array([math.inf if x is None else float(x) for x in curve])
        assert np.array_equal(np.isinf(got), np.isinf(ref)), s
        ok = np.isfinite(ref)
        assert got[ok] == pytest.approx(ref[ok], rel=GROWTH_RTOL), s
        finite += ok.sum()
    assert finite > 1000


SUMMARY_SCRIPT = """
import fs from 'fs';
import {{format}} from '{spec}';
import {{summarizeHold}} from '{laws}';
import PdPanel from '{chapter}';
const {{runs, hold, words}} = JSON.parse(fs.readFileSync(0, 'utf8'));
console.log(JSON.stringify(runs.map((r) => {{
  const run = {{q: Float64Array.from(r.q), target: Float64Array.from(r.target), h: r.timestep, steps: r.q.length / 6}};
  const s = summarizeHold(run, hold, r.diverged);
  const panel = {{say: (word, values) => format(words[word], values), values: r}};
  return {{note: PdPanel.prototype.words.call(panel, s, r.growth), worst: s.worst, state: s.state, turns: s.turns,
          bad: s.state === 'diverged' || s.chatters}};
}})));
"""


def test_js_hold_summary_and_words_equal_python_s_on_the_same_trajectories():
    """The page's summary of a hold (worst joint, peak-to-peak, turns, offset, chatter tone, state) and its note, in
    the description's words, on Python's own trajectories: quiet, chattering, still moving (a soft servo drifting far
    from its pose: kp 1 and 13) and diverged."""
    settings = [dict(BASE, rate_hz=r, backend=b, integrator=i, timestep=h)
                for r, b in ((50.0, 'in-loop'), (100.0, 'in-loop'), (129.0, 'in-loop'), (400.0, 'in-loop'),
                             (50.0, 'in-step')) for i, h in (('implicitfast', 0.001), ('Euler', 0.005))]
    settings += [dict(BASE, rate_hz=50.0, backend='in-loop', kp=kp) for kp in (1.0, 13.0)]  # drift, not chatter
    settings.append(SETTINGS[-1])  # diverges
    responses = hold_responses([HoldParams(**s) for s in settings], nthread=1)
    python = python_holds(settings)
    runs = [dict(s, q=np.nan_to_num(r.q, nan=1e300).ravel().tolist(), target=r.target.ravel().tolist(),
                 diverged=r.diverged, growth=p['growth']) for s, r, p in zip(settings, responses, python)]
    js = node(SUMMARY_SCRIPT.format(spec=module('spec.js'), laws=module('laws.js'),
                                    chapter=module('where_pd_runs_panels.js')),
              {'runs': runs, 'hold': pd_constants()['hold'], 'words': where_pd_runs_panels.pd_spec().words})
    kinds = set()
    for s, j, p, r in zip(settings, js, python, responses):
        assert j['note'] == p['note'], s
        assert j['worst'] == r.worst or r.diverged
        assert j['state'] == r.state and j['bad'] == where_pd_runs_panels.pd_bad(r), s
        assert r.diverged or j['turns'] == r.turns.tolist(), s
        kinds.add(verdict(p['note']))
    assert kinds == {'quiet', 'chatters', 'still moving', 'diverged'}


def test_chatter_frequency_is_physai_s():
    t = 0.001 * np.arange(1, 1001)
    rng = np.random.default_rng(3)
    signals = [np.sin(2 * np.pi * 7 * t), np.sin(2 * np.pi * 123 * t) + 0.1 * rng.standard_normal(t.size),
               rng.standard_normal(t.size), 0.3 * t, np.sin(2 * np.pi * 2 * t)]
    js = node(f"import {{chatterFrequency}} from '{module('laws.js')}'; import fs from 'fs';"
              "const x = JSON.parse(fs.readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(x.map((s) => chatterFrequency(0.001, Float64Array.from(s)))));",
              [s.tolist() for s in signals])
    assert js == [chatter_frequency(t, s) for s in signals]
    assert js[0] == 7.0 and js[2] is None


def test_reference_move_is_numpy_s_within_round_off():
    js = node(f"import {{reference}} from '{module('laws.js')}';"
              "const t = Float64Array.from({length: 600}, (_, k) => 0.001 * k);"
              "const r = reference(t, [0, -1, 1, 0.5, 0, 0], 0.5);"
              "console.log(JSON.stringify([Array.from(r.position), Array.from(r.velocity)]));")
    position, velocity = reference(0.001 * np.arange(600))
    for got, want in ((np.array(js[0]).reshape(-1, 6), position), (np.array(js[1]).reshape(-1, 6), velocity)):
        assert np.all(np.abs(got - want) <= REFERENCE_TOL)


HOLD_SCRIPT = """
import fs from 'fs';
import {{Model, diverged, load}} from '{engine}';
import {{format}} from '{spec}';
import {{growthCurve, summarizeHold}} from '{laws}';
import {{holdRun, runToEnd}} from '{runs}';
import PdPanel from '{chapter}';
const {{settings, xml, rule, k, words, fields}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const mujoco = await load('{url}');
const model = new Model(mujoco, xml, rule);
const compiled = Object.fromEntries(fields.map((f) => [f, Array.from(model.model[f])]));
const t0 = performance.now();
const out = settings.map((s) => {{
  const run = runToEnd(holdRun(model, {{...s, rateHz: s.rate_hz, forcerange: k.hold.forcerange}}, k.hold));
  const q = run.q.subarray(0, 6 * run.steps);
  const sum = summarizeHold(run, k.hold, diverged({{q, warned: run.warned}}, rule));
  const growth = growthCurve([s.rate_hz], {{...s, inertia: k.inertia, damping: k.damping}})[0];
  const panel = {{say: (word, values) => format(words[word], values), values: s}};
  return {{q: Array.from(q, (x) => (Number.isFinite(x) ? x : 1e300)), worst: sum.worst, p2p: sum.p2p, growth,
          note: PdPanel.prototype.words.call(panel, sum, growth)}};
}});
console.log(JSON.stringify({{version: mujoco.mj_versionString(), compiled, out, ms: performance.now() - t0}}));
"""

COMPILED_FIELDS = ('body_pos', 'body_quat', 'body_ipos', 'body_iquat', 'body_mass', 'body_inertia', 'jnt_pos',
                   'jnt_axis', 'jnt_range', 'dof_armature', 'dof_damping', 'dof_frictionloss', 'dof_invweight0',
                   'dof_M0', 'body_invweight0', 'actuator_gainprm', 'actuator_biasprm', 'actuator_forcerange',
                   'actuator_acc0', 'jnt_solref', 'jnt_solimp', 'dof_solref', 'dof_solimp', 'qpos0')
"""The compiled fields MuJoCo 3.14.0 must give from :func:`web_arm.arm_xml` as Python MuJoCo does."""


@pytest.mark.slow
def test_node_mujoco_compiles_the_arm_as_python_does_and_its_holds_agree():
    js = node(HOLD_SCRIPT.format(engine=module('engine.js'), spec=module('spec.js'), laws=module('laws.js'),
                                 runs=module('runs.js'), chapter=module('where_pd_runs_panels.js'), url=engine_url()),
              {'settings': SETTINGS, 'xml': web_arm.arm_xml(), 'rule': web.engine_rule(), 'k': pd_constants(),
               'words': where_pd_runs_panels.pd_spec().words, 'fields': list(COMPILED_FIELDS)}, timeout=900)
    assert js['version'] == web.ENGINE.version
    m = mujoco.MjModel.from_xml_string(web_arm.arm_xml())
    for field in COMPILED_FIELDS:
        assert np.array_equal(np.array(js['compiled'][field], dtype=float), np.ravel(getattr(m, field))), field
    print(f'\nchapter 3, MuJoCo {js["version"]} (Node) against Python MuJoCo {mujoco.__version__}: all '
          f'{len(COMPILED_FIELDS)} compiled fields identical; {len(SETTINGS)} holds in {js["ms"]:.0f} ms')
    for line in compare_holds(SETTINGS, js['out']):
        print(line)


# ---------------------------------------------------------------------------------------------------------------
# Chapter 4: a recorded episode replayed


REPLAY_SIM_TOL_DEG = 1e-6
"""deg: the largest difference between a replay in the browser's MuJoCo 3.14.0 and in Python's 3.17.0 at any frame
(measured: 4e-16° with the published fit at 5 ms, 6e-11° for a replay that chatters at kp 1e5; MuJoCo 3.3.8 parted
from 3.17.0 by 0.34° where the friction loss sticks and slips)."""

REPLAY_MAE_TOL_DEG = 1e-6
"""deg: the same for the replay's mean absolute error against the recording."""


@functools.cache
def held_out():
    from physai.engine import arm_replay
    from physai.experiments import servo_sysid
    data, _ = servo_sysid.find_dataset(None, download=False)
    return servo_sysid.split(data)[1][0], arm_replay.PUBLISHED_FIT


@functools.cache
def sysid_constants() -> dict:
    episode, base = held_out()
    return servo_sysid_panels.sysid_constants(episode, base, servo_sysid_panels.PANEL_JOINTS)


def python_replay(servo: dict) -> dict:
    """Python MuJoCo's replay of the held-out episode for a servo named as the panel names it."""
    episode, _ = held_out()
    from physai.engine.arm_replay import ArmServo
    fields = ('kp', 'kv', 'forcerange', 'damping', 'frictionloss', 'armature')
    rep = replay([ArmServo(**{f: servo[f] for f in fields})], [episode],
                 config=ReplayConfig(timestep=servo['timestep'], integrator=servo['integrator']), nthread=1)[0][0]
    sag, real_sag = hold_sag_deg(rep)
    return {'simDeg': rep.sim_deg, 'mae': rep.mae_deg, 'status': servo_sysid_panels.replay_status(rep), 'sag': sag,
            'sagReal': real_sag}


def replay_settings() -> list[dict]:
    """A stable replay (the published fit at 5 ms, implicitfast) and one that chatters (kp 1e5 at 20 ms, Euler, no
    armature). The chattering one is a stiff servo not past chaos: on the held-out episode in LeRobot's degrees, kp
    30000 chatters chaotically (a 1e-12 rad nudge of the start moves it by degrees, so two engines part as far), while
    at kp 1e5 the same nudge moves it by 3e-7 deg, and the engines' last-bit differences far less."""
    _, base = held_out()
    servo = dataclasses.asdict(base)
    return [dict(servo, timestep=0.005, integrator='implicitfast'),
            dict(servo, kp=1e5, armature=0.0, timestep=0.02, integrator='Euler')]


REPLAY_WORDS_SCRIPT = """
import fs from 'fs';
import {{format}} from '{spec}';
import {{summarizeReplay}} from '{laws}';
import SysidPanel from '{chapter}';
const {{runs, k, words}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const panel = {{say: (word, values) => format(words[word], values), constants: k,
               verdict: SysidPanel.prototype.verdict}};
console.log(JSON.stringify(runs.map((r) => {{
  const s = summarizeReplay({{q: Float64Array.from(r.q), frames: k.episode.nframe}}, k.episode, r.diverged, k);
  return {{words: SysidPanel.prototype.words.call(panel, s), sag: s.sag, sagReal: s.sagReal, mae: s.mae}};
}}), (key, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)));
"""


def test_js_replay_figures_and_words_equal_python_s_on_the_same_replays():
    """The page's figures of a replay (MAE, chatter, sag in held poses) and its words on Python's own simulated
    joints."""
    episode, base = held_out()
    servos = [base, dataclasses.replace(base, kp=30000.0, armature=0.0), dataclasses.replace(base, kp=3.0),
              dataclasses.replace(base, kp=1.0, kv=0.1)]
    configs = [ReplayConfig(), ReplayConfig(timestep=0.02, integrator='Euler'), ReplayConfig(), ReplayConfig()]
    runs, python = [], []
    for servo, config in zip(servos, configs):
        rep = replay([servo], [episode], config=config, nthread=1)[0][0]
        q = np.zeros((episode.nframe, 6))
        q[:, :5] = np.radians(rep.sim_deg)  # the gripper's column is not read
        runs.append({'q': q.ravel().tolist(), 'diverged': rep.diverged})
        python.append((servo_sysid_panels.replay_status(rep), *hold_sag_deg(rep), rep.mae_deg))
    js = node(REPLAY_WORDS_SCRIPT.format(spec=module('spec.js'), laws=module('laws.js'),
                                         chapter=module('servo_sysid_panels.js')),
              {'runs': runs, 'k': sysid_constants(), 'words': servo_sysid_panels.sysid_spec(*held_out()).words})
    for j, (words, sag, real_sag, mae) in zip(js, python):
        assert j['words'] == words
        np.testing.assert_allclose(np.array(j['sag'], dtype=float), sag, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(np.array(j['sagReal'], dtype=float), real_sag, rtol=1e-9, atol=1e-12)
        assert j['mae'] == pytest.approx(mae, rel=1e-12)
    assert {j['words'].split(' ')[0] for j in js} == {'stable', 'chatters', 'far'}  # 'far off' at kp 1


REPLAY_SCRIPT = """
import fs from 'fs';
import {{Model, diverged, load}} from '{engine}';
import {{summarizeReplay}} from '{laws}';
import {{replayRun, runToEnd}} from '{runs}';
const {{servos, xml, rule, k, episode}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const mujoco = await load('{url}');
const model = new Model(mujoco, xml, rule);
const e = {{...k.episode, ...episode}};
console.log(JSON.stringify(servos.map((s) => {{
  const run = runToEnd(replayRun(model, s, e));
  const sum = summarizeReplay(run, e, diverged({{q: run.q.subarray(0, run.frames * 6), warned: run.warned}}, rule), k);
  return {{simDeg: Array.from(sum.simDeg, (x) => (Number.isFinite(x) ? x : null)), mae: sum.mae,
          chatters: sum.chatters, diverged: sum.diverged}};
}})));
"""


@pytest.mark.slow
def test_node_mujoco_replays_agree_with_python_mujoco():
    episode, _ = held_out()
    settings = replay_settings()
    live = web.block_data(web_arm.sysid_live(episode).data)
    js = node(REPLAY_SCRIPT.format(engine=module('engine.js'), laws=module('laws.js'), runs=module('runs.js'),
                                   url=engine_url()),
              {'servos': settings, 'xml': live['xml'], 'rule': live['engine'], 'k': sysid_constants(),
               'episode': live['episode']}, timeout=900)
    for s, j in zip(settings, js):
        p = python_replay(s)
        name = f"kp {s['kp']:g} {s['integrator']} {s['timestep'] * 1e3:g} ms"
        state = 'diverged' if j['diverged'] else 'chatters' if j['chatters'] else 'stable'
        assert state == p['status'].split(' ')[0], (name, state, p['status'])
        assert j['mae'] == pytest.approx(p['mae'], abs=REPLAY_MAE_TOL_DEG), name
        sim = np.array([math.nan if x is None else x for x in j['simDeg']], dtype=float).reshape(-1, 5)
        worst = float(np.max(np.abs(sim - p['simDeg'])))
        assert worst <= REPLAY_SIM_TOL_DEG, (name, worst)
        print(f"{name}: {state} in both, frames within {worst:.1e}°, MAE {j['mae']:.4f}° (Python {p['mae']:.4f}°)")


# ---------------------------------------------------------------------------------------------------------------
# In the browser


ARM_COLUMN_PX = 1200
"""CSS px: the scratch pages' column for the SO-101's panels."""


def pd_blocks() -> str:
    """Chapter 3's page panel: a first view of one rate (pd_twin's takes a minute of ensembles) and its engine
    block."""
    spec = where_pd_runs_panels.pd_spec()
    from physai.engine.hold import hold_ensembles
    ensembles = dict(zip(('in-loop', 'in-step'), hold_ensembles(
        [HoldParams(rate_hz=50.0, backend=b) for b in ('in-loop', 'in-step')], n=8)))
    parts = {'hold': web.Part(('rate_hz', 'backend'), lambda rate_hz, backend:
                              where_pd_runs_panels.hold_part(ensembles[backend]))}
    first = web.first_view(spec, 'where_pd_runs_panels.js', grid={'rate_hz': [50.0], 'backend': ['in-loop', 'in-step']},
                           parts=parts, constants=pd_constants(), fallback='')
    return first.data + web_arm.pd_live().data


def sysid_blocks() -> str:
    """Chapter 4's page panel: its first view at two kps (a stand-in for the chapter's grid) and its engine block."""
    episode, base = held_out()
    return (servo_sysid_panels.sysid_twin(episode, base, kps=(10.0, 1000.0)).data
            + web_arm.sysid_live(episode).data)


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """Chapter 3's and chapter 4's page panels, served: the base URL."""
    with serve(scratch_site(tmp_path_factory.mktemp('web_arm'), pd_blocks() + sysid_blocks(),
                            max_width=ARM_COLUMN_PX)) as url:
        yield url


def picture(page, key) -> str:
    return drawn(page, f'#physai-panel-{key} .pl-plots')


@pytest.mark.slow
def test_every_control_changes_the_plot_reset_restores_it_and_the_address_keeps_it(site, browser):
    page, requests, errors = open_page(browser, site + '/?pd-h=2')  # a 2 ms step: half the steps, same words
    wait_live(page, 'pd')
    assert 'in-loop at 50 Hz' in page.inner_text('#physai-panel-pd .pl-readout')
    for name, value in [('rate_hz', 700), ('backend', 'in-step'), ('kp', 300), ('kv', 8.0), ('armature', 0.0),
                        ('timestep', 5.0), ('integrator', 'Euler'), ('integrator', 'discrete')]:
        before = picture(page, 'pd')
        set_control(page, 'pd', name, value)
        wait_live(page, 'pd')
        assert picture(page, 'pd') != before, f'{name} = {value} did not change the plots'
    page.click('#physai-panel-pd button:text("reset")')
    wait_live(page, 'pd')
    page.wait_for_function("() => location.search.includes('pd-h=1&')")  # the chapter's 1 ms again
    page.click('#physai-panel-pd button:text("present")')
    assert 'pd-present=1' in page.url
    assert all(r.startswith(site) or r.startswith('blob:' + site) for r in requests)   # the engine's glue: a blob
    for name, value in [('kp', 700), ('forcerange', 1.0), ('integrator', 'RK4'), ('timestep', 10.0)]:
        before = picture(page, 'sysid')
        set_control(page, 'sysid', name, value)
        wait_live(page, 'sysid')
        assert picture(page, 'sysid') != before, f'{name} = {value} did not change the sysid plots'
    assert errors == []


@pytest.mark.slow
@pytest.mark.parametrize('key', ['pd', 'sysid'])
def test_trace_text_stays_readable_on_a_phone(site, browser, key):
    """At 390 px the wide trace plot is drawn at the width the phone gives it (one unit a CSS px), so its text stays
    at least 10 px."""
    page, _, errors = open_page(browser, site + '/', viewport=(390, 844))
    go_live(page, key)
    sizes = page.evaluate("""(key) => Array.from(document.querySelectorAll(`#physai-panel-${key} svg.pl-wide text`))
        .filter((t) => t.textContent.trim() && t.getBoundingClientRect().width > 0)
        .map((t) => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getBoundingClientRect().width
                    / t.ownerSVGElement.viewBox.baseVal.width)""", key)
    assert sizes and min(sizes) >= 10.0, min(sizes)  # the book's minimum
    assert errors == []
