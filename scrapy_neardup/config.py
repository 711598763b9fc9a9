"""Settings, read once into a frozen, validated config.

Every value is read through Scrapy's own ``Settings`` API (``getbool``, ``getint``,
``getfloat``, ``getdict``, ``getlist``), so a value given on the command line
(``-s NEARDUP_BACKEND_PARAMS='{"num_perm": 256}'``) means what it means to Scrapy, and booleans
are parsed one way everywhere (:func:`bool_setting`, :func:`enabled`). On top of Scrapy's
parsing, values it would silently bend are refused: ``2`` or ``2.5`` for a boolean, ``2.5``
for an integer (``getint`` truncates), ``True`` for a number, NaN.

A wrong value stops the crawl at start with a :class:`ConfigError` that names the setting,
the value and what is allowed; the config can be built and tested without a crawl.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_neardup.backends import BACKENDS, DEFAULT_BACKEND
from scrapy_neardup.backends.containment import (
    BOILERPLATE_SHARE,
    COVERAGE,
    DECISIONS,
    RELATED,
    SHINGLES,
    SIMILAR_SHINGLES,
    candidate_params,
)
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.urls import DEFAULT_STRIP_PARAMS

ACTIONS = ("drop", "tag")
DEFAULT_REDIS_URL = "redis://localhost:6379/0"
#: The built-in state implementations; ``NEARDUP_STORAGE`` may also name a class by its
#: dotted import path, as Scrapy's ``HTTPCACHE_STORAGE`` does.
STORAGES = ("memory", "redis")
REDIS_ON_ERROR = ("fail-open", "fail-closed")
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

SettingsLike = BaseSettings | Mapping[str, Any]

_BOOL_ALLOWED = "a boolean: True/False, 1/0, or the strings 'True'/'False', 'true'/'false', '1'/'0'"
_BOOL_STRINGS = frozenset({"True", "true", "False", "false", "1", "0"})
_STRIP_ALLOWED = (
    "a list of parameter names or prefixes like 'utm_*' "
    "(from the command line: 'utm_*,ref' or '[\"utm_*\", \"ref\"]')"
)


def as_settings(settings: SettingsLike | None) -> BaseSettings:
    """Scrapy settings as given (their priorities kept), or a plain mapping wrapped in them."""
    if isinstance(settings, BaseSettings):
        return settings
    if settings is None:
        return BaseSettings()
    if isinstance(settings, Mapping):
        return BaseSettings(dict(settings))
    raise TypeError(f"expected Scrapy settings or a mapping, not {type(settings).__name__}")


def bool_setting(settings: SettingsLike, name: str, default: bool) -> bool:
    """A boolean setting, parsed by Scrapy's ``getbool`` and held to its documented values.

    ``getbool`` turns any number into a boolean (``2`` and ``0.5`` are true, ``[]`` fails
    with a TypeError); only ``True``/``False``, ``1``/``0`` and the strings Scrapy documents
    (``"True"``, ``"true"``, ``"1"``, ...) are accepted here. Anything else is a
    :class:`ConfigError` naming the setting.
    """
    settings = as_settings(settings)
    raw = settings.get(name)
    try:
        value = settings.getbool(name, default)
    except (TypeError, ValueError):
        raise ConfigError(name, raw, _BOOL_ALLOWED) from None
    if not (
        raw is None
        or isinstance(raw, bool)
        or (isinstance(raw, int) and raw in (0, 1))
        or (isinstance(raw, str) and raw.strip() in _BOOL_STRINGS)
    ):
        raise ConfigError(name, raw, _BOOL_ALLOWED)
    return value


def enabled(settings: SettingsLike) -> bool:
    """``NEARDUP_ENABLED``, parsed as :class:`NearDupConfig` parses it (:func:`bool_setting`)."""
    return bool_setting(settings, "NEARDUP_ENABLED", True)


def _int(settings: BaseSettings, name: str, default: int, lo: int, hi: int | None = None) -> int:
    raw = settings.get(name)
    allowed = f"an integer from {lo}" + (f" to {hi}" if hi is not None else " up")
    if isinstance(raw, bool):  # getint(True) is 1
        raise ConfigError(name, raw, allowed)
    try:
        number = settings.getint(name, default)
    except (TypeError, ValueError, OverflowError):  # "many", [], inf
        raise ConfigError(name, raw, allowed) from None
    # getint truncates 2.5 to 2; 1e6 (a float that is an integer) is fine
    if (raw is not None and not isinstance(raw, str) and number != raw) or not (
        lo <= number and (hi is None or number <= hi)
    ):
        raise ConfigError(name, raw, allowed)
    return number


def _float(
    settings: BaseSettings,
    name: str,
    default: float | None,
    lo: float,
    hi: float,
    lo_ok: bool = False,
) -> float | None:
    """A number in (lo, hi], or [lo, hi] with ``lo_ok``; None only when unset and the default."""
    raw = settings.get(name)
    if raw is None and default is None:
        return None
    least = f"at least {lo}" if lo_ok else f"greater than {lo}"
    allowed = f"a number {least} and at most {hi}"
    if isinstance(raw, bool):  # getfloat(True) is 1.0
        raise ConfigError(name, raw, allowed)
    try:
        number = settings.getfloat(name, default)
    except (TypeError, ValueError, OverflowError):  # "high", [], 10**400
        raise ConfigError(name, raw, allowed) from None
    above = lo <= number if lo_ok else lo < number  # NaN: False
    if not (above and number <= hi):
        raise ConfigError(name, raw, allowed)
    return number


def _dict(settings: BaseSettings, name: str, allowed: str) -> dict[str, Any]:
    """A dict, or a JSON object string (``getdict`` parses it); unset or ``""``: empty."""
    raw = settings.get(name)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    # getdict would also take a list of pairs, or a JSON list of pairs: not a dict to a user
    if not isinstance(raw, (Mapping, str)) or (
        isinstance(raw, str) and not raw.lstrip().startswith("{")
    ):
        raise ConfigError(name, raw, allowed)
    try:
        value = settings.getdict(name)
    except (TypeError, ValueError):  # json.JSONDecodeError is a ValueError
        raise ConfigError(name, raw, allowed) from None
    if not all(isinstance(key, str) for key in value):
        raise ConfigError(name, raw, allowed)
    return value


def _strip_params(settings: BaseSettings) -> tuple[str, ...]:
    name = "NEARDUP_STRIP_PARAMS"
    raw = settings.get(name)
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        # Scrapy's getlist splits '["utm_*", "ref"]' at the comma into '["utm_*"' and
        # ' "ref"]', and getdictorlist falls back to that split when the JSON is broken:
        # a JSON list is read as JSON, and broken JSON is an error.
        try:
            params = json.loads(raw)
        except ValueError:
            raise ConfigError(name, raw, _STRIP_ALLOWED) from None
    elif raw is None or isinstance(raw, (str, list, tuple)):
        params = settings.getlist(name, list(DEFAULT_STRIP_PARAMS))
        if isinstance(raw, str):  # "utm_*, ref," from the command line
            params = [p.strip() for p in params if p.strip()]
    else:  # getlist would take a dict's keys, or a set in no particular order
        raise ConfigError(name, raw, _STRIP_ALLOWED)
    # a bare "*" would strip every parameter: refused with the rest
    if not isinstance(params, list) or not all(isinstance(p, str) and p.strip("*") for p in params):
        raise ConfigError(name, raw, _STRIP_ALLOWED)
    return tuple(params)


INDEXES = ("buckets", "lshbloom")


def _choice(settings: BaseSettings, name: str, default: str, choices: tuple[str, ...]) -> str:
    value = settings.get(name, default)
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ConfigError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value.strip().lower()


def _storage(settings: BaseSettings) -> str:
    """``"memory"``, ``"redis"`` (any case), or a dotted class path, kept as given."""
    value = settings.get("NEARDUP_STORAGE", "memory")
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in STORAGES:
            return text.lower()
        parts = text.split(".")
        if len(parts) > 1 and all(part.isidentifier() for part in parts):
            return text
    raise ConfigError(
        "NEARDUP_STORAGE",
        value,
        "one of "
        + ", ".join(repr(s) for s in STORAGES)
        + ", or the dotted import path of a state class, like 'myproject.state.MyState'",
    )


def _field_name(settings: BaseSettings, name: str, default: str | None) -> str | None:
    value = settings.get(name, default)
    if value is None or (isinstance(value, str) and value.strip()):
        return value.strip() if isinstance(value, str) else None
    raise ConfigError(name, value, "a non-empty item field name, or None")


def _redis_url(settings: BaseSettings) -> str:
    value = settings.get("NEARDUP_REDIS_URL", DEFAULT_REDIS_URL)
    if not isinstance(value, str) or not value.strip().lower().startswith(REDIS_SCHEMES):
        raise ConfigError(
            "NEARDUP_REDIS_URL",
            value,
            "a Redis URL: " + ", ".join(s + "..." for s in REDIS_SCHEMES),
        )
    return value.strip()


def _key_prefix(settings: BaseSettings) -> str | None:
    """None means: the spider's name (decided by the state, which knows the spider)."""
    value = settings.get("NEARDUP_KEY_PREFIX")
    if value is None or (isinstance(value, str) and value.strip() == value and value):
        return value
    raise ConfigError(
        "NEARDUP_KEY_PREFIX", value, "a non-empty string without surrounding spaces, or None"
    )


def _init_params(cls: type) -> set[str]:
    """The constructor's parameter names: ``NEARDUP_THRESHOLD`` goes to every method that
    takes a ``threshold``, so a new backend needs no line here."""
    return set(inspect.signature(cls).parameters)


@dataclass(frozen=True)
class NearDupConfig:
    """Everything the components need, validated once."""

    enabled: bool = True
    # URL filter
    url_filter: bool = True
    url_confirm: bool = True
    bloom_capacity: int = 1_000_000
    bloom_error_rate: float = 0.001
    strip_params: tuple[str, ...] = DEFAULT_STRIP_PARAMS
    strip_trailing_slash: bool = True
    check_canonical: bool = True
    # main content
    extract: bool = True
    extract_fast: bool = True
    workers: int = 2
    max_body_bytes: int = 10 * 1024 * 1024
    max_text_chars: int = 500_000
    # per page, in a worker (0: no limit); see extraction.py for why these defaults
    page_timeout: float = 20.0
    page_memory: int = 1024
    text_field: str | None = None
    url_field: str | None = "url"
    # near-duplicates
    backend: str = DEFAULT_BACKEND
    threshold: float | None = None
    simhash_k: int = 7
    # what drops a page (backends/containment.py): "contained" or "similar"
    decision: str = "contained"
    contained_words: float = COVERAGE
    contained_shingles: float = SHINGLES
    related: float = RELATED
    similarity: float | None = None  # None: the backend's default (see Verified)
    similarity_shingles: int = SIMILAR_SHINGLES
    boilerplate_share: float = BOILERPLATE_SHARE
    min_tokens: int = 50
    backend_params: dict[str, Any] = field(default_factory=dict)
    # "buckets", or "lshbloom" (scrapy_neardup.storage.lshbloom: minhash, in memory)
    index: str = "buckets"
    lshbloom_window: int = 100_000
    action: str = "drop"
    duplicate_of_field: str = "duplicate_of"
    similarity_field: str = "duplicate_similarity"
    related_field: str = "related_to"
    near_field: str = "near_duplicate_of"
    # state: "memory", "redis", or the dotted import path of a state class
    storage: str = "memory"
    redis_url: str = DEFAULT_REDIS_URL
    key_prefix: str | None = None
    redis_on_error: str = "fail-open"
    redis_timeout: float = 5.0
    state_dir: Path | None = None
    flush_interval: float = 1.0
    # characters of each checked document's text kept for `neardup-stats --html` (0: none)
    keep_text: int = 0
    debug: bool = False

    def backend_kwargs(self) -> dict[str, Any]:
        """Constructor arguments of the configured method."""
        params = dict(self.backend_params)
        if self.backend == "simhash":
            params.setdefault("k", self.simhash_k)
        elif self.threshold is not None and "threshold" in _init_params(BACKENDS[self.backend]):
            params.setdefault("threshold", self.threshold)
        for name, value in candidate_params(
            self.backend, self.decision, self.similarity_shingles
        ).items():
            params.setdefault(name, value)
        return params

    def verify_params(self) -> dict[str, Any]:
        """The engine's decision arguments (``Deduplicator(decision=..., ...)``)."""
        params: dict[str, Any] = {
            "decision": self.decision,
            "contained_words": self.contained_words,
            "contained_shingles": self.contained_shingles,
            "related": self.related,
            "similar_shingles": self.similarity_shingles,
            "boilerplate_share": self.boilerplate_share,
        }
        if self.similarity is not None:
            params["similarity"] = self.similarity
        return params

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> NearDupConfig:
        """Read ``NEARDUP_*`` (and ``JOBDIR``) from Scrapy settings or any mapping."""
        s = as_settings(settings)
        state_dir = state_dir_from(s)
        config = cls(
            enabled=enabled(s),
            url_filter=bool_setting(s, "NEARDUP_URL_FILTER", True),
            url_confirm=bool_setting(s, "NEARDUP_URL_CONFIRM", True),
            # 10**10 URLs is already 18 GB of bits: more is a typo, not a crawl
            bloom_capacity=_int(s, "NEARDUP_BLOOM_CAPACITY", 1_000_000, 1, 10**10),
            bloom_error_rate=_float(s, "NEARDUP_BLOOM_ERROR_RATE", 0.001, 0.0, 0.5),
            strip_params=_strip_params(s),
            strip_trailing_slash=bool_setting(s, "NEARDUP_STRIP_TRAILING_SLASH", True),
            check_canonical=bool_setting(s, "NEARDUP_CHECK_CANONICAL", True),
            extract=bool_setting(s, "NEARDUP_EXTRACT", True),
            extract_fast=bool_setting(s, "NEARDUP_EXTRACT_FAST", True),
            workers=_int(s, "NEARDUP_WORKERS", min(os.cpu_count() or 1, 8), 0, 64),
            max_body_bytes=_int(s, "NEARDUP_MAX_BODY_BYTES", 10 * 1024 * 1024, 1024),
            max_text_chars=_int(s, "NEARDUP_MAX_TEXT_CHARS", 500_000, 100),
            page_timeout=_float(s, "NEARDUP_PAGE_TIMEOUT", 20.0, 0.0, 86400.0, True),
            page_memory=_int(s, "NEARDUP_PAGE_MEMORY", 1024, 0, 1024 * 1024),
            text_field=_field_name(s, "NEARDUP_TEXT_FIELD", None),
            url_field=_field_name(s, "NEARDUP_URL_FIELD", "url"),
            backend=_choice(s, "NEARDUP_BACKEND", DEFAULT_BACKEND, tuple(BACKENDS)),
            threshold=_float(s, "NEARDUP_THRESHOLD", None, 0.0, 1.0),
            simhash_k=_int(s, "NEARDUP_SIMHASH_K", 7, 1, 12),
            decision=_choice(s, "NEARDUP_DECISION", "contained", DECISIONS),
            contained_words=_float(s, "NEARDUP_CONTAINED_WORDS", COVERAGE, 0.0, 1.0),
            contained_shingles=_float(s, "NEARDUP_CONTAINED_SHINGLES", SHINGLES, 0.0, 1.0),
            related=_float(s, "NEARDUP_RELATED", RELATED, 0.0, 1.0),
            similarity=_float(s, "NEARDUP_SIMILARITY", None, 0.0, 1.0),
            similarity_shingles=_int(s, "NEARDUP_SIMILARITY_SHINGLES", SIMILAR_SHINGLES, 1, 5),
            boilerplate_share=_float(s, "NEARDUP_BOILERPLATE_SHARE", BOILERPLATE_SHARE, 0.0, 1.0),
            min_tokens=_int(s, "NEARDUP_MIN_TOKENS", 50, 0),
            backend_params=_dict(
                s,
                "NEARDUP_BACKEND_PARAMS",
                "a dict of method options, or a JSON object like '{\"num_perm\": 256}'",
            ),
            index=_choice(s, "NEARDUP_INDEX", "buckets", INDEXES),
            lshbloom_window=_int(s, "NEARDUP_LSHBLOOM_WINDOW", 100_000, 2),
            action=_choice(s, "NEARDUP_ACTION", "drop", ACTIONS),
            duplicate_of_field=_field_name(s, "NEARDUP_DUPLICATE_OF_FIELD", "duplicate_of"),
            similarity_field=_field_name(s, "NEARDUP_SIMILARITY_FIELD", "duplicate_similarity"),
            related_field=_field_name(s, "NEARDUP_RELATED_FIELD", "related_to"),
            near_field=_field_name(s, "NEARDUP_NEAR_FIELD", "near_duplicate_of"),
            storage=_storage(s),
            redis_url=_redis_url(s),
            key_prefix=_key_prefix(s),
            redis_on_error=_choice(s, "NEARDUP_REDIS_ON_ERROR", "fail-open", REDIS_ON_ERROR),
            redis_timeout=_float(s, "NEARDUP_REDIS_TIMEOUT", 5.0, 0.0, 600.0),
            state_dir=state_dir,
            flush_interval=_float(s, "NEARDUP_FLUSH_INTERVAL", 1.0, 0.0, 3600.0, True),
            keep_text=_int(s, "NEARDUP_KEEP_TEXT", 0, 0, 10_000_000),
            debug=bool_setting(s, "NEARDUP_DEBUG", False),
        )
        backend_from_config(config)  # unknown backend options fail here, at start
        if config.backend == "simhash" and config.similarity is not None:
            needed = round(64 * (1.0 - config.similarity) + 1e-9)
            if needed > config.simhash_k:
                raise ConfigError(
                    "NEARDUP_SIMILARITY",
                    config.similarity,
                    f"at least {1.0 - config.simhash_k / 64:.4f} with NEARDUP_SIMHASH_K="
                    f"{config.simhash_k} (simhash's similar rule is a Hamming distance within "
                    f"64 * (1 - similarity) bits; its index finds those within k)",
                )
        if config.index == "lshbloom":
            if config.backend != "minhash":
                raise ConfigError(
                    "NEARDUP_INDEX",
                    "lshbloom",
                    f"'buckets' with NEARDUP_BACKEND="
                    f"{config.backend!r} (LSHBloom keeps MinHash's bands; use 'minhash')",
                )
            if config.storage.lower() == "redis":
                raise ConfigError(
                    "NEARDUP_INDEX",
                    "lshbloom",
                    "'buckets' with NEARDUP_STORAGE='redis' (LSHBloom is a memory index)",
                )
        return config


def state_dir_from(settings: SettingsLike) -> Path | None:
    """Where the state lives: ``NEARDUP_STATE_DIR`` or ``JOBDIR/neardup``.

    When both are set, the one set with the higher Scrapy priority wins, so ``-s JOBDIR=...``
    on the command line beats a ``NEARDUP_STATE_DIR`` in the project's settings. An empty
    string is unset, as Scrapy treats an empty ``JOBDIR``.
    """
    settings = as_settings(settings)
    state_dir = settings.get("NEARDUP_STATE_DIR")
    jobdir = settings.get("JOBDIR")
    for name, value in (("NEARDUP_STATE_DIR", state_dir), ("JOBDIR", jobdir)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ConfigError(name, value, "a directory path")
    priority = settings.getpriority
    if state_dir and jobdir and (priority("JOBDIR") or 0) > (priority("NEARDUP_STATE_DIR") or 0):
        state_dir = None
    if state_dir:
        return Path(state_dir)
    return Path(jobdir, "neardup") if jobdir else None
