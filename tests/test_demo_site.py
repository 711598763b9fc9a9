"""The bundled demo site: served correctly, fully reachable, and its ground truth is honest."""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
import struct
import subprocess
import sys
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from html.parser import HTMLParser
from http.client import HTTPConnection
from pathlib import Path

import demo_site
import pytest
from demo_site import Site, build_site, jaccard, serve, shingles
from demo_site.__main__ import main as demo_main

EXAMPLE_PROJECT = Path(__file__).resolve().parents[1] / "example_project"


HAN_RE = re.compile(r"[\u4e00-\u9fff]")


def max_pairwise_jaccard(texts: dict[str, str]) -> tuple[float, str, str]:
    """The most similar pair among ``texts`` (word / Han-character 3-gram Jaccard)."""
    sets = {k: shingles(t) for k, t in texts.items()}
    return max(
        (len(sets[a] & sets[b]) / len(sets[a] | sets[b]), a, b)
        for a, b in itertools.combinations(sorted(sets), 2)
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def fetch(base: str, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one request, without following redirects."""
    request = urllib.request.Request(base + target, method=method)
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        try:
            return err.code, dict(err.headers), err.read()
        finally:
            err.close()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.canonical: str | None = None
        self.og_type: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        elif tag == "link" and a.get("rel") == "canonical":
            self.canonical = a.get("href")
        elif tag == "meta" and a.get("property") == "og:type":
            self.og_type = a.get("content")


def parse(body: bytes) -> _Links:
    parser = _Links()
    parser.feed(body.decode("utf-8"))
    parser.close()
    return parser


@pytest.fixture(scope="module")
def site() -> Site:
    return build_site()


@pytest.fixture(scope="module")
def base(site: Site) -> Iterator[str]:
    server, port = serve(site=site)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def crawl(base: str) -> dict[str, tuple[int, dict[str, str], bytes]]:
    """Follow every ``<a href>`` from ``/`` (and every redirect); responses by link URL."""
    seen: dict[str, tuple[int, dict[str, str], bytes]] = {}
    queue = ["/"]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        target = url.split("#", 1)[0]
        status, headers, body = fetch(base, target)
        seen[url] = (status, headers, body)
        if status == 301:
            queue.append(headers["Location"])
        elif status == 200 and headers["Content-Type"].startswith("text/html") and body:
            for href in parse(body).hrefs:
                assert href.startswith("/"), f"{url} links off-site or relatively: {href}"
                queue.append(href)
    return seen


# -- serving -------------------------------------------------------------------------------


def test_every_page_is_served_as_built(site: Site, base: str) -> None:
    for path, page in site.pages.items():
        status, headers, body = fetch(base, path)
        assert status == page.status, path
        assert body == page.body, path
        assert headers["Content-Type"] == page.headers["Content-Type"], path
        assert headers["Content-Length"] == str(len(page.body)), path
        if page.status == 301:
            assert headers["Location"] == page.redirect
            assert site.pages[headers["Location"]].status == 200
        if page.headers["Content-Type"].startswith("text/html"):
            assert page.headers["Content-Type"] == "text/html; charset=utf-8"


def test_http11_keep_alive_head_and_unknown_paths(base: str, site: Site) -> None:
    host, port = base.removeprefix("http://").split(":")
    conn = HTTPConnection(host, int(port), timeout=10)
    try:
        for target in ("/", "/zh", "/section/energy"):
            conn.request("GET", target)
            response = conn.getresponse()
            assert response.version == 11
            assert response.read() == site.pages[target].body
        conn.request("HEAD", "/")
        response = conn.getresponse()
        assert response.getheader("Content-Length") == str(len(site.pages["/"].body))
        assert response.read() == b""
    finally:
        conn.close()
    status, headers, body = fetch(base, "/no/such/page")
    assert status == 404
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"Not found" in body


def test_edge_responses(site: Site, base: str) -> None:
    assert fetch(base, "/news/2023/withdrawn-story")[0] == 404
    status, headers, body = fetch(base, "/notices/draft")
    assert (status, headers["Content-Length"], body) == (200, "0", b"")
    status, headers, png = fetch(base, "/media/output-chart")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"\x00" in png[:64]
    pos, chunks = 8, []
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        tag, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(tag + data) & 0xFFFFFFFF == crc
        chunks.append(tag)
        pos += 12 + length
    assert chunks == [b"IHDR", b"IDAT", b"IEND"]


# -- reachability and truth ----------------------------------------------------------------


def test_links_from_home_reach_exactly_the_truth(site: Site, crawl: dict) -> None:
    assert set(crawl) == set(site.truth)
    assert {u.split("#", 1)[0] for u in site.truth} == set(site.pages)
    for url, (status, headers, _body) in crawl.items():
        entry = site.truth[url]
        assert status == entry.status, url
        final = headers["Location"] if status == 301 else url.split("#", 1)[0]
        assert final == entry.final_url, url


def test_page_markup_matches_roles(site: Site) -> None:
    for url, entry in site.truth.items():
        page = site.pages[entry.final_url]
        if entry.role in ("article", "notice"):
            links = parse(page.body)
            assert links.og_type == "article", url
            assert entry.item
        elif entry.role == "nav":
            assert parse(page.body).og_type == "website", url
            assert not entry.item
        else:
            assert not entry.item


def test_canonical_links(site: Site) -> None:
    for url, entry in site.truth.items():
        if not entry.item or entry.kind == "redirect":
            continue
        canonical = parse(site.pages[entry.final_url].body).canonical
        if entry.relation == "original":
            assert canonical == url
        elif entry.kind == "rel-canonical":
            assert canonical == entry.of and canonical != url
        elif entry.relation == "url-variant":  # byte-identical copy of the page it varies
            assert canonical == parse(site.pages[entry.of.split("#")[0]].body).canonical
        elif entry.kind == "print":
            assert canonical is None
        else:  # partner, wire and portal copies claim to be their own page
            assert canonical == url


def test_truth_is_consistent_and_counts_are_pinned(site: Site) -> None:
    variants, copies = site.url_variants(), site.content_duplicates()
    assert not set(variants) & set(copies)
    for url, of in variants.items():
        assert site.truth[of].doc_id == site.truth[url].doc_id
        assert site.truth[of].relation != "url-variant"
    for url, of in copies.items():
        assert site.truth[of].relation == "original"
        assert site.truth[of].doc_id == site.truth[url].doc_id
    clusters = site.clusters()
    assert set(clusters) == site.expected_unique_docs()
    for doc_id, urls in clusters.items():
        assert [site.truth[u].relation for u in urls].count("original") == 1
        assert site.primary_url(doc_id) == urls[0]
    assert site.lookup("http://127.0.0.1:1/notices/letters").doc_id == "notice-04"
    assert site.lookup(urls[0] + "#whatever").doc_id == site.truth[urls[0]].doc_id
    summary = site.summary()
    # the numbers the package docstring promises
    assert summary["pages"] == 125 and summary["urls"] == 132
    assert summary["roles"] == {
        "article": 104,
        "binary": 1,
        "empty": 1,
        "error": 1,
        "nav": 21,
        "notice": 4,
    }
    assert summary["kinds"] == {
        "fragment": 7,
        "original": 78,
        "param-order": 2,
        "print": 6,
        "redirect": 3,
        "rel-canonical": 4,
        "reprint": 4,
        "syndicated": 8,
        "template": 6,
        "tracking": 10,
        "trailing-slash": 4,
    }
    assert summary["item_urls"] == 108
    assert summary["url_variants"] == len(variants) == 30
    assert summary["content_duplicates"] == len(copies) == 24
    assert summary["contained_copies"] == summary["near_copies"] == 12
    assert summary["expected_unique_docs"] == 54
    assert summary["expected_unique_docs_by_lang"] == {"en": 44, "zh": 10}
    assert summary["articles_by_lang"] == {"en": 40, "zh": 10}
    assert "54 are cluster originals" in " ".join((demo_site.__doc__ or "").split())


# -- content -------------------------------------------------------------------------------


def test_article_lengths(site: Site) -> None:
    for article in site.articles.values():
        if article.lang == "en":
            assert 300 <= len(article.text.split()) <= 900, article.doc_id
        else:
            assert 400 <= len(HAN_RE.findall(article.text)) <= 1200, article.doc_id
    notices = [p for u, p in site.pages.items() if site.truth[u].role == "notice"]
    assert len(notices) == 4
    assert all(15 <= len(p.text.split()) <= 40 for p in notices)


def test_distinct_documents_share_few_word_trigrams(site: Site) -> None:
    texts = {
        e.doc_id: site.pages[u].text
        for u, e in site.truth.items()
        if e.item and e.relation == "original"
    }
    assert len(texts) == 54
    assert max_pairwise_jaccard(texts)[0] < 0.2


def test_distinct_chinese_articles_share_few_jieba_trigrams(site: Site) -> None:
    jieba = pytest.importorskip("jieba")
    jieba.setLogLevel(60)

    def grams(text: str) -> set[tuple[str, ...]]:
        words = [w for w in jieba.lcut(text) if w.strip()]
        return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}

    zh = {a.doc_id: grams(a.text) for a in site.articles.values() if a.lang == "zh"}
    assert len(zh) == 10
    for a, b in itertools.combinations(sorted(zh), 2):
        assert len(zh[a] & zh[b]) / len(zh[a] | zh[b]) < 0.2, (a, b)


def test_copies_stay_close_to_their_original(site: Site) -> None:
    for url, original in site.content_duplicates().items():
        entry = site.truth[url]
        copy_text, orig_text = site.pages[url].text, site.pages[original].text
        similarity = jaccard(copy_text, orig_text)
        assert similarity == pytest.approx(entry.similarity, abs=1e-4)
        assert similarity > 0.6, url
        if entry.kind in ("template", "print"):
            assert copy_text == orig_text
        elif entry.kind == "syndicated":
            assert similarity < 0.95
            assert "This article first appeared on The Riverside Chronicle." in copy_text
            assert site.pages[url].title != site.pages[original].title
            words = orig_text.split()
            blocks = difflib.SequenceMatcher(None, words, copy_text.split(), autojunk=False)
            changed = len(words) - sum(m.size for m in blocks.get_matching_blocks())
            assert 0.01 <= changed / len(words) <= 0.04, url
        else:
            assert entry.kind == "reprint"
            assert "转载" in copy_text and "责任编辑" in copy_text
            assert similarity < 0.95


def test_boilerplate_is_heavy_and_identical(site: Site) -> None:
    bodies = [
        site.pages[u].body.decode("utf-8")
        for u, e in site.truth.items()
        if e.relation == "original" and e.lang == "en" and e.role == "article"
    ]
    sidebar = re.compile(r'<aside class="sidebar">.*?</aside>', re.S)
    footer = re.compile(r'<footer class="site-footer">.*?</footer>', re.S)
    sidebars = {sidebar.search(b).group(0) for b in bodies}  # type: ignore[union-attr]
    footers = {footer.search(b).group(0) for b in bodies}  # type: ignore[union-attr]
    assert len(sidebars) == 1 and len(footers) == 1
    words = len(re.sub(r"<[^>]+>", " ", sidebars.pop()).split())
    assert words >= 250


def test_extracted_main_text_keeps_the_truth(site: Site) -> None:
    trafilatura = pytest.importorskip("trafilatura")
    texts = {}
    for url, entry in site.truth.items():
        if entry.item and entry.relation != "url-variant":
            html = site.pages[url].body.decode("utf-8")
            texts[url] = trafilatura.extract(html, include_comments=False) or ""
    originals = {u: t for u, t in texts.items() if site.truth[u].relation == "original"}
    assert max_pairwise_jaccard(originals)[0] < 0.2
    for url, original in site.content_duplicates().items():
        assert jaccard(texts[url], texts[original]) > 0.6, url


# -- determinism and the command line ------------------------------------------------------


def _fingerprint(site: Site) -> str:
    digest = hashlib.sha256()
    for path, page in site.pages.items():
        digest.update(path.encode() + b"\0" + page.body + b"\0")
    digest.update(json.dumps(site.to_json(), sort_keys=True).encode())
    return digest.hexdigest()


def test_generation_is_deterministic(site: Site) -> None:
    assert _fingerprint(build_site()) == _fingerprint(site)
    assert _fingerprint(build_site(seed=7)) != _fingerprint(site)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import hashlib, json, demo_site\n"
        "s = demo_site.build_site(); d = hashlib.sha256()\n"
        "for p, g in s.pages.items(): d.update(p.encode() + b'\\0' + g.body + b'\\0')\n"
        "d.update(json.dumps(s.to_json(), sort_keys=True).encode()); print(d.hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLE_PROJECT)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert out.stdout.strip() == _fingerprint(site)


def test_cli_dumps_truth(tmp_path: Path, site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "truth.json"
    assert demo_main(["--dump-truth", str(out)]) == 0
    assert "132 truth entries" in capsys.readouterr().out
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["summary"] == json.loads(json.dumps(site.summary()))
    assert len(data["entries"]) == len(site.truth)
    assert {e["url"] for e in data["entries"]} == set(site.truth)
