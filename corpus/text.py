"""Text-level corpora with known near-duplicate pairs (used by the engine and Redis tests).

Originals come from :mod:`corpus.sources`: the hand-annotated English article bodies and the
main text trafilatura extracts from the Chinese news pages of ``../shared/data``, or the
generated articles (English and Chinese) that need no files.

From every original, :func:`build_corpus` derives variants with one known transformation each
(word replacements, an inserted ads paragraph, reordered or dropped paragraphs, boilerplate
around the text, reprints with a source line and character edits). A variant is a
near-duplicate of its origin and of nothing else. Everything is driven by
``random.Random(seed)``: the same seed gives the same corpus, byte for byte.

The HTML-level families of the accuracy evaluation are :mod:`corpus.html`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from corpus.lang import CJK_CHAR, is_cjk, paragraphs
from corpus.sources import CHINESE_NATURAL_PAIRS, article_bodies, chinese_texts, synthetic_articles

_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")

# Transformations (names used as ``Sample.transform``).
ORIGINAL = "original"
EDIT1 = "edit1%"  # 1% of the words (or CJK characters) replaced by others of the same text
EDIT5 = "edit5%"
INSERT_AD = "insert-ad"  # an ads/lead paragraph inserted at a paragraph boundary
REORDER = "reorder"  # paragraphs shuffled
DROP = "drop-paragraph"  # one paragraph of at most 10% of the words removed
BOILERPLATE = "boilerplate"  # site header/navigation/related links/footer around the text
REPRINT = "reprint"  # Chinese: a source line at the top and 1% character edits
NATURAL = "natural"  # a near-duplicate pair that occurs in the real data itself

ENGLISH_TRANSFORMS = (EDIT1, EDIT5, INSERT_AD, REORDER, DROP, BOILERPLATE)
CHINESE_TRANSFORMS = (EDIT1, EDIT5, INSERT_AD, REORDER, BOILERPLATE, REPRINT)


@dataclass(frozen=True)
class Sample:
    """One document of a corpus; ``origin`` is the key of the original it was made from."""

    key: str
    text: str
    origin: str
    transform: str = ORIGINAL


@dataclass
class Corpus:
    """Originals (pairwise not duplicates), their variants, and boilerplate-wrapped negatives.

    ``negatives`` are different articles wrapped in one identical boilerplate: none of them may
    be found a duplicate of another (they go into a deduplicator of their own).
    """

    name: str
    originals: list[Sample]
    variants: list[Sample] = field(default_factory=list)
    negatives: list[Sample] = field(default_factory=list)

    def by_key(self) -> dict[str, Sample]:
        return {s.key: s for s in (*self.originals, *self.variants, *self.negatives)}

    def transforms(self) -> list[str]:
        return sorted({v.transform for v in self.variants})


def letter_word(n: int, prefix: str = "w") -> str:
    """A made-up word of letters only for ``n`` (a word with a digit would be a name or a
    number to the plugin's lossless rule, which never drops a page for another page's)."""
    letters = ""
    n += 26 * 26  # at least three letters
    while n:
        n, r = divmod(n, 26)
        letters += chr(ord("a") + r)
    return f"{prefix}{letters}x"


# -- transformations --------------------------------------------------------------------------


def _join(text: str, paras: Iterable[str]) -> str:
    return ("\n" if is_cjk(text) else "\n\n").join(paras)


def replace_words(text: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    """Replace ``rate`` of the words by other real words of the same text (CJK text: characters).

    Exactly ``round(rate * units)`` units, at least one, are replaced in place, so the text
    keeps its length and punctuation. ``vocabulary`` (words of the whole corpus) is used only
    when the text itself has fewer than two distinct candidates. (The HTML-level reprints,
    :func:`corpus.html.edit_words`, edit each word with a probability instead, and also
    delete and insert words.)
    """
    pattern = CJK_CHAR if is_cjk(text) else _LETTER_WORD
    spans = [m.span() for m in pattern.finditer(text)]
    if not spans:
        return text
    own = sorted({text[a:b] for a, b in spans})
    pool = own if len(own) >= 2 else vocabulary
    chosen = sorted(rng.sample(range(len(spans)), max(1, round(rate * len(spans)))))
    pieces, last = [], 0
    for i in chosen:
        a, b = spans[i]
        old = text[a:b]
        new = old
        while new.casefold() == old.casefold():
            new = rng.choice(pool)
        pieces += [text[last:a], new]
        last = b
    pieces.append(text[last:])
    return "".join(pieces)


ENGLISH_ADS = (
    "Advertisement. Subscribe now and get unlimited access to every story for just one dollar "
    "a week for the first year; cancel anytime. Already a subscriber? Sign in to continue "
    "reading and manage your newsletters in your account settings."
)
CHINESE_ADS = (
    "广告：下载客户端，第一时间获取最新资讯，扫描二维码关注我们的官方微信公众号，参与活动赢取好礼。"
)


def insert_ad(text: str, rng: random.Random) -> str:
    """An ads/lead paragraph inserted at a random paragraph boundary (possibly the top)."""
    paras = paragraphs(text)
    ad = CHINESE_ADS if is_cjk(text) else ENGLISH_ADS
    paras.insert(rng.randint(0, max(0, len(paras) - 1)), ad)
    return _join(text, paras)


def reorder_paragraphs(text: str, rng: random.Random) -> str | None:
    """Paragraphs in another order; None for texts of fewer than three paragraphs."""
    paras = paragraphs(text)
    if len(paras) < 3:
        return None
    shuffled = paras[:]
    while shuffled == paras:
        rng.shuffle(shuffled)
    return _join(text, shuffled)


def drop_paragraph(text: str, rng: random.Random, max_share: float = 0.10) -> str | None:
    """Without one paragraph holding at most ``max_share`` of the text; None if there is none."""
    paras = paragraphs(text)
    total = sum(len(p) for p in paras)
    small = [i for i, p in enumerate(paras) if len(p) <= max_share * total]
    if len(paras) < 3 or not small:
        return None
    drop = rng.choice(small)
    return _join(text, (p for i, p in enumerate(paras) if i != drop))


def english_boilerplate(headlines: list[str]) -> tuple[str, str]:
    """A site header (navigation) and footer (related stories, legal lines)."""
    header = (
        "Skip to main content\nHome | World | Business | Politics | Technology | Science | "
        "Health | Sports | Arts | Travel | Opinion\nSubscribe | Log in | Search"
    )
    related = "\n".join(f"- {h}" for h in headlines)
    footer = (
        "Share this article: Facebook | Twitter | Email | Print\n\nRelated stories\n"
        f"{related}\n\nMost read\nContact us | Advertise with us | Terms of use | Privacy "
        "policy | Cookie settings\nCopyright 2024 The Daily Chronicle. All rights reserved."
    )
    return header, footer


def chinese_boilerplate(headlines: list[str]) -> tuple[str, str]:
    header = (
        "首页 | 新闻 | 国内 | 国际 | 财经 | 科技 | 体育 | 娱乐 | 汽车 | 房产\n"
        "当前位置：首页 > 新闻 > 正文"
    )
    related = "\n".join(headlines)
    footer = (
        "分享到：微信 | 微博 | QQ空间\n相关新闻\n"
        f"{related}\n关于我们 | 联系我们 | 广告服务 | 网站地图 | 隐私政策\n"
        "版权所有 © 2024 新闻网 未经授权禁止转载 京ICP备00000000号"
    )
    return header, footer


def wrap(text: str, boilerplate: tuple[str, str]) -> str:
    header, footer = boilerplate
    return f"{header}\n\n{text}\n\n{footer}"


def _headline(text: str, words: int = 12, chars: int = 24) -> str:
    first = paragraphs(text)[0] if paragraphs(text) else ""
    return first[:chars] if is_cjk(first) else " ".join(first.split()[:words])


_SOURCES = ("新华网", "人民网", "中国新闻网", "澎湃新闻", "环球网", "央视新闻")
_EDITORS = ("王磊", "李娜", "张伟", "刘洋", "陈静", "杨帆")


def reprint(text: str, rng: random.Random, vocabulary: list[str]) -> str:
    """A Chinese reprint: a source/editor line on top and 1% of the characters edited."""
    source = (
        f"来源：{rng.choice(_SOURCES)}  责任编辑：{rng.choice(_EDITORS)}  "
        f"{rng.randint(2018, 2023)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    )
    return f"{source}\n{replace_words(text, 0.01, rng, vocabulary)}"


def excerpt(text: str, rng: random.Random, share: float, min_words: int = 50) -> str | None:
    """A contiguous part of ``text``: ``share`` of its words (at least ``min_words``), from a
    random word on, so it may start and end mid-sentence; its line breaks are kept. None when
    the text is too short to have one that is shorter than itself (CJK: characters)."""
    cjk = is_cjk(text)
    units = [(m.start(), m.end()) for m in re.finditer(r"\S" if cjk else r"\S+", text)]
    size = max(min_words, round(share * len(units)))
    if size >= len(units):
        return None
    start = rng.randrange(len(units) - size + 1)
    return text[units[start][0] : units[start + size - 1][1]]


# -- corpora ----------------------------------------------------------------------------------


def _transform(
    name: str, text: str, rng: random.Random, vocab: list[str], boilerplate: tuple[str, str]
) -> str | None:
    actions: dict[str, Callable[[], str | None]] = {
        EDIT1: lambda: replace_words(text, 0.01, rng, vocab),
        EDIT5: lambda: replace_words(text, 0.05, rng, vocab),
        INSERT_AD: lambda: insert_ad(text, rng),
        REORDER: lambda: reorder_paragraphs(text, rng),
        DROP: lambda: drop_paragraph(text, rng),
        BOILERPLATE: lambda: wrap(text, boilerplate),
        REPRINT: lambda: reprint(text, rng, vocab),
    }
    return actions[name]()


def build_corpus(
    name: str,
    articles: dict[str, str],
    *,
    seed: int = 0,
    transforms: Iterable[str] = ENGLISH_TRANSFORMS,
    min_variant_words: int = 100,
    natural_pairs: Iterable[tuple[str, str]] = (),
    negatives: int = 40,
) -> Corpus:
    """Originals, one variant per transformation of each long-enough original, and negatives.

    ``min_variant_words`` (whitespace words, or CJK characters / 2) keeps variants away from the
    short-text floor, where only exact matching applies. Of each natural pair the second text
    becomes a ``natural`` variant of the first instead of an original. ``negatives`` articles
    (with at least ``2 * min_variant_words``) are wrapped in the same boilerplate.
    """
    rng = random.Random(f"{name}:{seed}")
    second = {b: a for a, b in natural_pairs}
    keys = [k for k in articles if articles[k].strip()]
    originals = [Sample(f"{name}/{k}", articles[k], f"{name}/{k}") for k in keys if k not in second]
    vocab = sorted({w for s in originals for w in _LETTER_WORD.findall(s.text)})
    transforms = tuple(transforms)

    def size(text: str) -> int:
        return len(CJK_CHAR.findall(text)) // 2 if is_cjk(text) else len(text.split())

    # One boilerplate for the whole corpus ("one site"), with headlines of articles that are
    # not among the negatives (as a real "related stories" block would link elsewhere).
    zh = sum(is_cjk(s.text) for s in originals) > len(originals) / 2
    heads = [_headline(s.text) for s in rng.sample(originals, min(5, len(originals)))]
    boilerplate = (chinese_boilerplate if zh else english_boilerplate)(heads)

    variants = []
    for original in originals:
        if size(original.text) < min_variant_words:
            continue
        for t in transforms:
            text = _transform(t, original.text, rng, vocab, boilerplate)
            if text is not None and text != original.text:
                variants.append(Sample(f"{original.key}#{t}", text, original.key, t))
    for k in keys:
        if k in second:
            origin = f"{name}/{second[k]}"
            variants.append(Sample(f"{origin}#{NATURAL}", articles[k], origin, NATURAL))

    long_enough = [s for s in originals if size(s.text) >= 2 * min_variant_words]
    picked = rng.sample(long_enough, min(negatives, len(long_enough)))
    other_bp = (chinese_boilerplate if zh else english_boilerplate)(
        [_headline(s.text) for s in rng.sample(originals, min(5, len(originals)))]
    )
    negative_samples = [
        Sample(f"{s.key}#neg", wrap(s.text, other_bp), s.key, BOILERPLATE) for s in picked
    ]
    return Corpus(name, originals, variants, negative_samples)


def real_english_corpus(seed: int = 0) -> Corpus:
    return build_corpus("en", article_bodies(), seed=seed, transforms=ENGLISH_TRANSFORMS)


def real_chinese_corpus(seed: int = 0) -> Corpus:
    return build_corpus(
        "zh",
        chinese_texts(),
        seed=seed,
        transforms=CHINESE_TRANSFORMS,
        natural_pairs=CHINESE_NATURAL_PAIRS,
        negatives=15,
    )


def synthetic_corpus(seed: int = 0) -> Corpus:
    """The generated English and Chinese articles (no files needed), as one corpus."""
    articles = synthetic_articles(seed=seed + 7)
    parts = [
        build_corpus(
            name,
            {k: v for k, v in articles.items() if k.startswith(name)},
            seed=seed,
            transforms=transforms,
            negatives=negatives,
        )
        for name, transforms, negatives in (
            ("syn-en", ENGLISH_TRANSFORMS, 20),
            ("syn-zh", CHINESE_TRANSFORMS, 8),
        )
    ]
    return Corpus(
        "synthetic",
        [s for part in parts for s in part.originals],
        [s for part in parts for s in part.variants],
        [s for part in parts for s in part.negatives],
    )
