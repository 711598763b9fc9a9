"""The journal loses at most its flush window, cuts a torn last record, and refuses anything a
crash cannot do: a bad record with valid ones after it, a file shorter than it was synced."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage import journal as journal_module
from scrapy_neardup.storage.journal import (
    Journal,
    load_snapshot,
    read_records,
    save_snapshot,
    write_snapshot,
)


class Clock:
    """A monotonic clock the test moves by hand (the recorded length follows it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(journal_module, "time", SimpleNamespace(monotonic=fake))
    return fake


def written(path: Path, payloads: list[bytes], flush_interval: float = 0) -> Journal:
    """A journal holding ``payloads``, closed (so its length is recorded)."""
    journal = Journal(path, flush_interval)
    journal.open()
    for payload in payloads:
        journal.append(payload)
    journal.close()
    return journal


def recorded(path: Path) -> int:
    raw = path.with_name(path.name + ".length").read_bytes()
    magic, length, crc = struct.unpack("<4sQI", raw)
    assert magic == b"NDJL" and zlib.crc32(raw[:12]) == crc
    return length


def articles(n: int) -> list[bytes]:
    return [f"record {i} ".encode() * (1 + i % 7) for i in range(n)]


def test_records_round_trip(tmp_path) -> None:
    written(tmp_path / "j", [f"record {i}".encode() for i in range(100)])
    again = Journal(tmp_path / "j")
    assert list(again.open()) == [f"record {i}".encode() for i in range(100)]
    again.close()


def test_empty_records_are_refused(tmp_path) -> None:
    """So that a run of zero bytes (what a power cut can leave) is never a record."""
    journal = Journal(tmp_path / "j")
    journal.open()
    with pytest.raises(ValueError, match="empty"):
        journal.append(b"")
    journal.close()


def test_torn_tail_is_cut_and_appending_goes_on(tmp_path, caplog) -> None:
    path = tmp_path / "j"
    journal = Journal(path, flush_interval=0)
    journal.open()
    for i in range(10):
        journal.append(b"x" * (i + 1))
    journal._file.close()  # a crash: the length was never recorded (under a second)
    assert not path.with_name("j.length").exists()
    whole = path.read_bytes()
    path.write_bytes(whole[:-3])  # a crash in the middle of the last record
    journal = Journal(path, flush_interval=0)
    assert [len(r) for r in journal.open()] == list(range(1, 10))
    assert journal.torn
    assert "torn or corrupt" in caplog.text
    journal.append(b"after")
    journal.close()
    records, _, bad = read_records(path)
    assert records[-1] == b"after" and len(records) == 10 and not bad


@pytest.mark.parametrize(
    "tail",
    [
        b"\x05\x00\x00\x00\x12\x34",  # half a header
        (100).to_bytes(4, "little") + b"\x00\x00\x00\x00partial",  # a header and some payload
        b"\x00" * 4096,  # zeros: a power cut after the size was written, not the data
    ],
)
def test_every_kind_of_tear_after_the_recorded_length_is_cut(tmp_path, tail) -> None:
    path = tmp_path / "j"
    written(path, articles(50))
    size = path.stat().st_size
    assert recorded(path) == size
    with path.open("ab") as fh:
        fh.write(tail)
    journal = Journal(path)
    assert list(journal.open()) == articles(50)
    assert journal.torn
    journal.close()
    assert path.stat().st_size == size


def test_a_flipped_byte_in_the_middle_stops_the_start_and_is_left_alone(tmp_path) -> None:
    path = tmp_path / "j"
    written(path, articles(300))
    path.with_name("j.length").unlink()  # the payload checksums alone catch it
    data = bytearray(path.read_bytes())
    at = len(data) // 10
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    _, good, bad = read_records(path)
    assert bad and good <= at
    with pytest.raises(StateError) as info:
        Journal(path).open()
    assert info.value.path == str(path)
    assert f"corrupt record at byte offset {good} " in str(info.value)
    assert "followed by a valid record at byte offset" in str(info.value)
    assert path.read_bytes() == bytes(data)


@pytest.mark.parametrize("where", ["length", "checksum", "payload"])
def test_corruption_in_any_part_of_a_record_is_found(tmp_path, where) -> None:
    path = tmp_path / "j"
    written(path, [b"one", b"two", b"three"])
    path.with_name("j.length").unlink()
    data = bytearray(path.read_bytes())
    second = 8 + 3
    data[second + {"length": 0, "checksum": 5, "payload": 9}[where]] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=f"offset {second} .*valid record at byte offset 22:"):
        Journal(path).open()
    assert path.read_bytes() == bytes(data)


def test_damage_to_the_last_record_is_refused_once_its_length_was_recorded(tmp_path) -> None:
    """The last record looks torn, but it was synced: a crash cannot have torn it."""
    path = tmp_path / "j"
    written(path, articles(20))
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=f"within the {len(data)} bytes synced"):
        Journal(path).open()
    assert path.read_bytes() == bytes(data)


@pytest.mark.parametrize("keep", [0, 0.5, "missing"])
def test_a_journal_shorter_than_recorded_stops_the_start(tmp_path, keep) -> None:
    path = tmp_path / "j"
    written(path, articles(100))
    size = path.stat().st_size
    assert recorded(path) == size
    if keep == "missing":
        path.unlink()
    else:
        path.write_bytes(path.read_bytes()[: int(size * keep)])
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(StateError) as info:
        Journal(path).open()
    assert info.value.path == str(path)
    assert f"{size} bytes had been synced" in str(info.value)
    assert (path.read_bytes() if path.exists() else None) == before


def test_a_fresh_journal_has_nothing_to_check(tmp_path) -> None:
    journal = Journal(tmp_path / "sub" / "j")
    assert list(journal.open()) == []
    journal.close()
    assert not (tmp_path / "sub" / "j.length").exists()  # nothing synced, nothing recorded


def test_an_unreadable_recorded_length_is_logged_and_not_checked(tmp_path, caplog) -> None:
    path = tmp_path / "j"
    written(path, articles(10))
    side = path.with_name("j.length")
    side.write_bytes(side.read_bytes()[:-1] + b"\x00")  # its checksum no longer matches
    path.write_bytes(b"")
    journal = Journal(path)
    assert list(journal.open()) == []
    assert f"{side} is unreadable" in caplog.text
    journal.append(b"new")
    journal.close()
    assert recorded(path) == path.stat().st_size  # written again


def test_the_length_is_recorded_at_most_once_a_second(tmp_path, clock, monkeypatch) -> None:
    """Even when every record is fsynced (NEARDUP_FLUSH_INTERVAL=0)."""
    writes: list[int] = []
    record = Journal._record_length
    monkeypatch.setattr(
        Journal, "_record_length", lambda self, n: (writes.append(n), record(self, n))[1]
    )
    path = tmp_path / "j"
    journal = Journal(path, flush_interval=0)
    journal.open()
    for _ in range(3):
        for i in range(50):
            journal.append(b"r%d" % i)
            clock.now += 0.01
        clock.now += 0.5
    assert len(writes) == 2  # at 1.0 s and 2.0 s after opening, not at each of 150 fsyncs
    assert writes == sorted(writes) and recorded(path) == writes[-1] < path.stat().st_size
    journal.close()
    assert recorded(path) == path.stat().st_size  # and at close


def test_compaction_and_reset_never_look_like_truncation(tmp_path) -> None:
    path = tmp_path / "j"
    written(path, articles(100))
    journal = Journal(path, flush_interval=0)
    assert len(list(journal.open())) == 100
    journal.rewrite(articles(3))
    assert recorded(path) == path.stat().st_size  # lowered with the rewrite
    journal.append(b"after")
    journal.close()
    journal = Journal(path)
    assert list(journal.open()) == [*articles(3), b"after"]
    journal.reset()
    assert recorded(path) == 0 and path.stat().st_size == 0
    journal.close()
    journal = Journal(path)
    assert list(journal.open()) == []
    journal.close()


class Crash(Exception):
    pass


def test_a_crash_between_lowering_the_length_and_the_rewrite(tmp_path, monkeypatch) -> None:
    path = tmp_path / "j"
    written(path, articles(100))
    whole = path.read_bytes()
    replace = journal_module.write_snapshot
    seen: list[int] = []

    def crash_before_the_journal_is_replaced(target: Path, *chunks: bytes) -> None:
        if target == path:
            seen.append(recorded(path))
            raise Crash
        replace(target, *chunks)

    monkeypatch.setattr(journal_module, "write_snapshot", crash_before_the_journal_is_replaced)
    journal = Journal(path, flush_interval=0)
    journal.open()
    with pytest.raises(Crash):
        journal.rewrite(articles(2))
    assert seen == [sum(8 + len(p) for p in articles(2))]  # lowered before the rewrite
    monkeypatch.undo()
    assert path.read_bytes() == whole  # the old journal, longer than recorded now: fine
    journal = Journal(path)
    assert list(journal.open()) == articles(100)
    journal.close()


def test_a_crash_between_lowering_the_length_and_the_reset(tmp_path, monkeypatch) -> None:
    path = tmp_path / "j"
    written(path, articles(100))
    journal = Journal(path, flush_interval=0)
    journal.open()
    lower = Journal._lower_length

    def lower_then_crash(self: Journal, length: int) -> None:
        lower(self, length)
        raise Crash

    monkeypatch.setattr(Journal, "_lower_length", lower_then_crash)
    with pytest.raises(Crash):
        journal.reset()
    journal._file.close()  # the crash
    assert recorded(path) == 0 and path.stat().st_size > 0
    monkeypatch.undo()
    journal = Journal(path)
    assert list(journal.open()) == articles(100)  # replayed on top of the snapshot: harmless
    journal.close()


def test_a_corrupt_record_hidden_in_a_big_journal_is_found(tmp_path) -> None:
    """The search for a valid record after a bad one works through megabytes of records."""
    path = tmp_path / "j"
    payloads = [bytes(range(256)) * 8 + i.to_bytes(4, "little") for i in range(8000)]
    written(path, payloads, flush_interval=3600)
    path.with_name("j.length").unlink()
    data = bytearray(path.read_bytes())
    assert len(data) > 15 * 2**20
    frame = 8 + len(payloads[0])
    data[frame * 7000 + 2] = 0xFF  # a length far beyond the file
    path.write_bytes(bytes(data))
    with pytest.raises(StateError, match=f"offset {frame * 7000} .* offset {frame * 7001}:"):
        Journal(path).open()


def test_a_tail_too_costly_to_search_is_refused_not_cut(tmp_path, monkeypatch) -> None:
    path = tmp_path / "j"
    written(path, [b"one"])
    path.with_name("j.length").unlink()
    with path.open("ab") as fh:  # lengths that all fit: every offset is a candidate
        fh.write(b"\x01\x00\x00\x00" * 4096)
    monkeypatch.setattr(journal_module, "_SCAN_BUDGET", 1000)
    with pytest.raises(StateError, match="too costly to search"):
        Journal(path).open()


def test_a_state_file_that_cannot_be_read_is_a_state_error(tmp_path) -> None:
    path = tmp_path / "j"
    path.mkdir()  # reading it fails (as permission denied would: the tests run as root)
    with pytest.raises(StateError) as info:
        Journal(path).open()
    assert info.value.path == str(path)
    (tmp_path / "k.length").mkdir()
    with pytest.raises(StateError) as info:
        Journal(tmp_path / "k").open()
    assert info.value.path == str(tmp_path / "k.length")


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


# -- snapshots ------------------------------------------------------------------------------


def test_snapshot_replaces_atomically(tmp_path) -> None:
    path = tmp_path / "snap"
    write_snapshot(path, b"first")
    write_snapshot(path, b"sec", b"ond")
    assert path.read_bytes() == b"second"
    assert not (tmp_path / "snap.tmp").exists()


def test_a_checksummed_snapshot_round_trips(tmp_path) -> None:
    path = tmp_path / "snap"
    assert load_snapshot(path) is None
    save_snapshot(path, b"body" * 1000)
    assert load_snapshot(path) == b"body" * 1000
    save_snapshot(path, b"")
    assert load_snapshot(path) == b""


def test_every_damaged_snapshot_is_a_state_error_naming_it(tmp_path) -> None:
    path = tmp_path / "snap"
    save_snapshot(path, bytes(range(256)) * 40)
    good = path.read_bytes()
    damaged = {
        "checksum mismatch": [
            good[:i] + bytes([good[i] ^ 1]) + good[i + 1 :] for i in range(14, len(good), 97)
        ],
        "truncated": [good[:n] for n in range(4, len(good), 101)] + [good + b"\0"],
        "another version": [good[:4] + b"\x02\x00" + good[6:]],
        "not a scrapy-neardup snapshot": [b"", b"ND", b"\0" * 100],
    }
    for message, variants in damaged.items():
        for data in variants:
            path.write_bytes(data)
            with pytest.raises(StateError, match=message) as info:
                load_snapshot(path)
            assert info.value.path == str(path)


def test_a_snapshot_from_before_the_checksum_comes_from_another_version(tmp_path) -> None:
    from scrapy_neardup.deduplicator import Deduplicator
    from scrapy_neardup.storage.bloom import ScalableBloomFilter

    for name, data in [
        ("content.state", Deduplicator("simhash").to_bytes()),
        ("urls.bloom", ScalableBloomFilter(100, 0.01).to_bytes()),
    ]:
        (tmp_path / name).write_bytes(data)  # as the earlier versions wrote them
        with pytest.raises(StateError, match=r"version \d without a checksum: written by another"):
            load_snapshot(tmp_path / name)
