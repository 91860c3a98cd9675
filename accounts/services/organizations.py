"""Rows of organizations, written for the apps above accounts. What plan an organization should be on is
decided, locked and audited by `billing.services.plan_change`."""

from accounts.models import Organization


def organization_plan_set(*, org: Organization, plan: str, billing_interval: str) -> None:
    """Store `org`'s plan and billing interval (the caller holds the row's lock and checked both values)."""
    Organization.objects.filter(pk=org.pk).update(plan=plan, billing_interval=billing_interval)
