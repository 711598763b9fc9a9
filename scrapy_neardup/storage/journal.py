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
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<II")
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

    def append(self, payload: bytes) -> None:
        if self._file is None:
            raise RuntimeError(f"journal {self.path} is not open")
        self._file.write(_frame(payload))
        self._dirty = True
        if self.flush_interval == 0 or time.monotonic() - self._last_sync >= self.flush_interval:
            self.sync()

    def sync(self) -> None:
        """Flush the buffer and fsync: what is written so far survives a crash."""
        if self._file is not None and self._dirty:
            if self.before_sync is not None:
                self.before_sync()
            self._file.flush()
            os.fsync(self._file.fileno())
            self._dirty = False
        self._last_sync = time.monotonic()

    def rewrite(self, payloads: Iterable[bytes]) -> None:
        """Replace every record with ``payloads``, atomically (compaction), and go on appending."""
        if self._file is not None:
            self._file.close()
        write_snapshot(self.path, b"".join(_frame(p) for p in payloads))
        self._file = self.path.open("ab")
        self._dirty = False

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
