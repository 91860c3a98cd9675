"""Direct access to the Redis client behind Django's cache, for the per-request hot path.

Django's RedisCache builds a new client object on every call, a cost paid on every request
(docs/performance.md, "Cached keys and the Redis client"); the limiter and
the JWT blocklist run on every authenticated request, so they reuse one client per process (redis-py
clients are thread-safe and share the cache's connection pool). Keys still go through the cache's
own key function, so prefixes and versions match what `cache.get`/`cache.set` use.
"""

import functools
import logging
import time

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

logger = logging.getLogger(__name__)


def redis_client():
    """The raw redis-py client of the default cache, or None when the cache is not Redis."""
    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    return _client_for(backend)


@functools.lru_cache(maxsize=64)
def _client_for(backend: RedisCache):
    # Keyed by backend object (Django keeps one per thread, and tests may swap CACHES): each gets
    # a client on its own connection pool.
    return backend._cache.get_client(write=True)


def cache_key(key: str) -> str:
    return caches["default"].make_and_validate_key(key)


# --- when Redis is unreachable -------------------------------------------------------------------
# After a failure, hot-path readers skip Redis for a few seconds (each process on its own) and use
# their database fallback, so a Redis that hangs costs one request its socket timeout, not every
# request. Which direction each user fails in: docs/decisions.md, "Faults: Redis".
REDIS_RETRY_SECONDS = 5.0
_skip_until = 0.0


def redis_skipped() -> bool:
    """Whether a recent failure says to leave Redis alone for now."""
    return time.monotonic() < _skip_until


def redis_failed(what: str, exc: Exception) -> None:
    """Note a Redis failure: log it (once per pause, not once per request) and pause Redis use."""
    global _skip_until
    if not redis_skipped():
        logger.warning("Redis unreachable (%s: %s); %s; retrying in %.0f s", type(exc).__name__, exc, what,
                       REDIS_RETRY_SECONDS)
    _skip_until = time.monotonic() + REDIS_RETRY_SECONDS
