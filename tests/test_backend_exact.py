"""The exact backend: the contract suite, and copies equal after normalisation only."""

from __future__ import annotations

from backend_suite import BackendSuite

from scrapy_neardup.backends import ExactBackend
from scrapy_neardup.text import Document


class TestExact(BackendSuite):
    name = "exact"
    crawl_demo = False  # tests/test_crawl.py

    def variant(self, text: str) -> str:
        return "  " + text.upper().replace(" ", "\n")  # equal after normalisation


# -- exact -----------------------------------------------------------------------------------


def test_exact_matches_normalised_copies_only() -> None:
    method = ExactBackend()
    a = method.signature(Document("The Harbour  Bridge\nreopens."))
    b = method.signature(Document("ｔｈｅ harbour bridge REOPENS."))
    c = method.signature(Document("The harbour bridge reopened."))
    assert method.similarity(a, b) == 1.0
    assert method.similarity(a, c) is None
    assert method.bucket_keys(a) == method.bucket_keys(b) != method.bucket_keys(c)
