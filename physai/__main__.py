"""The book's experiments on the command line.

    python -m physai list              every experiment, one line each
    python -m physai NAME [ARG]        its table, fixed precision
    python -m physai NAME [ARG] --json the same rows as a JSON list of objects
"""

from __future__ import annotations

import argparse
import os
import sys

from physai.experiments import registry
from physai.engine.so101 import ModelUnavailable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m physai', description='Run one of the book\'s experiments and print its table.')
    parser.add_argument('name', nargs='?', help='an experiment name, or "list" to see them all')
    parser.add_argument('arg', nargs='?', default=None, help='the argument some experiments take')
    parser.add_argument('--json', action='store_true', help='print the rows as a JSON list of objects')
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # before argparse's own "required: name", which would hide what was wrong
        parser.error(f'unrecognized arguments: {" ".join(unknown)}')
    if args.name is None:
        parser.error('the following arguments are required: name (an experiment, or "list")')

    if args.name == 'list':
        if args.arg is not None:
            parser.error(f'list takes no argument, got {args.arg!r}')
        if args.json:
            print(registry.to_json([{'name': name, 'summary': registry.get(name).summary,
                                     'choices': list(registry.get(name).choices)}
                                    for name in registry.names()]))
            return 0
        for name in registry.names():
            exp = registry.get(name)
            usage, summary = name, exp.summary
            if exp.choices:
                usage += ' PARAM'
                summary += f' (PARAM: {", ".join(exp.choices)})'
            print(f'{usage:22s} {summary}')
        return 0
    try:
        exp = registry.get(args.name)
    except ValueError as err:
        print(f'error: {err}', file=sys.stderr)
        print('run "python -m physai list" to see them with what they compute', file=sys.stderr)
        return 2
    try:
        rows = exp.run(args.arg)
    except (ValueError, OSError, ModelUnavailable) as err:  # bad input, data or files: one line, not a traceback
        print(f'error: {err}', file=sys.stderr)
        return 2
    print(registry.to_json(rows) if args.json else exp.table(rows, args.arg))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader piped the table into head or less and closed it early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
