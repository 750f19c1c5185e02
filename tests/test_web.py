"""physai.interface.web: chapter 1's live panel, MuJoCo in the reader's browser.

The fast tests check the Python side (the block, its configuration, the precomputed discrete runs) and the JavaScript
port of physai's figures (book/_static/physai-live-core.js) against Python on the same trajectories, in Node. The
slow ones open the panel in headless Chromium from a local http server (WebAssembly and ES modules need http):
the engine loads from the site alone; the page's trajectories equal Python MuJoCo's; every control changes the plot;
the address keeps the setting; the twin stays with JavaScript or WebAssembly off.
"""

import functools
import json
import math
import pathlib
import re
import sys

import mujoco
import numpy as np
import pytest

from physai.engine.link import _base_model, step_responses
from physai.experiments.position_actuators import STABILITY_ARMATURE, STABILITY_KP, panel_servo, unstable
from physai.interface import web
from physai.interface.plots import readout
from physai.laws.stability import critical_h_omega
from browser import ROOT, STATIC, drawn, node, open_page, scratch_site, serve, set_control, wait_live

SETTINGS = [(kp, armature, h, integrator, 1.0) for kp in (100.0, 3000.0, 30000.0) for armature in (0.028, 0.0)
            for h in (0.0005, 0.005, 0.02) for integrator in ('Euler', 'implicitfast', 'RK4')]
"""The agreement set: kp 100, 3000, 30000; armature 0.028 and 0; timesteps 0.5, 5, 20 ms; three integrators."""

TRAJECTORY_RTOL = 1e-9
"""Relative: how far the page's angles may be from Python MuJoCo's at any step, until MuJoCo resets a diverged run.
The two are the same C code built for different machines, so they need not share the last bit (on this machine
they do, but for RK4 runs that diverge: 3.3.8 orders RK4's sums otherwise, and the growth magnifies it)."""


@functools.cache
def live_block() -> str:
    """Chapter 1's live block with its defaults (made once per session: its precomputed runs take a while)."""
    return web.servo_live().data


def block_config(block: str) -> dict:
    """The configuration a live block carries."""
    return json.loads(block.split('class="physai-live-config">', 1)[1].rsplit('</script>', 1)[0]
                      .replace('<\\/', '</'))


@functools.cache
def config() -> dict:
    return block_config(live_block())


# ---------------------------------------------------------------------------------------------------------------
# The Python side


def test_block_is_hidden_and_carries_its_configuration():
    block = live_block()
    assert block.startswith('<div class="physai-live" id="physai-live-servo" data-physai-live="servo"')
    assert ' hidden>' in block.split('<script', 1)[0]  # nothing shows without the page's script
    data = block.split('class="physai-live-config">', 1)[1].rsplit('</script>', 1)[0]
    assert '</' not in data.replace('<\\/', '')
    cfg = json.loads(data.replace('<\\/', '</'))
    assert cfg['twin'] == 'physai-twin-servo'
    assert cfg['defaults'] == {'kp': 100.0, 'armature': 0.028, 'timestep': 0.005, 'integrator': 'implicitfast',
                               'dampratio': 1.0}
    assert cfg['xml'] == web.browser_xml()
    assert 'discrete' in cfg['integrators'] and 'discrete' not in cfg['browserIntegrators']


def test_browser_xml_compiles_to_the_model_physai_simulates():
    m = mujoco.MjModel.from_xml_string(web.browser_xml())
    base = _base_model()
    for field in ('body_inertia', 'body_ipos', 'body_iquat', 'body_mass', 'dof_armature', 'actuator_gainprm',
                  'actuator_biasprm', 'opt.gravity'):
        owner, name = field.split('.') if '.' in field else ('', field)
        a, b = (getattr(getattr(x, owner), name) if owner else getattr(x, name) for x in (m, base))
        assert np.array_equal(a, b), field


def test_critical_h_omega_is_physai_s_for_every_choice():
    cfg = config()
    for integrator in web.PANEL_INTEGRATORS:
        for z in web.DAMPRATIOS:
            star = critical_h_omega(integrator, z)
            stored = cfg['criticalHOmega'][integrator][format(z, 'g')]
            assert (stored is None) if math.isinf(star) else stored == pytest.approx(star, rel=1e-7)


def test_discrete_runs_are_physai_s_on_their_grid_for_every_damping():
    d = config()['discrete']
    nh, na, nk = len(web.DISCRETE_TIMESTEP), len(web.DISCRETE_ARMATURE), len(web.DISCRETE_KP)
    assert len(d['runs']) == len(web.DAMPRATIOS) * nh * na * nk
    for iz, z in enumerate(web.DAMPRATIOS):
        h, a, k = web.DISCRETE_TIMESTEP[2], web.DISCRETE_ARMATURE[2], web.DISCRETE_KP[7]  # 5 ms, 0.028, 3000
        run = d['runs'][((iz * nh + 2) * na + 2) * nk + 7]
        r = step_responses([panel_servo(k, a, h, 'discrete', z)])[0]
        assert run['readout'] == readout(r)
        low, high = (web.unpack(x, d['traceStep']) for x in run['trace'])
        assert min(x for x in low if x is not None) == pytest.approx(np.degrees(r.q).min(), abs=0.051)
        assert max(x for x in high if x is not None) == pytest.approx(np.degrees(r.q).max(), abs=0.051)
        assert d['stability'][iz][2] == web.stability_reference(h, 'discrete', z).astype(int).tolist()


def test_packed_traces_read_back_to_their_step():
    rng = np.random.default_rng(3)
    values = [None if x < 0.05 else float(v) for x, v in zip(rng.uniform(size=500),
                                                             rng.normal(scale=50.0, size=500) ** 3)]
    for step in (0.01, 0.1):
        back = web.unpack(web.pack(values, step), step)
        assert [x is None for x in back] == [x is None for x in values]
        assert max(abs(a - b) for a, b in zip(values, back) if a is not None) <= step / 2 * (1 + 1e-9)
    assert web.pack([0.0] * 40, 0.1) == '0' * 40  # a settled trace: one character a bin


def test_block_size_stays_small():
    """The block is part of the chapter's first view: its compressed size is what a reader pays for it."""
    import gzip
    block = live_block().encode()
    print(f'chapter 1 live block: {len(block) / 1e3:.0f} kB, {len(gzip.compress(block)) / 1e3:.0f} kB compressed')
    assert len(gzip.compress(block)) < 50_000


def test_envelope_keeps_a_swing_that_flips_every_step():
    t = 0.005 * np.arange(601)
    q = 60.0 * (-1.0) ** np.arange(601)  # ±60° every step, what a 10 ms sampling shows as a flat line
    low, high = web.envelope(t, q, 3.0, bins=80)
    assert set(low) == {-60.0} and set(high) == {60.0}
    low, high = web.envelope(t[:50], q[:50], 3.0, bins=80)  # a run that ended early leaves its later bins empty
    assert low[-1] is None and high[0] == 60.0


@pytest.mark.parametrize('kwargs, name', [({'kp': 0.5}, 'kp'), ({'kp': float('nan')}, 'kp'),
                                          ({'armature': 0.2}, 'armature'), ({'timestep': 0.05}, 'timestep'),
                                          ({'integrator': 'euler'}, 'integrator'), ({'dampratio': 0.7}, 'dampratio'),
                                          ({'q0': 0.0}, 'q0'), ({'duration': 0.2}, 'duration'),
                                          ({'twin': 'a b'}, 'twin')])
def test_bad_settings_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        web.servo_config(**kwargs)


def _layout(x):
    """The shape of a configuration: its keys, nested, and the layout of a list's first item."""
    if isinstance(x, dict):
        return {k: _layout(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_layout(x[0])] if x else []
    return type(x).__name__ if isinstance(x, (str, bool)) or x is None else 'number'


def test_stored_live_blocks_have_the_current_layout():
    """The chapters store their live blocks as executed, and the page's script reads only the layout web.py writes
    now: a chapter stored before a change of that layout must be executed again (this names it)."""
    current = {'servo': config(), 'pendulum': web.pendulum_config()}
    for path in sorted((ROOT / 'notebooks').glob('*.ipynb')):
        for cell in json.loads(path.read_text(encoding='utf-8'))['cells']:
            for out in cell.get('outputs', []):
                block = ''.join(out.get('data', {}).get('text/html', ''))
                kind = re.search(r'<div class="physai-live"[^>]*data-physai-live="([^"]+)"', block)
                if kind is None or kind.group(1) not in current:
                    continue
                stored = block_config(block)
                assert _layout(stored) == _layout(current[kind.group(1)]), (
                    f'{path.name} stores an older {kind.group(1)} block: execute it again')
                assert 'data-twin=' in block.split('<script', 1)[0], f'{path.name}: execute it again'


# ---------------------------------------------------------------------------------------------------------------
# The JavaScript port of physai's figures, in Node, on Python's trajectories

PORT_SCRIPT = """
import * as core from '%s';
import fs from 'fs';
const runs = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = runs.map((r) => {
  const s = core.summarize(r.h, Float64Array.from(r.q), r.warned);
  return {sag: s.sagDeg, rise: s.riseMs, p2p: s.p2pDeg, diverged: s.diverged, readout: core.readout(s),
          unstable: core.unstable(s, -0.5), window: s.riseWindow};
});
process.stdout.write(JSON.stringify(out, (k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v)));
"""


def test_js_figures_equal_python_s_on_the_same_trajectories():
    settings = SETTINGS + [(kp, 0.028, 0.005, 'implicitfast', z) for kp in (1.0, 30.0, 300.0)
                           for z in (0.0, 0.5, 2.0)] + [(1.0, 0.1, 0.005, 'Euler', 1.0)]
    params = [panel_servo(*s) for s in settings]
    responses = step_responses(params)
    # also short runs (the stability map's 300 steps) and runs cut before the settle window
    short = step_responses(params[:18], duration=300 * 0.005)
    runs = [{'h': r.params.timestep, 'q': r.q.tolist(), 'warned': bool(r.diverged and np.all(np.isfinite(r.q))
                                                                         and np.all(np.abs(r.q) < 20 * math.pi))}
            for r in responses + short]
    js = node(PORT_SCRIPT % (STATIC / 'physai-live-core.js').as_uri(), runs)
    f = lambda x: None if not math.isfinite(x) else x  # noqa: E731
    kinds = set()
    for r, j in zip(responses + short, js):
        assert j['readout'] == readout(r)
        assert (j['sag'], j['rise'], j['p2p'], j['diverged']) == (f(r.sag_deg), f(r.rise_ms), f(r.p2p_deg),
                                                                  r.diverged)
        assert j['unstable'] == unstable(r, -0.5)
        assert j['window'] == [f(x) for x in r.rise_window]
        kinds.add(j['readout'].split()[0])
    assert kinds == {'sag', 'never', 'diverged'}  # every kind of readout was compared


def test_js_formats_numbers_as_python_does():
    values = [127.3, 0.1686, 1.3e-5, 5.0, 99.95, 1234567.0, 0.0, -0.004, 0.05]
    script = (f"import * as core from '{(STATIC / 'physai-live-core.js').as_uri()}';"
              f"const v = {json.dumps(values)};"
              "console.log(JSON.stringify(v.map((x) => [core.pyFormat(x, '.2g'), core.pyFormat(x, '.3f'),"
              " core.pyFormat(x, '.4g')])));")
    out = node(script)
    assert out == [[format(x, '.2g'), format(x, '.3f'), format(x, '.4g')] for x in values]


def test_js_unpacks_what_python_packs():
    values = [-28.65, -0.01, None, 0.3, 512.0, -1e4, None, 7.77, 7.77]
    packed = web.pack(values, 0.1)
    script = (f"import * as core from '{(STATIC / 'physai-live-core.js').as_uri()}';"
              f"console.log(JSON.stringify(core.unpack({json.dumps(packed)}, 0.1)));")
    assert node(script) == web.unpack(packed, 0.1)


# ---------------------------------------------------------------------------------------------------------------
# In the browser


@functools.cache
def servo_blocks() -> str:
    """Chapter 1's static twin and its live block (HTML), as the chapter's cells write them (made once per
    session)."""
    from physai.interface.position_actuators_panels import servo_twin
    return servo_twin().data + live_block()


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """A page with chapter 1's twin and live block, served: its base URL."""
    with serve(scratch_site(tmp_path_factory.mktemp('web'), servo_blocks())) as url:
        yield url


def open_live(browser, url, *, start=True):
    """Open the page; unless the address starts it, click "Run MuJoCo live"; wait for the panel. Returns
    (page, requests, errors)."""
    page, requests, errors = open_page(browser, url)
    if start:
        if 'servo-' not in url:
            page.click('.physai-live-offer button')
        wait_live(page, 'servo')
    return page, requests, errors


def step_path(page) -> str:
    """The drawn step response: the SVG's content without its clip path's random id."""
    return drawn(page, '#physai-live-servo svg.pl-step')


def wait_map(page):
    page.wait_for_function('() => { const p = window.physaiLive.servo; return p.mapDone && p.curveRows; }',
                           timeout=120000)


@pytest.mark.slow
def test_engine_loads_from_the_site_only_when_touched(site, browser):
    page, requests, errors = open_live(browser, site + '/', start=False)
    page.wait_for_selector('.physai-live-offer[data-state=offered]')
    assert not any('mujoco_wasm' in r for r in requests), 'the first view fetched the engine'
    assert page.is_visible('#physai-twin-servo') and not page.is_visible('#physai-live-servo')
    page.click('#physai-twin-servo-kp')  # touching the twin starts MuJoCo
    wait_live(page, 'servo')
    version = page.evaluate('() => window.physaiLive.servo.version')
    print(f'browser engine: MuJoCo {version} (mujoco-js 0.0.7); Python: MuJoCo {mujoco.__version__}')
    assert version == '3.3.8'
    assert any(r.endswith('/_static/mujoco/mujoco_wasm.js') for r in requests)
    assert all(r.startswith(site) for r in requests), [r for r in requests if not r.startswith(site)]
    assert not page.is_visible('#physai-twin-servo') and page.is_visible('#physai-live-servo-panel')
    assert errors == []


@pytest.mark.slow
def test_page_trajectories_equal_python_mujoco(site, browser):
    page, _, errors = open_live(browser, site + '/')
    js = page.evaluate("""async (settings) => {
        const core = await import('./_static/physai-live-core.js');
        const panel = window.physaiLive.servo;
        return settings.map(([kp, armature, timestep, integrator, dampratio]) => {
          const r = core.stepResponse(panel.link, core.servoParams({kp, armature, timestep, integrator, dampratio},
                                                                   panel.config.linkInertia));
          return {q: Array.from(r.q), readout: core.readout(r), diverged: r.diverged};
        });
    }""", [list(s) for s in SETTINGS])
    ref = web.step_reference(SETTINGS)
    identical, worst_rel = 0, 0.0
    for s, j, p in zip(SETTINGS, js, ref):
        assert j['readout'] == p['readout'], s
        assert j['diverged'] == p['diverged'], s
        q_js, q_py = np.array(j['q'], dtype=float), np.array(p['q'])
        if len(q_js) == len(q_py) and np.array_equal(q_js, q_py):
            identical += 1
            continue
        n = min(len(q_js), len(q_py))
        reset = next((i for i in range(1, n) if q_py[i] != 0 and abs(q_py[i]) < abs(q_py[i - 1]) / 1e3), n)
        rel = np.max(np.abs(q_js[:reset] - q_py[:reset]) / np.maximum(np.abs(q_py[:reset]), 1e-300))
        worst_rel = max(worst_rel, float(rel))
        assert rel <= TRAJECTORY_RTOL, s
    print(f'{identical}/{len(SETTINGS)} trajectories bit-identical to Python MuJoCo {mujoco.__version__}, the rest '
          f'within {worst_rel:.1e} relative (before MuJoCo resets a diverged run); readout words equal in all '
          f'{len(SETTINGS)}')
    assert errors == []


@pytest.mark.slow
def test_stability_map_fills_in_and_equals_python_s(site, browser):
    page, _, errors = open_live(browser, site + '/?servo-h=5&servo-integrator=Euler&servo-zeta=1')
    wait_map(page)
    cells = page.evaluate('() => window.physaiLive.servo.mapCells')
    expected = web.stability_reference(0.005, 'Euler')
    assert np.array_equal(np.array(cells, dtype=bool), expected)
    assert expected.any() and not expected.all()
    rows = page.evaluate('() => window.physaiLive.servo.curveRows.length')
    assert rows == 25 and len(STABILITY_KP) * len(STABILITY_ARMATURE) == expected.size
    assert errors == []


@pytest.mark.slow
def test_every_control_changes_the_plot_and_reset_restores_it(site, browser):
    page, _, errors = open_live(browser, site + '/')
    first = step_path(page)
    changes = [('kp', 700), ('armature', 0.05), ('dampratio', 0.5), ('timestep', 15.0), ('integrator', 'Euler'),
               ('integrator', 'discrete'), ('dampratio', 0), ('dampratio', 2)]  # discrete: precomputed per damping
    for name, value in changes:
        before = step_path(page)
        set_control(page, 'servo', name, value)
        after = step_path(page)
        assert after != before, f'{name} = {value} did not change the step response'
    assert 'precomputed' in page.inner_text('#physai-live-servo-panel')
    page.click('#physai-live-servo-panel button:text("reset")')
    assert step_path(page) == first
    assert errors == []


@pytest.mark.slow
def test_address_round_trips_the_setting(site, browser):
    page, _, _ = open_live(browser, site + '/')
    for name, value in [('kp', 512), ('armature', 0.0125), ('timestep', 2.5), ('integrator', 'RK4'),
                        ('dampratio', 2)]:
        set_control(page, 'servo', name, value)
    values = page.evaluate('() => window.physaiLive.servo.values')
    page.wait_for_function("() => location.search.includes('servo-zeta=2')")  # written just after the last move
    url = page.url
    assert 'servo-integrator=RK4' in url and 'servo-h=2.5' in url
    page.click('#physai-live-servo-panel button:text("present")')
    assert 'servo-present=1' in page.url
    url, path = page.url, step_path(page)
    page.close()
    other, _, errors = open_live(browser, url)
    assert other.evaluate('() => window.physaiLive.servo.values') == values
    assert other.eval_on_selector('#physai-live-servo-panel', 'p => p.classList.contains("physai-live-present")')
    assert step_path(other) == path
    assert errors == []


@pytest.mark.slow
def test_twin_stays_with_javascript_or_webassembly_off(site, browser):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(site + '/')
    assert page.is_visible('#physai-twin-servo') and not page.is_visible('#physai-live-servo')
    context.close()
    page, requests, errors = open_page(browser, site + '/?servo-kp=3000', webassembly=False)
    page.wait_for_selector('.physai-live-offer[data-state=no-wasm]')
    assert 'WebAssembly' in page.inner_text('.physai-live-offer')
    assert page.is_visible('#physai-twin-servo') and not page.is_visible('#physai-live-servo')
    assert not any('mujoco_wasm' in r for r in requests)
    assert errors == []


if __name__ == '__main__':  # build the scratch page into a directory to look at: python tests/test_web.py DIR
    scratch_site(pathlib.Path(sys.argv[1]), servo_blocks())
