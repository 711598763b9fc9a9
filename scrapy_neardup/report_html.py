"""``scrapy neardup-stats --html FILE`` and ``--drops FILE``: audit a crawl's drops.

Promises: every drop but exact copies (counted per cluster) is audited by :func:`audit` with
the decision's own lossless rule (:func:`~scrapy_neardup.backends.losses.text_coverage`)
on the kept texts (``NEARDUP_KEEP_TEXT``), and listed riskiest first (by the words it loses,
then its containment): on a page with both texts side by side, or one JSON line a drop. It
never writes a state. Rationale: ``docs/design.md#audit-page``.
"""

from __future__ import annotations

import difflib
import html
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from scrapy_neardup.backends.losses import Coverage, lost_passages, text_coverage
from scrapy_neardup.deduplicator import Member
from scrapy_neardup.report import BESIDE, Crawl, read_drops, summary_of
from scrapy_neardup.text import CJK_CHARS

#: Drops shown with their texts unless ``--max-drops`` says otherwise.
MAX_DROPS = 100
#: Shared runs of fewer words than this inside a changed passage are shown as changed.
MIN_SHARED = 3

# A word, or one character of Han, kana or hangul (as scrapy_neardup.text), with the space
# before it, is a token of the diff; so is the whitespace that ends a text.
_DIFF_TOKEN = re.compile(rf"\s*(?:[{CJK_CHARS}]|[^\s{CJK_CHARS}]+)|\s+$")
# Characters XML does not allow (the page stays well-formed XML): C0 controls but tab, LF
# and CR, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

#: The page around its body; ``$source`` is escaped, ``$body`` is HTML.
_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>scrapy-neardup drops: $source</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 110em;
       padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.4em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; } td, th { padding: .2em .8em; vertical-align: top;
  text-align: left; border-bottom: 1px solid #eee; }
.note { background: #fff8e1; border-left: 4px solid #f0b400; padding: .5em 1em; }
.drop { margin: 1.5em 0; padding-top: .5em; border-top: 2px solid #ddd; }
.drop h3 { font-size: 1em; font-weight: normal; word-break: break-all; }
.lossy { color: #b00020; font-weight: bold; }
.lost li { color: #b00020; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 32em; overflow: auto;
  border: 1px solid #ddd; padding: .5em; font-size: .92em; background: #fcfcfc; }
.missing { color: #777; font-style: italic; }
mark { background: #e3efe3; }
del { background: #ffd7d5; text-decoration: line-through #b00020; }
ins { background: #cfe8ff; text-decoration: none; }
ul { margin: 0; padding-left: 1.2em; }
</style></head><body>
<h1>scrapy-neardup: what was dropped, and for what ($source)</h1>
$body
<footer><p><mark>shared</mark> passage in both texts; <del>only in the kept text</del>;
<ins>only in the dropped text</ins>. Lost: a line, a run of words, or a title word, identifier
or number of the dropped text that the kept text lacks; a drop under the default decision loses
none. Containment: share of its words in a 3-shingle of the kept text.</p></footer></body></html>
""")
_NO_TEXTS = """<p class="note" id="no-texts">No texts were kept for this crawl, so the drops
below show their similarity but not their texts or what they lost. To see each dropped text
beside the kept one, crawl with <code>NEARDUP_KEEP_TEXT = 20000</code> (characters kept per
document) and a <code>JOBDIR</code> or Redis state.</p>"""
#: The sections of kept pages beside a kept one (:data:`~scrapy_neardup.report.BESIDE`).
_BESIDE_SECTIONS = {
    "related": (
        "Kept beside a page they hold",
        "Each of these holds nearly all of an earlier kept page and substantially more, so "
        "it was kept, not dropped. Containment: share of the earlier page's word 3-shingles "
        "in it.",
    ),
    "near": (
        "Kept, near a kept page",
        "The decision not configured (<code>NEARDUP_DECISION</code>) would have dropped "
        "each of these for the page beside it; they were kept. Similarity: the word-shingle "
        "Jaccard of the pair (simhash: 1 - distance / 64; cosine: the cosine), or under the "
        "similar decision, that rule's measure of a page contained in the other.",
    ),
}


def esc(text: str) -> str:
    """Text as HTML (and XML) character data or attribute value."""
    return html.escape(_NOT_XML.sub("\ufffd", text), quote=True)


def _link(key: str) -> str:
    """A document's key as a link to it when it is a web URL (never another scheme)."""
    if key.startswith(("http://", "https://")):
        return f'<a href="{esc(key)}">{esc(key)}</a>'
    return esc(key)


@dataclass(frozen=True)
class Audit:
    """One drop as audited: ``found`` (None where a text was not kept), the words of the
    dropped text the kept one lacks (None: not known) and the passages they are in."""

    member: Member
    found: Coverage | None = None
    lost_words: int | None = None
    lost: tuple[str, ...] = ()

    @classmethod
    def of(cls, member: Member, texts: dict[str, str]) -> Audit:
        """``member`` audited from the kept ``texts``."""
        dropped, kept = texts.get(member.key), texts.get(member.head)
        found = None if dropped is None or kept is None else text_coverage(dropped, kept)
        if found is None or dropped is None:
            return cls(member)
        lost = len(found.loss.positions()) if found.loss else 0
        return cls(member, found, lost, tuple(lost_passages(dropped, found)))

    def risk(self) -> tuple[float, float, str]:
        """Sort key: what it loses first (unknown after known losses), then containment."""
        lost = self.lost_words
        words = self.found.words if self.found is not None else 1.0
        return (-(lost if lost is not None else 0.5), words, self.member.key)

    def record(self) -> dict[str, Any]:
        """The ``--drops`` JSON line (an exact copy loses nothing)."""
        found = self.found
        record = {
            "dropped": self.member.key,
            "kept": self.member.head,
            "method": self.member.method,
            "similarity": round(self.member.similarity, 4),
            "containment": None if found is None else round(found.words, 4),
            "lost_words": self.lost_words,
            "lost": None if found is None else list(self.lost),
        }
        if self.member.method == "exact":
            record.update(containment=1.0, lost_words=0, lost=[])
        return record


def audit(members: Iterable[Member], texts: dict[str, str]) -> tuple[list[Audit], dict[str, int]]:
    """Every drop but exact copies audited from the kept ``texts`` (those
    :func:`~scrapy_neardup.report.read_drops` reads), riskiest first; and exact copies
    counted by cluster head."""
    drops = {m.key: m for m in members}.values()
    audits = sorted((Audit.of(m, texts) for m in drops if m.method != "exact"), key=Audit.risk)
    return audits, dict(Counter(m.head for m in drops if m.method == "exact"))


def write_drops(path: str | Path, audits: Iterable[Audit], exact: Iterable[Member]) -> int:
    """One JSON line a drop (``--drops FILE``), riskiest first, exact copies last; returns
    how many."""
    records = [a.record() for a in [*audits, *(Audit(m) for m in exact)]]
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    return len(records)


def _key(token: str) -> str:
    return unicodedata.normalize("NFKC", token.strip()).casefold()


def marked(kept: str, dropped: str) -> tuple[str, str]:
    """Both texts as HTML: shared passages in ``<mark>``, the kept text's own in ``<del>``,
    the dropped text's own in ``<ins>``."""
    a, b = _DIFF_TOKEN.findall(kept), _DIFF_TOKEN.findall(dropped)
    matcher = difflib.SequenceMatcher(None, [_key(t) for t in a], [_key(t) for t in b])
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in _merge_short(matcher.get_opcodes()):
        shared, own = ("mark", "mark") if tag == "equal" else ("del", "ins")
        if i2 > i1:
            left.append(f"<{shared}>{esc(''.join(a[i1:i2]))}</{shared}>")
        if j2 > j1:
            right.append(f"<{own}>{esc(''.join(b[j1:j2]))}</{own}>")
    return "".join(left), "".join(right)


def _merge_short(opcodes: Sequence[tuple[str, int, int, int, int]]) -> list[list[Any]]:
    """Opcodes with shared runs shorter than MIN_SHARED words between two changes joined
    into one change: a lone common word is not a shared passage."""
    out: list[list[Any]] = []
    for n, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal" and 0 < n < len(opcodes) - 1 and i2 - i1 < MIN_SHARED:
            tag = "replace"
        if out and tag != "equal" and out[-1][0] != "equal":
            out[-1][0], out[-1][2], out[-1][4] = "replace", i2, j2
        else:
            out.append([tag, i1, i2, j1, j2])
    return out


def page(crawl: Crawl, max_drops: int = MAX_DROPS) -> tuple[str, dict[str, int]]:
    """The ``--html`` page of a crawl, and what it shows (``drops``, ``shown``, ``texts``,
    ``lossy``)."""
    members, texts, texts_kept = read_drops(crawl)
    audits, exact = audit(members, texts)
    summary = summary_of(crawl)
    drops = audits[:max_drops]
    anchor = {a.member.key: f"drop-{n}" for n, a in enumerate(drops, 1)}
    counts = {
        "drops": len(audits) + sum(exact.values()),
        "shown": len(drops),
        "texts": sum(1 for a in drops if a.found is not None),
        "lossy": sum(1 for a in audits if a.lost_words),
    }
    body = [_figures(summary, counts, sum(exact.values()))]
    if not texts_kept:
        body.append(_NO_TEXTS)
    if len(drops) < len(audits):
        body.append(
            f'<p class="note">The {len(drops)} riskiest of {len(audits)} drops are shown '
            "(<code>--max-drops</code> shows more, <code>--drops FILE</code> lists all).</p>"
        )
    body += [_clusters(audits, exact, anchor), "<h2>Drops, riskiest first</h2>"]
    if not drops:
        body.append("<p>Nothing was dropped but exact copies.</p>")
    body += [_drop(a, anchor[a.member.key], texts) for a in drops]
    body += [_beside(summary["content"], kind) for kind in BESIDE]
    source = summary.get("redis") or summary.get("state_dir") or "?"
    return _PAGE.substitute(source=esc(source), body="\n".join(body)), counts


def _beside(content: dict[str, Any], kind: str) -> str:
    """The section of ``content[kind]``, kept pages beside a kept one; "" for none."""
    if not content.get(kind):
        return ""
    (title, intro), (other, measure) = _BESIDE_SECTIONS[kind], BESIDE[kind]
    rows = "".join(
        f"<tr><td>{_link(r['item'])}</td><td>{_link(r[other])}</td><td>{r[measure]:.3f}</td></tr>"
        for r in content[kind]
    )
    return (
        f'<h2 id="{kind}">{title} ({content[f"{kind}_count"]})</h2><p>{intro}</p><table><tr>'
        f"<th>kept</th><th>{other}</th><th>{measure}</th></tr>{rows}</table>"
    )


def _figures(summary: dict[str, Any], counts: dict[str, int], exact: int) -> str:
    u, c = summary["urls"], summary["content"]
    rows = [
        ("URLs seen", u["seen"]),
        ("method", f"{c['method'] or 'no documents yet'} {c.get('params') or ''}".strip()),
        ("documents kept (indexed)", c["documents_indexed"]),
        ("duplicates", counts["drops"]),
        *((f"  by {method}", n) for method, n in sorted(c["duplicates_by_method"].items())),
        ("exact copies (counted by cluster)", exact),
        ("drops that lose text", counts["lossy"]),
        ("clusters with a duplicate", c["clusters"]),
        ("drops shown", counts["shown"]),
    ]
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in rows)
    return f'<table class="figures">{body}</table>'


def _clusters(audits: list[Audit], exact: dict[str, int], anchor: dict[str, str]) -> str:
    """Each kept page with what was dropped for it: its exact copies counted, the other
    drops listed (the shown ones linked), largest clusters first."""
    listed: dict[str, list[Audit]] = {head: [] for head in exact}
    for a in audits:
        listed.setdefault(a.member.head, []).append(a)
    rows = []
    for head in sorted(listed, key=lambda h: (-len(listed[h]) - exact.get(h, 0), h)):
        items = "".join(
            f"<li>{_anchored(a.member.key, anchor)} ({esc(a.member.method)}, "
            f"{a.member.similarity:.3f}{_lost_note(a)})</li>"
            for a in listed[head]
        )
        if exact.get(head):
            items += f"<li>{exact[head]} exact copies</li>"
        drops = len(listed[head]) + exact.get(head, 0)
        rows.append(f"<tr><td>{_link(head)}</td><td>{drops}</td><td><ul>{items}</ul></td></tr>")
    return (
        '<h2>Clusters</h2><table class="clusters"><tr><th>kept (cluster head)</th>'
        "<th>drops</th><th>dropped for it</th></tr>" + "".join(rows) + "</table>"
    )


def _anchored(key: str, anchor: dict[str, str]) -> str:
    return f'<a href="#{anchor[key]}">{esc(key)}</a>' if key in anchor else esc(key)


def _lost_note(a: Audit) -> str:
    return f', <b class="lossy">{a.lost_words} words lost</b>' if a.lost_words else ""


def _drop(a: Audit, anchor: str, texts: dict[str, str]) -> str:
    """The section of one drop: its figures, what it lost, both texts side by side."""
    member, found = a.member, a.found
    figures = [f"method <b>{esc(member.method)}</b>", f"similarity <b>{member.similarity:.3f}</b>"]
    lost = ""
    if found is not None:
        figures.append(f"containment <b>{found.words:.3f}</b>")
        if a.lost_words:
            figures.append(f'<b class="lossy">lost: {a.lost_words} words</b>')
            items = "".join(f"<li>{esc(passage)}</li>" for passage in a.lost)
            lost = f'<ul class="lost">{items}</ul>'
        else:
            figures.append('<b class="contained">nothing lost</b>')
    kept, dropped = texts.get(member.head), texts.get(member.key)
    if kept is not None and dropped is not None:
        left, right = marked(kept, dropped)
    else:
        missing = '<span class="missing">text not kept</span>'
        left, right = (missing if t is None else esc(t) for t in (kept, dropped))
    return (
        f'<section class="drop" id="{anchor}"><h3>dropped {_link(member.key)}<br/>'
        f"for kept {_link(member.head)}</h3><p>{' · '.join(figures)}</p>{lost}"
        '<div class="pair"><div><h4>kept</h4>'
        f'<div class="text kept">{left}</div></div><div><h4>dropped</h4>'
        f'<div class="text dropped">{right}</div></div></div></section>'
    )


def drops(crawl: Crawl, out: str | Path) -> int:
    """``--drops FILE`` for a crawl: how many drops were written."""
    members, texts, _ = read_drops(crawl)
    audits, _ = audit(members, texts)
    return write_drops(out, audits, (m for m in members if m.method == "exact"))
