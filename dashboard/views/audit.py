"""The organization's audit log, newest first, a page at a time."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from audit.selectors import audit_page
from config.paging import page_number
from dashboard.access import member_page

EVENTS_PER_PAGE = 50


@require_safe
@member_page
def audit_page_view(request):
    page = audit_page(org=request.org, number=page_number(request.GET.get("page")), per_page=EVENTS_PER_PAGE)
    return render(request, "dashboard/audit.html", {"page": page})
