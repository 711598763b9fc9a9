"""Excerpt keys: buckets that propose a kept page for any long enough run of its words.

By winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003) over word shingles, an exact
excerpt of at least ``WINDOW + SHINGLE - 1`` words always shares a key with its source,
whatever the length ratio, so containment can verify pairs that no similarity band proposes.
Keys only propose; they never decide. Rationale: ``docs/design.md#excerpt-keys``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scrapy_neardup.backends.base import splitmix64, unpack

if TYPE_CHECKING:
    from scrapy_neardup.backends.containment import Signature
    from scrapy_neardup.backends.phrases import Phrases

SHINGLE = 5
WINDOW = 40
FULL = 8
MIN_WORDS = 50
MIN_LINE = 20
_TAG = np.uint64(0x6578636572707473)  # "excerpts"
_MIX = np.uint64(0x9E3779B97F4A7C15)
_NONE = np.uint64(0xFFFFFFFFFFFFFFFF)  # no fingerprint (a shingle with a word in a short line)


def winnow(sequence: np.ndarray, lines: np.ndarray | None = None) -> np.ndarray:
    """The sorted distinct fingerprints of a word 3-shingle hash sequence; none for a text
    under ``MIN_WORDS`` words. Given the words of each line (``lines``), a shingle with a word
    in a line of fewer than ``MIN_LINE`` words is never one, but in the first and last line."""
    n = len(sequence) - (SHINGLE - 3)
    if n + SHINGLE - 1 < MIN_WORDS:
        return np.empty(0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        left = sequence[:n].astype(np.uint64)
        right = sequence[SHINGLE - 3 :].astype(np.uint64)
        shingles = splitmix64(left * _MIX + ((right << np.uint64(17)) | (right >> np.uint64(47))))
    if lines is not None and len(lines) > 2 and int(lines.sum()) == n + SHINGLE - 1:
        short = lines < MIN_LINE
        short[0] = short[-1] = False
        in_short = np.convolve(np.repeat(short, lines), np.ones(SHINGLE, dtype=np.int64), "valid")
        shingles[in_short > 0] = _NONE  # a shingle with a word in a short line
    mins = _window_min(shingles, min(WINDOW, n))
    mins = mins[np.r_[True, mins[1:] != mins[:-1]]]  # neighbouring windows share their minimum
    return np.unique(mins[mins != _NONE])


#: A signature's excerpt fingerprints where it has none (a state saved without them).
NO_FINGERPRINTS = np.empty(0, dtype=np.uint64)


def fingerprints_of(phrases: Phrases) -> np.ndarray:
    """The excerpt fingerprints of a phrase filter made by signing (:func:`winnow` of its
    sequence and lines); none for a stored one, which has no sequence."""
    if phrases.sequence is None:
        return NO_FINGERPRINTS
    return winnow(phrases.sequence, phrases.line_words)


def _window_min(x: np.ndarray, w: int) -> np.ndarray:
    """The minimum of every ``w`` consecutive values in O(n) (van Herk / Gil-Werman: within
    blocks of ``w``, the minimum of the suffix where a window starts and of the prefix where
    it ends)."""
    n = len(x)
    padded = np.full(-(-n // w) * w, _NONE, dtype=np.uint64)
    padded[:n] = x
    blocks = padded.reshape(-1, w)
    prefix = np.minimum.accumulate(blocks, axis=1).ravel()
    suffix = np.minimum.accumulate(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    return np.minimum(suffix[: n - w + 1], prefix[w - 1 : n])


class Excerpts:
    """The excerpt keys of one index, and the counts that leave out the keys that are full."""

    def __init__(self) -> None:
        self._counts: np.ndarray = np.zeros(1 << 12, dtype=np.uint8)
        self._posted = 0
        self._last: tuple[Any, np.ndarray] | None = None

    def params(self) -> dict[str, Any]:
        return {"winnow": f"word{SHINGLE}/{WINDOW}", "full": FULL}

    def keys(self, signature: Signature) -> np.ndarray:
        """The tagged bucket keys of a signature's fingerprints, but for the full ones."""
        last = self._last
        if last is not None and last[0] is signature:
            return last[1]
        keys = splitmix64(signature.excerpts ^ _TAG)
        keys = keys[self._counts[self._slots(keys)] < FULL]
        self._last = (signature, keys)
        return keys

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        return (keys & np.uint64(len(self._counts) - 1)).astype(np.intp)

    def posted(self, signature: Signature) -> None:
        """Count the keys a kept page was posted under."""
        keys = self.keys(signature)
        self._posted += len(keys)
        while 2 * self._posted > len(self._counts):  # an overcount only leaves keys out
            self._counts = np.tile(self._counts, 2)
        slots = self._slots(keys)
        np.add.at(self._counts, slots, 1)
        self._counts[slots] = np.minimum(self._counts[slots], FULL)
        self._last = None

    def shared(self, new: Signature, kept: Signature) -> bool:
        """Whether ``kept`` is worth verifying for a ``new`` page that its backend does not
        find similar: they share at least half of new's fingerprints, as an excerpt shares
        all of its own (docs/design.md#excerpt-keys, screening)."""
        a, b = new.excerpts, kept.excerpts
        if not len(a) or 2 * len(b) < len(a):  # too few to share half of them
            return False
        return 2 * len(set(a.tolist()).intersection(b.tolist())) >= len(a)  # numpy: 10x slower

    def encode(self, signature: Signature) -> bytes:
        return signature.excerpts.astype("<u8", copy=False).tobytes()

    @staticmethod
    def decode(data: bytes | memoryview) -> np.ndarray:
        return unpack(data, "<u8", "excerpt keys")
