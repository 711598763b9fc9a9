"""A plain spider: follows every link of the demo site and yields one item per article page.

Nothing in it knows about scrapy-neardup; duplicates are removed by the plugin alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse


class DemoSpider(scrapy.Spider):
    name = "demo"

    def __init__(self, start_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # One URL, or several separated by commas (e.g. one section per crawler process).
        self.start_url = start_url or os.environ.get("DEMO_SITE_URL", "http://127.0.0.1:8000/")

    async def start(self):
        for url in self.start_url.split(","):
            yield scrapy.Request(url.strip())

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return  # the site links an image too
        if response.css('meta[property="og:type"]::attr(content)').get() == "article":
            yield {
                "url": response.url,
                "title": response.css("title::text").get(default="").strip(),
            }
        yield from response.follow_all(css="a::attr(href)", callback=self.parse)
