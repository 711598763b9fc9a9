"""SpotSigs, after Theobald, Siddharth and Paepcke (SIGIR 2008).

A spot signature is an antecedent (a frequent stopword such as "the" or "的") followed by a
chain of the next ``chain`` non-stopwords. Navigation, ads and link lists contain few
stopwords, so spot signatures come almost only from running text: two pages that share a
template but not an article share few of them. Similarity is the Jaccard coefficient of the
two signature sets.

Pruning, as in the paper, rests on two facts about Jaccard similarity ``t``:

* length partitions: ``J(A, B) >= t`` needs ``t <= |A| / |B| <= 1 / t``, so candidates whose
  set size is out of that range are rejected before any intersection is computed;
* inverted index: a match must share at least ``ceil(t * |B|)`` of the new set ``B``'s
  signatures, so any ``|B| - ceil(t * |B|) + 1`` of them hold at least one shared signature.
  Every document is posted under all its signatures, and a query probes only that many
  posting lists, the shortest first: the paper's processing of lists in increasing document
  frequency with early termination. Signatures frequent across the crawl ("the united
  states", "the first time") have long lists, and are never read unless a document has too
  few rarer ones. A fixed global order (prefix filtering) would post half as much, but puts
  frequent signatures into the prefixes of half the documents, and then every query verifies
  a fixed fraction of the whole index.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scrapy_neardup.text import TOKEN_HASH, Document, hash_tokens, shingle_hashes

_EPSILON = 1e-9

ENGLISH_ANTECEDENTS = frozenset(
    "a an the is are was were be been being there said says has have had will would "
    "it its this that these those of to in on for with by at from as and or but not".split()
)
CHINESE_ANTECEDENTS = frozenset(
    "的 了 是 在 和 有 也 就 都 而 及 与 着 或 被 对 从 将 把 为 "
    "这 那 一个 我们 他们 表示 说 已 其 并 但".split()
)
# Words skipped when building a chain: the antecedents themselves and other function words.
_ENGLISH_STOPWORDS = ENGLISH_ANTECEDENTS | frozenset(
    "i you he she we they me him her us them my your his our their which who whom what when "
    "where why how all any both each few more most other some such no nor only own same so "
    "than too very can just should now do does did doing if then into over under again "
    # Pieces of contractions ("doesn't" tokenises as "doesn", "t"), modals and titles: in
    # chains they made spots such as "it doesn t" that half of all English pages share.
    "s t d ll m re ve don doesn didn isn wasn aren weren won wouldn couldn shouldn hasn haven "
    "hadn could may might must also mr mrs ms".split()
)
_CHINESE_STOPWORDS = CHINESE_ANTECEDENTS | frozenset(
    "我 你 他 她 它 之 于 以 上 下 中 个 不 没有 很 还 又 要 会 能 可以 所以 因为 如果 等".split()
)


class SpotSigsMethod:
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
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"spotsigs threshold must be in (0, 1], got {threshold}")
        if not 1 <= min_spots <= 1000:
            raise ValueError(f"spotsigs min_spots must be 1..1000, got {min_spots}")
        if not 1 <= chain <= 8:
            raise ValueError(f"spotsigs chain must be 1..8, got {chain}")
        self.threshold = threshold
        self.chain = chain
        # A page in a language without these antecedents (Russian, Korean...) has a handful of
        # spots, and one injected English line would make two of them match: below this
        # floor a document is never indexed or matched (the exact hash still applies).
        self.min_spots = min_spots
        self.antecedents = antecedents or (ENGLISH_ANTECEDENTS | CHINESE_ANTECEDENTS)
        self.stopwords = (stopwords or (_ENGLISH_STOPWORDS | _CHINESE_STOPWORDS)) | self.antecedents

    def params(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "chain": self.chain,
            "antecedents": sorted(self.antecedents),
            "stopwords": sorted(self.stopwords),
            "index": "all-spots",
            "min_spots": self.min_spots,
            "token_hash": TOKEN_HASH,
        }

    def spots(self, tokens: list[str]) -> list[tuple[str, ...]]:
        """The spot signatures of a token list, readable (for tests and explanations)."""
        stop = self.stopwords
        content = [i for i, tok in enumerate(tokens) if tok not in stop]
        out = []
        pos = 0  # index into ``content`` of the first content word after token i
        for i, tok in enumerate(tokens):
            while pos < len(content) and content[pos] <= i:
                pos += 1
            if tok in self.antecedents and pos + self.chain <= len(content):
                out.append((tok, *(tokens[j] for j in content[pos : pos + self.chain])))
        return out

    def signature(self, doc: Document) -> np.ndarray:
        """Sorted unique 64-bit hashes of the spot signatures (the global order is hash order)."""
        spots = self.spots(doc.tokens)
        if not spots:
            return np.empty(0, dtype=np.uint64)
        width = self.chain + 1
        flat = hash_tokens([w for spot in spots for w in spot]).reshape(-1, width)
        hashes = shingle_hashes(flat.ravel(), width)[::width]
        return np.unique(hashes)

    def _at_least(self, size: int) -> int:
        """The fewest of ``size`` spots that can reach the threshold. The epsilon keeps a pair
        at exactly the threshold: 0.55 * 100 is 55.00000000000001 in floating point."""
        return math.ceil(self.threshold * size - _EPSILON)

    def prefix_length(self, size: int) -> int:
        """How many of a set's ``size`` signatures must be probed (see the module docstring)."""
        return size - self._at_least(size) + 1 if size else 0

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        return signature.tolist() if len(signature) >= self.min_spots else []

    def probe_count(self, signature: np.ndarray) -> int:
        return self.prefix_length(len(signature))

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        small, large = sorted((len(a), len(b)))
        if small < self.min_spots or small < self._at_least(large):  # length partition
            return None
        common = len(np.intersect1d(a, b, assume_unique=True))
        jaccard = common / (len(a) + len(b) - common)
        return jaccard if jaccard >= self.threshold - _EPSILON else None

    def encode(self, signature: np.ndarray) -> bytes:
        return signature.astype("<u8", copy=False).tobytes()

    def decode(self, data: bytes) -> np.ndarray:
        if len(data) % 8:
            raise ValueError(f"spotsigs signature length must be a multiple of 8, got {len(data)}")
        return np.frombuffer(data, dtype="<u8").astype(np.uint64)
