"""What every near-duplicate backend provides, what it needs from storage, and the helpers
the backends share.

A backend is pure maths: signature, buckets, score. Storage (memory, Redis) keeps buckets and
signatures and makes query-then-add atomic; :mod:`scrapy_neardup.deduplicator` joins the two.
A new backend: a :class:`Backend` subclass in this package, a line in ``BACKENDS``, and a test
module subclassing ``tests/backend_suite.py``'s ``BackendSuite``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import xxhash

from scrapy_neardup.text import Document

_SM1 = np.uint64(0xBF58476D1CE4E5B9)
_SM2 = np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class Match:
    """An earlier document a new one duplicates (or, for a related one, that it holds)."""

    key: str
    similarity: float
    method: str
    #: Share of the new document's words in 3-shingles of the earlier one (of the earlier
    #: one's 3-shingles in the new one, for a related document); 1.0 for exact copies.
    containment: float = 1.0
    #: What chooses among several earlier documents a new one copies, before containment:
    #: the "similar" rule's measure under that decision (0.0 under "contained").
    rank: float = 0.0


class Backend(ABC):
    """The maths of one backend. Signatures may be any object the backend can encode.

    Every backend does the abstract methods; the other methods and attributes are hooks whose
    defaults do nothing, for a backend to override where its maths allows more."""

    name: str
    reads_tokens: bool = False  #: signing reads the list ``doc.tokens``: ``min_tokens`` too
    hamming_limit: int = 0  #: bits from a match's :meth:`hamming_key` to the signature's
    excerpt_screen: float = 0.0  #: a lower :meth:`estimate` is verified if excerpts are shared
    lshbloom: bool = False  #: ``NEARDUP_INDEX="lshbloom"`` may keep its buckets (LSH bands)
    #: (N, S): a store verifies the candidates sharing S buckets or more with a query and, of
    #: the others, the N sharing the most; (None, 0): all of them
    checks: tuple[int | None, int] = (None, 0)

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """Everything that changes signatures or buckets (saved state must match it)."""

    @abstractmethod
    def signature(self, doc: Document) -> Any:
        """The document's signature, from whichever of its views the backend needs:
        ``doc.text`` as given (line breaks intact: sentences), ``doc.normalized``,
        ``doc.tokens`` (set ``reads_tokens``) or ``doc.shingles(spec)``. It must pickle (it is
        made in an extraction worker) and be the same on every machine that shares a state."""

    @abstractmethod
    def bucket_keys(self, signature: Any) -> list[int]:
        """Buckets (64-bit ints) that any matching signature shares at least one of."""

    @abstractmethod
    def similarity(self, a: Any, b: Any) -> float | None:
        """Similarity of two signatures, or None when they do not match."""

    @abstractmethod
    def encode(self, signature: Any) -> bytes:
        """The signature as the bytes that :meth:`decode` reads (saved states hold them)."""

    @abstractmethod
    def decode(self, data: bytes) -> Any:
        """The signature :meth:`encode` wrote; ValueError for bytes it cannot have written."""

    def estimate(self, a: Any, b: Any) -> float | None:
        """The similarity without the threshold: it only screens what Verified checks."""
        return self.similarity(a, b)

    def probe_count(self, signature: Any) -> int | None:
        """N: any N of the buckets (a store reads the least filled) hold a match's; None: all."""
        return None

    def hamming_key(self, signature: Any) -> int | None:
        """A key within :attr:`hamming_limit` bits of any match's (a store's screen); None."""
        return None

    def excerpt_keys(self, signature: Any) -> list[int]:
        """The excerpt keys among :meth:`bucket_keys` (backends/excerpts.py)."""
        return []

    def prepared(self) -> Any:
        """What signing needs computed once, in a worker, for :meth:`adopt`; None: nothing."""
        return None

    def adopt(self, prepared: Any) -> None:
        """Take what :meth:`prepared` computed in another process."""
        return None

    def similar_threshold(self) -> float | None:
        """The "similar" rule's default over :meth:`estimate`; None: a shingle Jaccard's."""
        return None

    def check_similar(self, similarity: float) -> None:
        """ValueError when the "similar" rule at ``similarity`` needs pairs no bucket finds."""
        return None

    @classmethod
    def similar_candidates(cls, shingles: int, spots: bool) -> dict[str, Any]:
        """Constructor defaults whose buckets propose what the "similar" rule accepts."""
        return {}

    def require(self, ok: bool, message: str) -> None:
        """ValueError ``"<name> <message>"`` unless ``ok``: a constructor's parameter check."""
        if not ok:
            raise ValueError(f"{self.name} {message}")

    def sized(self, data: bytes, size: int) -> bytes:
        """``data`` if it is ``size`` bytes long, else :meth:`decode`'s ValueError."""
        self.require(len(data) == size, f"signature must be {size} bytes, got {len(data)}")
        return data


def unpack(data: bytes | memoryview, dtype: str, what: str, count: int | None = None) -> np.ndarray:
    """The native integers that ``array.astype(dtype).tobytes()`` wrote (``dtype`` little-endian,
    ``"<u4"`` or ``"<u8"``): ``count`` of them, or any number; ValueError naming ``what``."""
    size = np.dtype(dtype).itemsize
    if count is not None and len(data) != size * count:
        raise ValueError(f"{what} must be {size * count} bytes, got {len(data)}")
    if len(data) % size:
        raise ValueError(f"{what} must be a multiple of {size} bytes, got {len(data)}")
    return np.frombuffer(data, dtype=dtype).astype(dtype[1:])


def band_keys(bands: Iterable[bytes]) -> list[int]:
    """A bucket key per band: the xxh3-64 of its bytes, seeded by its position, so that equal
    contents of two bands give two keys."""
    return [xxhash.xxh3_64_intdigest(band, seed=i) for i, band in enumerate(bands)]


def splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output function (Steele, Lea and Flood 2014): a bijective 64-bit mixer."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _SM1
        x = (x ^ (x >> np.uint64(27))) * _SM2
        return x ^ (x >> np.uint64(31))


class ArrayBackend(Backend):
    """A backend whose signatures are numpy arrays of ``size`` integers (None: any number),
    saved as little-endian ``dtype``."""

    dtype = "<u8"
    size: int | None = None

    def encode(self, signature: np.ndarray) -> bytes:
        return signature.astype(self.dtype, copy=False).tobytes()

    def decode(self, data: bytes) -> np.ndarray:
        return unpack(data, self.dtype, f"{self.name} signature", self.size)


#: Called by a store with a candidate's key and signature: its similarity, or None.
Verifier = Callable[[str, Any], "float | None"]


@dataclass(frozen=True)
class Query:
    """What a store is asked: the earlier documents in ``buckets`` that ``verify`` accepts
    for ``signature``. With ``probe``, only the ``probe`` least filled of ``buckets`` need
    be read."""

    signature: Any
    buckets: list[int]
    verify: Verifier
    probe: int | None = None


class BucketStore(Protocol):
    """Buckets of document keys plus each document's signature.

    ``query_and_add`` must be atomic: between reading the candidates and adding the new key, no
    other writer may add a key to any of the query's buckets (two crawlers sharing a store must
    never both keep a near-duplicate pair). Matching documents always share a bucket, so
    guarding the buckets is enough.
    """

    def query_and_add(self, key: str, query: Query) -> list[tuple[str, float]]:
        """Verified earlier keys; when there are none, ``key`` is added under its buckets."""

    def query(self, query: Query) -> list[tuple[str, float]]:
        """Verified earlier keys, adding nothing."""

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        """Add without querying (used when loading saved state)."""

    def items(self) -> Iterable[tuple[str, Any]]: ...

    def __contains__(self, key: str) -> bool:
        """Whether ``key`` was added (and is still held: a store that forgets may say no)."""

    def __len__(self) -> int: ...
