"""Logged-out session JWTs, blocklisted by `jti` until they expire: in Redis when configured, else a table.

`is_blocked` runs on every session request, so each backend answers it in one round trip.
"""

import time
from datetime import UTC, datetime

from django.core.cache import cache

from accounts.models import BlockedSessionToken
from config.cache import cache_key, redis_client


def _key(jti: str) -> str:
    return f"jwt-block:{jti}"


def block(jti: str, exp: int) -> None:
    ttl = int(exp - time.time()) + 1
    if ttl <= 0:
        return
    if redis_client() is not None:
        cache.set(_key(jti), 1, ttl)
        return
    # ignore_conflicts: logging out twice with one token is not an error.
    BlockedSessionToken.objects.bulk_create(
        [BlockedSessionToken(jti=jti, expires_at=datetime.fromtimestamp(exp + 1, tz=UTC))], ignore_conflicts=True
    )


def is_blocked(jti: str) -> bool:
    client = redis_client()
    if client is not None:  # one EXISTS on a shared client: this runs on every session request
        return bool(client.exists(cache_key(_key(jti))))
    return BlockedSessionToken.objects.filter(jti=jti).exists()


def purge_expired() -> int:
    """Delete the entries of tokens that have expired (an expired JWT is refused without the list)."""
    deleted, _ = BlockedSessionToken.objects.filter(expires_at__lt=datetime.now(tz=UTC)).delete()
    return deleted
