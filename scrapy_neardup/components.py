"""Whether a Scrapy component is enabled in a crawler's settings.

Promises: :func:`component_enabled` answers as Scrapy builds its component lists (by class or
import path, priorities and ``None`` included). It imports none of this plugin's Scrapy
components, so the state, the dupefilter and the middlewares can all import it at top level
without an import cycle. Rationale: ``docs/design.md#layers``.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

__all__ = ["component_enabled"]


def component_enabled(settings: Any, setting: str, component: type | str) -> bool:
    """Whether the component dict ``setting`` (``"SPIDER_MIDDLEWARES"``, with its ``_BASE``)
    enables exactly ``component``: a class, or its dotted path (the caller need not import it)."""
    path = component if isinstance(component, str) else _path(component)
    for entry in build_component_list(settings.getwithbase(setting)):
        try:
            loaded = load_object(entry)
        except (ImportError, NameError, ValueError, AttributeError):
            continue
        if loaded is component or (isinstance(loaded, type) and _path(loaded) == path):
            return True
    return False


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
