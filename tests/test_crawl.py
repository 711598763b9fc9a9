"""Real crawls of the bundled demo site (served on loopback) with the plugin on, as users run it.

Each crawl runs in its own process (tests/crawl_runner.py): a Twisted reactor cannot be
restarted. The site knows its ground truth: 54 distinct documents behind 108 item URLs; of
the 24 copies with URLs of their own, 12 hold nothing their original lacks (dropped by the
default decision) and 12 have a headline and source lines of their own (kept beside it, near).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from demo_site import Site

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "example_project"


RUNNER = ROOT / "tests" / "crawl_runner.py"


def crawl(start_url: str, out: Path, **settings: object) -> dict:
    args = {
        "start_url": start_url,
        "out": str(out),
        "settings": {"LOG_LEVEL": "WARNING", **settings},
    }
    proc = subprocess.run(
        [sys.executable, str(RUNNER), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=out.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)])},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    result["stderr"] = proc.stderr
    return result


def doc_ids(site: Site, items: list[dict]) -> list[str]:
    return [site.lookup(item["url"]).doc_id for item in items]


def original_of(reason: str) -> str:
    return reason.split("near-duplicate of ", 1)[1].split(" (", 1)[0]


def assert_no_loss_no_wrong_drop(site: Site, result: dict) -> Counter:
    kept = Counter(doc_ids(site, result["kept"]))
    assert set(kept) == set(site.expected_unique_docs()), "a distinct document was lost"
    for item in result["dropped"]:
        dropped_doc = site.lookup(item["url"]).doc_id
        assert dropped_doc == site.lookup(original_of(item["reason"])).doc_id, item
    assert not [w for w in result["warnings"] if "Deprecation" in w], result["warnings"]
    return kept


@pytest.mark.parametrize("backend", ["minhash", "spotsigs"])
def test_backends_drop_every_copy_that_loses_nothing(backend, site, site_url, tmp_path) -> None:
    result = crawl(site_url, tmp_path / "out.json", NEARDUP_BACKEND=backend)
    kept = assert_no_loss_no_wrong_drop(site, result)
    near = site.near_copies()
    assert len(result["kept"]) == len(site.expected_unique_docs()) + len(near) == 54 + 12
    # one item a document, and one more for each of its near copies, each tagged as such
    assert kept == Counter(site.expected_unique_docs()) + Counter(
        site.lookup(url).doc_id for url in near
    )
    stats = result["stats"]
    # recorded beside their original: as related (they hold it and a line more) or near
    assert stats.get("neardup/items/near", 0) + stats.get("neardup/items/related", 0) == 12
    # Every URL-level variant is caught at the URL stage; exactly the 12 copies that lose
    # nothing are dropped in the pipeline.
    assert stats[f"neardup/duplicates/{backend}"] + stats.get("neardup/duplicates/exact", 0) == 12
    assert stats["neardup/items/dropped"] == len(site.content_duplicates("contained")) == 12
    # Which URL stage catches a variant depends on crawl order (see test_middlewares.py).
    assert stats["neardup/urls/filtered"] + stats.get("neardup/urls/filtered_canonical", 0) > 30
    assert "Traceback" not in result["stderr"]


def test_similar_keeps_exactly_one_item_per_document(site, site_url, tmp_path) -> None:
    result = crawl(site_url, tmp_path / "out.json", NEARDUP_DECISION="similar")
    kept = assert_no_loss_no_wrong_drop(site, result)
    assert len(result["kept"]) == len(site.expected_unique_docs()) == 54
    assert max(kept.values()) == 1
    assert result["stats"]["neardup/items/dropped"] == len(site.content_duplicates()) == 24


@pytest.mark.parametrize("backend", ["simhash", "exact"])
def test_weaker_backends_never_drop_wrongly(backend, site, site_url, tmp_path) -> None:
    """SimHash at k=3 and exact hashing catch fewer copies (edited ones escape) but must
    never drop a distinct document; URL variants are still caught at the URL stage."""
    result = crawl(site_url, tmp_path / "out.json", NEARDUP_BACKEND=backend)
    assert_no_loss_no_wrong_drop(site, result)
    assert len(result["kept"]) + len(result["dropped"]) == 54 + 24


def test_tag_mode_keeps_items_and_names_the_original(site, site_url, tmp_path) -> None:
    result = crawl(site_url, tmp_path / "out.json", NEARDUP_ACTION="tag")
    assert result["dropped"] == []
    tagged = [item for item in result["kept"] if item.get("duplicate_of")]
    assert len(tagged) == 12
    for item in tagged:
        assert site.lookup(item["url"]).doc_id == site.lookup(item["duplicate_of"]).doc_id
        assert 0.5 <= item["duplicate_similarity"] <= 1.0
    beside = [
        item for item in result["kept"] if item.get("near_duplicate_of", item.get("related_to"))
    ]
    assert len(beside) == 12
    for item in beside:
        original = item.get("near_duplicate_of", item.get("related_to"))
        assert site.lookup(item["url"]).doc_id == site.lookup(original).doc_id


def test_plugin_off_keeps_the_duplicates(site, site_url, tmp_path) -> None:
    result = crawl(site_url, tmp_path / "out.json", NEARDUP_ENABLED=False)
    assert len(result["kept"]) > 54 + 24  # Scrapy alone lets URL variants and copies through
    assert not any(k.startswith("neardup/") for k in result["stats"])


def test_pause_and_resume_with_jobdir_keeps_state(site, site_url, tmp_path) -> None:
    """Stopped after 20 items (as Ctrl-C would), resumed with the same JOBDIR: together the two
    runs keep each document once, and the second run knows what the first recorded."""
    jobdir = tmp_path / "job"
    settings = {"JOBDIR": str(jobdir), "CLOSESPIDER_ITEMCOUNT": 20, "CONCURRENT_REQUESTS": 2}
    first = crawl(site_url, tmp_path / "first.json", **settings)
    assert first["stats"]["finish_reason"] == "closespider_itemcount"
    assert (jobdir / "neardup" / "state.sqlite").exists()
    kept, dropped = list(first["kept"]), list(first["dropped"])
    for n in range(5):
        run = crawl(site_url, tmp_path / f"run{n}.json", **settings)
        kept += run["kept"]
        dropped += run["dropped"]
        if run["stats"]["finish_reason"] == "finished":
            break
    assert run["stats"]["finish_reason"] == "finished"
    ids = Counter(doc_ids(site, kept))
    assert set(ids) == set(site.expected_unique_docs())
    # each document once, and once more for each of its near copies (kept beside it)
    near = Counter(site.lookup(url).doc_id for url in site.near_copies())
    assert ids == Counter(site.expected_unique_docs()) + near, "a page was kept again"


def test_bad_setting_stops_the_crawl_with_a_clear_message(site_url, tmp_path) -> None:
    args = {
        "start_url": site_url,
        "out": str(tmp_path / "o.json"),
        "settings": {"NEARDUP_THRESHOLD": 7},
    }
    proc = subprocess.run(
        [sys.executable, str(RUNNER), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)])},
    )
    assert "NEARDUP_THRESHOLD=7 is not allowed" in proc.stderr


def test_neardup_stats_command_in_a_project_and_outside(site, site_url, tmp_path) -> None:
    jobdir = tmp_path / "job"
    crawl(site_url, tmp_path / "out.json", JOBDIR=str(jobdir))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    inside = subprocess.run(
        [sys.executable, "-m", "scrapy", "neardup-stats", "--json", "-s", f"JOBDIR={jobdir}"],
        capture_output=True,
        text=True,
        cwd=EXAMPLE,
        env=env,
        timeout=120,
    )
    assert inside.returncode == 0, inside.stderr
    summary = json.loads(inside.stdout)
    assert summary["content"]["documents_indexed"] == 54 + 12
    assert summary["content"]["duplicates"] == 12
    assert summary["urls"]["seen"] >= 100
    urls = summary["urls"]
    # the figure the text report gives (the filter is sized for its capacity up front)
    assert 0 < urls["bytes_per_url"] == urls["bytes_per_url_at_capacity"] < 3
    assert urls["bytes_per_url_seen"] > urls["bytes_per_url"]  # a few URLs in a large filter
    outside = subprocess.run(
        [sys.executable, "-m", "scrapy", "neardup-stats", str(jobdir)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert outside.returncode == 0, outside.stderr
    assert "documents indexed         66" in outside.stdout
    assert f"({urls['bytes_per_url']} bytes per URL;" in outside.stdout
    assert "Largest clusters" in outside.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "scrapy", "neardup-stats", str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert missing.returncode == 1 and "no such state directory" in missing.stdout
