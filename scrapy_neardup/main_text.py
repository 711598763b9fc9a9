"""A page's title and main text, read by trafilatura: bytes in, :class:`Extracted` out.

Promises: never raises on odd input (binary, not HTML, undecodable: an ``empty`` or
``fallback`` outcome); trafilatura's loggers are left as they were, but while a page is
parsed. Must not: import trafilatura before a page needs it. Rationale:
``docs/design.md#extraction``.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: Children that keep a ``<section>`` a paragraph (see :func:`_paragraph_sections`).
_INLINE_TAGS = frozenset(
    "a abbr b br code em font i img label mark q s small span strong sub sup time u wbr".split()
)
#: Where a page's headings are its navigation's, not its own (a sidebar's "Quick search").
_NAVIGATION = (
    "ancestor::nav or ancestor::aside or ancestor::header or ancestor::footer"
    " or ancestor::*[@role='navigation']"
    " or ancestor::*[contains(concat(' ', normalize-space(@class), ' '), ' sidebar ')]"
)
_OG_TITLE = '//head/meta[@property="og:title"]/@content'
# A title's parts: " | ", " - ", " :: " and the like between words, or "_" or "｜" in CJK text.
_TITLE_PARTS = re.compile(r"\s+(?:[|\-–—·•»:]{1,2})\s+|\s*[_｜]\s*(?=[^_｜]+$)")


@dataclass(frozen=True)
class Extracted:
    """The text of a page (its title, a blank line, its main text, its readers' comments) and
    how it was found: ``trafilatura``, ``fallback`` or ``empty``; ``article_end``: where in
    ``text`` the comments begin (None: it has none)."""

    text: str
    how: str
    title: str = ""
    article_end: int | None = None


def decode(body: bytes, encoding: str | None) -> str | None:
    """``body`` as text in the response's ``encoding`` (undecodable bytes replaced, never
    fatal), or in UTF-16 where every other byte of its start is NUL (no BOM, no label); None
    for a binary body (NUL bytes in its first KiB, in neither UTF-16 nor UTF-32)."""
    head = body[:1024]
    wide = (encoding or "").lower().replace("_", "-").startswith(("utf-16", "utf-32", "utf16"))
    if not wide and b"\x00" in head:
        halves = (("utf-16-le", head[1::2]), ("utf-16-be", head[0::2]))
        utf16 = [name for name, nuls in halves if nuls.count(0) >= 0.9 * len(nuls)]
        if len(head) < 64 or not utf16:
            return None
        encoding = utf16[0]
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:  # an encoding name Python does not know
        return body.decode("utf-8", errors="replace")


def extract_main_text(
    body: bytes, url: str | None = None, encoding: str | None = None, fast: bool = False
) -> Extracted:
    """Title and main text of an HTML page; the whole visible text when trafilatura finds none.

    After the title come the page's headings (``<h1>``-``<h3>`` outside its navigation)
    that trafilatura left out; after the main text, the readers' comments it found.
    ``fast`` skips trafilatura's comparison with readability and jusText
    (``NEARDUP_EXTRACT_FAST``; ``docs/design.md#extraction`` says what it loses)."""
    import trafilatura
    from trafilatura.settings import Document

    if not body.strip():
        return Extracted("", "empty")
    html = decode(body, encoding)
    if html is None or "<" not in html:  # binary, plain text or JSON: no page to read
        return Extracted("", "empty")
    title, headings, text, comments = "", [], "", ""
    try:
        # Parsed once here: the title is read from the tree, and trafilatura's own metadata
        # pass (dates, authors, JSON-LD: about a third of its time) is skipped.
        tree = _load_html(html)
        if tree is None:  # not HTML: trafilatura's baseline would not parse it either
            return Extracted("", "empty")
        title = _title(tree)
        headings = _headings(tree)
        _paragraph_sections(tree)
        doc = trafilatura.bare_extraction(
            tree,
            url=url,
            include_comments=True,
            with_metadata=False,
            deduplicate=False,
            fast=fast,
        )
        if isinstance(doc, Document):
            text, comments = (doc.text or "").strip(), (doc.comments or "").strip()
    except Exception as exc:  # trafilatura and lxml raise many things on odd markup
        logger.debug("trafilatura failed on %s: %r", url, exc)
    if text:
        shown = " ".join(f"{title}\n{text}\n{comments}".split())
        missing = [h for h in dict.fromkeys(headings) if h not in shown]
        text = "\n".join([*missing, text])
        article = f"{title}\n\n{text}" if title else text
        if not comments:
            return Extracted(article, "trafilatura", title)
        return Extracted(f"{article}\n{comments}", "trafilatura", title, len(article))
    try:
        _, text, _ = trafilatura.baseline(html)
    except Exception as exc:
        logger.debug("trafilatura baseline failed on %s: %r", url, exc)
        text = ""
    text = (text or "").strip()
    return Extracted(text, "fallback", title) if text else Extracted("", "empty", title)


def _headings(tree: Any) -> list[str]:
    """The texts of the page's ``<h1>``-``<h3>`` outside its navigation, in page order."""
    found = tree.xpath(f"//*[self::h1 or self::h2 or self::h3][not({_NAVIGATION})]")
    return [text for text in (" ".join(h.text_content().split()) for h in found) if text]


def _paragraph_sections(tree: Any) -> None:
    """A ``<section>`` that holds only inline content becomes the ``<p>`` it is to a reader
    (trafilatura drops such a section's text; ``docs/design.md#extraction``)."""
    for element in tree.iter("section"):
        if (len(element) or (element.text or "").strip()) and all(
            child.tag in _INLINE_TAGS for child in element
        ):
            element.tag = "p"


def _title(tree: Any) -> str:
    """The page's ``<title>`` as a reader sees it, else its ``og:title``, else trafilatura's
    guess from ``<h1>``, without the site's name (:func:`without_site_name`)."""
    from trafilatura.metadata import extract_title

    title = ""
    for value in [*tree.xpath("//head/title/text()"), *tree.xpath(_OG_TITLE)][:1]:
        title = " ".join(value.split())
    title = title or " ".join((extract_title(tree) or "").split())
    names = tree.xpath('//head/meta[@property="og:site_name"]/@content')
    return without_site_name(title, names[0] if names else "")


def without_site_name(title: str, site_name: str = "") -> str:
    """``title`` without the site's name: the part that is ``site_name``, else a last part of
    at most 4 words after a separator ("Headline | The Daily Post")."""
    parts = _TITLE_PARTS.split(title)
    if len(parts) < 2:
        return title
    name = " ".join(site_name.split()).casefold()
    if name:
        kept = [part for part in parts if part.casefold() != name]
        if len(kept) < len(parts):
            return title if not kept else _joined(title, kept)
    if len(parts[-1].split()) <= 4 and len(parts[-1]) <= 40:
        return _joined(title, parts[:-1])
    return title


def _joined(title: str, parts: list[str]) -> str:
    """The span of ``title`` from its first kept part to its last (separators kept)."""
    start = title.find(parts[0])
    end = title.rfind(parts[-1]) + len(parts[-1])
    return title[start:end].strip()


_parse_lock = threading.Lock()


def _load_html(html: str) -> Any:
    """trafilatura's ``load_html`` without its ERROR for a body it cannot parse as HTML: the
    plugin counts such pages (``neardup/extract/empty``), and inline (``NEARDUP_WORKERS =
    0``) the line would count in Scrapy's ``log_count/ERROR``. The filter is on trafilatura's
    logger during this call only (one thread at a time)."""
    from trafilatura.utils import load_html

    trafilatura_utils = logging.getLogger("trafilatura.utils")
    with _parse_lock:
        trafilatura_utils.addFilter(_parsed)
        try:
            return load_html(html)
        finally:
            trafilatura_utils.removeFilter(_parsed)


def _parsed(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("parsed tree length")
