"""Logged-out session JWTs, blocklisted by `jti` until they expire, in the shared cache."""

import time

from django.core.cache import cache

from config.cache import cache_key, redis_client


def _key(jti: str) -> str:
    return f"jwt-block:{jti}"


def block(jti: str, exp: int) -> None:
    ttl = int(exp - time.time()) + 1
    if ttl > 0:
        cache.set(_key(jti), 1, ttl)


def is_blocked(jti: str) -> bool:
    client = redis_client()
    if client is not None:  # one EXISTS on a shared client: this runs on every session request
        return bool(client.exists(cache_key(_key(jti))))
    return cache.get(_key(jti)) is not None
