"""No false drops: a Bloom positive is confirmed against the exact fingerprint store."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.state import NearDupState
from scrapy_neardup.state.files import URL_CONFIRM, FileState

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


def test_the_store_persists_with_the_state_directory(tmp_path) -> None:
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    assert not any(state.url_seen(url) for url in URLS[:1000])
    state.close()
    assert (tmp_path / URL_CONFIRM).exists()
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    assert all(state.url_seen(url) for url in URLS[:1000])
    assert not any(state.url_seen(url) for url in URLS[1000:])
    state.close()


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_store_stops_the_start_naming_it(tmp_path, how) -> None:
    """The keys of the Bloom snapshot's URLs are in no other file: the start stops, rather
    than crawl on unconfirmed in this run and every later one (as a state from before the
    store, which has none, does too)."""
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    for url in URLS[:100]:
        state.url_seen(url)
    state.close()
    path = tmp_path / URL_CONFIRM
    if how == "deleted":
        path.unlink()
    else:
        path.write_bytes(b"")
    for _ in range(2):  # and again at the next start: never given up silently
        with pytest.raises(StateError) as info:
            make_state(NEARDUP_STATE_DIR=str(tmp_path))
        assert info.value.path == str(path)
        message = str(info.value)
        assert f"{'missing' if how == 'deleted' else 'empty'}, but" in message
        assert f"records {len(state.urls)} URLs" in message
        assert "NEARDUP_URL_CONFIRM=False" in message
        assert path.exists() == (how == "emptied")  # left as it was
    # Trusting the Bloom filter is a choice the user makes, for one crawl.
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path), NEARDUP_URL_CONFIRM=False)
    assert all(state.url_seen(url) for url in URLS[:100])
    state.close()


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_store_is_rebuilt_from_the_journal(tmp_path, how, caplog) -> None:
    """A crawl killed before its first clean close has every key in its URL journal."""
    state = make_state(NEARDUP_STATE_DIR=str(tmp_path), NEARDUP_FLUSH_INTERVAL=0)
    assert not any(state.url_seen(url) for url in URLS[:1000])
    state._url_journal.sync()
    state._abandon()  # a crash: no snapshot is written
    assert not (tmp_path / "urls.bloom").exists()
    path = tmp_path / URL_CONFIRM
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    if how == "emptied":
        path.write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        state = make_state(NEARDUP_STATE_DIR=str(tmp_path))
    assert "was missing or empty; rebuilt from" in caplog.text and "(1000 URLs)" in caplog.text
    assert state.confirm is not None and len(state.confirm) == 1000
    assert all(state.url_seen(url) for url in URLS[:1000])
    assert not any(state.url_seen(url) for url in URLS[1000:])  # positives confirmed again
    assert state.stats.get_value("neardup/urls/false_positives", 0) > 0
    state.close()
