"""physai as a wheel with the panel widget's front end inside: what a release ships to pip and Colab users.

The widget's front end (``physai/interface/static/``: ``panels.js``, ``panels.css``, and the 3D view's ``arm3d.js``
with the arm's meshes in ``arm3d/``) is generated from the page's modules
by esbuild (:mod:`physai.book.widget_bundle`) and is not committed, so a ``pip install`` from the repository's source
would come without it, and a Colab or pip user has no Node to make it. :func:`build` makes it, then builds the wheel
from a copy of the files git tracks plus the bundle (the checkout stays clean: setuptools writes ``build/`` and
``*.egg-info`` where it builds), and checks that the wheel holds the bundle and the shipped recording.

Run: ``python -m physai.book.wheel [OUT_DIR]`` (``make wheel`` writes ``dist/``); prints the wheel's path.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from physai.book import widget_bundle

ROOT = widget_bundle.ROOT

MUST_HOLD = ('physai/interface/static/panels.js', 'physai/interface/static/panels.css',
             'physai/interface/static/arm3d.js', 'physai/interface/static/arm3d/so101.bin',
             'physai/interface/static/arm3d/so101.json', 'physai/data/so101_record_test/meta/info.json')
"""Files every wheel must hold: the widget's front end, its 3D view with the arm's meshes, and the shipped
recording's description."""


def tracked_files(root: Path = ROOT) -> list[str]:
    """The files git tracks under ``root`` (relative paths)."""
    done = subprocess.run(['git', '-C', str(root), 'ls-files', '-z'], capture_output=True, check=True)
    return [name for name in done.stdout.decode().split('\0') if name]


def build(out_dir: Path) -> Path:
    """Bundle the widget's front end, build physai's wheel into ``out_dir`` and check it holds :data:`MUST_HOLD`.
    Returns the wheel's path. Raises RuntimeError naming what a wheel lacks."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if widget_bundle.main(['--arm3d']) != 0:
        raise RuntimeError('the widget bundle was not built (physai.book.widget_bundle --arm3d)')
    with tempfile.TemporaryDirectory(prefix='physai-wheel-') as tmp:
        source = Path(tmp) / 'source'
        names = [n for n in tracked_files() if n in ('pyproject.toml', 'README.md') or n.startswith('physai/')]
        names += [str(p.relative_to(ROOT)) for p in sorted(widget_bundle.OUT.rglob('*')) if p.is_file()]
        for name in names:
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
        built = Path(tmp) / 'wheel'
        subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '--quiet',
                        '--wheel-dir', str(built), str(source)], check=True)
        wheels = sorted(built.glob('physai-*.whl'))
        if len(wheels) != 1:
            raise RuntimeError(f'pip wheel made {len(wheels)} physai wheels, expected 1: {wheels}')
        with zipfile.ZipFile(wheels[0]) as z:
            lacking = sorted(set(MUST_HOLD) - set(z.namelist()))
        if lacking:
            raise RuntimeError(f'the wheel {wheels[0].name} lacks {", ".join(lacking)}')
        target = out_dir / wheels[0].name
        shutil.copy2(wheels[0], target)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m physai.book.wheel', description=__doc__.split('\n\n')[0])
    parser.add_argument('out_dir', nargs='?', default=str(ROOT / 'dist'), help='where to write the wheel (dist/)')
    args = parser.parse_args(argv)
    print(build(Path(args.out_dir)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
