"""Pages are read in full: trafilatura's fast mode reads some sites short.

On DocBook sites (the Debian Handbook) the fast mode keeps a chapter's command listings and
not its prose (``<div class="para">``); the listings are the same in every translation, so a
chapter read that way would be dropped for its translation. These pages reproduce that shape.
"""

from __future__ import annotations

from pathlib import Path

from scrapy_neardup.extraction import extract_main_text

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
# The German chapter's title is not translated: its fast reading is the English one's.
PAGES = {
    "/": b'<html><body><a href="/en/x509.html">en</a></body></html>',
    "/en/x509.html": chapter("10.2. X.509 certificates", EN, "/de/x509.html"),
    "/de/x509.html": chapter("10.2. X.509 certificates", DE, "/print/de/x509.html"),
    # The German chapter again (a print version): a true copy, to be dropped.
    "/print/de/x509.html": chapter("10.2. X.509 certificates", DE),
}


def test_the_pages_reproduce_a_short_fast_reading() -> None:
    fast = extract_main_text(PAGES["/de/x509.html"], fast=True).text
    full = extract_main_text(PAGES["/de/x509.html"], fast=False).text
    assert "Zertifikate sind" not in fast and "Zertifikate sind" in full


def crawl_pages(pages: dict[str, bytes], out: Path, **settings: object) -> tuple[str, dict]:
    """The start URL, and the result of crawling ``pages`` one request at a time."""
    server = serve_pages(pages.get)
    try:
        start = f"http://127.0.0.1:{server.server_address[1]}/"
        return start, crawl(start, out, CONCURRENT_REQUESTS=1, **settings)
    finally:
        server.shutdown()
        server.server_close()


def test_a_translation_read_in_full_is_kept_and_its_copy_dropped(tmp_path) -> None:
    start, result = crawl_pages(PAGES, tmp_path / "out.json")
    german = {start + "de/x509.html", start + "print/de/x509.html"}
    kept = {item["url"] for item in result["kept"]}
    # The German chapter is not dropped for the English one: one of its two copies is kept
    # (which one follows whose text came back first), and the other is dropped for it.
    assert start + "en/x509.html" in kept and len(kept & german) == 1, kept
    (dropped,) = result["dropped"]
    assert dropped["url"] in german - kept
    assert dropped["reason"].split("near-duplicate of ")[1].startswith(next(iter(kept & german)))


def test_the_fast_mode_is_a_choice_that_judges_on_what_it_read(tmp_path) -> None:
    start, result = crawl_pages(PAGES, tmp_path / "out.json", NEARDUP_EXTRACT_FAST=True)
    # Read fast, the German chapter is its listings and untranslated title: the English
    # chapter's reading, so the three chapters read as one and two are dropped as copies of
    # the third (what the setting says; which one is kept follows whose text came back first).
    chapters = {start + path for path in ("en/x509.html", "de/x509.html", "print/de/x509.html")}
    dropped = {item["url"]: item["reason"] for item in result["dropped"]}
    (kept,) = chapters - set(dropped)
    assert set(dropped) < chapters and kept in {item["url"] for item in result["kept"]}
    assert all(
        reason.split("near-duplicate of ")[1].startswith(kept) for reason in dropped.values()
    )
