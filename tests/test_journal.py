"""The journal loses at most its flush window and never fails a start on a torn tail."""

from __future__ import annotations

import zlib

from scrapy_neardup.storage.journal import Journal, read_records, write_snapshot


def test_records_round_trip(tmp_path) -> None:
    journal = Journal(tmp_path / "j", flush_interval=0)
    assert list(journal.open()) == []
    for i in range(100):
        journal.append(f"record {i}".encode())
    journal.close()
    again = Journal(tmp_path / "j")
    assert list(again.open()) == [f"record {i}".encode() for i in range(100)]
    again.close()


def test_torn_tail_is_cut_and_appending_goes_on(tmp_path, caplog) -> None:
    path = tmp_path / "j"
    journal = Journal(path, flush_interval=0)
    journal.open()
    for i in range(10):
        journal.append(b"x" * i)
    journal.close()
    whole = path.read_bytes()
    path.write_bytes(whole[:-3])  # a crash in the middle of the last record
    journal = Journal(path, flush_interval=0)
    assert [len(r) for r in journal.open()] == list(range(9))
    assert "torn or corrupt" in caplog.text
    journal.append(b"after")
    journal.close()
    records, _, bad = read_records(path)
    assert records[-1] == b"after" and len(records) == 10 and not bad


def test_corrupt_record_stops_replay(tmp_path) -> None:
    path = tmp_path / "j"
    journal = Journal(path, flush_interval=0)
    journal.open()
    for payload in (b"one", b"two", b"three"):
        journal.append(payload)
    journal.close()
    data = bytearray(path.read_bytes())
    data[8 + 3 + 8] ^= 0xFF  # first byte of the second payload
    path.write_bytes(bytes(data))
    records, good, bad = read_records(path)
    assert records == [b"one"] and bad and good == 8 + 3
    assert zlib.crc32(b"two") != zlib.crc32(bytes(data[19:22]))  # the CRC is what caught it


def test_snapshot_replaces_atomically(tmp_path) -> None:
    path = tmp_path / "snap"
    write_snapshot(path, b"first")
    write_snapshot(path, b"second")
    assert path.read_bytes() == b"second"
    assert not (tmp_path / "snap.tmp").exists()


def test_rewrite_compacts_and_appending_goes_on(tmp_path) -> None:
    path = tmp_path / "j"
    journal = Journal(path, flush_interval=0)
    journal.open()
    for payload in (b"one", b"two", b"three"):
        journal.append(payload)
    journal.rewrite([b"two"])
    journal.append(b"four")
    journal.close()
    assert read_records(path)[0] == [b"two", b"four"]


def test_before_sync_runs_first_so_files_stay_ordered(tmp_path) -> None:
    """A journal whose records must never outlive another's syncs that one first."""
    first = Journal(tmp_path / "first", flush_interval=3600)
    second = Journal(tmp_path / "second", flush_interval=3600)
    first.open()
    second.open()
    second.before_sync = first.sync
    first.append(b"cause")
    second.append(b"effect")
    assert read_records(tmp_path / "first")[0] == []  # both still buffered
    second.sync()
    assert read_records(tmp_path / "first")[0] == [b"cause"]
    assert read_records(tmp_path / "second")[0] == [b"effect"]
    first.close()
    second.close()
