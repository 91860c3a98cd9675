"""The organization's records, newest first, a page at a time."""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from core.paging import page_number
from dashboard.access import member_page
from provenance.selectors import record_page

RECORDS_PER_PAGE = 50


@require_safe
@member_page
def records_page(request):
    page = record_page(org=request.org, number=page_number(request.GET.get("page")), per_page=RECORDS_PER_PAGE)
    return render(request, "dashboard/records.html", {"page": page})
