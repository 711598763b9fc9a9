"""MinHash-LSH: datasketch's ``affine32`` permutations, bit for bit, and ``MinHashLSH``'s bands.

Promises: signatures equal to datasketch's ``MinHash`` over the same shingle hashes (computed
in one vectorised pass); bucket keys are ``MinHashLSH``'s bands, kept in this project's
storage so that a query-then-add is atomic there. The threshold only sizes the bands: a
candidate is verified by containment whatever its estimate. Pure maths: no Scrapy, no storage.
Rationale and parameters: ``docs/design.md#minhash``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xxhash

from scrapy_neardup.backends.base import Backend
from scrapy_neardup.text import TOKEN_HASH, Document, ShingleSpec

_SCHEME = "affine32"
_DEFAULT_WEIGHTS = (0.3, 0.7)
_LOW32 = np.uint64(0xFFFFFFFF)
_EMPTY = np.uint32(0xFFFFFFFF)
# MurmurHash3's 32-bit finaliser, which datasketch applies to every input of an affine scheme.
_S1, _M1, _S2, _M2, _S3 = (np.uint32(v) for v in (16, 0x85EBCA6B, 13, 0xC2B2AE35, 16))


#: ``(bands, rows)`` that datasketch's ``MinHashLSH`` chooses for ``(threshold, num_perm)``
#: with this backend's default weights, written out (the tests ask datasketch for each):
#: computing one imports scipy and integrates, slow and large in the process that asks, on
#: the way to the first page checked. Other parameters are asked of datasketch.
_BANDINGS: dict[tuple[float, int], tuple[int, int]] = {
    (0.2, 64): (32, 2),
    (0.3, 64): (19, 2),
    (0.4, 64): (21, 3),
    (0.5, 64): (16, 4),
    (0.6, 64): (12, 5),
    (0.7, 64): (10, 6),
    (0.8, 64): (7, 9),
    (0.9, 64): (4, 16),
    (0.2, 128): (44, 2),
    (0.3, 128): (42, 3),
    (0.4, 128): (32, 4),
    (0.5, 128): (25, 5),
    (0.6, 128): (21, 6),
    (0.7, 128): (16, 8),
    (0.8, 128): (11, 11),
    (0.9, 128): (6, 20),
    (0.2, 256): (44, 2),
    (0.3, 256): (59, 3),
    (0.4, 256): (58, 4),
    (0.5, 256): (45, 5),
    (0.6, 256): (36, 7),
    (0.7, 256): (28, 9),
    (0.8, 256): (19, 13),
    (0.9, 256): (11, 23),
}


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _S1)
    h = h * _M1
    h = h ^ (h >> _S2)
    h = h * _M2
    return h ^ (h >> _S3)


class MinHashBackend(Backend):
    """Estimated Jaccard similarity of shingle sets; a match is at least ``threshold``."""

    name = "minhash"
    excerpt_screen = 0.2  # a Jaccard: below it only an excerpt is a copy (SpotSigs's line)
    lshbloom = True

    def __init__(
        self,
        threshold: float = 0.4,
        num_perm: int = 128,
        shingles: str | ShingleSpec = "word:3",
        bands: tuple[int, int] | None = None,
        weights: tuple[float, float] = _DEFAULT_WEIGHTS,
        seed: int = 1,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"minhash threshold must be in (0, 1], got {threshold}")
        if not 16 <= num_perm <= 1024:
            raise ValueError(f"minhash num_perm must be 16..1024, got {num_perm}")
        self.threshold = threshold
        self.num_perm = num_perm
        self.shingles = ShingleSpec.parse(shingles)
        self.seed = seed
        self._lsh_args = {"weights": tuple(weights), "params": bands}
        self._banding: tuple[int, int] | None = None
        self._ranges: list[tuple[int, int]] = []
        self._permutations: tuple[np.ndarray, np.ndarray] | None = None
        plain = tuple(weights) == _DEFAULT_WEIGHTS and bands is None
        known = _BANDINGS.get((threshold, num_perm)) if plain else None
        if known is not None:
            self.adopt(known)
        elif not plain or threshold > 0.9:
            self.prepared()  # parameters datasketch may refuse: asked now, at start

    @classmethod
    def similar_candidates(cls, shingles: int, spots: bool) -> dict[str, Any]:
        """Bands on the rule's shingles, below its threshold: 0.4 on 3-shingles misses a 20 %
        reprint, the spot rule's have a shingle Jaccard of 0.15-0.3 (evaluation/ACCURACY.md)."""
        return {"shingles": f"word:{shingles}", "threshold": 0.2}

    # datasketch is imported on first use, never at start: it imports scipy (large and
    # slow to import), which a crawl that never checks a page should not pay for. Only a
    # banding that is not in _BANDINGS needs it, asked of one worker: the crawler process
    # adopts what it computed. Signatures need only the permutations (drawn in _affine).

    def prepared(self) -> tuple[int, int]:
        """(bands, rows): the banding datasketch's ``MinHashLSH`` chooses for the threshold,
        the number of permutations and the weights (or the ``bands`` given)."""
        if self._banding is None:
            from datasketch import MinHashLSH

            lsh = MinHashLSH(threshold=self.threshold, num_perm=self.num_perm, **self._lsh_args)
            self.adopt((lsh.b, lsh.r))
        assert self._banding is not None
        return self._banding

    def adopt(self, banding: tuple[int, int]) -> None:
        """Use the banding :meth:`prepared` computed in another process (a worker)."""
        if self._banding is None:
            bands, rows = banding
            self._ranges = [(i * rows, (i + 1) * rows) for i in range(bands)]
            self._banding = (bands, rows)

    def _affine(self) -> tuple[np.ndarray, np.ndarray]:
        """The permutations of datasketch's ``MinHash(num_perm, seed, scheme="affine32")``,
        drawn once, here, the way datasketch 2 draws them (the tests hold them to its own).

        Not taken from datasketch, which only the workers would import for them: ``import
        datasketch`` pulls in scipy, costly in time and memory in every worker before its
        first page. Drawn here, they also stay what saved signatures were
        made with, whatever a later datasketch draws."""
        if self._permutations is None:
            gen = np.random.RandomState(self.seed)
            odd = gen.randint(0, 1 << 31, self.num_perm, dtype=np.uint32)
            a = odd * np.uint32(2) + np.uint32(1)  # odd: a bijection modulo 2**32
            b = gen.randint(0, 1 << 32, self.num_perm, dtype=np.uint32)
            self._permutations = (a, b)
        return self._permutations

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
            "scheme": _SCHEME,
            "token_hash": TOKEN_HASH,
        }

    def signature(self, doc: Document) -> np.ndarray:
        """``MinHash(num_perm, seed, scheme="affine32", hashfunc=low 32 bits of the shingle
        hash).update_batch(shingles).hashvalues``, without the per-value Python calls."""
        shingles = doc.shingles(self.shingles)
        if len(shingles) == 0:
            return np.full(self.num_perm, _EMPTY, dtype=np.uint32)
        a, b = self._affine()
        mixed = _fmix32((shingles & _LOW32).astype(np.uint32))
        # Multiplication and addition wrap modulo 2**32, which is the affine32 permutation.
        permuted = np.multiply.outer(mixed, a)
        permuted += b
        return permuted.min(axis=0)

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        return [
            xxhash.xxh3_64_intdigest(signature[start:end].tobytes(), seed=band)
            for band, (start, end) in enumerate(self._ranges or self._ranges_now())
        ]

    def _ranges_now(self) -> list[tuple[int, int]]:
        self.prepared()
        return self._ranges

    def estimate(self, a: np.ndarray, b: np.ndarray) -> float:
        """The same estimator as ``MinHash.jaccard``, without building two MinHash objects."""
        return float(np.count_nonzero(a == b)) / self.num_perm

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        estimate = self.estimate(a, b)
        return estimate if estimate >= self.threshold else None

    def encode(self, signature: np.ndarray) -> bytes:
        return signature.astype("<u4", copy=False).tobytes()

    def decode(self, data: bytes) -> np.ndarray:
        if len(data) != 4 * self.num_perm:
            raise ValueError(
                f"minhash signature must be {4 * self.num_perm} bytes, got {len(data)}"
            )
        return np.frombuffer(data, dtype="<u4").astype(np.uint32)
