"""Settings, read once into a frozen, validated :class:`NearDupConfig`.

Promises: every ``NEARDUP_*`` setting of :mod:`scrapy_neardup.settings` (the one table of
names, types, defaults and ranges) is read through Scrapy's own ``Settings`` API, so a value
from the command line means what it means to Scrapy; values Scrapy would silently bend (``2``
for a boolean, ``2.5`` for an integer, NaN) are refused with a :class:`ConfigError` naming the
setting, the value and what is allowed. It builds nothing: backends and stores are
:mod:`scrapy_neardup.factories`. Rationale: ``docs/design.md#settings``.
"""

from __future__ import annotations

import difflib
import inspect
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy.settings import BaseSettings

from scrapy_neardup.backends import BACKENDS
from scrapy_neardup.backends.containment import candidate_params
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.settings import SETTINGS, Setting, default

#: The built-in state implementations; ``NEARDUP_STORAGE`` may also name a class by its
#: dotted import path, as Scrapy's ``HTTPCACHE_STORAGE`` does.
STORAGES = ("memory", "redis")
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
    if not isinstance(settings, (Mapping, type(None))):
        raise TypeError(f"expected Scrapy settings or a mapping, not {type(settings).__name__}")
    return settings if isinstance(settings, BaseSettings) else BaseSettings(dict(settings or {}))


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
    return bool_setting(settings, "NEARDUP_ENABLED", default("NEARDUP_ENABLED"))


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
        # (default None: raw is set, so the 0.0 is never used)
        number = settings.getfloat(name, 0.0 if default is None else default)
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
        params = settings.getlist(name, list(default(name)))
        if isinstance(raw, str):  # "utm_*, ref," from the command line
            params = [p.strip() for p in params if p.strip()]
    else:  # getlist would take a dict's keys, or a set in no particular order
        raise ConfigError(name, raw, _STRIP_ALLOWED)
    # a bare "*" would strip every parameter: refused with the rest
    if not isinstance(params, list) or not all(isinstance(p, str) and p.strip("*") for p in params):
        raise ConfigError(name, raw, _STRIP_ALLOWED)
    return tuple(params)


def _choice(settings: BaseSettings, name: str, default: str, choices: tuple[str, ...]) -> str:
    value = settings.get(name, default)
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ConfigError(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value.strip().lower()


#: What a string setting of a special ``kind`` may be, as its error message says it.
_STRING_ALLOWED = {
    "field": "a non-empty item field name, or None",
    "redis_url": "a Redis URL: " + ", ".join(s + "..." for s in REDIS_SCHEMES),
    "key_prefix": "a non-empty string without surrounding spaces, or None",
    "storage": "one of "
    + ", ".join(repr(s) for s in STORAGES)
    + ", or the dotted import path of a state class, like 'myproject.state.MyState'",
}


def _string(settings: BaseSettings, spec: Setting, default: Any) -> str | None:
    """A string setting of a special ``kind``, stripped: an item field name or None, a Redis
    URL, a key prefix or None (None: the spider's name, decided by the state), or a storage
    (``"memory"``, ``"redis"`` in any case, or a dotted class path, kept as given)."""
    value = settings.get(spec.name, default)
    text = value.strip() if isinstance(value, str) else None
    if spec.kind == "field":
        ok = value is None or bool(text)
    elif spec.kind == "redis_url":
        ok = text is not None and text.lower().startswith(REDIS_SCHEMES)
    elif spec.kind == "key_prefix":
        ok = value is None or (bool(text) and text == value)
    else:
        if text is not None and text.lower() in STORAGES:
            text = text.lower()
        parts = (text or "").split(".")
        ok = text in STORAGES or (len(parts) > 1 and all(part.isidentifier() for part in parts))
    if not ok:
        raise ConfigError(spec.name, value, _STRING_ALLOWED[spec.kind])
    return text


_BACKEND_PARAMS_ALLOWED = "a dict of backend options, or a JSON object like '{\"num_perm\": 256}'"


def _read(settings: BaseSettings, spec: Setting) -> Any:
    """One setting, parsed and checked as its row of the table says."""
    name = spec.name
    # A computed default (the free cores: 0.1 s of /proc/stat) only when it is needed.
    given = spec.computed and settings.get(name) is not None
    value: Any = None if given else spec.default_value()  # None: not used, the setting is given
    if spec.kind == "strip_params":
        return _strip_params(settings)
    if spec.kind:
        return _string(settings, spec, value)
    if spec.choices:
        return _choice(settings, name, value, spec.choices)
    if spec.type is bool:
        return bool_setting(settings, name, value)
    if spec.type is int:
        high = None if spec.high is None else int(spec.high)
        return _int(settings, name, value, int(spec.low or 0), high)
    if spec.type is float:
        return _float(settings, name, value, spec.low or 0.0, spec.high or 1.0, spec.low_ok)
    if spec.type is dict:
        return _dict(settings, name, _BACKEND_PARAMS_ALLOWED)
    raise AssertionError(f"no parser for {name}")  # a row of the table without one


@dataclass(frozen=True)
class NearDupConfig:
    """Everything the components need, validated once: one field per row of
    :data:`~scrapy_neardup.settings.SETTINGS` (``NEARDUP_X`` is ``x``). Made by
    :meth:`from_settings`, which gives an unset field its row's default.

    Example:
        >>> NearDupConfig.from_settings({"NEARDUP_BACKEND": "simhash"}).backend
        'simhash'
    """

    enabled: bool
    # near-duplicates
    backend: str
    threshold: float | None
    simhash_k: int
    backend_params: dict[str, Any]
    decision: str
    contained_words: float
    contained_shingles: float
    related: float
    similarity: float | None
    similarity_shingles: int
    similarity_spots: bool
    min_tokens: int
    index: str
    lshbloom_window: int
    action: str
    duplicate_of_field: str
    similarity_field: str
    related_field: str
    near_field: str
    text_field: str | None
    url_field: str | None
    # URL filter
    url_filter: bool
    bloom_capacity: int
    bloom_error_rate: float
    url_confirm: bool
    strip_params: tuple[str, ...]
    strip_trailing_slash: bool
    check_canonical: bool
    # main content
    extract: bool
    extract_fast: bool
    workers: int
    max_body_bytes: int
    max_text_chars: int
    page_timeout: float
    page_memory: int
    # state: "memory", "redis", or the dotted import path of a state class
    storage: str
    state_dir: Path | None
    flush_interval: float
    keep_text: int
    redis_url: str
    key_prefix: str | None
    redis_on_error: str
    redis_timeout: float
    lease_timeout: float
    gc_freeze: bool
    debug: bool

    def backend_kwargs(self) -> dict[str, Any]:
        """Constructor arguments of the configured backend."""
        params = dict(self.backend_params)
        # NEARDUP_THRESHOLD goes to every backend that takes a ``threshold`` (SIMHASH_K to
        # one that takes a ``k``), so a new backend needs no line here.
        takes = inspect.signature(BACKENDS[self.backend]).parameters
        if "k" in takes:
            params.setdefault("k", self.simhash_k)
        elif self.threshold is not None and "threshold" in takes:
            params.setdefault("threshold", self.threshold)
        for name, value in candidate_params(
            self.backend, self.decision, self.similarity_shingles, self.similarity_spots
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
            "similar_spots": self.similarity_spots,
        }
        if self.similarity is not None:
            params["similarity"] = self.similarity
        return params

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> NearDupConfig:
        """Read ``NEARDUP_*`` (and ``JOBDIR``) from Scrapy settings or any mapping."""
        s = as_settings(settings)
        # NEARDUP_STATE_DIR, or JOBDIR/neardup
        values: dict[str, Any] = {"state_dir": state_dir_from(s)}
        for spec in SETTINGS.values():
            if spec.kind != "state_dir":
                values[spec.field] = _read(s, spec)
        config = cls(**values)
        backend_from_config(config)  # backend options that do not fit fail here, at start
        return config


def unknown_settings(settings: SettingsLike) -> list[tuple[str, str | None]]:
    """The ``NEARDUP_*`` settings that are not this package's, each with the closest known
    name (None when none is close): a misspelt setting is otherwise silently ignored."""
    known = {name.removeprefix("NEARDUP_"): name for name in SETTINGS}
    found = []
    for name in as_settings(settings):
        if isinstance(name, str) and name.startswith("NEARDUP_") and name not in SETTINGS:
            close = difflib.get_close_matches(name.removeprefix("NEARDUP_"), known, n=1)
            found.append((name, known[close[0]] if close else None))
    return sorted(found)


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
