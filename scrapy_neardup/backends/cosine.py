"""Cosine similarity by random projection (Charikar, STOC 2002): the ``cosine`` backend.

A signature is ``bits`` signs of projections of a document's word 2-shingle vector onto
Gaussian hyperplanes derived from the features' hashes (nothing stored); ``d`` differing bits
estimate the cosine as ``cos(pi * d / bits)``. Rationale: ``docs/design.md#cosine``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np

from scrapy_neardup.backends.base import Backend, band_keys, splitmix64
from scrapy_neardup.text import TOKEN_HASH, Document, ShingleSpec

WEIGHTINGS = ("tf", "log", "binary")
BAND_COSINE = 0.9  # bands find pairs at this cosine (or the threshold, if higher) w.p. 0.99
_EPSILON = 1e-9  # float equality at the threshold
_CHUNK = 512  # features projected at a time: bounds the (features x bits) matrix
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@lru_cache(maxsize=1)
def _gaussian_table() -> np.ndarray:
    """The standard normal quantiles of the 65536 midpoints ``(k + 0.5) / 65536``: a 16-bit
    uniform looked up here is a Gaussian draw (to 16 bits), without a log or a cosine."""
    inv = NormalDist().inv_cdf
    return np.array([inv((k + 0.5) / 65536) for k in range(65536)], dtype=np.float32)


def term_vector(
    doc: Document, shingles: ShingleSpec, weighting: str = "log"
) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique feature hashes, their weights) of ``doc`` under one of
    :data:`WEIGHTINGS`: the vector whose angle with another the signatures estimate."""
    features, counts = np.unique(doc.shingles(shingles), return_counts=True)
    if weighting == "log":
        return features, 1.0 + np.log(counts)
    return features, counts.astype(np.float64) if weighting == "tf" else np.ones(len(counts))


def projections(features: np.ndarray, weights: np.ndarray, bits: int, seed: int) -> np.ndarray:
    """``weights @ H`` for the ``bits`` Gaussian hyperplanes ``H`` (one row per feature). Row
    ``f`` is a function of the feature hash alone: splitmix64 of ``hash + seed + (k + 1) *
    golden`` for ``k < bits / 4``, cut into 16-bit uniforms, each mapped to a normal quantile."""
    table = _gaussian_table()
    words = bits // 4
    steps = (np.arange(1, words + 1, dtype=np.uint64) * _GOLDEN)[None, :]
    base = features.astype(np.uint64) + np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    out = np.zeros(bits, dtype=np.float64)
    with np.errstate(over="ignore"):
        for start in range(0, len(features), _CHUNK):
            mixed = splitmix64(base[start : start + _CHUNK, None] + steps)
            # little-endian 16-bit pieces on every platform, so signatures are portable
            uniforms = mixed.astype("<u8", copy=False).view("<u2")
            out += weights[start : start + _CHUNK].astype(np.float32) @ np.take(table, uniforms)
    return out


def collision_probability(cos: float) -> float:
    """P(one hyperplane bit agrees) for two vectors of cosine ``cos``: 1 - theta / pi."""
    return 1.0 - math.acos(max(-1.0, min(1.0, cos))) / math.pi


def optimal_bands(
    threshold: float, recall: float = 0.99, population: int = 100_000, candidates: float = 10.0
) -> tuple[int, int]:
    """(bands, rows): the fewest rows whose bands let a query verify at most ``candidates``
    of ``population`` unrelated signatures (each bit agrees with probability 1/2) on average,
    and the fewest such bands that find a pair at ``threshold`` with probability ``recall``."""
    p = collision_probability(threshold)
    for rows in range(1, 64):
        bands = math.ceil(math.log(1.0 - recall) / math.log1p(-(p**rows)))
        if population * bands * 0.5**rows <= candidates:
            return bands, rows
    raise ValueError(f"cosine threshold {threshold} is too low for banding")  # pragma: no cover


class CosineBackend(Backend):
    """Random-hyperplane signatures of term vectors; a match is an estimated cosine of at
    least ``threshold``."""

    name = "cosine"

    def __init__(
        self,
        threshold: float = 0.8,
        shingles: str | ShingleSpec = "word:2",
        weighting: str = "log",
        bits: int | None = None,
        bands: tuple[int, int] | None = None,
        seed: int = 1,
    ) -> None:
        # The bands find pairs at max(threshold, BAND_COSINE): docs/design.md#cosine.
        valid = not isinstance(threshold, bool) and 0.0 < threshold < 1.0
        self.require(valid, f"threshold must be in (0, 1), got {threshold}")
        self.require(
            weighting in WEIGHTINGS, f"weighting must be one of {WEIGHTINGS}, got {weighting!r}"
        )
        banding = optimal_bands(max(threshold, BAND_COSINE)) if bands is None else tuple(bands)
        valid = len(banding) == 2 and all(isinstance(v, int) and v >= 1 for v in banding)
        self.require(valid, f"bands must be (bands, rows) of positive ints, got {bands}")
        self.require(banding[1] <= 64, f"bands can have at most 64 rows, got {banding[1]}")
        needed = banding[0] * banding[1]
        if bits is None:
            bits = max(256, -(-needed // 64) * 64)
        valid = 64 <= bits <= 8192 and bits % 64 == 0
        self.require(valid, f"bits must be a multiple of 64 in 64..8192, got {bits}")
        self.require(needed <= bits, f"bands {banding} need {needed} bits, more than bits={bits}")
        self.threshold = threshold
        self.shingles = ShingleSpec.parse(shingles)
        self.weighting = weighting
        self.bits = bits
        self.bands, self.rows = banding
        self.seed = seed
        self._mask = (1 << self.rows) - 1

    def params(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "shingles": str(self.shingles),
            "weighting": self.weighting,
            "bits": self.bits,
            "bands": self.bands,
            "rows": self.rows,
            "seed": self.seed,
            "hyperplanes": "splitmix64-gauss16",
            "token_hash": TOKEN_HASH,
        }

    def signature(self, doc: Document) -> int:
        """The hyperplane bits as one integer, bit ``i`` set when projection ``i`` is positive;
        0 (never matched) for a document without features."""
        features, weights = term_vector(doc, self.shingles, self.weighting)
        positive = projections(features, weights, self.bits, self.seed) > 0
        return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")

    def bucket_keys(self, signature: int) -> list[int]:
        if signature == 0:
            return []
        rows, mask = self.rows, self._mask
        return band_keys(
            ((signature >> (i * rows)) & mask).to_bytes(8, "little") for i in range(self.bands)
        )

    def estimate(self, a: int, b: int) -> float:
        """cos(pi * d / bits) for ``d`` differing bits: Charikar's estimate of the cosine."""
        return math.cos(math.pi * (a ^ b).bit_count() / self.bits)

    def similar_threshold(self) -> float:
        return self.threshold

    def similarity(self, a: int, b: int) -> float | None:
        if a == 0 or b == 0:
            return None
        estimate = self.estimate(a, b)
        return estimate if estimate >= self.threshold - _EPSILON else None

    def encode(self, signature: int) -> bytes:
        return signature.to_bytes(self.bits // 8, "little")

    def decode(self, data: bytes) -> int:
        return int.from_bytes(self.sized(data, self.bits // 8), "little")
