"""Numbers for the prose: glued for the book build, silently skipped where myst-nb is absent (Colab)."""

import sys

import pytest

from physai import prose


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
