from dataclasses import replace

import pytest
from django.core.cache import caches
from django.test import override_settings

from accounts.plans import PLANS
from core import ratelimit
from tests import factories
from tests.redis_server import requires_redis

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.config.urls_probe")]
WHOAMI = "/v1/probe/whoami"


@pytest.mark.parametrize("plan", ["free", "starter", "growth", "scale"])
def test_authenticated_responses_carry_the_plan_limit(key_client, plan):
    org = factories.make_org(plan=plan)
    response = key_client(org).get(WHOAMI)
    assert response.status_code == 200
    assert response["X-RateLimit-Limit"] == str(PLANS[plan].requests_per_minute)
    assert response["X-RateLimit-Remaining"] == str(PLANS[plan].requests_per_minute - 1)


def test_the_limit_counts_session_and_key_calls_of_one_org_together(key_client, session_client, org, owner,
                                                                     monkeypatch):
    monkeypatch.setitem(PLANS, "free", replace(PLANS["free"], requests_per_minute=4))
    by_key, by_session = key_client(org), session_client(owner)
    statuses = [client.get(WHOAMI).status_code for client in (by_key, by_session, by_key, by_session)]
    assert statuses == [200, 200, 200, 200]
    response = by_key.get(WHOAMI)
    assert response.status_code == 429
    assert response.json()["error"] == "rate_limited"
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response["X-RateLimit-Remaining"] == "0"
    assert by_session.get(WHOAMI).status_code == 429


def test_one_orgs_traffic_does_not_limit_another(key_client, org, other_org, monkeypatch):
    monkeypatch.setitem(PLANS, "free", replace(PLANS["free"], requests_per_minute=1))
    client = key_client(org)
    assert client.get(WHOAMI).status_code == 200
    assert client.get(WHOAMI).status_code == 429
    assert key_client(other_org).get(WHOAMI).status_code == 200


def test_enterprise_is_not_rate_limited(key_client):
    org = factories.make_org(plan="enterprise")
    response = key_client(org).get(WHOAMI)
    assert response.status_code == 200
    assert "X-RateLimit-Limit" not in response


def test_the_public_ip_limiter_uses_the_verify_setting(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 2
    assert [api_client.get("/v1/probe/public").status_code for _ in range(3)] == [200, 200, 429]
    other_ip = api_client.get("/v1/probe/public", REMOTE_ADDR="10.9.9.9")
    assert other_ip.status_code == 200


def test_a_spoofed_forwarded_for_header_does_not_dodge_the_ip_limit(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    assert api_client.get("/v1/probe/public", HTTP_X_FORWARDED_FOR="1.1.1.1").status_code == 200
    assert api_client.get("/v1/probe/public", HTTP_X_FORWARDED_FOR="2.2.2.2").status_code == 429


def test_behind_a_trusted_proxy_the_forwarded_address_counts(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    settings.TRUSTED_PROXY_COUNT = 1
    assert api_client.get("/v1/probe/public", HTTP_X_FORWARDED_FOR="spoof, 1.1.1.1").status_code == 200
    assert api_client.get("/v1/probe/public", HTTP_X_FORWARDED_FOR="spoof2, 2.2.2.2").status_code == 200
    assert api_client.get("/v1/probe/public", HTTP_X_FORWARDED_FOR="1.1.1.1").status_code == 429


@requires_redis
def test_the_counter_is_shared_through_redis():
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                               "LOCATION": "redis://127.0.0.1:6379/15"}}
    with override_settings(CACHES=redis_cache):
        caches["default"].clear()
        from django.core.cache import cache

        subject = "test-shared"
        states = [ratelimit.hit(subject, limit=2) for _ in range(3)]
        assert [s.count for s in states] == [1, 2, 3]
        assert [s.allowed for s in states] == [True, True, False]
        # A second client (another process would have its own connection) sees the same counter.
        import redis

        raw = redis.Redis(host="127.0.0.1", port=6379, db=15)
        keys = [k for k in raw.keys("*") if b"rl:test-shared" in k]
        assert len(keys) == 1 and int(raw.get(keys[0])) == 3
        assert 0 < raw.ttl(keys[0]) <= 65
        cache.clear()


@requires_redis
def test_logout_blocklists_through_redis(api_client, owner):
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                               "LOCATION": "redis://127.0.0.1:6379/15"}}
    with override_settings(CACHES=redis_cache):
        caches["default"].clear()
        token = factories.session_token(owner)
        header = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        assert api_client.get("/v1/auth/me", **header).status_code == 200
        assert api_client.post("/v1/auth/logout", **header).status_code == 200
        assert api_client.get("/v1/auth/me", **header).status_code == 401
        caches["default"].clear()
