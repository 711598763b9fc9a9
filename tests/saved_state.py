"""A deduplicator saved in a state database and resumed in another, as a JOBDIR resumes.

The crawl records each decision as it is made (``state.files.ContentRecorder``); here a
deduplicator that decided without a recorder is written the same way afterwards."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.state.files import load_content
from scrapy_neardup.storage.statedb import STATE_FILE, HeadRecord, StateDB, read_only


def save(dedup: Deduplicator, path: Path) -> None:
    content = {k: dedup.meta()[k] for k in ("method", "params", "min_tokens")}
    db = StateDB(path)
    db.open({"content": json.dumps(content, sort_keys=True)})
    db.start_writing()
    near = dict(dedup.near.store.items()) if dedup.near is not None else {}
    for key, exact in dedup.exact.store.items():
        signature = near.get(key)
        encoded = None if signature is None else dedup.near.method.encode(signature)
        db.add_head(HeadRecord(key, dedup.exact.method.encode(exact), encoded, 0))
    for kind, relations in (
        ("member", dedup.members),
        ("related", dedup.related),
        ("near", dedup.near_members),
    ):
        for m in relations.values():
            db.add_relation(kind, m.key, m.head, m.method, m.similarity)
    db.close()


def resume(saved: Deduplicator, into: Deduplicator) -> Deduplicator:
    """``into`` (empty) with what ``saved`` holds; StateError (``into`` left empty) when a
    state of ``saved``'s settings would not resume in it."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, STATE_FILE)
        save(saved, path)
        db = read_only(path)
        try:
            try:
                into.check_saved(json.loads(db.meta("content") or "{}"))
            except StateError as exc:
                raise StateError(str(exc), path=str(path)) from None
            load_content(db, into)
        finally:
            db.abandon()
    return into
