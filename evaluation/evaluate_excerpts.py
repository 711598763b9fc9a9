"""Excerpts: recall of a contiguous part of a kept article, and no wrong drop.

    python evaluation/evaluate_excerpts.py [--backends minhash,spotsigs] [--lang en,zh] [--off]

The articles are the hand-annotated bodies of ``../shared/data/article-extraction-benchmark``
(English) and the main text of the Chinese news pages (``corpus/sources.py``), as the text
corpora use them. Of every article long enough to have a tenth of at least 50 words
(characters for Chinese), :func:`corpus.text.excerpt` cuts excerpts of 1/10, 1/5, 1/3 and 1/2
of its words (at least 50), starting at a random word: they may start and end mid-sentence.

The articles are split in two halves. Each half in turn is kept (checked, in order, by a
``Deduplicator`` with the project's defaults) and then every excerpt is asked whether it would
be dropped (``would_drop_for``). An excerpt of a kept article must be dropped as a copy of it
(recall), or of another kept article that holds it (where it goes when its own article was
dropped as a copy of that one). An excerpt of an article of the other half must be kept: a
drop is a wrong drop, counted against precision, unless dropping it for that article is not
lossy (``lossy(text_coverage(...))`` of ``backends/containment.py``: the excerpt's word
3-shingles are truly there; extracted Chinese pages of one site share their hot-news lists,
two articles of the corpus share paragraphs). ``--off`` runs
without the excerpt keys (the backend's buckets only), for comparison.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from corpus.lang import is_cjk  # noqa: E402
from corpus.sources import article_bodies, chinese_texts  # noqa: E402
from corpus.text import excerpt  # noqa: E402
from scrapy_neardup.backends.losses import lossy, text_coverage  # noqa: E402
from scrapy_neardup.deduplicator import Deduplicator  # noqa: E402
from scrapy_neardup.text import Document  # noqa: E402

SHARES = (0.1, 0.2, 1 / 3, 0.5)
MIN_WORDS = 50


class NoExcerpts:
    """Stands in for ``Verified.excerpts``: no keys, no sharing (the backend's buckets only)."""

    def params(self) -> dict[str, Any]:
        return {}

    def keys(self, _signature: Any) -> np.ndarray:
        return np.empty(0, dtype=np.uint64)

    def posted(self, _signature: Any) -> None:
        pass

    def shared(self, _new: Any, _kept: Any) -> bool:
        return False

    def encode(self, _signature: Any) -> bytes:
        return b""

    def decode(self, _data: Any) -> np.ndarray:
        return np.empty(0, dtype=np.uint64)


def _size(text: str) -> int:
    return len("".join(text.split())) if is_cjk(text) else len(text.split())


def make_excerpts(articles: dict[str, str], seed: int = 0) -> list[tuple[str, float, str]]:
    """(article key, share, excerpt) for every long enough article and share; an excerpt
    under 50 tokens (a Chinese one of 50 characters may have 30 words) is left out: under
    ``min_tokens``, only exact copies are dropped."""
    rng = random.Random(f"excerpts:{seed}")
    out = []
    for key, text in articles.items():
        if _size(text) * min(SHARES) < MIN_WORDS:
            continue
        for share in SHARES:
            part = excerpt(text, rng, share, MIN_WORDS)
            if part is not None and Document(part).token_count >= MIN_WORDS:
                out.append((key, share, part))
    return out


def truly_contained(part: str, kept: str) -> bool:
    """Whether dropping the excerpt for the kept text loses nothing (not :func:`lossy` by the
    exact :func:`text_coverage`): a drop for a page that holds the excerpt (the same hot-news
    list in two pages of one site, an article that quotes another) is no wrong drop."""
    return not lossy(text_coverage(part, kept))


def evaluate(
    backend: str, articles: dict[str, str], parts: list[tuple[str, float, str]], off: bool
) -> dict[str, Any]:
    keys = sorted({k for k, _, _ in parts})
    halves = (set(keys[::2]), set(keys[1::2]))
    hits: dict[float, list[int]] = {s: [0, 0] for s in SHARES}
    wrong = unrelated = wrong_source = elsewhere = 0
    checks, spent = 0, 0.0
    for kept in halves:
        dedup = Deduplicator(backend)
        if off:
            dedup.near.method.excerpts = NoExcerpts()
        for key in keys:
            if key in kept:
                dedup.check(key, articles[key])
        signed = [(k, s, t, dedup.sign(t)) for k, s, t in parts]
        start = time.perf_counter()
        found = [{m.key for m in dedup.would_drop_for(sig)} for _, _, _, sig in signed]
        spent += time.perf_counter() - start
        checks += len(signed)
        for (key, share, text, _), matched in zip(signed, found, strict=True):
            others = matched - {key}
            bad = any(not truly_contained(text, articles[k]) for k in others)
            elsewhere += bool(others) and not bad
            if key in kept:
                hits[share][1] += 1
                hits[share][0] += key in matched or (bool(others) and not bad)
                wrong_source += bad
            else:
                unrelated += 1
                wrong += bad
    recall = {s: h / n if n else float("nan") for s, (h, n) in hits.items()}
    total = sum(h for h, _ in hits.values())
    return {
        "recall": recall,
        "excerpts": sum(n for _, n in hits.values()),
        "recall_all": total / max(1, sum(n for _, n in hits.values())),
        "unrelated": unrelated,
        "wrong": wrong,
        "wrong_source": wrong_source,
        "elsewhere": elsewhere,
        "us_per_check": 1e6 * spent / max(1, checks),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="minhash,spotsigs")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--off", action="store_true", help="without the excerpt keys")
    args = ap.parse_args(argv)
    corpora = {"en": article_bodies, "zh": chinese_texts}
    head = "| lang | backend | keys | 1/10 | 1/5 | 1/3 | 1/2 | all | unrelated wrong | us/check |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for lang in args.lang.split(","):
        articles = corpora[lang]()
        parts = make_excerpts(articles)
        for backend in args.backends.split(","):
            r = evaluate(backend, articles, parts, args.off)
            cells = " | ".join(f"{r['recall'][s]:.3f}" for s in SHARES)
            print(
                f"| {lang} | {backend} | {'backend only' if args.off else 'with excerpts'} | "
                f"{cells} | {r['recall_all']:.3f} ({r['excerpts']}) | "
                f"{r['wrong']} of {r['unrelated']} | {r['us_per_check']:.0f} |",
                flush=True,
            )
            if r["wrong_source"] or r["elsewhere"]:
                print(
                    f"  ({r['elsewhere']} excerpts matched another kept article that holds them, "
                    f"{r['wrong_source']} one that does not)"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
