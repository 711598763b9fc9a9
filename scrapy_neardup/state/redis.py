"""The shared state: everything in Redis, for many crawler processes (``NEARDUP_STORAGE="redis"``).

Promises: the URL filter, the indexes and the clusters are shared by every crawler with the
same ``NEARDUP_KEY_PREFIX``, and two crawlers never both keep a near-duplicate pair. No Redis
call runs on the reactor thread: they run in the state's two threads (URLs; the rest), each
bounded by ``NEARDUP_REDIS_TIMEOUT``. A Redis out of reach, full or read-only stops the start;
later a failed call is met as :mod:`.redis_outage` says. Rationale: ``docs/design.md#redis``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from scrapy_neardup.deduplicator import OPTIONAL_PARAMS, Signed, Verdict
from scrapy_neardup.exceptions import ConfigError, StateError, StorageError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.state.redis_outage import GuardedDeduplicator
from scrapy_neardup.state.redis_outage import UncheckedItem as UncheckedItem  # for the components
from scrapy_neardup.state.redis_url_checks import UrlChecks
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.texts import redis_key
from scrapy_neardup.twisted_futures import LoopHandle, await_future

logger = logging.getLogger(__name__)


#: Seconds between two tries of the first contact, at start.
START_RETRY_PAUSE = 0.25
#: Seconds between two checks that Redis still holds the crawl's parameters (one EXISTS).
STATE_CHECK_INTERVAL = 5.0


class RedisState(UrlChecks):
    """URL filter, indexes and clusters in Redis under ``{prefix}:neardup:``."""

    remote = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Imported here: they need the redis extra, and say so when it is missing.
        from scrapy_neardup.storage import redis_client, redis_index, redis_urls

        config, prefix = self.config, self.key_prefix
        if not prefix or "{" in prefix or "}" in prefix:
            raise ConfigError(
                "NEARDUP_KEY_PREFIX",
                prefix,
                "a key prefix (the spider's name when unset), without { or } (hash tags)",
            )
        self.key_prefix: str = prefix
        self._client_mod, self._urls_mod, self._index_mod = redis_client, redis_urls, redis_index
        self.errors = redis_client.REDIS_ERRORS
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        # A client and a thread for URLs, the same for the rest; no call is retried.
        self.redis_client = redis_client.connect(config.redis_url, config.redis_timeout, 0)
        self.redis_url_client = redis_client.connect(config.redis_url, config.redis_timeout, 0)
        self._content_thread = ThreadPoolExecutor(1, thread_name_prefix="neardup-redis-content")
        self.dedup = GuardedDeduplicator(
            backend_from_config(config),
            min_tokens=config.min_tokens,
            stores=lambda name, codec: redis_index.RedisBucketStore(
                self.redis_client, prefix, name, codec, on_corrupt=self._corrupt_record
            ),
            guard=self._check_blocking,
            **config.verify_params(),
        )
        self.recorder = self.dedup.recorder = redis_index.RedisRecorder(self.redis_client, prefix)
        self._redis_ready = False
        self._contacted = False  # whether the first contact is made
        self._connect_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._probing = False
        self._state_checked = time.monotonic()  # when Redis last held the crawl's parameters

    def inc(self, key: str, count: int = 1) -> None:
        with self._stats_lock:  # called from the state's threads too
            super().inc(key, count)

    # -- lifecycle ------------------------------------------------------------------------

    def _connect_redis(self) -> None:
        """Record the crawl's parameters in Redis, or check them against those recorded; again
        when Redis lost them (checked every STATE_CHECK_INTERVAL seconds, and said once)."""
        client, prefix = self.redis_client, self.key_prefix
        meta = functools.partial(self._client_mod.check_meta, client, prefix)
        now = time.monotonic()
        with self._lock:
            due = self._redis_ready and now >= self._state_checked + STATE_CHECK_INTERVAL
            if due:
                self._state_checked = now
        if due and not self._client_mod.meta_exists(client, prefix):
            self._redis_ready = False
            self._warn_lost(f"lost the crawl's state under {{{prefix}}}")
        if self._redis_ready:
            return
        with self._connect_lock:
            if self._redis_ready:
                return
            ran_before = not self._contacted and self._crawled_before()
            if ran_before and not self._client_mod.meta_exists(client, prefix):
                self._warn_lost(
                    f"holds nothing under {{{prefix}}}, though JOBDIR shows this crawl ran before"
                )
            content = {k: self.dedup.meta()[k] for k in ("method", "params", "min_tokens")}
            meta("content", content, optional=OPTIONAL_PARAMS)
            config = self.config
            crawl = {  # what decides what the prefix holds, besides the method
                "NEARDUP_STRIP_PARAMS": sorted(config.strip_params),
                "NEARDUP_STRIP_TRAILING_SLASH": config.strip_trailing_slash,
                "NEARDUP_EXTRACT_FAST": config.extract_fast,
                "NEARDUP_MAX_TEXT_CHARS": config.max_text_chars,
            }
            meta("crawl", crawl)
            urls = self._urls_mod.url_filter(
                self.redis_url_client, prefix, config.bloom_capacity, config.bloom_error_rate
            )
            meta("urls", urls.params())
            self.urls = urls
            self._redis_ready = self._contacted = True

    def _warn_lost(self, what: str) -> None:
        logger.warning(
            "scrapy-neardup: Redis at %s %s (restarted without persistence, flushed, or another "
            "NEARDUP_KEY_PREFIX): pages crawled before may be crawled and kept again",
            self._where(),
            what,
        )

    def _crawled_before(self) -> bool:
        """Whether JOBDIR holds what Scrapy leaves after a run (its queue, the spider state)."""
        jobdir = self.crawler.settings.get("JOBDIR") if self.crawler is not None else ""
        return bool(jobdir) and any(
            (Path(jobdir) / name).exists() for name in ("requests.queue", "spider.state")
        )

    def _first_contact(self) -> tuple[int, int]:
        """Connect; the URLs and documents Redis holds. A full Redis stops the start."""
        self._connect_redis()
        warning = self._client_mod.check_memory(self.redis_client)
        if warning:
            logger.warning("scrapy-neardup: Redis at %s: %s", self._where(), warning)
        return len(self.urls), len(self.dedup)

    def built(self) -> None:
        # Redis is reached while the crawler is built: out of reach, the crawl stops with one
        # clear message, before Scrapy opens anything it would then fail to close.
        self._first_contact_in_time()
        if self._frontier_wanted():  # the frontier is recorded locally: docs/design.md#frontier
            self._open_directory({}).schedule_sync_loop()

    def _frontier_wanted(self) -> bool:
        # scrapy-redis's scheduler keeps its queue in Redis, for every process to pop.
        return super()._frontier_wanted() and not self._shared_queue

    def _open(self) -> None:
        # The loop of the crawl (opened in its thread), for calls from the Redis threads.
        self._loop, self._loop_thread = LoopHandle.current(), threading.get_ident()
        config, crawler = self.config, self.crawler
        if crawler is not None and config.redis_on_error == "fail-closed":
            from scrapy import signals

            crawler.signals.connect(self._fetch_again, signal=signals.item_dropped)
        urls, docs = self._first_contact_in_time()
        logger.info(
            "scrapy-neardup: state in Redis %s under {%s}: %d URLs, %d documents kept",
            self._where(),
            self.key_prefix,
            urls,
            docs,
        )

    def _first_contact_in_time(self) -> tuple[int, int]:
        """First contact, tried for ``NEARDUP_REDIS_TIMEOUT`` seconds, then the start stops."""
        timeout = self.config.redis_timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                future = self._submit(self._content_thread, self._first_contact)
                return future.result(timeout=timeout + 1.0)
            except FutureTimeout:  # the thread is still in the call
                error: BaseException = TimeoutError(f"no answer within {timeout} s")
                break
            except self.errors as exc:
                error = exc
                if time.monotonic() >= deadline:
                    break
            time.sleep(max(0.0, min(START_RETRY_PAUSE, deadline - time.monotonic())))
        self.inc("neardup/redis/errors")
        where = f"NEARDUP_REDIS_URL={mask_url(self.config.redis_url)!r}"
        tried = (
            f"({type(error).__name__}: {error}), tried for {timeout:g} s (NEARDUP_REDIS_TIMEOUT)"
        )
        if isinstance(error, (*self._client_mod.OUTAGE_ERRORS, TimeoutError)):
            raise StorageError(
                f"{where}: Redis cannot be reached {tried}. Check the URL and that Redis is "
                "running: a crawl does not start without its Redis, whatever "
                "NEARDUP_REDIS_ON_ERROR says (that setting governs outages once the crawl runs)"
            )
        raise StorageError(
            f"{where}: Redis refuses the crawl's calls {tried}: out of memory, raise maxmemory "
            "or free memory; a read-only replica, use the primary's URL; a key of another "
            "type, another program uses the prefix (NEARDUP_KEY_PREFIX)"
        )

    def _close(self) -> None:
        with self._lock:
            self._late.clear()
        try:
            self._submit(self._content_thread, self._final).result(self.config.redis_timeout + 1)
        except FutureTimeout:
            logger.warning("scrapy-neardup: Redis at %s did not answer at close", self._where())
        if self._url_backlog or self._doc_backlog:
            logger.warning(
                "scrapy-neardup: Redis was not back before the crawl ended: %d URLs and %d "
                "kept items met during the outage were not recorded in it",
                len(self._url_backlog),
                len(self._doc_backlog),
            )
        for pool in (self._url_thread, self._content_thread):
            pool.shutdown(wait=False, cancel_futures=True)
        self.redis_client.close()
        self.redis_url_client.close()
        if self.directory is not None:
            self.directory.close()

    def _final(self) -> None:
        """In the content thread, at close: write what is left, then the final stats."""
        if self._outage is not None:
            self._probe()  # one last try
        elif self._url_backlog or self._doc_backlog or self._member_backlog:
            try:
                self._write_backlogs()
            except self.errors as exc:
                self._redis_failed(exc)
        if self._opened and self._outage is None:
            with contextlib.suppress(*self.errors):
                self.set_final_stats()

    def _probe_soon(self) -> None:
        """During an outage, a health probe in the content thread, at most every
        RETRY_INTERVAL seconds (asked for by every check: cheap when not due)."""
        with self._lock:
            if self._outage is None or self._probing or self._closed:
                return
            if time.monotonic() < self._retry_at:
                return
            self._probing = True
        self._submit(self._content_thread, self._probe)

    def _probe(self) -> None:
        """In the content thread: once Redis answers and takes a write, write the backlogs
        and end the outage. Parameters Redis lost meanwhile (restarted empty) are recorded
        again; other parameters recorded meanwhile are said once, and the outage goes on."""
        try:
            self.redis_client.ping()
            self.redis_url_client.ping()
            self._state_checked = -math.inf  # back from an outage: checked now
            self._connect_redis()
            self._client_mod.write_probe(self.redis_client, self.key_prefix)
            self._recover()
        except self.errors as exc:
            self._redis_failed(exc)
        except StateError as exc:
            self._retry_at = math.inf
            logger.error("scrapy-neardup: Redis is back but cannot be used: %s", exc)
        finally:
            self._probing = False

    # -- items ----------------------------------------------------------------------------

    async def check_item(self, key: str, signed: Signed, text: str | None = None) -> Verdict:
        self._probe_soon()
        kept = self.text_to_keep(text) if text else None
        future = self._submit(self._content_thread, self._content_job, key, signed, True, kept)
        return await await_future(future)

    def _check_blocking(self, key: str, signed: Signed) -> Verdict:
        """``dedup.check_signed`` for callers off the reactor (scripts, tests): ``key`` as
        given."""
        self._probe_soon()
        return self._submit(self._content_thread, self._content_job, key, signed, False).result()

    def _content_job(
        self, key: str, signed: Signed, unique: bool = True, text: str | None = None
    ) -> Verdict:
        """In the content thread: the item's check, then its text kept (not during an outage)."""
        written = None
        if self._outage is None:
            try:
                self._connect_redis()
                written = self.unique_key(key) if unique else key
                verdict = self.dedup.check_direct(written, signed)
            except self.errors as exc:
                self._redis_failed(exc)
            else:
                if text:
                    self.keep_text(verdict.key, text)
                return verdict
        return self._unchecked_item(key, signed, unique, written)

    def keep_text(self, key: str, text: str) -> None:
        """In ``{prefix}:neardup:texts``; a failure starts an outage, the check stands."""
        try:
            self.redis_client.hset(redis_key(self.key_prefix), key, text)
        except self.errors as exc:
            self._redis_failed(exc)

    def _key_taken(self, key: str) -> bool:
        kept, member = self._index_mod.recorded(self.redis_client, self.key_prefix, key)
        return kept or member is not None


def mask_url(url: str) -> str:
    """``url`` with its password, if any, as ``***`` (for messages and logs)."""
    url = re.sub(r"([?&]password=)[^&#]*", r"\1***", url)
    return re.sub(r"^([^:/?#]+://[^:/?#@]*:)[^/?#]*@", r"\1***@", url)
