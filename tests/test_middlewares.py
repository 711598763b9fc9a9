"""The URL filter middleware on real Scrapy requests and responses (no network needed).

Crawl order decides which of the URL stages (request, redirect, rel=canonical) catches a
variant in a real crawl, so each stage is pinned down here, one at a time.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from scrapy_neardup.middlewares import PageTextMiddleware, UrlFilterMiddleware, find_canonical


@pytest.fixture
def mw() -> UrlFilterMiddleware:
    crawler = get_crawler(settings_dict={"NEARDUP_BLOOM_CAPACITY": 1000})
    return UrlFilterMiddleware.from_crawler(crawler)


def stat(mw: UrlFilterMiddleware, name: str) -> int:
    return mw.state.stats.get_value(f"neardup/urls/{name}", 0)


def page(url: str, canonical: str | None = None, request: Request | None = None) -> HtmlResponse:
    link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    body = f"<html><head>{link}</head><body>x</body></html>".encode()
    return HtmlResponse(url, body=body, encoding="utf-8", request=request)


def test_variants_of_a_seen_url_are_ignored(mw) -> None:
    mw.process_request(Request("https://example.com/a?x=1&y=2"))
    for variant in (
        "https://example.com/a?y=2&x=1",
        "https://example.com/a?x=1&y=2&utm_source=news#top",
        "https://EXAMPLE.com:443/a/?x=1&y=2",
    ):
        with pytest.raises(IgnoreRequest):
            mw.process_request(Request(variant))
    assert stat(mw, "filtered") == 3


def test_dont_filter_and_neardup_skip_pass(mw) -> None:
    mw.process_request(Request("https://example.com/a"))
    mw.process_request(Request("https://example.com/a", dont_filter=True))
    mw.process_request(Request("https://example.com/a", meta={"neardup_skip": True}))
    assert stat(mw, "filtered") == 0


def test_final_url_after_redirect_is_checked(mw) -> None:
    mw.process_request(Request("https://example.com/article"))
    request = Request("https://example.com/story/1")
    mw.process_request(request)
    with pytest.raises(IgnoreRequest, match="final URL already seen"):
        mw.process_response(request, page("https://example.com/article", request=request))
    assert stat(mw, "filtered_redirect") == 1


def test_rel_canonical_already_seen_is_ignored_and_recorded_otherwise(mw) -> None:
    mw.process_request(Request("https://example.com/article"))
    amp = Request("https://example.com/amp/article")
    mw.process_request(amp)
    with pytest.raises(IgnoreRequest, match="rel=canonical"):
        mw.process_response(amp, page(amp.url, "/article", amp))
    assert stat(mw, "filtered_canonical") == 1

    # An AMP page fetched before its canonical records the canonical, so the canonical
    # page itself is then filtered at the request stage.
    first = Request("https://example.com/amp/other")
    mw.process_request(first)
    assert mw.process_response(first, page(first.url, "/other", first)) is not None
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("https://example.com/other"))


def test_canonical_pointing_at_the_root_never_drops(mw) -> None:
    mw.process_request(Request("https://example.com/"))
    request = Request("https://example.com/page/2")
    mw.process_request(request)
    response = page(request.url, "https://example.com/", request)
    assert mw.process_response(request, response) is response


def test_canonical_on_another_site_neither_drops_nor_records(mw) -> None:
    """A page built on a copied template keeps the original's canonical: it says nothing about
    this page, so it drops nothing and does not mark the other site's page as crawled."""
    first = Request("http://127.0.0.1:8000/a")
    mw.process_request(first)
    assert mw.process_response(first, page(first.url, "https://news.example/story", first))
    second = Request("http://127.0.0.1:8000/b")
    mw.process_request(second)
    response = page(second.url, "https://news.example/story", second)
    assert mw.process_response(second, response) is response
    assert stat(mw, "canonical_other_site") == 2
    assert mw.process_request(Request("https://news.example/story")) is None  # not seen

    mobile = Request("https://m.example.com/story/9")  # one site: the canonical counts
    mw.process_request(mobile)
    mw.process_response(mobile, page(mobile.url, "https://www.example.com/story/9", mobile))
    with pytest.raises(IgnoreRequest):
        mw.process_request(Request("https://www.example.com/story/9"))


def test_find_canonical_forms() -> None:
    assert find_canonical(page("https://e.com/a/b", "../c")) == "https://e.com/c"
    body = b"<html><head><LINK href='/x y' REL=Canonical></head></html>"
    assert find_canonical(HtmlResponse("https://e.com/", body=body)) == "https://e.com/x%20y"
    body = b'<html><head></head><body><link rel="canonical" href="/late"></body></html>'
    assert find_canonical(HtmlResponse("https://e.com/", body=body)) is None


@pytest.mark.parametrize("freeze", [True, False])
def test_the_start_freezes_the_collector_only_when_asked(freeze: bool) -> None:
    """``NEARDUP_GC_FREEZE``: ``gc.freeze()`` once at the start, or the collector left alone."""
    crawler = get_crawler(settings_dict={"NEARDUP_WORKERS": 0, "NEARDUP_GC_FREEZE": freeze})
    mw = PageTextMiddleware.from_crawler(crawler)

    async def start() -> AsyncIterator[Request]:
        yield Request("https://example.com/")

    async def run() -> list[Request]:
        return [r async for r in mw.process_start(start())]

    gc.unfreeze()
    try:
        assert len(asyncio.run(run())) == 1
        assert (gc.get_freeze_count() > 0) is freeze
    finally:
        gc.unfreeze()
        mw.state.close()
