"""Crash-safe state on disk: a snapshot plus an append-only journal of what came after it.

Promises: records are ``u32 length | u32 crc32(payload) | payload`` (little-endian), flushed
and fsynced at most ``flush_interval`` seconds apart; at start a torn last record (what a crash
leaves) is cut off and counted, while corruption or truncation (a valid record after a bad one,
a journal shorter than its recorded ``.length``) is a :class:`StateError` and the file is left
as it is. Snapshots (``b"NDSN"``, checksummed) replace the old one atomically before the
journal is emptied. It knows nothing of what the records mean beyond their framing and the
content records' encoding. Rationale: ``docs/design.md#journals``.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xxhash import xxh3_64_intdigest

from scrapy_neardup.exceptions import StateError

logger = logging.getLogger(__name__)

_HEADER = struct.Struct("<II")
#: Bytes a record takes beyond its payload (its length and checksum).
FRAME_OVERHEAD = _HEADER.size
MAX_RECORD = 64 * 1024 * 1024
#: Bytes a journal holds before it hands them to the OS (at the latest at its next sync).
WRITE_BUFFER = 64 * 1024
#: The errors of a write to a full disk (or a user's full quota).
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: Seconds between two rewrites of a journal's recorded length.
LENGTH_INTERVAL = 1.0
LENGTH_SUFFIX = ".length"
_LENGTH = struct.Struct("<4sQI")
_LENGTH_MAGIC = b"NDJL"
# Looking for a valid record after a bad one: offsets per numpy pass, and the most payload
# bytes checksummed before the search gives up (a tail that costly to rule out, around a
# second, is not one torn record: it is treated as corruption).
_SCAN_CHUNK = 1 << 20
_SCAN_BUDGET = 1 << 30


def _parse(data: bytes) -> tuple[list[bytes], int]:
    """The records up to the first bad one, and the byte offset where they end."""
    records: list[bytes] = []
    pos = 0
    while pos + _HEADER.size <= len(data):
        length, crc = _HEADER.unpack_from(data, pos)
        end = pos + _HEADER.size + length
        if not 0 < length <= MAX_RECORD or end > len(data):
            break
        payload = data[pos + _HEADER.size : end]
        if zlib.crc32(payload) != crc:
            break
        records.append(payload)
        pos = end
    return records, pos


class _SearchTooLong(Exception):
    pass


def _valid_frame_after(data: bytes, start: int) -> int | None:
    """The first offset at or after ``start`` where a whole valid record lies, or None.

    The u32 at every offset is read through four aligned numpy views (one per offset mod 4);
    only offsets whose length fits the file are checksummed, in order, so a search costs a
    few numpy passes unless the bytes are full of plausible lengths.
    """
    end = len(data) - _HEADER.size  # a record with a payload starts before this
    view = memoryview(data)
    checked = 0
    for lo in range(start, end, _SCAN_CHUNK):
        hi = min(lo + _SCAN_CHUNK, end)
        found = []
        for first in range(lo, min(lo + 4, hi)):
            count = (hi - first + 3) // 4
            lengths = np.frombuffer(data, "<u4", count=count, offset=first)
            offsets = first + 4 * np.arange(count, dtype=np.int64)
            fits = (lengths > 0) & (lengths <= np.minimum(end - offsets, MAX_RECORD))
            found.append(offsets[fits])
        for pos in np.sort(np.concatenate(found)).tolist():
            length, crc = _HEADER.unpack_from(data, pos)
            checked += length
            if checked > _SCAN_BUDGET:
                raise _SearchTooLong
            if zlib.crc32(view[pos + _HEADER.size : pos + _HEADER.size + length]) == crc:
                return pos
    return None


def read_records(path: Path) -> tuple[list[bytes], int, bool]:
    """Every intact record of a journal up to the first bad one, the byte length they span,
    and whether anything (torn or corrupt) followed them. Read-only: for reports and tests."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0, False
    records, good = _parse(data)
    return records, good, good != len(data)


def _read_state_file(path: Path) -> bytes | None:
    """A state file's bytes (None if there is none); StateError naming it if it is unreadable."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None


class Journal:
    """An append-only record file with bounded-loss flushing."""

    def __init__(self, path: Path, flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        #: Where the length the journal had at a sync is recorded (see the module docstring).
        self.length_path = self.path.with_name(self.path.name + LENGTH_SUFFIX)
        self.flush_interval = flush_interval
        self._file: _AppendFile | None = None
        self._last_sync = time.monotonic()
        self._dirty = False
        self._synced = 0  # the file's length at the last fsync
        self._recorded: int | None = None  # what length_path says; None: nothing to check
        self._last_mark = time.monotonic()
        #: True when :meth:`open` found (and cut off) a torn tail.
        self.torn = False
        #: Called before this journal's records are made durable: a journal whose records
        #: must never outlive another's (see :mod:`scrapy_neardup.frontier`) syncs that first.
        self.before_sync: Callable[[], None] | None = None
        #: Called before any of this journal's records reach the OS (where a SIGKILL cannot
        #: take them back): such a journal hands the other's records to the OS first.
        self.before_write: Callable[[], None] | None = None
        #: Called with the OSError when the disk is full (ENOSPC, EDQUOT) as records are
        #: written; the journal then writes nothing more (:attr:`failed`). Without it the
        #: error is raised.
        self.on_disk_full: Callable[[OSError, Path], None] | None = None
        #: Set once a write failed on a full disk, by the journal or by its owner for every
        #: journal of a state: nothing more is written, and the file is left as a crash
        #: leaves it (a torn last record at most, cut off at the next start).
        self.failed = False

    def open(self) -> Iterator[bytes]:
        """Replay the intact records (cutting off a torn tail), then open for appending.

        StateError, leaving the file as it is, if it is corrupt or shorter than recorded.
        """
        data = _read_state_file(self.path)
        recorded = self._recorded = self._read_length()
        if data is None:
            data = b""
            if recorded:
                raise StateError(
                    f"is missing, but {recorded} bytes had been synced to it "
                    f"({self.length_path.name}); restore it, or remove {self.length_path.name} "
                    "as well to start this journal empty",
                    path=str(self.path),
                )
        if recorded and len(data) < recorded:
            raise StateError(
                f"is {len(data)} bytes long, but {recorded} bytes had been synced to it "
                f"({self.length_path.name}): it was truncated or replaced after it was "
                "written, and the records it lost would be crawled or kept again; it was left "
                "as it is",
                path=str(self.path),
            )
        records, good = _parse(data)
        self.torn = good != len(data)
        if self.torn:
            self._check_tear(data, good, recorded or 0)
            logger.warning(
                "scrapy-neardup: %s ends with a torn or corrupt record after %d good ones "
                "(a crash mid-write, no valid record after it); its %d bytes were cut off",
                self.path,
                len(records),
                len(data) - good,
            )
        try:
            if self.torn:
                with self.path.open("r+b") as fh:
                    fh.truncate(good)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = _AppendFile(self.path, self)
        except OSError as exc:
            message = f"cannot be written: {exc.strerror or exc}"
            raise StateError(message, path=str(self.path)) from None
        self._synced = good
        self._last_mark = time.monotonic()
        return iter(records)

    def _check_tear(self, data: bytes, bad: int, recorded: int) -> None:
        """StateError unless the bad record at ``bad`` can be a crash's torn last record."""
        where = f"a corrupt record at byte offset {bad} of {len(data)}"
        left = "; it was left as it is (move it away, or use a new JOBDIR, to start afresh)"
        if bad < recorded:
            raise StateError(
                f"{where}, within the {recorded} bytes synced before: damage, not a record "
                f"torn by a crash{left}",
                path=str(self.path),
            )
        try:
            later = _valid_frame_after(data, bad + 1)
        except _SearchTooLong:
            raise StateError(
                f"{where}, followed by {len(data) - bad} bytes too costly to search for "
                f"valid records: not one record torn by a crash{left}",
                path=str(self.path),
            ) from None
        if later is not None:
            raise StateError(
                f"{where}, followed by a valid record at byte offset {later}: damage, not a "
                f"record torn by a crash (only the last one can be){left}",
                path=str(self.path),
            )

    def _read_length(self) -> int | None:
        raw = _read_state_file(self.length_path)
        if raw is None:
            return None
        if len(raw) == _LENGTH.size:
            magic, length, crc = _LENGTH.unpack(raw)
            if magic == _LENGTH_MAGIC and zlib.crc32(raw[:-4]) == crc:
                return length
        logger.warning(
            "scrapy-neardup: %s is unreadable, so the length of %s is not checked at this "
            "start; it is written again as the crawl goes on",
            self.length_path,
            self.path.name,
        )
        return None

    def _record_length(self, length: int) -> None:
        """Durably record that the journal is (at least) ``length`` bytes long."""
        head = struct.pack("<4sQ", _LENGTH_MAGIC, length)
        write_snapshot(self.length_path, head + struct.pack("<I", zlib.crc32(head)))
        self._recorded = length
        self._last_mark = time.monotonic()

    def _lower_length(self, length: int) -> None:
        """Before the journal shrinks to ``length``: a crash then must not look like truncation."""
        if self._recorded is not None and self._recorded > length:
            self._record_length(length)

    def append(self, payload: bytes) -> int:
        """Append a record (not empty); returns the offset where its frame starts."""
        if self._file is None:
            raise RuntimeError(f"journal {self.path} is not open")
        if not payload:
            raise ValueError("a journal record cannot be empty")
        offset = self._file.tell()
        if self.failed:
            return offset
        try:
            self._file.write(_frame(payload))
        except OSError as exc:
            self._write_failed(exc)
            return offset
        self._dirty = True
        if self.flush_interval == 0 or time.monotonic() - self._last_sync >= self.flush_interval:
            self.sync()
        return offset

    def _write_failed(self, exc: OSError) -> None:
        """A write failed: on a full disk, stop writing and tell the owner; else raise."""
        if exc.errno not in DISK_FULL or self.on_disk_full is None:
            raise exc
        if not self.failed:
            self.failed = True
            self.on_disk_full(exc, self.path)

    def write_out(self) -> None:
        """Hand the records in the buffer to the OS (not fsynced)."""
        if self._file is not None and not self.failed:
            try:
                self._file.flush()
            except OSError as exc:
                self._write_failed(exc)

    def tell(self) -> int:
        """The journal's length, records still in the buffer included."""
        return self._file.tell() if self._file is not None else 0

    def sync(self) -> None:
        """Flush the buffer and fsync: what is written so far survives a crash. The length
        synced is recorded at most every ``LENGTH_INTERVAL`` seconds."""
        if self.failed:
            return
        try:
            if self._file is not None and self._dirty:
                if self.before_sync is not None:
                    self.before_sync()
                if self.failed:  # the other journal's sync met the full disk
                    return
                self._file.flush()
                os.fsync(self._file.fileno())
                self._dirty = False
                self._synced = self._file.tell()
            now = time.monotonic()
            self._last_sync = now
            if self._synced > (self._recorded or 0) and now - self._last_mark >= LENGTH_INTERVAL:
                self._record_length(self._synced)
        except OSError as exc:
            self._write_failed(exc)

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
        """:meth:`rewrite` with records framed already (copied from :meth:`read_frames`)."""
        spans, offset = [], 0
        for frame in frames:
            spans.append((offset, len(frame)))
            offset += len(frame)
        if self.failed:
            return spans
        self._lower_length(offset)
        if self._file is not None:
            self._file.close()
        write_snapshot(self.path, *frames)
        self._file = _AppendFile(self.path, self)
        self._dirty = False
        self._synced = offset
        return spans

    def reset(self) -> None:
        """Empty the journal (its records are in a snapshot now)."""
        if self._file is not None and not self.failed:
            self._lower_length(0)
            self._file.flush()
            self._file.truncate(0)
            os.fsync(self._file.fileno())
            self._dirty = False
            self._synced = 0

    def close(self) -> None:
        if self._file is None:
            return
        if self.failed:  # left as a crash leaves it: what is in the buffer is not written
            self._file.buffer.clear()
            self._file.close()
            self._file = None
            return
        try:
            self.sync()
            if self._synced > (self._recorded or 0) and not self.failed:
                self._record_length(self._synced)
        except OSError as exc:
            self._write_failed(exc)
        finally:
            if self.failed:
                self._file.buffer.clear()
            try:
                self._file.close()
            except OSError as exc:
                self._write_failed(exc)
            finally:
                self._file = None


class _AppendFile:
    """A file opened for appending, with its own buffer, so that the journal knows when its
    records reach the OS: ``journal.before_write`` runs first (a BufferedWriter spills when
    it fills up, unannounced). ``tell`` is counted, not asked of the OS."""

    def __init__(self, path: Path, journal: Journal) -> None:
        self.raw = path.open("ab", buffering=0)
        self.journal = journal
        self.position = self.raw.seek(0, os.SEEK_END)
        self.buffer = bytearray()

    def write(self, data: bytes) -> None:
        self.buffer += data
        self.position += len(data)
        if len(self.buffer) >= WRITE_BUFFER:
            self.flush()

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        if not self.buffer:
            return
        if self.journal.before_write is not None:
            self.journal.before_write()
        data, self.buffer = bytes(self.buffer), bytearray()
        written = 0
        while written < len(data):  # a regular file takes it all at once; a signal may not
            written += self.raw.write(data[written:]) or 0

    def fileno(self) -> int:
        return self.raw.fileno()

    def truncate(self, size: int) -> None:
        self.flush()
        self.raw.truncate(size)
        self.position = size

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.raw.close()


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def write_snapshot(path: Path, *chunks: bytes) -> None:
    """Replace ``path`` with ``chunks`` joined, atomically (temporary file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        for chunk in chunks:
            fh.write(chunk)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- checksummed snapshots ------------------------------------------------------------------

_SNAPSHOT = struct.Struct("<4sHQQ")  # magic, format, body length, xxh3-64 of the body
_SNAPSHOT_MAGIC = b"NDSN"
_SNAPSHOT_FORMAT = 1
# What snapshots without the checksum begin with (state_format.MAGIC, storage.bloom._MAGIC).
_UNCHECKED_MAGICS = (b"NDUP", b"NDBF")


def save_snapshot(path: Path, body: bytes) -> None:
    """Write ``body`` as a checksummed snapshot, atomically (see :func:`write_snapshot`)."""
    header = _SNAPSHOT.pack(_SNAPSHOT_MAGIC, _SNAPSHOT_FORMAT, len(body), xxh3_64_intdigest(body))
    write_snapshot(path, header, body)


def load_snapshot(path: Path) -> bytes | None:
    """The body of a snapshot written by :func:`save_snapshot` (None if there is none).

    StateError naming the file if it cannot be read, has no header (another version wrote
    it), is truncated, or its checksum does not match.
    """
    data = _read_state_file(path)
    if data is None:
        return None
    if data[:4] != _SNAPSHOT_MAGIC:
        if data[:4] in _UNCHECKED_MAGICS and len(data) >= 6:
            version = int.from_bytes(data[4:6], "little")
            problem = (
                f"state format version {version} without a checksum: written by another "
                "version of scrapy-neardup, which this one does not read"
            )
        else:
            problem = (
                f"not a scrapy-neardup snapshot ({len(data)} bytes, no {_SNAPSHOT_MAGIC!r} "
                "header): written by another version of scrapy-neardup, or by something else"
            )
        raise StateError(problem, path=str(path))
    if len(data) < _SNAPSHOT.size:
        raise StateError(f"snapshot truncated: {len(data)} bytes, no full header", path=str(path))
    _, version, length, digest = _SNAPSHOT.unpack_from(data)
    if version != _SNAPSHOT_FORMAT:
        raise StateError(
            f"snapshot format {version}: written by another version of scrapy-neardup (this "
            f"one reads format {_SNAPSHOT_FORMAT})",
            path=str(path),
        )
    body = data[_SNAPSHOT.size :]
    if len(body) != length:
        raise StateError(
            f"snapshot truncated or extended: its header says {length} bytes, it holds {len(body)}",
            path=str(path),
        )
    if xxh3_64_intdigest(body) != digest:
        raise StateError(
            "snapshot checksum mismatch: the file was damaged after it was written",
            path=str(path),
        )
    return body


# -- the content journal's records ---------------------------------------------------------
#
# One codec for the crawl state (which writes and replays them) and ``scrapy neardup-stats``
# (which reads them without building an index). Signatures are opaque bytes here: the state
# encodes and decodes them with its methods. Integers little-endian::
#
#     b"H" | u32 len | key UTF-8 | u32 len | exact signature | u8 has_near | u32 len | near
#          | u32 tokens                                                        (a kept document)
#     b"M" | u32 len | key | u32 len | head | u32 len | method | f64 similarity   (a duplicate)
#     b"R" | the same fields, similarity: containment of the head in the key (a related one)
#     b"N" | the same fields, similarity: the other decision's measure (a near one)


@dataclass(frozen=True)
class HeadRecord:
    """A kept document: its key, exact signature, near signature (None: short) and tokens."""

    key: str
    exact: bytes
    near: bytes | None
    tokens: int


@dataclass(frozen=True)
class MemberRecord:
    """A duplicate and the kept document (cluster head) it matched; with ``related``, a kept
    document and the earlier kept one it holds and adds to."""

    key: str
    head: str
    method: str
    similarity: float
    related: bool = False
    near: bool = False  # a kept document near the head (engine.Verdict.near_to)


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
        (b"R" if record.related else b"N" if record.near else b"M")
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
    if kind in (b"M", b"R", b"N"):
        head, pos = _take_blob(payload, pos)
        method, pos = _take_blob(payload, pos)
        (similarity,) = struct.unpack_from("<d", payload, pos)
        return MemberRecord(
            key.decode(), head.decode(), method.decode(), similarity, kind == b"R", kind == b"N"
        )
    raise ValueError(f"unknown record type {kind!r}")
