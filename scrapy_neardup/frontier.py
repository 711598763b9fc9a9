"""The crawl frontier, journaled, so that a SIGKILL never loses a URL that was still to crawl.

Why: the URL filter records a URL when its request is *scheduled*. Scrapy writes its own
JOBDIR request queue only at a clean close, so after a SIGKILL the queue is gone (or stale)
while the URL stays recorded: on restart every link to it is filtered and the pages that were
waiting are never crawled. A crawl killed once would lose most of its documents.

The fix: every request the URL filter lets through is journaled (``Q``) with Scrapy's own
request serialisation before its URL is recorded, and marked done (``D``) once its response
went through the spider and every item it yielded reached its end (scraped, dropped or
failed). At start after a crash (no ``C`` record at the end), the requests queued and not done
are scheduled again, ahead of the spider's start requests, and pass the URL filter once
(duplicate *content* is still caught by the pipeline). After a clean close Scrapy's queue is
trusted and nothing is re-queued.

Ordering, so that the files on disk are always consistent after a crash: ``urls.journal``
syncs this journal first, and this journal syncs ``content.journal`` first. So a recorded URL
always has its ``Q``, and a ``D`` always has the kept/duplicate records of its items.

``frontier.journal`` records (framed as every journal, see :mod:`scrapy_neardup.storage.journal`)::

    b"Q" | 16-byte URL fingerprint | pickle (protocol 4) of Request.to_dict()
    b"D" | 16-byte URL fingerprint
    b"C"                                  clean close: Scrapy's JOBDIR queue holds the frontier

At start the journal is compacted to its pending ``Q`` records (the ``C`` is consumed: a crash
later in the run must re-queue them, since Scrapy's queue is then partly consumed). While the
crawl runs it is compacted again whenever the records of done requests outweigh the pending
ones (and it is over ``COMPACT_MIN_BYTES``), so it stays about twice the size of the requests
still queued: only their offsets are kept in memory, the compaction copies their records. Requests
that cannot be serialised (a lambda callback, unpicklable meta) are counted and, as in
Scrapy's own disk queue, not persisted; requests with ``dont_filter=True`` do not pass the URL
filter and are not journaled either (Scrapy's start requests are re-sent by the spider anyway).
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage.journal import FRAME_OVERHEAD, Journal

if TYPE_CHECKING:
    from scrapy import Request

logger = logging.getLogger(__name__)

FRONTIER_JOURNAL = "frontier.journal"
#: Request meta: hex fingerprint of the frontier entry a request (or its retry or redirect) is.
FRONTIER_META = "_neardup_frontier"
#: Request meta: the URL of a request re-queued after a crash; it passes the URL filter once.
RECOVERED_META = "_neardup_recovered"

_FP = 16
#: The journal is never compacted below this size (compaction then costs more than it saves).
COMPACT_MIN_BYTES = 4 * 1024 * 1024


class Frontier:
    """Journal of the requests let through the URL filter and not yet done."""

    def __init__(self, directory: Path, flush_interval: float, stats: Any = None) -> None:
        self.journal = Journal(directory / FRONTIER_JOURNAL, flush_interval)
        self.stats = stats
        self.crawler: Any = None
        #: The requests a crashed run left pending (fingerprint -> serialised request), until
        #: :meth:`recover` has scheduled them again.
        self.pending: dict[bytes, bytes] = {}
        self.crashed = False
        #: Items of responses to re-queued requests, until they reach their end.
        self.recovered_items: dict[int, Any] = {}
        self._live: dict[bytes, tuple[int, int]] = {}  # fingerprint -> (offset, frame length)
        self._dead_bytes = 0

    def open(self) -> None:
        """Replay the journal: what is pending, and whether the last run ended cleanly."""
        pending: dict[bytes, bytes] = {}
        clean = True  # an empty journal: a first run, or a clean close with nothing pending
        for payload in self.journal.open():
            kind = payload[:1]
            if kind == b"Q" and len(payload) > 1 + _FP:
                pending[payload[1 : 1 + _FP]] = payload[1 + _FP :]
                clean = False
            elif kind == b"D" and len(payload) == 1 + _FP:
                pending.pop(payload[1:], None)
                clean = False
            elif payload == b"C":
                clean = True
            else:
                raise StateError(
                    f"unknown frontier record {payload[:1]!r} (from another version?)",
                    path=str(self.journal.path),
                )
        self.pending = pending
        self.crashed = not clean and bool(pending)
        # Compacted, and without the "C": from now on Scrapy's queue is being consumed, so
        # a crash at any point of this run must re-queue what is pending.
        spans = self.journal.rewrite([b"Q" + fp + data for fp, data in pending.items()])
        self._live = dict(zip(pending, spans, strict=True))
        self._dead_bytes = 0

    def recover(self, spider: Any) -> list[Request]:
        """The requests to schedule again after a crash (once; empty after a clean close)."""
        from scrapy.utils.request import request_from_dict

        if not self.crashed:
            self.pending = {}  # Scrapy's own queue holds them (a clean close)
            return []
        self.crashed = False
        requests = []
        for fp, data in self.pending.items():
            try:
                request = request_from_dict(pickle.loads(data), spider=spider)
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
        """Journal a request the URL filter let through (before its URL is recorded)."""
        previous = request.meta.get(FRONTIER_META)
        request.meta[FRONTIER_META] = fingerprint.hex()
        spider = getattr(self.crawler, "spider", None)
        try:
            data = pickle.dumps(request.to_dict(spider=spider), protocol=4)
        except (pickle.PicklingError, AttributeError, TypeError, ValueError) as exc:
            self._inc("neardup/frontier/unserializable")
            logger.debug("scrapy-neardup: request %s not journaled: %r", request, exc)
            return
        offset = self.journal.append(b"Q" + fingerprint + data)
        old = self._live.get(fingerprint)
        if old is not None:
            self._dead_bytes += old[1]
        self._live[fingerprint] = (offset, self.journal.tell() - offset)
        if previous and previous != fingerprint.hex():
            # A redirect: the new request (journaled just now) takes over from the old one.
            self.done_hex(previous)

    def done(self, request: Request) -> None:
        """The request's response went through the spider, and its items through the pipelines."""
        fp = request.meta.get(FRONTIER_META)
        if fp:
            self.done_hex(fp)

    def done_hex(self, fp: str) -> None:
        try:
            raw = bytes.fromhex(fp)
        except (TypeError, ValueError):
            return
        live = self._live.pop(raw, None) if len(raw) == _FP else None
        if live is None:
            return  # never journaled (unserialisable), or done already
        self.journal.append(b"D" + raw)
        self._dead_bytes += live[1] + FRAME_OVERHEAD + 1 + _FP
        if self._dead_bytes > max(COMPACT_MIN_BYTES, self.journal.tell() - self._dead_bytes):
            self.compact()

    def compact(self) -> None:
        """Rewrite the journal with the pending requests only (their records are copied)."""
        if self.journal.before_sync is not None:
            self.journal.before_sync()  # the done requests' items are durable first
        frames = self.journal.read_frames(self._live.values())
        offsets = self.journal.rewrite_frames(frames)
        self._live = dict(zip(self._live, offsets, strict=True))
        self._dead_bytes = 0

    def is_recovered_item(self, item: Any) -> bool:
        """Whether ``item`` came from a request re-queued after a crash: its document may
        have been kept before the crash without the item ever reaching the feed."""
        return self.recovered_items.get(id(item)) is item

    def sync(self) -> None:
        self.journal.sync()

    def close(self) -> None:
        """A clean close: Scrapy's queue holds what is still pending."""
        if self.journal._file is not None:
            self.journal.append(b"C")
            self.journal.close()

    def _inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)
