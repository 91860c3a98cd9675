"""API keys, the organization's and members' personal ones: created with the value shown once, revoked at once."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts.credentials import new_api_key
from accounts.models import ApiKey, ApiKeyQuerySet, Organization, User
from core.errors import NotFound, ValidationFailed

MAX_ACTIVE_KEYS_PER_ORG = 100
# last_used_at is refreshed at most this often, so a busy key does not write on every request.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@dataclass(frozen=True)
class CreatedApiKey:
    api_key: ApiKey
    key: str  # the full value; never stored, never shown again


def api_key_create(*, org: Organization, created_by: User | None, name: str = "") -> CreatedApiKey:
    """A new organization key. Raises ValidationFailed past MAX_ACTIVE_KEYS_PER_ORG active keys."""
    return _api_key_insert(org=org, created_by=created_by, name=name, user=None)


def personal_api_key_create(*, org: Organization, user: User, created_by: User) -> CreatedApiKey:
    """A new personal key of `user` (a member of `org`), acting for that organization.

    Personal keys count toward the same cap as organization keys. Raises ValidationFailed past it.
    """
    return _api_key_insert(org=org, created_by=created_by, name="", user=user)


def _api_key_insert(*, org: Organization, created_by: User | None, name: str, user: User | None) -> CreatedApiKey:
    with transaction.atomic():
        # Lock the organization row so two concurrent creates cannot both pass the cap.
        Organization.objects.select_for_update().filter(pk=org.pk).first()
        if ApiKey.objects.for_org(org).active().count() >= MAX_ACTIVE_KEYS_PER_ORG:
            raise ValidationFailed(f"An organization may have at most {MAX_ACTIVE_KEYS_PER_ORG} active keys.")
        new = new_api_key()
        api_key = ApiKey.objects.create(org=org, created_by=created_by, user=user, name=name,
                                        lookup_id=new.lookup_id, digest=new.digest, preview=new.preview)
    return CreatedApiKey(api_key=api_key, key=new.key)


def api_key_revoke(*, org: Organization, key_id) -> ApiKey:
    """Revoke one of the organization's own keys (not a personal key); it stops working on the next request.

    Raises NotFound.
    """
    return _api_key_revoke(ApiKey.objects.for_org(org).organization_keys(), key_id)


def personal_api_key_revoke(*, org: Organization, user: User, key_id) -> ApiKey:
    """Revoke one of `user`'s personal keys; it stops working on the next request. Raises NotFound."""
    return _api_key_revoke(ApiKey.objects.for_org(org).personal_of(user), key_id)


def _api_key_revoke(keys: ApiKeyQuerySet, key_id) -> ApiKey:
    api_key = keys.active().filter(pk=key_id).first()
    if api_key is None:
        raise NotFound()
    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    return api_key


def api_key_touch(*, api_key: ApiKey) -> None:
    """Record that `api_key` was just used; writes at most once per LAST_USED_RESOLUTION (no query otherwise)."""
    now = timezone.now()
    if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
        # One UPDATE, no transaction: concurrent requests may both write, each a correct "last used" time.
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
