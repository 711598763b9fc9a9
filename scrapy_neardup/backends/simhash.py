"""SimHash (Charikar 2002) with the block index of Manku, Jain and Das Sarma (WWW 2007).

A 64-bit fingerprint (the ``simhash`` package's) over weighted shingles of the document's
prose lines; a bucket per combination of ``blocks - k`` blocks finds every stored fingerprint
within Hamming distance ``k``. Rationale and parameters: ``docs/design.md#simhash``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import combinations
from typing import Any

import xxhash
from simhash import Simhash

from scrapy_neardup.backends.base import Backend
from scrapy_neardup.text import CJK_CHARS, Document, ShingleSpec, term_weights

BITS = 64
MAX_K = 12  #: the widest k: 455 tables of 12-13 bit keys (docs/design.md#simhash)
WEIGHTS = ("count", "log")
_KEY_BITS = 48  # bits of a bucket key that hold fingerprint bits; the rest name the table


def block_masks(blocks: int) -> list[tuple[int, int]]:
    """(shift, mask) of each block, as even as 64 bits allow."""
    sizes = [BITS // blocks + (i < BITS % blocks) for i in range(blocks)]
    return [(sum(sizes[:i]), (1 << size) - 1) for i, size in enumerate(sizes)]


def block_tables(k: int, blocks: int) -> list[list[tuple[int, int, int]]]:
    """For each table (a combination of ``blocks - k`` blocks), the (shift, mask, position)
    of its blocks, which packs the chosen bits into one integer of at most 48 bits."""
    masks = block_masks(blocks)
    tables = []
    for chosen in combinations(masks, blocks - k):
        widths = [mask.bit_length() for _, mask in chosen]
        if sum(widths) > _KEY_BITS:
            raise ValueError(f"simhash blocks={blocks} with k={k} gives {sum(widths)}-bit tables")
        tables.append([(shift, mask, sum(widths[:i])) for i, (shift, mask) in enumerate(chosen)])
    return tables


#: A line of at least this many words is prose; shorter ones (menus, captions, link lists
#: that extraction keeps in one copy and not another) are left out of the fingerprint.
PROSE_LINE_WORDS = 20
#: ... unless the prose lines hold fewer words than this: then the whole text is used.
MIN_PROSE_WORDS = 50
_CJK_RUN = re.compile(f"[{CJK_CHARS}]")
_WORDS = ShingleSpec("word", 1)


def line_words(line: str) -> int:
    """Words in a line, without tokenising it: spaced words, and a word per two CJK
    characters (Chinese words average under two characters)."""
    cjk = len(_CJK_RUN.findall(line))
    return len(_CJK_RUN.sub(" ", line).split()) + cjk // 2 if cjk else len(line.split())


def _split(doc: Document, min_words: int) -> tuple[Document, Document] | None:
    """(prose lines, short lines), or None when the whole text is to be used."""
    lines = doc.text.splitlines() if min_words else []
    counts = [line_words(line) for line in lines]
    kept = [line for line, n in zip(lines, counts, strict=True) if n >= min_words]
    if len(kept) == len(lines) or sum(n for n in counts if n >= min_words) < MIN_PROSE_WORDS:
        return None
    short = [line for line, n in zip(lines, counts, strict=True) if n < min_words]
    return Document("\n".join(kept)), Document("\n".join(short))


def prose(doc: Document, min_words: int) -> Document:
    """The document's lines of at least ``min_words`` words (all of it when they hold fewer
    than :data:`MIN_PROSE_WORDS`, or with ``min_words`` 0)."""
    split = _split(doc, min_words)
    return doc if split is None else split[0]


def prose_counts(doc: Document, min_words: int, spec: ShingleSpec) -> dict[str, float]:
    """Counts of the shingles of :func:`prose`. For single words, the document's own tokens
    less those of its short lines (a few, tokenised alone: no token spans a line), so the
    text is not tokenised twice (jieba is most of a Chinese page's cost)."""
    split = _split(doc, min_words)
    if split is not None and spec == _WORDS:
        counts = Counter(doc.tokens)
        counts.subtract(split[1].tokens)
        return {word: n for word, n in counts.items() if n > 0}
    return term_weights((doc if split is None else split[0]).shingle_strings(spec))


class SimHashBackend(Backend):
    """64-bit SimHash; a match is a Hamming distance of at most ``k``."""

    name = "simhash"
    reads_tokens = True  # single words are the tokens: see Deduplicator.sign

    def __init__(
        self,
        k: int = 7,
        shingles: str | ShingleSpec = "word:1",
        blocks: int | None = None,
        weights: str = "count",
        lines: int = PROSE_LINE_WORDS,
    ) -> None:
        self.require(weights in WEIGHTS, f"weights must be one of {WEIGHTS}, got {weights!r}")
        valid_k = not isinstance(k, bool) and 1 <= k <= MAX_K
        self.require(valid_k, f"k must be 1..{MAX_K} bits, got {k}")
        if blocks is None:  # above 7 bits, pairs of blocks would be keys of 9-12 bits
            blocks = k + 2 if k <= 7 else k + 3
        self.require(k < blocks <= k + 3, f"blocks must be {k + 1}..{k + 3}, got {blocks}")
        self.require(
            0 <= lines <= 1000, f"lines must be 0..1000 words (0: every line), got {lines}"
        )
        self.weights = weights
        self.lines = lines
        self.k = self.hamming_limit = k
        self.blocks = blocks
        self.shingles = ShingleSpec.parse(shingles)
        self._tables = block_tables(k, blocks)

    def params(self) -> dict[str, Any]:
        params = {
            "k": self.k,
            "blocks": self.blocks,
            "shingles": str(self.shingles),
            "bits": BITS,
            "hash": "xxh64",
            "weights": self.weights,
        }
        if self.lines:  # without it, the parameters of the states written before it
            params["lines"] = self.lines
        return params

    def signature(self, doc: Document) -> int:
        weights = prose_counts(doc, self.lines, self.shingles)  # none: the fingerprint is 0
        if self.weights == "log":  # 1 + ln(tf): a feature repeated 20 times weighs 4, not 20
            weights = {f: 1.0 + math.log(w) for f, w in weights.items()}
        # simhash multiplies a uint8 bit array by integer weights above its batch cutoff,
        # which overflows under numpy 2; float weights take its float path instead.
        features = {
            f: (w if w <= Simhash.large_weight_cutoff else float(w)) for f, w in weights.items()
        }
        return Simhash(features, f=BITS, hashfunc=xxhash.xxh64_digest).value

    def bucket_keys(self, signature: int) -> list[int]:
        return [
            (table << _KEY_BITS) | sum(((signature >> s) & m) << p for s, m, p in parts)
            for table, parts in enumerate(self._tables)
        ]

    def hamming_key(self, signature: int) -> int:
        """The store's screen (see backends/base.py): the fingerprint itself."""
        return signature

    def similar_threshold(self) -> float:
        """1 - d / 64 for d within 3 bits (Manku, Jain and Das Sarma's k for 64 bits)."""
        return 1.0 - 3 / BITS

    def check_similar(self, similarity: float) -> None:
        if round(BITS * (1.0 - similarity) + 1e-9) > self.k:
            bits = "a Hamming distance within 64 * (1 - similarity) bits; the index finds k"
            raise ValueError(f"at least {1 - self.k / BITS:.4f} with simhash k={self.k} ({bits})")

    def similarity(self, a: int, b: int) -> float | None:
        distance = (a ^ b).bit_count()
        return 1.0 - distance / BITS if distance <= self.k else None

    def encode(self, signature: int) -> bytes:
        return signature.to_bytes(8, "little")

    def decode(self, data: bytes) -> int:
        return int.from_bytes(self.sized(data, 8), "little")
