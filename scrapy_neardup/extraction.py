"""The crawler's side of extraction: pages and texts handed to the worker pool, as futures.

Promises: the reactor only waits on a future and never runs trafilatura itself (but with
``NEARDUP_WORKERS = 0``); each task has the page limits (:mod:`scrapy_neardup.page_limits`),
and a page over one is counted and logged, its worker replaced; a worker that dies fails its
own task only; byte-identical bodies are extracted once. Why pebble:
``docs/design.md#extraction``.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from typing import Any

import xxhash
from pebble import ProcessPool

from scrapy_neardup import workers as worker
from scrapy_neardup.main_text import Extracted, extract_main_text
from scrapy_neardup.page_limits import Deadlines, PageLimitError, limited, task_error
from scrapy_neardup.workers import Signer, SignerSpec

__all__ = ["Extracted", "Extractor", "PageLimitError", "SignerSpec", "extract_main_text"]

logger = logging.getLogger(__name__)

#: Page limit hits logged at WARNING before the rest go to DEBUG (unless NEARDUP_DEBUG).
FIRST_LOGGED = 5

Result = tuple[Extracted, Any]


class Extractor:
    """Extraction and signing in ``workers`` processes (inline when ``workers`` is 0),
    started when the first page needs them.

    ``signer_factory`` (a :class:`SignerSpec`) is called once in each worker. Each task in a
    worker is limited to ``page_timeout`` seconds and ``page_memory`` MiB (0: no limit);
    over either, its future fails with :class:`PageLimitError` and the worker is replaced.
    Inline, neither limit can be enforced. ``on_start`` is called once, when the workers (or
    the inline signer) are first needed.
    """

    def __init__(
        self,
        signer_factory: Callable[[], Signer],
        workers: int,
        cache_size: int = 4096,
        fast: bool = False,
        on_start: Callable[[], None] | None = None,
        page_timeout: float = 0,
        page_memory: int = 0,
    ) -> None:
        self.on_start = on_start
        self.page_timeout = page_timeout
        self.page_memory = page_memory
        #: Whether the workers (or the inline signer) were ever needed.
        self.started = False
        self._signer_factory = signer_factory
        self._workers = workers
        self._fast = fast
        self._pool: ProcessPool | None = None
        self._deadlines: Deadlines | None = None  # the page timeout, once a task ran
        self._pending: set[Future] = set()
        self._inline_signer: Signer | None = None
        self._cache: OrderedDict[bytes, Result | PageLimitError] = OrderedDict()
        self._cache_size = cache_size
        self._in_flight: dict[bytes, Future] = {}
        self._limits_logged = 0
        #: Where the time went (see :meth:`timing`): the workers' seconds on tasks, wall
        #: and CPU, and the items' seconds waiting for their page's text (the middleware's).
        self.busy_s = self.task_cpu_s = self.waited_s = 0.0
        self._first_task: float | None = None
        self._last_done: float | None = None
        self._worker_seconds = 0.0  # workers x seconds of the pools closed so far

    def _start(self) -> None:
        self.started = True
        on_start, self.on_start = self.on_start, None
        if on_start is not None:
            on_start()

    def _get_pool(self) -> ProcessPool:
        """The worker processes, started (by pebble, with the first task) when first needed."""
        if self._pool is None:
            memory = self.page_memory * 1024 * 1024
            niceness = worker.worker_niceness(self._workers)
            self._pool = ProcessPool(
                self._workers,
                initializer=worker.init_worker,
                initargs=(self._signer_factory, memory, niceness),
                context=worker.WorkerContext(),
            )
            self._start()
        return self._pool

    def _inline(self) -> Signer:
        if self._inline_signer is None:
            self._inline_signer = self._signer_factory()
            self._start()
        return self._inline_signer

    def cached(self, body: bytes) -> tuple[bytes, Result | PageLimitError | None]:
        """The body's digest, and what extracting it gave before: a result, the
        :class:`PageLimitError` it hit (not tried again), or None."""
        digest = xxhash.xxh3_128_digest(body)
        found = self._cache.get(digest)
        if found is not None:
            self._cache.move_to_end(digest)
        return digest, found

    def remember(self, digest: bytes, result: Result | PageLimitError) -> None:
        self._cache[digest] = result
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def in_flight(self, digest: bytes) -> Future | None:
        """The extraction of a body with this digest that is still running, if any: a copy
        that arrives meanwhile waits for it rather than being extracted again."""
        return self._in_flight.get(digest)

    def track(self, digest: bytes, future: Future) -> None:
        """Make ``future`` (the extraction of the body with ``digest``) :meth:`in_flight`
        until it is done."""
        self._in_flight[digest] = future
        future.add_done_callback(lambda _: self._in_flight.pop(digest, None))

    def submit_extract(self, body: bytes, url: str | None, encoding: str | None) -> Future:
        """A future of ``(Extracted, signatures or None)``; inline, a failure raises here."""
        if self._workers:
            return self._submit(worker.extract_and_sign, body, url, encoding, self._fast)
        signer, cpu = self._inline(), time.process_time()
        result = signer.extract(body, url, encoding, self._fast)
        self.task_cpu_s += time.process_time() - cpu
        return _done(result)

    def submit_prepared(self) -> Future:
        """A future of what the method prepares (see :meth:`Signer.prepared`), computed in a
        worker so that the crawler process need not load what it takes."""
        return self._submit(worker.prepared) if self._workers else _done(self._inline().prepared())

    def submit_sign(self, text: str) -> Future:
        """A future of the signatures of ``text``."""
        return self._submit(worker.sign, text) if self._workers else _done(self._inline()(text))

    def timing(self) -> dict[str, float]:
        """``workers``; the workers' ``busy_s`` and ``idle_s`` (worker-seconds from the first
        task to the last result, not running a task: waiting for work or for the crawler to
        take a result); ``task_cpu_s``; ``wait_s``, the items' time waiting for their text."""
        idle = self._worker_seconds
        if self._pool is not None and self._first_task is not None:
            idle += self._workers * ((self._last_done or self._first_task) - self._first_task)
        return {
            "workers": self._workers,
            "busy_s": round(self.busy_s, 3),
            "idle_s": round(max(idle - self.busy_s, 0.0), 3),
            "task_cpu_s": round(self.task_cpu_s, 3),
            "wait_s": round(self.waited_s, 3),
        }

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """A future of ``fn(*args)`` run in a worker under the page limits."""
        if self._first_task is None:
            self._first_task = time.perf_counter()
        try:
            task = self._get_pool().schedule(limited, (fn, *args))
        except RuntimeError:
            # Every worker died at once, or one failed to start: start a fresh pool.
            logger.warning("scrapy-neardup: extraction worker pool broke; restarting it")
            self.close()
            task = self._get_pool().schedule(limited, (fn, *args))
        if self.page_timeout:
            if self._deadlines is None:
                self._deadlines = Deadlines(self.page_timeout)
            self._deadlines.watch(task)
        future: Future = Future()
        self._pending.add(future)
        task.add_done_callback(lambda done: self._relay(done, future))
        return future

    def _relay(self, task: Future, future: Future) -> None:
        """``task``'s outcome to ``future`` (in pebble's one result thread)."""
        self._pending.discard(future)
        self._last_done = time.perf_counter()
        timed_out = self._deadlines is not None and self._deadlines.expired(task)
        exc = task_error(task, timed_out, self.page_timeout, self.page_memory)
        with suppress(InvalidStateError):  # already failed by close()
            if exc is None:
                value, seconds, cpu = task.result()
                self.busy_s += seconds
                self.task_cpu_s += cpu
                future.set_result(value)
            else:
                future.set_exception(exc)

    def log_limit(self, exc: PageLimitError, what: str, debug: bool) -> None:
        """Log a limit hit by ``what`` (a URL): the first few at WARNING, the rest at DEBUG
        unless ``debug`` (NEARDUP_DEBUG)."""
        self._limits_logged += 1
        shown = debug or self._limits_logged <= FIRST_LOGGED
        last = not debug and self._limits_logged == FIRST_LOGGED
        logger.log(
            logging.WARNING if shown else logging.DEBUG,
            "scrapy-neardup: %s went %s in its worker; kept unchecked%s",
            what,
            exc,
            " - no more will be shown (see NEARDUP_DEBUG)" if last else "",
        )

    def close(self, wait: bool = True) -> None:
        """Stop the workers at once; tasks still running fail. pebble ends its workers only
        when joined, so this always waits (about 0.1 s), whatever ``wait`` says."""
        pool, self._pool = self._pool, None
        if pool is not None:
            if self._first_task is not None:
                spent = (self._last_done or self._first_task) - self._first_task
                self._worker_seconds += self._workers * spent
                self._first_task = self._last_done = None
            pool.stop()
            pool.join()
        if self._deadlines is not None:
            self._deadlines.stop()
            self._deadlines = None
        for future in list(self._pending):
            with suppress(InvalidStateError):  # it finished meanwhile
                future.set_exception(RuntimeError("the extraction workers were stopped"))
        self._pending.clear()


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
