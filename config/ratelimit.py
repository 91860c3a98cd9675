"""Fixed-window request counters shared by every process through the cache (Redis in production).

One counter per (subject, minute). With Redis the increment and its expiry travel in one
pipelined round trip; other cache backends fall back to Django's add/incr.
"""

import math
import time
from dataclasses import dataclass

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

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


def _incr_redis(key: str, ttl: int) -> int:
    cache_key = cache.make_and_validate_key(key)
    client = cache._cache.get_client(cache_key, write=True)
    pipe = client.pipeline()
    pipe.incr(cache_key)
    pipe.expire(cache_key, ttl)
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
    # `cache` is a proxy; the backend object behind it tells whether Redis can take the pipelined path.
    count = _incr_redis(key, ttl) if isinstance(caches["default"], RedisCache) else _incr_generic(key, ttl)
    return WindowState(limit=limit, count=count, reset_in=max(1, math.ceil(window_start + window - now)))
