"""One backend over one store (:class:`Index`): the engine's query, add, or both at once,
with every candidate of a :class:`~scrapy_neardup.backends.containment.Verified` backend
verified exactly. It knows nothing of Scrapy, and of storage only the store it is given.
Rationale: ``docs/design.md#engine``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy_neardup.backends import Backend, Match
from scrapy_neardup.backends.base import BucketStore, Query, Verifier
from scrapy_neardup.backends.containment import Verified
from scrapy_neardup.text import Document


class Index:
    """One backend over one store: query, add, or both at once (atomically, in the store).

    A :class:`~scrapy_neardup.backends.containment.Verified` backend tells copies from related
    documents (:meth:`search` returns both); any other matches what its ``similarity`` does.
    """

    def __init__(self, method: Backend, store: BucketStore) -> None:
        self.method = method
        self.store = store
        self._verified = method if isinstance(method, Verified) else None

    def _verifier(
        self,
        signature: Any,
        related: list[Match],
        found: dict[str, tuple[float, float]],
        near: list[Match] | None = None,
    ) -> Callable[[str, Any], float | None]:
        """The store's verifier: the similarity of a copy, else None; related candidates are
        put in ``related``, near ones (the decision not configured would drop them) in
        ``near``, and each copy's (containment, rank) in ``found`` on the way."""
        if self._verified is None:
            similarity = self.method.similarity
            return lambda key, other: similarity(signature, other)
        check, name = self._verified.check, self.method.name

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
            found[key] = (result.coverage, result.rank)
            return result.similarity

        return verify

    def search(
        self, key: str, signature: Any, add: bool, near: list[Match] | None = None
    ) -> tuple[list[Match], list[Match]]:
        """(copies, related) of ``signature`` among earlier documents; with ``add``, it is
        added as ``key`` when it copies none of them. Near ones go to ``near`` if given."""
        related: list[Match] = []
        contained: dict[str, tuple[float, float]] = {}
        verify = self._verifier(signature, related, contained, near)
        probe = self.method.probe_count(signature)
        first, verify = ([], verify) if probe is None else self._excerpts_first(signature, verify)
        query = Query(signature, self.method.bucket_keys(signature), verify, probe)
        if add and not first:
            found = self.store.query_and_add(key, query)
            if not found and self._verified is not None:
                self._verified.posted(signature)
        else:
            found = self.store.query(query)
        found = first + found
        name = self.method.name
        return [Match(k, sim, name, *contained.get(k, (1.0, 0.0))) for k, sim in found], related

    def _excerpts_first(self, signature: Any, verify: Verifier) -> tuple[list, Verifier]:
        """The excerpt keys (backends/excerpts.py) queried first, all of them, since a store
        told to ``probe`` the least filled buckets (SpotSigs) may leave them out. Returns what
        they found (a copy: the document is not added) and the verifier for all the buckets,
        which skips the candidates already verified."""
        keys = self.method.excerpt_keys(signature)
        if not keys:
            return [], verify
        checked: set[str] = set()

        def once(key: str, other: Any) -> float | None:
            checked.add(key)
            return verify(key, other)

        found = self.store.query(Query(signature, keys, once))
        return found, lambda key, other: None if key in checked else verify(key, other)

    def query(self, signature: Any) -> list[Match]:
        return self.search("", signature, add=False)[0]

    def query_and_add(self, key: str, doc: Document) -> list[Match]:
        """Earlier documents matching ``doc``; when there are none, ``doc`` is added as ``key``."""
        return self.query_and_add_signature(key, self.method.signature(doc))

    def query_and_add_signature(self, key: str, signature: Any) -> list[Match]:
        return self.search(key, signature, add=True)[0]

    def add(self, key: str, signature: Any) -> None:
        self.store.add(key, signature, self.method.bucket_keys(signature))
        if self._verified is not None:
            self._verified.posted(signature)

    def __len__(self) -> int:
        return len(self.store)
