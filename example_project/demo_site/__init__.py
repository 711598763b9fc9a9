"""A self-contained demo news site that knows its own duplicates (ground truth included).

``build_site()`` generates every page in memory from a seed (all text is generated here from
topic sentence pools; nothing is fetched); ``serve()`` serves it on loopback with the stdlib
``ThreadingHTTPServer``; ``python -m demo_site --port 8000`` does the same in the foreground and
``python -m demo_site --dump-truth truth.json`` writes the ground truth.

What is on it
=============

Five fictional sites share one host (all links are path-absolute ``<a href>``):

* The Riverside Chronicle: ``/`` links to ten section pages and to every other index page, so
  a spider that follows all same-site links reaches every URL below. Articles live at
  ``/news/<year>/<slug>`` (two at ``/view?id=N&section=S``), each with a self
  ``<link rel="canonical">``, ``og:type=article`` and heavy boilerplate identical on every page
  (cookie banner, long nav, ticker, ~200 words of "Related stories", newsletter box, large
  footer): 40 English articles of 300-900 words, ten topics of four subjects each.
* The Valley Ledger (``/partner/<slug>``), Continental News Wire (``/wire/<slug>``), print views
  (``/print/<slug>``, ``/zh/print/<slug>``) and AMP views (``/amp/news/<year>/<slug>``).
* 河畔纪事中文版 (``/zh/news/<slug>``, 10 Chinese articles of 400-1200 Han characters) and the
  portal 东方资讯网 (``/zh/reprint/<slug>``) that reprints some of them (转载).
* Four short notices (``/notices/<slug>``, 20-30 words each, all distinct).
* Edge responses: a linked 404 (``/news/2023/withdrawn-story``), an empty 200 HTML page
  (``/notices/draft``) and a small PNG (``/media/output-chart``, ``image/png``, no file
  extension so default link extractors still follow it), linked from one article.

Navigation pages (home, sections, ``/archive``, ``/most-read``, ``/newsletter/2025-03``,
``/social``, ``/mobile``, ``/notices``, ``/partners``, ``/wire``, ``/zh``, ``/zh/portal``) carry
``og:type=website``. Article and notice pages carry ``og:type=article``: a spider yields an item
for exactly those (after redirects), and none for navigation, empty, binary or 404 responses.

What counts as what
===================

``Site.truth`` maps every URL a link-following spider can reach (path + query, plus the fragment
for fragment variants) to a :class:`TruthEntry`. ``doc_id`` names the *cluster* the URL belongs
to (``en-01`` .. ``en-40``, ``zh-01`` .. ``zh-10``, ``notice-01`` .. ``notice-04``; navigation and
edge URLs get ``nav:<path>``, ``edge:...`` or ``media:...``). ``relation`` is one of:

``original``
    The cluster's own page (its primary URL), and every navigation/edge URL.
``url-variant`` (``of`` = the URL it is a variant of; the page is served byte-identically
unless said otherwise)
    ``tracking``: ``utm_*`` or ``fbclid`` query parameters added (also once on a partner copy,
    and once after swapped real parameters); ``fragment``: ``#comments`` / ``#story`` added
    (never sent to the server); ``param-order``: ``/view?section=S&id=N`` for
    ``/view?id=N&section=S``; ``trailing-slash``: a ``/`` appended; ``redirect``: an old
    ``/stories/<n>`` path answering 301 with ``Location`` = the article; ``rel-canonical``: an
    AMP page with its own template and the same text whose ``<link rel="canonical">`` names the
    article.
``near-duplicate`` (``of`` = the cluster original's URL; own URL, own canonical, no URL signal)
    ``template``: the article verbatim in the partner site's template; ``print``: the print
    view; both hold nothing their original lacks, and the plugin's default decision drops them
    (``CONTAINED_KINDS``). ``syndicated``: the wire copy with 1-4 % of the words changed,
    another headline and an added "This article first appeared on ..." line; ``reprint``: a
    Chinese reprint with 0.5-2 % of the characters changed, another headline and added
    source/editor lines; both have text of their own, so the default decision keeps them and
    records them as near their original (``near_copies()``), and ``"similar"`` drops them.

Different articles are never duplicates, however much boilerplate they share: distinct
articles have word 3-gram Jaccard < 0.2 (about 0.1 at most), copies > 0.6 (``similarity``).

The first-seen question
=======================

The truth is per cluster, not per copy: under ``NEARDUP_DECISION = "similar"`` a perfect plugin
keeps exactly one item per doc_id in ``expected_unique_docs()`` and drops every other
item-producing URL of that cluster, whichever copy the crawl order happens to reach first (the
kept URL may be a partner copy or a tracking variant; ``Site.lookup(url).doc_id`` maps it
back); under the default ``"contained"`` it keeps the near copies too. Crawl tests should
assert, per backend:

* kept items == ``len(expected_unique_docs())`` (plus ``len(near_copies())`` by default);
* every dropped item's ``doc_id`` equals the ``doc_id`` of the URL named as its original;
* no item at all for navigation, empty, binary or 404 URLs.

How the drops split between the URL stage and the content stage depends on what the URL stage
recognises: with tracking/fragment/param-order/trailing-slash canonicalisation, redirect
handling and a ``rel=canonical`` re-check, the content stage drops exactly
``len(content_duplicates())`` items; every URL variant the URL stage misses is caught by the
content stage instead (its text is identical), so the kept count never changes.

Counts for the default seed (``summary()`` computes them; a test pins them)
===========================================================================

125 served pages; 132 reachable URLs: 21 navigation, 3 edge, 108 item-producing. Of the
item-producing URLs, 54 are cluster originals (40 English articles, 10 Chinese, 4 notices), 30
are URL variants (10 tracking, 7 fragment, 4 trailing-slash, 3 redirect, 2 param-order,
4 rel-canonical) and 24 are content near-duplicates (6 template, 8 syndicated, 6 print,
4 reprint: 12 contained copies, 12 near copies). ``expected_unique_docs()``: 54 (``en``: 44 =
40 articles + 4 notices, ``zh``: 10).
"""

from __future__ import annotations

from ._articles import Article
from ._build import DEFAULT_SEED, Page, Site, TruthEntry, build_site, png_bytes
from ._measure import jaccard, shingles, tokens
from ._server import make_handler, serve

__all__ = [
    "DEFAULT_SEED",
    "Article",
    "Page",
    "Site",
    "TruthEntry",
    "build_site",
    "jaccard",
    "make_handler",
    "png_bytes",
    "serve",
    "shingles",
    "tokens",
]
