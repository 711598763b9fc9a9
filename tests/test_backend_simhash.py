"""The simhash backend: the contract suite, and its block index against brute force (every
stored fingerprint within ``k`` bits is found)."""

from __future__ import annotations

import random

import pytest
from backend_suite import PROPERTY, TEXT, BackendSuite
from hypothesis import given
from hypothesis import strategies as st

from scrapy_neardup.backends import SimHashBackend
from scrapy_neardup.backends.simhash import block_masks
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document


class TestSimHash(BackendSuite):
    name = "simhash"
    other_params = {"k": 4}
    crawl_demo = False


# -- SimHash block index ---------------------------------------------------------------------


@pytest.mark.parametrize("count", range(2, 11))
def test_simhash_blocks_partition_the_64_bits(count: int) -> None:
    blocks = block_masks(count)
    assert len(blocks) == count
    covered = 0
    for shift, mask in blocks:
        assert covered & (mask << shift) == 0  # disjoint
        covered |= mask << shift
    assert covered == (1 << 64) - 1
    sizes = [mask.bit_count() for _, mask in blocks]
    assert max(sizes) - min(sizes) <= 1  # as even as 64 bits allow


def _hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def _flip(value: int, bits: set[int]) -> int:
    for bit in bits:
        value ^= 1 << bit
    return value


@st.composite
def fingerprint_families(draw: st.DrawFn) -> tuple[int, int, list[int]]:
    """k, a block count, and fingerprints: a few random bases, each with neighbours 0..k+2
    bits away."""
    k = draw(st.integers(1, 7))
    blocks = k + draw(st.integers(1, 3))
    fingerprints = []
    for _ in range(draw(st.integers(1, 4))):
        base = draw(st.integers(0, 2**64 - 1))
        fingerprints.append(base)
        for _ in range(draw(st.integers(0, 12))):
            distance = draw(st.integers(0, k + 2))
            bits = draw(st.sets(st.integers(0, 63), min_size=distance, max_size=distance))
            fingerprints.append(_flip(base, bits))
    order = draw(st.permutations(range(len(fingerprints))))
    return k, blocks, [fingerprints[i] for i in order]


@PROPERTY
@given(fingerprint_families(), st.integers(0, 2**64 - 1))
def test_simhash_index_finds_exactly_the_fingerprints_within_k(
    family: tuple[int, int, list[int]], stranger: int
) -> None:
    k, blocks, fingerprints = family
    method = SimHashBackend(k=k, blocks=blocks)

    # 1) Everything added, then every fingerprint (and a random one) queried.
    index = Index(method, MemoryBucketStore())
    stored = {f"f{i}": fp for i, fp in enumerate(fingerprints)}
    for key, fp in stored.items():
        index.add(key, fp)
    assert len(index) == len(stored)
    for probe in [*fingerprints, stranger]:
        found = {m.key: m.similarity for m in index.query(probe)}
        expected = {key: fp for key, fp in stored.items() if _hamming(fp, probe) <= k}
        assert set(found) == set(expected), (k, probe)
        for key, sim in found.items():
            assert sim == 1.0 - _hamming(stored[key], probe) / 64
            assert all(m.method == "simhash" for m in index.query(probe))

    # 2) query_and_add: only fingerprints with no stored one within k are added.
    index = Index(method, MemoryBucketStore())
    kept: dict[str, int] = {}
    for i, fp in enumerate(fingerprints):
        found = {m.key for m in index.query_and_add_signature(f"f{i}", fp)}
        assert found == {key for key, old in kept.items() if _hamming(old, fp) <= k}
        if not found:
            kept[f"f{i}"] = fp
        assert len(index) == len(kept)


@pytest.mark.parametrize("extra", [1, 2, 3])
@pytest.mark.parametrize("k", range(1, 8))
def test_simhash_worst_case_one_flip_in_each_of_k_blocks(k: int, extra: int) -> None:
    method = SimHashBackend(k=k, blocks=k + extra)
    rng = random.Random(k)
    blocks = block_masks(k + extra)
    for _ in range(50):
        flipped = rng.sample(range(k + extra), k + 1)  # k blocks hit, then one more
        bits = [blocks[i][0] + rng.randrange(blocks[i][1].bit_length()) for i in flipped]
        base = rng.getrandbits(64)
        bits_k = set(bits[:k])
        bits = set(bits)
        index = Index(method, MemoryBucketStore())
        index.add("base", base)
        assert [m.key for m in index.query(_flip(base, bits_k))] == ["base"]
        # One more bit, in the intact block: k + 1 bits away, never a match.
        assert index.query(_flip(base, bits)) == []
        assert method.similarity(base, _flip(base, bits)) is None


def test_simhash_similarity_and_buckets() -> None:
    method = SimHashBackend(k=3)
    assert method.similarity(0, 0b111) == 1 - 3 / 64
    assert method.similarity(0, 0b1111) is None
    assert method.similarity(2**64 - 1, 2**64 - 1) == 1.0
    keys = method.bucket_keys(0xDEADBEEF_CAFEBABE)
    assert len(keys) == len(set(keys)) == 10  # one bucket per pair of the 5 blocks
    keys = SimHashBackend(k=3, blocks=4).bucket_keys(0xDEADBEEF_CAFEBABE)
    assert len(keys) == len(set(keys)) == 4  # one bucket per block, blocks kept apart
    with pytest.raises(ValueError, match="blocks"):
        SimHashBackend(k=3, blocks=3)


def test_simhash_signatures_of_texts() -> None:
    method = SimHashBackend()
    a = method.signature(Document(TEXT))
    assert a == method.signature(Document(TEXT.upper()))
    assert 0 <= a < 2**64
    assert method.signature(Document("")) == 0
    # Very frequent features (weights above simhash's batch cutoff) do not overflow.
    assert method.signature(Document("spam eggs " * 5000)) != 0
    unrelated = method.signature(Document("Completely different words about football and rain."))
    assert _hamming(a, unrelated) > 3


def test_simhash_fingerprints_the_prose_lines_only() -> None:
    """Menus, captions and link lists that extraction keeps in one copy and not in another
    are short lines: left out of the fingerprint, they no longer move it."""
    from scrapy_neardup.backends.simhash import line_words, prose

    rng = random.Random(5)
    vocab = [f"word{i}" for i in range(400)]
    article = "\n".join(" ".join(rng.choice(vocab) for _ in range(30)) for _ in range(12))
    menus = "\n".join(" ".join(rng.choice(vocab) for _ in range(4)) for _ in range(40))
    wrapped = menus + "\n" + article + "\n" + menus[::-1]
    assert prose(Document(wrapped), 20).text == article
    assert prose(Document("too short\nfor prose"), 20).text == "too short\nfor prose"
    method, whole = SimHashBackend(), SimHashBackend(lines=0)
    assert method.signature(Document(wrapped)) == method.signature(Document(article))
    assert _hamming(whole.signature(Document(wrapped)), whole.signature(Document(article))) > 0
    # Single words: the document's tokens less its short lines' are the prose's tokens.
    from collections import Counter

    from scrapy_neardup.backends.simhash import prose_counts
    from scrapy_neardup.text import ShingleSpec

    mixed = wrapped + "\n北京是中国的首都\n" + "我们的工作是在北京完成的，" * 20
    for text in (wrapped, mixed):
        doc = Document(text)
        expected = Counter(prose(doc, 20).tokens)
        assert prose_counts(doc, 20, ShingleSpec("word", 1)) == dict(expected)
    assert line_words("one two three") == 3
    assert line_words("我们的工作是在北京完成的") == 6  # a word per two CJK characters
    with pytest.raises(ValueError, match="lines"):
        SimHashBackend(lines=-1)
