"""``scrapy neardup-stats --html FILE``: one self-contained page to audit a crawl's drops.

Promises: the summary figures, the clusters, and for each drop the two kept texts side by side
(shared passages in ``<mark>``, what only one holds in ``<del>``/``<ins>``) with the backend,
its similarity, and the exact containment of
:func:`~scrapy_neardup.backends.containment.text_coverage`, flagged by the same
:func:`~scrapy_neardup.backends.containment.lossy` line as the evaluation. It reads a state,
never writes one, and needs the kept texts (``NEARDUP_KEEP_TEXT``) for the side-by-side view.
Rationale: ``docs/design.md#audit-page``.
"""

from __future__ import annotations

import difflib
import html
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scrapy_neardup.backends.containment import LOSSY_BELOW, Coverage, lossy, text_coverage
from scrapy_neardup.state_format import Member
from scrapy_neardup.storage.texts import TEXTS_FILE, read_texts, redis_key, redis_texts
from scrapy_neardup.text import CJK_CHARS

#: Drops shown with their texts unless ``--max-drops`` says otherwise.
MAX_DROPS = 100
#: Shared runs of fewer words than this inside a changed passage are shown as changed.
MIN_SHARED = 3

# Han, kana and hangul (as scrapy_neardup.text): one character is one token in the diff.
_DIFF_TOKEN = re.compile(rf"\s*(?:[{CJK_CHARS}]|[^\s{CJK_CHARS}]+)")
# Characters XML does not allow (the page stays well-formed XML): C0 controls but tab, LF
# and CR, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 110em;
       padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.4em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; } td, th { padding: .2em .8em; vertical-align: top;
  text-align: left; border-bottom: 1px solid #eee; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .5em 1em; }
.drop { margin: 1.5em 0; padding-top: .5em; border-top: 2px solid #ddd; }
.drop h3 { font-size: 1em; font-weight: normal; word-break: break-all; }
.lossy { color: #b00020; font-weight: bold; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 32em; overflow: auto;
  border: 1px solid #ddd; padding: .5em; font-size: .92em; background: #fcfcfc; }
.missing { color: #777; font-style: italic; }
mark { background: #e3efe3; }
del { background: #ffd7d5; text-decoration: line-through #b00020; }
ins { background: #cfe8ff; text-decoration: none; }
ul { margin: 0; padding-left: 1.2em; }
"""


def esc(text: str) -> str:
    """Text as HTML (and XML) character data or attribute value."""
    return html.escape(_NOT_XML.sub("\ufffd", text), quote=True)


def _link(key: str) -> str:
    """A document's key as a link to it when it is a web URL (never another scheme)."""
    if key.startswith(("http://", "https://")):
        return f'<a href="{esc(key)}">{esc(key)}</a>'
    return esc(key)


def containment(dropped: str, kept: str) -> float | None:
    """Share of ``dropped``'s word 3-shingles within its lines found in ``kept`` (None: no
    words): :func:`~scrapy_neardup.backends.containment.text_coverage`'s ``shingles``."""
    found = text_coverage(dropped, kept)
    return None if found is None else found.shingles


def _diff_tokens(text: str) -> list[str]:
    tokens = _DIFF_TOKEN.findall(text)
    tail = text[sum(map(len, tokens)) :]
    if tail:
        tokens.append(tail)  # trailing whitespace
    return tokens


def _key(token: str) -> str:
    return unicodedata.normalize("NFKC", token.strip()).casefold()


def marked(kept: str, dropped: str) -> tuple[str, str]:
    """Both texts as HTML: shared passages in ``<mark>``, the kept text's own in ``<del>``,
    the dropped text's own in ``<ins>``."""
    a, b = _diff_tokens(kept), _diff_tokens(dropped)
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in a], [_key(t) for t in b])
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in _merge_short(matcher.get_opcodes()):
        if tag == "equal":
            left.append(f"<mark>{esc(''.join(a[i1:i2]))}</mark>")
            right.append(f"<mark>{esc(''.join(b[j1:j2]))}</mark>")
            continue
        if i2 > i1:
            left.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            right.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>")
    return "".join(left), "".join(right)


def _merge_short(
    opcodes: Iterable[tuple[str, int, int, int, int]],
) -> list[tuple[str, int, int, int, int]]:
    """Opcodes with shared runs shorter than MIN_SHARED words between two changes joined
    into one change: a lone common word is not a shared passage."""
    ops = list(opcodes)
    out: list[list[Any]] = []
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        between = 0 < n < len(ops) - 1
        if tag == "equal" and between and i2 - i1 < MIN_SHARED:
            tag = "replace"
        if out and tag != "equal" and out[-1][0] != "equal":
            out[-1][0], out[-1][2], out[-1][4] = "replace", i2, j2
        else:
            out.append([tag, i1, i2, j1, j2])
    return [(t, i1, i2, j1, j2) for t, i1, i2, j1, j2 in out]


def ordered_drops(members: Iterable[Member]) -> list[tuple[str, list[Member]]]:
    """Clusters, largest first (then by head), each with its drops in the order given."""
    by_head: dict[str, list[Member]] = {}
    for m in members:
        by_head.setdefault(m.head, []).append(m)
    return sorted(by_head.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def shown(clusters: list[tuple[str, list[Member]]], max_drops: int) -> list[Member]:
    """The first ``max_drops`` drops, cluster by cluster."""
    return [m for _, ms in clusters for m in ms][:max_drops]


def render_page(
    summary: dict[str, Any],
    members: Iterable[Member],
    texts: dict[str, str],
    *,
    texts_kept: bool,
    max_drops: int = MAX_DROPS,
) -> str:
    """The page (a string of HTML), from ``summary`` (:func:`scrapy_neardup.report.summarize`
    or ``summarize_redis``), every drop, and the kept texts of the drops shown and their
    originals."""
    clusters = ordered_drops(members)
    drops = shown(clusters, max_drops)
    anchor = {m.key: f"drop-{n}" for n, m in enumerate(drops, 1)}
    total = sum(len(ms) for _, ms in clusters)
    source = summary.get("redis") or summary.get("state_dir") or "?"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"/>',
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
        f"<title>scrapy-neardup drops: {esc(source)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>scrapy-neardup: what was dropped, and for what ({esc(source)})</h1>",
        _figures(summary, total, len(drops), sum(1 for k in anchor if k in texts)),
    ]
    if not texts_kept:
        out.append(
            '<p class="note" id="no-texts">No texts were kept for this crawl, so the drops '
            "below show their similarity but not their texts. To see each dropped text beside "
            "the kept one, crawl with <code>NEARDUP_KEEP_TEXT = 20000</code> (characters kept "
            "per document) and a <code>JOBDIR</code> or Redis state.</p>"
        )
    if len(drops) < total:
        out.append(
            f'<p class="note">{len(drops)} of {total} drops are shown with their texts '
            "(<code>--max-drops</code> shows more).</p>"
        )
    out.append(_clusters(clusters, anchor))
    out.append("<h2>Drops</h2>")
    if not drops:
        out.append("<p>Nothing was dropped.</p>")
    for m in drops:
        out.append(_drop(m, anchor[m.key], texts.get(m.head), texts.get(m.key)))
    out.append(_related(summary["content"]))
    out.append(_near(summary["content"]))
    out.append(
        "<footer><p><mark>shared</mark> passage in both texts; <del>only in the kept text</del>"
        "; <ins>only in the dropped text</ins>. Containment: share of the dropped text's word "
        "3-shingles (within its lines) found in the kept text; below "
        f"{LOSSY_BELOW} the drop lost text that nothing kept holds. Covered words: share of "
        "its words in a 3-shingle of the kept text.</p></footer></body></html>"
    )
    return "\n".join(out) + "\n"


def _related(content: dict[str, Any]) -> str:
    """Kept pages that hold a kept one and more: never dropped for it, listed beside it."""
    related = content.get("related") or []
    if not related:
        return ""
    rows = "".join(
        f"<tr><td>{_link(r['item'])}</td><td>{_link(r['holds'])}</td>"
        f"<td>{r['containment']:.3f}</td></tr>"
        for r in related
    )
    count = content.get("related_count", len(related))
    return (
        f'<h2 id="related">Kept beside a page they hold ({count})</h2>'
        "<p>Each of these holds nearly all of an earlier kept page and substantially more, so "
        "it was kept, not dropped. Containment: share of the earlier page's word 3-shingles "
        "in it.</p><table><tr><th>kept</th><th>holds</th><th>containment</th></tr>"
        f"{rows}</table>"
    )


def _near(content: dict[str, Any]) -> str:
    """Kept pages near a kept one by the decision not configured: listed, never hidden."""
    near = content.get("near") or []
    if not near:
        return ""
    rows = "".join(
        f"<tr><td>{_link(r['item'])}</td><td>{_link(r['near'])}</td>"
        f"<td>{r['similarity']:.3f}</td></tr>"
        for r in near
    )
    count = content.get("near_count", len(near))
    return (
        f'<h2 id="near">Kept, near a kept page ({count})</h2>'
        "<p>The decision not configured (<code>NEARDUP_DECISION</code>) would have dropped "
        "each of these for the page beside it; they were kept. Similarity: the word-shingle "
        "Jaccard of the pair (simhash: 1 - distance / 64; cosine: the cosine), or under the "
        "similar decision, that rule's measure of a page contained in the other.</p>"
        f"<table><tr><th>kept</th><th>near</th><th>similarity</th></tr>{rows}</table>"
    )


def _figures(summary: dict[str, Any], total: int, drops: int, with_text: int) -> str:
    u, c = summary["urls"], summary["content"]
    rows = [
        ("URLs seen", u["seen"]),
        ("method", f"{c['method'] or 'no documents yet'} {c.get('params') or ''}".strip()),
        ("documents kept (indexed)", c["documents_indexed"]),
        ("duplicates", total),
        *((f"  by {method}", n) for method, n in sorted(c["duplicates_by_method"].items())),
        ("clusters with a duplicate", c["clusters"]),
        ("drops shown", drops),
        ("drops shown with their text", with_text),
    ]
    body = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="figures">{body}</table>'


def _clusters(clusters: list[tuple[str, list[Member]]], anchor: dict[str, str]) -> str:
    rows = []
    for head, ms in clusters:
        listed = [m for m in ms if m.key in anchor]
        if not listed:
            break
        items = "".join(
            f'<li><a href="#{anchor[m.key]}">{esc(m.key)}</a> '
            f"({esc(m.method)}, {m.similarity:.3f})</li>"
            for m in listed
        )
        more = len(ms) - len(listed)
        if more:
            items += f"<li>... and {more} more</li>"
        rows.append(f"<tr><td>{_link(head)}</td><td>{len(ms)}</td><td><ul>{items}</ul></td></tr>")
    return (
        '<h2>Clusters</h2><table class="clusters"><tr><th>kept (cluster head)</th>'
        "<th>drops</th><th>dropped for it</th></tr>" + "".join(rows) + "</table>"
    )


def _drop(member: Member, anchor: str, kept: str | None, dropped: str | None) -> str:
    figures = [f"method <b>{esc(member.method)}</b>", f"similarity <b>{member.similarity:.3f}</b>"]
    if kept is not None and dropped is not None:
        found: Coverage | None = text_coverage(dropped, kept)
        if found is not None:
            lost = lossy(found)
            figures.append(
                f'containment <b class="{"lossy" if lost else "contained"}">'
                f"{found.shingles:.3f}</b>"
                + (" (lossy: the dropped text is mostly not in the kept one)" if lost else "")
            )
            figures.append(f"covered words <b>{found.words:.3f}</b>")
        left, right = marked(kept, dropped)
    else:
        left = esc(kept) if kept is not None else '<span class="missing">text not kept</span>'
        right = (
            esc(dropped) if dropped is not None else '<span class="missing">text not kept</span>'
        )
    return (
        f'<section class="drop" id="{anchor}"><h3>dropped {_link(member.key)}<br/>'
        f"for kept {_link(member.head)}</h3><p>{' · '.join(figures)}</p>"
        '<div class="pair"><div><h4>kept</h4>'
        f'<div class="text kept">{left}</div></div><div><h4>dropped</h4>'
        f'<div class="text dropped">{right}</div></div></div></section>'
    )


# -- sources ---------------------------------------------------------------------------------


def page_for_dir(directory: Path, max_drops: int = MAX_DROPS) -> tuple[str, dict[str, int]]:
    """The page for a state directory, and what it shows (``drops``, ``shown``, ``texts``)."""
    from scrapy_neardup.report import read_content, summarize

    summary = summarize(directory)
    _, _, members, _, _ = read_content(directory)
    drops = shown(ordered_drops(members.values()), max_drops)
    path = directory / TEXTS_FILE
    texts = read_texts(path, _wanted(drops))
    page = render_page(
        summary, members.values(), texts, texts_kept=path.exists(), max_drops=max_drops
    )
    return page, _counts(members.values(), drops, texts)


def page_for_redis(url: str, prefix: str, max_drops: int = MAX_DROPS) -> tuple[str, dict[str, int]]:
    """The page for a crawl whose state is in Redis under ``{prefix}:neardup:``."""
    from scrapy_neardup.exceptions import StorageError
    from scrapy_neardup.report import summarize_redis
    from scrapy_neardup.storage import redis_client, redis_index

    summary = summarize_redis(url, prefix)
    client = redis_client.connect(url, retries=1)
    try:
        members = sorted(
            (Member(*fields) for fields in redis_index.members(client, prefix)),
            key=lambda m: m.key,
        )
        drops = shown(ordered_drops(members), max_drops)
        texts = redis_texts(client, prefix, _wanted(drops))
        texts_kept = bool(client.exists(redis_key(prefix)))
    except redis_client.REDIS_ERRORS as exc:
        raise StorageError(f"cannot read {url}: {exc}") from None
    finally:
        client.close()
    page = render_page(summary, members, texts, texts_kept=texts_kept, max_drops=max_drops)
    return page, _counts(members, drops, texts)


def _wanted(drops: list[Member]) -> set[str]:
    return {m.key for m in drops} | {m.head for m in drops}


def _counts(
    members: Iterable[Member], drops: list[Member], texts: dict[str, str]
) -> dict[str, int]:
    return {
        "drops": sum(1 for _ in members),
        "shown": len(drops),
        "texts": sum(1 for m in drops if m.key in texts and m.head in texts),
    }
