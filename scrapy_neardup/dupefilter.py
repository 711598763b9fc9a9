"""``DUPEFILTER_CLASS``: the scheduler drops requests whose canonical URL was seen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.deprecate import method_is_overridden

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.meta import ANSWERED_META, CHECKED_META, FRONTIER_META, RECOVERED_META
from scrapy_neardup.state import NearDupState, crawl_state, state_class

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings


class NearDupDupeFilter(RFPDupeFilter):
    """A Bloom filter of request keys in place of Scrapy's set of request fingerprints.

    A few bytes per request instead of a hundred or more. Two requests are one when the
    crawler's request fingerprinter says so once their URLs are canonicalised (tracking and
    session parameters, default ports, fragments, parameter order, a trailing slash): the
    method, the body and whatever a project's fingerprinter adds keep them apart, as in
    Scrapy. Logging and the ``dupefilter/filtered`` stat are Scrapy's own.

    Also a scrapy-redis scheduler's ``DUPEFILTER_CLASS`` (:meth:`from_spider`, :meth:`clear`),
    with ``NEARDUP_STORAGE = "redis"`` so that every process shares the filter. Set by
    :class:`~scrapy_neardup.addon.Addon`; by hand: ``DUPEFILTER_CLASS``.
    """

    def __init__(
        self, state: NearDupState, debug: bool = False, *, fingerprinter: Any = None
    ) -> None:
        super().__init__(debug=debug, fingerprinter=fingerprinter)
        self.state = state
        #: A subclass that overrides ``request_fingerprint()`` (deprecated in Scrapy, still
        #: honoured by it) decides what a request is.
        legacy = method_is_overridden(type(self), RFPDupeFilter, "request_fingerprint")
        self._legacy = _LegacyFingerprinter(self) if legacy else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupDupeFilter:
        state = crawl_state(crawler)
        debug = crawler.settings.getbool("DUPEFILTER_DEBUG") or state.config.debug
        return cls(state, debug, fingerprinter=crawler.request_fingerprinter)

    @classmethod
    def from_spider(cls, spider: Spider) -> NearDupDupeFilter:
        """How scrapy-redis's scheduler builds its dupefilter. It never calls ``open()`` or
        ``close()``, so the filter attaches here: the state then stays open through the
        scheduler's ``flush()`` (``clear()``) at close, and closes on ``spider_closed``."""
        dupefilter = cls.from_crawler(spider.crawler)
        dupefilter.open()
        return dupefilter

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, fingerprinter: Any = None
    ) -> NearDupDupeFilter:
        """A filter without a crawler (a standalone scheduler, a script): its own state,
        ``fingerprinter`` (as Scrapy 2.13's ``RFPDupeFilter.from_settings`` takes it), else
        Scrapy's default one, no stats. In a crawl, :meth:`from_crawler` shares the crawler's
        state with the other components instead."""
        config = NearDupConfig.from_settings(settings)
        debug = settings.getbool("DUPEFILTER_DEBUG") or config.debug
        return cls(state_class(config.storage)(config), debug, fingerprinter=fingerprinter)

    def open(self) -> None:
        self.state.attach(self)

    def close(self, reason: str) -> None:
        """Flushes and releases the state (the last of its users closes it), so that another
        filter, or another process, on the same JOBDIR sees every request."""
        self.state.detach(self)

    def clear(self) -> None:
        """Forget every request seen (scrapy-redis flushes its dupefilter this way)."""
        self.state.open()
        self.state.clear_urls()

    def request_seen(self, request: Request) -> bool:
        if self.state.disk_full is not None:
            # The crawl is stopping on a full disk: Scrapy's JOBDIR queue, on that disk too,
            # would fail to take the request. Its page is crawled again on resume, from the
            # request the frontier journal holds as not done.
            return True
        meta = request.meta
        if meta:  # a new request's meta is empty: nothing to look up (the hot path)
            if meta.get("neardup_skip"):
                return False
            if meta.get(RECOVERED_META) == request.url:
                return False  # queued again after a crash: recorded already, crawled once more
            answered = meta.pop(ANSWERED_META, None)
            if answered is not None and answered[0] == request.url:
                meta[CHECKED_META] = request.url
                return bool(answered[1])
        state = self.state
        state.open()  # scrapy-redis's scheduler never calls open()
        try:
            key = state.request_key(request, self._legacy)
        except InvalidURL:
            state.inc("neardup/urls/invalid")
            return False
        meta[CHECKED_META] = request.url
        frontier = state.frontier
        if frontier is None:
            return state.key_seen(key)
        if state.remote:
            if not self._seen_remote(frontier, request, key):
                return False
        elif not state.key_seen(key, lambda fp: frontier.schedule(request, fp)):
            return False
        if frontier.passes and frontier.take_pass(key):
            # The crashed run could not journal it and kept its parent pending instead: the
            # parent, crawled again, yielded it again. Through once, as a re-queued request.
            meta[RECOVERED_META] = request.url
            frontier.schedule(request, key)
            return False
        return True

    def _seen_remote(self, frontier: Any, request: Request, key: bytes) -> bool:
        """A shared filter (Redis) records the URL as it answers, so the request is recorded
        and committed first, and let go when the answer is "seen" (a kill in between costs
        one fetch again, never a request)."""
        (held,) = frontier.hold([request], [key])
        seen = self.state.key_seen(key)
        if seen and (held or request.meta.get(FRONTIER_META) == key.hex()):
            frontier.release(key)  # held by LinkBatchMiddleware, which got no answer
        return seen

    def request_key(self, request: Request) -> bytes:
        """What this filter records for ``request`` (raises InvalidURL)."""
        return self.state.request_key(request, self._legacy)

    def log(self, request: Request, spider: Spider) -> None:
        if self.state.disk_full is not None:
            self.state.inc("neardup/state/disk_full_unqueued")
            return
        self.state.inc("neardup/urls/filtered")
        super().log(request, spider)  # Scrapy's wording, logger and dupefilter/filtered


class _LegacyFingerprinter:
    def __init__(self, dupefilter: NearDupDupeFilter) -> None:
        self.dupefilter = dupefilter

    def fingerprint(self, request: Request) -> bytes:
        return bytes.fromhex(self.dupefilter.request_fingerprint(request))
