"""scrapy-neardup's dupefilter as the ``DUPEFILTER_CLASS`` of scrapy-redis's scheduler.

A real ``redis-server`` (tests/redis_server.py) and the demo site on loopback; every crawl in
its own process (tests/scrapy_redis_runner.py, i.e. crawl_runner.py plus a record of the
responses and of the scheduler's dupefilter). scrapy-redis builds the dupefilter with
``from_spider`` in ``Scheduler.open``, never calls its ``open()``/``close()``, and calls its
``clear()`` from ``Scheduler.close`` unless ``SCHEDULER_PERSIST``.

How these crawls end: scrapy-redis's default queue (``PriorityQueue``) pops without blocking
and ignores ``SCHEDULER_IDLE_BEFORE_CLOSE`` (only its FIFO/LIFO queues block, in the reactor
thread, for that long), so a plain spider closes as usual ("finished") once its downloads are
done and the shared queue is empty. A process may so end while the other still crawls; the
other then takes what is left.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import crawl_runner
import pytest
import scrapy_redis  # noqa: F401  (the test extra: missing, this module fails, never skips)
from redis_server import RedisServer
from scrapy import Request
from scrapy.settings import Settings
from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler
from scrapy_redis_runner import kill_one_of_three, workers_settings

from scrapy_neardup.dupefilter import NearDupDupeFilter
from scrapy_neardup.state import crawl_state
from scrapy_neardup.urls import canonical_url

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "scrapy_redis_runner.py"
OURS = "scrapy_neardup.dupefilter.NearDupDupeFilter"

pytestmark = pytest.mark.timeout(120)


def scrapy_redis_settings(server: RedisServer, prefix: str, **extra: object) -> dict:
    """Settings only: the add-on, scrapy-redis's scheduler and our dupefilter, both in Redis."""
    return {
        "LOG_LEVEL": "WARNING",
        "ADDONS": {"scrapy_neardup.Addon": 500},
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_neardup.NearDupDupeFilter",
        "SCHEDULER_PERSIST": True,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 0,  # see the module docstring
        "SCHEDULER_QUEUE_KEY": f"{prefix}:requests",
        "REDIS_URL": server.url,
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_KEY_PREFIX": prefix,
        "NEARDUP_WORKERS": 1,
        **extra,
    }


def start_crawl(start_url: str, out: Path, settings: dict) -> subprocess.Popen:
    return crawl_runner.launch(start_url, out, settings, runner=RUNNER)


def finish(proc: subprocess.Popen, out: Path) -> dict:
    result = crawl_runner.collect(proc, out, timeout=90)
    result.update(json.loads(Path(f"{out}.fetched").read_text()))
    return result


LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[([^\]]+)\] (WARNING|ERROR|CRITICAL): (.*)"
)
WARNING_AT = re.compile(r"^(\S+\.py):\d+: (\w+): ")


def foreign_log_lines(stderr: str) -> list[str]:
    """WARNING and ERROR log lines, but for scrapy-redis 0.9.1's own deprecation warnings
    (``stats.inc_value(..., spider=...)``, deprecated by Scrapy 2.19), which are not ours to
    fix. Scrapy logs Python warnings (``py.warnings``) once it configures logging, so they
    are in stderr, not in crawl_runner.py's list."""
    foreign = []
    for line in stderr.splitlines():
        match = LOG_LINE.match(line)
        if match is None:
            continue
        logger, _, message = match.groups()
        if logger == "py.warnings":
            where = WARNING_AT.match(message)
            if where and "/scrapy_redis/" in where[1] and where[2] == "ScrapyDeprecationWarning":
                continue
        foreign.append(line)
    return foreign


def assert_clean(result: dict) -> None:
    """Finished; no traceback, error or warning (but scrapy-redis's own); and our dupefilter
    in scrapy-redis's scheduler, sharing the crawler's state with the add-on's components."""
    stats = result["stats"]
    assert stats["finish_reason"] == "finished"
    assert "Traceback" not in result["stderr"], result["stderr"][-4000:]
    assert foreign_log_lines(result["stderr"]) == []
    # scrapy-redis 0.9 passes spider= to the stats (deprecated in Scrapy 2.19): not ours
    assert [w for w in result["warnings"] if "/scrapy_redis/" not in w] == []
    assert "neardup/redis/errors" not in stats
    assert "downloader/exception_count" not in stats
    for when in ("opened", "closed"):
        assert result[when] == {
            "scheduler": "scrapy_redis.scheduler.Scheduler",
            "class": OURS,
            "shares_state": True,
        }
    assert stats["scheduler/enqueued/redis"] > 0 and stats["scheduler/dequeued/redis"] > 0
    assert stats["neardup/urls/recorded"] > 0
    # The links of each page went to Redis in one call (LinkBatchMiddleware) under this
    # scheduler too, and its dupefilter answered from that.
    assert stats["neardup/urls/batched"] > stats["neardup/urls/recorded"]


def canonical(url: str) -> str:
    return canonical_url(url)


def test_two_crawlers_share_scrapy_redis_queue_and_our_filter(
    client, server, site, site_url, tmp_path
) -> None:
    """Two processes, one scrapy-redis queue, one scrapy-neardup URL filter and content index:
    each canonical URL is fetched once by one of them, and their kept items hold every
    distinct document of the site once."""
    settings = scrapy_redis_settings(server, "sr2", NEARDUP_BACKEND="minhash")
    procs = crawl_runner.launch_two(site_url, tmp_path, settings, runner=RUNNER)
    results = [finish(proc, out) for proc, out in procs]

    for r in results:
        assert_clean(r)
        assert r["stats"]["downloader/response_count"] > 0  # both did real work

    # URLs: no canonical URL fetched twice, by one process or by both.
    fetched = [canonical(url) for r in results for url in r["fetched"]]
    twice = [url for url, n in Counter(fetched).items() if n > 1]
    assert twice == [], twice
    for url in fetched:
        site.lookup(url)  # a page of the site (KeyError otherwise)
    assert sum(r["stats"]["downloader/response_count"] for r in results) == len(fetched)
    # Every URL of the site is reached: fetched, or claimed by the rel=canonical of a page
    # fetched before it (an AMP view names its article: whichever of the two comes first
    # records the article's URL, so the article is never fetched after its AMP view, and
    # the AMP view is dropped after its article).
    base = site_url.rstrip("/")
    amp = {canonical(base + e.url): canonical(base + e.of) for e in rel_canonical(site)}
    claimed = {amp[url] for url in fetched if url in amp}
    assert set(fetched) | claimed == {canonical(base + url) for url in site.truth}
    assert sum(r["stats"].get("neardup/urls/filtered_canonical", 0) for r in results) == len(
        claimed & set(fetched)
    )
    # The scheduler's filter (our log(): Scrapy's stat and ours) caught the shared links.
    assert sum(r["stats"].get("dupefilter/filtered", 0) for r in results) > 30
    # What the scheduler let through, the downloader middleware did not check again.
    assert sum(r["stats"].get("neardup/urls/filtered", 0) for r in results) == sum(
        r["stats"].get("dupefilter/filtered", 0) for r in results
    )

    # Items: every distinct document kept once, by one of the two.
    crawl_runner.assert_each_document_once(site, results)

    # SCHEDULER_PERSIST: the queue is empty, and our URL filter and index are kept.
    assert client.zcard("sr2:requests") == 0
    # One URL filter: each request key was new to one process only.
    recorded = sum(r["stats"]["neardup/urls/recorded"] for r in results)
    assert int(client.hget("{sr2:urls}:neardup:urls", "count")) == recorded >= len(fetched)
    assert client.keys("{sr2:exact}:neardup:exact:*")


def rel_canonical(site) -> list:
    """The demo site's URLs whose page names another URL as its ``rel=canonical``."""
    variants = [e for e in site.truth.values() if e.kind == "rel-canonical"]
    assert variants
    return variants


def test_no_persist_clears_our_url_filter_and_keeps_the_index(
    client, server, site, site_url, tmp_path
) -> None:
    """``SCHEDULER_PERSIST = False``: scrapy-redis flushes its dupefilter when the crawl ends
    (``Scheduler.close`` → ``flush`` → our ``clear()``): the URL filter's keys are gone, the
    content index stays."""
    settings = scrapy_redis_settings(
        server, "np", SCHEDULER_PERSIST=False, NEARDUP_WORKERS=0, DEPTH_LIMIT=1
    )
    out = tmp_path / "np.json"
    result = finish(start_crawl(site_url + "section/energy", out, settings), out)
    assert_clean(result)
    assert result["kept"]
    assert result["stats"]["neardup/urls/recorded"] > 0  # there was a URL filter to clear
    assert not client.keys("{np:urls}:neardup:urls*")
    assert client.hget("{np}:neardup:meta", "urls") is None  # its parameters went with it
    assert client.keys("{np:exact}:neardup:exact:*")
    assert not client.exists("np:requests")


def test_from_spider_shares_the_crawlers_state_and_from_settings_needs_none(client, server) -> None:
    """``from_spider`` (scrapy-redis's way) gives the crawler's own state, the one the add-on's
    other components use; ``from_settings`` builds a state of its own without a crawler. With
    one prefix in one Redis, both see one URL filter, and ``clear()`` empties it."""
    settings = {
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_KEY_PREFIX": "unit",
        "NEARDUP_WORKERS": 0,
    }

    class UnitSpider(Spider):
        name = "unit"

    crawler = get_crawler(UnitSpider, settings_dict=settings)
    df = NearDupDupeFilter.from_spider(UnitSpider.from_crawler(crawler))
    standalone = NearDupDupeFilter.from_settings(Settings(settings))
    try:
        assert isinstance(df, NearDupDupeFilter) and df.state is crawl_state(crawler)
        assert df.fingerprinter is crawler.request_fingerprinter
        assert standalone.state is not df.state and standalone.state.crawler is None
        assert standalone.state.key_prefix == "unit"

        assert not standalone.request_seen(Request("http://example.com/a?utm_source=x"))
        assert df.request_seen(Request("http://example.com/a"))  # one filter, in Redis
        assert not df.request_seen(Request("http://example.com/b"))
        assert client.keys("{unit:urls}:neardup:urls*")
        df.clear()
        assert not client.keys("{unit:urls}:neardup:urls*")
        assert not standalone.request_seen(Request("http://example.com/b"))
        assert df.request_seen(Request("http://example.com/b/"))
    finally:
        df.state.close()
        standalone.state.close()


# -- a worker killed: its in-flight requests -------------------------------------------------

#: Seconds each page of the kinds site waits (requests stay in flight a while).
KINDS_DELAY = 0.05
#: Items the first worker delivers before it is killed.
KILL_AT = 60


@pytest.fixture(scope="module")
def kinds_site():
    from kinds_site import KindsSite

    site = KindsSite()
    http, base = site.serve(KINDS_DELAY)
    yield site, base
    http.shutdown()
    http.server_close()


def test_a_killed_workers_requests_go_back_to_the_shared_queue(
    client, server, kinds_site, tmp_path
) -> None:
    """LeasingScheduler: the killed worker's leased requests are taken back by a live one
    once its lease ends (NEARDUP_LEASE_TIMEOUT), and what it had not acknowledged (its items
    not yet durable in its feed) is fetched again: every article is in the union of the
    feeds."""
    site, base = kinds_site
    settings = workers_settings(server.url, "lease", "leases")
    urls, stats = kill_one_of_three(base, tmp_path, settings, KILL_AT)
    expected = site.article_urls(base)
    print(f"\nLeasingScheduler: {len(expected & urls)}/{len(expected)} pages in the feeds")
    assert not expected - urls, sorted(expected - urls)[:10]
    assert sum(s.get("neardup/leases/reclaimed", 0) for s in stats) > 0
    assert not any(s.get("neardup/leases/released") for s in stats)  # all acknowledged
    assert client.zcard("lease:requests") == client.hlen("lease:requests:leased") == 0


def test_scrapy_redis_alone_loses_a_killed_workers_requests(
    client, server, kinds_site, tmp_path
) -> None:
    """The same kill with scrapy-redis's own scheduler and dupefilter, no plugin: the
    requests the killed worker had popped are gone (the figure the benchmark reports)."""
    site, base = kinds_site
    settings = workers_settings(server.url, "alone", "scrapy-redis")
    urls, _ = kill_one_of_three(base, tmp_path, settings, KILL_AT)
    expected = site.article_urls(base)
    print(f"\nscrapy-redis alone: {len(expected & urls)}/{len(expected)} pages in the feeds")
    assert expected - urls  # lost: what the killed worker had popped or not yet written


def test_two_leasing_workers_keep_each_document_once(client, server, site, site_url, tmp_path):
    """bench/bench_scaleout.py's check, N = 2: two workers on one LeasingScheduler queue
    crawl the demo site and its near copies, with its default lease; no URL fetched or in an
    item twice, every distinct document kept once (beside the near copies the default
    decision keeps), every drop a copy of its own document, no live worker's lease taken."""
    from bench.bench_scaleout import check_demo, crawl, shared_settings

    settings = shared_settings(server.url, "two", "leases", 2)
    done = crawl(site_url, tmp_path / "run", settings, 2, None)
    assert check_demo(site, done) == []
    assert len(done.kept) == len(site.expected_unique_docs()) + len(site.near_copies())


def test_a_leasing_worker_ends_once_its_last_request_is_done(server, site_url, tmp_path):
    """A LeasingScheduler worker alone on its queue ends once its last request is done: its
    idle check acknowledges its done requests first, rather than finding them leased until
    its next sync (every 20 s here) and the engine's next idle check."""
    from bench.bench_scaleout import crawl, shared_settings

    settings = {**shared_settings(server.url, "alone", "leases", 1), "NEARDUP_FLUSH_INTERVAL": 30}
    done = crawl(site_url, tmp_path / "run", settings, 1, None)
    assert done.problems() == []
    record = json.loads((tmp_path / "run" / "fetched0.json").read_text())
    assert record["tail_s"] < 10
