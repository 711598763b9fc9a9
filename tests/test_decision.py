"""The decision the user chooses (NEARDUP_DECISION) and its thresholds: each setting moves
the result of a pair built on either side of it; near pairs are recorded, saved, tagged and
reported; a state decided otherwise refuses to resume, naming the setting."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import numpy as np
import pytest
from saved_state import resume
from scrapy.utils.test import get_crawler

from corpus.text import letter_word
from scrapy_neardup.backends import Match, make_backend
from scrapy_neardup.backends.containment import SIMILAR_SHINGLES, SIMILARITY, Verified
from scrapy_neardup.backends.phrases import (
    CUT_SPOTS,
    SPOT_CHAIN,
    SPOT_MIN,
    SPOT_SIMILARITY,
    jaccard,
    shingles_of,
    spot_similarity,
    spots_of,
)
from scrapy_neardup.backends.spotsigs import SpotSigsBackend
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator, best_match
from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.text import Document, ShingleSpec

VOCABULARY = [letter_word(i) for i in range(5000)]


def words(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(VOCABULARY) for _ in range(n)]


def text(ws: list[str]) -> str:
    """Lines of 12 words (the containment rule counts shingles within a line)."""
    return "\n".join(" ".join(ws[i : i + 12]) for i in range(0, len(ws), 12))


def edited(ws: list[str], rate: float, seed: int) -> list[str]:
    """Each word replaced by a fresh one with probability ``rate``: a reprint with edits."""
    rng = random.Random(seed)
    return [rng.choice(VOCABULARY) if rng.random() < rate else w for w in ws]


BASE = words(1)
FRESH = words(2)
STOPWORDS = ["the", "of", "and", "in", "to", "a", "was", "for", "that", "with", "on", "by"]


def english(seed: int, n: int = 1200) -> list[str]:
    """Words of an English-like article: a stopword and two content words, again and again
    (so it has SpotSigs' spots: an antecedent and the next content word)."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        out += [rng.choice(STOPWORDS), rng.choice(VOCABULARY), rng.choice(VOCABULARY)]
    return out[:n]


STORY = english(3)


def pair(dedup: Deduplicator, new: list[str], base: list[str] = BASE) -> Any:
    assert not dedup.check("a", text(base)).is_duplicate
    return dedup.check("b", text(new))


def outcome(verdict: Any) -> str:
    if verdict.is_duplicate:
        return "dropped"
    if verdict.related_to:
        return "related"
    return "near" if verdict.near_to else "kept"


# -- the decision ---------------------------------------------------------------------------


def test_a_ten_percent_reprint_is_near_under_contained_and_dropped_under_similar() -> None:
    reprint = edited(BASE, 0.1, seed=3)
    kept = pair(Deduplicator(), reprint)
    assert outcome(kept) == "near" and kept.near_to == "a"
    assert kept.similarity >= SIMILARITY  # the similar rule's measure, reported
    dropped = pair(Deduplicator(decision="similar"), reprint)
    assert dropped.duplicate_of == "a"


def test_an_excerpt_is_dropped_under_contained_and_near_under_similar() -> None:
    # A third of the kept page: contained, but a 2-shingle Jaccard of 0.33, below the
    # similar rule's 0.35 (candidates at a lower threshold: its 3-shingle Jaccard is too)
    excerpt = BASE[:100]
    assert pair(Deduplicator(threshold=0.2), excerpt).duplicate_of == "a"
    verdict = pair(Deduplicator(decision="similar"), excerpt)
    assert outcome(verdict) == "near" and verdict.near_to == "a"


def test_unrelated_pages_are_neither() -> None:
    for decision in ("contained", "similar"):
        assert outcome(pair(Deduplicator(decision=decision), FRESH)) == "kept"


def test_jaccard_from_the_filter_is_the_exact_jaccard() -> None:
    spec = ShingleSpec("word", SIMILAR_SHINGLES)
    a, b = Document(text(BASE)), Document(text(edited(BASE, 0.15, seed=4)))
    sa, sb = set(a.shingles(spec).tolist()), set(b.shingles(spec).tolist())
    exact = len(sa & sb) / len(sa | sb)
    assert jaccard(shingles_of(b, spec), shingles_of(a, spec)) == pytest.approx(exact, abs=0.02)


def test_the_decision_is_checked() -> None:
    with pytest.raises(ValueError, match="decision"):
        Deduplicator(decision="jaccard")
    with pytest.raises(ValueError, match="similarity"):
        Verified(make_backend("minhash"), similarity=0.0)
    with pytest.raises(ValueError, match="similar shingles"):
        Verified(make_backend("minhash"), similar_shingles=9)


@pytest.mark.parametrize("decision", ["contained", "similar"])
def test_candidates_default_to_the_similar_rules_shingles(decision: str) -> None:
    """Under either decision: under "contained", what the "similar" rule would drop is
    proposed, verified and recorded as near."""
    dedup = Deduplicator(decision=decision)
    assert dedup.method.params()["shingles"] == f"word:{SIMILAR_SHINGLES}"
    assert dedup.method.threshold < SIMILARITY
    # SpotSigs's index finds every pair at the spot rule's Jaccard, over the rule's spots
    spots = Deduplicator("spotsigs", decision=decision).method
    assert (spots.chain, spots.threshold) == (SPOT_CHAIN, SPOT_SIMILARITY)
    assert Deduplicator("spotsigs", decision=decision, similar_spots=False).method.chain == 2
    # a backend's own parameters win
    assert Deduplicator(shingles="word:3").method.params()["shingles"] == "word:3"
    assert Deduplicator(decision=decision, threshold=0.5).method.threshold == 0.5


# -- every threshold moves the result ---------------------------------------------------------


def spaced_edits(ws: list[str], every: int) -> list[str]:
    """One word in the middle of every ``every``-th line of 12 replaced: scattered edits."""
    return [FRESH[i] if i % (12 * every) == 6 else w for i, w in enumerate(ws)]


def test_contained_words() -> None:
    # One word in every other line: 0.96 of its words covered, nothing else lost.
    new = spaced_edits(BASE, 2)
    assert outcome(pair(Deduplicator(contained_words=0.9), new)) == "dropped"
    assert outcome(pair(Deduplicator(contained_words=0.97), new)) != "dropped"
    # 15 new words at the end are a run the kept page lacks: never dropped.
    assert outcome(pair(Deduplicator(contained_words=0.5), BASE[:285] + FRESH[:15])) != "dropped"


def test_contained_shingles() -> None:
    # One word in every line: 7 of each line's 10 3-shingles kept.
    new = spaced_edits(BASE, 1)
    assert outcome(pair(Deduplicator(contained_shingles=0.5), new)) == "dropped"
    assert outcome(pair(Deduplicator(contained_shingles=0.8), new)) != "dropped"


def test_related() -> None:
    # 270 of the kept page's 300 words, and 150 more: holds ~0.9 of its phrases.
    new = BASE[:270] + FRESH[:150]
    assert outcome(pair(Deduplicator(related=0.8), new)) == "related"
    assert outcome(pair(Deduplicator(related=0.95), new)) != "related"


def test_similarity() -> None:
    new = edited(BASE, 0.2, seed=6)  # 2-shingle Jaccard ~0.45
    # the shingle rule alone (the spot rule would take this 20 % reprint at any threshold)
    shingles = {"similar_spots": False}
    assert outcome(pair(Deduplicator(decision="similar", similarity=0.35, **shingles), new)) == (
        "dropped"
    )
    assert outcome(pair(Deduplicator(decision="similar", similarity=0.6, **shingles), new)) != (
        "dropped"
    )
    # under "contained" it says which pairs are near
    assert outcome(pair(Deduplicator(similarity=0.35, **shingles), new)) == "near"
    assert outcome(pair(Deduplicator(similarity=0.6, **shingles), new)) == "kept"


def test_similarity_shingles() -> None:
    new = edited(BASE, 0.1, seed=7)  # word-set Jaccard ~0.8, 3-shingle Jaccard ~0.55
    for size, expected in ((1, "dropped"), (3, "kept")):
        dedup = Deduplicator(
            decision="similar", similarity=0.7, similar_shingles=size, similar_spots=False
        )
        assert outcome(pair(dedup, new)) == expected, size


# -- the spot rule ------------------------------------------------------------------------------


def cut(story: list[str], share: float) -> str:
    """An outlet's cut of the story: its first ``share``, retitled, in the outlet's menu."""
    menu = "Home | News | Sport | Weather | Contact us"
    return "\n".join(["Another headline for it", menu, text(story[: int(share * len(story))])])


def test_a_cut_reprint_is_similar_by_its_spots() -> None:
    new = cut(STORY, 0.25)  # a quarter: a 2-shingle Jaccard of ~0.25
    assert jaccard(
        *(shingles_of(Document(t), ShingleSpec("word", 2)) for t in (new, text(STORY)))
    ) < (SIMILARITY)
    dropped = Deduplicator(decision="similar")
    assert not dropped.check("a", text(STORY)).is_duplicate
    assert dropped.check("b", new).duplicate_of == "a"
    # the shingle rule alone keeps it (its headline and menu are its own: not contained)
    alone = Deduplicator(decision="similar", similar_spots=False)
    alone.check("a", text(STORY))
    assert outcome(alone.check("b", new)) == "kept"
    # either way round: the full story after its cut joins it
    later = Deduplicator(decision="similar")
    later.check("b", new)
    assert later.check("a", text(STORY)).duplicate_of == "b"


def test_unrelated_articles_are_not_similar_by_their_spots() -> None:
    assert outcome(pair(Deduplicator(decision="similar"), english(4), STORY)) == "kept"
    assert outcome(pair(Deduplicator(decision="similar"), english(5, 300), STORY)) == "kept"


def test_spots_from_the_filter_are_the_exact_spots() -> None:
    full, part = Document(text(STORY)), Document(text(edited(STORY[:600], 0.05, seed=8)))
    method = SpotSigsBackend(chain=SPOT_CHAIN)
    a, b = set(method.signature(full).tolist()), set(method.signature(part).tolist())
    assert len(b) >= CUT_SPOTS
    holds, closeness = spot_similarity(spots_of(part), spots_of(full))
    assert holds and closeness == pytest.approx(len(a & b) / len(b), abs=0.03)  # the cut's share
    # too little running text: the spot rule cannot say
    few = Document(text(STORY[: 2 * SPOT_MIN]))
    assert len(method.signature(few)) < SPOT_MIN
    assert spot_similarity(spots_of(few), spots_of(full)) is None


def test_a_copy_joins_the_closest_kept_page() -> None:
    wide = Match("wide", 0.9, "minhash", containment=0.95, rank=0.3)
    close = Match("close", 0.5, "minhash", containment=0.8, rank=0.6)
    assert best_match([wide, close]).key == "close"
    # under "contained" every rank is 0: the one holding most of it
    assert best_match([Match("a", 0.9, "m", 0.8), Match("b", 0.5, "m", 0.95)]).key == "b"
    # the engine ranks a copy by the similar rule's measure, and only under "similar"
    story, reprint = Document(text(STORY)), Document(text(edited(STORY, 0.01, seed=9)))
    for decision in ("similar", "contained"):
        dedup = Deduplicator(decision=decision)
        dedup.check("story", story)
        found = dedup.near.search("", dedup.near.method.signature(reprint), add=False)[0]
        assert [m.key for m in found] == ["story"]
        assert (found[0].rank > 0.8) == (decision == "similar") and found[0].rank >= 0


# -- the title check (docs/design.md#similar-decision) --------------------------------------


def headline(n: int, first: int) -> list[str]:
    """``n`` title words of their own (in no article's or template's text)."""
    return [letter_word(6000 + first + i) for i in range(n)]


def news(title: list[str], story: list[str], template: list[str]) -> str:
    """A page as extraction writes it: its title, a blank line, then its story (whose lead
    repeats the title's words) and its template, in sentences of 12 words."""
    ws = story + template
    lines = [" ".join(ws[i : i + 12]) + "." for i in range(0, len(ws), 12)]
    return " ".join(title) + "\n\n" + "\n".join(lines)


TITLE_X, TITLE_Y = headline(5, 0), headline(5, 10)
STORY_X, STORY_Y = TITLE_X + english(30, 595), TITLE_Y + english(31, 95)


def test_two_articles_of_one_template_are_not_similar_by_their_template() -> None:
    # a comment thread of 1,000 words under two short articles: the pair's 2-shingle Jaccard
    # is the template's, far above the threshold, but neither title is in the other page
    thread = english(32, 1000)
    a, b = news(TITLE_X, STORY_X[:100], thread), news(TITLE_Y, STORY_Y, thread)
    method = Deduplicator(decision="similar").near.method
    signed_a, signed_b = method.signature(Document(a)), method.signature(Document(b))
    assert jaccard(signed_b.shingles, signed_a.shingles) > 2 * SIMILARITY
    assert len(signed_a.titles) == len(signed_b.titles) == 5
    assert method.similar(signed_b, signed_a, 0.0)[0] is False
    assert not pair_of(Deduplicator(decision="similar"), a, b).is_duplicate  # kept (related)
    # a page stored before the title check: the pair decides as it did
    older = method.decode(method.encode(signed_a._replace(titles=None)))
    assert older.titles is None and method.similar(signed_b, older, 0.0)[0] is True
    # under "contained" the check decides nothing: the pair is near, as it was
    contained = Deduplicator().near.method
    signed = [contained.signature(Document(page)) for page in (b, a)]
    assert contained.similar(*signed, 0.0)[0] is True


def test_a_retitled_reprint_in_another_template_is_still_dropped() -> None:
    # the outlet's headline keeps two of the story's words (its lead repeats them) and adds
    # its own; the story's edited in 5 % of its words, in a template of its own
    retitled = TITLE_X[:2] + headline(2, 20)
    kept = news(TITLE_X, STORY_X, english(33, 300))
    reprint = news(retitled, edited(STORY_X, 0.05, seed=34), english(34, 300))
    method = Deduplicator(decision="similar").near.method
    assert len(method.signature(Document(reprint)).titles) == 2  # the two its lead repeats
    assert pair_of(Deduplicator(decision="similar"), reprint, kept).duplicate_of == "a"


def commented(words: list[str], thread: list[str]) -> Document:
    """A page as extraction reads it: an article, then a thread of readers' comments."""
    article = text(words)
    return Document(f"{article}\n{text(thread)}", article_end=len(article))


def test_similar_reads_the_article_not_the_readers_comments() -> None:
    # a 10 % reprint under a thread of other readers' comments, three times the article
    story, thread, other = english(40, 300), english(41, 900), english(42, 900)
    reprint = edited(story, 0.1, seed=43)
    dedup = Deduplicator(decision="similar")
    assert not dedup.check("a", commented(story, thread)).is_duplicate
    assert dedup.check("b", commented(reprint, other)).duplicate_of == "a"
    # another article under the first one's thread: the thread makes no copy of it
    assert not dedup.check("c", commented(english(44, 300), thread)).is_duplicate
    # read as all article, the threads decide both pairs the other way
    dedup = Deduplicator(decision="similar")
    assert not dedup.check("a", text(story + thread)).is_duplicate
    assert not dedup.check("b", text(reprint + other)).is_duplicate
    assert dedup.check("c", text(english(44, 300) + thread)).duplicate_of == "a"


def test_an_article_too_short_to_judge_leaves_the_comments_in() -> None:
    # a forum's threads read as a one-line header and its posts as comments: two threads
    # under one header are two pages, not copies of each other
    header = english(45, 20)
    dedup = Deduplicator(decision="similar")
    assert not dedup.check("a", commented(header, english(46, 600))).is_duplicate
    assert not dedup.check("b", commented(header, english(47, 600))).is_duplicate


def test_the_readers_comments_are_lines_the_lossless_rule_covers() -> None:
    # the same article under another thread loses that thread's lines: near, not dropped
    story, thread, other = english(40, 300), english(41, 900), english(42, 900)
    dedup = Deduplicator()
    assert not dedup.check("a", commented(story, thread)).is_duplicate
    assert outcome(dedup.check("b", commented(story, other))) == "near"
    assert dedup.check("c", commented(story, thread[:300])).duplicate_of == "a"


def test_title_words_are_saved_with_the_signature() -> None:
    method = Deduplicator(decision="similar").near.method
    signed = method.signature(Document(news(TITLE_X, STORY_X, [])))
    decoded = method.decode(method.encode(signed))
    assert np.array_equal(decoded.titles, signed.titles) and len(decoded.titles) == 5
    assert np.array_equal(decoded.excerpts, signed.excerpts)


def pair_of(dedup: Deduplicator, new: str, base: str) -> Any:
    assert not dedup.check("a", base).is_duplicate
    return dedup.check("b", new)


@pytest.mark.parametrize("size", [2, 3])
def test_the_spot_filter_is_saved_with_the_signature(size: int) -> None:
    method = Deduplicator(decision="similar", similar_shingles=size).near.method
    signed = method.signature(Document(text(STORY)))
    decoded = method.decode(method.encode(signed))
    assert (decoded.shingles is None) == (size == 3)
    assert decoded.spots.count == signed.spots.count
    assert spot_similarity(signed.spots, decoded.spots)[1] == pytest.approx(1.0)
    # a signature written before the spot rule: no spots, the shingle rule decides
    older = method.decode(method.encode(signed._replace(spots=None)))
    assert older.spots is None
    assert method.similar(signed, older, 0.0) == (True, pytest.approx(1.0))


def _simhash_pair(low: int, high: int) -> tuple[list[str], int]:
    """A page whose simhash lies ``low`` to ``high`` bits from BASE's."""
    method = make_backend("simhash", k=12)
    base = method.signature(Document(text(BASE)))
    for seed in range(400):
        new = edited(BASE, 0.01 + (seed % 40) / 100, seed=100 + seed)
        distance = (method.signature(Document(text(new))) ^ base).bit_count()
        if low <= distance <= high:
            return new, distance
    raise AssertionError("no page at that distance")  # pragma: no cover


def test_simhash_k_up_to_12_finds_what_7_does_not() -> None:
    new, distance = _simhash_pair(8, 12)
    similarity = 1.0 - 12 / 64
    wide = Deduplicator("simhash", k=12, decision="similar", similarity=similarity)
    assert pair(wide, new).duplicate_of == "a", distance
    narrow = Deduplicator("simhash", k=7, decision="similar", similarity=1.0 - 7 / 64)
    assert not pair(narrow, new).is_duplicate
    with pytest.raises(ValueError, match=r"1\.\.12"):
        make_backend("simhash", k=13)


def test_cosine_threshold_decides_over_its_whole_range() -> None:
    new = edited(BASE, 0.05, seed=8)
    assert make_backend("cosine", threshold=0.3).threshold == 0.3
    low = Deduplicator("cosine", decision="similar", similarity=0.5)
    high = Deduplicator("cosine", decision="similar", similarity=0.99)
    assert pair(low, new).duplicate_of == "a"
    assert not pair(high, new).is_duplicate
    # the method's threshold is the rule's default
    assert Deduplicator("cosine", threshold=0.3).near.method.similarity_threshold == 0.3


# -- settings -----------------------------------------------------------------------------------


def test_settings_reach_the_engine() -> None:
    config = NearDupConfig.from_settings(
        {
            "NEARDUP_DECISION": "Similar",
            "NEARDUP_CONTAINED_WORDS": "0.95",
            "NEARDUP_CONTAINED_SHINGLES": 0.85,
            "NEARDUP_RELATED": 0.7,
            "NEARDUP_SIMILARITY": 0.4,
            "NEARDUP_SIMILARITY_SHINGLES": 3,
            "NEARDUP_SIMILARITY_SPOTS": "False",
            "NEARDUP_NEAR_FIELD": "near",
        }
    )
    assert config.decision == "similar" and config.near_field == "near"
    dedup = Deduplicator(backend_from_config(config), **config.verify_params())
    verify = dedup.near.method
    assert (verify.decision, verify.coverage, verify.shingles, verify.related) == (
        "similar",
        0.95,
        0.85,
        0.7,
    )
    assert (verify.similarity_threshold, verify.similar_shingles) == (0.4, 3)
    assert not verify.similar_spots and verify.signature(Document(text(STORY)))[3] is None
    assert config.backend_kwargs()["shingles"] == "word:3"  # the candidates follow the rule
    default = NearDupConfig.from_settings({})
    assert default.decision == "contained"  # with the similar rule's candidates
    assert default.backend_kwargs() == {"shingles": "word:2", "threshold": 0.2}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NEARDUP_DECISION", "jaccard"),
        ("NEARDUP_CONTAINED_WORDS", 0),
        ("NEARDUP_CONTAINED_WORDS", 1.5),
        ("NEARDUP_CONTAINED_SHINGLES", "x"),
        ("NEARDUP_RELATED", -0.1),
        ("NEARDUP_SIMILARITY", 2),
        ("NEARDUP_SIMILARITY_SHINGLES", 0),
        ("NEARDUP_SIMILARITY_SHINGLES", 6),
        ("NEARDUP_SIMILARITY_SPOTS", "sometimes"),
        ("NEARDUP_NEAR_FIELD", " "),
    ],
)
def test_bad_values_name_the_setting(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=name):
        NearDupConfig.from_settings({name: value})


def test_simhash_similarity_must_be_within_its_k() -> None:
    settings = {"NEARDUP_BACKEND": "simhash", "NEARDUP_SIMILARITY": 0.8}  # 13 bits
    with pytest.raises(ConfigError, match="NEARDUP_SIMILARITY"):
        NearDupConfig.from_settings(settings)
    NearDupConfig.from_settings({**settings, "NEARDUP_SIMHASH_K": 12, "NEARDUP_SIMILARITY": 0.82})


# -- saved state --------------------------------------------------------------------------------


def test_state_records_the_decision_and_refuses_another() -> None:
    saved = Deduplicator(decision="similar")
    pair(saved, edited(BASE, 0.1, seed=3))
    again = resume(saved, Deduplicator(decision="similar"))
    assert again.members == saved.members
    with pytest.raises(StateError, match="NEARDUP_DECISION"):
        resume(saved, Deduplicator())
    with pytest.raises(StateError, match="NEARDUP_SIMILARITY="):
        resume(saved, Deduplicator(decision="similar", similarity=0.5))
    default = Deduplicator()
    for kwargs, setting in (
        ({"contained_words": 0.95}, "NEARDUP_CONTAINED_WORDS"),
        ({"contained_shingles": 0.9}, "NEARDUP_CONTAINED_SHINGLES"),
        ({"related": 0.9}, "NEARDUP_RELATED"),
        ({"similar_shingles": 1}, "NEARDUP_SIMILARITY_SHINGLES"),
        ({"similar_spots": False}, "NEARDUP_SIMILARITY_SPOTS"),
    ):
        with pytest.raises(StateError, match=setting):
            resume(default, Deduplicator(**kwargs))


def test_a_default_states_parameters() -> None:
    verify = Deduplicator().meta()["params"]["verify"]
    assert verify == {"filter": "bloom10+words", "coverage": 0.9, "related": 0.8}


def test_near_relations_are_saved_and_survive_a_jobdir(tmp_path) -> None:
    from scrapy_neardup.report import render, summarize
    from scrapy_neardup.report_html import page as page_for_dir
    from scrapy_neardup.state import NearDupState

    dedup = Deduplicator()
    pair(dedup, edited(BASE, 0.1, seed=3))
    again = resume(dedup, Deduplicator())
    assert again.near_members == dedup.near_members and "b" in again.near_members

    def state(jobdir):
        settings = {"JOBDIR": str(jobdir), "NEARDUP_WORKERS": 0, "NEARDUP_FLUSH_INTERVAL": 0}
        return NearDupState.from_crawler(get_crawler(settings_dict=settings))

    first = state(tmp_path / "job")
    first.dedup.check("https://a.org/1", text(BASE))
    verdict = first.dedup.check("https://b.org/1", text(edited(BASE, 0.1, seed=3)))
    assert verdict.near_to == "https://a.org/1"
    first.sync()
    assert summarize(tmp_path / "job" / "neardup")["content"]["near_count"] == 1  # journal
    first.close()
    second = state(tmp_path / "job")  # from the snapshot
    assert second.dedup.near_members["https://b.org/1"].head == "https://a.org/1"
    second.close()
    summary = summarize(tmp_path / "job" / "neardup")
    assert summary["content"]["near"][0] == {
        "item": "https://b.org/1",
        "near": "https://a.org/1",
        "similarity": pytest.approx(summary["content"]["near"][0]["similarity"]),
    }
    assert "near https://a.org/1" in render(summary)
    page, _ = page_for_dir(tmp_path / "job" / "neardup")
    assert 'id="near"' in page and "https://b.org/1" in page


def test_a_state_resumed_with_another_decision_refuses_at_start(tmp_path) -> None:
    from scrapy_neardup.state import NearDupState

    def state(**settings):
        settings = {"JOBDIR": str(tmp_path / "job"), "NEARDUP_WORKERS": 0, **settings}
        return NearDupState.from_crawler(get_crawler(settings_dict=settings))

    first = state(NEARDUP_DECISION="similar")
    first.dedup.check("https://a.org/1", text(BASE))
    first.close()
    with pytest.raises(StateError, match="NEARDUP_DECISION"):
        state()
    with pytest.raises(StateError, match="NEARDUP_SIMILARITY"):
        state(NEARDUP_DECISION="similar", NEARDUP_SIMILARITY=0.5)
    state(NEARDUP_DECISION="similar").close()


# -- the pipeline ---------------------------------------------------------------------------


def _pipeline(**settings: Any) -> Any:
    from scrapy_neardup.pipeline import NearDupPipeline

    crawler = get_crawler(
        settings_dict={"NEARDUP_WORKERS": 0, "NEARDUP_TEXT_FIELD": "text", **settings}
    )
    pipe = NearDupPipeline.from_crawler(crawler)
    pipe.open_spider()
    return pipe


def test_tag_mode_tags_a_near_reprint() -> None:
    pipe = _pipeline(NEARDUP_ACTION="tag")
    asyncio.run(pipe.process_item({"url": "https://a.org/1", "text": text(BASE)}))
    reprint = {"url": "https://b.org/1", "text": text(edited(BASE, 0.1, seed=3))}
    asyncio.run(pipe.process_item(reprint))
    assert reprint["near_duplicate_of"] == "https://a.org/1"
    assert "duplicate_of" not in reprint
    assert pipe.state.stats.get_value("neardup/items/near") == 1
    pipe.close_spider()


def test_similar_drops_the_reprint_in_the_pipeline() -> None:
    from scrapy.exceptions import DropItem

    pipe = _pipeline(NEARDUP_DECISION="similar")
    asyncio.run(pipe.process_item({"url": "https://a.org/1", "text": text(BASE)}))
    with pytest.raises(DropItem):
        asyncio.run(
            pipe.process_item({"url": "https://b.org/1", "text": text(edited(BASE, 0.1, 3))})
        )
    pipe.close_spider()


def test_a_near_document_is_recorded_in_redis(tmp_path) -> None:
    from redis_server import RedisServer, redis_state

    from scrapy_neardup.report import render, summarize_redis

    server = RedisServer(tmp_path).start()
    try:
        state, _ = redis_state(server, "near")
        sign = state.dedup.sign
        assert not state.dedup.check_signed("https://a.org/1", sign(text(BASE))).is_duplicate
        reprint = text(edited(BASE, 0.1, seed=3))
        verdict = state.dedup.check_signed("https://b.org/1", sign(reprint))
        assert verdict.near_to == "https://a.org/1"
        state.close()
        summary = summarize_redis(server.url, "near")
        (near,) = summary["content"]["near"]
        assert near["item"] == "https://b.org/1" and near["near"] == "https://a.org/1"
        assert "near https://a.org/1" in render(summary)
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["minhash", "spotsigs"])
def test_a_resumed_crawl_decides_as_an_uninterrupted_one(backend: str) -> None:
    """Killed after any page and resumed from what was recorded, the deduplicator decides
    every later page as the uninterrupted run of the same pages in the same order does: what
    is recorded for a kept page is what later pages are compared against."""
    from demo_site import build_site

    site = build_site()
    pages = sorted((path, page.text) for path, page in site.pages.items() if page.text)
    random.Random(0).shuffle(pages)
    whole = Deduplicator(make_backend(backend))
    expected = [whole.check(path, body) for path, body in pages]
    assert sum(v.is_duplicate for v in expected) >= 5  # the site's copies meet their originals
    for cut in (len(pages) // 3, 2 * len(pages) // 3):
        before = Deduplicator(make_backend(backend))
        decided = [before.check(path, body) for path, body in pages[:cut]]
        after = resume(before, Deduplicator(make_backend(backend)))
        decided += [after.check(path, body) for path, body in pages[cut:]]
        assert decided == expected, cut
