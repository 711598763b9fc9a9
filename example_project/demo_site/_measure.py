"""Similarity measures used by the ground truth and the tests (no jieba needed).

Tokens are lower-cased runs of letters and digits; every Han character is a token of its own,
so Chinese text is compared on character n-grams and English text on word n-grams.
"""

from __future__ import annotations

import re

_TOKEN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W_]+")
_HAN_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def tokens(text: str) -> list[str]:
    """Lower-cased words; one token per Han character."""
    return _TOKEN_RE.findall(text.lower())


def shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    """The set of ``n``-grams of :func:`tokens`."""
    toks = tokens(text)
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def jaccard(a: str, b: str, n: int = 3) -> float:
    """Jaccard similarity of the ``n``-gram shingle sets of two texts."""
    sa, sb = shingles(a, n), shingles(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def han_count(text: str) -> int:
    """Number of Han characters in ``text``."""
    return len(_HAN_RE.findall(text))
