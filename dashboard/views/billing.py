"""Billing: the plan table, the organization's plan and usage, the target of `upgrade_url`, and the
owner's plan request (recorded, emailed to the staff at BILLING_CONTACT_EMAIL, applied by them)."""

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from accounts.models import Role
from accounts.plans import PLANS
from billing import services
from billing.selectors import pending_plan_request, usage_for_org
from dashboard.access import action_lives_on, member_page
from dashboard.forms import PlanRequestForm


@require_safe
@member_page
def billing_page(request):
    return _billing_page(request)


def _billing_page(request, form: PlanRequestForm | None = None, status: int = 200):
    wanted = request.GET.get("plan")
    wanted = wanted if wanted in PLANS else None
    org = request.org
    form = form or PlanRequestForm(initial={"plan": wanted or org.plan, "billing_interval": org.billing_interval})
    return render(request, "dashboard/billing.html", {
        "plans": list(PLANS.values()), "usage": usage_for_org(org), "current": org.plan, "wanted": wanted,
        "pending": pending_plan_request(org), "form": form, "is_owner": request.user.role == Role.OWNER,
        "contact": settings.BILLING_CONTACT_EMAIL}, status=status)


@require_http_methods(["GET", "POST"])
@member_page
def plan_request_create(request):
    if request.method == "GET":
        return action_lives_on(request, "dashboard:billing", "Choose a plan with the form on this page.")
    form = PlanRequestForm(request.POST)
    if not form.is_valid():
        return _billing_page(request, form=form, status=400)
    wanted = services.plan_request_create(org=request.org, actor=request.user, **form.cleaned_data)
    messages.success(request, f"Your request for {PLANS[wanted.plan].label}, billed {wanted.billing_interval}, "
                              f"is sent to {settings.BILLING_CONTACT_EMAIL}. Our staff apply it once payment is "
                              "arranged, and write to you.")
    return redirect("dashboard:billing")


@require_http_methods(["GET", "POST"])
@member_page
def plan_request_cancel(request, request_id):
    if request.method == "POST":
        services.plan_request_cancel(org=request.org, actor=request.user, request_id=request_id)
        messages.success(request, "Your plan request is cancelled; your plan stays as it is.")
        return redirect("dashboard:billing")
    pending = pending_plan_request(request.org)
    if pending is None or pending.pk != request_id:
        return action_lives_on(request, "dashboard:billing", "That plan request is no longer pending.")
    return render(request, "dashboard/confirm.html", {
        "title": f"Cancel your request for {PLANS[pending.plan].label}?", "body": "Your plan stays as it is.",
        "button": "Cancel the request", "cancel": "dashboard:billing"})
