"""Workers sharing a scrapy-redis queue, one of them killed: pages in the union of the feeds.

    python bench/bench_leases.py [--rounds 3] [--quick]

Starts its own ``redis-server`` on a free loopback port (tests/redis_server.py) and serves
tests/kinds_site.py (600 article pages, each answered after 0.05 s) on loopback. Each round,
three worker processes crawl the site from one shared queue (a ``scrapy.Spider`` following
every link, ``CONCURRENT_REQUESTS = 4``, a JSON-lines feed file each); the first is killed
with ``SIGKILL`` right after its 60th item, the other two run to the end
(tests/scrapy_redis_runner.py's ``kill_one_of_three``). Compared, each on an emptied
database:

* scrapy-redis alone: its ``Scheduler`` and ``RFPDupeFilter``, no plugin;
* scrapy-redis's ``Scheduler`` with the plugin (our dupefilter, ``NEARDUP_STORAGE = "redis"``);
* ``scrapy_neardup.leases.LeasingScheduler`` with the plugin (``NEARDUP_LEASE_TIMEOUT = 2``).

Printed per round: the article pages in the union of the three feeds, and the seconds until
the last worker ended. ``--quick`` (used by ``bench/run``) means one round.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from kinds_site import KindsSite  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from scrapy_redis_runner import SCHEDULERS, kill_one_of_three, workers_settings  # noqa: E402

from scrapy_neardup.storage import redis_client  # noqa: E402

DELAY = 0.05
KILL_AT = 60


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    site = KindsSite()
    http, base = site.serve(DELAY)
    expected = site.article_urls(base)
    print(f"{'scheduler':22} {'round':>5} {'pages in the feeds':>20} {'seconds':>8}")
    try:
        with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
            client = redis_client.connect(server.url)
            for name in SCHEDULERS:
                for n in range(rounds):
                    client.flushdb()
                    run = Path(tmp) / f"{name}-{n}"
                    run.mkdir()
                    start = time.monotonic()
                    urls, _ = kill_one_of_three(
                        base, run, workers_settings(server.url, "bench", name), KILL_AT
                    )
                    found = len(expected & urls)
                    seconds = time.monotonic() - start
                    print(f"{name:22} {n + 1:>5} {found:>14}/{len(expected)} {seconds:>8.1f}")
            client.close()
    finally:
        http.shutdown()
        http.server_close()


if __name__ == "__main__":
    main()
