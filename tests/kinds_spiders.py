"""One spider of each kind for tests/test_crash_kinds.py, all crawling tests/kinds_site.py.

Each takes the site's base URL as ``start_url`` and yields one item per article page
(``url``: the response's URL). The item types are spread over the kinds: dicts,
``scrapy.Item``, dataclasses and attrs classes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import attrs
import scrapy
from scrapy.http import FormRequest, JsonRequest
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, CSVFeedSpider, Rule, SitemapSpider, XMLFeedSpider
from scrapy_redis.spiders import RedisSpider


class ArticleItem(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()


@dataclasses.dataclass
class ArticleData:
    url: str
    title: str


@attrs.define
class ArticleAttrs:
    url: str
    title: str


def is_article(response: Any) -> bool:
    return "/a/" in response.url


def page_title(response: Any) -> str:
    return response.css("title::text").get(default="")


class _Base:
    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        self.base = start_url.rstrip("/")
        super().__init__(**kwargs)  # type: ignore[call-arg]


class KindCrawl(_Base, CrawlSpider):
    """``CrawlSpider``: one rule, every link followed; ``scrapy.Item``."""

    name = "kind_crawl"
    rules = (Rule(LinkExtractor(), callback="parse_page", follow=True),)

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.start_urls = [self.base + "/"]

    def parse_page(self, response: Any) -> Any:
        if is_article(response):
            yield ArticleItem(url=response.url, title=page_title(response))


class KindSitemap(_Base, SitemapSpider):
    """``SitemapSpider`` from robots.txt, through a sitemap index; dataclass items."""

    name = "kind_sitemap"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.sitemap_urls = [self.base + "/robots.txt"]

    def parse(self, response: Any, **kwargs: Any) -> Any:
        yield ArticleData(url=response.url, title=page_title(response))


class KindXMLFeed(_Base, XMLFeedSpider):
    """``XMLFeedSpider`` over an RSS feed; each ``<item>`` followed with ``cb_kwargs``;
    attrs items."""

    name = "kind_xmlfeed"
    iterator = "iternodes"
    itertag = "item"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.start_urls = [self.base + "/feed.xml"]

    def parse_node(self, response: Any, node: Any) -> Any:
        yield scrapy.Request(
            node.xpath("link/text()").get(),
            callback=self.parse_article,
            cb_kwargs={"feed_title": node.xpath("title/text()").get()},
        )

    def parse_article(self, response: Any, feed_title: str) -> Any:
        assert feed_title == page_title(response), (feed_title, response.url)
        yield ArticleAttrs(url=response.url, title=feed_title)


class KindCSVFeed(_Base, CSVFeedSpider):
    """``CSVFeedSpider``: each row's old URL answers 404, its errback follows the row's URL
    with ``meta`` and ``cb_kwargs``; dict items."""

    name = "kind_csvfeed"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.start_urls = [self.base + "/feed.csv"]

    def parse_row(self, response: Any, row: dict[str, str]) -> Any:
        yield scrapy.Request(
            f"{self.base}/old/{row['id']}",
            callback=self.parse_article,
            errback=self.moved,
            meta={"row": row["id"], "new_url": row["url"]},
            cb_kwargs={"row_title": row["title"]},
        )

    def moved(self, failure: Any) -> Any:
        request = failure.request
        yield scrapy.Request(
            request.meta["new_url"],
            callback=self.parse_article,
            meta={"row": request.meta["row"]},
            cb_kwargs=request.cb_kwargs,
        )

    def parse_article(self, response: Any, row_title: str) -> Any:
        assert row_title == page_title(response), (row_title, response.url)
        yield {"url": response.url, "title": row_title, "row": response.meta["row"]}


class KindFollow(_Base, scrapy.Spider):
    """``scrapy.Spider`` with ``start_urls``, ``response.follow`` and ``follow_all``; dicts."""

    name = "kind_follow"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.start_urls = [self.base + "/"]

    def parse(self, response: Any) -> Any:
        if is_article(response):
            yield {"url": response.url, "title": page_title(response)}
        yield from response.follow_all(css="ul a", callback=self.parse)
        next_page = response.css("a.next::attr(href)").get()
        if next_page:
            yield response.follow(next_page, callback=self.parse)


class KindAsyncJson(_Base, scrapy.Spider):
    """``async def start()`` and ``JsonRequest``s to a JSON API (POST) listing the articles;
    ``scrapy.Item``."""

    name = "kind_async_json"

    async def start(self) -> Any:
        yield JsonRequest(self.base + "/api/list", data={"page": 0}, callback=self.parse_api)

    def parse_api(self, response: Any) -> Any:
        data = response.json()
        yield from response.follow_all(
            data["urls"], callback=self.parse_article, cb_kwargs={"listed": True}
        )
        if data["next"] is not None:
            yield JsonRequest(
                self.base + "/api/list", data={"page": data["next"]}, callback=self.parse_api
            )

    def parse_article(self, response: Any, listed: bool) -> Any:
        assert listed
        yield ArticleItem(url=response.url, title=page_title(response))


class KindForm(_Base, scrapy.Spider):
    """``FormRequest.from_response`` (POST, page after page) and ``FormRequest``s of every
    page at once, to one URL with different bodies; dataclass items."""

    name = "kind_form"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(start_url, **kwargs)
        self.start_urls = [self.base + "/search"]

    def parse(self, response: Any) -> Any:
        yield FormRequest.from_response(response, formid="search", callback=self.parse_results)
        for page in range(1, int(response.css("form#search::attr(data-pages)").get())):
            yield FormRequest(
                self.base + "/search", formdata={"page": str(page)}, callback=self.parse_results
            )

    def parse_results(self, response: Any) -> Any:
        yield from response.follow_all(css="ul.articles a", callback=self.parse_article)
        if response.css("form#search"):
            yield FormRequest.from_response(response, formid="search", callback=self.parse_results)

    def parse_article(self, response: Any) -> Any:
        yield ArticleData(url=response.url, title=page_title(response))


class KindRedis(RedisSpider):
    """scrapy-redis's ``RedisSpider``: its start URL popped from a Redis list; dicts."""

    name = "kind_redis"

    def __init__(self, start_url: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def parse(self, response: Any) -> Any:
        if is_article(response):
            yield {"url": response.url, "title": page_title(response)}
        yield from response.follow_all(css="ul a", callback=self.parse)
