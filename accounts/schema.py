"""OpenAPI description of our bearer authentication (drf-spectacular extension).

One `Authorization: Bearer` header carries either credential (told apart by the `svc_key_` prefix), so
the schema names two schemes: `apiKey` (an organization's or a member's API key) and `sessionToken` (the
JWT from login). An operation lists the ones it accepts: routes whose permissions take a session only
(SessionRequired, SessionOnly: /v1/auth's session routes, /v1/api-keys, /v1/team) list `sessionToken`
alone. The dashboard's session cookie is no API credential (the API never reads it).
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from accounts.scoping import SessionOnly, SessionRequired

API_KEY, SESSION = "apiKey", "sessionToken"


def accepts_session_only(view) -> bool:
    return any(isinstance(permission, (SessionRequired, SessionOnly)) for permission in view.get_permissions())


class BearerAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerAuthentication"
    name = [API_KEY, SESSION]

    def get_security_definition(self, auto_schema):
        return [
            {"type": "http", "scheme": "bearer", "bearerFormat": "svc_key",
             "description": "An organization API key or a member's personal key (`svc_key_...`)."},
            {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
             "description": "A session JWT from `POST /v1/auth/login` (or `verify-2fa`); it ends at logout."},
        ]

    def get_security_requirement(self, auto_schema):
        if accepts_session_only(auto_schema.view):
            return [{SESSION: []}]
        return [{API_KEY: []}, {SESSION: []}]
