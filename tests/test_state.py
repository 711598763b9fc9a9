"""NEARDUP_STORAGE chooses the state implementation, as HTTPCACHE_STORAGE chooses Scrapy's."""

from __future__ import annotations

import pytest
from scrapy.utils.test import get_crawler

from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.state import FileState, NearDupState


class CountingState(FileState):
    """A project's own state: here, one that counts the keys it is asked about."""

    asked = 0

    def key_seen(self, key, on_new=None):
        type(self).asked += 1
        return super().key_seen(key, on_new)


def test_an_import_path_names_the_state_class() -> None:
    crawler = get_crawler(settings_dict={"NEARDUP_STORAGE": f"{__name__}.CountingState"})
    state = NearDupState.from_crawler(crawler)
    assert type(state) is CountingState
    assert NearDupState.from_crawler(crawler) is state  # one per crawler
    assert not state.url_seen("https://example.com/a") and state.url_seen("https://example.com/a")
    assert CountingState.asked == 2
    state.close()


def test_the_aliases_and_the_default() -> None:
    assert type(NearDupState.from_crawler(get_crawler())) is FileState
    crawler = get_crawler(settings_dict={"NEARDUP_STORAGE": "Memory"})
    assert type(NearDupState.from_crawler(crawler)) is FileState


@pytest.mark.parametrize(
    "path", ["scrapy_neardup.nowhere.State", "scrapy.Request", "tests.test_state.nothing"]
)
def test_a_path_that_is_no_state_class_stops_at_start(path: str) -> None:
    with pytest.raises(ConfigError, match="NEARDUP_STORAGE"):
        NearDupState.from_crawler(get_crawler(settings_dict={"NEARDUP_STORAGE": path}))
