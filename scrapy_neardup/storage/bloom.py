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

    def fill(self, count: float) -> float:
        """Expected fraction of set bits after ``count`` distinct inserts."""
        return -math.expm1(-self.k * count / self.bloom.size_in_bits)


class ScalableBloomFilter:
    """Set of URL fingerprints that grows without letting its false-positive rate drift.

    A scalable Bloom filter (Almeida et al., 2007): a chain of rbloom filters, each new one
    ``growth`` times larger at ``tightening`` times the error rate (the first at ``error_rate
    * (1 - tightening)``). A fingerprint is rbloom's hash as it is, an integer.
    """

    def __init__(
        self, capacity: int, error_rate: float, *, growth: int = 2, tightening: float = 0.5
    ) -> None:
        if type(capacity) is not int or capacity < 1:
            raise ValueError(f"capacity must be an integer >= 1, got {capacity!r}")
        if not isinstance(error_rate, (int, float)) or not 0.0 < error_rate < 1.0:
            raise ValueError(f"error_rate must be a number in (0, 1), got {error_rate!r}")
        if type(growth) is not int or not 1 <= growth < 2**32:
            raise ValueError(f"growth must be an integer >= 1, got {growth!r}")
        if not isinstance(tightening, (int, float)) or not 0.0 < tightening < 1.0:
            raise ValueError(f"tightening must be a number in (0, 1), got {tightening!r}")
        self.capacity = capacity
        self.error_rate = float(error_rate)
        self.growth = growth
        self.tightening = float(tightening)
        self._stages: list[_Stage] = []
        self._blooms: list[Bloom] = []  # the stages' filters, for the lookup loop
        self._add_stage(capacity, self.error_rate * (1.0 - self.tightening))

    def _add_stage(self, capacity: int, error_rate: float) -> None:
        error_rate = min(error_rate, MAX_STAGE_RATE)
        bloom = Bloom(capacity, error_rate, int)
        k = bloom_size(capacity, error_rate)[1]
        self._stages.append(_Stage(bloom, capacity, error_rate, k))
        self._blooms.append(bloom)

    def _newest(self) -> _Stage:
        """The stage that takes the next item: the newest, or a new one when it is full."""
        stage = self._stages[-1]
        if stage.count >= stage.capacity:
            self._add_stage(stage.capacity * self.growth, stage.error_rate * self.tightening)
        return self._stages[-1]

    def add(self, fingerprint: bytes) -> bool:
        """Test and set: True if ``fingerprint`` was (probably) there already, else add it."""
        value = int.from_bytes(fingerprint, "little", signed=True)
        for bloom in self._blooms:
            if value in bloom:
                return True
        stage = self._newest()
        stage.bloom.add(value)
        stage.count += 1
        return False

    def update(self, values: Sequence[int]) -> None:
        """Add distinct items given as integers (``int.from_bytes(fingerprint, "little",
        signed=True)``) without testing them first, stage by stage: a saved state rebuilds
        its filter from the keys it recorded this way (about a quarter of :meth:`add`'s
        time a key)."""
        start = 0
        while start < len(values):
            stage = self._newest()
            chunk = values[start : start + stage.capacity - stage.count]
            stage.bloom.update(chunk)
            stage.count += len(chunk)
            start += len(chunk)

    def __contains__(self, fingerprint: bytes) -> bool:
        value = int.from_bytes(fingerprint, "little", signed=True)
        return any(value in bloom for bloom in self._blooms)

    def __len__(self) -> int:
        """Number of items added (lookups that found an item do not count)."""
        return sum(stage.count for stage in self._stages)

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
        return sum(
            stage.count / steps * stage.fill(stage.count * j / steps) ** stage.k
            for stage in self._stages
            for j in range(1, steps + 1)
        )

    @property
    def fill_ratio(self) -> float:
        """Estimated fraction of set bits in the newest stage (about 0.5 when it is full)."""
        return self._stages[-1].fill(self._stages[-1].count)

    @property
    def expected_false_positive_rate(self) -> float:
        """Chance that an item never added is reported present, from each stage's fill."""
        return 1.0 - math.prod(1.0 - stage.fill(stage.count) ** stage.k for stage in self._stages)
