"""How many extraction workers this machine has room for now: the cores this process may run
on, less those other work keeps busy (sampled from ``/proc/stat``). The default of
``NEARDUP_WORKERS`` (:mod:`scrapy_neardup.settings`)."""

from __future__ import annotations

import os
import time

#: At most this many extraction workers by default: one crawler thread feeds them, and more
#: only hold memory (``docs/design.md#extraction``).
MAX_DEFAULT_WORKERS = 4

#: Seconds over which :func:`default_workers` watches how busy the cores are.
BUSY_SAMPLE_S = 0.1

#: :func:`default_workers` reuses a measure this recent: crawlers started together in one
#: process (or a test session's many configs) measure once.
BUSY_REUSE_S = 10.0
_busy_measured: tuple[float, frozenset[int], float | None] | None = None


def _busy_ticks(cpus: set[int]) -> tuple[int, int] | None:
    """Busy and total clock ticks so far of ``cpus`` (``/proc/stat``); None off Linux."""
    busy = total = 0
    try:
        with open("/proc/stat", "rb") as stat:
            for line in stat:
                name, _, rest = line.partition(b" ")
                if not name.startswith(b"cpu") or name == b"cpu":
                    continue
                if int(name[3:]) not in cpus:
                    continue
                ticks = [int(v) for v in rest.split()[:8]]
                total += sum(ticks)
                busy += sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    except (OSError, ValueError):
        return None
    return (busy, total) if total else None


def busy_cores(cpus: set[int], seconds: float = BUSY_SAMPLE_S) -> float | None:
    """How many of ``cpus`` other work keeps busy now: their busy share over ``seconds``
    (this process sleeps meanwhile, so it is not counted). None where ``/proc/stat`` is
    missing."""
    before = _busy_ticks(cpus)
    if before is None:
        return None
    time.sleep(seconds)
    after = _busy_ticks(cpus)
    if after is None or after[1] <= before[1]:
        return None
    return len(cpus) * (after[0] - before[0]) / (after[1] - before[1])


def usable_cpus() -> set[int]:
    """The CPUs this process may run on (``sched_getaffinity``, which a container's cpuset or
    ``taskset`` narrows; all of them where it is missing)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return set(range(os.cpu_count() or 1))


def default_workers() -> int:
    """Extraction worker processes when ``NEARDUP_WORKERS`` is unset: the cores this process
    may run on (:func:`usable_cpus`) that other work leaves free now (:func:`busy_cores`,
    rounded; the 1-minute load average where ``/proc/stat`` is missing), at least 1 and at
    most :data:`MAX_DEFAULT_WORKERS`. Why not the load average: ``docs/design.md#extraction``.
    """
    cpus = usable_cpus()
    global _busy_measured
    now = time.monotonic()
    if (
        _busy_measured is not None
        and now - _busy_measured[0] < BUSY_REUSE_S
        and _busy_measured[1] == cpus
    ):
        busy = _busy_measured[2]
    else:
        busy = busy_cores(cpus)
        _busy_measured = (now, frozenset(cpus), busy)
    if busy is None:
        try:
            busy = os.getloadavg()[0]
        except (AttributeError, OSError):
            busy = 0.0
    return max(1, min(len(cpus) - round(busy), len(cpus), MAX_DEFAULT_WORKERS))
