"""A local JupyterLab for the browser tests and benchmarks of the panel widget (tests/test_widget.py,
benchmarks/bench_panel.py): the server on 127.0.0.1, a notebook written for it, its cells run in headless Chromium.
Not a test module itself.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

LAB_TIMEOUT_MS = 120000
"""How long JupyterLab may take to load, start its kernel or run a cell on a loaded machine."""


@contextlib.contextmanager
def jupyterlab(root, *, nodelay: bool = False):
    """A JupyterLab server on 127.0.0.1 serving ``root``; yields its base URL and token; stopped on exit. ``nodelay``:
    with :class:`physai.interface.nodelay.NoDelayConnection` as its kernel connection (no Nagle stall)."""
    pytest.importorskip('jupyterlab')
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    token = 'physai-test'
    env = {**os.environ, 'JUPYTER_CONFIG_DIR': str(root / '.config'), 'JUPYTER_RUNTIME_DIR': str(root / '.runtime'),
           'JUPYTERLAB_SETTINGS_DIR': str(root / '.settings'), 'JUPYTERLAB_WORKSPACES_DIR': str(root / '.workspaces')}
    log = open(root / 'jupyterlab.log', 'w')
    server = subprocess.Popen(
        [sys.executable, '-m', 'jupyterlab', '--no-browser', '--ServerApp.ip=127.0.0.1', f'--ServerApp.port={port}',
         f'--IdentityProvider.token={token}', f'--ServerApp.root_dir={root}',
         '--allow-root', '--LabApp.news_url=', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate']
        + (['--ServerApp.kernel_websocket_connection_class=physai.interface.nodelay.NoDelayConnection'] if nodelay else []),
        stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f'http://127.0.0.1:{port}'
    try:
        end = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f'{base}/api/status?token={token}', timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > end:
                    raise AssertionError((root / 'jupyterlab.log').read_text()[-2000:])
                time.sleep(0.2)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def notebook(cells) -> dict:
    return {'nbformat': 4, 'nbformat_minor': 5, 'metadata': {'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                                         'language': 'python'}},
            'cells': [{'cell_type': 'code', 'id': f'c{i}', 'metadata': {}, 'execution_count': None, 'outputs': [],
                       'source': source} for i, source in enumerate(cells)]}


def run_notebook(browser, base: str, token: str, name: str, *, viewport=(1400, 900)):
    """Open notebook ``name`` in JupyterLab at ``base``, wait for its kernel, run its first cell (Shift+Enter).
    Returns (page, errors): the errors its scripts raise, filled in as they come."""
    page = browser.new_page(viewport={'width': viewport[0], 'height': viewport[1]})
    errors = []
    page.on('pageerror', lambda e: errors.append(str(e)))
    # reset: a clean workspace, so that the notebooks an earlier test opened on the same server are not reopened
    # beside this one (their cells and panels would match this test's selectors)
    page.goto(f'{base}/lab/tree/{name}?reset&token={token}')
    page.wait_for_selector('.jp-Notebook .jp-Cell .cm-content', timeout=LAB_TIMEOUT_MS)
    # the kernel's status in the status bar: the notebook's own indicator is idle before the kernel runs
    page.wait_for_function("() => document.body.innerText.includes('| Idle')", timeout=LAB_TIMEOUT_MS)
    page.click('.jp-Notebook .jp-Cell .cm-content')
    page.keyboard.press('Shift+Enter')
    return page, errors
