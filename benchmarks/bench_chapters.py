"""Every chapter notebook executed top to bottom: seconds and the kernel's peak memory, chapter by chapter.

Each chapter runs in a fresh child process (this script with ``--one``), which executes a copy of the notebook with
nbclient, as ``pytest --nbval`` and ``/work/tools/execnb.py`` do, in a temporary directory: the kernel starts there
and the executed copy is written there, so ``notebooks/`` is never touched. A bar counts the chapter's cells.

Time: wall seconds from the kernel's start to its shutdown (kernel start-up included), as a reader running the
whole chapter waits for it.

CPU: the kernel's user and system seconds (``RUSAGE_CHILDREN``, as for memory below), summed over its threads. On a
shared machine this is the steadier figure: other work stretches the wall time far more than the CPU time.

Memory: the kernel's peak resident set, read after it has exited. The kernel is a child of the ``--one`` process,
which reaps it when nbclient shuts it down; ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` then holds the largest
peak resident set of any process it has reaped (the kernel, or anything the kernel started), measured by the
operating system over the kernel's whole life, so no short peak is missed as polling might miss it. Running each
chapter in a process of its own keeps one chapter's peak from carrying over into the next. The nbclient process
itself is not counted.

The machine may be shared: other work only ever adds time, never memory. Each chapter's line gives the machine's
load (1-minute average, ``os.getloadavg``) before and after it, the chapter's own two threads included, so a time
measured on a busy machine says so. The last line is

    chapters 01 <s> s, 02 <s> s, 03 <s> s, 04 <s> s, peak <MB> MB

with peak the largest of the chapters' peaks; a line per chapter before it also names its slowest cells (from
nbclient's execution timestamps). Run it from the repository root:

    .venv/bin/python benchmarks/bench_chapters.py [NOTEBOOK ...] [--cells N]

``--cells N`` runs each chapter's first N code cells only; ``--quick`` (as ``make test`` runs it, to keep it working)
is ``--cells 3``: every chapter's set-up, imports and first computation, the same lines in seconds, not the chapters'
figures.
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / 'notebooks').glob('[0-9][0-9]_*.ipynb'))
TIMEOUT_S = 1800  # per cell, as execnb
SLOWEST = 3  # cells listed per chapter


def run_one(notebook: pathlib.Path, workdir: pathlib.Path, cells: int | None = None) -> dict:
    """Execute ``notebook`` in ``workdir`` (this process's kernel child), then read the kernel's peak memory;
    ``cells``: only the first that many code cells (and the text between them)."""
    import nbformat
    from nbclient import NotebookClient
    from tqdm import tqdm

    nb = nbformat.read(notebook, as_version=4)
    if cells is not None:
        code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == 'code']
        if len(code) > cells:
            nb.cells = nb.cells[:code[cells]]
    ncode = sum(cell.cell_type == 'code' for cell in nb.cells)
    bar = tqdm(total=ncode, desc=notebook.name[:2], unit='cell', file=sys.stderr, ncols=80, leave=False)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name='python3',
                            resources={'metadata': {'path': str(workdir)}},
                            on_cell_executed=lambda cell, cell_index, execute_reply: bar.update(1))
    start = time.perf_counter()
    try:
        client.execute()  # starts the kernel, runs every cell, shuts the kernel down and reaps it
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    nbformat.write(nb, workdir / notebook.name)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = usage.ru_maxrss  # Linux: kB
    return dict(chapter=notebook.name[:2], seconds=seconds, cpu_seconds=usage.ru_utime + usage.ru_stime,
                peak_mb=peak_kb / 1024, slowest=slowest_cells(nb))


def slowest_cells(nb, n: int = SLOWEST) -> list[tuple[int, float, str]]:
    """The ``n`` slowest code cells: (index, seconds, first line), from nbclient's execution timestamps."""
    from datetime import datetime

    cells = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get('metadata', {}).get('execution', {})
        if cell.cell_type == 'code' and 'iopub.execute_input' in timing and 'shell.execute_reply' in timing:
            start, end = (datetime.fromisoformat(timing[k].replace('Z', '+00:00'))
                          for k in ('iopub.execute_input', 'shell.execute_reply'))
            first = next((line for line in cell.source.splitlines() if line.strip()), '')
            cells.append((index, (end - start).total_seconds(), first[:60]))
    return sorted(cells, key=lambda c: -c[1])[:n]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('notebooks', nargs='*', type=pathlib.Path, help='default: every chapter in notebooks/')
    parser.add_argument('--keep', type=pathlib.Path, help='keep the executed copies in this folder (not notebooks/)')
    parser.add_argument('--one', type=pathlib.Path, help=argparse.SUPPRESS)  # the child: one chapter
    parser.add_argument('--workdir', type=pathlib.Path, help=argparse.SUPPRESS)
    parser.add_argument('--cells', type=int, help="run only each chapter's first CELLS code cells")
    parser.add_argument('--quick', action='store_true', help='--cells 3: a check that it runs')
    args = parser.parse_args()
    if args.quick and args.cells is None:
        args.cells = 3
    if args.cells is not None and args.cells < 1:
        parser.error(f'--cells must be 1 or more, got {args.cells}')
    if args.one:
        print(json.dumps(run_one(args.one.resolve(), args.workdir, args.cells)))
        return
    from tqdm import tqdm

    notebooks = [nb.resolve() for nb in args.notebooks] or NOTEBOOKS
    if args.keep is not None and args.keep.resolve().is_relative_to(ROOT / 'notebooks'):
        parser.error(f'--keep must be outside notebooks/, got {args.keep}')
    rows = []
    with tempfile.TemporaryDirectory(prefix='bench_chapters_') as tmp:
        for notebook in tqdm(notebooks, desc='chapters', unit='nb', file=sys.stderr, ncols=80):
            workdir = (args.keep or pathlib.Path(tmp)) / notebook.stem
            workdir.mkdir(parents=True)
            load_before = os.getloadavg()[0]
            cells = [] if args.cells is None else ['--cells', str(args.cells)]
            done = subprocess.run([sys.executable, __file__, '--one', str(notebook), '--workdir', str(workdir), *cells],
                                  stdout=subprocess.PIPE, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row['load'] = (load_before, os.getloadavg()[0])
            rows.append(row)
            tqdm.write(f"{notebook.name}: {row['seconds']:.1f} s, kernel CPU {row['cpu_seconds']:.1f} s, "
                       f"kernel peak {row['peak_mb']:.0f} MB, load "
                       f"{row['load'][0]:.1f} -> {row['load'][1]:.1f}; slowest cells: "
                       + '; '.join(f'[{i}] {s:.1f} s {line!r}' for i, s, line in row['slowest']), file=sys.stdout)
    times = ', '.join(f"{r['chapter']} {r['seconds']:.0f} s" for r in rows)
    print(f"chapters {times}, peak {max(r['peak_mb'] for r in rows):.0f} MB")


if __name__ == '__main__':
    main()
