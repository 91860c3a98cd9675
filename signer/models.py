"""What the signer keeps in the database: how many signatures it made, per organization, generator, purpose,
algorithm and UTC day (signer/counting.py writes them; nothing else does), and which Redis folds of those
counts are already stored, so a fold retried after a crash is never added twice."""

from django.db import models
from django.utils import timezone


class SignatureCount(models.Model):
    """Signatures made on one UTC day for one organization, generator, purpose and algorithm.

    Plain ids rather than foreign keys: the count is the operator's record of what was signed and outlives a
    deleted organization or generator. Both are null for the deployment's own signatures (log checkpoints).
    """

    day = models.DateField()
    org_id = models.UUIDField(null=True, blank=True)
    generator_id = models.UUIDField(null=True, blank=True)
    purpose = models.CharField(max_length=32)
    algorithm = models.CharField(max_length=16)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-day", "org_id", "generator_id", "purpose", "algorithm"]
        constraints = [
            # Two partial constraints instead of one: NULLs are distinct in a unique index, so a checkpoint's
            # row (no generator) needs its own.
            models.UniqueConstraint(fields=["day", "org_id", "generator_id", "purpose", "algorithm"],
                                    condition=models.Q(generator_id__isnull=False), name="signature_count_unique"),
            models.UniqueConstraint(fields=["day", "purpose", "algorithm"],
                                    condition=models.Q(generator_id__isnull=True, org_id__isnull=True),
                                    name="signature_count_unique_deployment"),
            models.UniqueConstraint(fields=["day", "org_id", "purpose", "algorithm"],
                                    condition=models.Q(generator_id__isnull=True, org_id__isnull=False),
                                    name="signature_count_unique_org"),
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.purpose} {self.algorithm}: {self.count}"


class SignatureCountFold(models.Model):
    """One Redis fold (signer/counting.py) whose counts were added to SignatureCount, stored in the same
    transaction as them: a fold that a crash left in Redis after its commit is recognised and not added again."""

    token = models.CharField(max_length=64, primary_key=True)
    folded_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return self.token
