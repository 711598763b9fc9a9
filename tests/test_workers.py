"""Extraction workers: they die with the crawler, whatever kills it, and each page has a time
and a memory limit (NEARDUP_PAGE_TIMEOUT, NEARDUP_PAGE_MEMORY) after which it is kept
unchecked and its worker replaced.

Real crawls of the demo site (tests/crash_runner.py, tests/crawl_runner.py) in processes of
their own; the process tree is read from /proc, so these tests run on Linux only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

import crawl_runner  # noqa: E402
from crawl_runner import ENV  # noqa: E402
from demo_site import Page, Site, build_site, serve  # noqa: E402

from scrapy_neardup.extraction import (  # noqa: E402
    Extractor,
    PageLimitError,
    SignerSpec,
)

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)"),
    pytest.mark.timeout(180),
]

HTML_TYPE = "text/html; charset=utf-8"


def run_python(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``python ARGS`` in ``cwd`` with the tests' environment; it must exit 0."""
    out = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=150, cwd=cwd, env=ENV
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out


CRASH_RUNNER = ROOT / "tests" / "crash_runner.py"
SPEC = SignerSpec("minhash", (), 50, 100_000)


def tiny_paragraphs(n: int, title: str, link: str = "/") -> bytes:
    """An article page of ``n`` one-letter paragraphs. On one core here, 100,000 take 43 s
    and grow the process by 163 MiB at most; a million grow it by 250 MiB within 0.8 s (and
    would take 77 s and 1.7 GB without limits)."""
    head = (
        f'<html><head><title>{title}</title><meta property="og:type" content="article">'
        f'</head><body><a href="{link}">home</a><article>'
    )
    return head.encode() + b"<p>a</p>" * n + b"</article></body></html>"


ARTICLE = (
    "<html><head><title>Harbour bridge reopens</title></head><body><article>"
    + "".join(
        f"<p>Paragraph {{n}}.{i}: engineers finished the repairs on the old harbour bridge "
        "after months of work, and traffic crossed it again on Monday without delays.</p>"
        for i in range(8)
    )
    + "</article></body></html>"
)


def article(n: int) -> bytes:
    return ARTICLE.replace("{n}", str(n)).encode()


# -- the process tree --------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, by the parent pids in /proc, with its command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                children.setdefault(stat[1], []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        todo.extend(children.get(child, []))
    return found


def alive(pids: dict[int, str]) -> dict[int, str]:
    """Those of ``pids`` still running (a zombie is dead, only not yet reaped)."""
    return {pid: cmd for pid, cmd in pids.items() if (_stat(pid) or ("Z", 0))[0] != "Z"}


def wait_until_gone(pids: dict[int, str], seconds: float) -> dict[int, str]:
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(pids)


# -- workers die with the crawler --------------------------------------------------------


def start_crawl(base: str, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    """A crawl of the demo site whose first page, ``/heavy/slow``, keeps one of its two
    workers busy for the rest of the test: an idle worker would also leave by itself when
    its task pipe from the dead crawler closes, a busy one only by the means under test."""
    log, stderr = tmp_path / "items.jsonl", tmp_path / "stderr.txt"
    args = {
        "start_url": f"{base}/heavy/slow,{base}/",
        "log": str(log),
        "settings": {
            "NEARDUP_WORKERS": 2,
            "NEARDUP_PAGE_TIMEOUT": 120,
            "NEARDUP_PAGE_MEMORY": 0,
            "CONCURRENT_REQUESTS": 2,
            "DOWNLOAD_DELAY": 0.05,  # the crawl lasts about 10 s: it is killed well before
            "LOG_LEVEL": "INFO",
        },
    }
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(CRASH_RUNNER), json.dumps(args)],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=tmp_path,
            env=ENV,
        )
    return proc, log, stderr


def tree_after_first_items(proc: subprocess.Popen, log: Path) -> dict[int, str]:
    """The crawl's process tree once it has scraped a few items (so its workers run)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the crawl ended before it could be killed"
    tree = descendants(proc.pid)
    workers = [cmd for cmd in tree.values() if "spawn_main" in cmd]
    trackers = [cmd for cmd in tree.values() if "resource_tracker" in cmd]
    assert len(workers) == 2 and len(trackers) == 1, tree
    return tree


@pytest.fixture(scope="module")
def heavy_site() -> Iterator[tuple[Site, str]]:
    """The demo site, plus two article pages (see :func:`tiny_paragraphs`): ``/heavy/slow``
    (100,000 paragraphs), which links to ``/heavy/slow-copy`` (the same bytes), and
    ``/heavy/big`` (a million, 8 MB), the only way to the rest of the site."""
    site = build_site()
    slow = tiny_paragraphs(100_000, "slow", link="/heavy/slow-copy")
    big = tiny_paragraphs(1_000_000, "big", link="/")
    for path, body in (("/heavy/slow", slow), ("/heavy/slow-copy", slow), ("/heavy/big", big)):
        site.pages[path] = Page(path, body, headers={"Content-Type": HTML_TYPE})
    server, port = serve("127.0.0.1", 0, site)
    yield site, f"http://127.0.0.1:{port}"
    server.shutdown()
    server.server_close()


def test_sigkill_leaves_no_worker_or_tracker(heavy_site, tmp_path: Path) -> None:
    proc, log, _ = start_crawl(heavy_site[1], tmp_path)
    tree = tree_after_first_items(proc, log)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert wait_until_gone(tree, 5) == {}


def test_sigterm_twice_leaves_nothing_and_prints_no_traceback(heavy_site, tmp_path: Path) -> None:
    proc, log, stderr = start_crawl(heavy_site[1], tmp_path)
    tree = tree_after_first_items(proc, log)
    os.kill(proc.pid, signal.SIGTERM)
    time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)  # Scrapy's forced, unclean shutdown
    proc.wait(timeout=60)
    assert wait_until_gone(tree, 5) == {}
    text = stderr.read_text()
    assert "forcing unclean shutdown" in text
    assert "Traceback" not in text and "leaked" not in text, text[-3000:]


def test_a_worker_left_alone_ends_when_its_parent_dies_without_prctl(tmp_path: Path) -> None:
    """The portable fallback: the watchdog thread alone (no PR_SET_PDEATHSIG) ends a worker
    whose parent was SIGKILLed, on the EOF of the parent's sentinel pipe."""
    script = (
        "import multiprocessing, time\n"
        "from scrapy_neardup.page_limits import watch\n"
        "if __name__ == '__main__':\n"
        "    child = multiprocessing.get_context('spawn').Process(target=watch, args=(0,))\n"
        "    child.start()\n"
        "    print(child.pid, flush=True)\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path, env=ENV
    )
    child = int(proc.stdout.readline())
    time.sleep(0.5)
    assert alive({child: ""}), "the watchdog ended its process with the parent alive"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert wait_until_gone({child: "watchdog"}, 5) == {}


# -- time and memory limits --------------------------------------------------------------


def _pdeathsig() -> int:
    """Run in a worker: the signal the kernel sends it when its parent dies."""
    import ctypes

    value = ctypes.c_int()
    ctypes.CDLL(None).prctl(2, ctypes.byref(value))  # PR_GET_PDEATHSIG
    return value.value


def test_limits_fail_only_their_page_and_replace_the_worker() -> None:
    """Two workers; a page over the time limit and one over the memory limit, among normal
    pages in flight at the same moment: every normal page comes back, each bad one fails
    with its limit, and the replacement workers die with the parent too."""
    extractor = Extractor(SPEC, workers=2, page_timeout=3, page_memory=250)
    try:
        assert extractor.submit_extract(article(0), None, "utf-8").result(120)[0].text
        slow = extractor.submit_extract(tiny_paragraphs(100_000, "slow"), None, "utf-8")
        big = extractor.submit_extract(tiny_paragraphs(1_000_000, "big"), None, "utf-8")
        normal = [extractor.submit_extract(article(n), None, "utf-8") for n in range(1, 41)]
        with pytest.raises(PageLimitError) as timeout:
            slow.result(120)
        with pytest.raises(PageLimitError) as memory:
            big.result(120)
        # The big page passes 250 MiB before its 3 s run out on a quiet machine; on a busy
        # one the time may run out first. Either limit stops it.
        assert timeout.value.limit == "timeout"
        assert memory.value.limit in ("memory", "timeout")
        assert "NEARDUP_PAGE_TIMEOUT (3 s)" in str(timeout.value)
        texts = [future.result(120)[0].text for future in normal]
        assert all(f"Paragraph {n}.7" in text for n, text in enumerate(texts, 1))
        # the workers now running are replacements (started by pebble's thread): they too
        # are killed by the kernel with the crawler
        signals = {extractor._submit(_pdeathsig).result(120) for _ in range(6)}
        assert signals == {signal.SIGKILL}
    finally:
        extractor.close()


NO_GUARD_SCRIPT = """
# No `if __name__ == "__main__"` guard: a worker that re-ran this script would print again.
import sys
from scrapy_neardup.extraction import Extractor, SignerSpec, PageLimitError
print("script started", flush=True)
extractor = Extractor(SignerSpec("simhash", (("k", 3),), 50, 100_000), workers=1,
                      page_timeout=1)
page = b"<html><body><article>" + b"<p>a</p>" * 50_000 + b"</article></body></html>"
try:
    extractor.submit_extract(page, None, "utf-8").result(120)
except PageLimitError as exc:
    print("limit", exc.limit, flush=True)
extracted, _ = extractor.submit_extract(
    b"<html><body><article><p>" + b"A replacement worker read this page. " * 20
    + b"</p></article></body></html>", None, "utf-8").result(120)
print("replaced", extracted.how, flush=True)
extractor.close()
"""


def test_replacement_workers_do_not_rerun_the_crawl_script(tmp_path: Path) -> None:
    script = tmp_path / "crawl_script.py"
    script.write_text(NO_GUARD_SCRIPT)
    out = run_python([str(script)], tmp_path)
    assert out.stdout.split("\n")[:3] == ["script started", "limit timeout", "replaced trafilatura"]
    assert out.stdout.count("script started") == 1
    assert "Traceback" not in out.stderr and "leaked" not in out.stderr, out.stderr[-3000:]


PIPELINE_SCRIPT = """
import logging
logging.basicConfig(level=logging.WARNING)  # Scrapy 2.13's get_crawler() adds a root handler
from twisted.internet import task
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from scrapy_neardup.pipeline import NearDupPipeline

def main(reactor):
    settings = {"NEARDUP_WORKERS": 1, "NEARDUP_TEXT_FIELD": "text", "NEARDUP_PAGE_TIMEOUT": 1,
                "NEARDUP_PAGE_MEMORY": 0, "NEARDUP_MAX_TEXT_CHARS": 20_000_000}
    pipeline = NearDupPipeline.from_crawler(get_crawler(settings_dict=settings))
    pipeline.open_spider()
    # 3.8 million Chinese characters: about 6 s of jieba on one core here (a Latin text of
    # the same cost needs gigabytes for its MinHash; this one stays small)
    long_text = "城市的发展和政府的计划，市民表示支持。" * 200_000

    async def run():
        short = await pipeline.process_item({"url": "http://a/short", "text": "a word " * 60})
        long = await pipeline.process_item({"url": "http://a/long", "text": long_text})
        stats = pipeline.state.stats
        print(short["url"], long["url"], stats.get_value("neardup/skipped/timeout"),
              stats.get_value("neardup/items/kept"))
        pipeline.close_spider()

    return deferred_from_coro(run())

task.react(main)
"""


def test_an_item_text_field_over_the_time_limit_is_kept_unchecked(tmp_path: Path) -> None:
    """NearDupPipeline signs an item's text field in a worker, under the same limits."""
    out = run_python(["-c", PIPELINE_SCRIPT], tmp_path)
    assert out.stdout.split() == ["http://a/short", "http://a/long", "1", "1"]
    assert (
        "scrapy-neardup: the text field of http://a/long went over NEARDUP_PAGE_TIMEOUT (1 s)"
        in out.stderr
    )


def test_a_crawl_keeps_pages_over_a_limit_unchecked_and_goes_on(heavy_site, tmp_path) -> None:
    """One worker: the slow page goes over the 3 s limit (its copy is known from the body
    cache, not tried again), the big one over 250 MiB; their items are kept and counted,
    and the whole demo site, found through the big page's link once it failed, is then
    extracted by the replacement worker, as without them."""
    site, base = heavy_site
    settings = {
        "NEARDUP_WORKERS": 1,
        "NEARDUP_PAGE_TIMEOUT": 3,
        "NEARDUP_PAGE_MEMORY": 250,
        "LOG_LEVEL": "INFO",
    }
    start = f"{base}/heavy/slow,{base}/heavy/big"
    out = tmp_path / "out.json"
    result = crawl_runner.collect(crawl_runner.launch(start, out, settings), out)
    stats, stderr = result["stats"], result["stderr"]
    heavy = {item["url"] for item in result["kept"] if "/heavy/" in item["url"]}
    assert heavy == {f"{base}/heavy/{path}" for path in ("slow", "slow-copy", "big")}
    # The big page grows past 250 MiB before its 3 s run out on a quiet machine; on a busy one
    # the time may run out first. Either limit stops it: which one depends on the load.
    big_by_memory = stats.get("neardup/skipped/memory", 0)
    assert big_by_memory in (0, 1), stats
    assert stats.get("neardup/skipped/timeout") == 3 - big_by_memory, stats
    assert stats["neardup/extract/cache_hit"] == 1  # the copy: not extracted again
    assert "neardup/extract/errors" not in stats
    big_limit = "NEARDUP_PAGE_MEMORY (250 MiB)" if big_by_memory else "NEARDUP_PAGE_TIMEOUT (3 s)"
    for path, limit in (
        ("slow", "NEARDUP_PAGE_TIMEOUT (3 s)"),
        ("slow-copy", "NEARDUP_PAGE_TIMEOUT (3 s)"),
        ("big", big_limit),
    ):
        assert f"WARNING: scrapy-neardup: {base}/heavy/{path} went over {limit}" in stderr
    # the rest of the site, as a crawl without the heavy pages sees it
    demo = [item for item in result["kept"] if "/heavy/" not in item["url"]]
    crawl_runner.assert_each_document_once(site, [{"kept": demo, "dropped": []}])
    assert stats["neardup/items/dropped"] == len(site.content_duplicates("contained"))
    # every item's page was extracted or counted over a limit: none lost, none counted twice
    hows = ("trafilatura", "fallback", "empty")
    extracted = sum(stats.get(f"neardup/extract/{how}", 0) for how in hows)
    assert extracted + 3 == len(result["kept"]) + len(result["dropped"])
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr[-3000:]


HANDOVER_SCRIPT = """
import logging
logging.basicConfig(level=logging.WARNING)
from twisted.internet import task
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.test import get_crawler
from scrapy_neardup.middlewares import PageTextMiddleware
from scrapy_neardup.pipeline import NearDupPipeline

ARTICLE = "<html><body><article><p>" + "The river rose over the old town walls today. " * 30
PAGE = (ARTICLE + "</p></article></body></html>").encode()

def main(reactor):
    crawler = get_crawler(settings_dict={"NEARDUP_WORKERS": 1})
    middleware = PageTextMiddleware.from_crawler(crawler)
    pipeline = NearDupPipeline.from_crawler(crawler)
    pipeline.open_spider()

    async def spider_output():
        yield {"url": "http://a/page"}
        yield Request("http://a/next")

    async def run():
        out = []
        for url in ("http://a/page", "http://a/copy"):
            response = HtmlResponse(url, body=PAGE, request=Request(url))
            async for obj in middleware.process_spider_output(response, spider_output()):
                out.append(obj)
        extractor = pipeline.state.extractor
        # Both outputs went on while the (first) reading was still in its worker.
        print("passed on", len(out), "reading", sum(1 for _ in extractor._in_flight))
        kept = await pipeline.process_item(out[0])
        try:
            await pipeline.process_item(out[2])
            print("copy kept")
        except Exception as exc:
            print("copy", type(exc).__name__)
        stats = pipeline.state.stats
        print(kept["url"], stats.get_value("neardup/extract/trafilatura"),
              stats.get_value("neardup/extract/cache_hit"))
        pipeline.close_spider()

    return deferred_from_coro(run())

task.react(main)
"""


def test_items_and_links_go_on_while_the_page_is_read(tmp_path: Path) -> None:
    """PageTextMiddleware starts the extraction and passes the item and the rest of the
    output (a CrawlSpider's links) on at once; the pipeline waits for the text. A copy of
    the page that arrives while it is read waits for the same reading (one extraction, one
    cache hit) and is dropped."""
    out = run_python(["-c", HANDOVER_SCRIPT], tmp_path)
    assert out.stdout.splitlines() == [
        "passed on 4 reading 1",
        "copy DropItem",
        "http://a/page 2 1",
    ], out.stderr[-3000:]


def test_the_page_timeout_follows_the_monotonic_clock(monkeypatch) -> None:
    """The wall clock steps an hour forward while a page is read (NTP, a VM resumed): the
    page, read in a second, is not over its 20 s limit, and its worker is not replaced."""
    extractor = Extractor(SPEC, workers=1, page_timeout=20)
    try:
        assert extractor.submit_extract(article(0), None, "utf-8").result(120)[0].text
        pid = extractor._submit(os.getpid).result(60)
        task = extractor._submit(time.sleep, 1.5)
        time.sleep(0.5)  # the worker has it
        stepped = time.time() + 3600
        monkeypatch.setattr(time, "time", lambda: stepped + time.monotonic())
        assert task.result(60) is None
        monkeypatch.undo()
        assert extractor._submit(os.getpid).result(60) == pid  # the same worker
    finally:
        extractor.close()
