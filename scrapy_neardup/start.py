"""A crawl that cannot start says why in one line, and ``scrapy crawl`` exits with 1.

An exception raised while Scrapy builds a crawler's components (``from_crawler``, an add-on's
``update_settings``) or opens its spider fails Scrapy's crawl task: Scrapy sets its exit
code, and asyncio (or Twisted, for the Deferred of ``CrawlerProcess``) then logs "Task
exception was never retrieved" (or "Unhandled error in Deferred") with a traceback through
Scrapy's internals around the message. For the errors this package raises on purpose at start
(:class:`~scrapy_neardup.exceptions.ConfigError`, ``StateError``, ``StorageError``) the
message is the whole story: :func:`refuse_start` logs it once as an ERROR, and the traceback
asyncio or Twisted would log for that same exception is left out. The exception still
propagates, so nothing starts and the exit code is Scrapy's own for a failed start.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from scrapy_neardup.exceptions import NearDupError

logger = logging.getLogger(__name__)

#: How many reported errors the log filter remembers (one crawl reports one).
_REMEMBERED = 32
_reported: list[str] = []
_lock = threading.Lock()
_filter_installed = False


def _signature(exc: BaseException) -> str:
    """The last line of the exception's traceback, as asyncio and Twisted print it."""
    cls = type(exc)
    return f"{cls.__module__}.{cls.__qualname__}: {exc}"


class _ReportedErrors(logging.Filter):
    """Drops the records asyncio and Twisted log about an error already reported."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, NearDupError):
            # Twisted (Scrapy 2.13's CrawlerProcess) may hand over another instance
            return not (getattr(exc, "_neardup_reported", False) or _signature(exc) in _reported)
        if record.name == "twisted" and _reported:
            message = record.getMessage()
            if exc is None and message.strip() == _UNHANDLED:
                return False  # Twisted's heading of the traceback left out just after it
            return not any(line in message for line in _reported)
        return True


#: The record Twisted logs before the traceback of a Deferred's unhandled error.
_UNHANDLED = "Unhandled error in Deferred:"


def refuse_start(exc: NearDupError) -> None:
    """Log ``exc`` once as the reason the crawl does not start; the caller re-raises it."""
    global _filter_installed
    if getattr(exc, "_neardup_reported", False):
        return
    exc._neardup_reported = True  # type: ignore[attr-defined]
    with _lock:
        _reported.append(_signature(exc))
        del _reported[:-_REMEMBERED]
        if not _filter_installed:
            for name in ("asyncio", "twisted"):
                logging.getLogger(name).addFilter(_ReportedErrors())
            _filter_installed = True
    _quiet_twisted_stderr()
    logger.error("scrapy-neardup: the crawl cannot start: %s: %s", type(exc).__name__, exc)


def _quiet_twisted_stderr() -> None:
    """Until logging begins, Twisted writes critical events (a Deferred's unhandled error:
    here, this same error) to stderr itself, with a traceback; Scrapy 2.13's
    ``CrawlerProcess`` never begins it. After a refused start that writer is removed; the
    events still reach logging, and the filter above."""
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
