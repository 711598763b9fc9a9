"""An exact set of URL fingerprints on disk, read only when the Bloom filter says "seen".

Promises: every recorded fingerprint is kept in SQLite (a rowid table keyed by its first 8
bytes), so a Bloom positive is confirmed before a request is dropped; inserts are batched and
committed at most ``flush_interval`` seconds apart (WAL), so a crash costs at most a re-fetch,
never a dropped page; a damaged file is a :class:`StateError` naming it. It knows nothing of
Scrapy. Rationale: ``docs/design.md#confirm-store``.
"""

from __future__ import annotations

import sqlite3
import struct
import time
from pathlib import Path
from typing import Any

from scrapy_neardup.exceptions import StateError

#: Keys held in memory before they are inserted (at least every flush interval).
BATCH = 8192
#: Keys known to be in the table, answered without a query: a site's pages link to the same
#: pages again and again (its navigation), and on sqlite3-doc 27,000 of a crawl's 28,000
#: requests are such repeats. Emptied when full (at most about 4 MB).
RECENT = 1 << 16

_SCHEMA = """
create table if not exists url_keys (key integer primary key);
create table if not exists counters (name text primary key, value integer not null);
"""
_OLD_TABLE = "fingerprints"  # (fp blob primary key) without rowid: stores written before
_TABLES = frozenset(("url_keys", "counters", _OLD_TABLE))
#: The key of a fingerprint: its first 8 bytes as a signed 64-bit integer (SQLite's integers).
_key = struct.Struct("<q").unpack_from


class FingerprintStore:
    """``add`` / ``__contains__`` over 16-byte fingerprints, plus persistent counters."""

    def __init__(
        self, path: Path | str, flush_interval: float = 1.0, temporary: bool = False
    ) -> None:
        """``temporary``: a store for one crawl without a state directory. Its file is
        unlinked as soon as it is open (SQLite keeps its descriptor), with its rollback
        journal in memory, so that a crawl killed with SIGKILL leaves no file behind."""
        self.path = str(path)
        self.flush_interval = flush_interval
        if not temporary:
            self._check()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        self._in_transaction = False
        self._last_commit = time.monotonic()
        self._pending: set[int] = set()
        self._recent: set[int] = set()
        try:
            self._execute("pragma journal_mode=memory" if temporary else "pragma journal_mode=wal")
            self._execute("pragma synchronous=off" if temporary else "pragma synchronous=normal")
            try:
                self._db.executescript(_SCHEMA)
                self._migrate()
            except sqlite3.ProgrammingError:
                raise
            except sqlite3.DatabaseError as exc:
                raise self._error(exc) from None
        except StateError:
            self._db.close()
            raise
        if temporary:
            Path(self.path).unlink(missing_ok=True)

    def _check(self) -> None:
        """Read an existing file through a read-only connection first, every page of its
        tables (``count(*)``): most damage shows now rather than mid-crawl, and nothing is
        written to a damaged file (closing a writable connection would checkpoint the WAL of
        a killed run into it, changing the file the error names)."""
        path = Path(self.path)
        if not path.exists() or path.stat().st_size == 0:
            return
        try:
            db = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        try:
            rows = db.execute("select name from sqlite_master where type = 'table'").fetchall()
            for table in _TABLES & {row[0] for row in rows}:
                db.execute(f"select count(*) from {table}").fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        finally:
            db.close()

    def _migrate(self) -> None:
        """Copy the keys of a store written before (16-byte blobs) into ``url_keys``."""
        db = self._db
        found = "select 1 from sqlite_master where type = 'table' and name = ?"
        if db.execute(found, (_OLD_TABLE,)).fetchone() is None:
            return
        db.execute("begin")
        try:
            rows = db.execute(f"select fp from {_OLD_TABLE}")
            while batch := rows.fetchmany(BATCH * 64):
                keys = sorted(_key(fp)[0] for (fp,) in batch)
                db.executemany("insert or ignore into url_keys (key) values (?)", zip(keys))
            db.execute(f"drop table {_OLD_TABLE}")
            db.execute("commit")
        except BaseException:
            db.execute("rollback")  # the old table stays, and is copied at the next opening
            raise

    def _error(self, exc: sqlite3.Error) -> StateError:
        return StateError(f"unreadable URL fingerprint store: {exc}", path=self.path)

    def _execute(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        """``execute``, with SQLite's errors about the file as a StateError naming it."""
        try:
            return self._db.execute(sql, params)
        except sqlite3.ProgrammingError:
            raise  # a bug here, not the file
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def _one(self, sql: str, params: tuple[object, ...] = ()) -> tuple[Any, ...] | None:
        try:
            return self._db.execute(sql, params).fetchone()
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def __contains__(self, fingerprint: bytes) -> bool:
        key = _key(fingerprint)[0]
        if key in self._pending or key in self._recent:
            return True
        found = self._one("select 1 from url_keys where key = ?", (key,)) is not None
        if found:
            self._remember([key])
        return found

    def _remember(self, keys: list[int] | set[int]) -> None:
        """``keys`` are in the table: kept in memory, at most :data:`RECENT` of them."""
        if len(self._recent) + len(keys) > RECENT:
            self._recent.clear()
        if len(keys) <= RECENT:
            self._recent.update(keys)

    def add(self, fingerprint: bytes) -> None:
        self._pending.add(_key(fingerprint)[0])
        if len(self._pending) >= BATCH:
            self._insert_pending()
        self._maybe_commit()

    def _insert_pending(self) -> None:
        if not self._pending:
            return
        self._begin()
        keys = sorted(self._pending)  # sorted: B-tree pages in order
        try:
            self._db.executemany("insert or ignore into url_keys (key) values (?)", zip(keys))
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        self._remember(self._pending)
        self._pending.clear()

    def count(self, name: str, by: int = 1) -> None:
        self._begin()
        self._execute(
            "insert into counters values (?, ?) "
            "on conflict(name) do update set value = value + excluded.value",
            (name, by),
        )
        self._maybe_commit()

    def counter(self, name: str) -> int:
        row = self._one("select value from counters where name = ?", (name,))
        return int(row[0]) if row else 0

    def __len__(self) -> int:
        self._insert_pending()
        row = self._one("select count(*) from url_keys")
        return int(row[0]) if row else 0

    def clear(self) -> None:
        """Forget every fingerprint (the counters stay)."""
        self._pending.clear()
        self._recent.clear()
        self._begin()
        self._execute("delete from url_keys")
        self.commit()

    def _begin(self) -> None:
        if not self._in_transaction:
            self._execute("begin")
            self._in_transaction = True

    def _maybe_commit(self) -> None:
        if time.monotonic() - self._last_commit >= self.flush_interval:
            self.commit()

    def commit(self) -> None:
        self._insert_pending()
        if self._in_transaction:
            self._execute("commit")
            self._in_transaction = False
        self._last_commit = time.monotonic()

    def close(self) -> None:
        self.commit()
        self._db.close()
