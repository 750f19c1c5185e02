"""Chapter 1's panel as a Jupyter widget (physai.interface.widget, a spike of issue 42): the page's own modules drawing
runs that Python MuJoCo makes at the controls' exact values.

The kernel half is tested without a front end (a request set on the widget as the front end sets it); the whole
widget in a local JupyterLab, opened in headless Chromium (skipped unless JupyterLab is installed: it is not in
requirements.txt yet).
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

pytest.importorskip('anywidget')

from physai.engine import link  # noqa: E402
from physai.experiments import servo_panel  # noqa: E402
from physai.experiments.servo_panel import (  # noqa: E402
    PANEL_FIRST_PART, servo_kp_curve, servo_stability, servo_step_start)
from physai.interface import position_actuators_panels as ch1  # noqa: E402
from physai.interface import web, widget  # noqa: E402
from physai.laws.checks import INTEGRATORS  # noqa: E402


@pytest.fixture(scope='module', autouse=True)
def bundle():
    """The widget's front end, built from the page's modules now (physai.book.widget_bundle: esbuild, 0.1 s)."""
    from physai.book import widget_bundle
    if not widget_bundle.ESBUILD.exists():
        pytest.skip('node_modules/.bin/esbuild is missing: run npm ci')
    assert widget_bundle.main([]) == 0
    return widget_bundle


OFF_GRID = {'kp': 123.4, 'armature': 0.0137, 'timestep': 0.0031, 'integrator': 'Euler', 'dampratio': 0.5}
"""A setting on none of the first view's grid values (kp, armature) and at a timestep the page never stores."""


def wait_reply(w, generation, complete=True, timeout=60.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = w.reply
        if r.get('generation') == generation and (r.get('complete') or not complete or 'error' in r):
            return r
        time.sleep(0.02)
    raise AssertionError(f'no reply to request {generation} in {timeout} s: {w.reply}')


def test_reply_is_mujocos_run_at_the_exact_values():
    """A control change reruns the physics at exactly its values: the reply's trace is MuJoCo's step response of that
    servo (physai.engine.link.step_response, not the nearest stored frame), to the packed trace's 0.1° resolution."""
    w = widget.servo_widget()
    w.request = {'generation': 1, 'values': OFF_GRID}
    reply = wait_reply(w, 1, complete=False)
    assert reply['values'] == OFF_GRID
    response = link.step_response(**OFF_GRID, q0=-0.5, duration=3.0)
    q = np.array(web.unpack(reply['frame']['step']['q'], ch1.TRACE_STEP_DEG), dtype=float)
    assert reply['frame']['step']['h'] == OFF_GRID['timestep']
    assert len(q) == len(response.q)
    assert np.nanmax(np.abs(q - np.clip(np.degrees(response.q), -50.0, 20.0))) <= ch1.TRACE_STEP_DEG / 2 + 1e-9
    assert reply['frame']['step']['readout'] == ch1.plots.readout(response)


def test_slow_parts_follow_in_a_second_reply():
    """The kp curve and the stability map (25 and 209 runs) come after the step response, from the worker, and are
    the page's parts at the reply's values."""
    w = widget.servo_widget()
    values = {**OFF_GRID, 'timestep': 0.0029}
    w.request = {'generation': 7, 'values': values}
    reply = wait_reply(w, 7)
    assert reply['complete']
    args = (values['timestep'], values['integrator'], values['dampratio'])
    assert reply['frame']['curve'] == ch1.curve_part(servo_kp_curve(values['armature'], *args, -0.5, 3.0))
    assert reply['frame']['map'] == ch1.map_part(servo_stability(*args, -0.5))


def test_a_long_run_answers_first_with_its_first_second_marked_partial_then_whole():
    """RK4 at 0.5 ms (four dynamics evaluations a step, 6000 steps) is past the panel's step budget: as the matplotlib
    panel, the first reply is the run's first second (servo_step_start, the same samples), its readout saying the
    rest is coming and no sag or rise claimed; the next reply is the whole run, with physai's verdict for it."""
    w = widget.servo_widget()
    replies = []
    w.observe(lambda change: replies.append(change['new']), names='reply')
    values = {**OFF_GRID, 'kp': 131.7, 'timestep': 0.0005, 'integrator': 'RK4'}
    w.request = {'generation': 3, 'values': values}
    wait_reply(w, 3)
    first, whole = replies[0]['frame']['step'], replies[-1]['frame']['step']
    assert not replies[0]['complete'] and replies[-1]['complete']
    start = servo_step_start(**values, q0=-0.5, duration=3.0)
    assert first == {**ch1.step_part(start, ylim=w.spec.plot('step').ylim), 'settled': False, 'bad': False,
                     'readout': w.spec.say('partial', t=PANEL_FIRST_PART, duration=3.0)}
    assert first['tEnd'] == PANEL_FIRST_PART and 'the rest is on its way' in first['readout']
    response = link.step_response(**values, q0=-0.5, duration=3.0)
    assert whole['tEnd'] == 3.0 and whole['readout'] == ch1.plots.readout(response)
    full = servo_panel.servo_step.__wrapped__(**values)
    np.testing.assert_array_equal(start.q, full.q[:len(start.q)])  # the first second is the whole run's, sample for sample
    assert replies[1]['frame']['step'] == whole   # the worker's first reply is the whole run (then curve, map)
    q = np.array(web.unpack(whole['q'], ch1.TRACE_STEP_DEG), dtype=float)
    assert np.nanmax(np.abs(q - np.clip(np.degrees(response.q), -50.0, 20.0))) <= ch1.TRACE_STEP_DEG / 2 + 1e-9


def test_the_worker_lets_the_first_reply_go_before_the_slow_parts(monkeypatch):
    """In a kernel, the worker computes a slow part only once ipykernel's IOPub thread has sent the first reply (it
    asks the thread to run a marker after what is queued and waits for it), so that MuJoCo called from Python on the
    worker does not hold up that reply; a part already computed waits for nothing. Outside a kernel it goes on at once."""
    import threading
    from types import SimpleNamespace
    events = []

    class IOPubThread:   # ipykernel's IOPubThread: runs scheduled functions in order, on its own thread
        thread = threading.current_thread()

        def schedule(self, f):
            events.append('marker scheduled')
            threading.Timer(0.05, lambda: (events.append('queue sent'), f())).start()

    shell = SimpleNamespace(kernel=SimpleNamespace(iopub_socket=SimpleNamespace(io_thread=IOPubThread())))
    monkeypatch.setattr('IPython.get_ipython', lambda: shell)
    assert widget.iopub_sent() and events == ['marker scheduled', 'queue sent']
    w = widget.servo_widget()
    part = w.later['curve']
    compute = part.compute
    part.compute = lambda values: events.append('physics') or compute(values)
    events.clear()
    w.request = {'generation': 1, 'values': {**OFF_GRID, 'timestep': 0.0031}}
    wait_reply(w, 1)
    assert events[:3] == ['marker scheduled', 'queue sent', 'physics'], events
    events.clear()
    w.request = {'generation': 2, 'values': {**OFF_GRID, 'timestep': 0.0031}}   # all stored: nothing to wait for
    wait_reply(w, 2)
    assert events == [], events
    monkeypatch.setattr('IPython.get_ipython', lambda: None)
    assert widget.iopub_sent() and events == []


def test_a_run_that_fits_the_budget_is_answered_whole_at_once():
    """At 1 ms RK4 (the budget's edge) the first reply already is the whole run: nothing partial to replace."""
    w = widget.servo_widget()
    values = {**OFF_GRID, 'kp': 97.3, 'timestep': 0.001, 'integrator': 'RK4'}
    w.request = {'generation': 1, 'values': values}
    first = wait_reply(w, 1, complete=False)['frame']['step']
    assert first['tEnd'] == 3.0
    assert first['readout'] == ch1.plots.readout(link.step_response(**values, q0=-0.5, duration=3.0))


def test_a_value_out_of_range_is_an_error_reply_naming_it():
    """A value no slider can give gets a reply naming the control and its range; the widget answers the next one."""
    w = widget.servo_widget()
    w.request = {'generation': 1, 'values': {**OFF_GRID, 'kp': -5.0}}
    reply = wait_reply(w, 1)
    assert 'kp must be in' in reply['error'] and '-5.0' in reply['error']
    w.request = {'generation': 2, 'values': OFF_GRID}
    assert 'frame' in wait_reply(w, 2, complete=False)


def ask(w, generation: int, complete: bool = True, **values) -> dict:
    """Set the widget's request as its front end does (every control's value, the defaults changed by ``values``)
    and return the reply to it (the complete one unless ``complete`` is False)."""
    w.request = {'generation': generation, 'values': {**w.spec.defaults, **values}}
    return wait_reply(w, generation, complete=complete)


@pytest.mark.parametrize('integrator', INTEGRATORS)
def test_the_most_extreme_corner_of_every_slider_is_answered_and_flagged(integrator):
    """kp 30000, no armature, h = 20 ms: hω ≈ 54; only discrete (implicit stiffness) stays stable. Every integrator
    gets an answer, no error, its step response flagged diverged exactly where MuJoCo's run diverged, with the time it
    gave up (the page writes it after the word: the description's 'after')."""
    w = widget.servo_widget()
    step = ask(w, 1, complete=False, kp=30000.0, armature=0.0, timestep=0.020, integrator=integrator)['frame']['step']
    assert step['diverged'] == (integrator != 'discrete')
    assert (step['readout'] == 'diverged') == step['diverged'] and (step['tEnd'] < 3.0) == step['diverged']
    assert step['bad'] or not step['diverged']


def test_a_kp_move_reuses_the_kp_curve_and_the_stability_map():
    """The sag/rise-vs-kp curve does not depend on kp, the stability map not on kp or armature: a kp move runs one
    step response and is answered whole at once (the curve and the map from the widget's store, no worker run); an
    armature move reruns the curve only, an integrator move the map too. (Counted on this widget's parts: another
    widget's worker may be running the same functions meanwhile.)"""
    w = widget.servo_widget()
    step, curve, stab = (w.later[name] for name in ('step', 'curve', 'map'))
    base = {'armature': 0.0213, 'timestep': 0.0041, 'integrator': 'implicitfast'}
    ask(w, 1, **base)
    calls = (step.calls, curve.calls, stab.calls)
    for generation, kp in enumerate((120.0, 300.0, 1000.0, 7.0), start=2):
        assert ask(w, generation, complete=False, **base, kp=kp)['complete']
    assert (step.calls, curve.calls, stab.calls) == (calls[0] + 4, calls[1], calls[2])
    ask(w, 10, **{**base, 'armature': 0.0227})
    assert (curve.calls, stab.calls) == (calls[1] + 1, calls[2])
    ask(w, 11, **{**base, 'armature': 0.0227, 'integrator': 'Euler'})
    assert (curve.calls, stab.calls) == (calls[1] + 2, calls[2] + 1)


def test_the_map_of_a_timestep_and_integrator_is_computed_once():
    """Moving away and back never reruns a map the widget has made: of these moves only implicit at 5.1 ms and Euler
    at 9.3 ms are new maps."""
    w = widget.servo_widget()
    values = {'timestep': 0.0093, 'integrator': 'implicit'}
    ask(w, 1, **values)
    calls = w.later['map'].calls
    for generation, change in enumerate(({'kp': 40.0}, {'armature': 0.05}, {'timestep': 0.0051},
                                         {'timestep': 0.0093}, {'integrator': 'Euler'}, {'integrator': 'implicit'}),
                                        start=2):
        values.update(change)
        ask(w, generation, **values)
    assert w.later['map'].calls == calls + 2


def test_the_replied_parts_equal_the_uncached_computation():
    """What the widget sends for a setting is the page's form of physai's runs there, computed afresh (the cached
    functions' uncached originals): the step response with its verdict, the kp curve and the map, which shows both
    kinds of cell. The bound the page draws over the map, from the constants the widget sends, is servo_bounds'."""
    kp, armature, h, integrator = 40.0, 0.013, 0.0117, 'Euler'  # hω 0.57, under Euler's 0.83: settles
    w = widget.servo_widget()
    frame = ask(w, 1, kp=kp, armature=armature, timestep=h, integrator=integrator)['frame']
    stab = servo_panel.servo_stability.__wrapped__(h, integrator)
    curve = servo_panel.servo_kp_curve.__wrapped__(armature, h, integrator)
    step = servo_panel.servo_step.__wrapped__(kp, armature, h, integrator)
    assert frame['map'] == ch1.map_part(stab)
    assert stab['diverged'].any() and not stab['diverged'].all()
    assert frame['curve'] == ch1.curve_part(curve)
    assert frame['step'] == ch1.step_part(step, ylim=w.spec.plot('step').ylim)
    assert step.settled and frame['step']['readout'] == ch1.plots.readout(step)
    constants = w.data['constants']
    bounds = servo_panel.servo_bounds(h, integrator)
    star = constants['criticalHOmega'][integrator]['1']
    np.testing.assert_allclose((star / h) ** 2 * (constants['link']['inertia'] + bounds['bound_armature']),
                               bounds['bound_kp'], rtol=1e-7)


def test_a_diverged_setting_is_flagged_in_all_three_parts():
    """kp 30000 with no armature at h = 20 ms under Euler: the step diverges (MuJoCo's bad-acceleration warning), the
    kp curve marks the runs that never settle, the top kp among them, and the map's cell there is unstable."""
    w = widget.servo_widget()
    frame = ask(w, 1, kp=30000.0, armature=0.0, timestep=0.020, integrator='Euler')['frame']
    assert frame['step']['diverged'] and frame['step']['bad'] and frame['step']['readout'] == 'diverged'
    assert w.spec.say('after', t=frame['step']['tEnd']).startswith('after 0.')  # MuJoCo gave up within the first second
    assert servo_panel.PANEL_KP_GRID[-1] == 30000.0 and frame['curve']['bad'][-1]
    assert frame['map'][-1][0] == 1  # top kp, no armature


def test_the_widget_carries_its_description_and_starts_and_resets_at_its_defaults():
    """The front end builds its controls and plots from the description the widget sends (the page's JSON of
    servo_spec); the panel starts, and its reset returns, at the description's defaults; the state is JSON (what
    ipywidgets sends) and reads back the same."""
    w = widget.servo_widget()
    assert w.data['spec'] == ch1.servo_spec().to_json() and w.data['module'] == 'position_actuators_panels.js'
    assert w.spec.defaults == {'kp': 100.0, 'armature': 0.028, 'timestep': 0.005, 'integrator': 'implicitfast',
                               'dampratio': 1.0}
    assert json.loads(json.dumps(w.data))['spec'] == w.data['spec']  # all of it JSON, the description unchanged by it
    reply = ask(w, 1)
    assert json.loads(json.dumps(reply)) == reply and reply['values'] == w.spec.defaults


@pytest.mark.parametrize('values, words', [
    ({'kp': 1e9}, 'kp must be in [1, 30000] N·m/rad'), ({'armature': -1.0}, 'armature must be in [0, 0.1]'),
    ({'timestep': 5.0}, 'timestep must be in [0.5, 20] ms'), ({'kp': float('nan')}, 'kp must be in'),
    ({'integrator': 'Verlet'}, 'integrator must be one of'), ({'gain': 3.0}, "no control 'gain'")])
def test_a_value_no_control_can_give_is_an_error_reply_naming_it(values, words):
    """A value beyond a slider's range, NaN, an unknown option or control: a reply naming it and what is allowed, no
    physics run; the widget answers the next request."""
    w = widget.servo_widget()
    assert words in ask(w, 1, **values)['error']
    assert 'frame' in ask(w, 2, complete=False)


def test_a_panel_cell_without_a_front_end_has_one_output_with_stable_text():
    """Under nbval a panel cell has one output, the widget's view and its fixed text (nothing printed, no figure, no
    physics run before a front end asks): chapters 1, 2 and 3's cells as the notebooks hold them."""
    nbformat = pytest.importorskip('nbformat')
    nbclient = pytest.importorskip('nbclient')
    cells = ['from physai.interface import widget\npanel = widget.servo_widget()\npanel',
             'from physai.interface import actuator_models_panels\n'
             'panel = actuator_models_panels.pendulum_widget(**actuator_models_panels.PANEL_DEFAULTS)\npanel',
             'from physai.interface import where_pd_runs_panels\npanel = where_pd_runs_panels.pd_widget()\npanel']
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=300, kernel_name='python3').execute()
    texts = []
    for cell in nb.cells:
        assert len(cell.outputs) == 1, cell.outputs
        output = cell.outputs[0]
        assert output.output_type == 'execute_result' and 'image/png' not in output.data
        assert set(output.data) == {'application/vnd.jupyter.widget-view+json', 'text/plain'}
        texts.append(output.data['text/plain'])
    assert texts[0] == ("panel servo (kp, armature, timestep, integrator, dampratio): the book page's panel, run by "
                        'this kernel')
    assert texts[1].startswith('panel pendulum (model, kp,') and texts[2].startswith('panel pd (kp, armature,')


def test_bundle_is_one_small_module_with_the_panel_styles(bundle):
    """The front end anywidget loads is one ES module (no import left to resolve from its blob: address) that stays
    small (the engine is not in it: the kernel runs the physics), with every panel rule of the page's style sheet."""
    js, css = (widget.STATIC / 'panels.js').read_text(), (widget.STATIC / 'panels.css').read_text()
    assert not re.search(r'''from\s*["']\.''', js)  # no relative import left
    # six chapters' modules are about 93 kB minified; three.js alone would add about 500 kB, MuJoCo's loader 290 kB
    assert 'export' in js and len(js.encode()) < 150_000
    page_rules = bundle.panel_css(bundle.CSS.read_text())
    assert css == page_rules and css.count('physai-panel') >= 60


def test_every_dark_rule_of_the_page_applies_in_jupyterlabs_dark_theme(bundle):
    """The page's dark rules key on the book theme's html[data-theme=dark]; in the widget's style sheet each of their
    selectors is given again for JupyterLab's dark themes (body[data-jp-theme-light=false]), with the same body."""
    css = (widget.STATIC / 'panels.css').read_text()
    rules = [line for line in css.splitlines() if bundle.PAGE_DARK in line]
    assert len(rules) >= 15
    for rule in rules:
        selectors = rule[:rule.index('{')].split(',')
        page = [s for s in selectors if s.startswith(bundle.PAGE_DARK)]
        assert [s.replace(bundle.PAGE_DARK, bundle.LAB_DARK, 1) for s in page] == \
            [s for s in selectors if s.startswith(bundle.LAB_DARK)], rule
    assert bundle.dark_in_jupyterlab('html[data-theme=dark] .physai-panel .a,.physai-panel .b') == \
        'html[data-theme=dark] .physai-panel .a,.physai-panel .b,body[data-jp-theme-light=false] .physai-panel .a'


def test_bundle_loads_from_an_address_nothing_resolves_against(bundle):
    """anywidget imports the front end from a blob: address, against which no relative address resolves: the page
    modules in the bundle resolve their files (engine, worker, meshes) only when they load them, so the module loads
    (here in Node from a data: address, which has no base either) and offers its render."""
    from browser import node
    path = widget.STATIC / 'panels.js'
    loaded = node(f"""import {{readFileSync}} from 'node:fs';
        const js = readFileSync({json.dumps(str(path))}, 'utf8');
        const m = await import('data:text/javascript;base64,' + Buffer.from(js).toString('base64'));
        console.log(JSON.stringify(typeof m.default.render));""")
    assert loaded == 'function'
    assert 'import.meta.url' in path.read_text()   # kept as it is (no esbuild define), read only when a file loads


# ---------------------------------------------------------------------------------------------------------------
# In JupyterLab, in a browser


MOVES = {'kp': 3.0, 'armature': 0.06, 'timestep': 0.002, 'integrator': 'Euler', 'dampratio': 0.5}
"""Each control of chapter 1's panel moved once, in this order, to a value its plot shows differently."""


def move(page, name: str, value) -> None:
    """Move control ``name`` of the widget's panel as a reader does: a choice picked, a slider set to its position
    nearest ``value`` (SI; a log slider's positions are not values), with the input and change events it sends."""
    page.eval_on_selector(f'#physai-panel-servo-{name}', """(input, [name, value]) => {
        const c = window.physaiPanels.servo.byName[name];
        input.value = input.tagName === 'SELECT' ? String(value) : c.position(value);
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new Event('change', {bubbles: true})); }""", [name, value])


@pytest.mark.slow
def test_widget_in_jupyterlab_redraws_at_a_control(jupyter_lab):
    """In a local JupyterLab the panel cell draws the page's panel from the kernel's run; moving each control redraws
    the step response with the kernel's new run at exactly those values, and its verdict is physai's for them."""
    from jupyter import notebook, run_notebook
    (jupyter_lab.root / 'servo.ipynb').write_text(json.dumps(notebook(
        ['from physai.interface.widget import servo_widget\nw = servo_widget()\nw'])))
    timings = {}
    t0 = time.perf_counter()
    page, errors = run_notebook(jupyter_lab.browser, jupyter_lab.base, jupyter_lab.token, 'servo.ipynb')
    try:
        timings['lab'] = time.perf_counter() - t0
        page.wait_for_selector('#physai-panel-servo[data-drawn]', state='attached', timeout=120000)
        page.wait_for_function("() => window.physaiPanels.servo.asked && !window.physaiPanels.servo.asked.first"
                               " && document.querySelector('#physai-panel-servo').dataset.state === 'idle'",
                               timeout=120000)
        timings['first panel'] = time.perf_counter() - t0
        readout = page.inner_text('#physai-panel-servo .pl-readout')
        step = page.inner_html('#physai-panel-servo svg.pl-step')
        assert 'sag' in readout, readout
        for name, value in MOVES.items():
            drawn = int(page.get_attribute('#physai-panel-servo', 'data-drawn'))
            move(page, name, value)
            page.wait_for_function(f"() => Number(document.querySelector('#physai-panel-servo').dataset.drawn) > {drawn}",
                                   timeout=120000)
            new_step = page.inner_html('#physai-panel-servo svg.pl-step')
            assert new_step != step, f'the step plot did not change when {name} moved'
            step = new_step
        values = page.evaluate('() => window.physaiPanels.servo.values')
        for name, value in MOVES.items():
            assert values[name] == value if isinstance(value, str) else abs(values[name] / value - 1) < 0.05, name
        expected = ch1.plots.readout(link.step_response(**values, q0=-0.5, duration=3.0))
        readout = page.inner_text('#physai-panel-servo .pl-readout')
        assert readout.replace('\u2212', '-') == expected.replace('\u2212', '-'), (readout, expected)
        latencies = page.evaluate('() => window.physaiPanels.servo.latencies')
        timings['done'] = time.perf_counter() - t0
        assert not errors, errors
    finally:
        page.close()
    print('timings (s from start):', {k: round(v, 1) for k, v in timings.items()}, 'latencies ms:',
          [round(x) for x in latencies])


def test_the_cells_stored_text_is_stable():
    """What nbval compares of a panel cell, its text/plain, is the same words for every widget made."""
    a, b = widget.servo_widget(), widget.servo_widget()
    texts = [w._repr_mimebundle_()[0]['text/plain'] for w in (a, b)]
    assert texts[0] == texts[1] == repr(a)
    assert 'kp, armature, timestep, integrator, dampratio' in texts[0]


def open_servo_widget(jupyter_lab, name: str):
    """Chapter 1's widget in a notebook ``name`` of its own in the session's JupyterLab, its first reply drawn:
    (page, errors) as jupyter.run_notebook gives them."""
    from jupyter import notebook, run_notebook
    (jupyter_lab.root / name).write_text(json.dumps(notebook(
        ['from physai.interface.widget import servo_widget\nservo_widget()'])))
    page, errors = run_notebook(jupyter_lab.browser, jupyter_lab.base, jupyter_lab.token, name)
    page.wait_for_selector('#physai-panel-servo[data-drawn]', state='attached', timeout=120000)
    page.wait_for_function("() => document.querySelector('#physai-panel-servo').dataset.state === 'idle'",
                           timeout=120000)
    return page, errors


PRESENT_BOX = """() => {
    const root = document.querySelector('#physai-panel-servo'), box = root.getBoundingClientRect();
    const plots = [...root.querySelectorAll('.pl-plots svg')].filter((svg) => svg.getBoundingClientRect().height > 0);
    return {box: [box.left, box.top, box.width, box.height], window: [innerWidth, innerHeight],
            present: root.classList.contains('physai-panel-present'), inBody: root.parentElement === document.body,
            inOutput: Boolean(root.closest('.jp-OutputArea-output')),
            scale: Number(root.style.getPropertyValue('--pl-scale')),
            plotsBottom: Math.max(...plots.map((svg) => svg.getBoundingClientRect().bottom)), plots: plots.length,
            placeholders: document.querySelectorAll('.pl-present-placeholder').length,
            focusInside: root.contains(document.activeElement)};
}"""


@pytest.mark.slow
def test_present_view_in_jupyterlab_fills_the_window_and_escape_returns_to_the_notebook(jupyter_lab):
    """The widget's present button shows the panel over the whole browser window, not only the notebook's area
    (JupyterLab's panels contain fixed boxes), at the page's scale for that window (ui.js presentScale: 0.8 times the
    window's ratio to 853x480 CSS px, at least 1) with every plot on the screen; Escape puts it back in its cell."""
    page, errors = open_servo_widget(jupyter_lab, 'servo_present.ipynb')
    try:
        before = page.evaluate(PRESENT_BOX)
        assert not before['present'] and before['inOutput'] and before['box'][2] < before['window'][0], before
        page.click('#physai-panel-servo .pl-controls button:text-is("present")')
        page.wait_for_selector('#physai-panel-servo.physai-panel-present')
        page.wait_for_function("() => document.querySelector('#physai-panel-servo').dataset.state === 'idle'")
        shown = page.evaluate(PRESENT_BOX)
        width, height = shown['window']
        assert shown['inBody'] and shown['placeholders'] == 1 and shown['focusInside'], shown
        assert all(abs(a - b) <= 1 for a, b in zip(shown['box'], [0, 0, width, height])), shown
        assert shown['scale'] == pytest.approx(max(1.0, 0.8 * min(width / 853, height / 480)), abs=1e-9), shown
        assert shown['plots'] == before['plots'] and shown['plotsBottom'] <= height + 1, shown
        page.keyboard.press('Escape')
        page.wait_for_selector('#physai-panel-servo:not(.physai-panel-present)')
        after = page.evaluate(PRESENT_BOX)
        assert after['inOutput'] and not after['inBody'] and after['placeholders'] == 0, after
        assert after['box'][2] == pytest.approx(before['box'][2], abs=1) and after['scale'] == 1, after
        assert not errors, errors
    finally:
        page.close()


THEME_COLOURS = """() => {
    const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const lum = (c) => {
        const linear = (v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);   // WCAG 2's
        const [r, g, b] = rgb(c).map((v) => linear(v / 255));
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = (a, b) => {
        const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
    };
    const root = document.querySelector('#physai-panel-servo'), style = getComputedStyle(root);
    const svg = root.querySelector('svg.pl-step'), plot = getComputedStyle(svg).backgroundColor;
    const label = getComputedStyle([...svg.querySelectorAll('text')].find((t) => t.textContent.trim())).fill;
    const readout = getComputedStyle(root.querySelector('.pl-readout')).color;
    return {background: style.backgroundColor, color: style.color, plot, label, readout,
            backgroundLuminance: lum(style.backgroundColor), text: contrast(style.color, style.backgroundColor),
            readoutContrast: contrast(readout, style.backgroundColor), labelContrast: contrast(label, plot)};
}"""


def lab_theme(page, name: str) -> None:
    """Pick JupyterLab's theme ``name`` from its Settings menu, as a reader does, and wait until the body says it."""
    page.click('.lm-MenuBar-itemLabel:text-is("Settings")')
    page.hover('.lm-Menu-itemLabel:text-is("Theme")')
    page.click(f'.lm-Menu-itemLabel:text-is("{name}")')
    light = 'false' if 'Dark' in name else 'true'
    page.wait_for_selector(f'body[data-jp-theme-light="{light}"]', state='attached', timeout=60000)


@pytest.mark.slow
def test_widget_takes_the_pages_dark_colours_in_jupyterlabs_dark_theme(jupyter_lab):
    """In JupyterLab's dark theme the panel is drawn in the page's dark colours (physai.css's dark rules, keyed on
    JupyterLab's body attribute in the widget's style sheet): a dark panel whose text, verdict and plot labels read
    at 4.5:1 or more (WCAG AA); back in the light theme, the page's light colours."""
    page, errors = open_servo_widget(jupyter_lab, 'servo_dark.ipynb')
    try:
        light = page.evaluate(THEME_COLOURS)
        assert light['background'] == 'rgb(255, 255, 255)' and light['color'] == 'rgb(34, 34, 34)', light
        lab_theme(page, 'JupyterLab Dark')
        page.wait_for_function("() => getComputedStyle(document.querySelector('#physai-panel-servo')).backgroundColor"
                               " !== 'rgb(255, 255, 255)'", timeout=30000)
        dark = page.evaluate(THEME_COLOURS)
        assert dark['background'] == 'rgb(28, 31, 35)' and dark['color'] == 'rgb(226, 226, 226)', dark   # physai.css
        assert dark['plot'] == 'rgb(21, 24, 27)' and dark['backgroundLuminance'] < 0.05, dark
        assert min(dark['text'], dark['readoutContrast'], dark['labelContrast']) >= 4.5, dark
        assert not errors, errors
    finally:
        if page.evaluate("() => document.body.dataset.jpThemeLight") == 'false':
            lab_theme(page, 'JupyterLab Light')   # the theme is a setting of the session's server: later tests' too
        page.close()


@pytest.mark.slow
def test_widget_in_jupyterlab_draws_a_long_runs_first_second_then_the_whole(jupyter_lab):
    """At 0.5 ms RK4 a control's first answer in JupyterLab is the run's first second, its readout saying the rest is
    coming, then the whole run with physai's verdict for it; every change reached the panel's readout in turn."""
    from jupyter import notebook, run_notebook
    (jupyter_lab.root / 'servo_rk4.ipynb').write_text(json.dumps(notebook(
        ["from physai.interface.widget import servo_widget\nservo_widget(integrator='RK4', timestep=0.0005)"])))
    page, errors = run_notebook(jupyter_lab.browser, jupyter_lab.base, jupyter_lab.token, 'servo_rk4.ipynb')
    try:
        page.wait_for_selector('#physai-panel-servo[data-drawn]', state='attached', timeout=120000)
        page.wait_for_function("() => window.physaiPanels.servo.asked && !window.physaiPanels.servo.asked.first"
                               " && document.querySelector('#physai-panel-servo').dataset.state === 'idle'",
                               timeout=120000)
        page.evaluate("""() => { const readout = document.querySelector('#physai-panel-servo .pl-readout');
            window.readouts = [];
            new MutationObserver(() => window.readouts.push(readout.textContent))
                .observe(readout, {childList: true, characterData: true, subtree: true}); }""")
        move(page, 'kp', 150.0)
        page.wait_for_function("() => document.querySelector('#physai-panel-servo').dataset.state === 'idle'"
                               " && !window.physaiPanels.servo.asked.first", timeout=120000)
        values = page.evaluate('() => window.physaiPanels.servo.values')
        readouts = [text.replace('\u2212', '-') for text in page.evaluate('() => window.readouts')]
        expected = ch1.plots.readout(link.step_response(**values, q0=-0.5, duration=3.0)).replace('\u2212', '-')
        partial = ch1.servo_spec().say('partial', t=PANEL_FIRST_PART, duration=3.0)
        assert values['integrator'] == 'RK4' and values['timestep'] == 0.0005, values
        assert partial in readouts and readouts[-1] == expected, (readouts, expected)
        assert readouts.index(partial) < len(readouts) - 1
        assert not errors, errors
    finally:
        page.close()
