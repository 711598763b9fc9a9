"""The shared backend suite (tests/backend_suite.py) over the first four backends; each later
backend runs it from its own module (tests/test_backend_<name>.py)."""

from __future__ import annotations

from backend_suite import BackendSuite


class TestExact(BackendSuite):
    name = "exact"
    crawl_demo = False  # tests/test_crawl.py

    def variant(self, text: str) -> str:
        return "  " + text.upper().replace(" ", "\n")  # equal after normalisation


class TestSimHash(BackendSuite):
    name = "simhash"
    other_params = {"k": 4}
    crawl_demo = False


class TestMinHash(BackendSuite):
    name = "minhash"
    other_params = {"threshold": 0.5}
    crawl_demo = False


class TestSpotSigs(BackendSuite):
    name = "spotsigs"
    other_params = {"chain": 3}
    crawl_demo = False
