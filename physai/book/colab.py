"""The Colab set-up: the short first code cell of every chapter, and the work it hands over to this module.

On Google Colab (``'google.colab' in sys.modules``) the first cell, ``INSTALL_CELL``, does two things and nothing
else: it installs ``physai`` from the book's release (its wheel, ``pip install --no-deps``, so nothing else moves yet), then
runs this file by its path and calls :func:`setup`. Anywhere else it does nothing and prints nothing, so nbval and
local runs are unaffected.

:func:`setup` turns the runtime into the book's: the book's numbers are for MuJoCo 3.17.0 (``PINS``). A runtime with
MuJoCo 4 has it as three pip distributions, ``mujoco`` 4.0.0 requiring ``mujoco-core`` and ``mujoco-studio`` of the
same version, all three installing into the one ``mujoco`` import package (their PyPI metadata and wheels: 164 of
``mujoco`` 3.17.0's files have the same paths as files of ``mujoco-core`` 4.0.0). Installing 3.17.0 over them with
pip replaces only the ``mujoco`` distribution and leaves ``mujoco-core`` owning files of the new install, so a later
change can break it: :func:`setup` first uninstalls every MuJoCo part, then installs the pinned ``mujoco==3.17.0``, the
pinned MuJoCo Menagerie package and the rest of physai's requirements, printing each step, and ends by importing
MuJoCo and printing its version. If a package it changed (any distribution whose version moved, dependencies
included) or a package physai needs was already imported in this session at another version (a MuJoCo 4 imported
before the cell ran, an older ipywidgets, say), it raises :class:`RestartNeeded`, which stops "Run all" at the first
cell instead of letting every later cell fail.

It also marks the runtime as the book's (the environment variable ``PHYSAI_BOOK_MUJOCO``, the pinned version, in this
kernel's process): there ``import physai`` runs :func:`refuse_a_stale_runtime`, which raises the same one-line
``RESTART NEEDED`` when the MuJoCo it would use is not the pinned one, or when the set-up said a restart is needed and
the learner ran on. physai as a library (``pip install physai``, any MuJoCo of its supported range) never sees that
variable, and its import checks nothing.

Why the cell runs this file by its path instead of ``from physai.book.colab import setup``: importing ``physai`` imports
MuJoCo, and a MuJoCo 4 imported before it is replaced would need a restart on every fresh runtime. So this module
imports nothing from ``physai`` and nothing outside the standard library (a test checks it).

``tests/test_colab.py`` checks the cell and :func:`setup` with a fake ``google.colab`` module and a fake pip, and
that every chapter's first code cell equals ``INSTALL_CELL``; ``python -m physai.book.colab notebooks/*.ipynb`` rewrites
the first code cells after a change here.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import sys


REPOSITORY_URL = 'https://github.com/physai-book/simulated-actuators'
"""The book's repository (``_config.yml``'s ``repository.url``; a test checks they agree)."""

VERSION = '0.1.0'
"""physai's and the book's version (``pyproject.toml``'s; a test checks they agree)."""

RELEASE = 'v0.1.0'
"""The release of the repository the Colab edition installs: ``_config.yml``'s ``colab_release``, a tag (``v`` and
:data:`VERSION`) or an exact commit, never a branch (a test checks both). Changed for a release only: see
``CHANGELOG.md``."""

WHEEL = f'physai-{VERSION}-py3-none-any.whl'
"""physai's wheel as ``make wheel`` names it, attached to the release (``CHANGELOG.md``'s release steps)."""

PHYSAI_SPEC = (f'physai @ {REPOSITORY_URL}/releases/download/{RELEASE}/{WHEEL}' if RELEASE.startswith('v')
               else f'physai @ git+{REPOSITORY_URL}@{RELEASE}')
"""What pip installs as physai on Colab: the release's wheel, which holds the panels' front end (bundled by esbuild
from the page's modules, never committed, so a source install from git has no panels: the widget then says which
files are missing). An exact commit as :data:`RELEASE` (a pre-release check) installs that commit's source, without
panels."""

PIP_FAILED = f'pip could not install physai {VERSION} (see above): check github.com is reachable, then rerun.'
"""The one line the first cell stops with when pip cannot install physai."""

PINS = {'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4'}
"""Exact versions the book's numbers are for (requirements.txt and pyproject.toml say the same; a test checks)."""

MUJOCO_PARTS = ('mujoco', 'mujoco-core', 'mujoco-studio')
"""The distributions of a MuJoCo 4.x install: all of them go before the pinned 3.x goes in."""

BOOK_RUNTIME_ENV = 'PHYSAI_BOOK_MUJOCO'
"""Set by :func:`setup` on Colab to the pinned MuJoCo version: marks this kernel as the book's Colab runtime, where
``import physai`` refuses another MuJoCo (:func:`refuse_a_stale_runtime`)."""

RESTART_ENV = 'PHYSAI_RESTART_NEEDED'
"""Set by :func:`setup` to the reasons it found when it raises :class:`RestartNeeded` (``import physai`` repeats them
until the runtime restarts, which clears it)."""

INSTALL_CELL: str = f'''\
# On Google Colab: install physai {VERSION} (release {RELEASE} of the book's repository); its colab.py then installs
# MuJoCo {PINS['mujoco']} (the book's numbers are for it), first uninstalling a MuJoCo 4 (changed in place with pip it
# can break), and stops "Run all" if the runtime must restart. Elsewhere this cell does nothing.
import sys
if 'google.colab' in sys.modules:
    import importlib.util, os, runpy, subprocess
    spec = '{PHYSAI_SPEC}'
    if subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps', spec]).returncode:
        raise SystemExit({PIP_FAILED!r})
    importlib.invalidate_caches()
    physai_dir = importlib.util.find_spec('physai').submodule_search_locations[0]
    runpy.run_path(os.path.join(physai_dir, 'book', 'colab.py'))['setup']()'''
"""The exact source of every chapter's first code cell (and of the Colab edition's)."""

INSTALL_CELL_TAG = 'hide-input'
"""The install cell's tag: the book page folds its source away (it prints nothing outside Colab)."""


class RestartNeeded(RuntimeError):
    """The runtime holds an imported package whose installed version has changed: restart, then rerun the cell."""


def _name(requirement: str) -> str:
    """The normalized distribution name of a requirement string (``'numpy>=1.26'`` -> ``'numpy'``)."""
    return re.split(r'[\s<>=!~;\[@(]', requirement.strip(), maxsplit=1)[0].lower().replace('_', '-')


def requirements(requires: list[str] | None) -> list[str]:
    """physai's own requirements (``importlib.metadata.requires('physai')``) without extras, pins first.

    The pins of ``PINS`` are always in, exact, whatever the metadata says.
    """
    wanted = [f'{name}=={version}' for name, version in PINS.items()]
    for requirement in requires or []:
        if 'extra ==' in requirement.replace('extra==', 'extra =='):
            continue
        if _name(requirement) not in PINS:
            wanted.append(requirement.split(';')[0].strip())
    return wanted


def pip_commands(installed: dict, requires: list[str] | None = None) -> list[list[str]]:
    """The pip commands (argument lists after ``python -m pip``) that give the book's packages.

    Args:
        installed: distribution name -> installed version (None when absent) for ``MUJOCO_PARTS``, the
            names of ``PINS`` and of physai's requirements.
        requires: physai's requirement strings, as ``importlib.metadata.requires('physai')`` gives them.

    Returns:
        An ``uninstall`` of every MuJoCo part when any part other than the pinned ``mujoco`` is there (MuJoCo 4's
        ``mujoco-core``, ``mujoco-studio``) or ``mujoco`` has another version; then one ``install`` of all of
        physai's requirements (pins exact) when any pin differs or any requirement is missing or outside its range
        (Colab's ipywidgets 7 against physai's ``ipywidgets>=8.1``). Nothing when the runtime already matches.
    """
    commands = []
    parts = [name for name in MUJOCO_PARTS if installed.get(name)]
    if any(name != 'mujoco' for name in parts) or installed.get('mujoco') not in (None, PINS['mujoco']):
        commands.append(['uninstall', '--yes', *parts])
    wanted = requirements(requires)
    pins_differ = bool(commands) or any(installed.get(name) != version for name, version in PINS.items())
    missing = any(not satisfies(installed.get(_name(requirement)), requirement) for requirement in wanted)
    if pins_differ or missing:
        commands.append(['install', '--progress-bar', 'off', *wanted])
    return commands


def satisfies(version: str | None, requirement: str) -> bool:
    """Whether an installed ``version`` (None: not installed) meets ``requirement``'s version clauses (``>=8.1``,
    ``==3.17.0``, ``>=3.17,<5``), comparing the numeric release parts (``8.1.9`` > ``8.1``); no clause: installed."""
    if not version:
        return False
    spec = requirement.split(';')[0][len(re.split(r'[\s<>=!~]', requirement, maxsplit=1)[0]):].strip()

    def release(text: str) -> tuple[int, ...]:
        numbers = [int(part) for part in re.match(r'[\d.]*', text.strip()).group(0).split('.') if part]
        while numbers and numbers[-1] == 0:
            numbers.pop()
        return tuple(numbers)
    have = release(version)
    for clause in filter(None, (c.strip() for c in spec.split(','))):
        operator, bound = re.match(r'(==|!=|>=|<=|~=|>|<)\s*(.+)', clause).groups()
        want = release(bound)
        if not {'==': have == want, '!=': have != want, '>=': have >= want, '<=': have <= want,
                '>': have > want, '<': have < want, '~=': have >= want and have[:len(want) - 1] == want[:-1]
                }[operator]:
            return False
    return True


def restart_reasons(modules, installed: dict, before: dict | None = None, needed=(), top_level=None) -> list[str]:
    """Why this session must restart: imported modules that are not what is installed now.

    Args:
        modules: the imported modules (``sys.modules``).
        installed: distribution name -> installed version (None when absent), after the set-up.
        before: the same before the set-up ran: a distribution whose version moved has changed under its imported
            modules, whether or not they carry a ``__version__`` (default: nothing changed).
        needed: the distributions physai needs; the module of each that has its name (``mujoco``, ``numpy``,
            ``ipywidgets``) must carry the installed version as its ``__version__`` (it was imported before an
            earlier run of the set-up changed it, say).
        top_level: distribution name -> its top-level import names (default :func:`top_level_modules`).

    Returns:
        One phrase per module: ``'mujoco 4.0.0 is imported but 3.17.0 is installed'``, or ``'ipywidgets was imported
        at ipywidgets 7.7.1 and is now 8.1.9'``.
    """
    top_level = top_level or top_level_modules
    changed = {name for name, was in (before or {}).items() if was is not None and installed.get(name) != was}
    reasons, seen = [], set()  # seen: modules decided (stale, or imported at the version installed now)
    for name in sorted({*needed, *changed}):
        module = name.replace('-', '_')
        loaded = getattr(modules.get(module), '__version__', None)
        if not isinstance(loaded, str):
            continue
        seen.add(module)
        if loaded != installed.get(name):
            reasons.append(f'{module} {loaded} is imported but {installed.get(name) or "nothing"} is installed')
    for name in sorted(changed):
        was = before[name]
        for module in top_level(name):
            if module in modules and module not in seen:
                reasons.append(f'{module} was imported at {name} {was} and is now '
                               f'{installed.get(name) or "uninstalled"}')
                seen.add(module)
    return reasons


def top_level_modules(name: str) -> list[str]:
    """The top-level import names of distribution ``name`` (``ipywidgets`` -> ``['ipywidgets']``,
    ``mujoco-core`` -> ``['mujoco']``), from the installed metadata; the name itself (``-`` as ``_``) when unknown."""
    import importlib.metadata
    global _TOP_LEVEL
    if _TOP_LEVEL is None:
        _TOP_LEVEL = {}
        for module, names in importlib.metadata.packages_distributions().items():
            for distribution in names:
                _TOP_LEVEL.setdefault(_name(distribution), []).append(module)
    return sorted(set(_TOP_LEVEL.get(_name(name), [])) | {_name(name).replace('-', '_')})


_TOP_LEVEL: dict[str, list[str]] | None = None


def installed_distributions(names=(), version_of=None) -> dict[str, str | None]:
    """Every installed distribution (normalized name -> version), with ``names`` looked up by ``version_of``."""
    import importlib.metadata
    found = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata['Name']
        if name:
            found[_name(name)] = distribution.version
    for name in names:
        found[name] = (version_of or installed_version)(name)
    return found


def restart_message(reasons: list[str]) -> str:
    """The one line that says the runtime must restart, and what to do (the set-up's and ``import physai``'s)."""
    return 'RESTART NEEDED: ' + '; '.join(reasons) + '. ' + RESTART_ADVICE


def installed_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    import importlib.metadata
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def physai_requires() -> list[str]:
    """physai's requirement strings from its installed metadata (empty when physai is not installed)."""
    import importlib.metadata
    try:
        return importlib.metadata.requires('physai') or []
    except importlib.metadata.PackageNotFoundError:
        return []


def run_pip(args: list[str], say) -> None:
    """Run ``python -m pip *args``, passing its output on line by line; raise if pip fails."""
    import subprocess
    process = subprocess.Popen([sys.executable, '-m', 'pip', *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        if line.strip() and not line.startswith('Requirement already satisfied'):
            say('    ' + line.rstrip())
    if process.wait() != 0:
        raise RuntimeError(f'pip {args[0]} failed with exit code {process.returncode}: see its output above')


RESTART_ADVICE = ('Choose Runtime > Restart session, then run the first code cell again (it will only check), then '
                  'the rest of the notebook.')


def setup(modules=None, version_of=installed_version, pip=run_pip, say=print, requires=physai_requires,
          snapshot=None, top_level=None, environ=None) -> None:
    """On Colab, install the book's packages and check them; elsewhere do nothing and print nothing.

    Args:
        modules: the imported modules (default ``sys.modules``); ``google.colab`` among them means Colab.
        version_of: distribution name -> installed version or None.
        pip: ``pip(args, say)`` runs one pip command.
        say: prints one line.
        requires: returns physai's requirement strings.
        snapshot: ``snapshot(names)`` -> every installed distribution's version, ``names`` by ``version_of``
            (default :func:`installed_distributions`); taken before and after pip to see what changed.
        top_level: distribution name -> its top-level import names (default :func:`top_level_modules`).
        environ: where the runtime is marked as the book's (default ``os.environ``).

    Raises:
        RestartNeeded: a package this set-up changed, or one physai needs, had already been imported in this session
            at another version.
        RuntimeError: a pip command failed.
    """
    import os
    import time
    modules = sys.modules if modules is None else modules
    if 'google.colab' not in modules:
        return
    environ = os.environ if environ is None else environ
    snapshot = snapshot or (lambda names: installed_distributions(names, version_of))
    environ[BOOK_RUNTIME_ENV] = PINS['mujoco']
    wanted = requires()
    names = sorted({*MUJOCO_PARTS, *PINS, *(_name(r) for r in requirements(wanted))})
    before = snapshot(names)
    current = {name: before.get(name) for name in names}
    say(f'physai {VERSION}, the book\'s release {RELEASE}: its numbers are for MuJoCo {PINS["mujoco"]}.')
    parts = [f'{name} {current[name]}' for name in MUJOCO_PARTS if current[name]]
    if current.get('mujoco-core') or current.get('mujoco-studio') or (
            current.get('mujoco') or PINS['mujoco']).split('.')[0] != PINS['mujoco'].split('.')[0]:
        say(f'This runtime has MuJoCo 4 ({", ".join(parts)}): all of its parts are uninstalled first, since pip '
            'cannot safely change it in place (the parts share the one mujoco package).')
    commands = pip_commands(current, wanted)
    for step, args in enumerate(commands, 1):
        start = time.monotonic()
        say(f'[{step}/{len(commands)}] pip {" ".join(args)}')
        pip(args, say)
        say(f'[{step}/{len(commands)}] done in {time.monotonic() - start:.0f} s')
    importlib.invalidate_caches()
    after = snapshot(names) if commands else before
    reasons = restart_reasons(modules, after, before, names, top_level)
    if reasons:
        environ[RESTART_ENV] = '; '.join(reasons)
        raise RestartNeeded(restart_message(reasons))
    import mujoco
    if mujoco.__version__ != PINS['mujoco']:
        reasons = [f'mujoco {mujoco.__version__} is imported but {PINS["mujoco"]} is the book\'s']
        environ[RESTART_ENV] = reasons[0]
        raise RestartNeeded(restart_message(reasons))
    _enable_widgets(modules)
    say(f'Ready: MuJoCo {mujoco.__version__} and physai {version_of("physai")} are installed.')


def refuse_a_stale_runtime(modules=None, environ=None, version_of=installed_version) -> None:
    """In the book's Colab runtime, refuse to go on with a MuJoCo that is not the pinned one; elsewhere do nothing.

    ``import physai`` calls this first. The runtime is the book's when :func:`setup` marked it
    (:data:`BOOK_RUNTIME_ENV`); a learner who ran on after ``RESTART NEEDED`` then gets the same one-line message from
    every cell that imports physai, instead of errors from a half-replaced MuJoCo. physai as a library, on any MuJoCo
    of its supported range, is never marked, and this returns at once.

    Raises:
        RestartNeeded: the set-up found a restart needed in this session; or the MuJoCo imported (or, not yet
            imported, installed) is not the pinned version.
    """
    import os
    environ = os.environ if environ is None else environ
    wanted = environ.get(BOOK_RUNTIME_ENV)
    if not wanted:
        return
    if environ.get(RESTART_ENV):
        raise RestartNeeded(restart_message([environ[RESTART_ENV]]))
    modules = sys.modules if modules is None else modules
    loaded = getattr(modules.get('mujoco'), '__version__', None)
    installed = version_of('mujoco')
    if loaded is not None and loaded != installed:
        raise RestartNeeded(restart_message([f'mujoco {loaded} is imported but {installed or "nothing"} is installed']))
    if (loaded or installed) != wanted:
        raise RestartNeeded(restart_message([f'mujoco {loaded or installed or "(none)"} is installed but the book '
                                             f'needs {wanted}']))


def _enable_widgets(modules) -> None:
    """Let Colab show ipywidgets 8 (physai needs >= 8.1; Colab ships 7.x and shows 8.x through its custom widget
    manager, which a notebook has to switch on)."""
    output = getattr(modules.get('google.colab'), 'output', None)
    if output is None:
        try:
            from google.colab import output
        except ImportError:  # not a real Colab (the tests' fake one)
            return
    enable = getattr(output, 'enable_custom_widget_manager', None)
    if enable is not None:
        enable()


colab_setup = setup  # the name of earlier versions of the cell


def first_code_cell(notebook: dict) -> dict | None:
    """The first code cell of a notebook (nbformat 4 JSON as a dict), or None when it has none."""
    return next((cell for cell in notebook.get('cells', []) if cell.get('cell_type') == 'code'), None)


def cell_text(cell: dict) -> str:
    """A cell's source as one string (nbformat stores either a string or a list of lines)."""
    source = cell.get('source', '')
    return source if isinstance(source, str) else ''.join(source)


def update_notebook(path: str | pathlib.Path) -> bool:
    """Make the first code cell of the notebook at ``path`` equal ``INSTALL_CELL``, tagged ``hide-input``.

    Returns True when the notebook changed.

    Raises:
        ValueError: if the notebook has no code cell.
    """
    path = pathlib.Path(path)
    notebook = json.loads(path.read_text(encoding='utf-8'))
    cell = first_code_cell(notebook)
    if cell is None:
        raise ValueError(f'notebook must have a code cell to hold the Colab set-up, got none in {path}')
    tags = cell.setdefault('metadata', {}).setdefault('tags', [])
    if cell_text(cell) == INSTALL_CELL and INSTALL_CELL_TAG in tags and not cell.get('outputs'):
        return False
    cell['source'] = INSTALL_CELL.splitlines(keepends=True)
    cell['outputs'] = []
    if INSTALL_CELL_TAG not in tags:
        tags.append(INSTALL_CELL_TAG)
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + '\n', encoding='utf-8')
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m physai.book.colab NOTEBOOK...``: write ``INSTALL_CELL`` into each notebook's first code cell."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.split('\n\n')[0])
        print('usage: python -m physai.book.colab NOTEBOOK...')
        return 2
    for path in paths:
        print(f'{path}: {"updated" if update_notebook(path) else "already up to date"}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
