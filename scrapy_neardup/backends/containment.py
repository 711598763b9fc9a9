"""Containment decides a drop: a document is dropped only when what it says is already kept.

Every candidate a backend proposes is verified here against a Bloom filter of the kept
document's word 3-shingles and words (``backends/phrases.py``) by the lossless rule
(``backends/losses.py``) or the "similar" rule; the backend's own similarity is reported,
never trusted to decide. Rationale: ``docs/design.md#containment``, ``#similar-decision``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from scrapy_neardup.backends import BACKENDS
from scrapy_neardup.backends.base import Backend, unpack
from scrapy_neardup.backends.excerpts import NO_FINGERPRINTS, Excerpts, fingerprints_of
from scrapy_neardup.backends.losses import COVERAGE, SHINGLES, coverage, holds, lossy
from scrapy_neardup.backends.phrases import (
    BITS_PER_SHINGLE,
    HEADER,
    PHRASE,
    Phrases,
    jaccard,
    lines_of,
    phrases_of,
    shingles_of,
    spot_params,
    spot_similarity,
    spots_of,
)
from scrapy_neardup.backends.titles import title_words, titles_shared
from scrapy_neardup.text import Document, ShingleSpec

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
#: The similar rule reads a page without its readers' comments where what remains has this
#: many words (NEARDUP_MIN_TOKENS' default); a shorter one is judged with them.
ARTICLE_TOKENS = 50
#: Candidates a query verifies, by the buckets they share with the page: every one sharing
#: STRONG buckets or more, and of the others the CHECKS sharing the most
#: (docs/design.md#checks-per-query).
CHECKS = 32
STRONG = 8
#: A kept page with fewer distinct 3-shingles than this share of a new page's is not verified
#: against it (Verified.check): it cannot hold the new page's own text at the decision's lines.
SMALLER_KEPT = 0.1
# Set in a signature's similar-rule filter length where its title words follow that part.
_TITLED = 1 << 31


def candidate_params(
    method: str,
    decision: str,
    similar_shingles: int | None = None,
    similar_spots: bool = SIMILAR_SPOTS,
) -> dict:
    """Default parameters of the backend named ``method``, under either ``decision``: its
    :meth:`~scrapy_neardup.backends.base.Backend.similar_candidates` (under "contained" they
    find the kept reprints that the similar rule records as near)."""
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
    excerpts: np.ndarray = NO_FINGERPRINTS  # the excerpt fingerprints, signed or stored
    titles: np.ndarray | None = None  # the title check's words (None: stored without them)


class Verified(Backend):
    """A backend whose candidates are verified exactly: its signature is a :class:`Signature`;
    buckets, probing and the store's screens are the backend's (with the excerpt keys:
    backends/excerpts.py); the backend's ``estimate`` only screens candidates, the decision is
    :meth:`check`'s. Both rules are worked out for every candidate; ``decision`` says which
    one drops:

    * ``"contained"``: the lossless rule (:func:`holds`), screened by ``coverage`` of the new
      document's words in a 3-shingle of the kept one, lines lost below ``shingles``.
    * ``"similar"``: the Jaccard of the two documents' word ``similar_shingles``-shingles
      (:func:`jaccard`) at least ``similarity``, or the spot rule (:func:`spot_similarity`),
      where each page's title words are words of the other (:func:`titles_shared`; a pair
      with a page signed or stored without them passes); a copy joins the closest kept page
      (``Check.rank``). For a backend with a ``similar_threshold`` (simhash, cosine), its own
      estimate at least ``similarity``.

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
        # A kept page smaller than this share of the new one is not verified against it.
        self._smaller = SMALLER_KEPT
        if decision == "similar" and self._jaccard:
            self._smaller = min(SMALLER_KEPT, 0.9 * self.similarity_threshold)
        # Below the backend's excerpt screen only an excerpt can be a copy; under "similar",
        # the spot rule takes a reprint at any shingle Jaccard the bands propose.
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
            params["spots"] = spot_params()
        return params

    def signature(self, doc: Document) -> Signature:
        # The similar rule and the candidates read the article alone: a reprint comes with
        # other readers' comments, and a site's pages can share a comment thread or widget
        # (docs/design.md#similar-decision). An article too short to stand for its page (a
        # forum's posts read as comments under a one-line header) keeps them. The lines,
        # readers' comments included, are what the lossless rule covers.
        article = doc.article
        if article.token_count < ARTICLE_TOKENS:
            article = doc
        extra = spots = None
        if self._jaccard and self._spec != PHRASE:
            extra = shingles_of(article, self._spec)
        if self.similar_spots:
            spots = spots_of(article)
        lines = lines_of(doc)  # read once, for the phrase filter and the title words
        phrases = phrases_of(doc, lines)  # its excerpt fingerprints too: signing is a worker's
        return Signature(
            self.backend.signature(article),
            phrases,
            extra,
            spots,
            fingerprints_of(phrases),
            title_words(doc, lines),
        )

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

    def similar(
        self, new: Signature, kept: Signature, estimate: float
    ) -> tuple[bool, float | None]:
        """Whether the "similar" rule holds for a candidate, with its measure (None: cannot
        say): the Jaccard of its shingles (else the backend's ``estimate``) at least the
        threshold, or the spot rule (:func:`spot_similarity`, whose closeness is then the
        measure); under "similar", only where the title check holds both ways."""
        measure: float | None = float(estimate)  # simhash: 1 - d/64 within k; cosine
        if self._jaccard:
            phrases = self._spec == PHRASE  # the rule's shingles are the 3-shingles
            a, b = (new.phrases, kept.phrases) if phrases else (new.shingles, kept.shingles)
            measure = None if a is None or b is None else jaccard(a, b)
        holds = measure is not None and measure >= self.similarity_threshold - 1e-9
        spots = None
        if self.similar_spots and new.spots is not None and kept.spots is not None:
            spots = spot_similarity(new.spots, kept.spots)
        if spots is not None:
            holds, measure = holds or spots[0], spots[1]
        if holds and self.decision == "similar":
            holds = _titled(new, kept) and _titled(kept, new)
        return holds, measure

    def check(self, new: Signature, kept: Signature) -> Check | None:
        """None when the candidate is neither a copy, related nor near."""
        if kept.phrases.count < self._smaller * new.phrases.count:
            return None  # too small to hold the new page (excerpt keys propose such pages)
        similarity = self.backend.estimate(new.backend, kept.backend)
        if similarity is None or similarity < self._screen:
            # Screened out by the backend: an excerpt is verified when it shares half its
            # excerpt fingerprints (backends/excerpts.py).
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
        filters = (signature.shingles, signature.spots)  # the similar rule's, in this order
        extra = b"".join(part.encode() for part in filters if part is not None)
        titles = b""  # the title check's words, where signed: flagged in extra's length
        if signature.titles is not None:
            words = signature.titles.astype("<u8").tobytes()
            titles = struct.pack("<I", len(words)) + words
        return b"".join(
            (
                struct.pack("<I", len(inner)),
                inner,
                signature.phrases.encode(),
                struct.pack("<I", len(extra) | (_TITLED if titles else 0)),
                extra,
                titles,
                self.excerpts.encode(signature),
            )
        )

    def decode(self, data: bytes) -> Signature:
        view = memoryview(data)
        inner, at = _sized_part(view, 0, "backend part")
        backend = self.backend.decode(bytes(inner))
        phrases, at = _filter_part(view, at)
        if len(data) == at:  # written without the similar rule's filter and excerpt keys
            return Signature(backend, phrases)
        titled = len(view) >= at + 4 and bool(struct.unpack_from("<I", view, at)[0] & _TITLED)
        extra, at = _sized_part(view, at, "similar-rule filter", _TITLED)
        # The similar rule's filters, one after the other: its shingles' (where they are not
        # 3-shingles), then its spots' (absent from states written before the spot rule).
        filters: list[Phrases | None] = []
        end = 0
        while end < len(extra):
            found, end = _filter_part(extra, end)
            filters.append(found)
        if not (self._jaccard and self._spec != PHRASE):
            filters.insert(0, None)  # no shingles filter: its 3-shingles are the phrase filter
        if len(filters) > 2:
            raise ValueError("corrupt verified signature: too many similar-rule filters")
        filters += [None] * (2 - len(filters))
        titles = None  # absent from states written before the title check
        if titled:
            words, at = _sized_part(view, at, "title words")
            titles = unpack(words, "<u8", "title words")
        excerpts = self.excerpts.decode(view[at:])
        return Signature(backend, phrases, filters[0], filters[1], excerpts, titles)


def _titled(page: Signature, other: Signature) -> bool:
    """The title check one way: ``page``'s title words are words of ``other``
    (:func:`titles_shared`); true where either was signed or stored without them."""
    if page.titles is None or other.titles is None:
        return True
    return titles_shared(page.titles, other.phrases)


def _sized_part(view: memoryview, at: int, what: str, flag: int = 0) -> tuple[memoryview, int]:
    """The part at ``at`` that a little-endian u32 length prefixes (less the bits of
    ``flag``), and where it ends."""
    if len(view) < at + 4:
        raise ValueError(f"corrupt verified signature: {what} is cut")
    end = at + 4 + (struct.unpack_from("<I", view, at)[0] & ~flag)
    if len(view) < end:
        raise ValueError(f"corrupt verified signature: {what} is cut")
    return view[at + 4 : end], end


def _filter_part(view: memoryview, at: int) -> tuple[Phrases, int]:
    """The phrase filter at ``at``, and where it ends."""
    if len(view) < at + HEADER.size:
        raise ValueError("corrupt verified signature: a filter is cut")
    end = at + HEADER.size + (HEADER.unpack_from(view, at)[2] + 7) // 8
    if len(view) < end:
        raise ValueError("corrupt verified signature: a filter is cut")
    return Phrases.decode(view[at:end]), end
