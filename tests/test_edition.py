"""The Colab edition stands in for Colab here: rendered by a plain CommonMark renderer, and executed with a fake
``google.colab`` and a fake pip.

Colab renders plain Markdown. ``markdown-it-py``'s ``commonmark`` preset, with no MyST plugin, shows what a learner
would see: no glue placeholder, no directive, no role may survive, every answer must be folded in ``<details>``, and
every number the book page shows (myst-nb's own formatting of the stored glue values) must be in the text.
"""

import importlib.metadata
import json
import pathlib
import re

import pytest
from markdown_it import MarkdownIt

from physai.book import buildit, colab, edition

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = edition.Book(ROOT)
CHAPTERS = edition.chapters(BOOK)
IDS = [pathlib.PurePosixPath(page).name for page in CHAPTERS]
COMMONMARK = MarkdownIt('commonmark')


def source(page: str) -> dict:
    return json.loads(edition.page_path(ROOT, page).read_text(encoding='utf-8'))


def committed(page: str) -> dict:
    path = ROOT / edition.edition_name(page)
    assert path.is_file(), f'{path.relative_to(ROOT)} is missing: run python -m physai.book.edition'
    return json.loads(path.read_text(encoding='utf-8'))


def text(cell: dict) -> str:
    return colab.cell_text(cell)


def rendered(notebook: dict) -> list[str]:
    """The HTML of each Markdown cell, as a plain CommonMark renderer makes it."""
    return [COMMONMARK.render(text(cell)) for cell in notebook['cells'] if cell['cell_type'] == 'markdown']


# --- in sync ----------------------------------------------------------------------------------------------------

def test_committed_edition_is_what_the_generator_writes_now():
    files = edition.render(BOOK)
    assert sorted(files) == sorted(str(p.relative_to(ROOT)) for p in (ROOT / edition.EDITION_DIR).glob('*.ipynb')), (
        'colab/ holds other notebooks than the chapters of _toc.yml: run python -m physai.book.edition')
    for name, expected in files.items():
        assert (ROOT / name).read_text(encoding='utf-8') == expected, (
            f'{name} is out of date with its chapter: run python -m physai.book.edition')


def test_book_url_is_the_github_pages_site_of_the_repository():
    owner, repo = colab.REPOSITORY_URL.removeprefix('https://github.com/').split('/')
    assert edition.BOOK_URL == f'https://{owner}.github.io/{repo}/'


# --- what a plain Markdown renderer shows ----------------------------------------------------------------------

@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_no_myst_survives_in_the_edition(page):
    notebook = committed(page)
    for cell in notebook['cells']:
        if cell['cell_type'] != 'markdown':
            continue
        md = text(cell)
        assert '{glue' not in md, md
        assert not re.search(r'^\s*(`{3,}|:{3,})\{', md, re.M), f'a MyST directive is left:\n{md}'
        assert not re.search(r'^\(\S+\)=\s*$', md, re.M), f'a MyST target is left:\n{md}'
    for html in rendered(notebook):
        for role in ('{eq}', '{ref}', '{doc}', '{glue', '{numref}', '{math}'):
            assert role not in html, f'{role} is shown raw:\n{html}'
        assert not re.search(r'\$\$[ \t]*\([\w-]+\)[ \t]*$', html, re.M), f'an equation label is shown raw:\n{html}'


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_every_answer_is_folded_in_details(page):
    dropdowns = sum(len(re.findall(r'^(`{3,}|:{3,})\{(admonition|dropdown)\}.*\n(?::[\w-]+:.*\n)*?:class:.*dropdown',
                                   text(cell), re.M))
                    for cell in source(page)['cells'] if cell['cell_type'] == 'markdown')
    html = '\n'.join(rendered(committed(page)))
    summaries = re.findall(r'<details>\s*<summary>([^<]*)</summary>', html)
    assert len([s for s in summaries if s != 'Worked solution']) == dropdowns > 0
    outside = re.sub(r'<details>.*?</details>', '', html, flags=re.S)
    assert not re.search(r'>\s*(Worked answer|Answer)\b', outside), 'an answer is outside <details>'
    assert 'Answer' not in ''.join(re.findall(r'<pre>.*?</pre>', html, re.S)), 'an answer renders as code'
    for summary in summaries:
        assert summary in ('Answer', 'Worked answer', 'Worked solution', 'Hint', 'How the time is estimated') \
            or summary.startswith('Answer'), summary


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_every_number_the_page_shows_is_in_the_text(page):
    """Each glued number, formatted by myst-nb itself as the HTML page shows it, is in the same cell's text."""
    from myst_nb.core.variables import format_plain_text
    notebook = source(page)
    values = edition.glued_values(notebook)
    converted = {cell['id']: cell for cell in committed(page)['cells'] if cell['cell_type'] == 'markdown'}
    count = 0
    for original in notebook['cells']:
        if original['cell_type'] != 'markdown' or original['id'] not in converted:  # a book-only cell, left out
            continue
        cell = converted[original['id']]
        html = COMMONMARK.render(text(cell))
        for key, fmt in re.findall(r'\{glue:text\}`([^`:]+):?([^`]*)`', text(original)):
            shown = format_plain_text(values[key], fmt or 's')
            in_only_html = re.search(r'```\{only\}\s*html\b(?:(?!```).)*' + re.escape(key), text(original), re.S)
            assert shown in html or in_only_html, (
                f'{page}: {key}:{fmt} shows {shown!r} on the page but not in:\n{text(cell)}')
            count += 1
    assert count > 0


@pytest.mark.parametrize('fmt', ['.0f', '.2f', '.3f', '.1e', '.0e', '.4g', 's', ''])
def test_formatting_is_myst_nbs(fmt):
    from myst_nb.core.variables import format_plain_text
    for page in CHAPTERS:
        for value in edition.glued_values(source(page)).values():
            try:
                expected = format_plain_text(value, fmt)
            except (TypeError, ValueError):
                continue
            assert edition.format_plain_text(value, fmt) == expected


def test_equations_are_numbered_in_one_count_over_the_book():
    """One count over the pages of _toc.yml (the built pages show the same: the next test)."""
    numbers = list(BOOK.equations.values())
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.slow
def test_equations_are_numbered_like_the_html_book(built_book):
    """The built pages (the session's one build) number every equation as the edition does."""
    html_dir = built_book
    for page in CHAPTERS:
        html = (html_dir / f'{page}.html').read_text(encoding='utf-8')
        shown = re.findall(r'id="equation-([^"]+)".*?<span class="eqno">\((\d+)\)', html, re.S)
        assert shown == [(label, str(BOOK.equations[label])) for label, _ in shown]


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_edition_cells_are_cleared_and_start_with_the_install_cell(page):
    notebook = committed(page)
    assert colab.cell_text(colab.first_code_cell(notebook)) == colab.INSTALL_CELL
    for cell in notebook['cells']:
        if cell['cell_type'] == 'code':
            assert cell['outputs'] == [] and cell['execution_count'] is None
    code = [c for c in source(page)['cells'] if c['cell_type'] == 'code'
            and not {'remove-cell', 'book-only'} & set(c.get('metadata', {}).get('tags', []))
            and not edition.LIVE_CALL.search(text(c))]
    expected = []
    used = edition.names_read(edition.learner_code(text(c)) for c in code)
    for original in code[1:]:
        your_turn, rest = edition.build_it(edition.learner_code(text(original), used=used))
        if 'hide-cell' in original.get('metadata', {}).get('tags', []):
            rest = re.sub(r'^# @title .*\n', '', rest)  # compared below without its form title
        expected += [text(c) for c in your_turn if c['cell_type'] == 'code'] + ([rest] if rest.strip() and not all(
            line.lstrip().startswith('#') for line in rest.splitlines() if line.strip()) else [])
    expected = [re.sub(r'^# @title .*\n', '', t) for t in expected]
    assert [re.sub(r'^# @title .*\n', '', text(c))
            for c in notebook['cells'] if c['cell_type'] == 'code'][1:] == expected
    assert notebook['metadata']['kernelspec']['name'] == 'python3'
    import nbformat
    nbformat.validate(nbformat.reads(json.dumps(notebook), as_version=4))


def test_check_mode_reports_a_stale_edition_and_writes_nothing(tmp_path):
    import shutil
    for name in ('_toc.yml', 'book', 'notebooks'):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, tmp_path / name)
    said = []
    assert edition.write(tmp_path, check=True, out=said.append) == 1
    assert not (tmp_path / edition.EDITION_DIR).exists()
    assert all(line.endswith('out of date (run python -m physai.book.edition)') for line in said) and len(said) == len(CHAPTERS)
    assert edition.write(tmp_path, out=said.append) == 0
    assert edition.write(tmp_path, check=True, out=said.append) == 0


# --- the converter on small pieces of MyST ----------------------------------------------------------------------

def convert(md: str, values=None, page='notebooks/01_position_actuators') -> str:
    return edition.Converter(BOOK, page, values or {}).convert(md)


def test_a_dropdown_admonition_becomes_details_with_its_title_as_summary():
    md = '```{admonition} Worked answer\n:class: dropdown\nIt is **{glue:text}`x:.2f`** N.\n```'
    assert convert(md, {'x': '1.2345'}) == (
        '\n<details>\n<summary>Worked answer</summary>\n\nIt is **1.23** N.\n\n</details>\n')


def test_other_admonitions_become_quoted_blocks_with_a_bold_title():
    md = '```{admonition} The sliders on Colab\n:class: tip\nLine one.\n\nLine two.\n```'
    assert convert(md).strip() == '> **The sliders on Colab**\n>\n> Line one.\n>\n> Line two.'
    assert convert(':::{note}\nCareful.\n:::').strip() == '> **Note**\n>\n> Careful.'


def test_labelled_equations_and_their_references_get_the_books_numbers():
    md = 'See {eq}`eq-sag`:\n\n$$\ne = \\tau / k\n$$ (eq-sag)\n'
    n = BOOK.equations['eq-sag']
    assert convert(md) == f'See ({n}):\n\n$$\ne = \\tau / k\n\\tag{{{n}}}\n$$\n'


def test_doc_roles_and_page_links_become_links_to_the_published_book():
    assert convert('{doc}`../book/colab`') == f'[On Google Colab]({edition.BOOK_URL}book/colab.html)'
    assert convert('[run it](../book/local.md)') == f'[run it]({edition.BOOK_URL}book/local.html)'
    assert convert('[up](#the-problem)') == (
        f'[up]({edition.BOOK_URL}notebooks/01_position_actuators.html#the-problem)')
    assert convert('[MuJoCo](https://mujoco.org)') == '[MuJoCo](https://mujoco.org)'


def test_plain_code_fences_are_left_alone():
    md = '```python\nx = {1: 2}  # {glue:text}`not_a_role`\n```'
    assert convert(md).strip() == md


def test_an_unknown_directive_or_a_missing_glue_value_fails_loudly():
    with pytest.raises(ValueError, match='does not know the directive'):
        convert('```{mermaid}\ngraph\n```')
    with pytest.raises(KeyError, match='no glued value'):
        convert('{glue:text}`missing:.2f`')


def test_remove_cell_cells_are_dropped_and_nbval_tags_left_out():
    notebook = {'metadata': {}, 'cells': [
        {'cell_type': 'code', 'metadata': {}, 'source': 'install', 'outputs': []},
        {'cell_type': 'code', 'metadata': {'tags': ['remove-cell']}, 'source': 'secret', 'outputs': []},
        {'cell_type': 'code', 'metadata': {'tags': ['nbval-ignore-output', 'hide-input']}, 'source': 'print(1)',
         'outputs': [{'output_type': 'stream', 'name': 'stdout', 'text': '1'}], 'execution_count': 3}]}
    out = edition.convert_notebook(notebook, BOOK, 'notebooks/01_position_actuators')
    code = [c for c in out['cells'] if c['cell_type'] == 'code']
    assert [text(c) for c in code] == [colab.INSTALL_CELL, 'print(1)']
    assert code[1]['metadata'] == {'tags': ['hide-input']} and code[1]['outputs'] == []


# --- what only the published page has is left out; what it folds is folded -------------------------------------

NO_PANEL_YET: set[str] = set()
"""Chapters without a browser live panel yet (none: chapter 6's is ``web_firmware.settings_live``)."""


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_the_browser_live_panels_are_left_out_of_the_edition(page):
    """Each chapter's page shows a live panel running MuJoCo in the browser (``web.servo_live()``...): on Colab it
    shows nothing and costs seconds, so the edition leaves its cell out; the kernel's own panel stays."""
    if page in NO_PANEL_YET:
        pytest.skip(f'{page} has no browser live panel yet (issue 41)')
    live = [text(c) for c in source(page)['cells'] if c['cell_type'] == 'code' and edition.LIVE_CALL.search(text(c))]
    assert live, f'{page} has no browser live panel: the test looks for web.*_live / web_arm.*_live'
    code = '\n'.join(text(c) for c in committed(page)['cells'] if c['cell_type'] == 'code')
    assert not edition.LIVE_CALL.search(code)
    # the kernel's panel, which Colab shows: the page's panel as a widget (chapters 1-3), or the ipywidgets one
    assert '_widget(' in code or '_panel(' in code


def test_a_live_panel_cell_that_does_more_than_show_the_panel_is_refused():
    assert edition.shows_only_a_live_panel('from physai.interface import web\nweb.servo_live()')
    assert edition.shows_only_a_live_panel('from physai.interface import web_arm\nweb_arm.sysid_live(held, fitted)')
    assert not edition.shows_only_a_live_panel('panel = widget.servo_widget()\npanel')
    with pytest.raises(ValueError, match='chapter cell 7: a cell that shows a browser live panel must hold only'):
        edition.shows_only_a_live_panel('x = 2\nweb.servo_live()', 'chapter cell 7')


def test_book_only_cells_and_only_html_text_are_left_out_and_only_colab_text_kept():
    notebook = {'metadata': {}, 'cells': [
        {'cell_type': 'code', 'metadata': {}, 'source': 'install', 'outputs': []},
        {'cell_type': 'markdown', 'metadata': {'tags': ['book-only']}, 'source': 'Touch the twin above.'},
        {'cell_type': 'markdown', 'metadata': {}, 'source': (
            'Kept.\n\n```{only} html\nThe page\'s own words.\n```\n\n```{only} colab\nOn Colab: run it.\n```\n\n'
            '```{only} not html and (colab or latex)\nAlso kept.\n```')},
        {'cell_type': 'markdown', 'metadata': {}, 'source': '```{only} html\nA whole cell for the page.\n```'},
        {'cell_type': 'code', 'metadata': {}, 'source': 'from physai.interface import web\nweb.servo_live()',
         'outputs': []}]}
    out = edition.convert_notebook(notebook, BOOK, 'notebooks/01_position_actuators')
    markdown = [text(c) for c in out['cells'] if c['cell_type'] == 'markdown'][1:]
    assert [m.split() for m in markdown] == [['Kept.', 'On', 'Colab:', 'run', 'it.', 'Also', 'kept.']]
    assert [text(c) for c in out['cells'] if c['cell_type'] == 'code'] == [colab.INSTALL_CELL]
    with pytest.raises(ValueError, match='not an expression of tags'):
        edition.only_applies('html ==', 'here')


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_the_code_the_page_folds_is_folded_on_colab(page):
    """Colab ignores the book's hide-cell tag: the edition folds those cells as Colab folds code (a form title,
    cellView form), and they still run with the rest."""
    folded = {c['id'] for c in source(page)['cells'] if 'hide-cell' in c.get('metadata', {}).get('tags', [])}
    assert folded
    for cell in committed(page)['cells']:
        if cell['id'] in folded:
            assert cell['metadata']['cellView'] == 'form' and cell['metadata']['jupyter'] == {'source_hidden': True}
            assert text(cell).startswith('# @title The code of the worked answer below'), text(cell)[:120]
            folded.discard(cell['id'])
    assert not folded, f'hide-cell cells missing from the edition: {folded}'


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_the_first_cell_says_this_is_the_build_it_version_and_which_mujoco(page):
    first = text(committed(page)['cells'][0])
    assert 'the Build-it version' in first
    chapter = edition.chapter_number(page)
    assert all(f'`{name}`' in first for name in buildit.CHAPTERS[chapter])
    assert f'MuJoCo {colab.PINS["mujoco"]}, the version the book\'s numbers are for' in first
    assert '`mujoco`, `mujoco-core`, `mujoco-studio`' in first


# --- every worked solution runs as pasted -----------------------------------------------------------------------

def worked_solutions() -> list[tuple[str, str, str]]:
    """(page, function name, code) of every folded worked solution of the committed edition."""
    found = []
    for page in CHAPTERS:
        for cell in committed(page)['cells']:
            match = re.search(r'<summary>Worked solution</summary>\n\n```python\n(.*?)\n```', text(cell), re.S)
            if match and cell['cell_type'] == 'markdown':
                name = re.findall(r'^def (\w+)\(', match.group(1), re.M)[-1]  # after the helpers it calls
                found.append((page, name, match.group(1)))
    return found


def test_every_build_it_function_has_one_worked_solution():
    assert sorted(name for _, name, _ in worked_solutions()) == sorted(buildit.FUNCTIONS)


@pytest.mark.parametrize('page, name, code', worked_solutions(), ids=[n for _, n, _ in worked_solutions()])
def test_a_worked_solution_pasted_into_a_fresh_namespace_passes_its_check(page, name, code):
    """A learner copies the folded solution into an empty cell of a fresh runtime: it must define the function
    (with the imports and helpers it needs) and pass the check the edition runs after it."""
    namespace = {'__name__': '__main__'}
    exec(compile(code, f'<{page}: worked solution of {name}>', 'exec'), namespace)
    said = []
    result = buildit.check(namespace[name], name, say=said.append, strict=True)
    assert result.passed, said


# --- executed as on Colab ---------------------------------------------------------------------------------------

FAKE_COLAB = r'''
# Test preamble (not part of the edition): a fake Colab runtime.
import importlib.metadata, subprocess, sys, types
INSTALLED = {installed!r}
PIP_COMMANDS = []
sys.modules['google'] = types.ModuleType('google')
sys.modules['google.colab'] = types.ModuleType('google.colab')
{imported}
_real_version, _real_run, _real_popen = importlib.metadata.version, subprocess.run, subprocess.Popen

def _version(name):
    if name in INSTALLED:
        if INSTALLED[name] is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return INSTALLED[name]
    return _real_version(name)

def _pip(args):
    PIP_COMMANDS.append(list(args[3:]))
    for package in [a for a in args[4:] if not a.startswith('-') and a != 'off']:
        if args[3] == 'uninstall':
            INSTALLED[package] = None
        elif '==' in package:
            name, _, version = package.partition('==')
            INSTALLED[name] = version

def _run(args, *a, **k):
    if list(args[1:3]) != ['-m', 'pip']:
        return _real_run(args, *a, **k)
    _pip(args)
    return subprocess.CompletedProcess(args, 0)

def _popen(args, *a, **k):
    if list(args[1:3]) != ['-m', 'pip']:
        return _real_popen(args, *a, **k)
    _pip(args)
    return types.SimpleNamespace(stdout=iter(['Successfully installed (fake pip)\n']), returncode=0, wait=lambda: 0)

importlib.metadata.version = _version
subprocess.run, subprocess.Popen = _run, _popen
'''


BOOK_MUJOCO_HERE = importlib.metadata.version('mujoco') == colab.PINS['mujoco']
needs_the_books_mujoco = pytest.mark.skipif(
    not BOOK_MUJOCO_HERE,
    reason=f"the Colab edition runs on the book's MuJoCo {colab.PINS['mujoco']} only (with another its first cell stops "
           'with RESTART NEEDED: test_run_all_stops_at_the_first_cell_when_mujoco_4_was_already_imported)')
"""The fake-Colab runs below execute every chapter on the MuJoCo installed here (make test-newest has another)."""


def execute(page: str, *, installed: dict, imported: str = '', timeout: int = 600, solved: bool = False):
    """Run the edition of ``page`` top to bottom after a fake-Colab preamble; return (notebook, error or None).
    ``solved``: each stub cell replaced by its worked solution, as a learner who pastes them all."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    edition_notebook = committed(page)
    if solved:
        stubs = {buildit.stub(name): buildit.solution(name) for name in buildit.FUNCTIONS}
        for cell in edition_notebook['cells']:
            if cell['cell_type'] == 'code' and text(cell) in stubs:
                cell['source'] = stubs[text(cell)]
    notebook = nbformat.reads(json.dumps(edition_notebook), as_version=4)
    preamble = nbformat.v4.new_code_cell(FAKE_COLAB.format(installed=installed, imported=imported))
    notebook.cells.insert(0, preamble)
    client = NotebookClient(notebook, timeout=timeout, kernel_name='python3',
                            resources={'metadata': {'path': str(ROOT / edition.EDITION_DIR)}})
    try:
        client.execute()
    except CellExecutionError as error:
        return notebook, error
    return notebook, None


def test_run_all_stops_at_the_first_cell_when_mujoco_4_was_already_imported():
    page = CHAPTERS[0]
    notebook, error = execute(page, installed={'mujoco': '4.0.0', 'mujoco-core': '4.0.0', 'mujoco-studio': '4.0.0',
                                               'physai': '0.1.0'},
                              imported="sys.modules['mujoco'] = types.SimpleNamespace(__version__='4.0.0')")
    assert error is not None, 'Run all went on past the install cell'
    assert error.ename == 'RestartNeeded'
    assert 'RESTART NEEDED: mujoco 4.0.0 is imported but 3.17.0 is installed' in error.evalue
    assert 'Runtime > Restart session' in error.evalue
    code = [cell for cell in notebook.cells if cell.cell_type == 'code']
    install = next(k for k, cell in enumerate(code) if cell.source == colab.INSTALL_CELL)
    assert install == 1  # right after the test's preamble
    assert all(cell.get('execution_count') is None for cell in code[install + 1:]), 'a later cell ran'


@pytest.mark.slow
@needs_the_books_mujoco
def test_chapter_1_runs_top_to_bottom_on_a_fresh_fake_colab():
    """The pinned MuJoCo is the one installed here; on the fake Colab the first cell only installs physai, checks,
    and says it is ready; then every cell of chapter 1 runs."""
    notebook, error = execute(CHAPTERS[0], installed={'physai': '0.1.0'})
    assert error is None, f'{error.ename}: {error.evalue}'
    code = [cell for cell in notebook.cells if cell.cell_type == 'code']
    printed = ''.join(o.get('text', '') for o in code[1].outputs)
    assert printed.strip().endswith('Ready: MuJoCo 3.17.0 and physai 0.1.0 are installed.')
    assert all(cell.get('execution_count') for cell in code)
    checks = [''.join(o.get('text', '') for o in cell.outputs) for cell in code if 'buildit.check(' in cell.source]
    assert len(checks) == 6 and all('is not written yet' in out for out in checks), checks


def test_build_it_gives_a_stub_a_check_and_the_folded_solution_for_each_function():
    your_turn, rest = edition.build_it('from physai.laws.sim import servo_sag\n\nprint(inspect.getsource(servo_sag))\n'
                                       'print(inspect.getsource(len))\nx = servo_sag(1.0, 0.3)')
    assert [c['cell_type'] for c in your_turn] == ['markdown', 'code', 'code', 'markdown']
    assert text(your_turn[1]) == buildit.stub('servo_sag')
    assert text(your_turn[2]) == 'from physai.book import buildit\n\nbuildit.check(servo_sag)'
    assert text(your_turn[3]) == ('<details>\n<summary>Worked solution</summary>\n\n```python\n'
                                  f'{buildit.solution("servo_sag").rstrip()}\n```\n\n</details>')
    assert '```python\nimport math\n\nfrom physai.laws import checks\n\n\ndef servo_sag(' in text(your_turn[3])
    assert 'getsource(servo_sag)' not in rest and 'print(inspect.getsource(len))' in rest
    assert edition.build_it('print(inspect.getsource(len))') == ([], 'print(inspect.getsource(len))')


def test_build_it_takes_a_function_or_a_method_printed_from_its_module_and_leaves_the_runner_as_it_is():
    your_turn, rest = edition.build_it('print(inspect.getsource(A.pd_torque))\n'
                                       'print(inspect.getsource(A._run_explicit))\n'
                                       'print(inspect.getsource(PDController.write))\n'
                                       'x = A.pd_torque(1, 0, 0, 0, 2, 0)')
    assert [c['cell_type'] for c in your_turn] == ['markdown', 'code', 'code', 'markdown'] * 2
    assert text(your_turn[1]) == buildit.stub('pd_torque')
    assert text(your_turn[2]) == 'from physai.book import buildit\n\nbuildit.check(pd_torque)'
    assert text(your_turn[5]) == buildit.stub('write') and 'import mujoco\nimport numpy as np' in text(your_turn[5])
    assert 'def write(self, data: mujoco.MjData' in text(your_turn[5])
    assert text(your_turn[6]) == 'from physai.book import buildit\n\nbuildit.check(write)'
    assert text(your_turn[7]).startswith('<details>\n<summary>Worked solution</summary>\n\n```python\n'
                                         'import math\nfrom collections.abc import Sequence\n\nimport mujoco\n')
    assert '\n\n\ndef write(self, data: mujoco.MjData' in text(your_turn[7])
    assert rest == ("# From here on the chapter uses physai's own pd_torque, write (the worked solution).\n"
                    'print(inspect.getsource(A._run_explicit))\nx = A.pd_torque(1, 0, 0, 0, 2, 0)')


WORKED_SOLUTIONS = {'_run_explicit'}
"""Printed sources the edition leaves as worked solutions: chapter 2's runner (plumbing around mj_step)."""


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_every_build_it_step_has_a_stub_and_a_check_in_the_chapters_order(page):
    """Each function the chapter prints is a "Your turn" with its check, except the few left as worked solutions."""
    printed = [name.rsplit('.', 1)[-1] for cell in source(page)['cells'] if cell['cell_type'] == 'code'
               for name in edition.GETSOURCE.findall(text(cell))]
    assert printed and set(printed) <= set(buildit.FUNCTIONS) | WORKED_SOLUTIONS, printed
    chapter = int(pathlib.PurePosixPath(page).name[:2])
    assert sorted(n for n in printed if n in buildit.FUNCTIONS) == sorted(buildit.CHAPTERS[chapter])
    code = [text(cell) for cell in committed(page)['cells'] if cell['cell_type'] == 'code']
    checks = re.findall(r'^buildit\.check\((\w+)\)$', '\n'.join(code), re.M)
    assert checks == [n for n in printed if n in buildit.FUNCTIONS]
    for name in checks:
        assert buildit.stub(name) in code


@pytest.mark.slow
@needs_the_books_mujoco
@pytest.mark.parametrize('page', CHAPTERS[1:], ids=IDS[1:])
def test_every_other_chapter_runs_top_to_bottom_on_a_fresh_fake_colab(page):
    notebook, error = execute(page, installed={'physai': '0.1.0'})
    assert error is None, f'{error.ename}: {error.evalue}'


# --- the page's Colab button opens the edition -----------------------------------------------------------------

def book_extension():
    import importlib.util
    spec = importlib.util.spec_from_file_location('physai_book', ROOT / 'book' / '_ext' / 'physai_book.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_colab_launch_url_is_turned_into_the_editions():
    ext = book_extension()
    base = 'https://colab.research.google.com/github/physai-book/simulated-actuators/blob/main/'
    assert ext.colab_edition_url(base + 'notebooks/01_position_actuators.ipynb') == (
        base + 'colab/01_position_actuators.ipynb')
    for other in (base + 'book/intro.md', 'https://mybinder.org/v2/gh/x/y/main?urlpath=tree/notebooks/a.ipynb'):
        assert ext.colab_edition_url(other) == other
    assert ext.EDITION_DIR == edition.EDITION_DIR
    buttons = [{'type': 'group', 'buttons': [{'text': 'Colab', 'url': base + 'notebooks/02_actuator_models.ipynb'}]}]
    ext._open_colab_edition(None, 'notebooks/02_actuator_models', None, {'header_buttons': buttons}, None)
    assert buttons[0]['buttons'][0]['url'] == base + 'colab/02_actuator_models.ipynb'


@pytest.mark.slow
def test_the_built_pages_colab_button_opens_the_edition(built_book):
    """The book as make book builds it (strict; the session's one build): each chapter's Colab link."""
    html_dir = built_book
    assert not (html_dir / 'colab').exists(), 'the edition must not become pages of the book'
    for page in CHAPTERS:
        links = set(re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"',
                               (html_dir / f'{page}.html').read_text(encoding='utf-8')))
        name = pathlib.PurePosixPath(page).name
        assert links == {f'https://colab.research.google.com/github/physai-book/simulated-actuators/blob/main/'
                         f'colab/{name}.ipynb'}, links
        assert (ROOT / edition.edition_name(page)).is_file()


@pytest.mark.slow
@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_every_pasted_number_of_the_built_page_is_in_the_edition(page, built_book):
    """The numbers read off the built HTML page itself (myst-nb's pasted text; the session's one build)."""
    built = built_book / f'{page}.html'
    shown = re.findall(r'<span class="pasted-text">([^<]*)</span>', built.read_text(encoding='utf-8'))
    text_of_edition = '\n'.join(text(cell) for cell in committed(page)['cells'] if cell['cell_type'] == 'markdown')
    missing = sorted({value for value in shown if value not in text_of_edition})
    assert shown and not missing, f'{page}: the page shows {missing} but the edition does not'


# --- the learner's code: no book plumbing, checks printed, no cell of comments only --------------------------------

def test_the_learners_code_leaves_out_glue_plumbing_and_prints_each_assert():
    code = edition.learner_code(
        "from physai.book.prose import glue, keep, spoken_list\n"
        "rows = run()\n"
        "for k, row in enumerate(rows):\n"
        "    keep(f'row_{k}', row)\n"
        "glue('names', spoken_list(rows), display=False)\n"
        "assert all(r > 0 for r in rows)  # every row is positive\n"
        "assert len(rows) == 3, 'three rows'\n"
        "assert rows[0] < rows[1]\n"
        "show(rows)")
    assert code == ("from physai.book.prose import spoken_list\n"
                    "rows = run()\n"
                    "print('✓' if (all(r > 0 for r in rows)) else '✗ not so:', 'every row is positive')\n"
                    "print('✓' if (len(rows) == 3) else '✗ not so:', 'three rows')\n"
                    "print('✓' if (rows[0] < rows[1]) else '✗ not so:', 'rows[0] < rows[1]')\n"
                    "show(rows)")


def test_an_assignment_only_the_plumbing_read_goes_with_it_when_nothing_else_reads_it():
    source = "laws = run()\nfirst = next(r for r in laws if r > 0)\nkeep('first', first)\nfig = plot(laws)"
    used = edition.names_read([edition.learner_code(source)])
    assert edition.learner_code(source, used=used) == 'laws = run()\nfig = plot(laws)'
    # an assignment whose value calls something else (it may draw, print, change state) stays
    source = "p = link.ServoParams(kp=1.0)\nkeep('x', p.kp)"
    assert edition.learner_code(source, used=frozenset()) == 'p = link.ServoParams(kp=1.0)'


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_the_edition_has_no_glue_plumbing_no_assert_and_no_cell_of_comments_only(page):
    import ast
    for cell in committed(page)['cells']:
        if cell['cell_type'] != 'code':
            continue
        code = text(cell)
        lines = [line for line in code.splitlines() if line.strip()]
        assert not all(line.lstrip().startswith('#') for line in lines), code
        for node in ast.walk(ast.parse(code)):
            assert not isinstance(node, ast.Assert), code
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in edition.PLUMBING, code


@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_the_edition_does_not_send_its_reader_to_the_edition_or_speak_of_the_page_without_a_kernel(page):
    cells = committed(page)['cells'][1:]  # the header says what the edition is
    for cell in cells:
        if cell['cell_type'] == 'markdown':
            words = text(cell)
            assert 'rocket button' not in words and 'Colab edition' not in words, words[:300]
            assert 'without a kernel' not in words, words[:300]


def test_a_build_it_cell_left_with_nothing_to_run_says_so_in_text():
    your_turn, rest = edition.build_it('print(inspect.getsource(A.pd_torque))\n')
    assert rest == '' and your_turn[-1]['cell_type'] == 'markdown'
    assert your_turn[-1]['source'].startswith("From here on the chapter uses physai's own `pd_torque`")


@pytest.mark.slow
@needs_the_books_mujoco
@pytest.mark.parametrize('page', CHAPTERS, ids=IDS)
def test_every_chapter_runs_top_to_bottom_with_the_worked_solutions_pasted_and_every_check_passes(page):
    """A learner who pastes each worked solution into its cell: the chapter still runs, and each check says ✓."""
    notebook, error = execute(page, installed={'physai': '0.1.0'}, solved=True)
    assert error is None, f'{error.ename}: {error.evalue}'
    checks = [''.join(o.get('text', '') for o in cell.outputs) for cell in notebook.cells
              if cell.cell_type == 'code' and cell.source.startswith('from physai.book import buildit\n\nbuildit.check(')]
    assert checks and all(out.startswith('✓ ') for out in checks), checks
