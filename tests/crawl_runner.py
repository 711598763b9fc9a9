"""Runs one crawl of the example project's demo spider in a fresh process, as a user would.

    python tests/crawl_runner.py '{"start_url": ..., "settings": {...}, "out": "result.json"}'

With ``"ready": PATH, "go": PATH`` it touches ``ready`` once set up and waits for ``go`` to
exist before its first request, so that a test can start several crawls at the same moment.

Writes the kept items, the dropped items with their reasons, the crawl's stats and every
warning raised to ``out``. A separate process per crawl: a Twisted reactor cannot restart.
Tests start it with :func:`launch` and read its result with :func:`collect`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "example_project"))
#: The crawl subprocesses' environment: this tree first, then whatever PYTHONPATH was given.
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        [str(ROOT), str(ROOT / "example_project"), *filter(None, [os.environ.get("PYTHONPATH")])]
    ),
}


def launch(
    start_url: str,
    out: Path,
    settings: dict,
    ready: Path | None = None,
    go: Path | None = None,
    runner: Path = Path(__file__),
) -> subprocess.Popen:
    """Start a crawl in a fresh process (``runner``: this script, or one that wraps it)."""
    args: dict = {"start_url": start_url, "out": str(out), "settings": settings}
    if ready is not None:
        args.update(ready=str(ready), go=str(go))
    return subprocess.Popen(
        [sys.executable, str(runner), json.dumps(args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=out.parent,
        env=ENV,
    )


#: Start pages of two crawls of the demo site that race through the same links (they share
#: /zh and a section).
HALVES = (
    ["", "archive", "zh", "section/energy", "section/transport", "section/health"],
    ["most-read", "wire", "partners", "zh", "section/health", "section/farming", "section/science"],
)


def launch_two(
    site_url: str, tmp_path: Path, settings: dict, runner: Path = Path(__file__)
) -> list[tuple[subprocess.Popen, Path]]:
    """Two crawls from :data:`HALVES`, released at the same moment once both are set up."""
    import time

    go = tmp_path / "go"
    procs = []
    for n, paths in enumerate(HALVES):
        start = ",".join(site_url + p for p in paths)
        out, ready = tmp_path / f"{n}.json", tmp_path / f"ready{n}"
        procs.append((launch(start, out, settings, ready, go, runner), out, ready))
    deadline = time.monotonic() + 60
    while not all(ready.exists() for _, _, ready in procs) and time.monotonic() < deadline:
        if any(proc.poll() is not None for proc, _, _ in procs):
            break
        time.sleep(0.01)
    go.touch()  # both set up: crawl at the same moment
    return [(proc, out) for proc, out, _ in procs]


def finish(proc: subprocess.Popen, timeout: float = 180) -> str:
    """Wait for a launched crawl; its stderr. Fails if it did not end in ``timeout``."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"the crawl did not end: {stderr[-4000:]}") from None
    return stderr


def collect(proc: subprocess.Popen, out: Path, timeout: float = 180) -> dict:
    """Wait for a launched crawl; its result, with its stderr. Fails if it did not end well."""
    stderr = finish(proc, timeout)
    assert proc.returncode == 0, stderr[-4000:]
    result = json.loads(out.read_text())
    result["stderr"] = stderr
    return result


def main() -> None:
    args = json.loads(sys.argv[1])
    caught: list[str] = []

    def record(message, category, filename, lineno, file=None, line=None):
        caught.append(f"{category.__name__}: {message} ({filename}:{lineno})")

    warnings.simplefilter("always")

    from demo.spiders.demo import DemoSpider
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    settings = {
        "ADDONS": {"scrapy_neardup.Addon": 500},
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        **args.get("settings", {}),
    }
    kept: list[dict] = []
    dropped: list[dict] = []
    spider_class = DemoSpider
    if args.get("ready"):

        class SyncedSpider(DemoSpider):
            """Tells the test this process is set up (its state opened, before the spider's
            start), then waits for its go."""

            async def start(self):
                Path(args["ready"]).touch()
                wait_for(Path(args["go"]))
                async for request in super().start():
                    yield request

        spider_class = SyncedSpider
    process = CrawlerProcess(settings=settings)
    # After CrawlerProcess: setting up Scrapy's logging replaces warnings.showwarning.
    warnings.showwarning = record
    crawler = process.create_crawler(spider_class)

    def on_scraped(item, **kwargs):
        kept.append(dict(item))

    def on_dropped(item, exception, **kwargs):
        dropped.append({**dict(item), "reason": str(exception)})

    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    crawler.signals.connect(on_dropped, signal=signals.item_dropped)
    process.crawl(crawler, start_url=args["start_url"])
    process.start()
    stats = {
        k: (v if isinstance(v, (int, float, str)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    Path(args["out"]).write_text(
        json.dumps({"kept": kept, "dropped": dropped, "stats": stats, "warnings": caught}, indent=1)
    )


def assert_each_document_once(site: Any, results: list[dict]) -> None:
    """Crawls that shared one state kept every distinct document of the demo site once
    between them (and each of its near copies beside it, as the default decision does), and
    dropped only true copies (each drop's original is its document)."""
    kept = [item for r in results for item in r["kept"]]
    ids = Counter(site.lookup(item["url"]).doc_id for item in kept)
    assert set(ids) == set(site.expected_unique_docs()), "a distinct document was lost"
    near = Counter(site.lookup(url).doc_id for url in site.near_copies())
    assert ids == Counter(site.expected_unique_docs()) + near, ids - near
    for r in results:
        for item in r["dropped"]:
            original = item["reason"].split("near-duplicate of ", 1)[1].split(" (", 1)[0]
            assert site.lookup(item["url"]).doc_id == site.lookup(original).doc_id


def wait_for(path: Path, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} did not appear within {timeout} s")
        time.sleep(0.01)


if __name__ == "__main__":
    main()
