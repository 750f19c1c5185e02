"""Numbers for the book's prose, glued into the text with myst-nb.

A chapter computes a number and glues it under a name; its markdown shows it with
``{glue:text}`name:.2f```. The book build (Jupyter Book, myst-nb) reads the glued outputs stored in the
notebook. Where myst-nb is not installed (a notebook opened on Colab) gluing does nothing, since there is no
book build to read it; the computation and its printed tables run the same.
"""

from __future__ import annotations

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
