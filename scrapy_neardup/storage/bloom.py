"""A scalable Bloom filter of URL fingerprints.

Promises: no false negatives; a compound false-positive rate below the ``error_rate`` asked
for however many items arrive; the same answers in any process (items are
:func:`scrapy_neardup.urls.url_fingerprint` digests, never ``hash()``). It knows nothing of
Scrapy or of storage: a saved state rebuilds it from the keys it recorded. Rationale:
``docs/design.md#scalable-bloom-filter``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rbloom import Bloom

__all__ = ["ScalableBloomFilter"]


# rbloom hashes with Python's hash() unless told otherwise, which is salted per process;
# the fingerprint is already a good 128-bit hash, so it is used as the integer itself. It is
# made an integer once per test-and-set, and rbloom's hash function is then ``int`` (a lookup
# and an add each called the conversion before: a fifth of the filter's time). The bits set
# are the same as when rbloom was given the bytes and the conversion.
def _as_int(fingerprint: bytes) -> int:
    return int.from_bytes(fingerprint, "little", signed=True)


# rbloom rounds its number of hash functions down, to 0 above a rate of about 0.5, and a
# filter with none reports everything present: no stage is ever built looser than this.
MAX_STAGE_RATE = 0.3


def bloom_size(capacity: int, error_rate: float) -> tuple[float, int]:
    """Bits (before rbloom rounds them to whole words) and hash functions rbloom picks."""
    bits = -1.0 * capacity * math.log(error_rate) / math.log(2) ** 2
    return bits, int(bits / capacity * math.log(2))


@dataclass(slots=True)
class _Stage:
    bloom: Bloom
    capacity: int
    error_rate: float
    k: int
    count: int = 0

    @property
    def fill(self) -> float:
        """Expected fraction of set bits after ``count`` distinct inserts."""
        return -math.expm1(-self.k * self.count / self.bloom.size_in_bits)


def _check_params(capacity: object, error_rate: object, growth: object, tightening: object) -> str:
    """The first problem with the filter parameters, or '' if they are fine."""
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        return f"capacity must be an integer >= 1, got {capacity!r}"
    if not isinstance(error_rate, (int, float)) or not 0.0 < error_rate < 1.0:
        return f"error_rate must be a number with 0 < error_rate < 1, got {error_rate!r}"
    if not isinstance(growth, int) or isinstance(growth, bool) or not 1 <= growth < 2**32:
        return f"growth must be an integer >= 1, got {growth!r}"
    if not isinstance(tightening, (int, float)) or not 0.0 < tightening < 1.0:
        return f"tightening must be a number with 0 < tightening < 1, got {tightening!r}"
    return ""


class ScalableBloomFilter:
    """Set of URL fingerprints that grows without letting its false-positive rate drift.

    A scalable Bloom filter (Almeida et al., 2007): a chain of rbloom filters, each new one
    ``growth`` times larger at ``tightening`` times the error rate (the first at ``error_rate
    * (1 - tightening)``), so the compound rate stays below ``error_rate``. Items, the 16-byte
    :func:`url_fingerprint`, are rbloom's hash as they are (``hash()`` is salted per process),
    so a filter rebuilt from the same items answers the same in any process.
    """

    def __init__(
        self, capacity: int, error_rate: float, *, growth: int = 2, tightening: float = 0.5
    ) -> None:
        problem = _check_params(capacity, error_rate, growth, tightening)
        if problem:
            raise ValueError(problem)
        self.capacity = capacity
        self.error_rate = float(error_rate)
        self.growth = growth
        self.tightening = float(tightening)
        self._count = 0
        self._stages: list[_Stage] = []
        self._blooms: list[Bloom] = []  # the stages' filters, for the lookup loop
        self._add_stage(capacity, self.error_rate * (1.0 - self.tightening))

    def _add_stage(self, capacity: int, error_rate: float) -> _Stage:
        error_rate = min(error_rate, MAX_STAGE_RATE)
        bloom = Bloom(capacity, error_rate, int)
        k = bloom_size(capacity, error_rate)[1]
        stage = _Stage(bloom, capacity, error_rate, k)
        self._stages.append(stage)
        self._blooms.append(bloom)
        return stage

    def add(self, fingerprint: bytes) -> bool:
        """Test and set: True if ``fingerprint`` was (probably) there already, else add it."""
        value = int.from_bytes(fingerprint, "little", signed=True)
        for bloom in self._blooms:
            if value in bloom:
                return True
        stage = self._stages[-1]
        if stage.count >= stage.capacity:
            stage = self._add_stage(
                stage.capacity * self.growth, stage.error_rate * self.tightening
            )
        stage.bloom.add(value)
        stage.count += 1
        self._count += 1
        return False

    def update(self, values: Sequence[int]) -> None:
        """Add distinct items given as integers (``int.from_bytes(fingerprint, "little",
        signed=True)``) without testing them first, stage by stage: a saved state rebuilds
        its filter from the keys it recorded this way (about a quarter of :meth:`add`'s
        time a key)."""
        start = 0
        while start < len(values):
            stage = self._stages[-1]
            if stage.count >= stage.capacity:
                stage = self._add_stage(
                    stage.capacity * self.growth, stage.error_rate * self.tightening
                )
            chunk = values[start : start + stage.capacity - stage.count]
            stage.bloom.update(chunk)
            stage.count += len(chunk)
            self._count += len(chunk)
            start += len(chunk)

    def __contains__(self, fingerprint: bytes) -> bool:
        value = _as_int(fingerprint)
        return any(value in bloom for bloom in self._blooms)

    def __len__(self) -> int:
        """Number of items added (lookups that found an item do not count)."""
        return self._count

    def __repr__(self) -> str:
        return (
            f"<ScalableBloomFilter items={self._count} stages={self.stages}"
            f" size_in_bytes={self.size_in_bytes}>"
        )

    @property
    def stages(self) -> int:
        return len(self._stages)

    @property
    def size_in_bytes(self) -> int:
        """Memory held by the bit arrays (the Python objects around them are negligible)."""
        return sum(bloom.size_in_bits for bloom in self._blooms) // 8

    @property
    def total_capacity(self) -> int:
        """URLs the stages so far are sized for (at their error rates)."""
        return sum(stage.capacity for stage in self._stages)

    def expected_false_positives(self, steps: int = 100) -> float:
        """Expected number of new URLs so far reported as seen: each stage's false-positive
        rate integrated over its fill as its items were added."""
        total = 0.0
        for stage in self._stages:
            size = stage.bloom.size_in_bits
            for j in range(1, steps + 1):
                fill = -math.expm1(-stage.k * stage.count * j / steps / size)
                total += stage.count / steps * fill**stage.k
        return total

    @property
    def fill_ratio(self) -> float:
        """Estimated fraction of set bits in the newest stage (about 0.5 when it is full)."""
        return self._stages[-1].fill

    @property
    def expected_false_positive_rate(self) -> float:
        """Chance that an item never added is reported present, from each stage's fill."""
        miss = 1.0
        for stage in self._stages:
            miss *= 1.0 - stage.fill**stage.k
        return 1.0 - miss
