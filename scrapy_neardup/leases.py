"""scrapy-redis's scheduler, losing no request when a worker dies:
``SCHEDULER = "scrapy_neardup.leases.LeasingScheduler"``.

A popped request stays in Redis, leased to its worker, until the worker acknowledges it at a
sync once the engine is done with it; the requests of a worker silent for
``NEARDUP_LEASE_TIMEOUT`` seconds go back in the queue. Keys beside the queue ``Q``:
``Q:leases``, ``Q:leased``, ``Q:reclaimed``. Rationale: ``docs/design.md#leases``.
"""

from __future__ import annotations

import logging
import uuid
from itertools import count
from typing import Any

from scrapy_neardup.exceptions import StorageError
from scrapy_neardup.feeds import sync_feeds
from scrapy_neardup.meta import LEASE_META, RECOVERED_META
from scrapy_neardup.state import crawl_state
from scrapy_neardup.twisted_futures import call_every

try:
    from scrapy_redis.queue import PriorityQueue
    from scrapy_redis.scheduler import Scheduler
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise StorageError("LeasingScheduler needs scrapy-redis: pip install scrapy-redis") from exc

logger = logging.getLogger(__name__)

#: Acknowledgements per script call.
ACK_BATCH = 1000

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# Puts the requests leased to ``worker`` back in the queue (KEYS[1]), marked in KEYS[4].
_PUT_BACK = """
local function put_back(worker)
  local n, cursor = 0, '0'
  repeat
    local page = redis.call('HSCAN', KEYS[3], cursor, 'MATCH', worker .. ':*', 'COUNT', 1000)
    cursor = page[1]
    for i = 1, #page[2], 2 do
      local value = page[2][i + 1]
      local cut = string.find(value, ' ', 1, true)
      local data = string.sub(value, cut + 1)
      redis.call('ZADD', KEYS[1], tonumber(string.sub(value, 1, cut - 1)), data)
      redis.call('SADD', KEYS[4], data)
      redis.call('HDEL', KEYS[3], page[2][i])
      n = n + 1
    end
  until cursor == '0'
  redis.call('ZREM', KEYS[2], worker)
  return n
end
"""
# KEYS: queue, leases, leased, reclaimed; ARGV: worker, lease ms, lease id.
# Returns {requests put back, data, whether it was put back} ({n} when the queue is empty).
_POP_LUA = (
    _NOW
    + _PUT_BACK
    + """
local back = 0
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)) do
  if dead ~= ARGV[1] then back = back + put_back(dead) end
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
local top = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #top == 0 then return {back} end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
redis.call('HSET', KEYS[3], ARGV[3], top[2] .. ' ' .. top[1])
return {back, top[1], redis.call('SREM', KEYS[4], top[1])}
"""
)
# KEYS: leases, leased; ARGV: worker, lease ms, lease ids acknowledged.
_RENEW_LUA = (
    _NOW
    + """
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if #ARGV > 2 then redis.call('HDEL', KEYS[2], unpack(ARGV, 3)) end
return 0
"""
)
# KEYS: queue, leases, leased, reclaimed; ARGV: worker. Returns the requests put back.
_RELEASE_LUA = _PUT_BACK + "return put_back(ARGV[1])"


class LeasedQueue(PriorityQueue):
    """scrapy-redis's priority queue (a sorted set) whose :meth:`pop` leases each request
    to this worker (see the module docstring); its length counts the requests leased to any
    worker, so that a worker stays to take back those of a dead one."""

    def __init__(self, server: Any, spider: Any, key: str, serializer: Any = None) -> None:
        super().__init__(server, spider, key, serializer)
        self.worker = uuid.uuid4().hex
        self.lease_ms = 60_000
        #: The queue, ``leases``, ``leased`` and ``reclaimed``: the scripts' KEYS.
        self.keys = [self.key, *(f"{self.key}:{n}" for n in ("leases", "leased", "reclaimed"))]
        self.leases, self.leased, self.reclaimed = self.keys[1:]
        self.put_back = 0  # requests of dead workers this one put back in the queue
        self._ids = count(1)
        self._pop = server.register_script(_POP_LUA)
        self._renew = server.register_script(_RENEW_LUA)
        self._release = server.register_script(_RELEASE_LUA)

    def __len__(self) -> int:
        pipe = self.server.pipeline(transaction=False)
        pipe.zcard(self.key)
        pipe.hlen(self.leased)
        return sum(pipe.execute())

    def pop(self, timeout: int = 0) -> Any:
        lease = f"{self.worker}:{next(self._ids)}"
        reply = self._pop(keys=self.keys, args=[self.worker, self.lease_ms, lease])
        self.put_back += int(reply[0])
        if len(reply) == 1:
            return None
        request = self._decode_request(reply[1])
        request.meta[LEASE_META] = lease
        if reply[2]:  # a dead worker's: its URL was recorded, its items may be lost
            request.meta[RECOVERED_META] = request.url
        return request

    def renew(self, done: list[str]) -> None:
        """Renew this worker's lease; the leases ``done`` are acknowledged."""
        for start in range(0, max(len(done), 1), ACK_BATCH):
            batch = done[start : start + ACK_BATCH]
            self._renew(keys=[self.leases, self.leased], args=[self.worker, self.lease_ms, *batch])

    def release(self) -> int:
        """This worker leaves: what is still leased to it goes back in the queue."""
        return int(self._release(keys=self.keys, args=[self.worker]))

    def clear(self) -> None:
        self.server.delete(*self.keys)


class LeasingScheduler(Scheduler):
    """scrapy-redis's :class:`~scrapy_redis.scheduler.Scheduler` on a :class:`LeasedQueue`
    (``SCHEDULER_QUEUE_CLASS`` is not read), with scrapy-redis's settings and the plugin's
    (``NEARDUP_LEASE_TIMEOUT``, ``NEARDUP_FLUSH_INTERVAL``).

    Example::

        SCHEDULER = "scrapy_neardup.leases.LeasingScheduler"
        SCHEDULER_PERSIST = True
        DUPEFILTER_CLASS = "scrapy_neardup.NearDupDupeFilter"
    """

    queue: LeasedQueue

    @classmethod
    def from_crawler(cls, crawler: Any) -> LeasingScheduler:
        scheduler = super().from_crawler(crawler)
        scheduler.queue_cls = f"{LeasedQueue.__module__}.{LeasedQueue.__qualname__}"
        scheduler.crawler = crawler
        return scheduler

    def open(self, spider: Any) -> Any:
        self._state = state = crawl_state(self.crawler)
        self._done: list[str] = []
        self._sync_failed = False
        result = super().open(spider)
        self.queue.lease_ms = round(state.config.lease_timeout * 1000)
        self.queue.renew([])
        self._watch_engine(self.crawler.engine)
        period = max(min(state.config.flush_interval, state.config.lease_timeout / 3), 0.1)
        self._stop_syncs = call_every(period, self._sync)
        return result

    def _watch_engine(self, engine: Any) -> None:
        """Have a request's lease acknowledged (at the next sync) when the engine removes it
        from its slot: after its response and items, or its failure, went through
        (``_handle_downloader_output``), a redirect or retry queued again. Not public API
        (the module docstring)."""
        slot = engine._slot
        remove = slot.remove_request

        def removed(request: Any) -> None:
            remove(request)
            lease = request.meta.get(LEASE_META)
            if lease:
                self._done.append(lease)

        slot.remove_request = removed

    def enqueue_request(self, request: Any) -> bool:
        request.meta.pop(LEASE_META, None)  # a redirect or retry: a request of its own
        return super().enqueue_request(request)

    def next_request(self) -> Any:
        back = self.queue.put_back
        request = super().next_request()
        if self.queue.put_back > back:
            self.stats.inc_value("neardup/leases/reclaimed", self.queue.put_back - back)
        if request is not None and request.meta.get(RECOVERED_META) == request.url:
            self._state.crawled_again(request.url)
        return request

    def has_pending_requests(self) -> bool:
        """Whether requests wait in the queue or are leased to any worker, this worker's done
        ones acknowledged first: a worker whose last requests are done does not wait for its
        next sync and the engine's next idle check (5 s) to find the crawl over."""
        if self._done:
            self._sync()
        return super().has_pending_requests()

    def _sync(self) -> None:
        """The feed files made durable, then the requests done acknowledged and the lease
        renewed (a failure is logged once and tried again at the next sync)."""
        done, self._done = self._done, []
        try:
            if done:
                sync_feeds(self.crawler)
            self.queue.renew(done)
        except Exception:
            self._done[:0] = done
            if not self._sync_failed:
                self._sync_failed = True
                logger.exception("scrapy-neardup: leases could not be renewed (retried)")

    def close(self, reason: str) -> Any:
        """Acknowledges what is done; what is left leased goes back in the queue (nothing,
        after a clean close: the engine finished every request it took)."""
        self._stop_syncs()
        self._sync()
        left = self.queue.release()
        if left:
            self.stats.inc_value("neardup/leases/released", left)
        return super().close(reason)
