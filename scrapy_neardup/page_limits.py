"""Each page's time and memory limits (``NEARDUP_PAGE_TIMEOUT``, ``NEARDUP_PAGE_MEMORY``).

Promises: a task that runs over the time limit (on ``time.monotonic()``) is cancelled, which
ends its worker; a task that grows its worker by more than the memory limit ends the worker
with :data:`MEMORY_EXIT`; either fails as :class:`PageLimitError`. A worker whose crawler is
gone ends itself. How the limits were chosen, and why a watchdog thread rather than
``RLIMIT_AS``: ``docs/design.md#page-limits``.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from multiprocessing.connection import wait as wait_any
from typing import Any

from pebble import ProcessExpired

from scrapy_neardup.exceptions import NearDupError

#: Exit status of a worker ended by its memory watchdog (pebble's own exits are 0, 1, errnos
#: and signals).
MEMORY_EXIT = 86
#: How often the watchdog reads the worker's resident size during a task.
WATCH_INTERVAL = 0.05
#: Seconds between two looks at the running tasks' time (the page timeout's precision).
DEADLINE_PROBE = 0.1
#: A task that leaves its worker this much above its resting size has the freed heap given
#: back to the system (``malloc_trim``, a few ms; ``docs/design.md#extraction``).
TRIM_ABOVE = 16 * 1024 * 1024


class PageLimitError(NearDupError):
    """A page (or an item's text) went over ``NEARDUP_PAGE_TIMEOUT`` or ``NEARDUP_PAGE_MEMORY``
    in a worker, which was replaced. ``limit`` is ``"timeout"`` or ``"memory"``."""

    def __init__(self, limit: str, message: str) -> None:
        self.limit = limit
        super().__init__(message)


# -- in the crawler ------------------------------------------------------------------------


class Deadlines:
    """The page timeout: a thread looks at the watched tasks every :data:`DEADLINE_PROBE`
    seconds, notes when each starts running, and cancels one that has run ``limit`` seconds
    (pebble then replaces its worker). Not pebble's own ``timeout``, which follows the wall
    clock (``docs/design.md#page-limits``)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._began: dict[Future, float | None] = {}  # None: not running yet
        self._expired: set[Future] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, task: Future) -> None:
        with self._lock:
            self._began[task] = None
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="neardup-page-timeout", daemon=True
                )
                self._thread.start()
        task.add_done_callback(self._forget)

    def expired(self, task: Future) -> bool:
        """Whether ``task`` was cancelled for running over the limit."""
        with self._lock:
            return task in self._expired

    def _forget(self, task: Future) -> None:
        with self._lock:
            self._began.pop(task, None)

    def _run(self) -> None:
        while not self._stopped.wait(DEADLINE_PROBE):
            now, late = time.monotonic(), []
            with self._lock:
                for task, began in self._began.items():
                    if began is None:
                        if task.running():
                            self._began[task] = now
                    elif now - began > self.limit:
                        late.append(task)
                self._expired.update(late)
            for task in late:
                task.cancel()  # a running pebble task: its worker is ended and replaced

    def stop(self) -> None:
        self._stopped.set()


def task_error(task: Future, timed_out: bool, timeout: float, memory: int) -> BaseException | None:
    """What failed pebble's ``task``, a limit hit as :class:`PageLimitError` (``timeout`` in
    seconds, ``memory`` in MiB), a dead worker as ``RuntimeError``; None if it succeeded."""
    if timed_out:
        return PageLimitError("timeout", f"over NEARDUP_PAGE_TIMEOUT ({timeout:g} s)")
    exc = task.exception() if not task.cancelled() else RuntimeError("cancelled")
    if isinstance(exc, ProcessExpired) and exc.exitcode == MEMORY_EXIT:
        return PageLimitError("memory", f"over NEARDUP_PAGE_MEMORY ({memory} MiB)")
    if isinstance(exc, ProcessExpired):
        return RuntimeError(f"extraction worker died (exit status {exc.exitcode})")
    return exc


# -- in a worker ---------------------------------------------------------------------------

#: The worker's resident size when its current task started; None between tasks. Changed
#: and read under ``_task_lock``, so the watchdog never ends a worker that is sending a
#: result (it would die holding pebble's channel lock).
_task_rss: int | None = None
_task_lock = threading.Lock()
#: The worker's resident size once warmed up, and glibc's ``malloc_trim`` (None elsewhere).
_resting_rss: int | None = None
_malloc_trim: Any = None


def rss() -> int | None:
    """This process's resident size in bytes; None where ``/proc`` is missing."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def warmed_up() -> None:
    """In a worker, once warmed up: its size now is the one :func:`limited` trims back to."""
    global _resting_rss, _malloc_trim
    _resting_rss = rss()
    with suppress(OSError, AttributeError):  # glibc only
        _malloc_trim = ctypes.CDLL(None).malloc_trim


def watch(memory_limit: int) -> None:
    """The worker's watchdog thread: ends the worker when the crawler is gone (the parent
    sentinel reaches EOF), or when the running task grew it by over ``memory_limit`` bytes."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by the pool
        return
    interval = WATCH_INTERVAL if memory_limit and rss() is not None else None
    while True:
        if wait_any([parent.sentinel], interval):
            os._exit(0)  # the crawler is gone
        with _task_lock:
            start = _task_rss
            if start is not None and (rss() or 0) - start > memory_limit:
                os._exit(MEMORY_EXIT)


def limited(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """``fn(*args)`` in a worker under the watchdog's eye: its result, and the seconds it
    took (wall) and used (this process's CPU)."""
    global _task_rss
    with _task_lock:
        _task_rss = rss()
    began, cpu = time.perf_counter(), time.process_time()
    try:
        value = fn(*args)
        return value, time.perf_counter() - began, time.process_time() - cpu
    except MemoryError:
        os._exit(MEMORY_EXIT)  # the machine's memory, not the limit: still this page's fault
    finally:
        with _task_lock:
            _task_rss = None
        if _malloc_trim is not None and _resting_rss is not None:
            now = rss()
            if now is not None and now - _resting_rss > TRIM_ABOVE:
                _malloc_trim(0)
