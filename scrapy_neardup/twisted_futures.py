"""Awaiting a ``concurrent.futures.Future`` and scheduling calls from Scrapy code, on whatever
event loop runs the crawl: a Twisted reactor (any of them), or asyncio alone (Scrapy 2.19's
``TWISTED_REACTOR_ENABLED = False``, where importing ``twisted.internet.reactor`` raises)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


def installed_reactor() -> Any:
    """The installed Twisted reactor, or None (never installs one)."""
    from scrapy.utils.reactor import is_reactor_installed

    if not is_reactor_installed():
        return None
    from twisted.internet import reactor

    return reactor


def _transfer(future: Future, deferred: Any) -> None:
    exc = future.exception()
    if exc is not None:
        deferred.errback(exc)
    else:
        deferred.callback(future.result())


async def await_future(future: Future) -> Any:
    """The future's result; the loop keeps running while a worker computes it."""
    if future.done():
        return future.result()
    reactor = installed_reactor()
    if reactor is None:
        return await asyncio.wrap_future(future)
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet.defer import Deferred

    deferred: Deferred = Deferred()
    # The callback runs in the pool's thread: hand the result to the reactor thread.
    future.add_done_callback(lambda f: reactor.callFromThread(_transfer, f, deferred))
    return await maybe_deferred_to_future(deferred)


def call_soon(fn: Callable[..., Any], *args: Any) -> None:
    """``fn(*args)`` at the loop's next turn (from the loop's own thread)."""
    reactor = installed_reactor()
    if reactor is not None:
        reactor.callLater(0, fn, *args)
    else:
        asyncio.get_running_loop().call_soon(fn, *args)


class LoopHandle:
    """The loop running in the thread that made it, to be called back from other threads."""

    def __init__(self, reactor: Any = None, loop: asyncio.AbstractEventLoop | None = None):
        self.reactor, self.loop = reactor, loop

    @classmethod
    def current(cls) -> LoopHandle | None:
        """The loop running the crawl in this thread, or None (a script, a test)."""
        reactor = installed_reactor()
        if reactor is not None:
            return cls(reactor=reactor) if reactor.running else None
        try:
            return cls(loop=asyncio.get_running_loop())
        except RuntimeError:
            return None

    @property
    def running(self) -> bool:
        if self.reactor is not None:
            return bool(self.reactor.running)
        return self.loop is not None and self.loop.is_running() and not self.loop.is_closed()

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` at the loop's next turn; from the loop's own thread."""
        if self.reactor is not None:
            self.reactor.callLater(0, fn, *args)
        elif self.loop is not None:
            self.loop.call_soon(fn, *args)

    def call_from_thread(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` in the loop's thread; from any thread."""
        if self.reactor is not None:
            self.reactor.callFromThread(fn, *args)
        elif self.loop is not None:
            self.loop.call_soon_threadsafe(fn, *args)


def call_every(period: float, fn: Callable[[], None]) -> Callable[[], None]:
    """``fn()`` every ``period`` seconds at the loop's turns (from the loop's own thread),
    the first call ``period`` from now; returns what stops it. ``fn`` must not raise.
    Timed by asyncio's loop where one runs (Scrapy's default reactor runs one), whose clock
    is monotonic; Twisted's ``callLater`` follows the wall clock."""
    try:
        later = asyncio.get_running_loop().call_later
        reactor = None
    except RuntimeError:  # another Twisted reactor
        reactor = installed_reactor()
        later = reactor.callLater
    handle: Any = None

    def tick() -> None:
        nonlocal handle
        fn()
        if handle is not None:
            handle = later(period, tick)

    def stop() -> None:
        nonlocal handle
        if handle is not None:
            pending, handle = handle, None
            if reactor is None or pending.active():
                pending.cancel()

    handle = later(period, tick)
    return stop
