"""The frontier: exactly what is pending, done only once the items are in the feed files, and
JSON that runs no code when it is read back."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import logging
import math
import os
import pickle
import signal
import sqlite3
import struct
import sys
import uuid
from collections import OrderedDict, defaultdict, namedtuple
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import scrapy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy import FormRequest, Request
from scrapy.extensions.feedexport import FeedExporter
from scrapy.http import HtmlResponse, JsonRequest
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule, SitemapSpider
from scrapy.utils.test import get_crawler

from scrapy_neardup import request_codec
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.frontier import REQUEST_FORMAT, Frontier
from scrapy_neardup.meta import FRONTIER_META, PARENT_META, RECOVERED_META
from scrapy_neardup.request_codec import Unjournalable, request_from_json, request_to_json
from scrapy_neardup.state import NearDupState
from scrapy_neardup.storage.statedb import STATE_FILE, StateDB
from scrapy_neardup.urls import url_fingerprint

FRONTIER = {"scrapy_neardup.middlewares.FrontierMiddleware": 10}


#: Whether this Scrapy makes a request's headers, cookies and flags lazily (2.14 and later):
#: only then does the frontier write a plain request the short way; with Scrapy 2.13 it takes
#: the full way, which these tests check all the same.
LAZY_REQUESTS = hasattr(Request("https://a.org/"), "_headers")


def request(n: int) -> tuple[Request, bytes]:
    url = f"https://example.com/article/{n}?" + "x" * 200
    return Request(url), url_fingerprint(url)


def frontier_at(directory: Path, flush_interval: float = 0, stats: Any = None) -> Frontier:
    """The frontier of the state database in ``directory``, opened."""
    db = StateDB(directory / STATE_FILE, flush_interval)
    db.open({})
    db.start_writing()
    frontier = Frontier(db, stats)
    frontier.read()
    frontier.start()
    return frontier


def crash(frontier: Frontier) -> None:
    """A SIGKILL: what was not committed is gone."""
    frontier.db.abandon()


def committed(directory: Path) -> list[bytes]:
    """The fingerprints of the requests pending, as another process reads them now."""
    db = sqlite3.connect(directory / STATE_FILE)
    try:
        rows = db.execute("select data from requests order by seq")
        return [bytes(data[:16]) for (data,) in rows]
    finally:
        db.close()


def run_recorded(directory: Path) -> str | None:
    db = sqlite3.connect(directory / STATE_FILE)
    try:
        row = db.execute("select value from meta where name = 'run'").fetchone()
        return row[0] if row else None
    finally:
        db.close()


def test_done_requests_leave_the_database(tmp_path) -> None:
    frontier = frontier_at(tmp_path, flush_interval=60)  # committed by sync() only
    requests = {}
    for n in range(5_000):
        req, fp = request(n)
        frontier.schedule(req, fp)
        requests[n] = req
        if n >= 20:  # a queue about 20 deep: most requests are done soon after
            frontier.done(requests.pop(n - 20))
        if n % 10 == 0:
            frontier.sync()  # as the state's periodic sync does
            assert len(committed(tmp_path)) <= 31  # the pending ones, not 5,000
    frontier.sync()
    crash(frontier)

    again = frontier_at(tmp_path)
    assert again.crashed
    assert sorted(r.url for r in again.recover(spider=None)) == sorted(
        r.url for r in requests.values()
    )
    crash(again)


def test_done_is_written_at_the_next_sync_only(tmp_path) -> None:
    """A done request's row is deleted at the next sync only, after the feed files: never
    before the feed lines of its items."""
    frontier = frontier_at(tmp_path, flush_interval=1.0)
    done = [request(n) for n in range(3000)]
    for req, fp in done:
        frontier.schedule(req, fp)
        frontier.done(req)
    frontier.db.commit()
    assert len(committed(tmp_path)) == 3000
    frontier.sync()
    assert committed(tmp_path) == []
    frontier.close()
    assert run_recorded(tmp_path) == "closed"


def test_done_of_an_unrecorded_request_writes_nothing(tmp_path) -> None:
    frontier = frontier_at(tmp_path)
    changes = frontier.db.db.total_changes
    frontier.done_hex("00" * 16)
    frontier.sync()
    assert frontier.db.db.total_changes == changes
    frontier.close()


def test_a_url_queued_again_after_done_stays_pending(tmp_path) -> None:
    """A fingerprint scheduled again (the URL filter was cleared) before its row was
    deleted: the new request is what a crash re-queues."""
    frontier = frontier_at(tmp_path, flush_interval=60)
    first, fp = request(1)
    frontier.schedule(first, fp)
    frontier.done(first)
    frontier.schedule(first.replace(priority=7), fp)
    frontier.sync()
    crash(frontier)
    again = frontier_at(tmp_path)
    assert [r.priority for r in again.recover(spider=None)] == [7]
    crash(again)


def test_the_plugins_own_meta_is_not_journaled_and_is_set_again(tmp_path) -> None:
    """Our meta keys describe this run's copy of a request (the URL checked, its frontier
    entry, a re-queue): a recorded request is written without them, and a re-queued one
    carries its own. A redirect's request, whose meta Scrapy copies, takes over the entry."""
    from scrapy_neardup.dupefilter import CHECKED_META

    frontier = frontier_at(tmp_path)
    first, fp = request(1)
    first.meta.update({CHECKED_META: first.url, RECOVERED_META: "https://old.example/", "d": 2})
    frontier.schedule(first, fp)
    assert first.meta[FRONTIER_META] == fp.hex()
    moved, moved_fp = request(2)
    moved = moved.replace(meta=dict(first.meta))  # as RedirectMiddleware copies it
    frontier.schedule(moved, moved_fp)
    frontier.sync()
    crash(frontier)
    db = sqlite3.connect(tmp_path / STATE_FILE)
    records = [bytes(data[16:]) for (data,) in db.execute("select data from requests")]
    db.close()
    assert records and all(b"_neardup" not in data for data in records)
    again = frontier_at(tmp_path)
    (recovered,) = again.recover(spider=None)  # the first one is done: the redirect took over
    assert recovered.url == moved.url
    assert recovered.meta == {"d": 2, FRONTIER_META: moved_fp.hex(), RECOVERED_META: moved.url}
    crash(again)


# -- feed exports -----------------------------------------------------------------------------


#: The crawlers of feed_crawler() in the running test.
_FEED_CRAWLERS: list[Any] = []


@pytest.fixture(autouse=True)
def _close_feed_files() -> Iterator[None]:
    """The feed files of a test's crawlers are closed at its end (no crawl closes them)."""
    yield
    while _FEED_CRAWLERS:
        for slot in _FEED_CRAWLERS.pop().get_extension(FeedExporter).slots:
            if slot.file is not None:
                slot.file.close()


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
    _FEED_CRAWLERS.append(crawler)
    return crawler


def test_a_request_is_committed_with_anything_that_depends_on_it(tmp_path) -> None:
    """Its URL key and the document of its page are never committed before it: a document
    kept without its request would be dropped as a duplicate of itself when its URL is found
    again as new. The commit that takes them takes the request too."""
    crawler = feed_crawler(tmp_path, tmp_path / "items.jsonl", NEARDUP_FLUSH_INTERVAL=60)
    state = NearDupState.from_crawler(crawler)
    state_dir = tmp_path / "job" / "neardup"

    def keys() -> set[bytes]:
        db = sqlite3.connect(state_dir / STATE_FILE)
        found = {struct.pack("<qq", *row) for row in db.execute("select key, rest from url_keys")}
        db.close()
        return found

    req, fp = request(1)
    assert not state.key_seen(fp, lambda key: state.frontier.schedule(req, key))
    assert committed(state_dir) == [] and keys() == set()  # both wait for a commit
    state.dedup.recorder.head("https://example.com/1", state.dedup.sign("two words"))
    state.db.commit()  # the request and the document; the key may wait (a fetch again)
    assert committed(state_dir) == [fp] and keys() <= {fp}
    state.db.commit(durable=True)
    assert keys() == {fp}
    for i in range(2, 3000):  # batches of keys go in after their requests
        req_i, fp_i = request(i)
        state.key_seen(fp_i, lambda key, r=req_i: state.frontier.schedule(r, key))
        state.db.commit(durable=i % 100 == 0)
        assert keys() <= set(committed(state_dir))
    state.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
def test_feed_lines_are_durable_before_the_done_records(tmp_path, monkeypatch) -> None:
    feed = tmp_path / "items.jsonl"
    crawler = feed_crawler(tmp_path, feed)
    state = NearDupState.from_crawler(crawler)
    frontier = state.frontier
    exporter = crawler.get_extension(FeedExporter)
    state_dir = tmp_path / "job" / "neardup"
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        # what the OS holds at each fsync: the feed's lines, the requests pending
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        lines = feed.read_bytes().count(b"\n")
        synced.append(f"{name}:{lines}:{len(committed(state_dir))}")
        real_fsync(fd)

    req, fp = request(1)
    frontier.schedule(req, fp)
    frontier.db.commit()
    exporter.item_scraped({"url": req.url}, crawler.spider)  # Scrapy's own handler
    frontier.done(req)
    assert feed.read_bytes() == b""  # in the feed's buffer: a SIGKILL now loses it ...
    assert committed(state_dir) == [fp]  # ... and the request is crawled again
    monkeypatch.setattr(os, "fsync", fsync)
    state.sync()
    monkeypatch.undo()
    assert json.loads(feed.read_bytes()) == {"url": req.url}
    assert committed(state_dir) == []
    # the feed was fsynced with its line while its request was pending, then the request done
    assert synced.index("items.jsonl:1:1") < synced.index(f"{STATE_FILE}-wal:1:0")
    state.close()


def test_with_a_flush_interval_of_0_done_is_durable_at_once(tmp_path) -> None:
    feed = tmp_path / "items.jsonl"
    crawler = feed_crawler(tmp_path, feed, NEARDUP_FLUSH_INTERVAL=0)
    state = NearDupState.from_crawler(crawler)
    req, fp = request(1)
    state.frontier.schedule(req, fp)
    crawler.get_extension(FeedExporter).item_scraped({"url": req.url}, crawler.spider)
    state.frontier.done(req)
    assert run_recorded(tmp_path / "job" / "neardup") == "running"
    assert committed(tmp_path / "job" / "neardup") == []  # done, durably
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
    # engine_started, sent by hand: Scrapy's MemoryUsage would start a loop no crawl ends
    crawler = feed_crawler(tmp_path, feed, NEARDUP_FLUSH_INTERVAL=1.0, MEMUSAGE_ENABLED=False)
    state = NearDupState.from_crawler(crawler)
    state.directory.sync_clock = clock = Clock()
    crawler.signals.send_catch_log(signals.engine_started)
    state_dir = tmp_path / "job" / "neardup"
    req, fp = request(1)
    state.frontier.schedule(req, fp)
    state.frontier.db.commit()
    crawler.get_extension(FeedExporter).item_scraped({"url": req.url}, crawler.spider)
    state.frontier.done(req)
    clock.advance(0.9)
    assert committed(state_dir) == [fp] and feed.read_bytes() == b""  # nothing synced yet
    clock.advance(0.1)
    assert committed(state_dir) == []
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
    """request_codec._to_dict skips Scrapy's search of the spider's members where it can: it must
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
        ours, scrapys = request_codec._to_dict(request, owner), request.to_dict(spider=owner)
        if owner is aliased:  # another name of the same method: the same callback read back
            for field in ("callback", "errback"):
                if ours[field] != scrapys[field]:
                    assert getattr(owner, ours[field]) == getattr(owner, scrapys[field])
                    ours[field] = scrapys[field]
        assert ours == scrapys
    with pytest.raises(ValueError):  # not a method of this spider: Scrapy's error
        request_codec._to_dict(Request("https://a.org/", callback=lambda r: None), spider)


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
    plain = set(kwargs) <= {
        "callback",
        "errback",
        "meta",
        "priority",
        "dont_filter",
        "method",
        "encoding",
    }
    plain = plain and "big" not in kwargs.get("meta", {})
    plain = plain and "__bytes__" not in kwargs.get("meta", {})
    assert (b'"headers"' not in data) is (plain and LAZY_REQUESTS)
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
    frontier = frontier_at(tmp_path, stats=stats)
    frontier.schedule(Request("https://example.com/1", meta={"when": object()}), b"\x01" * 16)
    frontier.schedule(Request("https://example.com/2", callback=lambda r: None), b"\x02" * 16)
    assert stats.get_value("neardup/frontier/unserializable") == 2
    frontier.close()
    assert committed(tmp_path) == [] and run_recorded(tmp_path) == "closed"


# -- a crafted request runs no code -------------------------------------------------------------


def write_q(tmp_path: Path, payload: bytes) -> None:
    """One request row, as an attacker with the JOBDIR could write it."""
    frontier_at(tmp_path).db.close()
    db = sqlite3.connect(tmp_path / STATE_FILE)
    db.execute("insert into requests values (1, ?)", (b"\x07" * 16 + payload,))
    db.commit()
    db.close()


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
        "import dataclasses\n"
        "@dataclasses.dataclass\nclass EvilData:\n    x: int = 0\n"
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
        {
            "url": "https://example.com/",
            "meta": {"x": {"__dataclass__": ["neardup_trap", "EvilData", {}]}},
        },
        {
            "url": "https://example.com/",
            "meta": {"x": {"__attrs__": ["neardup_trap", "EvilData", {}]}},
        },
        {"url": "https://example.com/", "_class": "os.system"},  # imported, not a Request
        # imported, not of the kind the tag says: never made
        {
            "url": "https://example.com/",
            "meta": {"x": {"__dataclass__": ["subprocess", "Popen", {}]}},
        },
        {"url": "https://example.com/", "meta": {"x": {"__attrs__": ["subprocess", "Popen", {}]}}},
        {"url": "https://example.com/", "meta": {"x": {"__item__": ["subprocess", "Popen", {}]}}},
        # a dataclass, with a field it does not have
        {
            "url": "https://example.com/",
            "meta": {"x": {"__dataclass__": [__name__, "Product", {"__class__": "x"}]}},
        },
        {"url": "https://example.com/", "_class": "subprocess.Popen"},
    ],
)
def test_a_crafted_request_is_refused_and_imports_nothing(crafted, tmp_path, trap, caplog) -> None:
    from scrapy.statscollectors import MemoryStatsCollector

    write_q(tmp_path, bytes([REQUEST_FORMAT]) + json.dumps(crafted).encode())
    stats = MemoryStatsCollector(get_crawler())
    frontier = frontier_at(tmp_path, stats=stats)
    assert frontier.recover(spider=None) == []
    assert not trap.exists()
    assert "neardup_trap" not in sys.modules
    assert stats.get_value("neardup/frontier/unrecoverable") == 1
    assert "scrapy-neardup: cannot re-queue a request 0707" in caplog.text
    crash(frontier)


class _Sprung:
    """Unpickling it creates a file: what a crafted pickle in the old format could do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (Path(self.path), "unpickled"))


def test_a_pickled_request_of_the_old_format_is_never_unpickled(tmp_path) -> None:
    sprung = tmp_path / "sprung"
    write_q(tmp_path, pickle.dumps({"url": "https://example.com/", "x": _Sprung(str(sprung))}, 4))
    before = (tmp_path / STATE_FILE).read_bytes()
    db = StateDB(tmp_path / STATE_FILE)
    db.open({})
    with pytest.raises(StateError, match=r"state\.sqlite: holds requests pickled by an earlier"):
        Frontier(db).read()
    db.abandon()
    assert not sprung.exists()
    assert (tmp_path / STATE_FILE).read_bytes() == before


def test_a_pickled_request_stops_a_crawler_at_start(tmp_path) -> None:
    settings = {"JOBDIR": str(tmp_path / "job"), "SPIDER_MIDDLEWARES": FRONTIER}
    NearDupState.from_crawler(get_crawler(settings_dict=settings)).close()
    db = sqlite3.connect(tmp_path / "job" / "neardup" / STATE_FILE)
    db.execute("insert into requests values (1, ?)", (b"\x07" * 16 + pickle.dumps({}, 4),))
    db.commit()
    db.close()
    with pytest.raises(StateError, match=r"neardup/state\.sqlite: holds requests pickled"):
        NearDupState.from_crawler(get_crawler(settings_dict=settings))


def test_the_dupefilter_alone_keeps_no_frontier_and_starts_no_workers(tmp_path) -> None:
    import multiprocessing

    from scrapy_neardup import NearDupDupeFilter

    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    assert not any(dupefilter.request_seen(request(n)[0]) for n in range(100))
    assert all(dupefilter.request_seen(request(n)[0]) for n in range(100))
    dupefilter.close("finished")
    assert committed(tmp_path / "neardup") == []  # nothing would mark them done
    assert run_recorded(tmp_path / "neardup") is None
    assert multiprocessing.active_children() == []


def test_a_crash_is_told_from_a_clean_close_with_no_request_journaled(tmp_path) -> None:
    """A spider of start_urls records no request (dont_filter): the run recorded as under
    way at start alone says whether it ended cleanly."""
    first = frontier_at(tmp_path)
    assert first.ended_cleanly  # a first run
    crash(first)  # killed: not recorded closed
    second = frontier_at(tmp_path)
    assert not second.ended_cleanly and not second.crashed  # nothing to re-queue
    second.close()  # a clean close
    second.db.close()
    third = frontier_at(tmp_path)
    assert third.ended_cleanly
    third.close()


# -- what a request holds: every kind of value users put in one -----------------------------


def same(copy: Any, original: Any) -> bool:
    """Equal, and of the type the journal gives back: the builtin base of a subclass, a dict
    for a dict subclass, an exact type for the rest; a datetime in the same zone."""
    base = _base_type(original)
    if type(copy) is not base:
        return False
    if base in (list, tuple):
        return len(copy) == len(original) and all(map(same, copy, original))
    if base is dict:
        return copy.keys() == original.keys() and all(same(copy[k], original[k]) for k in copy)
    if base is float and math.isnan(original):
        return math.isnan(copy)
    if base is decimal.Decimal:
        return str(copy) == str(original)
    if base in (datetime.datetime, datetime.time):
        return (
            copy == original
            and copy.utcoffset() == original.utcoffset()
            and str(copy.tzinfo) == str(original.tzinfo)
            and copy.fold == original.fold
        )
    if dataclasses.is_dataclass(original):
        return all(
            same(getattr(copy, f.name), getattr(original, f.name))
            for f in dataclasses.fields(original)
        )
    return copy == original


def _base_type(value: Any) -> type:
    for base in (bool, str, int, float, bytes, dict, list, tuple, frozenset, set):
        if isinstance(value, base):
            return base
    if isinstance(value, bytearray):
        return bytes
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        for base in (datetime.datetime, datetime.date, datetime.time):
            if isinstance(value, base):
                return base
    return type(value)


def round_trip(value: Any, spider: Any = None) -> tuple[Any, Any]:
    """``value`` in a request's meta and keyword arguments, journaled and read back."""
    original = Request("https://example.com/", meta={"v": value}, cb_kwargs={"v": value})
    copy = request_from_json(request_to_json(original, spider), spider)
    return copy.meta["v"], copy.cb_kwargs["v"]


offsets = st.timedeltas(
    min_value=datetime.timedelta(hours=-23, minutes=-59),
    max_value=datetime.timedelta(hours=23, minutes=59),
).map(lambda d: datetime.timezone(datetime.timedelta(minutes=d // datetime.timedelta(minutes=1))))
zones = st.none() | offsets
hashable = (
    st.text()
    | st.binary()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.none()
    | st.datetimes(timezones=zones)
    | st.dates()
    | st.times(timezones=zones)
    | st.timedeltas()
    | st.decimals(allow_nan=False)
    | st.uuids()
)
values = st.recursive(
    hashable,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=12) | st.integers(), inner, max_size=4)
        | st.frozensets(hashable, max_size=4)
        | st.sets(hashable, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_every_kind_of_value_round_trips(value: Any) -> None:
    for copy in round_trip(value):
        assert same(copy, value), (copy, value)


def test_values_beyond_json_round_trip_with_their_types() -> None:
    from zoneinfo import ZoneInfo

    paris = ZoneInfo("Europe/Paris")
    cases = [
        datetime.datetime(2024, 3, 1, 12, 30, 5, 123456, tzinfo=datetime.timezone.utc),
        datetime.datetime(2024, 3, 1, 12, 30, tzinfo=paris),
        datetime.datetime(2024, 10, 27, 2, 30, tzinfo=paris, fold=1),  # the repeated hour
        datetime.datetime(2024, 3, 31, 2, 30, tzinfo=paris),  # an hour that never was
        datetime.datetime(1, 1, 1),
        datetime.date(1999, 12, 31),
        datetime.time(23, 59, 59, 999999, tzinfo=datetime.timezone(datetime.timedelta(hours=-3))),
        datetime.timedelta(days=-3, microseconds=7),
        decimal.Decimal("-0.000"),
        decimal.Decimal("NaN"),
        decimal.Decimal("-Infinity"),
        decimal.Decimal("1E+999999"),
        uuid.uuid4(),
        {"__datetime__": "a key that looks like a tag", 2: b"x"},
        float("nan"),
    ]
    for value in cases:
        for copy in round_trip(value):
            assert same(copy, value), (copy, value)
    copy, _ = round_trip(cases[2])
    assert (
        copy.tzinfo is paris and copy.fold == 1 and copy.utcoffset() == datetime.timedelta(0, 3600)
    )


class Colour(enum.IntEnum):
    RED = 1


class Shade(str, enum.Enum):  # enum.StrEnum from Python 3.11
    DARK = "dark"


class Weight(float):
    pass


class Raw(bytes):
    pass


Point = namedtuple("Point", "x y")


def test_subclasses_of_the_builtins_are_written_as_their_base() -> None:
    cases = [
        (Colour.RED, 1),
        (Shade.DARK, "dark"),
        (Weight(0.25), 0.25),
        (Raw(b"\x00\xff"), b"\x00\xff"),
        (bytearray(b"ab"), b"ab"),
        (OrderedDict([("b", 1), ("a", 2)]), {"b": 1, "a": 2}),
        (defaultdict(list, {"a": [1]}), {"a": [1]}),
        (Point(1, 2), (1, 2)),
        ({Colour.RED: Shade.DARK}, {1: "dark"}),
    ]
    for value, expected in cases:
        for copy in round_trip(value):
            assert copy == expected and type(copy) is type(expected), (copy, value)
    assert list(round_trip(OrderedDict([("b", 1), ("a", 2)]))[0]) == ["b", "a"]


def test_link_text_from_lxml_is_journaled_as_a_str() -> None:
    import lxml.html

    text = lxml.html.fromstring("<p><a href='/x'>Read more</a></p>").xpath("//a/text()")[0]
    assert type(text).__name__ == "_ElementUnicodeResult"
    for copy in round_trip(text):
        assert copy == "Read more" and type(copy) is str
    for copy in round_trip({"link_text": text, "texts": [text], "pair": (text, 1)}):
        assert same(
            copy, {"link_text": "Read more", "texts": ["Read more"], "pair": ("Read more", 1)}
        )


# -- requests of Scrapy's spiders and request classes -----------------------------------------


class Crawling(CrawlSpider):
    name = "crawling"
    rules = (
        Rule(LinkExtractor(allow=r"/item/"), callback="parse_item"),
        Rule(LinkExtractor(deny=r"/item/"), follow=True),
    )

    def parse_item(self, response: Any) -> None:
        pass


LINKS = (
    b"<html><body><a href='/item/1'>First <b>item</b></a> <a href='/item/2'>Second</a>"
    b"<a href='/list?page=2'>Next page</a> <a href='/about'></a></body></html>"
)


def test_a_crawlspiders_requests_are_journaled_and_read_back() -> None:
    spider = Crawling.from_crawler(get_crawler(Crawling))
    response = HtmlResponse("https://example.com/", body=LINKS, encoding="utf-8")
    requests = list(spider._requests_to_follow(response))
    assert len(requests) == 4
    assert any(type(r.meta["link_text"]) is not str for r in requests)  # lxml's
    for original in requests:
        if LAZY_REQUESTS:
            assert request_codec._plain_to_json(original, spider) is not None  # the short way
        copy = request_from_json(request_to_json(original, spider), spider)
        assert copy.callback == spider._callback and copy.errback == spider._errback
        assert copy.meta == original.meta and type(copy.meta["link_text"]) is str
        assert copy.to_dict(spider=spider) == original.to_dict(spider=spider)


def test_sitemap_spider_requests_and_callbacks_with_arguments_round_trip() -> None:
    sitemap = SitemapSpider(name="sitemap", sitemap_urls=["https://example.com/sitemap.xml"])
    pages = Pages()
    cases = [
        (Request("https://example.com/sitemap.xml", callback=sitemap._parse_sitemap), sitemap),
        (
            Request(
                "https://example.com/a",
                callback=pages.parse_page,
                errback=pages.failed,
                cb_kwargs={"when": datetime.date(2024, 1, 2), "n": Colour.RED},
            ),
            pages,
        ),
    ]
    for original, spider in cases:
        copy = request_from_json(request_to_json(original, spider), spider)
        assert copy.callback == original.callback and copy.errback == original.errback
        assert copy.cb_kwargs == original.cb_kwargs


def test_form_and_json_requests_keep_their_class_and_arguments() -> None:
    form = FormRequest(
        "https://example.com/login", formdata={"user": "ü", "pass": "x"}, callback=Pages().failed
    )
    as_json = JsonRequest(
        "https://example.com/api",
        data={"b": [1, 2], "a": None},
        dumps_kwargs={"sort_keys": True, "indent": 1},
        meta={"stamp": datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone.utc)},
    )
    spider = Pages()
    for original in (form, as_json):
        copy = request_from_json(request_to_json(original, spider), spider)
        assert type(copy) is type(original)
        assert copy.body == original.body and copy.method == original.method
        assert copy.headers == original.headers and copy.meta == original.meta
    copy = request_from_json(request_to_json(as_json))
    assert copy._dumps_kwargs == as_json._dumps_kwargs == {"sort_keys": True, "indent": 1}


# -- items in meta: dataclasses and attrs classes ----------------------------------------------


@dataclasses.dataclass
class Product:
    name: str
    price: decimal.Decimal
    tags: tuple = ()
    seen: datetime.datetime | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    key: bytes
    count: int = dataclasses.field(default=0)
    derived: str = dataclasses.field(init=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", f"made-{self.count}")


@dataclasses.dataclass
class Nested:
    product: Product
    items: list = dataclasses.field(default_factory=list)


try:
    import attrs

    @attrs.define
    class Offer:
        url: str
        _secret: str = "s"
        when: datetime.date | None = None

    @attrs.frozen
    class FrozenOffer:
        offer: Offer
        count: int = attrs.field(converter=int, default=0)

except ImportError:  # attrs is optional
    attrs = None


def test_dataclass_items_round_trip() -> None:
    product = Product("pen", decimal.Decimal("1.50"), ("a",), datetime.datetime(2024, 1, 1))
    frozen = Frozen(b"k", 3)
    object.__setattr__(frozen, "derived", "changed after __post_init__")
    nested = Nested(product, [frozen, Article(url="https://example.com/a")])
    for value in (product, frozen, nested):
        for copy in round_trip(value):
            assert type(copy) is type(value) and copy == value
    copy, _ = round_trip(frozen)
    assert copy.derived == "changed after __post_init__"


@pytest.mark.skipif(attrs is None, reason="attrs is not installed")
def test_attrs_items_round_trip() -> None:
    offer = Offer("https://example.com/o", "hidden", datetime.date(2024, 2, 29))
    frozen = FrozenOffer(offer, 7)
    for value in (offer, frozen, [offer, {"f": frozen}]):
        for copy in round_trip(value):
            assert copy == value
    copy, _ = round_trip(frozen)
    assert (
        type(copy) is FrozenOffer and type(copy.offer) is Offer and copy.offer._secret == "hidden"
    )


def test_a_class_not_found_by_its_name_cannot_be_journaled() -> None:
    @dataclasses.dataclass
    class Local:
        x: int = 0

    @dataclasses.dataclass
    class NeedsMore:
        x: int
        extra: dataclasses.InitVar[int]

    for value in (Local(), NeedsMore(1, 2), object(), lambda: None):
        with pytest.raises(Unjournalable):
            request_to_json(Request("https://example.com/", meta={"v": value}))


# -- a request that cannot be journaled keeps the one that yielded it pending ------------------


def child_of(parent: Request, n: int, **meta: Any) -> tuple[Request, bytes]:
    """A request yielded by ``parent``'s response, tagged as FrontierMiddleware tags it."""
    child, fp = request(n)
    child.meta.update(meta)
    child.meta[PARENT_META] = parent.meta[FRONTIER_META]
    return child, fp


def test_an_unjournaled_child_keeps_its_parent_pending_through_a_crash(tmp_path, caplog) -> None:
    import socket

    from scrapy.statscollectors import MemoryStatsCollector

    stats = MemoryStatsCollector(get_crawler())
    frontier = frontier_at(tmp_path, stats=stats)
    parent, parent_fp = request(1)
    frontier.schedule(parent, parent_fp)
    with socket.socket() as sock, caplog.at_level(logging.DEBUG, "scrapy_neardup.frontier"):
        lost, lost_fp = child_of(parent, 2, sock=sock)
        frontier.schedule(lost, lost_fp)
        fine, fine_fp = child_of(parent, 3, link_text="plain")
        frontier.schedule(fine, fine_fp)
        other, other_fp = child_of(parent, 4, sock=sock)
        frontier.schedule(other, other_fp)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "socket.socket" in warnings[0].getMessage()
    assert lost.url in warnings[0].getMessage() and "stays pending" in warnings[0].getMessage()
    assert "socket.socket" in caplog.records[-1].getMessage()  # the next one: DEBUG
    assert stats.get_value("neardup/frontier/unserializable") == 2
    assert FRONTIER_META not in lost.meta and fine.meta[FRONTIER_META] == fine_fp.hex()
    frontier.done(fine)
    frontier.done(parent)  # its output went through, but a child was not journaled
    frontier.sync()
    assert committed(tmp_path) == [parent_fp]  # not done
    assert marks(tmp_path) == {(parent_fp, lost_fp), (parent_fp, other_fp)}
    crash(frontier)

    again = frontier_at(tmp_path)
    assert again.crashed and again.passes == {lost_fp, other_fp}
    assert [r.url for r in again.recover(spider=None)] == [parent.url]
    assert marks(tmp_path) == {(parent_fp, lost_fp), (parent_fp, other_fp)}  # kept
    assert again.take_pass(lost_fp) and not again.take_pass(lost_fp)  # once
    crash(again)


def marks(directory: Path) -> set[tuple[bytes, bytes]]:
    db = sqlite3.connect(directory / STATE_FILE)
    try:
        return {(bytes(p), bytes(c)) for p, c in db.execute("select parent, child from marks")}
    finally:
        db.close()


def test_a_parent_whose_children_all_journaled_is_done_as_before(tmp_path) -> None:
    frontier = frontier_at(tmp_path)
    parent, parent_fp = request(1)
    frontier.schedule(parent, parent_fp)
    children = [child_of(parent, n, link_text="x", rule=0) for n in range(2, 5)]
    for child, fp in children:
        frontier.schedule(child, fp)
        if LAZY_REQUESTS:
            assert request_codec._plain_to_json(child, None) is not None  # the fast path still
    frontier.done(parent)
    assert committed(tmp_path) == [fp for _, fp in children] and marks(tmp_path) == set()
    crash(frontier)
    again = frontier_at(tmp_path)
    assert sorted(r.url for r in again.recover(None)) == sorted(c.url for c, _ in children)
    assert again.passes == set()
    crash(again)


def test_a_pinned_parent_is_pending_until_its_children_journal(tmp_path) -> None:
    """A clean close keeps the marks of pending requests for a later crash, without passes
    in between; once the parent is done, its marks go."""
    frontier = frontier_at(tmp_path, flush_interval=60)
    parent, parent_fp = request(1)
    frontier.schedule(parent, parent_fp)
    lost, lost_fp = child_of(parent, 2, when=object())
    frontier.schedule(lost, lost_fp)
    frontier.done(parent)
    for n in range(3, 1000):
        req, fp = request(n)
        frontier.schedule(req, fp)
        frontier.done(req)
        if n % 50 == 0:
            frontier.sync()
    frontier.close()  # clean: Scrapy's queue holds the rest
    frontier.db.close()
    assert committed(tmp_path) == [parent_fp] and marks(tmp_path) == {(parent_fp, lost_fp)}

    second = frontier_at(tmp_path)
    assert not second.crashed and second.passes == set()  # no crash: nothing re-crawled
    assert marks(tmp_path) == {(parent_fp, lost_fp)}
    assert second.pinned(parent_fp.hex())  # answers for what its child yields, if crawled
    crash(second)  # this run crashes

    third = frontier_at(tmp_path)
    assert third.passes == {lost_fp}
    (recovered,) = third.recover(None)
    assert recovered.url == parent.url
    third.take_pass(lost_fp)  # crawled again, it yields its child, which journals this time
    child = Request(lost.url, meta={PARENT_META: recovered.meta[FRONTIER_META]})
    third.schedule(child, lost_fp)
    third.done(recovered)
    third.close()
    third.db.close()
    assert committed(tmp_path) == [lost_fp]  # the child alone
    assert marks(tmp_path) == set()  # the mark went with its parent


def jobdir_crawler(tmp_path: Path) -> Any:
    crawler = get_crawler(
        Pages,
        settings_dict={
            "JOBDIR": str(tmp_path / "job"),
            "SPIDER_MIDDLEWARES": FRONTIER,
            "NEARDUP_WORKERS": 0,
            "NEARDUP_FLUSH_INTERVAL": 0,
        },
    )
    crawler.spider = crawler.spidercls.from_crawler(crawler)
    return crawler


def test_after_a_crash_the_child_passes_the_url_filter_once(tmp_path) -> None:
    from scrapy_neardup import NearDupDupeFilter

    crawler = jobdir_crawler(tmp_path)
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    state = dupefilter.state
    parent = Request("https://example.com/list")
    assert not dupefilter.request_seen(parent)
    child = Request("https://example.com/item", meta={"when": object()})
    child.meta[PARENT_META] = parent.meta[FRONTIER_META]
    assert not dupefilter.request_seen(child)  # new: let through, not journaled
    state.frontier.done(parent)
    state.sync()
    state.directory.abandon()  # a SIGKILL: not recorded closed

    crawler = jobdir_crawler(tmp_path)
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    (recovered,) = dupefilter.state.frontier.recover(crawler.spider)
    assert recovered.url == parent.url
    assert not dupefilter.request_seen(recovered)  # re-queued: through once
    again = Request("https://example.com/item", meta={"when": object()})
    again.meta[PARENT_META] = recovered.meta[FRONTIER_META]  # yielded again by its parent
    assert not dupefilter.request_seen(again)  # its pass
    assert again.meta[RECOVERED_META] == again.url  # through the middleware's checks too
    assert dupefilter.request_seen(Request("https://example.com/item"))  # once
    assert dupefilter.state.stats.get_value("neardup/frontier/passed") == 1
    dupefilter.close("finished")


def test_the_middleware_tags_what_a_response_yields(tmp_path) -> None:
    import asyncio

    from scrapy_neardup.middlewares import FrontierMiddleware

    crawler = jobdir_crawler(tmp_path)
    state = NearDupState.from_crawler(crawler)
    mw = FrontierMiddleware(state, crawler)
    parent, parent_fp = request(1)
    state.frontier.schedule(parent, parent_fp)
    response = HtmlResponse(parent.url, body=b"<html></html>", request=parent)
    copied = Request("https://example.com/copied", meta=dict(response.meta))
    plain = Request("https://example.com/plain")

    async def output() -> Any:
        yield plain
        yield copied
        yield {"url": parent.url}

    async def collect(response: Any, output: Any) -> list:
        return [obj async for obj in mw.process_spider_output(response, output)]

    assert len(asyncio.run(collect(response, output()))) == 3
    for child in (plain, copied):
        assert child.meta[PARENT_META] == parent_fp.hex()
    # response.meta copied into a request: it is not its parent's entry (not a redirect)
    assert FRONTIER_META not in copied.meta
    assert request_codec._plain_to_json(plain, crawler.spider) == (
        b'{"url":"https://example.com/plain"}' if LAZY_REQUESTS else None
    )

    # A request that could not be journaled: its parent, pinned, answers for what it yields.
    lost, lost_fp = child_of(parent, 2, lock=object())
    state.frontier.schedule(lost, lost_fp)
    start = Request("https://example.com/start", dont_filter=True)  # never journaled
    for source, expected in ((lost, parent_fp.hex()), (start, None)):
        grandchild = Request("https://example.com/grandchild")

        async def one(request: Request = grandchild) -> Any:
            yield request

        answer = HtmlResponse(source.url, body=b"<html></html>", request=source)
        assert asyncio.run(collect(answer, one())) == [grandchild]
        assert grandchild.meta.get(PARENT_META) == expected
    state.close()


def test_a_real_crawl_killed_on_an_unjournaled_page_crawls_it_again(tmp_path) -> None:
    """A crawl killed with SIGKILL on the page of a request that could not be journaled (a
    lock in its meta): the next run crawls the page that yielded it again, and it."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    from crash_runner import launch

    site = tmp_path / "site"
    site.mkdir()
    words = {"index": "front page", "list": "list of goods", "item": "one item"}
    for name, text in words.items():
        body = " ".join(f"This is the {text}, sentence {n} of many words." for n in range(40))
        link = {"index": "list.html", "list": "item.html"}.get(name, "index.html")
        page = f"<html><head><title>{name}</title></head><body><p>{body}</p>"
        (site / f"{name}.html").write_text(page + f"<a href='{link}'>next</a></body></html>")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    jobdir = tmp_path / "job"
    stderr = tmp_path / "stderr.log"
    try:
        runs = []
        for n in range(2):
            log = tmp_path / f"run{n}.jsonl"
            args = {
                "spider": "pinned_spider.PinnedSpider",
                "start_url": f"http://127.0.0.1:{server.server_address[1]}/",
                "log": str(log),
                "settings": {
                    "JOBDIR": str(jobdir),
                    "PINNED_MARKER": str(tmp_path / "killed"),
                    "NEARDUP_WORKERS": 0,
                    "NEARDUP_FLUSH_INTERVAL": 0,
                    "CONCURRENT_REQUESTS": 1,
                    "DOWNLOAD_DELAY": 0.3,  # the list page is done before the item's is fetched
                },
            }
            proc = launch(args, stderr, tmp_path)
            code = proc.wait(timeout=120)
            assert code == (-signal.SIGKILL if n == 0 else 0), stderr.read_text()[-3000:]
            runs.append([json.loads(line) for line in log.read_text().splitlines()])
    finally:
        server.shutdown()
        server.server_close()
    kept = [[r["kept"]["url"].rsplit("/", 1)[1] for r in run if "kept" in r] for run in runs]
    assert kept[0] == ["list.html"]  # then killed on item.html
    assert "item.html" in kept[1], (kept, stderr.read_text()[-3000:])
    stats = runs[1][-1]["stats"]
    assert stats["neardup/frontier/recovered"] == 1 and stats["neardup/frontier/passed"] == 1
    assert run_recorded(jobdir / "neardup") == "closed"


@pytest.mark.parametrize(
    ("start_url", "crawled"), [("https://example.com/", False), ("file:///tmp/", True)]
)
def test_a_recorded_request_of_a_scheme_no_start_request_has_is_not_crawled(
    tmp_path, start_url, crawled
) -> None:
    """A JOBDIR is data: a request row crafted to read a local file is crawled only when
    the spider's own start requests are of its scheme."""
    import asyncio

    from scrapy_neardup.middlewares import FrontierMiddleware

    crawler = jobdir_crawler(tmp_path)
    state = NearDupState.from_crawler(crawler)
    state.directory.abandon()  # a crashed run: not recorded closed
    db = sqlite3.connect(tmp_path / "job" / "neardup" / STATE_FILE)
    data = bytes([REQUEST_FORMAT]) + json.dumps({"url": "file:///etc/hostname"}).encode()
    db.execute("insert into requests values (1, ?)", (b"\x07" * 16 + data,))
    db.commit()
    db.close()
    crawler = jobdir_crawler(tmp_path)
    mw = FrontierMiddleware.from_crawler(crawler)

    async def start() -> Any:
        yield Request(start_url)

    async def collect() -> list[str]:
        return [r.url async for r in mw.process_start(start())]

    urls = asyncio.run(collect())
    assert ("file:///etc/hostname" in urls) is crawled and start_url in urls
    refused = mw.state.stats.get_value("neardup/frontier/refused")
    assert refused == (None if crawled else 1)
    mw.state.close()
