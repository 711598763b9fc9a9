"""A spider whose second page yields a request the frontier cannot journal (a lock in its
meta), and that kills itself (SIGKILL) on that request's page the first time it gets there.
Used by tests/test_frontier.py: the page that yielded the request must be crawled again."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import scrapy
from scrapy.http import Response


class PinnedSpider(scrapy.Spider):
    name = "pinned"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = start_url

    async def start(self) -> AsyncIterator[Any]:
        yield scrapy.Request(self.base + "index.html", callback=self.parse_index)

    def parse_index(self, response: Response) -> Iterator[Any]:
        yield response.follow("list.html", callback=self.parse_list)

    def parse_list(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url}
        yield response.follow(
            "item.html", callback=self.parse_item, meta={"lock": threading.Lock()}
        )

    def parse_item(self, response: Response) -> Iterator[Any]:
        marker = Path(self.settings["PINNED_MARKER"])
        if not marker.exists():
            marker.write_text("killed")
            os.kill(os.getpid(), signal.SIGKILL)
        yield {"url": response.url}
