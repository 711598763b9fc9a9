"""URL filter: Scrapy's RFPDupeFilter against canonical URL + xxh3 + scalable Bloom filter.

    python bench/bench_urlfilter.py [--n 1000000] [--quick]

N distinct URLs (several hosts, sections, slugs, content query parameters, a third carrying
tracking parameters), plus N/5 requests that repeat one of them: exact repeats, shuffled query
order, a fragment, other tracking parameters, host case, a default port, a trailing slash or
a ``;jsessionid``. Seeded, so every run sees the same requests. Hosts and sections come from
the article-extraction benchmark's real URLs (``../shared/data``) when present.

Both filters see the same pre-built ``scrapy.Request`` objects, in the same run:

* default: ``RFPDupeFilter.from_crawler(get_crawler()).request_seen(request)``;
* ours: ``ScalableBloomFilter(N, 0.001).add(url_fingerprint(canonical_url(request.url)))``;
* ours as configured by default (``NEARDUP_URL_CONFIRM``): the same, with every Bloom positive
  confirmed against the URL keys of the state database (SQLite) before it counts as seen;
* ours as the scheduler calls it: ``NearDupDupeFilter.from_crawler(get_crawler())``'s
  ``request_seen(request)`` on default settings (request key from the crawler's fingerprinter,
  Bloom filter, confirm store, the request's meta marked as checked).

Printed: requests/second, memory per stored URL (the fingerprint set and its members for
RFPDupeFilter; ``size_in_bytes`` for ours), requests filtered, our false positives and false
negatives against the exact set of canonical URLs, and ``canonical_url`` against w3lib's
``canonicalize_url`` alone on the first 100,000 URLs. ``--quick`` (used by ``bench/run``)
means N=100,000; ``run(n)`` does the same from Python and returns the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from w3lib.url import canonicalize_url

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scrapy import Request  # noqa: E402
from scrapy.dupefilters import RFPDupeFilter  # noqa: E402
from scrapy.utils.test import get_crawler  # noqa: E402

from corpus import load_article_urls  # noqa: E402
from scrapy_neardup.dupefilter import NearDupDupeFilter  # noqa: E402
from scrapy_neardup.exceptions import InvalidURL  # noqa: E402
from scrapy_neardup.middlewares import FrontierMiddleware  # noqa: E402
from scrapy_neardup.storage.bloom import ScalableBloomFilter  # noqa: E402
from scrapy_neardup.storage.statedb import STATE_FILE, StateDB  # noqa: E402
from scrapy_neardup.urls import canonical_url, url_fingerprint  # noqa: E402

WORDS = (
    "market city report police school water energy health court music travel science game "
    "film budget election storm bridge museum festival river garden startup vaccine housing"
).split()
CONTENT_PARAMS = ("page", "id", "sort", "lang", "q", "color", "size", "ref")
TRACKING = ("utm_source", "utm_medium", "utm_campaign", "fbclid", "gclid", "mc_eid", "_ga")


def hosts_and_sections() -> tuple[list[str], list[str], str]:
    """Hosts and first path segments of real article URLs, or synthetic ones."""
    urls = load_article_urls()
    if urls:
        parts = [urlsplit(u) for u in urls]
        hosts = sorted({p.hostname for p in parts if p.hostname})
        sections = sorted({seg for p in parts if (seg := p.path.strip("/").split("/")[0])})
        return hosts, sections[:200] or ["news"], f"real hosts ({len(hosts)} from ../shared/data)"
    hosts = [f"www.site{i}.example" for i in range(40)]
    return hosts, ["news", "world", "sport", "tech", "shop", "blog"], "synthetic hosts"


def make_urls(n: int, seed: int = 42) -> tuple[list[str], int, str]:
    """N distinct URLs and N/5 variants of earlier ones, interleaved; also the host source."""
    rng = random.Random(seed)
    hosts, sections, source = hosts_and_sections()
    originals: list[tuple[str, str, str, list[str]]] = []  # scheme, host, path, params
    keyed: list[tuple[float, str]] = []
    for i in range(n):
        scheme = "https" if rng.random() < 0.9 else "http"
        host = rng.choice(hosts)
        slug = "-".join(rng.sample(WORDS, 3))
        path = f"/{rng.choice(sections)}/{2015 + i % 10}/{slug}-{i}"
        params = [
            f"{p}={rng.randint(1, 50)}" for p in rng.sample(CONTENT_PARAMS, rng.randint(0, 3))
        ]
        originals.append((scheme, host, path, params))
        if rng.random() < 0.3:
            params = [*params, f"{rng.choice(TRACKING)}=x{rng.randint(1, 9999)}"]
        keyed.append((i, build(scheme, host, path, params)))
    for _ in range(n // 5):
        j = rng.randrange(n)
        scheme, host, path, params = originals[j]
        kind = rng.randrange(8)
        params = list(params)
        if kind == 1:
            rng.shuffle(params)
        elif kind == 2:
            path += "#comments"
        elif kind == 3:
            params.append(f"{rng.choice(TRACKING)}=y{rng.randint(1, 9999)}")
        elif kind == 4:
            host = host.upper()
        elif kind == 5:
            host += ":443" if scheme == "https" else ":80"
        elif kind == 6:
            path += "/"
        elif kind == 7:
            path += f";jsessionid={rng.getrandbits(64):016X}"
        keyed.append((rng.uniform(j, n), build(scheme, host, path, params)))
    keyed.sort(key=lambda pair: pair[0])
    return [url for _, url in keyed], n // 5, source


def build(scheme: str, host: str, path: str, params: list[str]) -> str:
    path, hash_, fragment = path.partition("#")
    query = "?" + "&".join(params) if params else ""
    return f"{scheme}://{host}{path}{query}{hash_}{fragment}"


def time_filters(requests: list[Request], n: int, store_dir: str) -> tuple[dict, bytearray, list]:
    """Feed every filter the same requests, in blocks, taking turns at going first.

    Shared machines speed up and slow down over minutes; alternating blocks lets every
    filter see the same conditions, while each still sees the whole stream in order. Each
    filter gets its own copies of the requests (both filters write into ``request.meta``, and
    Scrapy's fingerprinter caches its answer per request object).
    """
    store = StateDB(Path(store_dir, STATE_FILE))
    store.open({})
    store.start_writing()
    bloom = ScalableBloomFilter(capacity=n, error_rate=0.001)
    confirmed_bloom = ScalableBloomFilter(capacity=n, error_rate=0.001)
    seen = bytearray()  # our answer per request: 0 new, 1 seen, 2 invalid URL
    canonical: list[str] = []  # kept for the check against the truth (an append is cheap)
    filtered: dict[str, int] = {}

    def rfp(jobdir: bool) -> Any:
        settings = {"JOBDIR": tempfile.mkdtemp(dir=store_dir)} if jobdir else {}
        return RFPDupeFilter.from_crawler(get_crawler(settings_dict=settings))

    def ours(jobdir: bool, frontier: bool = True) -> NearDupDupeFilter:
        settings: dict[str, Any] = {"NEARDUP_BLOOM_CAPACITY": n}
        if jobdir:
            settings["JOBDIR"] = tempfile.mkdtemp(dir=store_dir)
        if frontier:  # as the add-on sets it: requests let through are journaled
            settings["SPIDER_MIDDLEWARES"] = {FrontierMiddleware: 10}
        dupefilter = NearDupDupeFilter.from_crawler(get_crawler(settings_dict=settings))
        dupefilter.open()
        return dupefilter

    def canonical_block(block: list[Request]) -> None:
        for r in block:
            with contextlib.suppress(InvalidURL):
                canonical_url(r.url)

    def bloom_block(block: list[Request]) -> None:
        for r in block:
            try:
                url = canonical_url(r.url)
            except InvalidURL:
                url = ""
                seen.append(2)
            else:
                seen.append(bloom.add(url_fingerprint(url)))
            canonical.append(url)

    def confirmed_block(block: list[Request]) -> None:
        # As FileState.key_seen does it: the store is read only on a Bloom positive.
        for r in block:
            try:
                fingerprint = url_fingerprint(canonical_url(r.url))
            except InvalidURL:
                continue
            if confirmed_bloom.add(fingerprint):
                if store.has_key(fingerprint):
                    filtered["confirm"] = filtered.get("confirm", 0) + 1
                    continue
                filtered["false_pos"] = filtered.get("false_pos", 0) + 1
            store.add_key(fingerprint)

    def dupefilter_block(name: str, dupefilter: Any) -> Callable[[list[Request]], None]:
        def run(block: list[Request]) -> None:
            count = 0
            for r in block:
                count += dupefilter.request_seen(r)
            filtered[name] = filtered.get(name, 0) + count

        return run

    filters = {
        "rfp": rfp(False),
        "rfp_jobdir": rfp(True),
        "ours": ours(False),
        "ours_jobdir_no_frontier": ours(True, frontier=False),
        "ours_jobdir": ours(True),
    }
    blocks: dict[str, Callable[[list[Request]], None]] = {
        "canonical": canonical_block,
        "bloom": bloom_block,
        "confirm": confirmed_block,
    }
    for name, dupefilter in filters.items():
        blocks[name] = dupefilter_block(name, dupefilter)
    seconds = dict.fromkeys(blocks, 0.0)
    order = list(blocks)
    for i, lo in enumerate(range(0, len(requests), 20_000)):
        for name in order[:: 1 if i % 2 else -1]:
            block = requests[lo : lo + 20_000]
            if name in filters:  # fresh copies, made before the clock starts
                block = [r.copy() for r in block]
            start = time.perf_counter()
            blocks[name](block)
            seconds[name] += time.perf_counter() - start
    fps = filters["rfp"]._fingerprints  # the set itself (the public property is deprecated)
    rows = {
        name: {"seconds": secs, "filtered": filtered.get(name, 0)} for name, secs in seconds.items()
    }
    rows["rfp"].update(
        filtered=len(requests) - len(fps),
        stored=len(fps),
        bytes=sys.getsizeof(fps) + sum(sys.getsizeof(fp) for fp in fps),
    )
    rows["bloom"].update(
        filtered=seen.count(1),
        stored=len(bloom),
        bytes=bloom.size_in_bytes,
        stages=bloom.stages,
        expected_fp_rate=bloom.expected_false_positive_rate,
    )
    rows["confirm"].update(
        stored=len(confirmed_bloom),
        bytes=confirmed_bloom.size_in_bytes,
        disk_bytes=sum(f.stat().st_size for f in Path(store_dir).glob(f"{STATE_FILE}*")),
        confirmed_fp=filtered.get("false_pos", 0),
    )
    for name in ("ours", "ours_jobdir_no_frontier", "ours_jobdir"):
        state = filters[name].state
        rows[name].update(stored=len(state.urls), bytes=state.urls.size_in_bytes)
    for dupefilter in filters.values():
        dupefilter.close("finished")
    store.close()
    return rows, seen, canonical


def truth(canonical: list[str], seen: bytearray) -> dict[str, Any]:
    """Our answers against the exact set of canonical URLs."""
    exact: set[str] = set()
    false_pos = false_neg = 0
    for url, answer in zip(canonical, seen, strict=True):
        if answer == 2:  # invalid URL: neither filter's business
            continue
        if url in exact:
            false_neg += answer == 0
        else:
            false_pos += answer == 1
            exact.add(url)
    return {
        "distinct": len(exact),
        "false_pos": false_pos,
        "false_neg": false_neg,
    }


def canonical_speed(urls: list[str], rounds: int = 2) -> dict[str, float]:
    """URLs/second of canonical_url and of w3lib's canonicalize_url alone (best of rounds)."""
    best = {"canonical_url": float("inf"), "w3lib": float("inf")}
    for _ in range(rounds):
        for name, func in (("w3lib", canonicalize_url), ("canonical_url", canonical_url)):
            start = time.perf_counter()
            for url in urls:
                func(url)
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: len(urls) / seconds for name, seconds in best.items()}


LABELS = {
    "rfp": "scrapy RFPDupeFilter",
    "rfp_jobdir": "scrapy RFPDupeFilter, JOBDIR",
    "canonical": "  canonical_url alone",
    "bloom": "  + xxh3 + Bloom (0.001)",
    "confirm": "  + confirm store (SQLite)",
    "ours": "NearDupDupeFilter (scheduler API)",
    "ours_jobdir_no_frontier": "  + JOBDIR state, no frontier",
    "ours_jobdir": "NearDupDupeFilter, JOBDIR (add-on)",
}


def run(n: int = 1_000_000) -> dict[str, Any]:
    """Build the requests, time every filter on them, print the table and return the figures."""
    begin = time.perf_counter()
    urls, n_variants, source = make_urls(n)
    requests = [Request(u) for u in urls]
    del urls
    # A million live Requests would make every full GC pass walk them all, inside the timed
    # loops of both filters; frozen, the collector skips them.
    gc.collect()
    gc.freeze()
    print(
        f"URL filter benchmark: {n:,} distinct URLs + {n_variants:,} variants = "
        f"{len(requests):,} requests ({source}, seed 42)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as store_dir:
        rows, seen, canonical = time_filters(requests, n, store_dir)
    check = truth(canonical, seen)
    del canonical
    speed = canonical_speed([r.url for r in requests[:100_000]])
    for r in rows.values():
        r["per_s"] = len(requests) / r["seconds"]
        r["us"] = r["seconds"] / len(requests) * 1e6
        if "bytes" in r:
            r["bytes_per_url"] = r["bytes"] / max(r["stored"], 1)
    fp_rate = check["false_pos"] / max(check["distinct"], 1)
    print(f"{'filter':<36}{'requests/s':>11}{'us/req':>8}{'bytes/URL':>11}{'filtered':>10}")
    for name, label in LABELS.items():
        r = rows[name]
        per_url = f"{r['bytes_per_url']:.2f}" if "bytes_per_url" in r else ""
        filtered = f"{r['filtered']:,}" if name != "canonical" else ""
        print(f"{label:<36}{r['per_s']:>11,.0f}{r['us']:>8.1f}{per_url:>11}{filtered:>10}")
    ratio = rows["ours"]["per_s"] / rows["rfp"]["per_s"]
    ratio_jobdir = rows["ours_jobdir"]["per_s"] / rows["rfp_jobdir"]["per_s"]
    memory = rows["ours"]["bytes_per_url"] / rows["rfp"]["bytes_per_url"]
    for label, value in (("without JOBDIR", ratio), ("with JOBDIR", ratio_jobdir)):
        met = "met" if value >= 3 else "NOT met"
        print(f"NearDupDupeFilter / RFPDupeFilter {label}: {value:.2f}x (target >= 3: {met})")
    us = {name: r["us"] for name, r in rows.items()}
    confirm = rows["confirm"]
    bloom = rows["bloom"]
    print(
        f"Memory: {rows['ours']['bytes_per_url']:.2f} bytes/URL against"
        f" {rows['rfp']['bytes_per_url']:.1f} ({memory:.3f}x; target <= 2 B/URL)."
        " Where the time goes (us/request): canonical form"
        f" {us['canonical']:.1f}, Bloom {us['bloom'] - us['canonical']:.1f},"
        f" confirm store {us['confirm'] - us['bloom']:.1f}, the rest of"
        f" request_seen {us['ours'] - us['confirm']:.1f}, JOBDIR state"
        f" {us['ours_jobdir_no_frontier'] - us['ours']:.1f}, frontier"
        f" {us['ours_jobdir'] - us['ours_jobdir_no_frontier']:.1f}."
    )
    print(
        f"Confirm store: {confirm['confirmed_fp']:,} Bloom positives found new and fetched"
        f" (no false drop); {confirm['disk_bytes'] / max(confirm['stored'], 1):.1f}"
        " bytes per URL on disk, SQLite's page cache (2 MB) in memory."
    )
    print(
        f"Truth: {check['distinct']:,} distinct canonical URLs, so"
        f" {len(requests) - check['distinct']:,} requests to filter. Ours:"
        f" {check['false_pos']:,} false positives ({fp_rate:.4%} of new URLs; estimate for a"
        f" new URL at the end {bloom['expected_fp_rate']:.4%}), {check['false_neg']} false"
        f" negatives, {bloom['stages']} Bloom stage(s), {bloom['bytes'] / 1e6:.2f} MB"
        f" against {rows['rfp']['bytes'] / 1e6:.1f} MB."
    )
    print(
        f"canonical_url alone: {speed['canonical_url']:,.0f}/s, w3lib canonicalize_url alone:"
        f" {speed['w3lib']:,.0f}/s ({speed['canonical_url'] / speed['w3lib']:.2f}x,"
        f" first {min(len(requests), 100_000):,} URLs, best of 2);"
        f" bench_urlfilter: {time.perf_counter() - begin:.0f} s",
        flush=True,
    )
    gc.unfreeze()
    return {
        "n": n,
        "requests": len(requests),
        **rows,
        "ratio": ratio,
        "ratio_jobdir": ratio_jobdir,
        "truth": check,
        "canonical_speed": speed,
        "false_positive_rate": fp_rate,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=None, help="distinct URLs (default 1,000,000)")
    parser.add_argument("--quick", action="store_true", help="100,000 URLs (for bench/run)")
    args = parser.parse_args(argv)
    run(args.n or (100_000 if args.quick else 1_000_000))


if __name__ == "__main__":
    main()
