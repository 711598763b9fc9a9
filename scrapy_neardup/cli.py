"""``neardup``: deduplicate a folder of text or JSONL documents without a crawl.

    neardup dedupe DIR [--backend minhash] [--text-field text] [--json] [--no-progress]

Promises: documents are ``.txt``/``.md`` files, files without a suffix, and the lines of
``.jsonl``/``.ndjson`` files (text in ``--text-field``, key from ``url`` or ``id``); each is
checked by a :class:`~scrapy_neardup.deduplicator.Deduplicator` with the add-on's defaults, in
a stable order, and the verdicts are printed (``--json``: one JSON object). It never writes
to the folder. Rationale: ``docs/design.md#neardup-cli``.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from charset_normalizer import from_bytes

from scrapy_neardup.backends import BACKENDS, DEFAULT_BACKEND
from scrapy_neardup.deduplicator import DEFAULT_MIN_TOKENS, Deduplicator, Verdict

TEXT_SUFFIXES = (".txt", ".md", "")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: UTF-32 before UTF-16: the UTF-32-LE mark starts with the UTF-16-LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
#: Tie-breaks among charset-normalizer's equally good guesses (see :func:`_guess`).
PREFERRED_ENCODINGS = ("cp1252", "gb18030")
SNIFF_BYTES = 8192
#: Control characters (other than whitespace) beyond this share mean a binary file.
MAX_CONTROL_SHARE = 0.01
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
_HIGH_PAIR = re.compile(rb"[\x80-\xff]{2}")


def _guess(data: bytes) -> str | None:
    """charset-normalizer's reading, or None when no encoding fits (binary); among its equally
    good guesses, :data:`PREFERRED_ENCODINGS` win (``docs/design.md#neardup-cli``)."""
    matches = list(from_bytes(data))
    if not matches:
        return None
    best = matches[0]
    tied = {
        encoding
        for m in matches
        if (m.chaos, m.coherence) == (best.chaos, best.coherence)
        for encoding in m.could_be_from_charset  # encodings that read the bytes the same
    }
    for encoding in PREFERRED_ENCODINGS:
        if encoding in tied:
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:  # it judged from samples of a long text
                break
    return str(best)


def decode(data: bytes) -> str | None:
    """The text in ``data``, or None for binary data: by its byte-order mark, else UTF-8, else
    cp1252 where no two high bytes stand together, else charset-normalizer's guess."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            # A mark is strong evidence of text: a damaged character does not make it binary.
            return data[len(bom) :].decode(codec, errors="replace")
    if b"\0" in data:
        return None
    with contextlib.suppress(UnicodeDecodeError):
        return data.decode("utf-8")
    if max(data, default=0) >= 0x80 and _HIGH_PAIR.search(data) is None:
        with contextlib.suppress(UnicodeDecodeError):  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: undefined
            return data.decode("cp1252")
    return _guess(data)


@dataclass(frozen=True)
class Skipped:
    """A file or a JSONL line that is not a document, and why."""

    path: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        line = {} if self.line is None else {"line": self.line}
        return {"path": self.path, **line, "reason": self.reason}


class Folder:
    """The documents under ``root`` (a folder, searched recursively, or one file), in path order.

    Iterating yields ``(key, text)`` for each document and a :class:`Skipped` for each file or
    line that is not one; :attr:`done_bytes` of :attr:`total_bytes` says how far it got.
    """

    def __init__(self, root: Path, text_field: str) -> None:
        self.text_field = text_field
        self.paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        self.total_bytes = sum(_size(p) for p in self.paths)
        self.done_bytes = 0

    def __iter__(self) -> Iterator[tuple[str, str] | Skipped]:
        for path in self.paths:
            end = self.done_bytes + _size(path)
            try:
                if path.suffix in JSONL_SUFFIXES:
                    yield from self._jsonl(path)  # counts its lines' bytes as it goes
                    continue
                item = self._text(path) if path.suffix in TEXT_SUFFIXES else self._other(path)
            except OSError as exc:
                item = Skipped(str(path), f"unreadable ({exc.strerror or exc})")
            finally:
                self.done_bytes = end
            yield item

    def _text(self, path: Path) -> tuple[str, str] | Skipped:
        text = decode(path.read_bytes())
        if text is None or len(_CONTROLS.findall(text)) > MAX_CONTROL_SHARE * len(text):
            return Skipped(str(path), "binary")
        if not text.strip():
            return Skipped(str(path), "empty")
        return str(path), text

    def _other(self, path: Path) -> Skipped:
        """Not read as a document, but say what it is: a binary file, or one of another kind."""
        with path.open("rb") as fh:
            binary = decode(fh.read(SNIFF_BYTES)) is None
        return Skipped(str(path), "binary" if binary else "not a .txt, .md or .jsonl file")

    def _jsonl(self, path: Path) -> Iterator[tuple[str, str] | Skipped]:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
            fh.seek(0)
            wide = any(head.startswith(bom) for bom, codec in BOMS if codec != "utf-8")
            if b"\0" in head and not wide:
                yield Skipped(str(path), "binary")
                return
            if wide:  # UTF-16/32, as PowerShell 5 writes by default: decoded whole
                # split on "\n" only: JSON strings may hold U+2028, which splitlines() splits on
                lines: Iterator[str | None] = iter((decode(fh.read()) or "").split("\n"))
            else:  # streamed: a JSONL file may not fit in memory
                lines = self._decoded_lines(fh)
            for n, line in enumerate(lines, 1):
                if line is None:
                    yield Skipped(str(path), "binary", n)
                elif line.strip():
                    yield self._record(path, n, line)

    def _decoded_lines(self, fh: BinaryIO) -> Iterator[str | None]:
        for n, raw in enumerate(fh, 1):
            self.done_bytes += len(raw)
            yield decode(raw.removeprefix(codecs.BOM_UTF8) if n == 1 else raw)

    def _record(self, path: Path, n: int, line: str) -> tuple[str, str] | Skipped:
        field = self.text_field
        try:
            record = json.loads(line)
            text = record[field]
        except (ValueError, KeyError, TypeError):
            return Skipped(str(path), f"no {field!r} field", n)
        if not isinstance(text, str):
            return Skipped(str(path), f"{field!r} is not text", n)
        return str(record.get("url") or record.get("id") or f"{path}:{n}"), text


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Progress:
    """One status line on ``stream`` when it is a terminal, redrawn at most ten times a second.

    Anything else for the terminal goes through :meth:`print`, which writes it above the line,
    so the two never mix.
    """

    INTERVAL = 0.1

    def __init__(self, stream: TextIO, enabled: bool = True) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.last = float("-inf")
        self.line = ""  # the status on screen, "" when none

    def update(self, done: int, total: int, kept: int, dropped: int, skipped: int) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < self.INTERVAL:
            return
        self.last = now
        status = f"{kept + dropped:,} documents, {dropped:,} dropped, {skipped:,} skipped"
        if total:
            share = min(done / total, 1.0)
            status = f"[{'#' * round(share * 20):.<20}] {share:4.0%}  {status}"
        width = 80
        with contextlib.suppress(OSError, ValueError):
            width = os.get_terminal_size(self.stream.fileno()).columns or 80
        self._draw(status[: width - 1])

    def print(self, message: str, file: TextIO) -> None:
        """``print(message, file=file)``, above the status line if both are on the screen."""
        line = self.line
        if line and (file is self.stream or file.isatty()):
            self.clear()
            print(message, file=file, flush=True)
            self._draw(line)
        else:
            print(message, file=file)

    def clear(self) -> None:
        if self.line:
            self.stream.write("\r" + " " * len(self.line) + "\r")
            self.stream.flush()
            self.line = ""

    def _draw(self, line: str) -> None:
        sys.stdout.flush()  # what was printed before stays above the line
        self.stream.write("\r" + line.ljust(len(self.line)))  # blank out a longer old line
        self.stream.flush()
        self.line = line


def dedupe(args: argparse.Namespace) -> int:
    dedup = Deduplicator(args.backend, min_tokens=args.min_tokens)
    folder = Folder(Path(args.path), args.text_field)
    progress = Progress(sys.stderr, enabled=not args.no_progress)
    kept: list[Verdict] = []
    dropped: list[Verdict] = []
    skipped: list[Skipped] = []
    for item in folder:
        if isinstance(item, Skipped):
            skipped.append(item)
            progress.print(f"skipped {item}", sys.stderr)
        else:
            v = dedup.check(*item)
            (dropped if v.is_duplicate else kept).append(v)
            if not args.json:
                progress.print(_verdict_line(v), sys.stdout)
        progress.update(
            folder.done_bytes, folder.total_bytes, len(kept), len(dropped), len(skipped)
        )
    progress.clear()
    if args.json:
        drops = [
            {
                "key": v.key,
                "duplicate_of": v.duplicate_of,
                "method": v.method,
                "similarity": round(v.similarity, 4),
            }
            for v in dropped
        ]
        skips = [s.to_json() for s in skipped]
        found = {"kept": [v.key for v in kept], "dropped": drops, "skipped": skips}
        json.dump({**found, "counts": dict(dedup.counts)}, sys.stdout, indent=2)
        print()
        return 0
    summary = f"{len(kept) + len(dropped)} documents: {len(kept)} kept, {len(dropped)} dropped"
    if skipped:
        reasons = Counter(s.reason for s in skipped).most_common()
        summary += f"; {len(skipped)} skipped ({', '.join(f'{n} {r}' for r, n in reasons)})"
    print(summary)
    for s in skipped:
        print(f"  skipped {s}")
    return 0


def _verdict_line(v: Verdict) -> str:
    if not v.is_duplicate:
        return f"KEEP {v.key}"
    how = f"{v.method}, similarity {v.similarity:.2f}"
    return f"DROP {v.key}  duplicate of {v.duplicate_of} ({how})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="neardup", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("dedupe", help="deduplicate .txt/.md files and JSONL lines under a folder")
    p.add_argument("path", help="a folder (searched recursively) or one file")
    p.add_argument("--backend", choices=sorted(BACKENDS), default=DEFAULT_BACKEND)
    p.add_argument("--text-field", default="text", help="JSONL field holding the text")
    p.add_argument("--min-tokens", type=int, default=DEFAULT_MIN_TOKENS)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line on stderr (it is only drawn on a terminal anyway)",
    )
    p.set_defaults(func=dedupe)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not Path(args.path).exists():
        parser.error(f"{args.path} does not exist")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
