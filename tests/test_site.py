"""The built site in a real browser: headless Debian Chromium driven by playwright.

The test builds the book (``jupyter-book build --all -W -n --keep-going``, a few seconds since the build executes
nothing), serves ``_build/html`` on 127.0.0.1 and opens every page of the table of contents. Requests that leave
127.0.0.1 are aborted, so the pages are checked as an offline reader sees them: the theme's optional CDN scripts
fail, our figures and the math (served from the site) must not.

Per page: it loads, its title is there, no JavaScript error comes from our code (the page's own inline scripts or a
physai file), every image has loaded, and the math is typeset. Per chapter also: the first figure is present, the
Colab and download buttons exist, answers are hidden until clicked, the page has a page panel, equations are
numbered, and every page panel (``physai.interface.web``: an element of class ``physai-panel``) draws its precomputed
first view and changes its picture when each of its range sliders moves and each of its choices changes (the first
move brings MuJoCo into the page). Screenshots go to ``_build/screenshots/``: every page in the light theme, chapters
also in the dark theme, and each panel after its controls moved.

What a reader meets, per chapter: no displayed equation wider than the room beside its number at 1280 and 390 px
wide, and no page scrolling sideways on a phone; every worked answer (code and output) hidden until clicked; every
figure's smallest text at least ``plots.MIN_TEXT_PX`` as shown at 1280 px, from the figure's own record of its
smallest font (``plots.text_metadata`` in the stored image output) and the image's shown width; alt texts that
describe (not file names); slider ``aria-valuetext`` with value and unit; the first view at most ``FIRST_VIEW_BUDGET``
bytes compressed (the gzip size of every resource the page loads before the reader scrolls); the bookkeeping cells
out of sight; a reading time under the title; the output that answers a prediction folded until clicked.

Set ``PHYSAI_BOOK_ROOT`` to test the book of another folder (a copy with a trial chapter, say).
"""

import base64
import functools
import gzip
import hashlib
import http.server
import json
import os
import pathlib
import re
import threading
import urllib.parse

import pytest

from physai.book.edition import toc_pages
from physai.interface import plots, tables
from browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow  # it builds the whole book first

ROOT = pathlib.Path(os.environ.get('PHYSAI_BOOK_ROOT', pathlib.Path(__file__).resolve().parents[1]))
HTML = ROOT / '_build' / 'html'
SCREENSHOTS = ROOT / '_build' / 'screenshots'


PAGES = toc_pages(ROOT)

# JavaScript run in the page: the picture of a panel (SVG markup, canvas pixels, image sources) as one string, with the
# setting its status line names (chapter 2's explicit models step alike under implicitfast and discrete: the same
# picture, another setting).
PICTURE_JS = """root => Array.from(root.querySelectorAll('svg, canvas, img')).map(el =>
    el.tagName === 'CANVAS' ? el.toDataURL() : el.tagName === 'IMG' ? el.currentSrc || el.src
    : el.outerHTML.replace(/pl-clip-[a-z0-9]+/g, 'clip')
).join('|') + (root.querySelector('.pl-status') || {}).textContent"""

# The ids of the page panels' root elements.
PANEL_ROOTS_JS = """() => Array.from(document.querySelectorAll('div.physai-panel[data-panel]')).map(el => el.id)"""

PANEL_TIMEOUT_MS = 120_000
"""How long a panel may take to answer a control: the first move loads MuJoCo (10.6 MB) into the page, and the
SO-101's runs take seconds on a loaded machine."""

# Move one range input to another allowed value (the far end) and fire the events a user's drag fires.
MOVE_JS = """input => {
    const min = Number(input.min || 0), max = Number(input.max || 100);
    input.value = Number(input.value) >= max ? min : max;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    input.dispatchEvent(new Event('change', {bubbles: true}));
    return input.value;
}"""


# Pick another option of a select (the next one, wrapping) and fire its change event.
SELECT_JS = """select => {
    select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
    select.dispatchEvent(new Event('input', {bubbles: true}));
    select.dispatchEvent(new Event('change', {bubbles: true}));
    return select.value;
}"""


@pytest.fixture(scope='module')
def site(built_book):
    """The book built (once per session, ``built_book``), served on 127.0.0.1; yields the base URL."""
    handler = functools.partial(QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f'http://127.0.0.1:{server.server_address[1]}/'
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope='module')
def browser():
    if not os.path.exists(CHROMIUM):
        message = f'{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)'
        if os.environ.get('CI'):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class PageVisit:
    """One page opened in a fresh context, with the JavaScript errors and failed requests it produced."""

    def __init__(self, browser, url, *, theme='light', width=1280, height=900):
        self.url = url
        self.context = browser.new_context(viewport={'width': width, 'height': height})
        self.context.add_init_script(f'localStorage.setItem("theme", "{theme}"); '
                                     f'localStorage.setItem("mode", "{theme}");')
        self.context.route('**/*', self._only_local)
        self.page = self.context.new_page()
        self.errors = []
        self.page.on('pageerror', lambda error: self.errors.append(('pageerror', str(error), error.stack or '')))
        self.page.on('console', self._console)
        self.response = self.page.goto(url, wait_until='load')
        self._wait_for_math()

    def _only_local(self, route):
        host = urllib.parse.urlsplit(route.request.url).hostname
        if host in ('127.0.0.1', None) or route.request.url.startswith('data:'):
            route.continue_()
        else:
            route.abort()

    def _console(self, message):
        if message.type == 'error':
            self.errors.append(('console', message.text, message.location.get('url', '')))

    def _wait_for_math(self):
        """Wait until MathJax has typeset the page (its start-up promise), when the page has math."""
        if self.page.locator('.math').count():
            self.page.wait_for_function('() => window.MathJax && MathJax.startup && MathJax.startup.promise',
                                        timeout=20_000)
            self.page.evaluate('() => MathJax.startup.promise.then(() => true)')

    def our_errors(self):
        """Errors thrown by our code: the page's own inline scripts or a physai file."""
        page = self.url.split('#')[0]
        ours = []
        for kind, text, where in self.errors:
            if 'Failed to load resource' in text:
                continue  # an aborted CDN request of the theme
            if page in where or 'physai' in where or (kind == 'pageerror' and '_static/' not in where
                                                      and 'http' not in where.replace(page, '')):
                ours.append(f'{kind}: {text}\n{where}')
        return ours

    def close(self):
        self.context.close()


def load_every_image(page):
    """Load every image of the page now (they load lazily, as the reader scrolls), and wait until all have."""
    page.evaluate("() => document.querySelectorAll('main img').forEach(i => { i.loading = 'eager'; })")
    page.wait_for_function("() => Array.from(document.querySelectorAll('main img')).every(i => i.complete)",
                           timeout=20_000)


def screenshot_name(page: str, theme: str) -> pathlib.Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f'{page.replace("/", "__")}-{theme}.png'


@pytest.mark.parametrize('page', PAGES)
def test_page_loads_with_title_images_math_and_no_errors_from_our_code(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        assert visit.response is not None and visit.response.ok, f'{page}: HTTP {visit.response.status}'
        heading = visit.page.locator('article.bd-article h1').first
        assert heading.is_visible(), f'{page}: no visible title'
        title = heading.inner_text().strip().rstrip('#').strip()
        assert title and title in visit.page.title(), f'{page}: title {visit.page.title()!r} lacks {title!r}'
        load_every_image(visit.page)
        broken = visit.page.eval_on_selector_all(
            'main img', 'imgs => imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)')
        assert not broken, f'{page}: images that did not load: {broken}'
        unrendered = visit.page.locator('.math:not(:has(mjx-container))').all_inner_texts()
        assert not unrendered, f'{page}: equations MathJax could not typeset: {unrendered[:5]}'
        bad_tex = visit.page.locator('mjx-container:has([data-mml-node="merror"], [data-mml-node="mtext"][fill="red"])')
        assert bad_tex.count() == 0, f'{page}: TeX errors (shown in red) in: {bad_tex.all_inner_texts()[:5]}'
        assert not visit.our_errors(), f'{page}: JavaScript errors from our code:\n' + '\n'.join(visit.our_errors())
        visit.page.screenshot(path=screenshot_name(page, 'light'), full_page=True)
    finally:
        visit.close()


CHAPTERS = [page for page in PAGES if page.startswith('notebooks/')]


@pytest.mark.parametrize('page', CHAPTERS)
def test_chapter_has_figure_buttons_and_hidden_answers_in_dark_mode(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), theme='dark')
    try:
        assert visit.page.evaluate('document.documentElement.dataset.theme') == 'dark'
        visit.page.screenshot(path=screenshot_name(page, 'dark'), full_page=True)
        # the first figure in view without a click (a table and figure answering a prediction open on one)
        first = visit.page.locator('div.cell:not(.tag_hide-output):not(.tag_hide-cell) div.cell_output img, '
                                   '.physai-panel').first
        assert first.count() == 1, f'{page}: no figure in any cell output'
        first.scroll_into_view_if_needed()
        assert first.is_visible(), f'{page}: the first figure is not visible'
        assert visit.page.locator('span.eqno').count() > 0, f'{page}: no numbered equation'
        colab = visit.page.locator('a[href^="https://colab.research.google.com/github/"]')
        assert colab.count() == 1, f'{page}: no Colab launch button'
        # the button opens the chapter's Colab edition (colab/, written by python -m physai.book.edition)
        assert colab.get_attribute('href').endswith(f'/blob/main/colab/{page.rsplit("/", 1)[-1]}.ipynb'), \
            colab.get_attribute('href')
        download = visit.page.locator(f'a.btn-download-source-button[href$="{page}.ipynb"]')
        assert download.count() == 1, f'{page}: no download button for the notebook'
        notebook = visit.page.request.get(urllib.parse.urljoin(visit.url, download.get_attribute('href')))
        assert notebook.ok and notebook.json()['nbformat'] == 4, f'{page}: the download link is broken'
        for answer in visit.page.locator('div.admonition.dropdown').all():
            body = answer.locator(':scope > :not(.admonition-title)').first
            if body.count():
                assert not body.is_visible(), f'{page}: an answer is shown before it is clicked'
        answers = visit.page.locator('div.admonition.dropdown')
        if answers.count():
            answers.first.locator('.admonition-title').click()
            try:
                answers.first.locator(':scope > :not(.admonition-title)').first.wait_for(state='visible',
                                                                                           timeout=3_000)
            except Exception:
                pytest.fail(f'{page}: clicking an answer does not show it')
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_page_panel_changes_its_picture_when_a_control_moves(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        roots = visit.page.evaluate(PANEL_ROOTS_JS)
        assert roots, f'{page}: a chapter page needs its page panel (an element of class physai-panel)'
        for root_id in roots:
            panel = visit.page.locator(f'[id="{root_id}"]')
            visit.page.wait_for_selector(f'[id="{root_id}"][data-drawn]', state='attached', timeout=20_000)
            sliders = panel.locator('input[type="range"]').all()
            assert sliders, f'{page}: #{root_id} has no slider'
            assert panel.evaluate(PICTURE_JS), f'{page}: #{root_id} has no svg, canvas or img'
            panel.screenshot(path=SCREENSHOTS / f'{page.replace("/", "__")}-{root_id}-first-view.png')
            controls = ([('slider', s, MOVE_JS) for s in sliders]
                        + [('choice', s, SELECT_JS) for s in panel.locator('select').all()])
            for index, (kind, control, move) in enumerate(controls):
                if control.evaluate('c => c.closest("label").classList.contains("pl-off")'):
                    continue  # the panel says the current model does not use it ("used by ... only")
                before = panel.evaluate(PICTURE_JS)
                control.evaluate(move)
                try:
                    visit.page.wait_for_function(f'([root, before]) => ({PICTURE_JS})(root) !== before',
                                                 arg=[panel.element_handle(), before], timeout=PANEL_TIMEOUT_MS)
                except Exception:
                    pytest.fail(f'{page}: #{root_id} {kind} {index} moved, the picture did not change')
            assert panel.get_attribute('data-mode') == 'live', f'{page}: #{root_id} never ran MuJoCo'
            visit.page.wait_for_selector(f'[id="{root_id}"][data-state=idle]', state='attached',
                                         timeout=PANEL_TIMEOUT_MS)
            panel.screenshot(path=SCREENSHOTS / f'{page.replace("/", "__")}-{root_id}.png')
        assert not visit.our_errors(), f'{page}: JavaScript errors from our code:\n' + '\n'.join(visit.our_errors())
    finally:
        visit.close()


# --- what a reader meets ---------------------------------------------------------------------------------------

# Each displayed equation: the width of its typeset math against the room its box has (beside the number), whether
# the number overlaps it, and whether it reaches past the text column.
EQUATIONS_JS = """() => Array.from(document.querySelectorAll('div.math')).map(d => {
    const box = d.querySelector('mjx-container'), math = box && box.firstElementChild;
    if (!math) return {text: d.textContent.slice(0, 60), typeset: false};
    const m = math.getBoundingClientRect(), column = d.parentElement.getBoundingClientRect();
    const number = d.querySelector('.eqno'), n = number ? number.getBoundingClientRect() : null;
    return {text: d.textContent.replace(/\\s+/g, ' ').slice(0, 60), typeset: true,
            width: m.width, room: box.clientWidth,
            overlap: !!(n && n.width && n.left < m.right - 1 && m.left < n.right - 1),
            past_column: Math.max(m.right, n ? n.right : 0) - column.right};
})"""


@pytest.mark.parametrize('width', [1280, 390])
@pytest.mark.parametrize('page', CHAPTERS)
def test_every_equation_fits_its_column_and_its_number_stays_clear(site, browser, page, width):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=width, height=844)
    try:
        equations = visit.page.evaluate(EQUATIONS_JS)
        assert equations, f'{page}: no displayed equation'
        for eq in equations:
            assert eq['typeset'], f'{page}: {eq["text"]!r} is not typeset'
            assert eq['width'] <= eq['room'] + 1, \
                f'{page} at {width} px: {eq["text"]!r} is {eq["width"]:.0f} px wide in {eq["room"]} px (cut or scrolls)'
            assert not eq['overlap'], f'{page} at {width} px: the number of {eq["text"]!r} overlaps it'
            assert eq['past_column'] <= 1, f'{page} at {width} px: {eq["text"]!r} reaches past the column'
        sideways = visit.page.evaluate('document.documentElement.scrollWidth - window.innerWidth')
        assert sideways <= 0, f'{page} at {width} px: the page scrolls {sideways} px sideways'
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_on_a_phone_no_table_or_panel_control_is_wider_than_its_box(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=390, height=844)
    try:
        visit.page.wait_for_selector('.physai-panel[data-drawn]', state='attached', timeout=20_000)
        wide = visit.page.evaluate("""cls => {
            const out = [];
            document.querySelectorAll('article table').forEach(t => {
                // A result table scrolls inside its own box on a phone (tests/test_page.py checks that box stays
                // on the screen); a table that is not drawn (in a folded cell) has no width to check.
                if (t.closest('.' + cls) || !t.getClientRects().length) return;
                const box = t.parentElement;
                if (t.getBoundingClientRect().width > box.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1)
                    out.push('table: ' + t.innerText.slice(0, 60));
            });
            document.querySelectorAll('.physai-panel .pl-controls').forEach(c => {
                if (c.scrollWidth > c.clientWidth + 1) out.push('panel controls: ' + c.parentElement.id);
                c.querySelectorAll('label').forEach(l => {
                    if (l.getBoundingClientRect().right > c.getBoundingClientRect().right + 1)
                        out.push('panel control past its box: ' + l.innerText.slice(0, 40));
                });
            });
            return out;
        }""", tables.CSS_CLASS)
        assert not wide, f'{page} at 390 px: wider than their box: {wide}'
    finally:
        visit.close()


def stored_figures(page: str) -> list[dict]:
    """The chapter's stored figures: image name on the site (myst-nb names it by its SHA-256), pixel width and text."""
    notebook = json.loads((ROOT / f'{page}.ipynb').read_text(encoding='utf-8'))
    figures = []
    for index, cell in enumerate(notebook['cells']):
        for output in cell.get('outputs', []):
            data = output.get('data', {})
            if 'image/png' not in data:
                continue
            png = base64.b64decode(''.join(data['image/png']))
            figures.append({'cell': index, 'name': hashlib.sha256(png).hexdigest() + '.png',
                            'png_width': int.from_bytes(png[16:20], 'big'),
                            'text': output.get('metadata', {}).get('image/png', {}).get(plots.METADATA_KEY)})
    return figures


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_figure_shows_its_smallest_text_at_least_the_minimum(site, browser, page):
    figures = stored_figures(page)
    assert figures, f'{page}: no stored figure'
    missing = [f['cell'] for f in figures if not f['text']]
    assert not missing, (f'{page}: figures of cells {missing} carry no text record '
                         '(plots.use_book_style() installs it; re-execute the notebook)')
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        visit.page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        load_every_image(visit.page)
        for figure in figures:
            image = visit.page.locator(f'main img[src$="{figure["name"]}"]').first
            assert image.count() == 1, f'{page}: the figure of cell {figure["cell"]} is not on the page'
            shown = image.evaluate('i => i.getBoundingClientRect().width')
            assert shown > 0, f'{page}: the figure of cell {figure["cell"]} is not shown'

            px = plots.shown_text_px(figure['text'], figure['png_width'], shown)
            assert px >= plots.MIN_TEXT_PX, (
                f'{page}: cell {figure["cell"]}\'s smallest text is {figure["text"]["min_font_pt"]} pt in a '
                f'{figure["text"]["width_in"]} in figure shown {shown:.0f} px wide: {px:.1f} px, under '
                f'{plots.MIN_TEXT_PX} px')
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_image_has_an_alt_text_that_describes_it(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        alts = visit.page.eval_on_selector_all('article img', 'imgs => imgs.map(i => [i.getAttribute("src"), '
                                                                '(i.getAttribute("alt") || "").trim()])')
        assert alts, f'{page}: no image'
        for src, alt in alts:
            assert alt, f'{page}: {src} has no alt text'
            name_like = (re.fullmatch(r'\S+\.(png|svg|jpe?g|gif)', alt, re.IGNORECASE) is not None
                         or '_images/' in alt or alt == src or alt == src.rsplit('/', 1)[-1])
            assert not name_like, f'{page}: the alt text of {src} is a file name: {alt!r}'
            if '_images/' in src:  # a figure of the chapter (not a logo): it says what it shows
                assert len(alt.split()) >= 8, f'{page}: the alt text of {src} says too little: {alt!r}'
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_slider_announces_its_value_and_unit_and_every_plot_has_a_description(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        visit.page.wait_for_selector('.physai-panel[data-drawn]', state='attached', timeout=20_000)
        sliders = visit.page.locator('.physai-panel input[type="range"]').all()
        assert sliders, f'{page}: no slider'
        for index, slider in enumerate(sliders):
            for moved in (False, True) if index < 2 else (False,):  # each as drawn; two moved (MuJoCo loads)
                if moved:
                    slider.evaluate(MOVE_JS)
                shown = visit.page.locator(f'[id="{slider.get_attribute("id")}-value"]').inner_text().strip()
                text = slider.get_attribute('aria-valuetext') or ''
                assert text == shown, f'{page}: {slider.get_attribute("id")} announces {text!r}, shows {shown!r}'
                assert re.search(r'[^\d.\s-]', text), f'{page}: {slider.get_attribute("id")} announces no unit: {text!r}'
        plots_without = visit.page.eval_on_selector_all(
            '.physai-panel svg',
            'svgs => svgs.filter(s => s.getAttribute("role") !== "img" || !(s.getAttribute("aria-label") || "").trim())'
            '.map(s => s.outerHTML.slice(0, 80))')
        assert not plots_without, f'{page}: interactive plots without a text description: {plots_without}'
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_worked_answers_are_hidden_until_clicked(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        hidden_cells = visit.page.locator('div.cell.tag_hide-cell').all()
        assert hidden_cells, f'{page}: no worked answer cell (tag hide-cell)'
        for cell in hidden_cells:
            parts = cell.locator('.cell_input, .cell_output').all()
            assert parts, f'{page}: a hide-cell cell without code or output'
            for part in parts:
                assert not part.is_visible(), f'{page}: an answer shows before it is clicked: {part.inner_text()[:80]!r}'
        first = hidden_cells[0]
        first.locator('summary').first.click()
        first.locator('.cell_input').first.wait_for(state='visible', timeout=3_000)
        # the output that answers a prediction (tag hide-output) is folded under its code, which stays in view
        folded = visit.page.locator('div.cell.tag_hide-output').all()
        if page.rsplit('/', 1)[-1][:2] in ('01', '02', '03'):
            assert folded, f'{page}: no folded output after a prediction (tag hide-output)'
        for cell in folded:
            assert cell.locator('.cell_input').first.is_visible(), f'{page}: a hide-output cell hides its code'
            output = cell.locator('.cell_output').first
            assert not output.is_visible(), f'{page}: an answer to a prediction shows before it is clicked'
        if folded:
            folded[0].locator('summary').first.click()
            folded[0].locator('.cell_output').first.wait_for(state='visible', timeout=3_000)
    finally:
        visit.close()


@pytest.mark.parametrize('page', CHAPTERS)
def test_bookkeeping_is_out_of_sight_and_the_reading_time_is_under_the_title(site, browser, page):
    notebook = json.loads((ROOT / f'{page}.ipynb').read_text(encoding='utf-8'))
    calls = sum(''.join(c['source']).count('keep(') for c in notebook['cells'] if c['cell_type'] == 'code')
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        shown = sum(text.count('keep(') for text in visit.page.locator('div.cell_input').all_inner_texts())
        assert shown <= 0.1 * calls, f'{page}: {shown} of {calls} keep() calls are shown on the page'
        line = visit.page.locator('article .physai-reading-time').first
        assert line.count() == 1 and line.is_visible(), f'{page}: no reading time under the title'
        assert 'Reading time: about' in line.inner_text(), line.inner_text()
        if page.endswith('/01_position_actuators'):  # one sitting: the main line, then the optional Going further
            assert 'optional Going further' in line.inner_text(), line.inner_text()
    finally:
        visit.close()


FIRST_VIEW_BUDGET = 1_000_000
"""Bytes a chapter's first view may load, compressed (gzip) as a web server would send them."""


def served_file(site: str, url: str) -> pathlib.Path | None:
    """The file of ``_build/html`` a URL of the local site serves (query and fragment dropped), if any."""
    if not url.startswith(site):
        return None
    path = HTML / urllib.parse.unquote(urllib.parse.urlsplit(url).path).lstrip('/')
    return path if path.is_file() else None


@pytest.mark.parametrize('page', PAGES)
def test_first_view_is_within_the_weight_budget(site, browser, page):
    """Every file the page fetched before any scrolling, each counted at its gzip size (read from the site's files:
    the test server does not compress, a real one does)."""
    context = browser.new_context(viewport={'width': 1280, 'height': 800})
    fetched = set()
    try:
        context.route('**/*', lambda route: route.continue_() if route.request.url.startswith(site)
                      else route.abort())
        tab = context.new_page()
        tab.on('requestfinished', lambda request: fetched.add(request.url))
        tab.goto(urllib.parse.urljoin(site, page + '.html'), wait_until='networkidle')
        tab.wait_for_timeout(500)
        sizes = {}
        for url in fetched:
            path = served_file(site, url)
            if path is not None:
                body = path.read_bytes()
                sizes[url] = (len(body), len(gzip.compress(body, 6)))
        compressed = sum(gz for _, gz in sizes.values())
        raw = sum(size for size, _ in sizes.values())
        print(f'\n{page}: first view {raw / 1e3:.0f} kB, {compressed / 1e3:.0f} kB compressed, {len(sizes)} files')
        heaviest = sorted(sizes.items(), key=lambda item: -item[1][1])[:5]
        assert compressed <= FIRST_VIEW_BUDGET, (
            f'{page}: first view {compressed / 1e3:.0f} kB compressed, over {FIRST_VIEW_BUDGET / 1e3:.0f} kB; '
            f'heaviest: {[(url.replace(site, ""), gz) for url, (_, gz) in heaviest]}')
        assert not [url for url in sizes if 'fontawesome' in url], f'{page}: loads the FontAwesome icon set'
        has_math = tab.locator('.math').count() > 0
        loads_mathjax = any(url.split('?')[0].endswith('/' + 'mathjax/tex-chtml.js') for url in sizes)
        assert loads_mathjax == has_math, f'{page}: MathJax loaded {loads_mathjax}, math on the page {has_math}'
    finally:
        context.close()
