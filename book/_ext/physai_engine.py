"""Sphinx extension of the book: MuJoCo's WebAssembly build in the site, for the live panels (physai.interface.web).

The engine is the npm package ``mujoco-js``, pinned in ``package.json`` / ``package-lock.json`` and fetched by
``npm ci`` (``make book`` runs it) into ``node_modules/``. After the build this extension copies its one file,
``dist/mujoco_wasm.js`` (11 MB, the WebAssembly inside; about 2.9 MB compressed), with the package's licence to
``_static/mujoco/``; the panel's script loads it with ``import()`` only when a reader first touches a live figure,
so no page fetches it on its first view, and nothing comes from a CDN.

``physai-live.js`` (with ``physai-live-core.js`` and ``physai-live-worker.js``, which it imports) goes only onto
the pages that hold a live panel (an element of class ``physai-live``).
"""

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'node_modules' / 'mujoco-js'
ENGINE = PACKAGE / 'dist' / 'mujoco_wasm.js'
TARGET = 'mujoco'  # under _static
SCRIPT = 'physai-live.js'


def engine_source() -> Path:
    """The path of ``mujoco_wasm.js`` inside ``node_modules``.

    Raises:
        ExtensionError: if ``npm ci`` has not fetched the pinned package.
    """
    if not ENGINE.is_file():
        raise ExtensionError(f"MuJoCo's WebAssembly build is missing ({ENGINE}): run `npm ci` in {ROOT} "
                             f'(make book does; it needs Node.js and npm)')
    return ENGINE


def _check_engine(app, config):
    engine_source()  # fail early, before any page is read


def _script_where_needed(app, pagename, templatename, context, doctree):
    if 'class="physai-live"' in context.get('body', ''):
        app.add_js_file(SCRIPT, type='module')


def _copy_engine(app, exception):
    if exception is not None or app.builder.format != 'html':
        return
    target = Path(app.outdir) / '_static' / TARGET
    target.mkdir(parents=True, exist_ok=True)
    source = engine_source()
    shutil.copyfile(source, target / source.name)
    for name in ('LICENSE', 'package.json'):
        if (PACKAGE / name).is_file():
            shutil.copyfile(PACKAGE / name, target / name)


def setup(app):
    app.connect('config-inited', _check_engine)
    app.connect('html-page-context', _script_where_needed)
    app.connect('build-finished', _copy_engine)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
