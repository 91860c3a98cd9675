from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.models import AuditEvent
from audit.serializers import AuditPageOutput, AuditQueryInput


class AuditLogView(APIView):
    """The caller's organization's audit log, newest first, one page at a time."""

    @extend_schema(parameters=[AuditQueryInput], responses={200: AuditPageOutput}, tags=["audit"])
    def get(self, request):
        query = AuditQueryInput(data=request.query_params)
        query.is_valid(raise_exception=True)
        page, limit = query.validated_data["page"], query.validated_data["limit"]
        events = AuditEvent.objects.for_org(request.org)
        offset = (page - 1) * limit
        body = {"events": events[offset:offset + limit], "total": events.count(), "page": page, "limit": limit}
        return Response(AuditPageOutput(body).data)
