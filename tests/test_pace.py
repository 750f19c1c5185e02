"""A chapter's stated time: the estimate counts the core only, its folded answers as questions, and the Build-it
functions' lines without the input checks a learner may leave out."""

import json
import pathlib

import pytest

from physai.book import buildit, edition, pace

ROOT = pathlib.Path(__file__).resolve().parents[1]


def markdown(text):
    return {'cell_type': 'markdown', 'metadata': {}, 'source': text}


def code(text, tags=()):
    return {'cell_type': 'code', 'metadata': {'tags': list(tags)}, 'source': text, 'outputs': []}


def test_the_core_ends_at_the_heading_marked_optional_and_answers_count_as_questions():
    notebook = {'cells': [
        markdown('# Title\n\nOne two three.\n\n```{admonition} Answer\n:class: dropdown\nFour five.\n```'),
        code('x = 1', tags=['remove-cell']),  # not shown: not read
        code('y = x'),
        markdown('Six {glue:text}`so_kp:.2f` [seven](https://example.org/a-long-path).\n\n## Going further (optional)\n'
                 'eight nine'),
        markdown('ten'),
    ]}
    found = pace.estimate(notebook, chapter=None)
    # Title One two three admonition Answer class dropdown Four five | y x | Six so kp seven
    assert found.words == 10 + 2 + 4
    assert found.questions == 1 and found.functions == 0 and found.lines == 0
    assert found.total_minutes == pytest.approx(found.words / pace.READING_WPM + pace.QUESTION_MINUTES)


def test_a_functions_lines_leave_out_its_docstring_and_input_checks():
    """servo_sag's body without checks.positive(...) and checks.whole(...): what a learner has to write."""
    lines = pace.body_lines('servo_sag')
    source = buildit.solution('servo_sag')
    assert 'checks.positive' in source and 0 < lines < source.count('\n')
    assert pace.body_lines('pd_torque') == 1  # the law; its two gain checks left out


@pytest.mark.parametrize('chapter', [1, 2, 3, 4])
def test_each_chapters_colab_edition_states_the_estimate_of_its_own_text_under_its_title(chapter):
    path = next((ROOT / 'notebooks').glob(f'{chapter:02d}_*.ipynb'))
    found = pace.estimate(path)
    time, how = pace.statement(path)
    assert time.startswith(f'Time: about {found.rounded(found.total_minutes)} minutes for the core, its '
                           f'{found.questions} questions answered and its {len(buildit.CHAPTERS[chapter])} Build-it '
                           'functions written')
    assert f'{found.words:,} words' in how and f'({found.lines} lines)' in how
    colab = json.loads((ROOT / 'colab' / path.name).read_text(encoding='utf-8'))
    title = ''.join(colab['cells'][1]['source'])
    assert title.startswith('# ') and title.split('\n')[2] == f'*{time}* {how}'


def test_the_rounded_time_is_whole_steps_of_five_minutes_and_never_zero():
    one = pace.Pace(words=0, questions=0, functions=0, lines=0)
    assert one.rounded(0.4) == 5 and one.rounded(62.4) == 60 and one.rounded(62.6) == 65
