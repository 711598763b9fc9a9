"""In-process storage: plain dicts, the default and the fastest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy_neardup.algorithms.base import Verifier


class MemoryBucketStore:
    """Buckets of keys and each key's signature, in dicts.

    Atomic by construction: the crawler calls it from one thread (the reactor's). Almost every
    bucket holds one key, so such a bucket is the key itself, not a one-element list: that
    saves about 60 bytes per bucket, and a document has 10 (SimHash) to 25 (MinHash) of them.
    """

    def __init__(self) -> None:
        self._buckets: dict[int, str | list[str]] = {}
        self._signatures: dict[str, Any] = {}

    def _size(self, bucket: int) -> int:
        found = self._buckets.get(bucket)
        return 0 if found is None else 1 if isinstance(found, str) else len(found)

    def query(
        self, signature: Any, buckets: list[int], verify: Verifier, probe: int | None = None
    ) -> list[tuple[str, float]]:
        if probe is not None and probe < len(buckets):
            buckets = sorted(buckets, key=self._size)[:probe]
        matches: list[tuple[str, float]] = []
        seen: set[str] = set()
        for bucket in buckets:
            found = self._buckets.get(bucket)
            if found is None:
                continue
            for key in (found,) if isinstance(found, str) else found:
                if key in seen:
                    continue
                seen.add(key)
                similarity = verify(key, self._signatures[key])
                if similarity is not None:
                    matches.append((key, similarity))
        return matches

    def query_and_add(
        self,
        key: str,
        signature: Any,
        buckets: list[int],
        verify: Verifier,
        probe: int | None = None,
    ) -> list[tuple[str, float]]:
        matches = self.query(signature, buckets, verify, probe)
        if not matches:
            self.add(key, signature, buckets)
        return matches

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        if key in self._signatures:
            return
        self._signatures[key] = signature
        for bucket in buckets:
            found = self._buckets.get(bucket)
            if found is None:
                self._buckets[bucket] = key
            elif isinstance(found, str):
                self._buckets[bucket] = [found, key]
            else:
                found.append(key)

    def items(self) -> Iterator[tuple[str, Any]]:
        return iter(self._signatures.items())

    def __contains__(self, key: str) -> bool:
        return key in self._signatures

    def __len__(self) -> int:
        return len(self._signatures)
