"""The minhash backend: the contract suite, datasketch bit for bit, and its bands against
brute force (pairs well above the threshold are found)."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest
from backend_suite import PROPERTY, TEXT, BackendSuite
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_neardup.backends import MinHashBackend
from scrapy_neardup.deduplicator import Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document


class TestMinHash(BackendSuite):
    name = "minhash"
    other_params = {"threshold": 0.5}
    crawl_demo = False


# -- MinHash ---------------------------------------------------------------------------------


def _jaccard(a: set[int], b: set[int]) -> Fraction:
    return Fraction(len(a & b), len(a | b))


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


@pytest.mark.parametrize("decision", ["contained", "similar"])
def test_the_default_candidates_banding_is_written_out(decision: str) -> None:
    """The bands a crawl on its defaults uses are known at start: no process imports
    datasketch (scipy) for them, the crawler's reactor thread least of all."""
    from scrapy_neardup.deduplicator import Deduplicator

    method = Deduplicator("minhash", decision=decision).method
    assert isinstance(method, MinHashBackend)
    assert method._banding is not None


@pytest.mark.parametrize("seed", [1, 7, 2**31])
@pytest.mark.parametrize("num_perm", [16, 128, 1024])
def test_minhash_permutations_are_datasketchs(num_perm: int, seed: int) -> None:
    """Drawn without datasketch, they are the ones its ``affine32`` MinHash draws."""
    from datasketch import MinHash

    from scrapy_neardup.backends.minhash import permutations

    a, b = permutations(num_perm, seed)
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
