"""I-Match (Chowdhury et al., ACM TOIS 2002) with lexicon randomisation (Kołcz et al., KDD 2004).

A signature is the SHA-1 of a document's unique terms of middling IDF (wordfreq's frequencies,
read here), plus ``lexicons`` more over fixed random thinnings of the lexicon, so one changed
kept word does not hide a copy; documents sharing any one are candidates.
Rationale and parameters: ``docs/design.md#imatch``.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.util
import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from scrapy_neardup.backends.base import ArrayBackend
from scrapy_neardup.text import CJK_CHARS, HAN_CHARS, TOKEN_HASH, Document, fmix64, hash_tokens

DEFAULT_LANGUAGES = ("en", "zh", "de", "fr", "es", "it", "nl", "pt", "sv", "pl", "cs", "ru", "fi")
_WORDLIST = "large"
_EMPTY = np.uint64(0)
# A lexicon word: one token of Han characters, or of two or more letters (not kana or hangul,
# which jieba cuts into syllables: docs/design.md#imatch).
_LEXICON_WORD_RE = re.compile(rf"^(?:[{HAN_CHARS}]+|[^\W\d_{CJK_CHARS}]{{2,}})$", re.MULTILINE)
_SALT = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Lexicon:
    """Token hashes (sorted, unique) of the lexicon's words and their Zipf values x 100."""

    hashes: np.ndarray  # uint64
    zipf: np.ndarray  # uint16, Zipf value in hundredths (wordfreq's centibel buckets)


_lexicon_lock = threading.Lock()


def _wordfreq_dir() -> Path:
    """wordfreq's data folder, found without importing it (its import is slow)."""
    spec = importlib.util.find_spec("wordfreq")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("imatch needs the wordfreq package: pip install wordfreq")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def lexicon(languages: tuple[str, ...], floor: int) -> Lexicon:
    """The lexicon of ``languages`` restricted to Zipf values of at least ``floor``/100 (a
    word rarer than that in every language is out, like an unknown word); built once per
    process and shared."""
    with _lexicon_lock:
        return _cached_lexicon(languages, floor)


def _frequency_buckets(lang: str) -> Iterator[tuple[int, list[str]]]:
    """(Zipf value x 100, words) of a wordfreq list, most frequent first: its "cBpack" file
    (``wordfreq.read_cBpack``), list ``i`` at Zipf ``9 - i / 100``, streamed so that the rare
    tail is never decoded (docs/design.md#imatch)."""
    import msgpack  # wordfreq's own dependency, imported with it on first use

    with gzip.open(_wordfreq_dir() / f"{_WORDLIST}_{lang}.msgpack.gz", "rb") as f:
        unpacker = msgpack.Unpacker(f, raw=False, strict_map_key=False)
        unpacker.read_array_header()
        header = unpacker.unpack()
        if header != {"format": "cB", "version": 1}:
            raise ValueError(f"unknown wordfreq list format for {lang!r}: {header!r}")
        for centibels, bucket in enumerate(unpacker):
            yield 900 - centibels, bucket


def build_lexicon(languages: tuple[str, ...], floor: int) -> Lexicon:
    """The lexicon that :func:`lexicon` shares, built anew."""
    hashes = [np.zeros(0, dtype=np.uint64)]
    zipfs = [np.zeros(0, dtype=np.uint16)]
    for lang in languages:
        for zipf, bucket in _frequency_buckets(lang):
            if zipf < floor:
                break
            text = unicodedata.normalize("NFKC", "\n".join(bucket)).casefold()
            words = _LEXICON_WORD_RE.findall(text)
            if words:
                hashes.append(hash_tokens(words))
                zipfs.append(np.full(len(words), zipf, dtype=np.uint16))
    all_hashes, all_zipf = np.concatenate(hashes), np.concatenate(zipfs)
    order = np.lexsort((-all_zipf.astype(np.int32), all_hashes))  # by hash, highest Zipf first
    unique, first = np.unique(all_hashes[order], return_index=True)
    return Lexicon(unique, all_zipf[order][first])


_cached_lexicon = cache(build_lexicon)


class IMatchBackend(ArrayBackend):
    """SHA-1 of the sorted unique mid-frequency terms, plus ``lexicons`` randomised ones;
    documents match when any one signature is equal."""

    name = "imatch"
    reads_tokens = True  # the token list (jieba for Chinese), see Deduplicator.sign

    def __init__(
        self,
        low: float = 3.0,
        high: float = 4.5,
        lexicons: int = 20,
        keep: float = 0.3,
        min_terms: int = 15,
        min_known: float = 0.5,
        languages: tuple[str, ...] | list[str] | str = DEFAULT_LANGUAGES,
    ) -> None:
        if isinstance(languages, str):
            languages = [s.strip() for s in languages.split(",") if s.strip()]
        languages = tuple(sorted(set(languages)))
        self.require(bool(languages), "languages must name at least one language")
        files = _wordfreq_dir().glob(f"{_WORDLIST}_*.msgpack.gz")  # its "large" lists
        known = sorted(p.name.removeprefix(f"{_WORDLIST}_").split(".")[0] for p in files)
        missing = sorted(set(languages) - set(known))
        self.require(
            not missing, f"languages {missing} have no wordfreq list; choose among {known}"
        )
        self.require(1.0 <= low <= high <= 9.0, f"needs 1 <= low <= high <= 9, got {low}, {high}")
        self.require(0 <= lexicons <= 64, f"lexicons must be 0..64, got {lexicons}")
        self.require(0.0 < keep < 1.0, f"keep must be in (0, 1), got {keep}")
        self.require(1 <= min_terms <= 10_000, f"min_terms must be 1..10000, got {min_terms}")
        self.require(0.0 <= min_known <= 1.0, f"min_known must be in [0, 1], got {min_known}")
        self.low = float(low)
        self.high = float(high)
        self.lexicons = lexicons
        self.keep = float(keep)
        self.min_terms = min_terms
        self.min_known = float(min_known)
        self.languages = languages
        self._low = round(self.low * 100)
        self._high = round(self.high * 100)
        self._limit = np.uint64(min(int(self.keep * 2**64), 2**64 - 1))
        with np.errstate(over="ignore"):
            self._salts = fmix64(np.arange(1, lexicons + 1, dtype=np.uint64) * _SALT)[:, None]
        self.size = 1 + lexicons

    def params(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "lexicons": self.lexicons,
            "keep": self.keep,
            "min_terms": self.min_terms,
            "min_known": self.min_known,
            "languages": list(self.languages),
            "lexicon": f"wordfreq-{importlib.metadata.version('wordfreq')}-{_WORDLIST}",
            "token_hash": TOKEN_HASH,
            "hash": "sha1-64",
        }

    def terms(self, doc: Document) -> np.ndarray:
        """Sorted unique hashes of the document's tokens whose Zipf value is in the band;
        none when less than ``min_known`` of its tokens are lexicon words (another language,
        a table of figures: its few known words are the template's)."""
        table = lexicon(self.languages, self._low)
        unique, counts = np.unique(doc.token_hashes, return_counts=True)  # = hash_tokens(tokens)
        if len(unique) == 0 or len(table.hashes) == 0:
            return unique[:0]
        at = np.minimum(np.searchsorted(table.hashes, unique), len(table.hashes) - 1)
        known = table.hashes[at] == unique
        if counts[known].sum() < self.min_known * counts.sum():
            return unique[:0]
        return unique[known & (table.zipf[at] <= self._high)]

    def _digest(self, terms: np.ndarray) -> np.uint64:
        if len(terms) < self.min_terms:
            return _EMPTY
        digest = hashlib.sha1(terms.astype("<u8", copy=False).tobytes()).digest()
        return np.uint64(int.from_bytes(digest[:8], "little") or 1)  # 0 marks an empty slot

    def signature(self, doc: Document) -> np.ndarray:
        terms = self.terms(doc)
        # Lexicon i holds a term when a hash of (term, i) falls below ``keep`` (Kołcz et al.)
        with np.errstate(over="ignore"):
            inside = fmix64(terms[None, :] ^ self._salts) < self._limit
        digests = [self._digest(terms), *(self._digest(terms[row]) for row in inside)]
        return np.array(digests, dtype=np.uint64)

    def bucket_keys(self, signature: np.ndarray) -> list[int]:
        # the slot number is the seed: lexicon i only meets lexicon i
        return [
            xxhash.xxh3_64_intdigest(signature[i : i + 1].tobytes(), seed=i)
            for i in range(len(signature))
            if signature[i] != _EMPTY
        ]

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float | None:
        """Share of the signatures, among those non-empty in either, that are equal: 1.0 for
        equal term sets however few lexicons reach ``min_terms``; a lexicon survives ``k``
        terms in one set only with probability ``(1 - keep)**k``."""
        filled = (a != _EMPTY) | (b != _EMPTY)
        equal = int(np.count_nonzero((a == b) & filled))
        return equal / int(np.count_nonzero(filled)) if equal else None
