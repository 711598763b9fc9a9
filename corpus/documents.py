"""Documents for the speed benchmarks: real sentences recombined, or English-like ones.

:func:`make_documents` cuts a pool of sentences (:func:`sentence_pool`: the sentences of the
hand-annotated English article bodies of ``../shared/data``, or :func:`synthetic_sentences`
where that is absent) into documents of a given size, with a share of near-duplicates.
"""

from __future__ import annotations

import random
import re

from corpus.sources import DATA, GROUND_TRUTH, load_article_bodies

_SENTENCE_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Rough sentence split (enough to recombine texts); empty pieces are dropped."""
    return [s.strip() for s in _SENTENCE_RE.split(text) if len(s.strip()) > 1]


_FUNCTION_WORDS = (
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when who "
    "will more no if out so said what up its about than into them can only other new some "
    "these two may first then do any like my now over such our man me even most made after "
    "again being both did does doing each few had him how i just nor own same says should "
    "those too under us very where whom why your is am its"
).split()
_FUNCTION_SET = frozenset(_FUNCTION_WORDS)
_LATIN_WORD_RE = re.compile(r"[A-Za-z]+")


def rename_words(text: str, tag: str) -> str:
    """``text`` with ``tag`` appended to every Latin word that is not a function word.

    A recombined corpus reuses each source sentence in many documents, which makes unrelated
    documents share whole sentences; renaming the content words of each later pass over the
    source gives the documents of one pass the phrase overlap of real distinct articles, and
    documents of different passes the overlap of articles in two unrelated vocabularies.
    """
    if not tag:
        return text
    return _LATIN_WORD_RE.sub(
        lambda m: m.group() if m.group().lower() in _FUNCTION_SET else m.group() + tag, text
    )


def synthetic_sentences(count: int, seed: int = 0, vocabulary: int = 30_000) -> list[str]:
    """English-like sentences: real function words plus a Zipfian vocabulary of pseudo-words."""
    rng = random.Random(seed)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    letter_weights = [12, 9, 8, 8, 7, 7, 6, 6, 6, 4, 4, 3, 3, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    words = list(_FUNCTION_WORDS)
    seen = set(words)
    while len(words) < vocabulary:
        w = "".join(rng.choices(letters, letter_weights, k=rng.randint(3, 10)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cumulative.append(total)
    out = []
    for _ in range(count):
        n = rng.randint(8, 30)
        tokens = rng.choices(words, cum_weights=cumulative, k=n)
        out.append(" ".join(tokens).capitalize() + ".")
    return out


def sentence_pool(seed: int = 0) -> tuple[list[str], str]:
    """Sentences of the real article bodies, or synthetic ones; and a line naming the source."""
    bodies = load_article_bodies()
    if bodies:
        pool = [s for body in bodies for s in split_sentences(body)]
        chars = sum(len(s) for s in pool)
        return pool, (
            f"real text: {len(bodies)} English article bodies of {GROUND_TRUTH.relative_to(DATA)}"
            f" ({len(pool)} sentences, {chars / 1e3:.0f} KB)"
        )
    pool = synthetic_sentences(8000, seed)
    return pool, (
        f"SYNTHETIC text ({DATA} absent): seeded English-like sentences, Zipfian vocabulary"
    )


def _pass_tag(n: int) -> str:
    """ "" for the first pass over the source, then "qb", "qc", ..., "qba", ..."""
    tag = ""
    n = max(n, 0)
    while n:
        n, digit = divmod(n, 26)
        tag = chr(ord("a") + digit) + tag
    return "q" + tag if tag else ""


def make_documents(
    count: int,
    *,
    size: int = 5000,
    dup_rate: float = 0.1,
    seed: int = 0,
    pool: list[str] | None = None,
) -> tuple[list[str], str]:
    """``count`` documents of about ``size`` characters, and a line naming the text source.

    Documents are runs of 3-8 consecutive pool sentences, the runs shuffled and cut into
    documents, so one pass over the pool uses each sentence once; each further pass renames
    its content words (:func:`rename_words`), so no two documents share a sentence. A share
    ``dup_rate`` are near-duplicates instead: an earlier document with one sentence replaced.
    """
    rng = random.Random(seed)
    source = ""
    if pool is None:
        pool, source = sentence_pool(seed)
    runs: list[list[str]] = []
    i = 0
    while i < len(pool):
        step = rng.randint(3, 8)
        runs.append(pool[i : i + step])
        i += step
    docs: list[list[str]] = []
    passes = 0
    stream: list[str] = []
    while len(docs) < count:
        if docs and rng.random() < dup_rate:
            copy = list(rng.choice(docs))
            copy[rng.randrange(len(copy))] = rename_words(rng.choice(pool), _pass_tag(passes - 1))
            docs.append(copy)
            continue
        sentences: list[str] = []
        length = 0
        while length < size:
            if not stream:
                rng.shuffle(runs)
                tag = _pass_tag(passes)
                stream = [rename_words(s, tag) for run in reversed(runs) for s in reversed(run)]
                passes += 1
            sentences.append(stream.pop())
            length += len(sentences[-1]) + 1
        docs.append(sentences)
    done = f"{passes} pass(es) over its sentences"
    return [" ".join(d) for d in docs], f"{source}; {done}" if source else done
