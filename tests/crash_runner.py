"""One crawl of the demo spider that may be killed at any moment (see tests/test_crash.py).

    python tests/crash_runner.py '{"start_url": ..., "settings": {...}, "log": "items.jsonl"}'

(``"spider"``: the import path of another spider class than the demo's; ``"spider_args"``:
more keyword arguments for it.)

With ``"stop_at": N`` the run stops itself (``SIGSTOP``) right after it logged its N-th item
(N = 0: when the spider opens, before any request), so that a test kills it there, at that
event, however loaded the machine is: :func:`stopped` waits for it, :func:`kill_stopped`
kills it. A test that waits for the N-th line and then kills would let the crawl go on
meanwhile, and on a busy machine even finish. ``"stop_at_kept": N`` stops it the same way
right after its N-th kept item (dropped ones not counted).

With ``"close_at": N`` the run stops itself gracefully (``SIGTERM``, as Ctrl-C does) right
after its N-th item; with ``"kill_at_write": W`` as well, it dies of ``SIGKILL`` at the W-th
write from then on (each commit of the state database, each ``fsync`` and ``os.replace``: the
writes of the close, of this release and of the one before), so that a test kills the close
at each of its writes in turn.

Every item's fate (kept or dropped, with the reason) is appended to ``log`` and fsynced as it
happens, so what a run delivered before a SIGKILL is on disk; that stands in for a feed whose
writes are durable. At a normal end a final ``{"stats": ...}`` line is appended.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "example_project"))


def launch(args: dict[str, Any], stderr: Path, cwd: Path) -> subprocess.Popen:
    """Start this runner in a fresh process with ``args``, its stderr appended to ``stderr``."""
    from crawl_runner import ENV

    with stderr.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, __file__, json.dumps(args)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
            env=ENV,
        )


def stopped(proc: subprocess.Popen, timeout: float = 300) -> bool:
    """Wait until ``proc`` stopped itself (``stop_at``): True; False if it exited first (its
    return code is then set). ``timeout`` is a failure guard only."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status = os.waitpid(proc.pid, os.WNOHANG | os.WUNTRACED)
        if pid:
            if os.WIFSTOPPED(status):
                return True
            proc.returncode = os.waitstatus_to_exitcode(status)
            return False
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"the run neither stopped nor ended in {timeout} s")
        time.sleep(0.005)


def kill_stopped(proc: subprocess.Popen) -> None:
    """SIGKILL a run that :func:`stopped` (a stopped process dies of SIGKILL too)."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def feed_lines(path: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of a file (a line cut by the kill is not one)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def main() -> None:
    args = json.loads(sys.argv[1])
    from itemadapter import ItemAdapter
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.misc import load_object

    spider_class = load_object(args.get("spider", "demo.spiders.demo.DemoSpider"))

    settings = {
        "ADDONS": {"scrapy_neardup.Addon": 500},
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        **args.get("settings", {}),
    }
    log = Path(args["log"]).open("a", encoding="utf-8")  # noqa: SIM115 - open for the run

    stop_at = args.get("stop_at")
    stop_at_kept = args.get("stop_at_kept")
    close_at = args.get("close_at")
    writes = _kill_at_write(args.get("kill_at_write"))
    logged = kept = 0

    def write(record: dict[str, Any]) -> None:
        nonlocal logged, kept
        log.write(json.dumps(record) + "\n")
        log.flush()
        _fsync(log.fileno())  # the log's own: not a write of the crawl
        if "stats" in record:
            return
        logged += 1
        kept += "kept" in record
        if logged == stop_at or ("kept" in record and kept == stop_at_kept):
            os.kill(os.getpid(), signal.SIGSTOP)  # the test kills us here (see stopped())
        if logged == close_at:
            writes["counting"] = True
            os.kill(os.getpid(), signal.SIGTERM)  # Scrapy's graceful stop

    def on_opened(spider: Any) -> None:
        if stop_at == 0:
            os.kill(os.getpid(), signal.SIGSTOP)

    process = CrawlerProcess(settings=settings)
    crawler = process.create_crawler(spider_class)

    def on_scraped(item: Any, **kwargs: Any) -> None:
        write({"kept": ItemAdapter(item).asdict()})

    def on_dropped(item: Any, exception: BaseException, **kwargs: Any) -> None:
        write({"dropped": ItemAdapter(item).asdict(), "reason": str(exception)})

    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    crawler.signals.connect(on_dropped, signal=signals.item_dropped)
    crawler.signals.connect(on_opened, signal=signals.spider_opened)
    process.crawl(crawler, start_url=args["start_url"], **args.get("spider_args", {}))
    process.start()
    stats = {
        k: (v if isinstance(v, (int, float, str)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    write({"stats": stats})
    log.close()


_fsync = os.fsync


def _kill_at_write(kill_at: int | None) -> dict[str, Any]:
    """Make ``os.fsync``, ``os.replace`` and the state database's commit die of SIGKILL at
    their ``kill_at``-th call once ``counting`` is set; the counter, to set it."""
    writes: dict[str, Any] = {"counting": False, "count": 0}
    if kill_at is None:
        return writes

    def point(call: Any) -> Any:
        def write(*args: Any, **kwargs: Any) -> Any:
            if writes["counting"]:
                writes["count"] += 1
                if writes["count"] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return call(*args, **kwargs)

        return write

    os.fsync = point(os.fsync)
    os.replace = point(os.replace)
    try:
        from scrapy_neardup.storage.statedb import StateDB
    except ImportError:  # the release before: files, fsynced and replaced
        pass
    else:
        StateDB.commit = point(StateDB.commit)
    return writes


if __name__ == "__main__":
    main()
