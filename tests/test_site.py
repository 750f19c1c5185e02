"""The built site in a real browser: headless Debian Chromium driven by playwright.

The test builds the book (``jupyter-book build --all -W -n --keep-going``, a few seconds since the build executes
nothing), serves ``_build/html`` on 127.0.0.1 and opens every page of the table of contents. Requests that leave
127.0.0.1 are aborted, so the pages are checked as an offline reader sees them: the theme's optional CDN scripts
fail, our figures and the math (served from the site) must not.

Per page: it loads, its title is there, no JavaScript error comes from our code (inline scripts of the page itself,
which is where the static twins live), every image has loaded, and the math is typeset. Per chapter also: the first
figure is present, the Colab and download buttons exist, answers are hidden until clicked, the page has a static
twin, equations are numbered, and every static twin (root element id ``physai-twin-...``) changes its picture
when each of its range sliders moves and each of its choices changes. Screenshots go to ``_build/screenshots/``:
every page in the light theme, chapters also in the dark theme, and each twin after its controls moved.

Set ``PHYSAI_BOOK_ROOT`` to test the book of another folder (a copy with a trial chapter, say).
"""

import functools
import http.server
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

from physai.book.edition import toc_pages

pytestmark = pytest.mark.slow  # it builds the whole book first

ROOT = pathlib.Path(os.environ.get('PHYSAI_BOOK_ROOT', pathlib.Path(__file__).resolve().parents[1]))
HTML = ROOT / '_build' / 'html'
SCREENSHOTS = ROOT / '_build' / 'screenshots'
CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']


PAGES = toc_pages(ROOT)

# JavaScript run in the page: the picture of a twin (SVG markup, canvas pixels, image sources) as one string.
PICTURE_JS = """root => Array.from(root.querySelectorAll('svg, canvas, img')).map(el =>
    el.tagName === 'CANVAS' ? el.toDataURL() : el.tagName === 'IMG' ? el.currentSrc || el.src : el.outerHTML
).join('|')"""

# The ids of the static twins' root elements (an id starting physai-twin- with no such ancestor).
TWIN_ROOTS_JS = """() => Array.from(document.querySelectorAll('[id^="physai-twin-"]'))
    .filter(el => !el.parentElement.closest('[id^="physai-twin-"]')).map(el => el.id)"""

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
def site():
    """Build the book, then serve _build/html on 127.0.0.1; yields the base URL."""
    jupyter_book = pathlib.Path(sys.executable).with_name('jupyter-book')
    command = [str(jupyter_book if jupyter_book.exists() else shutil.which('jupyter-book')),
               'build', '--all', '-W', '-n', '--keep-going', str(ROOT)]
    start = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, f'the book build failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}'
    print(f'\nbook built in {time.monotonic() - start:.1f} s')

    handler = functools.partial(QuietHandler, directory=str(HTML))
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

    def __init__(self, browser, url, *, theme='light'):
        self.url = url
        self.context = browser.new_context(viewport={'width': 1280, 'height': 900})
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
        """Errors thrown by our code: the page's own inline scripts (static twins) or a physai file."""
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
        first = visit.page.locator('div.cell_output img, [id^="physai-twin-"]').first
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
def test_every_static_twin_changes_its_picture_when_a_slider_moves(site, browser, page):
    visit = PageVisit(browser, urllib.parse.urljoin(site, page + '.html'))
    try:
        roots = visit.page.evaluate(TWIN_ROOTS_JS)
        assert roots, f'{page}: a chapter page needs its static twin (an element with id physai-twin-...)'
        for twin_id in roots:
            twin = visit.page.locator(f'[id="{twin_id}"]')
            sliders = twin.locator('input[type="range"]').all()
            assert sliders, f'{page}: #{twin_id} has no slider'
            assert twin.evaluate(PICTURE_JS), f'{page}: #{twin_id} has no svg, canvas or img'
            controls = ([('slider', s, MOVE_JS) for s in sliders]
                        + [('choice', s, SELECT_JS) for s in twin.locator('select').all()])
            for index, (kind, control, move) in enumerate(controls):
                before = twin.evaluate(PICTURE_JS)
                control.evaluate(move)
                try:
                    visit.page.wait_for_function(f'([root, before]) => ({PICTURE_JS})(root) !== before',
                                                 arg=[twin.element_handle(), before], timeout=5_000)
                except Exception:
                    pytest.fail(f'{page}: #{twin_id} {kind} {index} moved, the picture did not change')
            twin.screenshot(path=SCREENSHOTS / f'{page.replace("/", "__")}-{twin_id}.png')
        assert not visit.our_errors(), f'{page}: JavaScript errors from our code:\n' + '\n'.join(visit.our_errors())
    finally:
        visit.close()
