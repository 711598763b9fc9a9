"""MinHash-LSH: datasketch's ``affine32`` MinHash and ``MinHashLSH`` bands, bit for bit.

Signatures equal datasketch's ``MinHash`` over the same shingle hashes, computed in one numpy
pass without importing datasketch (it imports scipy); the bucket keys are ``MinHashLSH``'s
bands, kept in this project's stores so that a query-then-add is atomic there. The threshold
only sizes the bands. Rationale and parameters: ``docs/design.md#minhash``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scrapy_neardup.backends.base import ArrayBackend, band_keys
from scrapy_neardup.text import TOKEN_HASH, Document, ShingleSpec

_DEFAULT_WEIGHTS = (0.3, 0.7)
_LOW32 = np.uint64(0xFFFFFFFF)
_EMPTY = np.uint32(0xFFFFFFFF)
# MurmurHash3's 32-bit finaliser, which datasketch applies to every input of an affine scheme.
_S1, _M1, _S2, _M2, _S3 = (np.uint32(v) for v in (16, 0x85EBCA6B, 13, 0xC2B2AE35, 16))

#: ``(bands, rows)`` that ``MinHashLSH`` chooses for ``(threshold, num_perm)`` with the
#: default weights, written out (the tests ask datasketch for each): asking costs an import
#: of scipy and an integration on the way to the first page checked.
_BANDINGS: dict[tuple[float, int], tuple[int, int]] = {
    (threshold / 10, num_perm): banding
    for num_perm, bandings in (
        (64, [(32, 2), (19, 2), (21, 3), (16, 4), (12, 5), (10, 6), (7, 9), (4, 16)]),
        (128, [(44, 2), (42, 3), (32, 4), (25, 5), (21, 6), (16, 8), (11, 11), (6, 20)]),
        (256, [(44, 2), (59, 3), (58, 4), (45, 5), (36, 7), (28, 9), (19, 13), (11, 23)]),
    )
    for threshold, banding in zip(range(2, 10), bandings, strict=True)
}


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` of datasketch 2's ``MinHash(num_perm, seed, scheme="affine32")``, drawn
    as it draws them: fixed here whatever a later datasketch draws."""
    gen = np.random.RandomState(seed)
    odd = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    return odd, gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _S1)
    h = h * _M1
    h = h ^ (h >> _S2)
    h = h * _M2
    return h ^ (h >> _S3)


class MinHashBackend(ArrayBackend):
    """Estimated Jaccard similarity of shingle sets; a match is at least ``threshold``."""

    name = "minhash"
    excerpt_screen = 0.2  # a Jaccard: below it only an excerpt is a copy (SpotSigs's line)
    lshbloom = True
    dtype = "<u4"

    def __init__(
        self,
        threshold: float = 0.4,
        num_perm: int = 128,
        shingles: str | ShingleSpec = "word:3",
        bands: tuple[int, int] | None = None,
        weights: tuple[float, float] = _DEFAULT_WEIGHTS,
        seed: int = 1,
    ) -> None:
        self.require(0.0 < threshold <= 1.0, f"threshold must be in (0, 1], got {threshold}")
        self.require(16 <= num_perm <= 1024, f"num_perm must be 16..1024, got {num_perm}")
        self.threshold = threshold
        self.num_perm = self.size = num_perm
        self.shingles = ShingleSpec.parse(shingles)
        self.seed = seed
        self._a, self._b = permutations(num_perm, seed)
        self._lsh_args = {"weights": tuple(weights), "params": bands}
        plain = tuple(weights) == _DEFAULT_WEIGHTS and bands is None
        self._banding = _BANDINGS.get((threshold, num_perm)) if plain else None
        if self._banding is None and (not plain or threshold > 0.9):
            self.prepared()  # parameters datasketch may refuse: asked now, at start

    @classmethod
    def similar_candidates(cls, shingles: int, spots: bool) -> dict[str, Any]:
        """Bands on the rule's shingles, below its threshold: 0.4 on 3-shingles misses a 20 %
        reprint, the spot rule's have a shingle Jaccard of 0.15-0.3 (evaluation/ACCURACY.md)."""
        return {"shingles": f"word:{shingles}", "threshold": 0.2}

    def prepared(self) -> tuple[int, int]:
        """(bands, rows): the banding ``MinHashLSH`` chooses for the threshold, the number of
        permutations and the weights (or the ``bands`` given)."""
        if self._banding is None:
            from datasketch import MinHashLSH  # imports scipy: only for a banding not written out

            lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm, **self._lsh_args)
            self._banding = (lsh.b, lsh.r)
        return self._banding

    def adopt(self, banding: tuple[int, int]) -> None:
        """Use the banding :meth:`prepared` computed in another process (a worker)."""
        if self._banding is None:
            self._banding = banding

    @property
    def bands(self) -> int:
        return self.prepared()[0]

    @property
    def rows(self) -> int:
        return self.prepared()[1]

    def params(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "shingles": str(self.shingles),
            "bands": self.bands,
            "rows": self.rows,
            "seed": self.seed,
            "scheme": "affine32",
            "token_hash": TOKEN_HASH,
        }

    def signature(self, doc: Document) -> np.ndarray:
        """``MinHash(num_perm, seed, scheme="affine32", hashfunc=low 32 bits of the shingle
        hash).update_batch(shingles).hashvalues``."""
        shingles = doc.shingles(self.shingles)
        if len(shingles) == 0:
            return np.full(self.num_perm, _EMPTY, dtype=np.uint32)
        # Multiplication and addition wrap modulo 2**32, which is the affine32 permutation.
        permuted = np.multiply.outer(_fmix32((shingles & _LOW32).astype(np.uint32)), self._a)
        permuted += self._b
        return permuted.min(axis=0)

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        bands, rows = self.prepared()
        return band_keys(signature[i * rows : (i + 1) * rows].tobytes() for i in range(bands))

    def estimate(self, a: np.ndarray, b: np.ndarray) -> float:
        """The same estimator as ``MinHash.jaccard``, without building two MinHash objects."""
        return float(np.count_nonzero(a == b)) / self.num_perm

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        estimate = self.estimate(a, b)
        return estimate if estimate >= self.threshold else None
