"""A crawl's state directory (``JOBDIR/neardup``): its lock, its database, its frontier.

Promises: one crawl at a time holds the directory: before it reads anything it takes an
exclusive ``flock`` on ``lock`` in it (and on ``neardup.lock`` in ``JOBDIR`` when the state
lives elsewhere) and writes its PID in; a second crawl is refused naming that PID, and a
killed crawl's lock never blocks the next start (within one process the lock is counted,
released with its last holder). The directory and its files are never followed through a
symbolic link; state of an earlier release's format, of another
spider, or that cannot be read stops the start with a StateError naming the file. Everything
recorded is committed at least every ``NEARDUP_FLUSH_INTERVAL`` (a periodic sync while the
crawl runs), in the order a crash needs: the state, then the feed files, then the requests
done. A full disk, or a database that breaks mid-crawl, stops the crawl and leaves the state
as a crash leaves it.
Rationale: ``docs/design.md#state-directory``, ``docs/design.md#directory-lock``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy_neardup.exceptions import StateError
from scrapy_neardup.frontier import Frontier
from scrapy_neardup.storage.statedb import STATE_FILE, StateDB, refuse_link

logger = logging.getLogger(__name__)

#: Seconds between two periodic syncs at least (NEARDUP_FLUSH_INTERVAL=0 syncs every record).
MIN_SYNC_PERIOD = 0.2
#: The finish reason of a crawl stopped because a disk it writes to is full.
DISK_FULL_REASON = "neardup_disk_full"
#: The finish reason of a crawl stopped because its state database broke under it.
STATE_ERROR_REASON = "neardup_state_error"
#: The files of the format an earlier release wrote (snapshots and journals of its own).
OLD_FILES = (
    "urls.bloom",
    "urls.journal",
    "urls.sqlite",
    "content.state",
    "content.journal",
    "content.lshbloom",
    "frontier.journal",
    "texts.records",
)
#: Errors of a write to a full disk (or a user's full quota).
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})

_held: dict[str, list[int]] = {}  # lock file's real path -> [descriptor, holders]
_held_lock = threading.Lock()


def _lock(path: Path, directory: Path) -> str:
    """Take the lock file ``path`` of ``directory``; returns what :func:`_unlock` releases.
    StateError naming the directory and the PID of the process that holds it."""
    key = os.path.realpath(path)
    with _held_lock:
        if key not in _held:
            _held[key] = [_flock(path, directory), 0]
        _held[key][1] += 1
    return key


def _flock(path: Path, directory: Path) -> int:
    """A descriptor of the lock file, holding its ``flock``, with this PID written in."""
    refuse_link(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = "?"
        with contextlib.suppress(OSError):
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            holder = text if text.isdigit() else holder
        os.close(fd)
        raise StateError(
            f"in use by another crawl (process {holder}, which holds {path}): two crawls on "
            "one state directory corrupt it. Wait for that crawl to end (or stop it), or give "
            "this one another JOBDIR",
            path=str(directory),
        ) from None
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):  # the PID only informs (a full disk)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _unlock(key: str) -> None:
    with _held_lock:
        held = _held[key]
        held[1] -= 1
        if held[1] <= 0:
            del _held[key]
            with contextlib.suppress(OSError):
                os.ftruncate(held[0], 0)  # no PID: nobody holds it
            os.close(held[0])  # releases the flock


class StateDirectory:
    """Opened by a state (:meth:`open`), synced periodically, closed with it."""

    def __init__(
        self,
        path: Path,
        *,
        flush_interval: float,
        stats: Any = None,
        crawler: Any = None,
        stop_crawl: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.path = path
        self.stats = stats
        self.crawler = crawler
        self._stop_crawl = stop_crawl
        self.db = StateDB(path / STATE_FILE, flush_interval)
        self.frontier: Frontier | None = None
        #: Whether the database was made by this start (a new JOBDIR).
        self.fresh = False
        #: The error of a write that failed (a full disk, a damaged database); nothing is
        #: written after it.
        self.failed: BaseException | None = None
        self._locks: list[str] = []
        self._sync_loop: Any = None
        #: The clock of the periodic sync (None: the reactor; tests give a Clock).
        self.sync_clock: Any = None
        self._sync_failed = False
        self._opened = False

    def open(
        self,
        meta: dict[str, str],
        identity: dict[str, str],
        frontier: bool,
        load: Callable[[StateDB], None],
    ) -> None:
        """Lock, open (or make) the database with ``meta`` and ``identity`` (the spider and
        the storage: a state of another is refused), ``load`` the state's own part of it,
        open the frontier if wanted, then start writing. StateError, with nothing left open
        and nothing written, when the state cannot be used."""
        try:
            if self.path.is_symlink():
                refuse_link(self.path)
            self.path.mkdir(parents=True, exist_ok=True)
            for name in OLD_FILES:
                if os.path.lexists(self.path / name):
                    raise StateError(
                        "state in the format of an earlier release of scrapy-neardup (snapshots "
                        "and journals), which this one does not read: finish that crawl with the "
                        "release that wrote it, or start this one with a new JOBDIR",
                        path=str(self.path / name),
                    )
            locks = [(self.path / "lock", self.path)]
            jobdir = self.crawler.settings.get("JOBDIR") if self.crawler is not None else None
            if jobdir and os.path.realpath(self.path.parent) != os.path.realpath(jobdir):
                locks.append((Path(jobdir) / "neardup.lock", Path(jobdir)))
            for lock, directory in locks:
                self._locks.append(_lock(lock, directory))
            self.fresh = self.db.open({**meta, **identity})
            for name, value in identity.items():
                written_by = self.db.meta(name)
                if value and written_by and written_by != value:
                    raise StateError(
                        f"state of another crawl: its {name} is {written_by!r}, this crawl's "
                        f"{value!r}; give this crawl its own JOBDIR",
                        path=str(self.db.path),
                    )
            load(self.db)
            if frontier:
                self.frontier = Frontier(self.db, self.stats)
                self.frontier.crawler = self.crawler
                self.frontier.read()
            self.db.start_writing()
            if self.frontier is not None:
                self.frontier.start()
                if not self.frontier.ended_cleanly:
                    self.set_aside_scrapy_queue()
        except OSError as exc:  # a StateError names the file, as for every unreadable one
            self.abandon()
            message = f"cannot be read or written: {exc.strerror or exc}"
            raise StateError(message, path=str(exc.filename or self.path)) from None
        except BaseException:
            self.abandon()
            raise
        self._opened = True

    def set_aside_scrapy_queue(self) -> None:
        """After a crash, move Scrapy's JOBDIR request queue out of the scheduler's way: Scrapy
        writes its bookkeeping only at a clean close, and hangs on it after a SIGKILL. The
        frontier holds every request that queue could: they are scheduled again."""
        from scrapy.utils.job import job_dir

        jobdir = job_dir(self.crawler.settings) if self.crawler is not None else None
        if not jobdir:
            return
        spider_state = Path(jobdir) / "spider.state"
        if spider_state.is_file() and not spider_state.stat().st_size:
            # Scrapy's SpiderState rewrites it in place at close: on a full disk it is left
            # empty, and then fails to load at every start (EOFError), and to save at close.
            empty = spider_state.with_name("spider.state.empty")
            spider_state.replace(empty)
            logger.warning(
                "scrapy-neardup: %s is empty (written on a full disk, or cut by a crash), and "
                "Scrapy cannot load it; it was moved to %s, and the spider starts with an "
                "empty spider.state",
                spider_state,
                empty,
            )
        queue = Path(jobdir) / "requests.queue"
        if not queue.exists():
            return
        aside = queue.with_name("requests.queue.crashed")
        shutil.rmtree(aside, ignore_errors=True)
        queue.rename(aside)
        logger.warning(
            "scrapy-neardup: the last run did not end cleanly, so Scrapy's request queue in %s "
            "is stale (Scrapy cannot resume it after a crash); it was moved to %s, and the "
            "requests the plugin recorded are scheduled again",
            queue,
            aside,
        )

    def write(self, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, a write of the state. When it fails on a full disk, or on a
        database that broke under the crawl, nothing more is written and the crawl stops
        (:meth:`failed_with`); None is returned."""
        if self.failed is not None:
            return None
        try:
            return call(*args)
        except OSError as exc:
            if exc.errno not in DISK_FULL:
                raise
            self.failed_with(exc, exc.filename or self.db.path)
        except StateError as exc:
            self.failed_with(exc, exc.path or self.db.path)
        return None

    @property
    def disk_full(self) -> BaseException | None:
        """The error of a write that met a full disk, once the crawl stops on it."""
        return self.failed if isinstance(self.failed, OSError) else None

    def sync(self) -> None:
        """Make everything recorded so far durable, done requests last (after the feeds)."""
        if self.frontier is not None:
            self.write(self.frontier.sync)
        else:
            self.write(self.db.commit, True)

    def failed_with(self, exc: BaseException, path: Path | str) -> None:
        """A write met a full disk, or a damaged database: nothing more is written (the state
        is left as a crash leaves it, so the same command resumes the crawl once space is
        freed), and the crawl is stopped."""
        if self.failed is not None:
            return
        self.failed = exc
        self.db.rollback()
        full = isinstance(exc, OSError)
        reason = DISK_FULL_REASON if full else STATE_ERROR_REASON
        if self.stats is not None:
            self.stats.inc_value("neardup/state/disk_full" if full else "neardup/state/errors")
        if full:
            logger.error(
                "scrapy-neardup: no space left to write %s (%s); the crawl stops (finish "
                "reason '%s') and its state in %s is left as a crash leaves it. Free space on "
                "that disk, then run the same command again: the crawl resumes, and the "
                "requests it had not finished are crawled again",
                path,
                getattr(exc, "strerror", None) or exc,
                reason,
                self.path,
            )
        else:
            logger.error(
                "scrapy-neardup: %s; the state cannot be recorded, so the crawl stops (finish "
                "reason '%s')",
                exc,
                reason,
            )
        self._stop_crawl(reason)

    def schedule_sync_loop(self) -> None:
        """Sync every ``NEARDUP_FLUSH_INTERVAL`` seconds (``MIN_SYNC_PERIOD`` at least) while
        the crawl runs: the state commits by itself only as it is written, and the requests
        done wait for a sync to be written."""
        from scrapy import signals

        from scrapy_neardup.twisted_futures import installed_reactor

        if self.crawler is None or not self._opened:
            return
        reactor = installed_reactor()
        if reactor is not None and reactor.running:
            self._start_sync_loop()
        else:
            self.crawler.signals.connect(self._start_sync_loop, signal=signals.engine_started)

    def _start_sync_loop(self, *args: Any, **kwargs: Any) -> None:
        from scrapy.utils.reactor import is_reactor_installed
        from twisted.internet.task import LoopingCall

        if self._sync_loop is not None or not self._opened:
            return
        period = max(self.db.flush_interval, MIN_SYNC_PERIOD)
        clock = self.sync_clock
        if clock is None and not is_reactor_installed():  # TWISTED_REACTOR_ENABLED = False
            try:
                from scrapy.utils.asyncio import AsyncioLoopingCall
            except ImportError:  # Scrapy < 2.14: committed as written, done at close
                return
            self._sync_loop = AsyncioLoopingCall(self._periodic_sync)
        else:
            if clock is None:
                from twisted.internet import reactor as clock
            self._sync_loop = LoopingCall(self._periodic_sync)
            self._sync_loop.clock = clock
        self._sync_loop.start(period, now=False)

    def _periodic_sync(self) -> None:
        try:
            self.sync()
        except Exception:  # e.g. a feed that cannot be synced: retried at the next tick
            if self.stats is not None:
                self.stats.inc_value("neardup/state/sync_errors")
            if not self._sync_failed:
                self._sync_failed = True
                logger.exception(
                    "scrapy-neardup: syncing the state in %s failed; retried every interval "
                    "(failures counted in neardup/state/sync_errors)",
                    self.path,
                )

    def close(self, meta: dict[str, str] | None = None) -> None:
        """A clean close: everything synced, the run recorded as closed (with ``meta``, in
        the same commit), the database closed; with a full disk, left as a crash leaves it."""
        if self._sync_loop is not None:
            if self._sync_loop.running:
                self._sync_loop.stop()
            self._sync_loop = None
        if self._opened and self.failed is None:
            if self.frontier is not None:
                self.write(self.frontier.close, meta or {})
            self.write(self.db.close)
        self.abandon()

    def abandon(self) -> None:
        """Close without writing anything more, and release the locks."""
        self._opened = False
        self.db.abandon()
        for key in reversed(self._locks):
            _unlock(key)
        self._locks = []
