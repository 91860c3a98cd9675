"""Redis stopped, hung or restarted empty, with a real redis-server of our own (never the shared one).

The JWT blocklist fails closed: a logged-out token is refused through every Redis fault (the table is
authoritative; Redis is a copy). The rate limiter counts in the database while Redis is away, so the
limits keep holding. docs/decisions.md, "Faults: Redis".
"""

import logging
import time

import pytest
from django.core.cache import caches
from django.test import override_settings

from accounts.models import BlockedSessionToken
from core import cache as config_cache
from tests import factories
from tests.own_services import OwnRedis

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.config.urls_probe")]


@pytest.fixture
def redis_server():
    """Our own redis-server, the default cache for the test; killed afterwards."""
    try:
        server = OwnRedis()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    server.start()
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": server.url(),
                               "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    with override_settings(CACHES=redis_cache):
        yield server
    server.close()
    caches["default"].close()


def _auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _logged_out_token(api_client, user) -> str:
    token = factories.session_token(user)
    assert api_client.get("/v1/auth/me", **_auth(token)).status_code == 200
    assert api_client.post("/v1/auth/logout", **_auth(token)).status_code == 200
    assert api_client.get("/v1/auth/me", **_auth(token)).status_code == 401
    return token


def test_a_logged_out_token_stays_refused_while_redis_is_down_and_other_sessions_go_on(
        api_client, owner, redis_server, caplog):
    revoked = _logged_out_token(api_client, owner)
    live = factories.session_token(owner)
    redis_server.kill()
    with caplog.at_level(logging.WARNING, logger="core.cache"):
        refused = api_client.get("/v1/auth/me", **_auth(revoked))
        assert refused.status_code == 401
        assert refused.json()["error"] == "authentication_required"
        assert api_client.get("/v1/auth/me", **_auth(live)).status_code == 200
    assert "Redis unreachable" in caplog.text


def test_a_logged_out_token_stays_refused_after_redis_restarts_empty(api_client, owner, redis_server):
    revoked = _logged_out_token(api_client, owner)
    redis_server.kill()
    redis_server.start()  # no persistence: the copy of the blocklist is gone
    config_cache._skip_until = 0.0
    assert api_client.get("/v1/auth/me", **_auth(revoked)).status_code == 401
    # The check copied the table back, and Redis answers alone again.
    import redis

    raw = redis.Redis.from_url(redis_server.url())
    assert sum(1 for key in raw.scan_iter("*jwt-block:*")) == 2  # the marker and the token's entry
    BlockedSessionToken.objects.all().delete()  # from now on only Redis knows
    assert api_client.get("/v1/auth/me", **_auth(revoked)).status_code == 401


def test_logout_while_redis_is_down_answers_503_and_keeps_nothing(api_client, owner, redis_server):
    token = factories.session_token(owner)
    redis_server.kill()
    response = api_client.post("/v1/auth/logout", **_auth(token))
    assert response.status_code == 503
    assert response.json()["error"] == "service_unavailable"
    assert int(response["Retry-After"]) > 0
    # Nothing half-written: no table row that Redis's copy lacks. The client was told logout failed.
    assert not BlockedSessionToken.objects.exists()
    redis_server.start()
    config_cache._skip_until = 0.0
    assert api_client.post("/v1/auth/logout", **_auth(token)).status_code == 200
    assert api_client.get("/v1/auth/me", **_auth(token)).status_code == 401


def test_the_rate_limit_holds_in_the_database_while_redis_is_down(api_client, redis_server, settings, caplog):
    settings.VERIFY_RATE_PER_MINUTE = 3
    assert api_client.get("/v1/probe/public").status_code == 200  # counted in Redis
    redis_server.kill()
    with caplog.at_level(logging.WARNING, logger="core.cache"):
        statuses = [api_client.get("/v1/probe/public").status_code for _ in range(4)]
    # The database counter starts afresh: three more pass, the fourth is refused.
    assert statuses == [200, 200, 200, 429]
    assert caplog.text.count("Redis unreachable") == 1  # logged once per pause, not per request


def test_a_hung_redis_costs_one_request_its_timeout_then_the_rest_skip_it(api_client, owner, redis_server,
                                                                          monkeypatch, caplog):
    # The pause outlasts the test however busy the machine (it is 5 s of the clock in production).
    monkeypatch.setattr(config_cache, "REDIS_RETRY_SECONDS", 3600.0)
    token = factories.session_token(owner)
    assert api_client.get("/v1/auth/me", **_auth(token)).status_code == 200
    redis_server.freeze()
    try:
        with caplog.at_level(logging.WARNING, logger="core.cache"):
            assert api_client.get("/v1/auth/me", **_auth(token)).status_code == 200
            paused_until = config_cache._skip_until
            statuses = [api_client.get("/v1/auth/me", **_auth(token)).status_code for _ in range(4)]
    finally:
        redis_server.thaw()
    # The first request met the hung server and gave up at its socket timeout (0.5 s, the fixture's; the
    # cache's client would otherwise wait for ever), logged once.
    assert caplog.text.count("Redis unreachable (TimeoutError") == 1, caplog.text
    # The next four never asked Redis: a failed attempt would have logged nothing (paused) but pushed the pause on.
    assert statuses == [200] * 4 and config_cache._skip_until == paused_until


def test_redis_comes_back_into_use_after_the_pause(api_client, redis_server, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1000
    redis_server.kill()
    assert api_client.get("/v1/probe/public").status_code == 200
    redis_server.start()
    config_cache._skip_until = time.monotonic()  # the pause has run out
    assert api_client.get("/v1/probe/public").status_code == 200
    import redis

    raw = redis.Redis.from_url(redis_server.url())
    assert any(b"rl:verify:" in key for key in raw.scan_iter("*"))
