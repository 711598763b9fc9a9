"""The crawl frontier, recorded, so that a SIGKILL never loses a URL that was still to crawl.

Promises: every request the URL filter lets through is recorded (a row of the state
database's ``requests``) in the transaction of its URL key or an earlier one; it is done (its
row deleted) only once its items are durable in the feed exports (:mod:`scrapy_neardup.feeds`);
after a crash the requests recorded and not done are scheduled again. Requests are written by
:mod:`scrapy_neardup.request_codec`, never pickled; a pickled one stops the start with a
:class:`~scrapy_neardup.exceptions.StateError`. It must not decide which URLs are new (the
state does) nor write feed files. Rationale: ``docs/design.md#frontier``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.feeds import sync_feeds
from scrapy_neardup.meta import FRONTIER_META, PARENT_META, RECOVERED_META
from scrapy_neardup.request_codec import request_from_json, request_to_json
from scrapy_neardup.storage.statedb import StateDB

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)

_FP = 16
#: The format byte a request's data starts with: JSON of ``Request.to_dict()``.
REQUEST_FORMAT = 1
_FORMAT_BYTE = bytes([REQUEST_FORMAT])
_PICKLE = 0x80  # how a pickle (protocol 2 or later) starts: the format before REQUEST_FORMAT
#: The ``run`` meta of a run under way; a start that finds it knows the last run crashed.
RUNNING, CLOSED = "running", "closed"


class Frontier:
    """The requests let through the URL filter and not yet done, in the state database."""

    def __init__(self, db: StateDB, stats: Any = None) -> None:
        self.db = db
        self.stats = stats
        #: The crawler whose feed exports must be durable before a request is done.
        self.crawler: Any = None
        #: What a crashed run left pending (fingerprint -> serialised request), until
        #: :meth:`recover` has scheduled it again.
        self.pending: dict[bytes, bytes] = {}
        self.crashed = False
        self.ended_cleanly = True
        #: Documents kept last before a crash (set by the state after :meth:`read`).
        self.unsure_kept: set[str] = set()
        #: Items of responses to re-queued requests, until they reach their end.
        self.recovered_items: dict[int, Any] = {}
        self._live: dict[bytes, int] = {}  # fingerprint -> seq of its row
        self._done: dict[bytes, int] = {}  # done, row not deleted yet (see sync())
        #: Requests that yielded one that could not be recorded: never done in this run.
        self._pinned: set[bytes] = set()
        #: The marks of pending requests: parent -> child keys.
        self._marks: dict[bytes, set[bytes]] = {}
        #: Child keys of the marks of the crashed run's pending requests: each passes the URL
        #: filter once (:meth:`take_pass`).
        self.passes: set[bytes] = set()
        self._warned: set[str] = set()  # the kinds of value logged at WARNING already
        self._seq = 0
        self._superseded: list[int] = []
        self._open = False

    def read(self) -> None:
        """Read what is pending, and whether the last run ended cleanly (nothing written)."""
        superseded = []  # rows of a URL queued again after clear_urls: the last one counts
        for seq, fp, data in self.db.requests():
            version = data[0] if data else -1
            if version != REQUEST_FORMAT:
                problem = (
                    "pickled by an earlier version of scrapy-neardup"
                    if version == _PICKLE
                    else f"in an unknown format ({version}; a newer version?)"
                )
                raise StateError(
                    f"holds requests {problem}; they are not loaded (unpickling a crafted "
                    "record would run its code). Finish or discard that crawl with the "
                    "version that wrote it, or start a new JOBDIR",
                    path=str(self.db.path),
                )
            fp = bytes(fp)
            if fp in self._live:
                superseded.append(self._live[fp])
            self._live[fp] = seq
            self.pending[fp] = bytes(data[1:])
            self._seq = seq
        self._superseded = superseded
        for parent, child in self.db.marks():
            self._marks.setdefault(bytes(parent), set()).add(bytes(child))
        # After a crash, Scrapy's own JOBDIR queue is stale (StateDirectory sets it aside).
        self.ended_cleanly = self.db.meta("run") != RUNNING
        self.crashed = not self.ended_cleanly and bool(self.pending)

    def start(self) -> None:
        """Record that a run is under way, committed at once (a crash from now on must
        re-queue what is pending). The marks of requests done go; those of pending ones stay."""
        db = self.db
        db.drop_requests(self._superseded)
        db.drop_marks([parent for parent in self._marks if parent not in self.pending])
        self._marks = {p: children for p, children in self._marks.items() if p in self.pending}
        self.passes = set().union(*self._marks.values()) if self.crashed else set()
        db.set_meta("run", RUNNING)
        db.checkpoint()  # in the file itself: a lost WAL must never make it "closed" again
        self._open = True

    def recover(self, spider: Any) -> list[Request]:
        """The requests to schedule again after a crash (once; empty after a clean close)."""
        pending, self.pending = self.pending, {}  # after a clean close: in Scrapy's own queue
        if not self.crashed:
            return []
        self.crashed = False
        requests = []
        for fp, data in pending.items():
            try:
                request = request_from_json(data, spider)
            except Exception as exc:  # the spider changed: a callback is gone, a class moved
                self._inc("neardup/frontier/unrecoverable")
                logger.warning("scrapy-neardup: cannot re-queue a request %s: %r", fp.hex(), exc)
                continue
            request.meta[FRONTIER_META] = fp.hex()
            request.meta[RECOVERED_META] = request.url
            requests.append(request)
        if requests:
            self._inc("neardup/frontier/recovered", len(requests))
            logger.info(
                "scrapy-neardup: the last run did not end cleanly; %d requests it had queued "
                "are scheduled again",
                len(requests),
            )
        return requests

    def schedule(self, request: Request, fingerprint: bytes) -> None:
        """Record a request the URL filter let through (before its URL key is recorded);
        a redirect's new request takes over from the old one."""
        previous = request.meta.get(FRONTIER_META)
        try:
            data = request_to_json(request, getattr(self.crawler, "spider", None))
        except (AttributeError, TypeError, ValueError) as exc:
            self._unjournaled(request, fingerprint, exc)
            return
        hex_fp = request.meta[FRONTIER_META] = fingerprint.hex()
        self._seq += 1
        self.db.add_request(self._seq, fingerprint, _FORMAT_BYTE + data)
        # Its older row (a URL queued again after clear_urls) is superseded by this one.
        old = self._live.get(fingerprint) or self._done.pop(fingerprint, None)
        if old is not None:
            self.db.drop_requests([old])
        self._live[fingerprint] = self._seq
        if previous and previous != hex_fp:
            self.done_hex(previous)

    def hold(self, requests: Sequence[Request], fingerprints: Sequence[bytes]) -> list[bool]:
        """Record and commit (not fsynced) ``requests`` before a shared URL filter (Redis)
        says whether they are new, since Redis records a URL as it answers; :meth:`release`
        one when the answer is "seen". False (nothing recorded) for one pending already."""
        held = []
        for request, fingerprint in zip(requests, fingerprints, strict=True):
            held.append(fingerprint not in self._live and fingerprint not in self._done)
            if held[-1]:
                self.schedule(request, fingerprint)
        if any(held):
            self.db.commit()
        return held

    def release(self, fingerprint: bytes) -> None:
        """The shared filter had the request held: it is not crawled, its row goes."""
        seq = self._live.pop(fingerprint, None)
        if seq is not None:
            self.db.drop_requests([seq])

    def _unjournaled(self, request: Request, fingerprint: bytes, exc: Exception) -> None:
        """``request`` cannot be journaled: the request whose response yielded it stays
        pending (:meth:`_pin`), so that a crash crawls that one again, and it again."""
        self._inc("neardup/frontier/unserializable")
        parent = _raw_fp(request.meta.get(PARENT_META))
        kept = parent is not None and self._pin(parent, fingerprint)
        kind = getattr(exc, "kind", None) or type(exc).__name__
        log = logger.debug if kind in self._warned else logger.warning
        self._warned.add(kind)
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
        """Keep ``parent`` pending for the rest of this run, and record a mark: after a crash
        it is crawled again, and its child ``child`` (a request key) passes the URL filter
        once. False when ``parent`` is not pending (done and written, or never journaled)."""
        if parent not in self._pinned:
            span = self._done.pop(parent, None)  # done, its row not deleted yet: pending again
            if span is not None:
                self._live[parent] = span
            if parent not in self._live:
                return False
            self._pinned.add(parent)
        marks = self._marks.setdefault(parent, set())
        if child not in marks:  # in the child's URL key's transaction, or an earlier one
            marks.add(child)
            self.db.add_mark(parent, child)
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
        if key not in self.passes:
            return False
        self.passes.discard(key)
        self._inc("neardup/frontier/passed")
        return True

    def done(self, request: Request) -> None:
        """The request's response went through the spider, and its items through the
        pipelines; its row goes at the next :meth:`sync` (at once with a flush interval of 0)."""
        self.done_hex(request.meta.get(FRONTIER_META))

    def done_hex(self, fp: str | None) -> None:
        """:meth:`done` of the request of hex fingerprint ``fp`` (None: not recorded)."""
        raw = _raw_fp(fp)
        if raw is None or raw in self._pinned:  # pinned: it yielded an unrecorded request
            return
        live = self._live.pop(raw, None)
        if live is not None:  # else never recorded (unserialisable), or done already
            self._done[raw] = live
            if self.db.flush_interval == 0:  # every record synced: this one too, now
                self.sync()

    def sync(self) -> None:
        """Make done requests durable, after everything they stand for: the documents of
        their items (committed with the rest of the state), then their items in the feed
        files, then the deletion of their rows."""
        if not self._open:
            return
        self.db.commit(durable=True)
        if self._done:
            sync_feeds(self.crawler)
            done, self._done = self._done, {}
            self.db.drop_requests(done.values())
            self.db.drop_marks([fp for fp in done if self._marks.pop(fp, None)])
            self.db.commit(durable=True)

    def redelivers(self, item: Any, key: str) -> bool:
        """Whether ``item``, a duplicate of its own URL ``key``, is delivered again (once per
        key): it came from a request re-queued after a crash, or ``key`` was kept by a run
        that crashed; either way its item may not have reached the feed before the crash."""
        if self.recovered_items.get(id(item)) is item:
            return True
        if key in self.unsure_kept:
            self.unsure_kept.discard(key)
            return True
        return False

    def close(self, meta: dict[str, str] | None = None) -> None:
        """A clean close: Scrapy's queue holds what is still pending. The feeds are made
        durable first: once the run is recorded closed (with ``meta``, in the same commit),
        nothing of it is crawled again."""
        if self._open:
            self.sync()
            self._open = False
            for name, value in (meta or {}).items():
                self.db.set_meta(name, value)
            self.db.set_meta("run", CLOSED)
            self.db.commit(durable=True)

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


def _raw_fp(fp: Any) -> bytes | None:
    """The fingerprint of a hex string in meta; None for anything else."""
    try:
        raw = bytes.fromhex(fp)
    except (TypeError, ValueError):
        return None
    return raw if len(raw) == _FP else None
