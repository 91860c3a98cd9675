"""The local Redis the tests use when it is running (127.0.0.1:6379); tests that need it skip otherwise."""

import pytest


def redis_available() -> bool:
    try:
        import redis

        redis.Redis(host="127.0.0.1", port=6379, socket_connect_timeout=0.5).ping()
        return True
    except Exception:
        return False


requires_redis = pytest.mark.skipif(not redis_available(), reason="Redis is not running on 127.0.0.1:6379")
