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


def test_reading_time_is_counted_from_the_words_at_the_reading_speed():
    ext = _extension()
    assert ext.reading_minutes(0) == 0
    assert ext.reading_minutes(1) == 1
    assert ext.reading_minutes(ext.WORDS_PER_MINUTE * 12) == 12
    assert ext.reading_minutes(ext.WORDS_PER_MINUTE * 12 + 1) == 13
    with pytest.raises(ValueError, match='words'):
        ext.reading_minutes(-1)
    text = ext.reading_time_text(4000, 1000)
    assert text.startswith('Reading time: about 20 minutes (4,000 words), plus 5 minutes for the optional Going further')


def test_prose_words_leave_out_code_cells_and_count_optional_sections_apart():
    from docutils import nodes
    ext = _extension()
    doc = nodes.document(None, None)
    main = nodes.section('', nodes.title('', 'Chapter'), nodes.paragraph('', 'one two three'))
    cell = nodes.container('', nodes.paragraph('', 'print(x) keep(y) z'), classes=['cell'])
    optional = nodes.section('', nodes.title('', 'Going further (optional)'), nodes.paragraph('', 'four five'))
    main += cell
    main += optional
    doc += main
    assert ext.prose_words(doc) == (3, 2)


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
