"""A spider as many are written: its pages are its ``start_urls`` (Scrapy sends those with
``dont_filter=True``, so they pass no dupefilter and the plugin's frontier does not journal
them), one item per page. Used by tests/test_feed_crash.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class StartUrlsSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = start_url.split(",")

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "title": response.css("title::text").get(default="")}


class PaddedSpider(scrapy.Spider):
    """The demo spider with items too large for the feed's write buffer: each line reaches
    the OS as it is exported (a feed whose lines reach the disk before the state commits)."""

    name = "demo"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start_url]

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, scrapy.http.TextResponse):
            return  # the site links an image too
        if response.css('meta[property="og:type"]::attr(content)').get() == "article":
            yield {"url": response.url, "padding": "x" * 16384}
        yield from response.follow_all(css="a::attr(href)", callback=self.parse)
