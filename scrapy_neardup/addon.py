"""The one line a user writes: ``ADDONS = {"scrapy_neardup.Addon": 500}``."""

from __future__ import annotations

from scrapy.dupefilters import RFPDupeFilter
from scrapy.settings import BaseSettings
from scrapy.utils.misc import load_object

from scrapy_neardup.config import bool_setting, enabled
from scrapy_neardup.dupefilter import NearDupDupeFilter
from scrapy_neardup.exceptions import NearDupError
from scrapy_neardup.middlewares import (
    FrontierMiddleware,
    LinkBatchMiddleware,
    PageTextMiddleware,
    UrlFilterMiddleware,
)
from scrapy_neardup.pipeline import NearDupPipeline
from scrapy_neardup.start import refuse_start
from scrapy_neardup.state import NearDupState

# The crawl's state, which every component gets from the crawler (any order: it is built
# before them all).
STATE_PRIORITY = 0
# Early in every chain: URLs are dropped before other middlewares spend time on them, and
# near-duplicates before pipelines store or download anything for them.
URL_FILTER_PRIORITY = 50
PAGE_TEXT_PRIORITY = 50
PIPELINE_PRIORITY = 50
# Next to the engine: it must see the spider's final output (see FrontierMiddleware).
FRONTIER_PRIORITY = 10
# Nearer still: what it records in Redis must be what reaches the scheduler.
LINK_BATCH_PRIORITY = 5


class Addon:
    """Wires the dupefilter, the middlewares and the pipeline into a crawler's settings,
    and their one state (:class:`~scrapy_neardup.state.NearDupState`) as an extension.

    A ``DUPEFILTER_CLASS`` the project chose (e.g. scrapy-redis's) is left alone: the
    downloader middleware then does the URL filtering on its own. With
    ``NEARDUP_ENABLED = False`` nothing is wired.

    Example:
        In a project's ``settings.py``, the one line a user writes::

            ADDONS = {"scrapy_neardup.Addon": 500}
            NEARDUP_BACKEND = "minhash"  # any other NEARDUP_* setting, as needed
    """

    def update_settings(self, settings: BaseSettings) -> None:
        try:
            self._update_settings(settings)
        except NearDupError as exc:
            refuse_start(exc)
            raise

    def _update_settings(self, settings: BaseSettings) -> None:
        if not enabled(settings):
            return
        wire = settings.set_in_component_priority_dict
        wire("EXTENSIONS", NearDupState, STATE_PRIORITY)
        if bool_setting(settings, "NEARDUP_URL_FILTER", True):
            if load_object(settings["DUPEFILTER_CLASS"]) in (RFPDupeFilter, NearDupDupeFilter):
                settings.set("DUPEFILTER_CLASS", NearDupDupeFilter, "addon")
            wire("DOWNLOADER_MIDDLEWARES", UrlFilterMiddleware, URL_FILTER_PRIORITY)
            wire("SPIDER_MIDDLEWARES", FrontierMiddleware, FRONTIER_PRIORITY)
            wire("SPIDER_MIDDLEWARES", LinkBatchMiddleware, LINK_BATCH_PRIORITY)
        wire("SPIDER_MIDDLEWARES", PageTextMiddleware, PAGE_TEXT_PRIORITY)
        wire("ITEM_PIPELINES", NearDupPipeline, PIPELINE_PRIORITY)
