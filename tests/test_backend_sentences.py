"""Longest-sentences signature: the shared backend suite, then splitting, keys and the guard."""

from __future__ import annotations

import pytest
from backend_suite import BackendSuite, numbers_only

from scrapy_neardup.backends import SentencesBackend
from scrapy_neardup.backends.excerpts import MIN_WORDS
from scrapy_neardup.backends.sentences import sentence_key, split_sentences
from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.text import Document


class TestSentences(BackendSuite):
    name = "sentences"
    other_params = {"n": 2}
    bad_encodings = [b"", b"\x01\x02\x03", bytes(19), bytes(21), bytes(16)]


LONG = [
    "The old harbour bridge reopened on Monday after months of repairs and strikes.",
    "Engineers said that the steel had been replaced in the spring by a local firm.",
    "The new deck, they added, would last for decades if it was painted every year.",
    "Commuters who had driven around the bay for a year cheered the first bus across.",
]
SHORT = ["It rained.", "Nobody minded.", "Traffic was light."]
ARTICLE = " ".join([LONG[0], SHORT[0], LONG[1], SHORT[1], LONG[2], SHORT[2], LONG[3]])
CHINESE = [
    "记者从市交通局了解到，经过数月的维修，老港口大桥于周一重新开放。",
    "工程师表示，钢结构已在春季由本地一家公司全部更换完毕！",
    "新的桥面如果每年都重新粉刷，可以使用几十年；",
    "绕着海湾开了一年车的通勤者为第一辆公交车欢呼？",
    "天气很好。",
]


def sign(text: str, **params: float) -> object:
    return SentencesBackend(**params).signature(Document(text))


def matches(a: str, b: str, **params: float) -> bool:
    method = SentencesBackend(**params)
    return (
        method.similarity(method.signature(Document(a)), method.signature(Document(b))) is not None
    )


def test_defaults_params_and_size() -> None:
    method = SentencesBackend()
    assert (method.n, method.min_chars, method.min_length_ratio) == (3, 10, 0.8)
    assert method.params() == {
        "n": 3,
        "min_chars": 10,
        "min_length_ratio": 0.8,
        "hash": "xxh3_128",
        "split": "v1",
    }
    signature = method.signature(Document(ARTICLE))
    assert len(method.encode(signature)) == 20
    assert len(method.bucket_keys(signature)) == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n": 0}, "n must be 1..16"),
        ({"n": 17}, "n must be 1..16"),
        ({"min_chars": 0}, "min_chars must be 1..1000"),
        ({"min_length_ratio": 1.5}, r"min_length_ratio must be in \[0, 1\]"),
        ({"min_length_ratio": -0.1}, r"min_length_ratio must be in \[0, 1\]"),
    ],
)
def test_parameters_are_validated(params: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SentencesBackend(**params)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?"]),  # "Four" is not closed
        ("It grew 3.5 percent. Then it fell.", ["It grew 3.5 percent.", "Then it fell."]),
        ("The U.S. economy grew. Mr. Smith left.", ["The U.S. economy grew.", "Mr. Smith left."]),
        ("Bring fruit, e.g. apples. Fine.", ["Bring fruit, e.g. apples.", "Fine."]),
        ('"He left." She stayed.', ['"He left."', "She stayed."]),
        ("Wait... what?! Really.", ["Wait...", "what?!", "Really."]),
        ("Line one.\nLine two.\r\nA headline\nLast.", ["Line one.", "Line two.", "Last."]),
        ("Home | World | News. Real text.", ["News.", "Real text."]),
        ("我们今天去公园。天气很好！你呢？", ["我们今天去公园。", "天气很好！", "你呢？"]),
        ("先说这个；再说那个……最后", ["先说这个；", "再说那个……"]),
        ("第一句话.第二句话!第三句", ["第一句话.", "第二句话!"]),  # ASCII after Chinese
        ("增长了3.5%。下降了。", ["增长了3.5%。", "下降了。"]),
        ("他说：“我来了。”然后走了。", ["他说：“我来了。”", "然后走了。"]),
        ("首页 > 新闻 > 正文\n正文第一句。", ["正文第一句。"]),
        ("", []),
        ("no ender at all", []),
    ],
)
def test_splitting(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_sentence_keys_ignore_punctuation_case_and_spacing() -> None:
    assert sentence_key("Hello,   World!") == sentence_key("hello world.") == "hello world"
    assert sentence_key("Ｆｕｌｌ ｗｉｄｔｈ") == "full width"
    assert (
        sentence_key("我们 去 公园，好吗？") == sentence_key("我们去公园好吗") == "我们去公园好吗"
    )
    assert sentence_key("iPhone 15 发布") == "iphone 15 发布"


def test_the_order_of_sentences_does_not_matter() -> None:
    shuffled = " ".join([LONG[3], SHORT[2], LONG[1], LONG[0], SHORT[0], SHORT[1], LONG[2]])
    assert sign(ARTICLE) == sign(shuffled)
    paragraphs = "\n\n".join([LONG[2] + " " + LONG[0], " ".join(SHORT), LONG[3] + " " + LONG[1]])
    assert sign(ARTICLE) == sign(paragraphs)


def test_punctuation_and_spacing_do_not_matter() -> None:
    other = ARTICLE.replace(",", "").replace(" ", "  ").replace("bridge", "BRIDGE")
    assert sign(ARTICLE) == sign(other)
    spaced = "".join(CHINESE).replace("，", " ").replace("大桥", "大 桥")
    assert sign("".join(CHINESE)) == sign(spaced)


def test_a_changed_word_matters_only_in_a_long_sentence() -> None:
    assert matches(ARTICLE, ARTICLE.replace("It rained", "It snowed"))
    # LONG[3] is one of the three longest: changing it changes the signature
    assert not matches(ARTICLE, ARTICLE.replace("cheered the first", "greeted the first"))
    chinese = "".join(CHINESE)
    assert matches(chinese, chinese.replace("天气很好", "天气很差"))
    assert not matches(chinese, chinese.replace("老港口大桥", "新港口大桥"))


def test_ties_are_broken_by_the_text() -> None:
    method = SentencesBackend(n=2)
    same_length = ["Aaaa bbbb cccc dddd.", "Eeee ffff gggg hhhh.", "Iiii jjjj kkkk llll."]
    chosen, _ = method.longest(Document(" ".join(same_length)))
    assert chosen == ["aaaa bbbb cccc dddd", "eeee ffff gggg hhhh"]
    chosen_reversed, _ = method.longest(Document(" ".join(reversed(same_length))))
    assert chosen_reversed == chosen


def test_repeated_sentences_count_once() -> None:
    """A sentence repeated (a pull quote) is one sentence: n distinct ones are needed."""
    method = SentencesBackend()
    signature = method.signature(Document(f"{LONG[0]} {LONG[0]} {LONG[0]} {LONG[1]}"))
    assert method.bucket_keys(signature) == []


def test_the_length_guard() -> None:
    """The same article plus more text shares the longest sentences but is not dropped when
    the extra text is more than the guard allows (it would be lost)."""
    method = SentencesBackend()
    extra = " ".join(SHORT * 8)  # short sentences: the three longest stay the same
    longer = f"{ARTICLE} {extra}"
    a, b = method.signature(Document(ARTICLE)), method.signature(Document(longer))
    assert a.digest == b.digest
    assert method.bucket_keys(a) == method.bucket_keys(b)
    assert a.length / b.length < 0.8
    assert method.similarity(a, b) is None
    assert SentencesBackend(min_length_ratio=0.5).similarity(a, b) == a.length / b.length
    slightly = method.signature(Document(f"{ARTICLE} {SHORT[0]}"))
    assert method.similarity(a, slightly) == pytest.approx(a.length / slightly.length)
    assert method.similarity(slightly, a) == method.similarity(a, slightly)
    assert 0.8 <= method.similarity(a, slightly) < 1.0


def test_the_length_counts_word_characters() -> None:
    method = SentencesBackend()
    assert method.signature(Document("Ab, cd!  ef")).length == 6
    assert method.signature(Document("我们，去公园！")).length == 5


@pytest.mark.parametrize(
    "text",
    [
        "",
        LONG[0],  # one sentence
        " ".join(LONG[:2]),  # two
        f"{LONG[0]} Yes. It rained. So it goes.",  # one long enough, the rest under min_chars
        numbers_only(5),  # no sentence ends
        "A long headline without any final punctuation at all\n" * 5,
        CHINESE[0] + CHINESE[4],
    ],
)
def test_too_few_sentences_never_match(text: str) -> None:
    method = SentencesBackend()
    signature = method.signature(Document(text))
    assert method.bucket_keys(signature) == []
    assert method.similarity(signature, signature) is None
    dedup = Deduplicator(method, min_tokens=0)
    assert not dedup.check("a", text).is_duplicate
    # Only a text of 50 words or more has excerpt keys (backends/excerpts.py): they propose
    # "a", and containment drops "b", which says nothing "a" does not.
    long = Document(text).token_count >= MIN_WORDS
    assert dedup.check("b", text + " x").is_duplicate == long


def test_a_single_long_sentence_with_n_1() -> None:
    method = SentencesBackend(n=1)
    text = "This single sentence goes on and on about the bridge and the buses and the dawn."
    signature = method.signature(Document(text))
    assert len(method.bucket_keys(signature)) == 1
    assert method.similarity(signature, method.signature(Document(text.upper()))) == 1.0


def test_chinese_copy_in_another_template_is_found() -> None:
    article = "\n".join(CHINESE)
    first = f"首页 | 新闻 | 国内\n{article}\n版权所有 © 2024 新闻网"
    second = f"网站首页 > 财经\n{article}\n关于我们 | 联系我们\n责任编辑：王磊"
    dedup = Deduplicator(SentencesBackend(), min_tokens=0)
    assert not dedup.check("first", first).is_duplicate
    verdict = dedup.check("second", second)
    # Found by its sentences; the other site's navigation and editor line are text the first
    # copy lacks, a tenth of this short article, so containment keeps it beside the first.
    assert (verdict.related_to or verdict.duplicate_of, verdict.method) == ("first", "sentences")
