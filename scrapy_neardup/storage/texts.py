"""Kept texts: what each checked document was compared by, so that a drop can be audited.

Promises: with ``NEARDUP_KEEP_TEXT`` > 0, the compared text of every checked document (cut to
that many characters) is kept by its key: in a state directory in the state database's
``texts`` table (:mod:`scrapy_neardup.storage.statedb`), in Redis in
``{prefix}:neardup:texts``. Nothing is read back by the crawl. Rationale:
``docs/design.md#kept-texts``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def redis_key(prefix: str) -> str:
    """The hash of a crawl's kept texts in Redis."""
    return f"{{{prefix}}}:neardup:texts"  # with the crawl's records (storage/redis_client.py)


def redis_texts(client: Any, prefix: str, keys: Iterable[str]) -> dict[str, str]:
    """The kept texts of ``keys`` in Redis (a redis-py client), fetched in batches."""
    keys = list(keys)
    found: dict[str, str] = {}
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        for key, value in zip(batch, client.hmget(redis_key(prefix), batch), strict=True):
            if value is not None:
                found[key] = value.decode("utf-8", "replace")
    return found
