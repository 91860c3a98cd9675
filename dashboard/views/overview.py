"""The overview: plan, this month's usage against the allowance with signatures per day, recent activity."""

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from audit.selectors import audit_names, audit_recent
from audit.wording import describe
from billing.periods import period_bounds
from billing.selectors import usage_for_org
from dashboard.access import member_page
from dashboard.charts import daily_chart
from provenance.selectors import signatures_per_day

RECENT_EVENTS = 10


@require_safe
@member_page
def overview_page(request):
    org = request.org
    usage = usage_for_org(org)
    start, _ = period_bounds(timezone.now())
    chart = daily_chart(signatures_per_day(org=org, since=start), start.date(), timezone.now().date())
    percent = None
    if usage.signatures_included:
        percent = min(100, round(100 * usage.signatures_used / usage.signatures_included))
    events = audit_recent(org=org, limit=RECENT_EVENTS)
    names = audit_names(org=org, events=events)
    return render(request, "dashboard/overview.html", {
        "usage": usage, "percent": percent, "chart": chart,
        "rows": [(event, describe(event.type, event.metadata, names)) for event in events]})
