"""``NearDupPipeline``: drops (or tags) items whose text repeats one seen before."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_neardup.engine import Signed, Verdict
from scrapy_neardup.state import NearDupState
from scrapy_neardup.twisted_futures import await_future

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FIRST_LOGGED = 5


class NearDupPipeline:
    """Compares each item's text with the kept ones; first seen wins.

    The text is the item's ``NEARDUP_TEXT_FIELD`` when set and present, else the main text of
    its page found by :class:`~scrapy_neardup.middlewares.PageTextMiddleware`. Items without
    either are kept and counted (``neardup/skipped/no_text``), never dropped.
    """

    def __init__(self, state: NearDupState) -> None:
        self.state = state
        self.config = state.config
        self.logged = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupPipeline:
        state = NearDupState.from_crawler(crawler)
        if not state.config.enabled:
            raise NotConfigured("NEARDUP_ENABLED is off")
        return cls(state)

    def open_spider(self, spider: Any = None) -> None:
        self.state.open()

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        page = self.state.take(item)
        adapter = ItemAdapter(item)
        signed = await self._signatures(adapter, page)
        if signed is None:
            return item
        key = self._key(adapter, page)
        verdict = self.state.dedup.check_signed(key, signed)
        if verdict.short and self.state.dedup.near is not None:
            self.state.inc("neardup/short")
        if not verdict.is_duplicate:
            self.state.inc("neardup/items/kept")
            return item
        self.state.inc(f"neardup/duplicates/{verdict.method}")
        self._log(verdict)
        if self.config.action == "tag":
            self._tag(adapter, verdict)
            self.state.inc("neardup/items/tagged")
            return item
        self.state.inc("neardup/items/dropped")
        raise DropItem(
            f"near-duplicate of {verdict.duplicate_of} "
            f"({verdict.method}, similarity {verdict.similarity:.3f})",
            log_level="INFO" if self.config.debug else "DEBUG",
        )

    async def _signatures(self, adapter: ItemAdapter, page: Any) -> Signed | None:
        field = self.config.text_field
        value = adapter.get(field) if field else None
        if value:
            if not isinstance(value, str):
                self.state.inc("neardup/skipped/bad_text")
                logger.warning(
                    "scrapy-neardup: item field %r is %s, not text; item kept unchecked",
                    field,
                    type(value).__name__,
                )
                return None
            try:
                return await await_future(self.state.extractor.submit_sign(value))
            except Exception as exc:
                self.state.inc("neardup/skipped/errors")
                logger.warning("scrapy-neardup: could not sign an item's text: %r", exc)
                return None
        if page is None or page.signed is None:
            self.state.inc("neardup/skipped/no_text")
            return None
        return page.signed

    def _key(self, adapter: ItemAdapter, page: Any) -> str:
        """The item's URL (or its page's); made unique when several items share one."""
        field = self.config.url_field
        value = adapter.get(field) if field else None
        key = value if isinstance(value, str) and value else (page.url if page else "item")
        dedup = self.state.dedup
        if key in dedup.exact.store or key in dedup.members:
            n = 2
            while f"{key}#{n}" in dedup.exact.store or f"{key}#{n}" in dedup.members:
                n += 1
            key = f"{key}#{n}"
        return key

    def _tag(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        try:
            adapter[self.config.duplicate_of_field] = verdict.duplicate_of
            adapter[self.config.similarity_field] = round(verdict.similarity, 4)
        except KeyError:
            self.state.inc("neardup/tag_failed")
            if self.logged <= FIRST_LOGGED:
                logger.warning(
                    "scrapy-neardup: cannot tag an item of type %s: declare fields %r and %r",
                    type(adapter.item).__name__,
                    self.config.duplicate_of_field,
                    self.config.similarity_field,
                )

    def _log(self, verdict: Verdict) -> None:
        self.logged += 1
        if self.config.debug or self.logged <= FIRST_LOGGED:
            logger.info(
                "scrapy-neardup: %s is a duplicate of %s (%s, similarity %.3f)%s",
                verdict.key,
                verdict.duplicate_of,
                verdict.method,
                verdict.similarity,
                ""
                if self.config.debug or self.logged < FIRST_LOGGED
                else " - no more duplicates will be shown (see NEARDUP_DEBUG)",
            )
