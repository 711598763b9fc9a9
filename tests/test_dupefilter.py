"""NearDupDupeFilter in this process, built and driven the way Scrapy builds and drives a
``DUPEFILTER_CLASS``: ``build_from_crawler`` on a crawler of ``get_crawler``, or Scrapy's own
``Scheduler`` (which alone honours ``dont_filter``). Scrapy's own test file for dupefilters
runs against the class in tests/test_scrapy_contract.py; these pin down what is ours.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from scrapy import Request, Spider
from scrapy.core.scheduler import Scheduler
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_neardup.dupefilter import NearDupDupeFilter

DUPEFILTER = "scrapy_neardup.dupefilter.NearDupDupeFilter"


class Pages(Spider):
    name = "pages"


def crawler(**settings: Any) -> Any:
    return get_crawler(Pages, {"DUPEFILTER_CLASS": DUPEFILTER, "NEARDUP_WORKERS": 0, **settings})


def dupefilter(**settings: Any) -> NearDupDupeFilter:
    df = build_from_crawler(NearDupDupeFilter, crawler(**settings))
    df.open()
    return df


def test_a_request_seen_twice_is_a_duplicate() -> None:
    df = dupefilter()
    assert df.request_seen(Request("https://example.com/a")) is False
    assert df.request_seen(Request("https://example.com/a")) is True
    assert df.request_seen(Request("https://example.com/b")) is False
    df.close("finished")


def test_spellings_of_one_url_are_one_request() -> None:
    df = dupefilter()
    assert not df.request_seen(Request("https://example.com/news/a?x=1&y=2"))
    for spelling in (
        "https://example.com/news/a?y=2&x=1",  # query order
        "https://example.com/news/a?x=1&y=2#comments",  # fragment
        "https://EXAMPLE.com:443/news/a/?x=1&y=2",  # host case, default port, trailing slash
        "https://example.com/news/a?utm_source=feed&x=1&y=2&fbclid=abc",  # tracking
    ):
        assert df.request_seen(Request(spelling)), spelling
    assert not df.request_seen(Request("https://example.com/news/a?x=1&y=3"))
    df.close("finished")


def test_method_and_body_keep_requests_apart() -> None:
    df = dupefilter()
    url = "https://example.com/search?q=1"
    assert not df.request_seen(Request(url))
    assert not df.request_seen(Request(url, method="POST", body=b"page=1"))
    assert not df.request_seen(Request(url, method="POST", body=b"page=2"))
    assert df.request_seen(Request(url + "#top", method="POST", body=b"page=1"))
    df.close("finished")


def test_a_urls_key_is_the_same_from_the_table_of_recent_urls() -> None:
    """request_key() keeps the keys of recent GETs by URL: the same answer as computed anew,
    and none for a request the fingerprinter keys otherwise."""
    from scrapy_neardup.state import keys

    df = dupefilter()
    url = "https://EXAMPLE.com:443/news/a/?y=2&x=1"
    keys._url_key.cache_clear()
    first = df.request_key(Request(url))
    assert df.request_key(Request(url)) == first  # from the table
    assert keys._url_key.cache_info()[:2] == (1, 1)  # (hits, misses)
    post = df.request_key(Request(url, method="POST", body=b"page=1"))
    assert post != first and keys._url_key.cache_info()[:2] == (1, 1)
    keys._url_key.cache_clear()
    assert df.request_key(Request(url)) == first  # computed anew
    assert keys._url_key.cache_info().maxsize == keys.URL_KEYS
    df.close("finished")


def test_dont_filter_is_the_schedulers_business() -> None:
    """As with Scrapy's RFPDupeFilter, ``request_seen`` ignores ``dont_filter``; Scrapy's
    scheduler never asks the filter about such a request, so it is neither filtered nor
    recorded."""
    df = dupefilter()
    assert not df.request_seen(Request("https://example.com/a", dont_filter=True))
    assert df.request_seen(Request("https://example.com/a", dont_filter=True))

    # the default queue of newer Scrapy asks the engine's downloader: none outside a crawl
    c = crawler(SCHEDULER_PRIORITY_QUEUE="scrapy.pqueues.ScrapyPriorityQueue")
    scheduler = build_from_crawler(Scheduler, c)
    assert isinstance(scheduler.df, NearDupDupeFilter)
    scheduler.open(Pages.from_crawler(c))
    forced = Request("https://example.com/b", dont_filter=True)
    assert scheduler.enqueue_request(forced)
    assert scheduler.enqueue_request(forced)
    assert scheduler.enqueue_request(Request("https://example.com/b"))  # not recorded before
    assert not scheduler.enqueue_request(Request("https://example.com/b#x"))
    assert len(scheduler) == 3
    assert c.stats.get_value("dupefilter/filtered") == 1
    assert c.stats.get_value("neardup/urls/filtered") == 1
    scheduler.close("finished")


def test_log_counts_in_the_crawler_stats_and_logs_once_unless_debug(caplog) -> None:
    c = crawler()
    df = build_from_crawler(NearDupDupeFilter, c)
    df.open()
    spider = Pages.from_crawler(c)
    with caplog.at_level(logging.DEBUG, logger="scrapy.dupefilters"):
        for n in range(3):
            df.log(Request(f"https://example.com/{n}"), spider)
    assert c.stats.get_value("dupefilter/filtered") == 3
    assert c.stats.get_value("neardup/urls/filtered") == 3
    (record,) = caplog.records
    assert "no more duplicates will be shown" in record.getMessage()
    df.close("finished")

    for setting in ("DUPEFILTER_DEBUG", "NEARDUP_DEBUG"):
        c = crawler(**{setting: True})
        df = build_from_crawler(NearDupDupeFilter, c)
        assert df.debug, setting
        df.close("finished")


def test_the_state_outlives_close_with_a_jobdir(tmp_path: Path) -> None:
    jobdir = str(tmp_path / "job")
    first = dupefilter(JOBDIR=jobdir)
    assert not first.request_seen(Request("https://example.com/1"))
    assert first.close("finished") is None
    assert (tmp_path / "job" / "neardup").is_dir()
    assert not (tmp_path / "job" / "requests.seen").exists()  # not Scrapy's fingerprint file

    second = dupefilter(JOBDIR=jobdir)
    assert second is not first
    assert second.request_seen(Request("https://example.com/1#again"))
    assert not second.request_seen(Request("https://example.com/2"))
    second.close("finished")

    third = dupefilter(JOBDIR=jobdir)
    assert third.request_seen(Request("https://example.com/2"))
    third.close("finished")
    assert not dupefilter().request_seen(Request("https://example.com/1"))  # no JOBDIR
