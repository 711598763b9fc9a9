"""The frontier journal stays bounded while a crawl runs, and keeps exactly what is pending."""

from __future__ import annotations

from scrapy import Request

from scrapy_neardup import frontier as frontier_module
from scrapy_neardup.frontier import FRONTIER_JOURNAL, Frontier
from scrapy_neardup.urls import url_fingerprint


def request(n: int) -> tuple[Request, bytes]:
    url = f"https://example.com/article/{n}?" + "x" * 200
    return Request(url), url_fingerprint(url)


def test_compacted_as_requests_are_done(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(frontier_module, "COMPACT_MIN_BYTES", 64 * 1024)
    frontier = Frontier(tmp_path, flush_interval=0)
    frontier.open()
    requests = {}
    largest = 0
    for n in range(5_000):
        req, fp = request(n)
        frontier.schedule(req, fp)
        requests[n] = req
        if n >= 20:  # a queue about 20 deep: most requests are done soon after
            frontier.done(requests.pop(n - 20))
        largest = max(largest, (tmp_path / FRONTIER_JOURNAL).stat().st_size)
    one_record = len(b"Q") + 16 + 300  # about: fingerprint and a pickled request
    assert largest < 64 * 1024 + 40 * one_record * 4  # bounded, not 5,000 records
    frontier.journal.close()  # a crash: no "C"

    again = Frontier(tmp_path, flush_interval=0)
    again.open()
    assert again.crashed
    assert sorted(r.url for r in again.recover(spider=None)) == sorted(
        r.url for r in requests.values()
    )
    again.journal.close()


def test_done_of_an_unjournaled_request_writes_nothing(tmp_path) -> None:
    frontier = Frontier(tmp_path, flush_interval=0)
    frontier.open()
    size = (tmp_path / FRONTIER_JOURNAL).stat().st_size
    frontier.done_hex("00" * 16)
    frontier.journal.sync()
    assert (tmp_path / FRONTIER_JOURNAL).stat().st_size == size
    frontier.close()


def test_the_dupefilter_alone_keeps_no_frontier_and_starts_no_workers(tmp_path) -> None:
    import multiprocessing

    from scrapy.utils.test import get_crawler

    from scrapy_neardup import NearDupDupeFilter

    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path)})
    dupefilter = NearDupDupeFilter.from_crawler(crawler)
    dupefilter.open()
    assert not any(dupefilter.request_seen(request(n)[0]) for n in range(100))
    assert all(dupefilter.request_seen(request(n)[0]) for n in range(100))
    dupefilter.close("finished")
    assert not (tmp_path / "neardup" / FRONTIER_JOURNAL).exists()  # nothing would mark it done
    assert (tmp_path / "neardup" / "urls.bloom").exists()  # closing wrote the snapshot
    assert multiprocessing.active_children() == []
