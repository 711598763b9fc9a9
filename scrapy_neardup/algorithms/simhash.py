"""SimHash (Charikar 2002) with the block index of Manku, Jain and Das Sarma (WWW 2007).

Fingerprints come from the ``simhash`` package over weighted shingles. The index splits the
64 bits into ``k + 1`` blocks: two fingerprints within Hamming distance ``k`` differ in at most
``k`` blocks, so by the pigeonhole principle they agree exactly on at least one, and a lookup of
each block finds every stored fingerprint within ``k`` bits. No permuted copies are needed
beyond one bucket per block.

What k=3 of 64 bits catches: the expected Hamming distance of two SimHashes is 64 * theta / pi
for the angle theta between their feature vectors, so k=3 needs a cosine similarity of about
0.99: copies, template moves and light edits, not 5% rewrites (use ``minhash`` for those).
Word bigrams are the default feature because unigram fingerprints of different articles on
one topic came within 2-3 bits of each other on the demo site and on real news: a false drop
is lost data, a missed near-duplicate only a wasted item.
"""

from __future__ import annotations

from typing import Any

import xxhash
from simhash import Simhash

from scrapy_neardup.text import Document, ShingleSpec, term_weights

BITS = 64


def block_masks(k: int) -> list[tuple[int, int]]:
    """(shift, mask) of each of the ``k + 1`` blocks, as even as 64 bits allow."""
    blocks = k + 1
    sizes = [BITS // blocks + (1 if i < BITS % blocks else 0) for i in range(blocks)]
    out, shift = [], 0
    for size in sizes:
        out.append((shift, (1 << size) - 1))
        shift += size
    return out


class SimHashMethod:
    """64-bit SimHash; a match is a Hamming distance of at most ``k``."""

    name = "simhash"

    def __init__(self, k: int = 3, shingles: str | ShingleSpec = "word:2") -> None:
        if not 1 <= k <= 7:
            raise ValueError(f"simhash k must be 1..7 bits, got {k}")
        self.k = k
        self.shingles = ShingleSpec.parse(shingles)
        self._blocks = block_masks(k)

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "shingles": str(self.shingles), "bits": BITS, "hash": "xxh64"}

    def signature(self, doc: Document) -> int:
        weights = term_weights(doc.shingle_strings(self.shingles))
        if not weights:
            return 0
        # simhash multiplies a uint8 bit array by integer weights above its batch cutoff,
        # which overflows under numpy 2; float weights take its float path instead.
        features = {
            f: (w if w <= Simhash.large_weight_cutoff else float(w)) for f, w in weights.items()
        }
        return Simhash(features, f=BITS, hashfunc=xxhash.xxh64_digest).value

    def bucket_keys(self, signature: int) -> list[int]:
        return [(i << 40) | ((signature >> s) & m) for i, (s, m) in enumerate(self._blocks)]

    def similarity(self, a: int, b: int) -> float | None:
        distance = (a ^ b).bit_count()
        return 1.0 - distance / BITS if distance <= self.k else None

    def encode(self, signature: int) -> bytes:
        return signature.to_bytes(8, "little")

    def decode(self, data: bytes) -> int:
        if len(data) != 8:
            raise ValueError(f"simhash signature must be 8 bytes, got {len(data)}")
        return int.from_bytes(data, "little")
