"""The near-duplicate backends: pure signature maths, chosen by name in :data:`BACKENDS`.

Each backend turns a text into a signature and names the buckets a similar one shares; it
knows nothing of Scrapy or storage (docs/design.md#layers). Adding one: ``docs/design.md#backends``.
"""

from __future__ import annotations

from typing import Any

from scrapy_neardup.backends.base import Backend, BucketStore, Match
from scrapy_neardup.backends.cosine import CosineBackend
from scrapy_neardup.backends.exact import ExactBackend
from scrapy_neardup.backends.imatch import IMatchBackend
from scrapy_neardup.backends.minhash import MinHashBackend
from scrapy_neardup.backends.sentences import SentencesBackend
from scrapy_neardup.backends.simhash import SimHashBackend
from scrapy_neardup.backends.spotsigs import SpotSigsBackend
from scrapy_neardup.backends.supershingles import SuperShinglesBackend

#: The backend used where none is named: ``Deduplicator()``, ``NEARDUP_BACKEND`` and
#: ``neardup dedupe`` all read this one constant, so they cannot drift apart.
DEFAULT_BACKEND = "minhash"

BACKENDS: dict[str, type[Backend]] = {
    "exact": ExactBackend,
    "simhash": SimHashBackend,
    "minhash": MinHashBackend,
    "spotsigs": SpotSigsBackend,
    "imatch": IMatchBackend,
    "supershingles": SuperShinglesBackend,
    "sentences": SentencesBackend,
    "cosine": CosineBackend,
}


def make_backend(name: str, **params: Any) -> Backend:
    """The backend called ``name`` with ``params``; a clear error for unknown names."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown near-duplicate backend {name!r}; choose one of {sorted(BACKENDS)}"
        ) from None
    return cls(**params)


__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "Backend",
    "BucketStore",
    "CosineBackend",
    "ExactBackend",
    "IMatchBackend",
    "Match",
    "MinHashBackend",
    "SentencesBackend",
    "SimHashBackend",
    "SpotSigsBackend",
    "SuperShinglesBackend",
    "make_backend",
]
