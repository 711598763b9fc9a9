"""Content indexes in Redis, shared by many crawler processes.

Promises: an optimistic atomic query-and-add: one Lua script (:data:`_INDEX_LUA`) adds a
document only if none of its buckets grew since the client verified them, else the client
verifies the new entries and tries again, so two crawlers never both keep a near-duplicate
pair. Signatures are the backends' own ``encode`` bytes. Rationale:
``docs/design.md#atomic-query-and-add``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from scrapy_neardup.backends.base import Verifier

# ``redis`` through redis_client: without the package, that import says what to install.
from scrapy_neardup.storage.redis_client import (
    REDIS_ERRORS,
    CorruptRecord,
    key_base,
    part_base,
    redis,
)

_INDEX_LUA = """
-- KEYS[1] docs hash, KEYS[2] ids hash, KEYS[3] id counter, KEYS[4..] the document's buckets
-- ARGV[1] key, ARGV[2] packed document, ARGV[3] mode: add | query | force,
-- ARGV[4] probe (0: every bucket), ARGV[5] limit (0: none), ARGV[6] strong, ARGV[7..] per
-- bucket the length already verified (-1: not watched); absent on a first call, which watches
-- every bucket (or the `probe` least filled ones) from its start.
-- Returns {1} added, {2} key already indexed, or {0, lengths, newcomers' packed docs}: past
-- `limit` newcomers, those in `strong` or more of the watched buckets and, of the others,
-- the `limit` in the most (the first met among equals).
local nb = #KEYS - 3
local mode = ARGV[3]
if mode ~= 'query' and redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {2} end
local function add()
  local id = redis.call('INCR', KEYS[3])
  redis.call('HSET', KEYS[1], id, ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[1], id)
  local packed = struct.pack('<I4', id)
  for i = 1, nb do redis.call('APPEND', KEYS[3 + i], packed) end
  return {1}
end
if mode == 'force' then return add() end
local was = {}
if #ARGV == 6 then
  local probe = tonumber(ARGV[4])
  for i = 1, nb do was[i] = 0 end
  if probe > 0 and probe < nb then
    local order, size = {}, {}
    for i = 1, nb do order[i] = i; size[i] = redis.call('STRLEN', KEYS[3 + i]) end
    table.sort(order, function(a, b)
      if size[a] ~= size[b] then return size[a] < size[b] end
      return a < b
    end)
    for r = probe + 1, nb do was[order[r]] = -1 end
  end
else
  for i = 1, nb do was[i] = tonumber(ARGV[6 + i]) end
end
local fresh, have, lengths = {}, {}, {}
for i = 1, nb do
  if was[i] < 0 then
    lengths[i] = -1
  else
    local len = redis.call('STRLEN', KEYS[3 + i])
    lengths[i] = len
    if len > was[i] then
      local ids = redis.call('GETRANGE', KEYS[3 + i], was[i], len - 1)
      for j = 1, #ids - 3, 4 do
        local id = struct.unpack('<I4', ids, j)
        if have[id] then have[id] = have[id] + 1 else have[id] = 1; fresh[#fresh + 1] = id end
      end
    end
  end
end
if #fresh == 0 then
  if mode == 'add' then return add() end
  return {0, lengths, {}}
end
local limit, strong = tonumber(ARGV[5]), tonumber(ARGV[6])
if limit > 0 and #fresh > limit then
  local rank, chosen = {}, {}
  for r = 1, #fresh do
    if have[fresh[r]] >= strong then chosen[r] = true else rank[#rank + 1] = r end
  end
  table.sort(rank, function(a, b)
    if have[fresh[a]] ~= have[fresh[b]] then return have[fresh[a]] > have[fresh[b]] end
    return a < b
  end)
  for r = 1, math.min(limit, #rank) do chosen[rank[r]] = true end
  local best = {}
  for r = 1, #fresh do if chosen[r] then best[#best + 1] = fresh[r] end end
  fresh = best
end
local docs = {}
for s = 1, #fresh, 1000 do
  local part = redis.call('HMGET', KEYS[1], unpack(fresh, s, math.min(s + 999, #fresh)))
  for _, d in ipairs(part) do docs[#docs + 1] = d end
end
return {0, lengths, docs}
"""


def _pack_doc(key: str, signature: bytes) -> bytes:
    encoded = key.encode("utf-8", "surrogatepass")
    return struct.pack("<I", len(encoded)) + encoded + signature


def _unpack_doc(data: bytes) -> tuple[str, bytes]:
    """(key, signature bytes) of a document record; ValueError when it is not one."""
    try:
        (length,) = struct.unpack_from("<I", data)
        if 4 + length > len(data):
            raise ValueError(f"key of {length} bytes in a record of {len(data)}")
        return data[4 : 4 + length].decode("utf-8", "surrogatepass"), data[4 + length :]
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None


class RedisBucketStore:
    """A :class:`~scrapy_neardup.backends.base.BucketStore` in Redis, safe for many writers.

    ``codec`` is the backend (its ``encode``/``decode`` and ``checks``); nothing else of it is
    used. See the module docstring for the keys and for why :meth:`query_and_add` never lets
    two processes both keep a near-duplicate pair. A candidate's record that cannot be read
    (another client wrote it) is handed to ``on_corrupt`` (a :class:`CorruptRecord`) and left
    out of the comparison; without ``on_corrupt`` it is raised.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        name: str,
        codec: Any,
        on_corrupt: Callable[[CorruptRecord], None] | None = None,
    ) -> None:
        self.client = client
        self.codec = codec
        self.on_corrupt = on_corrupt
        self.base = part_base(prefix, name)
        self._docs, self._ids, self._seq = (f"{self.base}:{n}" for n in ("docs", "ids", "seq"))
        self._script = client.register_script(_INDEX_LUA)
        #: Script calls made (for tests and benchmarks: round trips of the index).
        self.calls = 0

    def _keys(self, buckets: Sequence[int]) -> list[str]:
        return [self._docs, self._ids, self._seq] + [
            f"{self.base}:b:{b:x}" for b in dict.fromkeys(buckets)
        ]

    def _run(self, keys: list[str], key: str, doc: bytes, mode: str, probe: int, lengths=()):
        self.calls += 1
        limit, strong = self.codec.checks
        args = [key, doc, mode, probe, limit or 0, strong, *lengths]
        return self._script(keys=keys, args=args)

    def _search(
        self,
        key: str,
        signature: Any,
        buckets: list[int],
        verify: Verifier,
        probe: int | None,
        mode: str,
    ) -> list[tuple[str, float]]:
        keys = self._keys(buckets)
        doc = _pack_doc(key, self.codec.encode(signature)) if mode == "add" else b""
        lengths: list[int] = []
        checked: set[str] = set()
        while True:
            reply = self._run(keys, key, doc, mode, probe or 0, lengths)
            if reply[0] != 0:
                return []  # added, or the key was already indexed
            lengths = [int(n) for n in reply[1]]
            matches: list[tuple[str, float]] = []
            for packed in reply[2]:
                if packed is None:
                    continue
                try:
                    other, data = _unpack_doc(packed)
                    if other in checked or other == key:
                        continue
                    signature = self.codec.decode(data)
                except (ValueError, struct.error) as exc:
                    self._corrupt(f"a document record in {self._docs}: {exc}")
                    continue
                checked.add(other)
                similarity = verify(other, signature)
                if similarity is not None:
                    matches.append((other, similarity))
            if matches or mode == "query":
                return matches
            # Newcomers, none matching: try to add again, now watching from the new lengths.

    def query_and_add(
        self,
        key: str,
        signature: Any,
        buckets: list[int],
        verify: Verifier,
        probe: int | None = None,
    ) -> list[tuple[str, float]]:
        return self._search(key, signature, buckets, verify, probe, "add")

    def query(
        self, signature: Any, buckets: list[int], verify: Verifier, probe: int | None = None
    ) -> list[tuple[str, float]]:
        return self._search("", signature, buckets, verify, probe, "query")

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        doc = _pack_doc(key, self.codec.encode(signature))
        self._run(self._keys(buckets), key, doc, "force", 0)

    def _corrupt(self, what: str) -> None:
        error = CorruptRecord(f"cannot read {what}")
        if self.on_corrupt is None:
            raise error
        self.on_corrupt(error)

    def items(self) -> Iterator[tuple[str, Any]]:
        for id_, packed in self.client.hscan_iter(self._docs, count=1000):
            try:
                key, data = _unpack_doc(packed)
                signature = self.codec.decode(data)
            except (ValueError, struct.error) as exc:
                self._corrupt(f"document {id_!r} of {self._docs}: {exc}")
                continue
            yield key, signature

    def __contains__(self, key: str) -> bool:
        """Whether ``key`` is indexed; False when Redis cannot be asked (it only serves to
        make item keys unique, and the state reports the outage on its next real call)."""
        try:
            return bool(self.client.hexists(self._ids, key))
        except REDIS_ERRORS:
            return False

    def __len__(self) -> int:
        return int(self.client.hlen(self._ids))


class RedisRecorder:
    """Records cluster membership in Redis, for ``scrapy neardup-stats --redis-url``.

    Kept documents need no record: the exact index holds every one of them.
    """

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.members = f"{key_base(prefix)}:members"
        self.counts = f"{key_base(prefix)}:counts"
        self.late_members = f"{key_base(prefix)}:late"
        self.related_members = f"{key_base(prefix)}:related"
        self.near_members = f"{key_base(prefix)}:near"

    def head(self, key: str, signed: Any) -> None:
        pass

    def member(self, member: Any) -> None:
        self._record(self.members, member, f"duplicates/{member.method}")

    def related(self, member: Any) -> None:
        """A kept document that holds, and adds to, the kept ``member.head``."""
        self._record(self.related_members, member, "related")

    def near(self, member: Any) -> None:
        """A kept document near the kept ``member.head`` (the decision not configured would
        have dropped it)."""
        self._record(self.near_members, member, "near")

    def late(self, member: Any) -> None:
        """A duplicate found only after it was delivered (kept while Redis was unavailable);
        :meth:`member` recorded it already as a duplicate."""
        self._record(self.late_members, member, "late_duplicates")

    def _record(self, hash_key: str, member: Any, counter: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(hash_key, member.key, pack_member(member.head, member.method, member.similarity))
        pipe.hincrby(self.counts, counter, 1)
        pipe.execute()


def pack_member(head: str, method: str, similarity: float) -> bytes:
    h, m = head.encode("utf-8", "surrogatepass"), method.encode()
    return (
        struct.pack("<I", len(h))
        + h
        + struct.pack("<I", len(m))
        + m
        + struct.pack("<d", similarity)
    )


def unpack_member(data: bytes) -> tuple[str, str, float]:
    """(head, method, similarity) of a member record; CorruptRecord when it is not one."""
    try:
        (n,) = struct.unpack_from("<I", data)
        head = data[4 : 4 + n].decode("utf-8", "surrogatepass")
        pos = 4 + n
        (n,) = struct.unpack_from("<I", data, pos)
        method = data[pos + 4 : pos + 4 + n].decode()
        (similarity,) = struct.unpack_from("<d", data, pos + 4 + n)
    except (struct.error, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"cannot read a cluster record ({exc}): {data[:60]!r}") from None
    return head, method, similarity


def members(
    client: redis.Redis, prefix: str, hash_name: str = "members"
) -> Iterable[tuple[str, str, str, float]]:
    """(duplicate, head, method, similarity) of every recorded duplicate (``hash_name``
    ``"late"``: of those found only after they were delivered; ``"related"``: kept documents
    that hold a kept one, the similarity being that one's containment in them; ``"near"``:
    kept documents near a kept one)."""
    for key, packed in client.hscan_iter(f"{key_base(prefix)}:{hash_name}", count=1000):
        yield (key.decode("utf-8", "surrogatepass"), *unpack_member(packed))


def recorded(
    client: redis.Redis, prefix: str, key: str
) -> tuple[bool, tuple[str, str, float] | None]:
    """Whether ``key`` is a kept document, and (head, method, similarity) if it is a recorded
    duplicate (one round trip). CorruptRecord when its cluster record cannot be read."""
    pipe = client.pipeline(transaction=False)
    pipe.hexists(f"{part_base(prefix, 'exact')}:ids", key)
    pipe.hget(f"{key_base(prefix)}:members", key)
    kept, member = pipe.execute()
    return bool(kept), None if member is None else unpack_member(member)


def taken(client: redis.Redis, prefix: str, key: str) -> bool:
    """Whether ``key`` names a kept document or a recorded duplicate (one round trip)."""
    pipe = client.pipeline(transaction=False)
    pipe.hexists(f"{part_base(prefix, 'exact')}:ids", key)
    pipe.hexists(f"{key_base(prefix)}:members", key)
    return any(pipe.execute())
