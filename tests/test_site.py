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
import contextlib
import gzip
import hashlib
import json
import os
import pathlib
import re
import urllib.parse

import pytest

from physai.book.edition import toc_pages
from physai.interface import plots, tables
from browser import next_frames, screenshot, wait_arm3d_settled

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


@pytest.fixture
def site(built_site):
    """The book built once per session (``built_book``) and served on 127.0.0.1 (``built_site``, conftest.py)."""
    return built_site


class PageVisit:
    """One page opened in a fresh context, with the JavaScript errors and failed requests it produced."""

    def __init__(self, browser, url, *, theme='light', width=1280, height=900, scale=1, init=''):
        self.url = url
        self.context = browser.new_context(viewport={'width': width, 'height': height}, device_scale_factor=scale)
        self.context.add_init_script(f'localStorage.setItem("theme", "{theme}"); '
                                     f'localStorage.setItem("mode", "{theme}");' + init)
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


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
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
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
        screenshot(visit.page, path=screenshot_name(page, 'light'))  # the window: the title and the page's top


CHAPTERS = [page for page in PAGES if page.startswith('notebooks/')]
NO_PANEL_YET: set[str] = set()
"""Chapters without a page panel yet (none: chapter 6's settings panel has its page half,
``physai.interface.web_firmware``)."""


@pytest.mark.parametrize('page', CHAPTERS)
def test_chapter_has_figure_buttons_and_hidden_answers_in_dark_mode(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), theme='dark') as visit:
        assert visit.page.evaluate('document.documentElement.dataset.theme') == 'dark'
        # the first figure in view without a click (a table and figure answering a prediction open on one)
        first = visit.page.locator('div.cell:not(.tag_hide-output):not(.tag_hide-cell) div.cell_output img, '
                                   '.physai-panel').first
        assert first.count() == 1, f'{page}: no figure in any cell output'
        first.scroll_into_view_if_needed()
        assert first.is_visible(), f'{page}: the first figure is not visible'
        visit.page.wait_for_function("e => e.tagName !== 'IMG' || (e.complete && e.naturalWidth > 0)",
                                     arg=first.element_handle(), timeout=20_000)  # a lazy image has loaded
        next_frames(visit.page)
        screenshot(visit.page, path=screenshot_name(page, 'dark'))  # the window, the first figure in it
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


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_page_panel_changes_its_picture_when_a_control_moves(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
        roots = visit.page.evaluate(PANEL_ROOTS_JS)
        if page in NO_PANEL_YET:
            pytest.skip(f'{page} has no page panel yet (issue 41)')
        assert roots, f'{page}: a chapter page needs its page panel (an element of class physai-panel)'
        for root_id in roots:
            panel = visit.page.locator(f'[id="{root_id}"]')
            visit.page.wait_for_selector(f'[id="{root_id}"][data-drawn]', state='attached', timeout=20_000)
            sliders = panel.locator('input[type="range"]').all()
            assert sliders, f'{page}: #{root_id} has no slider'
            assert panel.evaluate(PICTURE_JS), f'{page}: #{root_id} has no svg, canvas or img'
            screenshot(panel, path=SCREENSHOTS / f'{page.replace("/", "__")}-{root_id}-first-view.png')
            controls = ([('slider', s, MOVE_JS) for s in sliders]
                        + [('choice', s, SELECT_JS) for s in panel.locator('select').all()])
            for index, (kind, control, move) in enumerate(controls):
                # each control moved from the panel's start (after another's move it may not matter: chapter 2's kv
                # at kp 30000 and E 2 N·m, where the clamp holds the torque whatever kv adds)
                panel.locator('button:text("reset")').click()
                visit.page.wait_for_selector(f'[id="{root_id}"][data-state=idle]', state='attached',
                                             timeout=PANEL_TIMEOUT_MS)
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
            screenshot(panel, path=SCREENSHOTS / f'{page.replace("/", "__")}-{root_id}.png')
        assert not visit.our_errors(), f'{page}: JavaScript errors from our code:\n' + '\n'.join(visit.our_errors())


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


@pytest.mark.parametrize('width', [1280, 600, 390])
@pytest.mark.parametrize('page', CHAPTERS)
def test_every_equation_fits_its_column_and_its_number_stays_clear(site, browser, page, width):
    """At a laptop's width, a small tablet's (600 px: chapter 2's long Isaac Lab path in the prose once made that page
    scroll 31 px sideways) and a phone's, every displayed equation fits its column, its number clear of it, and the
    page does not scroll sideways."""
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=width, height=844) as visit:
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


@pytest.mark.parametrize('page', CHAPTERS)
def test_on_a_phone_no_table_or_panel_control_is_wider_than_its_box(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=390, height=844) as visit:
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


# The result tables (physai.interface.tables) of a page that are drawn (a folded answer's too) and wider than their box.
WIDE_RESULT_TABLES_JS = """cls => Array.from(document.querySelectorAll('article .' + cls)).filter((box) =>
    box.getClientRects().length && box.scrollWidth > box.clientWidth + 1).map((box) =>
    `${box.scrollWidth} px in ${box.clientWidth}: ` + Array.from(box.querySelectorAll('thead th')).map((th) =>
        th.textContent.replace(/\\s+/g, ' ').trim()).join(' | ').slice(0, 80))"""

# The headers of a page's drawn result tables whose text is wider than their cell (and so runs into the next header).
SPILLING_HEADERS_JS = """cls => Array.from(document.querySelectorAll('article .' + cls + ' thead th')).filter((th) =>
    th.getClientRects().length && th.scrollWidth > th.clientWidth + 1).map((th) =>
    `${th.textContent.replace(/\\s+/g, ' ').trim()}: ${th.scrollWidth} px in ${th.clientWidth}`)"""

# What is wrong with a page's result tables in parts (physai.js cuts a table wider than its column into narrower
# tables, each with the first column): the whole table still drawn, a part not drawn, a cell of the whole shown in no
# part or in two, or under another header or in another row, the first column missing from a part, a cell's text cut.
PARTS_JS = """cls => {
    const text = (el) => el.textContent.replace(/\\s+/g, ' ').trim();
    const problems = [];
    let parted = 0;
    document.querySelectorAll('article .' + cls + '.physai-parted').forEach((box) => {
        parted += 1;
        const whole = box.querySelector(':scope > table.physai-whole');
        const parts = Array.from(box.querySelectorAll(':scope > table.physai-part'));
        const name = text(whole.tHead.rows[0].cells[0]) + ' | ' + text(whole.tHead.rows[0].cells[1]);
        if (whole.getClientRects().length) problems.push(name + ': the whole table is drawn beside its parts');
        if (parts.length < 2) problems.push(name + `: ${parts.length} parts`);
        const heads = Array.from(whole.tHead.rows[0].cells).map(text);
        const rows = Array.from(whole.tBodies[0].rows).map((row) => Array.from(row.cells).map(text));
        const seen = heads.map(() => 0);
        parts.forEach((part, p) => {
            if (!part.getClientRects().length) problems.push(name + `: part ${p + 1} is not drawn`);
            const partHeads = Array.from(part.tHead.rows[0].cells).map(text);
            const partRows = Array.from(part.tBodies[0].rows);
            if (partRows.length !== rows.length) problems.push(name + `: part ${p + 1} has ${partRows.length} rows`);
            if (partHeads[0] !== heads[0]) problems.push(name + `: part ${p + 1} starts with ${partHeads[0]}`);
            partHeads.forEach((head, j) => {
                const c = heads.indexOf(head, j === 0 ? 0 : 1);
                if (c < 0) { problems.push(name + `: part ${p + 1} has a header ${head} the table has not`); return; }
                if (j > 0) seen[c] += 1;
                partRows.forEach((row, r) => {
                    const cell = row.cells[j];
                    if (!cell || text(cell) !== rows[r][c])
                        problems.push(name + `: part ${p + 1}, row ${r + 1}, ${head}: `
                                      + `${cell && text(cell)} for ${rows[r][c]}`);
                    else if (cell.scrollWidth > cell.clientWidth + 1)
                        problems.push(name + `: part ${p + 1}, row ${r + 1}, ${head}: ${text(cell)} is cut`);
                });
            });
        });
        seen.forEach((n, c) => { if (c > 0 && n !== 1) problems.push(name + `: ${heads[c]} is in ${n} parts`); });
    });
    return {parted, problems};
}"""

# The result tables of a page that are drawn and reach past a box that clips them (a folded output's details) or
# past the panel they sit on (the nearest ancestor with a background: in the dark theme an output's light panel).
PAST_THEIR_BOX_JS = """cls => {
    const out = [];
    document.querySelectorAll('article .' + cls + ' > table').forEach((table) => {
        if (!table.getClientRects().length) return;
        const r = table.getBoundingClientRect();
        let panel = false;
        for (let e = table.parentElement.parentElement; e && e.tagName !== 'ARTICLE'; e = e.parentElement) {
            const s = getComputedStyle(e), q = e.getBoundingClientRect();
            const alpha = (s.backgroundColor.match(/[\\d.]+/g) || []).map(Number)[3];
            const clips = s.overflowX !== 'visible';
            const opaque = !panel && s.backgroundColor !== 'transparent' && (alpha === undefined || alpha > 0.5);
            if (!clips && !opaque) continue;
            panel = panel || opaque;
            const left = q.left + e.clientLeft, right = left + e.clientWidth;
            const past = Math.max(left - r.left, r.right - right);
            if (past > 0.5)
                out.push(`${table.textContent.trim().slice(0, 40)}: ${past.toFixed(0)} px past ${e.className}`);
        }
    });
    return out;
}"""

# The smallest type of a page's drawn result tables (CSS px): in parts, and the others.
SMALLEST_TYPE_JS = """cls => {
    const smallest = {parts: Infinity, others: Infinity};
    document.querySelectorAll('article .' + cls + ' td, article .' + cls + ' th').forEach((cell) => {
        if (!cell.getClientRects().length) return;
        const key = cell.closest('table.physai-part') ? 'parts' : 'others';
        smallest[key] = Math.min(smallest[key], parseFloat(getComputedStyle(cell).fontSize));
    });
    return smallest;
}"""

# Run before the page's scripts: how many result tables are in parts two frames after the page is parsed (physai.js
# cuts them in a ResizeObserver's report, between a layout and its paint, so by the first frames: none is cut later,
# under the reader's eyes).
PARTED_EARLY_INIT = """document.addEventListener('DOMContentLoaded', () => requestAnimationFrame(() =>
    requestAnimationFrame(() => { window.partedEarly = document.querySelectorAll('.physai-parted').length; })));"""

PHONE_PARTED_CHAPTERS = ('notebooks/01_position_actuators', 'notebooks/04_servo_sysid', 'notebooks/05_gripper')
"""The chapters whose widest result tables (8 to 14 columns of figures) do not fit a phone's column even at 10 CSS px,
and so are shown in parts there: 8 of the book's 92 tables in the light theme (chapters 1: 4, 4: 3, 5: 1), where 43
scrolled sideways at the tables' desktop size, 7 with the page's smaller phone type."""


@pytest.mark.parametrize('theme', ['light', 'dark'])
@pytest.mark.parametrize('page', CHAPTERS)
def test_on_a_phone_every_result_table_fits_the_column_the_widest_in_parts(site, browser, page, theme):
    """At 390x844, every folded output opened as a reader would: no result table scrolls sideways in its box, none
    reaches past a box that clips it or the panel it sits on, no header's text runs into the next (a header as wide as
    its longest word), the page does not scroll sideways. A table wider than the column shows as parts (physai.js):
    each cell of the table in one part, in its row and under its own header, the row's name (the first column) in
    every part, no cell's text cut, the parts' type no smaller than the page's other tables'. At 1280 px the same page
    shows every table whole, and at 390 px again in parts."""
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), theme=theme, width=390, height=844,
                   init=PARTED_EARLY_INIT) as visit:
        next_frames(visit.page)
        early, now = visit.page.evaluate("() => [window.partedEarly, document.querySelectorAll('.physai-parted').length]")
        assert early == now, f'{page} at 390 px: {now} tables in parts, {early} of them by the first frames'
        visit.page.evaluate("() => document.querySelectorAll('article details').forEach(d => { d.open = true; })")
        next_frames(visit.page)
        wide = visit.page.evaluate(WIDE_RESULT_TABLES_JS, tables.CSS_CLASS)
        assert not wide, f'{page} at 390 px: {len(wide)} result tables scroll sideways:\n' + '\n'.join(wide)
        past = visit.page.evaluate(PAST_THEIR_BOX_JS, tables.CSS_CLASS)
        assert not past, f'{page} at 390 px ({theme}): tables past their box or panel: {past[:5]}'
        spilling = visit.page.evaluate(SPILLING_HEADERS_JS, tables.CSS_CLASS)
        assert not spilling, f'{page} at 390 px: headers wider than their cells: {spilling[:5]}'
        outside = visit.page.evaluate("""cls => Array.from(document.querySelectorAll('article .' + cls)).filter((box) =>
            box.getClientRects().length && (box.getBoundingClientRect().left < -0.5
                                             || box.getBoundingClientRect().right > innerWidth + 0.5)).length""",
                                      tables.CSS_CLASS)
        assert not outside, f'{page} at 390 px: {outside} result tables reach past the screen'
        assert visit.page.evaluate('() => document.documentElement.scrollWidth') <= 390
        parts = visit.page.evaluate(PARTS_JS, tables.CSS_CLASS)
        print(f'{page} at 390 px ({theme}): {parts["parted"]} result tables in parts')
        assert not parts['problems'], f'{page} at 390 px: {parts["problems"][:5]}'
        if page in PHONE_PARTED_CHAPTERS:
            assert parts['parted'] >= 1, f'{page} at 390 px: its widest tables are not in parts'
            smallest = visit.page.evaluate(SMALLEST_TYPE_JS, tables.CSS_CLASS)
            assert smallest['parts'] >= smallest['others'], f'{page} at 390 px: parts in smaller type: {smallest}'
            visit.page.set_viewport_size({'width': 1280, 'height': 844})
            next_frames(visit.page)
            assert visit.page.evaluate(PARTS_JS, tables.CSS_CLASS)['parted'] == 0, f'{page}: parts at 1280 px'
            assert not visit.page.evaluate(WIDE_RESULT_TABLES_JS, tables.CSS_CLASS), f'{page}: wide tables at 1280 px'
            visit.page.set_viewport_size({'width': 390, 'height': 844})
            next_frames(visit.page)
            again = visit.page.evaluate(PARTS_JS, tables.CSS_CLASS)
            assert again['parted'] == parts['parted'] and not again['problems'], f'{page}: back at 390 px: {again}'
            assert not visit.page.evaluate(WIDE_RESULT_TABLES_JS, tables.CSS_CLASS), f'{page}: back at 390 px'


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


@pytest.mark.parametrize('width', [1280, 390])
@pytest.mark.parametrize('page', CHAPTERS)
def test_every_figure_shows_its_smallest_text_at_least_the_minimum(site, browser, page, width):
    """On a laptop a figure fits the column; on a phone it keeps its own size and scrolls sideways in its box."""
    figures = stored_figures(page)
    assert figures, f'{page}: no stored figure'
    missing = [f['cell'] for f in figures if not f['text']]
    assert not missing, (f'{page}: figures of cells {missing} carry no text record '
                         '(plots.use_book_style() installs it; re-execute the notebook)')
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=width, height=844) as visit:
        visit.page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        load_every_image(visit.page)
        for figure in figures:
            image = visit.page.locator(f'main img[src$="{figure["name"]}"]').first
            assert image.count() == 1, f'{page}: the figure of cell {figure["cell"]} is not on the page'
            shown = image.evaluate('i => i.getBoundingClientRect().width')
            assert shown > 0, f'{page}: the figure of cell {figure["cell"]} is not shown'

            px = plots.shown_text_px(figure['text'], figure['png_width'], shown)
            assert px >= plots.MIN_TEXT_PX, (
                f'{page} at {width} px: cell {figure["cell"]}\'s smallest text is {figure["text"]["min_font_pt"]} pt '
                f'in a {figure["text"]["width_in"]} in figure shown {shown:.0f} px wide: {px:.1f} px, under '
                f'{plots.MIN_TEXT_PX} px')


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_image_has_an_alt_text_that_describes_it(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
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


@pytest.mark.parametrize('page', CHAPTERS)
def test_every_slider_announces_its_value_and_unit_and_every_plot_has_a_description(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
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


@pytest.mark.parametrize('page', CHAPTERS)
def test_worked_answers_are_hidden_until_clicked(site, browser, page):
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
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


@pytest.mark.parametrize('page', CHAPTERS)
def test_bookkeeping_is_out_of_sight_and_the_reading_time_is_under_the_title(site, browser, page):
    notebook = json.loads((ROOT / f'{page}.ipynb').read_text(encoding='utf-8'))
    calls = sum(''.join(c['source']).count('keep(') for c in notebook['cells'] if c['cell_type'] == 'code')
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html')) as visit:
        shown = sum(text.count('keep(') for text in visit.page.locator('div.cell_input').all_inner_texts())
        assert shown <= 0.1 * calls, f'{page}: {shown} of {calls} keep() calls are shown on the page'
        line = visit.page.locator('article .physai-reading-time').first
        assert line.count() == 1 and line.is_visible(), f'{page}: no reading time under the title'
        assert line.inner_text().startswith('Time: about'), line.inner_text()
        if page.endswith('/01_position_actuators'):  # one sitting: the main line, then the optional Going further
            assert 'to read the optional part' in line.inner_text(), line.inner_text()


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
        tab.goto(urllib.parse.urljoin(site, page + '.html'), wait_until='networkidle')  # no request for 500 ms
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


# --- the page panels as a reader and an instructor meet them ----------------------------------------------------------

# The sizes a panel's text is shown at and its controls' heights, CSS px: every visible text of its plots (the font
# size times the SVG's scale on the page) and of its HTML, and every input, select and button.
PANEL_SIZES_JS = """root => {
    const texts = [], targets = [];
    for (const t of root.querySelectorAll('svg text')) {
        const svg = t.ownerSVGElement, box = t.getBoundingClientRect();
        if (!t.textContent.trim() || box.width === 0 || getComputedStyle(svg).display === 'none') continue;
        const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
        texts.push([parseFloat(getComputedStyle(t).fontSize) * scale, t.textContent.slice(0, 40)]);
    }
    for (const e of root.querySelectorAll('*')) {
        if (e.closest('svg') || e.offsetParent === null) continue;
        const own = Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
        if (own) texts.push([parseFloat(getComputedStyle(e).fontSize), (e.className || e.tagName) + ': ' + e.textContent.slice(0, 30)]);
    }
    for (const e of root.querySelectorAll('input, select, button')) {
        if (e.offsetParent !== null) targets.push([e.getBoundingClientRect().height, e.id || e.textContent.slice(0, 30)]);
    }
    const r = root.getBoundingClientRect();
    const plots = Array.from(root.querySelectorAll('.pl-plots svg')).filter((s) => getComputedStyle(s).display !== 'none')
        .map((s) => { const b = s.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; });
    return {texts, targets, plots, overflowX: root.scrollWidth - root.clientWidth, overflowY: root.scrollHeight - root.clientHeight,
            right: r.right, bottom: r.bottom, width: innerWidth, height: innerHeight};
}"""


@contextlib.contextmanager
def open_panels(browser, site, page, *, width, height):
    """A chapter page at (width, height) CSS px with its panels drawn (their first view, no engine): yields
    (visit, [(id, locator) of each panel]), and closes the page."""
    with PageVisit(browser, urllib.parse.urljoin(site, page + '.html'), width=width, height=height) as visit:
        roots = visit.page.evaluate(PANEL_ROOTS_JS)
        for root_id in roots:
            visit.page.wait_for_selector(f'[id="{root_id}"][data-drawn]', state='attached', timeout=20_000)
        yield visit, [(root_id, visit.page.locator(f'[id="{root_id}"]')) for root_id in roots]


@pytest.mark.parametrize('page', CHAPTERS)
def test_present_view_fits_a_projector_at_150_percent_with_text_of_13_px_or_more(site, browser, page):
    """1280x720 at 150 % zoom is 853x480 CSS px: the present view fits it, no scrolling, and every text reads at 13 CSS
    px (20 device px) or more; Esc leaves it."""
    with open_panels(browser, site, page, width=853, height=480) as (visit, panels):
        for root_id, panel in panels:
            panel.locator('button:text("present")').click()
            visit.page.wait_for_function('id => document.getElementById(id).classList.contains("physai-panel-present")',
                                         arg=root_id)
            sizes = panel.evaluate(PANEL_SIZES_JS)
            screenshot(panel, path=SCREENSHOTS / f'{page.replace("/", "__")}-{root_id}-present-853x480.png')
            assert sizes['overflowX'] <= 1 and sizes['overflowY'] <= 1, f'{page}: the present view scrolls: {sizes}'
            assert all(b <= sizes['height'] + 1 and r <= sizes['width'] + 1 for _, _, r, b in sizes['plots']), sizes['plots']
            small = [t for t in sizes['texts'] if t[0] < 13 - 0.01]
            assert not small, f'{page}: text under 13 CSS px in the present view: {small[:5]}'
            visit.page.keyboard.press('Escape')
            assert not panel.evaluate('p => p.classList.contains("physai-panel-present")'), f'{page}: Esc did not leave'
        assert not visit.our_errors(), '\n'.join(visit.our_errors())


@pytest.mark.parametrize('page', CHAPTERS)
def test_on_a_phone_panel_text_is_10_px_or_more_targets_24_px_and_the_present_view_stacks(site, browser, page):
    with open_panels(browser, site, page, width=390, height=844) as (visit, panels):
        for root_id, panel in panels:
            sizes = panel.evaluate(PANEL_SIZES_JS)
            small = [t for t in sizes['texts'] if t[0] < 10 - 0.01]
            assert not small, f'{page}: text under 10 px on a phone: {small[:5]}'
            low = [t for t in sizes['targets'] if t[0] < 24 - 0.01]
            assert not low, f'{page}: touch targets under 24 px: {low}'
            assert sizes['right'] <= 390 + 1, f'{page}: the panel is wider than the phone'
            panel.locator('button:text("present")').click()
            sizes = panel.evaluate(PANEL_SIZES_JS)
            lefts = {round(left) for left, _, _, _ in sizes['plots']}
            assert len(lefts) == 1 and sizes['overflowX'] <= 1, f'{page}: the present view does not stack: {sizes["plots"]}'
            visit.page.keyboard.press('Escape')


# Each legend entry's box and the points of the data drawn in its plot (inside the plot box), in the SVG's units.
LEGENDS_JS = """root => Array.from(root.querySelectorAll('.pl-plots svg')).filter((s) => getComputedStyle(s).display !== 'none')
    .map((svg) => {
        const frame = svg.querySelector('.pl-frame').getBBox();
        const inside = (x, y) => x >= frame.x && x <= frame.x + frame.width && y >= frame.y && y <= frame.y + frame.height;
        const points = [];
        for (const path of svg.querySelectorAll('.pl-body path')) {
            const d = path.getAttribute('d') || '';
            for (const m of d.matchAll(/[ML]\\s*(-?[\\d.]+)[ ,](-?[\\d.]+)/g)) {
                const x = Number(m[1]), y = Number(m[2]);
                if (inside(x, y)) points.push([x, y]);
            }
        }
        const entries = Array.from(svg.querySelectorAll('.pl-legend-entry')).map((g) => {
            const b = g.getBBox();
            return {label: g.textContent, box: [b.x, b.y, b.x + b.width, b.y + b.height]};
        });
        return {plot: svg.getAttribute('class'), frame: [frame.x, frame.y, frame.x + frame.width, frame.y + frame.height],
                entries, points};
    })"""


def _legends_clear(page_name, plots):
    for plot in plots:
        for entry in plot['entries']:
            x0, y0, x1, y1 = entry['box']
            on = [p for p in plot['points'] if x0 <= p[0] <= x1 and y0 <= p[1] <= y1]
            assert not on, f'{page_name}: legend "{entry["label"]}" of {plot["plot"]} covers data at {on[:3]}'
            fx0, fy0, fx1, fy1 = plot['frame']
            assert x1 <= fx0 or x0 >= fx1 or y1 <= fy0 or y0 >= fy1, (
                f'{page_name}: legend "{entry["label"]}" of {plot["plot"]} sits inside the plot box')


@pytest.mark.parametrize('page', CHAPTERS)
def test_legends_sit_off_the_plotted_data_and_going_live_keeps_the_first_view_s_setting(site, browser, page):
    with open_panels(browser, site, page, width=1280, height=800) as (visit, panels):
        for root_id, panel in panels:
            plots_seen = panel.evaluate(LEGENDS_JS)
            assert any(p['entries'] for p in plots_seen), f'{page}: #{root_id} draws no legend'
            _legends_clear(page, plots_seen)
            # the first view is the panel's own start, and going live keeps it: the same experiment
            key = panel.get_attribute('data-panel')
            values = visit.page.evaluate('key => window.physaiPanels[key].values', key)
            assert json.loads(panel.get_attribute('data-frame')) == values, f'{page}: the first view is another setting'
            panel.locator('.pl-run').click()
            visit.page.wait_for_selector(f'[id="{root_id}"][data-mode=live][data-state=idle]', state='attached',
                                         timeout=PANEL_TIMEOUT_MS)
            assert visit.page.evaluate('key => window.physaiPanels[key].values', key) == values
            _legends_clear(page, panel.evaluate(LEGENDS_JS))


LECTURE_VERDICTS = {'servo': 'diverged', 'pendulum': 'diverged', 'pd': 'quiet', 'sysid': 'MAE', 'gripper': 'slips',
                    'firmware': 'no chatter'}
"""What the readout of each lecture link's setting says, as book/instructors.md describes it."""


def test_the_instructors_lecture_links_open_their_setting_live_in_the_present_view(site, browser):
    text = (ROOT / 'book' / 'instructors.md').read_text(encoding='utf-8')
    links = re.findall(r'href="\.\./(notebooks/[0-9a-z_]+\.html\?[^"]+)"', text)
    assert len(links) == len(set(CHAPTERS) - NO_PANEL_YET)
    for link in links:
        with PageVisit(browser, urllib.parse.urljoin(site, link), width=1280, height=720) as visit:
            key = re.search(r'#physai-panel-([a-z-]+)', link).group(1)
            root = f'#physai-panel-{key}'
            visit.page.wait_for_selector(f'{root}[data-mode=live][data-state=idle]', state='attached',
                                         timeout=PANEL_TIMEOUT_MS)
            assert visit.page.eval_on_selector(root, 'p => p.classList.contains("physai-panel-present")'), link
            assert visit.page.eval_on_selector(f'{root} .pl-address', 'e => e.hidden'), link  # every value in range
            readout = visit.page.inner_text(f'{root} .pl-readout')
            assert LECTURE_VERDICTS[key] in readout, f'{link}: {readout!r}'
            assert not visit.our_errors(), '\n'.join(visit.our_errors())


ARM3D_PANELS = {'notebooks/03_where_pd_runs': 'pd', 'notebooks/04_servo_sysid': 'sysid'}
"""The chapters whose page panel has the SO-101's 3D view (book/_static/panels/arm3d_view.js), and the panel's key."""

ARM3D_PICTURE_JS = """key => { const v = window.physaiPanels[key].arm3d.view; return v.snapshot(); }"""


def _open_arm3d(visit, key):
    """Press the panel's "show the arm in 3D" (it brings MuJoCo, three.js and the arm) and wait until it plays the run."""
    root = f'#physai-panel-{key}'
    visit.page.wait_for_selector(f'{root}[data-drawn]', state='attached', timeout=PANEL_TIMEOUT_MS)
    visit.page.click(f'{root} .pl-arm3d > .pl-arm3d-head > button')
    visit.page.wait_for_function("""key => { const a = window.physaiPanels[key].arm3d;
        return a.root.dataset.arm3d === 'open' && a.view && a.view._clip && a.view.frames > 0; }""",
                                 arg=key, timeout=PANEL_TIMEOUT_MS)


def _canvas_spread(visit, key):
    """The spread (standard deviation) of the grey levels of the 3D view's canvas as the page shows it."""
    import io
    import numpy as np
    from PIL import Image
    png = screenshot(visit.page.locator(f'#physai-panel-{key} .pl-arm3d canvas'))
    return float(np.asarray(Image.open(io.BytesIO(png)).convert('L'), dtype=float).std())


@pytest.mark.slow
@pytest.mark.parametrize('page', list(ARM3D_PANELS))
def test_the_arm_in_3d_opens_on_the_chapter_page_without_errors_and_its_picture_follows_the_pose(site, browser, page):
    """On the built page (desktop, phone, dark, a projector at 150 %): the 3D view opens from its button, its
    picture changes when the pose does (the run's first moment against one later), no errors; screenshots of each."""
    key = ARM3D_PANELS[page]
    url = urllib.parse.urljoin(site, page + '.html')
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = page.replace('/', '__')
    with PageVisit(browser, url, width=1280, height=800) as visit:
        _open_arm3d(visit, key)
        view = f"window.physaiPanels['{key}'].arm3d.view"
        visit.page.evaluate(f'() => {{ {view}.pause(); {view}.seek(0); }}')
        first = visit.page.evaluate(ARM3D_PICTURE_JS, key)
        end = visit.page.evaluate(f'() => {view}._clip.time.at(-1)')
        visit.page.evaluate(f'() => {view}.seek({0.4 * end})')
        later = visit.page.evaluate(ARM3D_PICTURE_JS, key)
        assert later != first, f'{page}: the picture did not change with the pose'
        visit.page.evaluate(f'() => {{ {view}.seek({0.15 * end}); {view}.requestRender(); }}')
        next_frames(visit.page)
        assert _canvas_spread(visit, key) > 5, f'{page}: the 3D view is blank'
        # the window as a reader sees it, the view in its middle (a screenshot of the whole panel, taller than the
        # window, lays the page out again at another size, which clears the canvas until its next frame)
        visit.page.locator(f'#physai-panel-{key} .pl-arm3d').evaluate("v => v.scrollIntoView({block: 'center'})")
        visit.page.evaluate(f'() => {view}.requestRender()')
        next_frames(visit.page)
        screenshot(visit.page, path=SCREENSHOTS / f'{name}-arm3d-1280x800.png')
        visit.page.evaluate(f"() => {{ document.documentElement.dataset.theme = 'dark'; {view}.requestRender(); }}")
        next_frames(visit.page)
        screenshot(visit.page, path=SCREENSHOTS / f'{name}-arm3d-1280x800-dark.png')
        assert not visit.our_errors(), '\n'.join(visit.our_errors())
    with PageVisit(browser, url, width=390, height=844) as visit:
        _open_arm3d(visit, key)
        wait_arm3d_settled(visit.page, key)
        view = visit.page.locator(f'#physai-panel-{key} .pl-arm3d')
        view.evaluate("v => v.scrollIntoView({block: 'center'})")   # clear of the page's sticky header
        next_frames(visit.page)
        screenshot(view, path=SCREENSHOTS / f'{name}-arm3d-390x844.png')
        box = visit.page.locator(f'#physai-panel-{key} .pl-arm3d canvas').bounding_box()
        assert box['x'] >= 0 and box['x'] + box['width'] <= 390 + 1, f'{page}: the 3D view is wider than a phone: {box}'
        assert _canvas_spread(visit, key) > 5, f'{page}: the 3D view is blank on a phone'
        assert not visit.our_errors(), '\n'.join(visit.our_errors())
    with PageVisit(browser, url, width=853, height=480, scale=1.5) as visit:   # 1280x720 at 150 %
        _open_arm3d(visit, key)
        visit.page.locator(f'#physai-panel-{key}').locator('button:text("present")').click()
        visit.page.wait_for_function("""key => { const a = window.physaiPanels[key].arm3d;
            return a.view && a.root.classList.contains('pl-present-aside'); }""", arg=key, timeout=PANEL_TIMEOUT_MS)
        wait_arm3d_settled(visit.page, key)   # the view took the panel's last run (arm3d_view.js QUIET_MS) and drew it
        panel = visit.page.locator(f'#physai-panel-{key}')
        sizes = panel.evaluate(PANEL_SIZES_JS)
        screenshot(panel, path=SCREENSHOTS / f'{name}-arm3d-present-853x480.png')
        assert sizes['overflowX'] <= 1 and sizes['overflowY'] <= 1, f'{page}: the present view scrolls: {sizes}'
        small = [t for t in sizes['texts'] if t[0] < 13 - 0.01]
        assert not small, f'{page}: text under 13 CSS px in the present view with the 3D view: {small[:5]}'
        box = visit.page.locator(f'#physai-panel-{key} .pl-arm3d canvas').bounding_box()
        assert box['y'] + box['height'] <= 480 + 1 and box['height'] >= 480 / 3, f'{page}: the 3D view: {box}'
        assert _canvas_spread(visit, key) > 5, f'{page}: the 3D view is blank in the present view'
        assert not visit.our_errors(), '\n'.join(visit.our_errors())


# --- the present view through a lecture (issue 43) --------------------------------------------------------------

CHAPTER_PANELS = {'notebooks/01_position_actuators': 'servo', 'notebooks/02_actuator_models': 'pendulum',
                  'notebooks/03_where_pd_runs': 'pd', 'notebooks/04_servo_sysid': 'sysid',
                  'notebooks/05_gripper': 'gripper', 'notebooks/06_servo_firmware': 'firmware'}
"""Each chapter's page panel, by its key."""

# What a panel's present view gets wrong, besides its sizes (PANEL_SIZES_JS): the readout cut; anything in the plots'
# box beside the plots (chapter 3 and 4's 3D button) over a plot; a verdict over a plot (a text of class pl-verdict)
# or a note over the data (a muted text with a halo: chapter 1's "n/a") on what the plot draws, its paths sampled
# every 2 units and its circles; e notation in the readout or a verdict; a
# verdict whose colour disagrees with the readout's (one rule: bad reads in the diverged colour, bold, else the text's
# colour).
PRESENT_PROBLEMS_JS = """root => {
    const problems = [], readout = root.querySelector('.pl-readout');
    if (readout.scrollHeight > readout.clientHeight + 1 || readout.scrollWidth > readout.clientWidth + 1)
        problems.push('the readout is cut: ' + readout.textContent);
    const plots = Array.from(root.querySelectorAll('.pl-plots > svg')).filter((s) => getComputedStyle(s).display !== 'none');
    const overlap = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    for (const other of root.querySelectorAll('.pl-plots > :not(svg)')) {
        if (other.classList.contains('pl-present-aside')) continue;
        for (const target of other.querySelectorAll('button, select, span')) {
            if (!target.offsetParent) continue;
            for (const svg of plots) if (overlap(target.getBoundingClientRect(), svg.getBoundingClientRect()))
                problems.push(`"${target.textContent.trim()}" covers the plot ${svg.getAttribute('class')}`);
        }
    }
    if (/\\de[+-]\\d/.test(readout.textContent)) problems.push('e notation in the readout: ' + readout.textContent);
    const readoutColor = getComputedStyle(readout).color, bad = readout.classList.contains('pl-bad');
    for (const svg of plots) {
        const points = [];
        for (const path of svg.querySelectorAll('path')) {
            if (path.closest('.pl-legend') || path.closest('defs')) continue;
            let last = null;
            for (const m of (path.getAttribute('d') || '').matchAll(/([MLZ])\\s*(?:(-?[\\d.]+)[ ,](-?[\\d.]+))?/g)) {
                if (m[1] === 'Z') continue;
                const x = Number(m[2]), y = Number(m[3]);
                if (m[1] === 'L' && last) {
                    const n = Math.max(1, Math.ceil(Math.hypot(x - last[0], y - last[1]) / 2));
                    for (let i = 1; i <= n; i++) points.push([last[0] + (x - last[0]) * i / n, last[1] + (y - last[1]) * i / n]);
                } else points.push([x, y]);
                last = [x, y];
            }
        }
        for (const c of svg.querySelectorAll('circle')) points.push([Number(c.getAttribute('cx')), Number(c.getAttribute('cy'))]);
        const frame = svg.querySelector('.pl-frame').getBBox();
        for (const t of svg.querySelectorAll('text.pl-verdict, text.pl-muted.pl-halo')) {
            const b = t.getBBox();
            const on = points.filter(([x, y]) => x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height
                && x >= frame.x && x <= frame.x + frame.width && y >= frame.y && y <= frame.y + frame.height);
            if (on.length) problems.push(`the text "${t.textContent}" crosses ${on.length} drawn points of ${svg.getAttribute('class')}`);
            if (!t.classList.contains('pl-verdict')) continue;   // a note over the data (chapter 1's "n/a"): not a verdict
            if (/\\de[+-]\\d/.test(t.textContent)) problems.push('e notation in a verdict: ' + t.textContent);
            if (t.classList.contains('pl-bad') !== bad || (bad && getComputedStyle(t).fill !== readoutColor))
                problems.push(`the verdict "${t.textContent}" is coloured unlike the readout (${bad ? 'bad' : 'good'})`);
        }
    }
    return problems;
}"""

# Every control's settings to try: each range at its two ends, each choice at each option.
CONTROL_SETTINGS_JS = """root => Array.from(root.querySelectorAll('.pl-controls input[type=range], .pl-controls select')).flatMap((c) =>
    c.tagName === 'SELECT' ? Array.from(c.options).map((o) => [c.id, o.value]) : [[c.id, c.min], [c.id, c.max]])"""

SET_JS = """([id, value]) => { const c = document.getElementById(id); c.value = value;
    c.dispatchEvent(new Event('input', {bubbles: true})); c.dispatchEvent(new Event('change', {bubbles: true})); }"""


def _settle(visit, key, drawn_before):
    """Wait until panel ``key`` has drawn a picture after ``drawn_before`` and is not running."""
    visit.page.wait_for_function("""([key, before]) => { const r = document.getElementById('physai-panel-' + key);
        return Number(r.dataset.drawn) > before && r.dataset.state === 'idle'; }""", arg=[key, drawn_before],
                                 timeout=PANEL_TIMEOUT_MS)
    next_frames(visit.page)


def _drawn(visit, key):
    return int(visit.page.get_attribute(f'#physai-panel-{key}', 'data-drawn'))


def _present_problems(visit, key, *, width, height, smallest):
    """What is wrong with panel ``key``'s present view in a window of (width, height): it scrolls, a plot reaches past
    the window, a text is under ``smallest`` CSS px, or PRESENT_PROBLEMS_JS finds something."""
    panel = visit.page.locator(f'#physai-panel-{key}')
    sizes = panel.evaluate(PANEL_SIZES_JS)
    problems = list(panel.evaluate(PRESENT_PROBLEMS_JS))
    if sizes['overflowX'] > 1 or sizes['overflowY'] > 1:
        problems.append(f'the present view scrolls by {sizes["overflowX"]} x {sizes["overflowY"]} px')
    problems += [f'a plot reaches past the window: {p}' for p in sizes['plots'] if p[3] > height + 1 or p[2] > width + 1]
    small = [t for t in sizes['texts'] if t[0] < smallest - 0.01]
    if small:
        problems.append(f'text under {smallest:.1f} CSS px: {small[:3]}')
    return problems


PRESENT_WINDOWS = {'projector-150': (853, 480, 1.5, 13.0), 'screen-1080p': (1920, 1080, 1, 0.02 * 1080)}
"""The windows a present view must hold in: a 720p projector at 150 % (853x480 CSS px, its smallest text 13 CSS px) and
a 1920x1080 screen (its smallest text 2 % of the screen's height, for the back row)."""


@pytest.mark.parametrize('window', list(PRESENT_WINDOWS))
@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_the_present_view_holds_after_every_control_s_extremes(site, browser, page, window):
    """Live, in the present view: every range control at each end and every choice at each option (each from the
    chapter's setting): the view never scrolls, its text keeps its least size, the readout is whole, nothing covers a
    plot, no verdict crosses the data and every verdict is coloured by the one rule."""
    key = CHAPTER_PANELS[page]
    width, height, scale, smallest = PRESENT_WINDOWS[window]
    url = urllib.parse.urljoin(site, f'{page}.html?{key}-present=1#physai-panel-{key}')
    with PageVisit(browser, url, width=width, height=height, scale=scale) as visit:
        root = visit.page.locator(f'#physai-panel-{key}')
        visit.page.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                                     timeout=PANEL_TIMEOUT_MS)
        next_frames(visit.page)
        found = [f'start: {p}' for p in _present_problems(visit, key, width=width, height=height, smallest=smallest)]
        for control, value in root.evaluate(CONTROL_SETTINGS_JS):
            before = _drawn(visit, key)
            visit.page.evaluate(SET_JS, [control, value])
            _settle(visit, key, before)
            found += [f'{control}={value}: {p}'
                      for p in _present_problems(visit, key, width=width, height=height, smallest=smallest)]
            before = _drawn(visit, key)
            root.locator('button:text("reset")').click()
            _settle(visit, key, before)
        screenshot(visit.page, path=SCREENSHOTS / f'{page.replace("/", "__")}-present-{window}.png')
        assert not found, f'{page} at {width}x{height}:\n' + '\n'.join(found)
        assert not visit.our_errors(), '\n'.join(visit.our_errors())


LECTURE_SWITCHES = {'servo': ('integrator', 'implicitfast'), 'pendulum': ('integrator', 'discrete'),
                    'pd': ('backend', 'in-loop'), 'sysid': ('integrator', 'implicitfast'), 'gripper': ('mass', 1.0),
                    'firmware': ('goal_speed', 0)}
"""The switch book/instructors.md suggests after each lecture link opens: a control's name and its value (SI)."""

SWITCH_JS = """([key, name, value]) => { const c = window.physaiPanels[key].byName[name];
    const input = document.getElementById(`physai-panel-${key}-${name}`); input.value = c.position(value);
    input.dispatchEvent(new Event('input', {bubbles: true})); input.dispatchEvent(new Event('change', {bubbles: true}));
}"""


def test_the_lecture_links_and_their_switches_hold_in_the_present_view_at_150_percent(site, browser):
    """Each lecture link of book/instructors.md at 853x480 (a 720p projector at 150 %), before and after the switch
    the page suggests: the present view holds (as above); screenshots of both."""
    text = (ROOT / 'book' / 'instructors.md').read_text(encoding='utf-8')
    links = re.findall(r'href="\.\./(notebooks/[0-9a-z_]+\.html\?[^"]+)"', text)
    found = []
    for link in links:
        key = re.search(r'#physai-panel-([a-z-]+)', link).group(1)
        name = link.split('.html')[0].replace('/', '__')
        with PageVisit(browser, urllib.parse.urljoin(site, link), width=853, height=480, scale=1.5) as visit:
            visit.page.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                                         timeout=PANEL_TIMEOUT_MS)
            next_frames(visit.page)
            screenshot(visit.page, path=SCREENSHOTS / f'{name}-lecture-853x480.png')
            found += [f'{link}: {p}' for p in _present_problems(visit, key, width=853, height=480, smallest=13)]
            control, value = LECTURE_SWITCHES[key]
            before = _drawn(visit, key)
            visit.page.evaluate(SWITCH_JS, [key, control, value])
            _settle(visit, key, before)
            screenshot(visit.page, path=SCREENSHOTS / f'{name}-lecture-switched-853x480.png')
            found += [f'{link} then {control}={value}: {p}'
                      for p in _present_problems(visit, key, width=853, height=480, smallest=13)]
            assert not visit.our_errors(), '\n'.join(visit.our_errors())
    assert not found, '\n'.join(found)


# What a text over a plot crosses in the page's column, on every frame from a control's change until the panel is idle
# again (chapter 3's "running…" beside the trace drawn so far, then the verdicts): PRESENT_PROBLEMS_JS's sampled paths.
# Started before the change (window.physaiCrossings), read after it.
WATCH_CROSSINGS_JS = f"""key => {{ const check = {PRESENT_PROBLEMS_JS}, root = document.getElementById('physai-panel-' + key);
    window.physaiCrossings = new Promise((resolve) => {{
        const found = new Set(), texts = new Set();
        let frames = 0, ran = false;
        const tick = () => {{
            frames += 1;
            for (const p of check(root)) if (p.includes(' crosses ')) found.add(p);
            for (const t of root.querySelectorAll('svg text.pl-verdict, svg text.pl-muted.pl-halo')) texts.add(t.textContent);
            ran ||= root.dataset.state !== 'idle';
            if ((ran && root.dataset.state === 'idle') || frames > 5000) resolve({{found: [...found], texts: [...texts], frames}});
            else requestAnimationFrame(tick);
        }};
        requestAnimationFrame(tick);
    }}); }}"""

PAGE_COLUMN_SETTINGS = {'gripper': [('condim', 1), ('timestep', 0.0005)], 'pd': [('kv', 2.0), ('timestep', 0.0005)]}
"""Settings beyond the lecture switches (LECTURE_SWITCHES) whose texts over the plots the page's column is checked at:
chapter 5 at condim 1 (the cube slides past the plot's top, over the dotted slip line), chapters 3 and 5's runs (their
"running…" while the traces grow, a slow run at 0.5 ms: RUNNING_SEEN)."""

RUNNING_SEEN = {'gripper': ('timestep', 0.0005), 'pd': ('timestep', 0.0005)}
"""The setting of PAGE_COLUMN_SETTINGS after which a panel's "running…" must have been seen over its plot on some
frame (so that its place was checked, not only its verdict's)."""


@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_texts_over_the_plots_cross_nothing_drawn_in_the_page_column(site, browser, page):
    """In the page's column (where a verdict is never left out, as the present view may): live, after the lecture
    switch and PAGE_COLUMN_SETTINGS, on every frame of each run, no verdict and no note over a plot (chapters 3 and
    5's "running…") crosses a drawn path or mark: each finds a spot that crosses nothing (Plot.placeText)."""
    key = CHAPTER_PANELS[page]
    found = []
    with PageVisit(browser, urllib.parse.urljoin(site, f'{page}.html#physai-panel-{key}'), width=1280,
                   height=900) as visit:
        visit.page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=PANEL_TIMEOUT_MS)
        visit.page.click(f'#physai-panel-{key} .pl-run')
        visit.page.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                                     timeout=PANEL_TIMEOUT_MS)
        for control, value in [LECTURE_SWITCHES[key], *PAGE_COLUMN_SETTINGS.get(key, [])]:
            visit.page.evaluate(WATCH_CROSSINGS_JS, key)
            visit.page.evaluate(SWITCH_JS, [key, control, value])
            seen = visit.page.evaluate('() => window.physaiCrossings')
            assert seen['texts'], f'{page}: no verdict after {control}={value}'
            if RUNNING_SEEN.get(key) == (control, value):
                assert any(t.startswith('running…') for t in seen['texts']), f'{page}: no "running…" seen: {seen}'
            found += [f'{control}={value}: {p}' for p in seen['found']]
            next_frames(visit.page)
            screenshot(visit.page.locator(f'#physai-panel-{key}'),
                       path=SCREENSHOTS / f'{page.replace("/", "__")}-column-{control}-{value}.png')
        assert not visit.our_errors(), '\n'.join(visit.our_errors())
    assert not found, f'{page}:\n' + '\n'.join(found)


# A pause long enough for what a touch could start to show (the address follows 250 ms after a move, ui.js): the test
# checks that nothing happens, which no event announces.
AFTER_TOUCH_JS = """() => new Promise((resolve) => setTimeout(() => requestAnimationFrame(() => resolve(true)), 600))"""


@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_a_finger_that_scrolls_or_taps_on_a_slider_changes_neither_its_value_nor_the_address(site, browser, page):
    """On a phone (390x844, touch), live: a vertical swipe that starts on each slider and a tap on it away from its
    thumb leave its value, its text and the page's address as they were (a log slider's rounded position used to
    nudge 100 to 100.29 and rewrite the address); a drag along it still moves it."""
    key = CHAPTER_PANELS[page]
    context = browser.new_context(viewport={'width': 390, 'height': 844}, has_touch=True, is_mobile=True)
    context.route('**/*', lambda route: route.continue_() if route.request.url.startswith(site)
                  or route.request.url.startswith('data:') else route.abort())
    page_ = context.new_page()
    page_.goto(urllib.parse.urljoin(site, page + '.html'))
    page_.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=PANEL_TIMEOUT_MS)
    page_.click(f'#physai-panel-{key} .pl-run')
    page_.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                            timeout=PANEL_TIMEOUT_MS)
    cdp = context.new_cdp_session(page_)
    state_js = """key => ({values: window.physaiPanels[key].values, address: location.href,
        texts: Array.from(document.querySelectorAll('#physai-panel-' + key + ' .pl-value')).map((e) => e.textContent)})"""
    moved = []
    for slider in page_.locator(f'#physai-panel-{key} .pl-controls input[type=range]').all():
        if slider.is_disabled():
            continue
        name = slider.get_attribute('id')
        slider.evaluate("s => s.scrollIntoView({block: 'center'})")
        box = slider.bounding_box()
        before = page_.evaluate(state_js, key)
        for fraction in (0.2, 0.8):   # a swipe down and a tap, away from the thumb on either side
            x, y = box['x'] + fraction * box['width'], box['y'] + box['height'] / 2
            cdp.send('Input.synthesizeScrollGesture', {'x': x, 'y': y, 'yDistance': -120, 'xDistance': 0,
                                                       'gestureSourceType': 'touch', 'speed': 600})
            slider.evaluate("s => s.scrollIntoView({block: 'center'})")
            box = slider.bounding_box()
            x, y = box['x'] + fraction * box['width'], box['y'] + box['height'] / 2
            cdp.send('Input.dispatchTouchEvent', {'type': 'touchStart', 'touchPoints': [{'x': x, 'y': y}]})
            cdp.send('Input.dispatchTouchEvent', {'type': 'touchEnd', 'touchPoints': []})
            page_.evaluate(AFTER_TOUCH_JS)
        page_.wait_for_selector(f'#physai-panel-{key}[data-state=idle]', state='attached', timeout=PANEL_TIMEOUT_MS)
        after = page_.evaluate(state_js, key)
        if after != before:
            moved.append(f'{name}: {before} -> {after}')
    assert not moved, f'{page}: a touch that was not a drag changed something:\n' + '\n'.join(moved)
    # a drag along the first slider moves it (more across than down, past the touch threshold)
    slider = page_.locator(f'#physai-panel-{key} .pl-controls input[type=range]').first
    slider.evaluate("s => s.scrollIntoView({block: 'center'})")
    box = slider.bounding_box()
    before = page_.evaluate(state_js, key)
    y = box['y'] + box['height'] / 2
    cdp.send('Input.dispatchTouchEvent', {'type': 'touchStart', 'touchPoints': [{'x': box['x'] + 0.3 * box['width'], 'y': y}]})
    for k in range(1, 11):
        cdp.send('Input.dispatchTouchEvent', {'type': 'touchMove',
                                              'touchPoints': [{'x': box['x'] + (0.3 + 0.05 * k) * box['width'], 'y': y}]})
    cdp.send('Input.dispatchTouchEvent', {'type': 'touchEnd', 'touchPoints': []})
    page_.evaluate(AFTER_TOUCH_JS)
    assert page_.evaluate(state_js, key)['values'] != before['values'], f'{page}: a drag along a slider moved nothing'
    context.close()


@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_the_keyboard_stays_in_the_present_view_while_it_is_on(site, browser, page):
    """Tab and Shift+Tab, many times round, keep the focus on the present view's own controls (never the page hidden
    behind it); Esc leaves it and gives the focus back to its button."""
    key = CHAPTER_PANELS[page]
    with open_panels(browser, site, page, width=1280, height=800) as (visit, panels):
        panel = visit.page.locator(f'#physai-panel-{key}')
        panel.locator('button:text("present")').click()
        inside_js = "key => document.getElementById('physai-panel-' + key).contains(document.activeElement)"
        outside = []
        for press in ['Tab'] * 30 + ['Shift+Tab'] * 30:
            visit.page.keyboard.press(press)
            if not visit.page.evaluate(inside_js, key):
                outside.append(visit.page.evaluate('() => document.activeElement.outerHTML.slice(0, 80)'))
        assert not outside, f'{page}: the focus left the present view for {outside[:3]}'
        visit.page.keyboard.press('Escape')
        assert not panel.evaluate('p => p.classList.contains("physai-panel-present")')
        assert visit.page.evaluate('() => document.activeElement.textContent') == 'present'


def _luminance(rgb):
    channels = [c / 255 for c in rgb[:3]]
    channels = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]


def contrast(a, b):
    """WCAG's contrast ratio of two sRGB colours (r, g, b in 0..255)."""
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


# Every verdict's colour (the readout line and every text of class pl-verdict in a plot) and the background it is read
# on (the plot's or the panel's), as [r, g, b].
VERDICT_COLOURS_JS = """root => {
    const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
    const out = [], readout = root.querySelector('.pl-readout');
    out.push({text: readout.textContent, bad: readout.classList.contains('pl-bad'), color: rgb(getComputedStyle(readout).color),
              background: rgb(getComputedStyle(root).backgroundColor)});
    for (const t of root.querySelectorAll('svg text.pl-verdict')) {
        out.push({text: t.textContent, bad: t.classList.contains('pl-bad'), color: rgb(getComputedStyle(t).fill),
                  background: rgb(getComputedStyle(t.ownerSVGElement).backgroundColor)});
    }
    return out;
}"""

BAD_SETTINGS = {'servo': 'servo-kp=1000&servo-integrator=Euler',
                'pendulum': 'pendulum-model=implicit&pendulum-kp=30000&pendulum-kv=5&pendulum-h=20&pendulum-forcerange=100',
                'pd': 'pd-backend=in-loop', 'sysid': 'sysid-armature=0&sysid-h=20&sysid-integrator=Euler',
                'gripper': 'gripper-mass=3', 'firmware': None}
"""An address per chapter whose run gets a bad verdict (diverged, chatters or slips; book/instructors.md's lecture
links). Chapter 6's page panel has none: within its ranges nothing chatters or diverges (its stiffest, coarsest corner,
P 64 at 12.6 V, a 20 ms step and Euler, keeps a chatter margin of 2x), so there only the good verdicts are checked."""


@pytest.mark.parametrize('theme', ['light', 'dark'])
@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_every_verdict_reads_at_4_5_to_1_in_either_theme_by_one_colour_rule(site, browser, page, theme):
    """The chapter's setting and a failing one, live: every verdict (the readout and its copies over the plots) reads
    at WCAG AA's 4.5:1 or more on its background in both themes; a bad verdict is the diverged red, a good one the
    text's colour, the same in every chapter."""
    key = CHAPTER_PANELS[page]
    found, colours = [], {}
    queries = [f'{key}-present=0'] + ([BAD_SETTINGS[key]] if BAD_SETTINGS[key] else [])
    for query in queries:   # an address with a setting starts MuJoCo
        url = urllib.parse.urljoin(site, f'{page}.html?{query}#physai-panel-{key}')
        with PageVisit(browser, url, theme=theme, width=1280, height=800) as visit:
            visit.page.wait_for_selector(f'#physai-panel-{key}[data-mode=live][data-state=idle]', state='attached',
                                         timeout=PANEL_TIMEOUT_MS)
            next_frames(visit.page)
            for v in visit.page.locator(f'#physai-panel-{key}').evaluate(VERDICT_COLOURS_JS):
                ratio = contrast(v['color'], v['background'])
                colours.setdefault(v['bad'], set()).add(tuple(v['color']))
                if ratio < 4.5:
                    found.append(f'{v["text"]!r} at {ratio:.2f}:1 ({v["color"]} on {v["background"]})')
    assert (True in colours) == bool(BAD_SETTINGS[key]), f'{page}: bad verdicts {colours.get(True)} at {queries}'
    assert not found, f'{page} ({theme}):\n' + '\n'.join(found)
    assert all(len(c) == 1 for c in colours.values()), f'{page} ({theme}): more than one colour per verdict: {colours}'
    expected_bad = {'light': (214, 39, 40), 'dark': (255, 112, 112)}[theme]
    assert colours.get(True, {expected_bad}) == {expected_bad}, f'{page} ({theme}): a bad verdict in {colours[True]}'


def test_each_engine_file_is_fetched_once_per_page_and_every_download_button_states_its_size(site, browser):
    """Without a disk cache: chapter 1 live, its background worker started and done, fetches mujoco.wasm and mujoco.js
    once each (the worker gets the page's compiled engine); chapter 3's "show the arm in 3D", pressed first, states its
    download (three.js, the arm and MuJoCo, measured at build time) and fetches each file once."""
    for page, key in (('notebooks/01_position_actuators', 'servo'), ('notebooks/03_where_pd_runs', 'pd')):
        context = browser.new_context(viewport={'width': 1280, 'height': 800})
        context.route('**/*', lambda route: route.continue_() if route.request.url.startswith(site)
                      or route.request.url.startswith('data:') else route.abort())
        requests = []
        context.on('request', lambda r: requests.append(r.url))
        tab = context.new_page()
        context.new_cdp_session(tab).send('Network.setCacheDisabled', {'cacheDisabled': True})
        tab.goto(urllib.parse.urljoin(site, page + '.html'))
        tab.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached', timeout=PANEL_TIMEOUT_MS)
        run = tab.inner_text(f'#physai-panel-{key} .pl-run')
        assert re.search(r'\(\d+\.\d MB download\)', run), run
        if key == 'servo':
            tab.click(f'#physai-panel-{key} .pl-run')
            tab.wait_for_selector(f'#physai-panel-{key}[data-map-done]', state='attached', timeout=PANEL_TIMEOUT_MS)
        else:
            button = tab.locator(f'#physai-panel-{key} .pl-arm3d-head > button')
            label = button.inner_text()
            size = tab.evaluate('() => window.physaiArm3dSize.compressedMegabytes + window.physaiEngineSize.compressedMegabytes')
            assert f'({size:.1f} MB download, with MuJoCo)' in label, label
            button.click()
            tab.wait_for_function("""key => { const a = window.physaiPanels[key].arm3d;
                return a.view && a.view._clip && a.view.frames > 0; }""", arg=key, timeout=PANEL_TIMEOUT_MS)
        tab.wait_for_load_state('networkidle')
        counts = {}
        for url in requests:
            name = urllib.parse.urlsplit(url).path
            if '/_static/mujoco/' in name or '/_static/three/' in name or '/_static/arm3d/' in name:
                counts[name] = counts.get(name, 0) + 1
        assert any(n.endswith('mujoco.wasm') for n in counts), f'{page}: the engine was not fetched: {counts}'
        twice = {n: c for n, c in counts.items() if c > 1}
        assert not twice, f'{page}: fetched more than once: {twice}'
        context.close()


# The cumulative layout shift (the Layout Instability API's sum, shifts after an input left out) a page has had by now,
# and the elements that moved most.
LAYOUT_SHIFT_JS = """() => new Promise((resolve) => {
    let total = 0;
    const moved = [];
    new PerformanceObserver((list) => {
        for (const e of list.getEntries()) {
            if (e.hadRecentInput) continue;
            total += e.value;
            moved.push([Number(e.value.toFixed(3)), e.sources.map((s) => s.node ? (s.node.className || s.node.nodeName) : '?').join(' | ').slice(0, 120)]);
        }
    }).observe({type: 'layout-shift', buffered: true});
    requestAnimationFrame(() => requestAnimationFrame(() => resolve({total, moved})));
})"""


@pytest.mark.parametrize('width, height', [(1280, 800), (390, 844)])
@pytest.mark.parametrize('page', list(CHAPTER_PANELS))
def test_a_link_to_a_chapter_s_panel_opens_on_it_without_the_page_jumping(site, browser, page, width, height):
    """Opened at ``#physai-panel-KEY`` (1280x800 and a phone's 390x844, nothing cached): every image carries its
    width and height and every answer is folded from the first paint, and the page moves to the panel once, when the
    math above it is typeset and the panel drawn (physai.js): by then the cumulative layout shift is under 0.1 (Core
    Web Vitals' good; the browser's own early jump gave 0.51-0.66), the panel is at the window's top and the address
    has its anchor back. On the phone the tables above it too wide for the column are in parts from their first paint
    (physai.js), not cut after it."""
    key = CHAPTER_PANELS[page]
    url = urllib.parse.urljoin(site, f'{page}.html#physai-panel-{key}')
    with PageVisit(browser, url, width=width, height=height) as visit:
        visit.page.wait_for_function('key => location.hash === "#physai-panel-" + key', arg=key, timeout=PANEL_TIMEOUT_MS)
        next_frames(visit.page)
        unsized = visit.page.eval_on_selector_all('main img', 'imgs => imgs.filter((i) => !i.getAttribute("width")).map((i) => i.src)')
        assert not unsized, f'{page}: images without width and height: {unsized[:3]}'
        top = visit.page.evaluate('key => document.getElementById("physai-panel-" + key).getBoundingClientRect().top', key)
        assert 0 <= top <= 200, f'{page}: the panel is at {top:.0f} px, not at the window\'s top'
        shift = visit.page.evaluate(LAYOUT_SHIFT_JS)
        print(f'{page} at {width} px: cumulative layout shift {shift["total"]:.3f}')
        assert shift['total'] < 0.1, f'{page}: layout shift {shift["total"]:.3f}: {shift["moved"][:5]}'
