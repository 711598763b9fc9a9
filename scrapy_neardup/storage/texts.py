"""Kept texts: what each checked document was compared by, so that a drop can be audited.

Promises: with ``NEARDUP_KEEP_TEXT`` > 0, the compared text of every checked document (cut to
that many characters) is kept by its key: in a state directory in ``texts.records`` (framed
as the journals, ``u32 len | key | text`` payloads, synced with them, a torn tail cut off),
in Redis in ``{prefix}:neardup:texts``. Nothing is read back by the crawl; readers stream the
file. Rationale: ``docs/design.md#kept-texts``.
"""

from __future__ import annotations

import logging
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

logger = logging.getLogger(__name__)

TEXTS_FILE = "texts.records"
_FRAME = struct.Struct("<II")
_KEY_LEN = struct.Struct("<I")
#: A record longer than this is damage, not a text (NEARDUP_KEEP_TEXT is bounded far below).
MAX_RECORD = 64 * 1024 * 1024


def redis_key(prefix: str) -> str:
    """The hash of a crawl's kept texts in Redis."""
    return f"{{{prefix}}}:neardup:texts"  # with the crawl's records (storage/redis_client.py)


def _encode(key: str, text: str) -> bytes:
    raw_key = key.encode("utf-8", "replace")
    payload = _KEY_LEN.pack(len(raw_key)) + raw_key + text.encode("utf-8", "replace")
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def _decode(payload: bytes) -> tuple[str, bytes]:
    (length,) = _KEY_LEN.unpack_from(payload)
    if _KEY_LEN.size + length > len(payload):
        raise ValueError("key longer than its record")
    key = payload[_KEY_LEN.size : _KEY_LEN.size + length].decode("utf-8", "replace")
    return key, payload[_KEY_LEN.size + length :]


def _records(fh: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(end offset, payload) of each intact record from the file's start; stops at the first
    torn or damaged one. One record in memory at a time."""
    pos = 0
    while True:
        head = fh.read(_FRAME.size)
        if len(head) < _FRAME.size:
            return
        length, crc = _FRAME.unpack(head)
        if not 0 < length <= MAX_RECORD:
            return
        payload = fh.read(length)
        if len(payload) < length or zlib.crc32(payload) != crc:
            return
        pos += _FRAME.size + length
        yield pos, payload


def read_texts(path: Path, wanted: Iterable[str]) -> dict[str, str]:
    """The kept texts of the ``wanted`` keys found in ``path`` (a missing file: none)."""
    wanted = set(wanted)
    found: dict[str, str] = {}
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return found
    with fh:
        for _, payload in _records(fh):
            try:
                key, text = _decode(payload)
            except (ValueError, struct.error):
                continue
            if key in wanted:
                found[key] = text.decode("utf-8", "replace")
    return found


def redis_texts(client: Any, prefix: str, keys: Iterable[str]) -> dict[str, str]:
    """The kept texts of ``keys`` in Redis (a redis-py client), fetched in batches."""
    keys = list(keys)
    found: dict[str, str] = {}
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        for key, value in zip(batch, client.hmget(redis_key(prefix), batch), strict=True):
            if value is not None:
                found[key] = value.decode("utf-8", "replace")
    return found


class TextFile:
    """The append-only ``texts.records`` of a state directory (see the module docstring)."""

    def __init__(self, path: Path, flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._file: BinaryIO | None = None
        self._dirty = False
        self._last_sync = time.monotonic()

    def open(self) -> None:
        """Cut off a torn last record (a crash mid-write), then open for appending."""
        good = 0
        if self.path.exists():
            with self.path.open("rb") as fh:
                for end, _ in _records(fh):
                    good = end
            size = self.path.stat().st_size
            if good != size:
                logger.warning(
                    "scrapy-neardup: %s ends with a torn or damaged record; its last %d bytes "
                    "were cut off",
                    self.path,
                    size - good,
                )
                with self.path.open("r+b") as fh:
                    fh.truncate(good)
        self._file = self.path.open("ab")

    def put(self, key: str, text: str) -> None:
        """Append ``key``'s text; synced with the journals, or here once an interval passed."""
        if self._file is None:
            return
        self._file.write(_encode(key, text))
        self._dirty = True
        if self.flush_interval == 0 or time.monotonic() - self._last_sync >= self.flush_interval:
            self.sync()

    def sync(self) -> None:
        if self._file is not None and self._dirty:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._dirty = False
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None
