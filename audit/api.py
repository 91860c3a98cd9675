from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.gates import require_feature
from audit.selectors import audit_count, audit_page
from audit.serializers import AuditExportInput, AuditFilterInput, AuditPageOutput, AuditQueryInput
from audit.streaming import audit_export_response
from core.validation import validated_query


class AuditLogView(APIView):
    """The caller's organization's audit log, newest first, one page at a time, optionally filtered."""

    @extend_schema(parameters=[AuditQueryInput], responses={200: AuditPageOutput}, tags=["audit"])
    def get(self, request):
        query = validated_query(AuditQueryInput, request)
        filters = AuditFilterInput.as_filter(query)
        page = audit_page(org=request.org, number=query["page"], per_page=query["limit"], filters=filters)
        body = {"events": page.items, "total": audit_count(org=request.org, filters=filters), "page": page.number,
                "limit": page.per_page}
        return Response(AuditPageOutput(body).data)


class AuditExportEnabled(BasePermission):
    """402 `plan_required` below Growth, then 403 `email_not_verified`, like every plan-gated feature."""

    def has_permission(self, request, view) -> bool:
        require_feature(request.org, "audit_export")
        return True


class ExportFormatNegotiation(DefaultContentNegotiation):
    """`?format=` names the export's format here, not one of DRF's renderers: errors are always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


EXPORT_BODY = "Newest first. CSV: header `event_id,type,timestamp,metadata`; JSON: an array of audit events."


class AuditExportView(APIView):
    """The whole (filtered) audit log as one CSV or JSON download, streamed (Growth and above)."""

    permission_classes = [IsAuthenticated, AuditExportEnabled]
    content_negotiation_class = ExportFormatNegotiation

    @extend_schema(parameters=[AuditExportInput], tags=["audit"], responses={
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=EXPORT_BODY),
        (200, "application/json"): OpenApiResponse(OpenApiTypes.STR, description=EXPORT_BODY),
        402: OpenApiResponse(description="`plan_required`: the organization's plan is below Growth.")})
    def get(self, request):
        query = validated_query(AuditExportInput, request)
        return audit_export_response(org=request.org, filters=AuditFilterInput.as_filter(query),
                                     format=query["format"])
