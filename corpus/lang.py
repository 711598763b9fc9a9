"""Language and paragraph primitives shared by every corpus builder."""

from __future__ import annotations

import re

# Kana, CJK ideographs (with extension A and the compatibility block) and Hangul.
CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_KANA_HANGUL = re.compile(r"[\u3040-\u30ff\uac00-\ud7af]")
_ENGLISH_FUNCTION_WORDS = frozenset(
    "the a of and to in is that for on with was it as by at from".split()
)


def is_cjk(text: str) -> bool:
    """Whether more than 30 % of the text's non-space characters are CJK characters."""
    letters = sum(1 for c in text if not c.isspace())
    return bool(letters) and len(CJK_CHAR.findall(text)) / letters > 0.3


def has_cjk(text: str) -> bool:
    """Whether the text holds any CJK character at all."""
    return CJK_CHAR.search(text) is not None


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


def paragraphs(text: str, *, squash: bool = False) -> list[str]:
    """The non-blank lines of ``text``, stripped; with ``squash`` every run of whitespace
    inside a line becomes one space as well."""
    lines = (" ".join(line.split()) if squash else line.strip() for line in text.split("\n"))
    return [line for line in lines if line]
