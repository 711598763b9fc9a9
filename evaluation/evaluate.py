"""Accuracy of every backend on real pages: a labelled corpus, tables, and a small report.

    python evaluation/evaluate.py [--quick] [--out DIR] [--lang en,zh] [--no-grid] [--workers N]

The corpus (``corpus/html.py``) turns the 181 hand-annotated pages of
``../shared/data/article-extraction-benchmark`` and the 30 Chinese pages of
``../shared/data/gne-chinese-news`` into families of duplicates of documented kinds (the same
page under another URL, the article in another site's template, paragraphs added, dropped,
reordered or wrapped in a lead and ads, reprints with 1-20 % word edits); every pair of
different families is a non-duplicate. Scoring (``evaluation/scoring.py``) uses the engine as
the pipeline does (exact hash first, ``min_tokens`` floor, the method's index and
``similarity``) on the text the plugin sees (trafilatura on the HTML) and on the clean
ground truth, for the project's defaults, a grid of parameters, and the plain ``datasketch``
and ``simhash`` libraries used as their READMEs show.

Writes ``report.html`` (tables, similarity histograms, recall against edit rate),
``*.png`` and ``results.json`` to ``--out`` (default ``evaluation/out/``). Generated corpora
(with their trafilatura output) are cached in ``--cache`` (default ``--out``/cache), so a
second run skips extraction. The full run takes a few minutes on 2 cores; ``--quick`` uses 40
English pages and a smaller grid.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import sys
import time
from pathlib import Path
from statistics import mean
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from corpus.html import (  # noqa: E402
    EDIT_RATES,
    KINDS,
    PARTIAL_KINDS,
    REPRINT_KINDS,
    TOPIC_COSINE,
    Corpus,
    body_of,
    build_corpus,
    token_f1,
)
from corpus.sources import have_data  # noqa: E402
from evaluation.scoring import (  # noqa: E402
    TARGET_KINDS,
    Config,
    Result,
    Scorer,
    plain_datasketch,
    plain_simhash,
)
from scrapy_neardup.backends.spotsigs import ENGLISH_ANTECEDENTS  # noqa: E402

PRECISION_TARGET = 0.99
RECALL_TARGET = 0.95
FEW_ANTECEDENTS = frozenset("a an the is was were said".split())

# The project's defaults (scrapy_neardup/config.py and backends/*), written out so the
# tables say what they measured even if the code's defaults change.
DEFAULTS = {
    "exact": Config.of("exact", label="exact"),
    "minhash": Config.of(
        "minhash", label="minhash (default)", threshold=0.4, num_perm=128, shingles="word:3"
    ),
    "simhash": Config.of("simhash", label="simhash (default)", k=7, shingles="word:1", lines=20),
    "spotsigs": Config.of(
        "spotsigs", label="spotsigs (default)", threshold=0.5, chain=2, anchors=4
    ),
    "imatch": Config.of(
        "imatch", label="imatch (default)", low=3.0, high=4.5, lexicons=20, keep=0.3, min_terms=15
    ),
    "supershingles": Config.of(
        "supershingles", label="supershingles (default)", num_perm=84, groups=14, b=2
    ),
    "sentences": Config.of("sentences", label="sentences (default)", n=3, min_length_ratio=0.8),
    "cosine": Config.of("cosine", label="cosine (default)", threshold=0.8, shingles="word:2"),
}

# The settings weighed against the defaults (see evaluation/ACCURACY.md); shown beside them.
PROPOSED = {
    "minhash": Config.of(
        "minhash", label="minhash word:2 0.3", threshold=0.3, num_perm=128, shingles="word:2"
    ),
    # Earlier defaults of these backends, for comparison.
    "simhash": Config.of("simhash", label="simhash k=6 all lines", k=6, shingles="word:1", lines=0),
    "spotsigs": Config.of(
        "spotsigs", label="spotsigs no anchors", threshold=0.5, chain=2, anchors=0
    ),
}


def grid(lang: str, quick: bool) -> dict[str, list[Config]]:
    units = ["word:1", "word:2", "word:3", "word:4", "word:5"]
    if lang == "zh":
        units = ["word:1", "word:2", "word:3", "char:2", "char:3", "char:4", "char:5"]
    thresholds = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    if quick:
        units = units[1:4] if lang == "en" else ["word:2", "word:3", "char:3", "char:4"]
        thresholds = (0.3, 0.5, 0.7)
    minhash = [
        Config.of("minhash", threshold=t, num_perm=128, shingles=u)
        for u in units
        for t in thresholds
    ]
    minhash += [
        Config.of("minhash", threshold=0.5, num_perm=p, shingles="word:3") for p in (64, 256)
    ]
    minhash += [
        Config.of("minhash", threshold=0.5, num_perm=128, shingles="word:3", weights=w)
        for w in ((0.5, 0.5), (0.1, 0.9))
    ]
    minhash += [
        Config.of("minhash", min_tokens=m, threshold=0.5, num_perm=128, shingles="word:3")
        for m in (0, 20, 100)
    ]
    sim_units = ["word:1", "word:2", "word:3", "char:4"]
    if lang == "zh":
        sim_units = ["word:1", "word:2", "word:3", "char:2", "char:3", "char:4"]
    ks = (3, 4, 5, 6, 7) if not quick else (3, 6, 7)
    simhash = [Config.of("simhash", k=k, shingles=u) for u in sim_units for k in ks]
    spot_thresholds = (0.3, 0.4, 0.5, 0.6, 0.7) if not quick else (0.3, 0.5, 0.7)
    spotsigs = [
        Config.of("spotsigs", threshold=t, chain=c) for c in (1, 2, 3) for t in spot_thresholds
    ]
    if lang == "en":
        for name, words in (("few", FEW_ANTECEDENTS), ("english", ENGLISH_ANTECEDENTS)):
            spotsigs += [
                Config.of(
                    "spotsigs",
                    label=f"spotsigs(chain={c}, threshold={t}, antecedents={name})",
                    threshold=t,
                    chain=c,
                    antecedents=words,
                )
                for c in (1, 2)
                for t in (0.4, 0.5)
            ]
    imatch = [
        Config.of(
            "imatch",
            label="imatch (Kołcz: 10 lexicons of 70%, zipf 2.5-5.5)",
            lexicons=10,
            keep=0.7,
            low=2.5,
            high=5.5,
        ),
        Config.of("imatch", label="imatch without randomised lexicons", lexicons=0),
        Config.of("imatch", min_terms=10),
    ]
    supershingles = [
        Config.of("supershingles", label="supershingles (literature: 6 groups of 14)", groups=6),
        Config.of("supershingles", groups=14, b=3),
        Config.of("supershingles", num_perm=128, groups=16, b=2),
    ]
    sentences = [Config.of("sentences", n=n) for n in (2, 4)]
    sentences += [Config.of("sentences", min_length_ratio=r) for r in (0.7, 0.9)]
    cosine = [Config.of("cosine", threshold=t) for t in (0.7, 0.9)]
    cosine += [Config.of("cosine", weighting="tf")]
    return {
        "minhash": minhash,
        "simhash": simhash,
        "spotsigs": spotsigs,
        "imatch": imatch,
        "supershingles": supershingles,
        "sentences": sentences,
        "cosine": cosine,
    }


# -- output ---------------------------------------------------------------------------------


class Out:
    """Prints and keeps what it printed, for the HTML report."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, str]] = []

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        self.parts.append(("pre", text))

    def image(self, name: str) -> None:
        self.parts.append(("img", name))


def table(headers: list[str], rows: list[list[Any]], title: str = "") -> str:
    cells = [headers] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        out = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        out[0] = row[0].ljust(widths[0])
        return "  ".join(out).rstrip()

    lines = [title] if title else []
    lines += [fmt(cells[0]), "  ".join("-" * w for w in widths)]
    lines += [fmt(r) for r in cells[1:]]
    return "\n".join(lines) + "\n"


def pct(x: float) -> str:
    return "-" if x != x else f"{x:.3f}"


SUMMARY_HEADERS = [
    "config",
    "P",
    "full-lay",
    "full-con",
    "partial",
    "r1%",
    "r5%",
    "r10%",
    "r20%",
    "F1",
    "FP site/topic/other",
    "false drops",
    "ms/doc",
    "targets",
]


def summary_row(r: Result) -> list[Any]:
    fp = r.false_pairs
    return [
        r.config,
        pct(r.precision),
        pct(r.recall["full-layout"]),
        pct(r.recall["full-content"]),
        pct(min(r.recall[k] for k in PARTIAL_KINDS)),
        *(pct(r.recall[k]) for k in REPRINT_KINDS),
        pct(
            2 * r.precision * r.recall_of(TARGET_KINDS) / (r.precision + r.recall_of(TARGET_KINDS))
            if r.precision + r.recall_of(TARGET_KINDS)
            else 0.0
        ),
        f"{fp['same-site']}/{fp['same-topic']}/{fp['other']}",
        r.false_drops,
        f"{r.ms_per_doc:.2f}",
        "yes" if r.meets(PRECISION_TARGET, RECALL_TARGET) else "no",
    ]


def kind_table(results: list[Result]) -> str:
    headers = ["kind", *(r.config.replace(" (default)", "") for r in results)]
    rows = []
    for kind in KINDS:
        rows.append(
            [
                kind,
                *(
                    f"{pct(r.kind_precision[kind])}/{pct(r.recall[kind])}/{pct(r.f1(kind))}"
                    for r in results
                ),
            ]
        )
    rows.append(
        [
            "all pairs",
            *(f"{pct(r.precision)}/{pct(r.recall_of(KINDS))}/{pct(r.f1())}" for r in results),
        ]
    )
    return table(headers, rows)


# -- the run --------------------------------------------------------------------------------


def extraction_quality(corpus: Corpus, out: Out) -> dict[str, Any]:
    """trafilatura (the plugin's text without its title line) against the article."""
    found: dict[str, Any] = {}
    groups = {
        "original pages": [d for d in corpus.docs if d.kind == "original"],
        "generated pages": [d for d in corpus.docs if d.kind != "original"],
        "article in another template": [d for d in corpus.docs if d.template],
    }
    rows = []
    for name, docs in groups.items():
        scores = [token_f1(d.gt, body_of(d.ext, d.ext_title)) for d in docs]
        p = mean(s[0] for s in scores)
        r = mean(s[1] for s in scores)
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        empty = sum(1 for d in docs if not d.ext.strip())
        fallback = sum(1 for d in docs if d.ext_how == "fallback")
        rows.append([name, len(docs), pct(p), pct(r), pct(f1), empty, fallback])
        found[name] = {
            "pages": len(docs),
            "precision": p,
            "recall": r,
            "f1": f1,
            "empty": empty,
            "fallback": fallback,
        }
    title = (
        "trafilatura against the article (mean per-page precision and recall of word 4-gram "
        "bags, the article-extraction-benchmark scorer; F1 of the means)"
    )
    if corpus.lang == "zh":
        title = (
            "trafilatura on the transformed pages against the transformed original extraction "
            "(no hand annotation: the originals score 1.0 by construction)"
        )
    out(table(["pages", "n", "P", "R", "F1", "empty", "fallback"], rows, title))
    return found


def run_language(lang: str, args: argparse.Namespace, out: Out, results: dict[str, Any]) -> None:
    started = time.perf_counter()
    limit = 40 if args.quick and lang == "en" else None
    corpus = build_corpus(
        lang, limit=limit, seed=args.seed, cache_dir=args.cache, workers=args.workers, log=out
    )
    name = "English" if lang == "en" else "Chinese"
    n_fam = len(corpus.originals)
    topic_pairs = sum(1 for v in corpus.topic.values() if v >= TOPIC_COSINE)
    sites = {}
    for o in corpus.originals:
        sites[o["site"]] = sites.get(o["site"], 0) + 1
    same_site = sum(n * (n - 1) // 2 for n in sites.values())
    n_docs = len(corpus.docs)
    all_pairs = n_docs * (n_docs - 1) // 2
    dup_pairs = sum(1 for d in corpus.docs if d.kind != "original")
    not_placed = sum(1 for d in corpus.docs if not d.injected)
    out(f"=== {name}: {n_fam} articles, {n_docs} documents, {all_pairs} pairs")
    out(
        f"  {dup_pairs} (original, variant) pairs, {len(KINDS)} kinds; families from the same "
        f"site: {same_site} pairs; same topic (TF-IDF cosine >= {TOPIC_COSINE}): {topic_pairs} "
        f"pairs; article located in {len(corpus.templates)} of {n_fam} pages "
        f"({not_placed} documents appended to a page whose article was not found)"
    )
    merged = [
        [corpus.originals[f]["key"] for f in range(n_fam) if corpus.article[f] == a]
        for a in sorted(set(corpus.article))
    ]
    merged = [m for m in merged if len(m) > 1]
    if merged:
        out(f"  originals that duplicate each other (labelled one article): {merged}")
    out()
    lang_results: dict[str, Any] = {"extraction": extraction_quality(corpus, out)}
    scorers = {"ext": Scorer(corpus, "ext", args.seed), "gt": Scorer(corpus, "gt", args.seed)}
    for source, scorer in scorers.items():
        short = sum(1 for i, t in enumerate(scorer.tokens) if scorer.present[i] and t < 50)
        out(
            f"  {source}: {short} documents under 50 tokens, "
            f"{len(scorer.texts) - sum(scorer.present)} without text"
        )
    out()

    # defaults and plain libraries, on both texts
    default_results: dict[str, list[Result]] = {}
    for source, scorer in scorers.items():
        rows = []
        got = [scorer.score(cfg) for cfg in [*DEFAULTS.values(), *PROPOSED.values()]]
        pd_pairs, pd_s = plain_datasketch(scorer.texts, scorer.present)
        got.append(scorer.score_pairs("datasketch README (words, 0.5)", "plain", pd_pairs, pd_s, 0))
        ps_pairs, ps_s = plain_simhash(scorer.texts, scorer.present)
        got.append(scorer.score_pairs("simhash README (char:3, k=3)", "plain", ps_pairs, ps_s, 0))
        default_results[source] = got
        rows = [summary_row(r) for r in got]
        what = (
            "extracted with trafilatura (what the plugin sees)"
            if source == "ext"
            else (
                "the ground truth (clean article text)"
                if lang == "en"
                else "the transformed original extraction (no HTML in between)"
            )
        )
        out(
            table(
                SUMMARY_HEADERS,
                rows,
                f"{name}, project defaults, on {what}: precision over all matched pairs, "
                "recall of (original, variant) pairs by kind (partial = worst of 4)",
            )
        )
    out(kind_table(default_results["ext"]).replace("kind", "P/R/F1 by kind (extracted text)", 1))
    edit_rows = []
    for r in default_results["ext"]:
        edit_rows.append(
            [r.config, pct(r.recall["full-content"]), *(pct(r.recall[k]) for k in REPRINT_KINDS)]
        )
    out(
        table(
            ["config", "0%", *(f"{round(e * 100)}%" for e in EDIT_RATES)],
            edit_rows,
            f"{name}: recall against word-edit rate (reprints in another template; "
            "0% = full-content)",
        )
    )
    for r in default_results["ext"][:6]:
        if r.examples:
            out(f"  {r.config} false matches, e.g. " + "; ".join(r.examples[:3]))
    out()
    lang_results["defaults"] = {s: [_jsonable(r) for r in rs] for s, rs in default_results.items()}

    # histograms of the full pairwise similarity, at the defaults
    hist = {}
    for backend in ("minhash", "simhash", "spotsigs"):
        dup, non = scorers["ext"].pairwise(DEFAULTS[backend])
        hist[backend] = (dup, non)
    lang_results["_hist"] = hist

    if not args.no_grid:
        grid_results: dict[str, list[Result]] = {}
        for backend, configs in grid(lang, args.quick).items():
            got = [scorers["ext"].score(cfg) for cfg in configs]
            grid_results[backend] = got
            out(
                table(
                    SUMMARY_HEADERS,
                    [summary_row(r) for r in got],
                    f"{name} grid, {backend}, extracted text",
                )
            )
        lang_results["grid"] = {b: [_jsonable(r) for r in rs] for b, rs in grid_results.items()}
        out(
            f"{name}: best configuration of each backend by the rule (P >= {PRECISION_TARGET} "
            f"and recall >= {RECALL_TARGET} on every target kind; then the most recall on "
            "10% and 20% reprints; then the fastest)"
        )
        best_rows = []
        for got in grid_results.values():
            ok = [r for r in got if r.meets(PRECISION_TARGET, RECALL_TARGET)]
            pool = ok or got
            best = max(
                pool,
                key=lambda r: (
                    round(r.recall_of(("reprint:10%", "reprint:20%")), 3),
                    round(r.precision, 3),
                    -r.ms_per_doc,
                ),
            )
            best_rows.append(summary_row(best))
        out(table(SUMMARY_HEADERS, best_rows))
    results[lang] = lang_results
    out(f"({name} done in {time.perf_counter() - started:.0f} s)")
    out()


def _jsonable(r: Result) -> dict[str, Any]:
    return {
        "config": r.config,
        "precision": r.precision,
        "recall": r.recall,
        "kind_precision": r.kind_precision,
        "matched_pairs": r.matched,
        "false_pairs": dict(r.false_pairs),
        "false_drops": r.false_drops,
        "extra_kept": r.extra_kept,
        "ms_per_doc": r.ms_per_doc,
        "short": r.short,
        "meets_targets": r.meets(PRECISION_TARGET, RECALL_TARGET),
        "false_match_examples": r.examples,
    }


# -- report ---------------------------------------------------------------------------------


def figures(results: dict[str, Any], out_dir: Path, out: Out) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        out("matplotlib is not installed (pip install -e '.[bench]'): no figures")
        return []
    import numpy as np

    names = []
    langs = [lang for lang in ("en", "zh") if lang in results]
    fig, axes = plt.subplots(len(langs), 3, figsize=(13, 3.6 * len(langs)), squeeze=False)
    for row, lang in enumerate(langs):
        for col, backend in enumerate(("minhash", "simhash", "spotsigs")):
            ax = axes[row][col]
            dup, non = results[lang]["_hist"][backend]
            bins = np.linspace(0, 1, 51) if backend != "simhash" else np.linspace(0.5, 1, 33)
            ax.hist(
                non,
                bins=bins,
                alpha=0.6,
                label=f"different articles ({len(non)})",
                color="tab:blue",
                log=True,
            )
            ax.hist(
                dup,
                bins=bins,
                alpha=0.6,
                label=f"duplicate pairs ({len(dup)})",
                color="tab:red",
                log=True,
            )
            cfg = DEFAULTS[backend].kwargs
            cut = 1 - cfg["k"] / 64 if backend == "simhash" else cfg["threshold"]
            ax.axvline(cut, color="black", linestyle="--", linewidth=1, label="default threshold")
            what = {
                "minhash": "estimated Jaccard",
                "simhash": "1 - Hamming/64",
                "spotsigs": "Jaccard of spot signatures",
            }[backend]
            ax.set_title(
                f"{'English' if lang == 'en' else 'Chinese'}: {backend} ({what})", fontsize=10
            )
            ax.set_xlabel("similarity (extracted text)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "similarity_histograms.png", dpi=90)
    plt.close(fig)
    names.append("similarity_histograms.png")

    fig, axes = plt.subplots(1, len(langs), figsize=(6 * len(langs), 4), squeeze=False)
    xs = [0, *(round(e * 100) for e in EDIT_RATES)]
    for col, lang in enumerate(langs):
        ax = axes[0][col]
        for r in results[lang]["defaults"]["ext"]:
            ys = [r["recall"]["full-content"], *(r["recall"][k] for k in REPRINT_KINDS)]
            style = "--" if "README" in r["config"] else "-"
            ax.plot(xs, ys, style, marker="o", label=r["config"])
        ax.axhline(RECALL_TARGET, color="grey", linewidth=0.8)
        ax.set_xticks(xs)
        ax.set_xlabel("word edits (%)")
        ax.set_ylabel("recall")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f"{'English' if lang == 'en' else 'Chinese'}: recall against edit rate")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "recall_vs_edit_rate.png", dpi=90)
    plt.close(fig)
    names.append("recall_vs_edit_rate.png")
    return names


def write_report(out: Out, images: list[str], out_dir: Path) -> None:
    body = [
        "<!doctype html><meta charset='utf-8'><title>scrapy-neardup accuracy</title>",
        "<style>body{font-family:sans-serif;max-width:1400px;margin:auto}"
        "pre{font-size:12px;background:#f6f6f6;padding:6px;overflow-x:auto}</style>",
        "<h1>scrapy-neardup: accuracy on real pages</h1>",
    ]
    body += [f"<img src='{name}' style='max-width:100%'>" for name in images]
    text = "\n".join(t for kind, t in out.parts if kind == "pre")
    body.append(f"<pre>{html.escape(text)}</pre>")
    (out_dir / "report.html").write_text("\n".join(body), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 English pages, smaller grid")
    parser.add_argument("--out", type=Path, default=ROOT / "evaluation" / "out")
    parser.add_argument("--cache", type=Path, default=None, help="default: OUT/cache")
    parser.add_argument("--lang", default="en,zh")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="extraction processes (max 2)")
    parser.add_argument("--no-grid", action="store_true")
    args = parser.parse_args(argv)
    args.workers = max(1, min(args.workers, 2))
    args.out.mkdir(parents=True, exist_ok=True)
    args.cache = args.cache or args.out / "cache"
    out = Out()
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for lang in [x.strip() for x in args.lang.split(",") if x.strip()]:
        if not have_data(lang):
            out(f"{lang}: ../shared/data is absent here; skipped (see ../shared/data/README.md)")
            continue
        run_language(lang, args, out, results)
    images = figures(results, args.out, out) if results else []
    for lang_results in results.values():
        lang_results.pop("_hist", None)
    (args.out / "results.json").write_text(
        json.dumps(results, indent=1, default=_default), encoding="utf-8"
    )
    out(f"total {time.perf_counter() - started:.0f} s; report: {args.out / 'report.html'}")
    write_report(out, images, args.out)
    return 0


def _default(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
