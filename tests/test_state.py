"""NEARDUP_STORAGE chooses the state implementation, as HTTPCACHE_STORAGE chooses Scrapy's."""

from __future__ import annotations

import logging
import shutil

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.state import FileState, NearDupState, crawl_state
from scrapy_neardup.storage.statedb import STATE_FILE
from scrapy_neardup.urls import url_fingerprint


class CountingState(FileState):
    """A project's own state: here, one that counts the keys it is asked about."""

    asked = 0

    def key_seen(self, key, on_new=None):
        type(self).asked += 1
        return super().key_seen(key, on_new)


def test_an_import_path_names_the_state_class() -> None:
    crawler = get_crawler(settings_dict={"NEARDUP_STORAGE": f"{__name__}.CountingState"})
    state = crawl_state(crawler)
    assert type(state) is CountingState
    assert crawl_state(crawler) is state  # one per crawler
    assert not state.url_seen("https://example.com/a") and state.url_seen("https://example.com/a")
    assert CountingState.asked == 2
    state.close()


def test_with_the_addon_the_state_is_the_crawlers_extension() -> None:
    """Every component gets the extension the Addon lists; nothing is made beside it."""
    from scrapy.utils.misc import build_from_crawler

    from scrapy_neardup import Addon, NearDupPipeline

    crawler = get_crawler(settings_dict={"ADDONS": {Addon: 500}, "NEARDUP_WORKERS": 0})
    state = crawler.get_extension(NearDupState)
    assert isinstance(state, FileState) and crawl_state(crawler) is state
    assert build_from_crawler(NearDupPipeline, crawler).state is state
    state.close()


def test_without_the_extension_components_share_a_state_that_goes_with_them() -> None:
    """Components wired by hand share the first state made; nothing else keeps it alive."""
    import gc
    import weakref

    crawler = get_crawler(settings_dict={"NEARDUP_WORKERS": 0})
    state = crawl_state(crawler)
    assert crawler.get_extension(NearDupState) is None and crawl_state(crawler) is state
    state.close()
    gone = weakref.ref(state)
    del state
    gc.collect()
    assert gone() is None
    crawl_state(crawler).close()  # made again for a later component


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
    """A JOBDIR left by a clean close."""
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


def test_a_state_file_that_cannot_be_read_names_itself(jobdir) -> None:
    path = jobdir / "neardup" / STATE_FILE
    path.unlink()
    path.mkdir()  # reading it fails, as permission denied would (the tests run as root)
    refused(jobdir, STATE_FILE, "cannot be read")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("header", "file is not a database"),
        ("key tree", "database disk image is malformed"),
        ("truncated", "truncated: "),
    ],
)
def test_a_damaged_database_stops_the_start(jobdir, damage, message) -> None:
    state = state_of(jobdir)
    for n in range(3000):  # enough keys for a tree of several pages
        state.url_seen(f"https://example.com/page/{n}")
    state.close()
    path = jobdir / "neardup" / STATE_FILE
    assert not path.with_name(f"{STATE_FILE}-wal").exists()  # checkpointed at close
    data = bytearray(path.read_bytes())
    if damage == "header":
        data[:16] = b"not a database!\0"
    elif damage == "key tree":
        data[3 * 4096 : 4 * 4096] = b"\xa5" * 4096  # page 4, the URL keys' root
    else:
        data = data[: len(data) // 2]
    path.write_bytes(bytes(data))
    refused(jobdir, STATE_FILE, message)


def test_a_database_damaged_where_opening_does_not_read_stops_the_crawl(jobdir, caplog) -> None:
    """Damage only a later write meets (here the counters' page, written on a Bloom false
    positive): the crawl stops, naming the file, and nothing more is written to it."""
    path = jobdir / "neardup" / STATE_FILE
    data = bytearray(path.read_bytes())
    data[4 * 4096 : 5 * 4096] = b"\xa5" * 4096  # page 5, the counters table
    path.write_bytes(bytes(data))
    state = state_of(jobdir)
    key = url_fingerprint("https://example.com/never-fetched")
    state.urls.add(key)  # a Bloom false positive
    with caplog.at_level(logging.ERROR, logger="scrapy_neardup"):
        assert state.key_seen(key) is False  # confirmed new, then counting it broke
        assert state.url_seen("https://example.com/other") is False
        assert state.url_seen("https://example.com/other") is True
        state.close()
    assert state.stats.get_value("neardup/state/errors") == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and str(path) in errors[0].getMessage()
    assert "neardup_state_error" in errors[0].getMessage()


def test_a_jobdir_of_the_previous_release_is_refused_naming_its_format(tmp_path) -> None:
    """That release kept snapshots and journals of its own format: one line says so, and
    what to do; nothing of the directory is changed."""
    state_dir = tmp_path / "job" / "neardup"
    state_dir.mkdir(parents=True)
    for name in ("urls.bloom", "urls.journal", "content.state", "frontier.journal"):
        (state_dir / name).write_bytes(b"NDSN\x01\x00" + bytes(30))
    before = sorted(p.name for p in state_dir.iterdir())
    with pytest.raises(StateError) as info:
        state_of(tmp_path / "job")
    message = str(info.value)
    assert info.value.path == str(state_dir / "urls.bloom") and "\n" not in message
    assert "format of an earlier release of scrapy-neardup" in message
    assert "finish that crawl with the release that wrote it" in message
    assert "new JOBDIR" in message
    assert sorted(p.name for p in state_dir.iterdir()) == before


def test_state_of_another_spider_is_refused(jobdir) -> None:
    crawler = get_crawler(
        spidercls=type("Other", (scrapy.Spider,), {"name": "other"}),
        settings_dict={"JOBDIR": str(jobdir), "NEARDUP_WORKERS": 0},
    )
    with pytest.raises(StateError, match="its spider is 'default', this crawl's 'other'"):
        NearDupState.from_crawler(crawler)


@pytest.mark.parametrize("name", ["neardup", f"neardup/{STATE_FILE}", "neardup/lock"])
def test_a_symbolic_link_in_the_jobdir_is_refused_not_followed(jobdir, tmp_path, name) -> None:
    link = jobdir / name
    outside = tmp_path / "outside"
    if link.is_dir():
        shutil.copytree(link, outside)
        shutil.rmtree(link)
    else:
        link.rename(outside)
    link.symlink_to(outside)
    before = {p.name: p.read_bytes() for p in [outside, *outside.glob("*")] if p.is_file()}
    with pytest.raises(StateError, match="is a symbolic link") as info:
        state_of(jobdir)
    assert info.value.path == str(link)
    after = {p.name: p.read_bytes() for p in [outside, *outside.glob("*")] if p.is_file()}
    assert after == before


def test_a_url_fetched_again_is_recorded_as_a_repeat_fetch_not_a_fragment(tmp_path) -> None:
    state = state_of(tmp_path / "job")
    url = "https://example.com/0"
    state.dedup.check(state.unique_key(url), TEXT)
    second = state.unique_key(url)
    assert second == f"{url} (fetch 2)"
    state.dedup.check(second, TEXT + " and more words")
    assert state.unique_key(url) == f"{url} (fetch 3)"
    state.close()
