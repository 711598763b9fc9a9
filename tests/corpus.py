"""Seeded test corpora with known near-duplicate pairs.

Two sources of original articles:

* the real data beside the project (``../shared/data``, see its README): the hand-annotated
  article bodies of ``article-extraction-benchmark/ground-truth.json`` and the main text that
  trafilatura extracts from the Chinese pages in ``gne-chinese-news/html/``;
* a small synthetic corpus generated here (English and Chinese), so that engine tests also run
  on a fresh machine without ``../shared``.

From every original, :func:`build_corpus` derives variants with one known transformation each
(word edits, an inserted ads paragraph, reordered or dropped paragraphs, boilerplate around
the text, reprints with a source line and character edits). A variant is a near-duplicate of
its origin and of nothing else. Everything is driven by ``random.Random(seed)``: the same seed
gives the same corpus, byte for byte.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ARTICLES_JSON = DATA / "article-extraction-benchmark" / "ground-truth.json"
ARTICLES_HTML = DATA / "article-extraction-benchmark" / "html"
CHINESE_HTML = DATA / "gne-chinese-news" / "html"

_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_LETTER_WORD = re.compile(r"[^\W\d_]{2,}")
_PARAGRAPH_SPLIT = re.compile(r"\n\s*\n|\n")

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


# -- real data --------------------------------------------------------------------------------


def real_data_missing() -> str | None:
    """Why the real data cannot be used here, or None when it is present."""
    for path in (ARTICLES_JSON, CHINESE_HTML):
        if not path.exists():
            return f"{path} not found (../shared/data not found beside the project)"
    return None


@functools.cache
def load_articles() -> dict[str, str]:
    """``{sha256: articleBody}`` of the article-extraction benchmark (hand-annotated text)."""
    data = json.loads(ARTICLES_JSON.read_text(encoding="utf-8"))
    return {key: entry["articleBody"] for key, entry in sorted(data.items())}


@functools.cache
def load_chinese() -> dict[str, str]:
    """``{site/n: main text}`` of the Chinese news pages, extracted with trafilatura."""
    import trafilatura

    out = {}
    for path in sorted(CHINESE_HTML.glob("*/*.html")):
        html = path.read_text(encoding="utf-8", errors="replace")
        text = trafilatura.extract(html, fast=True) or ""
        out[f"{path.parent.name}/{path.stem}"] = text
    return out


def load_article_html(key: str) -> str:
    with gzip.open(ARTICLES_HTML / f"{key}.html.gz", "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


# The Chinese pages hold one real near-duplicate pair: the same article on thepaper.cn with a
# one-character difference in the dateline (the article was extracted from two page versions).
CHINESE_NATURAL_PAIRS = (("thepaper/2", "thepaper/4"),)


# -- synthetic data ---------------------------------------------------------------------------

_EN_NOUNS = (
    "council harbour bridge school teacher market farmer river museum library station train "
    "airport pilot engineer company worker union factory hospital nurse doctor patient city "
    "village mayor budget report study scientist forest fire storm road driver bank loan "
    "court judge lawyer festival artist painting concert singer team coach player match "
    "season election voter minister policy tax price energy plant battery software startup "
    "investor garden park tourist hotel ship crew island coast fishery ocean satellite rocket "
    "laboratory vaccine virus climate drought harvest wheat coffee bakery restaurant chef "
    "kitchen museum gallery novel author publisher newspaper editor reporter camera film "
    "director actor theatre stadium marathon runner bicycle tunnel railway canal dam lake "
    "mountain glacier valley desert wind solar grid network phone app website server cable "
    "police officer witness suspect prison charity volunteer church choir student campus"
).split()
_EN_VERBS = (
    "announced opened closed approved rejected delayed expanded reduced replaced repaired "
    "visited inspected funded launched tested studied measured reported described welcomed "
    "criticised questioned defended promised planned finished started cancelled moved built "
    "sold bought won lost signed painted recorded published filmed trained hired protected"
).split()
_EN_ADJECTIVES = (
    "old new local national small large early late quiet busy public private rural urban "
    "famous modest bright dark green red cheap expensive modern ancient northern southern "
    "eastern western coastal remote crowded empty popular rare careful bold"
).split()
_EN_NAMES = (
    "Alice Baker|Omar Haddad|Mei Lin|Jonas Berg|Priya Nair|Carlos Ruiz|Fatima Diallo|"
    "Tom Walsh|Ingrid Olsen|Kenji Sato|Grace Okafor|Luca Bianchi|Sara Cohen|Ivan Petrov"
).split("|")
_EN_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_EN_TEMPLATES = (
    "The {a} {n} {v} the {n2} on {d}, according to {p}.",
    "{p} said that the {n} had {v} a {a} {n2} near the {n3}.",
    "In the {a} {n}, workers {v} the {n2} after weeks of {n3} talks.",
    "Officials {v} a plan for the {n} that would cost the {n2} more than {x} million.",
    "It was the {o} time this year that the {n} {v} the {a} {n2}.",
    "{p}, who leads the {n}, {v} the decision and called it a {a} step for the {n2}.",
    "By {d} evening, {x} residents had {v} the {n} and the {a} {n2}.",
    "A spokesperson for the {n} declined to comment on the {a} {n2}.",
    "Critics of the {n} argue that the {n2} is too {a} and that the {n3} was ignored.",
    "The {n} is expected to reopen in {x} weeks, once the {n2} has been {v}.",
    "There are {x} {n}s in the region, and most of them {v} a {a} {n2} last year.",
    "Since the {n} {v} its {n2}, the {a} {n3} has drawn visitors from across the country.",
)
_ORDINALS = "first second third fourth fifth sixth".split()

_ZH_WORDS = (
    "城市 政府 市民 记者 医院 学校 老师 学生 工厂 工人 企业 公司 市场 经济 银行 投资 "
    "项目 建设 交通 地铁 机场 高铁 道路 桥梁 河流 公园 景区 游客 农民 粮食 天气 暴雨 "
    "科学家 研究 实验室 疫苗 医生 患者 法院 法官 律师 警方 调查 会议 代表 部门 负责人 "
    "居民 社区 志愿者 活动 比赛 球队 教练 运动员 电影 导演 演员 作品 图书馆 博物馆 "
    "手机 软件 网络 平台 用户 数据 服务 价格 消费者 产品 能源 电池 汽车 新能源 环境 "
    "污染 治理 文化 历史 传统 节日 春节 乡村 发展 改革 政策 措施 计划 目标 成果"
).split()
_ZH_VERBS = (
    "宣布 开通 完成 启动 提出 推动 加强 举办 参加 发布 建设 改善 提高 降低 支持 调查 "
    "介绍 表示 认为 希望 决定 实施 开展 组织 参观 访问 检查 修复 扩大 减少"
).split()
_ZH_TEMPLATES = (
    "{n}的{n2}在{d}{v}了新的{n3}。",
    "据{n}介绍，{n2}已经{v}了{x}个{n3}。",
    "{n}负责人表示，将进一步{v}{n2}和{n3}。",
    "这是今年以来{n}第{x}次{v}{n2}。",
    "目前，{n}与{n2}正在{v}有关{n3}的工作。",
    "许多{n}认为，{n2}的{n3}对{n}很重要。",
    "记者从{n}了解到，{n2}将于{d}{v}。",
    "此外，{n}还{v}了{x}项{n2}措施。",
)
_ZH_DAYS = "周一 周二 周三 周四 周五 周六 周日 本月 下月 明年".split()


def _english_article(rng: random.Random) -> str:
    # Each article draws its own small topic vocabulary, so articles differ as real ones do.
    nouns = rng.sample(_EN_NOUNS, 24)
    paragraphs = []
    for _ in range(rng.randint(4, 8)):
        sentences = []
        for _ in range(rng.randint(3, 6)):
            template = rng.choice(_EN_TEMPLATES)
            n, n2, n3 = rng.sample(nouns, 3)
            sentences.append(
                template.format(
                    a=rng.choice(_EN_ADJECTIVES),
                    n=n,
                    n2=n2,
                    n3=n3,
                    v=rng.choice(_EN_VERBS),
                    p=rng.choice(_EN_NAMES),
                    d=rng.choice(_EN_DAYS),
                    x=rng.randint(2, 900),
                    o=rng.choice(_ORDINALS),
                )
            )
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def _chinese_article(rng: random.Random) -> str:
    words = rng.sample(_ZH_WORDS, 30)
    paragraphs = []
    for _ in range(rng.randint(4, 7)):
        sentences = []
        for _ in range(rng.randint(3, 6)):
            n, n2, n3 = rng.sample(words, 3)
            sentences.append(
                rng.choice(_ZH_TEMPLATES).format(
                    n=n,
                    n2=n2,
                    n3=n3,
                    v=rng.choice(_ZH_VERBS),
                    d=rng.choice(_ZH_DAYS),
                    x=rng.randint(2, 99),
                )
            )
        paragraphs.append("".join(sentences))
    return "\n".join(paragraphs)


def synthetic_articles(n_english: int = 40, n_chinese: int = 12, seed: int = 7) -> dict[str, str]:
    """``{key: text}`` of generated English and Chinese articles (no files needed)."""
    rng = random.Random(seed)
    out = {f"syn-en-{i:03d}": _english_article(rng) for i in range(n_english)}
    out.update({f"syn-zh-{i:03d}": _chinese_article(rng) for i in range(n_chinese)})
    return out


# -- transformations --------------------------------------------------------------------------


def is_cjk(text: str) -> bool:
    letters = sum(1 for c in text if not c.isspace())
    return bool(letters) and len(_CJK_CHAR.findall(text)) / letters > 0.3


_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
_ENGLISH_FUNCTION_WORDS = frozenset(
    "the a of and to in is that for on with was it as by at from".split()
)


def language(text: str) -> str:
    """``"zh"`` (Chinese), ``"en"`` (English prose) or ``"other"``, roughly, for reporting.

    English prose is text where at least 10% of the words are common English function words
    (about 25% in the benchmark's English articles, under 4% in its Portuguese, German or
    Indonesian ones, and in English score tables).
    """
    if is_cjk(text):
        return "other" if len(_KANA_HANGUL.findall(text)) > 0.05 * len(text) else "zh"
    words = re.findall(r"[^\W\d_]+", text.casefold())
    share = sum(w in _ENGLISH_FUNCTION_WORDS for w in words) / max(1, len(words))
    return "en" if share >= 0.10 else "other"


def paragraphs(text: str) -> list[str]:
    return [p for p in (p.strip() for p in _PARAGRAPH_SPLIT.split(text)) if p]


def _join(text: str, paras: Iterable[str]) -> str:
    return ("\n" if is_cjk(text) else "\n\n").join(paras)


def edit_words(text: str, rate: float, rng: random.Random, vocabulary: list[str]) -> str:
    """Replace ``rate`` of the words by other real words of the same text (CJK text: characters).

    At least one unit is always replaced. ``vocabulary`` (words of the whole corpus) is used only
    when the text itself has fewer than two distinct candidates.
    """
    pattern = _CJK_CHAR if is_cjk(text) else _LETTER_WORD
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
    return f"{source}\n{edit_words(text, 0.01, rng, vocabulary)}"


# -- corpora ----------------------------------------------------------------------------------


def _transform(
    name: str, text: str, rng: random.Random, vocab: list[str], boilerplate: tuple[str, str]
) -> str | None:
    actions: dict[str, Callable[[], str | None]] = {
        EDIT1: lambda: edit_words(text, 0.01, rng, vocab),
        EDIT5: lambda: edit_words(text, 0.05, rng, vocab),
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
        return len(_CJK_CHAR.findall(text)) // 2 if is_cjk(text) else len(text.split())

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
    return build_corpus("en", load_articles(), seed=seed, transforms=ENGLISH_TRANSFORMS)


def real_chinese_corpus(seed: int = 0) -> Corpus:
    return build_corpus(
        "zh",
        load_chinese(),
        seed=seed,
        transforms=CHINESE_TRANSFORMS,
        natural_pairs=CHINESE_NATURAL_PAIRS,
        negatives=15,
    )


def synthetic_corpus(seed: int = 0) -> Corpus:
    articles = synthetic_articles(seed=seed + 7)
    english = build_corpus(
        "syn-en",
        {k: v for k, v in articles.items() if k.startswith("syn-en")},
        seed=seed,
        transforms=ENGLISH_TRANSFORMS,
        negatives=20,
    )
    chinese = build_corpus(
        "syn-zh",
        {k: v for k, v in articles.items() if k.startswith("syn-zh")},
        seed=seed,
        transforms=CHINESE_TRANSFORMS,
        negatives=8,
    )
    return Corpus(
        "synthetic",
        english.originals + chinese.originals,
        english.variants + chinese.variants,
        english.negatives + chinese.negatives,
    )
