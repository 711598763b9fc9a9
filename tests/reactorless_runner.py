"""A crawl without a Twisted reactor (Scrapy 2.19's ``TWISTED_REACTOR_ENABLED = False``): the
add-on on its defaults, three ``data:`` pages (two copies of one article, one lightly edited).

    python tests/reactorless_runner.py '{"JOBDIR": ...}'

Prints the crawl's stats as one JSON line after ``STATS``, with whether a reactor was
imported. Run by tests/test_reactorless.py.
"""

from __future__ import annotations

import json
import sys
from urllib.parse import quote

from scrapy import Request, Spider
from scrapy.crawler import AsyncCrawlerProcess

ARTICLE = (
    "<html><head><title>Bridge reopens</title></head><body><article>"
    + "".join(
        f"<p>Paragraph {i}: engineers finished the repairs on the old harbour bridge after "
        "months of work, and traffic crossed it again on {when} morning without delays.</p>"
        for i in range(8)
    )
    + "</article></body></html>"
)


class CopiesSpider(Spider):
    name = "copies"

    async def start(self):
        for n, when in enumerate(["Monday", "Monday", "Tuesday"]):
            page = ARTICLE.replace("{when}", when) + f"<!-- copy {n} -->"
            yield Request("data:text/html," + quote(page), cb_kwargs={"n": n})

    def parse(self, response, n):
        yield {"url": f"http://example.com/{n}"}
        yield f"not an item {n}"  # for the project's own pipeline, after ours


class ItemsFromStrings:
    """A project's pipeline that turns what a callback yielded into an item."""

    def process_item(self, item, spider=None):
        return {"url": item} if isinstance(item, str) else item


def main() -> None:
    settings = {
        "TWISTED_REACTOR_ENABLED": False,
        "DOWNLOAD_HANDLERS": {"http": None, "https": None},  # data: only, no aiohttp needed
        "ADDONS": {"scrapy_neardup.Addon": 500},
        "ITEM_PIPELINES": {f"{__name__}.ItemsFromStrings": 300},
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
        **json.loads(sys.argv[1]),
    }
    process = AsyncCrawlerProcess(settings=settings)
    crawler = process.create_crawler(CopiesSpider)
    process.crawl(crawler)
    process.start()
    stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, str))}
    stats["reactor_imported"] = "twisted.internet.reactor" in sys.modules
    print("STATS " + json.dumps(stats))


if __name__ == "__main__":
    main()
