"""Shared benchmark helpers: real texts from ``../shared/data``, synthetic fallbacks, RSS, and a
loopback HTTP server for crawls.

The data lives beside the project (``<project>/../shared/data``, see its README) and is never
copied into it. Every loader returns ``None`` (or an empty result) when the data is absent, so
a benchmark can fall back to synthetic text and say so in its output.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
GROUND_TRUTH = DATA / "article-extraction-benchmark" / "ground-truth.json"

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SENTENCE_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def load_ground_truth() -> dict[str, dict[str, Any]] | None:
    """``{sha256: {"url", "articleBody"}}`` of the article-extraction benchmark, or None."""
    if not GROUND_TRUTH.is_file():
        return None
    with GROUND_TRUTH.open(encoding="utf-8") as f:
        return json.load(f)


def load_article_bodies(*, skip_cjk: bool = True) -> list[str] | None:
    """Hand-annotated article bodies (sorted by key), optionally without the CJK ones."""
    truth = load_ground_truth()
    if truth is None:
        return None
    bodies = [truth[k]["articleBody"] for k in sorted(truth)]
    return [b for b in bodies if b.strip() and not (skip_cjk and _CJK_RE.search(b))]


def load_article_urls() -> list[str] | None:
    """The original URLs of the article-extraction benchmark pages, or None."""
    truth = load_ground_truth()
    return None if truth is None else [truth[k]["url"] for k in sorted(truth)]


def split_sentences(text: str) -> list[str]:
    """Rough sentence split (enough to recombine texts); empty pieces are dropped."""
    return [s.strip() for s in _SENTENCE_RE.split(text) if len(s.strip()) > 1]


_FUNCTION_WORDS = (
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when who "
    "will more no if out so said what up its about than into them can only other new some "
    "these two may first then do any like my now over such our man me even most made after "
    "again being both did does doing each few had him how i just nor own same says should "
    "those too under us very where whom why your is am its"
).split()
_FUNCTION_SET = frozenset(_FUNCTION_WORDS)
_LATIN_WORD_RE = re.compile(r"[A-Za-z]+")


def rename_words(text: str, tag: str) -> str:
    """``text`` with ``tag`` appended to every Latin word that is not a function word.

    A recombined corpus reuses each source sentence in many documents, which makes unrelated
    documents share whole sentences; renaming the content words of each later pass over the
    source gives the documents of one pass the phrase overlap of real distinct articles, and
    documents of different passes the overlap of articles in two unrelated vocabularies.
    """
    if not tag:
        return text
    return _LATIN_WORD_RE.sub(
        lambda m: m.group() if m.group().lower() in _FUNCTION_SET else m.group() + tag, text
    )


def synthetic_sentences(count: int, seed: int = 0, vocabulary: int = 30_000) -> list[str]:
    """English-like sentences: real function words plus a Zipfian vocabulary of pseudo-words."""
    rng = random.Random(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    letter_weights = [12, 9, 8, 8, 7, 7, 6, 6, 6, 4, 4, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    words = list(_FUNCTION_WORDS)
    seen = set(words)
    while len(words) < vocabulary:
        w = "".join(rng.choices(letters, letter_weights, k=rng.randint(3, 10)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cumulative.append(total)
    out = []
    for _ in range(count):
        n = rng.randint(8, 30)
        tokens = rng.choices(words, cum_weights=cumulative, k=n)
        out.append(" ".join(tokens).capitalize() + ".")
    return out


def sentence_pool(seed: int = 0) -> tuple[list[str], str]:
    """Sentences of the real article bodies, or synthetic ones; and a line naming the source."""
    bodies = load_article_bodies()
    if bodies:
        pool = [s for body in bodies for s in split_sentences(body)]
        chars = sum(len(s) for s in pool)
        return pool, (
            f"real text: {len(bodies)} English article bodies of {GROUND_TRUTH.relative_to(DATA)}"
            f" ({len(pool)} sentences, {chars / 1e3:.0f} KB)"
        )
    pool = synthetic_sentences(8000, seed)
    return pool, (
        f"SYNTHETIC text ({DATA} absent): seeded English-like sentences, Zipfian vocabulary"
    )


def _pass_tag(n: int) -> str:
    """ "" for the first pass over the source, then "qb", "qc", ..., "qba", ..."""
    tag = ""
    n = max(n, 0)
    while n:
        n, digit = divmod(n, 26)
        tag = chr(ord("a") + digit) + tag
    return "q" + tag if tag else ""


def make_documents(
    count: int,
    *,
    size: int = 5000,
    dup_rate: float = 0.1,
    seed: int = 0,
    pool: list[str] | None = None,
) -> tuple[list[str], str]:
    """``count`` documents of about ``size`` characters, and a line naming the text source.

    Documents are runs of 3-8 consecutive pool sentences, the runs shuffled and cut into
    documents, so one pass over the pool uses each sentence once; each further pass renames
    its content words (:func:`rename_words`), so no two documents share a sentence. A share
    ``dup_rate`` are near-duplicates instead: an earlier document with one sentence replaced.
    """
    rng = random.Random(seed)
    source = ""
    if pool is None:
        pool, source = sentence_pool(seed)
    runs: list[list[str]] = []
    i = 0
    while i < len(pool):
        step = rng.randint(3, 8)
        runs.append(pool[i : i + step])
        i += step
    docs: list[list[str]] = []
    passes = 0
    stream: list[str] = []
    while len(docs) < count:
        if docs and rng.random() < dup_rate:
            copy = list(rng.choice(docs))
            copy[rng.randrange(len(copy))] = rename_words(rng.choice(pool), _pass_tag(passes - 1))
            docs.append(copy)
            continue
        sentences: list[str] = []
        length = 0
        while length < size:
            if not stream:
                rng.shuffle(runs)
                tag = _pass_tag(passes)
                stream = [rename_words(s, tag) for run in reversed(runs) for s in reversed(run)]
                passes += 1
            sentences.append(stream.pop())
            length += len(sentences[-1]) + 1
        docs.append(sentences)
    done = f"{passes} pass(es) over its sentences"
    return [" ".join(d) for d in docs], f"{source}; {done}" if source else done


def rss_bytes() -> int:
    """Resident set size of this process (``VmRSS`` of ``/proc/self/status``), 0 if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def print_table(headers: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    """A compact fixed-width table; the first column left-aligned, the others right."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        padded = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        padded[0] = row[0].ljust(widths[0])
        return "  ".join(padded)

    if title:
        print(title)
    print(fmt(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(fmt(row))
    print(flush=True)


def serve_pages(body_of: Callable[[str], bytes | None]) -> ThreadingHTTPServer:
    """An HTTP server on a free loopback port, in a thread: ``body_of(path)`` is the page
    (HTML), None a 404. Stop it with ``shutdown()`` and ``server_close()``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = body_of(self.path)
            self.send_response(404 if body is None else 200)
            body = body or b""
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
