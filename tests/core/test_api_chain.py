"""The test client runs the chain production runs: API_MIDDLEWARE for /v1/, MIDDLEWARE for pages."""

import pytest
from django.conf import settings
from django.utils.module_loading import import_string

from core.api_chain import is_api_path


@pytest.fixture
def layers_passed(monkeypatch):
    """The dotted names of the middleware a request enters, in order (any chain, any client)."""
    passed = []
    for name in dict.fromkeys(settings.MIDDLEWARE + settings.API_MIDDLEWARE):
        layer = import_string(name)

        def entered(self, request, _name=name, _call=layer.__call__):
            passed.append(_name)
            return _call(self, request)

        monkeypatch.setattr(layer, "__call__", entered)
    return passed


@pytest.mark.django_db
def test_a_v1_request_in_tests_passes_exactly_api_middleware(key_client, org, layers_passed):
    response = key_client(org).get("/v1/billing/usage")
    assert response.status_code == 200
    assert layers_passed == settings.API_MIDDLEWARE
    assert not hasattr(response.wsgi_request, "session")


@pytest.mark.django_db
def test_a_page_request_in_tests_passes_the_whole_chain(client, layers_passed):
    client.get("/login")
    assert layers_passed == settings.MIDDLEWARE


@pytest.mark.django_db
def test_one_client_switches_chains_by_path(key_client, org, layers_passed):
    api = key_client(org)
    api.get("/login")
    api.get("/v1/billing/usage")
    assert layers_passed == settings.MIDDLEWARE + settings.API_MIDDLEWARE


def test_only_the_v1_prefix_is_the_api():
    assert is_api_path("/v1/sign") and is_api_path("/v1/")
    assert not is_api_path("/v1") and not is_api_path("/dashboard/v1/") and not is_api_path("/healthz")
