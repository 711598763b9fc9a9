"""Containment decides a drop: a document is dropped only when what it says is already kept.

Promises: every candidate a backend proposes is verified here against a small Bloom filter of
the kept document's word 3-shingles and words, stored beside its signature. Under
``"contained"`` a copy loses nothing: :func:`losses` (the lossless rule, one function for the
decision, the audit page and the evaluation) finds no line, no run of words and no heading
word, identifier or number of it that the kept one lacks; a share of covered words only
screens. :func:`text_coverage` is the exact measure from two texts, :func:`lossy` what the
audit flags. The backend's own similarity is reported, never trusted to decide. It knows
nothing of Scrapy or storage.
Rationale: ``docs/design.md#containment``, ``#lossless``, ``#phrase-filter``,
``#similar-decision``.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from scrapy_neardup.backends import BACKENDS
from scrapy_neardup.backends.base import Backend
from scrapy_neardup.backends.excerpts import Excerpts
from scrapy_neardup.backends.spotsigs import SpotSigsBackend
from scrapy_neardup.text import (
    CJK_CHARS,
    Document,
    ShingleSpec,
    fmix64,
    hash_tokens,
    normalize,
    token_starts,
)

#: Under "contained", the share of a page's words in a 3-shingle of the kept page below which
#: nothing more is worked out (a screen, ``NEARDUP_CONTAINED_WORDS``).
COVERAGE = 0.9
#: Under "contained", the share of a line's 3-shingles the kept page must have, or the line
#: is lost (``NEARDUP_CONTAINED_SHINGLES``; see :func:`losses`).
SHINGLES = 0.5
#: Lines of fewer words are judged word by word (see :func:`losses`), not by their shingles.
SHORT_LINE = 6
#: A run of this many consecutive words that no shared 3-shingle covers is lost text: a word
#: edit leaves one such word, two edits three words apart four.
LOST_RUN = 5
#: A first line of at most this many words is a heading: its words must all be kept.
HEADING_WORDS = 20
RELATED = 0.8
#: What drops a page: ``"contained"`` (its text is in a kept page: this module's rule) or
#: ``"similar"`` (the literature's: a similarity of the pair, verified exactly, at least a
#: threshold; see :class:`Verified`).
DECISIONS = ("contained", "similar")
#: The decision by default (``NEARDUP_DECISION``).
DECISION = "contained"
#: The "similar" decision's word shingles and Jaccard threshold (evaluation/ACCURACY.md).
SIMILAR_SHINGLES = 2
SIMILARITY = 0.35
#: Whether the "similar" decision's spot rule is on by default (``NEARDUP_SIMILARITY_SPOTS``).
SIMILAR_SPOTS = True
BITS_PER_SHINGLE = 10
MAX_FILTER_BYTES = 131072  # 10 bits a shingle up to ~100k distinct 3-shingles
MAX_FALSE_POSITIVES = 0.05
#: Candidates a query verifies, by the buckets they share with the page (what the index
#: knows before any signature is read): every one sharing STRONG buckets or more (at a
#: Jaccard of 0.45, about 9 of MinHash's 44 bands), and of the others the CHECKS sharing the
#: most: however many earlier pages share only a navigation line with a page, it costs at
#: most CHECKS checks for them (docs/design.md#checks-per-query).
CHECKS = 32
STRONG = 8
#: A kept page with fewer distinct 3-shingles than this share of a new page's is not verified
#: against it (Verified.check): it cannot hold the new page's own text at the decision's lines.
SMALLER_KEPT = 0.1
_PHRASE = ShingleSpec("word", 3)
_HEADER = struct.Struct("<IIIB")  # distinct shingles, distinct words, filter bits, hash functions
_WORD_SALT = (np.uint64(0x776F726473616C31), np.uint64(0x776F726473616C32))
_LOW32 = np.uint64(0xFFFFFFFF)
# Words that name what a text is about (:func:`_identity`): in the normalised text, a word with
# a digit or an underscore; in the text as written, a camelCase word and the parts of a dotted,
# ``::`` or ``->`` name.
_NUMBER_OR_NAME = re.compile(rf"[^\W{CJK_CHARS}]*[\d_][^\W{CJK_CHARS}]*")
_CAMEL_CASE = re.compile(r"\b[^\W\d_]*[a-z][A-Z]\w*")
_DOTTED = re.compile(r"\w+(?:(?:\.|::|->)\w+)+")
_NAME_SEPARATOR = re.compile(r"\.|::|->")
# A name of several words, which must be in a kept page whole: a number with its separators
# ("3.25.1", "1,838"), a dotted, "::" or "->" name ("os.path", "std::map").
_COMPOUND = re.compile(rf"\d+(?:[.,]\d+)+|[^\W\d{CJK_CHARS}]\w*(?:(?:\.|::|->)\w+)+")
_PART = re.compile(r"\w+")


@dataclass(frozen=True, eq=False)
class Phrases:
    """A Bloom filter of a document's distinct word 3-shingles and, under two salts each, its
    distinct words (what :func:`losses` asks of a kept document). Where the document was just
    signed (never stored): ``sequence``, its 3-shingles in text order; ``tokens``, its word
    hashes in order; ``identity``, which of its words are title words, identifiers or
    numbers; ``line_words``, the word count of each of its lines; ``names``, ``name_at``
    and ``parts``, its names of several words (:func:`_compounds`), where each begins and
    which words are in one. The filter holds a document's names whole, and its words outside
    them."""

    bits: np.ndarray  # uint8, little-endian bit order
    size: int  # bits in the filter
    hashes: int  # hash functions
    count: int  # distinct shingles
    words: int = 0  # distinct words (each in the filter twice)
    sequence: np.ndarray | None = field(default=None, compare=False)
    tokens: np.ndarray | None = field(default=None, compare=False)
    identity: np.ndarray | None = field(default=None, compare=False)
    line_words: np.ndarray | None = field(default=None, compare=False)
    names: np.ndarray | None = field(default=None, compare=False)  # compound names' hashes
    name_at: np.ndarray | None = field(default=None, compare=False)  # each one's first word
    parts: np.ndarray | None = field(default=None, compare=False)  # words inside a name

    def encode(self) -> bytes:
        return _HEADER.pack(self.count, self.words, self.size, self.hashes) + self.bits.tobytes()

    @classmethod
    def decode(cls, data: bytes | memoryview) -> Phrases:
        if len(data) < _HEADER.size:
            raise ValueError(f"phrase filter needs {_HEADER.size} bytes, got {len(data)}")
        count, words, size, hashes = _HEADER.unpack_from(data)
        if len(data) != _HEADER.size + (size + 7) // 8 or not 1 <= hashes <= 16 or size < 8:
            raise ValueError("corrupt phrase filter: lengths do not fit")
        bits = np.frombuffer(data, dtype=np.uint8, offset=_HEADER.size).copy()
        return cls(bits, size, hashes, count, words)

    @property
    def false_positive_rate(self) -> float:
        entries = self.count + 2 * self.words
        if entries == 0:
            return 0.0
        return (1.0 - math.exp(-self.hashes * entries / self.size)) ** self.hashes

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """For each 64-bit hash, whether it is (probably) in the filter."""
        at = _positions(hashes, self.size, self.hashes)
        return (
            ((self.bits[at >> np.uint64(3)] >> (at & np.uint64(7)).astype(np.uint8)) & 1)
            .astype(bool)
            .all(axis=1)
        )

    def has_words(self, tokens: np.ndarray) -> np.ndarray:
        """For each word hash, whether the document has that word: both of its salted
        entries are in the filter (a false positive then needs two, about 1 in 15,000)."""
        first, second = _word_keys(tokens)
        return self.contains(first) & self.contains(second)


def _positions(hashes: np.ndarray, size: int, k: int) -> np.ndarray:
    """Kirsch-Mitzenmacher double hashing: bit ``h1 + i * h2`` for ``i < k``."""
    h1 = hashes & _LOW32
    h2 = (hashes >> np.uint64(32)) | np.uint64(1)
    steps = np.arange(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (h1[:, None] + steps[None, :] * h2[:, None]) % np.uint64(size)


def _word_keys(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two filter entries of each word hash (salted apart from the shingles')."""
    return fmix64(tokens ^ _WORD_SALT[0]), fmix64(tokens ^ _WORD_SALT[1])


def _lines(doc: Document) -> tuple[np.ndarray, list[str]] | None:
    """The word count and the text, as written, of each line with words; None where the
    counts do not add up to the document's words (then its lines cannot be told apart).

    The lines are normalised one by one and joined by newlines, which tokenise as the spaces
    of ``doc.normalized`` do, so each token's line comes from its offset, without tokenising
    again: numpy offsets for text without CJK, else a walk along ``doc.tokens`` (jieba's,
    already made for the signature)."""
    written = [line for line in doc.text.splitlines() if normalize(line)]
    lines = [normalize(line) for line in written]
    if not lines:
        return None
    joined = "\n".join(lines)
    breaks = np.cumsum([len(line) + 1 for line in lines])  # offset after each line's newline
    starts = token_starts(joined)
    if starts is None:
        offsets, at = [], 0
        for token in doc.tokens:
            at = joined.find(token, at)
            if at < 0:
                return None
            offsets.append(at)
            at += len(token)
        starts = np.array(offsets, dtype=np.int64)
    if len(starts) != doc.token_count:
        return None
    words = np.bincount(np.searchsorted(breaks, starts, side="right"), minlength=len(lines))
    keep = words > 0
    return words[keep].astype(np.int64), [w for w, k in zip(written, keep, strict=True) if k]


def _identity(doc: Document, line_words: np.ndarray | None) -> np.ndarray:
    """Which words of ``doc`` name what it is about: numbers and identifiers (a word with a
    digit or an underscore, a camelCase word, a part of a dotted or ``::`` name) and the words
    of its title (its first line, of at most :data:`HEADING_WORDS` words, where it has one:
    :func:`titled`)."""
    names = set(_NUMBER_OR_NAME.findall(doc.normalized))
    names.update(normalize(word) for word in _CAMEL_CASE.findall(doc.text))
    for dotted in _DOTTED.findall(doc.text):
        names.update(normalize(part) for part in _NAME_SEPARATOR.split(dotted) if part)
    tokens = doc.token_hashes
    mask: np.ndarray = np.zeros(len(tokens), dtype=bool)
    if names:
        mask = np.isin(tokens, hash_tokens(sorted(names)))
    first = doc.text.lstrip().split("\n", 1)[0]
    if (
        line_words is not None
        and len(line_words)
        and line_words[0] <= HEADING_WORDS
        and doc.title
        and normalize(first) == normalize(doc.title)
    ):
        mask[: line_words[0]] = True
    return mask


def _compounds(doc: Document) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hashes of ``doc``'s names of several words ("3.25.1", "os.path"), which a kept
    page must have whole (it may have "3.25" and a "1" elsewhere), the word each starts at,
    and which of its words are in one (a word is a name's part, not a name, there)."""
    found = _compound_matches(doc)
    inside = np.zeros(doc.token_count, dtype=bool)
    if not found:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), inside
    at = np.array([word for _, word in found], dtype=np.int64)
    for match, start in found:
        inside[start : start + len(_PART.findall(match.group()))] = True
    return hash_tokens([m.group() for m, _ in found]), at, inside


def _compound_matches(doc: Document) -> list[tuple[re.Match[str], int]]:
    """Each compound name of ``doc`` (in its normalised text) with the word it starts at."""
    found = list(_COMPOUND.finditer(doc.normalized))
    if not found:
        return []
    words = np.searchsorted(_token_offsets(doc), [m.start() for m in found])
    return list(zip(found, words.tolist(), strict=True))


def _token_offsets(doc: Document) -> np.ndarray:
    """Where each token of ``doc`` starts in its normalised text: numpy offsets for text
    without CJK, else a walk along ``doc.tokens`` (jieba's)."""
    starts = token_starts(doc.normalized)
    if starts is not None:
        return starts
    offsets, at = [], 0
    for token in doc.tokens:
        found = doc.normalized.find(token, at)
        at = found + len(token) if found >= 0 else at
        offsets.append(max(found, 0))
    return np.array(offsets, dtype=np.int64)


def titled(text: str) -> Document:
    """A text as extraction makes a page's (its title, a blank line, its main text), with
    that first line as its title: how the audit page reads a kept text, whose title was not
    kept apart. A first line of at most :data:`HEADING_WORDS` words followed by a blank
    line."""
    first, blank, _ = text.lstrip().partition("\n\n")
    heading = bool(blank) and "\n" not in first and len(first.split()) <= HEADING_WORDS
    return Document(text, title=first if heading else "")


def _filter(shingles: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(bits, size, hashes) of a Bloom filter of distinct shingle and word (and compound
    name) hashes."""
    entries = np.concatenate((shingles, *_word_keys(words)))
    size = max(64, min(BITS_PER_SHINGLE * len(entries), 8 * MAX_FILTER_BYTES))
    size = (size + 7) // 8 * 8
    hashes = max(1, min(16, round(size / max(1, len(entries)) * math.log(2))))
    flags = np.zeros(size, dtype=bool)
    flags[_positions(entries, size, hashes).ravel()] = True
    return np.packbits(flags, bitorder="little"), size, hashes


def shingles_of(doc: Document, spec: ShingleSpec) -> Phrases:
    """A Bloom filter of ``doc``'s distinct ``spec`` shingles (with them, sorted, as its
    ``sequence``): what :func:`jaccard` compares for the "similar" decision."""
    distinct = np.unique(doc.shingles(spec))
    empty = np.zeros(0, dtype=np.uint64)
    return Phrases(*_filter(distinct, empty), len(distinct), 0, distinct)


def jaccard(new: Phrases, kept: Phrases) -> float | None:
    """The Jaccard similarity of the two documents' shingle sets: ``new``'s distinct shingles
    (all of them, from its sequence) looked up in ``kept``'s filter, the filter's false
    positives subtracted as :func:`coverage` does; None when ``kept``'s filter is too full
    to say. Boilerplate is not left out: this is the literature's measure of the pair."""
    found = _shared(new, kept)
    if found is None:
        return None
    common, mine, theirs = found
    return common / (mine + theirs - common) if mine and theirs else 0.0


def _shared(new: Phrases, kept: Phrases) -> tuple[float, int, int] | None:
    """(shared, ``new``'s, ``kept``'s) distinct members of two filtered sets: ``new``'s (all
    of them, from its sequence) looked up in ``kept``'s filter, its false positives
    subtracted; None when that filter is too full to say."""
    rate = kept.false_positive_rate
    if new.sequence is None or rate > MAX_FALSE_POSITIVES:
        return None
    distinct = new.sequence if new.count == len(new.sequence) else np.unique(new.sequence)
    if len(distinct) == 0 or kept.count == 0:
        return 0.0, len(distinct), kept.count
    hit = int(np.count_nonzero(kept.contains(distinct)))
    common = (hit - rate * len(distinct)) / (1.0 - rate)
    common = min(max(0.0, common), float(len(distinct)), float(kept.count))
    return common, len(distinct), kept.count


#: The spot rule of the "similar" decision (docs/design.md#similar-decision): SpotSigs' spot
#: signatures with a chain of one (an antecedent of the page's language and the next word
#: that is not a stopword), which come from running text, hardly ever from a template's menus
#: and link lists. Two pages of at least SPOT_MIN spots are similar when their spot sets'
#: Jaccard reaches SPOT_SIMILARITY, or when the smaller set, of at least CUT_SPOTS spots, is
#: CUT_OVERLAP in the larger: an outlet that ran a cut of the story.
SPOT_CHAIN = 1
SPOT_SIMILARITY = 0.25
CUT_OVERLAP = 0.7
SPOT_MIN = 30
CUT_SPOTS = 50
_SPOTS = SpotSigsBackend(chain=SPOT_CHAIN)


def spots_of(doc: Document) -> Phrases:
    """A Bloom filter of ``doc``'s spot signatures (chain :data:`SPOT_CHAIN`), with them,
    sorted, as its ``sequence``: what :func:`spot_similarity` compares."""
    distinct = _SPOTS.signature(doc)
    empty = np.zeros(0, dtype=np.uint64)
    return Phrases(*_filter(distinct, empty), len(distinct), 0, distinct)


def spot_similarity(new: Phrases, kept: Phrases) -> tuple[bool, float] | None:
    """Whether the spot rule holds for a pair, with how close the pair is: the share of the
    smaller spot set in the larger where that set is long enough to be a cut of the story
    (:data:`CUT_SPOTS`), else their Jaccard. None when it cannot say: a filter too full, or
    a page with fewer than :data:`SPOT_MIN` spots (too little running text)."""
    found = _shared(new, kept)
    if found is None:
        return None
    common, mine, theirs = found
    smaller = min(mine, theirs)
    if smaller < SPOT_MIN:
        return None
    jaccard = common / (mine + theirs - common)
    if smaller < CUT_SPOTS:
        return jaccard >= SPOT_SIMILARITY - 1e-9, jaccard
    cut = common / smaller
    return jaccard >= SPOT_SIMILARITY - 1e-9 or cut >= CUT_OVERLAP - 1e-9, cut


def _spot_params() -> dict[str, Any]:
    """What the spot rule's filters and decisions depend on (saved with a state)."""
    return {
        "chain": SPOT_CHAIN,
        "jaccard": SPOT_SIMILARITY,
        "cut": CUT_OVERLAP,
        "min": SPOT_MIN,
        "cut_min": CUT_SPOTS,
        "filter": f"bloom{BITS_PER_SHINGLE}",
    }


def phrases_of(doc: Document) -> Phrases:
    """``doc``'s phrase filter, with what :func:`losses` reads of a new document."""
    sequence = doc.shingles(_PHRASE)
    tokens = doc.token_hashes
    names, name_at, inside = _compounds(doc)
    distinct = np.unique(sequence)
    # A word that is a part of a name is not the word: "1.23" holds no "1" ("S-1" would).
    alone = tokens if len(inside) != len(tokens) else tokens[~inside]
    words = np.unique(np.concatenate((alone, names)))
    bits, size, hashes = _filter(distinct, words)
    lines = _lines(doc)
    line_words = None if lines is None else lines[0]
    identity = _identity(doc, line_words)
    if len(inside) == len(identity):
        identity &= ~inside  # its names are asked of a kept page whole
    return Phrases(
        bits, size, hashes, len(distinct), len(words), sequence, tokens, identity, line_words,
        names, name_at, inside,
    )  # fmt: skip


def candidate_params(
    method: str,
    decision: str,
    similar_shingles: int | None = None,
    similar_spots: bool = SIMILAR_SPOTS,
) -> dict:
    """Default parameters of the backend named ``method``: its
    :meth:`~scrapy_neardup.backends.base.Backend.similar_candidates`, under either
    ``decision``: under "contained" they find the kept reprints that the similar rule records
    as near (evaluation/ACCURACY.md#the-spotsigs-gold-set); a query verifies at most
    :data:`CHECKS` of those that share few buckets with it."""
    size = SIMILAR_SHINGLES if similar_shingles is None else similar_shingles
    return BACKENDS.get(method, Backend).similar_candidates(size, similar_spots)


@dataclass(frozen=True)
class Check:
    """A verified candidate. ``duplicate``: the decision drops the new document (for
    ``"contained"``, it is in the kept one; for ``"similar"``, the pair reaches the
    similarity threshold); else ``related`` (nearly all of the kept one is in the new one,
    which carries more) or ``near`` (kept: the other decision would have dropped it, or its
    words are covered but a line of it is lost)."""

    similarity: float  # the backend's own measure, as reported
    contained: bool  # the containment rule holds (whatever decides)
    related: bool
    coverage: float  # share of the new document's words in a phrase of the kept one
    reverse: float  # share of the kept one's phrases in the new one
    duplicate: bool = False  # the configured decision drops it
    similar: bool = False  # the "similar" rule holds (whatever decides)
    near: bool = False  # kept, recorded beside the kept one
    measure: float = 0.0  # the "similar" rule's measure: Jaccard, 1 - d/64, cosine
    rank: float = 0.0  # chooses among copies (Match.rank): the measure under "similar"


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
    reverse: bool = True,
) -> Coverage | None:
    """How much of ``new`` ``kept`` holds, read from ``kept``'s filter, its false positives
    subtracted from the shares; None when the filter is too full to say. What is lost
    (:func:`losses`) is worked out when at least ``screen`` of the words are covered;
    ``reverse`` (for the related check) when ``new`` is not contained.
    :func:`text_coverage` is the same, exactly."""
    rate = kept.false_positive_rate
    if new.sequence is None or len(new.sequence) == 0 or rate > MAX_FALSE_POSITIVES:
        return None
    hit = kept.contains(new.sequence)
    found = _compare(new, hit, kept.has_words, rate, screen, line_share)
    if found.contained or not reverse or not kept.count:
        return found
    distinct = np.unique(new.sequence[hit])
    share = (len(distinct) - rate * new.count) / kept.count
    return found._replace(reverse=float(min(1.0, max(0.0, share))))


def text_coverage(
    new: str | Document, kept: str | Document, line_share: float = SHINGLES
) -> Coverage | None:
    """:func:`coverage`, exactly: the kept text's own 3-shingles and words instead of its
    filter, and what is lost always worked out. What the audit page (``scrapy
    neardup-stats``) and the evaluation show beside a drop; None for a new text without
    words. A text's first line is its title when a blank line follows it (:func:`titled`)."""
    new_doc = new if isinstance(new, Document) else titled(new)
    kept_doc = kept if isinstance(kept, Document) else Document(kept)
    phrases = phrases_of(new_doc)
    if phrases.sequence is None or len(phrases.sequence) == 0:
        return None
    shingles = np.unique(kept_doc.shingles(_PHRASE))
    names, _, inside = _compounds(kept_doc)
    tokens = kept_doc.token_hashes
    alone = tokens if len(inside) != len(tokens) else tokens[~inside]
    words = np.unique(np.concatenate((alone, names)))
    hit = np.isin(phrases.sequence, shingles)
    found = _compare(phrases, hit, lambda tokens: np.isin(tokens, words), 0.0, 0.0, line_share)
    share = len(np.unique(phrases.sequence[hit])) / len(shingles) if len(shingles) else 0.0
    return found._replace(reverse=float(share))


def lost_passages(new: str, found: Coverage) -> list[str]:
    """What ``found.loss`` says ``new`` loses, as text: each lost line as written, each run of
    words and each missing name as its (normalised) words."""
    if not found.loss:
        return []
    doc = Document(new)
    lines = _lines(doc)
    tokens = doc.tokens
    out = []
    for a, b in found.loss.lines:
        if lines is None:
            out.append(" ".join(tokens[a:b]))
            continue
        at = int(np.searchsorted(np.cumsum(lines[0]), a, side="right"))
        out.append(lines[1][at].strip())
    out.extend(" ".join(tokens[a:b]) for a, b in found.loss.runs)
    whole = {at: m.group() for m, at in _compound_matches(doc)}
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
    words = len(new.tokens) if new.tokens is not None else len(hit) + _PHRASE.size - 1
    covered = _covered(hit, words)
    counted = _within_lines(new, len(hit), words)
    shared = hit[counted] if counted.any() else hit
    # An uncovered word has up to 3 chances of a false positive; a shingle, one.
    chance = 1.0 - (1.0 - rate) ** _PHRASE.size
    share = max(0.0, float(covered.mean() - chance) / (1.0 - chance)) if len(covered) else 0.0
    shingles = _corrected(int(shared.sum()), len(shared), rate)
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


def _covered(hit: np.ndarray, words: int, line: np.ndarray | None = None) -> np.ndarray:
    """Which words lie in a shared 3-shingle (within their line, where ``line`` gives each
    word's; a text of fewer than 3 words has one shingle, whatever the lines)."""
    covered = np.zeros(words, dtype=bool)
    if words < _PHRASE.size:
        covered[:] = bool(hit.any())
        return covered
    inside = hit if line is None else hit & (line[: len(hit)] == line[_PHRASE.size - 1 :])
    for offset in range(_PHRASE.size):
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
    if words >= _PHRASE.size:
        inside = line[: len(hit)] == line[_PHRASE.size - 1 :]
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
    if len(present) < _PHRASE.size:
        return np.full(shingles, bool(present.all()))
    every = present[:shingles].copy()
    for offset in range(1, _PHRASE.size):
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


def _corrected(found: int, total: int, rate: float) -> float:
    """The share ``found / total`` of a filter's answers, less the false positives it is
    expected to have made among the answers that were truly "no"."""
    if total == 0:
        return 0.0
    mean = rate * (total - found) / (1.0 - rate) if rate > 0.0 else 0.0
    return max(0.0, (found - mean) / total)


def _within_lines(new: Phrases, shingles: int, words: int) -> np.ndarray:
    """Which of ``new``'s 3-shingles lie within one line: the shingles counted. One that
    spans two paragraphs is no phrase of either, and would make paragraphs in another order
    (a copy that loses nothing) look like edits."""
    counts = new.line_words
    if counts is None or shingles != words - (_PHRASE.size - 1) or int(counts.sum()) != words:
        return np.ones(shingles, dtype=bool)
    line = np.repeat(np.arange(len(counts)), counts)
    return line[:shingles] == line[_PHRASE.size - 1 :]


def holds(found: Coverage | None) -> bool:
    """Whether a new document with this coverage is a copy of the kept one: nothing lost."""
    return found is not None and found.contained


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not 0.0 < value <= 1.0:
        raise ValueError(f"{name} threshold must be in (0, 1], got {value}")
    return float(value)


class Signature(NamedTuple):
    """A :class:`Verified` signature: the backend's own and the filters the rules read. A
    named tuple, so that it pickles (it is made in an extraction worker)."""

    backend: Any  # the backend's signature
    phrases: Phrases  # the 3-shingle filter containment reads
    shingles: Phrases | None = None  # the "similar" rule's shingles, when not 3-shingles
    spots: Phrases | None = None  # the spot rule's spots (set backends)
    excerpts: np.ndarray | None = None  # the excerpt fingerprints stored (None: not decoded)


class Verified(Backend):
    """A backend whose candidates are verified exactly (see the module docstring).

    Its signature is a :class:`Signature`. Buckets, probing and the store's screens are the
    backend's (with the excerpt keys: backends/excerpts.py); a store verifies at most
    :data:`CHECKS` of a query's candidates that share fewer than :data:`STRONG` buckets with
    it. The backend's ``estimate`` (its similarity without its
    threshold, where it has one) only screens candidates; the decision is :meth:`check`'s.

    Both rules are worked out for every candidate; ``decision`` says which one drops:

    * ``"contained"``: ``coverage`` of the new document's words in a 3-shingle of the kept
      one and ``shingles`` of its 3-shingles in it (:func:`holds`).
    * ``"similar"``: for the set backends, the Jaccard similarity of the two documents'
      word ``similar_shingles``-shingles (:func:`jaccard`, exact but for the filter's
      false positives, which are subtracted) at least ``similarity``, or the spot rule
      (:func:`spot_similarity`: a reprint cut, retitled or in another template); among
      several kept pages a copy joins the closest (``Check.rank``); for a backend with a
      ``similar_threshold`` (simhash, cosine), its own estimate at least ``similarity``
      (default: that threshold; simhash's index's ``k`` must reach it).

    A pair the other rule holds is ``near`` (kept, recorded beside the kept one).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        decision: str = DECISION,
        coverage: float = COVERAGE,
        shingles: float = SHINGLES,
        related: float = RELATED,
        similarity: float | None = None,
        similar_shingles: int = SIMILAR_SHINGLES,
        similar_spots: bool = SIMILAR_SPOTS,
    ):
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
        self.coverage = _unit("containment coverage", coverage)
        self.shingles = _unit("containment shingles", shingles)
        self.related = _unit("containment related", related)
        if isinstance(similar_shingles, bool) or similar_shingles not in range(1, 6):
            raise ValueError(f"similar shingles must be 1..5 words, got {similar_shingles}")
        self.backend = backend
        self.name = backend.name
        self.reads_tokens = backend.reads_tokens
        self.hamming_limit = backend.hamming_limit
        self.checks = (CHECKS, STRONG)
        self.decision = decision
        self.similar_shingles = similar_shingles
        self._spec = ShingleSpec("word", similar_shingles)
        own = backend.similar_threshold()
        self._jaccard = own is None  # the similar rule's measure: a Jaccard, or the estimate
        self._default_similarity = SIMILARITY if own is None else float(own)
        self.similar_spots = bool(similar_spots) and self._jaccard
        self.similarity_threshold = (
            self._default_similarity if similarity is None else _unit("similarity", similarity)
        )
        # The share of the new page's distinct 3-shingles below which a kept page is too
        # small to be verified against it: a tenth, or the similar rule's Jaccard if lower.
        self._smaller = SMALLER_KEPT
        if decision == "similar" and self._jaccard:
            self._smaller = min(SMALLER_KEPT, 0.9 * self.similarity_threshold)
        # Below the backend's excerpt screen only an excerpt can be a copy (or below the
        # similar rule's own threshold); the spot rule takes a reprint at any shingle Jaccard
        # the bands propose.
        self._screen = backend.excerpt_screen
        if decision == "similar" and self._screen:
            self._screen = (
                0.0 if self.similar_spots else min(self._screen, 0.5 * self.similarity_threshold)
            )
        self.excerpts = Excerpts()  # excerpt keys beside the backend's (backends/excerpts.py)

    def params(self) -> dict[str, Any]:
        verify = {"filter": f"bloom{BITS_PER_SHINGLE}+words", "coverage": self.coverage}
        verify["related"] = self.related
        # Beyond the parameters of states written before them, only where they differ
        # from their defaults: a state of the default decision reads as it did.
        extra = {
            "decision": (self.decision, DECISION),
            "shingles": (self.shingles, SHINGLES),
            "similar_shingles": (
                self.similar_shingles if self._jaccard else SIMILAR_SHINGLES,
                SIMILAR_SHINGLES,
            ),
            "similarity": (self.similarity_threshold, self._default_similarity),
            "similar_spots": (self.similar_spots or not self._jaccard, SIMILAR_SPOTS),
        }
        verify.update({k: v for k, (v, default) in extra.items() if v != default})
        params = {**self.backend.params(), "verify": verify, "excerpts": self.excerpts.params()}
        if self.similar_spots:
            params["spots"] = _spot_params()
        return params

    def signature(self, doc: Document) -> Signature:
        extra = spots = None
        if self._jaccard and self._spec != _PHRASE:
            extra = shingles_of(doc, self._spec)
        if self.similar_spots:
            spots = spots_of(doc)
        return Signature(self.backend.signature(doc), phrases_of(doc), extra, spots)

    def bucket_keys(self, signature: Signature) -> list[int]:
        return list(self.backend.bucket_keys(signature.backend)) + self.excerpt_keys(signature)

    def excerpt_keys(self, signature: Signature) -> list[int]:
        """The excerpt keys among :meth:`bucket_keys` (the engine queries them first)."""
        return self.excerpts.keys(signature).tolist()

    def probe_count(self, signature: Signature) -> int | None:
        probe = self.backend.probe_count(signature.backend)
        return None if probe is None else probe + len(self.excerpts.keys(signature))

    def hamming_key(self, signature: Signature) -> int | None:
        return self.backend.hamming_key(signature.backend)

    def posted(self, signature: Signature) -> None:
        """Told that a kept document was posted under :meth:`bucket_keys`."""
        self.excerpts.posted(signature)

    def measure(self, new: Signature, kept: Signature, estimate: float) -> float | None:
        """The "similar" rule's measure of a candidate (None: cannot say)."""
        if not self._jaccard:
            return float(estimate)  # simhash: 1 - d/64 within k; cosine: its estimate
        phrases = self._spec == _PHRASE  # the rule's shingles are the 3-shingles
        a, b = (new.phrases, kept.phrases) if phrases else (new.shingles, kept.shingles)
        return None if a is None or b is None else jaccard(a, b)

    def similar(
        self, new: Signature, kept: Signature, estimate: float
    ) -> tuple[bool, float | None]:
        """Whether the "similar" rule holds for a candidate, with its measure: the Jaccard of
        its shingles (:meth:`measure`) at least the threshold, or, for the set backends, the
        spot rule (:func:`spot_similarity`, whose closeness is then the measure)."""
        measure = self.measure(new, kept, estimate)
        holds = measure is not None and measure >= self.similarity_threshold - 1e-9
        spots = None
        if self.similar_spots and new.spots is not None and kept.spots is not None:
            spots = spot_similarity(new.spots, kept.spots)
        if spots is None:
            return holds, measure
        return holds or spots[0], spots[1]

    def check(self, new: Signature, kept: Signature) -> Check | None:
        """None when the candidate is neither a copy, related nor near."""
        if kept.phrases.count < self._smaller * new.phrases.count:
            # A kept page a tenth the new one's size (which the excerpt keys of a long page
            # propose by the dozen) holds too little of it to be its copy or near it: not
            # verified, which over a whole page costs what a check of an excerpt does not.
            return None
        similarity = self.backend.estimate(new.backend, kept.backend)
        if similarity is None or similarity < self._screen:
            # Screened out by the backend (or, for MinHash, a Jaccard estimate below any pair
            # the bands propose): an excerpt is far below it, and verified when it shares half
            # its excerpt fingerprints (backends/excerpts.py).
            if not self.excerpts.shared(new, kept):
                return None
            similarity = similarity or 0.0
        found = coverage(new.phrases, kept.phrases, self.coverage, self.shingles)
        contained = holds(found)
        similar, measure = self.similar(new, kept, similarity)
        duplicate = contained if self.decision == "contained" else similar
        related = not duplicate and found is not None and found.reverse >= self.related
        other = similar if self.decision == "contained" else contained
        # Under "contained", a page whose words pass the screen but that loses a line is
        # recorded beside the kept one too: what a share of the page would have dropped.
        lossy_copy = self.decision == "contained" and lossy(found)
        near = not (duplicate or related) and (other or lossy_copy)
        if not (duplicate or related or near):
            return None
        words, reverse = (found.words, found.reverse) if found is not None else (0.0, 0.0)
        measured = float(measure or 0.0)
        rank = measured if self.decision == "similar" else 0.0
        return Check(
            float(similarity), contained, related, words, reverse, duplicate, similar, near,
            measured, rank,
        )  # fmt: skip

    def similarity(self, a: Signature, b: Signature) -> float | None:
        """The backend's similarity of a pair that :meth:`check` calls a copy, else None."""
        found = self.check(a, b)
        return found.similarity if found is not None and found.duplicate else None

    def encode(self, signature: Signature) -> bytes:
        inner = self.backend.encode(signature.backend)
        # The similar rule's filters, one after the other: its shingles', its spots'.
        filters = (signature.shingles, signature.spots)
        extra = b"".join(part.encode() for part in filters if part is not None)
        return b"".join(
            (
                struct.pack("<I", len(inner)),
                inner,
                signature.phrases.encode(),
                struct.pack("<I", len(extra)),
                extra,
                self.excerpts.encode(signature),
            )
        )

    def decode(self, data: bytes) -> Signature:
        if len(data) < 4:
            raise ValueError(f"verified signature needs at least 4 bytes, got {len(data)}")
        (length,) = struct.unpack_from("<I", data)
        if 4 + length > len(data):
            raise ValueError("corrupt verified signature: backend part is cut")
        view = memoryview(data)
        backend = self.backend.decode(bytes(view[4 : 4 + length]))
        at = 4 + length
        if len(data) < at + _HEADER.size:
            raise ValueError("corrupt verified signature: phrase filter is cut")
        end = at + _HEADER.size + (_HEADER.unpack_from(data, at)[2] + 7) // 8
        if len(data) < end:
            raise ValueError("corrupt verified signature: phrase filter is cut")
        phrases = Phrases.decode(view[at:end])
        if len(data) == end:  # written without the similar rule's filter and excerpt keys
            return Signature(backend, phrases, excerpts=Excerpts.decode(b""))
        if len(data) < end + 4:
            raise ValueError("corrupt verified signature: similar-rule filter is cut")
        (size,) = struct.unpack_from("<I", data, end)
        if len(data) < end + 4 + size:
            raise ValueError("corrupt verified signature: similar-rule filter is cut")
        extra, spots = self._similar_filters(view[end + 4 : end + 4 + size])
        excerpts = self.excerpts.decode(view[end + 4 + size :])
        return Signature(backend, phrases, extra, spots, excerpts)

    def _similar_filters(self, data: memoryview) -> tuple[Phrases | None, Phrases | None]:
        """The similar rule's filters, one after the other: its shingles' (where they are not
        3-shingles), then its spots' (absent from states written before the spot rule)."""
        filters: list[Phrases | None] = []
        at = 0
        while at < len(data):
            if len(data) < at + _HEADER.size:
                raise ValueError("corrupt verified signature: similar-rule filter is cut")
            end = at + _HEADER.size + (_HEADER.unpack_from(data, at)[2] + 7) // 8
            filters.append(Phrases.decode(data[at:end]))
            at = end
        if not (self._jaccard and self._spec != _PHRASE):
            filters.insert(0, None)  # no shingles filter: its 3-shingles are the phrase filter
        if len(filters) > 2:
            raise ValueError("corrupt verified signature: too many similar-rule filters")
        filters += [None] * (2 - len(filters))
        return filters[0], filters[1]
