"""Fixed-window request counters shared by every process through the cache (Redis in production).

One counter per (subject, minute). With Redis the increment and its expiry travel in one
pipelined round trip; other cache backends fall back to Django's add/incr.
"""

import math
import time
from dataclasses import dataclass

from django.core.cache import cache

from config.cache import cache_key, redis_client

WINDOW_SECONDS = 60


@dataclass(frozen=True)
class WindowState:
    limit: int
    count: int
    reset_in: int  # seconds until the window ends

    @property
    def allowed(self) -> bool:
        return self.count <= self.limit

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)


def _incr_redis(client, key: str, ttl: int, cost: int) -> int:
    full_key = cache_key(key)
    pipe = client.pipeline(transaction=False)
    pipe.incrby(full_key, cost)
    pipe.expire(full_key, ttl)
    count, _ = pipe.execute()
    return int(count)


def _incr_generic(key: str, ttl: int, cost: int) -> int:
    if cache.add(key, cost, ttl):
        return cost
    try:
        return cache.incr(key, cost)
    except ValueError:  # expired between add and incr
        cache.add(key, cost, ttl)
        return cost


def hit(subject: str, limit: int, window: int = WINDOW_SECONDS, cost: int = 1) -> WindowState:
    """Count `cost` requests for `subject` in the current window and report the window's state."""
    now = time.time()
    window_start = int(now // window) * window
    key = f"rl:{subject}:{window_start}"
    ttl = window + 5
    client = redis_client()
    count = _incr_redis(client, key, ttl, cost) if client is not None else _incr_generic(key, ttl, cost)
    return WindowState(limit=limit, count=count, reset_in=max(1, math.ceil(window_start + window - now)))
