"""The state database: what it records survives a kill, and a file that is not what the crawl
wrote (damaged, truncated, crafted, a link, another format) is refused, naming it."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage.statedb import STATE_FILE, HeadRecord, StateDB, read_only
from scrapy_neardup.urls import url_fingerprint


def fp(i: int) -> bytes:
    return url_fingerprint(f"https://example.com/{i}")


def opened(path: Path, flush_interval: float = 1.0) -> StateDB:
    db = StateDB(path, flush_interval)
    db.open({"spider": "test"})
    db.start_writing()
    return db


def test_keys_documents_and_requests_survive_a_reopen(tmp_path) -> None:
    db = opened(tmp_path / STATE_FILE)
    for i in range(1000):
        db.add_key(fp(i))
    keys = {key for batch in db.url_keys() for key in batch}
    assert int.from_bytes(fp(1), "little", signed=True) in keys and len(keys) == 1000
    assert db.has_key(fp(999)) and not db.has_key(fp(1000))
    db.add_head(HeadRecord("a", b"exact", None, 3))
    db.add_relation("member", "b", "a", "minhash", 0.9)
    db.add_request(1, fp(1), b"\x01{}")
    db.count("false_positives", 2)
    db.put_text("a", "the text")
    db.close()
    db = read_only(tmp_path / STATE_FILE)
    assert sum(map(len, db.url_keys())) == 1000 and db.has_key(fp(999))
    assert [head for _, head in db.heads()] == [HeadRecord("a", b"exact", None, 3)]
    assert list(db.relations()) == [("member", "b", "a", "minhash", 0.9)]
    assert db.requests() == [(1, fp(1), b"\x01{}")]
    assert db.counter("false_positives") == 2 and db.meta("spider") == "test"
    assert db.texts(["a", "b"]) == {"a": "the text"}
    db.abandon()


def _fill_then_die(path: str, ready) -> None:
    db = opened(Path(path))
    for i in range(500):
        db.add_request(i + 1, fp(i), b"\x01{}")
        db.add_key(fp(i))
    db.commit(durable=True)
    db.add_request(501, fp(500), b"\x01{}")
    db.add_key(fp(500))
    db.commit()  # not durable: the request is committed, its URL key waits for a batch
    db.add_key(fp(501))  # not committed: lost
    ready.set()
    signal.pause()


def test_sigkill_loses_nothing_committed(tmp_path) -> None:
    path = str(tmp_path / STATE_FILE)
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_fill_then_die, args=(path, ready))
    proc.start()
    assert ready.wait(60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    db = read_only(Path(path))
    assert all(db.has_key(fp(i)) for i in range(500))
    assert not db.has_key(fp(500)) and not db.has_key(fp(501))
    assert len(db.requests()) == 501
    db.abandon()


def test_keys_met_again_are_answered_without_a_query(tmp_path) -> None:
    """A site's navigation links repeat on every page: a key known to be stored is
    answered from memory, and only an unknown one reaches SQLite."""
    db = opened(tmp_path / STATE_FILE)
    for i in range(3):
        db.add_key(fp(i))
    db.commit()
    queries: list[str] = []
    db.db.set_trace_callback(queries.append)
    assert all(db.has_key(fp(i)) for i in range(3))
    assert not db.has_key(fp(99)) and not db.has_key(fp(99))
    assert len(queries) == 2  # the unknown key, twice
    db.clear_keys()
    assert not any(db.has_key(fp(i)) for i in range(3))
    db.close()


def test_the_keys_kept_in_memory_are_bounded(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("scrapy_neardup.storage.statedb.RECENT", 4)
    db = opened(tmp_path / STATE_FILE)
    for i in range(10):
        db.add_key(fp(i))
    db.commit()
    assert len(db._recent) <= 4
    assert all(db.has_key(fp(i)) for i in range(10))  # from SQLite, then from memory
    assert len(db._recent) <= 4
    db.close()


def test_the_temporary_database_leaves_no_file(tmp_path) -> None:
    db = StateDB.temporary()
    db.add_key(fp(1))
    db.commit()
    assert db.has_key(fp(1)) and not db.path.exists()
    db.abandon()


# -- a file that is not what the crawl wrote -------------------------------------------------


@pytest.fixture
def closed(tmp_path) -> Path:
    """A database closed cleanly, with enough keys for a tree of several pages."""
    db = opened(tmp_path / STATE_FILE)
    for i in range(3000):
        db.add_key(fp(i))
    db.add_head(HeadRecord("a", b"exact", b"near", 30))
    db.close()
    path = tmp_path / STATE_FILE
    assert not Path(f"{path}-wal").exists()  # checkpointed at close
    return path


def refused(path: Path, match: str) -> None:
    """Opening stops with a StateError naming ``path``, which is left as it was."""
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(StateError, match=match) as info:
        StateDB(path).open({})
    assert info.value.path == str(path) and str(info.value).startswith(f"{path}: ")
    assert (path.read_bytes() if path.is_file() else None) == before


def craft(path: Path, sql: str) -> None:
    db = sqlite3.connect(path)
    db.executescript(sql)
    db.close()


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        (
            "create trigger grow after insert on url_keys begin "
            "insert into texts values (randomblob(16), zeroblob(1000000)); end;",
            "not ours: trigger grow",
        ),
        ("create view v as select load_extension('x')", "not ours: view v"),
        ("create table extra (x)", "not ours: table extra"),
        ("create index k on heads(key)", "not ours: index k"),
        ("drop table marks", "missing: .*table marks"),
        ("update meta set value = '7' where name = 'format'", "state format '7'"),
    ],
)
def test_a_crafted_schema_is_refused_before_anything_runs(closed, sql, match) -> None:
    craft(closed, sql)
    refused(closed, match)


def test_a_refused_trigger_never_fired(closed) -> None:
    craft(closed, "create trigger boom after insert on url_keys begin delete from heads; end;")
    with pytest.raises(StateError):
        opened(closed)
    db = sqlite3.connect(closed)
    assert db.execute("select count(*) from heads").fetchone() == (1,)
    db.close()


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        ("header", "file is not a database"),
        ("key tree", "database disk image is malformed"),
        ("truncated", "truncated: "),
        ("emptied", "truncated: 0 bytes"),
    ],
)
def test_a_damaged_database_is_refused(closed, damage, match) -> None:
    data = bytearray(closed.read_bytes())
    if damage == "header":
        data[:16] = b"not a database!\0"
    elif damage == "key tree":
        data[4096:8192] = b"\xa5" * 4096  # page 2, the meta table's root
    elif damage == "truncated":
        data = data[: len(data) - 4096]
    else:
        data = bytearray()
    closed.write_bytes(bytes(data))
    refused(closed, match)


@pytest.mark.parametrize("name", [STATE_FILE, f"{STATE_FILE}-wal", f"{STATE_FILE}-shm"])
def test_a_symbolic_link_is_never_followed(closed, tmp_path, name) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    link = closed.with_name(name)
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    with pytest.raises(StateError, match="is a symbolic link") as info:
        StateDB(closed).open({})
    assert info.value.path == str(link)
    assert outside.read_bytes() == b"precious"


def test_a_leftover_new_file_that_is_a_link_is_removed_not_followed(tmp_path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"precious")
    (tmp_path / f"{STATE_FILE}.new").symlink_to(outside)
    opened(tmp_path / STATE_FILE).close()
    assert outside.read_bytes() == b"precious"
