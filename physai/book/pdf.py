"""The PDF edition's build steps (``make pdf``): the live panels' first views as pictures, and the check of the log.

The book's pages show each live panel (``physai.interface.web``) as a block its JavaScript draws: the precomputed
first view at once, MuJoCo in the reader's browser on demand. Jupyter Book's LaTeX builder keeps no HTML, so the
PDF would lose them. ``python -m physai.book.pdf panels`` draws each one as the page does: every panel block stored
in a chapter of ``_toc.yml`` goes on a scratch page served over http with the site's panel scripts and style sheet
(``book/_static``), opens in headless Chromium (Debian's, ``/usr/bin/chromium``, through playwright, as the browser
tests do) without WebAssembly, so the panel draws its first view and nothing else, and the panel is photographed at
twice the page's resolution, without the button that opens chapters 3 and 4's 3D view (which needs MuJoCo running
in the page). Beside each picture goes a QR code (``segno``) of the address that opens the panel on
the published page, and ``_build/pdf-panels/panels.json`` lists them for ``book/_ext/physai_pdf.py``, which puts
picture, address and QR code where the page has the panel.

``python -m physai.book.pdf check-log LOG`` reads XeLaTeX's log and exits 1 when a line was set wider than the text
by more than :data:`OVERFULL_PT` (an ``Overfull \\hbox``: text past the margin, possibly off the page).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import pathlib
import re
import shutil
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterator

from physai.book.edition import BOOK_URL, toc_pages

ROOT = pathlib.Path(__file__).resolve().parents[2]
"""The book's folder (the repository root, with ``_toc.yml``)."""

PANELS_DIR = ROOT / '_build' / 'pdf-panels'
"""Where ``panels`` writes the pictures, the QR codes and ``panels.json``."""

MANIFEST = 'panels.json'

STATIC = ROOT / 'book' / '_static'
ENGINE_DIR = ROOT / 'node_modules' / '@mujoco' / 'mujoco'
CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
DRAW_TIMEOUT_MS = 120_000
"""How long a panel may take to draw its first view (a loaded 2-core machine)."""

SCALE = 2
"""Device pixels per CSS pixel of the pictures: 688 CSS px (the book's column) become 1376 px across the PDF's text
width, about 200 dpi."""

OVERFULL_PT = 3.0
"""How far (pt) a line may stick out past the text width before ``check-log`` fails: a few points of a long word or
formula into the 1 in margin cut nothing off; more is a line to fix."""

PANEL = re.compile(r'<div class="physai-panel" id="physai-panel-(?P<key>[\w-]+)"')
"""The start of a page panel's first-view block (``physai.interface.web``), and its key."""


def chapters(root: pathlib.Path = ROOT) -> list[str]:
    """The book's chapters, the notebooks among the pages of ``_toc.yml`` (physai.book.edition.toc_pages), in order."""
    return [page for page in toc_pages(root) if (root / f'{page}.ipynb').is_file()]


def page_url(docname: str) -> str:
    """The address of page ``docname`` on the published book."""
    return f'{BOOK_URL}{docname}.html'


def panel_url(docname: str, key: str) -> str:
    """The address of page panel ``key`` of page ``docname`` on the published book (its first view, not running)."""
    return f'{page_url(docname)}#physai-panel-{key}'


def first_view_url(docname: str, block: str) -> str:
    """The address that opens the panel of first-view ``block`` (on page ``docname``) running live on the setting its
    first view shows, the panel's defaults: ``physai.interface.web.address`` of the defaults, read from the spec the
    block carries (its controls' defaults, as the page shows them) and written as ``url_text`` writes a value."""
    from physai.interface import web
    spec = web.block_data(block)['spec']
    query = {}
    for control in spec['controls']:
        value = control['default']
        if control['kind'] == 'choice':
            text = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
        else:
            text = f'{value:.12g}'
        query[f'{spec["key"]}-{control["url"]}'] = text
    return f'{page_url(docname)}?{urllib.parse.urlencode(query)}#physai-panel-{spec["key"]}'


def stored_outputs(docname: str) -> Iterator[str]:
    """The text/html outputs stored in chapter ``docname``'s notebook, in order."""
    notebook = json.loads((ROOT / f'{docname}.ipynb').read_text(encoding='utf-8'))
    for cell in notebook['cells']:
        for output in cell.get('outputs', ()):
            html = output.get('data', {}).get('text/html')
            if html is not None:
                yield html if isinstance(html, str) else ''.join(html)


def panel_blocks(docname: str) -> list[tuple[str, str]]:
    """The page panels chapter ``docname`` stores: (key, first-view block) in order."""
    return [(match['key'], html) for html in stored_outputs(docname) if (match := PANEL.match(html))]


@contextlib.contextmanager
def _serve(directory: pathlib.Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f'http://127.0.0.1:{server.server_port}/'
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def _scratch_page(directory: pathlib.Path, block: str) -> None:
    """A page as the book serves one (tests/browser.py ``scratch_site``): the block in the book's column, the panel
    scripts and style sheet in ``_static``."""
    from physai.interface.plots import COLUMN_PX
    static = directory / '_static'
    static.mkdir(parents=True)
    shutil.copytree(STATIC / 'panels', static / 'panels')
    shutil.copyfile(STATIC / 'physai.css', static / 'physai.css')
    (directory / 'index.html').write_text(
        '<!doctype html><html data-theme="light"><head><meta charset="utf-8">'
        '<link rel="stylesheet" href="_static/physai.css">'
        # the 3D view's button: a page opens it on demand, with MuJoCo; in print it would say it is unavailable
        '<style>.physai-panel .pl-arm3d{display:none}</style>'
        '<script type="module" src="_static/panels/boot.js"></script></head><body>'
        f'<main style="max-width:{COLUMN_PX}px;margin:auto">{block}</main></body></html>', encoding='utf-8')


def draw_panels(out: pathlib.Path = PANELS_DIR) -> dict:
    """Draw every page panel of the book's chapters (:func:`chapters`) as its first view into ``out/KEY.png``, its
    address's QR code into ``out/KEY-qr.png``, and list them in ``out/panels.json`` (key -> page, address, picture,
    QR code). Returns that listing."""
    import segno
    from playwright.sync_api import sync_playwright
    from physai.interface.plots import COLUMN_PX
    if not pathlib.Path(CHROMIUM).exists():
        raise SystemExit(f'{CHROMIUM} is missing: apt-get install chromium (make pdf does)')
    out.mkdir(parents=True, exist_ok=True)
    listing = {}
    with sync_playwright() as p, tempfile.TemporaryDirectory() as scratch:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for docname in chapters():
                for key, block in panel_blocks(docname):
                    site = pathlib.Path(scratch) / key
                    _scratch_page(site, block)
                    page = browser.new_page(viewport={'width': COLUMN_PX + 32, 'height': 900},
                                            device_scale_factor=SCALE)
                    errors = []
                    page.on('pageerror', lambda e: errors.append(str(e)))
                    page.add_init_script('delete globalThis.WebAssembly')
                    with _serve(site) as url:
                        page.goto(url)
                        page.wait_for_selector(f'#physai-panel-{key}[data-drawn]', state='attached',
                                               timeout=DRAW_TIMEOUT_MS)
                        page.evaluate('() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))')
                        picture = out / f'{key}.png'
                        page.locator(f'#physai-panel-{key}').screenshot(path=str(picture))
                    page.close()
                    if errors:
                        raise SystemExit(f'panel {key} of {docname}: the page raised {errors[0]}')
                    address = first_view_url(docname, block)
                    qr = out / f'{key}-qr.png'
                    segno.make(address, error='l').save(str(qr), scale=8, border=4)
                    listing[key] = {'docname': docname, 'url': address, 'image': picture.name, 'qr': qr.name}
                    print(f'physai.book.pdf: panel {key} of {docname} drawn, {address}')
        finally:
            browser.close()
    (out / MANIFEST).write_text(json.dumps(listing, indent=1), encoding='utf-8')
    return listing


OVERFULL = re.compile(r'^Overfull \\hbox \((?P<pt>[0-9.]+)pt too wide\) (?P<where>.*)$', re.M)


def overfull(log: str) -> list[tuple[float, str]]:
    """The Overfull \\hbox lines of a LaTeX log: (points too wide, where), in order."""
    return [(float(m['pt']), m['where']) for m in OVERFULL.finditer(log)]


def check_log(path: pathlib.Path, tolerance: float = OVERFULL_PT) -> list[tuple[float, str]]:
    """The lines of LaTeX log ``path`` set wider than the text by more than ``tolerance`` pt."""
    return [(pt, where) for pt, where in overfull(path.read_text(encoding='utf-8', errors='replace')) if pt > tolerance]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['panels'] and len(argv) == 1:
        draw_panels()
        return 0
    if argv[:1] == ['check-log'] and len(argv) == 2:
        bad = check_log(pathlib.Path(argv[1]))
        for pt, where in bad:
            print(f'{argv[1]}: a line {pt:.1f} pt wider than the text {where}')
        if bad:
            print(f'physai.book.pdf: {len(bad)} line(s) past the margin by more than {OVERFULL_PT} pt')
        return 1 if bad else 0
    print('usage: python -m physai.book.pdf panels | check-log LOG', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main())
