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


def test_sentences_are_the_prose_of_a_cell_split_at_full_stops():
    """Code, display math, tables and headings are not prose; an answer in a dropdown is; a colon, a semicolon or
    'e.g.' does not end a sentence, nor does a bold lead-in; a glued number is one word and an equation reference
    reads (1)."""
    markdown = '\n'.join([
        '## A heading. With a stop',
        '',
        'The sag is {glue:text}`sag:.2f`° here: small; e.g. at kp 100. {eq}`eq-sag` says why.',
        '',
        '$$',
        'e = \\tau_g / k_p . A',
        '$$ (eq-sag)',
        '',
        '| a. b | c. D |',
        '|---|---|',
        '',
        '```python',
        'print("Not prose. At all")',
        '```',
        '',
        '```{admonition} Answer',
        ':class: dropdown',
        'It shrinks ten times. See [the sweep](#sweep)!',
        '```',
        '',
        '1. **First.** An item',
        '   on two lines.',
    ])
    assert prose.sentences(markdown) == [
        'The sag is sag:.2f° here: small; e.g. at kp 100.', '(1) says why.',
        'It shrinks ten times.', 'See the sweep!', '**First.** An item on two lines.']


def test_long_sentences_count_words_and_refuse_a_limit_below_one():
    cell = {'cell_type': 'markdown', 'source': ['One two three four. ', 'Five six.']}
    notebook = {'cells': [{'cell_type': 'code', 'source': 'x = 1  # not prose at all, however long'}, cell]}
    assert prose.long_sentences(notebook, limit=3) == [(1, 4, 'One two three four.')]
    assert prose.long_sentences(notebook, limit=4) == []
    with pytest.raises(ValueError, match='limit must be a whole number of words, 1 or more, got 0'):
        prose.long_sentences(notebook, limit=0)


@pytest.mark.parametrize('name', ['01_position_actuators', '02_actuator_models', '03_where_pd_runs',
                                  '04_servo_sysid', '05_gripper', '06_servo_firmware'])
def test_no_sentence_of_the_chapter_runs_over_the_limit(name):
    """Issue 16: a long sentence is split; no chapter holds a sentence over LONGEST_SENTENCE words."""
    path = pathlib.Path(__file__).parents[1] / 'notebooks' / f'{name}.ipynb'
    long = prose.long_sentences(json.loads(path.read_text(encoding='utf-8')))
    assert not long, '\n'.join(f'cell {i}, {n} words: {s}' for i, n, s in long)
