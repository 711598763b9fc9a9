"""One crawl's state, shared by every component of one crawler (:func:`crawl_state`).

:class:`NearDupState` is the interface; ``NEARDUP_STORAGE`` chooses the implementation, as
Scrapy's ``HTTPCACHE_STORAGE`` chooses its cache storage: :class:`FileState`
(``"memory"``, the default; files in ``JOBDIR/neardup`` when there is one) or
:class:`RedisState` (``"redis"``, shared by many crawler processes; imported on use, as it
needs the redis extra).
"""

from __future__ import annotations

from scrapy_neardup.state.base import NearDupState, crawl_state, state_class
from scrapy_neardup.state.files import FileState

__all__ = ["FileState", "NearDupState", "crawl_state", "state_class"]
