"""A JOBDIR is data: damage, crafted files and links stop the next start, naming the file.

A real crawl of the demo site (tests/crash_runner.py, as in tests/test_crash.py) is stopped
cleanly once, then resumed and killed with SIGKILL. Each case changes a copy of that JOBDIR
the way testers did (a damaged or truncated database, a trigger added to it, a symbolic link,
another spider's state, the files of the earlier release) and starts again: the start must
fail with a StateError naming the file, before the spider opens, and leave the file as it is;
nothing outside the JOBDIR is touched.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_runner import launch

from scrapy_neardup.storage.statedb import STATE_FILE

SETTINGS = {
    "CONCURRENT_REQUESTS": 2,
    "DOWNLOAD_DELAY": 0.01,
    "NEARDUP_WORKERS": 0,
    "NEARDUP_FLUSH_INTERVAL": 0,
    "LOG_LEVEL": "INFO",
}


def start(site_url: str, jobdir: Path, log: Path, stderr: Path) -> subprocess.Popen:
    args = {"start_url": site_url, "log": str(log), "settings": {"JOBDIR": str(jobdir), **SETTINGS}}
    return launch(args, stderr, jobdir.parent)


def items(log: Path) -> int:
    """Items a run delivered (kept or dropped) so far."""
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(1 for line in lines if not line.startswith('{"stats"'))


def wait_for(proc: subprocess.Popen, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"the crawl ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within a minute"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def killed(site, site_url, tmp_path_factory) -> Path:
    """A JOBDIR stopped cleanly once, then resumed and killed with SIGKILL."""
    tmp = tmp_path_factory.mktemp("killed")
    jobdir, stderr = tmp / "job", tmp / "stderr.log"
    proc = start(site_url, jobdir, tmp / "run0.jsonl", stderr)
    wait_for(proc, lambda: items(tmp / "run0.jsonl") >= 5, "5 items")
    proc.send_signal(signal.SIGTERM)  # Scrapy's graceful stop
    assert proc.wait(timeout=60) == 0, stderr.read_text()[-3000:]
    proc = start(site_url, jobdir, tmp / "run1.jsonl", stderr)
    wait_for(proc, lambda: items(tmp / "run1.jsonl") >= 5, "5 more items")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert "Traceback" not in stderr.read_text()
    return jobdir


def overwrite(at: int, data: bytes) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with path.open("r+b") as fh:
            fh.seek(at)
            fh.write(data)

    return damage


def break_tree_pages(path: Path) -> None:
    """Every page but the first (the header and the schema) overwritten: whatever the layout
    of the killed crawl's database, and whichever pages its WAL holds newer copies of, the
    tables a start reads meet a broken page."""
    overwrite(4096, b"\xa5" * (path.stat().st_size - 4096))(path)


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def execute(sql: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        db = sqlite3.connect(path)
        db.executescript(sql)
        db.close()

    return damage


def link_to_outside(path: Path) -> None:
    """The file replaced by a symbolic link to a file outside the JOBDIR."""
    outside = path.parents[2] / "outside"
    outside.write_bytes(b"precious")
    path.unlink()
    path.symlink_to(outside)


def old_release_file(path: Path) -> None:
    path.write_bytes(b"\x10\x00\x00\x00" + bytes(20))


#: case: (file damaged, relative to the JOBDIR; the damage; what the error says)
CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "header broken": (STATE_FILE, overwrite(0, b"this is no database at all"), "not a database"),
    "tree pages broken": (STATE_FILE, break_tree_pages, "malformed"),
    "truncated": (STATE_FILE, truncate, "truncated: |malformed"),  # what the WAL does not hold
    "trigger added": (
        STATE_FILE,
        execute(
            "create trigger grow after insert on url_keys begin "
            "insert into texts values (hex(randomblob(16)), zeroblob(1000000)); end;"
        ),
        "not ours: trigger grow",
    ),
    "another spider": (
        STATE_FILE,
        execute("update meta set value = 'other' where name = 'spider'"),
        "its spider is 'other', this crawl's 'demo'",
    ),
    "database linked": (STATE_FILE, link_to_outside, "is a symbolic link"),
    "lock linked": ("lock", link_to_outside, "is a symbolic link"),
    "earlier release": ("urls.journal", old_release_file, "format of an earlier release"),
}


def kept_as_they_are(jobdir: Path) -> list[Path]:
    """The files a refused start must not change: the database and its WAL, and whatever
    the damage put there (not the lock, which takes the PID of whoever holds it, nor
    SQLite's shared-memory index)."""
    state = jobdir / "neardup"
    return [
        p for p in state.iterdir() if p.is_file() and p.name not in ("lock", f"{STATE_FILE}-shm")
    ]


def test_damage_stops_the_next_start_naming_the_file(killed, site_url, tmp_path) -> None:
    import shutil

    runs = {}
    for case, (name, damage, _) in CASES.items():
        jobdir = tmp_path / case.replace(" ", "-") / "job"
        shutil.copytree(killed, jobdir, symlinks=True)
        path = jobdir / "neardup" / name
        if not path.exists():
            path.touch()
        damage(path)
        stderr = tmp_path / f"{case}.stderr"
        log = tmp_path / f"{case}.jsonl"
        before = {p: p.read_bytes() for p in kept_as_they_are(jobdir)}
        runs[case] = (path, before, start(site_url, jobdir, log, stderr), stderr, log)
    for _, _, proc, _, _ in runs.values():
        proc.wait(timeout=120)
    for case, (path, before, _, stderr, log) in runs.items():
        err = stderr.read_text()
        message = CASES[case][2]
        assert f"StateError: {path}: " in err, f"{case}: {err[-3000:]}"
        line = err.split(f"StateError: {path}: ", 1)[1].splitlines()[0]
        assert re.search(message, line), (case, line)
        assert "Spider opened" not in err, case  # stopped before the crawl began
        assert items(log) == 0, case
        after = {p: p.read_bytes() for p in before}
        assert after == before, f"{case}: a file was changed"
        outside = path.parents[2] / "outside"
        assert not outside.exists() or outside.read_bytes() == b"precious", case


def test_a_linked_state_directory_is_refused(killed, site_url, tmp_path) -> None:
    import shutil

    jobdir = tmp_path / "job"
    jobdir.mkdir()
    shutil.copytree(killed / "neardup", tmp_path / "elsewhere")
    (jobdir / "neardup").symlink_to(tmp_path / "elsewhere")
    stderr, log = tmp_path / "stderr.log", tmp_path / "run.jsonl"
    start(site_url, jobdir, log, stderr).wait(timeout=120)
    err = stderr.read_text()
    assert f"StateError: {jobdir / 'neardup'}: is a symbolic link" in err, err[-3000:]
    assert items(log) == 0


def test_the_undamaged_copy_starts(killed, site_url, tmp_path) -> None:
    """The control: the same JOBDIR, undamaged, loads and opens the spider."""
    import shutil

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
