"""The shared state: everything in Redis, for many crawler processes (``NEARDUP_STORAGE="redis"``).

Promises: the URL filter (:mod:`scrapy_neardup.storage.redis_urls`), the indexes and the
clusters (:mod:`scrapy_neardup.storage.redis_index`) are shared by every crawler with the same
``NEARDUP_KEY_PREFIX``, and two crawlers never both keep a near-duplicate pair. No Redis call
runs on the reactor thread: calls run in the state's threads, each bounded by
``NEARDUP_REDIS_TIMEOUT``; a Redis out of reach at start stops the start, and during the crawl
``NEARDUP_REDIS_ON_ERROR`` decides. Nothing is written to the state directory.
Rationale: ``docs/design.md#redis``, ``#outages``, ``#atomic-query-and-add``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

from scrapy.exceptions import DropItem

from scrapy_neardup.components import component_enabled
from scrapy_neardup.deduplicator import OPTIONAL_PARAMS, Deduplicator, Member, Signed, Verdict
from scrapy_neardup.exceptions import ConfigError, StateError, StorageError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.meta import RECOVERED_META
from scrapy_neardup.start import exit_with_error
from scrapy_neardup.state.base import NearDupState, repeat_key
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.texts import redis_key
from scrapy_neardup.twisted_futures import LoopHandle, await_future

logger = logging.getLogger(__name__)

#: Checked by import path, so that this module need not import the Scrapy components.
URL_FILTER_MIDDLEWARE = "scrapy_neardup.middlewares.UrlFilterMiddleware"
T = TypeVar("T")

#: Seconds between two health probes of a Redis that went away.
RETRY_INTERVAL = 1.0
#: Seconds between two tries of the first contact, at start.
START_RETRY_PAUSE = 0.25
#: URLs and kept documents remembered during an outage, written to Redis when it is back.
BACKLOG_MAX = 100_000
#: Seconds the dupefilter may wait for URL answers in one turn of the reactor (never more
#: than NEARDUP_REDIS_TIMEOUT): with Scrapy's own work in the same turn (a page's links),
#: a turn then stays short on a loaded machine (bench/bench_crawl.py's stall target).
SYNC_WAIT = 0.025
#: URL checks let through before their answer came, kept for the downloader middleware.
LATE_MAX = 100_000
#: URLs written to Redis per call when an outage ends.
URL_BATCH = 1000
#: The finish reason of a crawl stopped by NEARDUP_REDIS_ON_ERROR = "fail-closed".
STOP_REASON = "neardup_redis_unavailable"
#: Seconds between two checks that Redis still holds the crawl's parameters (one EXISTS).
STATE_CHECK_INTERVAL = 5.0
#: Records that cannot be read logged at WARNING; the next at DEBUG.
FIRST_LOGGED = 5


class RedisUnavailable(Exception):
    """A call was not made, or failed: Redis is in an outage (raised in the state's threads)."""


class UncheckedItem(DropItem):
    """An item dropped unchecked by ``"fail-closed"`` during an outage: its request is put
    back in the scheduler's queue (fetched again on resume, with ``JOBDIR``) and is not done
    in the frontier."""


class GuardedDeduplicator(Deduplicator):
    """A :class:`Deduplicator` on Redis stores whose ``check_signed`` goes through the state's
    content thread and outage handling (``guard``); ``check_direct`` is the check itself."""

    def __init__(self, *args: Any, guard: Callable[[str, Signed], Verdict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard

    def check_signed(self, key: str, signed: Signed) -> Verdict:
        return self._guard(key, signed)

    def check_direct(self, key: str, signed: Signed) -> Verdict:
        return super().check_signed(key, signed)


class RedisState(NearDupState):
    """URL filter, indexes and clusters in Redis under ``{prefix}:neardup:``."""

    remote = True
    dedup: GuardedDeduplicator

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Imported here: they need the redis extra, and say so when it is missing.
        from scrapy_neardup.storage import redis_client, redis_index, redis_urls

        config, prefix = self.config, self.key_prefix
        if not prefix:
            raise ConfigError(
                "NEARDUP_KEY_PREFIX", prefix, "a key prefix (there is no spider name to use)"
            )
        if "{" in prefix or "}" in prefix:
            raise ConfigError(
                "NEARDUP_KEY_PREFIX", prefix, "a prefix without { or } (they make hash tags)"
            )
        self.key_prefix: str = prefix
        self._client_mod, self._urls_mod, self._index_mod = redis_client, redis_urls, redis_index
        self.errors = redis_client.REDIS_ERRORS
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        # One client per thread, neither retrying on its own (see the module docstring).
        self.redis_client = redis_client.connect(config.redis_url, config.redis_timeout, retries=0)
        self.redis_url_client = redis_client.connect(
            config.redis_url, config.redis_timeout, retries=0
        )
        self._url_thread = ThreadPoolExecutor(1, thread_name_prefix="neardup-redis-urls")
        self._content_thread = ThreadPoolExecutor(1, thread_name_prefix="neardup-redis-content")
        method = backend_from_config(config)

        def stores(name: str, codec: Any) -> Any:
            return redis_index.RedisBucketStore(
                self.redis_client, prefix, name, codec, on_corrupt=self._corrupt_record
            )

        self.dedup = GuardedDeduplicator(
            method,
            min_tokens=config.min_tokens,
            stores=stores,
            guard=self._check_blocking,
            **config.verify_params(),
        )
        self.recorder = redis_index.RedisRecorder(self.redis_client, prefix)
        self.dedup.recorder = self.recorder
        self._redis_ready = False
        self._contacted = False  # whether the first contact is made
        self._connect_lock = threading.Lock()
        # Outage, backlogs, the local URL filter and late checks: touched from every thread.
        self._lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._outage: float | None = None
        self._retry_at = 0.0
        self._probing = False
        self._stopping = False
        self._url_backlog: deque[bytes] = deque(maxlen=BACKLOG_MAX)
        # Items kept unchecked: (key asked for, key given during the outage, signatures, key
        # a check that failed may have written in Redis all the same, as its reply was lost);
        # and (key asked for, duplicate) of items found copies of those; content thread only.
        self._doc_backlog: deque[tuple[str, str, Signed, str | None]] = deque(maxlen=BACKLOG_MAX)
        self._member_backlog: deque[tuple[str, Member]] = deque(maxlen=BACKLOG_MAX)
        self._heads: dict[str, str] = {}  # key given during the outage -> its head in Redis
        self._local_urls = self._new_local_urls()
        self._outage_dedup: Deduplicator | None = None  # items kept during an outage
        # What the current outage let through, and what of it Redis knew once back.
        self._outage_counts: Counter[str] = Counter()
        self._wait = min(SYNC_WAIT, config.redis_timeout)
        self._turn_ends: float | None = None
        self._loop: LoopHandle | None = None
        self._loop_thread: int | None = None
        self._url_busy_since: float | None = None
        self._late: dict[bytes, Future[bool]] = {}
        self._settled_later = False  # whether UrlFilterMiddleware awaits late answers
        self._corrupt_logged = 0
        self._state_checked = time.monotonic()  # when Redis last held the crawl's parameters
        self._shared_queue = False  # whether requests go to a queue other processes pop

    def _new_local_urls(self) -> ScalableBloomFilter:
        """This process's URLs (a few bytes a URL), answered from before asking Redis and
        during an outage; at a tenth of the error rate, so that its false positives add a
        tenth to Redis's filter's."""
        config = self.config
        return ScalableBloomFilter(
            min(config.bloom_capacity, 100_000), max(config.bloom_error_rate / 10, 1e-12)
        )

    def _where(self) -> str:
        kwargs = self.redis_client.get_connection_kwargs()
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"

    def _submit(self, pool: ThreadPoolExecutor, fn: Callable[..., Any], *args: Any) -> Future:
        """``fn(*args)`` in ``pool``'s thread; here once the state is closed and the threads
        are gone (scrapy-redis flushes its dupefilter at the very end)."""
        try:
            return pool.submit(fn, *args)
        except RuntimeError:
            future: Future = Future()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)
            return future

    def inc(self, key: str, count: int = 1) -> None:
        with self._stats_lock:  # called from the state's threads too
            super().inc(key, count)

    # -- lifecycle ------------------------------------------------------------------------

    def _connect_redis(self) -> None:
        """First contact: record the crawl's parameters, or check them against Redis's. Then,
        every STATE_CHECK_INTERVAL seconds, whether Redis still holds them: gone, Redis lost
        the crawl's state (restarted without persistence, flushed), which is said once, and
        they are recorded again."""
        client, prefix = self.redis_client, self.key_prefix
        if (
            self._redis_ready
            and self._state_check_due()
            and not self._client_mod.meta_exists(client, prefix)
        ):
            self._redis_ready = False
            logger.warning(
                "scrapy-neardup: Redis at %s lost the crawl's state under {%s} (restarted "
                "without persistence, or flushed): the URLs and documents recorded before "
                "are gone, and pages crawled before may be crawled and kept again",
                self._where(),
                prefix,
            )
        if self._redis_ready:
            return
        with self._connect_lock:
            if self._redis_ready:
                return
            if (
                not self._contacted  # (later, Redis lost the state: said above)
                and not self._client_mod.meta_exists(client, prefix)
                and self._crawled_before()
            ):
                logger.warning(
                    "scrapy-neardup: Redis at %s holds nothing under {%s}, though JOBDIR shows "
                    "this crawl ran before: Redis lost its state (restarted without "
                    "persistence, or flushed), or NEARDUP_KEY_PREFIX changed. Pages crawled "
                    "before will be crawled and kept again",
                    self._where(),
                    prefix,
                )
            self._client_mod.check_meta(
                client,
                prefix,
                "content",
                {k: self.dedup.meta()[k] for k in ("method", "params", "min_tokens")},
                optional=OPTIONAL_PARAMS,
            )
            self._client_mod.check_meta(client, prefix, "crawl", self._crawl_params())
            urls = self._urls_mod.url_filter(
                self.redis_url_client,
                self.key_prefix,
                self.config.bloom_capacity,
                self.config.bloom_error_rate,
            )
            self._client_mod.check_meta(self.redis_client, self.key_prefix, "urls", urls.params())
            self.urls = urls
            self._redis_ready = self._contacted = True

    def _state_check_due(self) -> bool:
        now = time.monotonic()
        with self._lock:
            if now < self._state_checked + STATE_CHECK_INTERVAL:
                return False
            self._state_checked = now
        return True

    def _crawl_params(self) -> dict[str, Any]:
        """The settings besides the method's that decide what the prefix holds (URL keys,
        the text signed, the decision), recorded under it: crawlers sharing it must agree."""
        config = self.config
        return {
            "NEARDUP_STRIP_PARAMS": sorted(config.strip_params),
            "NEARDUP_STRIP_TRAILING_SLASH": config.strip_trailing_slash,
            "NEARDUP_EXTRACT_FAST": config.extract_fast,
            "NEARDUP_MAX_TEXT_CHARS": config.max_text_chars,
        }

    def _crawled_before(self) -> bool:
        """Whether this crawler's JOBDIR holds what Scrapy leaves after a run (its queue, or
        the spider's state)."""
        settings = getattr(self.crawler, "settings", None)
        jobdir = settings.get("JOBDIR") if settings is not None else None
        if not jobdir:
            return False
        return any((Path(jobdir) / name).exists() for name in ("requests.queue", "spider.state"))

    def _first_contact(self) -> tuple[int, int]:
        """In the content thread: connect; the URLs and documents Redis holds. A Redis that
        is full stops the start; one that may evict the crawl's keys is warned of."""
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
        return super()._frontier_wanted() and not self._scheduler_shares_queue()

    def _open(self) -> None:
        # The loop of the crawl (opened in its thread), for calls from the Redis threads.
        self._loop, self._loop_thread = LoopHandle.current(), threading.get_ident()
        self._settled_later = self._middleware_awaits()
        self._shared_queue = self._scheduler_shares_queue()
        if self.crawler is not None and self.config.redis_on_error == "fail-closed":
            from scrapy import signals

            self.crawler.signals.connect(self._fetch_again, signal=signals.item_dropped)
        urls, docs = self._first_contact_in_time()
        logger.info(
            "scrapy-neardup: state in Redis %s under {%s}: %d URLs, %d documents kept",
            self._where(),
            self.key_prefix,
            urls,
            docs,
        )

    def _first_contact_in_time(self) -> tuple[int, int]:
        """First contact, tried again for ``NEARDUP_REDIS_TIMEOUT`` seconds; a Redis still out
        of reach then stops the start, under either ``NEARDUP_REDIS_ON_ERROR``. A Redis that
        cannot be reached when the crawl starts is far more often a mistyped URL than an
        outage, and fail-open would crawl all of it unchecked."""
        timeout = self.config.redis_timeout
        deadline = time.monotonic() + timeout
        failed: tuple[type[BaseException], ...] = (*self.errors, FutureTimeout)
        while True:
            future = self._submit(self._content_thread, self._first_contact)
            try:
                return future.result(timeout=timeout + 1.0)
            except failed as exc:
                hung = isinstance(exc, FutureTimeout)  # the thread is still in the call
                if hung:
                    exc = TimeoutError(f"no answer within {timeout} s")
                left = deadline - time.monotonic()
                if hung or left <= 0:
                    self.inc("neardup/redis/errors")
                    where = f"NEARDUP_REDIS_URL={mask_url(self.config.redis_url)!r}"
                    if not isinstance(exc, (*self._client_mod.OUTAGE_ERRORS, TimeoutError)):
                        raise StorageError(
                            f"{where}: Redis refuses the crawl's calls ({type(exc).__name__}: "
                            f"{exc}), tried for {timeout:g} s (NEARDUP_REDIS_TIMEOUT): out of "
                            "memory, raise maxmemory or free memory; a read-only replica, use "
                            "the primary's URL; a key of another type, another program uses "
                            "the prefix (NEARDUP_KEY_PREFIX)"
                        ) from None
                    raise StorageError(
                        f"{where}: Redis cannot be reached ({type(exc).__name__}: {exc}), "
                        f"tried for {timeout:g} s (NEARDUP_REDIS_TIMEOUT). Check the URL and "
                        "that Redis is running: a crawl does not start without its Redis, "
                        "whatever NEARDUP_REDIS_ON_ERROR says (that setting governs outages "
                        "once the crawl runs)"
                    ) from None
                time.sleep(min(START_RETRY_PAUSE, left))

    def _middleware_awaits(self) -> bool:
        """Whether UrlFilterMiddleware is on, to await the URL checks answered late."""
        config, crawler = self.config, self.crawler
        if crawler is None or not (config.enabled and config.url_filter):
            return False
        return component_enabled(crawler.settings, "DOWNLOADER_MIDDLEWARES", URL_FILTER_MIDDLEWARE)

    def _scheduler_shares_queue(self) -> bool:
        """Whether the scheduler is scrapy-redis's (or a subclass, such as
        :class:`~scrapy_neardup.leases.LeasingScheduler`): its queue is in Redis, popped by
        every process, so a request let in before its answer came could be fetched by a
        process that never learns the answer. Its scheduler calls Redis on the reactor thread
        for every request anyway; with it the dupefilter waits for the answer."""
        settings = getattr(self.crawler, "settings", None)
        scheduler = settings.get("SCHEDULER") if settings is not None else None
        if scheduler is None:
            return False
        try:
            from scrapy.utils.misc import load_object
            from scrapy_redis.scheduler import Scheduler
        except ImportError:  # scrapy-redis is not installed: not its scheduler
            return False
        cls = load_object(scheduler) if isinstance(scheduler, str) else scheduler
        return isinstance(cls, type) and issubclass(cls, Scheduler)

    def _close(self) -> None:
        with self._lock:
            self._late.clear()
        future = self._submit(self._content_thread, self._final)
        try:
            future.result(timeout=self.config.redis_timeout + 1.0)
        except FutureTimeout:
            logger.warning(
                "scrapy-neardup: Redis at %s did not answer within %.1f s at close",
                self._where(),
                self.config.redis_timeout,
            )
        if self._url_backlog or self._doc_backlog:
            logger.warning(
                "scrapy-neardup: Redis was not back before the crawl ended: %d URLs and %d "
                "kept items met during the outage were not recorded in it",
                len(self._url_backlog),
                len(self._doc_backlog),
            )
        for pool in (self._url_thread, self._content_thread):
            pool.shutdown(wait=False, cancel_futures=True)
        for client in (self.redis_client, self.redis_url_client):
            client.close()
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

    # -- outages --------------------------------------------------------------------------

    def _redis_failed(self, exc: BaseException) -> None:
        """A call failed (any thread): start an outage, unless one is on."""
        self.inc("neardup/redis/errors")
        with self._lock:
            now = time.monotonic()
            self._retry_at = now + RETRY_INTERVAL
            if self._outage is not None:
                return
            self._outage = now
        closed = self.config.redis_on_error == "fail-closed"
        logger.log(
            logging.ERROR if closed else logging.WARNING,
            "scrapy-neardup: Redis at %s %s; NEARDUP_REDIS_ON_ERROR=%r: %s",
            self._where(),
            self._client_mod.failure(exc),
            self.config.redis_on_error,
            "stopping the crawl"
            if closed
            else "URLs and items are let through unchecked until it answers again",
        )
        if closed:
            loop = self._loop if self._loop is not None and self._loop.running else None
            loop = loop or LoopHandle.current()  # a reactor started after the state opened
            if loop is not None and loop.running and threading.get_ident() != self._loop_thread:
                loop.call_from_thread(self._stop_crawl)
            else:
                self._stop_crawl()

    def _probe_soon(self) -> None:
        """During an outage: a health probe in the content thread, at most every
        RETRY_INTERVAL seconds (asked for by every check, so cheap when not due)."""
        with self._lock:
            if self._probing or self._closed or time.monotonic() < self._retry_at:
                return
            self._probing = True
        self._submit(self._content_thread, self._probe)

    def _probe(self) -> None:
        """In the content thread: when Redis answers and takes a write again, write the
        backlogs, end the outage. A Redis that lost the crawl's parameters meanwhile
        (restarted empty) is said so, and they are recorded again."""
        try:
            self.redis_client.ping()
            self.redis_url_client.ping()
            self._state_checked = -math.inf  # back from an outage: checked now
            self._connect_redis()
            self._client_mod.write_probe(self.redis_client, self.key_prefix)
            self._recover()
        except self.errors as exc:
            self._redis_failed(exc)
        except StateError as exc:  # back, but with other parameters recorded: say so once
            self._retry_at = math.inf
            logger.error("scrapy-neardup: Redis is back but cannot be used: %s", exc)
        finally:
            self._probing = False

    def _recover(self) -> None:
        """Redis answers again: write what was let through meanwhile, then say so."""
        while True:
            self._write_backlogs()
            with self._lock:
                if self._url_backlog:  # let through while the rest was written
                    continue
                started, self._outage = self._outage, None
                counts, self._outage_counts = self._outage_counts, Counter()
                break
        self._outage_dedup = None
        logger.warning(
            "scrapy-neardup: Redis at %s is back after %.1f s: %d URLs and %d items were let "
            "through unchecked meanwhile; %d of those URLs were known to it, and %d of those "
            "items are duplicates of items it holds (delivered all the same: `scrapy "
            "neardup-stats --redis-url URL --key-prefix %s` lists them)",
            self._where(),
            time.monotonic() - (started or 0.0),
            counts["urls"],
            counts["items"],
            counts["late_urls"],
            counts["late_items"],
            self.key_prefix,
        )

    def _write_backlogs(self) -> None:
        """In the content thread: URLs, then items (checked as any item), then their copies."""
        while self._url_backlog:
            with self._lock:
                n = min(URL_BATCH, len(self._url_backlog))
                batch = [self._url_backlog.popleft() for _ in range(n)]
            try:
                seen = self.urls.add_many(batch)
            except BaseException:
                with self._lock:
                    self._url_backlog.extendleft(reversed(batch))
                raise
            # (A URL whose own test-and-set failed after Redis ran it counts here too.)
            late = sum(seen)
            if late:
                self.inc("neardup/urls/late_duplicates", late)
                with self._lock:
                    self._outage_counts["late_urls"] += late
        while self._doc_backlog:
            key, given, signed, written = self._doc_backlog[0]
            verdict = None if written is None else self._recorded(written)
            if verdict is None:
                written = self.unique_key(key)
                self._doc_backlog[0] = (key, given, signed, written)  # a retry finds it
                verdict = self.dedup.check_direct(written, signed)
            self._heads[given] = verdict.duplicate_of or verdict.key
            if verdict.is_duplicate:
                self.recorder.late(verdict.member())
                self.inc("neardup/items/reconciled")
                with self._lock:
                    self._outage_counts["late_items"] += 1
            self._doc_backlog.popleft()
        while self._member_backlog:
            key, member = self._member_backlog[0]
            head = self._heads.get(member.head, member.head)
            joined = Member(self.unique_key(key), head, member.method, member.similarity)
            self.recorder.member(joined)
            self._member_backlog.popleft()
        self._heads.clear()

    def _fetch_again(
        self, item: Any = None, response: Any = None, exception: Any = None, **kwargs: Any
    ) -> None:
        """An item dropped unchecked: its request goes back to the scheduler (Scrapy's JOBDIR
        queue keeps it for the next run), past the URL filter, which recorded its URL."""
        request = getattr(response, "request", None)
        if not isinstance(exception, UncheckedItem) or request is None:
            return
        self._stop_crawl()  # first: the engine, closing, takes nothing more from the queue
        again = request.replace(dont_filter=True)
        again.meta[RECOVERED_META] = request.url
        try:
            self.crawler.engine.crawl(again)
        except Exception as exc:  # a scheduler in the same failing Redis, an engine gone
            logger.warning("scrapy-neardup: %s could not be queued again: %r", request, exc)

    def _stop_crawl(self) -> bool:
        """Fail-closed: the engine takes nothing more from the scheduler's queue (what is
        queued meanwhile waits there; with JOBDIR, for the next run), the crawl stops with
        its own finish reason and its process exits with status 1. Whether a crawl is
        stopping so (not without a running engine). In the loop's thread."""
        if self._stopping:
            return True
        engine = getattr(self.crawler, "engine", None)
        if engine is None or not engine.running:
            return False
        self._stopping = True
        engine.pause()
        exit_with_error(self.crawler)
        self.stop_crawl(STOP_REASON)
        return True

    # -- URLs -----------------------------------------------------------------------------

    def _url_call(self, call: Callable[[], T]) -> T:
        """In the URL thread: ``call()`` on the URL filter; RedisUnavailable during an
        outage, or when it fails (which starts one)."""
        self._url_busy_since = time.monotonic()
        try:
            if self._outage is not None:
                raise RedisUnavailable
            try:
                self._connect_redis()
                return call()
            except self.errors as exc:
                self._redis_failed(exc)
                raise RedisUnavailable from exc
        finally:
            self._url_busy_since = None

    def _url_job(self, key: bytes) -> bool:
        """In the URL thread: test-and-set of ``key`` in Redis."""
        seen = self._url_call(lambda: self.urls.add(key))
        with self._lock:
            self._local_urls.add(key)
        if not seen:
            self.inc("neardup/urls/recorded")
        return seen

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        """Test and set for synchronous callers (the dupefilter): waits for the URL thread
        only as long as the reactor can afford (see the module docstring)."""
        if self._known(key):
            return True
        if self._outage is not None:
            self._probe_soon()
            return self._unchecked_url(key)
        future = self._submit(self._url_thread, self._url_job, key)
        try:
            return future.result(timeout=self._wait_left())
        except FutureTimeout:
            return self._answer_late(key, future)
        except RedisUnavailable:
            return self._unchecked_url(key)

    async def key_seen_async(self, key: bytes) -> bool:
        if self._known(key):
            return True
        if self._outage is not None:
            self._probe_soon()
            return self._unchecked_url(key)
        try:
            return await await_future(self._submit(self._url_thread, self._url_job, key))
        except RedisUnavailable:
            return self._unchecked_url(key)

    async def keys_seen(self, keys: list[bytes]) -> list[bool] | None:
        """Test and set of ``keys`` in one script call, awaited off the reactor thread (a
        response's links, from LinkBatchMiddleware). None during an outage or when the call
        fails: the dupefilter then checks each key under the outage rules."""
        if self._outage is not None:
            return None
        try:
            return await await_future(self._submit(self._url_thread, self._keys_job, keys))
        except RedisUnavailable:
            return None

    async def keys_known(self, keys: list[bytes]) -> list[bool] | None:
        if self._outage is not None:
            return None
        job = lambda: self._url_call(lambda: [key in self.urls for key in keys])  # noqa: E731
        try:
            return await await_future(self._submit(self._url_thread, job))
        except RedisUnavailable:
            return None

    def _keys_job(self, keys: list[bytes]) -> list[bool]:
        """In the URL thread: the keys this process met are seen; the others go to Redis."""
        with self._lock:
            known = [key in self._local_urls for key in keys]
        ask = [key for key, met in zip(keys, known, strict=True) if not met]
        answers = iter(self._url_call(lambda: self.urls.add_many(ask)) if ask else ())
        seen = [met or next(answers) for met in known]
        with self._lock:
            for key in ask:
                self._local_urls.add(key)
        new = seen.count(False)
        if new:
            self.inc("neardup/urls/recorded", new)
        return seen

    def _known(self, key: bytes) -> bool:
        """Whether this process met ``key`` (recorded it in Redis, or let it through): then
        Redis knows it too, and no round trip is needed."""
        with self._lock:
            return key in self._local_urls

    def _wait_left(self) -> float | None:
        """Seconds the caller may still wait for the URL thread: what is left of this turn
        of the loop's SYNC_WAIT; none while the thread is stuck on a call; without a
        running loop (a script, a test), or with a shared queue, the whole timeout."""
        loop = LoopHandle.current()
        if loop is None or self._shared_queue:
            return self.config.redis_timeout + 1.0
        now = time.monotonic()
        busy = self._url_busy_since
        if busy is not None and now - busy >= self._wait:
            return 0.0
        if self._turn_ends is None:
            self._turn_ends = now + self._wait
            loop.call_soon(self._next_turn)
        return max(0.0, self._turn_ends - now)

    def _next_turn(self) -> None:
        self._turn_ends = None

    def _answer_late(self, key: bytes, future: Future[bool]) -> bool:
        """No answer in time: answer from what this process knows. The check goes on in the
        URL thread; UrlFilterMiddleware awaits its answer before the download."""
        self.inc("neardup/urls/answered_late")
        with self._lock:
            if self._local_urls.add(key):
                return True  # this process met it: filtered as usual
        if not self._settled_later and self.config.redis_on_error == "fail-closed":
            self.inc("neardup/urls/unchecked")
            return True  # dropped: nothing would await the answer
        if self._settled_later:
            with self._lock:
                self._late[key] = future
                if len(self._late) > LATE_MAX:
                    del self._late[next(iter(self._late))]
        future.add_done_callback(lambda done: self._late_answer(key, done))
        return False

    def _late_answer(self, key: bytes, future: Future[bool]) -> None:
        """The answer to a check let through before it came (in the URL thread)."""
        failed = future.cancelled() or future.exception() is not None
        if not failed:
            if not future.result():
                with self._lock:
                    self._late.pop(key, None)  # new: the request goes on
            elif not self._settled_later:
                self.inc("neardup/urls/late_duplicates")  # crawled, and Redis knew it
            return
        self.inc("neardup/urls/unchecked")
        if self.config.redis_on_error == "fail-open":
            with self._lock:
                self._late.pop(key, None)
                self._url_backlog.append(key)
                self._outage_counts["urls"] += 1
        # fail-closed: the middleware finds the failed check and drops the request

    def late_check(self, key: bytes) -> Awaitable[bool] | None:
        with self._lock:
            future = self._late.pop(key, None)
        return None if future is None else self._settle(future)

    @property
    def has_late_checks(self) -> bool:
        return bool(self._late)

    async def _settle(self, future: Future[bool]) -> bool:
        try:
            return await await_future(future)
        except (RedisUnavailable, CancelledError):
            # fail-closed: through once the crawl stops (its item is dropped unchecked, and
            # its page fetched again on resume), else dropped
            return self.config.redis_on_error == "fail-closed" and not self._stop_crawl()

    def _unchecked_url(self, key: bytes) -> bool:
        """Redis is unavailable: fail-closed stops the crawl and lets the request into the
        scheduler's queue, which the engine no longer takes from (with JOBDIR, the next run
        fetches it), or drops it without a running crawl; fail-open filters what this
        process knows and lets the rest through (counted, and written to Redis when it is
        back). In the loop's thread."""
        if self.config.redis_on_error == "fail-closed":
            self.inc("neardup/urls/unchecked")
            return not self._stop_crawl()
        with self._lock:
            if self._local_urls.add(key):
                return True  # this process has met it: filtered as usual
            self._url_backlog.append(key)
            self._outage_counts["urls"] += 1
        self.inc("neardup/urls/unchecked")
        return False

    def clear_urls(self) -> None:
        """Delete the URL filter's keys (scrapy-redis's ``SCHEDULER_PERSIST = False``)."""
        future = self._submit(self._url_thread, self._clear_urls)
        with contextlib.suppress(RedisUnavailable, FutureTimeout):
            future.result(timeout=self.config.redis_timeout + 1.0)

    def _clear_urls(self) -> None:
        if self._outage is not None:
            raise RedisUnavailable
        try:
            self._urls_mod.clear_url_filter(self.redis_url_client, self.key_prefix)
        except self.errors as exc:
            self._redis_failed(exc)
            raise RedisUnavailable from exc
        with self._lock:
            self._local_urls = self._new_local_urls()
            self._url_backlog.clear()
        self._redis_ready = False  # the filter's meta is written again on next use

    # -- items ----------------------------------------------------------------------------

    async def check_item(self, key: str, signed: Signed, text: str | None = None) -> Verdict:
        if self._outage is not None:
            self._probe_soon()
        kept = self.text_to_keep(text) if text else None
        future = self._submit(self._content_thread, self._content_job, key, signed, True, kept)
        return await await_future(future)

    def _check_blocking(self, key: str, signed: Signed) -> Verdict:
        """``dedup.check_signed`` for callers off the reactor (scripts, tests): ``key`` as
        given, in the content thread."""
        if self._outage is not None:
            self._probe_soon()
        return self._submit(self._content_thread, self._content_job, key, signed, False).result()

    def _content_job(
        self, key: str, signed: Signed, unique: bool = True, text: str | None = None
    ) -> Verdict:
        """In the content thread: the item's check in Redis, or from what this process knows;
        then its text kept (NEARDUP_KEEP_TEXT; not for items checked during an outage)."""
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
        """HSET in ``{prefix}:neardup:texts`` (content thread); a failure starts an outage
        but does not undo the check it follows."""
        try:
            self.redis_client.hset(redis_key(self.key_prefix), key, text)
        except self.errors as exc:
            self._redis_failed(exc)

    def _key_taken(self, key: str) -> bool:
        return self._index_mod.taken(self.redis_client, self.key_prefix, key)

    def _recorded(self, key: str) -> Verdict | None:
        """What Redis holds of ``key``: a check whose reply was lost may have written it (a
        record that cannot be read: checked again)."""
        try:
            kept, member = self._index_mod.recorded(self.redis_client, self.key_prefix, key)
        except self._client_mod.CorruptRecord as exc:
            self._corrupt_record(exc)
            return None
        if member is not None:
            return Verdict(key, *member)
        return Verdict(key) if kept else None

    def _corrupt_record(self, error: BaseException) -> None:
        """A record in Redis that cannot be read (another client wrote it): left out of the
        comparison, counted, logged (the first few at WARNING)."""
        self.inc("neardup/redis/errors")
        self.inc("neardup/redis/corrupt_records")
        self._corrupt_logged += 1
        logger.log(
            logging.WARNING if self._corrupt_logged <= FIRST_LOGGED else logging.DEBUG,
            "scrapy-neardup: Redis at %s %s; left out (counted in neardup/redis/corrupt_records%s)",
            self._where(),
            self._client_mod.failure(error),
            "; the next are logged at DEBUG" if self._corrupt_logged == FIRST_LOGGED else "",
        )

    def _unchecked_item(
        self, key: str, signed: Signed, unique: bool, written: str | None = None
    ) -> Verdict:
        if self.config.redis_on_error == "fail-closed":
            self.inc("neardup/items/unchecked")
            # INFO: the outage has its one ERROR; a line per item met while the crawl
            # stops would bury it (they are counted in neardup/items/unchecked).
            raise UncheckedItem(
                "not checked for near-duplicates: Redis is unavailable and "
                "NEARDUP_REDIS_ON_ERROR is 'fail-closed'; its page is fetched again when "
                "the crawl resumes",
                log_level="INFO",
            )
        if self._outage_dedup is None:
            self._outage_dedup = Deduplicator(
                self.dedup.method, min_tokens=self.dedup.min_tokens, **self.config.verify_params()
            )
        local = self._outage_dedup
        given = key
        if unique:
            n = 2
            while given in local.exact.store or given in local.members:
                given, n = repeat_key(key, n), n + 1
        verdict = local.check_signed(given, signed)
        if verdict.is_duplicate:
            self._member_backlog.append((key, verdict.member()))  # verdict.key is given
        else:
            self.inc("neardup/items/unchecked")
            self._doc_backlog.append((key, given, signed, written))
            with self._lock:
                self._outage_counts["items"] += 1
        return verdict


def mask_url(url: str) -> str:
    """``url`` with its password, if any, as ``***`` (for messages and logs)."""
    import re
    from urllib.parse import urlsplit, urlunsplit

    url = re.sub(r"([?&]password=)[^&#]*", r"\1***", url)
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url.split("@", 1)[-1] if "@" in url else url
    if not password:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
