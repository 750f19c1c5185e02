"""The book's result tables as a reader sees them: an HTML table that fits the page's column, the text table beside it.

A chapter shows a table with ``show(exp, rows)`` (a registered experiment, :mod:`physai.experiments.registry`) or
``show(columns, rows)`` (a column spec written in the chapter). The returned :class:`Table` carries both renderings,
as Jupyter displays an object:

- ``text/plain`` (``repr``): exactly :func:`physai.experiments.registry.format_table`, the text ``python -m physai NAME``
  prints, headed by the keys of ``--json``;
- ``text/html`` (``_repr_html_``): the same cells, in the same fixed formats, under readable headers with units,
  "sag (°)" for ``sag_deg`` (:mod:`physai.experiments.columns`); the key stays in the header's tooltip. Compact type,
  headers that wrap between words, numbers right-aligned in tabular figures, words left-aligned; in a box that
  scrolls sideways on its own when a phone is narrower than the table, so the page never widens (the book's page
  shows such a table in narrower parts instead, each with the first column: book/_static/physai.js). The style travels
  with the table (a ``<style>`` scoped to :data:`CSS_CLASS`), so it reads the same on the book's page, in Jupyter
  and on Colab, in light and dark themes (colours are the text's own, borders and stripes translucent grey).

Both are made from the rows alone, with no counter, id or time in them, so a stored output is the same on every run:
nbval compares the HTML as it compares the text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from physai.experiments.columns import Column, describe
from physai.experiments.registry import Experiment, cells, format_table

CSS_CLASS = 'physai-table'
"""The class of the box around every table; the style below applies inside it only."""

STYLE = (f'<style>'
         f'.{CSS_CLASS}{{overflow-x:auto;max-width:100%;margin:0.2em 0}}'
         f'.{CSS_CLASS} table{{border-collapse:collapse;border:none;margin:0;width:auto;table-layout:auto;'
         f'font-size:0.8rem;line-height:1.3;font-variant-numeric:tabular-nums;color:inherit;background:none}}'
         f'.{CSS_CLASS} th,.{CSS_CLASS} td{{padding:0.2em 0.4em;border:none;text-align:right;'
         f'vertical-align:bottom;background:none}}'
         f'.{CSS_CLASS} th{{font-weight:600;white-space:normal;overflow-wrap:normal;max-width:9em;'
         f'border-bottom:1px solid rgba(128,128,128,0.6)}}'
         f'.{CSS_CLASS} td{{white-space:nowrap;vertical-align:top}}'
         f'.{CSS_CLASS} .w{{text-align:left}}'
         f'.{CSS_CLASS} td.w{{white-space:normal;min-width:6em;max-width:28em}}'
         f'.{CSS_CLASS} th .u{{font-weight:400}}'
         f'.{CSS_CLASS} tbody tr:nth-child(even){{background:rgba(128,128,128,0.09)}}'
         f'</style>')
"""The tables' style, scoped to :data:`CSS_CLASS`; the same in every table (so each output stands alone)."""

NUMBER_LIKE = re.compile(r'^[\s<>≈~±+\-−]*(\d|\.\d|nan$|inf$)|^-$')
"""A cell that reads as a number: a figure, with a sign, a bound (``< 1e-12``) or an estimate (``≈ 3 (chaotic)``),
``nan``, ``inf``, or ``-`` for none."""


def is_words(column: Column, texts: Sequence[str]) -> bool:
    """Whether a column holds words (left-aligned on the page): a text column whose cells are not all numbers."""
    if column.fmt not in ('s', ''):
        return False
    return not all(NUMBER_LIKE.match(text) for text in texts)


class Table:
    """A table that Jupyter shows as HTML (``_repr_html_``) and as text (``repr``), from the same cells.

    Args:
      columns: the column spec, ``((key, format), ...)`` or ``((key, format, unit), ...)``.
      rows: one dict per row, a value for every key.

    Raises:
      ValueError: as :func:`physai.experiments.registry.cells` (a bad spec, a missing key, a value its format
        cannot print).
    """

    def __init__(self, columns: Sequence[Sequence[str]], rows: Sequence[dict]):
        self.columns = describe(columns)
        self.rows = list(rows)
        self.cells = cells(self.rows, columns)
        self.text = format_table(self.rows, columns)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html()

    def html(self) -> str:
        """The table as an HTML fragment: its style, then a box holding the table."""
        words = [is_words(c, [line[i] for line in self.cells]) for i, c in enumerate(self.columns)]
        head = ''.join(_header(c, w) for c, w in zip(self.columns, words))
        body = ''.join('<tr>' + ''.join(f'<td{WORDS_CLASS if w else ""}>{html.escape(text)}</td>'
                                        for text, w in zip(line, words)) + '</tr>' for line in self.cells)
        return (f'{STYLE}<div class="{CSS_CLASS}"><table><thead><tr>{head}</tr></thead>'
                f'<tbody>{body}</tbody></table></div>')


WORDS_CLASS = ' class="w"'
"""The attribute of a cell (and its header) in a column of words, left-aligned."""


SOFT_HYPHENS = {'frictionloss': 'friction\u00adloss', 'forcerange': 'force\u00adrange',
                'implicitfast': 'implicit\u00adfast', 'forcelimited': 'force\u00adlimited',
                'solreflimit': 'solref\u00adlimit', 'dampratio': 'damp\u00adratio'}
"""MuJoCo's compound names, with a soft hyphen where a narrow header may break them (shown only when it does)."""


def _header(column: Column, words: bool) -> str:
    label = html.escape(column.label)
    for word, hyphenated in SOFT_HYPHENS.items():
        label = label.replace(word, hyphenated)
    # a unit may break before a slash, (N·m / rad), when the column is narrower than the unit
    unit = f' <span class="u">({html.escape(column.unit).replace("/", "<wbr>/")})</span>' if column.unit else ''
    cls = WORDS_CLASS if words else ''
    return f'<th{cls} title="{html.escape(column.key)}">{label}{unit}</th>'


def show(experiment_or_columns: Experiment | Sequence[Sequence[str]], rows: Sequence[dict],
         arg: str | None = None) -> Table:
    """The rows as a :class:`Table`: the columns of a registered experiment (for ``arg``, when it has choices) or a
    column spec. The last line of a cell shows it; elsewhere in a cell, ``display(show(...))``.

    Raises:
      ValueError: as :class:`Table`.
    """
    if isinstance(experiment_or_columns, Experiment):
        columns = experiment_or_columns.columns_for(rows, arg)
    else:
        columns = experiment_or_columns
    return Table(columns, rows)
