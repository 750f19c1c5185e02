"""The Colab set-up: the first code cell of every chapter.

On Google Colab (``'google.colab' in sys.modules``) the cell turns the runtime into the book's: it removes a newer
MuJoCo (4.x ships as ``mujoco`` + ``mujoco-core`` + ``mujoco-studio``), installs the pinned ``mujoco==3.17.0``, the
pinned MuJoCo Menagerie package and ``physai`` from the book's repository, prints each step as it goes, and ends by
importing MuJoCo and printing its version, or by saying plainly that the runtime must be restarted. Anywhere else it
does nothing and prints nothing, so nbval and local runs are unaffected.

On Colab ``physai`` is not installed yet when the cell runs, so the cell cannot import it: ``INSTALL_CELL`` is the
source text of the block of this module between the two ``colab cell`` markers, followed by the call
``colab_setup()``. The functions are therefore the cell itself, testable here with a fake ``google.colab`` module
and a fake pip. ``tests/test_colab.py`` checks the commands and that every chapter's first code cell equals
``INSTALL_CELL``; ``python -m physai.colab notebooks/*.ipynb`` rewrites the first code cells after a change here.
"""

from __future__ import annotations

import json
import pathlib
import sys

# --- colab cell: begin ---
# Set-up for Google Colab: installs MuJoCo 3.17.0 and physai there; does nothing anywhere else.
import sys

REPOSITORY_URL = 'https://github.com/physai-book/simulated-actuators'
PINS = {'mujoco': '3.17.0', 'mujoco-menagerie': '2026.10.4'}
MUJOCO_4 = ('mujoco-core', 'mujoco-studio')  # installed beside `mujoco` by MuJoCo 4.x
LOADED_CHECK = ('mujoco', 'numpy', 'matplotlib')  # a change of these after their import needs a restart


def pip_commands(installed):
    """The pip commands (argument lists after ``python -m pip``) that give the book's packages.

    Args:
        installed: distribution name -> installed version (None when absent) for mujoco, mujoco-core,
            mujoco-studio, mujoco-menagerie and physai.
    """
    commands = []
    stale = [name for name in MUJOCO_4 if installed.get(name)]
    if stale or installed.get('mujoco') not in (None, PINS['mujoco']):
        stale = (['mujoco'] if installed.get('mujoco') else []) + stale
        commands.append(['uninstall', '--yes', *stale])
    wanted = [f'{name}=={version}' for name, version in PINS.items()
              if installed.get(name) != version or name in stale]
    if not installed.get('physai'):
        wanted.append(f'physai @ git+{REPOSITORY_URL}')
    if wanted:
        commands.append(['install', '--progress-bar', 'off', *wanted])
    return commands


def restart_reasons(modules, installed):
    """Modules imported before the install whose installed version has changed since (needs a restart)."""
    reasons = []
    for name in LOADED_CHECK:
        loaded = getattr(modules.get(name), '__version__', None)
        if loaded is not None and loaded != installed.get(name):
            reasons.append(f'{name} {loaded} is loaded but {installed.get(name)} is installed')
    return reasons


def installed_version(name):
    """The installed version of distribution ``name``, or None."""
    import importlib.metadata
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_pip(args, say):
    """Run ``python -m pip *args``, passing its output on line by line; raise if pip fails."""
    import subprocess
    process = subprocess.Popen([sys.executable, '-m', 'pip', *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        if line.strip() and not line.startswith('Requirement already satisfied'):
            say('    ' + line.rstrip())
    if process.wait() != 0:
        raise RuntimeError(f'pip {args[0]} failed with exit code {process.returncode}: see its output above')


def colab_setup(modules=None, version_of=installed_version, pip=run_pip, say=print):
    """On Colab, install the book's packages and check them; elsewhere do nothing and print nothing."""
    import importlib
    import time
    modules = sys.modules if modules is None else modules
    if 'google.colab' not in modules:
        return
    names = ('mujoco', *MUJOCO_4, 'mujoco-menagerie', 'physai')
    commands = pip_commands({name: version_of(name) for name in names})
    for step, args in enumerate(commands, 1):
        start = time.monotonic()
        say(f'[{step}/{len(commands)}] pip {" ".join(args)}')
        pip(args, say)
        say(f'[{step}/{len(commands)}] done in {time.monotonic() - start:.0f} s')
    importlib.invalidate_caches()
    reasons = restart_reasons(modules, {name: version_of(name) for name in LOADED_CHECK})
    if reasons:
        say('RESTART NEEDED: ' + '; '.join(reasons) + '.')
        say('Choose Runtime > Restart session, then run this cell again (it will only check).')
        return
    import mujoco
    if mujoco.__version__ != PINS['mujoco']:
        say(f'RESTART NEEDED: MuJoCo {mujoco.__version__} is loaded, the book needs {PINS["mujoco"]}.')
        say('Choose Runtime > Restart session, then run this cell again (it will only check).')
        return
    say(f'Ready: MuJoCo {mujoco.__version__} and physai {version_of("physai")} are installed.')
# --- colab cell: end ---


def _cell_source() -> str:
    text = pathlib.Path(__file__).read_text(encoding='utf-8')
    begin = text.index('# --- colab cell: begin ---\n') + len('# --- colab cell: begin ---\n')
    end = text.index('# --- colab cell: end ---')
    return text[begin:end].rstrip() + '\n\n\ncolab_setup()'


INSTALL_CELL: str = _cell_source()
"""The exact source of every chapter's first code cell."""


def first_code_cell(notebook: dict) -> dict | None:
    """The first code cell of a notebook (nbformat 4 JSON as a dict), or None when it has none."""
    return next((cell for cell in notebook.get('cells', []) if cell.get('cell_type') == 'code'), None)


def cell_text(cell: dict) -> str:
    """A cell's source as one string (nbformat stores either a string or a list of lines)."""
    source = cell.get('source', '')
    return source if isinstance(source, str) else ''.join(source)


INSTALL_CELL_TAG = 'hide-input'
"""The install cell's tag: the book page folds its source away (it prints nothing outside Colab)."""


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
    if cell_text(cell) == INSTALL_CELL and INSTALL_CELL_TAG in tags:
        return False
    cell['source'] = INSTALL_CELL.splitlines(keepends=True)
    cell['outputs'] = []
    if INSTALL_CELL_TAG not in tags:
        tags.append(INSTALL_CELL_TAG)
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + '\n', encoding='utf-8')
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m physai.colab NOTEBOOK...``: write ``INSTALL_CELL`` into each notebook's first code cell."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.split('\n\n')[0])
        print('usage: python -m physai.colab NOTEBOOK...')
        return 2
    for path in paths:
        print(f'{path}: {"updated" if update_notebook(path) else "already up to date"}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
