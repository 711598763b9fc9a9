"""Containment decides a drop: a document is dropped only when what it says is already kept.

Promises: every candidate a backend proposes is verified here against a small Bloom filter of
the kept document's word 3-shingles stored beside its signature; a copy needs at least
``coverage`` of its words in shared 3-shingles and ``shingles`` of its 3-shingles in the kept
one, with the filter's false positives subtracted so that no drop rests on luck. The backend's
own similarity is reported, never trusted to decide. :func:`text_coverage` is the exact
measure and :func:`lossy` the one lossy-drop line (:data:`LOSSY_BELOW`) that the audit page and
the evaluation use. It knows nothing of Scrapy or storage.
Rationale: ``docs/design.md#containment``, ``#why-containment-not-similarity``,
``#covered-words``, ``#shared-shingles``, ``#phrase-filter``, ``#similar-decision``.
"""

from __future__ import annotations

import math
import struct
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
import xxhash

from scrapy_neardup.backends.excerpts import Excerpts, Stored
from scrapy_neardup.text import Document, ShingleSpec, normalize, token_starts

COVERAGE = 0.9
SHINGLES = 0.8
RELATED = 0.8
#: What drops a page: ``"contained"`` (its text is in a kept page: this module's rule) or
#: ``"similar"`` (the literature's: a similarity of the pair, verified exactly, at least a
#: threshold; see :class:`Verified`).
DECISIONS = ("contained", "similar")
#: The "similar" decision's word shingles and Jaccard threshold (evaluation/ACCURACY.md).
SIMILAR_SHINGLES = 2
SIMILARITY = 0.35
#: simhash's "similar" rule: 1 - d / 64 at least this, a Hamming distance d within 3 bits
#: (Manku, Jain and Das Sarma's k for 64-bit fingerprints).
SIMHASH_SIMILARITY = 1.0 - 3 / 64
BITS_PER_SHINGLE = 10
MAX_FILTER_BYTES = 131072  # 10 bits a shingle up to ~100k distinct 3-shingles
MAX_FALSE_POSITIVES = 0.05
MIN_OWN_WORDS = 20
MIN_OWN_SHARE = 0.1
LUCK = 0.05  # a drop never rests on false positives more likely than this (see _luck)
LOSSY_BELOW = 0.8  # the lossy-drop line of the audit and the evaluation
#: A kept page with fewer distinct 3-shingles than this share of a new page's is not verified
#: against it (Verified.check): it cannot hold the new page's own text at the decision's lines.
SMALLER_KEPT = 0.1
#: A line of this many words that its site repeats still counts in a page's shingle share.
REPEATED_PROSE = 20
#: MinHash candidates with a lower Jaccard estimate are verified only when they share half
#: their excerpt fingerprints (Verified.check): SpotSigs's own screen, at its own line.
EXCERPT_SCREEN = 0.2
#: A page with at least this share of its words in lines its site repeats has no text of its
#: own to compare (a listing, a tag page): matched exactly only (Deduplicator.without_boilerplate).
#: 1 - MIN_OWN_SHARE: the line below which coverage() already stopped trusting its own words.
BOILERPLATE_SHARE = 1.0 - MIN_OWN_SHARE
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


def _filter(sequence: np.ndarray) -> tuple[np.ndarray, int, int, int]:
    """(bits, size, hashes, count) of a Bloom filter of the distinct hashes of ``sequence``."""
    distinct = np.unique(sequence)
    count = len(distinct)
    size = max(64, min(BITS_PER_SHINGLE * count, 8 * MAX_FILTER_BYTES))
    size = (size + 7) // 8 * 8
    hashes = max(1, min(16, round(size / max(1, count) * math.log(2))))
    flags = np.zeros(size, dtype=bool)
    flags[_positions(distinct, size, hashes).ravel()] = True
    return np.packbits(flags, bitorder="little"), size, hashes, count


def shingles_of(doc: Document, spec: ShingleSpec) -> Phrases:
    """A Bloom filter of ``doc``'s distinct ``spec`` shingles (with them, sorted, as its
    ``sequence``): what :func:`jaccard` compares for the "similar" decision."""
    distinct = np.unique(doc.shingles(spec))
    return Phrases(*_filter(distinct), distinct)


def jaccard(new: Phrases, kept: Phrases) -> float | None:
    """The Jaccard similarity of the two documents' shingle sets: ``new``'s distinct shingles
    (all of them, from its sequence) looked up in ``kept``'s filter, the filter's false
    positives subtracted as :func:`coverage` does; None when ``kept``'s filter is too full
    to say. Boilerplate is not left out: this is the literature's measure of the pair."""
    rate = kept.false_positive_rate
    if new.sequence is None or rate > MAX_FALSE_POSITIVES:
        return None
    distinct = new.sequence if new.count == len(new.sequence) else np.unique(new.sequence)
    if len(distinct) == 0 or kept.count == 0:
        return 0.0
    hit = int(np.count_nonzero(kept.contains(distinct)))
    common = (hit - rate * len(distinct)) / (1.0 - rate)
    common = min(max(0.0, common), float(len(distinct)), float(kept.count))
    return common / (len(distinct) + kept.count - common)


def phrases_of(doc: Document) -> Phrases:
    sequence = doc.shingles(_PHRASE)
    bits, size, hashes, count = _filter(sequence)
    lines = _lines(doc)
    if lines is None:
        return Phrases(bits, size, hashes, count, sequence)
    return Phrases(bits, size, hashes, count, sequence, *lines)


#: The candidate search of the "similar" decision, where the backend's own default would not
#: propose the pairs it accepts (MinHash's bands on 3-shingles at 0.4 miss a 20 % reprint,
#: whose word-set Jaccard is ~0.5): the bands on the rule's own shingles, at a threshold
#: below the rule's (evaluation/ACCURACY.md).
SIMILAR_CANDIDATES = 0.3


def candidate_params(method: str, decision: str, similar_shingles: int | None = None) -> dict:
    """Default backend parameters for a decision: for "similar", MinHash bands over the
    rule's shingles at :data:`SIMILAR_CANDIDATES`; nothing otherwise."""
    if decision != "similar" or method != "minhash":
        return {}
    size = SIMILAR_SHINGLES if similar_shingles is None else similar_shingles
    return {"shingles": f"word:{size}", "threshold": SIMILAR_CANDIDATES}


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
    """A verified candidate. ``duplicate``: the decision drops the new document (for
    ``"contained"``, it is in the kept one; for ``"similar"``, the pair reaches the
    similarity threshold); else ``related`` (nearly all of the kept one is in the new one,
    which carries more) or ``near`` (the other decision would have dropped it)."""

    similarity: float  # the backend's own measure, as reported
    contained: bool  # the containment rule holds (whatever decides)
    related: bool
    coverage: float  # share of the new document's words in a phrase of the kept one
    reverse: float  # share of the kept one's phrases in the new one
    duplicate: bool = False  # the configured decision drops it
    similar: bool = False  # the "similar" rule holds (whatever decides)
    near: bool = False  # kept, but the decision not configured would drop it
    measure: float = 0.0  # the "similar" rule's measure: Jaccard, 1 - d/64, cosine


class Coverage(NamedTuple):
    """How much of a new document a kept one holds (see :func:`coverage`)."""

    words: float  # share of the new document's words in a 3-shingle the kept one has
    reverse: float  # share of the kept one's distinct 3-shingles that the new one has
    shingles: float  # share of the new document's 3-shingles that the kept one has


def coverage(
    new: Phrases, kept: Phrases, copy_at: float = 1.1, copy_shingles: float = SHINGLES
) -> Coverage | None:
    """How much of ``new`` ``kept`` holds, corrected for the filter's false positives; None
    when ``kept``'s filter is too full to say. ``reverse`` is 0.0, not worked out, for a copy
    (:func:`holds` at ``copy_at`` covered words): a copy needs no related check. Words and
    shingles of lines ``new``'s site repeats (:class:`SiteLines`) are left out of both.

    This is :func:`text_coverage` (the exact measure, from the two texts) with the kept
    text known only by its Bloom filter."""
    rate = kept.false_positive_rate
    if new.sequence is None or len(new.sequence) == 0 or rate > MAX_FALSE_POSITIVES:
        return None
    hit = kept.contains(new.sequence)
    found = _measure(new, hit, rate)
    if holds(found, copy_at, copy_shingles) or not kept.count:
        return found
    distinct = np.unique(new.sequence[hit])
    reverse = (len(distinct) - rate * new.count) / kept.count
    return found._replace(reverse=float(min(1.0, max(0.0, reverse))))


def text_coverage(new: str | Document, kept: str | Document) -> Coverage | None:
    """:func:`coverage`, exactly: the kept text's own 3-shingles instead of its filter, and
    no site boilerplate left out (only a crawl knows its sites' lines). What the audit page
    (``scrapy neardup-stats --html``) and the evaluation show beside a drop; None for a new
    text without words."""
    new_doc = new if isinstance(new, Document) else Document(new)
    kept_doc = kept if isinstance(kept, Document) else Document(kept)
    phrases = phrases_of(new_doc)
    if phrases.sequence is None or len(phrases.sequence) == 0:
        return None
    distinct = np.unique(kept_doc.shingles(_PHRASE))
    hit = np.isin(phrases.sequence, distinct)
    found = _measure(phrases, hit, 0.0)
    reverse = len(np.unique(phrases.sequence[hit])) / len(distinct) if len(distinct) else 0.0
    return found._replace(reverse=float(reverse))


def lossy(found: Coverage | None) -> bool:
    """Whether a drop with this (exact) coverage lost text: less than :data:`LOSSY_BELOW` of
    the dropped page's 3-shingles within lines are in the kept one. The project's fixed line,
    whatever thresholds a crawl was given."""
    return found is not None and found.shingles < LOSSY_BELOW


def _measure(new: Phrases, hit: np.ndarray, rate: float) -> Coverage:
    """Covered words and shared shingles of ``new`` (``reverse`` left at 0.0), given which of
    its 3-shingles (in text order) the kept document has and the rate at which that answer is
    a false positive."""
    words = len(hit) + _PHRASE.size - 1 if len(hit) > 1 else len(hit)
    covered = np.zeros(words, dtype=bool)
    for offset in range(words - len(hit) + 1):
        covered[offset : offset + len(hit)] |= hit
    counted = _within_lines(new, len(hit), words)
    if new.ignore is not None and len(new.ignore) == words:
        own = ~new.ignore
        # A page that is nearly all lines its site repeats is judged on all its words (one
        # with BOILERPLATE_SHARE of them is matched exactly only: Deduplicator.without_boilerplate).
        if own.sum() >= max(MIN_OWN_WORDS, MIN_OWN_SHARE * words):
            covered = covered[own]
            # The shingles leave out the short lines its site repeats (navigation, a
            # template's credit line), not the long ones: a paragraph the site repeats on
            # other pages is not in the one it would be dropped for, and the audit page's
            # lossy line counts it.
            if new.line_words is not None and int(new.line_words.sum()) == words:
                prose = np.repeat(new.line_words >= REPEATED_PROSE, new.line_words)
                own = own | prose
            counted &= own[: len(hit)]
    shared = hit[counted] if counted.any() else hit
    # An uncovered word has up to 3 chances of a false positive; a shingle, one.
    chance = 1.0 - (1.0 - rate) ** _PHRASE.size
    share = max(0.0, float(covered.mean() - chance) / (1.0 - chance)) if len(covered) else 0.0
    shingles = _corrected(int(shared.sum()), len(shared), rate)
    return Coverage(share, 0.0, shingles)


def _corrected(found: int, total: int, rate: float) -> float:
    """The share ``found / total`` of a filter's answers, less the false positives it may
    have made among the answers that were truly "no": as many as it stays under with
    probability 1 - :data:`LUCK` (95 %, :func:`_luck`), or its mean where that is more. For
    the shingles, the lossy-drop line; covered words keep the mean's correction (a bound
    there too cost the synthetic copies with an inserted ad paragraph of
    ``tests/test_deduplicator.py``: 0.75 to 0.65 found).

    Subtracting the mean alone let a drop rest on the filter's luck: ``c3ref/blob_read.html``
    of sqlite3-doc has 0.792 of its 3-shingles in ``blob_write.html``, and the filter said
    0.802 (two false positives among 43 true misses, where 0.35 are expected), so the page
    was dropped, though what it documents (another function) is not in the kept one."""
    if total == 0:
        return 0.0
    if rate <= 0.0:
        return found / total
    mean = rate * (total - found) / (1.0 - rate)  # among the truly absent, estimated
    return max(0.0, (found - max(mean, _luck(mean))) / total)


def _luck(mean: float) -> int:
    """The smallest count of false positives that a Poisson count of this ``mean`` exceeds
    with probability at most :data:`LUCK`."""
    term = total = math.exp(-mean)
    k = 0
    while 1.0 - total > LUCK and k < 1000:
        k += 1
        term *= mean / k
        total += term
    return k


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


def _unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not 0.0 < value <= 1.0:
        raise ValueError(f"{name} threshold must be in (0, 1], got {value}")
    return float(value)


class Verified:
    """A backend whose candidates are verified exactly (see the module docstring).

    Its signature is ``(backend signature, Phrases, Phrases | None)``: the backend's, the
    3-shingle filter containment reads, and a filter of the "similar" rule's shingles when
    they are not 3-shingles. Buckets, probing and everything else the engine may ask of the
    backend (``reads_tokens``, MinHash's ``adopt``) are the backend's. The backend's
    ``estimate`` (its similarity without its threshold, where it has one) only screens
    candidates; the decision is :meth:`check`'s.

    Both rules are worked out for every candidate; ``decision`` says which one drops:

    * ``"contained"``: ``coverage`` of the new document's words in a 3-shingle of the kept
      one and ``shingles`` of its 3-shingles in it (:func:`holds`).
    * ``"similar"``: for the set backends, the Jaccard similarity of the two documents'
      word ``similar_shingles``-shingles (:func:`jaccard`, exact but for the filter's
      false positives, which are subtracted) at least ``similarity``; for simhash, a
      Hamming distance within ``64 * (1 - similarity)`` bits (default 3, Manku's; the
      index's ``k`` must reach it); for cosine, its cosine estimate (2048 hyperplanes) at
      least ``similarity`` (default: the backend's threshold).

    A pair the other rule holds is ``near`` (kept, recorded beside the kept one).
    """

    def __init__(
        self,
        backend: Any,
        *,
        decision: str = "contained",
        coverage: float = COVERAGE,
        shingles: float = SHINGLES,
        related: float = RELATED,
        similarity: float | None = None,
        similar_shingles: int = SIMILAR_SHINGLES,
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
        self.decision = decision
        self.similar_shingles = similar_shingles
        self._spec = ShingleSpec("word", similar_shingles)
        self.similarity_threshold = (
            self._default_similarity() if similarity is None else _unit("similarity", similarity)
        )
        # The share of the new page's distinct 3-shingles below which a kept page is too
        # small to be verified against it: a tenth, or the similar rule's Jaccard if lower.
        self._smaller = SMALLER_KEPT
        if decision == "similar" and self._jaccard:
            self._smaller = min(SMALLER_KEPT, 0.9 * self.similarity_threshold)
        # MinHash's estimate is a Jaccard: below EXCERPT_SCREEN (or the similar rule's own
        # threshold) only an excerpt can be a copy, and it shares its excerpt fingerprints.
        self._screen = 0.0
        if self.name == "minhash":
            self._screen = EXCERPT_SCREEN
            if decision == "similar":
                self._screen = min(EXCERPT_SCREEN, 0.5 * self.similarity_threshold)
        self._estimate = getattr(backend, "estimate", backend.similarity)
        self.excerpts = Excerpts()  # excerpt keys beside the backend's (backends/excerpts.py)
        if hasattr(backend, "probe_count"):  # the engine asks it of a whole signature
            self.probe_count = lambda signature: (
                backend.probe_count(signature[0]) + len(self.excerpts.keys(signature))
            )
        if hasattr(backend, "hamming_key"):  # and a store of a whole signature
            self.hamming_key = lambda signature: backend.hamming_key(signature[0])

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this class lacks: the backend's optional ones.
        return getattr(self.__dict__["backend"], name)

    @property
    def _jaccard(self) -> bool:
        return self.name not in ("simhash", "cosine")

    def params(self) -> dict[str, Any]:
        verify = {"filter": f"bloom{BITS_PER_SHINGLE}", "coverage": self.coverage}
        verify["related"] = self.related
        # Beyond the parameters of states written before them, only where they differ
        # from their defaults: a state of the default decision reads as it did.
        extra = {
            "decision": (self.decision, "contained"),
            "shingles": (self.shingles, SHINGLES),
            "similar_shingles": (
                self.similar_shingles if self._jaccard else SIMILAR_SHINGLES,
                SIMILAR_SHINGLES,
            ),
            "similarity": (self.similarity_threshold, self._default_similarity()),
        }
        verify.update({k: v for k, (v, default) in extra.items() if v != default})
        return {**self.backend.params(), "verify": verify, "excerpts": self.excerpts.params()}

    def _default_similarity(self) -> float:
        if self.name == "simhash":
            return SIMHASH_SIMILARITY
        return float(self.backend.threshold) if self.name == "cosine" else SIMILARITY

    def signature(self, doc: Document) -> tuple[Any, Phrases, Phrases | None]:
        extra = None
        if self._jaccard and self._spec != _PHRASE:
            extra = shingles_of(doc, self._spec)
        return self.backend.signature(doc), phrases_of(doc), extra

    def bucket_keys(self, signature: tuple[Any, ...]) -> list[int]:
        return list(self.backend.bucket_keys(signature[0])) + self.excerpt_keys(signature)

    def excerpt_keys(self, signature: tuple[Any, ...]) -> list[int]:
        """The excerpt keys among :meth:`bucket_keys` (the engine queries them first)."""
        return self.excerpts.keys(signature).tolist()

    def posted(self, signature: tuple[Any, ...]) -> None:
        """Told that a kept document was posted under :meth:`bucket_keys`."""
        self.excerpts.posted(signature)

    def measure(self, new: tuple[Any, ...], kept: tuple[Any, ...], estimate: float) -> float | None:
        """The "similar" rule's measure of a candidate (None: cannot say)."""
        if not self._jaccard:
            return float(estimate)  # simhash: 1 - d/64 within k; cosine: its estimate
        at = 1 if self._spec == _PHRASE else 2
        if len(new) <= at or len(kept) <= at or new[at] is None or kept[at] is None:
            return None
        return jaccard(new[at], kept[at])

    def check(self, new: tuple[Any, ...], kept: tuple[Any, ...]) -> Check | None:
        """None when the candidate is neither a copy, related nor near."""
        if kept[1].count < self._smaller * new[1].count:
            # A kept page a tenth the new one's size (which the excerpt keys of a long page
            # propose by the dozen) holds too little of it to be its copy or near it: not
            # verified, which over a whole page costs what a check of an excerpt does not.
            return None
        similarity = self._estimate(new[0], kept[0])
        if similarity is None or similarity < self._screen:
            # Screened out by the backend (or, for MinHash, a Jaccard estimate below any pair
            # the bands propose): an excerpt is far below it, and verified when it shares half
            # its excerpt fingerprints (backends/excerpts.py).
            if not self.excerpts.shared(new, kept):
                return None
            similarity = similarity or 0.0
        found = coverage(new[1], kept[1], self.coverage, self.shingles)
        contained = holds(found, self.coverage, self.shingles)
        measure = self.measure(new, kept, similarity)
        similar = measure is not None and measure >= self.similarity_threshold - 1e-9
        duplicate = contained if self.decision == "contained" else similar
        related = not duplicate and found is not None and found.reverse >= self.related
        other = similar if self.decision == "contained" else contained
        near = not (duplicate or related) and other
        if not (duplicate or related or near):
            return None
        words = found.words if found is not None else 0.0
        reverse = found.reverse if found is not None else 0.0
        return Check(
            float(similarity),
            contained,
            related,
            words,
            reverse,
            duplicate,
            similar,
            near,
            float(measure or 0.0),
        )

    def similarity(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> float | None:
        """The backend's similarity of a pair that :meth:`check` calls a copy, else None."""
        found = self.check(a, b)
        return found.similarity if found is not None and found.duplicate else None

    def encode(self, signature: tuple[Any, ...]) -> bytes:
        inner = self.backend.encode(signature[0])
        extra = signature[2].encode() if len(signature) > 2 and signature[2] is not None else b""
        return b"".join(
            (
                struct.pack("<I", len(inner)),
                inner,
                signature[1].encode(),
                struct.pack("<I", len(extra)),
                extra,
                self.excerpts.encode(signature),
            )
        )

    def decode(self, data: bytes) -> tuple[Any, Phrases, Phrases | None]:
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
        if len(data) < end:
            raise ValueError("corrupt verified signature: phrase filter is cut")
        phrases = Phrases.decode(view[at:end])
        if len(data) == end:  # written without the similar rule's filter and excerpt keys
            return Stored(backend, phrases, None, Excerpts.decode(b""))
        if len(data) < end + 4:
            raise ValueError("corrupt verified signature: similar-rule filter is cut")
        (size,) = struct.unpack_from("<I", data, end)
        if len(data) < end + 4 + size:
            raise ValueError("corrupt verified signature: similar-rule filter is cut")
        extra = Phrases.decode(view[end + 4 : end + 4 + size]) if size else None
        return Stored(backend, phrases, extra, self.excerpts.decode(view[end + 4 + size :]))
