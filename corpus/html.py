"""HTML-level families of near-duplicates made from real pages (``evaluation/evaluate.py``).

Every document is an HTML page plus two texts: ``gt``, the hand-annotated article body after
the same transformation (the clean truth), and ``ext``, what the plugin itself sees
(:func:`scrapy_neardup.extraction.extract_main_text` on the HTML: title plus main text).

Each original page is the head of a *family*; its variants are generated with a seeded
``random.Random(f"{seed}:{family}")``, so a corpus is the same on every machine. Kinds, after
the classic taxonomy (Broder; Theobald et al., SpotSigs, SIGIR 2008):

``full-layout``
    the same page under another URL: the same bytes but for a different cache-buster
    comment and script nonce (the layout and the content are both the same).
``full-content``
    the article (its paragraphs and headline) moved into the template of a real page of
    another site: that page's own article is removed, its navigation, related links, ads and
    footer stay; its JSON-LD is dropped and its ``<title>``, ``og:title`` and ``<h1>`` carry
    the moved article's headline.
``partial:add`` / ``partial:drop`` / ``partial:reorder`` / ``partial:lead-ads``
    in the page's own template (another site's when its own article could not be located):
    1-3 paragraphs of another article inserted (about +15 % text); about 20 % of the
    paragraphs dropped; all paragraphs shuffled; an editor's lead and an ad or "read more"
    line after every 4 paragraphs.
``reprint:1%`` ... ``reprint:20%``
    the article in another site's template with word-level edits: each word, with
    probability ``rate``, is replaced by a random corpus word, deleted, or followed by an
    inserted random word (one third each).

Non-duplicates are all pairs of documents of different families. A pair of families is
``same-site`` when their originals share a host (for English the registered host without
``www.``; for Chinese the site folder), ``same-topic`` when the TF-IDF cosine of their
articles is at least :data:`TOPIC_COSINE`, else ``other``.

The article of an English page is its ``articleBody``; the Chinese pages have no annotation,
so their "ground truth" is trafilatura's text of the original page (see
``evaluation/ACCURACY.md``). The pages come from :mod:`corpus.sources`; the text-level corpora
of the engine tests are :mod:`corpus.text`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html

from corpus.lang import paragraphs as split_paragraphs
from corpus.sources import article_html, chinese_pages, ground_truth
from scrapy_neardup.text import ShingleSpec

CORPUS_VERSION = 5  # bump when a transformation changes: cached corpora are keyed on it
EDIT_RATES = (0.01, 0.05, 0.10, 0.20)
PARTIAL_KINDS = ("partial:add", "partial:drop", "partial:reorder", "partial:lead-ads")
REPRINT_KINDS = tuple(f"reprint:{round(r * 100)}%" for r in EDIT_RATES)
KINDS = ("full-layout", "full-content", *PARTIAL_KINDS, *REPRINT_KINDS)
TOPIC_COSINE = 0.25
MIN_COVERAGE = 0.6  # share of the article found in a page's elements for it to be a template

_SPACE_RE = re.compile(r"\s+")
_SKIP_TAGS = {"script", "style", "noscript", "template", "head", "title", "meta", "link"}


@dataclass
class Original:
    """A real page: its HTML, URL, site and article (paragraphs, and the headline if known)."""

    key: str
    url: str
    site: str
    html: bytes
    paragraphs: list[str]
    title: str = ""
    lang: str = "en"


@dataclass
class Doc:
    """One document of the corpus."""

    id: str
    family: int
    kind: str  # "original" or one of KINDS
    url: str
    gt: str
    ext: str = ""
    ext_title: str = ""
    ext_how: str = ""
    ext_article_end: int | None = None  # where its readers' comments begin in ``ext``
    template: str = ""  # the family whose page lent its template ("" for the own page)
    injected: bool = True  # False when the article could not be placed (see locate_article)
    extra: dict[str, Any] = field(default_factory=dict)


# -- loading --------------------------------------------------------------------------------


def _site(url: str) -> str:
    host = urlsplit(url).netloc.lower()
    return host[4:] if host.startswith("www.") else host


def load_english(limit: int | None = None) -> list[Original]:
    """The article-extraction-benchmark pages, sorted by key (the first ``limit``)."""
    out = []
    for key, entry in list(ground_truth().items())[:limit]:
        url = entry["url"]
        body = split_paragraphs(entry["articleBody"], squash=True)
        out.append(Original(key, url, _site(url), article_html(key), body))
    return out


def load_chinese(limit: int | None = None) -> list[Original]:
    """The GNE pages, sorted by path; the article is filled in by :func:`fill_from_extraction`."""
    out = []
    for key, path in list(chinese_pages().items())[:limit]:
        site = path.parent.name
        url = f"https://{site}.example.cn/{path.stem}.html"
        out.append(Original(key, url, site, path.read_bytes(), [], lang="zh"))
    return out


def load_originals(lang: str, limit: int | None = None) -> list[Original]:
    """:func:`load_english` or :func:`load_chinese`."""
    return load_english(limit) if lang == "en" else load_chinese(limit)


# -- extraction -----------------------------------------------------------------------------


def extract(
    html: bytes, url: str, encoding: str | None = "utf-8"
) -> tuple[str, str, str, int | None]:
    """(plugin text, title, how, where its readers' comments begin) as the pipeline gets them."""
    from scrapy_neardup.extraction import extract_main_text

    got = extract_main_text(html, url, encoding)
    return got.text, got.title, got.how, got.article_end


def body_of(ext: str, title: str) -> str:
    """The plugin text without the title line that :func:`extract_main_text` puts first."""
    if title and ext.startswith(title):
        return ext[len(title) :].lstrip("\n")
    return ext


def fill_from_extraction(originals: list[Original]) -> None:
    """Every page's headline as trafilatura reads it (the title given to its moved article),
    and the article of the unannotated (Chinese) pages: trafilatura's text of the original."""
    for o in originals:
        text, title, _, _ = extract(o.html, o.url, None)
        o.title = title
        if o.lang == "zh":
            o.paragraphs = split_paragraphs(body_of(text, title), squash=True)


# -- locating an article in a page and replacing it -------------------------------------------


def _squash(text: str) -> str:
    return _SPACE_RE.sub("", unicodedata.normalize("NFKC", text))


def _min_chars(lang: str) -> int:
    return 12 if lang == "zh" else 25


def locate_article(root: Any, paragraphs: list[str], lang: str) -> tuple[list[Any], float]:
    """The topmost elements whose text is part of the article, and the share of it they hold.

    An element matches when its text (spaces removed) is a substring of the article's; only
    matches with no matching ancestor are kept, so a container holding nothing but the
    article is one element, and paragraphs between ad slots are several.
    """
    article = _squash("".join(paragraphs))
    if not article:
        return [], 0.0
    shortest = _min_chars(lang)
    found: list[Any] = []
    covered: set[Any] = set()
    for el in root.iter():
        if not isinstance(el.tag, str) or el.tag in _SKIP_TAGS:
            continue
        if any(a in covered for a in el.iterancestors()):
            continue
        if any(a.tag in _SKIP_TAGS for a in el.iterancestors() if isinstance(a.tag, str)):
            continue
        text = _squash(el.text_content())
        if len(text) >= shortest and text in article:
            found.append(el)
            covered.add(el)
    chars = sum(len(_squash(el.text_content())) for el in found)
    return found, min(1.0, chars / len(article))


def _container(found: list[Any]) -> Any:
    """The deepest element holding 90 % of the matched text."""
    tally: Counter[Any] = Counter()
    total = 0
    for el in found:
        n = len(_squash(el.text_content()))
        total += n
        for a in (el, *el.iterancestors()):
            tally[a] += n
    best = None
    for el in found[0].iterancestors():
        if tally[el] >= 0.9 * total:
            best = el
            break
    return best if best is not None else found[0].getparent()


def _p(text: str) -> Any:
    el = lxml.html.Element("p")
    el.text = text
    return el


def replace_article(
    html: bytes, own: list[str], new: list[str], lang: str, title: str | None = None
) -> tuple[bytes, bool]:
    """``html`` with its article (paragraphs ``own``) replaced by paragraphs ``new``.

    With ``title``, the page's ``<title>``, ``og:title``/``twitter:title`` and its ``<h1>``
    carry that headline instead, and JSON-LD (which names the page's own article) is removed.
    Returns the page and whether the article was found (when it was not, the paragraphs are
    appended to the body: the page is still a valid document, flagged ``injected=False``).
    """
    root = lxml.html.document_fromstring(html.decode("utf-8", "replace"))
    found, coverage = locate_article(root, own, lang)
    ok = bool(found) and coverage >= MIN_COVERAGE
    if ok:
        if len(found) == 1 and len(found[0]) + (1 if found[0].text else 0) > 0:
            target = found[0]
            if target.tag == "p":  # one paragraph: put the new ones beside it
                parent, index = target.getparent(), target.getparent().index(target)
                for i, text in enumerate(new):
                    parent.insert(index + i, _p(text))
                target.drop_tree()
            else:
                for child in list(target):
                    target.remove(child)
                target.text = None
                for text in new:
                    target.append(_p(text))
        else:
            container = _container(found)
            first = next((el for el in found if container in el.iterancestors()), found[0])
            parent = first.getparent()
            index = parent.index(first)
            for i, text in enumerate(new):
                parent.insert(index + i, _p(text))
            for el in found:
                el.drop_tree()
    else:
        body = root.find("body")
        body = body if body is not None else root
        for text in new:
            body.append(_p(text))
    if title is not None:
        _retitle(root, title)
    out = lxml.html.tostring(root, encoding="unicode", doctype="<!DOCTYPE html>")
    return out.encode("utf-8"), ok


def _retitle(root: Any, title: str) -> None:
    for el in root.xpath("//script[@type='application/ld+json']"):
        el.drop_tree()
    for el in root.xpath("//title"):
        el.text = title
        for child in list(el):
            el.remove(child)
    for el in root.xpath(
        "//meta[@property='og:title' or @name='twitter:title' or @name='title' "
        "or @property='twitter:title']"
    ):
        el.set("content", title)
    for el in root.xpath("//h1")[:1]:
        for child in list(el):
            el.remove(child)
        el.text = title


# -- text transformations ---------------------------------------------------------------------


def words_of(paragraph: str, lang: str) -> list[str]:
    if lang == "zh":
        from scrapy_neardup.text import _segmenter

        return [w for w in _segmenter().lcut(paragraph) if w.strip()]
    return paragraph.split()


def join_words(words: list[str], lang: str) -> str:
    return "".join(words) if lang == "zh" else " ".join(words)


def edit_words(
    paragraphs: list[str], rate: float, rng: random.Random, vocabulary: list[str], lang: str
) -> tuple[list[str], int]:
    """Each word, with probability ``rate``: replaced, deleted, or followed by a new word."""
    out, edits = [], 0
    for para in paragraphs:
        words: list[str] = []
        for w in words_of(para, lang):
            if rng.random() >= rate:
                words.append(w)
                continue
            edits += 1
            op = rng.randrange(3)
            if op == 0:
                words.append(rng.choice(vocabulary))
            elif op == 2:
                words += [w, rng.choice(vocabulary)]
        if words:
            out.append(join_words(words, lang))
    if rate > 0 and edits == 0 and out:  # a short text: at least one edit, or it is no reprint
        at = rng.randrange(len(out))
        words = words_of(out[at], lang)
        words[rng.randrange(len(words))] = rng.choice(vocabulary)
        out[at] = join_words(words, lang)
        edits = 1
    return out, edits


LEAD = {
    "en": "Editor's note: this story was first published by {site} and is republished here "
    "with permission. Some details may have changed since it was written.",
    "zh": "编者按：本文转载自{site}，已获授权。"
    "文章内容仅代表作者观点，发布后部分信息可能已有变化。",
}
ADS = {
    "en": [
        "Advertisement",
        "Subscribe to our newsletter for the latest stories, delivered every morning.",
        "READ MORE: {other}",
        "Sponsored content continues below.",
    ],
    "zh": ["广告", "关注我们的公众号，第一时间获取最新资讯。", "相关阅读：{other}", "推广内容"],
}


def partial(
    kind: str, paragraphs: list[str], rng: random.Random, other: Original, lang: str, site: str
) -> list[str]:
    paras = list(paragraphs)
    n = len(paras)
    if kind == "partial:add":
        size = sum(map(len, paras))
        extra, pool = [], list(other.paragraphs)
        start = rng.randrange(max(1, len(pool)))
        for p in pool[start:] + pool[:start]:
            if len(extra) >= 3 or sum(map(len, extra)) >= 0.15 * size:
                break
            extra.append(p)
        for p in extra:
            paras.insert(rng.randrange(len(paras) + 1), p)
    elif kind == "partial:drop":
        drop = max(1, round(0.2 * n)) if n > 1 else 0
        gone = set(rng.sample(range(n), drop))
        paras = [p for i, p in enumerate(paras) if i not in gone]
        if not paras:  # a one-paragraph article: drop its last fifth of words instead
            words = words_of(paragraphs[0], lang)
            paras = [join_words(words[: max(1, round(0.8 * len(words)))], lang)]
    elif kind == "partial:reorder":
        if n > 1:
            while paras == paragraphs:
                rng.shuffle(paras)
        else:  # one paragraph: swap its halves
            words = words_of(paragraphs[0], lang)
            half = len(words) // 2
            paras = [join_words(words[half:] + words[:half], lang)]
    elif kind == "partial:lead-ads":
        other_title = other.title or (other.paragraphs[0][:80] if other.paragraphs else "")
        out = [LEAD[lang].format(site=site)]
        for i, p in enumerate(paras):
            out.append(p)
            if i % 4 == 3:
                out.append(rng.choice(ADS[lang]).format(other=other_title))
        paras = out
    else:
        raise ValueError(kind)
    return paras


def full_layout_html(html: bytes, rng: random.Random) -> bytes:
    """The same page as served another time: a new cache-buster comment and script nonce."""
    token = f"{rng.getrandbits(64):016x}"
    extra = (
        f"<!-- served by edge-{rng.randrange(100)} at {token} -->"
        f'<script>window.__nonce="{token}";</script>'
    ).encode()
    at = html.lower().rfind(b"</body>")
    return html[:at] + extra + html[at:] if at >= 0 else html + extra


# -- the corpus -----------------------------------------------------------------------------


def make_family(
    family: int,
    originals: list[Original],
    seed: int,
    vocabulary: list[str],
    do_extract: bool = True,
    templates: list[int] | None = None,
) -> list[Doc]:
    """The original page ``family`` and its variants (see the module docstring)."""
    rng = random.Random(f"{seed}:{family}")
    o = originals[family]
    lang = o.lang
    others = [i for i in range(len(originals)) if originals[i].site != o.site]
    hosts = [i for i in (templates if templates is not None else others) if i in set(others)]
    hosts = hosts or others
    gt = "\n".join(o.paragraphs)
    docs = [Doc(f"{family}:original", family, "original", o.url, gt)]
    slug = re.sub(r"\W+", "-", o.key)[:40]

    def placed(kind: str, paras: list[str], host: int | None) -> Doc:
        if host is None:  # the page's own template
            html, ok = replace_article(o.html, o.paragraphs, paras, lang)
            page_url = f"{o.url.rstrip('/')}/v/{kind.replace(':', '-').replace('%', 'pct')}"
        else:
            h = originals[host]
            html, ok = replace_article(h.html, h.paragraphs, paras, lang, title=o.title)
            page_url = f"https://{h.site}/syndication/{slug}-{kind.replace('%', 'pct')}"
        doc = Doc(
            f"{family}:{kind}",
            family,
            kind,
            page_url,
            "\n".join(paras),
            template="" if host is None else str(host),
            injected=ok,
        )
        doc.extra["html"] = html
        return doc

    url = o.url + ("&" if "?" in o.url else "?") + "output=amp"
    layout = Doc(f"{family}:full-layout", family, "full-layout", url, gt)
    layout.extra["html"] = full_layout_html(o.html, rng)
    docs.append(layout)
    docs.append(placed("full-content", list(o.paragraphs), rng.choice(hosts)))
    own_ok = bool(templates is None or family in templates)
    for kind in PARTIAL_KINDS:
        other = originals[rng.choice([i for i in range(len(originals)) if i != family])]
        paras = partial(kind, o.paragraphs, rng, other, lang, o.site)
        docs.append(placed(kind, paras, None if own_ok else rng.choice(hosts)))
    for rate, kind in zip(EDIT_RATES, REPRINT_KINDS, strict=True):
        paras, edits = edit_words(o.paragraphs, rate, rng, vocabulary, lang)
        doc = placed(kind, paras, rng.choice(hosts))
        doc.extra["edits"] = edits
        docs.append(doc)
    docs[0].extra["html"] = o.html
    for d in docs:
        html = d.extra.pop("html")
        d.extra["html_sha1"] = hashlib.sha1(html).hexdigest()
        if do_extract:
            enc = None if d.kind in ("original", "full-layout") else "utf-8"
            d.ext, d.ext_title, d.ext_how, d.ext_article_end = extract(html, d.url, enc)
        else:
            d.extra["html_bytes"] = html
    return docs


def vocabulary_of(originals: list[Original]) -> list[str]:
    """Words to substitute and insert: every distinct word of the articles, sorted."""
    words: set[str] = set()
    for o in originals:
        for p in o.paragraphs:
            words.update(w for w in words_of(p, o.lang) if any(c.isalnum() for c in w))
    return sorted(words)


def templates_of(originals: list[Original]) -> list[int]:
    """Pages whose article can be located (usable as a template for another article)."""
    out = []
    for i, o in enumerate(originals):
        root = lxml.html.document_fromstring(o.html.decode("utf-8", "replace"))
        if locate_article(root, o.paragraphs, o.lang)[1] >= MIN_COVERAGE:
            out.append(i)
    return out


@dataclass
class Corpus:
    lang: str
    docs: list[Doc]
    originals: list[dict[str, Any]]  # key, url, site, title, chars per family
    templates: list[int]
    topic: dict[tuple[int, int], float] = field(default_factory=dict)
    article: list[int] = field(default_factory=list)  # family -> article (see same_articles)

    def site_of(self, doc: Doc) -> str:
        """The site whose template a document is in."""
        return self.originals[int(doc.template) if doc.template else doc.family]["site"]

    def category(self, a: Doc, b: Doc) -> str:
        """``same-article``, ``same-site`` (pages in one site's template), ``same-topic`` or
        ``other``."""
        if self.article[a.family] == self.article[b.family]:
            return "same-article"
        if self.site_of(a) == self.site_of(b):
            return "same-site"
        fa, fb = sorted((a.family, b.family))
        if self.topic.get((fa, fb), 0.0) >= TOPIC_COSINE:
            return "same-topic"
        return "other"


def same_articles(texts: list[str], threshold: float = 0.8) -> list[int]:
    """Article id of each original: originals whose texts have a word 3-shingle Jaccard of
    at least ``threshold`` are one article (the data holds such pairs: they are duplicates
    of each other, so their families are labelled as one)."""
    from scrapy_neardup.text import Document

    sets = [set(Document(t).shingles(ShingleSpec("word", 3)).tolist()) for t in texts]
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            sa, sb = sets[a], sets[b]
            if (
                sa
                and sb
                and min(len(sa), len(sb)) >= threshold * max(len(sa), len(sb))
                and len(sa & sb) / len(sa | sb) >= threshold
            ):
                parent[root(b)] = root(a)
    return [root(i) for i in range(len(texts))]


def _cache_key(lang: str, originals: list[Original], seed: int) -> str:
    h = hashlib.sha1(f"{CORPUS_VERSION}:{lang}:{seed}".encode())
    for o in originals:
        h.update(o.key.encode())
        h.update(hashlib.sha1(o.html).digest())
    return h.hexdigest()[:16]


def build_corpus(
    lang: str,
    *,
    limit: int | None = None,
    seed: int = 0,
    cache_dir: Path | None = None,
    workers: int = 1,
    log: Callable[[str], None] = lambda s: None,
) -> Corpus:
    """Load, transform, place and extract; cached under ``cache_dir`` (keyed on content)."""
    originals = load_originals(lang, limit)
    key = _cache_key(lang, originals, seed)
    path = cache_dir / f"corpus-{lang}-{key}.json.gz" if cache_dir else None
    if path is not None and path.exists():
        data = json.loads(gzip.decompress(path.read_bytes()))
        docs = [Doc(**d) for d in data["docs"]]
        corpus = Corpus(lang, docs, data["originals"], data["templates"])
        corpus.topic = {tuple(map(int, k.split(","))): v for k, v in data["topic"].items()}
        log(f"corpus {lang}: {len(docs)} documents from cache {path}")
        corpus.article = same_articles([d.gt for d in docs if d.kind == "original"])
        return corpus
    fill_from_extraction(originals)
    templates = templates_of(originals)
    vocabulary = vocabulary_of(originals)
    log(
        f"corpus {lang}: {len(originals)} pages, article located in {len(templates)} "
        f"(templates); generating and extracting {len(originals) * (1 + len(KINDS))} documents"
    )
    docs = make_families(originals, seed, vocabulary, templates, workers=workers)
    meta = [
        {
            "key": o.key,
            "url": o.url,
            "site": o.site,
            "title": o.title,
            "chars": sum(map(len, o.paragraphs)),
        }
        for o in originals
    ]
    corpus = Corpus(lang, docs, meta, templates)
    corpus.topic = topic_similarity([o.paragraphs for o in originals], lang)
    corpus.article = same_articles(["\n".join(o.paragraphs) for o in originals])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "docs": [asdict(d) for d in docs],
            "originals": meta,
            "templates": templates,
            "topic": {f"{a},{b}": v for (a, b), v in corpus.topic.items()},
        }
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
    return corpus


def make_families(
    originals: list[Original],
    seed: int,
    vocabulary: list[str],
    templates: list[int],
    *,
    do_extract: bool = True,
    workers: int = 1,
) -> list[Doc]:
    """Every family (:func:`make_family`), in order, in ``workers`` processes."""
    if workers <= 1:
        return [
            d
            for family in range(len(originals))
            for d in make_family(family, originals, seed, vocabulary, do_extract, templates)
        ]
    shared = (originals, seed, vocabulary, do_extract, templates)
    with ProcessPoolExecutor(workers, initializer=_set_shared, initargs=shared) as pool:
        results = list(pool.map(_family_task, range(len(originals))))
    return [Doc(**d) for family in results for d in family]


_SHARED: tuple[Any, ...] = ()


def _set_shared(*args: Any) -> None:
    """Hand the pages to a worker once, not with every family."""
    global _SHARED
    _SHARED = args


def _family_task(family: int) -> list[dict[str, Any]]:
    originals, seed, vocabulary, do_extract, templates = _SHARED
    docs = make_family(family, originals, seed, vocabulary, do_extract, templates)
    return [asdict(d) for d in docs]


def topic_similarity(articles: list[list[str]], lang: str) -> dict[tuple[int, int], float]:
    """TF-IDF cosine (words, smoothed idf) of every pair of articles that share a word."""
    bags = []
    for paras in articles:
        words = [w.lower() for p in paras for w in words_of(p, lang)]
        bags.append(Counter(w for w in words if any(c.isalnum() for c in w)))
    n = len(bags)
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    idf = {w: math.log((1 + n) / (1 + d)) + 1.0 for w, d in df.items()}
    vectors = []
    for bag in bags:
        v = {w: c * idf[w] for w, c in bag.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vectors.append({w: x / norm for w, x in v.items()})
    out = {}
    for a in range(n):
        for b in range(a + 1, n):
            va, vb = vectors[a], vectors[b]
            if len(va) > len(vb):
                va, vb = vb, va
            cos = sum(x * vb.get(w, 0.0) for w, x in va.items())
            if cos > 0.05:
                out[(a, b)] = round(cos, 4)
    return out


def token_f1(truth: str, pred: str, n: int = 4) -> tuple[float, float]:
    """Precision and recall of word ``n``-gram bags, the article-extraction-benchmark scorer
    (``string_shingle_matching`` over ``\\w+`` tokens; CJK characters count as tokens)."""

    def grams(text: str) -> Counter[tuple[str, ...]]:
        tokens = re.findall(r"[\u3400-\u9fff]|[^\W\u3400-\u9fff]+", text.lower())
        return Counter(tuple(tokens[i : i + n]) for i in range(max(0, len(tokens) - n + 1)))

    t, p = grams(truth), grams(pred)
    tp = sum((t & p).values())
    precision = tp / sum(p.values()) if p else (1.0 if not t else 0.0)
    recall = tp / sum(t.values()) if t else 1.0
    return precision, recall
