"""Sphinx extension of the book: the page panels' script and MuJoCo's WebAssembly build in the site.

The engine is the npm package ``@mujoco/mujoco`` (MuJoCo's own build, ``physai.interface.web.ENGINE``), pinned in
``package.json`` / ``package-lock.json`` and fetched by ``npm ci`` (``make book`` runs it) into ``node_modules/``.
After the build this extension copies its single-threaded build, ``mujoco.js`` and ``mujoco.wasm`` (10.6 MB; a
server that compresses with gzip sends about 2.6 MB), with the package's ``package.json`` (its licence, Apache-2.0)
to ``_static/mujoco/``; ``book/_static/panels/engine.js`` imports it only when a reader first touches a live panel,
so no page fetches it on its first view, and nothing comes from a CDN.

``book/_static/panels/boot.js`` (which imports the chapter's panel module, and that module its own) goes only onto
the pages that hold a page panel (an element of class ``physai-panel``). The folder is ``panels``, not ``physai``:
Sphinx applies the book's ``exclude_patterns`` (which name the ``physai`` package) to static files too.
"""

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / 'node_modules' / '@mujoco' / 'mujoco'
FILES = ('mujoco.js', 'mujoco.wasm')  # physai.interface.web.ENGINE.files
TARGET = 'mujoco'  # under _static
SCRIPT = 'panels/boot.js'


def engine_files() -> list[Path]:
    """The engine's files inside ``node_modules``.

    Raises:
        ExtensionError: if ``npm ci`` has not fetched the pinned package.
    """
    files = [PACKAGE / name for name in FILES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ExtensionError(f"MuJoCo's WebAssembly build is missing ({', '.join(missing)}): run `npm ci` in {ROOT} "
                             f'(make book does; it needs Node.js and npm)')
    return files


def _check_engine(app, config):
    engine_files()  # fail early, before any page is read


def _script_where_needed(app, pagename, templatename, context, doctree):
    if 'class="physai-panel"' in context.get('body', ''):
        app.add_js_file(SCRIPT, type='module')


def _copy_engine(app, exception):
    if exception is not None or app.builder.format != 'html':
        return
    target = Path(app.outdir) / '_static' / TARGET
    target.mkdir(parents=True, exist_ok=True)
    for source in [*engine_files(), PACKAGE / 'package.json']:
        shutil.copyfile(source, target / source.name)


def setup(app):
    app.connect('config-inited', _check_engine)
    app.connect('html-page-context', _script_where_needed)
    app.connect('build-finished', _copy_engine)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
