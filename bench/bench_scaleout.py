"""One crawl shared by N crawler processes in one Redis: pages/s against N, and a check.

    python bench/bench_scaleout.py [--rounds 3] [--quick] [--scheduler leases] [--processes 1,2,4]
                                   [--articles 600]

Starts its own ``redis-server`` on a free loopback port (tests/redis_server.py) and serves
on loopback tests/kinds_site.py (600 article pages, ``--articles`` sets how many, each
answered after 0.05 s, so that a crawl is not only CPU-bound) and the example project's demo
site (near copies, and the ground truth of what is a copy of what). For N = 1, 2, 3
processes (1, 2 with ``--quick``; ``--processes`` chooses others), each round, on an emptied
database:

* timed: N workers (tests/scrapy_redis_runner.py's ``start_workers``: a ``scrapy.Spider``
  following every link, ``CONCURRENT_REQUESTS = 4``, a JSON-lines feed each; for N > 1,
  ``NEARDUP_WORKERS`` as the README says for several processes on one machine: the cores
  over N, less one, at most 4) crawl the kinds site from one shared queue, the plugin on
  with ``NEARDUP_STORAGE = "redis"`` under one prefix. Pages/s: the pages in the union of
  the feeds over the seconds from the first start to the last end; responses/s crawling:
  every response over the seconds from the first response of any worker to the last of
  any. Checked: every page fetched, and once over all workers (but the start URL, once in
  each: Scrapy's start requests skip the filter), every article kept, none dropped (no two
  are near copies);
* untimed: N workers crawl the demo site the same way. Checked: no URL fetched twice, every
  distinct document kept once (beside each near copy the default decision keeps), every
  drop a copy of its own document.

Both: no URL in two items (kept or dropped), each response in the fetch logs, no live
worker's lease taken. The scheduler is ``scrapy_neardup.leases.LeasingScheduler`` with its
default lease (``--scheduler scrapy-redis+plugin``: scrapy-redis's own, with the plugin's
dupefilter). Printed: each crawl, then per N the medians of the rounds, the ratio to N = 1,
and the share of the workers' time spent on a core and waiting for one (``/proc``
schedstat): the machine's cores bound the crawl where the workers wait for them.
``--quick`` (used by ``bench/run``) means one round. Exits with 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests", ROOT / "example_project"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from crash_runner import feed_lines  # noqa: E402
from crawl_runner import assert_each_document_once  # noqa: E402
from demo_site import build_site, serve  # noqa: E402
from kinds_site import KindsSite  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from scrapy_redis_runner import feed_urls, start_workers, workers_settings  # noqa: E402

from bench.common import print_table  # noqa: E402
from scrapy_neardup.storage import redis_client  # noqa: E402
from scrapy_neardup.urls import canonical_url  # noqa: E402

DELAY = 0.05
TIMEOUT = 600
KINDS_SPIDER = "tests.kinds_spiders.KindFollow"
DEMO_SPIDER = None  # start_workers: the demo site's own spider


def load() -> str:
    """The machine's load averages, as ``uptime`` says them."""
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def sched_seconds(pid: int) -> tuple[float, float]:
    """Seconds process ``pid``'s threads have run so far, and waited for a core while
    runnable (``/proc/<pid>/task/*/schedstat``); (0, 0) once it is gone."""
    ran = waited = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            fields = path.read_text().split()
        except OSError:  # the thread or the process ended meanwhile
            continue
        ran, waited = ran + int(fields[0]), waited + int(fields[1])
    return ran / 1e9, waited / 1e9


@dataclass
class Crawl:
    """What ``n`` workers sharing one queue did (:func:`crawl`)."""

    start_url: str
    seconds: float  # from the first start to the last end
    ran: float  # seconds the workers' threads ran on a core, summed
    waited: float  # seconds they waited for a core while runnable, summed
    runs: list[list[dict[str, Any]]]  # each worker's items' fates, then its stats
    fetched: list[str]  # the URL of every response, over all workers
    crawling: float  # seconds from the first response of any worker to the last of any

    @property
    def crawl_rate(self) -> float:
        """Responses a second while the workers crawl: their start-up and the idle wait
        before each one closes left out."""
        return len(self.fetched) / self.crawling if self.crawling > 0 else 0.0

    @property
    def busy(self) -> int:
        """How many workers fetched a page (one may find the queue empty at its start)."""
        return sum(1 for r in self.runs if r[-1]["stats"].get("downloader/response_count"))

    @property
    def kept(self) -> list[dict[str, Any]]:
        """The items kept, over all workers."""
        return [r["kept"] for records in self.runs for r in records if "kept" in r]

    @property
    def dropped(self) -> list[dict[str, Any]]:
        """The items dropped, over all workers, each with its ``reason``."""
        return [
            {**r["dropped"], "reason": r["reason"]}
            for records in self.runs
            for r in records
            if "dropped" in r
        ]

    def problems(self) -> list[str]:
        """What is wrong, whatever the site: a URL fetched twice (but the start URL, which a
        ``start_urls`` spider fetches once in each worker: Scrapy's start requests skip the
        filter), a response not logged, a URL in two items (kept or dropped)."""
        problems = []
        fetched = Counter(canonical_url(url) for url in self.fetched)
        start = canonical_url(self.start_url)
        twice = sorted(
            url for url, k in fetched.items() if k > (len(self.runs) if url == start else 1)
        )
        if twice:
            problems.append(f"{len(twice)} URLs fetched twice: {twice[:3]}")
        responses = sum(
            records[-1]["stats"].get("downloader/response_count", 0) for records in self.runs
        )
        if responses != len(self.fetched):
            problems.append(f"{responses} responses, {len(self.fetched)} logged")
        items = Counter(canonical_url(item["url"]) for item in self.kept + self.dropped)
        twice = sorted(url for url, k in items.items() if k > 1)
        if twice:
            problems.append(f"{len(twice)} URLs in two items: {twice[:3]}")
        reclaimed = sum(r[-1]["stats"].get("neardup/leases/reclaimed", 0) for r in self.runs)
        if reclaimed:  # no worker dies here: a lease ended while its worker's reactor stalled
            problems.append(f"{reclaimed} requests of a live worker reclaimed")
        return problems


def crawl(start_url: str, run: Path, settings: dict, n: int, spider: str | None) -> Crawl:
    """``n`` workers crawl from ``start_url`` into ``run``; a worker that fails, or a crawl
    not done in ``TIMEOUT`` seconds, raises."""
    run.mkdir(parents=True)
    start = time.monotonic()
    procs = start_workers(start_url, run, settings, n, spider=spider)
    last = {proc.pid: (0.0, 0.0) for proc in procs}
    while any(proc.poll() is None for proc in procs):  # sampled until each one ends
        for proc in procs:
            last[proc.pid] = max(last[proc.pid], sched_seconds(proc.pid))
        if time.monotonic() - start > TIMEOUT:
            for proc in procs:
                proc.kill()
        time.sleep(0.1)
    seconds = time.monotonic() - start
    if any(proc.returncode for proc in procs):
        raise RuntimeError((run / "stderr.log").read_text()[-3000:])
    logs = [json.loads((run / f"fetched{k}.json").read_text()) for k in range(n)]
    times = [log[key] for log in logs for key in ("first_at", "last_at") if key in log]
    return Crawl(
        start_url,
        seconds,
        sum(ran for ran, _ in last.values()),
        sum(waited for _, waited in last.values()),
        [feed_lines(run / f"fates{k}.jsonl") for k in range(n)],
        [url for log in logs for url in log["fetched"]],
        max(times) - min(times) if times else 0.0,
    )


def check_kinds(site: KindsSite, base: str, done: Crawl) -> list[str]:
    """What is wrong with a shared crawl of the kinds site: also a page not fetched, an
    article not kept, or one dropped (no two are near copies)."""
    problems = done.problems()
    articles = site.article_urls(base)
    pages = {
        canonical_url(base + path) for path in ["/", *(f"/list/{k}" for k in range(site.lists))]
    }
    pages |= {canonical_url(url) for url in articles}
    missed = pages - {canonical_url(url) for url in done.fetched}
    if missed:
        problems.append(f"{len(missed)} pages not fetched: {sorted(missed)[:3]}")
    missed = articles - {item["url"] for item in done.kept}
    if missed:
        problems.append(f"{len(missed)} articles not kept: {sorted(missed)[:3]}")
    dropped = [item["url"] for item in done.dropped]
    if dropped:
        problems.append(f"{len(dropped)} articles dropped (none is a copy): {dropped[:3]}")
    return problems


def check_demo(site: Any, done: Crawl) -> list[str]:
    """What is wrong with a shared crawl of the demo site: also what its ground truth says
    (tests/crawl_runner.py's ``assert_each_document_once``: every distinct document kept
    once, beside its near copies the default decision keeps; each drop a copy of its own
    document)."""
    problems = done.problems()
    try:
        assert_each_document_once(site, [{"kept": done.kept, "dropped": done.dropped}])
    except AssertionError as exc:
        problems.append(f"documents: {exc or 'a document kept twice or a wrong drop'}")
    return problems


class Sites:
    """The kinds site (0.05 s a page, ``articles`` articles) and the demo site, served on
    loopback while open."""

    def __init__(self, articles: int) -> None:
        self.articles = articles

    def __enter__(self) -> Sites:
        self.kinds = KindsSite(articles=self.articles)
        self.kinds_http, self.kinds_url = self.kinds.serve(DELAY)
        self.demo = build_site()
        self.demo_http, port = serve("127.0.0.1", 0, self.demo)
        self.demo_url = f"http://127.0.0.1:{port}/"
        return self

    def __exit__(self, *exc: object) -> None:
        for http in (self.kinds_http, self.demo_http):
            http.shutdown()
            http.server_close()


def shared_settings(redis_url: str, prefix: str, scheduler: str, n: int) -> dict[str, Any]:
    """tests/scrapy_redis_runner.py's ``workers_settings`` with the default lease (60 s):
    with its 2 s, meant for the kill tests, a renewal 2 s late (seen on a loaded 2-core
    machine) ends a live worker's lease, and its requests are fetched twice. With ``n``
    processes, each gets :func:`extraction_workers`."""
    settings = {**workers_settings(redis_url, prefix, scheduler), "NEARDUP_LEASE_TIMEOUT": 60}
    if n > 1:
        settings["NEARDUP_WORKERS"] = extraction_workers(n)
    return settings


def extraction_workers(n: int) -> int:
    """``NEARDUP_WORKERS`` for each of ``n`` crawler processes on this machine, as the README
    says to set it: processes started together each find every core idle, and by default
    would each start up to 4 workers; so each gets its share of the cores less one for its
    own crawler thread, at least one, at most the default's 4."""
    return max(1, min(4, len(os.sched_getaffinity(0)) // n - 1))


def shared_crawls(
    sites: Sites, redis_url: str, run: Path, n: int, scheduler: str
) -> tuple[Crawl, int, list[str]]:
    """One round for ``n`` workers (the database emptied first): the timed crawl of the
    kinds site, then the demo site's. Returns the first, the pages in the union of its
    feeds, and what the checks of both found wrong."""
    client = redis_client.connect(redis_url)
    client.flushdb()
    client.close()
    settings = shared_settings(redis_url, "kinds", scheduler, n)
    kinds = crawl(sites.kinds_url, run / "kinds", settings, n, KINDS_SPIDER)
    problems = check_kinds(sites.kinds, sites.kinds_url, kinds)
    settings = shared_settings(redis_url, "demo", scheduler, n)
    demo = crawl(sites.demo_url, run / "demo", settings, n, DEMO_SPIDER)
    problems += [f"demo site: {p}" for p in check_demo(sites.demo, demo)]
    return kinds, len(set(feed_urls(run / "kinds", n))), problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round, N = 1 and 2")
    parser.add_argument("--scheduler", choices=["leases", "scrapy-redis+plugin"], default="leases")
    parser.add_argument(
        "--processes", help="the numbers of processes, comma-separated (1,2,3; --quick 1,2)"
    )
    parser.add_argument("--articles", type=int, default=600, help="the kinds site's articles (600)")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    counts = (1, 2) if args.quick else (1, 2, 3)
    if args.processes:
        counts = tuple(int(n) for n in args.processes.split(","))
        if 1 not in counts:
            parser.error("--processes must include 1: the ratios are to one process")
    cores = len(os.sched_getaffinity(0))
    print(f"cores: {cores} of {os.cpu_count()} (sched_getaffinity); {load()} at the start")
    in_flight = shared_settings("", "", args.scheduler, 1)["CONCURRENT_REQUESTS"]
    print(
        f"scheduler: {args.scheduler}; a worker gets at most {in_flight / DELAY:.0f} pages/s "
        f"from the site ({in_flight} requests in flight, {DELAY} s each)"
    )
    shares = ", ".join(f"N={n}: {extraction_workers(n)}" for n in counts if n > 1)
    print(f"NEARDUP_WORKERS: the default for N=1; {shares or 'none'}", flush=True)
    print(flush=True)
    figures: dict[int, list[tuple[float, float, float, float, float]]] = {n: [] for n in counts}
    failed: list[str] = []
    with (
        Sites(args.articles) as sites,
        tempfile.TemporaryDirectory() as tmp,
        RedisServer(Path(tmp) / "redis") as server,
    ):
        for r in range(rounds):
            for n in counts:  # interleaved: the machine's other load falls on every N alike
                done, pages, problems = shared_crawls(
                    sites, server.url, Path(tmp) / f"{n}-{r}", n, args.scheduler
                )
                lives = n * done.seconds
                figures[n].append(
                    (
                        done.seconds,
                        pages / done.seconds,
                        done.crawl_rate,
                        done.ran / lives,
                        done.waited / lives,
                    )
                )
                failed += [f"N={n} round {r + 1}: {p}" for p in problems]
                print(
                    f"round {r + 1} N={n}: {pages} pages in the feeds, {done.seconds:.1f} s, "
                    f"{pages / done.seconds:.1f} pages/s; {len(done.fetched)} responses in "
                    f"{done.crawling:.1f} s of crawling, {done.crawl_rate:.1f}/s; "
                    f"{done.busy} of {n} workers fetched; "
                    f"on a core {done.ran:.1f} s, waiting for one {done.waited:.1f} s; "
                    f"check: {'; '.join(problems) or 'ok'}",
                    flush=True,
                )
    one = statistics.median(f[1] for f in figures[1])
    one_crawling = statistics.median(f[2] for f in figures[1])
    rows = []
    for n in counts:
        seconds, rate, crawl_rate, ran, waited = (
            statistics.median(column) for column in zip(*figures[n], strict=True)
        )
        rows.append(
            [
                n,
                f"{seconds:.1f}",
                f"{rate:.1f}",
                f"{rate / one:.2f}x",
                f"{crawl_rate:.1f}",
                f"{crawl_rate / one_crawling:.2f}x",
                f"{ran:.0%}",
                f"{waited:.0%}",
                f"{max(1 - ran - waited, 0):.0%}",  # threads overlap: can sum over 100 %
            ]
        )
    print()
    print_table(
        [
            "processes",
            "seconds",
            "pages/s",
            "vs N=1",
            "responses/s crawling",
            "vs N=1",
            "on a core",
            "waiting for one",
            "neither",
        ],
        rows,
        title=f"The kinds site's crawl shared in Redis, medians of {rounds} round(s):",
    )
    print(
        f"{load()} at the end. Pages/s: the pages in the feeds over the seconds from the first\n"
        "start to the last end; responses/s crawling: every response over the seconds from the\n"
        "first response of any worker to the last of any (start-up and the idle wait before a\n"
        "worker closes left out: what a long crawl gets). A worker's time from the first start\n"
        "to the last end: on a core, waiting for one while runnable (the cores and whatever\n"
        "else runs on them bound the crawl), or neither (waiting for the site or Redis, or not\n"
        "running yet or any more)."
    )
    if failed:
        print("check FAILED:\n  " + "\n  ".join(failed), file=sys.stderr)
        sys.exit(1)
    print("check: ok (no URL fetched or in an item twice, every document kept once, no wrong drop)")


if __name__ == "__main__":
    main()
