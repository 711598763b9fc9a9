"""The gold-set evaluation's own parts on a tiny hand-made gold set: reading it, the scoring
(copies dropped, pairwise figures of the clusters, wrong-story drops), the peers, the engine
replay and one crawl through the plugin. Nothing is downloaded; the gold set is not needed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from evaluation import evaluate_goldset as ev

WORDS = (
    "river stone garden lamp window paper cloud bridge engine letter market winter silver "
    "forest harbor candle mirror ladder pocket violin basket meadow tunnel orchard"
).split()


def story_text(seed: int, n: int = 120) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) + str(rng.randrange(50)) for _ in range(n))


def page(title: str, text: str, outlet: str) -> bytes:
    links = "".join(f'<a href="http://www.{outlet}/{i}">menu {i}</a> ' for i in range(3))
    return (
        f"<html><head><title>{title}</title></head><body><nav>{links}</nav>"
        f"<article><h1>{title}</h1><p>{text}</p></article></body></html>"
    ).encode()


def write_goldset(root: Path) -> None:
    """Two stories of three pages each, every page from its own outlet; a third story of one."""
    for story, seed in (("Alpha", 1), ("Beta", 2), ("Gamma", 3)):
        text = story_text(seed)
        folder = root / story
        folder.mkdir(parents=True)
        copies = 1 if story == "Gamma" else 3
        for n in range(copies):
            name = "original.htm" if n == 0 else f"{story[0].lower()}{n}.htm"
            (folder / name).write_bytes(page(f"{story} {n}", text, f"{story}{n}.example"))
    (root / ".DS_Store").write_bytes(b"\x00")


def test_pairwise_scores_clusters_against_stories() -> None:
    truth = ["a", "a", "a", "b", "b"]
    assert ev.pairwise([0, 0, 0, 3, 3], truth) == (1.0, 1.0, 1.0)
    # one cluster of everything: 4 true pairs of 10
    p, r, f1 = ev.pairwise([0] * 5, truth)
    assert (p, r) == (0.4, 1.0) and f1 == pytest.approx(2 * 0.4 / 1.4)
    # singletons: no pair said, none found
    assert ev.pairwise([0, 1, 2, 3, 4], truth) == (1.0, 0.0, 0.0)
    # a split story: 1 of its 3 pairs
    assert ev.pairwise([0, 0, 2, 3, 3], truth)[:2] == (1.0, 0.5)


def test_clusters_follow_links_transitively() -> None:
    assert ev.clusters(5, [(1, 0), (2, 1), (4, 3)]) == [0, 0, 0, 3, 3]
    assert ev.clusters(3, []) == [0, 1, 2]


def test_score_reads_a_run_as_a_filter() -> None:
    stories = ["a", "a", "a", "a", "b", "b"]
    # page 1 and 2 dropped for 0; 3 kept (a second copy of "a"); 5 dropped for 0 (wrong story)
    run = ev.Run(dropped_for={1: 0, 2: 0, 5: 0}, near_to={3: 0}, related_to={})
    s = ev.score(run, stories)
    # copies: 6 - 2 stories = 4; kept beyond one per story: "a" keeps 0 and 3 -> 1; "b" keeps 4
    assert s.copies_dropped == pytest.approx(1 - 1 / 4)
    assert s.wrong_story == 1 and s.dropped == 3
    # clusters of drops: {0, 1, 2, 5}, {3}, {4}: 6 pairs said, 3 of them true, of 7 true pairs
    assert (s.p, s.r) == (pytest.approx(3 / 6), pytest.approx(3 / 7))
    # with the near link: {0, 1, 2, 3, 5}, {4}: 10 pairs said, 6 true
    assert (s.p_all, s.r_all) == (pytest.approx(6 / 10), pytest.approx(6 / 7))


def test_load_goldset_reads_stories_and_outlets(tmp_path: Path) -> None:
    write_goldset(tmp_path)
    pages = ev.load_goldset(tmp_path)
    assert [p.name for p in pages] == [
        "Alpha/a1.htm",
        "Alpha/a2.htm",
        "Alpha/original.htm",
        "Beta/b1.htm",
        "Beta/b2.htm",
        "Beta/original.htm",
        "Gamma/original.htm",
    ]
    assert len({p.host for p in pages}) == 7  # each page's links name its own outlet
    assert all(p.host.endswith(".localhost") for p in pages)
    assert ev.outlet_of(b'<a href="http://www.x.org/a">') == "x.org"
    assert ev.outlet_of(b"<p>no links</p>") == ""
    assert {p.story for p in ev.load_goldset(tmp_path, max_stories=2)} == {"Alpha", "Beta"}


def test_missing_goldset_says_where_to_get_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ev.main(["--goldset", str(tmp_path / "absent")]) == 1
    out = capsys.readouterr().out
    assert "nathanduchesne/SpotSigsGoldSet" in out and "git clone" in out
    assert str(tmp_path / "absent") in out


def test_peers_merge_copies_in_the_given_order() -> None:
    texts = [story_text(1), story_text(2), story_text(1), story_text(2) + " extra words"]
    order = [2, 1, 0, 3]
    run = ev.text_dedup(texts, order)
    assert run.dropped_for == {0: 2, 3: 1}
    hand = ev.handwritten(texts, order)
    assert hand.dropped_for[0] == 2 and 1 not in hand.dropped_for


def test_engine_replay_and_crawl_agree_on_a_tiny_gold_set(tmp_path: Path) -> None:
    write_goldset(tmp_path)
    pages = ev.load_goldset(tmp_path)
    stories = [p.story for p in pages]
    order = ev.order_of(len(pages), 0)
    texts = [ev.plugin_text(p.body) for p in pages]
    replayed = ev.engine_runs(texts, [order], "minhash", "similar")[0]
    crawled = ev.crawl(pages, order, "minhash", "similar")
    assert crawled.missing == 0 and sorted(crawled.met) == list(range(len(pages)))
    for run in (replayed, crawled):
        s = ev.score(run, stories)
        assert s.copies_dropped == 1.0 and (s.p, s.r) == (1.0, 1.0) and s.wrong_story == 0


def test_other_settings_are_read_as_python_literals() -> None:
    assert ev.setting_of("NEARDUP_SIMILARITY_SPOTS=False") == ("NEARDUP_SIMILARITY_SPOTS", False)
    assert ev.setting_of("NEARDUP_SIMILARITY=0.4") == ("NEARDUP_SIMILARITY", 0.4)
    assert ev.setting_of("NEARDUP_BACKEND=simhash") == ("NEARDUP_BACKEND", "simhash")
    settings = {
        "NEARDUP_SIMILARITY_SPOTS": False,
        "NEARDUP_CONTAINED_WORDS": 0.8,
        "NEARDUP_THRESHOLD": 0.3,
        "NEARDUP_BACKEND_PARAMS": {"shingles": "word:2"},
    }
    assert ev.engine_options(settings) == {
        "similar_spots": False,
        "contained_words": 0.8,
        "threshold": 0.3,
        "shingles": "word:2",
    }
    with pytest.raises(SystemExit, match="NEARDUP_STORAGE"):
        ev.engine_options({"NEARDUP_STORAGE": "files"})
