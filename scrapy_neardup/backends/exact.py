"""Exact content hashing: byte-for-byte and full-content duplicates for almost nothing."""

from __future__ import annotations

from typing import Any

import xxhash

from scrapy_neardup.backends.base import Backend
from scrapy_neardup.text import Document


class ExactBackend(Backend):
    """128-bit xxh3 hash of the normalised text; one bucket, equality is the only match."""

    name = "exact"

    def params(self) -> dict[str, Any]:
        return {"hash": "xxh3_128", "normalize": "nfkc-casefold-space"}

    def signature(self, doc: Document) -> bytes:
        return xxhash.xxh3_128_digest(doc.normalized.encode("utf-8", "surrogatepass"))

    def bucket_keys(self, signature: bytes) -> list[int]:
        return [int.from_bytes(signature[:8], "little")]

    def similarity(self, a: bytes, b: bytes) -> float | None:
        return 1.0 if a == b else None

    def encode(self, signature: bytes) -> bytes:
        return signature

    def decode(self, data: bytes) -> bytes:
        return self.sized(data, 16)
