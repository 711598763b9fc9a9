"""The "similar" decision's shingle size and threshold, measured: exact word-shingle Jaccard
of every pair of the accuracy corpus, thresholded, scored as ``evaluate.py`` scores a method.

    python evaluation/evaluate_decision.py [--lang en] [--cache DIR] [--engine]

The exact Jaccard of every pair (a sparse product) is the ceiling of any candidate search;
``--engine`` then scores the plugin's own path (``Deduplicator(decision="similar")``: MinHash
bands over the rule's shingles, the Jaccard read from Bloom filters) beside the defaults and
the plain datasketch README, the rows of ``ACCURACY.md``'s tables.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from corpus.html import PARTIAL_KINDS, build_corpus  # noqa: E402
from evaluation.evaluate import SUMMARY_HEADERS, summary_row, table  # noqa: E402
from evaluation.scoring import Config, Scorer, plain_datasketch  # noqa: E402
from scrapy_neardup.backends.containment import candidate_params  # noqa: E402
from scrapy_neardup.text import ShingleSpec  # noqa: E402

THRESHOLDS = {
    1: (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
    2: (0.15, 0.2, 0.25, 0.3, 0.35, 0.4),
    3: (0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
}


def jaccard_matrix(scorer: Scorer, docs: list[int], size: int) -> np.ndarray:
    from scipy import sparse

    spec = ShingleSpec("word", size)
    vocab: dict[int, int] = {}
    rows, cols = [], []
    for r, i in enumerate(docs):
        for h in np.unique(scorer.base[i].shingles(spec)).tolist():
            rows.append(r)
            cols.append(vocab.setdefault(h, len(vocab)))
    x = sparse.csr_matrix(
        (np.ones(len(rows), np.float32), (rows, cols)), shape=(len(docs), max(1, len(vocab)))
    )
    common = (x @ x.T).toarray()
    sizes = np.asarray(x.sum(axis=1)).ravel()
    union = sizes[:, None] + sizes[None, :] - common
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, common / union, 0.0)


def row(scorer: Scorer, name: str, pairs: dict) -> list:
    r = scorer.score_pairs(name, "x", pairs, 0.0, 0)
    partial = min(r.recall[k] for k in PARTIAL_KINDS)
    fp = "/".join(str(r.false_pairs[c]) for c in ("same-site", "same-topic", "other"))
    return [
        name,
        f"{r.precision:.4f}",
        f"{r.recall['full-content']:.3f}",
        f"{partial:.3f}",
        f"{r.recall['reprint:5%']:.3f}",
        f"{r.recall['reprint:10%']:.3f}",
        f"{r.recall['reprint:20%']:.3f}",
        fp,
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", default="en", choices=("en", "zh"))
    parser.add_argument("--cache", type=Path, default=ROOT / "evaluation" / "out" / "cache")
    parser.add_argument("--engine", action="store_true", help="also score the plugin's path")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.lang, cache_dir=args.cache, log=print)
    scorer = Scorer(corpus, "ext", 0)
    docs = [i for i in range(len(scorer.docs)) if scorer.present[i] and scorer.tokens[i] >= 50]
    exact: dict[tuple[int, int], float] = {}
    groups = defaultdict(list)
    for i, signature in enumerate(scorer.exact):
        if scorer.present[i]:
            groups[signature].append(i)
    for members in groups.values():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                exact[(members[a], members[b])] = 1.0
    plain, _ = plain_datasketch(scorer.texts, scorer.present)
    rows = [row(scorer, "datasketch README (words, 0.5)", plain)]
    index = np.array(docs)
    for size, thresholds in THRESHOLDS.items():
        matrix = jaccard_matrix(scorer, docs, size)
        upper = np.triu_indices(len(docs), 1)
        values = matrix[upper]
        for threshold in thresholds:
            chosen = values >= threshold
            pairs = dict(exact)
            for a, b in zip(index[upper[0][chosen]], index[upper[1][chosen]], strict=True):
                pairs.setdefault((int(a), int(b)), 1.0)
            rows.append(row(scorer, f"exact Jaccard word:{size} >= {threshold}", pairs))
    headers = ["rule", "P", "full-con", "partial", "r5%", "r10%", "r20%", "FP site/topic/other"]
    print(table(headers, rows, f"{args.lang}: exact word-shingle Jaccard of every pair"))
    if args.engine:
        similar = {"decision": "similar"}
        shingles_only = {**similar, "similar_spots": False}
        configs = [
            Config.of(
                "minhash",
                label="minhash (default, contained)",
                **candidate_params("minhash", "contained"),
            ),
            Config.of(
                "minhash",
                label="minhash similar (default)",
                verify=similar,
                **candidate_params("minhash", "similar"),
            ),
            Config.of(
                "minhash",
                label="minhash similar, shingles only",
                verify=shingles_only,
                **candidate_params("minhash", "similar", similar_spots=False),
            ),
            Config.of(
                "spotsigs",
                label="spotsigs similar (default)",
                verify=similar,
                **candidate_params("spotsigs", "similar"),
            ),
        ]
        print(
            table(
                SUMMARY_HEADERS,
                [summary_row(scorer.score(c)) for c in configs],
                f"{args.lang}: the engine's path",
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
