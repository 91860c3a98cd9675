"""Tables of the shared infrastructure."""

from django.db import models


class RateCounter(models.Model):
    """The current fixed window of one rate-limited subject, when no Redis is configured.

    One row per subject (not per window): the increment is a single upsert that restarts the count
    when a later window begins, so the table grows with subjects, not with minutes. Rows of subjects
    that went quiet are deleted by `manage.py purge_expired`.
    """

    subject = models.CharField(max_length=200, unique=True)
    window_end = models.BigIntegerField(db_index=True)  # Unix time the current window closes
    hits = models.BigIntegerField()

    class Meta:
        db_table = "core_ratecounter"  # named in core/ratelimit.py's upsert

    def __str__(self) -> str:
        return f"{self.subject}: {self.hits} until {self.window_end}"


class IdempotentRequest(models.Model):
    """One organization's `Idempotency-Key`: the request it named and the response that request got.

    Written in the transaction that does the request's work (core/idempotency.py): a row is committed
    with its response and the records it created, or not at all. `org_id` is the credential's
    organization, kept without a foreign key because core imports no app; `purge_expired` deletes
    rows after 24 hours, an organization's included.
    """

    org_id = models.UUIDField()
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)  # SHA-256 hex of method, path, query, Prefer and body
    created_at = models.DateTimeField(db_index=True)
    status = models.PositiveSmallIntegerField(default=0)  # 0 while the request runs (never committed)
    headers = models.JSONField(default=list)  # [[name, value], ...] as the view answered them
    body = models.BinaryField(default=b"")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org_id", "key"], name="idempotency_org_key")]

    def __str__(self) -> str:
        return f"{self.key} of {self.org_id}: {self.status}"
