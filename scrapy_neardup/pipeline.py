"""``NearDupPipeline``: drops (or tags) items whose text repeats one seen before."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_neardup.deduplicator import Signed, Verdict
from scrapy_neardup.extraction import PageLimitError
from scrapy_neardup.state import NearDupState
from scrapy_neardup.twisted_futures import await_future

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FIRST_LOGGED = 5
#: Checked by import path, so that this module need not import the middlewares.
PAGE_TEXT_MIDDLEWARE = "scrapy_neardup.middlewares.PageTextMiddleware"


def as_text(value: Any) -> Any:
    """The text of an item's text field: a string as it is; bytes decoded as UTF-8 (bad bytes
    replaced); a list or tuple of strings (paragraphs, e.g. from ``.getall()``) joined by
    newlines. Anything else is returned as it is (and the item is kept unchecked)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return value


class NearDupPipeline:
    """Compares each item's text with the kept ones; first seen wins.

    The text is the item's ``NEARDUP_TEXT_FIELD`` when set and present, else the main text of
    its page found by :class:`~scrapy_neardup.middlewares.PageTextMiddleware`. Items without
    either are kept and counted (``neardup/skipped/no_text``), never dropped; a text field
    that is neither text nor convertible by :func:`as_text` (a number, a dict) is counted as
    ``neardup/skipped/bad_text`` and the item kept.

    Set by :class:`~scrapy_neardup.addon.Addon`; by hand:
    ``ITEM_PIPELINES = {"scrapy_neardup.NearDupPipeline": 50}``.
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
        if not state.config.text_field and not _page_text_enabled(crawler):
            logger.warning(
                "scrapy-neardup: NearDupPipeline is on but PageTextMiddleware is not, and "
                "NEARDUP_TEXT_FIELD is not set: items will have no text to compare and will "
                'all be kept. Use ADDONS = {"scrapy_neardup.Addon": 500}, or add '
                "scrapy_neardup.PageTextMiddleware to SPIDER_MIDDLEWARES."
            )
        return cls(state)

    def open_spider(self, spider: Any = None) -> None:
        self.state.attach(self)

    def close_spider(self, spider: Any = None) -> None:
        self.state.detach(self)

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        pending = self.state.take(item)
        page = await pending.result() if pending is not None else None
        if not is_item(item):  # passed on untouched, as Scrapy does (for a later pipeline)
            self.state.inc("neardup/skipped/not_item")
            return item
        adapter = ItemAdapter(item)
        signed = await self._signatures(adapter, page)
        if signed is None:
            return item
        base = self._base_key(adapter, page)
        text = self._compared_text(adapter, page) if self.config.keep_text else None
        verdict = await self.state.check_item(base, signed, text)
        if verdict.short and self.state.dedup.near is not None:
            self.state.inc("neardup/short")
        if not verdict.is_duplicate:
            self.state.inc("neardup/items/kept")
            if verdict.related_to is not None:
                self._related(adapter, verdict)
            elif verdict.near_to is not None:
                self._near(adapter, verdict)
            return item
        if verdict.duplicate_of == base and self.state.redelivers(item, base):
            # Its own URL, kept before a crash: whether the item reached the feed then is
            # unknown, so it is kept again (at least once beats lost; see frontier.py).
            self.state.inc("neardup/items/redelivered")
            logger.info("scrapy-neardup: %s kept again after a crash (re-crawled)", base)
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
            f"({verdict.method}, similarity {verdict.similarity:.3f}, "
            f"containment {verdict.containment:.3f})",
            log_level="INFO" if self.config.debug else "DEBUG",
        )

    async def _signatures(self, adapter: ItemAdapter, page: Any) -> Signed | None:
        field = self.config.text_field
        value = as_text(adapter.get(field)) if field else None
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
            except PageLimitError as exc:  # a text so long that signing it hit a limit
                self.state.inc(f"neardup/skipped/{exc.limit}")
                what = f"the text field of {self._base_key(adapter, page)}"
                self.state.extractor.log_limit(exc, what, self.config.debug)
                return None
            except Exception as exc:
                self.state.inc("neardup/skipped/errors")
                logger.warning("scrapy-neardup: could not sign an item's text: %r", exc)
                return None
        if page is None or page.signed is None:
            self.state.inc("neardup/skipped/no_text")
            return None
        return page.signed

    def _compared_text(self, adapter: ItemAdapter, page: Any) -> str | None:
        """The text :meth:`_signatures` signed: the text field, else the page's main text
        (already in this process, where the middleware put it), for NEARDUP_KEEP_TEXT."""
        field = self.config.text_field
        value = as_text(adapter.get(field)) if field else None
        if isinstance(value, str) and value:
            return value
        return page.extracted.text if page is not None else None

    def _base_key(self, adapter: ItemAdapter, page: Any) -> str:
        """The item's URL (or its page's)."""
        field = self.config.url_field
        value = adapter.get(field) if field else None
        return value if isinstance(value, str) and value else (page.url if page else "item")

    def _related(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        """A kept item that holds a kept one and substantially more: never dropped for it."""
        self.state.inc("neardup/items/related")
        if self.config.debug:
            logger.info(
                "scrapy-neardup: %s kept: it holds %s (%.3f of its phrases) and more",
                verdict.key,
                verdict.related_to,
                verdict.containment,
            )
        if self.config.action == "tag":
            self._set_fields(adapter, {self.config.related_field: verdict.related_to})

    def _near(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        """A kept item that the decision not configured would have dropped (NEARDUP_DECISION):
        near a kept one, counted, and tagged in tag mode."""
        self.state.inc("neardup/items/near")
        if self.config.debug:
            logger.info(
                "scrapy-neardup: %s kept, near %s (%s %.3f, containment %.3f)",
                verdict.key,
                verdict.near_to,
                verdict.method,
                verdict.similarity,
                verdict.containment,
            )
        if self.config.action == "tag" and self.config.near_field:
            self._set_fields(adapter, {self.config.near_field: verdict.near_to})

    def _tag(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        self._set_fields(
            adapter,
            {
                self.config.duplicate_of_field: verdict.duplicate_of,
                self.config.similarity_field: round(verdict.similarity, 4),
            },
        )

    def _set_fields(self, adapter: ItemAdapter, values: dict[str, Any]) -> None:
        try:
            for name, value in values.items():
                adapter[name] = value
        except KeyError:
            self.state.inc("neardup/tag_failed")
            if self.logged <= FIRST_LOGGED:
                logger.warning(
                    "scrapy-neardup: cannot tag an item of type %s: declare fields %s",
                    type(adapter.item).__name__,
                    " and ".join(map(repr, values)),
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


def _page_text_enabled(crawler: Crawler) -> bool:
    from scrapy_neardup.components import component_enabled
    from scrapy_neardup.config import bool_setting

    settings = crawler.settings
    return bool_setting(settings, "NEARDUP_EXTRACT", True) and component_enabled(
        settings, "SPIDER_MIDDLEWARES", PAGE_TEXT_MIDDLEWARE
    )
