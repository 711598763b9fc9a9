"""The spider middleware that starts reading the main text of the pages items come from."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, TextResponse

from scrapy_neardup.deduplicator import Signed
from scrapy_neardup.extraction import Extracted, PageLimitError
from scrapy_neardup.state import NearDupState, crawl_state
from scrapy_neardup.twisted_futures import await_future

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


@dataclass
class PageText:
    """What the spider middleware found for an item: its page's URL, text and signatures."""

    url: str
    extracted: Extracted
    signed: Signed | None


class PendingPage:
    """A page whose extraction :class:`PageTextMiddleware` started: the pipeline awaits
    :meth:`result`, so that the spider's other output (the page's links) goes on meanwhile."""

    def __init__(self, state: NearDupState, url: str, digest: bytes) -> None:
        self.state, self.url, self.digest = state, url, digest
        self.found: Any = None  # the cached result, or a PageLimitError
        self.future: Any = None
        self.began = time.perf_counter()

    async def result(self) -> PageText | None:
        """The page's text and signatures; None when it has none, or hit a page limit."""
        state, extractor = self.state, self.state.extractor
        found = self.found
        if found is None:
            try:
                found = await await_future(self.future)
            except PageLimitError as exc:
                found = exc  # remembered: the same bytes again would hit it again
            except Exception as exc:  # a crashed worker must not kill the crawl
                state.inc("neardup/extract/errors")
                logger.warning("scrapy-neardup: extraction failed for %s: %r", self.url, exc)
                return None
            finally:
                extractor.waited_s += time.perf_counter() - self.began
            extractor.remember(self.digest, found)
        if isinstance(found, PageLimitError):
            state.inc(f"neardup/skipped/{found.limit}")
            extractor.log_limit(found, self.url, state.config.debug)
            return None
        extracted, signed = found
        state.inc(f"neardup/extract/{extracted.how}")
        if not extracted.text:
            return None
        return PageText(self.url, extracted, signed)


class PageTextMiddleware:
    """Finds the main text of the page each item came from, so the pipeline can compare it.

    Extraction (and signing) runs in worker processes and only for responses that yield an
    item without ``NEARDUP_TEXT_FIELD``. When one response yields several items, only the
    first is given the page's text: the others are different records of one page, which
    page text cannot tell apart (give them a text field instead).

    Set by :class:`~scrapy_neardup.addon.Addon`; by hand:
    ``SPIDER_MIDDLEWARES = {"scrapy_neardup.PageTextMiddleware": 50}``.
    """

    def __init__(self, state: NearDupState) -> None:
        self.state = state
        self.config = state.config

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageTextMiddleware:
        state = crawl_state(crawler)
        if not (state.config.enabled and state.config.extract):
            raise NotConfigured("NEARDUP_EXTRACT is off")
        return cls(state)

    def _has_text_field(self, item: Any) -> bool:
        field = self.config.text_field
        return bool(field) and bool(ItemAdapter(item).get(field))

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """Nothing waits here: the extraction workers start when the first page needs them.
        With ``NEARDUP_GC_FREEZE``, the objects that exist now are exempted from the garbage
        collector (``gc.freeze()``: ``docs/design.md#extraction``)."""
        self.state.open()
        if self.config.gc_freeze:
            gc.collect()
            gc.freeze()
        async for obj in start:
            yield obj

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        given = False
        async for obj in result:
            if (
                not isinstance(obj, Request)  # most of a CrawlSpider's output: no is_item()
                and is_item(obj)
                and not self._has_text_field(obj)
                and not response.meta.get("neardup_skip")
            ):
                if not given:
                    given = True
                    # Not awaited here: the pipeline waits for the text, and the rest of
                    # this output (a CrawlSpider yields the page's links after its item)
                    # reaches the scheduler meanwhile.
                    pending = self.start_page_text(response)
                    if pending is not None:
                        self.state.register(obj, pending)
                else:
                    self.state.inc("neardup/skipped/extra_item")
            yield obj
        if given and isinstance(response, TextResponse):
            # Scrapy holds the response until its item leaves the pipeline, which waits for
            # the text a second or more: its parsed tree (about 10 times the body, which is
            # all SCRAPER_SLOT_MAX_ACTIVE_SIZE counts) goes now, and is parsed again if asked
            # for (TextResponse.selector). Scrapy has no public call for it.
            response._cached_selector = None

    async def page_text(self, response: Response) -> PageText | None:
        """Text and signatures of a response, from the cache or a worker; None for no text."""
        pending = self.start_page_text(response)
        return await pending.result() if pending is not None else None

    def start_page_text(self, response: Response) -> PendingPage | None:
        """The extraction of ``response``, started (inline with ``NEARDUP_WORKERS = 0``); None
        when it has no text to read (not text, over ``NEARDUP_MAX_BODY_BYTES``)."""
        body = response.body
        if not isinstance(response, TextResponse):
            self.state.inc("neardup/skipped/not_text")
            return None
        if len(body) > self.config.max_body_bytes:
            self.state.inc("neardup/skipped/too_large")
            logger.info(
                "scrapy-neardup: %s is %d bytes, over NEARDUP_MAX_BODY_BYTES; not checked",
                response.url,
                len(body),
            )
            return None
        extractor = self.state.extractor
        digest, found = extractor.cached(body)
        pending = PendingPage(self.state, response.url, digest)
        pending.found = found
        if found is None:  # a copy of a page being read now: its reading, once
            pending.future = extractor.in_flight(digest)
        if found is not None or pending.future is not None:
            self.state.inc("neardup/extract/cache_hit")
            return pending
        try:
            pending.future = extractor.submit_extract(body, response.url, response.encoding)
        except Exception as exc:  # no worker could start, or the inline reading failed
            self.state.inc("neardup/extract/errors")
            logger.warning("scrapy-neardup: extraction failed for %s: %r", response.url, exc)
            return None
        extractor.track(digest, pending.future)
        return pending
