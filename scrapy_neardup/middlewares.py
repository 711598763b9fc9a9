"""The URL filter as a downloader middleware, and the spider middleware that finds page text."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, TextResponse
from scrapy.utils.deprecate import method_is_overridden
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from w3lib.url import safe_url_string

from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.extraction import Extracted
from scrapy_neardup.meta import (
    ANSWERED_META,
    CHECKED_META,
    FRONTIER_META,
    PARENT_META,
    RECOVERED_META,
)
from scrapy_neardup.state import (
    NearDupState,
    PageText,
    PendingPage,
    crawl_state,
    freeze_startup_objects,
)
from scrapy_neardup.state.redis import UncheckedItem
from scrapy_neardup.twisted_futures import call_soon
from scrapy_neardup.urls import site_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_LINK_RE = re.compile(rb"<link\b[^>]*>", re.IGNORECASE)
_CANONICAL_RE = re.compile(rb"""\brel\s*=\s*["']?\s*canonical\b""", re.IGNORECASE)
_HREF_RE = re.compile(rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_HEAD_END_RE = re.compile(rb"</head>", re.IGNORECASE)
_HEAD_BYTES = 256 * 1024


def find_canonical(response: Response) -> str | None:
    """The absolute ``<link rel="canonical">`` URL of an HTML response, if any.

    A regular expression over the start of the body, not a parse: it runs for every page and
    the link sits in ``<head>``.
    """
    if not isinstance(response, TextResponse):
        return None
    # Searched in place, with an end position: a lowercased copy of the head would be most of
    # this function's time (bench/bench_crawl.py).
    body = response.body
    end = min(len(body), _HEAD_BYTES)
    head_end = _HEAD_END_RE.search(body, 0, end)
    if head_end is not None:
        end = head_end.start()
    for tag in _LINK_RE.findall(body, 0, end):
        if _CANONICAL_RE.search(tag):
            href = _HREF_RE.search(tag)
            if href:
                raw = next(g for g in href.groups() if g is not None).strip()
                if raw:
                    text = raw.decode(response.encoding or "utf-8", errors="replace")
                    try:
                        return safe_url_string(response.urljoin(text))
                    except ValueError:  # "http://[bad", a port out of range: no canonical
                        return None
    return None


class UrlFilterMiddleware:
    """Drops requests for canonical URLs already seen, and responses whose final URL (after
    redirects) or ``rel=canonical`` was already seen.

    A request the :class:`~scrapy_neardup.dupefilter.NearDupDupeFilter` already checked is
    not checked twice, unless the dupefilter let it through before Redis answered: that
    answer is awaited here, before the download. ``dont_filter`` and ``meta["neardup_skip"]``
    are respected. With a state whose checks reach a server (``state.remote``: Redis) the
    methods return a coroutine that awaits them; otherwise they check inline.
    ``check_canonical`` (``NEARDUP_CHECK_CANONICAL``): check responses too.

    Set by :class:`~scrapy_neardup.addon.Addon`; by hand:
    ``DOWNLOADER_MIDDLEWARES = {"scrapy_neardup.UrlFilterMiddleware": 50}``.
    """

    def __init__(self, state: NearDupState, check_canonical: bool = True) -> None:
        self.state = state
        self.check_canonical = check_canonical
        self.remote = state.remote
        if check_canonical:
            # The public suffix list is parsed on first use, which is slow: now, not on the
            # reactor at the first page.
            site_of("http://example.com/")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlFilterMiddleware:
        state = crawl_state(crawler)
        if not (state.config.enabled and state.config.url_filter):
            raise NotConfigured("NEARDUP_URL_FILTER is off")
        return cls(state, state.config.check_canonical)

    def _skip(self, request: Request) -> bool:
        return (
            request.dont_filter
            or bool(request.meta.get("neardup_skip"))
            or request.meta.get(RECOVERED_META) == request.url  # re-queued after a crash
        )

    def _ignore(self, request: Request, message: str) -> IgnoreRequest:
        """IgnoreRequest for a response dropped here: its request is done."""
        if self.state.frontier is not None:
            self.state.frontier.done(request)
        return IgnoreRequest(message)

    def _key(self, request: Request, url: str | None = None) -> bytes | None:
        """The request key of ``request`` (at ``url`` when given: its final or canonical
        URL); None when the URL cannot be canonicalised."""
        if url is not None and url != request.url:
            request = request.replace(url=url)
        try:
            return self.state.request_key(request)
        except InvalidURL:
            self.state.inc("neardup/urls/invalid")
            return None

    def _seen(self, request: Request, url: str | None = None) -> bool | None:
        """Test-and-set of ``request`` (at ``url`` when given); None for an invalid URL."""
        key = self._key(request, url)
        return None if key is None else self.state.key_seen(key)

    async def _seen_async(self, request: Request, url: str | None = None) -> bool | None:
        key = self._key(request, url)
        return None if key is None else await self.state.key_seen_async(key)

    def _filtered(self, request: Request) -> IgnoreRequest:
        self.state.inc("neardup/urls/filtered")
        return IgnoreRequest(f"scrapy-neardup: URL already seen: {request.url}")

    def process_request(
        self, request: Request, spider: Any = None
    ) -> Coroutine[Any, Any, None] | None:
        if self._skip(request):
            if request.meta.get(RECOVERED_META) == request.url:  # its items may be lost
                self.state.crawled_again(request.url)
            return None
        if request.meta.get(CHECKED_META) == request.url:
            if self.remote and self.state.has_late_checks:
                return self._settle_late(request)
            return None
        self.state.open()
        request.meta[CHECKED_META] = request.url
        if self.remote:
            return self._check_request(request)
        if self._seen(request):
            raise self._filtered(request)
        return None

    async def _check_request(self, request: Request) -> None:
        if await self._seen_async(request):
            raise self._filtered(request)

    async def _settle_late(self, request: Request) -> None:
        """The dupefilter let ``request`` through before Redis answered: await the answer."""
        key = self._key(request)
        late = None if key is None else self.state.late_check(key)
        if late is not None and await late:
            raise self._filtered(request)

    def process_response(
        self, request: Request, response: Response, spider: Any = None
    ) -> Response | Coroutine[Any, Any, Response]:
        if self._skip(request):
            return response
        if self.remote:
            return self._check_response(request, response)
        for url, stat, message, drops in self._response_checks(request, response):
            if self._seen(request, url) and drops:
                self.state.inc(stat)
                raise self._ignore(request, message)
        return response

    async def _check_response(self, request: Request, response: Response) -> Response:
        for url, stat, message, drops in self._response_checks(request, response):
            if await self._seen_async(request, url) and drops:
                self.state.inc(stat)
                raise self._ignore(request, message)
        return response

    def _response_checks(
        self, request: Request, response: Response
    ) -> Iterator[tuple[str, str, str, bool]]:
        """The URLs to test-and-set for a response, in turn (the next is looked for only if
        the previous did not drop it): its final URL when redirected, then its
        ``rel=canonical``; each with the stat and message of a drop, and whether being seen
        drops the response."""
        try:
            requested = self.state.canonical(request.url)
        except InvalidURL:
            return
        if response.url != request.url and self._canonical_differs(response.url, requested):
            yield (
                response.url,
                "neardup/urls/filtered_redirect",
                f"scrapy-neardup: final URL already seen: {response.url}",
                True,
            )
        if self.check_canonical and 200 <= response.status < 300:
            canonical = find_canonical(response)
            if canonical and not _same_site(canonical, response.url):
                # Another site's URL is a claim this page cannot make good on: a copied
                # template keeps its original's canonical, and trusting it would drop every
                # page built on that template, and mark the other site's page as crawled.
                # The content check still catches real reprints.
                self.state.inc("neardup/urls/canonical_other_site")
            elif canonical and self._canonical_differs(canonical, requested):
                # A canonical pointing at the site root is a common misconfiguration; trusting
                # it would drop every page of the site, so it is recorded but never drops.
                yield (
                    canonical,
                    "neardup/urls/filtered_canonical",
                    f"scrapy-neardup: rel=canonical {canonical} already seen ({response.url})",
                    not _is_root(canonical),
                )

    def _canonical_differs(self, url: str, requested: str) -> bool:
        try:
            return self.state.canonical(url) != requested
        except InvalidURL:
            return False


def _same_site(url: str, other: str) -> bool:
    """One registered domain (public suffix list), or one host where there is none (an IP
    address, ``localhost``); the port does not matter."""
    return site_of(url) == site_of(other)


def _is_root(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.path in ("", "/") and not parts.query


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
        """Nothing waits here: the extraction workers start when the first page needs them."""
        self.state.open()
        if self.config.gc_freeze:
            freeze_startup_objects()
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
        if found is not None:
            self.state.inc("neardup/extract/cache_hit")
            pending.found = found
            return pending
        running = extractor.in_flight(digest)
        if running is not None:  # a copy of a page being read now: its reading, once
            self.state.inc("neardup/extract/cache_hit")
            pending.future = running
            return pending
        try:
            pending.future = extractor.submit_extract(body, response.url, response.encoding)
        except Exception as exc:  # no worker could start, or the inline reading failed
            self.state.inc("neardup/extract/errors")
            logger.warning("scrapy-neardup: extraction failed for %s: %r", response.url, exc)
            return None
        extractor.track(digest, pending.future)
        return pending


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
    was scraped, dropped or failed; the frontier writes it done once the items are durable in
    the feed files. Next to the engine (order 10), it sees the spider's final output. An item
    ends one reactor turn after its signal, when the FeedExporter's own ``item_scraped``
    handler has written it, whatever the handlers' order.
    """

    def __init__(self, state: NearDupState, crawler: Crawler) -> None:
        self.state = state
        self.crawler = crawler
        self._outputs: dict[int, _Output] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierMiddleware:
        from scrapy import signals

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
        check = _StartCheck(self.state) if self._shared_and_fresh() else None
        async for obj in start:
            if isinstance(obj, Request):
                schemes.add(urlparse_cached(obj).scheme)
                if check is not None:
                    await check.see(obj)
            yield obj
        if check is not None:
            check.done()
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
            if anchor and frontier.pinned(anchor):
                async for obj in result:
                    if isinstance(obj, Request):
                        obj.meta[PARENT_META] = anchor
                    yield obj
                return
            async for obj in result:
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


class _StartCheck:
    """Whether the first start requests of a new JOBDIR are all in the shared URL filter
    already: an earlier crawl with the same prefix recorded them, and this one would crawl
    little or nothing. One WARNING names the prefix."""

    def __init__(self, state: NearDupState) -> None:
        self.state = state
        self.checked = 0
        self.all_known = True

    async def see(self, request: Request) -> None:
        if not self.all_known or self.checked >= START_CHECKED:
            return
        try:
            key = self.state.request_key(request)
        except InvalidURL:
            return
        known = await self.state.keys_known([key])
        self.checked += 1
        self.all_known = bool(known and known[0])
        if self.checked == START_CHECKED:
            self.done()

    def done(self) -> None:
        if self.all_known and self.checked:
            self.all_known = False  # warned once
            logger.warning(
                "scrapy-neardup: this JOBDIR is new, but the URL filter in Redis under prefix "
                "%r holds its start URLs already: an earlier crawl with that prefix recorded "
                "them, and the pages it reached are not crawled again. For a new crawl, set "
                "another NEARDUP_KEY_PREFIX, or delete that crawl's keys (scrapy neardup-stats "
                "--redis-url URL --key-prefix %s --reset)",
                self.state.key_prefix,
                self.state.key_prefix,
            )


#: Requests per round trip at most (the Redis URL filter's script takes 1,000 per call).
LINK_BATCH = 1000


class LinkBatchMiddleware:
    """With a shared state (Redis): the links of a response checked in one round trip.

    The dupefilter gets one request at a time: over Redis a round trip per link, on the
    reactor thread. Next to the engine (order 5: after every middleware that may still drop
    a request), this holds the requests of a spider output back until an item or the output's
    end (at most :data:`LINK_BATCH`, keeping its order), test-and-sets their keys in one call
    off the reactor thread, and leaves each answer in its request for the dupefilter, which
    still filters. ``dont_filter`` and ``neardup_skip`` requests are left alone; in an outage
    requests go on unanswered. Off (NotConfigured) with a local state, and unless
    :func:`_takes_answers` (another ``DUPEFILTER_CLASS``: UrlFilterMiddleware checks each
    request).
    """

    def __init__(self, state: NearDupState) -> None:
        self.state = state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkBatchMiddleware:
        state = crawl_state(crawler)
        config = state.config
        if not (config.enabled and config.url_filter and state.remote):
            raise NotConfigured  # no message: Scrapy would warn on every local crawl
        if not _takes_answers(crawler.settings["DUPEFILTER_CLASS"]):
            raise NotConfigured("DUPEFILTER_CLASS is not NearDupDupeFilter")
        return cls(state)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        held: list[Request] = []
        async for obj in result:
            if isinstance(obj, Request):
                held.append(obj)
                if len(held) < LINK_BATCH:
                    continue
            if held:
                await self._answer(held)
                for request in held:
                    yield request
                held = []
            if not isinstance(obj, Request):
                yield obj
        if held:
            await self._answer(held)
            for request in held:
                yield request

    async def _answer(self, requests: list[Request]) -> None:
        asked: list[Request] = []
        keys: list[bytes] = []
        for request in requests:
            meta = request.meta
            if request.dont_filter or meta.get("neardup_skip") or RECOVERED_META in meta:
                continue
            try:
                keys.append(self.state.request_key(request))
            except Exception:  # an invalid URL, a fingerprinter that fails on it
                continue  # left to the dupefilter, which counts or raises it as before
            asked.append(request)
        if not keys:
            return
        # Redis records the URLs as it answers: their requests are recorded first (see
        # NearDupDupeFilter._seen_remote), and let go when seen.
        frontier = self.state.frontier
        held = [False] * len(keys)
        if frontier is not None:
            held = [frontier.hold(r, k) for r, k in zip(asked, keys, strict=True)]
            if any(held):
                frontier.commit()
        try:
            answers = await self.state.keys_seen(keys)
        except Exception:  # not a Redis error (those are an outage): a bug, say so
            logger.exception("scrapy-neardup: the links of a page could not be checked at once")
            return  # the dupefilter checks each: no request is lost
        if answers is None:
            return
        for request, seen in zip(asked, answers, strict=True):
            request.meta[ANSWERED_META] = (request.url, seen)
        for key, seen, was_held in zip(keys, answers, held, strict=True):
            if seen and was_held:
                frontier.release(key)
        self.state.inc("neardup/urls/batched", len(asked))


#: The dupefilter that takes the answers LinkBatchMiddleware leaves in requests.
NEARDUP_DUPEFILTER = "scrapy_neardup.dupefilter.NearDupDupeFilter"


def _takes_answers(dupefilter: Any) -> bool:
    """Whether ``DUPEFILTER_CLASS`` is NearDupDupeFilter or a subclass that keys requests as
    the state does (it overrides no ``request_fingerprint()``)."""
    cls = load_object(dupefilter)
    ours = any(f"{c.__module__}.{c.__qualname__}" == NEARDUP_DUPEFILTER for c in cls.__mro__)
    return ours and not method_is_overridden(cls, RFPDupeFilter, "request_fingerprint")


__all__ = [
    "Extracted",
    "FrontierMiddleware",
    "LinkBatchMiddleware",
    "PageTextMiddleware",
    "UrlFilterMiddleware",
    "find_canonical",
]
