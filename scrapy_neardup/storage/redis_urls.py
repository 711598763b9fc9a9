"""URL filters in Redis, shared by many crawler processes.

A scalable Bloom filter like :class:`scrapy_neardup.storage.bloom.ScalableBloomFilter`, its
bits in Redis bitmaps of at most :data:`CHUNK_BITS` bits per key; :data:`_BLOOM_LUA` tests and
sets a batch of URLs atomically in one EVALSHA (RedisBloom's ``BF.MADD`` where loaded).
Rationale: ``docs/design.md#url-filter-in-redis``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from scrapy_neardup.storage.bloom import MAX_STAGE_RATE, bloom_size

# ``redis`` through redis_client: without the package, that import says what to install.
from scrapy_neardup.storage.redis_client import glob_escape, key_base, part_base, redis, unlink

#: Bits per bitmap key: 2**29 bits = 64 MiB, an eighth of Redis's 512 MB string limit.
CHUNK_BITS = 1 << 29
#: URLs per EVALSHA of the Bloom script (Redis serves nobody else while a script runs).
BLOOM_BATCH = 1000
#: Stages grow ``GROWTH`` times, at ``TIGHTENING`` times the error rate, as
#: :class:`~scrapy_neardup.storage.bloom.ScalableBloomFilter`'s do.
GROWTH, TIGHTENING = 2, 0.5

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


class UrlFilter:
    """What both filters share: ``add`` is an atomic test-and-set; sizes come from :meth:`info`."""

    #: The implementation's name, in :meth:`params` and :meth:`info`.
    impl: str

    def __init__(self, client: Any, capacity: int, error_rate: float) -> None:
        self.client = client
        self.capacity, self.error_rate = capacity, float(error_rate)

    def params(self) -> dict[str, Any]:
        """What the filter was made with, recorded in the crawl's meta."""
        return {
            "impl": self.impl,
            "capacity": self.capacity,
            "error_rate": self.error_rate,
            "growth": GROWTH,
        }

    def add_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        raise NotImplementedError

    def add(self, fingerprint: bytes) -> bool:
        """Test and set: True if ``fingerprint`` was (probably) there already, else add it."""
        return self.add_many([fingerprint])[0]

    def __len__(self) -> int:
        return int(self.info()["seen"])

    @property
    def stages(self) -> int:
        return int(self.info()["stages"])

    @property
    def size_in_bytes(self) -> int:
        """Bytes the filter takes (bitmaps: once full, as Redis allocates up to the last bit)."""
        return int(self.info()["bloom_bytes"])


class RedisBloomFilter(UrlFilter):
    """Scalable Bloom filter in Redis bitmaps. Its client must not retry a call
    (``connect(..., retries=0)``): a script run twice, its reply lost, would report a URL it
    just added as seen, never to be crawled; a failed call is raised instead."""

    impl = "bitmaps"

    def __init__(
        self,
        client: Any,
        prefix: str,
        capacity: int,
        error_rate: float,
        *,
        chunk_bits: int = CHUNK_BITS,
    ) -> None:
        super().__init__(client, capacity, error_rate)
        self.chunk_bits = chunk_bits
        self.hash_key = part_base(prefix, "urls")
        self._script = client.register_script(_BLOOM_LUA)
        self._stages: list[tuple[int, int, int]] = []
        self._known = 1  # stages the client last heard of
        self._known_count = 0  # and the newest one's count

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            "tightening": TIGHTENING,
            "chunk_bits": self.chunk_bits,
            "hash": "xxh3_128 double hashing",
        }

    def _stage(self, j: int) -> tuple[int, int, int]:
        """(capacity, bits, hash functions) of stage ``j``."""
        while len(self._stages) <= j:
            n = len(self._stages)
            rate = min(self.error_rate * (1 - TIGHTENING) * TIGHTENING**n, MAX_STAGE_RATE)
            bits, k = bloom_size(self.capacity * GROWTH**n, rate)
            self._stages.append((self.capacity * GROWTH**n, max(64, math.ceil(bits)), max(1, k)))
        return self._stages[j]

    def _positions(self, fingerprint: bytes, stages: int) -> list[int]:
        h1 = int.from_bytes(fingerprint[:8], "little")
        h2 = int.from_bytes(fingerprint[8:16], "little") | 1
        out: list[int] = []
        for j in range(stages):
            _, bits, k = self._stage(j)
            out.extend((h1 + i * h2) % bits for i in range(k))
        return out

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
            args: list[Any] = [f"{self.hash_key}:", self.chunk_bits, stages]
            for j in range(stages):
                cap, bits, k = self._stage(j)
                args += [cap, k, bits]
            for fp in batch:
                args += self._positions(fp, stages)
            known, results, count = self._script(keys=[self.hash_key], args=args)
            self._known, self._known_count = int(known), int(count)
            out += [bool(r) for r in results]
            todo = todo[len(results) :]
        return out

    def __contains__(self, fingerprint: bytes) -> bool:
        stages = self.stages
        owners = [j for j in range(stages) for _ in range(self._stage(j)[2])]
        pipe = self.client.pipeline(transaction=False)
        for j, p in zip(owners, self._positions(fingerprint, stages), strict=True):
            pipe.getbit(f"{self.hash_key}:{j}:{p // self.chunk_bits}", p % self.chunk_bits)
        bits = pipe.execute()
        return any(
            all(b for o, b in zip(owners, bits, strict=True) if o == j) for j in range(stages)
        )

    def info(self) -> dict[str, Any]:
        counts = {k: int(v) for k, v in _as_dict(self.client.hgetall(self.hash_key)).items()}
        stages = counts.get("stages", 1)
        miss, fill = 1.0, 0.0
        for j in range(stages):
            _, bits, k = self._stage(j)
            fill = -math.expm1(-k * counts.get(f"count:{j}", 0) / bits)
            miss *= 1.0 - fill**k
        return {
            "impl": self.impl,
            "seen": counts.get("count", 0),
            "bloom_bytes": sum(self._stage(j)[1] for j in range(stages)) // 8,
            "stages": stages,
            "fill_ratio": fill,
            "expected_false_positive_rate": 1.0 - miss,
        }


class RedisBloomModuleFilter(UrlFilter):
    """The same filter on RedisBloom's ``BF.*`` commands (``BF.MADD`` is an atomic
    test-and-set; stages grow by EXPANSION), when the server has the module."""

    impl = "redisbloom"

    def __init__(self, client: Any, prefix: str, capacity: int, error_rate: float) -> None:
        super().__init__(client, capacity, error_rate)
        self.key = f"{part_base(prefix, 'urls')}:bf"
        self._reserved = False

    def add_many(self, fingerprints: Sequence[bytes]) -> list[bool]:
        if not self._reserved:
            try:
                self.client.execute_command(
                    "BF.RESERVE", self.key, self.error_rate, self.capacity, "EXPANSION", GROWTH
                )
            except redis.exceptions.ResponseError as exc:
                if "exists" not in str(exc).lower():
                    raise
            self._reserved = True
        out: list[bool] = []
        for start in range(0, len(fingerprints), BLOOM_BATCH):
            batch = fingerprints[start : start + BLOOM_BATCH]
            out += [not added for added in self.client.execute_command("BF.MADD", self.key, *batch)]
        return out

    def __contains__(self, fingerprint: bytes) -> bool:
        return bool(self.client.execute_command("BF.EXISTS", self.key, fingerprint))

    def info(self) -> dict[str, Any]:
        try:
            raw = self.client.execute_command("BF.INFO", self.key)
        except redis.exceptions.ResponseError:
            raw = {}
        info = _as_dict(raw)
        return {
            "impl": self.impl,
            "seen": int(info.get("Number of items inserted", 0)),
            "bloom_bytes": int(info.get("Size", 0)),
            "stages": int(info.get("Number of filters", 1)),
            "fill_ratio": None,
            "expected_false_positive_rate": None,
        }


def _as_dict(reply: Any) -> dict[str, Any]:
    """A reply of field-value pairs (a flat list in RESP2, a map in RESP3), names as str."""
    pairs = dict(zip(reply[::2], reply[1::2], strict=True)) if isinstance(reply, list) else reply
    return {redis.utils.safe_str(k): v for k, v in pairs.items()}


def has_bloom_module(client: Any) -> bool:
    """Whether the server has RedisBloom loaded (False when MODULE LIST is not allowed)."""
    try:
        modules = client.execute_command("MODULE LIST")
    except redis.exceptions.ResponseError:
        return False
    names = {redis.utils.safe_str(_as_dict(m).get("name", "")).lower() for m in modules or ()}
    return bool(names & {"bf", "redisbloom"})


def url_filter(
    client: Any, prefix: str, capacity: int, error_rate: float
) -> RedisBloomFilter | RedisBloomModuleFilter:
    """The crawl's URL filter: the one its meta names, else RedisBloom if loaded, else bitmaps."""
    recorded = client.hget(f"{key_base(prefix)}:meta", "urls")
    if recorded is None:
        module = has_bloom_module(client)
    else:
        module = json.loads(recorded).get("impl") == "redisbloom"
    cls = RedisBloomModuleFilter if module else RedisBloomFilter
    return cls(client, prefix, capacity, error_rate)


def clear_url_filter(client: Any, prefix: str) -> int:
    """Delete the crawl's URL filter (every stage and bitmap, or the RedisBloom key) and its
    recorded parameters; the content indexes stay. Returns the number of keys deleted."""
    urls = part_base(prefix, "urls")
    deleted = unlink(
        client, [urls.encode(), *client.scan_iter(match=f"{glob_escape(urls)}:*", count=1000)]
    )
    client.hdel(f"{key_base(prefix)}:meta", "urls")
    return deleted
