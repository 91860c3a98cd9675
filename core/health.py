"""Probes for orchestrators and load balancers: `/healthz` (the process answers) and `/readyz` (it can serve).

Outside /v1: not part of the API, its schema, its authentication or its rate limits (docs/decisions.md,
"Health checks"). Both are cheap: `/healthz` touches nothing; `/readyz` runs one `SELECT 1`, one Redis
PING when REDIS_URL is set, and reads the migration plan until it has once found nothing unapplied.

`ProbeMiddleware` answers them near the top of the chain, before Django validates the Host header:
probes reach a process by its address (a container's 127.0.0.1, a pod's IP), which ALLOWED_HOSTS
rightly does not list.
"""

import functools
import logging
import socket
import threading
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from core.errors import ServiceUnavailable, server_error_body

logger = logging.getLogger(__name__)

OK = {"status": "ok"}
DATABASE_ALIAS = DEFAULT_DB_ALIAS  # the database the service serves from (tests point it elsewhere)
REDIS_TIMEOUT_SECONDS = 2.0
_SIGNER_PROBE_SECONDS = 2.0


class _MigrationState:
    """Once every migration is applied, this process's code never needs another one: remembered. A failure
    (unapplied, or the database unreachable) is never remembered, so the next probe looks again."""

    def __init__(self):
        self.applied = False
        self.lock = threading.Lock()


_migrations = _MigrationState()


def unapplied_migrations() -> list[str]:
    """`app.name` of each migration the code has and the database has not applied, in plan order."""
    executor = MigrationExecutor(connections[DATABASE_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def _check_database() -> dict:
    connection = connections[DATABASE_ALIAS]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        # A broken persistent connection is dropped here, so the next request opens a new one.
        connection.close()
        return _failed("database", exc)
    return OK


@functools.lru_cache(maxsize=4)
def _redis_probe_client(url: str) -> redis.Redis:
    # Its own client, with timeouts: a Redis that accepts and never answers makes the probe fail in
    # REDIS_TIMEOUT_SECONDS instead of holding a worker (the cache's client has no timeout).
    return redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT_SECONDS,
                                socket_connect_timeout=REDIS_TIMEOUT_SECONDS)


def _check_redis() -> dict:
    if not settings.REDIS_URL:
        return {"status": "skipped", "reason": "REDIS_URL is not set"}
    try:
        _redis_probe_client(settings.REDIS_URL).ping()
    except Exception as exc:
        return _failed("redis", exc)
    return OK


def _check_signer() -> dict:
    """The signer service's socket accepts a connection (SIGNER_SOCKET): signing needs it."""
    if not settings.SIGNER_SOCKET:
        return {"status": "skipped", "reason": "SIGNER_SOCKET is not set: keys are used in this process"}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(_SIGNER_PROBE_SECONDS)
            probe.connect(settings.SIGNER_SOCKET)
    except OSError as exc:
        return _failed("signer", exc)
    return OK


def _check_migrations() -> dict:
    if _migrations.applied:
        return OK
    with _migrations.lock:
        try:
            unapplied = unapplied_migrations()
        except Exception as exc:
            return _failed("migrations", exc)
        if unapplied:
            logger.warning("readyz: %d unapplied migrations, first: %s", len(unapplied), ", ".join(unapplied[:5]))
            return {"status": "error", "unapplied": len(unapplied)}
        _migrations.applied = True
    return OK


def _failed(check: str, exc: Exception) -> dict:
    # The exception's text (host, port) goes to the log only; the public answer names its type.
    logger.warning("readyz: %s check failed: %s: %s", check, type(exc).__name__, exc)
    return {"status": "error", "error": type(exc).__name__}


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 while the process answers requests: no database, no Redis (a liveness probe)."""
    return JsonResponse(OK)


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    """200 with each check when the database (and Redis and the signer service, if configured) answer and no
    migration is pending; else 503 in the error envelope, with each check in `details`."""
    checks = {"database": _check_database()}
    # The migration plan needs the database: without it, it would only fail the same way again.
    checks["migrations"] = (_check_migrations() if checks["database"] is OK
                            else {"status": "error", "error": "database unavailable"})
    checks["redis"] = _check_redis()
    checks["signer"] = _check_signer()
    if all(check["status"] != "error" for check in checks.values()):
        return JsonResponse({"status": "ok", "checks": checks})
    error = ServiceUnavailable("The service is not ready to serve requests.", details=checks)
    return JsonResponse(server_error_body(error.status_code, error.body()), status=error.status_code)


PROBES = {"/healthz": healthz, "/readyz": readyz}


class ProbeMiddleware:
    """Answers the probe paths itself; every other request goes on down the chain."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
