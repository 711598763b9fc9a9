"""Crawl throughput with the plugin on and off, against trafilatura alone, and reactor stalls.

    python bench/bench_crawl.py [--quick] [--copies N]

Real pages (``../shared/data``: the article-extraction benchmark and the Chinese news pages)
are served on loopback, each under ``--copies`` URLs whose bodies differ by one line (so the
byte-identical cache does not hide the extraction cost; the plugin must extract every one,
and drop all copies but the first of each article). Three figures, measured in this run:

* the plain spider without the plugin (the crawl's own ceiling),
* the same spider with ``ADDONS = {"scrapy_neardup.Addon": 500}``,
* trafilatura alone over the same bodies in a pool of one process per core (the ceiling
  extraction allows): ``trafilatura.extract(html)`` as its README shows it (the target's
  peer), and the plugin's own extraction (title and main text, no comments) for reference.

Targets: the crawl with the plugin reaches at least 95% of trafilatura alone, and the reactor
never stalls for more than 100 ms (a 5 ms LoopingCall measures the longest gap).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import serve_pages  # noqa: E402
from corpus.sources import article_html, chinese_pages, ground_truth, have_data  # noqa: E402


def load_pages() -> list[bytes]:
    pages = [article_html(key) for key in ground_truth()]
    pages += [path.read_bytes() for path in chinese_pages().values()]
    return pages


def variant(body: bytes, copy: int) -> bytes:
    """The page with one line that differs per copy, as a rotating ad or request id would."""
    marker = f"<div class='rid'>served copy {copy}</div>".encode()
    at = body.lower().rfind(b"</body>")
    return body[:at] + marker + body[at:] if at >= 0 else body + marker


class Site:
    def __init__(self, pages: list[bytes], copies: int) -> None:
        self.pages = pages
        self.copies = copies
        links = "".join(
            f'<a href="/p/{i}/{c}">{i}-{c}</a>\n' for c in range(copies) for i in range(len(pages))
        )
        self.index = f"<html><body>{links}</body></html>".encode()

    def body(self, path: str) -> bytes | None:
        if path == "/":
            return self.index
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "p":
            i, c = int(parts[1]), int(parts[2])
            if i < len(self.pages) and c < self.copies:
                return variant(self.pages[i], c)
        return None


CRAWLER = r'''
import json, sys, time
import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from twisted.internet import task

class StallMeter:
    """Longest gap between ticks of a 5 ms LoopingCall: how long the reactor was blocked."""
    def __init__(self, crawler):
        self.crawler, self.last, self.worst = crawler, None, 0.0
        crawler.signals.connect(self.start, signal=signals.spider_opened)
        crawler.signals.connect(self.stop, signal=signals.spider_closed)
    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)
    def tick(self):
        now = time.perf_counter()
        if self.last is not None:
            self.worst = max(self.worst, now - self.last)
        self.last = now
    def start(self):
        self.loop = task.LoopingCall(self.tick)
        self.loop.start(0.005)
    def stop(self):
        self.loop.stop()
        self.crawler.stats.set_value("bench/max_stall_ms", round(self.worst * 1000, 1))

class BenchSpider(scrapy.Spider):
    name = "bench"
    async def start(self):
        yield scrapy.Request(START)
    def parse(self, response):
        if response.url == START:
            yield from response.follow_all(css="a::attr(href)")
            return
        yield {"url": response.url}

args = json.loads(sys.argv[1])
START = args["start"]
settings = {"LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
            "EXTENSIONS": {"__main__.StallMeter": 0}, **args["settings"]}
process = CrawlerProcess(settings=settings)
crawler = process.create_crawler(BenchSpider)
t = {}
def received(response, **kwargs):
    if response.url != START:  # timing starts after the index page, as for extraction alone
        t.setdefault("start", time.perf_counter())
def idle():
    t["end"] = time.perf_counter()
def item_done(**kwargs):
    t.setdefault("first_item", time.perf_counter())
    t["items"] = t.get("items", 0) + 1
crawler.signals.connect(received, signal=signals.response_received)  # module level: weak refs
crawler.signals.connect(idle, signal=signals.spider_idle)
crawler.signals.connect(item_done, signal=signals.item_scraped)
crawler.signals.connect(item_done, signal=signals.item_dropped)
process.crawl(crawler)
process.start()
stats = crawler.stats.get_stats()
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({
    "crawler_cpu_s": usage.ru_utime + usage.ru_stime,
    "seconds": t["end"] - t["start"],
    "first_item_s": t["first_item"] - t["start"],
    "after_first_per_s": (t["items"] - 1) / (t["end"] - t["first_item"]),
    "pages": stats.get("response_received_count", 0) - 2,
    "kept": stats.get("item_scraped_count", 0),
    "dropped": stats.get("item_dropped_count", 0),
    "max_stall_ms": stats.get("bench/max_stall_ms"),
    "neardup": {k: v for k, v in stats.items() if k.startswith("neardup/")},
}))
'''


def crawl(port: int, settings: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp, "crawl.py")
        script.write_text(CRAWLER)
        out = subprocess.run(
            [
                sys.executable,
                str(script),
                json.dumps({"start": f"http://127.0.0.1:{port}/", "settings": settings}),
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _trafilatura(body: bytes) -> int:
    """trafilatura as its README shows it: ``extract(html)``."""
    import trafilatura

    return len(trafilatura.extract(body.decode("utf-8", errors="replace")) or "")


def _ours(body: bytes) -> int:
    from scrapy_neardup.extraction import extract_main_text

    return len(extract_main_text(body).text)


def extraction_alone(fn: Callable[[bytes], int], bodies: list[bytes], workers: int) -> float:
    """Pages per second of ``fn`` over the bodies in ``workers`` processes."""
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(fn, bodies[: workers * 2]))  # warm up imports
        start = time.perf_counter()
        list(pool.map(fn, bodies, chunksize=4))
        return len(bodies) / (time.perf_counter() - start)


def run(quick: bool = False, copies: int | None = None) -> dict:
    if not have_data("en"):
        print("bench_crawl: ../shared/data not found; skipped (it needs real pages)")
        return {}
    pages = load_pages()
    copies = copies or (3 if quick else 10)
    site = Site(pages, copies)
    workers = os.cpu_count() or 1
    server = serve_pages(site.body)
    port = server.server_address[1]
    try:
        bodies = [site.body(f"/p/{i}/{c}") for c in range(copies) for i in range(len(pages))]
        alone = extraction_alone(_trafilatura, bodies, workers)
        ours_alone = extraction_alone(_ours, bodies, workers)
        off = crawl(port, {})
        # Defaults only. The pages' own rel=canonical links name their original sites, which
        # the plugin does not trust (see NEARDUP_CHECK_CANONICAL), so every copy is extracted
        # and checked for content, as this benchmark means it to be.
        on = crawl(port, {"ADDONS": {"scrapy_neardup.Addon": 500}})
    finally:
        server.shutdown()
        server.server_close()
    rows = [
        ("plain spider, plugin off", off["pages"] / off["seconds"], off),
        ("plain spider, plugin on", on["pages"] / on["seconds"], on),
    ]
    print(
        f"\nCrawl of {len(bodies)} real pages ({len(pages)} pages x {copies} URLs), {workers} cores"
    )
    print(f"{'run':<28}{'pages/s':>9}{'kept':>7}{'dropped':>9}{'max stall ms':>14}")
    for name, rate, r in rows:
        print(f"{name:<28}{rate:>9.1f}{r['kept']:>7}{r['dropped']:>9}{r['max_stall_ms']:>14}")
    print(f"{'trafilatura.extract() alone':<28}{alone:>9.1f}")
    print(f"{'our extraction alone':<28}{ours_alone:>9.1f}")
    ratio = rows[1][1] / alone
    met = "met" if ratio >= 0.95 else "NOT met"
    print(f"plugin on / trafilatura alone = {ratio:.2f} (target >= 0.95: {met})")
    print(f"plugin on / our extraction    = {rows[1][1] / ours_alone:.2f}")
    print(f"plugin on / plugin off        = {rows[1][1] / rows[0][1]:.2f}")
    steady = on["after_first_per_s"] / alone
    print(
        f"the plugin's workers start with the first page that yields an item: first item "
        f"{on['first_item_s']:.1f} s after the first page (plugin off: "
        f"{off['first_item_s']:.1f} s); after it, {on['after_first_per_s']:.1f} items/s"
        f" = {steady:.2f} of trafilatura alone"
    )
    print(
        f"the crawler process's own CPU: {on['crawler_cpu_s'] / on['pages'] * 1000:.1f} ms a "
        f"page (plugin off: {off['crawler_cpu_s'] / off['pages'] * 1000:.1f})"
    )
    stall = on["max_stall_ms"]
    met = "met" if stall <= 100 else "NOT met"
    print(f"longest reactor stall with plugin = {stall} ms (target <= 100: {met})")
    return {
        "alone": alone,
        "ours_alone": ours_alone,
        "off": off,
        "on": on,
        "ratio": ratio,
        "after_start_ratio": steady,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--copies", type=int)
    args = parser.parse_args()
    run(args.quick, args.copies)


if __name__ == "__main__":
    main()
