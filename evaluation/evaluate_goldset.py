"""The SpotSigs gold set: real news reprints clustered by hand, crawled as a user would.

    python evaluation/evaluate_goldset.py [--goldset DIR] [--backends minhash,...]
                                          [--decisions contained,similar] [--orders 3]
                                          [--set NEARDUP_X=VALUE] [--max-stories N]
                                          [--quick] [--engine]

The gold set of Theobald, Siddharth and Paepcke (SpotSigs, SIGIR 2008): 2,167 news pages of
January 2007 from some 600 outlets, raw HTML with each site's template, ads and menus (in
ISO-8859-1, UTF-8, windows-1252 and a few others, named by each page's ``<meta>``), clustered
by hand into 68 stories: a wire story and its reprints, cut, edited and retitled by each
outlet. Nothing is fetched at run time: the pages are read from ``--goldset`` (default
``~/.cache/scrapy-neardup/spotsigs-goldset``, one folder per story), which a user fills once
from the repository that keeps them (:data:`HOW_TO_GET`); without it the command says so and
exits.

Every page is served on 127.0.0.1 in a shuffled order (``--orders`` seeded orders, their seeds
printed), under a host name of its outlet (the host its links name most, as
``s<N>.localhost``, the loopback server answering as their proxy), so the plugin tells the
sites apart as on the web. ``scrapy runspider`` crawls each
order with a plain spider that yields ``{"url"}``, the plugin enabled by ``ADDONS`` alone with
``NEARDUP_ACTION = "tag"`` (nothing dropped: every item says what it would have been dropped
for), per backend (``--backends``) and decision (``--decisions``), with any other setting of
``--set``; a page's ``<meta>`` refresh is not followed (the archive's pages are what is
judged). The start requests are the pages in the order, with falling priorities, taken by
priority alone (``ScrapyPriorityQueue``: Scrapy's default queue takes turns between hosts),
``--concurrency`` (4) at a time. What holds: the pages are requested in the order exactly, and
the pipeline decides them within a few places of it (pages are read by worker processes, and
one read faster overtakes one read slower); the median and the largest displacement are
printed. On 2 cores a crawl of the 2,167 pages takes
2-6 minutes: the default (8 backends, 2 decisions, 3 orders) runs for hours, ``--backends
minhash,spotsigs`` for about an hour, ``--quick`` (12 stories, 2 orders) for 3 minutes.

Scored per configuration and order, against the stories:

* **copies dropped**: the crawl read as a filter, 1 - (pages kept beyond one per story) /
  (pages that are copies: all but one per story);
* **pairwise P / R / F1** of the clusters the drops make (union-find over ``duplicate_of``),
  and under ``"contained"`` also of drops + near + related (``near_duplicate_of``,
  ``related_to``: what tag mode and ``neardup-stats`` show);
* **wrong-story drops**: drops whose kept page belongs to another story;
* **lossy drops**: drops that lose a line, a heading token, an identifier or a number of the
  page by :mod:`evaluation.line_reading` (which shares no code with the plugin).

Medians over the orders are printed with their spread (largest less smallest). The peers see
the pages in the same orders, from ``trafilatura.extract()`` of the page as Scrapy decodes it:
datasketch's ``MinHashLSH`` at text-dedup's settings (256 permutations, 2-grams of the
lower-cased text's word-character runs, threshold 0.45; every page inserted and merged with
every candidate its query returns, union-find; the first page of a cluster is the one kept),
and the hand-written pipeline of ``bench/bench_handwritten.py`` (128 permutations, 3-grams of
``text.split()``, threshold 0.8; a page dropped for a candidate its query returns, kept pages
inserted). Texts are cached in ``--cache``.

``--engine`` replays the engine instead of crawling (seconds, not minutes, for trying rules):
``Deduplicator`` over the plugin's own reading of every page (``extract_main_text``, cached),
in each order exactly.

Two stories of the gold set are one event split in two (two clusters for one subpoena, two for
one school shooting): a drop across such a pair counts as wrong, for every system alike.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import print_table, run_spider, serve_pages  # noqa: E402
from evaluation import line_reading  # noqa: E402
from evaluation.evaluate_sites import ALL_BACKENDS  # noqa: E402

DEFAULT_GOLDSET = Path.home() / ".cache" / "scrapy-neardup" / "spotsigs-goldset"
DEFAULT_CACHE = Path.home() / ".cache" / "scrapy-neardup" / "goldset-texts.json"
HOW_TO_GET = (
    "The gold set is kept at https://github.com/nathanduchesne/SpotSigsGoldSet; put its "
    "folder GoldSetOfDuplicates/ (one folder per story) at {where}, e.g.:\n"
    "  git clone --depth 1 https://github.com/nathanduchesne/SpotSigsGoldSet /tmp/goldset\n"
    "  mkdir -p {where} && cp -r /tmp/goldset/GoldSetOfDuplicates/. {where}/"
)
DECISIONS = ("contained", "similar")
QUICK_STORIES = 12
#: Served without a charset, so each page's own ``<meta>`` names its encoding, as Scrapy reads it.
SERVED_AS = "text/html"


# ---------------------------------------------------------------- the gold set


@dataclass(frozen=True)
class Page:
    story: str
    name: str  # its file, "<story>/<file>"
    body: bytes
    host: str  # its outlet, as a name under .localhost


def load_goldset(root: Path, max_stories: int = 0) -> list[Page]:
    """Every ``*.htm`` page of every story folder (``max_stories``: that many stories, spread
    over the list sorted by name), each with its outlet's host name (:func:`outlet_of`)."""
    stories = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if max_stories and max_stories < len(stories):
        step = len(stories) / max_stories
        stories = [stories[int(i * step)] for i in range(max_stories)]
    found = [
        (story.name, f"{story.name}/{f.name}", f.read_bytes())
        for story in stories
        for f in sorted(story.iterdir())
        if f.is_file() and f.suffix.lower() in (".htm", ".html")
    ]
    outlets: dict[str, int] = {}
    pages = []
    for story, name, body in found:
        outlet = outlet_of(body) or name  # no link out: a site of its own
        number = outlets.setdefault(outlet, len(outlets))
        pages.append(Page(story, name, body, f"s{number}.localhost"))
    return pages


_LINK_HOST = re.compile(rb"""href\s*=\s*["']?https?://([^/"'\s>:]+)""", re.IGNORECASE)


def outlet_of(body: bytes) -> str:
    """The host a page's absolute links name most (its outlet's, or its ad network's), without
    ``www.``; "" when it has none."""
    hosts = Counter(
        h.decode("latin-1").lower().removeprefix("www.") for h in _LINK_HOST.findall(body)
    )
    return hosts.most_common(1)[0][0] if hosts else ""


def order_of(n: int, seed: int) -> list[int]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


# ---------------------------------------------------------------- what a run decided


@dataclass
class Run:
    """What one system decided, by page index: ``dropped_for[i]`` the kept page ``i`` was
    dropped (or tagged) for; ``near_to[i]`` / ``related_to[i]`` the kept page a kept ``i`` was
    recorded beside; ``met``, the order the decisions were made in; ``missing``, pages that
    reached no decision (counted as kept)."""

    dropped_for: dict[int, int] = field(default_factory=dict)
    near_to: dict[int, int] = field(default_factory=dict)
    related_to: dict[int, int] = field(default_factory=dict)
    met: list[int] = field(default_factory=list)
    missing: int = 0
    seconds: float = 0.0


def clusters(n: int, links: Iterable[tuple[int, int]]) -> list[int]:
    """The cluster of each of ``n`` items (the smallest member's index) under ``links``."""
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return [root(i) for i in range(n)]


def pairwise(found: Sequence[int], truth: Sequence[Hashable]) -> tuple[float, float, float]:
    """Pairwise precision, recall and F1 of a clustering (``found[i]``: item i's cluster)
    against the true one: a pair is positive when both are in one cluster. A clustering with no
    pair has precision 1.0; a truth with no pair, recall 1.0."""

    def pairs(counts: Iterable[int]) -> int:
        return sum(c * (c - 1) // 2 for c in counts)

    both = pairs(Counter(zip(found, truth, strict=True)).values())
    said, true = pairs(Counter(found).values()), pairs(Counter(truth).values())
    p = both / said if said else 1.0
    r = both / true if true else 1.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


@dataclass(frozen=True)
class Score:
    copies_dropped: float
    p: float
    r: float
    f1: float
    wrong_story: int  # drops whose kept page is of another story
    p_all: float  # drops + near + related
    r_all: float
    f1_all: float
    dropped: int
    lossy: int = 0  # drops that lose a line, a heading token, an identifier or a number


def score(run: Run, stories: Sequence[str]) -> Score:
    """The run scored against the stories (see the module docstring)."""
    n = len(stories)
    kept = Counter(stories[i] for i in range(n) if i not in run.dropped_for)
    beyond = sum(max(0, c - 1) for c in kept.values())
    copies = n - len(set(stories))
    drops = clusters(n, run.dropped_for.items())
    links = [*run.dropped_for.items(), *run.near_to.items(), *run.related_to.items()]
    wrong = sum(1 for i, j in run.dropped_for.items() if stories[i] != stories[j])
    return Score(
        1.0 - beyond / copies if copies else 1.0,
        *pairwise(drops, stories),
        wrong,
        *pairwise(clusters(n, links), stories),
        len(run.dropped_for),
    )


class LineReadings:
    """Each page read once by :mod:`evaluation.line_reading` (which shares no code with the
    plugin), to count the drops that lose text."""

    def __init__(self, pages: Sequence[Page]) -> None:
        self.pages = pages
        self.read: dict[int, line_reading.Reading] = {}

    def reading(self, i: int) -> line_reading.Reading:
        if i not in self.read:
            self.read[i] = line_reading.read(self.pages[i].body)
        return self.read[i]

    def lossy(self, run: Run) -> int:
        """How many of the run's drops lose anything the page kept for them lacks."""
        return sum(
            line_reading.losses(self.reading(i), self.reading(j)).lossy
            for i, j in run.dropped_for.items()
        )


# ---------------------------------------------------------------- the crawl

SPIDER = """
import json
import scrapy
from scrapy import signals

class PlainSpider(scrapy.Spider):
    name = "plain"
    custom_settings = {"ADDONS": {"scrapy_neardup.Addon": 500}, "LOG_LEVEL": "WARNING",
                       "NEARDUP_ACTION": "tag", "NEARDUP_BACKEND": BACKEND,
                       "NEARDUP_DECISION": DECISION, **EXTRA,
                       "CONCURRENT_REQUESTS": CONCURRENCY, "METAREFRESH_ENABLED": False,
                       # by priority alone (Scrapy's default queue takes turns between hosts)
                       "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
                       "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False}

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.items = []
        crawler.signals.connect(spider.on_item, signal=signals.item_scraped)
        crawler.signals.connect(spider.on_closed, signal=signals.spider_closed)
        return spider

    async def start(self):
        # The outlets are names under .localhost, which nothing resolves: the loopback
        # server answers for them as an HTTP proxy.
        for rank, url in enumerate(URLS):
            yield scrapy.Request(url, priority=len(URLS) - rank, meta={"proxy": PROXY})

    def parse(self, response):
        yield {"url": response.url}

    def on_item(self, item, **kwargs):
        self.items.append(dict(item))

    def on_closed(self, spider, reason, **kwargs):
        stats = self.crawler.stats.get_stats()
        with open(OUT, "w") as out:
            json.dump({"items": self.items, "finish_reason": reason,
                       "stats": {k: v for k, v in stats.items() if k.startswith("neardup/")}},
                      out, default=str)
"""


def crawl(
    pages: list[Page],
    order: list[int],
    backend: str,
    decision: str,
    concurrency: int = 4,
    extra: dict | None = None,
) -> Run:
    """Serve the pages and crawl them in ``order`` through the plugin in tag mode."""
    server = serve_pages(lambda path: body_of(pages, path))
    port = server.server_address[1]
    urls = [f"http://{pages[i].host}:{port}/d/{i}.htm" for i in order]
    start = time.perf_counter()
    try:
        result = run_spider(
            SPIDER,
            URLS=urls,
            PROXY=f"http://127.0.0.1:{port}",
            BACKEND=backend,
            DECISION=decision,
            CONCURRENCY=concurrency,
            EXTRA=extra or {},
        )
    finally:
        server.shutdown()
        server.server_close()
    run = Run(seconds=time.perf_counter() - start)

    def index(url: str) -> int:
        return int(urlsplit(url).path.rsplit("/", 1)[1].split(".")[0])

    for item in result["items"]:
        i = index(item["url"])
        run.met.append(i)
        for name, links in (
            ("duplicate_of", run.dropped_for),
            ("near_duplicate_of", run.near_to),
            ("related_to", run.related_to),
        ):
            if item.get(name):
                links[i] = index(item[name])
    run.missing = len(pages) - len(set(run.met))
    return run


def body_of(pages: list[Page], path: str) -> tuple[bytes, str] | None:
    path = urlsplit(path).path  # absolute when asked as a proxy
    name = path[3:].split(".")[0] if path.startswith("/d/") else ""
    if name.isdigit() and int(name) < len(pages):
        return pages[int(name)].body, SERVED_AS
    return None


def displacement(order: list[int], met: list[int]) -> tuple[float, int]:
    """Median and largest distance between a page's rank in ``order`` and where it was met."""
    rank = {page: r for r, page in enumerate(order)}
    moves = [abs(rank[page] - r) for r, page in enumerate(met)]
    return (statistics.median(moves), max(moves)) if moves else (0.0, 0)


# ---------------------------------------------------------------- texts (cached) and peers


class Texts:
    """Each page's text as Scrapy decodes it and trafilatura's ``extract()`` reads it (what the
    peers compare), and the plugin's own reading (``--engine``); cached by content hash in
    one JSON file."""

    def __init__(self, cache: Path | None) -> None:
        self.cache_file = cache
        self.cache: dict[str, Any] = {}
        if cache and cache.exists():
            self.cache = json.loads(cache.read_text())

    def get(self, kind: str, pages: list[Page]) -> list[Any]:
        keys = [f"{kind}:{hashlib.sha1(p.body).hexdigest()}" for p in pages]
        todo = [i for i, key in enumerate(keys) if key not in self.cache]
        if todo:
            start = time.perf_counter()
            read = READERS[kind]
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(2) as pool:
                for i, text in zip(
                    todo, pool.map(read, [pages[i].body for i in todo], chunksize=16), strict=True
                ):
                    self.cache[keys[i]] = text
            print(f"{kind} texts of {len(todo)} pages read in {time.perf_counter() - start:.0f} s")
            self.save()
        return [self.cache[key] for key in keys]

    def save(self) -> None:
        if self.cache_file:
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            self.cache_file.write_text(json.dumps(self.cache))


def _decoded(body: bytes) -> tuple[str, str]:
    """The page's text and encoding as Scrapy reads them when served as :data:`SERVED_AS`."""
    from scrapy.http import HtmlResponse

    response = HtmlResponse("http://127.0.0.1/", body=body, headers={"Content-Type": SERVED_AS})
    return response.text, response.encoding


def trafilatura_text(body: bytes) -> str:
    """``trafilatura.extract(response.text)``, its defaults, as the peers' users call it."""
    import trafilatura

    return trafilatura.extract(_decoded(body)[0]) or ""


def plugin_text(body: bytes) -> tuple[str, int | None]:
    """The plugin's reading of the page (what its pipeline compares), and where its readers'
    comments begin."""
    from scrapy_neardup.extraction import extract_main_text

    got = extract_main_text(body, "http://127.0.0.1/", _decoded(body)[1])
    return got.text, got.article_end


READERS: dict[str, Callable[[bytes], Any]] = {
    "trafilatura": trafilatura_text,
    "add-on": plugin_text,
}


def _minhash(words: list[str], size: int, num_perm: int) -> Any:
    from datasketch import MinHash

    grams = {" ".join(words[i : i + size]) for i in range(max(1, len(words) - size + 1))}
    m = MinHash(num_perm=num_perm)
    m.update_batch(g.encode("utf-8") for g in grams)
    return m


#: text-dedup's words: runs of word characters of the lower-cased text.
_WORD = re.compile(r"\w+")


def text_dedup(texts: list[str], order: list[int]) -> Run:
    """datasketch's ``MinHashLSH`` at text-dedup's settings (256 permutations, 2-grams of
    lower-cased words, 0.45): every page queried then inserted, merged with every candidate;
    the first page of each cluster in ``order`` is kept, the others dropped for it."""
    from datasketch import MinHashLSH

    start = time.perf_counter()
    lsh = MinHashLSH(threshold=0.45, num_perm=256)
    links = []
    for i in order:
        m = _minhash(_WORD.findall(texts[i].lower()), 2, 256)
        links += [(i, int(key)) for key in lsh.query(m)]
        lsh.insert(str(i), m)
    cluster = clusters(len(texts), links)
    first: dict[int, int] = {}
    run = Run(met=list(order))
    for i in order:
        head = first.setdefault(cluster[i], i)
        if head != i:
            run.dropped_for[i] = head
    run.seconds = time.perf_counter() - start
    return run


def handwritten(texts: list[str], order: list[int]) -> Run:
    """``bench/bench_handwritten.py``'s pipeline: 128 permutations, word 3-grams, 0.8; a page
    is dropped when its query returns a candidate (for the earliest: datasketch returns them
    in no set order), a kept one inserted."""
    from datasketch import MinHashLSH

    start = time.perf_counter()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    run = Run(met=list(order))
    rank = {page: r for r, page in enumerate(order)}
    for i in order:
        m = _minhash(texts[i].split(), 3, 128)
        found = lsh.query(m)
        if found:
            run.dropped_for[i] = min((int(key) for key in found), key=rank.__getitem__)
        else:
            lsh.insert(str(i), m)
    run.seconds = time.perf_counter() - start
    return run


# ---------------------------------------------------------------- the engine, replayed


def engine_runs(
    texts: list[tuple[str, int | None]],
    orders: list[list[int]],
    backend: str,
    decision: str,
    **options: object,
) -> list[Run]:
    """``Deduplicator`` over the plugin's texts (each with where its readers' comments begin)
    in each order, as the pipeline calls it (the first line a title, as extraction writes it);
    signed once for all orders."""
    from scrapy_neardup.backends.phrases import titled
    from scrapy_neardup.deduplicator import Deduplicator

    def make() -> Deduplicator:
        return Deduplicator(backend, decision=decision, **options)

    start = time.perf_counter()
    signed = [make().sign(text, titled(text).title, end) if text else None for text, end in texts]
    sign_seconds = (time.perf_counter() - start) / len(orders)
    runs = []
    for order in orders:
        start = time.perf_counter()
        dedup, run = make(), Run()
        for i in order:
            run.met.append(i)
            if signed[i] is None:
                continue
            verdict = dedup.check_signed(str(i), signed[i])
            if verdict.duplicate_of is not None:
                run.dropped_for[i] = int(verdict.duplicate_of)
            elif verdict.near_to is not None:
                run.near_to[i] = int(verdict.near_to)
            elif verdict.related_to is not None:
                run.related_to[i] = int(verdict.related_to)
        run.seconds = time.perf_counter() - start + sign_seconds
        runs.append(run)
    return runs


# ---------------------------------------------------------------- the table


def setting_of(item: str) -> tuple[str, object]:
    """``NAME=VALUE`` of ``--set``: the value as a Python literal, else as a string."""
    import ast

    name, _, value = item.partition("=")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def engine_options(settings: dict[str, object]) -> dict[str, object]:
    """The ``Deduplicator`` keywords of ``NEARDUP_*`` settings (``--engine``): the decision's
    settings, ``NEARDUP_THRESHOLD`` and ``NEARDUP_BACKEND_PARAMS``."""
    from scrapy_neardup.settings import DECISION_SETTINGS

    keywords = {name: keyword for keyword, (name, _) in DECISION_SETTINGS.items()}
    keywords |= {"NEARDUP_CONTAINED_WORDS": "contained_words"}
    keywords |= {"NEARDUP_CONTAINED_SHINGLES": "contained_shingles"}
    keywords |= {"NEARDUP_THRESHOLD": "threshold"}
    options: dict[str, object] = {}
    for setting, value in settings.items():
        if setting == "NEARDUP_BACKEND_PARAMS" and isinstance(value, dict):
            options.update(value)
        elif setting in keywords:
            options[keywords[setting]] = value
        else:
            raise SystemExit(
                "evaluate_goldset: --engine takes the decision's settings, NEARDUP_THRESHOLD "
                f"and NEARDUP_BACKEND_PARAMS, not {setting}"
            )
    return options


def median_spread(values: Sequence[float]) -> tuple[float, float]:
    return statistics.median(values), max(values) - min(values)


def row(name: str, scores: list[Score], runs: list[Run], extended: bool) -> list[list[str]]:
    """The table's row(s) of one configuration over its orders."""

    def cell(values: Sequence[float]) -> str:
        mid, spread = median_spread(values)
        return f"{mid:.3f} ({spread:.3f})" if len(values) > 1 else f"{mid:.3f}"

    wrong = [s.wrong_story for s in scores]
    wrong_cell = f"{statistics.median(wrong):g}" + (
        f" ({min(wrong)}-{max(wrong)})" if len(wrong) > 1 else ""
    )
    seconds = f"{statistics.median(r.seconds for r in runs):.0f}"
    rows = [
        [
            name,
            cell([s.copies_dropped for s in scores]),
            cell([s.p for s in scores]),
            cell([s.r for s in scores]),
            cell([s.f1 for s in scores]),
            wrong_cell,
            f"{statistics.median(s.dropped for s in scores):g}",
            f"{statistics.median(s.lossy for s in scores):g}",
            seconds,
        ]
    ]
    if extended:
        rows.append(
            [
                "  drops + near + related",
                "",
                cell([s.p_all for s in scores]),
                cell([s.r_all for s in scores]),
                cell([s.f1_all for s in scores]),
                "",
                "",
                "",
                "",
            ]
        )
    return rows


HEADERS = [
    "configuration", "copies dropped", "P", "R", "F1", "wrong-story", "drops", "lossy", "s/run",
]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goldset", type=Path, default=DEFAULT_GOLDSET)
    parser.add_argument("--backends", default=",".join(ALL_BACKENDS))
    parser.add_argument("--decisions", default=",".join(DECISIONS))
    parser.add_argument("--orders", type=int, default=3, help="crawl orders (seeds 0, 1, ...)")
    parser.add_argument("--seed", type=int, default=0, help="the first order's seed")
    parser.add_argument("--max-stories", type=int, default=0, help="0: all 68")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_STORIES} stories, 2 orders, minhash and spotsigs",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="CONCURRENT_REQUESTS")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another NEARDUP_* setting of the crawls (a Python literal or a string)",
    )
    parser.add_argument("--engine", action="store_true", help="replay the engine, no crawl")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="texts cache (JSON)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write every run here (JSON; goldset.json in a directory)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.max_stories = args.max_stories or QUICK_STORIES
        args.orders = min(args.orders, 2)
        if args.backends == parser.get_default("backends"):
            args.backends = "minhash,spotsigs"
    backends = [b for b in args.backends.split(",") if b]
    decisions = [d for d in args.decisions.split(",") if d]
    unknown = [b for b in backends if b not in ALL_BACKENDS]
    unknown += [d for d in decisions if d not in DECISIONS]
    if unknown:
        parser.error(f"unknown {unknown}; backends {ALL_BACKENDS}, decisions {list(DECISIONS)}")
    if not args.goldset.is_dir():
        print(f"evaluate_goldset: no gold set at {args.goldset}.")
        print(HOW_TO_GET.format(where=args.goldset))
        return 1
    pages = load_goldset(args.goldset, args.max_stories)
    if not pages:
        print(f"evaluate_goldset: no story folders with .htm pages in {args.goldset}")
        return 1
    stories = [p.story for p in pages]
    seeds = list(range(args.seed, args.seed + args.orders))
    orders = [order_of(len(pages), seed) for seed in seeds]
    print(
        f"{len(pages)} pages, {len(set(stories))} stories, "
        f"{len(pages) - len(set(stories))} copies, {len({p.host for p in pages})} outlets; "
        f"orders seeded {', '.join(map(str, seeds))}\n",
        flush=True,
    )
    extra = dict(setting_of(item) for item in args.set)
    texts = Texts(args.cache)
    rows: list[list[str]] = []
    record: list[dict] = []

    readings = LineReadings(pages)

    def report(name: str, runs: list[Run], extended: bool = False) -> None:
        scores = [replace(score(run, stories), lossy=readings.lossy(run)) for run in runs]
        rows.extend(row(name, scores, runs, extended))
        record.append(
            {
                "name": name,
                "scores": [s.__dict__ for s in scores],
                "runs": [run.__dict__ for run in runs],
            }
        )
        for run, seed in zip(runs, seeds, strict=True):
            moved = displacement(orders[seeds.index(seed)], run.met)
            missing = f", {run.missing} pages never decided" if run.missing else ""
            print(
                f"  {name}, order {seed}: {run.seconds:.0f} s; pages met {moved[0]:g} places "
                f"from their rank in the order (median; at most {moved[1]}){missing}",
                flush=True,
            )

    if not args.no_peers:
        extracted = texts.get("trafilatura", pages)
        report("datasketch, text-dedup's settings", [text_dedup(extracted, o) for o in orders])
        report("hand-written pipeline", [handwritten(extracted, o) for o in orders])
    plugin_texts = texts.get("add-on", pages) if args.engine else []
    for decision in decisions:
        for backend in backends:
            name = ", ".join(["add-on", decision, backend, *args.set])
            if args.engine:
                options = engine_options(extra)
                runs = engine_runs(plugin_texts, orders, backend, decision, **options)
                name += " (engine)"
            else:
                runs = [crawl(pages, o, backend, decision, args.concurrency, extra) for o in orders]
            report(name, runs, extended=decision == "contained")
    print()
    print_table(
        HEADERS,
        rows,
        f"median (spread) over {len(orders)} orders; wrong-story: drops whose kept page is of "
        "another story; lossy: drops that lose text by evaluation/line_reading.py",
    )
    if args.out:
        out = args.out / "goldset.json" if args.out.is_dir() else args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
