"""The cosine backend: the shared suite, then the estimate and the bands against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from backend_suite import BackendSuite, numbers_only

import corpus as C
from scrapy_neardup.backends.cosine import (
    CosineBackend,
    collision_probability,
    optimal_bands,
    projections,
    term_vector,
)
from scrapy_neardup.deduplicator import Deduplicator, Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document, ShingleSpec


class TestCosine(BackendSuite):
    name = "cosine"
    other_params = {"weighting": "tf"}
    bad_encodings = [b"\x01\x02\x03", bytes(255), bytes(257)]


def _exact(fa: np.ndarray, wa: np.ndarray, fb: np.ndarray, wb: np.ndarray) -> float:
    _, ia, ib = np.intersect1d(fa, fb, assume_unique=True, return_indices=True)
    return float(wa[ia] @ wb[ib]) / math.sqrt(float(wa @ wa) * float(wb @ wb))


def cosine(
    a: Document, b: Document, shingles: str | ShingleSpec = "word:2", weighting: str = "log"
) -> float:
    """The exact cosine of two documents' term vectors (0.0 when either is empty): what the
    signatures estimate."""
    fa, wa = term_vector(a, ShingleSpec.parse(shingles), weighting)
    fb, wb = term_vector(b, ShingleSpec.parse(shingles), weighting)
    return _exact(fa, wa, fb, wb) if len(fa) and len(fb) else 0.0


def band_recall(cos: float, bands: int, rows: int) -> float:
    """P(two vectors of cosine ``cos`` agree on all ``rows`` bits of at least one band)."""
    return 1.0 - (1.0 - collision_probability(cos) ** rows) ** bands


def _pair(rng: np.random.Generator, n: int, shared: float) -> tuple[np.ndarray, ...]:
    """Two sparse positive vectors with ``shared`` of their features in common."""
    features = rng.choice(2**62, size=2 * n, replace=False).astype(np.uint64)
    keep = int(shared * n)
    fa = np.sort(features[:n])
    fb = np.sort(np.concatenate([fa[:keep], features[n : 2 * n - keep]]))
    return fa, rng.uniform(0.5, 3.0, n), fb, rng.uniform(0.5, 3.0, n)


def _bits(method: CosineBackend, features: np.ndarray, weights: np.ndarray) -> int:
    positive = projections(features, weights, method.bits, method.seed) > 0
    return int.from_bytes(np.packbits(positive, bitorder="little").tobytes(), "little")


def _tolerance(cos: float, bits: int, sigmas: float = 4.5) -> float:
    """``sigmas`` binomial standard deviations of d, carried into cosine units (cos is
    Lipschitz with constant pi / bits per differing bit), plus one bit for rounding."""
    p = math.acos(cos) / math.pi
    return (sigmas * math.sqrt(bits * p * (1 - p)) + 1) * math.pi / bits


# -- the estimate ----------------------------------------------------------------------------


def test_estimate_tracks_the_exact_cosine_on_random_vectors() -> None:
    method = CosineBackend()
    rng = np.random.default_rng(7)
    errors = []
    for i in range(120):
        fa, wa, fb, wb = _pair(rng, int(rng.integers(20, 400)), shared=(i % 12) / 11)
        exact = _exact(fa, wa, fb, wb)
        estimate = method.estimate(_bits(method, fa, wa), _bits(method, fb, wb))
        assert abs(estimate - exact) <= _tolerance(exact, method.bits), (exact, estimate)
        errors.append(math.acos(max(-1.0, min(1.0, estimate))) - math.acos(exact))
    # Gaussian hyperplanes are unbiased in the angle: the mean error is within 4 standard
    # errors of 0 (each angle's sd is at most pi * sqrt(0.25 / bits)).
    assert abs(np.mean(errors)) <= 4 * math.pi * math.sqrt(0.25 / method.bits / len(errors))


def test_estimate_tracks_the_exact_cosine_on_texts() -> None:
    method = CosineBackend()
    samples = [*C.synthetic_corpus().originals[:20], *C.synthetic_corpus().variants[:20]]
    docs = [Document(s.text) for s in samples]
    signatures = [method.signature(d) for d in docs]
    for i in range(len(docs)):
        for j in range(i + 1, len(docs), 3):
            exact = cosine(docs[i], docs[j], method.shingles, method.weighting)
            estimate = method.estimate(signatures[i], signatures[j])
            assert abs(estimate - exact) <= _tolerance(exact, method.bits)


def test_exact_cosine_known_values() -> None:
    a, b = Document("red fish blue fish"), Document("red fish green fish")
    # word:1, tf: a = {red 1, fish 2, blue 1}, b = {red 1, fish 2, green 1}: 5 / 6
    assert cosine(a, b, "word:1", "tf") == pytest.approx(5 / 6)
    assert cosine(a, a) == pytest.approx(1.0)
    assert cosine(a, Document("nothing alike here")) == 0.0
    assert cosine(a, Document("")) == 0.0


# -- the bands -------------------------------------------------------------------------------


def test_default_bands_meet_their_promises() -> None:
    method = CosineBackend()
    assert (method.bands, method.rows) == optimal_bands(0.9) == (100, 20)
    assert method.bits == 2048 and len(method.encode(0)) == 256
    assert band_recall(0.9, method.bands, method.rows) >= 0.99
    # a query among 100k unrelated (random) signatures verifies 100 * 1e5 / 2**20 of them
    assert 100_000 * method.bands * 0.5**method.rows == pytest.approx(9.54, abs=0.01)
    assert optimal_bands(0.95) == (33, 19)
    assert CosineBackend(threshold=0.95).bands == 33


def test_index_finds_every_pair_well_above_the_threshold() -> None:
    method = CosineBackend()
    rng = np.random.default_rng(3)
    vectors = []
    for _ in range(30):  # families of one base vector and perturbed copies
        fa, wa, fb, wb = _pair(rng, 200, shared=rng.uniform(0.6, 1.0))
        vectors += [(fa, wa), (fb, wb), (fa, wa * rng.uniform(0.7, 1.3, len(wa)))]
    signatures = [_bits(method, f, w) for f, w in vectors]
    index = Index(method, MemoryBucketStore())
    for i, signature in enumerate(signatures):
        index.add(str(i), signature)
    for i, signature in enumerate(signatures):
        found = {int(m.key) for m in index.query(signature)}
        for j in range(len(vectors)):
            exact = _exact(*vectors[i], *vectors[j])
            if exact >= 0.92:  # band recall >= 0.9998 there; the estimate never falls to 0.8
                assert j in found, (i, j, exact)
            if j in found:
                assert method.estimate(signature, signatures[j]) >= 0.8 - 1e-9


# -- documents ------------------------------------------------------------------------------

ZH = (
    "新华社北京三月五日电，国务院总理在政府工作报告中指出，今年经济增长的预期目标为百分之五左右。"
    "报告说，要坚持稳中求进的工作总基调，完整、准确、全面贯彻新发展理念，加快构建新发展格局。"
    "城镇新增就业一千二百万人以上，城镇调查失业率百分之五点五左右，居民消费价格涨幅百分之三左右。"
)
ZH_OTHER = (
    "本报讯，市气象台昨日发布消息，受冷空气影响，本周末全市将出现大风降温天气，最低气温降至零下。"
    "气象专家提醒市民注意防寒保暖，出行注意交通安全，农业部门要做好设施农业的防风防冻工作。"
    "预计下周一起气温逐渐回升，天气以晴到多云为主，空气质量总体良好，适宜户外活动。"
)


def test_chinese_copies_match_and_other_articles_do_not() -> None:
    dedup = Deduplicator(CosineBackend(), min_tokens=20)
    assert not dedup.check("a", ZH).is_duplicate
    assert dedup.check("b", ZH.replace("，", " ") + "记者张三报道。").duplicate_of == "a"
    assert not dedup.check("c", ZH_OTHER).is_duplicate
    assert cosine(Document(ZH), Document(ZH_OTHER)) < 0.1


def test_empty_documents_never_match() -> None:
    method = CosineBackend()
    empty = method.signature(Document(""))
    assert empty == method.signature(Document("  ,. ")) == 0
    assert method.bucket_keys(empty) == []
    assert method.similarity(empty, empty) is None
    text = method.signature(Document("one two three four " * 20))
    assert method.similarity(text, empty) is None and method.similarity(text, text) == 1.0


def test_a_single_long_sentence_and_numbers() -> None:
    method = CosineBackend()
    sentence = " ".join(f"word{i}" for i in range(3000))
    a, b = method.signature(Document(sentence)), method.signature(Document(sentence + " end"))
    assert method.similarity(a, b) is not None
    numbers = [method.signature(Document(numbers_only(s))) for s in range(3)]
    assert method.similarity(numbers[0], numbers[1]) is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"threshold": 0.0}, "threshold must be in"),
        ({"threshold": 1.0}, "threshold must be in"),
        ({"weighting": "idf"}, "weighting must be one of"),
        ({"bits": 100}, "bits must be a multiple of 64"),
        ({"bits": 512, "bands": (40, 20)}, "need 800 bits"),
        ({"bands": (10, 65)}, "at most 64 rows"),
        ({"bands": (0, 8)}, "positive ints"),
        ({"shingles": "word:0"}, "shingle"),
    ],
)
def test_parameters_are_validated(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CosineBackend(**params)
