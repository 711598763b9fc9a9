"""The state interface every implementation shares: one per crawler, a Scrapy extension.

Promises: the dupefilter, the middlewares and the pipeline of one crawler reach the same state
(:func:`crawl_state`), so a URL recorded by one is known to the others and page text found by
the spider middleware reaches the pipeline. ``NEARDUP_STORAGE`` picks the implementation:
``"memory"`` (:class:`FileState`), ``"redis"``, or a subclass's import path. It must not
import the Scrapy components. Rationale: ``docs/design.md#shared-state``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals

from scrapy_neardup.components import component_enabled
from scrapy_neardup.config import NearDupConfig, unknown_settings
from scrapy_neardup.deduplicator import Deduplicator, Signed, Verdict
from scrapy_neardup.exceptions import ConfigError, NearDupError
from scrapy_neardup.extraction import Extractor, SignerSpec
from scrapy_neardup.start import refuse_start
from scrapy_neardup.state import keys
from scrapy_neardup.state.directory import StateDirectory
from scrapy_neardup.urls import url_fingerprint

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from scrapy_neardup.middlewares.pagetext import PendingPage
    from scrapy_neardup.storage.statedb import StateDB

logger = logging.getLogger(__name__)

#: Loaded by path, on use: this module does not import the Scrapy components.
FRONTIER_MIDDLEWARE = "scrapy_neardup.middlewares.FrontierMiddleware"

STORAGE_ALIASES = {
    "memory": "scrapy_neardup.state.files.FileState",
    "redis": "scrapy_neardup.state.redis.RedisState",
}


class NearDupState:
    """URL filter, deduplicator, extractor and the hand-over from middleware to pipeline.

    Subclasses set ``self.dedup`` and ``self.urls`` in ``__init__`` and implement ``_open()``,
    ``_close()``, ``key_seen()`` and ``clear_urls()``; a state whose checks reach a server
    (``remote = True``) runs them off the reactor thread. ``key_prefix``, the spider's name,
    prefixes a shared storage's keys when ``NEARDUP_KEY_PREFIX`` is unset.
    """

    #: The recorded crawl frontier (scrapy_neardup.frontier), where the storage keeps one.
    frontier: Any = None
    #: The state directory (scrapy_neardup.state.directory), where the storage keeps one.
    directory: Any = None
    #: Whether checks reach a server: components then await the async forms of the checks
    #: (:meth:`key_seen_async`, :meth:`check_item`) rather than call the synchronous ones.
    remote = False

    def __init__(
        self,
        config: NearDupConfig,
        stats: Any = None,
        *,
        crawler: Any = None,
        key_prefix: str | None = None,
    ) -> None:
        self.config = config
        self.stats = stats
        self.crawler = crawler
        self.key_prefix = config.key_prefix or key_prefix
        self.dedup: Deduplicator
        self.urls: Any
        spec = SignerSpec(
            config.backend,
            tuple(sorted({**config.backend_kwargs(), **config.verify_params()}.items())),
            config.min_tokens,
            config.max_text_chars,
        )
        # Workers start when the first page needs extraction, not before: a crawl that
        # yields no items (or only items with a text field) never starts them.
        self.extractor = Extractor(
            spec,
            config.workers,
            fast=config.extract_fast,
            on_start=self._prepare_checks,
            page_timeout=config.page_timeout,
            page_memory=config.page_memory,
        )
        self.pending: dict[int, tuple[Any, PendingPage]] = {}
        self._crawled_again: set[str] = set()  # see crawled_again()
        self._users: set[int] = set()
        self._opened = False
        self._closed = False
        self._stopping_with: str | None = None  # the reason of stop_crawl, once called

    @property
    def disk_full(self) -> BaseException | None:
        """The error of a write that met a full disk (a state directory), once the crawl
        stops on it: nothing more is recorded, and the dupefilter queues no more requests."""
        return self.directory.disk_full if self.directory is not None else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupState:
        """A new state for ``crawler``, of the class ``NEARDUP_STORAGE`` names, closed at
        ``spider_closed`` (components use :func:`crawl_state`, which finds it)."""
        try:
            config = NearDupConfig.from_settings(crawler.settings)
            for name, close in unknown_settings(crawler.settings):
                hint = f"; did you mean {close}?" if close else ""
                logger.warning("scrapy-neardup: %s is not a setting of ours%s", name, hint)
            spider = getattr(crawler.spidercls, "name", None)
            state = state_class(config.storage)(
                config, crawler.stats, crawler=crawler, key_prefix=spider
            )
            crawler.signals.connect(state.close, signal=signals.spider_closed)
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                crawler.signals.connect(state.forget, signal=signal)
            state.built()  # e.g. saved state loaded: a StateError stops the start here
        except NearDupError as exc:
            refuse_start(exc)
            raise
        return state

    def _prepare_checks(self) -> None:
        """With the first page, ask a worker for what checking pages needs (MinHash's banding
        for parameters ``minhash._BANDINGS`` lacks: scipy in the reactor would stall it)."""
        adopt = self.dedup.method.adopt
        future = self.extractor.submit_prepared()

        def adopted(done: Any) -> None:
            if not done.cancelled() and done.exception() is None and done.result() is not None:
                adopt(done.result())  # one assignment: safe from the pool's thread

        future.add_done_callback(adopted)

    def itself(self) -> NearDupState:
        """This state (its answer to :data:`STATE_WANTED`)."""
        return self

    def built(self) -> None:
        """Called once the state is made for its crawler (e.g. to load saved state)."""

    def open(self) -> None:
        """Load saved state (once). Raises StateError when it cannot be used."""
        if not self._opened:
            self._opened = True
            try:
                self._open()
            except NearDupError as exc:
                refuse_start(exc)
                raise

    def attach(self, user: object) -> None:
        """A component (dupefilter, pipeline) starts using the state; it is opened."""
        self._users.add(id(user))
        self.open()

    def detach(self, user: object) -> None:
        """A component is done with the state; the last one to leave closes it, so that a
        second filter, or a new process, on the same JOBDIR sees everything recorded."""
        self._users.discard(id(user))
        if not self._users:
            self.close()

    def close(self, *args: Any, **kwargs: Any) -> None:
        """Snapshot and release everything (once); safe to call from a signal handler."""
        if self._closed:
            return
        self._closed = True
        self.extractor.close(wait=False)
        if self.stats is not None and self.extractor.started:
            for name, value in self.extractor.timing().items():
                self.stats.set_value(f"neardup/extract/{name}", value)
        self._close()

    def stop_crawl(self, reason: str) -> None:
        """Close the crawler's spider with ``reason`` as its finish reason (once; nothing
        without a running engine, or once the state is closed)."""
        try:  # Scrapy 2.14+ raises RuntimeError until the crawl starts; 2.13 has None
            engine = self.crawler.engine
        except (AttributeError, RuntimeError):  # no crawler, or no engine yet
            return
        if self._closed or self._stopping_with is not None or not getattr(engine, "running", False):
            return
        self._stopping_with = reason
        if hasattr(engine, "close_spider_async"):
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:  # Scrapy < 2.14
            engine.close_spider(self.crawler.spider, reason)

    def _open(self) -> None:
        raise NotImplementedError

    def _frontier_wanted(self) -> bool:
        """Whether to record the frontier: with a state directory, when FrontierMiddleware
        marks requests done."""
        config, crawler = self.config, self.crawler
        return (
            config.enabled
            and config.url_filter
            and config.state_dir is not None
            and crawler is not None
            and component_enabled(crawler.settings, "SPIDER_MIDDLEWARES", FRONTIER_MIDDLEWARE)
        )

    def _open_directory(
        self, meta: dict[str, str], load: Callable[[StateDB], None] | None = None
    ) -> StateDirectory:
        """Open the state directory (``NEARDUP_STATE_DIR``) with its frontier if wanted;
        ``load`` reads the storage's own part of the database before anything is written."""
        assert self.config.state_dir is not None
        directory = StateDirectory(
            self.config.state_dir,
            flush_interval=self.config.flush_interval,
            stats=self.stats,
            crawler=self.crawler,
            stop_crawl=self.stop_crawl,
        )
        spider = getattr(self.crawler.spidercls, "name", None) if self.crawler else None
        identity = {"spider": spider or "", "storage": "redis" if self.remote else "memory"}
        directory.open(meta, identity, self._frontier_wanted(), load or (lambda db: None))
        self.directory, self.frontier = directory, directory.frontier
        return directory

    async def keys_known(self, keys: list[bytes]) -> list[bool] | None:
        """Whether a shared URL filter holds each of ``keys`` (nothing recorded); None from a
        state that shares none, or cannot say now."""
        return None

    def _close(self) -> None:
        raise NotImplementedError

    def canonical(self, url: str) -> str:
        return keys.canonical(url, self.config)

    def request_key(self, request: Request, fingerprinter: Any = None) -> bytes:
        """What the URL filter records for ``request`` (:func:`.keys.request_key`), by
        ``fingerprinter`` or else the crawler's. Raises InvalidURL."""
        if fingerprinter is None:
            fingerprinter = getattr(self.crawler, "request_fingerprinter", None)
        return keys.request_key(request, self.config, fingerprinter)

    def url_seen(self, url: str) -> bool:
        """Test and set of a URL (a GET of it): True if it was (probably) seen before."""
        return self.key_seen(url_fingerprint(self.canonical(url)))

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        """Test and set of a request key; ``on_new`` is given a new key before it is recorded."""
        raise NotImplementedError

    async def key_seen_async(self, key: bytes) -> bool:
        """:meth:`key_seen` for callers that can wait (the downloader middleware)."""
        return self.key_seen(key)

    async def keys_seen(self, keys: list[bytes]) -> list[bool] | None:
        """Test and set of many keys at once, in order (a key twice: the second is seen), or
        None: not checked, the dupefilter checks each (a local state: no round trip to save)."""
        return None

    def late_check(self, key: bytes) -> Awaitable[bool] | None:
        """A check of ``key`` that :meth:`key_seen` let through before its answer came, if
        any: awaiting it says whether the request must be dropped (remote states only)."""
        return None

    @property
    def has_late_checks(self) -> bool:
        """Whether :meth:`late_check` may find something (cheap: asked for every request)."""
        return False

    def clear_urls(self) -> None:
        """Forget every URL (scrapy-redis's scheduler flushes its dupefilter this way)."""
        raise NotImplementedError

    async def check_item(self, key: str, signed: Signed, text: str | None = None) -> Verdict:
        """The content check of an item whose key (its URL) is ``key``: made unique when
        several items share one, then ``dedup.check_signed``. ``text``, what was signed, is
        kept under the key decided (``NEARDUP_KEEP_TEXT``) for ``neardup-stats --html``."""
        verdict = self.dedup.check_signed(self.unique_key(key), signed)
        if text:
            self.keep_text(verdict.key, self.text_to_keep(text))
        return verdict

    def text_to_keep(self, text: str) -> str:
        """The part of ``text`` kept: what was signed (NEARDUP_MAX_TEXT_CHARS), cut to
        NEARDUP_KEEP_TEXT characters."""
        return text[: min(self.config.keep_text, self.config.max_text_chars)]

    def keep_text(self, key: str, text: str) -> None:
        """Keep a checked document's text (see :mod:`scrapy_neardup.storage.texts`); storages
        without a place for texts (memory without a state directory) keep none."""

    def unique_key(self, key: str) -> str:
        """``key``, or ``key (fetch 2)``, ``key (fetch 3)``... when a kept document or a
        duplicate has it: a URL fetched again (``dont_filter``) is recorded apart."""
        keys = itertools.chain([key], (repeat_key(key, n) for n in itertools.count(2)))
        return next(k for k in keys if not self._key_taken(k))

    def _key_taken(self, key: str) -> bool:
        return key in self.dedup.exact.store or key in self.dedup.members

    def crawled_again(self, url: str) -> None:
        """``url`` is fetched again because its items may not have reached the feed (a
        request re-queued: after a crash, a fail-closed stop, a dead worker's lease)."""
        self._crawled_again.add(url)

    def redelivers(self, item: Any, key: str) -> bool:
        """Whether ``item``, a copy of a document kept under its own URL ``key``, is delivered
        again (at least once beats lost): it came from a request crawled again after a crash
        (the frontier's), or :meth:`crawled_again`. Once per key."""
        if key in self._crawled_again:
            self._crawled_again.discard(key)
            return True
        return self.frontier is not None and self.frontier.redelivers(item, key)

    def register(self, item: Any, page: PendingPage) -> None:
        """Hand ``page`` (the item's page, being read) from the middleware to the pipeline."""
        self.pending[id(item)] = (item, page)

    def take(self, item: Any) -> PendingPage | None:
        found = self.pending.pop(id(item), None)
        return found[1] if found is not None and found[0] is item else None

    def forget(self, item: Any = None, *args: Any, **kwargs: Any) -> None:
        if item is not None:
            self.pending.pop(id(item), None)

    def inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    def set_final_stats(self) -> None:
        if self.stats is not None:
            self.stats.set_value("neardup/urls/size_bytes", self.urls.size_in_bytes)
            self.stats.set_value("neardup/documents/indexed", len(self.dedup))


def state_class(storage: str) -> type[NearDupState]:
    """The implementation ``NEARDUP_STORAGE`` names: an alias or an import path."""
    from scrapy.utils.misc import load_object

    path = STORAGE_ALIASES.get(storage.lower(), storage)
    try:
        cls = load_object(path)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise ConfigError(
            "NEARDUP_STORAGE", storage, f"'memory', 'redis' or an importable class ({exc})"
        ) from None
    if not (isinstance(cls, type) and issubclass(cls, NearDupState)):
        raise ConfigError(
            "NEARDUP_STORAGE", storage, "a subclass of scrapy_neardup.state.NearDupState"
        )
    return cls


#: A signal of a crawler's own: the state made for components wired by hand (no extension)
#: answers it with itself while it lives (it holds no reference to the state).
STATE_WANTED = object()


def crawl_state(crawler: Crawler) -> NearDupState:
    """The crawler's one state: its :class:`NearDupState` extension (the Addon lists it in
    ``EXTENSIONS``). Components wired by hand without it share the state the first of them
    made, which answers :data:`STATE_WANTED` on the crawler's signals."""
    state = crawler.get_extension(NearDupState)
    if state is not None:
        return state
    for _, answer in crawler.signals.send_catch_log(STATE_WANTED):
        if isinstance(answer, NearDupState):
            return answer
    made = NearDupState.from_crawler(crawler)
    crawler.signals.connect(made.itself, signal=STATE_WANTED)
    return made


def repeat_key(key: str, n: int) -> str:
    """The key of the ``n``-th fetch of ``key``'s URL. Not a fragment (``#2`` read as one):
    a space cannot be in a URL, so the key cannot be taken for another URL's."""
    return f"{key} (fetch {n})"
