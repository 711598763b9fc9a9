"""A crawl without a Twisted reactor (Scrapy 2.19's ``TWISTED_REACTOR_ENABLED = False``, where
importing ``twisted.internet.reactor`` raises): extraction in the workers is awaited on asyncio,
the frontier marks requests done, and a project's pipeline after ours still gets the objects
that are not items. Each crawl runs in its own process (tests/reactorless_runner.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scrapy.settings.default_settings as defaults

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tests" / "reactorless_runner.py"

pytestmark = pytest.mark.skipif(
    not hasattr(defaults, "TWISTED_REACTOR_ENABLED"), reason="Scrapy < 2.19 always has a reactor"
)


def crawl(tmp_path: Path, **settings: object) -> tuple[dict, str]:
    done = subprocess.run(
        [sys.executable, str(RUNNER), json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    stats = json.loads(done.stdout.split("STATS ", 1)[1])
    return stats, done.stderr


@pytest.mark.parametrize("jobdir", [False, True])
def test_a_crawl_without_a_reactor_drops_the_copies(tmp_path, jobdir) -> None:
    settings = {"JOBDIR": str(tmp_path / "job")} if jobdir else {}
    stats, log = crawl(tmp_path, **settings)
    assert stats["reactor_imported"] is False
    assert " ERROR: " not in log, log[-4000:]
    assert stats["finish_reason"] == "finished"
    assert stats["neardup/items/kept"] == 1
    assert stats["neardup/items/dropped"] == 2
    assert stats["neardup/skipped/not_item"] == 3
    assert stats["item_scraped_count"] == 1 + 3  # the strings, made items by the project
    if jobdir:  # every request was marked done: the same command again re-queues nothing
        again, log = crawl(tmp_path, **settings)
        assert " ERROR: " not in log, log[-4000:]
        assert "neardup/frontier/recovered" not in again
        assert again["dupefilter/filtered"] == 3
        assert "item_scraped_count" not in again
