"""Crash safety: a real crawl killed with SIGKILL at random points, resumed with the same JOBDIR.

Each run is a process of its own (tests/crash_runner.py) that logs every item's fate durably
as it happens. The demo site knows its ground truth, so after the kills and a last run to the
end, all runs' items together must hold every distinct document exactly once: nothing the
killed runs had recorded (URLs, kept documents, the requests still to crawl) may be lost
beyond the flush window, which is zero here (``NEARDUP_FLUSH_INTERVAL=0``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from crash_runner import kill_stopped, launch, stopped
from demo_site import Site

from scrapy_neardup.storage.statedb import STATE_FILE
from scrapy_neardup.urls import canonical_url, url_fingerprint

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example_project"


SETTINGS = {
    "CONCURRENT_REQUESTS": 2,
    "DOWNLOAD_DELAY": 0.01,
    "NEARDUP_WORKERS": 0,  # extraction inline: a slower crawl, and no worker start-up
    "NEARDUP_FLUSH_INTERVAL": 0,
}


def start(
    site_url: str,
    jobdir: Path,
    log: Path,
    stderr: Path,
    stop_at: int | None = None,
    settings: dict[str, object] | None = None,
) -> subprocess.Popen:
    args = {
        "start_url": site_url,
        "log": str(log),
        **({"stop_at": stop_at} if stop_at is not None else {}),
        "settings": {"JOBDIR": str(jobdir), "LOG_LEVEL": "INFO", **SETTINGS, **(settings or {})},
    }
    return launch(args, stderr, jobdir.parent)


def lines(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def killed_after(
    site_url: str,
    jobdir: Path,
    log: Path,
    stderr: Path,
    items: int,
    settings: dict[str, object] | None = None,
) -> bool:
    """Run a crawl and SIGKILL it right after it logged ``items`` items (0: when its spider
    opens). The run stops itself there (crash_runner.py's ``stop_at``), so the kill lands at
    that event however loaded the machine is. False if the run ended first."""
    proc = start(site_url, jobdir, log, stderr, stop_at=items, settings=settings)
    if not stopped(proc):
        return False
    kill_stopped(proc)
    return True


def read_state(state_dir: Path, sql: str) -> list[tuple]:
    """Rows of the state database a killed run left, read as the next run reads them."""
    db = sqlite3.connect((state_dir / STATE_FILE).absolute().as_uri() + "?mode=ro", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def recorded_urls(state_dir: Path) -> set[bytes]:
    """The URL keys recorded, from which a restart rebuilds the URL filter."""
    rows = read_state(state_dir, "select key, rest from url_keys")
    return {
        key.to_bytes(8, "little", signed=True) + rest.to_bytes(8, "little", signed=True)
        for key, rest in rows
    }


def doc_of(site: Site, url: str) -> str:
    return site.lookup(url).doc_id


def kept_as(site: Site, url: str) -> str:
    """What an item kept stands for: its document, or one of the document's near copies
    (kept beside it by the default decision)."""
    entry = site.lookup(url)
    near = site.near_copies()
    if entry.url in near:
        return entry.url
    return entry.of if entry.relation == "url-variant" and entry.of in near else entry.doc_id


def unfinished_at_kill(state_dir: Path, log: Path | None = None) -> set[str]:
    """The canonical URLs a killed run had recorded and not done: their items may be
    delivered again (at least once, see frontier.py). With the run's ``log``, also those of
    its items whose URL keys it had not committed yet: their requests went with them (they
    wait for a durable commit, up to NEARDUP_FLUSH_INTERVAL), so their pages are found again
    from the pages that linked them."""
    rows = read_state(state_dir, "select data from requests")
    urls = {canonical_url(json.loads(bytes(data)[17:])["url"]) for (data,) in rows}
    recorded = recorded_urls(state_dir)
    for record in lines(log) if log is not None else ():
        url = canonical_url(record.get("kept", {}).get("url", "") or "http://none/")
        if "kept" in record and url_fingerprint(url) not in recorded:
            urls.add(url)
    return urls


def check_ground_truth(
    site: Site,
    runs: list[list[dict]],
    killed: list[bool],
    unfinished: list[set[str] | None] | None = None,
) -> None:
    """Every distinct document kept, and kept once; dropped items match their original.

    A document whose item a killed run delivered while its request was not yet marked done is
    crawled again and kept again (at least once: see frontier.py). That is allowed for an item
    whose request the run left unfinished (``unfinished[n]``, read from the frontier journal
    at the kill), else only for an item among the last two a killed run delivered.
    """
    kept: dict[str, list[tuple[int, int]]] = {}
    for n, records in enumerate(runs):
        for i, r in enumerate(records):
            if "kept" in r:
                kept.setdefault(kept_as(site, r["kept"]["url"]), []).append((n, i))
            elif "dropped" in r:
                original = r["reason"].split("near-duplicate of ", 1)[1].split(" (", 1)[0]
                assert doc_of(site, r["dropped"]["url"]) == doc_of(site, original), r
    docs = {doc_of(site, r["kept"]["url"]) for records in runs for r in records if "kept" in r}
    lost = set(site.expected_unique_docs()) - docs
    assert not lost, f"documents lost: {sorted(lost)}"
    assert docs == set(site.expected_unique_docs())
    for doc, places in kept.items():
        for n, i in places[:-1]:
            left = unfinished[n] if unfinished is not None else None
            in_window = killed[n] and (
                i >= len(runs[n]) - 2
                or (left is not None and canonical_url(runs[n][i]["kept"]["url"]) in left)
            )
            assert in_window, f"{doc} kept {len(places)} times, its request done before a kill"


# More seeds for a longer run: NEARDUP_CRASH_SEEDS=1-50 python -m pytest tests/test_crash.py
_FIRST, _, _LAST = os.environ.get("NEARDUP_CRASH_SEEDS", "1").partition("-")
SEEDS = list(range(int(_FIRST), int(_LAST or _FIRST) + 1))


@pytest.mark.parametrize("seed", SEEDS)
def test_sigkill_at_random_points_loses_nothing(seed, site, site_url, tmp_path) -> None:
    rng = random.Random(seed)
    jobdir = tmp_path / "job"
    stderr = tmp_path / "stderr.log"
    logs: list[Path] = []
    killed: list[bool] = []
    unfinished: list[set[str] | None] = []
    for n in range(3):
        log = tmp_path / f"run{n}.jsonl"
        logs.append(log)
        # Kill points spread over the crawl: when the spider opens, after one of its items
        # (other requests under way).
        killed.append(killed_after(site_url, jobdir, log, stderr, rng.randint(0, 15)))
        unfinished.append(unfinished_at_kill(jobdir / "neardup") if killed[-1] else None)
        records = [r for path in logs for r in lines(path)]
        urls = recorded_urls(jobdir / "neardup")
        for r in records:
            item = r.get("kept") or r.get("dropped")
            if item is None:
                continue
            fingerprint = url_fingerprint(canonical_url(item["url"]))
            assert fingerprint in urls, f"URL of a delivered item was lost: {item['url']}"
        kept_docs = {doc_of(site, r["kept"]["url"]) for r in records if "kept" in r}
        heads = read_state(jobdir / "neardup", "select count(*) from heads")[0][0]
        assert heads >= len(kept_docs)  # every item delivered has its document recorded
    assert sum(killed) >= 2, "the crawl ended before it could be killed; slow it down"
    for n in range(3, 6):
        log = tmp_path / f"run{n}.jsonl"
        logs.append(log)
        killed.append(False)
        unfinished.append(None)
        proc = start(site_url, jobdir, log, stderr)
        assert proc.wait(timeout=120) == 0, stderr.read_text()[-3000:]
        final = lines(log)[-1]["stats"]
        if final.get("finish_reason") == "finished":
            break
    runs = [[r for r in lines(path) if "stats" not in r] for path in logs]
    check_ground_truth(site, runs, killed, unfinished)
    assert "Traceback" not in stderr.read_text()


#: Items the run delivers before it is stopped, as Ctrl-C stops it, then killed in the close.
CLOSE_AT = 6


def test_a_kill_at_each_write_of_the_close_loses_nothing(site, site_url, tmp_path) -> None:
    """The crawl is stopped gracefully (SIGTERM, as Ctrl-C), and killed with SIGKILL at the
    first write of its close, then in a new JOBDIR at the second, and so on until a close
    completes: after each kill the same command must resume and lose nothing. With a long
    flush interval, so that the close has everything to write (a state written there
    before the requests it stands for lost 46 of the site's 54 documents)."""
    closes = 0
    for write in range(1, 60):
        tmp = tmp_path / f"write{write}"
        tmp.mkdir()
        jobdir, stderr = tmp / "job", tmp / "stderr.log"
        logs = [tmp / "run0.jsonl"]
        settings = {**SETTINGS, "NEARDUP_FLUSH_INTERVAL": 30.0}
        args = {
            "start_url": site_url,
            "log": str(logs[0]),
            "close_at": CLOSE_AT,
            "kill_at_write": write,
            "settings": {"JOBDIR": str(jobdir), "LOG_LEVEL": "INFO", **settings},
        }
        code = launch(args, stderr, tmp).wait(timeout=120)
        if code == 0:
            closes += 1  # the close has fewer writes than this: each one was killed once
            break
        assert code == -signal.SIGKILL, stderr.read_text()[-3000:]
        unfinished = unfinished_at_kill(jobdir / "neardup", logs[0])
        logs.append(tmp / "run1.jsonl")
        args = {**args, "log": str(logs[1])}
        del args["close_at"], args["kill_at_write"]
        assert launch(args, stderr, tmp).wait(timeout=120) == 0, stderr.read_text()[-3000:]
        assert lines(logs[1])[-1]["stats"]["finish_reason"] == "finished"
        runs = [[r for r in lines(path) if "stats" not in r] for path in logs]
        check_ground_truth(site, runs, [True, False], [unfinished, None])
        assert "Traceback" not in stderr.read_text()
    assert closes == 1 and write > 3, "the close was never killed: nothing tested"


def test_a_crash_after_a_clean_resume_does_not_hang_on_scrapys_queue(
    site, site_url, tmp_path
) -> None:
    """Stopped cleanly (Scrapy writes its JOBDIR queue), resumed, then SIGKILLed: Scrapy's
    queue is then inconsistent and Scrapy alone hangs on it (OSError at every pop). The
    plugin moves it aside and schedules the requests it journaled, and loses nothing."""
    jobdir = tmp_path / "job"
    stderr = tmp_path / "stderr.log"
    logs = [tmp_path / f"run{n}.jsonl" for n in range(3)]
    first = start(site_url, jobdir, logs[0], stderr, stop_at=5)
    assert stopped(first)
    first.send_signal(signal.SIGTERM)  # pending until the run goes on: a clean stop there
    first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=60) == 0
    assert (jobdir / "requests.queue").exists(), "no Scrapy queue to resume: nothing tested"
    assert killed_after(site_url, jobdir, logs[1], stderr, 5)
    unfinished = unfinished_at_kill(jobdir / "neardup")
    last = start(site_url, jobdir, logs[2], stderr)
    assert last.wait(timeout=120) == 0, stderr.read_text()[-3000:]
    assert lines(logs[2])[-1]["stats"]["finish_reason"] == "finished"
    log = stderr.read_text()
    assert "Errno 22" not in log
    assert "Scrapy's request queue" in log and (jobdir / "requests.queue.crashed").exists()
    runs = [[r for r in lines(path) if "stats" not in r] for path in logs]
    check_ground_truth(site, runs, [False, True, False], [None, unfinished, None])


# -- the Redis state with a JOBDIR -----------------------------------------------------------


def redis_settings(redis_url: str, prefix: str) -> dict[str, object]:
    from scrapy_neardup.storage import redis_client

    client = redis_client.connect(redis_url)
    redis_client.delete_prefix(client, prefix)
    client.close()
    return {
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": redis_url,
        "NEARDUP_KEY_PREFIX": prefix,
    }


def test_redis_storage_with_a_jobdir_loses_nothing_to_kills(
    site, site_url, redis_url, tmp_path
) -> None:
    """URLs and documents in Redis, the frontier in the JOBDIR: killed twice, the same
    command resumes, and every document is delivered."""
    settings = redis_settings(redis_url, "crash-redis")
    jobdir, stderr = tmp_path / "job", tmp_path / "stderr.log"
    logs: list[Path] = []
    killed: list[bool] = []
    unfinished: list[set[str] | None] = []
    for n, items in enumerate((3, 9)):
        logs.append(tmp_path / f"run{n}.jsonl")
        killed.append(killed_after(site_url, jobdir, logs[-1], stderr, items, settings))
        unfinished.append(unfinished_at_kill(jobdir / "neardup") if killed[-1] else None)
    assert all(killed), "the crawl ended before it could be killed; slow it down"
    for n in range(2, 5):
        logs.append(tmp_path / f"run{n}.jsonl")
        killed.append(False)
        unfinished.append(None)
        proc = start(site_url, jobdir, logs[-1], stderr, settings=settings)
        assert proc.wait(timeout=120) == 0, stderr.read_text()[-3000:]
        if lines(logs[-1])[-1]["stats"].get("finish_reason") == "finished":
            break
    runs = [[r for r in lines(path) if "stats" not in r] for path in logs]
    check_ground_truth(site, runs, killed, unfinished)
    assert "Traceback" not in stderr.read_text()


def test_a_new_jobdir_on_a_prefix_that_holds_its_start_urls_warns(
    site_url, redis_url, tmp_path
) -> None:
    settings = redis_settings(redis_url, "crash-redis-again")
    stderr = tmp_path / "stderr.log"
    first = start(site_url, tmp_path / "job1", tmp_path / "run0.jsonl", stderr, settings=settings)
    assert first.wait(timeout=120) == 0, stderr.read_text()[-3000:]
    assert "holds its start URLs already" not in stderr.read_text()
    again = start(site_url, tmp_path / "job2", tmp_path / "run1.jsonl", stderr, settings=settings)
    assert again.wait(timeout=120) == 0, stderr.read_text()[-3000:]
    warnings = [line for line in stderr.read_text().splitlines() if "start URLs already" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0]
    assert "under prefix 'crash-redis-again'" in warnings[0]
