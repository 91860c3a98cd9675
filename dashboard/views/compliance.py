"""The compliance report: the period's signatures per format with the disclosures their files carried and
the verifications of the organization's content, as GET /v1/compliance/report gives them; CSV and PDF
downloads (the same bytes as the API's) for Growth and above."""

from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from accounts.gates import owner_email_verified, require_feature
from accounts.plans import plan_allows
from dashboard.access import member_page
from dashboard.forms import ComplianceReportForm
from dashboard.views.downloads import bare_address_redirect, checked_format
from provenance.compliance import Period, compliance_download, compliance_report, detection_tool_url

DOCUMENT_FORMATS = ("csv", "pdf")


def _form(request) -> ComplianceReportForm:
    return ComplianceReportForm(request.GET, today=timezone.now().date())


def _period(form: ComplianceReportForm) -> Period:
    since, until = form.bounds()
    return Period(since=since, until=until)


@require_safe
@member_page
def compliance_page(request):
    form = _form(request)
    can_download = plan_allows(request.org.plan, "compliance_export")
    context = {"form": form, "can_download": can_download, "formats": DOCUMENT_FORMATS,
               "detection_tool_url": detection_tool_url(),
               "owner_verified": owner_email_verified(request.org) if can_download else None}
    if form.is_valid():  # else the form shows what is wrong, and no figures
        report = compliance_report(org=request.org, period=_period(form))
        first, last = form.days()
        context.update(report=report, first=first, last=last, total=report.total,
                       period_query={"from": first.isoformat(), "to": last.isoformat()})
    return render(request, "dashboard/compliance.html", context)


@require_safe
@member_page
def compliance_download_view(request):
    require_feature(request.org, "compliance_export")  # the error page with 402 or 403, as the API answers
    bare = bare_address_redirect(request, page="dashboard:compliance",
                                 hint="Download from this page: choose CSV or PDF.")
    if bare is not None:
        return bare
    form = _form(request)
    format = checked_format(request, form, DOCUMENT_FORMATS)
    return compliance_download(report=compliance_report(org=request.org, period=_period(form)), format=format)
