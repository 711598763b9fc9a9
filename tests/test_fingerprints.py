"""The exact URL fingerprint store that confirms Bloom positives."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal

import pytest

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage.fingerprints import FingerprintStore
from scrapy_neardup.urls import url_fingerprint


def fp(i: int) -> bytes:
    return url_fingerprint(f"https://example.com/{i}")


def test_add_and_contains(tmp_path) -> None:
    store = FingerprintStore(tmp_path / "urls.sqlite")
    assert fp(1) not in store
    store.add(fp(1))
    assert fp(1) in store  # waiting to be inserted
    store.add(fp(1))
    assert fp(1) in store and fp(2) not in store
    assert len(store) == 1
    store.commit()
    assert fp(1) in store and len(store) == 1
    store.count("false_positives")
    store.count("false_positives", 2)
    assert store.counter("false_positives") == 3
    assert store.counter("other") == 0
    store.close()


def test_survives_reopen(tmp_path) -> None:
    store = FingerprintStore(tmp_path / "urls.sqlite")
    for i in range(1000):
        store.add(fp(i))
    store.count("false_positives")
    store.close()
    store = FingerprintStore(tmp_path / "urls.sqlite")
    assert len(store) == 1000 and fp(999) in store and fp(1000) not in store
    assert store.counter("false_positives") == 1
    store.close()


def _fill_then_die(path: str, ready) -> None:
    store = FingerprintStore(path, flush_interval=0.0)  # commit after every write
    for i in range(500):
        store.add(fp(i))
    ready.set()
    signal.pause()


def test_sigkill_loses_nothing_committed(tmp_path) -> None:
    path = str(tmp_path / "urls.sqlite")
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_fill_then_die, args=(path, ready))
    proc.start()
    assert ready.wait(60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    store = FingerprintStore(path)
    assert all(fp(i) in store for i in range(500))
    store.close()


def test_a_file_that_is_not_a_store_is_a_state_error(tmp_path) -> None:
    path = tmp_path / "urls.sqlite"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(StateError, match="fingerprint store"):
        FingerprintStore(path)


def test_a_store_keyed_by_the_whole_fingerprint_is_carried_over(tmp_path) -> None:
    """Stores written before this version keyed a ``fingerprints`` table by the 16 bytes:
    opening one copies its keys (in one transaction) and drops that table."""
    import sqlite3

    path = tmp_path / "urls.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "create table fingerprints (fp blob primary key) without rowid;"
        "create table counters (name text primary key, value integer not null);"
    )
    db.executemany("insert into fingerprints values (?)", [(fp(i),) for i in range(3000)])
    db.execute("insert into counters values ('false_positives', 4)")
    db.commit()
    db.close()
    store = FingerprintStore(path)
    assert len(store) == 3000
    assert all(fp(i) in store for i in range(3000)) and fp(3000) not in store
    assert store.counter("false_positives") == 4
    store.close()
    db = sqlite3.connect(path)
    tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
    db.close()
    assert tables == {"url_keys", "counters"}


def test_keys_met_again_are_answered_without_a_query(tmp_path) -> None:
    """A site's navigation links repeat on every page: a key known to be stored is
    answered from memory, and only an unknown one reaches SQLite."""
    store = FingerprintStore(tmp_path / "urls.sqlite")
    for i in range(3):
        store.add(fp(i))
    store.commit()
    queries: list[str] = []
    store._db.set_trace_callback(queries.append)
    assert all(fp(i) in store for i in range(3))
    assert fp(99) not in store and fp(99) not in store
    assert len(queries) == 2  # the unknown key, twice
    store.clear()
    assert not any(fp(i) in store for i in range(3))
    store.close()


def test_the_keys_kept_in_memory_are_bounded(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("scrapy_neardup.storage.fingerprints.RECENT", 4)
    store = FingerprintStore(tmp_path / "urls.sqlite")
    for i in range(10):
        store.add(fp(i))
    store.commit()
    assert len(store._recent) <= 4
    assert all(fp(i) in store for i in range(10))  # from SQLite, then from memory
    assert len(store._recent) <= 4
    store.close()
