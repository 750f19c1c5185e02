"""What the browser tests and benchmarks share: a scratch page of live blocks served over http, headless Chromium,
the few moves every live panel answers to, and Node for the pages' JavaScript outside a browser.

The scratch page holds the site's panel scripts (book/_static/panels/*.js), its style sheet (physai.css) and MuJoCo's
WebAssembly build (node_modules/@mujoco/mujoco, put there by ``npm ci``) where the book serves them, and an index.html
with the blocks (first views and engine blocks, as the chapters' cells write them). Browsers run WebAssembly and ES modules only over http:
:func:`serve` serves a directory on a thread. Used by tests/test_web*.py, tests/conftest.py (the ``browser``
fixture) and benchmarks/bench_web*.py (which put tests/ on ``sys.path``); not a test module itself.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
STATIC = ROOT / 'book' / '_static'
MODULES = STATIC / 'panels'
ENGINE_DIR = ROOT / 'node_modules' / '@mujoco' / 'mujoco'
ENGINE = ENGINE_DIR / 'mujoco.wasm'
ENGINE_JS = ENGINE_DIR / 'mujoco.js'
NODE = shutil.which('node')
CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
NO_ENGINE = 'node_modules/@mujoco/mujoco is missing: run npm ci'
LIVE_TIMEOUT_MS = 120000
"""How long a page may take to load the engine and start a panel (10.6 MB of WebAssembly on a loaded machine)."""

FRAME_AND_TASK = """
    const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
    const task = () => new Promise((resolve) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => resolve();
        channel.port2.postMessage(0);
    });"""
"""Page-side waits for timing snippets: ``await frame()`` until the next animation frame (when the browser paints),
``await task()`` until a task of its own (as the browser dispatches a slider's input)."""


def node(script: str, data=None, *, timeout: float = 300) -> object:
    """Run ES module ``script`` in Node with ``data`` as JSON on stdin; returns its last output line read as JSON
    (MuJoCo prints its warnings on stdout before it). Skips the test when Node is missing."""
    if NODE is None:
        pytest.skip('node is not installed')
    done = subprocess.run([NODE, '--input-type=module', '-e', script], input=json.dumps(data), text=True,
                          capture_output=True, check=True, timeout=timeout)
    return json.loads(done.stdout.strip().rsplit('\n', 1)[-1])


def module(name: str) -> str:
    """The file URL of one of the page's modules (``'laws.js'``), for a Node script's import."""
    return (MODULES / name).as_uri()


def engine_url() -> str:
    """The file URL of the engine's ``mujoco.js`` (``engine.load(url)`` in Node); skips the test when missing."""
    require_engine()
    return ENGINE_JS.as_uri()


def require_engine() -> pathlib.Path:
    """The engine's file; skips the test when it is missing."""
    if not (ENGINE.is_file() and ENGINE_JS.is_file()):
        pytest.skip(NO_ENGINE)
    return ENGINE


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without a log line per request, and lets the browser cache them (the engine is 10.6 MB)."""

    def log_message(self, format, *args):
        pass

    def end_headers(self):
        self.send_header('Cache-Control', 'max-age=3600')
        super().end_headers()


@contextlib.contextmanager
def serve(directory: pathlib.Path) -> Iterator[str]:
    """Serve ``directory`` over http on 127.0.0.1 (a free port) from a thread; yields the base URL, without a
    trailing slash, and shuts the server down on exit."""
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                             functools.partial(QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f'http://127.0.0.1:{server.server_port}'
    finally:
        server.shutdown()
        server.server_close()


def scratch_site(directory: pathlib.Path, body_html: str, *, title: str = 'live panel',
                 max_width: int | None = None, theme: str = 'light') -> pathlib.Path:
    """Write a page into ``directory`` as the book serves one: ``body_html`` (first views and engine blocks) in a
    column ``max_width`` CSS px wide (by default the book's at a 1280 px window, ``plots.COLUMN_PX``), the site's panel
    scripts in ``_static/panels/``, its style sheet in ``_static/`` and the engine in ``_static/mujoco/``; ``theme``
    ``dark`` sets the book's dark theme. Returns ``directory``; skips the test when the engine is missing."""
    require_engine()
    if max_width is None:
        from physai.interface.plots import COLUMN_PX
        max_width = COLUMN_PX
    static = directory / '_static'
    (static / 'mujoco').mkdir(parents=True)
    shutil.copytree(STATIC / 'panels', static / 'panels')
    shutil.copyfile(STATIC / 'physai.css', static / 'physai.css')
    for path in (ENGINE, ENGINE_JS):
        shutil.copyfile(path, static / 'mujoco' / path.name)
    (directory / 'index.html').write_text(
        f'<!doctype html><html data-theme="{theme}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        f'<title>{title}</title><link rel="stylesheet" href="_static/physai.css">'
        '<script type="module" src="_static/panels/boot.js?v=0"></script></head><body>'
        f'<main style="max-width:{max_width}px;margin:auto">{body_html}</main></body></html>', encoding='utf-8')
    return directory


@contextlib.contextmanager
def chromium():
    """Headless Chromium (``CHROMIUM``, Debian's) through playwright, closed on exit; skips the test when either is
    missing."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f'{CHROMIUM} is missing')
    sync_api = pytest.importorskip('playwright.sync_api')
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


TRANSIENT = re.compile(r'Protocol error \(Page\.captureScreenshot\)')
"""What Chromium says when it cannot capture a screenshot at that moment (seen at a load average near 10: "Unable to
capture screenshot"): the one error a browser test tries again, once."""

RETRIES: list[str] = []
"""Every retry made (test id and the error's first line), reported at the end of the test session (conftest.py)."""


def screenshot(target, **options) -> bytes:
    """``target.screenshot(**options)`` (a page or a locator), tried a second time, once, if Chromium reports the
    transient protocol error :data:`TRANSIENT`; the retry is recorded in :data:`RETRIES`. Any other error, or the
    same one twice, fails the test."""
    try:
        return target.screenshot(**options)
    except Exception as error:  # playwright.sync_api.Error; imported lazily, as playwright may be missing
        if not TRANSIENT.search(str(error)):
            raise
        test = os.environ.get('PYTEST_CURRENT_TEST', '?').rsplit(' ', 1)[0]
        RETRIES.append(f'{test}: {str(error).splitlines()[0]}')
        return target.screenshot(**options)


NEXT_FRAMES_JS = """() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))))"""
"""Resolves after the browser has drawn two more frames: whatever a page asked to draw before it is on the screen."""


def next_frames(page) -> None:
    """Wait until the page has drawn two more frames (what it asked to draw before is on the screen)."""
    page.evaluate(NEXT_FRAMES_JS)


ARM3D_SETTLED_JS = """key => { const a = window.physaiPanels[key].arm3d;
    return Boolean(a.view && a.view._clip && a.view.frames > 0 && a.shown === a.record
                   && a.panel.root.dataset.state === 'idle'); }"""
"""Chapter 3 or 4's 3D view has taken the panel's last run (arm3d_view.js ``show``) and the panel is not running."""


def wait_arm3d_settled(page, key: str, timeout: float = LIVE_TIMEOUT_MS) -> None:
    """Wait until page panel ``key``'s 3D view shows the panel's last run, then until that is drawn (two frames)."""
    page.wait_for_function(ARM3D_SETTLED_JS, arg=key, timeout=timeout)
    next_frames(page)


def open_page(browser, url: str, *, viewport: tuple[int, int] = (1280, 800), webassembly: bool = True):
    """Open ``url`` in a new page of ``viewport`` (width, height) CSS px; ``webassembly=False`` takes WebAssembly away
    before any script runs (Chromium's V8 flags cannot). Returns (page, requests, errors): the URLs the page
    requests and the errors its scripts raise, filled in as they come."""
    page = browser.new_page(viewport={'width': viewport[0], 'height': viewport[1]})
    requests, errors = [], []
    page.on('request', lambda r: requests.append(r.url))
    page.on('pageerror', lambda e: errors.append(str(e)))
    if not webassembly:
        page.add_init_script('delete globalThis.WebAssembly')
    page.goto(url)
    return page, requests, errors


def wait_built(page, key: str) -> None:
    """Wait until the page panel ``key`` (servo, pendulum, pd, sysid) has drawn its first view."""
    page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=LIVE_TIMEOUT_MS)


def wait_live(page, key: str) -> None:
    """Wait until the page panel ``key`` runs MuJoCo and has drawn a picture of its own."""
    page.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                           timeout=LIVE_TIMEOUT_MS)


def go_live(page, key: str) -> None:
    """Press the panel's "Run MuJoCo live" and wait until it runs."""
    wait_built(page, key)
    page.click(f'#physai-panel-{key} .pl-offer button')
    wait_live(page, key)


def set_control(page, key: str, name: str, value) -> None:
    """Move control ``name`` of page panel ``key`` as a reader does: set its input's value, dispatch an input event
    (a slider dragged) and a change event (let go; before MuJoCo runs, a changed value starts it)."""
    page.eval_on_selector(f'#physai-panel-{key}-{name}', """(input, value) => {
        input.value = value; input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new Event('change', {bubbles: true})); }""", str(value))


def drawn(page, selector: str) -> str:
    """What the nodes matching ``selector`` show: their content, joined, without the clip paths' random ids."""
    html = page.eval_on_selector_all(selector, 'nodes => nodes.map((n) => n.innerHTML).join("")')
    return re.sub(r'pl-clip-[a-z0-9]+', 'clip', html)
