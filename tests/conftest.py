import pytest
from rest_framework.test import APIClient

from tests import factories


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # PBKDF2 with Django's iteration count costs ~0.5 s a hash; tests exercise our logic, not PBKDF2.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _email_backend(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture(autouse=True)
def _redis_not_paused():
    # A Redis failure pauses Redis use in this process for a few seconds (config.cache); a test that
    # kills a Redis must not leave the next test, on another Redis, counting in the database.
    from config import cache

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
