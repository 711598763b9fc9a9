"""Real documentation sites and partly translated books, crawled as a user would.

    python evaluation/evaluate_sites.py [--backends minhash,simhash,spotsigs] [--sites git,...]
                                        [--max-pages 700] [--cache DIR] [--out DIR] [--rescore]

The news-style corpus of ``evaluate_crawl.py`` is made of copies we generated; this runs the
plugin on sites nobody here wrote, where nothing is a copy except what the site itself repeats
(an index page and its symlink, a chapter and its translation, release notes published the
same day, reference pages built on one template). Debian ships such sites as packages:
``apt-get download`` and ``dpkg-deb -x`` (no install; ``apt-get update`` first when the package
lists are missing) give their real HTML, cached in ``~/.cache/scrapy-neardup/sites/`` and
reused. A site whose package is missing is not evaluated: the run names it and exits 1, as it
does for a crawl that did not finish, a drop it could not score or, with ``--rescore``, a
(site, backend) with no saved crawl.

Each site's pages (at most ``--max-pages``, chosen breadth-first from its entry pages over its
own links, so a cap keeps whole sections and every language of a book gets an equal share) are
served on 127.0.0.1 and crawled by ``scrapy runspider`` with a plain spider that follows links
and yields ``{"url"}``: the plugin is enabled by ``ADDONS`` alone, on its defaults but for
``NEARDUP_BACKEND`` (and ``NEARDUP_WORKERS=1``, so two crawls never fight for the two cores of a
small machine). One crawl per (site, backend), each in its own process (a reactor cannot
restart). Concurrency (16 requests) makes the crawl order, and so which copy is kept first,
vary a little between runs.

Scoring reads the pages with none of the plugin's extraction: each page's main text is
trafilatura's (its default cascade, as a user calling it would get; the whole ``<body>`` text
where it finds nothing, so an empty extraction never hides a loss). It measures them as the
decision and the audit page do, exactly
(:func:`scrapy_neardup.backends.losses.text_coverage`: the plugin's words, jieba for
CJK). The *containment* of a dropped page in the page it was dropped for is the share of its
word 3-shingles within its lines found in that page (see :class:`Texts`); below
:data:`LOSSY_BELOW` (0.8) a drop is **lossy**: the crawl lost text that nothing it kept holds.

Every drop is also read by :mod:`evaluation.line_reading`, which shares no code with the
plugin: a drop is lossy there when the dropped page has a line of 6 words or more with less
than half of its word 3-shingles in the kept page, or a heading token, an identifier or a
number that the kept page lacks. Each such drop is printed under its crawl's row with what it
lost, and saved in ``results.json`` (``line_losses``). ``--rescore`` scores the saved crawls
again without crawling; ``results.json`` keeps the latest crawl of every (site, backend).

The default cap, 700 pages per site, gives 5,272 pages over the thirteen sites; each backend
takes about 8 minutes on 2 cores shared with other jobs (crawl and scoring). A cap of 400 hid
two of the worst cases, which lie beyond the first 400 pages: Django's release notes (32 of
``minhash``'s 141 lossy drops by the estimate rule, ``evaluation/ACCURACY.md``) and
PostgreSQL's information-schema and SPI pages (15).
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import posixpath
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.etree
import lxml.html

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import run_spider, serve_pages  # noqa: E402
from evaluation.line_reading import (  # noqa: E402
    Loss,
    Reading,
    body_text,
    losses,
    main_text,
    recall_text,
    title_and_headings,
)
from scrapy_neardup.backends.losses import text_coverage  # noqa: E402
from scrapy_neardup.extraction import extract_main_text  # noqa: E402
from scrapy_neardup.text import Document  # noqa: E402

ALL_BACKENDS = [
    "minhash",
    "simhash",
    "spotsigs",
    "imatch",
    "supershingles",
    "sentences",
    "cosine",
    "exact",
]
#: Not in the default list: MinHash on the LSHBloom index (NEARDUP_INDEX = "lshbloom") with
#: a window far smaller than a site (``--lshbloom-window``), so that most earlier pages are
#: known only to its band filter: how many copies it then keeps unverified, and that every
#: drop is still verified.
LSHBLOOM = "minhash+lshbloom"
DEFAULT_CACHE = Path.home() / ".cache" / "scrapy-neardup" / "sites"
#: A drop with less of its word 3-shingles (within lines) in its original lost text.
LOSSY_BELOW = 0.8
# Containment bins of the drop distribution (lower bounds).
BINS = (0.0, 0.2, 0.5, 0.8, 0.95, 1.0)


@dataclass(frozen=True)
class Site:
    """A documentation site: Debian packages extracted into one tree, served from ``root``."""

    name: str
    packages: tuple[str, ...]
    root: str  # inside the extracted tree, served as "/"
    entries: tuple[str, ...]  # entry pages, relative to root; pages are chosen under their dirs
    note: str = ""


def postgresql_doc() -> str:
    """The newest ``postgresql-doc-NN`` the package lists know (Debian 12: 15)."""
    run = subprocess.run(
        ["apt-cache", "search", "--names-only", r"^postgresql-doc-[0-9]+$"],
        capture_output=True,
        text=True,
        check=False,
    )
    names = re.findall(r"^(postgresql-doc-(\d+)) ", run.stdout, flags=re.M)
    return max(names, key=lambda n: int(n[1]))[0] if names else "postgresql-doc-15"


def sites() -> list[Site]:
    pg = postgresql_doc()
    ref = ("en", "de", "fr", "it", "es", "pt", "zh-cn")
    guide = ("", "de", "fr", "it", "es")
    book = ("en-US", "de-DE", "nl-NL", "zh-CN")
    devref = ("", "de", "fr", "it", "ja", "ru")
    install = ("en", "de", "fr", "it", "ja", "ru", "sv", "zh_CN")
    return [
        Site("postgresql", (pg,), f"usr/share/doc/{pg}/html", ("index.html",)),
        Site("git", ("git-doc",), "usr/share/doc/git-doc", ("index.html",)),
        Site(
            "django",
            ("python-django-doc",),
            "usr/share/doc/python-django-doc/html",
            ("index.html",),
        ),
        Site("sphinx", ("sphinx-doc",), "usr/share/doc/sphinx-doc/html", ("index.html",)),
        Site(
            "debian-reference",
            tuple(f"debian-reference-{lang}" for lang in ref),
            "usr/share/debian-reference",
            tuple(f"index.{lang}.html" for lang in ref),
            "one chapter per page, 7 languages, translations partial (po4a keeps English)",
        ),
        Site(
            "maint-guide",
            tuple(f"maint-guide-{lang}" if lang else "maint-guide" for lang in guide),
            "usr/share/doc",
            tuple(
                f"maint-guide{'-' + lang if lang else ''}/html/index.{lang or 'en'}.html"
                for lang in guide
            ),
            "5 languages",
        ),
        Site(
            "debian-handbook",
            ("debian-handbook",),
            "usr/share/doc/debian-handbook/html",
            tuple(f"{lang}/index.html" for lang in book),
            "English, German, Dutch and Chinese editions, partly translated",
        ),
        Site(
            "sqlite",
            ("sqlite3-doc",),
            "usr/share/doc/sqlite3",
            ("index.html",),
            "C API reference pages of one template, release notes, syntax diagrams",
        ),
        Site(
            "cmake",
            ("cmake-doc",),
            "usr/share/doc/cmake-data/html",
            ("index.html",),
            "Sphinx reference: policy, property, variable and command pages of a few templates",
        ),
        Site(
            "gtk3",
            ("libgtk-3-doc",),
            "usr/share/gtk-doc/html/gtk3",
            ("index.html",),
            "gtk-doc API reference: a page per widget class, one template",
        ),
        Site(
            "glib",
            ("libglib2.0-doc",),
            "usr/share/gtk-doc/html",
            ("glib/index.html", "gio/index.html", "gobject/index.html"),
            "gtk-doc API references of GLib, GIO and GObject: a page per type or topic",
        ),
        Site(
            "developers-reference",
            tuple("-".join(("developers-reference", lang)).rstrip("-") for lang in devref),
            "usr/share/developers-reference",
            tuple(f"{lang}/index.html" if lang else "index.html" for lang in devref),
            "6 languages (Sphinx, po4a): it, ja and ru keep most paragraphs in English",
        ),
        Site(
            "installation-guide",
            ("installation-guide-amd64",),
            "usr/share/doc/installation-guide-amd64",
            tuple(f"{lang}/index.html" for lang in install),
            "8 of its 19 languages (DocBook); ja, zh_CN, ru, sv keep 20-40 % of lines in English",
        ),
    ]


# ---------------------------------------------------------------- fetching and choosing pages


def fetch(site: Site, cache: Path) -> tuple[Path | None, str]:
    """The site's extracted tree (downloaded once), or None and why it was skipped."""
    tree = cache / site.name
    for package in site.packages:
        done = tree / f".extracted-{package}"
        if done.exists():
            continue
        debs = cache / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        found = list(debs.glob(f"{package}_*.deb"))
        if not found:
            found = _download(package, debs)
        if not found:
            return None, f"package {package} not available (apt-get download failed)"
        tree.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(found[0]), str(tree)], check=True)
        done.touch()
    if not (tree / site.root).is_dir():
        return None, f"{site.root} not in the packages"
    return tree / site.root, ""


def _download(package: str, debs: Path) -> list[Path]:
    def get() -> bool:
        run = subprocess.run(
            ["apt-get", "download", package], cwd=debs, capture_output=True, check=False
        )
        return run.returncode == 0

    if not get() and not any(Path("/var/lib/apt/lists").glob("*Packages*")):
        subprocess.run(["apt-get", "update"], capture_output=True, check=False)
        get()
    return list(debs.glob(f"{package}_*.deb"))


def page_links(html: bytes, path: str) -> list[str]:
    """Site-relative paths of the HTML pages ``path`` links to (no fragment, no query)."""
    try:
        doc = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    found = []
    for href in doc.xpath("//a/@href"):
        parts = urlsplit(href.strip())
        if parts.scheme or parts.netloc or not parts.path:
            continue
        target = unquote(parts.path)
        if not target.startswith("/"):
            target = posixpath.join(posixpath.dirname(path), target)
        target = posixpath.normpath(target).lstrip("/")
        if target.endswith((".html", ".htm")) and not target.startswith(".."):
            found.append(target)
    return found


def choose_pages(root: Path, entries: Iterable[str], max_pages: int) -> list[str]:
    """Up to ``max_pages`` pages, breadth-first from the entries taken in turn, each entry
    keeping to its own directory (one language of a book), so a cap keeps whole sections and
    gives every language an equal share."""
    real_root = root.resolve()
    entries = list(entries)
    prefixes = [posixpath.dirname(e) for e in entries]
    queues = [deque([e]) for e in entries]
    chosen: dict[str, None] = {}
    while any(queues) and len(chosen) < max_pages:
        for queue, prefix in zip(queues, prefixes, strict=True):
            while queue:
                path = queue.popleft()
                file = root / path
                if path in chosen or not file.is_file():
                    continue
                if not file.resolve().is_relative_to(real_root):
                    continue
                if prefix and not path.startswith(prefix + "/"):
                    continue
                chosen[path] = None
                queue.extend(page_links(file.read_bytes(), path))
                break
            if len(chosen) >= max_pages:
                break
    return list(chosen)


# ---------------------------------------------------------------- crawling

SPIDER = """
import json
import scrapy
from scrapy import signals

class PlainSpider(scrapy.Spider):
    name = "plain"
    allowed_domains = ["127.0.0.1"]
    start_urls = [START]
    custom_settings = {"ADDONS": {"scrapy_neardup.Addon": 500}, "LOG_LEVEL": "WARNING",
                       "NEARDUP_BACKEND": BACKEND, "NEARDUP_WORKERS": 1, **EXTRA,
                       "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
                       "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False}

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.kept, spider.dropped, spider.order = [], [], []
        crawler.signals.connect(spider.on_kept, signal=signals.item_scraped)
        crawler.signals.connect(spider.on_dropped, signal=signals.item_dropped)
        crawler.signals.connect(spider.on_closed, signal=signals.spider_closed)
        return spider

    def parse(self, response):
        if response.url != START:
            yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if url.startswith("http"):  # not mailto:, javascript:
                yield scrapy.Request(url)

    def on_kept(self, item, **kwargs):
        self.kept.append(item["url"])
        self.order.append(item["url"])

    def on_dropped(self, item, exception, **kwargs):
        self.dropped.append([item["url"], str(exception)])
        self.order.append(item["url"])

    def on_closed(self, spider, reason, **kwargs):
        stats = self.crawler.stats.get_stats()
        with open(OUT, "w") as out:
            json.dump({"kept": self.kept, "dropped": self.dropped, "order": self.order,
                       "finish_reason": reason,
                       "stats": {k: v for k, v in stats.items() if k.startswith("neardup/")}},
                      out, default=str)
"""

REASON = re.compile(r"near-duplicate of (\S+) \((\w+), similarity ([0-9.]+)")


def crawl_site(
    root: Path,
    pages: list[str],
    entries: Iterable[str],
    backend: str,
    lshbloom_window: int = 0,
) -> dict:
    """Serve ``pages`` (others are 404) under an index page linking the entries, crawl them
    with the plugin on ``backend`` (:data:`LSHBLOOM`: minhash on the LSHBloom index of
    ``lshbloom_window`` documents); kept URLs and drops ``[url, original, method,
    similarity]`` as site-relative paths."""
    method, extra = backend, {}
    if backend == LSHBLOOM:
        method = "minhash"
        extra = {"NEARDUP_INDEX": "lshbloom", "NEARDUP_LSHBLOOM_WINDOW": lshbloom_window}
    allowed = set(pages)
    start = "".join(f'<a href="/{p}">{p}</a>\n' for p in entries if p in allowed)

    def body_of(path: str) -> bytes | None:
        if path == "/":
            return f"<html><body>{start}</body></html>".encode()
        rel = posixpath.normpath(unquote(urlsplit(path).path)).lstrip("/")
        return (root / rel).read_bytes() if rel in allowed else None

    server = serve_pages(body_of)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        result = run_spider(SPIDER, START=f"{base}/", BACKEND=method, EXTRA=extra)
    finally:
        server.shutdown()
        server.server_close()

    def rel(url: str) -> str:
        return unquote(urlsplit(url).path).lstrip("/")

    drops = []
    for url, reason in result["dropped"]:
        m = REASON.search(reason)
        if m:
            drops.append([rel(url), rel(m[1]), m[2], float(m[3])])
        else:  # dropped for another reason: no original to score against
            drops.append([rel(url), "", reason[:80], 0.0])
    return {
        "kept": [rel(u) for u in result["kept"]],
        "drops": drops,
        "order": [rel(u) for u in result.get("order", [])],
        "finish_reason": result["finish_reason"],
        "stats": result["stats"],
    }


# ---------------------------------------------------------------- scoring (no plugin code)


def contained(page: str, original: str) -> float:
    """Containment of the text ``page`` in ``original``: the decision's measure, exactly
    (``text_coverage``'s ``shingles``); a page without words loses nothing (1.0)."""
    found = text_coverage(page, original)
    return 1.0 if found is None else found.shingles


class Texts:
    """Texts of a site's pages, extracted on demand; main texts are cached on disk by content
    hash.

    A dropped page counts by its main text (its boilerplate, shared with every page of the
    site, would hide a loss); the page it was dropped for by its main text *and* all its
    visible text (a line apart), because trafilatura sometimes keeps one section of a page
    (Sphinx release notes: the "Bugfixes" list without the "Security" one), and a passage it
    missed in the original is still there for the reader: it must not count as lost."""

    def __init__(self, root: Path, cache_file: Path | None) -> None:
        self.root, self.cache_file = root, cache_file
        self.cache: dict[str, str] = {}
        if cache_file and cache_file.exists():
            self.cache = json.loads(cache_file.read_text())

    def text(self, path: str, whole: bool = False) -> str:
        html = (self.root / path).read_bytes()
        key = hashlib.sha1(html).hexdigest()
        if key not in self.cache:
            self.cache[key] = main_text(html)
        return f"{self.cache[key]}\n{body_text(html)}" if whole else self.cache[key]

    def reading(self, path: str) -> Reading:
        """The page as the line reading reads it (:func:`evaluation.line_reading.read`)."""
        html = (self.root / path).read_bytes()
        key = "recall:" + hashlib.sha1(html).hexdigest()
        if key not in self.cache:
            self.cache[key] = recall_text(html)
        title, headings = title_and_headings(html)
        return Reading(self.text(path), self.cache[key], title, headings, body_text(html))

    def rich(self, path: str) -> str:
        """The page's fullest main-text reading: trafilatura's default and its fast one
        (which keeps sections the default leaves out), a line apart."""
        html = (self.root / path).read_bytes()
        key = "rich:" + hashlib.sha1(html).hexdigest()
        if key not in self.cache:
            fast = extract_main_text(html, f"http://127.0.0.1/{path}").text
            self.cache[key] = f"{self.text(path)}\n{fast}"
        return self.cache[key]

    def save(self) -> None:
        if self.cache_file:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            self.cache_file.write_text(json.dumps(self.cache))


@dataclass
class Score:
    pages: int = 0
    dropped: int = 0
    lossy: int = 0
    copies: int = 0  # pages whose main text an earlier page of the crawl holds (COPY_AT)
    copies_dropped: int = 0
    lossless_copies: int = 0  # those copies that the line reading finds lose nothing
    lossless_copies_dropped: int = 0
    unscored: int = 0  # drops whose reason names no original
    bins: list[int] = field(default_factory=lambda: [0] * (len(BINS) - 1))
    worst: list[tuple[float, str, str, str, float]] = field(default_factory=list)
    # drops that lose a line, heading token, identifier or number by the line reading:
    # (page, original, method, similarity, containment, what it lost)
    line_losses: list[tuple[str, str, str, float, float, Loss]] = field(default_factory=list)


def score(crawled: dict, texts: Texts) -> Score:
    """Containment of every dropped page in its original, the lossy drops among them, and
    what each drop loses by the line reading (:mod:`evaluation.line_reading`)."""
    s = Score(pages=len(crawled["kept"]) + len(crawled["drops"]), dropped=len(crawled["drops"]))
    for page, original, method, similarity in crawled["drops"]:
        if not original:
            s.unscored += 1
            continue
        c = contained(texts.text(page), texts.text(original, whole=True))
        s.bins[min(bisect.bisect_right(BINS, c) - 1, len(BINS) - 2)] += 1
        if c < LOSSY_BELOW:
            s.lossy += 1
        s.worst.append((round(c, 3), page, original, method, similarity))
        loss = losses(texts.reading(page), texts.reading(original))
        if loss.lossy:
            s.line_losses.append((page, original, method, similarity, round(c, 3), loss))
    s.worst = sorted(s.worst)[:3]
    held_by = copies_in_order(crawled.get("order", []), texts)
    copies = set(held_by)
    read = texts.reading
    lossless = {c for c, h in held_by.items() if not losses(read(c), read(h)).lossy}
    dropped = {drop[0] for drop in crawled["drops"]}
    s.copies, s.copies_dropped = len(copies), len(copies & dropped)
    s.lossless_copies, s.lossless_copies_dropped = len(lossless), len(lossless & dropped)
    return s


#: A page is a copy when this share of its main text's 3-shingles is in an earlier page.
COPY_AT = 0.95


def copies_in_order(order: list[str], texts: Texts) -> dict[str, str]:
    """The pages whose fullest main text (:meth:`Texts.rich`: a partly translated page is
    no copy, even where one reading misses its translated section) lies, at :data:`COPY_AT`
    or more, in a page the crawl met before it (its main and visible text), each with that
    page: what the default decision should drop, in the order the crawl took. Candidates come
    from an exact index of word 3-shingles; each is confirmed with :func:`contained`."""

    def shingles(text: str) -> set[int]:
        words = Document(text).tokens
        return {hash(tuple(words[j : j + 3])) for j in range(max(len(words) - 2, 0))}

    index: dict[int, list[int]] = {}
    copies: dict[str, str] = {}
    order = [page for page in order if (texts.root / page).is_file()]  # not "/" itself
    for i, page in enumerate(order):
        own = shingles(texts.rich(page))
        hits = Counter(k for sh in own for k in index.get(sh, ()))
        for k, n in hits.most_common(5):
            if n < COPY_AT * len(own) * 0.9:
                break
            if contained(texts.rich(page), texts.text(order[k], whole=True)) >= COPY_AT:
                copies[page] = order[k]
                break
        for sh in shingles(texts.text(page, whole=True)):
            index.setdefault(sh, []).append(i)
    return copies


# ---------------------------------------------------------------- the command


def bin_labels() -> list[str]:
    return [f"<{BINS[i + 1]:g}" for i in range(len(BINS) - 2)] + [f">={BINS[-2]:g}"]


def summary(results: list[dict]) -> str:
    """One line per site, one column per backend: lossy drops / drops (pages crawled), by
    containment, then by the line reading (drops that lose anything, and of those the drops
    that lose a line)."""
    backends = list(dict.fromkeys(r["backend"] for r in results))
    cell = {(r["site"], r["backend"]): r for r in results}
    tables = (
        ("lossy drops / drops (containment below 0.8)", ("lossy",)),
        (
            "lossy drops (of which lose a line) / drops, by the line reading",
            ("line_lossy", "line_lossy_lines"),
        ),
    )
    lines = []
    for title, keys in tables:
        lines += [
            f"{title}, per site (pages crawled) and backend",
            f"{'site':<27}" + "".join(f"{b:>18}" for b in backends),
        ]
        for site in dict.fromkeys(r["site"] for r in results):
            pages = max(r["pages"] for r in results if r["site"] == site)
            row = f"{f'{site} ({pages})':<27}"
            for b in backends:
                r = cell.get((site, b))
                row += f"{_cell(r, keys) if r else '-':>18}"
            lines.append(row)
        row = ""
        for b in backends:
            mine = [r for r in results if r["backend"] == b]
            row += f"{_cell({k: sum(r[k] for r in mine) for k in (*keys, 'dropped')}, keys):>18}"
        lines += [f"{'all':<27}{row}", ""]
    return "\n".join(lines).rstrip()


def _cell(record: dict, keys: tuple[str, ...]) -> str:
    """``n / drops`` or ``n (m) / drops``: the record's counts under ``keys``, and its drops."""
    first, *rest = (record[k] for k in keys)
    return f"{first}" + "".join(f" ({n})" for n in rest) + f" / {record['dropped']}"


def lshbloom_summary(results: list[dict]) -> str:
    """LSHBloom against the bucket index, per site: what its window let through."""
    cell = {(r["site"], r["backend"]): r for r in results}
    lines = [
        f"{LSHBLOOM} against minhash: drops (lossy); kept unverified; pages minhash dropped "
        "that it kept",
    ]
    for site in dict.fromkeys(r["site"] for r in results):
        full, bloom = cell.get((site, "minhash")), cell.get((site, LSHBLOOM))
        if full is None or bloom is None:
            continue
        kept = set(bloom["kept"])
        missed = sum(1 for drop in full["drops"] if drop[0] in kept)
        unverified = bloom["stats"].get("neardup/lshbloom/unverified", 0)
        lines.append(
            f"  {site:<22} {full['dropped']:>4} ({full['lossy']}) -> {bloom['dropped']:>4} "
            f"({bloom['lossy']}); unverified {unverified:>4}; missed {missed:>4}"
        )
    return "\n".join(lines)


HEADER = (
    f"{'site':<21}{'backend':<14}{'pages':>6}{'dropped':>8}{'lossy':>6}{'lines':>6}  "
    + " ".join(f"{lab:>5}" for lab in bin_labels())
    + f"{'s':>6}"
)


def scored(site: Site, backend: str, served: int, crawled: dict, texts: Texts, sec: float) -> dict:
    """Score one crawl, print its row (``lossy``: containment below 0.8; ``lines``: drops that
    the line reading finds lossy), its worst lossy drops and every drop the line reading finds
    lossy, with what it lost; return its record."""
    s = score(crawled, texts)
    print(
        f"{site.name:<21}{backend:<14}{s.pages:>6}{s.dropped:>8}{s.lossy:>6}"
        f"{len(s.line_losses):>6}  " + " ".join(f"{n:>5}" for n in s.bins) + f"{sec:>6.0f}",
        flush=True,
    )
    if s.copies:
        print(
            f"    copies dropped {s.copies_dropped} / {s.copies}"
            f" (recall {s.copies_dropped / s.copies:.3f}); those the line reading finds"
            f" lossless: {s.lossless_copies_dropped} / {s.lossless_copies}"
            f" ({s.lossless_copies_dropped / max(s.lossless_copies, 1):.3f})"
        )
    if s.unscored:
        print(f"    {s.unscored} drops name no original: has the DropItem message changed?")
    unverified = crawled["stats"].get("neardup/lshbloom/unverified")
    if unverified is not None:
        print(f"    {unverified} kept unverified (bands met, nothing in the window holds it)")
    for c, page, original, method, similarity in s.worst:
        if c < LOSSY_BELOW:
            print(f"    {c:.3f}  {page}  dropped for  {original}  ({method} {similarity})")
    for page, original, method, similarity, c, loss in s.line_losses:
        print(f"    lossy: {page}  dropped for  {original}  ({method} {similarity}, contained {c})")
        for lost in loss.describe():
            print(f"        {lost}")
    return {
        "site": site.name,
        "packages": list(site.packages),
        "backend": backend,
        "pages_served": served,
        "pages": s.pages,
        "not_crawled": served - s.pages,
        "dropped": s.dropped,
        "lossy": s.lossy,
        "line_lossy": len(s.line_losses),
        "line_lossy_lines": sum(1 for *_, loss in s.line_losses if loss.lines),
        "copies": s.copies,
        "copies_dropped": s.copies_dropped,
        "lossless_copies": s.lossless_copies,
        "lossless_copies_dropped": s.lossless_copies_dropped,
        "unscored": s.unscored,
        "containment_bins": dict(zip(bin_labels(), s.bins, strict=True)),
        "worst": s.worst,
        "line_losses": [
            {"page": p, "original": o, "method": m, "similarity": sim, "containment": c}
            | asdict(loss)
            for p, o, m, sim, c, loss in s.line_losses
        ],
        **crawled,
        "seconds": round(sec, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backends",
        default="",
        help="comma-separated (default: all eight; with --rescore, those of the saved crawls)",
    )
    parser.add_argument(
        "--sites",
        default="",
        help="comma-separated names (default: all; with --rescore, those of the saved crawls)",
    )
    parser.add_argument("--max-pages", type=int, default=700, help="pages per site")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument(
        "--lshbloom-window", type=int, default=50, help=f"documents verified, for {LSHBLOOM}"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "evaluation" / "out" / "sites")
    parser.add_argument(
        "--rescore", action="store_true", help="score the crawls of --out again, no crawling"
    )
    args = parser.parse_args(argv)
    out = args.out / "results.json"
    earlier = json.loads(out.read_text()) if out.exists() else []
    if args.rescore and not earlier:
        parser.error(f"--rescore: no crawls saved in {out}")
    saved_backends = list(dict.fromkeys(r["backend"] for r in earlier))
    backends = [b for b in args.backends.split(",") if b] or (
        saved_backends if args.rescore else ALL_BACKENDS
    )
    wanted = {s for s in args.sites.split(",") if s} or (
        {r["site"] for r in earlier} if args.rescore else set()
    )
    unknown = [b for b in backends if b not in [*ALL_BACKENDS, LSHBLOOM]]
    if unknown:
        parser.error(f"unknown backends {unknown}; known: {[*ALL_BACKENDS, LSHBLOOM]}")
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        print("evaluate_sites: needs apt-get and dpkg-deb (a Debian-based system)")
        return 1
    chosen = [s for s in sites() if not wanted or s.name in wanted]
    if wanted - {s.name for s in chosen}:
        parser.error(f"unknown sites {sorted(wanted - {s.name for s in sites()})}")
    results: list[dict] = []
    problems: list[str] = []
    for site in chosen:
        root, why = fetch(site, args.cache)
        if root is None:
            problems.append(f"{site.name}: not evaluated: {why}")
            print(problems[-1])
            continue
        texts = Texts(root, args.cache / "texts" / f"{site.name}.json")
        if args.rescore:
            print(f"\n{site.name}\n{HEADER}")
            for backend in backends:
                saved = [r for r in earlier if (r["site"], r["backend"]) == (site.name, backend)]
                if not saved:
                    problems.append(f"{site.name} {backend}: no saved crawl to rescore")
                    continue
                r = saved[0]
                crawled = {k: r[k] for k in ("drops", "finish_reason", "stats")}
                crawled["order"] = r.get("order", [])
                crawled["kept"] = r.get("kept") or [""] * (r["pages"] - r["dropped"])
                served, sec = r["pages_served"], r["seconds"]
                results.append(scored(site, backend, served, crawled, texts, sec))
            texts.save()
            continue
        pages = choose_pages(root, site.entries, args.max_pages)
        note = f"; {site.note}" if site.note else ""
        print(f"\n{site.name}: {len(pages)} pages ({', '.join(site.packages)}{note})", flush=True)
        print(HEADER)
        for backend in backends:
            t0 = time.perf_counter()
            crawled = crawl_site(root, pages, site.entries, backend, args.lshbloom_window)
            sec = time.perf_counter() - t0
            results.append(scored(site, backend, len(pages), crawled, texts, sec))
            texts.save()
    for r in results:
        if r["finish_reason"] != "finished":
            problems.append(f"{r['site']} {r['backend']}: crawl ended {r['finish_reason']!r}")
        if r["unscored"]:
            problems.append(f"{r['site']} {r['backend']}: {r['unscored']} drops not scored")
    args.out.mkdir(parents=True, exist_ok=True)
    done = {(r["site"], r["backend"]) for r in results}
    kept = [r for r in earlier if (r["site"], r["backend"]) not in done]
    out.write_text(json.dumps(kept + results, indent=1))
    print(f"\n{summary(results)}\n\nresults: {out}")
    if {"minhash", LSHBLOOM} <= set(backends):
        print(f"\n{lshbloom_summary(results)}")
    if problems:
        print("\nINCOMPLETE:\n" + "\n".join(f"  {p}" for p in problems))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
