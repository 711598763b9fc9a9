"""The add-on's idle cost: ``scrapy bench`` plain and with the add-on, side by side.

    python bench/bench_idle.py [--quick] [--runs N]

``scrapy bench`` (Scrapy's own command) starts a local HTTP server of link pages on port 8998
and follows its links for 10 s (``CLOSESPIDER_TIMEOUT``). It yields no items, so the plugin
has nothing to deduplicate: what it costs is its idle cost (the URL filter on every request,
its middlewares, its start-up and its worker processes).

Each run is ``python -m scrapy bench -s LOG_LEVEL=INFO ...`` in a subprocess, from an empty
temporary directory (no Scrapy project), with the project root on ``PYTHONPATH``. Three
variants, alternating, ``--runs`` of each (3; ``--quick``: 1):

* ``add-on``: enabled by settings only, ``-s ADDONS='{"scrapy_neardup.Addon": 500}'`` (Scrapy
  parses the JSON string; the log's "Enabled addons" is checked);
* ``plain``: the same command without it. Scrapy still imports scrapy-neardup in every
  ``scrapy`` process of an environment where it is installed, to find its ``neardup-stats``
  command (a ``scrapy.commands`` entry point), and with it what that module imports;
* ``Scrapy alone``: ``scrapy.cmdline.execute()`` with the ``scrapy.commands`` entry points
  skipped, so no scrapy_neardup module is loaded (checked): Scrapy without the package, the
  baseline of the "against Scrapy alone" summary line.

Measured per run:

* pages: ``response_received_count`` of the stats dump at the end of the log;
* pages/s while crawling: pages over the time from the first response to "Closing spider";
* first response: seconds from the "Spider opened" log line to the first response (the
  "Crawled (200)" moment; the delay until the first request reached the downloader is
  printed per run too). Log lines carry ``%(created)`` timestamps (``LOG_FORMAT``), and a
  tiny probe extension, enabled in every variant, logs at INFO the first request and
  response (so the crawl is not slowed by DEBUG logging of every page) and which of
  scrapy_neardup and its heavy dependencies are imported when the spider opens;
* process-tree memory: every 0.1 s, ``VmRSS`` of the scrapy process and all its descendants
  (``/proc``: the bench server the command starts, the plugin's extraction workers,
  multiprocessing's resource tracker), summed: the peak, and the sample just before
  "Closing spider". RSS counts pages shared between processes once per process.

Every process of the tree must be gone once ``scrapy bench`` has exited (this process makes
itself a child subreaper, so orphans are found too): any left after 5 s is reported as a
FAILED line, killed, and makes the exit status 1. Targets: pages with the add-on
>= 0.9x plain; extra peak tree memory <= 60 MB; the first request within about a second of
the spider opening. Missing a target does not change the exit status; errors do.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import print_table, rss_bytes  # noqa: E402

ADDON_SETTING = '{"scrapy_neardup.Addon": 500}'
BENCH_PORT = 8998  # fixed in scrapy.commands.bench
LOG_FORMAT = "%(created).6f [%(name)s] %(levelname)s: %(message)s"
SAMPLE_INTERVAL = 0.1
RUN_TIMEOUT = 180.0  # seconds; a 10 s crawl that takes this long is an error
LEFTOVER_GRACE = 5.0
MB = 1e6

PROBE_MODULE = "neardup_idle_probe"
PROBE_SOURCE = '''\
"""Logs (INFO) the modules imported at spider open, the first request that reaches the
downloader and the first response."""
import logging
import sys

from scrapy import signals

logger = logging.getLogger("idle_probe")
WATCHED = ("scrapy_neardup", "numpy", "datasketch", "simhash", "redis", "trafilatura", "jieba")


class Probe:
    def __init__(self, crawler):
        self.request_seen = self.response_seen = False
        crawler.signals.connect(self.opened, signals.spider_opened)
        crawler.signals.connect(self.request_left, signals.request_reached_downloader)
        crawler.signals.connect(self.response, signals.response_received)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def opened(self, spider):
        loaded = [name for name in WATCHED if name in sys.modules]
        logger.info("modules loaded: %s", " ".join(loaded) or "-")

    def request_left(self, request, spider):
        if not self.request_seen:
            self.request_seen = True
            logger.info("first request reached the downloader: %s", request.url)

    def response(self, response, request, spider):
        if not self.response_seen:
            self.response_seen = True
            logger.info("first response: %s %s", response.status, response.url)
'''

ALONE_MODULE = "scrapy_alone"
ALONE_SOURCE = '''\
"""``python -m scrapy`` without the ``scrapy.commands`` entry points (scrapy-neardup's
``neardup-stats``), so that Scrapy imports no scrapy_neardup module."""
import sys

import scrapy.cmdline

if not hasattr(scrapy.cmdline, "_get_commands_from_entry_points"):
    sys.exit("scrapy.cmdline._get_commands_from_entry_points is gone: cannot skip entry points")
scrapy.cmdline._get_commands_from_entry_points = lambda inproject, group="": {}
scrapy.cmdline.execute()
'''

VARIANTS = ("alone", "plain", "add-on")
LABELS = {"alone": "Scrapy alone", "plain": "plain", "add-on": "add-on"}

_LINE_RE = re.compile(r"^(\d{9,}\.\d{6}) \[([^\]]+)\] (\w+): (.*)$")


class BenchError(Exception):
    pass


# --- /proc ---------------------------------------------------------------------------------


def proc_table() -> dict[int, tuple[int, str, int]]:
    """``{pid: (ppid, state, starttime)}`` of every process now visible in ``/proc``."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and ")"
        table[int(name)] = (int(fields[1]), fields[0], int(fields[19]))
    return table


def descendants(root: int, table: dict[int, tuple[int, str, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cmdline_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def become_subreaper() -> bool:
    """Orphans of the scrapy tree are re-parented to this process instead of init, so a
    leftover started after the last sample is still found. Linux only."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans() -> None:
    """Collect the exit status of re-parented children that ended (no zombies left)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def role_of(cmd: str) -> str:
    return "server" if "scrapy.utils.benchserver" in cmd else "helpers"


@dataclass
class Sampler:
    """Samples the tree under ``root`` every ``SAMPLE_INTERVAL`` s, in a thread."""

    root: int
    samples: list[tuple[float, int]] = field(default_factory=list)  # (time.time(), bytes)
    peak: int = 0
    peak_parts: dict[str, int] = field(default_factory=dict)
    seen: dict[int, tuple[int, str]] = field(default_factory=dict)  # pid: (starttime, cmd)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.sample()
            self._stop.wait(max(0.0, SAMPLE_INTERVAL - (time.monotonic() - started)))

    def sample(self) -> None:
        table = proc_table()
        if self.root not in table or table[self.root][1] == "Z":
            return
        parts: dict[str, int] = {}
        total = 0
        for pid in [self.root, *descendants(self.root, table)]:
            # Read again each time: just after fork, before exec, it is the parent's.
            cmd = "" if pid == self.root else cmdline_of(pid)
            self.seen[pid] = (table[pid][2], cmd)
            rss = rss_bytes(pid)
            total += rss
            role = "crawler" if pid == self.root else role_of(cmd)
            parts[role] = parts.get(role, 0) + rss
        self.samples.append((time.time(), total))
        if total > self.peak:
            self.peak, self.peak_parts = total, parts

    def at(self, moment: float) -> int:
        """The last sample taken at or before ``moment`` (``time.time()``)."""
        before = [rss for t, rss in self.samples if t <= moment]
        return before[-1] if before else 0


def leftovers(sampler: Sampler, me: int) -> dict[int, str]:
    """Processes of the finished run still alive: ones sampled in its tree (same pid and
    start time) and any re-parented to this process (the subreaper)."""
    table = proc_table()
    alive = {
        pid: cmd
        for pid, (start, cmd) in sampler.seen.items()
        if pid in table and table[pid][2] == start and table[pid][1] != "Z"
    }
    for pid in descendants(me, table):
        if table[pid][1] != "Z":
            alive.setdefault(pid, cmdline_of(pid))
    return alive


def stop_leftovers(sampler: Sampler, me: int) -> dict[int, str]:
    """Waits up to ``LEFTOVER_GRACE`` s for the run's processes to end, then kills (by pid)
    and returns those still alive."""
    deadline = time.monotonic() + LEFTOVER_GRACE
    while True:
        reap_orphans()
        left = leftovers(sampler, me)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    if left:
        time.sleep(0.2)
        reap_orphans()
    return left


# --- one run -------------------------------------------------------------------------------


@dataclass
class Run:
    variant: str
    pages: int
    elapsed: float  # elapsed_time_seconds of the stats
    rate: float  # pages/s from the first response to "Closing spider"
    first_request: float  # s from "Spider opened" to the first request in the downloader
    first_response: float  # s from "Spider opened" to the first response
    peak: int  # bytes, process tree
    end: int  # bytes, process tree just before "Closing spider"
    peak_parts: dict[str, int]
    processes: int
    leftover: dict[int, str]
    modules: str


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def parse_log(lines: list[str], variant: str) -> dict[str, Any]:
    events: dict[str, Any] = {}
    stats_at = None
    for i, line in enumerate(lines):
        m = _LINE_RE.match(line)
        if not m:
            continue
        created, logger, message = float(m[1]), m[2], m[4]
        if message.startswith("Scrapy ") and "started (bot: " in message:
            if "(bot: scrapybot)" not in message:
                raise BenchError(f"a Scrapy project was picked up: {message}")
        elif logger == "idle_probe" and message.startswith("modules loaded: "):
            modules = message.removeprefix("modules loaded: ")
            if variant == "alone" and "scrapy_neardup" in modules.split():
                raise BenchError(f"Scrapy alone run imported scrapy_neardup ({modules})")
            events["modules"] = modules
        elif message == "Enabled addons:":
            enabled = lines[i + 1] if i + 1 < len(lines) else ""
            has_addon = "scrapy_neardup" in enabled
            if has_addon != (variant == "add-on"):
                raise BenchError(f"{LABELS[variant]} run: enabled addons are {enabled}")
            events["addons_checked"] = 1
        elif message == "Spider opened":
            events["opened"] = created
        elif logger == "idle_probe" and message.startswith("first request"):
            events["first_request"] = created
        elif logger == "idle_probe" and message.startswith("first response"):
            events["first_response"] = created
        elif message.startswith("Closing spider"):
            events["closing"] = created
            if "(closespider_timeout)" not in message:
                raise BenchError(
                    f"{LABELS[variant]} run ended otherwise than by its timeout: {message}"
                )
        elif message == "Dumping Scrapy stats:":
            stats_at = i
    missing = {"modules", "addons_checked", "opened", "first_request", "first_response", "closing"}
    missing -= events.keys()
    if missing or stats_at is None:
        raise BenchError(
            f"{LABELS[variant]} run: the log lacks {sorted(missing) or 'the stats dump'}"
        )
    dump = []
    for line in lines[stats_at + 1 :]:
        if _LINE_RE.match(line):
            break
        dump.append(line)
    stats = "\n".join(dump)
    for key in ("response_received_count", "downloader/response_count", "elapsed_time_seconds"):
        m = re.search(rf"'{re.escape(key)}': ([\d.]+)", stats)
        if not m:
            raise BenchError(f"{LABELS[variant]} run: no {key} in the stats dump")
        events[key] = float(m[1])
    return events


def run_bench(variant: str, workdir: Path, env: dict[str, str], me: int) -> Run:
    if port_in_use(BENCH_PORT):
        raise BenchError(f"port {BENCH_PORT} (scrapy bench's server) is already in use")
    launcher = [f"{ALONE_MODULE}.py"] if variant == "alone" else ["-m", "scrapy"]
    args = [
        sys.executable, *launcher, "bench",
        "-s", "LOG_LEVEL=INFO",
        "-s", f"LOG_FORMAT={LOG_FORMAT}",
        "-s", f'EXTENSIONS={{"{PROBE_MODULE}.Probe": 0}}',
    ]  # fmt: skip
    if variant == "add-on":
        args += ["-s", f"ADDONS={ADDON_SETTING}"]
    lines: list[str] = []
    proc = subprocess.Popen(
        args,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group, to clean up after a timeout
    )
    sampler = Sampler(proc.pid)
    sampler.start()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        proc.wait(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise BenchError(f"{LABELS[variant]} run did not finish in {RUN_TIMEOUT:.0f} s") from None
    finally:
        sampler.stop()
        # Leftovers first: one that inherited the log pipe would keep the reader waiting.
        left = stop_leftovers(sampler, me)
        reader.join(timeout=10)
        (workdir / f"{variant}.log").write_text("".join(lines))
    lines = [line.rstrip("\n") for line in lines]
    if proc.returncode != 0:
        tail = "\n".join(lines[-20:])
        raise BenchError(f"{LABELS[variant]} run exited with {proc.returncode}:\n{tail}")

    ev = parse_log(lines, variant)
    pages = int(ev["response_received_count"])
    if pages == 0 or pages != int(ev["downloader/response_count"]):
        raise BenchError(
            f"{LABELS[variant]} run: {pages} responses received, "
            f"{int(ev['downloader/response_count'])} downloaded"
        )
    crawling = ev["closing"] - ev["first_response"]
    return Run(
        variant=variant,
        pages=pages,
        elapsed=ev["elapsed_time_seconds"],
        rate=pages / crawling if crawling > 0 else 0.0,
        first_request=ev["first_request"] - ev["opened"],
        first_response=ev["first_response"] - ev["opened"],
        peak=sampler.peak,
        end=sampler.at(ev["closing"]),
        peak_parts=sampler.peak_parts,
        processes=len(sampler.seen),
        leftover=left,
        modules=ev["modules"],
    )


# --- main ----------------------------------------------------------------------------------


def describe(run: Run) -> str:
    parts = ", ".join(f"{k} {v / MB:.0f}" for k, v in sorted(run.peak_parts.items()))
    return (
        f"  {LABELS[run.variant]:12}  {run.pages:5d} pages in {run.elapsed:.1f} s, "
        f"{run.rate:.1f} pages/s while crawling, first request +{run.first_request:.2f} s, "
        f"first response +{run.first_response:.2f} s, tree peak {run.peak / MB:.0f} MB "
        f"({parts}; {run.processes} processes), at close {run.end / MB:.0f} MB; "
        f"imported: {run.modules}"
    )


def run(quick: bool = False, runs: int | None = None) -> int:
    runs = runs or (1 if quick else 3)
    me = os.getpid()
    subreaper = become_subreaper()
    print(
        f"scrapy bench: Scrapy alone, plain, ADDONS={ADDON_SETTING}; {runs} run(s) of each, "
        f"alternating ({os.cpu_count()} CPUs; subreaper {'on' if subreaper else 'unavailable'})",
        flush=True,
    )
    workdir = Path(tempfile.mkdtemp(prefix="neardup-idle-"))
    (workdir / f"{PROBE_MODULE}.py").write_text(PROBE_SOURCE)
    (workdir / f"{ALONE_MODULE}.py").write_text(ALONE_SOURCE)
    env = dict(os.environ)
    for name in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT"):  # no project's settings
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), str(workdir), env.get("PYTHONPATH", "")) if p
    )
    results: dict[str, list[Run]] = {variant: [] for variant in VARIANTS}
    failed = False
    try:
        for _ in range(runs):
            for variant in VARIANTS:
                result = run_bench(variant, workdir, env, me)
                results[variant].append(result)
                print(describe(result), flush=True)
                for pid, cmd in sorted(result.leftover.items()):
                    failed = True
                    print(
                        f"FAILED: {LABELS[variant]} run left process {pid} running "
                        f"(killed): {cmd[:200]}",
                        flush=True,
                    )
    except BenchError as exc:
        print(f"ERROR: {exc}  (logs in {workdir})", file=sys.stderr, flush=True)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print()

    def med(variant: str, attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in results[variant])

    rows = [
        [
            LABELS[variant],
            f"{med(variant, 'pages'):.0f}",
            f"{med(variant, 'rate'):.1f}",
            f"{med(variant, 'peak') / MB:.0f}",
            f"{med(variant, 'end') / MB:.0f}",
            f"{med(variant, 'first_response'):.2f}",
        ]
        for variant in VARIANTS
    ]
    print_table(
        [
            "scrapy bench",
            "pages in 10 s",
            "pages/s crawling",
            "peak tree RSS MB",
            "tree RSS at close MB",
            "first response s",
        ],
        rows,
        title=f"Idle cost of the add-on (median of {runs} run(s) each)",
    )

    def extra(attr: str, base: str) -> float:
        return (med("add-on", attr) - med(base, attr)) / MB

    ratio = med("add-on", "pages") / med("plain", "pages")
    print(f"pages add-on/plain = {ratio:.2f} (target >= 0.90)")
    print(
        f"extra tree memory = {extra('peak', 'plain'):.0f} MB (target <= 60 MB); "
        f"at close {extra('end', 'plain'):.0f} MB"
    )
    print(
        f"against Scrapy alone: pages {med('add-on', 'pages') / med('alone', 'pages'):.2f}, "
        f"extra tree memory {extra('peak', 'alone'):.0f} MB at peak, "
        f"{extra('end', 'alone'):.0f} MB at close "
        f"(plain's own: {(med('plain', 'peak') - med('alone', 'peak')) / MB:.0f} MB, "
        f"importing scrapy_neardup for its neardup-stats command)"
    )
    print(
        f"first response with the add-on = {med('add-on', 'first_response'):.2f} s after the "
        f"spider opened (target ~1 s; plain {med('plain', 'first_response'):.2f} s)"
    )
    if failed:
        print("FAILED: processes were left running after scrapy bench exited (see above)")
    else:
        print("no process left behind after any run")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each")
    parser.add_argument("--runs", type=int, default=None, help="runs of each (default 3)")
    args = parser.parse_args(argv)
    sys.exit(run(args.quick, args.runs))


if __name__ == "__main__":
    main()
