"""One authentication layer for the API: `Authorization: Bearer <svc_key_... or JWT>`.

Sets `request.user`, `request.auth` (a Credential) and `request.org`. The kind of credential is
told from the `svc_key_` prefix (spec, Authentication 2).
"""

from dataclasses import dataclass

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

from accounts import selectors, services
from accounts.credentials import API_KEY_PREFIX
from accounts.models import ApiKey, Organization, User


@dataclass(frozen=True)
class Credential:
    kind: str  # "session" or "key"
    api_key: ApiKey | None = None
    jti: str | None = None
    exp: int | None = None

    @property
    def is_session(self) -> bool:
        return self.kind == "session"


class ApiKeyActor:
    """The `request.user` of a call made with an organization API key: the organization itself."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    role = None
    pk = None
    id = None

    def __init__(self, org: Organization):
        self.org = org

    def __str__(self) -> str:
        return f"api-key:{self.org.pk}"


class BearerAuthentication(BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, credential = header.strip().partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            raise AuthenticationFailed("Use 'Authorization: Bearer <credential>'.")
        if credential.startswith(API_KEY_PREFIX):
            user, auth, org = self._authenticate_key(credential)
        else:
            user, auth, org = self._authenticate_session(credential)
        request._request.org = org
        return user, auth

    def _authenticate_key(self, raw: str) -> tuple[ApiKeyActor, Credential, Organization]:
        api_key = selectors.api_key_for_credential(raw)
        if api_key is None:
            raise AuthenticationFailed("Invalid or revoked API key.")
        services.api_key_touch(api_key=api_key)
        return ApiKeyActor(api_key.org), Credential(kind="key", api_key=api_key), api_key.org

    def _authenticate_session(self, raw: str) -> tuple[User, Credential, Organization]:
        found = selectors.user_for_session_token(raw)
        if found is None:
            raise AuthenticationFailed("Invalid, expired or revoked session token.")
        user, claims = found
        return user, Credential(kind="session", jti=claims.jti, exp=claims.exp), user.org

    def authenticate_header(self, request) -> str:
        # Defining this keeps DRF from turning 401 into 403.
        return 'Bearer realm="api"'
