"""The near-duplicate engine: :class:`Deduplicator` and its :class:`Verdict`.

Exact hash first, then the configured backend, whose candidates are verified exactly
(:mod:`scrapy_neardup.backends.containment`). Every kept document heads a cluster, every
duplicate joins the cluster of the earlier document that holds it; only heads are indexed. A
saved state resumes only in a deduplicator configured as it was. It knows nothing of Scrapy,
and of storage only the store factory it is given. Rationale: ``docs/design.md#engine``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from scrapy_neardup.backends import DEFAULT_BACKEND, Backend, Match, make_backend
from scrapy_neardup.backends.base import BucketStore
from scrapy_neardup.backends.containment import (
    DECISION,
    RELATED,
    SIMILAR_SHINGLES,
    SIMILAR_SPOTS,
    Verified,
    candidate_params,
)
from scrapy_neardup.backends.exact import ExactBackend
from scrapy_neardup.backends.losses import COVERAGE, SHINGLES
from scrapy_neardup.exceptions import StateError
from scrapy_neardup.index import Index
from scrapy_neardup.storage.memory import MemoryBucketStore
from scrapy_neardup.text import Document

#: Texts with fewer tokens are matched exactly only (``NEARDUP_MIN_TOKENS``).
DEFAULT_MIN_TOKENS = 50

#: The decision's parameters (``Verified.params()["verify"]``), each with the setting that
#: gives it and its default (the settings table's): a saved state decided with other values
#: refuses to resume, naming the setting.
DECISION_SETTINGS: dict[str, tuple[str, Any]] = {
    "decision": ("NEARDUP_DECISION", DECISION),
    "coverage": ("NEARDUP_CONTAINED_WORDS", COVERAGE),
    "shingles": ("NEARDUP_CONTAINED_SHINGLES", SHINGLES),
    "related": ("NEARDUP_RELATED", RELATED),
    "similarity": ("NEARDUP_SIMILARITY", None),
    "similar_shingles": ("NEARDUP_SIMILARITY_SHINGLES", SIMILAR_SHINGLES),
    "similar_spots": ("NEARDUP_SIMILARITY_SPOTS", SIMILAR_SPOTS),
}


@dataclass(frozen=True)
class Member:
    """A duplicate and the cluster head it joined; or, in ``Deduplicator.related``, a kept
    document (``key``) and the earlier kept one (``head``) it holds and adds to.

    ``method`` is the name of the backend that matched."""

    key: str
    head: str
    method: str
    similarity: float


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
    #: A kept document that the decision not configured would have dropped this one for
    #: (kept, recorded beside it); ``similarity`` is then that rule's measure.
    near_to: str | None = None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate_of is not None

    def member(self) -> Member:
        """A duplicate's place in its cluster; a ValueError for a document kept."""
        if self.duplicate_of is None or self.method is None:
            raise ValueError(f"{self.key!r} is no duplicate")
        return Member(self.key, self.duplicate_of, self.method, self.similarity)


@dataclass(frozen=True)
class Signed:
    """A document's signatures; ``near`` is None for short documents (exact matching only)."""

    exact: Any
    near: Any
    tokens: int


class Recorder(Protocol):
    """Told of every decision, e.g. to record it (see :mod:`scrapy_neardup.state.files`)."""

    def head(self, key: str, signed: Signed) -> None: ...

    def member(self, member: Member) -> None: ...

    def related(self, member: Member) -> None: ...

    def near(self, member: Member) -> None:
        """Told of a kept document near a kept one (:attr:`Verdict.near_to`)."""


def best_match(matches: Iterable[Match]) -> Match:
    """The closest by the decision's rank (the similar rule's measure; 0 under "contained"),
    then the one holding most of the document, then the most similar; among equals the first
    found (the earlier document)."""
    return max(matches, key=lambda m: (m.rank, m.containment, m.similarity))


#: A store for an index: its name ("exact" or the backend's) and the codec of its signatures
#: (the backend whose ``encode``/``decode`` a store that serialises must use).
StoreFactory = Callable[[str, Backend], BucketStore]


def memory_stores(_name: str, codec: Backend) -> BucketStore:
    return MemoryBucketStore(codec=codec)


class Deduplicator:
    """Decides, document by document, what is new and what repeats something seen before.

    ``method`` is a backend name in :data:`~scrapy_neardup.backends.BACKENDS` (``**params``:
    its options; its candidate threshold and shingles default to those that propose what
    ``decision`` accepts) or an instance. Documents of fewer than ``min_tokens`` tokens are
    matched exactly only (counted as ``short``): estimates are unreliable on a few words.
    Candidates are verified (:class:`~scrapy_neardup.backends.containment.Verified`) by the
    ``decision``, ``"contained"`` or ``"similar"``, tuned by the thresholds after it;
    ``containment`` (Verified's keyword arguments) is their older spelling. :meth:`check`
    returns a :class:`Verdict`.

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
        similar_spots: bool | None = None,
        containment: dict[str, Any] | None = None,
        **params: Any,
    ) -> None:
        if min_tokens < 0:
            raise ValueError(f"min_tokens must be >= 0, got {min_tokens}")
        verify: dict[str, Any] = {"decision": decision, **(containment or {})}
        named = {
            "coverage": contained_words,
            "shingles": contained_shingles,
            "related": related,
            "similarity": similarity,
            "similar_shingles": similar_shingles,
            "similar_spots": similar_spots,
        }
        verify.update({name: value for name, value in named.items() if value is not None})
        if isinstance(method, str):
            shingles, spots = verify.get("similar_shingles"), verify.get("similar_spots", True)
            params = {**candidate_params(method, verify["decision"], shingles, spots), **params}
        self.method = make_backend(method, **params) if isinstance(method, str) else method
        self.min_tokens = min_tokens
        exact = ExactBackend()
        self.exact = Index(exact, stores("exact", exact))
        self.near = None
        if not isinstance(self.method, ExactBackend):
            verified = Verified(self.method, **verify)
            self.near = Index(verified, stores(self.method.name, verified))
        self.members: dict[str, Member] = {}
        self.related: dict[str, Member] = {}
        #: Kept documents near a kept one (:attr:`Verdict.near_to`), by key.
        self.near_members: dict[str, Member] = {}
        self.counts: Counter[str] = Counter()
        self.recorder: Recorder | None = None

    def sign(self, text: str | Document, title: str = "", article_end: int | None = None) -> Signed:
        """Signatures of a text (whose first line is ``title``, when given: a page's title, as
        extraction puts it; its readers' comments from ``article_end`` on): the costly, pure
        half of :meth:`check` (safe in a worker)."""
        doc = text if isinstance(text, Document) else Document(text, title, article_end)
        exact = self.exact.method.signature(doc)
        reads_tokens = self.near is not None and self.near.method.reads_tokens
        count = len(doc.tokens) if reads_tokens else doc.token_count
        if self.near is None or count < self.min_tokens:
            return Signed(exact, None, count)
        return Signed(exact, self.near.method.signature(doc), count)

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
                self.counts["short"] += 1
            matches = self.exact.query_and_add_signature(key, signed.exact)
        else:
            # Exact first without adding: only a document that is kept becomes a head.
            matches = self.exact.query(signed.exact)
            if not matches:
                assert self.near is not None  # only its backend signs for it (sign)
                matches, related = self.near.search(key, signed.near, add=True, near=near)
                if not matches:
                    self.exact.add(key, signed.exact)
        if matches:
            match = best_match(matches)
            member = Member(key, match.key, match.method, match.similarity)
            self._record(member)
            if self.recorder is not None:
                self.recorder.member(member)
            return Verdict(key, match.key, match.method, match.similarity, short, match.containment)
        self.counts["kept"] += 1
        if self.recorder is not None:
            self.recorder.head(key, signed)
        if related:
            richer = max(related, key=lambda m: m.containment)
            relation = Member(key, richer.key, richer.method, richer.containment)
            self._record_related(relation)
            if self.recorder is not None:
                self.recorder.related(relation)
            return Verdict(
                key, method=richer.method, containment=richer.containment, related_to=richer.key
            )
        if not near:
            return Verdict(key, short=short)
        closest = max(near, key=lambda m: (m.similarity, m.containment))
        relation = Member(key, closest.key, closest.method, closest.similarity)
        # Not in ``counts`` (the pipeline counts neardup/items/near): kept documents are.
        self.near_members[key] = relation
        if self.recorder is not None:
            self.recorder.near(relation)
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
        self.near_members.setdefault(relation.key, relation)

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

    def check_saved(self, saved: dict[str, Any]) -> None:
        """StateError unless a state saved with ``saved`` (a :meth:`meta`) resumes here:
        the same backend, parameters, decision and ``min_tokens``. A state decided with other
        thresholds is refused naming the setting; keys a state lacks had their defaults."""
        if not isinstance(saved, dict):
            raise StateError(f"unreadable meta of the saved state: {saved!r:.100}")
        expected = json.loads(json.dumps(self.meta()))
        params = saved.get("params")
        if isinstance(params, dict):
            was, now = params.get("verify"), expected["params"].get("verify")
            if isinstance(was, dict) and isinstance(now, dict):
                for key, (setting, unset) in DECISION_SETTINGS.items():
                    before, after = was.get(key, unset), now.get(key, unset)
                    if before != after:
                        raise StateError(
                            f"state was written with {setting}={before!r} (unset: the default), "
                            f"configured {setting}={after!r}; use the same setting or a new state"
                        )
            for key in OPTIONAL_PARAMS:  # a state that predates them resumes without them
                if key not in params:
                    expected["params"].pop(key, None)
        for field in ("method", "params", "min_tokens"):
            if saved.get(field) != expected[field]:
                raise StateError(
                    f"state was written with {field}={saved.get(field)!r}, configured "
                    f"{field}={expected[field]!r}; use the same settings or a new state"
                )


#: Parameters a state written before them lacks; it resumes, and its earlier documents go
#: without them (no excerpt keys: they are proposed by their backend's buckets only; no
#: spots: the similar rule's spot rule cannot say for them).
OPTIONAL_PARAMS = ("excerpts", "spots")
