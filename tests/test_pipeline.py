"""NearDupPipeline in this process, built the way Scrapy builds an item pipeline
(``build_from_crawler`` on a crawler of ``get_crawler``) and called as Scrapy calls one:
``open_spider()``, ``process_item(item)`` awaited, ``close_spider()``. Extraction is inline
(``NEARDUP_WORKERS = 0``), so ``asyncio.run`` runs ``process_item`` to its end.
"""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.pipelines import ItemPipelineManager
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from scrapy_neardup.pipeline import NearDupPipeline

WORDS = "harbour bridge council budget river school museum storm garden court energy".split()


class Pages(Spider):
    name = "pages"


def article(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randint(0, 50)) for _ in range(200))


def crawler(**settings: Any) -> Crawler:
    return get_crawler(Pages, {"NEARDUP_WORKERS": 0, "NEARDUP_TEXT_FIELD": "text", **settings})


def pipeline(crawler: Crawler) -> NearDupPipeline:
    pipe = build_from_crawler(NearDupPipeline, crawler)
    pipe.open_spider()
    return pipe


def process(pipe: NearDupPipeline, item: Any) -> Any:
    return asyncio.run(pipe.process_item(item))


def test_a_copy_is_dropped() -> None:
    c = crawler()
    pipe = pipeline(c)
    first = {"url": "https://a.org/1", "text": article(1)}
    assert process(pipe, first) is first
    with pytest.raises(DropItem, match=r"near-duplicate of https://a\.org/1"):
        process(pipe, {"url": "https://b.org/1", "text": article(1)})
    other = {"url": "https://a.org/2", "text": article(2)}
    assert process(pipe, other) is other
    pipe.close_spider()
    got = c.stats.get_stats()
    assert got["neardup/items/kept"] == 2
    assert got["neardup/items/dropped"] == 1
    assert sum(v for k, v in got.items() if k.startswith("neardup/duplicates/")) == 1


def test_tag_mode_keeps_the_copy_tagged() -> None:
    c = crawler(NEARDUP_ACTION="tag")
    pipe = pipeline(c)
    process(pipe, {"url": "https://a.org/1", "text": article(1)})
    copy = {"url": "https://b.org/1", "text": article(1)}
    assert process(pipe, copy) is copy
    assert copy["duplicate_of"] == "https://a.org/1"
    assert copy["duplicate_similarity"] == pytest.approx(1.0)
    pipe.close_spider()
    got = c.stats.get_stats()
    assert got["neardup/items/tagged"] == 1
    assert "neardup/items/dropped" not in got


def test_an_item_without_text_is_passed_and_counted() -> None:
    c = crawler()
    pipe = pipeline(c)
    for item in ({"url": "https://a.org/1"}, {"url": "https://a.org/1", "text": ""}):
        assert process(pipe, item) is item
    pipe.close_spider()
    got = c.stats.get_stats()
    assert got["neardup/skipped/no_text"] == 2
    assert "neardup/items/kept" not in got


def test_kept_texts_outlive_close_with_a_jobdir(tmp_path: Path) -> None:
    jobdir = str(tmp_path / "job")
    pipe = pipeline(crawler(JOBDIR=jobdir))
    process(pipe, {"url": "https://a.org/1", "text": article(1)})
    pipe.close_spider()

    pipe = pipeline(crawler(JOBDIR=jobdir))
    with pytest.raises(DropItem):
        process(pipe, {"url": "https://b.org/1", "text": article(1)})
    pipe.close_spider()


def test_disabled_is_not_configured() -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(NearDupPipeline, get_crawler(Pages, {"NEARDUP_ENABLED": False}))


def test_without_a_text_source_it_warns(caplog) -> None:
    """No text field and no PageTextMiddleware: every item would be kept unchecked."""
    with caplog.at_level(logging.WARNING, logger="scrapy_neardup.pipeline"):
        pipe = pipeline(get_crawler(Pages, {"NEARDUP_WORKERS": 0}))
    assert "PageTextMiddleware is not" in caplog.text
    pipe.close_spider()


def test_scrapys_pipeline_manager_takes_it() -> None:
    """Newer Scrapy warns (an error here) about a method that requires ``spider``."""
    path = "scrapy_neardup.pipeline.NearDupPipeline"
    manager = build_from_crawler(ItemPipelineManager, crawler(ITEM_PIPELINES={path: 300}))
    (pipe,) = manager.middlewares
    assert isinstance(pipe, NearDupPipeline)
    pipe.close_spider()
