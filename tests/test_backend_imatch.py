"""I-Match with lexicon randomisation: the shared backend suite, then the lexicon, the band of
kept terms, the randomised lexicons and the guards."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest
from backend_suite import BackendSuite, numbers_only

import corpus as C
from scrapy_neardup.backends import IMatchBackend, make_backend
from scrapy_neardup.backends.imatch import build_lexicon
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.text import Document, hash_tokens, normalize, tokenize


class TestIMatch(BackendSuite):
    name = "imatch"
    other_params = {"high": 5.0}
    bad_encodings = [b"", b"\x01\x02\x03", bytes(8 * 21 - 1), bytes(8 * 21 + 1), bytes(8)]

    @pytest.mark.parametrize("language", ["syn-en", "syn-zh"])
    def test_a_copy_is_dropped_for_the_first_seen(self, language: str) -> None:
        if language == "syn-zh":
            # The generated Chinese articles draw on a vocabulary of a few dozen words: 8 to 13
            # unique terms in the band, under the default min_terms, so by default they are
            # matched exactly only (real Chinese pages have hundreds, test_chinese_text).
            self.params = {"min_terms": 8}
        super().test_a_copy_is_dropped_for_the_first_seen(language)


FUNCTION_WORDS = "the of and to in a is that for it was on with as by at from this".split()


def band_words(method: IMatchBackend, count: int, skip: int = 0) -> list[str]:
    """``count`` English words that ``method`` keeps (in its Zipf band in every language),
    in wordfreq's order of frequency, after the first ``skip`` of them."""
    import wordfreq

    candidates = [w for w in wordfreq.iter_wordlist("en", "large") if w.isalpha() and w.isascii()][
        2000:20000
    ]
    kept = set(method.terms(Document(" ".join(candidates))).tolist())
    words = [
        w for w, h in zip(candidates, hash_tokens(candidates).tolist(), strict=True) if h in kept
    ]
    return words[skip : skip + count]


def article(words: list[str], seed: int = 0) -> str:
    """A text of ``words`` among function words, in a seeded order."""
    rng = random.Random(seed)
    tokens = words + [rng.choice(FUNCTION_WORDS) for _ in words]
    rng.shuffle(tokens)
    return " ".join(tokens)


@pytest.fixture(scope="module")
def method() -> IMatchBackend:
    return IMatchBackend()


@pytest.fixture(scope="module")
def words(method: IMatchBackend) -> list[str]:
    return band_words(method, 400)


def test_defaults_and_params(method: IMatchBackend) -> None:
    params = method.params()
    assert params["low"] == 3.0 and params["high"] == 4.5
    assert params["lexicons"] == 20 and params["keep"] == 0.3
    assert params["min_terms"] == 15 and params["min_known"] == 0.5
    assert params["lexicon"].startswith("wordfreq-") and params["hash"] == "sha1-64"
    assert "en" in params["languages"] and "zh" in params["languages"]
    assert IMatchBackend(languages="en, fr").languages == ("en", "fr")


def test_the_module_and_params_do_not_import_wordfreq() -> None:
    code = (
        "import sys; from scrapy_neardup.backends import make_backend; "
        "make_backend('imatch').params(); print('wordfreq' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"languages": []}, "at least one language"),
        ({"languages": ["en", "xx"]}, r"\['xx'\] have no wordfreq"),
        ({"low": 0.5}, "1 <= low <= high <= 9"),
        ({"low": 5.0, "high": 4.0}, "1 <= low <= high <= 9"),
        ({"high": 9.5}, "1 <= low <= high <= 9"),
        ({"lexicons": -1}, "lexicons must be 0..64"),
        ({"lexicons": 65}, "lexicons must be 0..64"),
        ({"keep": 0.0}, r"keep must be in \(0, 1\)"),
        ({"keep": 1.0}, r"keep must be in \(0, 1\)"),
        ({"min_terms": 0}, "min_terms must be 1..10000"),
        ({"min_known": 1.5}, r"min_known must be in \[0, 1\]"),
    ],
)
def test_parameters_are_validated(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_backend("imatch", **params)


def test_lexicon_equals_a_plain_python_reference() -> None:
    """Every word of two wordfreq lists, merged with a dict: its highest Zipf value over the
    languages, kept when it is one letters-only token of two or more characters."""
    import wordfreq

    languages, floor = ("de", "en"), 300
    reference: dict[str, int] = {}
    for lang in languages:
        for raw, freq in wordfreq.get_frequency_dict(lang, wordlist="large").items():
            zipf = round((math.log10(freq) + 9) * 100)
            word = normalize(raw)
            if zipf < floor or len(word) < 2 or tokenize(word) != [word]:
                continue
            if any(c.isdigit() or c == "_" for c in word):
                continue
            reference[word] = max(zipf, reference.get(word, 0))
    table = build_lexicon(languages, floor)
    words = sorted(reference)
    expected = dict(zip(hash_tokens(words).tolist(), (reference[w] for w in words), strict=True))
    assert len(expected) == len(reference)  # no two words share a 64-bit hash
    assert dict(zip(table.hashes.tolist(), table.zipf.tolist(), strict=True)) == expected
    assert np.all(np.diff(table.hashes.astype(np.float64)) >= 0)
    # "die" is rare in English, a function word in German: the highest frequency wins
    assert reference["die"] > 700


def test_terms_are_the_band_of_the_lexicon(method: IMatchBackend) -> None:
    import wordfreq

    sample = [w for w in wordfreq.iter_wordlist("en", "large") if w.isalpha()][::50][:400]
    kept = set(method.terms(Document(" ".join(sample))).tolist())
    for word, h in zip(sample, hash_tokens(sample).tolist(), strict=True):
        best = max(wordfreq.zipf_frequency(word, lang, "large") for lang in method.languages)
        if not 3.0 <= best <= 4.5 or len(word) < 2:
            assert h not in kept, word
        elif 3.05 <= best <= 4.45:  # away from wordfreq's own rounding at the edges
            assert h in kept, word


def test_word_order_does_not_matter(method: IMatchBackend) -> None:
    text = C.synthetic_corpus().originals[0].text
    tokens = Document(text).tokens
    random.Random(5).shuffle(tokens)
    a, b = method.signature(Document(text)), method.signature(Document(" ".join(tokens)))
    assert a[0] != 0
    assert method.encode(a) == method.encode(b)
    assert method.similarity(a, b) == 1.0


def test_function_words_numbers_and_unknown_words_do_not_count(
    method: IMatchBackend, words: list[str]
) -> None:
    text = article(words[:60])
    noisy = text + " the of and 2024 15 3 99 zzqx frobnicatee " + " ".join(FUNCTION_WORDS)
    a, b = method.signature(Document(text)), method.signature(Document(noisy))
    assert a[0] != 0 and method.encode(a) == method.encode(b)
    only = " ".join(FUNCTION_WORDS * 20) + " " + numbers_only(3)
    assert not method.signature(Document(only)).any()
    assert method.bucket_keys(method.signature(Document(only))) == []


def test_one_changed_kept_word_is_caught_by_a_randomised_lexicon(
    method: IMatchBackend, words: list[str]
) -> None:
    """The base signature changes; a lexicon that holds neither the old nor the new word
    still matches, which happens for about ``(1 - keep)**2`` of the lexicons."""
    base = words[:80]
    original = method.signature(Document(article(base)))
    equal_slots, trials, caught = 0, 0, None
    for i, replacement in enumerate(words[100:160]):
        changed = [*base[:i], replacement, *base[i + 1 :]]
        copy = method.signature(Document(article(changed)))
        assert copy[0] != original[0]
        equal_slots += int(np.count_nonzero(copy[1:] == original[1:]))
        trials += method.lexicons
        if caught is None and method.similarity(original, copy) is not None:
            caught = article(changed)
    rate = equal_slots / trials
    assert abs(rate - (1 - method.keep) ** 2) < 0.04, rate
    assert caught is not None
    dedup = Deduplicator(method, min_tokens=20)
    assert not dedup.check("original", article(base)).is_duplicate
    verdict = dedup.check("copy", caught)
    assert verdict.duplicate_of == "original" and 0.0 < verdict.similarity < 1.0


def test_without_randomised_lexicons_a_changed_word_is_missed(words: list[str]) -> None:
    method = IMatchBackend(lexicons=0)
    a = method.signature(Document(article(words[:80])))
    b = method.signature(Document(article([*words[1:80], words[200]])))
    assert len(a) == 1 and a[0] != 0 and method.similarity(a, b) is None


def test_lexicons_meet_only_their_own_kind(method: IMatchBackend, words: list[str]) -> None:
    signature = method.signature(Document(article(words[:80])))
    keys = method.bucket_keys(signature)
    assert len(keys) == 1 + method.lexicons == len(set(keys))
    shifted = np.roll(signature, 1)  # the same values in other slots
    assert not set(method.bucket_keys(shifted)) & set(keys)
    assert method.similarity(signature, shifted) is None


def test_few_kept_terms_give_empty_slots(words: list[str]) -> None:
    method = IMatchBackend(min_terms=15)
    signature = method.signature(Document(article(words[:20])))
    assert signature[0] != 0
    assert np.count_nonzero(signature[1:]) < method.lexicons  # ~6 of 20 terms each: empty
    assert method.signature(Document(article(words[:14]))).tolist() == [0] * 21
    same = method.signature(Document(article(words[:20], seed=1)))
    assert method.similarity(signature, same) == 1.0  # equal sets, however few slots filled


def test_empty_text_never_matches(method: IMatchBackend) -> None:
    signature = method.signature(Document(""))
    assert signature.tolist() == [0] * 21
    assert method.bucket_keys(signature) == []
    assert method.similarity(signature, signature) is None
    assert method.encode(signature) == bytes(168)


def test_a_language_outside_the_lexicon_gets_no_signature(method: IMatchBackend) -> None:
    """Korean articles in an English template: hangul syllables are not terms, and the
    template's English words are too few a share of the page to sign it."""
    rng = random.Random(2)
    syllables = [chr(0xAC00 + rng.randrange(11172)) for _ in range(300)]
    footer = " Copyright all rights reserved privacy policy terms of service newsletter"
    body = " ".join("".join(rng.choices(syllables, k=3)) for _ in range(400))
    assert not method.signature(Document(body + footer * 3)).any()


LIBRARY = (
    "市图书馆新馆周六正式向读者开放，建筑面积约三万平方米，藏书超过一百二十万册。"
    "新馆设有儿童阅览区、古籍修复室、数字资源中心和可容纳四百人的报告厅。"
    "馆长介绍说，读者可以用手机预约座位，自助借还书籍，夜间还开设自习室。"
    "开馆首日，不少家长带着孩子排队办理借书证，志愿者在门口引导人流。"
    "据悉，新馆还将定期举办讲座、展览和读书分享会，并与周边学校合作开展阅读推广活动。"
    "有市民表示，过去借书要跑很远，如今在家门口就能享受丰富的文化服务。"
)
DROUGHT = (
    "今年夏季持续高温少雨，南方多个省份出现不同程度的旱情，部分水库蓄水明显下降。"
    "气象部门预计，未来十天仍以晴热天气为主，局地最高气温可达四十摄氏度。"
    "农业专家提醒农户合理安排灌溉时间，优先保障水稻和蔬菜等作物用水。"
    "多地已启动抗旱应急响应，组织抽水设备和送水车辆支援缺水村庄。"
    "电力公司也加强了电网巡检，确保居民生活和重点企业的用电需求。"
    "专家建议市民减少午后户外活动，注意防暑降温，及时补充水分。"
)


def test_chinese_text(method: IMatchBackend) -> None:
    """jieba's words are looked up; a copy with other punctuation and line breaks matches."""
    a, b = method.signature(Document(LIBRARY)), method.signature(Document(DROUGHT))
    assert a[0] != 0 and b[0] != 0 and method.similarity(a, b) is None
    copy = LIBRARY.replace("，", " ").replace("。", "！\n")
    assert method.similarity(a, method.signature(Document(copy))) == 1.0
    terms = method.terms(Document(LIBRARY))
    assert 20 <= len(terms) < len(set(Document(LIBRARY).tokens)) / 2


def test_signature_is_eight_bytes_per_lexicon(method: IMatchBackend, words: list[str]) -> None:
    signature = method.signature(Document(article(words[:80])))
    data = method.encode(signature)
    assert len(data) == 8 * 21
    assert int.from_bytes(data[:8], "little") == int(signature[0])
    assert IMatchBackend(lexicons=3).decode(bytes(32)).tolist() == [0, 0, 0, 0]
