"""URL filters in Redis: ours against scrapy-redis and scrapy-redis-bloomfilter, one server.

    python bench/bench_redis.py [--n 100000] [--quick]

Starts its own ``redis-server`` on a free loopback port (tests/redis_server.py) and feeds each
filter the same requests (bench_urlfilter's URLs: N distinct plus N/5 variants of earlier
ones), each on an emptied database:

* scrapy-redis ``RFPDupeFilter``: SADD of a 40-hex-digit SHA1 request fingerprint, one round
  trip per request;
* scrapy-redis-bloomfilter ``RFPDupeFilter``: a Bloom filter in one bitmap, GETBIT for each of
  its hash functions, then SETBIT for each when new, one command per round trip; sized here
  for N at the same 0.001 error rate (``BLOOMFILTER_BIT`` = enough bits, ``HASH_NUMBER`` = 10),
  as its default of 2**30 bits (128 MiB, preallocated by the first high SETBIT) would make
  memory per URL meaningless;
* ours, as the dupefilter calls it: canonical URL, xxh3 fingerprint, one EVALSHA per request
  (the scalable Bloom filter's atomic test-and-set, sized NEARDUP_BLOOM_CAPACITY = N);
* ours batched: ``add_many`` of 1,000 requests per EVALSHA (what a batching caller gets);
* ours as the scheduler calls it: ``NearDupDupeFilter.request_seen`` on a crawler with
  ``NEARDUP_STORAGE = "redis"`` (request key, the state's local filter of the URLs this process
  met, then the test-and-set in the state's URL thread, awaited).

Printed: requests per second, Redis memory per distinct URL (``used_memory`` after minus
before, from INFO memory; and MEMORY USAGE of the keys alone), round trips per request
(counted by a connection class that counts what it sends: a pipeline or a script is one),
and requests filtered. ``--quick`` (used by
``bench/run``) means N=10,000.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import redis  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from scrapy import Request  # noqa: E402

from bench.bench_urlfilter import make_urls  # noqa: E402
from scrapy_neardup.exceptions import InvalidURL  # noqa: E402
from scrapy_neardup.storage.redis_urls import RedisBloomFilter, has_bloom_module  # noqa: E402
from scrapy_neardup.urls import canonical_url, url_fingerprint  # noqa: E402

ERROR_RATE = 0.001


class CountingConnection(redis.Connection):
    """Counts round trips: every packed send is one request (a pipeline is one send)."""

    sent = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sent += 1
        super().send_packed_command(command, check_health)


def client_for(port: int) -> redis.Redis:
    pool = redis.ConnectionPool(
        host="127.0.0.1", port=port, db=0, connection_class=CountingConnection
    )
    return redis.Redis(connection_pool=pool)


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def key_memory(client: redis.Redis) -> int:
    """MEMORY USAGE of every key: the data alone, without allocator and buffer noise."""
    return sum(client.memory_usage(k, samples=0) or 0 for k in client.scan_iter(count=1000))


def measure(
    name: str, client: redis.Redis, requests: list[Request], check: Callable[[list[Request]], int]
) -> dict[str, Any]:
    client.flushall()
    time.sleep(0.05)
    before = used_memory(client)
    CountingConnection.sent = 0
    start = time.perf_counter()
    filtered = check(requests)
    elapsed = time.perf_counter() - start
    trips = CountingConnection.sent
    after = used_memory(client)
    keys = key_memory(client)
    distinct = len(requests) - filtered
    return {
        "name": name,
        "requests": len(requests),
        "per_second": len(requests) / elapsed,
        "bytes_per_url": (after - before) / max(distinct, 1),
        "key_bytes_per_url": keys / max(distinct, 1),
        "round_trips": trips / len(requests),
        "filtered": filtered,
    }


def scrapy_redis_check(client: redis.Redis) -> Callable[[list[Request]], int]:
    from scrapy_redis.dupefilter import RFPDupeFilter

    dupefilter = RFPDupeFilter(client, "bench:dupefilter")
    return lambda requests: sum(dupefilter.request_seen(r) for r in requests)


def bloomfilter_bits(n: int) -> int:
    return max(10, math.ceil(math.log2(n * -math.log(ERROR_RATE) / math.log(2) ** 2)))


def bloomfilter_check(client: redis.Redis, n: int) -> tuple[Callable[[list[Request]], int], str]:
    """scrapy-redis-bloomfilter's own class when it works here, else its algorithm, labelled."""
    bits, hashes = bloomfilter_bits(n), 10
    try:
        from scrapy_redis_bloomfilter.dupefilter import RFPDupeFilter

        dupefilter = RFPDupeFilter(client, "bench:bloom", False, bits, hashes)
        dupefilter.request_seen(Request("https://example.com/probe"))
        client.delete("bench:bloom")
        return (
            lambda requests: sum(bool(dupefilter.request_seen(r)) for r in requests),
            "scrapy-redis-bloomfilter",
        )
    except Exception as exc:  # old package: say so, and measure its algorithm instead
        print(f"  scrapy-redis-bloomfilter does not run here ({exc!r}); its algorithm is used")
    from scrapy_redis.dupefilter import RFPDupeFilter as Base

    fingerprint = Base(client, "x").request_fingerprint
    m, seeds = 1 << bits, range(hashes)

    def offsets(value: str) -> list[int]:
        out = []
        for seed in seeds:
            ret = 0
            for ch in value:
                ret += seed * ret + ord(ch)
            out.append((m - 1) & ret)
        return out

    def seen(request: Request) -> bool:
        fp = fingerprint(request)
        found = all(client.getbit("bench:bloom", o) for o in offsets(fp))
        if not found:
            for o in offsets(fp):
                client.setbit("bench:bloom", o, 1)
        return found

    return (
        lambda requests: sum(seen(r) for r in requests),
        "scrapy-redis-bloomfilter's algorithm",
    )


def fingerprint_of(request: Request) -> bytes | None:
    try:
        return url_fingerprint(canonical_url(request.url))
    except InvalidURL:
        return None


def ours_check(client: redis.Redis, n: int) -> Callable[[list[Request]], int]:
    bloom = RedisBloomFilter(client, "bench", n, ERROR_RATE)

    def check(requests: list[Request]) -> int:
        filtered = 0
        for r in requests:
            fp = fingerprint_of(r)
            filtered += fp is not None and bloom.add(fp)
        return filtered

    return check


def ours_batched_check(client: redis.Redis, n: int) -> Callable[[list[Request]], int]:
    bloom = RedisBloomFilter(client, "bench", n, ERROR_RATE)

    def check(requests: list[Request]) -> int:
        filtered = 0
        for start in range(0, len(requests), 1000):
            fps = [fp for r in requests[start : start + 1000] if (fp := fingerprint_of(r))]
            filtered += sum(bloom.add_many(fps))
        return filtered

    return check


def ours_dupefilter_check(port: int, n: int) -> tuple[Callable[[list[Request]], int], Any]:
    from scrapy.utils.test import get_crawler

    from scrapy_neardup.dupefilter import NearDupDupeFilter

    settings = {
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "NEARDUP_KEY_PREFIX": "bench",
        "NEARDUP_BLOOM_CAPACITY": n,
    }
    dupefilter = NearDupDupeFilter.from_crawler(get_crawler(settings_dict=settings))
    dupefilter.open()  # first contact (and the method's parameters) before the clock starts
    state = dupefilter.state
    for client in (state.redis_client, state.redis_url_client):  # count its round trips
        client.connection_pool.connection_class = CountingConnection
        client.connection_pool.reset()

    def check(requests: list[Request]) -> int:
        return sum(dupefilter.request_seen(r) for r in requests)

    return check, dupefilter


#: Links a page yields, for the crawl-path row (a news or documentation page has tens).
LINKS_PER_PAGE = 50


def ours_links_check(port: int, n: int) -> tuple[Callable[[list[Request]], int], Any]:
    """The crawl's path with Redis: LinkBatchMiddleware takes a page's links (LINKS_PER_PAGE
    requests of one spider output), test-and-sets them in one call awaited off the reactor
    thread, and the dupefilter answers each from that, as the scheduler calls it."""
    from scrapy.utils.test import get_crawler

    from scrapy_neardup.dupefilter import NearDupDupeFilter
    from scrapy_neardup.middlewares import LinkBatchMiddleware

    settings = {
        "DUPEFILTER_CLASS": NearDupDupeFilter,  # LinkBatchMiddleware is off with another
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "NEARDUP_KEY_PREFIX": "bench",
        "NEARDUP_BLOOM_CAPACITY": n,
    }
    crawler = get_crawler(settings_dict=settings)
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    middleware = LinkBatchMiddleware.from_crawler(crawler)
    state = dupefilter.state
    for client in (state.redis_client, state.redis_url_client):
        client.connection_pool.connection_class = CountingConnection
        client.connection_pool.reset()

    async def page(links: list[Request]) -> Any:
        for link in links:
            yield link

    async def crawl(requests: list[Request]) -> int:
        filtered = 0
        for start in range(0, len(requests), LINKS_PER_PAGE):
            output = page(requests[start : start + LINKS_PER_PAGE])
            async for request in middleware.process_spider_output(None, output):
                filtered += dupefilter.request_seen(request)
        return filtered

    def check(requests: list[Request]) -> int:
        from scrapy.utils.defer import deferred_from_coro
        from twisted.internet import reactor

        result: list[Any] = []

        def go() -> None:
            done = deferred_from_coro(crawl(requests))
            done.addBoth(result.append)
            done.addBoth(lambda _: reactor.stop())

        reactor.callWhenRunning(go)
        reactor.run(installSignalHandlers=False)  # once per process: this row runs once
        if not isinstance(result[0], int):
            result[0].raiseException()
        return result[0]

    return check, dupefilter


def run(n: int) -> list[dict[str, Any]]:
    urls, variants, source = make_urls(n)
    requests = [Request(u) for u in urls]
    print(f"{len(requests)} requests: {n} distinct URLs + {variants} variants ({source})")
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp)) as server:
        client = client_for(server.port)
        version = client.info("server")["redis_version"]
        print(f"redis-server {version} on 127.0.0.1:{server.port}")
        if not has_bloom_module(client):
            print("  (no RedisBloom module on this server: BF.ADD path not measured)")
        bloom_check, bloom_name = bloomfilter_check(client, n)
        dupefilter_check, dupefilter = ours_dupefilter_check(server.port, n)
        links_check, links_dupefilter = ours_links_check(server.port, n)
        # Its one-command-per-bit costs ~20 round trips a request: a subset keeps it short.
        bloom_share = requests[: min(len(requests), 30_000)]
        rows = [
            measure("scrapy-redis RFPDupeFilter", client, requests, scrapy_redis_check(client)),
            measure(bloom_name, client, bloom_share, bloom_check),
            measure("scrapy-neardup (1 EVALSHA/URL)", client, requests, ours_check(client, n)),
            measure(
                "scrapy-neardup (add_many, 1000/EVALSHA)",
                client,
                requests,
                ours_batched_check(client, n),
            ),
            measure("scrapy-neardup dupefilter (RedisState)", client, requests, dupefilter_check),
            measure(
                f"scrapy-neardup crawl path ({LINKS_PER_PAGE} links/page)",
                client,
                requests,
                links_check,
            ),
        ]
        dupefilter.close("finished")
        links_dupefilter.close("finished")
        client.close()
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="distinct URLs")
    parser.add_argument("--quick", action="store_true", help="N=10,000")
    args = parser.parse_args(argv)
    n = 10_000 if args.quick else args.n
    rows = run(n)
    print()
    print(
        f"{'filter':<40} {'requests':>8} {'req/s':>7} {'B/URL':>6} {'keys B/URL':>10} "
        f"{'trips/req':>9} {'filtered':>8}"
    )
    for r in rows:
        print(
            f"{r['name']:<40} {r['requests']:>8} {r['per_second']:>7.0f} "
            f"{r['bytes_per_url']:>6.1f} {r['key_bytes_per_url']:>10.1f} "
            f"{r['round_trips']:>9.3f} {r['filtered']:>8}"
        )
    print()
    for ours in rows[2:]:
        for other in rows[:2]:
            print(
                f"{ours['name']} / {other['name']}: speed "
                f"{ours['per_second'] / other['per_second']:.2f}x, memory per URL "
                f"{ours['bytes_per_url'] / other['bytes_per_url']:.2f}x (keys "
                f"{ours['key_bytes_per_url'] / other['key_bytes_per_url']:.2f}x), round trips "
                f"{ours['round_trips'] / other['round_trips']:.3f}x"
            )
    print(
        "Ours filters more: it compares canonical URLs (tracking parameters, ports, slashes "
        "and session ids stripped); the others compare w3lib-canonicalised request "
        "fingerprints."
    )


if __name__ == "__main__":
    main()
