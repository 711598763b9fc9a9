"""Awaiting a ``concurrent.futures.Future`` from Scrapy code, on any Twisted reactor."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred


def _transfer(future: Future, deferred: Deferred) -> None:
    exc = future.exception()
    if exc is not None:
        deferred.errback(exc)
    else:
        deferred.callback(future.result())


async def await_future(future: Future) -> Any:
    """The future's result; the reactor keeps running while a worker computes it."""
    if future.done():
        return future.result()
    from twisted.internet import reactor

    deferred: Deferred = Deferred()
    # The callback runs in the pool's thread: hand the result to the reactor thread.
    future.add_done_callback(lambda f: reactor.callFromThread(_transfer, f, deferred))
    return await maybe_deferred_to_future(deferred)
