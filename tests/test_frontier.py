"""The frontier journal: bounded while a crawl runs, exactly what is pending, done only once
the items are in the feed files, and JSON that runs no code when it is read back."""

from __future__ import annotations

import json
import math
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy import FormRequest, Request
from scrapy.extensions.feedexport import FeedExporter
from scrapy.utils.test import get_crawler

from scrapy_neardup import frontier as frontier_module
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.frontier import (
    FRONTIER_JOURNAL,
    REQUEST_FORMAT,
    Frontier,
    request_from_json,
    request_to_json,
)
from scrapy_neardup.state import NearDupState
from scrapy_neardup.storage.journal import Journal, read_records
from scrapy_neardup.urls import url_fingerprint

FRONTIER = {"scrapy_neardup.middlewares.FrontierMiddleware": 10}


def request(n: int) -> tuple[Request, bytes]:
    url = f"https://example.com/article/{n}?" + "x" * 200
    return Request(url), url_fingerprint(url)


def kinds(path: Path) -> list[bytes]:
    """The record kinds (Q, D, C) of a journal, as its file on disk holds them, after the
    "R" every run's journal starts with."""
    found = [payload[:1] for payload in read_records(path)[0]]
    assert found[:1] == [b"R"], found[:3]
    return found[1:]


def test_compacted_as_requests_are_done(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(frontier_module, "COMPACT_MIN_BYTES", 64 * 1024)
    frontier = Frontier(tmp_path, flush_interval=60)  # fsynced by sync() only
    frontier.open()
    requests = {}
    largest = 0
    for n in range(5_000):
        req, fp = request(n)
        frontier.schedule(req, fp)
        requests[n] = req
        if n >= 20:  # a queue about 20 deep: most requests are done soon after
            frontier.done(requests.pop(n - 20))
        if n % 10 == 0:
            frontier.sync()  # as the state's periodic sync does
        largest = max(largest, (tmp_path / FRONTIER_JOURNAL).stat().st_size)
    frontier.sync()
    one_record = len(b"Q") + 16 + 400  # about: fingerprint and a request as JSON
    assert largest < 64 * 1024 + 40 * one_record * 4  # bounded, not 5,000 records
    frontier.journal.close()  # a crash: no "C"

    again = Frontier(tmp_path, flush_interval=0)
    again.open()
    assert again.crashed
    assert sorted(r.url for r in again.recover(spider=None)) == sorted(
        r.url for r in requests.values()
    )
    again.journal.close()


def test_done_is_written_at_the_next_sync_only(tmp_path) -> None:
    """A ``D`` waits in memory, never in the journal's buffer: a full buffer would hand it to
    the OS before the feed lines of its items."""
    frontier = Frontier(tmp_path, flush_interval=1.0)
    frontier.open()
    path = tmp_path / FRONTIER_JOURNAL
    done = [request(n) for n in range(3000)]  # D records of ~75 KB: far over a buffer
    for req, fp in done:
        frontier.schedule(req, fp)
        frontier.done(req)
    assert b"D" not in kinds(path)
    frontier.sync()
    assert kinds(path) == [b"Q"] * 3000 + [b"D"] * 3000
    frontier.close()
    assert kinds(path)[-1] == b"C"


def test_done_of_an_unjournaled_request_writes_nothing(tmp_path) -> None:
    frontier = Frontier(tmp_path, flush_interval=0)
    frontier.open()
    size = (tmp_path / FRONTIER_JOURNAL).stat().st_size
    frontier.done_hex("00" * 16)
    frontier.sync()
    assert (tmp_path / FRONTIER_JOURNAL).stat().st_size == size
    frontier.close()


def test_a_url_queued_again_after_done_stays_pending(tmp_path) -> None:
    """A fingerprint scheduled again (the URL filter was cleared) before its ``D`` was
    written: the ``D`` is not written, and the new request is what a crash re-queues."""
    frontier = Frontier(tmp_path, flush_interval=60)
    frontier.open()
    first, fp = request(1)
    frontier.schedule(first, fp)
    frontier.done(first)
    frontier.schedule(first.replace(priority=7), fp)
    frontier.sync()
    frontier.journal.close()  # a crash
    again = Frontier(tmp_path, flush_interval=0)
    again.open()
    assert [r.priority for r in again.recover(spider=None)] == [7]
    again.journal.close()


def test_the_plugins_own_meta_is_not_journaled_and_is_set_again(tmp_path) -> None:
    """Our meta keys describe this run's copy of a request (the URL checked, its frontier
    entry, a re-queue): a journaled request is written without them, and a re-queued one
    carries its own. A redirect's request, whose meta Scrapy copies, takes over the entry."""
    from scrapy_neardup.dupefilter import CHECKED_META
    from scrapy_neardup.frontier import FRONTIER_META, RECOVERED_META

    frontier = Frontier(tmp_path, flush_interval=0)
    frontier.open()
    first, fp = request(1)
    first.meta.update({CHECKED_META: first.url, RECOVERED_META: "https://old.example/", "d": 2})
    frontier.schedule(first, fp)
    assert first.meta[FRONTIER_META] == fp.hex()
    moved, moved_fp = request(2)
    moved = moved.replace(meta=dict(first.meta))  # as RedirectMiddleware copies it
    frontier.schedule(moved, moved_fp)
    frontier.journal.close()  # a crash
    records = [p for p in read_records(tmp_path / FRONTIER_JOURNAL)[0] if p[:1] == b"Q"]
    assert all(b"_neardup" not in p for p in records)
    again = Frontier(tmp_path, flush_interval=0)
    again.open()
    (recovered,) = again.recover(spider=None)  # the first one is done: the redirect took over
    assert recovered.url == moved.url
    assert recovered.meta == {"d": 2, FRONTIER_META: moved_fp.hex(), RECOVERED_META: moved.url}
    again.journal.close()


# -- feed exports -----------------------------------------------------------------------------


def feed_crawler(tmp_path: Path, feed: Path, **settings: Any) -> Any:
    crawler = get_crawler(
        settings_dict={
            "JOBDIR": str(tmp_path / "job"),
            "FEEDS": {str(feed): {"format": "jsonlines"}},
            "SPIDER_MIDDLEWARES": FRONTIER,
            "NEARDUP_WORKERS": 0,
            **settings,
        }
    )
    crawler.spider = crawler.spidercls.from_crawler(crawler, name="feeds")
    crawler.get_extension(FeedExporter).open_spider(crawler.spider)
    return crawler


def test_a_request_reaches_the_file_before_anything_that_depends_on_it(tmp_path) -> None:
    """Its URL and the document of its page go to journals whose buffers spill to the OS when
    full: a ``Q`` waiting in a buffer could be lost by a SIGKILL that keeps them, and the
    document kept without its request would be dropped as a duplicate of itself when its URL
    is found again as new."""
    crawler = feed_crawler(tmp_path, tmp_path / "items.jsonl", NEARDUP_FLUSH_INTERVAL=60)
    state = NearDupState.from_crawler(crawler)
    req, fp = request(1)
    assert not state.key_seen(fp, lambda key: state.frontier.schedule(req, key))
    assert kinds(state.frontier.journal.path) == []  # both buffered: the Q need not go yet
    assert read_records(state._url_journal.path)[0] == []
    state._url_journal.write_out()  # as when its buffer fills up
    assert kinds(state.frontier.journal.path) == [b"Q"]  # went first
    assert read_records(state._url_journal.path)[0] == [fp]
    req2, fp2 = request(2)
    assert not state.key_seen(fp2, lambda key: state.frontier.schedule(req2, key))
    state.dedup.recorder.head("https://example.com/2", state.dedup.sign("two words"))
    state._content_journal.write_out()
    assert kinds(state.frontier.journal.path) == [b"Q", b"Q"]
    for i in range(3, 3000):  # a full buffer writes out on its own, the Qs first
        req_i, fp_i = request(i)
        state.key_seen(fp_i, lambda key, r=req_i: state.frontier.schedule(r, key))
    urls = read_records(state._url_journal.path)[0]
    assert len(urls) > 2 and len(kinds(state.frontier.journal.path)) >= len(urls)
    state.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_feed_lines_are_durable_before_the_done_records(tmp_path, monkeypatch) -> None:
    feed = tmp_path / "items.jsonl"
    crawler = feed_crawler(tmp_path, feed)
    state = NearDupState.from_crawler(crawler)
    frontier = state.frontier
    exporter = crawler.get_extension(FeedExporter)
    journal_path = frontier.journal.path
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        # what the OS holds at each fsync: the feed's lines, the journal's D records
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        lines = feed.read_bytes().count(b"\n")
        synced.append(f"{name}:{lines}:{kinds(journal_path).count(b'D')}")
        real_fsync(fd)

    req, fp = request(1)
    frontier.schedule(req, fp)
    exporter.item_scraped({"url": req.url}, crawler.spider)  # Scrapy's own handler
    frontier.done(req)
    assert feed.read_bytes() == b""  # in the feed's buffer: a SIGKILL now loses it ...
    assert b"D" not in kinds(journal_path)  # ... and the request is crawled again
    monkeypatch.setattr(os, "fsync", fsync)
    state.sync()
    monkeypatch.undo()
    assert json.loads(feed.read_bytes()) == {"url": req.url}
    assert kinds(journal_path) == [b"Q", b"D"]
    # the feed was fsynced with its line and no D on disk, then the journal with its D
    assert synced.index("items.jsonl:1:0") < synced.index("frontier.journal:1:1")
    state.close()


def test_with_a_flush_interval_of_0_done_is_durable_at_once(tmp_path) -> None:
    feed = tmp_path / "items.jsonl"
    crawler = feed_crawler(tmp_path, feed, NEARDUP_FLUSH_INTERVAL=0)
    state = NearDupState.from_crawler(crawler)
    req, fp = request(1)
    state.frontier.schedule(req, fp)
    crawler.get_extension(FeedExporter).item_scraped({"url": req.url}, crawler.spider)
    state.frontier.done(req)
    assert kinds(state.frontier.journal.path) == [b"Q", b"D"]
    assert json.loads(feed.read_bytes()) == {"url": req.url}
    state.close()


def test_gzip_feeds_are_flushed_to_a_readable_point(tmp_path) -> None:
    import gzip
    import zlib

    feed = tmp_path / "items.jsonl.gz"
    crawler = get_crawler(
        settings_dict={
            "JOBDIR": str(tmp_path / "job"),
            "FEEDS": {
                str(feed): {
                    "format": "jsonlines",
                    "postprocessing": ["scrapy.extensions.postprocessing.GzipPlugin"],
                }
            },
            "SPIDER_MIDDLEWARES": FRONTIER,
            "NEARDUP_WORKERS": 0,
        }
    )
    crawler.spider = crawler.spidercls.from_crawler(crawler, name="feeds")
    exporter = crawler.get_extension(FeedExporter)
    exporter.open_spider(crawler.spider)
    state = NearDupState.from_crawler(crawler)
    req, fp = request(1)
    state.frontier.schedule(req, fp)
    exporter.item_scraped({"url": req.url}, crawler.spider)
    state.frontier.done(req)
    state.sync()
    # a stream cut where a kill would cut it: what was flushed decompresses
    text = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(feed.read_bytes())
    assert json.loads(text) == {"url": req.url}
    state.close()
    exporter.slots[0].file.close()  # as Scrapy closes the feed at the end of the crawl
    exporter.slots[0].file.file.close()
    assert gzip.decompress(feed.read_bytes()) == text


def test_the_periodic_sync_writes_done_requests_of_an_idle_crawl(tmp_path) -> None:
    """Journals sync when a record is appended; after the last one, only the periodic sync
    (every NEARDUP_FLUSH_INTERVAL while the crawl runs) writes what is pending."""
    from scrapy import signals
    from twisted.internet.task import Clock

    feed = tmp_path / "items.jsonl"
    crawler = feed_crawler(tmp_path, feed, NEARDUP_FLUSH_INTERVAL=1.0)
    state = NearDupState.from_crawler(crawler)
    state.sync_clock = clock = Clock()
    crawler.signals.send_catch_log(signals.engine_started)
    journal_path = state.frontier.journal.path
    req, fp = request(1)
    state.frontier.schedule(req, fp)
    crawler.get_extension(FeedExporter).item_scraped({"url": req.url}, crawler.spider)
    state.frontier.done(req)
    clock.advance(0.9)
    assert kinds(journal_path) == [] and feed.read_bytes() == b""  # nothing written yet
    clock.advance(0.1)
    assert kinds(journal_path) == [b"Q", b"D"]
    assert json.loads(feed.read_bytes()) == {"url": req.url}
    state.close()
    assert not clock.getDelayedCalls()  # the loop stopped with the state


# -- requests as JSON -----------------------------------------------------------------------


class Article(scrapy.Item):
    url = scrapy.Field()
    tags = scrapy.Field()


class Pages(scrapy.Spider):
    name = "pages"

    def parse_page(self, response: Any) -> None:
        pass

    def failed(self, failure: Any) -> None:
        pass


def test_requests_round_trip_through_json() -> None:
    spider = Pages()
    original = FormRequest(
        "https://example.com/search",
        formdata={"q": "北京", "page": "2"},
        callback=spider.parse_page,
        errback=spider.failed,
        headers={"X-Token": b"\xff\x00raw"},
        cookies={"session": "abc"},
        meta={
            "tuple": (1, "two", b"3"),
            "set": {4, 5},
            "frozen": frozenset({"a"}),
            "keys": {1: "int key", b"b": "bytes key"},
            "tag-like": {"__bytes__": "not a tag", "other": 1},
            "item": Article(url="https://example.com/a", tags=("x", "y")),
            "nested": [{"depth": 2, "float": 0.5, "none": None, "bool": True}],
        },
        cb_kwargs={"article": Article(url="https://example.com/b")},
        priority=3,
        flags=["f"],
    )
    data = request_to_json(original, spider)
    copy = request_from_json(data, spider)
    assert type(copy) is FormRequest
    assert copy.to_dict(spider=spider) == original.to_dict(spider=spider)
    assert copy.callback == spider.parse_page and copy.errback == spider.failed
    assert type(copy.meta["item"]) is Article and copy.meta["item"]["tags"] == ("x", "y")
    assert copy.meta["tag-like"] == {"__bytes__": "not a tag", "other": 1}


class Aliased(Pages):
    name = "aliased"
    parse = Pages.parse_page  # one function, two names: Scrapy's search picks "parse"


def test_our_request_dicts_are_scrapys() -> None:
    """frontier._to_dict skips Scrapy's search of the spider's members where it can: it must
    give what ``Request.to_dict`` gives, for every kind of request and callback."""
    from scrapy.http import JsonRequest

    spider, aliased = Pages(), Aliased()
    cases = [
        (Request("https://example.com/a"), spider),
        (Request("https://example.com/a", callback=spider.parse_page), spider),
        (Request("https://example.com/a", errback=spider.failed), spider),
        (FormRequest("https://example.com/f", formdata={"q": "x"}, callback=spider.failed), spider),
        (JsonRequest("https://example.com/j", data={"a": 1}, meta={"m": 1}), None),
        (Request("https://example.com/a", callback=aliased.parse), aliased),
        (Request("https://example.com/a", callback=aliased.parse_page), aliased),
    ]
    for request, owner in cases:
        ours, scrapys = frontier_module._to_dict(request, owner), request.to_dict(spider=owner)
        if owner is aliased:  # another name of the same method: the same callback read back
            for field in ("callback", "errback"):
                if ours[field] != scrapys[field]:
                    assert getattr(owner, ours[field]) == getattr(owner, scrapys[field])
                    ours[field] = scrapys[field]
        assert ours == scrapys
    with pytest.raises(ValueError):  # not a method of this spider: Scrapy's error
        frontier_module._to_dict(Request("https://a.org/", callback=lambda r: None), spider)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"callback": "parse_page", "meta": {"depth": 3, "name": "x", "on": True, "none": None}},
        {"priority": -2, "dont_filter": True, "method": "HEAD", "encoding": "latin-1"},
        {"meta": {"big": 10**30}},  # beyond orjson's ints: the full way writes it
        {"meta": {"__bytes__": "a meta key that looks like a tag"}},
        {"headers": {"Accept": "text/html"}},
        {"cookies": {"a": "b"}, "flags": ["f"], "cb_kwargs": {"n": 1}},
        {"callback": "parse_page", "errback": "failed"},
    ],
)
def test_a_plain_request_is_written_short_and_reads_back_the_same(kwargs: dict) -> None:
    """A link followed (the usual request) is written without the fields that hold their
    defaults, and without making Scrapy's lazy parts (a Headers object per request)."""
    spider = Pages()
    kwargs = dict(kwargs)
    for name in ("callback", "errback"):
        if name in kwargs:
            kwargs[name] = getattr(spider, kwargs[name])
    original = Request("https://example.com/a?b=1", **kwargs)
    data = request_to_json(original, spider)
    copy = request_from_json(data, spider)
    assert copy.to_dict(spider=spider) == original.to_dict(spider=spider)
    plain = set(kwargs) <= {"callback", "meta", "priority", "dont_filter", "method", "encoding"}
    plain = plain and "big" not in kwargs.get("meta", {})
    plain = plain and "__bytes__" not in kwargs.get("meta", {})
    assert (b'"headers"' not in data) is plain
    if plain and hasattr(Request("https://a.org/"), "_headers"):  # Scrapy makes them lazily
        fresh = Request("https://example.com/a?b=1", **kwargs)
        request_to_json(fresh, spider)
        assert fresh._headers is None and fresh._cb_kwargs is None


def test_values_orjson_cannot_write_exactly_round_trip_too() -> None:
    """orjson writes NaN as null and refuses ints beyond 64 bits: those requests go through
    the standard library, and come back as they were."""
    original = Request(
        "https://example.com/",
        meta={"nan": float("nan"), "inf": [float("-inf")], "big": 10**30, "half": 0.5},
    )
    meta = request_from_json(request_to_json(original)).meta
    assert math.isnan(meta["nan"]) and meta["inf"] == [float("-inf")]
    assert meta["big"] == 10**30 and meta["half"] == 0.5


def test_a_request_json_cannot_hold_is_counted_not_journaled(tmp_path) -> None:
    from scrapy.statscollectors import MemoryStatsCollector

    stats = MemoryStatsCollector(get_crawler())
    frontier = Frontier(tmp_path, flush_interval=0, stats=stats)
    frontier.open()
    frontier.schedule(Request("https://example.com/1", meta={"when": object()}), b"\x01" * 16)
    frontier.schedule(Request("https://example.com/2", callback=lambda r: None), b"\x02" * 16)
    assert stats.get_value("neardup/frontier/unserializable") == 2
    frontier.close()
    assert kinds(tmp_path / FRONTIER_JOURNAL) == [b"C"]


# -- a crafted journal runs no code -------------------------------------------------------------


def write_q(tmp_path: Path, payload: bytes) -> None:
    """One ``Q`` record with a valid checksum, as an attacker with the JOBDIR could write."""
    journal = Journal(tmp_path / FRONTIER_JOURNAL, 0)
    journal.open()
    journal.append(b"Q" + b"\x07" * 16 + payload)
    journal.close()


@pytest.fixture
def trap(tmp_path, monkeypatch) -> Path:
    """A module that, if ever imported, creates a file: ``neardup_trap``, on sys.path."""
    sprung = tmp_path / "sprung"
    code = (
        "import pathlib\n"
        f"pathlib.Path({str(sprung)!r}).write_text('imported')\n"
        "import scrapy\n"
        "class Evil(scrapy.Request):\n    pass\n"
        "class EvilItem(scrapy.Item):\n    pass\n"
    )
    (tmp_path / "neardup_trap.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield sprung
    sys.modules.pop("neardup_trap", None)


@pytest.mark.parametrize(
    "crafted",
    [
        {"url": "https://example.com/", "_class": "neardup_trap.Evil"},
        {
            "url": "https://example.com/",
            "meta": {"x": {"__item__": ["neardup_trap", "EvilItem", {}]}},
        },
        {"url": "https://example.com/", "_class": "os.system"},  # imported, not a Request
        {"url": "https://example.com/", "_class": "subprocess.Popen"},
    ],
)
def test_a_crafted_request_is_refused_and_imports_nothing(crafted, tmp_path, trap, caplog) -> None:
    from scrapy.statscollectors import MemoryStatsCollector

    write_q(tmp_path, bytes([REQUEST_FORMAT]) + json.dumps(crafted).encode())
    stats = MemoryStatsCollector(get_crawler())
    frontier = Frontier(tmp_path, flush_interval=0, stats=stats)
    frontier.open()
    assert frontier.recover(spider=None) == []
    assert not trap.exists()
    assert "neardup_trap" not in sys.modules
    assert stats.get_value("neardup/frontier/unrecoverable") == 1
    assert "scrapy-neardup: cannot re-queue a request 0707" in caplog.text
    frontier.journal.close()


class _Sprung:
    """Unpickling it creates a file: what a crafted pickle in the old format could do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (Path(self.path), "unpickled"))


def test_a_pickled_request_of_the_old_format_is_never_unpickled(tmp_path) -> None:
    sprung = tmp_path / "sprung"
    write_q(tmp_path, pickle.dumps({"url": "https://example.com/", "x": _Sprung(str(sprung))}, 4))
    before = (tmp_path / FRONTIER_JOURNAL).read_bytes()
    frontier = Frontier(tmp_path, flush_interval=0)
    with pytest.raises(
        StateError, match=r"frontier\.journal: holds requests pickled by an earlier"
    ):
        frontier.open()
    frontier.journal.close()
    assert not sprung.exists()
    assert (tmp_path / FRONTIER_JOURNAL).read_bytes() == before


def test_a_pickled_request_stops_a_crawler_at_start(tmp_path) -> None:
    state_dir = tmp_path / "job" / "neardup"
    state_dir.mkdir(parents=True)
    write_q(state_dir, pickle.dumps({"url": "https://example.com/"}, 4))
    crawler = get_crawler(
        settings_dict={"JOBDIR": str(tmp_path / "job"), "SPIDER_MIDDLEWARES": FRONTIER}
    )
    with pytest.raises(StateError, match=r"neardup/frontier\.journal: holds requests pickled"):
        NearDupState.from_crawler(crawler)


def test_the_dupefilter_alone_keeps_no_frontier_and_starts_no_workers(tmp_path) -> None:
    import multiprocessing

    from scrapy_neardup import NearDupDupeFilter

    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    assert not any(dupefilter.request_seen(request(n)[0]) for n in range(100))
    assert all(dupefilter.request_seen(request(n)[0]) for n in range(100))
    dupefilter.close("finished")
    assert not (tmp_path / "neardup" / FRONTIER_JOURNAL).exists()  # nothing would mark it done
    assert (tmp_path / "neardup" / "urls.bloom").exists()  # closing wrote the snapshot
    assert multiprocessing.active_children() == []


def test_a_crash_is_told_from_a_clean_close_with_no_request_journaled(tmp_path) -> None:
    """A spider of start_urls journals no request (dont_filter): the run's "R" record alone
    says whether it ended cleanly."""
    first = Frontier(tmp_path, flush_interval=0)
    first.open()
    assert first.ended_cleanly  # a first run
    first.journal.close()  # killed: no "C"
    second = Frontier(tmp_path, flush_interval=0)
    second.open()
    assert not second.ended_cleanly and not second.crashed  # nothing to re-queue
    second.close()  # a clean close
    third = Frontier(tmp_path, flush_interval=0)
    third.open()
    assert third.ended_cleanly
    third.close()
