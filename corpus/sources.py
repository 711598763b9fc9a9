"""Where the corpora's texts come from: the real data beside the project, and generated text.

The real data lives in ``<project>/../shared/data`` (see its README) and is never copied into
the project; a fresh machine has none, so :func:`real_data_missing` and :func:`have_data` say
whether it is there, and callers skip (tests) or fall back to generated text (benchmarks):

* ``article-extraction-benchmark/``: 181 real article pages (``html/<sha256>.html.gz``) and
  their hand-annotated article bodies (``ground-truth.json``);
* ``gne-chinese-news/html/<site>/<n>.html``: 30 real Chinese news pages, not annotated.

The generated articles (:func:`synthetic_articles`, English and Chinese) are seeded, so engine
tests also run without ``../shared``.
"""

from __future__ import annotations

import functools
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from corpus.lang import has_cjk

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
AEB = DATA / "article-extraction-benchmark"
GNE = DATA / "gne-chinese-news"
GROUND_TRUTH = AEB / "ground-truth.json"
ARTICLES_HTML = AEB / "html"
CHINESE_HTML = GNE / "html"

# What each language's real data needs (the Chinese pages have no annotation file).
_NEEDED = {"en": GROUND_TRUTH, "zh": CHINESE_HTML}

# The Chinese pages hold one real near-duplicate pair: the same article on thepaper.cn with a
# one-character difference in the dateline (the article was extracted from two page versions).
CHINESE_NATURAL_PAIRS = (("thepaper/2", "thepaper/4"),)


# -- real data --------------------------------------------------------------------------------


def have_data(lang: str = "en") -> bool:
    """Whether the real pages of ``lang`` (``"en"`` or ``"zh"``) are present."""
    return _NEEDED[lang].exists()


def real_data_missing() -> str | None:
    """Why the real data (both languages) cannot be used here, or None when it is present."""
    for path in _NEEDED.values():
        if not path.exists():
            return f"{path} not found (../shared/data not found beside the project)"
    return None


@functools.cache
def ground_truth() -> dict[str, dict[str, Any]]:
    """``{sha256: {"url", "articleBody"}}`` of the article-extraction benchmark, sorted by key
    (shared: do not modify)."""
    data = json.loads(GROUND_TRUTH.read_text(encoding="utf-8"))
    return dict(sorted(data.items()))


def article_bodies() -> dict[str, str]:
    """``{sha256: articleBody}``: the hand-annotated article text of every page."""
    return {key: entry["articleBody"] for key, entry in ground_truth().items()}


def article_html(key: str) -> bytes:
    """The page ``key`` of the article-extraction benchmark, as a browser received it."""
    return gzip.decompress((ARTICLES_HTML / f"{key}.html.gz").read_bytes())


def chinese_pages() -> dict[str, Path]:
    """``{site/n: path}`` of the Chinese news pages, in path order (none when absent)."""
    return {f"{p.parent.name}/{p.stem}": p for p in sorted(CHINESE_HTML.glob("*/*.html"))}


@functools.cache
def chinese_texts() -> dict[str, str]:
    """``{site/n: main text}`` of the Chinese news pages, extracted with trafilatura."""
    import trafilatura

    out = {}
    for key, path in chinese_pages().items():
        html = path.read_text(encoding="utf-8", errors="replace")
        out[key] = trafilatura.extract(html, fast=True) or ""
    return out


def load_article_bodies(*, skip_cjk: bool = True) -> list[str] | None:
    """Non-blank article bodies (sorted by key), without those holding any CJK character
    unless ``skip_cjk`` is false; None when the data is absent (benchmarks fall back)."""
    if not have_data("en"):
        return None
    bodies = article_bodies().values()
    return [b for b in bodies if b.strip() and not (skip_cjk and has_cjk(b))]


def load_article_urls() -> list[str] | None:
    """The original URLs of the article-extraction benchmark pages, or None when absent."""
    if not have_data("en"):
        return None
    return [entry["url"] for entry in ground_truth().values()]


# -- generated articles -----------------------------------------------------------------------

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


def _article(
    rng: random.Random,
    vocabulary: list[str],
    topic: int,
    most_paragraphs: int,
    sentence: Callable[[random.Random, list[str]], str],
    sentence_sep: str,
    paragraph_sep: str,
) -> str:
    # Each article draws its own small topic vocabulary, so articles differ as real ones do.
    words = rng.sample(vocabulary, topic)
    paragraphs = []
    for _ in range(rng.randint(4, most_paragraphs)):
        n = rng.randint(3, 6)
        paragraphs.append(sentence_sep.join(sentence(rng, words) for _ in range(n)))
    return paragraph_sep.join(paragraphs)


def _english_sentence(rng: random.Random, nouns: list[str]) -> str:
    template = rng.choice(_EN_TEMPLATES)
    n, n2, n3 = rng.sample(nouns, 3)
    return template.format(
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


def _chinese_sentence(rng: random.Random, words: list[str]) -> str:
    n, n2, n3 = rng.sample(words, 3)
    return rng.choice(_ZH_TEMPLATES).format(
        n=n, n2=n2, n3=n3, v=rng.choice(_ZH_VERBS), d=rng.choice(_ZH_DAYS), x=rng.randint(2, 99)
    )


def synthetic_articles(n_english: int = 40, n_chinese: int = 12, seed: int = 7) -> dict[str, str]:
    """``{key: text}`` of generated English and Chinese articles (no files needed)."""
    rng = random.Random(seed)
    out = {
        f"syn-en-{i:03d}": _article(rng, _EN_NOUNS, 24, 8, _english_sentence, " ", "\n\n")
        for i in range(n_english)
    }
    out.update(
        {
            f"syn-zh-{i:03d}": _article(rng, _ZH_WORDS, 30, 7, _chinese_sentence, "", "\n")
            for i in range(n_chinese)
        }
    )
    return out
