"""One crawl at a time on a state directory: an exclusive ``flock`` on a file in it.

A crawl takes ``LOCK_EX | LOCK_NB`` on ``lock`` in its state directory (and on
``neardup.lock`` in its ``JOBDIR`` when the state lives elsewhere) before it reads anything,
and writes its PID into the file; a second crawl is refused with a StateError naming the
directory and that PID. The kernel releases a ``flock`` however its process ends, so a killed
crawl never blocks the next start. Within one process the lock is counted, and released with
its last holder. Rationale: ``docs/design.md#directory-lock``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.storage.statefile import refuse_link

LOCK_FILE = "lock"
JOBDIR_LOCK_FILE = "neardup.lock"

_held: dict[str, list[int]] = {}  # real path -> [descriptor, holders in this process]
_lock = threading.Lock()


class DirectoryLock:
    """The lock file ``path``, taken by :meth:`acquire`, released by :meth:`release`."""

    def __init__(self, path: Path, directory: Path) -> None:
        self.path = path
        self.directory = directory
        self._key: str | None = None

    def acquire(self) -> None:
        """Take the lock, or raise StateError naming the directory and the holder's PID."""
        if self._key is not None:
            return
        key = os.path.realpath(self.path)
        with _lock:
            if key not in _held:
                _held[key] = [self._flock(), 0]
            _held[key][1] += 1
            self._key = key

    def _flock(self) -> int:
        """A descriptor of the lock file, holding its ``flock``, with this PID written in."""
        refuse_link(self.path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = "?"
            with contextlib.suppress(OSError):
                text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                holder = text if text.isdigit() else holder
            os.close(fd)
            raise StateError(
                f"in use by another crawl (process {holder}, which holds {self.path}): two "
                "crawls on one state directory corrupt it. Wait for that crawl to end (or "
                "stop it), or give this one another JOBDIR",
                path=str(self.directory),
            ) from None
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):  # the PID only informs (a full disk)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return fd

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None:
            return
        with _lock:
            held = _held[key]
            held[1] -= 1
            if held[1] <= 0:
                del _held[key]
                with contextlib.suppress(OSError):
                    os.ftruncate(held[0], 0)  # no PID: nobody holds it
                os.close(held[0])  # releases the flock


def state_locks(state_dir: Path, jobdir: str | None) -> list[DirectoryLock]:
    """The locks a crawl takes: its state directory's, and its JOBDIR's if that is elsewhere."""
    locks = [DirectoryLock(state_dir / LOCK_FILE, state_dir)]
    if jobdir:
        job = Path(jobdir)
        if os.path.realpath(state_dir.parent) != os.path.realpath(job):
            locks.append(DirectoryLock(job / JOBDIR_LOCK_FILE, job))
    return locks
