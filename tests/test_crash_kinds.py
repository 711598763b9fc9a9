"""The crash promise for every kind of spider: killed with SIGKILL, resumed, nothing lost.

Slow, so not in the default run (marker ``crash_kinds``, deselected by pyproject's addopts)::

    python -m pytest -q -m crash_kinds tests/test_crash_kinds.py

Each kind (tests/kinds_spiders.py) crawls tests/kinds_site.py, a loopback site of
``ARTICLES`` article pages that answers slowly, in a process of its own
(tests/crash_runner.py) with ``JOBDIR`` and a JSON-lines feed per run. The run is killed
with SIGKILL once it has delivered some items (an event: the run stops itself right after
its N-th item, crash_runner.py's ``stop_at``, and is killed there; never a fixed sleep),
started again with the same command and killed again, then started until it finishes. With
the plugin every article page must be in the feed files (at least once: duplicates are
allowed). The same harness runs plain Scrapy with ``JOBDIR`` (no plugin); its figure is
reported beside ours, not judged. Both are printed in the terminal summary and recorded as
test properties (``--junitxml``).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import CRASH_FIGURES
from crash_runner import feed_lines as lines
from crash_runner import kill_stopped, launch, stopped
from kinds_site import ARTICLES, KindsSite
from redis_server import RedisServer

from scrapy_neardup.storage import redis_client

pytestmark = [pytest.mark.crash_kinds, pytest.mark.timeout(900)]

#: Seconds each response waits (CONCURRENT_REQUESTS = 4).
DELAY = 0.02
SETTINGS = {
    "CONCURRENT_REQUESTS": 4,
    "LOG_LEVEL": "INFO",
    "NEARDUP_WORKERS": 0,  # extraction inline: no worker start-up
}
PLAIN = {"ADDONS": {}}
#: Items the first and the second run deliver before they are killed. The second is late:
#: plain Scrapy's ``requests.seen`` is a buffered file (8 KB, about 370 requests), so a run
#: killed before that many requests leaves no trace and its resume starts afresh.
KILL_AFTER = (60, 450)
#: Failure guards only: how long a run may take to reach its kill point, or its end.
EVENT_TIMEOUT = 240
RUN_TIMEOUT = 300

SPIDERS = "tests.kinds_spiders."
KINDS = {
    "CrawlSpider": "KindCrawl",
    "SitemapSpider": "KindSitemap",
    "XMLFeedSpider": "KindXMLFeed",
    "CSVFeedSpider+errback": "KindCSVFeed",
    "Spider+follow": "KindFollow",
    "async start+JsonRequest": "KindAsyncJson",
    "FormRequest": "KindForm",
}


@pytest.fixture(scope="module")
def kinds_site() -> Any:
    site = KindsSite()
    server, base = site.serve(DELAY)
    yield site, base
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory) -> Any:
    srv = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield srv.url
    srv.stop()


@dataclass
class Outcome:
    kills: int
    runs: int
    finished: bool
    urls: set[str]  # the URL of every item in every feed file
    items: int  # feed lines, duplicates included


def run_stats(fates: Path) -> dict[str, Any]:
    records = lines(fates)
    return records[-1].get("stats", {}) if records else {}


def crash_and_resume(
    base: str,
    tmp: Path,
    spider: str,
    settings: dict[str, Any],
    spider_args: dict[str, Any] | None = None,
) -> Outcome:
    """Start, kill after each of :data:`KILL_AFTER` items, then start until it finishes."""
    stderr = tmp / "stderr.log"

    def start(n: int, stop_at: int | None = None) -> subprocess.Popen:
        args = {
            "start_url": base,
            "spider": spider,
            "spider_args": spider_args or {},
            "log": str(tmp / f"fates{n}.jsonl"),
            "settings": {
                "JOBDIR": str(tmp / "job"),
                "FEEDS": {str(tmp / "feeds" / f"run{n}.jsonl"): {"format": "jsonlines"}},
                **SETTINGS,
                **settings,
            },
        }
        if stop_at is not None:
            args["stop_at"] = stop_at  # the run stops itself after that many items
        return launch(args, stderr, tmp)

    def finish(proc: subprocess.Popen, n: int) -> bool:
        try:
            code = proc.returncode if proc.returncode is not None else proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError(f"run {n} did not end in {RUN_TIMEOUT} s") from None
        assert code == 0, stderr.read_text()[-3000:]
        return run_stats(tmp / f"fates{n}.jsonl").get("finish_reason") == "finished"

    kills = n = 0
    finished = False
    for count in KILL_AFTER:
        proc = start(n, stop_at=count)
        if stopped(proc, EVENT_TIMEOUT):
            kill_stopped(proc)
            kills += 1
            n += 1
        else:
            finished = finish(proc, n)
            n += 1
            if finished:
                break
    while not finished and n < len(KILL_AFTER) + 3:
        finished = finish(start(n), n)
        n += 1
    feed = [item for i in range(n) for item in lines(tmp / "feeds" / f"run{i}.jsonl")]
    return Outcome(kills, n, finished, {item["url"] for item in feed}, len(feed))


def figure(outcome: Outcome, expected: set[str]) -> str:
    found = len(expected & outcome.urls)
    return (
        f"{found}/{len(expected)} pages in the feed, {outcome.items} items, "
        f"{outcome.kills} kills, {outcome.runs} runs, finished={outcome.finished}"
    )


def report(request: Any, kind: str, who: str, text: str) -> None:
    request.node.user_properties.append((f"{kind} {who}", text))
    request.config.stash.setdefault(CRASH_FIGURES, []).append(f"{kind:26} {who:7} {text}")
    print(f"\n{kind} {who}: {text}")


def check(request: Any, kind: str, who: str, outcome: Outcome, expected: set[str], tmp: Path):
    report(request, kind, who, figure(outcome, expected))
    assert outcome.finished, (tmp / "stderr.log").read_text()[-3000:]
    if who == "plugin":
        assert outcome.kills == len(KILL_AFTER), "a run ended before its kill"
        lost = sorted(expected - outcome.urls)
        assert not lost, f"{len(lost)} of {len(expected)} pages never in a feed file: {lost[:10]}"
        assert "Traceback" not in (tmp / "stderr.log").read_text()


@pytest.mark.parametrize("who", ["plugin", "plain"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_kind_survives_kills(kind, who, kinds_site, tmp_path, request) -> None:
    site, base = kinds_site
    outcome = crash_and_resume(
        base, tmp_path, SPIDERS + KINDS[kind], PLAIN if who == "plain" else {}
    )
    check(request, kind, who, outcome, site.article_urls(base), tmp_path)


def _redis_settings(redis_url: str, prefix: str) -> dict[str, Any]:
    return {
        "REDIS_URL": redis_url,
        "REDIS_START_URLS_KEY": f"{prefix}:start",
        "MAX_IDLE_TIME_BEFORE_CLOSE": 1,  # RedisSpider waits for more start URLs: end idle
    }


@pytest.mark.parametrize("who", ["plugin", "plain"])
def test_redis_spider_survives_kills(who, kinds_site, redis_url, tmp_path, request) -> None:
    """scrapy-redis's ``RedisSpider`` with Scrapy's scheduler and ``JOBDIR``: its start URL
    comes from a Redis list (popped once, by the first run), the rest from the pages."""
    site, base = kinds_site
    prefix = f"kinds-{who}"
    client = redis_client.connect(redis_url)
    client.flushdb()
    client.lpush(f"{prefix}:start", json.dumps({"url": base + "/"}))
    client.close()
    settings = {**_redis_settings(redis_url, prefix), **(PLAIN if who == "plain" else {})}
    outcome = crash_and_resume(base, tmp_path, SPIDERS + "KindRedis", settings)
    check(request, "RedisSpider", who, outcome, site.article_urls(base), tmp_path)


@pytest.mark.parametrize("who", ["plugin", "plain"])
def test_redis_spider_with_scrapy_redis_scheduler(who, kinds_site, redis_url, tmp_path, request):
    """``RedisSpider`` with scrapy-redis's scheduler (the request queue in Redis, kept between
    runs), our dupefilter and ``NEARDUP_STORAGE = "redis"``. The plugin keeps no frontier
    there (only its file state journals requests and syncs the feed files before a request
    is done): a request popped from Redis and in flight at the kill is lost, and so is an
    item still in the feed's write buffer, as with scrapy-redis alone. Reported, not
    judged."""
    site, base = kinds_site
    prefix = f"kinds-sched-{who}"
    client = redis_client.connect(redis_url)
    client.flushdb()
    client.lpush(f"{prefix}:start", json.dumps({"url": base + "/"}))
    client.close()
    settings = {
        **_redis_settings(redis_url, prefix),
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_QUEUE_KEY": f"{prefix}:requests",
        "SCHEDULER_DUPEFILTER_KEY": f"{prefix}:dupefilter",
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,
    }
    if who == "plain":
        settings.update(PLAIN, DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter")
    else:
        settings.update(
            DUPEFILTER_CLASS="scrapy_neardup.NearDupDupeFilter",
            NEARDUP_STORAGE="redis",
            NEARDUP_REDIS_URL=redis_url,
            NEARDUP_KEY_PREFIX=prefix,
        )
    outcome = crash_and_resume(base, tmp_path, SPIDERS + "KindRedis", settings)
    report(request, "RedisSpider+redis sched.", who, figure(outcome, site.article_urls(base)))
    assert outcome.finished, (tmp_path / "stderr.log").read_text()[-3000:]


def test_site_has_the_pages(kinds_site) -> None:
    site, base = kinds_site
    assert len(site.article_urls(base)) == ARTICLES
