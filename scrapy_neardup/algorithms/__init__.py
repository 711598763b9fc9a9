"""Near-duplicate methods: pure signature maths, chosen by name."""

from __future__ import annotations

from typing import Any

from scrapy_neardup.algorithms.base import BucketStore, Match, Method
from scrapy_neardup.algorithms.cosine import CosineMethod
from scrapy_neardup.algorithms.exact import ExactMethod
from scrapy_neardup.algorithms.imatch import IMatchMethod
from scrapy_neardup.algorithms.minhash import MinHashMethod
from scrapy_neardup.algorithms.sentences import SentencesMethod
from scrapy_neardup.algorithms.simhash import SimHashMethod
from scrapy_neardup.algorithms.spotsigs import SpotSigsMethod
from scrapy_neardup.algorithms.supershingles import SuperShinglesMethod

#: The method used where none is named: ``Deduplicator()``, ``NEARDUP_BACKEND`` and
#: ``neardup dedupe`` all read this one constant, so they cannot drift apart.
DEFAULT_METHOD = "minhash"

METHODS: dict[str, type] = {
    "exact": ExactMethod,
    "simhash": SimHashMethod,
    "minhash": MinHashMethod,
    "spotsigs": SpotSigsMethod,
    "imatch": IMatchMethod,
    "supershingles": SuperShinglesMethod,
    "sentences": SentencesMethod,
    "cosine": CosineMethod,
}


def make_method(name: str, **params: Any) -> Method:
    """The method called ``name`` with ``params``; a clear error for unknown names."""
    try:
        cls = METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown near-duplicate method {name!r}; choose one of {sorted(METHODS)}"
        ) from None
    return cls(**params)


__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "BucketStore",
    "CosineMethod",
    "ExactMethod",
    "IMatchMethod",
    "Match",
    "Method",
    "MinHashMethod",
    "SentencesMethod",
    "SimHashMethod",
    "SpotSigsMethod",
    "SuperShinglesMethod",
    "make_method",
]
