"""The evaluation corpus crawled as a user would: a plain spider, the plugin on its defaults.

    python evaluation/evaluate_crawl.py [--lang en,zh] [--seed 0]

``evaluation/evaluate.py`` scores the engine on extracted text, pair by pair. This runs the whole
plugin instead: every document of the corpus (``corpus/html.py``: real pages, their
copies under other URLs and templates, partial copies and reprints) is served as HTML on
loopback, an index page links them all in a shuffled order, and ``scrapy runspider`` crawls
it with a spider that knows nothing of the plugin (it yields ``{"url", "title"}``), the plugin
enabled by ``ADDONS`` alone. Concurrency makes the crawl order vary a little from run to run.

Printed per language: items kept and dropped; **false drops** (an item
dropped as a duplicate of another article: lost data); **lossy** drops (the line reading of
``evaluation/line_reading.py``, none of the plugin's code, finds a line, heading word,
identifier or number of the dropped page missing from the page it was dropped for); **lost
articles** (an article none of whose documents was kept); how many of the documents that the
targets call duplicates (every kind up to 5 % reprints) were dropped, and how many of those
**that lose nothing** (by the line reading, against a document of their article kept before
them), with the 10 % and 20 % reprints apart. The targets include copies with text of their
own (an editor's lead, another article's paragraphs, edited short lines), which the default
decision keeps, recorded as near. Which
document of an article comes first depends on the order, and a later document
that carries more than the kept one (another article's paragraphs added, a lead and ads) is
kept beside it: **missed** counts only the target documents kept although their ground truth
was already, at least 80 % of its word 3-shingles, in a document kept before them (regex
words, none of the plugin's code).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import run_spider, serve_pages  # noqa: E402
from corpus.html import (  # noqa: E402
    Doc,
    fill_from_extraction,
    load_originals,
    make_families,
    same_articles,
    templates_of,
    vocabulary_of,
)
from corpus.sources import have_data  # noqa: E402
from evaluation import scoring  # noqa: E402
from evaluation.line_reading import Reading, losses, read  # noqa: E402

# The documents the targets call duplicates (every kind up to 5 % reprints), and the originals.
TARGET_KINDS = {"original", *scoring.TARGET_KINDS}

SPIDER = """
import json
import scrapy
from scrapy import signals

class PlainSpider(scrapy.Spider):
    name = "plain"
    start_urls = [START]
    custom_settings = {"ADDONS": {"scrapy_neardup.Addon": 500}, "LOG_LEVEL": "WARNING",
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
        if response.url == START:
            # The sites are names under .localhost, which nothing resolves: the loopback
            # server answers for them as an HTTP proxy.
            yield from response.follow_all(css="a::attr(href)", meta={"proxy": START})
            return
        yield {"url": response.url, "title": response.css("title::text").get()}

    def on_kept(self, item, **kwargs):
        self.kept.append(item["url"])
        self.order.append(item["url"])

    def on_dropped(self, item, exception, **kwargs):
        self.dropped.append([item["url"], str(exception)])
        self.order.append(item["url"])

    def on_closed(self, spider, **kwargs):
        stats = self.crawler.stats.get_stats()
        with open(OUT, "w") as out:
            json.dump({"kept": self.kept, "dropped": self.dropped, "order": self.order,
                       "finish_reason": stats.get("finish_reason")}, out)
"""


def corpus_pages(lang: str, seed: int) -> tuple[list[Doc], list[bytes], list[int], list[str]]:
    """Every document of the corpus with its HTML, each family's article id, and each
    document's host: the site whose template it is in, as a name under ``.localhost`` (so
    the plugin tells the sites apart, as on the web)."""
    originals = load_originals(lang)
    fill_from_extraction(originals)
    templates, vocabulary = templates_of(originals), vocabulary_of(originals)
    docs = make_families(originals, seed, vocabulary, templates, do_extract=False)
    html = [d.extra.pop("html_bytes") for d in docs]
    article = same_articles(["\n".join(o.paragraphs) for o in originals])
    site_ids = {site: n for n, site in enumerate(sorted({o.site for o in originals}))}
    hosts = [
        f"site{site_ids[originals[int(d.template) if d.template else d.family].site]}.localhost"
        for d in docs
    ]
    return docs, html, article, hosts


def page_at(index: bytes, pages: list[bytes]) -> Callable[[str], bytes | None]:
    def body_of(path: str) -> bytes | None:
        path = urlsplit(path).path  # absolute when asked as a proxy
        if path == "/":
            return index
        if path.startswith("/d/") and path[3:].isdigit() and int(path[3:]) < len(pages):
            return pages[int(path[3:])]
        return None

    return body_of


def crawl(start: str) -> dict:
    return run_spider(SPIDER, START=start)


def evaluate(lang: str, seed: int) -> dict:
    docs, html, article, hosts = corpus_pages(lang, seed)
    order = list(range(len(docs)))
    random.Random(seed).shuffle(order)
    served: dict[str, Callable[[str], bytes | None]] = {}
    server = serve_pages(lambda path: served["at"](path))  # bound first: links need its port
    port = server.server_address[1]
    index = "".join(f'<a href="http://{hosts[i]}:{port}/d/{i}">{i}</a>\n' for i in order)
    served["at"] = page_at(f"<html><body>{index}</body></html>".encode(), html)
    try:
        result = crawl(f"http://127.0.0.1:{port}/")
    finally:
        server.shutdown()
        server.server_close()

    def doc(url: str) -> Doc:
        return docs[int(url.rsplit("/", 1)[1])]

    def art(d: Doc) -> int:
        return article[d.family]

    readings: dict[int, Reading] = {}

    def reading(url: str) -> Reading:
        i = int(url.rsplit("/", 1)[1])
        if i not in readings:
            readings[i] = read(html[i])
        return readings[i]

    false_drops, lossy = [], []
    for url, reason in result["dropped"]:
        original = reason.split("near-duplicate of ", 1)[1].split(" (", 1)[0]
        if art(doc(url)) != art(doc(original)):
            similarity = reason.rsplit("similarity ", 1)[1].rstrip(")")
            false_drops.append((doc(url).id, doc(original).id, similarity))
        if losses(reading(url), reading(original)).lossy:
            lossy.append((doc(url).id, doc(original).id))
    lossless, caught = lossless_copies(result, doc, art, reading)
    kept = [doc(u) for u in result["kept"]]
    articles = set(article)
    lost = articles - {art(d) for d in kept}
    target = Counter(art(d) for d in kept if d.kind in TARGET_KINDS)
    target_docs = sum(1 for d in docs if d.kind in TARGET_KINDS)
    target_dups = target_docs - len({art(d) for d in docs if d.kind in TARGET_KINDS})
    missed = sum(n - 1 for n in target.values())
    held = already_held([d for d in kept if d.kind in TARGET_KINDS], art)
    found = {
        "lang": lang,
        "documents": len(docs),
        "articles": len(articles),
        "kept": len(kept),
        "dropped": len(result["dropped"]),
        "false_drops": false_drops,
        "lossy_drops": lossy,
        "lossless_copies": lossless,
        "lossless_copies_dropped": caught,
        "lost_articles": len(lost),
        "target_duplicates": target_dups,
        "target_caught": (target_dups - missed) / target_dups if target_dups else 1.0,
        "target_missed_held": held,
        "reprint_10_20_kept": sum(1 for d in kept if d.kind in ("reprint:10%", "reprint:20%")),
        "reprint_10_20": sum(1 for d in docs if d.kind in ("reprint:10%", "reprint:20%")),
    }
    return found


def lossless_copies(
    result: dict, doc: Callable[[str], Doc], art: Callable[[Doc], int], reading: Callable
) -> tuple[int, int]:
    """(copies that lose nothing, those dropped): the target documents that, when the crawl
    met them, lost nothing by the line reading (``evaluation/line_reading.py``, none of the
    plugin's code) against a document of their article the crawl kept before them; what the
    default decision may drop. The crawl order is the order of the items it decided."""
    met = [(url, False) for url in result["kept"]] + [(u, True) for u, _ in result["dropped"]]
    position = {url: n for n, url in enumerate(result["order"])}
    met.sort(key=lambda pair: position[pair[0]])
    kept_before: dict[int, list[str]] = {}
    lossless = caught = 0
    for url, dropped in met:
        d = doc(url)
        earlier = kept_before.get(art(d), [])
        if d.kind in TARGET_KINDS and any(
            not losses(reading(url), reading(k)).lossy for k in earlier
        ):
            lossless += 1
            caught += dropped
        if not dropped:
            kept_before.setdefault(art(d), []).append(url)
    return lossless, caught


def already_held(kept: list[Doc], art: Callable[[Doc], int]) -> int:
    """How many of ``kept`` (in the order they were kept) have a ground truth that is at
    least :data:`scoring.CONTAINED` inside that of one kept before them, of their article."""

    def shingles(text: str) -> set[tuple[str, ...]]:
        words = scoring._GT_WORD.findall(text.casefold())
        return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}

    earlier: dict[int, list[set[tuple[str, ...]]]] = {}
    held = 0
    for d in kept:
        mine = shingles(d.gt)
        before = earlier.setdefault(art(d), [])
        if mine and any(len(mine & other) >= scoring.CONTAINED * len(mine) for other in before):
            held += 1
        before.append(mine)
    return held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", default="en,zh")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    langs = [lang for lang in args.lang.split(",") if lang]
    if not all(have_data(lang) for lang in langs):
        print("evaluate_crawl: ../shared/data not found; skipped (it needs real pages)")
        return 0
    print(
        f"{'':<4}{'docs':>6}{'kept':>6}{'dropped':>9}{'false drops':>13}{'lossy':>7}"
        f"{'lost':>6}{'dups caught (<=5%)':>20}{'lossless caught':>20}{'missed, held':>14}"
        f"{'10/20% reprints kept':>22}"
    )
    for lang in langs:
        r = evaluate(lang, args.seed)
        lossless = r["lossless_copies_dropped"] / max(r["lossless_copies"], 1)
        print(
            f"{lang:<4}{r['documents']:>6}{r['kept']:>6}{r['dropped']:>9}"
            f"{len(r['false_drops']):>13}{len(r['lossy_drops']):>7}{r['lost_articles']:>6}"
            f"{r['target_caught']:>13.3f} of {r['target_duplicates']:<4}"
            f"{lossless:>13.3f} of {r['lossless_copies']:<4}"
            f"{r['target_missed_held']:>14}"
            f"{r['reprint_10_20_kept']:>14} of {r['reprint_10_20']}"
        )
        for dropped, original, similarity in r["false_drops"][:5]:
            print(f"      false drop: {dropped} as a duplicate of {original} ({similarity})")
        for dropped, original in r["lossy_drops"][:5]:
            print(f"      lossy drop: {dropped} for {original}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
