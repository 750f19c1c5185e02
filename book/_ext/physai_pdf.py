"""Sphinx extension of the book's PDF edition (``make pdf``, the LaTeX builder); it changes nothing in the HTML book.

What the pages show as HTML, the LaTeX builder drops (myst-nb picks, per output, the first of PDF, PNG, JPEG, LaTeX,
Markdown and plain text it finds). :class:`PrintHtmlOutputs`, for LaTeX builders only, replaces each HTML output of
the book's own kinds before that choice:

- a live panel's first-view block (``physai.interface.web``) by its picture, drawn beforehand by
  ``python -m physai.book.pdf panels`` (``_build/pdf-panels``: the panel's first view as the page draws it), the
  address that opens it live on the published page and a QR code of that address;
- the panel's engine block (hidden on the page) by nothing, and its suggestions ("Open the panel on a suggestion")
  by a list of the same suggestions, each with its full address;
- the outputs the page folds away (``hide-output``) and the cells it folds whole (``hide-cell``): printed where they
  are, which sphinx-jupyterbook-latex would drop;
- a table (``physai.interface.tables``, ``<div class="physai-table">``) by the same table in LaTeX: a ``tabular``
  with its header's units on a second line, shrunk to the text width when wider (``adjustbox``).

:class:`AnswersAtChapterEnd` moves the folded answers (admonitions of class ``dropdown``) of each page to a section
"Answers" at its end, numbered, each answer saying where its question is (the section) and leaving in its place a
line "Answer: see answer N at the end of the chapter" (the admonition's title first), linked both ways.

sphinx-jupyterbook-latex's class loads ``bbm`` (``\\RequirePackage{bbm}``), which only Debian's 1 GB
texlive-fonts-extra carries: ``book/latex/bbm.sty``, a stand-in mapping ``\\mathbbm`` to ``\\mathbb`` (the book writes
no ``\\mathbbm``), goes beside the ``.tex`` file (``latex_additional_files``), as do the panels' pictures.
"""

from __future__ import annotations

import html
import html.parser
import json
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging
from sphinx.util import texescape

LOGGER = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
LATEX_DIR = ROOT / 'book' / 'latex'
"""book/latex: the files copied beside the book's .tex file."""

PANELS_DIR = ROOT / '_build' / 'pdf-panels'
"""physai.book.pdf.PANELS_DIR: the panels' pictures, QR codes and their listing, panels.json."""

PREAMBLE = r'''
\usepackage{adjustbox}
\usepackage{booktabs}
% A printed output line may break after "=" too (a docstring's rule of ====, which has no other place to break;
% verbatimforcewraps acts on highlighted code only).
\makeatletter\g@addto@macro\sphinxbreaksafteractivelist{\do\=}\makeatother
'''

UNFOLDED = ('tag_hide-output', 'tag_hide-cell')
"""The cells whose output (or whole cell: an exercise's worked answer) the page folds behind a button: printed, as
sphinx-jupyterbook-latex would drop them (its MystNbPostTransform skips them in LaTeX); a ``hide-input`` cell's code
(set-up the page keeps out of sight) stays out."""

PANEL = re.compile(r'<div class="physai-panel" id="physai-panel-(?P<key>[\w-]+)"')
LIVE = re.compile(r'<div class="physai-live"')
TRY_LINKS = re.compile(r'<p class="physai-try-links">')
TABLE = re.compile(r'(?:<style>.*?</style>)?<div class="physai-table">', re.S)


def _ship_latex_files(app, config):
    extra = [str(path) for path in sorted(LATEX_DIR.glob('*.sty'))]
    if PANELS_DIR.is_dir():
        extra += [str(path) for path in sorted(PANELS_DIR.glob('*.png'))]
    config.latex_additional_files = list(config.latex_additional_files or []) + extra
    elements = dict(config.latex_elements or {})
    elements['preamble'] = elements.get('preamble', '') + PREAMBLE
    # Sphinx's default chapter heading (fncychap's Bjarne) spells the chapter counter as a word, "CHAPTER ONE", also
    # for chapter A (ChapterNumbers); Sonny prints the number as the contents do.
    elements.setdefault('fncychap', r'\usepackage[Sonny]{fncychap}')
    # A code line with no space to break at (a rule of ===== in a printed docstring) is broken anywhere rather than
    # run past the margin.
    elements['sphinxsetup'] = ', '.join(filter(None, [elements.get('sphinxsetup', ''), 'verbatimforcewraps=true']))
    config.latex_elements = elements


def _release_on_title_page(app):
    """The PDF's title page names the release: physai's version, the book's (pyproject.toml); the HTML book is left
    as it is."""
    if app.builder.name == 'latex' and not app.config.release:
        from importlib.metadata import version
        app.builder.context['release'] = version('physai')  # the builder read config.release before this event
        app.builder.context['releasename'] = app.builder.context.get('releasename') or 'Release'


def _book_url(config) -> str:
    """The published book's address: GitHub Pages of ``_config.yml``'s repository (physai.book.edition.BOOK_URL)."""
    from physai.book.edition import BOOK_URL
    return BOOK_URL


def tex(text: str) -> str:
    """``text`` escaped for LaTeX as Sphinx escapes it (its tables of replacements made first, as the LaTeX builder does)."""
    if not texescape.tex_replace_map:
        texescape.init()
    return texescape.escape(text)


class _Table(html.parser.HTMLParser):
    """The header cells, rows and wide (text) columns of a physai table's HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.header: list[tuple[str, str]] = []  # (name, unit)
        self.rows: list[list[str]] = []
        self.wide: set[int] = set()
        self._cell = None
        self._unit = False
        self._in_head = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == 'thead':
            self._in_head = True
        elif tag == 'tr' and not self._in_head:
            self.rows.append([])
        elif tag in ('th', 'td'):
            self._cell = ['', '']
            if tag == 'td' and 'w' in (attrs.get('class') or '').split():
                self.wide.add(len(self.rows[-1]))
        elif tag == 'span' and 'u' in (attrs.get('class') or '').split():
            self._unit = True

    def handle_endtag(self, tag):
        if tag == 'thead':
            self._in_head = False
        elif tag == 'span':
            self._unit = False
        elif tag in ('th', 'td') and self._cell is not None:
            name, unit = (part.strip() for part in self._cell)
            if tag == 'th':
                self.header.append((name, unit))
            else:
                self.rows[-1].append(name)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1 if self._unit else 0] += data


def table_latex(source: str) -> str:
    """A physai table's HTML as LaTeX: a ``tabular`` (numbers right-aligned, text columns wrapped at 14 em) with the
    units on a second header line, rules from booktabs, shrunk to the text width when wider."""
    table = _Table()
    table.feed(source)
    columns = len(table.header) or max((len(row) for row in table.rows), default=0)
    spec = ''.join(r'>{\raggedright\arraybackslash}p{14em}' if i in table.wide else 'r' for i in range(columns))

    def head(name, unit):
        lines = [tex(name)] + ([tex(unit)] if unit else [])
        return r'\begin{tabular}[b]{@{}c@{}}' + r'\\'.join(lines) + r'\end{tabular}'

    body = [r'\begin{center}\small', r'\begin{adjustbox}{max width=\linewidth}', rf'\begin{{tabular}}{{{spec}}}',
            r'\toprule']
    if table.header:
        body += [' & '.join(head(*cell) for cell in table.header) + r' \\', r'\midrule']
    body += [' & '.join(tex(cell) for cell in row) + r' \\' for row in table.rows]
    body += [r'\bottomrule', r'\end{tabular}', r'\end{adjustbox}', r'\end{center}']
    return '\n'.join(body) + '\n'


class _Links(html.parser.HTMLParser):
    """The (label, href) of every link, and the text before the first."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self.lead = ''
        self._href = None

    def handle_starttag(self, tag, attrs):
        if tag == 'a':
            self._href = dict(attrs).get('href', '')
            self.links.append(['', self._href])

    def handle_endtag(self, tag):
        if tag == 'a':
            self._href = None

    def handle_data(self, data):
        if self._href is not None:
            self.links[-1][0] += data
        elif not self.links:
            self.lead += data


def _html_of(bundle) -> str | None:
    for child in bundle.children:
        if child.get('mime_type') == 'text/html':
            return ''.join(node.astext() for node in child.findall(nodes.raw))
    return None


def _pages(document, default: str) -> dict[int, str]:
    """id(node) -> the page (docname) each node of the assembled book comes from. Found going down from each page's
    ``start_of_file``, not up from the node: Sphinx's ``inline_all_toctrees`` moves a page's nodes under its
    ``start_of_file`` without setting their ``parent``."""
    pages = {id(node): default for node in document.findall()}
    for start in document.findall(addnodes.start_of_file):  # outer pages first, so an inner page overrides
        for node in start.findall():
            pages[id(node)] = start['docname']
    return pages


class PrintHtmlOutputs(SphinxPostTransform):
    """For LaTeX builders: print the book's own HTML outputs (panels, their suggestions, tables); see the module."""

    default_priority = 3  # before myst-nb's SelectMimeType (4), which drops text/html for LaTeX
    builders = ('latex',)

    def run(self, **kwargs):
        for cell in self.document.findall(nodes.container):
            if cell.get('nb_element') == 'cell_code':  # print what the page folds (not what it hides)
                cell['classes'] = [c for c in cell['classes'] if c not in UNFOLDED]
        listing_path = PANELS_DIR / 'panels.json'
        listing = json.loads(listing_path.read_text(encoding='utf-8')) if listing_path.is_file() else {}
        base = _book_url(self.config)
        bundles = [node for node in self.document.findall(nodes.container)
                   if node.get('nb_element') == 'mime_bundle']
        pages = _pages(self.document, self.env.docname)
        for bundle in bundles:
            source = _html_of(bundle)
            if source is None:
                continue
            if match := PANEL.match(source):
                bundle.replace_self(self.panel(match['key'], listing, bundle))
            elif LIVE.match(source):
                bundle.parent.remove(bundle)
            elif TRY_LINKS.match(source):
                bundle.replace_self(self.suggestions(source, base + pages[id(bundle)] + '.html'))
            elif TABLE.match(source):
                bundle.replace_self(nodes.raw('', table_latex(source), format='latex'))

    def panel(self, key, listing, bundle):
        entry = listing.get(key)
        if entry is None:
            LOGGER.warning(f'live panel {key!r} has no picture in {PANELS_DIR}: run python -m physai.book.pdf panels '
                           f'first (make pdf does)', location=bundle)
            return []
        latex = (
            r'\begin{center}' '\n'
            rf'\includegraphics[width=\linewidth,height=0.72\textheight,keepaspectratio]{{{entry["image"]}}}' '\n'
            r'\end{center}' '\n'
            r'\noindent\begin{minipage}[c]{0.25\linewidth}' '\n'
            rf'\includegraphics[width=\linewidth]{{{entry["qr"]}}}' '\n'
            r'\end{minipage}\hfill\begin{minipage}[c]{0.71\linewidth}\small\raggedright' '\n'
            r'\sphinxAtStartPar The live panel: its first view, as the page draws it before MuJoCo runs. '
            r'Scan the code or open \url{' + _url(entry['url']) + r'} to run it in your browser '
            r'(MuJoCo\textquotesingle{}s WebAssembly build; every control live).' '\n'
            r'\end{minipage}' '\n\\par\\medskip\n')
        return [nodes.raw('', latex, format='latex')]

    def suggestions(self, source, page):
        links = _Links()
        links.feed(source)
        lead = links.lead.strip() or 'Open the panel on a suggestion:'
        items = ''.join(rf'\item \textbf{{{tex(label.strip())}}}: \url{{{_url(page + href)}}}' '\n'
                        for label, href in links.links)
        # ragged right: an address breaks anywhere, and a justified line around it would stretch the label's spaces
        latex = (rf'\sphinxAtStartPar {tex(lead)}' '\n' r'\begin{itemize}\raggedright' '\n' + items
                 + r'\end{itemize}' '\n')
        return [nodes.raw('', latex, format='latex')]


def _url(url: str) -> str:
    """``url`` for hyperref's ``\\url`` outside any macro's argument: only ``%`` and ``#`` escaped."""
    return url.replace('%', r'\%').replace('#', r'\#')


class ChapterNumbers(SphinxPostTransform):
    """For LaTeX builders: number the chapters of the part that holds the book's chapters (its notebooks) 1, 2, ...,
    as the pages call them ("chapter 4"), and the chapters of the other parts A, B, ... (the "Using this book" pages,
    the references), in one count across those parts. Runs after sphinx-jupyterbook-latex has made _toc.yml's
    captions parts (its LatexRootDocPostTransforms, priority 700)."""

    default_priority = 701
    builders = ('latex',)

    def run(self, **kwargs):
        letters = 0
        for part in list(self.document.findall(addnodes.start_of_file)):
            if part['docname'] in self.env.all_docs:
                continue  # a page, not a part made from a caption
            starts = [node for node in part.findall(addnodes.start_of_file)
                      if node is not part and node['docname'] in self.env.all_docs]
            pages = [node['docname'] for node in starts]
            section = next((child for child in part.children if isinstance(child, nodes.section)), None)
            title = section.next_node(nodes.title) if section is not None else None
            if title is None or not pages:
                continue
            if any(str(self.env.doc2path(page)).endswith('.ipynb') for page in pages):
                latex = (r'\renewcommand{\thechapter}{\arabic{chapter}}\renewcommand{\theHchapter}{\arabic{chapter}}'
                         r'\setcounter{chapter}{0}')
            else:
                latex = (r'\renewcommand{\thechapter}{\Alph{chapter}}\renewcommand{\theHchapter}{\Alph{chapter}}'
                         rf'\setcounter{{chapter}}{{{letters}}}')
                # the part's chapters: its pages not inside another of its pages (a chapter's sections)
                letters += sum(1 for node in starts if not any(other is not node and _within_node(node, other)
                                                               for other in starts))
            title.parent.insert(title.parent.index(title) + 1, nodes.raw('', latex + '\n', format='latex'))


def _is_answer(node) -> bool:
    return isinstance(node, nodes.admonition) and 'dropdown' in node.get('classes', ())


class AnswersAtChapterEnd(SphinxPostTransform):
    """For LaTeX builders: move each page's folded answers to a section "Answers" at its end; see the module."""

    default_priority = 5
    builders = ('latex',)

    def run(self, **kwargs):
        owner = _pages(self.document, self.env.docname)
        starts = list(self.document.findall(addnodes.start_of_file)) or [self.document]
        for start in starts:
            self.move(start, start.get('docname', self.env.docname), owner)

    def move(self, start, docname, owner):
        top = next((child for child in start.children if isinstance(child, nodes.section)), None)
        answers = [node for node in start.findall(_is_answer) if owner[id(node)] == docname]
        answers = [node for node in answers if not any(node is not other and _within_node(node, other)
                                                        for other in answers)]  # not an answer inside an answer
        if top is None or not answers:
            return
        slug = re.sub(r'\W+', '-', docname)
        section = nodes.section('', nodes.title(text='Answers'), ids=[f'physai-answers-{slug}'])
        section += nodes.paragraph(text='The answers the page folds away, in the order of their questions.')
        for number, answer in enumerate(answers, 1):
            here, there = f'physai-answer-{slug}-{number}', f'physai-answer-{slug}-{number}-end'
            where = _section_title(answer)
            title = answer.next_node(nodes.title)
            name = title.astext() if title is not None else 'Answer'
            pointer = nodes.paragraph('', '', nodes.target('', '', ids=[here]), nodes.emphasis(text=f'{name}: '),
                                      nodes.reference('', f'see answer {number} at the end of the chapter',
                                                      refid=there, internal=True))
            answer.replace_self(pointer)
            heading = nodes.paragraph('', '', nodes.target('', '', ids=[there]),
                                      nodes.strong(text=f'Answer {number}'), nodes.Text(', from '),
                                      nodes.reference('', where, refid=here, internal=True))
            section += heading
            answer['classes'] = [c for c in answer['classes'] if c != 'dropdown']
            section += answer
        top += section


def _within_node(node, other) -> bool:
    """Whether ``node`` is among ``other``'s descendants (found going down: see :func:`_pages`)."""
    return any(descendant is node for descendant in other.findall(include_self=False))


def _ancestors(node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def _section_title(node) -> str:
    for ancestor in _ancestors(node):
        if isinstance(ancestor, nodes.section):
            title = ancestor.next_node(nodes.title)
            if title is not None:
                return f'“{title.astext()}”'
    return 'the chapter'


def setup(app):
    app.connect('config-inited', _ship_latex_files)
    app.connect('builder-inited', _release_on_title_page)
    app.add_post_transform(PrintHtmlOutputs)
    app.add_post_transform(AnswersAtChapterEnd)
    app.add_post_transform(ChapterNumbers)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
