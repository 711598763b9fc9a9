"""Where buckets, bits and signatures live. Chosen by a ``type`` name, as datasketch does."""

from __future__ import annotations

from scrapy_neardup.storage.memory import MemoryBucketStore

__all__ = ["MemoryBucketStore"]
