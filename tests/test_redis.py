"""Redis storage against a real ``redis-server`` (tests/redis_server.py): no mocks.

One server for the module (append-only file on, fsync always, so a restart keeps what was
written); every test starts from an empty database. A missing ``redis-server`` fails the
tests (``.ci/run`` installs it); only the RedisBloom module path is skipped, for want of the
module.
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import crawl_runner
import pytest
from crawl_runner import ENV
from redis_server import RedisServer, redis_state
from scrapy.exceptions import DropItem

from corpus import synthetic_corpus
from corpus.text import letter_word
from scrapy_neardup.backends import make_backend
from scrapy_neardup.backends.base import Query
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.exceptions import ConfigError, StateError, StorageError
from scrapy_neardup.state.redis import STATE_CHECK_INTERVAL, RedisState
from scrapy_neardup.state.redis_outage import RETRY_INTERVAL
from scrapy_neardup.storage import redis_client, redis_index, redis_urls
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.text import Document
from scrapy_neardup.urls import url_fingerprint

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.timeout(120)

BACKENDS = ["simhash", "minhash", "spotsigs", "exact"]


def redis_dedup(client, prefix: str, method: str, **params) -> Deduplicator:
    m = make_backend(method, **params)
    return Deduplicator(
        m,
        min_tokens=20,
        stores=lambda name, codec: redis_index.RedisBucketStore(client, prefix, name, codec),
    )


# -- content indexes ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_redis_index_decides_as_the_memory_index(client, backend) -> None:
    corpus = synthetic_corpus()
    docs = [*corpus.originals, *corpus.variants][:120]
    random.Random(1).shuffle(docs)
    in_redis = redis_dedup(client, "p", backend)
    in_memory = Deduplicator(make_backend(backend), min_tokens=20)
    for doc in docs:
        assert in_redis.check(doc.key, doc.text) == in_memory.check(doc.key, doc.text), doc.key
    assert len(in_redis) == len(in_memory)
    assert (
        dict(in_redis.near.store.items() if in_redis.near else {}).keys()
        == dict(in_memory.near.store.items() if in_memory.near else {}).keys()
    )


def test_signatures_are_the_methods_bytes_not_pickles(client) -> None:
    dedup = redis_dedup(client, "p", "minhash")
    text = " ".join(f"word{i}" for i in range(100))
    dedup.check("doc-a", text)
    (raw,) = client.hvals("{p:minhash}:neardup:minhash:docs")
    signature = dedup.near.method.signature(Document(text))
    assert raw == redis_index._pack_doc("doc-a", dedup.near.method.encode(signature))
    assert not raw.startswith(b"\x80")  # no pickle protocol header
    assert {k.decode() for k in client.keys("*")} >= {
        "{p:minhash}:neardup:minhash:docs",  # an index's keys share a hash tag (Redis Cluster)
        "{p:minhash}:neardup:minhash:ids",
        "{p:exact}:neardup:exact:docs",
    }
    assert all(redis_client.owned(k.decode(), "p") for k in client.keys("*"))


def _variants(n_bases: int, n_copies: int, seed: int) -> list[list[str]]:
    """Groups of near-identical texts (one word of 150 changed each); groups are unrelated."""
    rng = random.Random(seed)
    groups = []
    for _ in range(n_bases):
        base = [letter_word(rng.randrange(20000)) for _ in range(150)]
        copies = []
        for c in range(n_copies):
            words = list(base)
            words[(c * 37) % 150] = letter_word(rng.randrange(10**6), "edit")
            copies.append(" ".join(words))
        groups.append(copies)
    return groups


def _hammer(
    url: str, prefix: str, backend: str, store_cls=redis_index.RedisBucketStore, threads: int = 6
):
    """``threads`` writers, each with its own copy of every group, all at the same group at the
    same moment. Returns the kept keys, the verdicts and one method to compare signatures."""
    method = make_backend(backend)
    groups = _variants(40, threads, seed=3)
    if backend == "exact":  # exact matching needs identical copies
        groups = [[g[0]] * threads for g in groups]
    signer = Deduplicator(make_backend(backend), min_tokens=20)
    signed = [[signer.sign(text) for text in g] for g in groups]
    barrier = threading.Barrier(threads)
    verdicts: list[list] = [[] for _ in range(threads)]

    def writer(t: int) -> None:
        c = redis_client.connect(url)
        dedup = Deduplicator(
            method,
            min_tokens=20,
            stores=lambda name, codec: store_cls(c, prefix, name, codec),
        )
        for g, group in enumerate(signed):
            barrier.wait()
            verdicts[t].append(dedup.check_signed(f"g{g}/t{t}", group[t]))
        c.close()

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    signatures = {f"g{g}/t{t}": signed[g][t] for g in range(len(groups)) for t in range(threads)}
    checker = method if signer.near is None else signer.near.method  # what the engine verifies
    return [v for vs in verdicts for v in vs], signatures, checker, len(groups)


def _pairs_kept_together(verdicts, signatures, method) -> list[tuple[str, str, float]]:
    kept = [v.key for v in verdicts if not v.is_duplicate]
    near = (
        # a copy both ways (one holding more than the other is rightly kept beside it)
        (lambda a, b: method.similarity(a.near, b.near) and method.similarity(b.near, a.near))
        if method.name != "exact"
        else (lambda a, b: 1.0 if a.exact == b.exact else None)
    )
    out = []
    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            sa, sb = signatures[a], signatures[b]
            exact_same = sa.exact == sb.exact
            sim = near(sa, sb) if sa.near is not None or method.name == "exact" else None
            if exact_same or sim is not None:
                out.append((a, b, 1.0 if exact_same else sim))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_writers_never_both_keep_near_duplicates(client, server, backend) -> None:
    verdicts, signatures, method, n_groups = _hammer(server.url, "h", backend)
    assert len(verdicts) == n_groups * 6
    assert _pairs_kept_together(verdicts, signatures, method) == []
    kept_groups = Counter(v.key.split("/")[0] for v in verdicts if not v.is_duplicate)
    assert set(kept_groups) == {f"g{g}" for g in range(n_groups)}, "a distinct text was lost"
    for v in verdicts:
        if v.is_duplicate:  # the original named is a kept copy of the same group
            assert v.duplicate_of.split("/")[0] == v.key.split("/")[0]
            assert not next(x for x in verdicts if x.key == v.duplicate_of).is_duplicate


class NonAtomicStore(redis_index.RedisBucketStore):
    """Query, then add: what the optimistic script exists to prevent."""

    def query_and_add(self, key, query):
        found = self.query(query)
        time.sleep(0.002)
        if not found:
            self.add(key, query.signature, query.buckets)
        return found


def test_the_hammer_catches_a_store_that_is_not_atomic(client, server) -> None:
    """The concurrency test above can fail: a query-then-add store keeps duplicates in it."""
    verdicts, signatures, method, _ = _hammer(server.url, "n", "minhash", store_cls=NonAtomicStore)
    assert len(_pairs_kept_together(verdicts, signatures, method)) > 10


def test_probe_watches_only_the_least_filled_buckets(client) -> None:
    """``probe`` (SpotSigs' prefix rule) reads the least filled buckets and still adds to all."""
    store = redis_index.RedisBucketStore(client, "p", "x", make_backend("simhash"))
    verify = lambda _key, other: 1.0 if other == 7 else None  # noqa: E731
    assert store.query_and_add("a", Query(7, [1, 2, 3], verify)) == []
    assert store.query_and_add("b", Query(8, [1, 4, 5], verify, probe=2)) == []  # 1 is the fullest
    assert store.query(Query(7, [1, 4, 5], verify)) == [("a", 1.0)]
    assert store.query(Query(7, [9, 4, 5], verify, probe=2)) == []
    assert len(store) == 2 and "a" in store and "zz" not in store


# -- URL filter --------------------------------------------------------------------------------


def test_bloom_in_redis_grows_by_stages_over_several_keys(client) -> None:
    urls = [url_fingerprint(f"https://example.com/page/{i}") for i in range(3000)]
    bloom = redis_urls.RedisBloomFilter(client, "u", 500, 0.001, chunk_bits=4096)
    assert bloom.add_many(urls[:2000]).count(True) <= 3  # false positives only
    for fp in urls[2000:]:
        bloom.add(fp)
    assert all(bloom.add_many(urls))
    assert bloom.stages == 3 and len(bloom) >= 2995  # 500 + 1000 + 2000
    bitmaps = [k for k in client.keys("{u:urls}:neardup:urls:*")]
    assert len(bitmaps) > 4 and all(client.strlen(k) <= 4096 // 8 for k in bitmaps)
    unseen = [url_fingerprint(f"https://example.com/other/{i}") for i in range(5000)]
    false_positives = sum(fp in bloom for fp in unseen)
    assert false_positives <= 5000 * 0.001 * 4
    memory = ScalableBloomFilter(500, 0.001)
    for fp in urls:
        memory.add(fp)
    assert bloom.size_in_bytes == pytest.approx(memory.size_in_bytes, rel=0.01)
    info = bloom.info()
    assert info["stages"] == memory.stages == 3 and 0 < info["expected_false_positive_rate"] < 0.001


def test_bloom_test_and_set_is_atomic_across_writers(client, server) -> None:
    urls = [url_fingerprint(f"https://example.com/{i}") for i in range(2000)]
    new_counts: Counter[bytes] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def writer(seed: int) -> None:
        c = redis_client.connect(server.url, retries=0)
        bloom = redis_urls.RedisBloomFilter(c, "a", 500, 1e-6)
        order = list(urls)
        random.Random(seed).shuffle(order)
        barrier.wait()
        for start in range(0, len(order), 50):
            batch = order[start : start + 50]
            for fp, seen in zip(batch, bloom.add_many(batch), strict=True):
                if not seen:
                    with lock:
                        new_counts[fp] += 1
        c.close()

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert max(new_counts.values()) == 1, "a URL was new to two writers"
    assert len(new_counts) >= 1998  # every URL recorded once (but for a false positive)
    assert int(client.hget("{a:urls}:neardup:urls", "count")) == len(new_counts)


def test_redisbloom_module_path(client) -> None:
    if not redis_urls.has_bloom_module(client):
        pytest.skip("this redis-server has no RedisBloom module (Debian's has none)")
    bloom = redis_urls.RedisBloomModuleFilter(client, "m", 1000, 0.001)
    fps = [url_fingerprint(f"https://example.com/{i}") for i in range(100)]
    assert not any(bloom.add_many(fps)) and all(bloom.add_many(fps)) and len(bloom) == 100


# -- state: settings, meta, outages ---------------------------------------------------------


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigError, match="NEARDUP_REDIS_URL"):
        NearDupConfig.from_settings({"NEARDUP_REDIS_URL": "localhost:6379"})
    with pytest.raises(ConfigError, match="NEARDUP_REDIS_ON_ERROR"):
        NearDupConfig.from_settings({"NEARDUP_REDIS_ON_ERROR": "ignore"})
    with pytest.raises(ConfigError, match="NEARDUP_KEY_PREFIX"):
        NearDupConfig.from_settings({"NEARDUP_KEY_PREFIX": ""})
    c = NearDupConfig.from_settings({"NEARDUP_STORAGE": "Redis"})
    assert (c.storage, c.redis_url, c.key_prefix, c.redis_on_error) == (
        "redis",
        "redis://localhost:6379/0",
        None,
        "fail-open",
    )
    with pytest.raises(ConfigError, match="NEARDUP_KEY_PREFIX"):
        RedisState(c)  # no prefix and no spider to take the name of


def test_other_method_parameters_are_refused(client, server) -> None:
    state, _ = redis_state(server, "m", NEARDUP_BACKEND="simhash", NEARDUP_SIMHASH_K=3)
    state.close()
    with pytest.raises(StateError, match=r"'k': 3.*configured params=.*'k': 4"):
        redis_state(server, "m", NEARDUP_BACKEND="simhash", NEARDUP_SIMHASH_K=4)
    with pytest.raises(StateError, match="capacity"):
        redis_state(
            server, "m", NEARDUP_BACKEND="simhash", NEARDUP_SIMHASH_K=3, NEARDUP_BLOOM_CAPACITY=5
        )
    other, _ = redis_state(server, "m2", NEARDUP_BACKEND="simhash", NEARDUP_SIMHASH_K=4)
    other.close()


@pytest.mark.parametrize(
    ("setting", "value", "other"),
    [
        ("NEARDUP_STRIP_PARAMS", ["utm_*"], ["utm_*", "ref"]),
        ("NEARDUP_STRIP_TRAILING_SLASH", True, False),
        ("NEARDUP_EXTRACT_FAST", True, False),
        ("NEARDUP_MAX_TEXT_CHARS", 500_000, 100_000),
    ],
)
def test_settings_that_change_what_a_prefix_holds_are_refused(
    client, server, setting, value, other
) -> None:
    """URL keys (the parameters stripped, the trailing slash), the text signed (fast mode, its
    length) and the decision (boilerplate) are recorded under the prefix, as the method's
    parameters are: a crawler with other values refuses to start, naming the setting."""
    state, _ = redis_state(server, "set", **{setting: value})
    state.close()
    with pytest.raises(StateError, match=rf"written with {setting}=.*configured {setting}="):
        redis_state(server, "set", **{setting: other})
    same, _ = redis_state(server, "set", **{setting: value})
    same.close()


def test_a_redis_restarted_empty_mid_crawl_is_warned_of(tmp_path, caplog) -> None:
    """Redis restarts without persistence (the client reconnects at once: no outage): the
    crawl says what Redis lost within STATE_CHECK_INTERVAL, and records its parameters
    again."""
    with RedisServer(tmp_path / "volatile") as volatile:
        state, _ = redis_state(volatile, "gone")
        try:
            assert not state.url_seen("https://example.com/1")
            volatile.stop()
            volatile.start()
            deadline = time.monotonic() + STATE_CHECK_INTERVAL + 10
            n = 2
            while not any("lost the crawl" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "not said"
                state.url_seen(f"https://example.com/{n}")
                n += 1
                time.sleep(0.1)
            lost = [r for r in caplog.records if "lost the crawl's state" in r.getMessage()]
            assert len(lost) == 1 and lost[0].levelno == logging.WARNING
            assert "{gone}" in lost[0].getMessage()
            meta = redis_client.connect(volatile.url).hgetall("{gone}:neardup:meta")
            assert {b"format", b"content", b"crawl", b"urls"} <= set(meta)
        finally:
            state.close()


def test_a_crawl_resumed_on_a_redis_that_lost_its_state_is_warned_of(
    client, server, tmp_path, caplog
) -> None:
    """JOBDIR shows that the crawl ran before (Scrapy's queue is there), but Redis holds
    nothing under its prefix: said at start. Not for a first run, nor on a Redis that kept
    the prefix."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from scrapy_neardup.state import NearDupState

    class Resumed(Spider):
        name = "resumed"

    def open_state(jobdir: Path) -> None:
        settings = {
            "JOBDIR": str(jobdir),
            "NEARDUP_STORAGE": "redis",
            "NEARDUP_REDIS_URL": server.url,
            "NEARDUP_WORKERS": 0,
        }
        NearDupState.from_crawler(get_crawler(Resumed, settings_dict=settings)).close()

    def warned() -> int:
        return sum("holds nothing under {resumed}" in r.getMessage() for r in caplog.records)

    open_state(tmp_path / "first-run")
    assert warned() == 0
    resumed = tmp_path / "resumed"
    (resumed / "requests.queue").mkdir(parents=True)
    open_state(resumed)  # the prefix is there: nothing to say
    assert warned() == 0
    client.flushdb()
    open_state(resumed)
    assert warned() == 1


def test_reset_deletes_one_crawl_and_only_it(client) -> None:
    for prefix in ("a*", "ab", "a", "a:b", "a:urls"):
        redis_dedup(client, prefix, "simhash").check("k", " ".join(f"x{i}" for i in range(40)))
        client.hset(f"{{{prefix}}}:neardup:meta", "format", "2")
    client.set("a:other", "1")
    client.set("a:neardup:urls", "a key of format 1")
    before = client.dbsize()
    deleted = redis_client.delete_prefix(client, "a*")
    assert deleted > 5 and client.dbsize() == before - deleted
    assert not [k for k in client.keys("*") if k.startswith(b"{a*")]
    deleted = redis_client.delete_prefix(client, "a")
    left = {k.decode() for k in client.keys("*")}
    assert "a:other" in left and "a:neardup:urls" not in left  # format 1 keys go too
    others = ("ab", "a:b", "a:urls")  # prefixes that start with "a": not its keys
    for prefix in others:
        assert any(redis_client.owned(k, prefix) for k in left)
    assert all(any(redis_client.owned(k, p) for p in others) for k in left if k[0] == "{")
    assert redis_client.find_prefixes(client) == ["a:b", "a:urls", "ab"]


def test_keys_of_format_1_stop_a_crawl_with_what_to_do(client) -> None:
    client.hset("old:neardup:meta", "format", "1")
    with pytest.raises(StateError, match=r"format 1.*--reset"):
        redis_client.check_meta(client, "old", "urls", {})


def test_a_cluster_is_asked_for_in_the_url() -> None:
    url, cluster = redis_client.cluster_url("redis://h:7000/0?cluster=true&ssl_cert_reqs=none")
    assert cluster and url == "redis://h:7000/0?ssl_cert_reqs=none"
    assert redis_client.cluster_url("redis://h:6379/1") == ("redis://h:6379/1", False)
    assert redis_client.cluster_url("redis://h/?cluster=no")[1] is False
    with pytest.raises(StateError, match="cluster must be true or false"):
        redis_client.cluster_url("redis://h/?cluster=maybe")


TEXT_A = " ".join(f"alpha{i}" for i in range(60))
TEXT_B = " ".join(f"beta{i}" for i in range(60))


def test_restart_loses_nothing_and_an_outage_fails_open(client, server, caplog) -> None:
    caplog.set_level(logging.INFO, "scrapy_neardup")
    state, stats = redis_state(server, "r")
    first = [f"https://example.com/{i}" for i in range(50)]
    assert not any(state.url_seen(u) for u in first)
    assert not state.dedup.check_signed("a", state.dedup.sign(TEXT_A)).is_duplicate

    server.stop()
    during = [f"https://example.com/during/{i}" for i in range(20)]
    assert not any(state.url_seen(u) for u in during)  # crawled, not lost
    verdict = state.dedup.check_signed("b", state.dedup.sign(TEXT_B))
    assert not verdict.is_duplicate  # kept, unchecked
    assert all(state.url_seen(u) for u in first[:5] + during)  # this process knows them
    assert state.dedup.check_signed("b1", state.dedup.sign(TEXT_B)).duplicate_of == "b"
    assert stats.values["neardup/urls/unchecked"] == 20
    assert stats.values["neardup/items/unchecked"] == 1
    assert 1 <= stats.values["neardup/redis/errors"] <= 2  # then no calls until RETRY_INTERVAL
    outage_logs = [r for r in caplog.records if "is unavailable" in r.getMessage()]
    assert len(outage_logs) == 1 and outage_logs[0].levelno == logging.WARNING
    assert "fail-open" in outage_logs[0].getMessage()

    server.start()
    time.sleep(RETRY_INTERVAL + 0.1)
    assert all(state.url_seen(u) for u in first)  # recorded before the restart: still there
    assert all(state.url_seen(u) for u in during)  # met during the outage: written on return
    assert state.dedup.check_signed("a2", state.dedup.sign(TEXT_A)).duplicate_of == "a"
    assert state.dedup.check_signed("b2", state.dedup.sign(TEXT_B)).duplicate_of == "b"
    assert any("is back" in r.getMessage() for r in caplog.records)
    state.close()
    assert stats.values["neardup/documents/indexed"] == 2


def test_an_outage_fails_closed_when_asked(client, server, caplog) -> None:
    state, stats = redis_state(server, "c", NEARDUP_REDIS_ON_ERROR="fail-closed")
    assert not state.url_seen("https://example.com/1")
    server.stop()
    try:
        assert state.url_seen("https://example.com/2")  # not let through unchecked
        with pytest.raises(DropItem, match="fail-closed"):
            state.dedup.check_signed("a", state.dedup.sign(TEXT_A))
        assert stats.values["neardup/items/unchecked"] == 1
        assert any(
            r.levelno == logging.ERROR and "stopping the crawl" in r.getMessage()
            for r in caplog.records
        )
        with pytest.raises(StorageError, match="NEARDUP_REDIS_URL='redis://"):
            redis_state(server, "c", NEARDUP_REDIS_ON_ERROR="fail-closed")
    finally:
        server.start()
    state.close()


# -- real crawls -------------------------------------------------------------------------------


STATS_CMD = [sys.executable, "-m", "scrapy", "neardup-stats"]


#: What every crawl of these tests runs with, unless a test says otherwise.
CRAWL_DEFAULTS = {"LOG_LEVEL": "WARNING", "NEARDUP_WORKERS": 1}


def start_crawl(start_url: str, out: Path, **settings: object) -> subprocess.Popen:
    return crawl_runner.launch(start_url, out, {**CRAWL_DEFAULTS, **settings})


def finish(proc: subprocess.Popen, out: Path) -> dict:
    return crawl_runner.collect(proc, out)


def redis_settings(server: RedisServer, prefix: str, **extra: object) -> dict:
    return {
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_KEY_PREFIX": prefix,
        **extra,
    }


def test_two_crawlers_share_one_redis(client, server, site, site_url, tmp_path) -> None:
    """Two processes start from different pages of one site and race through the same links:
    together they keep every distinct document exactly once, each URL once, and drop only
    true copies."""
    settings = redis_settings(server, "two", NEARDUP_BACKEND="minhash", DOWNLOAD_DELAY=0.01)
    procs = crawl_runner.launch_two(site_url, tmp_path, {**CRAWL_DEFAULTS, **settings})
    results = [finish(proc, out) for proc, out in procs]

    crawl_runner.assert_each_document_once(site, results)
    kept = [item for r in results for item in r["kept"]]
    assert len({item["url"] for item in kept}) == len(kept)
    for r in results:
        assert "Traceback" not in r["stderr"]
        assert r["stats"]["neardup/items/kept"] > 0  # both did real work
        assert "neardup/redis/errors" not in r["stats"]
    # The shared URL filter split the pages: together, each page was fetched about once.
    fetched = sum(r["stats"].get("response_received_count", 0) for r in results)
    assert fetched < len(site.pages) + 20

    stats = subprocess.run(
        [*STATS_CMD, "--json", "--redis-url", server.url, "--key-prefix", "two"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=60,
    )
    assert stats.returncode == 0, stats.stderr
    summary = json.loads(stats.stdout)
    assert summary["content"]["documents_indexed"] == 54 + 12  # and the near copies
    assert summary["content"]["duplicates"] == sum(len(r["dropped"]) for r in results) == 12
    assert summary["content"]["method"] == "minhash" and summary["urls"]["seen"] >= 100
    assert summary["content"]["clusters"] > 0 and summary["content"]["largest_clusters"]

    reset = subprocess.run(
        [*STATS_CMD, "--redis-url", server.url, "--key-prefix", "two", "--reset"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=60,
    )
    assert reset.returncode == 0 and "deleted" in reset.stdout, reset.stderr
    assert not client.keys("*two*")


def test_a_pages_links_are_checked_in_one_round_trip(
    client, server, site, site_url, tmp_path
) -> None:
    """LinkBatchMiddleware: the links a page yields are test-and-set in Redis in one script
    call, and the scheduler still filters, logs and counts what Redis knew (one call per
    request would take more script calls than there are requests)."""
    client.config_resetstat()
    out = tmp_path / "batch.json"
    result = finish(start_crawl(site_url, out, **redis_settings(server, "batch")), out)
    stats = result["stats"]
    crawl_runner.assert_each_document_once(site, [result])
    assert "Traceback" not in result["stderr"]
    checked = stats["scheduler/enqueued"] + stats["dupefilter/filtered"]
    assert stats["dupefilter/filtered"] == stats["neardup/urls/filtered"] > 1000
    assert stats["neardup/urls/batched"] >= 0.9 * checked
    # Every script call of the crawl (URL batches, and the content checks of 78 items).
    calls = client.info("commandstats")["cmdstat_evalsha"]["calls"]
    assert calls < checked / 3, (calls, checked)
    assert stats["response_received_count"] <= len(site.pages) + 5  # each page fetched once


def _wait_for_urls(client, prefix: str, at_least: int, proc: subprocess.Popen) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        count = int(client.hget(f"{{{prefix}:urls}}:neardup:urls", "count") or 0)
        if count >= at_least:
            return count
        time.sleep(0.02)
    raise AssertionError("the crawl did not record URLs in Redis")


def test_crawl_survives_a_redis_restart(client, server, site, site_url, tmp_path) -> None:
    slow = {"CONCURRENT_REQUESTS": 2, "DOWNLOAD_DELAY": 0.04}
    proc = start_crawl(site_url, tmp_path / "r.json", **redis_settings(server, "rs", **slow))
    before = _wait_for_urls(client, "rs", 25, proc)
    server.stop()
    time.sleep(1.5)
    server.start()
    result = finish(proc, tmp_path / "r.json")
    stats = result["stats"]
    assert stats["finish_reason"] == "finished"
    ids = Counter(site.lookup(item["url"]).doc_id for item in result["kept"])
    assert set(ids) == set(site.expected_unique_docs()), "a distinct document was lost"
    assert stats["neardup/redis/errors"] >= 1 and stats["neardup/urls/unchecked"] >= 1
    assert result["stderr"].count("is unavailable") == 1
    assert "is back" in result["stderr"]
    assert "Traceback" not in result["stderr"]
    after = redis_client.connect(server.url)
    assert int(after.hget("{rs:urls}:neardup:urls", "count")) >= before  # nothing recorded was lost
    after.close()


def test_crawl_stops_when_redis_goes_away_and_fail_closed(
    client, server, site_url, tmp_path
) -> None:
    slow = {"CONCURRENT_REQUESTS": 2, "DOWNLOAD_DELAY": 0.04}
    settings = redis_settings(server, "fc", NEARDUP_REDIS_ON_ERROR="fail-closed", **slow)
    proc = start_crawl(site_url, tmp_path / "c.json", **settings)
    _wait_for_urls(client, "fc", 10, proc)
    server.stop()
    try:
        result = finish(proc, tmp_path / "c.json")
    finally:
        server.start()
    assert result["stats"]["finish_reason"] == "neardup_redis_unavailable"
    assert result["stderr"].count("is unavailable") == 1
    assert len(result["kept"]) < 54
