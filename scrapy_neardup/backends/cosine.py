"""Cosine similarity by random projection (Charikar, "Similarity estimation techniques from
rounding algorithms", STOC 2002).

A document is a vector of word 2-shingle weights, sublinear term frequency ``1 + ln tf``. It
is projected onto ``bits`` random Gaussian hyperplanes and each bit is the sign of one
projection: two vectors at angle theta differ in a bit with probability theta / pi, so ``d``
differing bits of ``bits`` estimate the cosine as ``cos(pi * d / bits)``. :func:`cosine` gives
the exact cosine of two documents' vectors (for tests, and as a verification measure other
backends can use).

Hyperplanes: a feature's components are four 16-bit uniforms per splitmix64 output of its
hash, each looked up in a table of normal quantiles, so they are Gaussian (to 16 bits) and need
no storage; the projection is one matrix product per chunk of features. ±1 components tie
(a sum of ±1 with equal weights is exactly 0 for about 1 / sqrt(n) of the hyperplanes), which
biases the estimate on short texts.

Features, by the exact cosine on the evaluation corpus (``evaluation/``, text after
extraction; unrelated pairs: 99th percentile and max, English / Chinese): word unigram tf
0.80 / 0.94 and 0.62 / 0.89 (function words make unrelated pages alike); unigram 1 + ln tf
0.46 / 0.76 and 0.37 / 0.81; bigram tf 0.15 / 0.63 and 0.13 / 0.75; bigram 1 + ln tf 0.10 /
0.63 and 0.17 / 0.77; trigrams keep unrelated pages lower but copies too (10%-edited
reprints at 0.75). Bigrams with sublinear tf have the lowest English tail; raw tf caught a few
more edited reprints (0.82 against 0.72 at 10 % edits) with the same precision here.

Threshold 0.8: the highest unrelated pair is at 0.77 (two Chinese pages of one site's heavy
template; 0.63 in English), and at 0.65-0.7 that pair was matched (one false drop). With
every pair at cosine >= 0.7 a candidate, the estimate at 0.8 gave precision 1.0, no false
drops, recall (full-content, partial add/drop/reorder/lead-ads, reprint 1/5/10/20 %) of
0.95, 0.94/0.94/0.98/0.98, 0.94/0.87/0.72/0.03 in English; 0.9 would give 0.83,
0.77/0.57/0.94/0.82, 0.82/0.52/0.03/0.01.

Candidate search: ``bands`` bands of ``rows`` bits, the band index as the hash seed. Pairs
of nonnegative vectors never stand at more than 90 degrees, so unrelated pages agree on half
the bits and each bit dropped from a band doubles their collisions: a cosine LSH needs many
long bands. :func:`optimal_bands` takes the fewest rows that keep a query among 100k random
signatures to 10 candidates, then the fewest bands that find a pair at the target cosine with
probability 0.99. At 0.8 that is 1126 bands of 24 bits (27k bits per document), so the bands
aim at ``BAND_COSINE`` = 0.9 instead: 100 bands of 20 bits (9.5 expected candidates among
100k unrelated signatures, 95 at 1M), which find a pair at 0.9 with probability 0.99, at 0.85
with 0.87 and at 0.8 with 0.64. Those 2000 bits are stored anyway, so all 2048 (256 bytes)
serve the estimate: its standard deviation at cosine 0.8 is 0.017 against 0.05 with 256 bits.
With these bands, recall at 0.8 is 0.94, 0.93/0.91/0.98/0.96, 0.94/0.86/0.57/0.03 in English
(0.93, 0.93/0.90/0.93/0.93, 0.90/0.90/0.60/0.00 in Chinese, the rest short pages), precision
1.0, no false drops. ``bands=(256, 8)`` finds nearly every pair at 0.7 at the price of many
more candidates.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any

import numpy as np
import xxhash

from scrapy_neardup.text import TOKEN_HASH, Document, ShingleSpec

WEIGHTINGS = ("tf", "log", "binary")
BAND_COSINE = 0.9  # bands find pairs at this cosine (or the threshold, if higher) w.p. 0.99
_EPSILON = 1e-9  # float equality at the threshold
_CHUNK = 512  # features projected at a time: bounds the (features x bits) matrix

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SM1 = np.uint64(0xBF58476D1CE4E5B9)
_SM2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output function (Steele, Lea and Flood 2014): a bijective 64-bit mixer."""
    x = (x ^ (x >> np.uint64(30))) * _SM1
    x = (x ^ (x >> np.uint64(27))) * _SM2
    return x ^ (x >> np.uint64(31))


@lru_cache(maxsize=1)
def _gaussian_table() -> np.ndarray:
    """The standard normal quantiles of the 65536 midpoints ``(k + 0.5) / 65536``: a 16-bit
    uniform looked up here is a Gaussian draw (to 16 bits), without a log or a cosine."""
    inv = NormalDist().inv_cdf
    return np.array([inv((k + 0.5) / 65536) for k in range(65536)], dtype=np.float32)


def term_vector(
    doc: Document, shingles: ShingleSpec, weighting: str = "log"
) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique feature hashes, their weights) of ``doc``: the vector whose angle the
    signature estimates."""
    features, counts = np.unique(doc.shingles(shingles), return_counts=True)
    if weighting == "tf":
        weights = counts.astype(np.float64)
    elif weighting == "log":
        weights = 1.0 + np.log(counts)
    elif weighting == "binary":
        weights = np.ones(len(counts))
    else:
        raise ValueError(f"cosine weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    return features, weights


def cosine(
    a: Document, b: Document, shingles: str | ShingleSpec = "word:2", weighting: str = "log"
) -> float:
    """The exact cosine similarity of two documents' term vectors (0.0 when either is empty):
    what the signatures estimate, and a verification measure any backend can use."""
    spec = ShingleSpec.parse(shingles)
    fa, wa = term_vector(a, spec, weighting)
    fb, wb = term_vector(b, spec, weighting)
    if len(fa) == 0 or len(fb) == 0:
        return 0.0
    _, ia, ib = np.intersect1d(fa, fb, assume_unique=True, return_indices=True)
    dot = float(np.dot(wa[ia], wb[ib]))
    return dot / math.sqrt(float(np.dot(wa, wa)) * float(np.dot(wb, wb)))


def projections(features: np.ndarray, weights: np.ndarray, bits: int, seed: int) -> np.ndarray:
    """``weights @ H`` for the ``bits`` Gaussian hyperplanes ``H`` (one row per feature).

    Row ``f`` of ``H`` is a function of the feature hash alone: splitmix64 of
    ``hash + seed + (k + 1) * golden`` for ``k < bits / 4`` gives 64 bits, cut into four
    16-bit uniforms, each mapped to a normal quantile. So two documents sharing a feature
    project it on the same hyperplanes, and nothing is stored but the table of quantiles."""
    table = _gaussian_table()
    words = bits // 4
    steps = (np.arange(1, words + 1, dtype=np.uint64) * _GOLDEN)[None, :]
    base = features.astype(np.uint64) + np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    out = np.zeros(bits, dtype=np.float64)
    with np.errstate(over="ignore"):
        for start in range(0, len(features), _CHUNK):
            mixed = _splitmix64(base[start : start + _CHUNK, None] + steps)
            # little-endian 16-bit pieces on every platform, so signatures are portable
            uniforms = mixed.astype("<u8", copy=False).view("<u2")
            out += weights[start : start + _CHUNK].astype(np.float32) @ np.take(table, uniforms)
    return out


def collision_probability(cos: float) -> float:
    """P(one hyperplane bit agrees) for two vectors of cosine ``cos``: 1 - theta / pi."""
    return 1.0 - math.acos(max(-1.0, min(1.0, cos))) / math.pi


def band_recall(cos: float, bands: int, rows: int) -> float:
    """P(two vectors of cosine ``cos`` agree on all ``rows`` bits of at least one band)."""
    return 1.0 - (1.0 - collision_probability(cos) ** rows) ** bands


def optimal_bands(
    threshold: float, recall: float = 0.99, population: int = 100_000, candidates: float = 10.0
) -> tuple[int, int]:
    """(bands, rows): the fewest bands that find a pair at ``threshold`` with probability
    ``recall`` while a query verifies at most ``candidates`` of ``population`` unrelated
    signatures (cosine 0, so each bit agrees with probability 1/2) on average.

    Fewer rows per band would need fewer bands for the recall, but let in twice as many
    unrelated signatures per row dropped; so the rows are the fewest that meet the candidate
    budget, and the bands the fewest that then meet the recall."""
    p = collision_probability(threshold)
    for rows in range(1, 64):
        bands = math.ceil(math.log(1.0 - recall) / math.log1p(-(p**rows)))
        if population * bands * 0.5**rows <= candidates:
            return bands, rows
    raise ValueError(f"cosine threshold {threshold} is too low for banding")  # pragma: no cover


class CosineBackend:
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
        # Any threshold in (0, 1): it is the "similar" decision's default cosine over the
        # candidates, which the bands find at max(threshold, BAND_COSINE) (below 0.9, at
        # the recall band_recall gives: give ``bands`` for more)
        if isinstance(threshold, bool) or not 0.0 < threshold < 1.0:
            raise ValueError(f"cosine threshold must be in (0, 1), got {threshold}")
        if weighting not in WEIGHTINGS:
            raise ValueError(f"cosine weighting must be one of {WEIGHTINGS}, got {weighting!r}")
        banding = optimal_bands(max(threshold, BAND_COSINE)) if bands is None else tuple(bands)
        if len(banding) != 2 or not all(isinstance(v, int) and v >= 1 for v in banding):
            raise ValueError(f"cosine bands must be (bands, rows) of positive ints, got {bands}")
        if banding[1] > 64:
            raise ValueError(f"cosine bands can have at most 64 rows, got {banding[1]}")
        needed = banding[0] * banding[1]
        if bits is None:
            bits = max(256, -(-needed // 64) * 64)
        if not 64 <= bits <= 8192 or bits % 64:
            raise ValueError(f"cosine bits must be a multiple of 64 in 64..8192, got {bits}")
        if needed > bits:
            raise ValueError(f"cosine bands {banding} need {needed} bits, more than bits={bits}")
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
        """The hyperplane bits as one integer, bit ``i`` set when projection ``i`` is positive.
        0 for a document without features: every projection is 0 (a real document has all
        of its ``bits`` projections non-positive with probability 2**-bits)."""
        features, weights = term_vector(doc, self.shingles, self.weighting)
        if len(features) == 0:
            return 0
        positive = projections(features, weights, self.bits, self.seed) > 0
        return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")

    def bucket_keys(self, signature: int) -> list[int]:
        if signature == 0:
            return []
        rows, mask = self.rows, self._mask
        return [
            xxhash.xxh3_64_intdigest(
                ((signature >> (band * rows)) & mask).to_bytes(8, "little"), seed=band
            )
            for band in range(self.bands)
        ]

    def estimate(self, a: int, b: int) -> float:
        """cos(pi * d / bits) for ``d`` differing bits: Charikar's estimate of the cosine."""
        return math.cos(math.pi * (a ^ b).bit_count() / self.bits)

    def similarity(self, a: int, b: int) -> float | None:
        if a == 0 or b == 0:
            return None
        estimate = self.estimate(a, b)
        return estimate if estimate >= self.threshold - _EPSILON else None

    def encode(self, signature: int) -> bytes:
        return signature.to_bytes(self.bits // 8, "little")

    def decode(self, data: bytes) -> int:
        if len(data) != self.bits // 8:
            raise ValueError(f"cosine signature must be {self.bits // 8} bytes, got {len(data)}")
        return int.from_bytes(data, "little")
