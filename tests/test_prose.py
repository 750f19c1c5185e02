"""Numbers for the prose: glued for the book build, silently skipped where myst-nb is absent (Colab)."""

import json
import pathlib
import re
import sys

import pytest

from physai.book import prose


def test_gluing_without_myst_nb_does_nothing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'myst_nb', None)  # what a Colab runtime has: no myst-nb
    prose.keep('x', 1.0 / 3.0)
    prose.glue('label', 'shoulder_lift')
    assert capsys.readouterr().out == ''


@pytest.mark.parametrize('values, text', [((50,), '50'), ((50, 100), '50 and 100'),
                                          ((50, 100, 200.0), '50, 100 and 200')])
def test_spoken_list(values, text):
    assert prose.spoken_list(values) == text


def test_spoken_list_needs_a_number():
    with pytest.raises(ValueError, match='values must hold at least one number, got none'):
        prose.spoken_list([])


def _glued_numbers(notebook: dict) -> dict:
    values = {}
    for cell in notebook['cells']:
        for output in cell.get('outputs', []):
            text = output.get('data', {}).get('application/papermill.record/text/plain')
            if text is not None:
                values[output['metadata']['scrapbook']['name']] = ''.join(text)
    return values


@pytest.mark.parametrize('path', sorted(pathlib.Path(__file__).parents[1].glob('notebooks/*.ipynb')),
                         ids=lambda p: p.name)
def test_prose_shows_no_more_digits_than_keep_stores(path):
    """A sentence that printed more significant digits than `keep` stores would show rounding as if it were data."""
    notebook = json.loads(path.read_text(encoding='utf-8'))
    values = _glued_numbers(notebook)
    for cell in notebook['cells']:
        if cell['cell_type'] != 'markdown':
            continue
        for name, spec in re.findall(r'\{glue:text\}`(\w+):([^`]+)`', ''.join(cell['source'])):
            try:
                value = float(values[name])
            except (KeyError, ValueError):
                continue  # text, or glued by a name the book test checks
            mantissa = format(value, spec).split('e')[0]
            digits = re.sub(r'\D', '', mantissa).lstrip('0')
            assert len(digits) <= max(prose.KEEP_DIGITS, len(f'{value:.{prose.KEEP_DIGITS}g}')), (name, spec)


def test_spoken_list_takes_a_format():
    assert prose.spoken_list([0.002, 0.001, 0.0], 'g') == '0.002, 0.001 and 0'
