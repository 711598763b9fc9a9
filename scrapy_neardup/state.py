"""One crawl's state, shared by every component of one crawler.

The dupefilter, the two middlewares and the pipeline of a crawler all reach the same
:class:`NearDupState` through :meth:`NearDupState.from_crawler`, so a URL recorded by the
downloader middleware is known to the dupefilter, and page text found by the spider middleware
reaches the pipeline. With a state directory (``JOBDIR/neardup`` by default) it is loaded at
open, journaled as it changes, and snapshotted at close; see
:mod:`scrapy_neardup.storage.journal` for what survives a crash.

Files in the state directory::

    urls.bloom       ScalableBloomFilter.to_bytes() snapshot (format in scrapy_neardup.urls)
    urls.journal     journal of 16-byte canonical-URL fingerprints added since the snapshot
    content.state    Deduplicator.to_bytes() snapshot (format in scrapy_neardup.engine)
    content.journal  journal of b"H" (kept) and b"M" (duplicate) records, encoded below
"""

from __future__ import annotations

import logging
import struct
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.engine import Deduplicator, Member, Signed
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.extraction import Extracted, Extractor
from scrapy_neardup.storage.journal import Journal, write_snapshot
from scrapy_neardup.urls import ScalableBloomFilter, canonical_url, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

URL_SNAPSHOT, URL_JOURNAL = "urls.bloom", "urls.journal"
CONTENT_SNAPSHOT, CONTENT_JOURNAL = "content.state", "content.journal"


@dataclass(frozen=True)
class SignerSpec:
    """A picklable recipe for ``sign(text) -> Signed``, built once in each worker process."""

    method: str
    params: tuple[tuple[str, Any], ...]
    min_tokens: int
    max_chars: int

    def __call__(self) -> Any:
        dedup = Deduplicator(self.method, min_tokens=self.min_tokens, **dict(self.params))
        max_chars = self.max_chars
        return lambda text: dedup.sign(text[:max_chars])


@dataclass
class PageText:
    """What the spider middleware found for an item: its page's URL, text and signatures."""

    url: str
    extracted: Extracted
    signed: Signed | None


def _blob(data: bytes) -> bytes:
    return struct.pack("<I", len(data)) + data


def _blobs(payload: bytes, pos: int) -> tuple[bytes, int]:
    (length,) = struct.unpack_from("<I", payload, pos)
    end = pos + 4 + length
    if end > len(payload):
        raise ValueError("record shorter than its lengths say")
    return payload[pos + 4 : end], end


class ContentJournal:
    """Records every decision of a :class:`Deduplicator` in a :class:`Journal`."""

    def __init__(self, journal: Journal, dedup: Deduplicator) -> None:
        self.journal = journal
        self.dedup = dedup

    def head(self, key: str, signed: Signed) -> None:
        near = b"" if signed.near is None else self.dedup.near.method.encode(signed.near)
        flag = b"\x00" if signed.near is None else b"\x01"
        exact = self.dedup.exact.method.encode(signed.exact)
        self.journal.append(
            b"H"
            + _blob(key.encode())
            + _blob(exact)
            + flag
            + _blob(near)
            + struct.pack("<I", signed.tokens)
        )

    def member(self, m: Member) -> None:
        self.journal.append(
            b"M"
            + _blob(m.key.encode())
            + _blob(m.head.encode())
            + _blob(m.method.encode())
            + struct.pack("<d", m.similarity)
        )

    def replay(self, payload: bytes) -> None:
        kind = payload[:1]
        key, pos = _blobs(payload, 1)
        if kind == b"H":
            exact, pos = _blobs(payload, pos)
            has_near = payload[pos : pos + 1] == b"\x01"
            near, pos = _blobs(payload, pos + 1)
            (tokens,) = struct.unpack_from("<I", payload, pos)
            signed = Signed(
                self.dedup.exact.method.decode(exact),
                self.dedup.near.method.decode(near) if has_near and self.dedup.near else None,
                tokens,
            )
            self.dedup.restore_head(key.decode(), signed)
        elif kind == b"M":
            head, pos = _blobs(payload, pos)
            method, pos = _blobs(payload, pos)
            (similarity,) = struct.unpack_from("<d", payload, pos)
            self.dedup.restore_member(
                Member(key.decode(), head.decode(), method.decode(), similarity)
            )
        else:
            raise ValueError(f"unknown record type {kind!r}")


class NearDupState:
    """URL filter, deduplicator, extractor and the hand-over from middleware to pipeline."""

    def __init__(self, config: NearDupConfig, stats: Any = None) -> None:
        self.config = config
        self.stats = stats
        self.urls = ScalableBloomFilter(config.bloom_capacity, config.bloom_error_rate)
        method = config.make_method()
        self.dedup = Deduplicator(method, min_tokens=config.min_tokens)
        spec = SignerSpec(
            config.backend,
            tuple(sorted(config.method_params().items())),
            config.min_tokens,
            config.max_text_chars,
        )
        self.extractor = Extractor(spec, config.workers)
        self.pending: dict[int, tuple[Any, PageText]] = {}
        self._url_journal: Journal | None = None
        self._content_journal: Journal | None = None
        self._opened = False
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDupState:
        """The crawler's state, made (from its settings) on first use."""
        state = _STATES.get(crawler)
        if state is None:
            from scrapy import signals

            state = cls(NearDupConfig.from_settings(crawler.settings), crawler.stats)
            _STATES[crawler] = state
            crawler.signals.connect(state.close, signal=signals.spider_closed)
            for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
                crawler.signals.connect(state.forget, signal=signal)
        return state

    def open(self) -> None:
        """Load saved state (once). Raises StateError when it cannot be used."""
        if self._opened:
            return
        self._opened = True
        if self.config.enabled and self.config.extract:
            self.extractor.start()
        directory = self.config.state_dir
        if directory is None:
            return
        directory.mkdir(parents=True, exist_ok=True)
        self._load_urls(directory)
        self._load_content(directory)
        logger.info(
            "scrapy-neardup: state in %s: %d URLs, %d documents kept, %d duplicates",
            directory,
            len(self.urls),
            len(self.dedup),
            len(self.dedup.members),
        )

    def _load_urls(self, directory: Path) -> None:
        snapshot = directory / URL_SNAPSHOT
        if snapshot.exists():
            self.urls = ScalableBloomFilter.from_bytes(snapshot.read_bytes())
        self._url_journal = Journal(directory / URL_JOURNAL, self.config.flush_interval)
        for fingerprint in self._url_journal.open():
            self.urls.add(fingerprint)

    def _load_content(self, directory: Path) -> None:
        snapshot = directory / CONTENT_SNAPSHOT
        if snapshot.exists():
            try:
                self.dedup.load_bytes(snapshot.read_bytes())
            except StateError as exc:
                raise StateError(str(exc), path=str(snapshot)) from None
        self._content_journal = Journal(directory / CONTENT_JOURNAL, self.config.flush_interval)
        recorder = ContentJournal(self._content_journal, self.dedup)
        for payload in self._content_journal.open():
            try:
                recorder.replay(payload)
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                raise StateError(f"unreadable journal record: {exc}", path=str(directory)) from None
        self.dedup.recorder = recorder

    def sync(self) -> None:
        for journal in (self._url_journal, self._content_journal):
            if journal is not None:
                journal.sync()

    def close(self, *args: Any, **kwargs: Any) -> None:
        """Snapshot and release everything (once); safe to call from a signal handler."""
        if self._closed:
            return
        self._closed = True
        self.extractor.close(wait=False)
        directory = self.config.state_dir
        if directory is not None and self._opened:
            write_snapshot(directory / URL_SNAPSHOT, self.urls.to_bytes())
            write_snapshot(directory / CONTENT_SNAPSHOT, self.dedup.to_bytes())
            for journal in (self._url_journal, self._content_journal):
                if journal is not None:
                    journal.reset()
                    journal.close()
        if self.stats is not None:
            self.stats.set_value("neardup/urls/size_bytes", self.urls.size_in_bytes)
            self.stats.set_value("neardup/documents/indexed", len(self.dedup))

    # -- URLs -----------------------------------------------------------------------------

    def canonical(self, url: str) -> str:
        return canonical_url(
            url,
            strip_params=self.config.strip_params,
            strip_trailing_slash=self.config.strip_trailing_slash,
        )

    def url_seen(self, canonical: str) -> bool:
        """Test and set: True if the canonical URL was (probably) seen before."""
        fingerprint = url_fingerprint(canonical)
        if self.urls.add(fingerprint):
            return True
        if self._url_journal is not None:
            self._url_journal.append(fingerprint)
        self.inc("neardup/urls/recorded")
        return False

    # -- pages and items ------------------------------------------------------------------

    def register(self, item: Any, page: PageText) -> None:
        self.pending[id(item)] = (item, page)

    def take(self, item: Any) -> PageText | None:
        found = self.pending.pop(id(item), None)
        return found[1] if found is not None and found[0] is item else None

    def forget(self, item: Any = None, *args: Any, **kwargs: Any) -> None:
        if item is not None:
            self.pending.pop(id(item), None)

    def inc(self, key: str, count: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, count)


_STATES: weakref.WeakKeyDictionary[Any, NearDupState] = weakref.WeakKeyDictionary()
