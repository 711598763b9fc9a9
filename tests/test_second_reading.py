"""A page read short by trafilatura's fast mode is read again in full before it is dropped.

On DocBook sites (the Debian Handbook) the fast mode keeps a chapter's command listings and
not its prose (``<div class="para">``); the listings are the same in every translation, so a
chapter was dropped for its translation. These pages reproduce that shape.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scrapy_neardup.extraction import FastReadings, KeptLines, PageLines, extract_main_text

ROOT = Path(__file__).resolve().parents[1]

from bench.common import serve_pages  # noqa: E402
from tests.test_crawl import crawl  # noqa: E402

EN = (
    "Certificates are an important building block of many network services built on "
    "cryptographic protocols, when they need some sort of central authentication.",
    "Among those protocols, the transport layer security protocol was designed to secure "
    "connections to web servers, and it is now used by mail and chat servers too.",
    "The administrator of a small company can get certificates for free from a public "
    "authority, which checks that the requester controls the domain name.",
)
DE = (
    "Zertifikate sind ein wichtiger Baustein vieler Netzwerkdienste, die auf kryptografischen "
    "Protokollen aufbauen, wenn sie eine Art zentrale Authentifizierung benötigen.",
    "Unter diesen Protokollen wurde das Transportschicht-Sicherheitsprotokoll entworfen, um "
    "Verbindungen zu Webservern abzusichern, und heute nutzen es auch Mail- und Chatserver.",
    "Der Administrator einer kleinen Firma kann kostenlos Zertifikate von einer öffentlichen "
    "Stelle erhalten, die prüft, ob der Antragsteller den Domainnamen kontrolliert.",
)
LISTING = "\n".join(
    f"# certbot renew --cert-name host{i}.example.org --deploy-hook 'systemctl reload "
    "apache2' --quiet"
    for i in range(30)
)


def chapter(title: str, paras: tuple[str, ...], link: str = "", extra: str = "") -> bytes:
    prose = "".join(f'<div class="para">{p}</div>' for p in paras[:2])
    last = f'<div class="para">{paras[2]}</div>'
    nav = f'<a href="{link}">next</a>' if link else ""
    return (
        f'<html><head><title>{title}</title><meta property="og:type" content="article">'
        f'</head><body><div class="section"><div class="titlepage"><h2 class="title">{title}'
        f'</h2></div>{prose}<pre class="screen">{LISTING}</pre>{last}</div>{nav}{extra}'
        "</body></html>"
    ).encode()


# Each page links the next, so they come in this order: English, German, the German again.
PAGES = {
    "/": b'<html><body><a href="/en/x509.html">en</a></body></html>',
    "/en/x509.html": chapter("10.2. X.509 certificates", EN, "/de/x509.html"),
    "/de/x509.html": chapter("10.2. X.509-Zertifikate", DE, "/print/de/x509.html"),
    # The German chapter again (a print version): a true copy, to be dropped.
    "/print/de/x509.html": chapter("10.2. X.509-Zertifikate", DE),
}


def test_the_pages_reproduce_a_short_fast_reading() -> None:
    fast = extract_main_text(PAGES["/de/x509.html"], fast=True).text
    full = extract_main_text(PAGES["/de/x509.html"], fast=False).text
    assert "Zertifikate sind" not in fast and "Zertifikate sind" in full


def crawl_pages(pages: dict[str, bytes], out: Path) -> tuple[str, dict]:
    """The start URL, and the result of crawling ``pages`` one request at a time."""
    server = serve_pages(pages.get)
    try:
        start = f"http://127.0.0.1:{server.server_address[1]}/"
        return start, crawl(start, out, CONCURRENT_REQUESTS=1)
    finally:
        server.shutdown()
        server.server_close()


def test_a_translation_read_short_is_read_in_full_and_kept(tmp_path) -> None:
    start, result = crawl_pages(PAGES, tmp_path / "out.json")
    german = {start + "de/x509.html", start + "print/de/x509.html"}
    kept = {item["url"] for item in result["kept"]}
    # The German chapter is not dropped for the English one: one of its two copies is kept
    # (which one follows whose text came back first: the pipeline waits for each page's text
    # while the crawl goes on), and the other is dropped for it.
    assert start + "en/x509.html" in kept and len(kept & german) == 1, kept
    (dropped,) = result["dropped"]
    assert dropped["url"] in german - kept
    assert dropped["reason"].split("near-duplicate of ")[1].startswith(next(iter(kept & german)))
    stats = result["stats"]
    assert stats["neardup/extract/reread_richer"] >= 1
    # The second German copy is read in full at once (the site reads short by then), or,
    # read before the first one's verdict, read again before its drop: two full readings
    # either way.
    in_full = stats.get("neardup/extract/in_full", 0)
    assert stats["neardup/extract/reread"] + in_full == 2


def test_fast_readings_are_trusted_per_site_until_one_reads_short() -> None:
    readings = FastReadings(trust_after=3, sample_every=4, max_sites=2)
    for _ in range(3):
        assert readings.should_reread("a.example")
        readings.record("a.example", richer=False)
    asked = [readings.should_reread("a.example") for _ in range(8)]
    assert asked.count(True) == 2  # one in four, once trusted
    readings.record("a.example", richer=True)
    assert all(readings.should_reread("a.example") for _ in range(50))
    assert readings.reads_short("a.example") and not readings.reads_short("b.example")
    assert readings.should_reread("b.example") and readings.should_reread("c.example")
    assert "a.example" not in readings._sites  # bounded: the least recently seen went first


def test_page_lines_are_the_text_nodes_a_reader_sees() -> None:
    page = (
        b"<html><head><title>T</title><style>p {color: red}</style></head><body><p>One  line"
        b"</p><script>var session = 'a1';</script><p>Another <b>line</b></p></body></html>"
    )
    from trafilatura.utils import load_html

    lines = PageLines.of(load_html(page.decode()))
    assert lines.chars.tolist() == [len("One line"), len("Another"), len("line")]
    assert lines.chars_not_in(np.unique(lines.hashes)) == 0
    other = PageLines.of(load_html(page.replace(b"Another", b"A third").decode()))
    assert other.chars_not_in(np.unique(lines.hashes)) == len("A third")
    # A minified page (one source line) still changes by one text node, not by all of it.
    de, session = PAGES["/de/x509.html"], chapter("10.2. X.509-Zertifikate", DE, extra="<p>s42</p>")
    kept = np.unique(extract_main_text(de, fast=True).lines.hashes)
    assert extract_main_text(session, fast=True).lines.chars_not_in(kept) == len("s42")
    assert extract_main_text(de, fast=False).lines is None  # a full reading is never read again


def test_kept_lines_hold_a_kept_page_and_its_confirmed_copies_and_are_bounded() -> None:
    def lines(*texts: str) -> PageLines:
        hashes = [hash(t) & 0xFFFFFFFF for t in texts]
        return PageLines(np.array(hashes, np.uint32), np.array([len(t) for t in texts], np.uint32))

    kept = KeptLines(max_pages=2, per_page=1)
    kept.remember("a", lines("nav", "article"))
    assert kept.hold(["a"], lines("nav", "article", "ad"), allowed=2)
    assert not kept.hold(["a"], lines("nav", "article", "ad"), allowed=1)
    assert not kept.hold(["b"], lines("nav"), allowed=100)  # unknown: read again
    kept.remember_copy(["a"], lines("nav", "article", "comment"))
    assert kept.hold(["a"], lines("article", "comment"), allowed=0)
    kept.remember_copy(["a"], lines("more"))  # per_page: no room
    assert not kept.hold(["a"], lines("more"), allowed=0)
    kept.remember("b", lines("x"))
    kept.remember("c", lines("y"))
    assert not kept.hold(["a"], lines("nav"), allowed=0)  # bounded: the oldest went first
    assert kept.hold(["b"], lines("x"), allowed=0) and kept._hashes == 2
    # and by the hashes kept in all: a page of many lines pushes the oldest out
    kept = KeptLines(max_pages=10, max_hashes=5)
    kept.remember("a", lines("nav", "article"))
    kept.remember("b", lines("one", "two", "three", "four"))
    assert not kept.hold(["a"], lines("nav"), allowed=0) and kept._hashes == 4
    kept.remember("b", lines("one"))  # kept again: replaced, not added
    assert kept._hashes == 1


def test_kept_lines_leave_out_the_lines_a_site_repeats() -> None:
    """A line on three pages a site kept (its navigation, in one edition's language) is on
    kept pages already: it does not count against a would-be drop of that site."""

    def lines(*texts: str) -> PageLines:
        hashes = [hash(t) & 0xFFFFFFFF for t in texts]
        return PageLines(np.array(hashes, np.uint32), np.array([len(t) for t in texts], np.uint32))

    kept = KeptLines()
    kept.remember("en/1", lines("Prev", "Next", "chapter one"), "site")
    copy = lines("Zurück", "Weiter", "chapter one")
    assert not kept.hold(["en/1"], copy, allowed=5, site="site")
    for n in (2, 3, 4):
        kept.remember(f"de/{n}", lines("Zurück", "Weiter", f"Kapitel {n}"), "site")
    assert kept.hold(["en/1"], copy, allowed=0, site="site")
    assert not kept.hold(["en/1"], copy, allowed=0, site="other")  # another site's lines
    assert not kept.hold(["en/1"], lines("Zurück", "new text"), allowed=0, site="site")


# The English chapter comes again under another URL with a session line in its footer: its
# reading is the English page's, word for word, and its lines are all on that page but the
# session line, so it is dropped without a full reading; the German translation's lines are
# not, so it is read in full (and kept), as before.
SPARED = {
    "/": b'<html><body><a href="/en/x509.html">en</a></body></html>',
    "/en/x509.html": chapter("10.2. X.509 certificates", EN, "/mirror/en/x509.html"),
    "/mirror/en/x509.html": chapter(
        "10.2. X.509 certificates", EN, "/de/x509.html", "<footer>session 7f3a</footer>"
    ),
    "/de/x509.html": chapter("10.2. X.509-Zertifikate", DE),
}


def test_a_copy_whose_lines_are_all_on_the_kept_page_is_not_read_again(tmp_path) -> None:
    _, result = crawl_pages(SPARED, tmp_path / "out.json")
    assert sorted(item["url"].rsplit("/", 2)[1] for item in result["kept"]) == ["de", "en"]
    (dropped,) = result["dropped"]
    assert dropped["url"].endswith("/mirror/en/x509.html")
    stats = result["stats"]
    assert stats["neardup/extract/reread_spared"] == 1
    assert stats["neardup/extract/reread"] == stats["neardup/extract/reread_richer"] == 1
