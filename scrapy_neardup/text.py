"""Text features: normalisation, tokens (jieba for CJK), shingles and weights.

Pure functions over strings; nothing here knows Scrapy or storage. Features are 64-bit
hashes (numpy ``uint64``): ``docs/design.md#layers`` says why.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any

import numpy as np

# Han characters, and with kana and hangul the scripts written without spaces between words
# (character-class ranges, for the regular expressions of other modules too).
HAN_CHARS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHARS = "\u3040-\u30ff" + HAN_CHARS + "\uac00-\ud7af"
_TOKEN_RE = re.compile(rf"[{CJK_CHARS}]+|[^\W{CJK_CHARS}]+")
_CJK_RE = re.compile(rf"[{CJK_CHARS}]")
_WORD_RE = re.compile(r"\w+")
_WORD_CHARS_RE = re.compile(r"[\W_]+")

_jieba_lock = threading.Lock()


def normalize(text: str) -> str:
    """NFKC, case folding and collapsed whitespace: what two copies of one text share."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split())


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the non-space characters of ``text``."""
    letters = len(text) - text.count(" ")
    return len(_CJK_RE.findall(text)) / letters if letters else 0.0


@cache
def _segmenter() -> Any:
    """jieba, imported and initialised on first use. Its logger is quiet while it loads its
    dictionary (the lines every worker would print), and as it was afterwards."""
    import jieba

    with _jieba_lock:
        level = jieba.default_logger.level
        jieba.setLogLevel(logging.WARNING)
        try:
            jieba.initialize()
        finally:
            jieba.setLogLevel(level)
    return jieba


def tokenize(text: str) -> list[str]:
    """Words of a normalised text; runs of CJK characters are segmented with jieba."""
    if text.isascii() or not _CJK_RE.search(text):
        return _WORD_RE.findall(text)
    tokens: list[str] = []
    for run in _TOKEN_RE.findall(text):
        if _CJK_RE.match(run):
            tokens.extend(w for w in _segmenter().lcut(run, HMM=True) if w.strip())
        else:
            tokens.append(run)
    return tokens


# Token hashes are computed for all tokens at once in numpy, not one Python call per token
# (this project's own code, for speed: see bench/RESULTS.md). A token's
# hash is a polynomial over its code points, sum(cp[i] * P**i) modulo 2**64, with its length
# mixed in and MurmurHash3's finaliser over the result.
TOKEN_HASH = "poly64-fmix"  # in the params of the methods that use it: saved state says it
_POLY = np.uint64(0x100000001B3)  # FNV's 64-bit prime (odd, so P**i never vanishes)
_LENGTH_MIX = np.uint64(0x9E3779B97F4A7C15)
_powers: np.ndarray = np.ones(1, dtype=np.uint64)


def _powers_upto(n: int) -> np.ndarray:
    """``P**i`` modulo 2**64 for ``i < n`` (at least); grown by doubling and kept."""
    global _powers
    powers = _powers  # one read: another thread may replace it meanwhile
    if len(powers) < n:
        steps = np.full(max(n, 2 * len(powers), 256), _POLY, dtype=np.uint64)
        steps[0] = 1
        powers = _powers = np.multiply.accumulate(steps)  # wraps modulo 2**64
    return powers


def _run_hashes(
    code_points: np.ndarray, lengths: np.ndarray, starts: np.ndarray | None = None
) -> np.ndarray:
    """Hashes of consecutive runs of ``code_points`` with the given (positive) lengths."""
    if starts is None:
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
    offsets = np.arange(len(code_points), dtype=np.int64) - np.repeat(starts, lengths)
    with np.errstate(over="ignore"):
        terms = code_points.astype(np.uint64) * _powers_upto(int(lengths.max()))[offsets]
        sums = np.add.reduceat(terms, starts)
        return fmix64(sums ^ (lengths.astype(np.uint64) * _LENGTH_MIX))


def _code_points(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")


def hash_tokens(tokens: Sequence[str]) -> np.ndarray:
    """A 64-bit hash of each token (see :data:`TOKEN_HASH`), as a ``uint64`` array."""
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    out = np.zeros(len(tokens), dtype=np.uint64)
    nonempty = lengths > 0
    if nonempty.any():
        out[nonempty] = _run_hashes(_code_points("".join(tokens)), lengths[nonempty])
    if not nonempty.all():
        out[~nonempty] = fmix64(np.zeros(1, dtype=np.uint64))[0]
    return out


_WORD, _CJK_WORD = 1, 2  # and 0 for the rest


@cache
def _char_classes() -> np.ndarray:
    """For each character of the Basic Multilingual Plane: 1 where ``\\w`` matches it
    (``str.isalnum()`` or ``_``, as in CPython's ``re``), 2 for the CJK characters that
    :func:`tokenize` gives to jieba, else 0."""
    bmp = "".join(map(chr, range(0x10000)))
    table = np.fromiter((c.isalnum() or c == "_" for c in bmp), dtype=np.uint8, count=0x10000)
    cjk = np.frombuffer("".join(_CJK_RE.findall(bmp)).encode("utf-32-le"), dtype="<u4")
    table[cjk] = _CJK_WORD
    return table


def _word_runs(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The code points of ``text``, where its word characters are and where each word
    begins (the tokens of :func:`tokenize`); None for text with CJK characters (which need
    jieba) or characters beyond the BMP."""
    code_points = _code_points(text)
    if len(code_points) and code_points.max() >= 0x10000:
        return None
    classes = _char_classes()[code_points]
    if not text.isascii() and (classes == _CJK_WORD).any():
        return None
    is_word = classes == _WORD
    begins = is_word.copy()
    begins[1:] &= ~is_word[:-1]
    return code_points, is_word, begins


def word_hashes(text: str) -> np.ndarray | None:
    """``hash_tokens(tokenize(text))`` without building the token list, for text without CJK
    characters (which need jieba) or characters beyond the BMP; None for those."""
    runs = _word_runs(text)
    if runs is None:
        return None
    code_points, is_word, begins = runs
    words = code_points[is_word]
    if len(words) == 0:
        return np.zeros(0, dtype=np.uint64)
    starts = np.flatnonzero(begins[is_word])
    lengths = np.empty_like(starts)
    lengths[:-1] = starts[1:] - starts[:-1]
    lengths[-1] = len(words) - starts[-1]
    return _run_hashes(words, lengths, starts)


def token_starts(text: str) -> np.ndarray | None:
    """Code-point offsets where the tokens of :func:`word_hashes` begin (the same tokens, in
    the same order), or None where that function returns None."""
    runs = _word_runs(text)
    return None if runs is None else np.flatnonzero(runs[2])


_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_ROLL = np.uint64(0x9E3779B97F4A7C15)


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: spreads combined hashes over all bits."""
    h = h ^ (h >> np.uint64(33))
    h = h * _MIX1
    h = h ^ (h >> np.uint64(33))
    h = h * _MIX2
    return h ^ (h >> np.uint64(33))


def shingle_hashes(hashes: np.ndarray, n: int) -> np.ndarray:
    """Hashes of the ``n``-grams of a sequence of hashes (one shingle of all if shorter)."""
    if n < 1:
        raise ValueError(f"shingle size must be >= 1, got {n}")
    if n == 1 or len(hashes) == 0:
        return hashes
    if len(hashes) < n:
        n = len(hashes)
    count = len(hashes) - n + 1
    with np.errstate(over="ignore"):
        combined = hashes[:count].copy()
        for i in range(1, n):
            combined = combined * _ROLL + hashes[i : i + count]
        return fmix64(combined)


def char_sequence(text: str) -> list[str]:
    """The characters of a normalised text without spaces and punctuation (for char shingles)."""
    return list(_WORD_CHARS_RE.sub("", text))


@dataclass(frozen=True)
class ShingleSpec:
    """What a feature is: ``word`` or ``char`` n-grams of size ``size``."""

    unit: str = "word"
    size: int = 3

    def __post_init__(self) -> None:
        if self.unit not in ("word", "char"):
            raise ValueError(f"shingle unit must be 'word' or 'char', got {self.unit!r}")
        if not 1 <= self.size <= 16:
            raise ValueError(f"shingle size must be 1..16, got {self.size}")

    @classmethod
    def parse(cls, value: str | ShingleSpec) -> ShingleSpec:
        """``"word:3"`` or ``"char:4"``."""
        if isinstance(value, ShingleSpec):
            return value
        unit, _, size = str(value).partition(":")
        try:
            return cls(unit.strip(), int(size or 3))
        except ValueError as exc:
            raise ValueError(f"shingles must look like 'word:3' or 'char:4': {exc}") from None

    def __str__(self) -> str:
        return f"{self.unit}:{self.size}"


@dataclass
class Document:
    """One text and the features derived from it, each computed once and only when asked;
    ``title``: the text's first line is this title (a page's, as extraction puts it);
    ``article_end``: the readers' comments begin there (None: the text is all article)."""

    text: str
    title: str = ""
    article_end: int | None = None
    _shingles: dict[ShingleSpec, np.ndarray] = field(default_factory=dict, repr=False)

    @cached_property
    def article(self) -> Document:
        """The text without its readers' comments (itself where it has none)."""
        if self.article_end is None or self.article_end >= len(self.text):
            return self
        return Document(self.text[: self.article_end], self.title)

    @cached_property
    def normalized(self) -> str:
        return normalize(self.text)

    @cached_property
    def tokens(self) -> list[str]:
        return tokenize(self.normalized)

    @cached_property
    def token_hashes(self) -> np.ndarray:
        if "tokens" not in self.__dict__:
            found = word_hashes(self.normalized)
            if found is not None:
                return found
        return hash_tokens(self.tokens)

    @property
    def token_count(self) -> int:
        """``len(self.tokens)``, without tokenising when the hashes are enough."""
        if "tokens" in self.__dict__:
            return len(self.tokens)
        return len(self.token_hashes)

    @cached_property
    def is_cjk(self) -> bool:
        return cjk_ratio(self.normalized) > 0.3

    def shingles(self, spec: ShingleSpec) -> np.ndarray:
        """Hashed shingles (with repeats, in text order) for ``spec``."""
        found = self._shingles.get(spec)
        if found is None:
            if spec.unit == "word":
                base = self.token_hashes
            else:
                base = hash_tokens(char_sequence(self.normalized))
            found = self._shingles[spec] = shingle_hashes(base, spec.size)
        return found

    def shingle_strings(self, spec: ShingleSpec) -> list[str]:
        """Shingles as strings, for libraries that hash features themselves."""
        units = self.tokens if spec.unit == "word" else char_sequence(self.normalized)
        sep = " " if spec.unit == "word" else ""
        n = min(spec.size, len(units))
        if n <= 1:
            return list(units)
        return [sep.join(units[i : i + n]) for i in range(len(units) - n + 1)]


def term_weights(features: Iterable[str]) -> dict[str, float]:
    """Counts of each feature."""
    return dict(Counter(features))
