"""The title check of the "similar" decision: a page's title words (those of its title that
its lead repeats) and whether enough of them are words of another page. Pure numpy, no
Scrapy. Rationale: ``docs/design.md#similar-decision``.
"""

from __future__ import annotations

import re

import numpy as np

from scrapy_neardup.backends.phrases import Lines, Phrases, titled
from scrapy_neardup.stopwords import LANGUAGES
from scrapy_neardup.text import Document, hash_tokens

#: A pair is similar only where at least TITLE_SHARE of each page's title words are words of
#: the other (for a page of TITLE_MIN title words or more). A page's title words are those its
#: lead repeats: the first LEAD_WORDS words of its lines of prose (LEAD_LINE words or more,
#: ending a sentence) after the title.
TITLE_SHARE = 0.25
TITLE_MIN = 2
LEAD_WORDS = 100
LEAD_LINE = 8
_TITLE_STOPWORDS = frozenset().union(*(words.stopwords for words in LANGUAGES.values()))
_SENTENCE_END = re.compile(r"[.!?\"'”’)]\s*$")
_DIGIT = re.compile(r"\d")


def title_words(doc: Document, lines: Lines | None) -> np.ndarray:
    """The sorted distinct hashes of ``doc``'s title words (``lines``: its
    :func:`~scrapy_neardup.backends.phrases.lines_of`): the words of its title
    (``doc.title``, else its first line where :func:`titled` reads one) that its lead repeats
    (a site's name as a title names no story), but stopwords, single characters and words
    with a digit (a number's parts are not words of the phrase filter: ``phrases.compounds``);
    none for a page without a title."""
    title = doc.title or titled(doc.text).title
    if not title or lines is None:
        return np.zeros(0, dtype=np.uint64)
    tokens = doc.tokens
    lead: list[str] = []
    at = int(lines[0][0])  # the title's line
    for count, line in zip(lines[0][1:].tolist(), lines[1][1:], strict=True):
        if count >= LEAD_LINE and _SENTENCE_END.search(line):
            lead += tokens[at : at + count]
        if len(lead) >= LEAD_WORDS:
            break
        at += count
    repeated = set(lead[:LEAD_WORDS])
    words = {
        word
        for word in Document(title).tokens
        if word in repeated and len(word) > 1 and word not in _TITLE_STOPWORDS
        and not _DIGIT.search(word)
    }  # fmt: skip
    return np.unique(hash_tokens(sorted(words)))


def titles_shared(titles: np.ndarray, other: Phrases) -> bool:
    """Whether at least :data:`TITLE_SHARE` of a page's title words (:func:`title_words`)
    are words of the page of phrase filter ``other``: true for a page of fewer than
    :data:`TITLE_MIN` title words (one word names no story)."""
    if len(titles) < TITLE_MIN:
        return True
    return int(np.count_nonzero(other.has_words(titles))) >= TITLE_SHARE * len(titles) - 1e-9
