import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from accounts.models import Organization, OrgScopedQuerySet
from accounts.plans import BILLING_INTERVALS, PLAN_NAMES


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


class PlanRequest(models.Model):
    """An owner's request to change the plan or billing interval, made on the billing page.

    No payment processor is reachable: staff are emailed, and apply it from the admin, which changes
    the plan through `billing.services.plan_change` (audited `billing.plan_changed`). An organization
    has at most one pending request; a new one replaces it.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        APPLIED = "applied"
        CANCELLED = "cancelled"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    org = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="plan_requests")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    requested_by_email = models.EmailField()  # kept when the member leaves
    plan = models.CharField(max_length=20, choices=[(p, p) for p in PLAN_NAMES])
    billing_interval = models.CharField(max_length=10, choices=[(i, i) for i in BILLING_INTERVALS])
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=254, blank=True, default="")  # a staff email, or the owner's

    objects = OrgScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["org"], condition=models.Q(status="pending"),
                                               name="plan_request_one_pending_per_org")]

    def __str__(self) -> str:
        return f"{self.org_id}: {self.plan} ({self.billing_interval}), {self.status}"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING
