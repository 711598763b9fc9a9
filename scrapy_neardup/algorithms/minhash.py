"""MinHash-LSH on datasketch: its ``MinHash`` makes signatures, its ``MinHashLSH`` picks bands.

The banding (bucket = one band of ``r`` hash values) is the one ``MinHashLSH`` uses; the buckets
themselves live in this project's storage so that a query-then-add is atomic there (datasketch's
own storages are not, and its Redis storage pickles). Candidates from the bands are verified by
the estimated Jaccard similarity before they count as matches.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xxhash
from datasketch import MinHash, MinHashLSH

from scrapy_neardup.text import Document, ShingleSpec

_SCHEME = "affine32"
_LOW32 = np.uint64(0xFFFFFFFF)


def _identity(value: int) -> int:
    return value


class MinHashMethod:
    """Estimated Jaccard similarity of shingle sets; a match is at least ``threshold``."""

    name = "minhash"

    def __init__(
        self,
        threshold: float = 0.5,
        num_perm: int = 128,
        shingles: str | ShingleSpec = "word:3",
        bands: tuple[int, int] | None = None,
        weights: tuple[float, float] = (0.3, 0.7),
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
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=weights, params=bands)
        self.bands, self.rows = lsh.b, lsh.r
        self._ranges = lsh.hashranges
        # Permutations are drawn once; datasketch would redraw them for every MinHash.
        self._permutations = MinHash(num_perm=num_perm, seed=seed, scheme=_SCHEME).permutations

    def params(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "shingles": str(self.shingles),
            "bands": self.bands,
            "rows": self.rows,
            "seed": self.seed,
            "scheme": _SCHEME,
        }

    def signature(self, doc: Document) -> np.ndarray:
        shingles = np.unique(doc.shingles(self.shingles)) & _LOW32
        minhash = MinHash(
            seed=self.seed,
            hashfunc=_identity,
            permutations=self._permutations,
            scheme=_SCHEME,
        )
        minhash.update_batch(shingles.tolist())
        return minhash.hashvalues

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        return [
            xxhash.xxh3_64_intdigest(signature[start:end].tobytes(), seed=band)
            for band, (start, end) in enumerate(self._ranges)
        ]

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        # The same estimator as MinHash.jaccard, without building two MinHash objects.
        estimate = float(np.count_nonzero(a == b)) / self.num_perm
        return estimate if estimate >= self.threshold else None

    def encode(self, signature: np.ndarray) -> bytes:
        return signature.astype("<u4", copy=False).tobytes()

    def decode(self, data: bytes) -> np.ndarray:
        if len(data) != 4 * self.num_perm:
            raise ValueError(
                f"minhash signature must be {4 * self.num_perm} bytes, got {len(data)}"
            )
        return np.frombuffer(data, dtype="<u4").astype(np.uint32)
