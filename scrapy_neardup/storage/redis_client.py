"""Redis storage: the client, the key layout and what every Redis module here shares.

Promises: everything of one crawl lives under ``{prefix}`` (``NEARDUP_KEY_PREFIX`` or the
spider's name, never random); each part read and written as one (the URL filter, each index)
has its own hash tag, so on Redis Cluster it is one slot; no pickle anywhere. Needs the
``redis`` extra, imported only here. The key layout, and why: ``docs/design.md#key-layout``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import islice
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scrapy_neardup.exceptions import StateError, StorageError

try:
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.cluster import RedisCluster
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise StorageError(
        "NEARDUP_STORAGE='redis' needs the redis package: pip install 'scrapy-neardup[redis]'"
    ) from exc

FORMAT = "2"  # 2: hash tags (Redis Cluster); 1: the same keys under "{prefix}:neardup:"

#: Redis cannot be reached or did not answer in time: an outage (BusyLoadingError, a Redis
#: loading its data after a restart, is a ConnectionError).
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


class CorruptRecord(StorageError):
    """A record in Redis that this release cannot read: written by another client, or
    damaged. The message names its key."""


#: Every way a Redis call fails: an outage (:data:`OUTAGE_ERRORS`) or a refusal, an error
#: reply (out of memory under ``maxmemory`` with ``noeviction``, a read-only replica after a
#: failover, a key of another type, a script error) or a record it holds that cannot be read.
#: Both are met the same way (``NEARDUP_REDIS_ON_ERROR``); :func:`failure` words them.
REDIS_ERRORS: tuple[type[BaseException], ...] = (redis.exceptions.RedisError, CorruptRecord)


def failure(exc: BaseException) -> str:
    """What a failed call says of Redis, for messages: "is unavailable (...)" for an outage,
    "answered with an error (...)" for a refusal."""
    what = "is unavailable" if isinstance(exc, OUTAGE_ERRORS) else "answered with an error"
    return f"{what} ({type(exc).__name__}: {exc})"


def connect(url: str, timeout: float = 5.0, retries: int = 2) -> Any:
    """A client for ``url`` with timeouts, whose calls redis-py tries ``retries`` times again
    after a connection or timeout error (0: a call that must not run twice, a Bloom
    test-and-set). A :class:`RedisCluster` when the URL of a node says ``?cluster=true``."""
    url, cluster = cluster_url(url)
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": min(timeout, 2.0),
        "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries),
    }
    if cluster:
        return RedisCluster.from_url(url, **options)
    options["retry_on_error"] = list(OUTAGE_ERRORS)  # redis-py 5 retries these only
    return redis.Redis.from_url(url, health_check_interval=30, **options)


def cluster_url(url: str) -> tuple[str, bool]:
    """``url`` without its ``cluster`` query parameter, and whether it asked for a cluster."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    flags = [value.lower() for name, value in query if name == "cluster"]
    if not flags:
        return url, False
    if flags[-1] not in ("true", "1", "yes", "false", "0", "no"):
        raise StateError(f"Redis URL {url!r}: cluster must be true or false, not {flags[-1]!r}")
    rest = urlencode([(name, value) for name, value in query if name != "cluster"])
    return urlunsplit(parts._replace(query=rest)), flags[-1] in ("true", "1", "yes")


def key_base(prefix: str) -> str:
    """Of the crawl's records (meta, members, counts, texts): hash tag ``{prefix}``."""
    return f"{{{prefix}}}:neardup"


def part_base(prefix: str, part: str) -> str:
    """Of a part read and written as one (``urls``, an index): its own hash tag."""
    return f"{{{prefix}:{part}}}:neardup:{part}"


def glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def scan_patterns(prefix: str) -> list[str]:
    """SCAN patterns of one crawl's keys (the prefix's glob characters escaped); a key they
    match is the crawl's when :func:`owned` says so."""
    p = glob_escape(prefix)
    return [f"{{{p}}}:neardup:*", f"{{{p}:*}}:neardup:*", f"{p}:neardup:*"]


def owned(key: str, prefix: str) -> bool:
    """Whether a key a pattern of :func:`scan_patterns` found is this crawl's, not that of a
    crawl whose prefix starts with this one and a colon."""
    if key.startswith(f"{{{prefix}}}:neardup:") or key.startswith(f"{prefix}:neardup:"):
        return True
    if not key.startswith(f"{{{prefix}:"):
        return False
    part, sep, rest = key[len(prefix) + 2 :].partition("}:neardup:")
    return bool(sep) and ":" not in part and (rest == part or rest.startswith(part + ":"))


def delete_prefix(client: Any, prefix: str) -> int:
    """Delete the keys of one crawl (format 1 ones too); returns how many."""
    return unlink(
        client,
        (
            key
            for pattern in scan_patterns(prefix)
            for key in client.scan_iter(match=pattern, count=1000)
            if owned(key.decode("utf-8", "surrogateescape"), prefix)
        ),
    )


def unlink(client: Any, keys: Iterable[bytes]) -> int:
    """UNLINK ``keys``, 500 a call (redis-py splits a call by slot on a cluster); returns how
    many existed."""
    deleted, rest = 0, iter(keys)
    while batch := list(islice(rest, 500)):
        deleted += client.unlink(*batch)
    return deleted


def find_prefixes(client: Any) -> list[str]:
    """Prefixes of every crawl in this Redis database (by their meta keys)."""
    out = set()
    for key in client.scan_iter(match="*:neardup:meta", count=1000):
        name = key.decode("utf-8", "replace")[: -len(":neardup:meta")]
        out.add(name[1:-1] if name.startswith("{") and name.endswith("}") else name)
    return sorted(out)


def check_memory(client: Any) -> str | None:
    """Whether Redis has room for the crawl and keeps what it is given: a
    :class:`StorageError` when it is at its ``maxmemory`` (it refuses writes), a message to
    warn with when an ``allkeys-*`` policy may evict the crawl's keys. Not checked where
    ``INFO`` is refused, or answered per node (a cluster)."""
    try:
        info = client.info("memory")
    except redis.exceptions.ResponseError:
        return None
    maxmemory = int(info.get("maxmemory") or 0)
    policy = str(info.get("maxmemory_policy", "?"))
    used = int(info.get("used_memory") or 0)
    if maxmemory and policy.startswith("allkeys"):
        return (
            f"Redis may evict any key when full (maxmemory-policy {policy}): the crawl's URLs "
            "and documents would be lost without an error; use noeviction"
        )
    if maxmemory and used >= maxmemory:
        raise StorageError(
            f"Redis is full: used_memory {used} bytes of maxmemory {maxmemory} "
            f"(maxmemory-policy {policy}), so it refuses writes; raise maxmemory or free memory"
        )
    return None


def meta_exists(client: Any, prefix: str) -> bool:
    """Whether the crawl's parameters are recorded (the first crawler of a prefix records
    them): gone, Redis lost the crawl's state (restarted without persistence, flushed)."""
    return bool(client.exists(f"{key_base(prefix)}:meta"))


def write_probe(client: Any, prefix: str) -> None:
    """One write that changes nothing (the format, recorded already): raises as the crawl's
    writes would while Redis refuses them (out of memory, read-only)."""
    client.hsetnx(f"{key_base(prefix)}:meta", "format", FORMAT)


def check_meta(
    client: Any, prefix: str, field: str, expected: dict[str, Any], optional: tuple[str, ...] = ()
) -> None:
    """Record the parameters of a part of the state, or check them against the recorded ones.

    Signatures or Bloom bits made with other parameters would silently never match, so a
    difference is a :class:`StateError`, as with the file state; so are keys of format 1. A
    key of ``optional`` (inside a recorded dict) that the recorded parameters lack is not a
    difference: the state predates it, and the crawl continues without it for what it recorded.
    """
    meta = f"{key_base(prefix)}:meta"
    reset = f"`scrapy neardup-stats --redis-url URL --key-prefix {prefix} --reset`"
    if client.exists(f"{prefix}:neardup:meta"):  # where format 1 kept it
        raise StateError(
            f"Redis keys {prefix}:neardup:* are in format 1 (before hash tags), this release "
            f"uses {FORMAT}: delete them with {reset}, or use another NEARDUP_KEY_PREFIX"
        )
    wanted = json.loads(json.dumps(expected, sort_keys=True))
    client.hsetnx(meta, "format", FORMAT)
    client.hsetnx(meta, field, json.dumps(wanted, sort_keys=True))
    found_format, found = client.hmget(meta, ["format", field])
    if found_format not in (None, FORMAT.encode()):
        raise StateError(
            f"Redis keys {{{prefix}}}:neardup:* have format {found_format.decode()}, "
            f"this release uses {FORMAT}"
        )
    try:
        stored = wanted if found is None else json.loads(found)
    except ValueError:
        raise StateError(f"Redis key {meta}, field {field!r}: not JSON ({found[:80]!r})") from None
    if not isinstance(stored, dict):
        raise StateError(f"Redis key {meta}, field {field!r}: not a JSON object")
    for name, value in wanted.items():
        if isinstance(value, dict) and isinstance(stored.get(name), dict):
            for key in set(optional) - set(stored[name]):
                value.pop(key, None)
    for name in sorted(set(wanted) | set(stored)):
        if stored.get(name) != wanted.get(name):
            raise StateError(
                f"Redis state under prefix {prefix!r} was written with {name}="
                f"{stored.get(name)!r}, configured {name}={wanted.get(name)!r}; use the same "
                f"settings, another NEARDUP_KEY_PREFIX, or reset it with {reset}"
            )
