"""What every near-duplicate backend provides, and what it needs from storage.

A backend is pure maths: it turns a document into a signature, names the buckets in which a
similar signature must also appear, and scores two signatures. Where buckets and signatures
live (memory, Redis) and how a query-then-add is made atomic is the storage layer's job; the
index in :mod:`scrapy_neardup.deduplicator` joins the two.

A new backend is one module in this package implementing :class:`Backend`, its name in
``BACKENDS`` (``backends/__init__.py``), and one test module whose class subclasses
``tests/backend_suite.py``'s ``BackendSuite``: memory and Redis storage, saved state, the
``NEARDUP_BACKEND`` and ``NEARDUP_THRESHOLD`` settings (for a constructor with a
``threshold``) and the accuracy evaluation then work without another line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from scrapy_neardup.text import Document


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


@runtime_checkable
class Backend(Protocol):
    """The maths of one backend. Signatures may be any object the backend can encode."""

    name: str

    def params(self) -> dict[str, Any]:
        """Everything that changes signatures or buckets (saved state must match it)."""

    def signature(self, doc: Document) -> Any:
        """The document's signature, from whichever of its views the backend needs:
        ``doc.text`` as given (line breaks intact: sentences), ``doc.normalized``,
        ``doc.tokens`` (set ``reads_tokens``) or ``doc.shingles(spec)``. It must pickle (it is
        made in an extraction worker) and be the same on every machine that shares a state."""

    def bucket_keys(self, signature: Any) -> list[int]:
        """Buckets (64-bit ints) that any matching signature shares at least one of."""

    def similarity(self, a: Any, b: Any) -> float | None:
        """Similarity of two signatures, or None when they do not match."""

    # Optional: ``estimate(a, b) -> float | None``, the similarity without the backend's
    # threshold, for candidates that containment verifies (backends/containment.py): a
    # copy of a page's core inside a larger page has a low Jaccard but is contained.

    # Optional: ``probe_count(signature) -> int``. A backend that has it promises that a match
    # shares a bucket among *any* ``probe_count`` of the signature's buckets, so a store may
    # probe only that many, the least filled first (SpotSigs); without it, every bucket is
    # probed.

    # Optional: ``hamming_key(signature) -> int`` and ``hamming_limit``. A backend that has
    # them promises that a match's key is within ``hamming_limit`` bits of the signature's,
    # so a store may keep the keys (8 bytes a document) and reject a candidate farther away
    # without reading its signature (SimHash: the fingerprint and k).

    def encode(self, signature: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


#: Called by a store with a candidate's key and signature: its similarity, or None.
Verifier = Callable[[str, Any], "float | None"]


class BucketStore(Protocol):
    """Buckets of document keys plus each document's signature.

    ``query_and_add`` must be atomic: between reading the candidates and adding the new key, no
    other writer may add a key to any of ``buckets`` (two crawlers sharing a store must never
    both keep a near-duplicate pair). Matching documents always share a bucket, so guarding the
    buckets is enough.
    """

    def query_and_add(
        self,
        key: str,
        signature: Any,
        buckets: list[int],
        verify: Verifier,
        probe: int | None = None,
    ) -> list[tuple[str, float]]:
        """Verified earlier keys; when there are none, ``key`` is added under ``buckets``.

        With ``probe``, only the ``probe`` least filled of ``buckets`` need be read."""

    def query(
        self, signature: Any, buckets: list[int], verify: Verifier, probe: int | None = None
    ) -> list[tuple[str, float]]:
        """Verified earlier keys, adding nothing."""

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        """Add without querying (used when loading saved state)."""

    def items(self) -> Iterable[tuple[str, Any]]: ...

    def __contains__(self, key: str) -> bool:
        """Whether ``key`` was added (and is still held: a store that forgets may say no)."""

    def __len__(self) -> int: ...
