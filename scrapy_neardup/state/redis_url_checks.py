"""The URL filter of the Redis state: test-and-sets in the state's URL thread.

Promises: the reactor never waits on Redis for long. A synchronous check (the dupefilter)
waits at most SYNC_WAIT per turn of the loop, and not at all while the URL thread is stuck;
past that, it is answered from what this process knows, and the check goes on: the downloader
middleware awaits its answer (:meth:`UrlChecks.late_check`) before the download. With a queue
that other processes pop (scrapy-redis's scheduler) it waits for the answer.
Rationale: ``docs/design.md#outages``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from scrapy_neardup.components import component_enabled
from scrapy_neardup.state.redis_outage import OutageHandling, RedisUnavailable
from scrapy_neardup.twisted_futures import LoopHandle, await_future

T = TypeVar("T")

#: Checked by import path, so that this module need not import the Scrapy components.
URL_FILTER_MIDDLEWARE = "scrapy_neardup.middlewares.UrlFilterMiddleware"
#: Seconds the dupefilter may wait for URL answers in one turn of the reactor (at most
#: NEARDUP_REDIS_TIMEOUT), so that a turn stays short (bench/bench_crawl.py's stall target).
SYNC_WAIT = 0.025
#: URL checks let through before their answer came, kept for the downloader middleware.
LATE_MAX = 100_000


class UrlChecks(OutageHandling):
    """The URL side of :class:`~scrapy_neardup.state.redis.RedisState`, which sets
    ``redis_url_client`` and connects (``_connect_redis``)."""

    _urls_mod: Any
    _connect_redis: Callable[[], None]
    _probe_soon: Callable[[], None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._url_thread = ThreadPoolExecutor(1, thread_name_prefix="neardup-redis-urls")
        self._wait = min(SYNC_WAIT, self.config.redis_timeout)
        self._turn_ends: float | None = None
        self._url_busy_since: float | None = None
        self._late: dict[bytes, Future[bool]] = {}
        config, crawler = self.config, self.crawler
        self._settled_later = (  # whether UrlFilterMiddleware awaits late answers
            crawler is not None
            and config.enabled
            and config.url_filter
            and component_enabled(crawler.settings, "DOWNLOADER_MIDDLEWARES", URL_FILTER_MIDDLEWARE)
        )
        self._shared_queue = self._scheduler_shares_queue()

    def _scheduler_shares_queue(self) -> bool:
        """Whether the scheduler is scrapy-redis's, or a subclass: its queue is in Redis, for
        every process to pop, so the dupefilter waits for each answer (docs/design.md#outages)."""
        scheduler = self.crawler.settings.get("SCHEDULER") if self.crawler is not None else None
        if scheduler is None:
            return False
        try:
            from scrapy.utils.misc import load_object
            from scrapy_redis.scheduler import Scheduler
        except ImportError:  # scrapy-redis is not installed: not its scheduler
            return False
        cls = load_object(scheduler) if isinstance(scheduler, str) else scheduler
        return isinstance(cls, type) and issubclass(cls, Scheduler)

    def _submit(self, pool: ThreadPoolExecutor, fn: Callable[..., Any], *args: Any) -> Future:
        """``fn(*args)`` in ``pool``'s thread; here once the threads are gone (scrapy-redis
        flushes its dupefilter after the close)."""
        try:
            return pool.submit(fn, *args)
        except RuntimeError:
            future: Future = Future()
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)
            return future

    def _url_call(self, call: Callable[[], T]) -> T:
        """In the URL thread: ``call()``; RedisUnavailable during an outage, or when it fails
        (which starts one)."""
        self._url_busy_since = time.monotonic()
        try:
            if self._outage is not None:
                raise RedisUnavailable
            self._connect_redis()
            return call()
        except self.errors as exc:
            self._redis_failed(exc)
            raise RedisUnavailable from exc
        finally:
            self._url_busy_since = None

    def _url_job(self, keys: list[bytes]) -> list[bool]:
        """In the URL thread: test and set of ``keys`` in Redis."""
        seen = self._url_call(lambda: self.urls.add_many(keys)) if keys else []
        with self._lock:
            for key in keys:
                self._local_urls.add(key)
        if seen.count(False):
            self.inc("neardup/urls/recorded", seen.count(False))
        return seen

    def _keys_job(self, keys: list[bytes]) -> list[bool]:
        """In the URL thread: the keys this process met are seen; the others, as Redis says."""
        with self._lock:
            known = [key in self._local_urls for key in keys]
        answers = iter(self._url_job([k for k, met in zip(keys, known, strict=True) if not met]))
        return [met or next(answers) for met in known]

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        """Test and set for the dupefilter: waits for the URL thread as long as the reactor
        can afford (:meth:`_wait_left`), then answers late (:meth:`_answer_late`)."""
        if self._known(key):
            return True
        if self._outage is not None:
            self._probe_soon()
            return self._unchecked_url(key)
        future = self._submit(self._url_thread, lambda: self._url_job([key])[0])
        try:
            return future.result(timeout=self._wait_left())
        except FutureTimeout:
            return self._answer_late(key, future)
        except RedisUnavailable:
            return self._unchecked_url(key)

    async def key_seen_async(self, key: bytes) -> bool:
        if self._known(key):
            return True
        self._probe_soon()
        seen = await self._url_answer(self._url_job, [key])
        return self._unchecked_url(key) if seen is None else seen[0]

    async def keys_seen(self, keys: list[bytes]) -> list[bool] | None:
        """Test and set of ``keys`` in one script call (a response's links): None during an
        outage or when the call fails, and the dupefilter checks each under the outage rules."""
        return await self._url_answer(self._keys_job, keys)

    async def keys_known(self, keys: list[bytes]) -> list[bool] | None:
        return await self._url_answer(
            lambda k: self._url_call(lambda: [x in self.urls for x in k]), keys
        )

    async def _url_answer(
        self, job: Callable[[list[bytes]], list[bool]], keys: list[bytes]
    ) -> list[bool] | None:
        """``job(keys)`` in the URL thread, awaited; None during an outage or when it fails."""
        if self._outage is not None:
            return None
        try:
            return await await_future(self._submit(self._url_thread, job, keys))
        except RedisUnavailable:
            return None

    def _known(self, key: bytes) -> bool:
        """Whether this process met ``key`` (recorded it, or let it through): no round trip."""
        with self._lock:
            return key in self._local_urls

    def _wait_left(self) -> float | None:
        """Seconds to wait for the URL thread: what is left of this turn's SYNC_WAIT (none
        while it is stuck on a call); the whole timeout without a loop, or with a shared queue."""
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
        """No answer in time: answer from what this process knows; the check goes on."""
        self.inc("neardup/urls/answered_late")
        with self._lock:
            if self._local_urls.add(key):
                return True  # this process met it: filtered as usual
        if self._settled_later:
            with self._lock:
                self._late[key] = future
                if len(self._late) > LATE_MAX:
                    del self._late[next(iter(self._late))]
        elif self.config.redis_on_error == "fail-closed":
            self.inc("neardup/urls/unchecked")
            return True  # dropped: nothing would await the answer
        future.add_done_callback(lambda done: self._late_answer(key, done))
        return False

    def _late_answer(self, key: bytes, future: Future[bool]) -> None:
        """The answer to a check let through before it came (in the URL thread)."""
        if not future.cancelled() and future.exception() is None:
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
            # fail-closed: through once the crawl stops (its item is dropped unchecked), or dropped
            return self.config.redis_on_error == "fail-closed" and not self._stop_crawl()

    def clear_urls(self) -> None:
        """Delete the URL filter's keys (scrapy-redis's ``SCHEDULER_PERSIST = False``)."""
        future = self._submit(self._url_thread, self._url_call, self._clear_urls)
        with contextlib.suppress(RedisUnavailable, FutureTimeout):
            future.result(timeout=self.config.redis_timeout + 1.0)

    def _clear_urls(self) -> None:
        self._urls_mod.clear_url_filter(self.redis_url_client, self.key_prefix)
        with self._lock:
            self._local_urls = self._new_local_urls()
            self._url_backlog.clear()
        self._redis_ready = False  # the filter's meta is written again on next use
