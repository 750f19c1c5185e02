"""Sphinx extension of the book: MathJax served from the site itself, a light first view, no script twice on a page.

Sphinx loads MathJax 3 from a CDN by default, so the book's equations would stay raw TeX without a network.
The pinned ``django-static-mathjax`` package (requirements.txt) ships MathJax 3.2.2; this extension copies its
TeX-to-HTML build, ``es5/tex-chtml.js`` (264 kB compressed, against 680 kB for the SVG build with its glyphs inside),
and the web fonts it fetches on demand (``output/chtml/fonts/woff-v2``) to ``_static/mathjax/`` and points
``mathjax_path`` at it. myst-nb asks Sphinx to put its scripts on every page; ``_math_only_where_needed`` takes
MathJax off the pages without an equation.

The theme draws its icons (menu, search, rocket, GitHub, theme switch, ...) with FontAwesome's script, which carries
every icon of the set: 1.5 MB (0.5 MB compressed) and two web fonts, on every page, for the dozen icons the book
shows. ``_inline_icons`` writes the path of each icon a page uses into its HTML as an inline SVG, taken from that
same script at build time, and drops the script from the page.

Images load lazily (``loading="lazy"``), so a chapter's first view fetches the figures on screen, not all of them.

``_reading_time`` puts a chapter's time under its title, with how it is estimated: its core read, its questions
answered and its Build-it functions written, and its optional part read (``physai.book.pace``, whose sentence the
Colab edition carries too).

Jupyter Book 1 runs sphinx-thebe's set-up twice, so every page declared ``const THEBE_JS_URL`` twice and the
browser threw "Identifier 'THEBE_JS_URL' has already been declared" on every page. ``_drop_duplicate_scripts``
keeps the first copy of each script.

The theme's Colab launch button opens the page's source notebook, ``notebooks/NN_name.ipynb``, which is MyST: on
Colab its glued numbers, answers and equation references would show as raw source. ``_open_colab_edition`` points
the button at the generated Colab edition instead, ``colab/NN_name.ipynb`` (``python -m physai.book.edition``), on the
same repository and branch.
"""

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

import re

MATHJAX_FILE = 'tex-chtml.js'
MATHJAX_PATH = 'mathjax/' + MATHJAX_FILE  # relative to _static
MATHJAX_FONTS = 'output/chtml/fonts/woff-v2'  # where tex-chtml.js looks for its fonts, beside itself


def mathjax_source():
    """The path of ``tex-chtml.js`` inside the installed MathJax package.

    Raises:
        ExtensionError: if the pinned ``django-static-mathjax`` package is not installed.
    """
    try:
        import mathjax
    except ImportError as error:
        raise ExtensionError('the book serves MathJax locally: install the pinned requirements '
                             '(pip install -r requirements.txt), which include django-static-mathjax') from error
    path = Path(mathjax.__file__).parent / 'static' / 'mathjax' / 'es5' / MATHJAX_FILE
    if not path.is_file():
        raise ExtensionError(f'MathJax file not found at {path}')
    return path


def _use_local_mathjax(app, config):
    mathjax_source()  # fail early, before any page is read
    config.mathjax_path = MATHJAX_PATH


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != 'html':
        return
    target = Path(app.outdir) / '_static' / MATHJAX_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mathjax_source(), target)
    shutil.copytree(mathjax_source().parent / MATHJAX_FONTS, target.parent / MATHJAX_FONTS, dirs_exist_ok=True)


def _math_only_where_needed(app, pagename, templatename, context, doctree):
    """Take MathJax off a page without an equation (myst-nb has Sphinx add it to every page)."""
    from docutils import nodes
    scripts = context.get('script_files')
    if not scripts:
        return
    has_math = doctree is not None and any(doctree.findall(lambda node: isinstance(node, (nodes.math,
                                                                                             nodes.math_block))))
    if not has_math:
        scripts[:] = [script for script in scripts if not str(getattr(script, 'filename', '') or '').endswith(MATHJAX_PATH)
                      and 'MathJax' not in (getattr(script, 'attributes', {}).get('body') or '')]


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get('script_files')
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = (str(getattr(script, 'filename', script) or ''), repr(sorted(getattr(script, 'attributes', {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


COLAB_PREFIX = 'https://colab.research.google.com/github/'
EDITION_DIR = 'colab'  # physai.book.edition.EDITION_DIR


def colab_edition_url(url):
    """A Colab launch URL of ``notebooks/NN_name.ipynb`` turned into the one of ``colab/NN_name.ipynb``.

    Any other URL comes back unchanged.
    """
    if not url.startswith(COLAB_PREFIX) or '/blob/' not in url or not url.endswith('.ipynb'):
        return url
    repo, _, path = url.partition('/blob/')
    branch, _, path = path.partition('/')
    if not path.startswith('notebooks/'):
        return url
    return f'{repo}/blob/{branch}/{EDITION_DIR}/{path.rsplit("/", 1)[-1]}'


def _open_colab_edition(app, pagename, templatename, context, doctree):
    def walk(buttons):
        for button in buttons:
            if isinstance(button.get('url'), str):
                button['url'] = colab_edition_url(button['url'])
            walk(button.get('buttons', []))
    walk(context.get('header_buttons', []))


FONTAWESOME_SCRIPT = re.compile(r'<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*></script>\s*')
ICON_ELEMENT = re.compile(r'<(i|span) class="([^"]*\bfa-[^"]*)"([^>]*)></\1>')
STYLE_PREFIXES = {'fa-solid': 'solid', 'fas': 'solid', 'fa-regular': 'regular', 'far': 'regular',
                  'fa-brands': 'brands', 'fab': 'brands'}
# A pack of FontAwesome's script: `var p={name:[width,height,[aliases],"unicode","path"],...}` then its registration.
ICON_ENTRY = re.compile(r'(?:[{,])"?([a-z0-9-]+)"?:\[(\d+),(\d+),\[[^\]]*\],"[0-9a-f]*","([^"]+)"\]')
PACK_NAMES = {'fab': 'brands', 'far': 'regular', 'fas': 'solid'}


def fontawesome_icons(script: str) -> dict:
    """The icons of the theme's FontAwesome script: ``{(style, name): (width, height, path)}``.

    Each pack sits between the previous pack's registration and its own ``d("fab",p)`` (``far``, ``fas``).
    """
    icons, start = {}, 0
    for registration in re.finditer(r'd\("(fab|far|fas)",p\)', script):
        style = PACK_NAMES[registration.group(1)]
        for name, width, height, path in ICON_ENTRY.findall(script, start, registration.start()):
            icons.setdefault((style, name), (int(width), int(height), path))
        start = registration.end()
    return icons


def inline_icons(html: str, icons: dict) -> str:
    """Each FontAwesome ``<i class="fa-solid fa-rocket">`` of a page filled with the icon's inline SVG.

    The element, its classes and attributes stay (the theme's CSS and scripts find them as before); an icon
    the script does not have is left empty.
    """
    def fill(match):
        tag, classes, rest = match.groups()
        words = classes.split()
        style = next((STYLE_PREFIXES[word] for word in words if word in STYLE_PREFIXES), 'solid')
        names = [word[3:] for word in words if word.startswith('fa-') and word not in STYLE_PREFIXES
                 and (style, word[3:]) in icons]
        if not names:
            return match.group(0)
        width, height, path = icons[(style, names[0])]
        svg = (f'<svg class="physai-icon" viewBox="0 0 {width} {height}" aria-hidden="true" focusable="false" '
               f'style="width:{width / height:.4g}em"><path fill="currentColor" d="{path}"/></svg>')
        return f'<{tag} class="{classes}"{rest}>{svg}</{tag}>'
    return FONTAWESOME_SCRIPT.sub('', ICON_ELEMENT.sub(fill, html))


LAZY_IMAGE = re.compile(r'<img (?![^>]*\bloading=)')
UNSIZED_IMAGE = re.compile(r'<img (?![^>]*\b(?:width|height)=)([^>]*?\bsrc="([^"]+\.png)")')


def png_size(path: Path) -> tuple[int, int] | None:
    """(width, height) in pixels from a PNG's header, or None when the file is not a PNG."""
    with open(path, 'rb') as f:
        head = f.read(24)
    if head[:8] != b'\x89PNG\r\n\x1a\n' or head[12:16] != b'IHDR':
        return None
    return int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big')


def size_images(html: str, page: Path) -> str:
    """Give every PNG image of a page its width and height (from the file the page names), so the browser keeps its
    room before the image arrives: a lazy image above an anchor (``#physai-panel-servo``) then moves nothing when it
    loads. The style sheet's ``max-width: 100%; height: auto`` scales it as before."""
    def fill(match):
        path = (page.parent / match.group(2)).resolve()
        size = png_size(path) if path.is_file() else None
        return match.group(0) if size is None else f'<img width="{size[0]}" height="{size[1]}" {match.group(1)}'
    return UNSIZED_IMAGE.sub(fill, html)


def _inline_icons_and_lazy_images(app, exception):
    if exception is not None or app.builder.format != 'html':
        return
    outdir = Path(app.outdir)
    script = outdir / '_static' / 'scripts' / 'fontawesome.js'
    icons = fontawesome_icons(script.read_text(encoding='utf-8')) if script.is_file() else {}
    if script.is_file() and not icons:
        raise ExtensionError(f'no icon found in {script}: the theme changed its FontAwesome bundle')
    for page in outdir.rglob('*.html'):
        html = page.read_text(encoding='utf-8')
        changed = size_images(LAZY_IMAGE.sub('<img loading="lazy" ', inline_icons(html, icons)), page)
        if changed != html:
            page.write_text(changed, encoding='utf-8')


def _reading_time(app, doctree):
    """Under a chapter's title, its time and how it is estimated (:func:`physai.book.pace.statement`, which the
    Colab edition writes too)."""
    from docutils import nodes
    from physai.book import pace
    if not app.env.docname.startswith('notebooks/'):
        return
    title = next(iter(doctree.findall(nodes.title)), None)
    if title is None:
        return
    time, how = pace.statement(app.env.doc2path(app.env.docname))
    line = nodes.paragraph('', '', nodes.emphasis('', time), nodes.Text(' ' + how), classes=['physai-reading-time'])
    section = title.parent
    section.insert(section.index(title) + 1, line)


def setup(app):
    app.connect('html-page-context', _open_colab_edition, priority=600)  # after the theme's launch buttons (501)
    app.connect('config-inited', _use_local_mathjax)
    app.connect('build-finished', _copy_mathjax)
    app.connect('build-finished', _inline_icons_and_lazy_images)
    app.connect('html-page-context', _math_only_where_needed, priority=900)
    app.connect('doctree-read', _reading_time)
    app.connect('html-page-context', _drop_duplicate_scripts, priority=900)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
