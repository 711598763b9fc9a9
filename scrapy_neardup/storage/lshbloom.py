"""An index after LSHBloom (Khan et al. 2024, arXiv 2411.04257), for very large crawls.

Promises: only whether a MinHash band's hash was met is kept (one scalable Bloom filter of
(band, hash) pairs), plus the signatures of a window of recent documents, so that candidates
in the window are verified as in any index; a band hit outside the window names no document
and keeps the page, counted as unverified. Memory-only, MinHash only.
Rationale: ``docs/design.md#lshbloom``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from xxhash import xxh3_128_digest

from scrapy_neardup.backends.base import Backend, Query
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.memory import MemoryBucketStore

#: Documents verified against, by default: their keys and buckets in memory, their
#: signatures in the store's temporary file (costs: docs/design.md#lshbloom).
DEFAULT_WINDOW = 100_000
#: False-positive rate of the band filter, by default (the paper's order of magnitude).
DEFAULT_ERROR_RATE = 1e-5
#: The band filter's first stage, in bands (later stages double).
FIRST_STAGE = 1 << 20


class LSHBloomStore:
    """A BucketStore whose buckets are a Bloom filter, verified in a window of recent ones."""

    def __init__(
        self,
        codec: Backend | None = None,
        window: int = DEFAULT_WINDOW,
        error_rate: float = DEFAULT_ERROR_RATE,
    ) -> None:
        self._codec = codec
        self.window = window
        self.bloom = ScalableBloomFilter(FIRST_STAGE, error_rate)
        self._newer = MemoryBucketStore(codec=codec)
        self._older = MemoryBucketStore(codec=codec)
        self._count = 0
        #: Documents kept although their bands were met before (no verified match in the
        #: window): copies of older pages, or the filter's false positives.
        self.unverified = 0
        self._lock = threading.Lock()

    def _stores(self) -> list[MemoryBucketStore]:
        return [self._newer, self._older]

    def _query(self, query: Query) -> tuple[list[tuple[str, float]], bool]:
        """The matches, and whether any page of the window was a candidate at all."""
        seen: list[str] = []

        def counted(key: str, other: Any) -> float | None:
            seen.append(key)
            return query.verify(key, other)

        matches: list[tuple[str, float]] = []
        for store in self._stores():
            matches += store.query(replace(query, verify=counted))
        return matches, bool(seen)

    def query(self, query: Query) -> list[tuple[str, float]]:
        with self._lock:
            return self._query(query)[0]

    def query_and_add(self, key: str, query: Query) -> list[tuple[str, float]]:
        with self._lock:
            matches, verified = self._query(query)
            if not matches and self._add(key, query.signature, query.buckets) and not verified:
                self.unverified += 1  # its bands were met, by no page of the window: kept
            return matches

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        with self._lock:
            self._add(key, signature, buckets)

    def _add(self, key: str, signature: Any, buckets: list[int]) -> bool:
        """Adds; returns whether a band of it was met before."""
        met = False
        # Excerpt keys (backends/excerpts.py) find parts of the window's pages only: two
        # pages that share a paragraph are no copies, so their keys are no bands met.
        skip = set(self._codec.excerpt_keys(signature)) if self._codec is not None else set()
        for bucket in buckets:  # as the 16 bytes the Bloom filter's double hashing takes
            if bucket not in skip:
                met = self.bloom.add(xxh3_128_digest(bucket.to_bytes(8, "little"))) or met
        if len(self._newer) * 2 >= self.window:
            self._older, self._newer = self._newer, MemoryBucketStore(codec=self._codec)
        self._newer.add(key, signature, buckets)
        self._count += 1
        return met

    def items(self) -> Iterator[tuple[str, Any]]:
        """The window's documents, oldest first."""
        for store in reversed(self._stores()):
            yield from store.items()

    def __contains__(self, key: str) -> bool:
        """Whether ``key`` is in the window (of the older ones, only the bands are kept)."""
        with self._lock:
            return any(key in store for store in self._stores())

    def __len__(self) -> int:
        """Documents added, the window's and the older ones."""
        return self._count

    @property
    def size_in_bytes(self) -> int:
        return self.bloom.size_in_bytes


__all__ = ["DEFAULT_ERROR_RATE", "DEFAULT_WINDOW", "LSHBloomStore"]
