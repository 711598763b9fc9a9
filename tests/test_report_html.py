"""``scrapy neardup-stats --html FILE``: real crawls of the demo site with NEARDUP_KEEP_TEXT,
in a JOBDIR and in a real redis-server, then the page, parsed (strict XML and lxml.html) and,
where a Chromium is installed, loaded by it offline. No mocks."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree
from lxml import html as lxml_html
from redis_server import RedisServer
from test_crawl import crawl, original_of

from scrapy_neardup.deduplicator import Member
from scrapy_neardup.report_html import audit, marked, write_drops
from scrapy_neardup.storage.statedb import STATE_FILE, StateDB, read_only

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
STATS_CMD = [sys.executable, "-m", "scrapy", "neardup-stats"]
KEEP = {"NEARDUP_KEEP_TEXT": 20000, "NEARDUP_WORKERS": 1}

pytestmark = pytest.mark.timeout(180)


def run_stats(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy neardup-stats`` with ``args``, run in ``tmp_path``."""
    return subprocess.run(
        [*STATS_CMD, *args], capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=120
    )


def stats_html(tmp_path: Path, *args: str) -> tuple[Path, str]:
    page = tmp_path / "drops.html"
    proc = run_stats(tmp_path, *args, "--html", str(page))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote" in proc.stdout, proc.stdout
    return page, proc.stdout


def method_of(reason: str) -> str:
    return reason.split(" (", 1)[1].split(",", 1)[0]


def check_page(page: Path, result: dict, with_texts: bool) -> lxml_html.HtmlElement:
    """Well-formed, self-contained, every drop but exact copies listed with its original and
    both texts, the exact copies counted in the clusters."""
    data = page.read_bytes()
    etree.fromstring(data, etree.XMLParser(resolve_entities=False))  # strict: well-formed
    doc = lxml_html.fromstring(data)
    assert not doc.xpath("//script|//link|//iframe|//object|//embed|//img|//@src")
    documents = {item["url"] for item in result["kept"] + result["dropped"]}
    for href in doc.xpath("//@href"):
        assert href.startswith("#") or href in documents, href
    assert "url(" not in "".join(doc.xpath("//style/text()"))  # no fetched CSS resource
    sections = {s.get("id"): s for s in doc.xpath("//section[@class='drop']")}
    near = [item for item in result["dropped"] if method_of(item["reason"]) != "exact"]
    assert len(sections) == len(near) > 0
    exact = len(result["dropped"]) - len(near)
    counted = [int(li.text.split()[0]) for li in doc.xpath("//li[contains(., 'exact copies')]")]
    assert sum(counted) == exact
    by_dropped = {s.xpath("string(.//h3/a[1]/@href)"): s for s in sections.values()}
    for item in near:
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
    assert len(result["dropped"]) == 12
    db = read_only(jobdir / "neardup" / STATE_FILE)
    assert db.has_texts()
    db.abandon()
    return jobdir, result


def test_page_from_a_jobdir_crawl(jobdir_crawl, tmp_path) -> None:
    jobdir, result = jobdir_crawl
    near = sum(1 for item in result["dropped"] if method_of(item["reason"]) != "exact")
    page, out = stats_html(tmp_path, str(jobdir))
    assert f"{near} of 12 drops shown, {near} with both texts, 0 lose text" in out
    doc = check_page(page, result, with_texts=True)
    # the default decision loses nothing: the audit reads the same rule from the texts
    assert len(doc.xpath("//p/b[@class='contained']")) == near
    assert not doc.xpath("//b[@class='lossy']")
    assert doc.xpath("//table[@class='clusters']//td/a/@href")

    capped, out = stats_html(tmp_path, str(jobdir), "--max-drops", "2")
    assert "2 of 12 drops shown" in out
    assert len(lxml_html.fromstring(capped.read_bytes()).xpath("//section")) == 2


def test_drops_file_has_a_line_a_drop(jobdir_crawl, tmp_path) -> None:
    jobdir, result = jobdir_crawl
    proc = run_stats(tmp_path, str(jobdir), "--drops", str(tmp_path / "drops.jsonl"))
    assert proc.returncode == 0 and "12 drops" in proc.stdout, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in (tmp_path / "drops.jsonl").read_text().splitlines()]
    assert {d["dropped"] for d in lines} == {item["url"] for item in result["dropped"]}
    for d in lines:
        assert set(d) == {"dropped", "kept", "method", "similarity", "containment",
                          "lost_words", "lost"}  # fmt: skip
        assert d["lost_words"] == 0 and d["lost"] == []


def test_page_without_kept_texts_says_how_to_keep_them(jobdir_crawl, tmp_path) -> None:
    jobdir, result = jobdir_crawl
    copy = tmp_path / "job"
    shutil.copytree(jobdir, copy)
    db = sqlite3.connect(copy / "neardup" / STATE_FILE)
    db.execute("delete from texts")  # as a crawl without NEARDUP_KEEP_TEXT leaves it
    db.commit()
    db.close()
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
    assert len(rendered.xpath("//section[@class='drop']")) > 0
    assert rendered.xpath("//section//mark")  # the shared passages (a drop loses nothing)


def test_page_from_a_redis_crawl(site, site_url, tmp_path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        settings = {
            "NEARDUP_STORAGE": "redis",
            "NEARDUP_REDIS_URL": server.url,
            "NEARDUP_KEY_PREFIX": "audit",
        }
        result = crawl(site_url, tmp_path / "out.json", **settings, **KEEP)
        assert len(result["dropped"]) == 12
        where = ("--redis-url", server.url, "--key-prefix", "audit")
        page, out = stats_html(tmp_path, *where)
        near = sum(1 for item in result["dropped"] if method_of(item["reason"]) != "exact")
        assert f"{near} of 12 drops shown, {near} with both texts, 0 lose text" in out
        check_page(page, result, with_texts=True)

        _, out = stats_html(tmp_path, *where, "--max-drops", "2")
        assert "2 of 12 drops shown" in out
        drops = tmp_path / "drops.jsonl"
        proc = run_stats(tmp_path, *where, "--drops", str(drops))
    assert proc.returncode == 0 and "12 drops" in proc.stdout, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in drops.read_text().splitlines()]
    assert {d["dropped"] for d in lines} == {item["url"] for item in result["dropped"]}


def test_marks_and_containment() -> None:
    kept = "The river rose by two metres overnight and the bridge was closed to all traffic."
    dropped = (
        "The river rose by two metres overnight; officials <b>said</b> & the bridge was closed."
    )
    left, right = marked(kept, dropped)
    assert left.startswith("<mark>The river rose by two metres") and "<del>" in left
    assert "<ins>" in right and "&lt;b&gt;said&lt;/b&gt; &amp;" in right
    assert "<b>" not in right


def test_a_text_kept_twice_reads_as_the_last(tmp_path) -> None:
    db = StateDB(tmp_path / STATE_FILE)
    db.open({})
    db.start_writing()
    keys = [f"https://e.example/{n}" for n in range(4)]
    for n in range(3):
        db.put_text(keys[n], f"text {n} " * 50)
    db.put_text(keys[0], "newer")
    db.close()
    db = read_only(tmp_path / STATE_FILE)
    found = db.texts(keys)
    db.abandon()
    assert sorted(found) == keys[:3] and found[keys[0]] == "newer"


ARTICLE = "\n".join(
    f"Paragraph {n} of the article says what the council decided about the harbour bridge "
    f"and the new tram line, with the figures the mayor gave on Monday evening."
    for n in range(1, 6)
)


def test_audit_puts_the_drops_that_lose_most_first(tmp_path) -> None:
    """Exact copies are counted; the other drops come riskiest first, with what they lose."""
    texts = {
        "https://a.org/kept": ARTICLE,
        "https://a.org/other": "Home | News | Sport\nA different page altogether.",
        "https://b.org/copy": ARTICLE.replace("council", "assembly", 1),  # a word edit
        "https://b.org/more": ARTICLE + "\nA whole paragraph the kept page never had, with "
        "its own facts and names such as Vauxhall_Bridge and 1,240 passengers a day.",
        "https://b.org/name": ARTICLE.replace("Paragraph 3", "Paragraph 33"),
    }
    members = [
        Member("https://b.org/copy", "https://a.org/kept", "minhash", 0.9),
        Member("https://b.org/more", "https://a.org/kept", "minhash", 0.8),
        Member("https://b.org/name", "https://a.org/kept", "minhash", 0.95),
        Member("https://c.org/exact", "https://a.org/kept", "exact", 1.0),
    ]
    audits, exact = audit(members, texts)
    assert [a.member.key for a in audits] == [
        "https://b.org/more",
        "https://b.org/name",
        "https://b.org/copy",
    ]
    assert exact == {"https://a.org/kept": 1}
    assert audits[0].lost_words > 20 and "Vauxhall_Bridge" in audits[0].lost[0]
    assert audits[1].lost == ("33",) and audits[2].lost_words == 0
    path = tmp_path / "drops.jsonl"
    assert write_drops(path, audits, members[3:]) == 4
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [d["lost_words"] for d in lines] == [audits[0].lost_words, 1, 0, 0]
    assert lines[-1]["method"] == "exact" and lines[-1]["containment"] == 1.0
