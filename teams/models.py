"""Team invites. Members themselves are `accounts.User` rows with a role."""

import uuid
from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet, Role, User

INVITE_LIFETIME = timedelta(days=7)  # spec, Limits: invite validity


class InviteQuerySet(OrgScopedQuerySet):
    def pending(self, now: datetime | None = None) -> "InviteQuerySet":
        """Neither accepted nor expired. (A cancelled invite is deleted.)"""
        return self.filter(accepted_at__isnull=True, expires_at__gt=now or timezone.now())


class Invite(models.Model):
    """An emailed invitation to join an organization. Only a SHA-256 digest of the link's token is stored."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invites")
    email = models.EmailField(max_length=254)  # stored normalised (accounts.models.normalize_email)
    role = models.CharField(max_length=10, choices=[(Role.USER, "User"), (Role.ADMIN, "Admin")])
    inviter = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Re-inviting an email sets the older invite's expires_at to the moment of the new one.
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)

    objects = InviteQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["org", "email"], name="invite_org_email")]
        constraints = [models.CheckConstraint(condition=models.Q(role__in=[Role.USER, Role.ADMIN]),
                                              name="invite_role_user_or_admin")]

    def __str__(self) -> str:
        return f"invite of {self.email} as {self.role}"
