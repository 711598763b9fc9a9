"""The spider middleware that tells the recorded frontier when a request is done."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from itemadapter import is_item
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http import Request
from scrapy.utils.httpobj import urlparse_cached

from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.meta import FRONTIER_META, PARENT_META, RECOVERED_META
from scrapy_neardup.state import NearDupState, crawl_state
from scrapy_neardup.state.redis import UncheckedItem
from scrapy_neardup.twisted_futures import call_soon

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


@dataclass
class _Output:
    """A response whose spider output is being processed: items not yet at their end."""

    response: Any
    items: int = 0
    finished: bool = False
    #: An item of it was dropped unchecked (UncheckedItem): its request is queued again.
    unchecked: bool = False


class FrontierMiddleware:
    """Tells the :class:`~scrapy_neardup.frontier.Frontier` when a request is done, and
    schedules again, at start, the requests a crashed run had queued.

    A request is done when its spider output was consumed to the end and every item in it
    was scraped, dropped or failed (one reactor turn after its signal, when the feed exports
    have written it); the frontier writes it done once the items are durable in the feed
    files. Next to the engine (order 10). Rationale: ``docs/design.md#frontier``.
    """

    def __init__(self, state: NearDupState, crawler: Crawler) -> None:
        self.state = state
        self.crawler = crawler
        self._outputs: dict[int, _Output] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierMiddleware:
        state = crawl_state(crawler)
        config = state.config
        if not (config.enabled and config.url_filter and config.state_dir):
            raise NotConfigured  # no message: Scrapy would warn on every crawl without JOBDIR
        mw = cls(state, crawler)
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(mw._item_done, signal=signal)
        return mw

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        """The requests a crashed run left pending, then the spider's start. A recorded
        request is of a scheme the crawl could have made: ``http``, ``https``, or one of the
        spider's own start requests (those of another wait for the start to end; a state
        directory is data, and a crafted ``file://`` request must not be crawled)."""
        self.state.open()
        frontier = self.state.frontier
        waiting: list[Request] = []
        if frontier is not None:
            for request in frontier.recover(self.crawler.spider):
                if urlparse_cached(request).scheme in WEB_SCHEMES:
                    yield request
                else:
                    waiting.append(request)
        schemes = set(WEB_SCHEMES)
        checking = self._shared_and_fresh()
        known = 0  # start requests found in the shared filter: all of those checked so far
        async for obj in start:
            if isinstance(obj, Request):
                schemes.add(urlparse_cached(obj).scheme)
                if checking and known < START_CHECKED:
                    answer = await self._start_known(obj)
                    checking = answer is not False
                    known += bool(answer)
                    if known == START_CHECKED:
                        self._warn_start_known()
            yield obj
        if checking and 0 < known < START_CHECKED:
            self._warn_start_known()
        for request in waiting:
            if urlparse_cached(request).scheme in schemes:
                yield request
            else:
                self.state.inc("neardup/frontier/refused")
                logger.warning(
                    "scrapy-neardup: a recorded request for %s is not crawled: no start "
                    "request of this spider is of its scheme (counted in "
                    "neardup/frontier/refused)",
                    request.url,
                )

    def _shared_and_fresh(self) -> bool:
        """A new JOBDIR on a shared URL filter (Redis)."""
        directory = self.state.directory
        return self.state.remote and directory is not None and directory.fresh

    async def _start_known(self, request: Request) -> bool | None:
        """Whether a start request is in the shared URL filter already (None: invalid URL)."""
        try:
            key = self.state.request_key(request)
        except InvalidURL:
            return None
        known = await self.state.keys_known([key])
        return bool(known and known[0])

    def _warn_start_known(self) -> None:
        """The first start requests of a new JOBDIR (:data:`START_CHECKED` at most) are all in
        the shared URL filter already: an earlier crawl with the same prefix recorded them, and
        this one would crawl little or nothing."""
        logger.warning(
            "scrapy-neardup: this JOBDIR is new, but the URL filter in Redis under prefix "
            "%r holds its start URLs already: an earlier crawl with that prefix recorded "
            "them, and the pages it reached are not crawled again. For a new crawl, set "
            "another NEARDUP_KEY_PREFIX, or delete that crawl's keys (scrapy neardup-stats "
            "--redis-url URL --key-prefix %s --reset)",
            self.state.key_prefix,
            self.state.key_prefix,
        )

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        request = response.request
        frontier = self.state.frontier
        meta = request.meta if request is not None and frontier is not None else None
        parent = meta.get(FRONTIER_META) if meta else None
        if not parent:
            # Not journaled. If the frontier kept the request that yielded it pending (it
            # could not journal this one), that request answers for what this one yields.
            anchor = meta.get(PARENT_META) if meta else None
            pinned = bool(anchor) and frontier.pinned(anchor)
            async for obj in result:
                if pinned and isinstance(obj, Request):
                    obj.meta[PARENT_META] = anchor
                yield obj
            return
        assert meta is not None and request is not None  # parent is read from request.meta
        output = self._outputs.setdefault(id(response), _Output(response))
        recovered = meta.get(RECOVERED_META) == request.url
        try:
            async for obj in result:
                if isinstance(obj, Request):
                    # The frontier keeps this request pending if it cannot journal that one.
                    child = obj.meta
                    child[PARENT_META] = parent
                    if child.get(FRONTIER_META) == parent:  # response.meta copied into it
                        del child[FRONTIER_META]  # (taken for a redirect, it would be done)
                elif is_item(obj):
                    output.items += 1
                    if recovered:
                        frontier.recovered_items[id(obj)] = obj
                yield obj
        except Exception:
            self._finish(output)  # the callback failed: Scrapy will not call it again
            raise
        self._finish(output)

    def _item_done(self, item: Any = None, response: Any = None, *args: Any, **kwargs: Any) -> None:
        if self.state.frontier is not None:
            self.state.frontier.recovered_items.pop(id(item), None)
        unchecked = isinstance(kwargs.get("exception"), UncheckedItem)
        call_soon(self._item_ended, response, unchecked)

    def _item_ended(self, response: Any, unchecked: bool = False) -> None:
        output = self._outputs.get(id(response)) if response is not None else None
        if output is not None and output.response is response:
            output.items -= 1
            output.unchecked |= unchecked
            if output.finished and output.items <= 0:
                self._done(output)

    def _finish(self, output: _Output) -> None:
        output.finished = True
        if output.items <= 0:
            self._done(output)

    def _done(self, output: _Output) -> None:
        self._outputs.pop(id(output.response), None)
        if output.unchecked:
            return  # pending: a crash re-queues it (a clean close: Scrapy's queue holds it)
        if self.state.frontier is not None and output.response.request is not None:
            self.state.frontier.done(output.response.request)


#: The schemes of a recorded request crawled again after a crash without a start request of
#: its scheme.
WEB_SCHEMES = frozenset(("http", "https"))
#: Start requests looked up in a shared URL filter at the start of a new JOBDIR.
START_CHECKED = 10
