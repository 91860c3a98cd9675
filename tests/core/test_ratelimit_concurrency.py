"""The limiter admits exactly `limit` requests when they all arrive at once, on every backend.

Each thread opens its own database connection (closed when it ends), as separate server threads or
processes would. A read-then-write counter (the former database-cache fallback) let extra requests
through here: 21 to 24 of 50 with a limit of 20.
"""

import json
import os
import subprocess
import sys
import time
import types
import uuid
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
import requests
from django.db import connection
from django.test import override_settings

from accounts.plans import PLANS
from core import ratelimit
from tests import factories
from tests.concurrent_requests import released_together
from tests.redis_server import requires_redis

CONCURRENCY = 50
LIMIT = 20
PROJECT = Path(__file__).resolve().parents[2]
# Database 14, apart from test_rate_limits.py's 15, which other xdist workers flush mid-run.
REDIS_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                           "LOCATION": "redis://127.0.0.1:6379/14"}}


def _all_at_once(call, count: int = CONCURRENCY) -> list:
    """Run `call()` in `count` threads released together; each closes its database connections.

    The limiter's clock stands still meanwhile: the windows are fixed, so a burst that straddles an edge is
    counted in two windows and may pass twice the limit (a slow machine's 50 HTTP requests have), and no
    margin of seconds holds on a machine busy enough."""
    frozen = time.time()
    with mock.patch.object(ratelimit, "time", types.SimpleNamespace(time=lambda: frozen)):
        return released_together([call] * count)


def _assert_exactly_the_limit_admitted(counts: list[int]) -> None:
    assert sorted(counts) == list(range(1, CONCURRENCY + 1))
    assert sum(count <= LIMIT for count in counts) == LIMIT


def test_fifty_concurrent_hits_on_a_migrated_sqlite_file_admit_exactly_the_limit(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "REDIS_URL": "", "DEBUG": "true"}
    done = subprocess.run([sys.executable, "-m", "tests.core.limiter_hammer", "sqlite-subject", str(LIMIT),
                           str(CONCURRENCY)], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=900)  # a guard against a hang, not a speed bound
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["errors"] == []
    assert result["cache"] == 1  # `migrate` alone made the database cache usable
    _assert_exactly_the_limit_admitted(result["counts"])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL")
def test_fifty_concurrent_hits_on_postgresql_admit_exactly_the_limit():
    states = _all_at_once(lambda: ratelimit.hit("postgres-subject", LIMIT))
    _assert_exactly_the_limit_admitted([state.count for state in states])


@requires_redis
def test_fifty_concurrent_hits_on_redis_admit_exactly_the_limit():
    subject = f"redis-subject-{uuid.uuid4()}"  # nothing else counts on it; no flush needed
    with override_settings(CACHES=REDIS_CACHE):
        states = _all_at_once(lambda: ratelimit.hit(subject, LIMIT))
    _assert_exactly_the_limit_admitted([state.count for state in states])


@pytest.mark.django_db(transaction=True)
def test_a_hit_is_one_statement_and_a_new_window_restarts_the_count(monkeypatch):
    from django.test.utils import CaptureQueriesContext

    clock = [1_000_040.0]  # 20 s into the window that starts at 1_000_020
    monkeypatch.setattr(ratelimit.time, "time", lambda: clock[0])
    with CaptureQueriesContext(connection) as captured:
        first = ratelimit.hit("windowed", limit=2)
    assert len(captured.captured_queries) == 1
    assert [first.count, ratelimit.hit("windowed", limit=2, cost=2).count] == [1, 3]
    assert ratelimit.hit("windowed", limit=2).reset_in == 40
    clock[0] += 60
    assert ratelimit.hit("windowed", limit=2).count == 1
    assert ratelimit.purge_expired() == 0
    clock[0] += 60
    assert ratelimit.purge_expired() == 1


@pytest.mark.django_db(transaction=True)
def test_a_very_long_subject_is_counted_under_a_bounded_key():
    subject = "verify:" + "1.2.3.4, " * 100
    assert [ratelimit.hit(subject, limit=5).count for _ in range(2)] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_http_requests_on_one_plan_limit_let_exactly_the_limit_through(live_server, monkeypatch):
    monkeypatch.setitem(PLANS, "free", replace(PLANS["free"], requests_per_minute=LIMIT))
    key = factories.make_api_key(org=factories.make_org(plan="free"))
    url = f"{live_server.url}/v1/billing/usage"
    statuses = _all_at_once(lambda: requests.get(url, headers={"Authorization": f"Bearer {key}"},
                                                 timeout=60).status_code)
    assert sorted(statuses) == [200] * LIMIT + [429] * (CONCURRENCY - LIMIT)
