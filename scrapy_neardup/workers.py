"""The extraction workers' processes: how one starts, and the tasks it runs.

Promises: a worker never re-runs the script that started the crawl; it dies with the
crawler however that ends; it builds the signer once and is warmed up before its first task;
as many workers as cores run niced. Must not: import jieba before a page needs it.
Rationale: ``docs/design.md#extraction`` and ``#page-limits``.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import types
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

from scrapy_neardup import page_limits
from scrapy_neardup.cores import usable_cpus
from scrapy_neardup.main_text import Extracted, extract_main_text

logger = logging.getLogger(__name__)

#: The workers' niceness when they are as many as the cores (see :func:`worker_niceness`).
WORKER_NICENESS = 5
_PR_SET_PDEATHSIG = 1
#: Loads what the first real pages would otherwise wait for: trafilatura's and lxml's imports
#: (about 2 s of CPU in each worker). No CJK text: jieba (a second and about 50 MB per
#: worker) is loaded only when a page in Chinese or Japanese arrives.
WARM_UP_PAGE = (
    b"<html><head><title>Warm-up</title></head><body><article><p>"
    + b"The worker loads its extraction and signing code now. " * 8
    + b"</p></article></body></html>"
)


@dataclass(frozen=True)
class SignerSpec:
    """A picklable recipe for a :class:`Signer`, built once in each worker process."""

    method: str
    params: tuple[tuple[str, Any], ...]
    min_tokens: int
    max_chars: int

    def __call__(self) -> Signer:
        from scrapy_neardup.deduplicator import Deduplicator

        dedup = Deduplicator(self.method, min_tokens=self.min_tokens, **dict(self.params))
        return Signer(dedup, self.max_chars)


class Signer:
    """Signs texts with a deduplicator's method (at most ``max_chars`` of each)."""

    def __init__(self, dedup: Any, max_chars: int) -> None:
        self.dedup = dedup
        self.max_chars = max_chars

    def __call__(self, text: str, title: str = "", article_end: int | None = None) -> Any:
        return self.dedup.sign(text[: self.max_chars], title, article_end)

    def extract(
        self, body: bytes, url: str | None, encoding: str | None, fast: bool = False
    ) -> tuple[Extracted, Any]:
        """The page's :class:`Extracted`, and its signatures (None for a page without text)."""
        extracted = extract_main_text(body, url, encoding, fast)
        if not extracted.text:
            return extracted, None
        return extracted, self(extracted.text, extracted.title, extracted.article_end)

    def prepared(self) -> Any:
        """The method's ``prepared()`` (MinHash: its banding; None for most methods)."""
        return self.dedup.method.prepared()


def worker_niceness(workers: int, cores: int | None = None) -> int:
    """:data:`WORKER_NICENESS` when ``workers`` could fill every core, else 0: the reactor
    keeps its turn (``docs/design.md#extraction``)."""
    return WORKER_NICENESS if workers >= (cores or len(usable_cpus())) else 0


_signer: Signer  # the worker's, set by init_worker


def init_worker(
    signer_factory: Callable[[], Signer], memory_limit: int, niceness: int = WORKER_NICENESS
) -> None:
    """Runs once in each worker, before its first task; ``memory_limit`` in bytes, 0: none;
    ``niceness`` added to the crawler's (see :func:`worker_niceness`)."""
    global _signer
    _die_with_parent()
    if niceness:
        os.nice(niceness)
    threading.Thread(
        target=page_limits.watch, args=(memory_limit,), name="neardup-watchdog", daemon=True
    ).start()
    _signer = signer_factory()
    try:
        _signer.extract(WARM_UP_PAGE, None, "utf-8")
    except Exception as exc:  # the real pages will say what is wrong, with their URL
        logger.debug("scrapy-neardup: worker warm-up failed: %r", exc)
    page_limits.warmed_up()


# The tasks, run in a worker with its signer.


def extract_and_sign(
    body: bytes, url: str | None, encoding: str | None, fast: bool
) -> tuple[Extracted, Any]:
    return _signer.extract(body, url, encoding, fast)


def sign(text: str) -> Any:
    return _signer(text)


def prepared() -> Any:
    return _signer.prepared()


def _die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this worker when the crawler dies, even by SIGKILL.

    The kernel's "parent" is the thread that started the worker (the reactor's, or pebble's
    for a replacement; both live as long as the pool). A worker whose crawler died before
    the call leaves now. Elsewhere the watchdog alone sees the crawler go."""
    parent = multiprocessing.parent_process()
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent.pid:
        os._exit(0)


class _WorkerProcess(SpawnProcess):
    """A spawned worker that does not re-run the script that started the crawl."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        # spawn (and forkserver) make the child run ``__main__``'s file, and no public hook
        # skips it: a script without an ``if __name__ == "__main__"`` guard would start a
        # crawl in each worker. So ``__main__`` is an empty module while a worker starts:
        # the one process-wide change left, a few ms long, during which another thread's
        # pickle would not find a class of the script.
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            return SpawnProcess._Popen(process_obj)
        finally:
            sys.modules["__main__"] = main


class WorkerContext(SpawnContext):
    """spawn, never fork: forking a process that runs a reactor and threads is unsafe."""

    Process = _WorkerProcess
