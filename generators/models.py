"""AI generators and every ML-DSA-65 key each has used (kept after rotation so old records verify)."""

import uuid

from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet
from media_codecs import label as labels
from media_codecs.disclosure import DEFAULT_SOURCE_TYPE, Disclosure, source_type_uri


class Generator(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        REVOKED = "revoked"

    class Mode(models.TextChoices):
        SERVER = "server"  # the service holds the keypair: POST /v1/sign
        CLIENT = "client"  # the caller signs and registers only public keys: POST /v1/records

    class C2paSigning(models.TextChoices):
        ML_DSA_65 = "ml-dsa-65"  # C2PA claim signed with ML-DSA-65 only
        HYBRID = "hybrid"  # ES256 claim signature (X.509 chain validators trust) + ML-DSA-65 countersignature

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="generators")
    name = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    mode = models.CharField(max_length=10, choices=Mode.choices)
    supported_formats = models.JSONField(default=list)
    c2pa_signing = models.CharField(max_length=10, choices=C2paSigning.choices, default=C2paSigning.ML_DSA_65)
    # What its files disclose (media_codecs/disclosure.py): the provider and system they name, and the IPTC
    # digital source type as declared (a term or its URI; files carry the URI).
    provider_name = models.CharField(max_length=200, blank=True, default="")
    system_name = models.CharField(max_length=200, blank=True, default="")
    system_version = models.CharField(max_length=100, blank=True, default="")
    digital_source_type = models.CharField(max_length=120, default=DEFAULT_SOURCE_TYPE)
    # The visible label `disclosure=visible` shows (media_codecs/label.py): its words, corner and size.
    label_text = models.CharField(max_length=80, default=labels.DEFAULT_TEXT)
    label_position = models.CharField(max_length=12, default="bottom-right",
                                      choices=[(position, position) for position in labels.POSITIONS])
    label_size = models.FloatField(default=labels.DEFAULT_SIZE)
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

    def disclosure(self, *, identifier: str, created: str) -> Disclosure:
        """What a file this generator signed discloses (media_codecs/disclosure.py): its declaration, the
        record's id and the signing time (ISO 8601)."""
        return Disclosure(source_type=source_type_uri(self.digital_source_type), provider_name=self.provider_name,
                          system_name=self.system_name, system_version=self.system_version, created=created,
                          identifier=identifier)

    @property
    def label(self) -> labels.Label:
        """The visible label as this generator words and places it."""
        return labels.Label(self.label_text, self.label_position, self.label_size)

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
    # Server-managed only: the 32-byte ML-DSA seed sealed with AES-256-GCM (core/sealing.py) when
    # `key_backend` is `sealed`; else the key lives in that backend (a PKCS#11 token, a cloud KMS) and
    # `key_reference` finds it there (signer/backends/).
    encrypted_private_key = models.BinaryField(null=True, blank=True, editable=False)
    key_backend = models.CharField(max_length=20, default="sealed", editable=False)
    key_reference = models.CharField(max_length=512, blank=True, default="", editable=False)
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


class CertificateAuthority(models.Model):
    """A CA certificate of the deployment's C2PA hierarchies: a root or an intermediate, run by the service
    (its private key sealed here) or installed by the operator (an intermediate from a trust-listed CA, and
    its root when given, which has no key here). The newest usable intermediate of a family issues."""

    class Family(models.TextChoices):
        ES256 = "es256"  # classical: ECDSA roots and intermediates, ES256 end entities
        ML_DSA_65 = "ml-dsa-65"

    class Kind(models.TextChoices):
        ROOT = "root"
        INTERMEDIATE = "intermediate"

    class Origin(models.TextChoices):
        SERVICE = "service"
        INSTALLED = "installed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    family = models.CharField(max_length=10, choices=Family.choices)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    # 1, 2, ... per family and kind: the unique constraint makes concurrent first use create one CA, and
    # the highest generation is the newest.
    generation = models.PositiveIntegerField()
    certificate = models.BinaryField()  # DER
    # Installed intermediates only: base64 DER of the CA certificates between it and its root, nearest first.
    chain = models.JSONField(default=list)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    # Sealed PKCS#8 DER (ECDSA) or 32-byte seed (ML-DSA); none for an installed root.
    encrypted_private_key = models.BinaryField(null=True, blank=True, editable=False)
    not_after = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["family", "kind", "generation"]
        constraints = [
            models.UniqueConstraint(fields=["family", "kind", "generation"], name="ca_family_kind_generation_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.family} {self.kind} G{self.generation} ({self.origin})"


class GeneratorCertificate(models.Model):
    """A generator key's end-entity certificates from the deployment CA, issued on first need and again
    when expired or when a newer intermediate issues: the ML-DSA-65 one for the key's own public key, and
    for hybrid generators an ES256 one for a P-256 key the service made and sealed."""

    key = models.OneToOneField(GeneratorKey, primary_key=True, on_delete=models.CASCADE, related_name="certificate")
    ml_dsa_certificate = models.BinaryField(null=True, blank=True)
    ml_dsa_issuer = models.ForeignKey(CertificateAuthority, null=True, blank=True, on_delete=models.PROTECT,
                                      related_name="+")
    es256_certificate = models.BinaryField(null=True, blank=True)
    es256_issuer = models.ForeignKey(CertificateAuthority, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="+")
    encrypted_es256_private_key = models.BinaryField(null=True, blank=True, editable=False)
    # Where the ES256 key lives: `sealed` (the column above) or a signer backend and its reference there.
    es256_key_backend = models.CharField(max_length=20, default="sealed", editable=False)
    es256_key_reference = models.CharField(max_length=512, blank=True, default="", editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"certificates of {self.key_id}"


class GeneratorUploadedCertificate(models.Model):
    """An organization's own ES256 certificate chain and key for a server-managed generator: used for its
    hybrid C2PA signatures instead of the deployment CA's."""

    generator = models.OneToOneField(Generator, primary_key=True, on_delete=models.CASCADE,
                                     related_name="uploaded_certificate")
    chain = models.JSONField()  # base64 DER, end entity first, no self-signed root
    encrypted_private_key = models.BinaryField(editable=False)  # sealed PKCS#8 DER of the P-256 key
    not_after = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"uploaded certificate of {self.generator_id}"
