"""The PDF edition, _build/latex/simulated-actuators.pdf, as ``make pdf`` builds it: every page of ``_toc.yml`` a chapter
in order, every figure the pages show (each live panel as a picture and a QR code), each chapter's glued numbers in its
text, the folded answers at the end of each chapter, no line past the margin.

``make test-pdf`` (a job of ``make test``) builds it and runs these tests; anywhere else those that read it (marked
``pdf``) read the PDF there is and skip when there is none (``PHYSAI_PDF_REQUIRED`` set, as make test-pdf sets it: they
fail instead). The others check physai.book.pdf and book/_ext/physai_pdf.py's parts without a PDF. The chapters come
from ``_toc.yml``, never a list written here. poppler-utils (pdftotext, pdfimages, pdftoppm) read the PDF.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from physai.book import edition, pdf

reads_the_pdf = pytest.mark.pdf
"""The tests that read the built PDF (make test-pdf runs them after make pdf; make test-others leaves them out)."""

ROOT = pathlib.Path(__file__).resolve().parents[1]
LATEX = ROOT / '_build' / 'latex'
PDF = LATEX / 'simulated-actuators.pdf'
PAGES_DIR = ROOT / '_build' / 'pdf-pages'
"""Where one page per chapter is rendered to PNG (pdftoppm), to be looked at."""

GLUE_TEXT = re.compile(r'\{glue:text\}`(?P<content>[^`]+)`')
MATH = re.compile(r'\$\$.*?\$\$|\$[^$\n]+\$', re.S)
IMAGE_MARKDOWN = re.compile(r'!\[[^\]]*\]\(|```\{(?:figure|image)\}|<img\b|\{glue:figure\}')


@pytest.fixture(scope='module')
def built():
    if not PDF.is_file():
        if os.environ.get('PHYSAI_PDF_REQUIRED'):
            pytest.fail(f'{PDF} is missing: make pdf builds it')
        pytest.skip(f'{PDF} is missing (make pdf builds it; make test-pdf builds and checks it)')
    for tool in ('pdftotext', 'pdfimages', 'pdftoppm'):
        if shutil.which(tool) is None:
            pytest.fail(f'{tool} is missing: apt-get install poppler-utils (make pdf does)')
    return PDF


@pytest.fixture(scope='module')
def pages(built) -> list[str]:
    """The PDF's text, one string per page (pdftotext), whitespace collapsed."""
    text = subprocess.run(['pdftotext', str(built), '-'], capture_output=True, text=True, check=True).stdout
    return [' '.join(page.split()) for page in text.split('\f')]


def page_title(page: str) -> str:
    """The first '# ' heading of a page of _toc.yml."""
    for markdown in edition.page_markdown(ROOT, page):
        if match := re.search(r'^# (.+)$', markdown, re.M):
            return match['title'] if 'title' in match.groupdict() else match[1].strip()
    raise AssertionError(f'{page} has no title')


def plain(text: str) -> str:
    """A title as the PDF's text shows it: Markdown code marks and emphasis gone, straight quotes curled as Sphinx's
    SmartQuotes curl them (the servo's -> the servo’s), whitespace collapsed."""
    return ' '.join(re.sub(r'[`*_]', '', text).replace("'", '’').split())


@pytest.fixture(scope='module')
def contents(built) -> list[tuple[str, str]]:
    """The chapters of the PDF's table of contents, in order: (number, title), from LaTeX's .toc file."""
    toc = (LATEX / 'simulated-actuators.toc').read_text(encoding='utf-8')
    entries = re.findall(r'\\contentsline \{chapter\}\{\\numberline \{([^}]*)\}(.*?)\}\{[^}]*\}\{chapter\.', toc)
    return [(number, ' '.join(re.sub(r'\\[a-zA-Z]+ ?|[{}]', '', title).split())) for number, title in entries]


@pytest.fixture(scope='module')
def chapter_pages(pages, contents) -> dict[str, range]:
    """Page of _toc.yml (but the front page) -> the PDF's pages (0-based) its chapter takes, found by the chapter
    heading ("Chapter 1 Position actuators") that opens it."""
    book_pages = edition.toc_pages(ROOT)[1:]
    starts = []
    for page, (number, title) in zip(book_pages, contents):
        heading = re.compile(rf'^Chapter {re.escape(number)} {re.escape(title)}', re.I)
        found = [i for i, text in enumerate(pages) if heading.match(text)]
        assert found, f'no page opens chapter {number} {title!r} ({page})'
        starts.append(found[0])
    ends = starts[1:] + [len(pages)]
    return {page: range(start, end) for page, start, end in zip(book_pages, starts, ends)}


@reads_the_pdf
def test_every_page_of_the_toc_is_a_chapter_in_order(contents):
    book_pages = edition.toc_pages(ROOT)[1:]  # the front page is the PDF's front matter
    assert [title for _, title in contents] == [plain(page_title(page)) for page in book_pages]
    chapters = pdf.chapters(ROOT)
    numbers = [number for (number, _), page in zip(contents, book_pages) if page in chapters]
    assert numbers == [str(n) for n in range(1, len(chapters) + 1)], 'the chapters are numbered 1, 2, ... as they call each other'
    others = [number for (number, _), page in zip(contents, book_pages) if page not in chapters]
    assert all(re.fullmatch(r'[A-Z]', number) for number in others), others


@reads_the_pdf
def test_front_matter_has_the_title_and_the_version(pages):
    front = ' '.join(pages[:3])
    assert 'Simulated actuators, from the inside' in front
    assert edition.VERSION in front


def expected_figures(page: str) -> int:
    """The figures page ``page`` shows on the HTML book: its stored image outputs (not of a removed cell or output),
    the images its Markdown places, and for each live panel its picture and QR code in the PDF (two)."""
    count = sum(len(IMAGE_MARKDOWN.findall(markdown)) for markdown in edition.page_markdown(ROOT, page))
    path = edition.page_path(ROOT, page)
    if path.suffix == '.ipynb':
        notebook = json.loads(path.read_text(encoding='utf-8'))
        for cell in notebook['cells']:
            tags = set(cell.get('metadata', {}).get('tags', ()))
            if tags & {'remove-output', 'remove-cell'}:
                continue
            count += sum(1 for output in cell.get('outputs', ()) if 'image/png' in output.get('data', {})
                         and 'scrapbook' not in output.get('metadata', {}))
        count += 2 * len(pdf.panel_blocks(page))
    return count


@reads_the_pdf
def test_every_figure_of_every_chapter(built, chapter_pages):
    listing = subprocess.run(['pdfimages', '-list', str(built)], capture_output=True, text=True, check=True).stdout
    on_page = [int(line.split()[0]) - 1 for line in listing.splitlines()[2:] if line.split()[2] == 'image']
    found = {page: sum(1 for p in on_page if p in pages) for page, pages in chapter_pages.items()}
    expected = {page: expected_figures(page) for page in chapter_pages}
    assert found == expected
    assert sum(found.values()) == len(on_page), 'an image outside every chapter'
    assert sum(expected[page] for page in pdf.chapters(ROOT)) > 0


def headline_numbers(page: str) -> list[str]:
    """Every number chapter ``page`` glues into its prose (``{glue:text}``, outside equations), as the page shows it."""
    notebook = json.loads(edition.page_path(ROOT, page).read_text(encoding='utf-8'))
    values = edition.glued_values(notebook)
    numbers = []
    for markdown in edition.page_markdown(ROOT, page):
        for match in GLUE_TEXT.finditer(MATH.sub('', markdown)):
            numbers.append(edition.glue_text('glue:text', match['content'], values, page))
    return numbers


@reads_the_pdf
@pytest.mark.parametrize('page', pdf.chapters(ROOT))
def test_each_chapter_prints_its_glued_numbers(page, pages, chapter_pages):
    text = ' '.join(pages[i] for i in chapter_pages[page]).replace('−', '-')
    numbers = headline_numbers(page)
    assert numbers, f'{page} glues no number into its prose'
    missing = sorted({n for n in numbers if n not in text})
    assert not missing, f'{page}: glued numbers not in its pages of the PDF: {missing}'


@reads_the_pdf
@pytest.mark.parametrize('page', pdf.chapters(ROOT))
def test_each_chapter_ends_with_its_answers_and_prints_its_panel(page, pages, chapter_pages):
    text = ' '.join(pages[i] for i in chapter_pages[page])
    folded = sum(markdown.count(':class: dropdown') for markdown in edition.page_markdown(ROOT, page))
    pointers = re.findall(r'see answer (\d+) at the end of the chapter', text)
    assert pointers == [str(n) for n in range(1, folded + 1)]
    assert all(f'Answer {n}, from' in text for n in range(1, folded + 1))
    assert 'Answers The answers the page folds away' in text
    joined = text.replace(' ', '')  # pdftotext breaks a long address across lines
    for key, block in pdf.panel_blocks(page):
        assert pdf.first_view_url(page, block) in joined
        suggestions = sum(html.count('<a href="?') for html in pdf.stored_outputs(page) if 'physai-try-links' in html[:40])
        settings = re.findall(re.escape(pdf.page_url(page)) + rf'\?{re.escape(key)}-', joined)
        assert len(settings) == 1 + suggestions, 'the first view and each suggestion with its address on this page'


@reads_the_pdf
def test_no_line_past_the_margin(built):
    assert pdf.check_log(LATEX / 'simulated-actuators.log') == []


@reads_the_pdf
def test_one_page_per_chapter_rendered(built, chapter_pages):
    """Render the second page of each chapter (its first page of text and code after the heading) to
    _build/pdf-pages/, for a person to look at; here only that each is a picture of the right size."""
    PAGES_DIR.mkdir(parents=True, exist_ok=True)
    for page, pages in chapter_pages.items():
        index = pages[1] if len(pages) > 1 else pages[0]
        stem = PAGES_DIR / page.replace('/', '_')
        subprocess.run(['pdftoppm', '-r', '60', '-png', '-singlefile', '-f', str(index + 1), '-l', str(index + 1),
                        str(built), str(stem)], check=True)
        assert stem.with_suffix('.png').stat().st_size > 10_000


# --- without the PDF: the log check, the chapters, the panels' addresses, the tables ------------------------------

def test_check_log_fails_on_a_line_past_the_tolerance(tmp_path):
    log = tmp_path / 'book.log'
    log.write_text('Overfull \\hbox (41.64497pt too wide) in paragraph at lines 6757--6757\n'
                   'Overfull \\hbox (2.5pt too wide) in paragraph at lines 10--10\n'
                   'Overfull \\vbox (9.0pt too high) detected at line 3695\n', encoding='utf-8')
    assert [pt for pt, _ in pdf.overfull(log.read_text())] == [41.64497, 2.5]  # a page's \\vbox is no line
    assert pdf.check_log(log) == [(41.64497, 'in paragraph at lines 6757--6757')]
    assert pdf.check_log(log, tolerance=50) == []
    assert pdf.main(['check-log', str(log)]) == 1


def test_chapters_are_the_notebooks_of_the_toc_in_order(tmp_path):
    (tmp_path / 'book').mkdir()
    (tmp_path / 'notebooks').mkdir()
    (tmp_path / '_toc.yml').write_text('format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    chapters:\n'
                                        '      - file: book/howto\n      - file: notebooks/02_b\n'
                                        '  - caption: B\n    chapters:\n      - file: notebooks/01_a\n', encoding='utf-8')
    for page in ('book/intro.md', 'book/howto.md'):
        (tmp_path / page).write_text('# x\n', encoding='utf-8')
    for page in ('notebooks/02_b.ipynb', 'notebooks/01_a.ipynb'):
        (tmp_path / page).write_text('{"cells": []}', encoding='utf-8')
    assert pdf.chapters(tmp_path) == ['notebooks/02_b', 'notebooks/01_a']  # _toc.yml's order, not the names'


def test_every_chapter_panel_has_an_address_that_opens_its_first_view_live():
    import urllib.parse
    from physai.interface import position_actuators_panels, web
    keys = [key for page in pdf.chapters(ROOT) for key, _ in pdf.panel_blocks(page)]
    assert len(keys) == len(set(keys)) >= 1
    for page in pdf.chapters(ROOT):
        for key, block in pdf.panel_blocks(page):
            url = pdf.first_view_url(page, block)
            assert url.startswith(f'{edition.BOOK_URL}{page}.html?') and url.endswith(f'#physai-panel-{key}')
            controls = web.block_data(block)['spec']['controls']
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
            assert list(query) == [f'{key}-{control["url"]}' for control in controls]  # every control, set
            for control in controls:
                text = query[f'{key}-{control["url"]}']
                if isinstance(control['default'], str):
                    assert text == control['default']
                else:  # to 12 significant digits, as the page writes a value
                    assert float(text) == pytest.approx(control['default'], rel=1e-11)
    # written as physai.interface.web.address writes a setting (the page reads it back and runs MuJoCo on it)
    spec = position_actuators_panels.servo_spec()
    expected = web.address(spec, spec.defaults)
    data = {'spec': spec.to_json()}
    fake = f'<div class="physai-panel" id="physai-panel-servo"><script type="application/json">{json.dumps(data)}</script></div>'
    assert pdf.first_view_url('notebooks/x', fake) == f'{edition.BOOK_URL}notebooks/x.html{expected}'


def test_a_table_prints_as_a_latex_table_with_its_units():
    import sys
    sys.path.insert(0, str(ROOT / 'book' / '_ext'))
    import physai_pdf
    from physai.interface import tables
    fragment = tables.show((('kp', '.1f', 'N·m/rad'), ('result', 's')),
                           [{'kp': 998.22, 'result': 'diverged & <stuck>'}, {'kp': 3.0, 'result': '50%'}])._repr_html_()
    assert physai_pdf.TABLE.match(fragment)
    latex = physai_pdf.table_latex(fragment)
    assert r'\begin{adjustbox}{max width=\linewidth}' in latex
    assert r'{@{}c@{}}kp\\(N·m/rad)\end{tabular}' in latex  # the unit on the header's second line
    assert r'998.2 & diverged \& \textless{}stuck\textgreater{} \\' in latex  # escaped for LaTeX
    assert r'3.0 & 50\% \\' in latex
    assert r'{r>{\raggedright\arraybackslash}p{14em}}' in latex  # numbers right, words wrapped
