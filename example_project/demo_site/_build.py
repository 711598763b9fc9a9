"""Assembles the demo site: pages, the links between them and the ground truth."""

from __future__ import annotations

import random
import struct
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any
from urllib.parse import urlsplit

from . import _html as h
from ._articles import Article, chinese_articles, edit_chinese, edit_english, english_articles
from ._measure import jaccard

DEFAULT_SEED = 1887
HTML_TYPE = "text/html; charset=utf-8"

ROLES_WITH_ITEMS = ("article", "notice")

NOTICES = (
    (
        "office-hours",
        "Front office closed on Monday",
        "Our front office on Quay Street is closed on Monday for staff training. Advertising "
        "and subscription enquiries will be answered by telephone from Tuesday morning.",
    ),
    (
        "planned-maintenance",
        "Planned website maintenance",
        "The website will be unavailable for up to two hours from midnight on Sunday while "
        "engineers replace a database server. Print subscribers are not affected.",
    ),
    (
        "corrections-policy",
        "How we correct mistakes",
        "We correct factual errors promptly and say so at the foot of the article concerned. "
        "Send corrections with a link and a brief explanation to the readers' editor.",
    ),
    (
        "letters",
        "Writing a letter to the editor",
        "Letters for publication must include a full postal address, although only the town "
        "will be printed. We may shorten letters and cannot return photographs.",
    ),
)


#: Copies that hold nothing their original lacks (the plugin's default decision drops them);
#: the others (a wire copy's and a portal reprint's own headline and source lines) are near.
CONTAINED_KINDS = ("template", "print")


@dataclass(frozen=True)
class Page:
    """One response the server can give: ``path`` is the request target (path and query)."""

    path: str
    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    redirect: str | None = None
    title: str = ""
    text: str = ""  # the main text as written (article body); "" for navigation and edge pages


@dataclass(frozen=True)
class TruthEntry:
    """What one reachable URL (path, query and, for fragment variants, fragment) is.

    ``doc_id`` names the cluster; ``relation`` is ``original``, ``url-variant`` or
    ``near-duplicate``; ``kind`` says which sort (see the package docstring); ``of`` is the URL
    this one is a variant of (url-variant) or the cluster original's URL (near-duplicate).
    ``item`` is true when following the URL ends on an article or notice page, i.e. a spider
    would yield an item for it unless the plugin drops it. ``similarity`` is the word (Han
    character) 3-gram Jaccard of the page's main text with the cluster original's text.
    """

    url: str
    doc_id: str
    role: str
    lang: str | None
    relation: str
    kind: str
    of: str | None
    status: int
    final_url: str
    item: bool
    similarity: float | None = None


@dataclass
class Site:
    """The whole demo site: served pages, article sources and the ground truth."""

    seed: int
    pages: dict[str, Page]
    truth: dict[str, TruthEntry]
    articles: dict[str, Article]

    def lookup(self, url: str) -> TruthEntry:
        """The truth entry of a URL, absolute (``http://host:port/...``) or path-only.

        An unknown fragment is ignored; an unknown path or query raises ``KeyError``.
        """
        parts = urlsplit(url)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        if parts.fragment and f"{target}#{parts.fragment}" in self.truth:
            return self.truth[f"{target}#{parts.fragment}"]
        return self.truth[target]

    def expected_unique_docs(self, lang: str | None = None) -> set[str]:
        """Clusters a perfect plugin keeps exactly one item for (articles and notices)."""
        return {
            e.doc_id for e in self.truth.values() if e.item and (lang is None or e.lang == lang)
        }

    def url_variants(self) -> dict[str, str]:
        """URL-level duplicates: variant URL -> the URL it is a variant of."""
        return {u: e.of for u, e in self.truth.items() if e.relation == "url-variant" and e.of}

    def content_duplicates(self, decision: str = "similar") -> dict[str, str]:
        """Content-level near-duplicates the ``decision`` drops: copy URL -> the cluster
        original's URL. ``"similar"``: all of them; ``"contained"`` (the plugin's default):
        those that lose nothing of their original (:data:`CONTAINED_KINDS`)."""
        return {
            u: e.of
            for u, e in self.truth.items()
            if e.relation == "near-duplicate"
            and e.of
            and (decision == "similar" or e.kind in CONTAINED_KINDS)
        }

    def near_copies(self) -> dict[str, str]:
        """The near-duplicates with text of their own (a headline, a source line): kept
        under ``"contained"``, recorded as near their original: copy URL -> original URL."""
        every, contained = self.content_duplicates(), self.content_duplicates("contained")
        return {u: of for u, of in every.items() if u not in contained}

    def clusters(self) -> dict[str, list[str]]:
        """Item-producing URLs by cluster (doc_id), originals first."""
        out: dict[str, list[str]] = {}
        for url, e in sorted(
            self.truth.items(), key=lambda kv: (kv[1].relation != "original", kv[0])
        ):
            if e.item:
                out.setdefault(e.doc_id, []).append(url)
        return out

    def primary_url(self, doc_id: str) -> str:
        """The URL of a cluster's original."""
        for url, e in self.truth.items():
            if e.doc_id == doc_id and e.relation == "original":
                return url
        raise KeyError(doc_id)

    def summary(self) -> dict[str, Any]:
        """Counts a crawl test can assert (see the package docstring)."""
        entries = list(self.truth.values())
        items = [e for e in entries if e.item]
        return {
            "seed": self.seed,
            "pages": len(self.pages),
            "urls": len(entries),
            "roles": dict(sorted(Counter(e.role for e in entries).items())),
            "kinds": dict(sorted(Counter(e.kind for e in entries).items())),
            "item_urls": len(items),
            "item_urls_without_url_variants": sum(e.relation != "url-variant" for e in items),
            "url_variants": len(self.url_variants()),
            "content_duplicates": len(self.content_duplicates()),
            "contained_copies": len(self.content_duplicates("contained")),
            "near_copies": len(self.near_copies()),
            "expected_unique_docs": len(self.expected_unique_docs()),
            "expected_unique_docs_by_lang": {
                lang: len(self.expected_unique_docs(lang)) for lang in ("en", "zh")
            },
            "articles_by_lang": dict(
                sorted(Counter(a.lang for a in self.articles.values()).items())
            ),
        }

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dump: summary, clusters and every truth entry."""
        return {
            "summary": self.summary(),
            "clusters": self.clusters(),
            "entries": [asdict(e) for e in sorted(self.truth.values(), key=lambda e: e.url)],
        }


def png_bytes(width: int = 24, height: int = 12) -> bytes:
    """A small, valid, deterministic greyscale PNG (a bar-chart-like gradient)."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    rows = b"".join(
        b"\x00" + bytes(255 if y >= height - (x * 7) % height else 32 for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


class _Builder:
    """Collects pages, links and truth entries; one use per ``build_site`` call."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.rng = random.Random(f"{seed}:assign")
        self.pages: dict[str, Page] = {}
        self.truth: dict[str, TruthEntry] = {}
        self.links: dict[str, list[h.Link]] = {}
        self.texts: dict[str, str] = {}  # doc_id -> original text

    # -- primitives --------------------------------------------------------------------------

    def page(self, path: str, html: str, *, title: str = "", text: str = "") -> None:
        assert path not in self.pages, path
        self.pages[path] = Page(
            path, html.encode("utf-8"), 200, {"Content-Type": HTML_TYPE}, None, title, text
        )

    def link(self, where: str, href: str, text: str) -> None:
        self.links.setdefault(where, []).append((href, text))

    def entry(
        self,
        url: str,
        doc_id: str,
        role: str,
        lang: str | None,
        relation: str = "original",
        kind: str = "original",
        of: str | None = None,
        *,
        status: int = 200,
        final_url: str | None = None,
        text: str | None = None,
    ) -> None:
        assert url not in self.truth, url
        item = role in ROLES_WITH_ITEMS
        similarity = None
        if item and text is not None:
            similarity = round(jaccard(text, self.texts[doc_id]), 4)
        self.truth[url] = TruthEntry(
            url, doc_id, role, lang, relation, kind, of, status, final_url or url, item, similarity
        )

    def same_page(self, variant: str, original: str) -> None:
        """Serve ``variant`` with the byte-identical response of ``original``."""
        src = self.pages[original]
        self.pages[variant] = Page(
            variant, src.body, src.status, dict(src.headers), src.redirect, src.title, src.text
        )

    def variant(self, variant: str, of: str, kind: str, where: str, label: str) -> None:
        """A URL-level duplicate of the page at ``of`` (served identically unless a fragment)."""
        base = self.truth[of]
        path = variant.split("#", 1)[0]
        if path != of.split("#", 1)[0]:
            self.same_page(path, of)
        self.entry(
            variant,
            base.doc_id,
            base.role,
            base.lang,
            "url-variant",
            kind,
            of,
            final_url=path,
            text=self.pages[path].text,
        )
        self.link(where, variant, label)

    # -- the site ----------------------------------------------------------------------------

    def build(self) -> Site:
        english = english_articles(self.seed)
        chinese = chinese_articles(self.seed)
        for art in english + chinese:
            self.texts[art.doc_id] = art.text
        self.build_english(english)
        self.build_chinese(chinese)
        self.build_notices_and_edges()
        self.build_navigation()
        articles = {a.doc_id: a for a in english + chinese}
        return Site(
            self.seed, dict(sorted(self.pages.items())), dict(sorted(self.truth.items())), articles
        )

    def build_english(self, english: list[Article]) -> None:
        rng = self.rng
        order = list(range(len(english)))
        rng.shuffle(order)
        partner, wire, printed = order[0:6], order[3:11], order[9:14]
        amp, utm, fbclid = order[14:18], order[18:22], order[22:25]
        fragment, slash, redirect = order[25:29], order[29:32], order[32:35]
        query, media = order[35:37], order[37]
        sections = dict(h.SECTIONS)
        for k, art in enumerate(english):
            year = art.date[:4]
            section_href = f"/section/{art.section}"
            if k in query:
                primary = f"/view?id={200 + k}&section={art.section}"
            else:
                primary = f"/news/{year}/{art.slug}"
            print_href = f"/print/{art.slug}" if k in printed else None
            amp_href = f"/amp/news/{year}/{art.slug}" if k in amp else None
            media_href = "/media/output-chart" if k == media else None
            html = h.main_article(
                title=art.title,
                author=art.author,
                date=art.date,
                section=(section_href, sections[section_href]),
                paragraphs=art.paragraphs,
                canonical=primary,
                print_href=print_href,
                amp_href=amp_href,
                media_href=media_href,
            )
            self.page(primary, html, title=art.title, text=art.text)
            self.entry(primary, art.doc_id, "article", "en", text=art.text)
            self.link(section_href, primary, art.title)
            if media_href:
                self.pages[media_href] = Page(
                    media_href, png_bytes(), 200, {"Content-Type": "image/png"}
                )
                self.entry(media_href, "media:output-chart", "binary", None)
            # content-level near-duplicates
            if k in partner:
                path = f"/partner/{art.slug}"
                html = h.partner_article(
                    title=art.title,
                    author=art.author,
                    date=art.date,
                    paragraphs=art.paragraphs,
                    path=path,
                )
                self.page(path, html, title=art.title, text=art.text)
                self.entry(
                    path,
                    art.doc_id,
                    "article",
                    "en",
                    "near-duplicate",
                    "template",
                    primary,
                    text=art.text,
                )
                self.link("/partners", path, art.title)
            if k in wire:
                path = f"/wire/{art.slug}"
                edit_rng = random.Random(f"{self.seed}:wire:{art.doc_id}")
                paras = edit_english(list(art.paragraphs), edit_rng.uniform(0.01, 0.04), edit_rng)
                paras.append(f"This article first appeared on {h.SITE}.")
                text = "\n".join(paras)
                html = h.wire_article(
                    title=art.alt_title, date=art.date, paragraphs=paras, path=path
                )
                self.page(path, html, title=art.alt_title, text=text)
                self.entry(
                    path,
                    art.doc_id,
                    "article",
                    "en",
                    "near-duplicate",
                    "syndicated",
                    primary,
                    text=text,
                )
                self.link("/wire", path, art.alt_title)
            if print_href:
                html = h.print_view(
                    title=art.title,
                    author=art.author,
                    date=art.date,
                    paragraphs=art.paragraphs,
                    source=primary,
                )
                self.page(print_href, html, title=art.title, text=art.text)
                self.entry(
                    print_href,
                    art.doc_id,
                    "article",
                    "en",
                    "near-duplicate",
                    "print",
                    primary,
                    text=art.text,
                )
            # URL-level duplicates
            if amp_href:
                html = h.amp_view(
                    title=art.title,
                    author=art.author,
                    date=art.date,
                    paragraphs=art.paragraphs,
                    canonical=primary,
                )
                self.page(amp_href, html, title=art.title, text=art.text)
                self.entry(
                    amp_href,
                    art.doc_id,
                    "article",
                    "en",
                    "url-variant",
                    "rel-canonical",
                    primary,
                    text=art.text,
                )
                self.link("/mobile", amp_href, art.title)
            if k in utm:
                url = f"{primary}?utm_source=newsletter&utm_medium=email&utm_campaign=2025-03"
                self.variant(url, primary, "tracking", "/newsletter/2025-03", art.title)
                if k == utm[0]:
                    self.variant(
                        f"{primary}#comments",
                        primary,
                        "fragment",
                        "/most-read",
                        f"Comments: {art.title}",
                    )
            if k in fbclid:
                token = "".join(rng.choice("0123456789abcdefABCDEF") for _ in range(24))
                self.variant(
                    f"{primary}?fbclid=IwAR{token}", primary, "tracking", "/social", art.title
                )
            if k in fragment:
                self.variant(
                    f"{primary}#comments",
                    primary,
                    "fragment",
                    section_href,
                    f"Comments: {art.title}",
                )
            if k in slash:
                self.variant(f"{primary}/", primary, "trailing-slash", "/archive", art.title)
            if k in redirect:
                old = f"/stories/{4000 + 7 * k}"
                self.pages[old] = Page(
                    old,
                    h.moved(primary).encode("utf-8"),
                    301,
                    {"Content-Type": HTML_TYPE, "Location": primary},
                    primary,
                )
                self.entry(
                    old,
                    art.doc_id,
                    "article",
                    "en",
                    "url-variant",
                    "redirect",
                    primary,
                    status=301,
                    final_url=primary,
                )
                self.link("/archive", old, f"{art.title} (old link)")
            if k in query:
                swapped = f"/view?section={art.section}&id={200 + k}"
                self.variant(swapped, primary, "param-order", "/most-read", art.title)
                if k == query[0]:
                    tracked = f"/view?section={art.section}&id={200 + k}&utm_campaign=spring"
                    self.variant(tracked, primary, "tracking", "/newsletter/2025-03", art.title)
        # a tracking link to a partner copy: a URL variant of a content duplicate
        first_partner = f"/partner/{english[partner[1]].slug}"
        self.variant(
            f"{first_partner}?utm_source=ledger&utm_medium=email",
            first_partner,
            "tracking",
            "/newsletter/2025-03",
            f"On the Valley Ledger: {english[partner[1]].title}",
        )
        # a fragment link to a wire copy
        last_wire = f"/wire/{english[wire[-1]].slug}"
        self.variant(
            f"{last_wire}#story",
            last_wire,
            "fragment",
            "/wire",
            f"Story: {english[wire[-1]].alt_title}",
        )

    def build_chinese(self, chinese: list[Article]) -> None:
        order = list(range(len(chinese)))
        self.rng.shuffle(order)
        reprint, printed = order[0:4], order[4]
        utm, slash, fragment = order[5], order[6], order[7]
        for k, art in enumerate(chinese):
            primary = f"/zh/news/{art.slug}"
            print_href = f"/zh/print/{art.slug}" if k == printed else None
            html = h.zh_article(
                title=art.title,
                author=art.author,
                date=art.date,
                section=art.section,
                paragraphs=art.paragraphs,
                canonical=primary,
                print_href=print_href,
            )
            self.page(primary, html, title=art.title, text=art.text)
            self.entry(primary, art.doc_id, "article", "zh", text=art.text)
            self.link("/zh", primary, art.title)
            if k in reprint:
                path = f"/zh/reprint/{art.slug}"
                edit_rng = random.Random(f"{self.seed}:reprint:{art.doc_id}")
                paras = edit_chinese(list(art.paragraphs), edit_rng.uniform(0.005, 0.02), edit_rng)
                paras.insert(0, f"本文转载自{h.ZH_SITE}。")
                editor = edit_rng.choice(("林晓", "周然", "孟岩", "许晴"))
                paras.append(f"（责任编辑：{editor}）")
                text = "\n".join(paras)
                html = h.portal_article(
                    title=art.alt_title, date=art.date, paragraphs=paras, path=path
                )
                self.page(path, html, title=art.alt_title, text=text)
                self.entry(
                    path,
                    art.doc_id,
                    "article",
                    "zh",
                    "near-duplicate",
                    "reprint",
                    primary,
                    text=text,
                )
                self.link("/zh/portal", path, art.alt_title)
            if print_href:
                html = h.zh_print(
                    title=art.title,
                    author=art.author,
                    date=art.date,
                    paragraphs=art.paragraphs,
                    source=primary,
                )
                self.page(print_href, html, title=art.title, text=art.text)
                self.entry(
                    print_href,
                    art.doc_id,
                    "article",
                    "zh",
                    "near-duplicate",
                    "print",
                    primary,
                    text=art.text,
                )
            if k == utm:
                url = f"{primary}?utm_source=wechat&utm_medium=social"
                self.variant(url, primary, "tracking", "/newsletter/2025-03", art.title)
            if k == slash:
                self.variant(f"{primary}/", primary, "trailing-slash", "/archive", art.title)
            if k == fragment:
                self.variant(
                    f"{primary}#comments", primary, "fragment", "/zh", f"评论：{art.title}"
                )

    def build_notices_and_edges(self) -> None:
        for n, (slug, title, text) in enumerate(NOTICES, start=1):
            path = f"/notices/{slug}"
            date = f"2025-0{n}-1{n}"
            self.page(
                path,
                h.main_notice(title=title, date=date, text=text, canonical=path),
                title=title,
                text=text,
            )
            doc_id = f"notice-{n:02d}"
            self.texts[doc_id] = text
            self.entry(path, doc_id, "notice", "en", text=text)
            self.link("/notices", path, title)
        empty = "/notices/draft"
        self.pages[empty] = Page(empty, b"", 200, {"Content-Type": HTML_TYPE})
        self.entry(empty, "edge:empty", "empty", None)
        self.link("/notices", empty, "Draft notice")
        missing = "/news/2023/withdrawn-story"
        self.pages[missing] = Page(
            missing, h.not_found(missing).encode("utf-8"), 404, {"Content-Type": HTML_TYPE}
        )
        self.entry(missing, "edge:not-found", "error", None, status=404)
        self.link("/archive", missing, "Withdrawn story")

    def build_navigation(self) -> None:
        sections = dict(h.SECTIONS)
        nav_pages = {
            "/newsletter/2025-03": "Newsletter, March 2025",
            "/social": "Shared on social media",
            "/archive": "Archive",
            "/most-read": "Most read",
            "/mobile": "Mobile edition",
            "/notices": "Notices",
        }
        tops = [
            u for u, e in self.truth.items() if e.relation == "original" and e.role == "article"
        ]
        self.link("/most-read", tops[0], self.pages[tops[0]].title)
        home_groups: list[tuple[str, list[h.Link]]] = [
            ("Sections", list(h.SECTIONS)),
            (
                "More from us",
                [
                    ("/zh", "中文版"),
                    ("/partners", "Partner stories on the Valley Ledger"),
                    ("/wire", "From the Continental News Wire"),
                    *nav_pages.items(),
                ],
            ),
        ]
        self.nav("/", h.main_index("Home", "/", home_groups), "en")
        for href, name in h.SECTIONS:
            self.nav(href, h.main_index(name, href, [(name, self.links.get(href, []))]), "en")
        for href, name in nav_pages.items():
            self.nav(href, h.main_index(name, href, [(name, self.links.get(href, []))]), "en")
        partner_list = h._links(self.links["/partners"])
        self.nav(
            "/partners",
            h.partner_page("Partner stories", "/partners", partner_list, "website"),
            "en",
        )
        wire_list = h._links(self.links["/wire"])
        self.nav("/wire", h.wire_page("Latest stories", "/wire", wire_list, "website"), "en")
        self.nav("/zh", h.zh_index("中文版首页", "/zh", [("新闻", self.links["/zh"])]), "zh")
        portal_list = h._links(self.links["/zh/portal"])
        self.nav(
            "/zh/portal", h.portal_page("转载频道", "/zh/portal", portal_list, "website"), "zh"
        )
        assert set(sections) <= set(self.pages)

    def nav(self, path: str, html: str, lang: str) -> None:
        self.page(path, html)
        self.entry(path, f"nav:{path}", "nav", lang)


def build_site(seed: int = DEFAULT_SEED) -> Site:
    """Build the whole site in memory; the same seed always gives byte-identical pages."""
    return _Builder(seed).build()
