"""``scrapy neardup-stats --html FILE``: real crawls of the demo site with NEARDUP_KEEP_TEXT,
in a JOBDIR and in a real redis-server, then the page, parsed (strict XML and lxml.html) and,
where a Chromium is installed, loaded by it offline. No mocks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html
from redis_server import RedisServer
from test_crawl import crawl, original_of

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.report_html import containment, marked
from scrapy_neardup.storage.texts import TEXTS_FILE, TextFile, read_texts

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
STATS_CMD = [sys.executable, "-m", "scrapy", "neardup-stats"]
KEEP = {"NEARDUP_KEEP_TEXT": 20000, "NEARDUP_WORKERS": 1}

pytestmark = pytest.mark.timeout(180)


def stats_html(tmp_path: Path, *args: str) -> tuple[Path, str]:
    page = tmp_path / "drops.html"
    proc = subprocess.run(
        [*STATS_CMD, *args, "--html", str(page)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=ENV,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote" in proc.stdout, proc.stdout
    return page, proc.stdout


def check_page(page: Path, result: dict, with_texts: bool) -> lxml_html.HtmlElement:
    """Well-formed, self-contained, every drop listed with its original and both texts."""
    data = page.read_bytes()
    etree.fromstring(data, etree.XMLParser(resolve_entities=False))  # strict: well-formed
    doc = lxml_html.fromstring(data)
    assert not doc.xpath("//script|//link|//iframe|//object|//embed|//img|//@src")
    documents = {item["url"] for item in result["kept"] + result["dropped"]}
    for href in doc.xpath("//@href"):
        assert href.startswith("#") or href in documents, href
    assert "url(" not in "".join(doc.xpath("//style/text()"))  # no fetched CSS resource
    sections = {s.get("id"): s for s in doc.xpath("//section[@class='drop']")}
    assert len(sections) == len(result["dropped"]) > 0
    by_dropped = {s.xpath("string(.//h3/a[1]/@href)"): s for s in sections.values()}
    for item in result["dropped"]:
        section = by_dropped[item["url"]]
        assert section.xpath("string(.//h3/a[2]/@href)") == original_of(item["reason"])
        figures = section.xpath("string(.//p)")
        assert "similarity" in figures and "method" in figures
        kept, dropped = section.xpath(".//div[contains(@class, 'text')]")
        if with_texts:
            assert "containment" in figures
            assert kept.xpath(".//mark") and dropped.xpath(".//mark")
            assert len(kept.text_content()) > 200 and len(dropped.text_content()) > 200
        else:
            assert "text not kept" in kept.text_content()
    return doc


@pytest.fixture(scope="module")
def jobdir_crawl(site, site_url, tmp_path_factory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("jobdir-crawl")
    jobdir = tmp / "job"
    result = crawl(site_url, tmp / "out.json", JOBDIR=str(jobdir), **KEEP)
    assert len(result["dropped"]) == 24
    assert (jobdir / "neardup" / TEXTS_FILE).stat().st_size > 0
    return jobdir, result


def test_page_from_a_jobdir_crawl(jobdir_crawl, tmp_path) -> None:
    jobdir, result = jobdir_crawl
    page, out = stats_html(tmp_path, str(jobdir))
    assert "24 of 24 drops shown, 24 with both texts" in out
    doc = check_page(page, result, with_texts=True)
    # which copy is kept first depends on crawl order; a drop under 0.8 is marked "lossy"
    marked = "//p/b[@class='contained' or @class='lossy']"
    shares = [float(b.text) for b in doc.xpath(marked)]
    assert len(shares) == 24 and min(shares) >= 0.5, shares
    assert doc.xpath("//table[@class='clusters']//td/a/@href")

    capped, out = stats_html(tmp_path, str(jobdir), "--max-drops", "5")
    assert "5 of 24 drops shown" in out
    assert len(lxml_html.fromstring(capped.read_bytes()).xpath("//section")) == 5


def test_page_without_kept_texts_says_how_to_keep_them(jobdir_crawl, tmp_path) -> None:
    jobdir, result = jobdir_crawl
    copy = tmp_path / "job"
    shutil.copytree(jobdir, copy)
    (copy / "neardup" / TEXTS_FILE).unlink()  # as a crawl without NEARDUP_KEEP_TEXT leaves
    page, _ = stats_html(tmp_path, str(copy))
    doc = check_page(page, result, with_texts=False)
    assert "NEARDUP_KEEP_TEXT" in doc.xpath("string(//p[@id='no-texts'])")


def test_page_opens_offline_in_chromium(jobdir_crawl, tmp_path) -> None:
    """Chromium (Debian's ``chromium`` package), headless, with no name resolving, renders
    the page: its DOM after load holds every drop with its marks. Playwright's own Chromium
    cannot be downloaded here (only the package registries are reachable)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("no Chromium installed (apt-get install chromium): the page is parsed only")
    jobdir, _ = jobdir_crawl
    page, _ = stats_html(tmp_path, str(jobdir))
    proc = subprocess.run(
        [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rendered = lxml_html.fromstring(proc.stdout)
    assert len(rendered.xpath("//section[@class='drop']")) == 24
    assert rendered.xpath("//section//mark") and rendered.xpath("//section//ins")


def test_page_from_a_redis_crawl(site, site_url, tmp_path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        settings = {
            "NEARDUP_STORAGE": "redis",
            "NEARDUP_REDIS_URL": server.url,
            "NEARDUP_KEY_PREFIX": "audit",
        }
        result = crawl(site_url, tmp_path / "out.json", **settings, **KEEP)
        assert len(result["dropped"]) == 24
        page, out = stats_html(tmp_path, "--redis-url", server.url, "--key-prefix", "audit")
    assert "24 of 24 drops shown, 24 with both texts" in out
    check_page(page, result, with_texts=True)


def test_marks_and_containment() -> None:
    kept = "The river rose by two metres overnight and the bridge was closed to all traffic."
    dropped = (
        "The river rose by two metres overnight; officials <b>said</b> & the bridge was closed."
    )
    left, right = marked(kept, dropped)
    assert left.startswith("<mark>The river rose by two metres") and "<del>" in left
    assert "<ins>" in right and "&lt;b&gt;said&lt;/b&gt; &amp;" in right
    assert "<b>" not in right
    assert containment(dropped, dropped) == 1.0
    assert 0.3 < containment(dropped, kept) < 0.8
    assert containment("", kept) is None
    assert containment("洪水过后，桥梁已经关闭。", "洪水过后，桥梁已经关闭，交通中断。") == 1.0


def test_texts_file_ignores_a_torn_last_record(tmp_path) -> None:
    path = tmp_path / TEXTS_FILE
    store = TextFile(path)
    store.open()
    for n in range(3):
        store.put(f"https://e.example/{n}", f"text {n} " * 50)
    store.close()
    whole = path.stat().st_size
    with path.open("ab") as fh:  # a crash in the middle of a record
        fh.write(b"\x40\x00\x00\x00\x01\x02\x03\x04half a rec")
    keys = [f"https://e.example/{n}" for n in range(4)]
    assert sorted(read_texts(path, keys)) == keys[:3]
    store = TextFile(path)
    store.open()  # cut off, and appended after
    assert path.stat().st_size == whole
    store.put(keys[3], "again")
    store.put(keys[0], "newer")
    store.close()
    found = read_texts(path, keys)
    assert found[keys[3]] == "again" and found[keys[0]] == "newer"


def test_keep_text_setting() -> None:
    assert NearDupConfig.from_settings({}).keep_text == 0
    assert NearDupConfig.from_settings({"NEARDUP_KEEP_TEXT": "20000"}).keep_text == 20000
    for bad in (-1, 2.5, True, "many"):
        with pytest.raises(ConfigError):
            NearDupConfig.from_settings({"NEARDUP_KEEP_TEXT": bad})
