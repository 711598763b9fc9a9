"""Shared benchmark helpers: RSS, tables, and a loopback HTTP server for crawls.

The benchmarks' texts and documents come from the project's corpus builder (``corpus/``:
real texts from ``../shared/data``, synthetic fallbacks, :func:`corpus.make_documents`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size (``VmRSS`` of ``/proc/<pid>/status``) of this process or of ``pid``;
    0 if unknown (a zombie, a process that is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
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


HTML = "text/html; charset=utf-8"


def serve_pages(
    body_of: Callable[[str], bytes | tuple[bytes, str] | None],
) -> ThreadingHTTPServer:
    """An HTTP server on a free loopback port, in a thread: ``body_of(path)`` is the page
    (HTML), or ``(body, content type)``, None a 404. Stop it with ``shutdown()`` and
    ``server_close()``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            found = body_of(self.path)
            self.send_response(404 if found is None else 200)
            body, kind = found if isinstance(found, tuple) else (found or b"", HTML)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_spider(source: str, **constants: Any) -> dict:
    """Run a one-file spider in ``scrapy runspider`` (a process of its own: a reactor cannot
    be restarted) and return the JSON it writes to ``OUT``. ``constants`` (``START=...``)
    are defined above ``source``, as is ``OUT``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "result.json")
        spider = Path(tmp, "plain_spider.py")
        header = "".join(
            f"{name} = {value!r}\n" for name, value in {**constants, "OUT": str(out)}.items()
        )
        spider.write_text(header + source)
        run = subprocess.run(
            [sys.executable, "-m", "scrapy", "runspider", str(spider)],
            capture_output=True,
            text=True,
            cwd=tmp,
            check=False,
        )
        if run.returncode or not out.exists():
            raise RuntimeError(run.stderr[-3000:])
        return json.loads(out.read_text())
