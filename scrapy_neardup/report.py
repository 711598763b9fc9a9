"""What a crawl's saved state holds, for ``scrapy neardup-stats``.

Promises: reads a crawl's state directory (``JOBDIR/neardup``, ``NEARDUP_STATE_DIR`` or a
path given) or a crawl shared through Redis (its URL and key prefix) without loading the
spider or building an index, inside a project or outside one, while it runs or after it
ended; it writes nothing, but :func:`reset_redis` deletes that crawl's keys, and only those.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scrapy_neardup.deduplicator import Member
from scrapy_neardup.exceptions import StateError, StorageError
from scrapy_neardup.state.directory import OLD_FILES
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.storage.statedb import STATE_FILE, StateDB, read_only
from scrapy_neardup.storage.texts import redis_key, redis_texts

TOP_CLUSTERS = 10
#: A crawl's saved state: its state directory, or the URL and key prefix of its Redis.
Crawl = Path | tuple[str, str]
#: The documents recorded beside a kept one, each by its key, by kind: ``member`` (the
#: duplicates), ``related``, ``near`` (kept, see :data:`BESIDE`).
Relations = dict[str, dict[str, Member]]
#: Each kind of :data:`Relations`, with the name of its hash in Redis.
_KINDS = {"member": "members", "related": "related", "near": "near"}
#: The kept documents listed beside a kept one, by kind: the field that names that one in a
#: summary's record, and the measure's field. ``related``: they hold it and substantially more
#: (never dropped for it); ``near``: the decision not configured (NEARDUP_DECISION) would have
#: dropped them for it.
BESIDE = {"related": ("holds", "containment"), "near": ("near", "similarity")}


@contextlib.contextmanager
def _reading(directory: Path) -> Iterator[StateDB]:
    """The state database of ``directory``, read-only; StateError when there is none."""
    if not directory.is_dir():
        raise StateError("no such state directory", path=str(directory))
    if not (directory / STATE_FILE).exists():
        old = [name for name in OLD_FILES if (directory / name).exists()]
        raise StateError(
            f"state in the format of an earlier release ({', '.join(old)}): read it with "
            "the release that wrote it"
            if old
            else "no scrapy-neardup state here (did the crawl run with JOBDIR?)",
            path=str(directory),
        )
    db = read_only(directory / STATE_FILE)
    try:
        yield db
    finally:
        db.abandon()


def summary_of(crawl: Crawl, top: int = TOP_CLUSTERS) -> dict[str, Any]:
    """:func:`summarize` of a state directory, :func:`summarize_redis` of a Redis crawl."""
    return summarize(crawl, top) if isinstance(crawl, Path) else summarize_redis(*crawl, top)


def summarize(directory: Path, top: int = TOP_CLUSTERS) -> dict[str, Any]:
    """Everything the command prints, as plain data."""
    with _reading(directory) as db:
        bloom = ScalableBloomFilter(1000, 0.001)
        for keys in db.url_keys():
            bloom.update(keys)
        try:
            meta = json.loads(db.meta("content") or "{}")
        except ValueError as exc:
            raise StateError(f"unreadable meta: {exc}", path=str(db.path)) from None
        heads = len({head.key for _, head in db.heads()})
        relations = _relations(db)
        confirmed = db.counter("false_positives")
    urls, size = len(bloom), bloom.size_in_bytes
    # Sized for its capacity up front: its cost per URL is the figure at capacity.
    per_url = round(size / bloom.total_capacity, 3)
    return {
        "state_dir": str(directory),
        "urls": {
            "seen": urls,
            "bloom_bytes": size,
            "bytes_per_url": per_url,
            "bytes_per_url_seen": round(size / urls, 3) if urls else None,
            "capacity": bloom.total_capacity,
            "bytes_per_url_at_capacity": per_url,
            "expected_false_positives": round(bloom.expected_false_positives(), 2),
            "confirmed_false_positives": confirmed,
            "fill_ratio": round(bloom.fill_ratio, 4),
            "expected_false_positive_rate": bloom.expected_false_positive_rate,
            "stages": bloom.stages,
        },
        "content": _content(meta, heads, relations, top),
    }


def _relations(db: StateDB) -> Relations:
    found: Relations = {kind: {} for kind in _KINDS}
    for kind, key, head, method, similarity in db.relations():
        found.setdefault(kind, {})[key] = Member(key, head, method, similarity)
    return found


def read_drops(crawl: Crawl) -> tuple[list[Member], dict[str, str], bool]:
    """The duplicates recorded for a crawl, the kept texts an audit of them reads (of each
    that is not an exact copy, and of the page it was dropped for), and whether the crawl
    kept texts at all."""
    if isinstance(crawl, Path):
        with _reading(crawl) as db:
            members = list(_relations(db)["member"].values())
            kept = db.has_texts()
            return members, db.texts(_wanted(members)) if kept else {}, kept
    from scrapy_neardup.storage import redis_index

    url, prefix = crawl
    with _redis(url, f"cannot read {url}") as client:
        members = [Member(*fields) for fields in redis_index.members(client, prefix)]
        texts = redis_texts(client, prefix, _wanted(members))
        return members, texts, bool(client.exists(redis_key(prefix)))


def _wanted(members: list[Member]) -> list[str]:
    near = [m for m in members if m.method != "exact"]
    return sorted({m.key for m in near} | {m.head for m in near})


@contextlib.contextmanager
def _redis(url: str, failure: str) -> Iterator[Any]:
    """A client of the Redis at ``url``; its errors raised as StorageError(``failure``: ...)."""
    from scrapy_neardup.storage import redis_client  # the redis extra

    client = redis_client.connect(url, retries=1)
    try:
        yield client
    except redis_client.REDIS_ERRORS as exc:
        raise StorageError(f"{failure}: {exc}") from None
    finally:
        client.close()


def summarize_redis(url: str, prefix: str, top: int = TOP_CLUSTERS) -> dict[str, Any]:
    """The same summary for a crawl whose state is in Redis under ``{prefix}:neardup:``."""
    from scrapy_neardup.storage import redis_client, redis_index, redis_urls

    with _redis(url, f"cannot read {url}") as client:
        raw = client.hgetall(f"{redis_client.key_base(prefix)}:meta")
        if not raw:
            found = redis_client.find_prefixes(client)
            raise StateError(
                f"no scrapy-neardup keys under prefix {prefix!r} in {url}"
                + (f" (prefixes found: {', '.join(found)})" if found else "")
            )
        url_params = json.loads(raw.get(b"urls", b"{}"))
        capacity, rate = url_params.get("capacity", 1), url_params.get("error_rate", 0.001)
        info = redis_urls.url_filter(client, prefix, capacity, rate).info()
        relations: Relations = {kind: {} for kind in _KINDS}
        for kind, name in _KINDS.items():
            for fields in redis_index.members(client, prefix, name):
                relations[kind][fields[0]] = Member(*fields)
        heads = client.hlen(f"{redis_client.part_base(prefix, 'exact')}:ids")
        late = [
            {"item": key, "original": head, "method": method, "similarity": round(sim, 4)}
            for key, head, method, sim in redis_index.members(client, prefix, "late")
        ]
    seen, size = info["seen"], info["bloom_bytes"]
    return {
        "redis": f"{url} prefix {prefix!r}",
        "urls": {
            "seen": seen,
            "bloom_bytes": size,
            "bytes_per_url": round(size / seen, 3) if seen else None,
            **{k: info[k] for k in ("fill_ratio", "expected_false_positive_rate", "stages")},
        },
        "content": _content(json.loads(raw.get(b"content", b"{}")), heads, relations, top),
        # Kept while Redis was unavailable, found duplicates once it was back: both copies
        # were delivered (see scrapy_neardup.state.redis).
        "late_duplicates": sorted(late, key=lambda d: d["item"]),
    }


def reset_redis(url: str, prefix: str) -> int:
    """Delete every key of the crawl under ``{prefix}:neardup:``; returns how many."""
    from scrapy_neardup.storage import redis_client

    with _redis(url, f"cannot reset {prefix!r} in {url}") as client:
        return redis_client.delete_prefix(client, prefix)


def _content(meta: dict[str, Any], heads: int, relations: Relations, top: int) -> dict[str, Any]:
    members = list(relations["member"].values())
    by_head: dict[str, list[Member]] = {}
    for m in members:
        by_head.setdefault(m.head, []).append(m)
    sizes = Counter(len(v) + 1 for v in by_head.values())
    largest = sorted(by_head.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
    content = {
        "method": meta.get("method"),
        "params": meta.get("params"),
        "documents_indexed": heads,
        "duplicates": len(members),
        "duplicates_by_method": dict(Counter(m.method for m in members)),
        "clusters": len(by_head),
        "cluster_sizes": {str(k): v for k, v in sorted(sizes.items())},
        "similarity_histogram": _histogram([m.similarity for m in members if m.similarity > 0]),
        "largest_clusters": [
            {
                "head": head,
                "size": len(ms) + 1,
                "members": [m.key for m in ms],
                "related": [r.key for r in relations["related"].values() if r.head == head],
            }
            for head, ms in largest
        ],
    }
    for kind, (other, measure) in BESIDE.items():
        beside = list(relations[kind].values())
        content[kind] = [
            {"item": r.key, other: r.head, measure: round(r.similarity, 4)} for r in beside[:top]
        ]
        content[f"{kind}_count"] = len(beside)
    return content


def _histogram(values: list[float], bins: int = 10) -> dict[str, int]:
    """Counts in ``bins`` equal bins from the lowest similarity (rounded down to 0.05) to 1,
    so that a backend whose matches all lie above 0.95 (SimHash) still shows a shape."""
    if not values:
        return {}
    start = min(math.floor(min(values) * 20) / 20, 0.95)
    width = (1.0 - start) / bins
    out: Counter[str] = Counter()
    for v in values:
        low = start + min(int((v - start) / width), bins - 1) * width
        out[f"{low:.3f}-{low + width:.3f}"] += 1
    return dict(sorted(out.items()))


def _percent(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}%}"


def _chart(title: str, counts: dict[str, int], width: int = 40) -> list[str]:
    """A titled bar chart of ``counts`` (nothing for none)."""
    if not counts:
        return []
    most = max(counts.values())
    bars = [
        f"  {k}  {n:>6}  {'#' * max(1, round(width * n / most)) if n else ''}"
        for k, n in counts.items()
    ]
    return ["", title, *bars]


#: The kept documents listed beside a kept one (``related``, ``near``): their title, and
#: the line of each under its key.
_KEPT_BESIDE = {
    "related": (
        "Kept, though they hold a kept document: {}"
        " (each carries substantially more than the one it holds)",
        "holds {holds} ({containment:.3f} of its phrases)",
    ),
    "near": (
        "Kept, though near a kept document: {}"
        " (the decision not configured, NEARDUP_DECISION, would have dropped them)",
        "near {near} (similarity {similarity:.3f})",
    ),
}
#: Late duplicates printed (``--json`` lists them all).
LATE_SHOWN = 20


def render(summary: dict[str, Any]) -> str:
    """A summary (:func:`summarize`, :func:`summarize_redis`) as the command prints it."""
    u, c = summary["urls"], summary["content"]
    lines = [
        f"scrapy-neardup state: {summary.get('redis') or summary.get('state_dir')}",
        "",
        "URLs",
        f"  seen                      {u['seen']}",
        f"  Bloom filter              {u['bloom_bytes']} bytes in {u['stages']} stage(s)"
        + (
            f" for {u['capacity']} URLs ({u['bytes_per_url_at_capacity']} bytes per URL"
            + (f"; {u['bytes_per_url_seen']} per URL seen so far)" if u["seen"] else ")")
            if u.get("capacity")
            else (f", {u['bytes_per_url']} bytes per URL" if u["bytes_per_url"] else "")
        ),
        f"  fill                      {_percent(u['fill_ratio'], 2)}",
        f"  false-positive rate now   {_percent(u['expected_false_positive_rate'], 5)}",
    ]
    if u.get("expected_false_positives") is not None:
        lines.append(f"  false positives expected  {u['expected_false_positives']:.2f}")
    if u.get("confirmed_false_positives") is not None:
        lines.append(
            f"  false positives confirmed {u['confirmed_false_positives']}"
            " (new URLs the Bloom filter called seen; fetched thanks to the fingerprint store)"
        )
    lines += [
        "",
        f"Content ({c['method'] or 'no documents yet'})",
        f"  documents indexed         {c['documents_indexed']}",
        f"  duplicates                {c['duplicates']}",
        *(f"    by {m:<22} {n}" for m, n in sorted(c["duplicates_by_method"].items())),
        f"  clusters (with a dup)     {c['clusters']}",
    ]
    sizes = {f"{size:>4} docs": n for size, n in c["cluster_sizes"].items()}
    lines += _chart("Cluster sizes", sizes)
    lines += _chart("Similarity of duplicates to their cluster head", c["similarity_histogram"])
    if c["largest_clusters"]:
        lines += ["", "Largest clusters"]
        for cluster in c["largest_clusters"]:
            lines.append(f"  {cluster['size']:>4}  {cluster['head']}")
            lines.extend(f"          {m}" for m in cluster["members"][:5])
            if len(cluster["members"]) > 5:
                lines.append(f"          ... and {len(cluster['members']) - 5} more")
    for kind, (title, line) in _KEPT_BESIDE.items():
        if c.get(f"{kind}_count"):
            lines += ["", title.format(c[f"{kind}_count"])]
            for r in c[kind]:
                lines += [f"  {r['item']}", "      " + line.format(**r)]
    if (late := summary.get("late_duplicates")) is not None:
        lines += [
            "",
            "Items delivered during a Redis outage that turn out to be duplicates: "
            + (f"{len(late)} (clean them from your output)" if late else "none"),
        ]
        for d in late[:LATE_SHOWN]:
            lines.append(f"  {d['item']}")
            lines.append(
                f"      duplicate of {d['original']} ({d['method']}, {d['similarity']:.3f})"
            )
        if len(late) > LATE_SHOWN:
            lines.append(f"  ... and {len(late) - LATE_SHOWN} more (--json lists them all)")
    return "\n".join(lines)
