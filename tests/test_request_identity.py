"""Request identity through a real crawl on loopback: the filter merges only what Scrapy merges.

Two requests are one for the URL filter only when the crawler's request fingerprinter calls
them one once their URLs are canonicalised: POST bodies, methods and a project's fingerprinter
keep requests apart as in plain Scrapy; tracking parameters, fragments, default ports and
parameter order do not. Each crawl runs in its own process (a reactor cannot restart), once
with plain Scrapy and once with the add-on, against the same server, and the requests that
reached the server are compared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class EchoHandler(BaseHTTPRequestHandler):
    """Answers every GET and POST with a small page and records what it was asked."""

    protocol_version = "HTTP/1.1"
    seen: list[str]

    def _answer(self, body: bytes) -> None:
        self.seen.append(f"{self.command} {self.path} {body.decode()}".strip())
        page = f"<html><body><p>{self.command} {self.path}</p></body></html>".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        self._answer(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def log_message(self, format: str, *args: object) -> None:
        pass


SPIDER = """
import hashlib, json
import scrapy
from scrapy.utils.request import RequestFingerprinter

class ApiFingerprinter:
    \"\"\"Like the fingerprinters of API plugins: request parameters in meta are part of it.\"\"\"
    def __init__(self, crawler=None):
        self.default = RequestFingerprinter(crawler)
    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)
    def fingerprint(self, request):
        api = json.dumps(request.meta.get("api", {}), sort_keys=True).encode()
        return hashlib.sha1(self.default.fingerprint(request) + api).digest()

class IdentitySpider(scrapy.Spider):
    name = "identity"
    def __init__(self, base=None, **kw):
        super().__init__(**kw)
        self.base = base
    async def start(self):
        b = self.base
        yield scrapy.FormRequest(b + "search", formdata={"q": "one"})
        yield scrapy.FormRequest(b + "search", formdata={"q": "two"})  # another body: kept
        yield scrapy.FormRequest(b + "search", formdata={"q": "one"})  # the same POST again
        yield scrapy.Request(b + "search")  # a GET of the same URL: another request
        yield scrapy.Request(b + "page?b=2&a=1")
        yield scrapy.Request(b + "page?a=1&b=2&utm_source=x#top")  # the same page
        yield scrapy.Request(b + "api", meta={"api": {"render": True}})
        yield scrapy.Request(b + "api", meta={"api": {"render": False}})  # apart if fingerprinted
    def parse(self, response):
        yield {"url": response.url}
"""

RUNNER = """
import json, sys
from scrapy.crawler import CrawlerProcess
from identity import IdentitySpider
args = json.loads(sys.argv[1])
settings = {"ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False, "LOG_LEVEL": "INFO",
            "CONCURRENT_REQUESTS": 1, "NEARDUP_WORKERS": 0, **args["settings"]}
process = CrawlerProcess(settings=settings)
crawler = process.create_crawler(IdentitySpider)
process.crawl(crawler, base=args["base"])
process.start()
stats = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float, str))}
print(json.dumps(stats))
"""

ADDON = {"ADDONS": {"scrapy_neardup.Addon": 500}}
FINGERPRINTER = {"REQUEST_FINGERPRINTER_CLASS": "identity.ApiFingerprinter"}


@pytest.fixture(scope="module")
def server() -> tuple[ThreadingHTTPServer, list[str]]:
    seen: list[str] = []
    handler = type("Handler", (EchoHandler,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd, seen
    httpd.shutdown()
    httpd.server_close()


def crawl(server, tmp_path: Path, settings: dict) -> tuple[list[str], dict]:
    httpd, seen = server
    seen.clear()
    (tmp_path / "identity.py").write_text(SPIDER)
    (tmp_path / "run.py").write_text(RUNNER)
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    proc = subprocess.run(
        [sys.executable, "run.py", json.dumps({"base": base, "settings": settings})],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return sorted(seen), json.loads(proc.stdout.strip().splitlines()[-1])


def test_posts_and_methods_stay_apart_as_in_scrapy(server, tmp_path) -> None:
    plain, _ = crawl(server, tmp_path, {})
    ours, stats = crawl(server, tmp_path, ADDON)
    assert ours == [
        "GET /api",
        "GET /page?b=2&a=1",
        "GET /search",
        "POST /search q=one",
        "POST /search q=two",
    ]
    # Plain Scrapy fetches the same, plus the tracking-parameter variant of /page.
    assert sorted(set(plain) - set(ours)) == ["GET /page?a=1&b=2&utm_source=x"]
    assert stats["dupefilter/filtered"] == 3  # the repeated POST, /page, the second /api
    assert stats["neardup/urls/filtered"] == 3


def test_a_project_fingerprinter_keeps_requests_apart(server, tmp_path) -> None:
    plain, _ = crawl(server, tmp_path, FINGERPRINTER)
    ours, stats = crawl(server, tmp_path, {**FINGERPRINTER, **ADDON})
    assert ours.count("GET /api") == plain.count("GET /api") == 2
    assert ours.count("POST /search q=one") == 1  # still one request to that fingerprinter
    assert sorted(set(plain) - set(ours)) == ["GET /page?a=1&b=2&utm_source=x"]
    assert stats["dupefilter/filtered"] == 2
