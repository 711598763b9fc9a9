"""Settings, read once into a frozen, validated config.

A wrong value stops the crawl at start with a :class:`ConfigError` that names the setting,
the value and what is allowed; the config can be built and tested without a crawl.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scrapy_neardup.algorithms import METHODS
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.urls import DEFAULT_STRIP_PARAMS

ACTIONS = ("drop", "tag")
DEFAULT_REDIS_URL = "redis://localhost:6379/0"
STORAGES = ("memory", "redis")
REDIS_ON_ERROR = ("fail-open", "fail-closed")
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def _bool(settings: Any, name: str, default: bool) -> bool:
    value = settings.get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("1", "0", "true", "false", "yes", "no"):
        return value.strip().lower() in ("1", "true", "yes")
    raise ConfigError(name, value, "a boolean (True/False)")


def _int(settings: Any, name: str, default: int, lo: int, hi: int | None = None) -> int:
    value = settings.get(name, default)
    try:
        number = int(value)
        if isinstance(value, float) and value != number:
            raise ValueError
    except (TypeError, ValueError):
        number = None
    if isinstance(value, bool) or number is None or number < lo or (hi is not None and number > hi):
        allowed = f"an integer from {lo}" + (f" to {hi}" if hi is not None else " up")
        raise ConfigError(name, value, allowed)
    return number


def _float(
    settings: Any, name: str, default: float | None, lo: float, hi: float, lo_ok: bool = False
) -> float | None:
    """A number in (lo, hi], or [lo, hi] with ``lo_ok``."""
    value = settings.get(name, default)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    above = number is not None and (lo <= number if lo_ok else lo < number)  # NaN: False
    if isinstance(value, bool) or number is None or not above or not number <= hi:
        least = f"at least {lo}" if lo_ok else f"greater than {lo}"
        raise ConfigError(name, value, f"a number {least} and at most {hi}")
    return number


def _choice(settings: Any, name: str, default: str, choices: tuple[str, ...]) -> str:
    value = settings.get(name, default)
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ConfigError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value.strip().lower()


def _field_name(settings: Any, name: str, default: str | None) -> str | None:
    value = settings.get(name, default)
    if value is None or (isinstance(value, str) and value.strip()):
        return value.strip() if isinstance(value, str) else None
    raise ConfigError(name, value, "a non-empty item field name, or None")


def _redis_url(settings: Any) -> str:
    value = settings.get("NEARDUP_REDIS_URL", DEFAULT_REDIS_URL)
    if not isinstance(value, str) or not value.strip().lower().startswith(REDIS_SCHEMES):
        raise ConfigError(
            "NEARDUP_REDIS_URL",
            value,
            "a Redis URL: " + ", ".join(s + "..." for s in REDIS_SCHEMES),
        )
    return value.strip()


def _key_prefix(settings: Any) -> str | None:
    """None means: the spider's name (decided by the state, which knows the spider)."""
    value = settings.get("NEARDUP_KEY_PREFIX")
    if value is None or (isinstance(value, str) and value.strip() == value and value):
        return value
    raise ConfigError(
        "NEARDUP_KEY_PREFIX", value, "a non-empty string without surrounding spaces, or None"
    )


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
    text_field: str | None = None
    url_field: str | None = "url"
    # near-duplicates
    backend: str = "minhash"
    threshold: float | None = None
    simhash_k: int = 3
    min_tokens: int = 50
    backend_params: dict[str, Any] = field(default_factory=dict)
    action: str = "drop"
    duplicate_of_field: str = "duplicate_of"
    similarity_field: str = "duplicate_similarity"
    # state
    storage: str = "memory"
    redis_url: str = DEFAULT_REDIS_URL
    key_prefix: str | None = None
    redis_on_error: str = "fail-open"
    redis_timeout: float = 5.0
    state_dir: Path | None = None
    flush_interval: float = 1.0
    debug: bool = False

    def method_params(self) -> dict[str, Any]:
        """Constructor arguments of the configured method."""
        params = dict(self.backend_params)
        if self.backend == "simhash":
            params.setdefault("k", self.simhash_k)
        elif self.backend in ("minhash", "spotsigs") and self.threshold is not None:
            params.setdefault("threshold", self.threshold)
        return params

    @classmethod
    def from_settings(cls, settings: Any) -> NearDupConfig:
        """Read ``NEARDUP_*`` (and ``JOBDIR``) from Scrapy settings or any mapping."""
        strip = settings.get("NEARDUP_STRIP_PARAMS", DEFAULT_STRIP_PARAMS)
        if isinstance(strip, str):
            strip = [p.strip() for p in strip.split(",") if p.strip()]
        # a bare "*" would strip every parameter: refused with the rest
        if not isinstance(strip, (list, tuple)) or not all(
            isinstance(p, str) and p.strip("*") for p in strip
        ):
            raise ConfigError(
                "NEARDUP_STRIP_PARAMS", strip, "a list of parameter names or prefixes like 'utm_*'"
            )
        backend_params = settings.get("NEARDUP_BACKEND_PARAMS") or {}
        if not isinstance(backend_params, dict):
            raise ConfigError("NEARDUP_BACKEND_PARAMS", backend_params, "a dict of method options")
        state_dir = state_dir_from(settings)
        config = cls(
            enabled=_bool(settings, "NEARDUP_ENABLED", True),
            url_filter=_bool(settings, "NEARDUP_URL_FILTER", True),
            url_confirm=_bool(settings, "NEARDUP_URL_CONFIRM", True),
            # 10**10 URLs is already 18 GB of bits: more is a typo, not a crawl
            bloom_capacity=_int(settings, "NEARDUP_BLOOM_CAPACITY", 1_000_000, 1, 10**10),
            bloom_error_rate=_float(settings, "NEARDUP_BLOOM_ERROR_RATE", 0.001, 0.0, 0.5),
            strip_params=tuple(strip),
            strip_trailing_slash=_bool(settings, "NEARDUP_STRIP_TRAILING_SLASH", True),
            check_canonical=_bool(settings, "NEARDUP_CHECK_CANONICAL", True),
            extract=_bool(settings, "NEARDUP_EXTRACT", True),
            extract_fast=_bool(settings, "NEARDUP_EXTRACT_FAST", True),
            workers=_int(settings, "NEARDUP_WORKERS", min(os.cpu_count() or 1, 8), 0, 64),
            max_body_bytes=_int(settings, "NEARDUP_MAX_BODY_BYTES", 10 * 1024 * 1024, 1024),
            max_text_chars=_int(settings, "NEARDUP_MAX_TEXT_CHARS", 500_000, 100),
            text_field=_field_name(settings, "NEARDUP_TEXT_FIELD", None),
            url_field=_field_name(settings, "NEARDUP_URL_FIELD", "url"),
            backend=_choice(settings, "NEARDUP_BACKEND", "minhash", tuple(METHODS)),
            threshold=_float(settings, "NEARDUP_THRESHOLD", None, 0.0, 1.0),
            simhash_k=_int(settings, "NEARDUP_SIMHASH_K", 3, 1, 7),
            min_tokens=_int(settings, "NEARDUP_MIN_TOKENS", 50, 0),
            backend_params=dict(backend_params),
            action=_choice(settings, "NEARDUP_ACTION", "drop", ACTIONS),
            duplicate_of_field=_field_name(settings, "NEARDUP_DUPLICATE_OF_FIELD", "duplicate_of"),
            similarity_field=_field_name(
                settings, "NEARDUP_SIMILARITY_FIELD", "duplicate_similarity"
            ),
            storage=_choice(settings, "NEARDUP_STORAGE", "memory", STORAGES),
            redis_url=_redis_url(settings),
            key_prefix=_key_prefix(settings),
            redis_on_error=_choice(settings, "NEARDUP_REDIS_ON_ERROR", "fail-open", REDIS_ON_ERROR),
            redis_timeout=_float(settings, "NEARDUP_REDIS_TIMEOUT", 5.0, 0.0, 600.0),
            state_dir=Path(state_dir) if state_dir else None,
            flush_interval=_float(settings, "NEARDUP_FLUSH_INTERVAL", 1.0, 0.0, 3600.0, True),
            debug=_bool(settings, "NEARDUP_DEBUG", False),
        )
        config.make_method()  # unknown backend options fail here, at start
        return config

    def make_method(self) -> Any:
        from scrapy_neardup.algorithms import make_method

        try:
            return make_method(self.backend, **self.method_params())
        except (TypeError, ValueError) as exc:
            raise ConfigError("NEARDUP_BACKEND_PARAMS", self.backend_params, str(exc)) from None


def state_dir_from(settings: Any) -> Path | None:
    """Where the state lives: ``NEARDUP_STATE_DIR`` or ``JOBDIR/neardup``.

    When both are set, the one set with the higher Scrapy priority wins, so ``-s JOBDIR=...``
    on the command line beats a ``NEARDUP_STATE_DIR`` in the project's settings.
    """
    state_dir = settings.get("NEARDUP_STATE_DIR")
    jobdir = settings.get("JOBDIR")
    for name, value in (("NEARDUP_STATE_DIR", state_dir), ("JOBDIR", jobdir)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ConfigError(name, value, "a directory path")
    priority = getattr(settings, "getpriority", lambda name: 0)
    if state_dir and jobdir and (priority("JOBDIR") or 0) > (priority("NEARDUP_STATE_DIR") or 0):
        state_dir = None
    if state_dir:
        return Path(state_dir)
    return Path(jobdir, "neardup") if jobdir else None
