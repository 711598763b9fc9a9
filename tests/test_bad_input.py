"""Bad input never kills a crawl: a clear error at start, or a counted, logged skip.

Component tests use real Scrapy objects (``get_crawler``, ``HtmlResponse``) and the real
extractor inline (``NEARDUP_WORKERS=0``); one runs real worker processes, and one crawls a
loopback server that serves every kind of bad page next to good ones.
"""

from __future__ import annotations

import asyncio
import gzip
import inspect
import json
import logging
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.dupefilter import NearDupDupeFilter
from scrapy_neardup.exceptions import ConfigError, InvalidURL, StateError
from scrapy_neardup.extraction import Extractor, SignerSpec
from scrapy_neardup.middlewares import PageTextMiddleware, UrlFilterMiddleware
from scrapy_neardup.pipeline import NearDupPipeline
from scrapy_neardup.storage.statedb import STATE_FILE

ROOT = Path(__file__).resolve().parents[1]

WORDS = (
    "harbour bridge engineers repairs traffic morning council budget river school museum "
    "festival storm garden election housing vaccine startup court energy water police"
).split()


def article(seed: int, words: int = 220) -> str:
    """A distinct article of ``words`` words (seeded), as plain text."""
    import random

    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randint(0, 40)) for _ in range(words))


def html(text: str, title: str = "A story") -> str:
    return (
        f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<article><h1>{title}</h1><p>{text}</p></article><footer>Footer</footer></body></html>"
    )


NAV_ONLY = (  # a title, a footer, scripts and an image: no main text to find
    "<html><head><title>Menu</title><script>var menu = [1, 2, 3];</script></head><body>"
    "<img src='/logo.png'><footer>&copy; 2024 The Paper</footer></body></html>"
)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 16


#: The frontier journal is kept only when FrontierMiddleware will mark requests done.
FRONTIER = {"scrapy_neardup.middlewares.FrontierMiddleware": 10}


def crawler(**settings: Any) -> Any:
    return get_crawler(settings_dict={"NEARDUP_WORKERS": 0, **settings})


def stat(component: Any, name: str) -> int:
    return component.state.stats.get_value(name, 0)


def run(coro: Any) -> Any:
    """Runs a coroutine of a component to its end (inline extraction: nothing to wait for)."""
    return asyncio.run(coro)


# -- bodies -------------------------------------------------------------------------------


@pytest.fixture
def pages() -> PageTextMiddleware:
    return PageTextMiddleware.from_crawler(crawler())


def test_an_extraction_that_cannot_start_is_counted_and_the_output_goes_on(
    pages, monkeypatch, caplog
) -> None:
    """When no reading can be started (the worker pool cannot start, the inline reading
    raises), the item is passed on unchecked, the error counted and logged, and the rest
    of the spider's output still comes."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no worker could start")

    monkeypatch.setattr(pages.state.extractor, "submit_extract", broken)
    response = HtmlResponse(
        "http://a/x", body=html(article(7)).encode(), request=Request("http://a/x")
    )

    async def output() -> Any:
        yield {"url": "http://a/x"}
        yield Request("http://a/next")

    async def collect() -> list[Any]:
        return [obj async for obj in pages.process_spider_output(response, output())]

    with caplog.at_level(logging.WARNING):
        out = run(collect())
    assert [type(obj).__name__ for obj in out] == ["dict", "Request"]
    assert pages.state.take(out[0]) is None  # nothing for the pipeline to wait for
    assert stat(pages, "neardup/extract/errors") == 1
    assert "extraction failed for http://a/x" in caplog.text


def test_empty_and_binary_bodies_are_counted_as_empty(pages) -> None:
    assert run(pages.page_text(HtmlResponse("http://a/e", body=b""))) is None
    assert run(pages.page_text(HtmlResponse("http://a/p", body=PNG))) is None
    assert stat(pages, "neardup/extract/empty") == 2


def test_a_non_text_response_is_counted(pages) -> None:
    image = Response("http://a/i", body=PNG, headers={"Content-Type": "image/png"})
    assert run(pages.page_text(image)) is None
    assert stat(pages, "neardup/skipped/not_text") == 1


def test_a_50_mb_body_is_skipped_without_extraction(pages, caplog) -> None:
    caplog.set_level(logging.INFO)
    body = html(article(1)).encode() + b"<!-- padding -->" * (50 * 2**20 // 16)
    assert run(pages.page_text(HtmlResponse("http://a/big", body=body))) is None
    assert stat(pages, "neardup/skipped/too_large") == 1
    assert stat(pages, "neardup/extract/trafilatura") == 0
    assert "over NEARDUP_MAX_BODY_BYTES" in caplog.text


def test_a_gzip_bomb_is_stopped_by_scrapy_before_the_plugin_sees_it() -> None:
    """Scrapy 2.19's HttpCompressionMiddleware stops decompressing at DOWNLOAD_MAXSIZE (1 GiB
    by default; set it lower for untrusted sites). A bomb below that limit reaches the plugin
    as a large body, which NEARDUP_MAX_BODY_BYTES skips (test above)."""
    mw = HttpCompressionMiddleware.from_crawler(crawler(DOWNLOAD_MAXSIZE=8 * 2**20))
    bomb = gzip.compress(b"\0" * (64 * 2**20), 9)  # 64 KiB that inflate to 64 MiB
    request = Request("http://a/bomb")
    response = Response(
        "http://a/bomb",
        body=bomb,
        headers={"Content-Encoding": "gzip", "Content-Type": "text/html"},
        request=request,
    )
    # Scrapy 2.13 still takes the spider (later Scrapy deprecates passing it)
    spider = inspect.signature(mw.process_response).parameters["spider"]
    extra = {"spider": None} if spider.default is inspect.Parameter.empty else {}
    with pytest.raises(IgnoreRequest, match="DOWNLOAD_MAXSIZE"):
        mw.process_response(request, response, **extra)


def test_mislabelled_and_unlabelled_encodings_still_give_text(pages) -> None:
    text = article(2).replace("bridge", "brücke")
    latin = HtmlResponse(
        "http://a/l",
        body=html(text).encode("latin-1"),
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    found = run(pages.page_text(latin))
    assert found is not None and "br\ufffdcke" in found.extracted.text
    for body in (html(text).encode("utf-16"), html(text).encode("utf-16-le")):  # BOM or none
        found = run(pages.page_text(HtmlResponse("http://a/u", body=body)))
        assert found is not None and "brücke" in found.extracted.text
    unknown = HtmlResponse(
        "http://a/x", body=html(text).encode(), headers={"Content-Type": "text/html; charset=x-y"}
    )
    assert run(pages.page_text(unknown)) is not None


def test_a_page_trafilatura_finds_nothing_in_is_counted(pages) -> None:
    found = run(pages.page_text(HtmlResponse("http://a/nav", body=NAV_ONLY.encode())))
    counted = stat(pages, "neardup/extract/fallback") + stat(pages, "neardup/extract/empty")
    assert counted == 1
    assert found is None or found.extracted.how == "fallback"


def test_worker_processes_survive_every_bad_body() -> None:
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=1)
    bodies = {
        "empty": (b"", None),
        "png": (PNG, None),
        "latin": (html(article(3)).encode("latin-1"), "utf-8"),
        "utf16": (html(article(3)).encode("utf-16"), "utf-16"),
        "nav": (NAV_ONLY.encode(), "utf-8"),
        "bad-codec": (html(article(4)).encode(), "no-such-codec"),
        "deep": (b"<div>" * 100_000 + b"x", "utf-8"),
        "huge-text": (html(article(5, 200_000)).encode(), "utf-8"),
    }
    try:
        futures = {
            name: extractor.submit_extract(body, f"http://a/{name}", enc)
            for name, (body, enc) in bodies.items()
        }
        found = {name: future.result(timeout=120)[0].how for name, future in futures.items()}
    finally:
        extractor.close()
    assert found["empty"] == found["png"] == "empty"
    assert found["latin"] == found["utf16"] == found["bad-codec"] == "trafilatura"
    assert found["huge-text"] == "trafilatura"
    assert found["nav"] in ("fallback", "empty") and found["deep"] in ("fallback", "empty")


# -- items --------------------------------------------------------------------------------


@dataclass
class Article:
    url: str
    title: str = ""


@pytest.fixture
def pipeline() -> NearDupPipeline:
    pipe = NearDupPipeline.from_crawler(crawler(NEARDUP_TEXT_FIELD="text"))
    pipe.open_spider()
    return pipe


def process(pipeline: NearDupPipeline, item: Any) -> str:
    try:
        run(pipeline.process_item(item))
    except DropItem:
        return "dropped"
    return "kept"


@pytest.mark.parametrize("value", [None, 0, "", [], b""])
def test_items_without_text_are_kept_and_counted(pipeline, value) -> None:
    assert process(pipeline, {"url": "http://a/1", "text": value}) == "kept"
    assert process(pipeline, {"url": "http://a/2"}) == "kept"
    assert process(pipeline, Article("http://a/3")) == "kept"
    assert stat(pipeline, "neardup/skipped/no_text") == 3


@pytest.mark.parametrize("value", [5, 2.5, {"a": "b"}, ["one", 2], object()])
def test_items_with_text_of_another_type_are_kept_and_counted(pipeline, value, caplog) -> None:
    assert process(pipeline, {"url": "http://a/1", "text": value}) == "kept"
    assert process(pipeline, {"url": "http://a/2", "text": value}) == "kept"
    assert stat(pipeline, "neardup/skipped/bad_text") == 2
    assert "not text; item kept unchecked" in caplog.text


def test_bytes_and_lists_of_strings_are_taken_as_text(pipeline) -> None:
    """bytes are decoded as UTF-8 (bad bytes replaced) and a list of paragraphs is joined:
    both are common item shapes, and both are compared like the same text as a string."""
    text = article(6)
    assert process(pipeline, {"url": "http://a/1", "text": text}) == "kept"
    assert process(pipeline, {"url": "http://a/2", "text": text.encode()}) == "dropped"
    assert process(pipeline, {"url": "http://a/3", "text": bytearray(text.encode())}) == "dropped"
    other = article(7)
    assert process(pipeline, {"url": "http://a/4", "text": other.split(" ")}) == "kept"
    assert process(pipeline, {"url": "http://a/5", "text": tuple(other.split(" "))}) == "dropped"
    assert process(pipeline, {"url": "http://a/6", "text": b"\xff\xfe" + text.encode()}) in (
        "kept",
        "dropped",
    )
    assert stat(pipeline, "neardup/skipped/bad_text") == 0


@pytest.mark.parametrize("value", ["a string", object(), 42, None])
def test_objects_that_are_not_items_pass_untouched(pipeline, value) -> None:
    """Scrapy hands the pipelines whatever a callback yields that is not a request; a later
    pipeline of the project's may turn it into an item."""
    assert run(pipeline.process_item(value)) is value
    assert stat(pipeline, "neardup/skipped/not_item") == 1


def test_odd_strings_are_compared_not_fatal(pipeline) -> None:
    for n, text in enumerate(["\ud800 lone surrogate " * 60, "\x00\x01\x02" * 500, "🙂" * 5000]):
        assert process(pipeline, {"url": f"http://a/{n}", "text": text}) == "kept"
    errors = stat(pipeline, "neardup/skipped/errors")
    assert stat(pipeline, "neardup/items/kept") + errors == 3


# -- URLs ---------------------------------------------------------------------------------


def test_urls_that_cannot_be_canonicalised_pass_and_are_counted() -> None:
    c = crawler()
    dupefilter = NearDupDupeFilter.from_crawler(c)
    state = dupefilter.state
    for url in ("/relative/path", "no-scheme.example.com", 42, None, "http://[::1"):
        with pytest.raises(InvalidURL):
            state.canonical(url)  # type: ignore[arg-type]
    mw = UrlFilterMiddleware.from_crawler(c)
    odd = ["http://exa mple.com/", "http://%zz%/", "http:///", "http://a\x00b/", "data:,hi"]
    for url in odd:
        request = Request(url)
        assert dupefilter.request_seen(request) is False
        mw.process_request(request)
        assert dupefilter.request_seen(Request(url)) is True  # and seen once it is recorded


def test_a_malformed_rel_canonical_is_ignored() -> None:
    mw = UrlFilterMiddleware.from_crawler(crawler())
    for n, href in enumerate(["http://[bad", "http://a.com:99999/", "::::", "\x00", ""]):
        request = Request(f"http://a.com/page{n}")
        body = f'<html><head><link rel="canonical" href="{href}"></head></html>'.encode()
        response = HtmlResponse(request.url, body=body, request=request)
        mw.process_request(request)
        assert mw.process_response(request, response) is response


# -- settings -----------------------------------------------------------------------------

BAD_SETTINGS = [
    ("NEARDUP_ENABLED", "sometimes"),
    ("NEARDUP_URL_FILTER", 2),
    ("NEARDUP_BLOOM_CAPACITY", 0),
    ("NEARDUP_BLOOM_CAPACITY", 10**13),
    ("NEARDUP_BLOOM_CAPACITY", "lots"),
    ("NEARDUP_BLOOM_ERROR_RATE", 0.9),
    ("NEARDUP_BLOOM_ERROR_RATE", "nan"),
    ("NEARDUP_STRIP_PARAMS", ["utm_*", 5]),
    ("NEARDUP_STRIP_PARAMS", ["*"]),
    ("NEARDUP_STRIP_PARAMS", {"utm_source": 1}),
    ("NEARDUP_STRIP_TRAILING_SLASH", "maybe"),
    ("NEARDUP_CHECK_CANONICAL", "on"),
    ("NEARDUP_EXTRACT", []),
    ("NEARDUP_WORKERS", -1),
    ("NEARDUP_WORKERS", 1.5),
    ("NEARDUP_MAX_BODY_BYTES", 10),
    ("NEARDUP_MAX_TEXT_CHARS", "all"),
    ("NEARDUP_TEXT_FIELD", 5),
    ("NEARDUP_TEXT_FIELD", "  "),
    ("NEARDUP_URL_FIELD", ["url"]),
    ("NEARDUP_BACKEND", 3),
    ("NEARDUP_THRESHOLD", -0.1),
    ("NEARDUP_THRESHOLD", True),
    ("NEARDUP_SIMHASH_K", 0),
    ("NEARDUP_MIN_TOKENS", -3),
    ("NEARDUP_BACKEND_PARAMS", ["num_perm", 64]),
    ("NEARDUP_BACKEND_PARAMS", {"num_perm": "x"}),
    ("NEARDUP_ACTION", ["drop"]),
    ("NEARDUP_DUPLICATE_OF_FIELD", ""),
    ("NEARDUP_SIMILARITY_FIELD", 1),
    ("NEARDUP_STORAGE", "disk"),
    ("NEARDUP_STATE_DIR", 5),
    ("NEARDUP_FLUSH_INTERVAL", -1),
    ("NEARDUP_FLUSH_INTERVAL", "soon"),
    ("NEARDUP_DEBUG", "loud"),
]


@pytest.mark.parametrize(("name", "value"), BAD_SETTINGS)
def test_a_bad_setting_stops_the_crawler_at_start_naming_it(name: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        NearDupPipeline.from_crawler(crawler(**{name: value}))
    assert info.value.setting == name
    assert str(info.value).startswith(f"{name}=")


def test_flush_interval_zero_means_every_record() -> None:
    config = NearDupConfig.from_settings({"NEARDUP_FLUSH_INTERVAL": 0})
    assert config.flush_interval == 0.0


# -- saved state --------------------------------------------------------------------------


def valid_state_files(tmp_path: Path) -> Path:
    """A state directory written by a normal run (two documents, a few URLs)."""
    jobdir = tmp_path / "job"
    pipe = NearDupPipeline.from_crawler(crawler(JOBDIR=str(jobdir), NEARDUP_TEXT_FIELD="text"))
    for n in range(2):
        pipe.state.url_seen(f"http://a/{n}")
        process(pipe, {"url": f"http://a/{n}", "text": article(10 + n)})
    pipe.state.close()
    return jobdir


CORRUPTIONS = {
    "garbage": lambda d: b"garbage" * 1000,
    "truncated": lambda d: d[: len(d) // 2],
    "empty": lambda d: b"",
    "header": lambda d: b"\0" * 100 + d[100:],
}


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_unreadable_state_stops_at_start_naming_the_file(tmp_path, how) -> None:
    """Fail at start, not move aside: starting from empty state would crawl and keep again
    everything the earlier runs kept. The file is left as it was, for the user to decide."""
    jobdir = valid_state_files(tmp_path)
    path = jobdir / "neardup" / STATE_FILE
    broken = CORRUPTIONS[how](path.read_bytes())
    path.write_bytes(broken)
    c = crawler(JOBDIR=str(jobdir), NEARDUP_TEXT_FIELD="text")
    with pytest.raises(StateError) as info:
        NearDupPipeline.from_crawler(c)
    assert str(path) in str(info.value)
    assert info.value.path == str(path)
    assert path.read_bytes() == broken  # never overwritten by a state of nothing


def test_state_of_another_method_stops_at_start(tmp_path) -> None:
    jobdir = valid_state_files(tmp_path)
    with pytest.raises(StateError, match=r"state\.sqlite: state was written with method"):
        NearDupPipeline.from_crawler(crawler(JOBDIR=str(jobdir), NEARDUP_BACKEND="simhash"))


def test_saved_state_round_trips_after_the_checks(tmp_path) -> None:
    """The corruption tests above start from a file a normal run can read back."""
    jobdir = valid_state_files(tmp_path)
    pipe = NearDupPipeline.from_crawler(crawler(JOBDIR=str(jobdir), NEARDUP_TEXT_FIELD="text"))
    assert len(pipe.state.urls) == 2 and len(pipe.state.dedup) == 2
    pipe.state.close()


def test_a_crawl_with_corrupt_state_fails_at_start_with_one_clear_message(tmp_path) -> None:
    jobdir = valid_state_files(tmp_path)
    (jobdir / "neardup" / STATE_FILE).write_bytes(b"garbage" * 1000)
    args = {
        "start_url": "http://127.0.0.1:9/",
        "out": str(tmp_path / "o.json"),
        "settings": {"JOBDIR": str(jobdir), "LOG_LEVEL": "INFO"},
    }
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "crawl_runner.py"), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "example_project")]),
        },
    )
    message = f"StateError: {jobdir / 'neardup' / STATE_FILE}: file is not a database"
    assert message in proc.stderr
    assert "Spider opened" not in proc.stderr  # stopped before the crawl began
    assert (jobdir / "neardup" / STATE_FILE).read_bytes() == b"garbage" * 1000


# -- a crawl of bad pages ----------------------------------------------------------------

BAD_PAGES: dict[str, tuple[dict[str, str], bytes]] = {
    "/empty": ({"Content-Type": "text/html"}, b""),
    "/png-as-html": ({"Content-Type": "text/html"}, PNG),
    "/big": (
        {"Content-Type": "text/html; charset=utf-8"},
        html(article(20)).encode() + b" " * (50 * 2**20),
    ),
    "/bomb": (
        {"Content-Type": "text/html", "Content-Encoding": "gzip"},
        gzip.compress(b"<html>" + b" " * (100 * 2**20), 9),  # 100 KiB -> 100 MiB
    ),
    "/latin1": ({"Content-Type": "text/html; charset=utf-8"}, html(article(21)).encode("latin-1")),
    "/utf16": ({"Content-Type": "text/html"}, html(article(22)).encode("utf-16-le")),
    "/nav-only": ({"Content-Type": "text/html"}, NAV_ONLY.encode()),
    "/good1": ({"Content-Type": "text/html"}, html(article(23), "One").encode()),
    "/good2": ({"Content-Type": "text/html"}, html(article(24), "Two").encode()),
    "/copy-of-good1": ({"Content-Type": "text/html"}, html(article(23), "One").encode()),
}
INDEX = "".join(f'<a href="{path}">{path}</a>' for path in BAD_PAGES).encode()


class BadSiteHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        headers, body = BAD_PAGES.get(self.path, ({"Content-Type": "text/html"}, INDEX))
        self.send_response(200)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


SPIDER = """
import scrapy
from scrapy.http import TextResponse

class BadSiteSpider(scrapy.Spider):
    name = "badsite"
    def __init__(self, start_url=None, **kw):
        super().__init__(**kw)
        self.start_url = start_url
    async def start(self):
        yield scrapy.Request(self.start_url)
    def parse(self, response):
        if response.url.rstrip("/") == self.start_url.rstrip("/"):
            yield from response.follow_all(css="a::attr(href)")
        else:
            yield {"url": response.url}
"""

RUNNER = """
import json, sys
from scrapy import signals
from scrapy.crawler import CrawlerProcess
from badsite import BadSiteSpider
args = json.loads(sys.argv[1])
kept, dropped = [], []
process = CrawlerProcess(settings={"ADDONS": {"scrapy_neardup.Addon": 500},
    "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO",
    "NEARDUP_WORKERS": 1, "DOWNLOAD_MAXSIZE": 64 * 2**20, "NEARDUP_MIN_TOKENS": 20})
crawler = process.create_crawler(BadSiteSpider)
def on_kept(item, **kw):
    kept.append(item["url"])
def on_dropped(item, **kw):
    dropped.append(item["url"])
crawler.signals.connect(on_kept, signal=signals.item_scraped)
crawler.signals.connect(on_dropped, signal=signals.item_dropped)
process.crawl(crawler, start_url=args["start_url"])
process.start()
stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
print(json.dumps({"kept": kept, "dropped": dropped, "stats": stats}))
"""


def test_a_crawl_of_bad_pages_finishes_and_counts_each(tmp_path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BadSiteHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (tmp_path / "badsite.py").write_text(SPIDER)
    (tmp_path / "run.py").write_text(RUNNER)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        proc = subprocess.run(
            [sys.executable, "run.py", json.dumps({"start_url": url})],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])},
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    stats = result["stats"]
    kept = {u.rsplit("/", 1)[1] for u in result["kept"]}
    dropped = {u.rsplit("/", 1)[1] for u in result["dropped"]}
    assert stats["finish_reason"] == "finished"
    assert "Traceback" not in proc.stderr
    # the good pages are still deduplicated (which copy comes first is the downloads' race)
    assert len(dropped) == 1 and dropped < {"good1", "copy-of-good1"}
    assert {"good2", "latin1", "utf16"} <= kept and len(kept & {"good1", "copy-of-good1"}) == 1
    # every bad page is kept unchecked and counted, or stopped by Scrapy with a logged reason
    assert "bomb" not in kept and "DOWNLOAD_MAXSIZE" in proc.stderr
    assert stats["neardup/skipped/too_large"] == 1  # /big
    assert stats["neardup/extract/empty"] >= 2  # /empty, /png-as-html (+ /nav-only)
    assert stats["neardup/skipped/no_text"] >= 3
    assert {"empty", "png-as-html", "big", "nav-only"} <= kept
    assert stats["neardup/extract/trafilatura"] >= 5


def test_pipeline_alone_says_its_items_have_no_text(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="scrapy_neardup.pipeline"):
        NearDupPipeline.from_crawler(crawler())
    assert "PageTextMiddleware is not" in caplog.text
    caplog.clear()
    middlewares = {"scrapy_neardup.middlewares.PageTextMiddleware": 50}
    with caplog.at_level(logging.WARNING, logger="scrapy_neardup.pipeline"):
        NearDupPipeline.from_crawler(crawler(SPIDER_MIDDLEWARES=middlewares))
        NearDupPipeline.from_crawler(crawler(NEARDUP_TEXT_FIELD="text"))
    assert "PageTextMiddleware is not" not in caplog.text
