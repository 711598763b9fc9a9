"""The plugin's downloader and spider middlewares, a module for each job: the URL filter
(with the batched checks of a page's links), the page text for the pipeline, and the
recorded frontier. Each is also importable from here, as ``scrapy_neardup.middlewares.X``.
"""

from __future__ import annotations

from scrapy_neardup.middlewares.frontier import FrontierMiddleware
from scrapy_neardup.middlewares.pagetext import PageTextMiddleware
from scrapy_neardup.middlewares.urlfilter import (
    LinkBatchMiddleware,
    UrlFilterMiddleware,
    find_canonical,
)

__all__ = [
    "FrontierMiddleware",
    "LinkBatchMiddleware",
    "PageTextMiddleware",
    "UrlFilterMiddleware",
    "find_canonical",
]
