"""The spotsigs backend: the contract suite, its spot chains, and its prefix filter against
brute force (every set with Jaccard >= threshold is found). Its languages:
``tests/test_spotsigs_languages.py``."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from backend_suite import PROPERTY, BackendSuite
from hypothesis import given
from hypothesis import strategies as st

from scrapy_neardup.backends import SpotSigsBackend
from scrapy_neardup.backends.base import Query
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document


class TestSpotSigs(BackendSuite):
    name = "spotsigs"
    other_params = {"chain": 3}
    crawl_demo = False


# -- SpotSigs --------------------------------------------------------------------------------


def test_spotsigs_english_chains() -> None:
    method = SpotSigsBackend()
    assert method.spots(Document("The quick brown fox jumps over the lazy dog.").tokens) == [
        ("the", "quick", "brown"),
        ("the", "lazy", "dog"),  # "over" is a stopword: skipped in chains
    ]
    # Antecedents followed by fewer than ``chain`` content words give no spot.
    assert method.spots(Document("It is said that the cat sat on a mat").tokens) == [
        ("it", "cat", "sat"),
        ("is", "cat", "sat"),
        ("said", "cat", "sat"),
        ("that", "cat", "sat"),
        ("the", "cat", "sat"),
    ]
    assert SpotSigsBackend(chain=1).spots(Document("the cat sat on a mat").tokens) == [
        ("the", "cat"),
        ("on", "mat"),
        ("a", "mat"),
    ]
    assert method.spots(Document("Navigation Home News Sports Weather").tokens) == []


def test_spotsigs_chinese_chains() -> None:
    method = SpotSigsBackend()
    assert method.spots(Document("我们的工作是在北京完成的。").tokens) == [
        ("我们", "工作", "北京"),
        ("的", "工作", "北京"),
        ("是", "北京", "完成"),
        ("在", "北京", "完成"),
    ]


def test_spotsigs_signature_is_sorted_unique_hashes() -> None:
    method = SpotSigsBackend()
    sig = method.signature(Document("the cat sat. the cat sat. the dog ran far"))
    assert sig.dtype == np.uint64
    assert len(sig) == 2  # "the cat sat" twice, "the dog ran"
    assert np.all(sig[:-1] < sig[1:])
    assert len(method.signature(Document("no spots here"))) == 0


def test_spotsigs_prefix_length() -> None:
    method = SpotSigsBackend(threshold=0.5)
    assert [method.prefix_length(n) for n in range(6)] == [0, 1, 2, 2, 3, 3]
    assert SpotSigsBackend(threshold=1.0).prefix_length(10) == 1
    assert len(method.bucket_keys(np.arange(10, dtype=np.uint64))) == 10  # posted under all
    assert method.probe_count(np.arange(10, dtype=np.uint64)) == 6


def test_spotsigs_does_not_read_the_lists_of_frequent_spots() -> None:
    """Spots every document has ("the united states") must not make every query verify the
    whole index: the shortest posting lists are probed first."""
    method = SpotSigsBackend(threshold=0.5)
    store = MemoryBucketStore()
    frequent = np.arange(1, 9, dtype=np.uint64)  # 8 spots shared by every document
    for i in range(200):
        rare = np.arange(1000 * (i + 1), 1000 * (i + 1) + 12, dtype=np.uint64)
        sig = np.union1d(frequent, rare)
        store.add(f"d{i}", sig, method.bucket_keys(sig))
    verified = []

    def query(sig: np.ndarray) -> list[tuple[str, float]]:
        def verify(_key: str, other: np.ndarray) -> float | None:
            verified.append(other)
            return method.similarity(sig, other)

        return store.query(Query(sig, method.bucket_keys(sig), verify, method.probe_count(sig)))

    assert query(np.union1d(frequent, np.arange(10**6, 10**6 + 12, dtype=np.uint64))) == []
    assert verified == []  # 20 spots, 11 probed: the 12 unseen ones come first
    # A real near-duplicate of d7 (8 frequent + 12 rare, 10 rare kept) is still found.
    found = query(np.union1d(frequent, np.arange(8000, 8010, dtype=np.uint64)))
    assert [key for key, _ in found] == ["d7"]
    assert len(verified) == 1


def _jaccard(a: set[int], b: set[int]) -> Fraction:
    return Fraction(len(a & b), len(a | b))


# Thresholds whose products with set sizes are exact in binary floating point for the sizes
# drawn here; see test_spotsigs_threshold_boundary_with_inexact_float for the others.
SPOTSIGS_THRESHOLDS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9)


@st.composite
def set_families(draw: st.DrawFn) -> tuple[float, list[set[int]]]:
    """A threshold and sets built around one base so that Jaccard lands near the threshold."""
    threshold = draw(st.sampled_from(SPOTSIGS_THRESHOLDS))
    rng = random.Random(draw(st.integers(0, 2**32)))
    size = draw(st.integers(1, 80))
    base = {rng.getrandbits(64) for _ in range(size)}
    sets = [base]
    for _ in range(draw(st.integers(1, 10))):
        fresh = draw(st.integers(0, size))
        target = threshold + draw(st.sampled_from((-0.1, -0.02, 0.0, 0.0, 0.02, 0.1)))
        # J(base, kept + fresh) = kept / (size + fresh) when fresh is outside base.
        kept = round(target * (size + fresh)) + draw(st.integers(-1, 1))
        kept = min(max(kept, 0), size)
        member = set(rng.sample(sorted(base), kept)) | {rng.getrandbits(64) for _ in range(fresh)}
        if member:
            sets.append(member)
    return threshold, sets


@PROPERTY
@given(set_families())
def test_spotsigs_prefix_filter_finds_exactly_the_sets_at_or_above_threshold(
    family: tuple[float, list[set[int]]],
) -> None:
    threshold, sets = family
    method = SpotSigsBackend(threshold=threshold, min_spots=1)  # the pruning, on sets of any size
    t = Fraction(str(threshold))
    signatures = [np.array(sorted(s), dtype=np.uint64) for s in sets]

    index = Index(method, MemoryBucketStore())
    for i, sig in enumerate(signatures):
        index.add(f"s{i}", sig)
    for i, probe in enumerate(sets):
        found = {m.key: m.similarity for m in index.query(signatures[i])}
        expected = {
            f"s{j}": _jaccard(probe, s) for j, s in enumerate(sets) if _jaccard(probe, s) >= t
        }
        assert set(found) == set(expected), (threshold, i)
        for key, sim in found.items():
            assert sim == pytest.approx(float(expected[key]))

    # query_and_add: a set is kept only when no kept set reaches the threshold with it.
    index = Index(method, MemoryBucketStore())
    kept: dict[str, set[int]] = {}
    for i, sig in enumerate(signatures):
        found = {m.key for m in index.query_and_add_signature(f"s{i}", sig)}
        assert found == {k for k, s in kept.items() if _jaccard(sets[i], s) >= t}
        if not found:
            kept[f"s{i}"] = sets[i]


def test_spotsigs_too_few_spots_never_match() -> None:
    """Pages in languages without the antecedents have a handful of spots: one shared line
    must not make two of them near-duplicates."""
    method = SpotSigsBackend()
    few = np.arange(1, 10, dtype=np.uint64)
    assert method.bucket_keys(few) == []
    assert method.similarity(few, few) is None
    enough = np.arange(1, 11, dtype=np.uint64)
    assert method.similarity(enough, enough) == 1.0


def test_spotsigs_empty_signatures_never_match() -> None:
    method = SpotSigsBackend()
    empty = np.empty(0, dtype=np.uint64)
    assert method.similarity(empty, empty) is None
    index = Index(method, MemoryBucketStore())
    assert index.query_and_add_signature("a", empty) == []
    assert index.query(empty) == []


def test_spotsigs_threshold_boundary_with_inexact_float() -> None:
    method = SpotSigsBackend(threshold=0.55)
    large = np.arange(1, 101, dtype=np.uint64) * np.uint64(7919)
    small = large[45:]  # a subset: Jaccard = 55 / 100 = 0.55 exactly
    index = Index(method, MemoryBucketStore())
    index.add("large", large)
    assert [m.key for m in index.query(small)] == ["large"]


def test_spotsigs_decodes_the_empty_set() -> None:
    method = SpotSigsBackend()
    assert len(method.decode(b"")) == 0
    assert method.bucket_keys(method.decode(b"")) == []
