import pytest

pytestmark = pytest.mark.django_db

AUTH_ROUTES = ["register", "login", "verify-2fa", "verify-email", "resend-verification", "forgot-password",
               "reset-password", "me", "logout", "2fa/setup", "2fa/enable", "2fa/disable"]


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
    assert schema["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert {"bearerAuth": []} in paths["/v1/auth/me"]["get"]["security"]


def test_the_interactive_docs_are_served(api_client):
    response = api_client.get("/v1/docs")
    assert response.status_code == 200
    assert b"openapi.json" in response.content
