"""scrapy-neardup: drop duplicate URLs and near-duplicate pages in Scrapy crawls.

Everything but the exceptions is imported on first use: the extraction workers do not pay for
Scrapy and Twisted, and Scrapy, which imports this package in every ``scrapy`` command to find
``neardup-stats``, does not pay for numpy, datasketch and scipy in crawls that
do not use the plugin.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from scrapy_neardup.exceptions import ConfigError, NearDupError, StateError, StorageError

if TYPE_CHECKING:
    from scrapy_neardup.addon import Addon
    from scrapy_neardup.deduplicator import Deduplicator, Verdict
    from scrapy_neardup.dupefilter import NearDupDupeFilter
    from scrapy_neardup.middlewares import PageTextMiddleware, UrlFilterMiddleware
    from scrapy_neardup.pipeline import NearDupPipeline

__version__ = "0.1.0"

_LAZY = {
    "Addon": "scrapy_neardup.addon",
    "Deduplicator": "scrapy_neardup.deduplicator",
    "Verdict": "scrapy_neardup.deduplicator",
    "NearDupDupeFilter": "scrapy_neardup.dupefilter",
    "NearDupPipeline": "scrapy_neardup.pipeline",
    "PageTextMiddleware": "scrapy_neardup.middlewares",
    "UrlFilterMiddleware": "scrapy_neardup.middlewares",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'scrapy_neardup' has no attribute {name!r}")


__all__ = [
    "Addon",
    "ConfigError",
    "Deduplicator",
    "NearDupDupeFilter",
    "NearDupError",
    "NearDupPipeline",
    "PageTextMiddleware",
    "StateError",
    "StorageError",
    "UrlFilterMiddleware",
    "Verdict",
    "__version__",
]
