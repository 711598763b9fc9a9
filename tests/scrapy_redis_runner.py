"""tests/crawl_runner.py, plus a record of what the crawl fetched and of its scheduler; and
workers sharing a scrapy-redis queue (:func:`start_workers`), one of them killed
(:func:`kill_one_of_three`).

    python tests/scrapy_redis_runner.py '{"start_url": ..., "settings": {...}, "out": "r.json"}'

Takes crawl_runner.py's arguments and writes its ``out``, and beside it ``out + ".fetched"``
(JSON): the URL of every response downloaded (redirects included), in order, and the import
path of the scheduler and of its dupefilter, with whether the dupefilter shares the crawler's
scrapy-neardup state, as seen when the spider opened and when it closed (scrapy-redis's
scheduler builds its dupefilter in ``Scheduler.open`` and flushes it in ``Scheduler.close``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import crawl_runner


class FetchLog:
    """An extension: records responses, the scheduler's dupefilter, the seconds from the
    last response to the spider's close (``tail_s``), and when the first and the last
    response came (``first_at``, ``last_at``: ``time.monotonic()``, one clock for every
    process of the machine), to ``FETCH_LOG``."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.path = Path(crawler.settings["FETCH_LOG"])
        self.record: dict[str, Any] = {"fetched": []}
        self.last_response = time.monotonic()
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> FetchLog:
        return cls(crawler)

    def response_downloaded(self, response: Any, request: Any, **kwargs: Any) -> None:
        self.record["fetched"].append(response.url)
        self.last_response = time.monotonic()
        self.record.setdefault("first_at", self.last_response)
        self.record["last_at"] = self.last_response

    def _dupefilter(self) -> dict[str, Any]:
        from scrapy_neardup.state import crawl_state

        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None) or engine._slot.scheduler
        df = getattr(scheduler, "df", None)
        cls = type(df)
        state = getattr(df, "state", None)
        return {
            "scheduler": f"{type(scheduler).__module__}.{type(scheduler).__qualname__}",
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "shares_state": state is not None and state is crawl_state(self.crawler),
        }

    def spider_opened(self, spider: Any) -> None:
        self.record["opened"] = self._dupefilter()

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.record["closed"] = self._dupefilter()
        self.record["tail_s"] = time.monotonic() - self.last_response
        self.path.write_text(json.dumps(self.record, indent=1))


#: The three ways a queue is shared that :func:`workers_settings` knows.
SCHEDULERS = {
    "scrapy-redis": {  # scrapy-redis alone: its scheduler and its dupefilter, no plugin
        "ADDONS": {},
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    },
    "scrapy-redis+plugin": {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_neardup.NearDupDupeFilter",
    },
    "leases": {
        "SCHEDULER": "scrapy_neardup.leases.LeasingScheduler",
        "DUPEFILTER_CLASS": "scrapy_neardup.NearDupDupeFilter",
    },
}


def workers_settings(redis_url: str, prefix: str, scheduler: str) -> dict[str, Any]:
    """Settings of workers that share one queue under ``prefix`` (``scheduler``: a key of
    :data:`SCHEDULERS`); with the plugin, its state in the same Redis and a short lease."""
    settings = {
        "LOG_LEVEL": "INFO",
        "CONCURRENT_REQUESTS": 4,
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
        "SCHEDULER_QUEUE_KEY": f"{prefix}:requests",
        "SCHEDULER_DUPEFILTER_KEY": f"{prefix}:dupefilter",
        "REDIS_URL": redis_url,
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": redis_url,
        "NEARDUP_KEY_PREFIX": prefix,
        "NEARDUP_WORKERS": 0,
        "NEARDUP_LEASE_TIMEOUT": 2,
    }
    return {**settings, **SCHEDULERS[scheduler]}


def start_workers(
    start_url: str,
    tmp_path: Path,
    settings: dict,
    n: int,
    spider: str | None = "tests.kinds_spiders.KindFollow",
    stop_at: int | None = None,
) -> list[subprocess.Popen]:
    """``n`` workers (tests/crash_runner.py) crawl from ``start_url`` with ``settings`` (one
    shared queue: :func:`workers_settings`), ``spider`` an import path (None: the demo
    site's spider). Worker ``k`` writes its JSON-lines feed to ``feed<k>.jsonl``, its
    items' fates, then its stats, to ``fates<k>.jsonl`` and, if it ends, :class:`FetchLog`'s
    record to ``fetched<k>.json`` in ``tmp_path``; all write their stderr to ``stderr.log``.
    With ``stop_at`` the first stops itself after that many items, and the others start
    once it has its first."""
    from crash_runner import launch

    stderr = tmp_path / "stderr.log"
    extensions = {**settings.get("EXTENSIONS", {}), "scrapy_redis_runner.FetchLog": 0}
    procs = []
    for k in range(n):
        feed = {str(tmp_path / f"feed{k}.jsonl"): {"format": "jsonlines"}}
        args: dict[str, Any] = {
            "start_url": start_url,
            "log": str(tmp_path / f"fates{k}.jsonl"),
            "settings": {
                **settings,
                "FEEDS": feed,
                "EXTENSIONS": extensions,
                "FETCH_LOG": str(tmp_path / f"fetched{k}.json"),
            },
        }
        if spider is not None:
            args["spider"] = spider
        if k == 0 and stop_at is not None:
            args["stop_at"] = stop_at
        procs.append(launch(args, stderr, tmp_path))
        if k == 0 and stop_at is not None:
            _first_item(procs[0], tmp_path / "fates0.jsonl")
    return procs


def _first_item(proc: subprocess.Popen, fates: Path, timeout: float = 120) -> None:
    """Wait until the worker that is to stop has its first item (or has ended): started
    together, another worker could pop the one start request it queued, and it would find
    the shared queue empty and close before it ever reached its stop."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if fates.exists() and fates.stat().st_size:
            return
        time.sleep(0.05)


def feed_urls(tmp_path: Path, n: int) -> list[str]:
    """The URLs of the items in the feed files of :func:`start_workers`'s ``n`` workers."""
    from crash_runner import feed_lines

    return [item["url"] for k in range(n) for item in feed_lines(tmp_path / f"feed{k}.jsonl")]


def kill_one_of_three(
    base: str, tmp_path: Path, settings: dict, kill_at: int
) -> tuple[set[str], list[dict[str, Any]]]:
    """Three workers crawl the kinds site (tests/kinds_site.py) from one shared queue; the
    first is killed with SIGKILL right after its ``kill_at``-th item (it stops itself there:
    tests/crash_runner.py), with requests in flight and items in its feed's buffer; the
    other two run to the end. Returns the URLs in the union of the three feed files, and
    the two survivors' stats."""
    from crash_runner import feed_lines, kill_stopped, stopped

    stderr = tmp_path / "stderr.log"
    procs = start_workers(base, tmp_path, settings, 3, stop_at=kill_at)
    assert stopped(procs[0], 120), stderr.read_text()[-3000:]
    kill_stopped(procs[0])
    stats = []
    for proc, n in zip(procs[1:], (1, 2), strict=True):
        assert proc.wait(240) == 0, stderr.read_text()[-3000:]
        stats.append(feed_lines(tmp_path / f"fates{n}.jsonl")[-1]["stats"])
    return set(feed_urls(tmp_path, 3)), stats


def main() -> None:
    args = json.loads(sys.argv[1])
    settings = args.setdefault("settings", {})
    settings["EXTENSIONS"] = {**settings.get("EXTENSIONS", {}), "scrapy_redis_runner.FetchLog": 0}
    settings["FETCH_LOG"] = args["out"] + ".fetched"
    sys.argv[1] = json.dumps(args)
    crawl_runner.main()


if __name__ == "__main__":
    main()
