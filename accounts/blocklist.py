"""Logged-out session JWTs, blocklisted by `jti` until they expire.

The table is authoritative: every logout writes it. With Redis configured, Redis holds a copy that
answers `is_blocked` (on every session request) in one round trip. The list fails closed:

- Redis unreachable: `is_blocked` answers from the table (logged), so a session request costs one
  query more and a logged-out token is still refused. Logout fails with 503 and keeps nothing (the
  table row is removed again): a row Redis lacks would be trusted only until Redis answered again.
- Redis restarted empty (or flushed): the marker key is gone with the copies, so the next check
  answers from the table and copies the table back into Redis before trusting it again.

Redis must not evict keys (`maxmemory-policy noeviction`, its default): an evicted entry whose
marker survived would revive a logged-out token. docs/decisions.md, "Faults: Redis".
"""

import time
from datetime import UTC, datetime

from django.utils import timezone
from redis.exceptions import RedisError

from accounts.models import BlockedSessionToken
from core.cache import cache_key, redis_client, redis_failed, redis_skipped

# Present while Redis holds a copy of every table row; set only after a full copy.
_LOADED = "jwt-block:loaded"
_COPY_CHUNK = 1000


def _key(jti: str) -> str:
    return f"jwt-block:{jti}"


def block(jti: str, exp: int) -> None:
    """Blocklist `jti` until `exp`. Raises RedisError (a 503) when Redis is configured but unreachable."""
    ttl = int(exp - time.time()) + 1
    if ttl <= 0:
        return
    # ignore_conflicts: logging out twice with one token is not an error.
    BlockedSessionToken.objects.bulk_create(
        [BlockedSessionToken(jti=jti, expires_at=datetime.fromtimestamp(exp + 1, tz=UTC))], ignore_conflicts=True
    )
    client = redis_client()
    if client is None:
        return
    try:
        client.set(cache_key(_key(jti)), 1, ex=ttl)
    except RedisError:
        # Never write only the table: Redis's copy, which lacks this jti, is trusted once it answers.
        BlockedSessionToken.objects.filter(jti=jti).delete()
        raise


def is_blocked(jti: str) -> bool:
    client = redis_client()
    if client is None or redis_skipped():
        return _in_table(jti)
    try:
        loaded, blocked = client.pipeline(transaction=False).exists(cache_key(_LOADED)).exists(
            cache_key(_key(jti))).execute()
    except RedisError as exc:
        redis_failed("the JWT blocklist is read from the database", exc)
        return _in_table(jti)
    if loaded:
        return bool(blocked)
    _copy_table_to_redis(client)
    return _in_table(jti)


def _in_table(jti: str) -> bool:
    return BlockedSessionToken.objects.filter(jti=jti).exists()


def _copy_table_to_redis(client) -> None:
    """Copy every unexpired table row into Redis, then set the marker (a fresh or flushed Redis)."""
    now = time.time()
    rows = BlockedSessionToken.objects.filter(expires_at__gt=timezone.now()).values_list("jti", "expires_at")
    try:
        pipe = client.pipeline(transaction=False)
        for index, (jti, expires_at) in enumerate(rows.iterator(chunk_size=_COPY_CHUNK), start=1):
            pipe.set(cache_key(_key(jti)), 1, ex=max(1, int(expires_at.timestamp() - now)))
            if index % _COPY_CHUNK == 0:
                pipe.execute()
        pipe.set(cache_key(_LOADED), 1)
        pipe.execute()
    except RedisError as exc:
        redis_failed("the JWT blocklist is read from the database", exc)


def purge_expired() -> int:
    """Delete the entries of tokens that have expired (an expired JWT is refused without the list)."""
    deleted, _ = BlockedSessionToken.objects.filter(expires_at__lt=datetime.now(tz=UTC)).delete()
    return deleted
