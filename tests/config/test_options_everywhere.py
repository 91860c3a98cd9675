"""OPTIONS without a credential, on every /v1 route of the URLconf, answers as docs/api.md says.

A route that needs no credential: 200, `Allow`, `{"methods": [...], "schema": "/v1/openapi.json"}` as
JSON. A public route (PublicCors, the list under "Browsers and CORS") adds the CORS headers, and to a
preflight the methods, request headers and max age. A route that takes a credential checks it first: 401
`authentication_required` in the envelope with `WWW-Authenticate`, and no CORS header at all.
"""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.permissions import AllowAny

from core.cors import ALLOW_HEADERS, EXPOSE_HEADERS, MAX_AGE, PublicCors

pytestmark = pytest.mark.django_db

SAMPLE = {"uuid": "0b8e1c4e-6a3c-4f5e-9a53-2f6f1c9d2b7a", "int": "1", "str": "sample", "slug": "sample",
          "path": "0/000"}
# The public routes docs/api.md lists under "Browsers and CORS" (as URL patterns).
DOCUMENTED_CORS = {"v1/verify", "v1/verify/batch", "v1/records/<uuid:record_id>", "v1/records/<uuid:record_id>/c2pa",
                   "v1/keys/<uuid:generator_id>", "v1/billing/plans"}
DOCUMENTED_CORS_PREFIXES = ("v1/log/", "v1/^log/", "v1/c2pa/")
PREFLIGHT = {"HTTP_ORIGIN": "https://example.org", "HTTP_ACCESS_CONTROL_REQUEST_METHOD": "GET"}


def _routes(patterns=None, prefix=""):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and (prefix + str(pattern.pattern)).startswith(("v1/", "v1/^")):
            view = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
            if view is not None:  # the catch-all 404 is a function, not a route
                yield prefix + str(pattern.pattern), view


def _path(route: str) -> str:
    if "^" in route:  # a regular expression (the log's tiles)
        return "/" + re.sub(r"\(\?P<\w+>[^)]*\)", SAMPLE["path"], route.replace("^", "").replace("$", ""))
    return "/" + re.sub(r"<(?:(\w+):)?\w+>", lambda match: SAMPLE[match.group(1) or "str"], route)


ROUTES = sorted(_routes())


def _credential_free(view) -> bool:
    return any(issubclass(permission, AllowAny) for permission in view.permission_classes)


def test_the_walk_sees_every_kind_of_route():
    assert len(ROUTES) > 50
    assert any(issubclass(view, PublicCors) for _, view in ROUTES)
    assert any(_credential_free(view) and not issubclass(view, PublicCors) for _, view in ROUTES)
    assert any(not _credential_free(view) for _, view in ROUTES)


def test_the_cors_routes_are_the_documented_ones():
    cors = {route for route, view in ROUTES if issubclass(view, PublicCors)}
    documented = {route for route, _ in ROUTES
                  if route in DOCUMENTED_CORS or route.startswith(DOCUMENTED_CORS_PREFIXES)}
    assert cors == documented


@pytest.mark.parametrize("preflight", [False, True], ids=["options", "preflight"])
@pytest.mark.parametrize(("route", "view"), ROUTES, ids=[route for route, _ in ROUTES])
def test_options_without_a_credential_answers_as_documented(client, route, view, preflight):
    response = client.options(_path(route), **(PREFLIGHT if preflight else {}))
    cors_headers = {name for name in response.headers if name.lower().startswith("access-control-")}
    assert response["Content-Type"].split(";")[0] == "application/json"
    body = response.json()
    if not _credential_free(view):
        assert response.status_code == 401
        assert body["error"] == "authentication_required" and body["message"]
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert cors_headers == set()
        return
    assert response.status_code == 200
    methods = body["methods"]
    assert body == {"methods": methods, "schema": "/v1/openapi.json"}
    assert "OPTIONS" in methods
    assert response["Allow"] == ", ".join(methods)
    if not issubclass(view, PublicCors):
        assert cors_headers == set()
        return
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Expose-Headers"] == ", ".join(EXPOSE_HEADERS)
    assert "Access-Control-Allow-Credentials" not in response
    if preflight:
        assert response["Access-Control-Allow-Methods"] == ", ".join(methods)
        assert response["Access-Control-Allow-Headers"] == ", ".join(ALLOW_HEADERS)
        assert response["Access-Control-Max-Age"] == str(MAX_AGE)
    else:
        assert "Access-Control-Allow-Methods" not in response
