"""Every ``NEARDUP_*`` setting, once: its name, type, default, range and a one-line doc.

Promises: this table is the one place every default is found (as Scrapy's
``default_settings.py`` is; the engine's and the backends' are written there, as they know
nothing of this table, and named here); :class:`~scrapy_neardup.config.NearDupConfig` reads
and checks settings by it, and ``tests/test_settings_table.py`` holds the README's
"Supported settings" to it. A default computed at start is a zero-argument callable here
(``None`` in the README). It must not read settings or import Scrapy.
Rationale: ``docs/design.md#settings``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy_neardup.backends import BACKENDS, DEFAULT_BACKEND
from scrapy_neardup.backends.containment import (
    DECISION,
    DECISIONS,
    RELATED,
    SIMILAR_SHINGLES,
    SIMILAR_SPOTS,
)
from scrapy_neardup.backends.losses import COVERAGE, SHINGLES
from scrapy_neardup.cores import default_workers
from scrapy_neardup.deduplicator import DECISION_SETTINGS, DEFAULT_MIN_TOKENS
from scrapy_neardup.urls import DEFAULT_STRIP_PARAMS

__all__ = ["DECISION_SETTINGS", "SETTINGS", "Setting", "default", "default_workers"]


def _default_strip_params() -> tuple[str, ...]:
    return DEFAULT_STRIP_PARAMS


@dataclass(frozen=True)
class Setting:
    """One setting. ``kind`` names the parser in :mod:`scrapy_neardup.config` when the
    type alone does not say it (a choice, an item field name, a path, ...)."""

    name: str
    type: type
    #: The value, or a zero-argument callable that computes it at start.
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    #: Whether ``low`` itself is allowed (for floats; integers always include it).
    low_ok: bool = False
    choices: tuple[str, ...] = ()
    kind: str = ""

    @property
    def field(self) -> str:
        """The :class:`~scrapy_neardup.config.NearDupConfig` attribute it fills."""
        return self.name.removeprefix("NEARDUP_").lower()

    @property
    def computed(self) -> bool:
        return callable(self.default)

    def default_value(self) -> Any:
        """The default, computed now where it is computed (a dict: a fresh copy)."""
        if callable(self.default):
            return self.default()
        return dict(self.default) if isinstance(self.default, dict) else self.default


#: The settings naming an item field: (name, default, what the field holds), in the table's
#: order.
_ITEM_FIELDS = (
    ("NEARDUP_DUPLICATE_OF_FIELD", "duplicate_of", "naming the original (action 'tag')"),
    ("NEARDUP_SIMILARITY_FIELD", "duplicate_similarity", "for the similarity (action 'tag')"),
    ("NEARDUP_RELATED_FIELD", "related_to", "naming the kept page a related page holds"),
    ("NEARDUP_NEAR_FIELD", "near_duplicate_of", "naming the kept page a near page is near"),
    ("NEARDUP_TEXT_FIELD", None, "holding the text to compare (None: the page's main text)"),
    ("NEARDUP_URL_FIELD", "url", "holding its page's URL"),
)

_TABLE: tuple[Setting, ...] = (
    Setting("NEARDUP_ENABLED", bool, True, "Turn every component of the plugin on or off."),
    # near-duplicates
    Setting(
        "NEARDUP_BACKEND", str, DEFAULT_BACKEND, "The near-duplicate backend.",
        choices=tuple(BACKENDS),
    ),
    Setting(
        "NEARDUP_THRESHOLD", float, None, "The backend's candidate threshold (None: its own).",
        low=0.0, high=1.0,
    ),
    Setting("NEARDUP_SIMHASH_K", int, 7, "simhash: bits two candidates may differ in.", 1, 12),
    Setting(
        "NEARDUP_BACKEND_PARAMS", dict, {}, "Constructor options of the backend (a dict or JSON)."
    ),
    Setting(
        "NEARDUP_DECISION", str, DECISION, "What drops a page: 'contained' or 'similar'.",
        choices=DECISIONS,
    ),
    Setting(
        "NEARDUP_CONTAINED_WORDS", float, COVERAGE,
        "contained: share of a page's words in 3-shingles of a kept page (a screen).", 0.0, 1.0,
    ),
    Setting(
        "NEARDUP_CONTAINED_SHINGLES", float, SHINGLES,
        "contained: share of each line's 3-shingles a kept page must hold.", 0.0, 1.0,
    ),
    Setting(
        "NEARDUP_RELATED", float, RELATED,
        "Share of a kept page's 3-shingles a later page holds to be related to it.", 0.0, 1.0,
    ),
    Setting(
        "NEARDUP_SIMILARITY", float, None,
        "similar: the verified similarity that drops (None: the backend's default).", 0.0, 1.0,
    ),
    Setting(
        "NEARDUP_SIMILARITY_SHINGLES", int, SIMILAR_SHINGLES,
        "similar: the word shingle length its similarity is measured on.", 1, 5,
    ),
    Setting(
        "NEARDUP_SIMILARITY_SPOTS", bool, SIMILAR_SPOTS,
        "similar: pages whose spot signatures match are similar too (reprints).",
    ),
    Setting(
        "NEARDUP_MIN_TOKENS", int, DEFAULT_MIN_TOKENS,
        "Pages with fewer tokens are matched exactly only.", 0,
    ),
    Setting(
        "NEARDUP_INDEX", str, "buckets", "'buckets', or 'lshbloom' (minhash, in memory).",
        choices=("buckets", "lshbloom"),
    ),
    Setting(
        "NEARDUP_LSHBLOOM_WINDOW", int, 100_000, "lshbloom: documents per Bloom filter window.", 2
    ),
    Setting(
        "NEARDUP_ACTION", str, "drop", "'drop' a duplicate item, or 'tag' it and keep it.",
        choices=("drop", "tag"),
    ),
    *(Setting(n, str, v, f"Item field {doc}.", kind="field") for n, v, doc in _ITEM_FIELDS),
    # URL filter
    Setting("NEARDUP_URL_FILTER", bool, True, "Filter requests whose canonical URL was seen."),
    Setting(
        "NEARDUP_BLOOM_CAPACITY", int, 1_000_000, "URLs the Bloom filter's first stage holds.",
        1, 10**10,
    ),
    Setting(
        "NEARDUP_BLOOM_ERROR_RATE", float, 0.001, "The Bloom filter's false-positive bound.",
        0.0, 0.5,
    ),
    Setting(
        "NEARDUP_URL_CONFIRM", bool, True, "Confirm a Bloom filter hit against stored keys."
    ),
    Setting(
        "NEARDUP_STRIP_PARAMS", list, _default_strip_params,
        "Query parameters (or 'prefix_*') that never change a page.", kind="strip_params",
    ),
    Setting(
        "NEARDUP_STRIP_TRAILING_SLASH", bool, True, "'/a/' and '/a' are one URL."
    ),
    Setting(
        "NEARDUP_CHECK_CANONICAL", bool, True,
        "Check the response URL and its canonical link as well.",
    ),
    # main content
    Setting("NEARDUP_EXTRACT", bool, True, "Extract the main text of pages with trafilatura."),
    Setting(
        "NEARDUP_EXTRACT_FAST", bool, False, "Read pages with trafilatura's fast mode only."
    ),
    Setting(
        "NEARDUP_WORKERS", int, default_workers,
        "Extraction worker processes (0: in the crawl's process).", 0, 64,
    ),
    Setting(
        "NEARDUP_MAX_BODY_BYTES", int, 10 * 1024 * 1024, "Longer bodies are not extracted.", 1024
    ),
    Setting(
        "NEARDUP_MAX_TEXT_CHARS", int, 500_000, "Characters of a text compared, at most.", 100
    ),
    Setting(
        "NEARDUP_PAGE_TIMEOUT", float, 20.0, "Seconds a page may take in a worker (0: no limit).",
        0.0, 86400.0, low_ok=True,
    ),
    Setting(
        "NEARDUP_PAGE_MEMORY", int, 1024, "MiB a worker may use on one page (0: no limit).",
        0, 1024 * 1024,
    ),
    # state
    Setting(
        "NEARDUP_STORAGE", str, "memory",
        "'memory' (in memory; journaled to files in JOBDIR/neardup when JOBDIR is set), "
        "'redis', or a state class's import path.", kind="storage",
    ),
    Setting(
        "NEARDUP_STATE_DIR", str, None, "Directory of the state files (None: JOBDIR/neardup).",
        kind="state_dir",
    ),
    Setting(
        "NEARDUP_FLUSH_INTERVAL", float, 1.0, "Seconds between syncs of the state files.",
        0.0, 3600.0, low_ok=True,
    ),
    Setting(
        "NEARDUP_KEEP_TEXT", int, 0, "Characters of each checked text kept for the audit page.",
        0, 10_000_000,
    ),
    Setting(
        "NEARDUP_REDIS_URL", str, "redis://localhost:6379/0", "The Redis server.",
        kind="redis_url",
    ),
    Setting(
        "NEARDUP_KEY_PREFIX", str, None, "Prefix of the Redis keys (None: the spider's name).",
        kind="key_prefix",
    ),
    Setting(
        "NEARDUP_REDIS_ON_ERROR", str, "fail-open", "While Redis is out of reach: let pages "
        "through ('fail-open') or stop ('fail-closed').", choices=("fail-open", "fail-closed"),
    ),
    Setting(
        "NEARDUP_REDIS_TIMEOUT", float, 5.0, "Seconds a Redis call may take.", 0.0, 600.0
    ),
    Setting(
        "NEARDUP_LEASE_TIMEOUT", float, 60.0, "Seconds after which a silent worker's requests "
        "go back to the shared queue (scrapy_neardup.leases.LeasingScheduler).", 1.0, 86400.0,
        low_ok=True,
    ),
    # the crawl's process
    Setting(
        "NEARDUP_GC_FREEZE", bool, True,
        "Exempt the objects alive at the crawl's start from Python's garbage collector.",
    ),
    Setting("NEARDUP_DEBUG", bool, False, "Log every duplicate, not only the first."),
)  # fmt: skip

#: Every setting by name, in the README's order.
SETTINGS: dict[str, Setting] = {s.name: s for s in _TABLE}


def default(name: str) -> Any:
    """The default of setting ``name``, computed now where it is computed."""
    return SETTINGS[name].default_value()
