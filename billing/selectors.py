from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import connection
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Organization
from accounts.plans import get_plan
from billing.models import PlanRequest, UsageCounter
from billing.periods import period_bounds, period_start


@dataclass(frozen=True)
class Usage:
    plan: str
    billing_interval: str
    signatures_used: int
    signatures_included: int | None
    overage_rate: Decimal
    overage_count: int
    period_start: datetime
    period_end: datetime


def signatures_used_this_month(org: Organization) -> int:
    """Signatures the organization made in the current calendar month (UTC)."""
    # Read on every usage call and quota check: plain SQL, since compiling the ORM's query cost more
    # than running it (docs/performance.md, "Figures behind code comments").
    # (org, period_start) is unique.
    table = UsageCounter._meta.db_table
    org_value = UsageCounter._meta.get_field("org").get_db_prep_value(org.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT signatures_used FROM {table} WHERE org_id = %s AND period_start = %s",  # noqa: S608
                       [org_value, period_start(timezone.now())])
        row = cursor.fetchone()
    return row[0] if row else 0


def usage_for_org(org: Organization) -> Usage:
    """The organization's usage in the current calendar month (UTC)."""
    now = timezone.now()
    plan = get_plan(org.plan)
    used = signatures_used_this_month(org)
    included = plan.included_signatures
    overage = max(0, used - included) if included is not None and not plan.blocks_at_limit else 0
    start, end = period_bounds(now)
    return Usage(plan=plan.name, billing_interval=org.billing_interval, signatures_used=used,
                 signatures_included=included, overage_rate=plan.overage_rate, overage_count=overage,
                 period_start=start, period_end=end)


def organizations_with_usage(organizations: QuerySet) -> QuerySet:
    """`organizations` annotated with `signatures_this_period` (this calendar month, UTC): one subquery on the
    unique (org, period_start) index, so a list of organizations costs no query per row."""
    counter = UsageCounter.objects.filter(org=OuterRef("pk"), period_start=period_start(timezone.now()))
    return organizations.annotate(
        signatures_this_period=Coalesce(Subquery(counter.values("signatures_used")[:1]), Value(0)))


def pending_plan_request(org: Organization) -> PlanRequest | None:
    """The organization's pending plan request, if it has one."""
    return PlanRequest.objects.for_org(org).filter(status=PlanRequest.Status.PENDING).first()
