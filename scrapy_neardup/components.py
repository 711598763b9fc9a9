"""Whether a Scrapy component is enabled in a crawler's settings.

Promises: :func:`component_enabled` answers as Scrapy builds its component lists (by class or
import path, priorities and ``None`` included). It imports none of this plugin's Scrapy
components at module level, so the state, the dupefilter and the middlewares can all import
it at top level without an import cycle. Rationale: ``docs/design.md#layers``.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object

__all__ = ["component_enabled"]


def component_enabled(settings: Any, setting: str, component: type | str) -> bool:
    """Whether the component dict ``setting`` (``"SPIDER_MIDDLEWARES"``, with its ``_BASE``)
    enables exactly ``component``: a class, or an import path of it, loaded on this call (so
    that the caller need not import it, and any path it is importable by counts)."""
    target = load_object(component) if isinstance(component, str) else component
    for entry in build_component_list(settings.getwithbase(setting)):
        try:
            if load_object(entry) is target:
                return True
        except (ImportError, NameError, ValueError, AttributeError):
            continue
    return False
