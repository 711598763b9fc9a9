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
import re
import signal
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, InvalidStateError
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import wait as wait_any
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

import xxhash
from pebble import ProcessExpired, ProcessPool

from scrapy_neardup.exceptions import NearDupError

logger = logging.getLogger(__name__)


class _UnparsedPageFilter(logging.Filter):
    """Leaves out trafilatura's ERROR for a body it cannot parse as HTML (a fragment without
    ``<html>``): the plugin counts such pages (``neardup/extract/empty``), and as an ERROR the
    line would count in Scrapy's ``log_count/ERROR`` when extraction runs in the crawler
    process (``NEARDUP_WORKERS = 0``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("parsed tree length")


_UNPARSED = _UnparsedPageFilter()
_unparsed_lock = threading.Lock()
_unparsed_users = 0


@contextmanager
def _unparsed_page_unlogged() -> Iterator[None]:
    """:class:`_UnparsedPageFilter` on trafilatura's ``trafilatura.utils`` logger while the
    block runs, in any thread; the logger is left as it was once no thread is in one."""
    global _unparsed_users
    trafilatura_utils = logging.getLogger("trafilatura.utils")
    with _unparsed_lock:
        _unparsed_users += 1
        if _unparsed_users == 1:
            trafilatura_utils.addFilter(_UNPARSED)
    try:
        yield
    finally:
        with _unparsed_lock:
            _unparsed_users -= 1
            if _unparsed_users == 0:
                trafilatura_utils.removeFilter(_UNPARSED)


_EMPTY = ""
#: The workers' niceness when they are as many as the cores (see :func:`worker_niceness`).
WORKER_NICENESS = 5
#: Exit status of a worker ended by its memory watchdog (pebble's own exits are 0, 1, errnos
#: and signals).
MEMORY_EXIT = 86
#: How often the watchdog reads the worker's resident size during a task.
WATCH_INTERVAL = 0.05
#: Seconds between two looks at the running tasks' time (the page timeout's precision).
DEADLINE_PROBE = 0.1
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
class Extracted:
    """The text of a page (its title, a blank line, its main text) and how it was found:
    ``trafilatura``, ``fallback`` or ``empty``."""

    text: str
    how: str
    title: str = ""


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
    body: bytes, url: str | None = None, encoding: str | None = None, fast: bool = False
) -> Extracted:
    """Title and main text of an HTML page; the whole visible text when trafilatura finds none.
    The page's headings (``<h1>``-``<h3>`` outside its navigation) that trafilatura left out
    come after the title: what a page is about is named there (:func:`_headings`). Readers'
    comments that trafilatura finds come after the main text: they are lines of the page,
    which a drop must not lose (trafilatura's own default reads them too).

    trafilatura's whole cascade by default; ``fast`` skips its comparison with readability
    and jusText (``NEARDUP_EXTRACT_FAST``): a third of its time, as close to the article on
    news pages, but short on some sites (the prose of DocBook manuals)."""
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
    title, headings = "", []
    try:
        # Parsed once here: the title is read from the tree, and trafilatura's own metadata
        # pass (dates, authors, JSON-LD: about a third of its time) is skipped.
        with _unparsed_page_unlogged():
            tree = load_html(html)
        if tree is None:  # not HTML: trafilatura's baseline would not parse it either
            return Extracted(_EMPTY, "empty")
        title = _title(tree)
        headings = _headings(tree)
        _paragraph_sections(tree)
        doc = trafilatura.bare_extraction(
            tree,
            url=url,
            include_comments=True,
            with_metadata=False,
            deduplicate=False,
            fast=fast,
        )
    except Exception as exc:  # trafilatura and lxml raise many things on odd markup
        logger.debug("trafilatura failed on %s: %r", url, exc)
        doc = None
    text = (getattr(doc, "text", None) or "").strip()
    comments = (getattr(doc, "comments", None) or "").strip()
    if text and comments:
        text = f"{text}\n{comments}"
    if text:
        shown = " ".join(f"{title}\n{text}".split())
        missing = [h for h in dict.fromkeys(headings) if h not in shown]
        text = "\n".join([*missing, text])
        return Extracted(f"{title}\n\n{text}" if title else text, "trafilatura", title)
    try:
        _, text, _ = trafilatura.baseline(html)
    except Exception as exc:
        logger.debug("trafilatura baseline failed on %s: %r", url, exc)
        text = ""
    text = (text or "").strip()
    return Extracted(text, "fallback", title) if text else Extracted(_EMPTY, "empty", title)


#: Where a page's headings are its navigation's, not its own (a sidebar's "Quick search").
_NAVIGATION = (
    "ancestor::nav or ancestor::aside or ancestor::header or ancestor::footer"
    " or ancestor::*[@role='navigation']"
    " or ancestor::*[contains(concat(' ', normalize-space(@class), ' '), ' sidebar ')]"
)


def _headings(tree: Any) -> list[str]:
    """The texts of the page's ``<h1>``-``<h3>`` outside its navigation, in page order."""
    found = tree.xpath(f"//*[self::h1 or self::h2 or self::h3][not({_NAVIGATION})]")
    return [text for text in (" ".join(h.text_content().split()) for h in found) if text]


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


def _title(tree: Any) -> str:
    """The page's ``<title>`` as a reader sees it, else its ``og:title``, else trafilatura's
    guess from ``<h1>``, without the site's name (:func:`without_site_name`)."""
    from trafilatura.metadata import extract_title

    title = ""
    for value in [*tree.xpath("//head/title/text()"), *tree.xpath(_OG_TITLE)][:1]:
        title = " ".join(value.split())
    title = title or " ".join((extract_title(tree) or "").split())
    names = tree.xpath('//head/meta[@property="og:site_name"]/@content')
    return without_site_name(title, names[0] if names else "")


_OG_TITLE = '//head/meta[@property="og:title"]/@content'
# A title's parts: " | ", " - ", " :: " and the like between words, or "_" or "｜" in CJK text.
_TITLE_PARTS = re.compile(r"\s+(?:[|\-–—·•»:]{1,2})\s+|\s*[_｜]\s*(?=[^_｜]+$)")


def without_site_name(title: str, site_name: str = "") -> str:
    """``title`` without the site's name: the part that is ``site_name``, else a last part of
    at most 4 words after a separator ("Headline | The Daily Post"). A copy of a story in
    another site's template keeps its headline but not its site's name, which is the
    template's, not the story's."""
    parts = _TITLE_PARTS.split(title)
    if len(parts) < 2:
        return title
    name = " ".join(site_name.split()).casefold()
    if name:
        kept = [part for part in parts if part.casefold() != name]
        if len(kept) < len(parts):
            return title if not kept else _joined(title, kept)
    if len(parts[-1].split()) <= 4 and len(parts[-1]) <= 40:
        return _joined(title, parts[:-1])
    return title


def _joined(title: str, parts: list[str]) -> str:
    """The span of ``title`` from its first kept part to its last (separators kept)."""
    start = title.find(parts[0])
    end = title.rfind(parts[-1]) + len(parts[-1])
    return title[start:end].strip()


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

    def __call__(self, text: str, title: str = "") -> Any:
        return self.dedup.sign(text[: self.max_chars], title)

    def prepared(self) -> Any:
        """The method's ``prepared()`` (MinHash: its banding; None for most methods)."""
        return self.dedup.method.prepared()


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
    finally:
        with _task_lock:
            _task_rss = None
        _give_back_memory()


def _extract_and_sign(
    body: bytes, url: str | None, encoding: str | None, fast: bool = False
) -> tuple[Extracted, Any]:
    extracted = extract_main_text(body, url, encoding, fast)
    signed = _worker_signer(extracted.text, extracted.title) if extracted.text else None
    return extracted, signed


def _sign(text: str) -> Any:
    return _worker_signer(text)


def _prepared() -> Any:
    return _worker_signer.prepared()


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
        fast: bool = False,
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
        self._deadlines: _Deadlines | None = None  # the page timeout, once a task ran
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

    def submit_extract(self, body: bytes, url: str | None, encoding: str | None) -> Future:
        """A future of ``(Extracted, signatures or None)``."""
        fast = self._fast
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
        if self._first_task is None:
            self._first_task = time.perf_counter()
        try:
            task = self._get_pool().schedule(_limited, (fn, *args))
        except RuntimeError:
            # Every worker died at once, or one failed to start: start a fresh pool.
            logger.warning("scrapy-neardup: extraction worker pool broke; restarting it")
            self.close()
            task = self._get_pool().schedule(_limited, (fn, *args))
        if self.page_timeout:
            if self._deadlines is None:
                self._deadlines = _Deadlines(self.page_timeout)
            self._deadlines.watch(task)
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
        if self._deadlines is not None and self._deadlines.expired(task):
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
        if self._deadlines is not None:
            self._deadlines.stop()
            self._deadlines = None
        for future in list(self._pending):
            with suppress(InvalidStateError):  # it finished meanwhile
                future.set_exception(RuntimeError("the extraction workers were stopped"))
        self._pending.clear()


class _Deadlines:
    """The page timeout on ``time.monotonic()``: a thread looks at the watched tasks every
    :data:`DEADLINE_PROBE` seconds, notes when each starts running, and cancels one that
    has run ``limit`` seconds (pebble then replaces its worker). pebble's own ``timeout``
    times tasks with ``time.time()``: a step of the wall clock ended pages read in
    milliseconds."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._began: dict[Future, float | None] = {}  # None: not running yet
        self._expired: set[Future] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, task: Future) -> None:
        with self._lock:
            self._began[task] = None
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="neardup-page-timeout", daemon=True
                )
                self._thread.start()
        task.add_done_callback(self._forget)

    def expired(self, task: Future) -> bool:
        """Whether ``task`` was cancelled for running over the limit."""
        with self._lock:
            return task in self._expired

    def _forget(self, task: Future) -> None:
        with self._lock:
            self._began.pop(task, None)

    def _run(self) -> None:
        while not self._stopped.wait(DEADLINE_PROBE):
            now, late = time.monotonic(), []
            with self._lock:
                for task, began in self._began.items():
                    if began is None:
                        if task.running():
                            self._began[task] = now
                    elif now - began > self.limit:
                        late.append(task)
                self._expired.update(late)
            for task in late:
                task.cancel()  # a running pebble task: its worker is ended and replaced

    def stop(self) -> None:
        self._stopped.set()


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
    # Kept: spawn and forkserver alike make the child import ``__main__``'s file, and no
    # public hook skips that (tests/test_workers.py runs a script without the guard).
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
    return extracted, signer(extracted.text, extracted.title) if extracted.text else None


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future
