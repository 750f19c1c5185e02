"""The widget's front end as one module: the page's panel code bundled for anywidget (a spike of issue 42).

anywidget loads a widget's front end as a single ES module (from a ``blob:`` address), while the page's panel code
is several modules that import each other by relative paths (``book/_static/panels/``). :func:`build` bundles
``widget.js`` and all it imports with esbuild (npm ``esbuild``, pinned in ``package.json``) into
``physai/interface/static/panels.js``, and copies the panel's rules of ``book/_static/physai.css`` (every rule whose
selector names ``physai-panel``; its dark rules keyed on JupyterLab's dark theme too) into ``panels.css``. The two
files are generated, not committed (a committed bundle goes stale with every change to a page module): tests build
them; a package for Colab or ``pip install`` users, who have no Node, must be built after them (``pyproject.toml``
lists them as package data). The bundle keeps ``import.meta.url`` as it is: the page modules resolve their files
(engine, worker, meshes) against it only when they load them, which the widget, whose results come from the kernel,
never does.

The 3D view (chapter 3's arm) is not in ``panels.js``: with ``--arm3d`` :func:`build_arm3d` also writes
``arm3d.js`` (``book/_static/physai-arm3d.js``, its two helpers and three.js, npm ``three``, bundled into one module,
about 0.6 MB) and ``arm3d/`` (the arm's meshes with their licence, :func:`physai.book.arm_meshes.build`: Node,
meshoptimizer and Menagerie, about 10 s), which the widget sends from the kernel only when a reader opens the view.

Run: ``python -m physai.book.widget_bundle [--arm3d]`` (writes the files); ``--check`` fails if they are stale.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / 'book' / '_static' / 'panels' / 'widget.js'
CSS = ROOT / 'book' / '_static' / 'physai.css'
ESBUILD = ROOT / 'node_modules' / '.bin' / 'esbuild'
OUT = ROOT / 'physai' / 'interface' / 'static'
ARM3D = ROOT / 'book' / '_static' / 'physai-arm3d.js'
THREE = ROOT / 'node_modules' / 'three'
THREE_FILES = {'three.module.js': 'build/three.module.js', 'OrbitControls.js': 'examples/jsm/controls/OrbitControls.js',
               'BufferGeometryUtils.js': 'examples/jsm/utils/BufferGeometryUtils.js'}
"""What the 3D view imports from ``./three/`` (the site's copy, book/_ext/physai_arm3d.py), in npm ``three``."""


def bundle_js(entry: Path = ENTRY) -> str:
    """``widget.js`` (or ``entry``) and its imports as one minified ES module (esbuild)."""
    if not ESBUILD.exists():
        raise FileNotFoundError(f'{ESBUILD} is missing: run npm ci (package.json pins esbuild)')
    done = subprocess.run([str(ESBUILD), str(entry), '--bundle', '--format=esm', '--minify', '--legal-comments=none',
                           '--log-level=warning'],
                          capture_output=True, text=True, check=True)
    return done.stdout


def bundle_arm3d() -> str:
    """The 3D view's module, ``physai-arm3d.js`` with its helpers and three.js, as one minified ES module: its
    ``./three/`` imports (the site's copy of three.js) point at npm ``three`` itself, whose add-ons import three.js
    by its package name, so esbuild puts one three.js in."""
    missing = [path for path in THREE_FILES.values() if not (THREE / path).is_file()]
    if missing:
        raise FileNotFoundError(f'{THREE / missing[0]} is missing: run npm ci (package.json pins three)')
    with tempfile.TemporaryDirectory() as tmp:
        for path in ARM3D.parent.glob('physai-arm3d*.js'):
            shutil.copy(path, tmp)
        (Path(tmp) / 'three').mkdir()
        for name, path in THREE_FILES.items():
            (Path(tmp) / 'three' / name).write_text(f'export * from {json.dumps(str(THREE / path))};\n')
        return bundle_js(Path(tmp) / ARM3D.name)


def build_arm3d(out: Path = OUT) -> dict[str, int]:
    """Write ``arm3d.js`` (:func:`bundle_arm3d`) and the arm's meshes (``arm3d/``, :func:`physai.book.arm_meshes.build`)
    into ``out``; returns each file's size in bytes, by its path under ``out``."""
    from physai.book import arm_meshes
    out.mkdir(exist_ok=True)
    (out / 'arm3d.js').write_text(bundle_arm3d())
    arm_meshes.build(out / 'arm3d')
    return {str(path.relative_to(out)): path.stat().st_size
            for path in [out / 'arm3d.js', *sorted((out / 'arm3d').iterdir())]}


def _blocks(text: str):
    """The top-level blocks of a style sheet: (prelude, body), comments removed."""
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    i = 0
    while True:
        start = text.find('{', i)
        if start < 0:
            return
        depth, j = 1, start + 1
        while depth:
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        yield text[i:start].strip(), text[start + 1:j - 1]
        i = j


PAGE_DARK = 'html[data-theme=dark]'
"""What the book's dark rules key on: the page theme's attribute on ``<html>`` (pydata-sphinx-theme)."""
LAB_DARK = 'body[data-jp-theme-light=false]'
"""What JupyterLab's dark themes set: ``data-jp-theme-light="false"`` on ``<body>``."""


def dark_in_jupyterlab(prelude: str) -> str:
    """A rule's selector list with each selector of the page's dark theme given again for JupyterLab's (the same
    specificity: an attribute on a root element, then the same classes)."""
    selectors = [s.strip() for s in prelude.split(',')]
    return ','.join(selectors + [LAB_DARK + s[len(PAGE_DARK):] for s in selectors if s.startswith(PAGE_DARK)])


def panel_css(text: str) -> str:
    """The rules of a style sheet whose selector names ``physai-panel`` (inside @media blocks too), nothing else; its
    dark rules also apply in JupyterLab's dark theme (:func:`dark_in_jupyterlab`)."""
    out = []
    for prelude, body in _blocks(text):
        if prelude.startswith('@media'):
            inner = panel_css(body)
            if inner:
                out.append(f'{prelude}{{\n{inner}}}\n')
        elif 'physai-panel' in prelude:
            out.append(f'{dark_in_jupyterlab(prelude)}{{{body.strip()}}}\n')
    return ''.join(out)


def build() -> dict[str, str]:
    """The two files' texts, by name."""
    return {'panels.js': bundle_js(), 'panels.css': panel_css(CSS.read_text())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='fail if the stored files differ from a new build')
    parser.add_argument('--arm3d', action='store_true', help='also write the 3D view: arm3d.js and arm3d/ (meshes)')
    args = parser.parse_args(argv)
    files = build()
    if args.arm3d:  # the module compared; the meshes only there (arm_meshes' own tests check that a build repeats)
        files['arm3d.js'] = bundle_arm3d()
    stale = [name for name, text in files.items() if not (OUT / name).exists() or (OUT / name).read_text() != text]
    if args.arm3d and not (OUT / 'arm3d' / 'so101.bin').exists():
        stale.append('arm3d/')
    if args.check:
        if stale:
            print(f'stale: {", ".join(stale)}; run python -m physai.book.widget_bundle', file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(exist_ok=True)
    for name, text in files.items():
        # whole or not at all: a kernel making a widget meanwhile (make test runs the chapters beside the tests that
        # build this) reads the old file or the new one, never half of one
        part = OUT / f'.{name}.{os.getpid()}'
        part.write_text(text)
        os.replace(part, OUT / name)
        print(f'{OUT / name}: {len(text.encode())} bytes')
    if args.arm3d:
        for name, size in build_arm3d().items():
            if name != 'arm3d.js':
                print(f'{OUT / name}: {size} bytes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
