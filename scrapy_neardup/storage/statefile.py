"""A state database's file, before the crawl trusts it.

Promises: the file holds our tables and nothing else (checked read-only before any write, so a
crafted file runs no code), and is never followed through a symbolic link; a damaged,
truncated or foreign file, or one of another format, stops the start with a
:class:`StateError` naming it, left as it is. A new file is made whole and renamed into place.
Rationale: ``docs/design.md#state-database``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scrapy_neardup.exceptions import StateError

#: The database's name in the state directory, and the format its ``meta`` table records.
STATE_FILE = "state.sqlite"
FORMAT = "1"


@dataclass(frozen=True)
class HeadRecord:
    """A kept document, one row of ``heads``: its key, exact signature, near signature (None:
    a short text) and tokens. A new field here is a new column of ``heads`` in :data:`SCHEMA`."""

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
_SCHEMA_SQL = "select type, name, tbl_name, sql from sqlite_master"
with contextlib.closing(sqlite3.connect(":memory:")) as _db:
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


def fsync(path: Path | str, flags: int = 0) -> None:
    """fsync a file, or a directory (so that a rename in it survives a crash of the machine)."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """SQLite's errors about the file as ours: a full disk as OSError (ENOSPC), anything else
    as a StateError naming the file. A misuse (ProgrammingError) is a bug: raised as it is."""
    try:
        yield
    except sqlite3.ProgrammingError:
        raise
    except sqlite3.DatabaseError as exc:
        if "database or disk is full" in str(exc):
            raise OSError(errno.ENOSPC, "No space left on device", str(path)) from None
        raise StateError(f"unreadable state database: {exc}", path=str(path)) from None


def connect(
    path: Path, read_only: bool = False, pragmas: tuple[str, ...] = ()
) -> sqlite3.Connection:
    """A connection to ``path`` in autocommit mode; ``read_only`` never writes the file."""
    with sqlite_errors(path):
        if read_only:
            uri = path.absolute().as_uri() + "?mode=ro"
            db = sqlite3.connect(uri, uri=True, isolation_level=None)
        else:
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # A crafted schema's functions never run; damage is seen at the read that meets it.
        for pragma in ("trusted_schema=off", "cell_size_check=on", *pragmas):
            db.execute(f"pragma {pragma}")
    return db


def create(path: Path, meta: dict[str, str]) -> None:
    """Make the file whole under another name, then rename it into place: a file named
    ``STATE_FILE`` always has its schema and meta."""
    new = path.with_name(path.name + ".new")
    new.unlink(missing_ok=True)  # a leftover of a kill (or a link: unlinked, not followed)
    with sqlite_errors(path), contextlib.closing(connect(new)) as db:
        db.executescript(SCHEMA)
        db.executemany("insert into meta values (?, ?)", [("format", FORMAT), *meta.items()])
    fsync(new)
    os.replace(new, path)
    fsync(path.parent)


def check(path: Path) -> None:
    """Read the file through a read-only connection: SQLite's header and the length it says,
    our schema exactly, this format, and every page of its tables readable (``count(*)``).
    The length is checked when the WAL is empty: after a kill it may hold the pages counted."""
    wal = Path(f"{path}-wal")
    with path.open("rb") as fh:
        header = fh.read(100)
        size = os.fstat(fh.fileno()).st_size
    if len(header) < 100:
        raise StateError(f"truncated: {size} bytes, no database header", path=str(path))
    if not header.startswith(b"SQLite format 3\0"):  # read even where the WAL has page 1
        raise StateError("file is not a database (its header is not SQLite's)", path=str(path))
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the header's page count is current
    if valid and size < pages * page_size and not (wal.exists() and wal.stat().st_size):
        raise StateError(
            f"truncated: {size} bytes, its header counts {pages} pages of {page_size} "
            "bytes; it was left as it is (restore it, or start a new JOBDIR)",
            path=str(path),
        )
    with sqlite_errors(path), contextlib.closing(connect(path, read_only=True)) as db:
        rows = set(db.execute(_SCHEMA_SQL))
        meta = any(row[1] == "meta" for row in rows)
        found = db.execute("select value from meta where name = 'format'") if meta else ()
        for (version,) in found:
            if version != FORMAT:
                raise StateError(
                    f"state format {version!r}: written by another release of scrapy-neardup "
                    f"(this one reads format {FORMAT}); finish that crawl with the release "
                    "that wrote it, or start a new JOBDIR",
                    path=str(path),
                )
        if rows != _SCHEMA_ROWS:
            extra = ", ".join(sorted(f"{row[0]} {row[1]}" for row in rows - _SCHEMA_ROWS))
            gone = ", ".join(sorted(f"{row[0]} {row[1]}" for row in _SCHEMA_ROWS - rows))
            raise StateError(
                f"not a scrapy-neardup state database (not ours: {extra or 'none'}; "
                f"missing: {gone or 'none'}): damaged or replaced, and left as it is",
                path=str(path),
            )
        for table in TABLES:
            db.execute(f"select count(*) from {table}").fetchone()
