"""The lossless rule (``docs/design.md#lossless``): what of a new document a kept one lacks
(:func:`losses`), read from the kept one's phrase filter (:func:`coverage`, the decision's) or
from its text (:func:`text_coverage`, the audit page's and the evaluation's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from scrapy_neardup.backends.phrases import (
    MAX_FALSE_POSITIVES,
    PHRASE,
    SHORT_LINE,
    Phrases,
    compound_matches,
    compounds,
    lines_of,
    phrases_of,
    titled,
)
from scrapy_neardup.text import Document

#: Under "contained", the share of a page's words in a 3-shingle of the kept page below which
#: nothing more is worked out (a screen, ``NEARDUP_CONTAINED_WORDS``).
COVERAGE = 0.9
#: Under "contained", the share of a line's 3-shingles the kept page must have, or the line
#: is lost (``NEARDUP_CONTAINED_SHINGLES``; see :func:`losses`).
SHINGLES = 0.5
#: A run of this many consecutive words that no shared 3-shingle covers is lost text: a word
#: edit leaves one such word, two edits three words apart four.
LOST_RUN = 5


@dataclass(frozen=True)
class Loss:
    """What a new text has that a kept one lacks, by the lossless rule
    (``docs/design.md#lossless``): word spans ``[start, end)`` of its lost lines and of runs
    of :data:`LOST_RUN` or more words that no shared 3-shingle covers, and the positions of
    heading words, identifiers and numbers the kept one does not have. Falsy when nothing is
    lost."""

    lines: tuple[tuple[int, int], ...] = ()
    runs: tuple[tuple[int, int], ...] = ()
    tokens: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.lines or self.runs or self.tokens)

    def positions(self) -> list[int]:
        """The positions of every word lost, in order."""
        spans = (range(a, b) for a, b in (*self.lines, *self.runs))
        return sorted({*self.tokens, *(i for span in spans for i in span)})


class Coverage(NamedTuple):
    """How much of a new document a kept one holds (see :func:`coverage`)."""

    words: float  # share of the new document's words in a 3-shingle the kept one has
    reverse: float  # share of the kept one's distinct 3-shingles that the new one has
    shingles: float  # share of the new document's 3-shingles (within lines) the kept one has
    loss: Loss | None = None  # what it lacks (None: not worked out, the words fell short)

    @property
    def contained(self) -> bool:
        """The lossless rule holds: the words passed the screen and no line is lost."""
        return self.loss is not None and not self.loss


def coverage(
    new: Phrases,
    kept: Phrases,
    screen: float = COVERAGE,
    line_share: float = SHINGLES,
) -> Coverage | None:
    """How much of ``new`` ``kept`` holds, read from ``kept``'s filter, its false positives
    subtracted from the shares; None when the filter is too full to say. What is lost
    (:func:`losses`) is worked out when at least ``screen`` of the words are covered;
    ``reverse`` (for the related check) when ``new`` is not contained."""
    rate = kept.false_positive_rate
    if new.sequence is None or len(new.sequence) == 0 or rate > MAX_FALSE_POSITIVES:
        return None
    hit = kept.contains(new.sequence)
    found = _compare(new, hit, kept.has_words, rate, screen, line_share)
    if found.contained or not kept.count:
        return found
    distinct = np.unique(new.sequence[hit])
    share = (len(distinct) - rate * new.count) / kept.count
    return found._replace(reverse=float(min(1.0, max(0.0, share))))


def text_coverage(new: str | Document, kept: str | Document) -> Coverage | None:
    """:func:`coverage`, exactly: the kept text's own 3-shingles and words instead of its
    filter, and what is lost always worked out. What the audit page (``scrapy
    neardup-stats``) and the evaluation show beside a drop; None for a new text without
    words. A text's first line is its title when a blank line follows it (:func:`titled`)."""
    new_doc = new if isinstance(new, Document) else titled(new)
    kept_doc = kept if isinstance(kept, Document) else Document(kept)
    phrases = phrases_of(new_doc)
    if phrases.sequence is None or len(phrases.sequence) == 0:
        return None
    shingles = np.unique(kept_doc.shingles(PHRASE))
    names, _, inside, _ = compounds(kept_doc)
    tokens = kept_doc.token_hashes
    alone = tokens if len(inside) != len(tokens) else tokens[~inside]
    words = np.unique(np.concatenate((alone, names)))
    hit = np.isin(phrases.sequence, shingles)
    found = _compare(phrases, hit, lambda tokens: np.isin(tokens, words), 0.0, 0.0, SHINGLES)
    share = len(np.unique(phrases.sequence[hit])) / len(shingles) if len(shingles) else 0.0
    return found._replace(reverse=float(share))


def lost_passages(new: str, found: Coverage) -> list[str]:
    """What ``found.loss`` says ``new`` loses, as text: each lost line as written, each run of
    words and each missing name as its (normalised) words."""
    if not found.loss:
        return []
    doc = Document(new)
    lines = lines_of(doc)
    tokens = doc.tokens
    out = []
    for a, b in found.loss.lines:
        if lines is None:
            out.append(" ".join(tokens[a:b]))
            continue
        at = int(np.searchsorted(np.cumsum(lines[0]), a, side="right"))
        out.append(lines[1][at].strip())
    out.extend(" ".join(tokens[a:b]) for a, b in found.loss.runs)
    whole = {at: m.group() for m, at in compound_matches(doc)}
    out.extend(whole.get(i, tokens[i]) for i in found.loss.tokens)
    return out


def lossy(found: Coverage | None) -> bool:
    """Whether a drop with this (exact) coverage lost text: :func:`losses` found a line, a
    run of words or a name of the dropped page that the kept one lacks."""
    return found is not None and bool(found.loss)


def _compare(
    new: Phrases,
    hit: np.ndarray,
    has_words: Callable[[np.ndarray], np.ndarray],
    rate: float,
    screen: float,
    line_share: float,
) -> Coverage:
    """Covered words, shared shingles and, past ``screen``, the loss of ``new`` against a
    kept document, given which of its 3-shingles (in text order) the kept one has, how to ask
    it for words, and the rate at which its answers are false positives."""
    words = len(new.tokens) if new.tokens is not None else len(hit) + PHRASE.size - 1
    covered = _covered(hit, words)
    # A shingle across two paragraphs is no phrase of either: paragraphs moved are no edit.
    counted = _within(_line_of_word(new, words), len(hit))
    shared = hit[counted] if counted.any() else hit
    # An uncovered word has up to 3 chances of a false positive; a shingle, one.
    chance = 1.0 - (1.0 - rate) ** PHRASE.size
    share = max(0.0, float(covered.mean() - chance) / (1.0 - chance)) if len(covered) else 0.0
    # The share of shingles found, less the false positives expected among the others.
    found, total = int(shared.sum()), len(shared)
    mean = rate * (total - found) / (1.0 - rate) if rate > 0.0 else 0.0
    shingles = max(0.0, (found - mean) / total) if total else 0.0
    loss = None
    if share >= screen and new.tokens is not None:
        loss = losses(new, hit, has_words, line_share)
    return Coverage(share, 0.0, shingles, loss)


def _line_of_word(new: Phrases, words: int) -> np.ndarray:
    """The line of each word (all in one line where the lines are not known)."""
    counts = new.line_words
    if counts is None or int(counts.sum()) != words:
        return np.zeros(words, dtype=np.int64)
    return np.repeat(np.arange(len(counts)), counts)


def _within(line: np.ndarray, shingles: int) -> np.ndarray:
    """Which of the ``shingles`` 3-shingles of words in ``line`` lie within one line (all of
    them when the counts do not fit)."""
    if shingles != len(line) - (PHRASE.size - 1):
        return np.ones(shingles, dtype=bool)
    return line[:shingles] == line[PHRASE.size - 1 :]


def _covered(hit: np.ndarray, words: int, line: np.ndarray | None = None) -> np.ndarray:
    """Which words lie in a shared 3-shingle (within their line, where ``line`` gives each
    word's; a text of fewer than 3 words has one shingle, whatever the lines)."""
    covered = np.zeros(words, dtype=bool)
    if words < PHRASE.size:
        covered[:] = bool(hit.any())
        return covered
    inside = hit if line is None else hit & _within(line, len(hit))
    for offset in range(PHRASE.size):
        covered[offset : offset + len(hit)] |= inside
    return covered


def losses(
    new: Phrases,
    hit: np.ndarray,
    has_words: Callable[[np.ndarray], np.ndarray],
    line_share: float = SHINGLES,
) -> Loss:
    """The lossless rule (``docs/design.md#lossless``), one function for the decision, the
    audit page and the evaluation: what of ``new`` a kept document lacks, given which of
    ``new``'s 3-shingles it has (``hit``, in text order) and a way to ask it for words.

    - a line of :data:`SHORT_LINE` words or more is lost when less than ``line_share`` of
      its 3-shingles within the line are in the kept document;
    - in the other lines, a run of :data:`LOST_RUN` or more consecutive words that no shared
      3-shingle within their line covers is lost (a scattered word edit is not);
    - a word of a shorter line, and a heading word, an identifier or a number
      (``new.identity``), is lost when the kept document does not have the word at all, and
      a name of several words ("3.25.1", ``os.path``) when it does not have it whole.

    A shingle counts only where the kept document has its three words too, so a false
    positive of a filter cannot hide a word that is not there."""
    if new.tokens is None or len(new.tokens) == 0:
        return Loss()
    words = len(new.tokens)
    present = has_words(new.tokens)
    if new.parts is not None and len(new.parts) == words:
        present |= new.parts  # asked of the kept page whole, below
    hit = hit & _all_present(present, len(hit))
    line = _line_of_word(new, words)
    counts = np.bincount(line, minlength=int(line[-1]) + 1)
    long = counts >= SHORT_LINE
    lost_line: np.ndarray = np.zeros(len(counts), dtype=bool)
    if words >= PHRASE.size:
        inside = _within(line, len(hit))
        total = np.bincount(line[: len(hit)][inside], minlength=len(counts))
        found = np.bincount(line[: len(hit)][inside & hit], minlength=len(counts))
        lost_line = long & (found < line_share * total)
    starts = np.concatenate(([0], np.cumsum(counts)))
    lines = tuple((int(starts[i]), int(starts[i + 1])) for i in np.flatnonzero(lost_line))
    runs = _runs(~_covered(hit, words, line) & ~lost_line[line], line)
    lost = np.zeros(words, dtype=bool)
    for a, b in (*lines, *runs):
        lost[a:b] = True
    names = new.identity if new.identity is not None else np.zeros(words, dtype=bool)
    missing = ~lost & ~present & (names | ~long[line])
    if new.names is not None and new.name_at is not None and len(new.names):
        whole = new.name_at[~has_words(new.names)]
        missing[whole[(whole < words) & ~lost[np.minimum(whole, words - 1)]]] = True
    return Loss(lines, runs, tuple(int(i) for i in np.flatnonzero(missing)))


def _all_present(present: np.ndarray, shingles: int) -> np.ndarray:
    """For each 3-shingle of a text whose words' presence is ``present``: all three are."""
    if len(present) < PHRASE.size:
        return np.full(shingles, bool(present.all()))
    every = present[:shingles].copy()
    for offset in range(1, PHRASE.size):
        every &= present[offset : offset + shingles]
    return every


def _runs(flags: np.ndarray, line: np.ndarray) -> tuple[tuple[int, int], ...]:
    """Spans ``[start, end)`` of :data:`LOST_RUN` or more consecutive flagged words of one
    line."""
    if not flags.any():
        return ()
    same_line = np.concatenate(([False], line[1:] == line[:-1]))
    begins = flags & ~(np.concatenate(([False], flags[:-1])) & same_line)
    ids = np.cumsum(begins)
    lengths = np.bincount(ids[flags])
    first = np.flatnonzero(begins)
    return tuple(
        (int(first[i - 1]), int(first[i - 1] + lengths[i]))
        for i in np.flatnonzero(lengths >= LOST_RUN)
    )


def holds(found: Coverage | None) -> bool:
    """Whether a new document with this coverage is a copy of the kept one: nothing lost."""
    return found is not None and found.contained
