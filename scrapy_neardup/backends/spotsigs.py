"""SpotSigs, after Theobald, Siddharth and Paepcke (SIGIR 2008).

Spot signatures (a frequent stopword of the text's language followed by a chain of the next
non-stopwords, :mod:`scrapy_neardup.stopwords`) come almost only from running text;
candidates are pruned by length partitions and an inverted index without losing any pair at
or above the Jaccard threshold. Rationale and parameters: ``docs/design.md#spotsigs``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

from scrapy_neardup.backends.base import ArrayBackend
from scrapy_neardup.stopwords import (
    CHINESE_ANTECEDENTS,
    CHINESE_STOPWORDS,
    ENGLISH_ANTECEDENTS,
    ENGLISH_STOPWORDS,
    LANGUAGES,
    MIN_COVERAGE,
    LanguageWords,
    guess_language,
)
from scrapy_neardup.text import TOKEN_HASH, Document, hash_tokens, shingle_hashes

_EPSILON = 1e-9  # keeps a pair at exactly the threshold: 0.55 * 100 is 55.00000000000001
_ANCHOR = "\x00"  # marks the antecedent of an anchored spot (a page in no known language)
CANDIDATE_FLOOR = 0.2


class SpotSigsBackend(ArrayBackend):
    """Jaccard similarity of spot-signature sets; a match is at least ``threshold``."""

    name = "spotsigs"
    reads_tokens = True  # the token list, not only its hashes (see Deduplicator.sign)

    def __init__(
        self,
        threshold: float = 0.5,
        chain: int = 2,
        antecedents: frozenset[str] | None = None,
        stopwords: frozenset[str] | None = None,
        min_spots: int = 10,
        languages: Sequence[str] | None = None,
        anchors: int = 4,
    ) -> None:
        self.require(0.0 < threshold <= 1.0, f"threshold must be in (0, 1], got {threshold}")
        self.require(1 <= min_spots <= 1000, f"min_spots must be 1..1000, got {min_spots}")
        self.require(1 <= chain <= 8, f"chain must be 1..8, got {chain}")
        self.require(0 <= anchors <= 64, f"anchors must be 0..64 (0: none), got {anchors}")
        self.threshold = threshold
        self.chain = chain
        self.min_spots = min_spots  # fewer spots: never indexed or matched (a list of links)
        self.anchors = anchors
        self.fixed: LanguageWords | None = None
        if antecedents is not None or stopwords is not None:
            # Given lists hold for every document, whatever its language (no guess).
            ante = frozenset(antecedents or (ENGLISH_ANTECEDENTS | CHINESE_ANTECEDENTS))
            stop = frozenset(stopwords or (ENGLISH_STOPWORDS | CHINESE_STOPWORDS)) | ante
            self.fixed = LanguageWords(ante, stop)
            self.languages: tuple[str, ...] = ()
        else:
            self.languages = tuple(LANGUAGES) if languages is None else tuple(languages)
            unknown = sorted(set(self.languages) - LANGUAGES.keys())
            valid = bool(self.languages) and not unknown
            self.require(valid, f"languages {unknown} unknown; choose from {sorted(LANGUAGES)}")

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"threshold": self.threshold, "chain": self.chain}
        if self.fixed is not None:
            params["antecedents"] = sorted(self.fixed.antecedents)
            params["stopwords"] = sorted(self.fixed.stopwords)
        else:
            params["languages"] = {
                lang: [sorted(LANGUAGES[lang].antecedents), sorted(LANGUAGES[lang].stopwords)]
                for lang in sorted(self.languages)
            }
            params["language_guess"] = f"stopword-coverage>={MIN_COVERAGE}"
            if self.anchors:  # without it, the parameters of the states written before it
                params["anchors"] = self.anchors
        params.update(index="all-spots", min_spots=self.min_spots, token_hash=TOKEN_HASH)
        return params

    def words(self, tokens: Sequence[str]) -> LanguageWords | None:
        """The antecedents and stopwords a document's spots are made of: those of its guessed
        language only, so the English paragraph a German page quotes gives it (almost) no
        spots; None when no language is recognised (no spots: only exact matches)."""
        if self.fixed is not None:
            return self.fixed
        lang = guess_language(tokens, self.languages)
        return None if lang is None else LANGUAGES[lang]

    def spots(self, tokens: list[str]) -> list[tuple[str, ...]]:
        """The spot signatures of a token list, readable (for tests and explanations)."""
        words = self.words(tokens)
        if words is None:
            return []
        ante, stop = words.antecedents, words.stopwords
        content = [i for i, tok in enumerate(tokens) if tok not in stop]
        out = []
        for i in [i for i, tok in enumerate(tokens) if tok in ante]:
            pos = bisect_right(content, i)  # the first content word after token i
            if pos + self.chain <= len(content):
                out.append((tokens[i], *(tokens[j] for j in content[pos : pos + self.chain])))
        return out

    def _anchored(self, tokens: list[str]) -> list[tuple[str, ...]]:
        """Spots of a page in no known language: every token whose hash is 0 modulo
        ``anchors`` is a (marked) antecedent, followed by the next ``chain`` tokens."""
        if not self.anchors:
            return []
        starts = np.flatnonzero(hash_tokens(tokens[: -self.chain]) % np.uint64(self.anchors) == 0)
        return [(_ANCHOR + tokens[i], *tokens[i + 1 : i + 1 + self.chain]) for i in starts]

    def signature(self, doc: Document) -> np.ndarray:
        """Sorted unique 64-bit hashes of the spot signatures (the global order is hash order)."""
        spots = self.spots(doc.tokens)
        if self.fixed is None and len(set(spots)) < self.min_spots:  # too few to be indexed
            anchored = self._anchored(doc.tokens)
            if len(set(anchored)) >= self.min_spots:
                spots = anchored
        if not spots:
            return np.empty(0, dtype=np.uint64)
        width = self.chain + 1
        hashes = shingle_hashes(hash_tokens([w for spot in spots for w in spot]), width)
        return np.unique(hashes[::width])

    @classmethod
    def similar_candidates(cls, shingles: int, spots: bool) -> dict[str, Any]:
        """With the spot rule, the index over the rule's own spots at its Jaccard."""
        from scrapy_neardup.backends.phrases import SPOT_CHAIN, SPOT_SIMILARITY

        return {"chain": SPOT_CHAIN, "threshold": SPOT_SIMILARITY} if spots else {}

    def _at_least(self, size: int) -> int:
        """The fewest of ``size`` spots that can reach the threshold."""
        return math.ceil(self.threshold * size - _EPSILON)

    def prefix_length(self, size: int) -> int:
        """How many of a set's ``size`` signatures must be probed (see the module docstring)."""
        return size - self._at_least(size) + 1 if size else 0

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        return signature.tolist() if len(signature) >= self.min_spots else []

    def probe_count(self, signature: np.ndarray) -> int:
        return self.prefix_length(len(signature))

    def estimate(self, a: np.ndarray, b: np.ndarray) -> float | None:
        """The Jaccard similarity of the spot sets without the length partition, from
        :data:`CANDIDATE_FLOOR` up (below it, what two pages share is their template:
        docs/design.md#spotsigs)."""
        if min(len(a), len(b)) < self.min_spots:
            return None
        jaccard = _jaccard(a, b)
        return jaccard if jaccard >= CANDIDATE_FLOOR else None

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        small, large = sorted((len(a), len(b)))
        if small < self.min_spots or small < self._at_least(large):  # length partition
            return None
        jaccard = _jaccard(a, b)
        return jaccard if jaccard >= self.threshold - _EPSILON else None


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)
