"""OpenAPI description of our bearer authentication (drf-spectacular extension)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A session JWT (from login) or an organization API key (svc_key_...).",
        }
