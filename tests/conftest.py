"""Fixtures shared by the tests."""

import os

import pytest

CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']


@pytest.fixture
def twin_page(tmp_path):
    """Open one static twin's HTML alone in headless Debian Chromium, as a kernel-less page shows it.

    Yields ``open(html) -> page`` and the list of JavaScript errors the pages raise. Skips when Chromium or
    playwright is missing (the site test, not these, insists on them under CI).
    """
    if not os.path.exists(CHROMIUM):
        pytest.skip('headless Chromium is not installed')
    sync_api = pytest.importorskip('playwright.sync_api')
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)

        def open_page(html: str):
            path = tmp_path / 'twin.html'
            path.write_text('<!doctype html><html><head><meta charset="utf-8"></head><body>'
                            f'{html}</body></html>', encoding='utf-8')
            page = browser.new_page()
            page.on('pageerror', lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            return page

        yield open_page, errors
        browser.close()
