"""Broder's super-shingles (1997, 2000) over the ``minhash`` backend's min-hash values.

The min-hash values of :class:`MinHashBackend` are cut into ``groups``, each hashed into a
super-shingle; a bucket per combination of ``b`` super-shingles ("megashingles") makes every
pair agreeing on ``b`` of them share a bucket. Rationale: ``docs/design.md#supershingles``.
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Any

import numpy as np

from scrapy_neardup.backends.base import ArrayBackend, band_keys
from scrapy_neardup.backends.minhash import MinHashBackend
from scrapy_neardup.text import TOKEN_HASH, Document, ShingleSpec

_EMPTY_MINHASH = np.uint32(0xFFFFFFFF)  # what MinHash gives an empty shingle set
_MAX_BUCKETS = 1024


class SuperShinglesBackend(ArrayBackend):
    """``groups`` super-shingles of ``num_perm`` min-hashes; a match shares at least ``b``."""

    name = "supershingles"

    def __init__(
        self,
        num_perm: int = 84,
        groups: int = 14,
        b: int = 2,
        shingles: str | ShingleSpec = "word:3",
        seed: int = 1,
    ) -> None:
        divides = 1 <= groups <= num_perm and num_perm % groups == 0
        self.require(divides, f"groups must divide num_perm ({num_perm}), got {groups}")
        self.require(1 <= b <= groups, f"b must be 1..groups ({groups}), got {b}")
        buckets = f"{comb(groups, b)} buckets per document (at most {_MAX_BUCKETS})"
        self.require(comb(groups, b) <= _MAX_BUCKETS, f"groups={groups}, b={b} gives {buckets}")
        # MinHashBackend validates num_perm and shingles; its threshold and banding are unused.
        self.minhash = MinHashBackend(num_perm=num_perm, shingles=shingles, seed=seed)
        self.num_perm = num_perm
        self.groups = self.size = groups
        self.b = b
        self._combinations = [list(c) for c in combinations(range(groups), b)]

    def params(self) -> dict[str, Any]:
        return {
            "num_perm": self.num_perm,
            "groups": self.groups,
            "b": self.b,
            "shingles": str(self.minhash.shingles),
            "seed": self.minhash.seed,
            "scheme": "affine32",
            "token_hash": TOKEN_HASH,
            "hash": "xxh3_64",
        }

    def signature(self, doc: Document) -> np.ndarray:
        """The ``groups`` super-shingles (uint64); all zero, never matched, for a text without
        shingles."""
        values = self.minhash.signature(doc)
        if (values == _EMPTY_MINHASH).all():
            return np.zeros(self.groups, dtype=np.uint64)
        rows = values.astype("<u4", copy=False).reshape(self.groups, -1)
        return np.array(band_keys(row.tobytes() for row in rows), dtype=np.uint64)

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        if not signature.any():
            return []
        return band_keys(signature[chosen].astype("<u8").tobytes() for chosen in self._combinations)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        k = int(np.count_nonzero(a == b)) if a.any() and b.any() else 0
        return (k / self.groups) ** (self.groups / self.num_perm) if k >= self.b else None
