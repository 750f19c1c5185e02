"""The Colab edition: every chapter as a notebook that plain Markdown renders, generated from ``notebooks/``.

The chapters in ``notebooks/`` are written in MyST Markdown for the book (Jupyter Book, myst-nb): numbers glued
from the code (``{glue:text}`name:.2f```), answers in dropdown admonitions, labelled equations and references to
them. Google Colab renders plain Markdown, where all of that shows as raw source. This module writes the edition a
learner opens on Colab, ``colab/NN_name.ipynb``, from the same notebooks (they stay the one source authors edit):

- every glued number is written into the text, formatted as the book page shows it (myst-nb's
  ``format_plain_text``, the value stored in the notebook's glue output);
- ```` ```{admonition} Answer```` with ``:class: dropdown`` becomes ``<details><summary>Answer</summary>...``, other
  admonitions a quoted block that starts with the title in bold;
- a labelled equation ``$$ ... $$ (label)`` gets its number, ``\tag{N}``, numbered as the HTML book numbers them
  (``math_numfig``: one count over the pages of ``_toc.yml`` in order), and ``{eq}`label``` becomes ``(N)``;
- ``{ref}``, ``{doc}`` and links to other pages of the book become absolute links to the published book;
- cells tagged ``remove-cell`` are dropped, every stored output is cleared (the learner predicts before seeing),
  and the first code cell is :data:`physai.book.colab.INSTALL_CELL`;
- what only the published page can show is left out: a code cell that shows a live panel running MuJoCo in the
  reader's browser (``web.servo_live()``, ``web_arm.pd_live(...)``: any call of a ``*_live`` function of
  :mod:`physai.interface.web` or :mod:`physai.interface.web_arm`; on Colab it computes for nothing, shows nothing), any
  cell tagged ``book-only``, and the content of an ```` ```{only} html```` directive (Sphinx's ``only``: the
  edition is not an HTML build; ```` ```{only} colab```` is the edition's own text, which the HTML page leaves out);
- a code cell the page folds away (``hide-cell``: an exercise's worked answer) is folded on Colab too, as Colab
  folds code: a ``# @title`` line and ``cellView: form`` (with ``jupyter.source_hidden`` for JupyterLab); it
  still runs with the rest;
- under a chapter's title, its time and how that is estimated (:func:`physai.book.pace.statement`, the sentence the
  page shows there);
- a first Markdown cell says what the notebook is (the Build-it version of the chapter, which functions the
  learner writes, which MuJoCo the numbers are for) and links to the chapter's page;
- the code is the learner's, not the book's plumbing (:func:`learner_code`): calls that only glue numbers into the
  prose (``keep``, ``glue``) are left out, with an assignment nothing else reads any longer; an ``assert`` that checks
  what the text says becomes a printed check (✓ or ✗ and what it checks), and a code cell left with comments only
  is dropped (a Build-it note that would be alone in its cell becomes a line of text);
- Build it, for real: where the chapter prints the source of a function the reader is to write
  (``print(inspect.getsource(NAME))``, NAME plain or ``module.NAME``, for a NAME of
  :data:`physai.book.buildit.FUNCTIONS`), the edition gives instead a cell to complete (:func:`physai.book.buildit.stub`), a
  check against MuJoCo (:func:`physai.book.buildit.check`) and the worked solution folded in ``<details>``
  (:func:`physai.book.buildit.solution`: with its imports and physai's private helpers it calls, so that it runs
  as pasted into an empty cell); the rest of
  the cell runs as before, with physai's own function. Other printed sources (a runner, a method) stay as they are:
  the worked solution, shown.

``python -m physai.book.edition`` writes the edition into ``colab/``; ``python -m physai.book.edition --check`` exits 1 when
the committed edition differs from what it would write (``tests/test_edition.py`` checks the same).
"""

from __future__ import annotations

import ast
import copy
import json
import pathlib
import re
import sys
from collections.abc import Iterable

from physai.book import buildit
from physai.book.colab import INSTALL_CELL, PINS, RELEASE, REPOSITORY_URL, VERSION, first_code_cell


ROOT = pathlib.Path(__file__).resolve().parents[2]
"""The book's folder (the repository root, with ``_toc.yml`` and ``notebooks/``)."""

EDITION_DIR = 'colab'
"""The edition's folder, relative to the repository root."""

BOOK_URL = 'https://physai-book.github.io/simulated-actuators/'
"""The published book: GitHub Pages of ``REPOSITORY_URL`` (a test checks the two agree)."""

GLUE_MIME = 'application/papermill.record/text/plain'
"""The mime type of a glued value's text in a notebook's outputs (myst-nb's ``glue``)."""

ADMONITIONS = ('admonition', 'note', 'tip', 'hint', 'important', 'warning', 'caution', 'attention', 'danger',
               'error', 'seealso', 'margin', 'sidebar', 'dropdown', 'topic')

DROPPED_TAGS = ('remove-cell', 'book-only')
"""Cells with these tags are not in the edition (``book-only``: text or code about what only the HTML page has)."""

LIVE_CALL = re.compile(r'\bweb(?:_\w+)?\.(?P<name>\w+_live)\(')
"""A call of a browser live panel (:mod:`physai.interface.web`, :mod:`physai.interface.web_arm`,
:mod:`physai.interface.web_firmware`: a ``web*`` module's ``*_live``): the page's only."""

EDITION_TAGS = frozenset({'colab'})
"""The tags an ``{only}`` directive's expression sees as true in the edition (Sphinx's HTML build has ``html``)."""

FOLDED_TAGS = ('hide-cell',)
"""Code cells the page folds away; the edition folds them the way Colab does (a form title, the code hidden)."""

NOTEBOOK_ONLY_TAGS = ('nbval-ignore-output', 'nbval-skip', 'remove-stderr', 'remove-output', 'raises-exception')
"""Tags that only matter to nbval or to the book build: left out of the edition."""


# --- glued values -----------------------------------------------------------------------------------------------

def glued_values(notebook: dict) -> dict[str, str]:
    """name -> stored ``text/plain`` of every value glued in the notebook's outputs (myst-nb's ``glue``)."""
    values = {}
    for cell in notebook.get('cells', []):
        for output in cell.get('outputs', []):
            name = output.get('metadata', {}).get('scrapbook', {}).get('name')
            data = output.get('data', {})
            if name is None:
                continue
            text = data.get(GLUE_MIME, data.get('text/plain'))
            if text is not None:
                values[name] = text if isinstance(text, str) else ''.join(text)
    return values


def format_plain_text(text: str, fmt_spec: str) -> str:
    """A glued value as ``{glue:text}`name:fmt_spec``` shows it (myst-nb ``core.variables.format_plain_text``)."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if fmt_spec == '':
        return str(value)
    kind = fmt_spec[-1]
    if kind == 's':
        value = str(value)
    elif kind in 'bcdoxX':
        value = int(value)
    elif kind in 'eEfFgGn%':
        value = float(value)
    return format(value, fmt_spec)


def glue_text(role: str, content: str, values: dict[str, str], where: str) -> str:
    """The text of one glue role (``glue:text``, ``glue``, ``glue:``, ``glue:any``) with its content."""
    if role == 'glue:text':
        key, fmt = content.rsplit(':', 1) if ':' in content.split('::')[-1] else (content, 's')
    else:
        key, fmt = content, ''
    key = key.split('::')[-1]
    if key not in values:
        raise KeyError(f'{where}: no glued value {key!r} in the notebook\'s stored outputs '
                       '(run the notebook so that it glues it)')
    return format_plain_text(values[key], fmt)


# --- the book's pages: equation numbers, labels, titles ----------------------------------------------------------

def toc_pages(root: pathlib.Path = ROOT) -> list[str]:
    """The pages of ``_toc.yml``, root first, as paths without suffix (``notebooks/01_position_actuators``)."""
    import yaml
    toc = yaml.safe_load((root / '_toc.yml').read_text(encoding='utf-8'))
    pages = [toc['root']]

    def walk(entries):
        for entry in entries:
            if 'file' in entry:
                pages.append(entry['file'])
            walk(entry.get('chapters', []) + entry.get('sections', []))

    walk(toc.get('parts', []) + toc.get('chapters', []))
    return pages


def page_path(root: pathlib.Path, page: str) -> pathlib.Path:
    for suffix in ('.ipynb', '.md'):
        if (root / (page + suffix)).is_file():
            return root / (page + suffix)
    raise FileNotFoundError(f'_toc.yml lists {page!r}, but there is no {page}.ipynb or {page}.md')


def page_markdown(root: pathlib.Path, page: str) -> list[str]:
    """The Markdown of a page: the text of a .md file, or each Markdown cell of a notebook."""
    path = page_path(root, page)
    if path.suffix == '.md':
        return [path.read_text(encoding='utf-8')]
    notebook = json.loads(path.read_text(encoding='utf-8'))
    return [_text(cell) for cell in notebook['cells'] if cell['cell_type'] == 'markdown']


LABELLED_MATH = re.compile(r'^\$\$[ \t]*\n(?P<body>.*?)\n\$\$[ \t]*\((?P<label>[^)\s]+)\)[ \t]*$', re.S | re.M)
MATH_DIRECTIVE_LABEL = re.compile(r'^(`{3,}|:{3,})\{math\}.*?\n(?:.*\n)*?:label:\s*(\S+)', re.M)
TARGET = re.compile(r'^\((?P<label>[\w.-]+)\)=[ \t]*\n', re.M)
HEADING = re.compile(r'^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$', re.M)


class Book:
    """What the edition needs to know about the whole book: equation numbers, labels and page titles."""

    def __init__(self, root: pathlib.Path = ROOT, base_url: str = BOOK_URL):
        self.root = root
        self.base_url = base_url
        self.pages = toc_pages(root)
        self.equations: dict[str, int] = {}   # label -> number, in the book's order (math_numfig)
        self.targets: dict[str, tuple[str, str]] = {}   # label -> (page, title of the heading after it)
        self.titles: dict[str, str] = {}
        for page in self.pages:
            for text in page_markdown(root, page):
                found = [(m.start(), m.group('label')) for m in LABELLED_MATH.finditer(text)]
                found += [(m.start(), m.group(2)) for m in MATH_DIRECTIVE_LABEL.finditer(text)]
                for _, label in sorted(found):
                    self.equations.setdefault(label, len(self.equations) + 1)
                for m in TARGET.finditer(text):
                    heading = HEADING.search(text, m.end())
                    self.targets[m.group('label')] = (page, heading.group(1) if heading else m.group('label'))
                if page not in self.titles:
                    heading = HEADING.search(text)
                    if heading:
                        self.titles[page] = heading.group(1)

    def page_url(self, page: str, anchor: str = '') -> str:
        return f'{self.base_url}{page}.html' + (f'#{anchor}' if anchor else '')

    def resolve_page(self, current: str, target: str) -> str:
        """A page path (as in _toc.yml) from a reference written on page ``current`` (relative or absolute)."""
        target = target.split('#')[0]
        target = re.sub(r'\.(md|ipynb)$', '', target)
        if target.startswith('/'):
            page = target.lstrip('/')
        else:
            page = str(pathlib.PurePosixPath(current).parent / target)
            parts = []
            for part in page.split('/'):
                if part == '..':
                    parts.pop()
                elif part not in ('', '.'):
                    parts.append(part)
            page = '/'.join(parts)
        if page not in self.pages:
            raise KeyError(f'{current}: {target!r} is not a page of _toc.yml')
        return page


# --- Markdown: roles, directives, math ---------------------------------------------------------------------------

ROLE = re.compile(r'\{(?P<role>[a-zA-Z][\w:+-]*)\}(?P<ticks>`+)(?P<content>.*?)(?P=ticks)', re.S)
FENCE_OPEN = re.compile(r'^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$')
DIRECTIVE = re.compile(r'^\{(?P<name>[\w:-]+)\}[ \t]*(?P<argument>.*)$')
LINK = re.compile(r'(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)')


def _text(cell: dict) -> str:
    source = cell.get('source', '')
    return source if isinstance(source, str) else ''.join(source)


def _title_and_target(content: str) -> tuple[str | None, str]:
    m = re.match(r'^(?P<title>.*?)\s*<(?P<target>[^>]+)>$', content, re.S)
    return (m.group('title'), m.group('target')) if m else (None, content)


class Converter:
    """MyST Markdown of one page -> Markdown that CommonMark (Colab) renders."""

    def __init__(self, book: Book, page: str, values: dict[str, str]):
        self.book = book
        self.page = page
        self.values = values

    # roles
    def role(self, match: re.Match) -> str:
        role, content = match.group('role'), match.group('content')
        where = f'{self.page}: {match.group(0)}'
        if role.startswith('glue'):
            return glue_text(role, content, self.values, where)
        if role == 'eq':
            label = _title_and_target(content)[1]
            if label not in self.book.equations:
                raise KeyError(f'{where}: no labelled equation {label!r} in the book')
            return f'({self.book.equations[label]})'
        if role == 'ref':
            title, label = _title_and_target(content)
            if label not in self.book.targets:
                raise KeyError(f'{where}: no target ({label})= in the book')
            page, heading = self.book.targets[label]
            return f'[{title or heading}]({self.book.page_url(page, label)})'
        if role == 'doc':
            title, target = _title_and_target(content)
            page = self.book.resolve_page(self.page, target)
            return f'[{title or self.book.titles.get(page, page)}]({self.book.page_url(page)})'
        if role == 'math':
            return f'${content}$'
        if role in ('sub', 'sup'):
            return f'<{role}>{content}</{role}>'
        if role in ('abbr', 'kbd', 'term', 'code', 'samp', 'command', 'file', 'guilabel', 'menuselection'):
            return _title_and_target(content)[0] or re.sub(r'\s*\(.*\)$', '', content)
        raise ValueError(f'{where}: the Colab edition does not know the role {{{role}}}')

    def inline(self, text: str) -> str:
        """Roles and links of a stretch of Markdown that holds no fenced block."""
        return LINK.sub(self.link, ROLE.sub(self.role, text))

    def link(self, match: re.Match) -> str:
        text, target = match.group('text'), match.group('target')
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):  # https:, mailto: ...
            return match.group(0)
        if target.startswith('#'):
            return f'[{text}]({self.book.page_url(self.page, target[1:])})'
        page = self.book.resolve_page(self.page, target)
        anchor = target.split('#', 1)[1] if '#' in target else ''
        return f'[{text}]({self.book.page_url(page, anchor)})'

    # math
    def math(self, text: str) -> str:
        def numbered(match):
            label = match.group('label')
            return f'$$\n{match.group("body")}\n\\tag{{{self.book.equations[label]}}}\n$$'
        return LABELLED_MATH.sub(numbered, text)

    # blocks
    def convert(self, text: str) -> str:
        """A whole Markdown cell."""
        text = TARGET.sub('', text)
        lines = text.split('\n')
        out, plain = [], []
        k = 0
        while k < len(lines):
            m = FENCE_OPEN.match(lines[k])
            if not m or (m.group('fence')[0] == ':' and not m.group('info').startswith('{')):
                plain.append(lines[k])
                k += 1
                continue
            fence, info = m.group('fence'), m.group('info').strip()
            end = k + 1
            while end < len(lines) and not re.match(
                    rf'^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$', lines[end]):
                end += 1
            body = lines[k + 1:end]
            out.append(self.math(self.inline('\n'.join(plain))))
            plain = []
            directive = DIRECTIVE.match(info)
            if directive:
                out.append(self.directive(directive.group('name'), directive.group('argument').strip(), body))
            else:
                out.append('\n'.join([lines[k], *body, lines[end] if end < len(lines) else fence]))
            k = end + 1
        out.append(self.math(self.inline('\n'.join(plain))))
        return '\n'.join(out)

    def directive(self, name: str, argument: str, body: list[str]) -> str:
        options = {}
        while body and re.match(r'^:[\w-]+:', body[0]):
            key, _, value = body.pop(0)[1:].partition(':')
            options[key] = value.strip()
        content = self.convert('\n'.join(body)).strip('\n')
        classes = options.get('class', '').split()
        if name in ADMONITIONS:
            title = argument or ('' if name in ('admonition', 'margin', 'sidebar', 'topic') else name.capitalize())
            if name == 'dropdown' or 'dropdown' in classes:
                return (f'<details>\n<summary>{self.inline(title or "Details")}</summary>\n\n{content}\n\n'
                        '</details>')
            quoted = ([f'**{self.inline(title)}**', ''] if title else []) + content.split('\n')
            return '\n'.join('> ' + line if line else '>' for line in quoted)
        if name in ('figure', 'image'):
            alt = options.get('alt', content.split('\n')[0] if content else '')
            image = f'![{alt}]({self.asset_url(argument)})'
            return image + (f'\n\n*{content}*' if name == 'figure' and content else '')
        if name == 'only':
            return content if only_applies(argument, self.page) else ''
        if name == 'math':
            label = options.get('label')
            tag = f'\n\\tag{{{self.book.equations[label]}}}' if label else ''
            return f'$$\n{chr(10).join(body)}{tag}\n$$'
        if name in ('code', 'code-block', 'sourcecode', 'code-cell'):
            return '\n'.join([f'```{argument}', *body, '```'])
        raise ValueError(f'{self.page}: the Colab edition does not know the directive {{{name}}}')

    def asset_url(self, path: str) -> str:
        if re.match(r'^[a-z]+:', path):
            return path
        where = pathlib.PurePosixPath(self.page).parent / path
        return f'{REPOSITORY_URL.replace("github.com", "raw.githubusercontent.com")}/main/{where}'


def only_applies(expression: str, where: str = '') -> bool:
    """Whether an ``{only}`` directive's content is in the edition: its expression (tag names with ``and``, ``or``,
    ``not`` and parentheses, as Sphinx evaluates it) with :data:`EDITION_TAGS` true and every other tag false."""
    try:
        tree = ast.parse(expression.strip() or '_', mode='eval').body
    except SyntaxError:
        raise ValueError(f'{where}: {{only}} {expression!r} is not an expression of tags') from None

    def value(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id in EDITION_TAGS
        if isinstance(node, ast.BoolOp):
            values = [value(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        raise ValueError(f'{where}: {{only}} {expression!r} is not an expression of tags (names, and, or, not)')
    return value(tree)


def shows_only_a_live_panel(source: str, where: str = '') -> bool:
    """Whether a code cell shows a browser live panel (a ``*_live`` call of ``web`` or ``web_arm``): then it is the
    page's only and the edition leaves it out. Such a cell must hold nothing else than imports and that call, so that
    leaving it out loses nothing (ValueError otherwise, naming the cell)."""
    if not LIVE_CALL.search(source):
        return False
    for statement in ast.parse(source).body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.Expr) and LIVE_CALL.search(ast.unparse(statement)):
            continue
        raise ValueError(f'{where}: a cell that shows a browser live panel must hold only imports and the *_live '
                         f'call (the Colab edition leaves it out), but it also runs: {ast.unparse(statement)[:80]}')
    return True


def folded(source: str, title: str) -> tuple[str, dict]:
    """A code cell folded as Colab folds code: ``# @title`` first, ``cellView: form`` (and JupyterLab's
    ``jupyter.source_hidden``) in its metadata. Returns the source and the metadata to add."""
    return f'# @title {title}\n{source}', {'cellView': 'form', 'jupyter': {'source_hidden': True}}


# --- Build it, for real ------------------------------------------------------------------------------------------

GETSOURCE = re.compile(r'^print\(inspect\.getsource\((?P<name>[\w.]+)\)\)[ \t]*\n?', re.M)
"""A line printing the source of a function, plain (``servo_sag``) or from a module (``A.pd_torque``)."""


def build_it(source: str) -> tuple[list[dict], str]:
    """The "your turn" cells for a code cell that prints the source of functions the reader writes.

    Returns the cells to put before it (for each function: what to do, the stub, the check, the worked solution)
    and the cell's own source without those prints. A cell that prints no such function comes back unchanged.
    """
    printed = [name for name in GETSOURCE.findall(source) if name.rsplit('.', 1)[-1] in buildit.FUNCTIONS]
    names = [name.rsplit('.', 1)[-1] for name in printed]  # A.pd_torque -> pd_torque, defined by the stub
    if not names:
        return [], source
    cells = []
    for name in names:
        solution = buildit.solution(name).rstrip('\n')
        cells += [
            {'cell_type': 'markdown', 'metadata': {},
             'source': f'**Your turn: write `{name}`.** Complete the cell below: its docstring gives the equation. '
                       'Run it, then run the check after it, which compares your function with '
                       f'{buildit.compared_with(name)} and says '
                       'which input is wrong, or that it passes. The worked solution is folded below the check.'},
            {'cell_type': 'code', 'execution_count': None, 'metadata': {}, 'outputs': [],
             'source': buildit.stub(name)},
            {'cell_type': 'code', 'execution_count': None, 'metadata': {}, 'outputs': [],
             'source': f'from physai.book import buildit\n\nbuildit.check({name})'},
            {'cell_type': 'markdown', 'metadata': {},
             'source': f'<details>\n<summary>Worked solution</summary>\n\n```python\n{solution}\n```\n\n</details>'},
        ]
    rest = GETSOURCE.sub(lambda m: '' if m.group('name') in printed else m.group(0), source).strip('\n')
    own = ", ".join(names)
    if _comments_only(rest):  # nothing left to run: say it in the text, not in a cell of comments
        cells.append({'cell_type': 'markdown', 'metadata': {},
                      'source': f'From here on the chapter uses physai\'s own {", ".join(f"`{n}`" for n in names)} '
                                '(the worked solution), whatever your cells above define.'})
        return cells, rest
    note = f'# From here on the chapter uses physai\'s own {own} (the worked solution).\n'
    return cells, note + rest


# --- the learner's code: the book's plumbing out, its asserts printed ------------------------------------------

PLUMBING = ('keep', 'glue')
"""Calls that only glue numbers into the book's prose (:mod:`physai.book.prose`): the edition writes the numbers
into its text, so it leaves these calls out (and a loop or block that holds nothing else)."""


def _plumbing(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return isinstance(statement.value.func, ast.Name) and statement.value.func.id in PLUMBING
    if isinstance(statement, (ast.For, ast.While, ast.If, ast.With)):
        blocks = [statement.body] + ([statement.orelse] if getattr(statement, 'orelse', None) else [])
        return all(_plumbing(s) for block in blocks for s in block)
    return False


PURE_CALLS = frozenset({'next', 'len', 'max', 'min', 'sum', 'sorted', 'set', 'list', 'dict', 'tuple', 'float', 'int',
                        'abs', 'round', 'zip', 'enumerate', 'range'})
"""Builtins a dead assignment may call and still be left out (they have no effect beyond their value), with NumPy's
``np.*``."""


def _dead(statement: ast.stmt, used: frozenset[str] | None) -> bool:
    """A top-level assignment to names no cell of the edition reads, whose value only computes (the plumbing it fed
    is gone): ``position_row = next(...)`` that only a ``keep`` read."""
    if used is None or not isinstance(statement, ast.Assign):
        return False
    targets = [n for t in statement.targets for n in ast.walk(t)]
    if not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store)) for n in targets) \
            or any(isinstance(n, ast.Name) and n.id in used for n in targets):
        return False
    for node in ast.walk(statement.value):
        if isinstance(node, ast.Call):
            function = node.func
            pure = (isinstance(function, ast.Name) and function.id in PURE_CALLS) or (
                isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name)
                and function.value.id == 'np')
            if not pure:
                return False
    return True


def names_read(sources: Iterable[str]) -> frozenset[str]:
    """Every name the code cells read (loaded anywhere, in any cell)."""
    names = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return frozenset(names)


def learner_code(source: str, where: str = '', used: frozenset[str] | None = None) -> str:
    """A code cell as the edition gives it to the learner: the glue plumbing left out (:data:`PLUMBING`, and
    ``keep``/``glue`` from its imports), each ``assert`` turned into a printed check that says what it checks (its
    message, else its comment, else its condition) with ✓ or ✗, so that a check that fails on another machine
    prints instead of stopping the notebook. Given ``used`` (:func:`names_read` over the edition's cells), a top-level
    assignment that nothing reads any longer is left out too (:func:`_dead`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    lines = source.split('\n')
    edits: list[tuple[int, int, list[str]]] = []  # (first line, last line, replacement), 1-based, inclusive

    def visit(body):
        for statement in body:
            if _plumbing(statement) or (body is tree.body and _dead(statement, used)):
                edits.append((statement.lineno, statement.end_lineno, []))
            elif isinstance(statement, ast.Assert):
                edits.append((statement.lineno, statement.end_lineno, _printed_check(statement, lines)))
            elif isinstance(statement, ast.ImportFrom) and statement.module == 'physai.book.prose':
                kept = [a for a in statement.names if a.name not in PLUMBING]
                if len(kept) != len(statement.names):
                    indent = ' ' * statement.col_offset
                    replacement = ([f'{indent}from physai.book.prose import '
                                    + ', '.join(a.name + (f' as {a.asname}' if a.asname else '') for a in kept)]
                                   if kept else [])
                    edits.append((statement.lineno, statement.end_lineno, replacement))
            else:
                for field in ('body', 'orelse', 'finalbody', 'handlers'):
                    inner = getattr(statement, field, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], (ast.stmt, ast.excepthandler)):
                        visit(inner)
                        if field == 'handlers':
                            for handler in inner:
                                visit(handler.body)
    visit(tree.body)
    if not edits:
        return source
    for first, last, replacement in sorted(edits, reverse=True):
        lines[first - 1:last] = replacement
    text = '\n'.join(lines)
    return re.sub(r'\n{3,}', '\n\n', text).strip('\n')


def _printed_check(statement: ast.Assert, lines: list[str]) -> list[str]:
    indent = ' ' * statement.col_offset
    segment = '\n'.join(lines[statement.lineno - 1:statement.end_lineno])
    condition = ast.get_source_segment(segment.lstrip(), ast.parse(segment.lstrip()).body[0].test)
    if statement.msg is not None:
        said = ast.unparse(statement.msg)
    else:
        comment = re.search(r'#\s*(?P<text>.*)$', lines[statement.end_lineno - 1])
        said = repr(comment.group('text').strip() if comment else ' '.join(condition.split()))
    body = f"print('✓' if ({condition}) else '✗ not so:', {said})"
    return [indent + line if k == 0 else line for k, line in enumerate(body.split('\n'))]


def _comments_only(source: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith('#') for line in source.splitlines())


# --- one chapter ------------------------------------------------------------------------------------------------

def edition_name(page: str) -> str:
    """``notebooks/01_position_actuators`` -> ``colab/01_position_actuators.ipynb``."""
    return f'{EDITION_DIR}/{pathlib.PurePosixPath(page).name}.ipynb'


def chapter_number(page: str) -> int | None:
    """``notebooks/03_where_pd_runs`` -> 3 (None for a page without a number)."""
    match = re.match(r'(\d+)_', pathlib.PurePosixPath(page).name)
    return int(match.group(1)) if match else None


def header(book: Book, page: str) -> str:
    """The edition's first Markdown cell: what this notebook is (the Build-it version), where its page is, which
    MuJoCo it runs and what to run first."""
    names = buildit.CHAPTERS.get(chapter_number(page), ())
    functions = ', '.join(f'`{name}`' for name in names)
    build_it = (f'You write this chapter\'s Build-it functions yourself ({functions}): each has a cell to complete, '
                'a check that runs it against MuJoCo (or, where MuJoCo has no single field for it, against physai\'s '
                'own, tested against MuJoCo) and names the first input where it differs, and a folded worked '
                'solution. ' if names else '')
    book_title = book.titles.get(book.pages[0], 'the book')
    return (f'> **The Colab edition of "{book.titles.get(page, page)}": the Build-it version.** {build_it}The '
            f'chapter\'s page shows them finished, with every figure: [{book.titles.get(page, page)}]'
            f'({book.page_url(page)}), in [{book_title}]({book.base_url}).\n'
            '>\n'
            f'> Generated from `{page}.ipynb` of the book\'s release {RELEASE} (physai {VERSION}): the numbers are '
            'written into the text, the answers are folded (click to open) and no output is stored: predict, then '
            'run each cell and look.\n'
            '>\n'
            f'> **Run the first code cell first.** On Colab it installs the book\'s helper package `physai` {VERSION} '
            'and MuJoCo '
            f'{PINS["mujoco"]}, the version the book\'s numbers are for. A MuJoCo 4 already in the runtime (three pip '
            'packages: `mujoco`, `mujoco-core`, `mujoco-studio`) is uninstalled first, all three, since changing it '
            'in place with pip can leave it broken. If the cell stops with RESTART NEEDED, choose *Runtime > Restart '
            'session* and run it again: it then only checks.')


def convert_notebook(notebook: dict, book: Book, page: str) -> dict:
    """The Colab edition of one chapter (nbformat 4 JSON as a dict)."""
    values = glued_values(notebook)
    converter = Converter(book, page, values)
    install = first_code_cell(notebook)
    kept = [cell for k, cell in enumerate(notebook['cells'])
            if not any(tag in DROPPED_TAGS for tag in cell.get('metadata', {}).get('tags', []))
            and not (cell['cell_type'] == 'code' and cell is not install
                     and shows_only_a_live_panel(_text(cell), f'{page} cell {k}'))]
    cells = [{'cell_type': 'markdown', 'id': 'colab-edition', 'metadata': {}, 'source': header(book, page)}]
    used = names_read(learner_code(_text(cell)) for cell in kept if cell['cell_type'] == 'code')
    timed = False
    for k, cell in enumerate(kept):
        tags = cell.get('metadata', {}).get('tags', [])
        metadata = {'tags': [tag for tag in tags if tag not in NOTEBOOK_ONLY_TAGS]}
        if cell['cell_type'] == 'markdown':
            markdown = converter.convert(_text(cell))
            if chapter_number(page) is not None and not timed and re.match(r'# \S', markdown):
                markdown = _with_time(markdown, book.root, page)  # under the title, as on the page
                timed = True
            cells.append({'cell_type': 'markdown', 'source': markdown})
        elif cell['cell_type'] == 'code':
            source = INSTALL_CELL if cell is install else learner_code(_text(cell), f'{page} cell {k}', used)
            your_turn, source = build_it(source) if cell is not install else ([], source)
            for j, extra in enumerate(your_turn):
                cells.append({**extra, 'id': f'{cell.get("id") or len(cells)}-your-turn-{j}'})
            if _comments_only(source):  # all plumbing, or a print of what the learner now writes
                continue
            if any(tag in FOLDED_TAGS for tag in tags):
                source, form = folded(source, _fold_title(kept[k + 1:]))
                metadata.update(form)
            cells.append({'cell_type': 'code', 'execution_count': None, 'outputs': [], 'source': source})
        else:
            cells.append(copy.deepcopy(cell))
        if cell['cell_type'] in ('markdown', 'code'):
            cells[-1]['metadata'] = {key: value for key, value in metadata.items() if value}
        cells[-1]['id'] = cell.get('id') or f'cell-{len(cells) - 1}'
    cells = [cell for cell in cells if cell['cell_type'] != 'markdown' or cell['source'].strip()]
    for cell in cells:
        cell['source'] = cell['source'].splitlines(keepends=True)
    metadata = {key: notebook.get('metadata', {})[key] for key in ('kernelspec', 'language_info')
                if key in notebook.get('metadata', {})}
    metadata['colab'] = {'name': pathlib.PurePosixPath(page).name + '.ipynb', 'provenance': [],
                         'toc_visible': True}
    return {'cells': cells, 'metadata': metadata, 'nbformat': 4, 'nbformat_minor': 5}


def _with_time(markdown: str, root: pathlib.Path, page: str) -> str:
    """A chapter's title cell with its time under the title (:func:`physai.book.pace.statement`, as the page says it)."""
    from physai.book import pace
    time, how = pace.statement(page_path(root, page))
    title, _, rest = markdown.partition('\n')
    return f'{title}\n\n*{time}* {how}\n\n{rest.lstrip(chr(10))}'


def _fold_title(after: list[dict]) -> str:
    """The form title of a folded code cell: the code of the worked answer that follows it, or plain folded code."""
    following = next((_text(cell) for cell in after if cell['cell_type'] == 'markdown'), '')
    answer = re.match(r'\s*(`{3,}|:{3,})\{(admonition|dropdown)\}\s*(?P<title>[^\n]*)', following)
    if answer and 'answer' in answer.group('title').lower():
        title = answer.group('title').strip().lower()
        return f'The code of the {title} below (folded: run it, or show the code to read it)'
    return 'Folded code (run it, or show the code to read it)'


def chapters(book: Book) -> list[str]:
    """The notebook pages of the book, in the order of ``_toc.yml``."""
    return [page for page in book.pages if page_path(book.root, page).suffix == '.ipynb']


def render(book: Book | None = None) -> dict[str, str]:
    """Edition path (relative to the root) -> its file text, for every chapter."""
    book = Book() if book is None else book
    files = {}
    for page in chapters(book):
        notebook = json.loads(page_path(book.root, page).read_text(encoding='utf-8'))
        edition = convert_notebook(notebook, book, page)
        files[edition_name(page)] = json.dumps(edition, indent=1, ensure_ascii=False) + '\n'
    return files


def write(root: pathlib.Path = ROOT, *, check: bool = False, out=print) -> int:
    """Write (or, with ``check``, compare) the edition under ``root / EDITION_DIR``. Returns an exit status."""
    files = render(Book(root))
    stale = []
    for name, text in files.items():
        path = root / name
        if path.is_file() and path.read_text(encoding='utf-8') == text:
            continue
        stale.append(name)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding='utf-8')
    extra = sorted(str(p.relative_to(root)) for p in (root / EDITION_DIR).glob('*.ipynb')
                   if str(p.relative_to(root)) not in files) if (root / EDITION_DIR).is_dir() else []
    if check:
        for name in stale + extra:
            out(f'{name}: out of date (run python -m physai.book.edition)' if name in stale
                else f'{name}: no chapter in _toc.yml makes it (delete it)')
        return 1 if stale or extra else 0
    for name in extra:
        (root / name).unlink()
        out(f'{name}: deleted (no chapter makes it)')
    for name in files:
        out(f'{name}: {"written" if name in stale else "up to date"}')
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    """``python -m physai.book.edition [--check]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ['--check']):
        print('usage: python -m physai.book.edition [--check]')
        return 2
    return write(check=args == ['--check'])


if __name__ == '__main__':
    raise SystemExit(main())
