"""The binary format of a saved near-duplicate state (``Deduplicator.to_bytes``).

Promises: little-endian throughout, no pickle; :func:`iter_state` reads any state this
release writes, record by record, without building an index, and raises
:class:`~scrapy_neardup.exceptions.StateError` (never another error) on anything corrupt.
It knows nothing of backends: signatures are opaque bytes here. The layout is in
:func:`iter_state`; rationale: ``docs/design.md#engine`` and ``docs/design.md#journals``.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from scrapy_neardup.exceptions import StateError

__all__ = [
    "MAGIC",
    "VERSION",
    "Member",
    "iter_state",
    "write_header",
    "write_members",
    "write_signatures",
]

MAGIC = b"NDUP"
VERSION = 2  # 2: phrase filters in the backend signatures, related documents


@dataclass(frozen=True)
class Member:
    """A duplicate and the cluster head it joined; or, in ``Deduplicator.related``, a kept
    document (``key``) and the earlier kept one (``head``) it holds and adds to.

    ``method`` is the name of the backend that matched (the saved field keeps this name)."""

    key: str
    head: str
    method: str
    similarity: float


_META_FIELDS = {"method": str, "params": dict, "min_tokens": int, "counts": dict}


def write_header(out: BinaryIO, meta: dict[str, Any]) -> None:
    """The magic, the version and the meta JSON (``method`` names the backend)."""
    data = json.dumps(meta, sort_keys=True).encode()
    out.write(MAGIC + struct.pack("<HI", VERSION, len(data)) + data)


def write_signatures(out: BinaryIO, count: int, items: Iterable[tuple[str, bytes]]) -> None:
    """One section of ``count`` (key, encoded signature) pairs."""
    out.write(struct.pack("<Q", count))
    for key, signature in items:
        _write_blob(out, key.encode())
        _write_blob(out, signature)


def write_members(out: BinaryIO, members: Collection[Member]) -> None:
    """One section of members (duplicates, related or near documents)."""
    out.write(struct.pack("<Q", len(members)))
    for m in members:
        _write_blob(out, m.key.encode())
        _write_blob(out, m.head.encode())
        method = m.method.encode()
        out.write(struct.pack("<B", len(method)) + method + struct.pack("<d", m.similarity))


def iter_state(data: bytes) -> Iterator[tuple[Any, ...]]:
    """Records of a saved state, without building any index: ``("meta", dict)``, then
    ``("exact" | "near", key, signature bytes)``, then ``("member" | "related", Member)``,
    then ``("nearby", Member)`` where the state has a near section. The layout::

        magic  b"NDUP"  | u16 version (2)
        u32 n | n bytes  meta: UTF-8 JSON {"method", "params", "min_tokens", "counts"}
        u64 n | n heads:    u32 len | key UTF-8 | u32 len | exact signature
        u64 n | n heads:    u32 len | key UTF-8 | u32 len | backend signature
        u64 n | n members:  u32 len | key | u32 len | head | u8 len | backend | f64 similarity
        u64 n | n related:  the same fields (key: the richer document, head: the kept one)
        [u64 n | n near:    the same fields (key: a kept document near the kept head), only
                            where meta has "near": n > 0; a state without it has no section]
    """
    src = io.BytesIO(data)
    try:
        header = _read_exact(src, 10)
        if header[:4] != MAGIC:
            raise StateError("not a scrapy-neardup state file (bad magic)")
        version, meta_len = struct.unpack("<HI", header[4:])
        if version != VERSION:
            raise StateError(f"state format version {version}, this release reads {VERSION}")
        meta = json.loads(_read_exact(src, meta_len))
        if not isinstance(meta, dict) or any(
            not isinstance(meta.get(field), kind) for field, kind in _META_FIELDS.items()
        ):
            raise StateError(f"corrupt near-duplicate state: meta must hold {list(_META_FIELDS)}")
        if not all(isinstance(v, int) for v in meta["counts"].values()):
            raise StateError("corrupt near-duplicate state: counts must be integers")
        yield ("meta", meta)
        for kind in ("exact", "near"):
            (count,) = struct.unpack("<Q", _read_exact(src, 8))
            for _ in range(count):
                yield (kind, _read_blob(src).decode(), _read_blob(src))
        for kind in ("member", "related", "nearby"):
            if kind == "nearby" and not meta.get("near"):
                break  # no near section
            (count,) = struct.unpack("<Q", _read_exact(src, 8))
            for _ in range(count):
                key = _read_blob(src).decode()
                head = _read_blob(src).decode()
                (length,) = struct.unpack("<B", _read_exact(src, 1))
                method = _read_exact(src, length).decode()
                (similarity,) = struct.unpack("<d", _read_exact(src, 8))
                yield (kind, Member(key, head, method, similarity))
        if src.read(1):
            raise StateError("corrupt near-duplicate state: bytes after the last record")
    except (struct.error, UnicodeDecodeError, ValueError, KeyError, EOFError) as exc:
        raise StateError(f"corrupt near-duplicate state: {exc}") from None


def _write_blob(out: BinaryIO, data: bytes) -> None:
    out.write(struct.pack("<I", len(data)) + data)


def _read_exact(src: BinaryIO, n: int) -> bytes:
    data = src.read(n)
    if len(data) != n:
        raise EOFError(f"truncated: wanted {n} bytes, found {len(data)}")
    return data


def _read_blob(src: BinaryIO) -> bytes:
    (length,) = struct.unpack("<I", _read_exact(src, 4))
    return _read_exact(src, length)
