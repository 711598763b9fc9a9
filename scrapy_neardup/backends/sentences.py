"""Longest-sentences signature: the hash of a document's ``n`` longest sentences.

A method reported for a large Chinese web search engine: two copies of an article keep its
longest sentences, whatever the template, comments or related links around them, and
boilerplate is made of short lines. It is cheap (one pass, one hash, one bucket) and does not
depend on the order of the text. Sentences are compared by their words (``\\w`` runs of the
NFKC, case-folded text) joined by one space, so punctuation and spacing do not matter, and a
sentence's length is the number of characters of its words (the same for Chinese and Latin
text). The ``n`` longest distinct sentences of at least ``min_chars`` characters (ties broken
by the text) are sorted and hashed with xxh3_128; with fewer than ``n`` of them there is no
signature and the document never matches.

Sentence splitting (:func:`split_sentences`) is deliberately simple. A sentence is a piece of
a line closed by an ender: the Chinese 。！？；… (and ASCII . ! ? ; right after a CJK
character), or ASCII . ! ? before white space, except a "." after an abbreviation (dotted
single letters such as "U.S." or "e.g.", a single letter, or a short list: Mr, Dr, St, vs,
...); "3.5" is never split. Text after a line's last ender is not a sentence: headlines,
menus, bylines and footers have no final punctuation, and a site repeats them on every page
(counted as sentences, they made different articles in one template share their "longest
sentences"). ``|``, ``>``, ``»`` and ``•`` also cut pieces (menus and breadcrumbs). A wrong split
only matters if two copies split differently, and both go through the same splitter.

Drop safety: a page that is the same article *plus* more text shares the longest sentences and
would be dropped, losing the text only it has. So the signature carries the document's length
(characters of its words, u32) and a match also needs ``shorter / longer >= min_length_ratio``;
the similarity reported is that ratio. The bucket is the hash alone.

Defaults, from ``evaluation/scoring.py`` on real pages after extraction (``ext`` text):

* ``n = 3``: no false match in English or Chinese; ``n = 1`` matched 32 pairs of different
  articles of one site in English (11 false drops), ``n = 2`` none but it is one step from
  that; ``n = 4`` loses recall (en 1% reprints 0.22 -> 0.13).
* ``min_length_ratio = 0.8``: at most a quarter more text can be dropped with a copy. Copies of
  one article differ in length by their template's leftovers (median ratio 0.97 when moved
  to another site, 0.84 with 20% of the paragraphs dropped; one page moved into a template
  with a long comment thread kept the same longest sentences at a ratio of 0.07): 0.7 finds
  more (en: drop 0.28 -> 0.41) but lets 43% more text go; 0.9 finds half as much.
* ``min_chars = 10``: 10 and 20 gave the same figures on real pages; Chinese sentences are
  short in characters, and at 20 the synthetic Chinese news of the tests (sentences of 15-19
  characters) had no signature.

Recall by kind (precision 1.0 and no false drop in both languages; full-layout copies 1.0):

====  ============  ===  ====  =======  ========  ===========  ===========
lang  full-content  add  drop  reorder  lead-ads  1% reprints  5% reprints
====  ============  ===  ====  =======  ========  ===========  ===========
en    .82           .56  .28   .91      .83       .22          .01
zh    .93           .60  .27   .90      .87       .20          .00
====  ============  ===  ====  =======  ========  ===========  ===========

One changed word in one of the longest sentences changes the signature, so it finds copies,
moved or re-templated, not edited reprints (use ``minhash`` for those).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import xxhash

from scrapy_neardup.text import CJK_CHARS, Document, normalize

_CLOSERS = "\"'”’»)\\]）」』"
# Lines, and the separators of menus and breadcrumbs ("Home | World", "首页 > 新闻").
_PIECES = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029|｜¦•›»>]+")
# A sentence's end, with any closing quotes or brackets: Chinese enders (full-width and
# ideographic) and the ellipsis always; ASCII ones right after a CJK character (Chinese pages
# often use them); else ASCII . ! ? before white space or the end of the piece ("3.5" and
# "a.m." inside a sentence are not ends), checked for abbreviations when it is a ".".
_END = re.compile(
    rf"[。｡！？；…]+[{_CLOSERS}]*"
    rf"|(?<=[{CJK_CHARS}])[.!?;．]+[{_CLOSERS}]*"
    rf"|(?P<latin>[.!?])[.!?]*[{_CLOSERS}]*(?=\s|$)"
)
_DOTTED = re.compile(r"(?:\w\.)*\w")  # "U.S", "e.g", "J": the word before the final dot
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs no fig gen gov sen rep col lt sgt capt".split()
)
_WORD_RE = re.compile(r"\w+")
_NON_WORD = re.compile(r"\W+")
_CJK_GAP = re.compile(rf"(?<=[{CJK_CHARS}]) (?=[{CJK_CHARS}])")
_U32 = 2**32 - 1
_NO_HASH = bytes(16)


def _is_abbreviation(before: str) -> bool:
    words = before.rsplit(None, 1)
    if not words:
        return False
    word = words[-1].lstrip("\"'“‘«([")
    return bool(_DOTTED.fullmatch(word)) or word.casefold() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, raw: pieces of a line closed by an ender.

    What follows the last ender of a line is not a sentence: a headline, a menu, a byline or
    a caption, which templates repeat on every page (they would make different articles of
    one site share their "longest sentences")."""
    out: list[str] = []
    for piece in _PIECES.split(text):
        start = 0
        for m in _END.finditer(piece):
            if m.group("latin") == "." and _is_abbreviation(piece[start : m.start()]):
                continue
            sentence = piece[start : m.end()]
            if sentence.strip():
                out.append(sentence.strip())
            start = m.end()
    return out


def sentence_key(sentence: str) -> str:
    """What two copies of a sentence share: its normalised words joined by one space (no
    space between two CJK runs, whose spacing is arbitrary)."""
    key = " ".join(_WORD_RE.findall(normalize(sentence)))
    return key if key.isascii() else _CJK_GAP.sub("", key)


class SentencesSignature(NamedTuple):
    digest: bytes  # xxh3_128 of the sorted longest sentences; 16 zero bytes: no signature
    length: int  # characters of the document's words


class SentencesBackend:
    """Hash of the ``n`` longest sentences plus a length guard."""

    name = "sentences"

    def __init__(self, n: int = 3, min_chars: int = 10, min_length_ratio: float = 0.8) -> None:
        if not 1 <= n <= 16:
            raise ValueError(f"sentences n must be 1..16, got {n}")
        if not 1 <= min_chars <= 1000:
            raise ValueError(f"sentences min_chars must be 1..1000, got {min_chars}")
        if not 0.0 <= min_length_ratio <= 1.0:
            raise ValueError(
                f"sentences min_length_ratio must be in [0, 1], got {min_length_ratio}"
            )
        self.n = n
        self.min_chars = min_chars
        self.min_length_ratio = min_length_ratio

    def params(self) -> dict[str, Any]:
        # min_length_ratio only changes the match test, but saved state is cheap to refuse.
        return {
            "n": self.n,
            "min_chars": self.min_chars,
            "min_length_ratio": self.min_length_ratio,
            "hash": "xxh3_128",
            "split": "v1",  # the splitter's version: changing it changes signatures
        }

    def longest(self, doc: Document) -> tuple[list[str], int]:
        """The ``n`` longest distinct sentence keys (fewer if the text has fewer long enough)
        and the document's length in word characters."""
        lengths: dict[str, int] = {}
        for sentence in split_sentences(doc.text):
            key = sentence_key(sentence)
            size = len(key) - key.count(" ")
            if size >= self.min_chars:
                lengths[key] = size
        ranked = sorted(lengths, key=lambda k: (-lengths[k], k))
        return ranked[: self.n], len(_NON_WORD.sub("", doc.normalized))

    def signature(self, doc: Document) -> SentencesSignature:
        chosen, total = self.longest(doc)
        if len(chosen) < self.n:
            return SentencesSignature(_NO_HASH, min(total, _U32))
        digest = xxhash.xxh3_128_digest("\n".join(sorted(chosen)).encode("utf-8", "surrogatepass"))
        return SentencesSignature(digest, min(total, _U32))

    def bucket_keys(self, signature: SentencesSignature) -> list[int]:
        if signature.digest == _NO_HASH:
            return []
        return [int.from_bytes(signature.digest[:8], "little")]

    def similarity(self, a: SentencesSignature, b: SentencesSignature) -> float | None:
        if a.digest != b.digest or a.digest == _NO_HASH:
            return None
        shorter, longer = sorted((a.length, b.length))
        ratio = shorter / longer  # both have n sentences of min_chars: longer > 0
        return ratio if ratio >= self.min_length_ratio else None

    def encode(self, signature: SentencesSignature) -> bytes:
        return signature.digest + signature.length.to_bytes(4, "little")

    def decode(self, data: bytes) -> SentencesSignature:
        if len(data) != 20:
            raise ValueError(f"sentences signature must be 20 bytes, got {len(data)}")
        return SentencesSignature(data[:16], int.from_bytes(data[16:], "little"))
