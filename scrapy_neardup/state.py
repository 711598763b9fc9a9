"""One crawl's state, shared by every component of one crawler.

The dupefilter, the two middlewares and the pipeline of a crawler all reach the same
:class:`NearDupState` through :meth:`NearDupState.from_crawler`, so a URL recorded by the
downloader middleware is known to the dupefilter, and page text found by the spider middleware
reaches the pipeline. With a state directory (``JOBDIR/neardup`` by default) it is loaded at
open, journaled as it changes, and snapshotted at close; see
:mod:`scrapy_neardup.storage.journal` for what survives a crash.

Files in the state directory::

    urls.bloom       ScalableBloomFilter.to_bytes() snapshot (format in scrapy_neardup.urls)
    urls.journal     journal of 16-byte canonical-URL fingerprints added since the snapshot
    urls.sqlite      every fingerprint, read only to confirm a Bloom positive before a
                     request is dropped (NEARDUP_URL_CONFIRM; scrapy_neardup.storage.fingerprints)
    content.state    Deduplicator.to_bytes() snapshot (format in scrapy_neardup.engine)
    content.journal  journal of b"H" (kept) and b"M" (duplicate) records, encoded below
    frontier.journal requests let through the URL filter and not done yet, so that a crawl
                     killed with SIGKILL crawls them again (see scrapy_neardup.frontier)

With ``NEARDUP_STORAGE = "redis"`` nothing is written to the state directory: the URL filter,
the indexes and the clusters live in Redis (see :mod:`scrapy_neardup.storage.redis`), shared
by every crawler process that uses the same ``NEARDUP_KEY_PREFIX``. When Redis is slow or
gone, :meth:`NearDupState._redis_call` decides, per ``NEARDUP_REDIS_ON_ERROR``:

- ``fail-open`` (default): nothing is lost. URLs and items are checked against what this
  process knows: every URL it recorded or was told of (a local Bloom filter mirrors them) and
  the items it kept during the outage. What is new to it is crawled or kept "unchecked"
  (counted in ``neardup/urls/unchecked`` and ``neardup/items/unchecked``): another crawler
  may have it. Unchecked URLs and items are remembered (up to ``BACKLOG_MAX``) and written to
  Redis when it is back, so the other crawlers learn of them.
- ``fail-closed``: the crawl is stopped (``close_spider`` with reason
  ``neardup_redis_unavailable``); URLs and items met until it stops are dropped, never let
  through unchecked.

One WARNING per outage, not per item; Redis is asked again at most every
``RETRY_INTERVAL`` seconds (so an outage does not block the reactor on every request) and
the client reconnects by itself when it is back.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import struct
import tempfile
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from scrapy_neardup.algorithms.exact import ExactMethod
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.engine import Deduplicator, Member, Signed, Verdict
from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.extraction import Extracted, Extractor
from scrapy_neardup.frontier import Frontier
from scrapy_neardup.storage.fingerprints import FingerprintStore
from scrapy_neardup.storage.journal import Journal, write_snapshot
from scrapy_neardup.urls import ScalableBloomFilter, canonical_url, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Seconds between two attempts to reach a Redis that went away.
RETRY_INTERVAL = 1.0
#: URLs and kept documents remembered during an outage, written to Redis when it is back.
BACKLOG_MAX = 100_000

URL_SNAPSHOT, URL_JOURNAL = "urls.bloom", "urls.journal"
URL_CONFIRM = "urls.sqlite"
CONTENT_SNAPSHOT, CONTENT_JOURNAL = "content.state", "content.journal"


@dataclass(frozen=True)
class SignerSpec:
    """A picklable recipe for ``sign(text) -> Signed``, built once in each worker process."""

    method: str
    params: tuple[tuple[str, Any], ...]
    min_tokens: int
    max_chars: int

    def __call__(self) -> Any:
        dedup = Deduplicator(self.method, min_tokens=self.min_tokens, **dict(self.params))
        max_chars = self.max_chars
        return lambda text: dedup.sign(text[:max_chars])


@dataclass
class PageText:
    """What the spider middleware found for an item: its page's URL, text and signatures."""

    url: str
    extracted: Extracted
    signed: Signed | None


def _blob(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def _blobs(payload: bytes, pos: int) -> tuple[bytes, int]:
    (length,) = struct.unpack_from("<I", payload, pos)
    end = pos + 4 + length
    if end > len(payload):
        raise ValueError("record shorter than its lengths say")
    return payload[pos + 4 : end], end


class ContentJournal:
    """Records every decision of a :class:`Deduplicator` in a :class:`Journal`."""

    def __init__(self, journal: Journal, dedup: Deduplicator) -> None:
        self.journal = journal
        self.dedup = dedup

    def head(self, key: str, signed: Signed) -> None:
        near = b"" if signed.near is None else self.dedup.near.method.encode(signed.near)
        flag = b"\x00" if signed.near is None else b"\x01"
        exact = self.dedup.exact.method.encode(signed.exact)
        self.journal.append(
            b"H"
            + _blob(key.encode())
            + _blob(exact)
            + flag
            + _blob(near)
            + struct.pack("<I", signed.tokens)
        )

    def member(self, m: Member) -> None:
        self.journal.append(
            b"M"
            + _blob(m.key.encode())
            + _blob(m.head.encode())
            + _blob(m.method.encode())
            + struct.pack("<d", m.similarity)
        )

    def replay(self, payload: bytes) -> None:
        kind = payload[:1]
        key, pos = _blobs(payload, 1)
        if kind == b"H":
            exact, pos = _blobs(payload, pos)
            has_near = payload[pos : pos + 1] == b"\x01"
            near, pos = _blobs(payload, pos + 1)
            (tokens,) = struct.unpack_from("<I", payload, pos)
            signed = Signed(
                self.dedup.exact.method.decode(exact),
                # "is not None": an empty Index is falsy (it has a __len__)
                self.dedup.near.method.decode(near)
                if has_near and self.dedup.near is not None
                else None,
                tokens,
            )
            self.dedup.restore_head(key.decode(), signed)
        elif kind == b"M":
            head, pos = _blobs(payload, pos)
            method, pos = _blobs(payload, pos)
            (similarity,) = struct.unpack_from("<d", payload, pos)
            self.dedup.restore_member(
                Member(key.decode(), head.decode(), method.decode(), similarity)
            )
        else:
            raise ValueError(f"unknown record type {kind!r}")


class GuardedDeduplicator(Deduplicator):
    """A :class:`Deduplicator` on Redis stores whose checks go through the state's outage
    handling (``guard(key, signed, check)``)."""

    def __init__(self, *args: Any, guard: Callable[..., Verdict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard

    def check_signed(self, key: str, signed: Signed) -> Verdict:
        return self._guard(key, signed, super().check_signed)


class NearDupState:
    """URL filter, deduplicator, extractor and the hand-over from middleware to pipeline.

    ``key_prefix`` (Redis storage only) is used when ``NEARDUP_KEY_PREFIX`` is unset;
    :meth:`from_crawler` passes the spider's name.
    """

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
        self.urls: Any = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        method = config.make_method()
        self.redis: Any = None
        if config.storage == "redis":
            self._setup_redis(method, config.key_prefix or key_prefix)
        else:
            self.dedup = Deduplicator(method, min_tokens=config.min_tokens)
        spec = SignerSpec(
            config.backend,
            tuple(sorted(config.method_params().items())),
            config.min_tokens,
            config.max_text_chars,
        )
        self.extractor = Extractor(spec, config.workers, fast=config.extract_fast)
        self.pending: dict[int, tuple[Any, PageText]] = {}
        self._url_journal: Journal | None = None
        self._content_journal: Journal | None = None
        self.frontier: Frontier | None = None
        self.confirm: FingerprintStore | None = None
        self._confirm_tmp: str | None = None
        self._opened = False
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupState:
        """The crawler's state, made (from its settings) on first use."""
        state = _STATES.get(crawler)
        if state is None:
            from scrapy import signals

            state = cls(
                NearDupConfig.from_settings(crawler.settings),
                crawler.stats,
                crawler=crawler,
                key_prefix=getattr(crawler.spidercls, "name", None),
            )
            _STATES[crawler] = state
            crawler.signals.connect(state.close, signal=signals.spider_closed)
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                crawler.signals.connect(state.forget, signal=signal)
            if state.config.state_dir is not None and state.config.storage == "memory":
                # Saved state is read now, while the crawler is built: a StateError then
                # stops the crawl with one clear message, not errors from a half-open engine.
                try:
                    state.open()
                except StateError:
                    state.extractor.close(wait=False)
                    raise
        return state

    def open(self) -> None:
        """Load saved state (once). Raises StateError when it cannot be used."""
        if self._opened:
            return
        self._opened = True
        if self.config.enabled and self.config.extract:
            self.extractor.start()
        if self.redis is not None:
            self._open_redis()
            return
        directory = self.config.state_dir
        if directory is None:
            self._open_confirm(None)
            return
        directory.mkdir(parents=True, exist_ok=True)
        try:
            self._load_urls(directory)
            self._load_content(directory)
            self._load_frontier(directory)
        except BaseException:
            self._opened = False  # so close() never writes a snapshot over unread state
            frontier = self.frontier.journal if self.frontier is not None else None
            for journal in (self._url_journal, self._content_journal, frontier):
                if journal is not None:
                    journal.close()
            raise
        logger.info(
            "scrapy-neardup: state in %s: %d URLs, %d documents kept, %d duplicates",
            directory,
            len(self.urls),
            len(self.dedup),
            len(self.dedup.members),
        )

    def _load_urls(self, directory: Path) -> None:
        snapshot = directory / URL_SNAPSHOT
        if snapshot.exists():
            try:
                self.urls = ScalableBloomFilter.from_bytes(snapshot.read_bytes())
            except StateError as exc:
                raise StateError(str(exc), path=str(snapshot)) from None
        self._open_confirm(directory)
        self._url_journal = Journal(directory / URL_JOURNAL, self.config.flush_interval)
        for fingerprint in self._url_journal.open():
            self._record(fingerprint)

    def _record(self, fingerprint: bytes) -> bool:
        """Add to the Bloom filter and the confirming store; True if the Bloom had it."""
        if self.confirm is not None:
            self.confirm.add(fingerprint)
        return self.urls.add(fingerprint)

    def _open_confirm(self, directory: Path | None) -> None:
        """The exact fingerprint store that confirms Bloom positives (NEARDUP_URL_CONFIRM).

        Without a state directory it lives in a temporary file, removed at close. A state
        directory whose Bloom filter predates its store cannot confirm the older URLs, so
        confirming is then off for the crawl (logged): a positive is trusted as before.
        """
        if not (self.config.enabled and self.config.url_filter and self.config.url_confirm):
            return
        if directory is None:
            handle, self._confirm_tmp = tempfile.mkstemp(prefix="neardup-urls-", suffix=".sqlite")
            os.close(handle)
            path = Path(self._confirm_tmp)
        else:
            path = directory / URL_CONFIRM
        is_new = not path.exists() or path.stat().st_size == 0
        store = FingerprintStore(path, self.config.flush_interval)
        if is_new and len(self.urls):
            logger.warning(
                "scrapy-neardup: %s has %d URLs but no fingerprint store; Bloom positives "
                "are not confirmed in this crawl",
                directory,
                len(self.urls),
            )
            store.close()
            path.unlink(missing_ok=True)
            return
        self.confirm = store

    def _load_content(self, directory: Path) -> None:
        snapshot = directory / CONTENT_SNAPSHOT
        if snapshot.exists():
            try:
                self.dedup.load_bytes(snapshot.read_bytes())
            except StateError as exc:
                raise StateError(str(exc), path=str(snapshot)) from None
        self._content_journal = Journal(directory / CONTENT_JOURNAL, self.config.flush_interval)
        recorder = ContentJournal(self._content_journal, self.dedup)
        for payload in self._content_journal.open():
            try:
                recorder.replay(payload)
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise StateError(
                    f"unreadable journal record: {exc}", path=str(self._content_journal.path)
                ) from None
        self.dedup.recorder = recorder

    def _load_frontier(self, directory: Path) -> None:
        """The requests still to crawl (see :mod:`scrapy_neardup.frontier`), and the order in
        which the journals are made durable: content, then frontier, then URLs."""
        journals = [self._url_journal, self._content_journal]
        if self.config.enabled and self.config.url_filter:
            self.frontier = Frontier(directory, self.config.flush_interval, self.stats)
            self.frontier.crawler = self.crawler
            self.frontier.open()
            for fingerprint in self.frontier.pending:
                if not self._record(fingerprint):  # journaled as queued, lost as recorded
                    self._url_journal.append(fingerprint)
            journals.append(self.frontier.journal)
            self.frontier.journal.before_sync = self._content_journal.sync
            self._url_journal.before_sync = self.frontier.sync
        else:
            self._url_journal.before_sync = self._content_journal.sync
        torn = sum(1 for journal in journals if journal is not None and journal.torn)
        if torn:
            self.inc("neardup/state/torn_journals", torn)

    def sync(self) -> None:
        for journal in (self._url_journal, self._content_journal):
            if journal is not None:
                journal.sync()
        if self.confirm is not None:
            self.confirm.commit()

    def close(self, *args: Any, **kwargs: Any) -> None:
        """Snapshot and release everything (once); safe to call from a signal handler."""
        if self._closed:
            return
        self._closed = True
        self.extractor.close(wait=False)
        if self.confirm is not None:
            if self.stats is not None:
                self.stats.set_value(
                    "neardup/urls/false_positives_total", self.confirm.counter("false_positives")
                )
            self.confirm.close()
            self.confirm = None
        if self._confirm_tmp is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(self._confirm_tmp + suffix).unlink(missing_ok=True)
        if self.redis is not None:
            self._close_redis()
            return
        directory = self.config.state_dir
        if directory is not None and self._opened:
            write_snapshot(directory / URL_SNAPSHOT, self.urls.to_bytes())
            write_snapshot(directory / CONTENT_SNAPSHOT, self.dedup.to_bytes())
            for journal in (self._url_journal, self._content_journal):
                if journal is not None:
                    journal.reset()
                    journal.close()
            if self.frontier is not None:
                self.frontier.close()
        if self.stats is not None:
            self.stats.set_value("neardup/urls/size_bytes", self.urls.size_in_bytes)
            self.stats.set_value("neardup/documents/indexed", len(self.dedup))

    # -- URLs -----------------------------------------------------------------------------

    def canonical(self, url: str) -> str:
        return canonical_url(
            url,
            strip_params=self.config.strip_params,
            strip_trailing_slash=self.config.strip_trailing_slash,
        )

    def url_seen(self, canonical: str, on_new: Callable[[bytes], None] | None = None) -> bool:
        """Test and set: True if the canonical URL was (probably) seen before. ``on_new`` is
        given the fingerprint of a new URL before it is journaled."""
        fingerprint = url_fingerprint(canonical)
        if self.redis is not None:
            return self._redis_url_seen(fingerprint)
        if self.urls.add(fingerprint):
            if self.confirm is None or fingerprint in self.confirm:
                return True
            # A Bloom false positive: without the store, a page nobody fetched was dropped.
            self.inc("neardup/urls/false_positives")
            self.confirm.count("false_positives")
            if self.config.debug:
                logger.debug("scrapy-neardup: Bloom false positive confirmed new: %s", canonical)
        if self.confirm is not None:
            self.confirm.add(fingerprint)
        if on_new is not None:
            on_new(fingerprint)
        if self._url_journal is not None:
            self._url_journal.append(fingerprint)
        self.inc("neardup/urls/recorded")
        return False

    # -- pages and items ------------------------------------------------------------------

    def register(self, item: Any, page: PageText) -> None:
        self.pending[id(item)] = (item, page)

    def take(self, item: Any) -> PageText | None:
        found = self.pending.pop(id(item), None)
        return found[1] if found is not None and found[0] is item else None

    def forget(self, item: Any = None, *args: Any, **kwargs: Any) -> None:
        if item is not None:
            self.pending.pop(id(item), None)

    def inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)

    # -- Redis ----------------------------------------------------------------------------

    def _setup_redis(self, method: Any, prefix: str | None) -> None:
        from scrapy_neardup.storage import redis as redis_storage  # needs the redis extra

        if not prefix:
            raise ConfigError(
                "NEARDUP_KEY_PREFIX", prefix, "a key prefix (there is no spider name to use)"
            )
        config = self.config
        self.redis = redis_storage
        self.key_prefix = prefix
        self.redis_client = redis_storage.connect(config.redis_url, config.redis_timeout)
        # Bloom test-and-set must not be retried blindly (see RedisBloomFilter).
        self.redis_url_client = redis_storage.connect(
            config.redis_url, config.redis_timeout, retries=0
        )
        self.recorder = redis_storage.RedisRecorder(self.redis_client, prefix)
        exact = ExactMethod()

        def stores(name: str) -> Any:
            codec = exact if name == "exact" else method
            return redis_storage.RedisBucketStore(self.redis_client, prefix, name, codec)

        self.dedup = GuardedDeduplicator(
            method, min_tokens=config.min_tokens, stores=stores, guard=self._redis_check
        )
        self.dedup.recorder = self.recorder
        self._redis_ready = False
        self._outage: float | None = None
        self._retry_at = 0.0
        self._stopping = False
        self._url_backlog: deque[bytes] = deque(maxlen=BACKLOG_MAX)
        self._doc_backlog: deque[tuple[str, Signed]] = deque(maxlen=BACKLOG_MAX)
        # This process's own URLs, to answer from during an outage (about 2 bytes a URL).
        self._local_urls = ScalableBloomFilter(
            min(config.bloom_capacity, 100_000), config.bloom_error_rate
        )
        self._outage_dedup: Deduplicator | None = None  # items kept during an outage
        self._unchecked = 0

    def _where(self) -> str:
        return f"{self.redis_client.get_connection_kwargs().get('host', '?')}:" + str(
            self.redis_client.get_connection_kwargs().get("port", "?")
        )

    def _connect_redis(self) -> None:
        """First contact: record the crawl's parameters, or check them against Redis's."""
        if self._redis_ready:
            return
        self.redis.check_meta(
            self.redis_client,
            self.key_prefix,
            "content",
            {
                "method": self.dedup.method.name,
                "params": self.dedup.method.params(),
                "min_tokens": self.dedup.min_tokens,
            },
        )
        urls = self.redis.url_filter(
            self.redis_url_client,
            self.key_prefix,
            self.config.bloom_capacity,
            self.config.bloom_error_rate,
        )
        self.redis.check_meta(self.redis_client, self.key_prefix, "urls", urls.params())
        self.urls = urls
        self._redis_ready = True

    def _open_redis(self) -> None:
        try:
            self._connect_redis()
        except self.redis.REDIS_ERRORS as exc:
            if self.config.redis_on_error == "fail-closed":
                raise StateError(
                    f"Redis at {self.config.redis_url} is unavailable ({exc}) and "
                    "NEARDUP_REDIS_ON_ERROR is 'fail-closed'"
                ) from None
            self._redis_failed(exc)
            return
        with contextlib.suppress(*self.redis.REDIS_ERRORS):
            logger.info(
                "scrapy-neardup: state in Redis %s under %s:neardup:* : %d URLs, %d documents kept",
                self._where(),
                self.key_prefix,
                len(self.urls),
                len(self.dedup),
            )

    def _close_redis(self) -> None:
        if self._outage is not None:
            self._retry_at = 0.0  # one last try to write the backlog
            self._redis_call(lambda: None, lambda: None)
        if self._url_backlog or self._doc_backlog:
            logger.warning(
                "scrapy-neardup: Redis was not back before the crawl ended: %d URLs and %d "
                "kept items met during the outage were not recorded in it",
                len(self._url_backlog),
                len(self._doc_backlog),
            )
        if self.stats is not None and self._redis_ready:
            try:
                self.stats.set_value("neardup/urls/size_bytes", self.urls.size_in_bytes)
                self.stats.set_value("neardup/documents/indexed", len(self.dedup))
            except self.redis.REDIS_ERRORS:
                pass
        for client in (self.redis_client, self.redis_url_client):
            client.close()

    def _redis_call(self, call: Callable[[], T], unchecked: Callable[[], T]) -> T:
        """``call()``, or ``unchecked()`` while Redis is unavailable (see the module docstring)."""
        if self._outage is not None and time.monotonic() < self._retry_at:
            return unchecked()
        try:
            self._connect_redis()
            if self._outage is not None:
                self.redis_client.ping()  # back for real before saying so
                self._recover()
            return call()
        except self.redis.REDIS_ERRORS as exc:
            self._redis_failed(exc)
            return unchecked()

    def _redis_failed(self, exc: BaseException) -> None:
        self.inc("neardup/redis/errors")
        now = time.monotonic()
        self._retry_at = now + RETRY_INTERVAL
        if self._outage is not None:
            return
        self._outage = now
        closed = self.config.redis_on_error == "fail-closed"
        logger.log(
            logging.ERROR if closed else logging.WARNING,
            "scrapy-neardup: Redis at %s is unavailable (%s: %s); NEARDUP_REDIS_ON_ERROR=%r: %s",
            self._where(),
            type(exc).__name__,
            exc,
            self.config.redis_on_error,
            "stopping the crawl"
            if closed
            else "URLs and items are let through unchecked until it is back",
        )
        if closed:
            self._stop_crawl()

    def _recover(self) -> None:
        """Redis answers again: write what was let through meanwhile, then say so."""
        if self._url_backlog:
            self.urls.add_many(list(self._url_backlog))
            self._url_backlog.clear()
        while self._doc_backlog:
            key, signed = self._doc_backlog[0]
            self.dedup.restore_head(key, signed)
            self._doc_backlog.popleft()
        logger.warning(
            "scrapy-neardup: Redis at %s is back after %.1f s (%d URLs and items let through "
            "unchecked meanwhile)",
            self._where(),
            time.monotonic() - (self._outage or 0.0),
            self._unchecked,
        )
        self._outage = None
        self._outage_dedup = None
        self._unchecked = 0

    def _stop_crawl(self) -> None:
        if self._stopping or self.crawler is None or self.crawler.engine is None:
            return
        self._stopping = True
        reason = "neardup_redis_unavailable"
        engine = self.crawler.engine
        if hasattr(engine, "close_spider_async"):
            from scrapy.utils.defer import deferred_from_coro

            deferred_from_coro(engine.close_spider_async(reason=reason))
        else:  # Scrapy < 2.14
            engine.close_spider(self.crawler.spider, reason)

    def _redis_url_seen(self, fingerprint: bytes) -> bool:
        def unchecked() -> bool:
            if self.config.redis_on_error == "fail-closed":
                self.inc("neardup/urls/unchecked")
                return True  # not crawled: the crawl is stopping
            if self._local_urls.add(fingerprint):
                return True  # this process has met it: filtered as usual
            self.inc("neardup/urls/unchecked")
            self._unchecked += 1
            self._url_backlog.append(fingerprint)
            return False

        def check() -> bool:
            seen = self.urls.add(fingerprint)
            self._local_urls.add(fingerprint)
            if not seen:
                self.inc("neardup/urls/recorded")
            return seen

        return self._redis_call(check, unchecked)

    def _redis_check(
        self, key: str, signed: Signed, check: Callable[[str, Signed], Verdict]
    ) -> Verdict:
        def unchecked() -> Verdict:
            if self.config.redis_on_error == "fail-closed":
                from scrapy.exceptions import DropItem

                self.inc("neardup/items/unchecked")
                raise DropItem(
                    "not checked for near-duplicates: Redis is unavailable and "
                    "NEARDUP_REDIS_ON_ERROR is 'fail-closed'"
                )
            if self._outage_dedup is None:
                self._outage_dedup = Deduplicator(
                    self.dedup.method, min_tokens=self.dedup.min_tokens
                )
            verdict = self._outage_dedup.check_signed(key, signed)
            if not verdict.is_duplicate:
                self.inc("neardup/items/unchecked")
                self._unchecked += 1
                self._doc_backlog.append((key, signed))
            return verdict

        return self._redis_call(lambda: check(key, signed), unchecked)


def freeze_startup_objects() -> None:
    """Exempt the objects that exist when the crawl starts from the garbage collector.

    They are the crawl's long-lived part (modules of Scrapy, numpy, datasketch and scipy,
    the loaded state), yet every full collection walks them all: in a crawl with the plugin
    that blocked the reactor for 80-120 ms each time (measured by ``bench/bench_crawl.py``).
    :func:`gc.freeze` moves them out of the collector's reach, as CPython's docs suggest
    for a process's startup objects; objects created later are collected as usual.
    """
    gc.collect()
    gc.freeze()


_STATES: weakref.WeakKeyDictionary[Any, NearDupState] = weakref.WeakKeyDictionary()
