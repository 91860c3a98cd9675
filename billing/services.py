"""State changes of billing: plan changes (usage counting arrives with the signing core)."""

from django.db import transaction

from accounts.models import Organization
from billing.plans import BILLING_INTERVALS, PLANS


def plan_change(*, org: Organization, plan: str, billing_interval: str | None = None) -> Organization:
    """Move an organization to `plan` (and optionally `billing_interval`). ValueError for unknown values."""
    if plan not in PLANS:
        raise ValueError(f"unknown plan {plan!r}")
    if billing_interval is not None and billing_interval not in BILLING_INTERVALS:
        raise ValueError(f"unknown billing interval {billing_interval!r}")
    with transaction.atomic():
        fields = {"plan": plan}
        if billing_interval:
            fields["billing_interval"] = billing_interval
        Organization.objects.filter(pk=org.pk).update(**fields)
    for name, value in fields.items():
        setattr(org, name, value)
    return org
