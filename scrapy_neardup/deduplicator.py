"""The near-duplicate engine: :class:`Deduplicator`, its :class:`Index` and :class:`Verdict`.

Promises: exact hash first, then the configured backend; every candidate is verified exactly
(:mod:`scrapy_neardup.backends.containment`), so no estimate drops a document. Every kept
document heads a cluster, every duplicate joins the cluster of the earlier document that
holds it; only heads are indexed. A saved state (:mod:`scrapy_neardup.state_format`) loads
only into a deduplicator configured as it was. It knows nothing of Scrapy, and of storage
only the store factory it is given. Rationale: ``docs/design.md#engine``.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from scrapy_neardup.backends import DEFAULT_BACKEND, Backend, Match, make_backend
from scrapy_neardup.backends.base import BucketStore, Verifier
from scrapy_neardup.backends.containment import (
    BOILERPLATE_SHARE,
    SiteLines,
    Verified,
    candidate_params,
    coverage,
    holds,
)
from scrapy_neardup.backends.exact import ExactBackend
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.settings import DECISION_SETTINGS, default
from scrapy_neardup.state_format import (
    Member,
    iter_state,
    write_header,
    write_members,
    write_signatures,
)
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document

#: Texts with fewer tokens are matched exactly only (``NEARDUP_MIN_TOKENS``).
DEFAULT_MIN_TOKENS: int = default("NEARDUP_MIN_TOKENS")


class Index:
    """One backend over one store: query, add, or both at once (atomically, in the store).

    A backend with a ``check`` (:class:`~scrapy_neardup.backends.containment.Verified`)
    tells copies from related documents; :meth:`search` returns both.
    """

    def __init__(self, method: Backend, store: BucketStore) -> None:
        self.method = method
        self.store = store
        self._probe_count = getattr(method, "probe_count", None)
        self._check = getattr(method, "check", None)
        self._posted = getattr(method, "posted", None)  # told what a kept document posted
        self._excerpt_keys = getattr(method, "excerpt_keys", None)

    def _verifier(
        self,
        signature: Any,
        related: list[Match],
        found: dict[str, float],
        near: list[Match] | None = None,
    ) -> Callable[[str, Any], float | None]:
        """The store's verifier: the similarity of a copy, else None; related candidates are
        put in ``related``, near ones (the decision not configured would drop them) in
        ``near``, and each copy's containment in ``found`` on the way."""
        if self._check is None:
            similarity = self.method.similarity
            return lambda key, other: similarity(signature, other)
        check, name = self._check, self.method.name

        def verify(key: str, other: Any) -> float | None:
            result = check(signature, other)
            if result is None:
                return None
            if result.related:
                related.append(Match(key, result.similarity, name, result.reverse))
                return None
            if not result.duplicate:
                if near is not None and result.near:
                    near.append(Match(key, result.measure, name, result.coverage))
                return None
            found[key] = result.coverage
            return result.similarity

        return verify

    def _probe(self, signature: Any) -> dict[str, int]:
        """``probe=`` for the store, only for backends that have it (see backends.base)."""
        return {} if self._probe_count is None else {"probe": self._probe_count(signature)}

    def search(
        self, key: str, signature: Any, add: bool, near: list[Match] | None = None
    ) -> tuple[list[Match], list[Match]]:
        """(copies, related) of ``signature`` among earlier documents; with ``add``, it is
        added as ``key`` when it copies none of them. Near ones go to ``near`` if given."""
        related: list[Match] = []
        contained: dict[str, float] = {}
        verify = self._verifier(signature, related, contained, near)
        buckets = self.method.bucket_keys(signature)
        first, verify = self._excerpts_first(signature, verify)
        if add and not first:
            found = self.store.query_and_add(
                key, signature, buckets, verify, **self._probe(signature)
            )
            if not found and self._posted is not None:
                self._posted(signature)
        else:
            found = self.store.query(signature, buckets, verify, **self._probe(signature))
        found = first + found
        name = self.method.name
        return [Match(k, sim, name, contained.get(k, 1.0)) for k, sim in found], related

    def _excerpts_first(self, signature: Any, verify: Verifier) -> tuple[list, Verifier]:
        """A store told to ``probe`` the least filled buckets only (SpotSigs) may leave out
        the excerpt keys (backends/excerpts.py), whose promise needs every one of them: they
        are queried first, all of them. Returns what they found and the verifier for all the
        buckets then, which skips the candidates already verified (what they found is a copy:
        the document is not added)."""
        keys = self._excerpt_keys(signature) if self._excerpt_keys and self._probe_count else []
        if not keys:
            return [], verify
        checked: set[str] = set()

        def once(key: str, other: Any) -> float | None:
            checked.add(key)
            return verify(key, other)

        found = self.store.query(signature, keys, once)
        return found, lambda key, other: None if key in checked else verify(key, other)

    def query(self, signature: Any) -> list[Match]:
        return self.search("", signature, add=False)[0]

    def query_and_add(self, key: str, doc: Document | str) -> list[Match]:
        """Earlier documents matching ``doc``; when there are none, ``doc`` is added as ``key``."""
        if isinstance(doc, str):
            doc = Document(doc)
        return self.query_and_add_signature(key, self.method.signature(doc))

    def query_and_add_signature(self, key: str, signature: Any) -> list[Match]:
        return self.search(key, signature, add=True)[0]

    def add(self, key: str, signature: Any) -> None:
        self.store.add(key, signature, self.method.bucket_keys(signature))
        if self._posted is not None:
            self._posted(signature)

    def __len__(self) -> int:
        return len(self.store)


@dataclass(frozen=True)
class Verdict:
    """What the engine decided about one document."""

    key: str
    duplicate_of: str | None = None
    method: str | None = None
    similarity: float = 0.0
    short: bool = False
    #: For a duplicate, the share of its words that lie in 3-shingles of ``duplicate_of``; for
    #: a related document, the share of ``related_to``'s 3-shingles that it holds.
    containment: float = 0.0
    #: A kept document that this one holds, and substantially more (kept, recorded beside it).
    related_to: str | None = None
    #: Kept, matched exactly only: nearly all its words are lines its site repeats.
    boilerplate: bool = False
    #: A kept document that the decision not configured would have dropped this one for
    #: (kept, recorded beside it); ``similarity`` is then that rule's measure.
    near_to: str | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None


@dataclass(frozen=True)
class Signed:
    """A document's signatures; ``near`` is None for short documents (exact matching only)."""

    exact: Any
    near: Any
    tokens: int
    #: Nearly all boilerplate of its site (``near`` is then None: exact matching only).
    boilerplate: bool = False


class Recorder(Protocol):
    """Told of every decision, e.g. to journal it (see :mod:`scrapy_neardup.storage.journal`)."""

    def head(self, key: str, signed: Signed) -> None: ...

    def member(self, member: Member) -> None: ...

    def related(self, member: Member) -> None: ...

    # Optional: ``near(member)``, told of a kept document near a kept one (Verdict.near_to).


def best_match(matches: Iterable[Match]) -> Match:
    """The one holding most of the document, then the most similar; among equals the first
    found (the earlier document)."""
    return max(matches, key=lambda m: (m.containment, m.similarity))


#: A store for an index: its name ("exact" or the backend's) and the codec of its signatures
#: (the backend whose ``encode``/``decode`` a store that serialises must use).
StoreFactory = Callable[[str, Backend], BucketStore]


def memory_stores(_name: str, codec: Backend) -> BucketStore:
    return MemoryBucketStore(codec=codec)


class Deduplicator:
    """Decides, document by document, what is new and what repeats something seen before.

    Documents with fewer than ``min_tokens`` tokens are matched exactly only (and counted as
    ``short``): SimHash and MinHash estimates are unreliable on a handful of words. The
    backend's candidates are verified (:class:`~scrapy_neardup.backends.containment.Verified`):
    ``decision`` says which rule drops, ``"contained"`` (``contained_words``,
    ``contained_shingles``) or ``"similar"`` (``similarity``, ``similar_shingles``; with a
    backend named by a string, its candidate threshold and shingles default to the ones that
    propose what the rule accepts); ``related`` is the share of a kept document's
    3-shingles a later one must hold to be recorded as related. ``containment`` (a dict of
    Verified's keyword arguments) is the older spelling of the same. A page whose words are
    at least ``boilerplate_share`` lines its site repeats (:meth:`without_boilerplate`) has
    no text of its own to compare: it is matched exactly only, and counted.

    Args:
        method: the backend: a name in :data:`~scrapy_neardup.backends.BACKENDS` or an
            instance (the keyword keeps the saved state's name for it).
        min_tokens: shorter documents are matched exactly only.
        stores: the store factory of the indexes (memory by default).
        decision: ``"contained"`` or ``"similar"``; the thresholds after it tune that rule.
        **params: options of the backend named by ``method``.

    Returns:
        :meth:`check` returns a :class:`Verdict`: ``duplicate_of`` names the kept document a
        duplicate repeats, ``related_to``/``near_to`` a kept one beside it.

    Example:
        >>> dedup = Deduplicator("minhash", min_tokens=0)
        >>> dedup.check("a", "the quick brown fox jumps over the lazy dog").is_duplicate
        False
        >>> dedup.check("b", "the quick brown fox jumps over the lazy dog").duplicate_of
        'a'
    """

    def __init__(
        self,
        method: str | Backend = DEFAULT_BACKEND,
        *,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        stores: StoreFactory = memory_stores,
        decision: str = "contained",
        contained_words: float | None = None,
        contained_shingles: float | None = None,
        related: float | None = None,
        similarity: float | None = None,
        similar_shingles: int | None = None,
        boilerplate_share: float = BOILERPLATE_SHARE,
        containment: dict[str, Any] | None = None,
        **params: Any,
    ) -> None:
        if min_tokens < 0:
            raise ValueError(f"min_tokens must be >= 0, got {min_tokens}")
        if isinstance(boilerplate_share, bool) or not 0.0 < boilerplate_share <= 1.0:
            raise ValueError(f"boilerplate_share must be in (0, 1], got {boilerplate_share}")
        self.boilerplate_share = float(boilerplate_share)
        verify: dict[str, Any] = dict(containment or {})
        verify["decision"] = verify.get("decision", decision)
        for name, value in (
            ("coverage", contained_words),
            ("shingles", contained_shingles),
            ("related", related),
            ("similarity", similarity),
            ("similar_shingles", similar_shingles),
        ):
            if value is not None:
                verify[name] = value
        if isinstance(method, str):
            defaults = candidate_params(method, verify["decision"], verify.get("similar_shingles"))
            params = {**defaults, **params}
        self.method = make_backend(method, **params) if isinstance(method, str) else method
        self.min_tokens = min_tokens
        exact = ExactBackend()
        self.exact = Index(exact, stores("exact", exact))
        self.near = None
        if self.method.name != "exact":
            verified = Verified(self.method, **verify)
            self.near = Index(verified, stores(self.method.name, verified))
        self.members: dict[str, Member] = {}
        self.related: dict[str, Member] = {}
        #: Kept documents near a kept one (:attr:`Verdict.near_to`), by key.
        self.near_members: dict[str, Member] = {}
        self.site_lines = SiteLines()
        self.counts: Counter[str] = Counter()
        self.recorder: Recorder | None = None

    def sign(self, text: str | Document) -> Signed:
        """Signatures of a text: the costly, pure half of :meth:`check` (safe in a worker)."""
        doc = text if isinstance(text, Document) else Document(text)
        exact = self.exact.method.signature(doc)
        reads_tokens = self.near is not None and getattr(self.near.method, "reads_tokens", False)
        count = len(doc.tokens) if reads_tokens else doc.token_count
        if self.near is None or count < self.min_tokens:
            return Signed(exact, None, count)
        return Signed(exact, self.near.method.signature(doc), count)

    def without_boilerplate(self, site: str, signed: Signed) -> Signed:
        """``signed`` with the lines its site repeats on many kept pages left out of its
        covered words (:class:`~scrapy_neardup.backends.containment.SiteLines`), for
        :meth:`check_signed`; then :meth:`learn_boilerplate` with the verdict."""
        if signed.near is None or self.near is None:
            return signed
        phrases = self.site_lines.mark(site, signed.near[1])
        if phrases is signed.near[1]:
            return signed
        ignore = phrases.ignore
        if ignore is not None and len(ignore) and ignore.mean() >= self.boilerplate_share:
            # Nothing of its own to be a copy of: kept unless an exact copy.
            return Signed(signed.exact, None, signed.tokens, boilerplate=True)
        return Signed(signed.exact, (signed.near[0], phrases, *signed.near[2:]), signed.tokens)

    def learn_boilerplate(self, site: str, signed: Signed, verdict: Verdict) -> None:
        """Count the lines of a page its site kept as new. Neither a copy (dropped) nor a
        related page (kept, but holding a kept one) counts: an article's own paragraphs must
        not become its site's boilerplate because the article came again."""
        if (
            signed.near is not None
            and self.near is not None
            and not verdict.is_duplicate
            and verdict.related_to is None
        ):
            self.site_lines.count(site, signed.near[1])

    def would_drop_for(self, signed: Signed) -> list[Match]:
        """The kept documents :meth:`check_signed` would now call ``signed`` a copy of
        (exact copies first; empty: it would keep it); nothing recorded."""
        found = self.exact.query(signed.exact)
        if not found and signed.near is not None and self.near is not None:
            found = self.near.query(signed.near)
        return found

    def holds(self, kept: Signed, new: Signed) -> bool:
        """Whether the text of ``new`` is within that of ``kept`` by the rule of a drop (two
        readings of one page: see the pipeline's second reading)."""
        if kept.exact == new.exact:
            return True
        if kept.near is None or new.near is None or self.near is None:
            return False
        method = self.near.method
        return holds(coverage(new.near[1], kept.near[1]), method.coverage, method.shingles)

    def check(self, key: str, text: str | Document) -> Verdict:
        """Match ``text`` against everything kept so far; keep it (index it) if it is new."""
        return self.check_signed(key, self.sign(text))

    def check_signed(self, key: str, signed: Signed) -> Verdict:
        """The index half of :meth:`check`, for signatures made by :meth:`sign`."""
        self.counts["documents"] += 1
        short = signed.near is None
        related: list[Match] = []
        near: list[Match] = []
        if short:
            if self.near is not None:
                self.counts["boilerplate" if signed.boilerplate else "short"] += 1
            matches = self.exact.query_and_add_signature(key, signed.exact)
        else:
            # Exact first without adding: only a document that is kept becomes a head.
            matches = self.exact.query(signed.exact)
            if not matches:
                matches, related = self.near.search(key, signed.near, add=True, near=near)
                if not matches:
                    self.exact.add(key, signed.exact)
        if not matches:
            self.counts["kept"] += 1
            if self.recorder is not None:
                self.recorder.head(key, signed)
            if not related:
                if near:
                    return self._near(key, near)
                return Verdict(key, short=short, boilerplate=signed.boilerplate)
            richer = max(related, key=lambda m: m.containment)
            relation = Member(key, richer.key, richer.method, richer.containment)
            self._record_related(relation)
            if self.recorder is not None:
                self.recorder.related(relation)
            return Verdict(
                key, method=richer.method, containment=richer.containment, related_to=richer.key
            )
        match = best_match(matches)
        member = Member(key, match.key, match.method, match.similarity)
        self._record(member)
        if self.recorder is not None:
            self.recorder.member(member)
        return Verdict(
            key,
            match.key,
            match.method,
            match.similarity,
            short,
            match.containment,
            boilerplate=signed.boilerplate,
        )

    def _near(self, key: str, near: list[Match]) -> Verdict:
        closest = max(near, key=lambda m: (m.similarity, m.containment))
        relation = Member(key, closest.key, closest.method, closest.similarity)
        self._record_near(relation)
        record = getattr(self.recorder, "near", None)
        if record is not None:
            record(relation)
        return Verdict(
            key,
            method=closest.method,
            similarity=closest.similarity,
            containment=closest.containment,
            near_to=closest.key,
        )

    def restore_head(self, key: str, signed: Signed) -> None:
        """Re-add a kept document from a journal (no query, no counting twice)."""
        if key in self.exact.store:
            return
        self.exact.add(key, signed.exact)
        if signed.near is not None and self.near is not None:
            self.near.add(key, signed.near)
        self.counts["documents"] += 1
        self.counts["kept"] += 1

    def restore_member(self, member: Member) -> None:
        if member.key not in self.members:
            self.counts["documents"] += 1
            self._record(member)

    def restore_related(self, relation: Member) -> None:
        if relation.key not in self.related:
            self._record_related(relation)

    def restore_near(self, relation: Member) -> None:
        if relation.key not in self.near_members:
            self._record_near(relation)

    def _record_near(self, relation: Member) -> None:
        # Not in ``counts`` (the pipeline counts neardup/items/near): kept documents are.
        self.near_members[relation.key] = relation

    def _record(self, member: Member) -> None:
        self.members[member.key] = member
        self.counts[f"duplicates/{member.method}"] += 1

    def _record_related(self, relation: Member) -> None:
        self.related[relation.key] = relation
        self.counts["related"] += 1

    def clusters(self) -> dict[str, list[Member]]:
        """Each head with at least one duplicate, and its members in the order they came."""
        out: dict[str, list[Member]] = {}
        for member in self.members.values():
            out.setdefault(member.head, []).append(member)
        return out

    def __len__(self) -> int:
        """Number of kept (indexed) documents."""
        return len(self.exact)

    # -- persistence -------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        meta = {
            "method": self.method.name,
            "params": (self.method if self.near is None else self.near.method).params(),
            "min_tokens": self.min_tokens,
            "counts": dict(self.counts),
        }
        if self.near_members:
            meta["near"] = len(self.near_members)
        return meta

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        self.write(out)
        return out.getvalue()

    def write(self, out: BinaryIO) -> None:
        """Write the state in the format of :mod:`scrapy_neardup.state_format`."""
        write_header(out, self.meta())
        for index in (self.exact, self.near):
            items = list(index.store.items()) if index else []
            write_signatures(out, len(items), ((k, index.method.encode(s)) for k, s in items))
        sections = [self.members, self.related]
        if self.near_members:
            sections.append(self.near_members)
        for relations in sections:
            write_members(out, relations.values())

    def load_bytes(self, data: bytes) -> None:
        """Add saved state to this (empty) deduplicator; raises StateError if it does not fit.

        The whole state is read and decoded before anything is added, so a state that turns
        out to be corrupt leaves the deduplicator as it was.
        """
        expected = json.loads(json.dumps(self.meta()))
        indexes = {"exact": self.exact, "near": self.near}
        counts: dict[str, int] = {}
        entries: list[tuple[Index, str, Any]] = []
        members: list[Member] = []
        related: list[Member] = []
        near: list[Member] = []
        for record in iter_state(data):
            kind = record[0]
            if kind == "meta":
                meta = record[1]
                _check_decision(meta, expected)
                saved = meta.get("params")
                for key in OPTIONAL_PARAMS:  # a state that predates them resumes without them
                    if isinstance(saved, dict) and key not in saved:
                        expected["params"].pop(key, None)
                for field in ("method", "params", "min_tokens"):
                    if meta[field] != expected[field]:
                        raise StateError(
                            f"state was written with {field}={meta[field]!r}, configured "
                            f"{field}={expected[field]!r}; use the same settings or a new state"
                        )
                counts = meta["counts"]
            elif kind == "member":
                members.append(record[1])
            elif kind == "related":
                related.append(record[1])
            elif kind == "nearby":
                near.append(record[1])
            else:
                index = indexes[kind]
                if index is None:
                    raise StateError("state holds signatures of a backend that is not configured")
                try:
                    entries.append((index, record[1], index.method.decode(record[2])))
                except ValueError as exc:
                    raise StateError(f"corrupt near-duplicate state: {exc}") from None
        for index, key, signature in entries:
            index.add(key, signature)
        self.members.update((m.key, m) for m in members)
        self.related.update((m.key, m) for m in related)
        self.near_members.update((m.key, m) for m in near)
        self.counts.update(counts)


#: Parameters a state written before them lacks; it resumes, and its earlier documents go
#: without them (no excerpt keys: they are proposed by their backend's buckets only).
OPTIONAL_PARAMS = ("excerpts",)


def _check_decision(meta: dict[str, Any], expected: dict[str, Any]) -> None:
    """A state decided with other thresholds refuses to resume, naming the setting: its
    kept documents and clusters were chosen by them (and the similar rule's shingles are in
    its signatures). Keys a state lacks had their defaults (states from before them)."""
    saved = meta.get("params", {}).get("verify") if isinstance(meta.get("params"), dict) else None
    wanted = expected["params"].get("verify")
    if not isinstance(saved, dict) or not isinstance(wanted, dict):
        return
    for key, (setting, unset) in DECISION_SETTINGS.items():
        was, now = saved.get(key, unset), wanted.get(key, unset)
        if was != now:
            raise StateError(
                f"state was written with {setting}={was!r} (unset: the default), configured "
                f"{setting}={now!r}; use the same setting or a new state"
            )
