"""The crawl frontier, journaled, so that a SIGKILL never loses a URL that was still to crawl.

Why: the URL filter records a URL when its request is *scheduled*. Scrapy writes its own
JOBDIR request queue only at a clean close, so after a SIGKILL the queue is gone (or stale)
while the URL stays recorded: on restart every link to it is filtered and the pages that were
waiting are never crawled. A crawl killed once would lose most of its documents.

The fix: every request the URL filter lets through is journaled (``Q``) with Scrapy's own
request serialisation before its URL is recorded, and marked done (``D``) once its response
went through the spider, every item it yielded reached its end (scraped, dropped or failed)
*and those items are durable in Scrapy's feed exports*. At start after a crash (no ``C``
record at the end), the requests queued and not done are scheduled again, ahead of the
spider's start requests, and pass the URL filter once (duplicate *content* is still caught by
the pipeline, which lets an item of its own URL through again: at least once, never lost).
After a clean close Scrapy's queue is trusted and nothing is re-queued.

Done, and durable: :meth:`Frontier.done` only remembers the request. Its ``D`` is written at
the next :meth:`Frontier.sync` (the state's periodic sync, every ``NEARDUP_FLUSH_INTERVAL``,
or the sync of ``urls.journal``), which first syncs ``content.journal`` (``before_done``),
then flushes and fsyncs every open feed file (:func:`sync_feeds`), and only then appends the
``D`` records and fsyncs this journal. The ``D`` records wait in memory, not in the journal's
write buffer, which a full buffer would push to the OS early, before the feed bytes of their
items; so the buffer only ever holds ``Q`` and ``X`` records (and the final ``C``).

Ordering, so that the files on disk are always consistent after a crash: a ``Q`` (or ``X``)
reaches the OS as it is appended (the other journals' buffers can spill before they sync),
``urls.journal`` syncs this journal first (:meth:`Frontier.sync`), ``content.journal`` syncs
this journal first (its ``Q`` records), and ``D`` records are written as above. So a
recorded URL always has its ``Q`` (or its parent's ``Q`` and ``X``); a kept/duplicate record
always has the ``Q`` of its request (else a document kept before a crash, whose item never
reached the feed, would be found again as a new URL and dropped as a duplicate of itself);
and a ``D`` always has the kept/duplicate records of its items and the feed lines of its
scraped items.

``frontier.journal`` records (framed as every journal, see :mod:`scrapy_neardup.storage.journal`)::

    b"Q" | 16-byte URL fingerprint | b"\\x01" | JSON of Request.to_dict(), tagged (below)
    b"D" | 16-byte URL fingerprint
    b"X" | 16-byte fingerprint of a Q | 16-byte URL fingerprint of a request it yielded
    b"C"                                  clean close: Scrapy's JOBDIR queue holds the frontier
    b"R"                                  a run started (first record; no "C" after it: it crashed)

The byte after the fingerprint is the format of the request (1: JSON). Earlier versions
pickled the request there (a pickle starts with ``0x80``); a pickle is never loaded, since
unpickling a crafted record would run its code: such a journal stops the start with a
:class:`~scrapy_neardup.exceptions.StateError`.

What is journaled: str, bytes, int, float, bool, None and their subclasses (written as their
base: lxml's link text as a str, an ``IntEnum`` as an int); lists, tuples, sets, frozensets
and dicts of journaled values (a dict subclass as a dict, a named tuple as a tuple); the
standard library's ``datetime``, ``date``, ``time`` (with their UTC offset, and the zone of
a ``zoneinfo.ZoneInfo``), ``timedelta``, ``Decimal`` and ``UUID``; ``scrapy.Item``, dataclass
and attrs instances of a class found by its module and qualname; requests of any
``Request`` subclass, with callbacks and errbacks that are the spider's methods. JSON lacks
some of these, so they are tagged, as one-key objects: ``__bytes__`` (base64), ``__tuple__``,
``__set__``, ``__frozenset__`` (lists), ``__dict__`` (``[[key, value], ...]``: keys that are
not strings, or look like a tag), ``__datetime__``, ``__date__``, ``__time__`` (ISO 8601;
a datetime with a zone or a fold is ``[iso, zone, fold]``), ``__timedelta__`` (``[days,
seconds, microseconds]``), ``__decimal__``, ``__uuid__`` (strings), and ``__item__``,
``__dataclass__``, ``__attrs__`` (``[module, qualname, fields]``). Nothing is imported when
a record is read: a class (an item's, the request's ``_class``) is looked up in modules
already imported, and must be of the kind its tag says before it is made.

A request holding anything else cannot be journaled: counted in
``neardup/frontier/unserializable``, logged at WARNING the first time for each type. The
request whose response yielded it (its frontier fingerprint in ``PARENT_META``, set by
``FrontierMiddleware``) is then pinned: never done in this run, so a crash crawls it again.
The ``X`` record, appended before the child's URL is recorded, lets the child through the
URL filter once after that crash (it is recorded as seen; its parent yields it again). A
request without such a parent (a start request) is not persisted, as in Scrapy's disk queue;
nor are requests with ``dont_filter=True``, which do not pass the URL filter.

At start the journal is compacted to its pending ``Q`` records and their ``X`` records (the
``C`` is consumed: a crash later in the run must re-queue them, since Scrapy's queue is then
partly consumed). While the crawl runs it is compacted again whenever the records of done
requests outweigh the pending ones (and it is over ``COMPACT_MIN_BYTES``), so it stays about
twice the size of the requests still queued: only their offsets are kept in memory, the
compaction copies their records.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime
import decimal
import errno
import functools
import io
import json
import logging
import operator
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

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
#: Request meta: the URL the URL filter checked (set by the dupefilter and the middleware).
CHECKED_META = "_neardup_checked_url"
#: Request meta: hex fingerprint of the frontier entry whose response yielded the request
#: (set by FrontierMiddleware): kept pending if the request cannot be journaled.
PARENT_META = "_neardup_parent"

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
        """Whether the request of hex fingerprint ``fp`` is kept pending for this run."""
        raw = _raw_fp(fp)
        return raw is not None and raw in self._pinned

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
        if not self._open:
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


# -- feed exports ---------------------------------------------------------------------------


def sync_feeds(crawler: Any) -> None:
    """Flush every open feed file of Scrapy's feed exports to the OS, and fsync it.

    Only local files can be made durable while the crawl runs: S3, GCS and FTP feeds are a
    temporary file uploaded at close (skipped here), stdout can only be flushed. Of the
    post-processing plugins, gzip is flushed to a point a reader can decompress up to; bz2
    and lzma keep what they compress until the feed is closed.
    """
    from scrapy.extensions.feedexport import BlockingFeedStorage, FeedExporter

    get_extension = getattr(crawler, "get_extension", None)
    exporter = get_extension(FeedExporter) if get_extension is not None else None
    if exporter is None:
        return
    for slot in exporter.slots:
        if slot.file is None or isinstance(slot.storage, BlockingFeedStorage):
            continue
        stream = getattr(slot.exporter, "stream", None)  # csv and xml write through a text layer
        if isinstance(stream, io.IOBase) and not stream.closed:
            stream.flush()
        _sync_file(slot.file)


def _sync_file(file: Any) -> None:
    from scrapy.extensions.postprocessing import PostProcessingManager

    if isinstance(file, PostProcessingManager):
        # Each plugin writes through the compressing file object it holds (GzipFile, ...).
        plugin = file.head_plugin
        while plugin is not file.file and plugin is not None:
            for value in vars(plugin).values():
                if isinstance(value, io.IOBase) and value is not plugin.file and not value.closed:
                    # AttributeError: a GzipFile over another plugin, which has no flush()
                    with contextlib.suppress(AttributeError):
                        value.flush()
            plugin = getattr(plugin, "file", None)
        file = file.file
    if getattr(file, "closed", True):
        return  # stored already (its slot closed): nothing left to lose
    file.flush()
    try:
        fileno = file.fileno()
    except (AttributeError, OSError, ValueError):
        return  # no OS file (io.BytesIO)
    try:
        os.fsync(fileno)
    except OSError as exc:
        if exc.errno not in _CANNOT_SYNC:
            raise  # a disk error: the items are not durable, so neither are their requests


# fsync() of a pipe or a terminal (a feed to stdout): flushed is all there is.
_CANNOT_SYNC = frozenset({errno.EINVAL, errno.EROFS, errno.ENOTSUP})


# -- requests as JSON -----------------------------------------------------------------------

_TAGS = frozenset(
    (
        "__bytes__", "__tuple__", "__set__", "__frozenset__", "__dict__", "__item__",
        "__datetime__", "__date__", "__time__", "__timedelta__", "__decimal__", "__uuid__",
        "__dataclass__", "__attrs__",
    )
)  # fmt: skip
# JSON's own values: written as they are, without a call (most of a request is these).
_SCALARS = frozenset((str, int, bool, type(None)))
_CONTAINERS = frozenset((dict, list))


class _NotForOrjson(Exception):
    """A NaN or an infinity, which orjson would write as null."""


def request_to_json(request: Request, spider: Any = None) -> bytes:
    """``request.to_dict(spider=spider)`` as tagged JSON (see the module docstring), without
    this plugin's own meta keys (they are set again when the request is re-queued).
    TypeError or ValueError when the request holds something that cannot be written.

    orjson writes it (a tenth of ``json.dumps``' time: this runs for every new request);
    the standard library where orjson cannot write a value as it is: an int beyond 64
    bits, a NaN or an infinity (``json.loads`` reads both back)."""
    plain = _plain_to_json(request, spider)
    if plain is not None:
        return plain
    data = _to_dict(request, spider)
    meta = data.get("meta")
    if meta and not _INTERNAL_META.isdisjoint(meta):
        data["meta"] = {k: v for k, v in meta.items() if k not in _INTERNAL_META}
    try:
        return orjson.dumps(_encode(data))
    except (orjson.JSONEncodeError, _NotForOrjson):
        return json.dumps(_encode(data, True), ensure_ascii=False, separators=(",", ":")).encode()


def _plain_to_json(request: Request, spider: Any) -> bytes | None:
    """The JSON of a request of the usual kind (a link followed: a GET with no body, headers,
    cookies, flags or keyword arguments, meta of strings, ints and booleans, no errback, a
    callback that is the spider's method of its name or none), else None.

    It leaves out the fields that hold their defaults, which ``request_from_dict`` fills in
    again, and is written without walking the request: this runs for every new request, in
    the reactor's thread, and the full way cost a third of the URL filter's time. The
    request's slots are read in one call, without making the parts Scrapy makes on first
    access (a ``Headers`` object costs several microseconds, and would stay with the
    request while it waits in the queue)."""
    if type(request) is not _request_class():
        return None
    try:
        (url, body, method, encoding, meta, callback, errback, priority, dont_filter,
         *lazy) = _PLAIN_FIELDS(request)  # fmt: skip
    except AttributeError:  # not Scrapy's slots (another version): the full way
        return None
    if body or errback is not None or any(lazy):
        return None
    data: dict[str, Any] = {"url": url}
    if callback is not None:
        name = getattr(callback, "__name__", None)
        if (
            spider is None
            or not name
            or getattr(callback, "__self__", None) is not spider
            or getattr(spider, name, None) != callback
        ):
            return None
        data["callback"] = name
    if meta:
        user = None
        for key, value in meta.items():
            if key in _INTERNAL_META:
                continue
            if type(key) is not str or type(value) not in _PLAIN_META or key in _TAGS:
                return None
            if user is None:
                user = {}
            user[key] = value
        if user is not None:
            data["meta"] = user
    if priority:
        data["priority"] = priority
    if dont_filter:
        data["dont_filter"] = True
    if method != "GET":
        data["method"] = method
    if encoding != "utf-8":
        data["encoding"] = encoding
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:  # an int beyond 64 bits: the full way writes it
        return None


#: Meta values :func:`_plain_to_json` writes as they are (a float may be a NaN: not here).
_PLAIN_META = frozenset((str, int, bool, type(None)))
#: What :func:`_plain_to_json` reads of a request, in one call: Scrapy's slots, the lazy
#: parts (headers, cookies, flags, keyword arguments) last, None until first accessed.
_PLAIN_FIELDS = operator.attrgetter(
    "_url", "_body", "method", "_encoding", "_meta", "callback", "errback", "priority",
    "dont_filter", "_headers", "_cookies", "_flags", "_cb_kwargs",
)  # fmt: skip
#: This plugin's request meta, never journaled: it is about this run's copy of the request.
_INTERNAL_META = frozenset((FRONTIER_META, RECOVERED_META, CHECKED_META, PARENT_META))


def _to_dict(request: Request, spider: Any) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, without its search of the spider's members for the
    name of a callback (``inspect.getmembers``: a hundred microseconds a request, for
    every request of a crawl) where the callback is the spider's method of its own name.
    tests/test_frontier.py holds it to Scrapy's own on many kinds of request."""
    names = []
    for func in (request.callback, request.errback):
        if not callable(func):
            names.append(func)
            continue
        name = getattr(func, "__name__", None)
        if spider is None or getattr(func, "__self__", None) is not spider or not name:
            return request.to_dict(spider=spider)
        if getattr(spider, name, None) != func:
            return request.to_dict(spider=spider)
        names.append(name)
    data = {"url": request.url, "callback": names[0], "errback": names[1]}
    data["headers"] = dict(request.headers)
    for attr in request.attributes:
        data.setdefault(attr, getattr(request, attr))
    if type(request) is not _request_class():
        data["_class"] = f"{type(request).__module__}.{type(request).__name__}"
    return data


@functools.cache
def _request_class() -> type:
    from scrapy import Request

    return Request


def request_from_json(data: bytes, spider: Any = None) -> Request:
    """The request :func:`request_to_json` wrote. Imports nothing: its class (``_class``),
    and the classes of items in it, must be in modules already imported (ValueError else)."""
    from scrapy import Request
    from scrapy.utils.request import request_from_dict

    d = _decode(json.loads(data))
    if not isinstance(d, dict):
        raise ValueError("a journaled request is not an object")
    if "_class" in d:
        cls = _imported_class(d["_class"])
        if not issubclass(cls, Request):
            raise ValueError(f"{d['_class']!r} is not a scrapy.Request subclass")
    # request_from_dict's load_object now finds the module imported: nothing is imported
    return request_from_dict(d, spider=spider)


class Unjournalable(TypeError):
    """A value of a type the journal cannot hold (:attr:`kind` names the type)."""

    def __init__(self, kind: type, why: str = "") -> None:
        self.kind = f"{kind.__module__}.{kind.__qualname__}"
        super().__init__(f"a {self.kind}{why} cannot be journaled")


def _encode(obj: Any, any_float: bool = False) -> Any:
    kind = type(obj)
    if kind in _SCALARS:
        return obj
    if kind is float:
        if obj - obj != 0.0 and not any_float:  # NaN or an infinity
            raise _NotForOrjson
        return obj
    if kind is dict:
        out = {}
        for k, v in obj.items():
            if type(k) is not str or k in _TAGS:
                pairs = [[_encode(k, any_float), _encode(v, any_float)] for k, v in obj.items()]
                return {"__dict__": pairs}
            kind = type(v)
            # An empty dict or list is itself in JSON (a request has several: no call).
            out[k] = (
                v if kind in _SCALARS or (kind in _CONTAINERS and not v) else _encode(v, any_float)
            )
        return out
    if kind is list:
        return [v if type(v) in _SCALARS else _encode(v, any_float) for v in obj]
    if kind is bytes:
        return {"__bytes__": base64.b64encode(obj).decode("ascii")}
    if kind is tuple:
        return {"__tuple__": [_encode(v, any_float) for v in obj]}
    if kind in (set, frozenset):
        return {f"__{kind.__name__}__": [_encode(v, any_float) for v in obj]}
    return _encode_other(obj, kind, any_float)


def _encode_other(obj: Any, kind: type, any_float: bool) -> Any:
    """The values of :func:`_encode` that are not JSON's own: subclasses of the builtins
    (written as their base: lxml's ``_ElementUnicodeResult`` as a str, an ``IntEnum`` as an
    int, an ``OrderedDict`` as a dict, a named tuple as a tuple), the standard library's
    dates, times, decimals and UUIDs, and items (``scrapy.Item``, dataclass and attrs
    instances) of a class that can be found again by its name."""
    if isinstance(obj, str):
        return str.__str__(obj)  # a plain str of the same characters
    if isinstance(obj, int):  # bool cannot be subclassed: an int subclass
        return int.__int__(obj)
    if isinstance(obj, float):
        return _encode(float.__float__(obj), any_float)
    if isinstance(obj, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, dict):
        return _encode(dict(obj), any_float)
    if isinstance(obj, list):
        return _encode(list(obj), any_float)
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, any_float) for v in obj]}
    if isinstance(obj, frozenset):
        return {"__frozenset__": [_encode(v, any_float) for v in obj]}
    if isinstance(obj, set):
        return {"__set__": [_encode(v, any_float) for v in obj]}
    if isinstance(obj, datetime.datetime):
        zone = _zone_key(obj.tzinfo)
        if zone is None and not obj.fold:
            return {"__datetime__": obj.isoformat()}
        return {"__datetime__": [obj.isoformat(), zone, obj.fold]}
    if isinstance(obj, datetime.date):
        return {"__date__": obj.isoformat()}
    if isinstance(obj, datetime.time):
        return {"__time__": [obj.isoformat(), obj.fold] if obj.fold else obj.isoformat()}
    if isinstance(obj, datetime.timedelta):
        return {"__timedelta__": [obj.days, obj.seconds, obj.microseconds]}
    if isinstance(obj, decimal.Decimal):
        return {"__decimal__": str(obj)}
    if isinstance(obj, uuid.UUID):
        return {"__uuid__": str(obj)}
    from scrapy import Item

    if isinstance(obj, Item):
        return {"__item__": [*_class_path(kind), _encode(dict(obj), any_float)]}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = _dataclass_fields(kind)
        fields = {name: getattr(obj, name) for name, _ in names}
        return {"__dataclass__": [*_class_path(kind), _encode(fields, any_float)]}
    attr = sys.modules.get("attr")  # an attrs instance has it imported
    if attr is not None and attr.has(kind):
        fields = {a.name: getattr(obj, a.name) for a in attr.fields(kind)}
        return {"__attrs__": [*_class_path(kind), _encode(fields, any_float)]}
    raise Unjournalable(kind)


def _zone_key(tzinfo: Any) -> str | None:
    """The IANA name of a ``zoneinfo.ZoneInfo`` (kept with its offset), else None."""
    zoneinfo = sys.modules.get("zoneinfo")
    if zoneinfo is not None and isinstance(tzinfo, zoneinfo.ZoneInfo):
        return tzinfo.key
    return None


@functools.lru_cache(maxsize=256)
def _class_path(cls: type) -> tuple[str, str]:
    """``(module, qualname)`` of an item class, which :func:`_imported_class` finds again
    (Unjournalable else: a class made in a function cannot be found by its name)."""
    module, qualname = cls.__module__, cls.__qualname__
    try:
        found = _imported_class(f"{module}.{qualname}", module)
    except ValueError:
        found = None
    if found is not cls:
        raise Unjournalable(cls, " (not found by its name)")
    return module, qualname


@functools.lru_cache(maxsize=256)
def _dataclass_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """A dataclass's fields: (name, passed to ``__init__``). Unjournalable when its
    ``__init__`` takes an ``InitVar`` without a default, which no field holds."""
    for f in getattr(cls, "__dataclass_fields__", {}).values():
        if (
            getattr(f, "_field_type", None) is getattr(dataclasses, "_FIELD_INITVAR", False)
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ):
            raise Unjournalable(cls, " (an InitVar without a default)")
    return tuple((f.name, f.init) for f in dataclasses.fields(cls))


def _decode(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if not any(k in _TAGS for k in obj):
        return {k: _decode(v) for k, v in obj.items()}
    if len(obj) != 1:
        raise ValueError(f"a tag among other keys: {sorted(obj)[:5]}")
    ((tag, value),) = obj.items()
    decode = _DECODERS.get(tag)
    if decode is None:  # "__item__", "__dataclass__", "__attrs__"
        return _decode_item(tag, value)
    return decode(value)


def _decode_datetime(value: Any) -> datetime.datetime:
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value)
    text, zone, fold = value
    found = datetime.datetime.fromisoformat(text)
    if zone is not None:
        zoneinfo = sys.modules.get("zoneinfo")
        if zoneinfo is None:
            import zoneinfo  # the standard library's (it reads the system's zone files)
        # Its wall time in its zone (the offset written is that zone's at that time).
        found = found.replace(tzinfo=zoneinfo.ZoneInfo(_text(zone)))
    return found.replace(fold=1 if fold else 0)  # which of a repeated hour


def _decode_time(value: Any) -> datetime.time:
    if isinstance(value, str):
        return datetime.time.fromisoformat(value)
    text, fold = value
    return datetime.time.fromisoformat(text).replace(fold=1 if fold else 0)


def _decode_timedelta(value: Any) -> datetime.timedelta:
    days, seconds, microseconds = value
    if not all(type(v) is int for v in value):
        raise ValueError(f"not a timedelta: {value!r}")
    return datetime.timedelta(days=days, seconds=seconds, microseconds=microseconds)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "__bytes__": lambda value: base64.b64decode(value, validate=True),
    "__tuple__": lambda value: tuple(_decode(value)),
    "__set__": lambda value: set(_decode(value)),
    "__frozenset__": lambda value: frozenset(_decode(value)),
    "__dict__": lambda value: {_decode(k): _decode(v) for k, v in value},
    "__datetime__": _decode_datetime,
    "__date__": datetime.date.fromisoformat,
    "__time__": _decode_time,
    "__timedelta__": _decode_timedelta,
    "__decimal__": lambda value: decimal.Decimal(_text(value)),
    "__uuid__": lambda value: uuid.UUID(_text(value)),
}


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a string: {value!r}")
    return value


def _decode_item(tag: str, value: Any) -> Any:
    """An item of a class looked up in the modules already imported, and checked to be of
    the kind its tag says before it is made: a ``scrapy.Item``, a dataclass, an attrs class."""
    from scrapy import Item

    module, qualname, fields = value
    cls = _imported_class(f"{module}.{qualname}", module)
    fields = _decode(fields)
    if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
        raise ValueError(f"the fields of a {module}.{qualname} are not an object")
    if tag == "__item__":
        if not issubclass(cls, Item):
            raise ValueError(f"{module}.{qualname} is not a scrapy.Item subclass")
        return cls(fields)
    if tag == "__dataclass__":
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"{module}.{qualname} is not a dataclass")
        names = {name: name if passed else None for name, passed in _dataclass_fields(cls)}
    else:
        attr = sys.modules.get("attr")
        if attr is None or not attr.has(cls):
            raise ValueError(f"{module}.{qualname} is not an attrs class")
        names = {
            a.name: (getattr(a, "alias", None) or a.name.lstrip("_")) if a.init else None
            for a in attr.fields(cls)
        }
    if not fields.keys() <= names.keys():
        raise ValueError(f"not fields of {module}.{qualname}: {sorted(fields - names.keys())}")
    return _made(cls, {names[k]: v for k, v in fields.items() if names[k]}, fields)


def _made(cls: type, arguments: dict[str, Any], fields: dict[str, Any]) -> Any:
    """``cls(**arguments)``, then every field set as it was written (what ``__post_init__``
    or a converter made of them aside): the instance equals the one journaled."""
    obj = cls(**arguments)
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    return obj


def _imported_class(path: Any, module: str | None = None) -> type:
    """The class at ``path`` (``module.Name``, or ``module`` then a qualname), looked up in
    a module already imported: never imports one a journal names."""
    if not isinstance(path, str):
        raise ValueError(f"not a class path: {path!r}")
    if module is None:
        module = path.rpartition(".")[0]
    found: Any = sys.modules.get(module)
    if found is None or not path.startswith(module + "."):
        raise ValueError(f"{path!r} is not in an imported module")
    for name in path[len(module) + 1 :].split("."):
        found = getattr(found, name, None)
    if not isinstance(found, type):
        raise ValueError(f"{path!r} is not a class")
    return found
