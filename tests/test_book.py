"""The book's table of contents and configuration agree with the files (no browser needed)."""

import json
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / 'notebooks').glob('*.ipynb'))


def toc_files(node=None) -> list[str]:
    """Every ``file`` entry of _toc.yml, root first, in reading order (paths without suffix)."""
    if node is None:
        node = yaml.safe_load((ROOT / '_toc.yml').read_text(encoding='utf-8'))
        return [node['root']] + toc_files(node.get('parts', []) + node.get('chapters', []))
    files = []
    for entry in node:
        if 'file' in entry:
            files.append(entry['file'])
        files += toc_files(entry.get('chapters', []) + entry.get('sections', []))
    return files


def config() -> dict:
    return yaml.safe_load((ROOT / '_config.yml').read_text(encoding='utf-8'))


def test_every_toc_entry_is_a_file():
    for entry in toc_files():
        matches = [ROOT / (entry + suffix) for suffix in ('.md', '.ipynb') if (ROOT / (entry + suffix)).is_file()]
        assert len(matches) == 1, f'_toc.yml lists {entry!r}: expected exactly one of {entry}.md / {entry}.ipynb'


def test_every_notebook_is_a_chapter_in_the_toc():
    listed = set(toc_files())
    missing = [path.name for path in NOTEBOOKS if f'notebooks/{path.stem}' not in listed]
    assert not missing, f'notebooks not in _toc.yml (add them under the "Chapters" part): {missing}'


def test_chapters_are_listed_in_file_order():
    chapters = [entry for entry in toc_files() if entry.startswith('notebooks/')]
    assert chapters == sorted(chapters)


def test_toc_is_a_jb_book_with_parts():
    toc = yaml.safe_load((ROOT / '_toc.yml').read_text(encoding='utf-8'))
    assert toc['format'] == 'jb-book'
    assert toc['parts'] and all(part.get('caption') and part.get('chapters') for part in toc['parts'])


def test_build_shows_the_stored_outputs_and_executes_nothing():
    assert config()['execute']['execute_notebooks'] == 'off'


def test_chapters_have_a_launch_button_setting_and_a_repository():
    cfg = config()
    assert cfg['launch_buttons']['colab_url'] == 'https://colab.research.google.com'
    assert cfg['repository']['url'].startswith('https://github.com/')


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_chapter_starts_with_a_title_and_uses_the_python3_kernel(path):
    notebook = json.loads(path.read_text(encoding='utf-8'))
    assert notebook['metadata']['kernelspec']['name'] == 'python3'
    first = notebook['cells'][0]
    source = first['source'] if isinstance(first['source'], str) else ''.join(first['source'])
    assert first['cell_type'] == 'markdown' and source.startswith('# '), f'{path.name} must open with a # title'


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_chapter_stores_no_widget_state(path):
    """Saved ipywidgets state makes myst-nb load the widget scripts from a CDN and show a frozen panel."""
    notebook = json.loads(path.read_text(encoding='utf-8'))
    assert 'widgets' not in notebook['metadata'], (
        f'{path.name}: strip metadata.widgets (execute with store_widget_state=False)')


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_progress_bars_stay_off_the_published_page(path):
    """A cell that writes to stderr (progress bars) is tagged remove-stderr, so the page shows its result only."""
    notebook = json.loads(path.read_text(encoding='utf-8'))
    untagged = [i for i, cell in enumerate(notebook['cells']) if cell['cell_type'] == 'code'
                and any(out.get('name') == 'stderr' for out in cell.get('outputs', []))
                and 'remove-stderr' not in cell['metadata'].get('tags', [])]
    assert not untagged, f'{path.name}: cells {untagged} print to stderr without the remove-stderr tag'


PREDICT = re.compile(r'\*\*Predict\b')


def _shows_output(cell: dict) -> bool:
    """Whether the page shows any of a code cell's outputs (a progress bar on stderr with ``remove-stderr`` and a
    ``remove-cell`` or ``remove-output`` cell show nothing)."""
    tags = set(cell['metadata'].get('tags', []))
    if {'remove-cell', 'remove-output'} & tags:
        return False
    return any(not (out.get('name') == 'stderr' and 'remove-stderr' in tags) for out in cell.get('outputs', []))
PREDICTING_CHAPTERS = NOTEBOOKS


@pytest.mark.parametrize('path', PREDICTING_CHAPTERS, ids=[p.name for p in PREDICTING_CHAPTERS])
def test_a_prediction_comes_before_the_output_that_answers_it(path):
    """Issue 16: where the prose asks the reader to predict, the next shown code cell keeps its output folded
    (``hide-output``: it opens on a click), so the answering table is not in view with the question."""
    notebook = json.loads(path.read_text(encoding='utf-8'))
    cells = notebook['cells']
    for i, cell in enumerate(cells):
        source = ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']
        if cell['cell_type'] != 'markdown' or not PREDICT.search(source):
            continue
        shown = [c for c in cells[i + 1:] if c['cell_type'] == 'code' and _shows_output(c)]
        assert shown, f'{path.name}: cell {i} asks for a prediction that no cell answers'
        tags = shown[0]['metadata'].get('tags', [])
        assert {'hide-output', 'hide-cell'} & set(tags), (
            f'{path.name}: cell {i} asks for a prediction, and the output that answers it shows at once '
            f'(tag the code cell after it hide-output)')


def _extension():
    import importlib
    import sys
    sys.path.insert(0, str(ROOT / 'book' / '_ext'))
    try:
        return importlib.import_module('physai_book')
    finally:
        sys.path.pop(0)


def test_the_time_under_a_chapters_title_is_physai_book_paces_sentence():
    """The page says what the Colab edition says: one estimator (physai.book.pace), both halves of its sentence."""
    import types
    from docutils import nodes
    from physai.book import pace
    ext = _extension()
    doc = nodes.document(None, None)
    section = nodes.section('', nodes.title('', 'Where the PD runs'), nodes.paragraph('', 'one two three'))
    doc += section
    path = ROOT / 'notebooks' / '03_where_pd_runs.ipynb'
    app = types.SimpleNamespace(env=types.SimpleNamespace(docname='notebooks/03_where_pd_runs',
                                                          doc2path=lambda docname: str(path)))
    ext._reading_time(app, doc)
    line = section[1]
    assert 'physai-reading-time' in line['classes']
    time, how = pace.statement(path)
    assert line.astext() == f'{time} {how}' and isinstance(line[0], nodes.emphasis) and line[0].astext() == time
    app.env.docname = 'book/intro'  # not a chapter: nothing added
    ext._reading_time(app, doc)
    assert len(section) == 3


def test_icons_are_inlined_from_the_theme_script_and_the_script_is_dropped():
    ext = _extension()
    script = ('var p={rocket:[512,512,[],"f135","M1 2L3 4"],"magnifying-glass":[512,512,[128269,"search"],'
              '"f002","M5 6"]};x(function(){d("fas",p)});var p={github:[496,512,[],"f09b","M7 8"]};'
              'x(function(){d("fab",p)});')
    icons = ext.fontawesome_icons(script)
    assert icons[('solid', 'rocket')] == (512, 512, 'M1 2L3 4')
    assert icons[('brands', 'github')] == (496, 512, 'M7 8')
    html = ('<script defer src="../_static/scripts/fontawesome.js?digest=1"></script>\n'
            '<i class="fas fa-rocket"></i><i class="fab fa-github" title="GitHub"></i><i class="fas fa-unknown"></i>')
    out = ext.inline_icons(html, icons)
    assert 'fontawesome.js' not in out
    assert '<i class="fas fa-rocket"><svg class="physai-icon" viewBox="0 0 512 512"' in out
    assert 'd="M7 8"' in out and 'title="GitHub"' in out
    assert '<i class="fas fa-unknown"></i>' in out  # left as it was


# --- each section's content under its own heading (issue 30) ----------------------------------------------------

RUN_IN = re.compile(r'^\*\*(?P<lead>[^*\n]+?[.?:])\*\*')
"""A paragraph that opens with a bold phrase ending in '.', '?' or ':' (``**Viscous friction.** ...``): a run-in
heading, a topic of its own."""

RHYTHM = re.compile(r'^(?:\d+\.\s|(?:Question|Exercise) \d+|(?:Predict|Run|Observe|In plain words|The math|Stability|'
                    r'Set-up|Easy|Medium|Hard|Answer|Hint|Note|Try it)\b)', re.I)
"""The book's rhythm words, bold at the start of a paragraph in every chapter (DESIGN.md): steps of the section they
are in, not topics of their own."""

MD_HEADING = re.compile(r'^#{2,6}[ \t]+(?P<title>.+?)[ \t]*$')
MD_FENCE = re.compile(r'^[ \t]{0,3}(?P<fence>`{3,}|~{3,}|:{3,})')


def _text(cell: dict) -> str:
    return ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']


def _blocks(markdown: str) -> list[tuple[str, str]]:
    """A Markdown cell as ('heading', title) and ('paragraph', text) in order; fenced blocks (admonitions, folded
    answers, code) left out."""
    out, paragraph, fence = [], [], None

    def flush():
        if paragraph:
            out.append(('paragraph', '\n'.join(paragraph)))
            paragraph.clear()
    for line in markdown.split('\n'):
        if fence:
            if re.match(rf'^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$', line):
                fence = None
            continue
        opening, heading = MD_FENCE.match(line), MD_HEADING.match(line)
        if opening or heading or not line.strip():
            flush()
        if opening:
            fence = opening.group('fence')
        elif heading:
            out.append(('heading', heading.group('title')))
        elif line.strip():
            paragraph.append(line)
    flush()
    return out


def outline(notebook: dict) -> list[tuple[str, int, str]]:
    """The page as a reader meets it: ('heading', cell, title), ('text', cell, ...), ('run-in', cell, lead) and
    ('output', cell, '') for every code cell whose output the page shows, in order."""
    found = []
    for i, cell in enumerate(notebook['cells']):
        tags = set(cell['metadata'].get('tags', []))
        if cell['cell_type'] == 'markdown' and 'remove-cell' not in tags:
            for kind, value in _blocks(_text(cell)):
                lead = RUN_IN.match(value) if kind == 'paragraph' else None
                if kind == 'heading':
                    found.append(('heading', i, value))
                elif lead and not RHYTHM.match(lead.group('lead')):
                    found.append(('run-in', i, lead.group('lead')))
                else:
                    found.append(('text', i, value.split('\n')[0][:60]))
        elif cell['cell_type'] == 'code' and _shows_output(cell):
            found.append(('output', i, ''))
    return found


def sections_that_switch_topic(notebook: dict) -> list[str]:
    """Sections whose own text is followed by another topic before their first table or figure.

    A ``##``/``###`` heading's first paragraphs introduce what it shows; its first output (table or figure) belongs
    to it. When a run-in heading (``**Viscous friction.**``: a bold lead, not one of the rhythm words) comes after that
    introduction and before any output, the outputs that follow sit under a heading of another topic: the heading's
    own figure comes later, behind the other topic's table (issue 30, chapter 2). A section that opens directly with
    run-in items (``### Three traps``), run-ins in the heading's own cell (the parts of one experiment's set-up) and a
    run-in after the section's first output (a side topic with its own table) are fine.
    """
    problems, section, introduced, switched, shown = [], None, False, None, False
    for kind, cell, value in outline(notebook):
        if kind == 'heading':
            section, introduced, switched, shown = (cell, value), False, None, False
        elif section is None or shown:
            continue
        elif kind == 'text' and switched is None:
            introduced = True
        elif kind == 'run-in' and introduced and switched is None and cell != section[0]:
            switched = (cell, value)  # run-ins in the heading's own cell are the parts of its introduction
        elif kind == 'output':
            if switched:
                problems.append(f'"{section[1]}" (cell {section[0]}) turns to "{switched[1]}" (cell {switched[0]}) '
                                f'before its own table or figure: the output of cell {cell} sits under a heading of '
                                'another topic')
            shown = True
    return problems


NUMBER = re.compile(r'(?<![\w.])[-−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])')
GLUED = re.compile(r'\{glue:text\}`(?P<key>[^`:]+):?(?P<fmt>[^`]*)`')


def _printed(cell: dict) -> str:
    """What a code cell prints or shows as plain text, its glued values (``keep``) left out."""
    out = []
    for output in cell.get('outputs', []):
        if output.get('metadata', {}).get('scrapbook'):
            continue
        if output.get('output_type') == 'stream' and output.get('name') == 'stdout':
            out.append(_text({'source': output['text']}))
        if 'text/plain' in output.get('data', {}):
            out.append(_text({'source': output['data']['text/plain']}))
    return '\n'.join(out)


def numbers_quoted_from_removed_cells(notebook: dict) -> list[str]:
    """Glued numbers in the prose, as the page shows them, that a ``remove-cell`` cell prints and no shown output
    does: the prose quotes a table the reader never sees."""
    from physai.book.edition import format_plain_text, glued_values
    values = glued_values(notebook)
    removed, shown = {}, set()
    for i, cell in enumerate(notebook['cells']):
        if cell['cell_type'] != 'code':
            continue
        numbers = set(NUMBER.findall(_printed(cell)))
        if 'remove-cell' in cell['metadata'].get('tags', []):
            for number in numbers:
                removed.setdefault(number, i)
        elif _shows_output(cell):
            shown |= numbers
    problems = []
    for i, cell in enumerate(notebook['cells']):
        if cell['cell_type'] == 'markdown':
            for glue in GLUED.finditer(_text(cell)):
                value = format_plain_text(values[glue.group('key')], glue.group('fmt') or 's')
                if value in removed and value not in shown:
                    problems.append(f'cell {i} quotes {glue.group("key")} = {value}, which only the removed cell '
                                    f'{removed[value]} prints')
    return problems




@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_each_section_shows_its_own_table_or_figure_before_another_topic(path):
    notebook = json.loads(path.read_text(encoding='utf-8'))
    assert sections_that_switch_topic(notebook) == [], path.name


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_no_prose_quotes_the_output_of_a_removed_cell(path):
    notebook = json.loads(path.read_text(encoding='utf-8'))
    assert numbers_quoted_from_removed_cells(notebook) == [], path.name


def _notebook(*cells) -> dict:
    """A small chapter: strings are Markdown cells, dicts code cells."""
    out = []
    for cell in cells:
        if isinstance(cell, str):
            out.append({'cell_type': 'markdown', 'metadata': {}, 'source': cell})
        else:
            out.append({'cell_type': 'code', 'metadata': {'tags': cell.get('tags', [])}, 'source': 'x',
                        'outputs': cell['outputs']})
    return {'cells': out, 'metadata': {}}


def _prints(text: str, tags=()) -> dict:
    return {'tags': list(tags), 'outputs': [{'output_type': 'stream', 'name': 'stdout', 'text': text}]}


def _glues(name: str, value: str) -> dict:
    return {'output_type': 'display_data', 'metadata': {'scrapbook': {'name': name}},
            'data': {'application/papermill.record/text/plain': value, 'text/plain': value}}


def test_the_outline_check_catches_a_heading_whose_figure_comes_after_another_topic():
    interleaved = _notebook('### Effort limit\n\nIdeal PD, limits E from 1 to 6 N·m.',
                            '**Viscous friction.** The joint damping instead:', _prints('0.05  2.34'),
                            'The effort figure:', _prints('E  angle'))
    assert sections_that_switch_topic(interleaved) == [
        '"Effort limit" (cell 0) turns to "Viscous friction." (cell 1) before its own table or figure: the output '
        'of cell 2 sits under a heading of another topic']
    in_order = _notebook('### Effort limit\n\nIdeal PD, limits E from 1 to 6 N·m.', _prints('E  angle'),
                         '**Viscous friction.** The joint damping instead:', _prints('0.05  2.34'))
    items = _notebook('### Three traps\n\n**`<general>` needs a bias type.** Else kp·u.', _prints('1.0'),
                      '**`<velocity>` wants an implicit integrator.** Euler diverges.', _prints('2.0'))
    rhythm = _notebook('## The Experiment\n\n**Predict.** How does the sag fall?\n\n**Run.** The sweep:',
                       _prints('kp sag'), '**Observe.** It falls as 1/kp.')
    answers = _notebook('### Exercises\n\nTwo questions.\n\n```{admonition} Answer\n:class: dropdown\n'
                        '**Viscous friction.** folded\n```', _prints('1.0'))
    for fine in (in_order, items, rhythm, answers):
        assert sections_that_switch_topic(fine) == []


def test_the_removed_output_check_catches_prose_quoting_a_table_the_page_removes():
    removed_table = _prints('damping  turns\n0.05  2.34\n', tags=['remove-cell'])
    removed_table['outputs'].append(_glues('turns', '2.3400001'))
    quoting = _notebook(removed_table, 'The link makes {glue:text}`turns:.2f` turns.')
    assert numbers_quoted_from_removed_cells(quoting) == [
        'cell 1 quotes turns = 2.34, which only the removed cell 0 prints']
    shown_elsewhere = _notebook(removed_table, _prints('turns 2.34'), 'The link makes {glue:text}`turns:.2f` turns.')
    only_glued = _notebook({'tags': ['remove-cell'], 'outputs': [_glues('turns', '2.3400001')]},
                           'The link makes {glue:text}`turns:.2f` turns.')
    for fine in (shown_elsewhere, only_glued):
        assert numbers_quoted_from_removed_cells(fine) == []


# --- the engine's size, said the same everywhere (issue 30) ------------------------------------------------------

ENGINE_FILES = tuple(ROOT / 'node_modules' / '@mujoco' / 'mujoco' / name for name in ('mujoco.js', 'mujoco.wasm'))
"""MuJoCo's WebAssembly build as the site serves it (book/_ext/physai_engine.py copies them); when the engine changes,
change these paths and the test lists every sentence whose size is then stale."""

SIZE_SOURCES = sorted({ROOT / 'README.md', *(ROOT / 'book').glob('*.md'), *(ROOT / 'book' / '_ext').glob('*.py'),
                       *(ROOT / 'book' / '_static').rglob('*.js'), *(ROOT / 'physai').rglob('*.py'),
                       ROOT / 'tests' / 'browser.py', *NOTEBOOKS})
MEGABYTES = re.compile(r'(?<![\d.])(?P<value>\d+(?:\.\d+)?) MB\b')
ABOUT_THE_ENGINE = re.compile(r'WebAssembly|mujoco_wasm|\bengine\b|MuJoCo \(', re.I)


def engine_size_statements(text: str) -> list[tuple[str, list[float]]]:
    """Each sentence that gives the engine's size in MB, with the sizes it gives (largest first)."""
    found = []
    for sentence in re.split(r'(?<=[.;:!?])\s+(?=[A-Z`(])|\n\s*\n', text):
        sizes = [float(m.group('value')) for m in MEGABYTES.finditer(sentence)]
        if sizes and ABOUT_THE_ENGINE.search(sentence) and not re.search(r'icon|font|mesh|model', sentence, re.I):
            found.append((' '.join(sentence.split())[:200], sorted(sizes, reverse=True)))
    return found


def _source_text(path: pathlib.Path) -> str:
    if path.suffix != '.ipynb':
        return path.read_text(encoding='utf-8')
    notebook = json.loads(path.read_text(encoding='utf-8'))
    return '\n\n'.join(_text(cell) for cell in notebook['cells'] if cell['cell_type'] == 'markdown')


def _stated(value: float, actual_mb: float) -> bool:
    """``value`` MB, as written (its decimals), is ``actual_mb`` rounded: 11 for 11.006, about 3 or 2.9 for 2.94."""
    decimals = len(str(value).split('.')[1].rstrip('0')) if '.' in str(value) else 0
    return abs(actual_mb - value) <= 0.5 * 10 ** -decimals


@pytest.fixture(scope='module')
def engine_megabytes() -> tuple[float, list[float]]:
    """The engine's raw size in MB (10⁶ bytes), and its gzip-compressed sizes at levels 1 to 9 (servers pick their
    own), measured once."""
    import gzip
    if not all(path.is_file() for path in ENGINE_FILES):
        pytest.skip('no node_modules/@mujoco/mujoco (npm ci)')
    data = [path.read_bytes() for path in ENGINE_FILES]
    return (sum(map(len, data)) / 1e6,
            [sum(len(gzip.compress(d, compresslevel=level)) for d in data) / 1e6 for level in range(1, 10)])


@pytest.mark.parametrize('path', SIZE_SOURCES, ids=[str(p.relative_to(ROOT)) for p in SIZE_SOURCES])
def test_the_engines_size_is_said_as_the_file_measures(path, engine_megabytes):
    """The engine's size, where a page or a comment gives it, is the file's: the largest figure of a sentence its raw
    size, any smaller one its gzip-compressed size, which is what a compressing server sends."""
    raw, compressed = engine_megabytes
    for sentence, sizes in engine_size_statements(_source_text(path)):
        assert _stated(sizes[0], raw), f'{path.name}: "{sentence}" says {sizes[0]} MB; the engine is {raw:.2f} MB'
        for size in (size for size in sizes if size != sizes[0]):
            assert any(_stated(size, each) for each in compressed), (
                f'{path.name}: "{sentence}" says {size} MB compressed; gzip makes {min(compressed):.2f} to '
                f'{max(compressed):.2f} MB of it')


def test_the_size_check_reads_a_size_and_its_compressed_size_from_one_sentence():
    text = ('The page loads MuJoCo\'s own WebAssembly build (about 3 MB) and reruns it.\n\n'
            'It copies its one file (11 MB; a server that compresses with gzip sends about 3 MB). The icons: 1.5 MB.')
    assert engine_size_statements(text) == [
        ("The page loads MuJoCo's own WebAssembly build (about 3 MB) and reruns it.", [3.0])]
    assert engine_size_statements('MuJoCo (11 MB, about 3 MB compressed) loads into this page.') == [
        ('MuJoCo (11 MB, about 3 MB compressed) loads into this page.', [11.0, 3.0])]
    assert _stated(11, 11.006077) and _stated(3, 2.96) and _stated(2.9, 2.938) and not _stated(3, 11.006)
