"""Main content with trafilatura, in worker processes, off the reactor.

Extraction (about 30 ms a page) and signing (a few ms) are the costly steps of the plugin, and
the GIL would make threads useless for them, so both run in a process pool. The reactor
only waits on a Deferred; it never runs trafilatura itself. Byte-identical bodies are looked
up in a small cache of body hash -> result and not extracted again.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import xxhash

logger = logging.getLogger(__name__)

_EMPTY = ""
WORKER_NICENESS = 5


@dataclass(frozen=True)
class Extracted:
    """The text of a page and how it was found: ``trafilatura``, ``fallback`` or ``empty``."""

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
    title = ""
    try:
        # Parsed once here: the title is read from the tree, and trafilatura's own metadata
        # pass (dates, authors, JSON-LD: about a third of its time) is skipped.
        tree = load_html(html)
        if tree is None:
            doc = None
        else:
            title = _title(tree)
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
        return Extracted(f"{title}\n\n{text}" if title else text, "trafilatura", title)
    try:
        _, text, _ = trafilatura.baseline(html)
    except Exception as exc:
        logger.debug("trafilatura baseline failed on %s: %r", url, exc)
        text = ""
    text = (text or "").strip()
    return Extracted(text, "fallback", title) if text else Extracted(_EMPTY, "empty", title)


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
        from scrapy_neardup.engine import Deduplicator

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


def _init_worker(signer_factory: Any) -> None:
    global _worker_signer
    # Below the crawler's priority: when the cores are busy, the reactor (downloads, the
    # scheduler) must still get its turn, or the crawl stalls while pages wait to be parsed.
    os.nice(WORKER_NICENESS)
    _worker_signer = signer_factory()
    try:
        _extract_and_sign(WARM_UP_PAGE, None, "utf-8")
    except Exception as exc:  # the real pages will say what is wrong, with their URL
        logger.debug("scrapy-neardup: worker warm-up failed: %r", exc)


def _extract_and_sign(
    body: bytes, url: str | None, encoding: str | None, fast: bool = True
) -> tuple[Extracted, Any]:
    extracted = extract_main_text(body, url, encoding, fast)
    return extracted, _worker_signer(extracted.text) if extracted.text else None


def _sign(text: str) -> Any:
    return _worker_signer(text)


def _prepared() -> Any:
    return _worker_signer.prepared()


class Extractor:
    """Runs extraction and signing in ``workers`` processes (inline when ``workers`` is 0),
    started when the first page needs them.

    ``signer_factory`` is a picklable callable returning ``sign(text) -> signatures``; it is
    called once in each worker so the method is built there, not shipped with every task.
    """

    def __init__(
        self,
        signer_factory: Any,
        workers: int,
        cache_size: int = 4096,
        fast: bool = True,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        #: Called once, when the workers (or the inline signer) are first needed.
        self.on_start = on_start
        self._signer_factory = signer_factory
        self._workers = workers
        self._fast = fast
        self._pool: ProcessPoolExecutor | None = None
        self._inline_signer: Any = None
        self._cache: OrderedDict[bytes, tuple[Extracted, Any]] = OrderedDict()
        self._cache_size = cache_size

    def _get_pool(self) -> ProcessPoolExecutor:
        """The worker processes, started on the first page that needs them: a crawl that
        never extracts (no items, or items with a text field) never starts them."""
        if self._pool is None:
            # spawn: forking a process that runs a reactor and threads is unsafe.
            context = multiprocessing.get_context("spawn")
            pool = ProcessPoolExecutor(
                self._workers,
                mp_context=context,
                initializer=_init_worker,
                initargs=(self._signer_factory,),
            )
            # Workers are spawned by submit(); spawn them all now, with __main__ hidden, so
            # they never re-run the script that started the crawl (a script without an
            # ``if __name__ == "__main__"`` guard would start a crawl in every worker).
            with _main_module_hidden():
                for _ in range(self._workers):
                    pool.submit(_noop).add_done_callback(_ignore)
            self._pool = pool
            self._started()
        return self._pool

    def _started(self) -> None:
        if self.on_start is not None:
            on_start, self.on_start = self.on_start, None
            on_start()

    def _inline(self) -> Any:
        if self._inline_signer is None:
            self._inline_signer = self._signer_factory()
            self._started()
        return self._inline_signer

    def cached(self, body: bytes) -> tuple[bytes, tuple[Extracted, Any] | None]:
        digest = xxhash.xxh3_128_digest(body)
        found = self._cache.get(digest)
        if found is not None:
            self._cache.move_to_end(digest)
        return digest, found

    def remember(self, digest: bytes, result: tuple[Extracted, Any]) -> None:
        self._cache[digest] = result
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def submit_extract(self, body: bytes, url: str | None, encoding: str | None) -> Future:
        """A future of ``(Extracted, signatures or None)``."""
        if self._workers == 0:
            return _done(_extract_inline(self._inline(), body, url, encoding, self._fast))
        return self._submit(_extract_and_sign, body, url, encoding, self._fast)

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

    def _submit(self, fn: Any, *args: Any) -> Future:
        try:
            return self._get_pool().submit(fn, *args)
        except (BrokenProcessPool, RuntimeError):
            # A worker died (out of memory, a crash in a C extension): start a fresh pool.
            logger.warning("scrapy-neardup: extraction worker pool broke; restarting it")
            self.close(wait=False)
            return self._get_pool().submit(fn, *args)

    def close(self, wait: bool = True) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None


def _noop() -> None:
    pass


def _ignore(future: Future) -> None:
    future.exception()  # retrieved, so a failed warm-up is not reported as unhandled


@contextmanager
def _main_module_hidden() -> Iterator[None]:
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


def default_workers() -> int:
    return min(os.cpu_count() or 1, 8)
