"""Containment decides a drop (scrapy_neardup/backends/containment.py): covered words, the
Bloom filter's correction, related documents and site boilerplate."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from saved_state import resume

import corpus.text as C
from scrapy_neardup.backends import make_backend
from scrapy_neardup.backends.containment import Verified
from scrapy_neardup.backends.losses import coverage, holds, lossy, text_coverage
from scrapy_neardup.backends.phrases import (
    MAX_FILTER_BYTES,
    PHRASE,
    Phrases,
    _positions,
    phrases_of,
)
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.text import Document

ARTICLES = C.synthetic_articles()
WORDS = sorted({w.strip(".,") for t in ARTICLES.values() for w in t.split()} - {""})
WORDS = [w for w in WORDS if w.isascii() and w.isalpha()]


def _text(seed: int, words: int = 300) -> str:
    """Sentences of random corpus words: no two texts share a phrase by chance."""
    rng = random.Random(seed)
    out = [rng.choice(WORDS) for _ in range(words)]
    return ". ".join(" ".join(out[i : i + 12]) for i in range(0, words, 12)) + "."


EN = [_text(i) for i in range(48)]


def phrases(text: str) -> Phrases:
    return phrases_of(Document(text))


def edit(text: str, rate: float, seed: int = 0) -> str:
    rng = random.Random(seed)
    words = text.split()
    for i in rng.sample(range(len(words)), round(rate * len(words))):
        words[i] = rng.choice(WORDS) + "x"  # a word the original cannot have
    return " ".join(words)


def covered(new: str, kept: str) -> float:
    found = coverage(phrases(new), phrases(kept))
    assert found is not None
    return found[0]


def test_covered_words_charge_an_edit_one_word_and_new_text_all_of_it() -> None:
    text = EN[0] + "\n\n" + EN[1]
    assert covered(text, text) == pytest.approx(1.0, abs=0.01)
    assert covered(EN[2], text) < 0.1
    # 5 % of the words edited: about 0.95 of the words still covered (3-shingles: ~0.86).
    assert 0.92 <= covered(edit(text, 0.05), text) <= 0.97
    # A quarter new text: about 0.75, whatever the edits elsewhere.
    longer = text + "\n\n" + EN[3][: len(text) // 3]
    assert 0.65 <= covered(longer, text) <= 0.85
    # And the shorter one is all in the longer one.
    assert covered(text, longer) == pytest.approx(1.0, abs=0.01)


def test_a_page_whose_few_differing_words_are_scattered_is_no_copy() -> None:
    """Release notes of two versions: the same lines but for a version number in many of
    them. Covered words (0.92) would call it a copy; its 3-shingles (0.77, below the lossy
    line) do not, and the version it is about is what it says of its own."""
    words = " ".join(EN[:2]).split()

    def notes(version: str) -> str:
        return " ".join(f"{w} {version}" if i % 12 == 5 else w for i, w in enumerate(words))

    new, kept = phrases(notes("r1812")), phrases(notes("r195"))
    found = coverage(new, kept)
    assert found.words >= 0.9 and found.shingles < 0.8
    verified = Verified(make_backend("minhash"))
    pair = [verified.signature(Document(notes(v))) for v in ("r1812", "r195")]
    assert verified.similarity(*pair) is None  # not a copy
    dedup = Deduplicator()
    dedup.check("r195", notes("r195"))
    assert not dedup.check("r1812", notes("r1812")).is_duplicate  # its version is its own
    # 5 % of the words edited at random keeps about 0.86 of the shingles: still a copy.
    text = EN[0] + "\n\n" + EN[1]
    assert coverage(phrases(edit(text, 0.05)), phrases(text)).shingles >= 0.8
    # Short paragraphs in another order lose nothing: shingles across two lines do not count.
    lines = [" ".join(words[i : i + 6]) for i in range(0, 120, 6)]
    reordered = coverage(phrases("\n".join(reversed(lines))), phrases("\n".join(lines)))
    assert reordered.words >= 0.99 and reordered.shingles >= 0.99


def test_the_filters_false_positives_are_subtracted() -> None:
    # A kept page of 30,000 words and an unrelated one: raw hits would be the false-positive
    # rate (up to 3 chances a word); the correction brings the share back near 0.
    rng = random.Random(1)
    big = " ".join(rng.choice(WORDS) + str(i % 97) for i in range(30_000))
    kept = phrases(big)
    assert 0.003 < kept.false_positive_rate < 0.05
    new = phrases(EN[4])
    hits = kept.contains(new.sequence)
    uncorrected = (hits | np.r_[hits[1:], False] | np.r_[False, hits[:-1]]).mean()
    found = coverage(new, kept)
    assert found.words < 0.005 < 0.01 < uncorrected
    assert found.shingles < 0.002 < hits.mean()


def test_a_filter_too_full_to_trust_decides_nothing() -> None:
    huge = " ".join(f"w{i}" for i in range(200_000))  # 200k shingles in a 128 KB filter
    kept = phrases(huge)
    assert kept.false_positive_rate > 0.05
    assert len(kept.bits) == MAX_FILTER_BYTES
    assert coverage(phrases(huge[:5000]), kept) is None


def test_phrases_round_trip_without_their_sequence() -> None:
    verified = Verified(make_backend("minhash"))
    signature = verified.signature(Document(EN[5]))
    decoded = verified.decode(verified.encode(signature))
    assert np.array_equal(decoded.backend, signature.backend)
    assert decoded.phrases.encode() == signature.phrases.encode()
    assert decoded.phrases.sequence is None
    # a stored (decoded) filter still answers for a new document
    assert coverage(signature.phrases, decoded.phrases)[0] == pytest.approx(1.0, abs=0.01)
    data = verified.encode(signature)
    for bad in (data[:3], data[:-1], b"\xff\xff\xff\x7f" + data[4:]):
        with pytest.raises(ValueError):
            verified.decode(bad)


@pytest.mark.parametrize("backend", ["minhash", "simhash", "spotsigs"])
def test_a_richer_page_is_kept_and_related_a_poorer_one_dropped(backend: str) -> None:
    # Generated articles: running text with stopwords, which SpotSigs needs for its spots.
    prose = [t for k, t in sorted(ARTICLES.items()) if k.startswith("syn-en")]
    core = "\n\n".join(prose[6:9])
    richer = core + "\n\n" + prose[9]  # a third more: still a candidate of all three
    dedup = Deduplicator(backend)
    assert not dedup.check("core", core).is_duplicate
    verdict = dedup.check("richer", richer)
    assert not verdict.is_duplicate and verdict.related_to == "core"
    assert verdict.containment > 0.95
    assert dedup.related["richer"].head == "core" and dedup.counts["related"] == 1
    # The core again, lightly edited: all of it is kept (twice over), so it is dropped.
    copy = dedup.check("copy", edit(core, 0.02))
    assert copy.is_duplicate and copy.duplicate_of in ("core", "richer")
    assert copy.containment >= 0.9
    # Saved and loaded, the relation stays.
    other = resume(dedup, Deduplicator(backend))
    assert other.related == dedup.related and other.members == dedup.members


def test_poorer_first_then_richer_was_a_loss_before_containment() -> None:
    # First-seen-wins on similarity drops the richer page: the Jaccard of the two is above
    # MinHash's threshold, so a similarity rule drops it.
    core = EN[9] + "\n\n" + EN[10]
    richer = core + "\n\n" + EN[11][: len(core) // 3]
    method = make_backend("minhash")
    a, b = (method.signature(Document(t)) for t in (core, richer))
    assert method.similarity(b, a) is not None
    dedup = Deduplicator("minhash")
    dedup.check("core", core)
    assert not dedup.check("richer", richer).is_duplicate


def test_a_copy_in_another_template_is_judged_by_every_line() -> None:
    """A line of the copy's template that the kept page lacks (a related-links block the
    extraction kept) is lost text of the page it would be dropped for: the copy is kept and
    recorded as near; the template's words a line of the kept page has cost nothing."""
    article = "\n".join(" ".join(EN[35].split()[i : i + 12]) for i in range(0, 96, 12))
    related = "Related: the council budget story everyone is reading this week, with a map"
    dedup = Deduplicator("minhash")
    dedup.check("a/original", article)
    verdict = dedup.check("b/copy", f"{article}\n{related}")
    assert not verdict.is_duplicate and verdict.related_to == "a/original"  # and a line more
    found = text_coverage(f"{article}\n{related}", article)
    assert found.loss.lines == ((96, 96 + len(related.split())),)
    assert dedup.check("c/copy", article + "\n" + article.split("\n")[2]).duplicate_of


def test_containment_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="coverage"):
        Verified(make_backend("minhash"), coverage=1.5)
    with pytest.raises(ValueError, match="related"):
        Verified(make_backend("minhash"), related=0.0)


def test_related_documents_survive_a_jobdir_and_are_reported(tmp_path) -> None:
    from scrapy.utils.test import get_crawler

    from scrapy_neardup.report import render, summarize
    from scrapy_neardup.report_html import page as page_for_dir
    from scrapy_neardup.state import NearDupState

    prose = [t for k, t in sorted(ARTICLES.items()) if k.startswith("syn-en")]
    core = "\n\n".join(prose[20:23])
    richer = core + "\n\n" + prose[23]

    def state(jobdir):
        settings = {"JOBDIR": str(jobdir), "NEARDUP_WORKERS": 0}
        return NearDupState.from_crawler(get_crawler(settings_dict=settings))

    first = state(tmp_path / "job")
    first.dedup.check("https://example.com/core", core)
    assert first.dedup.check("https://example.com/full", richer).related_to.endswith("/core")
    first.close()
    again = state(tmp_path / "job")  # from the snapshot
    assert again.dedup.related["https://example.com/full"].head == "https://example.com/core"
    assert again.dedup.counts["related"] == 1
    again.close()

    summary = summarize(tmp_path / "job" / "neardup")
    assert summary["content"]["related_count"] == 1
    assert summary["content"]["related"][0]["holds"] == "https://example.com/core"
    assert summary["content"]["duplicates"] == 0
    assert "holds https://example.com/core" in render(summary)
    page, _ = page_for_dir(tmp_path / "job" / "neardup")
    assert 'id="related"' in page and "https://example.com/full" in page


def test_a_related_document_is_recorded_in_redis(tmp_path) -> None:
    from redis_server import RedisServer, redis_state

    from scrapy_neardup.report import render, summarize_redis

    prose = [t for k, t in sorted(ARTICLES.items()) if k.startswith("syn-en")]
    core = "\n\n".join(prose[24:27])
    richer = core + "\n\n" + prose[27]
    server = RedisServer(tmp_path).start()
    try:
        state, _ = redis_state(server, "rel")
        sign = state.dedup.sign
        assert not state.dedup.check_signed("https://a.org/core", sign(core)).is_duplicate
        verdict = state.dedup.check_signed("https://a.org/full", sign(richer))
        assert verdict.related_to == "https://a.org/core"
        state.close()
        summary = summarize_redis(server.url, "rel")
        (related,) = summary["content"]["related"]
        assert related["item"] == "https://a.org/full" and related["holds"].endswith("/core")
        assert related["containment"] > 0.95
        assert "holds https://a.org/core" in render(summary)
    finally:
        server.stop()


def test_a_drop_never_rests_on_the_filters_luck() -> None:
    # A page that differs from the kept one in one name: every shingle around it a false
    # positive of the kept filter would cover it, but the name itself is not there, so the
    # shingles do not count (a false positive then needs both of the word's entries too).
    lines = EN[46].split(". ")
    kept = "\n".join(lines)
    new = kept.replace(lines[3].split()[4], "sqlite3_blob_read", 1)
    assert lossy(text_coverage(new, kept))
    honest = phrases(kept)
    missed = np.setdiff1d(phrases(new).sequence, Document(kept).shingles(PHRASE))
    assert 1 <= len(missed) <= 3
    flags = np.unpackbits(honest.bits, bitorder="little").astype(bool)
    flags[_positions(missed, honest.size, honest.hashes).ravel()] = True
    lucky = Phrases(
        np.packbits(flags, bitorder="little"),
        honest.size,
        honest.hashes,
        honest.count,
        honest.words,
    )
    assert lucky.contains(phrases(new).sequence).all()  # every shingle answers yes
    found = coverage(phrases(new), lucky)
    assert found is not None and found.words > 0.99 and lossy(found) and not holds(found)
    assert found.loss.tokens and not found.loss.lines


def test_a_hyphenated_name_in_a_list_must_be_in_the_kept_page_whole() -> None:
    # A syntax page of a reference lists the names it links to, one a line: "join-clause" is
    # lost although the kept page has both its words (in "join-constraint" and
    # "filter-clause"). In a line of prose the name is words, covered by the line's shingles.
    prose = EN[40].split(". ")
    kept = "\n".join([*prose[:6], "expr", "join-constraint", "filter-clause"])
    listed = "\n".join([*prose[:6], "expr", "join-clause", "filter-clause"])
    assert lossy(text_coverage(listed, kept))
    assert lossy(coverage(phrases(listed), phrases(kept)))
    assert not lossy(text_coverage("\n".join([*prose[:6], "join-constraint"]), kept))
    words = prose[2].split()
    prose[2] = " ".join([*words[:5], f"{words[5]}-{words[6]}", *words[7:]])
    in_prose = "\n".join(prose[:6])
    assert not lossy(text_coverage(in_prose, "\n".join(EN[40].split(". ")[:6])))


def test_the_exact_measure_is_what_the_filter_approximates() -> None:
    rng = random.Random(5)
    for n in range(12):
        kept = "\n".join(EN[n].split(". "))
        new = edit(kept, rng.choice([0.0, 0.02, 0.05, 0.1, 0.3]), n)
        exact = text_coverage(new, kept)
        near = coverage(phrases(new), phrases(kept))
        assert exact is not None and near is not None
        assert near.words == pytest.approx(exact.words, abs=0.03)
        assert near.shingles == pytest.approx(exact.shingles, abs=0.03)
        if near.loss is not None:  # past the screen: the same losses, word for word
            assert near.loss == exact.loss
    assert text_coverage("", "anything at all") is None
    assert lossy(text_coverage(EN[1], EN[2])) and not lossy(text_coverage(EN[1], EN[1]))


SQLITE_DOC = Path("/usr/share/doc/sqlite3")


@pytest.mark.skipif(
    not (SQLITE_DOC / "c3ref" / "blob_read.html").exists(),
    reason="Debian's sqlite3-doc is not installed (apt-get install sqlite3-doc)",
)
def test_sqlite_blob_read_is_kept_beside_blob_write_in_either_order() -> None:
    from scrapy_neardup.extraction import extract_main_text

    read, write = (
        extract_main_text((SQLITE_DOC / "c3ref" / f"blob_{n}.html").read_bytes()).text
        for n in ("read", "write")
    )
    for first, second in ((write, read), (read, write)):
        dedup = Deduplicator("minhash")
        dedup.check("first", first)
        assert not dedup.check("second", second).is_duplicate
    # The audit reads the same loss, exactly: what it documents is not in the other page.
    assert lossy(text_coverage(read, write)) and lossy(text_coverage(write, read))
