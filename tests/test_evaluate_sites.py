"""The real-site evaluation's own parts on a tiny hand-made site: choosing pages, the scoring
(containment of a dropped page in its original, lossy drops) and one crawl through the plugin.
Nothing is downloaded; ``../shared`` is not needed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from evaluation import evaluate_sites as ev

WORDS = (
    "river stone garden lamp window paper cloud bridge engine letter market winter silver "
    "forest harbor candle mirror ladder pocket violin basket meadow tunnel orchard"
).split()


def paragraph(seed: int, n: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def page(title: str, paragraphs: list[str], links: Sequence[str] = ()) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav><ul>{nav}</ul></nav>"
        f"<article><h1>{title}</h1>{body}</article></body></html>"
    )


def write(root: Path, files: dict[str, str]) -> None:
    for name, html in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")


def test_containment_is_the_decisions_measure() -> None:
    assert ev.contained("a b c d e", "a b c d e x y z") == 1.0
    assert ev.contained("a b c d e", "a b c") == 1 / 3
    assert ev.contained("", "a b c") == 1.0  # an empty page loses nothing
    # 3-shingles within lines: paragraphs in another order lose nothing.
    assert ev.contained("a b c d\ne f g h", "e f g h\na b c d") == 1.0
    assert ev.contained("我爱北京天安门", "我爱北京天安门 and Paris") == 1.0
    assert ev.LOSSY_BELOW == 0.8


def test_choose_pages_keeps_each_entry_to_its_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "en/index.html": page("en", [], ["a.html", "b.html", "../de/a.html", "mailto:x@y"]),
            "en/a.html": page("a", [], ["b.html#top", "http://example.com/x.html"]),
            "en/b.html": page("b", [], ["c.html"]),
            "en/c.html": page("c", []),
            "de/index.html": page("de", [], ["a.html", "missing.html"]),
            "de/a.html": page("a", [], ["/en/c.html"]),
        },
    )
    assert ev.choose_pages(tmp_path, ["en/index.html", "de/index.html"], 100) == [
        "en/index.html",
        "de/index.html",
        "en/a.html",
        "de/a.html",
        "en/b.html",
        "en/c.html",
    ]
    # a cap gives every entry its turn
    assert ev.choose_pages(tmp_path, ["en/index.html", "de/index.html"], 3) == [
        "en/index.html",
        "de/index.html",
        "en/a.html",
    ]


def test_score_counts_lossy_drops(tmp_path: Path) -> None:
    full = [paragraph(i) for i in range(4)]
    write(
        tmp_path,
        {
            "full.html": page("Chapter", full),
            "part.html": page("Chapter", full[:2]),
            "copy.html": page("Chapter", full),
        },
    )
    texts = ev.Texts(tmp_path, tmp_path / "texts.json")
    crawled = {
        "kept": ["part.html"],
        "drops": [
            ["full.html", "part.html", "minhash", 0.5],  # the richer page dropped: lossy
            ["copy.html", "full.html", "minhash", 1.0],
            ["other.html", "", "dropped for another reason", 0.0],
        ],
    }
    s = ev.score(crawled, texts)
    assert (s.pages, s.dropped, s.lossy, s.unscored) == (4, 3, 1, 1)
    assert s.bins == [0, 0, 1, 0, 1]  # half of "full" is in "part"; "copy" is all in "full"
    (c, dropped, original, method, _), (c2, *_) = s.worst
    assert (dropped, original, method) == ("full.html", "part.html", "minhash")
    assert 0.45 < c < 0.55 and c2 == 1.0
    texts.save()
    assert ev.Texts(tmp_path, tmp_path / "texts.json").cache == texts.cache


def test_crawl_drops_an_exact_copy_and_scores_it(tmp_path: Path) -> None:
    text = [paragraph(10 + i) for i in range(5)]
    write(
        tmp_path,
        {
            "index.html": page("Home", [paragraph(1)], ["one.html", "two.html", "other.html"]),
            "one.html": page("One", text),
            "two.html": page("One", text),
            "other.html": page("Other", [paragraph(30 + i) for i in range(5)]),
        },
    )
    pages = ev.choose_pages(tmp_path, ["index.html"], 10)
    crawled = ev.crawl_site(tmp_path, pages, ["index.html"], "exact")
    assert crawled["finish_reason"] == "finished"
    assert sorted(crawled["kept"] + [d[0] for d in crawled["drops"]]) == sorted(pages)
    assert len(crawled["drops"]) == 1
    dropped, original, method, _ = crawled["drops"][0]
    assert {dropped, original} == {"one.html", "two.html"} and method == "exact"
    s = ev.score(crawled, ev.Texts(tmp_path, None))
    assert (s.dropped, s.lossy) == (1, 0) and s.worst[0][0] == 1.0


def test_body_text_is_every_visible_word() -> None:
    html = b"<html><body><nav>Home</nav><p>one</p><p>two</p><script>x = 1</script></body></html>"
    assert ev.body_text(html) == "Home one two"
