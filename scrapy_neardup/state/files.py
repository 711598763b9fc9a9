"""The default state: in memory, journaled to files in a state directory when there is one.

Promises: with a state directory (``JOBDIR/neardup`` by default) the state is loaded at start,
journaled as it changes and snapshotted at close, so a crash (even SIGKILL) loses at most one
``NEARDUP_FLUSH_INTERVAL``; a file that cannot be read stops the start with a StateError naming
it; one crawl at a time holds the directory (its lock). The files are listed below.
Rationale: ``docs/design.md#state-directory``, ``#journals``, ``#directory-lock``.
"""

# Files in the state directory:
#
#     urls.bloom       ScalableBloomFilter.to_bytes() snapshot (storage/bloom.py),
#                      behind a checksum header (storage.journal.save_snapshot)
#     urls.journal     journal of 16-byte request keys added since the snapshot
#     urls.sqlite      every key, read only to confirm a Bloom positive before a request is
#                      dropped (NEARDUP_URL_CONFIRM; scrapy_neardup.storage.fingerprints)
#     content.state    Deduplicator.to_bytes() snapshot (format in scrapy_neardup.state_format),
#                      behind a checksum header
#     content.journal  kept documents and duplicates since the snapshot (records in
#                      scrapy_neardup.storage.journal)
#     content.lshbloom with NEARDUP_INDEX = "lshbloom": the band filter, whose documents
#                      before the window are in no other file (LSHBloomStore.to_bytes())
#     frontier.journal requests let through the URL filter and not done yet, so that a crawl
#                      killed with SIGKILL crawls them again (scrapy_neardup.frontier); only
#                      written when FrontierMiddleware is on to mark requests done
#     lock             held (flock) by the crawl that has the directory open, with its PID
#                      (scrapy_neardup.storage.dirlock)
#     texts.records    the text each checked document was compared by, for auditing drops
#                      (NEARDUP_KEEP_TEXT > 0; scrapy_neardup.storage.texts)
#     *.journal.length each journal's length at its last recorded sync (storage.journal)

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sqlite3
import struct
import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from scrapy_neardup.components import component_enabled
from scrapy_neardup.deduplicator import Deduplicator, Signed
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.factories import backend_from_config, stores_from_config
from scrapy_neardup.frontier import Frontier
from scrapy_neardup.state.base import NearDupState
from scrapy_neardup.state_format import Member
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.dirlock import DirectoryLock, state_locks
from scrapy_neardup.storage.fingerprints import FingerprintStore
from scrapy_neardup.storage.journal import (
    DISK_FULL,
    HeadRecord,
    Journal,
    MemberRecord,
    decode_content_record,
    encode_head,
    encode_member,
    load_snapshot,
    save_snapshot,
)
from scrapy_neardup.storage.lshbloom import LSHBloomStore
from scrapy_neardup.storage.texts import TEXTS_FILE, TextFile

logger = logging.getLogger(__name__)

#: Checked by import path, so that this module need not import the Scrapy components.
FRONTIER_MIDDLEWARE = "scrapy_neardup.middlewares.FrontierMiddleware"

T = TypeVar("T")

URL_SNAPSHOT, URL_JOURNAL = "urls.bloom", "urls.journal"
URL_CONFIRM = "urls.sqlite"
CONTENT_SNAPSHOT, CONTENT_JOURNAL = "content.state", "content.journal"
LSHBLOOM_SNAPSHOT = "content.lshbloom"
#: Seconds between two periodic syncs at least (NEARDUP_FLUSH_INTERVAL=0 syncs every record).
MIN_SYNC_PERIOD = 0.2
#: Documents kept last before a crash whose items may not have reached the feed: far more than
#: a flush interval's worth, and bounded so that a long crashed run costs no memory for them.
UNSURE_KEPT_MAX = 10_000
#: New URLs counted before ``neardup/urls/recorded`` is updated (and at every sync and close).
RECORDED_BUNCH = 256
#: The finish reason of a crawl stopped because the state directory's disk is full.
DISK_FULL_REASON = "neardup_disk_full"


class ContentJournal:
    """Records every decision of a :class:`Deduplicator` in a :class:`Journal`, and replays
    them; the record format is :mod:`scrapy_neardup.storage.journal`'s."""

    def __init__(self, journal: Journal, dedup: Deduplicator) -> None:
        self.journal = journal
        self.dedup = dedup

    def head(self, key: str, signed: Signed) -> None:
        near = None if signed.near is None else self.dedup.near.method.encode(signed.near)
        exact = self.dedup.exact.method.encode(signed.exact)
        self.journal.append(encode_head(HeadRecord(key, exact, near, signed.tokens)))

    def member(self, m: Member) -> None:
        self.journal.append(encode_member(MemberRecord(m.key, m.head, m.method, m.similarity)))

    def related(self, m: Member) -> None:
        record = MemberRecord(m.key, m.head, m.method, m.similarity, related=True)
        self.journal.append(encode_member(record))

    def near(self, m: Member) -> None:
        record = MemberRecord(m.key, m.head, m.method, m.similarity, near=True)
        self.journal.append(encode_member(record))

    def replay(self, payload: bytes) -> HeadRecord | MemberRecord:
        record = decode_content_record(payload)
        if isinstance(record, HeadRecord):
            near = None
            # "is not None": an empty Index is falsy (it has a __len__)
            if record.near is not None and self.dedup.near is not None:
                near = self.dedup.near.method.decode(record.near)
            exact = self.dedup.exact.method.decode(record.exact)
            self.dedup.restore_head(record.key, Signed(exact, near, record.tokens))
        else:
            member = Member(record.key, record.head, record.method, record.similarity)
            if record.related:
                self.dedup.restore_related(member)
            elif record.near:
                self.dedup.restore_near(member)
            else:
                self.dedup.restore_member(member)
        return record


class FileState(NearDupState):
    """Memory, plus journals and snapshots in ``NEARDUP_STATE_DIR`` (``JOBDIR/neardup``)."""

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
        self._url_journal: Journal | None = None
        self._content_journal: Journal | None = None
        self.frontier: Frontier | None = None
        self._recorded = 0  # new URLs not yet added to the stats
        self.confirm: FingerprintStore | None = None
        self._confirm_tmp: str | None = None
        self._texts: TextFile | None = None  # NEARDUP_KEEP_TEXT with a state directory
        self._confirm_rebuilt = False  # the URL store was missing or empty, and is refilled
        self._locks: list[DirectoryLock] = []
        #: The error of a write that met a full disk; nothing is written after it.
        self.disk_full: BaseException | None = None  # one crawl at a time on the directory
        self._sync_loop: Any = None  # a LoopingCall of _periodic_sync while the crawl runs
        #: The clock of the periodic sync (None: the reactor; tests give a Clock).
        self.sync_clock: Any = None
        self._sync_failed = False
        #: The last documents kept since the last clean close (see Frontier.unsure_kept).
        self._journal_heads: deque[str] = deque(maxlen=UNSURE_KEPT_MAX)

    def built(self) -> None:
        # Saved state is read while the crawler is built: a StateError then stops the crawl
        # with one clear message, not errors from a half-open engine.
        if self.config.state_dir is not None:
            self.open()
            self._schedule_sync_loop()

    def _frontier_wanted(self) -> bool:
        """Only when FrontierMiddleware will mark requests done: otherwise the journal would
        grow by every request and never shrink."""
        config = self.config
        return (
            config.enabled
            and config.url_filter
            and self.crawler is not None
            and component_enabled(self.crawler.settings, "SPIDER_MIDDLEWARES", FRONTIER_MIDDLEWARE)
        )

    def _open(self) -> None:
        directory = self.config.state_dir
        if directory is None:
            self._open_confirm(None)
            return
        try:
            directory.mkdir(parents=True, exist_ok=True)
            jobdir = self.crawler.settings.get("JOBDIR") if self.crawler is not None else None
            self._locks = state_locks(directory, jobdir)
            for lock in self._locks:
                lock.acquire()
            self._load_urls(directory)
            self._load_content(directory)
            self._load_frontier(directory)
            if self.config.keep_text:
                self._texts = TextFile(directory / TEXTS_FILE, self.config.flush_interval)
                self._texts.open()
        except OSError as exc:  # a StateError names the file, as for every unreadable one
            self._abandon()
            message = f"cannot be read or written: {exc.strerror or exc}"
            raise StateError(message, path=str(exc.filename or directory)) from None
        except BaseException:
            self._abandon()
            raise
        for journal in self._journals():
            journal.on_disk_full = self._disk_full
        logger.info(
            "scrapy-neardup: state in %s: %d URLs, %d documents kept, %d duplicates",
            directory,
            len(self.urls),
            len(self.dedup),
            len(self.dedup.members),
        )

    def _journals(self) -> list[Journal]:
        frontier = self.frontier.journal if self.frontier is not None else None
        journals = (self._url_journal, self._content_journal, frontier)
        return [journal for journal in journals if journal is not None]

    def _disk_full(self, exc: BaseException, path: Path | str) -> None:
        """A write to the state directory met a full disk: nothing more is written there
        (every journal stops, as a crash would stop them, and no snapshot is written at
        close), and the crawl is stopped with the finish reason ``neardup_disk_full``. The
        next start replays the journals as after a crash: the frontier journal queues again
        every request not done, so once space is freed the same command resumes the crawl."""
        if self.disk_full is not None:
            return
        self.disk_full = exc
        for journal in self._journals():
            journal.failed = True
        self.inc("neardup/state/disk_full")
        logger.error(
            "scrapy-neardup: no space left to write %s (%s); the crawl stops (finish reason "
            "'%s') and its state in %s is left as a crash leaves it. Free space on that disk, "
            "then run the same command again: the crawl resumes, and the requests it had not "
            "finished are crawled again",
            path,
            getattr(exc, "strerror", None) or exc,
            DISK_FULL_REASON,
            self.config.state_dir,
        )
        store, self.confirm = self.confirm, None
        if store is not None:
            with contextlib.suppress(StateError, sqlite3.Error):
                store.close()
        texts, self._texts = self._texts, None
        if texts is not None:
            with contextlib.suppress(OSError):
                texts.close()
        self.stop_crawl(DISK_FULL_REASON)

    def _abandon(self) -> None:
        """Close what a failed start opened, writing no snapshot over the unread state."""
        self._opened = False
        frontier = self.frontier.journal if self.frontier is not None else None
        for journal in (self._url_journal, self._content_journal, frontier, self._texts):
            if journal is not None:
                journal.close()
        if self.confirm is not None:
            self.confirm.close()
            self.confirm = None
        self._release_locks()

    def _release_locks(self) -> None:
        for lock in reversed(self._locks):
            lock.release()
        self._locks = []

    def _load_urls(self, directory: Path) -> None:
        urls = _parse_snapshot(directory / URL_SNAPSHOT, ScalableBloomFilter.from_bytes)
        if urls is not None:
            self.urls = urls
        self._open_confirm(directory)
        self._url_journal = Journal(directory / URL_JOURNAL, self.config.flush_interval)
        replayed = 0
        for key in self._url_journal.open():
            self._record(key)
            replayed += 1
        if self._confirm_rebuilt and replayed:
            logger.warning(
                "scrapy-neardup: %s was missing or empty; rebuilt from %s (%d URLs)",
                directory / URL_CONFIRM,
                self._url_journal.path,
                replayed,
            )

    def _record(self, key: bytes) -> bool:
        """Add to the Bloom filter and the confirming store; True if the Bloom had it."""
        if self.confirm is not None:
            self.confirm.add(key)
        return self.urls.add(key)

    def _open_confirm(self, directory: Path | None) -> None:
        """The exact key store that confirms Bloom positives (NEARDUP_URL_CONFIRM).

        Without a state directory it lives in a temporary file, unlinked once open. In a
        state directory it must hold every key the Bloom filter does. A store that is missing
        or empty is rebuilt when every key is at hand: with no Bloom snapshot (or an empty
        one), the URL journal and the frontier hold them all, and they are added to it as
        they are read. When the Bloom snapshot has URLs, their keys are in no other file:
        the start stops with a StateError naming the store, rather than crawl on with Bloom
        positives unconfirmed (each false positive a page dropped unfetched) in this run
        and every later one.
        """
        if not (self.config.enabled and self.config.url_filter and self.config.url_confirm):
            return
        if directory is None:
            handle, self._confirm_tmp = tempfile.mkstemp(prefix="neardup-urls-", suffix=".sqlite")
            os.close(handle)
            path = Path(self._confirm_tmp)
        else:
            path = directory / URL_CONFIRM
        if directory is not None:
            exists = path.exists()
            if (not exists or path.stat().st_size == 0) and len(self.urls):
                raise StateError(
                    f"the URL fingerprint store is {'empty' if exists else 'missing'}, but "
                    f"{directory / URL_SNAPSHOT} records {len(self.urls)} URLs whose keys are in "
                    "no other file, so a Bloom positive could not be confirmed before its "
                    "request is dropped. Restore the file; or set NEARDUP_URL_CONFIRM=False "
                    "to crawl on trusting the Bloom filter (each false positive, at "
                    "NEARDUP_BLOOM_ERROR_RATE, drops a page unfetched); or start a new JOBDIR",
                    path=str(path),
                )
            self._confirm_rebuilt = not exists or path.stat().st_size == 0
        self.confirm = FingerprintStore(
            path, self.config.flush_interval, temporary=directory is None
        )

    def _load_content(self, directory: Path) -> None:
        _parse_snapshot(directory / CONTENT_SNAPSHOT, self.dedup.load_bytes)
        lshbloom = self._lshbloom()
        path = directory / LSHBLOOM_SNAPSHOT
        if lshbloom is not None:
            _parse_snapshot(path, lshbloom.load_bytes)
        elif path.exists():  # its documents before the window are in no other file
            raise StateError(
                "this state was written with NEARDUP_INDEX = 'lshbloom'; set it again, or "
                "start a new state",
                path=str(path),
            )
        self._content_journal = Journal(directory / CONTENT_JOURNAL, self.config.flush_interval)
        recorder = ContentJournal(self._content_journal, self.dedup)
        for payload in self._content_journal.open():
            try:
                record = recorder.replay(payload)
                if isinstance(record, HeadRecord):
                    self._journal_heads.append(record.key)
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise StateError(
                    f"unreadable journal record: {exc}", path=str(self._content_journal.path)
                ) from None
        self.dedup.recorder = recorder

    def _load_frontier(self, directory: Path) -> None:
        """The requests still to crawl (see :mod:`scrapy_neardup.frontier`), and the order in
        which the journals are made durable: the frontier's queued requests, then content,
        then the frontier's done requests (after the feed files), then URLs."""
        assert self._url_journal is not None and self._content_journal is not None
        journals = [self._url_journal, self._content_journal]
        if self._frontier_wanted():
            self.frontier = Frontier(directory, self.config.flush_interval, self.stats)
            self.frontier.crawler = self.crawler
            self.frontier.open()
            if not self.frontier.ended_cleanly:
                self._set_aside_scrapy_queue()
                self.frontier.unsure_kept = set(self._journal_heads)
            for key in self.frontier.pending:
                if not self._record(key):  # journaled as queued, lost as recorded
                    self._url_journal.append(key)
            journals.append(self.frontier.journal)
            self._content_journal.before_sync = self.frontier.journal.sync  # "Q" records
            for journal in (self._url_journal, self._content_journal):
                journal.before_write = self.frontier.journal.write_out  # see Frontier
            self.frontier.before_done = self._content_journal.sync
            self._url_journal.before_sync = self.frontier.sync
        else:
            self._url_journal.before_sync = self._content_journal.sync
        torn = sum(1 for journal in journals if journal.torn)
        if torn:
            self.inc("neardup/state/torn_journals", torn)

    def _set_aside_scrapy_queue(self) -> None:
        """After a crash, move Scrapy's JOBDIR request queue out of the scheduler's way.

        Scrapy writes that queue's bookkeeping only at a clean close, so a SIGKILL after a
        resumed run leaves it inconsistent: Scrapy then fails on it with ``OSError`` at every
        pop and the crawl hangs (plain Scrapy does the same). The frontier journal holds every
        request that queue could: the crashed run's pending ones are scheduled again.
        """
        from scrapy.utils.job import job_dir

        jobdir = job_dir(self.crawler.settings) if self.crawler is not None else None
        spider_state = Path(jobdir) / "spider.state" if jobdir else None
        if spider_state is not None and spider_state.is_file() and not spider_state.stat().st_size:
            # Scrapy's SpiderState rewrites it in place at close: on a full disk it is left
            # empty, and then fails to load at every start (EOFError), and to save at close.
            empty = spider_state.with_name("spider.state.empty")
            spider_state.replace(empty)
            logger.warning(
                "scrapy-neardup: %s is empty (written on a full disk, or cut by a crash), and "
                "Scrapy cannot load it; it was moved to %s, and the spider starts with an "
                "empty spider.state",
                spider_state,
                empty,
            )
        queue = Path(jobdir) / "requests.queue" if jobdir else None
        if queue is None or not queue.exists():
            return
        aside = queue.with_name("requests.queue.crashed")
        shutil.rmtree(aside, ignore_errors=True)
        queue.rename(aside)
        logger.warning(
            "scrapy-neardup: the last run did not end cleanly, so Scrapy's request queue in %s "
            "is stale (Scrapy cannot resume it after a crash); it was moved to %s, and the "
            "requests the plugin journaled are scheduled again",
            queue,
            aside,
        )

    def sync(self) -> None:
        """Make everything recorded so far durable, in the order of the journals' own syncs:
        content, then the frontier (feed files first, then the requests done), then URLs."""
        self._count_recorded()
        if self._content_journal is not None:
            self._content_journal.sync()
        if self.frontier is not None:
            self.frontier.sync()
        if self._url_journal is not None:
            self._url_journal.sync()
        if self.confirm is not None:
            try:
                self.confirm.commit()
            except StateError as exc:
                self._confirm_failed(exc)
        if self._texts is not None:
            try:
                self._texts.sync()
            except OSError as exc:
                self._texts_failed(exc)

    def _texts_failed(self, exc: OSError) -> None:
        if exc.errno in DISK_FULL and self._texts is not None:
            self._disk_full(exc, self._texts.path)
        else:
            raise exc

    def _schedule_sync_loop(self) -> None:
        """Sync every ``NEARDUP_FLUSH_INTERVAL`` seconds (``MIN_SYNC_PERIOD`` at least) while
        the crawl runs. A journal syncs by itself only when a record is appended, so without
        this the last records before a quiet spell, and the requests the frontier holds as
        done until their items are in the feed files, would wait for the next record."""
        from scrapy import signals
        from scrapy.utils.reactor import is_reactor_installed

        if self.crawler is None or not self._opened:
            return
        if is_reactor_installed():
            from twisted.internet import reactor

            if reactor.running:
                self._start_sync_loop()
                return
        self.crawler.signals.connect(self._start_sync_loop, signal=signals.engine_started)

    def _start_sync_loop(self, *args: Any, **kwargs: Any) -> None:
        from scrapy.utils.reactor import is_reactor_installed
        from twisted.internet.task import LoopingCall

        if self._sync_loop is not None or self._closed or not self._opened:
            return
        period = max(self.config.flush_interval, MIN_SYNC_PERIOD)
        clock = self.sync_clock
        if clock is None and not is_reactor_installed():
            # Scrapy without a Twisted reactor (TWISTED_REACTOR_ENABLED = False): asyncio's.
            try:
                from scrapy.utils.asyncio import AsyncioLoopingCall
            except ImportError:  # Scrapy < 2.14: appends sync, requests are marked done at close
                return
            self._sync_loop = AsyncioLoopingCall(self._periodic_sync)
            self._sync_loop.start(period, now=False)
            return
        if clock is None:
            from twisted.internet import reactor as clock
        self._sync_loop = LoopingCall(self._periodic_sync)
        self._sync_loop.clock = clock
        self._sync_loop.start(period, now=False)

    def _periodic_sync(self) -> None:
        try:
            self.sync()
        except Exception:  # a full disk: retried at the next tick, logged once
            self.inc("neardup/state/sync_errors")
            if not self._sync_failed:
                self._sync_failed = True
                logger.exception(
                    "scrapy-neardup: syncing the state in %s failed; retried every interval "
                    "(failures counted in neardup/state/sync_errors)",
                    self.config.state_dir,
                )

    def _close(self) -> None:
        if self._sync_loop is not None:
            if self._sync_loop.running:
                self._sync_loop.stop()
            self._sync_loop = None
        if self.confirm is not None:
            if self.stats is not None:
                self.stats.set_value(
                    "neardup/urls/false_positives_total", self.confirm.counter("false_positives")
                )
            try:
                self.confirm.close()
            except StateError as exc:  # a full disk: the state is then left as it is
                self._confirm_failed(exc)
            self.confirm = None
        if self._confirm_tmp is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(self._confirm_tmp + suffix).unlink(missing_ok=True)
        directory = self.config.state_dir
        if directory is not None and self._opened and self.disk_full is None:
            try:
                self._save_snapshots(directory)
            except OSError as exc:
                if exc.errno not in DISK_FULL:
                    raise
                self._disk_full(exc, exc.filename or directory)
        if self.disk_full is not None:  # left as a crash leaves it; the journals write nothing
            if self.frontier is not None:
                self.frontier.close()
            for journal in self._journals():
                journal.close()
        if self._texts is not None:
            try:
                self._texts.close()
            except OSError as exc:
                self._texts_failed(exc)
        self._release_locks()
        self._count_recorded()
        self.set_final_stats()

    def _save_snapshots(self, directory: Path) -> None:
        """At a clean close: the snapshots, then the journals emptied and closed."""
        save_snapshot(directory / URL_SNAPSHOT, self.urls.to_bytes())
        save_snapshot(directory / CONTENT_SNAPSHOT, self.dedup.to_bytes())
        lshbloom = self._lshbloom()
        if lshbloom is not None:
            save_snapshot(directory / LSHBLOOM_SNAPSHOT, lshbloom.to_bytes())
        for journal in (self._url_journal, self._content_journal):
            if journal is not None:
                journal.reset()
                journal.close()
        if self.frontier is not None:
            self.frontier.close()

    def keep_text(self, key: str, text: str) -> None:
        if self._texts is not None:
            try:
                self._texts.put(key, text)
            except OSError as exc:
                self._texts_failed(exc)

    # -- URLs -----------------------------------------------------------------------------

    def key_seen(self, key: bytes, on_new: Callable[[bytes], None] | None = None) -> bool:
        if self.urls.add(key):
            if self.confirm is None or self._confirm(self.confirm.__contains__, key, True):
                return True
            # A Bloom false positive: without the store, a page nobody fetched was dropped.
            self.inc("neardup/urls/false_positives")
            self._confirm(self.confirm.count, "false_positives", None)
            if self.config.debug:
                logger.debug("scrapy-neardup: Bloom false positive confirmed new: %s", key.hex())
        confirm = self.confirm
        if confirm is not None:
            try:  # not through _confirm: this runs for every new URL
                confirm.add(key)
            except StateError as exc:
                self._confirm_failed(exc)
        if on_new is not None:
            on_new(key)
        if self._url_journal is not None:
            self._url_journal.append(key)
        # Counted here, added to the stats in bunches: a stats call per new URL was a tenth
        # of the filter's time (bench_urlfilter.py).
        self._recorded += 1
        if self._recorded >= RECORDED_BUNCH:
            self._count_recorded()
        return False

    def _count_recorded(self) -> None:
        if self._recorded:
            self.inc("neardup/urls/recorded", self._recorded)
            self._recorded = 0

    def _confirm(self, call: Callable[[Any], Any], arg: Any, failed: Any) -> Any:
        """``call(arg)`` on the URL store; ``failed`` when the store breaks mid-crawl (a disk
        error, damage that opening could not see). The crawl then goes on without it,
        trusting the Bloom filter as with ``NEARDUP_URL_CONFIRM=False``: the store is a
        safeguard against false positives, and losing it must not stop every request."""
        try:
            return call(arg)
        except StateError as exc:
            self._confirm_failed(exc)
            return failed

    def _confirm_failed(self, exc: StateError) -> None:
        """The URL store broke mid-crawl: the crawl goes on without it (see _confirm); on a
        full disk it stops, as for every file of the state."""
        if "disk is full" in str(exc) and self.config.state_dir is not None and self._opened:
            self._disk_full(exc, exc.path or URL_CONFIRM)
            return
        self.inc("neardup/urls/confirm_errors")
        logger.error(
            "scrapy-neardup: %s; Bloom positives are not confirmed for the rest of this "
            "crawl, and the next start stops on this file until it is moved away",
            exc,
        )
        store, self.confirm = self.confirm, None
        if store is not None:
            with contextlib.suppress(StateError, sqlite3.Error):
                store.close()

    def _lshbloom(self) -> LSHBloomStore | None:
        near = self.dedup.near
        store = near.store if near is not None else None
        return store if isinstance(store, LSHBloomStore) else None

    def set_final_stats(self) -> None:
        super().set_final_stats()
        lshbloom = self._lshbloom()
        if lshbloom is not None and self.stats is not None:
            self.stats.set_value("neardup/lshbloom/unverified", lshbloom.unverified)
            self.stats.set_value("neardup/lshbloom/size_bytes", lshbloom.size_in_bytes)

    def clear_urls(self) -> None:
        config = self.config
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        if self.confirm is not None:
            self.confirm.clear()
        if self._url_journal is not None:
            self._url_journal.reset()
        if config.state_dir is not None and self._opened:
            save_snapshot(config.state_dir / URL_SNAPSHOT, self.urls.to_bytes())


def _parse_snapshot(path: Path, parse: Callable[[bytes], T]) -> T | None:
    """``parse`` of a snapshot's checked body (None without a snapshot); a StateError of
    ``parse`` (another format) names the file too."""
    data = load_snapshot(path)
    if data is None:
        return None
    try:
        return parse(data)
    except StateError as exc:
        raise StateError(str(exc), path=str(path)) from None
