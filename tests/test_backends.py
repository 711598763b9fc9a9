"""What every registered backend shares: construction by name, parameters, encodings, saved
state across releases; and that each one runs the contract suite (tests/backend_suite.py)
from its own module, tests/test_backend_<name>.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from backend_suite import TEXT, BackendSuite
from saved_state import resume

from scrapy_neardup.backends import (
    BACKENDS,
    Backend,
    ExactBackend,
    MinHashBackend,
    SimHashBackend,
    SpotSigsBackend,
    make_backend,
)
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.text import Document

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


def test_encodings_are_little_endian() -> None:
    assert SimHashBackend().encode(1) == b"\x01" + b"\x00" * 7
    assert SimHashBackend().decode(b"\x00" * 7 + b"\x80") == 1 << 63
    assert SpotSigsBackend().encode(np.array([2], dtype=np.uint64)) == b"\x02" + b"\x00" * 7


@pytest.mark.parametrize(
    ("backend", "before", "settings"),
    [
        (
            "simhash",
            {"k": 6, "lines": 0},
            {"NEARDUP_SIMHASH_K": 6, "NEARDUP_BACKEND_PARAMS": {"lines": 0}},
        ),
        # the indexes the backends had under "contained" before it took the similar rule's
        # candidates
        (
            "spotsigs",
            {"anchors": 0},
            {"NEARDUP_BACKEND_PARAMS": {"anchors": 0, "chain": 2}, "NEARDUP_THRESHOLD": 0.5},
        ),
    ],
)
def test_a_state_from_before_the_new_defaults_resumes_with_the_old_settings(
    backend: str, before: dict, settings: dict
) -> None:
    """The README's upgrade settings give the parameters the earlier release recorded (a
    parameter at its old value is left out of them), so its state loads; the new defaults
    refuse it, naming the difference."""
    old = _resumes_only_with(backend, before, settings)
    assert not ({"lines", "anchors"} & set(old.near.method.backend.params()))


def _resumes_only_with(backend: str, before: dict, settings: dict) -> Any:
    """A deduplicator of ``backend`` made with ``before``, one page checked: its state
    resumes under ``settings`` and is refused under the defaults."""
    from scrapy_neardup.config import NearDupConfig
    from scrapy_neardup.deduplicator import Deduplicator
    from scrapy_neardup.exceptions import StateError

    old = Deduplicator(make_backend(backend, **before))
    old.check("https://a.example/1", TEXT)
    config = NearDupConfig.from_settings({"NEARDUP_BACKEND": backend, **settings})
    resumed = resume(old, Deduplicator(backend_from_config(config)))
    assert len(resumed) == 1
    with pytest.raises(StateError, match="params"):
        resume(old, Deduplicator(backend))
    return old


@pytest.mark.parametrize(
    ("backend", "settings"),
    [
        ("minhash", {"NEARDUP_BACKEND_PARAMS": {"shingles": "word:3"}, "NEARDUP_THRESHOLD": 0.4}),
        ("spotsigs", {"NEARDUP_BACKEND_PARAMS": {"chain": 2}, "NEARDUP_THRESHOLD": 0.5}),
    ],
)
def test_a_contained_state_of_the_backends_own_candidates_resumes_with_them(
    backend: str, settings: dict
) -> None:
    """A "contained" state written when that decision took the backend's own candidates
    resumes with the README's upgrade settings; the new defaults refuse it at start."""
    _resumes_only_with(backend, {}, settings)


def test_every_registered_backend_has_its_module_and_its_contract_suite() -> None:
    """A new backend in BACKENDS needs tests/test_backend_<name>.py with a BackendSuite
    subclass for it: this fails until it has one."""
    import importlib

    for name in BACKENDS:
        module = importlib.import_module(f"test_backend_{name}")
        suites = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, BackendSuite) and obj is not BackendSuite
        ]
        assert [suite.name for suite in suites] == [name], f"tests/test_backend_{name}.py"
