"""A crawl's durable state: one SQLite database (WAL) in its state directory.

Promises: the file is checked before it is used (:mod:`scrapy_neardup.storage.statefile`). A
commit takes every waiting write, so a kill leaves what was committed: a request's row is
never in a later transaction than its URL key or its page's documents. Layout and rationale:
``docs/design.md#state-database``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import struct
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import astuple, fields
from pathlib import Path
from typing import Any

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage import statefile
from scrapy_neardup.storage.statefile import STATE_FILE, HeadRecord, refuse_link

__all__ = ["STATE_FILE", "HeadRecord", "StateDB", "read_only", "refuse_link"]

#: URL keys and requests held in memory before they are inserted (at the latest at a commit).
BATCH = 8192
#: Keys known to be in the table, answered without a query (a site's pages link to the same
#: pages again and again). Emptied when full (at most about 4 MB).
RECENT = 1 << 16
_HEAD_NAMES = [f.name for f in fields(HeadRecord)]
_HEAD_FIELDS = ", ".join(_HEAD_NAMES)
_INSERT_HEAD = f"insert into heads ({_HEAD_FIELDS}) values ({', '.join('?' for _ in _HEAD_NAMES)})"
#: A URL key as SQLite holds it: its 16 bytes as two signed 64-bit integers, the first the
#: rowid (an insert costs two thirds of one keyed by a 16-byte blob).
_KEY = struct.Struct("<qq")


class StateDB:
    """The state database: open with :meth:`open` (or :meth:`temporary`), write, commit."""

    def __init__(self, path: Path, flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._db: sqlite3.Connection | None = None
        self._unsynced = False  # committed since the last checkpoint
        self._last_durable = time.monotonic()
        self._keys: dict[int, int] = {}  # URL keys not inserted yet: key -> rest
        self._recent: set[int] = set()
        self._requests: list[tuple[int, bytes]] = []  # rows not inserted yet

    def open(self, meta: dict[str, str]) -> bool:
        """Check the file (made with ``meta`` when there is none) and open it for reading,
        so that a file refused before :meth:`start_writing` is left as it is (closing a
        writable connection would checkpoint a killed run's WAL into it). True when the file
        was made now; StateError when it cannot be used."""
        fresh = not refuse_link(self.path)
        for suffix in ("-wal", "-shm"):
            refuse_link(Path(f"{self.path}{suffix}"))
        if fresh:
            statefile.create(self.path, meta)
        statefile.check(self.path)
        self._db = statefile.connect(self.path, read_only=True)
        return fresh

    def start_writing(self) -> None:
        """Reopen the file for writing (WAL), once the state read from it was accepted."""
        if self._db is not None:
            self._db.close()
        self._db = statefile.connect(self.path, pragmas=("journal_mode=wal", "synchronous=normal"))

    @classmethod
    def temporary(cls, flush_interval: float = 1.0) -> StateDB:
        """A database for one crawl without a state directory (its URL keys): unlinked as
        soon as it is open, its rollback journal in memory, so a kill leaves no file."""
        handle, name = tempfile.mkstemp(prefix="neardup-state-", suffix=".sqlite")
        os.close(handle)
        self = cls(Path(name), flush_interval)
        self._db = statefile.connect(self.path, pragmas=("journal_mode=memory", "synchronous=off"))
        self._db.executescript(statefile.SCHEMA)
        self.path.unlink()
        return self

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StateError("the state database is closed", path=str(self.path))
        return self._db

    def _execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        with statefile.sqlite_errors(self.path):
            return self.db.execute(sql, tuple(params))

    def _write(self, sql: str, rows: Iterable[Any]) -> None:
        """Run ``sql`` once for each of ``rows``, in the open transaction (begun if none is)."""
        if not self.db.in_transaction:
            self._execute("begin")
        with statefile.sqlite_errors(self.path):
            self.db.executemany(sql, rows)

    def _flush(self, keys: bool = True) -> None:
        """Insert what waits in memory: the requests first, then (with ``keys``) the URL
        keys. Keys may wait longer than requests: a key lost in a crash costs one fetch
        again, and inserting them in larger sorted batches writes fewer pages."""
        if self._requests:
            rows, self._requests = self._requests, []
            self._write("insert into requests values (?, ?)", rows)
        if keys and self._keys:
            batch = sorted(self._keys.items())  # sorted: B-tree pages in order
            self._write("insert or ignore into url_keys values (?, ?)", batch)
            self._remember(self._keys.keys())
            self._keys = {}

    def commit(self, durable: bool = False) -> None:
        """Commit what was written (the URL keys waiting in memory only when ``durable``):
        a kill loses none of it. With ``durable`` the WAL is fsynced too, so neither does a
        crash of the machine."""
        self._flush(keys=durable)
        if self.db.in_transaction:
            self._execute("commit")
            self._unsynced = True
        if durable and self._unsynced:
            self._unsynced = False
            with contextlib.suppress(FileNotFoundError):  # nothing written, or temporary
                statefile.fsync(f"{self.path}-wal", os.O_NOFOLLOW)
        if durable:
            self._last_durable = time.monotonic()

    def checkpoint(self) -> None:
        """Commit durably, then copy the WAL into the file and empty it: what is committed
        no longer depends on the WAL (a run recorded as under way, at its start)."""
        self.commit(durable=True)
        self._execute("pragma wal_checkpoint(truncate)").fetchall()

    def _due(self) -> bool:
        interval = self.flush_interval
        return interval == 0 or time.monotonic() - self._last_durable >= interval

    def commit_rows(self) -> None:
        """Commit the rows written so far (documents, texts), not the requests and URL keys
        waiting in memory (a check's commit; a document committed without its request is
        found again by its key, as a start request's is). Everything, durably, once
        ``flush_interval`` passed since the last durable commit."""
        if self._due():
            self.commit(durable=True)
        elif self.db.in_transaction:
            self._execute("commit")
            self._unsynced = True

    def rollback(self) -> None:
        """Forget what was not committed (a full disk: the file is left as a crash leaves it)."""
        self._requests, self._keys = [], {}
        if self._db is not None and self._db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("rollback")

    def close(self) -> None:
        """Commit and close (checkpointing the WAL into the file)."""
        try:
            if self._db is not None:
                self.commit(durable=True)
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Close without writing anything more."""
        self.rollback()
        if self._db is not None:
            db, self._db = self._db, None
            db.close()

    def meta(self, name: str) -> str | None:
        return self._execute("select max(value) from meta where name = ?", (name,)).fetchone()[0]

    def set_meta(self, name: str, value: str) -> None:
        self._write("insert or replace into meta values (?, ?)", [(name, value)])

    def count(self, name: str, by: int = 1) -> None:
        self._write(
            "insert into counters values (?, ?) "
            "on conflict(name) do update set value = value + excluded.value",
            [(name, by)],
        )

    def counter(self, name: str) -> int:
        sql = "select coalesce(sum(value), 0) from counters where name = ?"
        return int(self._execute(sql, (name,)).fetchone()[0])

    def add_key(self, fingerprint: bytes) -> None:
        """Record a 16-byte URL key (in memory until a full batch or a durable commit, which
        it makes when ``flush_interval`` passed since the last one)."""
        key, rest = _KEY.unpack(fingerprint)
        self._keys[key] = rest
        if len(self._keys) >= BATCH:
            self._flush()
        if self._due():
            self.commit(durable=True)

    def has_key(self, fingerprint: bytes) -> bool:
        key = _KEY.unpack(fingerprint)[0]
        if key in self._keys or key in self._recent:
            return True
        found = self._execute("select 1 from url_keys where key = ?", (key,)).fetchone()
        if found is not None:
            self._remember((key,))
        return found is not None

    def _remember(self, keys: Iterable[int]) -> None:
        """``keys`` are in the table: kept in memory, at most :data:`RECENT` of them."""
        keys = list(keys)
        if len(self._recent) + len(keys) > RECENT:
            self._recent.clear()
        if len(keys) <= RECENT:
            self._recent.update(keys)

    def url_keys(self) -> Iterator[list[int]]:
        """Every URL key recorded, in batches, each key as the integer of its 16 bytes
        (``int.from_bytes(key, "little", signed=True)``)."""
        self._flush()
        rows = self._execute("select key, rest from url_keys")
        low = (1 << 64) - 1
        while batch := rows.fetchmany(1 << 16):
            yield [(rest << 64) | (key & low) for key, rest in batch]

    def clear_keys(self) -> None:
        self._keys.clear()
        self._recent.clear()
        self._write("delete from url_keys", [()])

    def add_head(self, record: HeadRecord) -> None:
        self._write(_INSERT_HEAD, [astuple(record)])

    def add_relation(self, kind: str, key: str, head: str, method: str, similarity: float) -> None:
        """A duplicate (``member``), or a kept document ``related`` or ``near`` to a head."""
        row = (kind, key, head, method, similarity)
        self._write("insert into relations values (?, ?, ?, ?, ?)", [row])

    def heads(self, after: int = 0) -> Iterator[tuple[int, HeadRecord]]:
        """(rowid, record) of the kept documents after rowid ``after``, in the order kept."""
        sql = f"select rowid, {_HEAD_FIELDS} from heads where rowid > ? order by rowid"
        for rowid, *row in self._execute(sql, (after,)):
            yield rowid, HeadRecord(*row)

    def last_head(self) -> int:
        return int(self._execute("select coalesce(max(rowid), 0) from heads").fetchone()[0])

    def relations(self) -> Iterator[tuple[str, str, str, str, float]]:
        """(kind, key, head, method, similarity), in the order recorded."""
        yield from self._execute("select * from relations order by rowid")

    def put_text(self, key: str, text: str) -> None:
        self._write("insert or replace into texts values (?, ?)", [(key, text)])

    def texts(self, keys: Iterable[str]) -> dict[str, str]:
        """The kept texts of ``keys`` (those that have one)."""
        sql = "select key, text from texts where key = ?"
        return {key: text for wanted in keys for key, text in self._execute(sql, (wanted,))}

    def has_texts(self) -> bool:
        return self._execute("select 1 from texts limit 1").fetchone() is not None

    def add_request(self, seq: int, fingerprint: bytes, data: bytes) -> None:
        """A request to crawl (in memory until a commit, and before any URL key)."""
        self._requests.append((seq, fingerprint + data))  # one column: a third cheaper
        if len(self._requests) >= BATCH:
            self._flush(keys=False)

    def drop_requests(self, seqs: Iterable[int]) -> None:
        self._flush(keys=False)
        self._write("delete from requests where seq = ?", ((seq,) for seq in seqs))

    def requests(self) -> list[tuple[int, bytes, bytes]]:
        """(seq, fingerprint, data) of every request recorded, in order."""
        self._flush(keys=False)
        rows = self._execute("select seq, data from requests order by seq")
        return [(seq, data[:16], data[16:]) for seq, data in rows]

    def add_mark(self, parent: bytes, child: bytes) -> None:
        self._flush(keys=False)  # after the parent's row
        self._write("insert or ignore into marks values (?, ?)", [(parent, child)])

    def drop_marks(self, parents: Iterable[bytes]) -> None:
        self._write("delete from marks where parent = ?", ((p,) for p in parents))

    def marks(self) -> list[tuple[bytes, bytes]]:
        return list(self._execute("select parent, child from marks"))


def read_only(path: Path) -> StateDB:
    """The state database at ``path``, checked as :meth:`StateDB.open` checks it, opened for
    reading only (reports, tests); StateError when there is none or it cannot be used."""
    if not refuse_link(path):
        raise StateError("no state database here (did the crawl run with JOBDIR?)", path=str(path))
    state = StateDB(path)
    state.open({})
    return state
