"""Make Scrapy's feed exports durable: flush and fsync every open feed file.

Promises: after :func:`sync_feeds` returns, every item written to a local feed file is on
disk (a disk error is raised, naming the feed file, never swallowed). It reaches into
Scrapy's ``FeedExporter`` slots and post-processing plugins, which are not public API: this
is the one module that does, so a Scrapy upgrade that moves them breaks here alone. It must
not write to a feed. Rationale: ``docs/design.md#frontier`` (done, and durable).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def sync_feeds(crawler: Crawler | None) -> None:
    """Flush every open feed file of Scrapy's feed exports to the OS, and fsync it.

    Only local files can be made durable while the crawl runs: S3, GCS and FTP feeds are a
    temporary file uploaded at close (skipped here), stdout can only be flushed. Of the
    post-processing plugins, gzip is flushed to a point a reader can decompress up to; bz2
    and lzma keep what they compress until the feed is closed.
    """
    from scrapy.extensions.feedexport import BlockingFeedStorage, FeedExporter

    exporter = None if crawler is None else crawler.get_extension(FeedExporter)
    if exporter is None:
        return
    for slot in exporter.slots:
        if slot.file is None or isinstance(slot.storage, BlockingFeedStorage):
            continue
        stream = getattr(slot.exporter, "stream", None)  # csv and xml write through a text layer
        try:
            if isinstance(stream, io.IOBase) and not stream.closed:
                stream.flush()
            _sync_file(slot.file)
        except OSError as exc:  # named: a full disk under a feed is the feed's, not the state's
            path = getattr(slot.storage, "path", None)
            exc.filename = exc.filename or (os.path.abspath(path) if path else slot.uri)
            raise


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
