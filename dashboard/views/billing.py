"""Billing: the plan table, the organization's plan and usage, and the target of `upgrade_url`."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from billing.plans import PLANS
from billing.selectors import usage_for_org
from dashboard.access import member_page


@require_safe
@member_page
def billing_page(request):
    wanted = request.GET.get("plan")
    return render(request, "dashboard/billing.html", {
        "plans": list(PLANS.values()), "usage": usage_for_org(request.org),
        "current": request.org.plan, "wanted": wanted if wanted in PLANS else None})
