"""One crawl of the demo spider that may be killed at any moment (see tests/test_crash.py).

    python tests/crash_runner.py '{"start_url": ..., "settings": {...}, "log": "items.jsonl"}'

(``"spider"``: the import path of another spider class than the demo's.)

Every item's fate (kept or dropped, with the reason) is appended to ``log`` and fsynced as it
happens, so what a run delivered before a SIGKILL is on disk; that stands in for a feed whose
writes are durable. At a normal end a final ``{"stats": ...}`` line is appended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "example_project"))


def launch(args: dict[str, Any], stderr: Path, cwd: Path) -> subprocess.Popen:
    """Start this runner in a fresh process with ``args``, its stderr appended to ``stderr``."""
    from crawl_runner import ENV

    with stderr.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, __file__, json.dumps(args)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=cwd,
            env=ENV,
        )


def main() -> None:
    args = json.loads(sys.argv[1])
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.misc import load_object

    spider_class = load_object(args.get("spider", "demo.spiders.demo.DemoSpider"))

    settings = {
        "ADDONS": {"scrapy_neardup.Addon": 500},
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        **args.get("settings", {}),
    }
    log = Path(args["log"]).open("a", encoding="utf-8")  # noqa: SIM115 - open for the run

    def write(record: dict[str, Any]) -> None:
        log.write(json.dumps(record) + "\n")
        log.flush()
        os.fsync(log.fileno())

    process = CrawlerProcess(settings=settings)
    crawler = process.create_crawler(spider_class)

    def on_scraped(item: Any, **kwargs: Any) -> None:
        write({"kept": dict(item)})

    def on_dropped(item: Any, exception: BaseException, **kwargs: Any) -> None:
        write({"dropped": dict(item), "reason": str(exception)})

    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    crawler.signals.connect(on_dropped, signal=signals.item_dropped)
    process.crawl(crawler, start_url=args["start_url"])
    process.start()
    stats = {
        k: (v if isinstance(v, (int, float, str)) else str(v))
        for k, v in crawler.stats.get_stats().items()
    }
    write({"stats": stats})
    log.close()


if __name__ == "__main__":
    main()
