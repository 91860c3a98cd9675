"""Session JWTs: HS256, claims user_id, email, org_id, iat, exp, jti (addendum section 2).

Encoding and decoding go through simplejwt's TokenBackend (PyJWT underneath) pinned to HS256, so
`alg: none` and every other algorithm are refused.
"""

import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from rest_framework_simplejwt.backends import TokenBackend
from rest_framework_simplejwt.exceptions import TokenBackendError

from core.keyring import jwt_signing_key

REQUIRED_CLAIMS = ("user_id", "email", "org_id", "iat", "exp", "jti")


class InvalidSessionToken(Exception):
    pass


@dataclass(frozen=True)
class SessionClaims:
    user_id: str
    email: str
    org_id: str
    iat: int
    exp: int
    jti: str


def _backend() -> TokenBackend:
    return TokenBackend("HS256", signing_key=jwt_signing_key())


def session_token_issue(*, user_id: str, email: str, org_id: str) -> str:
    """A new 24-hour session JWT for this user."""
    now = int(time.time())
    payload = {
        "user_id": user_id,
        "email": email,
        "org_id": org_id,
        "iat": now,
        "exp": now + int(settings.JWT_LIFETIME.total_seconds()),
        "jti": uuid.uuid4().hex,
    }
    return _backend().encode(payload)


def session_token_decode(raw: str) -> SessionClaims:
    """Verified claims of a session JWT; raises InvalidSessionToken (bad signature, algorithm, expiry, shape)."""
    try:
        payload = _backend().decode(raw, verify=True)
    except TokenBackendError as exc:
        raise InvalidSessionToken(str(exc)) from None
    if not all(claim in payload for claim in REQUIRED_CLAIMS):
        raise InvalidSessionToken("Token is missing claims")
    try:
        return SessionClaims(**{claim: payload[claim] for claim in REQUIRED_CLAIMS})
    except TypeError:
        raise InvalidSessionToken("Token claims are malformed") from None
