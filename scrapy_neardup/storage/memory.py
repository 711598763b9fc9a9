"""In-process storage: plain dicts, the default and the fastest."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy_neardup.algorithms.base import Verifier


class MemoryBucketStore:
    """Buckets of keys and each key's signature, in dicts.

    Atomic by construction: the crawler calls it from one thread (the reactor's).
    """

    def __init__(self) -> None:
        self._buckets: dict[int, list[str]] = {}
        self._signatures: dict[str, Any] = {}

    def query(
        self, signature: Any, buckets: list[int], verify: Verifier
    ) -> list[tuple[str, float]]:
        matches: list[tuple[str, float]] = []
        seen: set[str] = set()
        for bucket in buckets:
            for key in self._buckets.get(bucket, ()):
                if key in seen:
                    continue
                seen.add(key)
                similarity = verify(self._signatures[key])
                if similarity is not None:
                    matches.append((key, similarity))
        return matches

    def query_and_add(
        self, key: str, signature: Any, buckets: list[int], verify: Verifier
    ) -> list[tuple[str, float]]:
        matches = self.query(signature, buckets, verify)
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
                self._buckets[bucket] = [key]
            else:
                found.append(key)

    def items(self) -> Iterator[tuple[str, Any]]:
        return iter(self._signatures.items())

    def __contains__(self, key: str) -> bool:
        return key in self._signatures

    def __len__(self) -> int:
        return len(self._signatures)
