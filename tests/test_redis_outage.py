"""Redis outages: the reactor never waits on Redis, and what was let through is reconciled.

Real parts only: a ``redis-server`` (tests/redis_server.py) stopped, restarted and SIGSTOPped;
the demo site on loopback; crawls in their own processes with a probe of the reactor's stalls
(tests/stall_runner.py). The reconciliation between two crawlers, one of which saw Redis
fail, is shown with two states on one server.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import crawl_runner
import pytest
from redis_server import RedisServer, Stats, redis_state

from corpus.text import letter_word
from scrapy_neardup.report import render, summarize_redis
from scrapy_neardup.state.redis import RedisState
from scrapy_neardup.state.redis_outage import RETRY_INTERVAL
from scrapy_neardup.storage import redis_client, redis_index
from scrapy_neardup.urls import url_fingerprint

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "stall_runner.py"

pytestmark = pytest.mark.timeout(120)

#: The longest the reactor may go without running its other work, during an outage too. A
#: call that waited on Redis on the reactor's thread would stall it for the whole
#: NEARDUP_REDIS_TIMEOUT of these crawls (1 s, see CRAWL); a busy machine delays a tick by a
#: few hundred milliseconds at most. So the bound tells the two apart without depending on
#: how loaded the machine is (bench/bench_idle.py measures the stalls themselves).
STALL_BOUND = 0.8


def outage_state(server: RedisServer, prefix: str, **settings: object) -> tuple[RedisState, Stats]:
    return redis_state(server, prefix, NEARDUP_REDIS_TIMEOUT=0.5, **settings)


def text(name: str, edit: int | None = None) -> str:
    """An 80-word text; ``edit`` changes one word (a near-duplicate of the unedited one)."""
    words = [letter_word(i, name) for i in range(80)]
    if edit is not None:
        words[edit] = letter_word(edit, "changed")
    return " ".join(words)


def wait_until(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)


# -- two crawlers, one of them cut off from Redis --------------------------------------------


def test_items_let_through_are_reconciled_across_crawlers(client, server, caplog) -> None:
    """Crawler B keeps X and records URL u while Redis is up. Then Redis goes away: crawler A
    meets a near-duplicate of X, a copy of that, URL u, and Y; B meets Y too. Both let them
    through. Once Redis is back, A's copy of X is found a duplicate of X, its own copy joins
    X's cluster, u is counted as a late duplicate, and of the two Ys one is the original and
    the other listed as late: nothing is kept twice in Redis, and the report lists them."""
    caplog.set_level(logging.INFO, "scrapy_neardup")
    a, stats_a = outage_state(server, "rc")
    b, stats_b = outage_state(server, "rc")
    sign = a.dedup.sign
    u = url_fingerprint("https://example.com/u")
    assert not b.key_seen(u)
    assert not b.dedup.check_signed("x", sign(text("x"))).is_duplicate

    server.stop()
    assert not a.key_seen(u)  # crawled: A cannot know B has it
    assert not a.dedup.check_signed("x-copy", sign(text("x", edit=3))).is_duplicate
    copy = a.dedup.check_signed("x-copy-2", sign(text("x", edit=3)))
    assert copy.duplicate_of == "x-copy"  # what A knows: dropped as usual
    assert not a.dedup.check_signed("y-a", sign(text("y"))).is_duplicate
    assert not b.dedup.check_signed("y-b", sign(text("y", edit=5))).is_duplicate
    assert stats_a.values["neardup/items/unchecked"] == 2
    assert stats_a.values["neardup/urls/unchecked"] == 1

    server.start()
    time.sleep(RETRY_INTERVAL)
    # The next check asks for a probe; the content thread writes the backlog first.
    assert a.dedup.check_signed("z", sign(text("z"))).is_duplicate is False
    assert b.dedup.check_signed("w", sign(text("w"))).is_duplicate is False
    assert a._outage is None and b._outage is None

    assert stats_a.values["neardup/urls/late_duplicates"] == 1
    reconciled = (
        stats_a.values["neardup/items/reconciled"] + stats_b.values["neardup/items/reconciled"]
    )
    assert reconciled == 2  # x-copy, and one of the two Ys
    late = {d["item"]: d for d in summarize_redis(server.url, "rc")["late_duplicates"]}
    assert set(late) - {"y-a", "y-b"} == {"x-copy"}
    assert late["x-copy"]["original"] == "x" and late["x-copy"]["method"] == "minhash"
    (ys,) = set(late) - {"x-copy"}
    assert late[ys]["original"] == ({"y-a", "y-b"} - {ys}).pop()
    # One cluster around x: the late copy and the copy of it A dropped during the outage.
    members = {k: head for k, head, _, _ in redis_index.members(client, "rc")}
    assert members["x-copy"] == "x" and members["x-copy-2"] == "x"
    kept = {k.decode() for k in client.hkeys("{rc:exact}:neardup:exact:ids")}
    assert kept == {"x", ({"y-a", "y-b"} - {ys}).pop(), "z", "w"}
    assert int(client.hget("{rc}:neardup:counts", "late_duplicates")) == 2
    report = render(summarize_redis(server.url, "rc"))
    assert "Items delivered during a Redis outage that turn out to be duplicates: 2" in report
    assert "x-copy\n      duplicate of x (minhash" in report
    back = [r.getMessage() for r in caplog.records if "is back" in r.getMessage()]
    assert any("1 URLs and 2 items were let through" in m for m in back), back
    a.close()
    b.close()


def test_calls_queued_behind_a_hung_redis_fail_at_once(client, server) -> None:
    """Redis hung (SIGSTOP): the first call waits its timeout and starts the outage; the
    checks queued behind it in the content thread never reach Redis (one error in all)."""
    state, stats = outage_state(server, "hung")
    sign = state.dedup.sign
    assert not state.dedup.check_signed("before", sign(text("before"))).is_duplicate
    signed = [sign(text(f"doc{n}")) for n in range(5)]
    verdicts: list = []
    server.proc.send_signal(signal.SIGSTOP)
    try:
        threads = [
            threading.Thread(
                target=lambda n=n: verdicts.append(state.dedup.check_signed(f"d{n}", signed[n]))
            )
            for n in range(5)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        server.proc.send_signal(signal.SIGCONT)
    assert len(verdicts) == 5 and not any(v.is_duplicate for v in verdicts)
    assert stats.values["neardup/redis/errors"] == 1
    assert stats.values["neardup/items/unchecked"] == 5
    state.close()  # a last probe: Redis answers again, the five are written
    assert client.hlen("{hung:exact}:neardup:exact:ids") == 6


# -- real crawls -----------------------------------------------------------------------------


CRAWL = {
    "LOG_LEVEL": "WARNING",
    "NEARDUP_WORKERS": 1,
    "NEARDUP_STORAGE": "redis",
    "NEARDUP_REDIS_TIMEOUT": 1.0,
    # Slow enough to last several seconds, so that the outage falls in the middle of it.
    "CONCURRENT_REQUESTS": 2,
    "DOWNLOAD_DELAY": 0.08,
}


def first_crawl(server: RedisServer, site_url: str, tmp_path: Path, prefix: str) -> dict:
    """Another crawler, earlier: three sections of the site and the pages they link to. Its
    URL filter is off, so that the second crawler fetches every page; what it kept is in
    Redis."""
    out = tmp_path / f"{prefix}-first.json"
    start = ",".join(site_url + p for p in ("section/energy", "section/health", "wire"))
    settings = {
        **CRAWL,
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_KEY_PREFIX": prefix,
        "NEARDUP_URL_FILTER": False,
        "DEPTH_LIMIT": 1,
        "DOWNLOAD_DELAY": 0,
    }
    result = crawl_runner.collect(crawl_runner.launch(start, out, settings), out)
    assert result["stats"]["finish_reason"] == "finished" and result["kept"]
    return result


def crawl_through_outage(
    server: RedisServer, client, site_url: str, tmp_path: Path, prefix: str, outage
) -> tuple[dict, dict]:
    """A crawl of the whole demo site with the stall probe; ``outage()`` runs once it kept
    its first documents (items are flowing). Returns the crawl's result and its stall record."""
    out = tmp_path / f"{prefix}.json"
    settings = {**CRAWL, "NEARDUP_REDIS_URL": server.url, "NEARDUP_KEY_PREFIX": prefix}
    kept_before = client.hlen(f"{{{prefix}:exact}}:neardup:exact:ids")
    proc = crawl_runner.launch(site_url, out, settings, runner=RUNNER)
    deadline = time.monotonic() + 60
    while client.hlen(f"{{{prefix}:exact}}:neardup:exact:ids") < kept_before + 3:
        assert proc.poll() is None and time.monotonic() < deadline, "the crawl kept nothing"
        time.sleep(0.02)
    outage()
    result = crawl_runner.collect(proc, out)
    return result, json.loads(Path(f"{out}.stall").read_text())


def assert_reconciled(
    site, server: RedisServer, prefix: str, results: list[dict], least: int = 1
) -> None:
    """Every distinct document delivered by the two crawls; what the second let through
    during the outage and the first had kept is listed as late duplicates of it (at least
    ``least``); once those are cleaned from the output, each document is in it once."""
    late = summarize_redis(server.url, prefix)["late_duplicates"]
    assert len(late) == results[-1]["stats"].get("neardup/items/reconciled", 0) >= least

    def doc(key: str) -> str:
        return site.lookup(re.sub(r" \(fetch \d+\)$", "", key)).doc_id

    for d in late:
        assert doc(d["item"]) == doc(d["original"]), d
    delivered = Counter(doc(item["url"]) for r in results for item in r["kept"])
    assert set(delivered) == set(site.expected_unique_docs()), "a distinct document was lost"
    delivered.subtract(doc(d["item"]) for d in late)
    near = Counter(site.lookup(url).doc_id for url in site.near_copies())  # kept beside
    assert +delivered == Counter(site.expected_unique_docs()) + near


def assert_outage_handled(result: dict, stall: dict) -> None:
    stats, stderr = result["stats"], result["stderr"]
    assert stats["finish_reason"] == "finished"
    assert "Traceback" not in stderr, stderr[-4000:]
    assert stderr.count("is unavailable") == 1 and "is back" in stderr
    assert stats["neardup/redis/errors"] >= 1
    assert stats["neardup/urls/unchecked"] >= 1 and stats["neardup/items/unchecked"] >= 1
    assert stall["ticks"] > 100
    assert stall["longest"] < STALL_BOUND, stall


def test_crawl_through_a_stopped_redis(client, server, site, site_url, tmp_path) -> None:
    """Redis shut down for 2.5 s in the middle of a crawl, then started again on its port."""

    def outage() -> None:
        server.stop()
        time.sleep(2.5)
        server.start()

    first = first_crawl(server, site_url, tmp_path, "stop")
    result, stall = crawl_through_outage(server, client, site_url, tmp_path, "stop", outage)
    assert_outage_handled(result, stall)
    assert_reconciled(site, server, "stop", [first, result])


def test_crawl_through_a_hung_redis(client, server, site, site_url, tmp_path) -> None:
    """Redis frozen (SIGSTOP) for 3 s, longer than NEARDUP_REDIS_TIMEOUT, then SIGCONT."""

    def outage() -> None:
        server.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(3.0)
        finally:
            server.proc.send_signal(signal.SIGCONT)

    first = first_crawl(server, site_url, tmp_path, "hung")
    result, stall = crawl_through_outage(server, client, site_url, tmp_path, "hung", outage)
    assert_outage_handled(result, stall)
    # What passes unchecked while Redis hangs may all be new to the first crawl (which of
    # the site's pages arrive in those 3 s is the crawl's order): none to reconcile then.
    assert_reconciled(site, server, "hung", [first, result], least=0)


def main() -> None:
    """``python tests/test_redis_outage.py healthy|stopped|hung``: one crawl (as the tests
    above run it, without the first crawler) and its stall record, for the figures."""
    import tempfile

    from demo_site import build_site, serve

    mode = sys.argv[1] if len(sys.argv) > 1 else "healthy"
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp), appendonly=True) as srv:
        site_server, port = serve("127.0.0.1", 0, build_site())
        client = redis_client.connect(srv.url)

        def stopped() -> None:
            srv.stop()
            time.sleep(2.5)
            srv.start()

        def hung() -> None:
            srv.proc.send_signal(signal.SIGSTOP)
            time.sleep(3.0)
            srv.proc.send_signal(signal.SIGCONT)

        outage = {"healthy": lambda: None, "stopped": stopped, "hung": hung}[mode]
        url = f"http://127.0.0.1:{port}/"
        result, stall = crawl_through_outage(srv, client, url, Path(tmp), mode, outage)
        client.close()
        site_server.shutdown()
    stats = {k: v for k, v in result["stats"].items() if k.startswith("neardup/")}
    print(json.dumps({"mode": mode, "stall": stall, "stats": stats}, indent=1))


if __name__ == "__main__":
    main()
