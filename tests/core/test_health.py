"""/healthz and /readyz: every state of the readiness checks, on real databases and a real Redis."""

import socket

import pytest
from django.db import connection, connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client
from django.test.utils import CaptureQueriesContext

from core import health

SHARED_REDIS = "redis://127.0.0.1:6379/14"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@pytest.fixture(autouse=True)
def _fresh_migration_state(monkeypatch, settings):
    monkeypatch.setattr(health, "_migrations", health._MigrationState())
    settings.REDIS_URL = ""


@pytest.fixture
def client():
    return Client()


def _redis_cache(settings, url: str) -> None:
    settings.REDIS_URL = url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}


@pytest.fixture
def other_database(monkeypatch, django_db_blocker):
    """use(settings_dict) points the readiness checks at another database, under an alias of its own
    (the migration recorder's queries go through `connections` by alias); returns its connection.
    The test's database stays untouched and unopened: these tests take no `django_db` mark."""
    aliases = []

    def use(settings_dict: dict):
        alias = f"readyz_{len(aliases)}"
        configured = connections.configure_settings({"default": {}, alias: settings_dict})
        connections.settings[alias] = configured[alias]
        aliases.append(alias)
        monkeypatch.setattr(health, "DATABASE_ALIAS", alias)
        return connections[alias]

    with django_db_blocker.unblock():
        yield use
    for alias in aliases:
        connections[alias].close()
        del connections[alias]
        del connections.settings[alias]


def _assert_not_ready(response) -> dict:
    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "service_unavailable" and body["message"]
    assert body["request_id"] == response["X-Request-Id"]
    return body["details"]


@pytest.mark.django_db
def test_healthz_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert client.head("/healthz").status_code == 200
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_is_ready_on_a_migrated_database_without_redis(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {
        "database": {"status": "ok"}, "migrations": {"status": "ok"},
        "redis": {"status": "skipped", "reason": "REDIS_URL is not set"},
        "signer": {"status": "skipped", "reason": "SIGNER_SOCKET is not set: keys are used in this process"}}}


@pytest.mark.django_db
def test_readyz_needs_the_signer_service_when_one_is_configured(client, settings, tmp_path):
    import socket

    settings.SIGNER_SOCKET = str(tmp_path / "signer.sock")
    response = client.get("/readyz")  # nothing listens there
    assert response.status_code == 503
    assert response.json()["details"]["signer"]["status"] == "error"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:  # a listening socket, as the signer's
        listener.bind(settings.SIGNER_SOCKET)
        listener.listen(1)
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["signer"] == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_pings_redis_when_redis_url_is_set(client, settings):
    _redis_cache(settings, SHARED_REDIS)
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["checks"]["redis"] == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_not_ready_when_redis_is_down(client, settings):
    _redis_cache(settings, f"redis://127.0.0.1:{_closed_port()}/0")
    details = _assert_not_ready(client.get("/readyz"))
    assert details["redis"] == {"status": "error", "error": "ConnectionError"}
    assert details["database"] == {"status": "ok"} and details["migrations"] == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_gives_up_on_a_redis_that_never_answers(client, settings, monkeypatch):
    monkeypatch.setattr(health, "REDIS_TIMEOUT_SECONDS", 0.5)
    with socket.socket() as silent:  # the kernel accepts the connection; nobody ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
        _redis_cache(settings, url)
        details = _assert_not_ready(client.get("/readyz"))
    # The probe's own timeout ended the wait (the cache's client has none: it would have hung), not the clock
    # of a test that a busy machine stretches.
    assert details["redis"] == {"status": "error", "error": "TimeoutError"}
    assert health._redis_probe_client(url).connection_pool.connection_kwargs["socket_timeout"] == 0.5


def test_readyz_is_not_ready_when_the_database_is_down(client, other_database):
    other_database({"ENGINE": "django.db.backends.postgresql", "NAME": "provenance", "USER": "postgres",
                    "HOST": "127.0.0.1", "PORT": str(_closed_port())})
    details = _assert_not_ready(client.get("/readyz"))
    assert details["database"] == {"status": "error", "error": "OperationalError"}
    assert details["migrations"] == {"status": "error", "error": "database unavailable"}


def _missing_one_migration(database) -> tuple[str, str]:
    """Record every migration of the code as applied in `database` but one (a leaf); returns that one."""
    loader = MigrationLoader(database)
    missing = sorted(loader.graph.leaf_nodes())[0]
    recorder = MigrationRecorder(database)
    recorder.ensure_schema()
    for app_label, name in loader.graph.nodes:
        if (app_label, name) != missing:
            recorder.record_applied(app_label, name)
    return missing


def test_readyz_is_not_ready_while_a_migration_is_unapplied_and_never_caches_that(client, other_database, tmp_path):
    database = other_database({"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "throwaway.sqlite3")})
    missing = _missing_one_migration(database)
    assert health.unapplied_migrations() == [".".join(missing)]
    for _ in range(2):  # a failure is looked at again on every probe
        details = _assert_not_ready(client.get("/readyz"))
        assert details["migrations"] == {"status": "error", "unapplied": 1}
        assert details["database"] == {"status": "ok"}
    MigrationRecorder(database).record_applied(*missing)
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["checks"]["migrations"] == {"status": "ok"}


def test_readyz_reads_the_migration_plan_only_until_it_has_passed(client, other_database, tmp_path):
    database = other_database({"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "throwaway.sqlite3")})
    missing = _missing_one_migration(database)
    MigrationRecorder(database).record_applied(*missing)
    with CaptureQueriesContext(database) as first:
        assert client.get("/readyz").status_code == 200
    with CaptureQueriesContext(database) as later:
        assert client.get("/readyz").status_code == 200
    assert any("django_migrations" in query["sql"] for query in first.captured_queries)
    assert [query["sql"] for query in later.captured_queries] == ["SELECT 1"]


@pytest.mark.django_db
def test_probes_answer_whatever_the_host_header_says(client):
    # A container's healthcheck and an orchestrator reach the process by its address, not its public name.
    assert client.get("/healthz", HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert client.get("/readyz", HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert client.get("/login", HTTP_HOST="10.1.2.3:8000").status_code == 400


@pytest.mark.django_db
def test_probes_are_public_and_never_rate_limited(client, settings):
    settings.VERIFY_RATE_PER_MINUTE = settings.AUTH_RATE_PER_MINUTE = 1
    for _ in range(5):
        for path in ("/healthz", "/readyz"):
            response = client.get(path)
            assert response.status_code == 200
            assert "X-RateLimit-Limit" not in response and "Retry-After" not in response


@pytest.mark.django_db
def test_probes_are_not_in_the_api_schema(client):
    paths = client.get("/v1/openapi.json").json()["paths"]
    assert paths and not [path for path in paths if "healthz" in path or "readyz" in path]


@pytest.mark.django_db
def test_readyz_on_the_test_database_runs_one_query_once_migrations_passed(client):
    client.get("/readyz")
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/readyz").status_code == 200
    assert [query["sql"] for query in queries.captured_queries] == ["SELECT 1"]
