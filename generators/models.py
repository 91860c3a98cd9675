"""AI generators and every ML-DSA-65 key each has used (kept after rotation so old records verify)."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet


class Generator(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        REVOKED = "revoked"

    class Mode(models.TextChoices):
        SERVER = "server"  # the service holds the keypair: POST /v1/sign
        CLIENT = "client"  # the caller signs and registers only public keys: POST /v1/records

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="generators")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    mode = models.CharField(max_length=10, choices=Mode.choices)
    supported_formats = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.mode}, {self.status})"

    @property
    def is_revoked(self) -> bool:
        return self.status == self.Status.REVOKED

    @property
    def is_server_managed(self) -> bool:
        return self.mode == self.Mode.SERVER

    @property
    def current_keys(self) -> list["GeneratorKey"]:
        """The key new signatures use, as a list (the spec's `public_keys`); works on prefetched keys."""
        return [key for key in self.keys.all() if key.retired_at is None]


# The key new signatures use: a rotation sets `retired_at` on the one before.
_CURRENT = models.Q(retired_at__isnull=True)


class GeneratorKeyQuerySet(models.QuerySet):
    def current(self) -> "GeneratorKeyQuerySet":
        return self.filter(_CURRENT)


class GeneratorKey(models.Model):
    """One public key of a generator; `retired_at` is set when a rotation replaces it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    generator = models.ForeignKey(Generator, on_delete=models.CASCADE, related_name="keys")
    kid = models.CharField(max_length=64)
    algorithm = models.CharField(max_length=20, default="ml-dsa-65")
    public_key = models.BinaryField()
    # Server-managed only: the 32-byte ML-DSA seed sealed with AES-256-GCM (core/sealing.py).
    encrypted_private_key = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = GeneratorKeyQuerySet.as_manager()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["generator", "kid"], name="generator_kid_unique"),
            # At most one current key per generator: new signatures use it.
            models.UniqueConstraint(fields=["generator"], condition=_CURRENT, name="generator_one_current_key"),
        ]

    def __str__(self) -> str:
        return f"{self.kid} of {self.generator_id}"
