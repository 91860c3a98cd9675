"""The organization's audit log in words, newest first, a page at a time, filtered by type and days;
and its export, the same bytes as GET /v1/audit/export, for Growth and above."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from accounts.gates import owner_email_verified, require_feature
from accounts.plans import plan_allows
from audit.export import FORMATS
from audit.selectors import NO_FILTER, audit_names, audit_page
from audit.streaming import audit_export_response
from audit.wording import describe
from core.paging import page_number
from dashboard.access import member_page
from dashboard.forms import AuditFilterForm
from dashboard.views.downloads import bare_address_redirect, checked_format

EVENTS_PER_PAGE = 50


@require_safe
@member_page
def audit_page_view(request):
    form = AuditFilterForm(request.GET)
    can_export = plan_allows(request.org.plan, "audit_export")
    context = {"form": form, "can_export": can_export, "formats": FORMATS,
               "owner_verified": owner_email_verified(request.org) if can_export else None}
    if form.is_valid():  # else the form shows what is wrong, and no events
        filters = form.audit_filter()
        page = audit_page(org=request.org, number=page_number(request.GET.get("page")), per_page=EVENTS_PER_PAGE,
                          filters=filters)
        names = audit_names(org=request.org, events=page.items)
        context.update(page=page, filtered=filters != NO_FILTER,
                       rows=[(event, describe(event.type, event.metadata, names)) for event in page.items])
    return render(request, "dashboard/audit.html", context)


@require_safe
@member_page
def audit_export_view(request):
    require_feature(request.org, "audit_export")  # the error page with 402 or 403, as the API answers
    bare = bare_address_redirect(request, page="dashboard:audit", hint="Export from this page: choose CSV or JSON.")
    if bare is not None:
        return bare
    form = AuditFilterForm(request.GET)
    format = checked_format(request, form, FORMATS)
    return audit_export_response(org=request.org, filters=form.audit_filter(), format=format)
