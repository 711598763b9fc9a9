"""No false drops: a Bloom positive is confirmed against the exact fingerprint store."""

from __future__ import annotations

from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.state import NearDupState
from scrapy_neardup.state.files import FileState
from scrapy_neardup.storage.statedb import STATE_FILE

# A filter this small at this error rate answers "seen" for a good share of new URLs.
LEAKY = {"NEARDUP_BLOOM_CAPACITY": 50, "NEARDUP_BLOOM_ERROR_RATE": 0.3, "NEARDUP_EXTRACT": False}
URLS = [f"https://example.com/article/{i}" for i in range(3000)]


def make_state(**settings: object) -> NearDupState:
    crawler = get_crawler(settings_dict={**LEAKY, **settings})
    stats = MemoryStatsCollector(crawler)
    state = FileState(NearDupConfig.from_settings(Settings({**LEAKY, **settings})), stats)
    state.open()
    return state


def test_without_confirming_the_bloom_filter_drops_new_urls() -> None:
    state = make_state(NEARDUP_URL_CONFIRM=False)
    wrongly_seen = sum(state.url_seen(url) for url in URLS)
    state.close()
    assert wrongly_seen > 0  # what the store is for: each of these was a page never fetched


def test_confirmed_positives_never_drop_a_new_url() -> None:
    state = make_state()
    assert not any(state.url_seen(url) for url in URLS)
    false_positives = state.stats.get_value("neardup/urls/false_positives", 0)
    assert false_positives > 0
    assert all(state.url_seen(url) for url in URLS[::7])  # real repeats are still dropped
    state.close()
    assert state.stats.get_value("neardup/urls/false_positives_total") == false_positives


def test_the_keys_persist_and_the_bloom_filter_is_rebuilt_from_them(tmp_path) -> None:
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    assert not any(state.url_seen(url) for url in URLS[:1000])
    state.close()
    assert (tmp_path / STATE_FILE).exists()
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    assert all(state.url_seen(url) for url in URLS[:1000])
    assert not any(state.url_seen(url) for url in URLS[1000:])  # positives confirmed again
    assert state.stats.get_value("neardup/urls/false_positives", 0) > 0
    state.close()
