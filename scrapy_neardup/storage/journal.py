"""Crash-safe state on disk: a snapshot plus an append-only journal of what came after it.

Journal records are ``u32 length | u32 crc32(payload) | payload`` (little-endian). Records are
written through a buffer and flushed and fsynced at most ``flush_interval`` seconds apart,
so a crash (even SIGKILL) loses at most that window. On open, records are replayed until the
first torn or corrupt one; the file is cut there, so a half-written last record costs that
record and never a failed start. A snapshot is written to a temporary file, fsynced and
renamed over the old one, and only then is the journal emptied: replaying a journal on top of
a snapshot that already holds its records must therefore be harmless (adds are idempotent).
"""

from __future__ import annotations

import logging
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<II")
#: Bytes a record takes beyond its payload (its length and checksum).
FRAME_OVERHEAD = _HEADER.size
MAX_RECORD = 64 * 1024 * 1024


def read_records(path: Path) -> tuple[list[bytes], int, bool]:
    """Every intact record of a journal, the byte length they span, and whether a bad tail
    (torn or corrupt) followed them."""
    records: list[bytes] = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return records, 0, False
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        if length > MAX_RECORD or end > len(data):
            break
        payload = data[pos + _HEADER.size : end]
        if zlib.crc32(payload) != crc:
            break
        records.append(payload)
        pos = end
    return records, pos, pos != len(data)


class Journal:
    """An append-only record file with bounded-loss flushing."""

    def __init__(self, path: Path, flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._file: BinaryIO | None = None
        self._last_sync = time.monotonic()
        self._dirty = False
        #: True when :meth:`open` found (and cut off) a torn or corrupt tail.
        self.torn = False
        #: Called before this journal's records are made durable: a journal whose records
        #: must never outlive another's (see :mod:`scrapy_neardup.frontier`) syncs that first.
        self.before_sync: Callable[[], None] | None = None

    def open(self) -> Iterator[bytes]:
        """Replay the intact records (cutting off a bad tail), then open for appending."""
        records, good, bad_tail = read_records(self.path)
        self.torn = bad_tail
        if bad_tail:
            logger.warning(
                "scrapy-neardup: %s ends with a torn or corrupt record after %d good ones "
                "(a crash mid-write); it was cut off",
                self.path,
                len(records),
            )
            with self.path.open("r+b") as fh:
                fh.truncate(good)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("ab")
        return iter(records)

    def append(self, payload: bytes) -> int:
        """Append a record; returns the offset where its frame starts."""
        if self._file is None:
            raise RuntimeError(f"journal {self.path} is not open")
        offset = self._file.tell()
        self._file.write(_frame(payload))
        self._dirty = True
        if self.flush_interval == 0 or time.monotonic() - self._last_sync >= self.flush_interval:
            self.sync()
        return offset

    def tell(self) -> int:
        """The journal's length, records still in the buffer included."""
        return self._file.tell() if self._file is not None else 0

    def sync(self) -> None:
        """Flush the buffer and fsync: what is written so far survives a crash."""
        if self._file is not None and self._dirty:
            if self.before_sync is not None:
                self.before_sync()
            self._file.flush()
            os.fsync(self._file.fileno())
            self._dirty = False
        self._last_sync = time.monotonic()

    def rewrite(self, payloads: Iterable[bytes]) -> list[tuple[int, int]]:
        """Replace every record with ``payloads``, atomically (compaction), and go on
        appending; returns the (offset, length) of each one's frame."""
        return self.rewrite_frames([_frame(p) for p in payloads])

    def read_frames(self, spans: Iterable[tuple[int, int]]) -> list[bytes]:
        """The framed records at ``(offset, length)`` spans (from :meth:`append`)."""
        if self._file is not None:
            self._file.flush()
        with self.path.open("rb") as fh:
            out = []
            for offset, length in spans:
                fh.seek(offset)
                out.append(fh.read(length))
        return out

    def rewrite_frames(self, frames: list[bytes]) -> list[tuple[int, int]]:
        if self._file is not None:
            self._file.close()
        write_snapshot(self.path, b"".join(frames))
        self._file = self.path.open("ab")
        self._dirty = False
        spans, offset = [], 0
        for frame in frames:
            spans.append((offset, len(frame)))
            offset += len(frame)
        return spans

    def reset(self) -> None:
        """Empty the journal (its records are in a snapshot now)."""
        if self._file is not None:
            self._file.flush()
            self._file.truncate(0)
            os.fsync(self._file.fileno())
            self._dirty = False

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def write_snapshot(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- the content journal's records ---------------------------------------------------------
#
# One codec for the crawl state (which writes and replays them) and ``scrapy neardup-stats``
# (which reads them without building an index). Signatures are opaque bytes here: the state
# encodes and decodes them with its methods. Integers little-endian::
#
#     b"H" | u32 len | key UTF-8 | u32 len | exact signature | u8 has_near | u32 len | near
#          | u32 tokens                                                        (a kept document)
#     b"M" | u32 len | key | u32 len | head | u32 len | method | f64 similarity   (a duplicate)


@dataclass(frozen=True)
class HeadRecord:
    """A kept document: its key, exact signature, near signature (None: short) and tokens."""

    key: str
    exact: bytes
    near: bytes | None
    tokens: int


@dataclass(frozen=True)
class MemberRecord:
    """A duplicate and the kept document (cluster head) it matched."""

    key: str
    head: str
    method: str
    similarity: float


def _blob(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def _take_blob(payload: bytes, pos: int) -> tuple[bytes, int]:
    (length,) = struct.unpack_from("<I", payload, pos)
    end = pos + 4 + length
    if end > len(payload):
        raise ValueError("record shorter than its lengths say")
    return payload[pos + 4 : end], end


def encode_head(record: HeadRecord) -> bytes:
    return (
        b"H"
        + _blob(record.key.encode())
        + _blob(record.exact)
        + (b"\x00" if record.near is None else b"\x01")
        + _blob(record.near or b"")
        + struct.pack("<I", record.tokens)
    )


def encode_member(record: MemberRecord) -> bytes:
    return (
        b"M"
        + _blob(record.key.encode())
        + _blob(record.head.encode())
        + _blob(record.method.encode())
        + struct.pack("<d", record.similarity)
    )


def decode_content_record(payload: bytes) -> HeadRecord | MemberRecord:
    """One record of ``content.journal``; ValueError (or struct.error, UnicodeDecodeError)
    when it is not one."""
    kind = payload[:1]
    key, pos = _take_blob(payload, 1)
    if kind == b"H":
        exact, pos = _take_blob(payload, pos)
        has_near = payload[pos : pos + 1] == b"\x01"
        near, pos = _take_blob(payload, pos + 1)
        (tokens,) = struct.unpack_from("<I", payload, pos)
        return HeadRecord(key.decode(), exact, near if has_near else None, tokens)
    if kind == b"M":
        head, pos = _take_blob(payload, pos)
        method, pos = _take_blob(payload, pos)
        (similarity,) = struct.unpack_from("<d", payload, pos)
        return MemberRecord(key.decode(), head.decode(), method.decode(), similarity)
    raise ValueError(f"unknown record type {kind!r}")
