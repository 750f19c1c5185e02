"""The book's experiments by name: one function per table, shared by the notebooks and the command line.

Each experiment is a function returning rows (a list of dicts, one key per column). A chapter shows
the rows as a table (``physai.interface.tables.show``: on the page an HTML table, in text ``format_table(rows,
columns)``); ``python -m physai NAME`` prints the same text table; ``--json`` prints the rows. Because both call the
same function, the book and the command line cannot disagree.

Register an experiment with the decorator::

        @experiment('kp-sweep', summary='sag and rise time against kp',
                                columns=(('kp', '.0f'), ('sag_deg', '.4f')))
        def kp_sweep() -> list[dict]: ...

A column is (key, format), or (key, format, unit) where the key does not say its unit
(:mod:`physai.experiments.columns` reads names and units off the keys for the page's headers).

An experiment that takes one argument lists its allowed values in ``choices``
(``python -m physai actuator-sweep stiffness``).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from physai.experiments.columns import checked_spec


# Modules that register experiments, imported on first look-up so that `import physai` stays light.
PROVIDERS = (
    'physai.experiments.position_actuators',
    'physai.experiments.servo_panel',
    'physai.experiments.position_actuators_further',
    'physai.experiments.actuator_models',
    'physai.experiments.where_pd_runs',
    'physai.experiments.critical_rate',
    'physai.experiments.servo_sysid',
    'physai.experiments.servo_truth',
    'physai.experiments.gripper',
    'physai.experiments.servo_firmware',
)

_REGISTRY: dict[str, 'Experiment'] = {}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Experiment:
    """A named table of the book."""

    name: str
    """The command-line name, e.g. ``kp-sweep``."""
    summary: str
    """One line for ``python -m physai list``."""
    columns: tuple[tuple[str, ...], ...] | dict[str, tuple[tuple[str, ...], ...]]
    """(key, format) or (key, format, unit) per column; format is a format spec such as ``.3f``, or ``s`` for text;
    the unit, where the key does not say it (:mod:`physai.experiments.columns`). An experiment with choices may give
    a dict from each choice to its own columns."""
    func: Callable[..., list[dict]]
    """Computes the rows."""
    choices: tuple[str, ...] = ()
    """Allowed values of the one positional argument, or () when there is none."""

    def run(self, arg: str | None = None) -> list[dict]:
        """Compute the rows; ``arg`` must be one of ``choices`` when there are choices.

        Every row carries exactly the table's columns, in their order (what ``--json`` prints is what the table
        shows): a row that does not is a bug of the experiment, raised here, so that every chapter that runs an
        experiment checks it too.
        """
        if self.choices:
            if arg not in self.choices:
                raise ValueError(
                        f'{self.name}: PARAM must be one of {", ".join(self.choices)}, got {arg!r}')
            rows = self.func(arg)
        elif arg is not None:
            raise ValueError(f'{self.name} takes no argument, got {arg!r}')
        else:
            rows = self.func()
        keys = column_keys(self.columns_for(rows, arg))
        for i, row in enumerate(rows):
            if list(row) != keys:
                raise RuntimeError(f'{self.name}: row {i} has the keys {list(row)}, its table the columns {keys}')
        return rows

    def columns_for(self, rows: Sequence[dict], arg: str | None = None) -> tuple[tuple[str, ...], ...]:
        """The columns of the table for ``arg``, or, without it, those whose keys the rows carry."""
        if not isinstance(self.columns, dict):
            return self.columns
        if arg is not None:
            return self.columns[arg]
        keys = list(rows[0]) if rows else []
        for columns in self.columns.values():
            if column_keys(columns) == keys:
                return columns
        raise ValueError(f'{self.name}: no column set matches the row keys {keys}')

    def table(self, rows: Sequence[dict], arg: str | None = None) -> str:
        """The rows as a fixed-precision text table."""
        return format_table(rows, self.columns_for(rows, arg))


def experiment(name: str, *, summary: str, columns: Sequence[tuple[str, ...]],
                              choices: Sequence[str] = ()) -> Callable[[Callable], Callable]:
    """Register the decorated function as experiment ``name``."""

    def register(func: Callable) -> Callable:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f'experiment {name!r} is registered twice')
        if isinstance(columns, dict):
            if set(columns) != set(choices):
                raise ValueError(f'experiment {name!r}: columns per choice must name exactly {choices}')
            cols = {choice: checked_spec(c) for choice, c in columns.items()}
        else:
            cols = checked_spec(columns)
        _REGISTRY[name] = Experiment(name=name, summary=summary, columns=cols,
                                                                  func=func, choices=tuple(choices))
        return func

    return register


def _load_providers() -> None:
    for module in PROVIDERS:
        importlib.import_module(module)


def names() -> list[str]:
    """Every experiment's name, sorted."""
    _load_providers()
    return sorted(_REGISTRY)


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError listing the valid names otherwise."""
    _load_providers()
    if name not in _REGISTRY:
        raise ValueError(f'experiment must be one of {", ".join(sorted(_REGISTRY))}, got {name!r}')
    return _REGISTRY[name]


def run(name: str, arg: str | None = None) -> list[dict]:
    """The rows of experiment ``name``."""
    return get(name).run(arg)


def _cell(value: Any, fmt: str) -> str:
    if isinstance(value, (list, tuple)):
        return ' '.join(_cell(v, fmt) for v in value)
    if value is None:
        return '-'
    if isinstance(value, str) or fmt == 's':
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return format(value, fmt)


def column_keys(columns: Sequence[Sequence[str]]) -> list[str]:
    """The keys of a column spec, ``((key, format), ...)`` or ``((key, format, unit), ...)``."""
    return [column[0] for column in columns]


def cells(rows: Sequence[dict], columns: Sequence[Sequence[str]]) -> list[list[str]]:
    """Every row's cells as text, each in its column's format: what :func:`format_table` prints.

    A column is (key, format) or (key, format, unit); a list value prints as its items separated by spaces, None as
    ``-``, a text and a non-finite float as they are.

    Raises:
      ValueError: a column that is not (key, format) or (key, format, unit) of text, a row that is not a dict or
        lacks a column's key, or a value its column's format cannot print.
    """
    columns = checked_spec(columns)
    keys = column_keys(columns)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f'rows[{i}] must be a dict (one key per column), got {type(row).__name__}')
        missing = [key for key in keys if key not in row]
        if missing:
            raise ValueError(f'rows[{i}] must have a value for every column, got none for {", ".join(missing)} '
                             f'(it has {", ".join(map(str, row)) or "no keys"})')
    try:
        return [[_cell(row[c[0]], c[1]) for c in columns] for row in rows]
    except (TypeError, ValueError) as err:  # a text in a number column, or a format Python does not know
        raise ValueError(f'every value must fit its column\'s format ({", ".join(f"{c[0]}: {c[1]}" for c in columns)}), '
                         f'got: {err}') from None


def format_table(rows: Sequence[dict], columns: Sequence[Sequence[str]]) -> str:
    """Rows as a right-aligned text table with one header line, the keys; each cell uses its column's format.

    Raises:
      ValueError: as :func:`cells`.
    """
    lines_of_cells = cells(rows, columns)
    keys = column_keys(columns)
    widths = [max([len(key)] + [len(line[i]) for line in lines_of_cells]) for i, key in enumerate(keys)]
    lines = ['  '.join(key.rjust(w) for key, w in zip(keys, widths))]
    lines += ['  '.join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines_of_cells]
    return '\n'.join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, 'item'):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    return value


def to_json(rows: Sequence[dict]) -> str:
    """Rows as a JSON list of objects; NaN and infinities become null."""
    return json.dumps(_jsonable(list(rows)), indent=1)


# ---------------------------------------------------------------------------------------------
# Caching by dependencies


def cached(func: Callable | None = None, *, maxsize: int = 32) -> Callable:
    """Memoize ``func`` on the parameters its signature names; extra keyword arguments are ignored.

    Call it with a panel's whole ``values`` dict (``f(**values)``): only the named parameters form
    the cache key, so a change of any other control returns the stored result at once. The wrapper
    counts real computations in ``.calls`` (tests use it) and has ``.cache_clear()``.

    Use as ``@cached`` or ``@cached(maxsize=8)``.
    """
    if func is None:
        return functools.partial(cached, maxsize=maxsize)
    signature = inspect.signature(func)
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    store: OrderedDict = OrderedDict()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in names})
        bound.apply_defaults()
        key = tuple((k, bound.arguments[k]) for k in names if k in bound.arguments)
        if key in store:
            store.move_to_end(key)
            return store[key]
        result = func(*bound.args, **bound.kwargs)
        wrapper.calls += 1
        store[key] = result
        while len(store) > maxsize:
            store.popitem(last=False)
        return result

    def cache_clear() -> None:
        store.clear()
        wrapper.calls = 0

    wrapper.calls = 0
    wrapper.cache_clear = cache_clear
    wrapper.depends_on = tuple(names)
    return wrapper
