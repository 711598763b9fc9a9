"""Feed exports survive SIGKILL: a real crawl writing Scrapy's FEEDS, killed again and again.

Each run is a process of its own (``tests/crash_runner.py``) with ``JOBDIR`` and its own
JSON-lines feed file; it is killed with SIGKILL at random events (when its spider opens,
right after one of its first items, while other requests are under way) and resumed with the
same JOBDIR, then run to the end. The demo site knows its ground truth: every distinct
document must be in the union of the feed files (nothing lost), and every item the plugin
dropped must be a duplicate of a document that is in them. Items delivered twice are counted
(at least once is the promise: an item whose request was not yet durably done when the kill
came is delivered again).

The figures of each series are printed (``python -m pytest -s tests/test_feed_crash.py``);
more seeds with ``NEARDUP_FEED_CRASH_SEEDS=1-5``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from crash_runner import feed_lines as lines
from crash_runner import kill_stopped, launch, stopped

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example_project"
SETTINGS = {
    "CONCURRENT_REQUESTS": 2,
    # slow enough that a fast machine cannot finish the crawl between two kills
    "DOWNLOAD_DELAY": 0.05,
    "NEARDUP_WORKERS": 0,  # extraction inline: a slower crawl, and no worker start-up
}
KILLS = 10

_FIRST, _, _LAST = os.environ.get("NEARDUP_FEED_CRASH_SEEDS", "1").partition("-")
SEEDS = list(range(int(_FIRST), int(_LAST or _FIRST) + 1))


@dataclass
class Series:
    """What a series of killed runs and the final run(s) delivered."""

    kills: int = 0
    runs: int = 0
    finished: bool = False
    feed: list[dict[str, Any]] = field(default_factory=list)  # every feed file, in order
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (URL, reason)


def start(
    site_url: str,
    tmp: Path,
    n: int,
    settings: dict[str, Any],
    spider: str | None = None,
    stop_at: int | None = None,
    stop_at_kept: int | None = None,
) -> subprocess.Popen:
    feed = tmp / "feeds" / f"run{n}.jsonl"
    args = {
        "start_url": site_url,
        **({"spider": spider} if spider else {}),
        **({"stop_at": stop_at} if stop_at is not None else {}),
        **({"stop_at_kept": stop_at_kept} if stop_at_kept is not None else {}),
        "log": str(tmp / f"fates{n}.jsonl"),
        "settings": {
            "JOBDIR": str(tmp / "job"),
            "FEEDS": {str(feed): {"format": "jsonlines"}},
            **SETTINGS,
            **settings,
        },
    }
    return launch(args, tmp / "stderr.log", tmp)


def kill_at_random(
    site_url: str,
    tmp: Path,
    n: int,
    settings: dict[str, Any],
    spider: str | None,
    rng: random.Random,
) -> bool:
    """Start run ``n`` and SIGKILL it at a random event: when its spider opens (before any
    request), or right after its first to fourth item. The run stops itself there
    (crash_runner.py's ``stop_at``), so the kill lands at that event however loaded the
    machine is. False if the run ended first."""
    stop_at = 0 if rng.random() < 0.2 else rng.randint(1, 4)
    proc = start(site_url, tmp, n, settings, spider, stop_at)
    if not stopped(proc):
        return False
    kill_stopped(proc)
    return True


def crash_series(
    site_url: str,
    tmp: Path,
    seed: int,
    settings: dict[str, Any],
    spider: str | None = None,
    kills: int = KILLS,
) -> Series:
    """Start, kill and resume until ``kills`` kills, then run to the end."""
    rng = random.Random(seed)
    series = Series()
    n = 0
    while series.kills < kills and n < kills + 5:
        series.kills += kill_at_random(site_url, tmp, n, settings, spider, rng)
        n += 1
    for _ in range(3):
        proc = start(site_url, tmp, n, settings, spider)
        assert proc.wait(timeout=120) == 0, (tmp / "stderr.log").read_text()[-3000:]
        stats = lines(tmp / f"fates{n}.jsonl")[-1]["stats"]
        n += 1
        if stats.get("finish_reason") == "finished":
            series.finished = True
            break
    series.runs = n
    for i in range(n):
        series.feed += lines(tmp / "feeds" / f"run{i}.jsonl")
        series.dropped += [
            (r["dropped"]["url"], r["reason"])
            for r in lines(tmp / f"fates{i}.jsonl")
            if "dropped" in r
        ]
    return series


def figures(site: Any, series: Series) -> dict[str, int]:
    """Documents lost from the feed, documents kept under two URLs, URLs delivered twice."""
    by_url = Counter(item["url"] for item in series.feed)
    urls_of_doc: dict[str, set[str]] = {}
    for url in by_url:
        urls_of_doc.setdefault(site.lookup(url).doc_id, set()).add(url)
    expected = site.expected_unique_docs()
    return {
        "kills": series.kills,
        "runs": series.runs,
        "documents": len(expected),
        "lost": len(expected - set(urls_of_doc)),
        "duplicates_kept": sum(len(urls) - 1 for urls in urls_of_doc.values()),
        "double_deliveries": sum(count - 1 for count in by_url.values()),
    }


def report(name: str, numbers: dict[str, int]) -> None:
    print(f"\n{name}: " + ", ".join(f"{k}={v}" for k, v in numbers.items()))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("interval", [1.0, 0])
def test_killed_crawls_lose_no_feed_item(interval, seed, site, site_url, tmp_path) -> None:
    series = crash_series(site_url, tmp_path, seed, {"NEARDUP_FLUSH_INTERVAL": interval})
    numbers = figures(site, series)
    report(f"plugin, NEARDUP_FLUSH_INTERVAL={interval}, seed {seed}", numbers)
    assert series.kills >= KILLS, "the crawl ended before it could be killed often enough"
    assert series.finished
    in_feed = {site.lookup(item["url"]).doc_id for item in series.feed}
    lost = site.expected_unique_docs() - in_feed
    assert not lost, f"documents never in a feed file: {sorted(lost)}"
    for url, reason in series.dropped:
        original = reason.split("near-duplicate of ", 1)[1].split(" (", 1)[0]
        assert site.lookup(url).doc_id == site.lookup(original).doc_id, (url, reason)
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_start_urls_pages_are_delivered_again_after_a_kill(site, site_url, tmp_path) -> None:
    """A spider whose pages are its ``start_urls``: Scrapy sends them again at every start
    and the frontier does not journal them (``dont_filter``). A page kept just before a kill,
    its item still in the feed's buffer, must be delivered again, not dropped as a copy of
    itself."""
    urls = [site_url.rstrip("/") + url for urls in site.clusters().values() for url in urls]
    series = crash_series(
        ",".join(urls),
        tmp_path,
        1,
        {"NEARDUP_FLUSH_INTERVAL": 1.0},
        spider="tests.start_urls_spider.StartUrlsSpider",
        kills=5,
    )
    report("start_urls spider, NEARDUP_FLUSH_INTERVAL=1.0, seed 1", figures(site, series))
    assert series.kills >= 5 and series.finished
    in_feed = {site.lookup(item["url"]).doc_id for item in series.feed}
    lost = site.expected_unique_docs() - in_feed
    assert not lost, f"documents never in a feed file: {sorted(lost)}"
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_harness_plain_scrapy(site, site_url, tmp_path) -> None:
    """The same kills without the plugin: the harness's baseline (reported, not judged:
    plain Scrapy keeps every duplicate, and what it loses depends on its own buffers)."""
    series = crash_series(site_url, tmp_path, 1, {"ADDONS": {}})
    numbers = figures(site, series)
    report("plain Scrapy (no plugin), seed 1", numbers)
    assert series.kills >= KILLS
    assert series.finished
    assert numbers["documents"] - numbers["lost"] > 0  # the feeds were read


@pytest.mark.parametrize("stop_at", [6, 15])
def test_every_item_delivered_again_is_counted(stop_at, site, site_url, tmp_path) -> None:
    """Killed once, right after its ``stop_at``-th kept item, then run to the end: every URL
    the second feed repeats from the first is counted in ``neardup/items/redelivered``. Items
    too large for the feed's buffer reach the feed file as they are exported, before the
    state's next sync: a document's check is committed before its item goes on, so the crawl
    that fetches its page again finds it and delivers it again (rather than keep it as new,
    uncounted). The last kept item's request is never done before the kill (it is done after
    its item's signals), so at least that one is delivered again."""
    spider = "tests.start_urls_spider.PaddedSpider"
    settings = {"NEARDUP_FLUSH_INTERVAL": 1.0}
    proc = start(site_url, tmp_path, 0, settings, spider, stop_at_kept=stop_at)
    assert stopped(proc), "the crawl ended before it could be killed"
    kill_stopped(proc)
    proc = start(site_url, tmp_path, 1, settings, spider)
    assert proc.wait(timeout=120) == 0, (tmp_path / "stderr.log").read_text()[-3000:]
    stats = lines(tmp_path / "fates1.jsonl")[-1]["stats"]
    # a line the kill cut is a delivery too: the URL comes first in each line
    first = (tmp_path / "feeds" / "run0.jsonl").read_bytes()
    again = [item["url"] for item in lines(tmp_path / "feeds" / "run1.jsonl")]
    repeated = sum(json.dumps(url).encode() in first for url in again)
    redelivered = stats.get("neardup/items/redelivered", 0)
    report(f"killed after {stop_at} items", {"repeated": repeated, "redelivered": redelivered})
    assert redelivered >= repeated
    assert redelivered > 0  # the last kept item's request was pending: it was delivered again
