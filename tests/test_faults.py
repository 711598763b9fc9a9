"""Faults at the edges of a crawl, each met by ``scrapy crawl`` as a user runs it.

Every crawl here is ``scrapy crawl demo`` of the example project in a fresh process, with its
working directory in ``tmp_path`` (the project's feed and state files land there), against
the demo site on loopback or a closed loopback port.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from crawl_runner import finish

from scrapy_neardup import start
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.start import refuse_start

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


def test_a_jobdir_of_the_previous_release_is_one_message_and_exit_1(tmp_path) -> None:
    """The earlier release's snapshots and journals (after a crash: its journals and their
    lengths, its URL store and its lock): refused in one line naming the format."""
    state = tmp_path / "job" / "neardup"
    state.mkdir(parents=True)
    names = ("urls.journal", "urls.journal.length", "content.journal", "frontier.journal")
    for name in (*names, "urls.sqlite", "lock"):
        (state / name).write_bytes(b"\x10\x00\x00\x00" + bytes(20))
    before = {path.name: path.read_bytes() for path in state.iterdir()}
    proc = scrapy_crawl(
        tmp_path,
        f"http://127.0.0.1:{closed_port()}/",
        f"JOBDIR={tmp_path / 'job'}",
    )
    line = assert_refused(
        proc,
        f"StateError: {state / 'urls.journal'}: state in the format of an earlier release of "
        "scrapy-neardup (snapshots and journals), which this one does not read: finish that "
        "crawl with the release that wrote it, or start this one with a new JOBDIR",
    )
    assert line
    assert {path.name: path.read_bytes() for path in state.iterdir()} == before


def test_a_refusal_filters_asyncio_and_twisted_only_until_its_record_came(
    caplog, monkeypatch
) -> None:
    """The filter that leaves out asyncio's record of a refused start's error is on the
    asyncio and Twisted loggers from the refusal until that record, and gone after it."""
    loggers = [logging.getLogger(name) for name in ("asyncio", "twisted")]
    # other tests of this process may have refused a start whose record never came
    monkeypatch.setattr(start, "_pending", [])
    for log in loggers:
        monkeypatch.setattr(log, "filters", [])
    exc = ConfigError("NEARDUP_BACKEND", "bogus", "one of minhash, simhash")
    with caplog.at_level(logging.ERROR):
        refuse_start(exc)
    assert "the crawl cannot start: ConfigError" in caplog.text
    assert all(len(log.filters) == 1 for log in loggers)
    unrelated = loggers[0].makeRecord("asyncio", logging.ERROR, __file__, 1, "other", (), None)
    assert loggers[0].filter(unrelated)
    never_retrieved = loggers[0].makeRecord(
        "asyncio", logging.ERROR, __file__, 1, "Task exception was never retrieved", (),
        (ConfigError, exc, None),
    )  # fmt: skip
    assert not loggers[0].filter(never_retrieved)
    assert [log.filters for log in loggers] == [[], []]


# -- two crawls on one JOBDIR ------------------------------------------------------------


def wait_until(condition, what: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Wait for ``condition()``; fails at once if ``proc`` ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"the crawl ended before {what}: {finish(proc)[-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)


def test_a_second_crawl_on_a_jobdir_in_use_is_refused_until_the_first_dies(tmp_path) -> None:
    # A server that accepts no connection: the first crawl waits on its start page.
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    url = f"http://127.0.0.1:{hung.getsockname()[1]}/"
    jobdir = tmp_path / "job"
    lock = jobdir / "neardup" / "lock"
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    first = scrapy_crawl(first_dir, url, f"JOBDIR={jobdir}")
    try:
        wait_until(
            lambda: lock.exists() and lock.read_text().strip() == str(first.pid),
            "the first crawl took the lock",
            first,
        )
        second = scrapy_crawl(second_dir, url, f"JOBDIR={jobdir}")
        assert_refused(
            second,
            f"StateError: {jobdir / 'neardup'}: in use by another crawl (process {first.pid},",
        )
        assert first.poll() is None  # the first crawl goes on
    finally:
        first.send_signal(signal.SIGKILL)
        finish(first)
        hung.close()
    # The dead crawl's lock file is left with its PID; the kernel released its flock.
    assert lock.read_text().strip() == str(first.pid)
    third = scrapy_crawl(second_dir, url, f"JOBDIR={jobdir}")
    stderr = finish(third)
    assert third.returncode == 0, stderr[-3000:]
    assert "the crawl cannot start" not in stderr
    assert "Spider opened" in stderr


# -- a Redis out of reach at start -------------------------------------------------------


@pytest.mark.parametrize("policy", ["fail-open", "fail-closed"])
def test_a_redis_out_of_reach_at_start_stops_the_crawl_naming_the_setting(
    tmp_path, site_url, policy
) -> None:
    redis_url = f"redis://:secret@127.0.0.1:{closed_port()}/0"
    started = time.monotonic()
    proc = scrapy_crawl(
        tmp_path,
        site_url,
        "NEARDUP_STORAGE=redis",
        f"NEARDUP_REDIS_URL={redis_url}",
        "NEARDUP_REDIS_TIMEOUT=1.5",
        f"NEARDUP_REDIS_ON_ERROR={policy}",
    )
    stderr = finish(proc)
    assert proc.returncode != 0, stderr[-3000:]
    assert time.monotonic() - started >= 1.5  # tried for NEARDUP_REDIS_TIMEOUT
    lines = [line for line in stderr.splitlines() if "the crawl cannot start" in line]
    assert len(lines) == 1, stderr[-3000:]
    masked = redis_url.replace("secret", "***")
    assert f"StorageError: NEARDUP_REDIS_URL='{masked}': Redis cannot be reached" in lines[0]
    assert "NEARDUP_REDIS_TIMEOUT" in lines[0]
    assert "secret" not in stderr
    for noise in NOISE:
        assert noise not in stderr, stderr[-3000:]
    assert "Crawled (" not in stderr  # not one page
    assert feed(tmp_path) == []


# -- a full disk under JOBDIR ------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 120 KiB tmpfs (root only): the JOBDIR of a crawl of the demo site outgrows it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=120k", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def stats_value(stderr: str, name: str) -> str | None:
    """A value from Scrapy's stats dump at the end of the log."""
    for line in stderr.splitlines():
        if line.strip().startswith(f"'{name}':"):
            return line.split(":", 1)[1].strip().rstrip(",}").strip("'")
    return None


def test_a_full_disk_stops_the_crawl_and_the_same_command_resumes_it(
    tmp_path, small_disk, site, site_url
) -> None:
    from collections import Counter

    run = tmp_path / "run"  # the feed is on another disk, with space
    run.mkdir()
    jobdir = small_disk / "job"
    command = (run, site_url, f"JOBDIR={jobdir}", "NEARDUP_KEEP_TEXT=0")
    stderr = finish(scrapy_crawl(*command))
    assert stats_value(stderr, "finish_reason") == "neardup_disk_full", stderr[-3000:]
    errors = [line for line in stderr.splitlines() if "no space left to write" in line]
    assert len(errors) == 1, stderr[-3000:]
    assert f"{jobdir / 'neardup'}/" in errors[0]  # the file
    assert "Free space on that disk, then run the same command again" in errors[0]
    # Scrapy's own writes to JOBDIR at close (its disk queue, SpiderState) may fail on the
    # full disk too, with tracebacks of their own (asyncio's "never retrieved" among them),
    # depending on where the disk filled up: only the plugin's part is judged here
    assert "scrapy_neardup" not in "".join(  # no traceback through the plugin
        line for line in stderr.splitlines() if line.startswith("  File ")
    )
    first = feed(run)
    assert first  # it crawled until the disk was full
    assert len({site.lookup(item["url"]).doc_id for item in first}) < len(
        site.expected_unique_docs()
    )

    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    stderr = finish(scrapy_crawl(*command))
    assert stats_value(stderr, "finish_reason") == "finished", stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    # Every distinct document of the site reached one feed or the other. Items whose end
    # the full disk kept from being recorded are delivered again, as after a crash.
    ids = Counter(site.lookup(item["url"]).doc_id for item in first + feed(run))
    assert set(ids) == set(site.expected_unique_docs())


def test_a_full_disk_under_the_feed_is_named_as_the_feeds(tmp_path, small_disk, site_url) -> None:
    """The feed fills its disk, the state's has room: the error names the feed file."""
    subprocess.run(["mount", "-o", "remount,size=4k", str(small_disk)], check=True)
    stderr = finish(scrapy_crawl(small_disk, site_url, f"JOBDIR={tmp_path / 'job'}"))
    # (the finish reason is neardup_disk_full, or "finished" when the disk filled as the
    # crawl was closing: the feed's last lines are written at the close)
    errors = [line for line in stderr.splitlines() if "no space left to write" in line]
    assert len(errors) == 1, stderr[-3000:]
    assert f"no space left to write {small_disk / 'items.jsonl'} (" in errors[0]


def test_a_database_on_a_full_disk_raises_and_keeps_what_was_committed(small_disk) -> None:
    import errno

    from scrapy_neardup.storage.statedb import STATE_FILE, StateDB, read_only
    from scrapy_neardup.urls import url_fingerprint

    db = StateDB(small_disk / STATE_FILE)
    db.open({})
    db.start_writing()
    db.add_key(url_fingerprint("https://example.com/first"))
    db.commit(durable=True)
    with pytest.raises(OSError) as info:
        for n in range(100_000):
            db.put_text(f"https://example.com/{n}", "text " * 200)
            if n % 10 == 0:
                db.commit()
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(db.path)
    db.abandon()
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    db = read_only(small_disk / STATE_FILE)
    assert db.has_key(url_fingerprint("https://example.com/first"))
    db.abandon()
