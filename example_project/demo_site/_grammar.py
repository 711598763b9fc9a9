"""A tiny template grammar: ``[a|b|c]`` picks one alternative, ``{slot}`` fills a named slot.

Alternatives nest (``[the [old|new] mill|a barn]``; an empty alternative is allowed) and slot
values may themselves be templates: strings, sequences (one element is picked at random) or
callables taking the random generator.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

_ALT_RE = re.compile(r"\[([^\[\]]*)\]")
_SLOT_RE = re.compile(r"\{([A-Za-z0-9_]+)\}")
_SPACE_RE = re.compile(r"\s+")
_PUNCT_SPACE_RE = re.compile(r" +([,.;:!?])")


def _resolve_alternatives(template: str, rng: random.Random) -> str:
    """Replace innermost ``[a|b]`` groups, left to right, until none is left."""
    while True:
        new = _ALT_RE.sub(lambda m: rng.choice(m.group(1).split("|")), template, count=1)
        if new == template:
            return new
        template = new


def _expand_raw(template: str, slots: Mapping[str, object], rng: random.Random) -> str:
    def fill(match: re.Match[str]) -> str:
        value = slots[match.group(1)]
        if callable(value):
            return str(value(rng))
        if isinstance(value, str):
            return value
        if isinstance(value, Sequence):
            return str(rng.choice(value))
        raise TypeError(f"slot {match.group(1)!r} has an unusable value: {value!r}")

    text = template
    for _ in range(6):  # slot values may contain templates; six levels is plenty
        text = _resolve_alternatives(text, rng)
        new = _SLOT_RE.sub(fill, text)
        if new == text:
            break
        text = new
    return text


def fill(template: str, slots: Mapping[str, object], rng: random.Random) -> str:
    """Expand a phrase (a role, an organisation) without capitalising it."""
    return _SPACE_RE.sub(" ", _expand_raw(template, slots, rng)).strip()


def expand(template: str, slots: Mapping[str, object], rng: random.Random) -> str:
    """Expand an English template and tidy it (spacing, punctuation, capital first letter)."""
    return tidy(_expand_raw(template, slots, rng))


def expand_zh(template: str, slots: Mapping[str, object], rng: random.Random) -> str:
    """Expand a Chinese template; its spacing is kept as written."""
    return _expand_raw(template, slots, rng).strip()


def tidy(text: str) -> str:
    """Collapse whitespace, drop spaces before punctuation, capitalise the first letter."""
    text = _SPACE_RE.sub(" ", text).strip()
    text = _PUNCT_SPACE_RE.sub(r"\1", text)
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    return text
