"""Faults at the edges of a crawl, each met by ``scrapy crawl`` as a user runs it.

Every crawl here is ``scrapy crawl demo`` of the example project in a fresh process, with its
working directory in ``tmp_path`` (the project's feed and state files land there), against
the demo site on loopback or a closed loopback port.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "example_project")]),
    "SCRAPY_SETTINGS_MODULE": "demo.settings",
}
#: Noise a clean refusal must not print.
NOISE = ("Traceback", "Task exception was never retrieved", "Unhandled error in Deferred")


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrapy_crawl(
    cwd: Path, start_url: str, *settings: str, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """``scrapy crawl demo -a start_url=... -s NAME=VALUE...`` in ``cwd``."""
    args = [sys.executable, "-m", "scrapy", "crawl", "demo", "-a", f"start_url={start_url}"]
    for setting in ("TELNETCONSOLE_ENABLED=False", "NEARDUP_WORKERS=0", *settings):
        args += ["-s", setting]
    return subprocess.Popen(
        args,
        cwd=cwd,
        env={**ENV, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 120) -> str:
    """Wait for ``proc``; its stderr."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"the crawl did not end: {stderr[-4000:]}") from None
    return stderr


def feed(cwd: Path) -> list[dict]:
    path = cwd / "items.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_refused(proc: subprocess.Popen, message: str) -> str:
    stderr = finish(proc)
    assert proc.returncode != 0, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if "the crawl cannot start" in line]
    assert len(lines) == 1, stderr[-3000:]
    assert message in lines[0], lines[0]
    for noise in NOISE:
        assert noise not in stderr, stderr[-3000:]
    assert "Spider opened" not in stderr
    return stderr


# -- errors at start: one message, exit 1 ------------------------------------------------


def test_a_bad_setting_is_one_message_and_exit_1(tmp_path) -> None:
    proc = scrapy_crawl(tmp_path, f"http://127.0.0.1:{closed_port()}/", "NEARDUP_BACKEND=bogus")
    assert_refused(proc, "ConfigError: NEARDUP_BACKEND='bogus' is not allowed: one of")


def test_a_bad_setting_read_by_the_addon_is_one_message_and_exit_1(tmp_path) -> None:
    proc = scrapy_crawl(tmp_path, f"http://127.0.0.1:{closed_port()}/", "NEARDUP_ENABLED=maybe")
    assert_refused(proc, "ConfigError: NEARDUP_ENABLED='maybe' is not allowed")


def test_corrupt_state_is_one_message_and_exit_1(tmp_path) -> None:
    state = tmp_path / "job" / "neardup"
    state.mkdir(parents=True)
    (state / "content.state").write_bytes(b"NDUP\x09\x00garbage")
    proc = scrapy_crawl(
        tmp_path,
        f"http://127.0.0.1:{closed_port()}/",
        f"JOBDIR={tmp_path / 'job'}",
    )
    assert_refused(proc, f"StateError: {state / 'content.state'}: state format version 9")
    assert (state / "content.state").read_bytes() == b"NDUP\x09\x00garbage"
