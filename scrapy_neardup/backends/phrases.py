"""A document's phrase filter and what builds it: a Bloom filter of its word 3-shingles and
words (:class:`Phrases`, stored beside a signature), with what is read of a new document
(its lines, identity words, compound names); the "similar" rule's shingle and spot filters
and their measures (:func:`jaccard`, :func:`spot_similarity`). Pure numpy, no Scrapy.
Rationale: ``docs/design.md#phrase-filter``, ``#similar-decision``.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scrapy_neardup.backends.spotsigs import SpotSigsBackend
from scrapy_neardup.text import (
    CJK_CHARS,
    Document,
    ShingleSpec,
    fmix64,
    hash_tokens,
    normalize,
    token_starts,
)

#: A first line of at most this many words is a heading: its words must all be kept.
HEADING_WORDS = 20
BITS_PER_SHINGLE = 10
MAX_FILTER_BYTES = 131072  # 10 bits a shingle up to ~100k distinct 3-shingles
MAX_FALSE_POSITIVES = 0.05
#: The shingles of the phrase filter, and its header.
PHRASE = ShingleSpec("word", 3)
#: Lines of fewer words are a list's or a heading's: each of their words is asked of a kept
#: page (``docs/design.md#lossless``).
SHORT_LINE = 6
HEADER = struct.Struct("<IIIB")  # distinct shingles, distinct words, filter bits, hash functions
_WORD_SALT = (np.uint64(0x776F726473616C31), np.uint64(0x776F726473616C32))
_LOW32 = np.uint64(0xFFFFFFFF)
# Words that name what a text is about (:func:`_identity`): in the normalised text, a word with
# a digit or an underscore; in the text as written, a camelCase word and the parts of a dotted,
# ``::`` or ``->`` name.
_NUMBER_OR_NAME = re.compile(rf"(?<![^\W{CJK_CHARS}])[^\W{CJK_CHARS}]*[\d_][^\W{CJK_CHARS}]*")
_CAMEL_CASE = re.compile(r"\b[^\W\d_]*[a-z][A-Z]\w*")
_DOTTED = re.compile(r"(?<!\w)\w+(?:(?:\.|::|->)\w+)+")
_NAME_SEPARATOR = re.compile(r"\.|::|->")
# A name of several words, which must be in a kept page whole: a number with its separators
# ("3.25.1", "1,838"), a dotted, "::" or "->" name ("os.path", "std::map"), whose words are
# not words of the page, or a hyphenated one ("join-clause", "S-1"), whose words are too.
_COMPOUND = re.compile(
    rf"(?<!\d)\d+(?:[.,]\d+)+|(?<![^\W\d{CJK_CHARS}])[^\W\d{CJK_CHARS}]\w*(?:(?:\.|::|->)\w+)+"
)
_HYPHENATED = re.compile(rf"(?<![\w-])[^\W{CJK_CHARS}]+(?:-[^\W{CJK_CHARS}]+)+(?![\w-])")
_PART = re.compile(r"\w+")


@dataclass(frozen=True, eq=False)
class Phrases:
    """A Bloom filter of a document's distinct word 3-shingles and, under two salts each, its
    distinct words (what :func:`losses` asks of a kept document). Where the document was just
    signed (never stored): ``sequence``, its 3-shingles in text order; ``tokens``, its word
    hashes in order; ``identity``, which of its words are title words, identifiers or
    numbers; ``line_words``, the word count of each of its lines; ``names``, ``name_at``
    and ``parts``, its names of several words (:func:`compounds`), where each begins and
    which words are in one. The filter holds a document's names whole, and its words outside
    them."""

    bits: np.ndarray  # uint8, little-endian bit order
    size: int  # bits in the filter
    hashes: int  # hash functions
    count: int  # distinct shingles
    words: int = 0  # distinct words (each in the filter twice)
    sequence: np.ndarray | None = field(default=None, compare=False)
    tokens: np.ndarray | None = field(default=None, compare=False)
    identity: np.ndarray | None = field(default=None, compare=False)
    line_words: np.ndarray | None = field(default=None, compare=False)
    names: np.ndarray | None = field(default=None, compare=False)  # compound names' hashes
    name_at: np.ndarray | None = field(default=None, compare=False)  # each one's first word
    parts: np.ndarray | None = field(default=None, compare=False)  # words inside a name

    def encode(self) -> bytes:
        return HEADER.pack(self.count, self.words, self.size, self.hashes) + self.bits.tobytes()

    @classmethod
    def decode(cls, data: bytes | memoryview) -> Phrases:
        if len(data) < HEADER.size:
            raise ValueError(f"phrase filter needs {HEADER.size} bytes, got {len(data)}")
        count, words, size, hashes = HEADER.unpack_from(data)
        if len(data) != HEADER.size + (size + 7) // 8 or not 1 <= hashes <= 16 or size < 8:
            raise ValueError("corrupt phrase filter: lengths do not fit")
        bits = np.frombuffer(data, dtype=np.uint8, offset=HEADER.size).copy()
        return cls(bits, size, hashes, count, words)

    @property
    def false_positive_rate(self) -> float:
        entries = self.count + 2 * self.words
        if entries == 0:
            return 0.0
        return (1.0 - math.exp(-self.hashes * entries / self.size)) ** self.hashes

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """For each 64-bit hash, whether it is (probably) in the filter."""
        flags = np.unpackbits(self.bits, bitorder="little")  # a byte a bit: one lookup each
        return flags[_positions(hashes, self.size, self.hashes)].all(axis=1)

    def has_words(self, tokens: np.ndarray) -> np.ndarray:
        """For each word hash, whether the document has that word: both of its salted
        entries are in the filter (a false positive then needs two, about 1 in 15,000)."""
        first, second = _word_keys(tokens)
        return self.contains(first) & self.contains(second)


def _positions(hashes: np.ndarray, size: int, k: int) -> np.ndarray:
    """Kirsch-Mitzenmacher double hashing: bit ``h1 + i * h2`` for ``i < k`` (32-bit halves:
    under 2**37, so exact, and faster, in int64)."""
    h1 = (hashes & _LOW32).astype(np.int64)
    h2 = ((hashes >> np.uint64(32)) | np.uint64(1)).astype(np.int64)
    return (h1[:, None] + np.arange(k)[None, :] * h2[:, None]) % size


def _word_keys(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two filter entries of each word hash (salted apart from the shingles')."""
    return fmix64(tokens ^ _WORD_SALT[0]), fmix64(tokens ^ _WORD_SALT[1])


#: A document's lines: the word count and the text, as written, of each line with words.
Lines = tuple[np.ndarray, list[str]]


def lines_of(doc: Document) -> Lines | None:
    """The word count and the text, as written, of each line with words; None where the
    counts do not add up to the document's words (then its lines cannot be told apart).

    The lines are normalised one by one and joined by newlines, which tokenise as the spaces
    of ``doc.normalized`` do, so each token's line comes from its offset, without tokenising
    again (:func:`_token_offsets`)."""
    pairs = [(line, normalize(line)) for line in doc.text.splitlines()]
    written = [line for line, normal in pairs if normal]
    lines = [normal for _, normal in pairs if normal]
    if not lines:
        return None
    joined = "\n".join(lines)
    breaks = np.cumsum([len(line) + 1 for line in lines])  # offset after each line's newline
    starts = _token_offsets(doc, joined)
    if len(starts) != doc.token_count or (len(starts) and starts.min() < 0):
        return None
    words = np.bincount(np.searchsorted(breaks, starts, side="right"), minlength=len(lines))
    keep = words > 0
    return words[keep].astype(np.int64), [w for w, k in zip(written, keep, strict=True) if k]


def _identity(doc: Document, line_words: np.ndarray | None) -> np.ndarray:
    """Which words of ``doc`` name what it is about: numbers and identifiers (a word with a
    digit or an underscore, a camelCase word, a part of a dotted or ``::`` name) and the words
    of its title (its first line, of at most :data:`HEADING_WORDS` words, where it has one:
    :func:`titled`)."""
    names = set(_NUMBER_OR_NAME.findall(doc.normalized))
    names.update(normalize(word) for word in _CAMEL_CASE.findall(doc.text))
    for dotted in _DOTTED.findall(doc.text):
        names.update(normalize(part) for part in _NAME_SEPARATOR.split(dotted) if part)
    tokens = doc.token_hashes
    mask: np.ndarray = np.zeros(len(tokens), dtype=bool)
    if names:
        mask = np.isin(tokens, hash_tokens(sorted(names)))
    first = doc.text.lstrip().split("\n", 1)[0]
    if (
        line_words is not None
        and len(line_words)
        and line_words[0] <= HEADING_WORDS
        and doc.title
        and normalize(first) == normalize(doc.title)
    ):
        mask[: line_words[0]] = True
    return mask


def compounds(doc: Document) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The hashes of ``doc``'s names of several words ("3.25.1", "os.path", "join-clause"),
    which a kept page must have whole (it may have "3.25" and a "1" elsewhere), the word each
    starts at, which of its words are in a number or a dotted name (a word is a name's part,
    not a name, there; a hyphenated name's words are words too), and which names are
    hyphenated (asked whole in a short line only: ``docs/design.md#lossless``)."""
    found = compound_matches(doc)
    inside = np.zeros(doc.token_count, dtype=bool)
    hyphenated = np.array([m.re is _HYPHENATED for m, _ in found], dtype=bool)
    if not found:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), inside, hyphenated
    at = np.array([word for _, word in found], dtype=np.int64)
    for match, start in found:
        if match.re is _COMPOUND:
            inside[start : start + len(_PART.findall(match.group()))] = True
    return hash_tokens([m.group() for m, _ in found]), at, inside, hyphenated


def compound_matches(doc: Document) -> list[tuple[re.Match[str], int]]:
    """Each compound name of ``doc`` (in its normalised text) with the word it starts at."""
    found = [*_COMPOUND.finditer(doc.normalized), *_HYPHENATED.finditer(doc.normalized)]
    if not found:
        return []
    offsets = np.maximum(_token_offsets(doc, doc.normalized), 0)
    words = np.searchsorted(offsets, [m.start() for m in found])
    return list(zip(found, words.tolist(), strict=True))


def _token_offsets(doc: Document, text: str) -> np.ndarray:
    """Where each token of ``doc`` starts in ``text`` (its normalised text, or its lines
    normalised one by one): numpy offsets for text without CJK, else a walk along
    ``doc.tokens`` (jieba's), -1 for a token not found."""
    starts = token_starts(text)
    if starts is not None:
        return starts
    offsets, at = [], 0
    for token in doc.tokens:
        found = text.find(token, at)
        at = found + len(token) if found >= 0 else at
        offsets.append(found)
    return np.array(offsets, dtype=np.int64)


def titled(text: str) -> Document:
    """A text as extraction makes a page's (its title, a blank line, its main text), with
    that first line as its title: how the audit page reads a kept text, whose title was not
    kept apart. A first line of at most :data:`HEADING_WORDS` words followed by a blank
    line."""
    first, blank, _ = text.lstrip().partition("\n\n")
    heading = bool(blank) and "\n" not in first and len(first.split()) <= HEADING_WORDS
    return Document(text, title=first if heading else "")


def _filter(shingles: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(bits, size, hashes) of a Bloom filter of distinct shingle and word (and compound
    name) hashes."""
    entries = np.concatenate((shingles, *_word_keys(words)))
    size = max(64, min(BITS_PER_SHINGLE * len(entries), 8 * MAX_FILTER_BYTES))
    size = (size + 7) // 8 * 8
    hashes = max(1, min(16, round(size / max(1, len(entries)) * math.log(2))))
    flags = np.zeros(size, dtype=bool)
    flags[_positions(entries, size, hashes).ravel()] = True
    return np.packbits(flags, bitorder="little"), size, hashes


def shingles_of(doc: Document, spec: ShingleSpec) -> Phrases:
    """A Bloom filter of ``doc``'s distinct ``spec`` shingles (with them, sorted, as its
    ``sequence``): what :func:`jaccard` compares for the "similar" decision."""
    return _set_filter(np.unique(doc.shingles(spec)))


def _set_filter(distinct: np.ndarray) -> Phrases:
    """A Bloom filter of sorted distinct hashes, with them as its ``sequence``."""
    return Phrases(*_filter(distinct, np.zeros(0, dtype=np.uint64)), len(distinct), 0, distinct)


def jaccard(new: Phrases, kept: Phrases) -> float | None:
    """The Jaccard similarity of the two documents' shingle sets: ``new``'s distinct shingles
    (all of them, from its sequence) looked up in ``kept``'s filter, the filter's false
    positives subtracted as :func:`coverage` does; None when ``kept``'s filter is too full
    to say. Boilerplate is not left out: this is the literature's measure of the pair."""
    found = _shared(new, kept)
    if found is None:
        return None
    common, mine, theirs = found
    return common / (mine + theirs - common) if mine and theirs else 0.0


def _shared(new: Phrases, kept: Phrases) -> tuple[float, int, int] | None:
    """(shared, ``new``'s, ``kept``'s) distinct members of two filtered sets: ``new``'s (all
    of them, from its sequence) looked up in ``kept``'s filter, its false positives
    subtracted; None when that filter is too full to say."""
    rate = kept.false_positive_rate
    if new.sequence is None or rate > MAX_FALSE_POSITIVES:
        return None
    distinct = new.sequence if new.count == len(new.sequence) else np.unique(new.sequence)
    if len(distinct) == 0 or kept.count == 0:
        return 0.0, len(distinct), kept.count
    hit = int(np.count_nonzero(kept.contains(distinct)))
    common = (hit - rate * len(distinct)) / (1.0 - rate)
    common = min(max(0.0, common), float(len(distinct)), float(kept.count))
    return common, len(distinct), kept.count


#: The spot rule of the "similar" decision (docs/design.md#similar-decision): SpotSigs' spot
#: signatures with a chain of one (an antecedent of the page's language and the next word
#: that is not a stopword), which come from running text, hardly ever from a template's menus
#: and link lists. Two pages of at least SPOT_MIN spots are similar when their spot sets'
#: Jaccard reaches SPOT_SIMILARITY, or when the smaller set, of at least CUT_SPOTS spots, is
#: CUT_OVERLAP in the larger: an outlet that ran a cut of the story.
SPOT_CHAIN = 1
SPOT_SIMILARITY = 0.25
CUT_OVERLAP = 0.7
SPOT_MIN = 30
CUT_SPOTS = 50
_SPOTS = SpotSigsBackend(chain=SPOT_CHAIN)


def spots_of(doc: Document) -> Phrases:
    """A Bloom filter of ``doc``'s spot signatures (chain :data:`SPOT_CHAIN`), with them,
    sorted, as its ``sequence``: what :func:`spot_similarity` compares."""
    return _set_filter(_SPOTS.signature(doc))


def spot_similarity(new: Phrases, kept: Phrases) -> tuple[bool, float] | None:
    """Whether the spot rule holds for a pair, with how close the pair is: the share of the
    smaller spot set in the larger where that set is long enough to be a cut of the story
    (:data:`CUT_SPOTS`), else their Jaccard. None when it cannot say: a filter too full, or
    a page with fewer than :data:`SPOT_MIN` spots (too little running text)."""
    found = _shared(new, kept)
    if found is None:
        return None
    common, mine, theirs = found
    smaller = min(mine, theirs)
    if smaller < SPOT_MIN:
        return None
    jaccard = common / (mine + theirs - common)
    if smaller < CUT_SPOTS:
        return jaccard >= SPOT_SIMILARITY - 1e-9, jaccard
    cut = common / smaller
    return jaccard >= SPOT_SIMILARITY - 1e-9 or cut >= CUT_OVERLAP - 1e-9, cut


def spot_params() -> dict[str, Any]:
    """What the spot rule's filters and decisions depend on (saved with a state)."""
    return {
        "chain": SPOT_CHAIN,
        "jaccard": SPOT_SIMILARITY,
        "cut": CUT_OVERLAP,
        "min": SPOT_MIN,
        "cut_min": CUT_SPOTS,
        "filter": f"bloom{BITS_PER_SHINGLE}",
    }


def phrases_of(doc: Document, lines: Lines | None = None) -> Phrases:
    """``doc``'s phrase filter, with what :func:`losses` reads of a new document; ``lines``:
    :func:`lines_of` ``doc``, where the caller has read them already."""
    sequence = doc.shingles(PHRASE)
    tokens = doc.token_hashes
    names, name_at, inside, hyphenated = compounds(doc)
    distinct = np.unique(sequence)
    # A word that is a part of a name is not the word: "1.23" holds no "1" ("S-1" would).
    alone = tokens if len(inside) != len(tokens) else tokens[~inside]
    words = np.unique(np.concatenate((alone, names)))
    bits, size, hashes = _filter(distinct, words)
    if lines is None:
        lines = lines_of(doc)
    line_words = None if lines is None else lines[0]
    identity = _identity(doc, line_words)
    if len(inside) == len(identity):
        identity &= ~inside  # its names are asked of a kept page whole
    if line_words is not None and hyphenated.any():
        # a hyphenated name in a line of prose is words, which the line's 3-shingles cover
        line = np.searchsorted(np.cumsum(line_words), name_at, side="right")
        asked = ~hyphenated | (line_words[np.minimum(line, len(line_words) - 1)] < SHORT_LINE)
        names, name_at = names[asked], name_at[asked]
    return Phrases(
        bits, size, hashes, len(distinct), len(words), sequence, tokens, identity, line_words,
        names, name_at, inside,
    )  # fmt: skip
