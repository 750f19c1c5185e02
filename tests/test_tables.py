"""physai.interface.tables: the text table as text/plain, the same cells as an HTML table under readable headers."""

import html
import math
import re

import pytest

from physai.experiments import registry
from physai.interface import tables
from physai.laws import robust

ROWS = [{'joint': 'elbow_flex', 'kp': 998.2234, 'sag_deg': 0.5620, 'verdict': 'stable', 'diff': robust.roundoff(1e-15),
         'peak_force': 2.94, 'note': None},
        {'joint': 'wrist <roll> & co', 'kp': 17.8, 'sag_deg': math.nan, 'verdict': 'diverged', 'diff': 3.4e-2,
         'peak_force': -0.5, 'note': 'x'}]
COLUMNS = (('joint', 's'), ('kp', '.2f'), ('sag_deg', '.4f'), ('verdict', 's'), ('diff', '.2e'),
           ('peak_force', '.2f', 'N·m'), ('note', 's'))


def cells_of(fragment: str, tag: str) -> list[str]:
    return [html.unescape(re.sub(r'<[^>]+>', '', c)) for c in re.findall(rf'<{tag}[^>]*>(.*?)</{tag}>', fragment)]


def test_the_text_is_the_command_lines_table_unchanged():
    table = tables.show(COLUMNS, ROWS)
    assert repr(table) == str(table) == registry.format_table(ROWS, COLUMNS)


def test_the_html_shows_the_same_cells_in_the_same_formats_under_readable_headers():
    fragment = tables.show(COLUMNS, ROWS)._repr_html_()
    assert cells_of(fragment, 'th') == ['joint', 'kp (N·m/rad)', 'sag (°)', 'verdict', 'diff', 'peak force (N·m)',
                                        'note']
    body = cells_of(fragment, 'td')
    assert body == [c for line in registry.cells(ROWS, COLUMNS) for c in line]
    assert body[:7] == ['elbow_flex', '998.22', '0.5620', 'stable', '< 1e-12', '2.94', '-']
    assert '<roll>' not in fragment and '&lt;roll&gt; &amp; co' in fragment  # text is escaped, never markup
    assert re.findall(r'title="([^"]+)"', fragment) == [c[0] for c in COLUMNS]  # the key stays in reach


def test_words_are_left_aligned_and_numbers_right_aligned():
    fragment = tables.show(COLUMNS, ROWS)._repr_html_()
    heads = re.findall(r'<th(?!ead)([^>]*)>', fragment)
    assert ['class="w"' in h for h in heads] == [True, False, False, True, False, False, True]
    numbers_as_text = tables.show((('model', 's'), ('mae_deg', 's')),
                                  [{'model': 'a', 'mae_deg': '0.70'}, {'model': 'b', 'mae_deg': '≈ 3 (chaotic)'}])
    assert ['class="w"' in h for h in re.findall(r'<th(?!ead)([^>]*)>', numbers_as_text._repr_html_())] == [True, False]


def test_the_html_is_the_same_on_every_run_and_carries_its_own_scoped_style():
    a, b = tables.show(COLUMNS, ROWS)._repr_html_(), tables.show(COLUMNS, [dict(r) for r in ROWS])._repr_html_()
    assert a == b
    assert a.startswith(tables.STYLE) and a.count('<style>') == 1
    rules = re.findall(r'([^{}]+)\{', tables.STYLE.removeprefix('<style>'))
    assert rules and all(sel.strip().startswith(f'.{tables.CSS_CLASS}') for rule in rules for sel in rule.split(','))


def test_an_experiment_gives_its_own_columns_and_per_choice_columns():
    exp = registry.get('kp-sweep')
    rows = [{'kp': 1.0, 'kv': 0.36, 'sag_deg': 16.19, 'sag_linear_deg': 16.86, 'sag_exact_deg': 16.19, 'rise_ms': 533.0}]
    table = tables.show(exp, rows)
    assert repr(table) == exp.table(rows)
    assert 'rise time <span class="u">(ms)</span>' in table._repr_html_()
    sweep = registry.get('actuator-sweep')
    friction = [{'frictionloss': 0.1, 'decay_s': 1.0, 'turns': 2.0, 'final_speed': 0.0}]
    assert 'final speed <span class="u">(rad<wbr>/s)</span>' in tables.show(sweep, friction, 'friction')._repr_html_()


def test_bad_rows_fail_as_the_text_table_does():
    with pytest.raises(ValueError, match=r'rows\[0\] must have a value for every column'):
        tables.show((('kp', '.1f'),), [{'kv': 1.0}])
    with pytest.raises(ValueError, match=r'\(key, format\) or \(key, format, unit\)'):
        tables.show(('kp',), [{'kp': 1.0}])
