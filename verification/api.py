"""Public verification: one upload, or up to 50 base64 items. Free, unauthenticated, limited per IP."""

from drf_spectacular.utils import extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from core.cors import PublicCors
from core.errors import ValidationFailed
from core.parsers import LimitedJSONParser, LimitedRawParser
from core.throttles import VerifyIpThrottle, verification_charge
from core.uploads import limit_uploads, uploaded_bytes
from core.validation import validated, validated_query
from verification import serializers as s
from verification import soft_binding
from verification.services import content_verify, contents_verify

VERIFY_UPLOAD_LIMIT = 50 * 1024 * 1024
BATCH_BODY_LIMIT = 36 * 1024 * 1024  # base64 of the batch's bytes (25 MB, verification/services.py) and JSON


class PublicVerificationView(PublicCors, APIView):
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
                                         "properties": {"content": {"type": "string", "format": "binary",
                                                                    "minLength": 1},
                                                        "token": {"type": "string"}}}},
        responses={200: s.VerificationOutput}, tags=["verification"])
    def post(self, request):
        fields = validated(s.VerifyInput, request)
        result = content_verify(data=uploaded_bytes(request, "content"), token=fields.get("token") or None,
                                charge=verification_charge(request))
        return Response(s.verification_body(result))


class VerifyBatchView(PublicVerificationView):
    max_body_bytes = BATCH_BODY_LIMIT

    @extend_schema(request=s.VerifyBatchInput, responses={200: s.VerificationOutput(many=True)},
                   tags=["verification"])
    def post(self, request):
        items = validated(s.VerifyBatchInput, request)["items"]
        results = contents_verify(items=[(item["content"], item.get("token") or None) for item in items],
                                  charge=verification_charge(request))
        return Response([s.verification_body(result) for result in results])


class SoftBindingView(PublicVerificationView):
    """C2PA's Soft Binding Resolution API: watermark ids and fingerprints to manifest ids (record ids)."""

    @staticmethod
    def matches_body(matches: list[soft_binding.Match]) -> dict:
        return {"matches": [{"manifestId": str(m.record_id), "similarityScore": m.similarity} for m in matches]}

    @staticmethod
    def max_results(request) -> int:
        return validated_query(s.SoftBindingLimit, request)["maxResults"]


class MatchesByBindingView(SoftBindingView):
    parser_classes = [LimitedJSONParser]

    @extend_schema(parameters=[s.SoftBindingQuery, s.SoftBindingLimit], responses={200: s.SoftBindingMatches},
                   tags=["c2pa"])
    def get(self, request):
        query = validated_query(s.SoftBindingQuery, request)
        return self._answer(request, query)

    @extend_schema(parameters=[s.SoftBindingLimit], request=s.SoftBindingQuery,
                   responses={200: s.SoftBindingMatches}, tags=["c2pa"])
    def post(self, request):
        """For values too long for a URL (the API's POST form); ours fit either way."""
        return self._answer(request, validated(s.SoftBindingQuery, request))

    def _answer(self, request, query: dict) -> Response:
        matches = soft_binding.matches_by_binding(alg=query["alg"], value=query["value"],
                                                  max_results=self.max_results(request))
        return Response(self.matches_body(matches))


class MatchesByContentView(SoftBindingView):
    """The asset as the body (`image/png`, as the API sends it) or as a multipart `content` file."""

    parser_classes = [MultiPartParser, LimitedRawParser]
    max_body_bytes = VERIFY_UPLOAD_LIMIT

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        limit_uploads(request._request, VERIFY_UPLOAD_LIMIT)

    @extend_schema(parameters=[s.SoftBindingContentQuery, s.SoftBindingLimit],
                   request={"image/*": {"type": "string", "format": "binary"},
                            "multipart/form-data": {"type": "object", "required": ["content"],
                                                    "properties": {"content": {"type": "string", "format": "binary"}}}},
                   responses={200: s.SoftBindingMatches}, tags=["c2pa"])
    def post(self, request):
        query = validated_query(s.SoftBindingContentQuery, request)
        data = uploaded_bytes(request, "content") if request.content_type.startswith("multipart/") else request.data
        if not isinstance(data, bytes) or not data:
            raise ValidationFailed(details={"content": ["Send the asset as the request body or a `content` file."]})
        matches = soft_binding.matches_by_content(data=data, alg=query.get("alg") or None,
                                                  max_results=self.max_results(request),
                                                  charge=verification_charge(request))
        return Response(self.matches_body(matches))


class SupportedAlgorithmsView(PublicVerificationView):
    @extend_schema(responses={200: dict}, tags=["c2pa"])
    def get(self, request):
        return Response(soft_binding.supported_algorithms())
