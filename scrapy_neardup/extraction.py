"""Main content with trafilatura, in worker processes, off the reactor.

Promises: the reactor only waits on a future and never runs trafilatura itself; each page
has a time and a memory limit (``NEARDUP_PAGE_TIMEOUT``, ``NEARDUP_PAGE_MEMORY``), and a page
over one is kept unchecked, counted and logged, its worker replaced; a worker that dies fails
its own task only; workers die with the crawler, however it ends. Byte-identical bodies are
extracted once. Must not: import jieba or anything a page does not need before it needs it.
Why pebble, the watchdog thread rather than ``RLIMIT_AS``, and how the limits were chosen:
``docs/design.md#extraction`` and ``#page-limits``.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from multiprocessing.connection import wait as wait_any
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

import numpy as np
import xxhash
from lxml import etree
from pebble import ProcessExpired, ProcessPool

from scrapy_neardup.exceptions import NearDupError

logger = logging.getLogger(__name__)


class _UnparsedPageFilter(logging.Filter):
    """Leaves out trafilatura's ERROR for a body it cannot parse as HTML (a JSON or plain-text
    response, a fragment): the plugin counts such pages (``neardup/extract/empty``), and as
    an ERROR the line would count in Scrapy's ``log_count/ERROR`` when extraction runs in the
    crawler process (``NEARDUP_WORKERS = 0``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("parsed tree length")


if not any(
    isinstance(f, _UnparsedPageFilter) for f in logging.getLogger("trafilatura.utils").filters
):
    logging.getLogger("trafilatura.utils").addFilter(_UnparsedPageFilter())

_EMPTY = ""
#: The workers' niceness when they are as many as the cores (see :func:`worker_niceness`).
WORKER_NICENESS = 5
#: Exit status of a worker ended by its memory watchdog (pebble's own exits are 0, 1, errnos
#: and signals).
MEMORY_EXIT = 86
#: How often the watchdog reads the worker's resident size during a task.
WATCH_INTERVAL = 0.05
#: A worker left this much above its resident size after warm-up by a task (a big page's
#: trees, freed but kept by malloc) gives the memory back to the system (``malloc_trim``,
#: a few ms): on sqlite3-doc's 766 pages, 47 trims (0.13 s in all) keep a worker near its
#: resting 60 MB where it otherwise stays at the 170 MB its biggest page took.
TRIM_ABOVE = 16 * 1024 * 1024
#: Page limit hits logged at WARNING before the rest go to DEBUG (unless NEARDUP_DEBUG).
FIRST_LOGGED = 5
_PR_SET_PDEATHSIG = 1

#: The whitespace of XPath's ``normalize-space()``: a line of only ``&nbsp;`` is kept.
_XPATH_SPACE = " \t\r\n"
#: Children that keep a ``<section>`` a paragraph (see _paragraph_sections).
_INLINE_TAGS = frozenset(
    "a abbr b br code em font i img label mark q s small span strong sub sup time u wbr".split()
)


class PageLimitError(NearDupError):
    """A page (or an item's text) went over ``NEARDUP_PAGE_TIMEOUT`` or ``NEARDUP_PAGE_MEMORY``
    in a worker, which was replaced. ``limit`` is ``"timeout"`` or ``"memory"``."""

    def __init__(self, limit: str, message: str) -> None:
        self.limit = limit
        super().__init__(message)


@dataclass(frozen=True)
class PageLines:
    """The text a reader of a page sees, as hashed lines (its text nodes, whitespace
    collapsed; scripts and styles left out) and their lengths in characters.

    Whatever any reading of a page keeps is made of these lines, so a page whose lines are
    all on a kept page says nothing that page does not, however short its fast reading was:
    the pipeline drops such an exact copy without reading it again in full (see
    :class:`KeptLines`). Text nodes, not the source's lines: a minified page is one source
    line, and one changed word would make all of it new."""

    hashes: np.ndarray  # uint32, one per line
    chars: np.ndarray  # uint32, the line's length

    @classmethod
    def of(cls, tree: Any) -> PageLines:
        """The lines of a parsed page; strips the tree's scripts and styles (call it last).

        A line is the text of an element or a tail, as lxml gives it (``itertext``), within
        the outermost ``<body>`` elements; lines that are only ASCII whitespace are left
        out. Linear in the page: the XPath ``//body//text()`` it replaces took seconds on
        a page of many thousand nodes (libxml2 sorts and merges its node sets)."""
        etree.strip_elements(tree, "script", "style", "template", with_tail=False)
        hashes, chars = [], []
        for body in tree.iter("body"):
            if any(parent.tag == "body" for parent in body.iterancestors()):
                continue  # its text is already in the outer body's
            for text in body.itertext():
                if not text.strip(_XPATH_SPACE):
                    continue
                line = " ".join(text.split())
                hashes.append(xxhash.xxh32_intdigest(line.encode()))
                chars.append(len(line))
        return cls(np.array(hashes, dtype=np.uint32), np.array(chars, dtype=np.uint32))

    def chars_not_in(self, kept: np.ndarray) -> int:
        """Characters of the lines that are not among ``kept`` (sorted line hashes)."""
        if not len(kept):
            return int(self.chars.sum())
        at = np.minimum(np.searchsorted(kept, self.hashes), len(kept) - 1)
        return int(self.chars[kept[at] != self.hashes].sum())


@dataclass(frozen=True)
class Extracted:
    """The text of a page and how it was found: ``trafilatura``, ``fallback`` or ``empty``;
    for a fast reading by trafilatura, the page's :class:`PageLines`."""

    text: str
    how: str
    title: str = ""
    lines: PageLines | None = field(default=None, compare=False)


def decode_body(body: bytes, encoding: str | None) -> str:
    """Bytes to text with the response's encoding; undecodable bytes are replaced, never fatal."""
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:  # an encoding name Python does not know
        return body.decode("utf-8", errors="replace")


def looks_binary(body: bytes, encoding: str | None = None) -> bool:
    """NUL bytes in the first KiB: an image, a PDF or a compressed blob, not a page (unless
    the page is in UTF-16 or UTF-32, where NUL bytes are normal)."""
    wide = (encoding or "").lower().replace("_", "-").startswith(("utf-16", "utf-32", "utf16"))
    return not wide and b"\x00" in body[:1024]


def sniff_utf16(body: bytes) -> str | None:
    """``utf-16-le``/``-be`` when every other byte of the start is NUL (markup in UTF-16 with
    neither a BOM nor a label, which HTTP and HTML detection miss), else None."""
    head = body[:1024]
    if len(head) >= 64:
        for encoding, nuls in (("utf-16-le", head[1::2]), ("utf-16-be", head[0::2])):
            if nuls.count(0) >= 0.9 * len(nuls):
                return encoding
    return None


def extract_main_text(
    body: bytes, url: str | None = None, encoding: str | None = None, fast: bool = True
) -> Extracted:
    """Title and main text of an HTML page; the whole visible text when trafilatura finds none.

    ``fast`` skips trafilatura's comparison with readability and jusText: a third of its
    time, and on the 181 annotated pages of the article-extraction benchmark its text is as
    close to the article or closer (token F1 0.963 against 0.961); ``False`` runs them."""
    import trafilatura
    from trafilatura.utils import load_html

    if not body.strip():
        return Extracted(_EMPTY, "empty")
    if looks_binary(body, encoding):
        encoding = sniff_utf16(body)  # UTF-16 without a BOM or a charset label
        if encoding is None:
            return Extracted(_EMPTY, "empty")
    html = decode_body(body, encoding)
    if "<" not in html:  # plain text or JSON: no page to read (trafilatura would log an ERROR)
        return Extracted(_EMPTY, "empty")
    title = ""
    try:
        # Parsed once here: the title is read from the tree, and trafilatura's own metadata
        # pass (dates, authors, JSON-LD: about a third of its time) is skipped.
        tree = load_html(html)
        if tree is None:
            doc = None
        else:
            title = _title(tree)
            _paragraph_sections(tree)
            doc = trafilatura.bare_extraction(
                tree,
                url=url,
                include_comments=False,
                with_metadata=False,
                deduplicate=False,
                fast=fast,
            )
    except Exception as exc:  # trafilatura and lxml raise many things on odd markup
        logger.debug("trafilatura failed on %s: %r", url, exc)
        doc = None
    text = (getattr(doc, "text", None) or "").strip()
    if text:
        # Only a fast reading may be read again before a drop; its page's lines can spare that.
        lines = _lines(tree, url) if fast else None
        return Extracted(f"{title}\n\n{text}" if title else text, "trafilatura", title, lines)
    try:
        _, text, _ = trafilatura.baseline(html)
    except Exception as exc:
        logger.debug("trafilatura baseline failed on %s: %r", url, exc)
        text = ""
    text = (text or "").strip()
    return Extracted(text, "fallback", title) if text else Extracted(_EMPTY, "empty", title)


def _paragraph_sections(tree: Any) -> None:
    """Read a ``<section>`` that holds only inline content as the paragraph it is to a reader.

    trafilatura 2.x drops such a section's text, so an article written as sections of spans
    (WeChat's editor and others like it) came out as the few ``<p>`` around it: a profile
    box, a credit line. Sections of blocks (Sphinx's, one per heading) stay as they are. On
    the 181 annotated pages of the article-extraction benchmark and the 115 pages with
    sections of the real documentation sites this changes one page, by two lines."""
    for element in tree.iter("section"):
        if (len(element) or (element.text or "").strip()) and all(
            child.tag in _INLINE_TAGS for child in element
        ):
            element.tag = "p"


def _lines(tree: Any, url: str | None) -> PageLines | None:
    """The page's lines; None (it is read again before a drop) when it has none in a body."""
    try:
        lines = PageLines.of(tree)
    except Exception as exc:  # lxml on odd markup
        logger.debug("no page lines for %s: %r", url, exc)
        return None
    return lines if len(lines.hashes) else None


def _title(tree: Any) -> str:
    """The page's ``og:title`` (usually without the site's name), else trafilatura's guess
    from ``<h1>`` and ``<title>``."""
    from trafilatura.metadata import extract_title

    for value in tree.xpath('//head/meta[@property="og:title"]/@content')[:1]:
        if value.strip():
            return " ".join(value.split())
    return (extract_title(tree) or "").strip()


# -- worker side --------------------------------------------------------------------------


@dataclass(frozen=True)
class SignerSpec:
    """A picklable recipe for ``sign(text) -> Signed``, built once in each worker process."""

    method: str
    params: tuple[tuple[str, Any], ...]
    min_tokens: int
    max_chars: int

    def __call__(self) -> Signer:
        from scrapy_neardup.deduplicator import Deduplicator

        dedup = Deduplicator(self.method, min_tokens=self.min_tokens, **dict(self.params))
        return Signer(dedup, self.max_chars)


class Signer:
    """``sign(text)`` in a worker, and what the method prepares there for the crawler."""

    def __init__(self, dedup: Any, max_chars: int) -> None:
        self.dedup = dedup
        self.max_chars = max_chars

    def __call__(self, text: str) -> Any:
        return self.dedup.sign(text[: self.max_chars])

    def prepared(self) -> Any:
        """The method's ``prepared()`` (MinHash: its banding), None for methods without."""
        prepared = getattr(self.dedup.method, "prepared", None)
        return prepared() if prepared is not None else None


_worker_signer: Any = None


#: Loads what the first real pages would otherwise wait for: trafilatura's and lxml's imports
#: (about 2 s of CPU in each worker). No CJK text: jieba (its dictionary costs a second and
#: about 50 MB per worker) is loaded only when a page in Chinese or Japanese arrives.
WARM_UP_PAGE = (
    b"<html><head><title>Warm-up</title></head><body><article><p>"
    + b"The worker loads its extraction and signing code now. " * 8
    + b"</p></article></body></html>"
)


def usable_cores() -> int:
    """The cores this process may run on (``sched_getaffinity``, which a container's cpuset
    or ``taskset`` narrows; the CPU count where it is missing)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def worker_niceness(workers: int, cores: int | None = None) -> int:
    """:data:`WORKER_NICENESS` when ``workers`` could fill every core, else 0.

    Workers as many as the cores would leave the reactor (downloads, the scheduler) no core
    of its own, and the crawl would stall while pages wait to be parsed: they run below the
    crawler's priority. Fewer workers leave it a core, and niced they would only lose
    against the machine's other work (on a shared 2-core machine, a niced worker got a
    quarter of a core where the same extraction in the crawler got half of one)."""
    return WORKER_NICENESS if workers >= (cores or usable_cores()) else 0


def _init_worker(signer_factory: Any, memory_limit: int, niceness: int = WORKER_NICENESS) -> None:
    """Runs once in each worker, before its first task; ``memory_limit`` in bytes, 0: none;
    ``niceness`` added to the crawler's (see :func:`worker_niceness`)."""
    global _worker_signer
    _die_with_parent()
    if niceness:
        os.nice(niceness)
    watch = threading.Thread(
        target=_watch, args=(memory_limit,), name="neardup-watchdog", daemon=True
    )
    watch.start()
    _worker_signer = signer_factory()
    try:
        _extract_and_sign(WARM_UP_PAGE, None, "utf-8")
    except Exception as exc:  # the real pages will say what is wrong, with their URL
        logger.debug("scrapy-neardup: worker warm-up failed: %r", exc)
    global _resting_rss, _malloc_trim
    _resting_rss = _rss()
    with suppress(OSError, AttributeError):  # glibc only
        _malloc_trim = ctypes.CDLL(None).malloc_trim


#: The worker's resident size after warm-up, and glibc's ``malloc_trim`` (None elsewhere).
_resting_rss: int | None = None
_malloc_trim: Any = None


def _give_back_memory() -> None:
    """After a task: return freed heap to the system when the task left the worker more
    than :data:`TRIM_ABOVE` over its resting size (see :data:`TRIM_ABOVE`)."""
    if _malloc_trim is None or _resting_rss is None:
        return
    now = _rss()
    if now is not None and now - _resting_rss > TRIM_ABOVE:
        _malloc_trim(0)


def _die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this worker when the crawler dies, even by SIGKILL.

    The kernel's "parent" is the thread that started the worker: the reactor's for the first
    workers, pebble's pool thread for replacements; both live as long as the pool. If the
    crawler died before the call, the worker already has another parent: it leaves now.
    """
    parent = multiprocessing.parent_process()
    if sys.platform.startswith("linux"):
        # Without prctl, the watchdog thread still sees the crawler go.
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent.pid:
        os._exit(0)


#: The worker's resident size when its current task started; None between tasks. Changed
#: and read under ``_task_lock``, so the watchdog never ends a worker that is sending a
#: result (it would die holding pebble's channel lock).
_task_rss: int | None = None
_task_lock = threading.Lock()


def _rss() -> int | None:
    """This process's resident size in bytes; None where ``/proc`` is missing."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _watch(memory_limit: int) -> None:
    """The worker's watchdog thread: ends it when the crawler is gone (the parent sentinel
    reaches EOF), or when the running task has grown it by more than ``memory_limit``."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not started by the pool
        return
    interval = WATCH_INTERVAL if memory_limit and _rss() is not None else None
    while True:
        if wait_any([parent.sentinel], interval):
            os._exit(0)  # the crawler is gone
        with _task_lock:
            start = _task_rss
            if start is not None and (_rss() or 0) - start > memory_limit:
                os._exit(MEMORY_EXIT)


def _limited(fn: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """Runs a task in a worker under the watchdog's eye: its result, and the seconds it
    took (wall) and used (this process's CPU)."""
    global _task_rss
    with _task_lock:
        _task_rss = _rss()
    began, cpu = time.perf_counter(), time.process_time()
    try:
        value = fn(*args)
        return value, time.perf_counter() - began, time.process_time() - cpu
    except MemoryError:
        os._exit(MEMORY_EXIT)  # the machine's memory, not the limit: still this page's fault
    except FutureTimeout as exc:  # a TimeoutError in the parent means the page's time limit
        raise RuntimeError(repr(exc)) from None
    finally:
        with _task_lock:
            _task_rss = None
        _give_back_memory()


def _extract_and_sign(
    body: bytes, url: str | None, encoding: str | None, fast: bool = True
) -> tuple[Extracted, Any]:
    extracted = extract_main_text(body, url, encoding, fast)
    return extracted, _worker_signer(extracted.text) if extracted.text else None


def _sign(text: str) -> Any:
    return _worker_signer(text)


def _prepared() -> Any:
    return _worker_signer.prepared()


class FastReadings:
    """Per site, whether trafilatura's fast mode reads its pages in full: a site's template
    decides that. A site whose would-be drops were read again ``trust_after`` times without
    the full reading saying more has only one page in ``sample_every`` checked (read again
    if it would be dropped; the others trust the fast reading, and skip the check). Once a
    full reading says more, the site *reads short*: each of its drops is read again, and its
    pages are read in full from the start (so that a later copy is compared with the full
    text of the page kept, not with a part of it). Bounded: the ``max_sites`` least recently
    seen sites."""

    def __init__(self, trust_after: int = 16, sample_every: int = 8, max_sites: int = 4096):
        self.trust_after, self.sample_every, self.max_sites = trust_after, sample_every, max_sites
        self._sites: OrderedDict[str, list[int]] = OrderedDict()  # [complete readings, asked]

    def _site(self, site: str) -> list[int]:
        found = self._sites.pop(site, None)
        if found is None:
            found = [0, 0]
            if len(self._sites) >= self.max_sites:
                self._sites.popitem(last=False)
        self._sites[site] = found
        return found

    def should_reread(self, site: str) -> bool:
        found = self._site(site)
        if found[0] < self.trust_after:
            return True
        found[1] += 1
        return found[1] % self.sample_every == 0

    def reads_short(self, site: str) -> bool:
        found = self._sites.get(site)
        return found is not None and found[0] < 0

    def record(self, site: str, richer: bool) -> None:
        found = self._site(site)
        # A site that once read short is never trusted again (its count stays far below).
        found[0] = -(10**9) if richer else found[0] + 1


class KeptLines:
    """The :class:`PageLines` of the ``max_pages`` pages kept last (about 1 KB each, and
    ``max_hashes`` line hashes in all: 16 MB), of up to ``per_page`` pages dropped for each
    after their full reading confirmed it, and the lines each site repeats.

    A would-be drop whose lines are all on the kept page it would be dropped for (or on one
    of the pages confirmed as its copies) but for ``allowed`` characters is dropped on its
    fast reading: no reading of it can hold more than that. A line on ``repeats`` pages its
    site kept (its navigation, in whatever language an edition of the site uses) is on kept
    pages already, so it does not count as new. Kept in memory only: after a restart, or
    for a page another crawler process kept, the full reading decides as before."""

    def __init__(
        self,
        max_pages: int = 8192,
        per_page: int = 4,
        max_hashes: int = 1 << 22,
        repeats: int = 3,
        max_site_lines: int = 1 << 15,
        max_sites: int = 256,
    ):
        self.max_pages, self.per_page, self.max_hashes = max_pages, per_page, max_hashes
        self.repeats, self.max_site_lines, self.max_sites = repeats, max_site_lines, max_sites
        self._pages: OrderedDict[str, list[np.ndarray]] = OrderedDict()
        self._hashes = 0
        self._sites: OrderedDict[str, dict[int, int]] = OrderedDict()
        self._common: dict[str, np.ndarray] = {}  # a site's repeated lines, sorted (cache)

    def remember(self, key: str, lines: PageLines, site: str = "") -> None:
        """The lines of a page kept as ``key`` (of ``site``)."""
        self._forget(key)
        self._pages[key] = []
        self._add(self._pages[key], lines)
        while self._pages and (len(self._pages) > self.max_pages or self._hashes > self.max_hashes):
            self._forget(next(iter(self._pages)))
        if site:
            self._count(site, lines)

    def remember_copy(self, keys: list[str], lines: PageLines) -> None:
        """The lines of a page to be dropped for ``keys`` after a full reading said no more."""
        for key in keys:
            found = self._pages.get(key)
            if found is not None and len(found) <= self.per_page:
                self._add(found, lines)

    def hold(self, keys: list[str], lines: PageLines, allowed: int, site: str = "") -> bool:
        """Whether the lines kept for one of ``keys``, with the lines ``site`` repeats, hold
        all of ``lines`` but ``allowed`` characters."""
        common = self._common_lines(site)
        for key in keys:
            for kept in self._pages.get(key, ()):
                if lines.chars_not_in(np.union1d(kept, common)) <= allowed:
                    return True
        return False

    def _count(self, site: str, lines: PageLines) -> None:
        counts = self._sites.pop(site, None)
        if counts is None:
            counts = {}
            if len(self._sites) >= self.max_sites:
                gone, _ = self._sites.popitem(last=False)
                self._common.pop(gone, None)
        self._sites[site] = counts
        repeated = False  # whether a line reached ``repeats`` now: the cache is stale then
        for h in np.unique(lines.hashes).tolist():
            if h in counts or len(counts) < self.max_site_lines:
                n = counts[h] = counts.get(h, 0) + 1
                repeated = repeated or n == self.repeats
        if repeated:
            self._common.pop(site, None)

    def _common_lines(self, site: str) -> np.ndarray:
        found = self._common.get(site)
        if found is None:
            counts = self._sites.get(site, {})
            found = np.array(
                sorted(h for h, n in counts.items() if n >= self.repeats), dtype=np.uint32
            )
            self._common[site] = found
        return found

    def _add(self, found: list[np.ndarray], lines: PageLines) -> None:
        hashes = np.unique(lines.hashes)
        found.append(hashes)
        self._hashes += len(hashes)

    def _forget(self, key: str) -> None:
        for hashes in self._pages.pop(key, ()):
            self._hashes -= len(hashes)


class Extractor:
    """Runs extraction and signing in ``workers`` processes (inline when ``workers`` is 0),
    started when the first page needs them.

    ``signer_factory`` is a picklable callable returning ``sign(text) -> signatures``; it is
    called once in each worker so the method is built there, not shipped with every task.
    Each task in a worker is limited to ``page_timeout`` seconds and ``page_memory`` MiB
    (0: no limit); over either, its future fails with :class:`PageLimitError` and the
    worker is replaced. Inline, neither limit can be enforced.
    """

    def __init__(
        self,
        signer_factory: Any,
        workers: int,
        cache_size: int = 4096,
        fast: bool = True,
        on_start: Callable[[], None] | None = None,
        page_timeout: float = 0,
        page_memory: int = 0,
    ) -> None:
        #: Called once, when the workers (or the inline signer) are first needed.
        self.on_start = on_start
        self._signer_factory = signer_factory
        self._workers = workers
        self._fast = fast
        self.page_timeout = page_timeout
        self.page_memory = page_memory
        self._pool: ProcessPool | None = None
        self._pending: set[Future] = set()
        self._inline_signer: Any = None
        self._cache: OrderedDict[bytes, tuple[Extracted, Any] | PageLimitError] = OrderedDict()
        self._cache_size = cache_size
        self._in_flight: dict[bytes, Future] = {}
        self._limits_logged = 0
        self._started_once = False
        #: Where the time went (see :meth:`timing`): the workers' seconds on tasks, wall
        #: and CPU, and the items' seconds waiting for their page's text (the middleware's).
        self.busy_s = self.task_cpu_s = self.waited_s = 0.0
        self._first_task: float | None = None
        self._last_done: float | None = None
        self._worker_seconds = 0.0  # workers x seconds of the pools closed so far

    def _get_pool(self) -> ProcessPool:
        """The worker processes, started on the first page that needs them: a crawl that
        never extracts (no items, or items with a text field) never starts them."""
        if self._pool is None:
            # spawn: forking a process that runs a reactor and threads is unsafe. pebble
            # starts every worker with the first task (each warms up in its initializer).
            self._pool = ProcessPool(
                self._workers,
                initializer=_init_worker,
                initargs=(
                    self._signer_factory,
                    self.page_memory * 1024 * 1024,
                    worker_niceness(self._workers),
                ),
                context=_WorkerContext(),
            )
            self._started()
        return self._pool

    @property
    def started(self) -> bool:
        """Whether the workers (or the inline signer) were ever needed."""
        return self._started_once

    def _started(self) -> None:
        self._started_once = True
        if self.on_start is not None:
            on_start, self.on_start = self.on_start, None
            on_start()

    def _inline(self) -> Any:
        if self._inline_signer is None:
            self._inline_signer = self._signer_factory()
            self._started()
        return self._inline_signer

    def cached(self, body: bytes) -> tuple[bytes, tuple[Extracted, Any] | PageLimitError | None]:
        """The body's digest, and what extracting it gave before: a result, the
        :class:`PageLimitError` it hit (not tried again), or None."""
        digest = xxhash.xxh3_128_digest(body)
        found = self._cache.get(digest)
        if found is not None:
            self._cache.move_to_end(digest)
        return digest, found

    def in_flight(self, digest: bytes) -> Future | None:
        """The extraction of a body with this digest that is still running, if any: a copy
        that arrives meanwhile waits for it rather than being extracted again."""
        return self._in_flight.get(digest)

    def track(self, digest: bytes, future: Future) -> None:
        """Make ``future`` (the extraction of the body with ``digest``) :meth:`in_flight`
        until it is done."""
        self._in_flight[digest] = future
        future.add_done_callback(lambda _: self._in_flight.pop(digest, None))

    def remember(self, digest: bytes, result: tuple[Extracted, Any] | PageLimitError) -> None:
        self._cache[digest] = result
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    @property
    def fast(self) -> bool:
        return self._fast

    def submit_extract(
        self, body: bytes, url: str | None, encoding: str | None, fast: bool | None = None
    ) -> Future:
        """A future of ``(Extracted, signatures or None)``; ``fast`` overrides the
        extractor's mode for this page (``False``: trafilatura's full cascade)."""
        fast = self._fast if fast is None else fast
        if self._workers == 0:
            signer, cpu = self._inline(), time.process_time()
            result = _extract_inline(signer, body, url, encoding, fast)
            self.task_cpu_s += time.process_time() - cpu
            return _done(result)
        return self._submit(_extract_and_sign, body, url, encoding, fast)

    def submit_prepared(self) -> Future:
        """A future of what the method prepares (see :meth:`Signer.prepared`), computed in a
        worker so that the crawler process need not load what it takes."""
        if self._workers == 0:
            return _done(self._inline().prepared())
        return self._submit(_prepared)

    def submit_sign(self, text: str) -> Future:
        if self._workers == 0:
            return _done(self._inline()(text))
        return self._submit(_sign, text)

    def timing(self) -> dict[str, float]:
        """``workers``; the workers' ``busy_s`` and ``idle_s`` (worker-seconds from the first
        task to the last result, not running a task: waiting for work or for the crawler to
        take a result); ``task_cpu_s``; ``wait_s``, the items' time waiting for their text."""
        idle = self._worker_seconds
        if self._pool is not None and self._first_task is not None:
            idle += self._workers * ((self._last_done or self._first_task) - self._first_task)
        return {
            "workers": self._workers,
            "busy_s": round(self.busy_s, 3),
            "idle_s": round(max(idle - self.busy_s, 0.0), 3),
            "task_cpu_s": round(self.task_cpu_s, 3),
            "wait_s": round(self.waited_s, 3),
        }

    def _submit(self, fn: Any, *args: Any) -> Future:
        timeout = self.page_timeout or None
        if self._first_task is None:
            self._first_task = time.perf_counter()
        try:
            task = self._get_pool().schedule(_limited, (fn, *args), timeout=timeout)
        except RuntimeError:
            # Every worker died at once, or one failed to start: start a fresh pool.
            logger.warning("scrapy-neardup: extraction worker pool broke; restarting it")
            self.close()
            task = self._get_pool().schedule(_limited, (fn, *args), timeout=timeout)
        future: Future = Future()
        self._pending.add(future)
        task.add_done_callback(lambda done: self._relay(done, future))
        return future

    def _relay(self, task: Future, future: Future) -> None:
        """``task``'s outcome to ``future``, a limit hit as :class:`PageLimitError` (in
        pebble's thread)."""
        self._pending.discard(future)
        self._last_done = time.perf_counter()
        exc = task.exception() if not task.cancelled() else RuntimeError("cancelled")
        if isinstance(exc, FutureTimeout):  # _limited turns the tasks' own into RuntimeError
            exc = PageLimitError("timeout", f"over NEARDUP_PAGE_TIMEOUT ({self.page_timeout:g} s)")
        elif isinstance(exc, ProcessExpired) and exc.exitcode == MEMORY_EXIT:
            exc = PageLimitError("memory", f"over NEARDUP_PAGE_MEMORY ({self.page_memory} MiB)")
        elif isinstance(exc, ProcessExpired):
            exc = RuntimeError(f"extraction worker died (exit status {exc.exitcode})")
        with suppress(InvalidStateError):  # already failed by close()
            if exc is None:
                value, seconds, cpu = task.result()
                self.busy_s += seconds  # only pebble's one result thread adds here
                self.task_cpu_s += cpu
                future.set_result(value)
            else:
                future.set_exception(exc)

    def log_limit(self, exc: PageLimitError, what: str, debug: bool) -> None:
        """Log a limit hit by ``what`` (a URL): the first few at WARNING, the rest at DEBUG
        unless ``debug`` (NEARDUP_DEBUG)."""
        self._limits_logged += 1
        shown = debug or self._limits_logged <= FIRST_LOGGED
        logger.log(
            logging.WARNING if shown else logging.DEBUG,
            "scrapy-neardup: %s went %s in its worker; kept unchecked%s",
            what,
            exc,
            " - no more will be shown (see NEARDUP_DEBUG)"
            if not debug and self._limits_logged == FIRST_LOGGED
            else "",
        )

    def close(self, wait: bool = True) -> None:
        """Stop the workers at once; tasks still running fail. ``wait`` is kept for callers:
        pebble ends its workers only when joined, so this always waits (about 0.1 s)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            if self._first_task is not None:
                spent = (self._last_done or self._first_task) - self._first_task
                self._worker_seconds += self._workers * spent
                self._first_task = self._last_done = None
            pool.stop()
            pool.join()
        for future in list(self._pending):
            with suppress(InvalidStateError):  # it finished meanwhile
                future.set_exception(RuntimeError("the extraction workers were stopped"))
        self._pending.clear()


class _WorkerProcess(SpawnProcess):
    """A worker process that never re-runs the script that started the crawl."""

    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        # Replacement workers are started from pebble's thread: for that one start (a few
        # ms) the crawler's own threads would not find a class of the script by pickle.
        with _main_module_hidden():
            return SpawnProcess._Popen(process_obj)


class _WorkerContext(SpawnContext):
    Process = _WorkerProcess


@contextmanager
def _main_module_hidden() -> Iterator[None]:
    """``__main__`` replaced by an empty module while a worker is spawned: spawn would
    otherwise re-run the crawl's script in it (one without an ``if __name__ == "__main__"``
    guard would start a crawl in every worker)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _extract_inline(
    signer: Any, body: bytes, url: str | None, encoding: str | None, fast: bool
) -> Any:
    extracted = extract_main_text(body, url, encoding, fast)
    return extracted, signer(extracted.text) if extracted.text else None


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
