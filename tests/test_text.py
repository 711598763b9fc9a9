"""Text features: normalisation, tokens (jieba for CJK), shingle hashes, weights."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scrapy_neardup.text import (
    Document,
    ShingleSpec,
    cjk_ratio,
    hash_tokens,
    normalize,
    shingle_hashes,
    term_weights,
    tokenize,
)

# -- normalize -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ＨＥＬＬＯ　Ｗｏｒｌｄ１２３", "hello world123"),  # full-width letters, digits, space
        ("ｆｕｌｌ－ｗｉｄｔｈ，ｔｅｘｔ！", "full-width,text!"),  # full-width punctuation
        ("ﬁne ﬂour", "fine flour"),  # ligatures
        ("① Ⅻ ㎞", "1 xii km"),  # compatibility forms
        ("Straße GROSS", "strasse gross"),  # case folding, not just lower()
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),  # casefold maps final sigma too
        ("  a \t b\n\nc\u00a0d\u3000e  ", "a b c d e"),  # every kind of whitespace
        ("中文，全角：ＡＢＣ", "中文,全角:abc"),
        ("", ""),
        (" \n\t ", ""),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_normalize_is_idempotent_and_makes_copies_equal() -> None:
    a = "The  Harbour Bridge\nreopens ON Monday."
    b = "the harbour bridge reopens on monday."
    assert normalize(a) == normalize(b)
    assert normalize(normalize(a)) == normalize(a)
    assert normalize("Ｔｈｅ　ｈａｒｂｏｕｒ") == normalize("the harbour")


def test_cjk_ratio() -> None:
    assert cjk_ratio("") == 0.0
    assert cjk_ratio("hello world") == 0.0
    assert cjk_ratio("北京") == 1.0
    assert cjk_ratio("北京 ab") == pytest.approx(0.5)
    assert Document("这是一篇中文新闻，报道了北京的天气。").is_cjk
    assert not Document("An English sentence with 北京 in it.").is_cjk


# -- tokenize --------------------------------------------------------------------------------


def test_tokenize_english_words_digits_and_underscores() -> None:
    assert tokenize("hello, world! it's 2024 — ok_go") == [
        "hello",
        "world",
        "it",
        "s",
        "2024",
        "ok_go",
    ]
    assert tokenize("") == []
    assert tokenize(" ,.;!? ") == []


def test_tokenize_other_scripts_without_jieba() -> None:
    assert tokenize("наши герои знают толк") == ["наши", "герои", "знают", "толк"]
    assert tokenize("café naïve über") == ["café", "naïve", "über"]


JIEBA_LOGGER_SCRIPT = """
import jieba
from scrapy_neardup.text import tokenize
assert tokenize("我们今天去北京大学参加会议")
print(jieba.default_logger.level)
"""


def test_jieba_is_quiet_while_it_loads_and_its_logger_left_as_it_was() -> None:
    out = subprocess.run(
        [sys.executable, "-c", JIEBA_LOGGER_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["10"]  # jieba's own level, DEBUG
    assert "prefix dict" not in out.stderr


def test_tokenize_chinese_with_jieba() -> None:
    assert tokenize("我们今天去北京大学参加会议") == [
        "我们",
        "今天",
        "去",
        "北京大学",
        "参加",
        "会议",
    ]
    assert tokenize("我们的工作是在北京完成的") == [
        "我们",
        "的",
        "工作",
        "是",
        "在",
        "北京",
        "完成",
        "的",
    ]


def test_tokenize_drops_chinese_punctuation() -> None:
    assert tokenize(normalize("北京，上海。“广州”！")) == ["北京", "上海", "广州"]


def test_tokenize_mixed_chinese_latin_and_digits() -> None:
    assert tokenize("我们今天去北京大学参加会议 hello world") == [
        "我们",
        "今天",
        "去",
        "北京大学",
        "参加",
        "会议",
        "hello",
        "world",
    ]
    # No spaces between scripts: Latin and digit runs are split from the CJK runs.
    tokens = tokenize(normalize("新华社北京12月9日电 记者用iPhone拍照"))
    assert tokens[:4] == ["新华社", "北京", "12", "月"]
    assert "iphone" in tokens
    assert "拍照" in tokens
    assert all(" " not in t and t for t in tokens)


def test_tokenize_jieba_segments_real_text_into_words() -> None:
    text = (
        "国务院联防联控机制印发通知，进一步指导各地落实分区分级差异化防控策略，"
        "湖北和武汉要严格管控防输出。"
    )
    tokens = tokenize(normalize(text))
    assert "".join(tokens) == "".join(ch for ch in text if ch not in "，。")
    assert {"国务院", "进一步", "湖北", "武汉"} <= set(tokens)
    assert 0 < sum(len(t) == 1 for t in tokens) < len(tokens) / 2  # words, not characters


def test_document_tokens_come_from_the_normalized_text() -> None:
    doc = Document("  ＨＥＬＬＯ\tWorld ")
    assert doc.normalized == "hello world"
    assert doc.tokens == ["hello", "world"]
    assert doc.token_hashes.dtype == np.uint64
    assert len(doc.token_hashes) == 2


# -- hashes and shingles ---------------------------------------------------------------------


def _reference_token_hash(token: str) -> int:
    """The documented token hash, one token at a time in plain Python."""
    mask = (1 << 64) - 1
    total = sum(ord(c) * pow(0x100000001B3, i, 1 << 64) for i, c in enumerate(token)) & mask
    h = total ^ ((len(token) * 0x9E3779B97F4A7C15) & mask)
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & mask
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & mask
    return h ^ (h >> 33)


def test_hash_tokens_matches_the_documented_hash() -> None:
    tokens = ["hello", "北京", "hello", "x", "naïve", "𝔘nicode", "bad\ud800"]
    hashes = hash_tokens(tokens)
    assert hashes.dtype == np.uint64
    assert hashes.tolist() == [_reference_token_hash(t) for t in tokens]
    assert hashes[0] == hashes[2] and len(set(hashes.tolist())) == 6
    assert hash_tokens([]).tolist() == []
    assert hash_tokens(["", "a"]).tolist()[1] == _reference_token_hash("a")


def test_word_table_is_what_re_calls_a_word_character() -> None:
    from scrapy_neardup.text import _CJK_RE, _char_classes

    table = _char_classes()
    bmp = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    cjk = set(_CJK_RE.findall(bmp))
    assert cjk == {c for c in bmp if table[ord(c)] == 2}  # these take the jieba path
    assert set(re.findall(r"\w", bmp)) - cjk == {c for c in bmp if table[ord(c)] == 1}


@given(st.text(alphabet=st.characters(max_codepoint=0x2FFF, exclude_categories=["Cs"])))
def test_vectorised_word_hashes_equal_tokenize_then_hash(text: str) -> None:
    from scrapy_neardup.text import word_hashes

    normal = normalize(text)
    found = word_hashes(normal)
    if found is not None:  # None: CJK or beyond the BMP, which take the token path
        assert found.tolist() == hash_tokens(tokenize(normal)).tolist()
        assert Document(text).token_count == len(tokenize(normal))


def test_shingle_windows_count_and_identity() -> None:
    h = hash_tokens("a b c d e f".split())
    for n in range(1, 7):
        assert len(shingle_hashes(h, n)) == len(h) - n + 1
    assert shingle_hashes(h, 1) is h
    assert shingle_hashes(h, 3).dtype == np.uint64


def test_same_ngrams_give_same_hashes_anywhere() -> None:
    h = hash_tokens("the cat sat the cat sat on".split())
    s = shingle_hashes(h, 3)
    assert s[0] == s[3]  # "the cat sat" twice
    assert len(set(s.tolist())) == 4  # the cat sat, cat sat the, sat the cat, cat sat on
    # The same trigram in another text, at another position, hashes the same.
    other = shingle_hashes(hash_tokens("yesterday the cat sat".split()), 3)
    assert other[1] == s[0]


def test_shingle_hashes_depend_on_order() -> None:
    a = shingle_hashes(hash_tokens("a b c".split()), 3)
    b = shingle_hashes(hash_tokens("c b a".split()), 3)
    c = shingle_hashes(hash_tokens("a c b".split()), 3)
    assert len({a[0], b[0], c[0]}) == 3


def test_shingles_of_text_shorter_than_n() -> None:
    h = hash_tokens(["only", "two"])
    s = shingle_hashes(h, 5)
    assert len(s) == 1  # one shingle of all the tokens
    assert s[0] == shingle_hashes(h, 2)[0]
    assert len(shingle_hashes(hash_tokens([]), 3)) == 0


def test_shingle_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="shingle size"):
        shingle_hashes(hash_tokens(["a"]), 0)


def test_document_shingles_and_strings() -> None:
    doc = Document("The cat sat, on the mat.")
    word2 = ShingleSpec("word", 2)
    assert doc.shingle_strings(word2) == ["the cat", "cat sat", "sat on", "on the", "the mat"]
    assert len(doc.shingles(word2)) == 5
    assert doc.shingles(word2) is doc.shingles(word2)  # computed once
    assert doc.shingle_strings(ShingleSpec("word", 1)) == doc.tokens
    assert doc.shingle_strings(ShingleSpec("word", 9)) == ["the cat sat on the mat"]
    char3 = ShingleSpec("char", 3)
    assert doc.shingle_strings(char3)[:3] == ["the", "hec", "eca"]  # no spaces/punctuation
    assert len(doc.shingles(char3)) == len("thecatsatonthemat") - 2
    assert Document("").shingle_strings(word2) == []
    assert len(Document("").shingles(word2)) == 0


def test_char_shingles_of_chinese() -> None:
    doc = Document("北京，上海")
    assert doc.shingle_strings(ShingleSpec("char", 2)) == ["北京", "京上", "上海"]


# -- ShingleSpec -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unit", "size"),
    [("word:3", "word", 3), ("char:4", "char", 4), ("word", "word", 3), (" word : 2", "word", 2)],
)
def test_shingle_spec_parse(text: str, unit: str, size: int) -> None:
    spec = ShingleSpec.parse(text)
    assert (spec.unit, spec.size) == (unit, size)
    assert ShingleSpec.parse(str(spec)) == spec
    assert ShingleSpec.parse(spec) is spec


@pytest.mark.parametrize(
    "text", ["letter:3", "word:0", "word:17", "word:x", "word:3.5", ":3", "char:-1", ""]
)
def test_shingle_spec_parse_errors(text: str) -> None:
    with pytest.raises(ValueError, match="word:3"):
        ShingleSpec.parse(text)


def test_shingle_spec_validates_on_construction() -> None:
    with pytest.raises(ValueError, match="unit"):
        ShingleSpec("token", 3)
    with pytest.raises(ValueError, match="size"):
        ShingleSpec("word", 0)
    assert str(ShingleSpec("char", 16)) == "char:16"


# -- weights ---------------------------------------------------------------------------------


def test_term_weights_counts() -> None:
    assert term_weights(["a", "b", "a", "a"]) == {"a": 3, "b": 1}
    assert term_weights([]) == {}
