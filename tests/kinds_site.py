"""A small loopback site for the spider kinds of tests/test_crash_kinds.py.

``ARTICLES`` article pages ``/a/<n>`` (or as many as asked), each with its own text (words
drawn from a seeded vocabulary, so no two pages are near-duplicates) and links to three other
articles. They are reached in every way a spider kind needs:

* HTML: ``/`` links to the list pages ``/list/<k>`` (``PER_LIST`` articles each, and the
  next list page);
* ``/sitemap.xml``: a sitemap index of ``/sitemap-<k>.xml`` sitemaps (``robots.txt`` names it);
* ``/feed.xml`` (RSS ``<item>``s with ``<link>``) and ``/feed.csv`` (``id,url,title`` rows);
* ``/search``: a GET form; POSTing ``page=k`` (form-encoded) answers the HTML list page ``k``
  with the form for the next one;
* ``/api/list``: POST a JSON ``{"page": k}``, get ``{"urls": [...], "next": k + 1 | null}``;
* ``/old/<n>``: 404 for every article (a moved page: spiders follow it with an errback).

Every response waits ``delay`` seconds first (a slow site: a kill lands mid-crawl).
"""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ARTICLES = 600
PER_LIST = 20
SITEMAPS = 3


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnoprstuvw"
    vowels = "aeiou"
    words = set()
    while len(words) < 3000:
        n = rng.randint(2, 4)
        words.add("".join(rng.choice(letters) + rng.choice(vowels) for _ in range(n)))
    return sorted(words)


def article_path(n: int) -> str:
    return f"/a/{n}"


def title(n: int) -> str:
    return f"Article number {n}"


def _article(n: int, articles: int, words: list[str], rng: random.Random) -> bytes:
    paragraphs = []
    for _ in range(5):
        sentences = []
        for _ in range(5):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(8, 14)))
            sentences.append(sentence.capitalize() + ".")
        paragraphs.append("<p>" + " ".join(sentences) + "</p>")
    links = "".join(
        f'<li><a href="{article_path((n + d) % articles)}">more {(n + d) % articles}</a></li>'
        for d in (1, 7, 31)
    )
    return _page(
        title(n),
        f'<article><h1>{title(n)}</h1>{"".join(paragraphs)}</article><ul class="more">{links}</ul>',
    )


def _page(head_title: str, body: str) -> bytes:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{head_title}</title></head>'
        f'<body><nav><a href="/">Home</a></nav>{body}</body></html>'
    ).encode()


def _list_body(k: int) -> str:
    items = "".join(
        f'<li><a href="{article_path(n)}">{title(n)}</a></li>'
        for n in range(k * PER_LIST, (k + 1) * PER_LIST)
    )
    return f'<ul class="articles">{items}</ul>'


def _search_form(k: int, lists: int) -> str:
    return (
        f'<form id="search" method="post" action="/search" data-pages="{lists}">'
        f'<input type="hidden" name="page" value="{k}"><input type="submit" value="Go"></form>'
    )


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A killed crawl resets its connections: not worth a traceback on stderr."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class KindsSite:
    """The pages, built once from a seed; :meth:`serve` serves them on loopback."""

    def __init__(self, seed: int = 7, articles: int = ARTICLES) -> None:
        self.articles = articles
        self.lists = articles // PER_LIST
        rng = random.Random(seed)
        words = _vocabulary(rng)
        self.pages: dict[str, tuple[str, bytes]] = {}
        html = "text/html; charset=utf-8"
        for n in range(articles):
            self.pages[article_path(n)] = (html, _article(n, articles, words, rng))
        home = "".join(f'<li><a href="/list/{k}">List {k}</a></li>' for k in range(self.lists))
        self.pages["/"] = (html, _page("Home", f"<ul>{home}</ul>"))
        for k in range(self.lists):
            more = f'<a class="next" href="/list/{k + 1}">next</a>' if k + 1 < self.lists else ""
            self.pages[f"/list/{k}"] = (html, _page(f"List {k}", _list_body(k) + more))
        self.pages["/search"] = (html, _page("Search", _search_form(0, self.lists)))
        self.pages["/robots.txt"] = ("text/plain", b"User-agent: *\nSitemap: /sitemap.xml\n")
        self.urls_of_sitemap = [
            [article_path(n) for n in range(articles) if n % SITEMAPS == s] for s in range(SITEMAPS)
        ]

    def article_urls(self, base: str) -> set[str]:
        """Every page a spider must deliver an item for."""
        return {base.rstrip("/") + article_path(n) for n in range(self.articles)}

    def dynamic(self, path: str, base: str) -> tuple[str, bytes] | None:
        """Pages whose links are absolute (they need the server's own address)."""
        if path == "/sitemap.xml":
            entries = "".join(
                f"<sitemap><loc>{base}/sitemap-{s}.xml</loc></sitemap>" for s in range(SITEMAPS)
            )
            return "application/xml", (
                '<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'
            ).encode()
        if path.startswith("/sitemap-") and path.endswith(".xml"):
            s = int(path[len("/sitemap-") : -len(".xml")])
            entries = "".join(f"<url><loc>{base}{u}</loc></url>" for u in self.urls_of_sitemap[s])
            return "application/xml", (
                '<?xml version="1.0" encoding="UTF-8"?><urlset '
                f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
            ).encode()
        if path == "/feed.xml":
            items = "".join(
                f"<item><title>{title(n)}</title><link>{base}{article_path(n)}</link>"
                f"<guid>{n}</guid></item>"
                for n in range(self.articles)
            )
            return "application/rss+xml", (
                f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel>'
                f"<title>Feed</title>{items}</channel></rss>"
            ).encode()
        if path == "/feed.csv":
            rows = "".join(
                f"{n},{base}{article_path(n)},{title(n)}\n" for n in range(self.articles)
            )
            return "text/csv", ("id,url,title\n" + rows).encode()
        return None

    def post(self, path: str, content_type: str, body: bytes) -> tuple[str, bytes] | None:
        if path == "/search" and content_type.startswith("application/x-www-form-urlencoded"):
            k = int(parse_qs(body.decode())["page"][0])
            form = _search_form(k + 1, self.lists) if k + 1 < self.lists else ""
            return "text/html; charset=utf-8", _page(f"Results {k}", _list_body(k) + form)
        if path == "/api/list" and content_type.startswith("application/json"):
            k = int(json.loads(body)["page"])
            urls = [article_path(n) for n in range(k * PER_LIST, (k + 1) * PER_LIST)]
            return "application/json", json.dumps(
                {"urls": urls, "next": k + 1 if k + 1 < self.lists else None}
            ).encode()
        return None

    def serve(self, delay: float) -> tuple[ThreadingHTTPServer, str]:
        """Serve in a daemon thread; returns the server and its base URL (no final slash)."""
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 30

            def do_GET(self) -> None:
                time.sleep(delay)
                path = urlsplit(self.path).path
                found = site.pages.get(path) or site.dynamic(path, self.base())
                self.respond(found)

            def do_POST(self) -> None:
                time.sleep(delay)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                content_type = self.headers.get("Content-Type", "")
                self.respond(site.post(urlsplit(self.path).path, content_type, body))

            def base(self) -> str:
                return f"http://{self.headers.get('Host')}"

            def respond(self, found: tuple[str, bytes] | None) -> None:
                status, (content_type, body) = (
                    (200, found) if found else (404, ("text/html", _page("Not found", "")))
                )
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, name="kinds-site", daemon=True).start()
        return server, f"http://127.0.0.1:{server.server_address[1]}"
