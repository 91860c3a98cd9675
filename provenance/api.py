"""/v1/records: submit client-signed records (one or a batch), fetch and export them publicly."""

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import AllowAny, BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.gates import require_feature
from audit.api import ExportFormatNegotiation
from core.cors import PublicCors
from core.idempotency import idempotent
from core.throttles import VerifyIpThrottle
from core.uploads import limit_uploads, uploaded_bytes
from core.validation import validated, validated_query
from media_codecs import FAMILIES
from provenance import selectors, services
from provenance import serializers as s
from provenance.c2pa_embed import record_c2pa_embed
from provenance.c2pa_json import c2pa_manifest
from provenance.compliance import compliance_download, compliance_report, report_period
from provenance.signing import content_sign

# What POST /v1/sign answers with: each codec's MIME type without its parameters (tests/config/test_openapi.py
# checks the list against the codec registry).
SIGNED_MEDIA_TYPES = ("image/jpeg", "image/png", "image/webp", "audio/wav", "audio/flac", "audio/mpeg", "text/plain",
                      "text/html", "application/pdf", "video/mp4", "video/quicktime", "video/x-matroska", "video/webm")
SIGNED_CONTENT = OpenApiResponse(OpenApiTypes.BINARY, description="The signed content, in the format it came in")

# The body names a generator: 404 for an unknown or revoked one (403 for another organization's).
GENERATOR_NOT_FOUND = OpenApiResponse(description="`not_found`: the body's generator_id is unknown or revoked.")
# The generator's sealed private key does not unseal (its KEY_ENCRYPTION_KEY id was removed too early).
KEY_UNAVAILABLE = OpenApiResponse(description="`key_unavailable`: the service cannot use the generator's private "
                                              "key (a key-custody fault of the operator's; logged).")

BATCH_BODY_LIMIT = 10 * 1024 * 1024  # spec: batch record request body 10 MB

# The routes that sign or store take it (core/idempotency.py).
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
    description="Up to 255 visible ASCII characters (a UUID). The same key and request within 24 hours replays "
                "the first response (header `Idempotent-Replayed: true`) without doing anything again; the same "
                "key with another request is 409 `idempotency_conflict`.")


def _submission(item: dict) -> services.Submission:
    return services.Submission(**item)


def _created(record) -> dict:
    return {"pk": record.pk, "token": selectors.record_token(record.pk)}


C2PA_FIELD = ("true: the signed file comes back carrying a C2PA manifest for the record (JPEG, PNG, WebP, WAV, "
              "MP3, FLAC, MP4, MOV, PDF; Growth and above), still one signature. Other formats carry their token "
              "only; the `X-Service-C2pa` header says `embedded` or `none`.")
WATERMARK_FIELD = ("false: the content is signed without the watermark (its token and fingerprints only). A video "
                   "over 20 seconds of 1080p (or the same number of pixels) is marked only through "
                   "`Prefer: respond-async`; synchronously it is signed without the mark.")
DISCLOSURE_FIELD = ("visible: a label a person sees, worded, placed and sized as the generator's `label_text`, "
                    "`label_position` and `label_size` say: a corner label on images, a leading line on plain text, "
                    "a leading paragraph in HTML; other formats are 400 `validation_error`. The invisible mark "
                    "is embedded over it.")
SIGN_UPLOAD_LIMIT = 50 * 1024 * 1024  # spec: sign upload and embed asset 50 MB
# The content comes back in its own format (image/png, audio/mpeg, ...), not as octet-stream.
SIGN_RESPONSES = {**{(201, media_type): SIGNED_CONTENT for media_type in SIGNED_MEDIA_TYPES},
                  404: GENERATOR_NOT_FOUND, 503: KEY_UNAVAILABLE}
EMBED_RESPONSES = {**{(200, media_type): OpenApiResponse(OpenApiTypes.BINARY, description="The asset with its manifest")
                      for media_type in ("image/jpeg", "image/png")},
                   503: KEY_UNAVAILABLE}
# Both routes' schemas in full: jobs/api.py extends them with the asynchronous answer.
SIGN_SCHEMA = {
    "request": {"multipart/form-data": {"type": "object", "required": ["content", "model", "generator_id"],
                                        "properties": {"content": {"type": "string", "format": "binary"},
                                                       "model": {"type": "string"},
                                                       "generator_id": {"type": "string", "format": "uuid"},
                                                       "format": {"type": "string", "enum": list(FAMILIES)},
                                                       "c2pa": {"type": "boolean", "default": False,
                                                                "description": C2PA_FIELD},
                                                       "watermark": {"type": "boolean", "default": True,
                                                                     "description": WATERMARK_FIELD},
                                                       "disclosure": {"type": "string", "enum": ["visible"],
                                                                      "description": DISCLOSURE_FIELD}}}},
    "responses": SIGN_RESPONSES, "parameters": [IDEMPOTENCY_KEY], "tags": ["signing"]}
EMBED_SCHEMA = {
    "request": {"multipart/form-data": {"type": "object", "required": ["content"],
                                        "properties": {"content": {"type": "string", "format": "binary"}}}},
    "responses": EMBED_RESPONSES, "parameters": [IDEMPOTENCY_KEY], "tags": ["records"]}


class SignView(APIView):
    """Server-managed signing: the content comes back watermarked, signed and carrying its token."""

    parser_classes = [MultiPartParser]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        limit_uploads(request._request, SIGN_UPLOAD_LIMIT)  # before the body is parsed

    @extend_schema(**SIGN_SCHEMA)
    @idempotent
    def post(self, request):
        return self.answer(request)

    def answer(self, request) -> HttpResponse:
        """The signed file (jobs/api.py answers `Prefer: respond-async` with a job instead)."""
        fields = validated(s.SignInput, request)
        data = uploaded_bytes(request, "content")
        signed = content_sign(org=request.org, generator_id=fields["generator_id"], model=fields["model"],
                              data=data, declared_family=fields.get("format"), c2pa=fields["c2pa"],
                              watermark=fields["watermark"], visible=fields["disclosure"] == "visible")
        response = HttpResponse(signed.data, status=status.HTTP_201_CREATED, content_type=signed.codec.mime_type)
        response["X-Service-Token"] = signed.token
        response["X-Service-Record-Id"] = str(signed.record.pk)
        response["X-Service-Format"] = signed.codec.family
        response["X-Service-C2pa"] = "embedded" if signed.manifest else "none"
        return response


class RecordListCreateView(APIView):
    """GET: the caller's organization's records, newest first. POST: submit one client-signed record."""

    @extend_schema(parameters=[s.RecordListQuery], responses={200: s.RecordPageOutput}, tags=["records"],
                   operation_id="records_list")
    def get(self, request):
        query = validated_query(s.RecordListQuery, request)
        filters = selectors.RecordFilters(generator_id=query.get("generator_id"), model=query.get("model"),
                                          format=query.get("format"), signed_from=query.get("from"),
                                          signed_to=query.get("to"))
        records, total = selectors.record_list(org=request.org, filters=filters, page=query["page"],
                                               limit=query["limit"])
        body = {"records": records, "total": total, "page": query["page"], "limit": query["limit"]}
        return Response(s.RecordPageOutput(body).data)

    @extend_schema(request=s.RecordCreateInput, responses={201: s.RecordCreatedOutput, 404: GENERATOR_NOT_FOUND},
                   parameters=[IDEMPOTENCY_KEY], tags=["records"])
    @idempotent
    def post(self, request):
        data = validated(s.RecordCreateInput, request)
        record = services.record_submit(org=request.org, submission=_submission(data))
        return Response(s.RecordCreatedOutput(_created(record)).data, status=status.HTTP_201_CREATED)


class RecordBatchView(APIView):
    max_body_bytes = BATCH_BODY_LIMIT

    @extend_schema(request=s.RecordBatchInput, responses={207: s.RecordBatchOutput, 404: GENERATOR_NOT_FOUND},
                   parameters=[IDEMPOTENCY_KEY], tags=["records"])
    @idempotent
    def post(self, request):
        data = validated(s.RecordBatchInput, request)
        records = services.record_submit_batch(org=request.org,
                                               submissions=[_submission(item) for item in data["records"]])
        body = s.RecordBatchOutput({"results": [_created(r) for r in records]}).data
        return Response(body, status=status.HTTP_207_MULTI_STATUS)


class RecordDetailView(PublicCors, APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(responses={200: s.RecordOutput}, tags=["records"])
    def get(self, request, record_id):
        return Response(s.RecordOutput(selectors.public_record_detail(record_id=record_id)).data)


class RecordC2paView(PublicCors, APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    throttle_classes = [VerifyIpThrottle]

    @extend_schema(responses={200: dict}, tags=["records"])
    def get(self, request, record_id):
        record = selectors.public_record_get(record_id=record_id)
        manifest = c2pa_manifest(record_id=str(record.pk), model=record.model, signed_at=record.signed_at,
                                 content_hash=record.content_hash, base_url=settings.PUBLIC_BASE_URL)
        return Response(manifest, headers={"Cache-Control": "public, max-age=3600"})


class RecordC2paEmbedView(APIView):
    """A signed C2PA manifest embedded into the record's signed JPEG or PNG (Growth and above)."""

    parser_classes = [MultiPartParser]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        limit_uploads(request._request, SIGN_UPLOAD_LIMIT)  # before the body is parsed

    @extend_schema(**EMBED_SCHEMA)
    @idempotent
    def post(self, request, record_id):
        return self.answer(request, record_id)

    def answer(self, request, record_id) -> HttpResponse:
        """The asset with its manifest (jobs/api.py answers `Prefer: respond-async` with a job instead)."""
        embedded = record_c2pa_embed(org=request.org, record_id=record_id, data=uploaded_bytes(request, "content"))
        return HttpResponse(embedded.data, content_type=embedded.mime_type)


class ComplianceExportEnabled(BasePermission):
    """The report as CSV or PDF: 402 `plan_required` below Growth, then 403 `email_not_verified`; JSON for all."""

    def has_permission(self, request, view) -> bool:
        if request.query_params.get("format") in ("csv", "pdf"):
            require_feature(request.org, "compliance_export")
        return True


REPORT_DOCUMENT = "CSV: a header row, one row per format, an `all` row, then `verifications,<total>`. PDF: one page."


class ComplianceReportView(APIView):
    """The organization's signatures per format with the disclosures their files carried, and the
    verifications of its content, over a period (`from` included, `to` excluded)."""

    permission_classes = [IsAuthenticated, ComplianceExportEnabled]
    content_negotiation_class = ExportFormatNegotiation

    @extend_schema(parameters=[s.ComplianceReportQuery], tags=["compliance"], responses={
        200: s.ComplianceReportOutput,
        (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=REPORT_DOCUMENT),
        (200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY, description=REPORT_DOCUMENT),
        402: OpenApiResponse(description="`plan_required`: CSV or PDF on a plan below Growth.")})
    def get(self, request):
        query = validated_query(s.ComplianceReportQuery, request)
        report = compliance_report(org=request.org, period=report_period(since=query.get("from"),
                                                                         until=query.get("to")))
        if query["format"] == "json":
            return Response(s.ComplianceReportOutput(report).data)
        return compliance_download(report=report, format=query["format"])
