"""Logged-out session JWTs, blocklisted by `jti` until they expire, in the shared cache."""

import time

from django.core.cache import cache


def _key(jti: str) -> str:
    return f"jwt-block:{jti}"


def block(jti: str, exp: int) -> None:
    ttl = int(exp - time.time()) + 1
    if ttl > 0:
        cache.set(_key(jti), 1, ttl)


def is_blocked(jti: str) -> bool:
    return cache.get(_key(jti)) is not None
