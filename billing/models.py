from django.db import models

from accounts.models import Organization, OrgScopedQuerySet


class UsageCounter(models.Model):
    """Signatures an organization made in one calendar month (UTC): one row, updated atomically."""

    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="usage_counters")
    period_start = models.DateField()
    signatures_used = models.PositiveIntegerField(default=0)
    # Whether this period's quota.limit webhook has fired: once per period, whether the allowance was
    # reached by a signature or first refused with 402.
    limit_announced = models.BooleanField(default=False)

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["org", "period_start"], name="usage_one_row_per_period")]

    def __str__(self) -> str:
        return f"{self.org_id} {self.period_start:%Y-%m}: {self.signatures_used}"
