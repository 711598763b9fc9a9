"""The shared state: everything in Redis, for many crawler processes (``NEARDUP_STORAGE="redis"``).

Nothing is written to the state directory: the URL filter
(:mod:`scrapy_neardup.storage.redis_urls`), the indexes and the clusters
(:mod:`scrapy_neardup.storage.redis_index`) live in Redis, shared by every crawler process
that uses the same ``NEARDUP_KEY_PREFIX``. When Redis is slow or gone,
:meth:`RedisState._redis_call` decides, per ``NEARDUP_REDIS_ON_ERROR``:

- ``fail-open`` (default): nothing is lost. URLs and items are checked against what this
  process knows: every URL it recorded or was told of (a local Bloom filter mirrors them) and
  the items it kept during the outage. What is new to it is crawled or kept "unchecked"
  (counted in ``neardup/urls/unchecked`` and ``neardup/items/unchecked``): another crawler
  may have it. Unchecked URLs and items are remembered (up to ``BACKLOG_MAX``) and written to
  Redis when it is back, so the other crawlers learn of them.
- ``fail-closed``: the crawl is stopped (``close_spider`` with reason
  ``neardup_redis_unavailable``); URLs and items met until it stops are dropped, never let
  through unchecked.

One WARNING per outage, not per item; Redis is asked again at most every
``RETRY_INTERVAL`` seconds (so an outage does not block the reactor on every request) and
the client reconnects by itself when it is back.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from scrapy_neardup.algorithms.exact import ExactMethod
from scrapy_neardup.engine import Deduplicator, Signed, Verdict
from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.state.base import NearDupState
from scrapy_neardup.urls import ScalableBloomFilter

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between two attempts to reach a Redis that went away.
RETRY_INTERVAL = 1.0
#: URLs and kept documents remembered during an outage, written to Redis when it is back.
BACKLOG_MAX = 100_000


class GuardedDeduplicator(Deduplicator):
    """A :class:`Deduplicator` on Redis stores whose checks go through the state's outage
    handling (``guard(key, signed, check)``)."""

    def __init__(self, *args: Any, guard: Callable[..., Verdict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard

    def check_signed(self, key: str, signed: Signed) -> Verdict:
        return self._guard(key, signed, super().check_signed)


class RedisState(NearDupState):
    """URL filter, indexes and clusters in Redis under ``{prefix}:neardup:``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Imported here: they need the redis extra, and say so when it is missing.
        from scrapy_neardup.storage import redis_client, redis_index, redis_urls

        config, prefix = self.config, self.key_prefix
        if not prefix:
            raise ConfigError(
                "NEARDUP_KEY_PREFIX", prefix, "a key prefix (there is no spider name to use)"
            )
        self._client_mod, self._urls_mod = redis_client, redis_urls
        self.errors = redis_client.REDIS_ERRORS
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        self.redis_client = redis_client.connect(config.redis_url, config.redis_timeout)
        # Bloom test-and-set must not be retried blindly (see RedisBloomFilter).
        self.redis_url_client = redis_client.connect(
            config.redis_url, config.redis_timeout, retries=0
        )
        method, exact = config.make_method(), ExactMethod()

        def stores(name: str) -> Any:
            codec = exact if name == "exact" else method
            return redis_index.RedisBucketStore(self.redis_client, prefix, name, codec)

        self.dedup = GuardedDeduplicator(
            method, min_tokens=config.min_tokens, stores=stores, guard=self._redis_check
        )
        self.dedup.recorder = redis_index.RedisRecorder(self.redis_client, prefix)
        self._redis_ready = False
        self._outage: float | None = None
        self._retry_at = 0.0
        self._stopping = False
        self._url_backlog: deque[bytes] = deque(maxlen=BACKLOG_MAX)
        self._doc_backlog: deque[tuple[str, Signed]] = deque(maxlen=BACKLOG_MAX)
        # This process's own URLs, to answer from during an outage (about 2 bytes a URL).
        self._local_urls = ScalableBloomFilter(
            min(config.bloom_capacity, 100_000), config.bloom_error_rate
        )
        self._outage_dedup: Deduplicator | None = None  # items kept during an outage
        self._unchecked = 0

    def _where(self) -> str:
        kwargs = self.redis_client.get_connection_kwargs()
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"

    def _connect_redis(self) -> None:
        """First contact: record the crawl's parameters, or check them against Redis's."""
        if self._redis_ready:
            return
        self._client_mod.check_meta(
            self.redis_client,
            self.key_prefix,
            "content",
            {
                "method": self.dedup.method.name,
                "params": self.dedup.method.params(),
                "min_tokens": self.dedup.min_tokens,
            },
        )
        urls = self._urls_mod.url_filter(
            self.redis_url_client,
            self.key_prefix,
            self.config.bloom_capacity,
            self.config.bloom_error_rate,
        )
        self._client_mod.check_meta(self.redis_client, self.key_prefix, "urls", urls.params())
        self.urls = urls
        self._redis_ready = True

    def _open(self) -> None:
        try:
            self._connect_redis()
        except self.errors as exc:
            if self.config.redis_on_error == "fail-closed":
                raise StateError(
                    f"Redis at {self.config.redis_url} is unavailable ({exc}) and "
                    "NEARDUP_REDIS_ON_ERROR is 'fail-closed'"
                ) from None
            self._redis_failed(exc)
            return
        with contextlib.suppress(*self.errors):
            logger.info(
                "scrapy-neardup: state in Redis %s under %s:neardup:* : %d URLs, %d documents kept",
                self._where(),
                self.key_prefix,
                len(self.urls),
                len(self.dedup),
            )

    def _close(self) -> None:
        if self._outage is not None:
            self._retry_at = 0.0  # one last try to write the backlog
            self._redis_call(lambda: None, lambda: None)
        if self._url_backlog or self._doc_backlog:
            logger.warning(
                "scrapy-neardup: Redis was not back before the crawl ended: %d URLs and %d "
                "kept items met during the outage were not recorded in it",
                len(self._url_backlog),
                len(self._doc_backlog),
            )
        if self._opened and self._outage is None:
            with contextlib.suppress(*self.errors):
                self.set_final_stats()
        for client in (self.redis_client, self.redis_url_client):
            client.close()

    def clear_urls(self) -> None:
        """Delete the URL filter's keys (scrapy-redis's ``SCHEDULER_PERSIST = False``)."""
        self._redis_call(self._clear_urls, lambda: None)

    def _clear_urls(self) -> None:
        self._urls_mod.clear_url_filter(self.redis_url_client, self.key_prefix)
        self._local_urls = ScalableBloomFilter(
            min(self.config.bloom_capacity, 100_000), self.config.bloom_error_rate
        )
        self._url_backlog.clear()
        self._redis_ready = False  # the filter's meta is written again on next use

    def _redis_call(self, call: Callable[[], T], unchecked: Callable[[], T]) -> T:
        """``call()``, or ``unchecked()`` while Redis is unavailable (see the module docstring)."""
        if self._outage is not None and time.monotonic() < self._retry_at:
            return unchecked()
        try:
            self._connect_redis()
            if self._outage is not None:
                self.redis_client.ping()  # back for real before saying so
                self._recover()
            return call()
        except self.errors as exc:
            self._redis_failed(exc)
            return unchecked()

    def _redis_failed(self, exc: BaseException) -> None:
        self.inc("neardup/redis/errors")
        now = time.monotonic()
        self._retry_at = now + RETRY_INTERVAL
        if self._outage is not None:
            return
        self._outage = now
        closed = self.config.redis_on_error == "fail-closed"
        logger.log(
            logging.ERROR if closed else logging.WARNING,
            "scrapy-neardup: Redis at %s is unavailable (%s: %s); NEARDUP_REDIS_ON_ERROR=%r: %s",
            self._where(),
            type(exc).__name__,
            exc,
            self.config.redis_on_error,
            "stopping the crawl"
            if closed
            else "URLs and items are let through unchecked until it is back",
        )
        if closed:
            self._stop_crawl()

    def _recover(self) -> None:
        """Redis answers again: write what was let through meanwhile, then say so."""
        if self._url_backlog:
            self.urls.add_many(list(self._url_backlog))
            self._url_backlog.clear()
        while self._doc_backlog:
            key, signed = self._doc_backlog[0]
            self.dedup.restore_head(key, signed)
            self._doc_backlog.popleft()
        logger.warning(
            "scrapy-neardup: Redis at %s is back after %.1f s (%d URLs and items let through "
            "unchecked meanwhile)",
            self._where(),
            time.monotonic() - (self._outage or 0.0),
            self._unchecked,
        )
        self._outage = None
        self._outage_dedup = None
        self._unchecked = 0

    def _stop_crawl(self) -> None:
        if self._stopping or self.crawler is None or self.crawler.engine is None:
            return
        self._stopping = True
        reason = "neardup_redis_unavailable"
        engine = self.crawler.engine
        if hasattr(engine, "close_spider_async"):
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:  # Scrapy < 2.14
            engine.close_spider(self.crawler.spider, reason)

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        def unchecked() -> bool:
            if self.config.redis_on_error == "fail-closed":
                self.inc("neardup/urls/unchecked")
                return True  # not crawled: the crawl is stopping
            if self._local_urls.add(key):
                return True  # this process has met it: filtered as usual
            self.inc("neardup/urls/unchecked")
            self._unchecked += 1
            self._url_backlog.append(key)
            return False

        def check() -> bool:
            seen = self.urls.add(key)
            self._local_urls.add(key)
            if not seen:
                self.inc("neardup/urls/recorded")
            return seen

        return self._redis_call(check, unchecked)

    def _redis_check(
        self, key: str, signed: Signed, check: Callable[[str, Signed], Verdict]
    ) -> Verdict:
        def unchecked() -> Verdict:
            if self.config.redis_on_error == "fail-closed":
                from scrapy.exceptions import DropItem

                self.inc("neardup/items/unchecked")
                # INFO: the outage has its one ERROR; a line per item met while the crawl
                # stops would bury it (they are counted in neardup/items/unchecked).
                raise DropItem(
                    "not checked for near-duplicates: Redis is unavailable and "
                    "NEARDUP_REDIS_ON_ERROR is 'fail-closed'",
                    log_level="INFO",
                )
            if self._outage_dedup is None:
                self._outage_dedup = Deduplicator(
                    self.dedup.method, min_tokens=self.dedup.min_tokens
                )
            verdict = self._outage_dedup.check_signed(key, signed)
            if not verdict.is_duplicate:
                self.inc("neardup/items/unchecked")
                self._unchecked += 1
                self._doc_backlog.append((key, signed))
            return verdict

        return self._redis_call(lambda: check(key, signed), unchecked)
