"""Signature maths and candidate search of each method, against brute force.

The index of every method promises no false negatives of one kind or another: the SimHash
block index finds every stored fingerprint within ``k`` bits, SpotSigs prefix filtering every
set with Jaccard >= threshold, MinHash-LSH (probabilistically) pairs well above its threshold.
Each promise is checked here on generated signatures against an exhaustive comparison.
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_neardup.backends import (
    BACKENDS,
    Backend,
    ExactBackend,
    MinHashBackend,
    SimHashBackend,
    SpotSigsBackend,
    make_backend,
)
from scrapy_neardup.backends.simhash import block_masks
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = (
    "The old harbour bridge reopened on Monday after months of repairs, and the first buses "
    "crossed it before dawn. Engineers said that the steel had been replaced in the spring and "
    "that the new deck would last for decades. "
) * 3

# -- make_backend and parameters ----------------------------------------------------------------


def test_make_method_by_name() -> None:
    for name, cls in BACKENDS.items():
        method = make_backend(name)
        assert isinstance(method, cls)
        assert isinstance(method, Backend)
        assert method.name == name
    assert make_backend("simhash", k=5).k == 5
    with pytest.raises(ValueError, match="unknown near-duplicate backend 'lsh'"):
        make_backend("lsh")


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("simhash", {"k": 0}),
        ("simhash", {"k": 13}),
        ("simhash", {"shingles": "word:0"}),
        ("minhash", {"threshold": 0.0}),
        ("minhash", {"threshold": 1.5}),
        ("minhash", {"num_perm": 8}),
        ("spotsigs", {"threshold": 0}),
        ("spotsigs", {"chain": 0}),
        ("spotsigs", {"chain": 9}),
    ],
)
def test_invalid_parameters(name: str, params: dict) -> None:
    with pytest.raises(ValueError):
        make_backend(name, **params)


def test_params_describe_what_changes_signatures() -> None:
    assert SimHashBackend(k=3).params() != SimHashBackend(k=4).params()
    assert SimHashBackend().params() != SimHashBackend(shingles="word:2").params()
    assert MinHashBackend().params() != MinHashBackend(threshold=0.7).params()
    assert MinHashBackend().params() != MinHashBackend(seed=2).params()
    assert SpotSigsBackend().params() != SpotSigsBackend(chain=3).params()


# -- encode / decode -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_encode_decode_round_trip(name: str) -> None:
    method = make_backend(name)
    for text in (TEXT, "我们的工作是在北京完成的。" * 10, "short", ""):
        sig = method.signature(Document(text))
        data = method.encode(sig)
        assert isinstance(data, bytes)
        back = method.decode(data)
        assert method.encode(back) == data
        assert method.bucket_keys(back) == method.bucket_keys(sig)
        if len(method.bucket_keys(sig)):
            assert method.similarity(back, sig) == method.similarity(sig, sig)


def test_signature_sizes() -> None:
    doc = Document(TEXT)
    assert len(ExactBackend().encode(ExactBackend().signature(doc))) == 16
    assert len(SimHashBackend().encode(SimHashBackend().signature(doc))) == 8
    assert len(MinHashBackend().encode(MinHashBackend().signature(doc))) == 4 * 128
    spots = SpotSigsBackend().signature(doc)
    assert len(SpotSigsBackend().encode(spots)) == 8 * len(spots) > 0


@pytest.mark.parametrize(
    ("method", "bad"),
    [
        (ExactBackend(), [b"", b"x" * 15, b"x" * 17, b"x" * 32]),
        (SimHashBackend(), [b"", b"x" * 7, b"x" * 9, b"x" * 16]),
        (MinHashBackend(), [b"", b"x" * 508, b"x" * 516, b"x" * 256]),
        (MinHashBackend(num_perm=64), [b"x" * 512, b"x" * 255]),
        (SpotSigsBackend(), [b"x", b"x" * 7, b"x" * 9, b"x" * 17]),
    ],
    ids=["exact", "simhash", "minhash", "minhash64", "spotsigs"],
)
def test_decode_rejects_wrong_lengths(method: Backend, bad: list[bytes]) -> None:
    for data in bad:
        with pytest.raises(ValueError, match="signature"):
            method.decode(data)


def test_spotsigs_decodes_the_empty_set() -> None:
    method = SpotSigsBackend()
    assert len(method.decode(b"")) == 0
    assert method.bucket_keys(method.decode(b"")) == []


def test_encodings_are_little_endian() -> None:
    assert SimHashBackend().encode(1) == b"\x01" + b"\x00" * 7
    assert SimHashBackend().decode(b"\x00" * 7 + b"\x80") == 1 << 63
    assert SpotSigsBackend().encode(np.array([2], dtype=np.uint64)) == b"\x02" + b"\x00" * 7


# -- exact -----------------------------------------------------------------------------------


def test_exact_matches_normalised_copies_only() -> None:
    method = ExactBackend()
    a = method.signature(Document("The Harbour  Bridge\nreopens."))
    b = method.signature(Document("ｔｈｅ harbour bridge REOPENS."))
    c = method.signature(Document("The harbour bridge reopened."))
    assert method.similarity(a, b) == 1.0
    assert method.similarity(a, c) is None
    assert method.bucket_keys(a) == method.bucket_keys(b) != method.bucket_keys(c)


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

        return store.query(sig, method.bucket_keys(sig), verify, method.probe_count(sig))

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


# -- MinHash ---------------------------------------------------------------------------------


class _Shingled:
    """Stands in for a Document: MinHashBackend.signature only asks for its shingle hashes."""

    def __init__(self, hashes: set[int]) -> None:
        self.hashes = np.array(sorted(hashes), dtype=np.uint64)

    def shingles(self, spec: object) -> np.ndarray:
        return self.hashes


@st.composite
def shingle_families(draw: st.DrawFn) -> tuple[set[int], list[tuple[set[int], Fraction]]]:
    """A base set of 32-bit shingles and sets with Jaccard 0.8..1 or <= 0.2 to it."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    size = draw(st.integers(60, 400))
    base = set(rng.sample(range(2**32), size))
    others = []
    for _ in range(draw(st.integers(1, 6))):
        target = draw(st.one_of(st.floats(0.8, 1.0), st.floats(0.0, 0.2)))
        fresh = draw(st.integers(0, size // 4))
        kept = min(size, round(target * (size + fresh)))
        member = set(rng.sample(sorted(base), kept))
        member |= set(rng.sample(range(2**32), fresh)) - base
        if member:
            others.append((member, _jaccard(base, member)))
    return base, others


# With b=32 bands of r=4 rows (threshold 0.4, 128 permutations), a pair of Jaccard 0.8 shares
# no band with probability (1 - 0.8**4)**32 ~ 5e-8, and its estimate falls below 0.4 with
# probability < 1e-20; a pair of Jaccard 0.2 reaches an estimate of 0.4 (5.6 standard
# deviations) with probability < 1e-8. derandomize keeps the examples, and so the outcome,
# identical on every run.
@settings(PROPERTY, derandomize=True)
@given(shingle_families())
def test_minhash_finds_pairs_well_above_threshold(
    family: tuple[set[int], list[tuple[set[int], Fraction]]],
) -> None:
    base, others = family
    method = MinHashBackend()
    index = Index(method, MemoryBucketStore())
    base_sig = method.signature(_Shingled(base))
    assert index.query_and_add_signature("base", base_sig) == []
    for member, jaccard in others:
        sig = method.signature(_Shingled(member))
        matches = index.query(sig)
        for m in matches:
            assert m.similarity >= method.threshold
            assert m.similarity == method.similarity(sig, base_sig)
        if jaccard >= Fraction(8, 10):
            assert [m.key for m in matches] == ["base"], float(jaccard)
        if jaccard <= Fraction(2, 10):
            assert matches == [], float(jaccard)


def test_minhash_estimate_tracks_jaccard() -> None:
    rng = random.Random(5)
    method = MinHashBackend()
    base = set(rng.sample(range(2**32), 2000))
    for target in (0.3, 0.5, 0.7, 0.9):
        kept = round(target * 2000)
        other = set(rng.sample(sorted(base), kept))
        estimate = np.mean(method.signature(_Shingled(base)) == method.signature(_Shingled(other)))
        assert abs(estimate - kept / 2000) < 0.15  # 3.4 standard deviations at 128 perms


@pytest.mark.parametrize("num_perm", [16, 128, 256])
@pytest.mark.parametrize("size", [0, 1, 300])
def test_minhash_signature_is_datasketchs_bit_for_bit(num_perm: int, size: int) -> None:
    """The vectorised signature equals datasketch's MinHash fed the same shingle hashes."""
    from datasketch import MinHash

    rng = random.Random(size)
    shingles = {rng.getrandbits(64) for _ in range(size)}
    method = MinHashBackend(num_perm=num_perm, seed=7)
    plain = MinHash(num_perm=num_perm, seed=7, scheme="affine32", hashfunc=lambda v: v & 0xFFFFFFFF)
    plain.update_batch(sorted(shingles))
    assert np.array_equal(method.signature(_Shingled(shingles)), plain.hashvalues)


def test_the_bandings_written_out_are_datasketchs() -> None:
    from datasketch import MinHashLSH

    from scrapy_neardup.backends.minhash import _BANDINGS, _DEFAULT_WEIGHTS

    for (threshold, num_perm), banding in _BANDINGS.items():
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, weights=_DEFAULT_WEIGHTS)
        assert (lsh.b, lsh.r) == banding, (threshold, num_perm)
        assert MinHashBackend(threshold=threshold, num_perm=num_perm).prepared() == banding
    # Not written out: asked of datasketch, as before.
    lsh = MinHashLSH(threshold=0.45, num_perm=128, weights=_DEFAULT_WEIGHTS)
    assert MinHashBackend(threshold=0.45).prepared() == (lsh.b, lsh.r)


@pytest.mark.parametrize("seed", [1, 7, 2**31])
@pytest.mark.parametrize("num_perm", [16, 128, 1024])
def test_minhash_permutations_are_datasketchs(num_perm: int, seed: int) -> None:
    """Drawn without datasketch, they are the ones its ``affine32`` MinHash draws."""
    from datasketch import MinHash

    a, b = MinHashBackend(num_perm=num_perm, seed=seed)._affine()
    want = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    assert a.dtype == b.dtype == np.uint32
    assert np.array_equal(a, want[0]) and np.array_equal(b, want[1])


def test_a_minhash_signature_needs_no_datasketch() -> None:
    """Signing is all a worker does with the method: it must not import datasketch (scipy)."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from scrapy_neardup.backends.minhash import MinHashBackend\n"
        "from scrapy_neardup.text import Document\n"
        f"MinHashBackend().signature(Document({TEXT!r}))\n"
        "print('datasketch' in sys.modules, 'scipy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("num_perm", [64, 256])
def test_minhash_other_num_perm(num_perm: int) -> None:
    method = MinHashBackend(num_perm=num_perm)
    sig = method.signature(Document(TEXT))
    assert len(sig) == num_perm
    assert len(method.encode(sig)) == 4 * num_perm
    assert len(method.bucket_keys(sig)) == method.bands


def test_minhash_bands_and_signatures() -> None:
    method = MinHashBackend()
    assert method.bands * method.rows <= method.num_perm
    assert (method.bands, method.rows) == (32, 4)  # datasketch's optimum for 0.4 / 128
    assert (MinHashBackend(threshold=0.5).bands, MinHashBackend(threshold=0.5).rows) == (25, 5)
    sig = method.signature(Document(TEXT))
    assert sig.dtype == np.uint32
    assert len(sig) == 128
    keys = method.bucket_keys(sig)
    assert len(keys) == method.bands
    assert all(0 <= key < 2**64 for key in keys)
    assert np.array_equal(sig, method.signature(Document(TEXT)))
    assert method.similarity(sig, sig) == 1.0
    # Band keys differ per band even for equal band contents.
    same = np.zeros(128, dtype=np.uint32)
    assert len(set(method.bucket_keys(same))) == method.bands
    assert MinHashBackend(bands=(16, 8)).bands == 16


def test_minhash_text_near_duplicates() -> None:
    method = MinHashBackend()
    words = TEXT.split()
    edited = " ".join("ferry" if i == 20 else w for i, w in enumerate(words))
    a, b = method.signature(Document(TEXT)), method.signature(Document(edited))
    index = Index(method, MemoryBucketStore())
    index.add("a", a)
    assert [m.key for m in index.query(b)] == ["a"]
    assert index.query(method.signature(Document("Completely different text " * 20))) == []


@pytest.mark.parametrize(
    ("backend", "before", "settings"),
    [
        (
            "simhash",
            {"k": 6, "lines": 0},
            {"NEARDUP_SIMHASH_K": 6, "NEARDUP_BACKEND_PARAMS": {"lines": 0}},
        ),
        ("spotsigs", {"anchors": 0}, {"NEARDUP_BACKEND_PARAMS": {"anchors": 0}}),
    ],
)
def test_a_state_from_before_the_new_defaults_resumes_with_the_old_settings(
    backend: str, before: dict, settings: dict
) -> None:
    """The README's upgrade settings give the parameters the earlier release recorded (a
    parameter at its old value is left out of them), so its state loads; the new defaults
    refuse it, naming the difference."""
    from scrapy_neardup.config import NearDupConfig
    from scrapy_neardup.deduplicator import Deduplicator
    from scrapy_neardup.exceptions import StateError

    old = Deduplicator(make_backend(backend, **before))
    assert not ({"lines", "anchors"} & set(old.near.method.backend.params()))
    old.check("https://a.example/1", TEXT)
    config = NearDupConfig.from_settings({"NEARDUP_BACKEND": backend, **settings})
    resumed = Deduplicator(backend_from_config(config))
    resumed.load_bytes(old.to_bytes())
    assert len(resumed) == 1
    with pytest.raises(StateError, match="params"):
        Deduplicator(backend).load_bytes(old.to_bytes())
