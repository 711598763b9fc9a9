"""The request meta keys this plugin sets on requests, and nothing else.

Promises: the names never change (a journaled or queued request carries them across runs);
the request codec leaves them out of what it writes. No imports, so any module may use them.
Rationale: ``docs/design.md#frontier``.
"""

from __future__ import annotations

#: Request meta: hex fingerprint of the frontier entry a request (or its retry or redirect) is.
FRONTIER_META = "_neardup_frontier"
#: Request meta: the URL of a request re-queued after a crash; it passes the URL filter once.
RECOVERED_META = "_neardup_recovered"
#: Request meta: the URL the URL filter checked (set by the dupefilter and the middleware).
CHECKED_META = "_neardup_checked_url"
#: Request meta: hex fingerprint of the frontier entry whose response yielded the request
#: (set by FrontierMiddleware): kept pending if the request cannot be journaled.
PARENT_META = "_neardup_parent"

#: Request meta: the lease of a request popped from a shared queue (scrapy_neardup.leases).
LEASE_META = "_neardup_lease"

#: Request meta: ``(url, seen)``, the answer LinkBatchMiddleware got for the request in one
#: round trip with the other links of its response; the dupefilter takes it before the
#: request is queued.
ANSWERED_META = "_neardup_answered"

#: Every key above but ANSWERED_META (taken before a request is queued): the request codec
#: does not write them (they are set again on re-queue).
INTERNAL_META = frozenset((FRONTIER_META, RECOVERED_META, CHECKED_META, PARENT_META, LEASE_META))
