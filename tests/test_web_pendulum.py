"""Chapter 2's page panel: the pendulum under each actuator model, MuJoCo in the reader's browser.

The fast tests check, in Node, the page's JavaScript against the Python it mirrors: the drive laws of
physai.laws.drives on a grid (bit for bit), the controls-to-actuator mapping and the torque axes' steps of
physai.interface.actuator_models_panels, and the readout words on Python's own runs. A slow Node test runs MuJoCo's
WebAssembly build on a grid of settings against Python MuJoCo. The slow browser tests open one scratch page (chapter
1's and chapter 2's panels) in headless Chromium: every control changes the plot, reset restores it and the address
round-trips the setting; the first view stays with WebAssembly off; every panel's text is at least 10 px at 1280 px.
"""

import json
import math

import mujoco
import numpy as np
import pytest

from physai.engine.pendulum import PENDULUM_XML, TIMESTEP
from physai.interface import actuator_models_panels as models_panels
from physai.interface import web
from physai.interface.plots import MIN_TEXT_PX
from physai.laws import drives
from browser import drawn, engine_url, go_live, module, node, open_page, scratch_site, serve, set_control, wait_built, wait_live
from test_web import servo_blocks

PENDULUM_ATOL = 1e-9
"""rad: how far the browser's angle may be from Python MuJoCo 3.17.0's at any step. The two agree bit for bit on
most steps; where they do not, the difference starts in the last bit of qd (the WebAssembly build has its own libm,
whose sin and cos of the joint angle may round otherwise than glibc's). Over the panel's 3 s the worst seen is
1e-13 rad."""


def _setting(**changes) -> dict:
    return {**models_panels.actuator_spec().defaults, **changes}


AGREEMENT = [_setting(model=model, kp=kp, kv=kv, armature=armature, timestep=h, integrator=integrator, forcerange=e)
             for model in drives.MODELS
             for kp, kv in ((100.0, 5.0), (3000.0, 1.0))
             for h, integrator in ((TIMESTEP, 'implicitfast'), (0.02, 'Euler'), (0.001, 'RK4'), (0.005, 'implicit'),
                                   (TIMESTEP, 'discrete'))
             for e, armature in ((6.0, 0.0), (100.0, 0.05))]
"""The Node agreement grid: every model, a damped and a swinging gain pair, every integrator, with the effort
limit and no armature, without it and with armature (100 runs)."""


def _plain(x):
    """A float as JSON carries it exactly (inf and NaN as strings)."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def _js_actuator(a) -> dict:
    kind = {drives.RemotizedPD: 'remotized PD', drives.DelayedPD: 'delayed PD', drives.DCMotor: 'DC motor',
            drives.IdealPD: 'ideal PD', drives.ImplicitPD: 'implicit'}[type(a)]
    out = {'kind': kind, 'kp': a.kp, 'kv': a.kv, 'forcerange': _plain(a.forcerange), 'explicit': a.explicit}
    if kind == 'DC motor':
        out.update(saturationEffort=a.saturation_effort, velocityLimit=a.velocity_limit)
    if kind == 'remotized PD':
        out['table'] = [list(row) for row in a.table]
    return out


LAWS_SCRIPT = """
import fs from 'fs';
import {{forceLimits, remotizedLimit, torqueLaw}} from '{laws}';
const num = (x) => (typeof x === 'string' ? Number(x.replace('inf', 'Infinity').replace('nan', 'NaN')) : x);
const out = (x) => (Number.isFinite(x) ? x : String(x).replace('Infinity', 'inf').replace('NaN', 'nan'));
const {{points, actuators}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const result = {{limits: [], remotized: [], laws: []}};
for (const a of actuators) {{
  const act = {{...a, forcerange: num(a.forcerange)}};
  const law = torqueLaw(act);
  result.laws.push(points.map(([q, v, qT]) => out(law(q, v, qT))));
  result.limits.push(points.map(([q, v]) => forceLimits(act, q, v).map(out)));
  if (a.kind === 'remotized PD') result.remotized.push(points.map(([q]) => out(remotizedLimit(num(q), a.table))));
}}
console.log(JSON.stringify(result));
"""


def test_js_drive_laws_equal_python_s_bit_for_bit_on_a_grid():
    """Every model's clipped law and its limits (dc_motor_envelope, remotized_limit as np.interp), in laws.js, give
    Python's doubles exactly, inside and outside every limit."""
    rng = np.random.default_rng(7)
    qs = np.concatenate([[-1.0, 0.0, math.pi / 4, math.pi / 2, 2.0, 3.5], rng.uniform(-4, 4, 20)])
    points = [(float(q), float(v), float(qt)) for q, v, qt in zip(qs, rng.uniform(-60, 60, len(qs)),
                                                                  rng.uniform(-2, 2, len(qs)))]
    points += [(0.3, v, 1.0) for v in (-40.0, -24.0, -8.0, 0.0, 8.0, 16.0, 24.0, 40.0)]
    table = ((0.0, 6.0), (math.pi / 2, 3.0))
    actuators = [drives.IdealPD(kp=400.0, kv=20.0, forcerange=6.0), drives.IdealPD(kp=400.0, kv=20.0),
                 drives.ImplicitPD(kp=100.0, kv=5.0, forcerange=2.0),
                 drives.DCMotor(kp=400.0, kv=20.0, forcerange=6.0, saturation_effort=12.0, velocity_limit=8.0),
                 drives.DCMotor(kp=50.0, kv=1.0, forcerange=20.0, saturation_effort=12.0, velocity_limit=3.0),
                 drives.DelayedPD(kp=400.0, kv=20.0, forcerange=6.0, delay=12),
                 drives.RemotizedPD(kp=400.0, kv=20.0, table=table, delay=12),
                 drives.RemotizedPD(kp=80.0, kv=2.0, table=((-1.0, 1.0), (0.0, 1.0), (1.0, 5.0), (2.0, 0.5)))]
    js = node(LAWS_SCRIPT.format(laws=module('laws.js')), {'points': points,
                                                            'actuators': [_js_actuator(a) for a in actuators]})
    q, v, qt = (np.array(x) for x in zip(*points))
    for a, got_law, got_limits in zip(actuators, js['laws'], js['limits']):
        assert got_law == [_plain(a.torque(qi, vi, ti)) for qi, vi, ti in zip(q, v, qt)], type(a).__name__
        if isinstance(a, drives.ImplicitPD):  # MuJoCo's own clamp of a <position>: ±forcerange
            low, high = -a.forcerange, a.forcerange
        else:
            low, high = a.limits(q, v)
        low, high = np.broadcast_to(low, q.shape), np.broadcast_to(high, q.shape)
        assert got_limits == [[_plain(x), _plain(y)] for x, y in zip(low, high)], type(a).__name__
    remotized = [a for a in actuators if isinstance(a, drives.RemotizedPD)]
    for a, got in zip(remotized, js['remotized']):
        assert got == [_plain(x) for x in drives.remotized_limit(q, a.table)]
    clipped = sum(abs(float(a.torque(qi, vi, ti))) < abs(float(drives.pd_torque(ti, qi, 0.0, vi, a.kp, a.kv)))
                  for a in actuators for qi, vi, ti in zip(q, v, qt))
    assert clipped > 50  # the grid reaches into every clamp, not only the linear part


def test_js_panel_actuator_and_torque_axes_are_python_s():
    """The controls the page's panel describes, as an actuator, and its torque axes' half-range: the mirrors of
    panel_actuator and panel_torque_top, every model, effort limits below, at and above the 'none' position."""
    constants = models_panels.pendulum_constants()
    cases = [dict(model=m, kp=400.0, kv=20.0, forcerange=e, velocity_limit=8.0, delay=12)
             for m in drives.MODELS for e in (0.5, 3.0, 6.0, 99.5, 100.0)]
    script = f"""
import fs from 'fs';
import {{panelActuator, panelTorqueTop}} from '{module('actuator_models_panels.js')}';
const {{cases, constants}} = JSON.parse(fs.readFileSync(0, 'utf8'));
console.log(JSON.stringify(cases.map((c) => {{
  const a = panelActuator(c, constants), e = a.kind === 'remotized PD' ? a.table[0][1] : a.forcerange;
  return [a.kind, a.explicit, a.forcerange === Infinity ? 'inf' : a.forcerange, a.delay, panelTorqueTop(e, constants)];
}})));
"""
    js = node(script, {'cases': cases, 'constants': constants})
    for c, got in zip(cases, js):
        a = models_panels.panel_actuator(c['model'], c['kp'], c['kv'], c['forcerange'], c['velocity_limit'], c['delay'])
        e = a.table[0][1] if isinstance(a, drives.RemotizedPD) else a.forcerange
        assert got == [c['model'], a.explicit, _plain(a.forcerange), getattr(a, 'delay', 0),
                       models_panels.panel_torque_top(e)], c


WORDS_SCRIPT = """
import fs from 'fs';
import {{format}} from '{spec}';
import PendulumPanel, {{panelVerdict}} from '{chapter}';
const {{runs, words, constants}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const panel = {{say: (word, values) => format(words[word], values), constants}};
console.log(JSON.stringify(runs.map((r) => {{
  const run = {{t: Float64Array.from(r.t), q: Float64Array.from(r.q), v: Float64Array.from(r.v),
               command: Float64Array.from(r.command), diverged: r.diverged}};
  return [PendulumPanel.prototype.words.call(panel, run), panelVerdict(run, constants)];
}})));
"""


def test_js_readout_equals_python_s_on_python_s_runs():
    """The page's words and verdict (stepMetrics in laws.js, the chapter's words) read Python's own runs as
    panel_readout and panel_verdict do: settled, still swinging, still creeping and diverged (the colour follows the
    verdict)."""
    settings = [_setting(), _setting(kp=3000.0, kv=1.0), _setting(model='remotized PD', armature=0.05),
                _setting(model='implicit', forcerange=2.0), _setting(model='DC motor', kp=30.0, kv=30.0),
                _setting(kp=30000.0, kv=0.1, forcerange=100.0, timestep=0.02, integrator='Euler'),
                _setting(model='delayed PD', delay=60, kp=400.0, kv=20.0), _setting(kp=2.0, kv=300.0)]
    runs = [models_panels.panel_run(**s) for s in settings]
    js = node(WORDS_SCRIPT.format(spec=module('spec.js'), chapter=module('actuator_models_panels.js')),
              {'runs': [{'t': r.t.tolist(), 'q': r.q.tolist(), 'v': r.v.tolist(), 'command': r.command.tolist(),
                         'diverged': r.diverged} for r, _ in runs],
               'words': models_panels.actuator_spec().words, 'constants': models_panels.pendulum_constants()})
    assert [words for words, _ in js] == [models_panels.panel_readout(run, metrics) for run, metrics in runs]
    assert [verdict for _, verdict in js] == [models_panels.panel_verdict(run, metrics) for run, metrics in runs]
    assert {' '.join(w.split()[:2]) for w, _ in js} >= {'settling error', 'still swinging:', 'still creeping:',
                                                       'diverged after'}


RUN_SCRIPT = """
import fs from 'fs';
import {{Model, load}} from '{engine}';
import {{pendulumRun}} from '{runs}';
import PendulumPanel, {{panelActuator}} from '{chapter}';
import {{format}} from '{spec}';
const {{settings, xml, rule, constants, words}} = JSON.parse(fs.readFileSync(0, 'utf8'));
const mujoco = await load('{url}');
const model = new Model(mujoco, xml, rule);
const panel = {{say: (word, values) => format(words[word], values), constants}};
console.log(JSON.stringify({{version: mujoco.mj_versionString(), runs: settings.map((s) => {{
  const run = pendulumRun(model, panelActuator(s, constants), s, {{duration: constants.duration, step: constants.step,
                                                                  controlRate: constants.controlRate}});
  return {{q: Array.from(run.q), diverged: run.diverged, readout: PendulumPanel.prototype.words.call(panel, run)}};
}})}}));
"""


def compare(settings: list[dict], js: list[dict]) -> tuple[int, float]:
    """Assert the page's runs equal Python MuJoCo's (readout words, divergence, the angle within PENDULUM_ATOL at
    every step); returns how many are bit-identical and the largest difference, rad."""
    identical, worst = 0, 0.0
    for s, j in zip(settings, js):
        run, metrics = models_panels.panel_run(**s)
        assert (j['readout'], j['diverged']) == (models_panels.panel_readout(run, metrics), run.diverged), s
        q_js = np.array(j['q'], dtype=float)
        assert len(q_js) == len(run.q), s
        gap = float(np.max(np.abs(q_js - run.q)))
        assert gap <= PENDULUM_ATOL, (s, gap)
        identical += bool(np.array_equal(q_js, run.q))
        worst = max(worst, gap)
    return identical, worst


@pytest.mark.slow
def test_mujoco_in_webassembly_runs_the_pendulum_as_python_mujoco_does():
    """MuJoCo 3.14.0 (the page's engine, here in Node) on physai's pendulum XML, with the page's runner, against
    Python MuJoCo 3.17.0: every model, integrator, armature and clamp of AGREEMENT; no patch (MuJoCo 3.3.8 needed
    one for a clamped <position> under the implicit integrators)."""
    out = node(RUN_SCRIPT.format(engine=module('engine.js'), runs=module('runs.js'), spec=module('spec.js'),
                                 chapter=module('actuator_models_panels.js'), url=engine_url()),
               {'settings': AGREEMENT, 'xml': PENDULUM_XML, 'rule': web.engine_rule(),
                'constants': models_panels.pendulum_constants(), 'words': models_panels.actuator_spec().words},
               timeout=600)
    identical, worst = compare(AGREEMENT, out['runs'])
    print(f'\nchapter 2, MuJoCo {out["version"]} (Node) against Python MuJoCo {mujoco.__version__}: '
          f'{identical} of {len(AGREEMENT)} pendulum runs bit-identical, the rest within {worst:.1e} rad; readout '
          f'words equal in all {len(AGREEMENT)}')
    assert out['version'] == web.ENGINE.version


# ---------------------------------------------------------------------------------------------------------------
# In the browser: one page, one browser


def pendulum_blocks() -> str:
    """Chapter 2's page panel: its first view and its engine block, as the chapter's cells write them."""
    return models_panels.forcerange_twin().data + web.pendulum_live().data


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """One page with chapter 1's and chapter 2's panels, served: its base URL."""
    with serve(scratch_site(tmp_path_factory.mktemp('web-pendulum'), servo_blocks() + pendulum_blocks())) as url:
        yield url


def plots(page) -> str:
    """The three drawn plots, without the clip paths' random ids."""
    return drawn(page, '#physai-panel-pendulum .pl-plots')


@pytest.mark.slow
def test_every_control_changes_the_plot_reset_restores_it_and_the_address_keeps_it(site, browser):
    page, requests, errors = open_page(browser, site + '/')
    go_live(page, 'pendulum')
    assert not any('where_pd_runs' in r or 'servo_sysid' in r for r in requests), 'another chapter\'s module loaded'
    first = plots(page)
    # (the kp and kv sliders take log positions 0 .. 1000; delay and V act on the models that use them; Euler and
    # implicitfast step an explicit model alike, since its <motor> has no velocity derivative, so RK4 here)
    changes = [('kp', 700), ('armature', 0.05), ('timestep', 10.0), ('integrator', 'RK4'), ('kv', 300),
               ('forcerange', 20), ('model', 'delayed PD'), ('delay', 40), ('model', 'DC motor'),
               ('velocity_limit', 2), ('model', 'remotized PD'), ('model', 'implicit'), ('integrator', 'discrete'),
               ('model', 'DC motor')]
    for name, value in changes:
        before = plots(page)
        set_control(page, 'pendulum', name, value)
        assert plots(page) != before, f'{name} = {value} did not change the plots'
    assert 'discrete' in page.inner_text('#physai-panel-pendulum .pl-status')  # run live
    page.click('#physai-panel-pendulum button:text("reset")')
    assert plots(page) == first
    for name, value in [('model', 'DC motor'), ('kp', 512), ('kv', 400), ('armature', 0.0125), ('timestep', 2.5),
                        ('integrator', 'RK4'), ('forcerange', 7.5), ('velocity_limit', 12), ('delay', 5)]:
        set_control(page, 'pendulum', name, value)
    values = page.evaluate('() => window.physaiPanels.pendulum.values')
    page.wait_for_function("() => location.search.includes('pendulum-delay=5')")
    page.click('#physai-panel-pendulum button:text("present")')
    assert 'pendulum-present=1' in page.url and 'pendulum-h=2.5' in page.url
    url, picture = page.url, plots(page)
    page.close()
    other, _, more = open_page(browser, url)
    wait_live(other, 'pendulum')
    assert other.evaluate('() => window.physaiPanels.pendulum.values') == values
    assert other.eval_on_selector('#physai-panel-pendulum', 'p => p.classList.contains("physai-panel-present")')
    assert plots(other) == picture
    assert errors == [] and more == []


@pytest.mark.slow
def test_first_view_stays_with_webassembly_off(site, browser):
    page, requests, errors = open_page(browser, site + '/?pendulum-kp=3000', webassembly=False)
    wait_built(page, 'pendulum')
    assert page.get_attribute('#physai-panel-pendulum', 'data-engine') == 'no-wasm'
    assert page.is_disabled('#physai-panel-pendulum-kp') and not page.is_disabled('#physai-panel-pendulum-forcerange')
    assert not any('mujoco' in r for r in requests)
    assert errors == []


SMALLEST_TEXT = """() => {
  const out = [];
  for (const panel of document.querySelectorAll('.physai-panel')) {
    for (const svg of panel.querySelectorAll('svg')) {
      if (svg.style.display === 'none') continue;
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      for (const t of svg.querySelectorAll('text')) {
        if (!t.textContent.trim() || t.getBoundingClientRect().width === 0) continue;
        out.push({panel: panel.id, text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * scale});
      }
    }
  }
  return out;
}"""
"""Every text of every page panel's visible plots, with its size as displayed (font size times the SVG's scale)."""


@pytest.mark.slow
def test_every_panel_s_text_is_at_least_10_px_at_1280(site, browser):
    """Every text of chapter 1's and chapter 2's panels, as displayed in the book's column at a 1280 px window, in
    the first view and live."""
    page, _, errors = open_page(browser, site + '/')
    wait_built(page, 'servo')
    wait_built(page, 'pendulum')
    for texts in (page.evaluate(SMALLEST_TEXT), None):
        if texts is None:
            go_live(page, 'servo')
            go_live(page, 'pendulum')
            page.wait_for_function('() => document.getElementById("physai-panel-servo").dataset.mapDone',
                                   timeout=120000)
            texts = page.evaluate(SMALLEST_TEXT)
        assert {t['panel'] for t in texts} >= {'physai-panel-servo', 'physai-panel-pendulum'}
        small = min(texts, key=lambda t: t['px'])
        print(f'smallest panel text at 1280 px: {small["px"]:.1f} px ({small["text"]!r} in {small["panel"]}), '
              f'{len(texts)} texts')
        assert small['px'] >= MIN_TEXT_PX, small
    assert errors == []


@pytest.mark.slow
def test_going_live_keeps_the_experiment_the_first_view_shows(site, browser):
    """The page opens on the effort-limit sweep's E = 2 N·m run, which swings; pressing Run MuJoCo live keeps every
    value and the verdict, and reset comes back to the same setting."""
    page, _, errors = open_page(browser, site + '/')
    wait_built(page, 'pendulum')
    before = page.evaluate('() => ({...window.physaiPanels.pendulum.values})')
    frame = json.loads(page.get_attribute('#physai-panel-pendulum', 'data-frame'))
    assert frame == before  # the first view was computed at the panel's own values
    first = page.inner_text('#physai-panel-pendulum .pl-readout')
    assert first.startswith('still swinging:')
    go_live(page, 'pendulum')
    assert page.evaluate('() => window.physaiPanels.pendulum.values') == before
    assert page.inner_text('#physai-panel-pendulum .pl-readout').startswith('still swinging:')
    set_control(page, 'pendulum', 'forcerange', 6)
    page.click('#physai-panel-pendulum button:text("reset")')
    assert page.evaluate('() => window.physaiPanels.pendulum.values') == before
    assert errors == []
