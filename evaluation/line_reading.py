"""An independent, line-level reading of a drop: what a dropped page holds that the page it
was dropped for lacks.

It shares no code with the plugin (its own words, its own shingles, its own reading of the
HTML), so that it can judge the plugin's decision. Each page is read from its raw HTML
(:func:`read`): its main text (trafilatura's default cascade, as a user calling it gets; the
body's visible text where it finds nothing), trafilatura's ``favor_recall`` reading, its
``<title>``, its ``<h1>``-``<h3>`` and its whole visible text.

What the dropped page holds, read from its main text and its headings:

- its **lines**: each line of its main text of :data:`LINE_WORDS` (6) words or more;
- its **heading tokens**: the tokens of its ``<h1>``-``<h3>`` outside navigation (a
  sidebar's "Quick search" is the site's), and those of its ``<title>`` that the page also
  shows (a site name or a translated "documentation" suffix that only the title carries is
  the site's, not the page's);
- its **identifiers**: ``foo_bar``, ``Foo.bar``, ``std::map``, ``CamelCase``, a word with
  digits (``x86_64``, ``CMP0047``);
- its **numbers**: ``42``, ``3.25.1``, ``1,838``.

:func:`losses` says what the kept page lacks. A line is lost when less than half of its word
3-shingles are in the kept page: in its main text, its recall reading, its title and headings
or its whole visible text (a passage that one reading left out is still there for the
reader). A heading token, an identifier or a number is lost when the kept page's main text,
recall reading, title and headings do not have the same whole token (case-insensitive:
``3.25`` is not held by ``3.25.1``). The kept page's navigation does not count there: a
sidebar, a breadcrumb or a "next" link names the neighbouring pages, and a sibling page
dropped for its neighbour would keep its name through it. A drop that loses anything is
*lossy*. Two pages with the same HTML read the same, so an exact copy under another URL never
is.

Words (for lines and shingles) are runs of letters, digits and ``_``, lower-cased; tokens
join words with ``.`` and ``::`` (``Foo.bar``, ``3.25.1``; numbers also with ``,``). Each
Chinese or Japanese character is a word and a token of its own (those scripts put no space
between words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.etree
import lxml.html

#: A line of fewer words is not read as a line (its heading tokens, identifiers and numbers
#: still are).
LINE_WORDS = 6
#: A line is lost when less than this share of its word 3-shingles is in the kept page.
LINE_HELD = 0.5

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
# A whole token: a CJK character, a number with its separators, or a word with its dots and
# "::" joints.
_TOKEN = re.compile(rf"[{_CJK}]|\d+(?:[.,]\d+)+|[^\W{_CJK}]+(?:(?:\.|::)[^\W{_CJK}]+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAMEL = re.compile(r"[a-z][A-Z]")


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``; each CJK character is a word."""
    return [w.lower() for w in _WORD.findall(text)]


def tokens(text: str) -> list[str]:
    """The whole tokens of ``text``: ``3.25.1``, ``Foo.bar``, ``std::map`` and ``x86_64`` are
    one token each, a CJK character is one; case kept."""
    return _TOKEN.findall(text)


def shingles(text: str) -> set[tuple[str, ...]]:
    """Word 3-shingles of ``text``, within its lines (none spans a line break)."""
    return {sh for line in text.split("\n") for sh in _shingles(words(line))}


def _shingles(w: list[str]) -> set[tuple[str, ...]]:
    return {tuple(w[i : i + 3]) for i in range(len(w) - 2)}


def is_identifier(token: str) -> bool:
    """``foo_bar``, ``Foo.bar``, ``std::map``, ``CamelCase`` or a word with digits; not a
    number, a plain word or an abbreviation of single letters (``e.g``)."""
    if _NUMBER.fullmatch(token):
        return False
    parts = re.split(r"\.|::", token)
    if len(parts) > 1 and any(len(p) > 1 for p in parts):
        return True
    return (
        "_" in token.strip("_")
        or bool(_CAMEL.search(token))
        or (any(c.isdigit() for c in token) and any(c.isalpha() for c in token))
    )


def main_text(html: bytes) -> str:
    """trafilatura's main text, as a user would call it; the body's text when it finds none."""
    import trafilatura

    return trafilatura.extract(html, favor_precision=False) or body_text(html)


def recall_text(html: bytes) -> str:
    """trafilatura's ``favor_recall`` reading: sections the default leaves out, no menus."""
    import trafilatura

    return trafilatura.extract(html, favor_recall=True) or ""


def _parse(html: bytes) -> lxml.html.HtmlElement | None:
    """The page's tree, its bytes decoded as trafilatura decodes them for its main text (a
    page without a charset is not read as Latin-1, as libxml2 would)."""
    from trafilatura.utils import decode_file

    try:
        return lxml.html.fromstring(decode_file(html))
    except (ValueError, lxml.etree.ParserError):
        return None


def body_text(html: bytes) -> str:
    """All the visible text of the page, navigation and sidebars included, on one line."""
    doc = _parse(html)
    if doc is None:
        return ""
    for junk in doc.xpath("//script|//style|//noscript|//template"):
        junk.drop_tree()
    body = doc.find("body")
    return " ".join(" ".join((body if body is not None else doc).itertext()).split())


#: Headings inside these are the site's navigation (a sidebar's "Navigation", "Quick
#: search"), not the page's.
_IN_NAVIGATION = (
    "ancestor::nav or ancestor::aside or ancestor::header or ancestor::footer"
    " or ancestor::*[@role='navigation'] or ancestor::*[contains(@class, 'sidebar')]"
)


def title_and_headings(html: bytes) -> tuple[str, str]:
    """The page's ``<title>``, and its ``<h1>``-``<h3>`` outside navigation, a line each."""
    doc = _parse(html)
    if doc is None:
        return "", ""
    found = doc.xpath(f"//*[self::h1 or self::h2 or self::h3][not({_IN_NAVIGATION})]")
    title = doc.find(".//title")
    return (
        " ".join(title.text_content().split()) if title is not None else "",
        "\n".join(" ".join(h.text_content().split()) for h in found),
    )


@dataclass(frozen=True)
class Reading:
    """What the evaluation reads in one page (see the module's docstring)."""

    main: str
    recall: str
    title: str
    headings: str
    visible: str

    def heading_tokens(self) -> list[str]:
        """The tokens of the page's headings, and those of its title that the page shows
        (not the site's name or a "documentation" suffix that only the title carries)."""
        shown = {t.lower() for t in tokens(f"{self.main}\n{self.headings}")}
        title = [t for t in tokens(self.title) if t.lower() in shown]
        return title + tokens(self.headings)


def read(html: bytes) -> Reading:
    """Read a page from its raw HTML."""
    return Reading(main_text(html), recall_text(html), *title_and_headings(html), body_text(html))


@dataclass(frozen=True)
class Loss:
    """What a dropped page holds that the kept page lacks; empty when the drop loses
    nothing."""

    lines: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()

    @property
    def lossy(self) -> bool:
        return bool(self.lines or self.headings or self.identifiers or self.numbers)

    def describe(self, width: int = 100, most: int = 3) -> list[str]:
        """A few short lines saying what was lost: up to ``most`` lines, then the tokens."""
        out = [f"line: {line[:width]}" for line in self.lines[:most]]
        if len(self.lines) > most:
            out.append(f"... {len(self.lines) - most} more lines")
        for kind in ("headings", "identifiers", "numbers"):
            tokens = getattr(self, kind)
            if tokens:
                shown = " ".join(tokens[: most * 4])
                more = f" (+{len(tokens) - most * 4})" if len(tokens) > most * 4 else ""
                out.append(f"{kind}: {shown}{more}"[: width + 20])
        return out


def _distinct(tokens: list[str]) -> tuple[str, ...]:
    """Each token once (its first spelling), in the order met, compared lower-cased."""
    first: dict[str, str] = {}
    for token in tokens:
        first.setdefault(token.lower(), token)
    return tuple(first.values())


def losses(dropped: Reading, kept: Reading) -> Loss:
    """What ``dropped`` holds that ``kept`` lacks: its lost lines, heading tokens,
    identifiers and numbers."""
    kept_text = f"{kept.main}\n{kept.recall}\n{kept.title}\n{kept.headings}"
    held_shingles = shingles(f"{kept_text}\n{kept.visible}")
    lost_lines = []
    for line in dropped.main.split("\n"):
        w = words(line)
        if len(w) < LINE_WORDS:
            continue
        own = _shingles(w)
        if sum(sh in held_shingles for sh in own) < LINE_HELD * len(own):
            lost_lines.append(line.strip())

    held = {t.lower() for t in tokens(kept_text)}
    lost_headings = [t for t in dropped.heading_tokens() if t.lower() not in held]
    held.update(t.lower() for t in lost_headings)  # reported once, as a heading
    lost = [t for t in tokens(dropped.main) if t.lower() not in held]
    return Loss(
        lines=tuple(dict.fromkeys(lost_lines)),
        headings=_distinct(lost_headings),
        identifiers=_distinct([t for t in lost if is_identifier(t)]),
        numbers=_distinct([t for t in lost if _NUMBER.fullmatch(t)]),
    )
