"""The Colab set-up cell, simulated: a fake ``google.colab`` module and a fake pip that records its commands.

The cell is executed from its exact source (``INSTALL_CELL``), as Colab would run it; pip never runs.
"""

import importlib.metadata
import io
import json
import pathlib
import subprocess
import sys
import types
from contextlib import redirect_stdout

import pytest
import yaml

from physai import colab

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / 'notebooks').glob('*.ipynb'))
PHYSAI_SPEC = 'physai @ git+https://github.com/physai-book/simulated-actuators'
PIP = [sys.executable, '-m', 'pip']


class FakePip:
    """Stands in for ``subprocess.Popen`` running pip: records the command and updates the fake installed set."""

    def __init__(self, installed, *, output=('Collecting mujoco==3.17.0\n',), returncode=0):
        self.installed = installed
        self.output = output
        self.returncode = returncode
        self.commands = []

    def __call__(self, args, **kwargs):
        self.commands.append(list(args))
        action, packages = args[3], [a for a in args[4:] if not a.startswith('-') and a != 'off']
        for package in packages:
            if action == 'uninstall':
                self.installed[package] = None
            else:
                name, _, version = package.replace(' @ ', '==').partition('==')
                self.installed[name] = version if name != 'physai' else '0.1.0'
        process = types.SimpleNamespace(stdout=iter(self.output), returncode=self.returncode)
        process.wait = lambda: self.returncode
        return process


@pytest.fixture
def runtime(monkeypatch):
    """A fake runtime: ``installed`` overrides distribution versions; ``on_colab()`` adds ``google.colab``."""
    installed = {}
    real_version = importlib.metadata.version

    def version(name):
        if name in installed:
            if installed[name] is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return installed[name]
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, 'version', version)
    fake = types.SimpleNamespace(installed=installed, pip=None)

    def use_pip(**kwargs):
        fake.pip = FakePip(installed, **kwargs)
        monkeypatch.setattr(subprocess, 'Popen', fake.pip)
        return fake.pip

    def on_colab():
        google = types.ModuleType('google')
        monkeypatch.setitem(sys.modules, 'google', google)
        monkeypatch.setitem(sys.modules, 'google.colab', types.ModuleType('google.colab'))

    fake.use_pip = use_pip
    fake.on_colab = on_colab
    use_pip()
    return fake


def run_cell() -> str:
    """Execute the install cell's exact source in a fresh namespace; return what it printed."""
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(colab.INSTALL_CELL, '<colab-install-cell>', 'exec'), {'__name__': '__main__'})
    return out.getvalue()


def test_cell_does_nothing_and_prints_nothing_outside_colab(runtime):
    runtime.installed.update({'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'physai': None})
    assert 'google.colab' not in sys.modules
    assert run_cell() == ''
    assert runtime.pip.commands == []


def test_colab_with_mujoco_4_removes_it_then_installs_the_pins_and_physai(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'mujoco-studio': '4.0.0',
                              'mujoco-menagerie': None, 'physai': None})
    printed = run_cell()
    assert runtime.pip.commands == [
        PIP + ['uninstall', '--yes', 'mujoco', 'mujoco-core', 'mujoco-studio'],
        PIP + ['install', '--progress-bar', 'off', 'mujoco==3.17.0', 'mujoco-menagerie==2026.10.4', PHYSAI_SPEC],
    ]
    lines = printed.splitlines()
    assert lines[0] == '[1/2] pip uninstall --yes mujoco mujoco-core mujoco-studio'
    assert '    Collecting mujoco==3.17.0' in lines
    assert lines[-1] == 'Ready: MuJoCo 3.17.0 and physai 0.1.0 are installed.'


def test_colab_with_older_mujoco_3_replaces_it(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '3.3.0', 'mujoco-core': None, 'mujoco-studio': None,
                              'mujoco-menagerie': None, 'physai': None})
    run_cell()
    assert runtime.pip.commands == [
        PIP + ['uninstall', '--yes', 'mujoco'],
        PIP + ['install', '--progress-bar', 'off', 'mujoco==3.17.0', 'mujoco-menagerie==2026.10.4', PHYSAI_SPEC],
    ]


def test_second_run_after_install_only_checks(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '3.17.0', 'mujoco-core': None, 'mujoco-studio': None,
                              'mujoco-menagerie': '2026.10.4', 'physai': '0.1.0'})
    printed = run_cell()
    assert runtime.pip.commands == []
    assert printed == 'Ready: MuJoCo 3.17.0 and physai 0.1.0 are installed.\n'


def test_a_mujoco_4_already_imported_asks_plainly_for_a_restart(runtime):
    loaded = {'google.colab': types.ModuleType('google.colab'),
              'mujoco': types.SimpleNamespace(__version__='4.0.0')}
    installed = {'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'numpy': None, 'matplotlib': None}
    commands, said = [], []

    def pip(args, say):
        commands.append(args)
        installed.update({'mujoco': '3.17.0', 'mujoco-core': None} if args[0] == 'install' else {})

    colab.colab_setup(modules=loaded, version_of=installed.get, pip=pip, say=said.append)
    assert [args[0] for args in commands] == ['uninstall', 'install']
    assert said[-2] == 'RESTART NEEDED: mujoco 4.0.0 is loaded but 3.17.0 is installed.'
    assert said[-1].startswith('Choose Runtime > Restart session')


def test_a_failing_pip_stops_the_cell_with_its_exit_code(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': None, 'physai': None})
    runtime.use_pip(output=('ERROR: No matching distribution found for mujoco==3.17.0\n',), returncode=1)
    with pytest.raises(RuntimeError, match='pip install failed with exit code 1'):
        run_cell()


def test_pip_output_is_shown_without_already_satisfied_lines(monkeypatch):
    said = []
    lines = ['Requirement already satisfied: numpy\n', 'Collecting mujoco==3.17.0\n', '\n',
             'Successfully installed mujoco-3.17.0\n']
    monkeypatch.setattr(subprocess, 'Popen', lambda args, **kwargs: types.SimpleNamespace(
        stdout=iter(lines), returncode=0, wait=lambda: 0))
    colab.run_pip(['install', 'mujoco==3.17.0'], said.append)
    assert said == ['    Collecting mujoco==3.17.0', '    Successfully installed mujoco-3.17.0']


@pytest.mark.parametrize('installed, expected', [
    ({}, [['install', '--progress-bar', 'off', 'mujoco==3.17.0', 'mujoco-menagerie==2026.10.4', PHYSAI_SPEC]]),
    ({'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4'}, [['install', '--progress-bar', 'off', PHYSAI_SPEC]]),
    ({'mujoco': '3.17.0', 'mujoco-core': '4.0.1', 'mujoco-menagerie': '2026.10.4', 'physai': '0.1.0'},
     [['uninstall', '--yes', 'mujoco', 'mujoco-core'], ['install', '--progress-bar', 'off', 'mujoco==3.17.0']]),
    ({'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'physai': '0.1.0'}, []),
])
def test_pip_commands_touch_only_what_differs_from_the_pins(installed, expected):
    assert colab.pip_commands(installed) == expected


def test_repository_url_is_the_one_in_config():
    config = yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))
    assert colab.REPOSITORY_URL == config['repository']['url']


def test_pins_match_requirements():
    pins = dict(line.split('#')[0].strip().split('==') for line in
                (ROOT / 'requirements.txt').read_text(encoding='utf-8').splitlines()
                if '==' in line.split('#')[0])
    for name, version in colab.PINS.items():
        assert pins[name] == version


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_chapter_starts_with_the_install_cell(path):
    cell = colab.first_code_cell(json.loads(path.read_text(encoding='utf-8')))
    assert cell is not None, f'{path.name} has no code cell'
    assert colab.cell_text(cell) == colab.INSTALL_CELL, (
        f'{path.name}: first code cell differs from physai.colab.INSTALL_CELL; '
        f'run `python -m physai.colab {path.relative_to(ROOT)}`')
    assert cell.get('outputs', []) == [], f'{path.name}: the install cell prints nothing outside Colab'
    assert colab.INSTALL_CELL_TAG in cell.get('metadata', {}).get('tags', []), (
        f'{path.name}: tag the install cell {colab.INSTALL_CELL_TAG!r} '
        f'(python -m physai.colab {path.relative_to(ROOT)})')


def test_update_notebook_writes_the_install_cell(tmp_path):
    path = tmp_path / 'chapter.ipynb'
    notebook = {'cells': [{'cell_type': 'markdown', 'metadata': {}, 'source': '# A chapter'},
                          {'cell_type': 'code', 'metadata': {}, 'source': '# colab-install',
                           'outputs': [], 'execution_count': None}],
                'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    path.write_text(json.dumps(notebook), encoding='utf-8')
    assert colab.update_notebook(path) is True
    cell = colab.first_code_cell(json.loads(path.read_text()))
    assert colab.cell_text(cell) == colab.INSTALL_CELL
    assert cell['metadata']['tags'] == ['hide-input']
    assert colab.update_notebook(path) is False
