"""The add-on against what a Scrapy user writes without it, crawling a real site on loopback.

    python bench/bench_handwritten.py [--quick] [--rounds N] [--site DIR] [--mode NAME ...]

The site is Debian's ``sqlite3-doc`` (``/usr/share/doc/sqlite3``, else the copy
``evaluation/evaluate_sites.py`` extracts into ``~/.cache/scrapy-neardup/sites/sqlite``; the
benchmark is skipped, saying so, where neither exists), every file served on 127.0.0.1. Each
configuration is a ``CrawlSpider`` following every link of the site (``LinkExtractor``,
``CONCURRENT_REQUESTS = 16``), crawled in a process of its own:

* ``plain``: no extraction; the callback yields ``{"url"}`` (the crawl's own ceiling);
* ``hand-written``: ``trafilatura.extract(response.text)`` (its defaults) in the callback,
  yielding ``{"url", "text"}``, and an item pipeline keeping datasketch's
  ``MinHashLSH(threshold=0.8, num_perm=128)`` over word 3-shingles of the text, raising
  ``DropItem`` when ``query`` finds a candidate, else inserting;
* ``add-on``: ``ADDONS = {"scrapy_neardup.Addon": 500}`` on its defaults, the callback
  yielding ``{"url"}`` (all an item needs: the add-on extracts the page's text itself);
* ``add-on, 0 workers``: the same with ``NEARDUP_WORKERS = 0`` (extraction in the crawler);
* ``add-on, fast``: the same with ``NEARDUP_EXTRACT_FAST = True`` (trafilatura's fast mode,
  without its comparison with readability and jusText);
* ``plain, JOBDIR`` and ``add-on, JOBDIR``: ``plain`` and ``add-on`` with a ``JOBDIR``
  (Scrapy's disk queues, the add-on's frontier journal and saved state).

Rounds alternate the configurations (3 rounds, ``--quick`` 1) and medians are printed. For
each: pages/s (responses over the crawl process's life, start-up included), the process
tree's CPU seconds (the crawl and every process it started, from ``wait4``), the tree's
peak PSS (``/proc/PID/smaps_rollup`` summed over the tree, sampled every 0.1 s: pages that
forked workers share count once), and the wall time against the CPU limit (tree CPU /
cores: 1.0 means every core was busy all along). A shared machine moves wall times, so
each crawl also has the CPU other processes used meanwhile (``/proc/stat``), the share of
what they left free that the crawl used, and its CPU ceiling: the pages/s its CPU allows on
cores of its own (tree CPU / cores, or the crawler process's own CPU if longer; a bound, not
a measurement). Then the add-on / hand-written ratios;
whether the add-on with workers dropped the same pages as without (each add-on crawl is
replayed with ``NEARDUP_WORKERS = 0``, its pages fetched one at a time in the order its
pipeline met them: which copy of a group is kept follows that order); and, from the add-on's
own stats, where its time went: the crawler process's CPU per page, the workers' busy and
idle time, and how long items waited for their text. Last, the crawler process's CPU (all
its threads, from the spider's opening to the process's end, so the add-on's closing counts)
per response, plain Scrapy's and the add-on's side by side, without and with ``JOBDIR``, and
their ratio. ``--profile`` adds, per response, where the crawler's main thread spent it
(``cProfile``, by module; one more crawl of each, whose times the profiler inflates).
``--pages N`` stops each crawl after N responses (``CLOSESPIDER_PAGECOUNT``): a smoke test.
``--mode NAME`` (repeated) crawls only the configurations named; the figures that need one
left out are not printed, and the replay runs only with ``add-on, 0 workers``.

Targets (on 2 cores): add-on >= 1.8x the hand-written pipeline's pages/s; its wall within
1.2x of its CPU limit; its tree's PSS <= 1.3x the hand-written pipeline's. On any machine:
the crawler process's CPU per response <= 1.1x plain Scrapy's, without and with ``JOBDIR``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import mimetypes
import os
import posixpath
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import HTML, print_table, serve_pages  # noqa: E402

SITE_DIRS = (
    Path("/usr/share/doc/sqlite3"),
    Path.home() / ".cache/scrapy-neardup/sites/sqlite/usr/share/doc/sqlite3",
)
CONFIGS = (
    "plain",
    "hand-written",
    "add-on",
    "add-on, 0 workers",
    "add-on, fast",
    "plain, JOBDIR",
    "add-on, JOBDIR",
)
#: Each pair compared by the crawler process's CPU per response.
PAIRS = (("plain", "add-on"), ("plain, JOBDIR", "add-on, JOBDIR"))
#: Profiled main-thread groups shown (the largest by the add-on's time).
PROFILE_ROWS = 16
SAMPLE_EVERY = 0.1

CRAWLER = r'''
import json, os, resource, sys, time
T0 = time.perf_counter()
import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import DropItem
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

args = json.loads(sys.argv[1])
MODE = args["mode"]


class SiteSpider(CrawlSpider):
    name = "site"
    allowed_domains = ["127.0.0.1"]
    start_urls = [args["start"]]
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def parse_item(self, response):
        if MODE == "hand-written":
            import trafilatura
            yield {"url": response.url, "text": trafilatura.extract(response.text)}
        else:
            yield {"url": response.url}


class ReplaySpider(scrapy.Spider):
    """Fetches the given URLs one at a time, the next once the last item was decided: the
    pipeline meets the pages in exactly the given order."""

    name = "replay"
    custom_settings = {"CONCURRENT_REQUESTS": 1}

    async def start(self):
        self.todo = list(reversed(args["replay"]))
        self.crawler.signals.connect(self.next_page, signal=signals.item_scraped)
        self.crawler.signals.connect(self.next_page, signal=signals.item_dropped)
        yield self.request()

    def request(self):
        return scrapy.Request(
            self.todo.pop(), self.parse, errback=self.failed, dont_filter=True
        )

    def next_page(self, *args, **kwargs):
        if self.todo:
            self.crawler.engine.crawl(self.request())

    def failed(self, failure):
        self.next_page()

    def parse(self, response):
        yield {"url": response.url}


class MinHashPipeline:
    """What a user writes: datasketch's LSH over word 3-shingles; a candidate drops."""

    def open_spider(self, spider=None):
        from datasketch import MinHashLSH
        self.lsh = MinHashLSH(threshold=0.8, num_perm=128)

    def process_item(self, item, spider=None):
        from datasketch import MinHash
        words = (item.get("text") or "").split()
        shingles = {" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))}
        m = MinHash(num_perm=128)
        m.update_batch(s.encode("utf-8") for s in shingles)
        if self.lsh.query(m):
            raise DropItem(f"near-duplicate: {item['url']}")
        self.lsh.insert(item["url"], m)
        return item


settings = {
    "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
    "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "CLOSESPIDER_PAGECOUNT": args["pages"],
}
if MODE.endswith("JOBDIR"):
    settings["JOBDIR"] = "job"
if MODE == "hand-written":
    settings["ITEM_PIPELINES"] = {"__main__.MinHashPipeline": 300}
elif MODE.startswith("add-on"):
    settings["ADDONS"] = {"scrapy_neardup.Addon": 500}
    if MODE == "add-on, 0 workers":
        settings["NEARDUP_WORKERS"] = 0
    if MODE == "add-on, fast":
        settings["NEARDUP_EXTRACT_FAST"] = True
process = CrawlerProcess(settings=settings)
crawler = process.create_crawler(ReplaySpider if "replay" in args else SiteSpider)
dropped = []
decided = []
t = {}
def on_dropped(item, exception, **kwargs):
    dropped.append([item["url"], str(exception)])
    decided.append(item["url"])
def on_scraped(item, **kwargs):
    decided.append(item["url"])
profiler = None
if args["profile"]:
    import cProfile
    profiler = cProfile.Profile(time.thread_time)  # CPU time: waits in epoll do not count
def on_opened(**kwargs):
    t["opened"] = time.perf_counter()
    t["cpu_opened"] = time.process_time()  # every thread of this process, not its children
    t["main_opened"] = time.thread_time()  # the reactor's thread, which sends the signals
    if profiler is not None:
        profiler.enable()
def on_closed(**kwargs):
    t["closed"] = time.perf_counter()
crawler.signals.connect(on_dropped, signal=signals.item_dropped)
crawler.signals.connect(on_scraped, signal=signals.item_scraped)
crawler.signals.connect(on_opened, signal=signals.spider_opened)
crawler.signals.connect(on_closed, signal=signals.spider_closed)
process.crawl(crawler)
process.start()
stats = crawler.stats.get_stats()
crawl_cpu = time.process_time() - t["cpu_opened"]
main_cpu = time.thread_time() - t["main_opened"]
profile = {}
if profiler is not None:
    import pstats
    profiler.disable()
    for (path, _, name), (_, _, own, _, _) in pstats.Stats(profiler).stats.items():
        parts = path.split(os.sep)
        if "scrapy_neardup" in parts:
            group = "/".join(parts[parts.index("scrapy_neardup"):])
        elif "site-packages" in parts:
            group = parts[parts.index("site-packages") + 1]
        else:  # a C function, or the standard library's module
            group = name.split(" at 0x")[0] if path == "~" else "stdlib " + parts[-1]
        profile[group] = profile.get(group, 0.0) + own
usage = resource.getrusage(resource.RUSAGE_SELF)
with open(args["out"], "w") as out:
    json.dump({
        "own_cpu_s": usage.ru_utime + usage.ru_stime,
        "crawl_s": t["closed"] - t["opened"],
        "startup_s": t["opened"] - T0,
        "crawl_cpu_s": crawl_cpu,
        "main_thread_cpu_s": main_cpu,
        "profile": profile,
        "pages": stats.get("response_received_count", 0),
        "items": stats.get("item_scraped_count", 0) + stats.get("item_dropped_count", 0),
        "dropped": sorted(url for url, _ in dropped),
        "drops": dropped,
        "decided": decided,
        "neardup": {k: v for k, v in stats.items() if k.startswith("neardup/")},
    }, out)
'''


def find_site(given: str | None) -> Path | None:
    """The directory of the site's files, or None."""
    for path in [Path(given)] if given else SITE_DIRS:
        if (path / "index.html").is_file():
            return path
    return None


def serve_tree(root: Path) -> ThreadingHTTPServer:
    """Every file under ``root`` on a free loopback port (``/`` is ``index.html``)."""
    real_root = root.resolve()

    def body_of(path: str) -> tuple[bytes, str] | None:
        rel = posixpath.normpath(unquote(urlsplit(path).path)).lstrip("/")
        file = root / (rel or "index.html")
        if file.is_dir():
            file = file / "index.html"
        if not (file.is_file() and file.resolve().is_relative_to(real_root)):
            return None
        kind = mimetypes.guess_type(file.name)[0] or "text/html"
        return file.read_bytes(), HTML if kind == "text/html" else kind

    return serve_pages(body_of)


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process under it (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, ()))
    return found


def pss_bytes(pid: int) -> int:
    """Proportional set size of ``pid`` (``/proc/PID/smaps_rollup``); 0 if gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def loadavg() -> float:
    return os.getloadavg()[0]


def machine_busy_s() -> float:
    """CPU seconds every process on the machine has used since boot (``/proc/stat``)."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def crawl(
    mode: str,
    start: str,
    replay: list[str] | None = None,
    pages: int = 0,
    profile: bool = False,
) -> dict[str, Any]:
    """One crawl in its own process: what it reports, with its tree's CPU and peak PSS.
    With ``replay``, those URLs are fetched one at a time in that order, not crawled;
    ``pages``: stop after that many responses (0: none); ``profile``: its main thread's
    time by module."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "out.json")
        script = Path(tmp, "crawl.py")
        script.write_text(CRAWLER)
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        given = {"mode": mode, "start": start, "out": str(out), "pages": pages}
        given["profile"] = profile
        if replay is not None:
            given["replay"] = replay
        arg = json.dumps(given)
        load = loadavg()
        busy_before = machine_busy_s()
        began = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, str(script), arg], cwd=tmp, env=env, stderr=subprocess.PIPE
        )
        peak = [0, 0]  # the tree's, the crawler process's own
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(SAMPLE_EVERY):
                peak[0] = max(peak[0], sum(pss_bytes(p) for p in descendants(proc.pid)))
                peak[1] = max(peak[1], pss_bytes(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        stderr = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        others = machine_busy_s() - busy_before
        proc.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        sampler.join()
        if proc.returncode or not out.exists():
            raise RuntimeError(f"{mode} crawl failed:\n{stderr.decode()[-3000:]}")
        result = json.loads(out.read_text())
    result.update(
        wall_s=wall,
        tree_cpu_s=usage.ru_utime + usage.ru_stime,
        peak_pss=peak[0],
        peak_pss_crawler=peak[1],
        load_before=load,
    )
    # What other processes (other jobs, this benchmark's server) used meanwhile: the cores
    # left to the crawl were cores x wall minus that.
    result["others_cpu_s"] = max(others - result["tree_cpu_s"], 0.0)
    result["pages_per_s"] = result["pages"] / wall
    return result


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def run(
    quick: bool = False,
    rounds: int | None = None,
    site: str | None = None,
    save: str = "",
    pages: int = 0,
    profile: bool = False,
    modes: tuple[str, ...] = CONFIGS,
) -> int:
    root = find_site(site)
    if root is None:
        print(
            "bench_handwritten: the sqlite3-doc site is not here (/usr/share/doc/sqlite3); "
            "skipped. Install it with `apt-get install sqlite3-doc`, or run "
            "evaluation/evaluate_sites.py --sites sqlite once to extract it into ~/.cache."
        )
        return 0
    rounds = rounds or (1 if quick else 3)
    cores = len(os.sched_getaffinity(0))
    server = serve_tree(root)
    start = f"http://127.0.0.1:{server.server_address[1]}/"
    results: dict[str, list[dict]] = {mode: [] for mode in modes}
    try:
        for number in range(rounds):
            for mode in modes:
                r = crawl(mode, start, pages=pages)
                results[mode].append(r)
                print(
                    f"round {number + 1} {mode:<18} {r['pages_per_s']:6.1f} pages/s "
                    f"{r['wall_s']:5.1f} s wall {r['tree_cpu_s']:5.1f} s CPU "
                    f"{r['peak_pss'] / 2**20:5.0f} MiB PSS, the crawler's "
                    f"{r['peak_pss_crawler'] / 2**20:.0f} (load before {r['load_before']:.2f})",
                    flush=True,
                )
        # Which copy of a group is kept, and so what is dropped, follows the order the
        # pipeline meets the pages, which 16 requests at a time and the workers make vary:
        # each add-on crawl is replayed in its own order with NEARDUP_WORKERS = 0.
        replays = results["add-on"] if {"add-on", "add-on, 0 workers"} <= set(modes) else []
        for number, r in enumerate(replays, 1):
            replayed = crawl("add-on, 0 workers", start, replay=r["decided"])
            results.setdefault("replayed", []).append(replayed)
            print(f"round {number} replayed without workers: {len(replayed['dropped'])} dropped")
        profiled = {
            mode: crawl(mode, start, pages=pages, profile=True) for mode in PAIRS[0] if profile
        }
    finally:
        server.shutdown()
        server.server_close()
    if save:
        Path(save).write_text(json.dumps({"cores": cores, "rounds": rounds, "results": results}))
    report(results, cores, rounds, root)
    report_crawler_cpu(results)
    if profile:
        report_profile(profiled)
    return 0


def ceiling(run: dict, cores: int) -> float:
    """Pages/s the crawl's CPU allows on cores nothing else uses: its tree's CPU spread over
    the cores, or its crawler process's own CPU (which one core runs), whichever is longer.
    A bound from CPU time, not a measurement of wall time."""
    return run["pages"] / max(run["tree_cpu_s"] / cores, run["own_cpu_s"])


def busy_share(run: dict, cores: int) -> float:
    """The share of the CPU left free by other processes that the crawl's tree used."""
    free = cores * run["wall_s"] - run["others_cpu_s"]
    return run["tree_cpu_s"] / free if free > 0 else 1.0


def report(results: dict[str, list[dict]], cores: int, rounds: int, root: Path) -> None:
    rows = []
    modes = [mode for mode in CONFIGS if mode in results]
    for mode in modes:
        runs = results[mode]
        wall, cpu = median(runs, "wall_s"), median(runs, "tree_cpu_s")
        limit = statistics.median(r["tree_cpu_s"] / cores for r in runs)
        rows.append(
            [
                mode,
                f"{median(runs, 'pages'):.0f}",
                f"{median(runs, 'pages_per_s'):.1f}",
                f"{wall:.1f}",
                f"{cpu:.1f}",
                f"{limit:.1f}",
                f"{statistics.median(r['wall_s'] / (r['tree_cpu_s'] / cores) for r in runs):.2f}",
                f"{median(runs, 'others_cpu_s'):.1f}",
                f"{statistics.median(ceiling(r, cores) for r in runs):.1f}",
                f"{statistics.median(busy_share(r, cores) for r in runs):.2f}",
                f"{median(runs, 'peak_pss') / 2**20:.0f}",
                f"{median(runs, 'peak_pss_crawler') / 2**20:.0f}",
                f"{statistics.median(len(r['dropped']) for r in runs):.0f}",
            ]
        )
    loads = [r["load_before"] for mode in modes for r in results[mode]]
    print()
    print_table(
        [
            "configuration",
            "pages",
            "pages/s",
            "wall s",
            "tree CPU s",
            "CPU limit s",
            "wall/limit",
            "others' CPU s",
            "CPU ceiling pages/s",
            "used/free",
            "peak PSS MiB",
            "crawler's PSS MiB",
            "dropped",
        ],
        rows,
        f"{root} crawled on loopback, {cores} cores, median of {rounds} round(s) "
        f"(1-min load before each crawl: {min(loads):.2f}-{max(loads):.2f})",
    )
    if "hand-written" in results:
        report_against_hand(results, cores)
    # Which copy of a group is kept first, and so what a "contained" decision drops, follows
    # the crawl order, which 16 requests at a time make vary: the rounds of one
    # configuration show how much.
    for name in ("add-on", "add-on, 0 workers"):
        runs = results.get(name, [])
        if len(runs) > 1:
            differ = [
                len(set(a["dropped"]) ^ set(b["dropped"])) for a, b in itertools.pairwise(runs)
            ]
            print(f"{name}: dropped URLs that differ from one round to the next: {differ}")
    replayed = results.get("replayed", [])
    for number, (a, z) in enumerate(
        zip(results.get("add-on", [])[: len(replayed)], replayed, strict=True), 1
    ):
        only_a = sorted(set(a["dropped"]) - set(z["dropped"]))
        only_z = sorted(set(z["dropped"]) - set(a["dropped"]))
        if not (only_a or only_z) and len(z["decided"]) == len(a["decided"]):
            print(
                f"round {number}: same drops with and without workers, in the same order: "
                f"{len(a['dropped'])} of {len(a['decided'])} items"
            )
        else:
            print(
                f"round {number}: DROPS DIFFER with and without workers in the same order: "
                f"{len(only_a)} only with workers, {len(only_z)} only without "
                f"({len(a['decided'])} / {len(z['decided'])} items), e.g. "
                f"{(only_a + only_z)[:3]}"
            )
    print()
    for mode in ("add-on", "add-on, 0 workers", "add-on, JOBDIR"):
        if mode not in results:
            continue
        runs = results[mode]
        stats = [r["neardup"] for r in runs]

        def stat(name: str, runs: list[dict] = runs, stats: list[dict] = stats) -> float:
            return statistics.median(s.get(name, 0) for s in stats)

        own = statistics.median(r["own_cpu_s"] / r["pages"] * 1000 for r in runs)
        items = statistics.median(r["items"] for r in runs)
        print(
            f"{mode}: crawler process's own CPU {own:.1f} ms a page "
            f"({median(runs, 'own_cpu_s'):.1f} s of {median(runs, 'tree_cpu_s'):.1f} s); "
            f"start-up {median(runs, 'startup_s'):.1f} s, crawl {median(runs, 'crawl_s'):.1f} s"
        )
        if stat("neardup/extract/workers"):
            print(
                f"  workers: {stat('neardup/extract/workers'):.0f}; busy "
                f"{stat('neardup/extract/busy_s'):.1f} s, idle "
                f"{stat('neardup/extract/idle_s'):.1f} s (worker-seconds, from the first "
                f"task to the last result)"
            )
        wait = stat("neardup/extract/wait_s")
        print(
            f"  items waited {wait:.1f} s in all for their text, "
            f"{wait / max(items, 1) * 1000:.0f} ms an item ({items:.0f} items); "
            f"extraction {stat('neardup/extract/task_cpu_s'):.1f} s of CPU"
        )


def report_against_hand(results: dict[str, list[dict]], cores: int) -> None:
    """The add-on's configurations against the hand-written pipeline: pages/s and PSS."""
    hand = results["hand-written"]
    if "add-on" in results:
        addon = results["add-on"]
        speed = median(addon, "pages_per_s") / median(hand, "pages_per_s")
        memory = median(addon, "peak_pss") / median(hand, "peak_pss")
        wall_limit = statistics.median(r["wall_s"] / (r["tree_cpu_s"] / cores) for r in addon)
        print(
            f"add-on / hand-written: {speed:.2f}x pages/s (target >= 1.8), {memory:.2f}x PSS "
            f"(target <= 1.3); wall / CPU limit {wall_limit:.2f} (target <= 1.2)"
        )
    for mode in ("add-on, 0 workers", "add-on, fast"):
        if mode in results:
            speed = median(results[mode], "pages_per_s") / median(hand, "pages_per_s")
            memory = median(results[mode], "peak_pss") / median(hand, "peak_pss")
            print(f"{mode} / hand-written: {speed:.2f}x pages/s, {memory:.2f}x PSS")
    if "add-on" not in results:
        return
    addon = results["add-on"]
    # A shared machine's speed drifts between rounds: the ratio of two crawls of one round
    # (minutes apart) is steadier than the ratio of medians.
    per_round = [a["pages_per_s"] / h["pages_per_s"] for a, h in zip(addon, hand, strict=True)]
    print(
        "add-on / hand-written in each round: "
        + ", ".join(f"{ratio:.2f}x" for ratio in per_round)
        + f" (median {statistics.median(per_round):.2f}x)"
    )
    bound = statistics.median(ceiling(r, cores) for r in addon) / statistics.median(
        ceiling(r, cores) for r in hand
    )
    print(f"add-on / hand-written by their CPU ceilings (cores to themselves): {bound:.2f}x")


def per_response_ms(run: dict, key: str) -> float:
    return run[key] / max(run["pages"], 1) * 1000


def report_crawler_cpu(results: dict[str, list[dict]]) -> None:
    """The crawler process's CPU per response, plain Scrapy's and the add-on's side by side
    (medians, and the ratio in each round: crawls of one round met the same machine)."""
    rows = []
    for base, addon in PAIRS:
        if not (base in results and addon in results):
            continue
        for key, what in (("crawl_cpu_s", "all threads"), ("main_thread_cpu_s", "main thread")):
            plain_ms = [per_response_ms(r, key) for r in results[base]]
            addon_ms = [per_response_ms(r, key) for r in results[addon]]
            ratios = [a / p if p else float("inf") for a, p in zip(addon_ms, plain_ms, strict=True)]
            rows.append(
                [
                    f"{addon} / {base}, {what}",
                    f"{statistics.median(plain_ms):.2f}",
                    f"{statistics.median(addon_ms):.2f}",
                    f"{statistics.median(ratios):.2f}x",
                    ", ".join(f"{ratio:.2f}" for ratio in ratios),
                ]
            )
    print_table(
        ["crawler process CPU", "plain ms/resp", "add-on ms/resp", "ratio", "by round"],
        rows,
        "The crawler process's CPU per response, from the spider's opening to the process's "
        "end (target: ratio of all threads <= 1.1x)",
    )


def report_profile(profiled: dict[str, dict]) -> None:
    """The crawler's main thread per response, by module (``cProfile``'s own time), the
    modules where the add-on adds most first."""
    base, addon = (profiled[mode] for mode in PAIRS[0])

    def per_response(run: dict, group: str) -> float:
        return run["profile"].get(group, 0.0) / max(run["pages"], 1) * 1000

    groups = sorted(
        set(base["profile"]) | set(addon["profile"]),
        key=lambda group: per_response(base, group) - per_response(addon, group),
    )
    rows = [
        [
            group,
            f"{per_response(base, group):.3f}",
            f"{per_response(addon, group):.3f}",
            f"{per_response(addon, group) - per_response(base, group):+.3f}",
        ]
        for group in groups[:PROFILE_ROWS]
    ]
    totals = [sum(run["profile"].values()) / max(run["pages"], 1) * 1000 for run in (base, addon)]
    rows.append(
        ["all (profiled)", f"{totals[0]:.3f}", f"{totals[1]:.3f}", f"{totals[1] - totals[0]:+.3f}"]
    )
    print_table(
        ["main thread, by module", *(f"{mode} ms/resp" for mode in PAIRS[0]), "added"],
        rows,
        f"Where the add-on adds to the crawler's main thread per response (cProfile, one crawl "
        f"each: {base['pages']} and {addon['pages']} responses; the profiler inflates every time)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round")
    parser.add_argument("--rounds", type=int, help="rounds of all configurations (3)")
    parser.add_argument("--site", help="the site's directory (default: sqlite3-doc's)")
    parser.add_argument("--save", default="", help="write every crawl's figures to this JSON")
    parser.add_argument("--pages", type=int, default=0, help="stop each crawl after N responses")
    parser.add_argument("--profile", action="store_true", help="profile the crawler's main thread")
    parser.add_argument(
        "--mode", action="append", choices=CONFIGS, help="crawl only this configuration (repeat)"
    )
    args = parser.parse_args()
    modes = tuple(mode for mode in CONFIGS if mode in (args.mode or CONFIGS))
    run_args = (args.quick, args.rounds, args.site, args.save, args.pages, args.profile)
    sys.exit(run(*run_args, modes=modes))


if __name__ == "__main__":
    main()
