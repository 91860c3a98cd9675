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


def _incr_redis(client, key: str, ttl: int) -> int:
    full_key = cache_key(key)
    pipe = client.pipeline(transaction=False)
    pipe.incr(full_key)
    pipe.expire(full_key, ttl)
    count, _ = pipe.execute()
    return int(count)


def _incr_generic(key: str, ttl: int) -> int:
    if cache.add(key, 1, ttl):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, ttl)
        return 1


def hit(subject: str, limit: int, window: int = WINDOW_SECONDS) -> WindowState:
    """Count one request for `subject` in the current window and report the window's state."""
    now = time.time()
    window_start = int(now // window) * window
    key = f"rl:{subject}:{window_start}"
    ttl = window + 5
    client = redis_client()
    count = _incr_redis(client, key, ttl) if client is not None else _incr_generic(key, ttl)
    return WindowState(limit=limit, count=count, reset_in=max(1, math.ceil(window_start + window - now)))
