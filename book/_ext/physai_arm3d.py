"""Sphinx extension of the book: what the SO-101's 3D view loads, put into the site when it is built.

The view is ``book/_static/physai-arm3d.js`` (an ES module, in the site as ``_static/physai-arm3d.js``, with the two
modules it imports, ``physai-arm3d-arm.js`` and ``physai-arm3d-poses.js``). A page imports it only when the reader
opens the 3D view, and it then fetches, from ``_static``:

``three/``
    three.js, the npm package ``three`` pinned in ``package.json``/``package-lock.json`` (``npm ci`` fetches it):
    ``three.module.js`` and ``three.core.js`` from its ``build/``, ``OrbitControls.js`` and
    ``BufferGeometryUtils.js`` from its ``examples/jsm/``, and its ``LICENSE`` (MIT). The two add-ons import
    ``'three'`` by its bare name, which a page resolves only through an import map; :func:`install_three` rewrites
    that one import to ``./three.module.js`` (and fails if an add-on's imports are not as expected).
``arm3d/``
    the arm's meshes, description and licence, written by :func:`physai.book.arm_meshes.build` at every build
    (about 5 s: MuJoCo compiles the SO-101, meshoptimizer simplifies its meshes), so no binary is committed.

Nothing comes from a CDN. A failure (no ``npm ci``, no Menagerie, no Node) stops the build with a message saying
how to fix it.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
THREE = ROOT / 'node_modules' / 'three'
THREE_FILES = {  # in the site's _static/three/ : in node_modules/three/
    'three.module.js': 'build/three.module.js',
    'three.core.js': 'build/three.core.js',
    'OrbitControls.js': 'examples/jsm/controls/OrbitControls.js',
    'BufferGeometryUtils.js': 'examples/jsm/utils/BufferGeometryUtils.js',
    'LICENSE': 'LICENSE',
    'package.json': 'package.json',
}
ADDONS = ('OrbitControls.js', 'BufferGeometryUtils.js')
BARE_IMPORT = re.compile(r"""\bfrom\s+['"]three['"]""")


def three_source() -> Path:
    """``node_modules/three``; raises ExtensionError when ``npm ci`` has not fetched it."""
    missing = [path for path in THREE_FILES.values() if not (THREE / path).is_file()]
    if missing:
        raise ExtensionError(f'three.js is missing ({THREE / missing[0]}): run `npm ci` in {ROOT} '
                             f'(make book does; it needs Node.js and npm)')
    return THREE


def install_three(static: Path) -> Path:
    """Copy three.js into ``static/three`` as the page imports it; returns that folder."""
    source = three_source()
    target = Path(static) / 'three'
    target.mkdir(parents=True, exist_ok=True)
    for name, path in THREE_FILES.items():
        text_or_bytes = (source / path).read_bytes()
        if name in ADDONS:
            text = text_or_bytes.decode('utf-8')
            text, count = BARE_IMPORT.subn("from './three.module.js'", text)
            if count != 1 or re.search(r"""\bimport\s*\(?\s*['"]three['"]""", text):
                raise ExtensionError(f'{source / path} has {count} imports of "three" (1 expected): its layout changed; '
                                     f'check install_three in {__file__}')
            text_or_bytes = text.encode('utf-8')
        (target / name).write_bytes(text_or_bytes)
    return target


def install_arm(static: Path) -> dict:
    """Write the arm's meshes into ``static/arm3d``; returns :func:`physai.book.arm_meshes.build`'s summary."""
    from physai.book import arm_meshes
    from physai.engine import so101
    try:
        return arm_meshes.build(Path(static) / 'arm3d')
    except (arm_meshes.ToolMissing, so101.ModelUnavailable) as err:
        raise ExtensionError(f'the 3D view\'s meshes could not be made: {err}') from err


def install(static: Path) -> dict:
    """Everything the 3D view loads, into ``static`` (a site's ``_static``); returns the meshes' summary."""
    install_three(static)
    return install_arm(static)


VIEW_FILES = ('physai-arm3d.js', 'physai-arm3d-arm.js', 'physai-arm3d-poses.js', 'three/three.module.js',
              'three/three.core.js', 'three/OrbitControls.js', 'three/BufferGeometryUtils.js', 'arm3d/so101.json',
              'arm3d/so101.bin')
"""What a page fetches when the reader opens the 3D view (besides MuJoCo, which the panel may have loaded already)."""

_INSTALLED: dict = {}


def view_size(static: Path) -> dict:
    """The 3D view's download, measured from the files in ``static`` (installed there first, once per build):
    ``megabytes`` and ``compressedMegabytes`` (gzip level 6), one decimal, as the engine's (physai_engine)."""
    import gzip
    static = Path(static)
    if 'summary' not in _INSTALLED:
        _INSTALLED['summary'] = install(static)
        for name in VIEW_FILES[:3]:   # Sphinx copies _static at the end of the build: the modules as they will be
            (static / name).write_bytes((ROOT / 'book' / '_static' / name).read_bytes())
    if 'size' not in _INSTALLED:
        raw = [(static / name).read_bytes() for name in VIEW_FILES]
        _INSTALLED['size'] = {'megabytes': round(sum(map(len, raw)) / 1e6, 1),
                              'compressedMegabytes': round(sum(len(gzip.compress(b, compresslevel=6)) for b in raw) / 1e6, 1)}
    return _INSTALLED['size']


def _size_where_needed(app, pagename, templatename, context, doctree):
    if 'class="physai-panel"' in context.get('body', ''):
        import json
        app.add_js_file(None, body=f'window.physaiArm3dSize = {json.dumps(view_size(Path(app.outdir) / "_static"))};')


def _check(app, config):
    three_source()  # fail early, before any page is read


def _install(app, exception):
    if exception is not None or app.builder.format != 'html':
        return
    summary = _INSTALLED.pop('summary', None) or install(Path(app.outdir) / '_static')
    _INSTALLED.clear()
    total = sum(f['gzip'] for f in summary['files'].values())
    LOGGER.info(f'physai_arm3d: the SO-101 meshes, {summary["triangles"]} triangles, {total / 1e3:.0f} kB gzipped')


def setup(app):
    app.connect('config-inited', _check)
    app.connect('html-page-context', _size_where_needed)
    app.connect('build-finished', _install)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
