"""Numbers for the book's prose, glued into the text with myst-nb.

A chapter computes a number and glues it under a name; its markdown shows it with
``{glue:text}`name:.2f```. The book build (Jupyter Book, myst-nb) reads the glued outputs stored in the
notebook. Where myst-nb is not installed (a notebook opened on Colab) gluing does nothing, since there is no
book build to read it; the computation and its printed tables run the same.

:func:`sentences` and :func:`long_sentences` measure the prose itself: the book keeps its sentences short
(mostly under 25 words, none over :data:`LONGEST_SENTENCE`), and a test holds the chapters to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def glue(name: str, value, display: bool = False) -> None:
    """Glue ``value`` under ``name`` for the prose (myst-nb's ``glue``); a no-op without myst-nb."""
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value, display=display)


KEEP_DIGITS = 6
"""Significant digits of a number kept for the prose: more than any sentence shows (at most 6 today), and few
enough that a last-bit change in a simulation (another processor, ``PHYSAI_PERTURB``) leaves the stored output
as it is."""


def keep(name: str, value: float) -> None:
    """Glue a number rounded to ``KEEP_DIGITS`` significant digits, so the stored output is robust."""
    glue(name, float(f'{float(value):.{KEEP_DIGITS}g}'))


def spoken_list(values: Iterable[float], fmt: str = '.0f') -> str:
    """Numbers as prose: '50', '50 and 100', '50, 100 and 200' (``fmt='g'``: '0.002, 0.001 and 0')."""
    words = [format(float(v), fmt) for v in values]
    if not words:
        raise ValueError('values must hold at least one number, got none')
    return words[0] if len(words) == 1 else ', '.join(words[:-1]) + ' and ' + words[-1]


LONGEST_SENTENCE = 35
"""Words a sentence of a chapter's prose may have at most; most stay under 25."""

_FENCE = re.compile(r'^(`{3,}|~{3,})(?P<info>.*?)\n(?P<body>.*?)^\1[ \t]*$', re.M | re.S)
_DISPLAY_MATH = re.compile(r'\$\$.*?\$\$(?:[ \t]*\([\w-]+\))?', re.S)
_ROLE = re.compile(r'\{(?P<role>[\w:+-]+)\}`(?P<content>[^`]*)`')
_LINK = re.compile(r'!?\[(?P<text>[^\]]*)\]\([^)]*\)')
_LIST_ITEM = re.compile(r'^(?:\d+\.|[-*+])[ \t]+')
_END = re.compile(r'(?<=[.!?])["”)]*\s+(?=[A-Z0-9*`"“(\[])')
_ABBREVIATION = re.compile(r'\b(?:e\.g|i\.e|vs|etc|cf|Fig|Eq|ed)\.$')


def _paragraphs(markdown: str) -> list[str]:
    """The paragraphs and list items of a Markdown cell, each on one line; code, display math, tables, headings
    and directive options left out. A directive's body (an answer in a dropdown) is prose and stays."""
    def fence(match):
        info = match.group('info').strip()
        return match.group('body') if info.startswith('{') else '\n'
    text = _FENCE.sub(fence, markdown)
    text = _DISPLAY_MATH.sub('\n', text)
    text = _ROLE.sub(lambda m: '(1)' if m.group('role') == 'eq' else m.group('content').split('<')[0].strip() or 'N',
                     text)
    text = _LINK.sub(lambda m: m.group('text'), text)
    blocks, block = [], []
    for line in text.split('\n'):
        line = line.strip()
        if not line or line.startswith(('#', '|', ':')):
            blocks.append(block)
            block = []
            continue
        if _LIST_ITEM.match(line):
            blocks.append(block)
            block = [_LIST_ITEM.sub('', line)]
            continue
        block.append(line)
    blocks.append(block)
    return [' '.join(b) for b in blocks if b]


def sentences(markdown: str) -> list[str]:
    """The sentences of a Markdown cell's prose (see :func:`_paragraphs` for what counts as prose).

    A sentence ends at ``.``, ``!`` or ``?`` followed by a space and a capital, a digit or markup; a colon or a
    semicolon does not end one. A glued number (``{glue:text}`name:.2f```) or an inline role counts as one word,
    an equation reference (``{eq}`label```) as ``(1)``.
    """
    found = []
    for paragraph in _paragraphs(markdown):
        pieces = _END.split(paragraph)
        merged = []
        for piece in pieces:
            if merged and _ABBREVIATION.search(merged[-1]):
                merged[-1] += ' ' + piece
            else:
                merged.append(piece)
        found += [s for s in merged if s.strip()]
    return found


def long_sentences(notebook: dict, limit: int = LONGEST_SENTENCE) -> list[tuple[int, int, str]]:
    """``(cell index, words, sentence)`` for every sentence of a notebook's Markdown cells over ``limit`` words."""
    if limit < 1:
        raise ValueError(f'limit must be a whole number of words, 1 or more, got {limit}')
    out = []
    for index, cell in enumerate(notebook['cells']):
        if cell['cell_type'] != 'markdown':
            continue
        source = cell['source'] if isinstance(cell['source'], str) else ''.join(cell['source'])
        for sentence in sentences(source):
            words = len(sentence.split())
            if words > limit:
                out.append((index, words, sentence))
    return out
