"""``neardup``: deduplicate a folder of text or JSONL documents without a crawl.

Useful to try the backends on one's own documents, and to dedupe a corpus after the fact::

    neardup dedupe DIR [--backend minhash] [--text-field text] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from scrapy_neardup.algorithms import METHODS
from scrapy_neardup.engine import DEFAULT_MIN_TOKENS, Deduplicator


def iter_documents(root: Path, text_field: str) -> Iterator[tuple[str, str]]:
    """(key, text) for every ``.txt`` file and every JSONL line under ``root``, in path order.

    A JSONL line's key is its ``url`` or ``id`` field if present, else ``file:line``.
    Unreadable files and lines without text are reported on stderr and skipped.
    """
    paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in paths:
        if path.suffix in (".jsonl", ".ndjson"):
            with path.open(encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                        text = record[text_field]
                    except (ValueError, KeyError, TypeError):
                        print(f"skipped {path}:{n}: no {text_field!r} field", file=sys.stderr)
                        continue
                    if not isinstance(text, str):
                        print(f"skipped {path}:{n}: {text_field!r} is not text", file=sys.stderr)
                        continue
                    key = record.get("url") or record.get("id") or f"{path}:{n}"
                    yield str(key), text
        elif path.suffix in (".txt", ".md", ""):
            yield str(path), path.read_text(encoding="utf-8", errors="replace")


def dedupe(args: argparse.Namespace) -> int:
    dedup = Deduplicator(args.backend, min_tokens=args.min_tokens)
    results = []
    for key, text in iter_documents(Path(args.path), args.text_field):
        verdict = dedup.check(key, text)
        results.append(verdict)
        if not args.json:
            if verdict.is_duplicate:
                print(
                    f"DROP {key}  duplicate of {verdict.duplicate_of} "
                    f"({verdict.method}, similarity {verdict.similarity:.2f})"
                )
            else:
                print(f"KEEP {key}")
    kept = sum(not v.is_duplicate for v in results)
    if args.json:
        json.dump(
            {
                "kept": [v.key for v in results if not v.is_duplicate],
                "dropped": [
                    {
                        "key": v.key,
                        "duplicate_of": v.duplicate_of,
                        "method": v.method,
                        "similarity": round(v.similarity, 4),
                    }
                    for v in results
                    if v.is_duplicate
                ],
                "counts": dict(dedup.counts),
            },
            sys.stdout,
            indent=2,
        )
        print()
    else:
        print(f"{len(results)} documents: {kept} kept, {len(results) - kept} dropped")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="neardup", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("dedupe", help="deduplicate .txt files and JSONL lines under a folder")
    p.add_argument("path", help="a folder (searched recursively) or one file")
    p.add_argument("--backend", choices=sorted(METHODS), default="minhash")
    p.add_argument("--text-field", default="text", help="JSONL field holding the text")
    p.add_argument("--min-tokens", type=int, default=DEFAULT_MIN_TOKENS)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=dedupe)
    args = parser.parse_args(argv)
    if not Path(args.path).exists():
        parser.error(f"{args.path} does not exist")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
