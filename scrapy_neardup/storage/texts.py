"""Kept texts: what each checked document was compared by, so that a drop can be audited.

With ``NEARDUP_KEEP_TEXT`` > 0 the state keeps, for every document it checks, the text the
signature was made of (the main text after extraction, or the item's text field), cut to that
many characters, keyed by the document's key (its URL, as in the clusters). ``scrapy
neardup-stats --html FILE`` (:mod:`scrapy_neardup.report_html`) shows a dropped text beside
the kept one it was dropped for. Nothing here is read back by the crawl: texts are for people.

**In a state directory**, ``texts.records``: an append-only file of records framed as the
journals' (:mod:`scrapy_neardup.storage.journal`), little-endian::

    u32 length | u32 crc32(payload) | payload
    payload = u32 len | key UTF-8 | text UTF-8

Written through a buffer and fsynced with the other journals (``FileState.sync``, every
``NEARDUP_FLUSH_INTERVAL`` seconds, and at close), so a crash loses at most that window. A
torn last record (a crash mid-write) is cut off when the file is opened again, and readers
stop at it. The file is never compacted: a key written twice (a page crawled again after a
crash) is read as its last record. Opening streams the file record by record, so neither the
crawl nor the report ever holds more than the texts it asked for: at 20,000 characters a
document (about 20 KB of mostly ASCII text), a million documents take about 20 GB of disk and
no memory.

**In Redis**, the hash ``{prefix}:neardup:texts`` (key -> text UTF-8), written in the
state's content thread right after the item's check; ``neardup-stats --reset`` deletes it
with the crawl's other keys.
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
