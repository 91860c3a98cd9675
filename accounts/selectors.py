"""Reads of the auth layer: credentials to principals."""

import uuid

from accounts import blocklist
from accounts.credentials import api_key_lookup_id, digests_match
from accounts.jwt_sessions import InvalidSessionToken, SessionClaims, session_token_decode
from accounts.models import ApiKey, Organization, User
from core.errors import NotFound
from core.hot_sql import ChildWithParents

# Every authenticated request runs one of these: SQL built once (core.hot_sql.py).
# lookup_id and the primary key are unique, so LIMIT 1 needs no ORDER BY.
_ACTIVE_KEY_BY_LOOKUP_ID = ChildWithParents(ApiKey, "org", match=("lookup_id",), where=ApiKey.objects.active())
_ACTIVE_USER_BY_ID = ChildWithParents(User, "org", match=("id",), where=User.objects.filter(is_active=True))


def api_key_for_credential(raw: str) -> ApiKey | None:
    """The active API key matching a presented `svc_key_` value, with its organization; else None."""
    lookup_id = api_key_lookup_id(raw)
    if lookup_id is None:
        return None
    api_key = _ACTIVE_KEY_BY_LOOKUP_ID.get(lookup_id)
    if api_key is None or not digests_match(api_key.digest, raw):
        return None
    return api_key


def user_for_session_token(raw: str) -> tuple[User, SessionClaims] | None:
    """The active user a valid, unrevoked session JWT names, with its claims; else None."""
    try:
        claims = session_token_decode(raw)
    except InvalidSessionToken:
        return None
    if blocklist.is_blocked(claims.jti):
        return None
    try:
        user_id = uuid.UUID(claims.user_id)
    except (ValueError, TypeError, AttributeError):
        return None
    user = _ACTIVE_USER_BY_ID.get(user_id)
    if user is None or str(user.org_id) != claims.org_id:
        return None
    if user.sessions_valid_after and claims.iat <= int(user.sessions_valid_after.timestamp()):
        # `iat` has whole seconds: a token of the same second as the password change may be older than
        # it, so it is refused too (session_token_for dates new sessions from the next second).
        return None
    return user, claims


def recovery_codes_remaining(*, user: User) -> int:
    """How many of the user's two-factor recovery codes are still unused."""
    return user.recovery_codes.filter(used_at__isnull=True).count()


def organization_api_keys(*, org: Organization) -> list[ApiKey]:
    """The organization's active keys (not members' personal ones), newest first."""
    return list(ApiKey.objects.for_org(org).active().organization_keys().order_by("-created_at"))


def personal_api_keys(*, org: Organization, user: User) -> list[ApiKey]:
    """`user`'s active personal keys in `org`, newest first."""
    return list(ApiKey.objects.for_org(org).active().personal_of(user).order_by("-created_at"))


def api_key_made_by(*, org: Organization, user: User, key_id: uuid.UUID) -> ApiKey:
    """A key of `org` (organization or personal, in any state) that `user` created: the dashboard's page
    that shows a new key once. Raises NotFound (another organization's key, or someone else's)."""
    key = ApiKey.objects.for_org(org).filter(pk=key_id, created_by=user).select_related("user").first()
    if key is None:
        raise NotFound("No such key.")
    return key
