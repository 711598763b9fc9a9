"""The contract every near-duplicate backend is held to, reused by subclassing.

A backend is one module under ``scrapy_neardup/backends/`` and one test module,
``tests/test_backend_<name>.py``, with::

    class TestMyBackend(BackendSuite):
        name = "mybackend"

which runs every test below against it (itsdangerous's habit: one base test class, a subclass
per backend), then the backend's own tests. The suite checks what the rest of the project
relies on: the name in ``BACKENDS`` and ``NEARDUP_BACKEND``, signatures that survive encoding,
a worker's pickling and saved state, copies found and first seen kept, different articles never
matched, the memory and a real Redis store deciding alike, and a real crawl with the add-on.
"""

from __future__ import annotations

import json
import pickle
import random
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, settings
from saved_state import resume

import corpus as C
from scrapy_neardup.backends import BACKENDS, Backend, make_backend
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator, Signed
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage import redis_client, redis_index
from scrapy_neardup.text import Document, normalize

#: Hypothesis settings of the backends' property tests against brute force.
PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: A short news text the backends' own tests sign.
TEXT = (
    "The old harbour bridge reopened on Monday after months of repairs, and the first buses "
    "crossed it before dawn. Engineers said that the steel had been replaced in the spring and "
    "that the new deck would last for decades. "
) * 3


def _originals(prefix: str) -> list[C.Sample]:
    return [s for s in C.synthetic_corpus().originals if s.key.startswith(prefix)]


def numbers_only(seed: int, count: int = 200) -> str:
    """A table of figures: many tokens, no words (a price list, a results page)."""
    rng = random.Random(seed)
    return " ".join(str(rng.randint(0, 10**6)) for _ in range(count))


class BackendSuite:
    """Subclass with ``name``; override the class attributes where a backend needs to."""

    name: ClassVar[str] = ""
    #: constructor arguments for the suite's method (the defaults when empty)
    params: ClassVar[dict[str, Any]] = {}
    #: parameters giving other signatures or buckets: their saved state must be refused
    other_params: ClassVar[dict[str, Any] | None] = None
    #: encodings ``decode`` must refuse with ValueError
    bad_encodings: ClassVar[list[bytes]] = [b"\x01\x02\x03"]
    #: False where tests/test_crawl.py already crawls the demo site with this backend
    crawl_demo: ClassVar[bool] = True

    def variant(self, text: str) -> str:
        """A copy the backend must find: the text as another extractor or site gives it
        (punctuation and line breaks changed, a word's case), not byte-equal after
        normalisation, so the exact hash does not decide for the backend."""
        out = text.replace(",", "").replace("，", "").replace("\n\n", "\n")
        return out + " ." if out == text else out

    # -- helpers --------------------------------------------------------------------------------

    def method(self, **params: Any) -> Backend:
        return make_backend(self.name, **{**self.params, **params})

    def dedup(self, **kwargs: Any) -> Deduplicator:
        return Deduplicator(self.method(), **kwargs)

    def documents(self) -> list[Document]:
        texts = [s.text for s in C.synthetic_corpus().originals[:12]]
        texts += ["", "word", numbers_only(1), "。".join(["中文"] * 40)]
        return [Document(t) for t in texts]

    # -- the name ---------------------------------------------------------------------------------

    def test_registered_under_its_name(self) -> None:
        assert self.name in BACKENDS
        method = make_backend(self.name)
        assert method.name == self.name
        assert isinstance(method, Backend)

    def test_selected_by_the_setting(self) -> None:
        config = NearDupConfig.from_settings({"NEARDUP_BACKEND": self.name})
        assert config.backend == self.name
        assert make_backend(config.backend, **config.backend_kwargs()).name == self.name

    def test_params_are_json_and_stable(self) -> None:
        params = self.method().params()
        assert json.loads(json.dumps(params)) == params
        assert self.method().params() == params

    # -- signatures ----------------------------------------------------------------------------

    def test_signatures_are_deterministic(self) -> None:
        a, b = self.method(), self.method()
        for doc in self.documents():
            assert a.encode(a.signature(doc)) == b.encode(b.signature(Document(doc.text)))

    def test_encoding_round_trip(self) -> None:
        method = self.method()
        for doc in self.documents():
            signature = method.signature(doc)
            data = method.encode(signature)
            assert isinstance(data, bytes)
            decoded = method.decode(data)
            assert method.encode(decoded) == data
            assert method.bucket_keys(decoded) == method.bucket_keys(signature)
            assert method.similarity(signature, decoded) == method.similarity(signature, signature)

    def test_decode_refuses_garbage(self) -> None:
        method = self.method()
        for bad in self.bad_encodings:
            with pytest.raises(ValueError):
                method.decode(bad)

    def test_bucket_keys_are_unsigned_64_bit_ints(self) -> None:
        method = self.method()
        for doc in self.documents():
            for key in method.bucket_keys(method.signature(doc)):
                assert isinstance(key, int)
                assert 0 <= key < 2**64

    def test_signed_documents_survive_a_workers_pickling(self) -> None:
        dedup = self.dedup()
        for doc in self.documents():
            signed = dedup.sign(doc)
            copy = pickle.loads(pickle.dumps(signed))
            assert copy.exact == signed.exact and copy.tokens == signed.tokens
            if signed.near is not None:
                assert dedup.near.method.encode(copy.near) == dedup.near.method.encode(signed.near)

    # -- decisions ---------------------------------------------------------------------------

    @pytest.mark.parametrize("language", ["syn-en", "syn-zh"])
    def test_a_copy_is_dropped_for_the_first_seen(self, language: str) -> None:
        for original in _originals(language)[:6]:
            copy = self.variant(original.text)
            if self.name != "exact":  # the exact method's copies are the normalised-equal ones
                assert normalize(copy) != normalize(original.text)
            dedup = self.dedup()
            assert not dedup.check("original", original.text).is_duplicate
            verdict = dedup.check("copy", copy)
            assert verdict.duplicate_of == "original", original.key
            assert verdict.method == self.name
            assert 0.0 < verdict.similarity <= 1.0
            assert dedup.clusters()["original"][0].key == "copy"

    def test_different_articles_are_all_kept(self) -> None:
        corpus = C.synthetic_corpus()
        dedup = self.dedup()
        for sample in corpus.originals:
            assert not dedup.check(sample.key, sample.text).is_duplicate, sample.key
        # different articles in one site's identical boilerplate
        wrapped = self.dedup()
        for sample in corpus.negatives:
            assert not wrapped.check(sample.key, sample.text).is_duplicate, sample.key

    def test_texts_without_words_are_not_matched(self) -> None:
        dedup = self.dedup()
        for seed in range(4):
            assert not dedup.check(f"table-{seed}", numbers_only(seed)).is_duplicate

    def test_short_documents_are_matched_exactly_only(self) -> None:
        dedup = self.dedup(min_tokens=1000)
        text = _originals("syn-en")[0].text
        assert not dedup.check("a", text).is_duplicate
        assert not dedup.check("b", BackendSuite.variant(self, text)).is_duplicate
        verdict = dedup.check("c", text.upper())
        assert (verdict.duplicate_of, verdict.method) == ("a", "exact")
        # the exact method has no near-duplicate stage for a document to be short of
        assert dedup.counts["short"] == (0 if self.name == "exact" else 3)

    # -- saved state ---------------------------------------------------------------------------

    def test_saved_state_gives_the_same_decisions(self) -> None:
        samples = [*C.synthetic_corpus().originals, *C.synthetic_corpus().variants]
        random.Random(3).shuffle(samples)
        samples = samples[:80]
        first = self.dedup()
        for sample in samples[:40]:
            first.check(sample.key, sample.text)
        second = resume(first, self.dedup())
        assert len(second) == len(first)
        assert second.clusters() == first.clusters()
        for sample in samples[40:]:
            assert second.check(sample.key, sample.text) == first.check(sample.key, sample.text)

    def test_state_of_other_parameters_is_refused(self) -> None:
        if self.other_params is None:
            pytest.skip(f"{self.name} has no parameter that changes its signatures")
        saved = self.dedup()
        saved.check("a", _originals("syn-en")[0].text)
        other = Deduplicator(self.method(**self.other_params))
        assert other.method.params() != saved.method.params()
        with pytest.raises(StateError):
            resume(saved, other)
        assert len(other) == 0

    # -- Redis -------------------------------------------------------------------------------

    def test_redis_store_decides_as_the_memory_store(self, redis_url: str) -> None:
        client = redis_client.connect(redis_url)
        client.flushdb()
        method = self.method()
        in_redis = Deduplicator(
            method,
            min_tokens=20,
            stores=lambda name, codec: redis_index.RedisBucketStore(client, "suite", name, codec),
        )
        in_memory = Deduplicator(self.method(), min_tokens=20)
        corpus = C.synthetic_corpus()
        samples = [*corpus.originals, *corpus.variants][:100]
        random.Random(1).shuffle(samples)
        for sample in samples:
            expected = in_memory.check(sample.key, sample.text)
            assert in_redis.check(sample.key, sample.text) == expected, sample.key
        assert len(in_redis) == len(in_memory)
        client.close()

    # -- a crawl ---------------------------------------------------------------------------------

    def test_crawl_with_the_addon_loses_nothing(self, site: Any, site_url: str, tmp_path) -> None:
        if not self.crawl_demo:
            pytest.skip("tests/test_crawl.py crawls the demo site with this backend")
        from test_crawl import assert_no_loss_no_wrong_drop, crawl

        result = crawl(site_url, tmp_path / "out.json", NEARDUP_BACKEND=self.name)
        assert_no_loss_no_wrong_drop(site, result)
        assert len(result["kept"]) + len(result["dropped"]) == 54 + 24
        assert "Traceback" not in result["stderr"]


__all__ = ["BackendSuite", "Signed", "numbers_only"]
