"""Scoring near-duplicate methods on a labelled corpus (see ``corpus/html.py``).

A method *matches* two documents when the engine would: their exact hashes are equal, or
both have at least ``min_tokens`` tokens and the method's index finds one from the other
(``Index.query`` over a memory store, which verifies every candidate with
``method.similarity``). Documents with no text are skipped, as the pipeline skips them.

* Recall of a kind: share of (original, variant of that kind) pairs matched.
* Precision: share of matched pairs that are two documents of one family (one article), or
  where one document's ground-truth text is contained in the other's (at least
  :data:`CONTAINED` of its word 3-shingles, the lossy line of ``backends/containment.py``: a
  ``partial:add`` page holds whole paragraphs of another article, so a short article can be
  all in it); per kind, over the matched pairs that involve a variant of that kind.
* False positives are counted by the category of the two families (same-site, same-topic,
  other), and a stream run replays the pipeline (``Deduplicator.check_signed`` in a seeded
  random order, first seen wins) to count false drops: documents dropped as a duplicate of
  another article.
"""

from __future__ import annotations

import random
import re
import time
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from corpus.html import KINDS, PARTIAL_KINDS, Corpus
from scrapy_neardup.backends import make_backend
from scrapy_neardup.backends.containment import Verified
from scrapy_neardup.backends.exact import ExactBackend
from scrapy_neardup.deduplicator import Deduplicator, Index, Signed
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document

#: A document whose ground truth has this share of its word 3-shingles in another's is held by
#: it; counted on the ground truth with a regex and sets, none of the plugin's code (a judge
#: independent of what it judges).
CONTAINED = 0.8
_GT_WORD = re.compile(r"\w+")

TARGET_KINDS = ("full-layout", "full-content", *PARTIAL_KINDS, "reprint:1%", "reprint:5%")
# what a method's signature depends on (the rest only changes buckets or the match test)
SIGNATURE_PARAMS = {
    "exact": (),
    "minhash": ("num_perm", "shingles", "seed"),
    "simhash": ("shingles", "weights", "lines"),
    "spotsigs": ("chain", "antecedents", "stopwords", "languages", "anchors", "min_spots"),
}


@dataclass(frozen=True)
class Config:
    backend: str
    params: tuple[tuple[str, Any], ...] = ()
    min_tokens: int = 50
    label: str = ""
    #: Verified's keyword arguments (decision, similarity, ...): the default decision if empty
    verify: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(
        cls,
        backend: str,
        min_tokens: int = 50,
        label: str = "",
        verify: dict[str, Any] | None = None,
        **params: Any,
    ) -> Config:
        return cls(
            backend,
            tuple(sorted(params.items())),
            min_tokens,
            label,
            tuple(sorted((verify or {}).items())),
        )

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def verify_kwargs(self) -> dict[str, Any]:
        return dict(self.verify)

    def name(self) -> str:
        if self.label:
            return self.label
        shown = []
        for k, v in self.params:
            if k in ("antecedents", "stopwords"):
                v = f"{len(v)} words"
            shown.append(f"{k}={v}")
        if self.min_tokens != 50:
            shown.append(f"min_tokens={self.min_tokens}")
        return f"{self.backend}(" + ", ".join(shown) + ")"


@dataclass
class Result:
    config: str
    backend: str
    precision: float
    recall: dict[str, float]  # by kind
    kind_precision: dict[str, float]
    matched: int
    false_pairs: Counter[str]
    false_drops: int
    extra_kept: int
    seconds: float  # signing (features included) + indexing, per document: see ms_per_doc
    ms_per_doc: float
    short: int
    examples: list[str] = field(default_factory=list)

    def target_recall(self) -> float:
        return min(self.recall[k] for k in TARGET_KINDS)

    def recall_of(self, kinds: tuple[str, ...]) -> float:
        return float(np.mean([self.recall[k] for k in kinds]))

    def f1(self, kind: str | None = None) -> float:
        p = self.kind_precision[kind] if kind else self.precision
        r = self.recall[kind] if kind else self.recall_of(KINDS)
        return 2 * p * r / (p + r) if p + r else 0.0

    def meets(self, precision: float = 0.99, recall: float = 0.95) -> bool:
        return self.precision >= precision and self.target_recall() >= recall


class Scorer:
    """Signatures (cached per signature parameters) and scores of one corpus and one text."""

    def __init__(self, corpus: Corpus, source: str = "ext", seed: int = 0) -> None:
        self.corpus = corpus
        self.source = source
        self.seed = seed
        self.docs = corpus.docs
        self.texts = [(d.ext if source == "ext" else d.gt) or "" for d in self.docs]
        self.article_ends = [d.ext_article_end if source == "ext" else None for d in self.docs]
        self.family = [d.family for d in self.docs]
        self.article = [corpus.article[d.family] for d in self.docs]
        self.kind = [d.kind for d in self.docs]
        self.original = {d.family: i for i, d in enumerate(self.docs) if d.kind == "original"}
        self.present = [bool(t.strip()) for t in self.texts]
        exact = ExactBackend()
        start = time.perf_counter()
        self.base = [Document(t, "", e) for t, e in zip(self.texts, self.article_ends, strict=True)]
        for doc in self.base:
            doc.tokens  # noqa: B018 - tokenise once; configs copy the tokens (timed here)
        self.exact = [exact.signature(doc) for doc in self.base]
        self.tokens = [len(doc.tokens) for doc in self.base]
        self.base_seconds = time.perf_counter() - start
        self._signatures: dict[tuple[Any, ...], tuple[list[Any], float]] = {}
        self._gt_cache: dict[int, set[tuple[str, ...]]] = {}
        self._replays: dict[Config, tuple[list[int], tuple[int, int]]] = {}

    def _fresh(self, i: int) -> Document:
        """A document with the shared tokens but no shingles yet (so shingling is timed)."""
        doc = Document(self.texts[i], "", self.article_ends[i])
        doc.__dict__["normalized"] = self.base[i].normalized
        doc.__dict__["tokens"] = self.base[i].tokens
        return doc

    def signatures(self, config: Config) -> tuple[list[Any], float]:
        if config.backend == "exact":
            return [None] * len(self.docs), 0.0
        kw = config.kwargs
        # a backend not listed in SIGNATURE_PARAMS is signed again for any other parameters
        depends = SIGNATURE_PARAMS.get(config.backend, sorted(kw))
        key = (config.backend, *((p, repr(kw.get(p))) for p in depends))
        key += (("similar_shingles", config.verify_kwargs.get("similar_shingles")),)
        key += (("similar_spots", config.verify_kwargs.get("similar_spots")),)
        found = self._signatures.get(key)
        if found is None:
            method = Verified(make_backend(config.backend, **kw), **config.verify_kwargs)
            start = time.perf_counter()
            sigs = [method.signature(self._fresh(i)) for i in range(len(self.docs))]
            found = self._signatures[key] = (sigs, time.perf_counter() - start)
        return found

    def matches(self, config: Config) -> tuple[dict[tuple[int, int], float], float, int]:
        """Matched pairs (i < j) with their similarity, seconds (sign + index), short docs."""
        sigs, sign_seconds = self.signatures(config)
        pairs: dict[tuple[int, int], float] = {}
        groups: dict[bytes, list[int]] = defaultdict(list)
        for i, sig in enumerate(self.exact):
            if self.present[i]:
                groups[sig].append(i)
        for members in groups.values():
            for a in range(len(members)):
                for b in range(a + 1, len(members)):
                    pairs[(members[a], members[b])] = 1.0
        long_docs = [
            i
            for i in range(len(self.docs))
            if self.present[i] and self.tokens[i] >= config.min_tokens
        ]
        short = sum(self.present) - len(long_docs)
        start = time.perf_counter()
        if config.backend != "exact":
            method = Verified(make_backend(config.backend, **config.kwargs), **config.verify_kwargs)
            index = Index(method, MemoryBucketStore())
            keys = {str(i): i for i in long_docs}
            for i in long_docs:
                index.add(str(i), sigs[i])
            for i in long_docs:
                for match in index.query(sigs[i]):
                    j = keys[match.key]
                    if j != i:
                        pairs.setdefault((min(i, j), max(i, j)), match.similarity)
        index_seconds = time.perf_counter() - start
        seconds = self.base_seconds + sign_seconds + index_seconds
        return pairs, seconds, short

    def stream(self, config: Config) -> tuple[int, int]:
        """(false drops, extra copies kept) of a pipeline run in a seeded random order."""
        return self._replay(config)[1]

    def _replay(self, config: Config) -> tuple[list[int], tuple[int, int]]:
        """The pipeline over every document in a seeded random order (first come, first
        kept; containment decides): the documents kept as new (not related to a kept one),
        with (false drops, extra kept)."""
        found = self._replays.get(config)
        if found is None:
            found = self._replays[config] = self._run_replay(config)
        return found

    def _run_replay(self, config: Config) -> tuple[list[int], tuple[int, int]]:
        sigs, _ = self.signatures(config)
        order = [i for i in range(len(self.docs)) if self.present[i]]
        random.Random(f"{self.seed}:stream").shuffle(order)
        dedup = Deduplicator(
            make_backend(config.backend, **config.kwargs),
            min_tokens=config.min_tokens,
            containment=config.verify_kwargs,
        )
        false_drops = 0
        kept: Counter[int] = Counter()
        kept_docs: list[int] = []
        for i in order:
            near = sigs[i] if self.tokens[i] >= config.min_tokens else None
            verdict = dedup.check_signed(str(i), Signed(self.exact[i], near, self.tokens[i]))
            if verdict.is_duplicate:
                j = int(verdict.duplicate_of)
                false_drops += self.article[j] != self.article[i] and not self.contained(i, j, True)
            else:
                kept[self.article[i]] += 1
                if verdict.related_to is None:
                    kept_docs.append(i)
        extra = sum(n - 1 for n in kept.values())
        return kept_docs, (false_drops, extra)

    def score(self, config: Config, pairs: Any = None) -> Result:
        if pairs is None:
            pairs, seconds, short = self.matches(config)
        else:
            seconds, short = 0.0, 0
        return self.score_pairs(
            config.name(),
            config.backend,
            pairs,
            seconds,
            short,
            self.stream(config) if config.backend != "plain" else (0, 0),
        )

    def score_pairs(
        self,
        name: str,
        backend: str,
        pairs: dict[tuple[int, int], float],
        seconds: float,
        short: int,
        stream: tuple[int, int] = (0, 0),
    ) -> Result:
        hits: Counter[str] = Counter()
        totals: Counter[str] = Counter()
        kind_tp: Counter[str] = Counter()
        kind_fp: Counter[str] = Counter()
        for i, d in enumerate(self.docs):
            if d.kind != "original":
                totals[d.kind] += 1
                o = self.original[d.family]
                if (min(o, i), max(o, i)) in pairs:
                    hits[d.kind] += 1
                    kind_tp[d.kind] += 1
        false_pairs: Counter[str] = Counter()
        examples = []
        same = 0
        for a, b in pairs:
            if self.article[a] == self.article[b] or self.contained(a, b):
                same += 1
                continue
            false_pairs[self.corpus.category(self.docs[a], self.docs[b])] += 1
            for k in (self.kind[a], self.kind[b]):
                if k != "original":
                    kind_fp[k] += 1
            if len(examples) < 5:
                examples.append(f"{self.docs[a].id} ~ {self.docs[b].id} ({pairs[a, b]:.3f})")
        total = len(pairs)
        recall = {k: hits[k] / totals[k] if totals[k] else float("nan") for k in KINDS}
        kind_precision = {
            k: kind_tp[k] / (kind_tp[k] + kind_fp[k]) if kind_tp[k] + kind_fp[k] else 1.0
            for k in KINDS
        }
        n = len(self.docs)
        return Result(
            name,
            backend,
            same / total if total else 1.0,
            recall,
            kind_precision,
            total,
            false_pairs,
            stream[0],
            stream[1],
            seconds,
            1000 * seconds / n,
            short,
            examples,
        )

    def _gt_shingles(self, i: int) -> set[tuple[str, ...]]:
        found = self._gt_cache.get(i)
        if found is None:
            words = _GT_WORD.findall(self.docs[i].gt.casefold())
            found = self._gt_cache[i] = {tuple(words[j : j + 3]) for j in range(len(words) - 2)}
        return found

    def contained(self, a: int, b: int, one_way: bool = False) -> bool:
        """Whether the ground truth of ``a`` (or, unless ``one_way``, of either) is (nearly)
        all in the other's: scored by a regex and sets, none of the plugin's code."""
        sa, sb = self._gt_shingles(a), self._gt_shingles(b)
        if not sa or not sb:
            return False
        common = len(sa & sb)
        share = common / len(sa) if one_way else max(common / len(sa), common / len(sb))
        return share >= CONTAINED

    # -- full pairwise similarity (histograms) ----------------------------------------------

    def pairwise(self, config: Config) -> tuple[np.ndarray, np.ndarray]:
        """Similarities of (original, variant) pairs and of all different-article pairs,
        over documents with at least ``min_tokens`` tokens, with no threshold applied."""
        sigs, _ = self.signatures(config)
        idx = [
            i
            for i in range(len(self.docs))
            if self.present[i] and self.tokens[i] >= config.min_tokens
        ]
        sim = raw_similarity(config.backend, [sigs[i][0] for i in idx])
        fam = np.array([self.article[i] for i in idx])
        pos = {i: p for p, i in enumerate(idx)}
        dup = []
        for i in idx:
            o = self.original[self.family[i]]
            if i != o and o in pos:
                dup.append(sim[pos[o], pos[i]])
        upper = np.triu_indices(len(idx), 1)
        different = fam[upper[0]] != fam[upper[1]]
        return np.array(dup), sim[upper][different]


def raw_similarity(backend: str, sigs: list[Any]) -> np.ndarray:
    """The matrix of each method's similarity estimate (what ``similarity`` thresholds)."""
    n = len(sigs)
    if backend == "minhash":
        m = np.stack(sigs)
        out = np.empty((n, n), dtype=np.float32)
        for s in range(0, n, 64):
            out[s : s + 64] = (m[s : s + 64, None, :] == m[None, :, :]).mean(axis=2)
        return out
    if backend == "simhash":
        v = np.array(sigs, dtype=np.uint64)
        out = np.empty((n, n), dtype=np.float32)
        for s in range(0, n, 256):
            out[s : s + 256] = 1.0 - np.bitwise_count(v[s : s + 256, None] ^ v[None, :]) / 64
        return out
    if backend == "spotsigs":
        from scipy import sparse

        vocab: dict[int, int] = {}
        rows, cols = [], []
        for r, sig in enumerate(sigs):
            for h in sig.tolist():
                rows.append(r)
                cols.append(vocab.setdefault(h, len(vocab)))
        x = sparse.csr_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n, max(1, len(vocab)))
        )
        common = (x @ x.T).toarray()
        sizes = np.array([len(s) for s in sigs], dtype=np.float32)
        union = sizes[:, None] + sizes[None, :] - common
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, common / union, 0.0).astype(np.float32)
    raise ValueError(backend)


# -- the plain libraries, used as their READMEs show --------------------------------------------


def plain_datasketch(texts: list[str], present: list[bool]) -> tuple[dict, float]:
    """``MinHash(num_perm=128)`` updated with each word of ``set(text.split())``,
    ``MinHashLSH(threshold=0.5, num_perm=128)``, ``insert`` then ``query``; a match is a
    candidate the LSH returns (the README does not verify)."""
    from datasketch import MinHash, MinHashLSH

    start = time.perf_counter()
    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    hashes = {}
    for i, text in enumerate(texts):
        if not present[i]:
            continue
        m = MinHash(num_perm=128)
        for d in set(text.split()):
            m.update(d.encode("utf8"))
        hashes[i] = m
        lsh.insert(str(i), m)
    pairs = {}
    for i, m in hashes.items():
        for key in lsh.query(m):
            j = int(key)
            if j != i:
                pairs[(min(i, j), max(i, j))] = 1.0
    return pairs, time.perf_counter() - start


def _simhash_features(s: str) -> list[str]:
    # the simhash README's get_features (character 3-grams of the lower-cased word characters)
    width = 3
    s = s.lower()
    s = re.sub(r"[^\w]+", "", s)
    return [s[i : i + width] for i in range(max(len(s) - width + 1, 1))]


def plain_simhash(texts: list[str], present: list[bool]) -> tuple[dict, float]:
    """``Simhash(get_features(text))`` and ``SimhashIndex(objs, k=3).get_near_dups``."""
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        objs = [(str(i), Simhash(_simhash_features(t))) for i, t in enumerate(texts) if present[i]]
        index = SimhashIndex(objs, k=3)
        pairs = {}
        for key, s in objs:
            i = int(key)
            for other in index.get_near_dups(s):
                j = int(other)
                if j != i:
                    pairs[(min(i, j), max(i, j))] = 1.0
    return pairs, time.perf_counter() - start
