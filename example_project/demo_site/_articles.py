"""Article generation: turns topic material into deterministic English and Chinese articles."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from . import _content_en as en
from . import _content_zh as zh
from ._grammar import expand, expand_zh, fill
from ._html import MONTH_NAMES

_HAN_RE = re.compile(r"[\u4e00-\u9fff]")

NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine")
MONTHS = MONTH_NAMES
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


@dataclass(frozen=True)
class Article:
    """One canonical document: the text every copy of it is made from."""

    doc_id: str
    lang: str
    section: str
    slug: str
    title: str
    alt_title: str
    author: str
    date: str
    paragraphs: tuple[str, ...]

    @property
    def text(self) -> str:
        """The article body, one paragraph a line (the headline is not part of it)."""
        return "\n".join(self.paragraphs)


def word_count(text: str) -> int:
    """Words in an English text (whitespace separated)."""
    return len(text.split())


def _towns(rng: random.Random) -> list[str]:
    names = sorted({h + t for h in en.TOWN_HEADS for t in en.TOWN_TAILS})
    rng.shuffle(names)
    return names


def _people(rng: random.Random) -> list[tuple[str, str]]:
    """Every first-name/surname combination, shuffled (1,600 distinct full names)."""
    combos = [(f, s) for f in en.FIRST_NAMES for s in en.SURNAMES]
    rng.shuffle(combos)
    return combos


def _en_slots(
    topic: en.Topic,
    subject: en.Subject,
    rng: random.Random,
    places: tuple[str, str],
    people: list[tuple[str, str]],
    year: int,
) -> dict[str, object]:
    place, place2 = places
    org = fill(rng.choice(topic.orgs), {"Place": place}, rng)
    slots: dict[str, object] = {
        "Place": place,
        "Place2": place2,
        "Org": org,
        "Org2": rng.choice(topic.regulators),
        "subj": subject.name,
        "Subj": subject.name[0].upper() + subject.name[1:],
        "thing": subject.things,
        "year": str(year),
        "year2": str(year + rng.randint(1, 2)),
        "yearprev": str(year - 1),
        "yearpast": str(year - rng.randint(3, 6)),
        "month": MONTHS,
        "weekday": WEEKDAYS,
        "date": lambda r: f"{r.randint(2, 28)} {r.choice(MONTHS)}",
        "n": NUMBER_WORDS,
        "n10": lambda r: str(r.randint(11, 60)),
        "num": lambda r: str(r.randint(120, 980)),
        "num2": lambda r: f"{r.randint(1, 9)},{r.randint(100, 999)}",
        "pct": lambda r: f"{r.randint(12, 78)} percent",
        "money": lambda r: f"${r.randint(2, 48)}.{r.randint(1, 9)} million",
        "votes": lambda r: f"{r.choice(NUMBER_WORDS[4:])} votes to {r.choice(NUMBER_WORDS[:3])}",
    }
    for i, role_pool in ((1, topic.roles), (2, None), (3, topic.critics)):
        first, last = people[i - 1]
        slots[f"P{i}"] = f"{first} {last}"
        slots[f"P{i}s"] = last
        if role_pool is not None:
            slots[f"P{i}role"] = fill(rng.choice(role_pool), {"Org": org, "Place": place}, rng)
    return slots


def make_english(
    doc_id: str,
    topic: en.Topic,
    subject: en.Subject,
    rng: random.Random,
    places: tuple[str, str],
    people: list[tuple[str, str]],
    author: str,
) -> Article:
    """Generate one English article of 300-900 words from its topic and subject."""
    year = rng.randint(2021, 2025)
    slots = _en_slots(topic, subject, rng, places, people, year)
    date = f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    heads = list(en.HEADLINES + topic.headlines)
    rng.shuffle(heads)
    title = expand(heads[0], slots, rng)
    alt_title = expand(heads[1], slots, rng)
    target = rng.randint(330, 860)
    decks = {
        "fact": list(subject.facts),
        "body": list(topic.body),
        "generic": list(en.GENERIC),
        "quote": list(topic.quotes),
        "attr": list(en.ATTRIBUTIONS),
    }
    for deck in decks.values():
        rng.shuffle(deck)
    order = ("fact", "body", "generic")

    def draw(kind: str) -> str | None:
        if kind in order and not decks[kind]:  # fall back on whatever material is left
            kind = next((k for k in order if decks[k]), kind)
        deck = decks[kind]
        if not deck:
            return None
        if kind == "quote":
            if not decks["attr"]:
                return None
            quote = expand(deck.pop(), slots, rng)
            return expand(decks["attr"].pop(), {**slots, "quote": quote}, rng)
        return expand(deck.pop(), slots, rng)

    paragraphs = [
        " ".join(s for s in (expand(rng.choice(topic.ledes), slots, rng), draw("fact")) if s)
    ]
    total = word_count(paragraphs[0])
    turn = 0
    while total < target and any(decks[k] for k in order):
        if len(paragraphs) % 3 == 2:
            kinds = ["quote", order[turn % 3]]
        else:
            kinds = [order[(turn + k) % 3] for k in range(rng.randint(2, 3))]
        turn += 1
        sentences = [s for s in (draw(k) for k in kinds) if s]
        if not sentences:
            break
        para = " ".join(sentences)
        paragraphs.append(para)
        total += word_count(para)
    while total > 900 and len(paragraphs) > 3:
        total -= word_count(paragraphs.pop())
    return Article(
        doc_id=doc_id,
        lang="en",
        section=topic.key,
        slug=subject.slug,
        title=title,
        alt_title=alt_title,
        author=author,
        date=date,
        paragraphs=tuple(paragraphs),
    )


def english_articles(seed: int) -> list[Article]:
    """All English articles, one per topic subject, in a fixed order."""
    rng = random.Random(seed)
    towns = _towns(rng)
    people = iter(_people(rng))
    reporters = [f"{f} {s}" for f, s in (next(people) for _ in range(12))]
    out = []
    k = 0
    for topic in en.TOPICS:
        for subject in topic.subjects:
            art_rng = random.Random(f"{seed}:en:{topic.key}:{subject.slug}")
            cast: list[tuple[str, str]] = []
            while len(cast) < 3:  # three people per article, no shared first or last names
                person = next(people)
                if all(person[0] != c[0] and person[1] != c[1] for c in cast):
                    cast.append(person)
            out.append(
                make_english(
                    f"en-{k + 1:02d}",
                    topic,
                    subject,
                    art_rng,
                    (towns[2 * k], towns[2 * k + 1]),
                    cast,
                    reporters[k % len(reporters)],
                )
            )
            k += 1
    return out


ZH_NUMBERS = ("二", "三", "四", "五", "六", "七", "八", "九")
ZH_MONTHS = tuple(f"{m}月" for m in ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十"))


def chinese_articles(seed: int) -> list[Article]:
    """All Chinese articles, one per topic pool, in a fixed order."""
    rng = random.Random(f"{seed}:zh")
    places = list(zh.PLACES)
    rng.shuffle(places)
    names = [s + g for s in zh.SURNAMES for g in zh.GIVEN]
    rng.shuffle(names)
    out = []
    for k, topic in enumerate(zh.TOPICS):
        art_rng = random.Random(f"{seed}:zh:{topic.key}")
        place = places[k]
        org = expand_zh(topic.org, {"place": place}, art_rng)
        slots: dict[str, object] = {
            "place": place,
            "org": org,
            "n": ZH_NUMBERS,
            "num": lambda r: str(r.randint(120, 980)),
            "pct": lambda r: f"{r.randint(15, 60)}%",
            "money": lambda r: f"{r.randint(30, 900)}万元",
            "month": ZH_MONTHS,
        }
        slots["p1"] = expand_zh(art_rng.choice(topic.roles), slots, art_rng) + names[3 * k]
        slots["p2"] = names[3 * k + 1]
        year = art_rng.randint(2021, 2025)
        date = f"{year}-{art_rng.randint(1, 12):02d}-{art_rng.randint(1, 28):02d}"
        sentences = [expand_zh(topic.lede, slots, art_rng)]
        sentences += [expand_zh(s, slots, art_rng) for s in topic.sentences]
        paragraphs: list[str] = []
        i = 0
        while i < len(sentences):
            step = art_rng.randint(2, 3)
            paragraphs.append("".join(sentences[i : i + step]))
            i += step
        out.append(
            Article(
                doc_id=f"zh-{k + 1:02d}",
                lang="zh",
                section=topic.section,
                slug=topic.slug,
                title=expand_zh(topic.titles[0], slots, art_rng),
                alt_title=expand_zh(topic.titles[1], slots, art_rng),
                author=names[3 * k + 2],
                date=date,
                paragraphs=tuple(paragraphs),
            )
        )
    return out


_WORD_EDGE_RE = re.compile(r"^(\W*)(.*?)(\W*)$")


def edit_english(paragraphs: list[str], ratio: float, rng: random.Random) -> list[str]:
    """Swap about ``ratio`` of the words for near synonyms (a copy editor's light touch)."""
    words = [p.split(" ") for p in paragraphs]
    total = sum(len(w) for w in words)
    candidates = []
    for pi, para in enumerate(words):
        for wi, word in enumerate(para):
            m = _WORD_EDGE_RE.match(word)
            assert m is not None
            if m.group(2).lower() in en.SYNONYMS or m.group(2).isdigit():
                candidates.append((pi, wi))
    k = min(len(candidates), max(2, round(total * ratio)))
    for pi, wi in rng.sample(candidates, k):
        m = _WORD_EDGE_RE.match(words[pi][wi])
        assert m is not None
        lead, core, trail = m.groups()
        if core.isdigit():
            new = str(int(core) + rng.randint(1, 9))
        else:
            new = en.SYNONYMS[core.lower()]
            if core[0].isupper():
                new = new[0].upper() + new[1:]
        words[pi][wi] = lead + new + trail
    return [" ".join(w) for w in words]


def edit_chinese(paragraphs: list[str], ratio: float, rng: random.Random) -> list[str]:
    """Replace about ``ratio`` of the words (counted as Han characters / 1.6) with synonyms."""
    han = sum(len(_HAN_RE.findall(p)) for p in paragraphs)
    spots = [
        (pi, m.start(), key)
        for pi, para in enumerate(paragraphs)
        for key in zh.SYNONYMS
        for m in re.finditer(re.escape(key), para)
    ]
    k = min(len(spots), max(2, round(han / 1.6 * ratio)))
    chosen = sorted(rng.sample(spots, k), key=lambda s: (s[0], -s[1]))
    out = list(paragraphs)
    for pi, pos, key in chosen:
        para = out[pi]
        if para[pos : pos + len(key)] == key:  # overlapping keys: skip what an edit already moved
            out[pi] = para[:pos] + zh.SYNONYMS[key] + para[pos + len(key) :]
    return out
