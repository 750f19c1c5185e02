"""How long a chapter's core takes: an estimate from its text, its questions and its Build-it functions.

Every chapter states its time under its title, in one sentence (:func:`statement`) that the book's page
(``book/_ext/physai_book.py``) and the Colab edition (:mod:`physai.book.edition`) both write from this module, so
the two cannot disagree. The estimate walks through the core (everything before the heading marked "(optional)") the
way a learner does:

- **reading**: the words of its Markdown (the folded answers included) and of the code it shows, at
  :data:`READING_WPM`, the average silent reading rate of adults for English non-fiction (238 words a minute; most
  adults read between 175 and 300), from M. Brysbaert, "How many words do we read per minute? A review and
  meta-analysis of reading rate", *Journal of Memory and Language* 109 (2019) 104047;
- **questions**: every question whose answer is folded (the predictions, Check yourself), at
  :data:`QUESTION_MINUTES` each to think and write an answer down;
- **exercises**: every Build-it function of :data:`physai.book.buildit.CHAPTERS`, at :data:`FUNCTION_MINUTES` each
  (read its docstring, run its check, fix what it names) and :data:`LINE_MINUTES` per line of its worked solution's
  body (comments, docstring and the input checks a learner may leave out not counted).

The three rates of the last two items are assumptions, not measurements: they were set near what a walk-through as a
learner took (:data:`WALKTHROUGH_MINUTES`, issue 44: 22 to 26 minutes to read a core, 75 to 95 with the predictions
answered and the exercises written). The reading rate is Brysbaert's. The optional part is stated apart, at the
reading rate alone. ``python -m physai.book.pace``
prints the estimate of every chapter.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib
import re
import sys

from physai.book import buildit


READING_WPM = 238.0
"""Words a minute: the average silent reading rate for English non-fiction (Brysbaert 2019)."""

READING_WPM_RANGE = (175.0, 300.0)
"""Words a minute between which most adults read English non-fiction silently (Brysbaert 2019)."""

WALKTHROUGH_MINUTES = {'reading': (22.0, 26.0), 'everything': (75.0, 95.0)}
"""What a walk-through of the chapters as a learner took (issue 44): minutes to read a core, and to do it all (the
predictions answered, the exercises written). The assumed rates below were set near it."""

QUESTION_MINUTES = 2.0
"""Minutes to think about one question and write an answer down before opening the folded one (an assumption)."""

FUNCTION_MINUTES = 6.0
"""Minutes per Build-it function besides its lines: its docstring read, its check run, what it names fixed (an
assumption)."""

LINE_MINUTES = 0.5
"""Minutes per line of a Build-it function's body (an assumption)."""

ROUND_TO = 5
"""Stated times are rounded to this many minutes: the estimate is no finer."""

OPTIONAL = re.compile(r'^#{1,3} .*\(optional\)', re.M)
ANSWER = re.compile(r'^(`{3,}|:{3,})\{(admonition|dropdown)\}\s*Answer', re.M)
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
ROLE = re.compile(r'\{[\w:+-]+\}`([^`]*)`')
LINK = re.compile(r'\]\([^)\s]+\)')


@dataclasses.dataclass(frozen=True)
class Pace:
    """One chapter's core, counted, and the minutes the estimate gives it."""

    words: int
    """Words of the core's Markdown and of the code it shows."""
    questions: int
    """Questions with a folded answer."""
    functions: int
    """Build-it functions the learner writes."""
    lines: int
    """Lines of their worked solutions' bodies."""

    optional_words: int = 0
    """Words of the optional part (after the heading marked "(optional)"), counted as the core's are."""

    @property
    def optional_minutes(self) -> float:
        return self.optional_words / READING_WPM

    @property
    def reading_minutes(self) -> float:
        return self.words / READING_WPM

    @property
    def question_minutes(self) -> float:
        return self.questions * QUESTION_MINUTES

    @property
    def exercise_minutes(self) -> float:
        return self.functions * FUNCTION_MINUTES + self.lines * LINE_MINUTES

    @property
    def total_minutes(self) -> float:
        return self.reading_minutes + self.question_minutes + self.exercise_minutes

    def rounded(self, minutes: float) -> int:
        """``minutes`` to the nearest :data:`ROUND_TO` (at least one step)."""
        return max(ROUND_TO, ROUND_TO * round(minutes / ROUND_TO))


def words(text: str) -> int:
    """Words of Markdown as a reader meets them: a role counts as its content, a link as its text."""
    text = LINK.sub(']', ROLE.sub(lambda m: m.group(1).split(':')[0].replace('_', ' '), text))
    return len(WORD.findall(text))


def core_cells(notebook: dict) -> list[dict]:
    """The cells before the first heading marked "(optional)"."""
    return _split(notebook)[0]


def _split(notebook: dict) -> tuple[list[dict], list[dict]]:
    """The cells before the first heading marked "(optional)", and the rest (that heading's cell from it on)."""
    for k, cell in enumerate(notebook['cells']):
        source = _text(cell)
        match = OPTIONAL.search(source) if cell['cell_type'] == 'markdown' else None
        if match:
            return ([*notebook['cells'][:k], {**cell, 'source': source[:match.start()]}],
                    [{**cell, 'source': source[match.start():]}, *notebook['cells'][k + 1:]])
    return list(notebook['cells']), []


def _count(cells: list[dict]) -> tuple[int, int]:
    """Words (Markdown, and the code shown) and questions with a folded answer, of some cells."""
    count = questions = 0
    for cell in cells:
        tags = cell.get('metadata', {}).get('tags', [])
        source = _text(cell)
        if cell['cell_type'] == 'markdown':
            count += words(source)
            questions += len(ANSWER.findall(source))
        elif cell['cell_type'] == 'code' and not {'remove-cell', 'remove-input'} & set(tags):
            count += len(WORD.findall(source))
    return count, questions


def body_lines(name: str) -> int:
    """Lines of the body of Build-it function ``name``'s worked solution, without its docstring, comments, blank
    lines and the input checks (``checks.*`` calls, ``_check_*`` helpers, a bare ``raise`` guard)."""
    source = buildit._source(buildit.reference(name))
    definition = ast.parse(source).body[0]
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    count = 0
    for statement in body:
        segment = ast.get_source_segment(source, statement)
        call = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
        function = ast.unparse(call.func) if isinstance(call, ast.Call) else ''
        if function.startswith(('checks.', '_check')) or (
                isinstance(statement, ast.If) and all(isinstance(s, ast.Raise) for s in statement.body)):
            continue
        count += sum(1 for line in segment.splitlines() if line.strip() and not line.strip().startswith('#'))
    return count


def estimate(notebook: dict | str | pathlib.Path, chapter: int | None = None) -> Pace:
    """The pace of a chapter: its notebook (a dict, or the path of its ``.ipynb``) and its number (read from the
    file name ``NN_name.ipynb`` when it is a path)."""
    if not isinstance(notebook, dict):
        path = pathlib.Path(notebook)
        chapter = int(path.name[:2]) if chapter is None else chapter
        notebook = json.loads(path.read_text(encoding='utf-8'))
    core, optional = _split(notebook)
    count, questions = _count(core)
    names = buildit.CHAPTERS.get(chapter, ())
    return Pace(words=count, questions=questions, functions=len(names),
                lines=sum(body_lines(name) for name in names), optional_words=_count(optional)[0])


def statement(notebook: dict | str | pathlib.Path, chapter: int | None = None) -> tuple[str, str]:
    """What a chapter says under its title, plain text: its time (one sentence), and how that is estimated."""
    pace = estimate(notebook, chapter)
    work = (f', its {pace.questions} questions answered and its {pace.functions} Build-it functions written'
            if pace.functions else f', its {pace.questions} questions answered')
    text = (f'Time: about {pace.rounded(pace.total_minutes)} minutes for the core{work} '
            f'({pace.rounded(pace.reading_minutes)} of them reading)')
    if pace.optional_words:
        text += f', plus about {pace.rounded(pace.optional_minutes)} minutes to read the optional part'
    how = (f'Estimated from the chapter\'s text by physai.book.pace: the core\'s {pace.words:,} words (answers and '
           f'code shown included) at {READING_WPM:g} words a minute, the average for non-fiction in Brysbaert\'s '
           f'meta-analysis of reading rates (2019; most adults read {READING_WPM_RANGE[0]:g} to '
           f'{READING_WPM_RANGE[1]:g}); {QUESTION_MINUTES:g} minutes a question')
    if pace.functions:
        how += (f'; {FUNCTION_MINUTES:g} minutes a function plus {LINE_MINUTES:g} a line of its worked solution '
                f'({pace.lines} lines)')
    how += (f'. Those last rates are assumptions, near what a walk-through as a learner took '
            f'({WALKTHROUGH_MINUTES["everything"][0]:g} to {WALKTHROUGH_MINUTES["everything"][1]:g} minutes a '
            f'chapter); scale the total by your own pace.')
    return f'{text}.', how


def _text(cell: dict) -> str:
    source = cell.get('source', '')
    return source if isinstance(source, str) else ''.join(source)


def main(argv: list[str] | None = None) -> int:
    """``python -m physai.book.pace [NOTEBOOK...]``: each chapter's estimate (default: every ``notebooks/NN_*``)."""
    args = sys.argv[1:] if argv is None else argv
    root = pathlib.Path(__file__).resolve().parents[2]
    paths = [pathlib.Path(a) for a in args] or sorted((root / 'notebooks').glob('[0-9][0-9]_*.ipynb'))
    print(f'{"chapter":<28} {"words":>6} {"read":>6} {"quest.":>6} {"funcs":>5} {"lines":>5} {"exerc.":>6} '
          f'{"total":>6} {"stated":>6}')
    for path in paths:
        pace = estimate(path)
        print(f'{path.stem:<28} {pace.words:>6} {pace.reading_minutes:>6.1f} {pace.question_minutes:>6.1f} '
              f'{pace.functions:>5} {pace.lines:>5} {pace.exercise_minutes:>6.1f} {pace.total_minutes:>6.1f} '
              f'{pace.rounded(pace.total_minutes):>6}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
