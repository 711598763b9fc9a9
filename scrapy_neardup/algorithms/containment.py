"""Containment decides a drop: a document is dropped only when what it says is already kept.

Every backend's index only proposes candidates. Each candidate is then verified here against
a small filter stored beside the backend's signature: a document is a copy of a kept one only
when at least ``coverage`` (0.9) of its words lie in a phrase (a word 3-shingle) that the
kept one also has. The backend's own similarity (a Jaccard estimate, a Hamming distance) is
reported, never trusted to decide.

**Why containment, not similarity.** Jaccard and cosine are symmetric: a richer page that
comes second is as "similar" to a poorer first copy as the copy is to it, so first-seen-wins
dropped the richer one. Containment of the *new* text in the *kept* one is not: a print
version or an excerpt (all of it in the kept page) is dropped; a later page that holds
nearly all of a kept one and more than it (``related``, 0.8 of the kept one's phrases) is
kept and recorded as *related* to it.

**Why covered words, not shared shingles.** A word edit breaks the three 3-shingles around
it, so a reprint with 10 % of its words edited keeps only ~0.73 of its 3-shingles, as low as
two reference pages of one template that differ in whole rows. Counting instead the words
that lie in at least one shared 3-shingle charges an edit one word, and a new row all of its
words. Measured exactly on real pages (``evaluation/ACCURACY.md``): on Debian's PostgreSQL,
git and Sphinx manuals no pair of different pages reaches 0.9 covered words with less than
0.8 of its 3-shingles in the other page (the lossy-drop line), while full copies in another
site's template sit at 0.95-1.0 and 5 % reprints at a median of 0.96.

**And shared shingles, as the lossy-drop line counts.** A short page whose few differing words
are version numbers and dates is the case covered words miss: Django's release notes 1.8.12
(four lines) have 0.92 of their words in phrases of 1.9.5's notes, published the same day,
but only 0.77 of their 3-shingles, and what they say that 1.9.5's do not (which release
fixed these bugs) is what a reader came for. So a copy also needs at least ``shingles``
(0.8, the line below which issue 12 calls a drop lossy) of its 3-shingles in the kept
document; 5 % reprints keep about 0.86 of theirs. Only shingles within one line count: one
that spans two paragraphs is no phrase of either, and paragraphs in another order lose
nothing.

**The filter (this project's own code: a Bloom filter per document, sized to it, with its
false-positive rate known, which no Bloom library here exposes in numpy).** The kept
document's distinct 3-shingle hashes go into a Bloom filter of 10 bits each (at most
``MAX_FILTER_BYTES``), with the optimal number of hash functions: 0.8 % false positives, about
1.2 bytes per word of text. The new document brings its 3-shingles in order (not stored), so
every word is counted: there is no sampling error, only the filter's false positives, which
can only raise the count, by a rate known from the filter's size; it is subtracted before the
threshold is applied, and a kept document whose filter is too full to trust (over 5 %) decides
nothing.
"""

from __future__ import annotations

import math
import struct
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import xxhash

from scrapy_neardup.algorithms.excerpts import Excerpts, Stored
from scrapy_neardup.text import Document, ShingleSpec, normalize, token_starts

COVERAGE = 0.9
SHINGLES = 0.8
RELATED = 0.8
BITS_PER_SHINGLE = 10
MAX_FILTER_BYTES = 16384
MAX_FALSE_POSITIVES = 0.05
MIN_OWN_WORDS = 20
MIN_OWN_SHARE = 0.1
_PHRASE = ShingleSpec("word", 3)
_HEADER = struct.Struct("<IIB")  # distinct shingles, filter bits, hash functions
_LOW32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True, eq=False)
class Phrases:
    """A Bloom filter of a document's distinct word 3-shingles. Where the document was just
    signed (never stored): ``sequence``, its shingles in text order; ``lines`` and
    ``line_words``, a hash and the word count of each of its lines; ``ignore``, its words in
    lines that are its site's boilerplate (:class:`SiteLines`)."""

    bits: np.ndarray  # uint8, little-endian bit order
    size: int  # bits in the filter
    hashes: int  # hash functions
    count: int  # distinct shingles
    sequence: np.ndarray | None = field(default=None, compare=False)
    lines: np.ndarray | None = field(default=None, compare=False)
    line_words: np.ndarray | None = field(default=None, compare=False)
    ignore: np.ndarray | None = field(default=None, compare=False)

    def encode(self) -> bytes:
        return _HEADER.pack(self.count, self.size, self.hashes) + self.bits.tobytes()

    @classmethod
    def decode(cls, data: bytes | memoryview) -> Phrases:
        if len(data) < _HEADER.size:
            raise ValueError(f"phrase filter needs {_HEADER.size} bytes, got {len(data)}")
        count, size, hashes = _HEADER.unpack_from(data)
        if len(data) != _HEADER.size + (size + 7) // 8 or not 1 <= hashes <= 16 or size < 8:
            raise ValueError("corrupt phrase filter: lengths do not fit")
        bits = np.frombuffer(data, dtype=np.uint8, offset=_HEADER.size).copy()
        return cls(bits, size, hashes, count)

    @property
    def false_positive_rate(self) -> float:
        if self.count == 0:
            return 0.0
        return (1.0 - math.exp(-self.hashes * self.count / self.size)) ** self.hashes

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """For each 64-bit hash, whether it is (probably) in the filter."""
        at = _positions(hashes, self.size, self.hashes)
        return (
            ((self.bits[at >> np.uint64(3)] >> (at & np.uint64(7)).astype(np.uint8)) & 1)
            .astype(bool)
            .all(axis=1)
        )


def _positions(hashes: np.ndarray, size: int, k: int) -> np.ndarray:
    """Kirsch-Mitzenmacher double hashing: bit ``h1 + i * h2`` for ``i < k``."""
    h1 = hashes & _LOW32
    h2 = (hashes >> np.uint64(32)) | np.uint64(1)
    steps = np.arange(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return (h1[:, None] + steps[None, :] * h2[:, None]) % np.uint64(size)


def _lines(doc: Document) -> tuple[np.ndarray, np.ndarray] | None:
    """A hash and the word count of each non-empty line; None where the counts do not add up
    to the document's words (then its boilerplate cannot be told apart).

    The lines are normalised one by one and joined by newlines, which tokenise as the spaces
    of ``doc.normalized`` do, so each token's line comes from its offset, without tokenising
    again: numpy offsets for text without CJK, else a walk along ``doc.tokens`` (jieba's,
    already made for the signature)."""
    lines = [n for n in map(normalize, doc.text.splitlines()) if n]
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
    hashes = [xxhash.xxh3_64_intdigest(line.encode("utf-8", "surrogatepass")) for line in lines]
    return np.array(hashes, dtype=np.uint64)[keep], words[keep].astype(np.int64)


def phrases_of(doc: Document) -> Phrases:
    sequence = doc.shingles(_PHRASE)
    distinct = np.unique(sequence)
    count = len(distinct)
    size = max(64, min(BITS_PER_SHINGLE * count, 8 * MAX_FILTER_BYTES))
    size = (size + 7) // 8 * 8
    hashes = max(1, min(16, round(size / max(1, count) * math.log(2))))
    flags = np.zeros(size, dtype=bool)
    flags[_positions(distinct, size, hashes).ravel()] = True
    bits = np.packbits(flags, bitorder="little")
    lines = _lines(doc)
    if lines is None:
        return Phrases(bits, size, hashes, count, sequence)
    return Phrases(bits, size, hashes, count, sequence, *lines)


class SiteLines:
    """Lines that repeat across the pages of one site: its boilerplate (navigation that the
    extraction kept, "previous / next", breadcrumbs, a related-links block).

    A line seen on ``repeats`` (3) pages the site kept does not count in a later page's
    covered words: a copy placed in another site's template is judged by its own text, not by
    that template's links, which the kept copy cannot hold. It only ever leaves words out of
    the *new* page's count; a page with too few words left (:data:`MIN_OWN_WORDS`,
    :data:`MIN_OWN_SHARE`) is judged on all of them. Counts live in this process (rebuilt as
    a crawl goes, not saved) and are bounded: ``max_lines`` per site, ``max_sites`` sites,
    the least recently seen forgotten first.

    Why 3, and only kept pages: a navigation line is on every page of a site, a paragraph of
    an article on one kept page (its copies are dropped, and do not count). A line on three
    kept pages of the site is in kept pages whatever page is dropped, so leaving it out of
    a page's count loses nothing. Counting every page instead (copies and related pages
    too) made an article's own paragraphs boilerplate after a few copies: 13 wrong pairs for
    SpotSigs on the accuracy corpus. With this rule, ``evaluation/evaluate_crawl.py`` keeps
    170 of its 1,448 English copies whose text was already kept, and drops nothing wrongly.
    """

    def __init__(self, repeats: int = 3, max_lines: int = 4096, max_sites: int = 256) -> None:
        self.repeats, self.max_lines, self.max_sites = repeats, max_lines, max_sites
        self._sites: OrderedDict[str, dict[int, int]] = OrderedDict()

    def mark(self, site: str, phrases: Phrases) -> Phrases:
        """``phrases`` with the words of lines seen on ``repeats`` pages of ``site`` marked."""
        counts = self._sites.get(site)
        if counts is None or phrases.lines is None or phrases.line_words is None:
            return phrases
        lines = phrases.lines.tolist()
        boiler = np.fromiter((counts.get(h, 0) >= self.repeats for h in lines), bool, len(lines))
        if not boiler.any():
            return phrases
        return replace(phrases, ignore=np.repeat(boiler, phrases.line_words))

    def count(self, site: str, phrases: Phrases) -> None:
        """Count each distinct line of a page of ``site``."""
        if phrases.lines is None or not site:
            return
        counts = self._sites.pop(site, None)
        if counts is None:
            counts = {}
            if len(self._sites) >= self.max_sites:
                self._sites.popitem(last=False)
        self._sites[site] = counts
        for h in set(phrases.lines.tolist()):
            if h in counts or len(counts) < self.max_lines:
                counts[h] = counts.get(h, 0) + 1


@dataclass(frozen=True)
class Check:
    """A verified candidate: ``contained`` (the new document is in the kept one: a drop) or
    ``related`` (nearly all of the kept one is in the new one, which carries more)."""

    similarity: float  # the backend's own measure, as reported
    contained: bool
    related: bool
    coverage: float  # share of the new document's words in a phrase of the kept one
    reverse: float  # share of the kept one's phrases in the new one


class Coverage(NamedTuple):
    """How much of a new document a kept one holds (see :func:`coverage`)."""

    words: float  # share of the new document's words in a 3-shingle the kept one has
    reverse: float  # share of the kept one's distinct 3-shingles that the new one has
    shingles: float  # share of the new document's 3-shingles that the kept one has


def coverage(new: Phrases, kept: Phrases, copy_at: float = 1.1) -> Coverage | None:
    """How much of ``new`` ``kept`` holds, corrected for the filter's false positives; None
    when ``kept``'s filter is too full to say. ``reverse`` is 0.0, not worked out, for a copy
    (:func:`holds` at ``copy_at`` covered words): a copy needs no related check. Words and
    shingles of lines ``new``'s site repeats (:class:`SiteLines`) are left out of both."""
    rate = kept.false_positive_rate
    if new.sequence is None or len(new.sequence) == 0 or rate > MAX_FALSE_POSITIVES:
        return None
    hit = kept.contains(new.sequence)
    words = len(hit) + _PHRASE.size - 1 if len(hit) > 1 else len(hit)
    covered = np.zeros(words, dtype=bool)
    for offset in range(words - len(hit) + 1):
        covered[offset : offset + len(hit)] |= hit
    counted = _within_lines(new, len(hit), words)
    if new.ignore is not None and len(new.ignore) == words:
        own = ~new.ignore
        # A page that is nearly all lines its site repeats is judged on all its words.
        if own.sum() >= max(MIN_OWN_WORDS, MIN_OWN_SHARE * words):
            covered = covered[own]
            counted &= own[: len(hit)]  # the shingles that start at its own words
    shared = hit[counted] if counted.any() else hit
    # An uncovered word has up to 3 chances of a false positive; a shingle, one.
    chance = 1.0 - (1.0 - rate) ** _PHRASE.size
    share = max(0.0, (covered.mean() - chance) / (1.0 - chance))
    shingles = max(0.0, (shared.mean() - rate) / (1.0 - rate)) if len(shared) else 0.0
    found = Coverage(float(share), 0.0, float(shingles))
    if holds(found, copy_at) or not kept.count:
        return found
    distinct = np.unique(new.sequence[hit])
    reverse = (len(distinct) - rate * new.count) / kept.count
    return Coverage(float(share), float(min(1.0, max(0.0, reverse))), float(shingles))


def _within_lines(new: Phrases, shingles: int, words: int) -> np.ndarray:
    """Which of ``new``'s 3-shingles lie within one line: the shingles counted. One that
    spans two paragraphs is no phrase of either, and would make paragraphs in another order
    (a copy that loses nothing) look like edits."""
    counts = new.line_words
    if counts is None or shingles != words - (_PHRASE.size - 1) or int(counts.sum()) != words:
        return np.ones(shingles, dtype=bool)
    line = np.repeat(np.arange(len(counts)), counts)
    return line[:shingles] == line[_PHRASE.size - 1 :]


def holds(found: Coverage | None, words: float = COVERAGE, shingles: float = SHINGLES) -> bool:
    """Whether a new document with this coverage is a copy of the kept one: its words and
    its shingles both reach their thresholds."""
    return found is not None and found.words >= words and found.shingles >= shingles


class Verified:
    """A backend whose candidates are verified by containment (see the module docstring).

    Its signature is ``(backend signature, Phrases)``; buckets, probing and everything else
    the engine may ask of the backend (``reads_tokens``, MinHash's ``adopt``) are the
    backend's. The backend's ``estimate`` (its similarity without its threshold, where it has
    one) only screens candidates; the decision is :meth:`check`'s.
    """

    def __init__(self, backend: Any, *, coverage: float = COVERAGE, related: float = RELATED):
        for name, value in (("coverage", coverage), ("related", related)):
            if not 0.0 < value <= 1.0:
                raise ValueError(f"containment {name} threshold must be in (0, 1], got {value}")
        self.backend = backend
        self.name = backend.name
        self.coverage, self.related = coverage, related
        self._estimate = getattr(backend, "estimate", backend.similarity)
        self.excerpts = Excerpts()  # excerpt keys beside the backend's (algorithms/excerpts.py)
        if hasattr(backend, "probe_count"):  # the engine asks it of a whole signature
            self.probe_count = lambda signature: (
                backend.probe_count(signature[0]) + len(self.excerpts.keys(signature))
            )
        if hasattr(backend, "hamming_key"):  # and a store of a whole signature
            self.hamming_key = lambda signature: backend.hamming_key(signature[0])

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this class lacks: the backend's optional ones.
        return getattr(self.__dict__["backend"], name)

    def params(self) -> dict[str, Any]:
        verify = {"filter": f"bloom{BITS_PER_SHINGLE}", "coverage": self.coverage}
        verify = {**verify, "related": self.related}
        return {**self.backend.params(), "verify": verify, "excerpts": self.excerpts.params()}

    def signature(self, doc: Document) -> tuple[Any, Phrases]:
        return self.backend.signature(doc), phrases_of(doc)

    def bucket_keys(self, signature: tuple[Any, Phrases]) -> list[int]:
        return list(self.backend.bucket_keys(signature[0])) + self.excerpt_keys(signature)

    def excerpt_keys(self, signature: tuple[Any, Phrases]) -> list[int]:
        """The excerpt keys among :meth:`bucket_keys` (the engine queries them first)."""
        return self.excerpts.keys(signature).tolist()

    def posted(self, signature: tuple[Any, Phrases]) -> None:
        """Told that a kept document was posted under :meth:`bucket_keys`."""
        self.excerpts.posted(signature)

    def check(self, new: tuple[Any, Phrases], kept: tuple[Any, Phrases]) -> Check | None:
        """None when the candidate is neither a copy nor related."""
        similarity = self._estimate(new[0], kept[0])
        if similarity is None:  # screened out by the backend: an excerpt is far below it,
            # and verified when it shares half its excerpt fingerprints (algorithms/excerpts.py)
            if not self.excerpts.shared(new, kept):
                return None
            similarity = 0.0
        found = coverage(new[1], kept[1], copy_at=self.coverage)
        if found is None:
            return None
        contained = holds(found, self.coverage)
        related = not contained and found.reverse >= self.related
        if not (contained or related):
            return None
        return Check(float(similarity), contained, related, found.words, found.reverse)

    def similarity(self, a: tuple[Any, Phrases], b: tuple[Any, Phrases]) -> float | None:
        """The backend's similarity of a pair that :meth:`check` calls a copy, else None."""
        found = self.check(a, b)
        return found.similarity if found is not None and found.contained else None

    def encode(self, signature: tuple[Any, Phrases]) -> bytes:
        inner = self.backend.encode(signature[0])
        phrases = signature[1].encode()
        return struct.pack("<I", len(inner)) + inner + phrases + self.excerpts.encode(signature)

    def decode(self, data: bytes) -> tuple[Any, Phrases]:
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
        end = at + _HEADER.size + (_HEADER.unpack_from(data, at)[1] + 7) // 8
        phrases = Phrases.decode(view[at:end])
        return Stored(backend, phrases, self.excerpts.decode(view[end:]))
