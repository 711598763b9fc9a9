"""The URL filter as a downloader middleware, and the batched checks of a page's links."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Request, TextResponse
from scrapy.utils.deprecate import method_is_overridden
from scrapy.utils.misc import load_object
from w3lib.url import safe_url_string

from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.meta import ANSWERED_META, CHECKED_META, RECOVERED_META
from scrapy_neardup.state import NearDupState, crawl_state
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
    # Searched in place, with an end position: a lowercased copy would cost most of the time.
    body = response.body
    end = min(len(body), _HEAD_BYTES)
    head_end = _HEAD_END_RE.search(body, 0, end)
    if head_end is not None:
        end = head_end.start()
    for tag in _LINK_RE.findall(body, 0, end):
        href = _HREF_RE.search(tag) if _CANONICAL_RE.search(tag) else None
        raw = (href[1] or href[2] or href[3] or b"").strip() if href else b""
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

    def _ignore(self, request: Request, stat: str, message: str) -> IgnoreRequest:
        """IgnoreRequest for a response dropped here, counted in ``stat``: its request is done."""
        self.state.inc(stat)
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
        key = self._key(request)
        if key is None:
            return None
        if self.remote:
            return self._check_request(request, key)
        if self.state.key_seen(key):
            raise self._filtered(request)
        return None

    async def _check_request(self, request: Request, key: bytes) -> None:
        if await self.state.key_seen_async(key):
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
            key = self._key(request, url)
            if key is not None and self.state.key_seen(key) and drops:
                raise self._ignore(request, stat, message)
        return response

    async def _check_response(self, request: Request, response: Response) -> Response:
        for url, stat, message, drops in self._response_checks(request, response):
            key = self._key(request, url)
            if key is not None and await self.state.key_seen_async(key) and drops:
                raise self._ignore(request, stat, message)
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
            if canonical and site_of(canonical) != site_of(response.url):
                # Another site's URL is a claim this page cannot make good on: a copied
                # template keeps its original's canonical, and trusting it would drop every
                # page built on that template, and mark the other site's page as crawled.
                # The content check still catches real reprints. One site is one registered
                # domain (public suffix list), or one host where there is none.
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


def _is_root(url: str) -> bool:
    parts = urlsplit(url)
    return parts.path in ("", "/") and not parts.query


#: Requests per round trip at most (the Redis URL filter's script takes 1,000 per call).
LINK_BATCH = 1000


class LinkBatchMiddleware:
    """With a shared state (Redis): the links of a response checked in one round trip.

    Holds the requests of a spider output back until an item or the output's end (at most
    :data:`LINK_BATCH`, keeping its order), test-and-sets their keys in one call off the
    reactor thread, and leaves each answer in its request for the dupefilter, which still
    filters. ``dont_filter`` and ``neardup_skip`` requests are left alone; in an outage
    requests go on unanswered. Off (NotConfigured) with a local state, and unless
    :func:`_takes_answers`. Rationale: ``docs/design.md#url-filter-in-redis``.
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
            for request in await self._answer(held):
                yield request
            held = []
            if not isinstance(obj, Request):
                yield obj
        for request in await self._answer(held):
            yield request

    async def _answer(self, requests: list[Request]) -> list[Request]:
        """``requests``, each of those asked left with its answer."""
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
            return requests
        # Redis records the URLs as it answers: their requests are recorded first (see
        # NearDupDupeFilter._seen_remote), and let go when seen.
        frontier = self.state.frontier
        held = [False] * len(keys) if frontier is None else frontier.hold(asked, keys)
        try:
            answers = await self.state.keys_seen(keys)
        except Exception:  # not a Redis error (those are an outage): a bug, say so
            logger.exception("scrapy-neardup: the links of a page could not be checked at once")
            return requests  # the dupefilter checks each: no request is lost
        if answers is None:
            return requests
        for request, key, seen, was_held in zip(asked, keys, answers, held, strict=True):
            request.meta[ANSWERED_META] = (request.url, seen)
            if seen and was_held:
                frontier.release(key)
        self.state.inc("neardup/urls/batched", len(asked))
        return requests


#: The dupefilter that takes the answers LinkBatchMiddleware leaves in requests.
NEARDUP_DUPEFILTER = "scrapy_neardup.dupefilter.NearDupDupeFilter"


def _takes_answers(dupefilter: Any) -> bool:
    """Whether ``DUPEFILTER_CLASS`` is NearDupDupeFilter or a subclass that keys requests as
    the state does (it overrides no ``request_fingerprint()``)."""
    cls = load_object(dupefilter)
    ours = any(f"{c.__module__}.{c.__qualname__}" == NEARDUP_DUPEFILTER for c in cls.__mro__)
    return ours and not method_is_overridden(cls, RFPDupeFilter, "request_fingerprint")
