"""A crawl that cannot start says why in one line, and ``scrapy crawl`` exits with 1.

For the errors this package raises on purpose at start (``ConfigError``, ``StateError``,
``StorageError``) :func:`refuse_start` logs the message once as an ERROR and leaves out the
traceback asyncio or Twisted would log for that same exception (a filter on their loggers
from the refusal until that record, then removed). The exception still propagates, so
nothing starts. Rationale: ``docs/design.md#start-errors``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from scrapy_neardup.exceptions import NearDupError

logger = logging.getLogger(__name__)

#: The loggers whose records about a reported error are left out.
_LOGGERS = ("asyncio", "twisted")
#: The errors reported whose asyncio or Twisted record has not come yet (their
#: :func:`_signature`); the filter is on those loggers only while one is pending.
_pending: list[str] = []
_lock = threading.Lock()


def _signature(exc: BaseException) -> str:
    """The last line of the exception's traceback, as asyncio and Twisted print it."""
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}: {exc}"


class _ReportedErrors(logging.Filter):
    """Drops the records asyncio and Twisted log about an error already reported: one a
    refused start (asyncio's "Task exception was never retrieved", or Twisted's "Unhandled
    error in Deferred" heading and its traceback). Removes itself from both loggers once
    every reported error's record has come."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, NearDupError):
            # Twisted (Scrapy 2.13's CrawlerProcess) may hand over another instance
            signature = _signature(exc)
            if getattr(exc, "_neardup_reported", False) or signature in _pending:
                _settled(signature)
                return False
            return True
        if record.name == "twisted" and _pending:
            message = record.getMessage()
            if exc is None and message.strip() == _UNHANDLED:
                return False  # Twisted's heading of the traceback left out just after it
            for signature in list(_pending):
                if signature in message:
                    _settled(signature)
                    return False
        return True


_FILTER = _ReportedErrors()


def _settled(signature: str) -> None:
    """The record about the reported error ``signature`` came: once none is pending, the
    asyncio and Twisted loggers are left as they were (a new list: the loggers may be
    running through their filters now)."""
    with _lock:
        if signature in _pending:
            _pending.remove(signature)
        if not _pending:
            for name in _LOGGERS:
                log = logging.getLogger(name)
                log.filters = [f for f in log.filters if f is not _FILTER]


#: The record Twisted logs before the traceback of a Deferred's unhandled error.
_UNHANDLED = "Unhandled error in Deferred:"


def refuse_start(exc: NearDupError) -> None:
    """Log ``exc`` once as the reason the crawl does not start; the caller re-raises it.

    Until asyncio or Twisted logs the same error (when Scrapy's failed crawl task or
    Deferred is collected), their loggers carry a filter that leaves that record out."""
    if getattr(exc, "_neardup_reported", False):
        return
    exc._neardup_reported = True  # type: ignore[attr-defined]
    with _lock:
        _pending.append(_signature(exc))
        for name in _LOGGERS:
            logging.getLogger(name).addFilter(_FILTER)  # once: addFilter skips a duplicate
    _quiet_twisted_stderr()
    logger.error("scrapy-neardup: the crawl cannot start: %s: %s", type(exc).__name__, exc)


def _quiet_twisted_stderr() -> None:
    """Until logging begins, Twisted writes critical events (a Deferred's unhandled error:
    here, this same error) to stderr itself, with a traceback; Scrapy 2.13's
    ``CrawlerProcess`` never begins it. After a refused start that writer is removed; the
    events still reach logging, and the filter above. Not put back: Twisted would write
    this same error when it is logged, and the crawl's process is ending."""
    try:
        from twisted.logger import globalLogBeginner, globalLogPublisher
    except ImportError:
        return
    temporary = getattr(globalLogBeginner, "_temporaryObserver", None)
    if temporary is not None:
        globalLogPublisher.removeObserver(temporary)


def exit_with_error(crawler: Any) -> None:
    """Have the crawl's process exit with status 1 once the crawl has ended (``scrapy
    crawl``, ``CrawlerProcess``), as after a failed start: for a crawl the plugin stopped
    before its end. Scrapy has no public way for a component to set the exit status; it
    exits with 1 when a crawler ends without a spider, so the crawler lets its spider go at
    ``engine_stopped``, the last signal of a crawl, once every component has closed."""
    from scrapy import signals

    def let_spider_go(*args: Any, **kwargs: Any) -> None:
        crawler.spider = None

    crawler.signals.connect(let_spider_go, signal=signals.engine_stopped, weak=False)
