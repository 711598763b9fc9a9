"""The decision the user chooses (NEARDUP_DECISION) and its thresholds: each setting moves
the result of a pair built on either side of it; near pairs are recorded, saved, tagged and
reported; a state decided otherwise refuses to resume, naming the setting."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from scrapy_neardup.backends import make_backend
from scrapy_neardup.backends.containment import (
    SIMILAR_SHINGLES,
    SIMILARITY,
    Verified,
    jaccard,
    shingles_of,
)
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.exceptions import ConfigError, StateError
from scrapy_neardup.factories import backend_from_config
from scrapy_neardup.text import Document, ShingleSpec

VOCABULARY = [f"w{i}x" for i in range(5000)]


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


def test_similar_candidates_default_to_the_rules_shingles() -> None:
    dedup = Deduplicator(decision="similar")
    assert dedup.method.params()["shingles"] == f"word:{SIMILAR_SHINGLES}"
    assert dedup.method.threshold < SIMILARITY
    # the default decision keeps the method's defaults
    assert Deduplicator().method.params()["shingles"] == "word:3"
    assert Deduplicator(decision="similar", threshold=0.5).method.threshold == 0.5


# -- every threshold moves the result ---------------------------------------------------------


def test_contained_words() -> None:
    # 285 of 300 words, then 15 new ones: 0.95 of its words covered.
    new = BASE[:285] + FRESH[:15]
    assert outcome(pair(Deduplicator(contained_words=0.9), new)) == "dropped"
    assert outcome(pair(Deduplicator(contained_words=0.97), new)) != "dropped"


def test_contained_shingles() -> None:
    # 4 % of words edited, scattered: ~0.96 of words covered, ~0.88 of 3-shingles.
    new = edited(BASE, 0.04, seed=5)
    assert outcome(pair(Deduplicator(contained_shingles=0.8), new)) == "dropped"
    assert outcome(pair(Deduplicator(contained_shingles=0.95), new)) != "dropped"


def test_related() -> None:
    # 270 of the kept page's 300 words, and 150 more: holds ~0.9 of its phrases.
    new = BASE[:270] + FRESH[:150]
    assert outcome(pair(Deduplicator(related=0.8), new)) == "related"
    assert outcome(pair(Deduplicator(related=0.95), new)) != "related"


def test_similarity() -> None:
    new = edited(BASE, 0.2, seed=6)  # 2-shingle Jaccard ~0.45
    assert outcome(pair(Deduplicator(decision="similar", similarity=0.35), new)) == "dropped"
    assert outcome(pair(Deduplicator(decision="similar", similarity=0.6), new)) != "dropped"
    # under "contained" it says which pairs are near
    assert outcome(pair(Deduplicator(similarity=0.35), new)) == "near"
    assert outcome(pair(Deduplicator(similarity=0.6), new)) == "kept"


def test_similarity_shingles() -> None:
    new = edited(BASE, 0.1, seed=7)  # word-set Jaccard ~0.8, 3-shingle Jaccard ~0.55
    for size, expected in ((1, "dropped"), (3, "kept")):
        dedup = Deduplicator(decision="similar", similarity=0.7, similar_shingles=size)
        assert outcome(pair(dedup, new)) == expected, size


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
    assert config.backend_kwargs()["shingles"] == "word:3"  # the candidates follow the rule
    default = NearDupConfig.from_settings({})
    assert default.decision == "contained" and default.backend_kwargs() == {}


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
    data = saved.to_bytes()
    again = Deduplicator(decision="similar")
    again.load_bytes(data)
    assert again.members == saved.members
    with pytest.raises(StateError, match="NEARDUP_DECISION"):
        Deduplicator().load_bytes(data)
    with pytest.raises(StateError, match="NEARDUP_SIMILARITY="):
        Deduplicator(decision="similar", similarity=0.5).load_bytes(data)
    default = Deduplicator().to_bytes()
    for kwargs, setting in (
        ({"contained_words": 0.95}, "NEARDUP_CONTAINED_WORDS"),
        ({"contained_shingles": 0.9}, "NEARDUP_CONTAINED_SHINGLES"),
        ({"related": 0.9}, "NEARDUP_RELATED"),
        ({"similar_shingles": 1}, "NEARDUP_SIMILARITY_SHINGLES"),
    ):
        with pytest.raises(StateError, match=setting):
            Deduplicator(**kwargs).load_bytes(default)


def test_a_default_state_has_the_parameters_of_earlier_releases() -> None:
    verify = Deduplicator().meta()["params"]["verify"]
    assert verify == {"filter": "bloom10", "coverage": 0.9, "related": 0.8}


def test_near_relations_are_saved_and_survive_a_jobdir(tmp_path) -> None:
    from scrapy_neardup.report import render, summarize
    from scrapy_neardup.report_html import page_for_dir
    from scrapy_neardup.state import NearDupState

    dedup = Deduplicator()
    pair(dedup, edited(BASE, 0.1, seed=3))
    again = Deduplicator()
    again.load_bytes(dedup.to_bytes())
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


def test_a_near_record_of_the_journal_reads_back_as_near() -> None:
    from scrapy_neardup.storage.journal import MemberRecord, decode_content_record, encode_member

    record = MemberRecord("https://b/1", "https://a/1", "minhash", 0.6, near=True)
    payload = encode_member(record)
    assert payload[:1] == b"N" and decode_content_record(payload) == record


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


# -- a page with no text of its own -----------------------------------------------------------

NAV = [" ".join(words(50 + i, 10)) for i in range(10)]  # 100 words on every page of the site


def _site_check(dedup: Deduplicator, key: str, own: list[str]) -> Any:
    signed = dedup.without_boilerplate("a.org", dedup.sign("\n".join([*NAV, text(own)])))
    verdict = dedup.check_signed(key, signed)
    dedup.learn_boilerplate("a.org", signed, verdict)
    return verdict


@pytest.mark.parametrize(("share", "expected"), [(0.9, "kept"), (1.0, "dropped")])
def test_a_page_of_its_sites_boilerplate_is_matched_exactly_only(share, expected) -> None:
    dedup = Deduplicator(boilerplate_share=share)
    for n in range(3):  # three kept pages make the navigation the site's boilerplate
        assert not _site_check(dedup, f"https://a.org/{n}", words(10 + n, 60)).is_duplicate
    # 5 words of its own beside the site's 100: 0.95 boilerplate
    verdict = _site_check(dedup, "https://a.org/tag", words(20, 5))
    assert outcome(verdict) == expected
    assert verdict.boilerplate == (share < 0.95)
    assert dedup.counts["boilerplate"] == (share < 0.95)


def test_boilerplate_share_is_a_setting() -> None:
    assert NearDupConfig.from_settings({}).verify_params()["boilerplate_share"] == 0.9
    config = NearDupConfig.from_settings({"NEARDUP_BOILERPLATE_SHARE": "0.8"})
    assert Deduplicator(**config.verify_params()).boilerplate_share == 0.8
    with pytest.raises(ConfigError, match="NEARDUP_BOILERPLATE_SHARE"):
        NearDupConfig.from_settings({"NEARDUP_BOILERPLATE_SHARE": 0})


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
