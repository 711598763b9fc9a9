"""The crawl frontier, journaled, so that a SIGKILL never loses a URL that was still to crawl.

Promises: every request the URL filter lets through is journaled (``Q``) before its URL is
recorded; it is marked done (``D``) only once its items are durable in the feed exports
(:mod:`scrapy_neardup.feeds`); after a crash the requests queued and not done are scheduled
again. Requests are written by :mod:`scrapy_neardup.request_codec`, never pickled; a
pickled record stops the start with a :class:`~scrapy_neardup.exceptions.StateError`.
It must not decide which URLs are new (the state does) nor write feed files.
Records, ordering and compaction: ``docs/design.md#frontier-journal``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.feeds import sync_feeds
from scrapy_neardup.meta import CHECKED_META, FRONTIER_META, PARENT_META, RECOVERED_META
from scrapy_neardup.request_codec import Unjournalable, request_from_json, request_to_json
from scrapy_neardup.storage.journal import FRAME_OVERHEAD, Journal

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKED_META",
    "COMPACT_MIN_BYTES",
    "FRONTIER_JOURNAL",
    "FRONTIER_META",
    "PARENT_META",
    "RECOVERED_META",
    "REQUEST_FORMAT",
    "Frontier",
    "Unjournalable",
    "request_from_json",
    "request_to_json",
]

FRONTIER_JOURNAL = "frontier.journal"
_FP = 16
#: The journal is never compacted below this size (compaction then costs more than it saves).
COMPACT_MIN_BYTES = 4 * 1024 * 1024
#: The first record of every run's journal (see "R" above).
RUN = b"R"
#: The format byte of a ``Q`` record: JSON of ``Request.to_dict()``.
REQUEST_FORMAT = 1
_FORMAT_BYTE = bytes([REQUEST_FORMAT])
_PICKLE = 0x80  # how a pickle (protocol 2 or later) starts: the format before REQUEST_FORMAT


class Frontier:
    """Journal of the requests let through the URL filter and not yet done."""

    def __init__(self, directory: Path, flush_interval: float, stats: Any = None) -> None:
        # A request's Q must reach the OS before anything that depends on it: its URL in
        # urls.journal, the kept document of its page in content.journal. Those journals
        # hand this one's buffer to the OS before their own (``before_write``, set by the
        # state), so that a SIGKILL never keeps them and loses the Q. (A document kept
        # without its request would be found again as a new URL, and its page dropped as a
        # duplicate of itself.) Writing each Q through at once cost a system call per
        # request: more than half the URL filter's time with a JOBDIR.
        self.journal = Journal(directory / FRONTIER_JOURNAL, flush_interval)
        self.stats = stats
        #: The crawler whose feed exports must be durable before a request is done.
        self.crawler: Any = None
        #: Makes the kept/duplicate records of done requests' items durable (content.journal).
        self.before_done: Callable[[], None] | None = None
        #: The requests a crashed run left pending (fingerprint -> serialised request), until
        #: :meth:`recover` has scheduled them again.
        self.pending: dict[bytes, bytes] = {}
        self.crashed = False
        self.ended_cleanly = True
        #: Documents kept last before a crash (set by the state after :meth:`open`).
        self.unsure_kept: set[str] = set()
        #: Items of responses to re-queued requests, until they reach their end.
        self.recovered_items: dict[int, Any] = {}
        self._run_span = (0, 0)  # the "R" record's (offset, frame length)
        self._live: dict[bytes, tuple[int, int]] = {}  # fingerprint -> (offset, frame length)
        #: Done, ``D`` not written yet (fingerprint -> span of its ``Q``): see sync().
        self._done: dict[bytes, tuple[int, int]] = {}
        #: Requests that yielded one that could not be journaled: never done in this run.
        self._pinned: set[bytes] = set()
        #: The ``X`` records of pending requests: parent -> child key -> span.
        self._marks: dict[bytes, dict[bytes, tuple[int, int]]] = {}
        #: Child keys of the ``X`` records of the crashed run's pending requests: each passes
        #: the URL filter once (:meth:`take_pass`).
        self.passes: set[bytes] = set()
        self._warned: set[str] = set()  # the kinds of value logged at WARNING already
        self._dead_bytes = 0
        self._open = False

    def open(self) -> None:
        """Replay the journal: what is pending, and whether the last run ended cleanly."""
        pending: dict[bytes, bytes] = {}
        marks: dict[tuple[bytes, bytes], None] = {}
        clean = True  # an empty journal: a first run, or a clean close with nothing pending
        for payload in self.journal.open():
            kind = payload[:1]
            if kind == b"Q" and len(payload) > 1 + _FP:
                self._check_format(payload[1 + _FP])
                pending[payload[1 : 1 + _FP]] = payload[2 + _FP :]
                clean = False
            elif kind == b"D" and len(payload) == 1 + _FP:
                pending.pop(payload[1:], None)
                clean = False
            elif kind == b"X" and len(payload) == 1 + 2 * _FP:
                marks[payload[1 : 1 + _FP], payload[1 + _FP :]] = None
                clean = False
            elif payload == b"C":
                clean = True
            elif payload == RUN:
                clean = False
            else:
                raise StateError(
                    f"unknown frontier record {payload[:1]!r} (from another version?)",
                    path=str(self.journal.path),
                )
        self.pending = pending
        #: Whether the last run ended with a clean close (or there was none): after a
        #: crash, Scrapy's own JOBDIR queue is stale (see FileState._set_aside_scrapy_queue).
        self.ended_cleanly = clean
        self.crashed = not clean and bool(pending)
        # Compacted, and without the "C": from now on Scrapy's queue is being consumed, so
        # a crash at any point of this run must re-queue what is pending.
        # It starts with an "R": a crash of this run is told from a clean close even when
        # no request gets journaled (a spider of start_urls, all sent with dont_filter).
        # The X records of requests still pending are kept (those of done ones dropped): a
        # crash later in this run must still let their children through.
        kept = [(parent, child) for parent, child in marks if parent in pending]
        spans = self.journal.rewrite(
            [
                RUN,
                *(_q_record(fp, data) for fp, data in pending.items()),
                *(b"X" + parent + child for parent, child in kept),
            ]
        )
        self._run_span = spans[0]
        self._live = dict(zip(pending, spans[1 : 1 + len(pending)], strict=True))
        self._marks = {}
        for (parent, child), span in zip(kept, spans[1 + len(pending) :], strict=True):
            self._marks.setdefault(parent, {})[child] = span
        self.passes = {child for _, child in kept} if self.crashed else set()
        self._dead_bytes = 0
        self._open = True

    def _check_format(self, version: int) -> None:
        if version == REQUEST_FORMAT:
            return
        if version == _PICKLE:
            problem = "holds requests pickled by an earlier version of scrapy-neardup"
        else:
            problem = f"holds requests in an unknown format ({version}; a newer version?)"
        raise StateError(
            f"{problem}; they are not loaded (unpickling a crafted record would run its "
            "code). Finish or discard that crawl with the version that wrote it, or move the "
            "file away to start without the requests it holds",
            path=str(self.journal.path),
        )

    def recover(self, spider: Any) -> list[Request]:
        """The requests to schedule again after a crash (once; empty after a clean close)."""
        if not self.crashed:
            self.pending = {}  # Scrapy's own queue holds them (a clean close)
            return []
        self.crashed = False
        requests = []
        for fp, data in self.pending.items():
            try:
                request = request_from_json(data, spider)
            except Exception as exc:  # the spider changed: a callback is gone, a class moved
                self._inc("neardup/frontier/unrecoverable")
                logger.warning("scrapy-neardup: cannot re-queue a request %s: %r", fp.hex(), exc)
                continue
            request.meta[FRONTIER_META] = fp.hex()
            request.meta[RECOVERED_META] = request.url
            requests.append(request)
        self.pending = {}
        if requests:
            self._inc("neardup/frontier/recovered", len(requests))
            logger.info(
                "scrapy-neardup: the last run did not end cleanly; %d requests it had queued "
                "are scheduled again",
                len(requests),
            )
        return requests

    def schedule(self, request: Request, fingerprint: bytes) -> None:
        """Journal a request the URL filter let through (before its URL is recorded).

        This runs in the reactor's thread for every new request of a crawl with a JOBDIR:
        the request is written short (:func:`request_to_json`)."""
        meta = request.meta
        previous = meta.get(FRONTIER_META)
        try:
            data = request_to_json(request, getattr(self.crawler, "spider", None))
        except (AttributeError, TypeError, ValueError) as exc:
            self._unjournaled(request, fingerprint, exc)
            return
        hex_fp = fingerprint.hex()
        meta[FRONTIER_META] = hex_fp
        record = _q_record(fingerprint, data)
        offset = self.journal.append(record)
        # Its older Q (a URL queued again after clear_urls) is superseded by this one.
        live = self._live
        old = live.get(fingerprint) or self._done.pop(fingerprint, None)
        if old is not None:
            self._dead_bytes += old[1]
        live[fingerprint] = (offset, FRAME_OVERHEAD + len(record))
        if previous and previous != hex_fp:
            # A redirect: the new request (journaled just now) takes over from the old one.
            self.done_hex(previous)

    def _unjournaled(self, request: Request, fingerprint: bytes, exc: Exception) -> None:
        """``request`` cannot be journaled: the request whose response yielded it stays
        pending (:meth:`_pin`), so that a crash crawls that one again, and it again."""
        self._inc("neardup/frontier/unserializable")
        parent = _raw_fp(request.meta.get(PARENT_META))
        kept = parent is not None and self._pin(parent, fingerprint)
        kind = getattr(exc, "kind", None) or type(exc).__name__
        if kind in self._warned:
            log = logger.debug
        else:
            self._warned.add(kind)
            log = logger.warning
        log(
            "scrapy-neardup: request %s not journaled (%s): %s (counted in "
            "neardup/frontier/unserializable; the next of this kind are logged at DEBUG)",
            request,
            exc,
            "the request that yielded it stays pending, so that a crash crawls it again"
            if kept
            else "a crash would lose it, unless it is a start request the spider sends again",
        )

    def _pin(self, parent: bytes, child: bytes) -> bool:
        """Keep ``parent`` pending for the rest of this run, and journal ``X``: after a crash
        it is crawled again, and its child ``child`` (a request key) passes the URL filter
        once. False when ``parent`` is not pending (done and written, or never journaled)."""
        if parent not in self._pinned:
            span = self._done.pop(parent, None)  # done, its D not written yet: pending again
            if span is not None:
                self._live[parent] = span
            if parent not in self._live:
                return False
            self._pinned.add(parent)
        marks = self._marks.setdefault(parent, {})
        if child not in marks:  # reaches the OS before the child's URL (see schedule)
            record = b"X" + parent + child
            marks[child] = (self.journal.append(record), FRAME_OVERHEAD + len(record))
        return True

    def pinned(self, fp: str) -> bool:
        """Whether the request of hex fingerprint ``fp`` is kept pending for a request it
        yielded that could not be journaled (in this run, or in one before that left it
        pending): it answers for what that request yields too."""
        raw = _raw_fp(fp)
        return raw is not None and (raw in self._pinned or raw in self._marks)

    def take_pass(self, key: bytes) -> bool:
        """Whether the request of key ``key`` passes the URL filter (once): the crashed run
        could not journal it, and kept the request that yielded it pending instead."""
        if key in self.passes:
            self.passes.discard(key)
            self._inc("neardup/frontier/passed")
            return True
        return False

    def done(self, request: Request) -> None:
        """The request's response went through the spider, and its items through the
        pipelines; its ``D`` is written at the next :meth:`sync` (at once with a flush
        interval of 0)."""
        fp = request.meta.get(FRONTIER_META)
        if fp:
            self.done_hex(fp)

    def done_hex(self, fp: str) -> None:
        raw = _raw_fp(fp)
        if raw is None or raw in self._pinned:  # pinned: it yielded an unjournaled request
            return
        live = self._live.pop(raw, None)
        if live is not None:  # else never journaled (unserialisable), or done already
            self._done[raw] = live
            if self.journal.flush_interval == 0:  # every record synced: this one too, now
                self.sync()

    def sync(self) -> None:
        """Make done requests durable, after everything they stand for: the kept/duplicate
        records of their items (``content.journal``: ``before_done``), then
        their items in the feed files, then their ``D`` records; then compact if worth it."""
        if not self._open or self.journal.failed:  # a full disk: nothing more is written
            return
        if self._done:
            if self.before_done is not None:
                self.before_done()
            sync_feeds(self.crawler)
            for fp, span in self._done.items():
                self.journal.append(b"D" + fp)
                self._dead_bytes += span[1] + FRAME_OVERHEAD + 1 + _FP
                marks = self._marks.pop(fp, None)  # X records of the crashed run: dead now
                if marks:
                    self._dead_bytes += sum(length for _, length in marks.values())
            self._done.clear()
        self.journal.sync()
        if self._dead_bytes > max(COMPACT_MIN_BYTES, self.journal.tell() - self._dead_bytes):
            self._compact()

    def _compact(self) -> None:
        """Rewrite the journal with the pending requests only (their records are copied).
        Only after :meth:`sync`: the ``D`` of every request left out is durable."""
        live = self._live
        marks = [(p, c, span) for p, m in self._marks.items() if p in live for c, span in m.items()]
        spans = [self._run_span, *live.values(), *(span for _, _, span in marks)]
        offsets = self.journal.rewrite_frames(self.journal.read_frames(spans))
        self._run_span = offsets[0]
        self._live = dict(zip(live, offsets[1 : 1 + len(live)], strict=True))
        self._marks = {}
        for (parent, child, _), span in zip(marks, offsets[1 + len(live) :], strict=True):
            self._marks.setdefault(parent, {})[child] = span
        self._dead_bytes = 0

    def redelivers(self, item: Any, key: str) -> bool:
        """Whether ``item``, a duplicate of its own URL ``key``, is delivered again: it came
        from a request re-queued after a crash, or ``key`` was kept by a run that crashed
        (its request unjournaled: a start request, which the spider sends again). Either way
        the document may have been kept before the crash without its item reaching the feed.
        Once per key."""
        if self.recovered_items.get(id(item)) is item:
            return True
        if key in self.unsure_kept:
            self.unsure_kept.discard(key)
            return True
        return False

    def close(self) -> None:
        """A clean close: Scrapy's queue holds what is still pending. The feeds are made
        durable first: after the ``C`` nothing of this run is crawled again."""
        if self._open:
            self._open = False
            try:
                sync_feeds(self.crawler)
                self.journal.append(b"C")
            finally:  # without the "C" (a feed could not be flushed) the next start re-queues
                self.journal.close()

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


def _q_record(fingerprint: bytes, data: bytes) -> bytes:
    return b"Q" + fingerprint + _FORMAT_BYTE + data


def _raw_fp(fp: Any) -> bytes | None:
    """The fingerprint of a hex string in meta; None for anything else."""
    try:
        raw = bytes.fromhex(fp)
    except (TypeError, ValueError):
        return None
    return raw if len(raw) == _FP else None
