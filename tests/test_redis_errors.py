"""Redis that answers with an error: every error reply is an outage or a refusal, never an
exception that drops requests or items.

A real ``redis-server`` (tests/redis_server.py) filled mid-crawl (``CONFIG SET maxmemory``
below what it holds, ``noeviction``: every write is answered ``OOM``), started full or as a
read-only replica, or holding a key of another type or a record another client wrote; the
demo site on loopback; crawls in processes of their own, as ``scrapy crawl`` or
tests/crawl_runner.py runs them.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import crawl_runner
import pytest
from redis_server import RedisServer, redis_state
from test_faults import NOISE, closed_port, finish, scrapy_crawl, stats_value
from test_scrapy_redis import rel_canonical

from scrapy_neardup.urls import canonical_url

pytestmark = pytest.mark.timeout(240)

#: What an exception that escaped into Scrapy looks like in a crawl's log.
ESCAPED = (*NOISE, "Error processing", "Error caught on signal handler", "StateError")

SLOW = {"CONCURRENT_REQUESTS": 2, "DOWNLOAD_DELAY": 0.08}
#: The URL of an item "Dropped: not checked" (Scrapy logs the item on the next line).
UNCHECKED = re.compile(r"Dropped: not checked for near-duplicates[^\n]*\n\{'url': '([^']+)'")
#: The URL of a page fetched (Scrapy's DEBUG line).
CRAWLED = re.compile(r"Crawled \(200\) <GET ([^ >]+)>")
#: The URL of every response downloaded (redirects: their first URL).
FETCHED = re.compile(
    r"(?:Crawled \(\d+\) <GET |Redirecting \(\d+\) to <GET \S+> from <GET )([^ >]+)>"
)


@pytest.fixture
def noeviction(client):
    """The module's server under ``noeviction``; its ``maxmemory`` lifted again after."""
    client.config_set("maxmemory-policy", "noeviction")
    yield client
    client.config_set("maxmemory", 0)


def fill(client) -> None:
    """Redis is full from now on: ``maxmemory`` below what it holds; every write (a script
    that may write, HSET, ...) is answered ``OOM command not allowed``."""
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used // 2)


def wait_kept(client, prefix: str, count: int, proc) -> None:
    deadline = time.monotonic() + 60
    while client.hlen(f"{{{prefix}:exact}}:neardup:exact:ids") < count:
        assert proc.poll() is None and time.monotonic() < deadline, "the crawl kept nothing"
        time.sleep(0.02)


def doc_ids(site, items: list[dict]) -> Counter:
    return Counter(site.lookup(item["url"]).doc_id for item in items)


def feed_setting(name: str) -> str:
    """``FEEDS`` naming one JSON-lines file (the project's own feed is overwritten)."""
    return "FEEDS=" + json.dumps({name: {"format": "jsonlines"}})


def assert_nothing_escaped(stderr: str) -> None:
    for noise in ESCAPED:
        assert noise not in stderr, stderr[-4000:]


def test_redis_full_mid_crawl_fail_open_delivers_every_document(
    noeviction, server, site, site_url, tmp_path
) -> None:
    """fail-open: from the moment Redis is full, URLs and items are let through unchecked
    (counted as errors): every document of the site is delivered, the crawl finishes."""
    out = tmp_path / "oom.json"
    settings = {
        "LOG_LEVEL": "WARNING",
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_KEY_PREFIX": "oom",
        "NEARDUP_REDIS_TIMEOUT": 1.0,
        "NEARDUP_WORKERS": 1,
        **SLOW,
    }
    proc = crawl_runner.launch(site_url, out, settings)
    wait_kept(noeviction, "oom", 3, proc)
    fill(noeviction)
    result = crawl_runner.collect(proc, out)
    stats, stderr = result["stats"], result["stderr"]
    assert stats["finish_reason"] == "finished"
    assert_nothing_escaped(stderr)
    assert set(doc_ids(site, result["kept"])) == set(site.expected_unique_docs())
    assert stderr.count("answered with an error (OutOfMemoryError: ") == 1, stderr[-4000:]
    assert stats["neardup/redis/errors"] >= 1
    assert stats["neardup/urls/unchecked"] >= 1 and stats["neardup/items/unchecked"] >= 1
    assert "was not back before the crawl ended" in stderr


def test_redis_full_mid_crawl_fail_closed_stops_and_the_same_command_fetches_the_rest(
    noeviction, server, site, site_url, tmp_path
) -> None:
    """fail-closed: Redis full mid-crawl stops the crawl with its own finish reason and exit
    status 1, without a traceback; once Redis has room again, the same command (JOBDIR)
    fetches what the first run left, the pages of its items dropped unchecked too: every
    document is in one of the two feeds."""
    command = [
        site_url,
        f"JOBDIR={tmp_path / 'job'}",
        "NEARDUP_STORAGE=redis",
        f"NEARDUP_REDIS_URL={server.url}",
        "NEARDUP_KEY_PREFIX=oomc",
        "NEARDUP_REDIS_ON_ERROR=fail-closed",
        "NEARDUP_REDIS_TIMEOUT=1",
        "NEARDUP_KEEP_TEXT=0",
        "CONCURRENT_REQUESTS=8",
        "DOWNLOAD_DELAY=0.02",
    ]
    first = scrapy_crawl(tmp_path, *command, feed_setting("first.jsonl"), "LOG_LEVEL=DEBUG")
    wait_kept(noeviction, "oomc", 5, first)
    fill(noeviction)
    stderr = first_log = finish(first)
    assert first.returncode == 1, stderr[-4000:]
    assert stats_value(stderr, "finish_reason") == "neardup_redis_unavailable", stderr[-4000:]
    assert_nothing_escaped(stderr)
    assert "answered with an error (OutOfMemoryError: " in stderr
    unchecked = UNCHECKED.findall(stderr)
    assert unchecked, stderr[-4000:]  # items in flight when Redis filled up

    noeviction.config_set("maxmemory", 0)
    second = scrapy_crawl(tmp_path, *command, feed_setting("second.jsonl"), "LOG_LEVEL=DEBUG")
    stderr = finish(second)
    assert second.returncode == 0, stderr[-4000:]
    assert stats_value(stderr, "finish_reason") == "finished"
    assert_nothing_escaped(stderr)
    crawled = set(CRAWLED.findall(stderr))
    assert set(unchecked) <= crawled, set(unchecked) - crawled  # their pages, fetched again
    # Every page of the site fetched by one of the two runs (an AMP view and the article its
    # rel=canonical names count as one: whichever comes second is dropped by the downloader
    # middleware, unlogged): the links met while the crawl stopped waited in Scrapy's queue.
    fetched = {canonical_url(url) for url in FETCHED.findall(first_log + stderr)}
    base = site_url.rstrip("/")
    amp = {canonical_url(base + e.url): canonical_url(base + e.of) for e in rel_canonical(site)}
    fetched |= {view for view, article in amp.items() if article in fetched}
    fetched |= {amp[view] for view in fetched & amp.keys()}
    missing = {canonical_url(base + url) for url in site.truth} - fetched
    assert not missing, missing
    items = [
        json.loads(line)
        for name in ("first.jsonl", "second.jsonl")
        for line in (tmp_path / name).read_text().splitlines()
        if line.strip()
    ]
    assert set(doc_ids(site, items)) == set(site.expected_unique_docs())


# -- at start ----------------------------------------------------------------------------


def refused_start(tmp_path: Path, redis_url: str) -> tuple[str, str]:
    """A crawl on ``redis_url`` that must not start: (its one "cannot start" line, stderr)."""
    proc = scrapy_crawl(
        tmp_path,
        f"http://127.0.0.1:{closed_port()}/",
        "NEARDUP_STORAGE=redis",
        f"NEARDUP_REDIS_URL={redis_url}",
        "NEARDUP_REDIS_TIMEOUT=0.5",
    )
    stderr = finish(proc)
    assert proc.returncode == 1, stderr[-3000:]
    (line,) = [line for line in stderr.splitlines() if "the crawl cannot start" in line]
    return line, stderr


def test_a_full_redis_at_start_stops_the_start_naming_it(noeviction, server, tmp_path) -> None:
    noeviction.config_set("maxmemory", 1)
    line, stderr = refused_start(tmp_path, server.url)
    assert "Redis refuses the crawl's calls (OutOfMemoryError: command not allowed" in line, line
    assert "raise maxmemory or free memory" in line
    for noise in NOISE:
        assert noise not in stderr, stderr[-3000:]


def test_a_read_only_redis_at_start_stops_the_start_naming_it(tmp_path) -> None:
    """A replica (of a primary that is gone: it stays a read-only replica)."""
    replica = RedisServer(tmp_path / "replica", extra=("--replicaof", "127.0.0.1", "1"))
    with replica:
        line, _ = refused_start(tmp_path, replica.url)
    assert "Redis refuses the crawl's calls (ReadOnlyError:" in line, line
    assert "use the primary's URL" in line


def test_redis_that_evicts_any_key_is_warned_of(noeviction, server, caplog) -> None:
    noeviction.config_set("maxmemory", 1 << 30)
    noeviction.config_set("maxmemory-policy", "allkeys-lru")
    state, _ = redis_state(server, "lru")
    state.close()
    (warning,) = [r.getMessage() for r in caplog.records if "may evict" in r.getMessage()]
    assert "maxmemory-policy allkeys-lru" in warning and "use noeviction" in warning


# -- a key of another type, a record another client wrote ---------------------------------


def text(name: str, edit: int | None = None) -> str:
    words = [f"{name}{i}" for i in range(80)]
    if edit is not None:
        words[edit] = f"changed{edit}"
    return " ".join(words)


@pytest.mark.parametrize("policy", ["fail-open", "fail-closed"])
def test_a_key_of_another_type_is_met_as_the_policy_says(client, server, policy) -> None:
    """Another program took the URL filter's key and a bucket of the index: each call is
    answered WRONGTYPE; fail-open lets the URL and the item through, counted; fail-closed
    drops them. Neither raises."""
    from scrapy.exceptions import DropItem

    from scrapy_neardup.urls import url_fingerprint

    state, stats = redis_state(server, "wt", NEARDUP_REDIS_ON_ERROR=policy)
    try:
        sign = state.dedup.sign
        assert not state.key_seen(url_fingerprint("https://example.com/a"))
        assert not state.dedup.check_signed("x", sign(text("x"))).is_duplicate
        client.delete("{wt:urls}:neardup:urls")
        client.set("{wt:urls}:neardup:urls", "taken")
        for key in client.keys("{wt:minhash}:neardup:minhash:b:*"):  # strings
            client.delete(key)
            client.hset(key, "taken", 1)
        if policy == "fail-open":
            verdict = state.dedup.check_signed("x-copy", sign(text("x", edit=3)))
            assert not verdict.is_duplicate  # let through: Redis could not say
            assert stats.values["neardup/items/unchecked"] == 1
        else:
            with pytest.raises(DropItem):
                state.dedup.check_signed("x-copy", sign(text("x", edit=3)))
        assert stats.values["neardup/redis/errors"] == 1
        state._outage = None  # as if Redis had answered again: the URL filter's turn
        seen = state.key_seen(url_fingerprint("https://example.com/b"))
        assert seen is (policy == "fail-closed")  # dropped, or let through
        assert stats.values["neardup/urls/unchecked"] == 1
        assert stats.values["neardup/redis/errors"] == 2
    finally:
        state.close()


def test_a_document_record_another_client_wrote_is_left_out_and_counted(
    client, server, caplog
) -> None:
    """A record of the index that cannot be read (another client wrote it) is left out of
    the comparison and counted: the items checked against it are kept, never failed."""
    state, stats = redis_state(server, "cr")
    try:
        sign = state.dedup.sign
        assert not state.dedup.check_signed("x", sign(text("x"))).is_duplicate
        for name in ("exact", "minhash"):
            docs = f"{{cr:{name}}}:neardup:{name}:docs"
            for field in client.hkeys(docs):
                client.hset(docs, field, b"\xff\xff\xff\x7fcorrupt")
        verdict = state.dedup.check_signed("x-copy", sign(text("x")))
        assert not verdict.is_duplicate
        assert stats.values["neardup/redis/corrupt_records"] >= 1
        assert stats.values["neardup/redis/errors"] >= 1
        assert state._outage is None  # not an outage: the rest of Redis answers
        assert any("cannot read a document record" in r.getMessage() for r in caplog.records)
    finally:
        state.close()


def test_a_crawl_over_corrupt_records_delivers_every_document(
    client, server, site, site_url, tmp_path
) -> None:
    """A first crawl keeps the site's documents; another client then overwrites every
    document record; a second crawl of the same site under the prefix compares against
    records it cannot read: it delivers every document and fails none."""
    settings = {
        "LOG_LEVEL": "WARNING",
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": server.url,
        "NEARDUP_KEY_PREFIX": "crc",
        "NEARDUP_WORKERS": 1,
    }
    first_out = tmp_path / "first.json"
    first = crawl_runner.collect(
        crawl_runner.launch(site_url, first_out, {**settings, "NEARDUP_URL_FILTER": False}),
        first_out,
    )
    assert first["kept"]
    for key in client.keys("{crc:*}:neardup:*:docs"):
        for field in client.hkeys(key):
            client.hset(key, field, b"\x05\x00\x00\x00abc")
    out = tmp_path / "second.json"
    result = crawl_runner.collect(crawl_runner.launch(site_url, out, settings), out)
    assert result["stats"]["finish_reason"] == "finished"
    assert_nothing_escaped(result["stderr"])
    assert set(doc_ids(site, result["kept"])) == set(site.expected_unique_docs())
    assert result["stats"]["neardup/redis/corrupt_records"] > 0
    assert "neardup/skipped/errors" not in result["stats"]
