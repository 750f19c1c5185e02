"""The page around the figures, as a reader meets it: tables that fit, listings that wrap, no console error, a favicon.

The module takes the book built once per test session (``built_book``, as ``tests/test_site.py`` does), serves
``_build/html`` on 127.0.0.1 and opens its pages in headless Chromium (``tests/browser.py``), each in a fresh context
with nothing stored: a first visit, as a reader's is. Requests off the site are aborted.

- at 1280 px no result table is wider than its column (``physai.interface.tables`` renders them) and no printed text
  runs past its box (Build-it listings wrap); no chapter prints a text table any more;
- at 390 px (a phone) no page is wider than the screen: a table wider than its column is shown in parts
  (physai.js; tests/test_site.py checks them), and at 1280 px none is;
- no page logs a console error or throws, in the light or the dark theme; the tables' text is the page's own colour;
- every page names the book's favicon and the site serves it, an SVG;
- the bookkeeping at a chapter's top (the Colab set-up cell and the imports) is folded away on the page.
"""

import pathlib
import re
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

import nbformat
import pytest

from physai.book import edition as edition_module
from physai.book.edition import toc_pages
from physai.interface import tables
from browser import next_frames

pytestmark = pytest.mark.slow  # it needs the whole book built

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = toc_pages(ROOT)
CHAPTERS = [page for page in PAGES if page.startswith('notebooks/')]
HIDDEN_AT_TOP = 2
"""Code cells at a chapter's top that are bookkeeping: the Colab set-up and the imports."""


@pytest.fixture
def site(built_site):
    """The book built once per session (``built_book``) and served on 127.0.0.1 (``built_site``, conftest.py)."""
    return built_site


class Visit:
    """A page opened in a fresh context (nothing stored: a first visit) of ``width`` x ``height`` CSS px, with every
    console error and script error it produced."""

    def __init__(self, browser, site, page, *, width=1280, height=800, theme=None):
        self.context = browser.new_context(viewport={'width': width, 'height': height})
        if theme:
            self.context.add_init_script(f'localStorage.setItem("mode", "{theme}"); '
                                         f'localStorage.setItem("theme", "{theme}");')
        self.context.route('**/*', lambda route: route.continue_() if route.request.url.startswith(site)
                           or route.request.url.startswith('data:') else route.abort())
        self.page = self.context.new_page()
        self.errors = []
        self.page.on('console', lambda m: self.errors.append(f'console: {m.text} ({m.location.get("url")})')
                     if m.type == 'error' else None)
        self.page.on('pageerror', lambda e: self.errors.append(f'pageerror: {e}'))
        self.response = self.page.goto(urllib.parse.urljoin(site, page + '.html'), wait_until='load')
        if self.page.locator('.math').count():
            self.page.wait_for_function('() => window.MathJax && MathJax.startup && MathJax.startup.promise',
                                        timeout=20_000)
            self.page.evaluate('() => MathJax.startup.promise.then(() => true)')

    def close(self):
        self.context.close()


# What overflows its box: result tables (physai.interface.tables) and printed text (pre) in the cells' outputs.
OVERFLOW_JS = """() => {
    const out = [];
    document.querySelectorAll('article div.cell_output .%(box)s').forEach(box => {
        const table = box.querySelector('table');
        const column = box.closest('div.cell_output');
        out.push({kind: 'table', text: table.innerText.slice(0, 60), width: table.getBoundingClientRect().width,
                  room: column.clientWidth, scrolls: box.scrollWidth > box.clientWidth + 1});
    });
    document.querySelectorAll('article div.cell_output pre').forEach(pre => {
        out.push({kind: 'text', text: pre.innerText.slice(0, 60), width: pre.scrollWidth, room: pre.clientWidth,
                  scrolls: pre.scrollWidth > pre.clientWidth + 1, lines: pre.innerText.split('\\n').slice(0, 3)});
    });
    return out;
}""" % {'box': tables.CSS_CLASS}

KEYS_LINE = r'^\s*[A-Za-z_][A-Za-z0-9_]*(\s{2,}[A-Za-z_][A-Za-z0-9_]*)+\s*$'
"""A text table's header line: two or more column keys set apart by runs of spaces."""


@pytest.mark.parametrize('page', CHAPTERS)
def test_at_desktop_width_every_result_table_fits_its_column_and_printed_text_wraps(site, browser, page):
    visit = Visit(browser, site, page, width=1280, height=800)
    try:
        boxes = visit.page.evaluate(OVERFLOW_JS)
        found = [b for b in boxes if b['kind'] == 'table']
        assert found, f'{page}: no result table on the page'
        wide = [f'{b["kind"]} {b["width"]:.0f} px in {b["room"]} px: {b["text"]!r}' for b in boxes
                if b['scrolls'] or b['width'] > b['room'] + 1]
        assert not wide, f'{page} at 1280 px: wider than the column:\n' + '\n'.join(wide)
        parted = visit.page.evaluate('cls => document.querySelectorAll(`.${cls} > table.physai-part`).length',
                                     tables.CSS_CLASS)
        assert not parted, f'{page} at 1280 px: {parted} tables in parts (physai.js cuts only a table too wide)'
        text_tables = [b['text'] for b in boxes if b['kind'] == 'text' and len(b['lines']) > 1
                       and re.match(KEYS_LINE, b['lines'][0])]
        assert not text_tables, f'{page}: tables still printed as text: {text_tables}'
    finally:
        visit.close()


@pytest.mark.parametrize('page', PAGES)
def test_on_a_phone_no_page_is_wider_than_the_screen(site, browser, page):
    visit = Visit(browser, site, page, width=390, height=844)
    try:
        sideways = visit.page.evaluate('document.documentElement.scrollWidth - window.innerWidth')
        assert sideways <= 0, f'{page} at 390 px: the page scrolls {sideways} px sideways'
        past = visit.page.evaluate("""cls => Array.from(document.querySelectorAll('.' + cls))
            .filter(box => box.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .map(box => box.innerText.slice(0, 60))""", tables.CSS_CLASS)
        assert not past, f'{page} at 390 px: tables whose box reaches past the screen: {past}'
    finally:
        visit.close()


# The lowest contrast (WCAG's ratio of relative luminances) of a table's text against the panel it sits on: the first
# opaque background among its ancestors (the tables' own stripes are translucent grey).
CONTRAST_JS = """cls => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const lum = ([r, g, b]) => [r, g, b].map(v => v / 255)
        .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
        .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    let worst = Infinity;
    document.querySelectorAll('.' + cls + ' td, .' + cls + ' th').forEach(cell => {
        let el = cell, bg = null;
        while (el && !bg) {
            const c = rgb(getComputedStyle(el).backgroundColor);
            if (c.length >= 3 && (c.length === 3 || c[3] >= 0.5)) bg = c;
            el = el.parentElement;
        }
        const a = lum(rgb(getComputedStyle(cell).color)), b = lum(bg || [255, 255, 255]);
        worst = Math.min(worst, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05));
    });
    return worst;
}"""


@pytest.mark.parametrize('theme', [None, 'dark'])
@pytest.mark.parametrize('page', PAGES)
def test_no_page_logs_a_console_error_and_its_tables_read_in_either_theme(site, browser, page, theme):
    visit = Visit(browser, site, page, theme=theme)
    try:
        assert visit.response.ok, f'{page}: HTTP {visit.response.status}'
        visit.page.wait_for_load_state('networkidle')  # late scripts (the theme's, ours on load) have run
        next_frames(visit.page)
        assert not visit.errors, f'{page} ({theme or "first visit"}): ' + '\n'.join(visit.errors)
        contrast = visit.page.evaluate(CONTRAST_JS, tables.CSS_CLASS)
        assert contrast >= 4.5, f'{page} ({theme or "light"}): table text at contrast {contrast:.1f} (WCAG AA: 4.5)'
    finally:
        visit.close()


@pytest.mark.parametrize('page', PAGES)
def test_every_page_names_the_books_favicon_and_the_site_serves_it(site, browser, page):
    visit = Visit(browser, site, page)
    try:
        icons = visit.page.evaluate("() => Array.from(document.querySelectorAll('link[rel~=icon]')).map(l => l.href)")
        assert len(icons) == 1 and icons[0].startswith(site) and icons[0].endswith('.svg'), f'{page}: {icons}'
        with urllib.request.urlopen(icons[0]) as response:
            assert response.status == 200
            svg = ElementTree.fromstring(response.read())
        assert svg.tag == '{http://www.w3.org/2000/svg}svg' and svg.get('viewBox'), f'{page}: not an SVG icon'
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_the_bookkeeping_at_a_chapters_top_is_folded_away_and_shown_in_the_notebook(site, browser, page):
    notebook = nbformat.read(ROOT / f'{page}.ipynb', as_version=4)
    top = [c for c in notebook.cells if c.cell_type == 'code'][:HIDDEN_AT_TOP]
    assert all('hide-input' in c.metadata.get('tags', []) for c in top), f'{page}: the top code cells are not tagged'
    assert 'import ' in top[-1].source, f'{page}: the imports are not among the first code cells'
    edition = nbformat.read(ROOT / 'colab' / f'{pathlib.Path(page).name}.ipynb', as_version=4)
    given = edition_module.learner_code(top[-1].source)  # the edition leaves the glue plumbing (keep, glue) out
    imports = [c for c in edition.cells if c.cell_type == 'code' and c.source == given]
    assert len(imports) == 1, f'{page}: the Colab edition lacks the imports cell'
    assert not imports[0].metadata.get('jupyter', {}).get('source_hidden') and 'cellView' not in imports[0].metadata, \
        f'{page}: the Colab edition folds the imports away'
    visit = Visit(browser, site, page)
    try:
        cells = visit.page.locator('article div.cell')
        for k in range(HIDDEN_AT_TOP):
            source = cells.nth(k).locator('div.cell_input')
            assert source.count() == 1 and not source.is_visible(), f'{page}: code cell {k + 1} shows its source'
            assert cells.nth(k).locator('details summary').count() >= 1, f'{page}: code cell {k + 1} has no toggle'
    finally:
        visit.close()


# Code cells' sources that run past their box: how far, and the line's start.
CODE_OVERFLOW_JS = """() => Array.from(document.querySelectorAll('article div.cell_input div.highlight pre'))
    .filter((pre) => pre.getClientRects().length && pre.scrollWidth > pre.clientWidth + 1)
    .map((pre) => [pre.scrollWidth - pre.clientWidth, pre.innerText.slice(0, 60)])"""


@pytest.mark.parametrize('page', CHAPTERS)
def test_at_desktop_width_code_cells_wrap_to_the_column(site, browser, page):
    visit = Visit(browser, site, page, width=1280, height=800)
    try:
        wide = visit.page.evaluate(CODE_OVERFLOW_JS)
        assert not wide, f'{page} at 1280 px: {len(wide)} code cells scroll sideways, e.g. {wide[:3]}'
    finally:
        visit.close()
