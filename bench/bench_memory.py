"""Memory per indexed document, as a crawl fills the index: real-text verified signatures.

    python bench/bench_memory.py [--n 1000000] [--quick] [--backends minhash,spotsigs]

A crawl's index holds, per kept page, its key (a URL), the backend's signature, the phrase
filter that verifies candidates (``backends/containment.py``) and the page's postings. The
pages of the article-extraction benchmark (``../shared/data``; generated text without it)
are cut into 5 KB documents and signed as the crawl signs them; N documents are then indexed
by the engine's ``Index`` over the memory store, each a signed document with its backend
signature redrawn (fresh MinHash values, fresh spots: its own buckets, as a distinct page
has) and its phrase filter copied, so every document costs what a real one does. Printed:
RSS growth per document at each size (and the bytes per document of the store's signature
file, on disk), for the compact store (``storage/memory.py``) and for the dict store it
replaced (reproduced here, the peer; up to 100,000 documents), each in a child process of its
own.

For MinHash, also the LSHBloom index (``NEARDUP_INDEX = "lshbloom"``, its default window of
100,000 documents, ``storage/lshbloom.py``).

Then the bytes per document in Redis (``INFO memory``) for every backend, 2,000 documents
checked through the Redis state on a redis-server of its own.

Targets: at 1M documents, MinHash <= 1 KB and SpotSigs <= 3 KB per document.
``--quick`` (``bench/run --quick``): 100,000 documents.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import rss_bytes  # noqa: E402
from corpus import load_article_bodies  # noqa: E402
from scrapy_neardup.backends import BACKENDS, make_backend  # noqa: E402
from scrapy_neardup.backends.base import Query  # noqa: E402
from scrapy_neardup.backends.containment import Verified  # noqa: E402
from scrapy_neardup.deduplicator import Index  # noqa: E402
from scrapy_neardup.storage.lshbloom import DEFAULT_WINDOW as LSHBLOOM_WINDOW  # noqa: E402
from scrapy_neardup.storage.lshbloom import LSHBloomStore  # noqa: E402
from scrapy_neardup.storage.memory import MemoryBucketStore  # noqa: E402
from scrapy_neardup.text import Document  # noqa: E402

SIGNED = 400  # distinct real documents signed; the N indexed are redrawn from them


class DictStore:
    """The plain store to compare with: a dict of buckets, a dict of signature objects."""

    def __init__(self) -> None:
        self.buckets: dict[int, Any] = {}
        self.signatures: dict[str, Any] = {}

    def query(self, query: Query) -> list:
        found = dict.fromkeys(k for b in query.buckets for k in _keys(self.buckets.get(b)))
        return [(k, v) for k in found if (v := query.verify(k, self.signatures[k])) is not None]

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        self.signatures[key] = signature
        for bucket in buckets:
            found = self.buckets.get(bucket)
            if found is None:
                self.buckets[bucket] = key
            elif isinstance(found, str):
                self.buckets[bucket] = [found, key]
            else:
                found.append(key)

    def __len__(self) -> int:
        return len(self.signatures)


def _keys(found: Any) -> list[str]:
    return [] if found is None else [found] if isinstance(found, str) else found


def documents(count: int, seed: int) -> list[str]:
    """5 KB documents cut from real pages (their sentences shuffled), or generated text."""
    rng = random.Random(seed)
    bodies = [b for b in load_article_bodies() if len(b) > 2000]
    if not bodies:
        words = [f"w{i}" for i in range(20000)] + "the a of and to in is was".split() * 500
        return [" ".join(rng.choice(words) for _ in range(800)) for _ in range(count)]
    sentences = [s.strip() for b in bodies for s in b.split(".") if len(s.split()) > 4]
    out = []
    for _ in range(count):
        picked: list[str] = []
        while sum(len(s) for s in picked) < 5000:
            picked.append(rng.choice(sentences))
        out.append(". ".join(picked) + ".")
    return out


def redraw(name: str, signature: Any, rng: np.random.Generator) -> Any:
    """The backend part of a signature, drawn again (its own buckets), same size and kind."""
    if name == "minhash":
        return rng.integers(0, 2**32, size=len(signature), dtype=signature.dtype)
    if name == "spotsigs":
        return np.unique(rng.integers(0, 2**63, size=len(signature), dtype=np.int64)).astype(
            signature.dtype
        )
    raise ValueError(name)


def fill(
    name: str, store_name: str, sizes: list[int], seed: int, queue: Any, excerpts: bool = True
) -> None:
    """In a child process: index up to max(sizes) documents, RSS per document at each size.
    Each document's excerpt keys (``backends/excerpts.py``) are drawn again too, as many as
    its text has (none without ``excerpts``)."""
    method = Verified(make_backend(name))
    signed = [method.signature(Document(t)) for t in documents(SIGNED, seed)]
    signed = [s for s in signed if s.phrases.count]
    counts = [len(s.excerpts) if excerpts else 0 for s in signed]
    rng = np.random.default_rng(seed)
    if store_name == "compact":
        store: Any = MemoryBucketStore(codec=method)
    elif store_name == "lshbloom":
        store = LSHBloomStore(codec=method, window=LSHBLOOM_WINDOW)
    else:
        store = DictStore()
    index = Index(method, store)
    gc.collect()
    rss0 = rss_bytes()
    out, done = [], 0
    for size in sizes:
        while done < size:
            sig = signed[done % len(signed)]
            fingerprints = rng.integers(0, 2**63, counts[done % len(signed)], dtype=np.int64)
            index.add(
                f"https://site{done % 997}.example/news/{done:09d}",
                sig._replace(
                    backend=redraw(name, sig.backend, rng),
                    phrases=replace(
                        sig.phrases, bits=sig.phrases.bits.copy(), sequence=None, line_words=None
                    ),
                    spots=None if sig.spots is None else replace(sig.spots, sequence=None),
                    excerpts=np.unique(fingerprints.astype(np.uint64)),
                ),
            )
            done += 1
        gc.collect()
        stores = store._stores() if store_name == "lshbloom" else [store]
        files = [f for f in (getattr(s, "_file", None) for s in stores) if f is not None]
        disk = sum(f.append(b"") for f in files)  # their lengths (the window's, for LSHBloom)
        out.append({"n": size, "rss_per_doc": (rss_bytes() - rss0) / size, "disk": disk / size})
    queue.put(out)


def measure(
    name: str, store_name: str, sizes: list[int], seed: int, excerpts: bool = True
) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=fill, args=(name, store_name, sizes, seed, queue, excerpts))
    proc.start()
    found = queue.get()
    proc.join()
    return found


REDIS_BACKENDS = tuple(BACKENDS)  # every backend


def redis_bytes(n: int = 2000) -> dict[str, float]:
    """Bytes per document in Redis (``INFO memory``'s used_memory before and after) for
    every backend: ``n`` documents checked through the Redis state, on a redis-server of
    its own (tests/redis_server.py)."""
    import shutil
    import tempfile

    if shutil.which("redis-server") is None:
        print("bench_memory: no redis-server; bytes per document in Redis skipped")
        return {}
    sys.path.insert(0, str(ROOT / "tests"))
    import redis
    from redis_server import RedisServer, redis_state

    texts = documents(n, 11)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp)) as server:
        client = redis.Redis.from_url(server.url)
        for name in REDIS_BACKENDS:
            state, _ = redis_state(server, f"mem-{name}", NEARDUP_BACKEND=name)
            before = client.info("memory")["used_memory"]
            for i, text in enumerate(texts):
                key = f"https://site{i % 97}.example/news/{i:09d}"
                state._check_blocking(key, state.dedup.sign(text))
            out[name] = (client.info("memory")["used_memory"] - before) / n
            state.close()
    print(f"Bytes per document in Redis (INFO memory), {n:,} documents of 5 KB:")
    print("  " + ", ".join(f"{name} {value:,.0f}" for name, value in out.items()))
    return out


def run(n: int = 1_000_000, backends: tuple[str, ...] = ("minhash", "spotsigs")) -> dict:
    sizes = [s for s in (10_000, 100_000, 1_000_000, 10_000_000) if s < n] + [n]
    peer = [s for s in sizes if s <= 100_000]
    source = "real pages (../shared/data)" if load_article_bodies() else "generated text"
    print(f"Memory per indexed document, 5 KB documents from {source}, sizes {sizes}")
    targets = {"minhash": 1024, "spotsigs": 3072}
    results: dict[str, Any] = {}
    print(f"{'backend':<10}{'store':<10}{'documents':>11}{'RSS B/doc':>11}{'on disk B/doc':>15}")
    for name in backends:
        store_names = ("compact", "dict", "lshbloom") if name == "minhash" else ("compact", "dict")
        for store_name in store_names:
            # The dict store takes 28 KB a SpotSigs document: it stops at 100,000.
            found = measure(name, store_name, peer if store_name == "dict" else sizes, 7)
            results[f"{name}/{store_name}"] = found
            for row in found:
                print(
                    f"{name:<10}{store_name:<10}{row['n']:>11,}{row['rss_per_doc']:>11,.0f}"
                    f"{row['disk']:>15,.0f}"
                )
        theirs = results[f"{name}/dict"][-1]
        same = next(r for r in results[f"{name}/compact"] if r["n"] == theirs["n"])
        ours = results[f"{name}/compact"][-1]
        met = "met" if ours["rss_per_doc"] <= targets[name] else "NOT met"
        print(
            f"{name}: compact / dict store = {same['rss_per_doc'] / theirs['rss_per_doc']:.2f}x"
            f" at {theirs['n']:,}; at {ours['n']:,}: {ours['rss_per_doc']:,.0f} B/doc in memory"
            f" (target <= {targets[name]:,}: {met}), {ours['disk']:,.0f} B/doc of signatures"
            " and phrase filters in the signature file"
        )
        if "lshbloom" in store_names:
            bloom = results[f"{name}/lshbloom"][-1]
            print(
                f"{name}: LSHBloom (window {LSHBLOOM_WINDOW:,}) at {bloom['n']:,}: "
                f"{bloom['rss_per_doc']:,.0f} B/doc in memory, "
                f"{bloom['rss_per_doc'] / ours['rss_per_doc']:.2f}x the compact store, "
                f"{bloom['rss_per_doc'] / theirs['rss_per_doc']:.3f}x the dict store at "
                f"{theirs['n']:,}; {bloom['disk']:,.0f} B/doc on disk (the window's, spread)"
            )
    results["redis"] = redis_bytes()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=None, help="documents (default 1,000,000)")
    parser.add_argument("--quick", action="store_true", help="100,000 documents")
    parser.add_argument("--backends", default="minhash,spotsigs")
    args = parser.parse_args(argv)
    n = args.n or (100_000 if args.quick else 1_000_000)
    run(n, tuple(args.backends.split(",")))


if __name__ == "__main__":
    main()
