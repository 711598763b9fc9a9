"""Near-duplicate methods: pure signature maths, chosen by name."""

from __future__ import annotations

from typing import Any

from scrapy_neardup.algorithms.base import BucketStore, Match, Method
from scrapy_neardup.algorithms.exact import ExactMethod
from scrapy_neardup.algorithms.minhash import MinHashMethod
from scrapy_neardup.algorithms.simhash import SimHashMethod
from scrapy_neardup.algorithms.spotsigs import SpotSigsMethod

METHODS: dict[str, type] = {
    "exact": ExactMethod,
    "simhash": SimHashMethod,
    "minhash": MinHashMethod,
    "spotsigs": SpotSigsMethod,
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
    "METHODS",
    "BucketStore",
    "ExactMethod",
    "Match",
    "Method",
    "MinHashMethod",
    "SimHashMethod",
    "SpotSigsMethod",
    "make_method",
]
