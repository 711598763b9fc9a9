"""Soak: a long crawl of a generated loopback site, memory sampled as it goes.

    python bench/bench_soak.py [--pages 100000] [--quick]

The site (a ThreadingHTTPServer in a child process) has ``--pages`` distinct small articles
(``/p/<i>``), a copy of every fifth one under another URL (``/copy/<i>``: dropped by the
pipeline) and a tracking-parameter variant of every fifth one (``?utm_source=x``: dropped by
the URL filter), linked from list pages of 100 links each. The spider yields each article's
text in a field (``NEARDUP_TEXT_FIELD``), so signing runs in the worker and no trafilatura
time hides the crawl. The plugin is on with its defaults (MinHash, Bloom capacity 1M).

Every ``--every`` seconds the crawl prints its RSS, the URLs recorded and the documents
indexed, and the RSS growth per URL and per document since the first sample; a flat column
means memory per URL and per document does not drift. At the end: the Bloom filter's bytes
per URL (as ``bench/bench_urlfilter.py`` measures it: the bit arrays alone) and the index's
share. ``--quick`` (used by ``bench/run``) crawls 10,000 articles; the full run 100,000.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = r"""
import random, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGES = int(sys.argv[1])
PER_LIST = 100
WORDS = [f"w{i}" for i in range(20000)]


def text(i):
    rng = random.Random(i)
    return " ".join(rng.choice(WORDS) for _ in range(120))


def page(title, body):
    return (f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
            f"<article><h1>{title}</h1><p>{body}</p></article></body></html>").encode()


def listing(k):
    start = k * PER_LIST
    links = []
    for i in range(start, min(start + PER_LIST, PAGES)):
        links.append(f"<a href='/p/{i}'>{i}</a>")
        if i % 5 == 0:
            links.append(f"<a href='/copy/{i}'>copy {i}</a>")
            links.append(f"<a href='/p/{i}?utm_source=x'>{i}</a>")
    if start + PER_LIST < PAGES:
        links.append(f"<a href='/list/{k + 1}'>next</a>")
    return ("<html><body>" + "".join(links) + "</body></html>").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # headers and body are two writes: without this, Nagle and delayed ACKs cost 40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        if path == "/":
            body = listing(0)
        elif parts[0] == "list":
            body = listing(int(parts[1]))
        elif parts[0] in ("p", "copy"):
            i = int(parts[1])
            body = page(f"Article {i}", text(i))
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""

CRAWLER = r"""
import json, sys, time
import scrapy
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from scrapy_neardup.state import crawl_state

START, EVERY = sys.argv[1], float(sys.argv[2])


def rss_bytes():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class SoakSpider(scrapy.Spider):
    name = "soak"

    async def start(self):
        yield scrapy.Request(START)

    def parse(self, response):
        if "/list/" in response.url or response.url.rstrip("/") == START.rstrip("/"):
            # articles before the next list page: the scheduler's queue stays ~150 requests,
            # so RSS growth is the plugin's state, not Scrapy's queue
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, priority=-1 if "/list/" in href else 0)
        else:
            yield {"url": response.url, "text": " ".join(response.css("article p::text").getall())}


process = CrawlerProcess(settings={
    "ADDONS": {"scrapy_neardup.Addon": 500}, "LOG_LEVEL": "WARNING", "ROBOTSTXT_OBEY": False,
    "TELNETCONSOLE_ENABLED": False, "CONCURRENT_REQUESTS": 32, "RETRY_ENABLED": False,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
    "NEARDUP_TEXT_FIELD": "text", "NEARDUP_WORKERS": 1, "NEARDUP_MIN_TOKENS": 20,
    # a small first stage, so the scalable Bloom filter grows during the crawl as in
    # bench_urlfilter.py rather than sitting in one stage allocated for 1M URLs
    "NEARDUP_BLOOM_CAPACITY": 10_000,
})
crawler = process.create_crawler(SoakSpider)
t0 = time.monotonic()


def sample():
    state = crawl_state(crawler)
    print(json.dumps({
        "t": round(time.monotonic() - t0, 1), "rss": rss_bytes(), "urls": len(state.urls),
        "docs": len(state.dedup), "members": len(state.dedup.members),
        "bloom_bytes": state.urls.size_in_bytes,
        "items": crawler.stats.get_value("item_scraped_count", 0),
    }), flush=True)


loops = []


def opened():
    from twisted.internet import task  # after Scrapy installed its reactor

    loops.append(task.LoopingCall(sample))
    loops[0].start(EVERY, now=True)


def closed():
    if loops and loops[0].running:
        loops[0].stop()
    sample()


crawler.signals.connect(opened, signal=signals.spider_opened)
crawler.signals.connect(closed, signal=signals.spider_closed)
process.crawl(crawler)
process.start()
stats = crawler.stats.get_stats()
print(json.dumps({"final": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))}}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--every", type=float, default=10.0)
    parser.add_argument("--quick", action="store_true", help="10,000 articles")
    args = parser.parse_args()
    pages = 10_000 if args.quick else args.pages
    every = min(args.every, 5.0) if args.quick else args.every
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(pages)], stdout=subprocess.PIPE, text=True
        )
        try:
            port = int(server.stdout.readline())
            script = Path(tmp, "soak_crawl.py")
            script.write_text(CRAWLER)
            print(
                f"soak: {pages:,} articles + {pages // 5:,} copies + {pages // 5:,} tracking "
                f"variants on 127.0.0.1:{port}; RSS sampled every {every:g} s"
            )
            start = time.monotonic()
            crawl = subprocess.Popen(
                [sys.executable, str(script), f"http://127.0.0.1:{port}/", str(every)],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                cwd=tmp,
            )
            samples, final = report(crawl)
            crawl.wait()
        finally:
            server.terminate()
            server.wait()
    elapsed = time.monotonic() - start
    if crawl.returncode or not samples or final is None:
        print(f"soak: the crawl failed (exit status {crawl.returncode})", file=sys.stderr)
        return 1
    summary(samples, final, pages, elapsed)
    return 0


def report(crawl: subprocess.Popen) -> tuple[list[dict], dict | None]:
    samples: list[dict] = []
    final = None
    print(
        f"{'s':>7}{'URLs':>10}{'docs':>9}{'dups':>8}{'RSS MB':>9}"
        f"{'dRSS/URL':>10}{'dRSS/doc':>10}{'bloom B/URL':>12}"
    )
    for line in crawl.stdout:
        record = json.loads(line)
        if "final" in record:
            final = record["final"]
            continue
        samples.append(record)
        first = samples[0]
        d_urls = record["urls"] - first["urls"]
        d_docs = record["docs"] - first["docs"]
        d_rss = record["rss"] - first["rss"]
        per_url = f"{d_rss / d_urls:10.0f}" if d_urls > 0 else f"{'-':>10}"
        per_doc = f"{d_rss / d_docs:10.0f}" if d_docs > 0 else f"{'-':>10}"
        bloom = record["bloom_bytes"] / max(record["urls"], 1)
        print(
            f"{record['t']:7.0f}{record['urls']:>10,}{record['docs']:>9,}{record['members']:>8,}"
            f"{record['rss'] / 2**20:9.1f}{per_url}{per_doc}{bloom:12.2f}",
            flush=True,
        )
    return samples, final


def summary(samples: list[dict], final: dict, pages: int, elapsed: float) -> None:
    last = samples[-1]
    # Growth over the second half of the crawl against the first: flat means no drift.
    mid = samples[len(samples) // 2]
    first = samples[0]

    def per(a: dict, b: dict, key: str) -> float:
        return (b["rss"] - a["rss"]) / max(b[key] - a[key], 1)

    print()
    print(
        f"crawl: {elapsed:.0f} s, {final.get('item_scraped_count', 0):,} items kept, "
        f"{final.get('neardup/items/dropped', 0):,} dropped as copies, "
        f"{final.get('neardup/urls/filtered', 0) + final.get('dupefilter/filtered', 0):,} "
        f"URL duplicates filtered, finish_reason={final.get('finish_reason')}"
    )
    print(
        f"documents indexed {last['docs']:,} (expected {pages:,}); URLs recorded {last['urls']:,}"
    )
    if len(samples) >= 4:
        print(
            f"RSS per URL:      first half {per(first, mid, 'urls'):7.0f} B, "
            f"second half {per(mid, last, 'urls'):7.0f} B"
        )
        print(
            f"RSS per document: first half {per(first, mid, 'docs'):7.0f} B, "
            f"second half {per(mid, last, 'docs'):7.0f} B"
        )
    print(
        f"Bloom filter: {last['bloom_bytes'] / max(last['urls'], 1):.2f} B per URL recorded "
        f"(first stage 10,000 URLs, grown to {last['urls']:,}; see bench_urlfilter.py)"
    )
    print(f"peak RSS {max(s['rss'] for s in samples) / 2**20:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
