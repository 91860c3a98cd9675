"""Team tests run in a Growth organization (15 seats, admin role available) unless a test builds
another: `org` is overridden here, so `owner`, `admin_user` and `member` of tests/conftest.py are its
owner, admin and user."""

import pytest
from rest_framework.test import APIClient

from tests import factories


@pytest.fixture
def org(db):
    return factories.make_org(plan="growth")


@pytest.fixture
def admin_client(admin_user, session_client):
    return session_client(admin_user)


@pytest.fixture
def member_client(member, session_client):
    return session_client(member)


@pytest.fixture
def outsider_client(outsider, session_client):
    return session_client(outsider)


@pytest.fixture
def personal_key_client():
    """personal_key_client(user) -> an APIClient carrying a new personal API key of that user."""

    def build(user):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_personal_key(user=user)}")
        return client

    return build

