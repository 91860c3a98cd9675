"""Public verification: one upload, or up to 50 base64 items. Free, unauthenticated, limited per IP."""

from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.throttles import VerifyIpThrottle
from config.uploads import limit_uploads, uploaded_bytes
from config.validation import validated
from verification import serializers as s
from verification.services import content_verify, contents_verify

VERIFY_UPLOAD_LIMIT = 50 * 1024 * 1024
BATCH_BODY_LIMIT = 36 * 1024 * 1024  # base64 of the batch budget (25 MB, verification/services.py) and JSON


class PublicVerificationView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]


class VerifyView(PublicVerificationView):
    parser_classes = [MultiPartParser]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        limit_uploads(request._request, VERIFY_UPLOAD_LIMIT)

    @extend_schema(
        request={"multipart/form-data": {"type": "object", "required": ["content"],
                                         "properties": {"content": {"type": "string", "format": "binary"},
                                                        "token": {"type": "string"}}}},
        responses={200: s.VerificationOutput}, tags=["verification"])
    def post(self, request):
        fields = validated(s.VerifyInput, request)
        result = content_verify(data=uploaded_bytes(request, "content"), token=fields.get("token") or None)
        return Response(s.VerificationOutput(result).data)


class VerifyBatchView(PublicVerificationView):
    max_body_bytes = BATCH_BODY_LIMIT

    @extend_schema(request=s.VerifyBatchInput, responses={200: s.VerificationOutput(many=True)},
                   tags=["verification"])
    def post(self, request):
        items = validated(s.VerifyBatchInput, request)["items"]
        VerifyIpThrottle().charge(request, len(items) - 1)  # a batch of N counts as N verifications
        results = contents_verify(items=[(item["content"], item.get("token") or None) for item in items])
        return Response(s.VerificationOutput(results, many=True).data)
