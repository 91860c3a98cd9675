"""Dashboard pages are driven with Django's test client on a session login, like a browser."""

import pytest
from django.test import Client

from tests import factories


@pytest.fixture
def csrf_page_client():
    """csrf_page_client(user) -> a signed-in Client that enforces CSRF like a browser's server does."""

    def make(user) -> Client:
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        return client

    return make


@pytest.fixture
def owner_page(owner, page_client):
    return page_client(owner)


@pytest.fixture
def outsider_generator(other_org):
    return factories.make_generator(org=other_org, name="theirs")
