"""The default state: in memory, recorded in the state database when there is a state directory.

Promises: with a state directory (``JOBDIR/neardup`` by default) every URL key, kept document,
duplicate, request and kept text is recorded in its database as it happens, and committed
before its item goes on to the feed exports; at start the Bloom filter and the index are
rebuilt from it, so a kill of the process loses nothing that reached a feed, and a kill of
the machine at most one ``NEARDUP_FLUSH_INTERVAL``. State that cannot be read stops the start
with a StateError naming the file. Rationale: ``docs/design.md#state-directory``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from scrapy_neardup.deduplicator import Deduplicator, Member, Signed, Verdict
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.factories import backend_from_config, stores_from_config
from scrapy_neardup.state.base import NearDupState
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.lshbloom import LSHBloomStore
from scrapy_neardup.storage.statedb import HeadRecord, StateDB

logger = logging.getLogger(__name__)

#: Documents kept last before a crash whose items may not have reached the feed: far more than
#: a flush interval's worth, and bounded so that a long crashed run costs no memory for them.
UNSURE_KEPT_MAX = 10_000
#: New URLs counted before ``neardup/urls/recorded`` is updated (and at every sync and close).
RECORDED_BUNCH = 256


class ContentRecorder:
    """Records every decision of a :class:`Deduplicator` in the state database."""

    def __init__(self, db: StateDB, dedup: Deduplicator, write: Callable[..., Any]) -> None:
        self.db, self.dedup, self.write = db, dedup, write

    def head(self, key: str, signed: Signed) -> None:
        dedup, near = self.dedup, None
        if signed.near is not None and dedup.near is not None:
            near = dedup.near.method.encode(signed.near)
        exact = dedup.exact.method.encode(signed.exact)
        self.write(self.db.add_head, HeadRecord(key, exact, near, signed.tokens))

    def member(self, m: Member) -> None:
        self.write(self.db.add_relation, "member", m.key, m.head, m.method, m.similarity)

    def related(self, m: Member) -> None:
        self.write(self.db.add_relation, "related", m.key, m.head, m.method, m.similarity)

    def near(self, m: Member) -> None:
        self.write(self.db.add_relation, "near", m.key, m.head, m.method, m.similarity)


def load_content(db: StateDB, dedup: Deduplicator, after: int = 0) -> deque[str]:
    """Add what ``db`` recorded to ``dedup`` (empty, configured as the state was); returns
    the keys of the last documents kept after head row ``after`` (at most
    :data:`UNSURE_KEPT_MAX`). StateError naming the file when a record cannot be read."""
    restore = {
        "member": dedup.restore_member,
        "related": dedup.restore_related,
        "near": dedup.restore_near,
    }
    later: deque[str] = deque(maxlen=UNSURE_KEPT_MAX)
    try:
        for rowid, head in db.heads():
            near = None
            if head.near is not None and dedup.near is not None:  # an empty Index is falsy
                near = dedup.near.method.decode(head.near)
            exact = dedup.exact.method.decode(head.exact)
            dedup.restore_head(head.key, Signed(exact, near, head.tokens))
            if rowid > after:
                later.append(head.key)
        for kind, key, head_key, method, similarity in db.relations():
            restore[kind](Member(key, head_key, method, similarity))
    except (ValueError, TypeError, KeyError) as exc:
        raise StateError(f"unreadable document record: {exc!r}", path=str(db.path)) from None
    return later


class FileState(NearDupState):
    """Memory, plus the state database in ``NEARDUP_STATE_DIR`` (``JOBDIR/neardup``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.config
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        self.dedup = Deduplicator(
            backend_from_config(config),
            min_tokens=config.min_tokens,
            stores=stores_from_config(config),
            **config.verify_params(),
        )
        #: Where URL keys (and, with a state directory, everything else) are recorded: the
        #: state directory's database, or a temporary one to confirm Bloom positives.
        self.db: StateDB | None = None
        #: Whether a Bloom positive is confirmed in ``db`` before a request is dropped.
        self.confirm = False
        self._recorded = 0  # new URLs not yet added to the stats

    def built(self) -> None:
        # Saved state is read while the crawler is built: a StateError then stops the crawl
        # with one clear message, not errors from a half-open engine.
        if self.config.state_dir is not None:
            self.open()
            if self.directory is not None:
                self.directory.schedule_sync_loop()

    def _records_urls(self) -> bool:
        return self.config.enabled and self.config.url_filter

    def _open(self) -> None:
        config = self.config
        self.confirm = self._records_urls() and config.url_confirm
        if config.state_dir is None:
            if self.confirm:
                self.db = StateDB.temporary(config.flush_interval)
            return
        content = {k: self.dedup.meta()[k] for k in ("method", "params", "min_tokens")}
        unsure: deque[str] = deque()

        def load(db: StateDB) -> None:
            try:
                self.dedup.check_saved(json.loads(db.meta("content") or "{}"))
            except (StateError, ValueError) as exc:
                raise StateError(str(exc), path=str(db.path)) from None
            if self._records_urls():
                for keys in db.url_keys():
                    self.urls.update(keys)
            unsure.extend(load_content(db, self.dedup, int(db.meta("heads_at_close") or 0)))

        self._open_directory({"content": json.dumps(content, sort_keys=True)}, load)
        self.db = db = self.directory.db
        frontier = self.frontier
        if frontier is not None:
            if not frontier.ended_cleanly:
                frontier.unsure_kept = set(unsure)
            for key in frontier.pending:
                if not self.urls.add(key):  # recorded as queued, lost as recorded
                    self.directory.write(db.add_key, key)
        self.dedup.recorder = ContentRecorder(db, self.dedup, self.directory.write)
        logger.info(
            "scrapy-neardup: state in %s: %d URLs, %d documents kept, %d duplicates",
            config.state_dir,
            len(self.urls),
            len(self.dedup),
            len(self.dedup.members),
        )

    def sync(self) -> None:
        """Make everything recorded so far durable (the requests done after the feeds)."""
        self._count_recorded()
        if self.directory is not None:
            self.directory.sync()

    def _close(self) -> None:
        db, directory = self.db, self.directory
        if db is not None and self.confirm and self.stats is not None:
            with contextlib.suppress(StateError, OSError):
                total = db.counter("false_positives")
                self.stats.set_value("neardup/urls/false_positives_total", total)
        if directory is not None:
            last = directory.write(directory.db.last_head) if self._opened else None
            # With the run recorded closed: its documents' items are all in the feeds then.
            directory.close({"heads_at_close": str(last or 0)})
        elif db is not None:
            db.abandon()
        self._count_recorded()
        self.set_final_stats()

    async def check_item(self, key: str, signed: Signed, text: str | None = None) -> Verdict:
        """The check, committed before the item goes on: a feed line of it that a kill
        keeps always has its document recorded (and a crawl again finds it, see
        ``neardup/items/redelivered``)."""
        verdict = await super().check_item(key, signed, text)
        if self.directory is not None:
            self.directory.write(self.directory.db.commit_rows)
        return verdict

    def keep_text(self, key: str, text: str) -> None:
        if self.directory is not None:
            self.directory.write(self.directory.db.put_text, key, text)

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        db = self.db
        if self.urls.add(key):
            if not self.confirm or db is None or self._in_db(db, key):
                return True
            # A Bloom false positive: without confirming, a page nobody fetched was dropped.
            self.inc("neardup/urls/false_positives")
            self._write(db.count, "false_positives")
            if self.config.debug:
                logger.debug("scrapy-neardup: Bloom false positive confirmed new: %s", key.hex())
        if on_new is not None:
            on_new(key)  # its request is recorded first: never a later commit than its key
        if db is not None:
            self._write(db.add_key, key)
        self._recorded += 1  # added to the stats in bunches: a call per URL costs (bench)
        if self._recorded >= RECORDED_BUNCH:
            self._count_recorded()
        return False

    def _write(self, call: Callable[..., Any], *args: Any) -> Any:
        """A write of the database; with a state directory, a full disk stops the crawl."""
        if self.directory is not None:
            return self.directory.write(call, *args)
        return call(*args)

    def _count_recorded(self) -> None:
        if self._recorded:
            self.inc("neardup/urls/recorded", self._recorded)
            self._recorded = 0

    def _in_db(self, db: StateDB, key: bytes) -> bool:
        """Whether ``db`` has ``key``; True (the Bloom filter decides, as with
        ``NEARDUP_URL_CONFIRM=False``) once nothing is recorded any more, or when the read
        meets damage opening could not see: confirming is then off for the rest of the crawl,
        since losing a safeguard must not stop every request."""
        if self.directory is not None and self.directory.failed is not None:
            return True
        try:
            return db.has_key(key)
        except StateError as exc:
            self.confirm = False
            self.inc("neardup/urls/confirm_errors")
            logger.error(
                "scrapy-neardup: %s; Bloom positives are not confirmed for the rest of this "
                "crawl, and the next start stops on this file until it is moved away",
                exc,
            )
            return True

    def set_final_stats(self) -> None:
        super().set_final_stats()
        lshbloom = self.dedup.near.store if self.dedup.near is not None else None
        if isinstance(lshbloom, LSHBloomStore) and self.stats is not None:
            self.stats.set_value("neardup/lshbloom/unverified", lshbloom.unverified)
            self.stats.set_value("neardup/lshbloom/size_bytes", lshbloom.size_in_bytes)

    def clear_urls(self) -> None:
        config = self.config
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        if self.db is not None and self._opened:
            self._write(self.db.clear_keys)
            self._write(self.db.commit, True)
