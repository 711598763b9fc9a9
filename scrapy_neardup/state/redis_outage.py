"""What the Redis state does when a call fails (``NEARDUP_REDIS_ON_ERROR``).

Promises: a failed call (an outage or a refusal) starts an outage, said once. "fail-closed"
stops the crawl (its own finish reason, exit status 1) and drops items unchecked, their
requests queued again; "fail-open" lets URLs and items through, remembered (BACKLOG_MAX of
each) and checked against Redis once it is back: an item it held a copy of is recorded as a
late duplicate. A record that cannot be read is left out and counted. ``docs/design.md#outages``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from scrapy.exceptions import DropItem

from scrapy_neardup.deduplicator import Deduplicator, Member, Signed, Verdict
from scrapy_neardup.meta import RECOVERED_META
from scrapy_neardup.start import exit_with_error
from scrapy_neardup.state.base import NearDupState, repeat_key
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.twisted_futures import LoopHandle

logger = logging.getLogger(__name__)

#: Seconds between two health probes of a Redis that went away.
RETRY_INTERVAL = 1.0
#: URLs and kept documents remembered during an outage, written to Redis when it is back.
BACKLOG_MAX = 100_000
#: URLs written to Redis per call when an outage ends.
URL_BATCH = 1000
#: The finish reason of a crawl stopped by NEARDUP_REDIS_ON_ERROR = "fail-closed".
STOP_REASON = "neardup_redis_unavailable"
#: Records that cannot be read logged at WARNING; the next at DEBUG.
FIRST_LOGGED = 5


class RedisUnavailable(Exception):
    """A call was not made, or failed: Redis is in an outage (raised in the state's threads)."""


class UncheckedItem(DropItem):
    """An item dropped unchecked by ``"fail-closed"`` during an outage: its request is put
    back in the scheduler's queue (fetched again on resume, with ``JOBDIR``) and is not done
    in the frontier."""


class GuardedDeduplicator(Deduplicator):
    """A :class:`Deduplicator` on Redis stores whose ``check_signed`` goes through the state's
    content thread and outage handling (``guard``); ``check_direct`` is the check itself."""

    def __init__(self, *args: Any, guard: Callable[[str, Signed], Verdict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard

    def check_signed(self, key: str, signed: Signed) -> Verdict:
        return self._guard(key, signed)

    def check_direct(self, key: str, signed: Signed) -> Verdict:
        return super().check_signed(key, signed)


class OutageHandling(NearDupState):
    """The outages of :class:`~scrapy_neardup.state.redis.RedisState`, which sets the
    clients, ``urls``, ``dedup``, ``recorder``, the Redis modules, and probes Redis."""

    redis_client: Any
    redis_url_client: Any
    dedup: GuardedDeduplicator
    recorder: Any
    errors: tuple[type[BaseException], ...]
    _client_mod: Any
    _index_mod: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Outage, backlogs, the local URL filter and late checks: touched from every thread.
        self._lock = threading.Lock()
        self._outage: float | None = None  # when the outage on now started
        self._retry_at = 0.0  # when the next probe may start
        self._stopping = False
        self._url_backlog: deque[bytes] = deque(maxlen=BACKLOG_MAX)
        # Items kept unchecked: (key asked for, key given during the outage, signatures, key
        # a check that failed may have written in Redis all the same, as its reply was lost);
        # and (key asked for, duplicate) of items found copies of those; content thread only.
        self._doc_backlog: deque[tuple[str, str, Signed, str | None]] = deque(maxlen=BACKLOG_MAX)
        self._member_backlog: deque[tuple[str, Member]] = deque(maxlen=BACKLOG_MAX)
        self._heads: dict[str, str] = {}  # key given during the outage -> its head in Redis
        self._local_urls = self._new_local_urls()
        self._outage_dedup: Deduplicator | None = None  # items kept during an outage
        # What the current outage let through, and what of it Redis knew once back.
        self._outage_counts: Counter[str] = Counter()
        self._loop: LoopHandle | None = None  # the crawl's loop, for calls from the threads
        self._loop_thread: int | None = None
        self._corrupt_logged = 0

    def _new_local_urls(self) -> ScalableBloomFilter:
        """This process's URLs, at a tenth of the error rate of Redis's filter."""
        config = self.config
        return ScalableBloomFilter(
            min(config.bloom_capacity, 100_000), max(config.bloom_error_rate / 10, 1e-12)
        )

    def _where(self) -> str:
        kwargs = self.redis_client.get_connection_kwargs()
        return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"

    def _redis_failed(self, exc: BaseException) -> None:
        """A call failed (any thread): start an outage, unless one is on."""
        self.inc("neardup/redis/errors")
        with self._lock:
            now = time.monotonic()
            self._retry_at = now + RETRY_INTERVAL
            if self._outage is not None:
                return
            self._outage = now
        closed = self.config.redis_on_error == "fail-closed"
        logger.log(
            logging.ERROR if closed else logging.WARNING,
            "scrapy-neardup: Redis at %s %s; NEARDUP_REDIS_ON_ERROR=%r: %s",
            self._where(),
            self._client_mod.failure(exc),
            self.config.redis_on_error,
            "stopping the crawl"
            if closed
            else "URLs and items are let through unchecked until it answers again",
        )
        if closed:  # in the loop's thread (a reactor started after the state opened: it)
            loop = self._loop if self._loop is not None and self._loop.running else None
            loop = loop or LoopHandle.current()
            if loop is not None and loop.running and threading.get_ident() != self._loop_thread:
                loop.call_from_thread(self._stop_crawl)
            else:
                self._stop_crawl()

    def _stop_crawl(self) -> bool:
        """Fail-closed, in the loop's thread: pause the engine (what is queued meanwhile waits
        in its queue), stop the crawl, exit with 1. Whether a crawl is stopping so."""
        if self._stopping:
            return True
        engine = getattr(self.crawler, "engine", None)
        if engine is None or not engine.running:
            return False
        self._stopping = True
        engine.pause()
        exit_with_error(self.crawler)
        self.stop_crawl(STOP_REASON)
        return True

    def _fetch_again(
        self, item: Any = None, response: Any = None, exception: Any = None, **kwargs: Any
    ) -> None:
        """An item dropped unchecked: its request goes back to the scheduler (with JOBDIR, for
        the next run), past the URL filter."""
        request = getattr(response, "request", None)
        if not isinstance(exception, UncheckedItem) or request is None:
            return
        self._stop_crawl()  # first: the engine, closing, takes nothing more from the queue
        again = request.replace(dont_filter=True)
        again.meta[RECOVERED_META] = request.url
        try:
            self.crawler.engine.crawl(again)
        except Exception as exc:  # a scheduler in the same failing Redis, an engine gone
            logger.warning("scrapy-neardup: %s could not be queued again: %r", request, exc)

    def _unchecked_url(self, key: bytes) -> bool:
        """Whether to filter ``key`` while Redis is unavailable: fail-closed stops the crawl
        (then lets it into the queue), fail-open filters what this process met."""
        if self.config.redis_on_error == "fail-closed":
            self.inc("neardup/urls/unchecked")
            return not self._stop_crawl()
        with self._lock:
            if self._local_urls.add(key):
                return True  # this process has met it: filtered as usual
            self._url_backlog.append(key)
            self._outage_counts["urls"] += 1
        self.inc("neardup/urls/unchecked")
        return False

    def _unchecked_item(
        self, key: str, signed: Signed, unique: bool, written: str | None = None
    ) -> Verdict:
        """An item met while Redis is unavailable: fail-closed drops it, fail-open checks it
        against the items kept meanwhile."""
        if self.config.redis_on_error == "fail-closed":
            self.inc("neardup/items/unchecked")
            # INFO: a line per item would bury the outage's one ERROR (they are counted)
            raise UncheckedItem(
                "not checked for near-duplicates: Redis is unavailable and "
                "NEARDUP_REDIS_ON_ERROR is 'fail-closed'; its page is fetched again when "
                "the crawl resumes",
                log_level="INFO",
            )
        if self._outage_dedup is None:
            self._outage_dedup = Deduplicator(
                self.dedup.method, min_tokens=self.dedup.min_tokens, **self.config.verify_params()
            )
        local, given, n = self._outage_dedup, key, 2
        while unique and (given in local.exact.store or given in local.members):
            given, n = repeat_key(key, n), n + 1
        verdict = local.check_signed(given, signed)
        if verdict.is_duplicate:
            self._member_backlog.append((key, verdict.member()))  # verdict.key is given
        else:
            self.inc("neardup/items/unchecked")
            self._doc_backlog.append((key, given, signed, written))
            with self._lock:
                self._outage_counts["items"] += 1
        return verdict

    def _recover(self) -> None:
        """Redis answers again: write what was let through, end the outage, say so."""
        while True:
            self._write_backlogs()
            with self._lock:
                if self._url_backlog:  # let through while the rest was written
                    continue
                started, self._outage = self._outage, None
                counts, self._outage_counts = self._outage_counts, Counter()
                break
        self._outage_dedup = None
        logger.warning(
            "scrapy-neardup: Redis at %s is back after %.1f s: %d URLs and %d items were let "
            "through unchecked meanwhile; %d of those URLs were known to it, and %d of those "
            "items are duplicates of items it holds (delivered all the same: `scrapy "
            "neardup-stats --redis-url URL --key-prefix %s` lists them)",
            self._where(),
            time.monotonic() - (started or 0.0),
            counts["urls"],
            counts["items"],
            counts["late_urls"],
            counts["late_items"],
            self.key_prefix,
        )

    def _write_backlogs(self) -> None:
        """URLs, then items (checked as any), then their copies; what a failed call did not
        write stays for the next try."""
        while self._url_backlog:
            with self._lock:
                n = min(URL_BATCH, len(self._url_backlog))
                batch = [self._url_backlog.popleft() for _ in range(n)]
            try:
                seen = self.urls.add_many(batch)
            except BaseException:
                with self._lock:
                    self._url_backlog.extendleft(reversed(batch))
                raise
            late = sum(seen)
            if late:
                self.inc("neardup/urls/late_duplicates", late)
                with self._lock:
                    self._outage_counts["late_urls"] += late
        while self._doc_backlog:
            key, given, signed, written = self._doc_backlog[0]
            verdict = None if written is None else self._recorded(written)
            if verdict is None:
                written = self.unique_key(key)
                self._doc_backlog[0] = (key, given, signed, written)  # a retry finds it
                verdict = self.dedup.check_direct(written, signed)
            self._heads[given] = verdict.duplicate_of or verdict.key
            if verdict.is_duplicate:
                self.recorder.late(verdict.member())
                self.inc("neardup/items/reconciled")
                with self._lock:
                    self._outage_counts["late_items"] += 1
            self._doc_backlog.popleft()
        while self._member_backlog:
            key, member = self._member_backlog[0]
            head = self._heads.get(member.head, member.head)
            self.recorder.member(
                Member(self.unique_key(key), head, member.method, member.similarity)
            )
            self._member_backlog.popleft()
        self._heads.clear()

    def _recorded(self, key: str) -> Verdict | None:
        """What Redis holds of ``key`` (a check whose reply was lost may have written it)."""
        kept, record = self._index_mod.recorded(self.redis_client, self.key_prefix, key)
        try:
            member = None if record is None else self._index_mod.unpack_member(record)
        except self._client_mod.CorruptRecord as exc:
            self._corrupt_record(exc)
            return None
        if member is not None:
            return Verdict(key, *member)
        return Verdict(key) if kept else None

    def _corrupt_record(self, error: BaseException) -> None:
        """A record that cannot be read: counted, logged (the first few at WARNING)."""
        self.inc("neardup/redis/errors")
        self.inc("neardup/redis/corrupt_records")
        self._corrupt_logged += 1
        logger.log(
            logging.WARNING if self._corrupt_logged <= FIRST_LOGGED else logging.DEBUG,
            "scrapy-neardup: Redis at %s %s; left out (counted in neardup/redis/corrupt_records%s)",
            self._where(),
            self._client_mod.failure(error),
            "; the next are logged at DEBUG" if self._corrupt_logged == FIRST_LOGGED else "",
        )
