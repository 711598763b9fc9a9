"""The Redis state on a real Redis Cluster: three ``redis-server --cluster-enabled yes``
masters joined by ``redis-cli --cluster create``, started here and stopped after.

Every script and transaction must touch one slot: the keys of the URL filter, of each index
and of the crawl's records each share a hash tag (storage/redis_client.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import crawl_runner
import pytest
from crawl_runner import ENV
from redis_server import RedisClusterServers, redis_state

from scrapy_neardup.storage import redis_client

STATS_CMD = [sys.executable, "-m", "scrapy", "neardup-stats"]
TEXT = " ".join(f"alpha{i} beta{i % 7} gamma{i % 11}" for i in range(80))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[RedisClusterServers]:
    with RedisClusterServers(tmp_path_factory.mktemp("cluster")) as servers:
        yield servers


def slot_of(client, key: bytes) -> int:
    return int(client.cluster_keyslot(key))


def test_one_crawl_spreads_its_parts_each_in_one_slot(cluster) -> None:
    state, _ = redis_state(cluster, "spread", NEARDUP_BACKEND="minhash")
    assert not state.url_seen("https://example.com/a")
    assert state.url_seen("https://example.com/a")
    sign = state.dedup.sign
    assert not state._check_blocking("https://example.com/a", sign(TEXT)).is_duplicate
    verdict = state._check_blocking("https://example.com/b", sign(TEXT + " and one more"))
    assert verdict.duplicate_of == "https://example.com/a"
    state.close()

    client = redis_client.connect(cluster.url)
    keys = [k for k in client.scan_iter(match="*", count=1000) if b"spread" in k]
    slots: dict[bytes, set[int]] = {}
    for key in keys:
        slots.setdefault(key.split(b"}")[0] + b"}", set()).add(slot_of(client, key))
    assert set(slots) == {b"{spread}", b"{spread:urls}", b"{spread:exact}", b"{spread:minhash}"}
    assert all(len(found) == 1 for found in slots.values())  # a part: one slot
    nodes = {client.get_node_from_key(key).name for key in keys}
    assert len(nodes) >= 2  # the parts of one crawl are not all on one node

    summary = json.loads(
        subprocess.run(
            [*STATS_CMD, "--json", "--redis-url", cluster.url, "--key-prefix", "spread"],
            capture_output=True,
            text=True,
            env=ENV,
            timeout=60,
            check=True,
        ).stdout
    )
    assert summary["content"]["documents_indexed"] == 1
    assert summary["content"]["duplicates"] == 1
    assert redis_client.find_prefixes(client) == ["spread"]
    assert redis_client.delete_prefix(client, "spread") == len(keys)
    assert not [k for k in client.scan_iter(match="*", count=1000) if b"spread" in k]


def test_two_crawlers_share_one_cluster(cluster, site, site_url, tmp_path) -> None:
    """As tests/test_redis.py's two crawlers on one Redis: together they keep every distinct
    document exactly once and drop only true copies, their state spread over the cluster."""
    settings = {
        "LOG_LEVEL": "WARNING",
        "NEARDUP_WORKERS": 1,
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": cluster.url,
        "NEARDUP_KEY_PREFIX": "two",
        "NEARDUP_BACKEND": "minhash",
        "DOWNLOAD_DELAY": 0.01,
    }
    procs = crawl_runner.launch_two(site_url, tmp_path, settings)
    results = [crawl_runner.collect(proc, out) for proc, out in procs]

    crawl_runner.assert_each_document_once(site, results)
    for r in results:
        assert "Traceback" not in r["stderr"]
        assert r["stats"]["neardup/items/kept"] > 0  # both did real work
        assert "neardup/redis/errors" not in r["stats"]
    fetched = sum(r["stats"].get("response_received_count", 0) for r in results)
    assert fetched < len(site.pages) + 20  # the shared URL filter split the pages
