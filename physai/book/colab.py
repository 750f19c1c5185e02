"""The Colab set-up: the short first code cell of every chapter, and the work it hands over to this module.

On Google Colab (``'google.colab' in sys.modules``) the first cell, ``INSTALL_CELL``, does two things and nothing
else: it installs ``physai`` from the book's repository (``pip install --no-deps``, so nothing else moves yet), then
runs this file by its path and calls :func:`setup`. Anywhere else it does nothing and prints nothing, so nbval and
local runs are unaffected.

:func:`setup` turns the runtime into the book's: it removes a newer MuJoCo (4.x ships as ``mujoco`` +
``mujoco-core`` + ``mujoco-studio``), installs the pinned ``mujoco==3.17.0``, the pinned MuJoCo Menagerie package and
the rest of physai's requirements, printing each step, and ends by importing MuJoCo and printing its version. If a
package it changed was already imported in this session (a MuJoCo 4 imported before the cell ran, say), it raises
:class:`RestartNeeded`, which stops "Run all" at the first cell instead of letting every later cell fail.

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

PHYSAI_SPEC = f'physai @ git+{REPOSITORY_URL}'
"""What pip installs as physai on Colab."""

PINS = {'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4'}
"""Exact versions the book's numbers are for (requirements.txt and pyproject.toml say the same; a test checks)."""

MUJOCO_PARTS = ('mujoco', 'mujoco-core', 'mujoco-studio')
"""The distributions of a MuJoCo 4.x install: all of them go before the pinned 3.x goes in."""

LOADED_CHECK = ('mujoco', 'numpy', 'matplotlib', 'pandas')
"""Modules whose installed version must still be the imported one after the set-up (else: restart)."""

INSTALL_CELL: str = f'''\
# On Google Colab: install physai from the book's repository; its colab.py then installs the pinned MuJoCo
# 3.17.0 and stops "Run all" with an error if the runtime must restart. Elsewhere this cell does nothing.
import sys
if 'google.colab' in sys.modules:
    import importlib.util, os, runpy, subprocess
    subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', '--no-deps',
                    '{PHYSAI_SPEC}'], check=True)
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
        physai's requirements (pins exact) when any pin differs or any requirement is missing. Nothing when the
        runtime already matches.
    """
    commands = []
    parts = [name for name in MUJOCO_PARTS if installed.get(name)]
    if any(name != 'mujoco' for name in parts) or installed.get('mujoco') not in (None, PINS['mujoco']):
        commands.append(['uninstall', '--yes', *parts])
    wanted = requirements(requires)
    pins_differ = bool(commands) or any(installed.get(name) != version for name, version in PINS.items())
    missing = any(not installed.get(_name(requirement)) for requirement in wanted)
    if pins_differ or missing:
        commands.append(['install', '--progress-bar', 'off', *wanted])
    return commands


def restart_reasons(modules, installed) -> list[str]:
    """Modules imported before the set-up whose installed version has changed since (each needs a restart)."""
    reasons = []
    for name in LOADED_CHECK:
        loaded = getattr(modules.get(name), '__version__', None)
        if loaded is not None and loaded != installed.get(name):
            reasons.append(f'{name} {loaded} is imported but {installed.get(name)} is installed')
    return reasons


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


RESTART_ADVICE = ('Choose Runtime > Restart session, then run this cell again (it will only check), then the '
                  'rest of the notebook.')


def setup(modules=None, version_of=installed_version, pip=run_pip, say=print, requires=physai_requires) -> None:
    """On Colab, install the book's packages and check them; elsewhere do nothing and print nothing.

    Args:
        modules: the imported modules (default ``sys.modules``); ``google.colab`` among them means Colab.
        version_of: distribution name -> installed version or None.
        pip: ``pip(args, say)`` runs one pip command.
        say: prints one line.
        requires: returns physai's requirement strings.

    Raises:
        RestartNeeded: a package this set-up changed had already been imported in this session.
        RuntimeError: a pip command failed.
    """
    import time
    modules = sys.modules if modules is None else modules
    if 'google.colab' not in modules:
        return
    wanted = requires()
    names = {*MUJOCO_PARTS, *PINS, *(_name(r) for r in requirements(wanted))}
    commands = pip_commands({name: version_of(name) for name in sorted(names)}, wanted)
    for step, args in enumerate(commands, 1):
        start = time.monotonic()
        say(f'[{step}/{len(commands)}] pip {" ".join(args)}')
        pip(args, say)
        say(f'[{step}/{len(commands)}] done in {time.monotonic() - start:.0f} s')
    importlib.invalidate_caches()
    reasons = restart_reasons(modules, {name: version_of(name) for name in LOADED_CHECK})
    if reasons:
        raise RestartNeeded('RESTART NEEDED: ' + '; '.join(reasons) + '. ' + RESTART_ADVICE)
    import mujoco
    if mujoco.__version__ != PINS['mujoco']:
        raise RestartNeeded(f'RESTART NEEDED: MuJoCo {mujoco.__version__} is imported, the book needs '
                            f'{PINS["mujoco"]}. ' + RESTART_ADVICE)
    _enable_widgets(modules)
    say(f'Ready: MuJoCo {mujoco.__version__} and physai {version_of("physai")} are installed.')


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
