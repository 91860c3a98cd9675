"""Rows of organizations, written for the apps above accounts. What plan an organization should be on is
decided, locked and audited by `billing.services.plan_change`; which webhook endpoints are active, by
`webhooks.services.endpoints_snapshot_refresh`."""

from accounts.models import Organization


def organization_plan_set(*, org: Organization, plan: str, billing_interval: str) -> None:
    """Store `org`'s plan and billing interval (the caller holds the row's lock and checked both values)."""
    Organization.objects.filter(pk=org.pk).update(plan=plan, billing_interval=billing_interval)


def organization_webhooks_set(*, org_id, endpoints: list[dict]) -> None:
    """Store the organization's active webhook endpoints as delivery reads them (the caller holds the row's
    lock, in the transaction of the endpoint change)."""
    Organization.objects.filter(pk=org_id).update(active_webhooks=endpoints)
