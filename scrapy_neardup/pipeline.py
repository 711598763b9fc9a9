"""``NearDupPipeline``: drops (or tags) items whose text repeats one seen before."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.exceptions import DropItem, NotConfigured

from scrapy_neardup.components import component_enabled
from scrapy_neardup.deduplicator import Signed, Verdict
from scrapy_neardup.extraction import PageLimitError
from scrapy_neardup.state import NearDupState, crawl_state
from scrapy_neardup.twisted_futures import await_future

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

FIRST_LOGGED = 5
#: Loaded by path, on use: this module does not import the middlewares.
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
        self.extractor = state.extractor
        #: Whether short texts are counted (``neardup/short``): only with a near backend.
        self.counts_short = state.dedup.near is not None
        self.logged = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupPipeline:
        state = crawl_state(crawler)
        if not state.config.enabled:
            raise NotConfigured("NEARDUP_ENABLED is off")
        config = state.config
        page_text = config.extract and component_enabled(
            crawler.settings, "SPIDER_MIDDLEWARES", PAGE_TEXT_MIDDLEWARE
        )
        if not config.text_field and not page_text:
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
        state, config = self.state, self.config
        pending = state.take(item)
        page = await pending.result() if pending is not None else None
        if not is_item(item):  # passed on untouched, as Scrapy does (for a later pipeline)
            state.inc("neardup/skipped/not_item")
            return item
        adapter = ItemAdapter(item)
        base = self._base_key(adapter, page)
        field = config.text_field
        text = as_text(adapter.get(field)) if field else None
        if field and text:
            signed = await self._sign(text, field, base)
        elif page is None or page.signed is None:
            state.inc("neardup/skipped/no_text")
            return item
        else:
            text, signed = page.extracted.text, page.signed
        if signed is None:
            return item
        verdict = await state.check_item(base, signed, text if config.keep_text else None)
        if verdict.short and self.counts_short:
            state.inc("neardup/short")
        if not verdict.is_duplicate:
            state.inc("neardup/items/kept")
            if verdict.related_to is not None or verdict.near_to is not None:
                self._kept_beside(adapter, verdict)
            return item
        if verdict.duplicate_of == base and state.redelivers(item, base):
            # Its own URL, kept before a crash: whether the item reached the feed then is
            # unknown, so it is kept again (at least once beats lost; see frontier.py).
            state.inc("neardup/items/redelivered")
            logger.info("scrapy-neardup: %s kept again after a crash (re-crawled)", base)
            return item
        state.inc(f"neardup/duplicates/{verdict.method}")
        self._log(verdict)
        if config.action == "tag":
            fields: dict[str, Any] = {config.duplicate_of_field: verdict.duplicate_of}
            fields[config.similarity_field] = round(verdict.similarity, 4)
            self._set_fields(adapter, fields)
            state.inc("neardup/items/tagged")
            return item
        state.inc("neardup/items/dropped")
        raise DropItem(
            f"near-duplicate of {verdict.duplicate_of} "
            f"({verdict.method}, similarity {verdict.similarity:.3f}, "
            f"containment {verdict.containment:.3f})",
            log_level="INFO" if config.debug else "DEBUG",
        )

    async def _sign(self, value: Any, field: str, base: str) -> Signed | None:
        """The signatures of an item's text field; None (counted) when it cannot be signed."""
        if not isinstance(value, str):
            self.state.inc("neardup/skipped/bad_text")
            logger.warning(
                "scrapy-neardup: item field %r is %s, not text; item kept unchecked",
                field,
                type(value).__name__,
            )
            return None
        try:
            return await await_future(self.extractor.submit_sign(value))
        except PageLimitError as exc:  # a text so long that signing it hit a limit
            self.state.inc(f"neardup/skipped/{exc.limit}")
            what = f"the text field of {base}"
            self.extractor.log_limit(exc, what, self.config.debug)
        except Exception as exc:
            self.state.inc("neardup/skipped/errors")
            logger.warning("scrapy-neardup: could not sign an item's text: %r", exc)
        return None

    def _base_key(self, adapter: ItemAdapter, page: Any) -> str:
        """The item's URL (or its page's)."""
        field = self.config.url_field
        value = adapter.get(field) if field else None
        return value if isinstance(value, str) and value else (page.url if page else "item")

    def _kept_beside(self, adapter: ItemAdapter, verdict: Verdict) -> None:
        """A kept item recorded beside a kept one, counted and tagged in tag mode: related
        (it holds the kept one and substantially more: never dropped for it), or near (the
        decision not configured, NEARDUP_DECISION, would have dropped it)."""
        config = self.config
        other: str | None
        if verdict.related_to is not None:
            stat, field, other = "neardup/items/related", config.related_field, verdict.related_to
            message = "kept: it holds %s (%.3f of its phrases) and more"
            args: tuple[Any, ...] = (other, verdict.containment)
        else:
            stat, field, other = "neardup/items/near", config.near_field, verdict.near_to
            message = "kept, near %s (%s %.3f, containment %.3f)"
            args = (other, verdict.method, verdict.similarity, verdict.containment)
        self.state.inc(stat)
        if config.debug:
            logger.info("scrapy-neardup: %s " + message, verdict.key, *args)
        if config.action == "tag" and field:
            self._set_fields(adapter, {field: other})

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
