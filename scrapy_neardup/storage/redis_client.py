"""Redis storage: the client, the key layout and what every Redis module here shares.

Needs ``pip install scrapy-neardup[redis]``; :mod:`redis` is imported only when this module is.
Everything of one crawl lives under ``{prefix}:neardup:`` (the prefix is ``NEARDUP_KEY_PREFIX``
or the spider's name, never random, so a crawl's keys are never orphaned)::

    {p}:neardup:meta                 HASH  format, "content" and "urls": JSON of the parameters
    {p}:neardup:urls                 HASH  Bloom filter: stages, count, count:<stage>
    {p}:neardup:urls:<stage>:<n>     STRING bitmap n of a stage (at most CHUNK_BITS bits each)
    {p}:neardup:urls:bf              RedisBloom filter (used instead when the module is loaded)
    {p}:neardup:<index>:seq          STRING last document id given out (INCR)
    {p}:neardup:<index>:ids          HASH  document key -> id
    {p}:neardup:<index>:docs         HASH  id -> u32 len | key UTF-8 | signature (method.encode)
    {p}:neardup:<index>:b:<bucket>   STRING the ids in a bucket, u32 little-endian each, appended
    {p}:neardup:members              HASH  duplicate key -> u32 len | head | u32 len | method | f64
    {p}:neardup:late                 HASH  the same, for duplicates found only once Redis was
                                           back from an outage (both copies were delivered)
    {p}:neardup:counts               HASH  counters (duplicates/<method>, late_duplicates)
    {p}:neardup:texts                HASH  document key -> kept text (NEARDUP_KEEP_TEXT)

``<index>`` is ``exact`` or the method's name. Signatures are the methods' own little-endian
``encode`` output: no pickle anywhere.

The content indexes are in :mod:`scrapy_neardup.storage.redis_index`, the URL filters in
:mod:`scrapy_neardup.storage.redis_urls`.
"""

from __future__ import annotations

import json
from typing import Any

from scrapy_neardup.exceptions import StateError, StorageError

try:
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise StorageError(
        "NEARDUP_STORAGE='redis' needs the redis package: pip install 'scrapy-neardup[redis]'"
    ) from exc

FORMAT = "1"

#: What "Redis is unavailable" looks like (a bug in a script is a ResponseError, not this).
REDIS_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError (restarting, loading data)
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,  # a failover left us talking to a replica
)


def connect(url: str, timeout: float = 5.0, retries: int = 2) -> redis.Redis:
    """A client for ``url`` with timeouts and redis-py's retry with jittered backoff.

    ``retries=0`` for calls that must not run twice (see :class:`RedisBloomFilter`), and
    where a failed call is better reported at once: the crawl state's clients have none.
    """
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=min(timeout, 2.0),
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries),
        retry_on_error=[redis.exceptions.ConnectionError, redis.exceptions.TimeoutError],
        health_check_interval=30,
    )


def key_base(prefix: str) -> str:
    return f"{prefix}:neardup"


def scan_pattern(prefix: str) -> str:
    """SCAN pattern of one crawl's keys, with glob characters of the prefix escaped."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in prefix)
    return f"{escaped}:neardup:*"


def delete_prefix(client: redis.Redis, prefix: str) -> int:
    """Delete the keys of one crawl (SCAN on its pattern, UNLINK in batches); returns how many."""
    deleted = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=scan_pattern(prefix), count=1000):
        batch.append(key)
        if len(batch) >= 500:
            deleted += client.unlink(*batch)
            batch.clear()
    if batch:
        deleted += client.unlink(*batch)
    return deleted


def find_prefixes(client: redis.Redis) -> list[str]:
    """Prefixes of every crawl in this Redis database (by their meta keys)."""
    out = {
        key.decode("utf-8", "replace").rsplit(":neardup:meta", 1)[0]
        for key in client.scan_iter(match="*:neardup:meta", count=1000)
    }
    return sorted(out)


def check_meta(client: redis.Redis, prefix: str, field: str, expected: dict[str, Any]) -> None:
    """Record the parameters of a part of the state, or check them against the recorded ones.

    Signatures or Bloom bits made with other parameters would silently never match, so a
    difference is a :class:`StateError`, as with the file state.
    """
    meta = f"{key_base(prefix)}:meta"
    wanted = json.loads(json.dumps(expected, sort_keys=True))
    client.hsetnx(meta, "format", FORMAT)
    client.hsetnx(meta, field, json.dumps(wanted, sort_keys=True))
    found_format, found = client.hmget(meta, ["format", field])
    if found_format is not None and found_format.decode() != FORMAT:
        raise StateError(
            f"Redis keys {prefix}:neardup:* have format {found_format.decode()}, "
            f"this release uses {FORMAT}"
        )
    stored = json.loads(found) if found is not None else wanted
    for name in sorted(set(wanted) | set(stored)):
        if stored.get(name) != wanted.get(name):
            raise StateError(
                f"Redis state under prefix {prefix!r} was written with {name}="
                f"{stored.get(name)!r}, configured {name}={wanted.get(name)!r}; use the same "
                f"settings, another NEARDUP_KEY_PREFIX, or reset it with "
                f"`scrapy neardup-stats --redis-url URL --key-prefix {prefix} --reset`"
            )
