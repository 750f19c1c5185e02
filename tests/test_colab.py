"""The Colab set-up, simulated: a fake ``google.colab`` module and a fake pip that records its commands.

The first cell is executed from its exact source (``INSTALL_CELL``), as Colab would run it: it "installs" physai
(the fake pip), finds this repository's ``physai/book/colab.py`` by its path and calls ``setup()``; pip never runs.
"""

import importlib.metadata
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import types
from contextlib import redirect_stdout

import pytest
import yaml

from physai.book import colab
from physai.engine import datasets

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / 'notebooks').glob('*.ipynb'))
PHYSAI_SPEC = ('physai @ https://github.com/physai-book/simulated-actuators/releases/download/v0.1.0/'
               'physai-0.1.0-py3-none-any.whl')
PIP = [sys.executable, '-m', 'pip']
REQUIRES = ['mujoco==3.17.0', 'mujoco-menagerie==2026.10.4', 'numpy>=1.26', 'pandas>=2.0',
            'huggingface_hub>=0.20; extra == "hub"']
WANTED = ['mujoco==3.17.0', 'mujoco-menagerie==2026.10.4', 'numpy>=1.26', 'pandas>=2.0']


class FakePip:
    """Stands in for ``subprocess.Popen`` / ``subprocess.run`` running pip: records the command and updates the
    fake installed set."""

    def __init__(self, installed, *, output=('Collecting mujoco==3.17.0\n',), returncode=0):
        self.installed = installed
        self.output = output
        self.returncode = returncode
        self.commands = []

    def _apply(self, args):
        self.commands.append(list(args))
        action, packages = args[3], [a for a in args[4:] if not a.startswith('-') and a != 'off']
        for package in packages:
            if action == 'uninstall':
                self.installed[package] = None
            elif '==' in package or ' @ ' in package:  # a range (numpy>=1.26) leaves the real version
                name, _, version = package.replace(' @ ', '==').partition('==')
                self.installed[name] = version if name != 'physai' else '0.1.0'

    def __call__(self, args, **kwargs):  # Popen
        self._apply(args)
        process = types.SimpleNamespace(stdout=iter(self.output), returncode=self.returncode)
        process.wait = lambda: self.returncode
        return process

    def run(self, args, check=False, **kwargs):  # subprocess.run, as the cell calls it
        self._apply(args)
        if check and self.returncode:
            raise subprocess.CalledProcessError(self.returncode, args)
        return subprocess.CompletedProcess(args, self.returncode)


class ImportedMujoco(types.ModuleType):
    """What ``import mujoco`` gives a Colab kernel after the set-up: the version installed there, not the MuJoCo
    this test process runs on (4.x under ``make test-newest``)."""

    def __init__(self, installed: dict):
        super().__init__('mujoco')
        self.installed = installed

    @property
    def __version__(self):
        return self.installed.get('mujoco', colab.PINS['mujoco'])


@pytest.fixture(autouse=True)
def kernel_mujoco(monkeypatch):
    """The kernel's ``mujoco``: the pinned version unless a test's runtime installs another."""
    module = ImportedMujoco({})
    monkeypatch.setitem(sys.modules, 'mujoco', module)
    return module


@pytest.fixture
def runtime(monkeypatch, kernel_mujoco):
    """A fake runtime: ``installed`` overrides distribution versions; ``on_colab()`` adds ``google.colab``. It has
    no MuJoCo 4 parts (``mujoco-core``, ``mujoco-studio``) unless a test puts them in, whatever this environment
    has, and its kernel imports the ``mujoco`` it has installed."""
    installed = {'mujoco-core': None, 'mujoco-studio': None}
    kernel_mujoco.installed = installed
    real_version = importlib.metadata.version

    def version(name):
        if name in installed:
            if installed[name] is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return installed[name]
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, 'version', version)
    monkeypatch.setattr(importlib.metadata, 'requires', lambda name: list(REQUIRES))
    for name in (colab.BOOK_RUNTIME_ENV, colab.RESTART_ENV):  # the set-up marks os.environ: undone after the test
        monkeypatch.setenv(name, 'x')
        monkeypatch.delenv(name)
    fake = types.SimpleNamespace(installed=installed, pip=None)

    def use_pip(**kwargs):
        fake.pip = FakePip(installed, **kwargs)
        monkeypatch.setattr(subprocess, 'Popen', fake.pip)
        monkeypatch.setattr(subprocess, 'run', fake.pip.run)
        return fake.pip

    def on_colab():
        monkeypatch.setitem(sys.modules, 'google', types.ModuleType('google'))
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


BOOTSTRAP = PIP + ['install', '--quiet', '--no-deps', PHYSAI_SPEC]


def test_the_cell_is_short():
    assert len(colab.INSTALL_CELL.splitlines()) <= 12


def test_cell_does_nothing_and_prints_nothing_outside_colab(runtime):
    runtime.installed.update({'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'physai': None})
    assert 'google.colab' not in sys.modules
    assert run_cell() == ''
    assert runtime.pip.commands == []


def test_colab_with_mujoco_4_installs_physai_then_removes_mujoco_4_and_installs_the_pins(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'mujoco-studio': '4.0.0',
                              'mujoco-menagerie': None, 'physai': None})
    printed = run_cell()
    assert runtime.pip.commands == [
        BOOTSTRAP,
        PIP + ['uninstall', '--yes', 'mujoco', 'mujoco-core', 'mujoco-studio'],
        PIP + ['install', '--progress-bar', 'off', *WANTED],
    ]
    lines = printed.splitlines()
    assert lines[:3] == [
        "physai 0.1.0, the book's release v0.1.0: its numbers are for MuJoCo 3.17.0.",
        'This runtime has MuJoCo 4 (mujoco 4.0.0, mujoco-core 4.0.0, mujoco-studio 4.0.0): all of its parts are '
        'uninstalled first, since pip cannot safely change it in place (the parts share the one mujoco package).',
        '[1/2] pip uninstall --yes mujoco mujoco-core mujoco-studio']
    assert '    Collecting mujoco==3.17.0' in lines
    assert lines[-1] == 'Ready: MuJoCo 3.17.0 and physai 0.1.0 are installed.'
    assert os.environ[colab.BOOK_RUNTIME_ENV] == '3.17.0'  # the runtime is the book's now
    assert colab.RESTART_ENV not in os.environ


def test_colab_with_older_mujoco_3_replaces_it(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '3.3.0', 'mujoco-core': None, 'mujoco-studio': None,
                              'mujoco-menagerie': None, 'physai': None})
    run_cell()
    assert runtime.pip.commands[1:] == [
        PIP + ['uninstall', '--yes', 'mujoco'],
        PIP + ['install', '--progress-bar', 'off', *WANTED],
    ]


def test_second_run_after_install_only_checks(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '3.17.0', 'mujoco-core': None, 'mujoco-studio': None,
                              'mujoco-menagerie': '2026.10.4', 'physai': '0.1.0'})
    printed = run_cell()
    assert runtime.pip.commands == [BOOTSTRAP]
    assert printed == "physai 0.1.0, the book's release v0.1.0: its numbers are for MuJoCo 3.17.0.\nReady: MuJoCo 3.17.0 and physai 0.1.0 are installed.\n"


def test_a_mujoco_4_already_imported_stops_run_all_with_a_restart_error(runtime, monkeypatch):
    runtime.on_colab()
    runtime.installed.update({'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'mujoco-studio': '4.0.0',
                              'mujoco-menagerie': None, 'physai': None})
    monkeypatch.setitem(sys.modules, 'mujoco', types.SimpleNamespace(__version__='4.0.0'))
    with pytest.raises(RuntimeError, match='RESTART NEEDED: mujoco 4.0.0 is imported but 3.17.0 is installed'
                       ) as error:
        run_cell()
    assert type(error.value).__name__ == 'RestartNeeded'
    assert 'Runtime > Restart session, then run the first code cell again' in str(error.value)
    assert [args[3] for args in runtime.pip.commands] == ['install', 'uninstall', 'install']
    # a learner who runs on: import physai says the same line (the kernel is marked, the reason kept)
    with pytest.raises(colab.RestartNeeded) as again:
        colab.refuse_a_stale_runtime()
    assert str(again.value) == str(error.value)


def fake_setup(loaded: dict, installed: dict, *, environ=None, top_level=None, said=None):
    """Run setup() on a fake Colab: ``installed`` is the whole runtime (every distribution), the fake pip applies
    pins (``name==version``) to it."""
    def pip(args, say):
        for package in args[1:]:
            if args[0] == 'uninstall' and not package.startswith('-'):
                installed[package] = None
            elif '==' in package:
                name, _, version = package.partition('==')
                installed[name] = version
    environ = {} if environ is None else environ
    colab.setup(modules={'google.colab': types.ModuleType('google.colab'), **loaded}, version_of=installed.get,
                pip=pip, say=(said.append if said is not None else lambda line: None), requires=lambda: list(REQUIRES),
                snapshot=lambda names: {**installed, **{n: installed.get(n) for n in names}},
                top_level=top_level or (lambda name: [name.replace('-', '_')]), environ=environ)
    return environ


BOOK = {'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'numpy': '2.4.6', 'pandas': '3.1.1'}


def test_setup_raises_restart_needed_when_numpy_changed_under_it():
    loaded = {'numpy': types.SimpleNamespace(__version__='1.0')}
    environ = {}
    with pytest.raises(colab.RestartNeeded, match='numpy 1.0 is imported but 2.4.6 is installed'):
        fake_setup(loaded, dict(BOOK), environ=environ)
    assert environ == {colab.BOOK_RUNTIME_ENV: '3.17.0', colab.RESTART_ENV: 'numpy 1.0 is imported but 2.4.6 is '
                                                                           'installed'}


def test_a_required_package_upgraded_under_its_imported_module_needs_a_restart():
    """Colab's ipywidgets 7 imported, physai's requirement upgrades it: that too needs a restart (issue 30)."""
    requires = REQUIRES + ['ipywidgets>=8.1']
    installed = {**BOOK, 'ipywidgets': '7.7.1'}  # physai's MuJoCo already there: only ipywidgets is out of range

    def pip(args, say):
        if args[0] == 'install' and 'ipywidgets>=8.1' in args:
            installed['ipywidgets'] = '8.1.9'
    loaded = {'google.colab': types.ModuleType('google.colab'), 'ipywidgets': types.SimpleNamespace(__version__='7.7.1')}
    with pytest.raises(colab.RestartNeeded, match=r'RESTART NEEDED: ipywidgets 7\.7\.1 is imported but 8\.1\.9 is '
                                                  r'installed\. Choose Runtime > Restart session'):
        colab.setup(modules=loaded, version_of=installed.get, pip=pip, say=lambda line: None,
                    requires=lambda: requires, snapshot=lambda names: {n: installed.get(n) for n in {*installed, *names}},
                    top_level=lambda name: [name.replace('-', '_')], environ={})


def test_any_distribution_the_install_changed_under_an_imported_module_needs_a_restart():
    """A dependency pip moved on the way (no __version__ to compare, another distribution name than its module's):
    the snapshot before and after the install says it changed, and its module was imported."""
    installed = {**BOOK, 'pandas': None, 'websockets-legacy': '12.0'}

    def pip(args, say):
        installed.update({'pandas': '3.1.1', 'websockets-legacy': '13.1'})  # pulled along by the install
    loaded = {'google.colab': types.ModuleType('google.colab'), 'websockets': types.ModuleType('websockets')}
    with pytest.raises(colab.RestartNeeded, match='websockets was imported at websockets-legacy 12.0 and is now '
                                                  '13.1'):
        colab.setup(modules=loaded, version_of=installed.get, pip=pip, say=lambda line: None,
                    requires=lambda: list(REQUIRES), snapshot=lambda names: dict(installed),
                    top_level=lambda name: ['websockets'] if name == 'websockets-legacy' else [name], environ={})


def test_a_distribution_changed_but_not_imported_needs_no_restart():
    installed = {**BOOK, 'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'mujoco-studio': '4.0.0'}
    said = []
    environ = fake_setup({}, installed, said=said)
    assert said[-1].startswith('Ready: MuJoCo 3.17.0') and colab.RESTART_ENV not in environ
    assert installed['mujoco-core'] is None and installed['mujoco'] == '3.17.0'


def test_the_top_level_modules_of_a_distribution_come_from_its_metadata():
    assert colab.top_level_modules('mujoco') == ['mujoco']
    assert 'yaml' in colab.top_level_modules('PyYAML')
    assert colab.top_level_modules('no-such-distribution') == ['no_such_distribution']


# --- import physai in the book's Colab runtime ------------------------------------------------------------------

MUJOCO_4 = {'mujoco': types.SimpleNamespace(__version__='4.0.0')}


def test_physai_as_a_library_checks_nothing_whatever_mujoco_it_runs_on():
    """Not the book's runtime (no mark): MuJoCo 4 imported, or any other, import physai goes on."""
    assert colab.refuse_a_stale_runtime(modules=MUJOCO_4, environ={}, version_of={'mujoco': '4.0.0'}.get) is None
    assert colab.refuse_a_stale_runtime(modules={}, environ={}, version_of={'mujoco': '3.20.1'}.get) is None


def test_in_the_books_runtime_import_physai_refuses_another_mujoco_with_the_set_ups_line():
    marked = {colab.BOOK_RUNTIME_ENV: '3.17.0'}
    with pytest.raises(colab.RestartNeeded) as error:
        colab.refuse_a_stale_runtime(modules=MUJOCO_4, environ=marked, version_of={'mujoco': '3.17.0'}.get)
    assert str(error.value) == colab.restart_message(['mujoco 4.0.0 is imported but 3.17.0 is installed'])
    assert str(error.value).count('\n') == 0
    with pytest.raises(colab.RestartNeeded, match='mujoco 4.0.0 is installed but the book needs 3.17.0'):
        colab.refuse_a_stale_runtime(modules={}, environ=marked, version_of={'mujoco': '4.0.0'}.get)
    colab.refuse_a_stale_runtime(modules={}, environ=marked, version_of={'mujoco': '3.17.0'}.get)  # all well
    with pytest.raises(colab.RestartNeeded, match='RESTART NEEDED: numpy 1.0 is imported but 2.4.6 is installed'):
        colab.refuse_a_stale_runtime(modules={}, environ={**marked, colab.RESTART_ENV: 'numpy 1.0 is imported but '
                                                          '2.4.6 is installed'}, version_of={'mujoco': '3.17.0'}.get)


def test_import_physai_in_a_marked_runtime_with_another_mujoco_stops_with_one_line():
    """The real import, in a fresh interpreter: marked for a MuJoCo that is not this one, it stops at once with the
    set-up's line; unmarked (a pip install of physai), it imports."""
    code = 'import physai; print("imported")'
    env = {k: v for k, v in os.environ.items() if k not in (colab.BOOK_RUNTIME_ENV, colab.RESTART_ENV)}
    plain = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env, timeout=300)
    assert plain.returncode == 0 and plain.stdout.strip() == 'imported', plain.stderr[-2000:]
    marked = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300,
                            env={**env, colab.BOOK_RUNTIME_ENV: '9.9.9'})
    assert marked.returncode != 0
    installed = importlib.metadata.version('mujoco')  # not mujoco.__version__: a fake runtime may have replaced it
    last = marked.stderr.strip().splitlines()[-1]
    assert last.endswith('RestartNeeded: ' + colab.restart_message([f'mujoco {installed} is installed but '
                                                                    'the book needs 9.9.9']))
    assert 'mujoco' not in marked.stderr.split('RestartNeeded')[0].split('physai/__init__.py')[0]


def test_the_mark_that_import_physai_reads_is_the_one_setup_writes():
    source = (ROOT / 'physai' / '__init__.py').read_text(encoding='utf-8')
    assert f"_os.environ.get('{colab.BOOK_RUNTIME_ENV}')" in source


def test_a_failing_pip_stops_the_cell_with_one_line_that_says_what_to_do(runtime):
    runtime.on_colab()
    runtime.installed.update({'mujoco': None, 'physai': None})
    runtime.use_pip(output=('ERROR: No matching distribution found for mujoco==3.17.0\n',), returncode=1)
    with pytest.raises(SystemExit) as stopped:
        run_cell()
    assert str(stopped.value) == colab.PIP_FAILED
    assert '\n' not in colab.PIP_FAILED and colab.VERSION in colab.PIP_FAILED and 'rerun' in colab.PIP_FAILED
    runtime.installed.update({'physai': '0.1.0'})
    with pytest.raises(RuntimeError, match='pip install failed with exit code 1'):
        colab.setup(modules={'google.colab': None}, pip=colab.run_pip, say=lambda line: None, environ={})


def test_pip_output_is_shown_without_already_satisfied_lines(monkeypatch):
    said = []
    lines = ['Requirement already satisfied: numpy\n', 'Collecting mujoco==3.17.0\n', '\n',
             'Successfully installed mujoco-3.17.0\n']
    monkeypatch.setattr(subprocess, 'Popen', lambda args, **kwargs: types.SimpleNamespace(
        stdout=iter(lines), returncode=0, wait=lambda: 0))
    colab.run_pip(['install', 'mujoco==3.17.0'], said.append)
    assert said == ['    Collecting mujoco==3.17.0', '    Successfully installed mujoco-3.17.0']


@pytest.mark.parametrize('version, requirement, expected', [
    ('8.1.9', 'ipywidgets>=8.1', True), ('7.7.1', 'ipywidgets>=8.1', False), (None, 'pandas>=2.0', False),
    ('3.17.0', 'mujoco==3.17.0', True), ('3.17', 'mujoco==3.17.0', True), ('4.0.0', 'mujoco>=3.17,<5', True),
    ('5.0.0', 'mujoco>=3.17,<5', False), ('3.16.0', 'mujoco>=3.17,<5', False), ('1.2', 'x', True),
    ('2.4.6', 'numpy>=1.26; python_version >= "3.11"', True), ('3.1.1rc1', 'pandas>=3.1', True),
])
def test_an_installed_version_is_checked_against_the_requirements_range(version, requirement, expected):
    assert colab.satisfies(version, requirement) is expected


@pytest.mark.parametrize('installed, expected', [
    ({}, [['install', '--progress-bar', 'off', *WANTED]]),
    ({'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'numpy': '2.0', 'pandas': None},
     [['install', '--progress-bar', 'off', *WANTED]]),
    ({'mujoco': '3.17.0', 'mujoco-core': '4.0.1', 'mujoco-menagerie': '2026.10.4', 'numpy': '2.0', 'pandas': '3'},
     [['uninstall', '--yes', 'mujoco', 'mujoco-core'], ['install', '--progress-bar', 'off', *WANTED]]),
    ({'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'numpy': '2.0', 'pandas': '3'}, []),
    ({'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'numpy': '1.24.4', 'pandas': '3'},
     [['install', '--progress-bar', 'off', *WANTED]]),  # numpy below physai's range
])
def test_pip_commands_touch_only_what_differs_from_the_pins(installed, expected):
    assert colab.pip_commands(installed, REQUIRES) == expected


def test_colab_py_imports_only_the_standard_library():
    """The cell runs physai/book/colab.py by its path before MuJoCo is replaced: it must not import physai (which
    imports MuJoCo) or anything else outside the standard library."""
    code = ('import runpy, sys; before = set(sys.modules); '
            f'runpy.run_path({str(ROOT / "physai" / "book" / "colab.py")!r}); '
            'print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in '
            '("physai", "mujoco", "numpy", "matplotlib", "pandas", "yaml")))')
    result = subprocess.run([sys.executable, '-I', '-c', code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == '[]'


def test_repository_url_is_the_one_in_config():
    config = yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))
    assert colab.REPOSITORY_URL == config['repository']['url']


def test_colab_installs_the_release_in_config_which_is_the_version_tag_or_a_commit():
    """One version for physai and the book (pyproject.toml); the Colab cell installs the release _config.yml names:
    that version's tag or an exact commit, never a branch that moves under the edition."""
    import tomllib
    config = yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))
    version = tomllib.loads((ROOT / 'pyproject.toml').read_text(encoding='utf-8'))['project']['version']
    assert colab.VERSION == version
    assert colab.RELEASE == config['colab_release']
    assert colab.RELEASE == f'v{version}' or re.fullmatch(r'[0-9a-f]{40}', colab.RELEASE), colab.RELEASE
    assert f"'{colab.PHYSAI_SPEC}'" in colab.INSTALL_CELL
    if colab.RELEASE.startswith('v'):   # the release's wheel, the name make wheel gives it
        assert colab.PHYSAI_SPEC.endswith(f'/releases/download/{colab.RELEASE}/physai-{version}-py3-none-any.whl')
    else:
        assert colab.PHYSAI_SPEC.endswith(f'@{colab.RELEASE}')
    assert f'physai {version}' in colab.INSTALL_CELL


def test_pins_match_requirements_and_physai_accepts_them():
    """requirements.txt holds the book's exact pins, the same as the Colab set-up's; physai's own requirement (exact,
    or a range for library users) admits each pin."""
    import tomllib
    from packaging.requirements import Requirement
    pins = dict(line.split('#')[0].strip().split('==') for line in
                (ROOT / 'requirements.txt').read_text(encoding='utf-8').splitlines()
                if '==' in line.split('#')[0])
    dependencies = tomllib.loads((ROOT / 'pyproject.toml').read_text(encoding='utf-8'))['project']['dependencies']
    required = {Requirement(d).name: Requirement(d).specifier for d in dependencies}
    for name, version in colab.PINS.items():
        assert pins[name] == version
        assert version in required[name], f'pyproject.toml: {name}{required[name]} excludes the pin {version}'


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_every_chapter_starts_with_the_install_cell(path):
    cell = colab.first_code_cell(json.loads(path.read_text(encoding='utf-8')))
    assert cell is not None, f'{path.name} has no code cell'
    assert colab.cell_text(cell) == colab.INSTALL_CELL, (
        f'{path.name}: first code cell differs from physai.book.colab.INSTALL_CELL; '
        f'run `python -m physai.book.colab {path.relative_to(ROOT)}`')
    assert cell.get('outputs', []) == [], f'{path.name}: the install cell prints nothing outside Colab'
    assert colab.INSTALL_CELL_TAG in cell.get('metadata', {}).get('tags', []), (
        f'{path.name}: tag the install cell {colab.INSTALL_CELL_TAG!r} '
        f'(python -m physai.book.colab {path.relative_to(ROOT)})')


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


# --- the recording chapter 4 uses ships with physai --------------------------------------------------------------

SHARED_RECORDING = ROOT.parent / 'shared' / 'datasets' / 'so101_record_test'


def test_the_shipped_recording_is_the_real_one_with_its_provenance():
    path = datasets.shipped_recording()
    assert path == ROOT / 'physai' / 'data' / 'so101_record_test'
    provenance = (path / 'PROVENANCE.md').read_text(encoding='utf-8')
    assert 'Apache License 2.0' in provenance and 'SamueleSandrini/record-test' in provenance
    dataset = datasets.load_lerobot(path)
    assert (len(dataset), dataset.fps, dataset.robot_type) == (4, 30.0, 'so101_follower')
    assert sum(episode.nframe for episode in dataset) == 1492
    if SHARED_RECORDING.is_dir():
        originals = sorted(p for p in SHARED_RECORDING.rglob('*') if p.is_file())
        assert {p.relative_to(SHARED_RECORDING).parts[0] for p in originals} == {'README.md', 'meta', 'data'}
        # the recording's own files, byte for byte; the README is the book's, which states the units the values
        # prove (LeRobot's -100..100, not the degrees the shared copy's README first said) and may differ
        for original in originals:
            if original.name == 'README.md' and original.parent == SHARED_RECORDING:
                continue
            copy = path / original.relative_to(SHARED_RECORDING)
            assert copy.read_bytes() == original.read_bytes(), f'{copy} differs from {original}'
        readme = (path / 'README.md').read_text(encoding='utf-8')
        assert "LeRobot's −100..100 normalisation for the five arm joints, not degrees" in readme


def test_a_wheel_of_physai_carries_the_recording(tmp_path):
    """What ``pip install`` (and so Colab) gets: every file of the recording inside the wheel."""
    import shutil
    import zipfile
    source = tmp_path / 'source'  # a copy, so that the build leaves nothing in the repository
    shutil.copytree(ROOT / 'physai', source / 'physai', ignore=shutil.ignore_patterns('__pycache__'))
    for name in ('pyproject.toml', 'README.md'):
        shutil.copy(ROOT / name, source / name)
    result = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '--quiet',
                             '-w', str(tmp_path), str(source)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    wheel = zipfile.ZipFile(next(tmp_path.glob('physai-*.whl')))
    shipped = ROOT / 'physai' / 'data' / 'so101_record_test'
    wanted = {f'physai/data/so101_record_test/{p.relative_to(shipped)}' for p in shipped.rglob('*') if p.is_file()}
    assert wanted <= set(wheel.namelist())
    assert 'physai/book/colab.py' in wheel.namelist()


def test_on_colab_the_custom_widget_manager_is_switched_on_for_ipywidgets_8():
    calls = []
    google_colab = types.SimpleNamespace(output=types.SimpleNamespace(
        enable_custom_widget_manager=lambda: calls.append('enabled')))
    installed = {'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4', 'numpy': '2.4.6', 'pandas': '3.1.1'}
    said = []
    colab.setup(modules={'google.colab': google_colab}, version_of=installed.get, pip=lambda args, say: None,
                say=said.append, requires=lambda: list(REQUIRES), environ={})
    assert calls == ['enabled'] and said[-1].startswith('Ready: MuJoCo 3.17.0')
