"""``DUPEFILTER_CLASS``: the scheduler drops requests whose canonical URL was seen."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.dupefilters import RFPDupeFilter
from scrapy.utils.request import referer_str

from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.frontier import RECOVERED_META
from scrapy_neardup.state import NearDupState

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

CHECKED_META = "_neardup_checked_url"


class NearDupDupeFilter(RFPDupeFilter):
    """A Bloom filter over canonical URLs in place of Scrapy's set of request fingerprints.

    A few bytes per URL instead of a hundred or more. Unlike Scrapy's fingerprints, the
    method and body are not part of the key: two POSTs to one URL count as one URL, so give
    such requests ``dont_filter=True`` or ``meta={"neardup_skip": True}``.
    """

    def __init__(self, state: NearDupState, debug: bool = False) -> None:
        super().__init__(debug=debug)
        self.state = state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupDupeFilter:
        debug = crawler.settings.getbool("DUPEFILTER_DEBUG") or crawler.settings.getbool(
            "NEARDUP_DEBUG"
        )
        return cls(NearDupState.from_crawler(crawler), debug)

    def open(self) -> None:
        self.state.open()

    def close(self, reason: str) -> None:
        pass  # the state closes itself on spider_closed, after the pipelines

    def request_seen(self, request: Request) -> bool:
        if request.meta.get("neardup_skip"):
            return False
        if request.meta.get(RECOVERED_META) == request.url:
            return False  # queued again after a crash: recorded already, crawled once more
        try:
            canonical = self.state.canonical(request.url)
        except InvalidURL:
            self.state.inc("neardup/urls/invalid")
            return False
        request.meta[CHECKED_META] = request.url
        frontier = self.state.frontier
        if frontier is None:
            return self.state.url_seen(canonical)
        return self.state.url_seen(canonical, lambda fp: frontier.schedule(request, fp))

    def log(self, request: Request, spider: Spider | Any = None) -> None:
        self.state.inc("neardup/urls/filtered")
        if self.debug:
            logger.debug(
                "Filtered duplicate URL: %(request)s (referer: %(referer)s)",
                {"request": request, "referer": referer_str(request)},
            )
        elif self.logdupes:
            logger.debug(
                "Filtered duplicate URL: %(request)s - no more duplicates will be shown "
                "(see NEARDUP_DEBUG to show all)",
                {"request": request},
            )
            self.logdupes = False
        self.state.inc("dupefilter/filtered")
