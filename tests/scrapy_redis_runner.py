"""tests/crawl_runner.py, plus a record of what the crawl fetched and of its scheduler.

    python tests/scrapy_redis_runner.py '{"start_url": ..., "settings": {...}, "out": "r.json"}'

Takes crawl_runner.py's arguments and writes its ``out``, and beside it ``out + ".fetched"``
(JSON): the URL of every response downloaded (redirects included), in order, and the import
path of the scheduler and of its dupefilter, with whether the dupefilter shares the crawler's
scrapy-neardup state, as seen when the spider opened and when it closed (scrapy-redis's
scheduler builds its dupefilter in ``Scheduler.open`` and flushes it in ``Scheduler.close``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import crawl_runner


class FetchLog:
    """An extension: records responses, and the scheduler's dupefilter, to ``FETCH_LOG``."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.path = Path(crawler.settings["FETCH_LOG"])
        self.record: dict[str, Any] = {"fetched": []}
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> FetchLog:
        return cls(crawler)

    def response_downloaded(self, response: Any, request: Any, **kwargs: Any) -> None:
        self.record["fetched"].append(response.url)

    def _dupefilter(self) -> dict[str, Any]:
        from scrapy_neardup.state import NearDupState

        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None) or engine._slot.scheduler
        df = getattr(scheduler, "df", None)
        cls = type(df)
        state = getattr(df, "state", None)
        return {
            "scheduler": f"{type(scheduler).__module__}.{type(scheduler).__qualname__}",
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "shares_state": state is not None and state is NearDupState.from_crawler(self.crawler),
        }

    def spider_opened(self, spider: Any) -> None:
        self.record["opened"] = self._dupefilter()

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.record["closed"] = self._dupefilter()
        self.path.write_text(json.dumps(self.record, indent=1))


def main() -> None:
    args = json.loads(sys.argv[1])
    settings = args.setdefault("settings", {})
    settings["EXTENSIONS"] = {**settings.get("EXTENSIONS", {}), "scrapy_redis_runner.FetchLog": 0}
    settings["FETCH_LOG"] = args["out"] + ".fetched"
    sys.argv[1] = json.dumps(args)
    crawl_runner.main()


if __name__ == "__main__":
    main()
