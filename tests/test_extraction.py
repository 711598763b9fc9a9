"""Main-text extraction on odd input: a counted outcome, never an exception."""

from __future__ import annotations

import gzip
import logging
import os
from pathlib import Path

import pytest

from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.extraction import Extractor, PageLimitError, SignerSpec
from scrapy_neardup.main_text import extract_main_text
from scrapy_neardup.page_limits import TRIM_ABOVE, rss
from scrapy_neardup.workers import WORKER_NICENESS, worker_niceness

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

ARTICLE = (
    "<html><head><title>Harbour bridge reopens</title></head><body>"
    "<nav><a href='/'>Home</a> <a href='/news'>News</a></nav>"
    "<article><h1>Harbour bridge reopens</h1>"
    + "".join(
        f"<p>Paragraph {i}: engineers finished the repairs on the old harbour bridge after "
        f"months of work, and traffic crossed it again on Monday morning without delays.</p>"
        for i in range(8)
    )
    + "</article><footer>Copyright the paper</footer></body></html>"
)


def test_article_text_without_navigation() -> None:
    found = extract_main_text(ARTICLE.encode(), "http://example.com/a", "utf-8")
    assert found.how == "trafilatura"
    assert "engineers finished the repairs" in found.text
    assert "Copyright the paper" not in found.text


# An article written as sections of spans, as WeChat's editor writes them, amid the
# paragraphs of its page (a profile box, a credit line, toasts): those were all trafilatura
# took. Reduced from a real WeChat article page, attributes and Chinese text left out.
SECTIONS_OF_SPANS = (
    "<html><head><title>New phones</title></head><body><div><div><div>"
    "<div><span><div><p><label>Account</label> <span>FView</span></p>"
    "<p><label>About</label> <span>Thoughts on the mobile internet</span></p></div></span></div>"
    "<div>"
    + "".join(
        f"<section><span>Part {i}: the new phones have larger screens, three cameras and "
        f"batteries that last a whole day of use, and they go on sale next month in most "
        f"countries.</span></section>"
        for i in range(3)
    )
    + "<p><span>Source: the web</span></p><p><span>Edited by FView</span></p></div>"
    "<div><div><p><span>See what friends read</span></p></div></div>"
    "<div><p>Sent</p></div><div><p>Sending</p></div></div>"
    "<div><p>Scan to follow this account</p></div></div></div>"
    "<div><div><p>Comment sent</p></div></div></body></html>"
)


def with_comment(comment: str) -> bytes:
    """:data:`ARTICLE` with a reader's comment under it."""
    section = f'<div id="comments" class="comments"><p>{comment}</p></div>'
    return ARTICLE.replace("</article>", f"</article>{section}").encode()


def test_readers_comments_are_part_of_the_text_and_keep_a_copy() -> None:
    """A reader's comment is a line of the page (trafilatura reads it by default): a copy of
    the article with a comment of its own is kept (it holds more: related), one without is
    dropped."""
    comment = "I drove across it this morning and the new surface is much smoother than before."
    found = extract_main_text(with_comment(comment), "http://example.com/b", "utf-8")
    assert comment in found.text
    dedup = Deduplicator("minhash")
    dedup.check("plain", extract_main_text(ARTICLE.encode(), "http://example.com/a").text)
    commented = dedup.check("commented", found.text)
    assert not commented.is_duplicate and commented.related_to == "plain"
    again = extract_main_text(ARTICLE.encode(), "http://example.com/c").text
    assert dedup.check("copy", again).is_duplicate


def test_the_article_ends_where_the_readers_comments_begin() -> None:
    comment = "I drove across it this morning and the new surface is much smoother than before."
    found = extract_main_text(with_comment(comment), "http://example.com/b", "utf-8")
    assert found.article_end is not None
    article, comments = found.text[: found.article_end], found.text[found.article_end :]
    assert "engineers finished the repairs" in article and comment not in article
    assert comments.strip() == comment
    assert extract_main_text(ARTICLE.encode(), "http://example.com/a").article_end is None


def test_an_article_written_as_sections_of_spans_is_read() -> None:
    for fast in (True, False):
        found = extract_main_text(SECTIONS_OF_SPANS.encode(), "http://example.com/p", fast=fast)
        assert found.text.count("batteries that last a whole day") == 3, found.text


def test_only_sections_of_inline_content_are_read_as_paragraphs() -> None:
    """Sphinx writes a section per heading: read as divs, trafilatura took the last one of a
    real page (Sphinx's autosectionlabel) for a footer, so sections of blocks stay."""
    from trafilatura.utils import load_html

    from scrapy_neardup.main_text import _paragraph_sections

    tree = load_html(
        "<html><body><section id='a'><h2>Usage</h2><p>Text.</p></section>"
        "<section id='b'><span>Inline</span> text <b>only</b><br></section>"
        "<section id='c'>Bare text</section><section id='d'></section>"
        "<section id='e'><span>Inline</span><div>and a block</div></section></body></html>"
    )
    _paragraph_sections(tree)
    tags = {element.get("id"): element.tag for element in tree.iter() if element.get("id")}
    assert tags == {"a": "section", "b": "p", "c": "p", "d": "section", "e": "section"}


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"   \n ",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        b"\x1f\x8b\x08\x00" + b"\x00" * 64,
    ],
)
def test_empty_and_binary_bodies_give_no_text(body: bytes) -> None:
    assert extract_main_text(body).how == "empty"


def test_a_fragment_is_empty_without_an_error_and_trafilatura_logger_is_left_alone(
    caplog,
) -> None:
    """trafilatura logs an ERROR for markup it does not take for HTML; the plugin counts the
    page as empty instead, and only silences that line while it parses a page."""
    trafilatura_utils = logging.getLogger("trafilatura.utils")
    with caplog.at_level(logging.DEBUG):
        assert extract_main_text(b"<p>A fragment, not a page.</p>").how == "empty"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert trafilatura_utils.filters == []


def test_broken_and_mislabelled_encodings_do_not_raise() -> None:
    latin = ARTICLE.replace("bridge", "brücke").encode("latin-1")
    assert "brücke" not in extract_main_text(latin, None, "utf-8").text  # replaced, not fatal
    assert extract_main_text(latin, None, "no-such-codec").text
    assert extract_main_text(
        b"<html><body>\xff\xfe\xfa" + ARTICLE.encode()[30:], None, "utf-8"
    ).text


def test_page_without_main_text_falls_back_or_is_empty() -> None:
    found = extract_main_text(b"<html><body><div>Only a short line here.</div></body></html>")
    assert found.how in ("fallback", "empty", "trafilatura")
    assert extract_main_text(b"<html><body></body></html>").how == "empty"


def test_title_comes_first_and_full_cascade_agrees_on_a_plain_article() -> None:
    page = ARTICLE.replace(
        "<title>Harbour bridge reopens",
        "<meta property='og:title' content='Bridge reopens'>"
        "<title>Harbour bridge reopens | The Daily Post",
    ).encode()
    full = extract_main_text(page, "http://example.com/a", "utf-8")
    fast = extract_main_text(page, "http://example.com/a", "utf-8", fast=True)
    # the title a reader sees, without the site's name
    assert full.title == "Harbour bridge reopens"
    assert full.text.startswith("Harbour bridge reopens\n\n")
    assert fast == full
    untitled = ARTICLE.replace("<title>Harbour bridge reopens</title>", "").encode()
    assert extract_main_text(untitled).title == "Harbour bridge reopens"  # its <h1>


def _jieba_loaded() -> bool:
    """Run in a worker: whether it has loaded jieba."""
    import sys

    return "jieba" in sys.modules


def test_workers_start_on_first_page_and_load_jieba_only_for_cjk() -> None:
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=1, fast=False)
    try:
        assert extractor._pool is None  # nothing started before a page needs it
        extracted, _ = extractor.submit_extract(ARTICLE.encode(), None, "utf-8").result(120)
        assert extracted.how == "trafilatura"
        assert extractor._submit(_jieba_loaded).result(60) is False  # an English crawl
        chinese = "<html><body><article><p>" + "北京市今天发布了新的交通规划。" * 30
        extractor.submit_extract((chinese + "</p></article></body></html>").encode(), None, "utf-8")
        assert extractor._submit(_jieba_loaded).result(120) is True
    finally:
        extractor.close()


def test_inline_extractor_signs_and_caches() -> None:
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=0)
    digest, found = extractor.cached(ARTICLE.encode())
    assert found is None
    extracted, signed = extractor.submit_extract(ARTICLE.encode(), None, "utf-8").result()
    assert extracted.how == "trafilatura" and signed.near is not None
    extractor.remember(digest, (extracted, signed))
    assert extractor.cached(ARTICLE.encode())[1] == (extracted, signed)


def test_worker_pool_extracts_in_other_processes() -> None:
    extractor = Extractor(SignerSpec("simhash", (("k", 3),), 50, 100_000), workers=1)
    try:
        extracted, signed = extractor.submit_extract(ARTICLE.encode(), None, "utf-8").result(
            timeout=60
        )
        assert "harbour bridge" in extracted.text.lower()
        assert isinstance(signed.near.backend, int)  # the simhash fingerprint
        assert extractor.submit_sign("short text").result(timeout=60).near is None
    finally:
        extractor.close()


def test_limit_hits_are_logged_with_their_url_at_warning_then_at_debug(caplog) -> None:
    over = PageLimitError("timeout", "over NEARDUP_PAGE_TIMEOUT (20 s)")
    extractor = Extractor(SignerSpec("exact", (), 50, 100_000), workers=0)
    with caplog.at_level(logging.DEBUG, logger="scrapy_neardup.extraction"):
        for n in range(7):
            extractor.log_limit(over, f"http://a/{n}", debug=False)
    assert [r.levelno for r in caplog.records] == [logging.WARNING] * 5 + [logging.DEBUG] * 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == (
        "scrapy-neardup: http://a/0 went over NEARDUP_PAGE_TIMEOUT (20 s) in its worker; "
        "kept unchecked"
    )
    assert messages[4].endswith("no more will be shown (see NEARDUP_DEBUG)")
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="scrapy_neardup.extraction"):
        extractor.log_limit(over, "http://a/7", debug=True)  # NEARDUP_DEBUG: every one shown
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_a_limit_hit_is_remembered_for_the_same_bytes() -> None:
    extractor = Extractor(SignerSpec("exact", (), 50, 100_000), workers=0)
    over = PageLimitError("memory", "over NEARDUP_PAGE_MEMORY (1024 MiB)")
    digest, found = extractor.cached(b"<html>heavy</html>")
    assert found is None
    extractor.remember(digest, over)
    assert extractor.cached(b"<html>heavy</html>")[1] is over
    assert extractor.cached(b"<html>other</html>")[1] is None


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data not found (real pages live there)")
def test_real_pages_extract_close_to_the_annotated_text() -> None:
    import json

    truth = json.loads((DATA / "article-extraction-benchmark" / "ground-truth.json").read_text())
    scores = []
    for sha, entry in sorted(truth.items())[:30]:
        html = gzip.decompress(
            (DATA / "article-extraction-benchmark" / "html" / f"{sha}.html.gz").read_bytes()
        )
        got = set(extract_main_text(html, entry["url"]).text.split())
        want = set(entry["articleBody"].split())
        scores.append(len(got & want) / max(len(want), 1))
    # trafilatura recovers most of the hand-annotated words on these pages (about 0.9 here).
    assert sum(scores) / len(scores) > 0.8


ADOPT_SCRIPT = """
import sys
from scrapy.utils.reactor import install_reactor, is_asyncio_reactor_installed
from scrapy.utils.test import get_crawler
try:
    is_asyncio_reactor_installed()
except RuntimeError:  # Scrapy 2.13's get_crawler() needs a reactor installed
    install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
from scrapy_neardup.state import NearDupState

# A threshold whose banding minhash._BANDINGS does not write out: only datasketch knows it.
settings = {"NEARDUP_WORKERS": 1, "NEARDUP_BACKEND_PARAMS": {"threshold": 0.45}}
state = NearDupState.from_crawler(get_crawler(settings_dict=settings))
assert "datasketch" not in sys.modules, "loaded at start"
page = ("<html><body><article><p>"
        + " ".join(f"word{i} and more text" for i in range(300))
        + "</p></article></body></html>").encode()
_, signed = state.extractor.submit_extract(page, "http://a/", "utf-8").result(120)
print(state.dedup.check_signed("a", signed).is_duplicate, state.dedup.method.bands,
      "datasketch" in sys.modules)
state.close()
"""


def test_the_crawler_process_adopts_the_minhash_banding_from_its_workers() -> None:
    """datasketch (and scipy, about 50 MB) is loaded in the workers only."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", ADOPT_SCRIPT], capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False", "32", "False"]  # datasketch's for 0.45 / 128


def test_a_worker_gives_back_the_memory_of_a_big_page() -> None:
    """A page that grows a worker by tens of MB leaves it near its resting size, not at
    its peak: the freed heap goes back to the system (page_limits.TRIM_ABOVE)."""
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=1)
    try:
        resting = extractor._submit(rss).result(120)
        paragraphs = "".join(
            f"<div><p>Paragraph {i} says something different about item {i}.</p></div>"
            for i in range(20_000)
        )
        page = f"<html><body>{paragraphs}</body></html>".encode()  # about 55 MB in a worker
        extracted, _ = extractor.submit_extract(page, None, "utf-8").result(120)
        assert extracted.text
        after = extractor._submit(rss).result(60)
        assert resting is not None and after is not None
        assert after - resting <= TRIM_ABOVE + 8 * 1024 * 1024
    finally:
        extractor.close()


def test_the_extractor_accounts_for_its_workers_time() -> None:
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=1)
    try:
        assert not extractor.started
        extractor.submit_extract(ARTICLE.encode(), None, "utf-8").result(120)
        assert extractor.started
    finally:
        extractor.close()
    timing = extractor.timing()
    assert timing["workers"] == 1
    assert timing["busy_s"] > 0 and timing["task_cpu_s"] > 0 and timing["idle_s"] >= 0
    assert timing["wait_s"] == 0  # only the middleware adds the items' waits


def test_workers_are_niced_only_when_they_could_fill_every_core() -> None:
    assert worker_niceness(2, cores=2) == WORKER_NICENESS
    assert worker_niceness(4, cores=2) == WORKER_NICENESS
    assert worker_niceness(1, cores=2) == 0
    assert worker_niceness(7, cores=8) == 0
    extractor = Extractor(SignerSpec("minhash", (), 50, 100_000), workers=1)
    try:
        assert extractor._submit(os.nice, 0).result(120) == os.nice(0) + worker_niceness(1)
    finally:
        extractor.close()
