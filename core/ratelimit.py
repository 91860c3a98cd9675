"""Fixed-window request counters shared by every process: Redis when configured, else the database.

When Redis is configured but unreachable, counting falls back to the database (logged), so the
limits keep holding through a Redis outage (docs/decisions.md, "Faults: Redis").

One counter per (subject, window). Both backends count with one atomic round trip, so concurrent
requests can never both read the same count: with Redis an INCRBY pipelined with its expiry; without
it one `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` on `RateCounter` (PostgreSQL, and SQLite
>= 3.35, which serialises writers; a waiting writer blocks on the busy timeout instead of failing).
"""

import hashlib
import math
import time
from dataclasses import dataclass

from django.db import connection
from redis.exceptions import RedisError

from core.cache import cache_key, redis_client, redis_failed, redis_skipped
from core.models import RateCounter

WINDOW_SECONDS = 60
_MAX_SUBJECT = RateCounter._meta.get_field("subject").max_length


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


# A row from an earlier window restarts at `cost`; otherwise the count grows. Both CASEs read the row
# as it was before this statement, and the database holds the row's lock for the whole statement.
_UPSERT = """
    INSERT INTO core_ratecounter (subject, window_end, hits) VALUES (%s, %s, %s)
    ON CONFLICT (subject) DO UPDATE SET
        hits = CASE WHEN core_ratecounter.window_end < excluded.window_end THEN excluded.hits
                    ELSE core_ratecounter.hits + excluded.hits END,
        window_end = CASE WHEN core_ratecounter.window_end < excluded.window_end THEN excluded.window_end
                          ELSE core_ratecounter.window_end END
    RETURNING hits
"""


def _incr_database(subject: str, window_end: int, cost: int) -> int:
    if len(subject) > _MAX_SUBJECT:  # a long forwarded address from a proxy: keep the key bounded
        subject = "sha256:" + hashlib.sha256(subject.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, [subject, window_end, cost])
        return int(cursor.fetchone()[0])


def hit(subject: str, limit: int, window: int = WINDOW_SECONDS, cost: int = 1) -> WindowState:
    """Count `cost` requests for `subject` in the current window and report the window's state."""
    now = time.time()
    window_start = int(now // window) * window
    client = redis_client()
    count = None
    if client is not None and not redis_skipped():
        try:
            count = _incr_redis(client, f"rl:{subject}:{window_start}", window + 5, cost)
        except RedisError as exc:
            # Neither open nor closed: the limits hold, counted where they are without Redis. A window
            # that straddles the switch counts in both stores, so it can let up to twice its limit through.
            redis_failed("rate limits are counted in the database", exc)
    if count is None:
        count = _incr_database(subject, window_start + window, cost)
    return WindowState(limit=limit, count=count, reset_in=max(1, math.ceil(window_start + window - now)))


def purge_expired() -> int:
    """Delete the counters whose window has closed (their next hit would restart them anyway)."""
    deleted, _ = RateCounter.objects.filter(window_end__lt=int(time.time())).delete()
    return deleted
