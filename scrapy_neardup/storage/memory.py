"""The default store: bucket keys and postings in memory, signatures in a temporary file.

Promises: the :class:`~scrapy_neardup.backends.base.BucketStore` interface with nothing per
document held as a Python object (dense integer ids, keys in one buffer, postings in sorted
runs merged LSM-style); a bucket collision costs one extra verification, never a wrong answer.
It knows nothing of what a signature means (a ``codec`` encodes them). Rationale and measured
costs: ``docs/design.md#memory-store``.
"""

from __future__ import annotations

import heapq
import mmap
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

import numpy as np
import xxhash

from scrapy_neardup.backends.base import Backend, Query
from scrapy_neardup.storage.signature_file import SignatureFile

_MASK64 = (1 << 64) - 1
#: Postings held in the dict before they become a sorted run (~6 MB of dict at most).
FLUSH = 1 << 16
#: Arrays from this many bytes get their own mapping (see ``_empty``).
MAPPED = 1 << 18
#: Bucket bits kept: a bucket then wrongly shares postings with another with probability
#: postings / 2**48, and such a candidate only costs one verification.
KEY_BITS = 48
#: Directory cells wider than this (a common SpotSigs spot) are binary-searched one by one.
WIDE = 64
#: A run absorbs the next while it is at most this many times larger: ~log8(n / FLUSH) runs.
FACTOR = 8
#: Decoded signatures of the latest candidates kept (a long kept page is proposed to many).
DECODED = 256


class _Growing:
    """A 1-D numpy array appended to by doubling (amortised O(1), no per-item objects)."""

    def __init__(self, dtype: Any, capacity: int = 1024) -> None:
        self.data = np.empty(capacity, dtype=dtype)
        self.size = 0

    def _reserve(self, need: int) -> None:
        if need > len(self.data):  # doubled, mapped once past ``MAPPED`` bytes
            bigger = _empty(max(need, 2 * len(self.data)), self.data.dtype)
            bigger[: self.size] = self.data[: self.size]
            self.data = bigger

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        self._reserve(need)
        self.data[self.size : need] = values
        self.size = need

    def append(self, value: int) -> None:
        """One offset; a u32 array becomes u64 past 4 GiB rather than wrap."""
        if value > 0xFFFFFFFF and self.data.dtype == np.uint32:
            self.data = self.data.astype(np.uint64)
        self._reserve(self.size + 1)
        self.data[self.size] = value
        self.size += 1

    def span(self, i: int) -> tuple[int, int]:
        """[start, end) of item ``i`` where this array holds the items' end offsets."""
        return (int(self.data[i - 1]) if i else 0), int(self.data[i])


def _empty(size: int, dtype: Any) -> np.ndarray:
    """An uninitialised array; past ``MAPPED`` bytes in its own anonymous mapping, so freeing it
    returns the memory (glibc's heap would keep a hole that small allocations then pin)."""
    nbytes = size * np.dtype(dtype).itemsize
    if nbytes < MAPPED:
        return np.empty(size, dtype=dtype)
    return np.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype)


def _mapped(values: np.ndarray) -> np.ndarray:
    """``values`` copied, to a mapping when large (see :func:`_empty`)."""
    out = _empty(len(values), values.dtype)
    out[:] = values
    return out


class _Run:
    """Sorted postings with a directory on their top bits (see the module docstring).

    Keys are the buckets' top ``KEY_BITS`` bits; entry i of ``cells`` is where the keys whose
    top ``bits`` bits equal i start, so only the key's remaining bits are stored (u32 once a run
    has 2**17 postings) and a lookup reads one cell of ~8-16 entries, not log2(n) cache lines.
    """

    def __init__(self, keys: np.ndarray, ids: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")  # ids keep their (ascending) order in a key
        keys, self.ids = keys[order], _mapped(ids[order])
        self.bits = max(1, len(keys).bit_length() - 4)
        self.shift = np.uint64(KEY_BITS - self.bits)
        rest = keys & np.uint64((1 << int(self.shift)) - 1)
        self.rest = _mapped(rest.astype(np.uint32) if self.shift <= 32 else rest)
        top = keys >> self.shift
        self.cells = np.searchsorted(top, np.arange((1 << self.bits) + 1, dtype=np.uint64))
        self.cells = _mapped(self.cells.astype(np.uint32 if len(keys) < 2**32 else np.uint64))

    def keys(self) -> np.ndarray:
        widths: np.ndarray = np.diff(self.cells.astype(np.int64))  # (numpy 2.4 says timedelta64)
        top = np.repeat(np.arange(1 << self.bits, dtype=np.uint64), widths)
        return (top << self.shift) | self.rest.astype(np.uint64)

    def spans(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[left, right) of each queried key's postings. A cell holds one run of top bits, so
        it is sorted by the rest: the matches are contiguous and found without reading ids."""
        top = (query >> self.shift).astype(np.int64)
        rest = query & np.uint64((1 << int(self.shift)) - 1)
        lo = self.cells[top].astype(np.int64)
        hi = self.cells[top + 1].astype(np.int64)
        widths = hi - lo
        capped = np.minimum(widths, WIDE)  # read each row's cell, and only that
        row = np.repeat(np.arange(len(query)), capped)
        at = np.arange(len(row)) + np.repeat(lo - (np.cumsum(capped) - capped), capped)
        values, wanted = self.rest[at], rest[row]
        left = lo + np.bincount(row, values < wanted, len(query)).astype(np.int64)
        right = left + np.bincount(row, values == wanted, len(query)).astype(np.int64)
        for i in np.flatnonzero(widths > WIDE).tolist():  # crowded by common keys
            cell = self.rest[lo[i] : hi[i]]
            left[i] = lo[i] + np.searchsorted(cell, rest[i], "left")
            right[i] = lo[i] + np.searchsorted(cell, rest[i], "right")
        return left, right


class _Postings:
    """Bucket -> ids as a small dict plus sorted runs; see the module docstring."""

    def __init__(self, flush: int = FLUSH) -> None:
        self._flush_at = flush
        self._recent: dict[int, list[int]] = {}
        self._pending = 0
        self._runs: list[_Run] = []

    def add(self, doc: int, buckets: list[int]) -> None:
        for bucket in buckets:
            self._recent.setdefault(bucket & _MASK64, []).append(doc)
        self._pending += len(buckets)
        if self._pending >= self._flush_at:
            self._flush()

    def _flush(self) -> None:
        keys = _short(np.fromiter((k for k, docs in self._recent.items() for _ in docs), np.uint64))
        ids = np.fromiter(
            (d for docs in self._recent.values() for d in docs), np.uint32, self._pending
        )
        self._recent, self._pending = {}, 0
        self._runs.append(_Run(keys, ids))
        while len(self._runs) >= 2 and len(self._runs[-2].ids) <= FACTOR * len(self._runs[-1].ids):
            runs = self._runs[-2:]
            keys = np.concatenate([run.keys() for run in runs])
            self._runs[-2:] = [_Run(keys, np.concatenate([run.ids for run in runs]))]

    def lookup(self, buckets: list[int], probe: int | None) -> list[list[int]]:
        """Ids of each chosen bucket, in insertion order; with ``probe``, only that many
        buckets, the least filled first (as the dict store chose them). Sizes come from the
        spans, so the postings of a common bucket that is not probed are never read."""
        masked = [b & _MASK64 for b in buckets]
        recent = [self._recent.get(key, ()) for key in masked]
        counts = [len(r) for r in recent]
        spans = []
        if self._runs:  # none until FLUSH postings: sizes and ids from the dict alone
            query = _short(np.array(masked, dtype=np.uint64))
            sizes = np.array(counts, dtype=np.int64)
            for run in self._runs:  # oldest first, so ids ascend within a bucket
                left, right = run.spans(query)
                sizes += right - left
                spans.append((run.ids, left.tolist(), right.tolist()))
            counts = sizes.tolist()
        order: Iterable[int] = range(len(masked))
        if probe is not None and probe < len(masked):  # stable, as np.argsort(kind="stable")
            order = sorted(order, key=counts.__getitem__)[:probe]
        out: list[list[int]] = []
        for row in order:
            docs: list[int] = []
            if counts[row]:
                for ids, left, right in spans:
                    if right[row] > left[row]:
                        docs.extend(ids[left[row] : right[row]].tolist())
                docs.extend(recent[row])
            out.append(docs)
        return out


def best_first(hits: Counter[int], limit: int | None, strong: int) -> list[int]:
    """The candidates to verify, in the order met: all of ``hits`` (candidate -> buckets
    shared, in the order met) when they are at most ``limit``, else those sharing at least
    ``strong`` buckets and, of the others, the ``limit`` sharing the most (the first met
    among equals)."""
    if limit is None or len(hits) <= limit:
        return list(hits)
    weak = [doc for doc, n in hits.items() if n < strong]
    chosen = set(heapq.nlargest(limit, weak, key=hits.__getitem__))
    return [doc for doc, n in hits.items() if n >= strong or doc in chosen]


def _short(keys: np.ndarray) -> np.ndarray:
    """The top ``KEY_BITS`` bits of keys mixed first (splitmix64's finaliser, a bijection), so
    buckets that are small or structured ints spread over the directory like hashes do."""
    keys = keys ^ (keys >> np.uint64(30))
    keys *= np.uint64(0xBF58476D1CE4E5B9)
    keys ^= keys >> np.uint64(27)
    keys *= np.uint64(0x94D049BB133111EB)
    keys ^= keys >> np.uint64(31)
    return keys >> np.uint64(64 - KEY_BITS)


class MemoryBucketStore:
    """Buckets of keys and each key's signature, packed in numpy buffers.

    Atomic: one lock around every read and write (the crawler calls it from the reactor
    thread, extraction workers only sign), so ``query_and_add`` never interleaves with an add."""

    def __init__(self, flush: int = FLUSH, codec: Backend | None = None) -> None:
        """``flush``: postings kept in a dict before they become a sorted run (tests lower
        it); ``codec``: the backend whose ``encode``/``decode`` pack signatures into the
        signature file (without one, signatures are kept as the objects given)."""
        self._codec = codec
        self._lock = threading.Lock()
        self._keys = _Growing(np.uint8, 1 << 16)
        self._key_ends = _Growing(np.uint32)
        self._table = np.full(1024, -1, dtype=np.int32)
        self._objects: list[Any] = []  # without a codec: the signatures
        self._file = SignatureFile() if codec is not None else None
        self._sig_ends = _Growing(np.uint32)  # with a codec: where each one ends in the file
        self._decoded: OrderedDict[int, Any] = OrderedDict()  # doc -> signature, latest last
        self._postings = _Postings(flush)
        # A backend's Hamming keys (SimHash's fingerprints; none for others): 8 bytes a document
        # in memory, so that a candidate too many bits away is rejected unread.
        self._hamming_keys = _Growing(np.uint64, 0)

    def _key_bytes(self, doc: int) -> bytes:
        start, end = self._key_ends.span(doc)
        return self._keys.data[start:end].tobytes()

    def _slot(self, key: bytes) -> tuple[int, int]:
        """(slot, id) of ``key``; id -1 and its free slot when it is not stored."""
        mask = len(self._table) - 1
        slot = xxhash.xxh3_64_intdigest(key) & mask
        while True:
            doc = int(self._table[slot])
            if doc < 0 or self._key_bytes(doc) == key:
                return slot, doc
            slot = (slot + 1) & mask

    def _grow_table(self) -> None:
        self._table = _empty(2 * len(self._table), np.int32)
        self._table.fill(-1)
        for doc in range(len(self)):
            self._table[self._slot(self._key_bytes(doc))[0]] = doc

    def _signature(self, doc: int) -> Any:
        if self._file is None or self._codec is None:
            return self._objects[doc]
        return self._codec.decode(self._file.read(*self._sig_ends.span(doc)))

    def _candidate(self, doc: int) -> Any:
        """``_signature(doc)`` for a verification, which only reads it: decoded once while it
        is among the :data:`DECODED` latest candidates (a signature never changes once added)."""
        found = self._decoded.get(doc)
        if found is None:
            found = self._decoded[doc] = self._signature(doc)
            if len(self._decoded) > DECODED:
                self._decoded.popitem(last=False)
        self._decoded.move_to_end(doc)
        return found

    def query(self, query: Query) -> list[tuple[str, float]]:
        with self._lock:
            return self._query(query)

    def _query(self, query: Query) -> list[tuple[str, float]]:
        matches: list[tuple[str, float]] = []
        # Each candidate with the buckets it shares, in the order first met.
        hits = Counter(chain.from_iterable(self._postings.lookup(query.buckets, query.probe)))
        near = self._codec.hamming_key(query.signature) if self._codec is not None else None
        if near is not None and self._codec is not None:  # too many bits away: rejected unread
            far, fingerprints = self._codec.hamming_limit, self._hamming_keys.data
            close = [doc for doc in hits if (int(fingerprints[doc]) ^ near).bit_count() <= far]
            hits = Counter({doc: hits[doc] for doc in close})
        limit, strong = (None, 0) if self._codec is None else self._codec.checks
        for doc in best_first(hits, limit, strong):
            key = self._key_bytes(doc).decode()
            similarity = query.verify(key, self._candidate(doc))
            if similarity is not None:
                matches.append((key, similarity))
        return matches

    def query_and_add(self, key: str, query: Query) -> list[tuple[str, float]]:
        with self._lock:
            matches = self._query(query)
            if not matches:
                self._add(key, query.signature, query.buckets)
            return matches

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        with self._lock:
            self._add(key, signature, buckets)

    def _add(self, key: str, signature: Any, buckets: list[int]) -> None:
        data = key.encode()
        slot, doc = self._slot(data)
        if doc >= 0:
            return
        doc = len(self)
        self._keys.extend(np.frombuffer(data, dtype=np.uint8))
        self._key_ends.append(self._keys.size)
        self._table[slot] = doc
        if self._file is None or self._codec is None:
            self._objects.append(signature)
        else:
            self._sig_ends.append(self._file.append(self._codec.encode(signature)))
            hamming = self._codec.hamming_key(signature)
            if hamming is not None:
                self._hamming_keys.append(hamming)
        self._postings.add(doc, buckets)
        if len(self) * 10 > len(self._table) * 7:
            self._grow_table()

    def items(self) -> Iterator[tuple[str, Any]]:
        """(key, signature) in insertion order."""
        for doc in range(len(self)):
            yield self._key_bytes(doc).decode(), self._signature(doc)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._slot(key.encode())[1] >= 0

    def __len__(self) -> int:
        return self._key_ends.size
