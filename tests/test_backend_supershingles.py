"""Broder's super-shingles: the shared backend suite, then the maths against brute force."""

from __future__ import annotations

import random
from math import comb

import numpy as np
import pytest
import xxhash
from backend_suite import BackendSuite, numbers_only

from scrapy_neardup.backends import MinHashBackend, SuperShinglesBackend
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document, ShingleSpec


class TestSuperShingles(BackendSuite):
    name = "supershingles"
    other_params = {"groups": 6}  # the literature's 6 groups of 14
    bad_encodings = [b"", b"\x01\x02\x03", bytes(8 * 14 - 1), bytes(8 * 14 + 8)]


class _Shingled(Document):
    """A document whose (hashed) shingle set is given."""

    def __init__(self, shingles: set[int]) -> None:
        super().__init__("")
        self._given = np.array(sorted(shingles), dtype=np.uint64)

    def shingles(self, spec: ShingleSpec) -> np.ndarray:
        return self._given


TEXT = (
    "The old harbour bridge reopened on Monday after months of repairs, and the first buses "
    "crossed it before dawn. Engineers said that the steel had been replaced in the spring and "
    "that the new deck would last for decades. "
) * 3
CHINESE = (
    "记者从市交通局了解到，经过数月的维修，老港口大桥于周一重新开放，第一批公交车在黎明前通过。"
    "工程师表示，钢结构已在春季更换，新的桥面可以使用几十年。市民们对此表示欢迎。"
)


def test_defaults_and_params() -> None:
    method = SuperShinglesBackend()
    assert (method.num_perm, method.groups, method.b) == (84, 14, 2)
    assert method.params() == {
        "num_perm": 84,
        "groups": 14,
        "b": 2,
        "shingles": "word:3",
        "seed": 1,
        "scheme": "affine32",
        "token_hash": "poly64-fmix",
        "hash": "xxh3_64",
    }
    literature = SuperShinglesBackend(groups=6)
    assert len(literature.bucket_keys(literature.signature(Document(TEXT)))) == 15
    assert len(method.bucket_keys(method.signature(Document(TEXT)))) == comb(14, 2)
    assert len(method.encode(method.signature(Document(TEXT)))) == 8 * 14


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"groups": 5}, "groups must divide num_perm"),
        ({"groups": 0}, "groups must divide num_perm"),
        ({"groups": 85}, "groups must divide num_perm"),
        ({"b": 0}, "b must be 1..groups"),
        ({"groups": 6, "b": 7}, "b must be 1..groups"),
        ({"groups": 42, "b": 3}, "buckets per document"),
        ({"num_perm": 8, "groups": 2}, "num_perm must be 16..1024"),
        ({"shingles": "word:0"}, "shingle size"),
        ({"shingles": "line:3"}, "shingle unit"),
    ],
)
def test_parameters_are_validated(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SuperShinglesBackend(**params)


@pytest.mark.parametrize(("num_perm", "groups"), [(84, 6), (84, 14), (128, 16)])
def test_super_shingles_hash_groups_of_the_minhash_values(num_perm: int, groups: int) -> None:
    """Group ``i`` is xxh3_64(seed=i) of its min-hash values' little-endian bytes, and the
    values are the ``minhash`` backend's (datasketch's) for the same parameters."""
    method = SuperShinglesBackend(num_perm=num_perm, groups=groups, seed=3)
    doc = Document(TEXT)
    values = MinHashBackend(num_perm=num_perm, seed=3).signature(doc)
    size = num_perm // groups
    expected = [
        xxhash.xxh3_64_intdigest(values[i * size : (i + 1) * size].astype("<u4").tobytes(), seed=i)
        for i in range(groups)
    ]
    signature = method.signature(doc)
    assert signature.dtype == np.uint64
    assert signature.tolist() == expected


def test_buckets_are_shared_exactly_when_b_super_shingles_agree() -> None:
    """Against brute force: random signatures agreeing on random subsets of positions."""
    rng = random.Random(4)
    for groups, b in [(6, 2), (14, 2), (14, 3), (6, 1), (12, 4)]:
        method = SuperShinglesBackend(groups=groups, b=b)
        for _ in range(60):
            a = np.array([rng.getrandbits(64) | 1 for _ in range(groups)], dtype=np.uint64)
            other = np.array([rng.getrandbits(64) | 1 for _ in range(groups)], dtype=np.uint64)
            same = rng.sample(range(groups), rng.randint(0, groups))
            other[same] = a[same]
            shared = set(method.bucket_keys(a)) & set(method.bucket_keys(other))
            k = len(same)
            assert len(shared) == comb(k, b)  # one bucket per b-subset of the agreeing ones
            assert (method.similarity(a, other) is not None) == (k >= b)


def test_similarity_estimates_jaccard_from_equal_groups() -> None:
    method = SuperShinglesBackend()
    a = np.arange(1, 15, dtype=np.uint64)
    for k in range(15):
        b = a.copy()
        b[k:] += np.uint64(100)
        expected = None if k < 2 else (k / 14) ** (14 / 84)
        assert method.similarity(a, b) == expected
    assert method.similarity(a, a) == 1.0
    assert method.similarity(a, np.flip(a)) is None  # position by position


def test_match_rate_follows_the_s_curve() -> None:
    """Sets of Jaccard J agree on a group with probability J**6 (14 groups of 6); over many
    independent pairs the share that matches follows P(at least 2 of 14 groups agree)."""
    rng = random.Random(11)
    method = SuperShinglesBackend(seed=5)
    for jaccard in (0.3, 0.6, 0.9):
        matches, group_agreement, pairs = 0, 0, 120
        for _ in range(pairs):
            common = {rng.getrandbits(64) for _ in range(round(400 * jaccard))}
            rest = round(400 * (1 - jaccard) / 2)
            a = common | {rng.getrandbits(64) for _ in range(rest)}
            b = common | {rng.getrandbits(64) for _ in range(rest)}
            sa, sb = method.signature(_Shingled(a)), method.signature(_Shingled(b))
            true_j = len(a & b) / len(a | b)
            group_agreement += int(np.count_nonzero(sa == sb))
            matches += method.similarity(sa, sb) is not None
            assert bool(set(method.bucket_keys(sa)) & set(method.bucket_keys(sb))) == (
                method.similarity(sa, sb) is not None
            )
        p = true_j**6
        expected = 1 - (1 - p) ** 14 - 14 * p * (1 - p) ** 13
        assert abs(group_agreement / (pairs * 14) - p) < 0.06, jaccard
        assert abs(matches / pairs - expected) < 0.15, (jaccard, matches / pairs, expected)


def test_empty_text_never_matches() -> None:
    method = SuperShinglesBackend()
    for text in ("", "   ", "!!! ... ---"):
        signature = method.signature(Document(text))
        assert not signature.any()
        assert method.bucket_keys(signature) == []
        assert method.similarity(signature, signature) is None
        assert method.decode(method.encode(signature)).tolist() == signature.tolist()
    full = method.signature(Document(TEXT))
    assert method.similarity(full, method.signature(Document(""))) is None


def test_copies_found_in_english_chinese_and_numbers() -> None:
    """A copy with other punctuation and case; Chinese (jieba words); a table of figures."""
    method = SuperShinglesBackend()
    for text in (TEXT, CHINESE, numbers_only(3), "one single long sentence " * 40):
        index = Index(method, MemoryBucketStore())
        assert index.query_and_add("a", Document(text)) == []
        copy = text.upper().replace(",", " ;").replace("，", "、")
        assert [m.key for m in index.query(method.signature(Document(copy)))] == ["a"]
    index = Index(method, MemoryBucketStore())
    index.query_and_add("en", Document(TEXT))
    index.query_and_add("zh", Document(CHINESE))
    assert index.query(method.signature(Document(numbers_only(4)))) == []


def test_a_light_edit_matches_a_rewrite_does_not() -> None:
    method = SuperShinglesBackend()
    words = TEXT.split()
    edited = list(words)
    edited[40] = "tunnel"  # 3 of ~100 shingles: J ~ 0.94
    rng = random.Random(2)
    rewritten = [rng.choice(words) if rng.random() < 0.4 else w for w in words]
    base = method.signature(Document(TEXT))
    assert method.similarity(base, method.signature(Document(" ".join(edited)))) is not None
    assert method.similarity(base, method.signature(Document(" ".join(rewritten)))) is None


def test_decode_refuses_other_group_counts() -> None:
    with pytest.raises(ValueError, match="must be 48 bytes, got 112"):
        SuperShinglesBackend(groups=6).decode(bytes(112))
