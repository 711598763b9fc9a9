"""The middlewares together with the dupefilter and the pipeline, in this process: each built
with ``build_from_crawler`` on one crawler of ``get_crawler`` (so they share its state), and
called as Scrapy calls them. Extraction is inline (``NEARDUP_WORKERS = 0``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_neardup.dupefilter import NearDupDupeFilter
from scrapy_neardup.middlewares import (
    FrontierMiddleware,
    LinkBatchMiddleware,
    PageTextMiddleware,
    UrlFilterMiddleware,
)
from scrapy_neardup.pipeline import NearDupPipeline

ARTICLE = "The river rose over the old town walls and the council met at the bridge. " * 30
PAGE = f"<html><body><nav>Home</nav><article><p>{ARTICLE}</p></article></body></html>".encode()


class Pages(Spider):
    name = "pages"


SPIDER_MIDDLEWARES = {
    "scrapy_neardup.middlewares.PageTextMiddleware": 50,
    "scrapy_neardup.middlewares.FrontierMiddleware": 10,
}


def crawler(**settings: Any) -> Crawler:
    return get_crawler(
        Pages, {"NEARDUP_WORKERS": 0, "SPIDER_MIDDLEWARES": SPIDER_MIDDLEWARES, **settings}
    )


def spider_output(response: Response, mw: PageTextMiddleware, *objs: Any) -> list[Any]:
    async def result() -> AsyncIterator[Any]:
        for obj in objs:
            yield obj

    async def collect() -> list[Any]:
        return [obj async for obj in mw.process_spider_output(response, result())]

    return asyncio.run(collect())


def test_a_waiting_page_lets_its_parsed_tree_go() -> None:
    """Once the spider's output has gone on, a page whose item waits for its text no longer
    holds its parsed tree (Scrapy keeps the response until the item is done); asked for
    again, it is parsed again."""
    pages = build_from_crawler(PageTextMiddleware, crawler())
    url = "https://a.org/story"
    response = HtmlResponse(url, body=PAGE, request=Request(url))
    tree = response.selector
    out = spider_output(response, pages, Request(url + "/next"))
    assert response.selector is tree  # no item: nothing waits, nothing changes
    out = spider_output(response, pages, {"url": url}, Request(url + "/next"))
    assert len(out) == 2
    assert response.selector is not tree
    assert response.css("nav::text").get() == "Home"


def test_page_text_reaches_the_pipeline() -> None:
    """Items without a text field are compared by the main text of their page."""
    c = crawler()
    pages = build_from_crawler(PageTextMiddleware, c)
    pipe = build_from_crawler(NearDupPipeline, c)
    pipe.open_spider()
    outputs = []
    for url in ("https://a.org/story", "https://b.org/reprint"):
        response = HtmlResponse(url, body=PAGE, request=Request(url))
        link = Request(url + "/next")
        out = spider_output(response, pages, {"url": url}, link, {"url": url + "#2"})
        assert out[1] is link  # the output goes on, in its order
        outputs.append(out)
    assert asyncio.run(pipe.process_item(outputs[0][0])) is outputs[0][0]
    with pytest.raises(DropItem, match=r"near-duplicate of https://a\.org/story"):
        asyncio.run(pipe.process_item(outputs[1][0]))
    asyncio.run(pipe.process_item(outputs[0][2]))  # a second item of one page: no page text
    pipe.close_spider()
    stats = c.stats.get_stats()
    assert stats["neardup/skipped/extra_item"] == 2
    assert stats["neardup/skipped/no_text"] == 1
    assert stats["neardup/items/dropped"] == 1


def test_a_response_that_is_not_text_gives_no_page_text() -> None:
    c = crawler()
    pages = build_from_crawler(PageTextMiddleware, c)
    pipe = build_from_crawler(NearDupPipeline, c)
    pipe.open_spider()
    url = "https://a.org/file.bin"
    (item,) = spider_output(Response(url, body=PAGE, request=Request(url)), pages, {"url": url})
    assert asyncio.run(pipe.process_item(item)) is item
    pipe.close_spider()
    assert c.stats.get_value("neardup/skipped/not_text") == 1
    assert c.stats.get_value("neardup/skipped/no_text") == 1


def test_the_dupefilter_and_the_url_filter_share_the_crawlers_state() -> None:
    """A request the dupefilter let through is not checked again before its download; a
    response redirected to a URL the dupefilter recorded is dropped."""
    c = crawler()
    df = build_from_crawler(NearDupDupeFilter, c)
    df.open()
    mw = build_from_crawler(UrlFilterMiddleware, c)
    assert mw.state is df.state
    first = Request("https://a.org/article")
    assert not df.request_seen(first)
    assert mw.process_request(first) is None
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("https://a.org/article#top"))  # not through the scheduler
    moved = Request("https://a.org/old")
    assert not df.request_seen(moved)
    mw.process_request(moved)
    redirected = HtmlResponse("https://a.org/article", body=b"<html></html>", request=moved)
    with pytest.raises(IgnoreRequest, match="final URL already seen"):
        mw.process_response(moved, redirected)
    assert c.stats.get_value("neardup/urls/filtered_redirect") == 1
    df.close("finished")


def test_middlewares_off_when_their_setting_or_storage_is(tmp_path) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(FrontierMiddleware, crawler())  # no JOBDIR: no frontier
    frontier = build_from_crawler(FrontierMiddleware, crawler(JOBDIR=str(tmp_path)))
    frontier.state.open()
    assert frontier.state.frontier is not None
    frontier.state.close()
    with pytest.raises(NotConfigured):
        build_from_crawler(LinkBatchMiddleware, crawler())  # a local state: no round trips
    with pytest.raises(NotConfigured):
        build_from_crawler(PageTextMiddleware, crawler(NEARDUP_EXTRACT=False))
    with pytest.raises(NotConfigured):
        build_from_crawler(UrlFilterMiddleware, crawler(NEARDUP_URL_FILTER=False))


def test_link_batches_are_answered_only_for_our_dupefilter() -> None:
    """LinkBatchMiddleware leaves answers that only NearDupDupeFilter takes, keyed as the
    state keys requests: another DUPEFILTER_CLASS, or a subclass with its own
    request_fingerprint(), turns it off (the dupefilter then checks each request)."""
    from scrapy_neardup.middlewares.urlfilter import _takes_answers

    class OwnFingerprint(NearDupDupeFilter):
        def request_fingerprint(self, request: Request) -> str:
            return "00"

    assert _takes_answers(NearDupDupeFilter)
    assert _takes_answers("scrapy_neardup.NearDupDupeFilter")
    assert not _takes_answers("scrapy.dupefilters.RFPDupeFilter")
    assert not _takes_answers(OwnFingerprint)
