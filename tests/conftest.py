"""Fixtures shared by the tests."""

import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import time

import matplotlib
import numpy as np
import pytest
from browser import CHROMIUM, RETRIES, chromium, open_page, scratch_site, serve

matplotlib.use('agg')  # the tests draw off-screen, before anything imports pyplot

BROWSER_USED: list[bool] = []
"""Whether the session started the browser (then its retries are reported)."""

SITE_FIXTURES = {'browser', 'built_book', 'built_site', 'panel_page'}
"""The fixtures of the browser and of the built book: a test that uses one (itself or through another) is marked
``site``."""

SITE_MODULES = {'test_edition.py'}
"""Modules marked ``site`` whole: the Colab edition, part of the published book (its fake-Colab runs execute every
chapter, which also evens out the two pytest jobs of make test)."""


def pytest_collection_modifyitems(items):
    """Mark ``site`` every test of the published book: those that open pages in Chromium or read the built book, and
    the Colab edition's. ``make test`` runs those in a pytest of their own (one Chromium and one build for them all)
    and the others in another, side by side on two cores (the Makefile's test-site and test-others)."""
    for item in items:
        if SITE_FIXTURES & set(getattr(item, 'fixturenames', ())) or item.path.name in SITE_MODULES:
            item.add_marker(pytest.mark.site)


@pytest.fixture(scope='session')
def built_book() -> pathlib.Path:
    """Build the book once per test session, as ``make book`` does (strict, ``--all``), into the repository's
    ``_build``; returns ``_build/html``. Every test of the built site shares this one build (a build takes minutes)."""
    root = pathlib.Path(os.environ.get('PHYSAI_BOOK_ROOT', pathlib.Path(__file__).resolve().parents[1]))
    jupyter_book = pathlib.Path(sys.executable).with_name('jupyter-book')
    command = [str(jupyter_book if jupyter_book.exists() else shutil.which('jupyter-book')),
               'build', '--all', '-W', '-n', '--keep-going', str(root)]
    start = time.monotonic()
    result = subprocess.run(command, cwd=root, capture_output=True, text=True)
    assert result.returncode == 0, f'the book build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}'
    print(f'\nbook built in {time.monotonic() - start:.1f} s')
    return root / '_build' / 'html'


@pytest.fixture(scope='session')
def built_site(built_book) -> str:
    """The built book (``built_book``) served on 127.0.0.1 for the whole session; its base URL, with a trailing slash.
    tests/test_site.py and tests/test_page.py call it ``site``."""
    with serve(built_book) as url:
        yield url + '/'


@pytest.fixture(scope='session')
def browser():
    """Headless Debian Chromium, one for the whole test session (tests/browser.py); every test opens its own pages
    or contexts in it, and what a test leaves open is closed after it (``_close_what_the_test_opened``). Skips when
    Chromium or playwright is missing, except under CI (``CI`` set), where .ci/run installs Chromium: there it fails."""
    if os.environ.get('CI') and not os.path.exists(CHROMIUM):
        pytest.fail(f'{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)')
    with chromium() as b:
        BROWSER_USED.append(True)
        yield b


@pytest.fixture(scope='session')
def jupyter_lab(tmp_path_factory, request):
    """One local JupyterLab for every panel-widget test of the session (tests/jupyter.py), opened in the session's
    Chromium (``browser``): a ``SimpleNamespace(root, base, token, browser)``. A test writes its notebook into ``root``
    under a name of its own, opens it with ``jupyter.run_notebook`` and closes its page. The browser is asked for
    here, not named as a fixture, so these tests stay with the others rather than the site's (``SITE_FIXTURES``); one
    Chromium serves both kinds in a process (a second playwright in one process fails)."""
    import types
    from jupyter import jupyterlab
    root = tmp_path_factory.mktemp('lab')
    with jupyterlab(root) as (base, token):
        yield types.SimpleNamespace(root=root, base=base, token=token, browser=request.getfixturevalue('browser'))


@pytest.fixture(autouse=True)
def _close_what_the_test_opened(request):
    """Close the browser contexts (and so the pages) a test opened and left open, a failed test's too: the session's
    one browser must not keep a page of an earlier test drawing while later tests run."""
    if 'browser' not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue('browser')
    before = set(browser.contexts)
    yield
    for context in browser.contexts:
        if context not in before:
            context.close()


def pytest_terminal_summary(terminalreporter):
    """Report the browser tests' retries (tests/browser.py ``screenshot``): how many, and where."""
    if not BROWSER_USED:
        return
    terminalreporter.write_line(f'browser retries: {len(RETRIES)} (a screenshot tried again, once, after Chromium '
                                f'reported a transient protocol error)')
    for retry in RETRIES:
        terminalreporter.write_line(f'  retried: {retry}')


@pytest.fixture
def panel_page(tmp_path, browser):
    """Open a page panel's blocks (``physai.interface.web``) on a scratch page served over http, as the book serves
    them (tests/browser.py), in headless Debian Chromium without WebAssembly: the precomputed first view alone.

    Yields ``open(html) -> page`` and the list of JavaScript errors the pages raise. Skips when Chromium, playwright
    or the engine's package is missing (the site test, not these, insists on them under CI).
    """
    errors: list[str] = []
    with contextlib.ExitStack() as stack:
        count = iter(range(1000))

        def open_(html: str):
            site = scratch_site(tmp_path / f'site{next(count)}', html)
            url = stack.enter_context(serve(site))
            page, _, page_errors = open_page(browser, url + '/', webassembly=False)
            page.on('pageerror', lambda e: errors.append(str(e)))
            page.wait_for_selector('.physai-panel[data-drawn]', state='attached', timeout=60_000)
            errors.extend(page_errors)
            return page

        yield open_, errors


# --- chapter 3: the pd-rate ensembles (test_where_pd_runs, test_where_pd_runs_panels) ----------------


@pytest.fixture(scope='session')
def ensembles():
    """The SO-101 hold's ensembles at every rate and backend, by (rate_hz, backend)."""
    from physai.experiments import where_pd_runs
    return {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles()}


@pytest.fixture(scope='session')
def bare_ensembles():
    """The same ensembles without armature."""
    from physai.experiments import where_pd_runs
    return {(e.params.rate_hz, e.params.backend): e for e in where_pd_runs.rate_ensembles(armature=0.0)}


# --- chapter 4: a servo, a made-up episode and the real recording (test_replay, test_servo_sysid, ----
# --- test_servo_sysid_panels) ---------------------------------------------------------------------------

CENTER_DEG = np.array([0.0, -60.0, 60.0, 40.0, -60.0, 20.0])  # mid-range, inside every joint's limits


@pytest.fixture
def soft():
    """A soft servo, far from Menagerie's kp 998 one."""
    from physai.engine.arm_replay import ArmServo
    return ArmServo(kp=30.0, kv=0.5, forcerange=2.0, damping=0.3, frictionloss=0.05, armature=0.05)


@pytest.fixture
def synthetic_episode():
    """``synthetic_episode(n=45, index=0, delay=0) -> Episode``: smooth commands around a mid-range pose;
    state = command delayed by ``delay`` frames (followed exactly when 0)."""
    from physai.engine.datasets import Episode
    from physai.engine.so101 import JOINTS

    def make(n: int = 45, index: int = 0, delay: int = 0) -> Episode:
        t = np.arange(n) / 30.0
        action = CENTER_DEG + np.outer(np.sin(2 * np.pi * 0.7 * t), [20, 25, -25, 20, 15, 10])
        state = np.concatenate([np.repeat(action[:1], delay, axis=0), action[:n - delay]])
        return Episode(index=index, fps=30.0, joints=JOINTS, action=action, state=state, timestamp=t)

    return make


@pytest.fixture(scope='session')
def book_fit():
    """Chapter 4's main fit, once per test session (a minute of fitting, which tests/test_servo_sysid.py and
    tests/test_servo_truth.py share): the book's recording (``servo_sysid.find_dataset``, the shipped one), its fit and
    held-out episodes (``servo_sysid.split``) and the servo fitted from TheRobotStudio's gains. Skips when the shipped
    recording is absent."""
    from physai.engine import arm_replay, sysid
    from physai.engine.datasets import shipped_recording
    from physai.experiments import servo_sysid
    if not shipped_recording().is_dir():
        pytest.skip('the shipped SO-101 recording is absent')
    data, _ = servo_sysid.find_dataset(None)
    fit_eps, heldout = servo_sysid.split(data)
    fitted = sysid.fit_servo(fit_eps, starts={'therobotstudio': arm_replay.THEROBOTSTUDIO}, progress=False).servo
    return data, fit_eps, heldout, fitted


@pytest.fixture(scope='module')
def real():
    """The SO-101 recording physai ships (a copy of ../shared/datasets/so101_record_test), converted from LeRobot's
    -100..100 normalisation to its degrees as chapter 4 reads it; skips when absent."""
    from physai.engine.datasets import load_lerobot, shipped_recording
    from physai.engine.lerobot_units import to_degrees
    if not shipped_recording().is_dir():
        pytest.skip('the shipped SO-101 recording is absent')
    return to_degrees(load_lerobot(shipped_recording()))[0]
