"""NEARDUP_INDEX = "lshbloom": MinHash's bands in a Bloom filter, drops verified in a window."""

from __future__ import annotations

import random

import crawl_runner
import pytest
from scrapy.utils.test import get_crawler

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.factories import backend_from_config, stores_from_config
from scrapy_neardup.state import NearDupState
from scrapy_neardup.storage.lshbloom import LSHBloomStore

WORDS = [f"w{i}" for i in range(20_000)]


def texts(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(300)) for _ in range(count)]


def edited(text: str) -> str:
    """A near copy: the same words, one in fifty replaced (no exact match)."""
    words = text.split()
    return " ".join("edit" if i % 50 == 7 else w for i, w in enumerate(words))


def lshbloom_dedup(window: int) -> Deduplicator:
    config = NearDupConfig.from_settings(
        {"NEARDUP_INDEX": "lshbloom", "NEARDUP_LSHBLOOM_WINDOW": window}
    )
    return Deduplicator(backend_from_config(config), stores=stores_from_config(config))


def test_copies_in_the_window_are_dropped_older_ones_kept_and_counted() -> None:
    dedup = lshbloom_dedup(window=20)
    docs = texts(60)
    for i, text in enumerate(docs):
        assert not dedup.check(f"https://a.example/{i}", text).is_duplicate
    store = dedup.near.store
    assert isinstance(store, LSHBloomStore)
    assert store.unverified == 0  # 60 distinct pages: no band met twice
    assert len(store) == 60 and sum(len(s) for s in store._stores()) <= 20
    assert "https://a.example/59" in store  # a key of the window
    assert "https://a.example/0" not in store  # forgotten: only its bands are kept

    recent = dedup.check("https://b.example/recent", edited(docs[-1]))
    assert recent.is_duplicate and recent.duplicate_of == "https://a.example/59"

    old = dedup.check("https://b.example/old", edited(docs[0]))
    assert not old.is_duplicate  # nothing verified holds it: kept, never dropped blind
    assert store.unverified == 1  # but its bands were met: counted


def test_the_band_filter_has_few_false_hits() -> None:
    """Distinct pages that share no text: the filter's hits stay near its error rate."""
    dedup = lshbloom_dedup(window=100)
    for i, text in enumerate(texts(3000, seed=2)):
        dedup.check(f"https://a.example/{i}", text)
    assert dedup.near.store.unverified <= 3
    assert len(dedup) == 3000


@pytest.mark.parametrize(
    ("settings", "setting"),
    [
        ({"NEARDUP_INDEX": "lshbloom", "NEARDUP_BACKEND": "spotsigs"}, "NEARDUP_INDEX"),
        ({"NEARDUP_INDEX": "lshbloom", "NEARDUP_STORAGE": "redis"}, "NEARDUP_INDEX"),
        ({"NEARDUP_INDEX": "bloom"}, "NEARDUP_INDEX"),
        ({"NEARDUP_INDEX": "lshbloom", "NEARDUP_LSHBLOOM_WINDOW": 1}, "NEARDUP_LSHBLOOM_WINDOW"),
    ],
)
def test_settings_are_validated(settings: dict, setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        NearDupConfig.from_settings(settings)


def state_of(jobdir, **settings) -> NearDupState:
    crawler = get_crawler(settings_dict={"JOBDIR": str(jobdir), "NEARDUP_WORKERS": 0, **settings})
    state = NearDupState.from_crawler(crawler)
    state.open()
    return state


def test_the_band_filter_survives_a_restart(tmp_path) -> None:
    """The band filter is rebuilt from the kept documents the state database holds: after a
    restart a copy of one before the window is still met (counted, kept); the same state
    opened as a bucket index finds it (every kept document's signature is recorded)."""
    settings = {"NEARDUP_INDEX": "lshbloom", "NEARDUP_LSHBLOOM_WINDOW": 10}
    docs = texts(30, seed=3)
    state = state_of(tmp_path, **settings)
    for i, text in enumerate(docs):
        assert not state.dedup.check(f"https://a.example/{i}", text).is_duplicate
    state.close()

    again = state_of(tmp_path, **settings)
    store = again.dedup.near.store
    assert len(store) == 30 and store.unverified == 0
    assert again.dedup.check("https://b.example/recent", edited(docs[-1])).is_duplicate
    assert not again.dedup.check("https://b.example/old", edited(docs[0])).is_duplicate
    assert store.unverified == 1
    again.close()

    buckets = state_of(tmp_path)
    assert buckets.dedup.check("https://c.example/old", edited(docs[0])).is_duplicate
    buckets.close()


def test_a_crawl_with_lshbloom_drops_only_true_copies(site, site_url, tmp_path) -> None:
    """Enabled from settings only: with the default window it keeps each document once; with
    a window of 2 pages it keeps copies it cannot verify, and still drops only true ones."""
    results = {}
    for window in (100_000, 2):
        out = tmp_path / f"crawl-{window}.json"
        settings = {
            "LOG_LEVEL": "WARNING",
            "NEARDUP_WORKERS": 1,
            "NEARDUP_INDEX": "lshbloom",
            "NEARDUP_LSHBLOOM_WINDOW": window,
            "JOBDIR": str(tmp_path / f"job-{window}"),
        }
        results[window] = crawl_runner.collect(crawl_runner.launch(site_url, out, settings), out)
    full, small = results[100_000], results[2]
    crawl_runner.assert_each_document_once(site, [full])
    assert full["stats"]["neardup/lshbloom/unverified"] == 0
    assert full["stats"]["neardup/lshbloom/size_bytes"] > 0
    for item in small["dropped"]:  # every drop verified: its original is its document
        original = item["reason"].split("near-duplicate of ", 1)[1].split(" (", 1)[0]
        assert site.lookup(item["url"]).doc_id == site.lookup(original).doc_id
    # The copies it could not verify were kept, and counted as met.
    assert len(small["kept"]) > len(full["kept"])
    assert small["stats"]["neardup/lshbloom/unverified"] >= len(small["kept"]) - len(full["kept"])
