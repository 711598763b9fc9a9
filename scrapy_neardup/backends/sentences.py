"""Longest-sentences signature: the hash of a document's ``n`` longest sentences.

Two copies of an article that keep its ``n`` longest distinct sentences (compared by their
words, whatever punctuation, spacing, template and order around them) share a signature; a
document with fewer than ``n`` sentences of ``min_chars`` has none and never matches.
Rationale and parameters: ``docs/design.md#sentences``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import xxhash

from scrapy_neardup.backends.base import Backend
from scrapy_neardup.text import CJK_CHARS, Document, normalize

_CLOSERS = "\"'”’»)\\]）」』"
# Lines, and the separators of menus and breadcrumbs ("Home | World", "首页 > 新闻").
_PIECES = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029|｜¦•›»>]+")
# A sentence's end, with any closing quotes or brackets: Chinese enders and the ellipsis;
# ASCII ones right after a CJK character; else ASCII . ! ? before white space or the end of
# the piece ("3.5" is not an end), checked for abbreviations when it is a ".".
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
    word = (before.rsplit(None, 1) or [""])[-1].lstrip("\"'“‘«([")
    return bool(_DOTTED.fullmatch(word)) or word.casefold() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, raw: pieces of a line closed by an ender (what follows a
    line's last ender is no sentence: docs/design.md#sentences)."""
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


class SentencesBackend(Backend):
    """Hash of the ``n`` longest sentences plus a length guard."""

    name = "sentences"

    def __init__(self, n: int = 3, min_chars: int = 10, min_length_ratio: float = 0.8) -> None:
        self.require(1 <= n <= 16, f"n must be 1..16, got {n}")
        self.require(1 <= min_chars <= 1000, f"min_chars must be 1..1000, got {min_chars}")
        ratio = min_length_ratio
        self.require(0.0 <= ratio <= 1.0, f"min_length_ratio must be in [0, 1], got {ratio}")
        self.n = n
        self.min_chars = min_chars
        self.min_length_ratio = min_length_ratio

    def params(self) -> dict[str, Any]:
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
        text = "\n".join(sorted(chosen)).encode("utf-8", "surrogatepass")
        digest = xxhash.xxh3_128_digest(text) if len(chosen) == self.n else _NO_HASH
        return SentencesSignature(digest, min(total, _U32))

    def bucket_keys(self, signature: SentencesSignature) -> list[int]:
        digest = signature.digest
        return [] if digest == _NO_HASH else [int.from_bytes(digest[:8], "little")]

    def similarity(self, a: SentencesSignature, b: SentencesSignature) -> float | None:
        if a.digest != b.digest or a.digest == _NO_HASH:
            return None
        shorter, longer = sorted((a.length, b.length))
        ratio = shorter / longer  # both have n sentences of min_chars: longer > 0
        return ratio if ratio >= self.min_length_ratio else None

    def encode(self, signature: SentencesSignature) -> bytes:
        return signature.digest + signature.length.to_bytes(4, "little")

    def decode(self, data: bytes) -> SentencesSignature:
        data = self.sized(data, 20)
        return SentencesSignature(data[:16], int.from_bytes(data[16:], "little"))
