"""NEARDUP_STORAGE chooses the state implementation, as HTTPCACHE_STORAGE chooses Scrapy's."""

from __future__ import annotations

import logging

import pytest
from scrapy.utils.test import get_crawler

from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.state import FileState, NearDupState
from scrapy_neardup.urls import url_fingerprint


class CountingState(FileState):
    """A project's own state: here, one that counts the keys it is asked about."""

    asked = 0

    def key_seen(self, key, on_new=None):
        type(self).asked += 1
        return super().key_seen(key, on_new)


def test_an_import_path_names_the_state_class() -> None:
    crawler = get_crawler(settings_dict={"NEARDUP_STORAGE": f"{__name__}.CountingState"})
    state = NearDupState.from_crawler(crawler)
    assert type(state) is CountingState
    assert NearDupState.from_crawler(crawler) is state  # one per crawler
    assert not state.url_seen("https://example.com/a") and state.url_seen("https://example.com/a")
    assert CountingState.asked == 2
    state.close()


def test_the_aliases_and_the_default() -> None:
    assert type(NearDupState.from_crawler(get_crawler())) is FileState
    crawler = get_crawler(settings_dict={"NEARDUP_STORAGE": "Memory"})
    assert type(NearDupState.from_crawler(crawler)) is FileState


@pytest.mark.parametrize(
    "path", ["scrapy_neardup.nowhere.State", "scrapy.Request", "tests.test_state.nothing"]
)
def test_a_path_that_is_no_state_class_stops_at_start(path: str) -> None:
    with pytest.raises(ConfigError, match="NEARDUP_STORAGE"):
        NearDupState.from_crawler(get_crawler(settings_dict={"NEARDUP_STORAGE": path}))


# -- saved state that cannot be read stops the start, naming the file ----------------------

TEXT = " ".join(f"word{i % 97} river{i % 13} bridge{i % 7}" for i in range(120))


def state_of(jobdir, **settings) -> NearDupState:
    crawler = get_crawler(settings_dict={"JOBDIR": str(jobdir), "NEARDUP_WORKERS": 0, **settings})
    return NearDupState.from_crawler(crawler)


@pytest.fixture
def jobdir(tmp_path):
    """A JOBDIR left by a clean close: snapshots, empty journals, the URL store."""
    state = state_of(tmp_path / "job")
    for n in range(3):
        state.url_seen(f"https://example.com/{n}")
    state.dedup.check("https://example.com/0", TEXT)
    state.dedup.check("https://example.com/1", TEXT + " more")
    state.close()
    return tmp_path / "job"


def refused(jobdir, name: str, match: str) -> None:
    """The start stops with a StateError naming ``name``, which is left as it was."""
    path = jobdir / "neardup" / name
    before = path.read_bytes() if path.is_file() else None
    with pytest.raises(StateError, match=match) as info:
        state_of(jobdir)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}: ")
    assert (path.read_bytes() if path.is_file() else None) == before


def test_a_clean_close_leaves_state_that_starts_again(jobdir) -> None:
    state = state_of(jobdir)
    assert len(state.urls) == 3 and len(state.dedup) == 1 and len(state.dedup.members) == 1
    state.close()


@pytest.mark.parametrize("name", ["urls.bloom", "content.state"])
def test_a_flipped_byte_in_a_snapshot_is_caught_by_its_checksum(jobdir, name) -> None:
    path = jobdir / "neardup" / name
    data = bytearray(path.read_bytes())
    assert data[:4] == b"NDSN"
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    refused(jobdir, name, "checksum mismatch")


@pytest.mark.parametrize("name", ["urls.bloom", "content.state"])
def test_a_snapshot_without_a_checksum_comes_from_another_version(jobdir, name) -> None:
    path = jobdir / "neardup" / name
    path.write_bytes(path.read_bytes()[22:])  # the body alone, as earlier versions wrote it
    refused(jobdir, name, "without a checksum: written by another version")


@pytest.mark.parametrize(
    "name", ["urls.bloom", "content.state", "urls.journal", "content.journal", "urls.sqlite"]
)
def test_a_state_file_that_cannot_be_read_names_itself(jobdir, name) -> None:
    path = jobdir / "neardup" / name
    path.unlink()
    path.mkdir()  # reading it fails, as permission denied would (the tests run as root)
    refused(jobdir, name, "cannot be read|unreadable")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("header", "file is not a database"),
        ("key tree", "database disk image is malformed"),
    ],
)
def test_a_damaged_url_store_is_a_state_error(jobdir, damage, message) -> None:
    state = state_of(jobdir)
    for n in range(3000):  # enough keys for a tree of several pages
        state.url_seen(f"https://example.com/page/{n}")
    state.close()
    path = jobdir / "neardup" / "urls.sqlite"
    assert not path.with_name("urls.sqlite-wal").exists()  # checkpointed at close
    data = bytearray(path.read_bytes())
    if damage == "header":
        data[:16] = b"not a database!\0"
    else:
        data[4096:8192] = b"\xa5" * 4096  # page 2, the fingerprints table's root
    path.write_bytes(bytes(data))
    refused(jobdir, "urls.sqlite", message)


def test_a_url_store_damaged_mid_crawl_names_itself(tmp_path) -> None:
    """Damage the count at opening cannot see shows at the read that meets it."""
    from scrapy_neardup.storage.fingerprints import FingerprintStore

    path = tmp_path / "urls.sqlite"
    store = FingerprintStore(path)
    store.count("false_positives")
    store.close()
    data = bytearray(path.read_bytes())
    data[2 * 4096 : 3 * 4096] = b"\xa5" * 4096  # page 3, the counters table
    path.write_bytes(bytes(data))
    store = FingerprintStore(path)  # the count reads the counters' index, not this page
    with pytest.raises(StateError, match="malformed") as info:
        store.counter("false_positives")
    assert info.value.path == str(path)
    store.close()


def test_a_corrupt_journal_stops_the_start_and_no_snapshot_is_written(jobdir) -> None:
    state = state_of(jobdir, NEARDUP_FLUSH_INTERVAL=0)
    for n in range(50):
        state.url_seen(f"https://example.com/more/{n}")
    state._url_journal._file.close()  # a crash (every record was fsynced)
    state._content_journal._file.close()
    state.confirm.close()
    state.confirm = None
    path = jobdir / "neardup" / "urls.journal"
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x01
    path.write_bytes(bytes(data))
    bloom = (jobdir / "neardup" / "urls.bloom").read_bytes()
    refused(jobdir, "urls.journal", "corrupt record at byte offset")
    assert (jobdir / "neardup" / "urls.bloom").read_bytes() == bloom


def test_torn_tails_left_by_a_kill_are_cut_and_counted(jobdir) -> None:
    state = state_of(jobdir, NEARDUP_FLUSH_INTERVAL=0)
    state.url_seen("https://example.com/new")
    state.dedup.check("https://example.com/new", TEXT.replace("river", "lake"))
    for journal in (state._url_journal, state._content_journal):
        journal._file.close()  # a kill: every record was fsynced, the next one is half written
        with journal.path.open("ab") as fh:
            fh.write((500).to_bytes(4, "little") + b"\x00\x00\x00\x00half a record")
    state.confirm.close()
    state = state_of(jobdir)
    assert state.stats.get_value("neardup/state/torn_journals") == 2
    assert len(state.urls) == 4 and len(state.dedup) == 2  # nothing before the tears lost
    state.close()


def test_a_url_store_that_breaks_mid_crawl_is_dropped_not_fatal(jobdir, caplog) -> None:
    """Damage only a later read meets (here the counters' page, read on a Bloom false
    positive): the crawl goes on without confirming, logged once and counted."""
    path = jobdir / "neardup" / "urls.sqlite"
    data = bytearray(path.read_bytes())
    data[2 * 4096 : 3 * 4096] = b"\xa5" * 4096  # page 3, the counters table
    path.write_bytes(bytes(data))
    state = state_of(jobdir)
    key = url_fingerprint("https://example.com/never-fetched")
    state.urls.add(key)  # a Bloom false positive
    with caplog.at_level(logging.ERROR, logger="scrapy_neardup"):
        assert state.key_seen(key) is False  # confirmed new, then the store broke
        assert state.url_seen("https://example.com/other") is False
        assert state.url_seen("https://example.com/other") is True
    assert state.confirm is None
    assert state.stats.get_value("neardup/urls/confirm_errors") == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and str(path) in errors[0].getMessage()
    state.close()


def test_a_url_fetched_again_is_recorded_as_a_repeat_fetch_not_a_fragment(tmp_path) -> None:
    state = state_of(tmp_path / "job")
    url = "https://example.com/0"
    state.dedup.check(state.unique_key(url), TEXT)
    second = state.unique_key(url)
    assert second == f"{url} (fetch 2)"
    state.dedup.check(second, TEXT + " and more words")
    assert state.unique_key(url) == f"{url} (fetch 3)"
    state.close()
