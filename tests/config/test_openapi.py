import pytest

pytestmark = pytest.mark.django_db

AUTH_ROUTES = ["register", "login", "verify-2fa", "verify-email", "resend-verification", "forgot-password",
               "reset-password", "me", "logout", "2fa/setup", "2fa/enable", "2fa/disable", "2fa/recovery-codes"]


def test_the_schema_describes_every_route_with_its_shapes(api_client):
    response = api_client.get("/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for route in AUTH_ROUTES:
        assert f"/v1/auth/{route}" in paths, route
    assert "/v1/api-keys" in paths and "/v1/api-keys/{id}" in paths
    for route in ("/v1/billing/plans", "/v1/billing/usage", "/v1/generators", "/v1/generators/{id}",
                  "/v1/generators/{id}/revoke", "/v1/generators/{id}/rotate", "/v1/keys/{generator_id}",
                  "/v1/records", "/v1/records/batch", "/v1/records/{record_id}", "/v1/records/{record_id}/c2pa",
                  "/v1/audit"):
        assert route in paths, route
    assert "201" in paths["/v1/records"]["post"]["responses"]
    assert "207" in paths["/v1/records/batch"]["post"]["responses"]
    register = paths["/v1/auth/register"]["post"]
    assert "requestBody" in register and "201" in register["responses"]
    components = schema["components"]["schemas"]
    assert {"org_name", "email", "password"} <= set(components["RegisterInputRequest"]["properties"])
    schemes = schema["components"]["securitySchemes"]
    assert schemes["apiKey"]["scheme"] == schemes["sessionToken"]["scheme"] == "bearer"
    assert (schemes["apiKey"]["bearerFormat"], schemes["sessionToken"]["bearerFormat"]) == ("svc_key", "JWT")
    assert paths["/v1/auth/me"]["get"]["security"] == [{"sessionToken": []}]


def test_the_interactive_docs_are_served_from_our_own_files(api_client):
    response = api_client.get("/v1/docs")
    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in page
    assert "<style" not in page and "//cdn" not in page and "http" not in page.split("<body>")[1]
    script = api_client.get("/v1/docs?script=")
    assert script.status_code == 200 and "openapi.json" in script.content.decode()


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


TEAM_ROUTES = {
    "/v1/team/members": ["get"],
    "/v1/team/members/{user_id}": ["delete"],
    "/v1/team/members/{user_id}/role": ["patch"],
    "/v1/team/members/{user_id}/api-keys": ["post"],
    "/v1/team/members/{user_id}/api-keys/{key_id}": ["delete"],
    "/v1/team/members/me/api-keys": ["get"],
    "/v1/team/invites": ["get", "post"],
    "/v1/team/invites/{invite_id}": ["delete"],
    "/v1/team/invites/{token}/preview": ["get"],
    "/v1/team/invites/{token}/accept": ["post"],
}


def test_the_team_routes_are_described(api_client):
    paths = api_client.get("/v1/openapi.json").json()["paths"]
    for path, methods in TEAM_ROUTES.items():
        assert path in paths, path
        assert sorted(m for m in paths[path] if m != "parameters") == sorted(methods), path
    assert "201" in paths["/v1/team/invites"]["post"]["responses"]
    assert "201" in paths["/v1/team/invites/{token}/accept"]["post"]["responses"]
    assert paths["/v1/team/invites/{token}/preview"]["get"]["security"] == [{}]


@pytest.mark.parametrize(("path", "field"), [("/v1/generators", "generators"), ("/v1/api-keys", "keys"),
                                             ("/v1/team/members", "members"), ("/v1/team/invites", "invites"),
                                             ("/v1/team/members/me/api-keys", "keys")])
def test_list_routes_are_documented_as_the_object_they_return(api_client, path, field):
    schema = api_client.get("/v1/openapi.json").json()
    body = _resolve(schema, schema["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"])
    assert body.get("type") != "array"
    assert body["properties"][field]["type"] == "array"


def test_error_responses_are_documented_with_the_shared_envelope(api_client):
    schema = api_client.get("/v1/openapi.json").json()
    assert schema["components"]["schemas"]["Error"]["required"] == ["error", "message"]
    records = schema["paths"]["/v1/records"]["post"]["responses"]
    for status in ("400", "401", "402", "403", "404", "429"):
        assert records[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert "404" in schema["paths"]["/v1/generators/{id}"]["get"]["responses"]
    assert "403" not in schema["paths"]["/v1/billing/plans"]["get"]["responses"]


def test_the_webhook_routes_are_described(api_client):
    paths = api_client.get("/v1/openapi.json").json()["paths"]
    assert {"get", "post"} <= set(paths["/v1/webhooks"])
    assert {"patch", "delete"} <= set(paths["/v1/webhooks/{id}"])
    assert "put" not in paths["/v1/webhooks/{id}"] and "get" not in paths["/v1/webhooks/{id}"]
    assert "201" in paths["/v1/webhooks"]["post"]["responses"]
    assert set(paths["/v1/webhooks/{id}/deliveries"]) == {"get"}
    assert set(paths["/v1/webhooks/{id}/deliveries/{delivery_id}/retry"]) == {"post"}
    entry = paths["/v1/webhooks/{id}/deliveries/{delivery_id}/retry"]["post"]["responses"]["200"]
    assert "application/json" in entry["content"]


SESSION_ONLY = [("get", "/v1/auth/me"), ("post", "/v1/auth/logout"), ("post", "/v1/auth/2fa/setup"),
                ("get", "/v1/api-keys"), ("delete", "/v1/api-keys/{id}"), ("get", "/v1/team/members"),
                ("post", "/v1/team/invites"), ("delete", "/v1/team/members/{user_id}/api-keys/{key_id}"),
                ("post", "/v1/auth/2fa/recovery-codes")]
EITHER = [("post", "/v1/sign"), ("post", "/v1/records"), ("get", "/v1/generators"), ("get", "/v1/audit"),
          ("get", "/v1/webhooks"), ("post", "/v1/records/{record_id}/c2pa/embed"), ("get", "/v1/billing/usage")]


def test_each_operation_names_the_credentials_it_accepts(api_client):
    paths = api_client.get("/v1/openapi.json").json()["paths"]
    for method, path in SESSION_ONLY:
        assert paths[path][method]["security"] == [{"sessionToken": []}], (method, path)
    for method, path in EITHER:
        assert paths[path][method]["security"] == [{"apiKey": []}, {"sessionToken": []}], (method, path)
    assert paths["/v1/verify"]["post"]["security"] == [{}]


@pytest.mark.parametrize(("method", "path"), SESSION_ONLY[:4])
def test_a_session_only_operation_refuses_an_api_key(key_client, org, method, path):
    response = getattr(key_client(org), method)(path)
    assert response.status_code in (401, 403) and response.json()["error"] in ("authentication_required", "forbidden")


def test_signing_and_embedding_document_every_media_type_they_answer_with(api_client):
    from media_codecs.registry import registered_codecs

    paths = api_client.get("/v1/openapi.json").json()["paths"]
    signed = paths["/v1/sign"]["post"]["responses"]["201"]["content"]
    assert set(signed) == {codec.mime_type.split(";")[0] for codec in registered_codecs()}
    assert all(body["schema"] == {"type": "string", "format": "binary"} for body in signed.values())
    embedded = paths["/v1/records/{record_id}/c2pa/embed"]["post"]["responses"]["200"]["content"]
    assert set(embedded) == {"image/jpeg", "image/png"}
