"""The compact in-memory store against the dict store it replaced (kept here as the reference).

Results must be the same, in the same order: buckets in the order given (least filled first
with ``probe``), within a bucket the keys in insertion order, each key once. A tiny ``flush``
makes every few documents a sorted run, so runs, merges and crowded directory cells are all
exercised.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
import pytest

from scrapy_neardup.backends import make_backend
from scrapy_neardup.backends.base import Query
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.storage.memory import WIDE, MemoryBucketStore, _Growing
from scrapy_neardup.text import Document


class DictStore:
    """The previous MemoryBucketStore, reduced to its semantics."""

    def __init__(self) -> None:
        self.buckets: dict[int, list[str]] = {}
        self.signatures: dict[str, Any] = {}

    def query(self, buckets: list[int], verify: Any, probe: int | None) -> list[tuple[str, float]]:
        if probe is not None and probe < len(buckets):
            buckets = sorted(buckets, key=lambda b: len(self.buckets.get(b, ())))[:probe]
        out, seen = [], set()
        for bucket in buckets:
            for key in self.buckets.get(bucket, ()):
                if key not in seen:
                    seen.add(key)
                    similarity = verify(key, self.signatures[key])
                    if similarity is not None:
                        out.append((key, similarity))
        return out

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        if key not in self.signatures:
            self.signatures[key] = signature
            for bucket in buckets:
                self.buckets.setdefault(bucket, []).append(key)


def _verify_all(_key: str, other: Any) -> float:
    return float(np.asarray(other, dtype=np.float64).sum() % 97)


@pytest.mark.parametrize("seed", range(4))
def test_same_results_in_the_same_order_as_the_dict_store(seed: int) -> None:
    rng = random.Random(seed)
    store, reference = MemoryBucketStore(flush=rng.choice([1, 5, 40])), DictStore()
    # Few distinct buckets, some huge or negative, one very common: shared and crowded cells.
    universe = [rng.getrandbits(64) for _ in range(60)] + [0, 1, 2, -5, 2**64 - 1]
    for step in range(600):
        key = f"doc-{rng.randrange(500)}-é"
        buckets = [rng.choice(universe) for _ in range(rng.randrange(0, 6))] + [7]
        signature = np.array([rng.getrandbits(32) for _ in range(4)], dtype=np.uint32)
        probe = rng.choice([None, 1, 2, 10])
        if rng.random() < 0.5:
            store.add(key, signature, buckets)
            reference.add(key, signature, buckets)
        else:
            expected = reference.query(buckets, _verify_all, probe)
            assert store.query(Query(signature, buckets, _verify_all, probe)) == expected, step
        assert len(store) == len(reference.signatures)
        assert (key in store) == (key in reference.signatures)
    assert len(reference.buckets[7]) > WIDE  # the crowded-cell path ran
    items = list(store.items())
    assert [k for k, _ in items] == list(reference.signatures)
    for (_, got), want in zip(items, reference.signatures.values(), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_query_and_add_adds_only_when_nothing_matches() -> None:
    store = MemoryBucketStore(flush=2)
    assert store.query_and_add("a", Query(b"x", [1, 2], lambda k, s: None)) == []
    like_x = Query(b"y", [2, 3], lambda k, s: 0.9 if s == b"x" else None)
    assert store.query_and_add("b", like_x) == [("a", 0.9)]
    assert "a" in store and "b" not in store and len(store) == 1


@pytest.mark.parametrize(
    "signatures",
    [
        [np.arange(3, dtype=np.uint64), np.arange(5, dtype=np.uint64)],  # SpotSigs-like
        [b"\x00exact", b""],
        [12345678901234567890, 2**200],  # ints (SimHash, cosine)
        [np.arange(3, dtype=np.uint32), np.arange(2, dtype=np.uint64), "other"],  # mixed
    ],
)
def test_every_kind_of_signature_comes_back_equal(signatures: list[Any]) -> None:
    store = MemoryBucketStore(flush=1)
    for i, signature in enumerate(signatures):
        store.add(f"k{i}", signature, [i, 99])
    seen: list[Any] = []
    store.query(Query(None, [99], lambda k, s: seen.append(s)))
    for got in (seen, [s for _, s in store.items()]):
        assert len(got) == len(signatures)
        for a, b in zip(got, signatures, strict=True):
            assert type(a) is type(b)
            assert np.array_equal(a, b) if isinstance(b, np.ndarray) else a == b


def test_many_keys_grow_the_key_table_and_buffers() -> None:
    store = MemoryBucketStore()
    keys = [f"https://example.com/{i}" for i in range(5000)]
    for i, key in enumerate(keys):
        store.add(key, np.full(4, i, dtype=np.uint32), [i])
    store.add(keys[10], np.zeros(4, dtype=np.uint32), [10])  # present: ignored
    assert len(store) == 5000 and all(k in store for k in keys[::97])
    assert "https://example.com/5000" not in store
    found = store.query(Query(None, [10], lambda k, s: float(s[0])))
    assert found == [(keys[10], 10.0)]


def test_offsets_widen_past_four_gib_instead_of_wrapping() -> None:
    offsets = _Growing(np.uint32, 2)
    for value in (1, 2**32 - 1, 2**32 + 5):
        offsets.append(value)
    assert offsets.data.dtype == np.uint64 and offsets.data[: offsets.size].tolist() == [
        1,
        2**32 - 1,
        2**32 + 5,
    ]


def test_query_and_add_is_atomic_across_threads() -> None:
    """Two writers offering the same document: exactly one keeps it, every time."""
    method = make_backend("minhash")
    index = Index(method, MemoryBucketStore(flush=16))
    text = " ".join(f"word{i}" for i in range(300))
    signature = method.signature(Document(text))
    results: list[int] = []

    def writer(name: str) -> None:
        for i in range(200):
            results.append(len(index.query_and_add_signature(f"{name}-{i}", signature)))

    threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(index) == 1 and results.count(0) == 1


def test_verified_signatures_are_kept_on_disk_not_as_objects() -> None:
    """The engine's stores get the method as codec: a verified signature (the backend's and
    its phrase filter) goes to the store's signature file, and comes back whole to verify a
    candidate, whether it was written out yet or not."""
    from scrapy_neardup.deduplicator import Deduplicator

    words = [f"word{i}" for i in range(400)] + "the a is of was and to in".split() * 40
    rng = random.Random(3)
    texts = [" ".join(rng.choice(words) for _ in range(300)) for _ in range(30)]
    for backend in ("minhash", "spotsigs", "simhash"):
        dedup = Deduplicator(backend)
        for i, text in enumerate(texts):
            assert not dedup.check(f"https://a.org/{i}", text).is_duplicate
            if i == 14:
                dedup.near.store._file._write()  # half of them on disk, half in the tail
        store = dedup.near.store
        assert not store._objects and store._file is not None
        for i in (3, 14, 15, 29):
            verdict = dedup.check(f"https://c.org/{i}", texts[i] + " one more word")
            assert verdict.duplicate_of == f"https://a.org/{i}", backend


@pytest.mark.parametrize("fails", ["TemporaryFile", "write"])
def test_a_signature_file_that_cannot_be_written_keeps_them_in_memory(
    fails: str, monkeypatch, caplog
) -> None:
    """No temporary directory, or a full disk: logged once, and the store goes on with the
    signatures in memory; none written before is lost."""
    import errno
    import logging

    from scrapy_neardup.storage import signature_file

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    data = [bytes([i]) * 300 for i in range(60)]
    with caplog.at_level(logging.WARNING, logger="scrapy_neardup"):
        if fails == "TemporaryFile":
            monkeypatch.setattr(signature_file.tempfile, "TemporaryFile", broken)
        kept = signature_file.SignatureFile()
        ends = [kept.append(d) for d in data[:20]]
        kept._write()  # on disk, unless there is no file
        monkeypatch.setattr(signature_file.os, "write", broken)
        ends += [kept.append(d) for d in data[20:]]
        kept._write()
        kept._write()
    assert sum("signature file" in r.getMessage() for r in caplog.records) == 1
    for i, (start, end) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
        assert kept.read(start, end) == data[i]


def test_simhash_candidates_too_many_bits_away_are_never_read() -> None:
    """With SimHash as its codec, the store keeps each fingerprint and rejects a candidate
    more than k bits away before reading its signature; the near ones are verified."""
    from scrapy_neardup.backends import SimHashBackend

    method = SimHashBackend(k=3)
    store = MemoryBucketStore(codec=method)
    rng = random.Random(3)
    base = rng.getrandbits(64)
    low = (1 << 26) - 1  # every fingerprint below shares base's first two 13-bit blocks
    far = [(rng.getrandbits(64) & ~low) | (base & low) for _ in range(200)]
    for i, fp in enumerate(far):
        store.add(f"far{i}", fp, method.bucket_keys(fp))
    near = base ^ 0b101  # 2 bits away
    store.add("near", near, method.bucket_keys(near))
    read: list[str] = []

    def verify(key: str, other: int) -> float | None:
        read.append(key)
        return method.similarity(base, other)

    found = store.query(Query(base, method.bucket_keys(base), verify))
    assert found == [("near", method.similarity(base, near))]
    assert read == ["near"]  # the 200 sharing a bucket were rejected unread
