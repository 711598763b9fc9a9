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

from scrapy_neardup.backends.base import Query

# Through redis_client: without the redis package, that import says what to install.
from scrapy_neardup.storage.redis_client import REDIS_ERRORS, CorruptRecord, key_base, part_base

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
    table.sort(order, function(a, b) return size[a] < size[b] or (size[a] == size[b] and a < b) end)
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


def _field(text: str) -> bytes:
    """``text`` as a record field: u32 length, then UTF-8."""
    data = text.encode("utf-8", "surrogatepass")
    return struct.pack("<I", len(data)) + data


def _read_field(data: bytes, pos: int = 0) -> tuple[str, int]:
    """The field at ``pos`` and where the next starts; ValueError or struct.error when the
    record holds none there."""
    (length,) = struct.unpack_from("<I", data, pos)
    end = pos + 4 + length
    if end > len(data):
        raise ValueError(f"a field of {length} bytes in a record of {len(data)}")
    return data[pos + 4 : end].decode("utf-8", "surrogatepass"), end


def _pack_doc(key: str, signature: bytes) -> bytes:
    return _field(key) + signature


class RedisBucketStore:
    """A :class:`~scrapy_neardup.backends.base.BucketStore` in Redis, safe for many writers.

    ``codec`` is the backend (its ``encode``/``decode`` and ``checks``); nothing else of it is
    used. A candidate's record that cannot be read (another client wrote it) is handed to
    ``on_corrupt`` (a :class:`CorruptRecord`) and left out of the comparison; without
    ``on_corrupt`` it is raised.
    """

    def __init__(
        self,
        client: Any,
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

    def _keys(self, buckets: Sequence[int]) -> list[str]:
        return [self._docs, self._ids, self._seq] + [
            f"{self.base}:b:{b:x}" for b in dict.fromkeys(buckets)
        ]

    def _search(self, key: str, query: Query, mode: str) -> list[tuple[str, float]]:
        keys = self._keys(query.buckets)
        doc = _pack_doc(key, self.codec.encode(query.signature)) if mode == "add" else b""
        limit, strong = self.codec.checks
        lengths: list[int] = []
        checked: set[str] = set()
        while True:
            args = [key, doc, mode, query.probe or 0, limit or 0, strong, *lengths]
            reply = self._script(keys=keys, args=args)
            if reply[0] != 0:
                return []  # added, or the key was already indexed
            lengths = [int(n) for n in reply[1]]
            matches: list[tuple[str, float]] = []
            for other, signature in self._decoded(reply[2]):
                if other in checked or other == key:
                    continue
                checked.add(other)
                similarity = query.verify(other, signature)
                if similarity is not None:
                    matches.append((other, similarity))
            if matches or mode == "query":
                return matches
            # Newcomers, none matching: try to add again, now watching from the new lengths.

    def query_and_add(self, key: str, query: Query) -> list[tuple[str, float]]:
        return self._search(key, query, "add")

    def query(self, query: Query) -> list[tuple[str, float]]:
        return self._search("", query, "query")

    def add(self, key: str, signature: Any, buckets: list[int]) -> None:
        doc = _pack_doc(key, self.codec.encode(signature))
        self._script(keys=self._keys(buckets), args=[key, doc, "force", 0, 0, 0])

    def _decoded(self, records: Iterable[bytes | None]) -> Iterator[tuple[str, Any]]:
        """(key, signature) of each document record; one that cannot be read is handed to
        ``on_corrupt`` (raised without it)."""
        for packed in records:
            if packed is None:
                continue
            try:
                key, end = _read_field(packed)
                signature = self.codec.decode(packed[end:])
            except (ValueError, struct.error) as exc:
                error = CorruptRecord(f"cannot read a document record in {self._docs}: {exc}")
                if self.on_corrupt is None:
                    raise error from None
                self.on_corrupt(error)
                continue
            yield key, signature

    def items(self) -> Iterator[tuple[str, Any]]:
        return self._decoded(packed for _, packed in self.client.hscan_iter(self._docs, count=1000))

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
    """Records every duplicate, related and near document in its hash under ``{prefix}``
    (read back by :func:`members`), counted in ``{prefix}:neardup:counts``, for ``scrapy
    neardup-stats --redis-url``. Kept documents need no record: the exact index holds them.
    """

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.base = key_base(prefix)

    def head(self, key: str, signed: Any) -> None:
        pass

    def member(self, member: Any) -> None:
        self._record("members", member, f"duplicates/{member.method}")

    def related(self, member: Any) -> None:
        """A kept document that holds, and adds to, the kept ``member.head``."""
        self._record("related", member, "related")

    def near(self, member: Any) -> None:
        self._record("near", member, "near")

    def late(self, member: Any) -> None:
        """A duplicate found only after it was delivered (kept while Redis was unavailable);
        :meth:`member` recorded it already as a duplicate."""
        self._record("late", member, "late_duplicates")

    def _record(self, name: str, member: Any, counter: str) -> None:
        record = _field(member.head) + _field(member.method) + struct.pack("<d", member.similarity)
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(f"{self.base}:{name}", member.key, record)
        pipe.hincrby(f"{self.base}:counts", counter, 1)
        pipe.execute()


def unpack_member(data: bytes) -> tuple[str, str, float]:
    """(head, method, similarity) of a member record; CorruptRecord when it is not one."""
    try:
        head, pos = _read_field(data)
        method, pos = _read_field(data, pos)
        (similarity,) = struct.unpack_from("<d", data, pos)
    except (ValueError, struct.error) as exc:
        raise CorruptRecord(f"cannot read a cluster record ({exc}): {data[:60]!r}") from None
    return head, method, similarity


def members(
    client: Any, prefix: str, hash_name: str = "members"
) -> Iterable[tuple[str, str, str, float]]:
    """(duplicate, head, method, similarity) of every recorded duplicate (``hash_name``
    ``"late"``: of those found only after they were delivered; ``"related"``: kept documents
    that hold a kept one, the similarity being that one's containment in them; ``"near"``:
    kept documents near a kept one)."""
    for key, packed in client.hscan_iter(f"{key_base(prefix)}:{hash_name}", count=1000):
        yield (key.decode("utf-8", "surrogatepass"), *unpack_member(packed))


def recorded(client: Any, prefix: str, key: str) -> tuple[bool, bytes | None]:
    """Whether ``key`` is a kept document, and its member record if it is a recorded
    duplicate (:func:`unpack_member` reads it); one round trip."""
    pipe = client.pipeline(transaction=False)
    pipe.hexists(f"{part_base(prefix, 'exact')}:ids", key)
    pipe.hget(f"{key_base(prefix)}:members", key)
    kept, member = pipe.execute()
    return bool(kept), member
