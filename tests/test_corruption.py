"""Damage a crash cannot do stops the next start, naming the file; the file is left as it is.

A real crawl of the demo site (tests/crash_runner.py, as in tests/test_crash.py) is stopped
cleanly once, which writes the snapshots, then resumed and killed with SIGKILL once every
journal's length has been recorded. Each case damages one file of a copy of that JOBDIR the
way testers did (a flipped byte, a journal cut to nothing, a broken SQLite file) and starts
again: the start must fail with a StateError naming the file, before the spider opens,
without changing the file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_runner import launch

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "CONCURRENT_REQUESTS": 2,
    "DOWNLOAD_DELAY": 0.01,
    "NEARDUP_WORKERS": 0,
    "NEARDUP_FLUSH_INTERVAL": 0,
    "LOG_LEVEL": "INFO",
}
JOURNALS = ("urls.journal", "content.journal", "frontier.journal")


def start(site_url: str, jobdir: Path, log: Path, stderr: Path) -> subprocess.Popen:
    args = {"start_url": site_url, "log": str(log), "settings": {"JOBDIR": str(jobdir), **SETTINGS}}
    return launch(args, stderr, jobdir.parent)


def items(log: Path) -> int:
    """Items a run delivered (kept or dropped) so far."""
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(1 for line in lines if not line.startswith('{"stats"'))


def recorded_length(journal: Path) -> int:
    side = journal.with_name(journal.name + ".length")
    raw = side.read_bytes() if side.exists() else b""
    return int.from_bytes(raw[4:12], "little") if len(raw) == 16 else 0


def wait_for(proc: subprocess.Popen, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"the crawl ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within a minute"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def killed(site, site_url, tmp_path_factory) -> Path:
    """A JOBDIR with snapshots (a clean stop) and journals a SIGKILL left behind."""
    tmp = tmp_path_factory.mktemp("killed")
    jobdir, stderr = tmp / "job", tmp / "stderr.log"
    proc = start(site_url, jobdir, tmp / "run0.jsonl", stderr)
    wait_for(proc, lambda: items(tmp / "run0.jsonl") >= 5, "5 items")
    proc.send_signal(signal.SIGTERM)  # Scrapy's graceful stop: the state is snapshotted
    assert proc.wait(timeout=60) == 0, stderr.read_text()[-3000:]
    state = jobdir / "neardup"
    assert (state / "urls.bloom").exists() and (state / "content.state").exists()
    proc = start(site_url, jobdir, tmp / "run1.jsonl", stderr)
    # Lengths are recorded about once a second: wait until each journal has one.
    wait_for(
        proc,
        lambda: all(recorded_length(state / name) > 0 for name in JOURNALS),
        "recorded journal lengths",
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert "Traceback" not in stderr.read_text()
    return jobdir


def flip_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))


def flip_synced(journal: Path) -> None:
    """A byte flipped halfway into what the journal had synced: corruption, never a torn
    tail (a flip past the synced length, with no valid record after it, would be one)."""
    data = bytearray(journal.read_bytes())
    data[recorded_length(journal) // 2] ^= 0x20
    journal.write_bytes(bytes(data))


def break_sqlite_header(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.write(b"this is no database at all")


CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "frontier flipped": ("frontier.journal", flip_synced, "corrupt record at byte offset"),
    "content flipped": ("content.journal", flip_synced, "corrupt record at byte offset"),
    "urls flipped": ("urls.journal", flip_synced, "corrupt record at byte offset"),
    "frontier emptied": (
        "frontier.journal",
        lambda path: path.write_bytes(b""),
        "is 0 bytes long, but",
    ),
    "sqlite broken": ("urls.sqlite", break_sqlite_header, "file is not a database"),
    "content.state flipped": ("content.state", flip_middle, "checksum mismatch"),
    "urls.bloom flipped": ("urls.bloom", flip_middle, "checksum mismatch"),
}


def test_damage_stops_the_next_start_naming_the_file(killed, site_url, tmp_path) -> None:
    state = killed / "neardup"
    for name in JOURNALS:
        assert recorded_length(state / name) > 0
        assert (state / name).stat().st_size >= recorded_length(state / name)
    runs = {}
    for case, (name, damage, _) in CASES.items():
        jobdir = tmp_path / case.replace(" ", "-") / "job"
        shutil.copytree(killed, jobdir)
        path = jobdir / "neardup" / name
        damage(path)
        stderr = tmp_path / f"{case}.stderr"
        log = tmp_path / f"{case}.jsonl"
        runs[case] = (path, path.read_bytes(), start(site_url, jobdir, log, stderr), stderr, log)
    for case, (path, damaged, proc, stderr, log) in runs.items():
        proc.wait(timeout=120)
        err = stderr.read_text()
        message = CASES[case][2]
        assert f"StateError: {path}: " in err, f"{case}: {err[-3000:]}"
        assert message in err.split(f"StateError: {path}: ", 1)[1].splitlines()[0], case
        assert "Spider opened" not in err, case  # stopped before the crawl began
        assert items(log) == 0, case
        assert path.read_bytes() == damaged, f"{case}: the damaged file was changed"


def test_the_undamaged_copy_starts(killed, site_url, tmp_path) -> None:
    """The control: the same JOBDIR, undamaged, loads and opens the spider."""
    jobdir = tmp_path / "job"
    shutil.copytree(killed, jobdir)
    stderr, log = tmp_path / "stderr.log", tmp_path / "run.jsonl"
    proc = start(site_url, jobdir, log, stderr)
    wait_for(proc, lambda: "Spider opened" in stderr.read_text(), "the spider to open")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    err = stderr.read_text()
    assert f"scrapy-neardup: state in {jobdir / 'neardup'}: " in err
    assert "StateError" not in err
