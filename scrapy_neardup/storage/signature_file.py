"""Bytes kept out of the process's memory: what only a candidate's verification reads.

Promises: what is appended is read back whole by its offsets; a file that cannot be made or
written (no temporary directory, a full disk) is logged once, and what it would have held
stays in memory: nothing is lost. The file is unlinked, so a kill leaves nothing. Rationale:
``docs/design.md#memory-store``.
"""

from __future__ import annotations

import logging
import os
import tempfile
import weakref
from typing import IO

logger = logging.getLogger(__name__)

#: Bytes held in memory before they are written to the file.
TAIL = 1 << 20


class SignatureFile:
    """Bytes appended to an unlinked temporary file and read back with ``pread``; the last
    :data:`TAIL` bytes wait in memory before they are written."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._writable = True
        self._written = 0
        self._tail = bytearray()
        try:
            self._file = tempfile.TemporaryFile(buffering=0)  # noqa: SIM115 (closed below)
        except OSError as exc:
            self._give_up(exc)
            return
        weakref.finalize(self, self._file.close)  # and unlinked: a kill leaves nothing

    def _give_up(self, exc: OSError) -> None:
        logger.warning("scrapy-neardup: cannot write the signature file (%s); kept in memory", exc)
        self._writable = False  # what was written stays readable

    def append(self, data: bytes) -> int:
        """Append; returns the end offset of ``data``."""
        self._tail += data
        if len(self._tail) >= TAIL:
            self._write()
        return self._written + len(self._tail)

    def _write(self) -> None:
        if self._file is None or not self._writable:
            return
        done = 0
        try:
            while done < len(self._tail):
                done += os.write(self._file.fileno(), self._tail[done:])
        except OSError as exc:  # bytes past _written in the file are never read
            self._give_up(exc)
            return
        self._written += done
        self._tail.clear()

    def read(self, start: int, end: int) -> bytes:
        """The bytes of one append (the tail is written whole, so none straddles it)."""
        if start >= self._written:
            return bytes(self._tail[start - self._written : end - self._written])
        assert self._file is not None  # bytes before _written are in the file
        data = os.pread(self._file.fileno(), end - start, start)
        if len(data) != end - start:
            raise OSError(f"signature file: read {len(data)} of {end - start} bytes")
        return data
