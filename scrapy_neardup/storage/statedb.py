"""A crawl's durable state: one SQLite database (WAL) in its state directory.

Promises: the file holds our tables and nothing else (checked read-only before any write, so a
crafted file runs no code), and is never followed through a symbolic link; a damaged or
foreign file stops the start with a :class:`StateError` naming it, left as it is. A commit
takes every waiting write, so a kill leaves what was committed: a request's row is never in a
later transaction than its URL key or its page's documents. A new file is made whole and
renamed into place. Layout and rationale: ``docs/design.md#state-database``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
import struct
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, fields
from operator import attrgetter
from pathlib import Path
from typing import Any

from scrapy_neardup.exceptions import StateError

#: The database's name in the state directory, and the format its ``meta`` table records.
STATE_FILE = "state.sqlite"
FORMAT = "1"
#: URL keys and requests held in memory before they are inserted (at the latest at a commit).
BATCH = 8192
#: Keys known to be in the table, answered without a query (a site's pages link to the same
#: pages again and again). Emptied when full (at most about 4 MB).
RECENT = 1 << 16


@dataclass(frozen=True)
class HeadRecord:
    """A kept document, one row of ``heads``: its key, exact signature, near signature (None:
    a short text) and tokens. A new field here is a new column of ``heads`` below."""

    key: str
    exact: bytes
    near: bytes | None
    tokens: int


SCHEMA = """
create table meta (name text primary key, value text not null);
create table url_keys (key integer primary key, rest integer not null);
create table counters (name text primary key, value integer not null);
create table heads (key text not null, exact blob not null, near blob, tokens integer not null);
create table relations (kind text not null, key text not null, head text not null,
  method text not null, similarity real not null);
create table requests (seq integer primary key, data blob not null);
create table marks (parent blob not null, child blob not null, primary key (parent, child));
create table texts (key text primary key, text text not null);
"""
TABLES = ("meta", "url_keys", "counters", "heads", "relations", "requests", "marks", "texts")
_HEAD_NAMES = [f.name for f in fields(HeadRecord)]
_HEAD_FIELDS = ", ".join(_HEAD_NAMES)
_INSERT_HEAD = f"insert into heads ({_HEAD_FIELDS}) values ({', '.join('?' for _ in _HEAD_NAMES)})"
_head_row = attrgetter(*_HEAD_NAMES)
#: A URL key as SQLite holds it: its 16 bytes as two signed 64-bit integers, the first the
#: rowid (an insert costs two thirds of one keyed by a 16-byte blob).
_KEY = struct.Struct("<qq")
_SCHEMA_SQL = "select type, name, tbl_name, sql from sqlite_master"
with closing(sqlite3.connect(":memory:")) as _db:
    _SCHEMA_ROWS = set(_db.executescript(SCHEMA).execute(_SCHEMA_SQL))


def refuse_link(path: Path) -> bool:
    """Whether ``path`` exists; StateError if it is a symbolic link or not a regular file:
    a state directory holds its own files, never a way to another one."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StateError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None
    if stat.S_ISLNK(mode):
        raise StateError(
            "is a symbolic link: the state is only read and written in its own files, so it "
            "is refused (remove the link, or use a new JOBDIR)",
            path=str(path),
        )
    if not stat.S_ISREG(mode):
        raise StateError("cannot be read: not a regular file", path=str(path))
    return True


def _fsync(path: Path | str, flags: int = 0) -> None:
    """fsync a file, or a directory (so that a rename in it survives a crash of the machine)."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class StateDB:
    """The state database: open with :meth:`open` (or :meth:`temporary`), write, commit."""

    def __init__(self, path: Path, flush_interval: float = 1.0) -> None:
        self.path = Path(path)
        self.flush_interval = flush_interval
        self._db: sqlite3.Connection | None = None
        self._temporary = False
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
            self._create(meta)
        self._check()
        self._db = self._connect(str(self.path), read_only=True)
        return fresh

    def start_writing(self) -> None:
        """Reopen the file for writing (WAL), once the state read from it was accepted."""
        if self._db is not None:
            self._db.close()
        self._db = self._connect(str(self.path), pragmas=("journal_mode=wal", "synchronous=normal"))

    @classmethod
    def temporary(cls, flush_interval: float = 1.0) -> StateDB:
        """A database for one crawl without a state directory (its URL keys): unlinked as
        soon as it is open, its rollback journal in memory, so a kill leaves no file."""
        handle, name = tempfile.mkstemp(prefix="neardup-state-", suffix=".sqlite")
        os.close(handle)
        self = cls(Path(name), flush_interval)
        self._temporary = True
        self._db = self._connect(name, pragmas=("journal_mode=memory", "synchronous=off"))
        self._db.executescript(SCHEMA)
        self.path.unlink()
        return self

    def _connect(
        self, name: str, read_only: bool = False, pragmas: tuple[str, ...] = ()
    ) -> sqlite3.Connection:
        with self._errors():
            if read_only:
                uri = Path(name).absolute().as_uri() + "?mode=ro"
                db = sqlite3.connect(uri, uri=True, isolation_level=None)
            else:
                db = sqlite3.connect(name, isolation_level=None, check_same_thread=False)
            # A crafted schema's functions never run; damage is seen at the read that meets it.
            for pragma in ("trusted_schema=off", "cell_size_check=on", *pragmas):
                db.execute(f"pragma {pragma}")
        return db

    def _create(self, meta: dict[str, str]) -> None:
        """Make the file whole under another name, then rename it into place: a file named
        ``STATE_FILE`` always has its schema and meta, so one without is damage."""
        new = self.path.with_name(self.path.name + ".new")
        new.unlink(missing_ok=True)  # a leftover of a kill (or a link: unlinked, not followed)
        with self._errors(), closing(self._connect(str(new))) as db:
            db.executescript(SCHEMA)
            db.executemany("insert into meta values (?, ?)", [("format", FORMAT), *meta.items()])
        _fsync(new)
        os.replace(new, self.path)
        _fsync(self.path.parent)

    def _check(self) -> None:
        """Read the file through a read-only connection: its schema must be ours exactly,
        its format this one, and every page of its tables readable (``count(*)``)."""
        self._check_size()
        with self._errors(), closing(self._connect(str(self.path), read_only=True)) as db:
            rows = set(db.execute(_SCHEMA_SQL))
            meta = any(row[1] == "meta" for row in rows)
            found = db.execute("select value from meta where name = 'format'") if meta else ()
            for (version,) in found:
                if version != FORMAT:
                    raise StateError(
                        f"state format {version!r}: written by another release of scrapy-neardup "
                        f"(this one reads format {FORMAT}); finish that crawl with the release "
                        "that wrote it, or start a new JOBDIR",
                        path=str(self.path),
                    )
            if rows != _SCHEMA_ROWS:
                extra = ", ".join(sorted(f"{row[0]} {row[1]}" for row in rows - _SCHEMA_ROWS))
                gone = ", ".join(sorted(f"{row[0]} {row[1]}" for row in _SCHEMA_ROWS - rows))
                raise StateError(
                    f"not a scrapy-neardup state database (not ours: {extra or 'none'}; "
                    f"missing: {gone or 'none'}): damaged or replaced, and left as it is",
                    path=str(self.path),
                )
            for table in TABLES:
                db.execute(f"select count(*) from {table}").fetchone()

    def _check_size(self) -> None:
        """A file that is not SQLite's, or shorter than its header says (truncated; checked
        when the WAL is empty: after a kill it may hold the pages the header counts)."""
        wal = Path(f"{self.path}-wal")
        with self.path.open("rb") as fh:
            header = fh.read(100)
            size = os.fstat(fh.fileno()).st_size
        if len(header) < 100:
            raise StateError(f"truncated: {size} bytes, no database header", path=str(self.path))
        if not header.startswith(b"SQLite format 3\0"):  # read even where the WAL has page 1
            raise StateError(
                "file is not a database (its header is not SQLite's)", path=str(self.path)
            )
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        pages = int.from_bytes(header[28:32], "big")
        valid = header[24:28] == header[92:96]  # the header's page count is current
        if valid and size < pages * page_size and not (wal.exists() and wal.stat().st_size):
            raise StateError(
                f"truncated: {size} bytes, its header counts {pages} pages of {page_size} "
                "bytes; it was left as it is (restore it, or start a new JOBDIR)",
                path=str(self.path),
            )

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors about the file as ours: a full disk as OSError (ENOSPC), anything
        else as a StateError naming the file. A misuse (ProgrammingError) is a bug: as it is."""
        try:
            yield
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.DatabaseError as exc:
            if "database or disk is full" in str(exc):
                raise OSError(errno.ENOSPC, "No space left on device", str(self.path)) from None
            raise StateError(f"unreadable state database: {exc}", path=str(self.path)) from None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StateError("the state database is closed", path=str(self.path))
        return self._db

    def _execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        with self._errors():
            return self.db.execute(sql, tuple(params))

    def _executemany(self, sql: str, rows: Iterable[Any]) -> None:
        self._begin()
        with self._errors():
            self.db.executemany(sql, rows)

    def _write(self, sql: str, params: Iterable[Any] = ()) -> None:
        self._begin()
        self._execute(sql, params)

    def _begin(self) -> None:
        if not self.db.in_transaction:
            self._execute("begin")

    def _flush(self, keys: bool = True) -> None:
        """Insert what waits in memory: the requests first, then (with ``keys``) the URL
        keys. Keys may wait longer than requests: a key lost in a crash costs one fetch
        again, and inserting them in larger sorted batches writes fewer pages."""
        if self._requests:
            rows, self._requests = self._requests, []
            self._executemany("insert into requests values (?, ?)", rows)
        if keys and self._keys:
            batch = sorted(self._keys.items())  # sorted: B-tree pages in order
            self._executemany("insert or ignore into url_keys values (?, ?)", batch)
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
        if durable and self._unsynced and not self._temporary:
            self._unsynced = False
            with contextlib.suppress(FileNotFoundError):  # nothing was written
                _fsync(f"{self.path}-wal", os.O_NOFOLLOW)
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
        self._write("insert or replace into meta values (?, ?)", (name, value))

    def count(self, name: str, by: int = 1) -> None:
        self._write(
            "insert into counters values (?, ?) "
            "on conflict(name) do update set value = value + excluded.value",
            (name, by),
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
        self._write("delete from url_keys")

    def add_head(self, record: HeadRecord) -> None:
        self._write(_INSERT_HEAD, _head_row(record))

    def add_relation(self, kind: str, key: str, head: str, method: str, similarity: float) -> None:
        """A duplicate (``member``), or a kept document ``related`` or ``near`` to a head."""
        row = (kind, key, head, method, similarity)
        self._write("insert into relations values (?, ?, ?, ?, ?)", row)

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
        self._write("insert or replace into texts values (?, ?)", (key, text))

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
        self._executemany("delete from requests where seq = ?", ((seq,) for seq in seqs))

    def requests(self) -> list[tuple[int, bytes, bytes]]:
        """(seq, fingerprint, data) of every request recorded, in order."""
        self._flush(keys=False)
        rows = self._execute("select seq, data from requests order by seq")
        return [(seq, data[:16], data[16:]) for seq, data in rows]

    def add_mark(self, parent: bytes, child: bytes) -> None:
        self._flush(keys=False)  # after the parent's row
        self._write("insert or ignore into marks values (?, ?)", (parent, child))

    def drop_marks(self, parents: Iterable[bytes]) -> None:
        self._executemany("delete from marks where parent = ?", ((p,) for p in parents))

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
