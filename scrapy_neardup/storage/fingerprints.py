"""An exact set of URL fingerprints on disk, read only when the Bloom filter says "seen".

A Bloom filter's false positive drops a page nobody has fetched: lost data. This store holds
every recorded fingerprint in SQLite (Python's own, no server), so a positive can be
confirmed before a request is dropped. Only positives read it, and SQLite keeps just its page
cache in memory, so the crawl keeps the Bloom filter's memory per URL; the cost is a B-tree
lookup per repeated URL and one insert per new one, committed in batches.

Crash safety: WAL mode, committed at most ``flush_interval`` seconds apart. A fingerprint lost
in a crash makes its URL look new once, which costs one re-fetch, never a dropped page.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from scrapy_neardup.exceptions import StateError

_SCHEMA = """
create table if not exists fingerprints (fp blob primary key) without rowid;
create table if not exists counters (name text primary key, value integer not null);
"""


class FingerprintStore:
    """``add`` / ``__contains__`` over 16-byte fingerprints, plus persistent counters."""

    def __init__(self, path: Path | str, flush_interval: float = 1.0) -> None:
        self.path = str(path)
        self.flush_interval = flush_interval
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("pragma journal_mode=wal")
            self._db.execute("pragma synchronous=normal")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise StateError(f"unreadable URL fingerprint store: {exc}", path=self.path) from None
        self._in_transaction = False
        self._last_commit = time.monotonic()

    def __contains__(self, fingerprint: bytes) -> bool:
        row = self._db.execute("select 1 from fingerprints where fp = ?", (fingerprint,)).fetchone()
        return row is not None

    def add(self, fingerprint: bytes) -> bool:
        """Add; True when it was already there."""
        self._begin()
        cursor = self._db.execute(
            "insert or ignore into fingerprints (fp) values (?)", (fingerprint,)
        )
        self._maybe_commit()
        return cursor.rowcount == 0

    def count(self, name: str, by: int = 1) -> None:
        self._begin()
        self._db.execute(
            "insert into counters values (?, ?) "
            "on conflict(name) do update set value = value + excluded.value",
            (name, by),
        )
        self._maybe_commit()

    def counter(self, name: str) -> int:
        row = self._db.execute("select value from counters where name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def __len__(self) -> int:
        return int(self._db.execute("select count(*) from fingerprints").fetchone()[0])

    def clear(self) -> None:
        """Forget every fingerprint (the counters stay)."""
        self._begin()
        self._db.execute("delete from fingerprints")
        self.commit()

    def _begin(self) -> None:
        if not self._in_transaction:
            self._db.execute("begin")
            self._in_transaction = True

    def _maybe_commit(self) -> None:
        if time.monotonic() - self._last_commit >= self.flush_interval:
            self.commit()

    def commit(self) -> None:
        if self._in_transaction:
            self._db.execute("commit")
            self._in_transaction = False
        self._last_commit = time.monotonic()

    def close(self) -> None:
        self.commit()
        self._db.close()
