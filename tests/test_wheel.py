"""physai's wheel (physai.book.wheel): what a release ships to pip and Colab users holds the panel widget's front end
(generated, not committed) and the shipped recording, and the widget works from it alone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile

import pytest

from physai.book import wheel, widget_bundle


@pytest.mark.slow
def test_the_wheel_holds_the_widget_front_end_and_the_widget_works_from_it(tmp_path):
    if not widget_bundle.ESBUILD.exists():
        pytest.skip(f'{widget_bundle.ESBUILD} is missing: npm ci')
    built = wheel.build(tmp_path / 'dist')
    assert built.name.startswith('physai-') and built.suffix == '.whl'
    with zipfile.ZipFile(built) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / 'site')
    assert set(wheel.MUST_HOLD) <= names
    assert not any(name.startswith(('tests/', 'book/', 'notebooks/')) for name in names), sorted(names)[:20]
    # physai from the wheel alone (its dependencies from this environment), away from the checkout
    env = dict(os.environ, PYTHONPATH=str(tmp_path / 'site'))
    code = ('import physai, physai.interface.widget as w; '
            'assert physai.__file__.startswith(%r), physai.__file__; '
            'print(type(w.servo_widget()).__name__)' % str(tmp_path / 'site'))
    done = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == 'PanelWidget', done.stderr[-2000:]


def test_the_wheel_is_built_from_what_git_tracks():
    names = wheel.tracked_files()
    assert 'pyproject.toml' in names and 'physai/__init__.py' in names
    assert not any(name.startswith('physai/interface/static/') for name in names)  # generated, never committed
