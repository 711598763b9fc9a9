"""Redis storage: the URL filter and every content index, shared by many crawler processes.

Needs ``pip install scrapy-neardup[redis]``; :mod:`redis` is imported only when this module is.
Everything of one crawl lives under ``{prefix}:neardup:`` (the prefix is ``NEARDUP_KEY_PREFIX``
or the spider's name, never random, so a crawl's keys are never orphaned)::

    {p}:neardup:meta                 HASH  format, "content" and "urls": JSON of the parameters
    {p}:neardup:urls                 HASH  Bloom filter: stages, count, count:<stage>
    {p}:neardup:urls:<stage>:<n>     STRING bitmap n of a stage (at most CHUNK_BITS bits each)
    {p}:neardup:urls:bf              RedisBloom filter (used instead when the module is loaded)
    {p}:neardup:<index>:seq          STRING last document id given out (INCR)
    {p}:neardup:<index>:ids          HASH  document key -> id
    {p}:neardup:<index>:docs         HASH  id -> u32 len | key UTF-8 | signature (method.encode)
    {p}:neardup:<index>:b:<bucket>   STRING the ids in a bucket, u32 little-endian each, appended
    {p}:neardup:members              HASH  duplicate key -> u32 len | head | u32 len | method | f64
    {p}:neardup:counts               HASH  counters (duplicates/<method>, ...)

``<index>`` is ``exact`` or the method's name. Signatures are the methods' own little-endian
``encode`` output: no pickle anywhere.

**Atomic query-and-add (optimistic, never two keepers).** Verifying a candidate (Hamming
distance, Jaccard estimate) is Python, so the check cannot run inside Redis. Instead one Lua
script, :data:`_INDEX_LUA`, takes the lengths of the document's buckets that the client has
already verified ("everything up to byte n of bucket b"). In one atomic step it compares them
with the buckets' current lengths: if no bucket grew, nobody added a document that could
match since the client looked, and the script adds the document to all its buckets; if some
grew, it adds nothing and returns just the newcomers (ids past the client's lengths, with
their signatures). The client verifies those, stops if one matches (a duplicate), else sends
the new lengths and tries again. The first call passes no lengths (all zero), so a document
whose buckets are empty costs one round trip. Two processes that see near-duplicates A and B
at once: Redis runs their scripts one after the other; the first adds A, the second sees its
buckets grew, gets A, verifies it and reports B as a duplicate. A bucket only ever grows
(append-only), so "same length" means "same content"; a retry happens only when another
writer made progress, so the loop ends. Nothing is locked, so a crawler that dies mid-way
leaves nothing to clean up. Adding a key that is already indexed does nothing, which makes a
call retried after a lost reply harmless.

**URL filter.** A scalable Bloom filter like :class:`scrapy_neardup.urls.ScalableBloomFilter`
(stage j holds ``capacity * growth**j`` URLs at ``error_rate * (1 - tightening) *
tightening**j``), its bits in Redis bitmaps of at most :data:`CHUNK_BITS` bits per key (far
from Redis's 512 MB string limit). The client computes the bit positions of every stage
(double hashing of the 128-bit URL fingerprint); :data:`_BLOOM_LUA` tests and sets a batch of
URLs atomically in one EVALSHA and starts a new stage when the newest is full. With the
RedisBloom module loaded (``MODULE LIST`` shows ``bf``), ``BF.ADD``/``BF.MADD`` are used instead.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from scrapy_neardup.algorithms.base import Verifier
from scrapy_neardup.exceptions import StateError, StorageError
from scrapy_neardup.urls import _MAX_STAGE_RATE, _bloom_size

try:
    import redis
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise StorageError(
        "NEARDUP_STORAGE='redis' needs the redis package: pip install 'scrapy-neardup[redis]'"
    ) from exc

FORMAT = "1"
#: Bits per bitmap key: 2**29 bits = 64 MiB, an eighth of Redis's 512 MB string limit.
CHUNK_BITS = 1 << 29
#: URLs per EVALSHA of the Bloom script (Redis serves nobody else while a script runs).
BLOOM_BATCH = 1000

#: What "Redis is unavailable" looks like (a bug in a script is a ResponseError, not this).
REDIS_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError (restarting, loading data)
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,  # a failover left us talking to a replica
)


def connect(url: str, timeout: float = 5.0, retries: int = 2) -> redis.Redis:
    """A client for ``url`` with timeouts and redis-py's retry with jittered backoff.

    ``retries=0`` for calls that must not run twice (see :class:`RedisBloomFilter`).
    """
    return redis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=min(timeout, 2.0),
        retry=Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries),
        retry_on_error=[redis.exceptions.ConnectionError, redis.exceptions.TimeoutError],
        health_check_interval=30,
    )


def key_base(prefix: str) -> str:
    return f"{prefix}:neardup"


def scan_pattern(prefix: str) -> str:
    """SCAN pattern of one crawl's keys, with glob characters of the prefix escaped."""
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in prefix)
    return f"{escaped}:neardup:*"


def delete_prefix(client: redis.Redis, prefix: str) -> int:
    """Delete the keys of one crawl (SCAN on its pattern, UNLINK in batches); returns how many."""
    deleted = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=scan_pattern(prefix), count=1000):
        batch.append(key)
        if len(batch) >= 500:
            deleted += client.unlink(*batch)
            batch.clear()
    if batch:
        deleted += client.unlink(*batch)
    return deleted


def find_prefixes(client: redis.Redis) -> list[str]:
    """Prefixes of every crawl in this Redis database (by their meta keys)."""
    out = {
        key.decode("utf-8", "replace").rsplit(":neardup:meta", 1)[0]
        for key in client.scan_iter(match="*:neardup:meta", count=1000)
    }
    return sorted(out)


def check_meta(client: redis.Redis, prefix: str, field: str, expected: dict[str, Any]) -> None:
    """Record the parameters of a part of the state, or check them against the recorded ones.

    Signatures or Bloom bits made with other parameters would silently never match, so a
    difference is a :class:`StateError`, as with the file state.
    """
    meta = f"{key_base(prefix)}:meta"
    wanted = json.loads(json.dumps(expected, sort_keys=True))
    client.hsetnx(meta, "format", FORMAT)
    client.hsetnx(meta, field, json.dumps(wanted, sort_keys=True))
    found_format, found = client.hmget(meta, ["format", field])
    if found_format is not None and found_format.decode() != FORMAT:
        raise StateError(
            f"Redis keys {prefix}:neardup:* have format {found_format.decode()}, "
            f"this release uses {FORMAT}"
        )
    stored = json.loads(found) if found is not None else wanted
    for name in sorted(set(wanted) | set(stored)):
        if stored.get(name) != wanted.get(name):
            raise StateError(
                f"Redis state under prefix {prefix!r} was written with {name}="
                f"{stored.get(name)!r}, configured {name}={wanted.get(name)!r}; use the same "
                f"settings, another NEARDUP_KEY_PREFIX, or reset it with "
                f"`scrapy neardup-stats --redis-url URL --key-prefix {prefix} --reset`"
            )


# -- content indexes ------------------------------------------------------------------------

_INDEX_LUA = """
-- KEYS[1] docs hash, KEYS[2] ids hash, KEYS[3] id counter, KEYS[4..] the document's buckets
-- ARGV[1] key, ARGV[2] packed document, ARGV[3] mode: add | query | force,
-- ARGV[4] probe (0: every bucket), ARGV[5..] per bucket the length already verified
-- (-1: not watched); absent on a first call, which watches every bucket (or the `probe`
-- least filled ones) from its start.
-- Returns {1} added, {2} key already indexed, or {0, lengths, newcomers' packed docs}.
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
if #ARGV == 4 then
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
  for i = 1, nb do was[i] = tonumber(ARGV[4 + i]) end
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
        if not have[id] then have[id] = true; fresh[#fresh + 1] = id end
      end
    end
  end
end
if #fresh == 0 then
  if mode == 'add' then return add() end
  return {0, lengths, {}}
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
    (length,) = struct.unpack_from("<I", data)
    if 4 + length > len(data):
        raise StateError("corrupt document record in Redis")
    return data[4 : 4 + length].decode("utf-8", "surrogatepass"), data[4 + length :]


class RedisBucketStore:
    """A :class:`~scrapy_neardup.algorithms.base.BucketStore` in Redis, safe for many writers.

    ``codec`` is the method (its ``encode``/``decode``); nothing else of it is used. See the
    module docstring for the keys and for why :meth:`query_and_add` never lets two processes
    both keep a near-duplicate pair.
    """

    def __init__(self, client: redis.Redis, prefix: str, name: str, codec: Any) -> None:
        self.client = client
        self.codec = codec
        self.base = f"{key_base(prefix)}:{name}"
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
        return self._script(keys=keys, args=[key, doc, mode, probe, *lengths])

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
                other, data = _unpack_doc(packed)
                if other in checked or other == key:
                    continue
                checked.add(other)
                similarity = verify(self.codec.decode(data))
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

    def items(self) -> Iterator[tuple[str, Any]]:
        for _, packed in self.client.hscan_iter(self._docs, count=1000):
            key, data = _unpack_doc(packed)
            yield key, self.codec.decode(data)

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

    def head(self, key: str, signed: Any) -> None:
        pass

    def member(self, member: Any) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(
            self.members, member.key, pack_member(member.head, member.method, member.similarity)
        )
        pipe.hincrby(self.counts, f"duplicates/{member.method}", 1)
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
    (n,) = struct.unpack_from("<I", data)
    head = data[4 : 4 + n].decode("utf-8", "surrogatepass")
    pos = 4 + n
    (n,) = struct.unpack_from("<I", data, pos)
    method = data[pos + 4 : pos + 4 + n].decode()
    (similarity,) = struct.unpack_from("<d", data, pos + 4 + n)
    return head, method, similarity


# -- URL filter -------------------------------------------------------------------------------

_BLOOM_LUA = """
-- KEYS[1] the filter's hash (stages, count, count:<j>)
-- ARGV[1] bitmap key prefix, ARGV[2] bits per bitmap key, ARGV[3] S: stages described,
-- then S triples (capacity, k, bits), then for each URL the k positions of each of the S
-- stages. A stage's bitmaps are allocated whole when it starts (setting their last bit to 0),
-- as growing a string bit by bit lets Redis over-allocate it up to twice.
-- Tests and sets each URL in turn; stops early if a new stage is needed that the client did
-- not describe. Returns {stages, {1 = seen before | 0 = added, ...}, count of the newest}.
local h, prefix, chunk, S = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local cap, k, bits, a, per_url = {}, {}, {}, 4, 0
for j = 0, S - 1 do
  cap[j] = tonumber(ARGV[a]); k[j] = tonumber(ARGV[a + 1]); bits[j] = tonumber(ARGV[a + 2])
  a = a + 3
  per_url = per_url + k[j]
end
local n = (#ARGV - a + 1) / per_url
local function allocate(j)
  local c = 0
  while c * chunk < bits[j] do
    local key = prefix .. j .. ':' .. c
    if redis.call('EXISTS', key) == 0 then
      redis.call('SETBIT', key, math.min(chunk, bits[j] - c * chunk) - 1, 0)
    end
    c = c + 1
  end
end
local raw = redis.call('HGET', h, 'stages')
if not raw then
  allocate(0)
  redis.call('HSET', h, 'stages', 1)
end
local stages = tonumber(raw or '1')
local cur = stages - 1
local count = tonumber(redis.call('HGET', h, 'count:' .. cur) or '0')
local out = {}
local function key_of(j, p)
  local c = math.floor(p / chunk)
  return prefix .. j .. ':' .. c, p - c * chunk
end
for u = 0, n - 1 do
  if stages > S then break end
  local pos, start, seen = a + u * per_url, {}, false
  for j = 0, S - 1 do
    start[j] = pos
    if j < stages and not seen then
      seen = true
      for i = 0, k[j] - 1 do
        local key, off = key_of(j, tonumber(ARGV[pos + i]))
        if redis.call('GETBIT', key, off) == 0 then seen = false; break end
      end
    end
    pos = pos + k[j]
  end
  if seen then
    out[#out + 1] = 1
  else
    if count >= cap[cur] then
      if stages >= S then break end
      stages, cur, count = stages + 1, cur + 1, 0
      allocate(cur)
      redis.call('HSET', h, 'stages', stages)
    end
    local sets, order = {}, {}  -- one BITFIELD per bitmap key, not one SETBIT per bit
    for i = 0, k[cur] - 1 do
      local key, off = key_of(cur, tonumber(ARGV[start[cur] + i]))
      if not sets[key] then sets[key] = {}; order[#order + 1] = key end
      local ops = sets[key]
      ops[#ops + 1] = 'SET'; ops[#ops + 1] = 'u1'; ops[#ops + 1] = off; ops[#ops + 1] = 1
    end
    for _, key in ipairs(order) do redis.call('BITFIELD', key, unpack(sets[key])) end
    count = count + 1
    redis.call('HSET', h, 'count:' .. cur, count)
    redis.call('HINCRBY', h, 'count', 1)
    out[#out + 1] = 0
  end
end
return {stages, out, count}
"""


def stage_params(
    capacity: int, error_rate: float, stage: int, growth: int = 2, tightening: float = 0.5
) -> tuple[int, int, int]:
    """(capacity, bits, hash functions) of a stage, as ScalableBloomFilter sizes its stages."""
    cap = capacity * growth**stage
    rate = min(error_rate * (1.0 - tightening) * tightening**stage, _MAX_STAGE_RATE)
    bits, k = _bloom_size(cap, rate)
    return cap, max(64, math.ceil(bits)), max(1, k)


class RedisBloomFilter:
    """Scalable Bloom filter in Redis bitmaps; ``add`` is an atomic test-and-set.

    Its client must not retry a call on its own (``connect(..., retries=0)``): a script run
    twice, because its reply was lost, would report a URL it just added as seen, and the URL
    would never be crawled. A failed call is reported to the caller instead.
    """

    def __init__(
        self,
        client: redis.Redis,
        prefix: str,
        capacity: int,
        error_rate: float,
        *,
        growth: int = 2,
        tightening: float = 0.5,
        chunk_bits: int = CHUNK_BITS,
    ) -> None:
        self.client = client
        self.capacity, self.error_rate = capacity, float(error_rate)
        self.growth, self.tightening = growth, tightening
        self.chunk_bits = chunk_bits
        self.hash_key = f"{key_base(prefix)}:urls"
        self.bitmap_prefix = f"{key_base(prefix)}:urls:"
        self._script = client.register_script(_BLOOM_LUA)
        self._stages: list[tuple[int, int, int]] = []
        self._known = 1  # stages the client last heard of
        self._known_count = 0  # and the newest one's count
        self.calls = 0

    def params(self) -> dict[str, Any]:
        return {
            "impl": "bitmaps",
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "growth": self.growth,
            "tightening": self.tightening,
            "chunk_bits": self.chunk_bits,
            "hash": "xxh3_128 double hashing",
        }

    def _stage(self, j: int) -> tuple[int, int, int]:
        while len(self._stages) <= j:
            self._stages.append(
                stage_params(
                    self.capacity, self.error_rate, len(self._stages), self.growth, self.tightening
                )
            )
        return self._stages[j]

    def _positions(self, fingerprint: bytes, stages: int) -> list[int]:
        h1 = int.from_bytes(fingerprint[:8], "little")
        h2 = int.from_bytes(fingerprint[8:16], "little") | 1
        out: list[int] = []
        for j in range(stages):
            _, bits, k = self._stage(j)
            out.extend((h1 + i * h2) % bits for i in range(k))
        return out

    def add(self, fingerprint: bytes) -> bool:
        """Test and set: True if ``fingerprint`` was (probably) there already, else add it."""
        return self.add_many([fingerprint])[0]

    def add_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        """Test and set many in as few round trips as possible (one per BLOOM_BATCH)."""
        out: list[bool] = []
        todo = list(fingerprints)
        while todo:
            batch = todo[:BLOOM_BATCH]
            # The next stage is described too when this batch may fill the newest one (other
            # writers may fill it first: then the script stops early and the rest is resent).
            full = self._known_count + len(batch) >= self._stage(self._known - 1)[0]
            stages = self._known + full
            args: list[Any] = [self.bitmap_prefix, self.chunk_bits, stages]
            for j in range(stages):
                cap, bits, k = self._stage(j)
                args += [cap, k, bits]
            for fp in batch:
                args += self._positions(fp, stages)
            self.calls += 1
            known, results, count = self._script(keys=[self.hash_key], args=args)
            self._known, self._known_count = int(known), int(count)
            out += [bool(r) for r in results]
            todo = todo[len(results) :]
        return out

    def __contains__(self, fingerprint: bytes) -> bool:
        stages = self.stages
        pipe = self.client.pipeline(transaction=False)
        positions = self._positions(fingerprint, stages)
        i = 0
        for j in range(stages):
            for _ in range(self._stage(j)[2]):
                p = positions[i]
                pipe.getbit(f"{self.bitmap_prefix}{j}:{p // self.chunk_bits}", p % self.chunk_bits)
                i += 1
        bits = pipe.execute()
        i = 0
        for j in range(stages):
            k = self._stage(j)[2]
            if all(bits[i : i + k]):
                return True
            i += k
        return False

    def _counts(self) -> dict[str, int]:
        return {k.decode(): int(v) for k, v in self.client.hgetall(self.hash_key).items()}

    @property
    def stages(self) -> int:
        return self._counts().get("stages", 1)

    def __len__(self) -> int:
        return self._counts().get("count", 0)

    @property
    def size_in_bytes(self) -> int:
        """Bytes the bitmaps take when full (Redis allocates a bitmap up to its highest bit)."""
        return sum(self._stage(j)[1] for j in range(self.stages)) // 8

    def info(self) -> dict[str, Any]:
        counts = self._counts()
        stages = counts.get("stages", 1)
        miss, fill = 1.0, 0.0
        for j in range(stages):
            _, bits, k = self._stage(j)
            fill = -math.expm1(-k * counts.get(f"count:{j}", 0) / bits)
            miss *= 1.0 - fill**k
        size = sum(self._stage(j)[1] for j in range(stages)) // 8
        return {
            "impl": "bitmaps",
            "seen": counts.get("count", 0),
            "bloom_bytes": size,
            "stages": stages,
            "fill_ratio": fill,
            "expected_false_positive_rate": 1.0 - miss,
        }


class RedisBloomModuleFilter:
    """The same filter on RedisBloom's ``BF.*`` commands, when the server has the module.

    ``BF.ADD`` is itself an atomic test-and-set, and RedisBloom grows by stages (EXPANSION).
    Not exercised by the tests: the Debian ``redis-server`` has no modules.
    """

    def __init__(
        self, client: redis.Redis, prefix: str, capacity: int, error_rate: float, growth: int = 2
    ) -> None:
        self.client = client
        self.key = f"{key_base(prefix)}:urls:bf"
        self.capacity, self.error_rate, self.growth = capacity, float(error_rate), growth
        self.calls = 0
        self._reserved = False

    def params(self) -> dict[str, Any]:
        return {
            "impl": "redisbloom",
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "growth": self.growth,
        }

    def _reserve(self) -> None:
        if self._reserved:
            return
        try:
            self.client.execute_command(
                "BF.RESERVE", self.key, self.error_rate, self.capacity, "EXPANSION", self.growth
            )
        except redis.exceptions.ResponseError as exc:
            if "exists" not in str(exc).lower():
                raise
        self._reserved = True

    def add(self, fingerprint: bytes) -> bool:
        self._reserve()
        self.calls += 1
        return not self.client.execute_command("BF.ADD", self.key, fingerprint)

    def add_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        self._reserve()
        out: list[bool] = []
        for start in range(0, len(fingerprints), BLOOM_BATCH):
            self.calls += 1
            added = self.client.execute_command(
                "BF.MADD", self.key, *fingerprints[start : start + BLOOM_BATCH]
            )
            out += [not a for a in added]
        return out

    def __contains__(self, fingerprint: bytes) -> bool:
        return bool(self.client.execute_command("BF.EXISTS", self.key, fingerprint))

    def _bf_info(self) -> dict[str, int]:
        try:
            raw = self.client.execute_command("BF.INFO", self.key)
        except redis.exceptions.ResponseError:
            return {}
        pairs = dict(zip(raw[::2], raw[1::2], strict=True)) if isinstance(raw, list) else dict(raw)
        return {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in pairs.items()}

    def __len__(self) -> int:
        return int(self._bf_info().get("Number of items inserted", 0))

    @property
    def stages(self) -> int:
        return int(self._bf_info().get("Number of filters", 1))

    @property
    def size_in_bytes(self) -> int:
        return int(self._bf_info().get("Size", 0))

    def info(self) -> dict[str, Any]:
        info = self._bf_info()
        return {
            "impl": "redisbloom",
            "seen": int(info.get("Number of items inserted", 0)),
            "bloom_bytes": int(info.get("Size", 0)),
            "stages": int(info.get("Number of filters", 1)),
            "fill_ratio": None,
            "expected_false_positive_rate": None,
        }


def has_bloom_module(client: redis.Redis) -> bool:
    """Whether the server has RedisBloom loaded (False when MODULE LIST is not allowed)."""
    try:
        modules = client.execute_command("MODULE LIST")
    except redis.exceptions.ResponseError:
        return False
    for module in modules or ():
        fields = (
            module
            if isinstance(module, dict)
            else dict(zip(module[::2], module[1::2], strict=True))
        )
        name = fields.get(b"name", fields.get("name", b""))
        if (name.decode() if isinstance(name, bytes) else str(name)).lower() in (
            "bf",
            "redisbloom",
        ):
            return True
    return False


def url_filter(
    client: redis.Redis,
    prefix: str,
    capacity: int,
    error_rate: float,
    *,
    use_module: bool | None = None,
) -> RedisBloomFilter | RedisBloomModuleFilter:
    """The crawl's URL filter: the one its meta names, else RedisBloom if loaded, else bitmaps."""
    recorded = client.hget(f"{key_base(prefix)}:meta", "urls")
    if use_module is None:
        if recorded is not None:
            use_module = json.loads(recorded).get("impl") == "redisbloom"
        else:
            use_module = has_bloom_module(client)
    if use_module:
        return RedisBloomModuleFilter(client, prefix, capacity, error_rate)
    return RedisBloomFilter(client, prefix, capacity, error_rate)


def members(client: redis.Redis, prefix: str) -> Iterable[tuple[str, str, str, float]]:
    """(duplicate, head, method, similarity) of every recorded duplicate."""
    for key, packed in client.hscan_iter(f"{key_base(prefix)}:members", count=1000):
        yield (key.decode("utf-8", "surrogatepass"), *unpack_member(packed))
