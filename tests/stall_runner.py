"""tests/crawl_runner.py, plus a probe of the reactor's stalls.

    python tests/stall_runner.py '{"start_url": ..., "settings": {...}, "out": "r.json"}'

Takes crawl_runner.py's arguments and writes its ``out``, and beside it ``out + ".stall"``
(JSON): the longest gap between two ticks of a ``LoopingCall`` every :data:`TICK` seconds, from
the first response to the spider's going idle (its crawl done, before it closes), and every
gap over :data:`NOTED` seconds with the time it ended (seconds since the probe started). A
reactor that never blocks for long sees gaps of about one tick.

It starts at the first response, not when the spider opens: what precedes it happens once
per crawl, before any request is sent (PageTextMiddleware's freezing of the start-up objects
for the garbage collector walks every object once, 60-100 ms).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import crawl_runner

#: Seconds between two ticks of the probe.
TICK = 0.01
#: Gaps longer than this are listed one by one.
NOTED = 0.05


class StallProbe:
    """An extension: ticks every TICK seconds and writes the gaps between ticks to STALL_LOG."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.path = Path(crawler.settings["STALL_LOG"])
        self.loop: Any = None
        self.started = self.last = 0.0
        self.longest = 0.0
        self.ticks = 0
        self.noted: list[tuple[float, float]] = []
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> StallProbe:
        return cls(crawler)

    def tick(self) -> None:
        now = time.monotonic()
        gap = now - self.last
        self.last = now
        self.ticks += 1
        self.longest = max(self.longest, gap)
        if gap > NOTED:
            self.noted.append((round(now - self.started, 3), round(gap, 4)))

    def response_received(self, *args: Any, **kwargs: Any) -> None:
        from twisted.internet.task import LoopingCall

        if self.loop is not None:
            return
        self.started = self.last = time.monotonic()
        self.loop = LoopingCall(self.tick)
        self.loop.start(TICK, now=False)

    def spider_idle(self, spider: Any) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.loop = self.loop or False  # never started again

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.spider_idle(spider)
        record = {
            "longest": round(self.longest, 4),
            "ticks": self.ticks,
            "seconds": round(self.last - self.started, 3),
            "noted": self.noted,
        }
        self.path.write_text(json.dumps(record, indent=1))


def main() -> None:
    args = json.loads(sys.argv[1])
    settings = args.setdefault("settings", {})
    settings["EXTENSIONS"] = {**settings.get("EXTENSIONS", {}), "stall_runner.StallProbe": 0}
    settings["STALL_LOG"] = args["out"] + ".stall"
    sys.argv[1] = json.dumps(args)
    crawl_runner.main()


if __name__ == "__main__":
    main()
