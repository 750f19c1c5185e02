"""Sphinx extension of the book: MathJax served from the site itself, and no script twice on a page.

Sphinx loads MathJax 3 from a CDN by default, so the book's equations would stay raw TeX without a network.
The pinned ``django-static-mathjax`` package (requirements.txt) ships MathJax 3.2.2; this extension copies its
single-file SVG build, ``es5/tex-svg.js`` (fonts inside, no further downloads), to ``_static/mathjax/`` and points
``mathjax_path`` at it.

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

MATHJAX_FILE = 'tex-svg.js'
MATHJAX_PATH = 'mathjax/' + MATHJAX_FILE  # relative to _static


def mathjax_source():
    """The path of ``tex-svg.js`` inside the installed MathJax package.

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


def setup(app):
    app.connect('html-page-context', _open_colab_edition, priority=600)  # after the theme's launch buttons (501)
    app.connect('config-inited', _use_local_mathjax)
    app.connect('build-finished', _copy_mathjax)
    app.connect('html-page-context', _drop_duplicate_scripts, priority=900)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
