"""SimHash (Charikar 2002) with the block index of Manku, Jain and Das Sarma (WWW 2007).

Promises: a 64-bit fingerprint over weighted shingles of the document's prose lines; the
index's buckets (one per combination of ``blocks - k`` blocks) find every stored fingerprint
within Hamming distance ``k``, by the pigeonhole principle. Pure maths: no Scrapy, no storage.
Rationale and parameters (``k``, ``blocks``, prose lines): ``docs/design.md#simhash``.
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
#: The widest k: at 12 bits the index has 455 tables (``blocks = k + 3``) of 12-13 bit
#: keys, so each query screens many fingerprints (by Hamming distance, in the store) and
#: verifies those within k; use it with the "similar" decision's precision in mind.
MAX_K = 12
WEIGHTS = ("count", "log")


_KEY_BITS = 48  # bits of a bucket key that hold fingerprint bits; the rest name the table


def block_masks(blocks: int) -> list[tuple[int, int]]:
    """(shift, mask) of each block, as even as 64 bits allow."""
    sizes = [BITS // blocks + (1 if i < BITS % blocks else 0) for i in range(blocks)]
    out, shift = [], 0
    for size in sizes:
        out.append((shift, (1 << size) - 1))
        shift += size
    return out


def block_tables(k: int, blocks: int) -> list[list[tuple[int, int, int]]]:
    """For each table (a combination of ``blocks - k`` blocks), the (shift, mask, position)
    of its blocks, which packs the chosen bits into one integer of at most 48 bits."""
    masks = block_masks(blocks)
    tables = []
    for chosen in combinations(range(blocks), blocks - k):
        parts, position = [], 0
        for i in chosen:
            shift, mask = masks[i]
            parts.append((shift, mask, position))
            position += mask.bit_length()
        if position > _KEY_BITS:
            raise ValueError(f"simhash blocks={blocks} with k={k} gives {position}-bit tables")
        tables.append(parts)
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


def _split(doc: Document, min_words: int) -> tuple[list[str], list[str]] | None:
    """(prose lines, short lines), or None when the whole text is to be used."""
    if not min_words:
        return None
    kept: list[str] = []
    short: list[str] = []
    words = 0
    for line in doc.text.splitlines():
        n = line_words(line)
        if n >= min_words:
            kept.append(line)
            words += n
        else:
            short.append(line)
    if not short or words < MIN_PROSE_WORDS:
        return None
    return kept, short


def prose(doc: Document, min_words: int) -> Document:
    """The document's lines of at least ``min_words`` words (all of it when they hold fewer
    than :data:`MIN_PROSE_WORDS`, or with ``min_words`` 0)."""
    split = _split(doc, min_words)
    return doc if split is None else Document("\n".join(split[0]))


def prose_counts(doc: Document, min_words: int, spec: ShingleSpec) -> dict[str, float]:
    """Counts of the shingles of :func:`prose`. For single words, the document's own tokens
    less those of its short lines (a few, tokenised alone: no token spans a line), so the
    text is not tokenised twice (jieba is most of a Chinese page's cost)."""
    split = _split(doc, min_words)
    if split is None:
        return term_weights(doc.shingle_strings(spec))
    if spec != _WORDS:
        return term_weights(Document("\n".join(split[0])).shingle_strings(spec))
    counts = Counter(doc.tokens)
    counts.subtract(Document("\n".join(split[1])).tokens)
    return {word: n for word, n in counts.items() if n > 0}


class SimHashBackend(Backend):
    """64-bit SimHash; a match is a Hamming distance of at most ``k``."""

    name = "simhash"
    reads_tokens = True  # the token list, not only its hashes (see Deduplicator.sign)

    def __init__(
        self,
        k: int = 7,
        shingles: str | ShingleSpec = "word:1",
        blocks: int | None = None,
        weights: str = "count",
        lines: int = PROSE_LINE_WORDS,
    ) -> None:
        if weights not in WEIGHTS:
            raise ValueError(f"simhash weights must be one of {WEIGHTS}, got {weights!r}")
        self.weights = weights
        if isinstance(k, bool) or not 1 <= k <= MAX_K:
            raise ValueError(f"simhash k must be 1..{MAX_K} bits, got {k}")
        if blocks is None:  # above 7 bits, pairs of blocks would be keys of 9-12 bits
            blocks = k + 2 if k <= 7 else k + 3
        if not k + 1 <= blocks <= k + 3:
            raise ValueError(f"simhash blocks must be k+1..k+3 ({k + 1}..{k + 3}), got {blocks}")
        if not 0 <= lines <= 1000:
            raise ValueError(f"simhash lines must be 0..1000 words (0: every line), got {lines}")
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
        weights = prose_counts(doc, self.lines, self.shingles)
        if not weights:
            return 0
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
        if len(data) != 8:
            raise ValueError(f"simhash signature must be 8 bytes, got {len(data)}")
        return int.from_bytes(data, "little")
