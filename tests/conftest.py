import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests import factories, log_scan
from tests.api_chain import split_test_client_chains


def pytest_configure(config):
    # The secret scan of every log line of the session (tests/log_scan.py).
    if not config.pluginmanager.has_plugin("log_scan"):
        config.pluginmanager.register(log_scan, "log_scan")
    # /v1/ requests in tests pass API_MIDDLEWARE, as in production (tests/api_chain.py).
    split_test_client_chains()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2 with Django's iteration count costs ~0.5 s a hash; tests exercise our logic, not PBKDF2.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _email_backend(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture(autouse=True)
def _redis_not_paused():
    # A Redis failure pauses Redis use in this process for a few seconds (core.cache); a test that
    # kills a Redis must not leave the next test, on another Redis, counting in the database.
    from core import cache

    cache._skip_until = 0.0
    yield
    cache._skip_until = 0.0


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


@pytest.fixture
def org(db):
    return factories.make_org()


@pytest.fixture
def growth_org(db):
    return factories.make_org(plan="growth")


@pytest.fixture
def other_org(db):
    return factories.make_org(name="Other")


@pytest.fixture
def owner(org):
    return factories.make_user(org=org, role="owner")


@pytest.fixture
def admin_user(org):
    return factories.make_user(org=org, role="admin")


@pytest.fixture
def member(org):
    return factories.make_user(org=org, role="user")


@pytest.fixture
def outsider(other_org):
    return factories.make_user(org=other_org, role="owner")


def _client_with(credential: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return client


@pytest.fixture
def session_client():
    """session_client(user) -> an APIClient carrying that user's session JWT."""
    return lambda user: _client_with(factories.session_token(user))


@pytest.fixture
def key_client():
    """key_client(org) -> an APIClient carrying a new organization API key."""
    return lambda org: _client_with(factories.make_api_key(org=org))


@pytest.fixture
def owner_client(owner, session_client):
    return session_client(owner)


@pytest.fixture
def emitted():
    """Every webhook event emitted during the test, by any module, as (org_id, kind, data) tuples."""
    from webhooks.events import event_listen

    calls: list[tuple] = []
    stop = event_listen(lambda org, kind, data: calls.append((org.pk, kind, data)))
    yield calls
    stop()


@pytest.fixture(scope="session", autouse=True)
def _settings_secrets_never_logged():
    """The deployment's own secrets count as secrets for the log scan (tests/log_scan.py)."""
    from django.conf import settings

    from tests.log_scan import register_secret

    for name in ("SECRET_KEY", "KEY_ENCRYPTION_KEY", "TOKEN_SIGNING_KEY", "LOG_SIGNING_KEY", "EMAIL_HOST_PASSWORD"):
        for value in str(getattr(settings, name, "") or "").split(","):
            register_secret(value.strip())


@pytest.fixture
def page_client():
    """page_client(user) -> a test Client signed in as `user` through the session (CSRF checks off)."""

    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture(scope="module")
def tsa():
    """A real local RFC 3161 time-stamp authority (tests/tsa_server.py), one per test module."""
    from tests.tsa_server import LocalTsa

    with LocalTsa() as authority:
        yield authority


@pytest.fixture
def stamping(settings, tsa, tmp_path):
    """The service configured to stamp with `tsa` (TSA_URL) and to trust its root (TSA_ROOTS_FILE)."""
    from cryptography.hazmat.primitives import serialization

    roots = tmp_path / "tsa-roots.pem"
    roots.write_bytes(tsa.root.public_bytes(serialization.Encoding.PEM))
    settings.TSA_URL, settings.TSA_ROOTS_FILE = tsa.url, str(roots)
    return tsa
